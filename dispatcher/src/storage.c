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
#include "vnpu_runtime.h"

#define MIN_CLASS 9	/* 512 B */
#define MAX_CLASS 34	/* 16 GiB */

struct cached_block {
	struct cached_block *next;
	void *ptr;
	int device;
	void *stream;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cached_block *free_lists[MAX_CLASS + 1];
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static vnpu_error_t rt_status = VNPU_ERROR_NOT_INITIALIZED;

_Thread_local void *vnpu_npu_cur_stream;
_Thread_local int vnpu_npu_cur_device;

static void rt_init(void)
{
	rt_status = vnpu_init();
}

bool vnpu_npu_runtime_init(void)
{
	pthread_once(&rt_once, rt_init);
	if (rt_status != VNPU_SUCCESS) {
		vnpu_at_error_set(VNPU_AT_ERR_DEVICE,
				  "npu: the runtime failed to start: %s (%s)",
				  vnpu_error_string(rt_status),
				  vnpu_last_error_detail());
		return false;
	}
	return true;
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
	if (ptr)
		return ptr;
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
	b->ptr = ptr;
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
		s->stream = vnpu_npu_cur_stream;
		s->data = npu_alloc(nbytes, dev.index, s->stream, &s->nbytes);
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

void vnpu_storage_release(struct vnpu_at_storage *s)
{
	if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	vnpu_at_release(s->format_cache);
	if (s->owns_data) {
		if (s->device.type == VNPU_AT_NPU) {
			size_t c = (size_t)1 << size_class(s->nbytes ? s->nbytes : 1);

			npu_cache_put(s->data, c, s->device.index, s->stream);
		} else {
			free(s->data);
		}
	}
	free(s);
}
