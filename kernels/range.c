// SPDX-License-Identifier: MIT
/*
 * RANGE: out[i] in row-major order of out, for arange (start + i * step)
 * or linspace (n points from start to end). Each element is computed on
 * its own from its index, with the arithmetic PyTorch's CPU kernel uses
 * for the dtype (kernel_abi.h), so any block computes any part.
 */
#include "elementwise.h"

struct range_ctx {
	const struct vnpu_kp_range *p;
	uint32_t dtype, itemsize;
	int64_t next; /* row-major index of the next chunk's first element */
	int64_t n;    /* out's numel */
	/* LINSPACE: the bounds and step, in the dtype's arithmetic */
	double start, end, step;
};

/* x rounded to a float dtype, as one operation of c10's Half, BFloat16,
 * float or double arithmetic leaves it. */
static double round_to(uint32_t dtype, double x)
{
	float f = (float)x;

	if (dtype == VNPU_DTYPE_F64)
		return x;
	if (dtype == VNPU_DTYPE_F16)
		return vnpu_f16_to_f32(vnpu_f32_to_f16(f));
	if (dtype == VNPU_DTYPE_BF16)
		return vnpu_bf16_to_f32(vnpu_f32_to_bf16(f));
	return f;
}

static void linspace_init(struct range_ctx *c)
{
	const struct vnpu_kp_range *p = c->p;
	uint32_t dt = c->dtype;

	if (!vnpu_dtype_is_floating(dt)) {
		c->start = p->start;
		c->end = p->end;
		c->step = c->n > 1 ? (c->end - c->start) / (double)(c->n - 1) : 0;
		return;
	}
	c->start = round_to(dt, p->start);
	c->end = round_to(dt, p->end);
	c->step = c->n > 1 ? round_to(dt, round_to(dt, c->end - c->start) /
					   round_to(dt, (double)(c->n - 1)))
			   : 0;
}

/* Element i of a linspace of n, from the first end for the first half and
 * from the last end for the rest, as PyTorch's CPU kernel does. */
static void linspace_store(const struct range_ctx *c, char *o, int64_t i)
{
	uint32_t dt = c->dtype;
	bool first_half = i < c->n / 2;
	int64_t k = first_half ? i : c->n - 1 - i;
	double v;

	if (c->n == 1) {
		v = c->start;
	} else if (!vnpu_dtype_is_floating(dt)) {
		/* stored truncated toward zero, as C++ converts */
		v = first_half ? c->start + c->step * (double)k
			       : c->end - c->step * (double)k;
	} else {
		double d = round_to(dt, c->step * round_to(dt, (double)k));

		v = round_to(dt, first_half ? c->start + d : c->end - d);
	}
	vnpu_store_f64(o, dt, v);
}

static void range_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
			int64_t n)
{
	struct range_ctx *c = ctx;
	const struct vnpu_kp_range *p = c->p;
	int64_t step = strides[0] * c->itemsize;
	char *o = ptrs[0];

	for (int64_t k = 0; k < n; k++, o += step) {
		int64_t i = c->next + k;

		if (p->mode == VNPU_RANGE_LINSPACE)
			linspace_store(c, o, i);
		else if (c->dtype == VNPU_DTYPE_F64) {
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
	if (p->reserved || p->mode > VNPU_RANGE_LINSPACE)
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
	c.n = (int64_t)loop.numel;
	if (p->mode == VNPU_RANGE_LINSPACE)
		linspace_init(&c);
	vnpu_ew_for_range(&loop, begin, end, range_chunk, &c);
}

const struct vnpu_kernel_def vnpu_kernel_range = {
	.id = VNPU_KERNEL_RANGE,
	.name = "range",
	.params_size = sizeof(struct vnpu_kp_range),
	.validate = range_validate,
	.run = range_run,
};
