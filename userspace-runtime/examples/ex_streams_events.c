// SPDX-License-Identifier: MIT
/*
 * Streams and events: two streams run independently; an event recorded on
 * one and waited for by the other is the only way to order work across
 * them. Timing events measure device time between two points of a stream.
 *
 *   producer stream: fill buf with 1s (memset), record `ready`
 *   consumer stream: wait for `ready`, copy buf -> copy (D2D)
 *
 * Without the wait the consumer could copy before the fill ran.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vnpu_runtime.h>

#include "example_check.h"

#define BYTES (8u << 20)

int main(void)
{
	vnpu_stream_t producer, consumer;
	vnpu_event_t ready, t0, t1;
	unsigned char *host = malloc(BYTES);
	void *buf, *copy;
	vnpu_error_t q;
	float ms;
	size_t bad = 0;

	if (!host)
		return 1;
	CHECK(vnpu_init());
	CHECK(vnpu_malloc(&buf, BYTES));
	CHECK(vnpu_malloc(&copy, BYTES));
	CHECK(vnpu_memset(buf, 0, BYTES));

	CHECK(vnpu_stream_create(&producer, VNPU_STREAM_PRIORITY_LOW));
	CHECK(vnpu_stream_create(&consumer, VNPU_STREAM_PRIORITY_HIGH));
	/* `ready` only orders work: no timestamps needed */
	CHECK(vnpu_event_create(&ready, VNPU_EVENT_DISABLE_TIMING));
	CHECK(vnpu_event_create(&t0, VNPU_EVENT_DEFAULT));
	CHECK(vnpu_event_create(&t1, VNPU_EVENT_DEFAULT));

	/* An event never recorded counts as complete (as in CUDA). */
	printf("query of a never-recorded event: %s\n",
	       vnpu_error_string(vnpu_event_query(ready)));

	CHECK(vnpu_event_record(t0, producer));
	CHECK(vnpu_memset_async(buf, 1, BYTES, producer));
	CHECK(vnpu_event_record(ready, producer));
	CHECK(vnpu_event_record(t1, producer));

	/* The host does not block here; the consumer's queue does. */
	CHECK(vnpu_stream_wait_event(consumer, ready));
	CHECK(vnpu_memcpy_async(copy, buf, BYTES, VNPU_MEMCPY_D2D, consumer));

	/* Query does not wait: either answer is fine at this point. */
	q = vnpu_stream_query(consumer);
	printf("consumer right after submission: %s\n", vnpu_error_string(q));
	if (q != VNPU_SUCCESS && q != VNPU_ERROR_NOT_READY)
		CHECK(q);

	CHECK(vnpu_stream_synchronize(consumer));
	CHECK(vnpu_memcpy(host, copy, BYTES, VNPU_MEMCPY_D2H));
	for (size_t i = 0; i < BYTES; i++)
		bad += host[i] != 1;
	printf("consumer saw the producer's fill in all %u bytes: %s\n", BYTES,
	       bad ? "NO" : "yes");

	/* The consumer waited for `ready` only; t1 came after it on the
	 * producer, so wait for t1 itself before reading the time. */
	CHECK(vnpu_event_synchronize(t1));
	CHECK(vnpu_event_elapsed_time(&ms, t0, t1));
	printf("memset of %u bytes took %.3f ms of device time (%.2f GB/s)\n",
	       BYTES, ms, ms > 0 ? BYTES / (ms * 1e6) : 0.0);
	printf("both streams idle: %s, %s\n",
	       vnpu_error_string(vnpu_stream_query(producer)),
	       vnpu_error_string(vnpu_stream_query(consumer)));

	CHECK(vnpu_event_destroy(ready));
	CHECK(vnpu_event_destroy(t0));
	CHECK(vnpu_event_destroy(t1));
	/* a destroyed handle is refused, never used */
	printf("query of a destroyed event: %s\n",
	       vnpu_error_string(vnpu_event_query(ready)));
	CHECK(vnpu_stream_destroy(producer));
	CHECK(vnpu_stream_destroy(consumer));
	CHECK(vnpu_free(buf));
	CHECK(vnpu_free(copy));
	CHECK(vnpu_finalize());
	free(host);
	printf(bad ? "FAILED\n" : "OK\n");
	return bad != 0;
}
