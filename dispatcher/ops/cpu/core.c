// SPDX-License-Identifier: MIT
/* CPU reference kernels: creation, copies, add, mul, relu, mm, sum. */
#include <stdlib.h>

#include "../kernel_common.h"
#include "../op_util.h"
#include "dispatch_internal.h"
#include "vnpu_runtime.h"

struct vnpu_at_tensor *vnpu_cpu_empty_memory_format(vnpu_keyset_t ks,
	struct vnpu_at_int_array size, enum vnpu_at_dtype dtype,
	struct vnpu_at_device device)
{
	if (size.n > VNPU_AT_MAX_DIMS)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::empty: too many dims");
	return vnpu_at_empty((uint32_t)size.n, size.v,
			     dtype == VNPU_AT_DTYPE_NONE ? vnpu_at_default_dtype() : dtype,
			     VNPU_AT_DEV_CPU);
}

struct vnpu_at_tensor *vnpu_cpu_empty_strided(vnpu_keyset_t ks,
	struct vnpu_at_int_array size, struct vnpu_at_int_array stride,
	enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	/* more than 8 dims: vnpu_at_empty_strided says so */
	if (size.n != stride.n)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::empty_strided: mismatch in length of strides and shape");
	return vnpu_at_empty_strided((uint32_t)size.n, size.v, stride.v,
				     dtype == VNPU_AT_DTYPE_NONE ? vnpu_at_default_dtype() : dtype,
				     VNPU_AT_DEV_CPU);
}

struct vnpu_at_tensor *vnpu_cpu_fill__Scalar(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     struct vnpu_at_scalar value)
{
	struct vnpu_at_iter it;
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;

	if (!vnpu_at_scalar_fits(value, dt) ||
	    !vnpu_at_iter_init(&it, self->ndim, self->sizes, 1,
			       (const struct vnpu_at_tensor *[]){ self }))
		return NULL;
	while (vnpu_at_iter_next(&it)) {
		if (vnpu_at_dtype_is_float(dt))
			vnpu_at_store(dt, it.p[0], vnpu_at_scalar_to_double(value));
		else
			vnpu_at_store_int(dt, it.p[0],
					  vnpu_at_scalar_to_int_as(value, dt));
	}
	return vnpu_at_retain(self);
}

/* arange into out: resized to the range's length when its numel differs
 * (PyTorch also warns when out had elements), element i of out's
 * row-major order start + i * step in the accumulation type. */
struct vnpu_at_tensor *vnpu_cpu_arange_start_out(vnpu_keyset_t ks,
						 struct vnpu_at_scalar start,
						 struct vnpu_at_scalar end,
						 struct vnpu_at_scalar step,
						 struct vnpu_at_tensor *out)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)out->dtype;
	struct vnpu_at_arange a;
	struct vnpu_at_iter it;
	int64_t i = 0;

	(void)ks;
	if (!vnpu_at_arange_plan("aten::arange", start, end, step, dt, &a))
		return NULL;
	if (vnpu_at_numel(out) != a.n) {
		struct vnpu_at_tensor *r = vnpu_op_resize_(out, (struct vnpu_at_int_array){ &a.n, 1 });

		if (!r)
			return NULL;
		vnpu_at_release(r);
	}
	if (!vnpu_at_iter_init(&it, out->ndim, out->sizes, 1,
			       (const struct vnpu_at_tensor *[]){ out }))
		return NULL;
	while (vnpu_at_iter_next(&it)) {
		if (dt == VNPU_AT_F64 || dt == VNPU_AT_F32)
			vnpu_at_store(dt, it.p[0], a.start + a.step * (double)i);
		else if (vnpu_at_dtype_is_float(dt))
			vnpu_at_store(dt, it.p[0],
				      (float)a.start + (float)a.step * (float)i);
		else
			vnpu_at_store_int(dt, it.p[0],
					  (int64_t)((uint64_t)a.istart +
						    (uint64_t)a.istep * (uint64_t)i));
		i++;
	}
	return vnpu_at_retain(out);
}

/* linspace into out (vnpu_at_linspace_prepare), point i of the plan at
 * element i of out's row-major order. */
struct vnpu_at_tensor *vnpu_cpu_linspace_out(vnpu_keyset_t ks, struct vnpu_at_scalar start,
					     struct vnpu_at_scalar end, int64_t steps,
					     struct vnpu_at_tensor *out)
{
	struct vnpu_at_linspace l;
	struct vnpu_at_iter it;
	int64_t i = 0;
	int todo;

	(void)ks;
	todo = vnpu_at_linspace_prepare("aten::linspace", start, end, steps, out, &l);
	if (todo <= 0)
		return todo ? NULL : vnpu_at_retain(out);
	if (!vnpu_at_iter_init(&it, out->ndim, out->sizes, 1,
			       (const struct vnpu_at_tensor *[]){ out }))
		return NULL;
	while (vnpu_at_iter_next(&it))
		vnpu_at_store(l.dt, it.p[0], vnpu_at_linspace_point(&l, i++));
	return vnpu_at_retain(out);
}

struct vnpu_at_tensor *vnpu_cpu_copy_(vnpu_keyset_t ks,
				      struct vnpu_at_tensor *self,
				      struct vnpu_at_tensor *src,
				      bool non_blocking)
{
	enum vnpu_at_dtype dd = (enum vnpu_at_dtype)self->dtype;
	enum vnpu_at_dtype sd = (enum vnpu_at_dtype)src->dtype;
	struct vnpu_at_iter it;
	bool as_int = !vnpu_at_dtype_is_float(dd) && !vnpu_at_dtype_is_float(sd);

	if (src->ndim > self->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::copy_: source has more dims than the destination");
	if (!vnpu_at_iter_init(&it, self->ndim, self->sizes, 2,
			       (const struct vnpu_at_tensor *[]){ self, src }))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::copy_: source does not broadcast to the destination");
	/* a copy within one storage that overlaps reads a snapshot */
	if (self->storage == src->storage) {
		struct vnpu_at_tensor *tmp = vnpu_at_empty(src->ndim, src->sizes, sd,
							   VNPU_AT_DEV_CPU);
		struct vnpu_at_tensor *r;

		if (!tmp || !vnpu_cpu_copy_(ks, tmp, src, false)) {
			vnpu_at_release(tmp);
			return NULL;
		}
		vnpu_at_release(tmp);	/* copy_ returned tmp retained */
		r = vnpu_cpu_copy_(ks, self, tmp, false);
		vnpu_at_release(tmp);
		return r;
	}
	while (vnpu_at_iter_next(&it)) {
		if (as_int)
			vnpu_at_store_int(dd, it.p[0], vnpu_at_load_int(sd, it.p[1]));
		else
			vnpu_at_store(dd, it.p[0], vnpu_at_load(sd, it.p[1]));
	}
	return vnpu_at_retain(self);
}

struct vnpu_at_tensor *vnpu_cpu__copy_from(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *dst,
					   bool non_blocking)
{
	return vnpu_op_copy_(dst, self, non_blocking);
}

struct vnpu_at_tensor *vnpu_cpu__copy_from_and_resize(vnpu_keyset_t ks,
						      struct vnpu_at_tensor *self,
						      struct vnpu_at_tensor *dst)
{
	struct vnpu_at_tensor *r = vnpu_op_resize_(dst,
		(struct vnpu_at_int_array){ self->sizes, self->ndim });

	if (!r)
		return NULL;
	vnpu_at_release(r);
	return vnpu_op_copy_(dst, self, false);
}

struct vnpu_at_scalar vnpu_cpu__local_scalar_dense(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *self)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;

	if (vnpu_at_numel(self) != 1) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "aten::_local_scalar_dense: a Tensor with %lld elements cannot be converted to Scalar",
				  (long long)vnpu_at_numel(self));
		return VNPU_AT_SCALAR_NONEV;
	}
	if (dt == VNPU_AT_BOOL)
		return VNPU_AT_BOOLV(vnpu_at_load_int(dt, vnpu_at_data(self)) != 0);
	if (vnpu_at_dtype_is_float(dt))
		return VNPU_AT_DOUBLE(vnpu_at_load(dt, vnpu_at_data(self)));
	return VNPU_AT_INT(vnpu_at_load_int(dt, vnpu_at_data(self)));
}

/* Shared by the CPU and npu resize_: new sizes, contiguous strides, a new
 * storage when the old one is too small (contents kept up to its size). */
struct vnpu_at_tensor *vnpu_resize_impl(struct vnpu_at_tensor *self,
					struct vnpu_at_int_array size);

struct vnpu_at_tensor *vnpu_resize_impl(struct vnpu_at_tensor *self,
					struct vnpu_at_int_array size)
{
	int64_t strides[VNPU_AT_MAX_DIMS];
	size_t isz = vnpu_at_dtype_size((enum vnpu_at_dtype)self->dtype), bytes;
	int64_t numel;

	if (size.n > VNPU_AT_MAX_DIMS)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::resize_: too many dims");
	/* as PyTorch's resize_: the same sizes keep the strides (an out=
	 * view of the right shape stays a view) */
	if ((int64_t)self->ndim == size.n &&
	    !memcmp(self->sizes, size.v, (size_t)size.n * sizeof(int64_t)))
		return vnpu_at_retain(self);
	numel = vnpu_at_shape_numel((uint32_t)size.n, size.v);
	if (numel < 0 || __builtin_mul_overflow((size_t)numel, isz, &bytes) ||
	    __builtin_add_overflow(bytes, (size_t)self->offset * isz, &bytes))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::resize_: bad size");
	if (self->storage->npu.npu_format != VNPU_FORMAT_ND &&
	    self->storage->device.type == VNPU_AT_NPU)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::resize_: not supported for internal formats");
	if (bytes > self->storage->nbytes) {
		struct vnpu_at_storage *s = vnpu_storage_new(bytes, self->storage->device);

		if (!s)
			return NULL;
		if (self->storage->nbytes) {
			if (s->device.type == VNPU_AT_CPU)
				memcpy(s->data, self->storage->data, self->storage->nbytes);
			else if (vnpu_memcpy(s->data, self->storage->data,
					     self->storage->nbytes, VNPU_MEMCPY_D2D)) {
				vnpu_storage_release(s);
				return vnpu_at_error_set(VNPU_AT_ERR_DEVICE,
							 "aten::resize_: device copy failed");
			}
		}
		vnpu_storage_release(self->storage);
		self->storage = s;
	}
	vnpu_at_contiguous_strides((uint32_t)size.n, size.v, strides);
	self->ndim = (uint8_t)size.n;
	for (int64_t i = 0; i < size.n; i++) {
		self->sizes[i] = size.v[i];
		self->strides[i] = strides[i];
	}
	if (self->storage->device.type == VNPU_AT_NPU) {
		self->storage->npu.base_ndim = (uint32_t)size.n;
		self->storage->npu.storage_ndim = (uint32_t)size.n;
		for (int64_t i = 0; i < size.n; i++) {
			self->storage->npu.base_sizes[i] = size.v[i];
			self->storage->npu.storage_sizes[i] = size.v[i];
			self->storage->npu.base_strides[i] = strides[i];
		}
	}
	return vnpu_at_retain(self);
}

struct vnpu_at_tensor *vnpu_cpu_resize_(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_int_array size)
{
	return vnpu_resize_impl(self, size);
}

/* ---- add / mul ----------------------------------------------------------------- */

enum binop { OP_ADD, OP_MUL };

static bool binary_into(const char *name, enum binop op, struct vnpu_at_tensor *out,
			struct vnpu_at_tensor *a, struct vnpu_at_tensor *b,
			struct vnpu_at_scalar alpha)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)out->dtype;
	struct vnpu_at_iter it;

	if (!vnpu_at_iter_init(&it, out->ndim, out->sizes, 3,
			       (const struct vnpu_at_tensor *[]){ out, a, b })) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: operands do not broadcast to the output", name);
		return false;
	}
	if (vnpu_at_dtype_is_float(dt)) {
		double al = vnpu_at_scalar_to_double(alpha);
		/* operands cast to dt first, as TensorIterator casts them,
		 * but for mul's wider scalar */
		enum vnpu_at_dtype yd = op == OP_MUL ? kc_mul_div_compute(dt, b) : dt;

		while (vnpu_at_iter_next(&it)) {
			double x = kc_round(dt, vnpu_at_load((enum vnpu_at_dtype)a->dtype, it.p[1]));
			double y = kc_round(yd, vnpu_at_load((enum vnpu_at_dtype)b->dtype, it.p[2]));

			vnpu_at_store(dt, it.p[0], op == OP_ADD ? x + al * y :
				      kc_round(yd, x * y));
		}
	} else {
		int64_t al = vnpu_at_scalar_to_int(alpha);

		while (vnpu_at_iter_next(&it)) {
			uint64_t x = (uint64_t)vnpu_at_load_int((enum vnpu_at_dtype)a->dtype, it.p[1]);
			uint64_t y = (uint64_t)vnpu_at_load_int((enum vnpu_at_dtype)b->dtype, it.p[2]);
			uint64_t r = op == OP_ADD ? x + (uint64_t)al * y : x * y;

			if (dt == VNPU_AT_BOOL)
				r = op == OP_ADD ? (x || (al && y)) : (x && y);
			vnpu_at_store_int(dt, it.p[0], (int64_t)r);
		}
	}
	return true;
}

static struct vnpu_at_tensor *binary(const char *name, enum binop op,
				     struct vnpu_at_tensor *a, struct vnpu_at_tensor *b,
				     struct vnpu_at_scalar alpha)
{
	const struct vnpu_at_tensor *in[2] = { a, b };
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *out;
	uint32_t nd;

	if (!vnpu_at_broadcast_shapes(name, 2, in, &nd, sizes))
		return NULL;
	out = vnpu_at_empty(nd, sizes, vnpu_at_result_type(a, b), VNPU_AT_DEV_CPU);
	if (out && !binary_into(name, op, out, a, b, alpha)) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

/* alpha's rules for add (PyTorch's alpha_check): a bool alpha only with
 * a bool result, no float alpha with an integral one. */
static bool alpha_ok(const char *name, enum vnpu_at_dtype dt,
		     struct vnpu_at_scalar alpha)
{
	if (alpha.kind == VNPU_AT_SCALAR_BOOL && dt != VNPU_AT_BOOL) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: Boolean alpha only supported for Boolean results.", name);
		return false;
	}
	if (!vnpu_at_dtype_is_float(dt) && alpha.kind == VNPU_AT_SCALAR_DOUBLE) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: For integral input tensors, argument alpha must not be a floating point number.",
				  name);
		return false;
	}
	return true;
}

/* An in-place op's result written into self, checked as PyTorch does. */
static bool binary_inplace(const char *name, enum binop op,
			   struct vnpu_at_tensor *self, struct vnpu_at_tensor *other,
			   struct vnpu_at_scalar alpha)
{
	const struct vnpu_at_tensor *in[2] = { self, other };
	int64_t sizes[VNPU_AT_MAX_DIMS];
	uint32_t nd;

	return vnpu_at_broadcast_shapes(name, 2, in, &nd, sizes) &&
	       vnpu_at_check_write(name, self, vnpu_at_result_type(self, other),
				   nd, sizes, false) &&
	       binary_into(name, op, self, self, other, alpha);
}

/* An out= op: the functional result, castable to out, copied into it.
 * out is resized to the result's shape, unless it is also an input:
 * TensorIterator never resizes an operand it reads (add(x, y, out=x)). */
static struct vnpu_at_tensor *binary_out(vnpu_keyset_t ks, const char *name,
					 struct vnpu_at_tensor *r,
					 struct vnpu_at_tensor *self,
					 struct vnpu_at_tensor *other,
					 struct vnpu_at_tensor *out)
{
	struct vnpu_at_tensor *c = NULL;

	if (r && vnpu_at_check_write(name, out, (enum vnpu_at_dtype)r->dtype,
				     r->ndim, r->sizes,
				     out != self && out != other))
		c = vnpu_cpu__copy_from_and_resize(ks, r, out);
	vnpu_at_release(r);
	return c;
}

struct vnpu_at_tensor *vnpu_cpu_add_Tensor(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other,
					   struct vnpu_at_scalar alpha)
{
	if (!alpha_ok("aten::add.Tensor", vnpu_at_result_type(self, other), alpha))
		return NULL;
	return binary("aten::add.Tensor", OP_ADD, self, other, alpha);
}

struct vnpu_at_tensor *vnpu_cpu_add__Tensor(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *other,
					    struct vnpu_at_scalar alpha)
{
	if (!alpha_ok("aten::add_.Tensor", vnpu_at_result_type(self, other), alpha))
		return NULL;
	return binary_inplace("aten::add_.Tensor", OP_ADD, self, other, alpha) ?
	       vnpu_at_retain(self) : NULL;
}

struct vnpu_at_tensor *vnpu_cpu_add_out(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *other,
					struct vnpu_at_scalar alpha,
					struct vnpu_at_tensor *out)
{
	return binary_out(ks, "aten::add.out",
			  vnpu_cpu_add_Tensor(ks, self, other, alpha), self,
			  other, out);
}

struct vnpu_at_tensor *vnpu_cpu_mul_Tensor(vnpu_keyset_t ks,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other)
{
	return binary("aten::mul.Tensor", OP_MUL, self, other, VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_cpu_mul__Tensor(vnpu_keyset_t ks,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *other)
{
	return binary_inplace("aten::mul_.Tensor", OP_MUL, self, other,
			      VNPU_AT_INT(1)) ? vnpu_at_retain(self) : NULL;
}

struct vnpu_at_tensor *vnpu_cpu_mul_out(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *other,
					struct vnpu_at_tensor *out)
{
	return binary_out(ks, "aten::mul.out", vnpu_cpu_mul_Tensor(ks, self, other),
			  self, other, out);
}

static void relu_into(struct vnpu_at_tensor *out, struct vnpu_at_tensor *in)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)in->dtype;
	struct vnpu_at_iter it;

	vnpu_at_iter_init(&it, in->ndim, in->sizes, 2,
			  (const struct vnpu_at_tensor *[]){ out, in });
	while (vnpu_at_iter_next(&it)) {
		double x = vnpu_at_load(dt, it.p[1]);

		vnpu_at_store(dt, it.p[0], x > 0 ? x : (x == x ? 0.0 : x));
	}
}

struct vnpu_at_tensor *vnpu_cpu_relu(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	struct vnpu_at_tensor *out;

	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::relu: not implemented for 'Bool'");
	out = vnpu_at_empty_like(self);
	if (out)
		relu_into(out, self);
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_relu_(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	if (self->dtype == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::relu_: not implemented for 'Bool'");
	relu_into(self, self);
	return vnpu_at_retain(self);
}

/* ---- mm ---------------------------------------------------------------------- */

struct vnpu_at_tensor *vnpu_cpu_mm(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				   struct vnpu_at_tensor *mat2)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	int64_t m, k, n, isz = (int64_t)vnpu_at_dtype_size(dt);
	struct vnpu_at_tensor *out;
	const char *a, *b;
	char *o;

	if (self->ndim != 2 || mat2->ndim != 2)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::mm: self must be a matrix (got %u-D and %u-D)",
					 self->ndim, mat2->ndim);
	if (self->dtype != mat2->dtype)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::mm: expected mat1 and mat2 to have the same dtype, but got: %s != %s",
					 vnpu_at_dtype_name(dt),
					 vnpu_at_dtype_name((enum vnpu_at_dtype)mat2->dtype));
	m = self->sizes[0];
	k = self->sizes[1];
	n = mat2->sizes[1];
	if (mat2->sizes[0] != k)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::mm: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
					 (long long)m, (long long)k,
					 (long long)mat2->sizes[0], (long long)n);
	if (dt == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::mm: not implemented for 'Bool'");
	out = vnpu_at_empty(2, (int64_t[]){ m, n }, dt, VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	a = vnpu_at_data(self);
	b = vnpu_at_data(mat2);
	o = vnpu_at_data(out);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double acc = 0;
			int64_t iacc = 0;

			for (int64_t p = 0; p < k; p++) {
				const char *x = a + (i * self->strides[0] + p * self->strides[1]) * isz;
				const char *y = b + (p * mat2->strides[0] + j * mat2->strides[1]) * isz;

				if (vnpu_at_dtype_is_float(dt))
					acc += vnpu_at_load(dt, x) * vnpu_at_load(dt, y);
				else
					iacc += vnpu_at_load_int(dt, x) * vnpu_at_load_int(dt, y);
			}
			if (vnpu_at_dtype_is_float(dt))
				vnpu_at_store(dt, o + (i * n + j) * isz, acc);
			else
				vnpu_at_store_int(dt, o + (i * n + j) * isz, iacc);
		}
	return out;
}

/* ---- sum ---------------------------------------------------------------------- */

static enum vnpu_at_dtype sum_dtype(enum vnpu_at_dtype in, enum vnpu_at_dtype want)
{
	if (want != VNPU_AT_DTYPE_NONE)
		return want;
	return vnpu_at_dtype_is_float(in) ? in : VNPU_AT_I64;
}

struct vnpu_at_tensor *vnpu_sum_impl(const char *name, struct vnpu_at_tensor *self,
				     uint32_t mask, bool keepdim,
				     enum vnpu_at_dtype dtype, bool mean);

struct vnpu_at_tensor *vnpu_sum_impl(const char *name, struct vnpu_at_tensor *self,
				     uint32_t mask, bool keepdim,
				     enum vnpu_at_dtype dtype, bool mean)
{
	int64_t ksizes[VNPU_AT_MAX_DIMS], osizes[VNPU_AT_MAX_DIMS];
	enum vnpu_at_dtype dt = sum_dtype((enum vnpu_at_dtype)self->dtype, dtype);
	struct vnpu_at_tensor *acc, *out, *view;
	struct vnpu_at_iter it;
	uint32_t ond = 0;
	int64_t count = 1;
	double *sums;
	int64_t *isums;
	int64_t kstr[VNPU_AT_MAX_DIMS];

	for (uint32_t d = 0; d < self->ndim; d++) {
		bool red = mask & (1u << d);

		ksizes[d] = red ? 1 : self->sizes[d];
		if (red)
			count *= self->sizes[d];
		else
			osizes[ond++] = self->sizes[d];
		if (red && keepdim)
			osizes[ond++] = 1;
	}
	/* accumulate into an f64/i64 keepdim buffer */
	acc = vnpu_at_empty(self->ndim, ksizes,
			    vnpu_at_dtype_is_float(dt) ? VNPU_AT_F64 : VNPU_AT_I64,
			    VNPU_AT_DEV_CPU);
	if (!acc)
		return NULL;
	memset(acc->storage->data, 0, acc->storage->nbytes);
	sums = vnpu_at_data(acc);
	isums = vnpu_at_data(acc);
	(void)kstr;
	if (!vnpu_at_iter_init(&it, self->ndim, self->sizes, 2,
			       (const struct vnpu_at_tensor *[]){ acc, self })) {
		vnpu_at_release(acc);
		return NULL;
	}
	while (vnpu_at_iter_next(&it)) {
		if (vnpu_at_dtype_is_float(dt))
			*(double *)it.p[0] += vnpu_at_load((enum vnpu_at_dtype)self->dtype, it.p[1]);
		else
			*(int64_t *)it.p[0] += vnpu_at_load_int((enum vnpu_at_dtype)self->dtype, it.p[1]);
	}
	(void)sums;
	(void)isums;
	if (mean) {
		int64_t n = vnpu_at_numel(acc);

		for (int64_t i = 0; i < n; i++)
			sums[i] = count ? sums[i] / (double)count : NAN;
	}
	out = vnpu_at_empty(ond, osizes, dt, VNPU_AT_DEV_CPU);
	view = out ? vnpu_at_view_of(acc, ond, osizes, out->strides, 0) : NULL;
	if (!view || !vnpu_cpu_copy_(0, out, view, false)) {
		vnpu_at_release(view);
		vnpu_at_release(out);
		vnpu_at_release(acc);
		return NULL;
	}
	vnpu_at_release(out);	/* copy_ returned it retained */
	vnpu_at_release(view);
	vnpu_at_release(acc);
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_sum(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				    enum vnpu_at_dtype dtype)
{
	return vnpu_sum_impl("aten::sum", self, (1u << self->ndim) - 1, false, dtype, false);
}

struct vnpu_at_tensor *vnpu_cpu_sum_dim_IntList(vnpu_keyset_t ks,
						struct vnpu_at_tensor *self,
						struct vnpu_at_opt_int_array dim,
						bool keepdim,
						enum vnpu_at_dtype dtype)
{
	uint32_t mask;

	if (!vnpu_at_dim_mask("aten::sum", dim.has ? dim.a : VNPU_AT_NO_INTS,
			      self->ndim, &mask))
		return NULL;
	return vnpu_sum_impl("aten::sum", self, mask, keepdim, dtype, false);
}

struct vnpu_at_tensor *vnpu_cpu_mean(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				     enum vnpu_at_dtype dtype)
{
	if (!vnpu_at_dtype_is_float(dtype != VNPU_AT_DTYPE_NONE ? dtype :
				    (enum vnpu_at_dtype)self->dtype))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::mean: could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: %s",
					 vnpu_at_dtype_name((enum vnpu_at_dtype)self->dtype));
	return vnpu_sum_impl("aten::mean", self, (1u << self->ndim) - 1, false, dtype, true);
}

struct vnpu_at_tensor *vnpu_cpu_mean_dim(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					 struct vnpu_at_opt_int_array dim, bool keepdim,
					 enum vnpu_at_dtype dtype)
{
	uint32_t mask;

	if (!vnpu_at_dtype_is_float(dtype != VNPU_AT_DTYPE_NONE ? dtype :
				    (enum vnpu_at_dtype)self->dtype))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::mean.dim: input dtype must be floating point, got %s",
					 vnpu_at_dtype_name((enum vnpu_at_dtype)self->dtype));
	if (!vnpu_at_dim_mask("aten::mean", dim.has ? dim.a : VNPU_AT_NO_INTS,
			      self->ndim, &mask))
		return NULL;
	return vnpu_sum_impl("aten::mean", self, mask, keepdim, dtype, true);
}

int64_t vnpu_cpu_get_npu_format(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return VNPU_FORMAT_ND;
}
