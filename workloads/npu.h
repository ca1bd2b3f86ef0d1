/* SPDX-License-Identifier: MIT */
/*
 * The workloads' view of the NPU: tensors in device memory and kernel
 * launches through libvnpurt, so the same program runs on the simulator
 * in-process or on the kernel driver in a VM (VNPU_BACKEND).
 */
#ifndef VNPU_WORKLOADS_NPU_H
#define VNPU_WORKLOADS_NPU_H

#include <stdbool.h>
#include <stdint.h>

#include "vnpu_runtime.h"

struct npu;

/* A tensor in device memory: `desc` is its layout (buffer index unset). */
struct npu_tensor {
	struct vnpu_tensor desc;
	void *dev;
	uint64_t bytes;
};

struct npu *npu_open(void);
void npu_close(struct npu *npu);
/* "sim" or "drm", and the device's cores. */
const char *npu_backend(struct npu *npu, unsigned *cores);
/* Waits for the work so far; kernels launched and their device time since
 * the last call (events around every launch). False on a device error. */
bool npu_stats(struct npu *npu, uint64_t *kernels, double *device_ms);
/* Frees every tensor allocated so far. */
void npu_release(struct npu *npu);

/* A dense tensor of `dtype` in `format` (logical sizes), zeroed. */
bool npu_tensor(struct npu *npu, struct npu_tensor *t, uint32_t dtype,
		uint32_t format, uint32_t ndim, const int64_t *sizes);
/* A plain strided view of t's memory. */
struct npu_tensor npu_view(const struct npu_tensor *t, uint32_t ndim,
			   const int64_t *sizes, const int64_t *strides,
			   int64_t offset);
/* Host <-> device copies of a tensor's whole storage. */
bool npu_upload(struct npu *npu, struct npu_tensor *t, const void *data);
bool npu_download(struct npu *npu, const struct npu_tensor *t, void *data);

/* One launch being assembled: tensors become its buffers. */
struct npu_launch {
	struct vnpu_launch_buffer bufs[VNPU_KARGS_MAX_BUFFERS];
	uint32_t nbufs;
};

/* The descriptor of t as buffer of launch l, with `access`. */
struct vnpu_tensor npu_arg(struct npu_launch *l, const struct npu_tensor *t,
			   uint32_t access);
/* Launches kernel `id` with `params` on the default stream; prints and
 * returns false when the runtime refuses it. */
bool npu_launch(struct npu *npu, const struct npu_launch *l, uint32_t id,
		const void *params, uint32_t params_size);

#endif /* VNPU_WORKLOADS_NPU_H */
