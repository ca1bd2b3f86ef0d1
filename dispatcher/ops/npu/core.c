// SPDX-License-Identifier: MIT
/* NPU kernels (PrivateUse1): creation, copies (H2D/D2H/D2D, format-aware),
 * fill_, add, mul, relu, mm (FRACTAL_NZ operands taken as they are), sum,
 * and torch_npu's npu_format_cast / get_npu_format. */
#include "npu_ops_common.h"
#include "dispatch_internal.h"

struct vnpu_at_tensor *vnpu_npu_empty_memory_format(vnpu_keyset_t ks,
	struct vnpu_at_int_array size, enum vnpu_at_dtype dtype,
	struct vnpu_at_device device)
{
	if (size.n > VNPU_AT_MAX_DIMS)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::empty: too many dims");
	if (!vnpu_npu_ready())
		return NULL;
	return vnpu_at_empty((uint32_t)size.n, size.v,
			     dtype == VNPU_AT_DTYPE_NONE ? vnpu_at_default_dtype() : dtype,
			     device.type == VNPU_AT_NPU ? device : vnpu_npu_device());
}

struct vnpu_at_tensor *vnpu_npu_empty_strided(vnpu_keyset_t ks,
	struct vnpu_at_int_array size, struct vnpu_at_int_array stride,
	enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	/* more than 8 dims: vnpu_at_empty_strided says so */
	if (size.n != stride.n)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::empty_strided: mismatch in length of strides and shape");
	if (!vnpu_npu_ready())
		return NULL;
	return vnpu_at_empty_strided((uint32_t)size.n, size.v, stride.v,
				     dtype == VNPU_AT_DTYPE_NONE ? vnpu_at_default_dtype() : dtype,
				     device.type == VNPU_AT_NPU ? device : vnpu_npu_device());
}

struct vnpu_at_tensor *vnpu_npu_fill__Scalar(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     struct vnpu_at_scalar value)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	struct vnpu_kp_fill p = { .value = vnpu_at_scalar_to_double(value),
				  .ivalue = vnpu_at_scalar_to_int_as(value, dt) };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *tgt = self;
	bool ok;

	/* a value the dtype cannot hold: the CPU kernel words the error as
	 * the PyTorch that runs does (2.6 and 2.13 name the dtype apart) */
	if (!vnpu_at_scalar_fits(value, dt) ||
	    vnpu_npu_dtype((enum vnpu_at_dtype)self->dtype) < 0) {
		vnpu_at_error_clear();
		return vnpu_npu_unsupported();
	}
	if (!vnpu_at_numel(self))
		return vnpu_at_retain(self);
	if (vnpu_npu_format_of(self) != VNPU_FORMAT_ND) {
		tgt = vnpu_npu_empty(self->ndim, self->sizes, (enum vnpu_at_dtype)self->dtype);
		if (!tgt)
			return NULL;
	} else if (!vnpu_npu_injective(self)) {
		/* elements that share a location (PyTorch allows fill_ here):
		 * every element of a stride-0 dim is one, so fill each once */
		int64_t sz[VNPU_AT_MAX_DIMS];

		for (uint32_t i = 0; i < self->ndim; i++)
			sz[i] = self->strides[i] ? self->sizes[i] : 1;
		tgt = vnpu_at_view_of(self, self->ndim, sz, self->strides,
				      self->offset);
		if (!tgt)
			return NULL;
		/* elements overlapping otherwise (empty_strided((10, 9),
		 * (1, 5))): the device writes each location once or not at
		 * all, the CPU kernel fills them */
		if (!vnpu_npu_injective(tgt)) {
			vnpu_at_release(tgt);
			return vnpu_npu_unsupported();
		}
		ok = vnpu_npu_arg(&l, tgt, VNPU_ACCESS_WRITE, &p.out) &&
		     vnpu_npu_launch("aten::fill_", &l, "fill", &p, sizeof(p),
				     vnpu_at_numel(tgt));
		vnpu_at_release(tgt);
		return ok ? vnpu_at_retain(self) : NULL;
	}
	ok = vnpu_npu_arg(&l, tgt, VNPU_ACCESS_WRITE, &p.out) &&
	     vnpu_npu_launch("aten::fill_", &l, "fill", &p, sizeof(p), vnpu_at_numel(tgt));
	if (ok && tgt != self)
		ok = vnpu_npu_copy("aten::fill_", self, tgt);
	if (tgt != self)
		vnpu_at_release(tgt);
	return ok ? vnpu_at_retain(self) : NULL;
}

/* arange on RANGE. What PyTorch refuses or warns about (invalid bounds,
 * an out= with elements of another count, or elements sharing memory),
 * what its versions compute apart (an integer range with a float bound),
 * a dtype the device lacks (bool) and internal formats go to the CPU
 * kernel, which does it as the PyTorch that runs. */
struct vnpu_at_tensor *vnpu_npu_arange_start_out(vnpu_keyset_t ks,
						 struct vnpu_at_scalar start,
						 struct vnpu_at_scalar end,
						 struct vnpu_at_scalar step,
						 struct vnpu_at_tensor *out)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)out->dtype;
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_kp_range p = { 0 };
	struct vnpu_at_arange a;
	int64_t numel = vnpu_at_numel(out);

	/* an integer range with a float bound: PyTorch versions disagree */
	if (dt == VNPU_AT_BOOL || vnpu_npu_dtype(dt) < 0 || !vnpu_at_is_npu(out) ||
	    (!vnpu_at_dtype_is_float(dt) && !vnpu_at_arange_integral(start, end, step)) ||
	    vnpu_npu_format_of(out) != VNPU_FORMAT_ND || !vnpu_npu_injective(out) ||
	    !vnpu_at_arange_plan("aten::arange", start, end, step, dt, &a) ||
	    (numel && numel != a.n)) {
		vnpu_at_error_clear();
		return vnpu_npu_unsupported();
	}
	if (numel != a.n) {
		struct vnpu_at_tensor *r = vnpu_op_resize_(out, (struct vnpu_at_int_array){ &a.n, 1 });

		if (!r)
			return NULL;
		vnpu_at_release(r);
	}
	if (!a.n)
		return vnpu_at_retain(out);
	p.start = a.start;
	p.step = a.step;
	p.istart = a.istart;
	p.istep = a.istep;
	if (!vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	    !vnpu_npu_launch("aten::arange", &l, "range", &p, sizeof(p), a.n))
		return NULL;
	return vnpu_at_retain(out);
}

/* linspace on RANGE (vnpu_at_linspace_prepare first). Bool, a bound the
 * dtype cannot hold, an out= whose elements share memory and internal
 * formats go to the CPU kernel, which words the error as the PyTorch that
 * runs does (2.6 names c10::Half at::Half) or writes the format through
 * its copy. */
struct vnpu_at_tensor *vnpu_npu_linspace_out(vnpu_keyset_t ks, struct vnpu_at_scalar start,
					     struct vnpu_at_scalar end, int64_t steps,
					     struct vnpu_at_tensor *out)
{
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_kp_range p = { .mode = VNPU_RANGE_LINSPACE };
	struct vnpu_at_linspace plan;
	int todo;

	if (!vnpu_at_is_npu(out) || out->dtype == VNPU_AT_BOOL ||
	    vnpu_npu_format_of(out) != VNPU_FORMAT_ND || !vnpu_npu_injective(out) ||
	    (steps > 1 && !vnpu_at_linspace_plan("aten::linspace", start, end, steps,
						 (enum vnpu_at_dtype)out->dtype, &plan))) {
		vnpu_at_error_clear();
		return vnpu_npu_unsupported();
	}
	todo = vnpu_at_linspace_prepare("aten::linspace", start, end, steps, out, &plan);
	if (todo <= 0)
		return todo ? NULL : vnpu_at_retain(out);
	p.start = plan.start;
	p.end = plan.end;
	if (!vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	    !vnpu_npu_launch("aten::linspace", &l, "range", &p, sizeof(p), steps))
		return NULL;
	return vnpu_at_retain(out);
}

struct vnpu_at_tensor *vnpu_npu_copy_(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				      struct vnpu_at_tensor *src, bool non_blocking)
{
	if (src->ndim > self->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::copy_: source has more dims than the destination");
	return vnpu_npu_copy_nb("aten::copy_", self, src, non_blocking) ?
	       vnpu_at_retain(self) : NULL;
}

struct vnpu_at_tensor *vnpu_npu__copy_from(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *dst, bool non_blocking)
{
	return vnpu_npu_copy_nb("aten::_copy_from", dst, self, non_blocking) ?
	       vnpu_at_retain(dst) : NULL;
}

struct vnpu_at_tensor *vnpu_npu__copy_from_and_resize(vnpu_keyset_t ks,
						      struct vnpu_at_tensor *self,
						      struct vnpu_at_tensor *dst)
{
	bool same = self->ndim == dst->ndim;

	for (uint32_t i = 0; same && i < dst->ndim; i++)
		same = self->sizes[i] == dst->sizes[i];
	if (!same) {
		struct vnpu_at_tensor *r = vnpu_npu_resize_(ks, dst,
			(struct vnpu_at_int_array){ self->sizes, self->ndim });

		if (!r)
			return NULL;
		vnpu_at_release(r);
	}
	return vnpu_npu_copy("aten::_copy_from_and_resize", dst, self) ?
	       vnpu_at_retain(dst) : NULL;
}

struct vnpu_at_scalar vnpu_npu__local_scalar_dense(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *self)
{
	struct vnpu_at_tensor *h = vnpu_op__to_copy(self, VNPU_AT_DTYPE_NONE,
						    VNPU_AT_DEV_CPU, false);
	struct vnpu_at_scalar s;

	if (!h)
		return VNPU_AT_SCALAR_NONEV;
	s = vnpu_op__local_scalar_dense(h);
	vnpu_at_release(h);
	return s;
}

struct vnpu_at_tensor *vnpu_npu_resize_(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					struct vnpu_at_int_array size)
{
	int fmt = vnpu_npu_format_of(self);

	if (fmt == VNPU_FORMAT_ND || fmt == VNPU_FORMAT_NCHW)
		return vnpu_resize_impl(self, size);
	return vnpu_npu_resize_internal(self, size) ? vnpu_at_retain(self) : NULL;
}

/* BINARY with broadcasting; operands cast to the result dtype on the
 * device first; 0-dim CPU operands are moved to the device. */
static struct vnpu_at_tensor *binary(const char *name, vnpu_keyset_t ks, uint32_t op,
				     struct vnpu_at_tensor *a, struct vnpu_at_tensor *b,
				     struct vnpu_at_scalar alpha)
{
	return npk_binary(name, op, a, b, vnpu_at_result_type(a, b),
			  vnpu_at_scalar_to_double(alpha));
}

struct vnpu_at_tensor *vnpu_npu_add_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other,
					   struct vnpu_at_scalar alpha)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, other);

	/* a float alpha with an integral result, a bool alpha with another:
	 * the CPU kernel words the error */
	if (!npk_float_int_or_bool(dt) ||
	    (!vnpu_at_dtype_is_float(dt) && alpha.kind == VNPU_AT_SCALAR_DOUBLE) ||
	    (alpha.kind == VNPU_AT_SCALAR_BOOL && dt != VNPU_AT_BOOL) ||
	    !npk_alpha_exact(alpha))
		return vnpu_npu_unsupported();
	return binary("aten::add.Tensor", ks, VNPU_BINARY_ADD, self, other, alpha);
}

struct vnpu_at_tensor *vnpu_npu_mul_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other)
{
	if (!npk_float_int_or_bool(vnpu_at_result_type(self, other)))
		return vnpu_npu_unsupported();
	return binary("aten::mul.Tensor", ks, VNPU_BINARY_MUL, self, other, VNPU_AT_INT(1));
}

struct vnpu_at_tensor *vnpu_npu_relu(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	struct vnpu_kp_unary p = { .op = VNPU_UNARY_RELU };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *src, *out;

	if (!npk_float_or_int((enum vnpu_at_dtype)self->dtype))
		return vnpu_npu_unsupported();
	src = vnpu_npu_plain(self);
	out = src ? vnpu_npu_empty_iter(1, (const struct vnpu_at_tensor *[]){ src },
					src->ndim, src->sizes,
					(enum vnpu_at_dtype)src->dtype) : NULL;
	if (out && vnpu_at_numel(out) &&
	    (!vnpu_npu_arg(&l, src, VNPU_ACCESS_READ, &p.src) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch("aten::relu", &l, "unary", &p, sizeof(p), vnpu_at_numel(out)))) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_at_release(src);
	return out;
}

/* GEMM takes ND (strided views included: a transposed operand becomes
 * trans_a/trans_b) or FRACTAL_NZ operands as they are. */
static bool gemm_operand(struct vnpu_at_tensor *t, struct vnpu_at_tensor **use,
			 uint32_t *trans)
{
	*trans = 0;
	if (vnpu_npu_format_of(t) == VNPU_FORMAT_FRACTAL_NZ &&
	    vnpu_npu_is_whole_base(t)) {
		*use = vnpu_at_retain(t);
		return true;
	}
	if (vnpu_npu_format_of(t) != VNPU_FORMAT_ND) {
		*use = vnpu_npu_plain(t);
		return *use != NULL;
	}
	if (t->ndim == 2 && t->strides[0] == 1 && t->sizes[0] > 1 && t->sizes[1] > 1) {
		/* column-major view: the transpose is row-major */
		*use = vnpu_at_view_of(t, 2, (int64_t[]){ t->sizes[1], t->sizes[0] },
				       (int64_t[]){ t->strides[1], t->strides[0] }, t->offset);
		*trans = 1;
		return *use != NULL;
	}
	*use = vnpu_at_retain(t);
	return true;
}

struct vnpu_at_tensor *vnpu_npu_mm(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				   struct vnpu_at_tensor *mat2)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	struct vnpu_kp_gemm p = { .alpha = 1.0f };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *a = NULL, *b = NULL, *out = NULL;

	if (!vnpu_at_check_same_device("aten::mm", 2,
				       (const struct vnpu_at_tensor *[]){ self, mat2 }))
		return NULL;
	if (self->ndim != 2 || mat2->ndim != 2 || self->sizes[1] != mat2->sizes[0] ||
	    self->dtype != mat2->dtype)
		return vnpu_npu_unsupported();	/* the CPU kernel words the error */
	if (dt != VNPU_AT_F32 && dt != VNPU_AT_F16 && dt != VNPU_AT_BF16)
		return vnpu_npu_unsupported();
	out = vnpu_npu_empty(2, (int64_t[]){ self->sizes[0], mat2->sizes[1] }, dt);
	if (!out || !vnpu_at_numel(out))
		return out;
	if (!self->sizes[1]) {
		struct vnpu_at_tensor *r = vnpu_op_fill__Scalar(out, VNPU_AT_INT(0));

		vnpu_at_release(r);
		return r ? out : (vnpu_at_release(out), NULL);
	}
	if (!gemm_operand(self, &a, &p.trans_a) || !gemm_operand(mat2, &b, &p.trans_b) ||
	    !vnpu_npu_arg(&l, a, VNPU_ACCESS_READ, &p.a) ||
	    !vnpu_npu_arg(&l, b, VNPU_ACCESS_READ, &p.b) ||
	    !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	    !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.bias) ||
	    !vnpu_npu_launch("aten::mm", &l, "gemm", &p, sizeof(p),
			     vnpu_at_numel(out) * self->sizes[1])) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_at_release(a);
	vnpu_at_release(b);
	return out;
}

/* The sum of every element: sum.dim_IntList over all dims. */
struct vnpu_at_tensor *vnpu_npu_sum(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				    enum vnpu_at_dtype dtype)
{
	return vnpu_npu_sum_dim_IntList(ks, self, (struct vnpu_at_opt_int_array){ 0 },
					false, dtype);
}

struct vnpu_at_tensor *vnpu_npu_npu_format_cast(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						int64_t acl_format)
{
	if (acl_format != VNPU_FORMAT_ND && acl_format != VNPU_FORMAT_NCHW &&
	    acl_format != VNPU_FORMAT_NC1HWC0 && acl_format != VNPU_FORMAT_FRACTAL_Z &&
	    acl_format != VNPU_FORMAT_FRACTAL_NZ)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "npu::npu_format_cast: unsupported format %lld",
					 (long long)acl_format);
	if (acl_format == VNPU_FORMAT_ND || acl_format == VNPU_FORMAT_NCHW) {
		struct vnpu_at_tensor *p = vnpu_npu_plain(self), *c;

		if (!p)
			return NULL;
		c = vnpu_at_contiguous(p);
		vnpu_at_release(p);
		return c;
	}
	return vnpu_npu_as_format(self, (int)acl_format);
}

int64_t vnpu_npu_get_npu_format(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return vnpu_npu_format_of(self);
}

/* torch_npu's in-place cast: self (a whole base, not a view) takes the
 * cast storage, so every later use reads the new layout. */
struct vnpu_at_tensor *vnpu_npu_npu_format_cast_(vnpu_keyset_t ks,
						 struct vnpu_at_tensor *self,
						 int64_t acl_format)
{
	struct vnpu_at_tensor *c;

	if (self->is_view || self->offset || !vnpu_at_is_contiguous(self) ||
	    self->ndim != self->storage->npu.base_ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "npu::npu_format_cast_: self must be a whole contiguous tensor, not a view");
	c = vnpu_npu_npu_format_cast(ks, self, acl_format);
	if (!c)
		return NULL;
	if (c->storage != self->storage) {
		__atomic_add_fetch(&c->storage->refcount, 1, __ATOMIC_RELAXED);
		vnpu_storage_release(self->storage);
		self->storage = c->storage;
		memcpy(self->strides, c->strides, sizeof(self->strides));
		self->offset = c->offset;
	}
	vnpu_at_release(c);
	return vnpu_at_retain(self);
}

struct vnpu_at_tensor *vnpu_npu_empty_with_format(vnpu_keyset_t ks,
	struct vnpu_at_int_array size, enum vnpu_at_dtype dtype,
	struct vnpu_at_device device, int64_t acl_format)
{
	if (size.n > VNPU_AT_MAX_DIMS)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "npu::empty_with_format: too many dims");
	if (device.type == VNPU_AT_CPU)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "npu::empty_with_format: the device must be an npu");
	for (int64_t i = 0; i < size.n; i++)
		if (size.v[i] < 0)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "npu::empty_with_format: negative dimension %lld",
						 (long long)size.v[i]);
	if (acl_format != VNPU_FORMAT_ND && acl_format != VNPU_FORMAT_NCHW &&
	    acl_format != VNPU_FORMAT_NC1HWC0 &&
	    acl_format != VNPU_FORMAT_FRACTAL_Z &&
	    acl_format != VNPU_FORMAT_FRACTAL_NZ)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "npu::empty_with_format: unsupported format %lld",
					 (long long)acl_format);
	if (!vnpu_npu_ready())
		return NULL;
	/* A factory leaves the caller's device as it was, as torch.empty's
	 * device guard does. */
	int prev = vnpu_npu_current_device();
	bool other = device.type == VNPU_AT_NPU && device.index >= 0 &&
		     device.index != prev;
	struct vnpu_at_tensor *t;

	if (other && !vnpu_at_npu_set_device(device.index))
		return NULL;
	t = vnpu_npu_empty_format((uint32_t)size.n, size.v,
				  dtype == VNPU_AT_DTYPE_NONE ? vnpu_at_default_dtype() : dtype,
				  (int)acl_format);
	if (other)
		vnpu_at_npu_set_device(prev);
	return t;
}
