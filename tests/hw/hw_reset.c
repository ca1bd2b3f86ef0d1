// SPDX-License-Identifier: MIT
/*
 * hw_reset: category 8 of the in-VM hardware suite. Hangs and firmware
 * fatal errors injected through TEST_INJECT commands (allowed by the
 * module parameter allow_test_inject, which the tests turn on) and the
 * debugfs triggers: the device is reset once, the guilty context is banned
 * (its jobs -ETIMEDOUT / -ECANCELED, later SUBMIT and QUEUE_CREATE
 * -ECANCELED), innocent contexts' jobs complete with correct data, and the
 * device works afterwards. A lost interrupt only delays a job: no reset.
 *
 * This program expects resets (hw_main's HW_EXPECTS_RESET); each test
 * checks the exact number of resets it caused instead.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hw_util.h"

#define ALLOW_INJECT "/sys/module/vnpu/parameters/allow_test_inject"

static int write_sysfs(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -errno;
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

static void allow_inject(bool on)
{
	ck_assert_int_eq(write_sysfs(ALLOW_INJECT, on ? "Y" : "N"), 0);
}

static void need_test_mode(int fd)
{
	ck_assert_msg(hw_test_mode(fd),
		      "the device is not in test mode (test-mode=on)");
}

static long resets(void)
{
	long n = hw_reset_count();

	ck_assert_int_ge(n, 0);
	return n;
}

/* FILL(buf, pattern) through ctx: the innocent's work, checked. */
static void fill_and_check(struct hw_ctx *ctx, struct hw_bo *buf,
			   uint32_t pattern)
{
	struct vnpu_cmd c = vnpu_fill_cmd(buf->va, buf->size, pattern, 4);

	ck_assert_int_eq(hw_run(ctx, &c, 1, &buf->handle, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(buf->map, buf->size, pattern),
			  SIZE_MAX);
}

/* A fresh context after a reset: the device still runs jobs. */
static void device_works(void)
{
	struct hw_ctx ctx;
	struct hw_bo buf;

	hw_ctx_open(&ctx);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	hw_bo_new(ctx.fd, 64 * 1024, DRM_VNPU_BO_VRAM, &buf);
	fill_and_check(&ctx, &buf, 0x600dd00d);
	hw_ctx_close(&ctx);
}

/*
 * Guilty context G: FILL(gbuf) then the injected command (HANG or FATAL),
 * then a second job. Innocent context I has jobs before, around and after.
 * G's first job waits on a gate until everything is submitted: a FATAL is
 * handled at once, and a ban before G's second SUBMIT would refuse it.
 */
static void guilty_and_innocent(uint32_t kind)
{
	struct hw_ctx g, in;
	struct hw_bo gate, gbuf, gbuf2, ibuf, ibuf2;
	struct vnpu_cmd c[3];
	struct drm_vnpu_bo_wait w;
	uint32_t q;
	long before;

	hw_ctx_open(&g);
	need_test_mode(g.fd);
	hw_ctx_open(&in);
	hw_bo_new(g.fd, HW_PAGE_SIZE, 0, &gate);
	hw_bo_new(g.fd, HW_PAGE_SIZE, 0, &gbuf);
	hw_bo_new(g.fd, HW_PAGE_SIZE, 0, &gbuf2);
	memset(gate.map, 0, 8);
	hw_bo_new(in.fd, 256 * 1024, 0, &ibuf);
	hw_bo_new(in.fd, 256 * 1024, DRM_VNPU_BO_VRAM, &ibuf2);
	allow_inject(true);
	before = resets();

	c[0] = vnpu_fence_wait_cmd(gate.va, 1);
	c[1] = vnpu_fill_cmd(gbuf.va, gbuf.size, 0x61616161, 4);
	c[2] = vnpu_inject_cmd(kind, 0, 0);
	{
		uint32_t bos[2] = { gate.handle, gbuf.handle };

		ck_assert_int_eq(hw_submit(g.fd, g.queue, &g.cmd, 0, c, 3, bos,
					   2, 0, NULL),
				 0);
	}
	c[0] = vnpu_fill_cmd(gbuf2.va, gbuf2.size, 0x62626262, 4);
	ck_assert_int_eq(hw_submit(g.fd, g.queue, &g.cmd, 0, c, 1,
				   &gbuf2.handle, 1, 0, NULL),
			 0);
	/* The innocent's job is queued too; it runs before or after the hang. */
	c[0] = vnpu_fill_cmd(ibuf.va, ibuf.size, 0x71717171, 4);
	c[1] = vnpu_copy_cmd(ibuf.va, ibuf2.va, ibuf.size);
	{
		uint32_t bos[2] = { ibuf.handle, ibuf2.handle };

		ck_assert_int_eq(hw_submit(in.fd, in.queue, &in.cmd, 0, c, 2,
					   bos, 2, 0, NULL),
				 0);
	}
	__atomic_store_n((uint64_t *)gate.map, 1, __ATOMIC_RELEASE);

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(hw_bo_wait(g.fd, gbuf.handle, HW_WAIT_NS * 3, &w), 0);
	ck_assert_int_eq(w.job_error, -ETIMEDOUT);
	ck_assert_uint_eq(w.job_status, 0);
	/* Commands that completed before the hang keep their results. */
	ck_assert_uint_eq(hw_check_u32(gbuf.map, gbuf.size, 0x61616161),
			  SIZE_MAX);
	ck_assert_int_eq(hw_bo_wait(g.fd, gbuf2.handle, HW_WAIT_NS, &w), 0);
	ck_assert_int_eq(w.job_error, -ECANCELED);
	ck_assert_uint_eq(hw_check_u32(gbuf2.map, gbuf2.size, 0), SIZE_MAX);

	ck_assert_int_eq(hw_bo_wait(in.fd, ibuf2.handle, HW_WAIT_NS * 3, &w),
			 0);
	ck_assert_int_eq(w.job_error, 0);
	ck_assert_uint_eq(hw_check_u32(ibuf.map, ibuf.size, 0x71717171),
			  SIZE_MAX);
	ck_assert_int_eq(resets(), before + 1);

	ck_assert(hw_param(g.fd, DRM_VNPU_PARAM_CONTEXT_STATE) &
		  DRM_VNPU_CONTEXT_BANNED);
	ck_assert_uint_eq(hw_param(in.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	c[0] = vnpu_nop_cmd();
	ck_assert_int_eq(hw_submit(g.fd, g.queue, &g.cmd, 0, c, 1, NULL, 0, 0,
				   NULL),
			 -ECANCELED);
	ck_assert_int_eq(hw_queue_create(g.fd, DRM_VNPU_HW_QUEUE_ANY, &q, NULL),
			 -ECANCELED);
	/* The innocent context and the device keep working. */
	fill_and_check(&in, &ibuf, 0x72727272);
	allow_inject(false);
	hw_ctx_close(&g);
	hw_ctx_close(&in);
	device_works();
	ck_assert_int_eq(resets(), before + 1);
}

START_TEST(test_hang_bans_guilty)
{
	guilty_and_innocent(VNPU_TEST_HANG);
}
END_TEST

START_TEST(test_fatal_bans_guilty)
{
	guilty_and_innocent(VNPU_TEST_FATAL);
}
END_TEST

START_TEST(test_inject_needs_permission)
{
	struct hw_ctx ctx;
	struct vnpu_cmd c = vnpu_inject_cmd(VNPU_TEST_HANG, 0, 0);
	long before = resets();

	hw_ctx_open(&ctx);
	allow_inject(false);
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c, 1, NULL,
				   0, 0, NULL),
			 -EPERM);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	hw_ctx_close(&ctx);
	ck_assert_int_eq(resets(), before);
}
END_TEST

/* TEST_INJECT(LOST_IRQ) drops the job's completion interrupt: the
 * timeout handler finds the records and completes it, without a reset. */
START_TEST(test_lost_interrupt_command)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	struct vnpu_cmd c[2];
	long before;

	hw_ctx_open(&ctx);
	need_test_mode(ctx.fd);
	hw_bo_new(ctx.fd, 64 * 1024, 0, &buf);
	allow_inject(true);
	before = resets();
	c[0] = vnpu_inject_cmd(VNPU_TEST_LOST_IRQ, 0, 0);
	c[1] = vnpu_fill_cmd(buf.va, buf.size, 0x10571057, 4);
	ck_assert_int_eq(hw_run(&ctx, c, 2, &buf.handle, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(buf.map, buf.size, 0x10571057),
			  SIZE_MAX);
	allow_inject(false);
	fill_and_check(&ctx, &buf, 0x20572057);
	ck_assert_int_eq(resets(), before);
	hw_ctx_close(&ctx);
}
END_TEST

/* The same through the debugfs `inject` file (3: lose the next IRQ). */
START_TEST(test_lost_interrupt_debugfs)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	long before;

	hw_ctx_open(&ctx);
	need_test_mode(ctx.fd);
	hw_bo_new(ctx.fd, 64 * 1024, 0, &buf);
	before = resets();
	ck_assert_int_eq(hw_debugfs_write("inject", "3"), 0);
	fill_and_check(&ctx, &buf, 0x30573057);
	fill_and_check(&ctx, &buf, 0x40574057);
	ck_assert_int_eq(resets(), before);
	hw_ctx_close(&ctx);
}
END_TEST

/* debugfs force_reset blames nobody: contexts stay usable, data kept. */
START_TEST(test_forced_reset_blames_nobody)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	long before;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 64 * 1024, DRM_VNPU_BO_VRAM, &buf);
	fill_and_check(&ctx, &buf, 0x0f0f0f0f);
	before = resets();
	ck_assert_int_eq(hw_debugfs_write("force_reset", "1"), 0);
	ck_assert_int_eq(resets(), before + 1);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	/* VRAM survives the reset: the device's memory is not cleared. */
	ck_assert_uint_eq(hw_check_u32(buf.map, buf.size, 0x0f0f0f0f),
			  SIZE_MAX);
	fill_and_check(&ctx, &buf, 0xf0f0f0f0);
	hw_ctx_close(&ctx);
}
END_TEST

/* A register-injected hang (debugfs inject 1) has no guilty command: the
 * job that times out is blamed; a new context works afterwards. */
START_TEST(test_register_hang)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	struct vnpu_cmd c;
	long before;
	int ret;

	hw_ctx_open(&ctx);
	need_test_mode(ctx.fd);
	hw_bo_new(ctx.fd, 64 * 1024, 0, &buf);
	before = resets();
	ck_assert_int_eq(hw_debugfs_write("inject", "1"), 0);
	c = vnpu_fill_cmd(buf.va, buf.size, 0x0badf00d, 4);
	ret = hw_run(&ctx, &c, 1, &buf.handle, 1, NULL);
	ck_assert_msg(ret == -ETIMEDOUT, "the stuck job: %d", ret);
	ck_assert_int_eq(resets(), before + 1);
	ck_assert(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE) &
		  DRM_VNPU_CONTEXT_BANNED);
	hw_ctx_close(&ctx);
	device_works();
}
END_TEST

/* ---- a reset never runs a command twice ----------------------------- */

#define INC_ROWS 4096
#define INC_COLS 1024 /* 16 MiB of f32 */
#define INC_SECONDS 8

struct resetter {
	volatile bool stop;
	int period_ms;
	long done;
	int err;
};

static void *reset_thread(void *p)
{
	struct resetter *r = p;

	while (!r->stop) {
		usleep((useconds_t)r->period_ms * 1000);
		if (hw_debugfs_write("force_reset", "1")) {
			r->err = 1;
			break;
		}
		r->done++;
	}
	return NULL;
}

/* x += 1 in place (BINARY ADD, b broadcast from `one`): the argument block. */
static uint32_t increment_kargs(void *args, uint64_t x_va, uint64_t one_va)
{
	struct vnpu_kargs_header h = { 2, sizeof(struct vnpu_kp_binary), 0 };
	struct vnpu_kargs_buffer b[2] = {
		{ x_va, 4ull * INC_ROWS * INC_COLS,
		  VNPU_ACCESS_READ | VNPU_ACCESS_WRITE, 0 },
		{ one_va, 4, VNPU_ACCESS_READ, 0 },
	};
	struct vnpu_kp_binary kp;
	char *p = args;

	memset(&kp, 0, sizeof(kp));
	kp.op = VNPU_BINARY_ADD;
	kp.alpha = 1.0;
	kp.a = vnpu_tensor_f32_2d(0, INC_ROWS, INC_COLS, INC_COLS, 1);
	kp.b = vnpu_tensor_f32_2d(1, INC_ROWS, INC_COLS, 0, 0);
	kp.out = kp.a;
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), b, sizeof(b));
	memcpy(p + sizeof(h) + sizeof(b), &kp, sizeof(kp));
	return sizeof(h) + sizeof(b) + sizeof(kp);
}

/*
 * Launches of x += 1 on 16 MiB of VRAM, one after another, while root
 * resets the device every 250 ms. A launch that was running at a reset
 * may have partly run: it must fail as lost (-EIO, LOST), never run again
 * and succeed. So every element ends between the number of launches that
 * succeeded and that plus the number lost.
 */
START_TEST(test_reset_never_runs_twice)
{
	struct resetter rs = { .period_ms = 250 };
	struct hw_bo x, one, args;
	struct hw_ctx ctx;
	pthread_t t;
	uint64_t ok = 0, lost = 0;
	uint32_t size, list[3];
	struct vnpu_cmd c;
	const float *v;
	size_t bad;
	int64_t t0;
	long before;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 4ull * INC_ROWS * INC_COLS, DRM_VNPU_BO_VRAM, &x);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &one);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &args);
	memset(x.map, 0, x.size);
	*(float *)one.map = 1.0f;
	size = increment_kargs(args.map, x.va, one.va);
	c = vnpu_launch_cmd(VNPU_KERNEL_BINARY, 4, args.va, size);
	list[0] = x.handle;
	list[1] = one.handle;
	list[2] = args.handle;
	before = resets();
	ck_assert_int_eq(pthread_create(&t, NULL, reset_thread, &rs), 0);
	t0 = hw_now_ns();
	while (hw_now_ns() - t0 < INC_SECONDS * 1000000000ll) {
		struct drm_vnpu_bo_wait w;
		int ret = hw_run(&ctx, &c, 1, list, 3, &w);

		if (!ret) {
			ok++;
			continue;
		}
		ck_assert_msg(ret == -EIO && w.job_status == VNPU_STATUS_LOST,
			      "a launch failed with %d, job_status %u", ret,
			      w.job_status);
		lost++;
	}
	rs.stop = true;
	pthread_join(t, NULL);
	ck_assert_int_eq(rs.err, 0);
	v = x.map;
	/* One assertion: each one is a message to Check's parent. */
	for (bad = 0; bad < (size_t)INC_ROWS * INC_COLS; bad++)
		if (v[bad] < (float)ok || v[bad] > (float)(ok + lost))
			break;
	ck_assert_msg(bad == (size_t)INC_ROWS * INC_COLS,
		      "element %zu is %.0f after %" PRIu64
		      " launches succeeded and %" PRIu64 " were lost",
		      bad, (double)v[bad], ok, lost);
	hw_figure("%ld resets in %d s: %" PRIu64 " launches of x += 1 "
		  "succeeded, %" PRIu64 " were lost in a reset, none ran twice",
		  resets() - before, INC_SECONDS, ok, lost);
	ck_assert_int_ge(resets() - before, INC_SECONDS * 2);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	hw_bo_free(ctx.fd, &x);
	hw_bo_free(ctx.fd, &one);
	hw_bo_free(ctx.fd, &args);
	hw_ctx_close(&ctx);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_reset");
	TCase *tc = tcase_create("reset");
	int ret;

	/* Each hang costs a timeout period or two plus a firmware boot. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_inject_needs_permission);
	tcase_add_test(tc, test_hang_bans_guilty);
	tcase_add_test(tc, test_fatal_bans_guilty);
	tcase_add_test(tc, test_lost_interrupt_command);
	tcase_add_test(tc, test_lost_interrupt_debugfs);
	tcase_add_test(tc, test_forced_reset_blames_nobody);
	tcase_add_test(tc, test_register_hang);
	tcase_add_test(tc, test_reset_never_runs_twice);
	/* Not hw_suite_add: these tests reset on purpose and count them. */
	suite_add_tcase(s, tc);
	ret = hw_main(argc, argv, s, HW_EXPECTS_RESET);
	write_sysfs(ALLOW_INJECT, "N");
	return ret;
}
