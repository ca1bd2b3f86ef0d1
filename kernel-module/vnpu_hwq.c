// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: hardware queues. Each is a command ring and a
 * completion ring on the device with a drm_sched scheduler in front; this
 * file writes jobs into the ring, retires them from completion records and
 * is the scheduler's backend (the timeout handler is in vnpu_reset.c).
 *
 * A hardware queue runs in one context at a time (Q_CTX is programmed while
 * the queue is disabled), so a job of another context waits in prepare_job
 * until the ring is idle, then run_job switches the queue over; meanwhile
 * the owner's jobs wait too (see vnpu_prepare_job). Commands get
 * per-queue seqnos when the job runs; the last one raises the interrupt and
 * its seqno is the hardware fence's. Completion records decide when a job
 * is done and whether it failed. The scheduler's credits are ring slots, so
 * run_job always finds room.
 */
#include <linux/iopoll.h>
#include <linux/workqueue.h>
#include <drm/drm_drv.h>

#include "vnpu_hw.h"

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

static const char *vnpu_switch_timeline_name(struct dma_fence *f)
{
	return "vnpu-hwq-switch";
}

/* The ring drained, a parked context's jobs went back: queue switches. */
static const struct dma_fence_ops vnpu_switch_fence_ops = {
	.get_driver_name = vnpu_fence_driver_name,
	.get_timeline_name = vnpu_switch_timeline_name,
};

/* A fence of a queue switch, signalled under hwq->lock. */
struct dma_fence *vnpu_hwq_fence_create(struct vnpu_hwq *hwq)
{
	struct dma_fence *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (f)
		dma_fence_init(f, &vnpu_switch_fence_ops, &hwq->fence_lock,
			       dma_fence_context_alloc(1), 1);
	return f;
}

/*
 * Disables the queue, points it at ctx_index, enables it. Ring is empty.
 * Ring state is the hwq lock's, as in every function of this file that
 * touches the ring or the in-flight list.
 */
void vnpu_hwq_program(struct vnpu_hwq *hwq, int ctx_index)
{
	lockdep_assert_held(&hwq->lock);
	vnpu_qwr(hwq, VNPU_Q_CTRL, 0);
	vnpu_qwr(hwq, VNPU_Q_RING_BASE_LO, lower_32_bits(hwq->ring_dma));
	vnpu_qwr(hwq, VNPU_Q_RING_BASE_HI, upper_32_bits(hwq->ring_dma));
	vnpu_qwr(hwq, VNPU_Q_CPL_BASE_LO, lower_32_bits(hwq->cpl_dma));
	vnpu_qwr(hwq, VNPU_Q_CPL_BASE_HI, upper_32_bits(hwq->cpl_dma));
	vnpu_qwr(hwq, VNPU_Q_RING_LOG2, hwq->ring_log2);
	vnpu_qwr(hwq, VNPU_Q_CTX, ctx_index);
	vnpu_qwr(hwq, VNPU_Q_CTRL,
		 VNPU_Q_CTRL_ENABLE | VNPU_Q_CTRL_IRQ_ENABLE |
			 (hwq->vdev->irq_coalesce ? VNPU_Q_CTRL_IRQ_COALESCE : 0));
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
void vnpu_hwq_push(struct vnpu_hwq *hwq, struct vnpu_job *job)
{
	u32 i;

	lockdep_assert_held(&hwq->lock);
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

/*
 * Whether command i of job has run to its end. A command stopped by the
 * queue's ABORT has a record too, but it did not: the driver runs it again
 * or fails its job (vnpu_reset.c).
 */
bool vnpu_cmd_retired(struct vnpu_hwq *hwq, struct vnpu_job *job, u32 i)
{
	struct vnpu_cpl *cpl = &hwq->cpl[vnpu_job_slot(hwq, job, i)];

	if (le64_to_cpu(READ_ONCE(cpl->seqno)) != job->first_seqno + i)
		return false;
	/* The status only once the seqno says the record is this one's. */
	dma_rmb();
	return le32_to_cpu(READ_ONCE(cpl->status)) != VNPU_STATUS_ABORTED;
}

/*
 * Whether command i of job was started and then stopped part-way by the
 * queue's ABORT: its record is there, with status ABORTED. A command the
 * abort found not started has no record.
 */
bool vnpu_cmd_stopped(struct vnpu_hwq *hwq, struct vnpu_job *job, u32 i)
{
	struct vnpu_cpl *cpl = &hwq->cpl[vnpu_job_slot(hwq, job, i)];

	if (le64_to_cpu(READ_ONCE(cpl->seqno)) != job->first_seqno + i)
		return false;
	dma_rmb();
	return le32_to_cpu(READ_ONCE(cpl->status)) == VNPU_STATUS_ABORTED;
}

/*
 * Whether running c again from its start, after it was stopped part-way,
 * leaves memory as one whole run would: it writes only values that do not
 * depend on what it wrote before. A launch may update in place (x += 1);
 * a copy may read what it wrote, through another mapping of the same
 * pages (a read-only import of a BO has its own VA), so neither is.
 */
bool vnpu_cmd_restartable(const struct vnpu_cmd *c)
{
	switch (c->hdr.opcode) {
	case VNPU_OP_NOP:
	case VNPU_OP_FENCE_WAIT:
	case VNPU_OP_FENCE_SIGNAL:
	case VNPU_OP_TIMESTAMP:
	case VNPU_OP_FILL:
		return true;
	default:
		return false;
	}
}

static int vnpu_status_errno(u32 status)
{
	switch (status) {
	case VNPU_STATUS_OK:
		return 0;
	case VNPU_STATUS_MMU_FAULT:
	case VNPU_STATUS_CONTEXT_FAULTED:
		return -EFAULT;
	case VNPU_STATUS_ABORTED:
		return -ETIMEDOUT;
	default:
		return -EIO;
	}
}

/* Folds the status of retired commands [resume_idx, end) into job->error. */
void vnpu_job_collect(struct vnpu_hwq *hwq, struct vnpu_job *job, u32 end)
{
	u32 i;

	lockdep_assert_held(&hwq->lock);
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
u32 vnpu_job_current_cmd(struct vnpu_hwq *hwq, struct vnpu_job *job)
{
	u32 r = job->resume_idx;

	while (r < job->cmd_count - 1 && vnpu_cmd_retired(hwq, job, r))
		r++;
	return r;
}

/*
 * Notes a change of the job at the head of the ring: from now on it has
 * its time limit to finish (vnpu_reset.c), and is judged when it may have
 * used it, whenever the scheduler's own timer (re-armed by every job
 * queued) would fire. restart: the same job starts over (put back into
 * the ring after a reset or an abort).
 */
void vnpu_hwq_head_update(struct vnpu_hwq *hwq, bool restart)
{
	struct vnpu_job *head = list_first_entry_or_null(&hwq->inflight,
							 struct vnpu_job, node);

	lockdep_assert_held(&hwq->lock);
	if (head == hwq->head_job && !restart)
		return;
	hwq->head_job = head;
	hwq->head_since = ktime_get();
	if (!head) {
		cancel_delayed_work(&hwq->limit_work);
		return;
	}
	hwq->head_busy_us = vnpu_qrd(hwq, VNPU_Q_BUSY_US);
	mod_delayed_work(hwq->vdev->reset_wq, &hwq->limit_work,
			 msecs_to_jiffies(vnpu_job_timeout_ms));
}

/* The head job may have used its time: the timeout handler judges it. */
static void vnpu_hwq_limit_work(struct work_struct *work)
{
	struct vnpu_hwq *hwq =
		container_of(to_delayed_work(work), struct vnpu_hwq, limit_work);

	drm_sched_fault(&hwq->sched);
}

/* Releases whoever waits for the ring to drain, once it has. */
static void vnpu_hwq_check_drained(struct vnpu_hwq *hwq)
{
	lockdep_assert_held(&hwq->lock);
	if (!hwq->drain_fence || !list_empty(&hwq->inflight))
		return;
	dma_fence_signal(hwq->drain_fence);
	dma_fence_put(hwq->drain_fence);
	hwq->drain_fence = NULL;
}

void vnpu_job_signal(struct vnpu_job *job, int error)
{
	struct vnpu_hwq *hwq = job->queue->hwq;
	struct vnpu_hw_fence *hwf =
		container_of(job->hw_fence, struct vnpu_hw_fence, base);

	lockdep_assert_held(&hwq->lock);
	list_del_init(&job->node);
	vnpu_hwq_head_update(hwq, false);
	vnpu_hwq_check_drained(hwq);
	/* Dropped for the context's fault without a record of its own. */
	if (error == -EFAULT && !job->st.status)
		job->st.status = VNPU_STATUS_CONTEXT_FAULTED;
	hwf->st = job->st;
	if (error)
		dma_fence_set_error(job->hw_fence, error);
	dma_fence_signal(job->hw_fence);
}

/*
 * Fails a job whose command i was executing when the device was reset or
 * its queue aborted for another's sake, and cannot run twice: it may have
 * partly run, so it is neither run again nor reported done.
 */
void vnpu_job_lost(struct vnpu_job *job, u32 i)
{
	lockdep_assert_held(&job->queue->hwq->lock);
	if (!job->error) {
		job->error = -EIO;
		job->st.status = VNPU_STATUS_LOST;
		job->st.cmd = i;
		job->st.info = 0;
	}
	vnpu_job_signal(job, job->error);
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

/*
 * Signals every job whose last command has retired. ok_only: stops at a
 * job with a failed command and returns true. The failure may be a fault,
 * whose handling sleeps and must mark the context faulted before its job
 * signals (the interrupt thread does both).
 */
bool vnpu_hwq_retire(struct vnpu_hwq *hwq, bool ok_only)
{
	struct vnpu_job *job, *tmp;
	unsigned long flags;
	bool failed = false;

	spin_lock_irqsave(&hwq->lock, flags);
	list_for_each_entry_safe(job, tmp, &hwq->inflight, node) {
		if (!vnpu_cmd_retired(hwq, job, job->cmd_count - 1))
			break;
		vnpu_job_collect(hwq, job, job->cmd_count);
		if (ok_only && job->error) {
			failed = true;
			break;
		}
		vnpu_job_signal(job, job->error);
	}
	vnpu_hwq_try_resume(hwq);
	spin_unlock_irqrestore(&hwq->lock, flags);
	return failed;
}

/*
 * After the context of this queue faulted: stop the queue so nothing more
 * of that context runs once the fault is cleared. ABORT, not a disable: a
 * command in flight stops only at its next step (docs/hw-spec.md D.9), and
 * a launch past its translations writes contiguous VRAM directly, so the
 * jobs are failed (which lets the context's memory go) only once the queue
 * reads stopped. Returns whether the queue was the context's.
 */
static bool vnpu_hwq_abort_ctx_start(struct vnpu_hwq *hwq, int ctx_index)
{
	struct vnpu_job *job, *tmp;
	unsigned long flags;
	bool ours;

	spin_lock_irqsave(&hwq->lock, flags);
	/* Preempted jobs are off the device: they fail at once. */
	list_for_each_entry_safe(job, tmp, &hwq->parked, node)
		if (job->ctx->index == ctx_index)
			vnpu_job_signal(job, -EFAULT);
	ours = hwq->cur_ctx == ctx_index;
	if (ours) {
		vnpu_qwr(hwq, VNPU_Q_CTRL, VNPU_Q_CTRL_ABORT);
		hwq->cur_ctx = -1;
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
	return ours;
}

/*
 * After an ABORT: whether the queue stopped (its command in flight, if
 * any, writes no more), within VNPU_ABORT_WAIT_US. Sleeps.
 */
bool vnpu_hwq_wait_stopped(struct vnpu_hwq *hwq)
{
	u32 st;

	if (!read_poll_timeout(vnpu_qrd, st, !(st & VNPU_Q_STATUS_ENABLED),
			       100, VNPU_ABORT_WAIT_US, false, hwq,
			       VNPU_Q_STATUS))
		return true;
	vnpu_log(hwq->vdev, "%s: ABORT did not stop the queue", hwq->name);
	return false;
}

/*
 * Once the queue stopped: fail the context's unfinished jobs with -EFAULT.
 * A queue that does not stop keeps its jobs, and the device is reset (not
 * from here: the reset waits for the interrupt threads), which stops it
 * and fails them.
 */
static void vnpu_hwq_abort_ctx_finish(struct vnpu_hwq *hwq, int ctx_index,
				      u32 fault_queue)
{
	struct vnpu_job *job, *tmp;
	bool blamed = false;
	unsigned long flags;

	if (!vnpu_hwq_wait_stopped(hwq)) {
		queue_work(hwq->vdev->reset_wq, &hwq->vdev->stuck_reset_work);
		return;
	}
	spin_lock_irqsave(&hwq->lock, flags);
	list_for_each_entry_safe(job, tmp, &hwq->inflight, node) {
		bool done = vnpu_cmd_retired(hwq, job, job->cmd_count - 1);

		if (job->ctx->index != ctx_index)
			continue;
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
	vnpu_hwq_try_resume(hwq);
	spin_unlock_irqrestore(&hwq->lock, flags);
}

/*
 * fault_status: the context's FAULT_STATUS (names the faulting queue).
 * Sleeps while the queues stop (well under 10 ms each); every queue is
 * told to stop before the first is waited for.
 */
void vnpu_ctx_fault_abort(struct vnpu_device *vdev, int ctx_index,
			  u32 fault_status)
{
	DECLARE_BITMAP(stopping, VNPU_MAX_QUEUES);
	u32 q;

	bitmap_zero(stopping, VNPU_MAX_QUEUES);
	for (q = 0; q < vdev->num_hwq; q++)
		if (vnpu_hwq_abort_ctx_start(&vdev->hwq[q], ctx_index))
			__set_bit(q, stopping);
	for_each_set_bit(q, stopping, VNPU_MAX_QUEUES)
		vnpu_hwq_abort_ctx_finish(&vdev->hwq[q], ctx_index,
					  VNPU_FAULT_QUEUE(fault_status));
}

/* ---- fairness between contexts ------------------------------------------ */

/*
 * A hardware queue runs one context at a time and switches only with an
 * empty ring. A context that wants the queue while another owns it asks
 * for a switch, and from then on the jobs of every other context, the
 * owner's included, wait until the asking job has been scheduled (its
 * scheduled fence, which also signals when its queue is torn down first).
 * So no context keeps the ring full while another waits, and contexts get
 * the queue in the order they asked. All of it under hwq->lock.
 */
static void vnpu_hwq_switch_signaled(struct dma_fence *f,
				     struct dma_fence_cb *cb)
{
	/* The first entry may have changed: a parked context's turn? */
	struct vnpu_hwq *hwq = container_of(cb, typeof(hwq->switch_req[0]),
					    cb)->hwq;

	queue_work(system_highpri_wq, &hwq->resume_work);
}

static void vnpu_hwq_switch_prune(struct vnpu_hwq *hwq)
{
	lockdep_assert_held(&hwq->lock);
	while (hwq->switch_count) {
		u32 i = hwq->switch_head;

		if (!dma_fence_is_signaled(hwq->switch_req[i].fence))
			break;
		/* Its callback must have run before the entry is reused. */
		dma_fence_remove_callback(hwq->switch_req[i].fence,
					  &hwq->switch_req[i].cb);
		dma_fence_put(hwq->switch_req[i].fence);
		clear_bit(hwq->switch_req[i].ctx, hwq->switch_asked);
		hwq->switch_head = (i + 1) % VNPU_MAX_CONTEXTS;
		hwq->switch_count--;
	}
}

/* Queues ctx's request behind the others; one per context at most. */
static bool vnpu_hwq_switch_add(struct vnpu_hwq *hwq, int ctx,
				struct dma_fence *fence, bool parked,
				u32 credits)
{
	u32 i;

	lockdep_assert_held(&hwq->lock);
	if (test_and_set_bit(ctx, hwq->switch_asked))
		return false;
	/* One entry per context at most: the ring never overflows. */
	i = (hwq->switch_head + hwq->switch_count++) % VNPU_MAX_CONTEXTS;
	hwq->switch_req[i].fence = dma_fence_get(fence);
	hwq->switch_req[i].ctx = ctx;
	hwq->switch_req[i].parked = parked;
	hwq->switch_req[i].credits = credits;
	hwq->switch_req[i].hwq = hwq;
	if (dma_fence_add_callback(fence, &hwq->switch_req[i].cb,
				   vnpu_hwq_switch_signaled))
		queue_work(system_highpri_wq, &hwq->resume_work);
	return true;
}

static void vnpu_hwq_switch_ask(struct vnpu_hwq *hwq, struct vnpu_job *job)
{
	vnpu_hwq_switch_add(hwq, job->ctx->index,
			    &job->base.s_fence->scheduled, false,
			    job->base.credits);
}

/*
 * SUBMIT: a job that can run at once (nothing ahead of it in its queue, no
 * dependency left) asks for the hardware queue right away, so that the
 * owner's backlog in the scheduler does not run first. A job that waits
 * for something asks only when the scheduler gets to it (prepare_job):
 * holding the queue for it could wait on the owner's own later jobs.
 */
void vnpu_hwq_job_pushed(struct vnpu_hwq *hwq, struct vnpu_job *job)
{
	struct dma_fence *dep;
	unsigned long i, flags;

	if (spsc_queue_count(&job->queue->entity.job_queue))
		return;
	xa_for_each(&job->base.dependencies, i, dep)
		if (!dma_fence_is_signaled(dep))
			return;
	spin_lock_irqsave(&hwq->lock, flags);
	vnpu_hwq_switch_prune(hwq);
	if (hwq->cur_ctx >= 0 && hwq->cur_ctx != job->ctx->index)
		vnpu_hwq_switch_ask(hwq, job);
	spin_unlock_irqrestore(&hwq->lock, flags);
}

/* Whether a context other than the owner waits for this queue. */
bool vnpu_hwq_contended(struct vnpu_hwq *hwq)
{
	u32 i;

	lockdep_assert_held(&hwq->lock);
	vnpu_hwq_switch_prune(hwq);
	for (i = 0; i < hwq->switch_count; i++)
		if (hwq->switch_req[(hwq->switch_head + i) % VNPU_MAX_CONTEXTS]
			    .ctx != hwq->cur_ctx)
			return true;
	return false;
}

/* ---- preemption at FENCE_WAIT -------------------------------------------- */

/*
 * A spare switch fence (vnpu_job.switch_fence) of job, else of a job in
 * the ring or parked: NULL when all were used.
 */
static struct dma_fence *vnpu_hwq_take_spare(struct vnpu_hwq *hwq,
					     struct vnpu_job *job)
{
	struct list_head *lists[] = { &hwq->inflight, &hwq->parked };
	struct dma_fence *f;
	struct vnpu_job *j;
	u32 l;

	lockdep_assert_held(&hwq->lock);
	if (job && job->switch_fence) {
		f = job->switch_fence;
		job->switch_fence = NULL;
		return f;
	}
	for (l = 0; l < ARRAY_SIZE(lists); l++)
		list_for_each_entry(j, lists[l], node)
			if (j->switch_fence) {
				f = j->switch_fence;
				j->switch_fence = NULL;
				return f;
			}
	return NULL;
}

/*
 * Whether the job at the head of a contended ring, waiting in FENCE_WAIT,
 * may be preempted for the context whose request comes first: that one
 * must get ring slots (the parked jobs keep their scheduler credits), and
 * the waiting context must not have asked for the queue itself (one
 * request per context: a job of its other queue, not yet scheduled).
 */
bool vnpu_hwq_may_preempt(struct vnpu_hwq *hwq)
{
	u32 i;

	lockdep_assert_held(&hwq->lock);
	vnpu_hwq_switch_prune(hwq);
	if (!hwq->switch_count || hwq->cur_ctx < 0 ||
	    test_bit(hwq->cur_ctx, hwq->switch_asked))
		return false;
	i = hwq->switch_head;
	return !hwq->switch_req[i].parked &&
	       atomic_read(&hwq->sched.credit_count) +
			       hwq->switch_req[i].credits <=
		       hwq->sched.credit_limit;
}

/*
 * The queue was stopped (ABORT) while its head job waited in FENCE_WAIT,
 * because another context wants it (vnpu_reset.c): takes the unfinished
 * jobs out of the ring, to go back from their first command that did not
 * complete when the context's turn comes again, after the contexts that
 * asked before it. Waiting is no use of the device, so the job is not
 * failed for it. An aborted command that cannot run twice (the wait ended
 * just before the abort, and the next command had started) is lost.
 * Returns -EBUSY when it could not (no spare fence left, or the context
 * asked for the queue meanwhile): the caller puts the jobs back.
 */
int vnpu_hwq_park(struct vnpu_hwq *hwq)
{
	struct vnpu_job *job, *tmp;
	struct dma_fence *resume;
	bool first = true;
	int ctx;

	lockdep_assert_held(&hwq->lock);
	/* ABORT disabled the queue: it is nobody's until programmed. */
	ctx = hwq->cur_ctx;
	hwq->cur_ctx = -1;
	job = list_first_entry_or_null(&hwq->inflight, struct vnpu_job, node);
	if (!job)
		return 0;
	if (ctx < 0 || test_bit(ctx, hwq->switch_asked))
		return -EBUSY;
	resume = vnpu_hwq_take_spare(hwq, job);
	if (!resume)
		return -EBUSY;
	vnpu_hwq_switch_add(hwq, ctx, resume, true, 0);
	dma_fence_put(resume); /* the request holds it */
	list_for_each_entry_safe(job, tmp, &hwq->inflight, node) {
		u32 r = job->resume_idx;

		while (r < job->cmd_count && vnpu_cmd_retired(hwq, job, r))
			r++;
		vnpu_job_collect(hwq, job, r);
		if (r == job->cmd_count) {
			vnpu_job_signal(job, job->error);
			continue;
		}
		if (first && vnpu_cmd_stopped(hwq, job, r) &&
		    !vnpu_cmd_restartable(&job->cmds[r])) {
			first = false;
			vnpu_job_lost(job, r);
			continue;
		}
		first = false;
		job->resume_idx = r;
		list_move_tail(&job->node, &hwq->parked);
	}
	vnpu_hwq_head_update(hwq, false);
	vnpu_hwq_check_drained(hwq);
	return 0;
}

/*
 * Puts a parked context's jobs back once its request comes first and the
 * ring has drained (hwq->lock held). Called by whoever may have made that
 * true: the ring emptying, a request ahead being granted (resume_work).
 */
void vnpu_hwq_try_resume(struct vnpu_hwq *hwq)
{
	struct vnpu_job *job, *tmp;
	struct dma_fence *resume;
	bool programmed;
	int ctx, err;

	lockdep_assert_held(&hwq->lock);
	for (;;) {
		vnpu_hwq_switch_prune(hwq);
		if (hwq->resetting || !hwq->switch_count ||
		    !list_empty(&hwq->inflight) ||
		    !hwq->switch_req[hwq->switch_head].parked)
			return;
		ctx = hwq->switch_req[hwq->switch_head].ctx;
		resume = hwq->switch_req[hwq->switch_head].fence;
		programmed = false;
		list_for_each_entry_safe(job, tmp, &hwq->parked, node) {
			if (job->ctx->index != ctx)
				continue;
			err = vnpu_ctx_refusal(job->ctx);
			if (err) {
				vnpu_job_signal(job, err);
				continue;
			}
			if (!programmed && !hwq->vdev->dead) {
				vnpu_hwq_program(hwq, ctx);
				programmed = true;
			}
			if (!programmed) {
				vnpu_job_signal(job, -ENODEV);
				continue;
			}
			list_move_tail(&job->node, &hwq->inflight);
			vnpu_hwq_push(hwq, job);
		}
		/* The resumed jobs have their whole limit again. */
		vnpu_hwq_head_update(hwq, true);
		/* Its request is granted: the others may ask again. */
		dma_fence_signal(resume);
	}
}

static void vnpu_hwq_resume_work(struct work_struct *work)
{
	struct vnpu_hwq *hwq = container_of(work, struct vnpu_hwq, resume_work);
	unsigned long flags;

	spin_lock_irqsave(&hwq->lock, flags);
	vnpu_hwq_try_resume(hwq);
	spin_unlock_irqrestore(&hwq->lock, flags);
}

/*
 * Device removal: the parked jobs will never run, and their contexts'
 * requests are granted, so nobody waits for them (hwq->lock held).
 */
void vnpu_hwq_fail_parked(struct vnpu_hwq *hwq, int error)
{
	struct vnpu_job *job, *tmp;

	lockdep_assert_held(&hwq->lock);
	list_for_each_entry_safe(job, tmp, &hwq->parked, node)
		vnpu_job_signal(job, error);
	vnpu_hwq_try_resume(hwq);
}

static void vnpu_hwq_switch_fini(struct vnpu_hwq *hwq)
{
	unsigned long flags;
	u32 i;

	/* No callback may queue resume_work once it has been cancelled. */
	spin_lock_irqsave(&hwq->lock, flags);
	for (i = 0; i < hwq->switch_count; i++) {
		u32 k = (hwq->switch_head + i) % VNPU_MAX_CONTEXTS;

		dma_fence_remove_callback(hwq->switch_req[k].fence,
					  &hwq->switch_req[k].cb);
	}
	spin_unlock_irqrestore(&hwq->lock, flags);
	cancel_work_sync(&hwq->resume_work);
	while (hwq->switch_count) {
		i = hwq->switch_head;
		/* A parked context's: its jobs were failed (device stop). */
		if (hwq->switch_req[i].parked)
			dma_fence_signal(hwq->switch_req[i].fence);
		dma_fence_put(hwq->switch_req[i].fence);
		hwq->switch_head = (i + 1) % VNPU_MAX_CONTEXTS;
		hwq->switch_count--;
	}
	bitmap_zero(hwq->switch_asked, VNPU_MAX_CONTEXTS);
}

/* ---- scheduler backend --------------------------------------------------- */

/*
 * Before run_job, whatever the job must wait for: the context that asked
 * for the queue before it, or, to switch the queue to its own context,
 * the ring to drain.
 */
static struct dma_fence *vnpu_prepare_job(struct drm_sched_job *sj,
					  struct drm_sched_entity *entity)
{
	struct vnpu_job *job = to_vnpu_job(sj);
	struct vnpu_hwq *hwq = job->queue->hwq;
	int ctx = job->ctx->index;
	struct dma_fence *wait = NULL;
	unsigned long flags;

	spin_lock_irqsave(&hwq->lock, flags);
	vnpu_hwq_try_resume(hwq);
	/* A parked context's own new jobs wait for its parked ones too. */
	if (hwq->switch_count &&
	    (hwq->switch_req[hwq->switch_head].ctx != ctx ||
	     hwq->switch_req[hwq->switch_head].parked)) {
		wait = dma_fence_get(hwq->switch_req[hwq->switch_head].fence);
	} else if (hwq->cur_ctx != ctx && !list_empty(&hwq->inflight)) {
		vnpu_hwq_switch_ask(hwq, job);
		/*
		 * Not the last job's fence: a preemption may take that job
		 * out of the ring unfinished (vnpu_hwq_park).
		 */
		if (!hwq->drain_fence)
			hwq->drain_fence = vnpu_hwq_take_spare(hwq, job);
		/*
		 * Every spare used: the last job's fence, which a preemption
		 * may hold back (the preemption is then refused: no spare).
		 */
		wait = hwq->drain_fence ?
			       dma_fence_get(hwq->drain_fence) :
			       dma_fence_get(list_last_entry(&hwq->inflight,
							     struct vnpu_job,
							     node)->hw_fence);
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
	int idx, err;

	err = vnpu_ctx_refusal(ctx);
	if (err)
		return ERR_PTR(err);
	hwf = kzalloc(sizeof(*hwf), GFP_KERNEL);
	if (!hwf)
		return ERR_PTR(-ENOMEM);
	fence = &hwf->base;
	if (!drm_dev_enter(&vdev->drm, &idx)) {
		kfree(fence);
		return ERR_PTR(-ENODEV);
	}
	spin_lock_irqsave(&hwq->lock, flags);
	/*
	 * Again under the lock: a fault marks the context before it stops
	 * the queue under this lock, and the queue must not be programmed
	 * for it while the stop is in progress.
	 */
	err = vnpu_ctx_refusal(ctx);
	if (err) {
		spin_unlock_irqrestore(&hwq->lock, flags);
		drm_dev_exit(idx);
		kfree(fence);
		return ERR_PTR(err);
	}
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
	vnpu_hwq_head_update(hwq, false);
	vnpu_hwq_push(hwq, job);
	spin_unlock_irqrestore(&hwq->lock, flags);
	drm_dev_exit(idx);
	return dma_fence_get(fence);
}

static void vnpu_free_job(struct drm_sched_job *sj)
{
	struct vnpu_job *job = to_vnpu_job(sj);
	struct dma_fence *finished = &sj->s_fence->finished;
	unsigned long flags;
	u32 i;

	/*
	 * The scheduler frees a job as soon as its finished fence reads
	 * signalled, which is before that fence's callbacks have run: they
	 * run on the signalling CPU, under the fence's lock. One of them is
	 * vnpu_job_finished(), which uses the job: let it return first.
	 */
	spin_lock_irqsave(finished->lock, flags);
	spin_unlock_irqrestore(finished->lock, flags);
	drm_sched_job_cleanup(sj);
	if (job->hw_fence)
		dma_fence_put(job->hw_fence);
	/* Off every list of the queue: nobody takes it any more. */
	if (job->switch_fence)
		dma_fence_put(job->switch_fence);
	for (i = 0; i < job->bo_count; i++)
		drm_gem_object_put(job->bos[i]);
	vnpu_queue_put(job->queue);
	kvfree(job);
}

static const struct drm_sched_backend_ops vnpu_sched_ops = {
	.prepare_job = vnpu_prepare_job,
	.run_job = vnpu_run_job,
	.timedout_job = vnpu_timedout_job,
	.free_job = vnpu_free_job,
};

/*
 * The queue's scheduler: a priority run queue per level, as many jobs in
 * flight as the ring holds less one, the job timeout, timeouts handled on
 * the reset queue. Debian 13's 6.12 kernels take drm_sched_init()'s
 * arguments in a struct (the 6.15 interface, backported); Kbuild says
 * which interface the headers declare.
 */
static int vnpu_hwq_sched_init(struct vnpu_hwq *hwq, struct device *dev)
{
	struct vnpu_device *vdev = hwq->vdev;
#ifdef VNPU_SCHED_INIT_ARGS
	const struct drm_sched_init_args args = {
		.ops = &vnpu_sched_ops,
		.submit_wq = hwq->submit_wq,
		.num_rqs = DRM_SCHED_PRIORITY_COUNT,
		.credit_limit = hwq->entries - 1,
		.hang_limit = 0,
		.timeout = msecs_to_jiffies(vnpu_job_timeout_ms),
		.timeout_wq = vdev->reset_wq,
		.score = NULL,
		.name = hwq->name,
		.dev = dev,
	};

	return drm_sched_init(&hwq->sched, &args);
#else
	return drm_sched_init(&hwq->sched, &vnpu_sched_ops, hwq->submit_wq,
			      DRM_SCHED_PRIORITY_COUNT, hwq->entries - 1, 0,
			      msecs_to_jiffies(vnpu_job_timeout_ms),
			      vdev->reset_wq, NULL, hwq->name, dev);
#endif
}

int vnpu_hwq_init(struct vnpu_device *vdev, u32 index)
{
	struct vnpu_hwq *hwq = &vdev->hwq[index];
	struct device *dev = vdev->drm.dev;
	int ret;

	hwq->vdev = vdev;
	/* What vnpu_hwq_fini() uses, whatever fails below. */
	INIT_DELAYED_WORK(&hwq->limit_work, vnpu_hwq_limit_work);
	INIT_WORK(&hwq->resume_work, vnpu_hwq_resume_work);
	spin_lock_init(&hwq->lock);
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
	spin_lock_init(&hwq->fence_lock);
	INIT_LIST_HEAD(&hwq->inflight);
	INIT_LIST_HEAD(&hwq->parked);
	hwq->next_seqno = 1;
	hwq->cur_ctx = -1;
	hwq->fence_ctx = dma_fence_context_alloc(1);
	snprintf(hwq->name, sizeof(hwq->name), "vnpu-hwq%u", index);
	/*
	 * The scheduler's own queue, high priority: a user's threads
	 * spinning on SUBMIT must not delay other contexts' jobs by starving
	 * the work that feeds the ring. Per-CPU, not unbound: run_job then
	 * runs on the CPU that pushed the job (SUBMIT's, or the completion
	 * interrupt's), without waking another CPU (docs/vm.md, the profile).
	 */
	hwq->submit_wq = alloc_workqueue("%s", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0,
					 hwq->name);
	if (!hwq->submit_wq)
		return -ENOMEM;
	ret = vnpu_hwq_sched_init(hwq, dev);
	if (ret)
		return ret;
	hwq->sched_ready = true;
	return 0;
}

void vnpu_hwq_fini(struct vnpu_hwq *hwq)
{
	/* A queue whose init never ran has no work to cancel. */
	if (hwq->vdev)
		cancel_delayed_work_sync(&hwq->limit_work);
	if (hwq->sched_ready)
		drm_sched_fini(&hwq->sched);
	hwq->sched_ready = false;
	if (hwq->submit_wq)
		destroy_workqueue(hwq->submit_wq);
	hwq->submit_wq = NULL;
	if (hwq->vdev)
		vnpu_hwq_switch_fini(hwq);
	if (hwq->drain_fence) {
		dma_fence_signal(hwq->drain_fence);
		dma_fence_put(hwq->drain_fence);
		hwq->drain_fence = NULL;
	}
}

