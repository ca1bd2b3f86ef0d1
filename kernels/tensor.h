/* SPDX-License-Identifier: MIT */
/*
 * Tensor descriptor checks shared by every kernel's validator, and the
 * storage geometry of the internal formats.
 */
#ifndef VNPU_KERNELS_TENSOR_H
#define VNPU_KERNELS_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "dtype.h"
#include "kernel.h"

/* Storage shape of a logical shape in `format` (see docs/hw-spec.md):
 *   NC1HWC0     [N,C,H,W]      -> [N, C1, H, W, C0]
 *   FRACTAL_Z   [N,C,H,W]      -> [C1*H*W, N1, 16, C0]
 *   FRACTAL_NZ  [b..., M, K]   -> [b..., K1, M1, 16, C0]
 * with C0 = VNPU_C0(itemsize), C1 = ceil(C/C0), N1 = ceil(N/16),
 * K1 = ceil(K/C0), M1 = ceil(M/16); FRACTAL_NZ takes rank 2..6 so that the
 * storage shape fits VNPU_MAX_DIMS. Plain formats return the shape itself.
 * Returns false when the rank does not fit the format, the dtype has no C0
 * (8-byte types) or a size overflows. */
bool vnpu_storage_shape(uint32_t format, uint32_t dtype, uint32_t ndim,
			const int64_t *sizes, int64_t *storage,
			uint32_t *storage_ndim);

/* Elements in the storage of t (product of the storage shape; for plain
 * formats the logical element count). False on overflow or bad rank. */
bool vnpu_storage_numel(const struct vnpu_tensor *t, uint64_t *numel);

/* Logical element count, false on overflow. */
bool vnpu_tensor_numel(const struct vnpu_tensor *t, uint64_t *numel);

/* Checks a descriptor against the launch buffers: buffer index, access
 * (VNPU_ACCESS_* needed), dtype, format, rank, non-negative sizes and
 * strides, zero entries past ndim, zero strides for internal formats, and
 * that every element it can address lies inside the buffer, with
 * overflow-checked arithmetic. Returns VNPU_STATUS_OK, INVALID_ARGS, or
 * UNSUPPORTED for a dtype/format the tensor layer does not know. */
uint32_t vnpu_tensor_check(const struct vnpu_tensor *t,
			   const struct vnpu_kbuf *bufs, uint32_t nbufs,
			   uint32_t access);

/* vnpu_tensor_check, then an operand of the matrix units: F32, F16 or
 * BF16 (another dtype is UNSUPPORTED), and `dtype`, the launch's (a
 * mixed launch is INVALID_ARGS). */
uint32_t vnpu_tensor_check_matrix(const struct vnpu_tensor *t,
				  const struct vnpu_kbuf *bufs, uint32_t nbufs,
				  uint32_t access, uint32_t dtype);

/* Host pointer to the first element (offset applied) of a checked tensor. */
static inline void *vnpu_tensor_data(const struct vnpu_tensor *t,
				     const struct vnpu_kbuf *bufs)
{
	return (char *)bufs[t->buffer].ptr +
	       (uint64_t)t->offset * vnpu_dtype_size(t->dtype);
}

/* True when t is plain and its elements are dense in row-major order. */
bool vnpu_tensor_is_contiguous(const struct vnpu_tensor *t);


/* Element offset (from the buffer start, offset included) of the element
 * with row-major logical index `linear` of a plain tensor. */
static inline uint64_t vnpu_tensor_elem(const struct vnpu_tensor *t,
					uint64_t linear)
{
	uint64_t off = (uint64_t)t->offset;

	for (uint32_t i = t->ndim; i-- > 0;) {
		uint64_t n = (uint64_t)t->sizes[i];

		off += (linear % n) * (uint64_t)t->strides[i];
		linear /= n;
	}
	return off;
}

#endif /* VNPU_KERNELS_TENSOR_H */
