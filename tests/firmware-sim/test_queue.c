// SPDX-License-Identifier: MIT
/* Queues: configuration errors, doorbells, ring wrap-around, completion
 * slots and order, interrupts (vectors, masking, lost IRQ), disable, and
 * the fatal DMA errors of ring fetch and completion write. */
#include "fwtest.h"

static void program(struct vnpu_simhost *h, unsigned q, uint64_t ring,
		    uint64_t cpl, uint32_t log2, uint32_t ctx)
{
	ft_wr(h, VNPU_QUEUE_REG(q, VNPU_Q_RING_BASE_LO), (uint32_t)ring);
	ft_wr(h, VNPU_QUEUE_REG(q, VNPU_Q_RING_BASE_HI),
	      (uint32_t)(ring >> 32));
	ft_wr(h, VNPU_QUEUE_REG(q, VNPU_Q_CPL_BASE_LO), (uint32_t)cpl);
	ft_wr(h, VNPU_QUEUE_REG(q, VNPU_Q_CPL_BASE_HI), (uint32_t)(cpl >> 32));
	ft_wr(h, VNPU_QUEUE_REG(q, VNPU_Q_RING_LOG2), log2);
	ft_wr(h, VNPU_QUEUE_REG(q, VNPU_Q_CTX), ctx);
}

static struct vnpu_simhost *booted(void)
{
	struct vnpu_simhost *h = ft_host(VNPU_SIM_DETERMINISTIC, true);

	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 1, false), 0);
	return h;
}

static void expect_config_error(struct vnpu_simhost *h, uint64_t ring,
				uint64_t cpl, uint32_t log2, uint32_t ctx,
				uint32_t bad_reg)
{
	unsigned events = vnpu_simhost_irq_count(h, 0);

	ft_wr(h, VNPU_REG_EVENT_STATUS, 0xffffffff);
	program(h, 1, ring, cpl, log2, ctx);
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_STATUS),
			  VNPU_Q_STATUS_CONFIG_ERROR);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_CTRL), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS),
			  VNPU_EVENT_QUEUE_ERROR);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_QUEUE_CONFIG);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_QUEUE), 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_VALUE), bad_reg);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), events + 1);
}

START_TEST(config_errors)
{
	struct vnpu_simhost *h = booted();
	uint64_t ring = vnpu_simhost_host_alloc(h, 4096, 4096);
	uint64_t cpl = vnpu_simhost_host_alloc(h, 4096, 4096);

	expect_config_error(h, ring + 64, cpl, 4, 0, VNPU_Q_RING_BASE_LO);
	expect_config_error(h, ring, cpl + 0x800, 4, 0, VNPU_Q_CPL_BASE_LO);
	expect_config_error(h, ring, cpl, 1, 0, VNPU_Q_RING_LOG2);
	expect_config_error(h, ring, cpl, 13, 0, VNPU_Q_RING_LOG2);
	expect_config_error(h, ring, cpl, 0xffffffff, 0, VNPU_Q_RING_LOG2);
	expect_config_error(h, ring, cpl, 4, 2, VNPU_Q_CTX); /* disabled */
	expect_config_error(h, ring, cpl, 4, 4, VNPU_Q_CTX); /* >= count */
	expect_config_error(h, 0xfffffffffffff000ull, cpl, 12, 0,
			    VNPU_Q_RING_BASE_LO); /* ring wraps the bus */
	/* The fixed configuration enables and clears CONFIG_ERROR. */
	program(h, 1, ring, cpl, 4, 1);
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_STATUS), VNPU_Q_STATUS_ENABLED);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(config_write_while_enabled)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	uint32_t ring_lo = ft_qreg(h, 0, VNPU_Q_RING_BASE_LO);

	ft_wr(h, VNPU_REG_EVENT_STATUS, 0xffffffff);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_RING_BASE_LO), 0x7000);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_RING_LOG2), 6);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_RING_BASE_LO), ring_lo);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_RING_LOG2), 4);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS),
			  VNPU_EVENT_QUEUE_ERROR);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_BAD_REGISTER);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_QUEUE), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_VALUE),
			  VNPU_QUEUE_REG(0, VNPU_Q_RING_LOG2));
	/* The queue still works. */
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(doorbell_errors)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);

	ft_wr(h, VNPU_REG_EVENT_STATUS, 0xffffffff);
	ft_wr(h, VNPU_DOORBELL(1), 16); /* 16 entries: 0..15 */
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_TAIL), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_EVENT_STATUS),
			  VNPU_EVENT_DOORBELL_ERROR);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_DOORBELL_RANGE);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_QUEUE), 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_VALUE), 16);
	ft_wr(h, VNPU_DOORBELL(1), 0xffffffff);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_VALUE), 0xffffffff);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_HEAD), 0);
	/* 15 is in range: it is accepted. */
	ft_wr(h, VNPU_DOORBELL(1), 15);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_TAIL), 15);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(ring_wraps_around)
{
	struct vnpu_simhost *h = booted();
	uint64_t seq = 0;

	ck_assert_int_eq(vnpu_simhost_queue_init(h, 0, 0, 2, true), 0);
	/* 4 entries, up to 3 outstanding, 30 commands in bursts of 1..3. */
	for (unsigned round = 0; round < 15; round++) {
		unsigned burst = 1 + round % 3;
		uint64_t first = seq + 1;

		for (unsigned i = 0; i < burst; i++)
			seq = vnpu_simhost_push(h, 0, vnpu_nop_cmd());
		vnpu_simhost_ring(h, 0);
		ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), burst);
		ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_DONE_SEQ_LO), seq);
		ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_HEAD), seq % 4);
		ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_TAIL), seq % 4);
		for (uint64_t s = first; s <= seq; s++) {
			struct vnpu_cpl c = vnpu_simhost_cpl(h, 0, s);

			ck_assert_uint_eq(c.seqno, s);
			ck_assert_uint_eq(c.status, VNPU_STATUS_OK);
			ck_assert_uint_eq(c.opcode, VNPU_OP_NOP);
		}
	}
	ck_assert_uint_eq(seq, 30);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(run_budget_and_completion_fields)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	struct vnpu_cpl c;
	struct vnpu_cmd cmd = vnpu_nop_cmd();

	for (unsigned i = 0; i < 5; i++)
		vnpu_simhost_push(h, 2, cmd);
	vnpu_simhost_ring(h, 2);
	ck_assert(ft_rd(h, VNPU_REG_STATUS) & VNPU_STATUS_BUSY);
	ck_assert(!vnpu_sim_idle(h->sim));
	vnpu_simhost_advance(h, 777);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 2), 2);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_DONE_SEQ_LO), 2);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_DONE_SEQ_HI), 0);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 3);
	ck_assert(vnpu_sim_idle(h->sim));
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_READY);
	c = vnpu_simhost_cpl(h, 2, 5);
	ck_assert_uint_eq(c.seqno, 5);
	ck_assert_uint_eq(c.timestamp, vnpu_simhost_now(h));
	ck_assert_uint_eq(c.info, 0);
	ck_assert_uint_eq(c.reserved[0] | c.reserved[1] | c.reserved[2], 0);

	/* A large seqno is echoed in full. */
	h->q[2].next_seq = 0x123456789ab6ull; /* slot 5, as the ring's */
	ck_assert_uint_eq(ft_exec(h, 2, cmd, &c), VNPU_STATUS_OK);
	ck_assert_uint_eq(c.seqno, 0x123456789ab6ull);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_DONE_SEQ_HI), 0x1234);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_DONE_SEQ_LO), 0x56789ab6);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(queue_interrupts)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	struct vnpu_cmd nop = vnpu_nop_cmd();
	struct vnpu_cmd irq_nop = nop;
	struct vnpu_cmd bad = nop;

	irq_nop.hdr.flags = VNPU_CMD_F_IRQ;
	bad.hdr.opcode = 0x42;
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);
	vnpu_simhost_irq_clear_counts(h);

	/* Quiet success: nothing. */
	ck_assert_uint_eq(ft_exec(h, 2, nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), 0);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 0);
	/* F_IRQ: queue 2 -> bit 3, vector 3. */
	ck_assert_uint_eq(ft_exec(h, 2, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_QUEUE(2));
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 1);
	/* Failure interrupts without F_IRQ; each completion is an edge. */
	ck_assert_uint_eq(ft_exec(h, 2, bad, NULL), VNPU_STATUS_INVALID_OPCODE);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 2);
	ck_assert_uint_eq(VNPU_Q_STATUS_ERROR(ft_qreg(h, 2, VNPU_Q_STATUS)),
			  VNPU_STATUS_INVALID_OPCODE);
	ck_assert_uint_eq(ft_exec(h, 0, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1), 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS),
			  VNPU_IRQ_QUEUE(2) | VNPU_IRQ_QUEUE(0));
	ft_wr(h, VNPU_REG_IRQ_STATUS, VNPU_IRQ_QUEUE(2));
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_QUEUE(0));
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);

	/* Masked: status bit, no message; unmask sends it. */
	ft_wr(h, VNPU_REG_IRQ_MASK, VNPU_IRQ_QUEUE(3));
	ck_assert_uint_eq(ft_exec(h, 3, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_QUEUE(3));
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 4), 0);
	ck_assert(!vnpu_sim_irq_level(h->sim));
	ft_wr(h, VNPU_REG_IRQ_MASK, 0);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 4), 1);
	ck_assert(vnpu_sim_irq_level(h->sim));
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);

	/* Q_CTRL.IRQ_ENABLE off: neither status nor message. */
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	ck_assert_uint_eq(ft_exec(h, 1, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_exec(h, 1, bad, NULL), VNPU_STATUS_INVALID_OPCODE);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), 0);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 2), 0);
	vnpu_simhost_destroy(h);
}
END_TEST

/*
 * Q_CTRL.IRQ_COALESCE: while the queue's status bit is set its retirements
 * signal nothing more; the first one after a clear signals again, and a
 * lone one is never held back. Failures coalesce too. Other queues and
 * queues without the bit are not affected; reset clears it.
 */
START_TEST(queue_interrupts_coalesced)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	const uint32_t ctrl = VNPU_Q_CTRL_ENABLE | VNPU_Q_CTRL_IRQ_ENABLE |
			      VNPU_Q_CTRL_IRQ_COALESCE;
	struct vnpu_cmd irq_nop = vnpu_nop_cmd();
	struct vnpu_cmd bad = vnpu_nop_cmd();

	irq_nop.hdr.flags = VNPU_CMD_F_IRQ;
	bad.hdr.opcode = 0x42;
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_CTRL), ctrl);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_CTRL), ctrl);
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);
	vnpu_simhost_irq_clear_counts(h);

	ck_assert_uint_eq(ft_exec(h, 2, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 1); /* lone: at once */
	ck_assert_uint_eq(ft_exec(h, 2, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_exec(h, 2, bad, NULL), VNPU_STATUS_INVALID_OPCODE);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_QUEUE(2));
	/* queue 0 has no IRQ_COALESCE: an edge per completion */
	ck_assert_uint_eq(ft_exec(h, 0, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_exec(h, 0, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1), 2);
	/* cleared: the next retirement signals again */
	ft_wr(h, VNPU_REG_IRQ_STATUS, VNPU_IRQ_QUEUE(2));
	ck_assert_uint_eq(ft_exec(h, 2, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 2);
	ck_assert_uint_eq(ft_exec(h, 2, bad, NULL), VNPU_STATUS_INVALID_OPCODE);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 2);
	/* a lost signal leaves the bit set: only a clear brings the next */
	ft_wr(h, VNPU_REG_IRQ_STATUS, VNPU_IRQ_QUEUE(2));
	ft_wr(h, VNPU_REG_TEST_INJECT, VNPU_INJECT_LOST_IRQ);
	ck_assert_uint_eq(ft_exec(h, 2, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_exec(h, 2, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 2);
	ft_wr(h, VNPU_REG_IRQ_STATUS, VNPU_IRQ_QUEUE(2));
	ck_assert_uint_eq(ft_exec(h, 2, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 3), 3);
	vnpu_sim_reset(h->sim);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_CTRL), 0);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(lost_irq)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	struct vnpu_cmd irq_nop = vnpu_nop_cmd();
	struct vnpu_cmd inject = vnpu_inject_cmd(VNPU_TEST_LOST_IRQ, 0, 0);

	irq_nop.hdr.flags = VNPU_CMD_F_IRQ;
	vnpu_simhost_irq_clear_counts(h);
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);
	ft_wr(h, VNPU_REG_TEST_INJECT, VNPU_INJECT_LOST_IRQ);
	ck_assert_uint_eq(ft_exec(h, 0, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), VNPU_IRQ_QUEUE(0));
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1), 0); /* dropped */
	ck_assert_uint_eq(ft_exec(h, 0, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1), 1); /* only once */

	/* The command form: its own completion interrupt is the next one. */
	inject.hdr.flags = VNPU_CMD_F_IRQ;
	ck_assert_uint_eq(ft_exec(h, 0, inject, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1), 1);
	ck_assert_uint_eq(ft_exec(h, 0, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1), 2);
	/* Without F_IRQ the next interrupt (another queue's) is lost. */
	inject.hdr.flags = 0;
	ck_assert_uint_eq(ft_exec(h, 0, inject, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_exec(h, 1, irq_nop, NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 2), 0);
	ck_assert(ft_rd(h, VNPU_REG_IRQ_STATUS) & VNPU_IRQ_QUEUE(1));
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(disable_drops_commands)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	struct vnpu_cpl c;

	for (unsigned i = 0; i < 3; i++)
		vnpu_simhost_push(h, 1, vnpu_nop_cmd());
	vnpu_simhost_ring(h, 1);
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), 0);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_STATUS), 0);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_DONE_SEQ_LO), 0);
	c = vnpu_simhost_cpl(h, 1, 1);
	ck_assert_uint_eq(c.seqno, 0); /* never written */
	/* Disabled, config is writable again; enable restarts at 0. */
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_RING_LOG2), 3);
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_HEAD), 0);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_TAIL), 0);
	h->q[1].tail = 0;
	h->q[1].entries = 8;
	h->q[1].next_seq = 1;
	ck_assert_uint_eq(ft_exec(h, 1, vnpu_nop_cmd(), &c), VNPU_STATUS_OK);
	ck_assert_uint_eq(c.seqno, 1);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(ring_fetch_failure_is_fatal)
{
	struct vnpu_simhost *h = booted();
	uint64_t cpl = vnpu_simhost_host_alloc(h, 4096, 4096);
	unsigned events = vnpu_simhost_irq_count(h, 0);

	ck_assert_int_eq(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
	program(h, 1, vnpu_simhost_hole(h), cpl, 4, 0);
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	ft_wr(h, VNPU_DOORBELL(1), 1);
	vnpu_simhost_advance(h, 2500000);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), VNPU_STATUS_READY |
							     VNPU_STATUS_FATAL |
							     VNPU_STATUS_BUSY);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FATAL_CODE), VNPU_FATAL_RING_DMA);
	ck_assert(ft_rd(h, VNPU_REG_EVENT_STATUS) & VNPU_EVENT_FATAL);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 0), events + 1);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_HEAD), 0);
	/* Processing stopped everywhere; the heartbeat is frozen. */
	vnpu_simhost_submit(h, 0, vnpu_nop_cmd());
	vnpu_simhost_advance(h, 5000000);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_DONE_SEQ_LO), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 2);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(completion_write_failure_is_fatal)
{
	struct vnpu_simhost *h = booted();
	uint64_t ring = vnpu_simhost_host_alloc(h, 4096, 4096);
	struct vnpu_cmd nop = vnpu_nop_cmd();

	nop.hdr.seqno = 9;
	memcpy(vnpu_simhost_host_ptr(h, ring, 64), &nop, 64);
	program(h, 1, ring, vnpu_simhost_hole(h) + 0x1000, 4, 0);
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_CTRL),
	      VNPU_Q_CTRL_ENABLE | VNPU_Q_CTRL_IRQ_ENABLE);
	ft_wr(h, VNPU_DOORBELL(1), 1);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 100), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_FATAL_CODE), VNPU_FATAL_CPL_DMA);
	ck_assert(ft_rd(h, VNPU_REG_STATUS) & VNPU_STATUS_FATAL);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_DONE_SEQ_LO), 0);
	ck_assert(!(ft_rd(h, VNPU_REG_IRQ_STATUS) & VNPU_IRQ_QUEUE(1)));
	vnpu_simhost_destroy(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware-sim-queue");
	TCase *tc = tcase_create("queue");

	tcase_add_test(tc, config_errors);
	tcase_add_test(tc, config_write_while_enabled);
	tcase_add_test(tc, doorbell_errors);
	tcase_add_test(tc, ring_wraps_around);
	tcase_add_test(tc, run_budget_and_completion_fields);
	tcase_add_test(tc, queue_interrupts);
	tcase_add_test(tc, queue_interrupts_coalesced);
	tcase_add_test(tc, lost_irq);
	tcase_add_test(tc, disable_drops_commands);
	tcase_add_test(tc, ring_fetch_failure_is_fatal);
	tcase_add_test(tc, completion_write_failure_is_fatal);
	suite_add_tcase(s, tc);
	return ft_run_suite(s);
}
