// SPDX-License-Identifier: MIT
/*
 * POOL2D (max or average) over plain [N,C,H,W] tensors with PyTorch's
 * window rules. Each block owns a range of output elements in row-major
 * [N,C,HO,WO] order. F32, F16 and BF16, accumulated in f32.
 *
 * Max: NaN wins (and a later NaN replaces an earlier one), the index is
 * the flat h*W+w within the plane; a window with no input element (possible
 * only with dilation) yields -inf and the index of its first clipped
 * position, as PyTorch's CPU kernel does.
 */
#include <math.h>
#include <stdint.h>

#include "elementwise.h"

/* PyTorch's pooling_output_shape; false when the output would be empty or
 * when in + 2*pad + stride + dil*(k-1) + 1 leaves int64, which bounds every
 * window coordinate run() forms. */
static bool pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride,
			  int64_t dil, bool ceil_mode, int64_t *out)
{
	int64_t span, bound, num, o;

	if (__builtin_mul_overflow(dil, k - 1, &span) ||
	    __builtin_add_overflow(in, 2 * pad + stride + 1, &bound) ||
	    __builtin_add_overflow(bound, span, &bound))
		return false;
	num = in + 2 * pad - span - 1 + (ceil_mode ? stride - 1 : 0);
	/* floor division (num may be negative) */
	o = num / stride - (num % stride != 0 && num < 0) + 1;
	/* a last window that starts in the right padding is dropped */
	if (ceil_mode && o > 0 && (o - 1) * stride >= in + pad)
		o--;
	if (o < 1)
		return false;
	*out = o;
	return true;
}

static bool flag_ok(uint32_t f)
{
	return f <= 1;
}

static uint32_t pool2d_validate(const void *params,
				const struct vnpu_kbuf *bufs, uint32_t nbufs)
{
	const struct vnpu_kp_pool2d *p = params;
	const struct vnpu_tensor *in = &p->input, *out = &p->out;
	int64_t ho, wo;
	uint32_t st;

	if (p->mode > VNPU_POOL_AVG || !flag_ok(p->ceil_mode) ||
	    !flag_ok(p->count_include_pad) || !flag_ok(p->has_indices))
		return VNPU_STATUS_INVALID_ARGS;
	if (p->kernel_h < 1 || p->kernel_w < 1 || p->stride_h < 1 ||
	    p->stride_w < 1 || p->dil_h < 1 || p->dil_w < 1 ||
	    p->pad_h > p->kernel_h / 2 || p->pad_w > p->kernel_w / 2)
		return VNPU_STATUS_INVALID_ARGS;
	if (p->mode == VNPU_POOL_AVG &&
	    (p->dil_h != 1 || p->dil_w != 1 || p->has_indices))
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(in, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(out, bufs, nbufs);
	if (st == VNPU_STATUS_OK && p->has_indices)
		st = vnpu_ew_check_out(&p->indices, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if (in->ndim != 4 || out->ndim != 4 || out->dtype != in->dtype)
		return VNPU_STATUS_INVALID_ARGS;
	if (!vnpu_dtype_is_float(in->dtype))
		return VNPU_STATUS_UNSUPPORTED;
	if (!pool_out_size(in->sizes[2], p->kernel_h, p->pad_h, p->stride_h,
			   p->dil_h, p->ceil_mode, &ho) ||
	    !pool_out_size(in->sizes[3], p->kernel_w, p->pad_w, p->stride_w,
			   p->dil_w, p->ceil_mode, &wo))
		return VNPU_STATUS_INVALID_ARGS;
	if (out->sizes[0] != in->sizes[0] || out->sizes[1] != in->sizes[1] ||
	    out->sizes[2] != ho || out->sizes[3] != wo)
		return VNPU_STATUS_INVALID_ARGS;
	if (p->has_indices && (p->indices.dtype != VNPU_DTYPE_I64 ||
			       !vnpu_same_shape(&p->indices, out)))
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

struct pool_geom {
	int64_t h, w;	      /* input plane */
	int64_t in_sh, in_sw; /* input strides of h and w */
	int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

/* The window functions poll the cancellation hook through *work (a window
 * may cover a whole, huge plane); *stop tells that it stopped them. */
static float max_window(const struct pool_geom *g, const char *plane,
			uint32_t dtype, uint32_t itemsize, int64_t oh,
			int64_t ow, int64_t *index, uint64_t *work, bool *stop)
{
	int64_t h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw;
	int64_t h1 = h0 + (g->kh - 1) * g->dh + 1;
	int64_t w1 = w0 + (g->kw - 1) * g->dw + 1;
	float best = -INFINITY;

	if (h1 > g->h)
		h1 = g->h;
	if (w1 > g->w)
		w1 = g->w;
	/* first window position inside the input (top/left padding skipped) */
	if (h0 < 0)
		h0 += (-h0 + g->dh - 1) / g->dh * g->dh;
	if (w0 < 0)
		w0 += (-w0 + g->dw - 1) / g->dw * g->dw;
	/* wrapping product: only an empty window can exceed the plane */
	*index = (int64_t)((uint64_t)h0 * (uint64_t)g->w + (uint64_t)w0);
	for (int64_t ih = h0; ih < h1; ih += g->dh) {
		const char *row = plane + ih * g->in_sh * itemsize;

		for (int64_t iw = w0; iw < w1; iw += g->dw) {
			float v = vnpu_ld_f32(row + iw * g->in_sw * itemsize,
					      dtype);

			if (vnpu_kernel_poll(work, 1)) {
				*stop = true;
				return best;
			}
			if (v > best || v != v) {
				best = v;
				*index = ih * g->w + iw;
			}
		}
	}
	return best;
}

static float avg_window(const struct pool_geom *g, const char *plane,
			uint32_t dtype, uint32_t itemsize, int64_t oh,
			int64_t ow, bool count_include_pad, uint64_t *work,
			bool *stop)
{
	int64_t h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw;
	int64_t h1 = h0 + g->kh, w1 = w0 + g->kw;
	double padded;
	float sum = 0;

	/* the window clipped to the padded input */
	if (h1 > g->h + g->ph)
		h1 = g->h + g->ph;
	if (w1 > g->w + g->pw)
		w1 = g->w + g->pw;
	padded = (double)(h1 - h0) * (double)(w1 - w0);
	/* ... and to the input */
	if (h0 < 0)
		h0 = 0;
	if (w0 < 0)
		w0 = 0;
	if (h1 > g->h)
		h1 = g->h;
	if (w1 > g->w)
		w1 = g->w;
	if (h0 >= h1 || w0 >= w1)
		return 0;
	for (int64_t ih = h0; ih < h1; ih++) {
		const char *row = plane + ih * g->in_sh * itemsize;

		for (int64_t iw = w0; iw < w1; iw++) {
			if (vnpu_kernel_poll(work, 1)) {
				*stop = true;
				return 0;
			}
			sum += vnpu_ld_f32(row + iw * g->in_sw * itemsize,
					   dtype);
		}
	}
	return sum / (float)(count_include_pad
				     ? padded
				     : (double)(h1 - h0) * (double)(w1 - w0));
}

static void pool2d_run(const void *params, const struct vnpu_kbuf *bufs,
		       uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_pool2d *p = params;
	const struct vnpu_tensor *in = &p->input, *out = &p->out;
	const struct vnpu_tensor *idx = &p->indices;
	uint32_t dtype = in->dtype, itemsize = vnpu_dtype_size(dtype);
	const char *in_base = vnpu_tensor_data(in, bufs);
	char *out_base = vnpu_tensor_data(out, bufs);
	char *idx_base = p->has_indices ? vnpu_tensor_data(idx, bufs) : NULL;
	struct pool_geom g = {
		.h = in->sizes[2],
		.w = in->sizes[3],
		.in_sh = in->strides[2],
		.in_sw = in->strides[3],
		.kh = p->kernel_h,
		.kw = p->kernel_w,
		.sh = p->stride_h,
		.sw = p->stride_w,
		.ph = p->pad_h,
		.pw = p->pad_w,
		.dh = p->dil_h,
		.dw = p->dil_w,
	};
	int64_t n_, c_, oh, ow;
	uint64_t numel = 1, begin, end, rem, work = 0;
	bool stop = false;

	for (uint32_t d = 0; d < 4; d++)
		numel *= (uint64_t)out->sizes[d];
	vnpu_block_range(numel, block, nblocks, &begin, &end);
	if (begin >= end)
		return;
	rem = begin;
	ow = (int64_t)(rem % (uint64_t)out->sizes[3]);
	rem /= (uint64_t)out->sizes[3];
	oh = (int64_t)(rem % (uint64_t)out->sizes[2]);
	rem /= (uint64_t)out->sizes[2];
	c_ = (int64_t)(rem % (uint64_t)out->sizes[1]);
	n_ = (int64_t)(rem / (uint64_t)out->sizes[1]);
	for (uint64_t i = begin; i < end; i++) {
		const char *plane =
			in_base +
			(n_ * in->strides[0] + c_ * in->strides[1]) * itemsize;
		int64_t o_off = n_ * out->strides[0] + c_ * out->strides[1] +
				oh * out->strides[2] + ow * out->strides[3];
		float v;

		/* empty windows cost nothing inside: poll per output too */
		if (vnpu_kernel_poll(&work, 1))
			return;
		if (p->mode == VNPU_POOL_MAX) {
			int64_t index;

			v = max_window(&g, plane, dtype, itemsize, oh, ow,
				       &index, &work, &stop);
			if (stop)
				return;
			if (idx_base) {
				int64_t i_off = n_ * idx->strides[0] +
						c_ * idx->strides[1] +
						oh * idx->strides[2] +
						ow * idx->strides[3];

				memcpy(idx_base + i_off * 8, &index, 8);
			}
		} else {
			v = avg_window(&g, plane, dtype, itemsize, oh, ow,
				       p->count_include_pad, &work, &stop);
			if (stop)
				return;
		}
		vnpu_st_f32(out_base + o_off * itemsize, dtype, v);
		if (++ow == out->sizes[3]) {
			ow = 0;
			if (++oh == out->sizes[2]) {
				oh = 0;
				if (++c_ == out->sizes[1]) {
					c_ = 0;
					n_++;
				}
			}
		}
	}
}

const struct vnpu_kernel_def vnpu_kernel_pool2d = {
	.id = VNPU_KERNEL_POOL2D,
	.name = "pool2d",
	.params_size = sizeof(struct vnpu_kp_pool2d),
	.validate = pool2d_validate,
	.run = pool2d_run,
};
