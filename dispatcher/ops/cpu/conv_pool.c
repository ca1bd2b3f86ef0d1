/* SPDX-License-Identifier: MIT */
/*
 * CPU reference kernels: convolution and pooling (docs/dispatcher.md).
 * Direct loops over any strides; products accumulate in double. 1-D
 * convolution runs as 2-D with a height of 1.
 */
#include <stdlib.h>

#include "../kernel_common.h"

/* Element (n, c, h, w) of a 4-D strided tensor, or of a 3-D [n, c, w]
 * tensor seen as height 1. */
static const char *at4(const struct vnpu_at_tensor *t, int64_t n, int64_t c,
		       int64_t h, int64_t w)
{
	int64_t isz = (int64_t)vnpu_at_dtype_size(t->dtype);
	int64_t off;

	if (t->ndim == 3)
		off = n * t->strides[0] + c * t->strides[1] +
		      w * t->strides[2];
	else
		off = n * t->strides[0] + c * t->strides[1] +
		      h * t->strides[2] + w * t->strides[3];
	return (const char *)vnpu_at_data(t) + off * isz;
}

static int64_t dim_h(const struct vnpu_at_tensor *t)
{
	return t->ndim == 4 ? t->sizes[2] : 1;
}

static int64_t dim_w(const struct vnpu_at_tensor *t)
{
	return t->sizes[t->ndim - 1];
}

/* Spatial parameter i (0 = h, 1 = w) for 1 or 2 spatial dims. */
static bool conv_param(const char *op, const char *what,
		       struct vnpu_at_int_array a, uint32_t nsp, int64_t dflt,
		       int64_t out[2])
{
	if (a.n != 1 && a.n != (int64_t)nsp) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: expected %s to be a single integer value or a list of %u values to match the convolution dimensions, but got %s=[%lld%s]",
				  op, what, nsp, what,
				  (long long)(a.n ? a.v[0] : 0),
				  a.n > 1 ? ", ..." : "");
		return false;
	}
	if (nsp == 1) {
		out[0] = dflt;
		out[1] = a.v[0];
	} else {
		out[0] = a.v[0];
		out[1] = a.v[a.n - 1];
	}
	return true;
}

struct vnpu_at_tensor *vnpu_cpu_convolution(vnpu_keyset_t ks,
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
	static const char op[] = "aten::convolution";
	int64_t s[2], p[2], d[2], op_[2] = { 0, 0 };
	int64_t N, C, H, W, KH, KW, CO, HO, WO, cin_g, cout_g;
	uint32_t nsp = input->ndim - 2;
	struct vnpu_at_tensor *out;
	double *acc;
	uint64_t *iacc;
	int64_t out_sizes[4];
	enum vnpu_at_dtype dt = input->dtype;

	(void)ks;
	if (input->ndim != 3 && input->ndim != 4)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: expected a 3-D or 4-D input (batched 1-D or 2-D convolution), but got %u-D",
			op, input->ndim);
	if (weight->ndim != input->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Expected %u-dimensional input for %u-dimensional weight [%lld, ...], but got %u-dimensional input",
			op, weight->ndim, weight->ndim,
			(long long)(weight->ndim ? weight->sizes[0] : 0),
			input->ndim);
	/* PyTorch's CPU convolution takes floats and int64 */
	if (!vnpu_at_dtype_is_float(dt) && dt != VNPU_AT_I64)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: \"slow_conv2d_cpu\" not implemented for '%s'", op,
			vnpu_at_dtype_name(dt));
	if (weight->dtype != dt || (bias && bias->dtype != dt))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Input type (%s) and weight type (%s) should be the same",
			op, vnpu_at_dtype_name(dt),
			vnpu_at_dtype_name(weight->dtype != dt ? weight->dtype :
								   bias->dtype));
	if (!conv_param(op, "stride", stride, nsp, 1, s) ||
	    !conv_param(op, "padding", padding, nsp, 0, p) ||
	    !conv_param(op, "dilation", dilation, nsp, 1, d))
		return NULL;
	if (transposed && output_padding.n &&
	    !conv_param(op, "output_padding", output_padding, nsp, 0, op_))
		return NULL;
	if (groups <= 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: non-positive groups is not supported", op);
	for (int i = 0; i < 2; i++) {
		if (s[i] <= 0)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: non-positive stride is not supported", op);
		if (p[i] < 0)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: negative padding is not supported", op);
		if (d[i] <= 0)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: dilation should be greater than zero", op);
		if (op_[i] < 0 || (op_[i] >= s[i] && op_[i] >= d[i]))
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: output padding must be smaller than either stride or dilation, but got output_padding=%lld, stride=%lld, dilation=%lld",
				op, (long long)op_[i], (long long)s[i],
				(long long)d[i]);
	}
	N = input->sizes[0];
	C = input->sizes[1];
	H = dim_h(input);
	W = dim_w(input);
	KH = dim_h(weight);
	KW = dim_w(weight);
	if (!transposed) {
		CO = weight->sizes[0];
		cin_g = weight->sizes[1];
		if (CO % groups)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got weight of size [%lld, %lld, ...] instead",
				op, (long long)groups, (long long)groups,
				(long long)CO, (long long)cin_g);
		if (cin_g * groups != C)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: Given groups=%lld, weight of size [%lld, %lld, ...], expected input[%lld, %lld, ...] to have %lld channels, but got %lld channels instead",
				op, (long long)groups, (long long)CO,
				(long long)cin_g, (long long)N, (long long)C,
				(long long)(cin_g * groups), (long long)C);
		cout_g = CO / groups;
		HO = (H + 2 * p[0] - d[0] * (KH - 1) - 1) / s[0] + 1;
		WO = (W + 2 * p[1] - d[1] * (KW - 1) - 1) / s[1] + 1;
		if (H + 2 * p[0] < d[0] * (KH - 1) + 1 ||
		    W + 2 * p[1] < d[1] * (KW - 1) + 1)
			HO = WO = 0;
	} else {
		if (weight->sizes[0] != C)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: Given transposed=1, weight of size [%lld, %lld, ...], expected input[%lld, %lld, ...] to have %lld channels, but got %lld channels instead",
				op, (long long)weight->sizes[0],
				(long long)weight->sizes[1], (long long)N,
				(long long)C, (long long)weight->sizes[0],
				(long long)C);
		if (C % groups)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0",
				op, (long long)groups, (long long)groups);
		cin_g = C / groups;
		cout_g = weight->sizes[1];
		CO = cout_g * groups;
		HO = (H - 1) * s[0] - 2 * p[0] + d[0] * (KH - 1) + op_[0] + 1;
		WO = (W - 1) * s[1] - 2 * p[1] + d[1] * (KW - 1) + op_[1] + 1;
	}
	if (HO <= 0 || WO <= 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Given input size per channel: (%lld x %lld). Calculated output size per channel: (%lld x %lld). Output size is too small",
			op, (long long)H, (long long)W, (long long)HO,
			(long long)WO);
	if (bias && (bias->ndim != 1 || bias->sizes[0] != CO))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Given weight of size [%lld, ...], expected bias to be 1-dimensional with %lld elements",
			op, (long long)weight->sizes[0], (long long)CO);

	out_sizes[0] = N;
	out_sizes[1] = CO;
	out_sizes[2] = HO;
	out_sizes[3] = WO;
	if (nsp == 1)
		out_sizes[2] = WO;
	out = vnpu_at_empty(input->ndim, out_sizes, dt, VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	/* int64 accumulates exactly, in int64 (wrapping as PyTorch's) */
	acc = calloc((size_t)(N * CO * HO * WO) + 1, sizeof(double));
	iacc = dt == VNPU_AT_I64 ? calloc((size_t)(N * CO * HO * WO) + 1,
					  sizeof(uint64_t)) : NULL;
	if (!acc || (dt == VNPU_AT_I64 && !iacc)) {
		free(acc);
		free(iacc);
		vnpu_at_release(out);
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "%s: out of memory",
					 op);
	}
	for (int64_t n = 0; n < N; n++)
		for (int64_t g = 0; g < groups; g++)
			for (int64_t ci = 0; ci < cin_g; ci++)
				for (int64_t ih = 0; ih < H; ih++)
					for (int64_t iw = 0; iw < W; iw++) {
		int64_t c = g * cin_g + ci;
		double x = vnpu_at_load(dt, at4(input, n, c, ih, iw));
		uint64_t xi = iacc ? (uint64_t)vnpu_at_load_int(dt, at4(input, n, c, ih, iw)) : 0;

		for (int64_t co = 0; co < cout_g; co++)
			for (int64_t kh = 0; kh < KH; kh++)
				for (int64_t kw = 0; kw < KW; kw++) {
			int64_t oh, ow, ocn;
			const char *wp;

			if (!transposed) {
				/* the outputs this input element feeds */
				int64_t th = ih + p[0] - kh * d[0];
				int64_t tw = iw + p[1] - kw * d[1];

				if (th < 0 || tw < 0 || th % s[0] || tw % s[1])
					continue;
				oh = th / s[0];
				ow = tw / s[1];
				ocn = g * cout_g + co;
				wp = at4(weight, ocn, ci, kh, kw);
			} else {
				oh = ih * s[0] - p[0] + kh * d[0];
				ow = iw * s[1] - p[1] + kw * d[1];
				ocn = g * cout_g + co;
				wp = at4(weight, c, co, kh, kw);
			}
			if (oh < 0 || ow < 0 || oh >= HO || ow >= WO)
				continue;
			if (iacc)
				iacc[((n * CO + ocn) * HO + oh) * WO + ow] +=
					xi * (uint64_t)vnpu_at_load_int(dt, wp);
			else
				acc[((n * CO + ocn) * HO + oh) * WO + ow] +=
					x * vnpu_at_load(dt, wp);
		}
					}
	{
		char *o = vnpu_at_data(out);
		size_t osz = vnpu_at_dtype_size(dt);
		int64_t i = 0;

		for (int64_t n = 0; n < N; n++)
			for (int64_t co = 0; co < CO; co++) {
				const char *bp = bias ? (const char *)vnpu_at_data(bias) +
						     co * bias->strides[0] * (int64_t)osz : NULL;
				double b = bp ? vnpu_at_load(dt, bp) : 0.0;
				uint64_t bi = bp && iacc ? (uint64_t)vnpu_at_load_int(dt, bp) : 0;

				for (int64_t q = 0; q < HO * WO; q++, i++) {
					if (iacc)
						*(int64_t *)(o + i * (int64_t)osz) =
							(int64_t)(iacc[i] + bi);
					else
						vnpu_at_store(dt, o + i * (int64_t)osz,
							      acc[i] + b);
				}
			}
	}
	free(acc);
	free(iacc);
	return out;
}

/* ---- pooling ----------------------------------------------------------------- */

static struct vnpu_at_tensor *pool_empty(const struct vnpu_at_tensor *self,
					 const struct vnpu_at_pool2d *g,
					 enum vnpu_at_dtype dt)
{
	int64_t sizes[4] = { g->N, g->C, g->HO, g->WO };

	return g->batched ? vnpu_at_empty(4, sizes, dt, VNPU_AT_DEV_CPU) :
			    vnpu_at_empty(3, sizes + 1, dt, VNPU_AT_DEV_CPU);
}

/* Element (n, c, h, w) of a pooling input (3-D: no batch dim). */
static const char *pool_at(const struct vnpu_at_tensor *t, bool batched,
			   int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t isz = (int64_t)vnpu_at_dtype_size(t->dtype);
	uint32_t b = batched ? 1 : 0;
	int64_t off = c * t->strides[b] + h * t->strides[b + 1] +
		      w * t->strides[b + 2];

	if (batched)
		off += n * t->strides[0];
	return (const char *)vnpu_at_data(t) + off * isz;
}

struct vnpu_ret_max_pool2d_with_indices vnpu_cpu_max_pool2d_with_indices(vnpu_keyset_t ks,
				 struct vnpu_at_tensor *self,
				 struct vnpu_at_int_array kernel_size,
				 struct vnpu_at_int_array stride,
				 struct vnpu_at_int_array padding,
				 struct vnpu_at_int_array dilation,
				 bool ceil_mode)
{
	struct vnpu_ret_max_pool2d_with_indices r = { 0 };
	enum vnpu_at_dtype dt = self->dtype;
	struct vnpu_at_pool2d g;
	size_t osz;
	char *o;
	int64_t *ix, i = 0;

	(void)ks;
	if (!vnpu_at_pool2d_setup("aten::max_pool2d_with_indices", self,
				  kernel_size, stride, padding, dilation,
				  ceil_mode, true, &g))
		return r;
	r.r0 = pool_empty(self, &g, dt);
	r.r1 = pool_empty(self, &g, VNPU_AT_I64);
	if (!r.r0 || !r.r1) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		return (struct vnpu_ret_max_pool2d_with_indices){ 0 };
	}
	o = vnpu_at_data(r.r0);
	ix = vnpu_at_data(r.r1);
	osz = vnpu_at_dtype_size(dt);
	for (int64_t n = 0; n < g.N; n++)
		for (int64_t c = 0; c < g.C; c++)
			for (int64_t oh = 0; oh < g.HO; oh++)
				for (int64_t ow = 0; ow < g.WO; ow++, i++) {
		int64_t hs = oh * g.s[0] - g.p[0], ws = ow * g.s[1] - g.p[1];
		int64_t he = hs + (g.k[0] - 1) * g.d[0] + 1;
		int64_t we = ws + (g.k[1] - 1) * g.d[1] + 1;
		double best = -INFINITY;
		int64_t ibest = INT64_MIN, best_i;
		bool is_int = !vnpu_at_dtype_is_float(dt);

		if (he > g.H)
			he = g.H;
		if (we > g.W)
			we = g.W;
		/* first position inside the input, in one step: the padding
		 * may be far wider than the dilation */
		if (hs < 0)
			hs += (-hs + g.d[0] - 1) / g.d[0] * g.d[0];
		if (ws < 0)
			ws += (-ws + g.d[1] - 1) / g.d[1] * g.d[1];
		best_i = hs * g.W + ws;
		for (int64_t h = hs; h < he; h += g.d[0])
			for (int64_t w = ws; w < we; w += g.d[1]) {
				const char *e = pool_at(self, g.batched, n, c,
							h, w);

				if (is_int) {
					/* exact for every int64 */
					int64_t v = vnpu_at_load_int(dt, e);

					if (v > ibest) {
						ibest = v;
						best_i = h * g.W + w;
					}
					continue;
				}
				double v = vnpu_at_load(dt, e);

				if (v > best || isnan(v)) {
					best = v;
					best_i = h * g.W + w;
				}
			}
		if (is_int)
			vnpu_at_store_int(dt, o + i * (int64_t)osz, ibest);
		else
			vnpu_at_store(dt, o + i * (int64_t)osz, best);
		ix[i] = best_i;
				}
	return r;
}

struct vnpu_at_tensor *vnpu_cpu_avg_pool2d(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_int_array kernel_size,
					   struct vnpu_at_int_array stride,
					   struct vnpu_at_int_array padding,
					   bool ceil_mode,
					   bool count_include_pad,
					   struct vnpu_at_opt_int divisor_override)
{
	enum vnpu_at_dtype dt = self->dtype;
	struct vnpu_at_tensor *out;
	struct vnpu_at_pool2d g;
	size_t osz = vnpu_at_dtype_size(dt);
	char *o;
	int64_t i = 0;

	(void)ks;
	if (divisor_override.has && divisor_override.v == 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::avg_pool2d: divisor must be not zero");
	if (!vnpu_at_pool2d_setup("aten::avg_pool2d", self, kernel_size,
				  stride, padding, VNPU_AT_NO_INTS, ceil_mode,
				  false, &g))
		return NULL;
	out = pool_empty(self, &g, dt);
	if (!out)
		return NULL;
	o = vnpu_at_data(out);
	for (int64_t n = 0; n < g.N; n++)
		for (int64_t c = 0; c < g.C; c++)
			for (int64_t oh = 0; oh < g.HO; oh++)
				for (int64_t ow = 0; ow < g.WO; ow++, i++) {
		int64_t hs = oh * g.s[0] - g.p[0], ws = ow * g.s[1] - g.p[1];
		int64_t he = hs + g.k[0], we = ws + g.k[1];
		int64_t pool_size, div, isum = 0;
		double sum = 0.0;

		if (he > g.H + g.p[0])
			he = g.H + g.p[0];
		if (we > g.W + g.p[1])
			we = g.W + g.p[1];
		pool_size = (he - hs) * (we - ws);
		if (hs < 0)
			hs = 0;
		if (ws < 0)
			ws = 0;
		if (he > g.H)
			he = g.H;
		if (we > g.W)
			we = g.W;
		for (int64_t h = hs; h < he; h++)
			for (int64_t w = ws; w < we; w++) {
				const char *x = pool_at(self, g.batched, n, c, h, w);

				if (dt == VNPU_AT_I64)
					isum += *(const int64_t *)x;
				else
					sum += vnpu_at_load(dt, x);
			}
		if (divisor_override.has)
			div = divisor_override.v;
		else if (count_include_pad)
			div = pool_size;
		else
			div = (he - hs) * (we - ws);
		if (dt == VNPU_AT_I64)	/* integer division, as PyTorch's */
			*(int64_t *)(o + i * (int64_t)osz) = isum / div;
		else
			vnpu_at_store(dt, o + i * (int64_t)osz, sum / (double)div);
				}
	return out;
}
