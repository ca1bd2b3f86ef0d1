// SPDX-License-Identifier: MIT
#include "gemm_operand.h"

#include "gemm_core.h"
#include "tensor.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VNPU_GEMM_X86 1
#endif

void vnpu_operand_init(struct vnpu_operand *op, const struct vnpu_tensor *t,
		       const struct vnpu_kbuf *bufs, bool trans)
{
	uint32_t nd = t->ndim;

	memset(op, 0, sizeof(*op));
	op->data = vnpu_tensor_data(t, bufs);
	op->dtype = t->dtype;
	op->itemsize = vnpu_dtype_size(t->dtype);
	if (t->format == VNPU_FORMAT_FRACTAL_NZ) {
		op->nz = true;
		op->nz_t = trans;
		op->geom = vnpu_nz_geom(t);
		return;
	}
	op->bs = nd == 3 ? t->strides[0] : 0;
	op->rs = t->strides[nd - (trans ? 1 : 2)];
	op->cs = t->strides[nd - (trans ? 2 : 1)];
}

/* Stored element offset of view element (b, r, c) of an NZ operand. The
 * geometry copy with a literal C0 lets the compiler turn the layout's
 * divisions into shifts (C0 is 16 for every dtype GEMM takes). */
static inline int64_t nz_offset(const struct vnpu_operand *op, int64_t b,
				int64_t r, int64_t c)
{
	struct vnpu_nz_geom g = op->geom;

	g.c0 = VNPU_C0(2);
	if (op->nz_t)
		return (int64_t)vnpu_fractal_nz_index(&g, (uint64_t)b,
						      (uint64_t)c, (uint64_t)r);
	return (int64_t)vnpu_fractal_nz_index(&g, (uint64_t)b, (uint64_t)r,
					      (uint64_t)c);
}

/*
 * Elements of row r from column c on that are evenly spaced in storage:
 * sets the offset of (b, r, c) and the spacing, returns how many (at most
 * n). In NZ a run ends at the fractal edge: stored columns are contiguous
 * inside a 16 x C0 fractal, stored rows C0 apart.
 */
static inline int64_t run_along_cols(const struct vnpu_operand *op, int64_t b,
				     int64_t r, int64_t c, int64_t n,
				     int64_t *off, int64_t *step)
{
	int64_t len;

	if (!op->nz) {
		*off = b * op->bs + r * op->rs + c * op->cs;
		*step = op->cs;
		return n;
	}
	len = 16 - (c & 15);
	*off = nz_offset(op, b, r, c);
	*step = op->nz_t ? VNPU_C0(2) : 1;
	return len < n ? len : n;
}

/* The same along rows (column c fixed, rows from r on). */
static inline int64_t run_along_rows(const struct vnpu_operand *op, int64_t b,
				     int64_t r, int64_t c, int64_t n,
				     int64_t *off, int64_t *step)
{
	int64_t len;

	if (!op->nz) {
		*off = b * op->bs + r * op->rs + c * op->cs;
		*step = op->rs;
		return n;
	}
	len = 16 - (r & 15);
	*off = nz_offset(op, b, r, c);
	*step = op->nz_t ? 1 : VNPU_C0(2);
	return len < n ? len : n;
}

#ifdef VNPU_GEMM_X86
/* F16 through the F16C conversion instructions (exact, like the portable
 * conversion), eight at a time where the source is contiguous. */
__attribute__((target("avx,f16c"))) static void
load_f16_f16c(const char *src, int64_t step, int64_t n, float *dst,
	      int64_t dstride)
{
	int64_t t = 0;

	if (step == 1 && dstride == 1)
		for (; t + 8 <= n; t += 8)
			_mm256_storeu_ps(
				dst + t,
				_mm256_cvtph_ps(_mm_loadu_si128(
					(const __m128i *)(src + t * 2))));
	if (step == 1)
		for (; t + 8 <= n; t += 8) {
			__m128i h =
				_mm_loadu_si128((const __m128i *)(src + t * 2));
			float f[8];

			_mm256_storeu_ps(f, _mm256_cvtph_ps(h));
			for (int q = 0; q < 8; q++)
				dst[(t + q) * dstride] = f[q];
		}
	for (; t < n; t++) {
		uint16_t h;

		memcpy(&h, src + t * step * 2, 2);
		dst[t * dstride] = _cvtsh_ss(h);
	}
}
#endif

void vnpu_operand_load_run(const char *src, uint32_t dtype, int64_t step,
			   int64_t n, float *dst, int64_t dstride)
{
	int64_t sb;

	switch (dtype) {
	case VNPU_DTYPE_F32:
		sb = step * 4;
		if (step == 1 && dstride == 1) {
			memcpy(dst, src, (size_t)n * 4);
			break;
		}
		for (int64_t t = 0; t < n; t++) {
			float f;

			memcpy(&f, src + t * sb, 4);
			dst[t * dstride] = f;
		}
		break;
	case VNPU_DTYPE_F16:
#ifdef VNPU_GEMM_X86
		if (vnpu_gemm_use_f16c()) {
			load_f16_f16c(src, step, n, dst, dstride);
			break;
		}
#endif
		sb = step * 2;
		for (int64_t t = 0; t < n; t++) {
			uint16_t h;

			memcpy(&h, src + t * sb, 2);
			dst[t * dstride] = vnpu_f16_to_f32(h);
		}
		break;
	default: /* BF16 */
		sb = step * 2;
		for (int64_t t = 0; t < n; t++) {
			uint16_t h;

			memcpy(&h, src + t * sb, 2);
			dst[t * dstride] = vnpu_bf16_to_f32(h);
		}
		break;
	}
}

#ifdef VNPU_GEMM_X86
/* F32 to F16 through F16C, eight at a time: round to nearest even as the
 * portable conversion; NaN stays NaN (its payload is not kept bit for
 * bit by either). */
__attribute__((target("avx,f16c"))) static void
store_f16_f16c(char *dst, int64_t n, const float *src)
{
	int64_t t = 0;

	for (; t + 8 <= n; t += 8)
		_mm_storeu_si128((__m128i *)(dst + t * 2),
				 _mm256_cvtps_ph(_mm256_loadu_ps(src + t),
						 _MM_FROUND_TO_NEAREST_INT));
	for (; t < n; t++) {
		uint16_t h = vnpu_f32_to_f16(src[t]);

		memcpy(dst + t * 2, &h, 2);
	}
}
#endif

#ifdef VNPU_GEMM_X86
/* F32 to BF16 sixteen at a time with integer AVX-512: exactly
 * vnpu_f32_to_bf16 (round to nearest even, NaN kept quiet, subnormals
 * rounded, not flushed as vcvtneps2bf16 would). Returns how many. */
__attribute__((target("avx512f"))) static int64_t
store_bf16_avx512(char *dst, int64_t n, const float *src)
{
	const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
	const __m512i inf = _mm512_set1_epi32(0x7f800000);
	const __m512i bias = _mm512_set1_epi32(0x7fff);
	const __m512i one = _mm512_set1_epi32(1);
	const __m512i quiet = _mm512_set1_epi32(0x40);
	int64_t t = 0;

	for (; t + 16 <= n; t += 16) {
		__m512i u = _mm512_loadu_si512(src + t);
		__mmask16 nan = _mm512_cmpgt_epu32_mask(
			_mm512_and_si512(u, abs_mask), inf);
		__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
		__m512i r = _mm512_srli_epi32(
			_mm512_add_epi32(u, _mm512_add_epi32(bias, lsb)), 16);

		r = _mm512_mask_mov_epi32(
			r, nan,
			_mm512_or_si512(_mm512_srli_epi32(u, 16), quiet));
		_mm256_storeu_si256((__m256i *)(dst + t * 2),
				    _mm512_cvtepi32_epi16(r));
	}
	return t;
}
#endif

/* F32 to BF16 into contiguous storage, without branches so that the
 * compiler vectorises it; the same rounding as vnpu_f32_to_bf16. */
static void store_bf16_dense(char *dst, int64_t n, const float *src)
{
	int64_t t = 0;

#ifdef VNPU_GEMM_X86
	if (vnpu_gemm_use_avx512())
		t = store_bf16_avx512(dst, n, src);
#endif
	for (; t < n; t++) {
		uint32_t u;
		uint16_t h;

		memcpy(&u, &src[t], 4);
		h = (u & 0x7fffffffu) > 0x7f800000u
			    ? (uint16_t)((u >> 16) | 0x40u)
			    : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >>
					 16);
		memcpy(dst + t * 2, &h, 2);
	}
}

void vnpu_operand_store_run(char *dst, uint32_t dtype, int64_t step, int64_t n,
			    const float *src)
{
	int64_t sb;

	switch (dtype) {
	case VNPU_DTYPE_F32:
		sb = step * 4;
		for (int64_t t = 0; t < n; t++)
			memcpy(dst + t * sb, &src[t], 4);
		break;
	case VNPU_DTYPE_F16:
#ifdef VNPU_GEMM_X86
		if (step == 1 && vnpu_gemm_use_f16c()) {
			store_f16_f16c(dst, n, src);
			break;
		}
#endif
		sb = step * 2;
		for (int64_t t = 0; t < n; t++) {
			uint16_t h = vnpu_f32_to_f16(src[t]);

			memcpy(dst + t * sb, &h, 2);
		}
		break;
	default: /* BF16 */
		if (step == 1) {
			store_bf16_dense(dst, n, src);
			break;
		}
		sb = step * 2;
		for (int64_t t = 0; t < n; t++) {
			uint16_t h = vnpu_f32_to_bf16(src[t]);

			memcpy(dst + t * sb, &h, 2);
		}
		break;
	}
}

/* F32 rows that are contiguous along the reduction (row-major A, or B
 * stored [N, K]). Rows are often a power-of-two stride apart and would
 * fight over the same L1 sets, so each row's cache line (16 floats) is
 * consumed whole before moving to the next row. */
static void pack_f32_rows(const char *base, int64_t rs, int64_t rows,
			  int64_t kc, float *dst, uint32_t panel)
{
	enum { LINE = 16 };
	int64_t p = 0;

	for (; p + LINE <= kc; p += LINE)
		for (int64_t r = 0; r < rows; r++) {
			const char *s = base + (r * rs + p) * 4;
			float *d = dst + p * panel + r;

			/* the row streams are too many for the hardware
			 * prefetcher to follow; fetch a few lines ahead */
			__builtin_prefetch(s + 4 * 64);

			for (int t = 0; t < LINE; t++)
				memcpy(&d[t * panel], s + t * 4, 4);
		}
	for (int64_t r = 0; r < rows; r++)
		for (int64_t q = p; q < kc; q++)
			memcpy(&dst[q * panel + r], base + (r * rs + q) * 4, 4);
}

/* F32 rows adjacent in storage (column-major A, row-major B): read each
 * reduction step as one contiguous line across all panels. */
static void pack_f32_cols(const char *base, int64_t cs, int64_t rows,
			  int64_t kc, float *dst, uint32_t panel)
{
	int64_t full = rows / panel * panel;

	for (int64_t p = 0; p < kc; p++) {
		const char *s = base + p * cs * 4;
		float *d = dst + p * panel;

		for (int64_t r = 0; r < full; r += panel, d += kc * panel)
			for (uint32_t t = 0; t < panel; t++)
				memcpy(&d[t], s + (r + t) * 4, 4);
		for (int64_t r = full; r < rows; r++)
			memcpy(&d[r - full], s + r * 4, 4);
	}
}

#ifdef VNPU_GEMM_X86
/* F16 rows contiguous along the reduction, as pack_f32_rows: each row's
 * 64-byte line (32 halves) is converted with F16C and consumed whole
 * before the next row. */
__attribute__((target("avx,f16c"))) static void
pack_f16_rows(const char *base, int64_t rs, int64_t rows, int64_t kc,
	      float *dst, uint32_t panel)
{
	enum { LINE = 32 };
	int64_t p = 0;

	for (; p + LINE <= kc; p += LINE)
		for (int64_t r = 0; r < rows; r++) {
			const char *s = base + (r * rs + p) * 2;
			float *d = dst + p * panel + r;
			float f[LINE];

			__builtin_prefetch(s + 4 * 64);
			for (int h = 0; h < LINE; h += 8)
				_mm256_storeu_ps(
					f + h,
					_mm256_cvtph_ps(_mm_loadu_si128(
						(const __m128i *)(s + h * 2))));
			for (int t = 0; t < LINE; t++)
				d[t * panel] = f[t];
		}
	for (int64_t r = 0; r < rows; r++)
		for (int64_t q = p; q < kc; q++) {
			uint16_t h;

			memcpy(&h, base + (r * rs + q) * 2, 2);
			dst[q * panel + r] = _cvtsh_ss(h);
		}
}
#endif

#ifdef VNPU_GEMM_X86
/* F16 rows adjacent in storage (row-major B), as pack_f32_cols: each
 * reduction step is one contiguous line across all panels, converted
 * eight at a time straight into place. */
__attribute__((target("avx,f16c"))) static void
pack_f16_cols(const char *base, int64_t cs, int64_t rows, int64_t kc,
	      float *dst, uint32_t panel)
{
	int64_t full = rows / panel * panel;

	for (int64_t p = 0; p < kc; p++) {
		const char *s = base + p * cs * 2;
		float *d = dst + p * panel;

		for (int64_t r = 0; r < full; r += panel, d += kc * panel)
			for (uint32_t t = 0; t < panel; t += 8)
				_mm256_storeu_ps(
					d + t,
					_mm256_cvtph_ps(_mm_loadu_si128(
						(const __m128i *)(s +
								  (r + t) *
									  2))));
		for (int64_t r = full; r < rows; r++) {
			uint16_t h;

			memcpy(&h, s + r * 2, 2);
			d[r - full] = _cvtsh_ss(h);
		}
	}
}
#endif

/* One panel of at most `panel` rows. */
static void pack_panel(const struct vnpu_operand *op, int64_t b, int64_t r0,
		       int64_t rows, int64_t p0, int64_t kc, float *dst,
		       uint32_t panel)
{
	int64_t off, step, len;

	if (!op->nz && op->dtype == VNPU_DTYPE_F32 && op->cs == 1 &&
	    panel <= 32) {
		pack_f32_rows(op->data + (b * op->bs + r0 * op->rs + p0) * 4,
			      op->rs, rows, kc, dst, panel);
		return;
	}
#ifdef VNPU_GEMM_X86
	if (!op->nz && op->dtype == VNPU_DTYPE_F16 && op->cs == 1 &&
	    vnpu_gemm_use_f16c()) {
		pack_f16_rows(op->data + (b * op->bs + r0 * op->rs + p0) * 2,
			      op->rs, rows, kc, dst, panel);
		return;
	}
#endif
	/* Read in whichever direction is contiguous in storage. */
	if ((op->nz && op->nz_t) || (!op->nz && op->rs == 1 && op->cs != 1)) {
		for (int64_t p = 0; p < kc; p++)
			for (int64_t r = 0; r < rows; r += len) {
				len = run_along_rows(op, b, r0 + r, p0 + p,
						     rows - r, &off, &step);
				vnpu_operand_load_run(
					op->data + off * op->itemsize,
					op->dtype, step, len,
					dst + p * panel + r, 1);
			}
		return;
	}
	for (int64_t r = 0; r < rows; r++)
		for (int64_t p = 0; p < kc; p += len) {
			len = run_along_cols(op, b, r0 + r, p0 + p, kc - p,
					     &off, &step);
			vnpu_operand_load_run(op->data + off * op->itemsize,
					      op->dtype, step, len,
					      dst + p * panel + r, panel);
		}
}

void vnpu_operand_pack(const struct vnpu_operand *op, int64_t b, int64_t r0,
		       int64_t rows, int64_t p0, int64_t kc, float *dst,
		       uint32_t panel)
{
	if (!op->nz && op->dtype == VNPU_DTYPE_F32 && op->rs == 1 &&
	    op->cs != 1) {
		pack_f32_cols(op->data + (b * op->bs + r0 + p0 * op->cs) * 4,
			      op->cs, rows, kc, dst, panel);
		return;
	}
#ifdef VNPU_GEMM_X86
	if (!op->nz && op->dtype == VNPU_DTYPE_F16 && op->rs == 1 &&
	    op->cs != 1 && panel % 8 == 0 && vnpu_gemm_use_f16c()) {
		pack_f16_cols(op->data + (b * op->bs + r0 + p0 * op->cs) * 2,
			      op->cs, rows, kc, dst, panel);
		return;
	}
#endif
	for (int64_t r = 0; r < rows; r += panel) {
		int64_t cnt = rows - r < panel ? rows - r : panel;

		pack_panel(op, b, r0 + r, cnt, p0, kc, dst + r * kc, panel);
	}
}

/* Rows contiguous along the reduction (row-major A, B stored [N, K]):
 * two adjacent bf16 are already a pair word. Each row's 64-byte line is
 * consumed whole before the next row, as for f32. */
static void pack_pairs_rows(const char *base, int64_t rs, int64_t rows,
			    int64_t kc, uint32_t *dst, uint32_t panel)
{
	enum { LINE = 16 };
	const int64_t whole = kc / 2;
	int64_t q = 0;

	for (; q + LINE <= whole; q += LINE)
		for (int64_t r = 0; r < rows; r++) {
			const char *s = base + (r * rs + 2 * q) * 2;
			uint32_t *d = dst + q * panel + r;

			__builtin_prefetch(s + 4 * 64);
			for (int t = 0; t < LINE; t++)
				memcpy(&d[t * panel], s + t * 4, 4);
		}
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t t = q; t < whole; t++)
			memcpy(&dst[t * panel + r], base + (r * rs + 2 * t) * 2,
			       4);
		if (kc % 2) {
			uint16_t h;

			memcpy(&h, base + (r * rs + kc - 1) * 2, 2);
			dst[whole * panel + r] = h;
		}
	}
}

/* Rows adjacent in storage (row-major B, column-major A): interleave two
 * reduction steps, each a contiguous run across the panel's rows. */
static void pack_pairs_cols(const char *base, int64_t cs, int64_t rows,
			    int64_t kc, uint32_t *dst, uint32_t panel)
{
	for (int64_t q = 0; q < (kc + 1) / 2; q++) {
		const uint16_t *lo = (const uint16_t *)(base + 2 * q * cs * 2);
		const uint16_t *hi = lo + cs;
		bool has_hi = 2 * q + 1 < kc;

		for (int64_t r0 = 0; r0 < rows; r0 += panel) {
			int64_t cnt = rows - r0 < panel ? rows - r0 : panel;
			uint32_t *d = dst + r0 * ((kc + 1) / 2) + q * panel;

			for (int64_t t = 0; t < cnt; t++)
				d[t] = (uint32_t)lo[r0 + t] |
				       (has_hi ? (uint32_t)hi[r0 + t] << 16
					       : 0);
		}
	}
}

bool vnpu_operand_pairs_native(const struct vnpu_operand *op)
{
	return !op->nz &&
	       ((op->cs == 1 && op->rs != 1) ||
		(op->rs == 1 && op->cs != 1 && ((uintptr_t)op->data & 1) == 0));
}

void vnpu_operand_pack_bf16_pairs(const struct vnpu_operand *op, int64_t b,
				  int64_t r0, int64_t rows, int64_t p0,
				  int64_t kc, float *dst, uint32_t panel)
{
	const char *base =
		op->data + (b * op->bs + r0 * op->rs + p0 * op->cs) * 2;
	const int64_t slots = (kc + 1) / 2;

	if (op->cs == 1) {
		for (int64_t r = 0; r < rows; r += panel)
			pack_pairs_rows(base + r * op->rs * 2, op->rs,
					rows - r < panel ? rows - r : panel, kc,
					(uint32_t *)(dst + r * slots), panel);
		return;
	}
	pack_pairs_cols(base, op->cs, rows, kc, (uint32_t *)dst, panel);
}

void vnpu_operand_pack_i8_quads(const struct vnpu_operand *op, int64_t b,
				int64_t r0, int64_t rows, int64_t p0,
				int64_t kc, float *dst, uint32_t panel)
{
	const int64_t whole = kc / 4, quads = (kc + 3) / 4;

	for (int64_t pr = 0; pr < rows; pr += panel) {
		int64_t cnt = rows - pr < panel ? rows - pr : panel;
		const uint8_t *base = (const uint8_t *)op->data + b * op->bs +
				      (r0 + pr) * op->rs + p0 * op->cs;
		char *d = (char *)(dst + pr * quads);

		if (op->cs == 1) {
			/* rows contiguous along k: four steps are a word */
			for (int64_t r = 0; r < cnt; r++)
				for (int64_t q = 0; q < whole; q++)
					memcpy(d + (q * panel + r) * 4,
					       base + r * op->rs + q * 4, 4);
		} else if (op->rs == 1) {
			/* rows adjacent (row-major B): interleave four steps,
			 * each a contiguous run across the rows */
			for (int64_t q = 0; q < whole; q++) {
				const uint8_t *s0 = base + q * 4 * op->cs;
				const uint8_t *s1 = s0 + op->cs;
				const uint8_t *s2 = s1 + op->cs;
				const uint8_t *s3 = s2 + op->cs;

				for (int64_t r = 0; r < cnt; r++) {
					uint32_t w = (uint32_t)s0[r] |
						     (uint32_t)s1[r] << 8 |
						     (uint32_t)s2[r] << 16 |
						     (uint32_t)s3[r] << 24;

					memcpy(d + (q * panel + r) * 4, &w, 4);
				}
			}
		} else {
			for (int64_t q = 0; q < whole; q++)
				for (int64_t r = 0; r < cnt; r++)
					for (int t = 0; t < 4; t++)
						d[(q * panel + r) * 4 +
						  t] = (char)base[r * op->rs +
								  (q * 4 +
								   t) * op->cs];
		}
		/* the last quad of an odd kc, zero past it */
		for (int64_t q = whole; q < quads; q++)
			for (int64_t r = 0; r < cnt; r++)
				for (int64_t t = 0; t < 4; t++)
					d[(q * panel + r) * 4 + t] =
						q * 4 + t < kc
							? (char)base
								  [r * op->rs +
								   (q * 4 +
								    t) * op->cs]
							: 0;
	}
}

void vnpu_operand_read_row(const struct vnpu_operand *op, int64_t b, int64_t r,
			   int64_t c0, int64_t n, float *dst)
{
	int64_t off, step, len;

	for (int64_t c = 0; c < n; c += len) {
		len = run_along_cols(op, b, r, c0 + c, n - c, &off, &step);
		vnpu_operand_load_run(op->data + off * op->itemsize, op->dtype,
				      step, len, dst + c, 1);
	}
}

void vnpu_operand_write_row(const struct vnpu_operand *op, int64_t b, int64_t r,
			    int64_t c0, int64_t n, const float *src)
{
	int64_t off, step, len;

	for (int64_t c = 0; c < n; c += len) {
		len = run_along_cols(op, b, r, c0 + c, n - c, &off, &step);
		vnpu_operand_store_run(op->data + off * op->itemsize, op->dtype,
				       step, len, src + c);
	}
}

void vnpu_operand_zero_row(const struct vnpu_operand *op, int64_t b, int64_t r,
			   int64_t c0, int64_t n)
{
	static const float zeros[16];
	int64_t off, step, len;

	for (int64_t c = 0; c < n; c += len) {
		len = run_along_cols(op, b, r, c0 + c, n - c, &off, &step);
		if (len > 16)
			len = 16;
		vnpu_operand_store_run(op->data + off * op->itemsize, op->dtype,
				       step, len, zeros);
	}
}
