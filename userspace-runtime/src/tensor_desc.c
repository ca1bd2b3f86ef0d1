// SPDX-License-Identifier: MIT
/*
 * Tensor descriptors: dtype, logical shape and format, with the storage
 * shape and size computed once at creation.
 *
 * Handles come from the runtime's handle tables (handle.c), so a destroyed
 * or foreign handle is VNPU_ERROR_INVALID_HANDLE, never dereferenced.
 * Descriptors are host metadata only, so they work without vnpu_init().
 */
#include "tensor_desc.h"

#include <pthread.h>
#include <stdlib.h>

#include "dtype.h"
#include "tensor.h"
#include "internal.h"

/* Descriptors live for the process, not between init and finalize, so
 * their handle table is created once and never torn down. */
static struct rt_handles td_table;
static pthread_once_t td_table_once = PTHREAD_ONCE_INIT;

static void td_table_init(void)
{
	rt_handles_init(&td_table, RT_HANDLE_TENSOR_DESC);
}

bool vnpu_format_is_nchw_family(uint32_t format)
{
	return format == VNPU_FORMAT_NCHW || format == VNPU_FORMAT_NHWC ||
	       format == VNPU_FORMAT_NC1HWC0 || format == VNPU_FORMAT_FRACTAL_Z;
}

void vnpu_shape_pad4(uint32_t ndim, const int64_t *shape, int64_t out[4])
{
	out[0] = out[1] = out[2] = out[3] = 1;
	/* rank 4 keeps its dims; below, the dims fill C, H, W in order */
	for (uint32_t i = 0; i < ndim; i++)
		out[ndim == 4 ? i : i + 1] = shape[i];
}

static const char *td_format_name(uint32_t format)
{
	switch (format) {
	case VNPU_FORMAT_NCHW:
		return "NCHW";
	case VNPU_FORMAT_NHWC:
		return "NHWC";
	case VNPU_FORMAT_ND:
		return "ND";
	case VNPU_FORMAT_NC1HWC0:
		return "NC1HWC0";
	case VNPU_FORMAT_FRACTAL_Z:
		return "FRACTAL_Z";
	case VNPU_FORMAT_FRACTAL_NZ:
		return "FRACTAL_NZ";
	default:
		return "?";
	}
}

static bool td_format_known(uint32_t format)
{
	return vnpu_format_is_plain(format) || vnpu_format_is_internal(format);
}

/* Ranks each format accepts: NHWC and the 4-D internal formats take rank
 * 0..4 (padded to 4), FRACTAL_NZ 2..6 (its storage has rank + 2 dims),
 * ND and NCHW any rank up to VNPU_MAX_DIMS. */
static bool td_rank_ok(uint32_t format, uint32_t ndim)
{
	switch (format) {
	case VNPU_FORMAT_NHWC:
	case VNPU_FORMAT_NC1HWC0:
	case VNPU_FORMAT_FRACTAL_Z:
		return ndim <= 4;
	case VNPU_FORMAT_FRACTAL_NZ:
		return ndim >= 2 && ndim + 2 <= VNPU_MAX_DIMS;
	default:
		return ndim <= VNPU_MAX_DIMS;
	}
}

/* Fills info from validated arguments, or returns the error (and sets it,
 * with a detail message). */
static vnpu_error_t td_build(struct vnpu_tdesc_info *info,
			     enum vnpu_dtype dtype, uint32_t ndim,
			     const int64_t *shape, enum vnpu_format format)
{
	uint32_t itemsize = vnpu_dtype_size((uint32_t)dtype);
	int64_t view[VNPU_MAX_DIMS];
	uint32_t view_ndim = ndim;
	uint64_t elems = 1, numel = 1, bytes;

	if (ndim > VNPU_MAX_DIMS)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "tensor descriptor: rank %u exceeds %d", ndim,
			       VNPU_MAX_DIMS);
	if (ndim > 0 && !shape)
		return rt_fail(VNPU_ERROR_NULL_POINTER,
			       "tensor descriptor: shape is NULL");
	if (itemsize == 0)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "tensor descriptor: unknown dtype %d",
			       (int)dtype);
	if (!td_format_known((uint32_t)format))
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "tensor descriptor: unknown format %d",
			       (int)format);
	for (uint32_t i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return rt_fail(VNPU_ERROR_INVALID_VALUE,
				       "tensor descriptor: size %lld of dim %u "
				       "is negative",
				       (long long)shape[i], i);
		if (__builtin_mul_overflow(numel, (uint64_t)shape[i], &numel))
			return rt_fail(
				VNPU_ERROR_INVALID_VALUE,
				"tensor descriptor: element count overflows");
	}
	if (vnpu_format_is_internal((uint32_t)format) && itemsize > 4)
		return rt_fail(VNPU_ERROR_UNSUPPORTED,
			       "tensor descriptor: format %s has no layout "
			       "for %u-byte elements",
			       td_format_name((uint32_t)format), itemsize);
	if (!td_rank_ok((uint32_t)format, ndim)) {
		if (format == VNPU_FORMAT_FRACTAL_NZ && ndim < 2)
			return rt_fail(
				VNPU_ERROR_UNSUPPORTED,
				"tensor descriptor: scalar and rank-1 tensors "
				"cannot be FRACTAL_NZ (rank %u; use ND)",
				ndim);
		return rt_fail(VNPU_ERROR_UNSUPPORTED,
			       "tensor descriptor: format %s does not "
			       "take rank %u",
			       td_format_name((uint32_t)format), ndim);
	}

	for (uint32_t i = 0; i < ndim; i++)
		view[i] = shape[i];
	if (vnpu_format_is_nchw_family((uint32_t)format) && ndim < 4) {
		vnpu_shape_pad4(ndim, shape, view);
		view_ndim = 4;
	}
	if (!vnpu_storage_shape((uint32_t)format, (uint32_t)dtype, view_ndim,
				view, info->storage, &info->storage_ndim))
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "tensor descriptor: %s storage shape "
			       "overflows",
			       td_format_name((uint32_t)format));
	if (format == VNPU_FORMAT_NHWC) {
		/* physical order N, H, W, C of the logical [N, C, H, W] */
		int64_t c = info->storage[1];

		info->storage[1] = info->storage[2];
		info->storage[2] = info->storage[3];
		info->storage[3] = c;
	}
	for (uint32_t i = 0; i < info->storage_ndim; i++)
		if (__builtin_mul_overflow(elems, (uint64_t)info->storage[i],
					   &elems))
			return rt_fail(VNPU_ERROR_INVALID_VALUE,
				       "tensor descriptor: storage size "
				       "overflows");
	/* Kernels address storage with signed 64-bit element offsets. */
	if (__builtin_mul_overflow(elems, (uint64_t)itemsize, &bytes) ||
	    bytes > (uint64_t)INT64_MAX || bytes > (uint64_t)SIZE_MAX)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "tensor descriptor: storage size overflows");

	info->dtype = (uint32_t)dtype;
	info->format = (uint32_t)format;
	info->itemsize = itemsize;
	info->ndim = ndim;
	for (uint32_t i = 0; i < VNPU_MAX_DIMS; i++)
		info->shape[i] = i < ndim ? shape[i] : 0;
	for (uint32_t i = info->storage_ndim; i < VNPU_STORAGE_MAX_DIMS; i++)
		info->storage[i] = 0;
	info->numel = numel;
	info->storage_bytes = (size_t)bytes;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_tensor_desc_create(vnpu_tensor_desc_t *desc,
				     enum vnpu_dtype dtype, uint32_t ndim,
				     const int64_t *shape,
				     enum vnpu_format format)
{
	struct vnpu_tdesc_info info, *obj;
	vnpu_error_t err;
	void *h;

	if (!desc)
		return rt_fail(VNPU_ERROR_NULL_POINTER,
			       "tensor descriptor: desc is NULL");
	err = td_build(&info, dtype, ndim, shape, format);
	if (err != VNPU_SUCCESS)
		return err;
	pthread_once(&td_table_once, td_table_init);
	obj = malloc(sizeof(*obj));
	h = obj ? rt_handle_add(&td_table, obj) : NULL;
	if (!h) {
		free(obj);
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "tensor descriptor: no memory for the "
			       "descriptor or its handle");
	}
	*obj = info;
	*desc = h;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_tensor_desc_destroy(vnpu_tensor_desc_t desc)
{
	struct vnpu_tdesc_info *obj;

	pthread_once(&td_table_once, td_table_init);
	obj = rt_handle_remove(&td_table, desc);
	if (!obj)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "tensor descriptor %p is not live",
			       (void *)desc);
	free(obj);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_tensor_desc_lookup(vnpu_tensor_desc_t desc,
				     struct vnpu_tdesc_info *info)
{
	struct vnpu_tdesc_info *obj;

	pthread_once(&td_table_once, td_table_init);
	obj = rt_handle_get(&td_table, desc);
	if (!obj)
		return VNPU_ERROR_INVALID_HANDLE;
	*info = *obj;
	rt_handle_put(&td_table, desc);
	return VNPU_SUCCESS;
}

static vnpu_error_t td_get_info(vnpu_tensor_desc_t desc,
				struct vnpu_tdesc_info *info)
{
	if (vnpu_tensor_desc_lookup(desc, info) != VNPU_SUCCESS)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "tensor descriptor %p is not live",
			       (void *)desc);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_tensor_desc_get(vnpu_tensor_desc_t desc,
				  enum vnpu_dtype *dtype,
				  enum vnpu_format *format, uint32_t *ndim,
				  int64_t shape[VNPU_MAX_DIMS])
{
	struct vnpu_tdesc_info info;
	vnpu_error_t err;

	if (!dtype || !format || !ndim || !shape)
		return rt_fail(VNPU_ERROR_NULL_POINTER,
			       "vnpu_tensor_desc_get: an output is NULL");
	err = td_get_info(desc, &info);
	if (err != VNPU_SUCCESS)
		return err;
	*dtype = (enum vnpu_dtype)info.dtype;
	*format = (enum vnpu_format)info.format;
	*ndim = info.ndim;
	for (uint32_t i = 0; i < VNPU_MAX_DIMS; i++)
		shape[i] = info.shape[i];
	return VNPU_SUCCESS;
}

vnpu_error_t
vnpu_tensor_desc_storage_shape(vnpu_tensor_desc_t desc, uint32_t *ndim,
			       int64_t shape[VNPU_STORAGE_MAX_DIMS])
{
	struct vnpu_tdesc_info info;
	vnpu_error_t err;

	if (!ndim || !shape)
		return rt_fail(VNPU_ERROR_NULL_POINTER,
			       "vnpu_tensor_desc_storage_shape: an "
			       "output is NULL");
	err = td_get_info(desc, &info);
	if (err != VNPU_SUCCESS)
		return err;
	*ndim = info.storage_ndim;
	for (uint32_t i = 0; i < VNPU_STORAGE_MAX_DIMS; i++)
		shape[i] = info.storage[i];
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_tensor_desc_storage_size(vnpu_tensor_desc_t desc,
					   size_t *bytes)
{
	struct vnpu_tdesc_info info;
	vnpu_error_t err;

	if (!bytes)
		return rt_fail(VNPU_ERROR_NULL_POINTER,
			       "vnpu_tensor_desc_storage_size: bytes is "
			       "NULL");
	err = td_get_info(desc, &info);
	if (err != VNPU_SUCCESS)
		return err;
	*bytes = info.storage_bytes;
	return VNPU_SUCCESS;
}
