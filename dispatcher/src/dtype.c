// SPDX-License-Identifier: MIT
/* dtypes, devices and scalars. */
#include "dispatch_internal.h"

size_t vnpu_at_dtype_size(enum vnpu_at_dtype dtype)
{
	switch (dtype) {
	case VNPU_AT_U8:
	case VNPU_AT_I8:
	case VNPU_AT_BOOL:
		return 1;
	case VNPU_AT_F16:
	case VNPU_AT_BF16:
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
	case VNPU_AT_I32: return 3;
	case VNPU_AT_I64: return 4;
	case VNPU_AT_F16: return 5;
	case VNPU_AT_BF16: return 5;
	case VNPU_AT_F32: return 6;
	case VNPU_AT_F64: return 7;
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
	/* u8 with i8 gives i16 in PyTorch; there is no i16 here: i32. */
	if ((a == VNPU_AT_U8 && b == VNPU_AT_I8) ||
	    (a == VNPU_AT_I8 && b == VNPU_AT_U8))
		return VNPU_AT_I32;
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
