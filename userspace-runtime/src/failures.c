// SPDX-License-Identifier: MIT
/*
 * A backend queue's failures not yet taken by the runtime (struct
 * rt_failures). No failure is ever dropped: a dropped one would let a
 * failed operation read as successful. The list grows as needed; when it
 * cannot (no memory), the new failure is merged into the newest one,
 * whose first status is kept (see struct vnpurt_failure's merged).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vnpu/hw_status.h"

bool rt_failures_init(struct rt_failures *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	if (!cap)
		return false;
	r->buf = calloc(cap, sizeof(*r->buf));
	if (!r->buf)
		return false;
	r->cap = cap;
	return true;
}

void rt_failures_fini(struct rt_failures *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

static struct vnpurt_failure *newest(struct rt_failures *r)
{
	return &r->buf[(r->head + r->n - 1) % r->cap];
}

/* Moves the entries to a buffer of cap >= n entries, oldest first. */
static bool relocate(struct rt_failures *r, size_t cap)
{
	struct vnpurt_failure *buf;

	if (cap < r->n || cap > SIZE_MAX / sizeof(*buf))
		return false;
	buf = calloc(cap, sizeof(*buf));
	if (!buf)
		return false;
	for (size_t i = 0; i < r->n; i++)
		buf[i] = r->buf[(r->head + i) % r->cap];
	free(r->buf);
	r->buf = buf;
	r->cap = cap;
	r->head = 0;
	return true;
}

bool rt_failures_resize(struct rt_failures *r, size_t cap, bool grows)
{
	if (!cap || !relocate(r, cap))
		return false;
	r->fixed = !grows;
	return true;
}

void rt_failures_push(struct rt_failures *r, const struct vnpurt_failure *f)
{
	struct vnpurt_failure *last;

	if (r->n) {
		last = newest(r);
		/* A run of commands refused for one cause is one failure. */
		if (!last->merged && last->status == f->status &&
		    f->status != VNPU_STATUS_MMU_FAULT &&
		    last->last_seq + 1 == f->first_seq) {
			last->last_seq = f->last_seq;
			return;
		}
	}
	if (r->n == r->cap &&
	    (r->fixed || r->cap > SIZE_MAX / 2 || !relocate(r, r->cap * 2))) {
		/*
		 * Out of memory: widen the newest failure to cover this one.
		 * Failures come in sequence order, so the range stays a
		 * superset of both; operations between the two (which ran)
		 * are reported failed too, which beats a failure lost.
		 */
		last = newest(r);
		if (!last->merged) {
			last->merged = true;
			last->exact_last_seq = last->last_seq;
		}
		if (f->last_seq > last->last_seq)
			last->last_seq = f->last_seq;
		return;
	}
	r->buf[(r->head + r->n) % r->cap] = *f;
	r->n++;
}

bool rt_failures_take(struct rt_failures *r, struct vnpurt_failure *f)
{
	if (!r->n)
		return false;
	*f = r->buf[r->head];
	r->head = (r->head + 1) % r->cap;
	r->n--;
	return true;
}
