// SPDX-License-Identifier: MIT
/*
 * Stream-ordered memory with cudaMallocAsync / cudaFreeAsync's rule: a
 * block freed on a stream is reused at once by later work of that stream
 * (its hardware queue runs in order), by other streams only once the work
 * before the free has run. Streams are held back with gates, so that "not
 * yet run" is certain, not a matter of timing.
 */
#include "rt_check.h"
#include "rt_gates.h"

static uint8_t byte_at(const void *dev)
{
	uint8_t b;

	RT_OK(vnpu_memcpy(&b, dev, 1, VNPU_MEMCPY_D2H));
	return b;
}

static struct vnpu_mem_stats stats(void)
{
	struct vnpu_mem_stats st;

	RT_OK(vnpu_mem_stats(&st));
	return st;
}

/* A small and a large block: both go back to their own stream at once,
 * while the work that used them still waits behind a closed gate. */
START_TEST(same_stream_reuses_at_once)
{
	static const size_t sizes[] = {1024, 3u << 20};
	vnpu_stream_t s;

	distinct_streams(&s, 1);
	for (int i = 0; i < 2; i++) {
		size_t n = sizes[i];
		struct vnpu_mem_stats before = stats(), st;
		void *p, *q;

		gate_close(s, i);
		RT_OK(vnpu_malloc_async(&p, n, s));
		RT_OK(vnpu_memset_async(p, 0x11, n, s));
		RT_OK(vnpu_free_async(p, s));
		st = stats();
		ck_assert_uint_eq(st.in_use, before.in_use);
		RT_OK(vnpu_malloc_async(&q, n, s));
		ck_assert_ptr_eq(q, p);
		ck_assert_int_eq(vnpu_stream_query(s), VNPU_ERROR_NOT_READY);
		RT_OK(vnpu_memset_async(q, 0x22, n, s));
		gate_open(i);
		RT_OK(vnpu_stream_synchronize(s));
		ck_assert_int_eq(byte_at(q), 0x22);
		ck_assert_int_eq(byte_at((uint8_t *)q + n - 1), 0x22);
		RT_OK(vnpu_free_async(q, s));
	}
	destroy_streams(&s, 1);
}
END_TEST

/* Another queue's stream, and vnpu_malloc, get the block only once the
 * work before the free has run. */
START_TEST(other_streams_wait_for_the_free)
{
	static const size_t sizes[] = {4096, 2u << 20};
	vnpu_stream_t s[2];

	distinct_streams(s, 2);
	for (int i = 0; i < 2; i++) {
		size_t n = sizes[i];
		void *p, *q, *r, *again;

		gate_close(s[0], i);
		RT_OK(vnpu_malloc_async(&p, n, s[0]));
		RT_OK(vnpu_memset_async(p, 0x33, n, s[0]));
		RT_OK(vnpu_free_async(p, s[0]));
		RT_OK(vnpu_malloc_async(&q, n, s[1]));
		RT_OK(vnpu_malloc(&r, n));
		ck_assert_ptr_ne(q, p);
		ck_assert_ptr_ne(r, p);
		RT_OK(vnpu_memset_async(q, 0x44, n, s[1]));
		RT_OK(vnpu_stream_synchronize(s[1]));
		ck_assert_int_eq(byte_at(q), 0x44);
		gate_open(i);
		RT_OK(vnpu_stream_synchronize(s[0]));
		/* The free's work has run: the block serves anyone. */
		RT_OK(vnpu_malloc_async(&again, n, s[1]));
		ck_assert_ptr_eq(again, p);
		RT_OK(vnpu_free_async(again, s[1]));
		RT_OK(vnpu_free_async(q, s[1]));
		RT_OK(vnpu_free(r));
	}
	destroy_streams(s, 2);
}
END_TEST

/* A large block serves a request from its size down to half of it; the
 * cache keeps it until it is emptied. The peak follows, and is reset. */
START_TEST(large_blocks_fit_and_are_released)
{
	struct vnpu_mem_stats base, st;
	vnpu_stream_t s;
	void *p, *q, *r;

	distinct_streams(&s, 1);
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpu_mem_empty_cache());
	base = stats();
	RT_OK(vnpu_malloc_async(&p, 4u << 20, s));
	RT_OK(vnpu_free_async(p, s));
	st = stats();
	ck_assert_uint_eq(st.reserved, base.reserved + (4u << 20));
	ck_assert_uint_eq(st.cached, base.cached + (4u << 20));
	ck_assert_uint_eq(st.in_use, base.in_use);
	RT_OK(vnpu_malloc_async(&q, (3u << 20) + 5, s));
	ck_assert_ptr_eq(q, p);
	RT_OK(vnpu_free_async(q, s));
	RT_OK(vnpu_malloc_async(&r, (3u << 19), s)); /* 1.5 MiB: too small */
	ck_assert_ptr_ne(r, p);
	RT_OK(vnpu_malloc_async(&q, (3u << 20) + 5, s));
	ck_assert_ptr_eq(q, p);
	RT_OK(vnpu_mem_reset_peak());
	st = stats();
	ck_assert_uint_eq(st.peak, st.in_use);
	ck_assert_uint_ge(st.peak, base.in_use + (3u << 20) + (3u << 19));
	RT_OK(vnpu_free_async(r, s));
	RT_OK(vnpu_free_async(q, s));
	RT_OK(vnpu_mem_reset_peak());
	st = stats();
	ck_assert_uint_eq(st.peak, base.in_use);
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpu_mem_empty_cache());
	st = stats();
	ck_assert_uint_eq(st.reserved, base.reserved);
	ck_assert_uint_eq(st.cached, base.cached);
	destroy_streams(&s, 1);
}
END_TEST

/* Pointers of either allocator go to either free; what is not a live
 * allocation's start is refused, and a freed block is no longer the
 * user's. */
START_TEST(bad_pointers_and_arguments)
{
	vnpu_stream_t s, dead;
	void *p, *q;
	int host;

	distinct_streams(&s, 1);
	RT_OK(vnpu_stream_create(&dead, 0));
	RT_OK(vnpu_stream_destroy(dead));
	RT_ERR(vnpu_malloc_async(&p, 256, dead), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_free_async(NULL, dead), VNPU_ERROR_INVALID_HANDLE);
	RT_ERR(vnpu_malloc_async(NULL, 256, s), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_malloc_async(&p, 0, s), VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_malloc_async(&p, SIZE_MAX, s), VNPU_ERROR_OUT_OF_MEMORY);
	RT_OK(vnpu_free_async(NULL, s));
	RT_ERR(vnpu_free_async(&host, s), VNPU_ERROR_INVALID_DEVICE_POINTER);

	RT_OK(vnpu_malloc_async(&p, 512, s));
	RT_ERR(vnpu_free_async((uint8_t *)p + 256, s),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_OK(vnpu_free_async(p, s));
	RT_ERR(vnpu_free_async(p, s), VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_ERR(vnpu_free(p), VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_ERR(vnpu_memset_async(p, 0, 512, s),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);

	RT_OK(vnpu_malloc_async(&p, 512, NULL)); /* the default stream */
	RT_OK(vnpu_malloc(&q, 8u << 20));
	RT_OK(vnpu_free(p));
	RT_OK(vnpu_free_async(q, s));
	destroy_streams(&s, 1);
}
END_TEST

/*
 * Many blocks of mixed sizes, allocated, written, read back and freed on
 * three streams (two share nothing, the default stream a third queue),
 * one stream held behind a gate at first: every read must see its own
 * block's value, whatever another stream reused.
 */
START_TEST(mixed_streams_keep_their_data)
{
	enum { ROUNDS = 300, MAXN = 96 * 1024 };
	vnpu_stream_t s[3];
	uint64_t seed = 7;
	uint8_t *host; /* pinned: a copy to it is never staged */
	uint8_t want[ROUNDS];
	size_t last[ROUNDS];

	distinct_streams(s, 2);
	s[2] = NULL;
	RT_OK(vnpu_host_malloc((void **)&host, (size_t)ROUNDS * MAXN));
	memset(host, 0, (size_t)ROUNDS * MAXN);
	gate_close(s[0], 0);
	for (int i = 0; i < ROUNDS; i++) {
		vnpu_stream_t st = s[rt_rand(&seed) % 3];
		size_t n = 256 + rt_rand(&seed) % (MAXN - 256), shown;
		void *p;

		if (i % 25 == 10) /* a large block; its first MAXN bytes read */
			n = (1u << 20) + rt_rand(&seed) % (2u << 20);
		shown = n < MAXN ? n : MAXN;
		want[i] = (uint8_t)(i + 1);
		last[i] = shown - 1;
		RT_OK(vnpu_malloc_async(&p, n, st));
		RT_OK(vnpu_memset_async(p, want[i], n, st));
		RT_OK(vnpu_memcpy_async(host + (size_t)i * MAXN, p, shown,
					VNPU_MEMCPY_D2H, st));
		RT_OK(vnpu_free_async(p, st));
		/* Held briefly: a gate counts against the device's time
		 * limit, and submissions through the driver in a TCG guest
		 * are slow. */
		if (i == 16)
			gate_open(0);
	}
	RT_OK(vnpu_device_synchronize());
	for (int i = 0; i < ROUNDS; i++) {
		const uint8_t *b = host + (size_t)i * MAXN;

		ck_assert_msg(b[0] == want[i] && b[last[i]] == want[i],
			      "block %d read %u and %u, wrote %u", i, b[0],
			      b[last[i]], want[i]);
	}
	RT_OK(vnpu_host_free(host));
	destroy_streams(s, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-stream-ordered-memory");
	TCase *tc = tcase_create("stream-ordered");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, gates_setup, gates_teardown);
	tcase_add_test(tc, same_stream_reuses_at_once);
	tcase_add_test(tc, other_streams_wait_for_the_free);
	tcase_add_test(tc, large_blocks_fit_and_are_released);
	tcase_add_test(tc, bad_pointers_and_arguments);
	tcase_add_test(tc, mixed_streams_keep_their_data);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
