/* SPDX-License-Identifier: MIT */
/*
 * CPU reference kernels: pointwise ops, comparisons and the pointwise
 * backward ops (docs/dispatcher.md). Any strides, broadcasting, every
 * dtype the op takes in PyTorch; floats are computed in double, integers
 * in int64 and stored back in the result dtype.
 */
#include <stdio.h>

#include "../kernel_common.h"
#include "vnpu/kernel_abi.h"

/*
 * The ops both the CPU and the device compute go by the device's BINARY
 * codes (kernel_abi.h), so that native_functions.yaml names an op's code
 * once for both; these the CPU computes alone.
 */
enum {
	PW_LOGICAL_AND = VNPU_BINARY_COUNT,
	PW_LOGICAL_OR,
	PW_LOGICAL_XOR,
	PW_THRESHOLD_BW,
	PW_SIGMOID_BW,
	PW_TANH_BW,
	PW_GELU_TANH_BW,
};

#define KC_SQRT1_2 0.70710678118654752440
#define KC_SQRT2_PI 0.79788456080286535588	/* sqrt(2 / pi) */
#define KC_GELU_C 0.044715

static double gelu_erf(double x)
{
	return 0.5 * x * (1.0 + erf(x * KC_SQRT1_2));
}

static double gelu_tanh(double x)
{
	return 0.5 * x * (1.0 + tanh(KC_SQRT2_PI * (x + KC_GELU_C * x * x * x)));
}

static double gelu_erf_grad(double x)
{
	double cdf = 0.5 * (1.0 + erf(x * KC_SQRT1_2));
	double pdf = exp(-0.5 * x * x) * 0.39894228040143267794; /* 1/sqrt(2pi) */

	return cdf + x * pdf;
}

static double gelu_tanh_grad(double x)
{
	double inner = KC_SQRT2_PI * (x + KC_GELU_C * x * x * x);
	double th = tanh(inner);
	double dinner = KC_SQRT2_PI * (1.0 + 3.0 * KC_GELU_C * x * x);

	return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * dinner;
}

/* NaN-propagating maximum/minimum (torch.maximum). */
static double pw_fmax(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	return a > b ? a : b;
}

static double pw_fmin(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	return a < b ? a : b;
}

/* PyTorch's div_floor_floating: the quotient of a - fmod(a, b), rounded
 * to the nearest integer when within an ulp of it, so that floor(a / b)
 * does not round up across an integer. */
static double pw_floor_divide(double a, double b)
{
	double mod, div, floordiv;

	if (b == 0)
		return a / b;
	mod = fmod(a, b);
	div = (a - mod) / b;
	if (mod != 0 && (b < 0) != (mod < 0))
		div -= 1;
	if (div == 0)
		return copysign(0, a / b);
	floordiv = floor(div);
	if (div - floordiv > 0.5)
		floordiv += 1.0;
	return floordiv;
}

/* Python's modulo: the sign of the divisor (PyTorch's remainder). */
static double pw_remainder(double a, double b)
{
	double mod = fmod(a, b);

	if (mod != 0 && (b < 0) != (mod < 0))
		mod += b;
	return mod;
}

static double pw_float(uint32_t op, double a, double b, double alpha)
{
	switch (op) {
	case VNPU_BINARY_SUB:
		return a - alpha * b;
	case VNPU_BINARY_DIV:
		return a / b;
	case VNPU_BINARY_MAXIMUM:
		return pw_fmax(a, b);
	case VNPU_BINARY_MINIMUM:
		return pw_fmin(a, b);
	case VNPU_BINARY_EQ:
		return a == b;
	case VNPU_BINARY_NE:
		return a != b;
	case VNPU_BINARY_LT:
		return a < b;
	case VNPU_BINARY_LE:
		return a <= b;
	case VNPU_BINARY_GT:
		return a > b;
	case VNPU_BINARY_GE:
		return a >= b;
	case PW_THRESHOLD_BW:	/* a = grad, b = self, alpha = threshold */
		return b <= alpha ? 0.0 : a;
	case PW_SIGMOID_BW:	/* a = grad, b = sigmoid output */
		return a * (1.0 - b) * b;
	case PW_TANH_BW:
		return a * (1.0 - b * b);
	case VNPU_BINARY_GELU_BACKWARD:
		return a * gelu_erf_grad(b);
	case PW_GELU_TANH_BW:
		return a * gelu_tanh_grad(b);
	case VNPU_BINARY_BITWISE_AND:	/* integers only (pw_bitwise) */
	case VNPU_BINARY_BITWISE_OR:
	case VNPU_BINARY_BITWISE_XOR:
		break;
	case PW_LOGICAL_AND:	/* NaN is true: nonzero */
		return a != 0 && b != 0;
	case PW_LOGICAL_OR:
		return a != 0 || b != 0;
	case PW_LOGICAL_XOR:
		return (a != 0) != (b != 0);
	case VNPU_BINARY_POW:
		return pow(a, b);
	case VNPU_BINARY_REMAINDER:
		return pw_remainder(a, b);
	case VNPU_BINARY_FMOD:
		return fmod(a, b);
	case VNPU_BINARY_FLOOR_DIVIDE:
		return pw_floor_divide(a, b);
	case VNPU_BINARY_COPYSIGN:
		return copysign(a, b);
	case VNPU_BINARY_ATAN2:
		return atan2(a, b);
	case VNPU_BINARY_HARDSIGMOID_BACKWARD:	/* a = grad, b = self; PyTorch's float 1/6 */
		return b > -3 && b < 3 ? a * (double)(1.0f / 6.0f) : 0.0;
	case VNPU_BINARY_HARDSWISH_BACKWARD:
		return b <= -3 ? 0.0 : b >= 3 ? a : a * (b / 3 + 0.5);
	case VNPU_BINARY_HYPOT:
		return hypot(a, b);
	case VNPU_BINARY_LOGADDEXP:	/* as PyTorch: equal infinities give themselves */
		if (isinf(a) && a == b)
			return a;
		return fmax(a, b) + log1p(exp(-fabs(a - b)));
	case VNPU_BINARY_XLOGY:		/* 0 * log(0) is 0; NaN y stays NaN */
		if (isnan(b))
			return NAN;
		return a == 0 ? 0.0 : a * log(b);
	}
	return 0.0;
}

/* Integer power by squaring with wrap-around (as int64 in PyTorch). */
static int64_t pw_ipow(int64_t base, int64_t e)
{
	uint64_t r = 1, b = (uint64_t)base;

	while (e > 0) {
		if (e & 1)
			r *= b;
		b *= b;
		e >>= 1;
	}
	return (int64_t)r;
}

/* Integer a ** b with wrap-around; a negative exponent gives what
 * PyTorch's integer pow gives: 1 for 1, +-1 for -1, 0 for the rest. */
static int64_t pw_ipow_signed(int64_t a, int64_t b)
{
	if (b < 0)
		return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
	return pw_ipow(a, b);
}

static int64_t pw_int(uint32_t op, int64_t a, int64_t b, int64_t alpha)
{
	switch (op) {
	case VNPU_BINARY_SUB:
		return (int64_t)((uint64_t)a - (uint64_t)alpha * (uint64_t)b);
	case VNPU_BINARY_MAXIMUM:
		return a > b ? a : b;
	case VNPU_BINARY_MINIMUM:
		return a < b ? a : b;
	case VNPU_BINARY_EQ:
		return a == b;
	case VNPU_BINARY_NE:
		return a != b;
	case VNPU_BINARY_LT:
		return a < b;
	case VNPU_BINARY_LE:
		return a <= b;
	case VNPU_BINARY_GT:
		return a > b;
	case VNPU_BINARY_GE:
		return a >= b;
	case VNPU_BINARY_BITWISE_AND:
		return a & b;
	case VNPU_BINARY_BITWISE_OR:
		return a | b;
	case VNPU_BINARY_BITWISE_XOR:
		return a ^ b;
	case PW_LOGICAL_AND:
		return a != 0 && b != 0;
	case PW_LOGICAL_OR:
		return a != 0 || b != 0;
	case PW_LOGICAL_XOR:
		return (a != 0) != (b != 0);
	case PW_THRESHOLD_BW:
		return b <= alpha ? 0 : a;
	case PW_SIGMOID_BW:
		return (int64_t)((uint64_t)a * (uint64_t)(1 - b) * (uint64_t)b);
	case PW_TANH_BW:
		return (int64_t)((uint64_t)a * (uint64_t)(1 - b * b));
	case VNPU_BINARY_POW:
		return pw_ipow_signed(a, b);
	/* b != 0 (pw_binary refuses zero divisors); -1 wraps, as INT_MIN
	 * / -1 would trap */
	case VNPU_BINARY_FMOD:
		return b == -1 ? 0 : a % b;
	case VNPU_BINARY_REMAINDER: {
		int64_t r = b == -1 ? 0 : a % b;

		return r != 0 && (r < 0) != (b < 0) ? r + b : r;
	}
	case VNPU_BINARY_FLOOR_DIVIDE: {
		int64_t q, r;

		if (b == -1)
			return (int64_t)(0 - (uint64_t)a);
		q = a / b;
		r = a % b;
		return r != 0 && (r < 0) != (b < 0) ? q - 1 : q;
	}
	default:
		return 0;
	}
}

static bool pw_divides(uint32_t op)
{
	return op == VNPU_BINARY_REMAINDER || op == VNPU_BINARY_FMOD || op == VNPU_BINARY_FLOOR_DIVIDE;
}

/*
 * out = op(a, b) with a and b broadcast, computed in `compute` (ints in
 * int64, floats in double) and stored as `out_dt`.
 */
static struct vnpu_at_tensor *pw_binary(const char *name, uint32_t op,
					struct vnpu_at_tensor *a,
					struct vnpu_at_tensor *b,
					enum vnpu_at_dtype compute,
					enum vnpu_at_dtype out_dt,
					struct vnpu_at_scalar alpha)
{
	const struct vnpu_at_tensor *in[2] = { a, b };
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	uint32_t nd;

	if (!vnpu_at_broadcast_shapes(name, 2, in, &nd, sizes))
		return NULL;
	out = vnpu_at_empty(nd, sizes, out_dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, nd, sizes, 3,
			(const struct vnpu_at_tensor *[]){ out, a, b })) {
		vnpu_at_release(out);
		return NULL;
	}
	if (kc_is_int(compute)) {
		int64_t al = vnpu_at_scalar_to_int(alpha);

		while (vnpu_at_iter_next(&it)) {
			/* Operands are cast to the compute dtype first (an
			 * int64 0-dim operand wraps to int8 as in PyTorch). */
			int64_t x = kc_round_int(compute,
					vnpu_at_load_int(a->dtype, it.p[1]));
			int64_t y = kc_round_int(compute,
					vnpu_at_load_int(b->dtype, it.p[2]));

			if (!y && pw_divides(op)) {
				vnpu_at_release(out);
				return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
							 "%s: ZeroDivisionError", name);
			}
			vnpu_at_store_int(out_dt, it.p[0], pw_int(op, x, y, al));
		}
	} else {
		double al = vnpu_at_scalar_to_double(alpha);
		enum vnpu_at_dtype yd = op == VNPU_BINARY_DIV ?
			kc_mul_div_compute(compute, b) : compute;

		while (vnpu_at_iter_next(&it)) {
			double x = vnpu_at_load(a->dtype, it.p[1]);
			double y = vnpu_at_load(b->dtype, it.p[2]);

			/* Compare and compute at the compute dtype's
			 * precision, as PyTorch casts operands first. */
			if (compute != VNPU_AT_F64) {
				x = kc_round(compute, x);
				y = kc_round(yd, y);
			}
			if (yd != compute) {
				vnpu_at_store(out_dt, it.p[0],
					      kc_round(yd, pw_float(op, x, y, al)));
				continue;
			}
			/* PyTorch's CPU sigmoid_backward computes float16 in
			 * float16, each op rounded (bfloat16 in float32):
			 * h(h(g * h(1 - y)) * y), the last rounding the store's
			 * (the products of two halves are exact in double) */
			if (op == PW_SIGMOID_BW && compute == VNPU_AT_F16) {
				vnpu_at_store(out_dt, it.p[0],
					      kc_round(compute, x * kc_round(compute,
						      1.0 - y)) * y);
				continue;
			}
			vnpu_at_store(out_dt, it.p[0], pw_float(op, x, y, al));
		}
	}
	return out;
}

/* A 0-dim CPU tensor of dtype holding s (for the .Scalar overloads). */
static struct vnpu_at_tensor *pw_wrap(struct vnpu_at_scalar s,
				      enum vnpu_at_dtype dt)
{
	return vnpu_at_scalar_tensor(s, dt, VNPU_AT_DEV_CPU);
}

struct vnpu_at_tensor *vnpu_cpu_sub_Tensor(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other,
					   struct vnpu_at_scalar alpha)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	(void)ks;
	if (self->dtype == VNPU_AT_BOOL && other->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::sub.Tensor: Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.");
	if (self->dtype == VNPU_AT_BOOL || other->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::sub.Tensor: Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
	if (alpha.kind == VNPU_AT_SCALAR_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::sub.Tensor: Boolean alpha only supported for Boolean results.");
	if (kc_is_int(dt) && alpha.kind == VNPU_AT_SCALAR_DOUBLE)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::sub.Tensor: For integral input tensors, argument alpha must not be a floating point number.");
	return pw_binary("aten::sub.Tensor", VNPU_BINARY_SUB, self, other, dt, dt, alpha);
}

struct vnpu_at_tensor *vnpu_cpu_div_Tensor(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other)
{
	/* True division: integer operands give the default float dtype. */
	enum vnpu_at_dtype dt = kc_float_of(vnpu_at_result_type(self, other));

	(void)ks;
	return pw_binary("aten::div.Tensor", VNPU_BINARY_DIV, self, other, dt, dt,
			 VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_maximum(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	(void)ks;
	return pw_binary("aten::maximum", VNPU_BINARY_MAXIMUM, self, other, dt, dt,
			 VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_minimum(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	(void)ks;
	return pw_binary("aten::minimum", VNPU_BINARY_MINIMUM, self, other, dt, dt,
			 VNPU_AT_INT(1));
}

/*
 * PyTorch's name of an op's CPU kernel in its "not implemented for"
 * refusals: the op's name without namespace and overload, and a suffix
 * ("aten::remainder.Tensor", "_cpu": "remainder_cpu").
 */
static const char *cpu_kernel_name(const char *qualified, const char *suffix,
				   char buf[64])
{
	const char *op = strstr(qualified, "::");
	size_t len;

	op = op ? op + 2 : qualified;
	len = strcspn(op, ".");
	snprintf(buf, 64, "%.*s%s", (int)len, op, suffix);
	return buf;
}

/* The binary ops PyTorch computes in the promoted dtype, integers
 * included, bool refused with its CPU kernel's name. */
static struct vnpu_at_tensor *pw_arith(const char *name, const char *cpu_name,
				       uint32_t op,
				       struct vnpu_at_tensor *self,
				       struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	if (dt == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: \"%s\" not implemented for 'Bool'",
					 name, cpu_name);
	return pw_binary(name, op, self, other, dt, dt, VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_pow_Tensor_Tensor(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_tensor *exponent)
{
	(void)ks;
	return pw_arith("aten::pow.Tensor_Tensor", "pow", VNPU_BINARY_POW, self,
			exponent);
}

/* remainder and fmod, native_functions.yaml's family divide */
struct vnpu_at_tensor *vnpu_cpu_family_divide(vnpu_keyset_t ks,
					      const char *name, uint32_t code,
					      struct vnpu_at_tensor *self,
					      struct vnpu_at_tensor *other)
{
	char impl[64];

	(void)ks;
	return pw_arith(name, cpu_kernel_name(name, "_cpu", impl), code, self,
			other);
}

struct vnpu_at_tensor *vnpu_cpu_floor_divide(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     struct vnpu_at_tensor *other)
{
	(void)ks;
	return pw_arith("aten::floor_divide", "div_floor_cpu", VNPU_BINARY_FLOOR_DIVIDE,
			self, other);
}

/* Float ops: integer and bool operands give the default float dtype. */
struct vnpu_at_tensor *vnpu_cpu_copysign_Tensor(vnpu_keyset_t ks,
						struct vnpu_at_tensor *self,
						struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = kc_float_of(vnpu_at_result_type(self, other));

	(void)ks;
	return pw_binary("aten::copysign.Tensor", VNPU_BINARY_COPYSIGN, self, other, dt,
			 dt, VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_atan2(vnpu_keyset_t ks,
				      struct vnpu_at_tensor *self,
				      struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = kc_float_of(vnpu_at_result_type(self, other));

	(void)ks;
	return pw_binary("aten::atan2", VNPU_BINARY_ATAN2, self, other, dt, dt,
			 VNPU_AT_INT(1));
}

/* Float ops of PyTorch's binary_op (no integer-to-float promotion): an
 * integer or bool result type is refused in PyTorch's words. */
static struct vnpu_at_tensor *pw_float_binary(const char *name, const char *impl,
					      uint32_t op, struct vnpu_at_tensor *self,
					      struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	if (!vnpu_at_dtype_is_float(dt))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: \"%s\" not implemented for '%s'",
					 name, impl, vnpu_at_dtype_name(dt));
	return pw_binary(name, op, self, other, dt, dt, VNPU_AT_INT(1));
}

/* hypot and logaddexp, native_functions.yaml's family float_binary */
struct vnpu_at_tensor *vnpu_cpu_family_float_binary(vnpu_keyset_t ks,
						    const char *name,
						    uint32_t code,
						    struct vnpu_at_tensor *self,
						    struct vnpu_at_tensor *other)
{
	char impl[64];

	(void)ks;
	return pw_float_binary(name, cpu_kernel_name(name, "_cpu", impl), code,
			       self, other);
}

/* xlogy promotes integers and bool to the default float dtype */
struct vnpu_at_tensor *vnpu_cpu_xlogy_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					     struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = kc_float_of(vnpu_at_result_type(self, other));

	(void)ks;
	return pw_binary("aten::xlogy.Tensor", VNPU_BINARY_XLOGY, self, other, dt, dt, VNPU_AT_INT(1));
}

/* The comparison ops are native_functions.yaml's families compare and
 * compare_scalar, told apart by their BINARY code: a bool result. */
struct vnpu_at_tensor *vnpu_cpu_family_compare(vnpu_keyset_t ks,
					       const char *name, uint32_t op,
					       struct vnpu_at_tensor *self,
					       struct vnpu_at_tensor *other)
{
	(void)ks;
	return pw_binary(name, op, self, other,
			 vnpu_at_result_type(self, other), VNPU_AT_BOOL,
			 VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_family_compare_scalar(vnpu_keyset_t ks,
						      const char *name,
						      uint32_t op,
						      struct vnpu_at_tensor *self,
						      struct vnpu_at_scalar other)
{
	enum vnpu_at_dtype dt = kc_scalar_result(self->dtype, other);
	struct vnpu_at_tensor *s = pw_wrap(kc_scalar_cast(other, dt), dt), *out;

	if (!s)
		return NULL;
	out = pw_binary(name, op, self, s, dt, VNPU_AT_BOOL, VNPU_AT_INT(1));
	vnpu_at_release(s);
	return out;
}

/* Bitwise ops take integers and bool (as 0/1) in the promoted dtype. */
static struct vnpu_at_tensor *pw_bitwise(const char *name, const char *cpu_name,
					 uint32_t op,
					 struct vnpu_at_tensor *self,
					 struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	if (vnpu_at_dtype_is_float(dt))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: \"%s\" not implemented for '%s'",
					 name, cpu_name, vnpu_at_dtype_name(dt));
	return pw_binary(name, op, self, other, dt, dt, VNPU_AT_INT(1));
}

/* bitwise_and, _or, _xor: native_functions.yaml's family bitwise */
struct vnpu_at_tensor *vnpu_cpu_family_bitwise(vnpu_keyset_t ks,
					       const char *name, uint32_t code,
					       struct vnpu_at_tensor *self,
					       struct vnpu_at_tensor *other)
{
	char impl[64];

	(void)ks;
	return pw_bitwise(name, cpu_kernel_name(name, "_cpu", impl), code,
			  self, other);
}

struct vnpu_at_tensor *vnpu_cpu_logical_and(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *other)
{
	return vnpu_cpu_family_compare(ks, "aten::logical_and", PW_LOGICAL_AND,
				       self, other);
}

struct vnpu_at_tensor *vnpu_cpu_logical_or(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other)
{
	return vnpu_cpu_family_compare(ks, "aten::logical_or", PW_LOGICAL_OR,
				       self, other);
}

struct vnpu_at_tensor *vnpu_cpu_logical_xor(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *other)
{
	return vnpu_cpu_family_compare(ks, "aten::logical_xor", PW_LOGICAL_XOR,
				       self, other);
}

/* logical_not(x) = (x == 0): NaN and every nonzero are true, so false */
struct vnpu_at_tensor *vnpu_cpu_logical_not(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self)
{
	return vnpu_cpu_family_compare_scalar(ks, "aten::logical_not",
					      VNPU_BINARY_EQ, self,
					      VNPU_AT_INT(0));
}

/* ---- unary ---------------------------------------------------------------- */

/* The device's UNARY codes (kernel_abi.h) name the ops both compute, as
 * for the binary ops; GELU's tanh form the CPU computes alone. */
enum {
	PU_GELU_TANH = VNPU_UNARY_COUNT,
};

static double pu_float(uint32_t op, double x)
{
	switch (op) {
	case VNPU_UNARY_ABS:
		return fabs(x);
	case VNPU_UNARY_NEG:
		return -x;
	case VNPU_UNARY_EXP:
		return exp(x);
	case VNPU_UNARY_LOG:
		return log(x);
	case VNPU_UNARY_SQRT:
		return sqrt(x);
	case VNPU_UNARY_RSQRT:
		return 1.0 / sqrt(x);
	case VNPU_UNARY_GELU:
		return gelu_erf(x);
	case PU_GELU_TANH:
		return gelu_tanh(x);
	case VNPU_UNARY_SILU:
		return x / (1.0 + exp(-x));
	case VNPU_UNARY_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	case VNPU_UNARY_TANH:
		return tanh(x);
	case VNPU_UNARY_BITWISE_NOT:	/* integers only (vnpu_cpu_bitwise_not) */
		break;
	case VNPU_UNARY_SIN:
		return sin(x);
	case VNPU_UNARY_COS:
		return cos(x);
	case VNPU_UNARY_TAN:
		return tan(x);
	case VNPU_UNARY_ASIN:
		return asin(x);
	case VNPU_UNARY_ACOS:
		return acos(x);
	case VNPU_UNARY_ATAN:
		return atan(x);
	case VNPU_UNARY_SINH:
		return sinh(x);
	case VNPU_UNARY_COSH:
		return cosh(x);
	case VNPU_UNARY_ASINH:
		return asinh(x);
	case VNPU_UNARY_ACOSH:
		return acosh(x);
	case VNPU_UNARY_ATANH:
		return atanh(x);
	case VNPU_UNARY_LOG2:
		return log2(x);
	case VNPU_UNARY_LOG10:
		return log10(x);
	case VNPU_UNARY_LOG1P:
		return log1p(x);
	case VNPU_UNARY_EXPM1:
		return expm1(x);
	case VNPU_UNARY_EXP2:
		return exp2(x);
	case VNPU_UNARY_ERF:
		return erf(x);
	case VNPU_UNARY_ERFC:
		return erfc(x);
	case VNPU_UNARY_FLOOR:
		return floor(x);
	case VNPU_UNARY_CEIL:
		return ceil(x);
	case VNPU_UNARY_TRUNC:
		return trunc(x);
	case VNPU_UNARY_ROUND:		/* half to even, the default rounding mode */
		return nearbyint(x);
	case VNPU_UNARY_SIGN:		/* NaN and -0 give +0, as PyTorch */
		return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
	case VNPU_UNARY_HARDSIGMOID:	/* NaN passes both clamps, as std::min/max */
		return isnan(x) ? x : fmin(fmax(x + 3, 0), 6) / 6;
	case VNPU_UNARY_HARDSWISH:
		return isnan(x) ? x : x * fmin(fmax(x + 3, 0), 6) / 6;
	}
	return 0.0;
}

/* out (dtype out_dt, self's shape) = op(self). */
static struct vnpu_at_tensor *pw_unary(uint32_t op,
				       struct vnpu_at_tensor *self,
				       enum vnpu_at_dtype out_dt)
{
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;

	out = vnpu_at_empty(self->ndim, self->sizes, out_dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, self->ndim, self->sizes, 2,
			(const struct vnpu_at_tensor *[]){ out, self })) {
		vnpu_at_release(out);
		return NULL;
	}
	if (kc_is_int(out_dt)) {
		while (vnpu_at_iter_next(&it)) {
			uint64_t v = (uint64_t)vnpu_at_load_int(self->dtype,
								it.p[1]);

			if (op == VNPU_UNARY_NEG || (op == VNPU_UNARY_ABS && (int64_t)v < 0))
				v = 0 - v;
			else if (op == VNPU_UNARY_BITWISE_NOT)
				v = out_dt == VNPU_AT_BOOL ? !v : ~v;
			else if (op == VNPU_UNARY_SIGN)
				v = (uint64_t)((int64_t)v > 0) -
				    (uint64_t)((int64_t)v < 0);
			vnpu_at_store_int(out_dt, it.p[0], (int64_t)v);
		}
	} else {
		while (vnpu_at_iter_next(&it))
			vnpu_at_store(out_dt, it.p[0],
				      pu_float(op, vnpu_at_load(self->dtype,
								it.p[1])));
	}
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_neg(vnpu_keyset_t ks,
				    struct vnpu_at_tensor *self)
{
	(void)ks;
	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::neg: Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
	return pw_unary(VNPU_UNARY_NEG, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_cpu_bitwise_not(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self)
{
	(void)ks;
	if (vnpu_at_dtype_is_float(self->dtype))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::bitwise_not: \"bitwise_not_cpu\" not implemented for '%s'",
			vnpu_at_dtype_name(self->dtype));
	return pw_unary(VNPU_UNARY_BITWISE_NOT, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_cpu_abs(vnpu_keyset_t ks,
				    struct vnpu_at_tensor *self)
{
	(void)ks;
	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::abs: \"abs_cpu\" not implemented for 'Bool'");
	return pw_unary(VNPU_UNARY_ABS, self, self->dtype);
}

/* The float ufuncs, native_functions.yaml's family float_unary, told apart
 * by their UNARY code: integer and bool inputs compute in float32
 * (PyTorch's promote_integer_inputs_to_float). */
struct vnpu_at_tensor *vnpu_cpu_family_float_unary(vnpu_keyset_t ks,
						   const char *name,
						   uint32_t code,
						   struct vnpu_at_tensor *self)
{
	(void)ks;
	(void)name;
	return pw_unary(code, self, kc_float_of(self->dtype));
}

/* Rounding ops keep the dtype: integers are their own floor, ceil, trunc
 * and round; bool is refused with PyTorch's message. */
static struct vnpu_at_tensor *pw_rounding(const char *name, const char *impl,
					  uint32_t op,
					  struct vnpu_at_tensor *self)
{
	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: \"%s\" not implemented for 'Bool'",
					 name, impl);
	return pw_unary(op, self, self->dtype);
}

/* floor, ceil, trunc, round: native_functions.yaml's family rounding */
struct vnpu_at_tensor *vnpu_cpu_family_rounding(vnpu_keyset_t ks,
						const char *name, uint32_t code,
						struct vnpu_at_tensor *self)
{
	char impl[64];

	(void)ks;
	return pw_rounding(name, cpu_kernel_name(name, "_vml_cpu", impl), code,
			   self);
}

/* -1, 0 or 1 in the dtype (bool: itself). */
struct vnpu_at_tensor *vnpu_cpu_sign(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self)
{
	(void)ks;
	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_op_clone(self);
	return pw_unary(VNPU_UNARY_SIGN, self, self->dtype);
}

static bool pw_float_only(const char *name, const char *impl,
			  const struct vnpu_at_tensor *t)
{
	if (vnpu_at_dtype_is_float(t->dtype))
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: \"%s\" not implemented for '%s'", name, impl,
			  vnpu_at_dtype_name(t->dtype));
	return false;
}

/* 'none' -> 0, 'tanh' -> 1, else -1 with PyTorch's message. */
static int pw_gelu_mode(const char *name, const char *approximate)
{
	if (approximate && strcmp(approximate, "none") == 0)
		return 0;
	if (approximate && strcmp(approximate, "tanh") == 0)
		return 1;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: approximate argument must be either none or tanh.",
			  name);
	return -1;
}

struct vnpu_at_tensor *vnpu_cpu_gelu(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     const char *approximate)
{
	int mode = pw_gelu_mode("aten::gelu", approximate);

	(void)ks;
	if (mode < 0 || !pw_float_only("aten::gelu", "GeluKernelImpl", self))
		return NULL;
	return pw_unary(mode ? PU_GELU_TANH : VNPU_UNARY_GELU, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_cpu_hardsigmoid(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self)
{
	(void)ks;
	if (!pw_float_only("aten::hardsigmoid", "hardsigmoid_cpu", self))
		return NULL;
	return pw_unary(VNPU_UNARY_HARDSIGMOID, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_cpu_hardswish(vnpu_keyset_t ks,
					  struct vnpu_at_tensor *self)
{
	(void)ks;
	if (!pw_float_only("aten::hardswish", "hardswish_cpu", self))
		return NULL;
	return pw_unary(VNPU_UNARY_HARDSWISH, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_cpu_silu(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self)
{
	(void)ks;
	if (!pw_float_only("aten::silu", "silu_cpu", self))
		return NULL;
	return pw_unary(VNPU_UNARY_SILU, self, self->dtype);
}

/* x ** e as PyTorch's pow kernel: the exponents it specialises (0.5,
 * -0.5, 2, 3, -1, -2) as sqrt, rsqrt and products, which differ from
 * pow() at -0 and -inf (pow(-0.0, -0.5) is -inf, pow(-inf, -0.5) NaN). */
static double pw_pow_scalar(double x, double e)
{
	if (e == 0.5)
		return sqrt(x);
	if (e == -0.5)
		return 1.0 / sqrt(x);
	if (e == 2)
		return x * x;
	if (e == 3)
		return x * x * x;
	if (e == -1)
		return 1.0 / x;
	if (e == -2)
		return 1.0 / (x * x);
	return pow(x, e);
}

struct vnpu_at_tensor *vnpu_cpu_pow_Tensor_Scalar(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_scalar exponent)
{
	enum vnpu_at_dtype dt = kc_scalar_result(self->dtype, exponent);
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;

	(void)ks;
	if (dt == VNPU_AT_BOOL)
		dt = VNPU_AT_I64;	/* bool ** bool: no bool pow; int64 */
	if (kc_is_int(dt) && vnpu_at_scalar_to_int(exponent) < 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::pow.Tensor_Scalar: Integers to negative integer powers are not allowed.");
	out = vnpu_at_empty(self->ndim, self->sizes, dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, self->ndim, self->sizes, 2,
			(const struct vnpu_at_tensor *[]){ out, self })) {
		vnpu_at_release(out);
		return NULL;
	}
	if (kc_is_int(dt)) {
		int64_t e = vnpu_at_scalar_to_int(exponent);

		while (vnpu_at_iter_next(&it))
			vnpu_at_store_int(dt, it.p[0],
				pw_ipow(vnpu_at_load_int(self->dtype, it.p[1]),
					e));
	} else {
		double e = vnpu_at_scalar_to_double(exponent);

		while (vnpu_at_iter_next(&it))
			vnpu_at_store(dt, it.p[0],
				      pw_pow_scalar(vnpu_at_load(self->dtype,
								 it.p[1]), e));
	}
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_clamp(vnpu_keyset_t ks,
				      struct vnpu_at_tensor *self,
				      struct vnpu_at_scalar min,
				      struct vnpu_at_scalar max)
{
	enum vnpu_at_dtype dt;
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	bool has_min = min.kind != VNPU_AT_SCALAR_NONE;
	bool has_max = max.kind != VNPU_AT_SCALAR_NONE;

	(void)ks;
	if (!has_min && !has_max)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::clamp: At least one of 'min' or 'max' must not be None");
	dt = kc_scalar_result(kc_scalar_result(self->dtype, min), max);
	if (dt == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::clamp: \"clamp_scalar_cpu\" not implemented for 'Bool'");
	out = vnpu_at_empty(self->ndim, self->sizes, dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, self->ndim, self->sizes, 2,
			(const struct vnpu_at_tensor *[]){ out, self })) {
		vnpu_at_release(out);
		return NULL;
	}
	if (kc_is_int(dt)) {
		int64_t lo = vnpu_at_scalar_to_int(min);
		int64_t hi = vnpu_at_scalar_to_int(max);

		while (vnpu_at_iter_next(&it)) {
			int64_t v = vnpu_at_load_int(self->dtype, it.p[1]);

			if (has_min && v < lo)
				v = lo;
			if (has_max && v > hi)
				v = hi;
			vnpu_at_store_int(dt, it.p[0], v);
		}
	} else {
		double lo = vnpu_at_scalar_to_double(min);
		double hi = vnpu_at_scalar_to_double(max);

		/* min(max(x, lo), hi): NaN stays NaN, a NaN bound makes
		 * every element NaN (PyTorch 2), lo > hi gives hi. */
		while (vnpu_at_iter_next(&it)) {
			double v = vnpu_at_load(self->dtype, it.p[1]);

			if (has_min)
				v = pw_fmax(v, lo);
			if (has_max)
				v = pw_fmin(v, hi);
			vnpu_at_store(dt, it.p[0], v);
		}
	}
	return out;
}

/* A dtype as PyTorch's messages name it (caffe2::TypeMeta). */
static const char *pw_cpp_name(enum vnpu_at_dtype dt)
{
	switch (dt) {
	case VNPU_AT_U8: return "unsigned char";
	case VNPU_AT_I8: return "signed char";
	case VNPU_AT_I16: return "short int";
	case VNPU_AT_I32: return "int";
	case VNPU_AT_I64: return "long int";
	case VNPU_AT_F16: return "c10::Half";
	case VNPU_AT_F32: return "float";
	case VNPU_AT_F64: return "double";
	case VNPU_AT_BOOL: return "bool";
	case VNPU_AT_BF16: return "c10::BFloat16";
	default: return "?";
	}
}

/*
 * self + weight * (end - self), or end - (end - self) * (1 - weight) when
 * |weight| >= 0.5 (exact at weight 1), as PyTorch's lerp: in the opmath
 * dtype (float for f16/bf16/f32, weight too), each as one fused
 * multiply-add as its vectorized kernel does.
 */
struct vnpu_at_tensor *vnpu_cpu_lerp_Scalar(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *end,
					    struct vnpu_at_scalar weight)
{
	static const char name[] = "aten::lerp.Scalar";
	const struct vnpu_at_tensor *in[2] = { self, end };
	enum vnpu_at_dtype dt = self->dtype;
	enum vnpu_at_dtype op = dt == VNPU_AT_F64 ? VNPU_AT_F64 : VNPU_AT_F32;
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	double w, coeff;
	uint32_t nd;
	bool small;

	(void)ks;
	if (end->dtype != dt)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: expected dtype %s for `end` but got dtype %s", name,
			pw_cpp_name(dt), pw_cpp_name(end->dtype));
	if (!pw_float_only(name, "lerp_kernel_scalar", self) ||
	    !vnpu_at_broadcast_shapes(name, 2, in, &nd, sizes))
		return NULL;
	w = kc_round(op, vnpu_at_scalar_to_double(weight));
	small = fabs(w) < 0.5;
	coeff = small ? w : kc_round(op, w - 1.0);
	out = vnpu_at_empty(nd, sizes, dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, nd, sizes, 3,
			(const struct vnpu_at_tensor *[]){ out, self, end })) {
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it)) {
		double a = vnpu_at_load(dt, it.p[1]);
		double b = vnpu_at_load(dt, it.p[2]);
		double diff = kc_round(op, b - a);

		vnpu_at_store(dt, it.p[0],
			      kc_round(op, fma(coeff, diff, small ? a : b)));
	}
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_where_self(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *condition,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other)
{
	const struct vnpu_at_tensor *in[3] = { condition, self, other };
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	size_t isz = vnpu_at_dtype_size(dt);
	uint32_t nd;

	(void)ks;
	if (condition->dtype != VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::where.self: where expected condition to be a boolean tensor, but got a tensor with dtype %s",
			vnpu_at_dtype_name(condition->dtype));
	if (!vnpu_at_broadcast_shapes("aten::where.self", 3, in, &nd, sizes))
		return NULL;
	out = vnpu_at_empty(nd, sizes, dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, nd, sizes, 4,
			(const struct vnpu_at_tensor *[]){ out, condition,
							   self, other })) {
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it)) {
		bool c = *(const uint8_t *)it.p[1] != 0;
		const struct vnpu_at_tensor *src = c ? self : other;
		const void *p = it.p[c ? 2 : 3];

		if (src->dtype == dt)
			memcpy(it.p[0], p, isz);	/* exact, even NaN bits */
		else if (kc_is_int(dt))
			vnpu_at_store_int(dt, it.p[0],
					  vnpu_at_load_int(src->dtype, p));
		else
			vnpu_at_store(dt, it.p[0], vnpu_at_load(src->dtype, p));
	}
	return out;
}

/* ---- pointwise backward ops ----------------------------------------------- */

struct vnpu_at_tensor *vnpu_cpu_threshold_backward(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *grad_output,
						   struct vnpu_at_tensor *self,
						   struct vnpu_at_scalar threshold)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);

	(void)ks;
	return pw_binary("aten::threshold_backward", PW_THRESHOLD_BW,
			 grad_output, self, dt, dt, threshold);
}

struct vnpu_at_tensor *vnpu_cpu_sigmoid_backward(vnpu_keyset_t ks,
						 struct vnpu_at_tensor *grad_output,
						 struct vnpu_at_tensor *output)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, output);

	(void)ks;
	if (!pw_float_only("aten::sigmoid_backward", "sigmoid_backward_cpu",
			   grad_output))
		return NULL;
	return pw_binary("aten::sigmoid_backward", PW_SIGMOID_BW, grad_output,
			 output, dt, dt, VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_tanh_backward(vnpu_keyset_t ks,
					      struct vnpu_at_tensor *grad_output,
					      struct vnpu_at_tensor *output)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, output);

	(void)ks;
	if (!pw_float_only("aten::tanh_backward", "tanh_backward_cpu",
			   grad_output))
		return NULL;
	return pw_binary("aten::tanh_backward", PW_TANH_BW, grad_output,
			 output, dt, dt, VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_hardsigmoid_backward(vnpu_keyset_t ks,
						     struct vnpu_at_tensor *grad_output,
						     struct vnpu_at_tensor *self)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);

	(void)ks;
	if (!pw_float_only("aten::hardsigmoid_backward", "hardsigmoid_backward", self) ||
	    !pw_float_only("aten::hardsigmoid_backward", "hardsigmoid_backward", grad_output))
		return NULL;
	return pw_binary("aten::hardsigmoid_backward", VNPU_BINARY_HARDSIGMOID_BACKWARD, grad_output, self,
			 dt, dt, VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_hardswish_backward(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *grad_output,
						   struct vnpu_at_tensor *self)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);

	(void)ks;
	if (!pw_float_only("aten::hardswish_backward", "hardswish_backward_cpu", self) ||
	    !pw_float_only("aten::hardswish_backward", "hardswish_backward_cpu", grad_output))
		return NULL;
	return pw_binary("aten::hardswish_backward", VNPU_BINARY_HARDSWISH_BACKWARD, grad_output, self,
			 dt, dt, VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_gelu_backward(vnpu_keyset_t ks,
					      struct vnpu_at_tensor *grad_output,
					      struct vnpu_at_tensor *self,
					      const char *approximate)
{
	int mode = pw_gelu_mode("aten::gelu_backward", approximate);
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);

	(void)ks;
	if (mode < 0 ||
	    !pw_float_only("aten::gelu_backward", "GeluBackwardKernelImpl",
			   self))
		return NULL;
	return pw_binary("aten::gelu_backward",
			 mode ? PW_GELU_TANH_BW : VNPU_BINARY_GELU_BACKWARD, grad_output, self,
			 dt, dt, VNPU_AT_INT(1));
}
