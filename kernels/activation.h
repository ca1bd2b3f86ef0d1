/* SPDX-License-Identifier: MIT */
/*
 * Activation functions shared by UNARY and the fused epilogues of GEMM and
 * CONV2D, so every kernel computes them the same way (in f32).
 */
#ifndef VNPU_KERNELS_ACTIVATION_H
#define VNPU_KERNELS_ACTIVATION_H

#include <math.h>
#include <stdint.h>

#include "vnpu/kernel_abi.h"

static inline float vnpu_relu(float x)
{
	/* NaN < 0 is false, so NaN passes through as in PyTorch */
	return x < 0.0f ? 0.0f : x;
}

/* Erf form, 0.5 * x * (1 + erf(x / sqrt(2))), as PyTorch's default,
 * written with erfc(-x / sqrt(2)) == 1 + erf(x / sqrt(2)) so that large
 * negative x do not lose every digit to the cancellation in 1 + erf. */
static inline float vnpu_gelu(float x)
{
	return 0.5f * x * erfcf(x * -0.70710678118654752440f);
}

/* d/dx of the erf form: Phi(x) + x * phi(x), the normal distribution's
 * cdf and density, as PyTorch's GeluBackward computes it. */
static inline float vnpu_gelu_grad(float x)
{
	float cdf = 0.5f * erfcf(x * -0.70710678118654752440f);
	float pdf = 0.39894228040143267794f * expf(-0.5f * x * x);

	return cdf + x * pdf;
}

/* Written so that neither branch overflows exp for large |x|. */
static inline float vnpu_sigmoid(float x)
{
	if (x >= 0.0f)
		return 1.0f / (1.0f + expf(-x));
	float e = expf(x);

	return e / (1.0f + e);
}

static inline float vnpu_silu(float x)
{
	return x * vnpu_sigmoid(x);
}

static inline float vnpu_tanh(float x)
{
	return tanhf(x);
}

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
