/* SPDX-License-Identifier: MIT */
/*
 * The kernel library's interface to the device: a table of kernels, each
 * with a validator that checks its parameters against the mapped buffers and
 * a body that runs one block. The firmware simulator validates once, then
 * runs blocks 0..nblocks-1 on its cores; blocks write disjoint outputs.
 * Blocks poll a cancellation hook (below) so that a launch can be stopped.
 */
#ifndef VNPU_KERNELS_KERNEL_H
#define VNPU_KERNELS_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnpu/hw_status.h"
#include "vnpu/kernel_abi.h"

/* A launch buffer as the kernel sees it: mapped host memory. */
struct vnpu_kbuf {
	void *ptr;
	uint64_t size;
	uint32_t access; /* VNPU_ACCESS_* granted */
};

struct vnpu_kernel_def {
	uint32_t id;	      /* enum vnpu_kernel_id */
	const char *name;     /* as in the firmware manifest */
	uint32_t params_size; /* sizeof its struct vnpu_kp_* */
	/* Returns enum vnpu_status; reads only params and buffer sizes. */
	uint32_t (*validate)(const void *params, const struct vnpu_kbuf *bufs,
			     uint32_t nbufs);
	/* Runs one block of a validated launch; never fails. */
	void (*run)(const void *params, const struct vnpu_kbuf *bufs,
		    uint32_t block, uint32_t nblocks);
};

/*
 * Cancellation. A block polls vnpu_kernel_should_stop() at its outer-loop
 * granularity (a GEMM micro-panel, a few tens of thousands of elements of
 * an elementwise loop, a reduction chunk...), so that the device stops a
 * launch within a millisecond or so however big its blocks are. A block
 * that sees true returns at once: its outputs are then partially written.
 * The hook belongs to the calling thread: the device installs it before it
 * runs a launch's blocks; without one (the default) blocks run to their
 * end. Once the hook has answered true it must keep answering true for the
 * rest of the block, so that every loop level unwinds.
 */
typedef bool (*vnpu_kernel_stop_fn)(void *opaque);
void vnpu_kernel_set_stop_hook(vnpu_kernel_stop_fn fn, void *opaque);
bool vnpu_kernel_should_stop(void);

/* Work between two polls, in elements (or multiply-adds): about 0.1 ms. */
#define VNPU_KERNEL_POLL_WORK (1u << 16)

/* Counts `work` units into *acc and polls the hook each time
 * VNPU_KERNEL_POLL_WORK have accumulated: cheap enough for inner loops. */
static inline bool vnpu_kernel_poll(uint64_t *acc, uint64_t work)
{
	*acc += work;
	if (*acc < VNPU_KERNEL_POLL_WORK)
		return false;
	*acc = 0;
	return vnpu_kernel_should_stop();
}

const struct vnpu_kernel_def *vnpu_kernel_find(uint32_t id);
const struct vnpu_kernel_def *vnpu_kernel_find_name(const char *name);
/* Iteration over every kernel the library has, for firmware manifests. */
size_t vnpu_kernel_count(void);
const struct vnpu_kernel_def *vnpu_kernel_at(size_t index);

/* The half-open range [*begin, *end) of `units` work items that block
 * `block` of `nblocks` owns; ranges of consecutive blocks are contiguous. */
static inline void vnpu_block_range(uint64_t units, uint32_t block,
				    uint32_t nblocks, uint64_t *begin,
				    uint64_t *end)
{
	unsigned __int128 u = units;

	*begin = (uint64_t)(u * block / nblocks);
	*end = (uint64_t)(u * (block + 1u) / nblocks);
}

#endif /* VNPU_KERNELS_KERNEL_H */
