/* SPDX-License-Identifier: MIT */
/*
 * Building blocks of the kernels helper's NPU kernels: operands moved to
 * the device in the dtype a kernel needs, and one launch each of UNARY,
 * BINARY, WHERE and REDUCE on the current stream. Every function returns a
 * new reference or NULL with the dispatch error set.
 */
#ifndef VNPU_NPU_OPS_COMMON_H
#define VNPU_NPU_OPS_COMMON_H

#include "npu_util.h"
#include "../kernel_common.h"

/* The float dtypes of the matrix units and the fused kernels (GEMM,
 * CONV2D, POOL2D, SOFTMAX, LAYER_NORM), and of the ops composed in f32
 * (norms, losses): f32, f16 and bf16, computed in f32. */
static inline bool npk_f32_float(enum vnpu_at_dtype dt)
{
	return dt == VNPU_AT_F32 || dt == VNPU_AT_F16 || dt == VNPU_AT_BF16;
}

/* The float dtypes of the vector kernels (UNARY, BINARY, WHERE, REDUCE,
 * CAST, FILL, INDEX): those and f64, which they compute in double. */
static inline bool npk_float(enum vnpu_at_dtype dt)
{
	return npk_f32_float(dt) || dt == VNPU_AT_F64;
}

/* Dtypes BINARY and UNARY's abs, neg and relu take: floats and the
 * integers (computed in int64, wrapping as PyTorch's CPU does). */
static inline bool npk_float_or_int(enum vnpu_at_dtype dt)
{
	return npk_float(dt) || dt == VNPU_AT_I8 || dt == VNPU_AT_U8 ||
	       dt == VNPU_AT_I16 ||
	       dt == VNPU_AT_I32 || dt == VNPU_AT_I64;
}

/* ... and bool, which BINARY computes as 0/1 with a nonzero result stored
 * as true: PyTorch's bool add (or), mul (and), maximum/minimum and the
 * comparisons. Its sub, neg, abs, relu and clamp refuse bool; those ops
 * leave it to the CPU kernel, which words the error. */
static inline bool npk_float_int_or_bool(enum vnpu_at_dtype dt)
{
	return npk_float_or_int(dt) || dt == VNPU_AT_BOOL;
}

/*
 * t as a plain device tensor of dtype dt: t itself (retained, or made
 * plain) when it already is one, else a converted copy on the device (a
 * 0-dim CPU operand is moved there, as CUDA kernels take CPU scalars).
 */
static inline struct vnpu_at_tensor *npk_operand(struct vnpu_at_tensor *t,
						 enum vnpu_at_dtype dt)
{
	if (t->dtype == dt && vnpu_at_is_npu(t))
		return vnpu_npu_plain(t);
	return vnpu_op__to_copy(t, dt, vnpu_npu_device(), false);
}

/* The result of a kernel in dtype dt (converted on the device if needed;
 * consumes t). */
static inline struct vnpu_at_tensor *npk_to(struct vnpu_at_tensor *t,
					    enum vnpu_at_dtype dt)
{
	struct vnpu_at_tensor *r;

	if (!t || t->dtype == dt)
		return t;
	r = vnpu_op__to_copy(t, dt, vnpu_npu_device(), false);
	vnpu_at_release(t);
	return r;
}

/* A 0-dim device tensor of dt holding v. */
static inline struct vnpu_at_tensor *npk_scalar(double v,
						enum vnpu_at_dtype dt)
{
	return vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(v), dt, vnpu_npu_device());
}

/* BINARY carries alpha as a double: an integer alpha beyond 2^53 would
 * be rounded, so such a call is left to the CPU kernel. */
static inline bool npk_alpha_exact(struct vnpu_at_scalar alpha)
{
	return alpha.kind != VNPU_AT_SCALAR_INT ||
	       (alpha.i >= -(INT64_C(1) << 53) && alpha.i <= INT64_C(1) << 53);
}

/* A 0-dim device tensor of dt holding scalar s (ints stay exact). */
static inline struct vnpu_at_tensor *npk_scalar_of(struct vnpu_at_scalar s,
						   enum vnpu_at_dtype dt)
{
	return vnpu_at_scalar_tensor(s, dt, vnpu_npu_device());
}

/* out = unary op(src) in src's dtype (src plain, on the device). */
static inline struct vnpu_at_tensor *npk_unary(const char *name, uint32_t op,
					       struct vnpu_at_tensor *src)
{
	struct vnpu_kp_unary p = { .op = op };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *out;

	out = vnpu_npu_empty_iter(1, (const struct vnpu_at_tensor *[]){ src },
				  src->ndim, src->sizes,
				  (enum vnpu_at_dtype)src->dtype);
	if (out && vnpu_at_numel(out) &&
	    (!vnpu_npu_arg(&l, src, VNPU_ACCESS_READ, &p.src) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch(name, &l, "unary", &p, sizeof(p),
			      vnpu_at_numel(out)))) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

/*
 * out = binary op(a, b) broadcast; both operands converted to `dt` first,
 * out in dt (BOOL for comparisons).
 */
static inline struct vnpu_at_tensor *npk_binary(const char *name, uint32_t op,
						struct vnpu_at_tensor *a,
						struct vnpu_at_tensor *b,
						enum vnpu_at_dtype dt,
						double alpha)
{
	const struct vnpu_at_tensor *in[2] = { a, b };
	struct vnpu_kp_binary p = { .op = op, .alpha = alpha };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *x, *y, *out = NULL;
	int64_t sizes[VNPU_AT_MAX_DIMS];
	bool cmp = op >= VNPU_BINARY_EQ && op <= VNPU_BINARY_GE;
	uint32_t nd;

	if (!vnpu_at_broadcast_shapes(name, 2, in, &nd, sizes) ||
	    !vnpu_at_check_same_device(name, 2, in))
		return NULL;
	if (op == VNPU_BINARY_MUL || op == VNPU_BINARY_DIV) {
		enum vnpu_at_dtype wide = kc_mul_div_compute(dt, b);

		if (wide != dt)
			return npk_to(npk_binary(name, op, a, b, wide, alpha), dt);
	}
	x = npk_operand(a, dt);
	y = x ? npk_operand(b, dt) : NULL;
	if (y)
		out = vnpu_npu_empty_iter(2, (const struct vnpu_at_tensor *[]){ x, y },
					  nd, sizes, cmp ? VNPU_AT_BOOL : dt);
	if (out && vnpu_at_numel(out) &&
	    (!vnpu_npu_arg_bcast(&l, x, nd, VNPU_ACCESS_READ, &p.a) ||
	     !vnpu_npu_arg_bcast(&l, y, nd, VNPU_ACCESS_READ, &p.b) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch(name, &l, "binary", &p, sizeof(p),
			      vnpu_at_numel(out)))) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_at_release(x);
	vnpu_at_release(y);
	return out;
}

/*
 * out = cond ? a : b broadcast, a and b converted to dt; out is laid out
 * as TensorIterator lays out its inputs or, with `contiguous`, row-major
 * (the layout of a result PyTorch builds by clone, as masked_fill).
 */
static inline struct vnpu_at_tensor *npk_where_layout(const char *name,
						      struct vnpu_at_tensor *cond,
						      struct vnpu_at_tensor *a,
						      struct vnpu_at_tensor *b,
						      enum vnpu_at_dtype dt,
						      bool contiguous)
{
	const struct vnpu_at_tensor *in[3] = { cond, a, b };
	struct vnpu_kp_where p;
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *c, *x = NULL, *y = NULL, *out = NULL;
	int64_t sizes[VNPU_AT_MAX_DIMS];
	uint32_t nd;

	if (!vnpu_at_broadcast_shapes(name, 3, in, &nd, sizes) ||
	    !vnpu_at_check_same_device(name, 3, in))
		return NULL;
	c = npk_operand(cond, VNPU_AT_BOOL);
	x = c ? npk_operand(a, dt) : NULL;
	y = x ? npk_operand(b, dt) : NULL;
	if (y && contiguous)
		out = vnpu_npu_empty(nd, sizes, dt);
	else if (y)
		out = vnpu_npu_empty_iter(3,
					  (const struct vnpu_at_tensor *[]){ c, x, y },
					  nd, sizes, dt);
	if (out && vnpu_at_numel(out) &&
	    (!vnpu_npu_arg_bcast(&l, c, nd, VNPU_ACCESS_READ, &p.cond) ||
	     !vnpu_npu_arg_bcast(&l, x, nd, VNPU_ACCESS_READ, &p.a) ||
	     !vnpu_npu_arg_bcast(&l, y, nd, VNPU_ACCESS_READ, &p.b) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch(name, &l, "where", &p, sizeof(p),
			      vnpu_at_numel(out)))) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_at_release(c);
	vnpu_at_release(x);
	vnpu_at_release(y);
	return out;
}

static inline struct vnpu_at_tensor *npk_where(const char *name,
					       struct vnpu_at_tensor *cond,
					       struct vnpu_at_tensor *a,
					       struct vnpu_at_tensor *b,
					       enum vnpu_at_dtype dt)
{
	return npk_where_layout(name, cond, a, b, dt, false);
}

/*
 * REDUCE op of src (plain, on the device) over mask; the result has
 * src's rank with reduced dims of size 1 (keepdim), or is viewed without
 * them. Out dtype: src's, I64 for ARGMAX/ARGMIN.
 */
static inline struct vnpu_at_tensor *npk_reduce(const char *name, uint32_t op,
						struct vnpu_at_tensor *src,
						uint32_t mask, bool keepdim)
{
	struct vnpu_kp_reduce p = { .op = op, .dim_mask = mask };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *out, *v;
	int64_t ksz[VNPU_AT_MAX_DIMS], sq[VNPU_AT_MAX_DIMS];
	int64_t strides[VNPU_AT_MAX_DIMS];
	bool arg = op == VNPU_REDUCE_ARGMAX || op == VNPU_REDUCE_ARGMIN;
	uint32_t nsq = 0;

	for (uint32_t d = 0; d < src->ndim; d++) {
		ksz[d] = mask >> d & 1 ? 1 : src->sizes[d];
		if (!(mask >> d & 1))
			sq[nsq++] = src->sizes[d];
	}
	out = vnpu_npu_empty(src->ndim, ksz,
			     arg ? VNPU_AT_I64 : (enum vnpu_at_dtype)src->dtype);
	if (!out)
		return NULL;
	if (vnpu_at_numel(out) &&
	    (!vnpu_npu_arg(&l, src, VNPU_ACCESS_READ, &p.input) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch(name, &l, "reduce", &p, sizeof(p),
			      vnpu_at_numel(out)))) {
		vnpu_at_release(out);
		return NULL;
	}
	if (keepdim)
		return out;
	vnpu_at_contiguous_strides(nsq, sq, strides);
	v = vnpu_at_view_of(out, nsq, sq, strides, 0);
	vnpu_at_release(out);
	return v;
}

/* t (consumed) in the memory format `like` suggests: channels_last for a
 * 4-d tensor of that layout, else contiguous; a copy only where t's
 * layout differs. */
static inline struct vnpu_at_tensor *npk_like_format(const char *name,
						     struct vnpu_at_tensor *t,
						     const struct vnpu_at_tensor *like)
{
	int64_t want[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *r;

	if (!t)
		return NULL;
	if (t->ndim == 4 && vnpu_at_channels_last_like(like))
		vnpu_at_channels_last_strides(t->sizes, want);
	else
		vnpu_at_contiguous_strides(t->ndim, t->sizes, want);
	if (!memcmp(want, t->strides, t->ndim * sizeof(*want)))
		return t;
	r = vnpu_at_empty_strided(t->ndim, t->sizes, want,
				  (enum vnpu_at_dtype)t->dtype,
				  vnpu_npu_device());
	if (r && !vnpu_npu_copy(name, r, t)) {
		vnpu_at_release(r);
		r = NULL;
	}
	vnpu_at_release(t);
	return r;
}

#endif /* VNPU_NPU_OPS_COMMON_H */
