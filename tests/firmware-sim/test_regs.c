// SPDX-License-Identifier: MIT
/* Register file semantics: identity, RO/RW/RW1C/WO, bad offsets, per-count
 * limits, timestamp latch, heartbeat, interrupts status and mask. */
#include <errno.h>

#include "fwtest.h"

START_TEST(identity)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	uint32_t caps = ft_rd(h, VNPU_REG_CAPS);

	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ID), 0x55504e56u);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HW_VERSION), 1u << 16 | 3);
	ck_assert_uint_eq(VNPU_CAPS_QUEUES(caps), 4);
	ck_assert_uint_eq(VNPU_CAPS_CORES(caps), 2);
	ck_assert_uint_eq(VNPU_CAPS_RING_LOG2_MAX(caps), 12);
	ck_assert(caps & VNPU_CAPS_TEST_MODE);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_NUM_CONTEXTS), 4);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_VRAM_SIZE_LO), 16u << 20);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_VRAM_SIZE_HI), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT_PERIOD_US), 1000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_BOOT_STATUS), VNPU_BOOT_OFF);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_VERSION), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_RESET_COUNT), 0);
	vnpu_simhost_destroy(h);

	h = ft_host(VNPU_SIM_DETERMINISTIC, false);
	ck_assert(!(ft_rd(h, VNPU_REG_CAPS) & VNPU_CAPS_TEST_MODE));
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(read_only_and_rw)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	unsigned logs = vnpu_simhost_log_count(h);

	ft_wr(h, VNPU_REG_ID, 0x1234);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ID), VNPU_ID_VALUE);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_BAD_REGISTER);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_VALUE), VNPU_REG_ID);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_QUEUE), 0xffffffffu);
	ck_assert_uint_gt(vnpu_simhost_log_count(h), logs);
	/* No event for a bad register write. */
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), 0);

	ft_wr(h, VNPU_REG_STATUS, 0xffffffff);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);
	ft_wr(h, VNPU_REG_HEARTBEAT, 7);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 0);

	ft_wr(h, VNPU_REG_SCRATCH, 0xdeadbeef);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_SCRATCH), 0xdeadbeef);
	ft_wr(h, VNPU_REG_FW_ADDR_LO, 0x1000);
	ft_wr(h, VNPU_REG_FW_ADDR_HI, 0x2);
	ft_wr(h, VNPU_REG_FW_SIZE, 77);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_ADDR_LO), 0x1000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_ADDR_HI), 0x2);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_SIZE), 77);
	/* CTRL and TEST_INJECT are write-only. */
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_CTRL), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_TEST_INJECT), 0);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(bad_offsets)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	unsigned logs = vnpu_simhost_log_count(h);
	const uint32_t bad[] = {
		0x001,
		0x062,
		0x084,
		0x0ffc,
		VNPU_REGS_SIZE,
		0xfffffffc,
		VNPU_CTX_REG(4, VNPU_CTX_PT_BASE_LO), /* ctx >= 4 */
		VNPU_CTX_REG(63, VNPU_CTX_FAULT_COUNT),
		VNPU_CTX_REG(0, 0x1c),		/* no such ctx reg */
		VNPU_QUEUE_REG(4, VNPU_Q_CTRL), /* queue >= 4 */
		VNPU_QUEUE_REG(0, 0x30),	/* no such queue reg */
		VNPU_DOORBELL(4),
		0x4000,
		0x8000,
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_uint_eq(ft_rd(h, bad[i]), 0);
		ft_wr(h, bad[i], 0xffffffff);
		ck_assert_uint_eq(ft_rd(h, bad[i]), 0);
	}
	ck_assert_uint_ge(vnpu_simhost_log_count(h) - logs,
			  3 * (sizeof(bad) / sizeof(bad[0])) - 4);
	/* Writes beyond the configured counts changed nothing visible. */
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_SCRATCH), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_BAD_REGISTER);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(context_registers)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);

	ft_wr(h, VNPU_CTX_REG(3, VNPU_CTX_PT_BASE_LO), 0x12345001);
	ft_wr(h, VNPU_CTX_REG(3, VNPU_CTX_PT_BASE_HI), 0xabc);
	ck_assert_uint_eq(ft_creg(h, 3, VNPU_CTX_PT_BASE_LO), 0x12345001);
	ck_assert_uint_eq(ft_creg(h, 3, VNPU_CTX_PT_BASE_HI), 0xabc);
	ft_wr(h, VNPU_CTX_REG(3, VNPU_CTX_CTRL),
	      VNPU_CTX_CTRL_ENABLE | VNPU_CTX_CTRL_TLB_INVALIDATE | 0xf0);
	/* TLB_INVALIDATE self-clears; reserved bits read 0. */
	ck_assert_uint_eq(ft_creg(h, 3, VNPU_CTX_CTRL), VNPU_CTX_CTRL_ENABLE);
	ck_assert_uint_eq(ft_creg(h, 2, VNPU_CTX_CTRL), 0);
	ft_wr(h, VNPU_CTX_REG(3, VNPU_CTX_FAULT_VA_LO), 5);
	ft_wr(h, VNPU_CTX_REG(3, VNPU_CTX_FAULT_COUNT), 5);
	ck_assert_uint_eq(ft_creg(h, 3, VNPU_CTX_FAULT_VA_LO), 0);
	ck_assert_uint_eq(ft_creg(h, 3, VNPU_CTX_FAULT_COUNT), 0);
	ft_wr(h, VNPU_CTX_REG(3, VNPU_CTX_FAULT_STATUS), 0xffffffff);
	ck_assert_uint_eq(ft_creg(h, 3, VNPU_CTX_FAULT_STATUS), 0);
	ft_wr(h, VNPU_CTX_REG(3, VNPU_CTX_CTRL), 0);
	ck_assert_uint_eq(ft_creg(h, 3, VNPU_CTX_CTRL), 0);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(queue_registers)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);

	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_RING_BASE_LO), 0x5000);
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_RING_BASE_HI), 0x1);
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_RING_LOG2), 7);
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_CTX), 3);
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_CPL_BASE_LO), 0x9000);
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_CPL_BASE_HI), 0x2);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_RING_BASE_LO), 0x5000);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_RING_BASE_HI), 1);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_RING_LOG2), 7);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_CTX), 3);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_CPL_BASE_LO), 0x9000);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_CPL_BASE_HI), 2);
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_HEAD), 3);
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_DONE_SEQ_LO), 3);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_HEAD), 0);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_DONE_SEQ_LO), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_DOORBELL(2)), 0);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(irq_status_mask_events)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);

	/* Nothing pending: RW1C of zero bits is a no-op. */
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), 0);
	/* Mask only holds bits that exist: events + 4 queues. */
	ft_wr(h, VNPU_REG_IRQ_MASK, 0xffffffff);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_MASK), 0x1f);
	ft_wr(h, VNPU_REG_IRQ_MASK, 0);

	/* A doorbell of a disabled queue raises an event. */
	ft_wr(h, VNPU_DOORBELL(1), 3);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS),
			  VNPU_EVENT_DOORBELL_ERROR);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_EVENTS);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE),
			  VNPU_ERR_DOORBELL_DISABLED);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_QUEUE), 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_VALUE), 3);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), 1);
	ck_assert(vnpu_sim_irq_level(h->sim));
	/* EVENT_STATUS and IRQ_STATUS.EVENTS clear independently. */
	ft_wr(h, VNPU_REG_EVENT_STATUS, VNPU_EVENT_DOORBELL_ERROR);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_EVENTS);
	ft_wr(h, VNPU_REG_IRQ_STATUS, VNPU_IRQ_QUEUE(0));
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_EVENTS);
	ft_wr(h, VNPU_REG_IRQ_STATUS, VNPU_IRQ_EVENTS);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), 0);
	ck_assert(!vnpu_sim_irq_level(h->sim));

	/* Masked: status set, no message, no level; unmask signals. */
	ft_wr(h, VNPU_REG_IRQ_MASK, VNPU_IRQ_EVENTS);
	ft_wr(h, VNPU_DOORBELL(2), 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_EVENTS);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), 1);
	ck_assert(!vnpu_sim_irq_level(h->sim));
	ft_wr(h, VNPU_REG_IRQ_MASK, 0);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), 2);
	ck_assert(vnpu_sim_irq_level(h->sim));
	/* Unmasking with nothing pending sends nothing. */
	ft_wr(h, VNPU_REG_IRQ_STATUS, VNPU_IRQ_EVENTS);
	ft_wr(h, VNPU_REG_IRQ_MASK, VNPU_IRQ_EVENTS);
	ft_wr(h, VNPU_REG_IRQ_MASK, 0);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), 2);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(timestamp_latch)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);
	uint32_t lo, hi;

	vnpu_simhost_advance(h, 0x3fffffff00ull);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_TIMESTAMP_HI), 0); /* not latched */
	lo = ft_rd(h, VNPU_REG_TIMESTAMP_LO);
	/* HI stays at the value latched by the LO read. */
	vnpu_simhost_advance(h, 0x100000000ull);
	hi = ft_rd(h, VNPU_REG_TIMESTAMP_HI);
	ck_assert_uint_eq((uint64_t)hi << 32 | lo, 0x3fffffff00ull + 1000);
	lo = ft_rd(h, VNPU_REG_TIMESTAMP_LO);
	hi = ft_rd(h, VNPU_REG_TIMESTAMP_HI);
	ck_assert_uint_eq((uint64_t)hi << 32 | lo, 0x40ffffff00ull + 1000);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(heartbeat)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);

	vnpu_simhost_advance(h, 5000000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 0); /* not booted */
	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 0);
	vnpu_simhost_advance(h, 999999);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 0);
	vnpu_simhost_advance(h, 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 1);
	vnpu_simhost_advance(h, 41500000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 42);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(test_inject_register_needs_test_mode)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, false);
	unsigned logs;

	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	logs = vnpu_simhost_log_count(h);
	ft_wr(h, VNPU_REG_TEST_INJECT, VNPU_INJECT_FATAL);
	ft_wr(h, VNPU_REG_TEST_INJECT, VNPU_INJECT_HANG);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_READY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FATAL_CODE), 0);
	ck_assert_uint_eq(vnpu_simhost_log_count(h), logs + 2);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_VALUE), VNPU_REG_TEST_INJECT);
	vnpu_simhost_advance(h, 3000000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 3); /* not hung */
	vnpu_simhost_destroy(h);
}
END_TEST

static int dummy_dma(void *o, uint64_t a, void *b, uint64_t l)
{
	return 0;
}

static int dummy_dma_w(void *o, uint64_t a, const void *b, uint64_t l)
{
	return 0;
}

static void dummy_irq(void *o, unsigned v)
{
}

static uint64_t dummy_clock(void *o)
{
	return 0;
}

START_TEST(create_rejects_bad_config)
{
	static uint8_t vram[1 << 20];
	struct vnpu_sim_hal hal = {.dma_read = dummy_dma,
				   .dma_write = dummy_dma_w,
				   .irq = dummy_irq,
				   .clock_ns = dummy_clock};
	struct vnpu_sim_config good = {.vram = vram,
				       .vram_size = sizeof(vram),
				       .num_queues = 2,
				       .num_contexts = 2,
				       .num_cores = 1,
				       .mode = VNPU_SIM_DETERMINISTIC};
	struct vnpu_sim_config c;
	struct vnpu_sim_hal bad_hal;
	struct vnpu_sim *sim;

	ck_assert_int_eq(vnpu_sim_create(&good, &hal, &sim), 0);
	vnpu_sim_destroy(sim);

	c = good;
	c.vram = NULL;
	ck_assert_int_eq(vnpu_sim_create(&c, &hal, &sim), -EINVAL);
	ck_assert_ptr_null(sim);
	c = good;
	c.vram_size = 4096;
	ck_assert_int_eq(vnpu_sim_create(&c, &hal, &sim), -EINVAL);
	c.vram_size = (1 << 20) + 1;
	ck_assert_int_eq(vnpu_sim_create(&c, &hal, &sim), -EINVAL);
	c = good;
	c.num_queues = 0;
	ck_assert_int_eq(vnpu_sim_create(&c, &hal, &sim), -EINVAL);
	c.num_queues = 17;
	ck_assert_int_eq(vnpu_sim_create(&c, &hal, &sim), -EINVAL);
	c = good;
	c.num_contexts = 65;
	ck_assert_int_eq(vnpu_sim_create(&c, &hal, &sim), -EINVAL);
	c = good;
	c.num_cores = 0;
	ck_assert_int_eq(vnpu_sim_create(&c, &hal, &sim), -EINVAL);
	c = good;
	c.mode = (enum vnpu_sim_mode)7;
	ck_assert_int_eq(vnpu_sim_create(&c, &hal, &sim), -EINVAL);
	bad_hal = hal;
	bad_hal.irq = NULL;
	ck_assert_int_eq(vnpu_sim_create(&good, &bad_hal, &sim), -EINVAL);
	ck_assert_int_eq(vnpu_sim_create(&good, NULL, &sim), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware-sim-regs");
	TCase *tc = tcase_create("regs");

	tcase_add_test(tc, identity);
	tcase_add_test(tc, read_only_and_rw);
	tcase_add_test(tc, bad_offsets);
	tcase_add_test(tc, context_registers);
	tcase_add_test(tc, queue_registers);
	tcase_add_test(tc, irq_status_mask_events);
	tcase_add_test(tc, timestamp_latch);
	tcase_add_test(tc, heartbeat);
	tcase_add_test(tc, test_inject_register_needs_test_mode);
	tcase_add_test(tc, create_rejects_bad_config);
	suite_add_tcase(s, tc);
	return ft_run_suite(s);
}
