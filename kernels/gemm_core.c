// SPDX-License-Identifier: MIT
/*
 * Packed, cache-blocked f32 matrix multiply (the loop structure of Goto's
 * algorithm): B is packed in KC x NC blocks, A in MC x KC blocks, both as
 * micro-panels of MR rows / NR columns interleaved along k, so the
 * microkernel streams both operands with unit stride and keeps an MR x NR
 * tile of C in registers.
 *
 * The bf16 engine packs the same panels, then folds each pair of
 * reduction steps into one 32-bit word per row (step 2q in the low half,
 * 2q + 1 in the high half) in place: vdpbf16ps multiplies such pairs and
 * adds both products to an f32 lane, twice the work of an f32 FMA.
 */
#include "gemm_core.h"
#include "kernel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define VNPU_GEMM_X86 1
#endif

/* Blocking. KC x NR floats of B (32 KiB for NR = 32) stay in L1 while A
 * panels stream from L2; the MC x KC block of A (192 KiB) lives in L2 and
 * the KC x NC block of B (1 MiB) in L2/L3. MC and NC are multiples of every
 * MR and NR below. */
#define GEMM_KC 256
#define GEMM_MC 192
#define GEMM_NC 1024
/* Workspace mode accumulates GEMM_MB x GEMM_NC results in f32 (more rows
 * when fewer columns) before the epilogue converts them; B is re-packed
 * once per such row block. */
#define GEMM_MB 384

#define GEMM_MAX_MR 12
#define GEMM_MAX_NR 32

/* c = alpha * (a-panel x b-panel) + beta * c over a full MR x NR tile;
 * beta == 0 does not read c. */
typedef void (*gemm_micro_fn)(int64_t kc, const float *a, const float *b,
			      float *c, int64_t ldc, float alpha, float beta);

/* What a microkernel's panels hold. */
enum gemm_panels {
	PANELS_F32,
	PANELS_BF16_PAIRS, /* bf16 jobs only */
	PANELS_I8_QUADS,   /* int8 jobs only; c holds int32 */
};

struct gemm_micro {
	uint32_t isa;
	uint32_t mr, nr;
	gemm_micro_fn fn;
	enum gemm_panels panels;
};

/* Plain C, written so that a compiler's vectoriser can keep the 4 x 8
 * accumulator tile in registers of any SIMD width (or none). */
static void micro_portable(int64_t kc, const float *a, const float *b, float *c,
			   int64_t ldc, float alpha, float beta)
{
	float acc[4][8] = {{0}};

	for (int64_t p = 0; p < kc; p++) {
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 8; j++)
				acc[i][j] += a[i] * b[j];
		a += 4;
		b += 8;
	}
	for (int i = 0; i < 4; i++) {
		float *row = c + i * ldc;

		if (beta == 0.0f)
			for (int j = 0; j < 8; j++)
				row[j] = alpha * acc[i][j];
		else
			for (int j = 0; j < 8; j++)
				row[j] = alpha * acc[i][j] + beta * row[j];
	}
}

/* int32 c = a-quads x b-quads (+ c unless beta == 0), 4 x 16 tile; alpha
 * is 1 for int8 jobs. */
static void micro_portable_i8(int64_t kc, const float *a, const float *b,
			      float *c, int64_t ldc, float alpha, float beta)
{
	const uint8_t *pa = (const uint8_t *)a;
	const int8_t *pb = (const int8_t *)b;
	int32_t acc[4][16] = {{0}};

	for (int64_t q = 0; q < (kc + 3) / 4; q++) {
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 16; j++)
				for (int t = 0; t < 4; t++)
					acc[i][j] +=
						pa[i * 4 + t] * pb[j * 4 + t];
		pa += 4 * 4;
		pb += 16 * 4;
	}
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 16; j++) {
			int32_t old = 0;

			if (beta != 0.0f)
				memcpy(&old, &c[i * ldc + j], 4);
			old += acc[i][j];
			memcpy(&c[i * ldc + j], &old, 4);
		}
	(void)alpha;
}

#ifdef VNPU_GEMM_X86
__attribute__((target("avx2,fma"))) static void
micro_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
	   float alpha, float beta)
{
	__m256 acc[6][2];

	/* the C tile is touched only at the end: start fetching it now */
#pragma GCC unroll 6
	for (int i = 0; i < 6; i++) {
		_mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
		_mm_prefetch((const char *)(c + i * ldc + 15), _MM_HINT_T0);
		acc[i][0] = acc[i][1] = _mm256_setzero_ps();
	}
	for (int64_t p = 0; p < kc; p++) {
		__m256 b0 = _mm256_loadu_ps(b);
		__m256 b1 = _mm256_loadu_ps(b + 8);

#pragma GCC unroll 6
		for (int i = 0; i < 6; i++) {
			__m256 av = _mm256_broadcast_ss(a + i);

			acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
			acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
		}
		a += 6;
		b += 16;
	}
	__m256 va = _mm256_set1_ps(alpha);
	__m256 vb = _mm256_set1_ps(beta);

#pragma GCC unroll 6
	for (int i = 0; i < 6; i++) {
		float *row = c + i * ldc;
		__m256 r0 = _mm256_mul_ps(acc[i][0], va);
		__m256 r1 = _mm256_mul_ps(acc[i][1], va);

		if (beta != 0.0f) {
			r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row), r0);
			r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row + 8), r1);
		}
		_mm256_storeu_ps(row, r0);
		_mm256_storeu_ps(row + 8, r1);
	}
}

/* A 12 x 32 C tile is touched only at the end: start fetching it now. */
static inline void prefetch_tile(const float *c, int64_t ldc)
{
#pragma GCC unroll 12
	for (int i = 0; i < 12; i++) {
		_mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
		_mm_prefetch((const char *)(c + i * ldc + 31), _MM_HINT_T0);
	}
}

/* Zeroes the f32 accumulators of a 12 x 32 tile, fetching its C tile. */
__attribute__((target("avx512f"))) static inline void
start_tile_avx512(__m512 acc[12][2], const float *c, int64_t ldc)
{
	prefetch_tile(c, ldc);
#pragma GCC unroll 12
	for (int i = 0; i < 12; i++)
		acc[i][0] = acc[i][1] = _mm512_setzero_ps();
}

/* c = alpha * acc + beta * c over a 12 x 32 tile (beta == 0: c not read). */
__attribute__((target("avx512f"))) static inline void
store_tile_avx512(__m512 acc[12][2], float *c, int64_t ldc, float alpha,
		  float beta)
{
	__m512 va = _mm512_set1_ps(alpha);
	__m512 vb = _mm512_set1_ps(beta);

#pragma GCC unroll 12
	for (int i = 0; i < 12; i++) {
		float *row = c + i * ldc;
		__m512 r0 = _mm512_mul_ps(acc[i][0], va);
		__m512 r1 = _mm512_mul_ps(acc[i][1], va);

		if (beta != 0.0f) {
			r0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row), r0);
			r1 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row + 16), r1);
		}
		_mm512_storeu_ps(row, r0);
		_mm512_storeu_ps(row + 16, r1);
	}
}

__attribute__((target("avx512f"))) static void
micro_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
	     float alpha, float beta)
{
	__m512 acc[12][2];

	start_tile_avx512(acc, c, ldc);
	for (int64_t p = 0; p < kc; p++) {
		__m512 b0 = _mm512_loadu_ps(b);
		__m512 b1 = _mm512_loadu_ps(b + 16);

		_mm_prefetch((const char *)(b + 8 * 32), _MM_HINT_T0);
#pragma GCC unroll 12
		for (int i = 0; i < 12; i++) {
			__m512 av = _mm512_set1_ps(a[i]);

			acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
			acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
		}
		a += 12;
		b += 32;
	}
	store_tile_avx512(acc, c, ldc, alpha, beta);
}

/* The same tile from bf16-pair panels: kc reduction steps are
 * ceil(kc / 2) words per row, each multiplied as two bf16 products. */
__attribute__((target("avx512f,avx512bf16"))) static void
micro_avx512_bf16(int64_t kc, const float *a, const float *b, float *c,
		  int64_t ldc, float alpha, float beta)
{
	const int64_t pairs = (kc + 1) / 2;
	__m512 acc[12][2];

	start_tile_avx512(acc, c, ldc);
	for (int64_t q = 0; q < pairs; q++) {
		__m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
		__m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 16);

		_mm_prefetch((const char *)(b + 8 * 32), _MM_HINT_T0);
#pragma GCC unroll 12
		for (int i = 0; i < 12; i++) {
			uint32_t pair;

			memcpy(&pair, a + i, sizeof(pair));
			__m512bh av = (__m512bh)_mm512_set1_epi32((int)pair);

			acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
			acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
		}
		a += 12;
		b += 32;
	}
	store_tile_avx512(acc, c, ldc, alpha, beta);
}

/* The int8 tile from k-quad panels: vpdpbusd multiplies four u8 of A by
 * four s8 of B and adds the four products to an int32 lane. */
__attribute__((target("avx512f,avx512vnni"))) static void
micro_avx512_vnni(int64_t kc, const float *a, const float *b, float *c,
		  int64_t ldc, float alpha, float beta)
{
	const int64_t quads = (kc + 3) / 4;
	__m512i acc[12][2];

	prefetch_tile(c, ldc);
#pragma GCC unroll 12
	for (int i = 0; i < 12; i++)
		acc[i][0] = acc[i][1] = _mm512_setzero_si512();
	for (int64_t q = 0; q < quads; q++) {
		__m512i b0 = _mm512_loadu_si512(b);
		__m512i b1 = _mm512_loadu_si512(b + 16);

		_mm_prefetch((const char *)(b + 8 * 32), _MM_HINT_T0);
#pragma GCC unroll 12
		for (int i = 0; i < 12; i++) {
			uint32_t quad;

			memcpy(&quad, a + i, sizeof(quad));
			__m512i av = _mm512_set1_epi32((int)quad);

			acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], av, b0);
			acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], av, b1);
		}
		a += 12;
		b += 32;
	}
#pragma GCC unroll 12
	for (int i = 0; i < 12; i++) {
		float *row = c + i * ldc;

		if (beta != 0.0f) {
			acc[i][0] = _mm512_add_epi32(acc[i][0],
						     _mm512_loadu_si512(row));
			acc[i][1] = _mm512_add_epi32(
				acc[i][1], _mm512_loadu_si512(row + 16));
		}
		_mm512_storeu_si512(row, acc[i][0]);
		_mm512_storeu_si512(row + 16, acc[i][1]);
	}
	(void)alpha;
}
#endif

/* Each family's kernels by ISA level, lowest first. */
static const struct gemm_micro micro_table[] = {
	{VNPU_GEMM_ISA_PORTABLE, 4, 8, micro_portable, PANELS_F32},
	{VNPU_GEMM_ISA_PORTABLE, 4, 16, micro_portable_i8, PANELS_I8_QUADS},
#ifdef VNPU_GEMM_X86
	{VNPU_GEMM_ISA_AVX2, 6, 16, micro_avx2, PANELS_F32},
	{VNPU_GEMM_ISA_AVX512, 12, 32, micro_avx512, PANELS_F32},
	{VNPU_GEMM_ISA_AVX512, 12, 32, micro_avx512_vnni, PANELS_I8_QUADS},
	{VNPU_GEMM_ISA_AVX512_BF16, 12, 32, micro_avx512_bf16,
	 PANELS_BF16_PAIRS},
#endif
};

static uint32_t isa_limit = VNPU_GEMM_ISA_AVX512_BF16;
static bool stack_blocking_forced;

static bool micro_available(const struct gemm_micro *uk)
{
#ifdef VNPU_GEMM_X86
	__builtin_cpu_init();
	if (uk->panels == PANELS_I8_QUADS && uk->isa == VNPU_GEMM_ISA_AVX512)
		return __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512vnni");
	if (uk->isa == VNPU_GEMM_ISA_AVX512_BF16)
		return __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512bf16");
	if (uk->isa == VNPU_GEMM_ISA_AVX512)
		return __builtin_cpu_supports("avx512f");
	if (uk->isa == VNPU_GEMM_ISA_AVX2)
		return __builtin_cpu_supports("avx2") &&
		       __builtin_cpu_supports("fma");
#endif
	return uk->isa == VNPU_GEMM_ISA_PORTABLE;
}

/* The best microkernel within the ISA limit for the job's operands: int8
 * jobs only take int8 kernels, bf16 jobs also f32 ones. */
static const struct gemm_micro *select_micro(bool bf16_operands,
					     bool int8_operands)
{
	const size_t n = sizeof(micro_table) / sizeof(micro_table[0]);
	const struct gemm_micro *best = &micro_table[int8_operands ? 1 : 0];

	for (size_t i = 0; i < n; i++) {
		const struct gemm_micro *uk = &micro_table[i];
		bool fits = int8_operands ? uk->panels == PANELS_I8_QUADS
			    : uk->panels == PANELS_BF16_PAIRS
				    ? bf16_operands
				    : uk->panels == PANELS_F32;

		if (fits && uk->isa <= isa_limit && micro_available(uk))
			best = uk;
	}
	return best;
}

bool vnpu_gemm_use_f16c(void)
{
#ifdef VNPU_GEMM_X86
	/* asked per converted run: the CPU answer is looked up once */
	static atomic_int cpu_f16c = -1;
	int has = atomic_load_explicit(&cpu_f16c, memory_order_relaxed);
	unsigned int eax, ebx, ecx, edx;

	if (has < 0) {
		__builtin_cpu_init();
		/* F16C from CPUID itself: not every compiler's
		 * __builtin_cpu_supports knows it; "avx" covers OS support */
		has = __builtin_cpu_supports("avx") &&
		      __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
		      (ecx & bit_F16C);
		atomic_store_explicit(&cpu_f16c, has, memory_order_relaxed);
	}
	return has && isa_limit >= VNPU_GEMM_ISA_AVX2;
#else
	return false;
#endif
}

bool vnpu_gemm_use_avx512(void)
{
#ifdef VNPU_GEMM_X86
	static atomic_int cpu_avx512 = -1;
	int has = atomic_load_explicit(&cpu_avx512, memory_order_relaxed);

	if (has < 0) {
		__builtin_cpu_init();
		has = __builtin_cpu_supports("avx512f");
		atomic_store_explicit(&cpu_avx512, has, memory_order_relaxed);
	}
	return has && isa_limit >= VNPU_GEMM_ISA_AVX512;
#else
	return false;
#endif
}

void vnpu_gemm_force_stack_blocking(bool on)
{
	stack_blocking_forced = on;
}

uint32_t vnpu_gemm_set_isa(uint32_t isa)
{
	isa_limit = isa == VNPU_GEMM_ISA_AUTO || isa > VNPU_GEMM_ISA_AVX512_BF16
			    ? VNPU_GEMM_ISA_AVX512_BF16
			    : isa;
	return select_micro(true, false)->isa;
}

/* Per-thread packing buffers, allocated on a thread's first job and freed
 * when it exits, so launches never allocate. */
struct gemm_scratch {
	float *ap; /* GEMM_MC x GEMM_KC */
	float *bp; /* GEMM_KC x GEMM_NC */
	float *cw; /* GEMM_MB x GEMM_NC, allocated on first workspace job */
};

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;
static _Thread_local struct gemm_scratch *thread_scratch;

static void scratch_free(void *p)
{
	struct gemm_scratch *s = p;

	free(s->ap);
	free(s->bp);
	free(s->cw);
	free(s);
}

static void scratch_key_init(void)
{
	scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

static float *alloc_floats(size_t n)
{
	return aligned_alloc(64, n * sizeof(float));
}

static struct gemm_scratch *scratch_get(bool workspace)
{
	struct gemm_scratch *s = thread_scratch;

	if (!s) {
		pthread_once(&scratch_once, scratch_key_init);
		if (!scratch_key_ok)
			return NULL;
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->ap = alloc_floats((size_t)GEMM_MC * GEMM_KC);
		s->bp = alloc_floats((size_t)GEMM_KC * GEMM_NC);
		if (!s->ap || !s->bp ||
		    pthread_setspecific(scratch_key, s) != 0) {
			scratch_free(s);
			return NULL;
		}
		thread_scratch = s;
	}
	if (workspace && !s->cw) {
		s->cw = alloc_floats((size_t)GEMM_MB * GEMM_NC);
		if (!s->cw)
			return NULL;
	}
	return s;
}

struct gemm_blocking {
	int64_t kc, mc, nc, mb;
	float *ap, *bp, *cw;
	int64_t per_slot; /* reduction steps per float-sized panel slot */
};

/* Natively packed quads and pairs hold four and two reduction steps per
 * slot, so the same buffers and cache footprint cover that many times
 * the KC; folded pairs are packed as f32 first, one step per slot. */
static int64_t steps_per_slot(const struct gemm_micro *uk,
			      const struct vnpu_gemm_job *job)
{
	if (uk->panels == PANELS_I8_QUADS)
		return 4;
	if (uk->panels == PANELS_BF16_PAIRS && job->pack_a_native &&
	    job->pack_b_native)
		return 2;
	return 1;
}

/* Slots one row of a packed panel takes for kc steps: panel i of a block
 * starts at i * panel * panel_slots(). */
static int64_t panel_slots(const struct gemm_blocking *bl, int64_t kc)
{
	return (kc + bl->per_slot - 1) / bl->per_slot;
}

static inline int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* One micro-tile, through a bounce buffer when it is partial. */
static void micro_tile(const struct gemm_micro *uk, int64_t kc, const float *a,
		       const float *b, float *c, int64_t ldc, int64_t mr,
		       int64_t nr, float alpha, float beta)
{
	float tmp[GEMM_MAX_MR * GEMM_MAX_NR] __attribute__((aligned(64)));

	if (mr == uk->mr && nr == uk->nr) {
		uk->fn(kc, a, b, c, ldc, alpha, beta);
		return;
	}
	uk->fn(kc, a, b, tmp, uk->nr, 1.0f, 0.0f);
	if (uk->panels == PANELS_I8_QUADS) {
		for (int64_t i = 0; i < mr; i++)
			for (int64_t j = 0; j < nr; j++) {
				int32_t sum, old = 0;

				memcpy(&sum, &tmp[i * uk->nr + j], 4);
				if (beta != 0.0f)
					memcpy(&old, &c[i * ldc + j], 4);
				sum += old;
				memcpy(&c[i * ldc + j], &sum, 4);
			}
		return;
	}
	for (int64_t i = 0; i < mr; i++) {
		float *row = c + i * ldc;
		const float *t = tmp + i * uk->nr;

		if (beta == 0.0f)
			for (int64_t j = 0; j < nr; j++)
				row[j] = alpha * t[j];
		else
			for (int64_t j = 0; j < nr; j++)
				row[j] = alpha * t[j] + beta * row[j];
	}
}

/* One panel; word q only overwrites steps before 2q, already read. */
static void fold_panel(float *dst, int64_t kc, uint32_t panel)
{
	for (int64_t q = 0; q < (kc + 1) / 2; q++) {
		const float *lo = dst + 2 * q * panel;
		bool has_hi = 2 * q + 1 < kc;

		for (uint32_t r = 0; r < panel; r++) {
			uint32_t l, h = 0, w;

			memcpy(&l, &lo[r], 4);
			if (has_hi)
				memcpy(&h, &lo[panel + r], 4);
			w = l >> 16 | (h & 0xffff0000u);
			memcpy(&dst[q * panel + r], &w, 4);
		}
	}
}

/* Packed f32 panels of bf16 values to pairs: word q * panel + r holds step
 * 2q of row r in its low half, 2q + 1 in its high half (zero past an odd
 * kc), panels keeping their kc-slot stride. */
static void fold_bf16_pairs(float *dst, int64_t rows, int64_t kc,
			    uint32_t panel)
{
	for (int64_t r = 0; r < rows; r += panel)
		fold_panel(dst + r * kc, kc, panel);
}

static void pack_panels(const struct vnpu_gemm_job *job,
			const struct gemm_micro *uk,
			const struct gemm_blocking *bl, vnpu_gemm_pack_fn fn,
			vnpu_gemm_pack_fn native_fn, int64_t r0, int64_t rows,
			int64_t p0, int64_t kc, float *dst, uint32_t panel)
{
	int64_t tail = rows % panel;

	if (tail)
		memset(dst + (rows - tail) * panel_slots(bl, kc), 0,
		       (size_t)panel_slots(bl, kc) * panel * sizeof(float));
	if (uk->panels != PANELS_F32 && native_fn) {
		native_fn(job, r0, rows, p0, kc, dst, panel);
		return;
	}
	fn(job, r0, rows, p0, kc, dst, panel);
	if (uk->panels == PANELS_BF16_PAIRS)
		fold_bf16_pairs(dst, rows, kc, panel);
}

/* K = 0: the product is empty, the result is beta * c (or 0) finished by
 * the epilogue. */
static void run_empty(const struct vnpu_gemm_job *job, float *cw, int64_t ldcw)
{
	int64_t cols = job->n1 - job->n0;
	/* alpha times the empty sum, as the workspace epilogue computes it */
	float product = job->alpha * 0.0f;
	uint64_t work = 0;

	if (job->c) {
		for (int64_t i = job->m0; i < job->m1; i++) {
			float *row = job->c + i * job->ldc + job->n0;

			if (vnpu_kernel_poll(&work, (uint64_t)cols))
				return;
			for (int64_t j = 0; j < cols; j++)
				row[j] = job->beta == 0.0f
						 ? product
						 : product + job->beta * row[j];
		}
		if (job->need_finish)
			job->epilogue(job, job->m0, job->m1 - job->m0, job->n0,
				      cols,
				      job->c + job->m0 * job->ldc + job->n0,
				      job->ldc);
		return;
	}
	for (int64_t j0 = job->n0; j0 < job->n1; j0 += ldcw) {
		int64_t nc = min64(ldcw, job->n1 - j0);

		for (int64_t i = 0; i < ldcw; i++)
			cw[i] = 0.0f;
		for (int64_t i = job->m0; i < job->m1; i++) {
			if (vnpu_kernel_poll(&work, (uint64_t)nc))
				return;
			job->epilogue(job, i, 1, j0, nc, cw, ldcw);
		}
	}
}

/* The macro-kernel: packed mc x kc block of A times packed kc x nc block
 * of B into c (pitch ld); c = alpha * product + beta * c. Polls the
 * cancellation hook per column panel (at most MC x NR x KC multiply-adds,
 * well under a millisecond); true when told to stop. */
static bool macro_kernel(const struct gemm_micro *uk,
			 const struct gemm_blocking *bl, int64_t mc, int64_t nc,
			 int64_t kc, float *c, int64_t ld, float alpha,
			 float beta)
{
	uint64_t work = 0;

	for (int64_t jr = 0; jr < nc; jr += uk->nr) {
		const float *bpan = bl->bp + jr * panel_slots(bl, kc);
		int64_t nr = min64(uk->nr, nc - jr);

		if (vnpu_kernel_poll(&work, (uint64_t)(mc * nr * kc)))
			return true;
		for (int64_t ir = 0; ir < mc; ir += uk->mr)
			micro_tile(uk, kc, bl->ap + ir * panel_slots(bl, kc),
				   bpan, c + ir * ld + jr, ld,
				   min64(uk->mr, mc - ir), nr, alpha, beta);
	}
	return false;
}

/* Rows [ib, ib + mb) by columns [jc, jc + nc) over the whole reduction:
 * B is packed once per KC step and reused by every MC block of A. True
 * when cancelled. */
static bool run_rows(const struct vnpu_gemm_job *job,
		     const struct gemm_micro *uk,
		     const struct gemm_blocking *bl, int64_t ib, int64_t mb,
		     int64_t jc, int64_t nc)
{
	const bool direct = job->c != NULL;

	for (int64_t pc = 0; pc < job->k; pc += bl->kc) {
		int64_t kc = min64(bl->kc, job->k - pc);
		bool last = pc + kc >= job->k;
		/* the first step sets c, later steps add to it */
		float alpha = direct ? job->alpha : 1.0f;
		float beta = pc ? 1.0f : direct ? job->beta : 0.0f;

		pack_panels(job, uk, bl, job->pack_b, job->pack_b_native, jc,
			    nc, pc, kc, bl->bp, uk->nr);
		for (int64_t ic = ib; ic < ib + mb; ic += bl->mc) {
			int64_t mc = min64(bl->mc, ib + mb - ic);
			int64_t ld = direct ? job->ldc : nc;
			float *c = direct ? job->c + ic * ld + jc
					  : bl->cw + (ic - ib) * ld;

			pack_panels(job, uk, bl, job->pack_a,
				    job->pack_a_native, ic, mc, pc, kc, bl->ap,
				    uk->mr);
			if (macro_kernel(uk, bl, mc, nc, kc, c, ld, alpha,
					 beta))
				return true;
			/* finish while the block is still in cache */
			if (direct && last && job->need_finish)
				job->epilogue(job, ic, mc, jc, nc, c, ld);
		}
	}
	return false;
}

/* Direct mode covers all rows of the tile at once; workspace mode goes
 * MB rows at a time and hands each finished block to the epilogue. */
static void run_blocked(const struct vnpu_gemm_job *job,
			const struct gemm_micro *uk,
			const struct gemm_blocking *bl)
{
	const bool direct = job->c != NULL;

	for (int64_t jc = job->n0; jc < job->n1; jc += bl->nc) {
		int64_t nc = min64(bl->nc, job->n1 - jc);
		/* Workspace rows at pitch nc: as many as it holds, so that a
		 * narrow result (a convolution's channels) packs B once per
		 * many rows, not once per MB. */
		int64_t mb_step =
			direct ? job->m1 - job->m0
			       : (bl->mb * bl->nc / nc) / uk->mr * uk->mr;

		for (int64_t ib = job->m0; ib < job->m1; ib += mb_step) {
			int64_t mb = min64(mb_step, job->m1 - ib);

			if (run_rows(job, uk, bl, ib, mb, jc, nc))
				return;
			if (!direct)
				job->epilogue(job, ib, mb, jc, nc, bl->cw, nc);
		}
	}
}

void vnpu_gemm_run_job(const struct vnpu_gemm_job *job)
{
	const struct gemm_micro *uk =
		select_micro(job->bf16_operands, job->int8_operands);
	struct gemm_scratch *s;
	struct gemm_blocking bl;

	if (job->m1 <= job->m0 || job->n1 <= job->n0)
		return;
	/* int8 panels come only from native packers (a kernel bug
	 * otherwise, not an input error) */
	if (job->int8_operands && (!job->pack_a_native || !job->pack_b_native))
		return;
	s = stack_blocking_forced ? NULL : scratch_get(job->c == NULL);
	if (s) {
		/* Panels of pairs or quads packed natively hold 2 or 4
		 * reduction steps per float-sized slot: the same buffers
		 * and cache footprint cover that many more steps. */
		bl = (struct gemm_blocking){GEMM_KC * steps_per_slot(uk, job),
					    GEMM_MC,
					    GEMM_NC,
					    GEMM_MB,
					    s->ap,
					    s->bp,
					    s->cw,
					    steps_per_slot(uk, job)};
	} else {
		/* Out of memory: one micro-panel of each operand on the
		 * stack. Correct, just slower. */
		enum { SMALL_KC = 64 };
		float ap[GEMM_MAX_MR * SMALL_KC] __attribute__((aligned(64)));
		float bp[SMALL_KC * GEMM_MAX_NR] __attribute__((aligned(64)));
		float cw[GEMM_MAX_MR * GEMM_MAX_NR]
			__attribute__((aligned(64)));

		bl = (struct gemm_blocking){SMALL_KC * steps_per_slot(uk, job),
					    uk->mr,
					    uk->nr,
					    uk->mr,
					    ap,
					    bp,
					    cw,
					    steps_per_slot(uk, job)};
		if (job->k == 0)
			run_empty(job, bl.cw, bl.nc);
		else
			run_blocked(job, uk, &bl);
		return;
	}
	if (job->k == 0)
		run_empty(job, bl.cw, bl.nc);
	else
		run_blocked(job, uk, &bl);
}
