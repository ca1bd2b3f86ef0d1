/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1): softmax and log-softmax on SOFTMAX, their
 * backward on BINARY/REDUCE/UNARY, layer norm on LAYER_NORM
 * and batch norm composed of REDUCE/BINARY/UNARY launches
 * (docs/dispatcher.md). half_to_float, float64 and invalid arguments are
 * unsupported here (vnpu_npu_unsupported): the fallback takes them.
 */
#include "npu_ops_common.h"

static struct vnpu_at_tensor *softmax(const char *name,
				      struct vnpu_at_tensor *self, int64_t dim,
				      bool log_out)
{
	struct vnpu_kp_softmax p = { .log = log_out };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *src, *out;

	p.dim = (uint32_t)(dim < 0 ? dim + self->ndim : dim);
	src = vnpu_npu_plain(self);
	out = src ? vnpu_npu_empty(src->ndim, src->sizes, self->dtype) : NULL;
	if (out && vnpu_at_numel(out) &&
	    (!vnpu_npu_arg(&l, src, VNPU_ACCESS_READ, &p.input) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch(name, &l, "softmax", &p, sizeof(p),
			      vnpu_at_numel(out)))) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_at_release(src);
	return out;
}

static bool dim_ok(const struct vnpu_at_tensor *t, int64_t dim)
{
	return t->ndim && dim >= -(int64_t)t->ndim && dim < t->ndim;
}

struct vnpu_at_tensor *vnpu_npu__softmax(vnpu_keyset_t ks,
					 struct vnpu_at_tensor *self,
					 int64_t dim, bool half_to_float)
{
	if (half_to_float || !npk_f32_float(self->dtype) || !dim_ok(self, dim))
		return vnpu_npu_unsupported();
	return softmax("aten::_softmax", self, dim, false);
}

struct vnpu_at_tensor *vnpu_npu__log_softmax(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     int64_t dim, bool half_to_float)
{
	if (half_to_float || !npk_f32_float(self->dtype) || !dim_ok(self, dim))
		return vnpu_npu_unsupported();
	return softmax("aten::_log_softmax", self, dim, true);
}

static bool same_shape(const struct vnpu_at_tensor *a,
		       const struct vnpu_at_tensor *b)
{
	return a->ndim == b->ndim &&
	       !memcmp(a->sizes, b->sizes, a->ndim * sizeof(int64_t));
}

/*
 * softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g); sums
 * along dim with keepdim so BINARY broadcasts them back. Computed in the
 * grad's dtype, returned in input_dtype.
 */
static struct vnpu_at_tensor *softmax_bw(const char *name,
					 struct vnpu_at_tensor *g,
					 struct vnpu_at_tensor *y, int64_t dim,
					 enum vnpu_at_dtype input_dtype,
					 bool log_out)
{
	/* in float32 for f16/bf16, rounded once (PyTorch's opmath) */
	enum vnpu_at_dtype dt = g->dtype == VNPU_AT_F64 ? VNPU_AT_F64 :
			       VNPU_AT_F32;
	uint32_t mask = 1u << (dim < 0 ? dim + g->ndim : dim);
	struct vnpu_at_tensor *gp = NULL, *prod = NULL, *sum = NULL;
	struct vnpu_at_tensor *t = NULL, *out = NULL;

	gp = npk_operand(g, dt);
	if (!gp)
		return NULL;
	if (log_out) {
		struct vnpu_at_tensor *yp = npk_operand(y, dt);

		sum = npk_reduce(name, VNPU_REDUCE_SUM, gp, mask, true);
		t = yp && sum ? npk_unary(name, VNPU_UNARY_EXP, yp) : NULL;
		prod = t ? npk_binary(name, VNPU_BINARY_MUL, t, sum, dt, 1.0) :
			   NULL;
		out = prod ? npk_binary(name, VNPU_BINARY_SUB, gp, prod, dt,
					1.0) : NULL;
		vnpu_at_release(yp);
	} else {
		prod = npk_binary(name, VNPU_BINARY_MUL, gp, y, dt, 1.0);
		sum = prod ? npk_reduce(name, VNPU_REDUCE_SUM, prod, mask, true) :
			     NULL;
		t = sum ? npk_binary(name, VNPU_BINARY_SUB, gp, sum, dt, 1.0) :
			  NULL;
		out = t ? npk_binary(name, VNPU_BINARY_MUL, y, t, dt, 1.0) :
			  NULL;
	}
	vnpu_at_release(gp);
	vnpu_at_release(prod);
	vnpu_at_release(sum);
	vnpu_at_release(t);
	return npk_to(out, input_dtype);
}

static bool softmax_bw_ok(const struct vnpu_at_tensor *g,
			  const struct vnpu_at_tensor *y, int64_t dim,
			  enum vnpu_at_dtype input_dtype)
{
	return npk_f32_float(g->dtype) && npk_f32_float(y->dtype) &&
	       npk_f32_float(input_dtype) && same_shape(g, y) && dim_ok(g, dim) &&
	       vnpu_at_is_npu(g) && vnpu_at_is_npu(y);
}

struct vnpu_at_tensor *vnpu_npu__softmax_backward_data(vnpu_keyset_t ks,
						       struct vnpu_at_tensor *grad_output,
						       struct vnpu_at_tensor *output,
						       int64_t dim,
						       enum vnpu_at_dtype input_dtype)
{
	if (!softmax_bw_ok(grad_output, output, dim, input_dtype))
		return vnpu_npu_unsupported();
	return softmax_bw("aten::_softmax_backward_data", grad_output, output,
			  dim, input_dtype, false);
}

struct vnpu_at_tensor *vnpu_npu__log_softmax_backward_data(vnpu_keyset_t ks,
							   struct vnpu_at_tensor *grad_output,
							   struct vnpu_at_tensor *output,
							   int64_t dim,
							   enum vnpu_at_dtype input_dtype)
{
	if (!softmax_bw_ok(grad_output, output, dim, input_dtype))
		return vnpu_npu_unsupported();
	return softmax_bw("aten::_log_softmax_backward_data", grad_output,
			  output, dim, input_dtype, true);
}

/* weight/bias the device takes: the normalized shape, input's dtype or
 * float32. */
static bool affine_ok(const struct vnpu_at_tensor *t,
		      const struct vnpu_at_tensor *input,
		      struct vnpu_at_int_array shape)
{
	if (!t)
		return true;
	if (!vnpu_at_is_npu(t) || t->ndim != shape.n ||
	    (t->dtype != input->dtype && t->dtype != VNPU_AT_F32))
		return false;
	for (int64_t i = 0; i < shape.n; i++)
		if (t->sizes[i] != shape.v[i])
			return false;
	return true;
}

struct vnpu_ret_native_layer_norm vnpu_npu_native_layer_norm(vnpu_keyset_t ks,
							     struct vnpu_at_tensor *input,
							     struct vnpu_at_int_array normalized_shape,
							     struct vnpu_at_tensor *weight,
							     struct vnpu_at_tensor *bias,
							     double eps)
{
	static const char name[] = "aten::native_layer_norm";
	struct vnpu_ret_native_layer_norm r = { 0 };
	struct vnpu_kp_layer_norm p = { .eps = eps, .has_stats = 1 };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *x = NULL, *w = NULL, *b = NULL;
	int64_t nn = normalized_shape.n, stat[VNPU_AT_MAX_DIMS];
	uint32_t lead;
	bool ok;

	if (nn < 1 || nn > input->ndim || !npk_f32_float(input->dtype) ||
	    !(eps >= 0) || !isfinite(eps) || !vnpu_at_is_npu(input) ||
	    !affine_ok(weight, input, normalized_shape) ||
	    !affine_ok(bias, input, normalized_shape))
		goto unsupported;
	lead = input->ndim - (uint32_t)nn;
	for (int64_t i = 0; i < nn; i++)
		if (input->sizes[lead + i] != normalized_shape.v[i] ||
		    !normalized_shape.v[i])
			goto unsupported;
	for (uint32_t i = 0; i < input->ndim; i++)
		stat[i] = i < lead ? input->sizes[i] : 1;
	p.norm_ndim = (uint32_t)nn;
	x = vnpu_npu_plain(input);
	w = x && weight ? vnpu_npu_plain(weight) : NULL;
	b = x && bias ? vnpu_npu_plain(bias) : NULL;
	ok = x && (!weight || w) && (!bias || b);
	r.r0 = ok ? vnpu_npu_empty(input->ndim, input->sizes, input->dtype) :
		    NULL;
	r.r1 = r.r0 ? vnpu_npu_empty(input->ndim, stat, VNPU_AT_F32) : NULL;
	r.r2 = r.r1 ? vnpu_npu_empty(input->ndim, stat, VNPU_AT_F32) : NULL;
	ok = r.r2 != NULL;
	if (ok && vnpu_at_numel(r.r0)) {
		p.has_weight = w != NULL;
		p.has_bias = b != NULL;
		ok = vnpu_npu_arg(&l, x, VNPU_ACCESS_READ, &p.input) &&
		     (!w || vnpu_npu_arg(&l, w, VNPU_ACCESS_READ, &p.weight)) &&
		     (!b || vnpu_npu_arg(&l, b, VNPU_ACCESS_READ, &p.bias)) &&
		     vnpu_npu_arg(&l, r.r0, VNPU_ACCESS_WRITE, &p.out) &&
		     vnpu_npu_arg(&l, r.r1, VNPU_ACCESS_WRITE, &p.mean) &&
		     vnpu_npu_arg(&l, r.r2, VNPU_ACCESS_WRITE, &p.rstd) &&
		     vnpu_npu_launch(name, &l, "layer_norm", &p, sizeof(p),
				     vnpu_at_numel(r.r1));
	}
	vnpu_at_release(x);
	vnpu_at_release(w);
	vnpu_at_release(b);
	if (!ok) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		vnpu_at_release(r.r2);
		return (struct vnpu_ret_native_layer_norm){ 0 };
	}
	/* mean/rstd are float32, as the CPU kernel gives for f32/f16/bf16 */
	return r;

unsupported:
	return (struct vnpu_ret_native_layer_norm){ .r0 = vnpu_npu_unsupported() };
}

/* ---- batch norm: per-channel statistics with REDUCE, the rest BINARY ---------- */

/* t ([C]) viewed as [C, 1, ...] (nd - 1 dims) so that it broadcasts
 * against [N, C, ...]. */
static struct vnpu_at_tensor *channel_view(struct vnpu_at_tensor *t,
					   uint32_t nd)
{
	int64_t sz[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS];

	for (uint32_t i = 0; i + 1 < nd; i++) {
		sz[i] = i ? 1 : t->sizes[0];
		st[i] = i ? 0 : t->strides[0];
	}
	return vnpu_at_view_of(t, nd - 1, sz, st, t->offset);
}

/* t ([1, C, 1, ...] contiguous) viewed as [C]. */
static struct vnpu_at_tensor *flat_c(struct vnpu_at_tensor *t, int64_t C)
{
	struct vnpu_at_tensor *v;

	if (!t)
		return NULL;
	v = vnpu_at_view_of(t, 1, &C, (int64_t[]){ 1 }, t->offset);
	vnpu_at_release(t);
	return v;
}

static bool bn_param_ok(const struct vnpu_at_tensor *t, int64_t C)
{
	return !t || (vnpu_at_is_npu(t) && t->ndim == 1 && t->sizes[0] == C &&
		      vnpu_npu_dtype(t->dtype) >= 0 &&
		      vnpu_npu_format_of(t) == VNPU_FORMAT_ND);
}

/* y = x * a (+ b): a/b [C] as channel views; consumes x. */
static struct vnpu_at_tensor *bn_affine(const char *name,
					struct vnpu_at_tensor *x,
					struct vnpu_at_tensor *a, uint32_t op,
					uint32_t nd)
{
	struct vnpu_at_tensor *v, *r;

	if (!x || !a)
		return x;
	v = channel_view(a, nd);
	r = v ? npk_binary(name, op, x, v, VNPU_AT_F32, 1.0) : NULL;
	vnpu_at_release(v);
	vnpu_at_release(x);
	return r;
}

/* dst = (1 - momentum) * dst + factor * stat, written back into dst. */
static bool bn_update(const char *name, struct vnpu_at_tensor *dst,
		      struct vnpu_at_tensor *stat, double momentum,
		      double factor)
{
	struct vnpu_at_tensor *keep = npk_scalar(1.0 - momentum, VNPU_AT_F32);
	struct vnpu_at_tensor *scaled = NULL, *sum = NULL;
	bool ok;

	if (keep)
		scaled = npk_binary(name, VNPU_BINARY_MUL, dst, keep,
				    VNPU_AT_F32, 1.0);
	if (scaled)	/* ADD computes a + alpha * b */
		sum = npk_binary(name, VNPU_BINARY_ADD, scaled, stat,
				 VNPU_AT_F32, factor);
	ok = sum && vnpu_npu_copy(name, dst, sum);
	vnpu_at_release(keep);
	vnpu_at_release(scaled);
	vnpu_at_release(sum);
	return ok;
}

struct vnpu_ret_native_batch_norm vnpu_npu_native_batch_norm(vnpu_keyset_t ks,
							     struct vnpu_at_tensor *input,
							     struct vnpu_at_tensor *weight,
							     struct vnpu_at_tensor *bias,
							     struct vnpu_at_tensor *running_mean,
							     struct vnpu_at_tensor *running_var,
							     bool training,
							     double momentum,
							     double eps)
{
	static const char name[] = "aten::native_batch_norm";
	struct vnpu_ret_native_batch_norm r = { 0 };
	struct vnpu_at_tensor *x = NULL, *mean = NULL, *diff = NULL;
	struct vnpu_at_tensor *var = NULL, *ve = NULL, *inv = NULL, *y = NULL;
	struct vnpu_at_tensor *epst = NULL, *tmp;
	uint32_t nd = input->ndim, mask;
	int64_t C, n, zero = 0;
	bool ok;

	if (nd < 2 || !vnpu_at_is_npu(input) || !vnpu_at_dtype_is_float(input->dtype))
		goto unsupported;
	C = input->sizes[1];
	if (!C && bn_param_ok(weight, 0) && bn_param_ok(bias, 0) &&
	    bn_param_ok(running_mean, 0) && bn_param_ok(running_var, 0)) {
		/* no channels: nothing to normalise, in any float dtype
		 * (PyTorch 1.13's CPU kernel divides by zero here, SIGFPE, so
		 * it must not fall back: group_norm of an empty batch reaches
		 * it); statistics in the CPU's accumulation dtype */
		enum vnpu_at_dtype acc = input->dtype == VNPU_AT_F64 ? VNPU_AT_F64 :
					 VNPU_AT_F32;

		r.r0 = vnpu_npu_empty(nd, input->sizes, input->dtype);
		r.r1 = vnpu_npu_empty(1, &zero, acc);
		r.r2 = vnpu_npu_empty(1, &zero, acc);
		goto out;
	}
	if (!npk_f32_float(input->dtype))
		goto unsupported;
	n = C ? vnpu_at_numel(input) / C : 0;
	if (!C || n < 2 || !bn_param_ok(weight, C) || !bn_param_ok(bias, C) ||
	    !bn_param_ok(running_mean, C) || !bn_param_ok(running_var, C) ||
	    (!training && (!running_mean || !running_var)) ||
	    !(eps >= 0) || !isfinite(eps) || !isfinite(momentum))
		goto unsupported;
	mask = ((1u << nd) - 1) & ~2u;
	/* statistics and arithmetic in float32, as the CPU's for f16/bf16 */
	x = npk_operand(input, VNPU_AT_F32);
	epst = x ? npk_scalar(eps, VNPU_AT_F32) : NULL;
	if (!epst)
		goto out;
	if (training) {
		mean = npk_reduce(name, VNPU_REDUCE_MEAN, x, mask, true);
		diff = mean ? npk_binary(name, VNPU_BINARY_SUB, x, mean,
					 VNPU_AT_F32, 1.0) : NULL;
		tmp = diff ? npk_binary(name, VNPU_BINARY_MUL, diff, diff,
					VNPU_AT_F32, 1.0) : NULL;
		var = tmp ? npk_reduce(name, VNPU_REDUCE_MEAN, tmp, mask, true) :
			    NULL;
		vnpu_at_release(tmp);
	} else {
		tmp = channel_view(running_mean, nd);
		diff = tmp ? npk_binary(name, VNPU_BINARY_SUB, x, tmp,
					VNPU_AT_F32, 1.0) : NULL;
		vnpu_at_release(tmp);
		tmp = diff ? channel_view(running_var, nd) : NULL;
		var = tmp ? npk_operand(tmp, VNPU_AT_F32) : NULL;
		vnpu_at_release(tmp);
	}
	ve = var ? npk_binary(name, VNPU_BINARY_ADD, var, epst, VNPU_AT_F32,
			      1.0) : NULL;
	inv = ve ? npk_unary(name, VNPU_UNARY_RSQRT, ve) : NULL;
	y = inv ? npk_binary(name, VNPU_BINARY_MUL, diff, inv, VNPU_AT_F32,
			     1.0) : NULL;
	y = bn_affine(name, y, weight, VNPU_BINARY_MUL, nd);
	y = bn_affine(name, y, bias, VNPU_BINARY_ADD, nd);
	/* in the memory format the input suggests (channels_last or
	 * contiguous), as PyTorch's batch norm kernels give it */
	r.r0 = npk_like_format(name, npk_to(y, input->dtype), input);
	y = NULL;
	ok = r.r0 != NULL;
	if (ok && training) {
		struct vnpu_at_tensor *m = flat_c(vnpu_at_retain(mean), C);
		struct vnpu_at_tensor *v = flat_c(vnpu_at_retain(var), C);

		ok = m && v &&
		     (!running_mean ||
		      bn_update(name, running_mean, m, momentum, momentum)) &&
		     (!running_var ||
		      bn_update(name, running_var, v, momentum,
				momentum * (double)n / (double)(n - 1)));
		vnpu_at_release(m);
		vnpu_at_release(v);
		r.r1 = ok ? flat_c(vnpu_at_retain(mean), C) : NULL;
		r.r2 = ok ? flat_c(vnpu_at_retain(inv), C) : NULL;
	} else if (ok) {
		/* eval: empty saved statistics, as PyTorch's CPU kernel */
		r.r1 = vnpu_npu_empty(1, &zero, VNPU_AT_F32);
		r.r2 = vnpu_npu_empty(1, &zero, VNPU_AT_F32);
	}
out:
	vnpu_at_release(x);
	vnpu_at_release(epst);
	vnpu_at_release(mean);
	vnpu_at_release(diff);
	vnpu_at_release(var);
	vnpu_at_release(ve);
	vnpu_at_release(inv);
	if (!r.r0 || !r.r1 || !r.r2) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		vnpu_at_release(r.r2);
		return (struct vnpu_ret_native_batch_norm){ 0 };
	}
	return r;

unsupported:
	return (struct vnpu_ret_native_batch_norm){ .r0 = vnpu_npu_unsupported() };
}
