/* SPDX-License-Identifier: MIT */
/*
 * libvnpurt: the vnpu runtime.
 *
 * Devices, device and pinned host memory, synchronous and asynchronous
 * copies, streams, events, kernel launch, tensor descriptors and format
 * cast, over one of two backends: `drm` (the vnpu kernel driver) or `sim`
 * (the device simulator in-process, the default when no device node
 * exists). docs/runtime-api.md is the guide; this header is the reference.
 *
 * Conventions
 *  - Every function returns vnpu_error_t; VNPU_SUCCESS is 0. A failing call
 *    also sets the calling thread's last error (vnpu_get_last_error()); a
 *    call that succeeds leaves it as it was.
 *  - Outputs are written only on success.
 *  - Device pointers are device virtual addresses in the process's context
 *    of the current device; pointer arithmetic inside one allocation is
 *    allowed. They are not host-dereferenceable, and never a valid host
 *    address of the process: every device VA lies in a window of the
 *    process's address space the runtime reserves (mapped PROT_NONE), so
 *    a pointer is unambiguously host or device memory.
 *  - Handles (streams, events, tensor descriptors) are opaque. Using a
 *    destroyed handle, or one from before vnpu_finalize(), returns
 *    VNPU_ERROR_INVALID_HANDLE whatever was created since; never crashes.
 *  - Every function is thread-safe. The current device is per thread.
 *  - A NULL stream is the current device's default stream, an ordinary
 *    in-order stream that does not synchronise with other streams.
 *  - A device that does not come back after a reset is lost for the rest
 *    of the session: every later call that submits work, waits for it or
 *    creates device resources returns VNPU_ERROR_DEVICE_RESET, its detail
 *    saying why; freeing and destroying still work.
 */
#ifndef VNPU_RUNTIME_H
#define VNPU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "vnpu/kernel_abi.h"	/* enum vnpu_dtype, enum vnpu_format, vnpu_kp_* */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes --------------------------------------------------- */

typedef enum vnpu_error {
	VNPU_SUCCESS = 0,
	VNPU_ERROR_INVALID_VALUE,	/* an argument is out of its range */
	VNPU_ERROR_NULL_POINTER,	/* a required pointer argument is NULL */
	VNPU_ERROR_NOT_INITIALIZED,	/* vnpu_init() not called (or finalized) */
	VNPU_ERROR_NO_DEVICE,		/* no device / index out of range */
	VNPU_ERROR_BACKEND_UNAVAILABLE,	/* VNPU_BACKEND names a backend not here */
	VNPU_ERROR_OUT_OF_MEMORY,	/* device or host memory exhausted, or
					 * the driver's per-user share of it
					 * reached (the detail says which) */
	VNPU_ERROR_INVALID_DEVICE_POINTER, /* not inside a live allocation */
	VNPU_ERROR_INVALID_HOST_POINTER,   /* not a vnpu_host_malloc() pointer */
	VNPU_ERROR_INVALID_COPY_KIND,	/* kind does not match the pointers */
	VNPU_ERROR_INVALID_HANDLE,	/* stream/event/descriptor not live */
	VNPU_ERROR_NOT_READY,		/* query: work still pending */
	VNPU_ERROR_UNKNOWN_KERNEL,	/* no kernel of that name */
	VNPU_ERROR_LAUNCH_FAILURE,	/* the device rejected a launch's args */
	VNPU_ERROR_UNSUPPORTED,		/* dtype/format combination not supported */
	VNPU_ERROR_INVALID_DESCRIPTOR,	/* tensor descriptors do not match */
	VNPU_ERROR_MMU_FAULT,		/* an operation touched unmapped memory */
	VNPU_ERROR_DEVICE_ERROR,	/* the device failed a command */
	VNPU_ERROR_DEVICE_RESET,	/* the device was reset; work was lost */
	VNPU_ERROR_TIMEOUT,		/* a wait gave up */
	VNPU_ERROR_LAUNCH_TIMEOUT,	/* work ran past the device's time
					 * limit and was aborted */
	VNPU_ERROR_FORKED,		/* this process is a fork() child of one
					 * that had started the runtime: it
					 * cannot use it (CUDA's rule) */
	VNPU_ERROR_COUNT
} vnpu_error_t;

/* A constant string naming the status ("invalid device pointer"). */
const char *vnpu_error_string(vnpu_error_t err);
/* The calling thread's last error; get clears it, peek does not. */
vnpu_error_t vnpu_get_last_error(void);
vnpu_error_t vnpu_peek_last_error(void);
/* Text describing the calling thread's last error, naming the failing
 * operation for asynchronous errors ("launch gemm #42 on stream 3: MMU
 * fault at VA 0x..."). It stays until the thread's next failing call
 * (vnpu_get_last_error() does not clear it). */
const char *vnpu_last_error_detail(void);

/* ---- initialisation and devices ------------------------------------- */

/* Opens the backend (VNPU_BACKEND=sim|drm, else auto-detected). Reference
 * counted: each successful vnpu_init needs a vnpu_finalize. */
vnpu_error_t vnpu_init(void);
vnpu_error_t vnpu_finalize(void);
/* 1 when the runtime is started in this process (vnpu_init() and no final
 * vnpu_finalize()); 0 otherwise, and in a child forked from a process that
 * had started it, where every call fails with VNPU_ERROR_FORKED. */
int vnpu_is_initialized(void);

vnpu_error_t vnpu_device_count(int *count);
/* The devices vnpu_init() would open (0 when none), counted without
 * starting the runtime: no thread, no open file and no state is left, so
 * a process that only asks may still fork and use the device in the child
 * (PyTorch counts CUDA devices through NVML for the same reason). */
vnpu_error_t vnpu_device_count_probe(int *count);
vnpu_error_t vnpu_set_device(int device);
vnpu_error_t vnpu_get_device(int *device);

struct vnpu_device_props {
	char name[64];			/* "vnpu (sim)" / "vnpu (drm accel0)" */
	char backend[8];		/* "sim" or "drm" */
	uint32_t hw_version;		/* HW_VERSION register */
	uint32_t fw_version;
	uint32_t cores;
	uint32_t queues;
	uint64_t vram_size;
	char fw_build[32];
};
vnpu_error_t vnpu_device_properties(int device, struct vnpu_device_props *p);
/* Device memory of the current device: total bytes, and the bytes free to
 * this process (on drm no more than the driver's per-user share leaves;
 * what the cache holds is not free). */
vnpu_error_t vnpu_mem_info(size_t *free_bytes, size_t *total_bytes);
/* Waits for all work of the current device, on every stream. */
vnpu_error_t vnpu_device_synchronize(void);

/* ---- memory ------------------------------------------------------------- */

typedef struct vnpu_stream *vnpu_stream_t;

/* Device memory, 256-byte aligned. Small sizes come from a caching
 * sub-allocator. size 0 is VNPU_ERROR_INVALID_VALUE. When the device
 * refuses for lack of memory, the cache is emptied (as by
 * vnpu_mem_empty_cache) and the allocation tried once more; then it is
 * VNPU_ERROR_OUT_OF_MEMORY, the detail saying what ran short. */
vnpu_error_t vnpu_malloc(void **devptr, size_t size);
/* Waits for pending work on the current device, then frees. NULL is a
 * no-op; a pointer not returned by vnpu_malloc (or already freed) is
 * VNPU_ERROR_INVALID_DEVICE_POINTER. */
vnpu_error_t vnpu_free(void *devptr);
/* Stream-ordered memory, as cudaMallocAsync / cudaFreeAsync: on the
 * stream's device (NULL: the current device's default stream), without
 * waiting for the device. vnpu_free_async gives the block back once the
 * work queued on the stream before it has run; work queued after it on the
 * same stream may reuse it at once. Work of other streams that uses the
 * block must be ordered before the free (an event), as in CUDA. Either
 * pointer may be given to vnpu_free and vnpu_free_async alike. */
vnpu_error_t vnpu_malloc_async(void **devptr, size_t size,
			       vnpu_stream_t stream);
vnpu_error_t vnpu_free_async(void *devptr, vnpu_stream_t stream);

struct vnpu_mem_stats {
	uint64_t in_use;	/* bytes allocated by the user */
	uint64_t peak;		/* high-water mark of in_use */
	uint64_t cached;	/* bytes held by the cache, free for reuse
				 * (in stream order: vnpu_free_async) */
	uint64_t reserved;	/* device bytes the runtime holds in total */
};
vnpu_error_t vnpu_mem_stats(struct vnpu_mem_stats *stats);
/* The current device's peak becomes its bytes in use now. */
vnpu_error_t vnpu_mem_reset_peak(void);
/* Waits for the current device's work, then returns its cached chunks
 * with no block in use, and the blocks vnpu_free_async gave back, to the
 * device. */
vnpu_error_t vnpu_mem_empty_cache(void);

/* Pinned (page-locked, device-visible) host memory: copies from and to it
 * run as device DMA without staging. */
vnpu_error_t vnpu_host_malloc(void **ptr, size_t size);
vnpu_error_t vnpu_host_free(void *ptr);

/* ---- copies -------------------------------------------------------------- */

enum vnpu_memcpy_kind {
	VNPU_MEMCPY_H2H = 0,
	VNPU_MEMCPY_H2D = 1,
	VNPU_MEMCPY_D2H = 2,
	VNPU_MEMCPY_D2D = 3,
};

/* Synchronous: returns when the copy is complete. The kind must match
 * the pointers (device pointers for the D sides, host ones for H). A side
 * inside an allocation must end inside it: past a device allocation is
 * VNPU_ERROR_INVALID_DEVICE_POINTER, past a pinned block
 * VNPU_ERROR_INVALID_VALUE (pinned sides are copied by DMA, never staged). */
vnpu_error_t vnpu_memcpy(void *dst, const void *src, size_t size,
			 enum vnpu_memcpy_kind kind);
/* Ordered on stream. With pageable host memory the host side is staged:
 * the call returns once the source was consumed (H2D) — the destination
 * of a D2H copy is written when the stream reaches the copy. */
vnpu_error_t vnpu_memcpy_async(void *dst, const void *src, size_t size,
			       enum vnpu_memcpy_kind kind,
			       vnpu_stream_t stream);
/* Sets size bytes at devptr to (uint8_t)value. */
vnpu_error_t vnpu_memset(void *devptr, int value, size_t size);
vnpu_error_t vnpu_memset_async(void *devptr, int value, size_t size,
			       vnpu_stream_t stream);

/* ---- streams --------------------------------------------------------- */

#define VNPU_STREAM_PRIORITY_LOW 0
#define VNPU_STREAM_PRIORITY_HIGH 1

vnpu_error_t vnpu_stream_create(vnpu_stream_t *stream, int priority);
/* Waits for the stream's work, then destroys it. */
vnpu_error_t vnpu_stream_destroy(vnpu_stream_t stream);
/* Waits for all work on the stream; reports its first asynchronous error
 * since the last synchronize/query (and clears it). */
vnpu_error_t vnpu_stream_synchronize(vnpu_stream_t stream);
/* VNPU_SUCCESS when all work is done, VNPU_ERROR_NOT_READY when not, or
 * the stream's pending asynchronous error. */
vnpu_error_t vnpu_stream_query(vnpu_stream_t stream);
/* The device the stream belongs to (NULL: the current device), as
 * cudaStreamGetDevice. */
vnpu_error_t vnpu_stream_get_device(vnpu_stream_t stream, int *device);

/* ---- events ------------------------------------------------------------ */

/*
 * CUDA's semantics: an event is its latest record. Recording again (on any
 * stream) replaces what query, synchronize and elapsed time look at, and
 * changes nothing for waits already submitted: vnpu_stream_wait_event()
 * waits for the record current at the call and for nothing recorded later.
 * Destroying an event does not wait for its records.
 */
typedef struct vnpu_event *vnpu_event_t;

#define VNPU_EVENT_DEFAULT 0u
#define VNPU_EVENT_DISABLE_TIMING (1u << 0)

vnpu_error_t vnpu_event_create(vnpu_event_t *event, unsigned flags);
vnpu_error_t vnpu_event_destroy(vnpu_event_t event);
/* Captures the work submitted to stream so far (this record becomes the
 * event's latest). */
vnpu_error_t vnpu_event_record(vnpu_event_t event, vnpu_stream_t stream);
/* VNPU_SUCCESS once the latest record's work is done (or the event was
 * never recorded), VNPU_ERROR_NOT_READY before; the record's error when it
 * did not run. */
vnpu_error_t vnpu_event_query(vnpu_event_t event);
vnpu_error_t vnpu_event_synchronize(vnpu_event_t event);
/* Work submitted to stream after this call waits for the event's latest
 * record at the time of the call (on the device; the host does not
 * block). A never-recorded event: nothing to wait for. */
vnpu_error_t vnpu_stream_wait_event(vnpu_stream_t stream, vnpu_event_t event);
/* Milliseconds of device time between the latest records of two completed
 * timing events. */
vnpu_error_t vnpu_event_elapsed_time(float *ms, vnpu_event_t start,
				     vnpu_event_t end);

/* ---- kernel launch ---------------------------------------------------- */

/* One buffer of a launch: [ptr, ptr + size) must lie in one allocation
 * (device memory or pinned host memory). */
struct vnpu_launch_buffer {
	const void *ptr;
	size_t size;
	uint32_t access;	/* VNPU_ACCESS_READ | VNPU_ACCESS_WRITE */
};

/* Launches kernel `name` (see docs/hw-spec.md, section 6: "gemm",
 * "transdata", ...) with `blocks` blocks. params is the kernel's
 * struct vnpu_kp_* from vnpu/kernel_abi.h; each vnpu_tensor in it names
 * its buffer by index into bufs. Errors the device finds in the params are
 * reported asynchronously (VNPU_ERROR_LAUNCH_FAILURE or _UNSUPPORTED) by
 * the next synchronize/query, or at once with VNPU_LAUNCH_BLOCKING=1. */
vnpu_error_t vnpu_launch_kernel(const char *name, uint32_t blocks,
				const struct vnpu_launch_buffer *bufs,
				uint32_t nbufs, const void *params,
				size_t params_size, vnpu_stream_t stream);

/* ---- tensor descriptors and format cast -------------------------------- */

typedef struct vnpu_tensor_desc *vnpu_tensor_desc_t;

#define VNPU_STORAGE_MAX_DIMS (VNPU_MAX_DIMS + 2)

/* A dense tensor of `dtype` whose logical shape is `shape` (ndim 0..8)
 * stored in `format`. Descriptors are host metadata: they need no
 * vnpu_init() and may be destroyed as soon as the calls using them returned.
 *
 * Ranks: ND and NCHW take 0..8, NHWC, NC1HWC0 and FRACTAL_Z 0..4,
 * FRACTAL_NZ 2..6 (scalars and rank-1 tensors cannot be NZ, as in newer
 * torch_npu). NCHW-family formats (NCHW, NHWC, NC1HWC0, FRACTAL_Z) of rank
 * < 4 are padded to 4-D as torch_npu does ([] -> [1,1,1,1], [C] ->
 * [1,C,1,1], [C,H] -> [1,C,H,1], [C,H,W] -> [1,C,H,W]); the logical shape
 * stays as given. The logical shape of an NHWC tensor is [N,C,H,W] like
 * every other format; its memory order is N, H, W, C.
 *
 * Errors: NULL desc or (ndim > 0) shape: VNPU_ERROR_NULL_POINTER; ndim > 8,
 * an unknown dtype or format, a negative size, or a storage size that
 * overflows: VNPU_ERROR_INVALID_VALUE; a rank the format does not take or
 * an 8-byte dtype in an internal format: VNPU_ERROR_UNSUPPORTED. */
vnpu_error_t vnpu_tensor_desc_create(vnpu_tensor_desc_t *desc,
				     enum vnpu_dtype dtype, uint32_t ndim,
				     const int64_t *shape,
				     enum vnpu_format format);
vnpu_error_t vnpu_tensor_desc_destroy(vnpu_tensor_desc_t desc);
/* The descriptor as created (logical shape, unpadded; entries past ndim
 * zero). Every output is required. */
vnpu_error_t vnpu_tensor_desc_get(vnpu_tensor_desc_t desc,
				  enum vnpu_dtype *dtype,
				  enum vnpu_format *format, uint32_t *ndim,
				  int64_t shape[VNPU_MAX_DIMS]);
/* The physical (padded) shape in the descriptor's format, in memory order
 * (docs/formats.md): NC1HWC0 [N,C1,H,W,C0], FRACTAL_Z [C1*H*W,N1,16,C0],
 * FRACTAL_NZ [b...,K1,M1,16,C0], NHWC [N,H,W,C], NCHW the padded 4-D
 * shape, ND the shape itself. Entries past ndim are zero. */
vnpu_error_t vnpu_tensor_desc_storage_shape(vnpu_tensor_desc_t desc,
					    uint32_t *ndim,
					    int64_t shape[VNPU_STORAGE_MAX_DIMS]);
/* Bytes of storage: product of the storage shape times the item size. */
vnpu_error_t vnpu_tensor_desc_storage_size(vnpu_tensor_desc_t desc,
					   size_t *bytes);
/* Converts the tensor at src (laid out as src_desc) into dst (dst_desc):
 * same dtype and logical shape (else VNPU_ERROR_INVALID_DESCRIPTOR), any
 * two formats, ordered on stream like a kernel launch. src and dst must
 * each hold their descriptor's storage size inside one allocation
 * (VNPU_ERROR_INVALID_DEVICE_POINTER) and must not overlap
 * (VNPU_ERROR_INVALID_VALUE), except for a cast in place between two
 * formats with one layout (ND <-> NCHW, or the same format), which does
 * nothing. What runs: one D2D copy for formats of one layout; one TransData
 * launch between a plain and any other format; for two different internal
 * formats, two TransData launches through a temporary in the source's base
 * format (NCHW for NC1HWC0 / FRACTAL_Z, ND for FRACTAL_NZ), which is freed
 * before returning and so waits for the device (see vnpu_free). A cast that
 * packs into an internal format writes its padding as zero; one between two
 * descriptors of one layout copies the storage as it is, padding included.
 * The buffer checks name the argument ("format cast: dst ..."). */
vnpu_error_t vnpu_format_cast(vnpu_tensor_desc_t src_desc, const void *src,
			      vnpu_tensor_desc_t dst_desc, void *dst,
			      vnpu_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* VNPU_RUNTIME_H */
