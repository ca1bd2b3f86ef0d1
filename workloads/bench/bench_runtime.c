// SPDX-License-Identifier: MIT
/*
 * libvnpurt overheads over the sim backend, each against a host baseline
 * measured in the same run; every figure is a median of repeated
 * measurements (with the 10th and 90th percentiles where the spread says
 * something):
 *  - async launch of an empty kernel ("fill" of a 0-element tensor: the
 *    device validates it and runs nothing), batches of launches then one
 *    sync, amortized per launch, vs an empty call through a pthread mutex
 *    and vs a 64-byte memcpy;
 *  - synchronize round trips, each timed on its own: an empty launch +
 *    sync, a 4-byte memset + sync, against a condvar ping-pong between two
 *    threads (the best a round trip through a sleeping thread does: one
 *    condvar per direction, each thread signalled after the mutex is
 *    released so that it does not wake into a held lock). The three are
 *    measured in interleaved chunks so that they see the same machine:
 *    the ping-pong is 5-10 us when both threads share a CPU and 40-80 us
 *    when the woken one sleeps on an idle virtual CPU, so its median moves
 *    with the load of the rest of the machine;
 *  - 64 MiB copies, D2D and H2D / D2H pageable and pinned, against memcpy of
 *    the same size between page-aligned, already touched buffers (glibc's
 *    best path).
 *
 * Usage: bench-runtime [N [SECTIONS]]; SECTIONS is any of "launch", "sync",
 * "copy" joined by commas (default: all). "launch" alone with a fixed N is
 * what an instruction-counting profiler runs (valgrind --tool=callgrind):
 * the difference between two N divided by their difference is the cost of
 * one launch, device side included.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "vnpu_runtime.h"

#define CHECK(call)                                                        \
	do {                                                               \
		vnpu_error_t e_ = (call);                                  \
		if (e_) {                                                  \
			fprintf(stderr, "%s: %s\n", #call,                 \
				vnpu_last_error_detail());                 \
			exit(1);                                           \
		}                                                          \
	} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int sink;

__attribute__((noinline)) static void empty_locked_call(int i)
{
	pthread_mutex_lock(&lock);
	sink = i;
	pthread_mutex_unlock(&lock);
}

/* condvar ping-pong: turn 1 is pong's, 0 ping's, -1 tells pong to exit */
static pthread_cond_t ping_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pong_cv = PTHREAD_COND_INITIALIZER;
static int turn;

static void *pong(void *arg)
{
	pthread_mutex_lock(&lock);
	for (;;) {
		while (turn == 0)
			pthread_cond_wait(&pong_cv, &lock);
		if (turn < 0)
			break;
		turn = 0;
		pthread_mutex_unlock(&lock);
		pthread_cond_signal(&ping_cv);
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* One round of the ping-pong (us). */
static double pingpong_round(void)
{
	double t0 = now_s();

	pthread_mutex_lock(&lock);
	turn = 1;
	pthread_mutex_unlock(&lock);
	pthread_cond_signal(&pong_cv);
	pthread_mutex_lock(&lock);
	while (turn != 0)
		pthread_cond_wait(&ping_cv, &lock);
	pthread_mutex_unlock(&lock);
	return (now_s() - t0) * 1e6;
}

static double bw_gbs(size_t bytes, double s)
{
	return (double)bytes / s / 1e9;
}

/* Percentile q (0..1) of v[0..n), sorted in place. */
static double pct(double *v, int n, double q)
{
	int i;

	bench_median(v, n); /* sorts */
	i = (int)(q * (n - 1) + 0.5);
	return v[i];
}

static void report_rounds(const char *what, double *us, int n,
			  double baseline)
{
	double p10 = pct(us, n, 0.10), med = pct(us, n, 0.5);
	double p90 = pct(us, n, 0.90), slow = 0;

	for (int i = 0; i < n; i++)
		slow += us[i] > 2 * med;
	printf("  %-26s median %7.2f us (p10 %6.2f, p90 %6.2f; %4.1f%% of "
	       "rounds > 2x median)",
	       what, med, p10, p90, 100.0 * slow / n);
	if (baseline > 0)
		printf("  %.2fx", med / baseline);
	printf("\n");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	const char *sections = argc > 2 ? argv[2] : "launch,sync,copy";
	size_t bw_bytes = 64u << 20;
	struct vnpu_kp_fill p;
	struct vnpu_launch_buffer b;
	vnpu_stream_t s;
	void *d, *d2, *pin, *dst_pin;
	char *host, *host2;
	char src64[64], dst64[64];
	double *v;
	int batches = 21;

	if (n < batches)
		n = batches;
	v = calloc((size_t)n, sizeof(*v));
	if (!v)
		return 1;
	CHECK(vnpu_init());
	CHECK(vnpu_stream_create(&s, VNPU_STREAM_PRIORITY_LOW));
	CHECK(vnpu_malloc(&d, strstr(sections, "copy") ? bw_bytes : 4096));
	memset(&p, 0, sizeof(p));
	p.out.dtype = VNPU_DTYPE_F32;
	p.out.ndim = 1; /* sizes[0] = 0: nothing to fill */
	b.ptr = d;
	b.size = 4;
	b.access = VNPU_ACCESS_WRITE;

	/* warm-up */
	for (int i = 0; i < 1000; i++)
		CHECK(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), s));
	CHECK(vnpu_stream_synchronize(s));

	if (strstr(sections, "launch")) {
		int per = n / batches;
		double launch_us, lock_us, memcpy64_us;

		for (int k = 0; k < batches; k++) {
			double t = now_s();

			for (int i = 0; i < per; i++)
				CHECK(vnpu_launch_kernel("fill", 1, &b, 1, &p,
							 sizeof(p), s));
			CHECK(vnpu_stream_synchronize(s));
			v[k] = (now_s() - t) / per * 1e6;
		}
		launch_us = bench_median(v, batches);
		for (int k = 0; k < batches; k++) {
			double t = now_s();

			for (int i = 0; i < per; i++)
				empty_locked_call(i);
			v[k] = (now_s() - t) / per * 1e6;
		}
		lock_us = bench_median(v, batches);
		memset(src64, 1, sizeof(src64));
		for (int k = 0; k < batches; k++) {
			double t = now_s();

			for (int i = 0; i < per * 10; i++) {
				src64[0] = (char)i;
				memcpy(dst64, src64, sizeof(dst64));
				__asm__ volatile("" ::"r"(dst64) : "memory");
			}
			v[k] = (now_s() - t) / (per * 10) * 1e6;
		}
		memcpy64_us = bench_median(v, batches);
		printf("async launch of an empty kernel, median of %d batches of "
		       "%d launches + 1 sync:\n",
		       batches, per);
		printf("  %.3f us/launch; empty call through a mutex %.4f us "
		       "(ratio %.0fx); memcpy 64 B %.4f us (ratio %.0fx)\n",
		       launch_us, lock_us, launch_us / lock_us, memcpy64_us,
		       launch_us / memcpy64_us);
	}

	if (strstr(sections, "sync")) {
		/* interleaved: every figure over the same machine states */
		enum { CHUNKS = 20, WARMUP = 200 };
		int per = n / 10 / CHUNKS > 0 ? n / 10 / CHUNKS : 1;
		int rounds = per * CHUNKS, k = 0;
		double *vm = calloc((size_t)rounds, sizeof(*vm));
		double *vp = calloc((size_t)rounds, sizeof(*vp));
		double launch_med, pp_med;
		pthread_t t;

		if (!vm || !vp || rounds > n)
			return 1;
		turn = 0;
		pthread_create(&t, NULL, pong, NULL);
		for (int i = 0; i < WARMUP; i++)
			pingpong_round();
		for (int c = 0; c < CHUNKS; c++, k += per) {
			for (int i = k; i < k + per; i++) {
				double t0 = now_s();

				CHECK(vnpu_launch_kernel("fill", 1, &b, 1, &p,
							 sizeof(p), s));
				CHECK(vnpu_stream_synchronize(s));
				v[i] = (now_s() - t0) * 1e6;
			}
			for (int i = k; i < k + per; i++) {
				double t0 = now_s();

				CHECK(vnpu_memset_async(d, i, 4, s));
				CHECK(vnpu_stream_synchronize(s));
				vm[i] = (now_s() - t0) * 1e6;
			}
			for (int i = k; i < k + per; i++)
				vp[i] = pingpong_round();
		}
		pthread_mutex_lock(&lock);
		turn = -1;
		pthread_mutex_unlock(&lock);
		pthread_cond_signal(&pong_cv);
		pthread_join(t, NULL);
		printf("synchronize round trips, %d each in %d interleaved "
		       "chunks, timed one by one:\n",
		       rounds, CHUNKS);
		report_rounds("empty launch + sync", v, rounds, 0);
		launch_med = pct(v, rounds, 0.5);
		report_rounds("memset 4 B + sync", vm, rounds, launch_med);
		report_rounds("condvar ping-pong", vp, rounds, 0);
		pp_med = pct(vp, rounds, 0.5);
		printf("  (ratios: to the empty launch + sync median; launch + "
		       "sync / ping-pong %.2fx)\n",
		       launch_med / pp_med);
		free(vm);
		free(vp);
	}

	if (!strstr(sections, "copy"))
		goto out;
	host = bench_alloc(bw_bytes);
	host2 = bench_alloc(bw_bytes);
	memset(host, 3, bw_bytes);
	CHECK(vnpu_malloc(&d2, bw_bytes));
	CHECK(vnpu_host_malloc(&pin, bw_bytes));
	CHECK(vnpu_host_malloc(&dst_pin, bw_bytes));
	memset(pin, 4, bw_bytes);
	memset(dst_pin, 0, bw_bytes);
	{
		enum { REPS = 9 };
		double base, d2d, h2d, d2h, h2d_pin, d2h_pin;
		double r[REPS];

#define MEDIAN_GBS(out, stmt)                                              \
	do {                                                               \
		for (int i_ = 0; i_ < REPS; i_++) {                        \
			double t_ = now_s();                               \
			stmt;                                              \
			r[i_] = now_s() - t_;                              \
		}                                                          \
		out = bw_gbs(bw_bytes, bench_median(r, REPS));             \
	} while (0)
		CHECK(vnpu_memcpy(d, host, bw_bytes, VNPU_MEMCPY_H2D));
		MEDIAN_GBS(base, {
			memcpy(host2, host, bw_bytes);
			__asm__ volatile("" ::"r"(host2) : "memory");
		});
		MEDIAN_GBS(d2d, CHECK(vnpu_memcpy(d2, d, bw_bytes,
						  VNPU_MEMCPY_D2D)));
		MEDIAN_GBS(h2d, CHECK(vnpu_memcpy(d, host, bw_bytes,
						  VNPU_MEMCPY_H2D)));
		MEDIAN_GBS(d2h, CHECK(vnpu_memcpy(host2, d, bw_bytes,
						  VNPU_MEMCPY_D2H)));
		MEDIAN_GBS(h2d_pin, CHECK(vnpu_memcpy(d, pin, bw_bytes,
						      VNPU_MEMCPY_H2D)));
		MEDIAN_GBS(d2h_pin, CHECK(vnpu_memcpy(dst_pin, d, bw_bytes,
						      VNPU_MEMCPY_D2H)));
#undef MEDIAN_GBS
		if (memcmp(dst_pin, pin, bw_bytes))
			fprintf(stderr, "pinned round trip mismatch\n");
		printf("copies of %zu MiB, median of %d: memcpy %.2f GB/s "
		       "(glibc, page-aligned, touched)\n",
		       bw_bytes >> 20, REPS, base);
		printf("  D2D %.2f GB/s (%.2fx memcpy)\n", d2d, d2d / base);
		printf("  H2D pageable %.2f GB/s (%.2fx memcpy), pinned %.2f "
		       "GB/s (%.2fx)\n",
		       h2d, h2d / base, h2d_pin, h2d_pin / base);
		printf("  D2H pageable %.2f GB/s (%.2fx memcpy), pinned %.2f "
		       "GB/s (%.2fx)\n",
		       d2h, d2h / base, d2h_pin, d2h_pin / base);
	}
	CHECK(vnpu_host_free(pin));
	CHECK(vnpu_host_free(dst_pin));
	CHECK(vnpu_free(d2));
	free(host);
	free(host2);
out:
	free(v);
	CHECK(vnpu_free(d));
	CHECK(vnpu_stream_destroy(s));
	CHECK(vnpu_finalize());
	return 0;
}
