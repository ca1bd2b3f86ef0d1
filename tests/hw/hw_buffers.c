// SPDX-License-Identifier: MIT
/*
 * hw suite, category 4: buffer lifecycle. VRAM and system BOs: create,
 * BO_INFO, mmap, CPU patterns read back, the device copying patterns
 * between them (checked through the mappings), VAs distinct and guarded,
 * VRAM zeroed on creation, double close, closing while mapped, and a leak
 * baseline: VRAM use and allocator blocks (debugfs bos, VRAM_USED) equal
 * before and after each test's BOs are gone.
 */
#include "hw_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct leak_base {
	uint64_t used, blocks, param_used;
};

static void leak_baseline(struct leak_base *b)
{
	int fd = hw_open();

	ck_assert_int_eq(hw_vram_stats(&b->used, &b->blocks), 0);
	b->param_used = hw_param(fd, DRM_VNPU_PARAM_VRAM_USED);
	close(fd);
}

static void leak_check(const struct leak_base *b)
{
	struct leak_base now;

	/* Jobs still queued at close hold their BOs until the scheduler
	 * frees them, just after the last one retires: give that up to 2 s;
	 * a real leak stays. */
	for (int i = 0; i < 200; i++) {
		leak_baseline(&now);
		if (now.used == b->used && now.blocks == b->blocks &&
		    now.param_used == b->param_used)
			break;
		usleep(10000);
	}
	ck_assert_uint_eq(now.used, b->used);
	ck_assert_uint_eq(now.blocks, b->blocks);
	ck_assert_uint_eq(now.param_used, b->param_used);
}

START_TEST(test_create_map_pattern)
{
	static const uint64_t sizes[] = { 4096, 12288, 65536, 1 << 20 };
	int fd = hw_open();

	for (int vram = 0; vram < 2; vram++) {
		for (size_t i = 0; i < 4; i++) {
			struct hw_bo bo;
			uint32_t seed = (uint32_t)(i * 7 + (size_t)vram);

			hw_bo_new(fd, sizes[i], vram ? DRM_VNPU_BO_VRAM : 0,
				  &bo);
			ck_assert_uint_eq(bo.size, sizes[i]);
			hw_pattern_fill(bo.map, bo.size, seed);
			ck_assert_uint_eq(hw_pattern_check(bo.map, bo.size,
							   seed), SIZE_MAX);
			/* A second mapping sees the same pages. */
			{
				void *p2 = mmap(NULL, bo.size, PROT_READ,
						MAP_SHARED, fd,
						(off_t)bo.mmap_offset);

				ck_assert_ptr_ne(p2, MAP_FAILED);
				ck_assert_uint_eq(hw_pattern_check(p2, bo.size,
								   seed),
						  SIZE_MAX);
				munmap(p2, bo.size);
			}
			hw_bo_free(fd, &bo);
		}
	}
	close(fd);
}
END_TEST

START_TEST(test_vram_zeroed)
{
	int fd = hw_open();
	struct hw_bo a, b;

	/* Dirty a VRAM range, free it, allocate again: zero. */
	hw_bo_new(fd, 256 * 1024, DRM_VNPU_BO_VRAM, &a);
	memset(a.map, 0xee, a.size);
	hw_bo_free(fd, &a);
	hw_bo_new(fd, 256 * 1024, DRM_VNPU_BO_VRAM, &b);
	ck_assert_uint_eq(hw_check_u32(b.map, b.size, 0), SIZE_MAX);
	hw_bo_free(fd, &b);
	close(fd);
}
END_TEST

START_TEST(test_system_zeroed)
{
	int fd = hw_open();
	struct hw_bo bo;

	hw_bo_new(fd, 64 * 1024, 0, &bo);
	ck_assert_uint_eq(hw_check_u32(bo.map, bo.size, 0), SIZE_MAX);
	hw_bo_free(fd, &bo);
	close(fd);
}
END_TEST

START_TEST(test_vas_distinct_guarded)
{
	enum { N = 32 };
	int fd = hw_open();
	uint64_t start = hw_param(fd, DRM_VNPU_PARAM_VA_START);
	uint64_t end = start + hw_param(fd, DRM_VNPU_PARAM_VA_SIZE);
	struct hw_bo bos[N];

	for (int i = 0; i < N; i++) {
		hw_bo_new(fd, 4096u * (1 + (unsigned)i % 5),
			  i % 3 ? 0 : DRM_VNPU_BO_VRAM, &bos[i]);
		ck_assert_uint_ge(bos[i].va, start);
		ck_assert_uint_le(bos[i].va + bos[i].size, end);
		/* Ranges (plus their guard page) never overlap. */
		for (int j = 0; j < i; j++) {
			uint64_t a0 = bos[i].va, a1 = a0 + bos[i].size + 4096;
			uint64_t b0 = bos[j].va, b1 = b0 + bos[j].size + 4096;

			ck_assert_msg(a1 <= b0 || b1 <= a0,
				      "BO %d [%#llx,+%#llx) meets BO %d", i,
				      (unsigned long long)a0,
				      (unsigned long long)bos[i].size, j);
		}
	}
	for (int i = 0; i < N; i++)
		hw_bo_free(fd, &bos[i]);
	close(fd);
}
END_TEST

START_TEST(test_device_copies_between_kinds)
{
	enum { SZ = 128 * 1024 };
	struct hw_ctx ctx;
	struct hw_bo src, vram, dst;
	struct vnpu_cmd c[2];
	uint32_t list[3];

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, SZ, 0, &src);
	hw_bo_new(ctx.fd, SZ, DRM_VNPU_BO_VRAM, &vram);
	hw_bo_new(ctx.fd, SZ, 0, &dst);
	hw_pattern_fill(src.map, SZ, 99);
	c[0] = vnpu_copy_cmd(src.va, vram.va, SZ);
	c[1] = vnpu_copy_cmd(vram.va, dst.va, SZ);
	list[0] = dst.handle;
	list[1] = src.handle;
	list[2] = vram.handle;
	ck_assert_int_eq(hw_run(&ctx, c, 2, list, 3, NULL), 0);
	ck_assert_uint_eq(hw_pattern_check(dst.map, SZ, 99), SIZE_MAX);
	/* The VRAM copy is readable (slowly) through its own mapping. */
	ck_assert_uint_eq(hw_pattern_check(vram.map, SZ, 99), SIZE_MAX);
	/* CPU writes to VRAM are seen by the device. */
	hw_pattern_fill(vram.map, SZ, 1234);
	c[0] = vnpu_copy_cmd(vram.va, dst.va, SZ);
	ck_assert_int_eq(hw_run(&ctx, c, 1, list, 3, NULL), 0);
	ck_assert_uint_eq(hw_pattern_check(dst.map, SZ, 1234), SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_double_close)
{
	int fd = hw_open();
	uint32_t h;

	for (int vram = 0; vram < 2; vram++) {
		ck_assert_int_eq(hw_bo_create_raw(fd, 8192,
						  vram ? DRM_VNPU_BO_VRAM : 0,
						  &h, NULL), 0);
		ck_assert_int_eq(hw_gem_close(fd, h), 0);
		ck_assert_int_eq(hw_gem_close(fd, h), -EINVAL);
	}
	close(fd);
}
END_TEST

START_TEST(test_close_while_mapped)
{
	struct leak_base base;
	int fd;
	struct hw_bo bo;

	leak_baseline(&base);
	fd = hw_open();
	hw_bo_new(fd, 64 * 1024, DRM_VNPU_BO_VRAM, &bo);
	hw_pattern_fill(bo.map, bo.size, 5);
	/* The mapping keeps the BO alive past its handle and the file. */
	ck_assert_int_eq(hw_gem_close(fd, bo.handle), 0);
	close(fd);
	ck_assert_uint_eq(hw_pattern_check(bo.map, bo.size, 5), SIZE_MAX);
	munmap(bo.map, bo.size);
	leak_check(&base);
}
END_TEST

START_TEST(test_leak_baseline)
{
	struct leak_base base;
	struct hw_bo bos[40];
	uint64_t used_during;
	int fd;

	leak_baseline(&base);
	fd = hw_open();
	for (int i = 0; i < 40; i++)
		hw_bo_new(fd, 4096u * (1 + (unsigned)i % 7),
			  i % 2 ? DRM_VNPU_BO_VRAM : 0, &bos[i]);
	used_during = hw_param(fd, DRM_VNPU_PARAM_VRAM_USED);
	ck_assert_uint_gt(used_during, base.param_used);
	/* Half freed by GEM_CLOSE, the rest by closing the file. */
	for (int i = 0; i < 40; i += 2)
		hw_bo_free(fd, &bos[i]);
	for (int i = 1; i < 40; i += 2)
		munmap(bos[i].map, bos[i].size);
	close(fd);
	leak_check(&base);
}
END_TEST

START_TEST(test_leak_after_jobs)
{
	struct leak_base base;
	struct hw_ctx ctx;
	struct hw_bo bo;
	struct vnpu_cmd fill;

	leak_baseline(&base);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 64 * 1024, DRM_VNPU_BO_VRAM, &bo);
	fill = vnpu_fill_cmd(bo.va, bo.size, 0x11223344, 4);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd,
					   (uint64_t)i * 64, &fill, 1,
					   &bo.handle, 1, 0, NULL), 0);
	/* Handle closed with jobs queued: the jobs keep the BO until done. */
	munmap(bo.map, bo.size);
	ck_assert_int_eq(hw_gem_close(ctx.fd, bo.handle), 0);
	ck_assert_int_eq(hw_queue_destroy(ctx.fd, ctx.queue), 0);
	hw_ctx_close(&ctx);
	leak_check(&base);
}
END_TEST

START_TEST(test_vram_exhaustion)
{
	struct leak_base base;
	int fd = hw_open();
	uint64_t vram = hw_param(fd, DRM_VNPU_PARAM_VRAM_SIZE);
	uint64_t chunk = vram / 8;
	uint32_t handles[64];
	int n = 0, ret = 0;

	close(fd);
	leak_baseline(&base);
	fd = hw_open();
	chunk = chunk < 4096 ? 4096 : chunk & ~4095ull;
	while (n < 64) {
		ret = hw_bo_create_raw(fd, chunk, DRM_VNPU_BO_VRAM,
				       &handles[n], NULL);
		if (ret)
			break;
		n++;
	}
	ck_assert_int_eq(ret, -ENOMEM);
	ck_assert_int_ge(n, 1);
	ck_assert_int_le(n, 8);
	/* After freeing one chunk, one fits again. */
	ck_assert_int_eq(hw_gem_close(fd, handles[--n]), 0);
	ck_assert_int_eq(hw_bo_create_raw(fd, chunk, DRM_VNPU_BO_VRAM,
					  &handles[n], NULL), 0);
	n++;
	close(fd);
	leak_check(&base);
}
END_TEST

START_TEST(test_many_small_bos)
{
	enum { N = 1000 };
	struct leak_base base;
	uint32_t *h = calloc(N, sizeof(*h));
	int fd;

	ck_assert_ptr_nonnull(h);
	leak_baseline(&base);
	fd = hw_open();
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(hw_bo_create_raw(fd, 4096,
						  i % 4 ? 0 : DRM_VNPU_BO_VRAM,
						  &h[i], NULL), 0);
	for (int i = 0; i < N; i += 3)
		ck_assert_int_eq(hw_gem_close(fd, h[i]), 0);
	for (int i = 0; i < N; i++) {
		struct drm_vnpu_bo_info info;

		ck_assert_int_eq(hw_bo_info(fd, h[i], &info),
				 i % 3 ? 0 : -ENOENT);
	}
	close(fd);
	leak_check(&base);
	free(h);
}
END_TEST

static Suite *buffers_suite(void)
{
	Suite *s = suite_create("buffers");
	TCase *life = tcase_create("lifecycle");
	TCase *leak = tcase_create("leaks");

	tcase_set_timeout(life, 120);
	tcase_add_test(life, test_create_map_pattern);
	tcase_add_test(life, test_vram_zeroed);
	tcase_add_test(life, test_system_zeroed);
	tcase_add_test(life, test_vas_distinct_guarded);
	tcase_add_test(life, test_device_copies_between_kinds);
	tcase_add_test(life, test_double_close);
	hw_suite_add(s, life);
	tcase_set_timeout(leak, 120);
	tcase_add_test(leak, test_close_while_mapped);
	tcase_add_test(leak, test_leak_baseline);
	tcase_add_test(leak, test_leak_after_jobs);
	tcase_add_test(leak, test_vram_exhaustion);
	tcase_add_test(leak, test_many_small_bos);
	hw_suite_add(s, leak);
	return s;
}

int main(int argc, char **argv)
{
	return hw_main(argc, argv, buffers_suite(), 0);
}
