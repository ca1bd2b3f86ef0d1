// SPDX-License-Identifier: MIT
/* Copies of every kind, sync and async, staged and pinned; memset. */
#include "rt_check.h"

static void fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rt_rand(&seed);
}

START_TEST(round_trips)
{
	/* Sizes across the 4 MiB staging chunk, odd and tiny. */
	size_t sizes[] = {1, 15, 17, 4095, 4097, 1u << 20, (4u << 20) + 3,
			  (9u << 20) + 1};

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *a = malloc(n), *b = malloc(n), *pin, *pin2;
		void *d, *d2;

		fill_pattern(a, n, i + 1);
		RT_OK(vnpu_malloc(&d, n));
		RT_OK(vnpu_malloc(&d2, n + 100));
		RT_OK(vnpu_host_malloc((void **)&pin, n));
		RT_OK(vnpu_host_malloc((void **)&pin2, n));
		/* pageable H2D, D2D, pinned D2H */
		RT_OK(vnpu_memcpy(d, a, n, VNPU_MEMCPY_H2D));
		RT_OK(vnpu_memcpy((char *)d2 + 100, d, n, VNPU_MEMCPY_D2D));
		RT_OK(vnpu_memcpy(pin, (char *)d2 + 100, n, VNPU_MEMCPY_D2H));
		ck_assert_mem_eq(pin, a, n);
		/* pinned H2D, pageable D2H */
		fill_pattern(pin2, n, i + 100);
		RT_OK(vnpu_memcpy(d, pin2, n, VNPU_MEMCPY_H2D));
		memset(b, 0, n);
		RT_OK(vnpu_memcpy(b, d, n, VNPU_MEMCPY_D2H));
		ck_assert_mem_eq(b, pin2, n);
		/* H2H, pageable and pinned */
		RT_OK(vnpu_memcpy(b, a, n, VNPU_MEMCPY_H2H));
		ck_assert_mem_eq(b, a, n);
		RT_OK(vnpu_memcpy(pin, b, n, VNPU_MEMCPY_H2H));
		ck_assert_mem_eq(pin, a, n);
		RT_OK(vnpu_free(d));
		RT_OK(vnpu_free(d2));
		RT_OK(vnpu_host_free(pin));
		RT_OK(vnpu_host_free(pin2));
		free(a);
		free(b);
	}
}
END_TEST

START_TEST(async_copies_in_order)
{
	size_t n = (6u << 20) + 5;
	uint8_t *a = malloc(n), *b = malloc(n), *c = malloc(n);
	vnpu_stream_t s;
	void *d;

	fill_pattern(a, n, 3);
	fill_pattern(c, n, 4);
	RT_OK(vnpu_stream_create(&s, VNPU_STREAM_PRIORITY_LOW));
	RT_OK(vnpu_malloc(&d, n));
	/* The source may be reused once the call returns (staged). */
	RT_OK(vnpu_memcpy_async(d, a, n, VNPU_MEMCPY_H2D, s));
	memset(a, 0, n);
	RT_OK(vnpu_memcpy_async(b, d, n, VNPU_MEMCPY_D2H, s));
	RT_OK(vnpu_memcpy_async(d, c, n, VNPU_MEMCPY_H2D, s));
	RT_OK(vnpu_stream_synchronize(s));
	fill_pattern(a, n, 3);
	ck_assert_mem_eq(b, a, n);
	RT_OK(vnpu_memcpy(b, d, n, VNPU_MEMCPY_D2H));
	ck_assert_mem_eq(b, c, n);
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_stream_destroy(s));
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(copy_errors)
{
	uint8_t host[64], *pin;
	void *d, *freed;

	RT_OK(vnpu_malloc(&d, 64));
	RT_OK(vnpu_malloc(&freed, 64));
	RT_OK(vnpu_free(freed));
	RT_OK(vnpu_host_malloc((void **)&pin, 64));
	RT_ERR(vnpu_memcpy(NULL, host, 4, VNPU_MEMCPY_H2H),
	       VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_memcpy(d, NULL, 4, VNPU_MEMCPY_H2D),
	       VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_memcpy(d, host, 4, (enum vnpu_memcpy_kind)7),
	       VNPU_ERROR_INVALID_COPY_KIND);
	/* kind against the pointers */
	RT_ERR(vnpu_memcpy(host, d, 4, VNPU_MEMCPY_H2D),
	       VNPU_ERROR_INVALID_COPY_KIND);
	RT_ERR(vnpu_memcpy(d, host, 4, VNPU_MEMCPY_D2H),
	       VNPU_ERROR_INVALID_COPY_KIND);
	RT_ERR(vnpu_memcpy(d, d, 4, VNPU_MEMCPY_H2H),
	       VNPU_ERROR_INVALID_COPY_KIND);
	RT_ERR(vnpu_memcpy(d, host, 4, VNPU_MEMCPY_D2D),
	       VNPU_ERROR_INVALID_COPY_KIND);
	RT_ERR(vnpu_memcpy(pin, host, 4, VNPU_MEMCPY_H2D),
	       VNPU_ERROR_INVALID_COPY_KIND);
	RT_ERR(vnpu_memcpy(d, host, 4, VNPU_MEMCPY_H2H),
	       VNPU_ERROR_INVALID_COPY_KIND);
	/* freed, foreign, out of range */
	RT_ERR(vnpu_memcpy(freed, host, 4, VNPU_MEMCPY_H2D),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_ERR(vnpu_memcpy(host, freed, 4, VNPU_MEMCPY_D2H),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_ERR(vnpu_memcpy(d, host, 65, VNPU_MEMCPY_H2D),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_ERR(vnpu_memcpy((char *)d + 60, host, 8, VNPU_MEMCPY_H2D),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_ERR(vnpu_memcpy(d, d, SIZE_MAX, VNPU_MEMCPY_D2D),
	       VNPU_ERROR_INVALID_VALUE);
	/* size 0 is a no-op */
	RT_OK(vnpu_memcpy(d, host, 0, VNPU_MEMCPY_H2D));
	/* streams */
	RT_ERR(vnpu_memcpy_async(d, host, 4, VNPU_MEMCPY_H2D,
				 (vnpu_stream_t)(uintptr_t)0x1234),
	       VNPU_ERROR_INVALID_HANDLE);
	/* memset */
	RT_ERR(vnpu_memset(NULL, 0, 4), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_memset(host, 0, 4), VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_ERR(vnpu_memset(d, 0, 65), VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_ERR(vnpu_memset(freed, 0, 4), VNPU_ERROR_INVALID_DEVICE_POINTER);
	RT_OK(vnpu_memset(d, 0, 0));
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_host_free(pin));
}
END_TEST

START_TEST(memset_patterns)
{
	size_t n = 10000;
	uint8_t *h = malloc(n), *ref = malloc(n);
	vnpu_stream_t s;
	void *d;

	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_malloc(&d, n));
	memset(ref, 0x11, n);
	RT_OK(vnpu_memset(d, 0x11, n));
	/* unaligned start and odd size: byte-wide fill */
	RT_OK(vnpu_memset_async((char *)d + 3, 0x1ff, 17, s));
	memset(ref + 3, 0xff, 17);
	RT_OK(vnpu_memset_async((char *)d + 4096, 0x80, 4096, s));
	memset(ref + 4096, 0x80, 4096);
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpu_memcpy(h, d, n, VNPU_MEMCPY_D2H));
	ck_assert_mem_eq(h, ref, n);
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_stream_destroy(s));
	free(h);
	free(ref);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-copy");
	TCase *tc = tcase_create("copy");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, round_trips);
	tcase_add_test(tc, async_copies_in_order);
	tcase_add_test(tc, copy_errors);
	tcase_add_test(tc, memset_patterns);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
