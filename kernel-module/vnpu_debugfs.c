// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: debugfs under /sys/kernel/debug/accel/<minor>/.
 *
 *   queues          hardware queues: context, ring state, jobs in flight
 *   bos             VRAM allocator use
 *   contexts        open contexts: owner, state, faults, page tables
 *   fw_log          the driver's record of device events (boot results,
 *                   resets, faults, errors); the device has no log buffer
 *   reset_counter   device resets done by the driver
 *   force_reset     write 1: reset the device now (nobody is blamed)
 *   allow_test_inject  Y/N: accept TEST_INJECT commands in SUBMIT
 *   inject          write 1 hang, 2 fatal, 3 lost interrupt: TEST_INJECT
 *                   register (test-mode devices only)
 */
#include <linux/cred.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include "vnpu_hw.h"

static int vnpu_queues_show(struct seq_file *s, void *unused)
{
	struct vnpu_device *vdev = s->private;
	unsigned long flags;
	int idx;
	u32 q;

	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	for (q = 0; q < vdev->num_hwq; q++) {
		struct vnpu_hwq *hwq = &vdev->hwq[q];
		struct vnpu_job *job;
		u32 jobs = 0;

		spin_lock_irqsave(&hwq->lock, flags);
		list_for_each_entry(job, &hwq->inflight, node)
			jobs++;
		/* The driver's view, then the device's registers. */
		seq_printf(s, "%s: ctx %d entries %u tail %u", hwq->name,
			   hwq->cur_ctx, hwq->entries, hwq->tail);
		seq_printf(s, " next_seqno %llu jobs %u", hwq->next_seqno,
			   jobs);
		if (jobs)
			seq_printf(s, " head for %lld ms, used %u us",
				   ktime_ms_delta(ktime_get(), hwq->head_since),
				   vnpu_qrd(hwq, VNPU_Q_BUSY_US) -
					   hwq->head_busy_us);
		seq_printf(s, " | HEAD %u TAIL %u DONE_SEQ %u Q_STATUS %#x\n",
			   vnpu_qrd(hwq, VNPU_Q_HEAD),
			   vnpu_qrd(hwq, VNPU_Q_TAIL),
			   vnpu_qrd(hwq, VNPU_Q_DONE_SEQ_LO),
			   vnpu_qrd(hwq, VNPU_Q_STATUS));
		spin_unlock_irqrestore(&hwq->lock, flags);
	}
	seq_printf(s, "STATUS %#x HEARTBEAT %u RESET_COUNT %u\n",
		   vnpu_rd(vdev, VNPU_REG_STATUS), vnpu_hw_heartbeat(vdev),
		   vnpu_rd(vdev, VNPU_REG_RESET_COUNT));
	drm_dev_exit(idx);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vnpu_queues);

static int vnpu_bos_show(struct seq_file *s, void *unused)
{
	struct vnpu_device *vdev = s->private;
	struct drm_printer p = drm_seq_file_printer(s);

	mutex_lock(&vdev->vram_lock);
	seq_printf(s, "VRAM used %llu of %llu bytes\n", vdev->vram_used,
		   vdev->vram_size);
	drm_mm_print(&vdev->vram_mm, &p);
	mutex_unlock(&vdev->vram_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vnpu_bos);

static int vnpu_contexts_show(struct seq_file *s, void *unused)
{
	struct vnpu_device *vdev = s->private;
	u64 pt_bytes;
	u32 c;

	for (c = 0; c < vdev->num_contexts; c++) {
		struct vnpu_ctx *ctx = vnpu_ctx_get_by_index(vdev, c);

		if (!ctx)
			continue;
		mutex_lock(&ctx->mmu_lock);
		pt_bytes = ctx->pt_bytes;
		mutex_unlock(&ctx->mmu_lock);
		seq_printf(s,
			   "ctx %u: uid %u%s%s faults %u last VA %#llx status %#x failed jobs %d page tables %llu bytes\n",
			   c, from_kuid_munged(&init_user_ns, ctx->user->uid),
			   ctx->faulted ? " faulted" : "",
			   ctx->banned ? " banned" : "", ctx->fault_count,
			   ctx->fault_va, ctx->fault_status,
			   atomic_read(&ctx->job_errors), pt_bytes);
		vnpu_ctx_put(ctx);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vnpu_contexts);

static int vnpu_fw_log_show(struct seq_file *s, void *unused)
{
	struct vnpu_device *vdev = s->private;
	struct vnpu_event_log *log = &vdev->log;
	unsigned long flags;
	u32 i, first;

	spin_lock_irqsave(&log->lock, flags);
	first = (log->next + VNPU_EVENT_LOG_LEN - log->count) %
		VNPU_EVENT_LOG_LEN;
	for (i = 0; i < log->count; i++) {
		u32 e = (first + i) % VNPU_EVENT_LOG_LEN;

		seq_printf(s, "[%llu.%06llu] %s\n",
			   log->entry[e].ns / NSEC_PER_SEC,
			   (log->entry[e].ns % NSEC_PER_SEC) / NSEC_PER_USEC,
			   log->entry[e].msg);
	}
	spin_unlock_irqrestore(&log->lock, flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vnpu_fw_log);

static int vnpu_reset_counter_show(struct seq_file *s, void *unused)
{
	struct vnpu_device *vdev = s->private;

	seq_printf(s, "%d\n", atomic_read(&vdev->reset_count));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vnpu_reset_counter);

static ssize_t vnpu_force_reset_write(struct file *file, const char __user *buf,
				      size_t len, loff_t *pos)
{
	struct vnpu_device *vdev = file_inode(file)->i_private;
	bool yes;
	int ret;

	ret = kstrtobool_from_user(buf, len, &yes);
	if (ret)
		return ret;
	if (yes) {
		ret = vnpu_device_reset(vdev, NULL, VNPU_RESET_FORCE,
					"forced through debugfs");
		if (ret)
			return ret;
	}
	return len;
}

static const struct file_operations vnpu_force_reset_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = vnpu_force_reset_write,
};

static ssize_t vnpu_inject_write(struct file *file, const char __user *buf,
				 size_t len, loff_t *pos)
{
	struct vnpu_device *vdev = file_inode(file)->i_private;
	u32 kind;
	int ret, idx;

	ret = kstrtou32_from_user(buf, len, 0, &kind);
	if (ret)
		return ret;
	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	ret = vnpu_hw_inject(vdev, kind);
	drm_dev_exit(idx);
	return ret ? ret : len;
}

static const struct file_operations vnpu_inject_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = vnpu_inject_write,
};

void vnpu_debugfs_init(struct vnpu_device *vdev)
{
	struct dentry *root = vdev->drm.accel->debugfs_root;

	if (IS_ERR_OR_NULL(root))
		return;
	debugfs_create_file("queues", 0444, root, vdev, &vnpu_queues_fops);
	debugfs_create_file("bos", 0444, root, vdev, &vnpu_bos_fops);
	debugfs_create_file("contexts", 0444, root, vdev, &vnpu_contexts_fops);
	debugfs_create_file("fw_log", 0444, root, vdev, &vnpu_fw_log_fops);
	debugfs_create_file("reset_counter", 0444, root, vdev,
			    &vnpu_reset_counter_fops);
	debugfs_create_file("force_reset", 0200, root, vdev,
			    &vnpu_force_reset_fops);
	debugfs_create_bool("allow_test_inject", 0600, root,
			    &vnpu_allow_test_inject);
	debugfs_create_file("inject", 0200, root, vdev, &vnpu_inject_fops);
}
