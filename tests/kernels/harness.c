// SPDX-License-Identifier: MIT
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "tensor.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void kt_seed(uint64_t seed)
{
	rng_state = seed ? seed : 0x9e3779b97f4a7c15ull;
}

uint32_t kt_rand(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

int64_t kt_rand_range(int64_t lo, int64_t hi)
{
	uint64_t span = (uint64_t)(hi - lo) + 1;
	uint64_t r = ((uint64_t)kt_rand() << 32) | kt_rand();

	return lo + (int64_t)(span ? r % span : r);
}

float kt_rand_float(float lo, float hi)
{
	return lo + (hi - lo) * ((float)kt_rand() / 4294967296.0f);
}

uint32_t kt_launch(uint32_t kernel_id, const void *params,
		   const struct vnpu_kbuf *bufs, uint32_t nbufs,
		   uint32_t nblocks)
{
	const struct vnpu_kernel_def *k = vnpu_kernel_find(kernel_id);
	uint32_t order[64];
	uint32_t st;

	if (!k)
		return VNPU_STATUS_UNKNOWN_KERNEL;
	st = k->validate(params, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (nblocks > 64)
		nblocks = 64;
	for (uint32_t i = 0; i < nblocks; i++)
		order[i] = i;
	for (uint32_t i = nblocks; i > 1; i--) {
		uint32_t j = kt_rand() % i;
		uint32_t t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
	for (uint32_t i = 0; i < nblocks; i++)
		k->run(params, bufs, order[i], nblocks);
	return VNPU_STATUS_OK;
}

struct vnpu_tensor kt_tensor(uint32_t buffer, uint32_t dtype, uint32_t ndim,
			     const int64_t *sizes, const int64_t *strides)
{
	struct vnpu_tensor t = vnpu_tensor_dense(buffer, dtype, VNPU_FORMAT_ND, ndim, sizes);

	for (uint32_t i = 0; strides && i < ndim && i < VNPU_MAX_DIMS; i++)
		t.strides[i] = strides[i];
	return t;
}

struct vnpu_tensor kt_tensor_fmt(uint32_t buffer, uint32_t dtype,
				 uint32_t format, uint32_t ndim,
				 const int64_t *sizes)
{
	struct vnpu_tensor t;

	memset(&t, 0, sizeof(t));
	t.buffer = buffer;
	t.dtype = dtype;
	t.format = format;
	t.ndim = ndim;
	for (uint32_t i = 0; i < ndim; i++)
		t.sizes[i] = sizes[i];
	return t;
}

struct vnpu_kbuf kt_buffer(uint64_t size)
{
	struct vnpu_kbuf b;

	b.size = size;
	b.ptr = malloc(size ? size : 1);
	b.access = VNPU_ACCESS_READ | VNPU_ACCESS_WRITE;
	if (b.ptr)
		memset(b.ptr, 0xa5, size);
	return b;
}

void kt_free(struct vnpu_kbuf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->size = 0;
}
