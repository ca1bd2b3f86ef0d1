// SPDX-License-Identifier: MIT
/* Streams: handles, creation with priority, synchronize, query. */
#include <inttypes.h>

#include "internal.h"

vnpu_error_t rt_stream_get(vnpu_stream_t h, struct rt_stream **s)
{
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	if (!h) {
		*s = rt_current_device()->default_stream;
		return VNPU_SUCCESS;
	}
	*s = rt_handle_get(&rt.streams, h);
	if (!*s)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "stream %p is not a live stream (destroyed, "
			       "or never created)",
			       (void *)h);
	return VNPU_SUCCESS;
}

void rt_stream_put(struct rt_stream *s)
{
	if (s->handle)
		rt_handle_put(&rt.streams, s->handle);
}

vnpu_error_t vnpu_stream_create(vnpu_stream_t *stream, int priority)
{
	vnpu_error_t err = rt_ready();
	struct rt_stream *s;

	if (err)
		return err;
	if (!stream)
		return rt_fail(VNPU_ERROR_NULL_POINTER, "stream is NULL");
	if (priority != VNPU_STREAM_PRIORITY_LOW &&
	    priority != VNPU_STREAM_PRIORITY_HIGH)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "priority %d is neither LOW (0) nor HIGH (1)",
			       priority);
	err = rt_device_check(rt_current_device(), "stream create");
	if (!err)
		err = rt_stream_new(rt_current_device(), priority, &s);
	if (err)
		return err;
	s->handle = rt_handle_add(&rt.streams, s);
	if (!s->handle) {
		rt_stream_free(s);
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY, "too many streams");
	}
	*stream = s->handle;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_stream_destroy(vnpu_stream_t stream)
{
	vnpu_error_t err = rt_ready();
	struct rt_stream *s;

	if (err)
		return err;
	if (!stream)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "the default stream cannot be destroyed");
	s = rt_handle_remove(&rt.streams, stream);
	if (!s)
		return rt_fail(VNPU_ERROR_INVALID_HANDLE,
			       "stream %p is not a live stream (destroyed, "
			       "or never created)",
			       (void *)stream);
	rt_stream_free(s);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpu_stream_synchronize(vnpu_stream_t stream)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(stream, &s);
	uint64_t t0 = rt_now_ns();

	if (err)
		return err;
	err = rt_stream_sync(s, true);
	rt_trace_host("stream synchronize", t0, rt_now_ns());
	rt_stream_put(s);
	return err;
}

vnpu_error_t vnpu_stream_query(vnpu_stream_t stream)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(stream, &s);
	uint64_t seq, record_value;
	bool pending;

	if (err)
		return err;
	pthread_mutex_lock(&s->hwq->lock);
	seq = s->last_seq;
	record_value = s->last_record_value;
	pthread_mutex_unlock(&s->hwq->lock);
	pending = !rt_hwq_op_done(s->hwq, seq, record_value);
	err = rt_stream_take_error(s);
	if (!err && pending)
		err = VNPU_ERROR_NOT_READY;
	rt_stream_put(s);
	return err;
}

vnpu_error_t vnpu_stream_get_device(vnpu_stream_t stream, int *device)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	if (device)
		*device = s->dev->index;
	else
		err = rt_fail(VNPU_ERROR_NULL_POINTER, "device is NULL");
	rt_stream_put(s);
	return err;
}
