/* SPDX-License-Identifier: MIT */
/*
 * The workloads' view of the NPU: tensors in device memory and kernel
 * launches. Until the runtime lands this drives the device simulator
 * through the in-process host, the way a driver would: VRAM buffers mapped
 * into one context, one queue, argument blocks in device memory.
 */
#ifndef VNPU_WORKLOADS_NPU_H
#define VNPU_WORKLOADS_NPU_H

#include <stdbool.h>
#include <stdint.h>

#include "vnpu/kernel_abi.h"

struct npu;

/* A tensor in device memory: `desc` is its layout (buffer index unset),
 * `host` the CPU's view of its VRAM (the BAR mapping). */
struct npu_tensor {
	struct vnpu_tensor desc;
	uint64_t va;
	uint64_t bytes;
	void *host;
};

struct npu *npu_open(unsigned cores);
void npu_close(struct npu *npu);
/* Commands retired and device time spent in them since open. */
void npu_stats(struct npu *npu, uint64_t *commands, uint64_t *device_ns);

/* A dense tensor of `dtype` in `format` (logical sizes); storage zeroed. */
bool npu_tensor(struct npu *npu, struct npu_tensor *t, uint32_t dtype,
		uint32_t format, uint32_t ndim, const int64_t *sizes);
/* A strided view of t's memory. */
struct npu_tensor npu_view(const struct npu_tensor *t, uint32_t ndim,
			   const int64_t *sizes, const int64_t *strides,
			   int64_t offset);

/* One launch being assembled: tensors become its buffers. */
struct npu_launch {
	struct vnpu_kargs_buffer bufs[VNPU_KARGS_MAX_BUFFERS];
	uint32_t nbufs;
};

/* The descriptor of t as buffer of launch l, with `access`. */
struct vnpu_tensor npu_arg(struct npu_launch *l, const struct npu_tensor *t,
			   uint32_t access);
/* Runs kernel `id` with `params` and waits; prints and returns false on a
 * device error. */
bool npu_launch(struct npu *npu, const struct npu_launch *l, uint32_t id,
		const void *params, uint32_t params_size);

#endif /* VNPU_WORKLOADS_NPU_H */
