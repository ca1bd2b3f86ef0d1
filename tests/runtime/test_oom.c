// SPDX-License-Identifier: MIT
/*
 * Out of device memory: the status and its detail, and the caching
 * allocator giving its cache back and retrying before it reports it. Sizes
 * are relative to what vnpu_mem_info() reports: the sim's VRAM, the
 * device's on drm, or the driver's per-user share of it.
 */
#include <stdio.h>

#include "rt_check.h"

#define MIB (1u << 20)

struct fill {
	void **p;
	size_t n, cap;
	size_t bytes;
};

/* The detail of the last error names the allocation and why it failed. */
static void assert_oom_detail(size_t size)
{
	const char *d = vnpu_last_error_detail();
	char want[64];

	snprintf(want, sizeof(want), "device allocation of %zu bytes", size);
	ck_assert_msg(strstr(d, want), "detail \"%s\" lacks \"%s\"", d, want);
	ck_assert_msg(strstr(d, "device memory exhausted") ||
			      strstr(d, "per-user limit"),
		      "detail \"%s\" says neither device memory exhausted "
		      "nor a per-user limit",
		      d);
}

/* Allocates blocks of sizes[i % nsizes] until the device says no, which
 * must be VNPU_ERROR_OUT_OF_MEMORY with its detail. */
static void fill_device(struct fill *f, const size_t *sizes, size_t nsizes)
{
	size_t free_b, total, min = sizes[0];
	vnpu_error_t err;

	for (size_t i = 1; i < nsizes; i++)
		if (sizes[i] < min)
			min = sizes[i];
	RT_OK(vnpu_mem_info(&free_b, &total));
	ck_assert_uint_gt(free_b, 0);
	/* Blocks share 2 MiB chunks at most: free / min + room. */
	f->cap = free_b / min + 64;
	f->p = calloc(f->cap, sizeof(*f->p));
	ck_assert_ptr_nonnull(f->p);
	f->n = f->bytes = 0;
	for (;;) {
		size_t size = sizes[f->n % nsizes];

		ck_assert_uint_lt(f->n, f->cap);
		err = vnpu_malloc(&f->p[f->n], size);
		if (err != VNPU_SUCCESS) {
			ck_assert_msg(err == VNPU_ERROR_OUT_OF_MEMORY,
				      "%zu bytes after %zu allocations: %s "
				      "(%s)",
				      size, f->n, vnpu_error_string(err),
				      vnpu_last_error_detail());
			ck_assert_int_eq(vnpu_get_last_error(),
					 VNPU_ERROR_OUT_OF_MEMORY);
			assert_oom_detail(size);
			break;
		}
		f->bytes += size;
		f->n++;
	}
	ck_assert_uint_gt(f->n, 0);
}

static void free_all(struct fill *f)
{
	for (size_t i = 0; i < f->n; i++)
		RT_OK(vnpu_free(f->p[i]));
	free(f->p);
	f->p = NULL;
	f->n = 0;
}

/* (a) Blocks of their own until out of memory: the status, its detail,
 * and vnpu_mem_info() agreeing that what it said was free was there. */
START_TEST(oom_status_and_detail)
{
	const size_t size = 4 * MIB;
	struct fill f;
	size_t free0, free1, total;

	RT_OK(vnpu_mem_empty_cache());
	RT_OK(vnpu_mem_info(&free0, &total));
	fill_device(&f, &size, 1);
	/* What was reported free could be had, and what is left is less
	 * than a block. */
	ck_assert_uint_ge(f.bytes + size, free0);
	RT_OK(vnpu_mem_info(&free1, &total));
	ck_assert_uint_lt(free1, size);
	free_all(&f);
	RT_OK(vnpu_mem_info(&free1, &total));
	ck_assert_uint_ge(free1, free0);
}
END_TEST

/* (b) 1 MiB blocks until out of memory, all freed: the cache holds the
 * device's memory, and allocations of other classes still succeed. */
START_TEST(freed_cache_serves_other_sizes)
{
	const size_t size = MIB;
	struct vnpu_mem_stats st;
	struct fill f;
	void *small, *mid, *big;

	RT_OK(vnpu_mem_empty_cache());
	fill_device(&f, &size, 1);
	free_all(&f);
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.in_use, 0);
	ck_assert_uint_ge(st.cached, f.bytes);
	RT_OK(vnpu_malloc(&small, 4096));
	RT_OK(vnpu_malloc(&mid, 64 << 10));
	RT_OK(vnpu_malloc(&big, 3 * MIB));
	/* The retry gave the cache back: of the 1 MiB class, nothing kept. */
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.in_use, 4096 + (64 << 10) + 3 * MIB);
	ck_assert_uint_lt(st.cached, st.reserved);
	ck_assert_uint_le(st.reserved, 2 * (2 * MIB) + 3 * MIB);
	RT_OK(vnpu_free(small));
	RT_OK(vnpu_free(mid));
	RT_OK(vnpu_free(big));
}
END_TEST

/* (c) The same with blocks of several classes and own BOs mixed: every
 * class's cached chunks go back. */
START_TEST(freed_cache_of_every_class)
{
	const size_t sizes[] = {MIB, 256 << 10, 5 * MIB, 4096, 700 << 10};
	size_t free0, total;
	struct fill f;
	void *a, *b;

	RT_OK(vnpu_mem_empty_cache());
	RT_OK(vnpu_mem_info(&free0, &total));
	fill_device(&f, sizes, sizeof(sizes) / sizeof(sizes[0]));
	free_all(&f);
	RT_OK(vnpu_malloc(&a, 128));
	RT_OK(vnpu_malloc(&b, 2 * MIB + 1));
	RT_OK(vnpu_free(a));
	RT_OK(vnpu_free(b));
	/* Everything went back: the whole device again in one piece. */
	fill_device(&f, &(size_t){8 * MIB}, 1);
	ck_assert_uint_gt(f.bytes + 8 * MIB, free0);
	free_all(&f);
}
END_TEST

/* (c) The cache goes back while streams still have work queued: the
 * release waits for it (the drm driver keeps a closed BO's memory while
 * its context has unfinished jobs, so closing at once would not help).
 * The work: GEMMs of A[M,K] x B[K,M] with A and B one broadcast float,
 * each far below the driver's time limit, together longer than closing
 * the cache's BOs. */
START_TEST(retry_while_streams_busy)
{
	enum { M = 256, K = 1 << 15 };
	const float one = 1.0f;
	const size_t size = MIB;
	struct vnpu_launch_buffer buf[2];
	struct vnpu_kp_gemm p;
	vnpu_stream_t s;
	struct fill f;
	float *dev_one, *out;
	void *small, *big;

	RT_OK(vnpu_mem_empty_cache());
	RT_OK(vnpu_stream_create(&s, VNPU_STREAM_PRIORITY_LOW));
	RT_OK(vnpu_malloc((void **)&dev_one, 4096));
	RT_OK(vnpu_malloc((void **)&out, 4ull * M * M));
	RT_OK(vnpu_memcpy(dev_one, &one, 4, VNPU_MEMCPY_H2D));
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.a = vnpu_tensor_f32_2d(0, M, K, 0, 0);
	p.b = vnpu_tensor_f32_2d(0, K, M, 0, 0);
	p.out = vnpu_tensor_f32_2d(1, M, M, M, 1);
	buf[0] = (struct vnpu_launch_buffer){dev_one, 4, VNPU_ACCESS_READ};
	buf[1] = (struct vnpu_launch_buffer){out, 4ull * M * M,
					     VNPU_ACCESS_WRITE};
	fill_device(&f, &size, 1);
	free_all(&f);
	for (int i = 0; i < 4; i++) {
		RT_OK(vnpu_launch_kernel("gemm", 1, buf, 2, &p, sizeof(p), s));
		RT_OK(vnpu_launch_kernel("gemm", 1, buf, 2, &p, sizeof(p),
					 NULL));
	}
	RT_OK(vnpu_malloc(&small, 4096));
	RT_OK(vnpu_malloc(&big, 3 * MIB));
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpu_device_synchronize());
	RT_OK(vnpu_free(small));
	RT_OK(vnpu_free(big));
	RT_OK(vnpu_free(out));
	RT_OK(vnpu_free(dev_one));
	RT_OK(vnpu_stream_destroy(s));
}
END_TEST

/* (c) vnpu_mem_empty_cache() gives a full cache back: the statistics and
 * vnpu_mem_info() agree. */
START_TEST(empty_cache_after_fill)
{
	const size_t size = 512 << 10;
	struct vnpu_mem_stats st;
	size_t free0, free1, total;
	struct fill f;

	RT_OK(vnpu_mem_empty_cache());
	RT_OK(vnpu_mem_info(&free0, &total));
	fill_device(&f, &size, 1);
	free_all(&f);
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.cached, st.reserved);
	RT_OK(vnpu_mem_info(&free1, &total));
	ck_assert_uint_lt(free1, 2 * MIB);
	RT_OK(vnpu_mem_empty_cache());
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.cached, 0);
	ck_assert_uint_eq(st.reserved, 0);
	RT_OK(vnpu_mem_info(&free1, &total));
	ck_assert_uint_ge(free1, free0);
}
END_TEST

/* (c) Out of memory before the device is asked: the status and detail. */
START_TEST(too_large_for_the_device)
{
	size_t free_b, total;
	void *p = NULL;

	RT_OK(vnpu_mem_info(&free_b, &total));
	RT_ERR(vnpu_malloc(&p, total + 1), VNPU_ERROR_OUT_OF_MEMORY);
	ck_assert_ptr_nonnull(
		strstr(vnpu_last_error_detail(), "more than the device"));
	RT_ERR(vnpu_host_malloc(&p, SIZE_MAX), VNPU_ERROR_OUT_OF_MEMORY);
	ck_assert_ptr_nonnull(
		strstr(vnpu_last_error_detail(), "pinned host allocation of"));
	ck_assert_ptr_nonnull(
		strstr(vnpu_last_error_detail(), "address space"));
	ck_assert_ptr_null(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-oom");
	TCase *tc = tcase_create("oom");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, oom_status_and_detail);
	tcase_add_test(tc, freed_cache_serves_other_sizes);
	tcase_add_test(tc, freed_cache_of_every_class);
	tcase_add_test(tc, retry_while_streams_busy);
	tcase_add_test(tc, empty_cache_after_fill);
	tcase_add_test(tc, too_large_for_the_device);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
