/* SPDX-License-Identifier: MIT */
/*
 * What every benchmark needs: a monotonic clock, page-faulted, aligned
 * buffers (so first-touch costs stay out of the timings) and the median of
 * repeated timings (a best-of hides how the machine usually runs).
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

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1); sorts v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif /* VNPU_BENCH_H */
