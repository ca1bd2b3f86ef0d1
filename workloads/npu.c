// SPDX-License-Identifier: MIT
#include "npu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "tensor.h"
#include "vnpu/hw_mmu.h"
#include "vnpu/hw_status.h"
#include "vnpu_simhost.h"

#define NPU_CTX 0
#define NPU_QUEUE 0

struct npu {
	struct vnpu_simhost *host;
	unsigned cores;
	uint64_t commands;
	uint64_t device_ns;
	uint64_t *stamp;	/* TIMESTAMP target before each launch */
	uint64_t stamp_va;
};

struct npu *npu_open(unsigned cores)
{
	struct vnpu_simhost_config cfg = {
		.host_mem_size = 16ull << 20,
		.vram_size = 512ull << 20,
		.num_queues = 1,
		.num_contexts = 1,
		.num_cores = cores,
		.mode = VNPU_SIM_THREADS,
		.real_clock = true,
	};
	struct npu *npu = calloc(1, sizeof(*npu));
	uint32_t boot;

	if (!npu)
		return NULL;
	npu->cores = cores;
	if (vnpu_simhost_create(&cfg, &npu->host)) {
		fprintf(stderr, "npu: cannot create the device\n");
		free(npu);
		return NULL;
	}
	boot = vnpu_simhost_boot(npu->host);
	if (boot != VNPU_BOOT_READY ||
	    vnpu_simhost_ctx_init(npu->host, NPU_CTX, false) ||
	    vnpu_simhost_queue_init(npu->host, NPU_QUEUE, NPU_CTX, 8, true)) {
		fprintf(stderr, "npu: boot or setup failed (BOOT_STATUS 0x%x)\n",
			boot);
		npu_close(npu);
		return NULL;
	}
	npu->stamp = vnpu_simhost_alloc_map(npu->host, NPU_CTX, true, 8,
					    VNPU_PTE_READ | VNPU_PTE_WRITE,
					    &npu->stamp_va);
	if (!npu->stamp) {
		npu_close(npu);
		return NULL;
	}
	return npu;
}

void npu_close(struct npu *npu)
{
	if (!npu)
		return;
	vnpu_simhost_destroy(npu->host);
	free(npu);
}

void npu_stats(struct npu *npu, uint64_t *commands, uint64_t *device_ns)
{
	*commands = npu->commands;
	*device_ns = npu->device_ns;
}

bool npu_tensor(struct npu *npu, struct npu_tensor *t, uint32_t dtype,
		uint32_t format, uint32_t ndim, const int64_t *sizes)
{
	uint64_t numel;
	int64_t stride = 1;

	memset(t, 0, sizeof(*t));
	t->desc.dtype = dtype;
	t->desc.format = format;
	t->desc.ndim = ndim;
	for (uint32_t i = ndim; i-- > 0;) {
		t->desc.sizes[i] = sizes[i];
		if (!vnpu_format_is_internal(format))
			t->desc.strides[i] = stride;
		stride *= sizes[i];
	}
	if (!vnpu_storage_numel(&t->desc, &numel))
		return false;
	t->bytes = numel * vnpu_dtype_size(dtype);
	t->host = vnpu_simhost_alloc_map(npu->host, NPU_CTX, true, t->bytes,
					 VNPU_PTE_READ | VNPU_PTE_WRITE,
					 &t->va);
	if (!t->host) {
		fprintf(stderr, "npu: out of device memory (%llu bytes)\n",
			(unsigned long long)t->bytes);
		return false;
	}
	memset(t->host, 0, t->bytes);
	return true;
}

struct npu_tensor npu_view(const struct npu_tensor *t, uint32_t ndim,
			   const int64_t *sizes, const int64_t *strides,
			   int64_t offset)
{
	struct npu_tensor v = *t;

	memset(v.desc.sizes, 0, sizeof(v.desc.sizes));
	memset(v.desc.strides, 0, sizeof(v.desc.strides));
	v.desc.format = VNPU_FORMAT_ND;	/* a view is a plain strided tensor */
	v.desc.ndim = ndim;
	v.desc.offset = offset;
	for (uint32_t i = 0; i < ndim; i++) {
		v.desc.sizes[i] = sizes[i];
		v.desc.strides[i] = strides[i];
	}
	return v;
}

struct vnpu_tensor npu_arg(struct npu_launch *l, const struct npu_tensor *t,
			   uint32_t access)
{
	struct vnpu_tensor d = t->desc;

	/* A tensor already in the launch keeps its buffer, widening access. */
	for (uint32_t i = 0; i < l->nbufs; i++) {
		if (l->bufs[i].va == t->va) {
			l->bufs[i].access |= access;
			d.buffer = i;
			return d;
		}
	}
	l->bufs[l->nbufs] = (struct vnpu_kargs_buffer){
		.va = t->va, .size = t->bytes, .access = access,
	};
	d.buffer = l->nbufs++;
	return d;
}

bool npu_launch(struct npu *npu, const struct npu_launch *l, uint32_t id,
		const void *params, uint32_t params_size)
{
	const struct vnpu_kernel_def *k = vnpu_kernel_find(id);
	struct vnpu_simhost *h = npu->host;
	struct vnpu_cpl cpl;
	uint32_t args_size;
	uint64_t args_va, seq;

	args_va = vnpu_simhost_write_args(h, NPU_CTX, l->bufs, l->nbufs, params,
					  params_size, &args_size);
	if (!args_va)
		return false;
	/* A timestamp right before the launch gives its device time. */
	vnpu_simhost_push(h, NPU_QUEUE,
			  vnpu_simhost_cmd_timestamp(npu->stamp_va));
	seq = vnpu_simhost_push(h, NPU_QUEUE,
				vnpu_simhost_cmd_launch(id, npu->cores * 4,
							args_va, args_size));
	vnpu_simhost_ring(h, NPU_QUEUE);
	if (vnpu_simhost_wait(h, NPU_QUEUE, seq, VNPU_SIMHOST_TIMEOUT_MS)) {
		fprintf(stderr, "npu: kernel %s timed out\n", k ? k->name : "?");
		return false;
	}
	cpl = vnpu_simhost_cpl(h, NPU_QUEUE, seq);
	if (cpl.status != VNPU_STATUS_OK) {
		fprintf(stderr, "npu: kernel %s failed with status %u\n",
			k ? k->name : "?", cpl.status);
		return false;
	}
	npu->commands++;
	npu->device_ns += cpl.timestamp - *npu->stamp;
	return true;
}
