// SPDX-License-Identifier: MIT
/*
 * RANGE: out[i] = start + i * step in row-major order of out (arange).
 * Each element is computed on its own from its index, in PyTorch's CPU
 * accumulation type (double for F32 and F64, f32 for F16 and BF16, int64
 * for the integers), so any block computes any part of the range.
 */
#include "elementwise.h"

struct range_ctx {
	const struct vnpu_kp_range *p;
	uint32_t dtype, itemsize;
	int64_t next; /* row-major index of the next chunk's first element */
};

static void range_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
			int64_t n)
{
	struct range_ctx *c = ctx;
	const struct vnpu_kp_range *p = c->p;
	int64_t step = strides[0] * c->itemsize;
	char *o = ptrs[0];

	for (int64_t k = 0; k < n; k++, o += step) {
		int64_t i = c->next + k;

		if (c->dtype == VNPU_DTYPE_F64) {
			double v = p->start + p->step * (double)i;

			memcpy(o, &v, 8);
		} else if (c->dtype == VNPU_DTYPE_F32) {
			float v = (float)(p->start + p->step * (double)i);

			memcpy(o, &v, 4);
		} else if (vnpu_dtype_is_half(c->dtype)) {
			vnpu_st_f32(o, c->dtype,
				    (float)p->start + (float)p->step * (float)i);
		} else {
			/* int64 arithmetic that wraps, as PyTorch's does */
			int64_t v = (int64_t)((uint64_t)p->istart +
					      (uint64_t)p->istep * (uint64_t)i);

			vnpu_ew_store_i64(o, 1, c->dtype, 1, &v);
		}
	}
	c->next += n;
}

static uint32_t range_validate(const void *params, const struct vnpu_kbuf *bufs,
			       uint32_t nbufs)
{
	const struct vnpu_kp_range *p = params;
	uint32_t st = vnpu_ew_check_out(&p->out, bufs, nbufs);

	if (st != VNPU_STATUS_OK)
		return st;
	if (p->reserved)
		return VNPU_STATUS_INVALID_ARGS;
	return p->out.dtype == VNPU_DTYPE_BOOL ? VNPU_STATUS_UNSUPPORTED
					       : VNPU_STATUS_OK;
}

static void range_run(const void *params, const struct vnpu_kbuf *bufs,
		      uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_range *p = params;
	const struct vnpu_tensor *ts[1] = {&p->out};
	struct vnpu_ew_loop loop;
	struct range_ctx c = {.p = p, .dtype = p->out.dtype};
	uint64_t begin, end;

	c.itemsize = vnpu_dtype_size(p->out.dtype);
	vnpu_ew_loop_init(&loop, ts, 1, bufs);
	vnpu_block_range(loop.numel, block, nblocks, &begin, &end);
	c.next = (int64_t)begin;
	vnpu_ew_for_range(&loop, begin, end, range_chunk, &c);
}

const struct vnpu_kernel_def vnpu_kernel_range = {
	.id = VNPU_KERNEL_RANGE,
	.name = "range",
	.params_size = sizeof(struct vnpu_kp_range),
	.validate = range_validate,
	.run = range_run,
};
