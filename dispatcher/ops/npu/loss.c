/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1): mse_loss and nll_loss with their backward on
 * BINARY, WHERE, CAST and REDUCE (docs/dispatcher.md). The device has no
 * gather: nll_loss picks x[n, target[n]] through a one-hot mask built by
 * one BINARY EQ of the targets against the class ids.
 */
#include "npu_ops_common.h"

static bool mse_ok(const struct vnpu_at_tensor *self,
		   const struct vnpu_at_tensor *target, int64_t reduction)
{
	return reduction >= 0 && reduction <= 2 && npk_f32_float(self->dtype) &&
	       npk_f32_float(target->dtype) &&
	       npk_f32_float(vnpu_at_result_type(self, target)) &&
	       (vnpu_at_is_npu(self) || !self->ndim) &&
	       (vnpu_at_is_npu(target) || !target->ndim);
}

struct vnpu_at_tensor *vnpu_npu_mse_loss(vnpu_keyset_t ks,
					 struct vnpu_at_tensor *self,
					 struct vnpu_at_tensor *target,
					 int64_t reduction)
{
	static const char name[] = "aten::mse_loss";
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, target);
	struct vnpu_at_tensor *d, *sq = NULL, *out;

	if (!mse_ok(self, target, reduction))
		return vnpu_npu_unsupported();
	d = npk_binary(name, VNPU_BINARY_SUB, self, target, dt, 1.0);
	if (d)
		sq = npk_binary(name, VNPU_BINARY_MUL, d, d, dt, 1.0);
	vnpu_at_release(d);
	if (!sq || reduction == 0 || !sq->ndim)
		return sq;
	/* mean of an empty loss is NaN on the device too (0 / 0) */
	out = npk_reduce(name, reduction == 1 ? VNPU_REDUCE_MEAN :
						VNPU_REDUCE_SUM,
			 sq, (1u << sq->ndim) - 1, false);
	vnpu_at_release(sq);
	return out;
}

struct vnpu_at_tensor *vnpu_npu_mse_loss_backward(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *grad_output,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_tensor *target,
						  int64_t reduction)
{
	static const char name[] = "aten::mse_loss_backward";
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, target);
	struct vnpu_at_tensor *d, *gd = NULL, *norm = NULL, *out = NULL;
	double n = reduction == 1 ? (double)vnpu_at_numel(self) : 1.0;

	if (!mse_ok(self, target, reduction) ||
	    !npk_f32_float(grad_output->dtype))
		return vnpu_npu_unsupported();
	/* 2 (x - t) g / n, with 2/n computed in double and rounded once */
	d = npk_binary(name, VNPU_BINARY_SUB, self, target, dt, 1.0);
	if (d)
		gd = npk_binary(name, VNPU_BINARY_MUL, d, grad_output, dt, 1.0);
	if (gd)
		norm = npk_scalar(2.0 / n, dt);
	if (norm)
		out = npk_binary(name, VNPU_BINARY_MUL, gd, norm, dt, 1.0);
	vnpu_at_release(d);
	vnpu_at_release(gd);
	vnpu_at_release(norm);
	return out;
}

/* ---- nll_loss ---------------------------------------------------------------------- */

/* Shapes and dtypes the device path takes (else the CPU kernel judges). */
static bool nll_ok(const struct vnpu_at_tensor *self,
		   const struct vnpu_at_tensor *target,
		   const struct vnpu_at_tensor *weight, int64_t reduction)
{
	int64_t n = self->ndim == 2 ? self->sizes[0] : 1;

	if (reduction < 0 || reduction > 2 || !npk_f32_float(self->dtype) ||
	    (self->ndim != 1 && self->ndim != 2) || !vnpu_at_is_npu(self) ||
	    !vnpu_at_is_npu(target) || target->dtype != VNPU_AT_I64 ||
	    target->ndim != self->ndim - 1 ||
	    (target->ndim && target->sizes[0] != n) ||
	    self->sizes[self->ndim - 1] > INT32_MAX)
		return false;
	return !weight ||
	       (vnpu_at_is_npu(weight) && weight->dtype == self->dtype &&
		weight->ndim == 1 && weight->sizes[0] == self->sizes[self->ndim - 1]);
}

/*
 * The per-element weights of the picked classes: [N, C] (or [C]) of
 * self's dtype holding weight[c] (1 without weight) where target[n] == c
 * and target[n] != ignore_index, else 0. Targets are checked on the host
 * first (one small copy back), as the CPU kernel reports a bad target.
 */
static struct vnpu_at_tensor *nll_mask(const char *name,
				       const struct vnpu_at_tensor *self,
				       struct vnpu_at_tensor *target,
				       struct vnpu_at_tensor *weight,
				       int64_t ignore_index)
{
	int64_t C = self->sizes[self->ndim - 1];
	enum vnpu_at_dtype dt = self->dtype;
	struct vnpu_at_tensor *ht, *cls, *dcls, *t32, *tv, *eq, *w, *zero;
	struct vnpu_at_tensor *mask = NULL;
	int32_t *ids;

	ht = vnpu_op__to_copy(target, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_CPU,
			      false);
	if (!ht)
		return NULL;
	for (int64_t i = 0; i < vnpu_at_numel(ht); i++) {
		int64_t t = kc_load_index(ht, i);

		if (t != ignore_index && (t < 0 || t >= C)) {
			vnpu_at_release(ht);
			return vnpu_at_error_set(VNPU_AT_ERR_INDEX,
						 "%s: Target %lld is out of bounds.",
						 name, (long long)t);
		}
	}
	vnpu_at_release(ht);
	/* class ids, the ignored class renamed -1 so no target matches it
	 * (targets were checked to be in [0, C) or ignore_index) */
	cls = vnpu_at_empty(1, &C, VNPU_AT_I32, VNPU_AT_DEV_CPU);
	if (!cls)
		return NULL;
	ids = vnpu_at_data(cls);
	for (int64_t c = 0; c < C; c++)
		ids[c] = c == ignore_index ? -1 : (int32_t)c;
	dcls = vnpu_op__to_copy(cls, VNPU_AT_DTYPE_NONE, vnpu_npu_device(),
				false);
	vnpu_at_release(cls);
	t32 = dcls ? npk_operand(target, VNPU_AT_I32) : NULL;
	/* targets as a column [N, 1] against the ids [C] */
	tv = t32 && t32->ndim ?
		vnpu_at_view_of(t32, 2, (int64_t[]){ t32->sizes[0], 1 },
				(int64_t[]){ t32->strides[0], 0 }, t32->offset) :
		(t32 ? vnpu_at_retain(t32) : NULL);
	eq = tv ? npk_binary(name, VNPU_BINARY_EQ, tv, dcls, VNPU_AT_I32,
			     1.0) : NULL;
	w = eq ? (weight ? vnpu_at_retain(weight) : npk_scalar(1.0, dt)) : NULL;
	zero = w ? npk_scalar(0.0, dt) : NULL;
	if (zero)
		mask = npk_where(name, eq, w, zero, dt);
	vnpu_at_release(dcls);
	vnpu_at_release(t32);
	vnpu_at_release(tv);
	vnpu_at_release(eq);
	vnpu_at_release(w);
	vnpu_at_release(zero);
	return mask;
}

struct vnpu_ret_nll_loss_forward vnpu_npu_nll_loss_forward(vnpu_keyset_t ks,
							   struct vnpu_at_tensor *self,
							   struct vnpu_at_tensor *target,
							   struct vnpu_at_tensor *weight,
							   int64_t reduction,
							   int64_t ignore_index)
{
	static const char name[] = "aten::nll_loss_forward";
	struct vnpu_ret_nll_loss_forward r = { 0 };
	enum vnpu_at_dtype dt = self->dtype;
	struct vnpu_at_tensor *mask, *prod = NULL, *rows = NULL, *tot = NULL;
	struct vnpu_at_tensor *all = NULL;
	uint32_t cdim = self->ndim - 1;

	if (!nll_ok(self, target, weight, reduction))
		return (struct vnpu_ret_nll_loss_forward){ .r0 = vnpu_npu_unsupported() };
	mask = nll_mask(name, self, target, weight, ignore_index);
	if (mask)	/* w[t] * x[n, t] per row, the other entries 0 */
		prod = npk_binary(name, VNPU_BINARY_MUL, self, mask, dt, 1.0);
	if (prod)
		rows = npk_reduce(name, VNPU_REDUCE_SUM, prod, 1u << cdim, false);
	if (rows)
		tot = npk_reduce(name, VNPU_REDUCE_SUM, mask,
				 (1u << mask->ndim) - 1, false);
	if (tot && reduction == 0 && self->ndim == 2) {
		/* per row; PyTorch leaves total_weight 0 here only: a 1-D
		 * input takes the general path, total_weight = w[t] */
		r.r0 = npk_unary(name, VNPU_UNARY_NEG, rows);
		r.r1 = npk_scalar(0.0, dt);
	} else if (tot) {
		all = rows->ndim ? npk_reduce(name, VNPU_REDUCE_SUM, rows, 1, false) :
				   vnpu_at_retain(rows);
		if (all && reduction == 1) {
			/* -sum / total_weight (0 / 0 = NaN when all ignored) */
			struct vnpu_at_tensor *q = npk_binary(name,
				VNPU_BINARY_DIV, all, tot, dt, 1.0);

			r.r0 = q ? npk_unary(name, VNPU_UNARY_NEG, q) : NULL;
			vnpu_at_release(q);
		} else if (all) {
			r.r0 = npk_unary(name, VNPU_UNARY_NEG, all);
		}
		r.r1 = r.r0 ? vnpu_at_retain(tot) : NULL;
	}
	vnpu_at_release(mask);
	vnpu_at_release(prod);
	vnpu_at_release(rows);
	vnpu_at_release(tot);
	vnpu_at_release(all);
	if (!r.r0 || !r.r1) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		return (struct vnpu_ret_nll_loss_forward){ 0 };
	}
	return r;
}

struct vnpu_at_tensor *vnpu_npu_nll_loss_backward(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *grad_output,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_tensor *target,
						  struct vnpu_at_tensor *weight,
						  int64_t reduction,
						  int64_t ignore_index,
						  struct vnpu_at_tensor *total_weight)
{
	static const char name[] = "aten::nll_loss_backward";
	enum vnpu_at_dtype dt = self->dtype;
	struct vnpu_at_tensor *mask, *picked = NULL, *zero = NULL, *sel = NULL;
	struct vnpu_at_tensor *g = NULL, *scaled = NULL, *q = NULL, *neg = NULL;
	struct vnpu_at_tensor *out = NULL;
	bool per_row = reduction == 0 && self->ndim == 2;

	if (!nll_ok(self, target, weight, reduction) ||
	    !npk_f32_float(grad_output->dtype) ||
	    vnpu_at_numel(total_weight) != 1 ||
	    vnpu_npu_dtype(total_weight->dtype) < 0 ||
	    (per_row ? grad_output->ndim != 1 ||
			       grad_output->sizes[0] != self->sizes[0] :
		       vnpu_at_numel(grad_output) != 1))
		return vnpu_npu_unsupported();
	/* PyTorch writes -w[t] * g (/ total_weight) at each picked element
	 * and leaves every other element 0, even where g or the quotient is
	 * NaN or inf (all targets ignored: 0/0): hence the where */
	mask = nll_mask(name, self, target, weight, ignore_index);
	picked = mask ? nll_mask(name, self, target, NULL, ignore_index) : NULL;
	zero = picked ? npk_scalar(0.0, dt) : NULL;
	sel = zero ? npk_binary(name, VNPU_BINARY_NE, picked, zero, dt, 1.0) :
		     NULL;
	/* grad_output per row as a column [N, 1], or a single element */
	if (sel)
		g = per_row ?
			vnpu_at_view_of(grad_output, 2,
					(int64_t[]){ grad_output->sizes[0], 1 },
					(int64_t[]){ grad_output->strides[0], 0 },
					grad_output->offset) :
			vnpu_at_view_of(grad_output, 0, NULL, NULL,
					grad_output->offset);
	if (g && reduction == 1)
		q = npk_binary(name, VNPU_BINARY_DIV, g, total_weight, dt, 1.0);
	else if (g)
		q = vnpu_at_retain(g);
	if (q)
		scaled = npk_binary(name, VNPU_BINARY_MUL, mask, q, dt, 1.0);
	neg = scaled ? npk_unary(name, VNPU_UNARY_NEG, scaled) : NULL;
	if (neg)
		out = npk_where(name, sel, neg, zero, dt);
	vnpu_at_release(mask);
	vnpu_at_release(picked);
	vnpu_at_release(zero);
	vnpu_at_release(sel);
	vnpu_at_release(g);
	vnpu_at_release(scaled);
	vnpu_at_release(q);
	vnpu_at_release(neg);
	return out;
}
