// SPDX-License-Identifier: MIT
/* Copies of every kind, sync and async, staged and pinned; memset. */
#include <stdio.h>

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

/* A pinned side that runs past its block is refused, never staged: the
 * neighbouring block stays as it was. */
START_TEST(pinned_block_bounds)
{
	uint8_t *pa, *pb;
	void *d;

	RT_OK(vnpu_host_malloc((void **)&pa, 4096));
	RT_OK(vnpu_host_malloc((void **)&pb, 4096));
	RT_OK(vnpu_malloc(&d, 1u << 17));
	RT_OK(vnpu_memset(d, 0x11, 1u << 17));
	memset(pb, 0x5a, 4096);
	RT_ERR(vnpu_memcpy(pa, d, 4097, VNPU_MEMCPY_D2H),
	       VNPU_ERROR_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "dst"));
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "pinned block"));
	RT_ERR(vnpu_memcpy(pa, d, 1u << 16, VNPU_MEMCPY_D2H),
	       VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_memcpy_async(pa + 100, d, 4000, VNPU_MEMCPY_D2H, NULL),
	       VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_memcpy(d, pa, 4097, VNPU_MEMCPY_H2D),
	       VNPU_ERROR_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "src"));
	RT_ERR(vnpu_memcpy(pb, pa + 1, 4096, VNPU_MEMCPY_H2H),
	       VNPU_ERROR_INVALID_VALUE);
	RT_OK(vnpu_device_synchronize());
	for (int i = 0; i < 4096; i++)
		ck_assert_int_eq(pb[i], 0x5a);
	/* The whole block, and its last byte, are fine. */
	RT_OK(vnpu_memcpy(pa, d, 4096, VNPU_MEMCPY_D2H));
	RT_OK(vnpu_memcpy(pa + 4095, d, 1, VNPU_MEMCPY_D2H));
	ck_assert_int_eq(pa[0], 0x11);
	ck_assert_int_eq(pa[4095], 0x11);
	for (int i = 0; i < 4096; i++)
		ck_assert_int_eq(pb[i], 0x5a);
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_host_free(pa));
	RT_OK(vnpu_host_free(pb));
}
END_TEST

/* The header: a failing call sets the last error. So a call that succeeds
 * leaves it (and its detail) as the last failure left them. */
START_TEST(success_leaves_the_last_error)
{
	uint8_t host[256], *pin;
	void *d, *d2;
	vnpu_stream_t s;
	vnpu_event_t e0, e1;
	vnpu_tensor_desc_t nd, nz;
	float ms;
	char detail[320];
	struct vnpu_kp_fill fp = rt_fill_params(16, 2.0);
	struct vnpu_launch_buffer b;

	RT_OK(vnpu_malloc(&d, 4096));
	RT_OK(vnpu_malloc(&d2, 4096));
	RT_OK(vnpu_host_malloc((void **)&pin, 4096));
	ck_assert_int_eq(vnpu_memset(NULL, 0, 4), VNPU_ERROR_NULL_POINTER);
	snprintf(detail, sizeof(detail), "%s", vnpu_last_error_detail());
#define KEEPS(call)                                                        \
	do {                                                               \
		RT_OK(call);                                               \
		ck_assert_msg(vnpu_peek_last_error() ==                    \
				      VNPU_ERROR_NULL_POINTER,             \
			      "%s changed the last error to %s", #call,    \
			      vnpu_error_string(vnpu_peek_last_error()));  \
		ck_assert_msg(strcmp(vnpu_last_error_detail(), detail) == 0, \
			      "%s changed the detail to '%s'", #call,      \
			      vnpu_last_error_detail());                   \
	} while (0)
	KEEPS(vnpu_memcpy(d, host, sizeof(host), VNPU_MEMCPY_H2D));
	KEEPS(vnpu_memcpy(host, d, sizeof(host), VNPU_MEMCPY_D2H));
	KEEPS(vnpu_memcpy(d, pin, 4096, VNPU_MEMCPY_H2D));
	KEEPS(vnpu_memcpy(pin, d, 4096, VNPU_MEMCPY_D2H));
	KEEPS(vnpu_memcpy(pin + 100, d, 100, VNPU_MEMCPY_D2H));
	KEEPS(vnpu_memcpy(d2, d, 4096, VNPU_MEMCPY_D2D));
	KEEPS(vnpu_memcpy(host, pin, 64, VNPU_MEMCPY_H2H));
	KEEPS(vnpu_memset(d, 3, 4096));
	KEEPS(vnpu_stream_create(&s, 0));
	KEEPS(vnpu_event_create(&e0, 0));
	KEEPS(vnpu_event_create(&e1, 0));
	KEEPS(vnpu_event_record(e0, s));
	b = (struct vnpu_launch_buffer){d, 64, VNPU_ACCESS_WRITE};
	KEEPS(vnpu_launch_kernel("fill", 1, &b, 1, &fp, sizeof(fp), s));
	KEEPS(vnpu_memcpy_async(host, d, 64, VNPU_MEMCPY_D2H, s));
	KEEPS(vnpu_event_record(e1, s));
	KEEPS(vnpu_stream_wait_event(NULL, e1));
	KEEPS(vnpu_event_synchronize(e1));
	KEEPS(vnpu_event_query(e1));
	KEEPS(vnpu_event_elapsed_time(&ms, e0, e1));
	KEEPS(vnpu_stream_synchronize(s));
	KEEPS(vnpu_stream_query(s));
	KEEPS(vnpu_tensor_desc_create(&nd, VNPU_DTYPE_F32, 2,
				      (int64_t[]){16, 16}, VNPU_FORMAT_ND));
	KEEPS(vnpu_tensor_desc_create(&nz, VNPU_DTYPE_F32, 2,
				      (int64_t[]){16, 16},
				      VNPU_FORMAT_FRACTAL_NZ));
	KEEPS(vnpu_format_cast(nd, d, nz, d2, s));
	KEEPS(vnpu_format_cast(nz, d2, nd, d, s));
	KEEPS(vnpu_device_synchronize());
	KEEPS(vnpu_tensor_desc_destroy(nd));
	KEEPS(vnpu_tensor_desc_destroy(nz));
	KEEPS(vnpu_event_destroy(e0));
	KEEPS(vnpu_event_destroy(e1));
	KEEPS(vnpu_stream_destroy(s));
	KEEPS(vnpu_free(d2));
	KEEPS(vnpu_free(d));
	KEEPS(vnpu_host_free(pin));
#undef KEEPS
	ck_assert_int_eq(vnpu_get_last_error(), VNPU_ERROR_NULL_POINTER);
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
	tcase_add_test(tc, pinned_block_bounds);
	tcase_add_test(tc, success_leaves_the_last_error);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
