// SPDX-License-Identifier: MIT
/* Queue registers, doorbells, the scheduling of commands across queues,
 * completion records and queue interrupts, and the boot sequence. */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static uint32_t queue_entries(const struct sim_queue *qu)
{
	return 1u << qu->ring_log2;
}

/* Keeps bit q of active_queues in step with the queue's state; called
 * after every change of its enabled, busy, head or tail. */
static void queue_changed_locked(struct vnpu_sim *sim, unsigned q)
{
	const struct sim_queue *qu = &sim->queue[q];

	if (qu->busy || (qu->enabled && qu->head != qu->tail))
		sim->active_queues |= 1u << q;
	else
		sim->active_queues &= ~(1u << q);
}

bool sim_any_waiting_locked(const struct vnpu_sim *sim)
{
	for (unsigned q = 0; q < sim->cfg.num_queues; q++)
		if (sim->queue[q].busy && sim->queue[q].waiting)
			return true;
	return false;
}

bool sim_queues_busy_locked(const struct vnpu_sim *sim)
{
	for (unsigned q = 0; q < sim->cfg.num_queues; q++)
		if (sim->queue[q].busy)
			return true;
	return false;
}

bool sim_queues_runnable_locked(const struct vnpu_sim *sim)
{
	if (!sim_processing_allowed_locked(sim))
		return false;
	for (unsigned q = 0; q < sim->cfg.num_queues; q++) {
		const struct sim_queue *qu = &sim->queue[q];

		if (qu->busy ? !qu->waiting
			     : qu->enabled && qu->head != qu->tail)
			return true;
	}
	return false;
}

void sim_exec_release(struct vnpu_sim *sim, struct sim_exec *ex)
{
	sim_launch_release(sim, &ex->launch);
}

uint32_t sim_queue_read_locked(struct vnpu_sim *sim, unsigned q, uint32_t reg)
{
	struct sim_queue *qu = &sim->queue[q];
	uint32_t v;

	switch (reg) {
	case VNPU_Q_RING_BASE_LO:
		return (uint32_t)qu->ring_base;
	case VNPU_Q_RING_BASE_HI:
		return (uint32_t)(qu->ring_base >> 32);
	case VNPU_Q_RING_LOG2:
		return qu->ring_log2;
	case VNPU_Q_CTX:
		return qu->ctx;
	case VNPU_Q_CPL_BASE_LO:
		return (uint32_t)qu->cpl_base;
	case VNPU_Q_CPL_BASE_HI:
		return (uint32_t)(qu->cpl_base >> 32);
	case VNPU_Q_CTRL:
		/* An abort in progress keeps the queue enabled until its
		 * command has stopped. */
		return (qu->enabled || qu->aborting ? VNPU_Q_CTRL_ENABLE : 0) |
		       (qu->irq_enable ? VNPU_Q_CTRL_IRQ_ENABLE : 0) |
		       (qu->irq_coalesce ? VNPU_Q_CTRL_IRQ_COALESCE : 0);
	case VNPU_Q_STATUS:
		v = qu->last_error << 16;
		if (qu->enabled || qu->aborting)
			v |= VNPU_Q_STATUS_ENABLED;
		if (qu->enabled && qu->busy && qu->waiting)
			v |= VNPU_Q_STATUS_WAITING;
		if (qu->config_error)
			v |= VNPU_Q_STATUS_CONFIG_ERROR;
		if (qu->aborted)
			v |= VNPU_Q_STATUS_ABORTED;
		return v;
	case VNPU_Q_HEAD:
		return qu->head;
	case VNPU_Q_TAIL:
		return qu->tail;
	case VNPU_Q_DONE_SEQ_LO:
		return (uint32_t)qu->done_seq;
	case VNPU_Q_DONE_SEQ_HI:
		return (uint32_t)(qu->done_seq >> 32);
	case VNPU_Q_BUSY_US:
		return (uint32_t)(sim_queue_busy_ns_locked(sim, q) / 1000);
	default:
		sim_log(sim, "vnpu: read of no such queue register 0x%x",
			VNPU_QUEUE_REG(q, reg));
		return 0;
	}
}

/* The first bad field of a queue about to be enabled, as its register
 * offset, or -1 when the configuration is usable. */
static int queue_config_check(const struct vnpu_sim *sim,
			      const struct sim_queue *qu)
{
	uint64_t ring_bytes, cpl_bytes, end;

	if (qu->ring_log2 < VNPU_RING_LOG2_MIN ||
	    qu->ring_log2 > VNPU_RING_LOG2_MAX)
		return VNPU_Q_RING_LOG2;
	ring_bytes = (uint64_t)VNPU_CMD_SIZE << qu->ring_log2;
	cpl_bytes = (uint64_t)VNPU_CPL_SIZE << qu->ring_log2;
	if (qu->ring_base % VNPU_RING_ALIGN ||
	    __builtin_add_overflow(qu->ring_base, ring_bytes, &end))
		return VNPU_Q_RING_BASE_LO;
	if (qu->cpl_base % VNPU_RING_ALIGN ||
	    __builtin_add_overflow(qu->cpl_base, cpl_bytes, &end))
		return VNPU_Q_CPL_BASE_LO;
	if (qu->ctx >= sim->cfg.num_contexts || !sim->ctx[qu->ctx].enabled)
		return VNPU_Q_CTX;
	return -1;
}

/*
 * ABORT: the command in flight, if any, is stopped and retires with
 * ABORTED (the command processor does it once the command has stopped:
 * until then the queue reads enabled, with ABORTED set); the commands
 * after it are dropped. Without a command in flight the queue is only
 * disabled.
 */
static void queue_abort_locked(struct vnpu_sim *sim, unsigned q)
{
	struct sim_queue *qu = &sim->queue[q];

	if (!qu->enabled) {
		sim_log(sim, "vnpu: queue %u: abort of a disabled queue", q);
		return;
	}
	qu->enabled = false;
	qu->aborted = true;
	qu->waiting = false;
	if (qu->busy) {
		qu->aborting = true;
		atomic_store(&qu->exec.launch.stop, true);
	} else {
		qu->gen++;
	}
	queue_changed_locked(sim, q);
}

static void queue_ctrl_write_locked(struct vnpu_sim *sim, unsigned q,
				    uint32_t value)
{
	struct sim_queue *qu = &sim->queue[q];
	bool enable = value & VNPU_Q_CTRL_ENABLE;
	int bad;

	const uint32_t irq_bits =
		VNPU_Q_CTRL_IRQ_ENABLE | VNPU_Q_CTRL_IRQ_COALESCE;

	if (qu->aborting) {
		/* Until the aborted command has stopped, only the
		 * interrupt bits can change. */
		if ((value & ~irq_bits) != VNPU_Q_CTRL_ENABLE)
			sim_log(sim,
				"vnpu: queue %u: Q_CTRL 0x%x while an abort "
				"is in progress: only the IRQ bits taken",
				q, value);
		qu->irq_enable = value & VNPU_Q_CTRL_IRQ_ENABLE;
		qu->irq_coalesce = value & VNPU_Q_CTRL_IRQ_COALESCE;
		return;
	}
	if (value & VNPU_Q_CTRL_ABORT) {
		queue_abort_locked(sim, q);
		return;
	}
	qu->irq_enable = value & VNPU_Q_CTRL_IRQ_ENABLE;
	qu->irq_coalesce = value & VNPU_Q_CTRL_IRQ_COALESCE;
	if (enable == qu->enabled)
		return;
	if (!enable) {
		/* Unexecuted commands are dropped without completions; the
		 * one in flight stops at its next step, unretired. */
		qu->enabled = false;
		qu->waiting = false;
		qu->gen++;
		if (qu->busy)
			atomic_store(&qu->exec.launch.stop, true);
		queue_changed_locked(sim, q);
		return;
	}
	qu->config_error = false;
	if (!sim->ready) {
		qu->config_error = true;
		sim_log(sim, "vnpu: queue %u enabled before boot", q);
		sim_set_error_locked(sim, VNPU_ERR_NOT_READY, q, value,
				     VNPU_EVENT_QUEUE_ERROR);
		return;
	}
	bad = queue_config_check(sim, qu);
	if (bad >= 0) {
		qu->config_error = true;
		sim_log(sim, "vnpu: queue %u: bad configuration (reg 0x%x)", q,
			(unsigned)bad);
		sim_set_error_locked(sim, VNPU_ERR_QUEUE_CONFIG, q,
				     (uint32_t)bad, VNPU_EVENT_QUEUE_ERROR);
		return;
	}
	qu->enabled = true;
	qu->aborted = false;
	qu->waiting = false;
	qu->head = qu->tail = 0;
	qu->done_seq = 0;
	qu->last_error = VNPU_STATUS_OK;
	qu->gen++;
	queue_changed_locked(sim, q);
}

void sim_queue_write_locked(struct vnpu_sim *sim, unsigned q, uint32_t reg,
			    uint32_t value)
{
	struct sim_queue *qu = &sim->queue[q];

	switch (reg) {
	case VNPU_Q_RING_BASE_LO:
	case VNPU_Q_RING_BASE_HI:
	case VNPU_Q_RING_LOG2:
	case VNPU_Q_CTX:
	case VNPU_Q_CPL_BASE_LO:
	case VNPU_Q_CPL_BASE_HI:
		if (qu->enabled || qu->aborting) {
			sim_log(sim,
				"vnpu: queue %u: config write 0x%x while "
				"enabled ignored",
				q, reg);
			sim_set_error_locked(sim, VNPU_ERR_BAD_REGISTER, q,
					     VNPU_QUEUE_REG(q, reg),
					     VNPU_EVENT_QUEUE_ERROR);
			return;
		}
		break;
	case VNPU_Q_CTRL:
		queue_ctrl_write_locked(sim, q, value);
		sim_wake_cp_locked(sim);
		return;
	default:
		sim_log(sim,
			"vnpu: write of read-only or no such queue "
			"register 0x%x",
			VNPU_QUEUE_REG(q, reg));
		sim_set_error_locked(sim, VNPU_ERR_BAD_REGISTER,
				     SIM_ERR_NO_QUEUE, VNPU_QUEUE_REG(q, reg),
				     0);
		return;
	}
	switch (reg) {
	case VNPU_Q_RING_BASE_LO:
		qu->ring_base = (qu->ring_base & ~0xffffffffull) | value;
		break;
	case VNPU_Q_RING_BASE_HI:
		qu->ring_base =
			(qu->ring_base & 0xffffffffull) | (uint64_t)value << 32;
		break;
	case VNPU_Q_RING_LOG2:
		qu->ring_log2 = value;
		break;
	case VNPU_Q_CTX:
		qu->ctx = value;
		break;
	case VNPU_Q_CPL_BASE_LO:
		qu->cpl_base = (qu->cpl_base & ~0xffffffffull) | value;
		break;
	case VNPU_Q_CPL_BASE_HI:
		qu->cpl_base = (qu->cpl_base & 0xffffffffull) | (uint64_t)value
									<< 32;
		break;
	}
}

/* No reset and no disable (nor re-enable) of the queue since the
 * snapshot, when the queue was enabled: every enable change bumps the
 * queue's generation. Lock-free (both counters are atomic). */
static bool still_current(struct vnpu_sim *sim, const struct sim_exec *ex)
{
	return atomic_load(&sim->epoch) == ex->epoch &&
	       atomic_load(&sim->queue[ex->queue].gen) == ex->qgen;
}

static void fatal_if_current(struct vnpu_sim *sim, const struct sim_exec *ex,
			     uint32_t code)
{
	sim_lock(sim);
	if (sim->epoch == ex->epoch)
		sim_fatal_locked(sim, code);
	sim_unlock(sim);
}

/* What a step did, for the commit under the lock. */
enum step_outcome {
	OUT_NONE,     /* could not progress (fence, staging room) */
	OUT_PROGRESS, /* progressed, the command goes on */
	OUT_RETIRED,  /* the completion record is written: retire */
	OUT_DROPPED,  /* over without retirement (disabled, dead, failed) */
};

/* Reads the command from its ring slot (once). */
static bool fetch(struct vnpu_sim *sim, struct sim_exec *ex)
{
	uint64_t addr;

	if (!__builtin_add_overflow(
		    ex->ring_base, (uint64_t)ex->slot * VNPU_CMD_SIZE, &addr) &&
	    !sim->hal.dma_read(sim->hal.opaque, addr, &ex->cmd,
			       sizeof(ex->cmd)))
		return true;
	sim_log(sim, "vnpu: queue %u: ring fetch failed", ex->queue);
	fatal_if_current(sim, ex, VNPU_FATAL_RING_DMA);
	return false;
}

/* Writes the completion record of a finished command (status final). */
static enum step_outcome complete(struct vnpu_sim *sim, struct sim_exec *ex)
{
	struct vnpu_cpl cpl;
	uint64_t addr;

	memset(&cpl, 0, sizeof(cpl));
	cpl.seqno = ex->cmd.hdr.seqno;
	cpl.status = ex->status;
	cpl.opcode = ex->cmd.hdr.opcode;
	cpl.info = ex->info;
	cpl.timestamp = sim_clock(sim);

	/* A reset waits for this step (cp_busy), so a record written after
	 * this check is still written before the reset returns. */
	if (!still_current(sim, ex))
		return OUT_DROPPED;
	if (__builtin_add_overflow(ex->cpl_base,
				   (uint64_t)ex->slot * VNPU_CPL_SIZE, &addr) ||
	    sim->hal.dma_write(sim->hal.opaque, addr, &cpl, sizeof(cpl))) {
		sim_log(sim, "vnpu: queue %u: completion write failed",
			ex->queue);
		fatal_if_current(sim, ex, VNPU_FATAL_CPL_DMA);
		return OUT_DROPPED;
	}
	return OUT_RETIRED;
}

/* Commands that finish in one short step: a doorbell may run them. */
static bool cmd_is_short(uint8_t opcode)
{
	return opcode == VNPU_OP_NOP || opcode == VNPU_OP_FENCE_SIGNAL ||
	       opcode == VNPU_OP_TIMESTAMP;
}

/*
 * One step of the command in flight on a queue, without the lock. abort:
 * the queue's ABORT is pending; cancelled: the queue was disabled since the
 * command was fetched; short_only: a fetched command that is not short is
 * left unstarted, for the command processor to begin (it is not read
 * again). A launch in flight is not on the cores here (the caller waits
 * for its blocks to be over first).
 */
static enum step_outcome run_step(struct vnpu_sim *sim, struct sim_exec *ex,
				  bool abort, bool cancelled, bool short_only)
{
	bool progressed = true;

	if (cancelled || ex->phase == SIM_PH_DEAD ||
	    (abort && ex->phase == SIM_PH_FETCH)) {
		sim_exec_release(sim, ex);
		return OUT_DROPPED;
	}
	if (abort) {
		sim_exec_release(sim, ex);
		ex->status = VNPU_STATUS_ABORTED;
		ex->info = 0;
		return complete(sim, ex);
	}
	if (ex->phase == SIM_PH_FETCH) {
		if (!ex->fetched && !fetch(sim, ex))
			return OUT_DROPPED;
		ex->fetched = true;
		if (short_only && !ex->faulted &&
		    !cmd_is_short(ex->cmd.hdr.opcode))
			return OUT_NONE;
		if (ex->faulted) {
			ex->status = VNPU_STATUS_CONTEXT_FAULTED;
			ex->info = 0;
			ex->phase = SIM_PH_DONE;
		} else {
			sim_cmd_begin(sim, ex);
			/* the first piece of work with the validation */
			if (ex->phase == SIM_PH_COPY ||
			    ex->phase == SIM_PH_FILL ||
			    ex->phase == SIM_PH_LAUNCH)
				sim_cmd_step(sim, ex);
		}
	} else {
		progressed = sim_cmd_step(sim, ex);
	}
	if (ex->phase == SIM_PH_DONE) {
		sim_exec_release(sim, ex);
		return complete(sim, ex);
	}
	if (ex->phase == SIM_PH_DEAD) {
		sim_exec_release(sim, ex);
		return OUT_DROPPED;
	}
	return progressed ? OUT_PROGRESS : OUT_NONE;
}

static void cp_done_locked(struct vnpu_sim *sim)
{
	sim->cp_busy = false;
	pthread_cond_broadcast(&sim->idle_cv);
}

/* Whether queue q can be stepped: a command to fetch, or one in flight
 * that is not a launch whose blocks are still on the cores. */
static bool queue_steppable_locked(struct vnpu_sim *sim, unsigned q)
{
	struct sim_queue *qu = &sim->queue[q];
	struct sim_exec *ex = &qu->exec;

	if (!qu->busy)
		return qu->enabled && qu->head != qu->tail;
	if (sim->cfg.mode == VNPU_SIM_THREADS && ex->phase == SIM_PH_LAUNCH &&
	    ex->launch.lphase == SIM_LP_RUN)
		return sim_launch_settled(sim, &ex->launch);
	return true;
}

/* Starts a command in flight on queue q: the snapshot of its slot. */
static void exec_start_locked(struct vnpu_sim *sim, unsigned q)
{
	struct sim_queue *qu = &sim->queue[q];
	struct sim_exec *ex = &qu->exec;

	qu->busy = true;
	qu->waiting = false;
	ex->queue = q;
	ex->ctx = qu->ctx;
	ex->epoch = sim->epoch;
	ex->qgen = qu->gen;
	ex->ring_base = qu->ring_base;
	ex->cpl_base = qu->cpl_base;
	ex->slot = qu->head;
	ex->entries = queue_entries(qu);
	ex->phase = SIM_PH_FETCH;
	ex->fetched = false;
	ex->status = VNPU_STATUS_OK;
	ex->info = 0;
	ex->done = 0;
	/* cleared here, under the lock: an ABORT or a disable from now on
	 * stops this command's launch */
	atomic_store(&ex->launch.stop, false);
}

/* A retirement's interrupt; coalesced while the queue's bit is set. */
static void queue_irq_locked(struct vnpu_sim *sim, unsigned q)
{
	if (sim->queue[q].irq_coalesce && (sim->irq_status & VNPU_IRQ_QUEUE(q)))
		return;
	sim_raise_irq_locked(sim, VNPU_IRQ_QUEUE(q), VNPU_MSIX_VECTOR_QUEUE(q));
}

/* Commits a step (lock held); the step's result. */
static enum sim_step commit_locked(struct vnpu_sim *sim, unsigned q,
				   enum step_outcome out)
{
	struct sim_queue *qu = &sim->queue[q];
	struct sim_exec *ex = &qu->exec;

	/* A reset waiting for this step clears everything itself. */
	if (sim->epoch != ex->epoch)
		return SIM_STEP_PROGRESS;
	switch (out) {
	case OUT_NONE:
	case OUT_PROGRESS:
		qu->waiting = ex->phase == SIM_PH_WAIT && !qu->aborting &&
			      qu->gen == ex->qgen;
		return out == OUT_NONE ? SIM_STEP_NONE : SIM_STEP_PROGRESS;
	case OUT_RETIRED:
		qu->busy = false;
		qu->waiting = false;
		/* An abort that came while the record was written finds the
		 * command retired: the queue is only disabled. */
		qu->aborting = false;
		if (qu->gen == ex->qgen) {
			qu->head = (ex->slot + 1) & (ex->entries - 1);
			qu->done_seq = ex->cmd.hdr.seqno;
			if (ex->status != VNPU_STATUS_OK)
				qu->last_error = ex->status;
			if (qu->irq_enable &&
			    ((ex->cmd.hdr.flags & VNPU_CMD_F_IRQ) ||
			     ex->status != VNPU_STATUS_OK))
				queue_irq_locked(sim, q);
		}
		queue_changed_locked(sim, q);
		/* disabled meanwhile: over, but not retired */
		return qu->gen == ex->qgen ? SIM_STEP_RETIRED
					   : SIM_STEP_PROGRESS;
	case OUT_DROPPED:
		qu->busy = false;
		qu->waiting = false;
		qu->aborting = false;
		queue_changed_locked(sim, q);
		return SIM_STEP_PROGRESS;
	}
	return SIM_STEP_NONE;
}

/*
 * One step of queue q, if it can progress (lock held, dropped while the
 * step runs, with cp_busy set). short_only: see run_step.
 */
static enum sim_step step_queue_locked(struct vnpu_sim *sim, unsigned q,
				       bool short_only)
{
	struct sim_queue *qu = &sim->queue[q];
	struct sim_exec *ex = &qu->exec;
	enum step_outcome out;
	enum sim_step step;
	bool abort, cancelled, timed, threaded;
	uint64_t t0 = 0;

	if (!(sim->active_queues & (1u << q)) ||
	    !queue_steppable_locked(sim, q))
		return SIM_STEP_NONE;
	if (!qu->busy)
		exec_start_locked(sim, q);
	abort = qu->aborting;
	cancelled = qu->gen != ex->qgen;
	ex->faulted = sim->ctx[ex->ctx].fault_status != 0;
	sim->cp_busy = true;
	/* Blocked in FENCE_WAIT is not executing (Q_BUSY_US, D.11). */
	timed = ex->phase != SIM_PH_WAIT;
	threaded = sim->cfg.mode == VNPU_SIM_THREADS;
	sim_unlock(sim); /* delivers the last retirement's interrupt */

	/* threaded: by this thread's CPU time (workers.c); deterministic: by
	 * the device clock, repeatable */
	if (threaded)
		t0 = sim_charge_start();
	else if (timed)
		t0 = sim_clock(sim);
	out = run_step(sim, ex, abort, cancelled, short_only);
	if (timed && !threaded)
		t0 = sim_clock(sim) - t0;
	else if (!timed && threaded) /* the fence's re-read: nobody's */
		sim_charge_skip(sim_charge_start() - t0);

	sim_lock(sim);
	if (timed && threaded) {
		sim_charge_add(sim, &qu->busy_cns, ex->epoch, t0,
			       sim->cfg.num_cores, 1);
		/* a long run of steps is charged as it goes */
		if (sim_charge_due())
			sim_charge_flush();
	} else if (timed && sim->epoch == ex->epoch) {
		/* not into the counter of a reset that came meanwhile */
		atomic_fetch_add(&qu->busy_cns, t0 * sim->cfg.num_cores);
	}
	step = commit_locked(sim, q, out);
	cp_done_locked(sim);
	return step;
}

enum sim_step sim_cp_step_locked(struct vnpu_sim *sim)
{
	unsigned nq = sim->cfg.num_queues;
	unsigned q = sim->rr_next % nq;

	/* Runs after every step over every queue: a bit test per queue
	 * (not its state's cache lines), the device-wide checks only for a
	 * queue with work. */
	for (unsigned i = 0; i < nq; i++, q = q + 1 == nq ? 0 : q + 1) {
		enum sim_step step;

		if (!(sim->active_queues & (1u << q)))
			continue;
		if (!sim_processing_allowed_locked(sim) ||
		    atomic_load(&sim->cancel))
			break;
		step = step_queue_locked(sim, q, false);
		if (step != SIM_STEP_NONE) {
			sim->rr_next = q + 1 == nq ? 0 : q + 1;
			return step;
		}
	}
	return SIM_STEP_NONE;
}

/*
 * doorbell_runs_short: while the command processor sleeps with nothing to
 * do, the doorbell's thread steps the rung queue for it, as long as its
 * commands are short (lock held, dropped during each step; cp_lent keeps
 * the command processor out meanwhile). True when the queue needs the
 * command processor no more.
 */
static bool doorbell_run_short_locked(struct vnpu_sim *sim, unsigned q)
{
	unsigned n;

	/* cp_idle: threaded mode, and nobody else steps or delivers */
	if (!sim->cfg.doorbell_runs_short || !sim->cp_idle || sim->cp_lent ||
	    sim->boot_pending)
		return false;
	sim->cp_lent = true;
	sim_charge_forget(); /* this thread ran the host's code until now */
	for (n = 0; n < SIM_DOORBELL_SHORT_MAX; n++) {
		if (!sim_processing_allowed_locked(sim) ||
		    atomic_load(&sim->cancel) ||
		    step_queue_locked(sim, q, true) != SIM_STEP_RETIRED)
			break;
	}
	/* Their interrupts, before the write returns; busy meanwhile, so a
	 * reset waits for them instead of being followed by one. */
	sim_charge_flush();
	sim_cp_deliver_locked(sim);
	sim_charge_forget(); /* back to the host's code */
	sim->cp_lent = false;
	/* the command processor may wait for the loan to end */
	pthread_cond_broadcast(&sim->idle_cv);
	return !(sim->active_queues & (1u << q));
}

void sim_doorbell_locked(struct vnpu_sim *sim, unsigned q, uint32_t value)
{
	struct sim_queue *qu = &sim->queue[q];

	if (!qu->enabled) {
		sim_log(sim, "vnpu: doorbell of disabled queue %u", q);
		sim_set_error_locked(sim, VNPU_ERR_DOORBELL_DISABLED, q, value,
				     VNPU_EVENT_DOORBELL_ERROR);
		return;
	}
	if (value >= queue_entries(qu)) {
		sim_log(sim, "vnpu: queue %u doorbell %u beyond %u entries", q,
			value, queue_entries(qu));
		sim_set_error_locked(sim, VNPU_ERR_DOORBELL_RANGE, q, value,
				     VNPU_EVENT_DOORBELL_ERROR);
		return;
	}
	qu->tail = value;
	queue_changed_locked(sim, q);
	if (!doorbell_run_short_locked(sim, q))
		sim_wake_cp_locked(sim);
}

void sim_cp_deliver_locked(struct vnpu_sim *sim)
{
	if (!sim->pending_vectors)
		return;
	/* Busy while delivering: a reset waits for it, so no interrupt of
	 * earlier work follows a reset. */
	sim->cp_busy = true;
	sim_unlock(sim);
	sim_lock(sim);
	cp_done_locked(sim);
}

static uint32_t boot_load(struct vnpu_sim *sim, uint64_t addr, uint32_t size,
			  uint32_t *fw_version,
			  bool loaded[VNPU_KERNEL_ID_MAX + 1])
{
	uint64_t end;
	uint8_t *image;
	uint32_t status;

	if (size < sizeof(struct vnpu_fw_header) || size > VNPU_FW_MAX_SIZE)
		return VNPU_BOOT_ERR_SIZE;
	if (__builtin_add_overflow(addr, size, &end))
		return VNPU_BOOT_ERR_DMA;
	image = malloc(size); /* bounded by VNPU_FW_MAX_SIZE */
	if (!image) {
		sim_log(sim, "vnpu: no memory for the firmware image");
		return VNPU_BOOT_ERR_DMA;
	}
	if (sim->hal.dma_read(sim->hal.opaque, addr, image, size))
		status = VNPU_BOOT_ERR_DMA;
	else
		status = sim_fw_verify(sim, image, size, fw_version, loaded);
	free(image);
	return status;
}

void sim_cp_boot(struct vnpu_sim *sim)
{
	bool loaded[VNPU_KERNEL_ID_MAX + 1] = {false};
	uint32_t fw_version = 0, status, size;
	uint64_t epoch, addr;

	sim_lock(sim);
	if (!sim->boot_pending || sim->cp_busy) {
		sim_unlock(sim);
		return;
	}
	sim->cp_busy = true;
	epoch = sim->epoch;
	addr = (uint64_t)sim->fw_addr_hi << 32 | sim->fw_addr_lo;
	size = sim->fw_size;
	sim_unlock(sim);

	status = boot_load(sim, addr, size, &fw_version, loaded);
	if (status != VNPU_BOOT_READY)
		sim_log(sim, "vnpu: firmware rejected, BOOT_STATUS 0x%x",
			status);

	sim_lock(sim);
	if (sim->epoch == epoch) {
		sim->boot_pending = false;
		sim->boot_status = status;
		if (status == VNPU_BOOT_READY) {
			sim->ready = true;
			sim->fw_version = fw_version;
			memcpy(sim->kernel_loaded, loaded, sizeof(loaded));
			sim->boot_time_ns = sim_clock(sim);
		}
		sim_raise_event_locked(sim, VNPU_EVENT_BOOT_DONE);
	}
	cp_done_locked(sim);
	sim_unlock(sim);
}
