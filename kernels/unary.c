// SPDX-License-Identifier: MIT
/*
 * UNARY: out = op(src). F32, F16 and BF16 compute in f32, F64 in double;
 * ABS, NEG, RELU, FLOOR, CEIL, TRUNC, ROUND and SIGN also run on the
 * integer dtypes (I8, U8, I16, I32, I64), where ABS and NEG of the minimum
 * value wrap to itself and the rounding ops are the identity; SIGN and
 * BITWISE_NOT also on BOOL.
 */
#include <math.h>
#include <stdint.h>

#include "activation.h"
#include "elementwise.h"

struct unary_ctx {
	uint32_t op;
	uint32_t dtype;
};

/* In place on n values of T (float: f32 math, suffixes S and F empty and
 * f; double: the F64 path, _f64 and nothing, see activation.h); one loop
 * per op so each can vectorise. */
#define DEFINE_UNARY_FLOAT(name, T, S, F)                                      \
	static void name(uint32_t op, T *x, int64_t n)                         \
	{                                                                      \
		switch (op) {                                                  \
		case VNPU_UNARY_ABS:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = fabs##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_NEG:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = -x[i];                                  \
			return;                                                \
		case VNPU_UNARY_EXP:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = exp##F(x[i]);                           \
			return;                                                \
		case VNPU_UNARY_LOG:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = log##F(x[i]);                           \
			return;                                                \
		case VNPU_UNARY_SQRT:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = sqrt##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_RSQRT:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = 1.0##F / sqrt##F(x[i]);                 \
			return;                                                \
		case VNPU_UNARY_RELU:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = vnpu_relu##S(x[i]);                     \
			return;                                                \
		case VNPU_UNARY_GELU:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = vnpu_gelu##S(x[i]);                     \
			return;                                                \
		case VNPU_UNARY_SILU:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = vnpu_silu##S(x[i]);                     \
			return;                                                \
		case VNPU_UNARY_SIGMOID:                                       \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = vnpu_sigmoid##S(x[i]);                  \
			return;                                                \
		case VNPU_UNARY_FLOOR:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = floor##F(x[i]);                         \
			return;                                                \
		case VNPU_UNARY_CEIL:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = ceil##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_TRUNC:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = trunc##F(x[i]);                         \
			return;                                                \
		case VNPU_UNARY_ROUND:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = nearbyint##F(x[i]);                     \
			return;                                                \
		case VNPU_UNARY_SIGN:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = (T)((x[i] > 0) - (x[i] < 0));           \
			return;                                                \
		case VNPU_UNARY_RECIPROCAL:                                    \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = 1.0##F / x[i];                          \
			return;                                                \
		case VNPU_UNARY_SIN:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = sin##F(x[i]);                           \
			return;                                                \
		case VNPU_UNARY_COS:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = cos##F(x[i]);                           \
			return;                                                \
		case VNPU_UNARY_TAN:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = tan##F(x[i]);                           \
			return;                                                \
		case VNPU_UNARY_ASIN:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = asin##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_ACOS:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = acos##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_ATAN:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = atan##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_SINH:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = sinh##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_COSH:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = cosh##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_ASINH:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = asinh##F(x[i]);                         \
			return;                                                \
		case VNPU_UNARY_ACOSH:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = acosh##F(x[i]);                         \
			return;                                                \
		case VNPU_UNARY_ATANH:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = atanh##F(x[i]);                         \
			return;                                                \
		case VNPU_UNARY_LOG2:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = log2##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_LOG10:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = log10##F(x[i]);                         \
			return;                                                \
		case VNPU_UNARY_LOG1P:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = log1p##F(x[i]);                         \
			return;                                                \
		case VNPU_UNARY_EXPM1:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = expm1##F(x[i]);                         \
			return;                                                \
		case VNPU_UNARY_EXP2:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = exp2##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_ERF:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = erf##F(x[i]);                           \
			return;                                                \
		case VNPU_UNARY_ERFC:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = erfc##F(x[i]);                          \
			return;                                                \
		case VNPU_UNARY_HARDSIGMOID:                                   \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = vnpu_hardsigmoid##S(x[i]);              \
			return;                                                \
		case VNPU_UNARY_HARDSWISH:                                     \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = vnpu_hardswish##S(x[i]);                \
			return;                                                \
		default:                                                       \
			for (int64_t i = 0; i < n; i++)                        \
				x[i] = vnpu_tanh##S(x[i]);                     \
			return;                                                \
		}                                                              \
	}

DEFINE_UNARY_FLOAT(unary_f32, float, , f)
DEFINE_UNARY_FLOAT(unary_f64, double, _f64, )

/* ABS, NEG, RELU, BITWISE_NOT, SIGN and the rounding ops on int64 copies
 * (I8, U8, I16, I32, I64; BOOL for BITWISE_NOT and SIGN); the store wraps
 * to the dtype's width. */
static void unary_int(uint32_t op, uint32_t dtype, int64_t *x, int64_t n)
{
	switch (op) {
	case VNPU_UNARY_FLOOR:
	case VNPU_UNARY_CEIL:
	case VNPU_UNARY_TRUNC:
	case VNPU_UNARY_ROUND:
		return; /* integers are their own rounding */
	case VNPU_UNARY_SIGN:
		for (int64_t i = 0; i < n; i++)
			x[i] = (x[i] > 0) - (x[i] < 0);
		return;
	case VNPU_UNARY_BITWISE_NOT: /* of a bool, its negation: ~1 is not 0 */
		for (int64_t i = 0; i < n; i++)
			x[i] = dtype == VNPU_DTYPE_BOOL ? !x[i] : ~x[i];
		return;
	case VNPU_UNARY_ABS: /* in uint64_t: INT64_MIN wraps to itself */
		for (int64_t i = 0; i < n; i++)
			x[i] = x[i] < 0 ? (int64_t)(0 - (uint64_t)x[i]) : x[i];
		return;
	case VNPU_UNARY_NEG:
		for (int64_t i = 0; i < n; i++)
			x[i] = (int64_t)(0 - (uint64_t)x[i]);
		return;
	default:
		for (int64_t i = 0; i < n; i++)
			x[i] = x[i] < 0 ? 0 : x[i];
		return;
	}
}

static void unary_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
			int64_t n)
{
	const struct unary_ctx *c = ctx;

	if (c->dtype == VNPU_DTYPE_F64) {
		double x[VNPU_EW_CHUNK];

		vnpu_ew_load_f64(ptrs[1], strides[1], c->dtype, n, x);
		unary_f64(c->op, x, n);
		vnpu_ew_store_f64(ptrs[0], strides[0], c->dtype, n, x);
	} else if (vnpu_dtype_is_float(c->dtype)) {
		float x[VNPU_EW_CHUNK];

		vnpu_ew_load_f32(ptrs[1], strides[1], c->dtype, n, x);
		unary_f32(c->op, x, n);
		vnpu_ew_store_f32(ptrs[0], strides[0], c->dtype, n, x);
	} else {
		int64_t x[VNPU_EW_CHUNK];

		vnpu_ew_load_i64(ptrs[1], strides[1], c->dtype, n, x);
		unary_int(c->op, c->dtype, x, n);
		vnpu_ew_store_i64(ptrs[0], strides[0], c->dtype, n, x);
	}
}

static uint32_t unary_validate(const void *params, const struct vnpu_kbuf *bufs,
			       uint32_t nbufs)
{
	const struct vnpu_kp_unary *p = params;
	uint32_t st;
	bool int_op;

	if (p->op >= VNPU_UNARY_COUNT || p->reserved != 0)
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(&p->src, bufs, nbufs, VNPU_ACCESS_READ);
	if (st != VNPU_STATUS_OK)
		return st;
	st = vnpu_ew_check_out(&p->out, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (p->src.dtype != p->out.dtype || !vnpu_same_shape(&p->src, &p->out))
		return VNPU_STATUS_INVALID_ARGS;
	int_op = p->op == VNPU_UNARY_ABS || p->op == VNPU_UNARY_NEG ||
		 p->op == VNPU_UNARY_RELU || p->op == VNPU_UNARY_FLOOR ||
		 p->op == VNPU_UNARY_CEIL || p->op == VNPU_UNARY_TRUNC ||
		 p->op == VNPU_UNARY_ROUND;
	if (vnpu_dtype_is_floating(p->src.dtype))
		return p->op == VNPU_UNARY_BITWISE_NOT ? VNPU_STATUS_UNSUPPORTED
						       : VNPU_STATUS_OK;
	if (p->op == VNPU_UNARY_BITWISE_NOT || p->op == VNPU_UNARY_SIGN ||
	    (int_op && p->src.dtype != VNPU_DTYPE_BOOL))
		return VNPU_STATUS_OK;
	return VNPU_STATUS_UNSUPPORTED;
}

static void unary_run(const void *params, const struct vnpu_kbuf *bufs,
		      uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_unary *p = params;
	const struct vnpu_tensor *ts[2] = {&p->out, &p->src};
	struct unary_ctx c = {p->op, p->src.dtype};
	struct vnpu_ew_loop loop;

	vnpu_ew_loop_init(&loop, ts, 2, bufs);
	vnpu_ew_run_block(&loop, block, nblocks, unary_chunk, &c);
}

const struct vnpu_kernel_def vnpu_kernel_unary = {
	.id = VNPU_KERNEL_UNARY,
	.name = "unary",
	.params_size = sizeof(struct vnpu_kp_unary),
	.validate = unary_validate,
	.run = unary_run,
};
