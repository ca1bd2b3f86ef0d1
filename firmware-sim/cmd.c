// SPDX-License-Identifier: MIT
/* Command processor: decodes and validates the local copy of one command
 * and executes it in steps. Validation never reads guest memory again. */
#include <string.h>

#include "sim_internal.h"

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Validates a DMA_COPY; the data moves in the later steps. */
static void exec_copy(struct sim_exec *ex)
{
	const struct vnpu_cmd_copy *c = &ex->cmd.copy;
	uint64_t end;

	if (!all_zero(c->reserved, sizeof(c->reserved))) {
		ex->status = VNPU_STATUS_INVALID_FIELD;
		return;
	}
	if (c->size == 0 || c->size > VNPU_COPY_MAX_BYTES ||
	    __builtin_add_overflow(c->src_va, c->size, &end) ||
	    __builtin_add_overflow(c->dst_va, c->size, &end)) {
		ex->status = VNPU_STATUS_OUT_OF_RANGE;
		return;
	}
	ex->done = 0;
	ex->phase = SIM_PH_COPY;
}

static void exec_fill(struct sim_exec *ex)
{
	const struct vnpu_cmd_fill *f = &ex->cmd.fill;
	uint64_t end;

	if (!all_zero(f->reserved, sizeof(f->reserved)) ||
	    (f->width != 1 && f->width != 2 && f->width != 4)) {
		ex->status = VNPU_STATUS_INVALID_FIELD;
		return;
	}
	if (f->size == 0 || f->size > VNPU_COPY_MAX_BYTES ||
	    __builtin_add_overflow(f->dst_va, f->size, &end)) {
		ex->status = VNPU_STATUS_OUT_OF_RANGE;
		return;
	}
	if (f->dst_va % f->width || f->size % f->width) {
		ex->status = VNPU_STATUS_MISALIGNED;
		return;
	}
	ex->done = 0;
	ex->phase = SIM_PH_FILL;
}

static bool fence_fields_ok(struct sim_exec *ex)
{
	const struct vnpu_cmd_fence *f = &ex->cmd.fence;

	if (!all_zero(f->reserved, sizeof(f->reserved))) {
		ex->status = VNPU_STATUS_INVALID_FIELD;
		return false;
	}
	if (f->va % 8) {
		ex->status = VNPU_STATUS_MISALIGNED;
		return false;
	}
	return true;
}

static void exec_fence_signal(struct vnpu_sim *sim, struct sim_exec *ex)
{
	uint64_t value = ex->cmd.fence.value;

	if (fence_fields_ok(ex))
		sim_va_write(sim, ex, ex->cmd.fence.va, &value, sizeof(value));
}

/* Reads the fence word: DONE when satisfied or failed, WAIT otherwise. */
static void fence_check(struct vnpu_sim *sim, struct sim_exec *ex)
{
	uint64_t value;

	ex->phase = SIM_PH_DONE;
	if (!sim_va_read(sim, ex, ex->cmd.fence.va, &value, sizeof(value)))
		return;
	if (value < ex->cmd.fence.value)
		ex->phase = SIM_PH_WAIT;
}

static void exec_fence_wait(struct vnpu_sim *sim, struct sim_exec *ex)
{
	if (fence_fields_ok(ex))
		fence_check(sim, ex);
}

static void exec_timestamp(struct vnpu_sim *sim, struct sim_exec *ex)
{
	const struct vnpu_cmd_timestamp *t = &ex->cmd.timestamp;
	uint64_t now;

	if (!all_zero(t->reserved, sizeof(t->reserved))) {
		ex->status = VNPU_STATUS_INVALID_FIELD;
		return;
	}
	if (t->va % 8) {
		ex->status = VNPU_STATUS_MISALIGNED;
		return;
	}
	now = sim_clock(sim);
	sim_va_write(sim, ex, t->va, &now, sizeof(now));
}

/* VNPU_TEST_MMU_FAULT: the access a kernel would make, then a fault in any
 * case (the walk's reason, or INJECTED when the page is mapped). */
static void inject_mmu_fault(struct vnpu_sim *sim, struct sim_exec *ex)
{
	const struct vnpu_cmd_test_inject *t = &ex->cmd.inject;
	struct sim_fault fault;
	struct sim_phys phys;

	if (sim_mmu_translate(sim, ex, t->va, t->write, &phys, &fault))
		fault.reason = VNPU_FAULT_INJECTED;
	sim_mmu_fault(sim, ex, &fault);
}

static void exec_test_inject(struct vnpu_sim *sim, struct sim_exec *ex)
{
	const struct vnpu_cmd_test_inject *t = &ex->cmd.inject;
	bool mmu = t->kind == VNPU_TEST_MMU_FAULT;

	if (!all_zero(t->reserved, sizeof(t->reserved))) {
		ex->status = VNPU_STATUS_INVALID_FIELD;
		return;
	}
	if (!sim->cfg.test_mode) {
		ex->status = VNPU_STATUS_NOT_PERMITTED;
		return;
	}
	if (t->kind < VNPU_TEST_HANG || t->kind > VNPU_TEST_LOST_IRQ ||
	    (mmu && t->write > 1) || (!mmu && (t->write || t->va))) {
		ex->status = VNPU_STATUS_INVALID_FIELD;
		return;
	}
	switch (t->kind) {
	case VNPU_TEST_HANG:
	case VNPU_TEST_FATAL:
		sim_lock(sim);
		if (sim->epoch == ex->epoch) {
			if (t->kind == VNPU_TEST_HANG)
				sim_hang_locked(sim);
			else
				sim_fatal_locked(sim, VNPU_FATAL_INJECTED);
		}
		sim_unlock(sim);
		ex->phase = SIM_PH_DEAD; /* the firmware dies with it */
		break;
	case VNPU_TEST_MMU_FAULT:
		inject_mmu_fault(sim, ex);
		break;
	case VNPU_TEST_LOST_IRQ:
		sim_lock(sim);
		if (sim->epoch == ex->epoch)
			sim->lost_irq = true;
		sim_unlock(sim);
		break;
	}
}

void sim_cmd_begin(struct vnpu_sim *sim, struct sim_exec *ex)
{
	const struct vnpu_cmd_header *h = &ex->cmd.hdr;

	ex->status = VNPU_STATUS_OK;
	ex->info = 0;
	/* Commands finish in this step unless they say otherwise. */
	ex->phase = SIM_PH_DONE;
	if (h->flags & ~VNPU_CMD_F_ALL || h->reserved0 || h->reserved1) {
		/* An unknown opcode is reported as such even with bad flags. */
		ex->status = vnpu_opcode_known(h->opcode)
				     ? VNPU_STATUS_INVALID_FIELD
				     : VNPU_STATUS_INVALID_OPCODE;
		return;
	}
	switch (h->opcode) {
	case VNPU_OP_NOP:
		if (!all_zero(ex->cmd.raw, sizeof(ex->cmd.raw)))
			ex->status = VNPU_STATUS_INVALID_FIELD;
		break;
	case VNPU_OP_KERNEL_LAUNCH:
		sim_launch_begin(sim, ex);
		break;
	case VNPU_OP_DMA_COPY:
		exec_copy(ex);
		break;
	case VNPU_OP_FILL:
		exec_fill(ex);
		break;
	case VNPU_OP_FENCE_SIGNAL:
		exec_fence_signal(sim, ex);
		break;
	case VNPU_OP_FENCE_WAIT:
		exec_fence_wait(sim, ex);
		break;
	case VNPU_OP_TIMESTAMP:
		exec_timestamp(sim, ex);
		break;
	case VNPU_OP_TEST_INJECT:
		exec_test_inject(sim, ex);
		break;
	default:
		ex->status = VNPU_STATUS_INVALID_OPCODE;
		break;
	}
}

bool sim_cmd_step(struct vnpu_sim *sim, struct sim_exec *ex)
{
	switch (ex->phase) {
	case SIM_PH_WAIT:
		/* A context that faulted meanwhile ends the wait. */
		if (ex->faulted) {
			ex->status = VNPU_STATUS_CONTEXT_FAULTED;
			ex->phase = SIM_PH_DONE;
			return true;
		}
		fence_check(sim, ex);
		return ex->phase != SIM_PH_WAIT;
	case SIM_PH_COPY:
		if (sim_dma_copy_step(sim, ex))
			ex->phase = SIM_PH_DONE;
		return true;
	case SIM_PH_FILL:
		if (sim_dma_fill_step(sim, ex))
			ex->phase = SIM_PH_DONE;
		return true;
	case SIM_PH_LAUNCH:
		return sim_launch_step(sim, ex);
	default:
		return false;
	}
}
