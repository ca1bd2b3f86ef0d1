/* SPDX-License-Identifier: MIT */
/*
 * The packed, cache-blocked f32 matrix multiply shared by GEMM and conv2d.
 *
 * A job computes one output tile, rows [m0, m1) and columns [n0, n1) of an
 * M x N result with reduction length k. The kernel describing the job
 * supplies callbacks that pack its operands into f32 panels (converting
 * dtypes and resolving layouts on the way) and an epilogue that writes the
 * f32 results out. The core does the blocking and runs a register-blocked
 * microkernel picked at run time (AVX-512, AVX2+FMA or portable C). Jobs
 * whose operands are bfloat16 run on the CPU's bf16 dot-product engine
 * (AVX512-BF16) when it has one: their f32 panels hold bf16 values exactly,
 * so packing them as k-pairs of bf16 loses nothing. Int8 jobs (u8 x s8)
 * accumulate exact int32 sums on AVX512-VNNI or portable C.
 */
#ifndef VNPU_KERNELS_GEMM_CORE_H
#define VNPU_KERNELS_GEMM_CORE_H

#include <stdbool.h>
#include <stdint.h>

struct vnpu_gemm_job;

/*
 * Packs rows [r0, r0 + rows) by reduction indices [p0, p0 + kc) of one
 * operand as consecutive panels of `panel` rows: row r, index p goes to
 * dst[(r / panel) * kc * panel + p * panel + r % panel] (r, p relative).
 * For A the rows are output rows, for B output columns. The missing rows
 * of a partial last panel are already zero.
 */
typedef void (*vnpu_gemm_pack_fn)(const struct vnpu_gemm_job *job, int64_t r0,
				  int64_t rows, int64_t p0, int64_t kc,
				  float *dst, uint32_t panel);

/*
 * Workspace mode (job->c == NULL): acc holds the raw sums (alpha not
 * applied) of output rows [i0, i0 + rows), columns [j0, j0 + cols) with row
 * pitch ld; the epilogue combines and stores them.
 * Direct mode: acc points at the f32 output itself, already holding
 * alpha * sum + beta * out; the epilogue finishes it in place (bias,
 * activation). It is only called when job->need_finish is set.
 */
typedef void (*vnpu_gemm_epilogue_fn)(const struct vnpu_gemm_job *job,
				      int64_t i0, int64_t rows, int64_t j0,
				      int64_t cols, float *acc, int64_t ld);

struct vnpu_gemm_job {
	int64_t m0, m1, n0, n1, k;
	vnpu_gemm_pack_fn pack_a;
	vnpu_gemm_pack_fn pack_b;
	vnpu_gemm_epilogue_fn epilogue;
	const void *ctx; /* the calling kernel's state */
	/* Direct mode: f32 output element (i, j) at c[i * ldc + j]. */
	float *c;
	int64_t ldc;
	float alpha, beta; /* direct mode only; beta == 0 never reads c */
	bool need_finish;  /* direct mode: call the epilogue at the end */
	/* Both operands are bfloat16 (every packed value is a bf16 exactly):
	 * the bf16 microkernel may multiply them, accumulating in f32. */
	bool bf16_operands;
	/* Int8 job: A is u8, B is s8; the panels hold them as k-quads (word
	 * q * panel + r = steps 4q..4q+3 of row r, byte t = step 4q + t, zero
	 * past kc; panel i at word i * panel * ceil(kc / 4)), packed by the
	 * native packers below (required). Sums are exact int32: the
	 * workspace, or in direct mode c itself (an int32 matrix; alpha 1,
	 * beta 0 or 1), and so the epilogue's acc, hold int32_t in
	 * float-sized slots (read them with memcpy). */
	bool int8_operands;
	/* Packers into the microkernel's own panel format, for every row and
	 * step they are asked for: int8 quads (above), or bf16 pairs - word
	 * q * panel + r holds step 2q of row r in its low half and 2q + 1 in
	 * its high half (zero past an odd kc), panel i at word
	 * i * panel * ceil(kc / 2). Optional for bf16 jobs: without them the
	 * core packs f32 panels and folds them into pairs in place. */
	vnpu_gemm_pack_fn pack_a_native;
	vnpu_gemm_pack_fn pack_b_native;
};

/* Runs a job on the calling thread. Never fails: without its per-thread
 * packing buffers (allocated once per thread, freed at thread exit) it falls
 * back to small on-stack blocking. */
void vnpu_gemm_run_job(const struct vnpu_gemm_job *job);

/* Microkernel families, for tests and benchmarks that want to exercise a
 * particular one; the default picks the best the CPU supports. */
enum vnpu_gemm_isa {
	VNPU_GEMM_ISA_AUTO = 0,
	VNPU_GEMM_ISA_PORTABLE = 1,
	VNPU_GEMM_ISA_AVX2 = 2,
	VNPU_GEMM_ISA_AVX512 = 3,
	/* AVX-512 with the BF16 dot product (vdpbf16ps) for bf16 jobs */
	VNPU_GEMM_ISA_AVX512_BF16 = 4,
};

/* Limits the microkernel choice process-wide (not thread-safe: call it
 * before launching work). Returns the family now in use. */
uint32_t vnpu_gemm_set_isa(uint32_t isa);

/* True when F16 operands may be converted with the F16C instructions
 * (available, and the ISA limit is AVX2 or above). */
bool vnpu_gemm_use_f16c(void);

/* True when conversions may use AVX-512F (available, and the ISA limit is
 * AVX512 or above). */
bool vnpu_gemm_use_avx512(void);

/* Makes every job take the out-of-memory path (on-stack micro-panels)
 * so tests can check it; process-wide, not thread-safe. */
void vnpu_gemm_force_stack_blocking(bool on);

/* Splits `total` into `parts` near-equal contiguous chunks: chunk i is
 * [total * i / parts, total * (i + 1) / parts). */
static inline int64_t vnpu_gemm_chunk(int64_t total, int64_t parts, int64_t i)
{
	return (int64_t)((unsigned __int128)total * (uint64_t)i /
			 (uint64_t)parts);
}

/* The tile grid of a launch: enough gm x gn tiles per matrix (each at
 * least 16 x 16) for every block, rows first, so that each block packs its
 * own rows of A against all of B and keeps its panels in its own cache. */
static inline void vnpu_gemm_tile_grid(int64_t batch, int64_t m, int64_t n,
				       uint32_t nblocks, int64_t *gm,
				       int64_t *gn)
{
	int64_t t = ((int64_t)nblocks + batch - 1) / batch;

	*gm = (m + 15) / 16 < t ? (m + 15) / 16 : t;
	t = (t + *gm - 1) / *gm;
	*gn = (n + 15) / 16 < t ? (n + 15) / 16 : t;
}

#endif /* VNPU_KERNELS_GEMM_CORE_H */
