// SPDX-License-Identifier: MIT
/* Device and pinned memory, the caching allocator and its statistics. */
#include "rt_check.h"

START_TEST(malloc_errors)
{
	size_t free_b, total;
	void *p = NULL;
	int local;

	RT_ERR(vnpu_malloc(NULL, 16), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_malloc(&p, 0), VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_malloc(&p, SIZE_MAX), VNPU_ERROR_OUT_OF_MEMORY);
	RT_OK(vnpu_mem_info(&free_b, &total));
	RT_ERR(vnpu_malloc(&p, total + 1), VNPU_ERROR_OUT_OF_MEMORY);
	ck_assert_ptr_null(p); /* outputs only on success */
	RT_OK(vnpu_free(NULL));
	RT_ERR(vnpu_free(&local), VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_OK(vnpu_malloc(&p, 1000));
	RT_ERR(vnpu_free((char *)p + 8), VNPU_ERROR_INVALID_DEVICE_POINTER);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "inside"));
	RT_OK(vnpu_free(p));
	RT_ERR(vnpu_free(p), VNPU_ERROR_INVALID_DEVICE_POINTER);
	/* A device pointer is not pinned host memory and vice versa. */
	RT_OK(vnpu_malloc(&p, 64));
	RT_ERR(vnpu_host_free(p), VNPU_ERROR_INVALID_HOST_POINTER);
	RT_OK(vnpu_free(p));
}
END_TEST

START_TEST(alignment_and_distinct)
{
	void *p[64];
	size_t sizes[] = {1, 15, 17, 255, 256, 257, 4096, 100000, 1u << 20,
			  (1u << 20) + 1, 3u << 20};
	uint64_t seed = 7;

	for (int i = 0; i < 64; i++) {
		size_t sz = sizes[i % 11] + rt_rand(&seed) % 3;

		RT_OK(vnpu_malloc(&p[i], sz));
		ck_assert_uint_eq((uintptr_t)p[i] % 256, 0);
		for (int j = 0; j < i; j++)
			ck_assert_ptr_ne(p[i], p[j]);
	}
	for (int i = 0; i < 64; i++)
		RT_OK(vnpu_free(p[i]));
}
END_TEST

START_TEST(cache_statistics)
{
	struct vnpu_mem_stats st, st2;
	size_t free0, free1, total;
	void *a, *b, *big;

	RT_ERR(vnpu_mem_stats(NULL), VNPU_ERROR_NULL_POINTER);
	RT_OK(vnpu_mem_empty_cache());
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.in_use, 0);
	ck_assert_uint_eq(st.cached, 0);
	RT_OK(vnpu_mem_info(&free0, &total));
	RT_OK(vnpu_malloc(&a, 1000));
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.in_use, 1000);
	ck_assert_uint_eq(st.reserved, 2u << 20); /* one chunk */
	ck_assert_uint_eq(st.cached, (2u << 20) - 1024);
	RT_OK(vnpu_free(a));
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.in_use, 0);
	ck_assert_uint_eq(st.peak, 1000);
	ck_assert_uint_eq(st.cached, 2u << 20);
	/* The cache hands the same block back. */
	RT_OK(vnpu_malloc(&b, 900));
	ck_assert_ptr_eq(a, b);
	RT_OK(vnpu_mem_stats(&st2));
	ck_assert_uint_eq(st2.reserved, st.reserved);
	/* Large blocks are their own BOs, not cached. */
	RT_OK(vnpu_malloc(&big, 5u << 20));
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.in_use, 900 + (5u << 20));
	ck_assert_uint_eq(st.peak, 900 + (5u << 20));
	ck_assert_uint_eq(st.reserved, (2u << 20) + (5u << 20));
	RT_OK(vnpu_free(big));
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.reserved, 2u << 20);
	RT_OK(vnpu_free(b));
	RT_OK(vnpu_mem_info(&free1, &total));
	ck_assert_uint_eq(free1, free0 - (2u << 20));
	RT_OK(vnpu_mem_empty_cache());
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.cached, 0);
	ck_assert_uint_eq(st.reserved, 0);
	RT_OK(vnpu_mem_info(&free1, &total));
	ck_assert_uint_eq(free1, free0);
}
END_TEST

START_TEST(out_of_memory_then_recover)
{
	const size_t size = 10u << 20;
	size_t free_b, total, n = 0, cap;
	vnpu_error_t err;
	struct vnpu_mem_stats st;
	void **p;

	/* 10 MiB blocks run out, precisely: of what the runtime reports
	 * free (the sim's VRAM, or the driver's per-user share of it). */
	RT_OK(vnpu_mem_empty_cache());
	RT_OK(vnpu_mem_info(&free_b, &total));
	cap = free_b / size + 2;
	p = calloc(cap, sizeof(*p));
	ck_assert_ptr_nonnull(p);
	while (n < cap && (err = vnpu_malloc(&p[n], size)) == VNPU_SUCCESS)
		n++;
	ck_assert_int_eq(err, VNPU_ERROR_OUT_OF_MEMORY);
	ck_assert_uint_ge(n, free_b / size);
	ck_assert_uint_gt(n, 1);
	vnpu_get_last_error();
	for (size_t i = 0; i < n; i++)
		RT_OK(vnpu_free(p[i]));
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.in_use, 0);
	/* Freed memory coalesced: one allocation of all of it. */
	RT_OK(vnpu_malloc(&p[0], n * size));
	RT_OK(vnpu_free(p[0]));
	free(p);
}
END_TEST

START_TEST(pinned_host_memory)
{
	void *h = NULL, *h2;
	int local;

	RT_ERR(vnpu_host_malloc(NULL, 10), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_host_malloc(&h, 0), VNPU_ERROR_INVALID_VALUE);
	RT_OK(vnpu_host_malloc(&h, 10000));
	ck_assert_uint_eq((uintptr_t)h % 4096, 0);
	memset(h, 0x5a, 10000); /* host-writable */
	RT_OK(vnpu_host_malloc(&h2, 1));
	RT_ERR(vnpu_host_free(&local), VNPU_ERROR_INVALID_HOST_POINTER);
	RT_ERR(vnpu_host_free((char *)h + 1), VNPU_ERROR_INVALID_HOST_POINTER);
	RT_ERR(vnpu_free(h), VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_OK(vnpu_host_free(h));
	RT_ERR(vnpu_host_free(h), VNPU_ERROR_INVALID_HOST_POINTER);
	RT_OK(vnpu_host_free(NULL));
	RT_OK(vnpu_host_free(h2));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-memory");
	TCase *tc = tcase_create("memory");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, malloc_errors);
	tcase_add_test(tc, alignment_and_distinct);
	tcase_add_test(tc, cache_statistics);
	tcase_add_test(tc, out_of_memory_then_recover);
	tcase_add_test(tc, pinned_host_memory);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
