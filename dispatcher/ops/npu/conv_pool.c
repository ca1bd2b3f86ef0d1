/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1): 2-D convolution on CONV2D and pooling on
 * POOL2D (docs/dispatcher.md). Convolution runs as torch_npu's: the input
 * in NC1HWC0 (one TransData unless it already lives there), the weight in
 * FRACTAL_Z cast once and cached on its storage until it is written, the
 * output produced in NC1HWC0 and returned plain (one TransData back).
 * Transposed and 1-D convolutions, float64 and invalid arguments are
 * unsupported here (vnpu_npu_unsupported): the fallback takes them.
 */
#include "npu_ops_common.h"

static const int64_t ZEROS[2] = { 0, 0 }, ONES[2] = { 1, 1 };

/* t (4-D) on the device in NC1HWC0: as it is, or converted once. */
static struct vnpu_at_tensor *to_nc1hwc0(const char *name,
					 struct vnpu_at_tensor *t)
{
	struct vnpu_at_tensor *r;

	if (vnpu_npu_format_of(t) == VNPU_FORMAT_NC1HWC0 &&
	    vnpu_npu_is_whole_base(t))
		return vnpu_at_retain(t);
	r = vnpu_npu_empty_format(4, t->sizes, t->dtype, VNPU_FORMAT_NC1HWC0);
	if (r && !vnpu_npu_copy(name, r, t)) {
		vnpu_at_release(r);
		return NULL;
	}
	return r;
}

struct vnpu_at_tensor *vnpu_npu_convolution(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *input,
					    struct vnpu_at_tensor *weight,
					    struct vnpu_at_tensor *bias,
					    struct vnpu_at_int_array stride,
					    struct vnpu_at_int_array padding,
					    struct vnpu_at_int_array dilation,
					    bool transposed,
					    struct vnpu_at_int_array output_padding,
					    int64_t groups)
{
	static const char name[] = "aten::convolution";
	struct vnpu_kp_conv2d p = { 0 };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *x = NULL, *w = NULL, *b = NULL, *o = NULL;
	struct vnpu_at_tensor *out = NULL;
	int64_t s[2], pd[2], d[2], HO, WO;
	enum vnpu_at_dtype dt = input->dtype;
	bool ok;

	if (transposed || input->ndim != 4 || weight->ndim != 4 ||
	    !npk_f32_float(dt) || weight->dtype != dt ||
	    (bias && (bias->dtype != dt || bias->ndim != 1 ||
		      bias->sizes[0] != weight->sizes[0])) ||
	    !vnpu_at_pair_arg(name, "stride", stride, ONES, s) ||
	    !vnpu_at_pair_arg(name, "padding", padding, ZEROS, pd) ||
	    !vnpu_at_pair_arg(name, "dilation", dilation, ONES, d) ||
	    groups < 1 || groups > UINT32_MAX ||
	    weight->sizes[0] % groups ||
	    weight->sizes[1] * groups != input->sizes[1] ||
	    !vnpu_at_is_npu(input) || !vnpu_at_is_npu(weight) ||
	    (bias && !vnpu_at_is_npu(bias))) {
		vnpu_at_error_clear();	/* the CPU kernel words it */
		return vnpu_npu_unsupported();
	}
	for (int i = 0; i < 2; i++)
		if (s[i] < 1 || s[i] > UINT32_MAX || pd[i] < 0 ||
		    pd[i] > UINT32_MAX || d[i] < 1 || d[i] > UINT32_MAX)
			return vnpu_npu_unsupported();
	HO = input->sizes[2] + 2 * pd[0] - d[0] * (weight->sizes[2] - 1) - 1;
	WO = input->sizes[3] + 2 * pd[1] - d[1] * (weight->sizes[3] - 1) - 1;
	if (HO < 0 || WO < 0 || !vnpu_at_numel(input) ||
	    !vnpu_at_numel(weight))
		return vnpu_npu_unsupported();
	HO = HO / s[0] + 1;
	WO = WO / s[1] + 1;
	p = (struct vnpu_kp_conv2d){
		.stride_h = (uint32_t)s[0], .stride_w = (uint32_t)s[1],
		.pad_h = (uint32_t)pd[0], .pad_w = (uint32_t)pd[1],
		.dil_h = (uint32_t)d[0], .dil_w = (uint32_t)d[1],
		.groups = (uint32_t)groups, .has_bias = bias != NULL,
	};
	x = to_nc1hwc0(name, input);
	/* weights: FRACTAL_Z cast once, cached on the storage */
	w = x ? vnpu_npu_as_format(weight, VNPU_FORMAT_FRACTAL_Z) : NULL;
	b = w && bias ? vnpu_npu_plain(bias) : NULL;
	o = w && (b || !bias) ?
		vnpu_npu_empty_format(4, (int64_t[]){ input->sizes[0],
					weight->sizes[0], HO, WO },
				      dt, VNPU_FORMAT_NC1HWC0) : NULL;
	ok = o && vnpu_npu_arg(&l, x, VNPU_ACCESS_READ, &p.input) &&
	     vnpu_npu_arg(&l, w, VNPU_ACCESS_READ, &p.weight) &&
	     (!b || vnpu_npu_arg(&l, b, VNPU_ACCESS_READ, &p.bias)) &&
	     vnpu_npu_arg(&l, o, VNPU_ACCESS_WRITE, &p.out) &&
	     vnpu_npu_launch(name, &l, "conv2d", &p, sizeof(p),
			     vnpu_at_numel(o) * weight->sizes[1] *
				     weight->sizes[2] * weight->sizes[3]);
	if (ok)	/* users see NCHW: one TransData back */
		out = vnpu_npu_plain(o);
	/* channels_last in (input or weight), channels_last out, as PyTorch's
	 * CPU and CUDA convolutions: a copy, TransData writes NCHW */
	out = npk_like_format(name, out, vnpu_at_channels_last_like(input) ?
				       input : weight);
	vnpu_at_release(x);
	vnpu_at_release(w);
	vnpu_at_release(b);
	vnpu_at_release(o);
	return out;
}

/* ---- pooling ---------------------------------------------------------------------- */

/* The [N, C, H, W] view of a 3-D [C, H, W] input (plain). */
static struct vnpu_at_tensor *as_4d(struct vnpu_at_tensor *t)
{
	int64_t sz[4], st[4];

	if (t->ndim == 4)
		return vnpu_at_retain(t);
	sz[0] = 1;
	st[0] = 0;
	memcpy(sz + 1, t->sizes, 3 * sizeof(int64_t));
	memcpy(st + 1, t->strides, 3 * sizeof(int64_t));
	return vnpu_at_view_of(t, 4, sz, st, t->offset);
}

/* The 3-D view of a 4-D result of a 3-D input. */
static struct vnpu_at_tensor *as_3d(struct vnpu_at_tensor *t)
{
	struct vnpu_at_tensor *v;

	if (!t)
		return NULL;
	v = vnpu_at_view_of(t, 3, t->sizes + 1, t->strides + 1, t->offset);
	vnpu_at_release(t);
	return v;
}

/* The geometry of a pooling the device takes; anything else, an invalid
 * argument included, is left to the CPU kernel, which words it. */
static bool pool_params(const char *op, const struct vnpu_at_tensor *self,
			struct vnpu_at_int_array kernel_size,
			struct vnpu_at_int_array stride,
			struct vnpu_at_int_array padding,
			struct vnpu_at_int_array dilation, bool ceil_mode,
			bool is_max, struct vnpu_kp_pool2d *p, int64_t osz[4])
{
	struct vnpu_at_pool2d g;

	if (!npk_f32_float(self->dtype) || !vnpu_at_is_npu(self))
		return false;
	if (!vnpu_at_pool2d_setup(op, self, kernel_size, stride, padding,
				  dilation, ceil_mode, is_max, &g)) {
		vnpu_at_error_clear();
		return false;
	}
	for (int i = 0; i < 2; i++)
		if (g.k[i] > UINT32_MAX || g.s[i] > UINT32_MAX ||
		    g.d[i] > UINT32_MAX)
			return false;
	osz[0] = g.N;
	osz[1] = g.C;
	osz[2] = g.HO;
	osz[3] = g.WO;
	*p = (struct vnpu_kp_pool2d){
		.kernel_h = (uint32_t)g.k[0], .kernel_w = (uint32_t)g.k[1],
		.stride_h = (uint32_t)g.s[0], .stride_w = (uint32_t)g.s[1],
		.pad_h = (uint32_t)g.p[0], .pad_w = (uint32_t)g.p[1],
		.dil_h = (uint32_t)g.d[0], .dil_w = (uint32_t)g.d[1],
		.ceil_mode = ceil_mode,
	};
	return true;
}

struct vnpu_ret_max_pool2d_with_indices vnpu_npu_max_pool2d_with_indices(vnpu_keyset_t ks,
				 struct vnpu_at_tensor *self,
				 struct vnpu_at_int_array kernel_size,
				 struct vnpu_at_int_array stride,
				 struct vnpu_at_int_array padding,
				 struct vnpu_at_int_array dilation,
				 bool ceil_mode)
{
	static const char name[] = "aten::max_pool2d_with_indices";
	struct vnpu_ret_max_pool2d_with_indices r = { 0 };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_kp_pool2d p;
	struct vnpu_at_tensor *src, *x;
	int64_t osz[4];
	bool ok;

	if (!pool_params(name, self, kernel_size, stride, padding, dilation,
			 ceil_mode, true, &p, osz))
		return (struct vnpu_ret_max_pool2d_with_indices){ .r0 = vnpu_npu_unsupported() };
	p.mode = VNPU_POOL_MAX;
	p.has_indices = 1;
	src = vnpu_npu_plain(self);
	x = src ? as_4d(src) : NULL;
	vnpu_at_release(src);
	r.r0 = x ? vnpu_npu_empty_like_format(x, osz, self->dtype) : NULL;
	r.r1 = r.r0 ? vnpu_npu_empty_like_format(x, osz, VNPU_AT_I64) : NULL;
	ok = r.r1 && (!vnpu_at_numel(r.r0) ||
		      (vnpu_npu_arg(&l, x, VNPU_ACCESS_READ, &p.input) &&
		       vnpu_npu_arg(&l, r.r0, VNPU_ACCESS_WRITE, &p.out) &&
		       vnpu_npu_arg(&l, r.r1, VNPU_ACCESS_WRITE, &p.indices) &&
		       vnpu_npu_launch(name, &l, "pool2d", &p, sizeof(p),
				       vnpu_at_numel(r.r0))));
	vnpu_at_release(x);
	if (!ok) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		return (struct vnpu_ret_max_pool2d_with_indices){ 0 };
	}
	if (self->ndim == 3) {
		r.r0 = as_3d(r.r0);
		r.r1 = as_3d(r.r1);
		if (!r.r0 || !r.r1) {
			vnpu_at_release(r.r0);
			vnpu_at_release(r.r1);
			return (struct vnpu_ret_max_pool2d_with_indices){ 0 };
		}
	}
	return r;
}

struct vnpu_at_tensor *vnpu_npu_avg_pool2d(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_int_array kernel_size,
					   struct vnpu_at_int_array stride,
					   struct vnpu_at_int_array padding,
					   bool ceil_mode,
					   bool count_include_pad,
					   struct vnpu_at_opt_int divisor_override)
{
	static const char name[] = "aten::avg_pool2d";
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_kp_pool2d p;
	struct vnpu_at_tensor *src, *x, *out;
	int64_t osz[4];
	bool ok;

	/* divisor_override has no device form: the CPU computes it */
	if (divisor_override.has ||
	    !pool_params(name, self, kernel_size, stride, padding,
			 VNPU_AT_NO_INTS, ceil_mode, false, &p, osz))
		return vnpu_npu_unsupported();
	p.mode = VNPU_POOL_AVG;
	p.count_include_pad = count_include_pad;
	src = vnpu_npu_plain(self);
	x = src ? as_4d(src) : NULL;
	vnpu_at_release(src);
	out = x ? vnpu_npu_empty_like_format(x, osz, self->dtype) : NULL;
	ok = out && (!vnpu_at_numel(out) ||
		     (vnpu_npu_arg(&l, x, VNPU_ACCESS_READ, &p.input) &&
		      vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) &&
		      vnpu_npu_launch(name, &l, "pool2d", &p, sizeof(p),
				      vnpu_at_numel(out))));
	vnpu_at_release(x);
	if (!ok) {
		vnpu_at_release(out);
		return NULL;
	}
	return self->ndim == 3 ? as_3d(out) : out;
}
