// SPDX-License-Identifier: MIT
/*
 * hw suite, category 2: GET_PARAM. Every parameter of enum drm_vnpu_param
 * with its documented value or invariant (docs/uapi.md), the per-queue
 * parameters with good and bad queue ids, unknown parameters and a non-zero
 * index where none is taken (-EINVAL, value untouched). The usage counters
 * show an unprivileged file only its own user's or its own figures.
 */
#include "hw_util.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAST_PARAM DRM_VNPU_PARAM_JOB_TIMEOUT_MS
#define UNTOUCHED 0x5a5a5a5a5a5a5a5aull

/* /sys/module/vnpu/parameters/<name>, a number (ck_assert). */
static uint64_t module_param_uint(const char *name)
{
	char path[128];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/vnpu/parameters/%s", name);
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fscanf(f, "%llu", &v), 1);
	fclose(f);
	return v;
}

static bool is_queue_param(uint32_t p)
{
	return p == DRM_VNPU_PARAM_QUEUE_ERROR ||
	       p == DRM_VNPU_PARAM_QUEUE_ERROR_SEQNO ||
	       p == DRM_VNPU_PARAM_QUEUE_DONE_SEQNO ||
	       p == DRM_VNPU_PARAM_QUEUE_ERROR_STATUS ||
	       p == DRM_VNPU_PARAM_QUEUE_ERROR_INFO;
}

/* Indexed by a DRM_VNPU_QUOTA_* resource (test_quota_params). */
static bool is_quota_param(uint32_t p)
{
	return p == DRM_VNPU_PARAM_QUOTA_LIMIT ||
	       p == DRM_VNPU_PARAM_QUOTA_USED;
}

START_TEST(test_identity)
{
	int fd = hw_open();

	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_DEVICE_ID), 0x1af410f7);
	ck_assert_uint_lt(hw_param(fd, DRM_VNPU_PARAM_REVISION), 256);
	ck_assert_uint_ne(hw_param(fd, DRM_VNPU_PARAM_HW_VERSION) >> 16, 0);
	ck_assert_uint_ne(hw_param(fd, DRM_VNPU_PARAM_FW_VERSION), 0);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_PAGE_SIZE), 4096);
	close(fd);
}
END_TEST

START_TEST(test_geometry)
{
	int fd = hw_open();
	uint64_t va_start = hw_param(fd, DRM_VNPU_PARAM_VA_START);
	uint64_t va_size = hw_param(fd, DRM_VNPU_PARAM_VA_SIZE);

	ck_assert_uint_ge(hw_param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES), 1);
	ck_assert_uint_ge(hw_param(fd, DRM_VNPU_PARAM_NUM_CORES), 1);
	ck_assert_uint_ge(hw_param(fd, DRM_VNPU_PARAM_NUM_CONTEXTS), 2);
	ck_assert_uint_ge(hw_param(fd, DRM_VNPU_PARAM_VRAM_SIZE), 1u << 20);
	ck_assert_uint_le(hw_param(fd, DRM_VNPU_PARAM_VRAM_USED),
			  hw_param(fd, DRM_VNPU_PARAM_VRAM_SIZE));
	/* docs/uapi.md: VAs come from [1 MiB, 2^39). */
	ck_assert_uint_ge(va_start, 1u << 20);
	ck_assert_uint_eq(va_start % 4096, 0);
	ck_assert_uint_gt(va_size, 0);
	ck_assert_uint_le(va_start + va_size, 1ull << 39);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_MAX_SUBMIT_CMDS), 1023);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_QUEUE_DEPTH), 64);
	/* The module parameter (docs/uapi.md). */
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_JOB_TIMEOUT_MS),
			  module_param_uint("job_timeout_ms"));
	close(fd);
}
END_TEST

START_TEST(test_capabilities)
{
	int fd = hw_open();
	uint64_t caps = hw_param(fd, DRM_VNPU_PARAM_CAPABILITIES);

	ck_assert_uint_eq(caps & ~(DRM_VNPU_CAP_TEST_MODE |
				   DRM_VNPU_CAP_TEST_INJECT), 0);
	/* The suite boots the device with test-mode=on. */
	ck_assert_msg(caps & DRM_VNPU_CAP_TEST_MODE,
		      "device not in test mode (caps %#llx)",
		      (unsigned long long)caps);
	close(fd);
}
END_TEST

START_TEST(test_context_params)
{
	int a = hw_open(), b = hw_open();
	uint64_t nctx = hw_param(a, DRM_VNPU_PARAM_NUM_CONTEXTS);
	uint64_t ida = hw_param(a, DRM_VNPU_PARAM_CONTEXT_ID);
	uint64_t idb = hw_param(b, DRM_VNPU_PARAM_CONTEXT_ID);
	uint64_t open_a = hw_param(a, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS);
	int c;

	ck_assert_uint_lt(ida, nctx);
	ck_assert_uint_lt(idb, nctx);
	ck_assert_uint_ne(ida, idb);
	ck_assert_uint_ge(open_a, 2);
	ck_assert_uint_eq(hw_param(a, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	ck_assert_uint_eq(hw_param(a, DRM_VNPU_PARAM_FAULT_COUNT), 0);
	ck_assert_uint_eq(hw_param(a, DRM_VNPU_PARAM_FAULT_VA), 0);
	ck_assert_uint_eq(hw_param(a, DRM_VNPU_PARAM_FAULT_STATUS), 0);
	c = hw_open();
	ck_assert_uint_eq(hw_param(a, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS),
			  open_a + 1);
	close(c);
	ck_assert_uint_eq(hw_param(a, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS),
			  open_a);
	close(b);
	close(a);
}
END_TEST

START_TEST(test_clocks_move)
{
	int fd = hw_open();
	uint64_t t0 = hw_param(fd, DRM_VNPU_PARAM_TIMESTAMP);
	uint64_t h0 = hw_param(fd, DRM_VNPU_PARAM_HEARTBEAT);
	uint64_t t1, h1;

	/* The firmware heart-beats while idle; give it time under TCG. */
	for (int i = 0; i < 300; i++) {
		usleep(10000);
		h1 = hw_param(fd, DRM_VNPU_PARAM_HEARTBEAT);
		if (h1 != h0)
			break;
	}
	t1 = hw_param(fd, DRM_VNPU_PARAM_TIMESTAMP);
	ck_assert_uint_gt(t1, t0);
	ck_assert_msg(h1 != h0, "HEARTBEAT stood still at %llu for 3 s",
		      (unsigned long long)h0);
	close(fd);
}
END_TEST

START_TEST(test_queue_params)
{
	struct hw_ctx ctx;
	uint64_t count0, count1, v = UNTOUCHED;
	uint32_t q2;

	hw_ctx_open(&ctx);
	count0 = hw_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_COUNT);
	ck_assert_int_eq(hw_queue_create(ctx.fd, DRM_VNPU_HW_QUEUE_ANY, &q2,
					 NULL), 0);
	count1 = hw_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_COUNT);
	ck_assert_uint_eq(count1, count0 + 1);
	for (uint32_t p = 0; p <= LAST_PARAM; p++) {
		if (!is_queue_param(p))
			continue;
		ck_assert_int_eq(hw_get_param(ctx.fd, p, ctx.queue, &v), 0);
		ck_assert_uint_eq(v, 0);
		v = UNTOUCHED;
		ck_assert_int_eq(hw_get_param(ctx.fd, p, 0, &v), -ENOENT);
		ck_assert_int_eq(hw_get_param(ctx.fd, p, 12345, &v), -ENOENT);
		ck_assert_int_eq(hw_get_param(ctx.fd, p, UINT32_MAX, &v),
				 -ENOENT);
		ck_assert_uint_eq(v, UNTOUCHED);
	}
	/* A destroyed queue is unknown. */
	ck_assert_int_eq(hw_queue_destroy(ctx.fd, q2), 0);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
				      q2, &v), -ENOENT);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_COUNT),
			  count0);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_queue_param_other_file)
{
	struct hw_ctx ctx;
	int other = hw_open();
	uint64_t v = UNTOUCHED;

	hw_ctx_open(&ctx);
	/* Queue ids are per file. */
	ck_assert_int_eq(hw_get_param(other, DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
				      ctx.queue, &v), -ENOENT);
	ck_assert_uint_eq(v, UNTOUCHED);
	close(other);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_done_seqno_follows_jobs)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	struct vnpu_cmd nop = vnpu_nop_cmd();
	uint64_t done = 0;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 4096, 0, &bo);
	for (int i = 1; i <= 3; i++) {
		ck_assert_int_eq(hw_run(&ctx, &nop, 1, &bo.handle, 1, NULL), 0);
		ck_assert_int_eq(hw_get_param(ctx.fd,
					      DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
					      ctx.queue, &done), 0);
		ck_assert_uint_eq(done, (uint64_t)i);
	}
	hw_bo_free(ctx.fd, &bo);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_every_param_valid)
{
	struct hw_ctx ctx;

	hw_ctx_open(&ctx);
	for (uint32_t p = 0; p <= LAST_PARAM; p++) {
		uint64_t v = UNTOUCHED;
		uint32_t index = is_queue_param(p) ? ctx.queue : 0;

		ck_assert_msg(hw_get_param(ctx.fd, p, index, &v) == 0,
			      "param %u refused", p);
	}
	hw_ctx_close(&ctx);
}
END_TEST

/* The quota parameters: what root's file may hold (no share applies to
 * CAP_SYS_ADMIN), what its user holds, and only known resources. */
START_TEST(test_quota_params)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	uint64_t v = UNTOUCHED, before;

	hw_ctx_open(&ctx);
	for (uint32_t r = DRM_VNPU_QUOTA_CONTEXTS; r <= DRM_VNPU_QUOTA_PINNED;
	     r++) {
		ck_assert_int_eq(hw_get_param(ctx.fd,
					      DRM_VNPU_PARAM_QUOTA_LIMIT, r,
					      &v),
				 0);
		ck_assert_uint_eq(v, UINT64_MAX);
	}
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUOTA_USED,
				      DRM_VNPU_QUOTA_CONTEXTS, &v),
			 0);
	ck_assert_uint_ge(v, 1);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUOTA_USED,
				      DRM_VNPU_QUOTA_VRAM, &before),
			 0);
	hw_bo_new(ctx.fd, 1u << 20, DRM_VNPU_BO_VRAM, &bo);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUOTA_USED,
				      DRM_VNPU_QUOTA_VRAM, &v),
			 0);
	ck_assert_uint_eq(v, before + (1u << 20));
	hw_bo_free(ctx.fd, &bo);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUOTA_USED,
				      DRM_VNPU_QUOTA_VRAM, &v),
			 0);
	ck_assert_uint_eq(v, before);
	v = UNTOUCHED;
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUOTA_LIMIT,
				      DRM_VNPU_QUOTA_PINNED + 1, &v),
			 -EINVAL);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_QUOTA_USED,
				      UINT32_MAX, &v),
			 -EINVAL);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_FILE_MAX_JOBS, 1,
				      &v),
			 -EINVAL);
	ck_assert_uint_eq(v, UNTOUCHED);
	ck_assert_uint_gt(hw_param(ctx.fd, DRM_VNPU_PARAM_FILE_JOB_BYTES),
			  DRM_VNPU_JOB_BYTES(1, 0));
	hw_ctx_close(&ctx);
}
END_TEST

#define OTHERS_VRAM (8u << 20)

/* GET_PARAM that must succeed, in a child without Check (UINT64_MAX). */
static uint64_t child_param(int fd, uint32_t param, uint32_t index)
{
	uint64_t v;

	return hw_get_param(fd, param, index, &v) ? UINT64_MAX : v;
}

/*
 * Child of test_usage_of_others_hidden, as uid 1000: its usage counters are
 * its user's (VRAM, open files) and its file's (queues, failed jobs), none
 * of root's. The step that went wrong is the exit status.
 */
static int usage_child(void)
{
	uint64_t vram, files;
	uint32_t handle, queue;
	int fd = hw_open_raw();

	if (fd < 0)
		return 10;
	vram = child_param(fd, DRM_VNPU_PARAM_VRAM_USED, 0);
	if (vram != child_param(fd, DRM_VNPU_PARAM_QUOTA_USED,
				DRM_VNPU_QUOTA_VRAM) ||
	    vram >= OTHERS_VRAM)
		return 11;
	files = child_param(fd, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS, 0);
	if (files != child_param(fd, DRM_VNPU_PARAM_QUOTA_USED,
				 DRM_VNPU_QUOTA_CONTEXTS))
		return 12;
	if (child_param(fd, DRM_VNPU_PARAM_QUEUE_COUNT, 0) != 0)
		return 13;
	if (child_param(fd, DRM_VNPU_PARAM_JOB_ERROR_COUNT, 0) != 0)
		return 14;
	/* Its own use shows. */
	if (hw_bo_create_raw(fd, 1u << 20, DRM_VNPU_BO_VRAM, &handle, NULL) ||
	    child_param(fd, DRM_VNPU_PARAM_VRAM_USED, 0) != vram + (1u << 20))
		return 15;
	if (hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &queue, NULL) ||
	    child_param(fd, DRM_VNPU_PARAM_QUEUE_COUNT, 0) != 1)
		return 16;
	close(fd);
	return 0;
}

/*
 * Root (uid A) holds VRAM, files, a queue and a failed job: uid B's
 * GET_PARAM reveals none of it, while root's file sees the device totals.
 */
START_TEST(test_usage_of_others_hidden)
{
	struct drm_vnpu_bo_wait w;
	struct hw_ctx a;
	struct hw_bo vram;
	struct vnpu_cmd c;
	int extra = hw_open(), status;
	pid_t pid;

	hw_ctx_open(&a);
	hw_bo_new(a.fd, OTHERS_VRAM, DRM_VNPU_BO_VRAM, &vram);
	/* A job writing the guard page after the command BO fails. */
	c = vnpu_fill_cmd(a.cmd.va + a.cmd.size, 4096, 0, 4);
	ck_assert_int_eq(hw_run(&a, &c, 1, &a.cmd.handle, 1, &w), -EFAULT);
	ck_assert_uint_ge(hw_param(a.fd, DRM_VNPU_PARAM_VRAM_USED),
			  OTHERS_VRAM);
	ck_assert_uint_ge(hw_param(a.fd, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS), 2);
	ck_assert_uint_ge(hw_param(a.fd, DRM_VNPU_PARAM_QUEUE_COUNT), 1);
	ck_assert_uint_ge(hw_param(a.fd, DRM_VNPU_PARAM_JOB_ERROR_COUNT), 1);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		gid_t groups[1] = { HW_ACCEL_GID };

		if (setgroups(1, groups) || setgid(HW_USER_UID) ||
		    setuid(HW_USER_UID))
			_exit(100);
		_exit(usage_child());
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0, "child step %d",
		      WEXITSTATUS(status));
	hw_bo_free(a.fd, &vram);
	close(extra);
	hw_ctx_close(&a);
}
END_TEST

START_TEST(test_unknown_params)
{
	static const uint32_t bad[] = {
		LAST_PARAM + 1, LAST_PARAM + 2, 64, 255, 0x10000,
		0x7fffffff, 0x80000000u, UINT32_MAX,
	};
	int fd = hw_open();

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = UNTOUCHED;

		ck_assert_int_eq(hw_get_param(fd, bad[i], 0, &v), -EINVAL);
		ck_assert_uint_eq(v, UNTOUCHED);
	}
	close(fd);
}
END_TEST

START_TEST(test_nonzero_index)
{
	int fd = hw_open();

	for (uint32_t p = 0; p <= LAST_PARAM; p++) {
		static const uint32_t idx[] = { 1, 2, 0x80000000u, UINT32_MAX };

		if (is_queue_param(p) || is_quota_param(p))
			continue;
		for (size_t i = 0; i < 4; i++) {
			uint64_t v = UNTOUCHED;

			ck_assert_msg(hw_get_param(fd, p, idx[i], &v) ==
					      -EINVAL && v == UNTOUCHED,
				      "param %u index %#x not refused", p,
				      idx[i]);
		}
	}
	close(fd);
}
END_TEST

START_TEST(test_value_is_output_only)
{
	/* A garbage input value is ignored, not a reserved field. */
	struct drm_vnpu_get_param gp = {
		.param = DRM_VNPU_PARAM_PAGE_SIZE, .value = UINT64_MAX,
	};
	int fd = hw_open();

	ck_assert_int_eq(hw_ioctl(fd, DRM_IOCTL_VNPU_GET_PARAM, &gp), 0);
	ck_assert_uint_eq(gp.value, 4096);
	close(fd);
}
END_TEST

static Suite *param_suite(void)
{
	Suite *s = suite_create("param");
	TCase *valid = tcase_create("valid");
	TCase *invalid = tcase_create("invalid");

	tcase_add_test(valid, test_identity);
	tcase_add_test(valid, test_geometry);
	tcase_add_test(valid, test_capabilities);
	tcase_add_test(valid, test_context_params);
	tcase_add_test(valid, test_clocks_move);
	tcase_add_test(valid, test_queue_params);
	tcase_add_test(valid, test_done_seqno_follows_jobs);
	tcase_add_test(valid, test_every_param_valid);
	tcase_add_test(valid, test_value_is_output_only);
	tcase_add_test(valid, test_quota_params);
	tcase_add_test(valid, test_usage_of_others_hidden);
	hw_suite_add(s, valid);
	tcase_add_test(invalid, test_unknown_params);
	tcase_add_test(invalid, test_nonzero_index);
	tcase_add_test(invalid, test_queue_param_other_file);
	hw_suite_add(s, invalid);
	return s;
}

int main(int argc, char **argv)
{
	return hw_main(argc, argv, param_suite(), 0);
}
