/* SPDX-License-Identifier: MIT */
/*
 * Gates for the runtime tests: a stream's hardware queue waits, on the
 * device, for a pinned host word the test opens, so that tests hold work
 * back deterministically instead of by timing. A fixture: gates_setup and
 * gates_teardown (which opens every gate a failed test left closed).
 */
#ifndef RT_GATES_H
#define RT_GATES_H

#include "rt_check.h"
#include "vnpurt_testing.h"

/* Gates: 8-byte words in one pinned block; open = store 1. */
static uint64_t *gates;

static inline void gates_setup(void)
{
	rt_setup();
	RT_OK(vnpu_host_malloc((void **)&gates, 4096));
	memset(gates, 0, 4096);
}

static inline void gates_teardown(void)
{
	/* Whatever a failed test left closed must not hang the teardown. */
	for (int i = 0; i < 512; i++)
		__atomic_store_n(&gates[i], UINT64_MAX, __ATOMIC_RELEASE);
	RT_OK(vnpu_device_synchronize());
	RT_OK(vnpu_host_free(gates));
	rt_teardown();
}

static inline void gate_close(vnpu_stream_t s, int g)
{
	RT_OK(vnpurt_test_gate(s, &gates[g], 1));
}

static inline void gate_open(int g)
{
	__atomic_store_n(&gates[g], 1, __ATOMIC_RELEASE);
}

/* Streams on distinct hardware queues, so that a gate holds back only the
 * stream it is on. */
static inline void distinct_streams(vnpu_stream_t *s, int n)
{
	unsigned q[16], dq;

	ck_assert_int_le(n, 16);
	RT_OK(vnpurt_test_stream_queue(NULL, &dq));
	for (int i = 0; i < n; i++) {
		RT_OK(vnpu_stream_create(&s[i], 0));
		RT_OK(vnpurt_test_stream_queue(s[i], &q[i]));
		ck_assert_msg(q[i] != dq, "stream %d shares the default queue",
			      i);
		for (int j = 0; j < i; j++)
			ck_assert_msg(q[i] != q[j],
				      "streams %d and %d share queue %u", j, i,
				      q[i]);
	}
}

static inline void destroy_streams(vnpu_stream_t *s, int n)
{
	for (int i = 0; i < n; i++)
		RT_OK(vnpu_stream_destroy(s[i]));
}

#endif /* RT_GATES_H */
