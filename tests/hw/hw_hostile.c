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

#include <errno.h>
#include <grp.h>
#include <poll.h>
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

/* Runs fn(in, out, arg) in a child, as uid 1000 when unprivileged. */
static void proc_start(struct proc *p, int (*fn)(int in, int out, void *arg),
		       void *arg, bool unprivileged)
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
		if (unprivileged &&
		    (setgroups(1, groups) || setgid(HW_USER_UID) ||
		     setuid(HW_USER_UID)))
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

static void nd_tensor(struct vnpu_tensor *t, uint32_t buffer, int64_t rows,
		      int64_t cols, int64_t rs, int64_t cs)
{
	memset(t, 0, sizeof(*t));
	t->buffer = buffer;
	t->dtype = VNPU_DTYPE_F32;
	t->format = VNPU_FORMAT_ND;
	t->ndim = 2;
	t->sizes[0] = rows;
	t->sizes[1] = cols;
	t->strides[0] = rs;
	t->strides[1] = cs;
}

/* GEMM out[M,M] = A[M,K] x B[K,M], A and B broadcast from one float. */
static uint32_t gemm_kargs(void *args, uint64_t one_va, uint64_t out_va)
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
	nd_tensor(&kp.a, 0, GEMM_M, GEMM_K, 0, 0);
	nd_tensor(&kp.b, 0, GEMM_K, GEMM_M, 0, 0);
	nd_tensor(&kp.out, 1, GEMM_M, GEMM_M, GEMM_M, 1);
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), b, sizeof(b));
	memcpy(p + sizeof(h) + sizeof(b), &kp, sizeof(kp));
	return sizeof(h) + sizeof(b) + sizeof(kp);
}

/*
 * Submits [FENCE_SIGNAL started, LAUNCH gemm -> X] listing every BO but X,
 * waits until the launch started, closes X (or exits), answers 'x'; then
 * 'w': waits for the job; exits 0, or a code naming the failed step.
 */
static int attacker_main(int in, int out, void *p)
{
	const struct attack_arg *a = p;
	struct hw_bo x, one, args, flag;
	struct hw_ctx ctx;
	struct vnpu_cmd c[2];
	uint32_t list[3], size;
	int64_t t0;

	ctx.fd = hw_open_raw();
	if (ctx.fd < 0 ||
	    hw_queue_create(ctx.fd, DRM_VNPU_HW_QUEUE_ANY, &ctx.queue, NULL) ||
	    hw_bo_create(ctx.fd, 64 * 1024, 0, &ctx.cmd))
		return 80;
	if (hw_bo_create(ctx.fd, 4ull * GEMM_M * GEMM_M, a->flags, &x) ||
	    hw_bo_create(ctx.fd, 4096, 0, &one) ||
	    hw_bo_create(ctx.fd, 4096, 0, &args) ||
	    hw_bo_create(ctx.fd, 4096, 0, &flag))
		return 81;
	*(float *)one.map = 1.0f;
	memset(flag.map, 0, 8);
	size = gemm_kargs(args.map, one.va, x.va);
	c[0] = vnpu_fence_signal_cmd(flag.va, 1);
	c[1] = vnpu_launch_cmd(VNPU_KERNEL_GEMM, 1, args.va, size);
	list[0] = one.handle;
	list[1] = args.handle;
	list[2] = flag.handle;
	if (hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, c, 2, list, 3, 0, NULL))
		return 82;
	t0 = hw_now_ns();
	while (!__atomic_load_n((uint64_t *)flag.map, __ATOMIC_ACQUIRE)) {
		if (hw_now_ns() - t0 > 20ll * 1000 * 1000 * 1000)
			return 83;
		usleep(1000);
	}
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
	hw_bo_wait(ctx.fd, args.handle, HW_WAIT_NS, NULL);
	printf("attacker: the kernel ran %.2f s after it started\n",
	       (double)(hw_now_ns() - t0) / 1e9);
	fflush(stdout);
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

	proc_start(&victim, victim_main, &va, false);
	proc_start(&attacker, attacker_main, &aa, true);
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
	printf("%s BO %s during the kernel: attacker exit %d, victim BOs "
	       "changed %d of %d\n",
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

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_hostile");
	TCase *tc = tcase_create("memory");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_close_vram_during_kernel);
	tcase_add_test(tc, test_close_system_during_kernel);
	tcase_add_test(tc, test_exit_during_kernel);
	hw_suite_add(s, tc);
	return hw_main(argc, argv, s, 0);
}
