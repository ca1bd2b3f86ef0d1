/* SPDX-License-Identifier: MIT */
/*
 * A GEMM operand or result seen as a stack of matrices whose row r, column
 * c element is read or written in f32 whatever its dtype (F32, F16, BF16)
 * and format (ND with any strides, or FRACTAL_NZ). Transposition is folded
 * into the view, so "rows" are always the rows of op(x).
 */
#ifndef VNPU_KERNELS_GEMM_OPERAND_H
#define VNPU_KERNELS_GEMM_OPERAND_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dtype.h"
#include "kernel.h"
#include "layout.h"

/* Chunk length for row reads and writes through a stack buffer. */
#define VNPU_OPERAND_LINE 256

struct vnpu_operand {
	char *data; /* element 0 (descriptor offset applied) */
	uint32_t dtype;
	uint32_t itemsize;
	bool nz;	    /* FRACTAL_NZ storage */
	bool nz_t;	    /* NZ: rows of the view are stored columns */
	int64_t bs, rs, cs; /* ND: element strides of batch, row, column */
	struct vnpu_nz_geom geom; /* NZ: stored geometry */
};

/* A view of checked rank-2/3 tensor t, transposed when `trans`. */
void vnpu_operand_init(struct vnpu_operand *op, const struct vnpu_tensor *t,
		       const struct vnpu_kbuf *bufs, bool trans);

/* x(b, r0 + r, p0 + p) for r < rows, p < kc into consecutive panels of
 * `panel` rows: dst[(r / panel) * kc * panel + p * panel + r % panel]. */
void vnpu_operand_pack(const struct vnpu_operand *op, int64_t b, int64_t r0,
		       int64_t rows, int64_t p0, int64_t kc, float *dst,
		       uint32_t panel);

/* The same for a BF16 operand into native bf16-pair panels (see
 * vnpu_gemm_job.pack_a_native): storage is read as it lies, without a trip
 * through f32. Only for operands vnpu_operand_pairs_native accepts (ND
 * with rows or columns adjacent). */
bool vnpu_operand_pairs_native(const struct vnpu_operand *op);
void vnpu_operand_pack_bf16_pairs(const struct vnpu_operand *op, int64_t b,
				  int64_t r0, int64_t rows, int64_t p0,
				  int64_t kc, float *dst, uint32_t panel);

/* The same for a U8 or I8 ND operand into int8-quad panels (see
 * vnpu_gemm_job.int8_operands). */
void vnpu_operand_pack_i8_quads(const struct vnpu_operand *op, int64_t b,
				int64_t r0, int64_t rows, int64_t p0,
				int64_t kc, float *dst, uint32_t panel);

/* n elements of row r from column c0 on, to/from a dense f32 line. */
void vnpu_operand_read_row(const struct vnpu_operand *op, int64_t b, int64_t r,
			   int64_t c0, int64_t n, float *dst);
void vnpu_operand_write_row(const struct vnpu_operand *op, int64_t b, int64_t r,
			    int64_t c0, int64_t n, const float *src);
/* Writes zeros (used for NZ padding, so indices may pass the logical
 * sizes up to the padded ones). */
void vnpu_operand_zero_row(const struct vnpu_operand *op, int64_t b, int64_t r,
			   int64_t c0, int64_t n);

/* n elements spaced `step` elements apart from src, as f32 spaced dstride
 * apart in dst; and n f32 values to dst spaced `step` elements apart,
 * rounded to nearest even for F16/BF16. */
void vnpu_operand_load_run(const char *src, uint32_t dtype, int64_t step,
			   int64_t n, float *dst, int64_t dstride);
void vnpu_operand_store_run(char *dst, uint32_t dtype, int64_t step, int64_t n,
			    const float *src);

/* One F32/F16/BF16 element at p (any alignment) as f32. */
static inline float vnpu_operand_load(const char *p, uint32_t dtype)
{
	uint16_t h;
	float f;

	if (dtype == VNPU_DTYPE_F32) {
		memcpy(&f, p, sizeof(f));
		return f;
	}
	memcpy(&h, p, sizeof(h));
	return dtype == VNPU_DTYPE_F16 ? vnpu_f16_to_f32(h)
				       : vnpu_bf16_to_f32(h);
}

#endif /* VNPU_KERNELS_GEMM_OPERAND_H */
