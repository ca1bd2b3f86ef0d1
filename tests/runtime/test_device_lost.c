// SPDX-License-Identifier: MIT
/* A device that does not come back after a reset is lost: the work that
 * was pending fails, every later operation fails with the same error and
 * a detail saying why, nothing waits for a queue that will never run, and
 * only cleanup still works. Needs VNPU_SIM_TEST_MODE=1. */
#include <pthread.h>
#include <stdio.h>

#include "rt_check.h"
#include "vnpu/hw_cmd.h"
#include "vnpurt_testing.h"

static uint64_t *gates;

static void setup(void)
{
	rt_setup();
	RT_OK(vnpu_host_malloc((void **)&gates, 4096));
	memset(gates, 0, 4096);
}

static void teardown(void)
{
	RT_OK(vnpu_host_free(gates));
	rt_teardown();
}

/* The call fails with DEVICE_RESET, and its detail contains `text`. */
#define LOST(call, text)                                                       \
	do {                                                                   \
		RT_ERR(call, VNPU_ERROR_DEVICE_RESET);                         \
		ck_assert_msg(strstr(vnpu_last_error_detail(), text),          \
			      "%s: detail \"%s\" lacks \"%s\"", #call,         \
			      vnpu_last_error_detail(), text);                 \
	} while (0)

START_TEST(failed_reboot_loses_the_device)
{
	vnpu_stream_t s, t, u;
	vnpu_event_t e, e2;
	uint32_t resets0, resets1;
	float *d, h[64];
	void *p;

	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_stream_create(&t, 0));
	RT_OK(vnpu_event_create(&e, 0));
	RT_OK(vnpu_malloc((void **)&d, sizeof(h)));
	RT_OK(rt_fill(d, 64, 1, s));
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpurt_test_reset_count(&resets0));
	RT_OK(vnpurt_test_corrupt_firmware());
	/* Pending when the device hangs: work on s, and on t work that waits
	 * for s. The reset that follows cannot boot the device again. */
	RT_OK(vnpurt_test_inject(s, VNPU_TEST_HANG, 0, false));
	RT_OK(rt_fill(d, 64, 2, s));
	RT_OK(vnpu_event_record(e, s));
	RT_OK(vnpu_stream_wait_event(t, e));
	RT_OK(rt_fill(d, 64, 3, t));
	/* The pending work fails, saying that the device is gone and why. */
	LOST(vnpu_stream_synchronize(s), "test inject 1 #");
	ck_assert_ptr_nonnull(
		strstr(vnpu_last_error_detail(), "refused its firmware"));
	LOST(vnpu_stream_synchronize(t), "BOOT_STATUS 0x");
	LOST(vnpu_event_synchronize(e), "device 0 is lost");
	/* For good: every later operation fails the same way. */
	LOST(vnpu_stream_synchronize(s), "stream ");
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(),
				     "device 0 is lost: it hung or failed"));
	LOST(vnpu_stream_query(t), "device 0 is lost");
	/* The device's first failure, once; then the loss. */
	LOST(vnpu_device_synchronize(), "test inject 1 #");
	LOST(vnpu_device_synchronize(), "device synchronize: device 0 is lost");
	LOST(rt_fill(d, 64, 4, s), "launch fill: device 0 is lost");
	LOST(vnpu_memset(d, 0, sizeof(h)), "memset: device 0 is lost");
	LOST(vnpu_memset_async(d, 0, sizeof(h), t), "memset");
	LOST(vnpu_memcpy(h, d, sizeof(h), VNPU_MEMCPY_D2H), "memcpy D2H");
	LOST(vnpu_memcpy_async(d, h, sizeof(h), VNPU_MEMCPY_H2D, s),
	     "memcpy H2D");
	LOST(vnpu_event_record(e, t), "event record");
	LOST(vnpu_event_query(e), "the event's record did not run: device 0");
	RT_OK(vnpu_event_create(&e2, 0));
	LOST(vnpu_event_query(e2), "event query: device 0 is lost");
	LOST(vnpu_event_synchronize(e2), "event synchronize: device 0");
	RT_OK(vnpu_event_destroy(e2));
	LOST(vnpu_stream_wait_event(s, e), "wait event");
	LOST(vnpu_malloc(&p, 64), "device allocation");
	LOST(vnpu_host_malloc(&p, 64), "pinned host allocation");
	LOST(vnpu_stream_create(&u, 0), "stream create");
	/* It is not reset again and again. */
	RT_OK(vnpurt_test_reset_count(&resets1));
	ck_assert_uint_eq(resets1, resets0 + 1);
	/* Cleanup works. */
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_event_destroy(e));
	RT_OK(vnpu_stream_destroy(s));
	RT_OK(vnpu_stream_destroy(t));
	/* A new session has a new device. */
	RT_OK(vnpu_finalize());
	RT_OK(vnpu_init());
	RT_OK(vnpu_host_malloc((void **)&gates, 4096));
	RT_OK(vnpu_malloc((void **)&d, sizeof(h)));
	RT_OK(rt_fill(d, 64, 5, NULL));
	RT_OK(vnpu_memcpy(h, d, sizeof(h), VNPU_MEMCPY_D2H));
	for (int i = 0; i < 64; i++)
		ck_assert_float_eq(h[i], 5.0f);
	RT_OK(vnpu_free(d));
}
END_TEST

struct sync_arg {
	vnpu_stream_t s;
	vnpu_error_t err;
	char detail[320];
};

static void *sync_thread(void *p)
{
	struct sync_arg *a = p;

	a->err = vnpu_stream_synchronize(a->s);
	snprintf(a->detail, sizeof(a->detail), "%s", vnpu_last_error_detail());
	return NULL;
}

/*
 * Threads already waiting for queues held by gates that nobody opens are
 * released when the device is lost: their queues will never run.
 */
START_TEST(waiters_are_released)
{
	enum { N = 3 };
	struct sync_arg args[N];
	pthread_t th[N];
	vnpu_stream_t s;
	float *d;

	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_malloc((void **)&d, 256));
	for (int i = 0; i < N; i++) {
		RT_OK(vnpu_stream_create(&args[i].s, 0));
		RT_OK(vnpurt_test_gate(args[i].s, &gates[i], 1));
		RT_OK(rt_fill(d, 64, i, args[i].s));
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, sync_thread, &args[i]), 0);
	}
	RT_OK(vnpurt_test_corrupt_firmware());
	RT_OK(vnpurt_test_inject(s, VNPU_TEST_FATAL, 0, false));
	LOST(vnpu_stream_synchronize(s), "refused its firmware");
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(args[i].err, VNPU_ERROR_DEVICE_RESET);
		ck_assert_msg(strstr(args[i].detail, "test gate #") &&
				      strstr(args[i].detail, "BOOT_STATUS"),
			      "detail: %s", args[i].detail);
		RT_OK(vnpu_stream_destroy(args[i].s));
	}
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_stream_destroy(s));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-device-lost");
	TCase *tc = tcase_create("lost");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, failed_reboot_loses_the_device);
	tcase_add_test(tc, waiters_are_released);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
