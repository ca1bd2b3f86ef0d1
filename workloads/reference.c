// SPDX-License-Identifier: MIT
#include "reference.h"

#include <math.h>

double ref_act(enum ref_act act, double x)
{
	switch (act) {
	case REF_RELU:
		return x > 0 ? x : 0;
	case REF_GELU:
		return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	default:
		return x;
	}
}

void ref_gemm(int64_t batch, int64_t m, int64_t n, int64_t k,
	      const double *a, const int64_t as[3], const double *b,
	      const int64_t bs[3], const double *bias, double scale,
	      enum ref_act act, double *out)
{
	for (int64_t i = 0; i < batch; i++)
		for (int64_t r = 0; r < m; r++)
			for (int64_t c = 0; c < n; c++) {
				double acc = 0;

				for (int64_t x = 0; x < k; x++)
					acc += a[i * as[0] + r * as[1] + x * as[2]] *
					       b[i * bs[0] + x * bs[1] + c * bs[2]];
				acc = acc * scale + (bias ? bias[c] : 0);
				out[(i * m + r) * n + c] = ref_act(act, acc);
			}
}

void ref_softmax_rows(double *x, int64_t rows, int64_t cols, int log_form)
{
	for (int64_t r = 0; r < rows; r++) {
		double *row = x + r * cols, mx = -INFINITY, sum = 0;

		for (int64_t c = 0; c < cols; c++)
			mx = row[c] > mx ? row[c] : mx;
		for (int64_t c = 0; c < cols; c++)
			sum += exp(row[c] - mx);
		for (int64_t c = 0; c < cols; c++)
			row[c] = log_form ? row[c] - mx - log(sum)
					  : exp(row[c] - mx) / sum;
	}
}

void ref_layer_norm_rows(const double *x, int64_t rows, int64_t cols,
			 const double *w, const double *b, double eps,
			 double *out)
{
	for (int64_t r = 0; r < rows; r++) {
		const double *row = x + r * cols;
		double mean = 0, var = 0;

		for (int64_t c = 0; c < cols; c++)
			mean += row[c];
		mean /= (double)cols;
		for (int64_t c = 0; c < cols; c++)
			var += (row[c] - mean) * (row[c] - mean);
		var /= (double)cols;
		for (int64_t c = 0; c < cols; c++)
			out[r * cols + c] = (row[c] - mean) / sqrt(var + eps) *
						    w[c] + b[c];
	}
}

void ref_conv2d(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		const double *wt, int64_t cout, int64_t kh, int64_t kw,
		int64_t pad, const double *bias, enum ref_act act,
		double *out)
{
	int64_t ho = h + 2 * pad - kh + 1, wo = w + 2 * pad - kw + 1;

	for (int64_t in = 0; in < n; in++)
		for (int64_t o = 0; o < cout; o++)
			for (int64_t y = 0; y < ho; y++)
				for (int64_t z = 0; z < wo; z++) {
					double acc = bias[o];

					for (int64_t ic = 0; ic < c; ic++)
						for (int64_t dy = 0; dy < kh; dy++)
							for (int64_t dz = 0; dz < kw; dz++) {
								int64_t iy = y + dy - pad, iz = z + dz - pad;

								if (iy < 0 || iy >= h || iz < 0 || iz >= w)
									continue;
								acc += x[((in * c + ic) * h + iy) * w + iz] *
								       wt[((o * c + ic) * kh + dy) * kw + dz];
							}
					out[((in * cout + o) * ho + y) * wo + z] =
						ref_act(act, acc);
				}
}

void ref_maxpool2x2(const double *x, int64_t planes, int64_t h, int64_t w,
		    double *out)
{
	for (int64_t p = 0; p < planes; p++)
		for (int64_t y = 0; y < h / 2; y++)
			for (int64_t z = 0; z < w / 2; z++) {
				const double *q = x + (p * h + 2 * y) * w + 2 * z;
				double m = fmax(fmax(q[0], q[1]),
						fmax(q[w], q[w + 1]));

				out[(p * (h / 2) + y) * (w / 2) + z] = m;
			}
}

void ref_mean_planes(const double *x, int64_t planes, int64_t hw, double *out)
{
	for (int64_t p = 0; p < planes; p++) {
		double s = 0;

		for (int64_t i = 0; i < hw; i++)
			s += x[p * hw + i];
		out[p] = s / (double)hw;
	}
}

double ref_error(const float *got, const double *want, int64_t n)
{
	double scale = 1, err = 0;

	for (int64_t i = 0; i < n; i++)
		scale = fmax(scale, fabs(want[i]));
	for (int64_t i = 0; i < n; i++) {
		double e = fabs((double)got[i] - want[i]);

		if (e != e)
			return INFINITY;
		err = fmax(err, e);
	}
	return err / scale;
}
