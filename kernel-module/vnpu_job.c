// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: hardware queues on drm_sched, user queues
 * (entities), SUBMIT, completion, timeout, reset and recovery.
 *
 * A hardware queue runs in one context at a time (Q_CTX is programmed while
 * the queue is disabled), so a job of another context waits in prepare_job
 * until the ring is idle, then run_job switches the queue over. Commands get
 * per-queue seqnos when the job runs; the last one raises the interrupt and
 * its seqno is the hardware fence's. Completion records decide when a job
 * is done and whether it failed. The scheduler's credits are ring slots, so
 * run_job always finds room.
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

#define VNPU_MAX_WAIT_CHECKS	10 /* timeouts a FENCE_WAIT may take */
#define VNPU_HANG_PERIODS	16 /* heartbeat periods a hang verdict spans */
#define VNPU_MAX_QUEUES_PER_CTX 64

static inline struct vnpu_job *to_vnpu_job(struct drm_sched_job *sj)
{
	return container_of(sj, struct vnpu_job, base);
}

static const char *vnpu_fence_driver_name(struct dma_fence *f)
{
	return VNPU_DRIVER_NAME;
}

static const char *vnpu_fence_timeline_name(struct dma_fence *f)
{
	return "vnpu-hwq";
}

static const struct dma_fence_ops vnpu_fence_ops = {
	.get_driver_name = vnpu_fence_driver_name,
	.get_timeline_name = vnpu_fence_timeline_name,
};

/* ---- ring ---------------------------------------------------------------- */

/* Disables the queue, points it at ctx_index, enables it. Ring is empty. */
void vnpu_hwq_program(struct vnpu_hwq *hwq, int ctx_index)
{
	vnpu_qwr(hwq, VNPU_Q_CTRL, 0);
	vnpu_qwr(hwq, VNPU_Q_RING_BASE_LO, lower_32_bits(hwq->ring_dma));
	vnpu_qwr(hwq, VNPU_Q_RING_BASE_HI, upper_32_bits(hwq->ring_dma));
	vnpu_qwr(hwq, VNPU_Q_CPL_BASE_LO, lower_32_bits(hwq->cpl_dma));
	vnpu_qwr(hwq, VNPU_Q_CPL_BASE_HI, upper_32_bits(hwq->cpl_dma));
	vnpu_qwr(hwq, VNPU_Q_RING_LOG2, hwq->ring_log2);
	vnpu_qwr(hwq, VNPU_Q_CTX, ctx_index);
	vnpu_qwr(hwq, VNPU_Q_CTRL, VNPU_Q_CTRL_ENABLE | VNPU_Q_CTRL_IRQ_ENABLE);
	hwq->tail = 0;
	hwq->cur_ctx = ctx_index;
	if (!(vnpu_qrd(hwq, VNPU_Q_STATUS) & VNPU_Q_STATUS_ENABLED))
		vnpu_log(hwq->vdev,
			 "%s: enable for context %d refused (ERR_CODE %u)",
			 hwq->name, ctx_index,
			 vnpu_rd(hwq->vdev, VNPU_REG_ERR_CODE));
}

static u32 vnpu_job_slot(struct vnpu_hwq *hwq, struct vnpu_job *job, u32 i)
{
	return (job->slot_base + i - job->resume_idx) & (hwq->entries - 1);
}

/* Writes cmds[resume_idx..] at the tail and rings the doorbell. */
static void vnpu_hwq_push(struct vnpu_hwq *hwq, struct vnpu_job *job)
{
	u32 i;

	job->slot_base = hwq->tail;
	for (i = job->resume_idx; i < job->cmd_count; i++) {
		struct vnpu_cmd c = job->cmds[i];
		u32 slot = hwq->tail;

		c.hdr.flags = i == job->cmd_count - 1 ? VNPU_CMD_F_IRQ : 0;
		c.hdr.seqno = cpu_to_le64(job->first_seqno + i);
		/* seqno 0 in the record means "not retired yet". */
		memset(&hwq->cpl[slot], 0, sizeof(hwq->cpl[slot]));
		hwq->ring[slot] = c;
		hwq->tail = (slot + 1) & (hwq->entries - 1);
	}
	/* Ring and record writes before the doorbell. */
	wmb();
	vnpu_wr(hwq->vdev, VNPU_DOORBELL(hwq->index), hwq->tail);
}

static bool vnpu_cmd_retired(struct vnpu_hwq *hwq, struct vnpu_job *job, u32 i)
{
	struct vnpu_cpl *cpl = &hwq->cpl[vnpu_job_slot(hwq, job, i)];

	return le64_to_cpu(READ_ONCE(cpl->seqno)) == job->first_seqno + i;
}

static int vnpu_status_errno(u32 status)
{
	switch (status) {
	case VNPU_STATUS_OK:
		return 0;
	case VNPU_STATUS_MMU_FAULT:
	case VNPU_STATUS_CONTEXT_FAULTED:
		return -EFAULT;
	default:
		return -EIO;
	}
}

/* Folds the status of retired commands [resume_idx, end) into job->error. */
static void vnpu_job_collect(struct vnpu_hwq *hwq, struct vnpu_job *job,
			     u32 end)
{
	u32 i;

	dma_rmb();
	for (i = job->resume_idx; i < end; i++) {
		struct vnpu_cpl *cpl = &hwq->cpl[vnpu_job_slot(hwq, job, i)];
		u32 status = le32_to_cpu(READ_ONCE(cpl->status));
		int err = vnpu_status_errno(status);

		if (err && !job->error) {
			job->error = err;
			job->st.status = status;
			job->st.cmd = i;
			job->st.info = le64_to_cpu(READ_ONCE(cpl->info));
		}
	}
}

/* The command of the job the device is at (the first not retired). */
static u32 vnpu_job_current_cmd(struct vnpu_hwq *hwq, struct vnpu_job *job)
{
	u32 r = job->resume_idx;

	while (r < job->cmd_count - 1 && vnpu_cmd_retired(hwq, job, r))
		r++;
	return r;
}

static void vnpu_job_signal(struct vnpu_job *job, int error)
{
	struct vnpu_hw_fence *hwf =
		container_of(job->hw_fence, struct vnpu_hw_fence, base);

	list_del_init(&job->node);
	/* Dropped for the context's fault without a record of its own. */
	if (error == -EFAULT && !job->st.status)
		job->st.status = VNPU_STATUS_CONTEXT_FAULTED;
	hwf->st = job->st;
	if (error)
		dma_fence_set_error(job->hw_fence, error);
	dma_fence_signal(job->hw_fence);
}

/*
 * The status of the job whose scheduler fence is `finished` (signalled):
 * its hardware fence's, or for a job the driver failed before it ran, the
 * context fault that stopped it.
 */
void vnpu_fence_job_status(struct dma_fence *finished,
			   struct vnpu_job_status *st)
{
	struct drm_sched_fence *sf = to_drm_sched_fence(finished);
	/* Pairs with drm_sched_fence_set_parent()'s smp_store_release(). */
	struct dma_fence *parent = sf ? smp_load_acquire(&sf->parent) : NULL;

	memset(st, 0, sizeof(*st));
	if (parent && parent->ops == &vnpu_fence_ops)
		*st = container_of(parent, struct vnpu_hw_fence, base)->st;
	else if (finished->error == -EFAULT)
		st->status = VNPU_STATUS_CONTEXT_FAULTED;
}

/* Signals every job whose last command has retired. */
void vnpu_hwq_retire(struct vnpu_hwq *hwq)
{
	struct vnpu_job *job, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&hwq->lock, flags);
	list_for_each_entry_safe(job, tmp, &hwq->inflight, node) {
		if (!vnpu_cmd_retired(hwq, job, job->cmd_count - 1))
			break;
		vnpu_job_collect(hwq, job, job->cmd_count);
		vnpu_job_signal(job, job->error);
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
}

/*
 * After the context of this queue faulted: stop the queue so nothing more
 * of that context runs once the fault is cleared, and fail its unfinished
 * jobs with -EFAULT. Called from the event interrupt thread.
 */
static void vnpu_hwq_abort_ctx(struct vnpu_hwq *hwq, int ctx_index,
			       u32 fault_queue)
{
	struct vnpu_job *job, *tmp;
	bool blamed = false;
	unsigned long flags;

	spin_lock_irqsave(&hwq->lock, flags);
	if (hwq->cur_ctx != ctx_index) {
		spin_unlock_irqrestore(&hwq->lock, flags);
		return;
	}
	vnpu_qwr(hwq, VNPU_Q_CTRL, 0);
	hwq->cur_ctx = -1;
	list_for_each_entry_safe(job, tmp, &hwq->inflight, node) {
		bool done = vnpu_cmd_retired(hwq, job, job->cmd_count - 1);

		vnpu_job_collect(hwq, job, job->cmd_count);
		/*
		 * The fault is recorded before the faulting command's
		 * completion: the first unfinished job on the faulting queue
		 * made it, at the command it had reached.
		 */
		if (!done && !blamed && !job->st.status &&
		    fault_queue == hwq->index) {
			job->st.status = VNPU_STATUS_MMU_FAULT;
			job->st.cmd = vnpu_job_current_cmd(hwq, job);
			job->st.info = READ_ONCE(job->ctx->fault_va);
			blamed = true;
		}
		vnpu_job_signal(job, done ? job->error : -EFAULT);
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
}

/* fault_status: the context's FAULT_STATUS (names the faulting queue). */
void vnpu_ctx_fault_abort(struct vnpu_device *vdev, int ctx_index,
			  u32 fault_status)
{
	u32 q;

	for (q = 0; q < vdev->num_hwq; q++)
		vnpu_hwq_abort_ctx(&vdev->hwq[q], ctx_index,
				   VNPU_FAULT_QUEUE(fault_status));
}

/* ---- scheduler backend --------------------------------------------------- */

static struct dma_fence *vnpu_prepare_job(struct drm_sched_job *sj,
					  struct drm_sched_entity *entity)
{
	struct vnpu_job *job = to_vnpu_job(sj);
	struct vnpu_hwq *hwq = job->queue->hwq;
	struct dma_fence *wait = NULL;
	unsigned long flags;

	spin_lock_irqsave(&hwq->lock, flags);
	if (hwq->cur_ctx != job->ctx->index && !list_empty(&hwq->inflight)) {
		struct vnpu_job *last =
			list_last_entry(&hwq->inflight, struct vnpu_job, node);

		wait = dma_fence_get(last->hw_fence);
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
	return wait;
}

static struct dma_fence *vnpu_run_job(struct drm_sched_job *sj)
{
	struct vnpu_job *job = to_vnpu_job(sj);
	struct vnpu_hwq *hwq = job->queue->hwq;
	struct vnpu_device *vdev = hwq->vdev;
	struct vnpu_ctx *ctx = job->ctx;
	struct vnpu_hw_fence *hwf;
	struct dma_fence *fence;
	unsigned long flags;
	int idx;

	/* Both flags only ever go from false to true: any order is right. */
	if (READ_ONCE(ctx->banned))
		return ERR_PTR(-ECANCELED);
	if (READ_ONCE(ctx->faulted))
		return ERR_PTR(-EFAULT);
	hwf = kzalloc(sizeof(*hwf), GFP_KERNEL);
	if (!hwf)
		return ERR_PTR(-ENOMEM);
	fence = &hwf->base;
	if (!drm_dev_enter(&vdev->drm, &idx)) {
		kfree(fence);
		return ERR_PTR(-ENODEV);
	}
	spin_lock_irqsave(&hwq->lock, flags);
	/* prepare_job waited for the ring to drain before a switch. */
	if (hwq->cur_ctx != ctx->index)
		vnpu_hwq_program(hwq, ctx->index);
	job->first_seqno = hwq->next_seqno;
	hwq->next_seqno += job->cmd_count;
	job->resume_idx = 0;
	dma_fence_init(fence, &vnpu_fence_ops, &hwq->fence_lock, hwq->fence_ctx,
		       job->first_seqno + job->cmd_count - 1);
	job->hw_fence = fence;
	list_add_tail(&job->node, &hwq->inflight);
	vnpu_hwq_push(hwq, job);
	spin_unlock_irqrestore(&hwq->lock, flags);
	drm_dev_exit(idx);
	return dma_fence_get(fence);
}

/* The job on some queue whose next command is an injected hang or fatal. */
static struct vnpu_job *vnpu_find_injected_hang(struct vnpu_device *vdev)
{
	struct vnpu_job *job, *found = NULL;
	unsigned long flags;
	u32 q, i;

	for (q = 0; q < vdev->num_hwq && !found; q++) {
		struct vnpu_hwq *hwq = &vdev->hwq[q];

		spin_lock_irqsave(&hwq->lock, flags);
		list_for_each_entry(job, &hwq->inflight, node) {
			for (i = job->resume_idx; i < job->cmd_count; i++) {
				const struct vnpu_cmd *c = &job->cmds[i];

				if (vnpu_cmd_retired(hwq, job, i))
					continue;
				if (c->hdr.opcode == VNPU_OP_TEST_INJECT &&
				    (c->inject.kind == VNPU_TEST_HANG ||
				     c->inject.kind == VNPU_TEST_FATAL))
					found = job;
				break; /* first unretired command only */
			}
			if (found || i < job->cmd_count)
				break;
		}
		spin_unlock_irqrestore(&hwq->lock, flags);
	}
	return found;
}

/*
 * Whether job is still in a ring. Compares pointers only: a job that is not
 * there may have finished and been freed (while a reset that ran before this
 * one had the schedulers going), so it must not be dereferenced.
 */
static bool vnpu_job_in_flight(struct vnpu_device *vdev,
			       const struct vnpu_job *job)
{
	struct vnpu_job *cur;
	unsigned long flags;
	bool found = false;
	u32 q;

	for (q = 0; q < vdev->num_hwq && !found; q++) {
		struct vnpu_hwq *hwq = &vdev->hwq[q];

		spin_lock_irqsave(&hwq->lock, flags);
		list_for_each_entry(cur, &hwq->inflight, node) {
			if (cur == job) {
				found = true;
				break;
			}
		}
		spin_unlock_irqrestore(&hwq->lock, flags);
	}
	return found;
}

static u64 vnpu_hwq_done_seq(struct vnpu_hwq *hwq)
{
	return vnpu_rd64_stable(hwq->vdev,
				VNPU_QUEUE_REG(hwq->index, VNPU_Q_DONE_SEQ_LO),
				VNPU_QUEUE_REG(hwq->index, VNPU_Q_DONE_SEQ_HI));
}

/* Called with hwq->lock held: progress is measured from here on. */
static void vnpu_hwq_rebase(struct vnpu_hwq *hwq, int resets, u64 done, u32 hb)
{
	hwq->judged_resets = resets;
	hwq->last_done_seq = done;
	hwq->last_heartbeat = hb;
	hwq->last_judged = ktime_get();
	hwq->stall_checks = 0;
}

/*
 * After CTRL.RESET and a new boot: finish what had retired, fail the guilty
 * and banned, and put the rest of each innocent job back into the ring.
 */
static void vnpu_hwq_recover(struct vnpu_hwq *hwq, bool booted)
{
	struct vnpu_job *job, *tmp;
	unsigned long flags;
	bool programmed = false;
	int ctx_index;

	spin_lock_irqsave(&hwq->lock, flags);
	ctx_index = hwq->cur_ctx;
	hwq->cur_ctx = -1;
	hwq->tail = 0;
	/* The next timeout check measures progress from the new boot. */
	vnpu_hwq_rebase(hwq, atomic_read(&hwq->vdev->reset_count),
			vnpu_hwq_done_seq(hwq), vnpu_hw_heartbeat(hwq->vdev));
	list_for_each_entry_safe(job, tmp, &hwq->inflight, node) {
		u32 r = job->resume_idx;

		while (r < job->cmd_count && vnpu_cmd_retired(hwq, job, r))
			r++;
		vnpu_job_collect(hwq, job, r);
		if (r == job->cmd_count) {
			vnpu_job_signal(job, job->error);
			continue;
		}
		if (job->guilty) {
			vnpu_job_signal(job, -ETIMEDOUT);
			continue;
		}
		if (!booted) {
			vnpu_job_signal(job, -ENODEV);
			continue;
		}
		if (READ_ONCE(job->ctx->banned)) {
			vnpu_job_signal(job, -ECANCELED);
			continue;
		}
		if (READ_ONCE(job->ctx->faulted)) {
			vnpu_job_signal(job, -EFAULT);
			continue;
		}
		if (!programmed) {
			vnpu_hwq_program(hwq, job->ctx->index);
			programmed = true;
		}
		job->resume_idx = r;
		vnpu_hwq_push(hwq, job);
	}
	if (!programmed)
		hwq->cur_ctx = -1;
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (programmed && ctx_index >= 0)
		vnpu_log(hwq->vdev, "%s: resubmitted unfinished jobs",
			 hwq->name);
}

/*
 * Resets the device (docs/hw-spec.md section 13) and recovers. bad is the
 * job whose timeout triggered it (NULL for a forced reset); the guilty job
 * is an injected hang if one is found, else bad if it is still unfinished.
 * Its context is banned.
 *
 * seen_resets is the reset count under which the caller judged the device
 * stuck. One fatal error runs the timeout handler of every queue; those
 * that saw STATUS.FATAL before the first reset finished must not reset
 * again, or they would blame an innocent job already resubmitted.
 * VNPU_RESET_FORCE resets regardless.
 */
int vnpu_device_reset(struct vnpu_device *vdev, struct vnpu_job *bad,
		      int seen_resets, const char *why)
{
	struct vnpu_job *guilty;
	unsigned long flags;
	int ret, idx;
	u32 q, c;

	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	mutex_lock(&vdev->reset_lock);
	if (seen_resets != VNPU_RESET_FORCE &&
	    seen_resets != atomic_read(&vdev->reset_count)) {
		mutex_unlock(&vdev->reset_lock);
		drm_dev_exit(idx);
		return 0;
	}
	for (q = 0; q < vdev->num_hwq; q++)
		drm_sched_wqueue_stop(&vdev->hwq[q].sched);
	guilty = vnpu_find_injected_hang(vdev);
	if (!guilty && bad && vnpu_job_in_flight(vdev, bad))
		guilty = bad;
	vnpu_hw_reset(vdev);
	vnpu_hw_irq_sync(vdev);
	atomic_inc(&vdev->reset_count);
	if (guilty) {
		guilty->guilty = true;
		WRITE_ONCE(guilty->ctx->banned, true);
		vnpu_log(vdev,
			 "reset (%s): guilty job %llu of context %d banned",
			 why, guilty->seqno, guilty->ctx->index);
	} else {
		vnpu_log(vdev, "reset (%s)", why);
	}
	ret = vnpu_fw_boot(vdev);
	if (ret) {
		vnpu_log(vdev, "re-boot after reset failed: %d, device dead",
			 ret);
		vdev->dead = true;
	} else {
		spin_lock_irqsave(&vdev->ctx_lock, flags);
		for (c = 0; c < vdev->num_contexts; c++)
			if (vdev->ctxs[c])
				vnpu_mmu_ctx_program(vdev->ctxs[c]);
		spin_unlock_irqrestore(&vdev->ctx_lock, flags);
	}
	for (q = 0; q < vdev->num_hwq; q++)
		vnpu_hwq_recover(&vdev->hwq[q], !ret);
	for (q = 0; q < vdev->num_hwq; q++)
		drm_sched_wqueue_start(&vdev->hwq[q].sched);
	mutex_unlock(&vdev->reset_lock);
	drm_dev_exit(idx);
	return ret;
}

/* Device removal: stop the hardware and fail everything in flight. */
void vnpu_device_stop(struct vnpu_device *vdev)
{
	struct vnpu_job *job, *tmp;
	unsigned long flags;
	u32 q;

	mutex_lock(&vdev->reset_lock);
	vdev->dead = true;
	for (q = 0; q < vdev->num_hwq; q++)
		drm_sched_wqueue_stop(&vdev->hwq[q].sched);
	vnpu_hw_reset(vdev);
	vnpu_hw_irq_sync(vdev);
	for (q = 0; q < vdev->num_hwq; q++) {
		struct vnpu_hwq *hwq = &vdev->hwq[q];

		spin_lock_irqsave(&hwq->lock, flags);
		list_for_each_entry_safe(job, tmp, &hwq->inflight, node)
			vnpu_job_signal(job, -ENODEV);
		hwq->cur_ctx = -1;
		spin_unlock_irqrestore(&hwq->lock, flags);
	}
	/* Let the schedulers fail queued jobs and free finished ones. */
	for (q = 0; q < vdev->num_hwq; q++)
		drm_sched_wqueue_start(&vdev->hwq[q].sched);
	mutex_unlock(&vdev->reset_lock);
}

/*
 * Called with hwq->lock held, from a timeout: whether the firmware has
 * stopped (HEARTBEAT and DONE_SEQ stood still) or the queue has waited on
 * a fence for VNPU_MAX_WAIT_CHECKS checks. A judgement needs a baseline
 * from the same boot and at least VNPU_HANG_PERIODS heartbeat periods old:
 * a fatal error runs every queue's timeout at once, and a queue checked
 * just after the reset it caused would see a fresh firmware stand still.
 */
static bool vnpu_hwq_stuck(struct vnpu_hwq *hwq, int resets, u64 done, u32 hb,
			   bool waiting)
{
	s64 age_us = ktime_us_delta(ktime_get(), hwq->last_judged);
	bool progressed, alive;

	if (resets != hwq->judged_resets) {
		vnpu_hwq_rebase(hwq, resets, done, hb);
		return false;
	}
	if (age_us < (s64)VNPU_HANG_PERIODS * hwq->vdev->heartbeat_period_us)
		return false;
	progressed = done != hwq->last_done_seq;
	alive = hb != hwq->last_heartbeat;
	hwq->last_done_seq = done;
	hwq->last_heartbeat = hb;
	hwq->last_judged = ktime_get();
	if (progressed || !waiting)
		hwq->stall_checks = 0;
	else
		hwq->stall_checks++;
	if (!progressed && !alive)
		return true; /* firmware stopped */
	if (waiting && hwq->stall_checks >= VNPU_MAX_WAIT_CHECKS) {
		hwq->stall_checks = 0;
		return true; /* a FENCE_WAIT nobody signals */
	}
	return false;
}

static enum drm_gpu_sched_stat vnpu_timedout_job(struct drm_sched_job *sj)
{
	struct vnpu_job *job = to_vnpu_job(sj);
	struct drm_gpu_scheduler *sched = sj->sched;
	struct vnpu_hwq *hwq = job->queue->hwq;
	struct vnpu_device *vdev = hwq->vdev;
	bool waiting, fatal, hang;
	unsigned long flags;
	int idx, seen_resets;
	u64 done;
	u32 hb;

	/*
	 * The scheduler took the job off its list so that it cannot be freed
	 * under us; it goes back either way. Park the scheduler first: once
	 * back on the list, a job that finishes (interrupt, retire below)
	 * would otherwise be freed by the free worker while we still use it.
	 */
	drm_sched_wqueue_stop(sched);
	spin_lock(&sched->job_list_lock);
	list_add(&sj->list, &sched->pending_list);
	spin_unlock(&sched->job_list_lock);

	if (!drm_dev_enter(&vdev->drm, &idx))
		goto out;
	/* Read before the registers: see vnpu_device_reset(). */
	seen_resets = atomic_read(&vdev->reset_count);
	/* A lost interrupt: the records say it is done. */
	vnpu_hwq_retire(hwq);
	if (dma_fence_is_signaled(&sj->s_fence->finished) ||
	    (job->hw_fence && dma_fence_is_signaled(job->hw_fence))) {
		drm_dev_exit(idx);
		goto out;
	}
	done = vnpu_hwq_done_seq(hwq);
	hb = vnpu_hw_heartbeat(vdev);
	waiting = vnpu_qrd(hwq, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING;
	fatal = vnpu_rd(vdev, VNPU_REG_STATUS) & VNPU_STATUS_FATAL;
	spin_lock_irqsave(&hwq->lock, flags);
	hang = fatal || vnpu_hwq_stuck(hwq, seen_resets, done, hb, waiting);
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (hang)
		vnpu_device_reset(vdev, job, seen_resets,
				  fatal	    ? "firmware fatal error"
				  : waiting ? "fence wait timeout"
					    : "heartbeat stopped");
	drm_dev_exit(idx);
out:
	/* Frees the job if it finished: do not touch it after this. */
	drm_sched_wqueue_start(sched);
	return DRM_GPU_SCHED_STAT_NOMINAL;
}

static void vnpu_free_job(struct drm_sched_job *sj)
{
	struct vnpu_job *job = to_vnpu_job(sj);
	u32 i;

	drm_sched_job_cleanup(sj);
	if (job->hw_fence)
		dma_fence_put(job->hw_fence);
	for (i = 0; i < job->bo_count; i++)
		drm_gem_object_put(job->bos[i]);
	kvfree(job->bos);
	kvfree(job->cmds);
	vnpu_queue_put(job->queue);
	kfree(job);
}

static const struct drm_sched_backend_ops vnpu_sched_ops = {
	.prepare_job = vnpu_prepare_job,
	.run_job = vnpu_run_job,
	.timedout_job = vnpu_timedout_job,
	.free_job = vnpu_free_job,
};

int vnpu_hwq_init(struct vnpu_device *vdev, u32 index)
{
	struct vnpu_hwq *hwq = &vdev->hwq[index];
	struct device *dev = vdev->drm.dev;
	int ret;

	hwq->vdev = vdev;
	hwq->index = index;
	hwq->ring_log2 = min_t(u32, VNPU_DRV_RING_LOG2,
			       VNPU_CAPS_RING_LOG2_MAX(vdev->caps));
	hwq->entries = 1u << hwq->ring_log2;
	hwq->ring = dmam_alloc_coherent(dev, hwq->entries * VNPU_CMD_SIZE,
					&hwq->ring_dma, GFP_KERNEL);
	hwq->cpl = dmam_alloc_coherent(dev, hwq->entries * VNPU_CPL_SIZE,
				       &hwq->cpl_dma, GFP_KERNEL);
	if (!hwq->ring || !hwq->cpl)
		return -ENOMEM;
	spin_lock_init(&hwq->lock);
	spin_lock_init(&hwq->fence_lock);
	INIT_LIST_HEAD(&hwq->inflight);
	hwq->next_seqno = 1;
	hwq->cur_ctx = -1;
	hwq->fence_ctx = dma_fence_context_alloc(1);
	snprintf(hwq->name, sizeof(hwq->name), "vnpu-hwq%u", index);
	ret = drm_sched_init(&hwq->sched, &vnpu_sched_ops, NULL,
			     DRM_SCHED_PRIORITY_COUNT, hwq->entries - 1, 0,
			     msecs_to_jiffies(vnpu_job_timeout_ms),
			     vdev->reset_wq, NULL, hwq->name, dev);
	if (ret)
		return ret;
	hwq->sched_ready = true;
	return 0;
}

void vnpu_hwq_fini(struct vnpu_hwq *hwq)
{
	if (hwq->sched_ready)
		drm_sched_fini(&hwq->sched);
	hwq->sched_ready = false;
}

/* ---- user queues --------------------------------------------------------- */

static void vnpu_queue_release(struct kref *ref)
{
	struct vnpu_queue *queue = container_of(ref, struct vnpu_queue, ref);

	atomic_dec(&queue->ctx->vdev->queue_count);
	if (queue->syncobj)
		drm_syncobj_put(queue->syncobj);
	if (queue->last_fence)
		dma_fence_put(queue->last_fence);
	vnpu_ctx_put(queue->ctx);
	kfree(queue);
}

void vnpu_queue_put(struct vnpu_queue *queue)
{
	kref_put(&queue->ref, vnpu_queue_release);
}

struct vnpu_queue *vnpu_queue_lookup(struct vnpu_ctx *ctx, u32 id)
{
	struct vnpu_queue *queue;

	mutex_lock(&ctx->queue_lock);
	queue = xa_load(&ctx->queues, id);
	if (queue)
		kref_get(&queue->ref);
	mutex_unlock(&ctx->queue_lock);
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

static u32 vnpu_pick_hwq(struct vnpu_device *vdev, struct vnpu_ctx *ctx)
{
	/* Spread contexts over the hardware queues. */
	return (u32)ctx->index % vdev->num_hwq;
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
	mutex_lock(&ctx->queue_lock);
	ret = xa_alloc(&ctx->queues, &id, queue,
		       XA_LIMIT(1, VNPU_MAX_QUEUES_PER_CTX), GFP_KERNEL);
	mutex_unlock(&ctx->queue_lock);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_entity;
	}
	ret = drm_syncobj_get_handle(file, queue->syncobj, &handle);
	if (ret) {
		mutex_lock(&ctx->queue_lock);
		xa_erase(&ctx->queues, id);
		mutex_unlock(&ctx->queue_lock);
		goto err_entity;
	}
	queue->id = id;
	args->queue_id = id;
	args->syncobj = handle;
	return 0;

err_entity:
	/* It may have been in the xarray: as in vnpu_queue_teardown(). */
	mutex_lock(&queue->submit_lock);
	queue->closed = true;
	mutex_unlock(&queue->submit_lock);
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
	mutex_lock(&ctx->queue_lock);
	queue = xa_erase(&ctx->queues, args->queue_id);
	mutex_unlock(&ctx->queue_lock);
	if (!queue)
		return -ENOENT;
	vnpu_queue_teardown(queue);
	return 0;
}

/* ---- SUBMIT -------------------------------------------------------------- */

static int vnpu_cmd_check(struct vnpu_device *vdev, const struct vnpu_cmd *c)
{
	if (c->hdr.reserved0 || c->hdr.reserved1)
		return -EINVAL;
	switch (c->hdr.opcode) {
	case VNPU_OP_NOP:
	case VNPU_OP_KERNEL_LAUNCH:
	case VNPU_OP_DMA_COPY:
	case VNPU_OP_FILL:
	case VNPU_OP_FENCE_SIGNAL:
	case VNPU_OP_FENCE_WAIT:
	case VNPU_OP_TIMESTAMP:
		return 0;
	case VNPU_OP_TEST_INJECT:
		return READ_ONCE(vnpu_allow_test_inject) ? 0 : -EPERM;
	default:
		return -EINVAL;
	}
}

/* Copies and checks the command buffer. */
static int vnpu_job_read_cmds(struct vnpu_device *vdev, struct drm_file *file,
			      struct drm_vnpu_submit *args,
			      struct vnpu_job *job)
{
	struct drm_gem_object *obj;
	struct iosys_map map;
	u64 bytes, end;
	u32 i;
	int ret;

	if (args->cmd_offset % 8)
		return -EINVAL;
	bytes = (u64)args->cmd_count * VNPU_CMD_SIZE;
	obj = drm_gem_object_lookup(file, args->cmd_bo);
	if (!obj)
		return -ENOENT;
	ret = -EINVAL;
	if (check_add_overflow(args->cmd_offset, bytes, &end) ||
	    end > obj->size)
		goto out;
	ret = -ENOMEM;
	job->cmds = kvmalloc(bytes, GFP_KERNEL);
	if (!job->cmds)
		goto out;
	ret = drm_gem_vmap_unlocked(obj, &map);
	if (ret)
		goto out;
	iosys_map_memcpy_from(job->cmds, &map, args->cmd_offset, bytes);
	drm_gem_vunmap_unlocked(obj, &map);
	job->cmd_count = args->cmd_count;
	for (i = 0; i < job->cmd_count; i++) {
		ret = vnpu_cmd_check(vdev, &job->cmds[i]);
		if (ret)
			goto out;
	}
	ret = 0;
out:
	drm_gem_object_put(obj);
	return ret;
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
	if (f->error)
		atomic_inc(&queue->ctx->vdev->job_errors);
	atomic_dec(&queue->pending);
}

int vnpu_submit_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct vnpu_device *vdev = to_vnpu_device(dev);
	struct drm_vnpu_submit *args = data;
	struct vnpu_ctx *ctx = file->driver_priv;
	struct drm_syncobj *out_syncobj = NULL;
	struct dma_fence_chain *chain = NULL;
	struct ww_acquire_ctx acquire;
	struct dma_fence *finished;
	struct vnpu_queue *queue;
	struct vnpu_job *job;
	bool explicit_sync = args->flags & DRM_VNPU_SUBMIT_EXPLICIT_SYNC;
	u32 max_cmds;
	int ret;
	u32 i;

	if (args->flags & ~DRM_VNPU_SUBMIT_FLAGS || args->pad ||
	    args->reserved || args->bo_count > DRM_VNPU_MAX_SUBMIT_BOS ||
	    args->in_syncobj_count > DRM_VNPU_MAX_SUBMIT_SYNCOBJS)
		return -EINVAL;
	queue = vnpu_queue_lookup(ctx, args->queue_id);
	if (!queue)
		return -ENOENT;
	max_cmds = queue->hwq->entries - 1;
	if (!args->cmd_count || args->cmd_count > max_cmds) {
		ret = -EINVAL;
		goto err_queue;
	}
	if (READ_ONCE(ctx->banned) || vdev->dead) {
		ret = vdev->dead ? -ENODEV : -ECANCELED;
		goto err_queue;
	}
	if (atomic_inc_return(&queue->pending) > VNPU_QUEUE_DEPTH) {
		atomic_dec(&queue->pending);
		ret = -EBUSY;
		goto err_queue;
	}

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job) {
		ret = -ENOMEM;
		goto err_pending;
	}
	job->queue = queue;
	job->ctx = ctx;
	INIT_LIST_HEAD(&job->node);
	ret = vnpu_job_read_cmds(vdev, file, args, job);
	if (ret)
		goto err_free;
	if (args->bo_count) {
		ret = drm_gem_objects_lookup(file,
					     u64_to_user_ptr(args->bo_handles),
					     args->bo_count, &job->bos);
		/* On failure the array holds the handles found so far. */
		job->bo_count = job->bos ? args->bo_count : 0;
		if (ret)
			goto err_free;
	}
	ret = drm_sched_job_init(&job->base, &queue->entity, job->cmd_count,
				 NULL);
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
	if (queue->closed) {
		ret = -ENOENT;
		goto err_unlock;
	}
	ret = drm_gem_lock_reservations(job->bos, job->bo_count, &acquire);
	if (ret) {
		/* ww_mutex: a handle listed twice locks one BO twice. */
		if (ret == -EALREADY)
			ret = -EINVAL;
		goto err_unlock;
	}
	for (i = 0; i < job->bo_count; i++) {
		struct drm_gem_object *bo = job->bos[i];
		struct drm_sched_job *sj = &job->base;

		ret = dma_resv_reserve_fences(bo->resv, 1);
		if (ret)
			break;
		if (explicit_sync)
			continue;
		ret = drm_sched_job_add_implicit_dependencies(sj, bo, true);
		if (ret)
			break;
	}
	if (ret) {
		drm_gem_unlock_reservations(job->bos, job->bo_count, &acquire);
		goto err_unlock;
	}

	/* Point of no return. */
	drm_sched_job_arm(&job->base);
	job->seqno = ++queue->seqno;
	kref_get(&queue->ref); /* the job's */
	finished = &job->base.s_fence->finished;
	for (i = 0; i < job->bo_count; i++)
		dma_resv_add_fence(job->bos[i]->resv, finished,
				   explicit_sync ? DMA_RESV_USAGE_BOOKKEEP
						 : DMA_RESV_USAGE_WRITE);
	drm_gem_unlock_reservations(job->bos, job->bo_count, &acquire);
	if (queue->last_fence)
		dma_fence_put(queue->last_fence);
	queue->last_fence = dma_fence_get(finished);
	WARN_ON(dma_fence_add_callback(finished, &job->finished_cb,
				       vnpu_job_finished));
	drm_syncobj_add_point(queue->syncobj, chain, finished, job->seqno);
	if (out_syncobj)
		drm_syncobj_replace_fence(out_syncobj, finished);
	args->seqno = job->seqno;
	drm_sched_entity_push_job(&job->base);
	mutex_unlock(&queue->submit_lock);
	if (out_syncobj)
		drm_syncobj_put(out_syncobj);
	vnpu_queue_put(queue);
	return 0;

err_unlock:
	mutex_unlock(&queue->submit_lock);
	dma_fence_chain_free(chain);
err_cleanup:
	if (out_syncobj)
		drm_syncobj_put(out_syncobj);
	drm_sched_job_cleanup(&job->base);
err_free:
	for (i = 0; i < job->bo_count; i++)
		if (job->bos[i])
			drm_gem_object_put(job->bos[i]);
	kvfree(job->bos);
	kvfree(job->cmds);
	kfree(job);
err_pending:
	atomic_dec(&queue->pending);
err_queue:
	vnpu_queue_put(queue);
	return ret;
}
