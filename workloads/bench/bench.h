/* SPDX-License-Identifier: MIT */
/*
 * What every benchmark needs: a monotonic clock and page-faulted, aligned
 * buffers (so first-touch costs stay out of the timings).
 */
#ifndef VNPU_BENCH_H
#define VNPU_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 64-byte aligned, every page touched; exits on failure. */
static inline void *bench_alloc(uint64_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);

	if (!p) {
		fprintf(stderr, "out of memory (%llu bytes)\n",
			(unsigned long long)bytes);
		exit(1);
	}
	memset(p, 1, bytes);
	return p;
}

#endif /* VNPU_BENCH_H */
