/* SPDX-License-Identifier: MIT */
/*
 * Helpers for NPU kernels: device tensors, launch descriptors built from
 * dispatcher tensors, launches on the current stream, internal formats.
 */
#ifndef VNPU_NPU_UTIL_H
#define VNPU_NPU_UTIL_H

#include "vnpu_runtime.h"
#include "../op_util.h"
#include "dispatch_internal.h"

/* vnpu_npu_ready, vnpu_npu_stream, vnpu_npu_device: the thread's npu
 * state (dispatch_internal.h, src/npu_state.c). */

/* What a kernel returns for a call it cannot take (a dtype, a layout, an
 * argument the device has no form for, or an invalid one whose error the
 * CPU kernel words): NULL with VNPU_AT_ERR_UNSUPPORTED set. The op's
 * generated entry sends the call to the fallback; kernels never call it. */
struct vnpu_at_tensor *vnpu_npu_unsupported(void);
/* The device dtype of a dispatcher dtype, or -1 for one it lacks. */
int vnpu_npu_dtype(enum vnpu_at_dtype dtype);

/* A launch being assembled: each tensor's storage becomes one buffer
 * (shared when two tensors share a storage; accesses are OR-ed). */
struct vnpu_npu_launch {
	struct vnpu_launch_buffer bufs[VNPU_KARGS_MAX_BUFFERS];
	const struct vnpu_at_storage *storages[VNPU_KARGS_MAX_BUFFERS];
	uint32_t nbufs;
};

/* True when elements of t share a location (a stride 0 over a dim of
 * size > 1: an expanded tensor); such a tensor cannot be written. */
bool vnpu_npu_overlaps_itself(const struct vnpu_at_tensor *t);
/* True when the device can write t: no two elements at one location
 * (vnpu_tensor_is_injective; internal formats always are). */
bool vnpu_npu_injective(const struct vnpu_at_tensor *t);

/* Fills desc for t as an operand of l with `access` (VNPU_ACCESS_*).
 * Plain storages: t's sizes, strides and offset. Internal-format storages:
 * t must be the whole base tensor (not a view); desc carries the npu format
 * and zero strides. A WRITE operand bumps its storage's version. False
 * with the error set on f64, a view of an internal format, a written
 * operand that overlaps itself, or more than 8 storages. */
bool vnpu_npu_arg(struct vnpu_npu_launch *l, const struct vnpu_at_tensor *t,
		  uint32_t access, struct vnpu_tensor *desc);
/* As vnpu_npu_arg for a plain tensor broadcast to out_ndim dims (leading
 * size-1 dims prepended; the kernels ignore strides of size-1 dims). */
bool vnpu_npu_arg_bcast(struct vnpu_npu_launch *l,
			const struct vnpu_at_tensor *t, uint32_t out_ndim,
			uint32_t access, struct vnpu_tensor *desc);
/* Launches kernel `name` on the current stream with blocks chosen from
 * `work` (elements or rows); false with the error set ("aten::mm: launch
 * gemm: <runtime error>"). Asynchronous: device-side errors surface at the
 * next synchronisation (copies to the host, vnpu_at_npu_synchronize). */
bool vnpu_npu_launch(const char *op, struct vnpu_npu_launch *l,
		     const char *name, const void *params, size_t params_size,
		     int64_t work);

/* A contiguous ND tensor on the current npu device. */
/* The result of an elementwise op over inputs in[n] broadcast to (ndim,
 * sizes), in the layout TensorIterator gives it (vnpu_at_iter_strides). */
struct vnpu_at_tensor *vnpu_npu_empty_iter(uint32_t n,
					   const struct vnpu_at_tensor *const *in,
					   uint32_t ndim, const int64_t *sizes,
					   enum vnpu_at_dtype dtype);
/* A 4-d result in the memory format `like` suggests (channels_last or
 * contiguous), as PyTorch's convolution and pooling kernels give it. */
struct vnpu_at_tensor *vnpu_npu_empty_like_format(const struct vnpu_at_tensor *like,
						  const int64_t *sizes,
						  enum vnpu_at_dtype dtype);
struct vnpu_at_tensor *vnpu_npu_empty(uint32_t ndim, const int64_t *sizes,
				      enum vnpu_at_dtype dtype);
/* A tensor of logical shape sizes whose storage is in `format` (enum
 * vnpu_format), storage descriptor filled as torch_npu's. */
struct vnpu_at_tensor *vnpu_npu_empty_format(uint32_t ndim,
					     const int64_t *sizes,
					     enum vnpu_at_dtype dtype,
					     int format);
/* The npu format of t's storage (ND for CPU tensors). */
int vnpu_npu_format_of(const struct vnpu_at_tensor *t);
/* Whether t is its storage's whole base tensor (the base's sizes,
 * contiguous, offset 0): the only tensor of an internal-format storage a
 * kernel may take as it is; any other view (a transpose, a reshape, a
 * slice) must be made plain first. */
bool vnpu_npu_is_whole_base(const struct vnpu_at_tensor *t);
/* t in a plain layout the kernels take with strides: t (retained) when its
 * storage is plain, else a new ND copy (one TransData). */
struct vnpu_at_tensor *vnpu_npu_plain(struct vnpu_at_tensor *t);
/* t's data in `format` (whole contiguous tensor): t retained if already
 * in it, else a format-cast copy that is cached on t's storage and reused
 * while the storage is unchanged (torch_npu casts weights once). */
struct vnpu_at_tensor *vnpu_npu_as_format(struct vnpu_at_tensor *t,
					  int format);
/* Copies between tensors of any devices/dtypes/layouts (the copy_ kernel's
 * engine): H2D, D2H, D2D, format-aware as torch_npu's copy_h2d/d2h. */
bool vnpu_npu_copy(const char *op, struct vnpu_at_tensor *dst,
		   struct vnpu_at_tensor *src);
/* The same; non_blocking lets a D2H copy into a dense CPU tensor of the
 * source's device dtype stay queued on the current stream (pinned dst:
 * complete at the stream's next synchronisation; pageable: the runtime
 * waits, as CUDA does). */
bool vnpu_npu_copy_nb(const char *op, struct vnpu_at_tensor *dst,
		      struct vnpu_at_tensor *src, bool non_blocking);

/* resize_ of a whole internal-format tensor (torch_npu's rule): it
 * resizes as its ND contents do (the elements in row-major order keep
 * their values) and keeps its format where the new shape has a layout in
 * it, else becomes ND. The tensor takes a new storage. */
bool vnpu_npu_resize_internal(struct vnpu_at_tensor *self,
			      struct vnpu_at_int_array size);
struct vnpu_at_tensor *vnpu_resize_impl(struct vnpu_at_tensor *self,
					struct vnpu_at_int_array size);

#endif /* VNPU_NPU_UTIL_H */
