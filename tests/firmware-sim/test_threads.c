// SPDX-License-Identifier: MIT
/* Threaded mode: a scenario shared with deterministic mode, concurrent
 * doorbells from many threads, doorbells while the command processor polls
 * and after it slept, the TLB invalidated from another thread, fences
 * released by the host, and reset and destroy while long kernels run. */
#include <pthread.h>
#include <time.h>

#include "fwtest.h"

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Copy, fill, a fence between two queues and two launches; returns a
 * checksum of everything the device wrote. */
static uint64_t scenario(enum vnpu_sim_mode mode)
{
	struct vnpu_simhost *h = ft_ready(mode, true);
	const int64_t n = 4096;
	uint64_t va_a, va_b, va_o, va_f;
	float *a = vnpu_simhost_alloc_map(h, 0, false, n * 4, RW, &va_a);
	float *b = vnpu_simhost_alloc_map(h, 0, true, n * 4, RW, &va_b);
	float *o = vnpu_simhost_alloc_map(h, 0, true, n * 4, RW, &va_o);
	uint64_t bus = vnpu_simhost_host_alloc(h, 4096, 4096);
	struct vnpu_kargs_buffer kb[3];
	struct vnpu_kp_binary bin;
	struct vnpu_kp_fill fill;
	uint64_t sum = 1469598103934665603ull, seq, args;
	uint32_t args_size;

	vnpu_simhost_map(h, 0, 0x700000000ull, false, bus, 4096, RW);
	vnpu_simhost_map(h, 1, 0x700000000ull, false, bus, 4096, RW);
	va_f = 0x700000000ull;
	for (int64_t i = 0; i < n; i++)
		a[i] = (float)i * 0.25f;

	/* queue 1 (ctx 1) waits for the fence, then signals 2 */
	vnpu_simhost_submit(
		h, 1, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va_f, 1));
	seq = vnpu_simhost_submit(
		h, 1,
		vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va_f + 8, 2));
	/* queue 0: copy a -> b, fill o, o = b + 3 * o, signal 1 */
	vnpu_simhost_push(h, 0, vnpu_copy_cmd(va_a, va_b, n * 4));
	memset(&fill, 0, sizeof(fill));
	fill.out = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	fill.value = 1.5;
	kb[0] = ft_kbuf(va_o, n * 4, VNPU_ACCESS_WRITE);
	args = vnpu_simhost_write_args(h, 0, kb, 1, &fill, sizeof(fill),
				       &args_size);
	vnpu_simhost_push(
		h, 0,
		vnpu_launch_cmd(VNPU_KERNEL_FILL, 5, args, args_size));
	memset(&bin, 0, sizeof(bin));
	bin.op = VNPU_BINARY_ADD;
	bin.alpha = 3.0;
	bin.a = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	bin.b = ft_tensor(1, VNPU_DTYPE_F32, 1, &n);
	bin.out = ft_tensor(1, VNPU_DTYPE_F32, 1, &n);
	kb[0] = ft_kbuf(va_b, n * 4, VNPU_ACCESS_READ);
	kb[1] = ft_kbuf(va_o, n * 4, VNPU_ACCESS_READ | VNPU_ACCESS_WRITE);
	args = vnpu_simhost_write_args(h, 0, kb, 2, &bin, sizeof(bin),
				       &args_size);
	vnpu_simhost_push(h, 0,
			  vnpu_launch_cmd(VNPU_KERNEL_BINARY, 8, args,
						  args_size));
	vnpu_simhost_push(
		h, 0, vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va_f, 1));
	vnpu_simhost_ring(h, 0);
	ck_assert_int_eq(vnpu_simhost_wait(h, 0, 4, 10000), 0);
	ck_assert_int_eq(vnpu_simhost_wait(h, 1, seq, 10000), 0);
	for (uint64_t s = 1; s <= 4; s++)
		ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, s).status,
				  VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 1, seq).status, VNPU_STATUS_OK);
	for (int64_t i = 0; i < n; i++) {
		float want = (float)i * 0.25f + 3.0f * 1.5f;
		uint32_t bits;

		ck_assert_float_eq(b[i], a[i]);
		ck_assert_float_eq(o[i], want);
		memcpy(&bits, &o[i], 4);
		sum = (sum ^ bits) * 1099511628211ull;
	}
	ck_assert_uint_eq(((uint64_t *)vnpu_simhost_host_ptr(h, bus, 16))[1],
			  2);
	vnpu_simhost_destroy(h);
	return sum;
}

START_TEST(same_results_in_both_modes)
{
	ck_assert_uint_eq(scenario(VNPU_SIM_DETERMINISTIC),
			  scenario(VNPU_SIM_THREADS));
}
END_TEST

struct submitter {
	struct vnpu_simhost *h;
	unsigned q;
	uint64_t va;
	uint8_t *mem;
	int failures;
};

static void *submit_many(void *arg)
{
	struct submitter *s = arg;

	for (unsigned i = 0; i < 300; i++) {
		struct vnpu_cmd c = vnpu_fill_cmd(
			s->va + (i % 64) * 8, 8, (s->q << 16) | i, 4);
		uint64_t seq;

		if (i % 3 == 0)
			c.hdr.flags = VNPU_CMD_F_IRQ;
		seq = vnpu_simhost_push(s->h, s->q, c);
		/* bursts of up to 5 per doorbell */
		if (i % 5 == 4 || i == 299) {
			vnpu_simhost_ring(s->h, s->q);
			if (vnpu_simhost_wait(s->h, s->q, seq, 10000))
				s->failures++;
		}
	}
	return NULL;
}

START_TEST(concurrent_doorbells)
{
	struct vnpu_simhost *h = ft_ready_opts(VNPU_SIM_THREADS, true, _i);
	struct submitter s[4];
	pthread_t t[4];

	for (unsigned q = 0; q < 4; q++) {
		s[q].h = h;
		s[q].q = q;
		s[q].failures = 0;
		s[q].mem = vnpu_simhost_alloc_map(h, q % 2, q & 2, 4096, RW,
						  &s[q].va);
	}
	for (unsigned q = 0; q < 4; q++)
		pthread_create(&t[q], NULL, submit_many, &s[q]);
	/* Meanwhile another thread reads registers. */
	for (unsigned i = 0; i < 2000; i++)
		ck_assert_uint_eq(ft_rd(h, VNPU_REG_ID), VNPU_ID_VALUE);
	for (unsigned q = 0; q < 4; q++)
		pthread_join(t[q], NULL);
	for (unsigned q = 0; q < 4; q++) {
		uint32_t *w = (uint32_t *)s[q].mem;

		ck_assert_int_eq(s[q].failures, 0);
		ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_DONE_SEQ_LO), 300);
		ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_HEAD), 300 % 16);
		/* slot k was last written by i = 256 + k (k < 44) */
		for (unsigned k = 0; k < 64; k++) {
			unsigned i = k < 44 ? 256 + k : 192 + k;

			ck_assert_uint_eq(w[2 * k], (q << 16) | i);
		}
		ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1 + q), 100);
		for (uint64_t seq = 285; seq <= 300; seq++)
			ck_assert_uint_eq(vnpu_simhost_cpl(h, q, seq).status,
					  VNPU_STATUS_OK);
	}
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(fence_released_by_host)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_THREADS, true);
	uint64_t va, seq;
	uint64_t *f = vnpu_simhost_alloc_map(h, 0, false, 4096, RW, &va);

	seq = vnpu_simhost_submit(
		h, 0, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, 10));
	/* The CP thread reaches the wait when it gets the CPU: poll (a
	 * loaded machine may take a while), never assume a fixed delay. */
	for (int i = 0; i < 5000 && !(ft_qreg(h, 0, VNPU_Q_STATUS) &
				      VNPU_Q_STATUS_WAITING); i++)
		sleep_ms(1);
	ck_assert(ft_qreg(h, 0, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_DONE_SEQ_LO), 0);
	/* Other queues are not blocked. */
	ck_assert_uint_eq(ft_exec(h, 2, vnpu_nop_cmd(), NULL),
			  VNPU_STATUS_OK);
	__atomic_store_n(f, 10, __ATOMIC_SEQ_CST);
	ck_assert_int_eq(vnpu_simhost_wait(h, 0, seq, 5000), 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, seq).status, VNPU_STATUS_OK);
	vnpu_simhost_destroy(h);
}
END_TEST

/* Submits big GEMMs on queues 0 and 2 (the queues run at the same time:
 * each accumulates into an output of its own, o and o + m * n); returns
 * the outputs. */
static float *submit_long_gemms(struct vnpu_simhost *h, unsigned count,
				uint64_t *bytes)
{
	const int64_t m = 512, k = 512, n = 512;
	int64_t sa[2] = {m, k}, sb[2] = {k, n}, so[2] = {m, n};
	uint64_t va_a, va_b, va_o;
	float *a = vnpu_simhost_alloc_map(h, 0, true, m * k * 4, RW, &va_a);
	float *b = vnpu_simhost_alloc_map(h, 0, true, k * n * 4, RW, &va_b);
	float *o = vnpu_simhost_alloc_map(h, 0, true, 2 * m * n * 4, RW, &va_o);
	struct vnpu_kargs_buffer kb[3];
	struct vnpu_kp_gemm p;
	uint32_t args_size;
	uint64_t args[2];

	for (int64_t i = 0; i < m * k; i++)
		a[i] = b[i] = 1.0f / (float)(1 + i % 7);
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.beta = 1.0f; /* accumulate: every launch changes o */
	p.a = ft_tensor(0, VNPU_DTYPE_F32, 2, sa);
	p.b = ft_tensor(1, VNPU_DTYPE_F32, 2, sb);
	p.out = ft_tensor(2, VNPU_DTYPE_F32, 2, so);
	kb[0] = ft_kbuf(va_a, m * k * 4, VNPU_ACCESS_READ);
	kb[1] = ft_kbuf(va_b, k * n * 4, VNPU_ACCESS_READ);
	for (unsigned i = 0; i < 2; i++) {
		kb[2] = ft_kbuf(va_o + i * m * n * 4, m * n * 4,
				VNPU_ACCESS_READ | VNPU_ACCESS_WRITE);
		args[i] = vnpu_simhost_write_args(h, 0, kb, 3, &p, sizeof(p),
						  &args_size);
	}
	for (unsigned i = 0; i < count; i++)
		vnpu_simhost_push(h, i % 2 ? 2 : 0,
				  vnpu_launch_cmd(VNPU_KERNEL_GEMM, 64,
						  args[i % 2], args_size));
	*bytes = 2 * m * n * 4;
	return o;
}

START_TEST(reset_while_kernels_run)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_THREADS, true);
	uint64_t bytes;
	float *o = submit_long_gemms(h, 14, &bytes);
	float *snap = malloc(bytes);
	uint8_t cpl0[512], cpl2[512];

	vnpu_simhost_ring(h, 0);
	vnpu_simhost_ring(h, 2);
	/* 14 x 268 MFLOP: normally still running after 20 ms (not asserted:
	 * the test must hold whatever the machine's speed). */
	sleep_ms(20);
	ft_wr(h, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	/* Returned: the device is quiet; nothing is written any more. */
	ck_assert(vnpu_sim_idle(h->sim));
	memcpy(snap, o, bytes);
	memcpy(cpl0, vnpu_simhost_host_ptr(h, h->q[0].cpl_bus, 512), 512);
	memcpy(cpl2, vnpu_simhost_host_ptr(h, h->q[2].cpl_bus, 512), 512);
	sleep_ms(100);
	ck_assert_mem_eq(snap, o, bytes);
	ck_assert_mem_eq(cpl0, vnpu_simhost_host_ptr(h, h->q[0].cpl_bus, 512),
			 512);
	ck_assert_mem_eq(cpl2, vnpu_simhost_host_ptr(h, h->q[2].cpl_bus, 512),
			 512);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_DONE_SEQ_LO), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_RESET_COUNT), 1);
	/* Reboot and work again. */
	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL),
			  VNPU_STATUS_OK);
	free(snap);
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(destroy_while_kernels_run)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_THREADS, true);
	uint64_t bytes;

	submit_long_gemms(h, 10, &bytes);
	vnpu_simhost_ring(h, 0);
	vnpu_simhost_ring(h, 2);
	sleep_ms(10);
	vnpu_simhost_destroy(h); /* joins every thread */
}
END_TEST

static void sleep_us(unsigned us)
{
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};

	nanosleep(&ts, NULL);
}

/* The interrupt follows DONE_SEQ: give it up to a second to arrive. */
static unsigned irqs_reaching(struct vnpu_simhost *h, unsigned vector,
			      unsigned want)
{
	for (int i = 0; i < 20000 && vnpu_simhost_irq_count(h, vector) < want;
	     i++)
		sleep_us(50);
	return vnpu_simhost_irq_count(h, vector);
}

/*
 * After its queues run dry the command processor polls for doorbells for a
 * while, then sleeps: a doorbell is taken at any gap, commands written
 * without a doorbell never run, and every F_IRQ completion interrupts.
 */
START_TEST(doorbells_while_polling_and_asleep)
{
	static const unsigned gaps_us[] = {0, 5, 20, 45, 55, 80, 200, 2000};
	struct vnpu_simhost *h = ft_ready_opts(VNPU_SIM_THREADS, true, _i);
	uint64_t va, seq = 0;
	uint32_t *mem = vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va);
	unsigned irqs = vnpu_simhost_irq_count(h, 1);

	for (unsigned round = 0; round < 3; round++) {
		for (unsigned g = 0; g < sizeof(gaps_us) / sizeof(gaps_us[0]);
		     g++) {
			uint32_t value = round << 8 | g;
			struct vnpu_cmd c =
				vnpu_fill_cmd(va + 4 * g, 4, value, 4);

			c.hdr.flags = VNPU_CMD_F_IRQ;
			sleep_us(gaps_us[g]);
			seq = vnpu_simhost_submit(h, 0, c);
			ck_assert_int_eq(vnpu_simhost_wait(h, 0, seq, 10000),
					 0);
			ck_assert_uint_eq(mem[g], value);
			irqs++;
			ck_assert_uint_eq(irqs_reaching(h, 1, irqs), irqs);
		}
	}
	/* Written into the ring but not rung: polling must not run it. */
	vnpu_simhost_push(h, 0, vnpu_fill_cmd(va + 512, 4, 77, 4));
	sleep_us(20);
	sleep_ms(5);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_DONE_SEQ_LO), seq);
	ck_assert_uint_eq(mem[128], 0);
	vnpu_simhost_ring(h, 0);
	ck_assert_int_eq(vnpu_simhost_wait(h, 0, seq + 1, 10000), 0);
	ck_assert_uint_eq(mem[128], 77);
	vnpu_simhost_destroy(h);
}
END_TEST

/* The TLB is the command processor's own, invalidated from the register
 * thread: a remapped page is used stale until TLB_INVALIDATE, then the new
 * page; an unmapped one until the invalidation, then it faults; a context
 * disabled and enabled again forgets its translations. */
START_TEST(tlb_invalidation_threaded)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_THREADS, true);
	const uint64_t va = 0x600000000ull + 5 * 4096;
	uint64_t dst, p1 = vnpu_simhost_vram_alloc(h, 4096, 4096);
	uint64_t p2 = vnpu_simhost_vram_alloc(h, 4096, 4096);
	uint8_t *d = vnpu_simhost_alloc_map(h, 0, false, 4096, RW, &dst);
	struct vnpu_cpl cpl;

	memset(vnpu_simhost_vram_ptr(h, p1), 1, 4096);
	memset(vnpu_simhost_vram_ptr(h, p2), 2, 4096);
	vnpu_simhost_map(h, 0, va, true, p1, 4096, RO);
	ck_assert_uint_eq(
		ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
		VNPU_STATUS_OK);
	ck_assert_uint_eq(d[0], 1);
	vnpu_simhost_map(h, 0, va, true, p2, 4096, RO);
	ck_assert_uint_eq(
		ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
		VNPU_STATUS_OK);
	ck_assert_uint_eq(d[0], 1);
	vnpu_simhost_tlb_invalidate(h, 0);
	ck_assert_uint_eq(
		ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
		VNPU_STATUS_OK);
	ck_assert_uint_eq(d[0], 2);
	vnpu_simhost_unmap(h, 0, va, 4096);
	ck_assert_uint_eq(
		ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
		VNPU_STATUS_OK);
	vnpu_simhost_tlb_invalidate(h, 0);
	ck_assert_uint_eq(
		ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), &cpl),
		VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(cpl.info, va);
	ck_assert_uint_eq(VNPU_FAULT_REASON(ft_creg(h, 0,
						    VNPU_CTX_FAULT_STATUS)),
			  VNPU_FAULT_NOT_MAPPED);
	ft_wr(h, VNPU_CTX_REG(0, VNPU_CTX_FAULT_STATUS), VNPU_FAULT_PENDING);
	/* Cached again, then the context goes off and on: walked anew. */
	vnpu_simhost_map(h, 0, va, true, p1, 4096, RO);
	vnpu_simhost_tlb_invalidate(h, 0);
	ck_assert_uint_eq(
		ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
		VNPU_STATUS_OK);
	ck_assert_uint_eq(d[0], 1);
	vnpu_simhost_map(h, 0, va, true, p2, 4096, RO);
	ft_wr(h, VNPU_CTX_REG(0, VNPU_CTX_CTRL), 0);
	ft_wr(h, VNPU_CTX_REG(0, VNPU_CTX_CTRL), VNPU_CTX_CTRL_ENABLE);
	ck_assert_uint_eq(
		ft_exec(h, 0, vnpu_copy_cmd(va, dst, 8), NULL),
		VNPU_STATUS_OK);
	ck_assert_uint_eq(d[0], 2);
	vnpu_simhost_destroy(h);
}
END_TEST

/* A retirement's interrupt is delivered before a reset returns, never
 * after it (the reset resets at random points of a stream of F_IRQ
 * commands). */
START_TEST(no_interrupt_after_reset)
{
	for (unsigned round = 0; round < 20; round++) {
		struct vnpu_simhost *h =
			ft_ready_opts(VNPU_SIM_THREADS, true, _i);
		unsigned after;

		for (unsigned i = 0; i < 15; i++) {
			struct vnpu_cmd c = vnpu_nop_cmd();

			c.hdr.flags = VNPU_CMD_F_IRQ;
			vnpu_simhost_push(h, 0, c);
		}
		vnpu_simhost_ring(h, 0);
		sleep_us(round * 3);
		vnpu_sim_reset(h->sim);
		after = vnpu_simhost_irq_count(h, 1);
		sleep_ms(3);
		ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1), after);
		ck_assert_uint_le(after, 15);
		vnpu_simhost_destroy(h);
	}
}
END_TEST

/*
 * doorbell_runs_short: while the command processor sleeps, a doorbell runs
 * NOP, FENCE_SIGNAL and TIMESTAMP itself and raises their interrupts before
 * the write returns. The command processor may still be awake (polling, or
 * not yet scheduled on a loaded host): then it runs them, so the test needs
 * one round of 20 where the doorbell did.
 */
START_TEST(short_commands_run_in_the_doorbell)
{
	struct vnpu_simhost *h = ft_ready_opts(VNPU_SIM_THREADS, true, true);
	uint64_t va, seq = 0;
	uint64_t *mem = vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va);
	bool inline_round = false;

	for (unsigned round = 0; round < 20 && !inline_round; round++) {
		struct vnpu_cmd c[3] = {vnpu_nop_cmd(),
					vnpu_fence_signal_cmd(va, 100 + round),
					vnpu_timestamp_cmd(va + 8)};
		unsigned irqs = vnpu_simhost_irqs_in_reg_write(h);

		mem[1] = 0;
		sleep_ms(5); /* past the command processor's poll */
		for (unsigned i = 0; i < 3; i++) {
			c[i].hdr.flags = VNPU_CMD_F_IRQ;
			seq = vnpu_simhost_push(h, 0, c[i]);
		}
		vnpu_simhost_ring(h, 0);
		if (ft_qreg(h, 0, VNPU_Q_DONE_SEQ_LO) == (uint32_t)seq) {
			inline_round = true;
			ck_assert_uint_eq(vnpu_simhost_irqs_in_reg_write(h),
					  irqs + 3);
		}
		ck_assert_int_eq(vnpu_simhost_wait(h, 0, seq, 10000), 0);
		ck_assert_uint_eq(mem[0], 100 + round);
		ck_assert_uint_ne(mem[1], 0);
		for (uint64_t s = seq - 2; s <= seq; s++)
			ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, s).status,
					  VNPU_STATUS_OK);
	}
	ck_assert(inline_round);
	ck_assert_uint_eq(irqs_reaching(h, 1, (unsigned)seq), seq);
	vnpu_simhost_destroy(h);
}
END_TEST

/*
 * A doorbell runs short commands only: a FILL after a NOP goes to the
 * command processor, and so does what follows it; a long run of NOPs is
 * cut after SIM_DOORBELL_SHORT_MAX (at most that many interrupts inside
 * the write). Everything completes, in order.
 */
START_TEST(long_commands_go_to_the_command_processor)
{
	struct vnpu_simhost *h = ft_ready_opts(VNPU_SIM_THREADS, true, true);
	uint64_t va, seq;
	uint32_t *mem = vnpu_simhost_alloc_map(h, 1, true, 1 << 16, RW, &va);

	enum { SHORT_MAX = 8 }; /* SIM_DOORBELL_SHORT_MAX */
	struct vnpu_cmd irq_nop = vnpu_nop_cmd();

	irq_nop.hdr.flags = VNPU_CMD_F_IRQ;
	for (unsigned round = 0; round < 10; round++) {
		struct vnpu_cmd fill =
			vnpu_fill_cmd(va, 1 << 16, 0x5a00 + round, 4);
		unsigned irqs = vnpu_simhost_irqs_in_reg_write(h);

		fill.hdr.flags = VNPU_CMD_F_IRQ;
		sleep_ms(2);
		vnpu_simhost_push(h, 1, vnpu_nop_cmd());
		vnpu_simhost_push(h, 1, fill);
		seq = vnpu_simhost_push(h, 1, vnpu_nop_cmd());
		vnpu_simhost_ring(h, 1);
		ck_assert_int_eq(vnpu_simhost_wait(h, 1, seq, 10000), 0);
		/* the FILL's interrupt came from the command processor */
		ck_assert_uint_eq(vnpu_simhost_irqs_in_reg_write(h), irqs);
		for (unsigned i = 0; i < (1 << 14); i++)
			ck_assert_uint_eq(mem[i], 0x5a00 + round);
		/* 15 interrupting NOPs: the doorbell runs SHORT_MAX at most */
		sleep_ms(2);
		for (unsigned i = 0; i < 15; i++)
			seq = vnpu_simhost_push(h, 1, irq_nop);
		vnpu_simhost_ring(h, 1);
		ck_assert_uint_le(vnpu_simhost_irqs_in_reg_write(h) - irqs,
				  SHORT_MAX);
		ck_assert_int_eq(vnpu_simhost_wait(h, 1, seq, 10000), 0);
		for (uint64_t s = seq - 14; s <= seq; s++)
			ck_assert_uint_eq(vnpu_simhost_cpl(h, 1, s).status,
					  VNPU_STATUS_OK);
	}
	vnpu_simhost_destroy(h);
}
END_TEST

START_TEST(hang_in_threaded_mode)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_THREADS, true);
	uint32_t beat;
	uint64_t seq;

	vnpu_simhost_submit(h, 0,
			    vnpu_inject_cmd(VNPU_TEST_HANG, 0, 0));
	seq = vnpu_simhost_submit(h, 1, vnpu_nop_cmd());
	/* Once the CP has run the HANG the heartbeat stands still; a live
	 * one moves every 1 ms. Poll for that point (the CP may be slow to
	 * get the CPU), then check it holds. */
	beat = ft_rd(h, VNPU_REG_HEARTBEAT);
	for (int i = 0; i < 200; i++) {
		uint32_t next;

		sleep_ms(30);
		next = ft_rd(h, VNPU_REG_HEARTBEAT);
		if (next == beat)
			break;
		beat = next;
	}
	sleep_ms(30);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), beat);
	/* The NOP may have run before the hang; nothing runs after it. */
	vnpu_simhost_submit(h, 3, vnpu_nop_cmd());
	ck_assert_int_ne(vnpu_simhost_wait(h, 3, 1, 50), 0);
	(void)seq;
	vnpu_sim_reset(h->sim);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_HEARTBEAT), 0);
	vnpu_simhost_destroy(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware-sim-threads");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, same_results_in_both_modes);
	/* _i: doorbell_runs_short */
	tcase_add_loop_test(tc, concurrent_doorbells, 0, 2);
	tcase_add_loop_test(tc, doorbells_while_polling_and_asleep, 0, 2);
	tcase_add_test(tc, tlb_invalidation_threaded);
	tcase_add_loop_test(tc, no_interrupt_after_reset, 0, 2);
	tcase_add_test(tc, short_commands_run_in_the_doorbell);
	tcase_add_test(tc, long_commands_go_to_the_command_processor);
	tcase_add_test(tc, fence_released_by_host);
	tcase_add_test(tc, reset_while_kernels_run);
	tcase_add_test(tc, destroy_while_kernels_run);
	tcase_add_test(tc, hang_in_threaded_mode);
	suite_add_tcase(s, tc);
	return ft_run_suite(s);
}
