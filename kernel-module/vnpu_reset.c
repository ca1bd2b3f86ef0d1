// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: time limits, hang detection, device reset and
 * recovery, and removal. A job's timeout (drm_sched) judges its queue: a
 * job that overran its time limit on a working device is aborted alone
 * (Q_CTRL.ABORT); a device that stopped is reset. Either way the guilty
 * job fails, its context is banned and the innocent jobs go back into the
 * rings.
 */
#include <linux/iopoll.h>
#include <drm/drm_drv.h>

#include "vnpu_hw.h"

/* Time limits a job may wait in FENCE_WAIT beyond its first, in all. */
#define VNPU_MAX_WAIT_LIMITS	10
#define VNPU_HANG_PERIODS	16 /* heartbeat periods a hang verdict spans */

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

u64 vnpu_hwq_done_seq(struct vnpu_hwq *hwq)
{
	return vnpu_rd64_stable(hwq->vdev,
				VNPU_QUEUE_REG(hwq->index, VNPU_Q_DONE_SEQ_LO),
				VNPU_QUEUE_REG(hwq->index, VNPU_Q_DONE_SEQ_HI));
}

/* Called with hwq->lock held: progress is measured from here on. */
static void vnpu_hwq_rebase(struct vnpu_hwq *hwq, int resets, u64 done, u32 hb)
{
	lockdep_assert_held(&hwq->lock);
	hwq->judged_resets = resets;
	hwq->last_done_seq = done;
	hwq->last_heartbeat = hb;
	hwq->last_judged = ktime_get();
}

/*
 * After CTRL.RESET and a new boot, or after the queue's ABORT: finish what
 * had retired, fail the guilty and banned, and put the rest of each
 * innocent job back into the ring. Commands run in order, so only the
 * first unfinished command in the ring can have started: after an abort,
 * if its record says ABORTED; after a reset, nothing says it had not. Such
 * a command runs again from its start when that gives the result of one
 * run (vnpu_cmd_restartable), else its job is lost: it never runs twice.
 */
static void vnpu_hwq_recover(struct vnpu_hwq *hwq, bool booted, bool reset)
{
	struct vnpu_job *job, *tmp;
	unsigned long flags;
	bool programmed = false, first = true;
	int ctx_index, err;

	spin_lock_irqsave(&hwq->lock, flags);
	ctx_index = hwq->cur_ctx;
	hwq->cur_ctx = -1;
	hwq->tail = 0;
	hwq->resetting = false;
	/* The next timeout check measures progress from the new boot. */
	vnpu_hwq_rebase(hwq, atomic_read(&hwq->vdev->reset_count),
			vnpu_hwq_done_seq(hwq), vnpu_hw_heartbeat(hwq->vdev));
	list_for_each_entry_safe(job, tmp, &hwq->inflight, node) {
		u32 r = job->resume_idx;
		bool started;

		while (r < job->cmd_count && vnpu_cmd_retired(hwq, job, r))
			r++;
		vnpu_job_collect(hwq, job, r);
		if (r == job->cmd_count) {
			vnpu_job_signal(job, job->error);
			continue;
		}
		started = first && (reset || vnpu_cmd_stopped(hwq, job, r));
		first = false;
		if (job->guilty) {
			vnpu_job_signal(job, -ETIMEDOUT);
			continue;
		}
		if (!booted) {
			vnpu_job_signal(job, -ENODEV);
			continue;
		}
		err = vnpu_ctx_refusal(job->ctx);
		if (err) {
			vnpu_job_signal(job, err);
			continue;
		}
		if (started && !vnpu_cmd_restartable(&job->cmds[r])) {
			vnpu_log(hwq->vdev,
				 "%s: job %llu of context %d lost at command %u (%s)",
				 hwq->name, job->seqno, job->ctx->index, r,
				 reset ? "reset" : "aborted");
			vnpu_job_lost(job, r);
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
	/* What is put back has its whole time limit again. */
	vnpu_hwq_head_update(hwq, true);
	/* Or, with the ring empty, a preempted context's turn. */
	vnpu_hwq_try_resume(hwq);
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
	/* Until recovered, nothing (a preempted context) goes into a ring. */
	for (q = 0; q < vdev->num_hwq; q++) {
		spin_lock_irqsave(&vdev->hwq[q].lock, flags);
		vdev->hwq[q].resetting = true;
		spin_unlock_irqrestore(&vdev->hwq[q].lock, flags);
	}
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
		vnpu_hwq_recover(&vdev->hwq[q], !ret, true);
	for (q = 0; q < vdev->num_hwq; q++)
		drm_sched_wqueue_start(&vdev->hwq[q].sched);
	mutex_unlock(&vdev->reset_lock);
	drm_dev_exit(idx);
	return ret;
}

/*
 * A queue did not stop when a context faulted (vnpu_hwq.c): its jobs wait
 * in the ring, and only a reset stops the device and fails them.
 */
void vnpu_stuck_reset_work(struct work_struct *work)
{
	struct vnpu_device *vdev =
		container_of(work, struct vnpu_device, stuck_reset_work);

	vnpu_device_reset(vdev, NULL, VNPU_RESET_FORCE,
			  "a queue did not stop after a fault");
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
		vnpu_hwq_fail_parked(hwq, -ENODEV);
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
 * stopped (HEARTBEAT and DONE_SEQ stood still). A judgement needs a
 * baseline from the same boot and at least VNPU_HANG_PERIODS heartbeat
 * periods old: a fatal error runs every queue's timeout at once, and a
 * queue checked just after the reset it caused would see a fresh firmware
 * stand still.
 */
static bool vnpu_hwq_fw_stopped(struct vnpu_hwq *hwq, int resets, u64 done,
				u32 hb)
{
	s64 age_us = ktime_us_delta(ktime_get(), hwq->last_judged);
	bool progressed, alive;

	lockdep_assert_held(&hwq->lock);

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
	return !progressed && !alive;
}

enum vnpu_verdict {
	VNPU_TIME_LEFT,	/* judged again when it may have used it */
	VNPU_OVERRAN,	/* abort it and ban its context */
	VNPU_PREEMPT,	/* a wait holds the queue from others: park it */
};

/*
 * Called with hwq->lock held, from a timeout: the verdict on job, at the
 * head of the ring. What counts is the device time its queue used since
 * (Q_BUSY_US, busy_us now): a launch that waits for a core while another
 * queue's blocks run has not used its time. Time at the head not used is
 * waiting (FENCE_WAIT): no use of the device, so never a reason to fail
 * the job while it may still be released - a producer on the CPU or on a
 * queue slowed by others. While another context wants the queue, a job
 * that has waited a limit at the head makes way (preempted, it resumes
 * later); a job waits at most VNPU_MAX_WAIT_LIMITS limits more in all,
 * over its preemptions (a wait nobody ends must not hold the queue, and
 * its memory, for ever). A job with time left is judged again when it may
 * have used it.
 */
static enum vnpu_verdict vnpu_hwq_judge(struct vnpu_hwq *hwq,
					struct vnpu_job *job, bool waiting,
					u32 busy_us)
{
	u64 limit_us = (u64)vnpu_job_timeout_ms * USEC_PER_MSEC;
	u64 slack_us = limit_us / 16;
	u32 used_us = busy_us - hwq->head_busy_us; /* wraps */
	s64 at_head_us = ktime_us_delta(ktime_get(), hwq->head_since);
	u64 waited_us;

	lockdep_assert_held(&hwq->lock);

	if (hwq->head_job != job)
		return VNPU_TIME_LEFT;
	/* The counter and the clocks are read apart: a little slack. */
	if (used_us >= limit_us - slack_us)
		return VNPU_OVERRAN;
	if (!waiting) {
		mod_delayed_work(hwq->vdev->reset_wq, &hwq->limit_work,
				 usecs_to_jiffies(limit_us - used_us));
		return VNPU_TIME_LEFT;
	}
	waited_us = job->waited_us + max_t(s64, at_head_us - used_us, 0);
	if (waited_us >= (1 + VNPU_MAX_WAIT_LIMITS) * limit_us - slack_us)
		return VNPU_OVERRAN;
	if (at_head_us >= limit_us - slack_us && vnpu_hwq_contended(hwq) &&
	    vnpu_hwq_may_preempt(hwq))
		return VNPU_PREEMPT;
	return VNPU_TIME_LEFT;
}

/* Whether the firmware's heartbeat moves now (sampled for 4 periods). */
static bool vnpu_fw_alive(struct vnpu_device *vdev)
{
	u32 period = vdev->heartbeat_period_us, hb0, hb;

	hb0 = vnpu_hw_heartbeat(vdev);
	return !read_poll_timeout(vnpu_hw_heartbeat, hb, hb != hb0,
				  period / 4 + 1, 4 * period, false, vdev);
}

/*
 * Ends job, at the head of hwq past its time limit, without a reset: ABORT
 * stops the queue's command in flight (docs/hw-spec.md section 4). The job
 * fails with -ETIMEDOUT and its context is banned, unless its last command
 * retired before the abort took effect; the other jobs in the ring go back
 * (a banned context's fail). Meanwhile the interrupt may retire what
 * completed: an ABORTED record is not a retired command. Returns false
 * when the queue did not stop: the caller resets the device. Under
 * vdev->reset_lock, with the queue's scheduler parked.
 */
static bool vnpu_hwq_abort_head(struct vnpu_hwq *hwq, struct vnpu_job *job)
{
	struct vnpu_device *vdev = hwq->vdev;
	unsigned long flags;
	bool overran;

	lockdep_assert_held(&vdev->reset_lock);
	spin_lock_irqsave(&hwq->lock, flags);
	if (hwq->head_job != job) {
		/* It ended meanwhile. */
		spin_unlock_irqrestore(&hwq->lock, flags);
		return true;
	}
	vnpu_qwr(hwq, VNPU_Q_CTRL, VNPU_Q_CTRL_ABORT);
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (!vnpu_hwq_wait_stopped(hwq))
		return false;

	spin_lock_irqsave(&hwq->lock, flags);
	overran = hwq->head_job == job &&
		  !vnpu_cmd_retired(hwq, job, job->cmd_count - 1);
	if (overran) {
		job->guilty = true;
		WRITE_ONCE(job->ctx->banned, true);
		if (!job->error) {
			job->st.status = VNPU_STATUS_ABORTED;
			job->st.cmd = vnpu_job_current_cmd(hwq, job);
			job->st.info = 0;
		}
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (overran)
		vnpu_log(vdev,
			 "%s: job %llu of context %d ran past its time limit: aborted, context banned",
			 hwq->name, job->seqno, job->ctx->index);
	vnpu_hwq_recover(hwq, true, false);
	return true;
}

/*
 * Makes job, at the head of hwq and waiting in FENCE_WAIT while another
 * context wants the queue, make way: ABORT stops the wait (a FENCE_WAIT
 * writes nothing, so it runs again from its start) and the context's jobs
 * are parked until its turn comes again (vnpu_hwq_park). The wait may end
 * between the last look and the ABORT; the next command then stops too
 * (lost if it cannot run twice): a window of the device's few steps.
 * Returns false when the queue did not stop: the caller resets the device.
 * Under vdev->reset_lock, with the queue's scheduler parked.
 */
static bool vnpu_hwq_preempt(struct vnpu_hwq *hwq, struct vnpu_job *job)
{
	struct vnpu_device *vdev = hwq->vdev;
	unsigned long flags;
	s64 at_head_us;
	u32 r, used_us;
	int ret;

	lockdep_assert_held(&vdev->reset_lock);
	spin_lock_irqsave(&hwq->lock, flags);
	r = hwq->head_job == job ? vnpu_job_current_cmd(hwq, job) : 0;
	/* Only a wait is stopped: it may have ended since it was judged. */
	if (hwq->head_job != job ||
	    job->cmds[r].hdr.opcode != VNPU_OP_FENCE_WAIT ||
	    !(vnpu_qrd(hwq, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING) ||
	    !vnpu_hwq_may_preempt(hwq)) {
		spin_unlock_irqrestore(&hwq->lock, flags);
		return true;
	}
	vnpu_qwr(hwq, VNPU_Q_CTRL, VNPU_Q_CTRL_ABORT);
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (!vnpu_hwq_wait_stopped(hwq))
		return false;

	spin_lock_irqsave(&hwq->lock, flags);
	if (hwq->head_job == job) {
		at_head_us = ktime_us_delta(ktime_get(), hwq->head_since);
		used_us = vnpu_qrd(hwq, VNPU_Q_BUSY_US) - hwq->head_busy_us;
		job->waited_us += max_t(s64, at_head_us - used_us, 0);
	}
	ret = vnpu_hwq_park(hwq);
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (ret) {
		/* It cannot make way now: back into the ring, judged again. */
		vnpu_hwq_recover(hwq, true, false);
		return true;
	}
	vnpu_log(vdev,
		 "%s: context %d waiting in FENCE_WAIT makes way for another (preempted)",
		 hwq->name, job->ctx->index);
	/* Whoever asked first may find the ring empty now. */
	spin_lock_irqsave(&hwq->lock, flags);
	vnpu_hwq_try_resume(hwq);
	spin_unlock_irqrestore(&hwq->lock, flags);
	return true;
}

/*
 * The job's verdict on a device that works: abort it or make it make way;
 * a queue that does not stop is reset.
 */
static void vnpu_job_time_limit(struct vnpu_device *vdev,
				struct vnpu_hwq *hwq, struct vnpu_job *job,
				enum vnpu_verdict verdict, int seen_resets)
{
	bool stopped = true;

	mutex_lock(&vdev->reset_lock);
	/* A reset since has put it back, with its whole limit again. */
	if (seen_resets == atomic_read(&vdev->reset_count) && !vdev->dead)
		stopped = verdict == VNPU_PREEMPT ?
				  vnpu_hwq_preempt(hwq, job) :
				  vnpu_hwq_abort_head(hwq, job);
	mutex_unlock(&vdev->reset_lock);
	if (!stopped)
		vnpu_device_reset(vdev, job, seen_resets,
				  "queue did not stop on ABORT");
}

enum drm_gpu_sched_stat vnpu_timedout_job(struct drm_sched_job *sj)
{
	struct vnpu_job *job = to_vnpu_job(sj), *head;
	struct drm_gpu_scheduler *sched = sj->sched;
	struct vnpu_hwq *hwq = job->queue->hwq;
	struct vnpu_device *vdev = hwq->vdev;
	enum vnpu_verdict verdict = VNPU_TIME_LEFT;
	bool waiting, fatal, stopped;
	unsigned long flags;
	int idx, seen_resets;
	u64 done;
	u32 hb, busy_us;

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
	/*
	 * A lost interrupt: the records say it is done. Its status bit is
	 * still set, and with IRQ_COALESCE no retirement signals until it is
	 * cleared: clear it first, as the interrupt handler does.
	 */
	vnpu_wr(vdev, VNPU_REG_IRQ_STATUS, VNPU_IRQ_QUEUE(hwq->index));
	vnpu_hwq_retire(hwq, false);
	if (dma_fence_is_signaled(&sj->s_fence->finished) ||
	    (job->hw_fence && dma_fence_is_signaled(job->hw_fence))) {
		drm_dev_exit(idx);
		goto out;
	}
	done = vnpu_hwq_done_seq(hwq);
	hb = vnpu_hw_heartbeat(vdev);
	waiting = vnpu_qrd(hwq, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING;
	busy_us = vnpu_qrd(hwq, VNPU_Q_BUSY_US);
	fatal = vnpu_rd(vdev, VNPU_REG_STATUS) & VNPU_STATUS_FATAL;
	spin_lock_irqsave(&hwq->lock, flags);
	/*
	 * The ring's head is judged, which is the scheduler's oldest job
	 * unless a preemption parked that one. No job of this scheduler is
	 * freed while it is parked (above), so the head may be used after
	 * the lock is dropped.
	 */
	head = list_first_entry_or_null(&hwq->inflight, struct vnpu_job, node);
	stopped = !fatal && vnpu_hwq_fw_stopped(hwq, seen_resets, done, hb);
	if (!fatal && !stopped && head)
		verdict = vnpu_hwq_judge(hwq, head, waiting, busy_us);
	spin_unlock_irqrestore(&hwq->lock, flags);
	if (fatal || stopped)
		vnpu_device_reset(vdev, head ?: job, seen_resets,
				  fatal ? "firmware fatal error"
					: "heartbeat stopped");
	/* A firmware that hangs is not a job's overrun: judged again. */
	else if (verdict != VNPU_TIME_LEFT && vnpu_fw_alive(vdev))
		vnpu_job_time_limit(vdev, hwq, head, verdict, seen_resets);
	drm_dev_exit(idx);
out:
	/* Frees the job if it finished: do not touch it after this. */
	drm_sched_wqueue_start(sched);
	return DRM_GPU_SCHED_STAT_NOMINAL;
}
