/* SPDX-License-Identifier: MIT */
/*
 * CPU reference kernels: bmm, addmm, baddbmm, addbmm (docs/dispatcher.md). Any strides;
 * float products accumulate in double, integer ones in int64.
 */
#include "../kernel_common.h"

/* Element (i, j) of matrix b of a 2-D or 3-D strided tensor. */
static const char *mat_at(const struct vnpu_at_tensor *t, int64_t b,
			  int64_t i, int64_t j)
{
	int64_t isz = (int64_t)vnpu_at_dtype_size(t->dtype);
	uint32_t nd = t->ndim;
	int64_t off = i * t->strides[nd - 2] + j * t->strides[nd - 1];

	if (nd == 3)
		off += b * t->strides[0];
	return (const char *)vnpu_at_data(t) + off * isz;
}

/*
 * out[b] = beta * c + alpha * a[b] @ m[b] for each of the batch, or, when
 * summed, out = beta * c + alpha * the sum of those products (one sum of
 * batch x K terms); c (may be NULL) is read as broadcast to out's
 * [batch, M, N] or [M, N] through its element strides cs[0..2] (0 along
 * a broadcast dim).
 */
static void matmul_into(struct vnpu_at_tensor *out, int64_t batch,
			bool summed, const struct vnpu_at_tensor *a,
			const struct vnpu_at_tensor *m,
			const struct vnpu_at_tensor *c, const int64_t cs[3],
			struct vnpu_at_scalar beta, struct vnpu_at_scalar alpha)
{
	int64_t M = a->sizes[a->ndim - 2], K = a->sizes[a->ndim - 1];
	int64_t N = m->sizes[m->ndim - 1];
	int64_t nout = summed ? 1 : batch, nsum = summed ? batch : 1;
	enum vnpu_at_dtype dt = out->dtype;
	size_t osz = vnpu_at_dtype_size(dt);
	char *o = vnpu_at_data(out);
	const char *cdata = c ? vnpu_at_data(c) : NULL;
	int64_t csz = c ? (int64_t)vnpu_at_dtype_size(c->dtype) : 0;

	for (int64_t ob = 0; ob < nout; ob++)
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++, o += osz) {
				const char *cp = cdata ?
					cdata + (ob * cs[0] + i * cs[1] +
						 j * cs[2]) * csz :
					NULL;

				if (kc_is_int(dt)) {
					uint64_t acc = 0;

					for (int64_t s = 0; s < nsum; s++)
						for (int64_t k = 0; k < K; k++)
							acc += (uint64_t)vnpu_at_load_int(dt,
								mat_at(a, ob + s, i, k)) *
							       (uint64_t)vnpu_at_load_int(dt,
								mat_at(m, ob + s, k, j));
					acc *= (uint64_t)vnpu_at_scalar_to_int(alpha);
					if (cp)
						acc += (uint64_t)vnpu_at_scalar_to_int(beta) *
						       (uint64_t)vnpu_at_load_int(dt, cp);
					vnpu_at_store_int(dt, o, (int64_t)acc);
				} else {
					double acc = 0.0;

					for (int64_t s = 0; s < nsum; s++)
						for (int64_t k = 0; k < K; k++)
							acc += vnpu_at_load(dt,
								mat_at(a, ob + s, i, k)) *
							       vnpu_at_load(dt,
								mat_at(m, ob + s, k, j));
					acc *= vnpu_at_scalar_to_double(alpha);
					if (cp)
						acc += vnpu_at_scalar_to_double(beta) *
						       vnpu_at_load(dt, cp);
					vnpu_at_store(dt, o, acc);
				}
			}
}

struct vnpu_at_tensor *vnpu_cpu_bmm(vnpu_keyset_t ks,
				    struct vnpu_at_tensor *self,
				    struct vnpu_at_tensor *mat2)
{
	struct vnpu_at_tensor *out;

	(void)ks;
	if (self->ndim != 3)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::bmm: batch1 must be a 3D tensor");
	if (mat2->ndim != 3)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::bmm: batch2 must be a 3D tensor");
	if (mat2->sizes[0] != self->sizes[0] ||
	    mat2->sizes[1] != self->sizes[2])
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::bmm: Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, %lld].",
			(long long)self->sizes[0], (long long)self->sizes[2],
			(long long)mat2->sizes[0], (long long)mat2->sizes[1]);
	if (self->dtype != mat2->dtype)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::bmm: expected self and mat2 to have the same dtype, but got: %s != %s",
			vnpu_at_dtype_name(self->dtype),
			vnpu_at_dtype_name(mat2->dtype));
	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::bmm: \"bmm\" not implemented for 'Bool'");
	out = vnpu_at_empty(3, (int64_t[]){ self->sizes[0], self->sizes[1],
					    mat2->sizes[2] },
			    self->dtype, VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	matmul_into(out, self->sizes[0], false, self, mat2, NULL, (int64_t[3]){ 0 },
		    VNPU_AT_INT(0), VNPU_AT_INT(1));
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_addmm(vnpu_keyset_t ks,
				      struct vnpu_at_tensor *self,
				      struct vnpu_at_tensor *mat1,
				      struct vnpu_at_tensor *mat2,
				      struct vnpu_at_scalar beta,
				      struct vnpu_at_scalar alpha)
{
	struct vnpu_at_tensor *out;
	int64_t M, N, cs[3] = { 0 };
	bool use_self;

	(void)ks;
	if (mat1->ndim != 2)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::addmm: mat1 must be a matrix, got %u-D tensor",
			mat1->ndim);
	if (mat2->ndim != 2)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::addmm: mat2 must be a matrix, got %u-D tensor",
			mat2->ndim);
	if (mat1->sizes[1] != mat2->sizes[0])
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::addmm: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
			(long long)mat1->sizes[0], (long long)mat1->sizes[1],
			(long long)mat2->sizes[0], (long long)mat2->sizes[1]);
	if (mat1->dtype != mat2->dtype || self->dtype != mat1->dtype)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::addmm: self, mat1 and mat2 must have the same dtype, but got %s, %s and %s",
			vnpu_at_dtype_name(self->dtype),
			vnpu_at_dtype_name(mat1->dtype),
			vnpu_at_dtype_name(mat2->dtype));
	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::addmm: \"addmm\" not implemented for 'Bool'");
	M = mat1->sizes[0];
	N = mat2->sizes[1];
	/* self broadcasts to [M, N] (expand semantics: size 1 repeats). */
	if (self->ndim > 2 ||
	    (self->ndim >= 1 && self->sizes[self->ndim - 1] != N &&
	     self->sizes[self->ndim - 1] != 1) ||
	    (self->ndim == 2 && self->sizes[0] != M && self->sizes[0] != 1))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::addmm: The expanded size of the tensor (%lld) must match the existing size of self at non-singleton dimensions, target sizes [%lld, %lld]",
			(long long)(self->ndim ? self->sizes[self->ndim - 1] : 1),
			(long long)M, (long long)N);
	if (self->ndim >= 1 && self->sizes[self->ndim - 1] != 1)
		cs[2] = self->strides[self->ndim - 1];
	if (self->ndim == 2 && self->sizes[0] != 1)
		cs[1] = self->strides[0];
	out = vnpu_at_empty(2, (int64_t[]){ M, N }, self->dtype,
			    VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	/* beta == 0 ignores self entirely (NaN and inf in it too). */
	use_self = kc_is_int(self->dtype) ? vnpu_at_scalar_to_int(beta) != 0 :
					    vnpu_at_scalar_to_double(beta) != 0.0;
	matmul_into(out, 1, false, mat1, mat2, use_self ? self : NULL, cs,
		    beta, alpha);
	return out;
}

/* baddbmm (summed false) and addbmm (true) */
static struct vnpu_at_tensor *batch_matmul(const char *op, bool summed,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *batch1,
					   struct vnpu_at_tensor *batch2,
					   struct vnpu_at_scalar beta,
					   struct vnpu_at_scalar alpha)
{
	int64_t sizes[3] = { batch1->sizes[0], batch1->sizes[1], 0 };
	uint32_t nd = summed ? 2 : 3;
	struct vnpu_at_tensor *out;
	int64_t cs[3] = { 0 };
	bool use_self;

	if (!vnpu_batch_matmul_check(op, summed, self, batch1, batch2))
		return NULL;
	sizes[2] = batch2->sizes[2];
	for (uint32_t i = 0; i < self->ndim; i++)
		if (self->sizes[i] != 1)
			cs[3 - self->ndim + i] = self->strides[i];
	out = vnpu_at_empty(nd, sizes + 3 - nd, self->dtype, VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	/* beta == 0 ignores self entirely (NaN and inf in it too). */
	use_self = kc_is_int(self->dtype) ? vnpu_at_scalar_to_int(beta) != 0 :
					    vnpu_at_scalar_to_double(beta) != 0.0;
	matmul_into(out, batch1->sizes[0], summed, batch1, batch2,
		    use_self ? self : NULL, cs, beta, alpha);
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_baddbmm(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *batch1,
					struct vnpu_at_tensor *batch2,
					struct vnpu_at_scalar beta,
					struct vnpu_at_scalar alpha)
{
	(void)ks;
	return batch_matmul("aten::baddbmm", false, self, batch1, batch2,
			    beta, alpha);
}

struct vnpu_at_tensor *vnpu_cpu_addbmm(vnpu_keyset_t ks,
				       struct vnpu_at_tensor *self,
				       struct vnpu_at_tensor *batch1,
				       struct vnpu_at_tensor *batch2,
				       struct vnpu_at_scalar beta,
				       struct vnpu_at_scalar alpha)
{
	(void)ks;
	return batch_matmul("aten::addbmm", true, self, batch1, batch2, beta,
			    alpha);
}

/* ---- int8 ---------------------------------------------------------------- */

/* sum_k (a[i][k] - za) (b - zb) with b[k][j] ([K, N]) or b[j][k] ([N, K]
 * when q->linear); a is [M, K]. */
static int64_t qmm_sum(const struct vnpu_qmm *q, const struct vnpu_at_tensor *a,
		       const struct vnpu_at_tensor *b, int64_t i, int64_t j)
{
	int64_t acc = 0;

	for (int64_t p = 0; p < q->k; p++) {
		int64_t x = *(const uint8_t *)mat_at(a, 0, i, p);
		int64_t y = *(const int8_t *)(q->linear ? mat_at(b, 0, j, p)
							 : mat_at(b, 0, p, j));

		acc += (x - q->za) * (y - q->zb);
	}
	return acc;
}

struct vnpu_at_tensor *vnpu_cpu_npu_int8_matmul(vnpu_keyset_t ks,
						struct vnpu_at_tensor *self,
						struct vnpu_at_tensor *mat2,
						int64_t self_zero_point,
						int64_t mat2_zero_point)
{
	struct vnpu_at_tensor *out;
	struct vnpu_qmm q;
	int32_t *o;

	if (!vnpu_qmm_check("npu::npu_int8_matmul", &q, self, mat2, NULL,
			    self_zero_point, mat2_zero_point, false, 0, 0, 0,
			    0))
		return NULL;
	out = vnpu_at_empty(2, (int64_t[]){ q.m, q.n }, VNPU_AT_I32,
			    VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	o = vnpu_at_data(out);
	for (int64_t i = 0; i < q.m; i++)
		for (int64_t j = 0; j < q.n; j++)
			o[i * q.n + j] = (int32_t)qmm_sum(&q, self, mat2, i, j);
	return out;
}

/* The requantisation of one sum, in f32 as the device computes it:
 * round(scale * acc + bias) / out_scale, half to even, plus the zero
 * point, saturated to uint8. */
static uint8_t requantize(const struct vnpu_qmm *q, int64_t acc, float bias)
{
	float r = nearbyintf((q->scale * (float)acc + bias) / q->out_scale) +
		  (float)q->out_zp;

	return !(r > 0.0f) ? 0 : r > 255.0f ? 255 : (uint8_t)r;
}

struct vnpu_at_tensor *vnpu_cpu_npu_quantized_linear(
	vnpu_keyset_t ks, struct vnpu_at_tensor *input, double input_scale,
	int64_t input_zero_point, struct vnpu_at_tensor *weight,
	double weight_scale, int64_t weight_zero_point,
	struct vnpu_at_tensor *bias, double output_scale,
	int64_t output_zero_point)
{
	struct vnpu_at_tensor *a, *out, *res;
	int64_t shape[VNPU_AT_MAX_DIMS];
	struct vnpu_qmm q;
	uint8_t *o;

	if (!vnpu_qmm_check("npu::npu_quantized_linear", &q, input, weight,
			    bias, input_zero_point, weight_zero_point, true,
			    input_scale, weight_scale, output_scale,
			    output_zero_point))
		return NULL;
	a = vnpu_op_reshape(input, (struct vnpu_at_int_array){
					   (int64_t[]){ q.m, q.k }, 2 });
	out = a ? vnpu_at_empty(2, (int64_t[]){ q.m, q.n }, VNPU_AT_U8,
				VNPU_AT_DEV_CPU)
		: NULL;
	if (!out) {
		vnpu_at_release(a);
		return NULL;
	}
	o = vnpu_at_data(out);
	for (int64_t j = 0; j < q.n; j++) {
		float b = bias ? (float)vnpu_at_load(
					 VNPU_AT_F32,
					 (const char *)vnpu_at_data(bias) +
						 j * bias->strides[0] * 4)
			       : 0.0f;

		for (int64_t i = 0; i < q.m; i++)
			o[i * q.n + j] =
				requantize(&q, qmm_sum(&q, a, weight, i, j), b);
	}
	vnpu_at_release(a);
	memcpy(shape, input->sizes, input->ndim * sizeof(int64_t));
	shape[input->ndim - 1] = q.n;
	res = vnpu_op_reshape(out, (struct vnpu_at_int_array){ shape,
							       input->ndim });
	vnpu_at_release(out);
	return res;
}
