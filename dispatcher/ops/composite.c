// SPDX-License-Identifier: MIT
/* Composite kernels: CompositeExplicitAutograd (factories, copies, views:
 * one kernel for every backend) and CompositeImplicitAutograd
 * (decompositions into other ops). */
#include "op_util.h"
#include "dispatch_internal.h"

static struct vnpu_at_device dev_or_cpu(struct vnpu_at_device d)
{
	return d.type == VNPU_AT_DEVICE_NONE ? VNPU_AT_DEV_CPU : d;
}

static enum vnpu_at_dtype dt_or(enum vnpu_at_dtype d, enum vnpu_at_dtype def)
{
	return d == VNPU_AT_DTYPE_NONE ? def : d;
}

struct vnpu_at_tensor *vnpu_cea_empty_like(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return vnpu_op_empty_memory_format((struct vnpu_at_int_array){ self->sizes, self->ndim },
		dt_or(dtype, (enum vnpu_at_dtype)self->dtype),
		device.type == VNPU_AT_DEVICE_NONE ? self->storage->device : device);
}

struct vnpu_at_tensor *vnpu_cea_full(vnpu_keyset_t ks, struct vnpu_at_int_array size,
				     struct vnpu_at_scalar fill_value,
				     enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	enum vnpu_at_dtype def = fill_value.kind == VNPU_AT_SCALAR_DOUBLE ? vnpu_at_default_dtype() :
				 fill_value.kind == VNPU_AT_SCALAR_BOOL ? VNPU_AT_BOOL : VNPU_AT_I64;
	struct vnpu_at_tensor *t = vnpu_op_empty_memory_format(size, dt_or(dtype, def),
							       dev_or_cpu(device));
	struct vnpu_at_tensor *r;

	if (!t)
		return NULL;
	r = vnpu_op_fill__Scalar(t, fill_value);
	vnpu_at_release(t);
	return r;
}

struct vnpu_at_tensor *vnpu_cea_zeros(vnpu_keyset_t ks, struct vnpu_at_int_array size,
				      enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return vnpu_op_full(size, VNPU_AT_INT(0), dt_or(dtype, vnpu_at_default_dtype()), device);
}

struct vnpu_at_tensor *vnpu_cea_ones(vnpu_keyset_t ks, struct vnpu_at_int_array size,
				     enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return vnpu_op_full(size, VNPU_AT_INT(1), dt_or(dtype, vnpu_at_default_dtype()), device);
}

static struct vnpu_at_tensor *full_like(struct vnpu_at_tensor *self, int64_t v,
					enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return vnpu_op_full((struct vnpu_at_int_array){ self->sizes, self->ndim },
			    VNPU_AT_INT(v), dt_or(dtype, (enum vnpu_at_dtype)self->dtype),
			    device.type == VNPU_AT_DEVICE_NONE ? self->storage->device : device);
}

struct vnpu_at_tensor *vnpu_cea_zeros_like(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return full_like(self, 0, dtype, device);
}

struct vnpu_at_tensor *vnpu_cea_ones_like(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return full_like(self, 1, dtype, device);
}

/*
 * arange as PyTorch composes it: an empty result of the inferred dtype,
 * filled by arange.start_out (PyTorch's quirks included, op_util's
 * vnpu_at_arange_plan: for an integer dtype the bounds and step are
 * first converted to int64, so arange(-1, 1, 0.25, int64) has step 0;
 * the length of an int32 range comes from the original scalars,
 * arange(-3, 7.25, 1) has 10 int64 elements and 11 int32 ones).
 */
struct vnpu_at_tensor *vnpu_cea_arange_start_step(vnpu_keyset_t ks,
	struct vnpu_at_scalar start, struct vnpu_at_scalar end, struct vnpu_at_scalar step,
	enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	/* int64 when every bound is an integer, as PyTorch's arange */
	bool fl = start.kind == VNPU_AT_SCALAR_DOUBLE || end.kind == VNPU_AT_SCALAR_DOUBLE ||
		  step.kind == VNPU_AT_SCALAR_DOUBLE;
	enum vnpu_at_dtype dt = dt_or(dtype, fl ? vnpu_at_default_dtype() : VNPU_AT_I64);
	struct vnpu_at_tensor *out, *r;

	(void)ks;
	out = vnpu_op_empty_memory_format(VNPU_AT_INTS(0), dt, dev_or_cpu(device));
	r = out ? vnpu_op_arange_start_out(start, end, step, out) : NULL;
	vnpu_at_release(r);
	if (!r) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

/* linspace: steps points of the default float dtype (or dtype) from
 * start to end, by linspace.out. */
struct vnpu_at_tensor *vnpu_cea_linspace(vnpu_keyset_t ks, struct vnpu_at_scalar start,
					 struct vnpu_at_scalar end, int64_t steps,
					 enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	struct vnpu_at_tensor *out, *r;

	(void)ks;
	if (steps < 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::linspace: number of steps must be non-negative");
	out = vnpu_op_empty_memory_format(VNPU_AT_INTS(steps),
					  dt_or(dtype, vnpu_at_default_dtype()),
					  dev_or_cpu(device));
	r = out ? vnpu_op_linspace_out(start, end, steps, out) : NULL;
	vnpu_at_release(r);
	if (!r) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

struct vnpu_at_tensor *vnpu_cea_zero_(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return vnpu_op_fill__Scalar(self, VNPU_AT_INT(0));
}

struct vnpu_at_tensor *vnpu_cea__to_copy(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					 enum vnpu_at_dtype dtype, struct vnpu_at_device device,
					 bool non_blocking)
{
	struct vnpu_at_tensor *t = vnpu_op_empty_memory_format(
		(struct vnpu_at_int_array){ self->sizes, self->ndim },
		dt_or(dtype, (enum vnpu_at_dtype)self->dtype),
		device.type == VNPU_AT_DEVICE_NONE ? self->storage->device : device);
	struct vnpu_at_tensor *r;

	if (!t)
		return NULL;
	r = vnpu_op_copy_(t, self, non_blocking);
	vnpu_at_release(t);
	return r;
}

struct vnpu_at_tensor *vnpu_cea_clone(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return vnpu_op__to_copy(self, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE, false);
}

struct vnpu_at_tensor *vnpu_cia_to_dtype(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					 enum vnpu_at_dtype dtype, bool non_blocking, bool copy)
{
	if (!copy && dtype == self->dtype)
		return vnpu_at_retain(self);
	return vnpu_op__to_copy(self, dtype, VNPU_AT_DEV_NONE, non_blocking);
}

struct vnpu_at_tensor *vnpu_cia_to_device(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  struct vnpu_at_device device, enum vnpu_at_dtype dtype,
					  bool non_blocking, bool copy)
{
	if (!copy && dtype == self->dtype && device.type == self->storage->device.type &&
	    device.index == self->storage->device.index)
		return vnpu_at_retain(self);
	return vnpu_op__to_copy(self, dtype, device, non_blocking);
}

struct vnpu_at_tensor *vnpu_cia_contiguous(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	if (vnpu_at_is_contiguous(self))
		return vnpu_at_retain(self);
	return vnpu_op_clone(self);
}

struct vnpu_at_scalar vnpu_cia_item(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return vnpu_op__local_scalar_dense(self);
}

/* ---- views ------------------------------------------------------------------------ */

/* c10's computeStride: strides for viewing (sizes, strides) as new sizes
 * without a copy, or false. */
static bool view_strides(const struct vnpu_at_tensor *t, uint32_t nd,
			 const int64_t *ns, int64_t *out)
{
	int64_t numel = vnpu_at_numel(t), view_d = (int64_t)nd - 1;
	int64_t chunk_base = t->ndim ? t->strides[t->ndim - 1] : 1;
	int64_t tensor_numel = 1, view_numel = 1;

	if (!numel) {
		vnpu_at_contiguous_strides(nd, ns, out);
		return true;
	}
	if (!t->ndim) {
		/* one element: any shape of ones views it (PyTorch's
		 * computeStride gives stride 1) */
		for (uint32_t d = 0; d < nd; d++)
			out[d] = 1;
		return true;
	}
	for (int64_t d = (int64_t)t->ndim - 1; d >= 0; d--) {
		tensor_numel *= t->sizes[d];
		if (d == 0 || (t->sizes[d - 1] != 1 &&
			       t->strides[d - 1] != tensor_numel * chunk_base)) {
			while (view_d >= 0 && (view_numel < tensor_numel || ns[view_d] == 1)) {
				out[view_d] = view_numel * chunk_base;
				view_numel *= ns[view_d];
				view_d--;
			}
			if (view_numel != tensor_numel)
				return false;
			if (d > 0) {
				chunk_base = t->strides[d - 1];
				tensor_numel = 1;
				view_numel = 1;
			}
		}
	}
	return view_d == -1;
}

/* Resolves one -1 in a size list against numel. */
static bool infer_size(const char *op, struct vnpu_at_int_array size, int64_t numel,
		       int64_t *out)
{
	int64_t prod = 1, infer = -1;

	if (size.n > VNPU_AT_MAX_DIMS) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: too many dims", op);
		return false;
	}
	for (int64_t i = 0; i < size.n; i++) {
		out[i] = size.v[i];
		if (size.v[i] == -1) {
			if (infer >= 0) {
				vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: only one dimension can be inferred", op);
				return false;
			}
			infer = i;
		} else if (size.v[i] < 0) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: invalid shape dimension %lld",
					  op, (long long)size.v[i]);
			return false;
		} else {
			prod *= size.v[i];
		}
	}
	if (infer >= 0 && prod > 0 && numel % prod == 0)
		out[infer] = numel / prod;
	else if (infer >= 0 || prod != numel) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: shape is invalid for input of size %lld",
				  op, (long long)numel);
		return false;
	}
	return true;
}

struct vnpu_at_tensor *vnpu_cea_view(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				     struct vnpu_at_int_array size)
{
	int64_t ns[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS];

	if (!infer_size("aten::view", size, vnpu_at_numel(self), ns))
		return NULL;
	if (!view_strides(self, (uint32_t)size.n, ns, st))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::view: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
	return vnpu_at_view_of(self, (uint32_t)size.n, ns, st, self->offset);
}

struct vnpu_at_tensor *vnpu_cia_reshape(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					struct vnpu_at_int_array shape)
{
	int64_t ns[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *c, *r;

	if (!infer_size("aten::reshape", shape, vnpu_at_numel(self), ns))
		return NULL;
	if (view_strides(self, (uint32_t)shape.n, ns, st))
		return vnpu_op_view(self, (struct vnpu_at_int_array){ ns, shape.n });
	c = vnpu_op_clone(self);
	if (!c)
		return NULL;
	r = vnpu_op_view(c, (struct vnpu_at_int_array){ ns, shape.n });
	vnpu_at_release(c);
	return r;
}

struct vnpu_at_tensor *vnpu_cea_as_strided(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   struct vnpu_at_int_array size,
					   struct vnpu_at_int_array stride,
					   struct vnpu_at_opt_int storage_offset)
{
	if (size.n != stride.n || size.n > VNPU_AT_MAX_DIMS)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::as_strided: mismatch in length of strides and shape");
	return vnpu_at_view_of(self, (uint32_t)size.n, size.v, stride.v,
			       storage_offset.has ? storage_offset.v : self->offset);
}

struct vnpu_at_tensor *vnpu_cea_permute(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					struct vnpu_at_int_array dims)
{
	int64_t ns[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS];
	uint32_t seen = 0;

	if (dims.n != self->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::permute: number of dims don't match in permute");
	for (int64_t i = 0; i < dims.n; i++) {
		int64_t d = vnpu_at_wrap_dim(dims.v[i], self->ndim);

		if (d < 0)
			return NULL;
		if (seen & (1u << d))
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "aten::permute: repeated dim in permute");
		seen |= 1u << d;
		ns[i] = self->sizes[d];
		st[i] = self->strides[d];
	}
	return vnpu_at_view_of(self, self->ndim, ns, st, self->offset);
}

struct vnpu_at_tensor *vnpu_cea_transpose_int(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					      int64_t dim0, int64_t dim1)
{
	int64_t perm[VNPU_AT_MAX_DIMS], a, b;

	a = vnpu_at_wrap_dim(dim0, self->ndim);
	b = a < 0 ? -1 : vnpu_at_wrap_dim(dim1, self->ndim);
	if (b < 0)
		return NULL;
	if (!self->ndim)
		return vnpu_at_view_of(self, 0, NULL, NULL, self->offset);
	for (uint32_t i = 0; i < self->ndim; i++)
		perm[i] = i;
	perm[a] = b;
	perm[b] = a;
	return vnpu_cea_permute(ks, self, (struct vnpu_at_int_array){ perm, self->ndim });
}

struct vnpu_at_tensor *vnpu_cia_t(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	if (self->ndim > 2)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::t: t() expects a tensor with <= 2 dimensions, but self is %uD",
					 self->ndim);
	if (self->ndim < 2)
		return vnpu_op_view(self, (struct vnpu_at_int_array){ self->sizes, self->ndim });
	return vnpu_op_transpose_int(self, 0, 1);
}

struct vnpu_at_tensor *vnpu_cea_unsqueeze(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  int64_t dim)
{
	int64_t ns[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS], d;

	if (self->ndim == VNPU_AT_MAX_DIMS)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::unsqueeze: too many dims");
	d = vnpu_at_wrap_dim(dim, self->ndim + 1);
	if (d < 0)
		return NULL;
	for (int64_t i = 0, j = 0; i <= self->ndim; i++) {
		if (i == d) {
			ns[i] = 1;
			st[i] = j < self->ndim ? self->sizes[j] * self->strides[j] : 1;
			continue;
		}
		ns[i] = self->sizes[j];
		st[i] = self->strides[j++];
	}
	return vnpu_at_view_of(self, self->ndim + 1u, ns, st, self->offset);
}

struct vnpu_at_tensor *vnpu_cea_squeeze_dim(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim)
{
	int64_t ns[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS], d;
	uint32_t n = 0;

	d = vnpu_at_wrap_dim(dim, self->ndim);
	if (d < 0)
		return NULL;
	for (uint32_t i = 0; i < self->ndim; i++) {
		if ((int64_t)i == d && self->sizes[i] == 1)
			continue;
		ns[n] = self->sizes[i];
		st[n++] = self->strides[i];
	}
	return vnpu_at_view_of(self, n, ns, st, self->offset);
}

struct vnpu_at_tensor *vnpu_cea_expand(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				       struct vnpu_at_int_array size, bool implicit)
{
	int64_t ns[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS];
	int64_t lead = size.n - self->ndim;

	if (size.n > VNPU_AT_MAX_DIMS || lead < 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::expand: the number of sizes provided (%lld) must be greater or equal to the number of dimensions in the tensor (%u)",
					 (long long)size.n, self->ndim);
	for (int64_t i = 0; i < size.n; i++) {
		int64_t s = i < lead ? 1 : self->sizes[i - lead];
		int64_t want = size.v[i] == -1 ? s : size.v[i];

		if (i < lead && size.v[i] == -1)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "aten::expand: -1 not allowed in a leading, non-existing dimension");
		if (s != want && s != 1)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "aten::expand: the expanded size of the tensor (%lld) must match the existing size (%lld) at non-singleton dimension %lld",
						 (long long)want, (long long)s, (long long)i);
		ns[i] = want;
		st[i] = i < lead || (s == 1 && want != 1) ? 0 : self->strides[i - lead];
	}
	return vnpu_at_view_of(self, (uint32_t)size.n, ns, st, self->offset);
}

struct vnpu_at_tensor *vnpu_cea_slice_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					     int64_t dim, struct vnpu_at_opt_int start,
					     struct vnpu_at_opt_int end, int64_t step)
{
	int64_t ns[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS], d, s, e, len;

	if (!self->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::slice: slice() cannot be applied to a 0-dim tensor.");
	d = vnpu_at_wrap_dim(dim, self->ndim);
	if (d < 0)
		return NULL;
	if (step <= 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::slice: slice step must be positive");
	len = self->sizes[d];
	s = start.has ? start.v : 0;
	e = end.has ? end.v : len;
	if (s < 0)
		s += len;
	if (e < 0)
		e += len;
	s = s < 0 ? 0 : s > len ? len : s;
	e = e < s ? s : e > len ? len : e;
	for (uint32_t i = 0; i < self->ndim; i++) {
		ns[i] = self->sizes[i];
		st[i] = self->strides[i];
	}
	ns[d] = (e - s + step - 1) / step;
	st[d] = self->strides[d] * step;
	return vnpu_at_view_of(self, self->ndim, ns, st, self->offset + s * self->strides[d]);
}

struct vnpu_at_tensor *vnpu_cea_select_int(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   int64_t dim, int64_t index)
{
	int64_t ns[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS], d;
	uint32_t n = 0;

	if (!self->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::select: select() cannot be applied to a 0-dim tensor.");
	d = vnpu_at_wrap_dim(dim, self->ndim);
	if (d < 0)
		return NULL;
	if (index < -self->sizes[d] || index >= self->sizes[d])
		return vnpu_at_error_set(VNPU_AT_ERR_INDEX,
					 "aten::select: index %lld out of range for tensor of size %lld at dimension %lld",
					 (long long)index, (long long)self->sizes[d], (long long)d);
	if (index < 0)
		index += self->sizes[d];
	for (uint32_t i = 0; i < self->ndim; i++) {
		if ((int64_t)i == d)
			continue;
		ns[n] = self->sizes[i];
		st[n++] = self->strides[i];
	}
	return vnpu_at_view_of(self, n, ns, st, self->offset + index * self->strides[d]);
}

struct vnpu_at_tensor *vnpu_cia_flatten_using_ints(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						   int64_t start_dim, int64_t end_dim)
{
	int64_t ns[VNPU_AT_MAX_DIMS], s, e, n = 0;

	if (!self->ndim)
		return vnpu_op_reshape(self, VNPU_AT_INTS(1));
	s = vnpu_at_wrap_dim(start_dim, self->ndim);
	e = s < 0 ? -1 : vnpu_at_wrap_dim(end_dim, self->ndim);
	if (e < 0)
		return NULL;
	if (s > e)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "aten::flatten: start_dim cannot come after end_dim");
	for (int64_t i = 0; i < self->ndim; i++) {
		if (i > s && i <= e) {
			ns[n - 1] *= self->sizes[i];
			continue;
		}
		ns[n++] = self->sizes[i];
	}
	return vnpu_op_reshape(self, (struct vnpu_at_int_array){ ns, n });
}

/* ---- arithmetic decompositions --------------------------------------------------- */

/*
 * A Python scalar is a "wrapped number" to PyTorch: a 0-dim tensor that
 * never decides the result dtype against a tensor of its category, not
 * even a 0-dim one (0-dim f16 + nan is f16; vnpu_at_result_type).
 */
static struct vnpu_at_tensor *wrapped_number(struct vnpu_at_scalar v,
					     const struct vnpu_at_tensor *self)
{
	/* full's dtype for v (float32 for a float) unless self computes in
	 * float64, which must not see v rounded to float32; a bool is a
	 * bool one, as PyTorch 2's scalar_to_tensor makes it (bool + True is
	 * bool through aten::add.Scalar; 1.13 made it int64) */
	enum vnpu_at_dtype dt = v.kind == VNPU_AT_SCALAR_DOUBLE &&
				self->dtype == VNPU_AT_F64 ? VNPU_AT_F64 :
				v.kind == VNPU_AT_SCALAR_BOOL ? VNPU_AT_BOOL :
				VNPU_AT_DTYPE_NONE;
	struct vnpu_at_tensor *s = vnpu_op_full(VNPU_AT_NO_INTS, v, dt,
						self->storage->device);

	if (s)
		s->wrapped_number = true;
	return s;
}

struct vnpu_at_tensor *vnpu_cia_add_Scalar(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   struct vnpu_at_scalar other, struct vnpu_at_scalar alpha)
{
	struct vnpu_at_tensor *s = wrapped_number(other, self), *r;

	if (!s)
		return NULL;
	r = vnpu_op_add_Tensor(self, s, alpha);
	vnpu_at_release(s);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_mul_Scalar(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   struct vnpu_at_scalar other)
{
	struct vnpu_at_tensor *s = wrapped_number(other, self), *r;

	if (!s)
		return NULL;
	r = vnpu_op_mul_Tensor(self, s);
	vnpu_at_release(s);
	return r;
}

/* The product of sizes[0..n). */
static int64_t prod_of(const int64_t *sizes, uint32_t n)
{
	int64_t p = 1;

	for (uint32_t i = 0; i < n; i++)
		p *= sizes[i];
	return p;
}

/* t viewed or copied to shape (n dims); consumes t. */
static struct vnpu_at_tensor *reshaped(struct vnpu_at_tensor *t, uint32_t n,
				       const int64_t *shape)
{
	struct vnpu_at_tensor *r;

	if (!t)
		return NULL;
	r = vnpu_op_reshape(t, (struct vnpu_at_int_array){ shape, n });
	vnpu_at_release(t);
	return r;
}

/*
 * torch.matmul for every rank pair (PyTorch's at::native::matmul):
 * 1-D @ 1-D is a dot product, 2-D @ 1-D a matrix-vector product, 1-D @
 * 2-D a vector-matrix one, (>=3)-D @ (1|2)-D folds the batch into the
 * rows of one mm (and (1|2)-D @ (>=3)-D, transposed), and the rest is a
 * bmm over the broadcast batch (a 1-D operand gets a dim of 1 that the
 * result drops).
 */
struct vnpu_at_tensor *vnpu_cia_matmul(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				       struct vnpu_at_tensor *other)
{
	static const char name[] = "aten::matmul";
	uint32_t d1 = self->ndim, d2 = other->ndim;
	int64_t out[VNPU_AT_MAX_DIMS + 1], k1, k2;
	uint32_t no = 0;

	if (!d1 || !d2)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: both arguments to matmul need to be at least 1D, but they are %uD and %uD",
					 name, d1, d2);
	k1 = self->sizes[d1 - 1];
	k2 = other->sizes[d2 > 1 ? d2 - 2 : 0];
	if (k1 != k2) {
		if (d1 == 1 && d2 == 1)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same number of elements, but got %lld and %lld elements respectively",
						 name, (long long)k1, (long long)k2,
						 (long long)k1, (long long)k2);
		if (d1 == 2 && d2 == 1)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
						 name, (long long)self->sizes[0],
						 (long long)self->sizes[0], (long long)k1,
						 (long long)k2);
	}
	if (d1 == 3 && d2 == 3 && self->sizes[0] != other->sizes[0] &&
	    (self->sizes[0] == 1 || other->sizes[0] == 1)) {
		/* PyTorch 2 squeezes a 3-D operand's batch of 1 against a
		 * 3-D batch, so the other's batch folds into one mm: the
		 * gradient of the squeezed one is then one product over the
		 * whole batch (not per-batch products rounded, then summed) */
		bool first = self->sizes[0] == 1;
		struct vnpu_at_tensor *sq = vnpu_op_squeeze_dim(first ? self : other,
								0), *r;

		if (!sq)
			return NULL;
		r = first ? vnpu_cia_matmul(ks, sq, other) :
			    vnpu_cia_matmul(ks, self, sq);
		vnpu_at_release(sq);
		return r;
	}
	if (d1 <= 2 && d2 <= 2) {
		/* one mm: vectors as a row and a column */
		struct vnpu_at_tensor *a, *b, *m;

		a = reshaped(vnpu_at_retain(self), 2,
			     (int64_t[]){ d1 == 2 ? self->sizes[0] : 1, k1 });
		b = reshaped(vnpu_at_retain(other), 2,
			     (int64_t[]){ k2, d2 == 2 ? other->sizes[1] : 1 });
		m = a && b ? vnpu_op_mm(a, b) : NULL;
		vnpu_at_release(a);
		vnpu_at_release(b);
		if (d1 == 2)
			out[no++] = self->sizes[0];
		if (d2 == 2)
			out[no++] = other->sizes[1];
		return reshaped(m, no, out);
	}
	if (d1 >= 3 && d2 <= 2) {
		/* fold self's batch into the rows of one mm */
		struct vnpu_at_tensor *a, *b, *m;
		int64_t p = d2 == 2 ? other->sizes[1] : 1;

		a = reshaped(vnpu_at_retain(self), 2,
			     (int64_t[]){ prod_of(self->sizes, d1 - 1), k1 });
		b = reshaped(vnpu_at_retain(other), 2, (int64_t[]){ k2, p });
		m = a && b ? vnpu_op_mm(a, b) : NULL;
		vnpu_at_release(a);
		vnpu_at_release(b);
		for (uint32_t i = 0; i + 1 < d1; i++)
			out[no++] = self->sizes[i];
		if (d2 == 2)
			out[no++] = p;
		return reshaped(m, no, out);
	}
	if (d1 <= 2 && d2 >= 3) {
		/* transposed, the same fold: (other^T @ self^T)^T, so that the
		 * gradient of self is one mm over the whole batch as in
		 * PyTorch (not a sum of per-batch products, rounded each) */
		struct vnpu_at_tensor *ot, *st, *m, *r = NULL;

		ot = vnpu_op_transpose_int(other, -1, -2);
		st = d1 == 2 ? vnpu_op_t(self) : vnpu_at_retain(self);
		m = ot && st ? vnpu_cia_matmul(ks, ot, st) : NULL;
		vnpu_at_release(ot);
		vnpu_at_release(st);
		if (m && d1 == 2) {
			struct vnpu_at_tensor *mt = vnpu_op_transpose_int(m, -1, -2);

			r = mt ? vnpu_op_contiguous(mt) : NULL;
			vnpu_at_release(mt);
		} else {
			r = vnpu_at_retain(m);
		}
		vnpu_at_release(m);
		return r;
	}
	{
		/* bmm over the broadcast batch */
		uint32_t b1 = d1 > 2 ? d1 - 2 : 0, b2 = d2 > 2 ? d2 - 2 : 0;
		uint32_t nb = b1 > b2 ? b1 : b2;
		int64_t batch[VNPU_AT_MAX_DIMS], ea[VNPU_AT_MAX_DIMS], eb[VNPU_AT_MAX_DIMS];
		int64_t n = d1 > 1 ? self->sizes[d1 - 2] : 1;
		int64_t p = d2 > 1 ? other->sizes[d2 - 1] : 1, nbatch;
		struct vnpu_at_tensor *a, *b, *ax = NULL, *bx = NULL, *m = NULL;

		for (uint32_t i = 0; i < nb; i++) {
			int64_t x = i + b1 >= nb ? self->sizes[i + b1 - nb] : 1;
			int64_t y = i + b2 >= nb ? other->sizes[i + b2 - nb] : 1;

			if (x != y && x != 1 && y != 1)
				return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
							 "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton dimension %u",
							 name, (long long)x, (long long)y, i);
			batch[i] = x == 1 ? y : x;
		}
		nbatch = prod_of(batch, nb);
		memcpy(ea, batch, nb * sizeof(int64_t));
		memcpy(eb, batch, nb * sizeof(int64_t));
		ea[nb] = n;
		ea[nb + 1] = k1;
		eb[nb] = k2;
		eb[nb + 1] = p;
		/* vectors as [1, k] and [k, 1] matrices first */
		a = reshaped(vnpu_at_retain(self), d1 == 1 ? 2 : d1,
			     d1 == 1 ? (int64_t[]){ 1, k1 } : self->sizes);
		b = reshaped(vnpu_at_retain(other), d2 == 1 ? 2 : d2,
			     d2 == 1 ? (int64_t[]){ k2, 1 } : other->sizes);
		if (a && b) {
			ax = reshaped(vnpu_op_expand(a, (struct vnpu_at_int_array){ ea, nb + 2 }, false),
				      3, (int64_t[]){ nbatch, n, k1 });
			bx = reshaped(vnpu_op_expand(b, (struct vnpu_at_int_array){ eb, nb + 2 }, false),
				      3, (int64_t[]){ nbatch, k2, p });
		}
		m = ax && bx ? vnpu_op_bmm(ax, bx) : NULL;
		vnpu_at_release(a);
		vnpu_at_release(b);
		vnpu_at_release(ax);
		vnpu_at_release(bx);
		memcpy(out, batch, nb * sizeof(int64_t));
		no = nb;
		if (d1 > 1)
			out[no++] = n;
		if (d2 > 1)
			out[no++] = p;
		return reshaped(m, no, out);
	}
}

struct vnpu_at_tensor *vnpu_cia_linear(vnpu_keyset_t ks, struct vnpu_at_tensor *input,
				       struct vnpu_at_tensor *weight, struct vnpu_at_tensor *bias)
{
	struct vnpu_at_tensor *wt = vnpu_op_t(weight), *y, *r;

	/* with a bias, 2-D input and contiguous input of any rank (flattened
	 * to 2-D) are one addmm, as in PyTorch: the bias added before the one
	 * rounding */
	if (wt && bias && input->ndim >= 1 &&
	    (input->ndim == 2 || (bias->ndim == 1 && vnpu_at_is_contiguous(input)))) {
		int64_t k = input->sizes[input->ndim - 1];
		int64_t rows[2] = { k ? vnpu_at_numel(input) / k : 0, k };
		int64_t out[VNPU_AT_MAX_DIMS];
		struct vnpu_at_tensor *x = vnpu_op_view(input, (struct vnpu_at_int_array){ rows, 2 });
		struct vnpu_at_tensor *m = x ? vnpu_op_addmm(bias, x, wt, VNPU_AT_INT(1),
							     VNPU_AT_INT(1)) : NULL;

		vnpu_at_release(x);
		vnpu_at_release(wt);
		if (!m || input->ndim == 2)
			return m;
		for (int i = 0; i < input->ndim - 1; i++)
			out[i] = input->sizes[i];
		out[input->ndim - 1] = m->sizes[1];
		r = vnpu_op_view(m, (struct vnpu_at_int_array){ out, input->ndim });
		vnpu_at_release(m);
		return r;
	}
	y = wt ? vnpu_op_matmul(input, wt) : NULL;
	vnpu_at_release(wt);
	if (!y || !bias)
		return y;
	r = vnpu_op_add_Tensor(y, bias, VNPU_AT_INT(1));
	vnpu_at_release(y);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_conv2d(vnpu_keyset_t ks, struct vnpu_at_tensor *input,
				       struct vnpu_at_tensor *weight, struct vnpu_at_tensor *bias,
				       struct vnpu_at_int_array stride, struct vnpu_at_int_array padding,
				       struct vnpu_at_int_array dilation, int64_t groups)
{
	return vnpu_op_convolution(input, weight, bias, stride, padding, dilation, false,
				   VNPU_AT_INTS(0, 0), groups);
}

struct vnpu_at_tensor *vnpu_cia_max_pool2d(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   struct vnpu_at_int_array kernel_size,
					   struct vnpu_at_int_array stride,
					   struct vnpu_at_int_array padding,
					   struct vnpu_at_int_array dilation, bool ceil_mode)
{
	struct vnpu_ret_max_pool2d_with_indices r = vnpu_op_max_pool2d_with_indices(
		self, kernel_size, stride, padding, dilation, ceil_mode);

	vnpu_at_release(r.r1);
	return r.r0;
}

struct vnpu_at_tensor *vnpu_cia_softmax_int(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *c, *r;

	if (dtype == VNPU_AT_DTYPE_NONE || dtype == self->dtype)
		return vnpu_op__softmax(self, dim, false);
	c = vnpu_op__to_copy(self, dtype, VNPU_AT_DEV_NONE, false);
	r = c ? vnpu_op__softmax(c, dim, false) : NULL;
	vnpu_at_release(c);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_log_softmax_int(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						int64_t dim, enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *c, *r;

	if (dtype == VNPU_AT_DTYPE_NONE || dtype == self->dtype)
		return vnpu_op__log_softmax(self, dim, false);
	c = vnpu_op__to_copy(self, dtype, VNPU_AT_DEV_NONE, false);
	r = c ? vnpu_op__log_softmax(c, dim, false) : NULL;
	vnpu_at_release(c);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_layer_norm(vnpu_keyset_t ks, struct vnpu_at_tensor *input,
					   struct vnpu_at_int_array normalized_shape,
					   struct vnpu_at_tensor *weight, struct vnpu_at_tensor *bias,
					   double eps, bool cudnn_enable)
{
	struct vnpu_ret_native_layer_norm r = vnpu_op_native_layer_norm(
		input, normalized_shape, weight, bias, eps);

	vnpu_at_release(r.r1);
	vnpu_at_release(r.r2);
	return r.r0;
}

/* A 0-dim tensor of dt on t's device holding v. */
static struct vnpu_at_tensor *scalar_like(const struct vnpu_at_tensor *t,
					  double v)
{
	return vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(v),
				     (enum vnpu_at_dtype)t->dtype,
				     vnpu_at_device_of(t));
}

/* x * weight, the class weights along x's class dim (1 when x has 2+
 * dims); x itself (a new reference) without weights. */
static struct vnpu_at_tensor *class_weighted(struct vnpu_at_tensor *x,
					     struct vnpu_at_tensor *weight)
{
	int64_t cdim = x->ndim >= 2 ? 1 : 0, ws[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *wv, *r;

	if (!weight)
		return vnpu_at_retain(x);
	for (uint32_t d = 0; d < x->ndim; d++)
		ws[d] = d == cdim ? x->sizes[cdim] : 1;
	wv = vnpu_op_reshape(weight, (struct vnpu_at_int_array){ ws, x->ndim });
	r = wv ? vnpu_op_mul_Tensor(x, wv) : NULL;
	vnpu_at_release(wv);
	return r;
}

/*
 * PyTorch 1.13's label smoothing for class-index targets: the smoothing
 * term -sum_c w_c logp_c per sample (0 where the target is ignored),
 * reduced as the loss is (a mean divides by the weights, or the number,
 * of the targets kept), and mixed in as (1 - s) * nll + term * s / C.
 */
static struct vnpu_at_tensor *smoothing_term(struct vnpu_at_tensor *logp,
					     struct vnpu_at_tensor *target,
					     struct vnpu_at_tensor *weight,
					     int64_t reduction,
					     int64_t ignore_index)
{
	int64_t cdim = logp->ndim >= 2 ? 1 : 0;
	struct vnpu_at_tensor *prod, *sum = NULL, *neg = NULL;
	struct vnpu_at_tensor *mask = NULL, *zero = NULL, *smooth = NULL;
	struct vnpu_at_tensor *ret = NULL;

	prod = class_weighted(logp, weight);
	sum = prod ? vnpu_op_sum_dim_IntList(prod, (struct vnpu_at_opt_int_array){
		true, { &cdim, 1 } }, false, VNPU_AT_DTYPE_NONE) : NULL;
	neg = sum ? vnpu_op_neg(sum) : NULL;
	mask = neg ? vnpu_op_eq_Scalar(target, VNPU_AT_INT(ignore_index)) : NULL;
	zero = mask ? scalar_like(neg, 0.0) : NULL;
	smooth = zero ? vnpu_op_where_self(mask, zero, neg) : NULL;
	if (smooth && reduction == 0) {
		ret = vnpu_at_retain(smooth);
	} else if (smooth && reduction == 2) {
		ret = vnpu_op_sum(smooth, VNPU_AT_DTYPE_NONE);
	} else if (smooth) {
		/* sum / the weights (or the number) of the targets kept */
		struct vnpu_at_tensor *z = vnpu_at_scalar_tensor(VNPU_AT_INT(0),
			(enum vnpu_at_dtype)target->dtype, vnpu_at_device_of(target));
		struct vnpu_at_tensor *safe = z ? vnpu_op_where_self(mask, z, target) : NULL;
		struct vnpu_at_tensor *flat = safe ? vnpu_op_reshape(safe, VNPU_AT_INTS(-1)) : NULL;
		struct vnpu_at_tensor *wsel = !flat ? NULL : weight ?
			vnpu_op_index_select(weight, 0, flat) :
			vnpu_op_ones((struct vnpu_at_int_array){ flat->sizes, 1 },
				     (enum vnpu_at_dtype)logp->dtype,
				     vnpu_at_device_of(logp));
		struct vnpu_at_tensor *fmask = wsel ? vnpu_op_reshape(mask, VNPU_AT_INTS(-1)) : NULL;
		struct vnpu_at_tensor *wz = fmask ? scalar_like(wsel, 0.0) : NULL;
		struct vnpu_at_tensor *kept = wz ? vnpu_op_where_self(fmask, wz, wsel) : NULL;
		struct vnpu_at_tensor *den = kept ? vnpu_op_sum(kept, VNPU_AT_DTYPE_NONE) : NULL;
		struct vnpu_at_tensor *num = den ? vnpu_op_sum(smooth, VNPU_AT_DTYPE_NONE) : NULL;

		ret = num ? vnpu_op_div_Tensor(num, den) : NULL;
		vnpu_at_release(z);
		vnpu_at_release(safe);
		vnpu_at_release(flat);
		vnpu_at_release(wsel);
		vnpu_at_release(fmask);
		vnpu_at_release(wz);
		vnpu_at_release(kept);
		vnpu_at_release(den);
		vnpu_at_release(num);
	}
	vnpu_at_release(prod);
	vnpu_at_release(sum);
	vnpu_at_release(neg);
	vnpu_at_release(mask);
	vnpu_at_release(zero);
	vnpu_at_release(smooth);
	return ret;
}

/* x released, the product x * y kept (NULL passes through). */
static struct vnpu_at_tensor *times(struct vnpu_at_tensor *x,
				    struct vnpu_at_tensor *y)
{
	struct vnpu_at_tensor *r = x && y ? vnpu_op_mul_Tensor(x, y) : NULL;

	vnpu_at_release(x);
	return r;
}

/*
 * Targets that are class probabilities (a float target of the input's
 * shape), as PyTorch 1.13: -sum over classes of log_softmax(x) * t * w,
 * t smoothed to t (1 - s) + s / C; a mean divides by the number of
 * samples (input numel / C; NaN when empty), not by the weights.
 */
static struct vnpu_at_tensor *cross_entropy_probs(struct vnpu_at_tensor *self,
						  struct vnpu_at_tensor *target,
						  struct vnpu_at_tensor *weight,
						  int64_t reduction,
						  double label_smoothing)
{
	int64_t cdim = self->ndim >= 2 ? 1 : 0, C = self->sizes[cdim];
	struct vnpu_at_tensor *t, *p, *s, *n, *r;

	t = label_smoothing > 0.0 ?
	    vnpu_op_mul_Scalar(target, VNPU_AT_DOUBLE(1.0 - label_smoothing)) :
	    vnpu_at_retain(target);
	if (t && label_smoothing > 0.0) {
		struct vnpu_at_tensor *u =
			vnpu_op_add_Scalar(t, VNPU_AT_DOUBLE(label_smoothing / (double)C),
					   VNPU_AT_INT(1));

		vnpu_at_release(t);
		t = u;
	}
	p = times(vnpu_op__log_softmax(self, cdim, false), t);
	vnpu_at_release(t);
	if (p) {
		struct vnpu_at_tensor *pw = class_weighted(p, weight);

		vnpu_at_release(p);
		p = pw;
	}
	if (!p)
		return NULL;
	if (reduction == 0)
		s = vnpu_op_sum_dim_IntList(p, (struct vnpu_at_opt_int_array){
			true, { &cdim, 1 } }, false, VNPU_AT_DTYPE_NONE);
	else
		s = vnpu_op_sum(p, VNPU_AT_DTYPE_NONE);
	vnpu_at_release(p);
	if (s && reduction == 1) {
		n = scalar_like(s, (double)(C ? vnpu_at_numel(self) / C : 0));
		r = n ? vnpu_op_div_Tensor(s, n) : NULL;
		vnpu_at_release(n);
		vnpu_at_release(s);
		s = r;
	}
	r = s ? vnpu_op_neg(s) : NULL;
	vnpu_at_release(s);
	return r;
}

/*
 * (N, C, d1, ..., dk) inputs with (N, d1, ..., dk) class-index targets:
 * the class dim moved last and both flattened to the 2-D case, whose
 * per-element losses (reduction none) take the target's shape back.
 */
static struct vnpu_at_tensor *cross_entropy_kdim(vnpu_keyset_t ks,
						 struct vnpu_at_tensor *self,
						 struct vnpu_at_tensor *target,
						 struct vnpu_at_tensor *weight,
						 int64_t reduction, int64_t ignore_index,
						 double label_smoothing)
{
	int64_t perm[VNPU_AT_MAX_DIMS], flat[2] = { -1, self->sizes[1] }, all = -1;
	struct vnpu_at_tensor *moved, *x, *t, *l, *r = NULL;
	uint32_t nd = self->ndim;

	if (target->ndim != nd - 1 || target->sizes[0] != self->sizes[0])
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::cross_entropy_loss: Expected target size [%lld, ...] of %u dims for an input of %u dims",
					 (long long)self->sizes[0], nd - 1, nd);
	for (uint32_t d = 2; d < nd; d++)
		if (target->sizes[d - 1] != self->sizes[d])
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "aten::cross_entropy_loss: target size does not match the input's at dim %u",
						 d);
	perm[0] = 0;
	for (uint32_t d = 2; d < nd; d++)
		perm[d - 1] = d;
	perm[nd - 1] = 1;
	moved = vnpu_op_permute(self, (struct vnpu_at_int_array){ perm, nd });
	x = moved ? vnpu_op_reshape(moved, (struct vnpu_at_int_array){ flat, 2 }) : NULL;
	t = x ? vnpu_op_reshape(target, (struct vnpu_at_int_array){ &all, 1 }) : NULL;
	vnpu_at_release(moved);
	l = t ? vnpu_cia_cross_entropy_loss(ks, x, t, weight, reduction, ignore_index,
					    label_smoothing) : NULL;
	vnpu_at_release(x);
	vnpu_at_release(t);
	if (l && reduction == 0)
		r = vnpu_op_view(l, (struct vnpu_at_int_array){ target->sizes, target->ndim });
	else
		r = vnpu_at_retain(l);
	vnpu_at_release(l);
	return r;
}

static bool same_sizes(const struct vnpu_at_tensor *a, const struct vnpu_at_tensor *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (uint32_t d = 0; d < a->ndim; d++)
		if (a->sizes[d] != b->sizes[d])
			return false;
	return true;
}

struct vnpu_at_tensor *vnpu_cia_cross_entropy_loss(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						   struct vnpu_at_tensor *target,
						   struct vnpu_at_tensor *weight, int64_t reduction,
						   int64_t ignore_index, double label_smoothing)
{
	struct vnpu_at_tensor *ls, *term, *keep, *a, *r = NULL;
	struct vnpu_ret_nll_loss_forward nll;
	int64_t C;

	if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::cross_entropy_loss: label_smoothing must be between 0.0 and 1.0. Got: %g",
					 label_smoothing);
	if (same_sizes(self, target) &&
	    vnpu_at_dtype_is_float((enum vnpu_at_dtype)target->dtype))
		return cross_entropy_probs(self, target, weight, reduction,
					   label_smoothing);
	if (self->ndim > 2)
		return cross_entropy_kdim(ks, self, target, weight, reduction,
					  ignore_index, label_smoothing);
	ls = vnpu_op__log_softmax(self, self->ndim >= 2 ? 1 : 0, false);
	if (!ls)
		return NULL;
	nll = vnpu_op_nll_loss_forward(ls, target, weight, reduction, ignore_index);
	vnpu_at_release(nll.r1);
	if (!nll.r0 || label_smoothing == 0.0) {
		vnpu_at_release(ls);
		return nll.r0;
	}
	C = ls->sizes[ls->ndim >= 2 ? 1 : 0];
	term = smoothing_term(ls, target, weight, reduction, ignore_index);
	vnpu_at_release(ls);
	/* (1 - s) * nll + term * (s / C) */
	keep = term ? scalar_like(nll.r0, 1.0 - label_smoothing) : NULL;
	a = keep ? vnpu_op_mul_Tensor(nll.r0, keep) : NULL;
	vnpu_at_release(keep);
	if (a)
		r = vnpu_op_add_Tensor(a, term, VNPU_AT_DOUBLE(label_smoothing / (double)C));
	vnpu_at_release(a);
	vnpu_at_release(term);
	vnpu_at_release(nll.r0);
	return r;
}

/*
 * self + value * (tensor1 op tensor2), as PyTorch's fused addcmul/addcdiv
 * kernels compute it: in the dtype of all three promoted, value
 * converted to it (truncated for integers), and for float16/bfloat16 in
 * float32 with one rounding at the end. Two kernels here, as Adam's
 * moments need them.
 */
static struct vnpu_at_tensor *add_product(struct vnpu_at_tensor *self,
					  struct vnpu_at_tensor *tensor1,
					  struct vnpu_at_tensor *tensor2,
					  struct vnpu_at_scalar value, bool divide)
{
	enum vnpu_at_dtype dt = vnpu_at_promote(vnpu_at_result_type(self, tensor1),
						vnpu_at_result_type(self, tensor2));
	bool low = dt == VNPU_AT_F16 || dt == VNPU_AT_BF16;
	struct vnpu_at_tensor *in[3] = { self, tensor1, tensor2 }, *w[3] = { 0 };
	struct vnpu_at_tensor *p = NULL, *r = NULL;

	/* PyTorch's addcmul kernel has no bool one (addcdiv refuses every
	 * integer pair before) */
	if (dt == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::%s: \"%s_cpu_out\" not implemented for 'Bool'",
					 divide ? "addcdiv" : "addcmul", divide ? "addcdiv" : "addcmul");
	if (!vnpu_at_dtype_is_float(dt) && value.kind == VNPU_AT_SCALAR_DOUBLE)
		value = VNPU_AT_INT(vnpu_at_scalar_to_int_as(value, dt));
	/* value=True is 1 here: add's alpha takes a bool only for bools */
	if (value.kind == VNPU_AT_SCALAR_BOOL && dt != VNPU_AT_BOOL)
		value = VNPU_AT_INT(value.b ? 1 : 0);
	/* every operand in the computing dtype first: f64 + bf16 * f32 is
	 * an f64 product, not an f32 one */
	for (int i = 0; i < 3; i++) {
		enum vnpu_at_dtype want = low ? VNPU_AT_F32 : dt;

		w[i] = in[i]->dtype == want ? vnpu_at_retain(in[i]) :
		       vnpu_op__to_copy(in[i], want, VNPU_AT_DEV_NONE, false);
	}
	if (w[0] && w[1] && w[2])
		p = divide ? vnpu_op_div_Tensor(w[1], w[2]) : vnpu_op_mul_Tensor(w[1], w[2]);
	if (p)
		r = vnpu_op_add_Tensor(w[0], p, value);
	if (r && low) {
		struct vnpu_at_tensor *c = vnpu_op__to_copy(r, dt, VNPU_AT_DEV_NONE, false);

		vnpu_at_release(r);
		r = c;
	}
	for (int i = 0; i < 3; i++)
		vnpu_at_release(w[i]);
	vnpu_at_release(p);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_addcmul(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *tensor1,
					struct vnpu_at_tensor *tensor2,
					struct vnpu_at_scalar value)
{
	return add_product(self, tensor1, tensor2, value, false);
}

struct vnpu_at_tensor *vnpu_cia_addcdiv(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *tensor1,
					struct vnpu_at_tensor *tensor2,
					struct vnpu_at_scalar value)
{
	if (!vnpu_at_dtype_is_float((enum vnpu_at_dtype)tensor1->dtype) &&
	    !vnpu_at_dtype_is_float((enum vnpu_at_dtype)tensor2->dtype))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::addcdiv: Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
	return add_product(self, tensor1, tensor2, value, true);
}

/* ---- triangles ---------------------------------------------------------------- */

/*
 * triu/tril: self where an element's column minus its row is at least
 * (triu) or at most (tril) diagonal, zero elsewhere, over the last two
 * dims; the indices are aranges on self's device, so the op runs there.
 * A new row-major tensor, as PyTorch's.
 */
static struct vnpu_at_tensor *triangle(const char *op, struct vnpu_at_tensor *self,
				       int64_t diagonal, bool upper)
{
	struct vnpu_at_device dev = vnpu_at_device_of(self);
	struct vnpu_at_tensor *rows = NULL, *col = NULL, *row = NULL, *d = NULL;
	struct vnpu_at_tensor *mask = NULL, *zero = NULL, *w = NULL, *r = NULL;

	if (self->ndim < 2)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::%s: %s: input tensor must have at least 2 dimensions",
					 op, op);
	rows = vnpu_op_arange_start_step(VNPU_AT_INT(0), VNPU_AT_INT(self->sizes[self->ndim - 2]),
					 VNPU_AT_INT(1), VNPU_AT_I64, dev);
	col = rows ? vnpu_op_arange_start_step(VNPU_AT_INT(0),
					       VNPU_AT_INT(self->sizes[self->ndim - 1]),
					       VNPU_AT_INT(1), VNPU_AT_I64, dev) : NULL;
	row = col ? vnpu_op_unsqueeze(rows, 1) : NULL;
	d = row ? vnpu_op_sub_Tensor(col, row, VNPU_AT_INT(1)) : NULL;
	if (d)
		mask = upper ? vnpu_op_ge_Scalar(d, VNPU_AT_INT(diagonal)) :
			       vnpu_op_le_Scalar(d, VNPU_AT_INT(diagonal));
	zero = mask ? vnpu_at_scalar_tensor(VNPU_AT_INT(0), (enum vnpu_at_dtype)self->dtype,
					    dev) : NULL;
	w = zero ? vnpu_op_where_self(mask, self, zero) : NULL;
	r = w ? vnpu_op_contiguous(w) : NULL;
	vnpu_at_release(w);
	vnpu_at_release(zero);
	vnpu_at_release(mask);
	vnpu_at_release(d);
	vnpu_at_release(row);
	vnpu_at_release(col);
	vnpu_at_release(rows);
	return r;
}

struct vnpu_at_tensor *vnpu_cea_triu(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				     int64_t diagonal)
{
	return triangle("triu", self, diagonal, true);
}

struct vnpu_at_tensor *vnpu_cea_tril(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				     int64_t diagonal)
{
	return triangle("tril", self, diagonal, false);
}

/* ---- roll -------------------------------------------------------------------- */

/* x mod m in [0, m), m > 0, as Python's % (and PyTorch's roll) takes it */
static int64_t floor_mod(int64_t x, int64_t m)
{
	int64_t r = x % m;

	return r < 0 ? r + m : r;
}

/* self rolled by shift along dim: the tail from start, then the head, one
 * cat of two slices, as PyTorch's roll_cpu. */
static struct vnpu_at_tensor *roll_one(struct vnpu_at_tensor *self, int64_t dim, int64_t shift)
{
	int64_t size = self->sizes[dim];
	int64_t start = floor_mod(size - floor_mod(shift, size), size);
	struct vnpu_at_tensor *tail, *head, *r;

	if (!start)
		return vnpu_at_retain(self);
	tail = vnpu_op_slice_Tensor(self, dim, VNPU_AT_SOME_INT(start), VNPU_AT_SOME_INT(size), 1);
	head = tail ? vnpu_op_slice_Tensor(self, dim, VNPU_AT_SOME_INT(0),
					   VNPU_AT_SOME_INT(start), 1) : NULL;
	r = head ? vnpu_op_cat((struct vnpu_at_tensor_list){
		(struct vnpu_at_tensor *[]){ tail, head }, 2 }, dim) : NULL;
	vnpu_at_release(head);
	vnpu_at_release(tail);
	return r;
}

/*
 * roll: with no dims, self flattened, rolled by the one shift and viewed
 * back; otherwise each dim rolled by the sum of its shifts (a dim may be
 * named more than once, and rolls along one dim add), one cat per rolled
 * dim. Always a new tensor, as PyTorch's.
 */
struct vnpu_at_tensor *vnpu_cea_roll(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				     struct vnpu_at_int_array shifts, struct vnpu_at_int_array dims)
{
	static const char op[] = "aten::roll";
	int64_t shift[VNPU_AT_MAX_DIMS] = { 0 };
	struct vnpu_at_tensor *cur;

	(void)ks;
	if (!shifts.n)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: `shifts` required", op);
	if (!dims.n && shifts.n == 1) {
		struct vnpu_at_tensor *flat, *rolled, *r;
		int64_t numel = vnpu_at_numel(self);

		if (!numel)
			return vnpu_op_clone(self);
		flat = vnpu_op_reshape(self, VNPU_AT_INTS(numel));
		rolled = flat ? roll_one(flat, 0, shifts.v[0]) : NULL;
		r = rolled ? vnpu_op_reshape(rolled, (struct vnpu_at_int_array){
			self->sizes, self->ndim }) : NULL;
		vnpu_at_release(rolled);
		vnpu_at_release(flat);
		/* reshape of an unrolled contiguous self is self itself */
		return vnpu_at_new_or_clone(r, self);
	}
	if (shifts.n != dims.n)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: shifts and dimensions must align. shifts: %lld, dims:%lld",
					 op, (long long)shifts.n, (long long)dims.n);
	/* PyTorch clones an empty self before it looks at dims */
	if (!vnpu_at_numel(self))
		return vnpu_op_clone(self);
	for (int64_t k = 0; k < dims.n; k++) {
		int64_t d;

		if (!self->ndim)
			return vnpu_at_error_set(VNPU_AT_ERR_INDEX,
						 "Dimension specified as %lld but tensor has no dimensions",
						 (long long)dims.v[k]);
		d = vnpu_at_wrap_dim(dims.v[k], self->ndim);
		if (d < 0)
			return NULL;
		/* both terms in [0, size): the sum cannot overflow */
		shift[d] = floor_mod(shift[d] + floor_mod(shifts.v[k], self->sizes[d]),
				     self->sizes[d]);
	}
	cur = vnpu_at_retain(self);
	for (uint32_t d = 0; cur && d < self->ndim; d++) {
		struct vnpu_at_tensor *next;

		if (!shift[d])
			continue;
		next = roll_one(cur, d, shift[d]);
		vnpu_at_release(cur);
		cur = next;
	}
	return vnpu_at_new_or_clone(cur, self);
}

/* ---- pointwise decompositions ---------------------------------------------- */

/*
 * self bounded by a tensor from below (upper false) or above: self where
 * it is within the bound, the bound where it is beyond, NaN where either
 * is NaN. Written as wheres, so that the gradient goes where PyTorch's
 * clamp_min/clamp_max send it: to self within the bound (a tie
 * included), to the bound beyond it, to neither at a NaN.
 */
static struct vnpu_at_tensor *bounded(struct vnpu_at_tensor *self, struct vnpu_at_tensor *bound,
				      bool upper)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(self, bound);
	struct vnpu_at_tensor *in, *out = NULL, *nan = NULL, *beyond = NULL, *r = NULL;

	/* compared and selected in the common dtype, as TensorIterator
	 * casts its operands: a 0-dim float64 bound of a float32 tensor is
	 * a float32 one (found by PyTorch's test_clamp_type_promotion) */
	bound = vnpu_at_converted(vnpu_at_retain(bound), dt);
	if (!bound)
		return NULL;
	in = upper ? vnpu_op_le_Tensor(self, bound) : vnpu_op_ge_Tensor(self, bound);
	if (in && !vnpu_at_dtype_is_float(dt)) {
		r = vnpu_op_where_self(in, self, bound);	/* no NaN: in or beyond */
		vnpu_at_release(in);
		vnpu_at_release(bound);
		return r;
	}
	if (in)
		out = upper ? vnpu_op_gt_Tensor(self, bound) : vnpu_op_lt_Tensor(self, bound);
	if (out)
		nan = vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(NAN), dt, vnpu_at_device_of(self));
	if (nan)
		beyond = vnpu_op_where_self(out, bound, nan);
	if (beyond)
		r = vnpu_op_where_self(in, self, beyond);
	vnpu_at_release(bound);
	vnpu_at_release(in);
	vnpu_at_release(out);
	vnpu_at_release(nan);
	vnpu_at_release(beyond);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_clamp_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					     struct vnpu_at_tensor *min, struct vnpu_at_tensor *max)
{
	struct vnpu_at_tensor *lo, *r;

	if (!min && !max)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::clamp: torch.clamp: At least one of 'min' or 'max' must not be None");
	if (!min)
		return bounded(self, max, true);
	if (!max)
		return bounded(self, min, false);
	/* PyTorch's clamp kernel (both bounds) has no bool one; one bound
	 * runs its maximum/minimum, which has */
	if (vnpu_at_promote(vnpu_at_result_type(self, min), vnpu_at_result_type(self, max)) ==
	    VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::clamp: \"clamp_cpu\" not implemented for 'Bool'");
	/* min > max gives max, as PyTorch's */
	lo = bounded(self, min, false);
	r = lo ? bounded(lo, max, true) : NULL;
	vnpu_at_release(lo);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_clamp_min_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						 struct vnpu_at_tensor *min)
{
	return bounded(self, min, false);
}

struct vnpu_at_tensor *vnpu_cia_clamp_max_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						 struct vnpu_at_tensor *max)
{
	return bounded(self, max, true);
}

struct vnpu_at_tensor *vnpu_cia_rsub_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    struct vnpu_at_tensor *other, struct vnpu_at_scalar alpha)
{
	return vnpu_op_sub_Tensor(other, self, alpha);
}

/* fmax/fmin: self where it is the larger (smaller) or other is NaN, else
 * other: a NaN loses to a number, two NaNs give NaN, and the gradient
 * goes as PyTorch's does (to self at a tie). */
static struct vnpu_at_tensor *nan_ignoring(struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor *other, bool max)
{
	struct vnpu_at_tensor *wins = max ? vnpu_op_ge_Tensor(self, other) :
					    vnpu_op_le_Tensor(self, other);
	struct vnpu_at_tensor *nan = wins ? vnpu_op_isnan(other) : NULL;
	struct vnpu_at_tensor *keep = nan ? vnpu_op_logical_or(wins, nan) : NULL;
	struct vnpu_at_tensor *r = keep ? vnpu_op_where_self(keep, self, other) : NULL;

	vnpu_at_release(wins);
	vnpu_at_release(nan);
	vnpu_at_release(keep);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_fmax(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				     struct vnpu_at_tensor *other)
{
	return nan_ignoring(self, other, true);
}

struct vnpu_at_tensor *vnpu_cia_fmin(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				     struct vnpu_at_tensor *other)
{
	return nan_ignoring(self, other, false);
}

/* heaviside: values where self is 0, else 1 where self > 0 and 0 (NaN
 * too) elsewhere. */
struct vnpu_at_tensor *vnpu_cia_heaviside(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  struct vnpu_at_tensor *values)
{
	struct vnpu_at_tensor *zero, *pos, *step, *r = NULL;

	if (self->dtype != values->dtype)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::heaviside: heaviside is not yet implemented for tensors with different dtypes.");
	zero = vnpu_op_eq_Scalar(self, VNPU_AT_INT(0));
	pos = zero ? vnpu_op_gt_Scalar(self, VNPU_AT_INT(0)) : NULL;
	step = vnpu_at_converted(pos, (enum vnpu_at_dtype)self->dtype);
	if (step)
		r = vnpu_op_where_self(zero, values, step);
	vnpu_at_release(zero);
	vnpu_at_release(step);
	return r;
}

/* nansum: NaNs count as zero; integers are summed as they are. */
struct vnpu_at_tensor *vnpu_cia_nansum(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				       struct vnpu_at_opt_int_array dim, bool keepdim,
				       enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *nan, *zero = NULL, *clean = NULL, *r = NULL;

	if (!vnpu_at_dtype_is_float((enum vnpu_at_dtype)self->dtype))
		return vnpu_op_sum_dim_IntList(self, dim, keepdim, dtype);
	nan = vnpu_op_isnan(self);
	if (nan)
		zero = vnpu_at_scalar_tensor(VNPU_AT_INT(0), (enum vnpu_at_dtype)self->dtype,
					     vnpu_at_device_of(self));
	if (zero)
		clean = vnpu_op_where_self(nan, zero, self);
	if (clean)
		r = vnpu_op_sum_dim_IntList(clean, dim, keepdim, dtype);
	vnpu_at_release(nan);
	vnpu_at_release(zero);
	vnpu_at_release(clean);
	return r;
}

/* count_nonzero: the nonzero entries (NaN included) summed as int64. */
struct vnpu_at_tensor *vnpu_cia_count_nonzero_dim_IntList(vnpu_keyset_t ks,
							  struct vnpu_at_tensor *self,
							  struct vnpu_at_int_array dim)
{
	struct vnpu_at_tensor *nz = vnpu_op_ne_Scalar(self, VNPU_AT_INT(0)), *r;

	r = nz ? vnpu_op_sum_dim_IntList(nz, (struct vnpu_at_opt_int_array){ true, dim }, false,
					 VNPU_AT_DTYPE_NONE) : NULL;
	vnpu_at_release(nz);
	return r;
}

/* ---- sort family ------------------------------------------------------------- */

/* sort: PyTorch's own composite, the stable sort (which its unspecified
 * order of equal values allows) */
struct vnpu_ret_sort vnpu_cia_sort(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim,
				   bool descending)
{
	struct vnpu_ret_sort_stable s = vnpu_op_sort_stable(self, dim, descending);

	(void)ks;
	return (struct vnpu_ret_sort){ s.r0, s.r1 };
}

/* argsort: sort's indices */
struct vnpu_at_tensor *vnpu_cia_argsort(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					int64_t dim, bool descending)
{
	struct vnpu_ret_sort s = vnpu_op_sort(self, dim, descending);

	(void)ks;
	vnpu_at_release(s.r0);
	return s.r1;
}

/*
 * topk: the first k of the line sorted largest (or smallest) first, as new
 * contiguous tensors; sorted=False takes the same order (PyTorch leaves it
 * unspecified). Equal values come in index order, as the stable sort
 * leaves them.
 */
struct vnpu_ret_topk vnpu_cea_topk(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t k,
				   int64_t dim, bool largest, bool sorted)
{
	int64_t d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	struct vnpu_ret_topk r = { 0 };
	struct vnpu_ret_sort s;
	struct vnpu_at_tensor *v = NULL, *i = NULL;

	(void)ks;
	(void)sorted;
	if (d < 0)
		return r;
	if (self->dtype == VNPU_AT_BOOL)	/* as PyTorch's CPU and CUDA kernels */
		return (struct vnpu_ret_topk){ vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::topk: topk does not support bool dtypes"), NULL };
	if (k < 0 || k > (self->ndim ? self->sizes[d] : 1))
		return (struct vnpu_ret_topk){ vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::topk: selected index k out of range"), NULL };
	s = vnpu_op_sort(self, d, largest);
	if (s.r0 && !self->ndim)
		return (struct vnpu_ret_topk){ s.r0, s.r1 };
	if (s.r0) {
		v = vnpu_op_slice_Tensor(s.r0, d, VNPU_AT_SOME_INT(0), VNPU_AT_SOME_INT(k), 1);
		i = v ? vnpu_op_slice_Tensor(s.r1, d, VNPU_AT_SOME_INT(0), VNPU_AT_SOME_INT(k), 1)
		      : NULL;
	}
	r.r0 = i ? vnpu_op_contiguous(v) : NULL;
	r.r1 = r.r0 ? vnpu_op_contiguous(i) : NULL;
	if (!r.r1) {
		vnpu_at_release(r.r0);
		r.r0 = NULL;
	}
	vnpu_at_release(i);
	vnpu_at_release(v);
	vnpu_at_release(s.r0);
	vnpu_at_release(s.r1);
	return r;
}

/* ---- hardtanh ---------------------------------------------------------------- */

/*
 * hardtanh: clamp to [min_val, max_val], as PyTorch's hardtanh_out. An
 * integer self takes its bounds truncated to int64 (PyTorch's legacy rule:
 * they never promote it to a float result); bool is refused, and uint8
 * with a negative bound.
 */
struct vnpu_at_tensor *vnpu_cea_hardtanh(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					 struct vnpu_at_scalar min_val,
					 struct vnpu_at_scalar max_val)
{
	static const char op[] = "aten::hardtanh";
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;

	(void)ks;
	if (dt == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: Bool inputs not supported for hardtanh", op);
	if (!vnpu_at_dtype_is_float(dt)) {
		int64_t lo, hi;

		if (!vnpu_at_scalar_fits(min_val, VNPU_AT_I64) ||
		    !vnpu_at_scalar_fits(max_val, VNPU_AT_I64))
			return NULL;
		lo = vnpu_at_scalar_to_int(min_val);
		hi = vnpu_at_scalar_to_int(max_val);
		if (dt == VNPU_AT_U8 && (lo < 0 || hi < 0))
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: cannot do hardtanh on an unsigned type with negative limits",
						 op);
		min_val = VNPU_AT_INT(lo);
		max_val = VNPU_AT_INT(hi);
	}
	return vnpu_op_clamp(self, min_val, max_val);
}

/*
 * hardtanh_backward: grad_output where self is strictly inside the bounds,
 * zero where it is at or beyond one, in the dtype both promote to. A NaN
 * self passes its gradient (no comparison holds), as CUDA's kernel and
 * the CPU's scalar loop do; PyTorch's vectorized CPU loop zeroes it.
 */
struct vnpu_at_tensor *vnpu_cea_hardtanh_backward(vnpu_keyset_t ks,
						  struct vnpu_at_tensor *grad_output,
						  struct vnpu_at_tensor *self,
						  struct vnpu_at_scalar min_val,
						  struct vnpu_at_scalar max_val)
{
	enum vnpu_at_dtype dt = vnpu_at_result_type(grad_output, self);
	struct vnpu_at_tensor *x, *g = NULL, *below = NULL, *above = NULL, *edge = NULL;
	struct vnpu_at_tensor *zero = NULL, *r = NULL;

	(void)ks;
	if (!vnpu_at_dtype_is_float(dt))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::hardtanh_backward: \"hardtanh_backward_cpu\" not implemented for '%s'",
					 vnpu_at_scalar_type_name(dt));
	/* compared in the common dtype, as TensorIterator casts its operands */
	x = vnpu_at_converted(vnpu_at_retain(self), dt);
	g = x ? vnpu_at_converted(vnpu_at_retain(grad_output), dt) : NULL;
	below = g ? vnpu_op_le_Scalar(x, min_val) : NULL;
	above = below ? vnpu_op_ge_Scalar(x, max_val) : NULL;
	edge = above ? vnpu_op_logical_or(below, above) : NULL;
	zero = edge ? vnpu_at_scalar_tensor(VNPU_AT_INT(0), dt, vnpu_at_device_of(g)) : NULL;
	r = zero ? vnpu_op_where_self(edge, zero, g) : NULL;
	vnpu_at_release(zero);
	vnpu_at_release(edge);
	vnpu_at_release(above);
	vnpu_at_release(below);
	vnpu_at_release(g);
	vnpu_at_release(x);
	return r;
}

/* relu6: PyTorch's own composite, hardtanh to [0, 6] */
struct vnpu_at_tensor *vnpu_cia_relu6(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	(void)ks;
	return vnpu_op_hardtanh(self, VNPU_AT_INT(0), VNPU_AT_INT(6));
}

/* ---- variance ------------------------------------------------------------- */

/*
 * var and std over dim (None or [] = all): sum((x - mean)^2) divided by
 * max(0, N - correction) (correction None = 1), float16/bfloat16 computed
 * in float32 and rounded once, as PyTorch's accumulate type. *mean, when
 * asked, gets the mean in the result's shape and dtype.
 */
static struct vnpu_at_tensor *variance(const char *op, struct vnpu_at_tensor *self,
				       struct vnpu_at_opt_int_array dim,
				       struct vnpu_at_scalar correction, bool keepdim,
				       bool root, struct vnpu_at_tensor **mean)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	enum vnpu_at_dtype cdt = dt == VNPU_AT_F16 || dt == VNPU_AT_BF16 ? VNPU_AT_F32 : dt;
	struct vnpu_at_tensor *x = NULL, *m = NULL, *d = NULL, *sq = NULL, *sum = NULL;
	struct vnpu_at_tensor *den = NULL, *v = NULL, *r = NULL;
	double c = correction.kind == VNPU_AT_SCALAR_NONE ? 1.0 :
		   vnpu_at_scalar_to_double(correction);
	uint32_t mask;
	int64_t n = 1;

	if (!vnpu_at_dtype_is_float(dt))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: std and var only support floating point and complex dtypes",
					 op);
	if (!vnpu_at_dim_mask(op, dim.has ? dim.a : (struct vnpu_at_int_array){ NULL, 0 },
			      self->ndim, &mask))
		return NULL;
	for (uint32_t i = 0; i < self->ndim; i++)
		if (mask & (1u << i))
			n *= self->sizes[i];
	x = cdt == dt ? vnpu_at_retain(self) : vnpu_op__to_copy(self, cdt, VNPU_AT_DEV_NONE, false);
	m = x ? vnpu_op_mean_dim(x, dim, true, VNPU_AT_DTYPE_NONE) : NULL;
	d = m ? vnpu_op_sub_Tensor(x, m, VNPU_AT_INT(1)) : NULL;
	sq = d ? vnpu_op_mul_Tensor(d, d) : NULL;
	sum = sq ? vnpu_op_sum_dim_IntList(sq, dim, keepdim, VNPU_AT_DTYPE_NONE) : NULL;
	den = sum ? vnpu_at_scalar_tensor(VNPU_AT_DOUBLE((double)n - c > 0 ? (double)n - c : 0.0),
					  cdt, vnpu_at_device_of(sum)) : NULL;
	v = den ? vnpu_op_div_Tensor(sum, den) : NULL;
	if (v && root) {
		r = vnpu_op_sqrt(v);
		vnpu_at_release(v);
		v = r;
	}
	r = vnpu_at_converted(v, dt);
	if (r && mean) {
		struct vnpu_at_tensor *mv = vnpu_op_reshape(m, (struct vnpu_at_int_array){
								       r->sizes, r->ndim });

		*mean = vnpu_at_converted(mv, dt);
		if (!*mean) {
			vnpu_at_release(r);
			r = NULL;
		}
	}
	vnpu_at_release(x);
	vnpu_at_release(m);
	vnpu_at_release(d);
	vnpu_at_release(sq);
	vnpu_at_release(sum);
	vnpu_at_release(den);
	return r;
}

struct vnpu_at_tensor *vnpu_cia_var_correction(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					       struct vnpu_at_opt_int_array dim,
					       struct vnpu_at_scalar correction, bool keepdim)
{
	return variance("aten::var", self, dim, correction, keepdim, false, NULL);
}

struct vnpu_at_tensor *vnpu_cia_std_correction(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					       struct vnpu_at_opt_int_array dim,
					       struct vnpu_at_scalar correction, bool keepdim)
{
	return variance("aten::std", self, dim, correction, keepdim, true, NULL);
}

struct vnpu_ret_var_mean_correction vnpu_cia_var_mean_correction(vnpu_keyset_t ks,
	struct vnpu_at_tensor *self, struct vnpu_at_opt_int_array dim,
	struct vnpu_at_scalar correction, bool keepdim)
{
	struct vnpu_ret_var_mean_correction r = { 0 };

	r.r0 = variance("aten::var_mean", self, dim, correction, keepdim, false, &r.r1);
	return r;
}

struct vnpu_ret_std_mean_correction vnpu_cia_std_mean_correction(vnpu_keyset_t ks,
	struct vnpu_at_tensor *self, struct vnpu_at_opt_int_array dim,
	struct vnpu_at_scalar correction, bool keepdim)
{
	struct vnpu_ret_std_mean_correction r = { 0 };

	r.r0 = variance("aten::std_mean", self, dim, correction, keepdim, true, &r.r1);
	return r;
}

/* ---- norms ---------------------------------------------------------------- */

/*
 * Whether every dim a norm reduces (all for none or []) has size 1, and
 * the shape of the result without them; false when a dim is out of range
 * (the reduction reports it).
 */
static bool norm_over_ones(const struct vnpu_at_tensor *t,
			   struct vnpu_at_opt_int_array dim, int64_t *shape,
			   uint32_t *ndim)
{
	bool all = !dim.has || !dim.a.n;
	uint64_t mask = 0;

	for (int64_t i = 0; !all && i < dim.a.n; i++) {
		int64_t d = vnpu_at_wrap_dim(dim.a.v[i], t->ndim ? t->ndim : 1);

		if (d < 0) {
			vnpu_at_error_clear();
			return false;
		}
		mask |= 1ull << d;
	}
	*ndim = 0;
	for (uint32_t d = 0; d < t->ndim; d++) {
		bool reduced = all || (mask >> d & 1);

		if (reduced && t->sizes[d] != 1)
			return false;
		if (!reduced)
			shape[(*ndim)++] = t->sizes[d];
	}
	return true;
}

/* PyTorch's checks of linalg.vector_norm's arguments (its meta function). */
static bool vector_norm_args(const struct vnpu_at_tensor *self, double p,
			     struct vnpu_at_opt_int_array dim,
			     enum vnpu_at_dtype dtype)
{
	static const char name[] = "linalg.vector_norm";

	if (!vnpu_at_dtype_is_float(self->dtype)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: Expected a floating point or complex tensor as input. Got %s",
				  name, vnpu_at_dtype_name(self->dtype));
		return false;
	}
	if (vnpu_at_numel(self) == 0 && (p < 0.0 || p == INFINITY)) {
		if (!dim.has || !dim.a.n) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s cannot compute the %g norm on an empty tensor because the operation does not have an identity",
					  name, p);
			return false;
		}
		for (int64_t i = 0; i < dim.a.n; i++) {
			int64_t d = vnpu_at_wrap_dim(dim.a.v[i], self->ndim ? self->ndim : 1);

			if (d < 0)
				return false;
			/* PyTorch's wording, space missing included */
			if (self->ndim && !self->sizes[d]) {
				vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						  "%s cannot compute the %g norm on the dimension %lld"
						  "because this dimension is empty and the operation does not have an identity",
						  name, p, (long long)dim.a.v[i]);
				return false;
			}
		}
	}
	if (dtype == VNPU_AT_DTYPE_NONE)
		return true;
	if (!vnpu_at_dtype_is_float(dtype)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: dtype should be floating point or complex, but got %s",
				  name, vnpu_at_scalar_type_name(dtype));
		return false;
	}
	if (vnpu_at_promote(self->dtype, dtype) != dtype) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: the dtype of the input (%s) should be convertible without narrowing to the specified dtype (%s)",
				  name, vnpu_at_scalar_type_name(self->dtype),
				  vnpu_at_scalar_type_name(dtype));
		return false;
	}
	return true;
}

/* The norm of x over dim in x's dtype (at least float32, PyTorch's
 * accumulation type): sqrt(sum x^2), sum |x|, max/min |x|, the count of
 * non-zeros, or (sum |x|^p)^(1/p). */
static struct vnpu_at_tensor *vector_norm_of(struct vnpu_at_tensor *x, double p,
					     struct vnpu_at_opt_int_array dim,
					     bool keepdim)
{
	struct vnpu_at_int_array list = dim.has ? dim.a : (struct vnpu_at_int_array){ NULL, 0 };
	struct vnpu_at_tensor *a = NULL, *b = NULL, *r = NULL;

	if (p == 2.0) {
		a = vnpu_op_mul_Tensor(x, x);
		b = a ? vnpu_op_sum_dim_IntList(a, dim, keepdim, VNPU_AT_DTYPE_NONE) : NULL;
		r = b ? vnpu_op_sqrt(b) : NULL;
	} else if (p == 0.0) {
		struct vnpu_at_tensor *zero = vnpu_at_scalar_tensor(
			VNPU_AT_DOUBLE(0.0), x->dtype, vnpu_at_device_of(x));
		struct vnpu_at_tensor *nz = zero ? vnpu_op_ne_Tensor(x, zero) : NULL;

		a = nz ? vnpu_op__to_copy(nz, x->dtype, VNPU_AT_DEV_NONE, false) : NULL;
		r = a ? vnpu_op_sum_dim_IntList(a, dim, keepdim, VNPU_AT_DTYPE_NONE) : NULL;
		vnpu_at_release(zero);
		vnpu_at_release(nz);
	} else {
		a = vnpu_op_abs(x);
		if (!a)
			return NULL;
		if (p == 1.0)
			r = vnpu_op_sum_dim_IntList(a, dim, keepdim, VNPU_AT_DTYPE_NONE);
		else if (p == INFINITY)
			r = vnpu_op_amax(a, list, keepdim);
		else if (p == -INFINITY)
			r = vnpu_op_amin(a, list, keepdim);
		else {
			struct vnpu_at_tensor *s;

			b = vnpu_op_pow_Tensor_Scalar(a, VNPU_AT_DOUBLE(p));
			s = b ? vnpu_op_sum_dim_IntList(b, dim, keepdim, VNPU_AT_DTYPE_NONE) : NULL;
			r = s ? vnpu_op_pow_Tensor_Scalar(s, VNPU_AT_DOUBLE(1.0 / p)) : NULL;
			vnpu_at_release(s);
		}
	}
	vnpu_at_release(a);
	vnpu_at_release(b);
	return r;
}

/*
 * linalg.vector_norm as PyTorch computes it: in `dtype` when given (the
 * input converted first), f16/bf16 in float32 and rounded once; a norm
 * over dims of size 1 only is |x| (x != 0 for p = 0), which neither
 * overflows nor underflows. Its derivative: dispatcher/src/autograd_ops.c.
 */
struct vnpu_at_tensor *vnpu_cea_linalg_vector_norm(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *self,
						   struct vnpu_at_scalar ord,
						   struct vnpu_at_opt_int_array dim,
						   bool keepdim,
						   enum vnpu_at_dtype dtype)
{
	double p = vnpu_at_scalar_to_double(ord);
	enum vnpu_at_dtype out_dt = dt_or(dtype, self->dtype);
	enum vnpu_at_dtype work = out_dt == VNPU_AT_F16 || out_dt == VNPU_AT_BF16 ?
					  VNPU_AT_F32 : out_dt;
	int64_t shape[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *x, *r;
	uint32_t nd;

	(void)ks;
	if (!vector_norm_args(self, p, dim, dtype))
		return NULL;
	if (norm_over_ones(self, dim, shape, &nd)) {
		struct vnpu_at_tensor *v, *zero = NULL;

		x = self->dtype == out_dt ? vnpu_at_retain(self) :
		    vnpu_op__to_copy(self, out_dt, VNPU_AT_DEV_NONE, false);
		if (!x)
			return NULL;
		if (p != 0.0) {
			v = vnpu_op_abs(x);
		} else {
			zero = vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(0.0), out_dt,
						     vnpu_at_device_of(x));
			r = zero ? vnpu_op_ne_Tensor(x, zero) : NULL;
			v = r ? vnpu_op__to_copy(r, out_dt, VNPU_AT_DEV_NONE, false) : NULL;
			vnpu_at_release(r);
		}
		vnpu_at_release(zero);
		vnpu_at_release(x);
		if (!v || keepdim)
			return v;
		r = vnpu_op_reshape(v, (struct vnpu_at_int_array){ shape, nd });
		vnpu_at_release(v);
		return r;
	}
	x = self->dtype == work ? vnpu_at_retain(self) :
	    vnpu_op__to_copy(self, work, VNPU_AT_DEV_NONE, false);
	if (!x)
		return NULL;
	r = vector_norm_of(x, p, dim, keepdim);
	vnpu_at_release(x);
	if (r && r->dtype != out_dt) {
		x = vnpu_op__to_copy(r, out_dt, VNPU_AT_DEV_NONE, false);
		vnpu_at_release(r);
		r = x;
	}
	return r;
}

/* max(self) and min(self): amax/amin over every dim (the same gradient,
 * shared evenly among ties); a 0-dim self is its own extremum. */
static struct vnpu_at_tensor *extremum_of_all(const char *name, struct vnpu_at_tensor *self,
					      bool max)
{
	if (!vnpu_at_numel(self))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::%s: %s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
					 name, name);
	if (!self->ndim)
		return vnpu_op_clone(self);
	return max ? vnpu_op_amax(self, VNPU_AT_NO_INTS, false) :
		     vnpu_op_amin(self, VNPU_AT_NO_INTS, false);
}

struct vnpu_at_tensor *vnpu_cia_max(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return extremum_of_all("max", self, true);
}

struct vnpu_at_tensor *vnpu_cia_min(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return extremum_of_all("min", self, false);
}

/* reciprocal as PyTorch's CPU computes it, 1 / x, with 1 a Python scalar:
 * integer and bool inputs give the default float dtype, floats keep
 * theirs. */
struct vnpu_at_tensor *vnpu_cia_reciprocal(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	struct vnpu_at_tensor *one = wrapped_number(VNPU_AT_INT(1), self), *r;

	if (!one)
		return NULL;
	r = vnpu_op_div_Tensor(one, self);
	vnpu_at_release(one);
	return r;
}

/* ---- tests and backward ops as decompositions --------------------------------------- */

/* x == +inf or x == -inf: an integer or bool x compares in the default
 * float dtype (PyTorch's promotion with a float scalar), never equal. */
static struct vnpu_at_tensor *is_inf_of_sign(struct vnpu_at_tensor *self, double inf)
{
	return vnpu_op_eq_Scalar(self, VNPU_AT_DOUBLE(inf));
}

struct vnpu_at_tensor *vnpu_cea_isposinf(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return is_inf_of_sign(self, INFINITY);
}

struct vnpu_at_tensor *vnpu_cea_isneginf(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return is_inf_of_sign(self, -INFINITY);
}

/*
 * all and any: the minimum or maximum of (self != 0) over the dims (every
 * dim when dim is NULL), on the device's bool reductions. A reduction over
 * nothing gives true for all, false for any; the result is bool, or uint8
 * for uint8 as in PyTorch.
 */
static struct vnpu_at_tensor *truth_reduce(struct vnpu_at_tensor *self, const int64_t *dim,
					   bool keepdim, bool all)
{
	enum vnpu_at_dtype out_dt = self->dtype == VNPU_AT_U8 ? VNPU_AT_U8 : VNPU_AT_BOOL;
	int64_t shape[VNPU_AT_MAX_DIMS], d = dim ? vnpu_at_wrap_dim(*dim, self->ndim) : -1;
	struct vnpu_at_int_array dims = dim ? (struct vnpu_at_int_array){ &d, 1 } : VNPU_AT_NO_INTS;
	struct vnpu_at_tensor *nz, *r;
	int64_t reduced = 1;
	uint32_t nd = 0;

	if (dim && d < 0)
		return NULL;
	for (uint32_t i = 0; i < self->ndim; i++) {
		bool gone = !dim || (int64_t)i == d;

		if (gone)
			reduced *= self->sizes[i];
		if (!gone || keepdim)
			shape[nd++] = gone ? 1 : self->sizes[i];
	}
	if (!reduced)
		return vnpu_op_full((struct vnpu_at_int_array){ shape, nd }, VNPU_AT_INT(all),
				    out_dt, vnpu_at_device_of(self));
	nz = vnpu_op_ne_Scalar(self, VNPU_AT_INT(0));
	r = !nz || !self->ndim ? vnpu_at_retain(nz) :
	    all ? vnpu_op_amin(nz, dims, keepdim) : vnpu_op_amax(nz, dims, keepdim);
	vnpu_at_release(nz);
	return out_dt == VNPU_AT_BOOL ? r : vnpu_at_converted(r, out_dt);
}

struct vnpu_at_tensor *vnpu_cea_all_dim(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					int64_t dim, bool keepdim)
{
	return truth_reduce(self, &dim, keepdim, true);
}

struct vnpu_at_tensor *vnpu_cea_any_dim(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					int64_t dim, bool keepdim)
{
	return truth_reduce(self, &dim, keepdim, false);
}

struct vnpu_at_tensor *vnpu_cea_all(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return truth_reduce(self, NULL, false, true);
}

struct vnpu_at_tensor *vnpu_cea_any(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return truth_reduce(self, NULL, false, false);
}

/* isnan(x) = x != x: false for every integer and bool element. */
struct vnpu_at_tensor *vnpu_cea_isnan(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return vnpu_op_ne_Tensor(self, self);
}

/* The gradient of select, as PyTorch's: grad_output written (broadcast
 * as copy_ does) into zeros of the input's shape. */
struct vnpu_at_tensor *vnpu_cea_select_backward(vnpu_keyset_t ks,
						struct vnpu_at_tensor *grad_output,
						struct vnpu_at_int_array input_sizes,
						int64_t dim, int64_t index)
{
	struct vnpu_at_tensor *z, *v, *c;

	z = vnpu_op_zeros(input_sizes, grad_output->dtype, vnpu_at_device_of(grad_output));
	v = z ? vnpu_op_select_int(z, dim, index) : NULL;
	c = v ? vnpu_op_copy_(v, grad_output, false) : NULL;
	vnpu_at_release(v);
	if (!c) {
		vnpu_at_release(z);
		return NULL;
	}
	vnpu_at_release(c);
	return z;
}

/* ---- nonzero ---------------------------------------------------------------- */

/*
 * nonzero: the row-major positions of self's nonzero elements (NaN is
 * nonzero) as int64 [n, ndim]. On every backend from ops it has: the
 * flat positions are a masked_select of arange (whose count is the one
 * read back, as CUDA's nonzero reads it), each dim's coordinate their
 * remainder by its size, peeled from the last dim. A 0-dim self gives
 * [n, 0].
 */
struct vnpu_at_tensor *vnpu_cea_nonzero(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	struct vnpu_at_device dev = vnpu_at_device_of(self);
	int64_t numel = vnpu_at_numel(self), n, flat_size = -1;
	struct vnpu_at_tensor *nz, *mask = NULL, *pos = NULL, *sel = NULL, *out = NULL;
	bool ok = true;

	(void)ks;
	nz = vnpu_op_ne_Scalar(self, VNPU_AT_INT(0));
	mask = nz ? vnpu_op_reshape(nz, (struct vnpu_at_int_array){ &flat_size, 1 }) : NULL;
	pos = mask ? vnpu_op_arange_start_step(VNPU_AT_INT(0), VNPU_AT_INT(numel),
					       VNPU_AT_INT(1), VNPU_AT_I64, dev) : NULL;
	sel = pos ? vnpu_op_masked_select(pos, mask) : NULL;
	vnpu_at_release(nz);
	vnpu_at_release(mask);
	vnpu_at_release(pos);
	if (!sel)
		return NULL;
	n = sel->sizes[0];
	out = vnpu_op_empty_memory_format(VNPU_AT_INTS(n, self->ndim), VNPU_AT_I64, dev);
	for (uint32_t k = self->ndim; ok && out && n && k-- > 0;) {
		struct vnpu_at_tensor *size, *coord, *rest = NULL, *col = NULL, *c = NULL;

		size = vnpu_at_scalar_tensor(VNPU_AT_INT(self->sizes[k]), VNPU_AT_I64, dev);
		coord = size ? vnpu_op_remainder_Tensor(sel, size) : NULL;
		if (coord && k)
			rest = vnpu_op_floor_divide(sel, size);
		col = coord && (rest || !k) ? vnpu_op_select_int(out, 1, (int64_t)k) : NULL;
		c = col ? vnpu_op_copy_(col, coord, false) : NULL;
		ok = c != NULL;
		vnpu_at_release(c);
		vnpu_at_release(col);
		vnpu_at_release(coord);
		vnpu_at_release(size);
		if (rest) {
			vnpu_at_release(sel);
			sel = rest;
		}
	}
	vnpu_at_release(sel);
	if (!ok) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}
