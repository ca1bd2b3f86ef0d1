// SPDX-License-Identifier: MIT
/*
 * LAYER_NORM over the last norm_ndim dims: per row, mean and population
 * variance in f64 (two passes, so no cancellation), rstd = 1/sqrt(var+eps),
 * then out = (x - mean) * rstd in f64, times weight plus bias in f32. Weight
 * and bias have the input's dtype or F32. A row of zero elements has NaN mean
 * and rstd. Each block owns a range of rows; out may alias input.
 */
#include <math.h>
#include <stdint.h>

#include "elementwise.h"

/* Flags are 0 or 1; anything else is a malformed launch. */
static bool flag_ok(uint32_t f)
{
	return f <= 1;
}

/* Checks weight or bias: the normalized shape, dtype of input or F32. */
static uint32_t check_affine(const struct vnpu_tensor *t,
			     const struct vnpu_tensor *in, uint32_t norm_ndim,
			     const struct vnpu_kbuf *bufs, uint32_t nbufs)
{
	uint32_t lead = in->ndim - norm_ndim;
	uint32_t st = vnpu_ew_check(t, bufs, nbufs, VNPU_ACCESS_READ);

	if (st != VNPU_STATUS_OK)
		return st;
	if (t->ndim != norm_ndim)
		return VNPU_STATUS_INVALID_ARGS;
	for (uint32_t d = 0; d < norm_ndim; d++)
		if (t->sizes[d] != in->sizes[lead + d])
			return VNPU_STATUS_INVALID_ARGS;
	if (t->dtype != in->dtype && t->dtype != VNPU_DTYPE_F32)
		return VNPU_STATUS_UNSUPPORTED;
	return VNPU_STATUS_OK;
}

static uint32_t check_stat(const struct vnpu_tensor *t, uint64_t rows,
			   const struct vnpu_kbuf *bufs, uint32_t nbufs)
{
	uint32_t st = vnpu_ew_check_out(t, bufs, nbufs);
	uint64_t numel;

	if (st != VNPU_STATUS_OK)
		return st;
	if (t->dtype != VNPU_DTYPE_F32)
		return VNPU_STATUS_INVALID_ARGS;
	if (!vnpu_tensor_numel(t, &numel) || numel != rows)
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

static uint32_t layer_norm_validate(const void *params,
				    const struct vnpu_kbuf *bufs,
				    uint32_t nbufs)
{
	const struct vnpu_kp_layer_norm *p = params;
	const struct vnpu_tensor *in = &p->input;
	uint64_t rows = 1;
	uint32_t st;

	if (!flag_ok(p->has_weight) || !flag_ok(p->has_bias) ||
	    !flag_ok(p->has_stats) || !(p->eps >= 0) || !isfinite(p->eps))
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(in, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(&p->out, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (p->norm_ndim < 1 || p->norm_ndim > in->ndim ||
	    p->out.dtype != in->dtype || !vnpu_same_shape(in, &p->out))
		return VNPU_STATUS_INVALID_ARGS;
	if (!vnpu_dtype_is_float(in->dtype))
		return VNPU_STATUS_UNSUPPORTED;
	if (p->has_weight) {
		st = check_affine(&p->weight, in, p->norm_ndim, bufs, nbufs);
		if (st != VNPU_STATUS_OK)
			return st;
	}
	if (p->has_bias) {
		st = check_affine(&p->bias, in, p->norm_ndim, bufs, nbufs);
		if (st != VNPU_STATUS_OK)
			return st;
	}
	if (p->has_stats) {
		/* no overflow: input's numel passed the tensor check */
		for (uint32_t d = 0; d < in->ndim - p->norm_ndim; d++)
			rows *= (uint64_t)in->sizes[d];
		st = check_stat(&p->mean, rows, bufs, nbufs);
		if (st == VNPU_STATUS_OK)
			st = check_stat(&p->rstd, rows, bufs, nbufs);
		if (st != VNPU_STATUS_OK)
			return st;
	}
	return VNPU_STATUS_OK;
}

struct ln_ctx {
	uint32_t dtype, wdtype, bdtype;
	bool has_weight, has_bias;
	double acc; /* sum, then sum of squared deviations */
	double mean, rstd;
};

static void ln_sum_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
			 int64_t n)
{
	struct ln_ctx *c = ctx;
	float x[VNPU_EW_CHUNK];
	double s = 0;

	vnpu_ew_load_f32(ptrs[0], strides[0], c->dtype, n, x);
	for (int64_t i = 0; i < n; i++)
		s += x[i];
	c->acc += s;
}

static void ln_sq_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
			int64_t n)
{
	struct ln_ctx *c = ctx;
	float x[VNPU_EW_CHUNK];
	double s = 0;

	vnpu_ew_load_f32(ptrs[0], strides[0], c->dtype, n, x);
	for (int64_t i = 0; i < n; i++) {
		double d = x[i] - c->mean;

		s += d * d;
	}
	c->acc += s;
}

/* ptrs: out, input, weight, bias */
static void ln_out_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
			 int64_t n)
{
	struct ln_ctx *c = ctx;
	float x[VNPU_EW_CHUNK], w[VNPU_EW_CHUNK];

	vnpu_ew_load_f32(ptrs[1], strides[1], c->dtype, n, x);
	/* in f64: with a tiny variance, rounding the mean to f32 first
	 * would be magnified by rstd */
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)((x[i] - c->mean) * c->rstd);
	if (c->has_weight) {
		vnpu_ew_load_f32(ptrs[2], strides[2], c->wdtype, n, w);
		for (int64_t i = 0; i < n; i++)
			x[i] *= w[i];
	}
	if (c->has_bias) {
		vnpu_ew_load_f32(ptrs[3], strides[3], c->bdtype, n, w);
		for (int64_t i = 0; i < n; i++)
			x[i] += w[i];
	}
	vnpu_ew_store_f32(ptrs[0], strides[0], c->dtype, n, x);
}

/* The trailing norm_ndim dims of t as a tensor of their own. */
static struct vnpu_tensor trailing(const struct vnpu_tensor *t,
				   uint32_t norm_ndim)
{
	struct vnpu_tensor r = *t;
	uint32_t lead = t->ndim - norm_ndim;

	memset(r.sizes, 0, sizeof(r.sizes));
	memset(r.strides, 0, sizeof(r.strides));
	r.ndim = norm_ndim;
	for (uint32_t d = 0; d < norm_ndim; d++) {
		r.sizes[d] = t->sizes[lead + d];
		r.strides[d] = t->strides[lead + d];
	}
	return r;
}

static void store_stat(const struct vnpu_tensor *t,
		       const struct vnpu_kbuf *bufs, uint64_t row, float v)
{
	char *p = (char *)bufs[t->buffer].ptr + vnpu_tensor_elem(t, row) * 4;

	memcpy(p, &v, 4);
}

static void layer_norm_run(const void *params, const struct vnpu_kbuf *bufs,
			   uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_layer_norm *p = params;
	const struct vnpu_tensor *in = &p->input, *out = &p->out;
	uint32_t lead = in->ndim - p->norm_ndim;
	uint32_t itemsize = vnpu_dtype_size(in->dtype);
	struct vnpu_tensor in_n = trailing(in, p->norm_ndim);
	struct vnpu_tensor out_n = trailing(out, p->norm_ndim);
	const struct vnpu_tensor *stat_ts[1] = {&in_n};
	const struct vnpu_tensor *out_ts[4] = {
		&out_n, &in_n, p->has_weight ? &p->weight : &in_n,
		p->has_bias ? &p->bias : &in_n};
	struct vnpu_ew_loop stat_loop, out_loop;
	struct vnpu_nd_counter c;
	struct ln_ctx ctx;
	uint64_t rows = 1, begin, end, work = 0;

	for (uint32_t d = 0; d < lead; d++)
		rows *= (uint64_t)in->sizes[d];
	vnpu_block_range(rows, block, nblocks, &begin, &end);
	if (begin >= end)
		return;
	vnpu_ew_loop_init(&stat_loop, stat_ts, 1, bufs);
	vnpu_ew_loop_init(&out_loop, out_ts, 4, bufs);
	ctx.dtype = in->dtype;
	ctx.wdtype = p->weight.dtype;
	ctx.bdtype = p->bias.dtype;
	ctx.has_weight = p->has_weight;
	ctx.has_bias = p->has_bias;
	vnpu_nd_counter_init(&c, lead, in->sizes, in->strides, out->strides,
			     begin);
	for (uint64_t r = begin; r < end; r++) {
		char *bases[4] = {
			out_loop.base[0] + c.off[1] * itemsize,
			out_loop.base[1] + c.off[0] * itemsize,
			out_loop.base[2],
			out_loop.base[3],
		};
		double n = (double)stat_loop.numel;

		/* each pass polls the cancellation hook; short rows poll
		 * here */
		if (vnpu_kernel_poll(&work, out_loop.numel + 1))
			return;
		ctx.acc = 0;
		if (vnpu_ew_for_range_at(&stat_loop, bases + 1, 0,
					 stat_loop.numel, ln_sum_chunk, &ctx))
			return;
		ctx.mean = ctx.acc / n;
		ctx.acc = 0;
		if (vnpu_ew_for_range_at(&stat_loop, bases + 1, 0,
					 stat_loop.numel, ln_sq_chunk, &ctx))
			return;
		ctx.rstd = 1.0 / sqrt(ctx.acc / n + p->eps);
		if (vnpu_ew_for_range_at(&out_loop, bases, 0, out_loop.numel,
					 ln_out_chunk, &ctx))
			return;
		if (p->has_stats) {
			store_stat(&p->mean, bufs, r, (float)ctx.mean);
			store_stat(&p->rstd, bufs, r, (float)ctx.rstd);
		}
		vnpu_nd_counter_next(&c);
	}
}

const struct vnpu_kernel_def vnpu_kernel_layer_norm = {
	.id = VNPU_KERNEL_LAYER_NORM,
	.name = "layer_norm",
	.params_size = sizeof(struct vnpu_kp_layer_norm),
	.validate = layer_norm_validate,
	.run = layer_norm_run,
};
