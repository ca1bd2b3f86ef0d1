// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: user queues. A user queue is a scheduler entity
 * on one hardware queue, with a timeline syncobj whose point n signals when
 * the queue's job n ends; QUEUE_CREATE and QUEUE_DESTROY.
 */
#include <linux/irq.h>
#include <linux/pci.h>
#include <drm/drm_drv.h>
#include <drm/drm_syncobj.h>

#include "vnpu_hw.h"

#define VNPU_MAX_QUEUES_PER_CTX 64

static void vnpu_queue_release(struct kref *ref)
{
	struct vnpu_queue *queue = container_of(ref, struct vnpu_queue, ref);

	atomic_dec(&queue->ctx->vdev->queue_count);
	atomic_dec(&queue->hwq->users);
	if (queue->syncobj)
		drm_syncobj_put(queue->syncobj);
	if (queue->last_fence)
		dma_fence_put(queue->last_fence);
	vnpu_ctx_put(queue->ctx);
	kfree_rcu(queue, rcu);
}

void vnpu_queue_put(struct vnpu_queue *queue)
{
	kref_put(&queue->ref, vnpu_queue_release);
}

struct vnpu_queue *vnpu_queue_lookup(struct vnpu_ctx *ctx, u32 id)
{
	struct vnpu_queue *queue;

	/* The table's reference may be going: then the queue is gone. */
	rcu_read_lock();
	queue = xa_load(&ctx->queues, id);
	if (queue && !kref_get_unless_zero(&queue->ref))
		queue = NULL;
	rcu_read_unlock();
	return queue;
}

/* Stops a user queue: no new jobs, waits for the ones it had. */
static void vnpu_queue_teardown(struct vnpu_queue *queue)
{
	struct dma_fence *last;

	/*
	 * A SUBMIT that looked the queue up before it left the xarray may
	 * still push: closed stops it before the entity goes (a job pushed
	 * to a destroyed entity is dropped and its fence never signals).
	 */
	mutex_lock(&queue->submit_lock);
	queue->closed = true;
	last = queue->last_fence ? dma_fence_get(queue->last_fence) : NULL;
	mutex_unlock(&queue->submit_lock);
	drm_sched_entity_destroy(&queue->entity);
	if (last) {
		dma_fence_wait(last, false);
		dma_fence_put(last);
	}
	vnpu_queue_put(queue);
}

void vnpu_ctx_destroy_queues(struct vnpu_ctx *ctx)
{
	struct vnpu_queue *queue;
	unsigned long id;

	mutex_lock(&ctx->queue_lock);
	xa_for_each(&ctx->queues, id, queue)
	{
		xa_erase(&ctx->queues, id);
		mutex_unlock(&ctx->queue_lock);
		vnpu_queue_teardown(queue);
		mutex_lock(&ctx->queue_lock);
	}
	mutex_unlock(&ctx->queue_lock);
}

/*
 * HW_QUEUE_ANY: a hardware queue whose completion interrupt goes to this
 * CPU, the one with the fewest user queues, so that a waiter is woken by
 * an interrupt on its own CPU rather than by an IPI (under an emulator,
 * waking a halted vCPU costs tens of microseconds). blk-mq maps CPUs to
 * hardware queues for the same reason. With more CPUs than hardware
 * queues, or vectors moved away, contexts are spread by index.
 */
static u32 vnpu_pick_hwq(struct vnpu_device *vdev, struct vnpu_ctx *ctx)
{
	u32 q, best = (u32)ctx->index % vdev->num_hwq;
	int cpu = raw_smp_processor_id(), least = INT_MAX;

	for (q = 0; q < vdev->num_hwq; q++) {
		int irq = pci_irq_vector(vdev->pdev, VNPU_MSIX_VECTOR_QUEUE(q));
		const struct cpumask *to =
			irq < 0 ? NULL : irq_get_effective_affinity_mask(irq);
		int users = atomic_read(&vdev->hwq[q].users);

		if (to && cpumask_test_cpu(cpu, to) && users < least) {
			best = q;
			least = users;
		}
	}
	return best;
}

int vnpu_queue_create_ioctl(struct drm_device *dev, void *data,
			    struct drm_file *file)
{
	struct vnpu_device *vdev = to_vnpu_device(dev);
	struct drm_vnpu_queue_create *args = data;
	struct vnpu_ctx *ctx = file->driver_priv;
	struct vnpu_queue *queue;
	u32 hwq_index, handle, id;
	int ret;

	if (args->flags || args->reserved)
		return -EINVAL;
	if (args->hw_queue == DRM_VNPU_HW_QUEUE_ANY)
		hwq_index = vnpu_pick_hwq(vdev, ctx);
	else if (args->hw_queue < vdev->num_hwq)
		hwq_index = args->hw_queue;
	else
		return -EINVAL;
	if (READ_ONCE(ctx->banned))
		return -ECANCELED;

	queue = kzalloc(sizeof(*queue), GFP_KERNEL);
	if (!queue)
		return -ENOMEM;
	kref_init(&queue->ref);
	kref_get(&ctx->ref);
	queue->ctx = ctx;
	queue->hwq = &vdev->hwq[hwq_index];
	atomic_inc(&queue->hwq->users);
	queue->sched_list[0] = &queue->hwq->sched;
	mutex_init(&queue->submit_lock);
	spin_lock_init(&queue->err_lock);
	atomic_inc(&vdev->queue_count);
	ret = drm_sched_entity_init(&queue->entity, DRM_SCHED_PRIORITY_NORMAL,
				    queue->sched_list, 1, NULL);
	if (ret)
		goto err_put;
	ret = drm_syncobj_create(&queue->syncobj, 0, NULL);
	if (ret)
		goto err_entity;
	/*
	 * The id is reserved (a NULL entry: lookups find nothing) and the
	 * queue is published only when complete, with the table's
	 * reference: from then on another thread may destroy it, so nothing
	 * here touches it after the store.
	 */
	mutex_lock(&ctx->queue_lock);
	ret = xa_alloc(&ctx->queues, &id, NULL,
		       XA_LIMIT(1, VNPU_MAX_QUEUES_PER_CTX), GFP_KERNEL);
	mutex_unlock(&ctx->queue_lock);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_entity;
	}
	queue->id = id;
	ret = drm_syncobj_get_handle(file, queue->syncobj, &handle);
	if (ret) {
		mutex_lock(&ctx->queue_lock);
		xa_erase(&ctx->queues, id);
		mutex_unlock(&ctx->queue_lock);
		goto err_entity;
	}
	mutex_lock(&ctx->queue_lock);
	ret = xa_err(xa_store(&ctx->queues, id, queue, GFP_KERNEL));
	if (ret)
		xa_erase(&ctx->queues, id);
	mutex_unlock(&ctx->queue_lock);
	if (ret)
		goto err_entity; /* the syncobj handle stays with the file */
	args->queue_id = id;
	args->syncobj = handle;
	return 0;

err_entity:
	drm_sched_entity_destroy(&queue->entity);
err_put:
	vnpu_queue_put(queue);
	return ret;
}

int vnpu_queue_destroy_ioctl(struct drm_device *dev, void *data,
			     struct drm_file *file)
{
	struct drm_vnpu_queue_destroy *args = data;
	struct vnpu_ctx *ctx = file->driver_priv;
	struct vnpu_queue *queue;

	if (args->pad)
		return -EINVAL;
	/* Only a published queue: an id still being set up stays reserved. */
	mutex_lock(&ctx->queue_lock);
	queue = xa_load(&ctx->queues, args->queue_id);
	if (queue)
		xa_erase(&ctx->queues, args->queue_id);
	mutex_unlock(&ctx->queue_lock);
	if (!queue)
		return -ENOENT;
	vnpu_queue_teardown(queue);
	return 0;
}

