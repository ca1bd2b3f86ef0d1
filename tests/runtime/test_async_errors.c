// SPDX-License-Identifier: MIT
/* Asynchronous errors: MMU faults, hangs and resets are reported by the
 * next synchronize/query of the stream, name the failing operation, and
 * the device works afterwards. Needs VNPU_SIM_TEST_MODE=1. */
#include "rt_check.h"
#include "vnpu/hw_cmd.h"
#include "vnpurt_testing.h"

static void check_works(vnpu_stream_t s, float v)
{
	float *d, h[256];

	RT_OK(vnpu_malloc((void **)&d, sizeof(h)));
	RT_OK(rt_fill(d, 256, v, s));
	RT_OK(vnpu_memcpy_async(h, d, sizeof(h), VNPU_MEMCPY_D2H, s));
	RT_OK(vnpu_stream_synchronize(s));
	for (int i = 0; i < 256; i++)
		ck_assert_float_eq(h[i], v);
	RT_OK(vnpu_free(d));
}

START_TEST(mmu_fault_reported_once_then_recovers)
{
	vnpu_stream_t s, other;

	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_stream_create(&other, 0));
	check_works(s, 1);
	RT_OK(vnpurt_test_inject(s, VNPU_TEST_MMU_FAULT, 0x10000, true));
	RT_ERR(vnpu_stream_synchronize(s), VNPU_ERROR_MMU_FAULT);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(),
				     "MMU fault at VA 0x10000"));
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "write"));
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "not mapped"));
	RT_OK(vnpu_stream_synchronize(s));
	check_works(s, 2);
	/* The other stream had nothing running: nothing to report. */
	RT_OK(vnpu_stream_synchronize(other));
	/* Reported by query too, and by device synchronize. */
	RT_OK(vnpurt_test_inject(s, VNPU_TEST_MMU_FAULT, 1ull << 40, false));
	vnpu_error_t q;

	while ((q = vnpu_stream_query(s)) == VNPU_ERROR_NOT_READY)
		;
	ck_assert_int_eq(q, VNPU_ERROR_MMU_FAULT);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "VA beyond"));
	RT_ERR(vnpu_device_synchronize(), VNPU_ERROR_MMU_FAULT);
	RT_OK(vnpu_device_synchronize());
	check_works(s, 3);
	check_works(other, 4);
	RT_OK(vnpu_stream_destroy(s));
	RT_OK(vnpu_stream_destroy(other));
}
END_TEST

START_TEST(fault_names_the_launch)
{
	vnpu_stream_t s;
	float *d;

	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_malloc((void **)&d, 4096));
	RT_OK(rt_fill(d, 1024, 1, s));
	RT_OK(vnpurt_test_inject(s, VNPU_TEST_MMU_FAULT, 0x20000, false));
	/* Work queued behind the fault may be lost; the first error is the
	 * one reported. */
	RT_OK(rt_fill(d, 1024, 2, s));
	RT_ERR(vnpu_stream_synchronize(s), VNPU_ERROR_MMU_FAULT);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "test inject 2 #"));
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "read"));
	check_works(s, 5);
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_stream_destroy(s));
}
END_TEST

START_TEST(hang_resets_the_device)
{
	vnpu_stream_t s, t;
	vnpu_event_t e;
	uint32_t resets0, resets1;
	float *d, h[64];

	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_stream_create(&t, 0));
	RT_OK(vnpu_event_create(&e, 0));
	RT_OK(vnpu_malloc((void **)&d, sizeof(h)));
	RT_OK(rt_fill(d, 64, 6, s));
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpurt_test_reset_count(&resets0));
	RT_OK(vnpurt_test_inject(s, VNPU_TEST_HANG, 0, false));
	RT_OK(rt_fill(d, 64, 7, s));
	RT_OK(vnpu_event_record(e, s));
	/* t waits for an event that the reset cancels: released. */
	RT_OK(vnpu_stream_wait_event(t, e));
	RT_OK(rt_fill(d, 64, 8, t));
	RT_ERR(vnpu_stream_synchronize(s), VNPU_ERROR_DEVICE_RESET);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "test inject 1"));
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "reset"));
	RT_ERR(vnpu_event_synchronize(e), VNPU_ERROR_DEVICE_RESET);
	vnpu_stream_synchronize(t); /* its wait may have been lost too */
	vnpu_get_last_error();
	RT_OK(vnpurt_test_reset_count(&resets1));
	ck_assert_uint_eq(resets1, resets0 + 1);
	/* VRAM survives a reset; later work runs. */
	RT_OK(vnpu_memcpy(h, d, sizeof(h), VNPU_MEMCPY_D2H));
	for (int i = 0; i < 64; i++)
		ck_assert(h[i] == 6.0f || h[i] == 8.0f);
	check_works(s, 9);
	check_works(t, 10);
	RT_OK(vnpu_event_record(e, s));
	RT_OK(vnpu_event_synchronize(e));
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_event_destroy(e));
	RT_OK(vnpu_stream_destroy(s));
	RT_OK(vnpu_stream_destroy(t));
}
END_TEST

START_TEST(fatal_and_lost_interrupt)
{
	vnpu_stream_t s;

	RT_OK(vnpu_stream_create(&s, 0));
	/* A lost interrupt only delays the waiter. */
	RT_OK(vnpurt_test_inject(s, VNPU_TEST_LOST_IRQ, 0, false));
	check_works(s, 11);
	RT_OK(vnpurt_test_inject(s, VNPU_TEST_FATAL, 0, false));
	RT_ERR(vnpu_stream_synchronize(s), VNPU_ERROR_DEVICE_RESET);
	check_works(s, 12);
	RT_ERR(vnpurt_test_inject((vnpu_stream_t)(uintptr_t)3, 1, 0, false),
	       VNPU_ERROR_INVALID_HANDLE);
	RT_OK(vnpu_stream_destroy(s));
}
END_TEST

START_TEST(launch_blocking_reports_at_once)
{
	struct vnpu_kp_fill p = rt_fill_params(17, 1);
	struct vnpu_launch_buffer b;
	float *d;

	RT_OK(vnpu_finalize());
	setenv("VNPU_LAUNCH_BLOCKING", "1", 1);
	RT_OK(vnpu_init());
	unsetenv("VNPU_LAUNCH_BLOCKING");
	RT_OK(vnpu_malloc((void **)&d, 64));
	b.ptr = d;
	b.size = 64;
	b.access = VNPU_ACCESS_WRITE;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_LAUNCH_FAILURE);
	RT_OK(vnpu_stream_query(NULL)); /* already reported */
	p.out.sizes[0] = 16;
	RT_OK(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL));
	RT_OK(vnpu_stream_query(NULL)); /* done on return */
	RT_OK(vnpu_free(d));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-async-errors");
	TCase *tc = tcase_create("async");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, mmu_fault_reported_once_then_recovers);
	tcase_add_test(tc, fault_names_the_launch);
	tcase_add_test(tc, hang_resets_the_device);
	tcase_add_test(tc, fatal_and_lost_interrupt);
	tcase_add_test(tc, launch_blocking_reports_at_once);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
