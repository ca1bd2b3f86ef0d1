/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the elementwise, reduction, normalisation and pooling
 * kernels: descriptor checks, strided chunk loads and stores through f32,
 * double (the F64 paths) or int64, and an n-d iterator over several
 * operands with broadcasting.
 *
 * Integer results wrap to the destination width (two's complement), as
 * PyTorch's integer arithmetic does; only float-to-integer conversions
 * saturate (kernel_abi.h, CAST).
 */
#ifndef VNPU_KERNELS_ELEMENTWISE_H
#define VNPU_KERNELS_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dtype.h"
#include "kernel.h"
#include "tensor.h"

/* Operands of one iteration: the output first, then up to three inputs. */
#define VNPU_EW_MAX_OPS 4
/* Elements handed to a chunk function at once; sizes its stack buffers. */
#define VNPU_EW_CHUNK 256

/* Descriptor check for a plain tensor: internal formats are UNSUPPORTED. */
static inline uint32_t vnpu_ew_check(const struct vnpu_tensor *t,
				     const struct vnpu_kbuf *bufs,
				     uint32_t nbufs, uint32_t access)
{
	uint32_t st = vnpu_tensor_check(t, bufs, nbufs, access);

	if (st != VNPU_STATUS_OK)
		return st;
	if (!vnpu_format_is_plain(t->format))
		return VNPU_STATUS_UNSUPPORTED;
	return VNPU_STATUS_OK;
}

/* Output checks common to every kernel here: plain, writable, no overlap. */
static inline uint32_t vnpu_ew_check_out(const struct vnpu_tensor *t,
					 const struct vnpu_kbuf *bufs,
					 uint32_t nbufs)
{
	uint32_t st = vnpu_ew_check(t, bufs, nbufs, VNPU_ACCESS_WRITE);

	if (st != VNPU_STATUS_OK)
		return st;
	return vnpu_tensor_is_injective(t) ? VNPU_STATUS_OK
					   : VNPU_STATUS_INVALID_ARGS;
}

static inline bool vnpu_same_shape(const struct vnpu_tensor *a,
				   const struct vnpu_tensor *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (uint32_t i = 0; i < a->ndim; i++)
		if (a->sizes[i] != b->sizes[i])
			return false;
	return true;
}

/* in has out's rank and each size equals out's or is 1. */
static inline bool vnpu_broadcasts_to(const struct vnpu_tensor *in,
				      const struct vnpu_tensor *out)
{
	if (in->ndim != out->ndim)
		return false;
	for (uint32_t i = 0; i < in->ndim; i++)
		if (in->sizes[i] != out->sizes[i] && in->sizes[i] != 1)
			return false;
	return true;
}

static inline bool vnpu_dtype_is_half(uint32_t dtype)
{
	return dtype == VNPU_DTYPE_F16 || dtype == VNPU_DTYPE_BF16;
}

/* One element of a float dtype as f32. */
static inline float vnpu_ld_f32(const char *p, uint32_t dtype)
{
	uint16_t h;
	float f;

	switch (dtype) {
	case VNPU_DTYPE_F32:
		memcpy(&f, p, 4);
		return f;
	case VNPU_DTYPE_F16:
		memcpy(&h, p, 2);
		return vnpu_f16_to_f32(h);
	default:
		memcpy(&h, p, 2);
		return vnpu_bf16_to_f32(h);
	}
}

static inline void vnpu_st_f32(char *p, uint32_t dtype, float f)
{
	uint16_t h;

	switch (dtype) {
	case VNPU_DTYPE_F32:
		memcpy(p, &f, 4);
		return;
	case VNPU_DTYPE_F16:
		h = vnpu_f32_to_f16(f);
		break;
	default:
		h = vnpu_f32_to_bf16(f);
		break;
	}
	memcpy(p, &h, 2);
}

/* n elements of a float dtype, `stride` elements apart, into dst. */
static inline void vnpu_ew_load_f32(const char *p, int64_t stride,
				    uint32_t dtype, int64_t n, float *dst)
{
	uint16_t h;

	switch (dtype) {
	case VNPU_DTYPE_F32:
		if (stride == 1) {
			memcpy(dst, p, (size_t)n * 4);
			return;
		}
		for (int64_t i = 0; i < n; i++)
			memcpy(&dst[i], p + i * stride * 4, 4);
		return;
	case VNPU_DTYPE_F16:
		for (int64_t i = 0; i < n; i++) {
			memcpy(&h, p + i * stride * 2, 2);
			dst[i] = vnpu_f16_to_f32(h);
		}
		return;
	case VNPU_DTYPE_BF16:
		for (int64_t i = 0; i < n; i++) {
			memcpy(&h, p + i * stride * 2, 2);
			dst[i] = vnpu_bf16_to_f32(h);
		}
		return;
	default:
		return;
	}
}

static inline void vnpu_ew_store_f32(char *p, int64_t stride, uint32_t dtype,
				     int64_t n, const float *src)
{
	uint16_t h;

	switch (dtype) {
	case VNPU_DTYPE_F32:
		if (stride == 1) {
			memmove(p, src, (size_t)n * 4);
			return;
		}
		for (int64_t i = 0; i < n; i++)
			memcpy(p + i * stride * 4, &src[i], 4);
		return;
	case VNPU_DTYPE_F16:
		for (int64_t i = 0; i < n; i++) {
			h = vnpu_f32_to_f16(src[i]);
			memcpy(p + i * stride * 2, &h, 2);
		}
		return;
	case VNPU_DTYPE_BF16:
		for (int64_t i = 0; i < n; i++) {
			h = vnpu_f32_to_bf16(src[i]);
			memcpy(p + i * stride * 2, &h, 2);
		}
		return;
	default:
		return;
	}
}

/* n elements of any float dtype (F64, F32, F16, BF16) as double, exactly:
 * the F64 paths' loads, `stride` elements apart. */
static inline void vnpu_ew_load_f64(const char *p, int64_t stride,
				    uint32_t dtype, int64_t n, double *dst)
{
	int64_t step = stride * (int64_t)vnpu_dtype_size(dtype);

	if (dtype != VNPU_DTYPE_F64) {
		for (int64_t i = 0; i < n; i++)
			dst[i] = vnpu_ld_f32(p + i * step, dtype);
		return;
	}
	if (stride == 1) {
		memcpy(dst, p, (size_t)n * 8);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		memcpy(&dst[i], p + i * step, 8);
}

/* Stores doubles into any float dtype: F64 as they are, F32, F16 and BF16
 * each rounded once to nearest even from the double value. */
static inline void vnpu_ew_store_f64(char *p, int64_t stride, uint32_t dtype,
				     int64_t n, const double *src)
{
	float f;
	uint16_t h;

	switch (dtype) {
	case VNPU_DTYPE_F64:
		if (stride == 1) {
			memmove(p, src, (size_t)n * 8);
			return;
		}
		for (int64_t i = 0; i < n; i++)
			memcpy(p + i * stride * 8, &src[i], 8);
		return;
	case VNPU_DTYPE_F32:
		for (int64_t i = 0; i < n; i++) {
			f = (float)src[i];
			memcpy(p + i * stride * 4, &f, 4);
		}
		return;
	case VNPU_DTYPE_F16:
		for (int64_t i = 0; i < n; i++) {
			h = vnpu_f64_to_f16(src[i]);
			memcpy(p + i * stride * 2, &h, 2);
		}
		return;
	case VNPU_DTYPE_BF16:
		for (int64_t i = 0; i < n; i++) {
			h = vnpu_f64_to_bf16(src[i]);
			memcpy(p + i * stride * 2, &h, 2);
		}
		return;
	default:
		return;
	}
}

/* n elements of an integer or bool dtype into int64. */
static inline void vnpu_ew_load_i64(const char *p, int64_t stride,
				    uint32_t dtype, int64_t n, int64_t *dst)
{
	int32_t i32;
	int16_t i16;

	switch (dtype) {
	case VNPU_DTYPE_I8:
		for (int64_t i = 0; i < n; i++)
			dst[i] = (int8_t)p[i * stride];
		return;
	case VNPU_DTYPE_U8:
		for (int64_t i = 0; i < n; i++)
			dst[i] = (uint8_t)p[i * stride];
		return;
	case VNPU_DTYPE_BOOL:
		for (int64_t i = 0; i < n; i++)
			dst[i] = p[i * stride] != 0;
		return;
	case VNPU_DTYPE_I16:
		for (int64_t i = 0; i < n; i++) {
			memcpy(&i16, p + i * stride * 2, 2);
			dst[i] = i16;
		}
		return;
	case VNPU_DTYPE_I32:
		for (int64_t i = 0; i < n; i++) {
			memcpy(&i32, p + i * stride * 4, 4);
			dst[i] = i32;
		}
		return;
	case VNPU_DTYPE_I64:
		for (int64_t i = 0; i < n; i++)
			memcpy(&dst[i], p + i * stride * 8, 8);
		return;
	default:
		return;
	}
}

/* Stores int64 values into an integer dtype, wrapping to its width; BOOL
 * stores (v != 0). */
static inline void vnpu_ew_store_i64(char *p, int64_t stride, uint32_t dtype,
				     int64_t n, const int64_t *src)
{
	uint32_t u32;
	uint16_t u16;

	switch (dtype) {
	case VNPU_DTYPE_I8:
	case VNPU_DTYPE_U8:
		for (int64_t i = 0; i < n; i++)
			p[i * stride] = (char)(uint8_t)(uint64_t)src[i];
		return;
	case VNPU_DTYPE_BOOL:
		for (int64_t i = 0; i < n; i++)
			p[i * stride] = src[i] != 0;
		return;
	case VNPU_DTYPE_I16:
		for (int64_t i = 0; i < n; i++) {
			u16 = (uint16_t)(uint64_t)src[i];
			memcpy(p + i * stride * 2, &u16, 2);
		}
		return;
	case VNPU_DTYPE_I32:
		for (int64_t i = 0; i < n; i++) {
			u32 = (uint32_t)(uint64_t)src[i];
			memcpy(p + i * stride * 4, &u32, 4);
		}
		return;
	case VNPU_DTYPE_I64:
		for (int64_t i = 0; i < n; i++)
			memcpy(p + i * stride * 8, &src[i], 8);
		return;
	default:
		return;
	}
}

/*
 * Iteration over the elements of an output and the inputs broadcast to it,
 * in row-major order of the output. Size-1 dims are dropped and adjacent
 * dims merged where every operand allows, so dense operands become one run.
 */
struct vnpu_ew_loop {
	uint32_t ndim; /* >= 1 */
	uint32_t nops;
	uint64_t numel;
	int64_t sizes[VNPU_MAX_DIMS];
	int64_t strides[VNPU_EW_MAX_OPS][VNPU_MAX_DIMS]; /* elements */
	uint32_t itemsize[VNPU_EW_MAX_OPS];
	char *base[VNPU_EW_MAX_OPS];
};

/* ts[0] is the output; the others broadcast to it (checked beforehand). */
static inline void vnpu_ew_loop_init(struct vnpu_ew_loop *l,
				     const struct vnpu_tensor *const *ts,
				     uint32_t nops,
				     const struct vnpu_kbuf *bufs)
{
	const struct vnpu_tensor *out = ts[0];
	uint32_t nd = 0;

	l->nops = nops;
	l->numel = 1;
	for (uint32_t op = 0; op < nops; op++) {
		l->itemsize[op] = vnpu_dtype_size(ts[op]->dtype);
		l->base[op] = vnpu_tensor_data(ts[op], bufs);
	}
	for (uint32_t d = 0; d < out->ndim; d++) {
		bool merge = nd > 0;

		l->numel *= (uint64_t)out->sizes[d];
		if (out->sizes[d] == 1)
			continue;
		l->sizes[nd] = out->sizes[d];
		for (uint32_t op = 0; op < nops; op++) {
			l->strides[op][nd] =
				ts[op]->sizes[d] == 1 ? 0 : ts[op]->strides[d];
			if (merge && l->strides[op][nd - 1] !=
					     l->strides[op][nd] * l->sizes[nd])
				merge = false;
		}
		if (merge) {
			l->sizes[nd - 1] *= l->sizes[nd];
			for (uint32_t op = 0; op < nops; op++)
				l->strides[op][nd - 1] = l->strides[op][nd];
		} else {
			nd++;
		}
	}
	if (nd == 0) {
		l->sizes[0] = 1;
		for (uint32_t op = 0; op < nops; op++)
			l->strides[op][0] = 0;
		nd = 1;
	}
	l->ndim = nd;
}

/* True when every operand steps by one element along a single dim. */
static inline bool vnpu_ew_loop_dense(const struct vnpu_ew_loop *l)
{
	if (l->ndim != 1)
		return false;
	for (uint32_t op = 0; op < l->nops; op++)
		if (l->strides[op][0] != 1)
			return false;
	return true;
}

/* Processes n (<= VNPU_EW_CHUNK) elements; operand k starts at ptrs[k] and
 * steps strides[k] elements. */
typedef void vnpu_ew_chunk_fn(void *ctx, char *const *ptrs,
			      const int64_t *strides, int64_t n);

/* Runs fn over output elements [begin, end) with base pointers `base`
 * (l->base, or shifted copies of it). One div/mod per dim at the start,
 * then an index counter. Polls the cancellation hook every
 * VNPU_KERNEL_POLL_WORK elements; true when it stopped early. */
static inline bool vnpu_ew_for_range_at(const struct vnpu_ew_loop *l,
					char *const *base, uint64_t begin,
					uint64_t end, vnpu_ew_chunk_fn *fn,
					void *ctx)
{
	int64_t idx[VNPU_MAX_DIMS];
	int64_t off[VNPU_EW_MAX_OPS] = {0};
	int64_t step[VNPU_EW_MAX_OPS];
	char *ptrs[VNPU_EW_MAX_OPS];
	uint32_t last = l->ndim - 1;
	uint64_t rem = begin, todo, work = 0;

	if (begin >= end)
		return false;
	for (uint32_t d = l->ndim; d-- > 0;) {
		idx[d] = (int64_t)(rem % (uint64_t)l->sizes[d]);
		rem /= (uint64_t)l->sizes[d];
		for (uint32_t op = 0; op < l->nops; op++)
			off[op] += idx[d] * l->strides[op][d];
	}
	for (uint32_t op = 0; op < l->nops; op++)
		step[op] = l->strides[op][last];
	todo = end - begin;
	while (todo > 0) {
		int64_t n = l->sizes[last] - idx[last];

		if ((uint64_t)n > todo)
			n = (int64_t)todo;
		if (n > VNPU_EW_CHUNK)
			n = VNPU_EW_CHUNK;
		if (vnpu_kernel_poll(&work, (uint64_t)n))
			return true;
		for (uint32_t op = 0; op < l->nops; op++)
			ptrs[op] = base[op] + off[op] * l->itemsize[op];
		fn(ctx, ptrs, step, n);
		todo -= (uint64_t)n;
		idx[last] += n;
		for (uint32_t op = 0; op < l->nops; op++)
			off[op] += n * step[op];
		for (uint32_t d = last; d > 0 && idx[d] == l->sizes[d]; d--) {
			idx[d] = 0;
			idx[d - 1]++;
			for (uint32_t op = 0; op < l->nops; op++)
				off[op] += l->strides[op][d - 1] -
					   l->sizes[d] * l->strides[op][d];
		}
	}
	return false;
}

static inline bool vnpu_ew_for_range(const struct vnpu_ew_loop *l,
				     uint64_t begin, uint64_t end,
				     vnpu_ew_chunk_fn *fn, void *ctx)
{
	return vnpu_ew_for_range_at(l, l->base, begin, end, fn, ctx);
}

/* This block's share of the loop's elements. */
static inline void vnpu_ew_run_block(const struct vnpu_ew_loop *l,
				     uint32_t block, uint32_t nblocks,
				     vnpu_ew_chunk_fn *fn, void *ctx)
{
	uint64_t begin, end;

	vnpu_block_range(l->numel, block, nblocks, &begin, &end);
	vnpu_ew_for_range(l, begin, end, fn, ctx);
}

/*
 * Row-major counter over some dims of a tensor, tracking the element offset
 * of up to two tensors; used to visit rows, planes or output positions.
 */
struct vnpu_nd_counter {
	uint32_t ndim;
	int64_t sizes[VNPU_MAX_DIMS];
	int64_t strides[2][VNPU_MAX_DIMS];
	int64_t idx[VNPU_MAX_DIMS];
	int64_t off[2];
};

/* Positions the counter at row-major index `start` (< product of sizes,
 * unless that product is zero). */
static inline void vnpu_nd_counter_init(struct vnpu_nd_counter *c,
					uint32_t ndim, const int64_t *sizes,
					const int64_t *strides0,
					const int64_t *strides1, uint64_t start)
{
	c->ndim = ndim;
	c->off[0] = 0;
	c->off[1] = 0;
	for (uint32_t d = ndim; d-- > 0;) {
		uint64_t n = (uint64_t)sizes[d];

		c->sizes[d] = sizes[d];
		c->strides[0][d] = strides0 ? strides0[d] : 0;
		c->strides[1][d] = strides1 ? strides1[d] : 0;
		c->idx[d] = n ? (int64_t)(start % n) : 0;
		start = n ? start / n : 0;
		c->off[0] += c->idx[d] * c->strides[0][d];
		c->off[1] += c->idx[d] * c->strides[1][d];
	}
}

static inline void vnpu_nd_counter_next(struct vnpu_nd_counter *c)
{
	for (uint32_t d = c->ndim; d-- > 0;) {
		c->off[0] += c->strides[0][d];
		c->off[1] += c->strides[1][d];
		if (++c->idx[d] < c->sizes[d])
			return;
		c->off[0] -= c->sizes[d] * c->strides[0][d];
		c->off[1] -= c->sizes[d] * c->strides[1][d];
		c->idx[d] = 0;
	}
}

/*
 * The lines of in and out along dim: one per position of the other dims,
 * with out laid out as in over them. Positions c at this block's first line
 * and returns how many lines the block has (none when the lines are empty).
 */
static inline uint64_t vnpu_lines_init(struct vnpu_nd_counter *c,
				       const struct vnpu_tensor *in,
				       const struct vnpu_tensor *out, uint32_t dim,
				       uint32_t block, uint32_t nblocks)
{
	int64_t sizes[VNPU_MAX_DIMS], in_strides[VNPU_MAX_DIMS];
	int64_t out_strides[VNPU_MAX_DIMS];
	uint64_t lines = 1, begin, end;
	uint32_t nd = 0;

	c->ndim = 0;
	c->off[0] = c->off[1] = 0;
	for (uint32_t d = 0; d < in->ndim; d++) {
		if (d == dim)
			continue;
		sizes[nd] = in->sizes[d];
		in_strides[nd] = in->strides[d];
		out_strides[nd] = out->strides[d];
		lines *= (uint64_t)in->sizes[d];
		nd++;
	}
	if (in->sizes[dim] == 0)
		return 0;
	vnpu_block_range(lines, block, nblocks, &begin, &end);
	if (begin >= end)
		return 0;
	vnpu_nd_counter_init(c, nd, sizes, in_strides, out_strides, begin);
	return end - begin;
}

/* One line of a line kernel: where it starts in in and in out, its
 * length and steps (elements), and in's dtype. */
struct vnpu_line {
	const char *in;
	char *out;
	int64_t len, in_step, out_step;
	uint32_t dtype;
};

/* A line kernel's work on one line; true when the cancellation hook
 * (polled through *work) stopped it. */
typedef bool (*vnpu_line_fn)(const void *params, const struct vnpu_line *l,
			     uint64_t *work);

/* Runs `line` over this block's lines of in and out along dim
 * (vnpu_lines_init), polling the cancellation hook between lines. */
static inline void vnpu_for_lines(const struct vnpu_tensor *in,
				  const struct vnpu_tensor *out, uint32_t dim,
				  const struct vnpu_kbuf *bufs, uint32_t block,
				  uint32_t nblocks, vnpu_line_fn line,
				  const void *params)
{
	uint32_t in_size = vnpu_dtype_size(in->dtype);
	uint32_t out_size = vnpu_dtype_size(out->dtype);
	const char *in_base = (const char *)vnpu_tensor_data(in, bufs);
	char *out_base = (char *)vnpu_tensor_data(out, bufs);
	struct vnpu_line l = {
		.len = in->sizes[dim],
		.in_step = in->strides[dim],
		.out_step = out->strides[dim],
		.dtype = in->dtype,
	};
	struct vnpu_nd_counter c;
	uint64_t lines = vnpu_lines_init(&c, in, out, dim, block, nblocks);
	uint64_t work = 0;

	for (uint64_t r = 0; r < lines; r++) {
		l.in = in_base + c.off[0] * in_size;
		l.out = out_base + c.off[1] * out_size;
		if (vnpu_kernel_poll(&work, 1) || line(params, &l, &work))
			return;
		vnpu_nd_counter_next(&c);
	}
}

/* Chunk `done` of line l's input as f32 in x: its length, or 0 when the
 * cancellation hook stopped the kernel. */
static inline int64_t vnpu_line_chunk_f32(const struct vnpu_line *l,
					  int64_t done, uint64_t *work,
					  float *x)
{
	int64_t n = l->len - done < VNPU_EW_CHUNK ? l->len - done
						  : VNPU_EW_CHUNK;

	if (vnpu_kernel_poll(work, (uint64_t)n))
		return 0;
	vnpu_ew_load_f32(l->in + done * l->in_step * vnpu_dtype_size(l->dtype),
			 l->in_step, l->dtype, n, x);
	return n;
}

#endif /* VNPU_KERNELS_ELEMENTWISE_H */
