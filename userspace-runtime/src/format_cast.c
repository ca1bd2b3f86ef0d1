// SPDX-License-Identifier: MIT
/*
 * Format cast: moving a tensor between two memory formats on the device.
 *
 * Every real conversion is the TRANSDATA kernel (docs/formats.md); this
 * file only decides which launches a pair of descriptors needs and builds
 * their vnpu_tensor views:
 *   same storage layout (same format, or ND <-> NCHW)   a D2D copy, or
 *                                                        nothing in place
 *   plain <-> plain (NHWC on one side)                   one strided TRANSDATA
 *   plain <-> internal                                   one TRANSDATA
 *   internal <-> other internal                          two TRANSDATAs through
 *                                                        a temporary in the
 *                                                        source's base format
 * The kernel refuses internal -> internal, as GE does, hence the temporary.
 */
#include <stdbool.h>
#include <string.h>

#include "tensor_desc.h"
#include "tensor.h"
#include "internal.h"

/* Bytes of output one block should at least get: below this the block's
 * fixed cost dominates. */
#define FC_BYTES_PER_BLOCK (16u * 1024u)
/* Blocks per core: enough to even out tiles of unequal cost. */
#define FC_BLOCKS_PER_CORE 4u

/* NC1HWC0 and FRACTAL_Z are defined on 4-D [N, C, H, W]: a cast touching
 * one of them views both sides padded to 4-D. */
static bool fc_needs_pad4(const struct vnpu_tdesc_info *a,
			  const struct vnpu_tdesc_info *b)
{
	return a->format == VNPU_FORMAT_NC1HWC0 ||
	       a->format == VNPU_FORMAT_FRACTAL_Z ||
	       b->format == VNPU_FORMAT_NC1HWC0 ||
	       b->format == VNPU_FORMAT_FRACTAL_Z;
}

/* The plain format whose storage layout a format is derived from
 * (torch_npu's base format). */
static uint32_t fc_base_format(uint32_t format)
{
	switch (format) {
	case VNPU_FORMAT_NC1HWC0:
	case VNPU_FORMAT_FRACTAL_Z:
		return VNPU_FORMAT_NCHW;
	case VNPU_FORMAT_FRACTAL_NZ:
		return VNPU_FORMAT_ND;
	default:
		return format;
	}
}

/* True when both descriptors put every element at the same byte: the same
 * format, or ND and NCHW (both dense row-major; NCHW's rank < 4 padding only
 * adds dims of size 1). */
static bool fc_same_layout(const struct vnpu_tdesc_info *a,
			   const struct vnpu_tdesc_info *b)
{
	bool a_rowmajor =
		a->format == VNPU_FORMAT_ND || a->format == VNPU_FORMAT_NCHW;
	bool b_rowmajor =
		b->format == VNPU_FORMAT_ND || b->format == VNPU_FORMAT_NCHW;

	return a->format == b->format || (a_rowmajor && b_rowmajor);
}

/* The kernel's view of a descriptor's tensor in buffer `buffer`: its
 * logical shape (padded to 4-D when pad4), and for plain formats the
 * strides of its memory order. NHWC stores the 4-D [N, C, H, W] in the
 * order N, H, W, C; rank < 4 NHWC tensors are that of their padded shape. */
static void fc_view(struct vnpu_tensor *t, const struct vnpu_tdesc_info *d,
		    uint32_t buffer, bool pad4)
{
	memset(t, 0, sizeof(*t));
	t->buffer = buffer;
	t->dtype = d->dtype;
	t->format = d->format;
	if (pad4) {
		vnpu_shape_pad4(d->ndim, d->shape, t->sizes);
		t->ndim = 4;
	} else {
		memcpy(t->sizes, d->shape, sizeof(t->sizes));
		t->ndim = d->ndim;
	}
	if (vnpu_format_is_internal(d->format))
		return;

	if (d->format == VNPU_FORMAT_NHWC) {
		int64_t p[4], s[4];

		vnpu_shape_pad4(d->ndim, d->shape, p);
		s[1] = 1;
		s[3] = p[1];
		s[2] = p[3] * p[1];
		s[0] = p[2] * s[2];
		for (uint32_t i = 0; i < t->ndim; i++)
			t->strides[i] = s[pad4 || d->ndim == 4 ? i : i + 1];
		return;
	}
	/* ND, NCHW: dense row-major; the products are bounded by the storage
	 * size, which td_build checked to fit int64_t */
	if (t->ndim == 0)
		return;
	t->strides[t->ndim - 1] = 1;
	for (uint32_t i = t->ndim - 1; i-- > 0;)
		t->strides[i] = t->strides[i + 1] * t->sizes[i + 1];
}

static uint32_t fc_blocks(size_t out_bytes, uint32_t cores)
{
	uint64_t units = out_bytes / FC_BYTES_PER_BLOCK + 1;
	uint64_t max = (uint64_t)(cores ? cores : 1) * FC_BLOCKS_PER_CORE;

	if (units > max)
		units = max;
	return (uint32_t)units;
}

/* ptr must hold `need` bytes inside one device or pinned allocation. */
static vnpu_error_t fc_check_extent(struct rt_device *d, const char *which,
				    const void *ptr, size_t need)
{
	uint64_t va, avail;

	if (rt_lookup(d, ptr, &va, &avail) == RT_PTR_HOST)
		return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
			       "format cast: %s %p is not inside a live device "
			       "or pinned allocation",
			       which, ptr);
	if (avail < need)
		return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
			       "format cast: %s %p has %llu bytes to the end of "
			       "its allocation; its descriptor's storage needs "
			       "%zu",
			       which, ptr, (unsigned long long)avail, need);
	return VNPU_SUCCESS;
}

/* One TRANSDATA from (sd at src) to (dd at dst). */
static vnpu_error_t fc_transdata(const struct vnpu_tdesc_info *sd,
				 const void *src,
				 const struct vnpu_tdesc_info *dd, void *dst,
				 uint32_t cores, vnpu_stream_t stream)
{
	bool pad4 = fc_needs_pad4(sd, dd);
	struct vnpu_kp_transdata kp;
	struct vnpu_launch_buffer bufs[2] = {
		{src, sd->storage_bytes, VNPU_ACCESS_READ},
		{dst, dd->storage_bytes, VNPU_ACCESS_WRITE},
	};

	fc_view(&kp.src, sd, 0, pad4);
	fc_view(&kp.out, dd, 1, pad4);
	return vnpu_launch_kernel("transdata",
				  fc_blocks(dd->storage_bytes, cores), bufs, 2,
				  &kp, sizeof(kp), stream);
}

/* Internal -> another internal format, through a temporary in the source's
 * base format. vnpu_free waits for the device, so the temporary outlives
 * both launches. */
static vnpu_error_t fc_through_base(const struct vnpu_tdesc_info *sd,
				    const void *src,
				    const struct vnpu_tdesc_info *dd, void *dst,
				    uint32_t cores, vnpu_stream_t stream)
{
	struct vnpu_tdesc_info base = *sd;
	vnpu_error_t err, free_err;
	void *tmp;

	base.format = fc_base_format(sd->format);
	base.storage_ndim = sd->ndim;
	memcpy(base.storage, sd->shape, sizeof(sd->shape));
	base.storage_bytes = (size_t)sd->numel * sd->itemsize;

	err = vnpu_malloc(&tmp, base.storage_bytes);
	if (err != VNPU_SUCCESS)
		return err;
	err = fc_transdata(sd, src, &base, tmp, cores, stream);
	if (err == VNPU_SUCCESS)
		err = fc_transdata(&base, tmp, dd, dst, cores, stream);
	free_err = vnpu_free(tmp);
	return err != VNPU_SUCCESS ? err : free_err;
}

vnpu_error_t vnpu_format_cast(vnpu_tensor_desc_t src_desc, const void *src,
			      vnpu_tensor_desc_t dst_desc, void *dst,
			      vnpu_stream_t stream)
{
	struct vnpu_tdesc_info sd, dd;
	uintptr_t s = (uintptr_t)src, d = (uintptr_t)dst;
	struct rt_stream *rs;
	uint32_t cores;
	vnpu_error_t err;

	if (vnpu_tensor_desc_lookup(src_desc, &sd) != VNPU_SUCCESS)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "format cast: source descriptor %p is not "
			       "live",
			       (void *)src_desc);
	if (vnpu_tensor_desc_lookup(dst_desc, &dd) != VNPU_SUCCESS)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "format cast: destination descriptor %p is "
			       "not live",
			       (void *)dst_desc);
	if (!src || !dst)
		return rt_fail(VNPU_ERROR_NULL_POINTER,
			       "format cast: %s pointer is NULL",
			       !src ? "source" : "destination");
	if (sd.dtype != dd.dtype)
		return rt_fail(VNPU_ERROR_INVALID_DESCRIPTOR,
			       "format cast: dtypes differ (%u -> %u)",
			       sd.dtype, dd.dtype);
	if (sd.ndim != dd.ndim ||
	    memcmp(sd.shape, dd.shape, sizeof(sd.shape)) != 0)
		return rt_fail(VNPU_ERROR_INVALID_DESCRIPTOR,
			       "format cast: logical shapes differ");

	/* The stream is checked even when there is nothing to submit. */
	err = rt_ready();
	if (err != VNPU_SUCCESS)
		return err;
	err = rt_stream_get(stream, &rs);
	if (err != VNPU_SUCCESS)
		return err;
	cores = rs->dev->info.cores;
	err = fc_check_extent(rs->dev, "src", src, sd.storage_bytes);
	if (!err)
		err = fc_check_extent(rs->dev, "dst", dst, dd.storage_bytes);
	rt_stream_put(rs);
	if (err)
		return err;

	if (fc_same_layout(&sd, &dd) && s == d)
		return VNPU_SUCCESS; /* a relabel */
	if (s < d + dd.storage_bytes && d < s + sd.storage_bytes)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "format cast: source and destination storage "
			       "overlap");
	if (sd.numel == 0)
		return VNPU_SUCCESS; /* nothing to move, no padding to write */
	if (fc_same_layout(&sd, &dd))
		return vnpu_memcpy_async(dst, src, sd.storage_bytes,
					 VNPU_MEMCPY_D2D, stream);
	if (vnpu_format_is_internal(sd.format) &&
	    vnpu_format_is_internal(dd.format))
		return fc_through_base(&sd, src, &dd, dst, cores, stream);
	return fc_transdata(&sd, src, &dd, dst, cores, stream);
}
