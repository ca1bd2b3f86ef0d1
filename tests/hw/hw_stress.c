// SPDX-License-Identifier: MIT
/*
 * hw_stress: category 10 of the in-VM hardware suite. Several processes,
 * each with several threads on their own queues (and one shared file per
 * process), submit FILL / DMA_COPY jobs at once; every result is checked
 * against the pattern the thread chose. Also many threads sharing one queue
 * and a BO (implicit ordering), and fds opened and closed with jobs in
 * flight. Bounded to a few seconds under TCG.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hw_util.h"

#define PROCS 4
#define THREADS 3
#define ROUNDS 12
#define BUF_SIZE (32 * 1024)

struct worker {
	int fd;
	uint32_t id;
	int failed;		/* 0, else the step that failed */
	char why[96];
};

/*
 * One thread: its own queue and BOs on the shared fd. Each round: FILL src
 * with a fresh pattern, copy src to dst in the same job (in order), a
 * second job copies dst to back; both jobs are waited for through back.
 */
static void *worker_main(void *p)
{
	struct worker *w = p;
	struct hw_ctx ctx;
	struct hw_bo src, dst, back;
	uint32_t bos[3];
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ w->id;
	int r, ret;

	memset(&ctx, 0, sizeof(ctx));
	ctx.fd = w->fd;
	if (hw_queue_create(w->fd, DRM_VNPU_HW_QUEUE_ANY, &ctx.queue,
			    &ctx.syncobj) ||
	    hw_bo_create(w->fd, 64 * 1024, 0, &ctx.cmd) ||
	    hw_bo_create(w->fd, BUF_SIZE, (w->id & 1) ? DRM_VNPU_BO_VRAM : 0,
			 &src) ||
	    hw_bo_create(w->fd, BUF_SIZE, 0, &dst) ||
	    hw_bo_create(w->fd, BUF_SIZE, 0, &back)) {
		w->failed = 1;
		snprintf(w->why, sizeof(w->why), "setup");
		return NULL;
	}
	bos[0] = back.handle;
	bos[1] = src.handle;
	bos[2] = dst.handle;
	for (r = 0; r < ROUNDS; r++) {
		uint32_t pattern = (uint32_t)hw_rand(&rng) | 1;
		struct vnpu_cmd c[2] = {
			vnpu_fill_cmd(src.va, BUF_SIZE, pattern, 4),
			vnpu_copy_cmd(src.va, dst.va, BUF_SIZE),
		};
		struct vnpu_cmd c2 = vnpu_copy_cmd(dst.va, back.va, BUF_SIZE);
		struct drm_vnpu_bo_wait bw;

		ret = hw_submit(w->fd, ctx.queue, &ctx.cmd, 0, c, 2, bos + 1, 2,
				0, NULL);
		/* Offset 128: the first job's commands were copied at submit
		 * already, but keep them apart for clarity. */
		if (!ret)
			ret = hw_submit(w->fd, ctx.queue, &ctx.cmd, 128, &c2, 1,
					bos, 3, 0, NULL);
		if (!ret)
			ret = hw_bo_wait(w->fd, back.handle, HW_WAIT_NS, &bw);
		if (ret || bw.job_error) {
			w->failed = 2;
			snprintf(w->why, sizeof(w->why),
				 "round %d: %d job_error %d", r, ret,
				 ret ? 0 : bw.job_error);
			return NULL;
		}
		if (hw_check_u32(back.map, BUF_SIZE, pattern) != SIZE_MAX ||
		    hw_check_u32(dst.map, BUF_SIZE, pattern) != SIZE_MAX) {
			w->failed = 3;
			snprintf(w->why, sizeof(w->why),
				 "round %d: data %#x, want %#x", r,
				 ((uint32_t *)back.map)[0], pattern);
			return NULL;
		}
	}
	hw_bo_free(w->fd, &src);
	hw_bo_free(w->fd, &dst);
	hw_bo_free(w->fd, &back);
	hw_bo_free(w->fd, &ctx.cmd);
	if (hw_queue_destroy(w->fd, ctx.queue)) {
		w->failed = 4;
		snprintf(w->why, sizeof(w->why), "QUEUE_DESTROY");
	}
	hw_syncobj_destroy(w->fd, ctx.syncobj);
	return NULL;
}

/* One process: THREADS workers on one fd. Exit status 0 = all right. */
static int process_main(uint32_t proc)
{
	struct worker w[THREADS];
	pthread_t t[THREADS];
	int fd = hw_open_raw(), i, bad = 0;

	if (fd < 0)
		return 10;
	for (i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].fd = fd;
		w[i].id = proc * THREADS + (uint32_t)i;
		if (pthread_create(&t[i], NULL, worker_main, &w[i]))
			return 11;
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		if (w[i].failed) {
			fprintf(stderr, "process %u thread %d: %s\n", proc, i,
				w[i].why);
			bad = 1;
		}
	}
	if (hw_param(fd, DRM_VNPU_PARAM_CONTEXT_STATE))
		bad = 1;
	close(fd);
	return bad;
}

START_TEST(test_processes_and_threads)
{
	pid_t pid[PROCS];
	int i, status, bad = 0;

	for (i = 0; i < PROCS; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0)
			_exit(process_main((uint32_t)i));
	}
	/* The parent is a fifth client meanwhile. */
	bad |= process_main(PROCS);
	for (i = 0; i < PROCS; i++) {
		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "process %d: status %#x\n", i, status);
			bad = 1;
		}
	}
	ck_assert_msg(!bad, "a worker's jobs failed (see stderr)");
}
END_TEST

static uint64_t queue_param(int fd, uint32_t param, uint32_t queue)
{
	uint64_t v = UINT64_MAX;

	ck_assert_int_eq(hw_get_param(fd, param, queue, &v), 0);
	return v;
}

struct shared_queue {
	struct hw_ctx *ctx;
	struct hw_bo *counter;
	int submitted;
	int err;
};

/*
 * Threads submit to ONE queue, each job a FILL of a shared BO: the queue
 * keeps every job (retrying -EBUSY when QUEUE_DEPTH is reached) and they all
 * finish, without error, as points 1..N of its timeline.
 */
static void *shared_submitter(void *p)
{
	struct shared_queue *sq = p;
	int i;

	for (i = 0; i < 16; i++) {
		struct vnpu_cmd c = vnpu_fill_cmd(sq->counter->va, HW_PAGE_SIZE,
						0x01010101u * (uint32_t)i, 4);
		int ret;

		do {
			ret = hw_submit(sq->ctx->fd, sq->ctx->queue,
					&sq->ctx->cmd, 0, &c, 1,
					&sq->counter->handle, 1, 0, NULL);
			if (ret == -EBUSY)
				usleep(1000);
		} while (ret == -EBUSY);
		if (ret) {
			__atomic_store_n(&sq->err, ret, __ATOMIC_RELAXED);
			return NULL;
		}
		__atomic_add_fetch(&sq->submitted, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

START_TEST(test_threads_one_queue)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	struct shared_queue sq;
	pthread_t t[6];
	uint64_t done, point;
	int i;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &bo);
	memset(&sq, 0, sizeof(sq));
	sq.ctx = &ctx;
	sq.counter = &bo;
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, shared_submitter,
						&sq),
				 0);
	for (i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(sq.err, 0);
	ck_assert_int_eq(sq.submitted, 6 * 16);
	point = (uint64_t)sq.submitted;
	ck_assert_int_eq(hw_syncobj_wait(ctx.fd, &ctx.syncobj, &point, 1,
					 HW_WAIT_NS),
			 0);
	ck_assert_int_eq(hw_bo_wait(ctx.fd, bo.handle, HW_WAIT_NS, NULL), 0);
	done = queue_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
			      ctx.queue);
	ck_assert_uint_eq(done, point);
	ck_assert_uint_eq(queue_param(ctx.fd, DRM_VNPU_PARAM_QUEUE_ERROR,
					 ctx.queue),
			  0);
	hw_ctx_close(&ctx);
}
END_TEST

/* Files opened, given work and closed at once, from several processes:
 * close waits for the jobs; the device stays clean and usable. */
START_TEST(test_open_close_churn)
{
	pid_t pid[3];
	int i, status;
	int fd = hw_open();
	uint64_t used_before = hw_param(fd, DRM_VNPU_PARAM_VRAM_USED);

	for (i = 0; i < 3; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0) {
			int n;

			for (n = 0; n < 10; n++) {
				struct hw_ctx ctx;
				struct hw_bo bo;
				struct vnpu_cmd c;

				hw_ctx_open(&ctx);
				if (hw_bo_create(ctx.fd, 256 * 1024,
						 DRM_VNPU_BO_VRAM, &bo))
					_exit(2);
				c = vnpu_fill_cmd(bo.va, bo.size, 7, 4);
				if (hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c,
					      1, &bo.handle, 1, 0, NULL))
					_exit(3);
				/* No wait: the close must cope. Unmapped
				 * first: a mapping keeps the file open. */
				munmap(bo.map, bo.size);
				hw_ctx_close(&ctx);
			}
			_exit(0);
		}
	}
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child %d: %#x", i, status);
	}
	for (i = 0; i < 100 && hw_param(fd, DRM_VNPU_PARAM_VRAM_USED) !=
				       used_before;
	     i++)
		usleep(20 * 1000); /* BOs leave with their jobs, just after */
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_VRAM_USED), used_before);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS), 1);
	close(fd);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_stress");
	TCase *tc = tcase_create("stress");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_processes_and_threads);
	tcase_add_test(tc, test_threads_one_queue);
	tcase_add_test(tc, test_open_close_churn);
	hw_suite_add(s, tc);
	return hw_main(argc, argv, s, 0);
}
