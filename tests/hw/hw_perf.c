// SPDX-License-Identifier: MIT
/*
 * hw_perf: category 13 of the in-VM hardware suite. Performance figures,
 * reported and not judged: each is printed with its ratio to a baseline
 * measured in the same run (a DRM_IOCTL_VERSION round trip for the ioctl
 * paths, memcpy between anonymous buffers for the mappings). The test fails
 * only when a measurement itself goes wrong (an ioctl or job error, wrong
 * data), never on a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw_util.h"

static double per_op_us(int64_t t0, long n)
{
	return (double)(hw_now_ns() - t0) / 1e3 / (double)n;
}

static double mib_per_s(int64_t t0, uint64_t bytes)
{
	return (double)bytes / (1 << 20) / ((double)(hw_now_ns() - t0) / 1e9);
}

static double version_us(int fd, long n)
{
	char name[16];
	int64_t t0 = hw_now_ns();
	long i;

	for (i = 0; i < n; i++) {
		struct drm_version v = { .name = name, .name_len = 15 };

		ck_assert_int_eq(hw_ioctl(fd, DRM_IOCTL_VERSION, &v), 0);
	}
	return per_op_us(t0, n);
}

START_TEST(test_ioctl_and_job_latency)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	struct vnpu_cmd nop = vnpu_nop_cmd();
	double base, param_us, nop_us, create_sys, create_vram;
	int64_t t0;
	long i, n;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &buf);
	base = version_us(ctx.fd, 2000);

	t0 = hw_now_ns();
	for (i = 0; i < 2000; i++)
		hw_param(ctx.fd, DRM_VNPU_PARAM_HEARTBEAT);
	param_us = per_op_us(t0, 2000);

	/* Null job: SUBMIT of one NOP, then BO_WAIT until it retired. */
	n = 200;
	t0 = hw_now_ns();
	for (i = 0; i < n; i++)
		ck_assert_int_eq(hw_run(&ctx, &nop, 1, &buf.handle, 1, NULL),
				 0);
	nop_us = per_op_us(t0, n);

	t0 = hw_now_ns();
	for (i = 0; i < 500; i++) {
		uint32_t h;
		uint64_t va;

		ck_assert_int_eq(hw_bo_create_raw(ctx.fd, 64 * 1024, 0, &h,
						  &va),
				 0);
		ck_assert_int_eq(hw_gem_close(ctx.fd, h), 0);
	}
	create_sys = per_op_us(t0, 500);
	t0 = hw_now_ns();
	for (i = 0; i < 500; i++) {
		uint32_t h;
		uint64_t va;

		ck_assert_int_eq(hw_bo_create_raw(ctx.fd, 64 * 1024,
						  DRM_VNPU_BO_VRAM, &h, &va),
				 0);
		ck_assert_int_eq(hw_gem_close(ctx.fd, h), 0);
	}
	create_vram = per_op_us(t0, 500);
	{
		uint64_t done = 0;

		ck_assert_int_eq(hw_get_param(ctx.fd,
					      DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
					      ctx.queue, &done),
				 0);
		ck_assert_uint_eq(done, (uint64_t)n); /* every null job ran */
	}

	printf("perf: DRM_IOCTL_VERSION         %8.1f us  (baseline)\n", base);
	printf("perf: GET_PARAM(HEARTBEAT)      %8.1f us  %6.1fx\n", param_us,
	       param_us / base);
	printf("perf: null job submit->complete %8.1f us  %6.1fx\n", nop_us,
	       nop_us / base);
	printf("perf: BO create+close 64K sys   %8.1f us  %6.1fx  (%.0f/s)\n",
	       create_sys, create_sys / base, 1e6 / create_sys);
	printf("perf: BO create+close 64K VRAM  %8.1f us  %6.1fx  (%.0f/s)\n",
	       create_vram, create_vram / base, 1e6 / create_vram);
	fflush(stdout);
	hw_ctx_close(&ctx);
}
END_TEST

#define XFER (4u << 20)

START_TEST(test_transfer_bandwidth)
{
	struct hw_ctx ctx;
	struct hw_bo sys, vram, back;
	uint8_t *a = malloc(XFER), *b = malloc(XFER);
	double memcpy_mb, h2d_sys, d2h_sys, h2d_vram, d2h_vram, dma;
	struct vnpu_cmd c;
	uint32_t bos[2];
	int64_t t0;
	int i;

	ck_assert(a && b);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, XFER, 0, &sys);
	hw_bo_new(ctx.fd, XFER, DRM_VNPU_BO_VRAM, &vram);
	hw_bo_new(ctx.fd, XFER, 0, &back);
	hw_pattern_fill(a, XFER, 5);
	memcpy(b, a, XFER); /* fault the pages in first */

	t0 = hw_now_ns();
	for (i = 0; i < 4; i++)
		memcpy(b, a, XFER);
	memcpy_mb = mib_per_s(t0, 4ull * XFER);

	memcpy(sys.map, a, XFER);
	t0 = hw_now_ns();
	for (i = 0; i < 4; i++)
		memcpy(sys.map, a, XFER);
	h2d_sys = mib_per_s(t0, 4ull * XFER);
	t0 = hw_now_ns();
	for (i = 0; i < 4; i++)
		memcpy(b, sys.map, XFER);
	d2h_sys = mib_per_s(t0, 4ull * XFER);
	ck_assert_uint_eq(hw_pattern_check(b, XFER, 5), SIZE_MAX);

	t0 = hw_now_ns();
	memcpy(vram.map, a, XFER);
	h2d_vram = mib_per_s(t0, XFER);
	/* Reads over the BAR are uncached: one 256 KiB read is enough. */
	t0 = hw_now_ns();
	memcpy(b, vram.map, XFER / 16);
	d2h_vram = mib_per_s(t0, XFER / 16);
	ck_assert_uint_eq(hw_pattern_check(b, XFER / 16, 5), SIZE_MAX);

	/* The device's own copy, VRAM to system memory. */
	memset(back.map, 0, XFER);
	c = vnpu_copy_cmd(vram.va, back.va, XFER);
	bos[0] = back.handle;
	bos[1] = vram.handle;
	t0 = hw_now_ns();
	ck_assert_int_eq(hw_run(&ctx, &c, 1, bos, 2, NULL), 0);
	dma = mib_per_s(t0, XFER);
	ck_assert_uint_eq(hw_pattern_check(back.map, XFER, 5), SIZE_MAX);

	printf("perf: memcpy host->host         %8.0f MiB/s (baseline)\n",
	       memcpy_mb);
	printf("perf: mmap write, system BO     %8.0f MiB/s %6.2fx\n", h2d_sys,
	       h2d_sys / memcpy_mb);
	printf("perf: mmap read, system BO      %8.0f MiB/s %6.2fx\n", d2h_sys,
	       d2h_sys / memcpy_mb);
	printf("perf: mmap write, VRAM BO (WC)  %8.0f MiB/s %6.2fx\n",
	       h2d_vram, h2d_vram / memcpy_mb);
	printf("perf: mmap read, VRAM BO (BAR)  %8.1f MiB/s %6.3fx\n",
	       d2h_vram, d2h_vram / memcpy_mb);
	printf("perf: DMA_COPY VRAM->system     %8.0f MiB/s %6.2fx\n", dma,
	       dma / memcpy_mb);
	fflush(stdout);
	hw_ctx_close(&ctx);
	free(a);
	free(b);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_perf");
	TCase *tc = tcase_create("perf");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ioctl_and_job_latency);
	tcase_add_test(tc, test_transfer_bandwidth);
	hw_suite_add(s, tc);
	return hw_main(argc, argv, s, 0);
}
