// SPDX-License-Identifier: MIT
/* Refcounted storages: host memory for the CPU, device memory for npu
 * through a caching allocator over vnpu_malloc. The cache reuses a freed
 * block only for allocations on the stream it was allocated on (stream
 * order makes that safe, as in PyTorch's caching allocator), and avoids
 * vnpu_free's device wait. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch_internal.h"
#include "vnpu_frontend.h"
#include "vnpu_runtime.h"

#define MIN_CLASS 9	/* 512 B */
#define MAX_CLASS 34	/* 16 GiB */

struct cached_block {
	struct cached_block *next;
	void *ptr;
	int device;
	int cls;		/* size class: the block holds 1 << cls bytes */
	void *stream;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cached_block *free_lists[MAX_CLASS + 1];

/* Per device: bytes in live storages and in the cache (block sizes). */
#define STATS_DEVICES 64
static _Atomic uint64_t live_bytes[STATS_DEVICES];
static _Atomic uint64_t peak_bytes[STATS_DEVICES];
static _Atomic uint64_t cached_bytes[STATS_DEVICES];

static void stats_add(_Atomic uint64_t *v, int device, int64_t delta)
{
	if (device >= 0 && device < STATS_DEVICES)
		atomic_fetch_add(&v[device], (uint64_t)delta);
}

static void note_live(int device, int64_t delta)
{
	uint64_t now, peak;

	if (device < 0 || device >= STATS_DEVICES)
		return;
	now = atomic_fetch_add(&live_bytes[device], (uint64_t)delta) +
	      (uint64_t)delta;
	peak = atomic_load(&peak_bytes[device]);
	while (now > peak &&
	       !atomic_compare_exchange_weak(&peak_bytes[device], &peak, now))
		;
}

bool vnpu_at_npu_memory_stats(int device,
			      struct vnpu_at_npu_memory_stats *stats)
{
	if (device < 0 || device >= STATS_DEVICES || !stats) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "npu: no memory statistics for device %d",
				  device);
		return false;
	}
	stats->allocated = atomic_load(&live_bytes[device]);
	stats->peak = atomic_load(&peak_bytes[device]);
	stats->reserved = stats->allocated + atomic_load(&cached_bytes[device]);
	return true;
}

void vnpu_at_npu_reset_peak(int device)
{
	if (device >= 0 && device < STATS_DEVICES)
		atomic_store(&peak_bytes[device], atomic_load(&live_bytes[device]));
}

/* fork(): the child may release storages it inherited (its Python frees
 * them), which takes the cache's lock; another thread of the parent may
 * have held it at the fork. The lock is taken around fork so that the
 * child's copy is free. (The child cannot use the device: libvnpurt
 * refuses, VNPU_ERROR_FORKED.) */
static void cache_lock_for_fork(void)
{
	pthread_mutex_lock(&cache_lock);
}

static void cache_unlock_after_fork(void)
{
	pthread_mutex_unlock(&cache_lock);
}

static pthread_once_t fork_guard_once = PTHREAD_ONCE_INIT;

static void fork_guard(void)
{
	pthread_atfork(cache_lock_for_fork, cache_unlock_after_fork,
		       cache_unlock_after_fork);
}

static int size_class(size_t n)
{
	int c = MIN_CLASS;

	while (c <= MAX_CLASS && ((size_t)1 << c) < n)
		c++;
	return c;
}

static void *npu_alloc(size_t nbytes, int device, void *stream, size_t *got)
{
	int c = size_class(nbytes ? nbytes : 1);
	struct cached_block *b;
	void *ptr = NULL;
	vnpu_error_t e;

	if (c > MAX_CLASS) {
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "npu: %zu bytes is too large",
				  nbytes);
		return NULL;
	}
	pthread_once(&fork_guard_once, fork_guard);
	pthread_mutex_lock(&cache_lock);
	for (struct cached_block **pp = &free_lists[c]; *pp; pp = &(*pp)->next) {
		if ((*pp)->device == device && (*pp)->stream == stream) {
			b = *pp;
			*pp = b->next;
			ptr = b->ptr;
			free(b);
			break;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	*got = (size_t)1 << c;
	if (ptr) {
		stats_add(cached_bytes, device, -(int64_t)*got);
		return ptr;
	}
	e = vnpu_malloc(&ptr, *got);
	if (e == VNPU_ERROR_OUT_OF_MEMORY) {
		vnpu_at_npu_empty_cache();
		e = vnpu_malloc(&ptr, *got);
	}
	if (e != VNPU_SUCCESS) {
		vnpu_at_error_set(e == VNPU_ERROR_OUT_OF_MEMORY ?
				  VNPU_AT_ERR_OOM : VNPU_AT_ERR_DEVICE,
				  "npu: allocating %zu bytes: %s", *got,
				  vnpu_error_string(e));
		return NULL;
	}
	return ptr;
}

static void npu_cache_put(void *ptr, size_t nbytes, int device, void *stream)
{
	struct cached_block *b = malloc(sizeof(*b));
	int c = size_class(nbytes);

	if (!b) {
		vnpu_free(ptr);
		return;
	}
	stats_add(cached_bytes, device, (int64_t)nbytes);
	b->ptr = ptr;
	b->cls = c;
	b->device = device;
	b->stream = stream;
	pthread_mutex_lock(&cache_lock);
	b->next = free_lists[c];
	free_lists[c] = b;
	pthread_mutex_unlock(&cache_lock);
}

void vnpu_at_npu_empty_cache(void)
{
	struct cached_block *all = NULL;

	pthread_mutex_lock(&cache_lock);
	for (int c = 0; c <= MAX_CLASS; c++) {
		while (free_lists[c]) {
			struct cached_block *b = free_lists[c];

			free_lists[c] = b->next;
			b->next = all;
			all = b;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	while (all) {
		struct cached_block *b = all;

		all = b->next;
		stats_add(cached_bytes, b->device,
			  -((int64_t)1 << b->cls));
		vnpu_free(b->ptr);
		free(b);
	}
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
		s->data = npu_alloc(nbytes, dev.index, s->stream, &s->nbytes);
		if (dev.index != cur)
			vnpu_at_npu_set_device(cur);
		if (!s->data) {
			free(s);
			return NULL;
		}
		note_live(dev.index, (int64_t)s->nbytes);
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
	pthread_mutex_lock(&cache_lock);
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
	pthread_mutex_unlock(&cache_lock);
	if (!ok)
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "out of host memory");
	return ok;
}

/* Orders the block's own stream after the work queued so far on the other
 * streams that used it, so that reusing it on its stream is safe. false
 * when that cannot be arranged: the block is then freed, not cached. */
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

void vnpu_storage_release(struct vnpu_at_storage *s)
{
	if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	vnpu_at_release(s->format_cache);
	if (s->owns_data) {
		if (s->device.type == VNPU_AT_NPU) {
			size_t c = (size_t)1 << size_class(s->nbytes ? s->nbytes : 1);

			note_live(s->device.index, -(int64_t)c);
			if (s->n_used_streams && !order_after_used_streams(s))
				vnpu_free(s->data);	/* waits for the device */
			else
				npu_cache_put(s->data, c, s->device.index,
					      s->stream);
		} else {
			free(s->data);
		}
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
