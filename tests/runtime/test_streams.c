// SPDX-License-Identifier: MIT
/* Streams and events: ordering, queries, cross-stream waits, timing,
 * handles. */
#include "rt_check.h"

#define N 4096

START_TEST(stream_handles)
{
	vnpu_stream_t s, hi, many[20];
	vnpu_event_t e;
	int dev = -1, cur;

	RT_ERR(vnpu_stream_create(NULL, 0), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_stream_create(&s, 2), VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_stream_create(&s, -1), VNPU_ERROR_INVALID_VALUE);
	RT_OK(vnpu_stream_create(&s, VNPU_STREAM_PRIORITY_LOW));
	RT_OK(vnpu_stream_create(&hi, VNPU_STREAM_PRIORITY_HIGH));
	RT_OK(vnpu_stream_query(s));
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpu_stream_synchronize(NULL));
	RT_OK(vnpu_stream_query(NULL));
	RT_OK(vnpu_get_device(&cur));
	RT_OK(vnpu_stream_get_device(s, &dev));
	ck_assert_int_eq(dev, cur);
	dev = -1;
	RT_OK(vnpu_stream_get_device(NULL, &dev));
	ck_assert_int_eq(dev, cur);
	RT_ERR(vnpu_stream_get_device(s, NULL), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_stream_destroy(NULL), VNPU_ERROR_INVALID_HANDLE);
	RT_OK(vnpu_stream_destroy(s));
	RT_ERR(vnpu_stream_destroy(s), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_stream_get_device(s, &dev), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_stream_synchronize(s), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_stream_query(s), VNPU_ERROR_INVALID_HANDLE);
	/* an event handle is not a stream, nor garbage */
	RT_OK(vnpu_event_create(&e, 0));
	RT_ERR(vnpu_stream_synchronize((vnpu_stream_t)(void *)e),
	       VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_stream_synchronize((vnpu_stream_t)(uintptr_t)0xdead),
	       VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_event_query((vnpu_event_t)(void *)hi),
	       VNPU_ERROR_INVALID_HANDLE);
	/* More streams than hardware queues share them. */
	for (int i = 0; i < 20; i++)
		RT_OK(vnpu_stream_create(&many[i], i % 2));
	for (int i = 0; i < 20; i++) {
		float *d;

		RT_OK(vnpu_malloc((void **)&d, 64));
		RT_OK(rt_fill(d, 16, i, many[i]));
		RT_OK(vnpu_stream_synchronize(many[i]));
		RT_OK(vnpu_free(d));
	}
	for (int i = 0; i < 20; i++)
		RT_OK(vnpu_stream_destroy(many[i]));
	RT_OK(vnpu_event_destroy(e));
	RT_OK(vnpu_stream_destroy(hi));
}
END_TEST

START_TEST(in_order_and_query)
{
	float *d, h[N];
	vnpu_stream_t s;
	vnpu_error_t q;

	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_malloc((void **)&d, sizeof(h)));
	/* Many launches: the last one wins. */
	for (int i = 0; i < 200; i++)
		RT_OK(rt_fill(d, N, i, s));
	q = vnpu_stream_query(s);
	ck_assert(q == VNPU_SUCCESS || q == VNPU_ERROR_NOT_READY);
	RT_OK(vnpu_memcpy_async(h, d, sizeof(h), VNPU_MEMCPY_D2H, s));
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpu_stream_query(s));
	for (int i = 0; i < N; i++)
		ck_assert_float_eq(h[i], 199.0f);
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_stream_destroy(s));
}
END_TEST

START_TEST(events_order_streams)
{
	float *d, h[N];
	vnpu_stream_t a, b;
	vnpu_event_t e;
	int mism = 0;

	RT_OK(vnpu_stream_create(&a, 0));
	RT_OK(vnpu_stream_create(&b, 1));
	RT_OK(vnpu_event_create(&e, VNPU_EVENT_DISABLE_TIMING));
	RT_OK(vnpu_malloc((void **)&d, sizeof(h)));
	for (int round = 0; round < 20; round++) {
		/* a: fill 1..100; b waits, then fills 7: b's write is last. */
		for (int i = 0; i < 30; i++)
			RT_OK(rt_fill(d, N, i + 1, a));
		RT_OK(vnpu_event_record(e, a));
		RT_OK(vnpu_stream_wait_event(b, e));
		RT_OK(rt_fill(d, N, 7 + round, b));
		RT_OK(vnpu_stream_synchronize(b));
		RT_OK(vnpu_event_synchronize(e));
		RT_OK(vnpu_event_query(e));
		RT_OK(vnpu_memcpy(h, d, sizeof(h), VNPU_MEMCPY_D2H));
		for (int i = 0; i < N; i++)
			mism += h[i] != 7.0f + round;
	}
	ck_assert_int_eq(mism, 0);
	/* A never-recorded event is complete and waiting on it is a no-op. */
	{
		vnpu_event_t fresh;

		RT_OK(vnpu_event_create(&fresh, 0));
		RT_OK(vnpu_event_query(fresh));
		RT_OK(vnpu_event_synchronize(fresh));
		RT_OK(vnpu_stream_wait_event(a, fresh));
		RT_OK(vnpu_event_destroy(fresh));
	}
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_event_destroy(e));
	RT_OK(vnpu_stream_destroy(a));
	RT_OK(vnpu_stream_destroy(b));
}
END_TEST

START_TEST(event_timing_and_errors)
{
	vnpu_event_t t0, t1, nt, never;
	vnpu_stream_t s;
	float *d, ms = -1, ms2 = -1;

	RT_OK(vnpu_stream_create(&s, 0));
	RT_ERR(vnpu_event_create(NULL, 0), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_event_create(&t0, 4), VNPU_ERROR_INVALID_VALUE);
	RT_OK(vnpu_event_create(&t0, VNPU_EVENT_DEFAULT));
	RT_OK(vnpu_event_create(&t1, VNPU_EVENT_DEFAULT));
	RT_OK(vnpu_event_create(&nt, VNPU_EVENT_DISABLE_TIMING));
	RT_OK(vnpu_event_create(&never, VNPU_EVENT_DEFAULT));
	RT_OK(vnpu_malloc((void **)&d, 1u << 22));
	RT_OK(vnpu_event_record(t0, s));
	RT_OK(vnpu_event_record(nt, s));
	for (int i = 0; i < 20; i++)
		RT_OK(rt_fill(d, 1 << 20, i, s));
	RT_OK(vnpu_event_record(t1, s));
	RT_OK(vnpu_event_synchronize(t1));
	RT_OK(vnpu_event_elapsed_time(&ms, t0, t1));
	ck_assert(ms > 0.0f && ms < 10000.0f);
	RT_OK(vnpu_event_elapsed_time(&ms2, t1, t0));
	ck_assert_float_eq_tol(ms2, -ms, 1e-3);
	RT_ERR(vnpu_event_elapsed_time(NULL, t0, t1), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_event_elapsed_time(&ms, nt, t1), VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_event_elapsed_time(&ms, t0, never),
	       VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_event_record(t0, (vnpu_stream_t)(uintptr_t)77),
	       VNPU_ERROR_INVALID_HANDLE);
	RT_OK(vnpu_event_destroy(never));
	RT_ERR(vnpu_event_elapsed_time(&ms, t0, never),
	       VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_event_destroy(never), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_event_destroy(NULL), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_event_record(never, s), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_event_query(never), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_event_synchronize(never), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_stream_wait_event(s, never), VNPU_ERROR_INVALID_HANDLE);
	/* Re-recording moves the capture; destroy with a record pending. */
	RT_OK(rt_fill(d, 1 << 20, 1, s));
	RT_OK(vnpu_event_record(t0, s));
	RT_OK(vnpu_event_destroy(t0));
	RT_OK(vnpu_event_destroy(t1));
	RT_OK(vnpu_event_destroy(nt));
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_stream_destroy(s));
}
END_TEST

START_TEST(default_stream_and_device_sync)
{
	float *d, h[16];

	RT_OK(vnpu_malloc((void **)&d, sizeof(h)));
	RT_OK(rt_fill(d, 16, 3.5, NULL));
	RT_OK(vnpu_device_synchronize());
	RT_OK(vnpu_memcpy(h, d, sizeof(h), VNPU_MEMCPY_D2H));
	for (int i = 0; i < 16; i++)
		ck_assert_float_eq(h[i], 3.5f);
	RT_OK(vnpu_free(d));
}
END_TEST

/* Handles never outlive their session: after vnpu_finalize and a new
 * vnpu_init, an old handle is invalid even when the new session made as
 * many objects as the old one. */
START_TEST(handles_across_sessions)
{
	vnpu_stream_t old_s[3], new_s[3];
	vnpu_event_t old_e[3], new_e[3];

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 3; i++) {
			RT_OK(vnpu_stream_create(&old_s[i], 0));
			RT_OK(vnpu_event_create(&old_e[i], 0));
		}
		RT_OK(vnpu_stream_destroy(old_s[1]));
		RT_OK(vnpu_finalize());
		RT_OK(vnpu_init());
		for (int i = 0; i < 3; i++) {
			RT_OK(vnpu_stream_create(&new_s[i], 0));
			RT_OK(vnpu_event_create(&new_e[i], 0));
		}
		for (int i = 0; i < 3; i++) {
			for (int j = 0; j < 3; j++) {
				ck_assert_ptr_ne(old_s[i], new_s[j]);
				ck_assert_ptr_ne(old_e[i], new_e[j]);
			}
			RT_ERR(vnpu_stream_destroy(old_s[i]),
			       VNPU_ERROR_INVALID_HANDLE);
			RT_ERR(vnpu_stream_synchronize(old_s[i]),
			       VNPU_ERROR_INVALID_HANDLE);
			RT_ERR(vnpu_event_destroy(old_e[i]),
			       VNPU_ERROR_INVALID_HANDLE);
			RT_ERR(vnpu_event_record(old_e[i], NULL),
			       VNPU_ERROR_INVALID_HANDLE);
		}
		/* The new ones are untouched by all of that. */
		for (int i = 0; i < 3; i++) {
			RT_OK(vnpu_event_record(new_e[i], new_s[i]));
			RT_OK(vnpu_stream_synchronize(new_s[i]));
			RT_OK(vnpu_event_query(new_e[i]));
			RT_OK(vnpu_event_destroy(new_e[i]));
			RT_OK(vnpu_stream_destroy(new_s[i]));
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-streams");
	TCase *tc = tcase_create("streams");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, stream_handles);
	tcase_add_test(tc, in_order_and_query);
	tcase_add_test(tc, events_order_streams);
	tcase_add_test(tc, event_timing_and_errors);
	tcase_add_test(tc, default_stream_and_device_sync);
	tcase_add_test(tc, handles_across_sessions);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
