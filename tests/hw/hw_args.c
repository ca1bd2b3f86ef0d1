// SPDX-License-Identifier: MIT
/*
 * hw suite, category 3: argument validation of every ioctl (the driver's
 * seven and the DRM core's GEM_CLOSE / PRIME / SYNCOBJ on this file):
 * non-zero pad/reserved/flags fields, zero and maximum sizes and counts,
 * bad and closed handles and queues, NULL and misaligned user pointers,
 * out-of-range offsets (command buffer, mmap), each with the errno of
 * docs/uapi.md, and the rule that outputs are untouched on failure: every
 * failing call gets a struct pre-filled with a pattern, compared after.
 */
#include "hw_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAT8 0xa5

/*
 * Calls ioctl with a copy of *arg and checks the errno and that the struct
 * came back exactly as passed (so outputs were not written).
 */
#define EXPECT_FAIL(fd, req, arg, err)                                        \
	do {                                                                  \
		__typeof__(arg) copy_ = (arg);                                \
		int ret_ = hw_ioctl((fd), (req), &copy_);                     \
		ck_assert_msg(ret_ == (err), "%s: got %d (%s), want %d",      \
			      #req, ret_, strerror(-ret_), (err));            \
		ck_assert_msg(!memcmp(&copy_, &(arg), sizeof(copy_)),         \
			      "%s: struct changed on failure", #req);         \
	} while (0)

static void pattern(void *p, size_t n)
{
	memset(p, PAT8, n);
}

struct args_env {
	struct hw_ctx ctx;
	struct hw_bo bo;	/* 64 KiB system BO */
};

static void env_open(struct args_env *e)
{
	hw_ctx_open(&e->ctx);
	hw_bo_new(e->ctx.fd, 64 * 1024, 0, &e->bo);
}

/* ---- GET_PARAM (the rest in hw_param) ------------------------------------ */

START_TEST(test_get_param_struct)
{
	struct drm_vnpu_get_param gp;
	int fd = hw_open();

	pattern(&gp, sizeof(gp));
	gp.param = 0xdead;
	gp.index = 0;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_GET_PARAM, gp, -EINVAL);
	gp.param = DRM_VNPU_PARAM_VRAM_SIZE;
	gp.index = 7;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_GET_PARAM, gp, -EINVAL);
	gp.param = DRM_VNPU_PARAM_QUEUE_ERROR;
	gp.index = 1; /* no queue yet */
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_GET_PARAM, gp, -ENOENT);
	close(fd);
}
END_TEST

/* ---- BO_CREATE ------------------------------------------------------------- */

START_TEST(test_bo_create_args)
{
	struct drm_vnpu_bo_create c;
	int fd = hw_open();
	uint64_t vram = hw_param(fd, DRM_VNPU_PARAM_VRAM_SIZE);
	uint64_t va_size = hw_param(fd, DRM_VNPU_PARAM_VA_SIZE);

	pattern(&c, sizeof(c));
	c.size = 4096;
	for (uint32_t bit = 2; bit < 32; bit++) {
		c.flags = 1u << bit;
		EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -EINVAL);
	}
	c.flags = UINT32_MAX;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -EINVAL);
	c.flags = 0;
	c.size = 0;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -EINVAL);
	c.flags = DRM_VNPU_BO_VRAM;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -EINVAL);
	/* Above 2^39 / the VA range, and sizes whose rounding would wrap. */
	c.flags = 0;
	static const uint64_t huge[] = {
		(1ull << 39) + 1, 1ull << 40, UINT64_MAX, UINT64_MAX - 4095,
		UINT64_MAX - 4096, 1ull << 63,
	};
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		c.size = huge[i];
		c.flags = 0;
		EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -EINVAL);
		c.flags = DRM_VNPU_BO_VRAM;
		EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -EINVAL);
	}
	c.size = va_size + 1;
	c.flags = 0;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -EINVAL);
	/* In range but more than there is: ENOMEM. */
	c.flags = DRM_VNPU_BO_VRAM;
	c.size = vram + 1;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -ENOMEM);
	c.flags = 0;
	c.size = 1ull << 38;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_BO_CREATE, c, -ENOMEM);
	close(fd);
}
END_TEST

START_TEST(test_bo_create_min_sizes)
{
	static const uint64_t sizes[] = { 1, 7, 4095, 4096, 4097, 65537 };
	int fd = hw_open();

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int vram = 0; vram < 2; vram++) {
			struct hw_bo bo;

			hw_bo_new(fd, sizes[i], vram ? DRM_VNPU_BO_VRAM : 0,
				  &bo);
			ck_assert_uint_eq(bo.size,
					  (sizes[i] + 4095) / 4096 * 4096);
			ck_assert_uint_eq(bo.va % 4096, 0);
			ck_assert_uint_eq(bo.flags,
					  vram ? DRM_VNPU_BO_VRAM : 0);
			hw_bo_free(fd, &bo);
		}
	}
	close(fd);
}
END_TEST

/* ---- BO_INFO ---------------------------------------------------------------- */

START_TEST(test_bo_info_args)
{
	struct drm_vnpu_bo_info info;
	struct args_env e;
	uint32_t handle;

	env_open(&e);
	pattern(&info, sizeof(info));
	static const uint32_t bad[] = { 0, 9999, 0x80000000u, UINT32_MAX };
	for (size_t i = 0; i < 4; i++) {
		info.handle = bad[i];
		EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_BO_INFO, info, -ENOENT);
	}
	/* A closed handle. */
	ck_assert_int_eq(hw_bo_create_raw(e.ctx.fd, 4096, 0, &handle, NULL),
			 0);
	ck_assert_int_eq(hw_gem_close(e.ctx.fd, handle), 0);
	info.handle = handle;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_BO_INFO, info, -ENOENT);
	/* Another file's handle means nothing here. */
	{
		int other = hw_open();

		info.handle = e.bo.handle;
		EXPECT_FAIL(other, DRM_IOCTL_VNPU_BO_INFO, info, -ENOENT);
		close(other);
	}
	hw_ctx_close(&e.ctx);
}
END_TEST

/* ---- BO_WAIT ---------------------------------------------------------------- */

START_TEST(test_bo_wait_args)
{
	struct drm_vnpu_bo_wait w;
	struct args_env e;

	env_open(&e);
	pattern(&w, sizeof(w));
	w.handle = e.bo.handle;
	w.timeout_ns = 0;
	w.flags = 1;
	w.reserved = 0;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_BO_WAIT, w, -EINVAL);
	w.flags = 0x80000000u;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_BO_WAIT, w, -EINVAL);
	w.flags = 0;
	w.reserved = 1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_BO_WAIT, w, -EINVAL);
	w.reserved = 0;
	w.handle = 0;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_BO_WAIT, w, -ENOENT);
	w.handle = 4242;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_BO_WAIT, w, -ENOENT);
	/* Extreme deadlines on an idle BO succeed at once. */
	static const int64_t deadlines[] = { INT64_MIN, -1, 0, INT64_MAX };
	for (size_t i = 0; i < 4; i++) {
		memset(&w, 0, sizeof(w));
		w.handle = e.bo.handle;
		w.timeout_ns = deadlines[i];
		w.job_error = -77;
		ck_assert_int_eq(hw_ioctl(e.ctx.fd, DRM_IOCTL_VNPU_BO_WAIT, &w),
				 0);
		ck_assert_int_eq(w.job_error, 0);
	}
	hw_ctx_close(&e.ctx);
}
END_TEST

/* ---- QUEUE_CREATE / QUEUE_DESTROY ------------------------------------------ */

START_TEST(test_queue_create_args)
{
	struct drm_vnpu_queue_create q;
	int fd = hw_open();
	uint32_t nhwq = (uint32_t)hw_param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	uint64_t count = hw_param(fd, DRM_VNPU_PARAM_QUEUE_COUNT);

	pattern(&q, sizeof(q));
	q.hw_queue = 0;
	q.flags = 1;
	q.reserved = 0;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_QUEUE_CREATE, q, -EINVAL);
	q.flags = 0;
	q.reserved = 1ull << 63;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_QUEUE_CREATE, q, -EINVAL);
	q.reserved = 0;
	q.hw_queue = nhwq;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_QUEUE_CREATE, q, -EINVAL);
	q.hw_queue = DRM_VNPU_HW_QUEUE_ANY - 1;
	EXPECT_FAIL(fd, DRM_IOCTL_VNPU_QUEUE_CREATE, q, -EINVAL);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_QUEUE_COUNT), count);
	/* Every hardware queue by index, the last one included. */
	for (uint32_t i = 0; i < nhwq; i++) {
		uint32_t id, sync;

		ck_assert_int_eq(hw_queue_create(fd, i, &id, &sync), 0);
		ck_assert_uint_gt(id, 0);
		ck_assert_int_eq(hw_syncobj_destroy(fd, sync), 0);
		ck_assert_int_eq(hw_queue_destroy(fd, id), 0);
	}
	close(fd);
}
END_TEST

START_TEST(test_queue_limit)
{
	uint32_t ids[64], id;
	int fd = hw_open();

	/* docs/uapi.md: -ENOSPC past 64 queues of a file. */
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY,
						 &ids[i], NULL), 0);
	id = 0x5a5a;
	ck_assert_int_eq(hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &id, NULL),
			 -ENOSPC);
	ck_assert_uint_eq(id, 0x5a5a);
	ck_assert_int_eq(hw_queue_destroy(fd, ids[10]), 0);
	ck_assert_int_eq(hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &id, NULL),
			 0);
	close(fd);
}
END_TEST

START_TEST(test_queue_destroy_args)
{
	struct drm_vnpu_queue_destroy d;
	struct hw_ctx ctx;

	hw_ctx_open(&ctx);
	d.queue_id = ctx.queue;
	d.pad = 1;
	EXPECT_FAIL(ctx.fd, DRM_IOCTL_VNPU_QUEUE_DESTROY, d, -EINVAL);
	d.pad = 0;
	static const uint32_t bad[] = { 0, 65, 9999, UINT32_MAX };
	for (size_t i = 0; i < 4; i++) {
		d.queue_id = bad[i];
		EXPECT_FAIL(ctx.fd, DRM_IOCTL_VNPU_QUEUE_DESTROY, d, -ENOENT);
	}
	/* Another file's queue id is unknown here. */
	{
		int other = hw_open();

		d.queue_id = ctx.queue;
		EXPECT_FAIL(other, DRM_IOCTL_VNPU_QUEUE_DESTROY, d, -ENOENT);
		close(other);
	}
	/* Destroyed once, then unknown. */
	ck_assert_int_eq(hw_queue_destroy(ctx.fd, ctx.queue), 0);
	d.queue_id = ctx.queue;
	EXPECT_FAIL(ctx.fd, DRM_IOCTL_VNPU_QUEUE_DESTROY, d, -ENOENT);
	hw_ctx_close(&ctx);
}
END_TEST

/* ---- SUBMIT ------------------------------------------------------------------ */

static struct drm_vnpu_submit submit_base(struct args_env *e,
					  const uint32_t *list)
{
	struct drm_vnpu_submit s;
	struct vnpu_cmd nop = vnpu_nop_cmd();

	memcpy(e->ctx.cmd.map, &nop, sizeof(nop));
	memset(&s, 0, sizeof(s));
	s.queue_id = e->ctx.queue;
	s.cmd_bo = e->ctx.cmd.handle;
	s.cmd_count = 1;
	s.bo_handles = (uintptr_t)list;
	s.bo_count = 1;
	/* A recognisable output that must survive every failure. */
	s.seqno = 0xa5a5a5a5a5a5a5a5ull;
	return s;
}

static uint64_t done_seqno(struct hw_ctx *ctx)
{
	uint64_t v = 0;

	ck_assert_int_eq(hw_get_param(ctx->fd, DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
				      ctx->queue, &v), 0);
	return v;
}

/* A good submit after the bad ones: the queue's seqno did not move. */
static void expect_next_seqno(struct args_env *e, uint64_t want)
{
	struct vnpu_cmd nop = vnpu_nop_cmd();
	uint64_t seqno = 0;

	ck_assert_int_eq(hw_submit(e->ctx.fd, e->ctx.queue, &e->ctx.cmd, 0,
				   &nop, 1, &e->bo.handle, 1, 0, &seqno), 0);
	ck_assert_uint_eq(seqno, want);
	ck_assert_int_eq(hw_bo_wait(e->ctx.fd, e->bo.handle, HW_WAIT_NS, NULL),
			 0);
	ck_assert_uint_eq(done_seqno(&e->ctx), want);
}

START_TEST(test_submit_reserved)
{
	struct drm_vnpu_submit s;
	struct args_env e;
	uint32_t list[1];

	env_open(&e);
	list[0] = e.bo.handle;
	s = submit_base(&e, list);
	s.flags = ~DRM_VNPU_SUBMIT_FLAGS;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.flags = 1u << 1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.flags = 0x80000000u;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s = submit_base(&e, list);
	s.pad = 1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s = submit_base(&e, list);
	s.reserved = 1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	expect_next_seqno(&e, 1);
	hw_ctx_close(&e.ctx);
}
END_TEST

START_TEST(test_submit_counts)
{
	struct drm_vnpu_submit s;
	struct args_env e;
	uint32_t list[1];
	uint64_t max;

	env_open(&e);
	max = hw_param(e.ctx.fd, DRM_VNPU_PARAM_MAX_SUBMIT_CMDS);
	list[0] = e.bo.handle;
	s = submit_base(&e, list);
	s.cmd_count = 0;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.cmd_count = (uint32_t)max + 1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.cmd_count = UINT32_MAX;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s = submit_base(&e, list);
	s.bo_count = DRM_VNPU_MAX_SUBMIT_BOS + 1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.bo_count = UINT32_MAX;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s = submit_base(&e, list);
	s.in_syncobj_count = DRM_VNPU_MAX_SUBMIT_SYNCOBJS + 1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.in_syncobj_count = UINT32_MAX;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	expect_next_seqno(&e, 1);
	hw_ctx_close(&e.ctx);
}
END_TEST

START_TEST(test_submit_max_cmds)
{
	struct args_env e;
	struct hw_bo big;
	struct vnpu_cmd *cmds;
	uint64_t max, seqno = 0;
	uint32_t list[1];

	env_open(&e);
	max = hw_param(e.ctx.fd, DRM_VNPU_PARAM_MAX_SUBMIT_CMDS);
	hw_bo_new(e.ctx.fd, (max + 1) * sizeof(*cmds), 0, &big);
	cmds = calloc(max, sizeof(*cmds));
	ck_assert_ptr_nonnull(cmds);
	/* MAX_SUBMIT_CMDS commands: FILLs of one word each, all checked. */
	for (uint64_t i = 0; i < max; i++)
		cmds[i] = vnpu_fill_cmd(e.bo.va + i * 4, 4, (uint32_t)i + 1, 4);
	list[0] = e.bo.handle;
	ck_assert_int_eq(hw_submit(e.ctx.fd, e.ctx.queue, &big, 0, cmds,
				   (uint32_t)max, list, 1, 0, &seqno), 0);
	ck_assert_uint_eq(seqno, 1);
	ck_assert_int_eq(hw_bo_wait(e.ctx.fd, e.bo.handle, HW_WAIT_NS, NULL),
			 0);
	for (uint64_t i = 0; i < max; i++)
		ck_assert_uint_eq(((uint32_t *)e.bo.map)[i], i + 1);
	free(cmds);
	hw_ctx_close(&e.ctx);
}
END_TEST

START_TEST(test_submit_cmd_buffer_range)
{
	struct drm_vnpu_submit s;
	struct args_env e;
	uint32_t list[1];
	uint64_t cmd_size;

	env_open(&e);
	cmd_size = e.ctx.cmd.size;
	list[0] = e.bo.handle;
	s = submit_base(&e, list);
	/* Not a multiple of 8. */
	static const uint64_t odd[] = { 1, 4, 7, 12, 4097 };
	for (size_t i = 0; i < 5; i++) {
		s.cmd_offset = odd[i];
		EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	}
	/* Past the end, the last command straddling it, and wrapping. */
	s.cmd_offset = cmd_size;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.cmd_offset = cmd_size - 56;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.cmd_offset = 0;
	s.cmd_count = (uint32_t)(cmd_size / 64) + 1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.cmd_count = 1;
	s.cmd_offset = UINT64_MAX - 7;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	s.cmd_offset = 1ull << 63;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	/* The very last command slot of the BO, 8-aligned not 64: accepted. */
	{
		struct vnpu_cmd fill = vnpu_fill_cmd(e.bo.va, 64, 0x1234, 4);
		uint64_t off = cmd_size - 64 - 8 * 3;

		ck_assert_int_eq(hw_submit(e.ctx.fd, e.ctx.queue, &e.ctx.cmd,
					   off, &fill, 1, list, 1, 0, NULL), 0);
		ck_assert_int_eq(hw_bo_wait(e.ctx.fd, e.bo.handle, HW_WAIT_NS,
					    NULL), 0);
		ck_assert_uint_eq(hw_check_u32(e.bo.map, 64, 0x1234),
				  SIZE_MAX);
	}
	hw_ctx_close(&e.ctx);
}
END_TEST

START_TEST(test_submit_bad_handles)
{
	struct drm_vnpu_submit s;
	struct args_env e;
	uint32_t list[2], closed, sync;

	env_open(&e);
	ck_assert_int_eq(hw_bo_create_raw(e.ctx.fd, 4096, 0, &closed, NULL),
			 0);
	ck_assert_int_eq(hw_gem_close(e.ctx.fd, closed), 0);
	list[0] = e.bo.handle;
	list[1] = 0;
	/* Unknown queue ids. */
	s = submit_base(&e, list);
	s.queue_id = 0;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	s.queue_id = 77;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	/* Unknown and closed command BOs. */
	s = submit_base(&e, list);
	s.cmd_bo = 0;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	s.cmd_bo = closed;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	/* Unknown and closed BOs in the list, first or last. */
	s = submit_base(&e, list);
	s.bo_count = 2;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	list[1] = closed;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	list[0] = UINT32_MAX;
	list[1] = e.bo.handle;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	list[0] = e.bo.handle;
	/* Syncobjs: unknown in/out, and an in-syncobj without a fence. */
	ck_assert_int_eq(hw_syncobj_create(e.ctx.fd, 0, &sync), 0);
	s = submit_base(&e, list);
	s.out_syncobj = 9999;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	s = submit_base(&e, list);
	{
		uint32_t in[2] = { sync, 9999 };

		s.in_syncobjs = (uintptr_t)in;
		s.in_syncobj_count = 1;
		EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
		in[0] = 9999;
		EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	}
	/* A destroyed queue. */
	{
		uint32_t q2;

		ck_assert_int_eq(hw_queue_create(e.ctx.fd,
						 DRM_VNPU_HW_QUEUE_ANY, &q2,
						 NULL), 0);
		ck_assert_int_eq(hw_queue_destroy(e.ctx.fd, q2), 0);
		s = submit_base(&e, list);
		s.queue_id = q2;
		EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -ENOENT);
	}
	expect_next_seqno(&e, 1);
	hw_ctx_close(&e.ctx);
}
END_TEST

START_TEST(test_submit_bad_commands)
{
	struct drm_vnpu_submit s;
	struct args_env e;
	struct vnpu_cmd c[2];
	uint32_t list[1];

	env_open(&e);
	list[0] = e.bo.handle;
	s = submit_base(&e, list);
	s.cmd_count = 2;
	/* Unknown opcodes, in the first or the second command. */
	static const uint8_t bad_ops[] = { 0x07, 0x08, 0x42, 0x7e, 0x80, 0xff };
	for (size_t i = 0; i < sizeof(bad_ops); i++) {
		for (int at = 0; at < 2; at++) {
			c[0] = vnpu_nop_cmd();
			c[1] = vnpu_nop_cmd();
			c[at].hdr.opcode = bad_ops[i];
			memcpy(e.ctx.cmd.map, c, sizeof(c));
			EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s,
				    -EINVAL);
		}
	}
	/* Reserved header fields. */
	c[0] = vnpu_nop_cmd();
	c[1] = vnpu_nop_cmd();
	c[1].hdr.reserved0 = 1;
	memcpy(e.ctx.cmd.map, c, sizeof(c));
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	c[1] = vnpu_nop_cmd();
	c[1].hdr.reserved1 = 0x80000000u;
	memcpy(e.ctx.cmd.map, c, sizeof(c));
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EINVAL);
	/* The header's seqno and flags are the driver's: ignored. */
	c[0] = vnpu_fill_cmd(e.bo.va, 4096, 0x77777777, 4);
	c[0].hdr.seqno = UINT64_MAX;
	c[0].hdr.flags = 0xff;
	ck_assert_int_eq(hw_run(&e.ctx, c, 1, list, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(e.bo.map, 4096, 0x77777777), SIZE_MAX);
	hw_ctx_close(&e.ctx);
}
END_TEST

START_TEST(test_submit_test_inject_refused)
{
	struct drm_vnpu_submit s;
	struct args_env e;
	uint32_t list[1];
	struct vnpu_cmd c = vnpu_inject_cmd(VNPU_TEST_HANG, 0, 0);
	char was[8] = "";

	env_open(&e);
	/* Make sure injection is off (the module parameter's default). */
	ck_assert_int_ge(hw_debugfs_read("allow_test_inject", was,
					 sizeof(was)), 0);
	ck_assert_int_eq(hw_debugfs_write("allow_test_inject", "N"), 0);
	ck_assert_uint_eq(hw_param(e.ctx.fd, DRM_VNPU_PARAM_CAPABILITIES) &
				  DRM_VNPU_CAP_TEST_INJECT, 0);
	list[0] = e.bo.handle;
	s = submit_base(&e, list);
	memcpy(e.ctx.cmd.map, &c, sizeof(c));
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EPERM);
	if (was[0] == 'Y')
		hw_debugfs_write("allow_test_inject", "Y");
	expect_next_seqno(&e, 1);
	hw_ctx_close(&e.ctx);
}
END_TEST

START_TEST(test_submit_user_pointers)
{
	struct drm_vnpu_submit s;
	struct args_env e;
	uint32_t list[1];
	void *unmapped;

	env_open(&e);
	unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	ck_assert_ptr_ne(unmapped, MAP_FAILED);
	list[0] = e.bo.handle;
	/* NULL, unreadable and kernel-space BO lists. */
	s = submit_base(&e, list);
	s.bo_handles = 0;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EFAULT);
	s.bo_handles = (uintptr_t)unmapped;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EFAULT);
	s.bo_handles = 0xffff880000000000ull;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EFAULT);
	/* The same for in-syncobjs. */
	s = submit_base(&e, list);
	s.in_syncobj_count = 1;
	s.in_syncobjs = 0;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EFAULT);
	s.in_syncobjs = (uintptr_t)unmapped;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, s, -EFAULT);
	/* Zero counts ignore their pointers. */
	s = submit_base(&e, list);
	s.bo_count = 0;
	s.bo_handles = (uintptr_t)unmapped;
	s.in_syncobjs = (uintptr_t)unmapped;
	{
		struct drm_vnpu_submit ok = s;

		ck_assert_int_eq(hw_ioctl(e.ctx.fd, DRM_IOCTL_VNPU_SUBMIT,
					  &ok), 0);
		ck_assert_uint_eq(ok.seqno, 1);
	}
	/* A misaligned (but valid) handle array works. */
	{
		unsigned char raw[16];
		uint32_t *odd = (uint32_t *)(void *)(raw + 1);
		struct vnpu_cmd fill = vnpu_fill_cmd(e.bo.va, 256, 0xabcd0123, 4);
		uint64_t seqno = 0;

		memcpy(raw + 1, &e.bo.handle, 4);
		ck_assert_int_eq(hw_submit(e.ctx.fd, e.ctx.queue, &e.ctx.cmd, 0,
					   &fill, 1, odd, 1, 0, &seqno), 0);
		ck_assert_uint_eq(seqno, 2);
		ck_assert_int_eq(hw_bo_wait(e.ctx.fd, e.bo.handle, HW_WAIT_NS,
					    NULL), 0);
		ck_assert_uint_eq(hw_check_u32(e.bo.map, 256, 0xabcd0123),
				  SIZE_MAX);
	}
	munmap(unmapped, 4096);
	hw_ctx_close(&e.ctx);
}
END_TEST

/* ---- the ioctl argument pointer itself ----------------------------------- */

START_TEST(test_ioctl_arg_pointers)
{
	static const unsigned long reqs[] = {
		DRM_IOCTL_VNPU_GET_PARAM,    DRM_IOCTL_VNPU_BO_CREATE,
		DRM_IOCTL_VNPU_BO_INFO,	     DRM_IOCTL_VNPU_BO_WAIT,
		DRM_IOCTL_VNPU_QUEUE_CREATE, DRM_IOCTL_VNPU_QUEUE_DESTROY,
		DRM_IOCTL_VNPU_SUBMIT,
	};
	void *unmapped = mmap(NULL, 4096, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = hw_open();

	ck_assert_ptr_ne(unmapped, MAP_FAILED);
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		ck_assert_int_eq(hw_ioctl(fd, reqs[i], NULL), -EFAULT);
		ck_assert_int_eq(hw_ioctl(fd, reqs[i], unmapped), -EFAULT);
	}
	/* A misaligned struct pointer is fine. */
	{
		unsigned char raw[sizeof(struct drm_vnpu_get_param) + 8];
		struct drm_vnpu_get_param gp = {
			.param = DRM_VNPU_PARAM_PAGE_SIZE,
		};

		memcpy(raw + 3, &gp, sizeof(gp));
		ck_assert_int_eq(hw_ioctl(fd, DRM_IOCTL_VNPU_GET_PARAM,
					  raw + 3), 0);
		memcpy(&gp, raw + 3, sizeof(gp));
		ck_assert_uint_eq(gp.value, 4096);
	}
	/* A struct that ends on an unmapped page: the copy faults. */
	{
		char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		ck_assert_ptr_ne(two, MAP_FAILED);
		ck_assert_int_eq(munmap(two + 4096, 4096), 0);
		ck_assert_int_eq(hw_ioctl(fd, DRM_IOCTL_VNPU_SUBMIT,
					  two + 4096 - 8), -EFAULT);
		munmap(two, 4096);
	}
	munmap(unmapped, 4096);
	close(fd);
}
END_TEST

START_TEST(test_unknown_ioctls)
{
	char buf[256];
	int fd = hw_open();

	memset(buf, 0, sizeof(buf));
	/* Driver numbers past SUBMIT. */
	for (unsigned int nr = DRM_VNPU_SUBMIT + 1; nr < 0x20; nr++)
		ck_assert_int_eq(hw_ioctl(fd, DRM_IOWR(DRM_COMMAND_BASE + nr,
						       struct drm_vnpu_submit),
					  buf),
				 -EINVAL);
	close(fd);
}
END_TEST

/* ---- DRM core ioctls on this file ---------------------------------------- */

START_TEST(test_gem_close_args)
{
	struct drm_gem_close gc;
	uint32_t handle;
	int fd = hw_open();

	gc.handle = 0;
	gc.pad = 0;
	EXPECT_FAIL(fd, DRM_IOCTL_GEM_CLOSE, gc, -EINVAL);
	gc.handle = 12345;
	EXPECT_FAIL(fd, DRM_IOCTL_GEM_CLOSE, gc, -EINVAL);
	ck_assert_int_eq(hw_bo_create_raw(fd, 4096, 0, &handle, NULL), 0);
	ck_assert_int_eq(hw_gem_close(fd, handle), 0);
	gc.handle = handle;
	EXPECT_FAIL(fd, DRM_IOCTL_GEM_CLOSE, gc, -EINVAL);
	close(fd);
}
END_TEST

START_TEST(test_prime_args)
{
	struct drm_prime_handle ph;
	struct args_env e;
	struct hw_bo vram;
	uint32_t closed;
	int notdmabuf;

	env_open(&e);
	hw_bo_new(e.ctx.fd, 4096, DRM_VNPU_BO_VRAM, &vram);
	ck_assert_int_eq(hw_bo_create_raw(e.ctx.fd, 4096, 0, &closed, NULL),
			 0);
	ck_assert_int_eq(hw_gem_close(e.ctx.fd, closed), 0);
	memset(&ph, 0, sizeof(ph));
	ph.fd = -77;
	ph.flags = DRM_CLOEXEC;
	/* Unknown and closed handles. */
	ph.handle = 9999;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, ph, -ENOENT);
	ph.handle = closed;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, ph, -ENOENT);
	/* Unknown flags. */
	ph.handle = e.bo.handle;
	ph.flags = 1u << 3;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, ph, -EINVAL);
	/* VRAM BOs are not exported (either errno is documented). */
	{
		struct drm_prime_handle v = ph;
		int ret;

		v.handle = vram.handle;
		v.flags = DRM_CLOEXEC;
		ret = hw_ioctl(e.ctx.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &v);
		ck_assert_msg(ret == -EOPNOTSUPP || ret == -EINVAL,
			      "VRAM export: %d", ret);
		ck_assert_int_eq(v.fd, -77);
	}
	/* Import of a bad fd and of a file that is not a dma-buf. */
	memset(&ph, 0, sizeof(ph));
	ph.handle = 0x5a5a;
	ph.fd = -1;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, ph, -EBADF);
	ph.fd = 1000;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, ph, -EBADF);
	notdmabuf = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(notdmabuf, 0);
	ph.fd = notdmabuf;
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, ph, -EINVAL);
	ph.fd = e.ctx.fd; /* the device node itself */
	EXPECT_FAIL(e.ctx.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, ph, -EINVAL);
	close(notdmabuf);
	hw_ctx_close(&e.ctx);
}
END_TEST

START_TEST(test_syncobj_args)
{
	struct drm_syncobj_create c;
	struct drm_syncobj_destroy d;
	int fd = hw_open();

	c.handle = 0x5a5a;
	c.flags = 1u << 5;
	EXPECT_FAIL(fd, DRM_IOCTL_SYNCOBJ_CREATE, c, -EINVAL);
	d.handle = 4444;
	d.pad = 0;
	EXPECT_FAIL(fd, DRM_IOCTL_SYNCOBJ_DESTROY, d, -EINVAL);
	close(fd);
}
END_TEST

/* ---- mmap offsets ---------------------------------------------------------- */

START_TEST(test_mmap_offsets)
{
	struct args_env e;
	void *p;

	env_open(&e);
	/* Unknown offset, inside a BO's range but not its start, too long. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, e.ctx.fd, 0);
	ck_assert_ptr_eq(p, MAP_FAILED);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, e.ctx.fd,
		 (off_t)(e.bo.mmap_offset + (1ull << 40)));
	ck_assert_ptr_eq(p, MAP_FAILED);
	p = mmap(NULL, e.bo.size + 4096, PROT_READ, MAP_SHARED, e.ctx.fd,
		 (off_t)e.bo.mmap_offset);
	ck_assert_ptr_eq(p, MAP_FAILED);
	ck_assert_int_eq(errno, EINVAL);
	/* A part of the BO from its start is fine. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, e.ctx.fd,
		 (off_t)e.bo.mmap_offset);
	ck_assert_ptr_ne(p, MAP_FAILED);
	munmap(p, 4096);
	/* Another file cannot map this file's BO by its offset. */
	{
		int other = hw_open();

		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, other,
			 (off_t)e.bo.mmap_offset);
		ck_assert_ptr_eq(p, MAP_FAILED);
		close(other);
	}
	/* After GEM_CLOSE the offset is gone. */
	{
		struct hw_bo bo;
		uint64_t off;

		hw_bo_new(e.ctx.fd, 4096, 0, &bo);
		off = bo.mmap_offset;
		hw_bo_free(e.ctx.fd, &bo);
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, e.ctx.fd,
			 (off_t)off);
		ck_assert_ptr_eq(p, MAP_FAILED);
	}
	hw_ctx_close(&e.ctx);
}
END_TEST

static Suite *args_suite(void)
{
	Suite *s = suite_create("args");
	TCase *bo = tcase_create("bo");
	TCase *queue = tcase_create("queue");
	TCase *submit = tcase_create("submit");
	TCase *core = tcase_create("core");

	tcase_add_test(bo, test_get_param_struct);
	tcase_add_test(bo, test_bo_create_args);
	tcase_add_test(bo, test_bo_create_min_sizes);
	tcase_add_test(bo, test_bo_info_args);
	tcase_add_test(bo, test_bo_wait_args);
	tcase_add_test(bo, test_mmap_offsets);
	hw_suite_add(s, bo);
	tcase_add_test(queue, test_queue_create_args);
	tcase_add_test(queue, test_queue_limit);
	tcase_add_test(queue, test_queue_destroy_args);
	hw_suite_add(s, queue);
	tcase_set_timeout(submit, 120);
	tcase_add_test(submit, test_submit_reserved);
	tcase_add_test(submit, test_submit_counts);
	tcase_add_test(submit, test_submit_max_cmds);
	tcase_add_test(submit, test_submit_cmd_buffer_range);
	tcase_add_test(submit, test_submit_bad_handles);
	tcase_add_test(submit, test_submit_bad_commands);
	tcase_add_test(submit, test_submit_test_inject_refused);
	tcase_add_test(submit, test_submit_user_pointers);
	hw_suite_add(s, submit);
	tcase_add_test(core, test_ioctl_arg_pointers);
	tcase_add_test(core, test_unknown_ioctls);
	tcase_add_test(core, test_gem_close_args);
	tcase_add_test(core, test_prime_args);
	tcase_add_test(core, test_syncobj_args);
	hw_suite_add(s, core);
	return s;
}

int main(int argc, char **argv)
{
	return hw_main(argc, argv, args_suite(), 0);
}
