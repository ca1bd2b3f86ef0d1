// SPDX-License-Identifier: MIT
/*
 * hw suite, category 6: submission. NOP, FILL (widths 1/2/4), DMA_COPY
 * (odd sizes and offsets, bytes around untouched), TIMESTAMP and kernel
 * launches with their data checked against references written here; a
 * failing launch's device status; ring wrap-around (more commands than
 * ring entries); the queue depth limit (-EBUSY); the largest BO list and
 * duplicate handles (-EINVAL); implicit ordering across queues; closing a
 * file with jobs in flight; many queues and threads at once; the
 * completion interrupt of a HW_QUEUE_ANY queue on the CPU that made it.
 */
#include "hw_util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(test_nop_seqnos)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	struct vnpu_cmd nop[3] = { vnpu_nop_cmd(), vnpu_nop_cmd(), vnpu_nop_cmd() };
	uint64_t seqno = 0, done = 0;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 4096, 0, &bo);
	for (uint64_t i = 1; i <= 10; i++) {
		ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, nop,
					   1 + (uint32_t)(i % 3), &bo.handle,
					   1, 0, &seqno), 0);
		ck_assert_uint_eq(seqno, i);
	}
	ck_assert_int_eq(hw_syncobj_wait(ctx.fd, &ctx.syncobj, &seqno, 1,
					 HW_WAIT_NS), 0);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
				      ctx.queue, &done), 0);
	ck_assert_uint_eq(done, 10);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	/* A job with no BOs at all runs too. */
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, nop, 1,
				   NULL, 0, 0, &seqno), 0);
	ck_assert_int_eq(hw_syncobj_wait(ctx.fd, &ctx.syncobj, &seqno, 1,
					 HW_WAIT_NS), 0);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_fill_widths)
{
	enum { SZ = 16384 };
	struct hw_ctx ctx;
	struct hw_bo bo;
	unsigned char *ref = malloc(SZ);
	uint64_t rnd = 7;

	ck_assert_ptr_nonnull(ref);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, SZ, 0, &bo);
	for (int iter = 0; iter < 24; iter++) {
		uint32_t width = 1u << (iter % 3);
		uint64_t off = (hw_rand(&rnd) % 4000) & ~(uint64_t)(width - 1);
		uint64_t n = (hw_rand(&rnd) % 3000 + 1) * width;
		uint32_t pat = (uint32_t)hw_rand(&rnd);
		struct vnpu_cmd c = vnpu_fill_cmd(bo.va + off, n, pat, width);

		hw_pattern_fill(bo.map, SZ, (uint32_t)iter);
		memcpy(ref, bo.map, SZ);
		for (uint64_t i = 0; i < n; i++)
			ref[off + i] = (unsigned char)(pat >> (i % width * 8));
		ck_assert_int_eq(hw_run(&ctx, &c, 1, &bo.handle, 1, NULL), 0);
		ck_assert_msg(!memcmp(ref, bo.map, SZ),
			      "fill width %u off %llu size %llu", width,
			      (unsigned long long)off, (unsigned long long)n);
	}
	free(ref);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_copy_sizes)
{
	enum { SZ = 1 << 20 };
	static const uint64_t sizes[] = { 1, 15, 17, 4095, 4096, 4097,
					  65537, SZ / 2 };
	struct hw_ctx ctx;
	struct hw_bo src, dst;
	unsigned char *ref = malloc(SZ);
	uint32_t list[2];
	uint64_t rnd = 11;

	ck_assert_ptr_nonnull(ref);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, SZ, 0, &src);
	hw_bo_new(ctx.fd, SZ, DRM_VNPU_BO_VRAM, &dst);
	list[0] = dst.handle;
	list[1] = src.handle;
	hw_pattern_fill(src.map, SZ, 1);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];
		uint64_t so = hw_rand(&rnd) % (SZ - n + 1);
		uint64_t d0 = hw_rand(&rnd) % (SZ - n + 1);
		struct vnpu_cmd c = vnpu_copy_cmd(src.va + so, dst.va + d0, n);

		/* VRAM destination cleared by the device (fast), then copied. */
		struct vnpu_cmd cmds[2] = { vnpu_fill_cmd(dst.va, SZ, 0, 4), c };

		memset(ref, 0, SZ);
		memcpy(ref + d0, (unsigned char *)src.map + so, n);
		ck_assert_int_eq(hw_run(&ctx, cmds, 2, list, 2, NULL), 0);
		ck_assert_msg(!memcmp(ref, dst.map, SZ),
			      "copy %llu bytes %llu -> %llu",
			      (unsigned long long)n, (unsigned long long)so,
			      (unsigned long long)d0);
	}
	free(ref);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_timestamps)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	struct vnpu_cmd c[4];
	uint64_t *t;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 4096, 0, &bo);
	for (int i = 0; i < 4; i++)
		c[i] = vnpu_timestamp_cmd(bo.va + 8u * (unsigned)i);
	ck_assert_int_eq(hw_run(&ctx, c, 4, &bo.handle, 1, NULL), 0);
	t = bo.map;
	ck_assert_uint_gt(t[0], 0);
	for (int i = 1; i < 4; i++)
		ck_assert_uint_ge(t[i], t[i - 1]);
	ck_assert_uint_le(t[3], hw_param(ctx.fd, DRM_VNPU_PARAM_TIMESTAMP));
	hw_ctx_close(&ctx);
}
END_TEST

/* Writes a FILL kernel's argument block for n elements of dtype. */
static uint32_t fill_kargs(void *args, uint64_t out_va, uint64_t bytes,
			   uint32_t dtype, uint64_t n, double value,
			   int64_t ivalue, int64_t stride)
{
	struct vnpu_kargs_header h = { 1, sizeof(struct vnpu_kp_fill), 0 };
	struct vnpu_kargs_buffer b = { out_va, bytes, VNPU_ACCESS_WRITE, 0 };
	struct vnpu_kp_fill kp;
	char *p = args;

	memset(&kp, 0, sizeof(kp));
	kp.out.buffer = 0;
	kp.out.dtype = dtype;
	kp.out.format = VNPU_FORMAT_ND;
	kp.out.ndim = 1;
	kp.out.sizes[0] = (int64_t)n;
	kp.out.strides[0] = stride;
	kp.value = value;
	kp.ivalue = ivalue;
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), &b, sizeof(b));
	memcpy(p + sizeof(h) + sizeof(b), &kp, sizeof(kp));
	return sizeof(h) + sizeof(b) + sizeof(kp);
}

START_TEST(test_kernel_fill)
{
	enum { N = 4099 };
	struct hw_ctx ctx;
	struct hw_bo out, args;
	struct vnpu_cmd c;
	uint32_t list[2], size;
	float *f;
	int32_t *w;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 2 * N * 4, 0, &out);
	hw_bo_new(ctx.fd, 4096, 0, &args);
	list[0] = out.handle;
	list[1] = args.handle;
	/* f32, contiguous, 7 blocks. */
	size = fill_kargs(args.map, out.va, out.size, VNPU_DTYPE_F32, N, -3.25,
			  0, 1);
	c = vnpu_launch_cmd(VNPU_KERNEL_FILL, 7, args.va, size);
	ck_assert_int_eq(hw_run(&ctx, &c, 1, list, 2, NULL), 0);
	f = out.map;
	for (int i = 0; i < N; i++)
		ck_assert_float_eq(f[i], -3.25f);
	ck_assert_float_eq(f[N], 0.0f);
	/* i32 with stride 2: odd elements untouched. */
	memset(out.map, 0, out.size);
	size = fill_kargs(args.map, out.va, out.size, VNPU_DTYPE_I32, N, 0,
			  -123456, 2);
	c = vnpu_launch_cmd(VNPU_KERNEL_FILL, 3, args.va, size);
	ck_assert_int_eq(hw_run(&ctx, &c, 1, list, 2, NULL), 0);
	w = out.map;
	for (int i = 0; i < 2 * N - 1; i++)
		ck_assert_int_eq(w[i], i % 2 ? 0 : -123456);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_kernel_errors_reported)
{
	struct hw_ctx ctx;
	struct hw_bo out, args;
	struct drm_vnpu_bo_wait w;
	struct vnpu_cmd c[3];
	uint32_t list[2], size;
	uint64_t err = 0;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 4096, 0, &out);
	hw_bo_new(ctx.fd, 4096, 0, &args);
	list[0] = out.handle;
	list[1] = args.handle;
	size = fill_kargs(args.map, out.va, out.size, VNPU_DTYPE_F32, 1024, 1,
			  0, 1);
	/* Command 1 names a kernel the firmware lacks; 0 and 2 are fine and
	 * still run (docs/uapi.md: later commands of the job still ran). */
	c[0] = vnpu_fill_cmd(out.va, 4096, 0x55555555, 4);
	c[1] = vnpu_launch_cmd(0x7777, 1, args.va, size);
	c[2] = vnpu_fill_cmd(out.va, 64, 0x66666666, 4);
	ck_assert_int_eq(hw_run(&ctx, c, 3, list, 2, &w), -EIO);
	ck_assert_int_eq(w.job_error, -EIO);
	ck_assert_uint_eq(w.job_status, VNPU_STATUS_UNKNOWN_KERNEL);
	ck_assert_uint_eq(w.job_cmd, 1);
	ck_assert_uint_eq(hw_check_u32(out.map, 64, 0x66666666), SIZE_MAX);
	ck_assert_uint_eq(hw_check_u32((char *)out.map + 64, 4096 - 64,
				       0x55555555), SIZE_MAX);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_ERROR,
				      ctx.queue, &err), 0);
	ck_assert_uint_eq(err, EIO);
	/* A bad argument size is the device's INVALID_ARGS, the context
	 * stays usable (no fault). */
	c[0] = vnpu_launch_cmd(VNPU_KERNEL_FILL, 1, args.va, size - 8);
	ck_assert_int_eq(hw_run(&ctx, c, 1, list, 2, &w), -EIO);
	ck_assert_uint_ne(w.job_status, VNPU_STATUS_OK);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	c[0] = vnpu_fill_cmd(out.va, 4096, 0x77777777, 4);
	ck_assert_int_eq(hw_run(&ctx, c, 1, list, 2, &w), 0);
	ck_assert_uint_eq(hw_check_u32(out.map, 4096, 0x77777777), SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_ring_wraparound)
{
	/* 5 jobs of 900 commands and 40 of 50: 6500 commands through a ring
	 * of MAX_SUBMIT_CMDS + 1 entries, each writing its own word. */
	enum { BIG = 900, SMALL = 50, NBIG = 5, NSMALL = 40 };
	enum { WORDS = NBIG * BIG + NSMALL * SMALL };
	struct hw_ctx ctx;
	struct hw_bo out, cmdbuf;
	struct vnpu_cmd *cmds = calloc(BIG, sizeof(*cmds));
	uint32_t k = 0, *words;
	uint64_t max, seqno = 0;

	ck_assert_ptr_nonnull(cmds);
	hw_ctx_open(&ctx);
	max = hw_param(ctx.fd, DRM_VNPU_PARAM_MAX_SUBMIT_CMDS);
	ck_assert_uint_lt(max + 1, WORDS);
	hw_bo_new(ctx.fd, WORDS * 4, 0, &out);
	hw_bo_new(ctx.fd, BIG * sizeof(*cmds), 0, &cmdbuf);
	for (int j = 0; j < NBIG + NSMALL; j++) {
		/* Every ninth job is a big one: j = 0, 9, ..., 36. */
		uint32_t n = j % 9 == 0 ? BIG : SMALL;
		int ret;

		for (uint32_t i = 0; i < n; i++, k++)
			cmds[i] = vnpu_fill_cmd(out.va + 4ull * k, 4, k ^ 0xc0de0000,
					      4);
		/* The command BO may be reused at once (copied at SUBMIT). */
		do {
			ret = hw_submit(ctx.fd, ctx.queue, &cmdbuf, 0, cmds, n,
					&out.handle, 1, 0, &seqno);
		} while (ret == -EBUSY && !usleep(1000));
		ck_assert_int_eq(ret, 0);
	}
	ck_assert_uint_eq(k, WORDS);
	ck_assert_int_eq(hw_syncobj_wait(ctx.fd, &ctx.syncobj, &seqno, 1,
					 HW_WAIT_NS), 0);
	ck_assert_int_eq(hw_bo_wait(ctx.fd, out.handle, HW_WAIT_NS, NULL), 0);
	words = out.map;
	for (uint32_t i = 0; i < WORDS; i++)
		ck_assert_uint_eq(words[i], i ^ 0xc0de0000);
	free(cmds);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_queue_depth_busy)
{
	struct hw_ctx ctx;
	struct hw_bo flag, out;
	struct vnpu_cmd c;
	uint64_t depth, seqno = 0;
	uint32_t list[2];
	int ret = 0;

	hw_ctx_open(&ctx);
	depth = hw_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_DEPTH);
	hw_bo_new(ctx.fd, 4096, 0, &flag);
	hw_bo_new(ctx.fd, 4096, 0, &out);
	list[0] = out.handle;
	list[1] = flag.handle;
	/* Job 1 blocks the queue until the CPU writes the flag. */
	c = vnpu_fence_wait_cmd(flag.va, 1);
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c, 1,
				   &flag.handle, 1, 0, NULL), 0);
	c = vnpu_fill_cmd(out.va, 4, 0, 4);
	for (uint64_t i = 1; i < depth; i++) {
		c.fill.pattern = (uint32_t)i;
		ret = hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 64 * (i % 100), &c,
				1, list, 1, 0, &seqno);
		if (ret)
			break;
	}
	{
		int busy = hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c, 1,
				     list, 1, 0, NULL);

		/* Release the queue before asserting (no hang either way). */
		__atomic_store_n((uint64_t *)flag.map, 1, __ATOMIC_SEQ_CST);
		ck_assert_int_eq(ret, 0);
		ck_assert_uint_eq(seqno, depth);
		ck_assert_int_eq(busy, -EBUSY);
	}
	ck_assert_int_eq(hw_bo_wait(ctx.fd, out.handle, HW_WAIT_NS, NULL), 0);
	ck_assert_uint_eq(*(uint32_t *)out.map, depth - 1);
	/* Room again. */
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c, 1, list,
				   1, 0, &seqno), 0);
	ck_assert_uint_eq(seqno, depth + 1);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_max_bo_list)
{
	enum { N = DRM_VNPU_MAX_SUBMIT_BOS };
	struct hw_ctx ctx;
	uint32_t *list = calloc(N, sizeof(*list));
	uint64_t *vas = calloc(N, sizeof(*vas));
	struct vnpu_cmd c[3];
	struct hw_bo first, last;

	ck_assert_ptr_nonnull(list);
	ck_assert_ptr_nonnull(vas);
	hw_ctx_open(&ctx);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(hw_bo_create_raw(ctx.fd, 4096, 0, &list[i],
						  &vas[i]), 0);
	c[0] = vnpu_fill_cmd(vas[0], 4096, 0xf1f1f1f1, 4);
	c[1] = vnpu_fill_cmd(vas[N - 1], 4096, 0xe2e2e2e2, 4);
	c[2] = vnpu_copy_cmd(vas[N - 1], vas[N / 2], 4096);
	ck_assert_int_eq(hw_run(&ctx, c, 3, list, N, NULL), 0);
	ck_assert_int_eq(hw_bo_from_handle(ctx.fd, list[0], &first), 0);
	ck_assert_int_eq(hw_bo_from_handle(ctx.fd, list[N / 2], &last), 0);
	ck_assert_uint_eq(hw_check_u32(first.map, 4096, 0xf1f1f1f1), SIZE_MAX);
	ck_assert_uint_eq(hw_check_u32(last.map, 4096, 0xe2e2e2e2), SIZE_MAX);
	/* Every BO of the list carries the job's fence. */
	ck_assert_int_eq(hw_bo_wait(ctx.fd, list[N / 3], 0, NULL), 0);
	free(list);
	free(vas);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_duplicate_handles)
{
	enum { N = 300 };
	struct hw_ctx ctx;
	uint32_t list[N];
	struct vnpu_cmd nop = vnpu_nop_cmd();
	uint64_t seqno = 0;

	hw_ctx_open(&ctx);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(hw_bo_create_raw(ctx.fd, 4096, 0, &list[i],
						  NULL), 0);
	/* Adjacent, far apart and at both ends: -EINVAL, nothing queued. */
	static const int pairs[][2] = { { 0, 1 }, { 5, 250 }, { 0, N - 1 },
					{ N - 2, N - 1 } };
	for (size_t p = 0; p < 4; p++) {
		uint32_t keep = list[pairs[p][1]];

		list[pairs[p][1]] = list[pairs[p][0]];
		ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &nop,
					   1, list, N, 0, &seqno), -EINVAL);
		list[pairs[p][1]] = keep;
	}
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &nop, 1,
				   list, N, 0, &seqno), 0);
	ck_assert_uint_eq(seqno, 1);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_cross_queue_implicit_order)
{
	enum { SZ = 4 << 20 };
	struct hw_ctx ctx;
	struct hw_bo big, out;
	struct vnpu_cmd c[8];
	uint32_t q2, list[2];

	hw_ctx_open(&ctx);
	ck_assert_int_eq(hw_queue_create(ctx.fd, DRM_VNPU_HW_QUEUE_ANY, &q2,
					 NULL), 0);
	hw_bo_new(ctx.fd, SZ, 0, &big);
	hw_bo_new(ctx.fd, 4096, 0, &out);
	for (int round = 0; round < 5; round++) {
		uint32_t v = 0x10101010u * (uint32_t)(round + 1);

		/* Queue 1: slow fills of the BO, the last with v. */
		for (int i = 0; i < 8; i++)
			c[i] = vnpu_fill_cmd(big.va, SZ, i == 7 ? v : 0xdead, 4);
		ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, c, 8,
					   &big.handle, 1, 0, NULL), 0);
		/* Queue 2 shares the BO: it runs after, and sees v. */
		c[0] = vnpu_copy_cmd(big.va + SZ - 4096, out.va, 4096);
		list[0] = out.handle;
		list[1] = big.handle;
		ck_assert_int_eq(hw_submit(ctx.fd, q2, &ctx.cmd, 1024, c, 1,
					   list, 2, 0, NULL), 0);
		ck_assert_int_eq(hw_bo_wait(ctx.fd, out.handle, HW_WAIT_NS,
					    NULL), 0);
		ck_assert_uint_eq(hw_check_u32(out.map, 4096, v), SIZE_MAX);
	}
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_close_with_jobs_in_flight)
{
	enum { SZ = 2 << 20 };
	for (int round = 0; round < 6; round++) {
		struct hw_ctx ctx;
		struct hw_bo a, b;
		struct vnpu_cmd c[4];
		uint32_t list[2];
		uint64_t used_before, used_after;
		int probe;

		probe = hw_open();
		used_before = hw_param(probe, DRM_VNPU_PARAM_VRAM_USED);
		hw_ctx_open(&ctx);
		hw_bo_new(ctx.fd, SZ, DRM_VNPU_BO_VRAM, &a);
		hw_bo_new(ctx.fd, SZ, 0, &b);
		list[0] = a.handle;
		list[1] = b.handle;
		c[0] = vnpu_fill_cmd(a.va, SZ, 1, 4);
		c[1] = vnpu_copy_cmd(a.va, b.va, SZ);
		c[2] = vnpu_copy_cmd(b.va, a.va, SZ);
		c[3] = vnpu_fill_cmd(b.va, SZ, 2, 4);
		for (int j = 0; j < 10; j++)
			ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd,
						   256u * (unsigned)j, c, 4,
						   list, 2, 0, NULL), 0);
		/* Odd rounds also leave a destroyed-queue path behind. */
		if (round % 2) {
			munmap(a.map, a.size);
			munmap(b.map, b.size);
			a.map = b.map = NULL;
		}
		hw_ctx_close(&ctx);
		if (a.map) {
			munmap(a.map, a.size);
			munmap(b.map, b.size);
		}
		/* The closed file's VRAM is freed once its jobs ended. */
		for (int t = 0; t < 200; t++) {
			used_after = hw_param(probe, DRM_VNPU_PARAM_VRAM_USED);
			if (used_after == used_before)
				break;
			usleep(50000);
		}
		ck_assert_uint_eq(used_after, used_before);
		/* The device still works for a new file. */
		{
			struct hw_ctx next;
			struct hw_bo bo;
			struct vnpu_cmd f;

			hw_ctx_open(&next);
			hw_bo_new(next.fd, 4096, 0, &bo);
			f = vnpu_fill_cmd(bo.va, 4096, (uint32_t)round, 4);
			ck_assert_int_eq(hw_run(&next, &f, 1, &bo.handle, 1,
						NULL), 0);
			ck_assert_uint_eq(hw_check_u32(bo.map, 4096,
						       (uint32_t)round),
					  SIZE_MAX);
			hw_ctx_close(&next);
		}
		close(probe);
	}
}
END_TEST

START_TEST(test_exit_with_jobs_in_flight)
{
	/* A process that dies (SIGKILL) with queued jobs. */
	for (int round = 0; round < 3; round++) {
		int status, fd;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			struct hw_ctx ctx;
			struct hw_bo a;
			struct vnpu_cmd c = vnpu_fill_cmd(0, 4 << 20, 3, 4);

			ctx.fd = hw_open_raw();
			if (ctx.fd < 0 ||
			    hw_queue_create(ctx.fd, DRM_VNPU_HW_QUEUE_ANY,
					    &ctx.queue, NULL) ||
			    hw_bo_create(ctx.fd, 4096, 0, &ctx.cmd) ||
			    hw_bo_create(ctx.fd, 4 << 20, 0, &a))
				_exit(1);
			c.fill.dst_va = a.va;
			for (int j = 0; j < 30; j++)
				hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c, 1,
					  &a.handle, 1, 0, NULL);
			kill(getpid(), SIGKILL);
			_exit(2);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFSIGNALED(status));
		fd = hw_open();
		ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_CONTEXT_STATE),
				  0);
		close(fd);
	}
}
END_TEST

/* ---- many queues and threads --------------------------------------------- */

struct worker {
	int fd;			/* shared file, or -1: open its own */
	uint32_t id;
	int jobs;
	int error;		/* first failure: a negative errno or -1000-step */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	bool own = w->fd < 0;
	int fd = own ? hw_open_raw() : w->fd;
	struct hw_bo cmd, bo;
	uint32_t q;
	uint64_t seqno = 0;
	int ret;

	if (fd < 0) {
		w->error = fd;
		return NULL;
	}
	ret = hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &q, NULL);
	if (!ret)
		ret = hw_bo_create(fd, 4096, 0, &cmd);
	if (!ret)
		ret = hw_bo_create(fd, 16384, w->id % 2 ? DRM_VNPU_BO_VRAM : 0,
				   &bo);
	for (int j = 0; !ret && j < w->jobs; j++) {
		uint32_t v = w->id << 16 | (uint32_t)j;
		struct vnpu_cmd c[2] = {
			vnpu_fill_cmd(bo.va, 16384, v, 4),
			vnpu_timestamp_cmd(bo.va + 16384 - 8),
		};

		ret = hw_submit(fd, q, &cmd, 0, c, 1 + (j % 2), &bo.handle, 1,
				0, &seqno);
		if (ret == -EBUSY) {
			usleep(1000);
			j--;
			ret = 0;
			continue;
		}
		if (!ret && seqno != (uint64_t)j + 1)
			ret = -1001;
		if (!ret && j % 10 == 9) {
			ret = hw_bo_wait(fd, bo.handle, HW_WAIT_NS, NULL);
			if (!ret && hw_check_u32(bo.map, 4096, v) != SIZE_MAX)
				ret = -1002;
		}
	}
	if (!ret)
		ret = hw_bo_wait(fd, bo.handle, HW_WAIT_NS, NULL);
	if (!ret && hw_check_u32(bo.map, 4096,
				 w->id << 16 | (uint32_t)(w->jobs - 1)) !=
			    SIZE_MAX)
		ret = -1003;
	if (!ret)
		ret = hw_queue_destroy(fd, q);
	w->error = ret;
	if (own)
		close(fd);
	return NULL;
}

static void run_workers(int shared_fd, int n, int jobs)
{
	pthread_t th[16];
	struct worker w[16];

	ck_assert_int_le(n, 16);
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){ .fd = shared_fd, .id = (uint32_t)i,
					.jobs = jobs };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main,
						&w[i]), 0);
	}
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_msg(w[i].error == 0, "worker %d: %d", i,
			      w[i].error);
	}
}

START_TEST(test_threads_one_file)
{
	int fd = hw_open();

	run_workers(fd, 8, 40);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	close(fd);
}
END_TEST

START_TEST(test_threads_own_files)
{
	run_workers(-1, 8, 40);
}
END_TEST

START_TEST(test_many_queues_one_thread)
{
	enum { Q = 64 };
	struct hw_ctx ctx;
	struct hw_bo bo;
	uint32_t q[Q];
	uint64_t seqno = 0, nhwq;

	hw_ctx_open(&ctx);
	nhwq = hw_param(ctx.fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	ck_assert_int_eq(hw_queue_destroy(ctx.fd, ctx.queue), 0);
	hw_bo_new(ctx.fd, Q * 4096, 0, &bo);
	for (int i = 0; i < Q; i++) {
		/* Spread over the hardware queues explicitly and ANY. */
		uint32_t hwq = i % 2 ? DRM_VNPU_HW_QUEUE_ANY
				     : (uint32_t)(i / 2 % nhwq);

		ck_assert_int_eq(hw_queue_create(ctx.fd, hwq, &q[i], NULL), 0);
	}
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < Q; i++) {
			struct vnpu_cmd c = vnpu_fill_cmd(bo.va + 4096u * (unsigned)i,
							4096,
							(uint32_t)(i * 3 + round),
							4);
			/* One BO for all: the jobs serialise through it. */
			ck_assert_int_eq(hw_submit(ctx.fd, q[i], &ctx.cmd,
						   64u * (unsigned)i, &c, 1,
						   &bo.handle, 1, 0, &seqno),
					 0);
			ck_assert_uint_eq(seqno, (uint64_t)round + 1);
		}
		ck_assert_int_eq(hw_bo_wait(ctx.fd, bo.handle, HW_WAIT_NS,
					    NULL), 0);
		for (int i = 0; i < Q; i++)
			ck_assert_uint_eq(hw_check_u32((char *)bo.map +
							       4096u * (unsigned)i,
						       4096,
						       (uint32_t)(i * 3 + round)),
					  SIZE_MAX);
	}
	hw_ctx_close(&ctx);
}
END_TEST

/* The vnpu vectors' interrupts per CPU so far, from /proc/interrupts. */
static void vnpu_irqs_per_cpu(long *count, int ncpu)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];

	ck_assert_ptr_nonnull(f);
	memset(count, 0, sizeof(*count) * (size_t)ncpu);
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (!p || !strstr(line, " vnpu"))
			continue;
		p++;
		for (int c = 0; c < ncpu; c++) {
			char *end;
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			count[c] += v;
			p = end;
		}
	}
	fclose(f);
}

/*
 * HW_QUEUE_ANY picks a hardware queue whose completion interrupt goes to
 * the calling CPU (docs/uapi.md): a waiter is then woken by an interrupt
 * on its own CPU. For each CPU (as many as there are hardware queues): a
 * queue made there, 20 jobs waited for there, at least 19 of their
 * interrupts taken there.
 */
START_TEST(test_any_queue_interrupts_its_cpu)
{
	enum { JOBS = 20 };
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	long before[64], after[64];
	struct vnpu_cmd nop = vnpu_nop_cmd();
	cpu_set_t all;
	uint64_t nhwq;
	int fd = hw_open();

	nhwq = hw_param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	close(fd);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	if (ncpu > 64 || (uint64_t)ncpu > nhwq)
		return; /* not every CPU has a queue of its own */
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct hw_ctx ctx;
		uint64_t seqno = 0;
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
		hw_ctx_open(&ctx);
		vnpu_irqs_per_cpu(before, ncpu);
		for (int i = 0; i < JOBS; i++) {
			nop.hdr.flags = 0;
			ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd,
						   0, &nop, 1, NULL, 0, 0,
						   &seqno),
					 0);
			ck_assert_int_eq(hw_syncobj_wait(ctx.fd, &ctx.syncobj,
							 &seqno, 1, HW_WAIT_NS),
					 0);
		}
		vnpu_irqs_per_cpu(after, ncpu);
		ck_assert_int_ge(after[cpu] - before[cpu], JOBS - 1);
		hw_ctx_close(&ctx);
	}
	ck_assert_int_eq(sched_setaffinity(0, sizeof(all), &all), 0);
}
END_TEST

static Suite *submit_suite(void)
{
	Suite *s = suite_create("submit");
	TCase *cmds = tcase_create("commands");
	TCase *ring = tcase_create("ring");
	TCase *lists = tcase_create("bo_lists");
	TCase *life = tcase_create("lifetime");
	TCase *conc = tcase_create("concurrency");

	tcase_set_timeout(cmds, 120);
	tcase_add_test(cmds, test_nop_seqnos);
	tcase_add_test(cmds, test_fill_widths);
	tcase_add_test(cmds, test_copy_sizes);
	tcase_add_test(cmds, test_timestamps);
	tcase_add_test(cmds, test_kernel_fill);
	tcase_add_test(cmds, test_kernel_errors_reported);
	hw_suite_add(s, cmds);
	tcase_set_timeout(ring, 180);
	tcase_add_test(ring, test_ring_wraparound);
	tcase_add_test(ring, test_queue_depth_busy);
	hw_suite_add(s, ring);
	tcase_set_timeout(lists, 180);
	tcase_add_test(lists, test_max_bo_list);
	tcase_add_test(lists, test_duplicate_handles);
	tcase_add_test(lists, test_cross_queue_implicit_order);
	hw_suite_add(s, lists);
	tcase_set_timeout(life, 180);
	tcase_add_test(life, test_close_with_jobs_in_flight);
	tcase_add_test(life, test_exit_with_jobs_in_flight);
	hw_suite_add(s, life);
	tcase_set_timeout(conc, 180);
	tcase_add_test(conc, test_threads_one_file);
	tcase_add_test(conc, test_threads_own_files);
	tcase_add_test(conc, test_many_queues_one_thread);
	tcase_add_test(conc, test_any_queue_interrupts_its_cpu);
	hw_suite_add(s, conc);
	return s;
}

int main(int argc, char **argv)
{
	return hw_main(argc, argv, submit_suite(), 0);
}
