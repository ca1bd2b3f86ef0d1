// SPDX-License-Identifier: MIT
/*
 * GEMM: out[b] = act(alpha * op(a[b]) op(b[b]) + beta * out[b] + bias) on
 * ND (any strides) and FRACTAL_NZ operands in F32, F16 or BF16, computed in
 * f32 by the packed core (gemm_core.c). Packing is where formats and dtypes
 * are resolved: every operand is read as "row r of a matrix" runs, which
 * for NZ are the 16-element fractal rows.
 */
#include <string.h>

#include "activation.h"
#include "dtype.h"
#include "gemm_core.h"
#include "gemm_operand.h"
#include "kernel.h"
#include "layout.h"
#include "tensor.h"

struct gemm_ctx {
	struct vnpu_operand a;	 /* op(a): rows M, cols K */
	struct vnpu_operand bt;	 /* op(b) transposed: rows N, cols K */
	struct vnpu_operand out; /* rows M, cols N */
	const char *bias;	 /* F32/F16/BF16 [N], stride bias_stride */
	int64_t bias_stride;
	uint32_t dtype;
	uint32_t act;
	bool has_bias;
	float alpha, beta;
	/* batch indices of the job being run */
	int64_t ba, bb, bo;
};

/* Rank 3 carries a batch dim; rank 2 is a single matrix. */
static int64_t batch_of(const struct vnpu_tensor *t)
{
	return t->ndim == 3 ? t->sizes[0] : 1;
}

static uint32_t check_operand(const struct vnpu_tensor *t,
			      const struct vnpu_kbuf *bufs, uint32_t nbufs,
			      uint32_t access, uint32_t dtype)
{
	uint32_t st = vnpu_tensor_check_matrix(t, bufs, nbufs, access, dtype);

	if (st != VNPU_STATUS_OK)
		return st;
	if (t->format != VNPU_FORMAT_ND && t->format != VNPU_FORMAT_FRACTAL_NZ)
		return VNPU_STATUS_UNSUPPORTED;
	if (t->ndim != 2 && t->ndim != 3)
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

static uint32_t gemm_validate(const void *params, const struct vnpu_kbuf *bufs,
			      uint32_t nbufs)
{
	const struct vnpu_kp_gemm *p = params;
	uint32_t dtype = p->a.dtype;
	uint32_t out_access = VNPU_ACCESS_WRITE;
	int64_t m, k, kb, n, batch, ba, bb;
	uint32_t st;

	if (p->trans_a > 1 || p->trans_b > 1 || p->has_bias > 1 ||
	    !vnpu_activation_valid(p->activation))
		return VNPU_STATUS_INVALID_ARGS;
	if (p->beta != 0.0f)
		out_access |= VNPU_ACCESS_READ;
	st = check_operand(&p->a, bufs, nbufs, VNPU_ACCESS_READ, dtype);
	if (st == VNPU_STATUS_OK)
		st = check_operand(&p->b, bufs, nbufs, VNPU_ACCESS_READ, dtype);
	if (st == VNPU_STATUS_OK)
		st = check_operand(&p->out, bufs, nbufs, out_access, dtype);
	if (st != VNPU_STATUS_OK)
		return st;
	if (!vnpu_tensor_is_injective(&p->out))
		return VNPU_STATUS_INVALID_ARGS;

	m = p->a.sizes[p->a.ndim - (p->trans_a ? 1 : 2)];
	k = p->a.sizes[p->a.ndim - (p->trans_a ? 2 : 1)];
	kb = p->b.sizes[p->b.ndim - (p->trans_b ? 1 : 2)];
	n = p->b.sizes[p->b.ndim - (p->trans_b ? 2 : 1)];
	if (k != kb || p->out.sizes[p->out.ndim - 2] != m ||
	    p->out.sizes[p->out.ndim - 1] != n)
		return VNPU_STATUS_INVALID_ARGS;
	batch = batch_of(&p->out);
	ba = batch_of(&p->a);
	bb = batch_of(&p->b);
	if ((ba != batch && ba != 1) || (bb != batch && bb != 1))
		return VNPU_STATUS_INVALID_ARGS;

	if (p->has_bias) {
		st = vnpu_tensor_check(&p->bias, bufs, nbufs, VNPU_ACCESS_READ);
		if (st != VNPU_STATUS_OK)
			return st;
		if (p->bias.dtype != dtype)
			return vnpu_dtype_is_float(p->bias.dtype)
				       ? VNPU_STATUS_INVALID_ARGS
				       : VNPU_STATUS_UNSUPPORTED;
		if (p->bias.format != VNPU_FORMAT_ND)
			return VNPU_STATUS_UNSUPPORTED;
		if (p->bias.ndim != 1 || p->bias.sizes[0] != n)
			return VNPU_STATUS_INVALID_ARGS;
	}
	return VNPU_STATUS_OK;
}

static void pack_a(const struct vnpu_gemm_job *job, int64_t r0, int64_t rows,
		   int64_t p0, int64_t kc, float *dst, uint32_t panel)
{
	const struct gemm_ctx *g = job->ctx;

	vnpu_operand_pack(&g->a, g->ba, r0, rows, p0, kc, dst, panel);
}

static void pack_b(const struct vnpu_gemm_job *job, int64_t r0, int64_t rows,
		   int64_t p0, int64_t kc, float *dst, uint32_t panel)
{
	const struct gemm_ctx *g = job->ctx;

	vnpu_operand_pack(&g->bt, g->bb, r0, rows, p0, kc, dst, panel);
}

static void pack_a_pairs(const struct vnpu_gemm_job *job, int64_t r0,
			 int64_t rows, int64_t p0, int64_t kc, float *dst,
			 uint32_t panel)
{
	const struct gemm_ctx *g = job->ctx;

	vnpu_operand_pack_bf16_pairs(&g->a, g->ba, r0, rows, p0, kc, dst,
				     panel);
}

static void pack_b_pairs(const struct vnpu_gemm_job *job, int64_t r0,
			 int64_t rows, int64_t p0, int64_t kc, float *dst,
			 uint32_t panel)
{
	const struct gemm_ctx *g = job->ctx;

	vnpu_operand_pack_bf16_pairs(&g->bt, g->bb, r0, rows, p0, kc, dst,
				     panel);
}

static float bias_at(const struct gemm_ctx *g, int64_t j)
{
	return vnpu_operand_load(
		g->bias +
			j * g->bias_stride * (int64_t)vnpu_dtype_size(g->dtype),
		g->dtype);
}

/* Direct mode (F32 ND output): bias and activation in place. */
static void finish_direct(const struct vnpu_gemm_job *job, int64_t i0,
			  int64_t rows, int64_t j0, int64_t cols, float *c,
			  int64_t ld)
{
	const struct gemm_ctx *g = job->ctx;
	float bias[VNPU_OPERAND_LINE];

	for (int64_t j = 0; j < cols; j += VNPU_OPERAND_LINE) {
		int64_t cnt = cols - j < VNPU_OPERAND_LINE ? cols - j
							   : VNPU_OPERAND_LINE;

		/* the bias may sit at any alignment: load it element-wise */
		for (int64_t t = 0; t < cnt && g->has_bias; t++)
			bias[t] = bias_at(g, j0 + j + t);
		for (int64_t i = 0; i < rows; i++) {
			float *row = c + i * ld + j;

			if (g->has_bias)
				for (int64_t t = 0; t < cnt; t++)
					row[t] += bias[t];
			if (g->act != VNPU_ACT_NONE)
				for (int64_t t = 0; t < cnt; t++)
					row[t] = vnpu_activate(g->act, row[t]);
		}
	}
	(void)i0;
}

/* Workspace mode: out = act(alpha * acc + beta * out + bias), converted. */
static void store_out(const struct vnpu_gemm_job *job, int64_t i0, int64_t rows,
		      int64_t j0, int64_t cols, float *acc, int64_t ld)
{
	const struct gemm_ctx *g = job->ctx;
	float line[VNPU_OPERAND_LINE];

	for (int64_t i = 0; i < rows; i++) {
		for (int64_t j = 0; j < cols; j += VNPU_OPERAND_LINE) {
			int64_t cnt = cols - j < VNPU_OPERAND_LINE
					      ? cols - j
					      : VNPU_OPERAND_LINE;
			const float *src = acc + i * ld + j;

			if (g->beta != 0.0f)
				vnpu_operand_read_row(&g->out, g->bo, i0 + i,
						      j0 + j, cnt, line);
			/* one pass per term, each a loop the compiler
			 * vectorises */
			if (g->beta != 0.0f)
				for (int64_t t = 0; t < cnt; t++)
					line[t] = g->alpha * src[t] +
						  g->beta * line[t];
			else
				for (int64_t t = 0; t < cnt; t++)
					line[t] = g->alpha * src[t];
			for (int64_t t = 0; t < cnt && g->has_bias; t++)
				line[t] += bias_at(g, j0 + j + t);
			if (g->act != VNPU_ACT_NONE)
				for (int64_t t = 0; t < cnt; t++)
					line[t] =
						vnpu_activate(g->act, line[t]);
			vnpu_operand_write_row(&g->out, g->bo, i0 + i, j0 + j,
					       cnt, line);
		}
	}
}

/* Zero the NZ padding this tile owns: padding rows below its columns when
 * it holds the last row, padding columns right of its rows when it holds
 * the last column (and the corner when both), so storage is canonical and
 * no two tiles write the same element. */
static void zero_nz_padding(const struct gemm_ctx *g, int64_t m, int64_t n,
			    int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
	int64_t mpad = (int64_t)vnpu_ceil_div((uint64_t)m, VNPU_CUBE_M0) *
		       VNPU_CUBE_M0;
	int64_t npad = (int64_t)vnpu_ceil_div((uint64_t)n, 16) * 16;
	int64_t col_end = n1 == n ? npad : n1;

	if (m1 == m)
		for (int64_t i = m; i < mpad; i++)
			vnpu_operand_zero_row(&g->out, g->bo, i, n0,
					      col_end - n0);
	if (n1 == n && npad > n)
		for (int64_t i = m0; i < m1; i++)
			vnpu_operand_zero_row(&g->out, g->bo, i, n, npad - n);
}

static void gemm_run(const void *params, const struct vnpu_kbuf *bufs,
		     uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_gemm *p = params;
	struct gemm_ctx g;
	struct vnpu_gemm_job job;
	int64_t m = p->out.sizes[p->out.ndim - 2];
	int64_t n = p->out.sizes[p->out.ndim - 1];
	int64_t k = p->a.sizes[p->a.ndim - (p->trans_a ? 2 : 1)];
	int64_t batch, ba, bb, gm, gn;
	uint64_t begin, end, work = 0;

	batch = batch_of(&p->out);
	ba = batch_of(&p->a);
	bb = batch_of(&p->b);
	if (batch == 0 || m == 0 || n == 0)
		return;

	vnpu_gemm_tile_grid(batch, m, n, nblocks, &gm, &gn);
	vnpu_block_range((uint64_t)batch * (uint64_t)gm * (uint64_t)gn, block,
			 nblocks, &begin, &end);
	if (begin >= end)
		return;

	memset(&g, 0, sizeof(g));
	vnpu_operand_init(&g.a, &p->a, bufs, p->trans_a);
	vnpu_operand_init(&g.bt, &p->b, bufs, !p->trans_b);
	vnpu_operand_init(&g.out, &p->out, bufs, false);
	g.dtype = p->a.dtype;
	g.act = p->activation;
	g.has_bias = p->has_bias;
	g.alpha = p->alpha;
	g.beta = p->beta;
	if (p->has_bias) {
		g.bias = vnpu_tensor_data(&p->bias, bufs);
		g.bias_stride = p->bias.strides[0];
	}

	memset(&job, 0, sizeof(job));
	job.k = k;
	job.bf16_operands = g.dtype == VNPU_DTYPE_BF16;
	if (job.bf16_operands && vnpu_operand_pairs_native(&g.a) &&
	    vnpu_operand_pairs_native(&g.bt)) {
		job.pack_a_native = pack_a_pairs;
		job.pack_b_native = pack_b_pairs;
	}
	job.pack_a = pack_a;
	job.pack_b = pack_b;
	job.ctx = &g;
	job.alpha = p->alpha;
	job.beta = p->beta;
	/* F32 ND rows with unit column stride: the microkernel writes the
	 * result in place (aligned floats only, as it stores f32 directly). */
	if (g.dtype == VNPU_DTYPE_F32 && !g.out.nz &&
	    (g.out.cs == 1 || n == 1) && ((uintptr_t)g.out.data & 3) == 0) {
		job.epilogue = finish_direct;
		job.need_finish = p->has_bias || p->activation != VNPU_ACT_NONE;
	} else {
		job.epilogue = store_out;
	}

	for (uint64_t u = begin; u < end; u++) {
		int64_t tile = (int64_t)(u % (uint64_t)(gm * gn));
		int64_t ti = tile / gn, tj = tile % gn;

		/* big tiles poll inside the GEMM core; many small ones here */
		if (vnpu_kernel_poll(&work, (uint64_t)(m / gm) *
						    (uint64_t)(n / gn) *
						    (uint64_t)(k ? k : 1)))
			return;
		g.bo = (int64_t)(u / (uint64_t)(gm * gn));
		g.ba = ba == 1 ? 0 : g.bo;
		g.bb = bb == 1 ? 0 : g.bo;
		job.m0 = vnpu_gemm_chunk(m, gm, ti);
		job.m1 = vnpu_gemm_chunk(m, gm, ti + 1);
		job.n0 = vnpu_gemm_chunk(n, gn, tj);
		job.n1 = vnpu_gemm_chunk(n, gn, tj + 1);
		job.c = NULL;
		if (job.epilogue == finish_direct) {
			job.c = (float *)g.out.data + g.bo * g.out.bs;
			job.ldc = g.out.rs;
		}
		vnpu_gemm_run_job(&job);
		if (g.out.nz)
			zero_nz_padding(&g, m, n, job.m0, job.m1, job.n0,
					job.n1);
	}
}

const struct vnpu_kernel_def vnpu_kernel_gemm = {
	.id = VNPU_KERNEL_GEMM,
	.name = "gemm",
	.params_size = sizeof(struct vnpu_kp_gemm),
	.validate = gemm_validate,
	.run = gemm_run,
};
