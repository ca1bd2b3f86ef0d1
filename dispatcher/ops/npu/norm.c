/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1): softmax and log-softmax on SOFTMAX, their
 * backward on BINARY/REDUCE/UNARY, layer norm on LAYER_NORM
 * (docs/dispatcher.md). half_to_float, float64 and invalid arguments run
 * the CPU fallback. Batch norm has no device kernel: it falls back.
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
	if (half_to_float || !npk_float(self->dtype) || !dim_ok(self, dim))
		return vnpu_fallback__softmax(ks, self, dim, half_to_float);
	return softmax("aten::_softmax", self, dim, false);
}

struct vnpu_at_tensor *vnpu_npu__log_softmax(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     int64_t dim, bool half_to_float)
{
	if (half_to_float || !npk_float(self->dtype) || !dim_ok(self, dim))
		return vnpu_fallback__log_softmax(ks, self, dim, half_to_float);
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
	enum vnpu_at_dtype dt = g->dtype;
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
	return npk_float(g->dtype) && npk_float(y->dtype) &&
	       npk_float(input_dtype) && same_shape(g, y) && dim_ok(g, dim) &&
	       vnpu_at_is_npu(g) && vnpu_at_is_npu(y);
}

struct vnpu_at_tensor *vnpu_npu__softmax_backward_data(vnpu_keyset_t ks,
						       struct vnpu_at_tensor *grad_output,
						       struct vnpu_at_tensor *output,
						       int64_t dim,
						       enum vnpu_at_dtype input_dtype)
{
	if (!softmax_bw_ok(grad_output, output, dim, input_dtype))
		return vnpu_fallback__softmax_backward_data(ks, grad_output,
							    output, dim,
							    input_dtype);
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
		return vnpu_fallback__log_softmax_backward_data(ks, grad_output,
								output, dim,
								input_dtype);
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

	if (nn < 1 || nn > input->ndim || !npk_float(input->dtype) ||
	    !(eps >= 0) || !isfinite(eps) || !vnpu_at_is_npu(input) ||
	    !affine_ok(weight, input, normalized_shape) ||
	    !affine_ok(bias, input, normalized_shape))
		goto fallback;
	lead = input->ndim - (uint32_t)nn;
	for (int64_t i = 0; i < nn; i++)
		if (input->sizes[lead + i] != normalized_shape.v[i] ||
		    !normalized_shape.v[i])
			goto fallback;
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

fallback:
	return vnpu_fallback_native_layer_norm(ks, input, normalized_shape,
					       weight, bias, eps);
}
