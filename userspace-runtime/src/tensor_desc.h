/* SPDX-License-Identifier: MIT */
/*
 * Tensor descriptors inside the runtime: what format cast needs to know
 * about a live descriptor, copied out of the handle table so that the
 * caller never holds a pointer into it.
 */
#ifndef VNPU_RT_TENSOR_DESC_H
#define VNPU_RT_TENSOR_DESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnpu_runtime.h"

struct vnpu_tdesc_info {
	uint32_t dtype;	 /* enum vnpu_dtype */
	uint32_t format; /* enum vnpu_format */
	uint32_t itemsize;
	uint32_t ndim; /* logical rank, as created */
	int64_t shape[VNPU_MAX_DIMS];
	uint32_t storage_ndim;
	int64_t storage[VNPU_STORAGE_MAX_DIMS];
	uint64_t numel;	      /* logical elements */
	size_t storage_bytes; /* product of storage, times itemsize */
};

/* True for the formats that torch_npu pads to 4-D below rank 4. */
bool vnpu_format_is_nchw_family(uint32_t format);

/* The logical shape padded to 4-D as torch_npu does for rank < 4
 * ([] -> [1,1,1,1], [C] -> [1,C,1,1], [C,H] -> [1,C,H,1],
 * [C,H,W] -> [1,C,H,W]); ndim must be <= 4. */
void vnpu_shape_pad4(uint32_t ndim, const int64_t *shape, int64_t out[4]);

/* Copies a live descriptor's data into *info. Returns VNPU_SUCCESS or
 * VNPU_ERROR_INVALID_HANDLE; does not set the last error. */
vnpu_error_t vnpu_tensor_desc_lookup(vnpu_tensor_desc_t desc,
				     struct vnpu_tdesc_info *info);

#endif /* VNPU_RT_TENSOR_DESC_H */
