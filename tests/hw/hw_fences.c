// SPDX-License-Identifier: MIT
/*
 * hw_fences: category 7 of the in-VM hardware suite. BO_WAIT's absolute
 * deadlines (a past one polls, a future one sleeps until the job ends),
 * ordering across queues through in-syncobjs, the out-syncobj exported as
 * a sync_file and polled, and a failed job's error carried by its fences.
 *
 * A job is held on the device with FENCE_WAIT on a word of a system BO that
 * the test writes from the CPU to release it (well within the driver's
 * 10-period FENCE_WAIT limit, so no reset).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hw_util.h"

#define MS (1000ll * 1000)

/* A context whose queue runs `FENCE_WAIT(gate >= 1)` before other work. */
struct gated {
	struct hw_ctx ctx;
	struct hw_bo gate;	/* word 0 is the release word */
	struct hw_bo buf;
};

/*
 * The gated queue is on hardware queue 0: the tests that need a queue that
 * is not behind the gate put it on hardware queue 1 (HW_QUEUE_ANY may pick
 * either, by the calling CPU).
 */
static void gated_open(struct gated *g)
{
	hw_ctx_open(&g->ctx);
	ck_assert_int_eq(hw_queue_destroy(g->ctx.fd, g->ctx.queue), 0);
	ck_assert_int_eq(hw_queue_create(g->ctx.fd, 0, &g->ctx.queue,
					 &g->ctx.syncobj),
			 0);
	hw_bo_new(g->ctx.fd, HW_PAGE_SIZE, 0, &g->gate);
	hw_bo_new(g->ctx.fd, 64 * 1024, 0, &g->buf);
	memset(g->gate.map, 0, HW_PAGE_SIZE);
	memset(g->buf.map, 0, g->buf.size);
}

static void gate_release(struct gated *g)
{
	__atomic_store_n((volatile uint64_t *)g->gate.map, 1, __ATOMIC_SEQ_CST);
}

static int bo_wait_abs(int fd, uint32_t handle, int64_t deadline,
		       struct drm_vnpu_bo_wait *out)
{
	struct drm_vnpu_bo_wait w = { .handle = handle,
				      .timeout_ns = deadline };
	int ret = hw_ioctl(fd, DRM_IOCTL_VNPU_BO_WAIT, &w);

	if (!ret && out)
		*out = w;
	return ret;
}

/* Submits FENCE_WAIT(gate) + FILL(buf) listing both BOs. */
static void submit_gated_fill(struct gated *g, uint32_t pattern,
			      uint32_t out_syncobj)
{
	struct vnpu_cmd c[2] = {
		vnpu_fence_wait_cmd(g->gate.va, 1),
		vnpu_fill_cmd(g->buf.va, g->buf.size, pattern, 4),
	};
	uint32_t bos[2] = { g->buf.handle, g->gate.handle };

	ck_assert_int_eq(hw_submit(g->ctx.fd, g->ctx.queue, &g->ctx.cmd, 0, c,
				   2, bos, 2, out_syncobj, NULL),
			 0);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

#define POLL_ROUNDS 7
/* A poll looks the BO up and tests its fences: a few times the work of
 * GET_PARAM. A sleep is at least a scheduler tick, hundreds of those. */
#define POLL_FACTOR 50

START_TEST(test_wait_past_deadline_polls)
{
	struct gated g;
	struct drm_vnpu_bo_wait w = { 0 };
	int64_t param_ns[POLL_ROUNDS], poll_ns[2 * POLL_ROUNDS];
	bool held;
	int r0 = 0, r1 = 0;

	gated_open(&g);
	submit_gated_fill(&g, 0x11111111, 0);
	/* Deadline 0 and one in the past: the job is blocked, so both are
	 * -ETIMEDOUT, and at once. "At once" is measured against GET_PARAM,
	 * an ioctl that never sleeps, timed in the same rounds: medians, so
	 * that a loaded host preempting one call fails nothing. */
	for (int i = 0; i < POLL_ROUNDS; i++) {
		int64_t t0 = hw_now_ns();

		(void)hw_param(g.ctx.fd, DRM_VNPU_PARAM_TIMESTAMP);
		param_ns[i] = hw_now_ns() - t0;
		t0 = hw_now_ns();
		r0 |= bo_wait_abs(g.ctx.fd, g.buf.handle, 0, NULL) != -ETIMEDOUT;
		poll_ns[2 * i] = hw_now_ns() - t0;
		t0 = hw_now_ns();
		r1 |= bo_wait_abs(g.ctx.fd, g.buf.handle, t0 - 1000 * MS,
				  NULL) != -ETIMEDOUT;
		poll_ns[2 * i + 1] = hw_now_ns() - t0;
	}
	held = hw_check_u32(g.buf.map, g.buf.size, 0) == SIZE_MAX;
	gate_release(&g);
	qsort(param_ns, POLL_ROUNDS, sizeof(param_ns[0]), cmp_i64);
	qsort(poll_ns, 2 * POLL_ROUNDS, sizeof(poll_ns[0]), cmp_i64);
	hw_figure("polling BO_WAIT: %.1f us median, %.1f us max; GET_PARAM "
		  "%.1f us median (%d rounds)",
		  (double)poll_ns[POLL_ROUNDS] / 1e3,
		  (double)poll_ns[2 * POLL_ROUNDS - 1] / 1e3,
		  (double)param_ns[POLL_ROUNDS / 2] / 1e3, POLL_ROUNDS);
	ck_assert_msg(poll_ns[POLL_ROUNDS] <=
			      POLL_FACTOR * param_ns[POLL_ROUNDS / 2],
		      "a polling BO_WAIT took %lld us, %d times GET_PARAM's "
		      "%lld us: it slept",
		      (long long)(poll_ns[POLL_ROUNDS] / 1000), POLL_FACTOR,
		      (long long)(param_ns[POLL_ROUNDS / 2] / 1000));
	ck_assert_msg(held, "the gated FILL ran before its gate opened");
	ck_assert_msg(!r0, "BO_WAIT with deadline 0 was not -ETIMEDOUT");
	ck_assert_msg(!r1, "BO_WAIT with a past deadline was not -ETIMEDOUT");
	ck_assert_int_eq(hw_bo_wait(g.ctx.fd, g.buf.handle, HW_WAIT_NS, &w),
			 0);
	ck_assert_int_eq(w.job_error, 0);
	ck_assert_uint_eq(hw_check_u32(g.buf.map, g.buf.size, 0x11111111),
			  SIZE_MAX);
	/* Finished: a polling wait now succeeds. */
	ck_assert_int_eq(bo_wait_abs(g.ctx.fd, g.buf.handle, 0, &w), 0);
	ck_assert_int_eq(w.job_error, 0);
	hw_ctx_close(&g.ctx);
}
END_TEST

START_TEST(test_wait_future_deadline_sleeps)
{
	struct gated g;
	int64_t t0, spent;
	int r;

	gated_open(&g);
	submit_gated_fill(&g, 0x22222222, 0);
	/* Still blocked: the wait must last until its deadline. */
	t0 = hw_now_ns();
	r = bo_wait_abs(g.ctx.fd, g.buf.handle, t0 + 300 * MS, NULL);
	spent = hw_now_ns() - t0;
	/* Released before asserting: a held job would outlive the test. */
	gate_release(&g);
	/* The driver sleeps in jiffies: allow one tick (HZ >= 100). */
	ck_assert_msg(spent >= 300 * MS - 10 * MS,
		      "BO_WAIT returned %lld us before its deadline",
		      (long long)((300 * MS - spent) / 1000));
	ck_assert_int_eq(r, -ETIMEDOUT);
	ck_assert_int_eq(bo_wait_abs(g.ctx.fd, g.buf.handle,
				     hw_now_ns() + HW_WAIT_NS, NULL),
			 0);
	ck_assert_uint_eq(hw_check_u32(g.buf.map, g.buf.size, 0x22222222),
			  SIZE_MAX);
	hw_ctx_close(&g.ctx);
}
END_TEST

struct release_arg {
	struct gated *g;
	int64_t delay_ns;
};

static void *release_later(void *p)
{
	struct release_arg *a = p;
	struct timespec ts = { a->delay_ns / 1000000000,
			       a->delay_ns % 1000000000 };

	nanosleep(&ts, NULL);
	gate_release(a->g);
	return NULL;
}

/* A sleeping BO_WAIT wakes when the job ends, long before its deadline. */
START_TEST(test_wait_wakes_on_completion)
{
	struct gated g;
	struct release_arg a = { &g, 200 * MS };
	struct drm_vnpu_bo_wait w = { 0 };
	pthread_t t;
	int64_t t0;

	gated_open(&g);
	submit_gated_fill(&g, 0x33333333, 0);
	t0 = hw_now_ns();
	ck_assert_int_eq(pthread_create(&t, NULL, release_later, &a), 0);
	ck_assert_int_eq(bo_wait_abs(g.ctx.fd, g.buf.handle,
				     t0 + HW_WAIT_NS, &w),
			 0);
	ck_assert_msg(hw_now_ns() - t0 >= 200 * MS,
		      "BO_WAIT returned before the job could finish");
	pthread_join(t, NULL);
	ck_assert_int_eq(w.job_error, 0);
	ck_assert_uint_eq(hw_check_u32(g.buf.map, g.buf.size, 0x33333333),
			  SIZE_MAX);
	hw_ctx_close(&g.ctx);
}
END_TEST

/*
 * Queue A: FENCE_WAIT(gate) then FILL(src) -> out-syncobj S. Queue B (another
 * hardware queue when there is one) waits for S, then copies src to dst.
 * B's BO list holds only dst and its command BO, so no implicit sync orders
 * it: only the in-syncobj does. Without it B would copy zeros.
 */
START_TEST(test_syncobj_orders_queues)
{
	struct gated g;
	struct hw_bo dst, cmd_b;
	uint32_t qb, qb_sync, s;
	uint64_t nhw = 0, point;
	struct vnpu_cmd c;
	struct drm_vnpu_submit sub;
	uint32_t bos[2];

	gated_open(&g);
	nhw = hw_param(g.ctx.fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	ck_assert_int_eq(hw_queue_create(g.ctx.fd,
					 nhw > 1 ? 1 : DRM_VNPU_HW_QUEUE_ANY,
					 &qb, &qb_sync),
			 0);
	hw_bo_new(g.ctx.fd, g.buf.size, 0, &dst);
	hw_bo_new(g.ctx.fd, HW_PAGE_SIZE, 0, &cmd_b);
	memset(dst.map, 0xee, dst.size);
	ck_assert_int_eq(hw_syncobj_create(g.ctx.fd, 0, &s), 0);
	submit_gated_fill(&g, 0x44444444, s);

	c = vnpu_copy_cmd(g.buf.va, dst.va, dst.size);
	memcpy(cmd_b.map, &c, sizeof(c));
	bos[0] = dst.handle;
	bos[1] = cmd_b.handle;
	memset(&sub, 0, sizeof(sub));
	sub.queue_id = qb;
	sub.cmd_bo = cmd_b.handle;
	sub.cmd_count = 1;
	sub.bo_handles = (uintptr_t)bos;
	sub.bo_count = 2;
	sub.in_syncobjs = (uintptr_t)&s;
	sub.in_syncobj_count = 1;
	ck_assert_int_eq(hw_ioctl(g.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, &sub), 0);
	ck_assert_uint_eq(sub.seqno, 1);

	/* B must not run while A is held. */
	usleep(100 * 1000);
	ck_assert_int_eq(hw_bo_wait(g.ctx.fd, dst.handle, 0, NULL),
			 -ETIMEDOUT);
	ck_assert_uint_eq(hw_check_u32(dst.map, dst.size, 0xeeeeeeee),
			  SIZE_MAX);
	gate_release(&g);
	ck_assert_int_eq(hw_bo_wait(g.ctx.fd, dst.handle, HW_WAIT_NS, NULL),
			 0);
	ck_assert_uint_eq(hw_check_u32(dst.map, dst.size, 0x44444444),
			  SIZE_MAX);
	point = sub.seqno;
	ck_assert_int_eq(hw_syncobj_wait(g.ctx.fd, &qb_sync, &point, 1,
					 HW_WAIT_NS),
			 0);
	hw_ctx_close(&g.ctx);
}
END_TEST

/*
 * Implicit sync against EXPLICIT_SYNC: job A (held by a gate) and job B on
 * another queue share a BO. Without the flag B waits for A; with it B
 * runs at once. BO_WAIT on the shared BO waits for every job either way,
 * and a job without the flag does not wait for an explicit one.
 */
static void shared_bo_case(bool explicit_b)
{
	struct gated g;
	struct hw_bo cmd_b, side;
	uint32_t qb, qb_sync, bos[3];
	uint64_t nhw;
	struct vnpu_cmd c;
	struct drm_vnpu_submit sub;
	uint64_t point;

	gated_open(&g);
	nhw = hw_param(g.ctx.fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	ck_assert_int_eq(hw_queue_create(g.ctx.fd,
					 nhw > 1 ? 1 : DRM_VNPU_HW_QUEUE_ANY,
					 &qb, &qb_sync),
			 0);
	hw_bo_new(g.ctx.fd, HW_PAGE_SIZE, 0, &cmd_b);
	hw_bo_new(g.ctx.fd, HW_PAGE_SIZE, 0, &side);
	memset(side.map, 0, side.size);
	submit_gated_fill(&g, 0x11111111, 0);

	/* B writes a page of its own but lists the shared buf too. */
	c = vnpu_fill_cmd(side.va, side.size, 0x22222222, 4);
	memcpy(cmd_b.map, &c, sizeof(c));
	bos[0] = side.handle;
	bos[1] = g.buf.handle;
	bos[2] = cmd_b.handle;
	memset(&sub, 0, sizeof(sub));
	sub.queue_id = qb;
	sub.flags = explicit_b ? DRM_VNPU_SUBMIT_EXPLICIT_SYNC : 0;
	sub.cmd_bo = cmd_b.handle;
	sub.cmd_count = 1;
	sub.bo_handles = (uintptr_t)bos;
	sub.bo_count = 3;
	ck_assert_int_eq(hw_ioctl(g.ctx.fd, DRM_IOCTL_VNPU_SUBMIT, &sub), 0);
	point = sub.seqno;
	if (explicit_b) {
		ck_assert_int_eq(hw_syncobj_wait(g.ctx.fd, &qb_sync, &point, 1,
						 HW_WAIT_NS),
				 0);
		ck_assert_uint_eq(hw_check_u32(side.map, side.size,
					       0x22222222),
				  SIZE_MAX);
		/* A is still held: BO_WAIT on the shared BO says so. */
		ck_assert_int_eq(hw_bo_wait(g.ctx.fd, g.buf.handle, 0, NULL),
				 -ETIMEDOUT);
	} else {
		usleep(100 * 1000);
		ck_assert_int_eq(hw_syncobj_wait(g.ctx.fd, &qb_sync, &point, 1,
						 0),
				 -ETIME);
		ck_assert_uint_eq(hw_check_u32(side.map, side.size, 0),
				  SIZE_MAX);
	}
	gate_release(&g);
	ck_assert_int_eq(hw_bo_wait(g.ctx.fd, g.buf.handle, HW_WAIT_NS, NULL),
			 0);
	ck_assert_int_eq(hw_syncobj_wait(g.ctx.fd, &qb_sync, &point, 1,
					 HW_WAIT_NS),
			 0);
	ck_assert_uint_eq(hw_check_u32(g.buf.map, g.buf.size, 0x11111111),
			  SIZE_MAX);
	ck_assert_uint_eq(hw_check_u32(side.map, side.size, 0x22222222),
			  SIZE_MAX);
	hw_bo_free(g.ctx.fd, &cmd_b);
	hw_bo_free(g.ctx.fd, &side);
	hw_ctx_close(&g.ctx);
}

START_TEST(test_shared_bo_implicit_sync)
{
	shared_bo_case(false);
}
END_TEST

START_TEST(test_shared_bo_explicit_sync)
{
	shared_bo_case(true);
}
END_TEST

START_TEST(test_submit_flags_checked)
{
	struct hw_ctx ctx;
	struct vnpu_cmd c = vnpu_nop_cmd();
	struct drm_vnpu_submit sub;

	hw_ctx_open(&ctx);
	memcpy(ctx.cmd.map, &c, sizeof(c));
	memset(&sub, 0, sizeof(sub));
	sub.queue_id = ctx.queue;
	sub.cmd_bo = ctx.cmd.handle;
	sub.cmd_count = 1;
	sub.flags = 1u << 1;
	ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_VNPU_SUBMIT, &sub),
			 -EINVAL);
	sub.flags = ~0u;
	ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_VNPU_SUBMIT, &sub),
			 -EINVAL);
	sub.flags = DRM_VNPU_SUBMIT_EXPLICIT_SYNC;
	ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_VNPU_SUBMIT, &sub), 0);
	ck_assert_int_eq(hw_bo_wait(ctx.fd, ctx.cmd.handle, HW_WAIT_NS, NULL),
			 0);
	hw_ctx_close(&ctx);
}
END_TEST

/* The out-syncobj as a sync_file: not readable while the job is held,
 * POLLIN once it ends. */
START_TEST(test_sync_file_poll)
{
	struct gated g;
	struct drm_syncobj_handle h;
	struct pollfd p;
	uint32_t s;

	gated_open(&g);
	ck_assert_int_eq(hw_syncobj_create(g.ctx.fd, 0, &s), 0);
	submit_gated_fill(&g, 0x55555555, s);
	memset(&h, 0, sizeof(h));
	h.handle = s;
	h.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
	h.fd = -1;
	ck_assert_int_eq(hw_ioctl(g.ctx.fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h),
			 0);
	ck_assert_int_ge(h.fd, 0);
	p.fd = h.fd;
	p.events = POLLIN;
	p.revents = 0;
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	gate_release(&g);
	p.revents = 0;
	ck_assert_int_eq(poll(&p, 1, (int)(HW_WAIT_NS / MS)), 1);
	ck_assert(p.revents & POLLIN);
	ck_assert_uint_eq(hw_check_u32(g.buf.map, g.buf.size, 0x55555555),
			  SIZE_MAX);
	close(h.fd);
	hw_ctx_close(&g.ctx);
}
END_TEST

/*
 * A job of NOP + FILL(unmapped VA): its out-syncobj and timeline point
 * signal, and BO_WAIT names the error: -EFAULT, MMU_FAULT, the VA and the
 * command index.
 */
START_TEST(test_fault_reaches_fence)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	struct drm_vnpu_bo_wait w;
	const uint64_t bad_va = 0x3000; /* below VA_START: never mapped */
	struct vnpu_cmd c[2] = { vnpu_nop_cmd(), vnpu_fill_cmd(bad_va, 4096, 7, 4) };
	uint64_t seqno = 0;
	uint32_t s;

	hw_ctx_open(&ctx);
	ck_assert_uint_gt(hw_param(ctx.fd, DRM_VNPU_PARAM_VA_START), bad_va);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &buf);
	ck_assert_int_eq(hw_syncobj_create(ctx.fd, 0, &s), 0);
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, c, 2,
				   &buf.handle, 1, s, &seqno),
			 0);
	ck_assert_int_eq(hw_syncobj_wait(ctx.fd, &s, NULL, 1, HW_WAIT_NS), 0);
	ck_assert_int_eq(hw_syncobj_wait(ctx.fd, &ctx.syncobj, &seqno, 1,
					 HW_WAIT_NS),
			 0);
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(bo_wait_abs(ctx.fd, buf.handle, 0, &w), 0);
	ck_assert_int_eq(w.job_error, -EFAULT);
	ck_assert_uint_eq(w.job_status, VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(w.job_info, bad_va);
	ck_assert_uint_eq(w.job_cmd, 1);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_FAULT_VA), bad_va);
	hw_ctx_close(&ctx);
}
END_TEST

/*
 * A job whose middle command the device rejects (FILL width 3) fails with
 * -EIO and INVALID_FIELD for command 1; the commands around it still ran.
 */
START_TEST(test_rejected_command_reaches_fence)
{
	struct hw_ctx ctx;
	struct hw_bo a, b;
	struct drm_vnpu_bo_wait w;
	struct vnpu_cmd c[3];
	uint32_t bos[2];
	uint64_t err = 0;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &a);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &b);
	c[0] = vnpu_fill_cmd(a.va, a.size, 0x01020304, 4);
	c[1] = vnpu_fill_cmd(b.va, 3 * 256, 9, 3);
	c[2] = vnpu_fill_cmd(b.va, b.size, 0x0a0b0c0d, 4);
	bos[0] = a.handle;
	bos[1] = b.handle;
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(hw_run(&ctx, c, 3, bos, 2, &w), -EIO);
	ck_assert_int_eq(w.job_error, -EIO);
	ck_assert_uint_eq(w.job_status, VNPU_STATUS_INVALID_FIELD);
	ck_assert_uint_eq(w.job_cmd, 1);
	ck_assert_uint_eq(hw_check_u32(a.map, a.size, 0x01020304), SIZE_MAX);
	ck_assert_uint_eq(hw_check_u32(b.map, b.size, 0x0a0b0c0d), SIZE_MAX);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_ERROR,
				      ctx.queue, &err),
			 0);
	ck_assert_uint_eq(err, EIO);
	/* Not a sticky context state: the next job runs. */
	c[0] = vnpu_fill_cmd(a.va, a.size, 0x5a5a5a5a, 4);
	ck_assert_int_eq(hw_run(&ctx, c, 1, bos, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(a.map, a.size, 0x5a5a5a5a), SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_fences");
	TCase *tc = tcase_create("fences");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_wait_past_deadline_polls);
	tcase_add_test(tc, test_wait_future_deadline_sleeps);
	tcase_add_test(tc, test_wait_wakes_on_completion);
	tcase_add_test(tc, test_syncobj_orders_queues);
	tcase_add_test(tc, test_shared_bo_implicit_sync);
	tcase_add_test(tc, test_shared_bo_explicit_sync);
	tcase_add_test(tc, test_submit_flags_checked);
	tcase_add_test(tc, test_sync_file_poll);
	tcase_add_test(tc, test_fault_reaches_fence);
	tcase_add_test(tc, test_rejected_command_reaches_fence);
	hw_suite_add(s, tc);
	return hw_main(argc, argv, s, 0);
}
