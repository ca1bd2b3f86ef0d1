/* SPDX-License-Identifier: MIT */
/*
 * What a framework front end over the dispatcher needs beyond the ops:
 * torch_vnpu builds PyTorch tensors on the dispatcher's storages, calls
 * the NPU kernels through the boxed entry points, and runs PyTorch's own
 * CPU kernels where an NPU kernel would fall back (docs/torch.md).
 */
#ifndef VNPU_FRONTEND_H
#define VNPU_FRONTEND_H

#include "vnpu_dispatch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- storages ------------------------------------------------------------ */

/* A storage of nbytes on the calling thread's npu device, allocated for
 * its current stream (the caching allocator's rules, storage.c); refcount
 * 1, ND format. NULL with the dispatch error set. */
struct vnpu_at_storage *vnpu_at_npu_storage_new(size_t nbytes);
/* A storage over npu memory that someone else owns and keeps alive while
 * the storage is used (PyTorch's from_blob of a device pointer): ND, not
 * freed at release. A pointer outside the device's allocations is found
 * by the runtime when a kernel or copy uses it (an error, never a
 * dereference). */
struct vnpu_at_storage *vnpu_at_npu_storage_borrow(void *data, size_t nbytes,
						   int device);
struct vnpu_at_storage *vnpu_at_storage_retain(struct vnpu_at_storage *s);
void vnpu_at_storage_release(struct vnpu_at_storage *s);	/* NULL: no-op */
/* Marks npu storage s as used by work queued on `stream` (PyTorch's
 * record_stream): its memory is reused only after the work queued on that
 * stream up to the storage's release. false with the error set when s is
 * not an npu storage or memory runs out. */
bool vnpu_at_storage_record_stream(struct vnpu_at_storage *s, void *stream);
/* A tensor viewing s (retained) with the given geometry; NULL with the
 * error set when it does not fit in s or the arguments are invalid. */
struct vnpu_at_tensor *vnpu_at_tensor_on(struct vnpu_at_storage *s,
					 enum vnpu_at_dtype dtype,
					 uint32_t ndim, const int64_t *sizes,
					 const int64_t *strides,
					 int64_t offset);

/* The process's device memory on one device, the runtime's counts
 * (torch.cuda's memory_allocated / max_memory_allocated /
 * memory_reserved); zeros before the runtime started. */
struct vnpu_at_npu_memory_stats {
	uint64_t allocated;	/* bytes of live allocations, as asked */
	uint64_t peak;		/* high-water mark of allocated */
	uint64_t reserved;	/* device bytes held, the cache's included */
};
bool vnpu_at_npu_memory_stats(int device,
			      struct vnpu_at_npu_memory_stats *stats);
/* The device's peak becomes what is allocated now. */
bool vnpu_at_npu_reset_peak(int device);

/* ---- the CPU fallback of a front end ---------------------------------------- */

/* While deferred on the calling thread, the dispatcher's CPU fallback does
 * not run: an op that would fall back (registered fallback or from inside
 * an NPU kernel) fails with VNPU_AT_ERR_FALLBACK_DEFERRED, and the front
 * end runs the whole op on its own framework's CPU kernels. Returns the
 * previous state for vnpu_fallback_defer_end. */
bool vnpu_fallback_defer_begin(void);
void vnpu_fallback_defer_end(bool previous);

/* The policy for a fallback the front end runs: false with
 * VNPU_AT_ERR_FALLBACK set when VNPU_FALLBACK=error refuses it; warns once
 * per op under warn. vnpu_fallback_done then counts the call under
 * qualified_name ("aten::cumsum"): in vnpu_fallback_report when the CPU
 * kernel ran (ok), in vnpu_fallback_rejections when it refused the input. */
bool vnpu_fallback_enter(const char *qualified_name);
void vnpu_fallback_done(const char *qualified_name, bool ok);

#ifdef __cplusplus
}
#endif

#endif /* VNPU_FRONTEND_H */
