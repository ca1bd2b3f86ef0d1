// SPDX-License-Identifier: MIT
#include "npu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "tensor.h"

#define NPU_MAX_TENSORS 256
#define NPU_MAX_TIMED 128

struct npu {
	struct vnpu_device_props props;
	unsigned blocks;		/* per launch: a few per core */
	void *tensors[NPU_MAX_TENSORS];	/* device allocations to release */
	unsigned ntensors;
	vnpu_event_t start[NPU_MAX_TIMED], end[NPU_MAX_TIMED];
	unsigned ntimed;		/* launches since the last npu_stats */
	uint64_t untimed;		/* launches beyond NPU_MAX_TIMED */
};

static bool check(vnpu_error_t err, const char *what)
{
	if (err == VNPU_SUCCESS)
		return true;
	fprintf(stderr, "npu: %s: %s (%s)\n", what, vnpu_error_string(err),
		vnpu_last_error_detail());
	return false;
}

struct npu *npu_open(void)
{
	struct npu *npu = calloc(1, sizeof(*npu));
	int dev;

	if (!npu)
		return NULL;
	if (!check(vnpu_init(), "init")) {
		free(npu);
		return NULL;
	}
	if (!check(vnpu_get_device(&dev), "device") ||
	    !check(vnpu_device_properties(dev, &npu->props), "properties"))
		goto fail;
	npu->blocks = npu->props.cores * 4;
	for (unsigned i = 0; i < NPU_MAX_TIMED; i++)
		if (!check(vnpu_event_create(&npu->start[i], VNPU_EVENT_DEFAULT),
			   "event") ||
		    !check(vnpu_event_create(&npu->end[i], VNPU_EVENT_DEFAULT),
			   "event"))
			goto fail;
	return npu;
fail:
	npu_close(npu);
	return NULL;
}

void npu_close(struct npu *npu)
{
	if (!npu)
		return;
	npu_release(npu);
	for (unsigned i = 0; i < NPU_MAX_TIMED; i++) {
		if (npu->start[i])
			vnpu_event_destroy(npu->start[i]);
		if (npu->end[i])
			vnpu_event_destroy(npu->end[i]);
	}
	vnpu_finalize();
	free(npu);
}

const char *npu_backend(struct npu *npu, unsigned *cores)
{
	*cores = npu->props.cores;
	return npu->props.backend;
}

bool npu_stats(struct npu *npu, uint64_t *kernels, double *device_ms)
{
	bool ok = check(vnpu_stream_synchronize(NULL), "synchronize");

	*kernels = npu->ntimed + npu->untimed;
	*device_ms = 0;
	for (unsigned i = 0; ok && i < npu->ntimed; i++) {
		float ms;

		ok = check(vnpu_event_elapsed_time(&ms, npu->start[i],
						   npu->end[i]),
			   "elapsed time");
		*device_ms += ms;
	}
	npu->ntimed = 0;
	npu->untimed = 0;
	return ok;
}

void npu_release(struct npu *npu)
{
	vnpu_stream_synchronize(NULL);
	for (unsigned i = 0; i < npu->ntensors; i++)
		vnpu_free(npu->tensors[i]);
	npu->ntensors = 0;
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
	if (!vnpu_storage_numel(&t->desc, &numel) ||
	    npu->ntensors == NPU_MAX_TENSORS)
		return false;
	t->bytes = numel * vnpu_dtype_size(dtype);
	if (!check(vnpu_malloc(&t->dev, t->bytes), "malloc") ||
	    !check(vnpu_memset(t->dev, 0, t->bytes), "memset"))
		return false;
	npu->tensors[npu->ntensors++] = t->dev;
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

bool npu_upload(struct npu *npu, struct npu_tensor *t, const void *data)
{
	return check(vnpu_memcpy(t->dev, data, t->bytes, VNPU_MEMCPY_H2D),
		     "upload");
}

bool npu_download(struct npu *npu, const struct npu_tensor *t, void *data)
{
	return check(vnpu_memcpy(data, t->dev, t->bytes, VNPU_MEMCPY_D2H),
		     "download");
}

struct vnpu_tensor npu_arg(struct npu_launch *l, const struct npu_tensor *t,
			   uint32_t access)
{
	struct vnpu_tensor d = t->desc;

	/* A tensor already in the launch keeps its buffer, widening access. */
	for (uint32_t i = 0; i < l->nbufs; i++) {
		if (l->bufs[i].ptr == t->dev) {
			l->bufs[i].access |= access;
			d.buffer = i;
			return d;
		}
	}
	l->bufs[l->nbufs] = (struct vnpu_launch_buffer){
		.ptr = t->dev, .size = t->bytes, .access = access,
	};
	d.buffer = l->nbufs++;
	return d;
}

bool npu_launch(struct npu *npu, const struct npu_launch *l, uint32_t id,
		const void *params, uint32_t params_size)
{
	const struct vnpu_kernel_def *k = vnpu_kernel_find(id);
	bool timed = npu->ntimed < NPU_MAX_TIMED;
	bool ok;

	if (!k)
		return false;
	if (timed && !check(vnpu_event_record(npu->start[npu->ntimed], NULL),
			    "event record"))
		return false;
	ok = check(vnpu_launch_kernel(k->name, npu->blocks, l->bufs, l->nbufs,
				      params, params_size, NULL),
		   k->name);
	if (ok && timed)
		ok = check(vnpu_event_record(npu->end[npu->ntimed++], NULL),
			   "event record");
	else if (ok)
		npu->untimed++;
	return ok;
}
