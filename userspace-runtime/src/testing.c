// SPDX-License-Identifier: MIT
/* Test-only entry points (vnpurt_testing.h). */
#include <stdio.h>

#include "internal.h"
#include "vnpurt_testing.h"

vnpu_error_t vnpurt_test_inject(vnpu_stream_t stream, uint32_t kind,
				uint64_t va, bool write)
{
	struct rt_stream *s;
	struct vnpu_cmd c;
	char what[32];
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	if (!s->dev->be->test_mode(s->dev->bdev)) {
		rt_stream_put(s);
		return rt_fail(VNPU_ERROR_UNSUPPORTED,
			       "fault injection needs VNPU_SIM_TEST_MODE=1");
	}
	c = vnpu_inject_cmd(kind, va, write);
	snprintf(what, sizeof(what), "test inject %u", kind);
	{
		struct rt_opdesc op = {.what = what};

		err = rt_submit(s, &op, &c, 1, NULL);
	}
	rt_stream_put(s);
	return err;
}

vnpu_error_t vnpurt_test_device_va(const void *ptr, uint64_t *va)
{
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	return rt_resolve(rt_current_device(), ptr, 1, va, NULL);
}

vnpu_error_t vnpurt_test_reset_count(uint32_t *count)
{
	struct vnpurt_dev_info info;
	struct rt_device *d;
	vnpu_error_t err = rt_ready();

	if (err)
		return err;
	d = rt_current_device();
	d->be->query(d->bdev, &info);
	*count = info.reset_count;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpurt_test_stream_queue(vnpu_stream_t stream, unsigned *qid)
{
	struct rt_stream *s;
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	*qid = s->hwq->qid;
	rt_stream_put(s);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpurt_test_gate(vnpu_stream_t stream, const uint64_t *word,
			      uint64_t value)
{
	struct rt_stream *s;
	uint64_t va;
	bool host;
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	err = rt_resolve(s->dev, word, sizeof(*word), &va, &host);
	if (!err && (!host || va % 8))
		err = rt_fail(VNPU_ERROR_INVALID_HOST_POINTER,
			      "a gate word must be 8-byte aligned pinned "
			      "host memory");
	if (!err) {
		struct vnpu_cmd c = vnpu_fence_wait_cmd(va, value);
		struct rt_opdesc op = {.what = "test gate"};

		err = rt_submit(s, &op, &c, 1, NULL);
	}
	rt_stream_put(s);
	return err;
}

/* The current device's sim backend, in test mode. */
static vnpu_error_t sim_in_test_mode(struct rt_device **out)
{
	vnpu_error_t err = rt_ready();
	struct rt_device *d;

	if (err)
		return err;
	d = rt_current_device();
	if (d->be != &vnpurt_backend_sim || !d->be->test_mode(d->bdev))
		return rt_fail(VNPU_ERROR_UNSUPPORTED,
			       "needs the sim backend with "
			       "VNPU_SIM_TEST_MODE=1");
	*out = d;
	return VNPU_SUCCESS;
}

vnpu_error_t vnpurt_test_corrupt_firmware(void)
{
	struct rt_device *d;
	vnpu_error_t err = sim_in_test_mode(&d);

	if (err)
		return err;
	vnpurt_sim_test_corrupt_firmware(d->bdev);
	return VNPU_SUCCESS;
}

vnpu_error_t vnpurt_test_failure_list(vnpu_stream_t stream, unsigned capacity,
				      bool grows)
{
	struct rt_device *d;
	struct rt_stream *s;
	vnpu_error_t err = sim_in_test_mode(&d);

	if (err)
		return err;
	if (!capacity)
		return rt_fail(VNPU_ERROR_INVALID_VALUE, "capacity 0");
	err = rt_stream_get(stream, &s);
	if (err)
		return err;
	if (s->dev != d)
		err = rt_fail(VNPU_ERROR_INVALID_VALUE,
			      "the stream is not on the current device");
	else if (!vnpurt_sim_test_failure_list(d->bdev, s->hwq->qid, capacity,
					       grows))
		err = rt_fail(VNPU_ERROR_INVALID_VALUE,
			      "%u entries: fewer than the failures pending, "
			      "or no memory",
			      capacity);
	rt_stream_put(s);
	return err;
}

void vnpurt_test_trace_fail_allocs(unsigned count)
{
	rt_trace_test_fail_allocs(count);
}

vnpu_error_t vnpurt_test_init_refs(int *refs)
{
	vnpu_error_t err = VNPU_SUCCESS;

	pthread_mutex_lock(&rt.lock);
	if (rt.refs > 0)
		*refs = rt.refs;
	else
		err = rt_fail(VNPU_ERROR_NOT_INITIALIZED, "runtime not started");
	pthread_mutex_unlock(&rt.lock);
	return err;
}

vnpu_error_t vnpurt_test_set_init_refs(int refs)
{
	vnpu_error_t err = VNPU_SUCCESS;

	if (refs < 1)
		return rt_fail(VNPU_ERROR_INVALID_VALUE, "refs %d < 1", refs);
	pthread_mutex_lock(&rt.lock);
	if (rt.refs > 0)
		rt.refs = refs;
	else
		err = rt_fail(VNPU_ERROR_NOT_INITIALIZED, "runtime not started");
	pthread_mutex_unlock(&rt.lock);
	return err;
}
