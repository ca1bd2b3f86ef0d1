// SPDX-License-Identifier: MIT
/*
 * hw suite: hostile sequences. An unprivileged attacker process (uid 1000,
 * group accel) runs a sequence of legal calls against a victim process that
 * guards a canary: the victim fills its BOs with a pattern and fails if it
 * ever changes; the attacker fails the test if it ever reads the victim's
 * pattern. Each test prints what it measured.
 *
 * Processes talk over pipes, one byte per step; no ck_assert runs outside
 * the test's own process (Check forks each test, and a grandchild's failed
 * assertion would be reported as the test's).
 */
#include "hw_util.h"
#include "vnpu/hw_regs.h"

#include <errno.h>
#include <inttypes.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEP_TIMEOUT_MS 60000

/* ---- processes -------------------------------------------------------- */

struct proc {
	pid_t pid;
	int to_child, from_child;
};

/* Runs fn(in, out, arg) in a child: as root for uid 0, else as that
 * unprivileged user (in the accel group). */
static void proc_start(struct proc *p, int (*fn)(int in, int out, void *arg),
		       void *arg, uid_t uid)
{
	int down[2], up[2];

	ck_assert_int_eq(pipe(down), 0);
	ck_assert_int_eq(pipe(up), 0);
	p->pid = fork();
	ck_assert_int_ge(p->pid, 0);
	if (p->pid == 0) {
		gid_t groups[1] = { HW_ACCEL_GID };

		close(down[1]);
		close(up[0]);
		if (uid && (setgroups(1, groups) || setgid(uid) ||
			    setuid(uid)))
			_exit(100);
		_exit(fn(down[0], up[1], arg));
	}
	close(down[0]);
	close(up[1]);
	p->to_child = down[1];
	p->from_child = up[0];
}

static int step_send(int fd, char c)
{
	return write(fd, &c, 1) == 1 ? 0 : -1;
}

/* The next step byte, or 0 on timeout or a closed pipe. */
static char step_recv(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, STEP_TIMEOUT_MS) != 1 || read(fd, &c, 1) != 1)
		return 0;
	return c;
}

/* A report of several numbers, sent at once. */
static int report_send(int fd, const uint64_t *v, size_t n)
{
	return write(fd, v, n * sizeof(*v)) == (ssize_t)(n * sizeof(*v)) ? 0
									  : -1;
}

static void report_recv(struct proc *p, uint64_t *v, size_t n)
{
	struct pollfd pfd = { .fd = p->from_child, .events = POLLIN };

	ck_assert_int_eq(poll(&pfd, 1, STEP_TIMEOUT_MS), 1);
	ck_assert_int_eq(read(p->from_child, v, n * sizeof(*v)),
			 (ssize_t)(n * sizeof(*v)));
}

/* The child's exit status (-signal when killed). */
static int proc_wait(struct proc *p)
{
	int status;

	close(p->to_child);
	close(p->from_child);
	ck_assert_int_eq(waitpid(p->pid, &status, 0), p->pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

/* ---- the victim: BOs with a canary --------------------------------------- */

#define VICTIM_BOS 16

struct victim_arg {
	uint32_t flags; /* BO kind */
	uint64_t size;
};

static uint32_t canary(int i)
{
	return 0xc5a1a700u + (uint32_t)i;
}

/*
 * 'g': allocate VICTIM_BOS BOs and write the canary, answer 'r';
 * 'c': check them, answer nothing; exit with the number of changed BOs.
 */
static int victim_main(int in, int out, void *p)
{
	const struct victim_arg *a = p;
	struct hw_bo bo[VICTIM_BOS];
	int fd = hw_open_raw(), bad = 0;

	if (fd < 0 || step_recv(in) != 'g')
		return 90;
	for (int i = 0; i < VICTIM_BOS; i++) {
		uint32_t *w;

		if (hw_bo_create(fd, a->size, a->flags, &bo[i]))
			return 91;
		w = bo[i].map;
		for (uint64_t k = 0; k < a->size / 4; k++)
			w[k] = canary(i);
	}
	if (step_send(out, 'r') || step_recv(in) != 'c')
		return 92;
	for (int i = 0; i < VICTIM_BOS; i++) {
		size_t at = hw_check_u32(bo[i].map, a->size, canary(i));

		if (at == SIZE_MAX)
			continue;
		printf("victim: BO %d changed at byte %zu: %#x\n", i, at,
		       ((uint32_t *)bo[i].map)[at / 4]);
		bad++;
	}
	fflush(stdout);
	return bad;
}

/* ---- the attacker: a long kernel whose output it closes ------------------- */

#define GEMM_M 256
#define GEMM_K (1 << 19) /* about a second of one core */

struct attack_arg {
	uint32_t flags;	/* kind of the BO it closes */
	bool exit_early; /* exit (closing everything) instead of closing X */
};

/* GEMM out[M,M] = A[M,k] x B[k,M], A and B broadcast from one float. */
static uint32_t gemm_kargs(void *args, uint64_t one_va, uint64_t out_va,
			   int64_t k)
{
	struct vnpu_kargs_header h = { 2, sizeof(struct vnpu_kp_gemm), 0 };
	struct vnpu_kargs_buffer b[2] = {
		{ one_va, 4, VNPU_ACCESS_READ, 0 },
		{ out_va, 4ull * GEMM_M * GEMM_M, VNPU_ACCESS_WRITE, 0 },
	};
	struct vnpu_kp_gemm kp;
	char *p = args;

	memset(&kp, 0, sizeof(kp));
	kp.alpha = 1.0f;
	kp.a = vnpu_tensor_f32_2d(0, GEMM_M, k, 0, 0);
	kp.b = vnpu_tensor_f32_2d(0, k, GEMM_M, 0, 0);
	kp.out = vnpu_tensor_f32_2d(1, GEMM_M, GEMM_M, GEMM_M, 1);
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), b, sizeof(b));
	memcpy(p + sizeof(h) + sizeof(b), &kp, sizeof(kp));
	return sizeof(h) + sizeof(b) + sizeof(kp);
}

/* An attacker's job [FENCE_SIGNAL started, LAUNCH gemm] and its BOs. */
struct gemm_job {
	struct hw_bo one, args, flag;
};

/*
 * Submits a GEMM of k in nblocks blocks writing out_va to queue, after a
 * FENCE_SIGNAL that says it started; the list holds its own BOs and
 * `out` (0: none, the kernel reaches it only through its arguments).
 * Nothing is shared with another job: a BO in two jobs' lists orders
 * them (implicit sync). 0, or -errno.
 */
static int gemm_job_submit(int fd, uint32_t queue, const struct hw_bo *cmd,
			   uint64_t cmd_offset, uint64_t out_va, uint32_t out,
			   int64_t k, uint32_t nblocks, struct gemm_job *g)
{
	struct vnpu_cmd c[2];
	uint32_t list[4], size;
	int ret;

	if ((ret = hw_bo_create(fd, 4096, 0, &g->one)) ||
	    (ret = hw_bo_create(fd, 4096, 0, &g->args)) ||
	    (ret = hw_bo_create(fd, 4096, 0, &g->flag)))
		return ret;
	*(float *)g->one.map = 1.0f;
	memset(g->flag.map, 0, 8);
	size = gemm_kargs(g->args.map, g->one.va, out_va, k);
	c[0] = vnpu_fence_signal_cmd(g->flag.va, 1);
	c[1] = vnpu_launch_cmd(VNPU_KERNEL_GEMM, nblocks, g->args.va, size);
	list[0] = g->one.handle;
	list[1] = g->args.handle;
	list[2] = g->flag.handle;
	list[3] = out;
	return hw_submit(fd, queue, cmd, cmd_offset, c, 2, list, out ? 4 : 3,
			 0, NULL);
}

/* Waits until the job's launch has started; false after HW_WAIT_NS. */
static bool gemm_job_started(const struct gemm_job *g)
{
	int64_t t0 = hw_now_ns();

	while (!__atomic_load_n((uint64_t *)g->flag.map, __ATOMIC_ACQUIRE)) {
		if (hw_now_ns() - t0 > HW_WAIT_NS)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * Submits [FENCE_SIGNAL started, LAUNCH gemm -> X] listing every BO but X,
 * waits until the launch started, closes X (or exits), answers 'x'; then
 * 'w': waits for the job; exits 0, or a code naming the failed step.
 */
static int attacker_main(int in, int out, void *p)
{
	const struct attack_arg *a = p;
	struct gemm_job g;
	struct hw_ctx ctx;
	struct hw_bo x;
	int64_t t0;

	ctx.fd = hw_open_raw();
	if (ctx.fd < 0 ||
	    hw_queue_create(ctx.fd, DRM_VNPU_HW_QUEUE_ANY, &ctx.queue, NULL) ||
	    hw_bo_create(ctx.fd, 64 * 1024, 0, &ctx.cmd))
		return 80;
	if (hw_bo_create(ctx.fd, 4ull * GEMM_M * GEMM_M, a->flags, &x))
		return 81;
	if (gemm_job_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, x.va, 0, GEMM_K, 1,
			    &g))
		return 82;
	if (!gemm_job_started(&g))
		return 83;
	t0 = hw_now_ns();
	if (a->exit_early) {
		/* Everything closes with the process, the job still runs. */
		step_send(out, 'x');
		_exit(0);
	}
	munmap(x.map, x.size);
	if (hw_gem_close(ctx.fd, x.handle))
		return 84;
	if (step_send(out, 'x') || step_recv(in) != 'w')
		return 85;
	/* The job ends (it may fail: its output went away). */
	hw_bo_wait(ctx.fd, g.args.handle, HW_WAIT_NS, NULL);
	hw_figure("attacker: its kernel ran %.2f s after it started",
		  (double)(hw_now_ns() - t0) / 1e9);
	return 0;
}

/*
 * A kernel of the attacker writes a BO the attacker closes (or exits)
 * while the kernel runs; the victim allocates BOs of the same kind and
 * size right then. The victim's memory must not change.
 */
static void close_during_kernel(uint32_t flags, bool exit_early)
{
	struct victim_arg va = { flags, 4ull * GEMM_M * GEMM_M };
	struct attack_arg aa = { flags, exit_early };
	struct proc victim, attacker;
	int vst, ast;

	proc_start(&victim, victim_main, &va, 0);
	proc_start(&attacker, attacker_main, &aa, HW_USER_UID);
	ck_assert_int_eq(step_recv(attacker.from_child), 'x');
	ck_assert_int_eq(step_send(victim.to_child, 'g'), 0);
	ck_assert_int_eq(step_recv(victim.from_child), 'r');
	if (!exit_early)
		ck_assert_int_eq(step_send(attacker.to_child, 'w'), 0);
	ast = proc_wait(&attacker);
	/* Let the kernel end before the victim looks. */
	{
		int fd = hw_open();
		int64_t t0 = hw_now_ns();

		while (hw_param(fd, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS) > 2 &&
		       hw_now_ns() - t0 < HW_WAIT_NS)
			usleep(10000);
		close(fd);
	}
	usleep(200 * 1000);
	ck_assert_int_eq(step_send(victim.to_child, 'c'), 0);
	vst = proc_wait(&victim);
	hw_figure("%s BO %s during the kernel: attacker exit %d, victim BOs "
		  "changed %d of %d",
	       flags & DRM_VNPU_BO_VRAM ? "VRAM" : "system",
	       exit_early ? "freed by exit" : "closed", ast, vst, VICTIM_BOS);
	ck_assert_int_eq(ast, 0);
	ck_assert_msg(vst == 0,
		      "the victim's memory changed (%d BOs) or it failed", vst);
}

START_TEST(test_close_vram_during_kernel)
{
	close_during_kernel(DRM_VNPU_BO_VRAM, false);
}
END_TEST

START_TEST(test_close_system_during_kernel)
{
	close_during_kernel(0, false);
}
END_TEST

START_TEST(test_exit_during_kernel)
{
	close_during_kernel(DRM_VNPU_BO_VRAM, true);
}
END_TEST

/* ---- the fault path: memory stays until the device has stopped -------- */

#define CHURN_BOS 48

/*
 * The victim's allocator churn: from 'g' until 'c', allocates VRAM BOs of
 * `size` and writes the canary into each, freeing the oldest (after a
 * check) once CHURN_BOS are held, so that VRAM another file gives back is
 * taken at once. Exits with the number of BOs found changed.
 */
static int churn_main(int in, int out, void *p)
{
	uint64_t size = *(const uint64_t *)p;
	struct hw_bo bo[CHURN_BOS];
	struct pollfd pfd = { .fd = in, .events = POLLIN };
	int fd = hw_open_raw(), bad = 0, n = 0, next = 0;
	uint32_t serial = 0, mark[CHURN_BOS];

	(void)out;
	if (fd < 0 || step_recv(in) != 'g')
		return 90;
	while (poll(&pfd, 1, 0) == 0) {
		uint32_t *w;

		if (n == CHURN_BOS) {
			if (hw_check_u32(bo[next].map, size, canary(mark[next])) !=
			    SIZE_MAX)
				bad++;
			hw_bo_free(fd, &bo[next]);
			n--;
		}
		if (hw_bo_create(fd, size, DRM_VNPU_BO_VRAM, &bo[next]))
			return 91;
		mark[next] = serial++;
		w = bo[next].map;
		for (uint64_t k = 0; k < size / 4; k++)
			w[k] = canary(mark[next]);
		next = (next + 1) % CHURN_BOS;
		n++;
	}
	if (step_recv(in) != 'c')
		return 92;
	for (int i = 0; i < n; i++) {
		int k = (next - n + i + CHURN_BOS) % CHURN_BOS;

		if (hw_check_u32(bo[k].map, size, canary(mark[k])) != SIZE_MAX)
			bad++;
	}
	return bad;
}

/*
 * As attack_main, then 'f': faults its own context with a FILL to an
 * unmapped VA on another hardware queue. Reports {the GEMM job's errno,
 * the FILL's errno}.
 */
static int fault_attacker_main(int in, int out, void *p)
{
	struct drm_vnpu_bo_wait w = { 0 };
	struct hw_bo x, cmd2;
	struct gemm_job g;
	struct hw_ctx ctx;
	struct vnpu_cmd fill;
	uint64_t r[2], ncores;
	uint32_t q2;

	(void)p;
	ctx.fd = hw_open_raw();
	if (ctx.fd < 0 ||
	    hw_get_param(ctx.fd, DRM_VNPU_PARAM_NUM_CORES, 0, &ncores) ||
	    hw_queue_create(ctx.fd, 0, &ctx.queue, NULL) ||
	    hw_queue_create(ctx.fd, 1, &q2, NULL) ||
	    hw_bo_create(ctx.fd, 64 * 1024, 0, &ctx.cmd) ||
	    hw_bo_create(ctx.fd, 4096, 0, &cmd2))
		return 80;
	if (hw_bo_create(ctx.fd, 4ull * GEMM_M * GEMM_M, DRM_VNPU_BO_VRAM, &x))
		return 81;
	/* A block per core, each writing its rows of X all along. */
	if (gemm_job_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, x.va, 0, GEMM_K,
			    (uint32_t)ncores, &g))
		return 82;
	if (!gemm_job_started(&g))
		return 83;
	munmap(x.map, x.size);
	if (hw_gem_close(ctx.fd, x.handle))
		return 84;
	if (step_send(out, 'x') || step_recv(in) != 'f')
		return 85;
	fill = vnpu_fill_cmd(1ull << 38, HW_PAGE_SIZE, 0, 4);
	if (hw_submit(ctx.fd, q2, &cmd2, 0, &fill, 1, &cmd2.handle, 1, 0, NULL))
		return 86;
	hw_bo_wait(ctx.fd, cmd2.handle, HW_WAIT_NS, &w);
	r[1] = (uint64_t)-w.job_error;
	hw_bo_wait(ctx.fd, g.args.handle, HW_WAIT_NS, &w);
	r[0] = (uint64_t)-w.job_error;
	return report_send(out, r, 2) ? 87 : 0;
}

/*
 * An unprivileged user's launch writes a VRAM BO it has closed; then it
 * faults its context on another hardware queue, which fails the launch's
 * job. Root allocates VRAM BOs of that size all the while. Failing the
 * job lets the closed BO's memory go, so it must wait until the device
 * has stopped the launch (the launch keeps writing VRAM directly until its
 * blocks reach their next check): root's BOs never change.
 */
START_TEST(test_fault_during_kernel)
{
	uint64_t size = 4ull * GEMM_M * GEMM_M, r[2];
	int fd = hw_open(), changed = 0, rounds = 6;
	uint64_t nhwq = hw_param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);

	close(fd);
	if (nhwq < 2) {
		hw_figure("one hardware queue: the fault cannot run beside the launch");
		return;
	}
	for (int round = 0; round < rounds; round++) {
		struct proc churn, attacker;
		int cst;

		proc_start(&churn, churn_main, &size, 0);
		proc_start(&attacker, fault_attacker_main, NULL, HW_USER_UID);
		if (step_recv(attacker.from_child) != 'x')
			ck_abort_msg("the attacker failed (exit %d)",
				     proc_wait(&attacker));
		ck_assert_int_eq(step_send(churn.to_child, 'g'), 0);
		usleep(20 * 1000);
		ck_assert_int_eq(step_send(attacker.to_child, 'f'), 0);
		report_recv(&attacker, r, 2);
		ck_assert_int_eq(proc_wait(&attacker), 0);
		/* What a launch still running would write lands now. */
		usleep(300 * 1000);
		ck_assert_int_eq(step_send(churn.to_child, 'c'), 0);
		cst = proc_wait(&churn);
		ck_assert_msg(cst < 90, "the churn failed (exit %d)", cst);
		ck_assert_uint_eq(r[1], EFAULT);
		ck_assert_uint_eq(r[0], EFAULT);
		changed += cst;
	}
	hw_figure("%d rounds: a faulted launch's closed VRAM BO taken by root: "
		  "root's BOs changed %d",
		  rounds, changed);
	ck_assert_int_eq(changed, 0);
}
END_TEST

/* ---- limits: one user against the others ---------------------------------- */

#define OTHER_UID (HW_USER_UID + 1) /* a second unprivileged user */

/* Opens files until refused; reports {files, errno, limit}, holds them
 * until 'q'. */
static int hog_contexts(int in, int out, void *p)
{
	uint64_t r[3] = { 0, 0, 0 };
	int fds[VNPU_MAX_CONTEXTS + 1];

	(void)p;
	while (r[0] <= VNPU_MAX_CONTEXTS) {
		int fd = hw_open_raw();

		if (fd < 0) {
			r[1] = (uint64_t)-fd;
			break;
		}
		fds[r[0]++] = fd;
	}
	if (r[0])
		hw_get_param(fds[0], DRM_VNPU_PARAM_QUOTA_LIMIT,
			     DRM_VNPU_QUOTA_CONTEXTS, &r[2]);
	if (report_send(out, r, 3) || step_recv(in) != 'q')
		return 1;
	return 0;
}

/* Allocates BOs of `*flags` kind, 4 MiB each, until refused; reports
 * {bytes, errno, limit, used as the driver counts it}, holds them until
 * 'q'. */
static int hog_memory(int in, int out, void *p)
{
	const uint32_t *flags = p;
	uint64_t r[4] = { 0, 0, 0, 0 };
	uint32_t res = *flags & DRM_VNPU_BO_VRAM ? DRM_VNPU_QUOTA_VRAM
						   : DRM_VNPU_QUOTA_PINNED;
	int fd = hw_open_raw();

	if (fd < 0)
		return 1;
	for (;;) {
		uint32_t handle;
		uint64_t va;
		int ret = hw_bo_create_raw(fd, 4u << 20, *flags, &handle, &va);

		if (ret) {
			r[1] = (uint64_t)-ret;
			break;
		}
		r[0] += 4u << 20;
	}
	hw_get_param(fd, DRM_VNPU_PARAM_QUOTA_LIMIT, res, &r[2]);
	hw_get_param(fd, DRM_VNPU_PARAM_QUOTA_USED, res, &r[3]);
	if (report_send(out, r, 4) || step_recv(in) != 'q')
		return 1;
	return 0;
}

/* Opens a file and allocates one BO of `*flags` kind, 32 MiB; exits 0 when
 * all of it worked. */
static int other_user(int in, int out, void *p)
{
	const uint32_t *flags = p;
	struct hw_bo bo;
	int fd = hw_open_raw();

	(void)in;
	(void)out;
	if (fd < 0)
		return 1;
	if (flags && hw_bo_create(fd, 32u << 20, *flags, &bo))
		return 2;
	return 0;
}

/* Root: a file, a BO of the kind and a FILL of it that completes. */
static void victim_works(uint32_t flags, uint64_t size)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	struct vnpu_cmd c;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, size, flags, &bo);
	c = vnpu_fill_cmd(bo.va, size, 0x5a5a5a5a, 4);
	ck_assert_int_eq(hw_run(&ctx, &c, 1, &bo.handle, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(bo.map, size, 0x5a5a5a5a), SIZE_MAX);
	hw_bo_free(ctx.fd, &bo);
	hw_ctx_close(&ctx);
}

START_TEST(test_context_share)
{
	struct proc hog, other;
	uint64_t r[3];
	int fd = hw_open();
	uint64_t total = hw_param(fd, DRM_VNPU_PARAM_NUM_CONTEXTS);

	close(fd);
	proc_start(&hog, hog_contexts, NULL, HW_USER_UID);
	report_recv(&hog, r, 3);
	hw_figure("contexts: one user opened %" PRIu64 " of %" PRIu64
		  " (limit %" PRIu64 "), then: %s",
		  r[0], total, r[2], strerror((int)r[1]));
	ck_assert_uint_eq(r[1], EDQUOT);
	ck_assert_uint_eq(r[0], r[2]);
	ck_assert_uint_lt(r[0], total);
	/* Another user, and root, still get theirs. */
	proc_start(&other, other_user, NULL, OTHER_UID);
	ck_assert_int_eq(proc_wait(&other), 0);
	victim_works(0, HW_PAGE_SIZE);
	ck_assert_int_eq(step_send(hog.to_child, 'q'), 0);
	ck_assert_int_eq(proc_wait(&hog), 0);
}
END_TEST

static void memory_share(uint32_t flags)
{
	const char *kind = flags & DRM_VNPU_BO_VRAM ? "VRAM" : "pinned system";
	struct proc hog, other;
	uint64_t r[4];

	proc_start(&hog, hog_memory, &flags, HW_USER_UID);
	report_recv(&hog, r, 4);
	hw_figure("%s memory: one user got %" PRIu64 " MiB (limit %" PRIu64
		  " MiB, counted %" PRIu64 " MiB), then: %s",
		  kind, r[0] >> 20, r[2] >> 20, r[3] >> 20,
		  strerror((int)r[1]));
	ck_assert_uint_eq(r[1], EDQUOT);
	ck_assert_uint_le(r[0], r[2]);
	/* Pinned memory also counts the BOs' device page tables: about 2
	 * leaf tables of 4 KiB per 4 MiB BO. */
	ck_assert_uint_ge(r[3], r[0]);
	ck_assert_uint_gt(r[3] + (4u << 20), r[2]);
	if (flags & DRM_VNPU_BO_VRAM)
		ck_assert_uint_eq(r[3], r[0]);
	else
		ck_assert_uint_le(r[3] - r[0], r[0] / 256 + (64u << 10));
	proc_start(&other, other_user, &flags, OTHER_UID);
	ck_assert_int_eq(proc_wait(&other), 0);
	victim_works(flags, 32u << 20);
	ck_assert_int_eq(step_send(hog.to_child, 'q'), 0);
	ck_assert_int_eq(proc_wait(&hog), 0);
}

START_TEST(test_vram_share)
{
	memory_share(DRM_VNPU_BO_VRAM);
}
END_TEST

START_TEST(test_pinned_share)
{
	memory_share(0);
}
END_TEST

/*
 * Jobs held back by a FENCE_WAIT on a word of the attacker's, each
 * `*cmds_per_job` commands (a FENCE_WAIT, then NOPs): queues are added as
 * each fills, until the file's limit refuses one. Reports {jobs, bytes
 * counted, errno, FILE_MAX_JOBS, FILE_JOB_BYTES}; then opens the gate and
 * waits for all of it.
 */
static int hog_jobs(int in, int out, void *p)
{
	const uint32_t *cmds_per_job = p;
	uint64_t r[5] = { 0, 0, 0, 0, 0 };
	struct vnpu_cmd *c = calloc(*cmds_per_job, sizeof(*c));
	struct hw_bo gate, cmd;
	uint32_t queue = 0, in_queue = 0, last_queue = 0;
	int fd = hw_open_raw(), ret = 0;
	uint64_t depth;

	(void)in;
	if (fd < 0 || !c ||
	    hw_get_param(fd, DRM_VNPU_PARAM_QUEUE_DEPTH, 0, &depth) ||
	    hw_get_param(fd, DRM_VNPU_PARAM_FILE_MAX_JOBS, 0, &r[3]) ||
	    hw_get_param(fd, DRM_VNPU_PARAM_FILE_JOB_BYTES, 0, &r[4]) ||
	    hw_bo_create(fd, HW_PAGE_SIZE, 0, &gate) ||
	    hw_bo_create(fd, 64u * 1024, 0, &cmd))
		return 1;
	memset(gate.map, 0, 8);
	c[0] = vnpu_fence_wait_cmd(gate.va, 1);
	for (uint32_t i = 1; i < *cmds_per_job; i++)
		c[i] = vnpu_nop_cmd();
	for (;;) {
		if (!queue || in_queue == depth) {
			if (hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &queue,
					    NULL))
				break;
			last_queue = queue;
			in_queue = 0;
		}
		ret = hw_submit(fd, queue, &cmd, 0, c, *cmds_per_job,
				&gate.handle, 1, 0, NULL);
		if (ret)
			break;
		in_queue++;
		r[0]++;
		r[1] += DRM_VNPU_JOB_BYTES(*cmds_per_job, 1);
	}
	r[2] = (uint64_t)-ret;
	__atomic_store_n((uint64_t *)gate.map, 1, __ATOMIC_RELEASE);
	if (report_send(out, r, 5))
		return 2;
	/* Every job ends once the gate is open. */
	for (uint32_t q = 1; q <= last_queue; q++) {
		uint64_t want = q < last_queue ? depth : in_queue, done = 0;
		int64_t t0 = hw_now_ns();

		while (!hw_get_param(fd, DRM_VNPU_PARAM_QUEUE_DONE_SEQNO, q,
				     &done) &&
		       done < want && hw_now_ns() - t0 < HW_WAIT_NS)
			usleep(1000);
		if (done < want)
			return 3;
	}
	return 0;
}

static void job_limit(uint32_t cmds_per_job)
{
	uint64_t cost = DRM_VNPU_JOB_BYTES(cmds_per_job, 1);
	struct proc hog;
	uint64_t r[5];

	proc_start(&hog, hog_jobs, &cmds_per_job, HW_USER_UID);
	report_recv(&hog, r, 5);
	hw_figure("queued work: one file queued %" PRIu64 " jobs of %u "
		  "commands, %" PRIu64 " KiB (limits %" PRIu64 " jobs, %" PRIu64
		  " KiB), then: %s",
		  r[0], cmds_per_job, r[1] >> 10, r[3], r[4] >> 10,
		  strerror((int)r[2]));
	ck_assert_uint_eq(r[2], EBUSY);
	ck_assert_uint_le(r[0], r[3]);
	ck_assert_uint_le(r[1], r[4]);
	/* Refused at one limit or the other, not earlier. */
	ck_assert(r[0] == r[3] || r[1] + cost > r[4]);
	ck_assert_int_eq(proc_wait(&hog), 0);
	victim_works(0, HW_PAGE_SIZE);
}

START_TEST(test_job_limit)
{
	job_limit(1);
}
END_TEST

START_TEST(test_job_memory_limit)
{
	job_limit(1000);
}
END_TEST

/* ---- fairness: a flood against a victim's jobs ----------------------------- */

#define FLOOD_MAX_HWQ 16
#define FLOOD_THREADS 2 /* per hardware queue */
#define FLOOD_CMDS 256 /* NOPs per job */
#define FAIR_SAMPLES 24
#define FLOOD_SLOTS 16384 /* flood jobs whose end each thread records */

/*
 * When each flood job ended (device clock), per flood thread: shared with
 * the flood's process, filled once the flood has stopped. Thread i floods
 * hardware queue i % nhwq; its last logged[i] jobs are in end_ns[i].
 */
struct flood_log {
	uint64_t logged[FLOOD_MAX_HWQ * FLOOD_THREADS];
	uint64_t end_ns[FLOOD_MAX_HWQ * FLOOD_THREADS][FLOOD_SLOTS];
};

struct flooder {
	int fd;
	uint32_t hwq;
	volatile bool *stop;
	uint64_t jobs;
	uint64_t *logged, *end_ns;
	int err;
};

/* One thread: jobs of FLOOD_CMDS - 1 NOPs and a TIMESTAMP (the job's end)
 * on its own queue on hardware queue `hwq`, as fast as the driver takes
 * them (-EBUSY is retried at once), so that the device always has the
 * flood's work in hand. Once stopped, logs its jobs' ends. */
static void *flood_thread(void *p)
{
	struct flooder *f = p;
	struct vnpu_cmd c[FLOOD_CMDS];
	struct hw_bo cmd, ts;
	const uint64_t *word;
	uint64_t n;
	uint32_t queue;

	for (int i = 0; i < FLOOD_CMDS - 1; i++)
		c[i] = vnpu_nop_cmd();
	if (hw_queue_create(f->fd, f->hwq, &queue, NULL) ||
	    hw_bo_create(f->fd, sizeof(c), 0, &cmd) ||
	    hw_bo_create(f->fd, FLOOD_SLOTS * sizeof(uint64_t), 0, &ts)) {
		f->err = 1;
		return NULL;
	}
	while (!*f->stop) {
		/* Explicit sync: the log BO orders nothing (one queue's jobs
		 * run in order anyway), as before it was added. */
		struct drm_vnpu_submit s = {
			.queue_id = queue,
			.flags = DRM_VNPU_SUBMIT_EXPLICIT_SYNC,
			.cmd_bo = cmd.handle,
			.cmd_count = FLOOD_CMDS,
			.bo_handles = (uintptr_t)&ts.handle,
			.bo_count = 1,
		};
		int ret;

		c[FLOOD_CMDS - 1] = vnpu_timestamp_cmd(
			ts.va + sizeof(uint64_t) * (f->jobs % FLOOD_SLOTS));
		memcpy(cmd.map, c, sizeof(c));
		ret = hw_ioctl(f->fd, DRM_IOCTL_VNPU_SUBMIT, &s);
		if (!ret)
			f->jobs++;
		else if (ret != -EBUSY) {
			f->err = ret;
			break;
		}
	}
	if (hw_bo_wait(f->fd, ts.handle, HW_WAIT_NS, NULL)) {
		f->err = 1;
		return NULL;
	}
	/* The newest FLOOD_SLOTS, oldest first. */
	word = ts.map;
	n = f->jobs < FLOOD_SLOTS ? f->jobs : FLOOD_SLOTS;
	for (uint64_t k = f->jobs - n; k < f->jobs; k++)
		f->end_ns[k - (f->jobs - n)] = word[k % FLOOD_SLOTS];
	*f->logged = n;
	return NULL;
}

/* Floods every hardware queue until 'q'; answers 'f' once flooding;
 * reports {jobs submitted} and fills the struct flood_log at p. */
static int flood_main(int in, int out, void *p)
{
	struct flooder f[FLOOD_MAX_HWQ * FLOOD_THREADS];
	pthread_t t[FLOOD_MAX_HWQ * FLOOD_THREADS];
	struct flood_log *log = p;
	volatile bool stop = false;
	uint64_t nhwq, total = 0;
	int fd = hw_open_raw(), bad = 0;

	if (fd < 0 ||
	    hw_get_param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES, 0, &nhwq))
		return 1;
	nhwq = nhwq < FLOOD_MAX_HWQ ? nhwq : FLOOD_MAX_HWQ;
	for (uint32_t i = 0; i < nhwq * FLOOD_THREADS; i++) {
		f[i] = (struct flooder){
			.fd = fd, .hwq = i % (uint32_t)nhwq, .stop = &stop,
			.logged = &log->logged[i], .end_ns = log->end_ns[i]
		};
		if (pthread_create(&t[i], NULL, flood_thread, &f[i]))
			return 2;
	}
	usleep(300 * 1000);
	if (step_send(out, 'f') || step_recv(in) != 'q')
		bad = 3;
	stop = true;
	for (uint32_t i = 0; i < nhwq * FLOOD_THREADS; i++) {
		pthread_join(t[i], NULL);
		total += f[i].jobs;
		if (f[i].err)
			bad = 4;
	}
	if (report_send(out, &total, 1))
		return 5;
	return bad;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The ends of the flood's jobs on hardware queue h, sorted, into *out
 * (malloc'ed); returns how many. *from gets the device time from which
 * the log is complete (0, or the oldest end kept by a thread that wrapped). */
static size_t flood_ends(const struct flood_log *log, uint64_t nhwq,
			 uint32_t h, int64_t **out, int64_t *from)
{
	size_t n = 0;
	int64_t *e = malloc(sizeof(*e) * FLOOD_THREADS * FLOOD_SLOTS);

	ck_assert_ptr_nonnull(e);
	*from = 0;
	for (uint32_t i = h; i < nhwq * FLOOD_THREADS; i += (uint32_t)nhwq) {
		for (uint64_t k = 0; k < log->logged[i]; k++)
			e[n++] = (int64_t)log->end_ns[i][k];
		if (log->logged[i] == FLOOD_SLOTS &&
		    (int64_t)log->end_ns[i][0] > *from)
			*from = (int64_t)log->end_ns[i][0];
	}
	qsort(e, n, sizeof(*e), cmp_i64);
	*out = e;
	return n;
}

/*
 * An unprivileged user floods every hardware queue with jobs of NOPs; the
 * victim submits a TIMESTAMP job on each hardware queue in turn. Fairness
 * (docs/uapi.md, Scheduling): once the victim's job has asked for the
 * hardware queue, only the flood's work already in the ring runs before
 * it, never its backlog. Each flood job records its end on the device
 * clock, so the test counts the flood jobs of that hardware queue that
 * ended between the victim's SUBMIT and its job: at most what the ring
 * holds (MAX_SUBMIT_CMDS commands, so MAX_SUBMIT_CMDS / FLOOD_CMDS jobs)
 * plus one the scheduler may have been writing as the victim asked. A
 * count, not milliseconds: a loaded host slows the flood and the victim
 * alike. The milliseconds are a figure.
 */
START_TEST(test_nop_flood)
{
	struct proc flood;
	struct hw_ctx ctx;
	struct hw_bo ts;
	struct flood_log *log;
	uint32_t queue[FLOOD_MAX_HWQ];
	int64_t t_dev[FAIR_SAMPLES], v_ns[FAIR_SAMPLES];
	int64_t dev_ns[FAIR_SAMPLES], wall_ns[FAIR_SAMPLES];
	int64_t ahead[FAIR_SAMPLES], cost_ns[FLOOD_MAX_HWQ];
	uint64_t nhwq, jobs, ahead_max;
	int n = 0, m = 0, failed = -1;

	hw_ctx_open(&ctx);
	nhwq = hw_param(ctx.fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	nhwq = nhwq < FLOOD_MAX_HWQ ? nhwq : FLOOD_MAX_HWQ;
	ahead_max = hw_param(ctx.fd, DRM_VNPU_PARAM_MAX_SUBMIT_CMDS) /
			    FLOOD_CMDS + 1;
	for (uint32_t i = 0; i < nhwq; i++)
		ck_assert_int_eq(hw_queue_create(ctx.fd, i, &queue[i], NULL),
				 0);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &ts);
	log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(log, MAP_FAILED);
	proc_start(&flood, flood_main, log, HW_USER_UID);
	ck_assert_int_eq(step_recv(flood.from_child), 'f');
	for (n = 0; n < FAIR_SAMPLES; n++) {
		uint64_t *word = (uint64_t *)ts.map + n;
		struct vnpu_cmd c = vnpu_timestamp_cmd(ts.va + 8ull * n);
		int64_t t0 = hw_now_ns();
		int ret = hw_submit(ctx.fd, queue[n % nhwq], &ctx.cmd,
				    64ull * n, &c, 1, &ts.handle, 1, 0, NULL);

		ck_assert_int_eq(ret, 0);
		/* From SUBMIT's return on: what came before (this process
		 * waiting for a CPU among the flood's threads) is not the
		 * device's or the driver's doing. */
		t_dev[n] = (int64_t)hw_param(ctx.fd, DRM_VNPU_PARAM_TIMESTAMP);
		/* A starved job would wait for the whole flood: give up
		 * after HW_WAIT_NS and fail. */
		ret = hw_bo_wait(ctx.fd, ts.handle, HW_WAIT_NS, NULL);
		wall_ns[n] = hw_now_ns() - t0;
		if (ret) {
			failed = n;
			break;
		}
		v_ns[n] = (int64_t)*word;
		dev_ns[n] = v_ns[n] > t_dev[n] ? v_ns[n] - t_dev[n] : 0;
		usleep(20 * 1000);
	}
	ck_assert_int_eq(step_send(flood.to_child, 'q'), 0);
	report_recv(&flood, &jobs, 1);
	ck_assert_int_eq(proc_wait(&flood), 0);
	ck_assert_msg(failed < 0, "a victim's job did not run within %lld s "
		      "of a flood", HW_WAIT_NS / 1000000000);

	/* Per hardware queue: the flood's jobs ahead of each victim job, and
	 * the flood's cost of one job (median gap between two ends). */
	for (uint32_t h = 0; h < nhwq; h++) {
		int64_t *e, *gap, from;
		size_t ne = flood_ends(log, nhwq, h, &e, &from);

		ck_assert_uint_gt(ne, 1);
		gap = malloc(sizeof(*gap) * (ne - 1));
		ck_assert_ptr_nonnull(gap);
		for (size_t k = 1; k < ne; k++)
			gap[k - 1] = e[k] - e[k - 1];
		qsort(gap, ne - 1, sizeof(*gap), cmp_i64);
		cost_ns[h] = gap[(ne - 1) / 2];
		free(gap);
		for (int i = (int)h; i < FAIR_SAMPLES; i += (int)nhwq) {
			size_t k = 0;

			/* Before the log begins: not known. */
			if (t_dev[i] < from)
				continue;
			ahead[m] = 0;
			for (; k < ne && e[k] < v_ns[i]; k++)
				ahead[m] += e[k] > t_dev[i];
			/* The flood still ran past the victim's job. */
			ck_assert_msg(k < ne, "no flood job on hardware queue "
				      "%u ended after the victim's", h);
			m++;
		}
		free(e);
	}
	qsort(ahead, (size_t)m, sizeof(ahead[0]), cmp_i64);
	qsort(cost_ns, (size_t)nhwq, sizeof(cost_ns[0]), cmp_i64);
	qsort(dev_ns, (size_t)n, sizeof(dev_ns[0]), cmp_i64);
	qsort(wall_ns, (size_t)n, sizeof(wall_ns[0]), cmp_i64);
	hw_figure("NOP flood on %" PRIu64 " hardware queues (%" PRIu64
		  " jobs of %d commands, one job %.3f ms median of device "
		  "time): victim's job ran after %.2f ms median, %.2f ms max "
		  "of device time, behind %" PRId64 " median, %" PRId64
		  " max flood jobs (%d samples, %d counted; wall clock to "
		  "completion %.2f ms median, %.2f ms max)",
		  nhwq, jobs, FLOOD_CMDS, (double)cost_ns[nhwq / 2] / 1e6,
		  (double)dev_ns[n / 2] / 1e6, (double)dev_ns[n - 1] / 1e6,
		  m ? ahead[m / 2] : -1, m ? ahead[m - 1] : -1, n, m,
		  (double)wall_ns[n / 2] / 1e6,
		  (double)wall_ns[n - 1] / 1e6);
	ck_assert_msg(m >= FAIR_SAMPLES / 2,
		      "only %d of %d samples within the flood's log "
		      "(raise FLOOD_SLOTS)", m, FAIR_SAMPLES);
	ck_assert_msg(ahead[m - 1] <= (int64_t)ahead_max,
		      "a victim's job ran behind %" PRId64 " of the flood's "
		      "jobs (what the ring holds: at most %" PRIu64 ")",
		      ahead[m - 1], ahead_max);
	munmap(log, sizeof(*log));
	hw_bo_free(ctx.fd, &ts);
	hw_ctx_close(&ctx);
}
END_TEST

/* ---- time limits: no job holds the device past JOB_TIMEOUT_MS ------------- */

#define LONG_GEMM_K (1 << 23) /* about 16 s of one core */
#define LIMIT_SLACK_NS (1000ll * 1000 * 1000) /* scheduling, TCG, the abort */
#define NS_PER_MS (1000ll * 1000)
/* Device-time limits on a loaded host: well before a LONG_GEMM_K kernel ends. */
#define LONG_KERNEL_BOUND_NS(rounds, limit_ms)                              \
	((int64_t)(4 * (rounds) * (limit_ms)) * NS_PER_MS + LIMIT_SLACK_NS)

/* The report of long_kernels_main: per hardware queue, then overall. */
enum {
	LK_GEMM_ERR,	/* positive errno of the GEMM job */
	LK_GEMM_STATUS, /* its job_status */
	LK_NOP_ERR,	/* positive errno of the NOP job queued behind it */
	LK_PER_HWQ
};
#define LK_ENDED_NS (LK_PER_HWQ * FLOOD_MAX_HWQ) /* start to last end */
#define LK_SUBMIT_ERR (LK_ENDED_NS + 1)		 /* a SUBMIT afterwards */
#define LK_STATE (LK_SUBMIT_ERR + 1)		 /* CONTEXT_STATE then */
#define LK_WORDS (LK_STATE + 1)

/*
 * On a queue of every hardware queue: a job [FENCE_SIGNAL started, LAUNCH
 * a GEMM of LONG_GEMM_K] and a NOP job behind it. Answers 's' once every
 * launch has started, then waits for all of them and reports (LK_*).
 */
static int long_kernels_main(int in, int out, void *p)
{
	struct hw_bo cmd, dst[FLOOD_MAX_HWQ], nop[FLOOD_MAX_HWQ];
	struct gemm_job g[FLOOD_MAX_HWQ];
	uint32_t queue[FLOOD_MAX_HWQ];
	uint64_t r[LK_WORDS] = { 0 }, nhwq, state;
	struct drm_vnpu_bo_wait w;
	int fd = hw_open_raw();
	int64_t t0;

	(void)in;
	(void)p;
	if (fd < 0 ||
	    hw_get_param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES, 0, &nhwq) ||
	    hw_bo_create(fd, 64 * 1024, 0, &cmd))
		return 1;
	nhwq = nhwq < FLOOD_MAX_HWQ ? nhwq : FLOOD_MAX_HWQ;
	for (uint32_t i = 0; i < nhwq; i++) {
		struct vnpu_cmd c = vnpu_nop_cmd();

		if (hw_queue_create(fd, i, &queue[i], NULL) ||
		    hw_bo_create(fd, 4ull * GEMM_M * GEMM_M, 0, &dst[i]) ||
		    hw_bo_create(fd, 4096, 0, &nop[i]))
			return 2;
		if (gemm_job_submit(fd, queue[i], &cmd, 256ull * i, dst[i].va,
				    dst[i].handle, LONG_GEMM_K, 1, &g[i]))
			return 3;
		if (hw_submit(fd, queue[i], &cmd, 256ull * i + 128, &c, 1,
			      &nop[i].handle, 1, 0, NULL))
			return 4;
	}
	for (uint32_t i = 0; i < nhwq; i++)
		if (!gemm_job_started(&g[i]))
			return 5;
	t0 = hw_now_ns();
	if (step_send(out, 's'))
		return 6;
	for (uint32_t i = 0; i < nhwq; i++) {
		uint64_t *ri = &r[LK_PER_HWQ * i];

		memset(&w, 0, sizeof(w));
		hw_bo_wait(fd, g[i].args.handle, HW_WAIT_NS, &w);
		ri[LK_GEMM_ERR] = (uint64_t)-w.job_error;
		ri[LK_GEMM_STATUS] = w.job_status;
		memset(&w, 0, sizeof(w));
		hw_bo_wait(fd, nop[i].handle, HW_WAIT_NS, &w);
		ri[LK_NOP_ERR] = (uint64_t)-w.job_error;
	}
	r[LK_ENDED_NS] = (uint64_t)(hw_now_ns() - t0);
	{
		struct vnpu_cmd c = vnpu_nop_cmd();

		r[LK_SUBMIT_ERR] = (uint64_t)-hw_submit(fd, queue[0], &cmd, 0,
							&c, 1, NULL, 0, 0,
							NULL);
	}
	if (hw_get_param(fd, DRM_VNPU_PARAM_CONTEXT_STATE, 0, &state))
		return 7;
	r[LK_STATE] = state;
	return report_send(out, r, LK_WORDS) ? 8 : 0;
}

/*
 * An unprivileged user runs a kernel of about 16 s on every hardware
 * queue. Each is aborted once it has used its time limit, without a
 * device reset: the attacker's jobs fail (-ETIMEDOUT, status ABORTED; the
 * job behind it -ECANCELED) and its context is banned. With more kernels
 * than cores, those waiting for a core have not used their time yet: the
 * victim's FILL on each hardware queue, submitted once all the kernels are
 * on the device, finishes within a time limit per round of cores (2 here)
 * and a second.
 */
START_TEST(test_long_kernels)
{
	struct proc att;
	struct hw_ctx ctx;
	struct hw_bo buf[FLOOD_MAX_HWQ];
	uint32_t queue[FLOOD_MAX_HWQ];
	int64_t t_sub[FLOOD_MAX_HWQ], waited = 0;
	uint64_t r[LK_WORDS], nhwq, ncores, rounds, limit_ms;
	long before;

	hw_ctx_open(&ctx);
	nhwq = hw_param(ctx.fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	nhwq = nhwq < FLOOD_MAX_HWQ ? nhwq : FLOOD_MAX_HWQ;
	ncores = hw_param(ctx.fd, DRM_VNPU_PARAM_NUM_CORES);
	rounds = (nhwq + ncores - 1) / ncores;
	limit_ms = hw_param(ctx.fd, DRM_VNPU_PARAM_JOB_TIMEOUT_MS);
	ck_assert_msg(limit_ms <= 4000,
		      "JOB_TIMEOUT_MS %" PRIu64 ": the kernels are too short",
		      limit_ms);
	before = (long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT);
	for (uint32_t i = 0; i < nhwq; i++) {
		ck_assert_int_eq(hw_queue_create(ctx.fd, i, &queue[i], NULL),
				 0);
		hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &buf[i]);
	}
	proc_start(&att, long_kernels_main, NULL, HW_USER_UID);
	if (step_recv(att.from_child) != 's')
		ck_abort_msg("the attacker failed (exit %d)", proc_wait(&att));
	for (uint32_t i = 0; i < nhwq; i++) {
		struct vnpu_cmd c = vnpu_fill_cmd(buf[i].va, HW_PAGE_SIZE,
						  0x7e570000u + i, 4);

		t_sub[i] = hw_now_ns();
		ck_assert_int_eq(hw_submit(ctx.fd, queue[i], &ctx.cmd,
					   64ull * i, &c, 1, &buf[i].handle, 1,
					   0, NULL),
				 0);
	}
	for (uint32_t i = 0; i < nhwq; i++) {
		struct drm_vnpu_bo_wait w;
		int64_t t;

		ck_assert_int_eq(hw_bo_wait(ctx.fd, buf[i].handle, HW_WAIT_NS,
					    &w),
				 0);
		t = hw_now_ns() - t_sub[i];
		waited = t > waited ? t : waited;
		ck_assert_int_eq(w.job_error, 0);
		ck_assert_uint_eq(hw_check_u32(buf[i].map, HW_PAGE_SIZE,
					       0x7e570000u + i),
				  SIZE_MAX);
	}
	report_recv(&att, r, LK_WORDS);
	ck_assert_int_eq(proc_wait(&att), 0);
	hw_figure("time limit %" PRIu64 " ms: kernels on %" PRIu64
		  " hardware queues aborted %.2f s after they started; the "
		  "victim's FILLs waited %.2f s at most; resets %ld",
		  limit_ms, nhwq, (double)r[LK_ENDED_NS] / 1e9,
		  (double)waited / 1e9,
		  (long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT) - before);
	for (uint32_t i = 0; i < nhwq; i++) {
		const uint64_t *ri = &r[LK_PER_HWQ * i];

		ck_assert_uint_eq(ri[LK_GEMM_ERR], ETIMEDOUT);
		ck_assert_uint_eq(ri[LK_GEMM_STATUS], VNPU_STATUS_ABORTED);
		ck_assert_uint_eq(ri[LK_NOP_ERR], ECANCELED);
	}
	ck_assert_uint_eq(r[LK_SUBMIT_ERR], ECANCELED);
	ck_assert(r[LK_STATE] & DRM_VNPU_CONTEXT_BANNED);
	/*
	 * Limits are device time (Q_BUSY_US: what the device threads ran),
	 * which a loaded host stretches on the wall clock; the kernels are
	 * about 16 s of a core, so the abort shows well within 4 times the
	 * rounds' limits.
	 */
	ck_assert_msg(waited < LONG_KERNEL_BOUND_NS(rounds, limit_ms),
		      "a victim's job waited %lld ms behind a long kernel",
		      (long long)(waited / NS_PER_MS));
	ck_assert_uint_lt(r[LK_ENDED_NS],
			  LONG_KERNEL_BOUND_NS(rounds, limit_ms));
	ck_assert_int_eq((long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT),
			 before);
	for (uint32_t i = 0; i < nhwq; i++)
		hw_bo_free(ctx.fd, &buf[i]);
	hw_ctx_close(&ctx);
}
END_TEST

/*
 * The victim's side of a time-limit test: submits c on queue, listing
 * bos (the first is waited for), and returns the ns from SUBMIT until the
 * job ended, with its BO_WAIT answer in *w.
 */
static int64_t victim_job_ns(struct hw_ctx *ctx, uint32_t queue,
			     uint64_t cmd_offset, const struct vnpu_cmd *c,
			     const uint32_t *bos, uint32_t nbos,
			     struct drm_vnpu_bo_wait *w)
{
	int64_t t0 = hw_now_ns();

	ck_assert_int_eq(hw_submit(ctx->fd, queue, &ctx->cmd, cmd_offset, c, 1,
				   bos, nbos, 0, NULL),
			 0);
	ck_assert_int_eq(hw_bo_wait(ctx->fd, bos[0], HW_WAIT_NS, w), 0);
	return hw_now_ns() - t0;
}

/*
 * Hardware queue 0: a job [FENCE_SIGNAL started, LAUNCH a GEMM of
 * LONG_GEMM_K in a block per core] that holds every core, then a NOP job
 * every 20 ms (each re-arms the scheduler's timer) until SUBMIT refuses
 * one. Answers 's' once every block is on a core (each has written the
 * first row of its part of the VRAM output); reports {GEMM's errno, its
 * job_status, ns from start to its end, SUBMIT's last answer}.
 */
static int core_hog_main(int in, int out, void *p)
{
	struct drm_vnpu_bo_wait w = { 0 };
	struct vnpu_cmd nop = vnpu_nop_cmd();
	struct hw_bo cmd, dst;
	struct gemm_job g;
	uint64_t r[4], ncores;
	uint32_t queue;
	int fd = hw_open_raw(), ret;
	int64_t t0;

	(void)in;
	(void)p;
	if (fd < 0 || hw_get_param(fd, DRM_VNPU_PARAM_NUM_CORES, 0, &ncores) ||
	    hw_queue_create(fd, 0, &queue, NULL) ||
	    hw_bo_create(fd, 64 * 1024, 0, &cmd) ||
	    hw_bo_create(fd, 4ull * GEMM_M * GEMM_M, DRM_VNPU_BO_VRAM, &dst))
		return 1;
	memset(dst.map, 0xff, dst.size);
	if (gemm_job_submit(fd, queue, &cmd, 0, dst.va, dst.handle,
			    LONG_GEMM_K, (uint32_t)ncores, &g))
		return 2;
	if (!gemm_job_started(&g))
		return 3;
	/* Blocks split the rows: block b starts at row b * M / ncores. */
	t0 = hw_now_ns();
	for (uint64_t b = 0; b < ncores; b++) {
		volatile uint32_t *row = (uint32_t *)dst.map +
					 b * GEMM_M / ncores * GEMM_M;

		while (*row == 0xffffffffu) {
			if (hw_now_ns() - t0 > HW_WAIT_NS)
				return 6;
			usleep(1000);
		}
	}
	t0 = hw_now_ns();
	if (step_send(out, 's'))
		return 4;
	/* Its queue full (-EBUSY), it goes on trying, until banned. */
	do {
		usleep(20 * 1000);
		ret = hw_submit(fd, queue, &cmd, 128, &nop, 1, NULL, 0, 0,
				NULL);
	} while ((!ret || ret == -EBUSY) && hw_now_ns() - t0 < HW_WAIT_NS);
	hw_bo_wait(fd, g.args.handle, HW_WAIT_NS, &w);
	r[0] = (uint64_t)-w.job_error;
	r[1] = w.job_status;
	r[2] = (uint64_t)(hw_now_ns() - t0);
	r[3] = (uint64_t)-ret;
	return report_send(out, r, 4) ? 5 : 0;
}

/*
 * An unprivileged user's launch holds every core (blocks are not
 * preempted) and keeps queueing jobs behind it. A victim's launch on
 * another hardware queue waits for a core meanwhile: it has not used its
 * time and must complete, while the hog is aborted within its limit of
 * device time, whatever it queues.
 */
START_TEST(test_starved_launch_completes)
{
	const int64_t k = 1 << 17; /* a fifth of a second of one core */
	struct hw_bo one, args, dst;
	struct drm_vnpu_bo_wait w;
	struct hw_ctx ctx;
	struct proc hog;
	uint32_t queue1, list[3], size;
	uint64_t r[4], limit_ms;
	int64_t took;
	struct vnpu_cmd c;
	long before;

	hw_ctx_open(&ctx);
	ck_assert_uint_ge(hw_param(ctx.fd, DRM_VNPU_PARAM_NUM_HW_QUEUES), 2);
	ck_assert_uint_eq(GEMM_M % hw_param(ctx.fd, DRM_VNPU_PARAM_NUM_CORES),
			  0);
	limit_ms = hw_param(ctx.fd, DRM_VNPU_PARAM_JOB_TIMEOUT_MS);
	before = (long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT);
	ck_assert_int_eq(hw_queue_create(ctx.fd, 1, &queue1, NULL), 0);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &one);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &args);
	hw_bo_new(ctx.fd, 4ull * GEMM_M * GEMM_M, 0, &dst);
	*(float *)one.map = 1.0f;
	size = gemm_kargs(args.map, one.va, dst.va, k);
	c = vnpu_launch_cmd(VNPU_KERNEL_GEMM, 1, args.va, size);
	list[0] = dst.handle;
	list[1] = one.handle;
	list[2] = args.handle;
	proc_start(&hog, core_hog_main, NULL, HW_USER_UID);
	if (step_recv(hog.from_child) != 's')
		ck_abort_msg("the hog failed (exit %d)", proc_wait(&hog));
	took = victim_job_ns(&ctx, queue1, 0, &c, list, 3, &w);
	report_recv(&hog, r, 4);
	ck_assert_int_eq(proc_wait(&hog), 0);
	hw_figure("time limit %" PRIu64 " ms: a launch holding every core "
		  "(its user queueing a job every 20 ms) was aborted %.2f s "
		  "after it started; a victim's launch waiting for a core "
		  "completed %.2f s after its SUBMIT",
		  limit_ms, (double)r[2] / 1e9, (double)took / 1e9);
	ck_assert_msg(w.job_error == 0,
		      "the starved launch failed: %d, status %u",
		      w.job_error, w.job_status);
	/* It ran only once the hog was aborted: it was starved meanwhile. */
	ck_assert_msg(took > (int64_t)limit_ms * NS_PER_MS / 2,
		      "the victim's launch did not wait for a core (%lld ms)",
		      (long long)(took / NS_PER_MS));
	ck_assert_uint_eq(hw_check_u32(dst.map, 4ull * GEMM_M * GEMM_M,
				       0x48000000u /* 131072.0f */),
			  SIZE_MAX);
	ck_assert_uint_eq(r[0], ETIMEDOUT);
	ck_assert_uint_eq(r[1], VNPU_STATUS_ABORTED);
	ck_assert_uint_eq(r[3], ECANCELED);
	/* One limit of device time: a loaded host stretches it. */
	ck_assert_uint_lt(r[2], LONG_KERNEL_BOUND_NS(1, limit_ms));
	ck_assert_int_eq((long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT),
			 before);
	hw_bo_free(ctx.fd, &one);
	hw_bo_free(ctx.fd, &args);
	hw_bo_free(ctx.fd, &dst);
	hw_ctx_close(&ctx);
}
END_TEST

/*
 * A job blocked in FENCE_WAIT on a word of its own (`*gate`, never
 * released) on hardware queue 0; answers 's' once submitted, then waits
 * for it and reports {its errno, its job_status, CONTEXT_STATE}.
 */
static int gate_forever_main(int in, int out, void *p)
{
	struct hw_bo cmd, gate;
	struct drm_vnpu_bo_wait w = { 0 };
	uint64_t r[3];
	uint32_t queue;
	struct vnpu_cmd c;
	int fd = hw_open_raw();

	(void)in;
	(void)p;
	if (fd < 0 || hw_queue_create(fd, 0, &queue, NULL) ||
	    hw_bo_create(fd, 4096, 0, &cmd) || hw_bo_create(fd, 4096, 0, &gate))
		return 1;
	memset(gate.map, 0, 8);
	c = vnpu_fence_wait_cmd(gate.va, 1);
	if (hw_submit(fd, queue, &cmd, 0, &c, 1, &gate.handle, 1, 0, NULL))
		return 2;
	usleep(100 * 1000);
	if (step_send(out, 's'))
		return 3;
	hw_bo_wait(fd, gate.handle, HW_WAIT_NS, &w);
	r[0] = (uint64_t)-w.job_error;
	r[1] = w.job_status;
	if (hw_get_param(fd, DRM_VNPU_PARAM_CONTEXT_STATE, 0, &r[2]))
		return 4;
	return report_send(out, r, 3) ? 5 : 0;
}

/*
 * FENCE_WAIT: while no other context wants the hardware queue, a job may
 * wait past its time limit (a CPU that releases it later); as soon as one
 * does, a job that has waited a limit makes way (it resumes later), and
 * an attacker's wait that nobody releases is aborted without a reset once
 * it has waited 11 limits in all.
 */
START_TEST(test_fence_wait_limit)
{
	struct hw_ctx ctx;
	struct hw_bo gate, buf;
	struct drm_vnpu_bo_wait w;
	struct proc att;
	uint32_t queue0;
	uint64_t r[3], limit_ms;
	int64_t waited;
	long before;

	hw_ctx_open(&ctx);
	limit_ms = hw_param(ctx.fd, DRM_VNPU_PARAM_JOB_TIMEOUT_MS);
	before = (long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &gate);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &buf);
	memset(gate.map, 0, 8);
	{
		struct vnpu_cmd c[2] = {
			vnpu_fence_wait_cmd(gate.va, 1),
			vnpu_fill_cmd(buf.va, HW_PAGE_SIZE, 0x6a7e6a7e, 4),
		};
		uint32_t list[2] = { gate.handle, buf.handle };

		ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, c,
					   2, list, 2, 0, NULL),
				 0);
	}
	usleep((useconds_t)limit_ms * 2500);
	__atomic_store_n((uint64_t *)gate.map, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(hw_bo_wait(ctx.fd, buf.handle, HW_WAIT_NS, &w), 0);
	ck_assert_int_eq(w.job_error, 0);
	ck_assert_uint_eq(hw_check_u32(buf.map, HW_PAGE_SIZE, 0x6a7e6a7e),
			  SIZE_MAX);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);

	/* Contended: a victim's FILL on the same hardware queue. */
	ck_assert_int_eq(hw_queue_create(ctx.fd, 0, &queue0, NULL), 0);
	proc_start(&att, gate_forever_main, NULL, HW_USER_UID);
	if (step_recv(att.from_child) != 's')
		ck_abort_msg("the attacker failed (exit %d)", proc_wait(&att));
	{
		struct vnpu_cmd c = vnpu_fill_cmd(buf.va, HW_PAGE_SIZE,
						  0x6b7e6b7e, 4);

		waited = victim_job_ns(&ctx, queue0, 128, &c, &buf.handle, 1,
				       &w);
	}
	report_recv(&att, r, 3);
	ck_assert_int_eq(proc_wait(&att), 0);
	hw_figure("time limit %" PRIu64 " ms: an uncontended FENCE_WAIT "
		  "held %.2f s and finished; a victim waited %.2f s behind a "
		  "FENCE_WAIT nobody releases",
		  limit_ms, (double)limit_ms * 2.5 / 1e3, (double)waited / 1e9);
	ck_assert_int_eq(w.job_error, 0);
	ck_assert_uint_eq(hw_check_u32(buf.map, HW_PAGE_SIZE, 0x6b7e6b7e),
			  SIZE_MAX);
	ck_assert_uint_eq(r[0], ETIMEDOUT);
	ck_assert_uint_eq(r[1], VNPU_STATUS_ABORTED);
	ck_assert(r[2] & DRM_VNPU_CONTEXT_BANNED);
	ck_assert_msg(waited < (int64_t)limit_ms * NS_PER_MS + LIMIT_SLACK_NS,
		      "the victim waited %lld ms behind a FENCE_WAIT",
		      (long long)(waited / NS_PER_MS));
	ck_assert_int_eq((long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT),
			 before);
	hw_bo_free(ctx.fd, &gate);
	hw_bo_free(ctx.fd, &buf);
	hw_ctx_close(&ctx);
}
END_TEST

/*
 * As HW_USER_UID: a GEMM of LONG_GEMM_K in a block per core on each of
 * hardware queues 1 .. n-1, answers 's' once they all run, then waits for
 * them (they are aborted at their limits).
 */
static int wide_hogs_main(int in, int out, void *p)
{
	struct gemm_job g[FLOOD_MAX_HWQ];
	struct hw_bo cmd[FLOOD_MAX_HWQ], dst[FLOOD_MAX_HWQ];
	uint64_t nhwq, ncores;
	uint32_t q;
	int fd = hw_open_raw();

	(void)in;
	(void)p;
	if (fd < 0 ||
	    hw_get_param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES, 0, &nhwq) ||
	    hw_get_param(fd, DRM_VNPU_PARAM_NUM_CORES, 0, &ncores))
		return 1;
	nhwq = nhwq < FLOOD_MAX_HWQ ? nhwq : FLOOD_MAX_HWQ;
	for (uint32_t i = 1; i < nhwq; i++)
		if (hw_queue_create(fd, i, &q, NULL) ||
		    hw_bo_create(fd, 64 * 1024, 0, &cmd[i]) ||
		    hw_bo_create(fd, 4ull * GEMM_M * GEMM_M, DRM_VNPU_BO_VRAM,
				 &dst[i]) ||
		    gemm_job_submit(fd, q, &cmd[i], 0, dst[i].va, dst[i].handle,
				    LONG_GEMM_K, (uint32_t)ncores, &g[i]))
			return 2;
	for (uint32_t i = 1; i < nhwq; i++)
		if (!gemm_job_started(&g[i]))
			return 3;
	if (step_send(out, 's'))
		return 4;
	for (uint32_t i = 1; i < nhwq; i++)
		hw_bo_wait(fd, g[i].args.handle, HW_WAIT_NS, NULL);
	return 0;
}

/* Runs a GEMM of k in a block per core on ctx's `queue`; its wall ns. */
static int64_t victim_gemm_ns(struct hw_ctx *ctx, uint32_t queue,
			      struct hw_bo *dst, int64_t k, uint32_t ncores,
			      struct drm_vnpu_bo_wait *w)
{
	struct gemm_job g;
	int64_t t0 = hw_now_ns();

	ck_assert_int_eq(gemm_job_submit(ctx->fd, queue, &ctx->cmd, 0, dst->va,
					 dst->handle, k, ncores, &g),
			 0);
	ck_assert_int_eq(hw_bo_wait(ctx->fd, g.args.handle, HW_WAIT_NS, w), 0);
	hw_bo_free(ctx->fd, &g.one);
	hw_bo_free(ctx->fd, &g.args);
	hw_bo_free(ctx->fd, &g.flag);
	return hw_now_ns() - t0;
}

/*
 * A victim's launch on every core that takes about half its time limit
 * alone runs while another user's launches hold the cores from the other
 * hardware queues: it takes longer, but it did the same work, so it is
 * charged the same and completes; its context is not banned.
 */
START_TEST(test_contended_launch_charged_its_work)
{
	struct drm_vnpu_bo_wait w;
	struct hw_ctx ctx;
	struct hw_bo dst;
	struct proc att;
	uint64_t limit_ms, ncores, nhwq;
	int64_t k = 1 << 14, alone, shared;
	uint32_t queue;

	hw_ctx_open(&ctx);
	limit_ms = hw_param(ctx.fd, DRM_VNPU_PARAM_JOB_TIMEOUT_MS);
	ncores = hw_param(ctx.fd, DRM_VNPU_PARAM_NUM_CORES);
	nhwq = hw_param(ctx.fd, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	if (nhwq < 2) {
		hw_figure("one hardware queue: nothing runs beside the victim");
		hw_ctx_close(&ctx);
		return;
	}
	ck_assert_int_eq(hw_queue_create(ctx.fd, 0, &queue, NULL), 0);
	hw_bo_new(ctx.fd, 4ull * GEMM_M * GEMM_M, DRM_VNPU_BO_VRAM, &dst);
	/* k for about half a limit alone */
	do {
		alone = victim_gemm_ns(&ctx, queue, &dst, k, (uint32_t)ncores,
				       &w);
		ck_assert_int_eq(w.job_error, 0);
		if (alone * 4 >= (int64_t)limit_ms * NS_PER_MS)
			break;
		k *= 2;
	} while (k < LONG_GEMM_K);
	k = (int64_t)((double)k * (double)limit_ms * NS_PER_MS / 2 / alone);
	alone = victim_gemm_ns(&ctx, queue, &dst, k, (uint32_t)ncores, &w);
	ck_assert_int_eq(w.job_error, 0);
	proc_start(&att, wide_hogs_main, NULL, HW_USER_UID);
	if (step_recv(att.from_child) != 's')
		ck_abort_msg("the other user failed (exit %d)",
			     proc_wait(&att));
	shared = victim_gemm_ns(&ctx, queue, &dst, k, (uint32_t)ncores, &w);
	ck_assert_int_eq(proc_wait(&att), 0);
	hw_figure("time limit %" PRIu64 " ms: a launch on %" PRIu64 " cores "
		  "took %.2f s alone, %.2f s beside another user's launches "
		  "on %" PRIu64 " hardware queues: error %d",
		  limit_ms, ncores, alone / 1e9, shared / 1e9, nhwq - 1,
		  w.job_error);
	ck_assert_int_eq(w.job_error, 0);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	/* Else the test showed nothing: the contention did not stretch it. */
	ck_assert_msg(shared > (int64_t)limit_ms * NS_PER_MS,
		      "the shared run took %.2f s, within the limit",
		      shared / 1e9);
	hw_bo_free(ctx.fd, &dst);
	hw_ctx_close(&ctx);
}
END_TEST

/*
 * As HW_USER_UID, on hardware queue 0 (and, with p, a GEMM of LONG_GEMM_K
 * on hardware queue 1 first: answers 's' once it runs): on 'n', one NOP.
 * Reports {the NOP's errno, the device clock at its end}.
 */
static int nop_on_hwq0_main(int in, int out, void *p)
{
	struct drm_vnpu_bo_wait w = { 0 };
	struct vnpu_cmd c[2] = { vnpu_nop_cmd() };
	struct hw_bo cmd, cmd1, ts, dst;
	struct gemm_job g;
	uint32_t q0, q1;
	uint64_t r[2];
	int fd = hw_open_raw(), ret;

	if (fd < 0 || hw_queue_create(fd, 0, &q0, NULL) ||
	    hw_bo_create(fd, 4096, 0, &cmd) || hw_bo_create(fd, 4096, 0, &ts))
		return 1;
	if (p) {
		if (hw_queue_create(fd, 1, &q1, NULL) ||
		    hw_bo_create(fd, 64 * 1024, 0, &cmd1) ||
		    hw_bo_create(fd, 4ull * GEMM_M * GEMM_M, DRM_VNPU_BO_VRAM,
				 &dst) ||
		    gemm_job_submit(fd, q1, &cmd1, 0, dst.va, dst.handle,
				    LONG_GEMM_K, 1, &g) ||
		    !gemm_job_started(&g))
			return 2;
		if (step_send(out, 's'))
			return 3;
	}
	if (step_recv(in) != 'n')
		return 4;
	c[1] = vnpu_timestamp_cmd(ts.va);
	/* With the GEMM: its overrun may have banned the context by now. */
	ret = hw_submit(fd, q0, &cmd, 0, c, 2, &ts.handle, 1, 0, NULL);
	if (!ret)
		hw_bo_wait(fd, ts.handle, HW_WAIT_NS, &w);
	r[0] = (uint64_t)-(ret ? ret : w.job_error);
	r[1] = *(volatile uint64_t *)ts.map;
	return report_send(out, r, 2) ? 6 : 0;
}

/* The device clock (TIMESTAMP) now, through ctx's queue `queue`. */
static uint64_t device_now(struct hw_ctx *ctx, uint32_t queue,
			   struct hw_bo *ts)
{
	struct vnpu_cmd c = vnpu_timestamp_cmd(ts->va);

	ck_assert_int_eq(hw_submit(ctx->fd, queue, &ctx->cmd, 4096, &c, 1,
				   &ts->handle, 1, 0, NULL),
			 0);
	ck_assert_int_eq(hw_bo_wait(ctx->fd, ts->handle, HW_WAIT_NS, NULL), 0);
	return *(volatile uint64_t *)ts->map;
}

/*
 * Waiting is no use of the device: a job in FENCE_WAIT that its own CPU
 * releases after 2.5 limits completes, and its context is not banned,
 * although another user's NOP wants the same hardware queue meanwhile;
 * the NOP does not wait for the release either (the waiting job makes
 * way and resumes).
 */
START_TEST(test_fence_wait_contended_released)
{
	struct drm_vnpu_bo_wait w;
	struct hw_bo gate, buf, ts;
	struct hw_ctx ctx;
	struct proc att;
	uint32_t q0, q1;
	uint64_t r[2], limit_ms, released;
	long before;

	hw_ctx_open(&ctx);
	limit_ms = hw_param(ctx.fd, DRM_VNPU_PARAM_JOB_TIMEOUT_MS);
	before = (long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT);
	ck_assert_int_eq(hw_queue_create(ctx.fd, 0, &q0, NULL), 0);
	ck_assert_int_eq(hw_queue_create(ctx.fd, 1, &q1, NULL), 0);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &gate);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &buf);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &ts);
	memset(gate.map, 0, 8);
	proc_start(&att, nop_on_hwq0_main, NULL, HW_USER_UID);
	{
		struct vnpu_cmd c[2] = {
			vnpu_fence_wait_cmd(gate.va, 1),
			vnpu_fill_cmd(buf.va, HW_PAGE_SIZE, 0x6c7e6c7e, 4),
		};
		uint32_t list[2] = { gate.handle, buf.handle };

		ck_assert_int_eq(hw_submit(ctx.fd, q0, &ctx.cmd, 0, c, 2, list,
					   2, 0, NULL),
				 0);
	}
	usleep(100 * 1000);
	ck_assert_int_eq(step_send(att.to_child, 'n'), 0);
	usleep((useconds_t)limit_ms * 2500);
	released = device_now(&ctx, q1, &ts);
	__atomic_store_n((uint64_t *)gate.map, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(hw_bo_wait(ctx.fd, buf.handle, HW_WAIT_NS, &w), 0);
	report_recv(&att, r, 2);
	ck_assert_int_eq(proc_wait(&att), 0);
	hw_figure("time limit %" PRIu64 " ms: a FENCE_WAIT released after "
		  "2.5 limits: error %d; another user's NOP on its queue "
		  "ended %.2f s before the release",
		  limit_ms, w.job_error, ((double)released - (double)r[1]) / 1e9);
	ck_assert_int_eq(w.job_error, 0);
	ck_assert_uint_eq(hw_check_u32(buf.map, HW_PAGE_SIZE, 0x6c7e6c7e),
			  SIZE_MAX);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	ck_assert_uint_eq(r[0], 0);
	ck_assert_msg(r[1] < released,
		      "the NOP waited for the FENCE_WAIT to be released");
	ck_assert_int_eq((long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT),
			 before);
	hw_bo_free(ctx.fd, &gate);
	hw_bo_free(ctx.fd, &buf);
	hw_bo_free(ctx.fd, &ts);
	hw_ctx_close(&ctx);
}
END_TEST

/*
 * A job waits in FENCE_WAIT on hardware queue 0 for its own FENCE_SIGNAL
 * job on hardware queue 1, which another user's long launch there delays
 * past a limit (until that launch is aborted); the other user also wants
 * queue 0. The waiting job is not failed for the time its producer was
 * held up: it completes, and its context is not banned.
 */
START_TEST(test_fence_wait_producer_delayed)
{
	struct drm_vnpu_bo_wait w;
	struct hw_bo gate, buf;
	struct hw_ctx ctx;
	struct proc att;
	uint32_t q0, q1;
	uint64_t r[2];
	long before;
	int dummy = 1;

	hw_ctx_open(&ctx);
	before = (long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT);
	ck_assert_int_eq(hw_queue_create(ctx.fd, 0, &q0, NULL), 0);
	ck_assert_int_eq(hw_queue_create(ctx.fd, 1, &q1, NULL), 0);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &gate);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &buf);
	memset(gate.map, 0, 8);
	proc_start(&att, nop_on_hwq0_main, &dummy, HW_USER_UID);
	if (step_recv(att.from_child) != 's')
		ck_abort_msg("the other user failed (exit %d)",
			     proc_wait(&att));
	{
		struct vnpu_cmd c[2] = {
			vnpu_fence_wait_cmd(gate.va, 1),
			vnpu_fill_cmd(buf.va, HW_PAGE_SIZE, 0x6d7e6d7e, 4),
		};
		struct vnpu_cmd sig = vnpu_fence_signal_cmd(gate.va, 1);

		/* Explicit order only: the gate BO would order the two. */
		ck_assert_int_eq(hw_submit(ctx.fd, q0, &ctx.cmd, 0, c, 2,
					   &buf.handle, 1, 0, NULL),
				 0);
		ck_assert_int_eq(hw_submit(ctx.fd, q1, &ctx.cmd, 1024, &sig, 1,
					   &gate.handle, 1, 0, NULL),
				 0);
	}
	usleep(100 * 1000);
	ck_assert_int_eq(step_send(att.to_child, 'n'), 0);
	ck_assert_int_eq(hw_bo_wait(ctx.fd, buf.handle, HW_WAIT_NS, &w), 0);
	report_recv(&att, r, 2);
	ck_assert_int_eq(proc_wait(&att), 0);
	hw_figure("a FENCE_WAIT whose producer waited behind another user's "
		  "launch: error %d, context state %" PRIu64,
		  w.job_error, hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE));
	ck_assert_int_eq(w.job_error, 0);
	ck_assert_uint_eq(hw_check_u32(buf.map, HW_PAGE_SIZE, 0x6d7e6d7e),
			  SIZE_MAX);
	ck_assert_uint_eq(hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	/* The other user's NOP: done, or failed with its banned context. */
	ck_assert(r[0] == 0 || r[0] == ECANCELED);
	ck_assert_int_eq((long)hw_param(ctx.fd, DRM_VNPU_PARAM_RESET_COUNT),
			 before);
	hw_bo_free(ctx.fd, &gate);
	hw_bo_free(ctx.fd, &buf);
	hw_ctx_close(&ctx);
}
END_TEST

/* ---- SIGKILL in every phase of a job ---------------------------------------- */

/* Where kill_target_main stands when it is killed. */
enum kill_phase {
	KP_OPENED,	/* a file, nothing else */
	KP_MAPPED,	/* system and VRAM BOs, mapped and written */
	KP_SUBMITTING,	/* threads in SUBMIT, jobs queued */
	KP_GATED,	/* a job blocked in FENCE_WAIT, jobs behind it */
	KP_KERNEL,	/* a long kernel on the cores, reaching a VRAM BO
			 * through its arguments only */
	KP_WAITING,	/* in BO_WAIT on that kernel */
	KP_EXPORTED,	/* a system BO exported as a dma-buf, imported by a
			 * second file, a job of that file writing it */
	KP_COUNT
};

static const char *const kill_phase_names[KP_COUNT] = {
	"opened", "BOs mapped", "in SUBMIT", "job gated", "kernel running",
	"in BO_WAIT", "dma-buf exported"
};

struct submitter {
	int fd;
	uint32_t queue;
	const struct hw_bo *cmd;
};

static void *submit_forever(void *p)
{
	const struct submitter *s = p;
	struct vnpu_cmd c = vnpu_nop_cmd();

	for (;;)
		hw_submit(s->fd, s->queue, s->cmd, 0, &c, 1, NULL, 0, 0, NULL);
	return NULL;
}

/* Gets to phase *p, answers 'k' and waits to be killed (exit 9 if it is
 * not; another code names a step that failed). */
static int kill_target_main(int in, int out, void *p)
{
	enum kill_phase phase = *(const enum kill_phase *)p;
	struct hw_bo sys, vram, cmd, gate, dst;
	struct submitter sub;
	struct gemm_job g;
	struct vnpu_cmd c[2];
	uint32_t queue, imported;
	pthread_t t;
	int fd = hw_open_raw(), dmabuf;

	(void)in;
	if (fd < 0)
		return 1;
	if (phase == KP_OPENED)
		goto killed;
	if (hw_bo_create(fd, 1u << 20, 0, &sys) ||
	    hw_bo_create(fd, 1u << 20, DRM_VNPU_BO_VRAM, &vram) ||
	    hw_bo_create(fd, 64 * 1024, 0, &cmd) ||
	    hw_bo_create(fd, 4096, 0, &gate) ||
	    hw_bo_create(fd, 4ull * GEMM_M * GEMM_M, DRM_VNPU_BO_VRAM, &dst))
		return 2;
	memset(sys.map, 0x11, sys.size);
	memset(vram.map, 0x22, vram.size);
	memset(gate.map, 0, 8);
	if (phase == KP_MAPPED)
		goto killed;
	if (hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &queue, NULL))
		return 3;
	switch (phase) {
	case KP_SUBMITTING:
		sub = (struct submitter){ fd, queue, &cmd };
		for (int i = 0; i < 2; i++)
			if (pthread_create(&t, NULL, submit_forever, &sub))
				return 4;
		usleep(20 * 1000);
		break;
	case KP_GATED:
		c[0] = vnpu_fence_wait_cmd(gate.va, 1);
		c[1] = vnpu_fill_cmd(vram.va, vram.size, 0x33333333, 4);
		{
			uint32_t list[2] = { gate.handle, vram.handle };

			if (hw_submit(fd, queue, &cmd, 0, c, 2, list, 2, 0,
				      NULL) ||
			    hw_submit(fd, queue, &cmd, 128, &c[1], 1,
				      &vram.handle, 1, 0, NULL))
				return 5;
		}
		break;
	case KP_KERNEL:
	case KP_WAITING:
		if (gemm_job_submit(fd, queue, &cmd, 0, dst.va, 0, LONG_GEMM_K,
				    1, &g) ||
		    !gemm_job_started(&g))
			return 6;
		if (phase == KP_WAITING) {
			step_send(out, 'k');
			hw_bo_wait(fd, g.args.handle, HW_WAIT_NS, NULL);
			return 9;
		}
		break;
	case KP_EXPORTED: {
		int fd2 = hw_open_raw();
		struct hw_bo cmd2;
		uint32_t q2;

		if (fd2 < 0 || hw_prime_export(fd, sys.handle, &dmabuf) ||
		    hw_prime_import(fd2, dmabuf, &imported) ||
		    hw_queue_create(fd2, DRM_VNPU_HW_QUEUE_ANY, &q2, NULL) ||
		    hw_bo_create(fd2, 4096, 0, &cmd2) ||
		    hw_bo_from_handle(fd2, imported, &dst))
			return 7;
		c[0] = vnpu_fill_cmd(dst.va, dst.size, 0x44444444, 4);
		if (hw_submit(fd2, q2, &cmd2, 0, c, 1, &imported, 1, 0, NULL))
			return 8;
		break;
	}
	default:
		break;
	}
killed:
	step_send(out, 'k');
	sleep(60);
	return 9;
}

/* As uid HW_USER_UID: reports {open files, VRAM bytes, pinned bytes}
 * that user holds (this probe's own file included). */
static int quota_probe_main(int in, int out, void *p)
{
	uint64_t r[3];
	int fd = hw_open_raw();

	(void)in;
	(void)p;
	if (fd < 0 ||
	    hw_get_param(fd, DRM_VNPU_PARAM_QUOTA_USED, DRM_VNPU_QUOTA_CONTEXTS,
			 &r[0]) ||
	    hw_get_param(fd, DRM_VNPU_PARAM_QUOTA_USED, DRM_VNPU_QUOTA_VRAM,
			 &r[1]) ||
	    hw_get_param(fd, DRM_VNPU_PARAM_QUOTA_USED, DRM_VNPU_QUOTA_PINNED,
			 &r[2]))
		return 1;
	return report_send(out, r, 3) ? 2 : 0;
}

/* What HW_USER_UID holds, through a probe of its own. */
static void user_holds(uint64_t r[3])
{
	struct proc probe;

	proc_start(&probe, quota_probe_main, NULL, HW_USER_UID);
	report_recv(&probe, r, 3);
	ck_assert_int_eq(proc_wait(&probe), 0);
}

/*
 * An unprivileged process is SIGKILLed in every phase of a job's life,
 * twice each, while a victim guards its canary. Afterwards the victim's
 * memory is unchanged, its jobs run, no reset happened, and everything
 * the killed processes held (files, VRAM, pinned pages) is given back
 * once their jobs have ended.
 */
START_TEST(test_sigkill_every_phase)
{
	struct victim_arg va = { DRM_VNPU_BO_VRAM, 64 * 1024 };
	struct proc victim, target;
	uint64_t held[3];
	int64_t t0;
	long before;
	int fd = hw_open(), vst;

	before = (long)hw_param(fd, DRM_VNPU_PARAM_RESET_COUNT);
	proc_start(&victim, victim_main, &va, 0);
	ck_assert_int_eq(step_send(victim.to_child, 'g'), 0);
	ck_assert_int_eq(step_recv(victim.from_child), 'r');
	for (int round = 0; round < 2 * KP_COUNT; round++) {
		enum kill_phase phase = (enum kill_phase)(round % KP_COUNT);

		proc_start(&target, kill_target_main, &phase, HW_USER_UID);
		if (step_recv(target.from_child) != 'k')
			ck_abort_msg("phase %s: the target failed (exit %d)",
				     kill_phase_names[phase],
				     proc_wait(&target));
		/* somewhere in the phase, not only at its start */
		usleep((useconds_t)(round / KP_COUNT) * 7000);
		ck_assert_int_eq(kill(target.pid, SIGKILL), 0);
		ck_assert_int_eq(proc_wait(&target), -SIGKILL);
		victim_works(DRM_VNPU_BO_VRAM, HW_PAGE_SIZE);
	}
	/* What a killed job held goes back when the job ends: within a time
	 * limit of the device (its kernel is aborted), and a second. */
	t0 = hw_now_ns();
	do {
		user_holds(held);
		if (held[0] == 1 && !held[1] && !held[2])
			break;
		usleep(100 * 1000);
	} while (hw_now_ns() - t0 < HW_WAIT_NS);
	ck_assert_int_eq(step_send(victim.to_child, 'c'), 0);
	vst = proc_wait(&victim);
	hw_figure("SIGKILL in %d phases of a job, %d times each: victim BOs "
		  "changed %d of %d; the user held %" PRIu64 " files, %" PRIu64
		  " VRAM bytes, %" PRIu64 " pinned bytes %.2f s after the last "
		  "kill",
		  KP_COUNT, 2, vst, VICTIM_BOS, held[0] - 1, held[1], held[2],
		  (double)(hw_now_ns() - t0) / 1e9);
	ck_assert_msg(vst == 0,
		      "the victim's memory changed (%d BOs) or it failed", vst);
	ck_assert_uint_eq(held[0], 1);
	ck_assert_uint_eq(held[1], 0);
	ck_assert_uint_eq(held[2], 0);
	ck_assert_int_eq((long)hw_param(fd, DRM_VNPU_PARAM_RESET_COUNT),
			 before);
	close(fd);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_hostile");
	TCase *tc = tcase_create("memory");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_close_vram_during_kernel);
	tcase_add_test(tc, test_close_system_during_kernel);
	tcase_add_test(tc, test_exit_during_kernel);
	tcase_add_test(tc, test_fault_during_kernel);
	tcase_add_test(tc, test_sigkill_every_phase);
	hw_suite_add(s, tc);
	tc = tcase_create("limits");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_context_share);
	tcase_add_test(tc, test_vram_share);
	tcase_add_test(tc, test_pinned_share);
	tcase_add_test(tc, test_job_limit);
	tcase_add_test(tc, test_job_memory_limit);
	hw_suite_add(s, tc);
	tc = tcase_create("fairness");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_nop_flood);
	hw_suite_add(s, tc);
	tc = tcase_create("time_limits");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_long_kernels);
	tcase_add_test(tc, test_starved_launch_completes);
	tcase_add_test(tc, test_fence_wait_limit);
	tcase_add_test(tc, test_fence_wait_contended_released);
	tcase_add_test(tc, test_fence_wait_producer_delayed);
	tcase_add_test(tc, test_contended_launch_charged_its_work);
	hw_suite_add(s, tc);
	return hw_main(argc, argv, s, 0);
}
