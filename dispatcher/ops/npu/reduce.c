/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1): reductions on the device's REDUCE kernel
 * (docs/dispatcher.md). Float sums accumulate in f32 on the device (f64 for
 * f32 and f64 input); integer and bool sums in int64 (PyTorch's result
 * dtype for them). Invalid arguments are unsupported here
 * (vnpu_npu_unsupported): the fallback takes them, and the CPU kernel
 * words the error.
 */
#include "npu_ops_common.h"

/* The dim list as a mask; false (no error set) when the CPU kernel should
 * judge the arguments. */
static bool dims_mask(const struct vnpu_at_tensor *t,
		      struct vnpu_at_int_array dims, uint32_t *mask)
{
	*mask = 0;
	if (!t->ndim)
		return false;
	if (!dims.n) {
		*mask = (1u << t->ndim) - 1;
		return true;
	}
	for (int64_t i = 0; i < dims.n; i++) {
		int64_t d = dims.v[i] < 0 ? dims.v[i] + t->ndim : dims.v[i];

		if (d < 0 || d >= t->ndim || (*mask >> d & 1))
			return false;
		*mask |= 1u << d;
	}
	return true;
}

static bool reduced_nonempty(const struct vnpu_at_tensor *t, uint32_t mask)
{
	for (uint32_t d = 0; d < t->ndim; d++)
		if ((mask >> d & 1) && !t->sizes[d])
			return false;
	return true;
}

/* REDUCE of self (made plain on the device) in dtype dt. */
static struct vnpu_at_tensor *reduce_in(const char *name, uint32_t op,
					struct vnpu_at_tensor *self,
					enum vnpu_at_dtype dt, uint32_t mask,
					bool keepdim)
{
	struct vnpu_at_tensor *src = npk_operand(self, dt), *out;

	if (!src)
		return NULL;
	out = npk_reduce(name, op, src, mask, keepdim);
	vnpu_at_release(src);
	return out;
}

struct vnpu_at_tensor *vnpu_npu_sum_dim_IntList(vnpu_keyset_t ks,
						struct vnpu_at_tensor *self,
						struct vnpu_at_opt_int_array dim,
						bool keepdim,
						enum vnpu_at_dtype dtype)
{
	enum vnpu_at_dtype sdt = (enum vnpu_at_dtype)self->dtype;
	bool integral = npk_float_int_or_bool(sdt) && !npk_float(sdt);
	enum vnpu_at_dtype dt = dtype != VNPU_AT_DTYPE_NONE ? dtype :
				integral ? VNPU_AT_I64 : sdt;
	uint32_t mask;

	if (!npk_float_or_int(dt) || vnpu_npu_dtype(self->dtype) < 0)
		return vnpu_npu_unsupported();
	/* a 0-dim tensor sums to itself in dt */
	if (!self->ndim && (!dim.has || !dim.a.n))
		return vnpu_op__to_copy(self, dt, vnpu_npu_device(), false);
	if (!dims_mask(self, dim.has ? dim.a : VNPU_AT_NO_INTS, &mask))
		return vnpu_npu_unsupported();
	return reduce_in("aten::sum.dim_IntList", VNPU_REDUCE_SUM, self, dt,
			 mask, keepdim);
}

/* REDUCE PROD: integers and bool in wrapping int64 (the int64 result
 * PyTorch gives), floats in f32 (f64 in double). */
static struct vnpu_at_tensor *npu_prod(const char *name,
				       struct vnpu_at_tensor *self,
				       uint32_t mask, bool keepdim,
				       enum vnpu_at_dtype dtype)
{
	enum vnpu_at_dtype sdt = (enum vnpu_at_dtype)self->dtype;
	enum vnpu_at_dtype dt = dtype != VNPU_AT_DTYPE_NONE ? dtype :
				kc_is_int(sdt) ? VNPU_AT_I64 : sdt;

	if (!npk_float_or_int(dt) || vnpu_npu_dtype(sdt) < 0)
		return vnpu_npu_unsupported();
	/* a 0-dim tensor (or no dim to reduce) is its own product in dt */
	if (!mask)
		return vnpu_op__to_copy(self, dt, vnpu_npu_device(), false);
	return reduce_in(name, VNPU_REDUCE_PROD, self, dt, mask, keepdim);
}

struct vnpu_at_tensor *vnpu_npu_prod(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     enum vnpu_at_dtype dtype)
{
	return npu_prod("aten::prod", self,
			self->ndim ? (1u << self->ndim) - 1 : 0,
			false, dtype);
}

struct vnpu_at_tensor *vnpu_npu_prod_dim_int(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     int64_t dim, bool keepdim,
					     enum vnpu_at_dtype dtype)
{
	int64_t d = dim < 0 ? dim + (self->ndim ? self->ndim : 1) : dim;

	/* a dim out of range goes to the CPU kernel, which words it */
	if (d < 0 || d >= (self->ndim ? self->ndim : 1))
		return vnpu_npu_unsupported();
	return npu_prod("aten::prod.dim_int", self, self->ndim ? 1u << d : 0,
			keepdim, dtype);
}

struct vnpu_at_tensor *vnpu_npu_mean(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     enum vnpu_at_dtype dtype)
{
	enum vnpu_at_dtype dt = dtype != VNPU_AT_DTYPE_NONE ? dtype :
							       self->dtype;

	if (!npk_float(dt) || !self->ndim || vnpu_npu_dtype(self->dtype) < 0)
		return vnpu_npu_unsupported();
	return reduce_in("aten::mean", VNPU_REDUCE_MEAN, self, dt,
			 (1u << self->ndim) - 1, false);
}

struct vnpu_at_tensor *vnpu_npu_mean_dim(vnpu_keyset_t ks,
					 struct vnpu_at_tensor *self,
					 struct vnpu_at_opt_int_array dim,
					 bool keepdim, enum vnpu_at_dtype dtype)
{
	enum vnpu_at_dtype dt = dtype != VNPU_AT_DTYPE_NONE ? dtype :
							       self->dtype;
	uint32_t mask;

	if (!npk_float(dt) || vnpu_npu_dtype(self->dtype) < 0 ||
	    !dims_mask(self, dim.has ? dim.a : VNPU_AT_NO_INTS, &mask))
		return vnpu_npu_unsupported();
	return reduce_in("aten::mean.dim", VNPU_REDUCE_MEAN, self, dt, mask,
			 keepdim);
}

/* MAX/MIN on the device: floats, integers and bool (PyTorch's argmax and
 * argmin refuse bool: arg_ok). */
static bool extremum_dtype(enum vnpu_at_dtype dt)
{
	return npk_float_int_or_bool(dt);
}

/* amax (MAX) or amin (MIN) over dim in self's dtype. */
static struct vnpu_at_tensor *extremum(const char *name, uint32_t op,
				       struct vnpu_at_tensor *self,
				       struct vnpu_at_int_array dim, bool keepdim)
{
	uint32_t mask;

	if (!extremum_dtype(self->dtype) || !dims_mask(self, dim, &mask) ||
	    !reduced_nonempty(self, mask))
		return vnpu_npu_unsupported();
	return reduce_in(name, op, self, self->dtype, mask, keepdim);
}

struct vnpu_at_tensor *vnpu_npu_amax(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     struct vnpu_at_int_array dim,
				     bool keepdim)
{
	return extremum("aten::amax", VNPU_REDUCE_MAX, self, dim, keepdim);
}

struct vnpu_at_tensor *vnpu_npu_amin(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     struct vnpu_at_int_array dim,
				     bool keepdim)
{
	return extremum("aten::amin", VNPU_REDUCE_MIN, self, dim, keepdim);
}

/*
 * ARGMAX/ARGMIN along one dim; with dim None over the flattened tensor
 * (a contiguous copy viewed 1-D), the result then 0-dim or all ones.
 */
static struct vnpu_at_tensor *arg_ext(const char *name, uint32_t op,
				      struct vnpu_at_tensor *self,
				      struct vnpu_at_opt_int dim, bool keepdim)
{
	struct vnpu_at_tensor *src, *flat, *r, *v;
	int64_t n = vnpu_at_numel(self), ones[VNPU_AT_MAX_DIMS];
	int64_t strides[VNPU_AT_MAX_DIMS] = { 0 };
	int64_t d;

	if (dim.has) {
		d = dim.v < 0 ? dim.v + self->ndim : dim.v;
		return reduce_in(name, op, self, self->dtype, 1u << d, keepdim);
	}
	src = npk_operand(self, self->dtype);
	flat = src ? vnpu_at_contiguous(src) : NULL;
	vnpu_at_release(src);
	if (!flat)
		return NULL;
	v = vnpu_at_view_of(flat, 1, &n, (int64_t[]){ 1 }, flat->offset);
	vnpu_at_release(flat);
	r = v ? npk_reduce(name, op, v, 1, false) : NULL;
	vnpu_at_release(v);
	if (!r || !keepdim)
		return r;
	for (uint32_t i = 0; i < self->ndim; i++)
		ones[i] = 1;
	v = vnpu_at_view_of(r, self->ndim, ones, strides, r->offset);
	vnpu_at_release(r);
	return v;
}

/* Whether the device can take argmax/argmin(self, dim) (bool_ok: max.dim,
 * which takes bool where argmax does not). */
static bool arg_ok(const struct vnpu_at_tensor *self,
		   struct vnpu_at_opt_int dim, bool bool_ok)
{
	int64_t d;

	if (!extremum_dtype(self->dtype) || !self->ndim ||
	    (self->dtype == VNPU_AT_BOOL && !bool_ok))
		return false;
	if (!dim.has)
		return vnpu_at_numel(self) > 0;
	d = dim.v < 0 ? dim.v + self->ndim : dim.v;
	return d >= 0 && d < self->ndim && self->sizes[d] > 0;
}

struct vnpu_at_tensor *vnpu_npu_argmax(vnpu_keyset_t ks,
				       struct vnpu_at_tensor *self,
				       struct vnpu_at_opt_int dim,
				       bool keepdim)
{
	if (!arg_ok(self, dim, false))
		return vnpu_npu_unsupported();
	return arg_ext("aten::argmax", VNPU_REDUCE_ARGMAX, self, dim, keepdim);
}

struct vnpu_at_tensor *vnpu_npu_argmin(vnpu_keyset_t ks,
				       struct vnpu_at_tensor *self,
				       struct vnpu_at_opt_int dim,
				       bool keepdim)
{
	if (!arg_ok(self, dim, false))
		return vnpu_npu_unsupported();
	return arg_ext("aten::argmin", VNPU_REDUCE_ARGMIN, self, dim, keepdim);
}

struct vnpu_ret_max_dim vnpu_npu_max_dim(vnpu_keyset_t ks,
					 struct vnpu_at_tensor *self,
					 int64_t dim, bool keepdim)
{
	struct vnpu_ret_max_dim r = { 0 };
	struct vnpu_at_tensor *src;
	uint32_t mask;

	if (!arg_ok(self, VNPU_AT_SOME_INT(dim), true))
		return (struct vnpu_ret_max_dim){ .r0 = vnpu_npu_unsupported() };
	mask = 1u << (dim < 0 ? dim + self->ndim : dim);
	src = npk_operand(self, self->dtype);
	if (!src)
		return r;
	/* values and indices: two launches reading the same operand */
	r.r0 = npk_reduce("aten::max.dim", VNPU_REDUCE_MAX, src, mask, keepdim);
	r.r1 = r.r0 ? npk_reduce("aten::max.dim", VNPU_REDUCE_ARGMAX, src,
				 mask, keepdim) : NULL;
	vnpu_at_release(src);
	if (!r.r1) {
		vnpu_at_release(r.r0);
		return (struct vnpu_ret_max_dim){ 0 };
	}
	return r;
}

/* cumsum and cumprod on SCAN: self converted to the result dtype on the
 * device, then scanned into a contiguous result, as PyTorch's kernels. A
 * dim out of range, a dtype SCAN lacks (bool) or an input the device does
 * not hold go to the CPU kernel. */
static struct vnpu_at_tensor *npu_scan(const char *name, uint32_t op,
				       struct vnpu_at_tensor *self, int64_t dim,
				       enum vnpu_at_dtype dtype)
{
	enum vnpu_at_dtype sdt = (enum vnpu_at_dtype)self->dtype;
	enum vnpu_at_dtype dt = dtype != VNPU_AT_DTYPE_NONE ? dtype :
				kc_is_int(sdt) ? VNPU_AT_I64 : sdt;
	int64_t nd = self->ndim ? self->ndim : 1;
	int64_t d = dim < 0 ? dim + nd : dim;
	struct vnpu_kp_scan p = { .op = op };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *src, *out;

	if (!npk_float_or_int(dt) || vnpu_npu_dtype(sdt) < 0 || d < 0 ||
	    d >= nd)
		return vnpu_npu_unsupported();
	if (!self->ndim)
		return vnpu_op__to_copy(self, dt, vnpu_npu_device(), false);
	src = npk_operand(self, dt);
	if (!src)
		return NULL;
	out = vnpu_npu_empty(src->ndim, src->sizes, dt);
	p.dim = (uint32_t)d;
	if (out && vnpu_at_numel(out) &&
	    (!vnpu_npu_arg(&l, src, VNPU_ACCESS_READ, &p.input) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch(name, &l, "scan", &p, sizeof(p),
			      vnpu_at_numel(out)))) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_at_release(src);
	return out;
}

struct vnpu_at_tensor *vnpu_npu_cumsum(vnpu_keyset_t ks,
				       struct vnpu_at_tensor *self, int64_t dim,
				       enum vnpu_at_dtype dtype)
{
	return npu_scan("aten::cumsum", VNPU_SCAN_SUM,
			self, dim, dtype);
}

struct vnpu_at_tensor *vnpu_npu_cumprod(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self, int64_t dim,
					enum vnpu_at_dtype dtype)
{
	return npu_scan("aten::cumprod", VNPU_SCAN_PROD,
			self, dim, dtype);
}

/* sort on SORT: values and indices new contiguous tensors, the line copied
 * and sorted in them by the device; a 0-dim self is its own sort, at index
 * 0. A dim out of range goes to the CPU kernel for its wording. */
struct vnpu_ret_sort_stable vnpu_npu_sort_stable(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						 int64_t dim, bool descending)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	int64_t d = dim < 0 ? dim + self->ndim : dim;
	struct vnpu_kp_sort p = { .descending = descending };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_ret_sort_stable r = { 0 };
	struct vnpu_at_tensor *src;

	if (!self->ndim && (dim == 0 || dim == -1)) {
		r.r0 = vnpu_op_clone(self);
		r.r1 = r.r0 ? vnpu_op_zeros(VNPU_AT_NO_INTS, VNPU_AT_I64, vnpu_npu_device()) : NULL;
		if (!r.r1) {
			vnpu_at_release(r.r0);
			r.r0 = NULL;
		}
		return r;
	}
	if (d < 0 || d >= self->ndim || vnpu_npu_dtype(dt) < 0)
		return (struct vnpu_ret_sort_stable){ .r0 = vnpu_npu_unsupported() };
	src = npk_operand(self, dt);
	if (!src)
		return r;
	r.r0 = vnpu_npu_empty(src->ndim, src->sizes, dt);
	r.r1 = r.r0 ? vnpu_npu_empty(src->ndim, src->sizes, VNPU_AT_I64) : NULL;
	p.dim = (uint32_t)d;
	if (r.r1 && !vnpu_at_numel(src)) {
		vnpu_at_release(src);
		return r;
	}
	if (!r.r1 ||
	    !vnpu_npu_arg(&l, src, VNPU_ACCESS_READ, &p.input) ||
	    !vnpu_npu_arg(&l, r.r0, VNPU_ACCESS_WRITE, &p.values) ||
	    !vnpu_npu_arg(&l, r.r1, VNPU_ACCESS_WRITE, &p.indices) ||
	    !vnpu_npu_launch("aten::sort.stable", &l, "sort", &p, sizeof(p), vnpu_at_numel(src))) {
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		r = (struct vnpu_ret_sort_stable){ 0 };
	}
	vnpu_at_release(src);
	return r;
}
