// SPDX-License-Identifier: MIT
/* Refcounted storages: host memory for the CPU, device memory for npu
 * from the runtime's stream-ordered allocator (vnpu_malloc_async on the
 * current stream, vnpu_free_async on the storage's stream), which caches
 * and reuses blocks in stream order as PyTorch's caching allocator does;
 * the memory statistics are the runtime's, per device. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch_internal.h"
#include "vnpu_frontend.h"
#include "vnpu_runtime.h"

/* record_stream's lists of the streams that used a storage. */
static pthread_mutex_t used_streams_lock = PTHREAD_MUTEX_INITIALIZER;

/* fork(): the child may release storages it inherited (its Python frees
 * them), which takes the lock; another thread of the parent may have held
 * it at the fork. The lock is taken around fork so that the child's copy
 * is free. (The child cannot use the device: libvnpurt refuses,
 * VNPU_ERROR_FORKED.) */
static void lock_for_fork(void)
{
	pthread_mutex_lock(&used_streams_lock);
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&used_streams_lock);
}

static pthread_once_t fork_guard_once = PTHREAD_ONCE_INIT;

static void fork_guard(void)
{
	pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}

/* The runtime's memory calls act on the calling thread's current device:
 * device `index` is made current for one, *old says what to restore. Sets
 * no error: a release must not replace one its caller is reporting. */
static vnpu_error_t enter_device(int index, int *old)
{
	vnpu_error_t e = vnpu_get_device(old);

	if (e == VNPU_SUCCESS && *old != index)
		e = vnpu_set_device(index);
	return e;
}

static void leave_device(int index, int old)
{
	if (old != index)
		vnpu_set_device(old);
}

static bool device_error(int device, vnpu_error_t e)
{
	vnpu_at_error_set(VNPU_AT_ERR_DEVICE, "npu:%d: %s (%s)", device,
			  vnpu_error_string(e), vnpu_last_error_detail());
	return false;
}

/* Before the runtime started (or in a forked child) nothing is allocated:
 * zeros, without starting it, as torch.cuda's statistics are. */
bool vnpu_at_npu_memory_stats(int device,
			      struct vnpu_at_npu_memory_stats *stats)
{
	struct vnpu_mem_stats m = {0};
	vnpu_error_t e;
	int old;

	if (!stats) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "npu: stats is NULL");
		return false;
	}
	if (vnpu_is_initialized()) {
		e = enter_device(device, &old);
		if (e != VNPU_SUCCESS)
			return device_error(device, e);
		e = vnpu_mem_stats(&m);
		leave_device(device, old);
		if (e != VNPU_SUCCESS)
			return device_error(device, e);
	}
	stats->allocated = m.in_use;
	stats->peak = m.peak;
	stats->reserved = m.reserved;
	return true;
}

bool vnpu_at_npu_reset_peak(int device)
{
	vnpu_error_t e;
	int old;

	if (!vnpu_is_initialized())
		return true;
	e = enter_device(device, &old);
	if (e != VNPU_SUCCESS)
		return device_error(device, e);
	e = vnpu_mem_reset_peak();
	leave_device(device, old);
	return e == VNPU_SUCCESS || device_error(device, e);
}

void vnpu_at_npu_empty_cache(void)
{
	int n = 0, old;

	if (!vnpu_is_initialized() || vnpu_device_count(&n) != VNPU_SUCCESS)
		return;
	for (int i = 0; i < n; i++) {
		if (enter_device(i, &old) != VNPU_SUCCESS)
			continue;
		vnpu_mem_empty_cache();
		leave_device(i, old);
	}
}

/* nbytes (at least 1) on device `device` (current), ordered on `stream`
 * when it is that device's. */
static void *npu_alloc(size_t nbytes, int device, void **stream)
{
	void *ptr = NULL;
	int on = device;
	vnpu_error_t e;

	pthread_once(&fork_guard_once, fork_guard);
	if (*stream && (vnpu_stream_get_device(*stream, &on) != VNPU_SUCCESS ||
			on != device))
		*stream = NULL; /* the device's default stream then */
	e = vnpu_malloc_async(&ptr, nbytes ? nbytes : 1, *stream);
	if (e != VNPU_SUCCESS) {
		vnpu_at_error_set(e == VNPU_ERROR_OUT_OF_MEMORY ?
				  VNPU_AT_ERR_OOM : VNPU_AT_ERR_DEVICE,
				  "npu: allocating %zu bytes: %s (%s)", nbytes,
				  vnpu_error_string(e), vnpu_last_error_detail());
		return NULL;
	}
	return ptr;
}

struct vnpu_at_storage *vnpu_storage_new(size_t nbytes,
					 struct vnpu_at_device dev)
{
	struct vnpu_at_storage *s = calloc(1, sizeof(*s));

	if (!s)
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "out of host memory");
	s->refcount = 1;
	s->device = dev;
	s->owns_data = true;
	s->npu.npu_format = VNPU_FORMAT_ND;
	s->npu.origin_format = VNPU_FORMAT_ND;
	if (dev.type == VNPU_AT_NPU) {
		if (!vnpu_npu_runtime_init()) {
			free(s);
			return NULL;
		}
		int cur = vnpu_npu_current_device();

		/* memory of npu:N is allocated with N current (an index that
		 * names no device fails here, before any tensor exists) */
		if (dev.index != cur && !vnpu_at_npu_set_device(dev.index)) {
			free(s);
			return NULL;
		}
		s->stream = dev.index == cur ? vnpu_at_npu_stream() : NULL;
		s->data = npu_alloc(nbytes, dev.index, &s->stream);
		if (dev.index != cur)
			vnpu_at_npu_set_device(cur);
		if (!s->data) {
			free(s);
			return NULL;
		}
		s->nbytes = nbytes;
		return s;
	}
	/* 64-byte aligned, at least one line so that data is never NULL */
	s->data = aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
	if (!s->data) {
		free(s);
		return vnpu_at_error_set(VNPU_AT_ERR_OOM,
					 "out of host memory (%zu bytes)", nbytes);
	}
	s->nbytes = nbytes;
	return s;
}

bool vnpu_at_storage_record_stream(struct vnpu_at_storage *s, void *stream)
{
	bool ok = true;

	if (!s || s->device.type != VNPU_AT_NPU) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "record_stream: expected an npu storage");
		return false;
	}
	if (!s->owns_data || stream == s->stream)
		return true;
	pthread_mutex_lock(&used_streams_lock);
	for (unsigned i = 0; i < s->n_used_streams; i++)
		if (s->used_streams[i] == stream)
			goto out;
	void **grown = realloc(s->used_streams,
			       (s->n_used_streams + 1) * sizeof(*grown));
	if (!grown) {
		ok = false;
		goto out;
	}
	grown[s->n_used_streams++] = stream;
	s->used_streams = grown;
out:
	pthread_mutex_unlock(&used_streams_lock);
	if (!ok)
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "out of host memory");
	return ok;
}

/* Orders the block's own stream after the work queued so far on the other
 * streams that used it, so that freeing it on its stream is safe. false
 * when that cannot be arranged. */
static bool order_after_used_streams(struct vnpu_at_storage *s)
{
	bool ok = true;

	for (unsigned i = 0; i < s->n_used_streams && ok; i++) {
		vnpu_event_t e;

		ok = vnpu_event_create(&e, VNPU_EVENT_DISABLE_TIMING) ==
		     VNPU_SUCCESS;
		if (!ok)
			break;
		ok = vnpu_event_record(e, s->used_streams[i]) == VNPU_SUCCESS &&
		     vnpu_stream_wait_event(s->stream, e) == VNPU_SUCCESS;
		vnpu_event_destroy(e);
	}
	free(s->used_streams);
	s->used_streams = NULL;
	s->n_used_streams = 0;
	return ok;
}

/* Gives an npu storage's memory back in its stream's order; when that
 * cannot be (its stream destroyed, other streams' work not orderable
 * before it), vnpu_free waits for the device first. In a forked child
 * both refuse and the memory, the parent's, is left. */
static void npu_release(struct vnpu_at_storage *s)
{
	int index = s->device.index, old;
	bool ordered = !s->n_used_streams || order_after_used_streams(s);

	if (enter_device(index, &old) != VNPU_SUCCESS)
		return;
	if (!ordered || vnpu_free_async(s->data, s->stream) != VNPU_SUCCESS)
		vnpu_free(s->data);
	leave_device(index, old);
}

void vnpu_storage_release(struct vnpu_at_storage *s)
{
	if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	vnpu_at_release(s->format_cache);
	if (s->owns_data) {
		if (s->device.type == VNPU_AT_NPU)
			npu_release(s);
		else
			free(s->data);
	}
	free(s);
}

struct vnpu_at_storage *vnpu_at_npu_storage_new(size_t nbytes)
{
	return vnpu_storage_new(nbytes, vnpu_npu_device());
}

struct vnpu_at_storage *vnpu_at_npu_storage_borrow(void *data, size_t nbytes,
						   int device)
{
	struct vnpu_at_storage *s;

	if (!data || device < 0 || device > INT8_MAX)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "npu: borrowing device memory at %p of device %d",
					 data, device);
	s = calloc(1, sizeof(*s));
	if (!s)
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "out of host memory");
	s->refcount = 1;
	s->device = VNPU_AT_DEV_NPU((int8_t)device);
	s->data = data;
	s->nbytes = nbytes;
	s->owns_data = false;
	s->npu.npu_format = VNPU_FORMAT_ND;
	s->npu.origin_format = VNPU_FORMAT_ND;
	return s;
}

struct vnpu_at_storage *vnpu_at_storage_retain(struct vnpu_at_storage *s)
{
	if (s)
		__atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
	return s;
}

void vnpu_at_storage_release(struct vnpu_at_storage *s)
{
	vnpu_storage_release(s);
}

struct vnpu_at_tensor *vnpu_at_tensor_on(struct vnpu_at_storage *s,
					 enum vnpu_at_dtype dtype,
					 uint32_t ndim, const int64_t *sizes,
					 const int64_t *strides,
					 int64_t offset)
{
	size_t span, start, end;

	if (!s || ndim > VNPU_AT_MAX_DIMS || !vnpu_at_dtype_valid(dtype) ||
	    offset < 0 || (ndim && (!sizes || !strides)))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "tensor_on: invalid storage, dtype, rank or offset");
	/* a front end's geometry: every product and sum checked */
	if (!vnpu_strided_span(ndim, sizes, strides, vnpu_at_dtype_size(dtype),
			       &span) ||
	    (span && (__builtin_mul_overflow((uint64_t)offset,
					     vnpu_at_dtype_size(dtype), &start) ||
		      __builtin_add_overflow(start, span, &end) ||
		      end > s->nbytes)))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "tensor_on: the geometry does not fit in a storage of %zu bytes",
					 s->nbytes);
	return vnpu_tensor_on_storage(vnpu_at_storage_retain(s), ndim, sizes,
				      strides, offset, dtype);
}
