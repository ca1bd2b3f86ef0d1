/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1): bmm, addmm, baddbmm and addbmm on GEMM
 * (docs/dispatcher.md).
 * Format-aware as torch_npu: an operand whose storage is FRACTAL_NZ (a
 * whole base, e.g. a weight cast with npu_format_cast) goes to GEMM as it
 * is; a transposed view (x.t(), w.transpose(1, 2)) becomes trans_a/trans_b
 * instead of a copy; addmm's 1-D bias is GEMM's fused bias.
 */
#include "npu_ops_common.h"

/*
 * The GEMM operand for t (rank 2 or 3): t itself if it is a whole
 * FRACTAL_NZ base or a plain strided matrix; the row-major transpose with
 * *trans set when t is a column-major view; a plain copy of other internal
 * formats.
 */
static bool gemm_operand(struct vnpu_at_tensor *t, struct vnpu_at_tensor **use,
			 uint32_t *trans)
{
	uint32_t nd = t->ndim;
	int fmt = vnpu_npu_format_of(t);

	*trans = 0;
	if (fmt == VNPU_FORMAT_FRACTAL_NZ && vnpu_npu_is_whole_base(t)) {
		*use = vnpu_at_retain(t);
		return true;
	}
	if (fmt != VNPU_FORMAT_ND && fmt != VNPU_FORMAT_NCHW) {
		*use = vnpu_npu_plain(t);
		return *use != NULL;
	}
	if (t->strides[nd - 2] == 1 && t->sizes[nd - 2] > 1 &&
	    t->sizes[nd - 1] > 1) {
		int64_t sz[3], st[3];

		memcpy(sz, t->sizes, nd * sizeof(int64_t));
		memcpy(st, t->strides, nd * sizeof(int64_t));
		sz[nd - 2] = t->sizes[nd - 1];
		sz[nd - 1] = t->sizes[nd - 2];
		st[nd - 2] = t->strides[nd - 1];
		st[nd - 1] = t->strides[nd - 2];
		*use = vnpu_at_view_of(t, nd, sz, st, t->offset);
		*trans = 1;
		return *use != NULL;
	}
	*use = vnpu_at_retain(t);
	return true;
}

/*
 * out = alpha * a @ b + beta * out + bias (bias may be NULL; beta != 0
 * reads out). a, b, out of one float dtype.
 */
static bool gemm(const char *name, struct vnpu_at_tensor *a,
		 struct vnpu_at_tensor *b, struct vnpu_at_tensor *out,
		 struct vnpu_at_tensor *bias, double alpha, double beta)
{
	struct vnpu_kp_gemm p = { .alpha = (float)alpha, .beta = (float)beta };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *x = NULL, *y = NULL;
	int64_t k = a->sizes[a->ndim - 1];
	bool ok;

	ok = gemm_operand(a, &x, &p.trans_a) &&
	     gemm_operand(b, &y, &p.trans_b) &&
	     vnpu_npu_arg(&l, x, VNPU_ACCESS_READ, &p.a) &&
	     vnpu_npu_arg(&l, y, VNPU_ACCESS_READ, &p.b) &&
	     vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE |
			  (beta != 0.0 ? VNPU_ACCESS_READ : 0), &p.out);
	if (ok && bias) {
		p.has_bias = 1;
		ok = vnpu_npu_arg(&l, bias, VNPU_ACCESS_READ, &p.bias);
	}
	ok = ok && vnpu_npu_launch(name, &l, "gemm", &p, sizeof(p),
				   vnpu_at_numel(out) * (k ? k : 1));
	vnpu_at_release(x);
	vnpu_at_release(y);
	return ok;
}

/* a @ b with an empty inner dim is all zeros. */
static bool fill_zero(struct vnpu_at_tensor *out)
{
	struct vnpu_at_tensor *r = vnpu_op_fill__Scalar(out, VNPU_AT_INT(0));

	vnpu_at_release(r);
	return r != NULL;
}

struct vnpu_at_tensor *vnpu_npu_bmm(vnpu_keyset_t ks,
				    struct vnpu_at_tensor *self,
				    struct vnpu_at_tensor *mat2)
{
	struct vnpu_at_tensor *out;

	if (!vnpu_at_check_same_device("aten::bmm", 2,
				       (const struct vnpu_at_tensor *[]){ self, mat2 }))
		return NULL;
	if (self->ndim != 3 || mat2->ndim != 3 ||
	    mat2->sizes[0] != self->sizes[0] ||
	    mat2->sizes[1] != self->sizes[2] || self->dtype != mat2->dtype ||
	    !npk_f32_float(self->dtype) || !vnpu_at_is_npu(self) ||
	    !vnpu_at_is_npu(mat2))
		return vnpu_npu_unsupported();
	out = vnpu_npu_empty(3, (int64_t[]){ self->sizes[0], self->sizes[1],
					     mat2->sizes[2] },
			     self->dtype);
	if (!out || !vnpu_at_numel(out))
		return out;
	if (!(self->sizes[2] ? gemm("aten::bmm", self, mat2, out, NULL, 1.0,
				    0.0) : fill_zero(out))) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

struct vnpu_at_tensor *vnpu_npu_addmm(vnpu_keyset_t ks,
				      struct vnpu_at_tensor *self,
				      struct vnpu_at_tensor *mat1,
				      struct vnpu_at_tensor *mat2,
				      struct vnpu_at_scalar beta,
				      struct vnpu_at_scalar alpha)
{
	static const char name[] = "aten::addmm";
	double b = vnpu_at_scalar_to_double(beta);
	double a = vnpu_at_scalar_to_double(alpha);
	struct vnpu_at_tensor *out, *bias = NULL;
	int64_t M, N;
	bool ok;

	if (!vnpu_at_check_same_device(name, 3,
				       (const struct vnpu_at_tensor *[]){ self, mat1, mat2 }))
		return NULL;
	if (mat1->ndim != 2 || mat2->ndim != 2 ||
	    mat1->sizes[1] != mat2->sizes[0] || mat1->dtype != mat2->dtype ||
	    self->dtype != mat1->dtype || !npk_f32_float(self->dtype) ||
	    self->ndim > 2 || !vnpu_at_is_npu(mat1) || !vnpu_at_is_npu(mat2) ||
	    !vnpu_at_is_npu(self))
		return vnpu_npu_unsupported();
	M = mat1->sizes[0];
	N = mat2->sizes[1];
	if ((self->ndim >= 1 && self->sizes[self->ndim - 1] != N &&
	     self->sizes[self->ndim - 1] != 1) ||
	    (self->ndim == 2 && self->sizes[0] != M && self->sizes[0] != 1))
		return vnpu_npu_unsupported();
	out = vnpu_npu_empty(2, (int64_t[]){ M, N }, self->dtype);
	if (!out || !vnpu_at_numel(out))
		return out;
	if (b == 1.0 && self->ndim == 1 && self->sizes[0] == N &&
	    mat1->sizes[1]) {
		/* nn.Linear's shape: the bias row fused into GEMM */
		bias = vnpu_npu_plain(self);
		ok = bias && gemm(name, mat1, mat2, out, bias, a, 0.0);
		vnpu_at_release(bias);
	} else if (b != 0.0) {
		/* out = self broadcast (one CAST), then GEMM with beta */
		ok = vnpu_npu_copy(name, out, self);
		if (ok && mat1->sizes[1])
			ok = gemm(name, mat1, mat2, out, NULL, a, b);
		else if (ok && b != 1.0) {
			struct vnpu_at_tensor *s = npk_scalar(b, self->dtype);
			struct vnpu_at_tensor *r = s ? npk_binary(name,
				VNPU_BINARY_MUL, out, s, self->dtype, 1.0) : NULL;

			vnpu_at_release(s);
			vnpu_at_release(out);
			return r;
		}
	} else {
		ok = mat1->sizes[1] ? gemm(name, mat1, mat2, out, NULL, a, 0.0) :
				      fill_zero(out);
	}
	if (!ok) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

/*
 * A product of no terms: out (self's dtype, the result's shape) = beta *
 * self broadcast, zeros when beta is 0. Consumes out.
 */
static struct vnpu_at_tensor *beta_self(const char *name,
					struct vnpu_at_tensor *out,
					struct vnpu_at_tensor *self, double b)
{
	struct vnpu_at_tensor *s, *r;

	if (b == 0.0 ? !fill_zero(out) : !vnpu_npu_copy(name, out, self)) {
		vnpu_at_release(out);
		return NULL;
	}
	if (b == 0.0 || b == 1.0)
		return out;
	s = npk_scalar(b, self->dtype);
	r = s ? npk_binary(name, VNPU_BINARY_MUL, out, s, self->dtype, 1.0) :
		NULL;
	vnpu_at_release(s);
	vnpu_at_release(out);
	return r;
}

/*
 * baddbmm: out = self broadcast to [B, M, N] (one copy), then one batched
 * GEMM with beta and alpha, so a half result is rounded once, as
 * PyTorch's. addbmm (summed): the batch is one reduction of B x K terms,
 * [M, B x K] @ [B x K, N] (batch1 copied so that its batch and K are
 * adjacent), one GEMM onto self broadcast to [M, N]; PyTorch's CPU
 * rounds a half result once per batch instead.
 */
static struct vnpu_at_tensor *batch_matmul(const char *name, bool summed,
					   vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *batch1,
					   struct vnpu_at_tensor *batch2,
					   struct vnpu_at_scalar beta,
					   struct vnpu_at_scalar alpha)
{
	double b = vnpu_at_scalar_to_double(beta);
	double a = vnpu_at_scalar_to_double(alpha);
	int64_t B, M, K, N;
	struct vnpu_at_tensor *out, *x = NULL, *y = NULL;
	bool ok;

	if (!vnpu_at_check_same_device(name, 3,
				       (const struct vnpu_at_tensor *[]){ self, batch1, batch2 }) ||
	    !vnpu_batch_matmul_check(name, summed, self, batch1, batch2))
		return NULL;
	if (!npk_f32_float(self->dtype) || !vnpu_at_is_npu(self) ||
	    !vnpu_at_is_npu(batch1) || !vnpu_at_is_npu(batch2))
		return vnpu_npu_unsupported();
	B = batch1->sizes[0];
	M = batch1->sizes[1];
	K = batch1->sizes[2];
	N = batch2->sizes[2];
	out = summed ? vnpu_npu_empty(2, (int64_t[]){ M, N }, self->dtype) :
		       vnpu_npu_empty(3, (int64_t[]){ B, M, N }, self->dtype);
	if (!out || !vnpu_at_numel(out))
		return out;
	if (B * K == 0)
		return beta_self(name, out, self, b);
	if (summed) {
		struct vnpu_at_tensor *p = vnpu_op_permute(batch1, VNPU_AT_INTS(1, 0, 2));

		x = p ? vnpu_op_reshape(p, VNPU_AT_INTS(M, B * K)) : NULL;
		y = x ? vnpu_op_reshape(batch2, VNPU_AT_INTS(B * K, N)) : NULL;
		vnpu_at_release(p);
	} else {
		x = vnpu_at_retain(batch1);
		y = vnpu_at_retain(batch2);
	}
	ok = y != NULL;
	/* beta 0 leaves self out, its NaN and inf too */
	if (ok && b != 0.0)
		ok = vnpu_npu_copy(name, out, self);
	ok = ok && gemm(name, x, y, out, NULL, a, b);
	vnpu_at_release(x);
	vnpu_at_release(y);
	if (!ok) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

struct vnpu_at_tensor *vnpu_npu_baddbmm(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *batch1,
					struct vnpu_at_tensor *batch2,
					struct vnpu_at_scalar beta,
					struct vnpu_at_scalar alpha)
{
	return batch_matmul("aten::baddbmm", false, ks, self, batch1, batch2,
			    beta, alpha);
}

struct vnpu_at_tensor *vnpu_npu_addbmm(vnpu_keyset_t ks,
				       struct vnpu_at_tensor *self,
				       struct vnpu_at_tensor *batch1,
				       struct vnpu_at_tensor *batch2,
				       struct vnpu_at_scalar beta,
				       struct vnpu_at_scalar alpha)
{
	return batch_matmul("aten::addbmm", true, ks, self, batch1, batch2,
			    beta, alpha);
}

/* ---- int8: the device's qgemm ------------------------------------------ */

/* A plain operand of qgemm: t, or a plain copy of an internal format. */
static struct vnpu_at_tensor *qgemm_operand(struct vnpu_at_tensor *t)
{
	return vnpu_npu_format_of(t) == VNPU_FORMAT_ND ||
			       vnpu_npu_format_of(t) == VNPU_FORMAT_NCHW
		       ? vnpu_at_retain(t)
		       : vnpu_npu_plain(t);
}

/* out = a @ b (b^T when q->linear) through qgemm; a is [M, K]. */
static bool qgemm(const char *name, const struct vnpu_qmm *q,
		  struct vnpu_at_tensor *a, struct vnpu_at_tensor *b,
		  struct vnpu_at_tensor *bias, struct vnpu_at_tensor *out)
{
	struct vnpu_kp_qgemm p = { .trans_b = q->linear,
				   .a_zero_point = q->za,
				   .b_zero_point = q->zb };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *x = qgemm_operand(a);
	struct vnpu_at_tensor *y = x ? qgemm_operand(b) : NULL;
	bool ok;

	if (q->linear) {
		p.scale = q->scale;
		p.out_scale = q->out_scale;
		p.out_zero_point = q->out_zp;
		p.has_bias = bias != NULL;
	}
	ok = y && vnpu_npu_arg(&l, x, VNPU_ACCESS_READ, &p.a) &&
	     vnpu_npu_arg(&l, y, VNPU_ACCESS_READ, &p.b) &&
	     vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) &&
	     (!bias || vnpu_npu_arg(&l, bias, VNPU_ACCESS_READ, &p.bias)) &&
	     vnpu_npu_launch(name, &l, "qgemm", &p, sizeof(p),
			     q->m * q->n * (q->k ? q->k : 1));
	vnpu_at_release(x);
	vnpu_at_release(y);
	return ok;
}

struct vnpu_at_tensor *vnpu_npu_npu_int8_matmul(vnpu_keyset_t ks,
						struct vnpu_at_tensor *self,
						struct vnpu_at_tensor *mat2,
						int64_t self_zero_point,
						int64_t mat2_zero_point)
{
	const char *name = "npu::npu_int8_matmul";
	struct vnpu_at_tensor *out;
	struct vnpu_qmm q;

	if (!vnpu_at_check_same_device(name, 2,
				       (const struct vnpu_at_tensor *[]){ self, mat2 }) ||
	    !vnpu_qmm_check(name, &q, self, mat2, NULL, self_zero_point,
			    mat2_zero_point, false, 0, 0, 0, 0))
		return NULL;
	out = vnpu_npu_empty(2, (int64_t[]){ q.m, q.n }, VNPU_AT_I32);
	if (!out || !vnpu_at_numel(out))
		return out;
	if (!qgemm(name, &q, self, mat2, NULL, out)) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

struct vnpu_at_tensor *vnpu_npu_npu_quantized_linear(
	vnpu_keyset_t ks, struct vnpu_at_tensor *input, double input_scale,
	int64_t input_zero_point, struct vnpu_at_tensor *weight,
	double weight_scale, int64_t weight_zero_point,
	struct vnpu_at_tensor *bias, double output_scale,
	int64_t output_zero_point)
{
	const char *name = "npu::npu_quantized_linear";
	struct vnpu_at_tensor *a = NULL, *out = NULL, *res = NULL;
	int64_t shape[VNPU_AT_MAX_DIMS];
	struct vnpu_qmm q;

	if (!vnpu_at_check_same_device(name, bias ? 3 : 2,
				       (const struct vnpu_at_tensor *[]){ input, weight, bias }) ||
	    !vnpu_qmm_check(name, &q, input, weight, bias, input_zero_point,
			    weight_zero_point, true, input_scale,
			    weight_scale, output_scale, output_zero_point))
		return NULL;
	a = vnpu_op_reshape(input, (struct vnpu_at_int_array){
					   (int64_t[]){ q.m, q.k }, 2 });
	out = a ? vnpu_npu_empty(2, (int64_t[]){ q.m, q.n }, VNPU_AT_U8)
		: NULL;
	if (out && (!vnpu_at_numel(out) || qgemm(name, &q, a, weight, bias,
						 out))) {
		memcpy(shape, input->sizes, input->ndim * sizeof(int64_t));
		shape[input->ndim - 1] = q.n;
		res = vnpu_op_reshape(out, (struct vnpu_at_int_array){
						   shape, input->ndim });
	}
	vnpu_at_release(a);
	vnpu_at_release(out);
	return res;
}
