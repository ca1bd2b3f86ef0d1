// SPDX-License-Identifier: MIT
/*
 * conv2d through the GEMM engine against the GEMM kernel itself: the 3x3
 * convolutions of ResNet-50's four stages (NC1HWC0 input, FRACTAL_Z
 * weights, batch 8, padding 1) next to a GEMM of the same FLOPs (M = N *
 * Ho * Wo, N = Cout, K = Cin * 9, dense f32 or bf16), both one block on
 * this thread, alternating; median of several runs. Prints GFLOPS and
 * conv / GEMM.
 *
 * Usage: bench-conv [runs]   (default 7; or env VNPU_BENCH_RUNS)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "dtype.h"
#include "kernel.h"

struct conv_shape {
	const char *stage;
	int64_t n, c, hw, cout;
};

static const struct conv_shape shapes[] = {
	{"conv2_x", 8, 64, 56, 64},
	{"conv3_x", 8, 128, 28, 128},
	{"conv4_x", 8, 256, 14, 256},
	{"conv5_x", 8, 512, 7, 512},
};

static struct vnpu_tensor packed(uint32_t buffer, uint32_t dtype,
				 uint32_t format, int64_t n, int64_t c,
				 int64_t h, int64_t w)
{
	const int64_t sizes[4] = {n, c, h, w};

	return vnpu_tensor_dense(buffer, dtype, format, 4, sizes);
}

static struct vnpu_tensor dense(uint32_t buffer, uint32_t dtype, int64_t rows,
				int64_t cols)
{
	struct vnpu_tensor t = vnpu_tensor_f32_2d(buffer, rows, cols, cols, 1);

	t.dtype = dtype;
	return t;
}

/* Small values of the dtype in every element (padding included). */
static struct vnpu_kbuf buffer(uint64_t elems, uint32_t dtype, unsigned seed)
{
	uint32_t isz = vnpu_dtype_size(dtype);
	char *p = bench_alloc(elems * isz);

	for (uint64_t i = 0; i < elems; i++) {
		seed = seed * 1664525u + 1013904223u;
		vnpu_store_f64(p + i * isz, dtype,
			       (double)(seed >> 8) / 16777216.0 - 0.5);
	}
	return (struct vnpu_kbuf){p, elems * isz,
				  VNPU_ACCESS_READ | VNPU_ACCESS_WRITE};
}

static void bench_stage(const struct conv_shape *s, uint32_t dtype, int runs)
{
	const struct vnpu_kernel_def *conv =
		vnpu_kernel_find(VNPU_KERNEL_CONV2D);
	const struct vnpu_kernel_def *gemm = vnpu_kernel_find(VNPU_KERNEL_GEMM);
	int64_t c1 = (s->c + 15) / 16, co1 = (s->cout + 15) / 16;
	int64_t m = s->n * s->hw * s->hw, k = s->c * 9;
	double flops = 2.0 * (double)m * (double)s->cout * (double)k;
	struct vnpu_kbuf cb[3], gb[3];
	struct vnpu_kp_conv2d cp;
	struct vnpu_kp_gemm gp;
	double *tc = calloc((size_t)runs, sizeof(double));
	double *tg = calloc((size_t)runs, sizeof(double));

	if (!tc || !tg || !conv || !gemm) {
		fprintf(stderr, "out of memory or kernel missing\n");
		exit(1);
	}
	cb[0] = buffer((uint64_t)(s->n * c1 * s->hw * s->hw * 16), dtype, 1);
	cb[1] = buffer((uint64_t)(c1 * 9 * co1 * 16 * 16), dtype, 2);
	cb[2] = buffer((uint64_t)(s->n * co1 * s->hw * s->hw * 16), dtype, 3);
	memset(&cp, 0, sizeof(cp));
	cp.input =
		packed(0, dtype, VNPU_FORMAT_NC1HWC0, s->n, s->c, s->hw, s->hw);
	cp.weight =
		packed(1, dtype, VNPU_FORMAT_FRACTAL_Z, s->cout, s->c, 3, 3);
	cp.out = packed(2, dtype, VNPU_FORMAT_NC1HWC0, s->n, s->cout, s->hw,
			s->hw);
	cp.stride_h = cp.stride_w = 1;
	cp.pad_h = cp.pad_w = 1;
	cp.dil_h = cp.dil_w = 1;
	cp.groups = 1;

	gb[0] = buffer((uint64_t)(m * k), dtype, 4);
	gb[1] = buffer((uint64_t)(k * s->cout), dtype, 5);
	gb[2] = buffer((uint64_t)(m * s->cout), dtype, 6);
	memset(&gp, 0, sizeof(gp));
	gp.alpha = 1.0f;
	gp.a = dense(0, dtype, m, k);
	gp.b = dense(1, dtype, k, s->cout);
	gp.out = dense(2, dtype, m, s->cout);

	if (conv->validate(&cp, cb, 3) != VNPU_STATUS_OK ||
	    gemm->validate(&gp, gb, 3) != VNPU_STATUS_OK) {
		fprintf(stderr, "%s: parameters refused\n", s->stage);
		exit(1);
	}
	for (int r = 0; r < runs; r++) {
		double t0 = bench_now();

		conv->run(&cp, cb, 0, 1);
		double t1 = bench_now();

		gemm->run(&gp, gb, 0, 1);
		tc[r] = t1 - t0;
		tg[r] = bench_now() - t1;
	}
	double mc = bench_median(tc, runs), mg = bench_median(tg, runs);

	printf("%-8s %-4s [%ld,%ld,%ld,%ld] x [%ld,%ld,3,3]  %9.2f %9.2f "
	       "%7.3f\n",
	       s->stage, dtype == VNPU_DTYPE_F32 ? "f32" : "bf16", (long)s->n,
	       (long)s->c, (long)s->hw, (long)s->hw, (long)s->cout, (long)s->c,
	       flops / mc * 1e-9, flops / mg * 1e-9, mg / mc);
	for (int i = 0; i < 3; i++) {
		free(cb[i].ptr);
		free(gb[i].ptr);
	}
	free(tc);
	free(tg);
}

int main(int argc, char **argv)
{
	const char *env = getenv("VNPU_BENCH_RUNS");
	int runs = argc > 1 ? atoi(argv[1]) : env ? atoi(env) : 7;
	static const uint32_t dtypes[] = {VNPU_DTYPE_F32, VNPU_DTYPE_BF16};

	if (runs < 1)
		runs = 1;
	printf("conv2d 3x3 (NC1HWC0 x FRACTAL_Z, pad 1) against a GEMM of the "
	       "same FLOPs, one block on 1 thread each, median of %d runs; "
	       "goal: conv >= 0.8x GEMM\n",
	       runs);
	printf("%-8s %-4s %-28s %9s %9s %7s\n", "stage", "type", "shape",
	       "conv GF/s", "GEMM GF/s", "ratio");
	for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++)
		for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
			bench_stage(&shapes[i], dtypes[d], runs);
	return 0;
}
