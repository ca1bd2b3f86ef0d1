// SPDX-License-Identifier: MIT
/*
 * Isolation between queues, in both execution modes: a long command on one
 * queue (a kernel launch that would run for years, a 4 GiB copy) does not
 * stop the other queues from fetching and executing, a FENCE_WAIT is
 * re-evaluated meanwhile, the cores are shared between launches, and the
 * per-queue ABORT and reset stop any command within milliseconds. Timing is
 * never asserted beyond generous bounds (5 s where the contract says
 * 10 ms); the measured figures are printed.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "fwtest.h"

#define BOUND_MS 5000 /* what "promptly" is allowed to take on a busy host */

static const enum vnpu_sim_mode modes[2] = {VNPU_SIM_THREADS,
					    VNPU_SIM_DETERMINISTIC};

static const char *mode_name(enum vnpu_sim_mode m)
{
	return m == VNPU_SIM_THREADS ? "threads" : "deterministic";
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};

	nanosleep(&ts, NULL);
}

static bool threaded(struct vnpu_simhost *h)
{
	return h->cfg.mode == VNPU_SIM_THREADS;
}

/* A booted device as ft_ready, with more VRAM and host memory. */
static struct vnpu_simhost *big_host(enum vnpu_sim_mode mode)
{
	struct vnpu_simhost_config cfg;
	struct vnpu_simhost *h;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mode = mode;
	cfg.test_mode = true;
	cfg.real_clock = mode == VNPU_SIM_THREADS;
	cfg.quiet = true;
	cfg.host_mem_size = 64ull << 20;
	cfg.vram_size = 64ull << 20;
	ck_assert_int_eq(vnpu_simhost_create(&cfg, &h), 0);
	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 1, false), 0);
	for (unsigned q = 0; q < 4; q++)
		ck_assert_int_eq(vnpu_simhost_queue_init(h, q, q % 2, 4, true),
				 0);
	return h;
}

static uint64_t done_seq(struct vnpu_simhost *h, unsigned q)
{
	return (uint64_t)ft_qreg(h, q, VNPU_Q_DONE_SEQ_HI) << 32 |
	       ft_qreg(h, q, VNPU_Q_DONE_SEQ_LO);
}

/* Waits (threaded) or runs the device (deterministic) until the queue's
 * Q_STATUS.ENABLED reads 0; false after BOUND_MS. */
static bool wait_disabled(struct vnpu_simhost *h, unsigned q)
{
	uint64_t end = now_us() + BOUND_MS * 1000ull;

	do {
		if (!threaded(h))
			vnpu_sim_run(h->sim, UINT32_MAX);
		if (!(ft_qreg(h, q, VNPU_Q_STATUS) & VNPU_Q_STATUS_ENABLED))
			return true;
		sleep_us(20);
	} while (now_us() < end);
	return false;
}

/*
 * A GEMM that runs practically forever in `nblocks` blocks from a few
 * bytes of memory: A [M, K] and B [K, N] broadcast along K (stride 0),
 * K = 2^40. Out (VRAM, M x N f32) starts as all-ones bytes (NaN) and gets
 * finite values from the first reduction step on. Returns the command.
 */
struct huge {
	float *out;
	uint64_t out_bytes;
	struct vnpu_cmd cmd;
};

static struct huge huge_gemm(struct vnpu_simhost *h, unsigned ctx,
			     uint32_t nblocks)
{
	const int64_t m = 256, n = 256, k = 1ll << 40;
	uint64_t va_a, va_b, va_o;
	float *a = vnpu_simhost_alloc_map(h, ctx, true, m * 4, RW, &va_a);
	float *b = vnpu_simhost_alloc_map(h, ctx, true, n * 4, RW, &va_b);
	struct vnpu_kargs_buffer kb[3];
	struct vnpu_kp_gemm p;
	struct huge g;
	uint32_t args_size;
	uint64_t args;

	g.out_bytes = m * n * 4;
	g.out = vnpu_simhost_alloc_map(h, ctx, true, g.out_bytes, RW, &va_o);
	ck_assert_ptr_nonnull(g.out);
	for (int64_t i = 0; i < m; i++)
		a[i] = b[i] = 1.0f;
	memset(g.out, 0xff, g.out_bytes);
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.a = ft_tensor(0, VNPU_DTYPE_F32, 2, (int64_t[]){m, k});
	p.a.strides[0] = 1;
	p.a.strides[1] = 0;
	p.b = ft_tensor(1, VNPU_DTYPE_F32, 2, (int64_t[]){k, n});
	p.b.strides[0] = 0;
	p.b.strides[1] = 1;
	p.out = ft_tensor(2, VNPU_DTYPE_F32, 2, (int64_t[]){m, n});
	kb[0] = ft_kbuf(va_a, m * 4, VNPU_ACCESS_READ);
	kb[1] = ft_kbuf(va_b, n * 4, VNPU_ACCESS_READ);
	kb[2] = ft_kbuf(va_o, g.out_bytes, VNPU_ACCESS_WRITE);
	args = vnpu_simhost_write_args(h, ctx, kb, 3, &p, sizeof(p),
				       &args_size);
	g.cmd = vnpu_launch_cmd(VNPU_KERNEL_GEMM, nblocks, args, args_size);
	return g;
}

/* A host page mapped at the same VA in contexts 0 and 1 (fences). */
static uint64_t *shared_page(struct vnpu_simhost *h, uint64_t *va)
{
	uint64_t bus = vnpu_simhost_host_alloc(h, 4096, 4096);

	*va = 0x700000000ull;
	ck_assert_int_eq(vnpu_simhost_map(h, 0, *va, false, bus, 4096, RW), 0);
	ck_assert_int_eq(vnpu_simhost_map(h, 1, *va, false, bus, 4096, RW), 0);
	return vnpu_simhost_host_ptr(h, bus, 4096);
}

/* The interrupt follows the retirement: give it time to arrive. */
static unsigned irqs_reaching(struct vnpu_simhost *h, unsigned vector,
			      unsigned want)
{
	for (int i = 0;
	     i < BOUND_MS * 10 && vnpu_simhost_irq_count(h, vector) < want; i++)
		sleep_us(100);
	return vnpu_simhost_irq_count(h, vector);
}

/* Whether the kernel has written its output (it is executing). */
static bool huge_started(const struct huge *g)
{
	return __atomic_load_n((const uint32_t *)g->out, __ATOMIC_RELAXED) !=
	       0xffffffffu;
}

/* Deterministic mode: a thread that runs the device until it is idle. */
struct runner {
	struct vnpu_simhost *h;
	pthread_t thread;
	_Atomic uint64_t end_us;
};

static void *run_device(void *arg)
{
	struct runner *r = arg;

	vnpu_sim_run(r->h->sim, UINT32_MAX);
	atomic_store(&r->end_us, now_us());
	return NULL;
}

/* Starts the device on `huge` (queue q); threaded: just rings it;
 * deterministic: runs it on a thread (the block runs until stopped).
 * Returns once the kernel is writing its output. */
static void start_huge(struct vnpu_simhost *h, unsigned q, const struct huge *g,
		       struct runner *r)
{
	uint64_t end;

	vnpu_simhost_submit(h, q, g->cmd);
	r->h = h;
	atomic_store(&r->end_us, 0);
	if (!threaded(h))
		ck_assert_int_eq(
			pthread_create(&r->thread, NULL, run_device, r), 0);
	end = now_us() + BOUND_MS * 1000ull;
	while (!huge_started(g) && now_us() < end)
		sleep_us(50);
	ck_assert_msg(huge_started(g), "the kernel did not start");
}

static void finish_runner(struct vnpu_simhost *h, struct runner *r)
{
	if (!threaded(h))
		pthread_join(r->thread, NULL);
}

/* ---- (a) progress of the other queues -------------------------------- */

/* Threaded: while queue 0 runs a launch that never ends, queue 1 fetches
 * and executes every kind of command, and a FENCE_WAIT on queue 3 is
 * released by the host and then by queue 2. */
START_TEST(progress_beside_endless_kernel)
{
	struct vnpu_simhost *h = big_host(VNPU_SIM_THREADS);
	struct huge g = huge_gemm(h, 0, 1);
	struct runner r;
	uint64_t va_h, va_v, s_nop, s_fill, s_copy, s_launch, s_sig;
	uint8_t *hm = vnpu_simhost_alloc_map(h, 1, false, 8 << 20, RW, &va_h);
	uint8_t *vm = vnpu_simhost_alloc_map(h, 1, true, 8 << 20, RW, &va_v);
	uint64_t va_f, *fence = shared_page(h, &va_f);
	struct vnpu_kp_fill fill;
	struct vnpu_kargs_buffer kb;
	uint64_t t0, args, seq;
	uint32_t args_size;
	const int64_t n = 1 << 16;

	start_huge(h, 0, &g, &r);
	t0 = now_us();

	s_nop = vnpu_simhost_submit(h, 1, vnpu_nop_cmd());
	s_fill = vnpu_simhost_submit(
		h, 1, vnpu_fill_cmd(va_h, 8 << 20, 0x5a5a5a5a, 4));
	s_copy = vnpu_simhost_submit(h, 1, vnpu_copy_cmd(va_h, va_v, 8 << 20));
	memset(&fill, 0, sizeof(fill));
	fill.out = ft_tensor(0, VNPU_DTYPE_F32, 1, &n);
	fill.value = 2.5;
	kb = ft_kbuf(va_v, n * 4, VNPU_ACCESS_WRITE);
	args = vnpu_simhost_write_args(h, 1, &kb, 1, &fill, sizeof(fill),
				       &args_size);
	s_launch = vnpu_simhost_submit(
		h, 1, vnpu_launch_cmd(VNPU_KERNEL_FILL, 4, args, args_size));
	ck_assert_int_eq(vnpu_simhost_wait(h, 1, s_launch, BOUND_MS), 0);
	fprintf(stderr,
		"isolation: 4 commands (8 MiB fill, 8 MiB copy, launch) on "
		"queue 1 beside an endless kernel on queue 0: %.1f ms\n",
		(double)(now_us() - t0) / 1000.0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 1, s_nop).status, VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 1, s_fill).status,
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 1, s_copy).status,
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 1, s_launch).status,
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(hm[(8 << 20) - 1], 0x5a);
	ck_assert_uint_eq(vm[(8 << 20) - 1], 0x5a);
	ck_assert_float_eq(((float *)vm)[n - 1], 2.5f);

	/* A FENCE_WAIT on queue 3 is re-read while queue 0 computes. */
	seq = vnpu_simhost_submit(h, 3,
				  vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va_f, 1));
	for (int i = 0; i < BOUND_MS &&
			!(ft_qreg(h, 3, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING);
	     i++)
		sleep_us(1000);
	ck_assert(ft_qreg(h, 3, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING);
	t0 = now_us();
	__atomic_store_n(fence, 1, __ATOMIC_SEQ_CST);
	ck_assert_int_eq(vnpu_simhost_wait(h, 3, seq, BOUND_MS), 0);
	fprintf(stderr,
		"isolation: FENCE_WAIT released by the host after %.2f ms\n",
		(double)(now_us() - t0) / 1000.0);
	/* ... and by another queue's FENCE_SIGNAL */
	seq = vnpu_simhost_submit(h, 3,
				  vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va_f, 2));
	s_sig = vnpu_simhost_submit(
		h, 2, vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va_f, 2));
	ck_assert_int_eq(vnpu_simhost_wait(h, 3, seq, BOUND_MS), 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 3, seq).status, VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 2, s_sig).status, VNPU_STATUS_OK);

	ck_assert_uint_eq(done_seq(h, 0), 0);
	ck_assert(ft_rd(h, VNPU_REG_STATUS) & VNPU_STATUS_BUSY);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert(wait_disabled(h, 0));
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, 1).status,
			  VNPU_STATUS_ABORTED);
	finish_runner(h, &r);
	vnpu_simhost_destroy(h);
}
END_TEST

/* A 512^3 GEMM in 64 blocks on queue 0 and, after it, other commands. */
static uint64_t scenario_det(struct vnpu_simhost *h, uint64_t *sum)
{
	const int64_t m = 512;
	int64_t s2[2] = {m, m};
	uint64_t va_a, va_o, va_f, va_h, s_launch;
	float *a = vnpu_simhost_alloc_map(h, 0, true, m * m * 4, RW, &va_a);
	float *o = vnpu_simhost_alloc_map(h, 0, true, m * m * 4, RW, &va_o);
	uint8_t *hm = vnpu_simhost_alloc_map(h, 1, false, 4096, RW, &va_h);
	struct vnpu_kargs_buffer kb[2];
	struct vnpu_kp_gemm p;
	uint32_t args_size;
	uint64_t args;

	shared_page(h, &va_f);
	for (int64_t i = 0; i < m * m; i++)
		a[i] = (float)(i % 13) * 0.125f;
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.a = ft_tensor(0, VNPU_DTYPE_F32, 2, s2);
	p.b = ft_tensor(0, VNPU_DTYPE_F32, 2, s2);
	p.out = ft_tensor(1, VNPU_DTYPE_F32, 2, s2);
	kb[0] = ft_kbuf(va_a, m * m * 4, VNPU_ACCESS_READ);
	kb[1] = ft_kbuf(va_o, m * m * 4, VNPU_ACCESS_WRITE);
	args = vnpu_simhost_write_args(h, 0, kb, 2, &p, sizeof(p), &args_size);
	s_launch = vnpu_simhost_submit(
		h, 0, vnpu_launch_cmd(VNPU_KERNEL_GEMM, 64, args, args_size));
	vnpu_simhost_push(h, 1, vnpu_nop_cmd());
	vnpu_simhost_push(h, 1, vnpu_fill_cmd(va_h, 4096, 0x11223344, 4));
	vnpu_simhost_push(h, 1, vnpu_nop_cmd());
	vnpu_simhost_ring(h, 1);
	/* queue 3 waits for queue 2's signal (different contexts, same
	 * page) */
	vnpu_simhost_submit(h, 3, vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va_f, 7));
	vnpu_simhost_submit(h, 2,
			    vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va_f, 7));

	/* Five retirements: all of queues 1-3, none of queue 0, whose
	 * launch is part-done (blocks interleave with the others). */
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 5), 5);
	ck_assert_uint_eq(done_seq(h, 1), 3);
	ck_assert_uint_eq(done_seq(h, 2), 1);
	ck_assert_uint_eq(done_seq(h, 3), 1);
	ck_assert_uint_eq(done_seq(h, 0), 0);
	ck_assert(!vnpu_sim_idle(h->sim));
	ck_assert_uint_eq(((uint32_t *)hm)[1023], 0x11223344);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, UINT32_MAX), 1);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, s_launch).status,
			  VNPU_STATUS_OK);
	*sum = 1469598103934665603ull;
	for (int64_t i = 0; i < m * m; i++) {
		uint32_t bits;

		memcpy(&bits, &o[i], 4);
		*sum = (*sum ^ bits) * 1099511628211ull;
	}
	return s_launch;
}

/* Deterministic: the same interleaving, and the same results, for the
 * same sequence of calls. */
START_TEST(progress_deterministic)
{
	uint64_t sum1, sum2;
	struct vnpu_simhost *h = big_host(VNPU_SIM_DETERMINISTIC);

	scenario_det(h, &sum1);
	vnpu_simhost_destroy(h);
	h = big_host(VNPU_SIM_DETERMINISTIC);
	scenario_det(h, &sum2);
	vnpu_simhost_destroy(h);
	ck_assert_uint_eq(sum1, sum2);
}
END_TEST

/* Deterministic: a long copy proceeds by steps between other queues'
 * commands. */
START_TEST(copy_interleaves_deterministic)
{
	struct vnpu_simhost *h = big_host(VNPU_SIM_DETERMINISTIC);
	uint64_t va_s, va_d;
	uint8_t *s = vnpu_simhost_alloc_map(h, 0, true, 24 << 20, RW, &va_s);
	uint8_t *d = vnpu_simhost_alloc_map(h, 0, true, 24 << 20, RW, &va_d);

	memset(s, 0x77, 24 << 20);
	vnpu_simhost_submit(h, 0, vnpu_copy_cmd(va_s, va_d, 24 << 20));
	vnpu_simhost_submit(h, 1, vnpu_nop_cmd());
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 1), 1);
	ck_assert_uint_eq(done_seq(h, 1), 1);
	ck_assert_uint_eq(done_seq(h, 0), 0);
	/* the copy has started, in order, and is not over */
	ck_assert_uint_eq(d[0], 0x77);
	ck_assert_uint_eq(d[(24 << 20) - 1], 0);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, UINT32_MAX), 1);
	ck_assert_uint_eq(d[(24 << 20) - 1], 0x77);
	vnpu_simhost_destroy(h);
}
END_TEST

/* Threaded: the cores go round robin between the launches in flight: a
 * short launch submitted after a long one of 8 blocks finishes first. */
START_TEST(cores_shared_between_launches)
{
	struct vnpu_simhost *h = big_host(VNPU_SIM_THREADS);
	const int64_t m = 128, n = 64, k = 1 << 21;
	uint64_t va_a, va_o, va_o2, s_long, s_short, t0;
	float *a = vnpu_simhost_alloc_map(h, 0, true, 4096, RW, &va_a);
	struct vnpu_kargs_buffer kb[2];
	struct vnpu_kp_gemm p;
	struct vnpu_kp_fill fill;
	uint32_t args_size;
	uint64_t args;
	const int64_t nf = 1024;

	vnpu_simhost_alloc_map(h, 0, true, m * n * 4, RW, &va_o);
	vnpu_simhost_alloc_map(h, 1, true, nf * 4, RW, &va_o2);
	a[0] = 1.0f;
	/* each of 8 blocks: 16 x 64 x 2^21 multiply-adds */
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.a = ft_tensor(0, VNPU_DTYPE_F32, 2, (int64_t[]){m, k});
	p.a.strides[0] = p.a.strides[1] = 0;
	p.b = ft_tensor(0, VNPU_DTYPE_F32, 2, (int64_t[]){k, n});
	p.b.strides[0] = p.b.strides[1] = 0;
	p.out = ft_tensor(1, VNPU_DTYPE_F32, 2, (int64_t[]){m, n});
	kb[0] = ft_kbuf(va_a, 4, VNPU_ACCESS_READ);
	kb[1] = ft_kbuf(va_o, m * n * 4, VNPU_ACCESS_WRITE);
	args = vnpu_simhost_write_args(h, 0, kb, 2, &p, sizeof(p), &args_size);
	t0 = now_us();
	s_long = vnpu_simhost_submit(
		h, 0, vnpu_launch_cmd(VNPU_KERNEL_GEMM, 8, args, args_size));
	memset(&fill, 0, sizeof(fill));
	fill.out = ft_tensor(0, VNPU_DTYPE_F32, 1, &nf);
	fill.value = 1.0;
	kb[0] = ft_kbuf(va_o2, nf * 4, VNPU_ACCESS_WRITE);
	args = vnpu_simhost_write_args(h, 1, kb, 1, &fill, sizeof(fill),
				       &args_size);
	s_short = vnpu_simhost_submit(
		h, 1, vnpu_launch_cmd(VNPU_KERNEL_FILL, 2, args, args_size));
	ck_assert_int_eq(vnpu_simhost_wait(h, 1, s_short, 60000), 0);
	fprintf(stderr,
		"isolation: short launch done after %.1f ms, long launch %s\n",
		(double)(now_us() - t0) / 1000.0,
		done_seq(h, 0) ? "done (too fast a host to tell)"
			       : "still running");
	ck_assert_uint_eq(done_seq(h, 0), 0);
	ck_assert_int_eq(vnpu_simhost_wait(h, 0, s_long, 120000), 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, s_long).status,
			  VNPU_STATUS_OK);
	vnpu_simhost_destroy(h);
}
END_TEST

/* ---- (b') what a queue has used: Q_BUSY_US ----------------------------- */

#define BUSY_WINDOW_US 300000
/* What a block running now may not have been charged yet (a tick of the
 * coarse clock, up to 10 ms), at either end of a window, both cores. */
#define BUSY_LAG_US 40000

static uint64_t process_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Q_BUSY_US of q grown over BUSY_WINDOW_US of wall time, and the CPU time
 * the process (the device threads, mostly) ran meanwhile. */
static uint32_t busy_over_window(struct vnpu_simhost *h, unsigned q,
				 uint64_t *cpu_us)
{
	uint32_t b0 = ft_qreg(h, q, VNPU_Q_BUSY_US);
	uint64_t c0 = process_cpu_us();

	sleep_us(BUSY_WINDOW_US);
	*cpu_us = process_cpu_us() - c0;
	return ft_qreg(h, q, VNPU_Q_BUSY_US) - b0;
}

/* The queue's blocks were all the device ran over a window: its charge is
 * the CPU time they ran over the cores its launch uses alone (`width`:
 * its blocks, at most the 2 cores), counted while they run (none of them
 * ends in the window). */
static void expect_cpu_charge(uint32_t busy_us, uint64_t cpu_us,
			      unsigned width)
{
	ck_assert_uint_gt(busy_us, 0);
	ck_assert_uint_ge(width * (uint64_t)busy_us + BUSY_LAG_US,
			  cpu_us * 8 / 10);
	ck_assert_uint_le(width * (uint64_t)busy_us, cpu_us + BUSY_LAG_US);
}

/*
 * Threaded: a launch whose blocks hold both cores counts their CPU time
 * while they run (not only once a block ends); a launch waiting for a core
 * and a FENCE_WAIT count nothing; once the cores are free the waiting
 * launch counts too. A driver's time limit rests on this (hw-spec section
 * 4).
 */
START_TEST(busy_time)
{
	struct vnpu_simhost *h = big_host(VNPU_SIM_THREADS);
	struct huge hog = huge_gemm(h, 0, 2), starved = huge_gemm(h, 1, 1);
	uint32_t hog_us, starved_us, wait_us, fed_us;
	uint64_t va_gate, hog_cpu, fed_cpu;
	struct runner r;

	ck_assert_uint_eq(h->cfg.num_cores, 2);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_BUSY_US), 0);
	shared_page(h, &va_gate);
	start_huge(h, 0, &hog, &r);
	/* both blocks on the cores (block 1 writes the second half) */
	for (int i = 0; i < BOUND_MS * 10 &&
			__atomic_load_n((uint32_t *)hog.out + hog.out_bytes / 8,
					__ATOMIC_RELAXED) == 0xffffffffu;
	     i++)
		sleep_us(100);
	vnpu_simhost_submit(h, 1, starved.cmd);
	vnpu_simhost_submit(h, 3,
			    vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va_gate, 1));
	sleep_us(20000);
	hog_us = busy_over_window(h, 0, &hog_cpu);
	starved_us = ft_qreg(h, 1, VNPU_Q_BUSY_US);
	wait_us = ft_qreg(h, 3, VNPU_Q_BUSY_US);
	/* the hog's blocks stop: the starved launch gets a core */
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert(wait_disabled(h, 0));
	sleep_us(20000);
	fed_us = busy_over_window(h, 1, &fed_cpu);
	fprintf(stderr,
		"isolation: over %.0f ms, Q_BUSY_US grew %.1f ms for a launch "
		"on both cores (the process ran %.1f ms of CPU), %.1f ms for "
		"one waiting for a core (then %.1f ms with a core, of %.1f "
		"ms), %.1f ms for a FENCE_WAIT\n",
		BUSY_WINDOW_US / 1e3, hog_us / 1e3, hog_cpu / 1e3,
		starved_us / 1e3, fed_us / 1e3, fed_cpu / 1e3, wait_us / 1e3);
	expect_cpu_charge(hog_us, hog_cpu, 2);
	expect_cpu_charge(fed_us, fed_cpu, 1);
	ck_assert_uint_lt(starved_us, BUSY_WINDOW_US / 100);
	ck_assert_uint_lt(wait_us, BUSY_WINDOW_US / 100);
	ft_wr(h, VNPU_QUEUE_REG(1, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ft_wr(h, VNPU_QUEUE_REG(3, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert(wait_disabled(h, 1));
	ck_assert(wait_disabled(h, 3));
	finish_runner(h, &r);
	vnpu_sim_reset(h->sim);
	ck_assert_uint_eq(ft_qreg(h, 1, VNPU_Q_BUSY_US), 0);
	vnpu_simhost_destroy(h);
}
END_TEST

/*
 * A finite GEMM launch of `nblocks` equal blocks (16 rows each, 16 x 64 x k
 * multiply-adds) from a few bytes of memory (A and B one broadcast float);
 * out (VRAM) starts as all-ones bytes, so that the first row shows when a
 * block has run.
 */
static struct huge work_gemm(struct vnpu_simhost *h, unsigned ctx,
			     uint32_t nblocks, int64_t k)
{
	const int64_t m = 16 * (int64_t)nblocks, n = 64;
	uint64_t va_a, va_o, args;
	float *a = vnpu_simhost_alloc_map(h, ctx, true, 4096, RW, &va_a);
	struct vnpu_kargs_buffer kb[2];
	struct vnpu_kp_gemm p;
	struct huge g;
	uint32_t args_size;

	g.out_bytes = (uint64_t)(m * n * 4);
	g.out = vnpu_simhost_alloc_map(h, ctx, true, g.out_bytes, RW, &va_o);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(g.out);
	a[0] = 1.0f;
	memset(g.out, 0xff, g.out_bytes);
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.a = ft_tensor(0, VNPU_DTYPE_F32, 2, (int64_t[]){m, k});
	p.a.strides[0] = p.a.strides[1] = 0;
	p.b = ft_tensor(0, VNPU_DTYPE_F32, 2, (int64_t[]){k, n});
	p.b.strides[0] = p.b.strides[1] = 0;
	p.out = ft_tensor(1, VNPU_DTYPE_F32, 2, (int64_t[]){m, n});
	kb[0] = ft_kbuf(va_a, 4, VNPU_ACCESS_READ);
	kb[1] = ft_kbuf(va_o, g.out_bytes, VNPU_ACCESS_WRITE);
	args = vnpu_simhost_write_args(h, ctx, kb, 2, &p, sizeof(p),
				       &args_size);
	g.cmd = vnpu_launch_cmd(VNPU_KERNEL_GEMM, nblocks, args, args_size);
	return g;
}

/* The victim of the Q_BUSY_US tests: 8 blocks of 16 x 64 x 2^18 each. */
#define VICTIM_BLOCKS 8
#define VICTIM_K      (1ll << 18)
/* How far the charge for the same work may move with what else runs. */
#define CHARGE_TOLERANCE 1.5

struct charge {
	uint32_t busy_us; /* Q_BUSY_US growth over the launch */
	uint64_t wall_us; /* submission to completion */
};

/* Runs launch g on queue q to its end: what it was charged. */
static struct charge run_charged(struct vnpu_simhost *h, unsigned q,
				 const struct huge *g)
{
	uint32_t b0 = ft_qreg(h, q, VNPU_Q_BUSY_US);
	uint64_t t0 = now_us(), seq;
	struct charge c;

	memset(g->out, 0xff, g->out_bytes);
	seq = vnpu_simhost_submit(h, q, g->cmd);
	ck_assert_int_eq(vnpu_simhost_wait(h, q, seq, 120000), 0);
	c.wall_us = now_us() - t0;
	c.busy_us = ft_qreg(h, q, VNPU_Q_BUSY_US) - b0;
	ck_assert_uint_eq(vnpu_simhost_cpl(h, q, seq).status, VNPU_STATUS_OK);
	ck_assert_float_eq(g->out[g->out_bytes / 4 - 1], (float)VICTIM_K);
	return c;
}

/*
 * Puts the calling thread, and so the device threads it creates next, on
 * one host CPU: the device's cores then share it (and with whatever else is
 * put there), so how long a block stays on a core depends on what else
 * runs, on a loaded host as on an idle one, while the work it does does
 * not.
 */
static cpu_set_t pin_to_one_cpu(void)
{
	cpu_set_t set, old;
	int cpu = -1;

	ck_assert_int_eq(
		pthread_getaffinity_np(pthread_self(), sizeof(old), &old), 0);
	for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
		if (CPU_ISSET(c, &old))
			cpu = c;
	ck_assert_int_ge(cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
	return old;
}

/* Back to the CPUs of before pin_to_one_cpu (CK_FORK=no runs the next
 * tests in this process). */
static void unpin(const cpu_set_t *old)
{
	ck_assert_int_eq(
		pthread_setaffinity_np(pthread_self(), sizeof(*old), old), 0);
}

/*
 * `other` was charged about what the launch was charged alone, run just
 * before and just after (the CPU time the same work takes drifts a little
 * on a shared host).
 */
static void expect_same_charge(const char *what, struct charge before,
			       struct charge other, struct charge after)
{
	uint32_t lo =
		before.busy_us < after.busy_us ? before.busy_us : after.busy_us;
	uint32_t hi = before.busy_us ^ after.busy_us ^ lo;

	fprintf(stderr,
		"isolation: a launch of %u blocks charged %.1f ms of "
		"Q_BUSY_US in %.1f ms alone, %.1f ms in %.1f ms %s, %.1f ms "
		"in %.1f ms alone again\n",
		VICTIM_BLOCKS, before.busy_us / 1e3, before.wall_us / 1e3,
		other.busy_us / 1e3, other.wall_us / 1e3, what,
		after.busy_us / 1e3, after.wall_us / 1e3);
	ck_assert_uint_gt(lo, 0);
	ck_assert_msg(other.busy_us <= hi * CHARGE_TOLERANCE &&
			      other.busy_us * CHARGE_TOLERANCE >= lo,
		      "charged %u us %s against %u and %u us alone",
		      other.busy_us, what, before.busy_us, after.busy_us);
}

/*
 * Threaded: the same launch is charged the same device time whether it has
 * the cores to itself or shares them round robin with another queue's long
 * launch (its blocks then take turns with the other's, over about twice the
 * wall time): Q_BUSY_US counts what its blocks ran, not how long they were
 * on a core. On one host CPU, so that the sharing is the same on a loaded
 * host as on an idle one.
 */
START_TEST(busy_time_shared_cores)
{
	struct vnpu_simhost *h;
	struct huge victim, hog;
	struct charge alone, shared, again;
	cpu_set_t cpus = pin_to_one_cpu();
	uint64_t end;

	h = big_host(VNPU_SIM_THREADS);
	victim = work_gemm(h, 1, VICTIM_BLOCKS, VICTIM_K);
	/* blocks as long as the victim's, far more of them */
	hog = work_gemm(h, 0, 256, VICTIM_K);
	alone = run_charged(h, 1, &victim);
	vnpu_simhost_submit(h, 0, hog.cmd);
	end = now_us() + BOUND_MS * 1000ull;
	while (!huge_started(&hog) && now_us() < end)
		sleep_us(50);
	ck_assert(huge_started(&hog));
	shared = run_charged(h, 1, &victim);
	/* the hog ran all along: the cores were shared */
	ck_assert_uint_eq(done_seq(h, 0), 0);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert(wait_disabled(h, 0));
	again = run_charged(h, 1, &victim);
	expect_same_charge("beside another queue's launch", alone, shared,
			   again);
	vnpu_simhost_destroy(h);
	unpin(&cpus);
}
END_TEST

struct spinner {
	pthread_t thread;
	atomic_bool stop;
};

static void *spin(void *arg)
{
	struct spinner *s = arg;

	while (!atomic_load_explicit(&s->stop, memory_order_relaxed))
		;
	return NULL;
}

/*
 * Threaded: CPU time taken from the device threads by the host is not
 * device time. Every thread of the test (the device's are created after)
 * on one CPU; the same launch alone, then with host threads spinning on
 * that CPU: the wall time grows, the charge does not.
 */
START_TEST(busy_time_stolen_cpu)
{
	struct spinner spinners[3];
	struct vnpu_simhost *h;
	struct huge victim;
	struct charge alone, stolen, again;
	cpu_set_t cpus = pin_to_one_cpu();

	h = big_host(VNPU_SIM_THREADS);
	victim = work_gemm(h, 1, VICTIM_BLOCKS, VICTIM_K);
	alone = run_charged(h, 1, &victim);
	for (unsigned i = 0; i < 3; i++) {
		atomic_init(&spinners[i].stop, false);
		ck_assert_int_eq(pthread_create(&spinners[i].thread, NULL, spin,
						&spinners[i]),
				 0);
	}
	stolen = run_charged(h, 1, &victim);
	for (unsigned i = 0; i < 3; i++) {
		atomic_store(&spinners[i].stop, true);
		pthread_join(spinners[i].thread, NULL);
	}
	again = run_charged(h, 1, &victim);
	expect_same_charge("with 3 host threads spinning on its CPU", alone,
			   stolen, again);
	vnpu_simhost_destroy(h);
	unpin(&cpus);
}
END_TEST

/* ---- (c) ABORT -------------------------------------------------------- */

/* The queue's registers after an abort that retired `seq`. */
static void expect_aborted(struct vnpu_simhost *h, unsigned q, uint64_t seq,
			   uint8_t opcode, uint32_t slot_next)
{
	struct vnpu_cpl c = vnpu_simhost_cpl(h, q, seq);
	uint32_t st = ft_qreg(h, q, VNPU_Q_STATUS);

	ck_assert_uint_eq(c.seqno, seq);
	ck_assert_uint_eq(c.status, VNPU_STATUS_ABORTED);
	ck_assert_uint_eq(c.opcode, opcode);
	ck_assert_uint_eq(c.info, 0);
	ck_assert_uint_eq(done_seq(h, q), seq);
	ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_HEAD), slot_next);
	ck_assert_uint_eq(st & (VNPU_Q_STATUS_ENABLED | VNPU_Q_STATUS_ABORTED |
				VNPU_Q_STATUS_WAITING),
			  VNPU_Q_STATUS_ABORTED);
	ck_assert_uint_eq(VNPU_Q_STATUS_ERROR(st), VNPU_STATUS_ABORTED);
	ck_assert(ft_rd(h, VNPU_REG_IRQ_STATUS) & VNPU_IRQ_QUEUE(q));
	/* Q_CTRL: the queue is off; ABORT is write-only */
	ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_CTRL) &
				  (VNPU_Q_CTRL_ENABLE | VNPU_Q_CTRL_ABORT),
			  0);
}

/* The driver's re-programming sequence; the queue works again. */
static void reenable(struct vnpu_simhost *h, unsigned q)
{
	ft_wr(h, VNPU_QUEUE_REG(q, VNPU_Q_CTRL), 0);
	ck_assert_int_eq(vnpu_simhost_queue_init(h, q, q % 2, 4, true), 0);
	ck_assert_uint_eq(
		ft_qreg(h, q, VNPU_Q_STATUS) &
			(VNPU_Q_STATUS_ENABLED | VNPU_Q_STATUS_ABORTED),
		VNPU_Q_STATUS_ENABLED);
	ck_assert_uint_eq(ft_qreg(h, q, VNPU_Q_HEAD), 0);
	ck_assert_uint_eq(ft_exec(h, q, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
}

/* Nothing in flight: the queue is only disabled, with no record and no
 * interrupt; a disabled queue ignores ABORT; the bits written with ABORT
 * are ignored. */
START_TEST(abort_idle_queue)
{
	enum vnpu_sim_mode mode = modes[_i];
	struct vnpu_simhost *h = ft_ready(mode, true);
	uint8_t *cpl = vnpu_simhost_host_ptr(h, h->q[0].cpl_bus, 16 * 32);
	unsigned irqs;

	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	irqs = vnpu_simhost_irq_count(h, 1);
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);
	/* ENABLE and IRQ_ENABLE 0 in the same write: ignored */
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert(wait_disabled(h, 0));
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_STATUS), VNPU_Q_STATUS_ABORTED);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_CTRL), VNPU_Q_CTRL_IRQ_ENABLE);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_HEAD), 1);
	ck_assert_uint_eq(done_seq(h, 0), 1);
	for (unsigned i = 32; i < 16 * 32; i++)
		ck_assert_uint_eq(cpl[i], 0);
	ck_assert_uint_eq(vnpu_simhost_irq_count(h, 1), irqs);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), 0);
	/* a doorbell now is that of a disabled queue */
	ft_wr(h, VNPU_DOORBELL(0), 2);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE),
			  VNPU_ERR_DOORBELL_DISABLED);
	/* ABORT of a disabled queue: nothing changes */
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_CTRL), 0);
	ft_wr(h, VNPU_QUEUE_REG(2, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_STATUS), 0);
	reenable(h, 0);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_STATUS), VNPU_Q_STATUS_ENABLED);
	vnpu_simhost_destroy(h);
}
END_TEST

/* Deterministic: commands rung but none started when ABORT comes: the
 * queue is disabled with HEAD at the first of them; none ever runs. */
START_TEST(abort_before_start)
{
	struct vnpu_simhost *h = ft_ready(VNPU_SIM_DETERMINISTIC, true);
	uint64_t va;
	uint32_t *mem = vnpu_simhost_alloc_map(h, 0, false, 4096, RW, &va);

	vnpu_simhost_submit(h, 0, vnpu_fill_cmd(va, 4096, 0x42424242, 4));
	vnpu_simhost_submit(h, 0, vnpu_nop_cmd());
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_STATUS), VNPU_Q_STATUS_ABORTED);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, UINT32_MAX), 0);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_HEAD), 0);
	ck_assert_uint_eq(done_seq(h, 0), 0);
	ck_assert_uint_eq(mem[0], 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, 1).seqno, 0);
	vnpu_simhost_destroy(h);
}
END_TEST

/* A FENCE_WAIT in progress completes ABORTED; the commands after it are
 * neither executed nor completed; the other queues go on. */
START_TEST(abort_fence_wait)
{
	enum vnpu_sim_mode mode = modes[_i];
	struct vnpu_simhost *h = ft_ready(mode, true);
	uint64_t va, vb, seq, later;
	uint32_t *mem = vnpu_simhost_alloc_map(h, 0, false, 4096, RW, &va);
	unsigned irqs = vnpu_simhost_irq_count(h, 1);

	vnpu_simhost_alloc_map(h, 0, false, 4096, RW, &vb);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	seq = vnpu_simhost_submit(h, 0,
				  vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, vb, 1));
	vnpu_simhost_submit(h, 0, vnpu_fill_cmd(va, 4096, 0x42424242, 4));
	later = vnpu_simhost_submit(h, 0, vnpu_nop_cmd());
	if (!threaded(h))
		vnpu_sim_run(h->sim, UINT32_MAX);
	for (int i = 0; i < BOUND_MS &&
			!(ft_qreg(h, 0, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING);
	     i++)
		sleep_us(1000);
	ck_assert(ft_qreg(h, 0, VNPU_Q_STATUS) & VNPU_Q_STATUS_WAITING);
	ck_assert_uint_eq(ft_exec(h, 2, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert(wait_disabled(h, 0));
	expect_aborted(h, 0, seq, VNPU_OP_FENCE_WAIT, 2);
	ck_assert_uint_eq(irqs_reaching(h, 1, irqs + 1), irqs + 1);
	ck_assert_uint_eq(mem[0], 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, later).seqno, 0);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, seq + 1).seqno, 0);
	/* the other queues were not affected */
	ck_assert_uint_eq(ft_exec(h, 1, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(ft_qreg(h, 2, VNPU_Q_STATUS), VNPU_Q_STATUS_ENABLED);
	reenable(h, 0);
	vnpu_simhost_destroy(h);
}
END_TEST

/* A single-block kernel that would run forever: ABORT stops it within
 * milliseconds (asserted: BOUND_MS), leaving its output partially written;
 * nothing is written after ENABLED reads 0. */
START_TEST(abort_endless_kernel)
{
	enum vnpu_sim_mode mode = modes[_i];
	struct vnpu_simhost *h = big_host(mode);
	struct huge g = huge_gemm(h, 0, 1);
	uint8_t *snap = malloc(g.out_bytes);
	uint64_t t0, t1;
	struct runner r;

	vnpu_simhost_push(h, 0, vnpu_nop_cmd());
	start_huge(h, 0, &g, &r);
	/* (deterministic: the run thread holds the device) */
	if (threaded(h))
		ck_assert_uint_eq(ft_exec(h, 1, vnpu_nop_cmd(), NULL),
				  VNPU_STATUS_OK);
	t0 = now_us();
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	if (threaded(h)) {
		while ((ft_qreg(h, 0, VNPU_Q_STATUS) & VNPU_Q_STATUS_ENABLED) &&
		       now_us() - t0 < BOUND_MS * 1000ull)
			sleep_us(10);
		t1 = now_us();
	} else {
		/* the run thread returns once the block has stopped */
		finish_runner(h, &r);
		t1 = atomic_load(&r.end_us);
	}
	fprintf(stderr,
		"isolation (%s): ABORT of an endless kernel took %.2f ms\n",
		mode_name(mode), (double)(t1 - t0) / 1000.0);
	ck_assert_uint_lt(t1 - t0, BOUND_MS * 1000ull);
	ck_assert(wait_disabled(h, 0));
	/* seq 1 is the NOP pushed before (rung with the kernel) */
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, 1).status, VNPU_STATUS_OK);
	expect_aborted(h, 0, 2, VNPU_OP_KERNEL_LAUNCH, 2);
	/* partially written, and stopped */
	ck_assert(huge_started(&g));
	memcpy(snap, g.out, g.out_bytes);
	sleep_us(50000);
	ck_assert_mem_eq(snap, g.out, g.out_bytes);
	if (threaded(h))
		finish_runner(h, &r);
	reenable(h, 0);
	free(snap);
	vnpu_simhost_destroy(h);
}
END_TEST

/*
 * A 4 GiB copy through page-aliased mappings (every VA page of both ranges
 * maps the same VRAM page pair: slow, one page per chunk): ABORT stops it
 * mid-way.
 */
static void alias_map(struct vnpu_simhost *h, unsigned ctx, uint64_t va,
		      uint64_t vram_page)
{
	uint64_t leaf = vnpu_simhost_host_alloc(h, 4096, 4096);
	uint64_t *e = vnpu_simhost_host_ptr(h, leaf, 4096);

	for (unsigned i = 0; i < 512; i++)
		e[i] = vram_page | VNPU_PTE_VALID | VNPU_PTE_VRAM |
		       VNPU_PTE_READ | VNPU_PTE_WRITE;
	/* 2048 second-level entries of 2 MiB: 4 GiB */
	for (uint64_t off = 0; off < (4ull << 30); off += 2ull << 20)
		ck_assert_int_eq(vnpu_simhost_set_pte(h, ctx, va + off, 1,
						      leaf | VNPU_PTE_VALID),
				 0);
}

START_TEST(abort_long_copy)
{
	enum vnpu_sim_mode mode = modes[_i];
	struct vnpu_simhost *h = big_host(mode);
	const uint64_t src = 0x1000000000ull, dst = 0x2000000000ull;
	uint64_t ps = vnpu_simhost_vram_alloc(h, 4096, 4096);
	uint64_t pd = vnpu_simhost_vram_alloc(h, 4096, 4096);
	uint8_t *s = vnpu_simhost_vram_ptr(h, ps),
		*d = vnpu_simhost_vram_ptr(h, pd);
	uint64_t seq, t0, t1;

	alias_map(h, 0, src, ps);
	alias_map(h, 0, dst, pd);
	memset(s, 0x3c, 4096);
	seq = vnpu_simhost_submit(h, 0, vnpu_copy_cmd(src, dst, 4ull << 30));
	if (threaded(h)) {
		for (int i = 0; i < BOUND_MS && d[4095] != 0x3c; i++)
			sleep_us(1000);
	} else {
		/* queue 1's NOP retires after the copy's first step */
		vnpu_simhost_submit(h, 1, vnpu_nop_cmd());
		ck_assert_uint_eq(vnpu_sim_run(h->sim, 1), 1);
		ck_assert_uint_eq(done_seq(h, 1), 1);
	}
	ck_assert_uint_eq(d[4095], 0x3c);
	ck_assert_uint_eq(done_seq(h, 0), 0);
	t0 = now_us();
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert(wait_disabled(h, 0));
	t1 = now_us();
	fprintf(stderr, "isolation (%s): ABORT of a 4 GiB copy took %.2f ms\n",
		mode_name(mode), (double)(t1 - t0) / 1000.0);
	expect_aborted(h, 0, seq, VNPU_OP_DMA_COPY, 1);
	reenable(h, 0);
	vnpu_simhost_destroy(h);
}
END_TEST

/* While an abort is in progress (deterministic: until the device runs),
 * Q_CTRL only takes IRQ_ENABLE and configuration writes are refused; the
 * abort still completes with its record. */
START_TEST(abort_in_progress)
{
	struct vnpu_simhost *h = big_host(VNPU_SIM_DETERMINISTIC);
	uint64_t va_s, va_d, seq;

	vnpu_simhost_alloc_map(h, 0, true, 16 << 20, RW, &va_s);
	vnpu_simhost_alloc_map(h, 0, true, 16 << 20, RW, &va_d);
	seq = vnpu_simhost_submit(h, 0, vnpu_copy_cmd(va_s, va_d, 16 << 20));
	vnpu_simhost_submit(h, 1, vnpu_nop_cmd());
	ck_assert_uint_eq(vnpu_sim_run(h->sim, 1), 1);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_STATUS),
			  VNPU_Q_STATUS_ENABLED | VNPU_Q_STATUS_ABORTED);
	ck_assert(ft_rd(h, VNPU_REG_STATUS) & VNPU_STATUS_BUSY);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), 0); /* disable: ignored */
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_RING_LOG2), 5);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE), VNPU_ERR_BAD_REGISTER);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_RING_LOG2), 4);
	ft_wr(h, VNPU_DOORBELL(0), 3);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_ERR_CODE),
			  VNPU_ERR_DOORBELL_DISABLED);
	/* IRQ_ENABLE is taken: off, the abort raises no interrupt */
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ENABLE);
	ft_wr(h, VNPU_REG_IRQ_STATUS, 0xffffffff);
	ck_assert_uint_eq(vnpu_sim_run(h->sim, UINT32_MAX), 1);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, seq).status,
			  VNPU_STATUS_ABORTED);
	ck_assert_uint_eq(
		ft_qreg(h, 0, VNPU_Q_STATUS) &
			(VNPU_Q_STATUS_ENABLED | VNPU_Q_STATUS_ABORTED),
		VNPU_Q_STATUS_ABORTED);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_IRQ_STATUS), 0);
	ck_assert_uint_eq(done_seq(h, 0), seq);
	reenable(h, 0);
	vnpu_simhost_destroy(h);
}
END_TEST

/* Disabling a queue stops its command in flight (no record); enabled
 * again the queue runs new commands. */
START_TEST(disable_stops_in_flight)
{
	enum vnpu_sim_mode mode = modes[_i];
	struct vnpu_simhost *h = big_host(mode);
	struct huge g = huge_gemm(h, 0, 1);
	struct runner r;

	start_huge(h, 0, &g, &r);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), 0);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_STATUS) & VNPU_Q_STATUS_ENABLED,
			  0);
	finish_runner(h, &r);
	ck_assert_int_eq(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, 1).status, VNPU_STATUS_OK);
	ck_assert_uint_eq(done_seq(h, 0), 1);
	vnpu_simhost_destroy(h);
}
END_TEST

/* ---- (b) reset ------------------------------------------------------- */

/* Reset during an endless kernel (and during an abort of it) returns
 * within milliseconds; nothing is written afterwards; the device works. */
START_TEST(reset_endless_kernel)
{
	enum vnpu_sim_mode mode = modes[_i];
	struct vnpu_simhost *h = big_host(mode);
	struct huge g = huge_gemm(h, 0, 2);
	uint8_t *snap = malloc(g.out_bytes);
	uint64_t t0, t1;
	struct runner r;

	start_huge(h, 0, &g, &r);
	t0 = now_us();
	ft_wr(h, VNPU_REG_CTRL, VNPU_CTRL_RESET);
	t1 = now_us();
	fprintf(stderr,
		"isolation (%s): CTRL.RESET during an endless kernel took "
		"%.2f ms\n",
		mode_name(mode), (double)(t1 - t0) / 1000.0);
	ck_assert_uint_lt(t1 - t0, BOUND_MS * 1000ull);
	finish_runner(h, &r);
	memcpy(snap, g.out, g.out_bytes);
	sleep_us(50000);
	ck_assert_mem_eq(snap, g.out, g.out_bytes);
	ck_assert_uint_eq(vnpu_simhost_cpl(h, 0, 1).seqno, 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_RESET_COUNT), 1);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_STATUS), 0);

	/* again, with an abort in progress when the reset comes */
	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
	g = huge_gemm(h, 0, 1);
	start_huge(h, 0, &g, &r);
	ft_wr(h, VNPU_QUEUE_REG(0, VNPU_Q_CTRL), VNPU_Q_CTRL_ABORT);
	vnpu_sim_reset(h->sim); /* FLR */
	finish_runner(h, &r);
	ck_assert_uint_eq(ft_qreg(h, 0, VNPU_Q_STATUS), 0);
	ck_assert_uint_eq(ft_rd(h, VNPU_REG_RESET_COUNT), 2);
	ck_assert_uint_eq(vnpu_simhost_boot(h), VNPU_BOOT_READY);
	ck_assert_int_eq(vnpu_simhost_ctx_init(h, 0, false), 0);
	ck_assert_int_eq(vnpu_simhost_queue_init(h, 0, 0, 4, true), 0);
	ck_assert_uint_eq(ft_exec(h, 0, vnpu_nop_cmd(), NULL), VNPU_STATUS_OK);
	free(snap);
	vnpu_simhost_destroy(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware-sim-isolation");
	TCase *tc = tcase_create("isolation");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, progress_beside_endless_kernel);
	tcase_add_test(tc, progress_deterministic);
	tcase_add_test(tc, copy_interleaves_deterministic);
	tcase_add_test(tc, cores_shared_between_launches);
	tcase_add_test(tc, busy_time);
	tcase_add_test(tc, busy_time_shared_cores);
	tcase_add_test(tc, busy_time_stolen_cpu);
	tcase_add_loop_test(tc, abort_idle_queue, 0, 2);
	tcase_add_test(tc, abort_before_start);
	tcase_add_loop_test(tc, abort_fence_wait, 0, 2);
	tcase_add_loop_test(tc, abort_endless_kernel, 0, 2);
	tcase_add_loop_test(tc, abort_long_copy, 0, 2);
	tcase_add_test(tc, abort_in_progress);
	tcase_add_loop_test(tc, disable_stops_in_flight, 0, 2);
	tcase_add_loop_test(tc, reset_endless_kernel, 0, 2);
	suite_add_tcase(s, tc);
	return ft_run_suite(s);
}
