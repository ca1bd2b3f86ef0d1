// SPDX-License-Identifier: MIT
/*
 * BINARY and WHERE with broadcasting. F32, F16 and BF16 compute in f32
 * (ADD/SUB as a + (float)alpha * b), F64 in double (a + alpha * b);
 * MAXIMUM/MINIMUM propagate NaN. Integer dtypes (I8, U8, I16, I32, I64,
 * and BOOL as 0/1) compute in int64 with two's complement wrapping and are
 * stored in their width (BOOL: nonzero is 1), so INT_MIN / -1 gives INT_MIN
 * instead of trapping; integer DIV truncates toward zero and x / 0 is 0,
 * as are FMOD, REMAINDER and FLOOR_DIVIDE by 0. The shifts and GCD work in
 * the dtype's width; the semantics of each op are PyTorch's CPU kernels'
 * (kernel_abi.h).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "activation.h"
#include "elementwise.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct binary_ctx {
	uint32_t op;
	uint32_t dtype; /* of a and b */
	float alpha;
	double dalpha; /* F64 */
	int64_t ialpha;
};

static bool is_compare(uint32_t op)
{
	return op >= VNPU_BINARY_EQ && op <= VNPU_BINARY_GE;
}

static bool is_bitwise(uint32_t op)
{
	return op >= VNPU_BINARY_BITWISE_AND && op <= VNPU_BINARY_BITWISE_XOR;
}

/* Ops taking no BOOL. */
static bool refuses_bool(uint32_t op)
{
	return op >= VNPU_BINARY_POW;
}

/* Ops taking floats only. */
static bool is_float_only(uint32_t op)
{
	switch (op) {
	case VNPU_BINARY_GELU_BACKWARD:
	case VNPU_BINARY_HARDSIGMOID_BACKWARD:
	case VNPU_BINARY_HARDSWISH_BACKWARD:
	case VNPU_BINARY_ATAN2:
	case VNPU_BINARY_COPYSIGN:
	case VNPU_BINARY_LOGADDEXP:
	case VNPU_BINARY_XLOGY:
	case VNPU_BINARY_HYPOT:
	case VNPU_BINARY_NEXTAFTER:
		return true;
	default:
		return false;
	}
}

/* Ops taking integers only. */
static bool is_int_only(uint32_t op)
{
	return is_bitwise(op) || op == VNPU_BINARY_BITWISE_LEFT_SHIFT ||
	       op == VNPU_BINARY_BITWISE_RIGHT_SHIFT || op == VNPU_BINARY_GCD;
}

/*
 * The scalar float ops PyTorch's CPU kernels define by formula, for T =
 * float (S and F empty and f) and double (_f64 and nothing); each
 * comparison and rounding is the one of PyTorch's source (c10's
 * div_floor_floating, the remainder, logaddexp and xlogy kernels).
 */
#define DEFINE_BINARY_FLOAT_FNS(T, S, F)                                       \
	static inline T vnpu_remainder##S(T a, T b)                            \
	{                                                                      \
		T mod = fmod##F(a, b);                                         \
                                                                               \
		if (mod != 0 && (b < 0) != (mod < 0))                          \
			mod += b;                                              \
		return mod;                                                    \
	}                                                                      \
                                                                               \
	static inline T vnpu_floor_divide##S(T a, T b)                         \
	{                                                                      \
		T q = a / b, mod, div, fd;                                     \
                                                                               \
		if (b == 0)                                                    \
			return q;                                              \
		mod = fmod##F(a, b);                                           \
		div = (a - mod) / b;                                           \
		if (mod != 0 && (b < 0) != (mod < 0))                          \
			div -= 1;                                              \
		if (div == 0)                                                  \
			return copysign##F(0, q);                              \
		fd = floor##F(div);                                            \
		if (div - fd > 0.5##F)                                         \
			fd += 1;                                               \
		return fd;                                                     \
	}                                                                      \
                                                                               \
	static inline T vnpu_logaddexp##S(T a, T b)                            \
	{                                                                      \
		T m = a < b ? b : a;                                           \
                                                                               \
		if (isinf(a) && a == b)                                        \
			return a;                                              \
		return m + log1p##F(exp##F(-fabs##F(a - b)));                  \
	}                                                                      \
                                                                               \
	static inline T vnpu_xlogy##S(T a, T b)                                \
	{                                                                      \
		if (b != b)                                                    \
			return b;                                              \
		if (a == 0)                                                    \
			return 0;                                              \
		return a * log##F(b);                                          \
	}

DEFINE_BINARY_FLOAT_FNS(float, , f)
DEFINE_BINARY_FLOAT_FNS(double, _f64, )

/* An f32 value rounded to F16 or BF16 (as f32). */
static float round_half(uint32_t dtype, float v)
{
	if (dtype == VNPU_DTYPE_F16)
		return vnpu_f16_to_f32(vnpu_f32_to_f16(v));
	return vnpu_bf16_to_f32(vnpu_f32_to_bf16(v));
}

/*
 * FLOOR_DIVIDE and XLOGY of F16 and BF16 round every intermediate to the
 * dtype, as PyTorch's CPU kernels do for them (its Vectorized<Half> and
 * <BFloat16> arithmetic for floor_divide's vectorised runs, c10's Half
 * log for xlogy): its results differ from one f32 evaluation rounded
 * once. The steps are vnpu_floor_divide's.
 */
static float floor_divide_half(uint32_t dt, float a, float b)
{
	float q = round_half(dt, a / b), mod, div, fd;

	if (b == 0)
		return q;
	mod = fmodf(a, b); /* exact */
	div = round_half(dt, round_half(dt, a - mod) / b);
	if (mod != 0 && (b < 0) != (mod < 0))
		div = round_half(dt, div - 1);
	if (div == 0)
		return copysignf(0, q);
	fd = floorf(div);
	if (round_half(dt, div - fd) > 0.5f)
		fd = round_half(dt, fd + 1);
	return fd;
}

static void binary_half_rounded(uint32_t op, uint32_t dt, const float *a,
				const float *b, float *o, int64_t n)
{
	if (op == VNPU_BINARY_FLOOR_DIVIDE) {
		for (int64_t i = 0; i < n; i++)
			o[i] = floor_divide_half(dt, a[i], b[i]);
		return;
	}
	for (int64_t i = 0; i < n; i++) /* XLOGY */
		o[i] = b[i] != b[i] ? b[i]
		       : a[i] == 0  ? 0
				    : a[i] * round_half(dt, logf(b[i]));
}

/* The float ops on arrays of T: float (f32 math; S and F empty and f) or
 * double (the F64 path; _f64 and nothing), see activation.h. NEXTAFTER
 * here is F32's and F64's; F16 and BF16 step in their own bits
 * (nextafter_half). */
#define DEFINE_BINARY_FLOAT(name, T, S, F)                                     \
	static void name(uint32_t op, T alpha, const T *a, const T *b, T *o,   \
			 int64_t n)                                            \
	{                                                                      \
		switch (op) {                                                  \
		case VNPU_BINARY_ADD:                                          \
			if (alpha == 1.0##F) {                                 \
				for (int64_t i = 0; i < n; i++)                \
					o[i] = a[i] + b[i];                    \
				return;                                        \
			}                                                      \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] + alpha * b[i];                    \
			return;                                                \
		case VNPU_BINARY_SUB:                                          \
			if (alpha == 1.0##F) {                                 \
				for (int64_t i = 0; i < n; i++)                \
					o[i] = a[i] - b[i];                    \
				return;                                        \
			}                                                      \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] - alpha * b[i];                    \
			return;                                                \
		case VNPU_BINARY_MUL:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] * b[i];                            \
			return;                                                \
		case VNPU_BINARY_DIV:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] / b[i];                            \
			return;                                                \
		case VNPU_BINARY_MAXIMUM:                                      \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] != a[i] || a[i] > b[i] ? a[i]      \
								   : b[i];     \
			return;                                                \
		case VNPU_BINARY_GELU_BACKWARD:                                \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] * vnpu_gelu_grad##S(b[i]);         \
			return;                                                \
		case VNPU_BINARY_HARDSIGMOID_BACKWARD:                         \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = vnpu_hardsigmoid_grad##S(a[i], b[i]);   \
			return;                                                \
		case VNPU_BINARY_HARDSWISH_BACKWARD:                           \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = vnpu_hardswish_grad##S(a[i], b[i]);     \
			return;                                                \
		case VNPU_BINARY_POW:                                          \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = pow##F(a[i], b[i]);                     \
			return;                                                \
		case VNPU_BINARY_ATAN2:                                        \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = atan2##F(a[i], b[i]);                   \
			return;                                                \
		case VNPU_BINARY_COPYSIGN:                                     \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = copysign##F(a[i], b[i]);                \
			return;                                                \
		case VNPU_BINARY_FMOD:                                         \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = fmod##F(a[i], b[i]);                    \
			return;                                                \
		case VNPU_BINARY_REMAINDER:                                    \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = vnpu_remainder##S(a[i], b[i]);          \
			return;                                                \
		case VNPU_BINARY_FLOOR_DIVIDE:                                 \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = vnpu_floor_divide##S(a[i], b[i]);       \
			return;                                                \
		case VNPU_BINARY_LOGADDEXP:                                    \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = vnpu_logaddexp##S(a[i], b[i]);          \
			return;                                                \
		case VNPU_BINARY_XLOGY:                                        \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = vnpu_xlogy##S(a[i], b[i]);              \
			return;                                                \
		case VNPU_BINARY_HYPOT:                                        \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = hypot##F(a[i], b[i]);                   \
			return;                                                \
		case VNPU_BINARY_NEXTAFTER:                                    \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = nextafter##F(a[i], b[i]);               \
			return;                                                \
		default: /* MINIMUM */                                         \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] != a[i] || a[i] < b[i] ? a[i]      \
								   : b[i];     \
			return;                                                \
		}                                                              \
	}

DEFINE_BINARY_FLOAT(binary_f32, float, , f)
DEFINE_BINARY_FLOAT(binary_f64, double, _f64, )

/* Comparisons of two arrays of T into 0/1 bytes. */
#define DEFINE_COMPARE(name, T)                                                \
	static void name(uint32_t op, const T *a, const T *b, uint8_t *o,      \
			 int64_t n)                                            \
	{                                                                      \
		switch (op) {                                                  \
		case VNPU_BINARY_EQ:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] == b[i];                           \
			return;                                                \
		case VNPU_BINARY_NE:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] != b[i];                           \
			return;                                                \
		case VNPU_BINARY_LT:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] < b[i];                            \
			return;                                                \
		case VNPU_BINARY_LE:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] <= b[i];                           \
			return;                                                \
		case VNPU_BINARY_GT:                                           \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] > b[i];                            \
			return;                                                \
		default:                                                       \
			for (int64_t i = 0; i < n; i++)                        \
				o[i] = a[i] >= b[i];                           \
			return;                                                \
		}                                                              \
	}

DEFINE_COMPARE(compare_f32, float)
DEFINE_COMPARE(compare_f64, double)
DEFINE_COMPARE(compare_i64, int64_t)

/* v wrapped to an integer dtype's width, as the dtype would load it
 * (sign-extended, U8 zero-extended). */
static int64_t wrap_to(uint32_t dtype, int64_t v)
{
	switch (dtype) {
	case VNPU_DTYPE_I8:
		return (int8_t)(uint8_t)(uint64_t)v;
	case VNPU_DTYPE_U8:
		return (uint8_t)(uint64_t)v;
	case VNPU_DTYPE_I16:
		return (int16_t)(uint16_t)(uint64_t)v;
	case VNPU_DTYPE_I32:
		return (int32_t)(uint32_t)(uint64_t)v;
	default:
		return v;
	}
}

/* a^b by repeated squaring, wrapping (the store keeps the low bits, which
 * a product modulo 2^64 has right); PyTorch's rule for b < 0. */
static int64_t int_pow(int64_t a, int64_t b)
{
	uint64_t r = 1, x = (uint64_t)a;

	if (b < 0)
		return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
	for (; b != 0; b >>= 1) {
		if (b & 1)
			r *= x;
		x *= x;
	}
	return (int64_t)r;
}

/* PyTorch's calc_gcd in the dtype's width: |x| wraps for INT_MIN, the
 * remainders keep the dividend's sign. x % -1 is 0 (no trap). */
static int64_t int_gcd(uint32_t dtype, int64_t a, int64_t b)
{
	a = wrap_to(dtype, a < 0 ? (int64_t)(0 - (uint64_t)a) : a);
	b = wrap_to(dtype, b < 0 ? (int64_t)(0 - (uint64_t)b) : b);
	while (a != 0) {
		int64_t c = a;

		a = c == -1 ? 0 : b % c;
		b = c;
	}
	return b;
}

/* Floor quotient; x / 0 is 0, x / -1 a wrapping negation. */
static int64_t int_floor_divide(int64_t a, int64_t b)
{
	int64_t q;

	if (b == 0)
		return 0;
	if (b == -1)
		return (int64_t)(0 - (uint64_t)a);
	q = a / b;
	if (a % b != 0 && (a < 0) != (b < 0))
		q--;
	return q;
}

/* Floor modulo (sign of b); x % 0 and x % -1 are 0. */
static int64_t int_remainder(int64_t a, int64_t b)
{
	int64_t r = b == 0 || b == -1 ? 0 : a % b;

	if (r != 0 && (r < 0) != (b < 0))
		r += b;
	return r;
}

/* Shifts of a value of a w-bit dtype (sign- or zero-extended): a count
 * outside [0, w) shifts every bit out (the right shift of a negative
 * value leaves -1). */
static int64_t shift_left(int64_t a, int64_t b, int64_t w)
{
	return b < 0 || b >= w ? 0 : (int64_t)((uint64_t)a << b);
}

static int64_t shift_right(int64_t a, int64_t b, int64_t w)
{
	if (b < 0 || b >= w)
		return a < 0 ? -1 : 0;
	return a < 0 ? ~(~a >> b) : a >> b; /* arithmetic, without relying
					     * on >> of a negative value */
}

/* Wrapping arithmetic on int64 copies of integer values: every product,
 * sum and negation is formed in uint64_t, which wraps where int64_t would
 * overflow (undefined in C); the store keeps the dtype's low bits. */
static void binary_int(uint32_t op, uint32_t dtype, int64_t alpha,
		       const int64_t *a, const int64_t *b, int64_t *o,
		       int64_t n)
{
	int64_t w = 8 * (int64_t)vnpu_dtype_size(dtype);

	switch (op) {
	case VNPU_BINARY_ADD:
		for (int64_t i = 0; i < n; i++)
			o[i] = (int64_t)((uint64_t)a[i] +
					 (uint64_t)alpha * (uint64_t)b[i]);
		return;
	case VNPU_BINARY_SUB:
		for (int64_t i = 0; i < n; i++)
			o[i] = (int64_t)((uint64_t)a[i] -
					 (uint64_t)alpha * (uint64_t)b[i]);
		return;
	case VNPU_BINARY_MUL:
		for (int64_t i = 0; i < n; i++)
			o[i] = (int64_t)((uint64_t)a[i] * (uint64_t)b[i]);
		return;
	case VNPU_BINARY_DIV:
		/* x / -1 as a wrapping negation: INT64_MIN / -1 traps */
		for (int64_t i = 0; i < n; i++)
			o[i] = b[i] == 0    ? 0
			       : b[i] == -1 ? (int64_t)(0 - (uint64_t)a[i])
					    : a[i] / b[i];
		return;
	case VNPU_BINARY_MAXIMUM:
		for (int64_t i = 0; i < n; i++)
			o[i] = a[i] > b[i] ? a[i] : b[i];
		return;
	case VNPU_BINARY_BITWISE_AND:
		for (int64_t i = 0; i < n; i++)
			o[i] = a[i] & b[i];
		return;
	case VNPU_BINARY_BITWISE_OR:
		for (int64_t i = 0; i < n; i++)
			o[i] = a[i] | b[i];
		return;
	case VNPU_BINARY_BITWISE_XOR:
		for (int64_t i = 0; i < n; i++)
			o[i] = a[i] ^ b[i];
		return;
	case VNPU_BINARY_POW:
		for (int64_t i = 0; i < n; i++)
			o[i] = int_pow(a[i], b[i]);
		return;
	case VNPU_BINARY_FMOD:
		for (int64_t i = 0; i < n; i++)
			o[i] = b[i] == 0 || b[i] == -1 ? 0 : a[i] % b[i];
		return;
	case VNPU_BINARY_REMAINDER:
		for (int64_t i = 0; i < n; i++)
			o[i] = int_remainder(a[i], b[i]);
		return;
	case VNPU_BINARY_FLOOR_DIVIDE:
		for (int64_t i = 0; i < n; i++)
			o[i] = int_floor_divide(a[i], b[i]);
		return;
	case VNPU_BINARY_BITWISE_LEFT_SHIFT:
		for (int64_t i = 0; i < n; i++)
			o[i] = shift_left(a[i], b[i], w);
		return;
	case VNPU_BINARY_BITWISE_RIGHT_SHIFT:
		for (int64_t i = 0; i < n; i++)
			o[i] = shift_right(a[i], b[i], w);
		return;
	case VNPU_BINARY_GCD:
		for (int64_t i = 0; i < n; i++)
			o[i] = int_gcd(dtype, a[i], b[i]);
		return;
	default: /* MINIMUM */
		for (int64_t i = 0; i < n; i++)
			o[i] = a[i] < b[i] ? a[i] : b[i];
		return;
	}
}

static bool f32_ptr_ok(const char *p, int64_t stride)
{
	return stride == 1 && (uintptr_t)p % _Alignof(float) == 0;
}

/*
 * NEXTAFTER of F16 or BF16, stepping in their 16-bit representation as
 * c10's nextafter for Half and BFloat16 does (musl's algorithm): NaN if
 * either is NaN (from + to, rounded), `to` if the bits are equal or both
 * are zeros, the least subnormal with to's sign from a zero, else one
 * step of the bits toward `to`.
 */
static void nextafter_half(uint32_t dtype, char *const *ptrs,
			   const int64_t *strides, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		const char *pa = ptrs[1] + i * strides[1] * 2;
		const char *pb = ptrs[2] + i * strides[2] * 2;
		char *po = ptrs[0] + i * strides[0] * 2;
		float fa = vnpu_ld_f32(pa, dtype), fb = vnpu_ld_f32(pb, dtype);
		uint16_t ua, ub;

		if (fa != fa || fb != fb) {
			vnpu_st_f32(po, dtype, fa + fb);
			continue;
		}
		memcpy(&ua, pa, 2);
		memcpy(&ub, pb, 2);
		if (ua != ub) {
			uint16_t abs_a = ua & 0x7fffu, abs_b = ub & 0x7fffu;

			if (abs_a == 0 && abs_b == 0)
				ua = ub;
			else if (abs_a == 0)
				ua = (uint16_t)((ub & 0x8000u) | 1u);
			else if (abs_a > abs_b || ((ua ^ ub) & 0x8000u))
				ua--;
			else
				ua++;
		}
		memcpy(po, &ua, 2);
	}
}

static void binary_float_chunk(const struct binary_ctx *c, char *const *ptrs,
			       const int64_t *strides, int64_t n)
{
	float ta[VNPU_EW_CHUNK], tb[VNPU_EW_CHUNK], to[VNPU_EW_CHUNK];
	const float *a = ta, *b = tb;
	bool f32 = c->dtype == VNPU_DTYPE_F32;

	if (c->op == VNPU_BINARY_NEXTAFTER && !f32) {
		nextafter_half(c->dtype, ptrs, strides, n);
		return;
	}

	if (f32 && f32_ptr_ok(ptrs[1], strides[1]))
		a = (const float *)(const void *)ptrs[1];
	else
		vnpu_ew_load_f32(ptrs[1], strides[1], c->dtype, n, ta);
	if (f32 && f32_ptr_ok(ptrs[2], strides[2]))
		b = (const float *)(const void *)ptrs[2];
	else
		vnpu_ew_load_f32(ptrs[2], strides[2], c->dtype, n, tb);

	if (is_compare(c->op)) {
		uint8_t bo[VNPU_EW_CHUNK];

		if (strides[0] == 1) {
			compare_f32(c->op, a, b, (uint8_t *)ptrs[0], n);
			return;
		}
		compare_f32(c->op, a, b, bo, n);
		for (int64_t i = 0; i < n; i++)
			ptrs[0][i * strides[0]] = (char)bo[i];
		return;
	}
	if (f32 && f32_ptr_ok(ptrs[0], strides[0])) {
		binary_f32(c->op, c->alpha, a, b, (float *)(void *)ptrs[0], n);
		return;
	}
	if (!f32 && (c->op == VNPU_BINARY_FLOOR_DIVIDE ||
		     c->op == VNPU_BINARY_XLOGY))
		binary_half_rounded(c->op, c->dtype, a, b, to, n);
	else
		binary_f32(c->op, c->alpha, a, b, to, n);
	vnpu_ew_store_f32(ptrs[0], strides[0], c->dtype, n, to);
}

/* F64: loads, arithmetic and stores in double. */
static void binary_f64_chunk(const struct binary_ctx *c, char *const *ptrs,
			     const int64_t *strides, int64_t n)
{
	double a[VNPU_EW_CHUNK], b[VNPU_EW_CHUNK], o[VNPU_EW_CHUNK];

	vnpu_ew_load_f64(ptrs[1], strides[1], c->dtype, n, a);
	vnpu_ew_load_f64(ptrs[2], strides[2], c->dtype, n, b);
	if (is_compare(c->op)) {
		uint8_t bo[VNPU_EW_CHUNK];

		compare_f64(c->op, a, b, bo, n);
		for (int64_t i = 0; i < n; i++)
			ptrs[0][i * strides[0]] = (char)bo[i];
		return;
	}
	binary_f64(c->op, c->dalpha, a, b, o, n);
	vnpu_ew_store_f64(ptrs[0], strides[0], c->dtype, n, o);
}

static void binary_int_chunk(const struct binary_ctx *c, char *const *ptrs,
			     const int64_t *strides, int64_t n)
{
	int64_t a[VNPU_EW_CHUNK], b[VNPU_EW_CHUNK], o[VNPU_EW_CHUNK];

	vnpu_ew_load_i64(ptrs[1], strides[1], c->dtype, n, a);
	vnpu_ew_load_i64(ptrs[2], strides[2], c->dtype, n, b);
	if (is_compare(c->op)) {
		uint8_t bo[VNPU_EW_CHUNK];

		compare_i64(c->op, a, b, bo, n);
		for (int64_t i = 0; i < n; i++)
			ptrs[0][i * strides[0]] = (char)bo[i];
		return;
	}
	binary_int(c->op, c->dtype, c->ialpha, a, b, o, n);
	vnpu_ew_store_i64(ptrs[0], strides[0], c->dtype, n, o);
}

static void binary_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
			 int64_t n)
{
	const struct binary_ctx *c = ctx;

	if (c->dtype == VNPU_DTYPE_F64)
		binary_f64_chunk(c, ptrs, strides, n);
	else if (vnpu_dtype_is_float(c->dtype))
		binary_float_chunk(c, ptrs, strides, n);
	else
		binary_int_chunk(c, ptrs, strides, n);
}

/* The hot case: a + b over dense, aligned f32 arrays, in one loop the
 * compiler vectorises (no chunking, no copies). */
static void add_f32_dense(float *o, const float *a, const float *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		o[i] = a[i] + b[i];
}

/*
 * Beyond this many output bytes, a dense add's working set (3x) is larger
 * than a typical last-level cache: stream the output past the cache, which
 * saves reading each output line before overwriting it (a third less
 * memory traffic, as memcpy does for large copies).
 */
#define STREAM_OUT_BYTES (32ull << 20)
/* Elements of the dense add between two polls of the cancellation hook. */
#define ADD_SEGMENT (1ull << 18)

static void add_f32_stream(float *o, const float *a, const float *b, uint64_t n)
{
#if defined(__SSE2__)
	uint64_t i = 0;

	for (; i < n && (uintptr_t)(o + i) % 16 != 0; i++)
		o[i] = a[i] + b[i];
	for (; i + 8 <= n; i += 8) {
		__m128 lo =
			_mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
		__m128 hi = _mm_add_ps(_mm_loadu_ps(a + i + 4),
				       _mm_loadu_ps(b + i + 4));

		_mm_stream_ps(o + i, lo);
		_mm_stream_ps(o + i + 4, hi);
	}
	for (; i < n; i++)
		o[i] = a[i] + b[i];
	/* streaming stores are weakly ordered: drain them before the block
	 * reports completion */
	_mm_sfence();
#else
	add_f32_dense(o, a, b, n);
#endif
}

static uint32_t binary_validate(const void *params,
				const struct vnpu_kbuf *bufs, uint32_t nbufs)
{
	const struct vnpu_kp_binary *p = params;
	uint32_t dt = p->a.dtype;
	uint32_t st;

	if (p->op >= VNPU_BINARY_COUNT || p->reserved != 0)
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(&p->a, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check(&p->b, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(&p->out, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (p->b.dtype != dt ||
	    p->out.dtype !=
		    (is_compare(p->op) ? (uint32_t)VNPU_DTYPE_BOOL : dt))
		return VNPU_STATUS_INVALID_ARGS;
	if (!vnpu_broadcasts_to(&p->a, &p->out) ||
	    !vnpu_broadcasts_to(&p->b, &p->out))
		return VNPU_STATUS_INVALID_ARGS;
	if (vnpu_dtype_is_floating(dt) ? is_int_only(p->op)
					  : is_float_only(p->op))
		return VNPU_STATUS_UNSUPPORTED;
	if (dt == VNPU_DTYPE_BOOL && refuses_bool(p->op))
		return VNPU_STATUS_UNSUPPORTED;
	if (!vnpu_dtype_is_floating(dt) &&
	    (p->op == VNPU_BINARY_ADD || p->op == VNPU_BINARY_SUB)) {
		/* integral and inside int64 (2^63 itself is not) */
		if (!(p->alpha == trunc(p->alpha)) ||
		    !(fabs(p->alpha) < 9223372036854775808.0))
			return VNPU_STATUS_INVALID_ARGS;
	}
	return VNPU_STATUS_OK;
}

static void binary_run(const void *params, const struct vnpu_kbuf *bufs,
		       uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_binary *p = params;
	const struct vnpu_tensor *ts[3] = {&p->out, &p->a, &p->b};
	struct binary_ctx c;
	struct vnpu_ew_loop loop;
	uint64_t begin, end;

	c.op = p->op;
	c.dtype = p->a.dtype;
	c.alpha = (float)p->alpha;
	c.dalpha = p->alpha;
	c.ialpha = 0;
	if (!vnpu_dtype_is_floating(c.dtype) &&
	    (p->op == VNPU_BINARY_ADD || p->op == VNPU_BINARY_SUB))
		c.ialpha = (int64_t)p->alpha;

	vnpu_ew_loop_init(&loop, ts, 3, bufs);
	vnpu_block_range(loop.numel, block, nblocks, &begin, &end);
	if (c.dtype == VNPU_DTYPE_F32 && c.op == VNPU_BINARY_ADD &&
	    c.alpha == 1.0f && vnpu_ew_loop_dense(&loop) &&
	    (uintptr_t)loop.base[0] % _Alignof(float) == 0 &&
	    (uintptr_t)loop.base[1] % _Alignof(float) == 0 &&
	    (uintptr_t)loop.base[2] % _Alignof(float) == 0) {
		float *o = (float *)(void *)loop.base[0] + begin;
		const float *a = (const float *)(void *)loop.base[1] + begin;
		const float *b = (const float *)(void *)loop.base[2] + begin;

		bool stream = loop.numel * sizeof(float) >= STREAM_OUT_BYTES;

		/* in segments, polling the cancellation hook between them
		 * (a multiple of 4 floats keeps the stream's alignment) */
		for (uint64_t i = 0; i < end - begin; i += ADD_SEGMENT) {
			uint64_t n = end - begin - i < ADD_SEGMENT
					     ? end - begin - i
					     : ADD_SEGMENT;

			if (i && vnpu_kernel_should_stop())
				return;
			if (stream)
				add_f32_stream(o + i, a + i, b + i, n);
			else
				add_f32_dense(o + i, a + i, b + i, n);
		}
		return;
	}
	vnpu_ew_for_range(&loop, begin, end, binary_chunk, &c);
}

const struct vnpu_kernel_def vnpu_kernel_binary = {
	.id = VNPU_KERNEL_BINARY,
	.name = "binary",
	.params_size = sizeof(struct vnpu_kp_binary),
	.validate = binary_validate,
	.run = binary_run,
};

/* ---- WHERE ---- */

static void where_chunk(void *ctx, char *const *ptrs, const int64_t *strides,
			int64_t n)
{
	const uint32_t *itemsize = ctx;
	char *o = ptrs[0];
	const char *cond = ptrs[1], *a = ptrs[2], *b = ptrs[3];

	/* constant-size copies per element width */
#define WHERE_LOOP(SZ)                                                         \
	for (int64_t i = 0; i < n; i++)                                        \
	memcpy(o + i * strides[0] * (SZ),                                      \
	       cond[i * strides[1]] ? a + i * strides[2] * (SZ)                \
				    : b + i * strides[3] * (SZ),               \
	       (SZ))
	switch (*itemsize) {
	case 1:
		WHERE_LOOP(1);
		return;
	case 2:
		WHERE_LOOP(2);
		return;
	case 4:
		WHERE_LOOP(4);
		return;
	default:
		WHERE_LOOP(8);
		return;
	}
#undef WHERE_LOOP
}

static uint32_t where_validate(const void *params, const struct vnpu_kbuf *bufs,
			       uint32_t nbufs)
{
	const struct vnpu_kp_where *p = params;
	uint32_t st;

	st = vnpu_ew_check(&p->cond, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check(&p->a, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check(&p->b, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(&p->out, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (p->cond.dtype != VNPU_DTYPE_BOOL || p->a.dtype != p->out.dtype ||
	    p->b.dtype != p->out.dtype)
		return VNPU_STATUS_INVALID_ARGS;
	if (!vnpu_broadcasts_to(&p->cond, &p->out) ||
	    !vnpu_broadcasts_to(&p->a, &p->out) ||
	    !vnpu_broadcasts_to(&p->b, &p->out))
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

static void where_run(const void *params, const struct vnpu_kbuf *bufs,
		      uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_where *p = params;
	const struct vnpu_tensor *ts[4] = {&p->out, &p->cond, &p->a, &p->b};
	uint32_t itemsize = vnpu_dtype_size(p->out.dtype);
	struct vnpu_ew_loop loop;

	vnpu_ew_loop_init(&loop, ts, 4, bufs);
	vnpu_ew_run_block(&loop, block, nblocks, where_chunk, &itemsize);
}

const struct vnpu_kernel_def vnpu_kernel_where = {
	.id = VNPU_KERNEL_WHERE,
	.name = "where",
	.params_size = sizeof(struct vnpu_kp_where),
	.validate = where_validate,
	.run = where_run,
};
