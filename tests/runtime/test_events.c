// SPDX-License-Identifier: MIT
/*
 * Events with CUDA's semantics (cudaEventRecord / cudaStreamWaitEvent /
 * cudaEventQuery): an event is its latest record; a wait waits for the
 * record current at the call and for nothing else; query, synchronize and
 * elapsed time look at the latest record, whatever order the queues
 * complete in. Streams are held back deterministically with gates: a
 * device-side wait on a pinned host word the test opens.
 */
#include <pthread.h>
#include <time.h>

#include "rt_check.h"
#include "rt_gates.h"

/* Time for a wrongly released stream to run ahead, before asserting that
 * it did not: a correct runtime passes without it, a wrong one is caught
 * with it. */
static void settle(void)
{
	struct timespec ts = {0, 50 * 1000 * 1000};

	nanosleep(&ts, NULL);
}

static uint8_t byte_at(const void *dev)
{
	uint8_t b;

	RT_OK(vnpu_memcpy(&b, dev, 1, VNPU_MEMCPY_D2H));
	return b;
}

/*
 * The report's first program, as written: e recorded on a busy s1, waited
 * on by s2, then recorded again on an idle s3. s2's wait is for the first
 * record: it must see x written.
 */
START_TEST(rerecord_on_idle_stream_keeps_the_wait)
{
	vnpu_stream_t s[3];
	vnpu_event_t e;
	void *big, *x, *y;

	distinct_streams(s, 3);
	RT_OK(vnpu_event_create(&e, 0));
	RT_OK(vnpu_malloc(&big, 32u << 20));
	RT_OK(vnpu_malloc(&x, 64));
	RT_OK(vnpu_malloc(&y, 64));
	for (int round = 0; round < 4; round++) {
		RT_OK(vnpu_memset(x, 0, 64));
		RT_OK(vnpu_memset(y, 0, 64));
		for (int r = 0; r < 4; r++)
			RT_OK(vnpu_memset_async(big, r, 32u << 20, s[0]));
		RT_OK(vnpu_memset_async(x, 0x42, 64, s[0]));
		RT_OK(vnpu_event_record(e, s[0]));
		RT_OK(vnpu_stream_wait_event(s[1], e));
		RT_OK(vnpu_event_record(e, s[2]));
		RT_OK(vnpu_memcpy_async(y, x, 64, VNPU_MEMCPY_D2D, s[1]));
		RT_OK(vnpu_stream_synchronize(s[1]));
		ck_assert_int_eq(byte_at(y), 0x42);
		RT_OK(vnpu_device_synchronize());
	}
	RT_OK(vnpu_free(big));
	RT_OK(vnpu_free(x));
	RT_OK(vnpu_free(y));
	RT_OK(vnpu_event_destroy(e));
	destroy_streams(s, 3);
}
END_TEST

/* The same, held back by a gate instead of by busy work: no timing. */
START_TEST(rerecord_gated)
{
	vnpu_stream_t s[3];
	vnpu_event_t e;
	void *x, *y;

	distinct_streams(s, 3);
	RT_OK(vnpu_event_create(&e, 0));
	RT_OK(vnpu_malloc(&x, 64));
	RT_OK(vnpu_malloc(&y, 64));
	RT_OK(vnpu_memset(x, 0, 64));
	RT_OK(vnpu_memset(y, 0, 64));
	gate_close(s[0], 0);
	RT_OK(vnpu_memset_async(x, 0x42, 64, s[0]));
	RT_OK(vnpu_event_record(e, s[0]));
	RT_OK(vnpu_stream_wait_event(s[1], e));
	RT_OK(vnpu_event_record(e, s[2]));
	RT_OK(vnpu_memcpy_async(y, x, 64, VNPU_MEMCPY_D2D, s[1]));
	/* s1 is held: s2 must still be waiting, whatever s3 did. */
	RT_OK(vnpu_stream_synchronize(s[2]));
	settle();
	ck_assert_int_eq(vnpu_stream_query(s[1]), VNPU_ERROR_NOT_READY);
	gate_open(0);
	RT_OK(vnpu_stream_synchronize(s[1]));
	ck_assert_int_eq(byte_at(y), 0x42);
	RT_OK(vnpu_free(x));
	RT_OK(vnpu_free(y));
	RT_OK(vnpu_event_destroy(e));
	destroy_streams(s, 3);
}
END_TEST

/*
 * The report's second program: e recorded on a busy s1, then on an idle
 * s3, everything synchronised; a later wait on e and work on s2 must
 * finish (it hung: the fence word had gone backwards).
 */
START_TEST(wait_after_device_sync_finishes)
{
	vnpu_stream_t s[3];
	vnpu_event_t e;
	void *big, *x;

	distinct_streams(s, 3);
	RT_OK(vnpu_event_create(&e, 0));
	RT_OK(vnpu_malloc(&big, 32u << 20));
	RT_OK(vnpu_malloc(&x, 64));
	for (int round = 0; round < 4; round++) {
		for (int r = 0; r < 4; r++)
			RT_OK(vnpu_memset_async(big, r, 32u << 20, s[0]));
		RT_OK(vnpu_event_record(e, s[0]));
		RT_OK(vnpu_event_record(e, s[2]));
		RT_OK(vnpu_device_synchronize());
		RT_OK(vnpu_event_query(e));
		RT_OK(vnpu_event_synchronize(e));
		RT_OK(vnpu_stream_wait_event(s[1], e));
		RT_OK(vnpu_memset_async(x, round, 64, s[1]));
		RT_OK(vnpu_stream_synchronize(s[1]));
		ck_assert_int_eq(byte_at(x), round);
	}
	RT_OK(vnpu_free(big));
	RT_OK(vnpu_free(x));
	RT_OK(vnpu_event_destroy(e));
	destroy_streams(s, 3);
}
END_TEST

/*
 * Query, synchronize and elapsed time look at the latest record only: an
 * earlier record still held back on s1 does not make them wait.
 */
START_TEST(latest_record_decides)
{
	vnpu_stream_t s[3];
	vnpu_event_t e, start;
	float ms = -1, ms_after = -1;

	distinct_streams(s, 3);
	RT_OK(vnpu_event_create(&e, 0));
	RT_OK(vnpu_event_create(&start, 0));
	gate_close(s[0], 1);
	RT_OK(vnpu_event_record(e, s[0]));
	ck_assert_int_eq(vnpu_event_query(e), VNPU_ERROR_NOT_READY);
	RT_OK(vnpu_event_record(start, s[2]));
	RT_OK(vnpu_event_record(e, s[2]));
	RT_OK(vnpu_event_synchronize(e));
	RT_OK(vnpu_event_query(e));
	RT_OK(vnpu_event_elapsed_time(&ms, start, e));
	ck_assert(ms >= 0.0f && ms < 1000.0f);
	/* A wait now is for the record on s3: s2 runs while s1 is held. */
	RT_OK(vnpu_stream_wait_event(s[1], e));
	RT_OK(vnpu_stream_synchronize(s[1]));
	ck_assert_int_eq(vnpu_stream_query(s[0]), VNPU_ERROR_NOT_READY);
	/* The held-back record retiring later changes nothing, not even
	 * the timestamp. */
	settle();
	gate_open(1);
	RT_OK(vnpu_stream_synchronize(s[0]));
	RT_OK(vnpu_event_elapsed_time(&ms_after, start, e));
	ck_assert_float_eq(ms_after, ms);
	RT_OK(vnpu_event_query(e));
	RT_OK(vnpu_event_destroy(e));
	RT_OK(vnpu_event_destroy(start));
	destroy_streams(s, 3);
}
END_TEST

/*
 * A wait depends on nothing recorded after it: if s2's wait were for e's
 * latest record at the time s2 runs, this would be a cycle (s3's record
 * waits for h, which s2 records after its wait).
 */
START_TEST(wait_ignores_later_records)
{
	vnpu_stream_t s[3];
	vnpu_event_t e, h;
	void *x, *y;

	distinct_streams(s, 3);
	RT_OK(vnpu_event_create(&e, VNPU_EVENT_DISABLE_TIMING));
	RT_OK(vnpu_event_create(&h, VNPU_EVENT_DISABLE_TIMING));
	RT_OK(vnpu_malloc(&x, 64));
	RT_OK(vnpu_malloc(&y, 64));
	RT_OK(vnpu_memset(y, 0, 64));
	gate_close(s[1], 2); /* s2 reaches its wait only after s3 recorded */
	RT_OK(vnpu_memset_async(x, 0x17, 64, s[0]));
	RT_OK(vnpu_event_record(e, s[0]));
	RT_OK(vnpu_stream_wait_event(s[1], e));
	RT_OK(vnpu_event_record(h, s[1]));
	RT_OK(vnpu_stream_wait_event(s[2], h));
	RT_OK(vnpu_event_record(e, s[2]));
	RT_OK(vnpu_memcpy_async(y, x, 64, VNPU_MEMCPY_D2D, s[1]));
	gate_open(2);
	RT_OK(vnpu_stream_synchronize(s[1]));
	RT_OK(vnpu_stream_synchronize(s[2]));
	ck_assert_int_eq(byte_at(y), 0x17);
	RT_OK(vnpu_free(x));
	RT_OK(vnpu_free(y));
	RT_OK(vnpu_event_destroy(e));
	RT_OK(vnpu_event_destroy(h));
	destroy_streams(s, 3);
}
END_TEST

/* Destroying an event never waits; its pending records retire safely,
 * and a new event never inherits anything of it. */
START_TEST(destroy_with_records_pending)
{
	vnpu_stream_t s[2];
	vnpu_event_t e, f;

	distinct_streams(s, 2);
	for (int round = 0; round < 50; round++) {
		RT_OK(vnpu_event_create(&e, 0));
		gate_close(s[0], 3 + round);
		RT_OK(vnpu_event_record(e, s[0]));
		RT_OK(vnpu_event_record(e, s[1]));
		RT_OK(vnpu_event_destroy(e));
		RT_ERR(vnpu_event_query(e), VNPU_ERROR_INVALID_HANDLE);
		RT_OK(vnpu_event_create(&f, 0));
		RT_OK(vnpu_event_query(f)); /* never recorded */
		RT_OK(vnpu_stream_wait_event(s[1], f));
		RT_OK(vnpu_stream_synchronize(s[1]));
		gate_open(3 + round);
		RT_OK(vnpu_event_destroy(f));
	}
	RT_OK(vnpu_device_synchronize());
	destroy_streams(s, 2);
}
END_TEST

/*
 * A record that never runs (a hang on its stream and the device reset,
 * sim test mode) releases the streams waiting for it and reports the
 * failure; the next record works.
 */
START_TEST(failed_record_releases_waiters)
{
	struct vnpu_device_props p;
	vnpu_stream_t s[2];
	vnpu_event_t e;
	void *x;
	vnpu_error_t err;

	RT_OK(vnpu_device_properties(0, &p));
	if (strcmp(p.backend, "sim") != 0)
		return; /* on drm a hang bans the context for good */
	distinct_streams(s, 2);
	RT_OK(vnpu_event_create(&e, 0));
	RT_OK(vnpu_malloc(&x, 64));
	err = vnpurt_test_inject(s[0], 1, 0, false);
	if (err == VNPU_ERROR_UNSUPPORTED)
		goto out;
	RT_OK(err);
	RT_OK(vnpu_event_record(e, s[0]));
	RT_OK(vnpu_stream_wait_event(s[1], e));
	RT_OK(vnpu_memset_async(x, 5, 64, s[1]));
	RT_ERR(vnpu_stream_synchronize(s[0]), VNPU_ERROR_DEVICE_RESET);
	/* s2 is released: its work ran, or was lost in the same reset. */
	err = vnpu_stream_synchronize(s[1]);
	ck_assert_msg(err == VNPU_SUCCESS || err == VNPU_ERROR_DEVICE_RESET,
		      "%s", vnpu_last_error_detail());
	RT_ERR(vnpu_event_synchronize(e), VNPU_ERROR_DEVICE_RESET);
	RT_ERR(vnpu_event_query(e), VNPU_ERROR_DEVICE_RESET);
	(void)vnpu_device_synchronize();
	RT_OK(vnpu_event_record(e, s[1]));
	RT_OK(vnpu_event_synchronize(e));
	RT_OK(vnpu_event_query(e));
out:
	RT_OK(vnpu_free(x));
	RT_OK(vnpu_event_destroy(e));
	destroy_streams(s, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-events");
	TCase *tc = tcase_create("events");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, gates_setup, gates_teardown);
	tcase_add_test(tc, rerecord_on_idle_stream_keeps_the_wait);
	tcase_add_test(tc, rerecord_gated);
	tcase_add_test(tc, wait_after_device_sync_finishes);
	tcase_add_test(tc, latest_record_decides);
	tcase_add_test(tc, wait_ignores_later_records);
	tcase_add_test(tc, destroy_with_records_pending);
	tcase_add_test(tc, failed_record_releases_waiters);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
