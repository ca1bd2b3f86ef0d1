/* SPDX-License-Identifier: MIT */
/*
 * CPU reference for the workloads: plain loops in double precision, written
 * independently of kernels/ so that a device result is checked against a
 * second definition of the same math.
 */
#ifndef VNPU_WORKLOADS_REFERENCE_H
#define VNPU_WORKLOADS_REFERENCE_H

#include <stdint.h>

enum ref_act { REF_NONE, REF_RELU, REF_GELU };

/* out[b][m][n] = act(scale * sum_k a[b][m][k] * b[b][k][n] + bias[n]);
 * element (r, c) of matrix i of x is x[i*xs0 + r*xs1 + c*xs2]. */
void ref_gemm(int64_t batch, int64_t m, int64_t n, int64_t k,
	      const double *a, const int64_t as[3], const double *b,
	      const int64_t bs[3], const double *bias, double scale,
	      enum ref_act act, double *out);
void ref_softmax_rows(double *x, int64_t rows, int64_t cols, int log);
void ref_layer_norm_rows(const double *x, int64_t rows, int64_t cols,
			 const double *w, const double *b, double eps,
			 double *out);
/* NCHW input, OIHW weights, symmetric padding, stride 1, dilation 1. */
void ref_conv2d(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		const double *wt, int64_t cout, int64_t kh, int64_t kw,
		int64_t pad, const double *bias, enum ref_act act,
		double *out);
void ref_maxpool2x2(const double *x, int64_t planes, int64_t h, int64_t w,
		    double *out);
void ref_mean_planes(const double *x, int64_t planes, int64_t hw,
		     double *out);
double ref_act(enum ref_act act, double x);

/* max |got - want| / max(1, max |want|) over n elements. */
double ref_error(const float *got, const double *want, int64_t n);

#endif /* VNPU_WORKLOADS_REFERENCE_H */
