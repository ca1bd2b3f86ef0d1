// SPDX-License-Identifier: MIT
/*
 * Events: a slot in a device-visible pinned pool holds a fence word the
 * device writes (FENCE_SIGNAL) and, with timing, a device timestamp. A
 * record's completion is known from its sequence number on the hardware
 * queue; other streams wait for it on the device with FENCE_WAIT.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vnpu/hw_status.h"

#define POOL_SLOTS 4096u
#define MAX_POOLS 64u

struct rt_event {
	struct rt_device *dev;
	uint32_t slot;
	unsigned flags;
	void *handle;
	/* ev_lock */
	bool recorded;
	uint64_t value;
	struct rt_hwq *hwq;
	uint64_t seq;
};

static struct rt_evslot *slot_ptr(struct rt_device *d, uint32_t slot)
{
	return (struct rt_evslot *)d->ev_pools[slot / POOL_SLOTS].cpu +
	       slot % POOL_SLOTS;
}

static uint64_t slot_va(struct rt_device *d, uint32_t slot)
{
	return d->ev_pools[slot / POOL_SLOTS].va +
	       (uint64_t)(slot % POOL_SLOTS) * sizeof(struct rt_evslot);
}

/* A free slot (ev_lock held). */
static vnpu_error_t slot_alloc(struct rt_device *d, uint32_t *slot)
{
	if (!d->ev_nfree) {
		size_t np = d->ev_npools;
		struct vnpurt_bo *pools;
		uint32_t *fr, *fail;
		uint64_t *next;
		size_t total = (np + 1) * POOL_SLOTS;

		if (np == MAX_POOLS)
			return VNPU_ERROR_OUT_OF_MEMORY;
		pools = realloc(d->ev_pools, (np + 1) * sizeof(*pools));
		if (!pools)
			return VNPU_ERROR_OUT_OF_MEMORY;
		d->ev_pools = pools;
		fr = realloc(d->ev_free, total * sizeof(*fr));
		if (fr)
			d->ev_free = fr;
		fail = realloc(d->ev_fail, total * sizeof(*fail));
		if (fail)
			d->ev_fail = fail;
		next = realloc(d->ev_next_value, total * sizeof(*next));
		if (next)
			d->ev_next_value = next;
		if (!fr || !fail || !next ||
		    d->be->bo_create(d->bdev,
				     POOL_SLOTS * sizeof(struct rt_evslot),
				     VNPURT_DOMAIN_HOST, &pools[np]))
			return VNPU_ERROR_OUT_OF_MEMORY;
		d->ev_npools++;
		for (uint32_t i = POOL_SLOTS; i-- > 0;) {
			uint32_t s = (uint32_t)(np * POOL_SLOTS) + i;

			d->ev_free[d->ev_nfree++] = s;
			d->ev_fail[s] = 0;
			d->ev_next_value[s] = 0;
		}
	}
	*slot = d->ev_free[--d->ev_nfree];
	return VNPU_SUCCESS;
}

void rt_events_fini(struct rt_device *d)
{
	for (size_t i = 0; i < d->ev_npools; i++)
		d->be->bo_free(d->bdev, &d->ev_pools[i]);
	free(d->ev_pools);
	free(d->ev_free);
	free(d->ev_fail);
	free(d->ev_next_value);
	d->ev_pools = NULL;
	d->ev_npools = 0;
}

/* Releases an event whose record may still be pending. */
void rt_event_free_obj(void *obj)
{
	struct rt_event *e = obj;
	struct rt_device *d = e->dev;

	/* The slot is reused only after the device wrote it for the last
	 * time. */
	if (e->recorded)
		rt_hwq_wait(e->hwq, e->seq);
	pthread_mutex_lock(&d->ev_lock);
	d->ev_free[d->ev_nfree++] = e->slot;
	pthread_mutex_unlock(&d->ev_lock);
	free(e);
}

static vnpu_error_t event_get(vnpu_event_t h, struct rt_event **e)
{
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	*e = h ? rt_handle_get(&rt.events, h) : NULL;
	if (!*e)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "event %p is not a live event (destroyed, "
			       "NULL, or never created)",
			       (void *)h);
	return VNPU_SUCCESS;
}

static void event_put(struct rt_event *e)
{
	rt_handle_put(&rt.events, e->handle);
}

vnpu_error_t vnpu_event_create(vnpu_event_t *event, unsigned flags)
{
	vnpu_error_t err = rt_ready();
	struct rt_device *d;
	struct rt_event *e;

	if (err)
		return err;
	if (!event)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "event is NULL");
	if (flags & ~VNPU_EVENT_DISABLE_TIMING)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "event flags 0x%x: unknown bits", flags);
	d = rt_current_device();
	e = calloc(1, sizeof(*e));
	if (!e)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY, "allocating an event");
	e->dev = d;
	e->flags = flags;
	pthread_mutex_lock(&d->ev_lock);
	err = slot_alloc(d, &e->slot);
	pthread_mutex_unlock(&d->ev_lock);
	if (err) {
		free(e);
		return rt_fail(err, "no event slot left");
	}
	e->handle = rt_handle_add(&rt.events, e);
	if (!e->handle) {
		rt_event_free_obj(e);
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY, "too many events");
	}
	*event = e->handle;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_event_destroy(vnpu_event_t event)
{
	vnpu_error_t err = rt_ready();
	struct rt_event *e;

	if (err)
		return err;
	e = event ? rt_handle_remove(&rt.events, event) : NULL;
	if (!e)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "event %p is not a live event", (void *)event);
	rt_event_free_obj(e);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_event_record(vnpu_event_t event, vnpu_stream_t stream)
{
	struct rt_event *e;
	struct rt_stream *s;
	struct rt_device *d;
	struct vnpu_cmd cmds[2];
	unsigned n = 0;
	uint64_t value, seq;
	vnpu_error_t err = event_get(event, &e);

	if (err)
		return err;
	err = rt_stream_get(stream, &s);
	if (err) {
		event_put(e);
		return err;
	}
	d = e->dev;
	if (s->dev != d) {
		err = rt_fail(VNPU_ERROR_INVALID_VALUE,
			      "event and stream belong to different devices");
		goto out;
	}
	/* One recorder at a time per event: the value, the submission and
	 * the bookkeeping must agree. */
	pthread_mutex_lock(&d->ev_lock);
	value = ++d->ev_next_value[e->slot];
	d->ev_fail[e->slot] = 0;
	if (!(e->flags & VNPU_EVENT_DISABLE_TIMING))
		cmds[n++] = vnpu_timestamp_cmd(slot_va(d, e->slot) + 8);
	cmds[n++] = vnpu_fence_signal_cmd(slot_va(d, e->slot), value);
	{
		struct rt_opdesc op = {
			.what = "event record",
			.signal_slot = &slot_ptr(d, e->slot)->fence,
			.signal_value = value,
			.fail_mark = &d->ev_fail[e->slot],
		};

		err = rt_submit(s, &op, cmds, n, &seq);
	}
	if (!err) {
		e->recorded = true;
		e->value = value;
		e->hwq = s->hwq;
		e->seq = seq;
	}
	pthread_mutex_unlock(&d->ev_lock);
out:
	rt_stream_put(s);
	event_put(e);
	return err;
}

/* Snapshot of an event's record (ev_lock). */
static void snapshot(struct rt_event *e, bool *recorded, struct rt_hwq **q,
		     uint64_t *seq, uint64_t *value)
{
	pthread_mutex_lock(&e->dev->ev_lock);
	*recorded = e->recorded;
	*q = e->hwq;
	*seq = e->seq;
	*value = e->value;
	pthread_mutex_unlock(&e->dev->ev_lock);
}

static bool record_done(struct rt_hwq *q, uint64_t seq)
{
	bool done;

	pthread_mutex_lock(&q->lock);
	rt_hwq_drain_locked(q);
	done = q->done >= seq;
	pthread_mutex_unlock(&q->lock);
	return done;
}

/* The error of a record that retired without running, or success. */
static vnpu_error_t record_status(struct rt_event *e, uint64_t value)
{
	struct rt_device *d = e->dev;
	uint32_t st;

	pthread_mutex_lock(&d->ev_lock);
	st = d->ev_next_value[e->slot] == value ? d->ev_fail[e->slot] : 0;
	pthread_mutex_unlock(&d->ev_lock);
	if (!st)
		return VNPU_SUCCESS;
	return rt_fail(rt_status_error(st),
		       "the event's record did not run (device status %s)",
		       rt_status_name(st));
}

vnpu_error_t vnpu_event_query(vnpu_event_t event)
{
	struct rt_event *e;
	struct rt_hwq *q;
	uint64_t seq, value;
	bool recorded;
	vnpu_error_t err = event_get(event, &e);

	if (err)
		return err;
	snapshot(e, &recorded, &q, &seq, &value);
	if (recorded)
		err = record_done(q, seq) ? record_status(e, value)
					  : VNPU_ERROR_NOT_READY;
	event_put(e);
	return err;
}

vnpu_error_t vnpu_event_synchronize(vnpu_event_t event)
{
	struct rt_event *e;
	struct rt_hwq *q;
	uint64_t seq, value, t0 = rt_now_ns();
	bool recorded;
	vnpu_error_t err = event_get(event, &e);

	if (err)
		return err;
	snapshot(e, &recorded, &q, &seq, &value);
	if (recorded) {
		rt_hwq_wait(q, seq);
		err = record_status(e, value);
		rt_trace_host("event synchronize", t0, rt_now_ns());
	}
	event_put(e);
	return err;
}

vnpu_error_t vnpu_stream_wait_event(vnpu_stream_t stream, vnpu_event_t event)
{
	struct rt_event *e;
	struct rt_stream *s;
	struct rt_hwq *q;
	uint64_t seq, value;
	bool recorded;
	vnpu_error_t err = event_get(event, &e);

	if (err)
		return err;
	err = rt_stream_get(stream, &s);
	if (err) {
		event_put(e);
		return err;
	}
	snapshot(e, &recorded, &q, &seq, &value);
	if (s->dev != e->dev) {
		err = rt_fail(VNPU_ERROR_INVALID_VALUE,
			      "event and stream belong to different devices");
	} else if (recorded) {
		struct vnpu_cmd c =
			vnpu_fence_wait_cmd(slot_va(e->dev, e->slot), value);
		struct rt_opdesc op = {.what = "wait event"};

		err = rt_submit(s, &op, &c, 1, NULL);
	}
	rt_stream_put(s);
	event_put(e);
	return err;
}

vnpu_error_t vnpu_event_elapsed_time(float *ms, vnpu_event_t start,
				     vnpu_event_t end)
{
	struct rt_event *ev[2] = {NULL, NULL};
	uint64_t ts[2];
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	if (!ms)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "ms is NULL");
	err = event_get(start, &ev[0]);
	if (!err)
		err = event_get(end, &ev[1]);
	for (int i = 0; i < 2 && !err; i++) {
		struct rt_hwq *q;
		uint64_t seq, value;
		bool recorded;

		snapshot(ev[i], &recorded, &q, &seq, &value);
		if (ev[i]->flags & VNPU_EVENT_DISABLE_TIMING)
			err = rt_fail(VNPU_ERROR_INVALID_VALUE,
				      "the %s event was created with "
				      "VNPU_EVENT_DISABLE_TIMING",
				      i ? "end" : "start");
		else if (!recorded)
			err = rt_fail(VNPU_ERROR_INVALID_VALUE,
				      "the %s event was never recorded",
				      i ? "end" : "start");
		else if (!record_done(q, seq))
			err = VNPU_ERROR_NOT_READY;
		else
			err = record_status(ev[i], value);
		if (!err)
			ts[i] = __atomic_load_n(
				&slot_ptr(ev[i]->dev, ev[i]->slot)->start_ts,
				__ATOMIC_ACQUIRE);
	}
	if (!err)
		*ms = (float)((double)(int64_t)(ts[1] - ts[0]) / 1e6);
	for (int i = 0; i < 2; i++)
		if (ev[i])
			event_put(ev[i]);
	return err;
}
