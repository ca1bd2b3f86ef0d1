/* SPDX-License-Identifier: MIT */
/*
 * Element types: sizes, half-precision conversions and generic loads and
 * stores used by kernels that are not specialised for a dtype.
 */
#ifndef VNPU_KERNELS_DTYPE_H
#define VNPU_KERNELS_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "vnpu/kernel_abi.h"

/* Bytes per element, or 0 for an unknown dtype. */
static inline uint32_t vnpu_dtype_size(uint32_t dtype)
{
	switch (dtype) {
	case VNPU_DTYPE_F32:
	case VNPU_DTYPE_I32:
		return 4;
	case VNPU_DTYPE_F16:
	case VNPU_DTYPE_BF16:
	case VNPU_DTYPE_I16:
		return 2;
	case VNPU_DTYPE_I8:
	case VNPU_DTYPE_U8:
	case VNPU_DTYPE_BOOL:
		return 1;
	case VNPU_DTYPE_I64:
	case VNPU_DTYPE_F64:
		return 8;
	default:
		return 0;
	}
}

/* The float dtypes computed in f32: F32, F16 and BF16. Not F64, which no
 * kernel may compute in f32: the vector kernels give it paths of its own in
 * double (tested for before this), and every kernel gating on this
 * predicate alone refuses it. */
static inline bool vnpu_dtype_is_float(uint32_t dtype)
{
	return dtype == VNPU_DTYPE_F32 || dtype == VNPU_DTYPE_F16 ||
	       dtype == VNPU_DTYPE_BF16;
}

/* Any floating-point dtype, F64 included: for what floats share whatever
 * their precision (NaN, fractional alpha, no bitwise ops). */
static inline bool vnpu_dtype_is_floating(uint32_t dtype)
{
	return vnpu_dtype_is_float(dtype) || dtype == VNPU_DTYPE_F64;
}

static inline uint32_t vnpu_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float vnpu_bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* IEEE binary16 -> binary32, exact (subnormals, inf and NaN included). */
static inline float vnpu_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t man = h & 0x3ffu;

	if (exp == 0x1f)
		return vnpu_bits_f32(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {
		/* zero or subnormal: man * 2^-24 is exact in f32 */
		float f = (float)man * 0x1p-24f;

		return sign ? -f : f;
	}
	return vnpu_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

/* binary32 -> binary16, round to nearest even, overflow to inf, NaN kept. */
static inline uint16_t vnpu_f32_to_f16(float f)
{
	uint32_t u = vnpu_f32_bits(f);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t abs = u & 0x7fffffffu;

	if (abs >= 0x7f800000u) /* inf or NaN (quiet, keep top payload bit) */
		return (uint16_t)(sign | 0x7c00u |
				  (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0));
	if (abs >= 0x477ff000u) /* rounds to >= 65520: inf */
		return (uint16_t)(sign | 0x7c00u);
	if (abs < 0x38800000u) { /* below 2^-14: subnormal or zero */
		/* scale to units of 2^-24 and let the FPU round to even */
		float m = vnpu_bits_f32(abs) * 0x1p24f;
		uint32_t r = (uint32_t)nearbyintf(m);

		return (uint16_t)(sign | r);
	}
	/* normal: round the 13 dropped bits to nearest even */
	uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);

	return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

static inline float vnpu_bf16_to_f32(uint16_t b)
{
	return vnpu_bits_f32((uint32_t)b << 16);
}

/* binary32 -> bfloat16, round to nearest even, NaN stays NaN. */
static inline uint16_t vnpu_f32_to_bf16(float f)
{
	uint32_t u = vnpu_f32_bits(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/*
 * binary64 -> binary32 rounding to odd: the value truncated toward zero,
 * with the lowest bit set when anything nonzero was cut off. Rounding that
 * to nearest even in a format of p <= 22 significant bits gives the double
 * correctly rounded to that format (round-to-odd with >= p + 2 bits; the
 * f16 and bf16 grids, subnormals and overflow thresholds included, are
 * coarsenings of the f32 grid), so double -> f16/bf16 goes through it
 * without the double rounding of double -> f32 (nearest) -> f16. NaN and
 * infinities convert as (float) does.
 */
static inline float vnpu_f64_to_f32_odd(double d)
{
	float f = (float)d;
	uint32_t u;

	if (d != d || (double)f == d)
		return f;
	u = vnpu_f32_bits(f);
	if (fabs((double)f) > fabs(d))
		u--; /* rounded away from zero: the magnitude below it */
	return vnpu_bits_f32(u | 1u);
}

/* binary64 -> binary16, round to nearest even, overflow to inf, NaN kept. */
static inline uint16_t vnpu_f64_to_f16(double d)
{
	return vnpu_f32_to_f16(vnpu_f64_to_f32_odd(d));
}

/* binary64 -> bfloat16, round to nearest even, NaN stays NaN. */
static inline uint16_t vnpu_f64_to_bf16(double d)
{
	return vnpu_f32_to_bf16(vnpu_f64_to_f32_odd(d));
}

/* Generic element access for the non-specialised paths. `p` points at the
 * element; the float path converts through double, the integer one through
 * int64_t. */
static inline double vnpu_load_f64(const void *p, uint32_t dtype)
{
	switch (dtype) {
	case VNPU_DTYPE_F64: { double v; memcpy(&v, p, 8); return v; }
	case VNPU_DTYPE_F32: { float v; memcpy(&v, p, 4); return v; }
	case VNPU_DTYPE_F16: { uint16_t v; memcpy(&v, p, 2); return vnpu_f16_to_f32(v); }
	case VNPU_DTYPE_BF16: { uint16_t v; memcpy(&v, p, 2); return vnpu_bf16_to_f32(v); }
	case VNPU_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case VNPU_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
	case VNPU_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
	case VNPU_DTYPE_I8: return *(const int8_t *)p;
	case VNPU_DTYPE_U8: return *(const uint8_t *)p;
	case VNPU_DTYPE_BOOL: return *(const uint8_t *)p != 0;
	default: return 0;
	}
}

static inline int64_t vnpu_load_i64(const void *p, uint32_t dtype)
{
	switch (dtype) {
	case VNPU_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case VNPU_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
	case VNPU_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return v; }
	case VNPU_DTYPE_I8: return *(const int8_t *)p;
	case VNPU_DTYPE_U8: return *(const uint8_t *)p;
	case VNPU_DTYPE_BOOL: return *(const uint8_t *)p != 0;
	default: {
		/* float to integer: truncate toward zero, saturate, NaN -> 0 */
		double d = vnpu_load_f64(p, dtype);

		if (d != d)
			return 0;
		if (d >= 9223372036854775807.0)
			return INT64_MAX;
		if (d <= -9223372036854775808.0)
			return INT64_MIN;
		return (int64_t)d;
	}
	}
}

static inline int64_t vnpu_saturate(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Stores an integer value, saturating to the destination's range. */
static inline void vnpu_store_i64(void *p, uint32_t dtype, int64_t v)
{
	switch (dtype) {
	case VNPU_DTYPE_F64: { double d = (double)v; memcpy(p, &d, 8); break; }
	case VNPU_DTYPE_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
	case VNPU_DTYPE_F16: { uint16_t h = vnpu_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
	case VNPU_DTYPE_BF16: { uint16_t h = vnpu_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
	case VNPU_DTYPE_I32: { int32_t i = (int32_t)vnpu_saturate(v, INT32_MIN, INT32_MAX); memcpy(p, &i, 4); break; }
	case VNPU_DTYPE_I16: { int16_t i = (int16_t)vnpu_saturate(v, INT16_MIN, INT16_MAX); memcpy(p, &i, 2); break; }
	case VNPU_DTYPE_I64: memcpy(p, &v, 8); break;
	case VNPU_DTYPE_I8: *(int8_t *)p = (int8_t)vnpu_saturate(v, INT8_MIN, INT8_MAX); break;
	case VNPU_DTYPE_U8: *(uint8_t *)p = (uint8_t)vnpu_saturate(v, 0, UINT8_MAX); break;
	case VNPU_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
	default: break;
	}
}

/* Stores a float value; integer destinations truncate and saturate. */
static inline void vnpu_store_f64(void *p, uint32_t dtype, double v)
{
	switch (dtype) {
	case VNPU_DTYPE_F64: memcpy(p, &v, 8); break;
	case VNPU_DTYPE_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
	case VNPU_DTYPE_F16: { uint16_t h = vnpu_f64_to_f16(v); memcpy(p, &h, 2); break; }
	case VNPU_DTYPE_BF16: { uint16_t h = vnpu_f64_to_bf16(v); memcpy(p, &h, 2); break; }
	case VNPU_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
	default:
		if (v != v)
			v = 0;
		vnpu_store_i64(p, dtype, v >= 9223372036854775807.0 ? INT64_MAX :
					 v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v);
		break;
	}
}

#endif /* VNPU_KERNELS_DTYPE_H */
