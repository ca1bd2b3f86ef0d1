/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1): mse_loss and its backward on BINARY and
 * REDUCE (docs/dispatcher.md). nll_loss needs a gather the device does not
 * have: it falls back to the CPU.
 */
#include "npu_ops_common.h"

static bool mse_ok(const struct vnpu_at_tensor *self,
		   const struct vnpu_at_tensor *target, int64_t reduction)
{
	return reduction >= 0 && reduction <= 2 && npk_float(self->dtype) &&
	       npk_float(target->dtype) &&
	       npk_float(vnpu_at_result_type(self, target)) &&
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
		return vnpu_fallback_mse_loss(ks, self, target, reduction);
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
	    !npk_float(grad_output->dtype))
		return vnpu_fallback_mse_loss_backward(ks, grad_output, self,
						       target, reduction);
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
