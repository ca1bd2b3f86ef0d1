/* SPDX-License-Identifier: MIT */
/*
 * CPU reference kernels: losses and their backward ops (docs/dispatcher.md).
 * Reduction codes as PyTorch's at::Reduction: 0 none, 1 mean, 2 sum. Sums
 * accumulate in double.
 */
#include "../kernel_common.h"

static bool reduction_ok(const char *op, int64_t reduction)
{
	if (reduction >= 0 && reduction <= 2)
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: %lld is not a valid value for reduction", op,
			  (long long)reduction);
	return false;
}

static bool float_ok(const char *op, const struct vnpu_at_tensor *t)
{
	if (vnpu_at_dtype_is_float(t->dtype))
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: \"%s\" not implemented for '%s'", op, op + 6,
			  vnpu_at_dtype_name(t->dtype));
	return false;
}

struct vnpu_at_tensor *vnpu_cpu_mse_loss(vnpu_keyset_t ks,
					 struct vnpu_at_tensor *self,
					 struct vnpu_at_tensor *target,
					 int64_t reduction)
{
	static const char op[] = "aten::mse_loss";
	const struct vnpu_at_tensor *in[2] = { self, target };
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, target);
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	double sum = 0.0;
	uint32_t nd;

	(void)ks;
	if (!reduction_ok(op, reduction) || !float_ok(op, self) ||
	    !float_ok(op, target) ||
	    !vnpu_at_broadcast_shapes(op, 2, in, &nd, sizes))
		return NULL;
	out = reduction == 0 ? vnpu_at_empty(nd, sizes, dt, VNPU_AT_DEV_CPU) :
			       vnpu_at_empty(0, NULL, dt, VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	if (!vnpu_at_iter_init(&it, nd, sizes, 3,
			(const struct vnpu_at_tensor *[]){
				reduction == 0 ? out : self, self, target })) {
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it)) {
		double dv = vnpu_at_load(self->dtype, it.p[1]) -
			    vnpu_at_load(target->dtype, it.p[2]);

		if (reduction == 0)
			vnpu_at_store(dt, it.p[0], dv * dv);
		else
			sum += dv * dv;
	}
	if (reduction != 0) {
		int64_t n = vnpu_at_shape_numel(nd, sizes);

		vnpu_at_store(dt, vnpu_at_data(out),
			      reduction == 1 ? sum / (double)n : sum);
	}
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_mse_loss_backward(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *grad_output,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_tensor *target,
						  int64_t reduction)
{
	static const char op[] = "aten::mse_loss_backward";
	const struct vnpu_at_tensor *in[3] = { grad_output, self, target };
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, target);
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	double norm;
	uint32_t nd;

	(void)ks;
	if (!reduction_ok(op, reduction) || !float_ok(op, self) ||
	    !float_ok(op, target) ||
	    !vnpu_at_broadcast_shapes(op, 3, in, &nd, sizes))
		return NULL;
	/* d/dx mean((x - t)^2) = 2 (x - t) / n; grad_output broadcasts (it
	 * is 0-dim for mean and sum). */
	norm = reduction == 1 ? 2.0 / (double)vnpu_at_numel(self) : 2.0;
	out = vnpu_at_empty(nd, sizes, dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, nd, sizes, 4,
			(const struct vnpu_at_tensor *[]){ out, grad_output,
							   self, target })) {
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it))
		vnpu_at_store(dt, it.p[0],
			      norm * (vnpu_at_load(self->dtype, it.p[2]) -
				      vnpu_at_load(target->dtype, it.p[3])) *
				      vnpu_at_load(grad_output->dtype, it.p[1]));
	return out;
}

/* ---- nll_loss ------------------------------------------------------------------ */

/* Shared checks of nll_loss_forward/backward: self [N, C] or [C], target
 * [N] or [] of int64, weight [C]; n and C out. */
static bool nll_check(const char *op, const struct vnpu_at_tensor *self,
		      const struct vnpu_at_tensor *target,
		      const struct vnpu_at_tensor *weight, int64_t reduction,
		      int64_t *n, int64_t *C)
{
	if (!reduction_ok(op, reduction) || !float_ok(op, self))
		return false;
	if (self->ndim < 1 || self->ndim > 2) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: input tensor should be 1D or 2D", op);
		return false;
	}
	if (target->ndim > 1) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: 0D or 1D target tensor expected, multi-target not supported",
			op);
		return false;
	}
	if (target->dtype != VNPU_AT_I64 && target->dtype != VNPU_AT_U8) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: expected scalar type Long but found %s", op,
			vnpu_at_dtype_name(target->dtype));
		return false;
	}
	*n = self->ndim == 2 ? self->sizes[0] : 1;
	*C = self->sizes[self->ndim - 1];
	if ((self->ndim == 2) != (target->ndim == 1) ||
	    (target->ndim == 1 && target->sizes[0] != *n)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Expected input batch_size (%lld) to match target batch_size (%lld).",
			op, (long long)*n,
			(long long)(target->ndim ? target->sizes[0] : 1));
		return false;
	}
	if (weight && (weight->ndim != 1 || weight->sizes[0] != *C)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: weight tensor should be defined either for all %lld classes or no classes but got weight tensor of shape: [%lld]",
			op, (long long)*C, (long long)vnpu_at_numel(weight));
		return false;
	}
	return true;
}

static const char *at2(const struct vnpu_at_tensor *t, int64_t i, int64_t j)
{
	int64_t off = t->ndim == 2 ? i * t->strides[0] + j * t->strides[1] :
				     j * t->strides[0];

	return (const char *)vnpu_at_data(t) +
	       off * (int64_t)vnpu_at_dtype_size(t->dtype);
}

static double weight_of(const struct vnpu_at_tensor *w, int64_t c)
{
	return w ? vnpu_at_load(w->dtype, at2(w, 0, c)) : 1.0;
}

/* Target of row i, checked against [0, C) unless it is ignore_index. */
static bool nll_target(const char *op, const struct vnpu_at_tensor *target,
		       int64_t i, int64_t C, int64_t ignore_index,
		       int64_t *t)
{
	*t = kc_load_index(target, i);
	if (*t == ignore_index || (*t >= 0 && *t < C))
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_INDEX, "%s: Target %lld is out of bounds.",
			  op, (long long)*t);
	return false;
}

struct vnpu_ret_nll_loss_forward vnpu_cpu_nll_loss_forward(vnpu_keyset_t ks,
							   struct vnpu_at_tensor *self,
							   struct vnpu_at_tensor *target,
							   struct vnpu_at_tensor *weight,
							   int64_t reduction,
							   int64_t ignore_index)
{
	static const char op[] = "aten::nll_loss_forward";
	struct vnpu_ret_nll_loss_forward r = { 0 };
	enum vnpu_at_dtype dt = self->dtype;
	double sum = 0.0, wsum = 0.0;
	int64_t n, C;

	(void)ks;
	if (!nll_check(op, self, target, weight, reduction, &n, &C))
		return r;
	for (int64_t i = 0; i < n; i++) {
		int64_t t;

		if (!nll_target(op, target, i, C, ignore_index, &t))
			return r;
	}
	if (reduction == 0 && self->ndim == 2)
		r.r0 = vnpu_at_empty(1, &n, dt, VNPU_AT_DEV_CPU);
	else
		r.r0 = vnpu_at_empty(0, NULL, dt, VNPU_AT_DEV_CPU);
	r.r1 = vnpu_at_empty(0, NULL, dt, VNPU_AT_DEV_CPU);
	if (!r.r0 || !r.r1) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		return (struct vnpu_ret_nll_loss_forward){ 0 };
	}
	for (int64_t i = 0; i < n; i++) {
		int64_t t = kc_load_index(target, i);
		double w, v;

		if (t == ignore_index) {
			w = 0.0;
			v = 0.0;
		} else {
			w = weight_of(weight, t);
			v = -w * vnpu_at_load(dt, at2(self, i, t));
		}
		if (reduction == 0)
			vnpu_at_store(dt, (char *)vnpu_at_data(r.r0) +
				      i * (int64_t)vnpu_at_dtype_size(dt), v);
		sum += v;
		wsum += w;
	}
	if (reduction != 0)
		/* mean divides by the total weight (0/0 = NaN when every
		 * target is ignored, as PyTorch). */
		vnpu_at_store(dt, vnpu_at_data(r.r0),
			      reduction == 1 ? sum / wsum : sum);
	/* PyTorch leaves total_weight 0 for per-row losses only; a 1-D
	 * input takes the general path (w[t]) */
	vnpu_at_store(dt, vnpu_at_data(r.r1),
		      reduction == 0 && self->ndim == 2 ? 0.0 : wsum);
	return r;
}

struct vnpu_at_tensor *vnpu_cpu_nll_loss_backward(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *grad_output,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_tensor *target,
						  struct vnpu_at_tensor *weight,
						  int64_t reduction,
						  int64_t ignore_index,
						  struct vnpu_at_tensor *total_weight)
{
	static const char op[] = "aten::nll_loss_backward";
	enum vnpu_at_dtype dt = self->dtype;
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	double tw;
	int64_t n, C;

	(void)ks;
	if (!nll_check(op, self, target, weight, reduction, &n, &C))
		return NULL;
	if (vnpu_at_numel(total_weight) != 1)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: expected total_weight to be a single element tensor, got: %lld elements",
			op, (long long)vnpu_at_numel(total_weight));
	if (reduction == 0 && self->ndim == 2 &&
	    (grad_output->ndim != 1 || grad_output->sizes[0] != n))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Expected a tensor of dimension 1 and tensor.size[0] == %lld but got: dimension %u and tensor.size[0] == %lld",
			op, (long long)n, grad_output->ndim,
			(long long)(grad_output->ndim ? grad_output->sizes[0] : 1));
	if ((reduction != 0 || self->ndim == 1) && vnpu_at_numel(grad_output) != 1)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Expected a single element grad_output tensor, but got: %lld elements",
			op, (long long)vnpu_at_numel(grad_output));
	for (int64_t i = 0; i < n; i++) {
		int64_t t;

		if (!nll_target(op, target, i, C, ignore_index, &t))
			return NULL;
	}
	tw = vnpu_at_load(total_weight->dtype, vnpu_at_data(total_weight));
	out = vnpu_at_empty(self->ndim, self->sizes, dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, out->ndim, out->sizes, 1,
			(const struct vnpu_at_tensor *[]){ out })) {
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it))
		vnpu_at_store(dt, it.p[0], 0.0);
	for (int64_t i = 0; i < n; i++) {
		int64_t t = kc_load_index(target, i);
		double g;

		if (t == ignore_index)
			continue;
		g = reduction == 0 && self->ndim == 2 ?
			vnpu_at_load(grad_output->dtype,
				     at2(grad_output, 0, i)) :
			vnpu_at_load(grad_output->dtype,
				     vnpu_at_data(grad_output));
		g *= -weight_of(weight, t);
		if (reduction == 1)
			g /= tw;
		vnpu_at_store(dt, (char *)at2(out, i, t), g);
	}
	return out;
}
