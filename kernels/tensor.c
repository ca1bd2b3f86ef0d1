// SPDX-License-Identifier: MIT
#include "tensor.h"

#include "dtype.h"

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

static bool ceil_div(int64_t a, int64_t b, int64_t *out)
{
	if (a < 0 || b <= 0)
		return false;
	*out = a / b + (a % b != 0);
	return true;
}

bool vnpu_storage_shape(uint32_t format, uint32_t dtype, uint32_t ndim,
			const int64_t *sizes, int64_t *storage,
			uint32_t *storage_ndim)
{
	uint32_t itemsize = vnpu_dtype_size(dtype);
	int64_t c0 = VNPU_C0(itemsize);
	int64_t c1, n1, k1, m1, hw;

	if (ndim > VNPU_MAX_DIMS)
		return false;
	for (uint32_t i = 0; i < ndim; i++)
		if (sizes[i] < 0)
			return false;
	if (vnpu_format_is_internal(format) && (itemsize == 0 || itemsize > 4))
		return false;

	switch (format) {
	case VNPU_FORMAT_ND:
	case VNPU_FORMAT_NCHW:
	case VNPU_FORMAT_NHWC:
		for (uint32_t i = 0; i < ndim; i++)
			storage[i] = sizes[i];
		*storage_ndim = ndim;
		return true;
	case VNPU_FORMAT_NC1HWC0:
		if (ndim != 4 || !ceil_div(sizes[1], c0, &c1))
			return false;
		storage[0] = sizes[0];
		storage[1] = c1;
		storage[2] = sizes[2];
		storage[3] = sizes[3];
		storage[4] = c0;
		*storage_ndim = 5;
		return true;
	case VNPU_FORMAT_FRACTAL_Z:
		if (ndim != 4 || !ceil_div(sizes[1], c0, &c1) ||
		    !ceil_div(sizes[0], VNPU_CUBE_M0, &n1) ||
		    __builtin_mul_overflow(sizes[2], sizes[3], &hw) ||
		    __builtin_mul_overflow(c1, hw, &storage[0]))
			return false;
		storage[1] = n1;
		storage[2] = VNPU_CUBE_M0;
		storage[3] = c0;
		*storage_ndim = 4;
		return true;
	case VNPU_FORMAT_FRACTAL_NZ:
		if (ndim < 2 || ndim + 2 > VNPU_MAX_DIMS ||
		    !ceil_div(sizes[ndim - 1], c0, &k1) ||
		    !ceil_div(sizes[ndim - 2], VNPU_CUBE_M0, &m1))
			return false;
		for (uint32_t i = 0; i + 2 < ndim; i++)
			storage[i] = sizes[i];
		storage[ndim - 2] = k1;
		storage[ndim - 1] = m1;
		storage[ndim] = VNPU_CUBE_M0;
		storage[ndim + 1] = c0;
		*storage_ndim = ndim + 2;
		return true;
	default:
		return false;
	}
}

static bool product(const int64_t *v, uint32_t n, uint64_t *out)
{
	uint64_t p = 1;

	for (uint32_t i = 0; i < n; i++)
		if (v[i] < 0 || !mul_ok(p, (uint64_t)v[i], &p))
			return false;
	*out = p;
	return true;
}

bool vnpu_tensor_numel(const struct vnpu_tensor *t, uint64_t *numel)
{
	return t->ndim <= VNPU_MAX_DIMS && product(t->sizes, t->ndim, numel);
}

bool vnpu_storage_numel(const struct vnpu_tensor *t, uint64_t *numel)
{
	int64_t storage[VNPU_MAX_DIMS + 2];
	uint32_t sn;

	if (!vnpu_storage_shape(t->format, t->dtype, t->ndim, t->sizes,
				storage, &sn))
		return false;
	return product(storage, sn, numel);
}

uint32_t vnpu_tensor_check(const struct vnpu_tensor *t,
			   const struct vnpu_kbuf *bufs, uint32_t nbufs,
			   uint32_t access)
{
	uint32_t itemsize = vnpu_dtype_size(t->dtype);
	bool internal = vnpu_format_is_internal(t->format);
	uint64_t numel, extent, last, bytes;

	if (t->buffer >= nbufs || t->ndim > VNPU_MAX_DIMS || t->offset < 0)
		return VNPU_STATUS_INVALID_ARGS;
	if ((bufs[t->buffer].access & access) != access)
		return VNPU_STATUS_INVALID_ARGS;
	if (itemsize == 0 || (!internal && !vnpu_format_is_plain(t->format)))
		return VNPU_STATUS_UNSUPPORTED;
	/* 8-byte elements (I64, F64) have no fractal geometry */
	if (internal && itemsize > 4)
		return VNPU_STATUS_UNSUPPORTED;
	for (uint32_t i = 0; i < VNPU_MAX_DIMS; i++) {
		if (t->sizes[i] < 0 || t->strides[i] < 0)
			return VNPU_STATUS_INVALID_ARGS;
		if ((i >= t->ndim || internal) && t->strides[i] != 0)
			return VNPU_STATUS_INVALID_ARGS;
		if (i >= t->ndim && t->sizes[i] != 0)
			return VNPU_STATUS_INVALID_ARGS;
	}
	if (!vnpu_tensor_numel(t, &numel))
		return VNPU_STATUS_INVALID_ARGS;

	if (internal) {
		if (!vnpu_storage_numel(t, &extent))
			return VNPU_STATUS_INVALID_ARGS;
		if (numel == 0)
			return VNPU_STATUS_OK;
	} else {
		if (numel == 0)
			return VNPU_STATUS_OK;
		/* highest element index reachable: sum (size-1)*stride */
		last = 0;
		for (uint32_t i = 0; i < t->ndim; i++) {
			uint64_t span;

			if (!mul_ok((uint64_t)(t->sizes[i] - 1),
				    (uint64_t)t->strides[i], &span) ||
			    __builtin_add_overflow(last, span, &last))
				return VNPU_STATUS_INVALID_ARGS;
		}
		extent = last + 1;
	}
	if (__builtin_add_overflow(extent, (uint64_t)t->offset, &extent) ||
	    !mul_ok(extent, itemsize, &bytes) || bytes > bufs[t->buffer].size)
		return VNPU_STATUS_INVALID_ARGS;
	return VNPU_STATUS_OK;
}

bool vnpu_tensor_is_contiguous(const struct vnpu_tensor *t)
{
	int64_t expect = 1;

	if (!vnpu_format_is_plain(t->format))
		return false;
	for (uint32_t i = t->ndim; i-- > 0;) {
		if (t->sizes[i] != 1 && t->strides[i] != expect)
			return false;
		expect *= t->sizes[i];
	}
	return true;
}


uint32_t vnpu_tensor_check_matrix(const struct vnpu_tensor *t,
				  const struct vnpu_kbuf *bufs, uint32_t nbufs,
				  uint32_t access, uint32_t dtype)
{
	uint32_t st = vnpu_tensor_check(t, bufs, nbufs, access);

	if (st != VNPU_STATUS_OK)
		return st;
	if (!vnpu_dtype_is_float(t->dtype))
		return VNPU_STATUS_UNSUPPORTED;
	return t->dtype == dtype ? VNPU_STATUS_OK : VNPU_STATUS_INVALID_ARGS;
}
