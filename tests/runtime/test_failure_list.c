// SPDX-License-Identifier: MIT
/*
 * No failure of a queue is lost, however many retire before the runtime
 * takes them: the backend's list of failures grows, and when it cannot
 * (as if out of memory) a new failure is merged into the newest one. The
 * list is made tiny (vnpurt_test_failure_list) and more failures than it
 * holds retire at once: several streams share one hardware queue, each
 * with a rejected launch, separated by work that succeeds, all held back
 * by a gate. Needs VNPU_SIM_TEST_MODE=1.
 */
#include <time.h>

#include "rt_check.h"
#include "vnpurt_testing.h"

#define NBAD	  5
#define DONE_MARK 0x5a5a5a5au

/* Pinned: the gate word, and where the device copies DONE_MARK last. */
static uint64_t *gate;
static uint32_t *done;
/* Device memory: the rejected launches' buffer, the memsets' bytes, and
 * DONE_MARK. */
static float *buf;

static void setup(void)
{
	uint32_t mark = DONE_MARK;

	rt_setup();
	RT_OK(vnpu_host_malloc((void **)&gate, 4096));
	memset(gate, 0, 4096);
	done = (uint32_t *)(gate + 1);
	RT_OK(vnpu_malloc((void **)&buf, 4096));
	RT_OK(vnpu_memcpy(buf + 1000, &mark, 4, VNPU_MEMCPY_H2D));
}

static void teardown(void)
{
	/* Whatever a failed test left closed must not hang the teardown. */
	__atomic_store_n(gate, UINT64_MAX, __ATOMIC_RELEASE);
	vnpu_device_synchronize();
	vnpu_get_last_error();
	RT_OK(vnpu_free(buf));
	RT_OK(vnpu_host_free(gate));
	rt_teardown();
}

/* n streams on the default stream's hardware queue (streams beyond the
 * free queues share them). */
static void streams_on_default_queue(vnpu_stream_t *s, int n)
{
	vnpu_stream_t others[64];
	int nothers = 0, found = 0;
	unsigned dq, q;

	RT_OK(vnpurt_test_stream_queue(NULL, &dq));
	while (found < n) {
		vnpu_stream_t x;

		ck_assert_int_lt(nothers, 64);
		RT_OK(vnpu_stream_create(&x, 0));
		RT_OK(vnpurt_test_stream_queue(x, &q));
		if (q == dq)
			s[found++] = x;
		else
			others[nothers++] = x;
	}
	for (int i = 0; i < nothers; i++)
		RT_OK(vnpu_stream_destroy(others[i]));
}

/* A launch the device rejects (17 floats into a 16-float buffer). */
static void bad_launch(vnpu_stream_t s)
{
	struct vnpu_kp_fill p = rt_fill_params(17, 1);
	struct vnpu_launch_buffer b = {buf, 64, VNPU_ACCESS_WRITE};

	RT_OK(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), s));
}

/*
 * Behind a gate on the shared queue: a rejected launch on each of the
 * first nbad streams, each followed by a memset on the default stream
 * (which succeeds, and keeps the failures apart). Then the gate opens;
 * the runtime is called only once the device copied DONE_MARK behind
 * them all, so that every failure has retired before it takes any.
 */
static void fail_at_once(vnpu_stream_t *s, int nbad)
{
	struct timespec ts = {0, 100000};
	int polls = 0;

	__atomic_store_n(gate, 0, __ATOMIC_RELEASE);
	__atomic_store_n(done, 0, __ATOMIC_RELEASE);
	RT_OK(vnpurt_test_gate(NULL, gate, 1));
	for (int i = 0; i < nbad; i++) {
		bad_launch(s[i]);
		RT_OK(vnpu_memset_async(buf + 512, i, 64, NULL));
	}
	RT_OK(vnpu_memcpy_async(done, buf + 1000, 4, VNPU_MEMCPY_D2H, NULL));
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(done, __ATOMIC_ACQUIRE) != DONE_MARK) {
		ck_assert_int_lt(++polls, 100000);
		nanosleep(&ts, NULL);
	}
	RT_ERR(vnpu_device_synchronize(), VNPU_ERROR_LAUNCH_FAILURE);
}

static void expect_exact_failure(vnpu_stream_t s)
{
	RT_ERR(vnpu_stream_synchronize(s), VNPU_ERROR_LAUNCH_FAILURE);
	ck_assert_msg(strstr(vnpu_last_error_detail(), "launch fill #") &&
			      strstr(vnpu_last_error_detail(),
				     "rejected the kernel's arguments"),
		      "detail: %s", vnpu_last_error_detail());
}

START_TEST(full_list_grows)
{
	vnpu_stream_t s[NBAD];

	streams_on_default_queue(s, NBAD);
	RT_OK(vnpurt_test_failure_list(NULL, 2, true));
	/* Three, then five failures at once: the second round wraps around
	 * the list as it grows. */
	for (int round = 3; round <= NBAD; round += 2) {
		fail_at_once(s, round);
		for (int i = 0; i < round; i++)
			expect_exact_failure(s[i]);
		/* Nothing that succeeded is marked failed. */
		RT_OK(vnpu_stream_synchronize(NULL));
		for (int i = round; i < NBAD; i++)
			RT_OK(vnpu_stream_synchronize(s[i]));
	}
	for (int i = 0; i < NBAD; i++)
		RT_OK(vnpu_stream_destroy(s[i]));
}
END_TEST

START_TEST(full_list_merges)
{
	vnpu_stream_t s[NBAD];
	uint8_t byte;

	streams_on_default_queue(s, NBAD);
	RT_OK(vnpurt_test_failure_list(NULL, 2, false));
	fail_at_once(s, NBAD);
	/* The first two kept their own entries. */
	expect_exact_failure(s[0]);
	expect_exact_failure(s[1]);
	/* The rest were merged into the second: failed all the same. */
	for (int i = 2; i < NBAD; i++) {
		RT_ERR(vnpu_stream_synchronize(s[i]),
		       VNPU_ERROR_LAUNCH_FAILURE);
		ck_assert_msg(
			strstr(vnpu_last_error_detail(), "counted as failed"),
			"detail: %s", vnpu_last_error_detail());
	}
	/* The documented cost: work that ran between merged failures counts
	 * as failed too (it did run). */
	RT_ERR(vnpu_stream_synchronize(NULL), VNPU_ERROR_LAUNCH_FAILURE);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "memset #"));
	ck_assert_ptr_nonnull(
		strstr(vnpu_last_error_detail(), "counted as failed"));
	RT_OK(vnpu_memcpy(&byte, buf + 512, 1, VNPU_MEMCPY_D2H));
	ck_assert_int_eq(byte, NBAD - 1);
	/* Once taken, failures are exact again. */
	bad_launch(s[3]);
	expect_exact_failure(s[3]);
	for (int i = 0; i < NBAD; i++)
		RT_OK(vnpu_stream_destroy(s[i]));
}
END_TEST

START_TEST(hook_checks_its_arguments)
{
	RT_ERR(vnpurt_test_failure_list(NULL, 0, true),
	       VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpurt_test_failure_list((vnpu_stream_t)(uintptr_t)3, 4, true),
	       VNPU_ERROR_INVALID_HANDLE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-failure-list");
	TCase *tc = tcase_create("failures");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, full_list_grows);
	tcase_add_test(tc, full_list_merges);
	tcase_add_test(tc, hook_checks_its_arguments);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
