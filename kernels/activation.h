/* SPDX-License-Identifier: MIT */
/*
 * Activation functions shared by UNARY and the fused epilogues of GEMM and
 * CONV2D, so every kernel computes them the same way (in f32; in double
 * for F64).
 */
#ifndef VNPU_KERNELS_ACTIVATION_H
#define VNPU_KERNELS_ACTIVATION_H

#include <math.h>
#include <stdint.h>

#include "vnpu/kernel_abi.h"

/*
 * The activations, defined once for two types: T = float with the names
 * below, computed in f32 (UNARY, BINARY and the fused epilogues), and
 * T = double with the suffix _f64 (the F64 paths of UNARY and BINARY). S is
 * the name suffix, F the C library's and the literals' suffix (f, or
 * nothing for double), so the float versions are plain f32 code.
 */
#define VNPU_DEFINE_ACTIVATIONS(T, S, F)                                       \
	/* NaN < 0 is false, so NaN passes through as in PyTorch */            \
	static inline T vnpu_relu##S(T x)                                      \
	{                                                                      \
		return x < 0.0##F ? 0.0##F : x;                                \
	}                                                                      \
                                                                               \
	/* Erf form, 0.5 * x * (1 + erf(x / sqrt(2))), as PyTorch's default,   \
	 * written with erfc(-x / sqrt(2)) == 1 + erf(x / sqrt(2)) so that     \
	 * large negative x do not lose every digit to the cancellation in     \
	 * 1 + erf. */                                                         \
	static inline T vnpu_gelu##S(T x)                                      \
	{                                                                      \
		return 0.5##F * x * erfc##F(x * -0.70710678118654752440##F);   \
	}                                                                      \
                                                                               \
	/* d/dx of the erf form: Phi(x) + x * phi(x), the normal              \
	 * distribution's cdf and density, as PyTorch's GeluBackward computes  \
	 * it. */                                                              \
	static inline T vnpu_gelu_grad##S(T x)                                 \
	{                                                                      \
		T cdf = 0.5##F * erfc##F(x * -0.70710678118654752440##F);      \
		T pdf = 0.39894228040143267794##F * exp##F(-0.5##F * x * x);   \
                                                                               \
		return cdf + x * pdf;                                          \
	}                                                                      \
                                                                               \
	/* Written so that neither branch overflows exp for large |x|. */      \
	static inline T vnpu_sigmoid##S(T x)                                   \
	{                                                                      \
		if (x >= 0.0##F)                                               \
			return 1.0##F / (1.0##F + exp##F(-x));                 \
		T e = exp##F(x);                                               \
                                                                               \
		return e / (1.0##F + e);                                       \
	}                                                                      \
                                                                               \
	static inline T vnpu_silu##S(T x)                                      \
	{                                                                      \
		return x * vnpu_sigmoid##S(x);                                 \
	}                                                                      \
                                                                               \
	static inline T vnpu_tanh##S(T x)                                      \
	{                                                                      \
		return tanh##F(x);                                             \
	}                                                                      \
                                                                               \
	/* min(max(x + 3, 0), 6), NaN kept, as PyTorch's std::min/max */      \
	static inline T vnpu_relu6_shift3##S(T x)                              \
	{                                                                      \
		T t = x + 3.0##F;                                              \
                                                                               \
		return t < 0.0##F ? 0.0##F : t > 6.0##F ? 6.0##F : t;         \
	}                                                                      \
                                                                               \
	static inline T vnpu_hardsigmoid##S(T x)                               \
	{                                                                      \
		return vnpu_relu6_shift3##S(x) / 6.0##F;                       \
	}                                                                      \
                                                                               \
	static inline T vnpu_hardswish##S(T x)                                 \
	{                                                                      \
		return x * vnpu_relu6_shift3##S(x) / 6.0##F;                   \
	}                                                                      \
                                                                               \
	/* PyTorch's one_sixth is the float 1.0f / 6.0f for every dtype */    \
	static inline T vnpu_hardsigmoid_grad##S(T g, T x)                     \
	{                                                                      \
		return x > -3.0##F && x < 3.0##F ? g * (T)(1.0f / 6.0f)        \
						 : 0.0##F;                     \
	}                                                                      \
                                                                               \
	/* NaN x gives NaN, as PyTorch's vectorised CPU kernel (its scalar   \
	 * tail and CUDA give g) */                                           \
	static inline T vnpu_hardswish_grad##S(T g, T x)                       \
	{                                                                      \
		if (x <= -3.0##F)                                              \
			return 0.0##F;                                         \
		return x >= 3.0##F ? g : g * (x / 3.0##F + 0.5##F);            \
	}

VNPU_DEFINE_ACTIVATIONS(float, , f)
VNPU_DEFINE_ACTIVATIONS(double, _f64, )

/* Applies enum vnpu_activation `act`; an unknown value acts as NONE (the
 * validators reject unknown values before any kernel runs). */
static inline float vnpu_activate(uint32_t act, float x)
{
	switch (act) {
	case VNPU_ACT_RELU:
		return vnpu_relu(x);
	case VNPU_ACT_GELU:
		return vnpu_gelu(x);
	case VNPU_ACT_SILU:
		return vnpu_silu(x);
	case VNPU_ACT_SIGMOID:
		return vnpu_sigmoid(x);
	case VNPU_ACT_TANH:
		return vnpu_tanh(x);
	default:
		return x;
	}
}

/* True for a value of enum vnpu_activation. */
static inline int vnpu_activation_valid(uint32_t act)
{
	return act <= VNPU_ACT_TANH;
}

#endif /* VNPU_KERNELS_ACTIVATION_H */
