// SPDX-License-Identifier: MIT
/*
 * The backward ops of the nn layers (CompositeExplicitAutograd), composed
 * of ops the device runs: what PyTorch's autograd calls for a convolution,
 * a batch or layer norm and a max pool, and what the dispatcher's own
 * autograd calls as well (docs/dispatcher.md, "Backward ops"). Each
 * gradient is computed only where output_mask asks, undefined elsewhere,
 * as PyTorch's.
 */
#include "op_util.h"
#include "dispatch_internal.h"

static struct vnpu_at_int_array ints_of(const int64_t *v, int64_t n)
{
	return (struct vnpu_at_int_array){ v, n };
}

static void release3(struct vnpu_at_tensor **t)
{
	for (uint32_t i = 0; i < 3; i++) {
		vnpu_at_release(t[i]);
		t[i] = NULL;
	}
}

/* ---- convolution ------------------------------------------------------------------ */

enum { CONV_MAX_SPATIAL = 3 };

/* The geometry of one convolution, every list expanded to a value per
 * spatial dim and checked against the tensors' sizes. */
struct conv_geom {
	uint32_t nsp;
	int64_t stride[CONV_MAX_SPATIAL], pad[CONV_MAX_SPATIAL];
	int64_t dil[CONV_MAX_SPATIAL], opad[CONV_MAX_SPATIAL];
	int64_t groups;
	bool transposed;
};

/* A list argument of one value per spatial dim (a single value repeats),
 * each in [min, INT32_MAX] so that the size arithmetic cannot overflow. */
static bool per_dim(const char *op, const char *what, struct vnpu_at_int_array a,
		    uint32_t nsp, int64_t min, int64_t *out)
{
	if (a.n != 1 && a.n != (int64_t)nsp)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected %s to be a single integer value or a list of %u values to match the convolution dimensions, but got %lld values",
					 op, what, nsp, (long long)a.n), false;
	for (uint32_t i = 0; i < nsp; i++) {
		out[i] = a.v[a.n == 1 ? 0 : i];
		if (out[i] < min || out[i] > INT32_MAX)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: %s must be in [%lld, %d], got %lld", op, what,
						 (long long)min, INT32_MAX, (long long)out[i]), false;
	}
	return true;
}

/*
 * The checks PyTorch's convolution makes, on the backward's arguments: an
 * input of 1 to 3 spatial dims, a weight and a grad_output of as many, the
 * channels and groups consistent, and grad_output of the size the forward
 * gives.
 */
static bool conv_geometry(const char *op, const struct vnpu_at_tensor *go,
			  const struct vnpu_at_tensor *x, const struct vnpu_at_tensor *w,
			  struct vnpu_at_int_array stride, struct vnpu_at_int_array padding,
			  struct vnpu_at_int_array dilation, bool transposed,
			  struct vnpu_at_int_array output_padding, int64_t groups,
			  struct conv_geom *g)
{
	int64_t cin, cout;

	if (x->ndim < 3 || x->ndim > 2 + CONV_MAX_SPATIAL || w->ndim != x->ndim ||
	    go->ndim != x->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected input, weight and grad_output of 3 to 5 dims alike, got %u, %u and %u",
					 op, x->ndim, w->ndim, go->ndim), false;
	if (go->dtype != x->dtype || w->dtype != x->dtype)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected grad_output, input and weight of one dtype, got %s, %s and %s",
					 op, vnpu_at_scalar_type_name(go->dtype),
					 vnpu_at_scalar_type_name(x->dtype),
					 vnpu_at_scalar_type_name(w->dtype)), false;
	g->nsp = x->ndim - 2;
	g->groups = groups;
	g->transposed = transposed;
	if (!per_dim(op, "stride", stride, g->nsp, 1, g->stride) ||
	    !per_dim(op, "padding", padding, g->nsp, 0, g->pad) ||
	    !per_dim(op, "dilation", dilation, g->nsp, 1, g->dil) ||
	    !per_dim(op, "output_padding", output_padding, g->nsp, 0, g->opad))
		return false;
	if (groups < 1 || groups > INT32_MAX)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: non-positive groups is not supported", op), false;
	/* the weight is [Cout, Cin/groups, k...], transposed [Cin, Cout/groups, k...] */
	cin = transposed ? w->sizes[0] : w->sizes[1] * groups;
	cout = transposed ? w->sizes[1] * groups : w->sizes[0];
	if (x->sizes[1] != cin || w->sizes[0] % groups || go->sizes[1] != cout ||
	    go->sizes[0] != x->sizes[0])
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: input of %lld channels, weight of size [%lld, %lld, ...] with %lld groups and grad_output of %lld channels do not match",
					 op, (long long)x->sizes[1], (long long)w->sizes[0],
					 (long long)w->sizes[1], (long long)groups,
					 (long long)go->sizes[1]), false;
	for (uint32_t i = 0; i < g->nsp; i++) {
		int64_t in = x->sizes[2 + i], k = w->sizes[2 + i], span, want;

		if (k > INT32_MAX || in > INT64_MAX / 4)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: sizes too large", op), false;
		span = g->dil[i] * (k - 1) + 1;	/* < 2^62 */
		if (transposed) {
			if (g->opad[i] >= g->stride[i] && g->opad[i] >= g->dil[i])
				return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
							 "%s: output padding must be smaller than either stride or dilation",
							 op), false;
			want = (in - 1) * g->stride[i] - 2 * g->pad[i] + span +
			       g->opad[i];
		} else {
			want = in + 2 * g->pad[i] - span;
			want = want < 0 ? -1 : want / g->stride[i] + 1;
		}
		if (want < 0 || go->sizes[2 + i] != want)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: grad_output's spatial dim %u is %lld, the convolution gives %lld",
						 op, i, (long long)go->sizes[2 + i], (long long)want), false;
	}
	return true;
}

/* t cut to `sizes` in its spatial dims (2..), contiguous if it was cut;
 * consumes t. */
static struct vnpu_at_tensor *narrow_spatial(struct vnpu_at_tensor *t, const int64_t *sizes,
					     uint32_t nsp)
{
	bool cut = false;

	for (uint32_t i = 0; t && i < nsp; i++) {
		struct vnpu_at_tensor *s;

		if (t->sizes[2 + i] <= sizes[i])
			continue;
		s = vnpu_op_slice_Tensor(t, 2 + i, VNPU_AT_SOME_INT(0),
					 VNPU_AT_SOME_INT(sizes[i]), 1);
		vnpu_at_release(t);
		t = s;
		cut = true;
	}
	if (t && cut) {
		struct vnpu_at_tensor *c = vnpu_op_contiguous(t);

		vnpu_at_release(t);
		t = c;
	}
	return t;
}

/*
 * The weight of the adjoint convolution: [G*Cout_g, Cin_g, k...] to
 * [G*Cin_g, Cout_g, k...] (each group's channels swapped) with the
 * spatial dims flipped.
 */
static struct vnpu_at_tensor *adjoint_weight(struct vnpu_at_tensor *w, int64_t groups,
					     uint32_t nsp)
{
	int64_t sz[2 + 1 + CONV_MAX_SPATIAL], flip[CONV_MAX_SPATIAL];
	struct vnpu_at_tensor *v, *t, *r, *f;

	sz[0] = groups;
	sz[1] = w->sizes[0] / groups;
	sz[2] = w->sizes[1];
	for (uint32_t i = 0; i < nsp; i++) {
		sz[3 + i] = w->sizes[2 + i];
		flip[i] = 2 + i;
	}
	v = vnpu_op_reshape(w, ints_of(sz, 3 + nsp));
	t = v ? vnpu_op_transpose_int(v, 1, 2) : NULL;
	sz[0] = w->sizes[1] * groups;
	sz[1] = w->sizes[0] / groups;
	for (uint32_t i = 0; i < nsp; i++)
		sz[2 + i] = w->sizes[2 + i];
	r = t ? vnpu_op_reshape(t, ints_of(sz, 2 + nsp)) : NULL;
	f = r ? vnpu_op_flip(r, ints_of(flip, nsp)) : NULL;
	vnpu_at_release(v);
	vnpu_at_release(t);
	vnpu_at_release(r);
	return f;
}

/*
 * The input gradient of a (not transposed) convolution as a plain one,
 * which the device runs: grad_output with stride - 1 zeros between its
 * elements, placed at (k - 1) * dilation - padding in a zero frame of
 * size input + (k - 1) * dilation (elements that fall outside are cut),
 * correlated with the adjoint weight at the forward's dilation. Stride 1
 * with a frame that only pads is the convolution's own padding.
 */
static struct vnpu_at_tensor *conv_input_grad(struct vnpu_at_tensor *go,
					      const int64_t *in_spatial,
					      struct vnpu_at_tensor *w,
					      const struct conv_geom *g)
{
	int64_t lead[CONV_MAX_SPATIAL], frame[2 + CONV_MAX_SPATIAL];
	int64_t zero[CONV_MAX_SPATIAL] = { 0 }, ones[CONV_MAX_SPATIAL];
	struct vnpu_at_tensor *wf, *src = NULL, *r = NULL;
	bool direct = true;

	frame[0] = go->sizes[0];
	frame[1] = go->sizes[1];
	for (uint32_t i = 0; i < g->nsp; i++) {
		int64_t reach = g->dil[i] * (w->sizes[2 + i] - 1);

		lead[i] = reach - g->pad[i];
		frame[2 + i] = in_spatial[i] + reach;
		ones[i] = 1;
		direct = direct && g->stride[i] == 1 && lead[i] >= 0;
	}
	wf = adjoint_weight(w, g->groups, g->nsp);
	if (!wf)
		return NULL;
	if (direct) {
		r = vnpu_op_convolution(go, wf, NULL, ints_of(ones, g->nsp),
					ints_of(lead, g->nsp), ints_of(g->dil, g->nsp),
					false, ints_of(zero, g->nsp), g->groups);
		vnpu_at_release(wf);
		return narrow_spatial(r, in_spatial, g->nsp);
	}
	src = vnpu_op_zeros(ints_of(frame, 2 + g->nsp), go->dtype, vnpu_at_device_of(go));
	{
		struct vnpu_at_tensor *dst = src ? vnpu_at_retain(src) : NULL;
		struct vnpu_at_tensor *part = vnpu_at_retain(go);
		bool empty = false;

		/* the view of the frame that grad_output's elements land on,
		 * and the part of grad_output that lands inside the frame */
		for (uint32_t i = 0; dst && part && i < g->nsp && !empty; i++) {
			int64_t s = g->stride[i], n = go->sizes[2 + i];
			int64_t first = lead[i] >= 0 ? 0 : (-lead[i] + s - 1) / s;
			int64_t last = (frame[2 + i] - 1 - lead[i]) / s;
			struct vnpu_at_tensor *d2, *p2;

			if (frame[2 + i] - 1 - lead[i] < 0)
				last = -1;
			if (last > n - 1)
				last = n - 1;
			if (first > last) {
				empty = true;
				break;
			}
			d2 = vnpu_op_slice_Tensor(dst, 2 + i,
						  VNPU_AT_SOME_INT(lead[i] + first * s),
						  VNPU_AT_SOME_INT(lead[i] + last * s + 1), s);
			p2 = vnpu_op_slice_Tensor(part, 2 + i, VNPU_AT_SOME_INT(first),
						  VNPU_AT_SOME_INT(last + 1), 1);
			vnpu_at_release(dst);
			vnpu_at_release(part);
			dst = d2;
			part = p2;
		}
		if (dst && part && !empty) {
			struct vnpu_at_tensor *c = vnpu_op_copy_(dst, part, false);

			if (!c) {
				vnpu_at_release(src);
				src = NULL;
			}
			vnpu_at_release(c);
		} else if (!empty) {
			vnpu_at_release(src);
			src = NULL;
		}
		vnpu_at_release(dst);
		vnpu_at_release(part);
	}
	if (src)
		r = vnpu_op_convolution(src, wf, NULL, ints_of(ones, g->nsp),
					ints_of(zero, g->nsp), ints_of(g->dil, g->nsp),
					false, ints_of(zero, g->nsp), g->groups);
	vnpu_at_release(src);
	vnpu_at_release(wf);
	return r;
}

/*
 * The weight gradient as one grouped convolution. p is the tensor whose
 * channels index the weight's dim 0 (G groups of cp), q the other one (G
 * groups of cq): q as a batch of cq images of G*N channels (group-major)
 * correlated with p's channels as G*cp filters of N channels, in G groups,
 * stride and dilation swapped, is the gradient with dims 0 and 1 swapped.
 */
static struct vnpu_at_tensor *conv_weight_grad(struct vnpu_at_tensor *p,
					       struct vnpu_at_tensor *q,
					       struct vnpu_at_tensor *w,
					       const struct conv_geom *g)
{
	int64_t n = q->sizes[0], cq = w->sizes[1], sz[3 + CONV_MAX_SPATIAL];
	int64_t perm[3 + CONV_MAX_SPATIAL], zero[CONV_MAX_SPATIAL] = { 0 };
	struct vnpu_at_tensor *qv, *qp, *qr = NULL, *pt = NULL, *c = NULL, *ct, *r;

	sz[0] = n;
	sz[1] = g->groups;
	sz[2] = cq;
	perm[0] = 2;
	perm[1] = 1;
	perm[2] = 0;
	for (uint32_t i = 0; i < g->nsp; i++) {
		sz[3 + i] = q->sizes[2 + i];
		perm[3 + i] = 3 + i;
	}
	qv = vnpu_op_reshape(q, ints_of(sz, 3 + g->nsp));
	qp = qv ? vnpu_op_permute(qv, ints_of(perm, 3 + g->nsp)) : NULL;
	sz[0] = cq;
	sz[1] = g->groups * n;
	for (uint32_t i = 0; i < g->nsp; i++)
		sz[2 + i] = q->sizes[2 + i];
	if (qp)
		qr = vnpu_op_reshape(qp, ints_of(sz, 2 + g->nsp));
	if (qr)
		pt = vnpu_op_transpose_int(p, 0, 1);
	if (pt)
		c = vnpu_op_convolution(qr, pt, NULL, ints_of(g->dil, g->nsp),
					ints_of(g->pad, g->nsp), ints_of(g->stride, g->nsp),
					false, ints_of(zero, g->nsp), g->groups);
	ct = c ? vnpu_op_transpose_int(c, 0, 1) : NULL;
	r = ct ? vnpu_op_contiguous(ct) : NULL;
	r = narrow_spatial(r, &w->sizes[2], g->nsp);
	vnpu_at_release(qv);
	vnpu_at_release(qp);
	vnpu_at_release(qr);
	vnpu_at_release(pt);
	vnpu_at_release(c);
	vnpu_at_release(ct);
	return r;
}

static struct vnpu_at_tensor *zeros_like(const struct vnpu_at_tensor *t)
{
	return vnpu_op_zeros(ints_of(t->sizes, t->ndim), t->dtype, vnpu_at_device_of(t));
}

struct vnpu_ret_convolution_backward vnpu_cea_convolution_backward(vnpu_keyset_t ks,
	struct vnpu_at_tensor *grad_output, struct vnpu_at_tensor *input,
	struct vnpu_at_tensor *weight, struct vnpu_at_opt_int_array bias_sizes,
	struct vnpu_at_int_array stride, struct vnpu_at_int_array padding,
	struct vnpu_at_int_array dilation, bool transposed,
	struct vnpu_at_int_array output_padding, int64_t groups,
	struct vnpu_at_bool_list output_mask)
{
	static const char name[] = "aten::convolution_backward";
	const struct vnpu_at_tensor *all[3] = { grad_output, input, weight };
	struct vnpu_at_tensor *r[3] = { NULL, NULL, NULL };
	bool want[3], empty;
	struct conv_geom g;

	(void)bias_sizes;	/* the bias gradient is grad_output summed, as PyTorch's */
	if (output_mask.n != 3)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: output_mask must have 3 elements, not %u",
					 name, output_mask.n),
		       (struct vnpu_ret_convolution_backward){ 0 };
	if (!vnpu_at_check_same_device(name, 3, all) ||
	    !conv_geometry(name, grad_output, input, weight, stride, padding, dilation,
			   transposed, output_padding, groups, &g))
		return (struct vnpu_ret_convolution_backward){ 0 };
	for (uint32_t i = 0; i < 3; i++)
		want[i] = vnpu_at_bool_list_at(output_mask, i);
	empty = !vnpu_at_numel(grad_output) || !vnpu_at_numel(input) ||
		!vnpu_at_numel(weight);
	if (want[0]) {
		if (empty)
			r[0] = zeros_like(input);
		else if (transposed)	/* the adjoint is the plain convolution */
			r[0] = narrow_spatial(vnpu_op_convolution(grad_output, weight, NULL,
					ints_of(g.stride, g.nsp), ints_of(g.pad, g.nsp),
					ints_of(g.dil, g.nsp), false,
					ints_of((const int64_t[CONV_MAX_SPATIAL]){ 0 }, g.nsp),
					groups), &input->sizes[2], g.nsp);
		else
			r[0] = conv_input_grad(grad_output, &input->sizes[2], weight, &g);
		if (!r[0])
			goto fail;
	}
	if (want[1]) {
		r[1] = empty ? zeros_like(weight) :
		       transposed ? conv_weight_grad(input, grad_output, weight, &g) :
				    conv_weight_grad(grad_output, input, weight, &g);
		if (!r[1])
			goto fail;
	}
	if (want[2]) {
		int64_t dims[2 + CONV_MAX_SPATIAL];
		uint32_t nd = 0;

		for (uint32_t d = 0; d < grad_output->ndim; d++)
			if (d != 1)
				dims[nd++] = d;
		r[2] = vnpu_op_sum_dim_IntList(grad_output,
					       (struct vnpu_at_opt_int_array){ true, { dims, nd } },
					       false, VNPU_AT_DTYPE_NONE);
		if (!r[2])
			goto fail;
	}
	return (struct vnpu_ret_convolution_backward){ r[0], r[1], r[2] };
fail:
	release3(r);
	return (struct vnpu_ret_convolution_backward){ 0 };
}

/* ---- avg pooling ------------------------------------------------------------------ */

/* One value per spatial dim of a pooling list (one value repeats; an empty
 * stride is the kernel's), each in [min, INT32_MAX]. */
static bool pool_pair(const char *op, const char *what, struct vnpu_at_int_array a,
		      const int64_t *dflt, int64_t min, int64_t out[2])
{
	if (!vnpu_at_pair_arg(op, what, a, dflt, out))
		return false;
	for (int i = 0; i < 2; i++) {
		if (out[i] < min || out[i] > INT32_MAX)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: %s must be in [%lld, %d], got %lld",
						 op, what, (long long)min, INT32_MAX,
						 (long long)out[i]), false;
	}
	return true;
}

/* The pooled size of one dim, as PyTorch's pooling_output_shape. */
static int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t s, bool ceil_mode)
{
	int64_t num = in + 2 * pad - (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
	int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;

	if (ceil_mode && (out - 1) * s >= in + pad)
		out--;
	return out;
}

/* 1 / divisor of every output window, as PyTorch's avg_pool2d divides
 * (computed on the host: one value per window position). */
static struct vnpu_at_tensor *avg_pool_scale(const int64_t k[2], const int64_t st[2],
					     const int64_t pd[2], const int64_t out[2],
					     const int64_t in[2], bool count_include_pad,
					     struct vnpu_at_opt_int divisor_override)
{
	struct vnpu_at_tensor *t = vnpu_at_empty(2, out, VNPU_AT_F64, VNPU_AT_DEV_CPU);
	double *d = t ? vnpu_at_data(t) : NULL;

	for (int64_t i = 0; d && i < out[0]; i++) {
		for (int64_t j = 0; j < out[1]; j++) {
			int64_t hs = i * st[0] - pd[0], ws = j * st[1] - pd[1];
			int64_t he = hs + k[0], we = ws + k[1], div;

			he = he < in[0] + pd[0] ? he : in[0] + pd[0];
			we = we < in[1] + pd[1] ? we : in[1] + pd[1];
			div = (he - hs) * (we - ws);
			hs = hs > 0 ? hs : 0;
			ws = ws > 0 ? ws : 0;
			he = he < in[0] ? he : in[0];
			we = we < in[1] ? we : in[1];
			if (divisor_override.has)
				div = divisor_override.v;
			else if (!count_include_pad)
				div = (he - hs) * (we - ws);
			d[i * out[1] + j] = div != 0 ? 1.0 / (double)div : 0.0;
		}
	}
	return t;
}

/*
 * Each output gradient divided by its window's divisor and spread over
 * the window: the input gradient of a convolution with a ones kernel,
 * every plane a batch entry (conv_input_grad, so it runs as a plain
 * convolution on the device).
 */
struct vnpu_at_tensor *vnpu_cea_avg_pool2d_backward(vnpu_keyset_t ks,
	struct vnpu_at_tensor *grad_output, struct vnpu_at_tensor *self,
	struct vnpu_at_int_array kernel_size, struct vnpu_at_int_array stride,
	struct vnpu_at_int_array padding, bool ceil_mode, bool count_include_pad,
	struct vnpu_at_opt_int divisor_override)
{
	static const char name[] = "aten::avg_pool2d_backward";
	const struct vnpu_at_tensor *all[2] = { grad_output, self };
	struct vnpu_at_tensor *sc = NULL, *scd = NULL, *gs = NULL, *g4 = NULL;
	struct vnpu_at_tensor *ones = NULL, *gi = NULL, *r = NULL;
	int64_t k[2], st[2], pd[2], in[2], out[2], planes;
	struct conv_geom g = { .nsp = 2, .dil = { 1, 1 }, .groups = 1 };
	uint32_t nd = self->ndim;

	if ((nd != 3 && nd != 4) || grad_output->ndim != nd ||
	    memcmp(grad_output->sizes, self->sizes, (nd - 2) * sizeof(int64_t)))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected a 3-D or 4-D input and a grad_output of its planes",
					 name);
	if (!vnpu_at_dtype_is_float(self->dtype) || grad_output->dtype != self->dtype)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected floating grad_output and input of one dtype",
					 name);
	if (!vnpu_at_check_same_device(name, 2, all) ||
	    !pool_pair(name, "kernel_size", kernel_size, NULL, 1, k) ||
	    !pool_pair(name, "stride", stride, k, 1, st) ||
	    !pool_pair(name, "padding", padding, NULL, 0, pd))
		return NULL;
	if (divisor_override.has && divisor_override.v == 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: divisor must be not zero", name);
	for (int i = 0; i < 2; i++) {
		in[i] = self->sizes[nd - 2 + i];
		out[i] = grad_output->sizes[nd - 2 + i];
		if (pd[i] > k[i] / 2)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: pad should be at most half of effective kernel size",
						 name);
		if (out[i] != pooled_size(in[i], k[i], pd[i], st[i], ceil_mode))
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: grad_output's spatial dim %d is %lld, the pooling gives %lld",
						 name, i, (long long)out[i],
						 (long long)pooled_size(in[i], k[i], pd[i], st[i],
									ceil_mode));
		g.stride[i] = st[i];
		g.pad[i] = pd[i];
	}
	planes = in[0] && in[1] ? vnpu_at_numel(self) / (in[0] * in[1]) : 0;
	if (!planes || !out[0] || !out[1])
		return zeros_like(self);
	sc = avg_pool_scale(k, st, pd, out, in, count_include_pad, divisor_override);
	scd = sc ? vnpu_op__to_copy(sc, self->dtype, vnpu_at_device_of(self), false) : NULL;
	gs = scd ? vnpu_op_mul_Tensor(grad_output, scd) : NULL;
	g4 = gs ? vnpu_op_reshape(gs, VNPU_AT_INTS(planes, 1, out[0], out[1])) : NULL;
	ones = g4 ? vnpu_op_ones(VNPU_AT_INTS(1, 1, k[0], k[1]), self->dtype,
				 vnpu_at_device_of(self)) : NULL;
	gi = ones ? conv_input_grad(g4, in, ones, &g) : NULL;
	r = gi ? vnpu_op_reshape(gi, ints_of(self->sizes, nd)) : NULL;
	vnpu_at_release(sc);
	vnpu_at_release(scd);
	vnpu_at_release(gs);
	vnpu_at_release(g4);
	vnpu_at_release(ones);
	vnpu_at_release(gi);
	return r;
}

/* ---- batch and layer norm ------------------------------------------------------------ */

/* A per-channel statistic or affine parameter: 1-D of C elements. */
static bool channel_vector(const char *op, const char *what,
			   const struct vnpu_at_tensor *t, int64_t c)
{
	if (!t || (t->ndim == 1 && t->sizes[0] == c))
		return true;
	return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: expected %s of size [%lld]", op, what,
				 (long long)c), false;
}

/* The (1, C, 1, ...) view of a (C) vector for an input of ndim dims; with
 * eps >= 0, rsqrt(t + eps) (the rstd of a running variance) instead. */
static struct vnpu_at_tensor *channel_view(struct vnpu_at_tensor *t, const struct vnpu_at_tensor *x,
					   double eps)
{
	int64_t shape[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *s, *v;

	for (uint32_t d = 0; d < x->ndim; d++)
		shape[d] = d == 1 ? x->sizes[1] : 1;
	if (eps >= 0) {
		struct vnpu_at_tensor *e = vnpu_op_add_Scalar(t, VNPU_AT_DOUBLE(eps),
							      VNPU_AT_INT(1));

		s = e ? vnpu_op_rsqrt(e) : NULL;
		vnpu_at_release(e);
	} else {
		s = vnpu_at_retain(t);
	}
	v = s ? vnpu_op_reshape(s, ints_of(shape, x->ndim)) : NULL;
	vnpu_at_release(s);
	return v;
}

/*
 * The gradients of native_batch_norm by the formulas of the dispatcher's
 * autograd (vnpu_norm_backward): in training from the saved mean and
 * inverse std, in eval from the running statistics. The weight and bias
 * gradients take the weight's dtype (the input's without a weight).
 */
struct vnpu_ret_native_batch_norm_backward vnpu_cea_native_batch_norm_backward(vnpu_keyset_t ks,
	struct vnpu_at_tensor *grad_out, struct vnpu_at_tensor *input,
	struct vnpu_at_tensor *weight, struct vnpu_at_tensor *running_mean,
	struct vnpu_at_tensor *running_var, struct vnpu_at_tensor *save_mean,
	struct vnpu_at_tensor *save_invstd, bool train, double eps,
	struct vnpu_at_bool_list output_mask)
{
	static const char name[] = "aten::native_batch_norm_backward";
	struct vnpu_at_tensor *mean_src = train ? save_mean : running_mean;
	struct vnpu_at_tensor *std_src = train ? save_invstd : running_var;
	struct vnpu_at_tensor *in[3] = { NULL, NULL, NULL };
	struct vnpu_at_tensor *mean = NULL, *rstd = NULL, *wv = NULL;
	enum vnpu_at_dtype wdt = (enum vnpu_at_dtype)(weight ? weight : input)->dtype;
	int64_t dims[VNPU_AT_MAX_DIMS], c;
	uint32_t nd = 0;
	bool want[3], ok;

	if (output_mask.n != 3)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: output_mask must have 3 elements, not %u",
					 name, output_mask.n),
		       (struct vnpu_ret_native_batch_norm_backward){ 0 };
	if (input->ndim < 2 || grad_out->ndim != input->ndim ||
	    memcmp(grad_out->sizes, input->sizes, input->ndim * sizeof(int64_t)))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected an input of at least 2 dims and a grad_out of its shape",
					 name),
		       (struct vnpu_ret_native_batch_norm_backward){ 0 };
	if (!mean_src || !std_src)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: %s", name, train ?
					 "training needs save_mean and save_invstd" :
					 "eval needs running_mean and running_var"),
		       (struct vnpu_ret_native_batch_norm_backward){ 0 };
	c = input->sizes[1];
	if (!channel_vector(name, "weight", weight, c) ||
	    !channel_vector(name, train ? "save_mean" : "running_mean", mean_src, c) ||
	    !channel_vector(name, train ? "save_invstd" : "running_var", std_src, c))
		return (struct vnpu_ret_native_batch_norm_backward){ 0 };
	{
		const struct vnpu_at_tensor *all[5] = { grad_out, input, mean_src, std_src,
							weight ? weight : input };

		if (!vnpu_at_check_same_device(name, 5, all))
			return (struct vnpu_ret_native_batch_norm_backward){ 0 };
	}
	for (uint32_t i = 0; i < 3; i++)
		want[i] = vnpu_at_bool_list_at(output_mask, i);
	for (uint32_t d = 0; d < input->ndim; d++)
		if (d != 1)
			dims[nd++] = d;
	mean = channel_view(mean_src, input, -1);
	rstd = channel_view(std_src, input, train ? -1 : eps);
	wv = weight ? channel_view(weight, input, -1) : NULL;
	ok = mean && rstd && (wv || !weight) &&
	     vnpu_norm_backward(want, grad_out, input, wv, mean, rstd, train, dims, nd, dims,
				nd, ints_of(&input->sizes[1], 1), in);
	vnpu_at_release(mean);
	vnpu_at_release(rstd);
	vnpu_at_release(wv);
	if (!ok) {
		release3(in);
		return (struct vnpu_ret_native_batch_norm_backward){ 0 };
	}
	in[1] = vnpu_at_converted(in[1], wdt);
	in[2] = vnpu_at_converted(in[2], wdt);
	if ((want[1] && !in[1]) || (want[2] && !in[2])) {
		release3(in);
		return (struct vnpu_ret_native_batch_norm_backward){ 0 };
	}
	return (struct vnpu_ret_native_batch_norm_backward){ in[0], in[1], in[2] };
}

/*
 * The gradients of native_layer_norm from its saved mean and rstd, by the
 * same formulas: the input's, and the weight's and bias's summed over the
 * outer dims, in the weight's dtype (the input's without a weight).
 */
struct vnpu_ret_native_layer_norm_backward vnpu_cea_native_layer_norm_backward(vnpu_keyset_t ks,
	struct vnpu_at_tensor *grad_out, struct vnpu_at_tensor *input,
	struct vnpu_at_int_array normalized_shape, struct vnpu_at_tensor *mean,
	struct vnpu_at_tensor *rstd, struct vnpu_at_tensor *weight,
	struct vnpu_at_tensor *bias, struct vnpu_at_bool_list output_mask)
{
	static const char name[] = "aten::native_layer_norm_backward";
	int64_t inner[VNPU_AT_MAX_DIMS], outer[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *in[3] = { NULL, NULL, NULL };
	enum vnpu_at_dtype wdt = (enum vnpu_at_dtype)(weight ? weight : input)->dtype;
	uint32_t axis, ni = 0, no = 0;
	bool want[3];

	(void)bias;	/* its gradient is the summed grad_out */
	if (output_mask.n != 3)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: output_mask must have 3 elements, not %u",
					 name, output_mask.n),
		       (struct vnpu_ret_native_layer_norm_backward){ 0 };
	if (normalized_shape.n < 1 || normalized_shape.n > input->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: normalized_shape of %lld dims for an input of %u",
					 name, (long long)normalized_shape.n, input->ndim),
		       (struct vnpu_ret_native_layer_norm_backward){ 0 };
	axis = input->ndim - (uint32_t)normalized_shape.n;
	for (uint32_t d = 0; d < input->ndim; d++) {
		if (d < axis) {
			outer[no++] = d;
			continue;
		}
		if (input->sizes[d] != normalized_shape.v[d - axis])
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: normalized_shape does not match the input's last %u sizes",
						 name, ni + 1),
			       (struct vnpu_ret_native_layer_norm_backward){ 0 };
		inner[ni++] = d;
	}
	for (uint32_t i = 0; i < 3; i++)
		want[i] = vnpu_at_bool_list_at(output_mask, i);
	if (!vnpu_norm_backward(want, grad_out, input, weight, mean, rstd, true, inner, ni,
				outer, no, ints_of(&input->sizes[axis], ni), in)) {
		release3(in);
		return (struct vnpu_ret_native_layer_norm_backward){ 0 };
	}
	in[1] = vnpu_at_converted(in[1], wdt);
	in[2] = vnpu_at_converted(in[2], wdt);
	if ((want[1] && !in[1]) || (want[2] && !in[2])) {
		release3(in);
		return (struct vnpu_ret_native_layer_norm_backward){ 0 };
	}
	return (struct vnpu_ret_native_layer_norm_backward){ in[0], in[1], in[2] };
}

/* ---- max pooling ------------------------------------------------------------------ */

/*
 * Each output gradient added to the input element its index names, in the
 * order of the outputs (as PyTorch's CPU kernel adds them): one index_add_
 * over the flattened planes, each plane's indices offset by its start.
 * The indices are those max_pool2d_with_indices gave; one outside its
 * plane is caught only where it leaves the whole input (index_add_'s
 * IndexError).
 */
struct vnpu_at_tensor *vnpu_cea_max_pool2d_with_indices_backward(vnpu_keyset_t ks,
	struct vnpu_at_tensor *grad_output, struct vnpu_at_tensor *self,
	struct vnpu_at_int_array kernel_size, struct vnpu_at_int_array stride,
	struct vnpu_at_int_array padding, struct vnpu_at_int_array dilation, bool ceil_mode,
	struct vnpu_at_tensor *indices)
{
	static const char name[] = "aten::max_pool2d_with_indices_backward";
	const struct vnpu_at_tensor *all[3] = { grad_output, self, indices };
	struct vnpu_at_tensor *flat_idx, *flat_g = NULL, *acc = NULL, *r = NULL;
	int64_t hw, outs, planes;

	(void)kernel_size;	/* the indices say where each window's max was */
	(void)stride;
	(void)padding;
	(void)dilation;
	(void)ceil_mode;
	if ((self->ndim != 3 && self->ndim != 4) || grad_output->ndim != self->ndim ||
	    indices->ndim != self->ndim ||
	    memcmp(grad_output->sizes, indices->sizes, self->ndim * sizeof(int64_t)) ||
	    memcmp(grad_output->sizes, self->sizes, (self->ndim - 2) * sizeof(int64_t)))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected a 3-D or 4-D input with grad_output and indices of the pooled shape",
					 name);
	if (indices->dtype != VNPU_AT_I64 || grad_output->dtype != self->dtype)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected int64 indices and a grad_output of the input's dtype",
					 name);
	/* PyTorch's kernel is for floating types only: an integer gradient is refused */
	if (!vnpu_at_dtype_is_float(self->dtype))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: \"max_pool2d_backward\" not implemented for '%s'",
					 name, vnpu_at_scalar_type_name(self->dtype));
	if (!vnpu_at_check_same_device(name, 3, all))
		return NULL;
	hw = self->sizes[self->ndim - 1] * self->sizes[self->ndim - 2];
	outs = grad_output->sizes[self->ndim - 1] * grad_output->sizes[self->ndim - 2];
	planes = hw ? vnpu_at_numel(self) / hw : 0;
	if (!outs || !hw)
		return zeros_like(self);
	flat_idx = vnpu_max_pool_flat_indices(indices, planes, outs, hw);
	flat_g = flat_idx ? vnpu_op_reshape(grad_output, VNPU_AT_INTS(planes * outs)) : NULL;
	acc = flat_g ? vnpu_op_zeros(VNPU_AT_INTS(planes * hw), self->dtype,
				     vnpu_at_device_of(self)) : NULL;
	if (acc) {
		struct vnpu_at_tensor *a = vnpu_op_index_add_(acc, 0, flat_idx, flat_g,
							      VNPU_AT_INT(1));

		r = a ? vnpu_op_reshape(acc, ints_of(self->sizes, self->ndim)) : NULL;
		vnpu_at_release(a);
	}
	vnpu_at_release(flat_idx);
	vnpu_at_release(flat_g);
	vnpu_at_release(acc);
	return r;
}
