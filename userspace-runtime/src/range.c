// SPDX-License-Identifier: MIT
/*
 * A first-fit range allocator over a sorted free list that coalesces
 * neighbours on free: VRAM offsets and device VAs of the sim backend.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int rt_ranges_init(struct rt_ranges *r, uint64_t start, uint64_t size)
{
	memset(r, 0, sizeof(*r));
	r->cap = 16;
	r->free = malloc(r->cap * sizeof(*r->free));
	if (!r->free)
		return -1;
	r->free[0].start = start;
	r->free[0].size = size;
	r->n = size ? 1 : 0;
	r->free_bytes = size;
	return 0;
}

void rt_ranges_fini(struct rt_ranges *r)
{
	free(r->free);
	memset(r, 0, sizeof(*r));
}

static bool reserve(struct rt_ranges *r)
{
	struct rt_range *f;

	if (r->n < r->cap)
		return true;
	f = realloc(r->free, r->cap * 2 * sizeof(*f));
	if (!f)
		return false;
	r->free = f;
	r->cap *= 2;
	return true;
}

bool rt_ranges_alloc(struct rt_ranges *r, uint64_t size, uint64_t align,
		     uint64_t *start)
{
	for (size_t i = 0; i < r->n; i++) {
		struct rt_range *f = &r->free[i];
		uint64_t s = (f->start + align - 1) & ~(align - 1);
		uint64_t pad = s - f->start;

		if (s < f->start || pad > f->size || f->size - pad < size)
			continue;
		if (pad) {
			/* Keep the head; the tail may remain as well. */
			uint64_t tail = f->size - pad - size;

			if (tail) {
				if (!reserve(r))
					return false;
				f = &r->free[i];
				memmove(&r->free[i + 2], &r->free[i + 1],
					(r->n - i - 1) * sizeof(*f));
				r->free[i + 1].start = s + size;
				r->free[i + 1].size = tail;
				r->n++;
			}
			f->size = pad;
		} else {
			f->start += size;
			f->size -= size;
			if (!f->size) {
				memmove(f, f + 1, (r->n - i - 1) * sizeof(*f));
				r->n--;
			}
		}
		r->free_bytes -= size;
		*start = s;
		return true;
	}
	return false;
}

bool rt_ranges_free(struct rt_ranges *r, uint64_t start, uint64_t size)
{
	size_t lo = 0, hi = r->n;
	bool prev, next;

	while (lo < hi) { /* first free range after start */
		size_t mid = (lo + hi) / 2;

		if (r->free[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	prev = lo > 0 &&
	       r->free[lo - 1].start + r->free[lo - 1].size == start;
	next = lo < r->n && start + size == r->free[lo].start;
	if (prev && next) {
		r->free[lo - 1].size += size + r->free[lo].size;
		memmove(&r->free[lo], &r->free[lo + 1],
			(r->n - lo - 1) * sizeof(*r->free));
		r->n--;
	} else if (prev) {
		r->free[lo - 1].size += size;
	} else if (next) {
		r->free[lo].start = start;
		r->free[lo].size += size;
	} else {
		if (!reserve(r))
			return false;
		memmove(&r->free[lo + 1], &r->free[lo],
			(r->n - lo) * sizeof(*r->free));
		r->free[lo].start = start;
		r->free[lo].size = size;
		r->n++;
	}
	r->free_bytes += size;
	return true;
}
