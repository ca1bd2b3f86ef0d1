/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1): pointwise ops, comparisons, the pointwise
 * backward ops and cat (docs/dispatcher.md), on UNARY, BINARY, WHERE and
 * CAST, float64 in double. What the device cannot compute (complex,
 * tanh-approximated GELU and its backward, most powers) is unsupported
 * here (vnpu_npu_unsupported): the op's generated entry sends it to the
 * fallback, where it is counted in the fallback report; so are invalid
 * arguments, so that the CPU kernel words the error.
 */
#include "npu_ops_common.h"

static struct vnpu_at_tensor *binary_op(const char *name, uint32_t op,
					struct vnpu_at_tensor *a,
					struct vnpu_at_tensor *b,
					enum vnpu_at_dtype dt, double alpha)
{
	return npk_binary(name, op, a, b, dt, alpha);
}

struct vnpu_at_tensor *vnpu_npu_sub_Tensor(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other,
					   struct vnpu_at_scalar alpha)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	/* PyTorch refuses a bool operand and a float alpha with ints: the
	 * CPU kernel words it */
	if (!npk_float_or_int(dt) || self->dtype == VNPU_AT_BOOL ||
	    other->dtype == VNPU_AT_BOOL || alpha.kind == VNPU_AT_SCALAR_BOOL ||
	    (kc_is_int(dt) && alpha.kind == VNPU_AT_SCALAR_DOUBLE) ||
	    !npk_alpha_exact(alpha))
		return vnpu_npu_unsupported();
	return binary_op("aten::sub.Tensor", VNPU_BINARY_SUB, self, other, dt,
			 vnpu_at_scalar_to_double(alpha));
}

/*
 * True when an integer divisor has a zero: PyTorch's CPU raises
 * ZeroDivisionError for integer remainder, fmod and floor_divide (CUDA
 * leaves the result undefined). One device reduction and a one-byte read
 * back: these ops wait for the stream, as the indexing ops do.
 */
static bool has_zero(struct vnpu_at_tensor *divisor, bool *zero)
{
	struct vnpu_at_tensor *eq, *any = NULL, *host = NULL;

	eq = vnpu_op_eq_Scalar(divisor, VNPU_AT_INT(0));
	if (eq)
		any = vnpu_op_any(eq);
	if (any)
		host = vnpu_op__to_copy(any, VNPU_AT_BOOL, VNPU_AT_DEV_CPU, false);
	if (host)
		*zero = vnpu_at_load_int(VNPU_AT_BOOL, vnpu_at_data(host)) != 0;
	vnpu_at_release(eq);
	vnpu_at_release(any);
	vnpu_at_release(host);
	return host != NULL;
}

/* remainder, fmod, floor_divide, pow: the promoted dtype, integers
 * included; bool goes to the CPU kernel, which words PyTorch's refusal. */
static struct vnpu_at_tensor *npu_arith(const char *name, uint32_t op,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *other,
					bool divides)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);
	bool zero = false;

	if (!npk_float_or_int(dt))
		return vnpu_npu_unsupported();
	if (divides && kc_is_int(dt)) {
		if (!has_zero(other, &zero))
			return NULL;
		if (zero)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: ZeroDivisionError", name);
	}
	return binary_op(name, op, self, other, dt, 1.0);
}

/* remainder and fmod: native_functions.yaml's family divide */
struct vnpu_at_tensor *vnpu_npu_family_divide(vnpu_keyset_t ks,
					      const char *name, uint32_t code,
					      struct vnpu_at_tensor *self,
					      struct vnpu_at_tensor *other)
{
	(void)ks;
	return npu_arith(name, code, self, other, true);
}

struct vnpu_at_tensor *vnpu_npu_pow_Tensor_Tensor(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_tensor *exponent)
{
	return npu_arith("aten::pow.Tensor_Tensor",
			 VNPU_BINARY_POW, self, exponent,
			 false);
}

struct vnpu_at_tensor *vnpu_npu_floor_divide(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     struct vnpu_at_tensor *other)
{
	return npu_arith("aten::floor_divide",
			 VNPU_BINARY_FLOOR_DIVIDE, self,
			 other, true);
}

/* Float ops: integer and bool operands give the default float dtype. */
struct vnpu_at_tensor *vnpu_npu_copysign_Tensor(vnpu_keyset_t ks,
						struct vnpu_at_tensor *self,
						struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = kc_float_of(vnpu_at_result_type(self, other));

	if (!npk_float(dt))
		return vnpu_npu_unsupported();
	return binary_op("aten::copysign.Tensor", VNPU_BINARY_COPYSIGN, self,
			 other, dt, 1.0);
}

struct vnpu_at_tensor *vnpu_npu_atan2(vnpu_keyset_t ks,
				      struct vnpu_at_tensor *self,
				      struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = kc_float_of(vnpu_at_result_type(self, other));

	if (!npk_float(dt))
		return vnpu_npu_unsupported();
	return binary_op("aten::atan2", VNPU_BINARY_ATAN2, self, other, dt,
			 1.0);
}

/* hypot and logaddexp (native_functions.yaml's family float_binary) take
 * floats only: the CPU kernel refuses the rest. */
struct vnpu_at_tensor *vnpu_npu_family_float_binary(vnpu_keyset_t ks,
						    const char *name,
						    uint32_t code,
						    struct vnpu_at_tensor *self,
						    struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	if (!npk_float(dt))
		return vnpu_npu_unsupported();
	return binary_op(name, code, self, other, dt, 1.0);
}

/* xlogy promotes integers and bool to the default float dtype. */
struct vnpu_at_tensor *vnpu_npu_xlogy_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					     struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = kc_float_of(vnpu_at_result_type(self, other));

	if (!npk_float(dt))
		return vnpu_npu_unsupported();
	return binary_op("aten::xlogy.Tensor", VNPU_BINARY_XLOGY, self, other, dt, 1.0);
}

struct vnpu_at_tensor *vnpu_npu_div_Tensor(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = kc_float_of(vnpu_at_result_type(self, other));

	if (!npk_float(dt))
		return vnpu_npu_unsupported();
	return binary_op("aten::div.Tensor", VNPU_BINARY_DIV, self, other, dt,
			 1.0);
}

struct vnpu_at_tensor *vnpu_npu_maximum(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	if (!npk_float_int_or_bool(dt))
		return vnpu_npu_unsupported();
	return binary_op("aten::maximum", VNPU_BINARY_MAXIMUM, self, other, dt,
			 1.0);
}

struct vnpu_at_tensor *vnpu_npu_minimum(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	if (!npk_float_int_or_bool(dt))
		return vnpu_npu_unsupported();
	return binary_op("aten::minimum", VNPU_BINARY_MINIMUM, self, other, dt,
			 1.0);
}

/* integers and bool only: a float leaves it to the CPU kernel, which
 * words PyTorch's error */
static struct vnpu_at_tensor *npu_bitwise(const char *name, uint32_t op,
					  struct vnpu_at_tensor *self,
					  struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	if (!npk_float_int_or_bool(dt) || npk_float(dt))
		return vnpu_npu_unsupported();
	return binary_op(name, op, self, other, dt, 1.0);
}

/* bitwise_and, _or, _xor: native_functions.yaml's family bitwise */
struct vnpu_at_tensor *vnpu_npu_family_bitwise(vnpu_keyset_t ks,
					       const char *name, uint32_t code,
					       struct vnpu_at_tensor *self,
					       struct vnpu_at_tensor *other)
{
	(void)ks;
	return npu_bitwise(name, code, self, other);
}

/* ---- comparisons -------------------------------------------------------------- */

/* The comparison ops are native_functions.yaml's families compare and
 * compare_scalar, told apart by their BINARY code. */

/* x op y on BINARY in the promoted dtype; unsupported when the device
 * has no kernel for it. */
struct vnpu_at_tensor *vnpu_npu_family_compare(vnpu_keyset_t ks,
					       const char *name, uint32_t code,
					       struct vnpu_at_tensor *self,
					       struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	(void)ks;
	if (!npk_float_int_or_bool(dt))
		return vnpu_npu_unsupported();
	return binary_op(name, code, self, other, dt, 1.0);
}

/* x op scalar: the scalar becomes a 0-dim device tensor of the compute
 * dtype (PyTorch's wrapped number, cast as TensorIterator casts it). */
static struct vnpu_at_tensor *compare_scalar(const char *name, uint32_t code,
					     struct vnpu_at_tensor *self,
					     struct vnpu_at_scalar other,
					     enum vnpu_at_dtype dt)
{
	struct vnpu_at_tensor *s = npk_scalar_of(kc_scalar_cast(other, dt), dt);
	struct vnpu_at_tensor *out;

	if (!s)
		return NULL;
	out = binary_op(name, code, self, s, dt, 1.0);
	vnpu_at_release(s);
	return out;
}

/* x op scalar on the device in the scalar's result dtype; unsupported
 * when the device has no kernel for it. */
static struct vnpu_at_tensor *npu_compare_scalar(const char *name,
						 uint32_t code,
						 struct vnpu_at_tensor *self,
						 struct vnpu_at_scalar other)
{
	enum vnpu_at_dtype dt = kc_scalar_result(self->dtype, other);

	if (!npk_float_int_or_bool(dt))
		return vnpu_npu_unsupported();
	return compare_scalar(name, code, self, other, dt);
}

struct vnpu_at_tensor *vnpu_npu_family_compare_scalar(vnpu_keyset_t ks,
						      const char *name,
						      uint32_t code,
						      struct vnpu_at_tensor *self,
						      struct vnpu_at_scalar other)
{
	(void)ks;
	return npu_compare_scalar(name, code, self, other);
}

/*
 * logical_and/or/xor(a, b): (a != 0) op (b != 0) as bools, both in the
 * promoted dtype first as PyTorch casts them (an int64 0-dim 256 with an
 * int8 tensor is int8 0: false).
 */
static struct vnpu_at_tensor *npu_logical(const char *name, uint32_t code,
					  struct vnpu_at_tensor *a,
					  struct vnpu_at_tensor *b)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(a, b);
	struct vnpu_at_tensor *ca, *cb = NULL, *ta = NULL, *tb = NULL, *r = NULL;

	if (!npk_float_int_or_bool(dt))
		return vnpu_npu_unsupported();
	ca = npk_operand(a, dt);
	cb = ca ? npk_operand(b, dt) : NULL;
	if (cb)
		ta = npu_compare_scalar(name, VNPU_BINARY_NE, ca, VNPU_AT_INT(0));
	if (ta)
		tb = npu_compare_scalar(name, VNPU_BINARY_NE, cb, VNPU_AT_INT(0));
	if (tb)
		r = binary_op(name, code, ta, tb, VNPU_AT_BOOL, 1.0);
	vnpu_at_release(ca);
	vnpu_at_release(cb);
	vnpu_at_release(ta);
	vnpu_at_release(tb);
	return r;
}

struct vnpu_at_tensor *vnpu_npu_logical_and(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *other)
{
	return npu_logical("aten::logical_and", VNPU_BINARY_BITWISE_AND,
			   self, other);
}

struct vnpu_at_tensor *vnpu_npu_logical_or(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other)
{
	return npu_logical("aten::logical_or", VNPU_BINARY_BITWISE_OR,
			   self, other);
}

struct vnpu_at_tensor *vnpu_npu_logical_xor(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *other)
{
	return npu_logical("aten::logical_xor", VNPU_BINARY_NE,
			   self, other);
}

/* logical_not(x) = (x == 0) */
struct vnpu_at_tensor *vnpu_npu_logical_not(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self)
{
	return npu_compare_scalar(
				  "aten::logical_not", VNPU_BINARY_EQ, self, VNPU_AT_INT(0));
}

/* ---- unary --------------------------------------------------------------------- */

/* op(self) computed in dt (self converted first). */
static struct vnpu_at_tensor *unary_in(const char *name, uint32_t op,
				       struct vnpu_at_tensor *self,
				       enum vnpu_at_dtype dt)
{
	struct vnpu_at_tensor *src = npk_operand(self, dt), *out;

	if (!src)
		return NULL;
	out = npk_unary(name, op, src);
	vnpu_at_release(src);
	return out;
}

struct vnpu_at_tensor *vnpu_npu_neg(vnpu_keyset_t ks,
				    struct vnpu_at_tensor *self)
{
	if (!npk_float_or_int(self->dtype))
		return vnpu_npu_unsupported();
	return unary_in("aten::neg", VNPU_UNARY_NEG, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_npu_bitwise_not(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self)
{
	if (!npk_float_int_or_bool(self->dtype) || npk_float(self->dtype))
		return vnpu_npu_unsupported();
	return unary_in("aten::bitwise_not", VNPU_UNARY_BITWISE_NOT, self,
			self->dtype);
}

struct vnpu_at_tensor *vnpu_npu_abs(vnpu_keyset_t ks,
				    struct vnpu_at_tensor *self)
{
	if (!npk_float_or_int(self->dtype))
		return vnpu_npu_unsupported();
	return unary_in("aten::abs", VNPU_UNARY_ABS, self, self->dtype);
}

/* The float ufuncs, native_functions.yaml's family float_unary, told apart
 * by their UNARY code: integer inputs are converted to float32 on the
 * device. */
struct vnpu_at_tensor *vnpu_npu_family_float_unary(vnpu_keyset_t ks,
						   const char *name,
						   uint32_t code,
						   struct vnpu_at_tensor *self)
{
	enum vnpu_at_dtype dt = kc_float_of(self->dtype);

	if (!npk_float(dt) || vnpu_npu_dtype(self->dtype) < 0)
		return vnpu_npu_unsupported();
	return unary_in(name, code, self, dt);
}

/* floor, ceil, trunc, round keep the dtype (integers: themselves); bool
 * goes to the CPU kernel, which words PyTorch's refusal. sign: -1, 0, 1
 * in the dtype, bool itself. */
#define NPU_SAME_DTYPE_UNARY_BODY(qname, code)			\
	if (!npk_float_or_int(self->dtype))				\
		return vnpu_npu_unsupported();			\
	return unary_in(qname, code, self, self->dtype)

/* floor, ceil, trunc, round: native_functions.yaml's family rounding */
struct vnpu_at_tensor *vnpu_npu_family_rounding(vnpu_keyset_t ks,
						const char *name, uint32_t code,
						struct vnpu_at_tensor *self)
{
	(void)ks;
	NPU_SAME_DTYPE_UNARY_BODY(name, code);
}

struct vnpu_at_tensor *vnpu_npu_sign(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self)
{
	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_op_clone(self);
	NPU_SAME_DTYPE_UNARY_BODY("aten::sign",
				  VNPU_UNARY_SIGN);
}

struct vnpu_at_tensor *vnpu_npu_gelu(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     const char *approximate)
{
	/* The device's GELU is the erf form; 'tanh' and errors go to the
	 * CPU kernel. */
	if (!npk_float(self->dtype) || !approximate ||
	    strcmp(approximate, "none") != 0)
		return vnpu_npu_unsupported();
	return unary_in("aten::gelu", VNPU_UNARY_GELU, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_npu_hardsigmoid(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self)
{
	if (!npk_float(self->dtype))
		return vnpu_npu_unsupported();
	return unary_in("aten::hardsigmoid", VNPU_UNARY_HARDSIGMOID, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_npu_hardswish(vnpu_keyset_t ks,
					  struct vnpu_at_tensor *self)
{
	if (!npk_float(self->dtype))
		return vnpu_npu_unsupported();
	return unary_in("aten::hardswish", VNPU_UNARY_HARDSWISH, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_npu_silu(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self)
{
	if (!npk_float(self->dtype))
		return vnpu_npu_unsupported();
	return unary_in("aten::silu", VNPU_UNARY_SILU, self, self->dtype);
}

struct vnpu_at_tensor *vnpu_npu_pow_Tensor_Scalar(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_scalar exponent)
{
	static const char name[] = "aten::pow.Tensor_Scalar";
	enum vnpu_at_dtype dt = kc_scalar_result(self->dtype, exponent);
	double e = vnpu_at_scalar_to_double(exponent);
	struct vnpu_at_tensor *x, *out;

	/* Powers the device has an exact kernel for; others on the CPU. */
	if (!npk_float(dt) || vnpu_npu_dtype(self->dtype) < 0 ||
	    (e != 1.0 && e != 2.0 && e != 0.5 && e != -0.5 && e != -1.0))
		return vnpu_npu_unsupported();
	x = npk_operand(self, dt);
	if (!x)
		return NULL;
	if (e == 2.0) {
		out = npk_binary(name, VNPU_BINARY_MUL, x, x, dt, 1.0);
	} else if (e == 0.5) {
		out = npk_unary(name, VNPU_UNARY_SQRT, x);
	} else if (e == -0.5) {
		out = npk_unary(name, VNPU_UNARY_RSQRT, x);
	} else if (e == -1.0) {
		struct vnpu_at_tensor *one = npk_scalar(1.0, dt);

		out = one ? npk_binary(name, VNPU_BINARY_DIV, one, x, dt, 1.0) :
			    NULL;
		vnpu_at_release(one);
	} else {
		/* x ** 1: a copy (the result never aliases self) */
		out = vnpu_npu_empty_iter(1, (const struct vnpu_at_tensor *[]){ x },
					  x->ndim, x->sizes, dt);
		if (out && !vnpu_npu_copy(name, out, x)) {
			vnpu_at_release(out);
			out = NULL;
		}
	}
	vnpu_at_release(x);
	return out;
}

struct vnpu_at_tensor *vnpu_npu_clamp(vnpu_keyset_t ks,
				      struct vnpu_at_tensor *self,
				      struct vnpu_at_scalar min,
				      struct vnpu_at_scalar max)
{
	static const char name[] = "aten::clamp";
	bool has_min = min.kind != VNPU_AT_SCALAR_NONE;
	bool has_max = max.kind != VNPU_AT_SCALAR_NONE;
	enum vnpu_at_dtype dt =
		kc_scalar_result(kc_scalar_result(self->dtype, min), max);
	struct vnpu_at_tensor *cur, *bound, *next;

	if ((!has_min && !has_max) || !npk_float_or_int(dt) ||
	    vnpu_npu_dtype(self->dtype) < 0)
		return vnpu_npu_unsupported();
	/* min(max(x, lo), hi) on BINARY MAXIMUM/MINIMUM: NaN propagates,
	 * from x or from a bound (PyTorch 2: a NaN bound, alone or not,
	 * makes every element NaN). */
	cur = npk_operand(self, dt);
	if (cur && has_min) {
		bound = npk_scalar_of(min, dt);
		next = bound ? npk_binary(name, VNPU_BINARY_MAXIMUM, cur,
					  bound, dt, 1.0) : NULL;
		vnpu_at_release(bound);
		vnpu_at_release(cur);
		cur = next;
	}
	if (cur && has_max) {
		bound = npk_scalar_of(max, dt);
		next = bound ? npk_binary(name, VNPU_BINARY_MINIMUM, cur,
					  bound, dt, 1.0) : NULL;
		vnpu_at_release(bound);
		vnpu_at_release(cur);
		cur = next;
	}
	return cur;
}

/*
 * out (consumed) in the layout TensorIterator gives the inputs a, b, a
 * first: a result computed from b first (lerp's |w| >= 0.5 form) is
 * copied into it when the two layouts differ (channels_last self with a
 * contiguous end).
 */
static struct vnpu_at_tensor *npk_layout_of(const char *name,
					    struct vnpu_at_tensor *out,
					    const struct vnpu_at_tensor *a,
					    const struct vnpu_at_tensor *b)
{
	const struct vnpu_at_tensor *in[2] = { a, b };
	int64_t strides[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *r;

	vnpu_at_iter_strides(2, in, out->ndim, out->sizes, strides);
	if (!memcmp(strides, out->strides, sizeof(int64_t) * out->ndim))
		return out;
	r = vnpu_npu_empty_iter(2, in, out->ndim, out->sizes,
				(enum vnpu_at_dtype)out->dtype);
	if (r && !vnpu_npu_copy(name, r, out)) {
		vnpu_at_release(r);
		r = NULL;
	}
	vnpu_at_release(out);
	return r;
}

/*
 * PyTorch's lerp in float32 (its opmath for f16/bf16 too, the weight a
 * float; float64 in double), rounded once to the dtype: end - self, then
 * self + w * diff or, for |w| >= 0.5, end + (w - 1) * diff (ADD with
 * alpha). The device rounds the product before the sum where PyTorch
 * fuses them: within an ulp.
 */
struct vnpu_at_tensor *vnpu_npu_lerp_Scalar(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *end,
					    struct vnpu_at_scalar weight)
{
	static const char name[] = "aten::lerp.Scalar";
	bool f64 = self->dtype == VNPU_AT_F64;
	enum vnpu_at_dtype ct = f64 ? VNPU_AT_F64 : VNPU_AT_F32;
	double w = vnpu_at_scalar_to_double(weight);
	struct vnpu_at_tensor *diff, *out;

	if (end->dtype != self->dtype || !npk_float(self->dtype))
		return vnpu_npu_unsupported();
	if (!f64)
		w = (float)w;
	diff = npk_binary(name, VNPU_BINARY_SUB, end, self, ct, 1.0);
	if (!diff)
		return NULL;
	if (fabs(w) < 0.5)
		out = npk_binary(name, VNPU_BINARY_ADD, self, diff, ct, w);
	else
		out = npk_binary(name, VNPU_BINARY_ADD, end, diff, ct,
				 f64 ? w - 1.0 : (double)(float)(w - 1.0f));
	vnpu_at_release(diff);
	out = npk_to(out, self->dtype);
	return out ? npk_layout_of(name, out, self, end) : NULL;
}

struct vnpu_at_tensor *vnpu_npu_where_self(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *condition,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	if (condition->dtype != VNPU_AT_BOOL || vnpu_npu_dtype(dt) < 0)
		return vnpu_npu_unsupported();
	return npk_where("aten::where.self", condition, self, other, dt);
}

/* ---- pointwise backward ops ------------------------------------------------------ */

struct vnpu_at_tensor *vnpu_npu_threshold_backward(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *grad_output,
						   struct vnpu_at_tensor *self,
						   struct vnpu_at_scalar threshold)
{
	static const char name[] = "aten::threshold_backward";
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);
	struct vnpu_at_tensor *th, *mask, *zero, *out = NULL;
	enum vnpu_at_dtype sdt = kc_scalar_result(self->dtype, threshold);

	if (!npk_float(dt) || !npk_float_or_int(sdt))
		return vnpu_npu_unsupported();
	/* PyTorch's self <= threshold ? 0 : grad, so a NaN self passes the
	 * gradient (NaN <= t is false) */
	th = npk_scalar_of(threshold, sdt);
	mask = th ? npk_binary(name, VNPU_BINARY_LE, self, th, sdt, 1.0) : NULL;
	zero = mask ? npk_scalar(0.0, dt) : NULL;
	if (zero)
		out = npk_where(name, mask, zero, grad_output, dt);
	vnpu_at_release(th);
	vnpu_at_release(mask);
	vnpu_at_release(zero);
	return out;
}

/*
 * The backward of sigmoid and tanh in PyTorch's own order of operations,
 * in float32 for f16/bf16 and rounded once (PyTorch's opmath type): the
 * gradient of a half forward is as exact as its dtype allows.
 *   sigmoid: g * (1 - y) * y        tanh: g * (1 - y * y)
 */
static struct vnpu_at_tensor *act_backward(const char *name, bool tanh_bw,
					   struct vnpu_at_tensor *grad_output,
					   struct vnpu_at_tensor *output,
					   enum vnpu_at_dtype dt)
{
	enum vnpu_at_dtype ct = dt == VNPU_AT_F64 ? dt : VNPU_AT_F32;
	struct vnpu_at_tensor *one, *a = NULL, *b = NULL, *out = NULL;

	one = npk_scalar(1.0, ct);
	if (one && tanh_bw) {
		a = npk_binary(name, VNPU_BINARY_MUL, output, output, ct, 1.0);
		b = a ? npk_binary(name, VNPU_BINARY_SUB, one, a, ct, 1.0) : NULL;
		out = b ? npk_binary(name, VNPU_BINARY_MUL, grad_output, b, ct,
				     1.0) : NULL;
	} else if (one) {
		a = npk_binary(name, VNPU_BINARY_SUB, one, output, ct, 1.0);
		b = a ? npk_binary(name, VNPU_BINARY_MUL, grad_output, a, ct,
				   1.0) : NULL;
		out = b ? npk_binary(name, VNPU_BINARY_MUL, b, output, ct, 1.0) :
			  NULL;
	}
	vnpu_at_release(one);
	vnpu_at_release(a);
	vnpu_at_release(b);
	return npk_to(out, dt);
}

struct vnpu_at_tensor *vnpu_npu_sigmoid_backward(vnpu_keyset_t ks,
						 struct vnpu_at_tensor *grad_output,
						 struct vnpu_at_tensor *output)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, output);

	if (!npk_float(dt) || !vnpu_at_dtype_is_float(grad_output->dtype))
		return vnpu_npu_unsupported();
	return act_backward("aten::sigmoid_backward", false, grad_output,
			    output, dt);
}

struct vnpu_at_tensor *vnpu_npu_tanh_backward(vnpu_keyset_t ks,
					      struct vnpu_at_tensor *grad_output,
					      struct vnpu_at_tensor *output)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, output);

	if (!npk_float(dt) || !vnpu_at_dtype_is_float(grad_output->dtype))
		return vnpu_npu_unsupported();
	return act_backward("aten::tanh_backward", true, grad_output, output,
			    dt);
}

/* The erf form on BINARY (grad * GELU'(x) in f32, rounded once, as the
 * CPU's opmath); 'tanh', integer inputs and bad arguments go to the CPU
 * kernel, which words the error. */
struct vnpu_at_tensor *vnpu_npu_gelu_backward(vnpu_keyset_t ks,
					      struct vnpu_at_tensor *grad_output,
					      struct vnpu_at_tensor *self,
					      const char *approximate)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);

	if (!npk_float(dt) || !vnpu_at_dtype_is_float(self->dtype) ||
	    !approximate || strcmp(approximate, "none") != 0)
		return vnpu_npu_unsupported();
	return npk_binary("aten::gelu_backward", VNPU_BINARY_GELU_BACKWARD,
			  grad_output, self, dt, 1.0);
}

/* grad * hardsigmoid'(x) and grad * hardswish'(x) on BINARY in f32,
 * rounded once; integers and bad arguments go to the CPU kernel, which
 * words the error. */
struct vnpu_at_tensor *vnpu_npu_hardsigmoid_backward(vnpu_keyset_t ks,
						     struct vnpu_at_tensor *grad_output,
						     struct vnpu_at_tensor *self)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);

	if (!npk_float(dt) || !vnpu_at_dtype_is_float(self->dtype) ||
	    !vnpu_at_dtype_is_float(grad_output->dtype))
		return vnpu_npu_unsupported();
	return npk_binary("aten::hardsigmoid_backward", VNPU_BINARY_HARDSIGMOID_BACKWARD,
			  grad_output, self, dt, 1.0);
}

struct vnpu_at_tensor *vnpu_npu_hardswish_backward(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *grad_output,
						   struct vnpu_at_tensor *self)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);

	if (!npk_float(dt) || !vnpu_at_dtype_is_float(self->dtype) ||
	    !vnpu_at_dtype_is_float(grad_output->dtype))
		return vnpu_npu_unsupported();
	return npk_binary("aten::hardswish_backward", VNPU_BINARY_HARDSWISH_BACKWARD,
			  grad_output, self, dt, 1.0);
}

/* ---- cat: one strided CAST per input into its slice of the output -------------- */

struct vnpu_at_tensor *vnpu_npu_cat(vnpu_keyset_t ks,
				    struct vnpu_at_tensor_list tensors,
				    int64_t dim)
{
	static const char name[] = "aten::cat";
	const struct vnpu_at_tensor *ref = NULL;
	enum vnpu_at_dtype dt = VNPU_AT_DTYPE_NONE;
	int64_t sizes[VNPU_AT_MAX_DIMS], d, pos = 0;
	struct vnpu_at_tensor *out;

	/* Anything irregular (legacy empty inputs, bad shapes, CPU
	 * tensors) goes to the CPU kernel, which words errors. */
	for (int64_t i = 0; i < tensors.n; i++) {
		const struct vnpu_at_tensor *t = tensors.v[i];

		if (!t || !vnpu_at_is_npu(t) || !t->ndim ||
		    vnpu_npu_dtype(t->dtype) < 0)
			return vnpu_npu_unsupported();
		dt = dt == VNPU_AT_DTYPE_NONE ? (enum vnpu_at_dtype)t->dtype :
			vnpu_at_promote(dt, (enum vnpu_at_dtype)t->dtype);
		if (ref && t->ndim != ref->ndim)
			return vnpu_npu_unsupported();
		ref = ref ? ref : t;
	}
	if (!ref || vnpu_npu_dtype(dt) < 0)
		return vnpu_npu_unsupported();
	d = dim < 0 ? dim + ref->ndim : dim;
	if (d < 0 || d >= ref->ndim)
		return vnpu_npu_unsupported();
	memcpy(sizes, ref->sizes, sizeof(int64_t) * ref->ndim);
	sizes[d] = 0;
	for (int64_t i = 0; i < tensors.n; i++) {
		const struct vnpu_at_tensor *t = tensors.v[i];

		for (uint32_t k = 0; k < ref->ndim; k++)
			if ((int64_t)k != d && t->sizes[k] != ref->sizes[k])
				return vnpu_npu_unsupported();
		if (__builtin_add_overflow(sizes[d], t->sizes[d], &sizes[d]))
			return vnpu_npu_unsupported();
	}
	out = vnpu_npu_empty(ref->ndim, sizes, dt);
	if (!out)
		return NULL;
	for (int64_t i = 0; i < tensors.n; i++) {
		struct vnpu_at_tensor *t = tensors.v[i], *slot;
		int64_t ssz[VNPU_AT_MAX_DIMS];
		bool ok;

		if (!t->sizes[d])
			continue;
		memcpy(ssz, sizes, sizeof(int64_t) * ref->ndim);
		ssz[d] = t->sizes[d];
		slot = vnpu_at_view_of(out, ref->ndim, ssz, out->strides,
				       pos * out->strides[d]);
		/* vnpu_npu_copy: one CAST (with the dtype conversion) for a
		 * plain input, TransData first for an internal format */
		ok = slot && vnpu_npu_copy(name, slot, t);
		vnpu_at_release(slot);
		if (!ok) {
			vnpu_at_release(out);
			return NULL;
		}
		pos += t->sizes[d];
	}
	return out;
}
