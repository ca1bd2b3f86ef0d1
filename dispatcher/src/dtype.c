// SPDX-License-Identifier: MIT
/* dtypes, devices and scalars. */
#include <math.h>
#include <stdatomic.h>
#include "dispatch_internal.h"

static atomic_int default_dtype = VNPU_AT_F32;

enum vnpu_at_dtype vnpu_at_default_dtype(void)
{
	return (enum vnpu_at_dtype)atomic_load_explicit(&default_dtype,
							memory_order_relaxed);
}

bool vnpu_at_set_default_dtype(enum vnpu_at_dtype dtype)
{
	if (!vnpu_at_dtype_is_float(dtype)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "set_default_dtype: only floating-point types are supported as the default type, not %s",
				  vnpu_at_dtype_name(dtype));
		return false;
	}
	atomic_store_explicit(&default_dtype, dtype, memory_order_relaxed);
	return true;
}

size_t vnpu_at_dtype_size(enum vnpu_at_dtype dtype)
{
	switch (dtype) {
	case VNPU_AT_U8:
	case VNPU_AT_I8:
	case VNPU_AT_BOOL:
		return 1;
	case VNPU_AT_F16:
	case VNPU_AT_BF16:
	case VNPU_AT_I16:
		return 2;
	case VNPU_AT_I32:
	case VNPU_AT_F32:
		return 4;
	case VNPU_AT_I64:
	case VNPU_AT_F64:
		return 8;
	default:
		return 0;
	}
}

bool vnpu_at_dtype_valid(enum vnpu_at_dtype dtype)
{
	return vnpu_at_dtype_size(dtype) != 0;
}

const char *vnpu_at_dtype_name(enum vnpu_at_dtype dtype)
{
	switch (dtype) {
	case VNPU_AT_U8: return "uint8";
	case VNPU_AT_I8: return "int8";
	case VNPU_AT_I16: return "int16";
	case VNPU_AT_I32: return "int32";
	case VNPU_AT_I64: return "int64";
	case VNPU_AT_F16: return "float16";
	case VNPU_AT_F32: return "float32";
	case VNPU_AT_F64: return "float64";
	case VNPU_AT_BOOL: return "bool";
	case VNPU_AT_BF16: return "bfloat16";
	default: return "invalid";
	}
}

bool vnpu_at_dtype_is_float(enum vnpu_at_dtype dtype)
{
	return dtype == VNPU_AT_F16 || dtype == VNPU_AT_BF16 ||
	       dtype == VNPU_AT_F32 || dtype == VNPU_AT_F64;
}

/* Category ranks: bool < integers < floats; within a category the wider
 * type wins; f16 with bf16 gives f32 (as PyTorch). */
static int rank(enum vnpu_at_dtype d)
{
	switch (d) {
	case VNPU_AT_BOOL: return 0;
	case VNPU_AT_U8: return 1;
	case VNPU_AT_I8: return 2;
	case VNPU_AT_I16: return 3;
	case VNPU_AT_I32: return 4;
	case VNPU_AT_I64: return 5;
	case VNPU_AT_F16: return 6;
	case VNPU_AT_BF16: return 6;
	case VNPU_AT_F32: return 7;
	case VNPU_AT_F64: return 8;
	default: return -1;
	}
}

enum vnpu_at_dtype vnpu_at_promote(enum vnpu_at_dtype a, enum vnpu_at_dtype b)
{
	if (a == b)
		return a;
	if ((a == VNPU_AT_F16 && b == VNPU_AT_BF16) ||
	    (a == VNPU_AT_BF16 && b == VNPU_AT_F16))
		return VNPU_AT_F32;
	/* neither holds the other's range: the next wider signed type */
	if ((a == VNPU_AT_U8 && b == VNPU_AT_I8) ||
	    (a == VNPU_AT_I8 && b == VNPU_AT_U8))
		return VNPU_AT_I16;
	return rank(a) >= rank(b) ? a : b;
}

double vnpu_at_scalar_to_double(struct vnpu_at_scalar s)
{
	switch (s.kind) {
	case VNPU_AT_SCALAR_INT: return (double)s.i;
	case VNPU_AT_SCALAR_DOUBLE: return s.d;
	case VNPU_AT_SCALAR_BOOL: return s.b ? 1.0 : 0.0;
	default: return 0.0;
	}
}

int64_t vnpu_at_scalar_to_int(struct vnpu_at_scalar s)
{
	switch (s.kind) {
	case VNPU_AT_SCALAR_INT: return s.i;
	case VNPU_AT_SCALAR_DOUBLE:
		if (!(s.d == s.d))
			return 0;
		if (s.d >= 9.2233720368547758e18)
			return INT64_MAX;
		if (s.d <= -9.2233720368547758e18)
			return INT64_MIN;
		return (int64_t)s.d;
	case VNPU_AT_SCALAR_BOOL: return s.b;
	default: return 0;
	}
}

/* C++'s name of each dtype, as PyTorch's messages print it. */
static const char *cxx_name(enum vnpu_at_dtype dt)
{
	switch (dt) {
	case VNPU_AT_U8: return "uint8_t";
	case VNPU_AT_I8: return "int8_t";
	case VNPU_AT_I16: return "int16_t";
	case VNPU_AT_I32: return "int";
	case VNPU_AT_I64: return "int64_t";
	case VNPU_AT_F16: return "c10::Half";
	case VNPU_AT_BF16: return "c10::BFloat16";
	case VNPU_AT_F32: return "float";
	case VNPU_AT_F64: return "double";
	case VNPU_AT_BOOL: return "bool";
	default: return "?";
	}
}

bool vnpu_at_scalar_fits(struct vnpu_at_scalar s, enum vnpu_at_dtype dtype)
{
	/* the largest finite value of each float dtype, the range of each
	 * integer one (c10::overflows compares with these) */
	double lo = 0, hi = 0;
	bool ok;

	switch (dtype) {
	case VNPU_AT_U8: lo = 0; hi = 255; break;
	case VNPU_AT_I8: lo = -128; hi = 127; break;
	case VNPU_AT_I16: lo = -32768; hi = 32767; break;
	case VNPU_AT_I32: lo = -2147483648.0; hi = 2147483647.0; break;
	case VNPU_AT_I64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
	case VNPU_AT_F16: hi = 65504.0; lo = -hi; break;
	case VNPU_AT_BF16: hi = 3.3895313892515355e38; lo = -hi; break;
	case VNPU_AT_F32: hi = 3.4028234663852886e38; lo = -hi; break;
	default: return true;	/* bool, f64 */
	}
	if (s.kind == VNPU_AT_SCALAR_BOOL || s.kind == VNPU_AT_SCALAR_NONE)
		return true;
	if (s.kind == VNPU_AT_SCALAR_INT) {
		/* a negative integer wraps into uint8 (a - b as a + 255 * b) */
		ok = dtype == VNPU_AT_U8 ? s.i >= -255 && s.i <= 255 :
		     dtype == VNPU_AT_I64 ? true :
		     (double)s.i >= lo && (double)s.i <= hi;
	} else if (s.d != s.d || s.d == INFINITY || s.d == -INFINITY) {
		ok = vnpu_at_dtype_is_float(dtype);
	} else {
		ok = s.d >= lo && s.d <= hi;
	}
	if (!ok)
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "value cannot be converted to type %s without overflow",
				  cxx_name(dtype));
	return ok;
}

int64_t vnpu_at_scalar_to_int_as(struct vnpu_at_scalar s,
				 enum vnpu_at_dtype dtype)
{
	if (dtype != VNPU_AT_BOOL)
		return vnpu_at_scalar_to_int(s);
	switch (s.kind) {
	case VNPU_AT_SCALAR_INT: return s.i != 0;
	case VNPU_AT_SCALAR_DOUBLE: return s.d != 0;	/* NaN != 0 */
	case VNPU_AT_SCALAR_BOOL: return s.b;
	default: return 0;
	}
}
