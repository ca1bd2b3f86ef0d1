// SPDX-License-Identifier: MIT
/*
 * Events, with CUDA's semantics: an event is its latest record. A record
 * is an operation on the recording stream's hardware queue that raises
 * that queue's timeline word (FENCE_SIGNAL) to a value of its own, and,
 * for timing events, takes a device timestamp first. The event remembers
 * (queue, sequence number, timeline value, record id) of its latest
 * record:
 *  - vnpu_stream_wait_event() waits, on the device, for the queue's
 *    timeline to reach that value (FENCE_WAIT): for the record current at
 *    the call and nothing else; a later record changes nothing;
 *  - query and synchronize look at the latest record's sequence number
 *    (query at the timeline word too: see rt_hwq_op_done()); its status and
 *    timestamp are stored when it retires, and only a retiring record
 *    that is still the latest stores them, whatever order queues
 *    complete in.
 * Each pending record holds a reference to the event, so destroying an
 * event never waits and never frees what a retiring record touches.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vnpu/hw_status.h"

struct rt_event {
	struct rt_device *dev;
	unsigned flags;
	void *handle;
	pthread_mutex_t lock; /* innermost: taken under hwq locks */
	unsigned refs;	      /* the handle's + one per pending record */
	/* The latest record; id 0 when never recorded. */
	uint64_t id;
	struct rt_hwq *hwq;
	uint64_t seq, value;
	/* What the latest record left when it retired. */
	uint64_t retired_id;
	uint32_t fail_status;
	uint64_t ts;
};

/* Record ids: unique in the process, so that no record of any event
 * (destroyed or not) is ever taken for another. */
static atomic_uint_fast64_t next_record_id;

bool rt_event_timed(const struct rt_event *e)
{
	return !(e->flags & VNPU_EVENT_DISABLE_TIMING);
}

static void event_unref_locked(struct rt_event *e)
{
	bool last = --e->refs == 0;

	pthread_mutex_unlock(&e->lock);
	if (last) {
		pthread_mutex_destroy(&e->lock);
		free(e);
	}
}

uint64_t rt_event_recorded(struct rt_event *e, struct rt_hwq *q, uint64_t seq,
			   uint64_t timeline_value)
{
	uint64_t id = atomic_fetch_add(&next_record_id, 1) + 1;

	pthread_mutex_lock(&e->lock);
	e->refs++;
	e->id = id;
	e->hwq = q;
	e->seq = seq;
	e->value = timeline_value;
	pthread_mutex_unlock(&e->lock);
	return id;
}

void rt_event_retired(struct rt_event *e, uint64_t record_id,
		      uint32_t fail_status, uint64_t ts)
{
	pthread_mutex_lock(&e->lock);
	if (record_id == e->id) {
		e->retired_id = record_id;
		e->fail_status = fail_status;
		e->ts = ts;
	}
	event_unref_locked(e);
}

void rt_event_free_obj(void *obj)
{
	struct rt_event *e = obj;

	pthread_mutex_lock(&e->lock);
	event_unref_locked(e);
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
	struct rt_event *e;

	if (err)
		return err;
	if (!event)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "event is NULL");
	if (flags & ~VNPU_EVENT_DISABLE_TIMING)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "event flags 0x%x: unknown bits", flags);
	e = calloc(1, sizeof(*e));
	if (!e)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY, "allocating an event");
	e->dev = rt_current_device();
	e->flags = flags;
	e->refs = 1;
	pthread_mutex_init(&e->lock, NULL);
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

/*
 * The event and the stream of one call, both held (event_put and
 * rt_stream_put release them), or an error with neither held: an event
 * and a stream of two devices do not meet.
 */
static vnpu_error_t event_and_stream_get(vnpu_event_t event,
					 vnpu_stream_t stream,
					 struct rt_event **e,
					 struct rt_stream **s)
{
	vnpu_error_t err = event_get(event, e);

	if (err)
		return err;
	err = rt_stream_get(stream, s);
	if (!err && (*s)->dev != (*e)->dev) {
		rt_stream_put(*s);
		err = rt_fail(VNPU_ERROR_INVALID_VALUE,
			      "event and stream belong to different devices");
	}
	if (err)
		event_put(*e);
	return err;
}

vnpu_error_t vnpu_event_record(vnpu_event_t event, vnpu_stream_t stream)
{
	struct rt_opdesc op = {.what = "event record"};
	struct rt_event *e;
	struct rt_stream *s;
	vnpu_error_t err = event_and_stream_get(event, stream, &e, &s);

	if (err)
		return err;
	op.record = e;
	err = rt_submit(s, &op, NULL, 0, NULL);
	rt_stream_put(s);
	event_put(e);
	return err;
}

/* The latest record of e, as it is now. */
struct record {
	uint64_t id, seq, value;
	struct rt_hwq *hwq;
};

static struct record latest(struct rt_event *e)
{
	struct record r;

	pthread_mutex_lock(&e->lock);
	r.id = e->id;
	r.hwq = e->hwq;
	r.seq = e->seq;
	r.value = e->value;
	pthread_mutex_unlock(&e->lock);
	return r;
}

static bool record_done(const struct record *r)
{
	return rt_hwq_op_done(r->hwq, r->seq, r->value);
}

/*
 * After record_done(r): its error, or success; *ts its timestamp. A record
 * that was no longer the latest when it retired (recorded again by another
 * thread meanwhile) left nothing: success, but no timestamp to read yet.
 */
static vnpu_error_t record_status(struct rt_event *e, const struct record *r,
				  uint64_t *ts)
{
	uint32_t st = 0;
	bool kept;

	pthread_mutex_lock(&e->lock);
	kept = e->retired_id == r->id;
	if (kept) {
		st = e->fail_status;
		if (ts)
			*ts = e->ts;
	}
	pthread_mutex_unlock(&e->lock);
	if (!kept && ts)
		return VNPU_ERROR_NOT_READY;
	if (!st)
		return VNPU_SUCCESS;
	/* Lost with the device: say why. */
	if (st == VNPURT_STATUS_DEVICE_LOST &&
	    rt_device_check(e->dev, "the event's record did not run"))
		return VNPU_ERROR_DEVICE_RESET;
	return rt_fail(rt_status_error(st),
		       "the event's record did not run (device status %s)",
		       rt_status_name(st));
}

vnpu_error_t vnpu_event_query(vnpu_event_t event)
{
	struct rt_event *e;
	struct record r;
	vnpu_error_t err = event_get(event, &e);

	if (err)
		return err;
	r = latest(e);
	if (r.id)
		err = record_done(&r) ? record_status(e, &r, NULL)
				      : VNPU_ERROR_NOT_READY;
	/* Once the record's own failure was reported, a lost device still
	 * is. */
	if (!err)
		err = rt_device_check(e->dev, "event query");
	event_put(e);
	return err;
}

vnpu_error_t vnpu_event_synchronize(vnpu_event_t event)
{
	struct rt_event *e;
	struct record r;
	uint64_t t0 = rt_now_ns();
	vnpu_error_t err = event_get(event, &e);

	if (err)
		return err;
	r = latest(e);
	if (r.id) {
		rt_hwq_wait(r.hwq, r.seq);
		err = record_status(e, &r, NULL);
		rt_trace_host("event synchronize", t0, rt_now_ns());
	}
	if (!err)
		err = rt_device_check(e->dev, "event synchronize");
	event_put(e);
	return err;
}

vnpu_error_t vnpu_stream_wait_event(vnpu_stream_t stream, vnpu_event_t event)
{
	struct rt_event *e;
	struct rt_stream *s;
	struct record r;
	vnpu_error_t err = event_and_stream_get(event, stream, &e, &s);

	if (err)
		return err;
	r = latest(e);
	/* A lost device refuses it even when there is nothing to submit. */
	err = rt_device_check(s->dev, "wait event");
	if (!err && r.id && r.hwq != s->hwq) {
		/* On the recording queue itself, order is already given. */
		struct vnpu_cmd c =
			vnpu_fence_wait_cmd(r.hwq->timeline_bo.va, r.value);
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
	uint64_t ts[2] = {0, 0};
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	if (!ms)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "ms is NULL");
	err = event_get(start, &ev[0]);
	if (!err)
		err = event_get(end, &ev[1]);
	for (int i = 0; i < 2 && !err; i++) {
		struct record r = latest(ev[i]);

		if (!rt_event_timed(ev[i]))
			err = rt_fail(VNPU_ERROR_INVALID_VALUE,
				      "the %s event was created with "
				      "VNPU_EVENT_DISABLE_TIMING",
				      i ? "end" : "start");
		else if (!r.id)
			err = rt_fail(VNPU_ERROR_INVALID_VALUE,
				      "the %s event was never recorded",
				      i ? "end" : "start");
		else if (!record_done(&r))
			err = VNPU_ERROR_NOT_READY;
		else
			err = record_status(ev[i], &r, &ts[i]);
	}
	if (!err)
		err = rt_device_check(ev[0]->dev, "event elapsed time");
	if (!err)
		*ms = (float)((double)(int64_t)(ts[1] - ts[0]) / 1e6);
	for (int i = 0; i < 2; i++)
		if (ev[i])
			event_put(ev[i]);
	return err;
}
