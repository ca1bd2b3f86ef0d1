// SPDX-License-Identifier: MIT
/*
 * QGEMM: u8 x s8 matrix multiply with exact int32 sums on the GEMM core's
 * int8 engine (gemm_core.c), then the zero-point corrections and the
 * output stage of a quantized linear layer (see struct vnpu_kp_qgemm).
 *
 * The engine multiplies the stored bytes; the zero points are taken out
 * afterwards from row and column sums:
 *   sum (a - za)(b - zb) = sum ab - zb sum_k a - za sum_k b + K za zb.
 */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "gemm_core.h"
#include "gemm_operand.h"
#include "kernel.h"
#include "tensor.h"

struct qgemm_ctx {
	const struct vnpu_kp_qgemm *p;
	struct vnpu_operand a;	/* rows M, cols K */
	struct vnpu_operand bt; /* rows N, cols K */
	char *out;
	int64_t out_rs, out_cs;
	const char *bias;
	int64_t bias_stride;
	int64_t k;
};

static uint32_t check_matrix(const struct vnpu_tensor *t,
			     const struct vnpu_kbuf *bufs, uint32_t nbufs,
			     uint32_t access)
{
	uint32_t st = vnpu_tensor_check(t, bufs, nbufs, access);

	if (st != VNPU_STATUS_OK)
		return st;
	if (t->format != VNPU_FORMAT_ND)
		return VNPU_STATUS_UNSUPPORTED;
	if (t->ndim != 2)
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

static bool finite_f(float x)
{
	return isfinite(x);
}

static uint32_t qgemm_validate(const void *params, const struct vnpu_kbuf *bufs,
			       uint32_t nbufs)
{
	const struct vnpu_kp_qgemm *p = params;
	uint32_t od = p->out.dtype;
	int64_t m, k, kb, n;
	uint32_t st;

	if (p->trans_a > 1 || p->trans_b > 1 || p->has_bias > 1 ||
	    p->reserved != 0 || p->a_zero_point < 0 || p->a_zero_point > 255 ||
	    p->b_zero_point < -128 || p->b_zero_point > 127 ||
	    (p->activation != VNPU_ACT_NONE && p->activation != VNPU_ACT_RELU))
		return VNPU_STATUS_INVALID_ARGS;
	st = check_matrix(&p->a, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = check_matrix(&p->b, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = check_matrix(&p->out, bufs, nbufs, VNPU_ACCESS_WRITE);
	if (st != VNPU_STATUS_OK)
		return st;
	if (p->a.dtype != VNPU_DTYPE_U8 || p->b.dtype != VNPU_DTYPE_I8 ||
	    (od != VNPU_DTYPE_I32 && od != VNPU_DTYPE_F32 &&
	     od != VNPU_DTYPE_U8))
		return VNPU_STATUS_UNSUPPORTED;
	if (!vnpu_tensor_is_injective(&p->out))
		return VNPU_STATUS_INVALID_ARGS;
	m = p->a.sizes[p->trans_a ? 1 : 0];
	k = p->a.sizes[p->trans_a ? 0 : 1];
	kb = p->b.sizes[p->trans_b ? 1 : 0];
	n = p->b.sizes[p->trans_b ? 0 : 1];
	if (k != kb || k > VNPU_QGEMM_MAX_K || p->out.sizes[0] != m ||
	    p->out.sizes[1] != n)
		return VNPU_STATUS_INVALID_ARGS;

	/* the output stage: what each output dtype takes, and nothing else */
	if (od == VNPU_DTYPE_I32) {
		if (p->has_bias || p->activation != VNPU_ACT_NONE ||
		    p->scale != 0.0f || p->out_scale != 0.0f ||
		    p->out_zero_point != 0)
			return VNPU_STATUS_INVALID_ARGS;
		return VNPU_STATUS_OK;
	}
	if (!finite_f(p->scale))
		return VNPU_STATUS_INVALID_ARGS;
	if (od == VNPU_DTYPE_U8
		    ? !finite_f(p->out_scale) || p->out_scale <= 0.0f ||
			      p->out_zero_point < 0 || p->out_zero_point > 255
		    : p->out_scale != 0.0f || p->out_zero_point != 0)
		return VNPU_STATUS_INVALID_ARGS;
	if (p->has_bias) {
		st = vnpu_tensor_check(&p->bias, bufs, nbufs, VNPU_ACCESS_READ);
		if (st != VNPU_STATUS_OK)
			return st;
		if (p->bias.dtype != VNPU_DTYPE_F32 ||
		    p->bias.format != VNPU_FORMAT_ND)
			return VNPU_STATUS_UNSUPPORTED;
		if (p->bias.ndim != 1 || p->bias.sizes[0] != n)
			return VNPU_STATUS_INVALID_ARGS;
	}
	return VNPU_STATUS_OK;
}

static void pack_a(const struct vnpu_gemm_job *job, int64_t r0, int64_t rows,
		   int64_t p0, int64_t kc, float *dst, uint32_t panel)
{
	const struct qgemm_ctx *q = job->ctx;

	vnpu_operand_pack_i8_quads(&q->a, 0, r0, rows, p0, kc, dst, panel);
}

static void pack_b(const struct vnpu_gemm_job *job, int64_t r0, int64_t rows,
		   int64_t p0, int64_t kc, float *dst, uint32_t panel)
{
	const struct qgemm_ctx *q = job->ctx;

	vnpu_operand_pack_i8_quads(&q->bt, 0, r0, rows, p0, kc, dst, panel);
}

/* Sum over k of row r of a u8 (signed: s8) operand. */
static int64_t row_sum(const struct vnpu_operand *op, int64_t r, int64_t k,
		       bool is_signed)
{
	const char *base = op->data + r * op->rs;
	int64_t sum = 0;

	for (int64_t p = 0; p < k; p++) {
		uint8_t v = (uint8_t)base[p * op->cs];

		sum += is_signed ? (int64_t)(int8_t)v : (int64_t)v;
	}
	return sum;
}

/* The output stage of n sums of row i from column j on. */
static void store_run(const struct qgemm_ctx *q, int64_t i, int64_t j,
		      int64_t n, const int32_t *sum)
{
	const struct vnpu_kp_qgemm *p = q->p;
	const int64_t isz = vnpu_dtype_size(p->out.dtype);
	char *dst = q->out + (i * q->out_rs + j * q->out_cs) * isz;
	const int64_t step = q->out_cs * isz;
	/* built by loops the compiler vectorises, stored at once when the
	 * output row is contiguous */
	float v[VNPU_OPERAND_LINE];
	uint8_t u[VNPU_OPERAND_LINE];
	const void *line = v;

	if (p->out.dtype == VNPU_DTYPE_I32) {
		line = sum;
	} else {
		for (int64_t t = 0; t < n; t++)
			v[t] = p->scale * (float)sum[t];
		for (int64_t t = 0; t < n && p->has_bias; t++) {
			float b;

			memcpy(&b, q->bias + (j + t) * q->bias_stride * 4, 4);
			v[t] += b;
		}
		if (p->activation == VNPU_ACT_RELU)
			for (int64_t t = 0; t < n; t++)
				v[t] = v[t] < 0.0f ? 0.0f : v[t];
	}
	if (p->out.dtype == VNPU_DTYPE_U8) {
		/* quantize: round half to even (nearbyint in the default
		 * mode), saturating as PyTorch's quantizer clamps */
		for (int64_t t = 0; t < n; t++) {
			float r = nearbyintf(v[t] / p->out_scale) +
				  (float)p->out_zero_point;

			u[t] = !(r > 0.0f) ? 0 : r > 255.0f ? 255 : (uint8_t)r;
		}
		line = u;
	}
	if (step == isz) {
		memcpy(dst, line, (size_t)(n * isz));
		return;
	}
	for (int64_t t = 0; t < n; t++)
		memcpy(dst + t * step, (const char *)line + t * isz,
		       (size_t)isz);
}

/*
 * acc holds the engine's raw int32 sums of rows [i0, i0 + rows), columns
 * [j0, j0 + cols) with pitch ld. The corrected sums fit int32 (the K
 * bound), so they are computed modulo 2^32: the terms may wrap, the
 * result is exact.
 */
static void finish(const struct vnpu_gemm_job *job, int64_t i0, int64_t rows,
		   int64_t j0, int64_t cols, float *acc, int64_t ld)
{
	const struct qgemm_ctx *q = job->ctx;
	const int64_t za = q->p->a_zero_point, zb = q->p->b_zero_point;
	uint32_t col_term[VNPU_OPERAND_LINE];
	int32_t line[VNPU_OPERAND_LINE];

	for (int64_t j = 0; j < cols; j += VNPU_OPERAND_LINE) {
		int64_t cnt = cols - j < VNPU_OPERAND_LINE ? cols - j
							   : VNPU_OPERAND_LINE;

		/* - za sum_k b + K za zb, per column */
		for (int64_t t = 0; t < cnt; t++)
			col_term[t] =
				za ? (uint32_t)(za *
						(q->k * zb -
						 row_sum(&q->bt, j0 + j + t,
							 q->k, true)))
				   : 0;
		for (int64_t i = 0; i < rows; i++) {
			const uint32_t row_term =
				zb ? (uint32_t)(-zb * row_sum(&q->a, i0 + i,
							      q->k, false))
				   : 0;
			const float *src = acc + i * ld + j;
			/* int32 into a contiguous row: straight there */
			char *out =
				q->p->out.dtype == VNPU_DTYPE_I32 &&
						q->out_cs == 1
					? q->out + ((i0 + i) * q->out_rs + j0 +
						    j) * 4
					: (char *)line;

			for (int64_t t = 0; t < cnt; t++) {
				uint32_t raw, sum;

				memcpy(&raw, &src[t], 4);
				sum = raw + row_term + col_term[t];
				memcpy(out + t * 4, &sum, 4);
			}
			if (out == (char *)line)
				store_run(q, i0 + i, j0 + j, cnt, line);
		}
	}
}

static void qgemm_run(const void *params, const struct vnpu_kbuf *bufs,
		      uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_qgemm *p = params;
	int64_t m = p->out.sizes[0], n = p->out.sizes[1];
	struct qgemm_ctx q;
	struct vnpu_gemm_job job;
	int64_t gm, gn;
	uint64_t begin, end;

	if (m == 0 || n == 0)
		return;
	vnpu_gemm_tile_grid(1, m, n, nblocks, &gm, &gn);
	vnpu_block_range((uint64_t)(gm * gn), block, nblocks, &begin, &end);
	if (begin >= end)
		return;

	memset(&q, 0, sizeof(q));
	q.p = p;
	vnpu_operand_init(&q.a, &p->a, bufs, p->trans_a);
	vnpu_operand_init(&q.bt, &p->b, bufs, !p->trans_b);
	q.k = p->a.sizes[p->trans_a ? 0 : 1];
	q.out = vnpu_tensor_data(&p->out, bufs);
	q.out_rs = p->out.strides[0];
	q.out_cs = p->out.strides[1];
	if (p->has_bias) {
		q.bias = vnpu_tensor_data(&p->bias, bufs);
		q.bias_stride = p->bias.strides[0];
	}

	memset(&job, 0, sizeof(job));
	job.k = q.k;
	job.int8_operands = true;
	job.pack_a = pack_a;
	job.pack_b = pack_b;
	job.pack_a_native = pack_a;
	job.pack_b_native = pack_b;
	job.epilogue = finish;
	job.ctx = &q;
	/* int32 rows with unit column stride: the engine sums in place, and
	 * only zero points leave anything to finish */
	if (p->out.dtype == VNPU_DTYPE_I32 && (q.out_cs == 1 || n == 1) &&
	    ((uintptr_t)q.out & 3) == 0) {
		job.c = (float *)q.out;
		job.ldc = q.out_rs;
		job.alpha = 1.0f;
		job.need_finish = p->a_zero_point || p->b_zero_point;
	}
	for (uint64_t u = begin; u < end; u++) {
		int64_t ti = (int64_t)u / gn, tj = (int64_t)u % gn;

		job.m0 = vnpu_gemm_chunk(m, gm, ti);
		job.m1 = vnpu_gemm_chunk(m, gm, ti + 1);
		job.n0 = vnpu_gemm_chunk(n, gn, tj);
		job.n1 = vnpu_gemm_chunk(n, gn, tj + 1);
		vnpu_gemm_run_job(&job);
	}
}

const struct vnpu_kernel_def vnpu_kernel_qgemm = {
	.id = VNPU_KERNEL_QGEMM,
	.name = "qgemm",
	.params_size = sizeof(struct vnpu_kp_qgemm),
	.validate = qgemm_validate,
	.run = qgemm_run,
};
