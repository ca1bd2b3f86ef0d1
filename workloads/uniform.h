/* SPDX-License-Identifier: MIT */
/*
 * The workloads' random numbers: xorshift64, so that every run (and every
 * machine) draws the same data, uniform in [lo, hi) with 53 random bits.
 */
#ifndef VNPU_WORKLOADS_UNIFORM_H
#define VNPU_WORKLOADS_UNIFORM_H

#include <stdint.h>

static inline double wl_uniform(uint64_t *state, double lo, double hi)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return lo + (hi - lo) * (double)(*state >> 11) * 0x1p-53;
}

#endif
