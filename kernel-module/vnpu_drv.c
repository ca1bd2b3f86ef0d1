// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: module, PCI probe/remove, the drm_driver, the
 * ioctl table, per-file contexts and GET_PARAM.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <drm/drm_prime.h>

#include "vnpu_hw.h"

unsigned int vnpu_job_timeout_ms = 1000;

/* 0 would time out every job at once, a huge value would disarm it. */
static int vnpu_job_timeout_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 10, 600 * MSEC_PER_SEC);
}

static const struct kernel_param_ops vnpu_job_timeout_ops = {
	.set = vnpu_job_timeout_set,
	.get = param_get_uint,
};

module_param_cb(job_timeout_ms, &vnpu_job_timeout_ops, &vnpu_job_timeout_ms,
		0444);
MODULE_PARM_DESC(job_timeout_ms,
		 "time limit of a job on the device, ms (10..600000, default 1000)");

bool vnpu_allow_test_inject;
module_param_named(allow_test_inject, vnpu_allow_test_inject, bool, 0644);
MODULE_PARM_DESC(allow_test_inject,
		 "accept TEST_INJECT commands from user space (default no)");

void vnpu_log(struct vnpu_device *vdev, const char *fmt, ...)
{
	struct vnpu_event_log *log = &vdev->log;
	unsigned long flags;
	char msg[VNPU_EVENT_MSG_LEN];
	va_list args;

	va_start(args, fmt);
	vsnprintf(msg, sizeof(msg), fmt, args);
	va_end(args);
	/*
	 * Users trigger most of these (faults, resets, bans): the kernel log
	 * gets them rate-limited, the debugfs event log keeps the newest.
	 */
	dev_info_ratelimited(vdev->drm.dev, "%s\n", msg);
	spin_lock_irqsave(&log->lock, flags);
	log->entry[log->next].ns = ktime_get_ns();
	strscpy(log->entry[log->next].msg, msg, VNPU_EVENT_MSG_LEN);
	log->next = (log->next + 1) % VNPU_EVENT_LOG_LEN;
	if (log->count < VNPU_EVENT_LOG_LEN)
		log->count++;
	spin_unlock_irqrestore(&log->lock, flags);
}

/* ---- contexts ------------------------------------------------------------ */

struct vnpu_ctx *vnpu_ctx_get_by_index(struct vnpu_device *vdev, u32 index)
{
	struct vnpu_ctx *ctx = NULL;
	unsigned long flags;

	spin_lock_irqsave(&vdev->ctx_lock, flags);
	if (index < VNPU_MAX_CONTEXTS && vdev->ctxs[index] &&
	    kref_get_unless_zero(&vdev->ctxs[index]->ref))
		ctx = vdev->ctxs[index];
	spin_unlock_irqrestore(&vdev->ctx_lock, flags);
	return ctx;
}

static void vnpu_ctx_release(struct kref *ref)
{
	struct vnpu_ctx *ctx = container_of(ref, struct vnpu_ctx, ref);
	struct vnpu_device *vdev = ctx->vdev;
	unsigned long flags;
	int idx;

	/*
	 * Out of ctxs[] first, so that a reset no longer re-enables the
	 * context on tables about to be freed; the index stays taken until
	 * the context is disabled, so that it cannot disable a new owner's.
	 */
	spin_lock_irqsave(&vdev->ctx_lock, flags);
	vdev->ctxs[ctx->index] = NULL;
	spin_unlock_irqrestore(&vdev->ctx_lock, flags);
	if (drm_dev_enter(&vdev->drm, &idx)) {
		vnpu_wr(vdev, VNPU_CTX_REG(ctx->index, VNPU_CTX_CTRL), 0);
		drm_dev_exit(idx);
	}
	spin_lock_irqsave(&vdev->ctx_lock, flags);
	clear_bit(ctx->index, vdev->ctx_map);
	spin_unlock_irqrestore(&vdev->ctx_lock, flags);
	vnpu_ctx_retire_fini(ctx);
	/* Before the user goes: the page tables are charged to it. */
	vnpu_mmu_ctx_fini(ctx);
	vnpu_quota_uncharge(ctx->user, VNPU_QUOTA_CONTEXTS, 1);
	vnpu_user_put(ctx->user);
	xa_destroy(&ctx->queues);
	mutex_destroy(&ctx->queue_lock);
	kfree(ctx);
}

void vnpu_ctx_put(struct vnpu_ctx *ctx)
{
	kref_put(&ctx->ref, vnpu_ctx_release);
}

static int vnpu_open(struct drm_device *dev, struct drm_file *file)
{
	struct vnpu_device *vdev = to_vnpu_device(dev);
	struct vnpu_ctx *ctx;
	unsigned long flags;
	int index, ret, idx;

	if (!drm_dev_enter(dev, &idx))
		return -ENODEV;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx) {
		ret = -ENOMEM;
		goto out;
	}
	kref_init(&ctx->ref);
	ctx->vdev = vdev;
	mutex_init(&ctx->queue_lock);
	xa_init_flags(&ctx->queues, XA_FLAGS_ALLOC1);
	ctx->user = vnpu_user_get_current(vdev);
	if (IS_ERR(ctx->user)) {
		ret = PTR_ERR(ctx->user);
		goto err_free;
	}
	ctx->quota_exempt = vnpu_quota_exempt_current();
	ret = vnpu_quota_charge(ctx->user, ctx->quota_exempt,
				VNPU_QUOTA_CONTEXTS, 1);
	if (ret)
		goto err_user;
	ret = vnpu_ctx_retire_init(ctx);
	if (ret)
		goto err_uncharge;
	ret = vnpu_mmu_ctx_init(ctx);
	if (ret)
		goto err_retire;
	spin_lock_irqsave(&vdev->ctx_lock, flags);
	index = find_first_zero_bit(vdev->ctx_map, vdev->num_contexts);
	if (index < vdev->num_contexts) {
		set_bit(index, vdev->ctx_map);
		ctx->index = index;
		vdev->ctxs[index] = ctx;
	}
	spin_unlock_irqrestore(&vdev->ctx_lock, flags);
	if (index >= vdev->num_contexts) {
		/* Every hardware context is in use by another open file. */
		ret = -EBUSY;
		goto err_mmu;
	}
	mutex_lock(&vdev->reset_lock);
	vnpu_mmu_ctx_program(ctx);
	mutex_unlock(&vdev->reset_lock);
	file->driver_priv = ctx;
	atomic_inc(&vdev->open_files);
	ret = 0;
	goto out;

err_mmu:
	vnpu_mmu_ctx_fini(ctx);
err_retire:
	vnpu_ctx_retire_fini(ctx);
err_uncharge:
	vnpu_quota_uncharge(ctx->user, VNPU_QUOTA_CONTEXTS, 1);
err_user:
	vnpu_user_put(ctx->user);
err_free:
	kfree(ctx);
out:
	drm_dev_exit(idx);
	return ret;
}

static void vnpu_postclose(struct drm_device *dev, struct drm_file *file)
{
	struct vnpu_device *vdev = to_vnpu_device(dev);
	struct vnpu_ctx *ctx = file->driver_priv;

	/*
	 * GEM handles are gone already; queues wait for their jobs here, and
	 * then nothing can reach the retiring mappings any more.
	 */
	vnpu_ctx_destroy_queues(ctx);
	vnpu_ctx_retire(ctx);
	file->driver_priv = NULL;
	atomic_dec(&vdev->open_files);
	vnpu_ctx_put(ctx);
}

/* ---- GET_PARAM ----------------------------------------------------------- */

static int vnpu_queue_param(struct vnpu_ctx *ctx, u32 param, u32 id, u64 *value)
{
	struct vnpu_queue *queue = vnpu_queue_lookup(ctx, id);
	unsigned long flags;

	if (!queue)
		return -ENOENT;
	spin_lock_irqsave(&queue->err_lock, flags);
	if (param == DRM_VNPU_PARAM_QUEUE_ERROR)
		*value = queue->error;
	else if (param == DRM_VNPU_PARAM_QUEUE_ERROR_SEQNO)
		*value = queue->error_seqno;
	else if (param == DRM_VNPU_PARAM_QUEUE_ERROR_STATUS)
		*value = queue->error_status;
	else if (param == DRM_VNPU_PARAM_QUEUE_ERROR_INFO)
		*value = queue->error_info;
	else
		*value = queue->done_seqno;
	spin_unlock_irqrestore(&queue->err_lock, flags);
	vnpu_queue_put(queue);
	return 0;
}

/* User queues of the file. */
static u64 vnpu_ctx_queue_count(struct vnpu_ctx *ctx)
{
	struct vnpu_queue *queue;
	unsigned long id;
	u64 n = 0;

	mutex_lock(&ctx->queue_lock);
	xa_for_each(&ctx->queues, id, queue)
		n++;
	mutex_unlock(&ctx->queue_lock);
	return n;
}

/*
 * VRAM_USED, NUM_OPEN_CONTEXTS, QUEUE_COUNT, JOB_ERROR_COUNT: the device's
 * totals tell one user what the others do, so only a file opened with
 * CAP_SYS_ADMIN gets them (and debugfs has them); any other file gets its
 * own user's VRAM and open files, and its own queues and failed jobs.
 */
static u64 vnpu_usage_param(struct vnpu_ctx *ctx, u32 param)
{
	struct vnpu_device *vdev = ctx->vdev;
	bool all = ctx->quota_exempt;
	u64 value = 0;

	switch (param) {
	case DRM_VNPU_PARAM_VRAM_USED:
		if (!all) {
			vnpu_quota_param(ctx, DRM_VNPU_PARAM_QUOTA_USED,
					 VNPU_QUOTA_VRAM, &value);
			break;
		}
		mutex_lock(&vdev->vram_lock);
		value = vdev->vram_used;
		mutex_unlock(&vdev->vram_lock);
		break;
	case DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS:
		if (all)
			value = atomic_read(&vdev->open_files);
		else
			vnpu_quota_param(ctx, DRM_VNPU_PARAM_QUOTA_USED,
					 VNPU_QUOTA_CONTEXTS, &value);
		break;
	case DRM_VNPU_PARAM_QUEUE_COUNT:
		value = all ? atomic_read(&vdev->queue_count)
			    : vnpu_ctx_queue_count(ctx);
		break;
	case DRM_VNPU_PARAM_JOB_ERROR_COUNT:
		value = atomic_read(all ? &vdev->job_errors : &ctx->job_errors);
		break;
	}
	return value;
}

static int vnpu_get_param_ioctl(struct drm_device *dev, void *data,
				struct drm_file *file)
{
	struct vnpu_device *vdev = to_vnpu_device(dev);
	struct drm_vnpu_get_param *args = data;
	struct vnpu_ctx *ctx = file->driver_priv;
	u64 value;

	switch (args->param) {
	case DRM_VNPU_PARAM_QUEUE_ERROR:
	case DRM_VNPU_PARAM_QUEUE_ERROR_SEQNO:
	case DRM_VNPU_PARAM_QUEUE_ERROR_STATUS:
	case DRM_VNPU_PARAM_QUEUE_ERROR_INFO:
	case DRM_VNPU_PARAM_QUEUE_DONE_SEQNO: {
		int ret =
			vnpu_queue_param(ctx, args->param, args->index, &value);

		if (ret)
			return ret;
		args->value = value;
		return 0;
	}
	case DRM_VNPU_PARAM_QUOTA_LIMIT:
	case DRM_VNPU_PARAM_QUOTA_USED:
	case DRM_VNPU_PARAM_FILE_MAX_JOBS:
	case DRM_VNPU_PARAM_FILE_JOB_BYTES:
		return vnpu_quota_param(ctx, args->param, args->index,
					&args->value);
	default:
		break;
	}
	if (args->index)
		return -EINVAL;
	switch (args->param) {
	case DRM_VNPU_PARAM_DEVICE_ID:
		value = (u64)vdev->pdev->vendor << 16 | vdev->pdev->device;
		break;
	case DRM_VNPU_PARAM_REVISION:
		value = vdev->pdev->revision;
		break;
	case DRM_VNPU_PARAM_HW_VERSION:
		value = vdev->hw_version;
		break;
	case DRM_VNPU_PARAM_FW_VERSION:
		value = vdev->fw_version;
		break;
	case DRM_VNPU_PARAM_NUM_HW_QUEUES:
		value = vdev->num_hwq;
		break;
	case DRM_VNPU_PARAM_NUM_CORES:
		value = vdev->num_cores;
		break;
	case DRM_VNPU_PARAM_NUM_CONTEXTS:
		value = vdev->num_contexts;
		break;
	case DRM_VNPU_PARAM_VRAM_SIZE:
		value = vdev->vram_size;
		break;
	case DRM_VNPU_PARAM_VRAM_USED:
	case DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS:
	case DRM_VNPU_PARAM_QUEUE_COUNT:
	case DRM_VNPU_PARAM_JOB_ERROR_COUNT:
		value = vnpu_usage_param(ctx, args->param);
		break;
	case DRM_VNPU_PARAM_VA_START:
	case DRM_VNPU_PARAM_VA_SIZE: {
		u64 lo, hi;

		vnpu_mmu_va_range(ctx, &lo, &hi);
		value = args->param == DRM_VNPU_PARAM_VA_START ? lo : hi - lo;
		break;
	}
	case DRM_VNPU_PARAM_PAGE_SIZE:
		value = VNPU_PAGE_SIZE;
		break;
	case DRM_VNPU_PARAM_CAPABILITIES:
		value = (vdev->test_mode ? DRM_VNPU_CAP_TEST_MODE : 0) |
			(READ_ONCE(vnpu_allow_test_inject)
				 ? DRM_VNPU_CAP_TEST_INJECT
				 : 0);
		break;
	case DRM_VNPU_PARAM_RESET_COUNT:
		value = atomic_read(&vdev->reset_count);
		break;
	case DRM_VNPU_PARAM_JOB_TIMEOUT_MS:
		value = vnpu_job_timeout_ms;
		break;
	case DRM_VNPU_PARAM_CONTEXT_ID:
		value = ctx->index;
		break;
	case DRM_VNPU_PARAM_CONTEXT_STATE:
		value = (READ_ONCE(ctx->faulted) ? DRM_VNPU_CONTEXT_FAULTED
						 : 0) |
			(READ_ONCE(ctx->banned) ? DRM_VNPU_CONTEXT_BANNED : 0);
		break;
	case DRM_VNPU_PARAM_FAULT_COUNT:
		value = READ_ONCE(ctx->fault_count);
		break;
	case DRM_VNPU_PARAM_FAULT_VA:
		value = READ_ONCE(ctx->fault_va);
		break;
	case DRM_VNPU_PARAM_FAULT_STATUS:
		value = READ_ONCE(ctx->fault_status);
		break;
	case DRM_VNPU_PARAM_HEARTBEAT:
		value = vnpu_hw_heartbeat(vdev);
		break;
	case DRM_VNPU_PARAM_TIMESTAMP:
		value = vnpu_hw_timestamp(vdev);
		break;
	case DRM_VNPU_PARAM_MAX_SUBMIT_CMDS:
		value = vdev->hwq[0].entries - 1;
		break;
	case DRM_VNPU_PARAM_QUEUE_DEPTH:
		value = VNPU_QUEUE_DEPTH;
		break;
	default:
		return -EINVAL;
	}
	args->value = value;
	return 0;
}

/* ---- ioctl table ----------------------------------------------------------
 */

/* Ioctls that touch the device run inside drm_dev_enter/exit. */
#define VNPU_GUARDED(fn)                                                       \
	static int fn##_guarded(struct drm_device *dev, void *data,            \
				struct drm_file *file)                         \
	{                                                                      \
		int idx, ret;                                                  \
		if (!drm_dev_enter(dev, &idx))                                 \
			return -ENODEV;                                        \
		ret = fn(dev, data, file);                                     \
		drm_dev_exit(idx);                                             \
		return ret;                                                    \
	}

VNPU_GUARDED(vnpu_get_param_ioctl)
VNPU_GUARDED(vnpu_bo_create_ioctl)
VNPU_GUARDED(vnpu_bo_info_ioctl)
VNPU_GUARDED(vnpu_queue_create_ioctl)
VNPU_GUARDED(vnpu_queue_destroy_ioctl)
VNPU_GUARDED(vnpu_submit_ioctl)
VNPU_GUARDED(vnpu_va_range_ioctl)

static const struct drm_ioctl_desc vnpu_ioctls[] = {
	DRM_IOCTL_DEF_DRV(VNPU_GET_PARAM, vnpu_get_param_ioctl_guarded, 0),
	DRM_IOCTL_DEF_DRV(VNPU_BO_CREATE, vnpu_bo_create_ioctl_guarded, 0),
	DRM_IOCTL_DEF_DRV(VNPU_BO_INFO, vnpu_bo_info_ioctl_guarded, 0),
	/* Waits must not hold off unplug: they end when it fails the jobs. */
	DRM_IOCTL_DEF_DRV(VNPU_BO_WAIT, vnpu_bo_wait_ioctl, 0),
	DRM_IOCTL_DEF_DRV(VNPU_QUEUE_CREATE, vnpu_queue_create_ioctl_guarded,
			  0),
	DRM_IOCTL_DEF_DRV(VNPU_QUEUE_DESTROY, vnpu_queue_destroy_ioctl_guarded,
			  0),
	DRM_IOCTL_DEF_DRV(VNPU_SUBMIT, vnpu_submit_ioctl_guarded, 0),
	DRM_IOCTL_DEF_DRV(VNPU_VA_RANGE, vnpu_va_range_ioctl_guarded, 0),
};

DEFINE_DRM_ACCEL_FOPS(vnpu_fops);

static const struct drm_driver vnpu_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_COMPUTE_ACCEL | DRIVER_SYNCOBJ |
			   DRIVER_SYNCOBJ_TIMELINE,
	.open = vnpu_open,
	.postclose = vnpu_postclose,
	.gem_create_object = vnpu_gem_create_object,
	.gem_prime_import = vnpu_gem_prime_import,
	.gem_prime_import_sg_table = drm_gem_shmem_prime_import_sg_table,
	.ioctls = vnpu_ioctls,
	.num_ioctls = ARRAY_SIZE(vnpu_ioctls),
	.fops = &vnpu_fops,
	.name = VNPU_DRIVER_NAME,
	.desc = "vnpu emulated NPU",
	.date = "20250101",
	.major = 1,
	.minor = 0,
};

/* ---- PCI ------------------------------------------------------------------
 */

/* Released with the drm_device, after the last file is closed. */
static void vnpu_drm_release(struct drm_device *drm, void *arg)
{
	struct vnpu_device *vdev = to_vnpu_device(drm);
	u32 q;

	for (q = 0; q < vdev->num_hwq; q++)
		vnpu_hwq_fini(&vdev->hwq[q]);
	if (vdev->reset_wq)
		destroy_workqueue(vdev->reset_wq);
	vnpu_fw_fini(vdev);
	vnpu_vram_fini(vdev);
	vnpu_quota_fini(vdev);
}

static int vnpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vnpu_device *vdev;
	struct device *dev = &pdev->dev;
	u32 q;
	int ret;

	vdev = devm_drm_dev_alloc(dev, &vnpu_drm_driver, struct vnpu_device,
				  drm);
	if (IS_ERR(vdev))
		return PTR_ERR(vdev);
	vdev->pdev = pdev;
	pci_set_drvdata(pdev, vdev);
	spin_lock_init(&vdev->log.lock);
	spin_lock_init(&vdev->ctx_lock);
	mutex_init(&vdev->reset_lock);
	mutex_init(&vdev->fault_lock);

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(52));
	if (ret)
		return ret;
	vdev->regs = pcim_iomap_region(pdev, VNPU_BAR_REGS, VNPU_DRIVER_NAME);
	if (IS_ERR(vdev->regs))
		return PTR_ERR(vdev->regs);
	ret = vnpu_hw_init(vdev);
	if (ret)
		return ret;
	vdev->vram_bar = pci_resource_start(pdev, VNPU_BAR_VRAM);
	if (pci_resource_len(pdev, VNPU_BAR_VRAM) < vdev->vram_size) {
		dev_err(dev, "BAR4 is smaller than VRAM_SIZE\n");
		return -ENODEV;
	}
	vdev->vram_map = devm_ioremap_wc(dev, vdev->vram_bar, vdev->vram_size);
	if (!vdev->vram_map)
		return -ENOMEM;
	vnpu_quota_init(vdev);
	vnpu_vram_init(vdev);
	vdev->reset_wq = alloc_ordered_workqueue("vnpu-reset", 0);
	INIT_WORK(&vdev->stuck_reset_work, vnpu_stuck_reset_work);
	ret = drmm_add_action_or_reset(&vdev->drm, vnpu_drm_release, NULL);
	if (ret)
		return ret;
	if (!vdev->reset_wq)
		return -ENOMEM;

	/* A known state whatever the previous driver left. */
	vnpu_hw_reset(vdev);
	ret = vnpu_fw_load(vdev);
	if (ret)
		return ret;
	ret = vnpu_fw_boot(vdev);
	if (ret) {
		dev_err(dev, "firmware boot failed: %d\n", ret);
		return ret;
	}
	for (q = 0; q < vdev->num_hwq; q++) {
		ret = vnpu_hwq_init(vdev, q);
		if (ret)
			return ret;
	}
	ret = vnpu_hw_irq_init(vdev);
	if (ret)
		return ret;
	vnpu_wr(vdev, VNPU_REG_IRQ_MASK, 0);

	ret = drm_dev_register(&vdev->drm, 0);
	if (ret) {
		vnpu_hw_reset(vdev);
		vnpu_hw_irq_fini(vdev);
		return ret;
	}
	vnpu_debugfs_init(vdev);
	/* The firmware's version was logged when it booted. */
	dev_info(dev, "%u queues, %u cores, %u contexts, %llu MiB VRAM%s\n",
		 vdev->num_hwq, vdev->num_cores, vdev->num_contexts,
		 vdev->vram_size >> 20, vdev->test_mode ? ", test mode" : "");
	return 0;
}

static void vnpu_remove(struct pci_dev *pdev)
{
	struct vnpu_device *vdev = pci_get_drvdata(pdev);

	drm_dev_unplug(&vdev->drm);
	vnpu_device_stop(vdev);
	vnpu_hw_irq_fini(vdev);
}

static const struct pci_device_id vnpu_pci_ids[] = {
	{PCI_DEVICE(VNPU_PCI_VENDOR_ID, VNPU_PCI_DEVICE_ID)}, {}};
MODULE_DEVICE_TABLE(pci, vnpu_pci_ids);

static struct pci_driver vnpu_pci_driver = {
	.name = VNPU_DRIVER_NAME,
	.id_table = vnpu_pci_ids,
	.probe = vnpu_probe,
	.remove = vnpu_remove,
};
module_pci_driver(vnpu_pci_driver);

MODULE_AUTHOR("The vnpu authors");
MODULE_DESCRIPTION("DRM accel driver for the vnpu emulated NPU");
MODULE_LICENSE("GPL");
MODULE_FIRMWARE(VNPU_FW_NAME);
MODULE_IMPORT_NS(DMA_BUF);
