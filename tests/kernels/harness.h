/* SPDX-License-Identifier: MIT */
/*
 * Helpers for kernel tests: launch a kernel the way the device does
 * (validate, then every block, in a shuffled order so blocks that depend on
 * each other fail), build tensor descriptors, and draw reproducible random
 * numbers.
 */
#ifndef VNPU_TESTS_KERNEL_HARNESS_H
#define VNPU_TESTS_KERNEL_HARNESS_H

#include <stdint.h>

#include "kernel.h"

/* Validates, and when that passes runs blocks 0..nblocks-1. Returns the
 * validator's status. */
uint32_t kt_launch(uint32_t kernel_id, const void *params,
		   const struct vnpu_kbuf *bufs, uint32_t nbufs,
		   uint32_t nblocks);

/* A plain ND descriptor on `buffer`; strides NULL means row-major dense. */
struct vnpu_tensor kt_tensor(uint32_t buffer, uint32_t dtype, uint32_t ndim,
			     const int64_t *sizes, const int64_t *strides);

/* A descriptor for a packed internal format (strides zero). */
struct vnpu_tensor kt_tensor_fmt(uint32_t buffer, uint32_t dtype,
				 uint32_t format, uint32_t ndim,
				 const int64_t *sizes);

/* A read-write buffer of `size` bytes filled with 0xA5 (freed by kt_free). */
struct vnpu_kbuf kt_buffer(uint64_t size);
void kt_free(struct vnpu_kbuf *b);

/* xorshift64*: same sequence for the same seed. */
void kt_seed(uint64_t seed);
uint32_t kt_rand(void);
/* uniform in [lo, hi] */
int64_t kt_rand_range(int64_t lo, int64_t hi);
float kt_rand_float(float lo, float hi);

#endif /* VNPU_TESTS_KERNEL_HARNESS_H */
