// SPDX-License-Identifier: MIT
/*
 * fp32 GEMM throughput of the vnpu GEMM kernel (one block on the calling
 * thread, called through the kernel table) against OpenBLAS cblas_sgemm
 * limited to one thread, measured in the same run. Prints GFLOPS of each
 * and their ratio; every figure is the median of several runs.
 *
 * The baseline must be the best OpenBLAS does on this CPU. Its dynamic
 * dispatch goes by the CPU model, and a virtual CPU with a generic model
 * name gets the Prescott kernels (a fifth of the speed) even with AVX-512.
 * So the bench asks OpenBLAS which core it chose, and when the CPU has
 * AVX-512 (or AVX2 and FMA) but the core is an older one, runs itself
 * again with OPENBLAS_CORETYPE naming the matching core, read by OpenBLAS
 * when it loads. It prints the core it compared against either way.
 *
 * Usage: bench-gemm [runs [isa]]
 *   runs  median of how many (default 11; or env VNPU_BENCH_RUNS)
 *   isa   microkernel family: auto (default), avx512, avx2 or portable
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "gemm_core.h"
#include "bench.h"
#include "kernel.h"

struct shape {
	int m, n, k;
	int trans_b;
};

static const struct shape shapes[] = {
	{256, 256, 256, 0},  {512, 512, 512, 0},  {1024, 1024, 1024, 0},
	{384, 1000, 512, 0}, {1000, 384, 768, 1},
};

static void fill(float *x, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		x[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
	}
}

/* A dense row-major f32 matrix at the start of `buffer`. */
static struct vnpu_tensor matrix(uint32_t buffer, int64_t rows, int64_t cols)
{
	return vnpu_tensor_f32_2d(buffer, rows, cols, cols, 1);
}

static int bench_shape(const struct vnpu_kernel_def *gemm,
		       const struct shape *s, int runs)
{
	size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n;
	size_t nc = (size_t)s->m * s->n;
	float *a = aligned_alloc(64, na * sizeof(float));
	float *b = aligned_alloc(64, nb * sizeof(float));
	float *c_vnpu = aligned_alloc(64, nc * sizeof(float));
	float *c_blas = aligned_alloc(64, nc * sizeof(float));
	double flops = 2.0 * s->m * s->n * s->k;
	double t_vnpu, t_blas, max_diff = 0;
	double *s_vnpu = calloc((size_t)runs, sizeof(double));
	double *s_blas = calloc((size_t)runs, sizeof(double));
	struct vnpu_kbuf bufs[3];
	struct vnpu_kp_gemm p;
	uint32_t st;

	if (!a || !b || !c_vnpu || !c_blas || !s_vnpu || !s_blas) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	fill(a, na, 1);
	fill(b, nb, 2);
	bufs[0] = (struct vnpu_kbuf){a, na * sizeof(float), VNPU_ACCESS_READ};
	bufs[1] = (struct vnpu_kbuf){b, nb * sizeof(float), VNPU_ACCESS_READ};
	bufs[2] = (struct vnpu_kbuf){c_vnpu, nc * sizeof(float),
				     VNPU_ACCESS_READ | VNPU_ACCESS_WRITE};
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.trans_b = (uint32_t)s->trans_b;
	p.a = matrix(0, s->m, s->k);
	p.b = s->trans_b ? matrix(1, s->n, s->k) : matrix(1, s->k, s->n);
	p.out = matrix(2, s->m, s->n);
	st = gemm->validate(&p, bufs, 3);
	if (st != VNPU_STATUS_OK) {
		fprintf(stderr, "gemm validate failed: %u\n", st);
		return 1;
	}

	/* Alternate the two so both see the same machine conditions. */
	for (int r = 0; r < runs; r++) {
		double t0 = bench_now();

		gemm->run(&p, bufs, 0, 1);
		double t1 = bench_now();

		cblas_sgemm(CblasRowMajor, CblasNoTrans,
			    s->trans_b ? CblasTrans : CblasNoTrans, s->m, s->n,
			    s->k, 1.0f, a, s->k, b, s->trans_b ? s->k : s->n,
			    0.0f, c_blas, s->n);
		double t2 = bench_now();

		s_vnpu[r] = t1 - t0;
		s_blas[r] = t2 - t1;
	}
	t_vnpu = bench_median(s_vnpu, runs);
	t_blas = bench_median(s_blas, runs);
	for (size_t i = 0; i < nc; i++) {
		double d = fabs((double)c_vnpu[i] - c_blas[i]);

		if (d > max_diff)
			max_diff = d;
	}
	printf("%5d %5d %5d  %-3s %9.2f %9.2f %7.3f   %.2e\n", s->m, s->n, s->k,
	       s->trans_b ? "NT" : "NN", flops / t_vnpu * 1e-9,
	       flops / t_blas * 1e-9, t_blas / t_vnpu, max_diff);
	free(s_vnpu);
	free(s_blas);
	free(a);
	free(b);
	free(c_vnpu);
	free(c_blas);
	return 0;
}

/* OpenBLAS cores whose sgemm kernels use AVX-512, and AVX2 with FMA. */
static const char *const avx512_cores[] = {"SkylakeX", "Cooperlake",
					   "SapphireRapids", NULL};
static const char *const avx2_cores[] = {"Haswell",	   "Zen",
					 "SkylakeX",	   "Cooperlake",
					 "SapphireRapids", NULL};

static int core_in(const char *core, const char *const *list)
{
	for (; *list; list++)
		if (strcasecmp(core, *list) == 0)
			return 1;
	return 0;
}

/*
 * The OpenBLAS core that is best for this CPU's sgemm, or NULL when the
 * one OpenBLAS chose is already it (or the CPU has neither AVX2 nor
 * AVX-512, where OpenBLAS's own choice stands).
 */
static const char *better_core(const char *chosen)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512cd"))
		return core_in(chosen, avx512_cores) ? NULL : avx512_cores[0];
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return core_in(chosen, avx2_cores) ? NULL : avx2_cores[0];
	return NULL;
}

/*
 * Makes sure the baseline runs OpenBLAS's best core: re-executes once with
 * OPENBLAS_CORETYPE set when it does not. Prints what it compared against.
 */
static void choose_openblas_core(char **argv)
{
	const char *chosen = openblas_get_corename();
	const char *forced = getenv("VNPU_BENCH_OPENBLAS_DISPATCHED");
	const char *user = getenv("OPENBLAS_CORETYPE");
	const char *want = better_core(chosen);

	if (want && !forced && !user) {
		/* OpenBLAS reads the variable when it loads: run again. */
		setenv("VNPU_BENCH_OPENBLAS_DISPATCHED", chosen, 1);
		setenv("OPENBLAS_CORETYPE", want, 1);
		fflush(stdout);
		execv("/proc/self/exe", argv);
		fprintf(stderr, "bench-gemm: re-exec failed; continuing\n");
	}
	printf("baseline: %s\n", openblas_get_config());
	if (forced)
		printf("baseline core: %s (this bench set OPENBLAS_CORETYPE=%s: "
		       "OpenBLAS's own dispatch chose %s, older than this "
		       "CPU)\n",
		       chosen, user, forced);
	else if (user)
		printf("baseline core: %s (OPENBLAS_CORETYPE=%s from the "
		       "environment)\n",
		       chosen, user);
	else
		printf("baseline core: %s (OpenBLAS's own choice, the best for "
		       "this CPU)\n",
		       chosen);
	if (want)
		printf("WARNING: OpenBLAS runs core %s where %s is the best "
		       "for this CPU: the ratios below overstate vnpu\n",
		       chosen, want);
}

int main(int argc, char **argv)
{
	const struct vnpu_kernel_def *gemm = vnpu_kernel_find(VNPU_KERNEL_GEMM);
	const char *env = getenv("VNPU_BENCH_RUNS");
	int runs = argc > 1 ? atoi(argv[1]) : env ? atoi(env) : 11;
	int rc = 0;

	if (!gemm) {
		fprintf(stderr, "gemm kernel missing\n");
		return 1;
	}
	static const char *const isa_names[] = {"auto", "portable", "avx2",
						"avx512"};
	uint32_t isa = VNPU_GEMM_ISA_AUTO;

	if (runs < 1)
		runs = 1;
	if (argc > 2) {
		for (isa = 0; isa < 4; isa++)
			if (strcmp(argv[2], isa_names[isa]) == 0)
				break;
		if (isa == 4) {
			fprintf(stderr, "unknown isa %s\n", argv[2]);
			return 2;
		}
	}
	choose_openblas_core(argv);
	isa = vnpu_gemm_set_isa(isa);
	openblas_set_num_threads(1);
	printf("fp32 GEMM, 1 thread each, median of %d runs (CLOCK_MONOTONIC), "
	       "vnpu microkernel %s\n",
	       runs, isa_names[isa]);
	printf("%5s %5s %5s  %-3s %9s %9s %7s   %s\n", "M", "N", "K", "op",
	       "vnpu GF/s", "BLAS GF/s", "ratio", "max|diff|");
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		rc |= bench_shape(gemm, &shapes[i], runs);
	return rc;
}
