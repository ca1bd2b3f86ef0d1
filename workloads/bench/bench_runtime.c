// SPDX-License-Identifier: MIT
/*
 * libvnpurt overheads over the sim backend, each against a host baseline
 * measured in the same run:
 *  - async launch of an empty kernel ("fill" of a 0-element tensor: the
 *    device validates it and runs nothing), N launches then one sync,
 *    amortized per launch, vs an empty call through a pthread mutex and vs
 *    a 64-byte memcpy;
 *  - synchronize round trip (one launch + sync) vs a condvar ping-pong
 *    between two threads;
 *  - H2D / D2H bandwidth, pageable and pinned, vs memcpy of the same size.
 *
 * Usage: bench-runtime [N [SECTIONS]]; SECTIONS is any of "launch", "sync",
 * "copy" joined by commas (default: all). "launch" alone with a fixed N is
 * what an instruction-counting profiler runs (valgrind --tool=callgrind):
 * the difference between two N divided by their difference is the cost of
 * one launch, device side included.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* condvar ping-pong */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn, rounds_left;

static void *pong(void *arg)
{
	pthread_mutex_lock(&lock);
	while (rounds_left > 0) {
		while (turn != 1 && rounds_left > 0)
			pthread_cond_wait(&cv, &lock);
		turn = 0;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static double pingpong_us(int n)
{
	pthread_t t;
	double t0;

	rounds_left = n;
	turn = 0;
	pthread_create(&t, NULL, pong, NULL);
	t0 = now_s();
	pthread_mutex_lock(&lock);
	for (int i = 0; i < n; i++) {
		turn = 1;
		pthread_cond_broadcast(&cv);
		while (turn != 0)
			pthread_cond_wait(&cv, &lock);
	}
	rounds_left = 0;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&lock);
	t0 = now_s() - t0;
	pthread_join(t, NULL);
	return t0 / n * 1e6;
}

static double bw_gbs(size_t bytes, double s)
{
	return (double)bytes / s / 1e9;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	const char *sections = argc > 2 ? argv[2] : "launch,sync,copy";
	size_t bw_bytes = 64u << 20;
	struct vnpu_kp_fill p;
	struct vnpu_launch_buffer b;
	vnpu_stream_t s;
	void *d, *pin, *dst_pin;
	char *host, *host2;
	char src64[64], dst64[64];
	double t, launch_us, lock_us, memcpy64_us, sync_us, pp_us;

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

	if (!strstr(sections, "launch"))
		goto sync;
	t = now_s();
	for (int i = 0; i < n; i++)
		CHECK(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), s));
	CHECK(vnpu_stream_synchronize(s));
	launch_us = (now_s() - t) / n * 1e6;

	t = now_s();
	for (int i = 0; i < n; i++)
		empty_locked_call(i);
	lock_us = (now_s() - t) / n * 1e6;
	memset(src64, 1, sizeof(src64));
	t = now_s();
	for (int i = 0; i < n * 10; i++) {
		src64[0] = (char)i;
		memcpy(dst64, src64, sizeof(dst64));
		__asm__ volatile("" ::"r"(dst64) : "memory");
	}
	memcpy64_us = (now_s() - t) / (n * 10) * 1e6;

	printf("async launch of an empty kernel, %d launches + 1 sync:\n", n);
	printf("  %.3f us/launch; empty call through a mutex %.4f us "
	       "(ratio %.0fx); memcpy 64 B %.4f us (ratio %.0fx)\n",
	       launch_us, lock_us, launch_us / lock_us, memcpy64_us,
	       launch_us / memcpy64_us);

sync:
	if (strstr(sections, "sync")) {
		int rounds = n / 10;

		t = now_s();
		for (int i = 0; i < rounds; i++) {
			CHECK(vnpu_launch_kernel("fill", 1, &b, 1, &p,
						 sizeof(p), s));
			CHECK(vnpu_stream_synchronize(s));
		}
		sync_us = (now_s() - t) / rounds * 1e6;
		pp_us = pingpong_us(rounds);
		printf("launch + synchronize round trip: %.2f us; condvar "
		       "ping-pong %.2f us (ratio %.1fx)\n",
		       sync_us, pp_us, sync_us / pp_us);
	}

	if (!strstr(sections, "copy"))
		goto out;
	host = malloc(bw_bytes);
	host2 = malloc(bw_bytes);
	memset(host, 3, bw_bytes);
	memset(host2, 0, bw_bytes);
	CHECK(vnpu_host_malloc(&pin, bw_bytes));
	CHECK(vnpu_host_malloc(&dst_pin, bw_bytes));
	memset(pin, 4, bw_bytes);
	memset(dst_pin, 0, bw_bytes);
	{
		double base, h2d, d2h, h2d_pin, d2h_pin;
		int reps = 5;

		CHECK(vnpu_memcpy(d, host, bw_bytes, VNPU_MEMCPY_H2D));
		t = now_s();
		for (int i = 0; i < reps; i++) {
			memcpy(host2, host, bw_bytes);
			__asm__ volatile("" ::"r"(host2) : "memory");
		}
		base = bw_gbs(bw_bytes * reps, now_s() - t);
		t = now_s();
		for (int i = 0; i < reps; i++)
			CHECK(vnpu_memcpy(d, host, bw_bytes, VNPU_MEMCPY_H2D));
		h2d = bw_gbs(bw_bytes * reps, now_s() - t);
		t = now_s();
		for (int i = 0; i < reps; i++)
			CHECK(vnpu_memcpy(host2, d, bw_bytes, VNPU_MEMCPY_D2H));
		d2h = bw_gbs(bw_bytes * reps, now_s() - t);
		t = now_s();
		for (int i = 0; i < reps; i++)
			CHECK(vnpu_memcpy(d, pin, bw_bytes, VNPU_MEMCPY_H2D));
		h2d_pin = bw_gbs(bw_bytes * reps, now_s() - t);
		t = now_s();
		for (int i = 0; i < reps; i++)
			CHECK(vnpu_memcpy(dst_pin, d, bw_bytes,
					  VNPU_MEMCPY_D2H));
		d2h_pin = bw_gbs(bw_bytes * reps, now_s() - t);
		if (memcmp(dst_pin, pin, bw_bytes))
			fprintf(stderr, "pinned round trip mismatch\n");
		printf("copies of %zu MiB: memcpy %.2f GB/s\n", bw_bytes >> 20,
		       base);
		printf("  H2D pageable %.2f GB/s (%.2fx memcpy), pinned %.2f "
		       "GB/s (%.2fx)\n",
		       h2d, h2d / base, h2d_pin, h2d_pin / base);
		printf("  D2H pageable %.2f GB/s (%.2fx memcpy), pinned %.2f "
		       "GB/s (%.2fx)\n",
		       d2h, d2h / base, d2h_pin, d2h_pin / base);
	}
	CHECK(vnpu_host_free(pin));
	CHECK(vnpu_host_free(dst_pin));
	free(host);
	free(host2);
out:
	CHECK(vnpu_free(d));
	CHECK(vnpu_stream_destroy(s));
	CHECK(vnpu_finalize());
	return 0;
}
