/* SPDX-License-Identifier: MIT */
/*
 * CPU reference kernels: softmax and log-softmax (+ backward), layer norm,
 * batch norm (docs/dispatcher.md). Rows are walked through a reduction
 * plan (kernel_common.h), so any strides work; statistics are computed in
 * double. f16/bf16 inputs keep their statistics (mean, rstd) in float32,
 * as the device does and as PyTorch's mixed-type norms.
 */
#include <stdio.h>

#include "../kernel_common.h"

/* Address of element i (row-major) of a 1-D strided tensor. */
static char *elem1(const struct vnpu_at_tensor *t, int64_t i)
{
	int64_t st = t->ndim ? t->strides[0] : 0;

	return (char *)vnpu_at_data(t) +
	       i * st * (int64_t)vnpu_at_dtype_size(t->dtype);
}

static enum vnpu_at_dtype stat_dtype(enum vnpu_at_dtype dt)
{
	return dt == VNPU_AT_F16 || dt == VNPU_AT_BF16 ? VNPU_AT_F32 : dt;
}

/* ---- softmax ------------------------------------------------------------------ */

static struct vnpu_at_tensor *softmax_impl(const char *op,
					   struct vnpu_at_tensor *self,
					   int64_t dim, bool half_to_float,
					   bool log_out)
{
	struct kc_reduce_plan ip, op_;
	enum vnpu_at_dtype dt = self->dtype, odt;
	struct vnpu_at_tensor *out;
	int64_t d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	uint32_t mask;
	const char *in;
	char *o;

	if (d < 0)
		return NULL;
	if (!vnpu_at_dtype_is_float(dt))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: \"softmax_lastdim_kernel_impl\" not implemented for '%s'",
			op, vnpu_at_dtype_name(dt));
	if (half_to_float && dt != VNPU_AT_F16)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: conversion is supported for Half type only", op);
	odt = half_to_float ? VNPU_AT_F32 : dt;
	out = vnpu_at_empty(self->ndim, self->sizes, odt, VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	mask = self->ndim ? 1u << d : 0;
	kc_reduce_plan_init(&ip, self, mask, true);
	kc_reduce_plan_init(&op_, out, mask, true);
	in = vnpu_at_data(self);
	o = vnpu_at_data(out);
	for (int64_t r = 0; r < ip.nout; r++) {
		const char *row = in + kc_reduce_outer(&ip, r);
		char *orow = o + kc_reduce_outer(&op_, r);
		double max = -INFINITY, sum = 0.0;

		for (int64_t j = 0; j < ip.nred_elems; j++) {
			double v = vnpu_at_load(dt, row + kc_reduce_inner(&ip, j));

			if (v > max || isnan(v))
				max = v;
		}
		for (int64_t j = 0; j < ip.nred_elems; j++)
			sum += exp(vnpu_at_load(dt, row + kc_reduce_inner(&ip, j)) -
				   max);
		for (int64_t j = 0; j < ip.nred_elems; j++) {
			double x = vnpu_at_load(dt, row + kc_reduce_inner(&ip, j));

			vnpu_at_store(odt, orow + kc_reduce_inner(&op_, j),
				      log_out ? x - max - log(sum) :
						exp(x - max) / sum);
		}
	}
	return out;
}

struct vnpu_at_tensor *vnpu_cpu__softmax(vnpu_keyset_t ks,
					 struct vnpu_at_tensor *self,
					 int64_t dim, bool half_to_float)
{
	(void)ks;
	return softmax_impl("aten::_softmax", self, dim, half_to_float, false);
}

struct vnpu_at_tensor *vnpu_cpu__log_softmax(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     int64_t dim, bool half_to_float)
{
	(void)ks;
	return softmax_impl("aten::_log_softmax", self, dim, half_to_float,
			    true);
}

/*
 * softmax: gI = y * (g - sum(g * y)); log_softmax: gI = g - exp(y) * sum(g),
 * along dim, written in input_dtype.
 */
static struct vnpu_at_tensor *softmax_bw(const char *op,
					 struct vnpu_at_tensor *grad,
					 struct vnpu_at_tensor *output,
					 int64_t dim,
					 enum vnpu_at_dtype input_dtype,
					 bool log_out)
{
	struct kc_reduce_plan gp, yp, op_;
	struct vnpu_at_tensor *out;
	int64_t d;
	uint32_t mask;
	const char *g, *y;
	char *o;

	if (grad->ndim != output->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: grad_output and output must have the same shape",
			op);
	for (uint32_t i = 0; i < grad->ndim; i++)
		if (grad->sizes[i] != output->sizes[i])
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: grad_output and output must have the same shape",
				op);
	if (!vnpu_at_dtype_is_float(input_dtype) ||
	    !vnpu_at_dtype_is_float(grad->dtype) ||
	    !vnpu_at_dtype_is_float(output->dtype))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: expected floating point tensors and input_dtype",
			op);
	d = vnpu_at_wrap_dim(dim, grad->ndim ? grad->ndim : 1);
	if (d < 0)
		return NULL;
	out = vnpu_at_empty(grad->ndim, grad->sizes, input_dtype,
			    VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	mask = grad->ndim ? 1u << d : 0;
	kc_reduce_plan_init(&gp, grad, mask, true);
	kc_reduce_plan_init(&yp, output, mask, true);
	kc_reduce_plan_init(&op_, out, mask, true);
	g = vnpu_at_data(grad);
	y = vnpu_at_data(output);
	o = vnpu_at_data(out);
	for (int64_t r = 0; r < gp.nout; r++) {
		const char *grow = g + kc_reduce_outer(&gp, r);
		const char *yrow = y + kc_reduce_outer(&yp, r);
		char *orow = o + kc_reduce_outer(&op_, r);
		double sum = 0.0;

		for (int64_t j = 0; j < gp.nred_elems; j++) {
			double gv = vnpu_at_load(grad->dtype,
						 grow + kc_reduce_inner(&gp, j));
			double yv = vnpu_at_load(output->dtype,
						 yrow + kc_reduce_inner(&yp, j));

			sum += log_out ? gv : gv * yv;
		}
		for (int64_t j = 0; j < gp.nred_elems; j++) {
			double gv = vnpu_at_load(grad->dtype,
						 grow + kc_reduce_inner(&gp, j));
			double yv = vnpu_at_load(output->dtype,
						 yrow + kc_reduce_inner(&yp, j));

			vnpu_at_store(input_dtype,
				      orow + kc_reduce_inner(&op_, j),
				      log_out ? gv - exp(yv) * sum :
						yv * (gv - sum));
		}
	}
	return out;
}

struct vnpu_at_tensor *vnpu_cpu__softmax_backward_data(vnpu_keyset_t ks,
						       struct vnpu_at_tensor *grad_output,
						       struct vnpu_at_tensor *output,
						       int64_t dim,
						       enum vnpu_at_dtype input_dtype)
{
	(void)ks;
	return softmax_bw("aten::_softmax_backward_data", grad_output, output,
			  dim, input_dtype, false);
}

struct vnpu_at_tensor *vnpu_cpu__log_softmax_backward_data(vnpu_keyset_t ks,
							   struct vnpu_at_tensor *grad_output,
							   struct vnpu_at_tensor *output,
							   int64_t dim,
							   enum vnpu_at_dtype input_dtype)
{
	(void)ks;
	return softmax_bw("aten::_log_softmax_backward_data", grad_output,
			  output, dim, input_dtype, true);
}

/* ---- layer norm ---------------------------------------------------------------- */

static void fmt_ints(char *buf, size_t size, const int64_t *v, int64_t n)
{
	size_t len = 0;

	buf[0] = 0;
	len += (size_t)snprintf(buf, size, "[");
	for (int64_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%lld",
					i ? ", " : "", (long long)v[i]);
	if (len < size)
		snprintf(buf + len, size - len, "]");
}

/* t (weight/bias) must have exactly the normalized shape. */
static bool ln_affine_ok(const char *op, const char *what,
			 const struct vnpu_at_tensor *t,
			 struct vnpu_at_int_array shape)
{
	bool ok = t->ndim == shape.n;
	char a[160], b[160];

	for (int64_t i = 0; ok && i < shape.n; i++)
		ok = t->sizes[i] == shape.v[i];
	if (ok)
		return true;
	fmt_ints(a, sizeof(a), t->sizes, t->ndim);
	fmt_ints(b, sizeof(b), shape.v, shape.n);
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
		"%s: Expected %s to be of same shape as normalized_shape, but got %s of shape %s and normalized_shape = %s",
		op, what, what, a, b);
	return false;
}

struct vnpu_ret_native_layer_norm vnpu_cpu_native_layer_norm(vnpu_keyset_t ks,
							     struct vnpu_at_tensor *input,
							     struct vnpu_at_int_array normalized_shape,
							     struct vnpu_at_tensor *weight,
							     struct vnpu_at_tensor *bias,
							     double eps)
{
	static const char op[] = "aten::native_layer_norm";
	struct vnpu_ret_native_layer_norm r = { 0 };
	enum vnpu_at_dtype dt = input->dtype, sdt = stat_dtype(input->dtype);
	int64_t nn = normalized_shape.n, stat_sizes[VNPU_AT_MAX_DIMS];
	struct kc_reduce_plan ip, op_, wp, bp;
	uint32_t lead, mask;
	const char *in;
	char *o, *mo, *ro;
	size_t ssz = vnpu_at_dtype_size(sdt);

	(void)ks;
	if (nn < 1) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []",
			op);
		return r;
	}
	if (nn > input->ndim) {
		goto bad_shape;
	}
	lead = input->ndim - (uint32_t)nn;
	for (int64_t i = 0; i < nn; i++)
		if (input->sizes[lead + i] != normalized_shape.v[i])
			goto bad_shape;
	if (!vnpu_at_dtype_is_float(dt)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: \"LayerNormKernelImpl\" not implemented for '%s'",
			op, vnpu_at_dtype_name(dt));
		return r;
	}
	if ((weight && !ln_affine_ok(op, "weight", weight, normalized_shape)) ||
	    (bias && !ln_affine_ok(op, "bias", bias, normalized_shape)))
		return r;
	for (uint32_t i = 0; i < input->ndim; i++)
		stat_sizes[i] = i < lead ? input->sizes[i] : 1;
	r.r0 = vnpu_at_empty(input->ndim, input->sizes, dt, VNPU_AT_DEV_CPU);
	r.r1 = vnpu_at_empty(input->ndim, stat_sizes, sdt, VNPU_AT_DEV_CPU);
	r.r2 = vnpu_at_empty(input->ndim, stat_sizes, sdt, VNPU_AT_DEV_CPU);
	if (!r.r0 || !r.r1 || !r.r2) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		vnpu_at_release(r.r2);
		return (struct vnpu_ret_native_layer_norm){ 0 };
	}
	mask = (uint32_t)(((1u << input->ndim) - 1) & ~((1u << lead) - 1));
	kc_reduce_plan_init(&ip, input, mask, true);
	kc_reduce_plan_init(&op_, r.r0, mask, true);
	if (weight)
		kc_reduce_plan_init(&wp, weight, (1u << weight->ndim) - 1, true);
	if (bias)
		kc_reduce_plan_init(&bp, bias, (1u << bias->ndim) - 1, true);
	in = vnpu_at_data(input);
	o = vnpu_at_data(r.r0);
	mo = vnpu_at_data(r.r1);
	ro = vnpu_at_data(r.r2);
	for (int64_t row = 0; row < ip.nout; row++) {
		const char *x = in + kc_reduce_outer(&ip, row);
		char *y = o + kc_reduce_outer(&op_, row);
		double mean = 0.0, var = 0.0, rstd;
		int64_t n = ip.nred_elems;

		for (int64_t j = 0; j < n; j++)
			mean += vnpu_at_load(dt, x + kc_reduce_inner(&ip, j));
		mean /= (double)n;
		for (int64_t j = 0; j < n; j++) {
			double dv = vnpu_at_load(dt, x + kc_reduce_inner(&ip, j)) -
				    mean;

			var += dv * dv;
		}
		var /= (double)n;
		rstd = 1.0 / sqrt(var + eps);
		for (int64_t j = 0; j < n; j++) {
			double v = (vnpu_at_load(dt, x + kc_reduce_inner(&ip, j)) -
				    mean) * rstd;

			if (weight)
				v *= vnpu_at_load(weight->dtype,
					(const char *)vnpu_at_data(weight) +
					kc_reduce_inner(&wp, j));
			if (bias)
				v += vnpu_at_load(bias->dtype,
					(const char *)vnpu_at_data(bias) +
					kc_reduce_inner(&bp, j));
			vnpu_at_store(dt, y + kc_reduce_inner(&op_, j), v);
		}
		vnpu_at_store(sdt, mo + row * (int64_t)ssz, mean);
		vnpu_at_store(sdt, ro + row * (int64_t)ssz, rstd);
	}
	return r;

bad_shape: {
		char a[160], b[160];

		fmt_ints(a, sizeof(a), normalized_shape.v, nn);
		fmt_ints(b, sizeof(b), input->sizes, input->ndim);
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Given normalized_shape=%s, expected input with shape [*, %s], but got input of size%s",
			op, a, a + 1, b);
		return r;
	}
}

/* ---- batch norm ------------------------------------------------------------------ */

static bool bn_param_ok(const char *op, const char *what,
			const struct vnpu_at_tensor *t, int64_t C)
{
	if (!t || (t->ndim == 1 && t->sizes[0] == C))
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: %s should contain %lld elements not %lld", op,
			  what, (long long)C,
			  (long long)vnpu_at_numel(t));
	return false;
}

struct vnpu_ret_native_batch_norm vnpu_cpu_native_batch_norm(vnpu_keyset_t ks,
							     struct vnpu_at_tensor *input,
							     struct vnpu_at_tensor *weight,
							     struct vnpu_at_tensor *bias,
							     struct vnpu_at_tensor *running_mean,
							     struct vnpu_at_tensor *running_var,
							     bool training,
							     double momentum,
							     double eps)
{
	static const char op[] = "aten::native_batch_norm";
	struct vnpu_ret_native_batch_norm r = { 0 };
	enum vnpu_at_dtype dt = input->dtype, sdt = stat_dtype(input->dtype);
	struct kc_reduce_plan ip, op_;
	int64_t C, save_n;
	const char *in;
	char *o;

	(void)ks;
	if (input->ndim < 2) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: expected input with at least 2 dims (N, C, ...), but got %u-D",
			op, input->ndim);
		return r;
	}
	if (!vnpu_at_dtype_is_float(dt)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: \"batch_norm\" not implemented for '%s'", op,
			vnpu_at_dtype_name(dt));
		return r;
	}
	C = input->sizes[1];
	if (!bn_param_ok(op, "weight", weight, C) ||
	    !bn_param_ok(op, "bias", bias, C) ||
	    !bn_param_ok(op, "running_mean", running_mean, C) ||
	    !bn_param_ok(op, "running_var", running_var, C))
		return r;
	if (!training && (!running_mean || !running_var)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: running_mean and running_var must be defined in evaluation mode",
			op);
		return r;
	}
	save_n = training ? C : 0;	/* PyTorch's CPU kernel: empty in eval */
	r.r0 = vnpu_at_empty(input->ndim, input->sizes, dt, VNPU_AT_DEV_CPU);
	r.r1 = vnpu_at_empty(1, &save_n, sdt, VNPU_AT_DEV_CPU);
	r.r2 = vnpu_at_empty(1, &save_n, sdt, VNPU_AT_DEV_CPU);
	if (!r.r0 || !r.r1 || !r.r2) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		vnpu_at_release(r.r2);
		return (struct vnpu_ret_native_batch_norm){ 0 };
	}
	/* Channel c is output row c of a reduction over every other dim. */
	kc_reduce_plan_init(&ip, input, ((1u << input->ndim) - 1) & ~2u, true);
	kc_reduce_plan_init(&op_, r.r0, ((1u << input->ndim) - 1) & ~2u, true);
	in = vnpu_at_data(input);
	o = vnpu_at_data(r.r0);
	for (int64_t c = 0; c < C; c++) {
		const char *x = in + kc_reduce_outer(&ip, c);
		char *y = o + kc_reduce_outer(&op_, c);
		int64_t n = ip.nred_elems;
		double mean, invstd, w = 1.0, b = 0.0;

		if (training) {
			double sum = 0.0, ss = 0.0, var;

			for (int64_t j = 0; j < n; j++)
				sum += vnpu_at_load(dt, x + kc_reduce_inner(&ip, j));
			mean = sum / (double)n;
			for (int64_t j = 0; j < n; j++) {
				double dv = vnpu_at_load(dt,
					x + kc_reduce_inner(&ip, j)) - mean;

				ss += dv * dv;
			}
			var = ss / (double)n;
			invstd = 1.0 / sqrt(var + eps);
			vnpu_at_store(sdt, elem1(r.r1, c), mean);
			vnpu_at_store(sdt, elem1(r.r2, c), invstd);
			if (running_mean) {
				char *p = elem1(running_mean, c);

				vnpu_at_store(running_mean->dtype, p,
					(1.0 - momentum) *
					vnpu_at_load(running_mean->dtype, p) +
					momentum * mean);
			}
			if (running_var) {
				char *p = elem1(running_var, c);
				double unbiased = n > 1 ? ss / (double)(n - 1) :
							  NAN;

				vnpu_at_store(running_var->dtype, p,
					(1.0 - momentum) *
					vnpu_at_load(running_var->dtype, p) +
					momentum * unbiased);
			}
		} else {
			mean = vnpu_at_load(running_mean->dtype,
					    elem1(running_mean, c));
			invstd = 1.0 / sqrt(vnpu_at_load(running_var->dtype,
							 elem1(running_var, c)) +
					    eps);
		}
		if (weight)
			w = vnpu_at_load(weight->dtype, elem1(weight, c));
		if (bias)
			b = vnpu_at_load(bias->dtype, elem1(bias, c));
		for (int64_t j = 0; j < n; j++)
			vnpu_at_store(dt, y + kc_reduce_inner(&op_, j),
				      (vnpu_at_load(dt, x + kc_reduce_inner(&ip, j)) -
				       mean) * invstd * w + b);
	}
	return r;
}
