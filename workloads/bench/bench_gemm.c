// SPDX-License-Identifier: MIT
/*
 * GEMM throughput of the vnpu GEMM kernel in f32, bf16 and f16 (one block
 * on the calling thread, called through the kernel table) against OpenBLAS
 * cblas_sgemm limited to one thread on the same values, measured in the
 * same run. Prints GFLOPS of each and their ratio; every figure is the
 * median of several runs.
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
 *   isa   microkernel family limit: auto (default), avx512bf16, avx512,
 *         avx2 or portable
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "dtype.h"
#include "gemm_core.h"
#include "kernel.h"
#include "vnpu_runtime.h"

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

/* A dense row-major matrix of `dtype` at the start of `buffer`. */
static struct vnpu_tensor matrix(uint32_t buffer, uint32_t dtype, int64_t rows,
				 int64_t cols)
{
	struct vnpu_tensor t = vnpu_tensor_f32_2d(buffer, rows, cols, cols, 1);

	t.dtype = dtype;
	return t;
}

static const char *dtype_name(uint32_t dtype)
{
	return dtype == VNPU_DTYPE_F32	 ? "f32"
	       : dtype == VNPU_DTYPE_F16 ? "f16"
					 : "bf16";
}

/* The f32 values rounded to `dtype` (so the baseline multiplies the very
 * same numbers), stored in that dtype at dst. */
static void round_to(float *x, size_t n, uint32_t dtype, void *dst)
{
	for (size_t i = 0; i < n; i++) {
		if (dtype == VNPU_DTYPE_F32)
			continue;
		uint16_t h = dtype == VNPU_DTYPE_F16 ? vnpu_f32_to_f16(x[i])
						     : vnpu_f32_to_bf16(x[i]);

		x[i] = dtype == VNPU_DTYPE_F16 ? vnpu_f16_to_f32(h)
					       : vnpu_bf16_to_f32(h);
		memcpy((char *)dst + i * 2, &h, 2);
	}
	if (dtype == VNPU_DTYPE_F32)
		memcpy(dst, x, n * sizeof(float));
}

/*
 * One shape in one dtype: the vnpu kernel (one block on this thread, the
 * result in the operands' dtype, accumulated in f32) against OpenBLAS
 * sgemm on the same values in f32, alternating. Prints GFLOPS, the
 * ratio to sgemm and the largest difference relative to the largest
 * |result|. (Debian's OpenBLAS is built without its bf16 GEMM, sbgemm, so
 * sgemm is the baseline for every dtype.)
 */
static int bench_shape(const struct vnpu_kernel_def *gemm,
		       const struct shape *s, uint32_t dtype, int runs)
{
	size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n;
	size_t nc = (size_t)s->m * s->n, isz = vnpu_dtype_size(dtype);
	float *a = bench_alloc(na * sizeof(float));
	float *b = bench_alloc(nb * sizeof(float));
	float *c_blas = bench_alloc(nc * sizeof(float));
	void *a_x = bench_alloc(na * isz), *b_x = bench_alloc(nb * isz);
	void *c_x = bench_alloc(nc * isz);
	double flops = 2.0 * s->m * s->n * s->k, max_diff = 0, max_c = 0;
	double *s_vnpu = calloc((size_t)runs, sizeof(double));
	double *s_blas = calloc((size_t)runs, sizeof(double));
	struct vnpu_kbuf bufs[3];
	struct vnpu_kp_gemm p;
	uint32_t st;

	if (!s_vnpu || !s_blas) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	fill(a, na, 1);
	fill(b, nb, 2);
	round_to(a, na, dtype, a_x);
	round_to(b, nb, dtype, b_x);
	bufs[0] = (struct vnpu_kbuf){a_x, na * isz, VNPU_ACCESS_READ};
	bufs[1] = (struct vnpu_kbuf){b_x, nb * isz, VNPU_ACCESS_READ};
	bufs[2] = (struct vnpu_kbuf){c_x, nc * isz,
				     VNPU_ACCESS_READ | VNPU_ACCESS_WRITE};
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.trans_b = (uint32_t)s->trans_b;
	p.a = matrix(0, dtype, s->m, s->k);
	p.b = s->trans_b ? matrix(1, dtype, s->n, s->k)
			 : matrix(1, dtype, s->k, s->n);
	p.out = matrix(2, dtype, s->m, s->n);
	st = gemm->validate(&p, bufs, 3);
	if (st != VNPU_STATUS_OK) {
		fprintf(stderr, "gemm validate failed: %u\n", st);
		return 1;
	}

	/* Alternate them so all see the same machine conditions. */
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
	double t_vnpu = bench_median(s_vnpu, runs);
	double t_blas = bench_median(s_blas, runs);

	for (size_t i = 0; i < nc; i++) {
		double v =
			dtype == VNPU_DTYPE_F32
				? ((float *)c_x)[i]
				: vnpu_load_f64((char *)c_x + i * isz, dtype);
		double d = fabs(v - c_blas[i]);

		max_diff = d > max_diff ? d : max_diff;
		max_c = fabs(c_blas[i]) > max_c ? fabs(c_blas[i]) : max_c;
	}
	printf("%5d %5d %5d  %-3s %-4s %9.2f %9.2f %7.3f", s->m, s->n, s->k,
	       s->trans_b ? "NT" : "NN", dtype_name(dtype),
	       flops / t_vnpu * 1e-9, flops / t_blas * 1e-9, t_blas / t_vnpu);
	printf("   %.1e\n", max_c > 0 ? max_diff / max_c : max_diff);
	free(s_vnpu);
	free(s_blas);
	free(a);
	free(b);
	free(c_blas);
	free(a_x);
	free(b_x);
	free(c_x);
	return 0;
}

/*
 * The int8 engine: qgemm (u8 x s8, exact int32 sums, int32 out) on one
 * block against OpenBLAS sgemm of the same shape on one thread; ops/s
 * (2 M N K per product), alternating. The sums are checked exactly
 * against sgemm's on the same small integers (exact in f32 for these K).
 */
static int bench_int8(const struct shape *s, int runs)
{
	const struct vnpu_kernel_def *qgemm =
		vnpu_kernel_find(VNPU_KERNEL_QGEMM);
	size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n;
	size_t nc = (size_t)s->m * s->n;
	uint8_t *a = bench_alloc(na);
	int8_t *b = bench_alloc(nb);
	int32_t *c = bench_alloc(nc * 4);
	float *af = bench_alloc(na * 4), *bf = bench_alloc(nb * 4);
	float *cf = bench_alloc(nc * 4);
	double *tq = calloc((size_t)runs, sizeof(double));
	double *tb = calloc((size_t)runs, sizeof(double));
	double ops = 2.0 * s->m * s->n * s->k;
	size_t wrong = 0;
	struct vnpu_kbuf bufs[3];
	struct vnpu_kp_qgemm p;
	unsigned seed = 7;

	if (!qgemm || !tq || !tb) {
		fprintf(stderr, "qgemm kernel missing or out of memory\n");
		return 1;
	}
	/* values small enough that sgemm's f32 sums are exact */
	for (size_t i = 0; i < na; i++) {
		seed = seed * 1664525u + 1013904223u;
		a[i] = (uint8_t)(seed >> 28);
		af[i] = a[i];
	}
	for (size_t i = 0; i < nb; i++) {
		seed = seed * 1664525u + 1013904223u;
		b[i] = (int8_t)((int)(seed >> 28) - 8);
		bf[i] = b[i];
	}
	bufs[0] = (struct vnpu_kbuf){a, na, VNPU_ACCESS_READ};
	bufs[1] = (struct vnpu_kbuf){b, nb, VNPU_ACCESS_READ};
	bufs[2] = (struct vnpu_kbuf){c, nc * 4, VNPU_ACCESS_WRITE};
	memset(&p, 0, sizeof(p));
	p.trans_b = (uint32_t)s->trans_b;
	p.a = matrix(0, VNPU_DTYPE_U8, s->m, s->k);
	p.b = s->trans_b ? matrix(1, VNPU_DTYPE_I8, s->n, s->k)
			 : matrix(1, VNPU_DTYPE_I8, s->k, s->n);
	p.out = matrix(2, VNPU_DTYPE_I32, s->m, s->n);
	if (qgemm->validate(&p, bufs, 3) != VNPU_STATUS_OK) {
		fprintf(stderr, "qgemm validate failed\n");
		return 1;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = bench_now();

		qgemm->run(&p, bufs, 0, 1);
		double t1 = bench_now();

		cblas_sgemm(CblasRowMajor, CblasNoTrans,
			    s->trans_b ? CblasTrans : CblasNoTrans, s->m, s->n,
			    s->k, 1.0f, af, s->k, bf, s->trans_b ? s->k : s->n,
			    0.0f, cf, s->n);
		tq[r] = t1 - t0;
		tb[r] = bench_now() - t1;
	}
	for (size_t i = 0; i < nc; i++)
		wrong += (float)c[i] != cf[i];
	double mq = bench_median(tq, runs), mb = bench_median(tb, runs);

	printf("%5d %5d %5d  %-3s %-4s %9.2f %9.2f %7.3f   %s\n", s->m, s->n,
	       s->k, s->trans_b ? "NT" : "NN", "u8s8", ops / mq * 1e-9,
	       ops / mb * 1e-9, mb / mq, wrong ? "WRONG" : "exact");
	free(a);
	free(b);
	free(c);
	free(af);
	free(bf);
	free(cf);
	free(tq);
	free(tb);
	return wrong != 0;
}

#define RT_CHECK(call)                                                         \
	do {                                                                   \
		vnpu_error_t e_ = (call);                                      \
		if (e_ != VNPU_SUCCESS) {                                      \
			fprintf(stderr, "%s: %s\n", #call,                     \
				vnpu_error_string(e_));                        \
			return 1;                                              \
		}                                                              \
	} while (0)

/* One f32 GEMM launched through the runtime with `blocks` blocks and
 * waited for; seconds. */
static double launch_gemm(const struct vnpu_kp_gemm *p,
			  const struct vnpu_launch_buffer *bufs,
			  uint32_t blocks)
{
	double t0 = bench_now();

	if (vnpu_launch_kernel("gemm", blocks, bufs, 3, p, sizeof(*p), NULL) !=
		    VNPU_SUCCESS ||
	    vnpu_stream_synchronize(NULL) != VNPU_SUCCESS)
		return -1;
	return bench_now() - t0;
}

/*
 * The device's cores: the runtime's simulator (VNPU_BACKEND=sim, as many
 * cores as it has) runs one f32 GEMM launch as one block (one core) and
 * as one block per core (the kernel splits the output rows between them,
 * each core packing its own A panels), against OpenBLAS sgemm with as many
 * threads, alternating. Times include the launch and the synchronize.
 */
static int bench_cores(int runs)
{
	static const int sizes[] = {1024, 2048};
	struct vnpu_device_props props;

	setenv("VNPU_BACKEND", "sim", 0);
	RT_CHECK(vnpu_init());
	RT_CHECK(vnpu_device_properties(0, &props));
	openblas_set_num_threads((int)props.cores);
	printf("\nf32 GEMM on all device cores: %s, %u cores, one launch of "
	       "%u blocks vs 1 block, through the runtime (launch + "
	       "synchronize); OpenBLAS sgemm on %u threads; median of %d\n",
	       props.name, props.cores, props.cores, props.cores, runs);
	printf("goal: >= 1.8x one core, >= 1.0x OpenBLAS on as many "
	       "threads\n");
	printf("%5s %5s %5s %10s %10s %8s %10s %8s\n", "M", "N", "K", "1 core",
	       "all cores", "scaling", "sgemm", "ratio");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = sizes[i];
		size_t bytes = (size_t)n * n * sizeof(float);
		float *host = bench_alloc(bytes), *hc = bench_alloc(bytes);
		double *t1 = calloc((size_t)runs, sizeof(double));
		double *tn = calloc((size_t)runs, sizeof(double));
		double *tb = calloc((size_t)runs, sizeof(double));
		double flops = 2.0 * n * n * n;
		void *d[3];
		struct vnpu_launch_buffer bufs[3];
		struct vnpu_kp_gemm p;

		if (!t1 || !tn || !tb) {
			fprintf(stderr, "out of memory\n");
			return 1;
		}
		fill(host, (size_t)n * n, 3);
		for (int j = 0; j < 3; j++) {
			RT_CHECK(vnpu_malloc(&d[j], bytes));
			RT_CHECK(vnpu_memcpy(d[j], host, bytes,
					     VNPU_MEMCPY_H2D));
			bufs[j] = (struct vnpu_launch_buffer){
				d[j], bytes,
				j == 2 ? VNPU_ACCESS_READ | VNPU_ACCESS_WRITE
				       : VNPU_ACCESS_READ};
		}
		memset(&p, 0, sizeof(p));
		p.alpha = 1.0f;
		p.a = matrix(0, VNPU_DTYPE_F32, n, n);
		p.b = matrix(1, VNPU_DTYPE_F32, n, n);
		p.out = matrix(2, VNPU_DTYPE_F32, n, n);
		for (int r = 0; r < runs; r++) {
			double t0;

			t1[r] = launch_gemm(&p, bufs, 1);
			tn[r] = launch_gemm(&p, bufs, props.cores);
			t0 = bench_now();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
				    n, n, n, 1.0f, host, n, host, n, 0.0f, hc,
				    n);
			tb[r] = bench_now() - t0;
			if (t1[r] < 0 || tn[r] < 0) {
				fprintf(stderr, "gemm launch failed: %s\n",
					vnpu_last_error_detail());
				return 1;
			}
		}
		double m1 = bench_median(t1, runs), mn = bench_median(tn, runs);
		double mb = bench_median(tb, runs);

		printf("%5d %5d %5d %10.2f %10.2f %7.2fx %10.2f %7.3fx\n", n, n,
		       n, flops / m1 * 1e-9, flops / mn * 1e-9, m1 / mn,
		       flops / mb * 1e-9, mb / mn);
		for (int j = 0; j < 3; j++)
			RT_CHECK(vnpu_free(d[j]));
		free(host);
		free(hc);
		free(t1);
		free(tn);
		free(tb);
	}
	openblas_set_num_threads(1);
	RT_CHECK(vnpu_finalize());
	return 0;
}

/* OpenBLAS cores whose sgemm kernels use AVX-512, and AVX2 with FMA. */
static const char *const avx512_cores[] = {"SkylakeX", "Cooperlake",
					   "SapphireRapids", NULL};
static const char *const avx2_cores[] = {
	"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", NULL};

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
						"avx512", "avx512bf16"};
	const uint32_t n_isa = sizeof(isa_names) / sizeof(isa_names[0]);
	/* the goals each dtype's kernel is held to, as ratios to sgemm */
	static const struct {
		uint32_t dtype;
		const char *goal;
	} dtypes[] = {
		{VNPU_DTYPE_F32, ">= 1.0x sgemm"},
		{VNPU_DTYPE_BF16, ">= 1.7x sgemm: vdpbf16ps does two products "
				  "per f32 lane"},
		{VNPU_DTYPE_F16, ">= 1.0x sgemm: converted to f32 once per "
				 "packed panel"},
	};
	uint32_t isa = VNPU_GEMM_ISA_AUTO, bf16_isa;

	if (runs < 1)
		runs = 1;
	if (argc > 2) {
		for (isa = 0; isa < n_isa; isa++)
			if (strcmp(argv[2], isa_names[isa]) == 0)
				break;
		if (isa == n_isa) {
			fprintf(stderr, "unknown isa %s\n", argv[2]);
			return 2;
		}
	}
	choose_openblas_core(argv);
	bf16_isa = vnpu_gemm_set_isa(isa);
	openblas_set_num_threads(1);
	printf("GEMM on one device core (one block on this thread) against "
	       "OpenBLAS on 1 thread, median of %d runs (CLOCK_MONOTONIC); "
	       "vnpu microkernel %s (bf16 jobs: %s)\n",
	       runs,
	       isa_names[bf16_isa == VNPU_GEMM_ISA_AVX512_BF16
				 ? VNPU_GEMM_ISA_AVX512
				 : bf16_isa],
	       isa_names[bf16_isa]);
	printf("sgemm: OpenBLAS sgemm on the same values in f32; rel.diff: "
	       "max |vnpu - sgemm| / max |sgemm|\n");
	for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
		printf("\n%s operands, f32 accumulation; goal %s\n",
		       dtype_name(dtypes[d].dtype), dtypes[d].goal);
		printf("%5s %5s %5s  %-3s %-4s %9s %9s %7s   %s\n", "M", "N",
		       "K", "op", "type", "vnpu GF/s", "sgemm", "ratio",
		       "rel.diff");
		for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
			rc |= bench_shape(gemm, &shapes[i], dtypes[d].dtype,
					  runs);
	}
	printf("\nint8 operands (u8 x s8), int32 accumulation; goal >= 3x "
	       "sgemm ops/s (vpdpbusd: four products per int32 lane)\n");
	printf("%5s %5s %5s  %-3s %-4s %9s %9s %7s   %s\n", "M", "N", "K", "op",
	       "type", "vnpu GOP/s", "sgemm", "ratio", "sums");
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		rc |= bench_int8(&shapes[i], runs);
	rc |= bench_cores(runs);
	return rc;
}
