// SPDX-License-Identifier: MIT
/*
 * INDEX: SELECT gathers rows of one dim by an index list (index_select,
 * embedding), ADD adds rows into them (index_add_, embedding's backward,
 * index_put_ with accumulate), COPY writes them (index_copy_, index_put_),
 * NONZERO lists the positions of a vector's nonzero entries (masked_select,
 * nonzero): a prefix count, run by one block.
 * All walk every coordinate of the other dims with an odometer. ADD's and
 * COPY's blocks split those coordinates, and each writes all of its rows
 * in index order, so no two blocks write one element and the result does
 * not depend on the block count.
 */
#include <math.h>
#include <string.h>

#include "elementwise.h"

/* Entry i of a checked rank-1 I32/I64 index tensor. */
static int64_t index_at(const struct vnpu_tensor *idx, const char *base, int64_t i)
{
	const char *p = base + (uint64_t)(i * idx->strides[0]) * vnpu_dtype_size(idx->dtype);
	int64_t v;

	if (idx->dtype == VNPU_DTYPE_I32) {
		int32_t w;

		memcpy(&w, p, sizeof(w));
		return w;
	}
	memcpy(&v, p, sizeof(v));
	return v;
}

/* The coordinates of the dims other than `dim` (size 1 there), for an
 * odometer over them. */
struct rest {
	uint32_t ndim, dim;
	int64_t sizes[VNPU_MAX_DIMS];
	int64_t pos[VNPU_MAX_DIMS];
};

static uint64_t rest_init(struct rest *r, const struct vnpu_tensor *t, uint32_t dim)
{
	uint64_t n = 1;

	r->ndim = t->ndim;
	r->dim = dim;
	for (uint32_t d = 0; d < t->ndim; d++) {
		r->sizes[d] = d == dim ? 1 : t->sizes[d];
		n *= (uint64_t)r->sizes[d];
	}
	return n;
}

/* Positions the odometer at row-major index `linear` of the rest. */
static void rest_seek(struct rest *r, uint64_t linear)
{
	for (uint32_t d = r->ndim; d-- > 0;) {
		r->pos[d] = (int64_t)(linear % (uint64_t)r->sizes[d]);
		linear /= (uint64_t)r->sizes[d];
	}
}

static void rest_next(struct rest *r)
{
	for (uint32_t d = r->ndim; d-- > 0;) {
		if (++r->pos[d] < r->sizes[d])
			return;
		r->pos[d] = 0;
	}
}

/* Element offset of the odometer's position in t, `dim` at 0. */
static int64_t rest_offset(const struct rest *r, const struct vnpu_tensor *t)
{
	int64_t off = t->offset;

	for (uint32_t d = 0; d < r->ndim; d++)
		off += r->pos[d] * t->strides[d];
	return off;
}

static uint32_t nonzero_validate(const struct vnpu_kp_index *p,
				 const struct vnpu_kbuf *bufs, uint32_t nbufs)
{
	uint32_t st;

	if (p->dim != 0 || p->src.ndim != 1 || p->out.ndim != 1 ||
	    p->out.dtype != VNPU_DTYPE_I64 || p->out.sizes[0] != p->src.sizes[0] + 1)
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(&p->src, bufs, nbufs, VNPU_ACCESS_READ);
	return st == VNPU_STATUS_OK ? vnpu_ew_check_out(&p->out, bufs, nbufs) : st;
}

static uint32_t index_validate(const void *params, const struct vnpu_kbuf *bufs,
			       uint32_t nbufs)
{
	const struct vnpu_kp_index *p = params;
	const struct vnpu_tensor *rows = p->op == VNPU_INDEX_SELECT ? &p->out : &p->src;
	uint32_t st;

	if (p->op == VNPU_INDEX_NONZERO)
		return nonzero_validate(p, bufs, nbufs);
	if (p->op >= VNPU_INDEX_COUNT || p->dim >= p->out.ndim ||
	    p->src.ndim != p->out.ndim || p->index.ndim != 1)
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(&p->src, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check(&p->index, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(&p->out, bufs, nbufs);
	if (st == VNPU_STATUS_OK && p->op == VNPU_INDEX_ADD)
		st = vnpu_ew_check(&p->out, bufs, nbufs, VNPU_ACCESS_READ);
	if (st != VNPU_STATUS_OK)
		return st;
	for (uint32_t d = 0; d < p->out.ndim; d++)
		if (d != p->dim && p->src.sizes[d] != p->out.sizes[d])
			return VNPU_STATUS_INVALID_ARGS;
	if (rows->sizes[p->dim] != p->index.sizes[0] || p->src.dtype != p->out.dtype)
		return VNPU_STATUS_INVALID_ARGS;
	if (p->index.dtype != VNPU_DTYPE_I32 && p->index.dtype != VNPU_DTYPE_I64)
		return VNPU_STATUS_UNSUPPORTED;
	if (p->op == VNPU_INDEX_ADD && !vnpu_dtype_is_floating(p->out.dtype) &&
	    !(p->alpha == trunc(p->alpha) && fabs(p->alpha) < 0x1p63))
		return VNPU_STATUS_INVALID_ARGS; /* an integer add takes an integral alpha */
	return VNPU_STATUS_OK;
}

static void select_run(const struct vnpu_kp_index *p, const struct vnpu_kbuf *bufs,
		       uint32_t block, uint32_t nblocks)
{
	const char *src = bufs[p->src.buffer].ptr;
	const char *idx = vnpu_tensor_data(&p->index, bufs);
	char *out = bufs[p->out.buffer].ptr;
	uint64_t esize = vnpu_dtype_size(p->out.dtype), poll = 0;
	int64_t n = p->index.sizes[0], size = p->src.sizes[p->dim];
	uint64_t nrest, begin, end;
	struct rest r;

	/* a block owns a range of (rest, row) pairs, rows fastest */
	nrest = rest_init(&r, &p->out, p->dim);
	vnpu_block_range(nrest * (uint64_t)n, block, nblocks, &begin, &end);
	if (begin >= end)
		return;
	rest_seek(&r, begin / (uint64_t)n);
	for (uint64_t e = begin; e < end;) {
		int64_t so = rest_offset(&r, &p->src), oo = rest_offset(&r, &p->out);

		for (int64_t i = (int64_t)(e % (uint64_t)n); i < n && e < end; i++, e++) {
			int64_t j = index_at(&p->index, idx, i);
			char *o = out + (uint64_t)(oo + i * p->out.strides[p->dim]) * esize;

			if (j < 0 || j >= size)
				memset(o, 0, esize);
			else
				memcpy(o, src + (uint64_t)(so + j * p->src.strides[p->dim]) * esize,
				       esize);
		}
		rest_next(&r);
		if (vnpu_kernel_poll(&poll, (uint64_t)n))
			return;
	}
}

/* The alpha of ADD in each arithmetic. */
struct add_alpha {
	float f;
	double d;
	int64_t i;
};

/* One element of ADD: o += alpha * s, in the dtype's arithmetic. */
static void add_elem(char *o, const char *s, uint32_t dtype, const struct add_alpha *alpha)
{
	if (dtype == VNPU_DTYPE_F64) {
		double a, b;

		memcpy(&a, o, sizeof(a));
		memcpy(&b, s, sizeof(b));
		a += alpha->d * b;
		memcpy(o, &a, sizeof(a));
	} else if (vnpu_dtype_is_float(dtype)) {
		float a = 0, b = 0;

		vnpu_ew_load_f32(o, 1, dtype, 1, &a);
		vnpu_ew_load_f32(s, 1, dtype, 1, &b);
		a += alpha->f * b;
		vnpu_ew_store_f32(o, 1, dtype, 1, &a);
	} else {
		int64_t a = 0, b = 0;

		vnpu_ew_load_i64(o, 1, dtype, 1, &a);
		vnpu_ew_load_i64(s, 1, dtype, 1, &b);
		/* wrapping, as PyTorch's integer index_add_ */
		a = (int64_t)((uint64_t)a + (uint64_t)alpha->i * (uint64_t)b);
		vnpu_ew_store_i64(o, 1, dtype, 1, &a);
	}
}

/* ADD and COPY: a block owns a range of the other dims' coordinates and
 * walks every index entry in order for each, so no two blocks write one
 * element and the last of repeated entries wins in COPY. */
static void scatter_run(const struct vnpu_kp_index *p, const struct vnpu_kbuf *bufs,
			uint32_t block, uint32_t nblocks)
{
	const char *src = bufs[p->src.buffer].ptr;
	const char *idx = vnpu_tensor_data(&p->index, bufs);
	char *out = bufs[p->out.buffer].ptr;
	uint64_t esize = vnpu_dtype_size(p->out.dtype), poll = 0, begin, end;
	int64_t n = p->index.sizes[0], size = p->out.sizes[p->dim];
	struct add_alpha alpha = {
		.f = (float)p->alpha,
		.d = p->alpha,
		/* integral and in range for an integer ADD (validated; COPY's
		 * alpha is not looked at, so not converted) */
		.i = p->op == VNPU_INDEX_ADD && !vnpu_dtype_is_floating(p->out.dtype)
			     ? (int64_t)p->alpha
			     : 0,
	};
	struct rest r;

	vnpu_block_range(rest_init(&r, &p->out, p->dim), block, nblocks, &begin, &end);
	if (begin >= end)
		return;
	rest_seek(&r, begin);
	for (uint64_t e = begin; e < end; e++, rest_next(&r)) {
		int64_t so = rest_offset(&r, &p->src), oo = rest_offset(&r, &p->out);

		for (int64_t i = 0; i < n; i++) {
			int64_t j = index_at(&p->index, idx, i);
			const char *s;
			char *o;

			if (j < 0 || j >= size || j == p->skip)
				continue;
			o = out + (uint64_t)(oo + j * p->out.strides[p->dim]) * esize;
			s = src + (uint64_t)(so + i * p->src.strides[p->dim]) * esize;
			if (p->op == VNPU_INDEX_COPY)
				memcpy(o, s, esize);
			else
				add_elem(o, s, p->out.dtype, &alpha);
		}
		if (vnpu_kernel_poll(&poll, (uint64_t)n + 1))
			return;
	}
}

/* Sequential by nature (each position depends on every count before
 * it): block 0 does it all, memory-bound at one pass over src. */
static void nonzero_run(const struct vnpu_kp_index *p, const struct vnpu_kbuf *bufs,
			uint32_t block)
{
	const char *src = vnpu_tensor_data(&p->src, bufs);
	char *out = vnpu_tensor_data(&p->out, bufs);
	int64_t n = p->src.sizes[0], stride = p->src.strides[0];
	int64_t count = 0, ostride = p->out.strides[0];
	uint64_t poll = 0;
	bool is_f64 = p->src.dtype == VNPU_DTYPE_F64;
	bool is_float = vnpu_dtype_is_float(p->src.dtype);

	if (block != 0)
		return;
	for (int64_t done = 0; done < n; done += VNPU_EW_CHUNK) {
		int64_t m = n - done < VNPU_EW_CHUNK ? n - done : VNPU_EW_CHUNK;
		const char *q = src + (uint64_t)(done * stride) * vnpu_dtype_size(p->src.dtype);
		bool nz[VNPU_EW_CHUNK];

		if (vnpu_kernel_poll(&poll, (uint64_t)m))
			return;
		if (is_f64) {
			double x[VNPU_EW_CHUNK];

			vnpu_ew_load_f64(q, stride, p->src.dtype, m, x);
			for (int64_t i = 0; i < m; i++)
				nz[i] = x[i] != 0; /* NaN too, -0.0 not */
		} else if (is_float) {
			float x[VNPU_EW_CHUNK];

			vnpu_ew_load_f32(q, stride, p->src.dtype, m, x);
			for (int64_t i = 0; i < m; i++)
				nz[i] = x[i] != 0; /* NaN too, -0.0 not */
		} else {
			int64_t x[VNPU_EW_CHUNK];

			vnpu_ew_load_i64(q, stride, p->src.dtype, m, x);
			for (int64_t i = 0; i < m; i++)
				nz[i] = x[i] != 0;
		}
		for (int64_t i = 0; i < m; i++) {
			int64_t pos = done + i;

			if (!nz[i])
				continue;
			count++;
			memcpy(out + (uint64_t)(count * ostride) * sizeof(int64_t), &pos,
			       sizeof(pos));
		}
	}
	memcpy(out, &count, sizeof(count));
}

static void index_run(const void *params, const struct vnpu_kbuf *bufs,
		      uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_index *p = params;

	if (p->op == VNPU_INDEX_SELECT)
		select_run(p, bufs, block, nblocks);
	else if (p->op == VNPU_INDEX_NONZERO)
		nonzero_run(p, bufs, block);
	else
		scatter_run(p, bufs, block, nblocks);
}

const struct vnpu_kernel_def vnpu_kernel_index = {
	.id = VNPU_KERNEL_INDEX,
	.name = "index",
	.params_size = sizeof(struct vnpu_kp_index),
	.validate = index_validate,
	.run = index_run,
};
