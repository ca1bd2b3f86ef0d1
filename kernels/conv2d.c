// SPDX-License-Identifier: MIT
/*
 * CONV2D as an implicit GEMM per group: rows are the output pixels of every
 * image (image-major, so that a block's rows are one run and the weights
 * are packed once for all images), columns output channels of the group,
 * the reduction runs over
 * (kh, kw, input channel) with the channel fastest, so that packing reads
 * whole C0 runs of NC1HWC0 input and FRACTAL_Z weight. The im2col matrix is
 * never materialised: the packer builds each MR-row panel from the input
 * (zeros for padding taps) straight into the GEMM core's bounded buffers.
 */
#include <string.h>

#include "activation.h"
#include "dtype.h"
#include "gemm_core.h"
#include "gemm_operand.h"
#include "kernel.h"
#include "layout.h"
#include "tensor.h"

struct conv_ctx {
	const struct vnpu_kp_conv2d *p;
	const char *in, *wt, *bias;
	char *out;
	uint32_t dtype, itemsize;
	struct vnpu_nchw_geom gi, gw, go;
	int64_t ho, wo, kh, kw, cg, cog, bias_stride;
	int64_t g; /* group of the job being run */
};

static uint32_t conv_output_size(int64_t in, uint32_t pad, uint32_t dil,
				 int64_t k, uint32_t stride, int64_t *out)
{
	int64_t span, num;

	if (__builtin_mul_overflow((int64_t)dil, k - 1, &span) ||
	    __builtin_add_overflow(in, 2 * (int64_t)pad, &num) ||
	    __builtin_sub_overflow(num, span + 1, &num) || num < 0)
		return VNPU_STATUS_INVALID_ARGS;
	*out = num / stride + 1;
	return VNPU_STATUS_OK;
}

static uint32_t check_format(const struct vnpu_tensor *t,
			     const struct vnpu_kbuf *bufs, uint32_t nbufs,
			     uint32_t access, uint32_t format, uint32_t dtype)
{
	uint32_t st = vnpu_tensor_check_matrix(t, bufs, nbufs, access, dtype);

	if (st != VNPU_STATUS_OK)
		return st;
	if (t->format != format)
		return VNPU_STATUS_UNSUPPORTED;
	if (t->ndim != (format == VNPU_FORMAT_ND ? 1u : 4u))
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

static uint32_t conv_validate(const void *params, const struct vnpu_kbuf *bufs,
			      uint32_t nbufs)
{
	const struct vnpu_kp_conv2d *p = params;
	const int64_t *in = p->input.sizes, *w = p->weight.sizes;
	uint32_t dtype = p->input.dtype;
	int64_t ho, wo;
	uint32_t st;

	if (p->stride_h == 0 || p->stride_w == 0 || p->dil_h == 0 ||
	    p->dil_w == 0 || p->groups == 0 || p->has_bias > 1 ||
	    p->reserved != 0 || !vnpu_activation_valid(p->activation))
		return VNPU_STATUS_INVALID_ARGS;
	st = check_format(&p->input, bufs, nbufs, VNPU_ACCESS_READ,
			  VNPU_FORMAT_NC1HWC0, dtype);
	if (st == VNPU_STATUS_OK)
		st = check_format(&p->weight, bufs, nbufs, VNPU_ACCESS_READ,
				  VNPU_FORMAT_FRACTAL_Z, dtype);
	if (st == VNPU_STATUS_OK)
		st = check_format(&p->out, bufs, nbufs, VNPU_ACCESS_WRITE,
				  VNPU_FORMAT_NC1HWC0, dtype);
	if (st == VNPU_STATUS_OK && p->has_bias)
		st = check_format(&p->bias, bufs, nbufs, VNPU_ACCESS_READ,
				  VNPU_FORMAT_ND, dtype);
	if (st != VNPU_STATUS_OK)
		return st;

	if (in[1] % p->groups != 0 || w[0] % p->groups != 0 ||
	    w[1] != in[1] / p->groups || w[2] < 1 || w[3] < 1)
		return VNPU_STATUS_INVALID_ARGS;
	if (p->has_bias && p->bias.sizes[0] != w[0])
		return VNPU_STATUS_INVALID_ARGS;
	if (conv_output_size(in[2], p->pad_h, p->dil_h, w[2], p->stride_h,
			     &ho) != VNPU_STATUS_OK ||
	    conv_output_size(in[3], p->pad_w, p->dil_w, w[3], p->stride_w,
			     &wo) != VNPU_STATUS_OK)
		return VNPU_STATUS_INVALID_ARGS;
	if (p->out.sizes[0] != in[0] || p->out.sizes[1] != w[0] ||
	    p->out.sizes[2] != ho || p->out.sizes[3] != wo)
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

/* NC1HWC0 / FRACTAL_Z offsets with a literal C0 (16 for every dtype conv2d
 * takes), so the layout's divisions become shifts. */
static inline int64_t in_offset(const struct conv_ctx *x, int64_t n, int64_t c,
				int64_t h, int64_t w)
{
	struct vnpu_nchw_geom g = x->gi;

	g.c0 = VNPU_C0(2);
	return (int64_t)vnpu_nc1hwc0_index(&g, (uint64_t)n, (uint64_t)c,
					   (uint64_t)h, (uint64_t)w);
}

/* Output element of channel c at global output row `row` (image row * Ho
 * + oh), column w. */
static inline int64_t out_offset(const struct conv_ctx *x, int64_t c,
				 int64_t row, int64_t w)
{
	struct vnpu_nchw_geom g = x->go;

	g.c0 = VNPU_C0(2);
	return (int64_t)vnpu_nc1hwc0_index(&g, (uint64_t)(row / x->ho),
					   (uint64_t)c, (uint64_t)(row % x->ho),
					   (uint64_t)w);
}

static inline int64_t wt_offset(const struct conv_ctx *x, int64_t co,
				int64_t ci, int64_t h, int64_t w)
{
	struct vnpu_nchw_geom g = x->gw;

	g.c0 = VNPU_C0(2);
	return (int64_t)vnpu_fractal_z_index(&g, (uint64_t)co, (uint64_t)ci,
					     (uint64_t)h, (uint64_t)w);
}

/* Reduction index p -> tap (kh, kw) and input channel within the group. */
struct conv_k {
	int64_t kh, kw, ci;
};

static inline struct conv_k conv_k_of(const struct conv_ctx *x, int64_t p)
{
	int64_t tap = p / x->cg;

	return (struct conv_k){tap / x->kw, tap % x->kw, p % x->cg};
}

static inline void conv_k_next_tap(const struct conv_ctx *x, struct conv_k *k)
{
	k->ci = 0;
	if (++k->kw == x->kw) {
		k->kw = 0;
		k->kh++;
	}
}

/*
 * run channels contiguous in storage (one C0 block) at src into a panel
 * column d, one reduction step per `panel` slots; with `pairs` (bf16 with
 * an even channel count, so pairs never straddle a tap) two steps per
 * slot, as the bf16 engine's pair words: two adjacent bf16 already are
 * one.
 */
static void load_channels(const struct conv_ctx *x, const char *src,
			  int64_t run, float *d, uint32_t panel, bool pairs)
{
	if (pairs) {
		for (int64_t q = 0; q < run / 2; q++)
			memcpy(&d[q * panel], src + q * 4, 4);
		return;
	}
	if (x->dtype != VNPU_DTYPE_F32) {
		vnpu_operand_load_run(src, x->dtype, 1, run, d, panel);
		return;
	}
	for (int64_t q = 0; q < run; q++)
		memcpy(&d[q * panel], src + q * 4, 4);
}

/* A: im2col rows (output pixels) by reduction index, one panel. */
/* len input channels from c on at pixel (ih, iw) of image n into d; runs
 * stop at C0 blocks, which lie H * W pixels apart. */
static void copy_channels(const struct conv_ctx *x, int64_t n, int64_t c,
			  int64_t ih, int64_t iw, int64_t len, float *d,
			  uint32_t panel, bool pairs)
{
	for (int64_t t = 0, run; t < len; t += run) {
		const char *src =
			x->in + in_offset(x, n, c + t, ih, iw) * x->itemsize;

		run = 16 - ((c + t) & 15);
		if (run > len - t)
			run = len - t;
		load_channels(x, src, run, d + (t >> pairs) * panel, panel,
			      pairs);
	}
}

static void pack_input_panel(const struct vnpu_gemm_job *job, int64_t r0,
			     int64_t rows, int64_t p0, int64_t kc, float *dst,
			     uint32_t panel, bool pairs)
{
	const struct conv_ctx *x = job->ctx;
	const struct vnpu_kp_conv2d *p = x->p;
	int64_t h = (int64_t)x->gi.h, w = (int64_t)x->gi.w;

	for (int64_t r = 0; r < rows; r++) {
		int64_t row = (r0 + r) / x->wo; /* image * Ho + oh */
		int64_t n = row / x->ho;
		int64_t ih0 = row % x->ho * p->stride_h - p->pad_h;
		int64_t iw0 = (r0 + r) % x->wo * p->stride_w - p->pad_w;
		struct conv_k k = conv_k_of(x, p0);

		for (int64_t q = 0; q < kc;) {
			int64_t len = x->cg - k.ci;
			int64_t ih = ih0 + k.kh * p->dil_h;
			int64_t iw = iw0 + k.kw * p->dil_w;
			float *d = dst + (q >> pairs) * panel + r;

			if (len > kc - q)
				len = kc - q;
			if (ih < 0 || ih >= h || iw < 0 || iw >= w)
				for (int64_t t = 0; t < len >> pairs; t++)
					d[t * panel] = 0.0f;
			else
				copy_channels(x, n, x->g * x->cg + k.ci, ih, iw,
					      len, d, panel, pairs);
			q += len;
			conv_k_next_tap(x, &k);
		}
	}
}

/* B: output channels of the group by reduction index, one panel. */
static void pack_weight_panel(const struct vnpu_gemm_job *job, int64_t r0,
			      int64_t rows, int64_t p0, int64_t kc, float *dst,
			      uint32_t panel, bool pairs)
{
	const struct conv_ctx *x = job->ctx;

	for (int64_t r = 0; r < rows; r++) {
		int64_t co = x->g * x->cog + r0 + r;
		struct conv_k k = conv_k_of(x, p0);

		for (int64_t q = 0; q < kc;) {
			int64_t len = x->cg - k.ci;

			if (len > kc - q)
				len = kc - q;
			for (int64_t t = 0, run; t < len; t += run) {
				int64_t ci = k.ci + t;

				run = 16 - (ci & 15);
				if (run > len - t)
					run = len - t;
				load_channels(x,
					      x->wt + wt_offset(x, co, ci, k.kh,
								k.kw) *
							      x->itemsize,
					      run,
					      dst + ((q + t) >> pairs) * panel +
						      r,
					      panel, pairs);
			}
			q += len;
			conv_k_next_tap(x, &k);
		}
	}
}

typedef void (*conv_panel_fn)(const struct vnpu_gemm_job *job, int64_t r0,
			      int64_t rows, int64_t p0, int64_t kc, float *dst,
			      uint32_t panel, bool pairs);

/* Rows [r0, r0 + rows) as consecutive panels, each `panel` rows of one
 * reduction step (pairs: two) per slot. */
static void pack_each_panel(conv_panel_fn fn, const struct vnpu_gemm_job *job,
			    int64_t r0, int64_t rows, int64_t p0, int64_t kc,
			    float *dst, uint32_t panel, bool pairs)
{
	int64_t slots = pairs ? (kc + 1) / 2 : kc;

	for (int64_t r = 0; r < rows; r += panel)
		fn(job, r0 + r, rows - r < panel ? rows - r : panel, p0, kc,
		   dst + r * slots, panel, pairs);
}

static void pack_input(const struct vnpu_gemm_job *job, int64_t r0,
		       int64_t rows, int64_t p0, int64_t kc, float *dst,
		       uint32_t panel)
{
	pack_each_panel(pack_input_panel, job, r0, rows, p0, kc, dst, panel,
			false);
}

static void pack_weight(const struct vnpu_gemm_job *job, int64_t r0,
			int64_t rows, int64_t p0, int64_t kc, float *dst,
			uint32_t panel)
{
	pack_each_panel(pack_weight_panel, job, r0, rows, p0, kc, dst, panel,
			false);
}

/* The same straight into bf16-pair panels (bf16, even channel count). */
static void pack_input_pairs(const struct vnpu_gemm_job *job, int64_t r0,
			     int64_t rows, int64_t p0, int64_t kc, float *dst,
			     uint32_t panel)
{
	pack_each_panel(pack_input_panel, job, r0, rows, p0, kc, dst, panel,
			true);
}

static void pack_weight_pairs(const struct vnpu_gemm_job *job, int64_t r0,
			      int64_t rows, int64_t p0, int64_t kc, float *dst,
			      uint32_t panel)
{
	pack_each_panel(pack_weight_panel, job, r0, rows, p0, kc, dst, panel,
			true);
}

/* Workspace rows are output pixels, columns the group's channels
 * [j0, j0 + cols); add bias, activate, convert and scatter into NC1HWC0,
 * whose channels are contiguous within a C0 block of a pixel. */
static void store_pixels(const struct vnpu_gemm_job *job, int64_t i0,
			 int64_t rows, int64_t j0, int64_t cols, float *acc,
			 int64_t ld)
{
	enum { SEG = 256 };
	const struct conv_ctx *x = job->ctx;
	uint32_t act = x->p->activation;
	float bias[SEG], line[16];

	for (int64_t s0 = 0; s0 < cols; s0 += SEG) {
		int64_t cnt = cols - s0 < SEG ? cols - s0 : SEG;
		int64_t c = x->g * x->cog + j0 + s0;

		for (int64_t t = 0; t < cnt; t++)
			bias[t] =
				x->p->has_bias
					? vnpu_operand_load(
						  x->bias +
							  (c +
							   t) * x->bias_stride *
								  x->itemsize,
						  x->dtype)
					: 0.0f;
		for (int64_t i = 0; i < rows; i++) {
			int64_t row = (i0 + i) / x->wo, ow = (i0 + i) % x->wo;
			const float *a = acc + i * ld + s0;

			for (int64_t j = 0, run; j < cnt; j += run) {
				run = 16 - ((c + j) & 15);
				if (run > cnt - j)
					run = cnt - j;
				for (int64_t t = 0; t < run; t++)
					line[t] = a[j + t] + bias[j + t];
				if (act != VNPU_ACT_NONE)
					for (int64_t t = 0; t < run; t++)
						line[t] = vnpu_activate(
							act, line[t]);
				vnpu_operand_store_run(
					x->out + out_offset(x, c + j, row, ow) *
							 x->itemsize,
					x->dtype, 1, run, line);
			}
		}
	}
}

/* Output columns [lo, hi), within [s0, s1), whose tap at input column
 * ow * stride + off lands inside the input row of width w. */
static void tap_columns(int64_t off, int64_t stride, int64_t w, int64_t s0,
			int64_t s1, int64_t *lo, int64_t *hi)
{
	*lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
	*hi = w - 1 - off < 0 ? 0 : (w - 1 - off) / stride + 1;
	if (*lo < s0)
		*lo = s0;
	if (*hi > s1)
		*hi = s1;
	if (*lo > *hi)
		*lo = *hi;
}

/* acc[t] += wv * x[t * step] for t < n, x in the launch dtype. */
static void axpy_strided(float *acc, float wv, const char *x, int64_t step,
			 int64_t n, uint32_t dtype)
{
	float line[64];

	if (dtype == VNPU_DTYPE_F32) {
		for (int64_t t = 0; t < n; t++) {
			float v;

			memcpy(&v, x + t * step * 4, 4);
			acc[t] += wv * v;
		}
		return;
	}
	for (int64_t t = 0; t < n; t += 64) {
		int64_t cnt = n - t < 64 ? n - t : 64;

		vnpu_operand_load_run(x + t * step * 2, dtype, step, cnt, line,
				      1);
		for (int64_t q = 0; q < cnt; q++)
			acc[t + q] += wv * line[q];
	}
}

/* One tap (input channel c = group channel ci, kernel row kh reading input
 * row ih, kernel column kw) of output channel co into acc, which holds
 * output columns [s0, s0 + cnt). */
static void direct_tap(const struct conv_ctx *x, int64_t n, int64_t co,
		       int64_t ci, int64_t kh, int64_t kw, int64_t ih,
		       int64_t s0, int64_t cnt, float *acc)
{
	const struct vnpu_kp_conv2d *p = x->p;
	int64_t off = kw * p->dil_w - p->pad_w;
	int64_t c = x->g * x->cg + ci;
	int64_t lo, hi;
	const char *src;
	float wv;

	tap_columns(off, p->stride_w, (int64_t)x->gi.w, s0, s0 + cnt, &lo, &hi);
	if (lo >= hi)
		return;
	wv = vnpu_operand_load(
		x->wt + wt_offset(x, co, ci, kh, kw) * x->itemsize, x->dtype);
	src = x->in +
	      in_offset(x, n, c, ih, lo * p->stride_w + off) * x->itemsize;
	/* consecutive output columns are stride_w input pixels of C0 apart */
	axpy_strided(acc + lo - s0, wv, src, (int64_t)p->stride_w * VNPU_C0(2),
		     hi - lo, x->dtype);
}

/* Output channel co, global row `row`, columns [s0, s0 + cnt): the sum
 * over every tap of the group's input channels. */
static void direct_segment(const struct conv_ctx *x, int64_t co, int64_t row,
			   int64_t s0, int64_t cnt, float *acc)
{
	const struct vnpu_kp_conv2d *p = x->p;
	int64_t n = row / x->ho, oh = row % x->ho;

	for (int64_t t = 0; t < cnt; t++)
		acc[t] = 0.0f;
	for (int64_t ci = 0; ci < x->cg; ci++)
		for (int64_t kh = 0; kh < x->kh; kh++) {
			int64_t ih =
				oh * p->stride_h - p->pad_h + kh * p->dil_h;

			if (ih < 0 || ih >= (int64_t)x->gi.h)
				continue;
			for (int64_t kw = 0; kw < x->kw; kw++)
				direct_tap(x, n, co, ci, kh, kw, ih, s0, cnt,
					   acc);
		}
}

/*
 * Direct convolution for groups with one input channel (depthwise) or very
 * few output channels, where the GEMM's N dimension would be almost all
 * padding: output rows accumulate tap by tap in segments of SEG columns.
 */
static void conv_direct(const struct conv_ctx *x, int64_t row0, int64_t row1,
			int64_t j0, int64_t j1)
{
	enum { SEG = 256 };
	const struct vnpu_kp_conv2d *p = x->p;
	uint64_t work = 0, per_out = (uint64_t)(x->kh * x->kw * x->cg) + 1;
	float acc[SEG];

	for (int64_t j = j0; j < j1; j++) {
		int64_t co = x->g * x->cog + j;
		float bias = 0.0f;

		if (p->has_bias)
			bias = vnpu_operand_load(x->bias + co * x->bias_stride *
								   x->itemsize,
						 x->dtype);
		for (int64_t row = row0; row < row1; row++)
			for (int64_t s0 = 0; s0 < x->wo; s0 += SEG) {
				int64_t cnt =
					x->wo - s0 < SEG ? x->wo - s0 : SEG;

				if (vnpu_kernel_poll(&work,
						     (uint64_t)cnt * per_out))
					return;
				direct_segment(x, co, row, s0, cnt, acc);
				for (int64_t t = 0; t < cnt; t++)
					acc[t] = vnpu_activate(p->activation,
							       acc[t] + bias);
				vnpu_operand_store_run(
					x->out + out_offset(x, co, row, s0) *
							 x->itemsize,
					x->dtype, VNPU_C0(2), cnt, acc);
			}
	}
}

/* Channels past Cout in the last C1 block are zero (canonical storage);
 * the tile holding the last output channel writes them for its pixels. */
static void zero_channel_padding(const struct conv_ctx *x, int64_t pix0,
				 int64_t pix1)
{
	static const float zeros[16];
	int64_t cout = (int64_t)x->go.c;
	int64_t pad = (int64_t)(x->go.c1 * 16) - cout;

	if (pad == 0)
		return;
	for (int64_t pix = pix0; pix < pix1; pix++)
		vnpu_operand_store_run(
			x->out + out_offset(x, cout, pix / x->wo, pix % x->wo) *
					 x->itemsize,
			x->dtype, 1, pad, zeros);
}

static void conv_run(const void *params, const struct vnpu_kbuf *bufs,
		     uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_conv2d *p = params;
	struct conv_ctx x;
	struct vnpu_gemm_job job;
	int64_t groups = p->groups, rows, gr, gc, t, tiles;
	uint64_t begin, end;
	bool direct;

	memset(&x, 0, sizeof(x));
	x.p = p;
	x.dtype = p->input.dtype;
	x.itemsize = vnpu_dtype_size(x.dtype);
	x.gi = vnpu_nchw_geom(&p->input);
	x.gw = vnpu_nchw_geom(&p->weight);
	x.go = vnpu_nchw_geom(&p->out);
	x.ho = (int64_t)x.go.h;
	x.wo = (int64_t)x.go.w;
	x.kh = (int64_t)x.gw.h;
	x.kw = (int64_t)x.gw.w;
	x.cg = (int64_t)x.gw.c;
	x.cog = (int64_t)x.go.c / groups;
	/* With an empty output the other sizes are not bounded by any
	 * buffer; once it is not empty, N * groups <= N * Cout is. */
	if (x.go.n == 0 || x.cog == 0 || x.ho == 0 || x.wo == 0)
		return;
	rows = (int64_t)x.go.n * x.ho; /* output rows of all images */

	/* Tiles per group: output rows first, then channels. */
	t = (int64_t)vnpu_ceil_div(nblocks, (uint64_t)groups);
	gr = rows < t ? rows : t;
	t = (int64_t)vnpu_ceil_div((uint64_t)t, (uint64_t)gr);
	gc = (int64_t)vnpu_ceil_div((uint64_t)x.cog, 16);
	gc = gc < t ? gc : t;
	tiles = gr * gc;
	vnpu_block_range((uint64_t)groups * (uint64_t)tiles, block, nblocks,
			 &begin, &end);
	if (begin >= end)
		return;

	x.in = vnpu_tensor_data(&p->input, bufs);
	x.wt = vnpu_tensor_data(&p->weight, bufs);
	x.out = vnpu_tensor_data(&p->out, bufs);
	if (p->has_bias) {
		x.bias = vnpu_tensor_data(&p->bias, bufs);
		x.bias_stride = p->bias.strides[0];
	}

	/* The GEMM pays off when its N (channels per group) fills a good
	 * part of the microkernel's width and there is more than one input
	 * channel to reduce over. */
	direct = x.cg == 1 || x.cog <= 4;
	memset(&job, 0, sizeof(job));
	/* without input channels the kernel's extent is unbounded (the
	 * weight holds no element), and irrelevant */
	job.k = x.cg == 0 ? 0 : x.kh * x.kw * x.cg;
	job.pack_a = pack_input;
	job.pack_b = pack_weight;
	job.epilogue = store_pixels;
	job.bf16_operands = x.dtype == VNPU_DTYPE_BF16;
	/* pairs of channels are pairs of reduction steps when no pair
	 * straddles a tap (the core's KC and so every block start is even) */
	if (job.bf16_operands && x.cg % 2 == 0) {
		job.pack_a_native = pack_input_pairs;
		job.pack_b_native = pack_weight_pairs;
	}
	job.ctx = &x;
	for (uint64_t u = begin; u < end; u++) {
		int64_t tile = (int64_t)(u % (uint64_t)tiles);
		int64_t tr = tile / gc, tc = tile % gc;

		if (vnpu_kernel_should_stop())
			return;
		x.g = (int64_t)(u / (uint64_t)tiles);
		job.m0 = vnpu_gemm_chunk(rows, gr, tr) * x.wo;
		job.m1 = vnpu_gemm_chunk(rows, gr, tr + 1) * x.wo;
		job.n0 = vnpu_gemm_chunk(x.cog, gc, tc);
		job.n1 = vnpu_gemm_chunk(x.cog, gc, tc + 1);
		if (direct)
			conv_direct(&x, job.m0 / x.wo, job.m1 / x.wo, job.n0,
				    job.n1);
		else
			vnpu_gemm_run_job(&job);
		/* a cancelled tile is not finished: no padding after it */
		if (vnpu_kernel_should_stop())
			return;
		if (x.g == groups - 1 && job.n1 == x.cog)
			zero_channel_padding(&x, job.m0, job.m1);
	}
}

const struct vnpu_kernel_def vnpu_kernel_conv2d = {
	.id = VNPU_KERNEL_CONV2D,
	.name = "conv2d",
	.params_size = sizeof(struct vnpu_kp_conv2d),
	.validate = conv_validate,
	.run = conv_run,
};
