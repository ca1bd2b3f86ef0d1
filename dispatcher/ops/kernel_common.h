/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the kernels helper's op kernels (CPU and NPU):
 * dtype categories, Scalar promotion, reduction geometry. Static inline so
 * each kernel file stays self-contained.
 */
#ifndef VNPU_KERNEL_COMMON_H
#define VNPU_KERNEL_COMMON_H

#include "op_util.h"

/* bool < integers < floats, as PyTorch's type categories. */
static inline int kc_category(enum vnpu_at_dtype dt)
{
	if (dt == VNPU_AT_BOOL)
		return 0;
	return vnpu_at_dtype_is_float(dt) ? 2 : 1;
}

static inline int kc_scalar_category(struct vnpu_at_scalar s)
{
	switch (s.kind) {
	case VNPU_AT_SCALAR_BOOL:
		return 0;
	case VNPU_AT_SCALAR_INT:
		return 1;
	default:
		return 2;
	}
}

/*
 * Result dtype of (tensor, Scalar): a wrapped number only raises the
 * category (int tensor + 2.5 -> the default dtype, bool tensor + 1 ->
 * int64), as PyTorch's result_type.
 */
static inline enum vnpu_at_dtype kc_scalar_result(enum vnpu_at_dtype dt,
						  struct vnpu_at_scalar s)
{
	int sc = kc_scalar_category(s);

	if (s.kind == VNPU_AT_SCALAR_NONE || sc <= kc_category(dt))
		return dt;
	return sc == 2 ? vnpu_at_default_dtype() : VNPU_AT_I64;
}

/* The dtype a float-only op computes in: ints and bool become the
 * default dtype (float32 unless PyTorch's was changed). */
static inline enum vnpu_at_dtype kc_float_of(enum vnpu_at_dtype dt)
{
	return vnpu_at_dtype_is_float(dt) ? dt : vnpu_at_default_dtype();
}

static inline bool kc_is_int(enum vnpu_at_dtype dt)
{
	return !vnpu_at_dtype_is_float(dt);
}

/* x rounded to dtype (f16/bf16/f32 precision; ints wrap as a cast). */
static inline double kc_round(enum vnpu_at_dtype dt, double x)
{
	uint64_t buf = 0;

	vnpu_at_store(dt, &buf, x);
	return vnpu_at_load(dt, &buf);
}

/*
 * The dtype PyTorch's mul and div kernels compute in when dt is float16 or
 * bfloat16 and their second operand b is a scalar of another dtype (a
 * Python number, a 0-dim tensor): float32, with b as it was, never
 * rounded to dt (x / 1e5 in float16 is not x / inf). Otherwise dt. Add
 * and sub round b to dt like any operand.
 */
static inline enum vnpu_at_dtype kc_mul_div_compute(enum vnpu_at_dtype dt,
						    const struct vnpu_at_tensor *b)
{
	if ((dt == VNPU_AT_F16 || dt == VNPU_AT_BF16) && b->ndim == 0 &&
	    b->dtype != dt)
		return VNPU_AT_F32;
	return dt;
}

static inline int64_t kc_round_int(enum vnpu_at_dtype dt, int64_t x)
{
	uint64_t buf = 0;

	vnpu_at_store_int(dt, &buf, x);
	return vnpu_at_load_int(dt, &buf);
}

/*
 * A Python scalar as TensorIterator hands it to a comparison computed in
 * dt (the common dtype, kc_scalar_result): the wrapped number is cast
 * with C++'s conversion, unchecked, unlike fill_'s: a float rounds
 * (through float, as c10::Half and BFloat16 convert) and overflows to
 * +-inf (f16 < 1e30 compares with inf), an integer wraps (int8 == 1000
 * compares with -24), as PyTorch 1.13's CPU does.
 */
static inline struct vnpu_at_scalar kc_scalar_cast(struct vnpu_at_scalar s,
						   enum vnpu_at_dtype dt)
{
	if (s.kind == VNPU_AT_SCALAR_NONE)
		return s;
	if (dt == VNPU_AT_BOOL)
		return VNPU_AT_BOOLV(vnpu_at_scalar_to_int_as(s, dt) != 0);
	if (vnpu_at_dtype_is_float(dt)) {
		double v = s.kind == VNPU_AT_SCALAR_DOUBLE ? s.d :
			   s.kind == VNPU_AT_SCALAR_BOOL ? (double)s.b :
			   dt == VNPU_AT_F64 ? (double)s.i : (double)(float)s.i;

		return VNPU_AT_DOUBLE(kc_round(dt, v));
	}
	/* an integer dt: kc_scalar_result gives a float one for a float s */
	return VNPU_AT_INT(kc_round_int(dt, vnpu_at_scalar_to_int(s)));
}

/* Reads element i of a 1-D int tensor (host pointer). */
static inline int64_t kc_load_index(const struct vnpu_at_tensor *t, int64_t i)
{
	const char *p = vnpu_at_data(t);
	int64_t stride = t->ndim ? t->strides[0] : 0;

	return vnpu_at_load_int(t->dtype,
				p + i * stride *
					    (int64_t)vnpu_at_dtype_size(t->dtype));
}

/*
 * Reduction geometry: the kept dims (in order) index the output, the
 * reduced dims are walked for every output element. Byte strides.
 */
struct kc_reduce_plan {
	uint32_t nkept, nred;
	int64_t kept_sizes[VNPU_AT_MAX_DIMS], kept_strides[VNPU_AT_MAX_DIMS];
	int64_t red_sizes[VNPU_AT_MAX_DIMS], red_strides[VNPU_AT_MAX_DIMS];
	int64_t nout, nred_elems;
	uint32_t out_ndim;	/* with keepdim or without */
	int64_t out_sizes[VNPU_AT_MAX_DIMS];
};

static inline void kc_reduce_plan_init(struct kc_reduce_plan *rp,
				       const struct vnpu_at_tensor *t,
				       uint32_t mask, bool keepdim)
{
	int64_t isz = (int64_t)vnpu_at_dtype_size(t->dtype);

	memset(rp, 0, sizeof(*rp));
	rp->nout = 1;
	rp->nred_elems = 1;
	for (uint32_t d = 0; d < t->ndim; d++) {
		if (mask >> d & 1) {
			rp->red_sizes[rp->nred] = t->sizes[d];
			rp->red_strides[rp->nred++] = t->strides[d] * isz;
			rp->nred_elems *= t->sizes[d];
			if (keepdim)
				rp->out_sizes[rp->out_ndim++] = 1;
		} else {
			rp->kept_sizes[rp->nkept] = t->sizes[d];
			rp->kept_strides[rp->nkept++] = t->strides[d] * isz;
			rp->nout *= t->sizes[d];
			rp->out_sizes[rp->out_ndim++] = t->sizes[d];
		}
	}
}

/* Byte offset of output element o (row-major over the kept dims). */
static inline int64_t kc_reduce_outer(const struct kc_reduce_plan *rp,
				      int64_t o)
{
	int64_t off = 0;

	for (uint32_t k = rp->nkept; k-- > 0;) {
		off += (o % rp->kept_sizes[k]) * rp->kept_strides[k];
		o /= rp->kept_sizes[k];
	}
	return off;
}

/* Byte offset of the r-th reduced element (row-major over reduced dims). */
static inline int64_t kc_reduce_inner(const struct kc_reduce_plan *rp,
				      int64_t r)
{
	int64_t off = 0;

	for (uint32_t k = rp->nred; k-- > 0;) {
		off += (r % rp->red_sizes[k]) * rp->red_strides[k];
		r /= rp->red_sizes[k];
	}
	return off;
}

#endif /* VNPU_KERNEL_COMMON_H */
