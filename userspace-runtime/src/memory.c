// SPDX-License-Identifier: MIT
/*
 * Device memory and pinned host memory: the maps of live allocations every
 * pointer is validated against, and the caching sub-allocator. Blocks up to
 * 1 MiB come in power-of-two classes (256 B .. 1 MiB) carved from 2 MiB
 * chunks and are cached when freed; larger ones are BOs of their own,
 * returned to the device on free.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MIN_BLOCK 256u

void rt_memory_init(struct rt_device *d)
{
	memset(&d->dmap, 0, sizeof(d->dmap));
	memset(&d->hmap, 0, sizeof(d->hmap));
}

void rt_memory_fini(struct rt_device *d)
{
	for (size_t i = 0; i < d->dmap.n; i++)
		if (d->dmap.a[i].cls < 0)
			d->be->bo_free(d->bdev, &d->dmap.a[i].bo);
	for (size_t i = 0; i < d->hmap.n; i++)
		d->be->bo_free(d->bdev, &d->hmap.a[i].bo);
	while (d->chunks) {
		struct rt_chunk *c = d->chunks;

		d->chunks = c->next;
		d->be->bo_free(d->bdev, &c->bo);
		free(c);
	}
	for (int i = 0; i < RT_CACHE_CLASSES; i++)
		free(d->class_free[i]);
	free(d->dmap.a);
	free(d->hmap.a);
}

/* Index of the first entry with key > k. */
static size_t upper(const struct rt_amap *m, uint64_t k)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->a[mid].key <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The allocation containing address k, or NULL. */
static struct rt_alloc *amap_find(const struct rt_amap *m, uint64_t k)
{
	size_t i = upper(m, k);

	if (!i)
		return NULL;
	i--;
	return k - m->a[i].key < m->a[i].size ? &m->a[i] : NULL;
}

static bool amap_insert(struct rt_amap *m, const struct rt_alloc *a)
{
	size_t i;

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct rt_alloc *n = realloc(m->a, cap * sizeof(*n));

		if (!n)
			return false;
		m->a = n;
		m->cap = cap;
	}
	i = upper(m, a->key);
	memmove(&m->a[i + 1], &m->a[i], (m->n - i) * sizeof(*a));
	m->a[i] = *a;
	m->n++;
	return true;
}

static void amap_remove(struct rt_amap *m, struct rt_alloc *a)
{
	size_t i = (size_t)(a - m->a);

	memmove(&m->a[i], &m->a[i + 1], (m->n - i - 1) * sizeof(*a));
	m->n--;
}

static int size_class(uint64_t size)
{
	int c = 0;

	while (((uint64_t)MIN_BLOCK << c) < size)
		c++;
	return c < RT_CACHE_CLASSES ? c : -1;
}

/*
 * Room in class c's free list for blocks more entries: every block of the
 * class's chunks has room from the chunk's creation on, so a free never
 * needs memory (mem_lock held).
 */
static bool reserve_free(struct rt_device *d, int c, size_t blocks)
{
	size_t need = d->class_nfree[c] + blocks, cap = d->class_cap[c];
	uint64_t *n;

	for (struct rt_chunk *k = d->chunks; k; k = k->next)
		if (k->cls == c)
			need += k->used;
	if (need <= cap)
		return true;
	while (cap < need)
		cap = cap ? cap * 2 : 64;
	n = realloc(d->class_free[c], cap * sizeof(*n));
	if (!n)
		return false;
	d->class_free[c] = n;
	d->class_cap[c] = cap;
	return true;
}

/* reserve_free made room. */
static void push_free(struct rt_device *d, int c, uint64_t va)
{
	d->class_free[c][d->class_nfree[c]++] = va;
}

static struct rt_chunk *chunk_of(struct rt_device *d, uint64_t va)
{
	for (struct rt_chunk *c = d->chunks; c; c = c->next)
		if (va - c->bo.va < c->bo.size)
			return c;
	return NULL;
}

/* Whether a chunk has no block in use (mem_lock held). */
static bool cache_releasable(const struct rt_device *d)
{
	for (const struct rt_chunk *c = d->chunks; c; c = c->next)
		if (!c->used)
			return true;
	return false;
}

/* Releases chunks with no block in use, of every class (mem_lock held). */
static void empty_cache(struct rt_device *d)
{
	struct rt_chunk **pp = &d->chunks;

	while (*pp) {
		struct rt_chunk *c = *pp;
		size_t k = 0;
		uint64_t block = (uint64_t)MIN_BLOCK << c->cls;

		if (c->used) {
			pp = &c->next;
			continue;
		}
		for (size_t i = 0; i < d->class_nfree[c->cls]; i++) {
			uint64_t va = d->class_free[c->cls][i];

			if (va - c->bo.va >= c->bo.size)
				d->class_free[c->cls][k++] = va;
		}
		d->class_nfree[c->cls] = k;
		d->stats.cached -= block * c->blocks;
		d->stats.reserved -= c->bo.size;
		*pp = c->next;
		d->be->bo_free(d->bdev, &c->bo);
		free(c);
	}
}

/*
 * Gives every cached chunk with no block in use back to the device:
 * vnpu_mem_empty_cache(), and vnpu_malloc() before it retries an
 * allocation refused for lack of memory. Only d's: the cache, like the
 * memory and the driver's per-user share of it, is per device. The
 * device's work is waited for first (mem_lock not held: hwq locks come
 * before it): the drm driver keeps a closed BO's memory, charged to the
 * user, until the jobs its context had submitted end. Returns whether
 * anything was released.
 */
static bool release_cache(struct rt_device *d)
{
	bool any;

	pthread_mutex_lock(&d->mem_lock);
	any = cache_releasable(d);
	pthread_mutex_unlock(&d->mem_lock);
	if (!any)
		return false;
	rt_device_wait_all(d);
	pthread_mutex_lock(&d->mem_lock);
	any = cache_releasable(d);
	empty_cache(d);
	pthread_mutex_unlock(&d->mem_lock);
	return any;
}

/* A chunk of class cls, its blocks cached (mem_lock held). A failure sets
 * the detail. */
static vnpu_error_t new_chunk(struct rt_device *d, int cls)
{
	struct rt_chunk *c = calloc(1, sizeof(*c));
	uint64_t block = (uint64_t)MIN_BLOCK << cls;
	vnpu_error_t err;

	if (!c || !reserve_free(d, cls, RT_CHUNK_BYTES / block)) {
		free(c);
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "host memory exhausted: no room for the "
			       "cache's lists");
	}
	err = d->be->bo_create(d->bdev, RT_CHUNK_BYTES, VNPURT_DOMAIN_VRAM,
			       &c->bo);
	if (err) {
		free(c);
		return rt_fail_prefix(err, "a new %u-byte chunk of the cache",
				      RT_CHUNK_BYTES);
	}
	c->cls = cls;
	c->blocks = (uint32_t)(RT_CHUNK_BYTES / block);
	/* Lowest addresses are handed out first. */
	for (uint32_t i = c->blocks; i-- > 0;)
		push_free(d, cls, c->bo.va + i * block);
	c->next = d->chunks;
	d->chunks = c;
	d->stats.cached += block * c->blocks;
	d->stats.reserved += c->bo.size;
	return VNPU_SUCCESS;
}

/* Allocates a->size bytes into *a: a cached block, or a BO of its own
 * (mem_lock held). A failure sets the detail. */
static vnpu_error_t alloc_locked(struct rt_device *d, struct rt_alloc *a)
{
	vnpu_error_t err = VNPU_SUCCESS;

	if (a->cls >= 0) {
		if (!d->class_nfree[a->cls])
			err = new_chunk(d, a->cls);
		if (err)
			return err;
		a->va = d->class_free[a->cls][--d->class_nfree[a->cls]];
		a->block = (uint64_t)MIN_BLOCK << a->cls;
		a->chunk = chunk_of(d, a->va);
		a->chunk->used++;
		d->stats.cached -= a->block;
	} else {
		err = d->be->bo_create(d->bdev, a->size, VNPURT_DOMAIN_VRAM,
				       &a->bo);
		if (err)
			return err;
		a->va = a->bo.va;
		a->block = a->bo.size;
		d->stats.reserved += a->bo.size;
	}
	a->key = a->va;
	if (!amap_insert(&d->dmap, a)) {
		/* Undo: back to the cache or the device. */
		if (a->cls >= 0) {
			d->class_nfree[a->cls]++;
			a->chunk->used--;
			d->stats.cached += a->block;
		} else {
			d->stats.reserved -= a->bo.size;
			d->be->bo_free(d->bdev, &a->bo);
		}
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "host memory exhausted: no room to list the "
			       "allocation");
	}
	d->stats.in_use += a->size;
	if (d->stats.in_use > d->stats.peak)
		d->stats.peak = d->stats.in_use;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_malloc(void **devptr, size_t size)
{
	vnpu_error_t err = rt_ready();
	struct rt_device *d;
	struct rt_alloc a;
	bool released = false;

	if (err)
		return err;
	if (!devptr)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "devptr is NULL");
	if (!size)
		return rt_fail(VNPU_ERROR_INVALID_VALUE, "size 0");
	d = rt_current_device();
	err = rt_device_check(d, "device allocation of %zu bytes", size);
	if (err)
		return err;
	if (size > d->info.vram_size)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "device allocation of %zu bytes: more than the "
			       "device's %" PRIu64 " bytes of memory",
			       size, d->info.vram_size);
	memset(&a, 0, sizeof(a));
	a.size = size;
	a.cls = size_class(size);
	pthread_mutex_lock(&d->mem_lock);
	err = alloc_locked(d, &a);
	pthread_mutex_unlock(&d->mem_lock);
	/* As CUDA's caching allocators do: what the cache holds goes back
	 * to the device, and the allocation is tried once more. */
	if (err == VNPU_ERROR_OUT_OF_MEMORY && release_cache(d)) {
		released = true;
		pthread_mutex_lock(&d->mem_lock);
		err = alloc_locked(d, &a);
		pthread_mutex_unlock(&d->mem_lock);
	}
	if (err)
		return rt_fail_prefix(err, "device allocation of %zu bytes%s",
				      size,
				      released ? " (the cache emptied)" : "");
	*devptr = (void *)(uintptr_t)a.va;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_free(void *devptr)
{
	vnpu_error_t err = rt_ready();
	uint64_t k = (uintptr_t)devptr;
	struct rt_device *d;
	struct rt_alloc *a;
	bool known;

	if (err || !devptr)
		return err;
	d = rt_current_device();
	pthread_mutex_lock(&d->mem_lock);
	a = amap_find(&d->dmap, k);
	known = a && a->key == k;
	pthread_mutex_unlock(&d->mem_lock);
	if (!known)
		return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
			       "free of %p: %s", devptr,
			       a ? "inside an allocation, not its start"
				 : "not a live device allocation (freed "
				   "already, or never allocated)");
	/* The device may still use it. */
	rt_device_wait_all(d);
	pthread_mutex_lock(&d->mem_lock);
	a = amap_find(&d->dmap, k);
	if (!a || a->key != k) { /* another thread freed it meanwhile */
		pthread_mutex_unlock(&d->mem_lock);
		return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
			       "free of %p: freed already", devptr);
	}
	d->stats.in_use -= a->size;
	if (a->cls >= 0) {
		push_free(d, a->cls, a->va);
		a->chunk->used--;
		d->stats.cached += a->block;
	} else {
		d->stats.reserved -= a->bo.size;
		d->be->bo_free(d->bdev, &a->bo);
	}
	amap_remove(&d->dmap, a);
	pthread_mutex_unlock(&d->mem_lock);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_mem_stats(struct vnpu_mem_stats *stats)
{
	vnpu_error_t err = rt_ready();
	struct rt_device *d;

	if (err)
		return err;
	if (!stats)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "stats is NULL");
	d = rt_current_device();
	pthread_mutex_lock(&d->mem_lock);
	*stats = d->stats;
	pthread_mutex_unlock(&d->mem_lock);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_mem_empty_cache(void)
{
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	release_cache(rt_current_device());
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_host_malloc(void **ptr, size_t size)
{
	vnpu_error_t err = rt_ready();
	struct rt_device *d;
	struct rt_alloc a;

	if (err)
		return err;
	if (!ptr)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "ptr is NULL");
	if (!size)
		return rt_fail(VNPU_ERROR_INVALID_VALUE, "size 0");
	d = rt_current_device();
	err = rt_device_check(d, "pinned host allocation of %zu bytes", size);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	/* Nothing to release first: pinned blocks are not cached. */
	err = d->be->bo_create(d->bdev, size, VNPURT_DOMAIN_HOST, &a.bo);
	if (err)
		return rt_fail_prefix(
			err, "pinned host allocation of %zu bytes", size);
	a.key = (uintptr_t)a.bo.cpu;
	a.size = size;
	a.va = a.bo.va;
	a.block = a.bo.size;
	a.cls = -1;
	pthread_mutex_lock(&d->mem_lock);
	if (!amap_insert(&d->hmap, &a)) {
		pthread_mutex_unlock(&d->mem_lock);
		d->be->bo_free(d->bdev, &a.bo);
		return rt_fail(
			VNPU_ERROR_OUT_OF_MEMORY,
			"pinned host allocation of %zu bytes: host memory "
			"exhausted: no room to list it",
			size);
	}
	pthread_mutex_unlock(&d->mem_lock);
	*ptr = a.bo.cpu;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_host_free(void *ptr)
{
	vnpu_error_t err = rt_ready();
	uint64_t k = (uintptr_t)ptr;
	struct rt_device *d;
	struct rt_alloc *a;
	struct vnpurt_bo bo;

	if (err || !ptr)
		return err;
	d = rt_current_device();
	pthread_mutex_lock(&d->mem_lock);
	a = amap_find(&d->hmap, k);
	if (!a || a->key != k) {
		pthread_mutex_unlock(&d->mem_lock);
		return rt_fail(VNPU_ERROR_INVALID_HOST_POINTER,
			       "host free of %p: not the start of a live "
			       "vnpu_host_malloc() allocation",
			       ptr);
	}
	pthread_mutex_unlock(&d->mem_lock);
	rt_device_wait_all(d);
	pthread_mutex_lock(&d->mem_lock);
	a = amap_find(&d->hmap, k);
	if (!a || a->key != k) {
		pthread_mutex_unlock(&d->mem_lock);
		return rt_fail(VNPU_ERROR_INVALID_HOST_POINTER,
			       "host free of %p: freed already", ptr);
	}
	bo = a->bo;
	amap_remove(&d->hmap, a);
	pthread_mutex_unlock(&d->mem_lock);
	d->be->bo_free(d->bdev, &bo);
	return VNPU_SUCCESS;
}

enum rt_ptr_kind rt_lookup(struct rt_device *d, const void *ptr,
			   uint64_t *va, uint64_t *avail)
{
	uint64_t k = (uintptr_t)ptr;
	enum rt_ptr_kind kind = RT_PTR_DEVICE;
	struct rt_alloc *a;

	pthread_mutex_lock(&d->mem_lock);
	a = amap_find(&d->dmap, k);
	if (!a) {
		a = amap_find(&d->hmap, k);
		kind = RT_PTR_PINNED;
	}
	if (a) {
		*va = a->va + (k - a->key);
		*avail = a->size - (k - a->key);
	} else {
		kind = RT_PTR_HOST;
	}
	pthread_mutex_unlock(&d->mem_lock);
	return kind;
}

vnpu_error_t rt_resolve(struct rt_device *d, const void *ptr, uint64_t size,
			uint64_t *va, bool *host)
{
	uint64_t k = (uintptr_t)ptr;
	struct rt_alloc *a;
	bool is_host = false;

	pthread_mutex_lock(&d->mem_lock);
	a = amap_find(&d->dmap, k);
	if (!a) {
		a = amap_find(&d->hmap, k);
		is_host = true;
	}
	if (!a) {
		pthread_mutex_unlock(&d->mem_lock);
		return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
			       "%p is not inside a live device or pinned "
			       "allocation",
			       ptr);
	}
	if (size > a->size - (k - a->key)) {
		uint64_t avail = a->size - (k - a->key);

		pthread_mutex_unlock(&d->mem_lock);
		return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER,
			       "%p + %" PRIu64 " bytes runs past its "
			       "allocation (%" PRIu64 " bytes left)",
			       ptr, size, avail);
	}
	*va = a->va + (k - a->key);
	if (host)
		*host = is_host;
	pthread_mutex_unlock(&d->mem_lock);
	return VNPU_SUCCESS;
}
