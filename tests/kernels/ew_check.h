/* SPDX-License-Identifier: MIT */
/*
 * Test-side helpers for the elementwise, reduction, normalisation and
 * pooling kernel tests: element encoding independent of kernels/dtype.h
 * (f16 by frexp/ldexp arithmetic; bf16 by truncating f32), random descriptors
 * with transposed/padded strides and offsets, and index math for the
 * references.
 */
#ifndef VNPU_TESTS_KERNELS_EW_CHECK_H
#define VNPU_TESTS_KERNELS_EW_CHECK_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAXD VNPU_MAX_DIMS

static const uint32_t all_dtypes[] = {
	VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16, VNPU_DTYPE_I8,
	VNPU_DTYPE_I32, VNPU_DTYPE_U8,	VNPU_DTYPE_I64,	 VNPU_DTYPE_BOOL,
	VNPU_DTYPE_I16, VNPU_DTYPE_F64,
};
#define N_ALL_DTYPES (sizeof(all_dtypes) / sizeof(all_dtypes[0]))

static const uint32_t float_dtypes[] = {VNPU_DTYPE_F32, VNPU_DTYPE_F16,
					VNPU_DTYPE_BF16};
static const uint32_t block_counts[] = {1, 3, 7};

/* ---- element encoding, independent of the kernel library ---- */

/* binary16 by arithmetic (frexp/ldexp), independent of kernels/dtype.h's
 * bit manipulation: the two definitions check each other. */
static inline double ew_half_decode(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e == 0 ? ldexp(m, -24) :
		   e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);

	return (h & 0x8000) ? -v : v;
}

/* Round to nearest even; overflow to infinity. */
static inline uint16_t ew_half_encode(double v)
{
	uint16_t sign = signbit(v) ? 0x8000 : 0;
	double a = fabs(v), q;
	int e;

	if (isnan(v))
		return sign | 0x7e00; /* keeps the sign, as copysign reads */
	if (a >= 65520.0)
		return sign | 0x7c00;
	frexp(a, &e);		/* a = f * 2^e, f in [0.5, 1) */
	e = e - 1 < -14 ? -14 : e - 1;	/* unbiased exponent, subnormal floor */
	q = nearbyint(ldexp(a, 10 - e));	/* 11 significant bits */
	if (q >= 2048) {	/* rounding carried into the next binade */
		q /= 2;
		e++;
	}
	if (q < 1024)		/* subnormal (e == -14) */
		return sign | (uint16_t)q;
	return sign | (uint16_t)((e + 15) << 10) | (uint16_t)(q - 1024);
}

/* v rounded to nearest even in a binary format of p significant bits,
 * least normal exponent emin and largest finite value max (infinity
 * beyond it), straight from the double: an independent reference for the
 * device's double -> f32/f16/bf16 conversions. */
static inline double ew_round_to(double v, int p, int emin, double max)
{
	double a = fabs(v), r;
	int e;

	if (isnan(v) || isinf(v) || a == 0)
		return v;
	frexp(a, &e);
	e = e - 1 < emin ? emin : e - 1;
	r = ldexp(nearbyint(ldexp(a, p - 1 - e)), e - (p - 1));
	if (r > max)
		r = INFINITY;
	return copysign(r, v);
}

static inline double ew_round_f16(double v)
{
	return ew_round_to(v, 11, -14, 65504.0);
}

static inline double ew_round_bf16(double v)
{
	return ew_round_to(v, 8, -126, 0x1.fep127);
}

static inline double ew_round_f32(double v)
{
	return ew_round_to(v, 24, -126, 0x1.fffffep127);
}

static inline size_t esize(uint32_t dt)
{
	switch (dt) {
	case VNPU_DTYPE_F32:
	case VNPU_DTYPE_I32:
		return 4;
	case VNPU_DTYPE_F16:
	case VNPU_DTYPE_BF16:
	case VNPU_DTYPE_I16:
		return 2;
	case VNPU_DTYPE_I64:
	case VNPU_DTYPE_F64:
		return 8;
	default:
		return 1;
	}
}

/* Any float dtype, F64 included. */
static inline int is_float(uint32_t dt)
{
	return dt == VNPU_DTYPE_F32 || dt == VNPU_DTYPE_F16 ||
	       dt == VNPU_DTYPE_BF16 || dt == VNPU_DTYPE_F64;
}

/* Reads element `off` (in elements) of a buffer as double. */
static inline double get_val(const void *buf, uint32_t dt, uint64_t off)
{
	const char *p = (const char *)buf + off * esize(dt);
	float f;
	uint32_t u;
	uint16_t h;
	int32_t i32;
	int64_t i64;
	double d;

	switch (dt) {
	case VNPU_DTYPE_F64:
		memcpy(&d, p, 8);
		return d;
	case VNPU_DTYPE_F32:
		memcpy(&f, p, 4);
		return f;
	case VNPU_DTYPE_F16:
		memcpy(&h, p, 2);
		return ew_half_decode(h);
	case VNPU_DTYPE_BF16:
		memcpy(&h, p, 2);
		u = (uint32_t)h << 16;
		memcpy(&f, &u, 4);
		return f;
	case VNPU_DTYPE_I32:
		memcpy(&i32, p, 4);
		return i32;
	case VNPU_DTYPE_I64:
		memcpy(&i64, p, 8);
		return (double)i64;
	case VNPU_DTYPE_I16:
		memcpy(&h, p, 2);
		return (int16_t)h;
	case VNPU_DTYPE_I8:
		return (int8_t)*p;
	default: /* U8, BOOL */
		return (uint8_t)*p;
	}
}

static inline int64_t get_int(const void *buf, uint32_t dt, uint64_t off)
{
	const char *p = (const char *)buf + off * esize(dt);
	int64_t i64;

	if (dt == VNPU_DTYPE_I64) {
		memcpy(&i64, p, 8);
		return i64;
	}
	return (int64_t)get_val(buf, dt, off);
}

/* An int64 result as an integer dtype stores it: two's complement
 * wrapping to its width, BOOL nonzero as 1. */
static inline int64_t ew_wrap_int(int64_t v, uint32_t dt)
{
	uint64_t u = (uint64_t)v;

	switch (dt) {
	case VNPU_DTYPE_I8:
		return (int8_t)(uint8_t)(u & 0xff);
	case VNPU_DTYPE_U8:
		return (uint8_t)(u & 0xff);
	case VNPU_DTYPE_BOOL:
		return v != 0;
	case VNPU_DTYPE_I16:
		return (int16_t)(uint16_t)(u & 0xffff);
	case VNPU_DTYPE_I32:
		return (int32_t)(uint32_t)(u & 0xffffffffu);
	default:
		return v;
	}
}

/* Writes v, which must be representable (floats: rounded by the compiler
 * for f16, truncated for bf16). */
static inline void put_val(void *buf, uint32_t dt, uint64_t off, double v)
{
	char *p = (char *)buf + off * esize(dt);
	float f = (float)v;
	uint32_t u;
	uint16_t h;
	int32_t i32;
	int64_t i64;

	switch (dt) {
	case VNPU_DTYPE_F64:
		memcpy(p, &v, 8);
		break;
	case VNPU_DTYPE_F32:
		memcpy(p, &f, 4);
		break;
	case VNPU_DTYPE_F16:
		h = ew_half_encode(v);
		memcpy(p, &h, 2);
		break;
	case VNPU_DTYPE_BF16:
		memcpy(&u, &f, 4);
		h = (uint16_t)(u >> 16);
		memcpy(p, &h, 2);
		break;
	case VNPU_DTYPE_I32:
		i32 = (int32_t)v;
		memcpy(p, &i32, 4);
		break;
	case VNPU_DTYPE_I64:
		i64 = (int64_t)v;
		memcpy(p, &i64, 8);
		break;
	case VNPU_DTYPE_I16:
		h = (uint16_t)(int16_t)v;
		memcpy(p, &h, 2);
		break;
	case VNPU_DTYPE_I8:
		*p = (char)(int8_t)v;
		break;
	case VNPU_DTYPE_BOOL:
		*p = v != 0;
		break;
	default:
		*p = (char)(uint8_t)v;
		break;
	}
}

/* Uniform in [lo, hi] with all 53 bits of a double random. */
static inline double rand_double(double lo, double hi)
{
	uint64_t u = ((uint64_t)kt_rand() << 21) ^ kt_rand();

	return lo + (hi - lo) * ldexp((double)(u & ((1ull << 53) - 1)), -53);
}

/* A random value typical for the dtype (floats in [lo, hi]; F64 with every
 * bit of the significand random, so that no result is exact in f32). */
static inline double rand_val(uint32_t dt, double lo, double hi)
{
	switch (dt) {
	case VNPU_DTYPE_F64:
		return rand_double(lo, hi);
	case VNPU_DTYPE_I8:
		return (double)kt_rand_range(-128, 127);
	case VNPU_DTYPE_U8:
		return (double)kt_rand_range(0, 255);
	case VNPU_DTYPE_BOOL:
		return (double)kt_rand_range(0, 1);
	case VNPU_DTYPE_I16:
		return (double)kt_rand_range(-32768, 32767);
	case VNPU_DTYPE_I32:
		return (double)kt_rand_range(-100000, 100000);
	case VNPU_DTYPE_I64:
		return (double)kt_rand_range(-1000000, 1000000);
	default:
		return kt_rand_float((float)lo, (float)hi);
	}
}

static inline int close_to(double got, double ref, double rtol, double atol)
{
	if (isnan(ref))
		return isnan(got);
	if (isinf(ref))
		return got == ref;
	return fabs(got - ref) <= atol + rtol * fabs(ref);
}

static inline double rtol_of(uint32_t dt)
{
	switch (dt) {
	case VNPU_DTYPE_F32:
		return 2e-6;
	case VNPU_DTYPE_F16:
		return 1.5e-3;
	case VNPU_DTYPE_BF16:
		return 1e-2;
	case VNPU_DTYPE_F64:
		return 0x1p-50; /* 4 ulp: transcendental results */
	default:
		return 0;
	}
}

/* Bitwise equality of two doubles, any NaN matching any NaN: the F64
 * results that must be exactly C's double arithmetic. */
static inline int same_double(double got, double want)
{
	if (isnan(want))
		return isnan(got);
	return memcmp(&got, &want, sizeof(got)) == 0;
}

/* ---- operands: descriptors with random layouts and their buffers ---- */

enum {
	LAY_DENSE = 0,
	LAY_PERMUTE = 1u << 0, /* transposed strides */
	LAY_GAPS = 1u << 1,    /* padded strides and an offset */
	LAY_ZERO = 1u << 2,    /* some dims stride 0 (inputs only) */
};

struct operand {
	struct vnpu_tensor t;
	uint64_t nelem; /* elements the buffer holds */
};

static inline uint64_t numel_of(uint32_t ndim, const int64_t *sizes)
{
	uint64_t n = 1;

	for (uint32_t i = 0; i < ndim; i++)
		n *= (uint64_t)sizes[i];
	return n;
}

static inline struct operand make_operand(uint32_t buffer, uint32_t dt,
					  uint32_t ndim, const int64_t *sizes,
					  unsigned lay)
{
	struct operand o;
	uint32_t perm[MAXD];
	int64_t stride = 1, last = 0;

	memset(&o, 0, sizeof(o));
	o.t.buffer = buffer;
	o.t.dtype = dt;
	o.t.format = VNPU_FORMAT_ND;
	o.t.ndim = ndim;
	for (uint32_t i = 0; i < ndim; i++) {
		perm[i] = i;
		o.t.sizes[i] = sizes[i];
	}
	if (lay & LAY_PERMUTE)
		for (uint32_t i = ndim; i > 1; i--) {
			uint32_t j = kt_rand() % i, t = perm[i - 1];

			perm[i - 1] = perm[j];
			perm[j] = t;
		}
	for (uint32_t k = ndim; k-- > 0;) {
		uint32_t d = perm[k];

		if ((lay & LAY_GAPS) && kt_rand() % 3 == 0)
			stride += kt_rand_range(1, 3);
		o.t.strides[d] = stride;
		stride *= sizes[d] > 1 ? sizes[d] : 1;
	}
	for (uint32_t d = 0; d < ndim; d++) {
		if (sizes[d] == 1)
			o.t.strides[d] = kt_rand_range(0, 40); /* ignored */
		else if ((lay & LAY_ZERO) && kt_rand() % 3 == 0)
			o.t.strides[d] = 0;
	}
	if (lay & LAY_GAPS)
		o.t.offset = kt_rand_range(0, 7);
	for (uint32_t d = 0; d < ndim; d++)
		if (sizes[d] > 0)
			last += (sizes[d] - 1) * o.t.strides[d];
	o.nelem = (uint64_t)(o.t.offset + last + 1 + kt_rand_range(0, 3));
	return o;
}

/* Buffer for operand o, every element slot filled with random values. */
static inline struct vnpu_kbuf operand_buffer(const struct operand *o,
					      double lo, double hi)
{
	struct vnpu_kbuf b = kt_buffer(o->nelem * esize(o->t.dtype));

	ck_assert_ptr_nonnull(b.ptr);
	for (uint64_t i = 0; i < o->nelem; i++)
		put_val(b.ptr, o->t.dtype, i, rand_val(o->t.dtype, lo, hi));
	return b;
}

/* Element offset of out-index `idx` in t, size-1 dims broadcast. */
static inline uint64_t elem_off(const struct vnpu_tensor *t, const int64_t *idx)
{
	uint64_t off = (uint64_t)t->offset;

	for (uint32_t d = 0; d < t->ndim; d++)
		if (t->sizes[d] != 1)
			off += (uint64_t)(idx[d] * t->strides[d]);
	return off;
}

static inline void unravel(uint64_t lin, uint32_t ndim, const int64_t *sizes,
			   int64_t *idx)
{
	for (uint32_t d = ndim; d-- > 0;) {
		idx[d] = (int64_t)(lin % (uint64_t)sizes[d]);
		lin /= (uint64_t)sizes[d];
	}
}

/* Checks that bytes of `now` outside the elements of t equal `before`. */
static inline void check_untouched(const struct vnpu_tensor *t,
				   const void *before, const void *now,
				   uint64_t bytes)
{
	size_t es = esize(t->dtype);
	unsigned char *mask = calloc(bytes ? bytes : 1, 1);
	uint64_t n = numel_of(t->ndim, t->sizes);
	int64_t idx[MAXD];

	ck_assert_ptr_nonnull(mask);
	for (uint64_t i = 0; i < n; i++) {
		unravel(i, t->ndim, t->sizes, idx);
		memset(mask + elem_off(t, idx) * es, 1, es);
	}
	for (uint64_t i = 0; i < bytes; i++)
		if (!mask[i])
			ck_assert_msg(((const unsigned char *)before)[i] ==
					      ((const unsigned char *)now)[i],
				      "byte %llu outside the output changed",
				      (unsigned long long)i);
	free(mask);
}

static inline void *dup_bytes(const struct vnpu_kbuf *b)
{
	void *p = malloc(b->size ? b->size : 1);

	ck_assert_ptr_nonnull(p);
	memcpy(p, b->ptr, b->size);
	return p;
}

/* A random shape; sizes come from a list that has 0, 1, 15 and 17. */
static inline uint32_t rand_shape(int64_t *sizes, uint32_t max_ndim,
				  int allow_zero)
{
	static const int64_t pick[] = {1, 2, 3, 4, 5, 7, 15, 17, 1, 0};
	uint32_t ndim = (uint32_t)kt_rand_range(0, max_ndim);
	uint64_t n = 1;

	for (uint32_t d = 0; d < ndim; d++) {
		uint32_t k = kt_rand() % (allow_zero ? 10 : 9);

		sizes[d] = pick[k];
		if (n * (uint64_t)pick[k] > 6000)
			sizes[d] = 1;
		n *= (uint64_t)sizes[d];
	}
	return ndim;
}

/* Size-1 dims of `out` chosen at random, for broadcast inputs. */
static inline void broadcast_shape(uint32_t ndim, const int64_t *out,
				   int64_t *in)
{
	for (uint32_t d = 0; d < ndim; d++)
		in[d] = kt_rand() % 3 == 0 ? 1 : out[d];
}

static inline unsigned rand_layout(unsigned extra)
{
	static const unsigned lays[] = {LAY_DENSE, LAY_PERMUTE, LAY_GAPS,
					LAY_PERMUTE | LAY_GAPS};

	return lays[kt_rand() % 4] | (kt_rand() % 2 ? extra : 0);
}

#endif /* VNPU_TESTS_KERNELS_EW_CHECK_H */
