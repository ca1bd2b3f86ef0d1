// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: jobs. SUBMIT copies and checks the commands, looks
 * up the BOs and dependencies, then arms the job on its queue's entity.
 */
#include <linux/dma-fence-chain.h>
#include <linux/dma-resv.h>
#include <linux/iosys-map.h>
#include <linux/overflow.h>
#include <linux/uaccess.h>
#include <drm/drm_drv.h>
#include <drm/drm_gem.h>
#include <drm/drm_syncobj.h>

#include "vnpu_hw.h"

static int vnpu_cmd_check(struct vnpu_device *vdev, const struct vnpu_cmd *c)
{
	if (c->hdr.reserved0 || c->hdr.reserved1)
		return -EINVAL;
	if (!vnpu_opcode_known(c->hdr.opcode))
		return -EINVAL;
	if (c->hdr.opcode == VNPU_OP_TEST_INJECT &&
	    !READ_ONCE(vnpu_allow_test_inject))
		return -EPERM;
	return 0;
}

/* Copies and checks the command buffer into job->cmds. */
static int vnpu_job_read_cmds(struct vnpu_device *vdev, struct drm_file *file,
			      struct drm_vnpu_submit *args,
			      struct vnpu_job *job)
{
	size_t bytes = (size_t)args->cmd_count * VNPU_CMD_SIZE;
	struct drm_gem_object *obj;
	u64 end;
	u32 i;
	int ret;

	if (args->cmd_offset % 8)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->cmd_bo);
	if (!obj)
		return -ENOENT;
	ret = -EINVAL;
	if (check_add_overflow(args->cmd_offset, (u64)bytes, &end) ||
	    end > obj->size)
		goto out;
	ret = vnpu_bo_read(obj, args->cmd_offset, job->cmds, bytes);
	if (ret)
		goto out;
	job->cmd_count = args->cmd_count;
	for (i = 0; i < job->cmd_count; i++) {
		ret = vnpu_cmd_check(vdev, &job->cmds[i]);
		if (ret)
			goto out;
	}
out:
	drm_gem_object_put(obj);
	return ret;
}

/*
 * Looks up the BOs a handle at a time, through a small copy of the
 * handles: no allocation, and job->bo_count counts the references held.
 */
static int vnpu_job_lookup_bos(struct vnpu_job *job, struct drm_file *file,
			       const u32 __user *handles, u32 count)
{
	u32 chunk[32];
	u32 i, n;

	while (job->bo_count < count) {
		n = min_t(u32, count - job->bo_count, ARRAY_SIZE(chunk));
		if (copy_from_user(chunk, handles + job->bo_count,
				   n * sizeof(*chunk)))
			return -EFAULT;
		for (i = 0; i < n; i++) {
			struct drm_gem_object *obj =
				drm_gem_object_lookup(file, chunk[i]);

			if (!obj)
				return -ENOENT;
			job->bos[job->bo_count++] = obj;
		}
	}
	return 0;
}

static int vnpu_job_add_deps(struct vnpu_job *job, struct drm_file *file,
			     struct drm_vnpu_submit *args)
{
	u32 __user *user = u64_to_user_ptr(args->in_syncobjs);
	u32 i, handle;
	int ret;

	for (i = 0; i < args->in_syncobj_count; i++) {
		if (get_user(handle, user + i))
			return -EFAULT;
		ret = drm_sched_job_add_syncobj_dependency(&job->base, file,
							   handle, 0);
		if (ret)
			return ret == -EINVAL ? -ENOENT : ret;
	}
	return 0;
}

static void vnpu_job_finished(struct dma_fence *f, struct dma_fence_cb *cb)
{
	struct vnpu_job *job = container_of(cb, struct vnpu_job, finished_cb);
	struct vnpu_queue *queue = job->queue;
	unsigned long flags;

	spin_lock_irqsave(&queue->err_lock, flags);
	if (f->error && !queue->error) {
		struct vnpu_job_status st;

		vnpu_fence_job_status(f, &st);
		queue->error = -f->error;
		queue->error_seqno = job->seqno;
		queue->error_status = st.status;
		queue->error_info = st.info;
	}
	if (job->seqno > queue->done_seqno)
		queue->done_seqno = job->seqno;
	spin_unlock_irqrestore(&queue->err_lock, flags);
	if (f->error) {
		atomic_inc(&queue->ctx->vdev->job_errors);
		atomic_inc(&queue->ctx->job_errors);
	}
	atomic_dec(&queue->pending);
	vnpu_ctx_uncharge_job(job->ctx, job->charged_bytes);
	vnpu_ctx_job_ended(job);
}

/* Frees a job that was never armed. */
static void vnpu_job_free_unarmed(struct vnpu_job *job)
{
	u32 i;

	for (i = 0; i < job->bo_count; i++)
		drm_gem_object_put(job->bos[i]);
	if (job->switch_fence)
		dma_fence_put(job->switch_fence);
	kvfree(job);
}

/*
 * Job creation: one allocation holding the job, its commands (copied and
 * checked) and its BO references (looked up).
 */
static int vnpu_job_create(struct vnpu_device *vdev, struct drm_file *file,
			   struct vnpu_queue *queue,
			   struct drm_vnpu_submit *args, struct vnpu_job **out)
{
	size_t size = size_add(struct_size_t(struct vnpu_job, cmds,
					     args->cmd_count),
			       array_size(args->bo_count, sizeof(void *)));
	struct vnpu_job *job = kvmalloc(size, GFP_KERNEL);
	int ret;

	/* DRM_VNPU_JOB_BYTES, what a job is charged, covers the job. */
	BUILD_BUG_ON(sizeof(*job) > DRM_VNPU_JOB_BYTES(0, 0));
	if (!job)
		return -ENOMEM;
	memset(job, 0, sizeof(*job));
	job->bos = (struct drm_gem_object **)&job->cmds[args->cmd_count];
	job->queue = queue;
	job->ctx = queue->ctx;
	INIT_LIST_HEAD(&job->node);
	job->switch_fence = vnpu_hwq_fence_create(queue->hwq);
	ret = job->switch_fence ? vnpu_job_read_cmds(vdev, file, args, job)
				: -ENOMEM;
	if (!ret)
		ret = vnpu_job_lookup_bos(job, file,
					  u64_to_user_ptr(args->bo_handles),
					  args->bo_count);
	if (ret) {
		vnpu_job_free_unarmed(job);
		return ret;
	}
	*out = job;
	return 0;
}

/*
 * Buffer preparation: the job's BOs locked, a fence slot reserved in each,
 * and (without EXPLICIT_SYNC) the implicit dependencies added. On success
 * the reservations stay locked for vnpu_job_push().
 */
static int vnpu_job_prepare_bos(struct vnpu_job *job, bool explicit_sync,
				struct ww_acquire_ctx *acquire)
{
	int ret;
	u32 i;

	ret = drm_gem_lock_reservations(job->bos, job->bo_count, acquire);
	if (ret)
		/* ww_mutex: a handle listed twice locks one BO twice. */
		return ret == -EALREADY ? -EINVAL : ret;
	for (i = 0; i < job->bo_count; i++) {
		struct drm_gem_object *bo = job->bos[i];

		ret = dma_resv_reserve_fences(bo->resv, 1);
		if (!ret && !explicit_sync)
			ret = drm_sched_job_add_implicit_dependencies(&job->base,
								      bo, true);
		if (ret) {
			drm_gem_unlock_reservations(job->bos, job->bo_count,
						    acquire);
			return ret;
		}
	}
	return 0;
}

/*
 * Submission, past the point of no return (queue->submit_lock held, the
 * reservations locked): the job gets its seqno, its fence goes into its
 * BOs, the queue's timeline and the out-syncobj, and the entity gets it.
 * Returns the seqno: the job itself may be gone by then.
 */
static u64 vnpu_job_push(struct vnpu_job *job, bool explicit_sync,
			 struct ww_acquire_ctx *acquire,
			 struct dma_fence_chain *chain,
			 struct drm_syncobj *out_syncobj)
{
	struct vnpu_queue *queue = job->queue;
	struct dma_fence *finished;
	u64 seqno;
	u32 i;

	lockdep_assert_held(&queue->submit_lock);
	drm_sched_job_arm(&job->base);
	seqno = ++queue->seqno;
	job->seqno = seqno;
	kref_get(&queue->ref); /* the job's */
	finished = &job->base.s_fence->finished;
	for (i = 0; i < job->bo_count; i++)
		dma_resv_add_fence(job->bos[i]->resv, finished,
				   explicit_sync ? DMA_RESV_USAGE_BOOKKEEP
						 : DMA_RESV_USAGE_WRITE);
	drm_gem_unlock_reservations(job->bos, job->bo_count, acquire);
	if (queue->last_fence)
		dma_fence_put(queue->last_fence);
	queue->last_fence = dma_fence_get(finished);
	vnpu_ctx_job_pushed(job);
	WARN_ON(dma_fence_add_callback(finished, &job->finished_cb,
				       vnpu_job_finished));
	drm_syncobj_add_point(queue->syncobj, chain, finished, job->seqno);
	if (out_syncobj)
		drm_syncobj_replace_fence(out_syncobj, finished);
	/* Last: once pushed, the job may run and be freed at any time. */
	vnpu_hwq_job_pushed(queue->hwq, job);
	drm_sched_entity_push_job(&job->base);
	return seqno;
}

int vnpu_submit_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct vnpu_device *vdev = to_vnpu_device(dev);
	struct drm_vnpu_submit *args = data;
	struct vnpu_ctx *ctx = file->driver_priv;
	bool explicit_sync = args->flags & DRM_VNPU_SUBMIT_EXPLICIT_SYNC;
	struct drm_syncobj *out_syncobj = NULL;
	struct dma_fence_chain *chain = NULL;
	struct ww_acquire_ctx acquire;
	struct vnpu_queue *queue;
	struct vnpu_job *job;
	u64 charge;
	int ret;

	if (args->flags & ~DRM_VNPU_SUBMIT_FLAGS || args->pad ||
	    args->reserved || args->bo_count > DRM_VNPU_MAX_SUBMIT_BOS ||
	    args->in_syncobj_count > DRM_VNPU_MAX_SUBMIT_SYNCOBJS)
		return -EINVAL;
	queue = vnpu_queue_lookup(ctx, args->queue_id);
	if (!queue)
		return -ENOENT;
	if (!args->cmd_count || args->cmd_count > queue->hwq->entries - 1) {
		ret = -EINVAL;
		goto err_queue;
	}
	if (READ_ONCE(ctx->banned) || vdev->dead) {
		ret = vdev->dead ? -ENODEV : -ECANCELED;
		goto err_queue;
	}
	if (atomic_inc_return(&queue->pending) > VNPU_QUEUE_DEPTH) {
		ret = -EBUSY;
		goto err_pending;
	}
	charge = DRM_VNPU_JOB_BYTES(args->cmd_count, args->bo_count);
	ret = vnpu_ctx_charge_job(ctx, charge);
	if (ret)
		goto err_pending;

	ret = vnpu_job_create(vdev, file, queue, args, &job);
	if (ret)
		goto err_charged;
	job->charged_bytes = charge;
#ifdef VNPU_SCHED_JOB_CLIENT_ID
	ret = drm_sched_job_init(&job->base, &queue->entity, job->cmd_count,
				 NULL, file->client_id);
#else
	ret = drm_sched_job_init(&job->base, &queue->entity, job->cmd_count,
				 NULL);
#endif
	if (ret)
		goto err_free;
	ret = vnpu_job_add_deps(job, file, args);
	if (ret)
		goto err_cleanup;
	if (args->out_syncobj) {
		out_syncobj = drm_syncobj_find(file, args->out_syncobj);
		if (!out_syncobj) {
			ret = -ENOENT;
			goto err_cleanup;
		}
	}
	chain = dma_fence_chain_alloc();
	if (!chain) {
		ret = -ENOMEM;
		goto err_cleanup;
	}

	mutex_lock(&queue->submit_lock);
	ret = queue->closed ? -ENOENT
			    : vnpu_job_prepare_bos(job, explicit_sync, &acquire);
	if (ret) {
		mutex_unlock(&queue->submit_lock);
		dma_fence_chain_free(chain);
		goto err_cleanup;
	}
	args->seqno = vnpu_job_push(job, explicit_sync, &acquire, chain,
				    out_syncobj);
	mutex_unlock(&queue->submit_lock);
	if (out_syncobj)
		drm_syncobj_put(out_syncobj);
	vnpu_queue_put(queue);
	return 0;

err_cleanup:
	if (out_syncobj)
		drm_syncobj_put(out_syncobj);
	drm_sched_job_cleanup(&job->base);
err_free:
	vnpu_job_free_unarmed(job);
err_charged:
	vnpu_ctx_uncharge_job(ctx, charge);
err_pending:
	atomic_dec(&queue->pending);
err_queue:
	vnpu_queue_put(queue);
	return ret;
}
