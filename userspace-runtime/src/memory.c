// SPDX-License-Identifier: MIT
/*
 * Device memory and pinned host memory: the maps of live allocations every
 * pointer is validated against, and the caching sub-allocator. Blocks up to
 * 1 MiB come in power-of-two classes (256 B .. 1 MiB) carved from 2 MiB
 * chunks and are cached when freed; larger ones are BOs of their own,
 * returned to the device on free. vnpu_free_async gives a block back in
 * stream order, as cudaFreeAsync: it stays pending until the freeing
 * stream's work before the free has retired, and meanwhile serves only
 * allocations whose work runs after that (the same hardware queue). Large
 * blocks freed so are kept for reuse until the cache is emptied.
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
	for (size_t i = 0; i < d->npending; i++)
		if (d->pending[i].a.cls < 0)
			d->be->bo_free(d->bdev, &d->pending[i].a.bo);
	free(d->pending);
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

/* Room for one more entry. */
static bool amap_reserve(struct rt_amap *m)
{
	return rt_array_reserve((void **)&m->a, &m->cap, m->n + 1,
				sizeof(*m->a));
}

/* amap_reserve made room. */
static void amap_insert(struct rt_amap *m, const struct rt_alloc *a)
{
	size_t i = upper(m, a->key);

	memmove(&m->a[i + 1], &m->a[i], (m->n - i) * sizeof(*a));
	m->a[i] = *a;
	m->n++;
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
	size_t need = d->class_nfree[c] + blocks;

	for (struct rt_chunk *k = d->chunks; k; k = k->next)
		if (k->cls == c)
			need += k->used;
	return rt_array_reserve((void **)&d->class_free[c], &d->class_cap[c],
				need, sizeof(*d->class_free[c]));
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

/* Whether the fence of a pending block has passed. */
static bool pending_retired(const struct rt_pending *p)
{
	return __atomic_load_n(&p->q->done, __ATOMIC_ACQUIRE) >= p->seq;
}

/* A pending block becomes free: a class block goes back to its class's
 * free list, a large one to the device (mem_lock held). */
static void pending_release(struct rt_device *d, struct rt_alloc *a)
{
	if (a->cls >= 0) {
		push_free(d, a->cls, a->va);
		a->chunk->used--;
	} else {
		d->stats.cached -= a->bo.size;
		d->stats.reserved -= a->bo.size;
		d->be->bo_free(d->bdev, &a->bo);
	}
}

/* Takes pending block i off the list, which stays in the order of the
 * frees (mem_lock held). */
static void pending_remove(struct rt_device *d, size_t i)
{
	memmove(&d->pending[i], &d->pending[i + 1],
		(d->npending - i - 1) * sizeof(d->pending[0]));
	d->npending--;
}

/* Retired class blocks back to their free lists, the latest freed on
 * top; with large, retired large blocks back to the device too (mem_lock
 * held). */
static void pending_collect(struct rt_device *d, bool large)
{
	size_t kept = 0;

	for (size_t i = 0; i < d->npending; i++) {
		struct rt_pending *p = &d->pending[i];

		if ((large || p->a.cls >= 0) && pending_retired(p))
			pending_release(d, &p->a);
		else
			d->pending[kept++] = *p;
	}
	d->npending = kept;
}

/* Whether a chunk has no block in use, or a block is pending (mem_lock
 * held). */
static bool cache_releasable(const struct rt_device *d)
{
	if (d->npending)
		return true;
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
 * Gives every cached chunk with no block in use, and every block
 * vnpu_free_async gave back, to the device:
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
	pending_collect(d, true);
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

/*
 * A pending block that may serve a->size bytes for work on hwq q (NULL:
 * any queue, as vnpu_malloc's memory): its fence passed, or it was freed
 * on q. A class block of a->cls; a large BO from a->size up to twice it,
 * the smallest (mem_lock held). -1 when none.
 */
static ptrdiff_t pending_find(const struct rt_device *d,
			      const struct rt_alloc *a, const struct rt_hwq *q)
{
	ptrdiff_t best = -1;

	/* The latest freed first: what its queue touched last. */
	for (size_t i = d->npending; i-- > 0;) {
		const struct rt_pending *p = &d->pending[i];

		if (p->a.cls != a->cls || (p->q != q && !pending_retired(p)))
			continue;
		if (a->cls >= 0)
			return (ptrdiff_t)i;
		if (p->a.bo.size >= a->size && p->a.bo.size / 2 <= a->size &&
		    (best < 0 || p->a.bo.size < d->pending[best].a.bo.size))
			best = (ptrdiff_t)i;
	}
	return best;
}

/*
 * Allocates a->size bytes into *a for work on hwq q (NULL: any): a
 * cached or pending block, or a BO of its own (mem_lock held). A failure
 * sets the detail. Before the device is asked for more, pending blocks
 * whose work may have run since are looked at: without `refreshed`, that
 * is VNPU_ERROR_NOT_READY (no error set) for the caller to refresh their
 * queues' progress first; the common case, a block its own stream gave
 * back, needs none of that.
 */
static vnpu_error_t alloc_locked(struct rt_device *d, struct rt_alloc *a,
				 const struct rt_hwq *q, bool refreshed)
{
	vnpu_error_t err = VNPU_SUCCESS;
	ptrdiff_t p;

	/* Listed before a block is taken, so that nothing needs undoing. */
	if (!amap_reserve(&d->dmap))
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "host memory exhausted: no room to list the "
			       "allocation");
	if (refreshed)
		pending_collect(d, false);
	/* A block the stream's own queue gave back first: its last user
	 * ran just before, as a caching allocator's per-stream pool. */
	p = pending_find(d, a, q);
	if (p < 0 && !refreshed && d->npending &&
	    (a->cls < 0 || !d->class_nfree[a->cls]))
		return VNPU_ERROR_NOT_READY;
	if (p >= 0) {
		/* Still counted as used by its chunk, or reserved. */
		struct rt_alloc *from = &d->pending[p].a;

		a->va = from->va;
		a->block = from->block;
		a->bo = from->bo;
		a->chunk = from->chunk;
		d->stats.cached -= a->block;
		pending_remove(d, (size_t)p);
	} else if (a->cls >= 0) {
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
	amap_insert(&d->dmap, a);
	d->stats.in_use += a->size;
	if (d->stats.in_use > d->stats.peak)
		d->stats.peak = d->stats.in_use;
	return VNPU_SUCCESS;
}

/* Retirements the queues of pending blocks have reached are seen:
 * their done counts are brought up to date (no lock held: hwq locks come
 * before mem_lock). */
static void pending_refresh(struct rt_device *d)
{
	struct rt_hwq *qs[VNPU_MAX_QUEUES];
	unsigned n = 0;

	pthread_mutex_lock(&d->mem_lock);
	for (size_t i = 0; i < d->npending && n < VNPU_MAX_QUEUES; i++) {
		unsigned j = 0;

		while (j < n && qs[j] != d->pending[i].q)
			j++;
		if (j == n && !pending_retired(&d->pending[i]))
			qs[n++] = d->pending[i].q;
	}
	pthread_mutex_unlock(&d->mem_lock);
	for (unsigned i = 0; i < n; i++)
		rt_hwq_drain(qs[i]);
}

/* size bytes of d's memory for work on hwq q (NULL: any queue). */
static vnpu_error_t device_alloc(struct rt_device *d, size_t size,
				 const struct rt_hwq *q, void **devptr)
{
	vnpu_error_t err;
	struct rt_alloc a;
	bool released = false;

	if (!devptr)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "devptr is NULL");
	if (!size)
		return rt_fail(VNPU_ERROR_INVALID_VALUE, "size 0");
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
	err = alloc_locked(d, &a, q, false);
	pthread_mutex_unlock(&d->mem_lock);
	if (err == VNPU_ERROR_NOT_READY) {
		pending_refresh(d);
		pthread_mutex_lock(&d->mem_lock);
		err = alloc_locked(d, &a, q, true);
		pthread_mutex_unlock(&d->mem_lock);
	}
	/* As CUDA's caching allocators do: what the cache holds goes back
	 * to the device, and the allocation is tried once more. */
	if (err == VNPU_ERROR_OUT_OF_MEMORY && release_cache(d)) {
		released = true;
		pthread_mutex_lock(&d->mem_lock);
		err = alloc_locked(d, &a, q, true);
		pthread_mutex_unlock(&d->mem_lock);
	}
	if (err)
		return rt_fail_prefix(err, "device allocation of %zu bytes%s",
				      size,
				      released ? " (the cache emptied)" : "");
	*devptr = (void *)(uintptr_t)a.va;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_malloc(void **devptr, size_t size)
{
	vnpu_error_t err = rt_ready();

	return err ? err : device_alloc(rt_current_device(), size, NULL, devptr);
}

vnpu_error_t vnpu_malloc_async(void **devptr, size_t size,
			       vnpu_stream_t stream)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	err = device_alloc(s->dev, size, s->hwq, devptr);
	rt_stream_put(s);
	return err;
}

/* *a: the live allocation of d starting at devptr (mem_lock held). */
static vnpu_error_t allocation_at(struct rt_device *d, void *devptr,
				  const char *what, struct rt_alloc **a)
{
	*a = amap_find(&d->dmap, (uintptr_t)devptr);
	if (*a && (*a)->key == (uintptr_t)devptr)
		return VNPU_SUCCESS;
	return rt_fail(VNPU_ERROR_INVALID_DEVICE_POINTER, "%s of %p: %s", what,
		       devptr,
		       *a ? "inside an allocation, not its start"
			  : "not a live device allocation of this device "
			    "(freed already, or never allocated)");
}

/* a's memory is free again at once (mem_lock held; no work uses it). */
static void release_now(struct rt_device *d, struct rt_alloc *a)
{
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
}

vnpu_error_t vnpu_free(void *devptr)
{
	vnpu_error_t err = rt_ready();
	struct rt_device *d;
	struct rt_alloc *a;

	if (err || !devptr)
		return err;
	d = rt_current_device();
	pthread_mutex_lock(&d->mem_lock);
	err = allocation_at(d, devptr, "free", &a);
	pthread_mutex_unlock(&d->mem_lock);
	if (err)
		return err;
	/* The device may still use it. */
	rt_device_wait_all(d);
	pthread_mutex_lock(&d->mem_lock);
	/* Another thread may have freed it meanwhile. */
	err = allocation_at(d, devptr, "free", &a);
	if (!err)
		release_now(d, a);
	pthread_mutex_unlock(&d->mem_lock);
	return err;
}

/* Room for one more pending block (mem_lock held). */
static bool pending_reserve(struct rt_device *d)
{
	return rt_array_reserve((void **)&d->pending, &d->pending_cap,
				d->npending + 1, sizeof(*d->pending));
}

static vnpu_error_t free_async(struct rt_stream *s, void *devptr)
{
	static const char what[] = "stream-ordered free";
	struct rt_device *d = s->dev;
	struct rt_hwq *q = s->hwq;
	struct rt_alloc *a;
	vnpu_error_t err;
	uint64_t seq;

	pthread_mutex_lock(&q->lock);
	seq = s->last_seq;
	pthread_mutex_unlock(&q->lock);
	pthread_mutex_lock(&d->mem_lock);
	err = allocation_at(d, devptr, what, &a);
	if (!err && !pending_reserve(d)) {
		/* No room to defer it: the stream's work is waited for. */
		pthread_mutex_unlock(&d->mem_lock);
		rt_hwq_wait(q, seq);
		pthread_mutex_lock(&d->mem_lock);
		err = allocation_at(d, devptr, what, &a);
		if (!err)
			release_now(d, a);
	} else if (!err) {
		d->pending[d->npending++] =
			(struct rt_pending){ .a = *a, .q = q, .seq = seq };
		d->stats.in_use -= a->size;
		d->stats.cached += a->block;
		amap_remove(&d->dmap, a);
	}
	pthread_mutex_unlock(&d->mem_lock);
	return err;
}

vnpu_error_t vnpu_free_async(void *devptr, vnpu_stream_t stream)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	if (devptr)
		err = free_async(s, devptr);
	rt_stream_put(s);
	return err;
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

vnpu_error_t vnpu_mem_reset_peak(void)
{
	vnpu_error_t err = rt_ready();
	struct rt_device *d;

	if (err)
		return err;
	d = rt_current_device();
	pthread_mutex_lock(&d->mem_lock);
	d->stats.peak = d->stats.in_use;
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
	if (!amap_reserve(&d->hmap)) {
		pthread_mutex_unlock(&d->mem_lock);
		d->be->bo_free(d->bdev, &a.bo);
		return rt_fail(
			VNPU_ERROR_OUT_OF_MEMORY,
			"pinned host allocation of %zu bytes: host memory "
			"exhausted: no room to list it",
			size);
	}
	amap_insert(&d->hmap, &a);
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
