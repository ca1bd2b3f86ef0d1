// SPDX-License-Identifier: MIT
/*
 * hw_race: the ioctls raced. Several threads of several processes call
 * create / destroy / close / submit / wait / export / import / VA_RANGE on
 * the SAME small ranges of ids (GEM handles, queue ids, syncobj handles
 * 1..RACE_IDS), so that one thread's object is another's target while it is
 * being set up or torn down:
 *  - processes 0 and 1 (root) share one open file (forked after the open):
 *    eight threads on one context, across two processes;
 *  - process 2 (unprivileged, held to the per-user shares) has two files of
 *    its own, exports BOs from one and imports them into the other, and
 *    closes and reopens the second while its threads use it.
 * The single-threaded hw_fuzz cannot find a use-after-free between two
 * ioctls; this can. Seeded (HW_RACE_SEED, printed) and bounded in time
 * (HW_RACE_SECONDS, default 6). Passing: no crash, a clean kernel log
 * (vm.sh fails the run otherwise), every answer 0 or a documented errno,
 * no device reset, and afterwards no file, queue or VRAM left behind and a
 * fresh context that works.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#include "hw_util.h"

#define RACE_PROCS 3
#define RACE_THREADS 4
#define RACE_IDS 16
#define RACE_OPS 14

static uint64_t seed = 0x5ace0fdeadbeefull;
static int seconds = 6;

static const char *const op_name[RACE_OPS] = {
	"BO_CREATE",	"GEM_CLOSE",	  "BO_INFO+mmap",  "BO_WAIT",
	"QUEUE_CREATE", "QUEUE_DESTROY",  "SUBMIT",	   "SYNCOBJ_CREATE",
	"SYNCOBJ_DESTROY", "SYNCOBJ_WAIT", "PRIME",	   "VA_RANGE",
	"GET_PARAM",	"reopen",
};

/* What one process's threads share. */
struct race_proc {
	int fd;		  /* the file every thread uses */
	int *other_fd;	  /* process 2: its second file, closed and reopened */
	int64_t deadline; /* hw_now_ns() */
	uint64_t seed;
};

struct race_thread {
	struct race_proc *p;
	uint64_t rng;
	long calls[RACE_OPS];
	long bad[RACE_OPS]; /* answers outside the documented errnos */
	int bad_errno;
	long answers[RACE_OPS][2]; /* 0, and an error */
};

static uint32_t below(struct race_thread *t, uint32_t n)
{
	return (uint32_t)(hw_rand(&t->rng) % n);
}

static uint32_t some_id(struct race_thread *t)
{
	return 1 + below(t, RACE_IDS);
}

/*
 * The errnos the UAPI documents for these calls; anything else (ENODEV,
 * EIO, an oops's EFAULT on a good pointer...) is a failure.
 */
static bool documented(int err)
{
	switch (err) {
	case 0:
	case -EINVAL:
	case -ENOENT:
	case -EBUSY:
	case -ENOMEM:
	case -EDQUOT:
	case -ENOSPC:
	case -ECANCELED:
	case -EBADF:
	case -ENOTTY:
	case -EOPNOTSUPP:
	case -ETIME:
	case -ETIMEDOUT:
		return true;
	default:
		return false;
	}
}

static void note(struct race_thread *t, int op, int err)
{
	t->calls[op]++;
	t->answers[op][err != 0]++;
	if (!documented(err)) {
		t->bad[op]++;
		t->bad_errno = -err;
	}
}

/* A command buffer's first command: NOP, or a FILL of a VA that may be
 * anyone's (a fault is the context's own business). */
static void write_cmd(struct race_thread *t, void *map, uint64_t va)
{
	struct vnpu_cmd c = below(t, 2) ? vnpu_nop_cmd()
					: vnpu_fill_cmd(va & ~4095ull, 4096,
							below(t, 256), 4);

	memcpy(map, &c, sizeof(c));
}

static void race_call(struct race_thread *t)
{
	struct race_proc *p = t->p;
	int op = (int)below(t, p->other_fd ? RACE_OPS : RACE_OPS - 1);
	int fd = p->fd, ret = 0;
	uint32_t ids[4];

	for (int i = 0; i < 4; i++)
		ids[i] = some_id(t);
	if (p->other_fd && below(t, 2))
		fd = __atomic_load_n(p->other_fd, __ATOMIC_RELAXED);
	switch (op) {
	case 0: {
		uint32_t h;
		uint64_t va;

		ret = hw_bo_create_raw(fd, 4096ull << below(t, 5),
				       below(t, 3) ? 0 : DRM_VNPU_BO_VRAM, &h,
				       &va);
		break;
	}
	case 1:
		ret = hw_gem_close(fd, ids[0]);
		break;
	case 2: {
		struct drm_vnpu_bo_info info;

		ret = hw_bo_info(fd, ids[0], &info);
		if (!ret) {
			void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					 MAP_SHARED, fd, (off_t)info.mmap_offset);

			if (map != MAP_FAILED) {
				write_cmd(t, map, info.device_va);
				munmap(map, 4096);
			}
		}
		break;
	}
	case 3: {
		struct drm_vnpu_bo_wait w = {
			.handle = ids[0],
			.timeout_ns = hw_now_ns() + 1000 * (int64_t)below(t, 2000),
		};

		ret = hw_ioctl(fd, DRM_IOCTL_VNPU_BO_WAIT, &w);
		break;
	}
	case 4: {
		uint32_t q, s;

		ret = hw_queue_create(fd, below(t, 2) ? DRM_VNPU_HW_QUEUE_ANY
						      : below(t, 4),
				      &q, &s);
		break;
	}
	case 5:
		ret = hw_queue_destroy(fd, ids[0]);
		break;
	case 6: {
		struct drm_vnpu_submit s = {
			.queue_id = ids[0],
			.cmd_bo = ids[1],
			.cmd_count = 1,
			.bo_handles = (uintptr_t)&ids[2],
			.bo_count = below(t, 3),
			.flags = below(t, 2) ? DRM_VNPU_SUBMIT_EXPLICIT_SYNC : 0,
			.in_syncobjs = (uintptr_t)&ids[3],
			.in_syncobj_count = below(t, 4) ? 0 : 1,
			.out_syncobj = below(t, 4) ? 0 : some_id(t),
		};

		ret = hw_ioctl(fd, DRM_IOCTL_VNPU_SUBMIT, &s);
		break;
	}
	case 7: {
		uint32_t h;

		ret = hw_syncobj_create(fd, below(t, 2), &h);
		break;
	}
	case 8:
		ret = hw_syncobj_destroy(fd, ids[0]);
		break;
	case 9: {
		uint64_t points[2] = { below(t, 4), below(t, 4) };

		ret = hw_syncobj_wait(fd, ids, below(t, 2) ? points : NULL,
				      1 + below(t, 2),
				      1000 * (int64_t)below(t, 2000));
		break;
	}
	case 10: {
		int dmabuf = -1;
		uint32_t h;

		ret = hw_prime_export(fd, ids[0], &dmabuf);
		if (!ret) {
			int into = p->other_fd && below(t, 2)
					   ? __atomic_load_n(p->other_fd,
							     __ATOMIC_RELAXED)
					   : p->fd;

			ret = hw_prime_import(into, dmabuf, &h);
			close(dmabuf);
		}
		break;
	}
	case 11: {
		uint64_t start = (1ull << 20) << below(t, 12);
		struct drm_vnpu_va_range r = {
			.start = start,
			.end = start + ((64ull << 20) << below(t, 8)),
		};

		ret = hw_ioctl(fd, DRM_IOCTL_VNPU_VA_RANGE, &r);
		break;
	}
	case 12: {
		uint64_t v;
		static const uint32_t params[] = {
			DRM_VNPU_PARAM_QUEUE_ERROR,
			DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
			DRM_VNPU_PARAM_CONTEXT_STATE,
			DRM_VNPU_PARAM_QUOTA_USED,
		};
		uint32_t param = params[below(t, 4)];

		ret = hw_get_param(fd, param,
				   param == DRM_VNPU_PARAM_CONTEXT_STATE ? 0
				   : param == DRM_VNPU_PARAM_QUOTA_USED
					   ? below(t, 3)
					   : ids[0],
				   &v);
		break;
	}
	case 13: {
		/* Close the second file under the other threads' calls. */
		int old = __atomic_exchange_n(p->other_fd, -1,
					      __ATOMIC_ACQ_REL);
		int fresh;

		if (old >= 0)
			close(old);
		fresh = hw_open_raw();
		ret = fresh < 0 ? fresh : 0;
		if (fresh >= 0 &&
		    !__atomic_compare_exchange_n(p->other_fd, &(int){ -1 },
						 fresh, false,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			close(fresh);
		break;
	}
	}
	note(t, op, ret);
}

static void *race_thread_main(void *arg)
{
	struct race_thread *t = arg;

	while (hw_now_ns() < t->p->deadline)
		race_call(t);
	return NULL;
}

/* One process: RACE_THREADS threads; exit status 0 when every answer was
 * documented. Prints its call counts. */
static int race_proc_main(struct race_proc *p, int index)
{
	struct race_thread t[RACE_THREADS];
	pthread_t tid[RACE_THREADS];
	long calls = 0, bad = 0, ok[RACE_OPS] = { 0 }, err[RACE_OPS] = { 0 };
	char mix[512];
	size_t len = 0;

	for (int i = 0; i < RACE_THREADS; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].p = p;
		t[i].rng = p->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
		if (pthread_create(&tid[i], NULL, race_thread_main, &t[i]))
			return 2;
	}
	for (int i = 0; i < RACE_THREADS; i++) {
		pthread_join(tid[i], NULL);
		for (int op = 0; op < RACE_OPS; op++) {
			calls += t[i].calls[op];
			bad += t[i].bad[op];
			ok[op] += t[i].answers[op][0];
			err[op] += t[i].answers[op][1];
			if (t[i].bad[op])
				printf("process %d thread %d: %s answered "
				       "%s (%ld times)\n",
				       index, i, op_name[op],
				       strerror(t[i].bad_errno), t[i].bad[op]);
		}
	}
	for (int op = 0; op < RACE_OPS && len < sizeof(mix); op++)
		if (ok[op] + err[op])
			len += (size_t)snprintf(mix + len, sizeof(mix) - len,
						" %s %ld/%ld", op_name[op],
						ok[op], ok[op] + err[op]);
	hw_figure("process %d: %ld calls from %d threads, %ld undocumented "
		  "answers; succeeded/calls:%s",
		  index, calls, RACE_THREADS, bad, mix);
	return bad ? 1 : 0;
}

static void env_config(void)
{
	const char *s = getenv("HW_RACE_SEED"), *n = getenv("HW_RACE_SECONDS");

	if (s)
		seed = strtoull(s, NULL, 0);
	if (n && atoi(n) > 0)
		seconds = atoi(n);
}

START_TEST(test_race_ioctls)
{
	int check = hw_open(), shared;
	uint64_t open0 = hw_param(check, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS);
	uint64_t queues0 = hw_param(check, DRM_VNPU_PARAM_QUEUE_COUNT);
	uint64_t vram0 = hw_param(check, DRM_VNPU_PARAM_VRAM_USED);
	int64_t deadline;
	pid_t pid[RACE_PROCS];
	struct hw_ctx ctx;
	struct hw_bo bo;
	struct vnpu_cmd c;
	int status, bad = 0;

	env_config();
	hw_figure("seed %#" PRIx64 ", %d s (HW_RACE_SEED, HW_RACE_SECONDS)",
		  seed, seconds);
	shared = hw_open();
	deadline = hw_now_ns() + seconds * 1000000000ll;
	for (int i = 0; i < RACE_PROCS; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0) {
			struct race_proc p = {
				.fd = shared,
				.deadline = deadline,
				.seed = seed + (uint64_t)i,
			};
			int other;

			close(check);
			if (i == 2) {
				gid_t groups[1] = { HW_ACCEL_GID };

				close(shared);
				if (setgroups(1, groups) ||
				    setgid(HW_USER_UID) || setuid(HW_USER_UID))
					_exit(100);
				p.fd = hw_open_raw();
				other = hw_open_raw();
				if (p.fd < 0 || other < 0)
					_exit(101);
				p.other_fd = &other;
			}
			fflush(stdout);
			_exit(race_proc_main(&p, i));
		}
	}
	close(shared);
	for (int i = 0; i < RACE_PROCS; i++) {
		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("process %d: status %#x\n", i, status);
			bad = 1;
		}
	}
	ck_assert_msg(!bad, "a racing process crashed or got an undocumented "
			    "answer (see above)");
	/* Every file closed: nothing of theirs is left once their last
	 * jobs have ended. */
	{
		int64_t t0 = hw_now_ns();

		while ((hw_param(check, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS) !=
				open0 ||
			hw_param(check, DRM_VNPU_PARAM_VRAM_USED) != vram0) &&
		       hw_now_ns() - t0 < HW_WAIT_NS)
			usleep(10000);
	}
	ck_assert_uint_eq(hw_param(check, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS),
			  open0);
	ck_assert_uint_eq(hw_param(check, DRM_VNPU_PARAM_QUEUE_COUNT), queues0);
	ck_assert_uint_eq(hw_param(check, DRM_VNPU_PARAM_VRAM_USED), vram0);
	close(check);
	/* And the device still works. */
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &bo);
	c = vnpu_fill_cmd(bo.va, HW_PAGE_SIZE, 0x12345678, 4);
	ck_assert_int_eq(hw_run(&ctx, &c, 1, &bo.handle, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(bo.map, HW_PAGE_SIZE, 0x12345678),
			  SIZE_MAX);
	hw_bo_free(ctx.fd, &bo);
	hw_ctx_close(&ctx);
}
END_TEST

/* ---- one race aimed at: QUEUE_CREATE against QUEUE_DESTROY of its id ---- */

struct qrace {
	int fd;
	int64_t deadline;
	long created, destroyed, bad;
};

static void *qrace_creator(void *arg)
{
	struct qrace *r = arg;

	while (hw_now_ns() < r->deadline) {
		uint32_t q, s;
		int ret = hw_queue_create(r->fd, DRM_VNPU_HW_QUEUE_ANY, &q, &s);

		if (!ret) {
			r->created++;
			hw_syncobj_destroy(r->fd, s);
		} else if (!documented(ret)) {
			r->bad++;
		}
	}
	return NULL;
}

/* Destroys the ids a new queue gets (the lowest free ones) as fast as it
 * can: some land while the creator is still setting the queue up. */
static void *qrace_destroyer(void *arg)
{
	struct qrace *r = arg;
	uint32_t id = 1;

	while (hw_now_ns() < r->deadline) {
		int ret = hw_queue_destroy(r->fd, id);

		if (!ret)
			r->destroyed++;
		else if (!documented(ret))
			r->bad++;
		id = id % 3 + 1;
	}
	return NULL;
}

START_TEST(test_queue_create_against_destroy)
{
	struct qrace r = {
		.fd = hw_open(),
		.deadline = hw_now_ns() + 2000000000ll,
	};
	pthread_t t[3];

	ck_assert_int_eq(pthread_create(&t[0], NULL, qrace_creator, &r), 0);
	ck_assert_int_eq(pthread_create(&t[1], NULL, qrace_destroyer, &r), 0);
	ck_assert_int_eq(pthread_create(&t[2], NULL, qrace_destroyer, &r), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	hw_figure("QUEUE_CREATE against QUEUE_DESTROY of its id for 2 s: "
		  "%ld created, %ld destroyed, %ld undocumented answers",
		  r.created, r.destroyed, r.bad);
	ck_assert_int_eq(r.bad, 0);
	ck_assert_int_gt(r.destroyed, 0);
	close(r.fd);
}
END_TEST

/*
 * SUBMIT answers the job's seqno; the job may have run and been freed
 * before the ioctl returns (a NOP completes at once), so the answer must
 * not be read from the job. Jobs of one queue get consecutive seqnos.
 */
START_TEST(test_submit_seqno_while_job_ends)
{
	struct vnpu_cmd nop = vnpu_nop_cmd();
	struct hw_ctx ctx;
	uint64_t seqno, prev = 0;
	int64_t deadline = hw_now_ns() + 2000000000ll;
	long jobs = 0, wrong = 0;

	hw_ctx_open(&ctx);
	while (hw_now_ns() < deadline) {
		int ret = hw_submit(ctx.fd, ctx.queue, &ctx.cmd,
				    64ull * (jobs % 64), &nop, 1, NULL, 0, 0,
				    &seqno);

		if (ret == -EBUSY)
			continue;
		ck_assert_int_eq(ret, 0);
		if (seqno != prev + 1 && wrong++ < 5)
			printf("SUBMIT %ld answered seqno %#" PRIx64
			       " after %#" PRIx64 "\n",
			       jobs, seqno, prev);
		prev = seqno;
		jobs++;
	}
	hw_figure("%ld NOP jobs submitted in 2 s, %ld wrong seqnos", jobs,
		  wrong);
	ck_assert_int_eq(wrong, 0);
	hw_ctx_close(&ctx);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_race");
	TCase *tc = tcase_create("race");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_race_ioctls);
	tcase_add_test(tc, test_queue_create_against_destroy);
	tcase_add_test(tc, test_submit_seqno_while_job_ends);
	hw_suite_add(s, tc);
	return hw_main(argc, argv, s, 0);
}
