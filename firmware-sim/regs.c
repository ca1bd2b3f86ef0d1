// SPDX-License-Identifier: MIT
/* The BAR0 register file: global and per-context registers, interrupts,
 * events, heartbeat and test injection. Queue registers are in queue.c. */
#include "sim_internal.h"

void sim_wake_cp_locked(struct vnpu_sim *sim)
{
	/* Seen by a polling command processor; the broadcast is a system
	 * call only when it sleeps. */
	atomic_fetch_add_explicit(&sim->wakes, 1, memory_order_release);
	pthread_cond_broadcast(&sim->wake_cv);
	sim_wake_cp_vacant_locked(sim);
}

/* Sets an IRQ_STATUS bit; sends its vector unless masked or dropped by a
 * pending LOST_IRQ injection. Every raise is an edge, set bit or not. */
void sim_raise_irq_locked(struct vnpu_sim *sim, uint32_t bit, unsigned vector)
{
	sim->irq_status |= bit;
	if (sim->irq_mask & bit)
		return;
	if (sim->lost_irq) {
		sim->lost_irq = false;
		return;
	}
	sim->pending_vectors |= 1u << vector;
}

void sim_raise_event_locked(struct vnpu_sim *sim, uint32_t events)
{
	sim->event_status |= events;
	sim_raise_irq_locked(sim, VNPU_IRQ_EVENTS, VNPU_MSIX_VECTOR_EVENTS);
}

void sim_set_error_locked(struct vnpu_sim *sim, uint32_t code, uint32_t queue,
			  uint32_t value, uint32_t event)
{
	sim->err_code = code;
	sim->err_queue = queue;
	sim->err_value = value;
	if (event)
		sim_raise_event_locked(sim, event);
}

static uint32_t heartbeat_at(const struct vnpu_sim *sim, uint64_t now)
{
	uint64_t period = SIM_HEARTBEAT_PERIOD_US * 1000ull;

	if (now < sim->boot_time_ns)
		return 0;
	return (uint32_t)((now - sim->boot_time_ns) / period);
}

uint32_t sim_heartbeat_locked(struct vnpu_sim *sim)
{
	if (!sim->ready)
		return 0;
	if (sim->hung || sim->fatal)
		return sim->frozen_heartbeat;
	return heartbeat_at(sim, sim_clock(sim));
}

/* Freezes the heartbeat at this instant (hang or fatal). */
static void freeze_heartbeat_locked(struct vnpu_sim *sim)
{
	if (sim->hung || sim->fatal)
		return;
	sim->frozen_heartbeat =
		sim->ready ? heartbeat_at(sim, sim_clock(sim)) : 0;
}

void sim_fatal_locked(struct vnpu_sim *sim, uint32_t code)
{
	if (sim->fatal)
		return;
	freeze_heartbeat_locked(sim);
	sim->fatal = true;
	sim->fatal_code = code;
	sim_raise_event_locked(sim, VNPU_EVENT_FATAL);
}

void sim_hang_locked(struct vnpu_sim *sim)
{
	freeze_heartbeat_locked(sim);
	sim->hung = true;
}

static uint32_t status_locked(const struct vnpu_sim *sim)
{
	uint32_t status = 0;
	bool busy = sim->boot_pending || sim->cp_busy;

	if (sim->ready)
		status |= VNPU_STATUS_READY;
	if (sim->fatal)
		status |= VNPU_STATUS_FATAL;
	for (unsigned q = 0; !busy && q < sim->cfg.num_queues; q++) {
		const struct sim_queue *qu = &sim->queue[q];

		busy = qu->busy || (qu->enabled && qu->head != qu->tail);
	}
	if (busy)
		status |= VNPU_STATUS_BUSY;
	return status;
}

static uint32_t faulted_bitmap(const struct vnpu_sim *sim, unsigned first)
{
	uint32_t map = 0;

	for (unsigned i = 0; i < 32; i++) {
		unsigned c = first + i;

		if (c < sim->cfg.num_contexts && sim->ctx[c].fault_status)
			map |= 1u << i;
	}
	return map;
}

static void bad_register(struct vnpu_sim *sim, uint32_t offset, bool write,
			 const char *why)
{
	sim_log(sim, "vnpu: %s of register 0x%x: %s", write ? "write" : "read",
		offset, why);
	if (write)
		sim_set_error_locked(sim, VNPU_ERR_BAD_REGISTER,
				     SIM_ERR_NO_QUEUE, offset, 0);
}

static uint32_t global_read_locked(struct vnpu_sim *sim, uint32_t offset)
{
	uint64_t now;

	switch (offset) {
	case VNPU_REG_ID:
		return VNPU_ID_VALUE;
	case VNPU_REG_HW_VERSION:
		return (uint32_t)VNPU_HW_ABI_MAJOR << 16 | VNPU_HW_ABI_MINOR;
	case VNPU_REG_CAPS:
		return sim->cfg.num_queues | sim->cfg.num_cores << 8 |
		       (uint32_t)VNPU_RING_LOG2_MAX << 16 |
		       (sim->cfg.test_mode ? VNPU_CAPS_TEST_MODE : 0);
	case VNPU_REG_NUM_CONTEXTS:
		return sim->cfg.num_contexts;
	case VNPU_REG_VRAM_SIZE_LO:
		return (uint32_t)sim->cfg.vram_size;
	case VNPU_REG_VRAM_SIZE_HI:
		return (uint32_t)(sim->cfg.vram_size >> 32);
	case VNPU_REG_HEARTBEAT_PERIOD_US:
		return SIM_HEARTBEAT_PERIOD_US;
	case VNPU_REG_CTRL:
		return 0;
	case VNPU_REG_STATUS:
		return status_locked(sim);
	case VNPU_REG_BOOT_STATUS:
		return sim->boot_status;
	case VNPU_REG_FW_VERSION:
		return sim->fw_version;
	case VNPU_REG_FW_ADDR_LO:
		return sim->fw_addr_lo;
	case VNPU_REG_FW_ADDR_HI:
		return sim->fw_addr_hi;
	case VNPU_REG_FW_SIZE:
		return sim->fw_size;
	case VNPU_REG_FATAL_CODE:
		return sim->fatal_code;
	case VNPU_REG_IRQ_STATUS:
		return sim->irq_status;
	case VNPU_REG_IRQ_MASK:
		return sim->irq_mask;
	case VNPU_REG_EVENT_STATUS:
		return sim->event_status;
	case VNPU_REG_HEARTBEAT:
		return sim_heartbeat_locked(sim);
	case VNPU_REG_TIMESTAMP_LO:
		now = sim_clock(sim);
		sim->timestamp_hi_latch = (uint32_t)(now >> 32);
		return (uint32_t)now;
	case VNPU_REG_TIMESTAMP_HI:
		return sim->timestamp_hi_latch;
	case VNPU_REG_SCRATCH:
		return sim->scratch;
	case VNPU_REG_RESET_COUNT:
		return sim->reset_count;
	case VNPU_REG_FAULTED_CTX_LO:
		return faulted_bitmap(sim, 0);
	case VNPU_REG_FAULTED_CTX_HI:
		return faulted_bitmap(sim, 32);
	case VNPU_REG_ERR_CODE:
		return sim->err_code;
	case VNPU_REG_ERR_QUEUE:
		return sim->err_queue;
	case VNPU_REG_ERR_VALUE:
		return sim->err_value;
	case VNPU_REG_TEST_INJECT:
		return 0;
	default:
		bad_register(sim, offset, false, "no such register");
		return 0;
	}
}

/* Only the IRQ bits that exist: events and one per configured queue. */
static uint32_t irq_bits(const struct vnpu_sim *sim)
{
	return VNPU_IRQ_EVENTS |
	       ((VNPU_IRQ_QUEUE(sim->cfg.num_queues) - 1) & ~VNPU_IRQ_EVENTS);
}

static unsigned irq_bit_vector(uint32_t bit_index)
{
	return bit_index == 0 ? VNPU_MSIX_VECTOR_EVENTS
			      : VNPU_MSIX_VECTOR_QUEUE(bit_index - 1);
}

static void irq_mask_write_locked(struct vnpu_sim *sim, uint32_t value)
{
	uint32_t unmasked = sim->irq_mask & ~value;

	sim->irq_mask = value & irq_bits(sim);
	/* A pending status bit that becomes unmasked signals now. */
	for (uint32_t i = 0; i < 32; i++) {
		uint32_t bit = 1u << i;

		if ((unmasked & bit) && (sim->irq_status & bit))
			sim_raise_irq_locked(sim, bit, irq_bit_vector(i));
	}
}

static void test_inject_write_locked(struct vnpu_sim *sim, uint32_t value)
{
	if (!sim->cfg.test_mode) {
		bad_register(sim, VNPU_REG_TEST_INJECT, true,
			     "TEST_INJECT without test mode");
		return;
	}
	switch (value) {
	case VNPU_INJECT_HANG:
		sim_hang_locked(sim);
		break;
	case VNPU_INJECT_FATAL:
		sim_fatal_locked(sim, VNPU_FATAL_INJECTED);
		break;
	case VNPU_INJECT_LOST_IRQ:
		sim->lost_irq = true;
		break;
	default:
		sim_log(sim, "vnpu: TEST_INJECT: unknown kind %u", value);
		sim_set_error_locked(sim, VNPU_ERR_BAD_REGISTER,
				     SIM_ERR_NO_QUEUE, VNPU_REG_TEST_INJECT, 0);
		break;
	}
}

static void ctrl_write_locked(struct vnpu_sim *sim, uint32_t value)
{
	if (value & ~(VNPU_CTRL_RESET | VNPU_CTRL_BOOT))
		sim_log(sim, "vnpu: CTRL: reserved bits 0x%x ignored",
			value & ~(VNPU_CTRL_RESET | VNPU_CTRL_BOOT));
	if (value & VNPU_CTRL_RESET)
		sim_hw_reset_locked(sim);
	if (!(value & VNPU_CTRL_BOOT))
		return;
	if (sim->ready) {
		sim_log(sim, "vnpu: CTRL.BOOT while the firmware runs");
		sim->boot_status = VNPU_BOOT_ERR_STATE;
		sim_raise_event_locked(sim, VNPU_EVENT_BOOT_DONE);
		return;
	}
	if (sim->boot_pending)
		return;
	sim->boot_pending = true;
	sim_wake_cp_locked(sim);
}

static void global_write_locked(struct vnpu_sim *sim, uint32_t offset,
				uint32_t value)
{
	switch (offset) {
	case VNPU_REG_CTRL:
		ctrl_write_locked(sim, value);
		break;
	case VNPU_REG_FW_ADDR_LO:
		sim->fw_addr_lo = value;
		break;
	case VNPU_REG_FW_ADDR_HI:
		sim->fw_addr_hi = value;
		break;
	case VNPU_REG_FW_SIZE:
		sim->fw_size = value;
		break;
	case VNPU_REG_IRQ_STATUS:
		sim->irq_status &= ~value;
		break;
	case VNPU_REG_IRQ_MASK:
		irq_mask_write_locked(sim, value);
		break;
	case VNPU_REG_EVENT_STATUS:
		sim->event_status &= ~value;
		break;
	case VNPU_REG_SCRATCH:
		sim->scratch = value;
		break;
	case VNPU_REG_TEST_INJECT:
		test_inject_write_locked(sim, value);
		break;
	default:
		bad_register(sim, offset, true,
			     "read-only or no such register");
		break;
	}
}

static uint32_t ctx_read_locked(struct vnpu_sim *sim, unsigned c, uint32_t reg)
{
	struct sim_ctx *ctx = &sim->ctx[c];

	switch (reg) {
	case VNPU_CTX_PT_BASE_LO:
		return (uint32_t)ctx->pt_base;
	case VNPU_CTX_PT_BASE_HI:
		return (uint32_t)(ctx->pt_base >> 32);
	case VNPU_CTX_CTRL:
		return ctx->enabled ? VNPU_CTX_CTRL_ENABLE : 0;
	case VNPU_CTX_FAULT_STATUS:
		return ctx->fault_status;
	case VNPU_CTX_FAULT_VA_LO:
		return (uint32_t)ctx->fault_va;
	case VNPU_CTX_FAULT_VA_HI:
		return (uint32_t)(ctx->fault_va >> 32);
	case VNPU_CTX_FAULT_COUNT:
		return ctx->fault_count;
	default:
		bad_register(sim, VNPU_CTX_REG(c, reg), false,
			     "no such context register");
		return 0;
	}
}

static void ctx_write_locked(struct vnpu_sim *sim, unsigned c, uint32_t reg,
			     uint32_t value)
{
	struct sim_ctx *ctx = &sim->ctx[c];

	switch (reg) {
	case VNPU_CTX_PT_BASE_LO:
		ctx->pt_base = (ctx->pt_base & ~0xffffffffull) | value;
		break;
	case VNPU_CTX_PT_BASE_HI:
		ctx->pt_base = (ctx->pt_base & 0xffffffffull) | (uint64_t)value
									<< 32;
		break;
	case VNPU_CTX_CTRL:
		/* Any change of ENABLE flushes the TLB (the command
		 * processor's cached `enabled` goes with it). */
		if (ctx->enabled != !!(value & VNPU_CTX_CTRL_ENABLE))
			sim_tlb_invalidate_locked(ctx);
		ctx->enabled = value & VNPU_CTX_CTRL_ENABLE;
		if (value & VNPU_CTX_CTRL_TLB_INVALIDATE)
			sim_tlb_invalidate_locked(ctx);
		break;
	case VNPU_CTX_FAULT_STATUS:
		if (value & VNPU_FAULT_PENDING) {
			ctx->fault_status = 0;
			/* The context may run again: wake fence waiters. */
			sim_wake_cp_locked(sim);
		}
		break;
	default:
		bad_register(sim, VNPU_CTX_REG(c, reg), true,
			     "read-only or no such context register");
		break;
	}
}

/* Decodes an offset into (area, index, register); false when invalid. */
enum reg_area { AREA_GLOBAL, AREA_CTX, AREA_QUEUE, AREA_DOORBELL };

static bool decode(struct vnpu_sim *sim, uint32_t offset, bool write,
		   enum reg_area *area, unsigned *index, uint32_t *reg)
{
	if (offset % 4 || offset >= VNPU_REGS_SIZE) {
		bad_register(sim, offset, write, "unaligned or outside BAR0");
		return false;
	}
	if (offset < VNPU_CTX_BASE) {
		*area = AREA_GLOBAL;
		*index = 0;
		*reg = offset;
		return true;
	}
	if (offset < VNPU_QUEUE_BASE) {
		uint32_t rel = offset - VNPU_CTX_BASE;

		*area = AREA_CTX;
		*index = rel / VNPU_CTX_STRIDE;
		*reg = rel % VNPU_CTX_STRIDE;
		if (*index >= sim->cfg.num_contexts) {
			bad_register(sim, offset, write,
				     "context beyond NUM_CONTEXTS");
			return false;
		}
		return true;
	}
	if (offset < VNPU_DOORBELL_BASE) {
		uint32_t rel = offset - VNPU_QUEUE_BASE;

		*area = AREA_QUEUE;
		*index = rel / VNPU_QUEUE_STRIDE;
		*reg = rel % VNPU_QUEUE_STRIDE;
		if (*index >= sim->cfg.num_queues) {
			bad_register(sim, offset, write,
				     "queue beyond CAPS.QUEUES");
			return false;
		}
		return true;
	}
	*area = AREA_DOORBELL;
	*index = (offset - VNPU_DOORBELL_BASE) / 4;
	*reg = 0;
	if (*index >= sim->cfg.num_queues) {
		bad_register(sim, offset, write, "doorbell beyond CAPS.QUEUES");
		return false;
	}
	return true;
}

uint32_t vnpu_sim_reg_read(struct vnpu_sim *sim, uint32_t offset)
{
	enum reg_area area;
	unsigned index;
	uint32_t reg, value = 0;

	sim_lock(sim);
	if (decode(sim, offset, false, &area, &index, &reg)) {
		switch (area) {
		case AREA_GLOBAL:
			value = global_read_locked(sim, reg);
			break;
		case AREA_CTX:
			value = ctx_read_locked(sim, index, reg);
			break;
		case AREA_QUEUE:
			value = sim_queue_read_locked(sim, index, reg);
			break;
		case AREA_DOORBELL:
			value = 0; /* write-only */
			break;
		}
	}
	sim_unlock(sim);
	return value;
}

void vnpu_sim_reg_write(struct vnpu_sim *sim, uint32_t offset, uint32_t value)
{
	enum reg_area area;
	unsigned index;
	uint32_t reg;

	sim_lock(sim);
	if (decode(sim, offset, true, &area, &index, &reg)) {
		switch (area) {
		case AREA_GLOBAL:
			global_write_locked(sim, reg, value);
			break;
		case AREA_CTX:
			ctx_write_locked(sim, index, reg, value);
			break;
		case AREA_QUEUE:
			sim_queue_write_locked(sim, index, reg, value);
			break;
		case AREA_DOORBELL:
			sim_doorbell_locked(sim, index, value);
			break;
		}
	}
	sim_unlock(sim);
}
