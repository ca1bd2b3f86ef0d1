// SPDX-License-Identifier: MIT
/*
 * hw_fuzz: category 12 of the in-VM hardware suite. Every vnpu ioctl and the
 * DRM core's GEM_CLOSE / PRIME / SYNCOBJ ioctls called with valid-looking
 * arguments mutated at random (fields replaced by edge values, bad handles,
 * bad and read-only user pointers), plus unknown ioctl numbers and sizes:
 * HW_FUZZ_CALLS calls (default 100000) from the seed HW_FUZZ_SEED (default
 * fixed, printed). Passing means: no crash of the process or the device, the
 * kernel log stays clean (vm.sh fails the run on a WARN/BUG/oops), every
 * answer is 0 or a documented errno, the device still works and closing the
 * fuzzed file frees all its VRAM. A separate test asserts -EFAULT for bad
 * user pointers in each pointer-taking ioctl.
 *
 * Limits that keep the run short and the harness safe: timeouts are never
 * in the future (nothing sleeps); syncobj counts stay <= 256 (the DRM core
 * allocates count-sized arrays); command buffers only ever hold NOP,
 * DMA_COPY and FILL(0) commands with page-aligned addresses and
 * 256-multiple sizes, so no mutation can turn BO contents into a FENCE_WAIT
 * that would hold a queue until a reset; TEST_INJECT is refused
 * (allow_test_inject off); pointers the kernel may write through point to a
 * scratch area, a read-only page or unmapped memory, never to test state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hw_util.h"

#define SCRATCH_SIZE (64 * 1024)
#define FD_POOL 8

static uint64_t seed = 0x76e9c0ffee1234ull;
static long calls = 100000;

struct fuzz {
	int fd;
	uint64_t rng;
	uint8_t *scratch;	/* read/write, the kernel may write here */
	uint8_t *ro;		/* read-only page */
	uint8_t *none;		/* PROT_NONE page */
	uint32_t max_handle;	/* handles seen, for cleanup */
	uint32_t max_syncobj;
	int fds[FD_POOL];	/* dma-buf / syncobj / sync_file fds */
	long errs[256];		/* errno histogram */
	int64_t op_ns[24];	/* time spent per kind of call */
	long ok;
};

static uint64_t rnd(struct fuzz *f)
{
	return hw_rand(&f->rng);
}

static uint32_t below(struct fuzz *f, uint32_t n)
{
	return (uint32_t)(rnd(f) % n);
}

static uint64_t edge_value(struct fuzz *f)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 7, 8, 63, 64, 255, 4095, 4096, 4097, 65536,
		0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
		1ull << 39, (1ull << 39) + 1, 0x7fffffffffffffffull,
		0x8000000000000000ull, ~0ull, ~0ull - 7,
	};

	if (below(f, 4) == 0)
		return rnd(f);
	return v[below(f, sizeof(v) / sizeof(v[0]))];
}

/* A user pointer: mostly the scratch area, else bad in one way or another. */
static uint64_t user_ptr(struct fuzz *f)
{
	switch (below(f, 10)) {
	case 0: return 0;
	case 1: return (uintptr_t)f->none;
	case 2: return (uintptr_t)f->ro;
	case 3: return (uintptr_t)f->scratch + 1 + below(f, 7);
	case 4: return 0xffff888000000000ull;	/* kernel space */
	case 5: return ~0ull - below(f, 64);
	default: return (uintptr_t)f->scratch + 8 * below(f, 64);
	}
}

static uint32_t handle(struct fuzz *f)
{
	if (below(f, 16) == 0)
		return (uint32_t)edge_value(f);
	return below(f, f->max_handle + 4);
}

/* Overwrites 0..3 naturally aligned fields of the struct with edge values. */
static void mutate(struct fuzz *f, void *p, size_t size)
{
	uint32_t n = below(f, 2) ? below(f, 4) : 0, i;

	for (i = 0; i < n; i++) {
		uint64_t v = edge_value(f);

		if (size >= 8 && below(f, 2)) {
			size_t off = 8 * below(f, (uint32_t)(size / 8));

			memcpy((uint8_t *)p + off, &v, 8);
		} else {
			size_t off = 4 * below(f, (uint32_t)(size / 4));
			uint32_t v32 = (uint32_t)v;

			memcpy((uint8_t *)p + off, &v32, 4);
		}
	}
}

static void keep_fd(struct fuzz *f, int fd)
{
	uint32_t slot = below(f, FD_POOL);

	if (fd < 0)
		return;
	if (f->fds[slot] >= 0)
		close(f->fds[slot]);
	f->fds[slot] = fd;
}

static int some_fd(struct fuzz *f)
{
	switch (below(f, 6)) {
	case 0: return -1;
	case 1: return f->fd;
	case 2: return (int)below(f, 3); /* stdin/out/err */
	default: return f->fds[below(f, FD_POOL)];
	}
}

/* Safe commands for the command buffers (see the header comment). */
static void fill_cmd_bo(struct fuzz *f, uint8_t *map, uint64_t size,
			uint64_t va_lo, uint64_t va_hi)
{
	uint64_t off;

	for (off = 0; off + VNPU_CMD_SIZE <= size; off += VNPU_CMD_SIZE) {
		uint64_t a = (va_lo + HW_PAGE_SIZE * below(f, 16)) & ~4095ull;
		uint64_t b = (va_lo + HW_PAGE_SIZE * below(f, 16)) & ~4095ull;
		uint64_t len = 256 * (1 + below(f, 16));
		struct vnpu_cmd c;

		if (a >= va_hi)
			a = va_lo;
		if (b >= va_hi)
			b = va_lo;
		switch (below(f, 3)) {
		case 0: c = vnpu_nop_cmd(); break;
		case 1: c = vnpu_copy_cmd(a, b, len); break;
		default: c = vnpu_fill_cmd(a, len, 0, 4); break;
		}
		memcpy(map + off, &c, sizeof(c));
	}
}

static int do_ioctl(struct fuzz *f, unsigned long req, void *arg)
{
	int ret = hw_ioctl(f->fd, req, arg);

	if (ret == 0)
		f->ok++;
	else
		f->errs[(-ret) & 255]++;
	return ret;
}

static void one_call(struct fuzz *f)
{
	union {
		struct drm_vnpu_get_param gp;
		struct drm_vnpu_bo_create bc;
		struct drm_vnpu_bo_info bi;
		struct drm_vnpu_bo_wait bw;
		struct drm_vnpu_queue_create qc;
		struct drm_vnpu_queue_destroy qd;
		struct drm_vnpu_submit sub;
		struct drm_gem_close gc;
		struct drm_prime_handle ph;
		struct drm_syncobj_create sc;
		struct drm_syncobj_destroy sd;
		struct drm_syncobj_wait sw;
		struct drm_syncobj_timeline_wait tw;
		struct drm_syncobj_array sa;
		struct drm_syncobj_timeline_array ta;
		struct drm_syncobj_handle sh;
		struct drm_syncobj_transfer st;
		uint8_t raw[256];
	} a;
	uint32_t *words = (uint32_t *)f->scratch;
	uint32_t i;
	int ret;

	memset(&a, 0, sizeof(a));
	/* Handle arrays and points the kernel reads from the scratch area. */
	for (i = 0; i < 64; i++)
		words[i] = below(f, 4) ? below(f, f->max_handle + 2) :
					 (uint32_t)edge_value(f);
	uint32_t op = below(f, 22);
	int64_t t0 = hw_now_ns();

	switch (op) {
	case 0:
		a.gp.param = below(f, 34);
		a.gp.index = below(f, 4) ? 0 : below(f, 70);
		mutate(f, &a, sizeof(a.gp));
		do_ioctl(f, DRM_IOCTL_VNPU_GET_PARAM, &a);
		break;
	case 1:
		a.bc.size = 4096ull << below(f, 5);
		a.bc.flags = below(f, 4);
		mutate(f, &a, sizeof(a.bc));
		/*
		 * Sizes the driver would accept are kept small: VRAM is
		 * zeroed through the BAR (slow under TCG) and system BOs are
		 * pinned at creation (large ones drove the guest into
		 * reclaim for seconds). Sizes above 2^39 still go through.
		 */
		if (a.bc.size > 65536 && a.bc.size <= (1ull << 39))
			a.bc.size = 65536;
		if (!do_ioctl(f, DRM_IOCTL_VNPU_BO_CREATE, &a) &&
		    a.bc.handle > f->max_handle && a.bc.handle < 100000)
			f->max_handle = a.bc.handle;
		break;
	case 2:
		a.bi.handle = handle(f);
		mutate(f, &a, sizeof(a.bi));
		do_ioctl(f, DRM_IOCTL_VNPU_BO_INFO, &a);
		break;
	case 3:
		a.bw.handle = handle(f);
		mutate(f, &a, sizeof(a.bw));
		if (a.bw.timeout_ns > 0)
			a.bw.timeout_ns = -a.bw.timeout_ns; /* poll only */
		do_ioctl(f, DRM_IOCTL_VNPU_BO_WAIT, &a);
		break;
	case 4:
		a.qc.hw_queue = below(f, 2) ? DRM_VNPU_HW_QUEUE_ANY :
					      below(f, 6);
		mutate(f, &a, sizeof(a.qc));
		if (!do_ioctl(f, DRM_IOCTL_VNPU_QUEUE_CREATE, &a) &&
		    a.qc.syncobj > f->max_syncobj && a.qc.syncobj < 100000)
			f->max_syncobj = a.qc.syncobj;
		break;
	case 5:
		a.qd.queue_id = below(f, 70);
		mutate(f, &a, sizeof(a.qd));
		do_ioctl(f, DRM_IOCTL_VNPU_QUEUE_DESTROY, &a);
		break;
	case 6:
	case 7:
	case 8:
		a.sub.queue_id = below(f, 8);
		a.sub.cmd_bo = handle(f);
		a.sub.cmd_count = 1 + below(f, 8);
		a.sub.cmd_offset = VNPU_CMD_SIZE * below(f, 8);
		a.sub.bo_handles = below(f, 8) ? (uintptr_t)f->scratch :
						 user_ptr(f);
		a.sub.bo_count = below(f, 5);
		if (below(f, 4) == 0) {
			a.sub.in_syncobjs = user_ptr(f);
			a.sub.in_syncobj_count = below(f, 4);
		}
		if (below(f, 4) == 0)
			a.sub.out_syncobj = below(f, f->max_syncobj + 2);
		mutate(f, &a, sizeof(a.sub));
		do_ioctl(f, DRM_IOCTL_VNPU_SUBMIT, &a);
		break;
	case 9:
		a.gc.handle = handle(f);
		mutate(f, &a, sizeof(a.gc));
		do_ioctl(f, DRM_IOCTL_GEM_CLOSE, &a);
		break;
	case 10:
		a.ph.handle = handle(f);
		a.ph.flags = below(f, 2) ? DRM_CLOEXEC : DRM_CLOEXEC | DRM_RDWR;
		a.ph.fd = -1;
		mutate(f, &a, sizeof(a.ph));
		if (!do_ioctl(f, DRM_IOCTL_PRIME_HANDLE_TO_FD, &a))
			keep_fd(f, a.ph.fd);
		break;
	case 11:
		a.ph.fd = some_fd(f);
		mutate(f, &a, sizeof(a.ph));
		do_ioctl(f, DRM_IOCTL_PRIME_FD_TO_HANDLE, &a);
		break;
	case 12:
		a.sc.flags = below(f, 2) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0;
		mutate(f, &a, sizeof(a.sc));
		if (!do_ioctl(f, DRM_IOCTL_SYNCOBJ_CREATE, &a) &&
		    a.sc.handle > f->max_syncobj && a.sc.handle < 100000)
			f->max_syncobj = a.sc.handle;
		break;
	case 13:
		a.sd.handle = below(f, f->max_syncobj + 2);
		mutate(f, &a, sizeof(a.sd));
		do_ioctl(f, DRM_IOCTL_SYNCOBJ_DESTROY, &a);
		break;
	case 14:
		a.sw.handles = user_ptr(f);
		a.sw.count_handles = below(f, 4);
		a.sw.flags = below(f, 4);
		mutate(f, &a, sizeof(a.sw));
		a.sw.count_handles %= 257;
		if (a.sw.timeout_nsec > 0)
			a.sw.timeout_nsec = 0;
		do_ioctl(f, DRM_IOCTL_SYNCOBJ_WAIT, &a);
		break;
	case 15:
		a.tw.handles = user_ptr(f);
		a.tw.points = user_ptr(f);
		a.tw.count_handles = below(f, 4);
		a.tw.flags = below(f, 8);
		mutate(f, &a, sizeof(a.tw));
		a.tw.count_handles %= 257;
		if (a.tw.timeout_nsec > 0)
			a.tw.timeout_nsec = 0;
		do_ioctl(f, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &a);
		break;
	case 16:
		a.sa.handles = user_ptr(f);
		a.sa.count_handles = below(f, 4);
		mutate(f, &a, sizeof(a.sa));
		a.sa.count_handles %= 257;
		do_ioctl(f, below(f, 2) ? DRM_IOCTL_SYNCOBJ_RESET :
					  DRM_IOCTL_SYNCOBJ_SIGNAL,
			 &a);
		break;
	case 17:
		a.ta.handles = user_ptr(f);
		a.ta.points = user_ptr(f);
		a.ta.count_handles = below(f, 4);
		mutate(f, &a, sizeof(a.ta));
		a.ta.count_handles %= 257;
		do_ioctl(f, below(f, 2) ? DRM_IOCTL_SYNCOBJ_QUERY :
					  DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL,
			 &a);
		break;
	case 18:
		a.sh.handle = below(f, f->max_syncobj + 2);
		a.sh.flags = below(f, 2) ?
			DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE : 0;
		a.sh.fd = -1;
		mutate(f, &a, sizeof(a.sh));
		if (!do_ioctl(f, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &a))
			keep_fd(f, a.sh.fd);
		break;
	case 19:
		a.sh.fd = some_fd(f);
		a.sh.flags = below(f, 2) ?
			DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE : 0;
		a.sh.handle = below(f, 2) ? below(f, f->max_syncobj + 2) : 0;
		mutate(f, &a, sizeof(a.sh));
		ret = do_ioctl(f, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &a);
		if (!ret && a.sh.handle > f->max_syncobj &&
		    a.sh.handle < 100000)
			f->max_syncobj = a.sh.handle;
		break;
	case 20:
		a.st.src_handle = below(f, f->max_syncobj + 2);
		a.st.dst_handle = below(f, f->max_syncobj + 2);
		a.st.src_point = below(f, 4);
		a.st.dst_point = below(f, 4);
		mutate(f, &a, sizeof(a.st));
		do_ioctl(f, DRM_IOCTL_SYNCOBJ_TRANSFER, &a);
		break;
	default: {
		/* Unknown driver ioctl numbers, any size and direction, on
		 * the scratch area (the core copies at most 16 KiB). */
		uint32_t nr = DRM_COMMAND_BASE + 7 + below(f, 9);
		uint32_t size = below(f, 2) ? below(f, 256) : below(f, 0x4000);
		unsigned long req = below(f, 2) ?
			(unsigned long)_IOC(_IOC_READ | _IOC_WRITE, 'd', nr,
					    size) :
			(unsigned long)_IOC(_IOC_WRITE, 'd', nr, size);

		ret = hw_ioctl(f->fd, req, f->scratch);
		f->errs[(-ret) & 255]++;
		break;
	}
	}
	f->op_ns[op] += hw_now_ns() - t0;
}

/* Closes everything the fuzz created, so the next round starts small. */
static void cleanup(struct fuzz *f)
{
	uint32_t i;

	for (i = 1; i <= f->max_handle + 4; i++) {
		struct drm_gem_close gc = { .handle = i };

		hw_ioctl(f->fd, DRM_IOCTL_GEM_CLOSE, &gc);
	}
	for (i = 1; i <= f->max_syncobj + 4; i++) {
		struct drm_syncobj_destroy sd = { .handle = i };

		hw_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &sd);
	}
	for (i = 1; i < 70; i++) {
		struct drm_vnpu_queue_destroy qd = { .queue_id = i };

		hw_ioctl(f->fd, DRM_IOCTL_VNPU_QUEUE_DESTROY, &qd);
	}
}

/* A few BOs with safe command streams and queues to aim at. */
static void populate(struct fuzz *f)
{
	struct hw_bo bo[4];
	uint32_t q, s, i;

	for (i = 0; i < 4; i++)
		hw_bo_new(f->fd, 64 * 1024, i == 3 ? DRM_VNPU_BO_VRAM : 0,
			  &bo[i]);
	for (i = 0; i < 3; i++) {
		fill_cmd_bo(f, bo[i].map, bo[i].size, bo[0].va,
			    bo[2].va + bo[2].size);
		munmap(bo[i].map, bo[i].size);
	}
	munmap(bo[3].map, bo[3].size);
	for (i = 0; i < 4; i++) {
		if (bo[i].handle > f->max_handle)
			f->max_handle = bo[i].handle;
		if (!hw_queue_create(f->fd, DRM_VNPU_HW_QUEUE_ANY, &q, &s) &&
		    s > f->max_syncobj)
			f->max_syncobj = s;
	}
}

static void allow_inject_off(void)
{
	FILE *p = fopen("/sys/module/vnpu/parameters/allow_test_inject", "w");

	if (p) {
		fputs("N", p);
		fclose(p);
	}
}

START_TEST(test_fuzz_ioctls)
{
	struct fuzz f;
	long n, i, errs = 0;
	int check_fd = hw_open();
	uint64_t vram_before = hw_param(check_fd, DRM_VNPU_PARAM_VRAM_USED);
	int64_t t0 = hw_now_ns();
	struct hw_ctx ctx;
	struct hw_bo buf;
	struct vnpu_cmd c;

	allow_inject_off();
	memset(&f, 0, sizeof(f));
	f.rng = seed;
	f.fd = hw_open();
	f.scratch = mmap(NULL, SCRATCH_SIZE + 2 * HW_PAGE_SIZE,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	ck_assert(f.scratch != MAP_FAILED);
	f.ro = f.scratch + SCRATCH_SIZE;
	f.none = f.ro + HW_PAGE_SIZE;
	ck_assert_int_eq(mprotect(f.ro, HW_PAGE_SIZE, PROT_READ), 0);
	ck_assert_int_eq(mprotect(f.none, HW_PAGE_SIZE, PROT_NONE), 0);
	for (i = 0; i < FD_POOL; i++)
		f.fds[i] = -1;
	printf("hw_fuzz: seed %#llx, %ld calls (HW_FUZZ_SEED, HW_FUZZ_CALLS)\n",
	       (unsigned long long)seed, calls);
	fflush(stdout);
	populate(&f);
	for (n = 0; n < calls; n++) {
		one_call(&f);
		if (n % 2000 == 1999) {
			cleanup(&f);
			f.max_handle = 0;
			f.max_syncobj = 0;
			populate(&f);
		}
	}
	cleanup(&f);
	for (i = 0; i < FD_POOL; i++)
		if (f.fds[i] >= 0)
			close(f.fds[i]);
	printf("hw_fuzz: %ld calls in %.1f s: %ld succeeded; errors:", calls,
	       (double)(hw_now_ns() - t0) / 1e9, f.ok);
	for (i = 1; i < 256; i++)
		if (f.errs[i])
			printf(" %s %ld", strerrorname_np((int)i), f.errs[i]);
	printf("\nhw_fuzz: ms per kind of call:");
	for (i = 0; i < 22; i++)
		printf(" %ld:%lld", i, (long long)(f.op_ns[i] / 1000000));
	printf("\n");
	/* Only the errors docs/uapi.md and the DRM core document. */
	for (i = 1; i < 256; i++) {
		switch (i) {
		case EINVAL: case ENOENT: case EFAULT: case ENOMEM: case ENOSPC:
		case EBUSY: case ECANCELED: case ETIMEDOUT: case EPERM:
		case EBADF: case EOPNOTSUPP: case ENOTTY: case EACCES:
		case EEXIST: case E2BIG: case EOVERFLOW: case ESRCH:
		case ETIME: /* syncobj waits that time out */
			break;
		default:
			if (f.errs[i]) {
				fprintf(stderr, "unexpected errno %s: %ld\n",
					strerrorname_np((int)i), f.errs[i]);
				errs++;
			}
		}
	}
	ck_assert_msg(errs == 0, "ioctls answered undocumented errnos");
	ck_assert_msg(f.ok > calls / 20, "hardly any call succeeded (%ld)",
		      f.ok);
	close(f.fd);
	/* BOs leave with their last job, freed just after the close. */
	for (i = 0; i < 100 && hw_param(check_fd, DRM_VNPU_PARAM_VRAM_USED) !=
				       vram_before;
	     i++)
		usleep(20 * 1000);
	ck_assert_uint_eq(hw_param(check_fd, DRM_VNPU_PARAM_VRAM_USED),
			  vram_before);
	close(check_fd);

	/* The device still runs a checked job. */
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 64 * 1024, DRM_VNPU_BO_VRAM, &buf);
	c = vnpu_fill_cmd(buf.va, buf.size, 0xf022f022, 4);
	ck_assert_int_eq(hw_run(&ctx, &c, 1, &buf.handle, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(buf.map, buf.size, 0xf022f022),
			  SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

/* Bad user pointers give -EFAULT, and nothing else happens. */
START_TEST(test_bad_pointers_efault)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	struct drm_vnpu_submit sub;
	struct drm_syncobj_wait sw;
	struct drm_syncobj_array sa;
	uint8_t *ro = mmap(NULL, HW_PAGE_SIZE, PROT_READ,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const uint64_t bad[] = { 1, 0xffff888000000000ull, ~0ull - 3 };
	struct vnpu_cmd c = vnpu_nop_cmd();
	uint32_t s, i;

	ck_assert(ro != MAP_FAILED);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &buf);
	memcpy(ctx.cmd.map, &c, sizeof(c));
	ck_assert_int_eq(hw_syncobj_create(ctx.fd, 0, &s), 0);
	for (i = 0; i < 3; i++) {
		memset(&sub, 0, sizeof(sub));
		sub.queue_id = ctx.queue;
		sub.cmd_bo = ctx.cmd.handle;
		sub.cmd_count = 1;
		sub.bo_handles = bad[i];
		sub.bo_count = 1;
		ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_VNPU_SUBMIT, &sub),
				 -EFAULT);
		ck_assert_uint_eq(sub.seqno, 0);
		sub.bo_handles = (uintptr_t)&buf.handle;
		sub.in_syncobjs = bad[i];
		sub.in_syncobj_count = 1;
		ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_VNPU_SUBMIT, &sub),
				 -EFAULT);
		memset(&sw, 0, sizeof(sw));
		sw.handles = bad[i];
		sw.count_handles = 1;
		ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_SYNCOBJ_WAIT, &sw),
				 -EFAULT);
		memset(&sa, 0, sizeof(sa));
		sa.handles = bad[i];
		sa.count_handles = 1;
		ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_SYNCOBJ_SIGNAL, &sa),
				 -EFAULT);
		/* The ioctl's own struct at a bad address. */
		ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_VNPU_GET_PARAM,
					  (void *)(uintptr_t)bad[i]),
				 -EFAULT);
	}
	/* An output struct in a read-only page: copy back fails. */
	ck_assert_int_eq(hw_ioctl(ctx.fd, DRM_IOCTL_VNPU_GET_PARAM, ro),
			 -EFAULT);
	/* No job ran from those calls. */
	{
		uint64_t done = 1;

		ck_assert_int_eq(hw_get_param(ctx.fd,
					      DRM_VNPU_PARAM_QUEUE_DONE_SEQNO,
					      ctx.queue, &done),
				 0);
		ck_assert_uint_eq(done, 0);
	}
	c = vnpu_fill_cmd(buf.va, buf.size, 0x1f1f1f1f, 4);
	ck_assert_int_eq(hw_run(&ctx, &c, 1, &buf.handle, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(buf.map, buf.size, 0x1f1f1f1f),
			  SIZE_MAX);
	hw_ctx_close(&ctx);
	munmap(ro, HW_PAGE_SIZE);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_fuzz");
	TCase *tc = tcase_create("fuzz");
	const char *env = getenv("HW_FUZZ_SEED");

	if (env)
		seed = strtoull(env, NULL, 0);
	env = getenv("HW_FUZZ_CALLS");
	if (env)
		calls = strtol(env, NULL, 0);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_bad_pointers_efault);
	tcase_add_test(tc, test_fuzz_ioctls);
	hw_suite_add(s, tc);
	return hw_main(argc, argv, s, 0);
}
