// SPDX-License-Identifier: MIT
/* Reset (register and FLR), hang and fatal injection, heartbeat freezing. */
#include "fwtest.h"

static void expect_reset_state(struct vnpu_simhost *h, uint32_t resets)
{
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_RESET_COUNT), resets);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_BOOT_STATUS), VNPU_BOOT_OFF);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_VERSION), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FW_SIZE), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FATAL_CODE), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_MASK), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_SCRATCH), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FAULTED_CTX_LO), 0);
	for (unsigned c = 0; c < 4; c++) {
		ck_assert_uint_eq(ft_creg(h, c, VNPU_CTX_CTRL), 0);
		ck_assert_uint_eq(ft_creg(h, c, VNPU_CTX_PT_BASE_LO), 0);
		ck_assert_uint_eq(ft_creg(h, c, VNPU_CTX_FAULT_STATUS), 0);
		ck_assert_uint_eq(ft_creg(h, c, VNPU_CTX_FAULT_COUNT), 0);
	}
	for (unsigned q = 0; q < 4; q++) {
		ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_CTRL), 0);
		ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_STATUS), 0);
		ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_HEAD), 0);
		ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_TAIL), 0);
		ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_DONE_SEQ_LO), 0);
		ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_RING_LOG2), 0);
	}
}

static void reboot(struct vnpu_simhost *h)
{
	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
}

START_TEST(reset_drops_work_keeps_vram)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	uint64_t va, s[3];
	uint8_t *v = vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va);
	struct vnpu_cmd fill = vnpu_fill_cmd(va, 4096, 0x42, 1);

	memset(v, 0x17, 4096);
	/* A fault, an error and a mask, to be cleared. */
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_copy_cmd(0x1000, va, 8), NULL),
			  VNPU_STATUS_MMU_FAULT);
	ft_wr(h, VNPU_DOORBELL(0), 99);
	ft_wr(h, VNPU_REG_IRQ_MASK, 3);
	ft_wr(h, VNPU_REG_SCRATCH, 5);
	ft_clear_fault(h, 0);
	for (unsigned i = 0; i < 3; i++)
		s[i] = vnpu_simhost_submit(h, 2, fill);
	vnpu_simhost_advance(h, 3000000);
	ft_wr(h, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	expect_reset_state(h, 1);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_uint_eq(vnpu_simhost_cpl(h, 2, s[i]).seqno, 0);
	ck_assert_uint_eq(v[0], 0x17); /* VRAM kept, fills never ran */
	/* Without a new boot nothing can be enabled. */
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_ne(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_NOT_READY);

	vnpu_sim_reset(h->sim); /* FLR: same routine */
	expect_reset_state(h, 2);
	reboot(h);
	vnpu_simhost_map(h, 0, va, true,
			 (uint64_t)(v - (uint8_t *)vnpu_simhost_vram_ptr(h, 0)),
			 4096, RW);
	ck_assert_uint_eq(ft_exec(h, 0, fill, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(v[4095], 0x42);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(reset_and_boot_in_one_write)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	uint32_t lo = ft_rd(h, VNPU_REG_FW_ADDR_LO);

	/* FW_ADDR is cleared by the reset part: the boot then fails. */
	ft_wr(h, VNPU_REG_CTRL, VNPU_CTRL_RESET | VNPU_CTRL_BOOT);
	vnpu_sim_run(h->sim, 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_RESET_COUNT), 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_BOOT_STATUS), VNPU_BOOT_ERR_SIZE);
	ck_assert_uint_ne(lo, 0);
	vnpu_simhost_destroy(h);
}
END_TEST

static void check_hung(struct vnpu_simhost *h, uint32_t beat)
{
	uint64_t seq;

	vnpu_simhost_advance(h, 10000000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), beat);
	seq = vnpu_simhost_submit(h, 1, vnpu_nop_cmd());
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 1, seq).seqno, 0);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_DONE_SEQ_LO), 0);
	vnpu_simhost_advance(h, 10000000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), beat);
}

START_TEST(hang_command)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	uint64_t seq;

	vnpu_simhost_advance(h, 4200000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 4);
	seq = vnpu_simhost_submit(h, 0, vnpu_inject_cmd(VNPU_TEST_HANG, 0, 0));
	vnpu_simhost_submit(h, 0, vnpu_nop_cmd());
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	/* The hang command itself never completes. */
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, seq).seqno, 0);
	/* STATUS does not tell: still READY, not FATAL (work pending). */
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS),
			  VNPU_STATUS_READY | VNPU_STATUS_BUSY);
	ck_assert_uint_eq(
		ft_rd(h, VNPU_REG_EVENT_STATUS) & ~VNPU_EVENT_BOOT_DONE, 0);
	check_hung(h, 4);
	ck_assert(vnpu_sim_idle(h->sim));
	/* Only reset recovers. */
	vnpu_sim_reset(h->sim);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 0);
	reboot(h);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	vnpu_simhost_advance(h, 2000000);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 2);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(hang_register)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);

	vnpu_simhost_advance(h, 1500000);
	ft_wr(h, VNPU_REG_TEST_INJECT, VNPU_INJECT_HANG);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_READY);
	check_hung(h, 1);
	vnpu_simhost_destroy(h);
}
END_TEST

static void check_fatal(struct vnpu_simhost *h, uint32_t beat,
			unsigned events_before)
{
	ck_assert(ft_rd(h, VNPU_REG_STATUS) & VNPU_STATUS_FATAL);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FATAL_CODE), VNPU_FATAL_INJECTED);
	ck_assert(ft_rd(h, VNPU_REG_EVENT_STATUS) & VNPU_EVENT_FATAL);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), events_before + 1);
	check_hung(h, beat);
	/* A second fatal keeps the first code and raises nothing. */
	ft_wr(h, VNPU_REG_TEST_INJECT, VNPU_INJECT_FATAL);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), events_before + 1);
	vnpu_sim_reset(h->sim);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FATAL_CODE), 0);
}

START_TEST(fatal_command)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	unsigned events = vnpu_simhost_irq_count(h, 0);
	uint64_t seq;

	vnpu_simhost_advance(h, 3000000);
	seq = vnpu_simhost_submit(h, 0, vnpu_inject_cmd(VNPU_TEST_FATAL, 0, 0));
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, seq).seqno, 0);
	check_fatal(h, 3, events);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(fatal_register)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	unsigned events = vnpu_simhost_irq_count(h, 0);

	vnpu_simhost_advance(h, 7000000);
	ft_wr(h, VNPU_REG_TEST_INJECT, VNPU_INJECT_FATAL);
	check_fatal(h, 7, events);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(unknown_inject_register_value)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);

	ft_wr(h, VNPU_REG_TEST_INJECT, 0);
	ft_wr(h, VNPU_REG_TEST_INJECT, 4);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_READY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_BAD_REGISTER);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	vnpu_simhost_destroy(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware-sim-reset-hang");
	TCase *tc = tcase_create("reset-hang");

	tcase_add_test(tc, reset_drops_work_keeps_vram);
	tcase_add_test(tc, reset_and_boot_in_one_write);
	tcase_add_test(tc, hang_command);
	tcase_add_test(tc, hang_register);
	tcase_add_test(tc, fatal_command);
	tcase_add_test(tc, fatal_register);
	tcase_add_test(tc, unknown_inject_register_value);
	suite_add_tcase(s, tc);
	return ft_run_suite(s);
}
