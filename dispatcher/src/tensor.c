// SPDX-License-Identifier: MIT
/* Tensors: refcounted views (sizes, strides, offset) of storages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch_internal.h"

struct vnpu_at_tensor *vnpu_at_retain(struct vnpu_at_tensor *t)
{
	if (t)
		__atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
	return t;
}

void vnpu_at_release(struct vnpu_at_tensor *t)
{
	if (!t || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	vnpu_autograd_meta_free(t->autograd);
	vnpu_storage_release(t->storage);
	free(t);
}

bool vnpu_strided_span(uint32_t ndim, const int64_t *sizes,
		       const int64_t *strides, size_t itemsize, size_t *bytes)
{
	uint64_t last = 0;

	for (uint32_t i = 0; i < ndim; i++) {
		uint64_t d;

		if (sizes[i] < 0 || strides[i] < 0)
			return false;
		if (sizes[i] == 0) {
			*bytes = 0;
			return true;
		}
		if (__builtin_mul_overflow((uint64_t)(sizes[i] - 1),
					   (uint64_t)strides[i], &d) ||
		    __builtin_add_overflow(last, d, &last))
			return false;
	}
	if (__builtin_add_overflow(last, 1, &last) ||
	    __builtin_mul_overflow(last, (uint64_t)itemsize, &last) ||
	    last > (uint64_t)INT64_MAX)
		return false;
	*bytes = (size_t)last;
	return true;
}

struct vnpu_at_tensor *vnpu_tensor_on_storage(struct vnpu_at_storage *s,
					      uint32_t ndim,
					      const int64_t *sizes,
					      const int64_t *strides,
					      int64_t offset,
					      enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *t = calloc(1, sizeof(*t));

	if (!t) {
		vnpu_storage_release(s);
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "out of host memory");
	}
	t->refcount = 1;
	t->dtype = (int8_t)dtype;
	t->ndim = (uint8_t)ndim;
	t->storage = s;
	t->offset = offset;
	if (ndim) {
		memcpy(t->sizes, sizes, ndim * sizeof(int64_t));
		memcpy(t->strides, strides, ndim * sizeof(int64_t));
	}
	t->keys = vnpu_device_keys(s->device);
	return t;
}

static bool check_shape(uint32_t ndim, const int64_t *sizes,
			enum vnpu_at_dtype dtype)
{
	if (ndim > VNPU_AT_MAX_DIMS) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "tensors have at most %d dims, got %u",
				  VNPU_AT_MAX_DIMS, ndim);
		return false;
	}
	if (!vnpu_at_dtype_valid(dtype)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "invalid dtype %d", dtype);
		return false;
	}
	for (uint32_t i = 0; i < ndim; i++)
		if (sizes[i] < 0) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "negative dimension %lld",
					  (long long)sizes[i]);
			return false;
		}
	return true;
}

struct vnpu_at_tensor *vnpu_at_empty_strided(uint32_t ndim,
					     const int64_t *sizes,
					     const int64_t *strides,
					     enum vnpu_at_dtype dtype,
					     struct vnpu_at_device dev)
{
	struct vnpu_at_storage *s;
	struct vnpu_at_tensor *t;
	size_t bytes;

	if (!check_shape(ndim, sizes, dtype))
		return NULL;
	if (!vnpu_strided_span(ndim, sizes, strides, vnpu_at_dtype_size(dtype),
			       &bytes))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "empty_strided: size overflows or negative stride");
	if (dev.type != VNPU_AT_CPU && dev.type != VNPU_AT_NPU)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "invalid device");
	s = vnpu_storage_new(bytes, dev);
	if (!s)
		return NULL;
	t = vnpu_tensor_on_storage(s, ndim, sizes, strides, 0, dtype);
	if (t && dev.type == VNPU_AT_NPU) {
		s->npu.base_ndim = ndim;
		s->npu.storage_ndim = ndim;
		for (uint32_t i = 0; i < ndim; i++) {
			s->npu.base_sizes[i] = sizes[i];
			s->npu.storage_sizes[i] = sizes[i];
		}
		vnpu_at_contiguous_strides_impl(ndim, sizes, s->npu.base_strides);
	}
	return t;
}

void vnpu_at_contiguous_strides_impl(uint32_t ndim, const int64_t *sizes,
				     int64_t *strides)
{
	int64_t st = 1;

	for (uint32_t i = ndim; i-- > 0;) {
		strides[i] = st;
		st *= sizes[i] > 1 ? sizes[i] : 1;
	}
}

struct vnpu_at_tensor *vnpu_at_empty(uint32_t ndim, const int64_t *sizes,
				     enum vnpu_at_dtype dtype,
				     struct vnpu_at_device dev)
{
	int64_t strides[VNPU_AT_MAX_DIMS];

	if (!check_shape(ndim, sizes, dtype))
		return NULL;
	if (vnpu_at_shape_numel_impl(ndim, sizes) < 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "empty: size overflows");
	vnpu_at_contiguous_strides_impl(ndim, sizes, strides);
	return vnpu_at_empty_strided(ndim, sizes, strides, dtype, dev);
}

int64_t vnpu_at_shape_numel_impl(uint32_t ndim, const int64_t *sizes)
{
	int64_t n = 1;

	for (uint32_t i = 0; i < ndim; i++)
		if (sizes[i] < 0 || __builtin_mul_overflow(n, sizes[i], &n))
			return -1;
	return n;
}

struct vnpu_at_tensor *vnpu_at_empty_like(const struct vnpu_at_tensor *t)
{
	return vnpu_at_empty(t->ndim, t->sizes, (enum vnpu_at_dtype)t->dtype,
			     t->storage->device);
}

struct vnpu_at_tensor *vnpu_at_from_blob(void *data, uint32_t ndim,
					 const int64_t *sizes,
					 const int64_t *strides,
					 enum vnpu_at_dtype dtype)
{
	struct vnpu_at_storage *s;
	int64_t cst[VNPU_AT_MAX_DIMS];
	size_t bytes;

	if (!check_shape(ndim, sizes, dtype))
		return NULL;
	if (!strides) {
		vnpu_at_contiguous_strides_impl(ndim, sizes, cst);
		strides = cst;
	}
	if (!vnpu_strided_span(ndim, sizes, strides, vnpu_at_dtype_size(dtype),
			       &bytes))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "from_blob: bad strides");
	s = calloc(1, sizeof(*s));
	if (!s)
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "out of host memory");
	s->refcount = 1;
	s->device = VNPU_AT_DEV_CPU;
	s->data = data;
	s->nbytes = bytes;
	return vnpu_tensor_on_storage(s, ndim, sizes, strides, 0, dtype);
}

struct vnpu_at_tensor *vnpu_at_view_of(struct vnpu_at_tensor *t,
				       uint32_t ndim, const int64_t *sizes,
				       const int64_t *strides, int64_t offset)
{
	struct vnpu_at_tensor *v;
	size_t span, itemsize = vnpu_at_dtype_size((enum vnpu_at_dtype)t->dtype);
	uint64_t end;

	if (ndim > VNPU_AT_MAX_DIMS || offset < 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE, "view: bad geometry");
	if (!vnpu_strided_span(ndim, sizes, strides, itemsize, &span))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "view: size overflows or negative stride");
	/* internal-format storages hold padded data: bound by the base */
	if (span && (__builtin_mul_overflow((uint64_t)offset, itemsize, &end) ||
		     __builtin_add_overflow(end, span, &end) ||
		     (t->storage->npu.npu_format == VNPU_FORMAT_ND &&
		      end > t->storage->nbytes)))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "view: out of bounds of the storage (%zu bytes)",
					 t->storage->nbytes);
	__atomic_add_fetch(&t->storage->refcount, 1, __ATOMIC_RELAXED);
	v = vnpu_tensor_on_storage(t->storage, ndim, sizes, strides, offset,
				   (enum vnpu_at_dtype)t->dtype);
	if (v)
		v->is_view = true;
	return v;
}

int64_t vnpu_at_numel(const struct vnpu_at_tensor *t)
{
	int64_t n = 1;

	for (uint32_t i = 0; i < t->ndim; i++)
		n *= t->sizes[i];
	return n;
}

bool vnpu_at_is_contiguous(const struct vnpu_at_tensor *t)
{
	int64_t st = 1;

	for (uint32_t i = t->ndim; i-- > 0;) {
		if (t->sizes[i] == 0)
			return true;
		if (t->sizes[i] != 1 && t->strides[i] != st)
			return false;
		st *= t->sizes[i];
	}
	return true;
}

struct vnpu_at_device vnpu_at_device_of(const struct vnpu_at_tensor *t)
{
	return t->storage->device;
}

bool vnpu_at_is_npu(const struct vnpu_at_tensor *t)
{
	return t->storage->device.type == VNPU_AT_NPU;
}

void *vnpu_at_data(const struct vnpu_at_tensor *t)
{
	return (char *)t->storage->data +
	       t->offset * (int64_t)vnpu_at_dtype_size((enum vnpu_at_dtype)t->dtype);
}

int64_t vnpu_at_wrap_dim(int64_t dim, int64_t ndim)
{
	int64_t n = ndim ? ndim : 1;	/* a 0-dim tensor takes dim 0 / -1 */

	if (dim < -n || dim >= n) {
		vnpu_at_error_set(VNPU_AT_ERR_INDEX,
				  "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
				  (long long)-n, (long long)(n - 1), (long long)dim);
		return -1;
	}
	return dim < 0 ? dim + n : dim;
}

char *vnpu_at_format_sizes(const struct vnpu_at_tensor *t, char *buf,
			   size_t size)
{
	size_t n = 0;

	if (!size)
		return buf;
	n += (size_t)snprintf(buf, size, "[");
	for (uint32_t i = 0; i < t->ndim && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "",
				      (long long)t->sizes[i]);
	if (n < size)
		snprintf(buf + n, size - n, "]");
	return buf;
}
