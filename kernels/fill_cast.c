// SPDX-License-Identifier: MIT
/*
 * FILL and CAST. Conversions: float to float rounds to nearest even through
 * f32 (exact for F16/BF16 sources), and any pair with F64 through double,
 * rounding once from the double value; float to integer truncates toward
 * zero and saturates, NaN becomes 0; anything to BOOL is (x != 0); integer
 * to integer wraps to the destination width (two's complement, as C and
 * PyTorch convert), and FILL's ivalue converts the same way.
 */
#include <string.h>

#include "elementwise.h"

/* ---- FILL ---- */

/* The element's bytes, computed once by run() for the whole block. */
struct fill_ctx {
	uint32_t itemsize;
	unsigned char bytes[8];
};

static void fill_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
		       int64_t n)
{
	const struct fill_ctx *c = ctx;
	char *p = ptrs[0];
	int64_t step = strides[0] * c->itemsize;

	switch (c->itemsize) {
	case 1:
		if (step == 1) {
			memset(p, c->bytes[0], (size_t)n);
			return;
		}
		for (int64_t i = 0; i < n; i++)
			p[i * step] = (char)c->bytes[0];
		return;
	case 2:
		for (int64_t i = 0; i < n; i++)
			memcpy(p + i * step, c->bytes, 2);
		return;
	case 4:
		for (int64_t i = 0; i < n; i++)
			memcpy(p + i * step, c->bytes, 4);
		return;
	default:
		for (int64_t i = 0; i < n; i++)
			memcpy(p + i * step, c->bytes, 8);
		return;
	}
}

static uint32_t fill_validate(const void *params, const struct vnpu_kbuf *bufs,
			      uint32_t nbufs)
{
	const struct vnpu_kp_fill *p = params;

	return vnpu_ew_check_out(&p->out, bufs, nbufs);
}

static void fill_run(const void *params, const struct vnpu_kbuf *bufs,
		     uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_fill *p = params;
	const struct vnpu_tensor *ts[1] = {&p->out};
	struct vnpu_ew_loop loop;
	struct fill_ctx c;

	c.itemsize = vnpu_dtype_size(p->out.dtype);
	memset(c.bytes, 0, sizeof(c.bytes));
	if (p->out.dtype == VNPU_DTYPE_F64)
		memcpy(c.bytes, &p->value, 8);
	else if (vnpu_dtype_is_float(p->out.dtype))
		vnpu_st_f32((char *)c.bytes, p->out.dtype, (float)p->value);
	else
		vnpu_ew_store_i64((char *)c.bytes, 1, p->out.dtype, 1,
				  &p->ivalue);
	vnpu_ew_loop_init(&loop, ts, 1, bufs);
	vnpu_ew_run_block(&loop, block, nblocks, fill_chunk, &c);
}

const struct vnpu_kernel_def vnpu_kernel_fill = {
	.id = VNPU_KERNEL_FILL,
	.name = "fill",
	.params_size = sizeof(struct vnpu_kp_fill),
	.validate = fill_validate,
	.run = fill_run,
};

/* ---- CAST ---- */

struct cast_ctx {
	uint32_t src_dtype;
	uint32_t out_dtype;
};

/* A float value (every F32, F16 and BF16 one is exactly a double) to an
 * integer dtype: truncated toward zero, saturated, NaN 0. */
static int64_t float_to_int(double d, uint32_t dtype)
{
	double lo, hi;

	if (d != d)
		return 0;
	switch (dtype) {
	case VNPU_DTYPE_I8:
		lo = INT8_MIN;
		hi = INT8_MAX;
		break;
	case VNPU_DTYPE_U8:
		lo = 0;
		hi = UINT8_MAX;
		break;
	case VNPU_DTYPE_I16:
		lo = INT16_MIN;
		hi = INT16_MAX;
		break;
	case VNPU_DTYPE_I32:
		lo = INT32_MIN;
		hi = INT32_MAX;
		break;
	default: /* I64: 2^63 is the first double out of range */
		if (d >= 9223372036854775808.0)
			return INT64_MAX;
		if (d < -9223372036854775808.0)
			return INT64_MIN;
		return (int64_t)d;
	}
	if (d <= lo)
		return (int64_t)lo;
	if (d >= hi)
		return (int64_t)hi;
	return (int64_t)d;
}

static void copy_elems(char *dst, int64_t dstep, const char *src, int64_t sstep,
		       uint32_t itemsize, int64_t n)
{
	if (dstep == 1 && sstep == 1) {
		memmove(dst, src, (size_t)n * itemsize);
		return;
	}
	/* constant sizes let memcpy become a single load and store */
	switch (itemsize) {
	case 1:
		for (int64_t i = 0; i < n; i++)
			dst[i * dstep] = src[i * sstep];
		return;
	case 2:
		for (int64_t i = 0; i < n; i++)
			memcpy(dst + i * dstep * 2, src + i * sstep * 2, 2);
		return;
	case 4:
		for (int64_t i = 0; i < n; i++)
			memcpy(dst + i * dstep * 4, src + i * sstep * 4, 4);
		return;
	default:
		for (int64_t i = 0; i < n; i++)
			memcpy(dst + i * dstep * 8, src + i * sstep * 8, 8);
		return;
	}
}

/* Either side F64: through double, so nothing passes through f32. */
static void cast_f64_chunk(const struct cast_ctx *c, char *const *ptrs,
			   const int64_t *strides, int64_t n)
{
	double d[VNPU_EW_CHUNK];
	int64_t v[VNPU_EW_CHUNK];

	if (vnpu_dtype_is_floating(c->src_dtype)) {
		vnpu_ew_load_f64(ptrs[1], strides[1], c->src_dtype, n, d);
	} else {
		vnpu_ew_load_i64(ptrs[1], strides[1], c->src_dtype, n, v);
		for (int64_t i = 0; i < n; i++)
			d[i] = (double)v[i];
	}
	if (vnpu_dtype_is_floating(c->out_dtype)) {
		vnpu_ew_store_f64(ptrs[0], strides[0], c->out_dtype, n, d);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		v[i] = c->out_dtype == VNPU_DTYPE_BOOL
			       ? d[i] != 0.0
			       : float_to_int(d[i], c->out_dtype);
	vnpu_ew_store_i64(ptrs[0], strides[0], c->out_dtype, n, v);
}

static void cast_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
		       int64_t n)
{
	const struct cast_ctx *c = ctx;
	bool src_float = vnpu_dtype_is_float(c->src_dtype);
	bool out_float = vnpu_dtype_is_float(c->out_dtype);
	float f[VNPU_EW_CHUNK];
	int64_t v[VNPU_EW_CHUNK];

	if (c->src_dtype == c->out_dtype) {
		copy_elems(ptrs[0], strides[0], ptrs[1], strides[1],
			   vnpu_dtype_size(c->src_dtype), n);
		return;
	}
	if (c->src_dtype == VNPU_DTYPE_F64 || c->out_dtype == VNPU_DTYPE_F64) {
		cast_f64_chunk(c, ptrs, strides, n);
		return;
	}
	if (src_float) {
		vnpu_ew_load_f32(ptrs[1], strides[1], c->src_dtype, n, f);
		if (out_float) {
			vnpu_ew_store_f32(ptrs[0], strides[0], c->out_dtype, n,
					  f);
			return;
		}
		for (int64_t i = 0; i < n; i++)
			v[i] = c->out_dtype == VNPU_DTYPE_BOOL
				       ? f[i] != 0.0f
				       : float_to_int(f[i], c->out_dtype);
		vnpu_ew_store_i64(ptrs[0], strides[0], c->out_dtype, n, v);
		return;
	}
	vnpu_ew_load_i64(ptrs[1], strides[1], c->src_dtype, n, v);
	if (out_float) {
		for (int64_t i = 0; i < n; i++)
			f[i] = (float)v[i];
		vnpu_ew_store_f32(ptrs[0], strides[0], c->out_dtype, n, f);
		return;
	}
	vnpu_ew_store_i64(ptrs[0], strides[0], c->out_dtype, n, v);
}

static uint32_t cast_validate(const void *params, const struct vnpu_kbuf *bufs,
			      uint32_t nbufs)
{
	const struct vnpu_kp_cast *p = params;
	uint32_t st;

	st = vnpu_ew_check(&p->src, bufs, nbufs, VNPU_ACCESS_READ);
	if (st != VNPU_STATUS_OK)
		return st;
	st = vnpu_ew_check_out(&p->out, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (!vnpu_same_shape(&p->src, &p->out))
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

static void cast_run(const void *params, const struct vnpu_kbuf *bufs,
		     uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_cast *p = params;
	const struct vnpu_tensor *ts[2] = {&p->out, &p->src};
	struct cast_ctx c = {p->src.dtype, p->out.dtype};
	struct vnpu_ew_loop loop;

	vnpu_ew_loop_init(&loop, ts, 2, bufs);
	vnpu_ew_run_block(&loop, block, nblocks, cast_chunk, &c);
}

const struct vnpu_kernel_def vnpu_kernel_cast = {
	.id = VNPU_KERNEL_CAST,
	.name = "cast",
	.params_size = sizeof(struct vnpu_kp_cast),
	.validate = cast_validate,
	.run = cast_run,
};
