// SPDX-License-Identifier: MIT
/*
 * hw_mmu: category 9 of the in-VM hardware suite. Device MMU faults and
 * isolation between contexts and processes: an access outside a context's
 * mappings (unmapped VA, guard page, another context's VA, a write to a
 * read-only BO) faults that context only, with the fault's VA and reason
 * reported; another process's context keeps running meanwhile; another
 * file's mmap offsets are refused; VRAM and system memory given to a new BO
 * never hold a previous owner's data.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hw_util.h"
#include "vnpu/hw_mmu.h"

#define FAULT_REASON(status) (((status) >> 8) & 0xff)
#define FAULT_WRITE(status) (((status) >> 1) & 1)

/* Runs cmd in ctx and expects an MMU fault at va. */
static void expect_fault(struct hw_ctx *ctx, struct vnpu_cmd cmd,
			 uint32_t handle, uint64_t va, uint32_t reason,
			 uint32_t write)
{
	struct drm_vnpu_bo_wait w;
	uint64_t status;

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(hw_run(ctx, &cmd, 1, &handle, 1, &w), -EFAULT);
	ck_assert_uint_eq(w.job_status, VNPU_STATUS_MMU_FAULT);
	ck_assert_uint_eq(w.job_info, va);
	ck_assert(hw_param(ctx->fd, DRM_VNPU_PARAM_CONTEXT_STATE) &
		  DRM_VNPU_CONTEXT_FAULTED);
	ck_assert_uint_eq(hw_param(ctx->fd, DRM_VNPU_PARAM_FAULT_COUNT), 1);
	ck_assert_uint_eq(hw_param(ctx->fd, DRM_VNPU_PARAM_FAULT_VA), va);
	status = hw_param(ctx->fd, DRM_VNPU_PARAM_FAULT_STATUS);
	ck_assert_uint_eq(FAULT_REASON(status), reason);
	ck_assert_uint_eq(FAULT_WRITE(status), write);
}

/* A child process keeps submitting checked FILLs in its own context while
 * the parent's context faults. Exit status 0 when every job was right. */
static int innocent_child(int go_pipe)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	char byte;
	int i;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 64 * 1024, DRM_VNPU_BO_VRAM, &buf);
	if (read(go_pipe, &byte, 1) != 1)
		return 2;
	for (i = 0; i < 40; i++) {
		uint32_t pattern = 0x01010101u * (uint32_t)(i + 1);
		struct vnpu_cmd c = vnpu_fill_cmd(buf.va, buf.size, pattern, 4);

		if (hw_run(&ctx, &c, 1, &buf.handle, 1, NULL) ||
		    hw_check_u32(buf.map, buf.size, pattern) != SIZE_MAX)
			return 3;
	}
	if (hw_param(ctx.fd, DRM_VNPU_PARAM_CONTEXT_STATE) ||
	    hw_param(ctx.fd, DRM_VNPU_PARAM_FAULT_COUNT))
		return 4;
	hw_ctx_close(&ctx);
	return 0;
}

START_TEST(test_fault_only_faulting_process)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	int go[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(go[1]);
		_exit(innocent_child(go[0]));
	}
	close(go[0]);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &buf);
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	expect_fault(&ctx, vnpu_fill_cmd(0x2000, 4096, 1, 4), buf.handle,
		     0x2000, VNPU_FAULT_NOT_MAPPED, 1);
	/* Sticky: the next job fails without running. */
	{
		struct vnpu_cmd c = vnpu_fill_cmd(buf.va, buf.size, 5, 4);
		struct drm_vnpu_bo_wait w;

		memset(buf.map, 0, buf.size);
		ck_assert_int_eq(hw_run(&ctx, &c, 1, &buf.handle, 1, &w),
				 -EFAULT);
		ck_assert_uint_eq(w.job_status, VNPU_STATUS_CONTEXT_FAULTED);
		ck_assert_uint_eq(hw_check_u32(buf.map, buf.size, 0),
				  SIZE_MAX);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the other process's jobs failed (status %#x)", status);
	close(go[1]);
	hw_ctx_close(&ctx);
}
END_TEST

/* The guard page after a BO: a copy one byte too long faults at its end. */
START_TEST(test_guard_page)
{
	struct hw_ctx ctx;
	struct hw_bo a, b;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 2 * HW_PAGE_SIZE, 0, &a);
	hw_bo_new(ctx.fd, 4 * HW_PAGE_SIZE, 0, &b);
	ck_assert_uint_ne(a.va + a.size, b.va);
	expect_fault(&ctx, vnpu_copy_cmd(a.va, b.va, a.size + 1), a.handle,
		     a.va + a.size, VNPU_FAULT_NOT_MAPPED, 0);
	hw_ctx_close(&ctx);
}
END_TEST

/* DEVICE_READ_ONLY: the device reads it, a write faults (PERMISSION, write)
 * and leaves the contents alone. */
START_TEST(test_read_only_bo)
{
	struct hw_ctx ctx;
	struct hw_bo ro, rw;
	struct vnpu_cmd c;
	uint32_t bos[2];

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, DRM_VNPU_BO_DEVICE_READ_ONLY, &ro);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &rw);
	hw_pattern_fill(ro.map, ro.size, 77);
	c = vnpu_copy_cmd(ro.va, rw.va, ro.size);
	bos[0] = rw.handle;
	bos[1] = ro.handle;
	ck_assert_int_eq(hw_run(&ctx, &c, 1, bos, 2, NULL), 0);
	ck_assert_uint_eq(hw_pattern_check(rw.map, rw.size, 77), SIZE_MAX);
	expect_fault(&ctx, vnpu_fill_cmd(ro.va, ro.size, 0, 4), ro.handle,
		     ro.va, VNPU_FAULT_PERMISSION, 1);
	ck_assert_uint_eq(hw_pattern_check(ro.map, ro.size, 77), SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

/*
 * Context A maps more BOs than context B: a VA that is A's BO but not
 * mapped in B faults in B, and A's data is neither read nor changed.
 */
START_TEST(test_other_context_va)
{
	struct hw_ctx a, b, c;
	struct hw_bo abo[4], bbo, cbo;
	int i;

	hw_ctx_open(&a);
	hw_ctx_open(&b);
	for (i = 0; i < 4; i++) {
		hw_bo_new(a.fd, 64 * 1024, 0, &abo[i]);
		hw_pattern_fill(abo[i].map, abo[i].size, 100 + i);
	}
	hw_bo_new(b.fd, 64 * 1024, 0, &bbo);
	memset(bbo.map, 0, bbo.size);
	expect_fault(&b, vnpu_copy_cmd(abo[3].va, bbo.va, 4096), bbo.handle,
		     abo[3].va, VNPU_FAULT_NOT_MAPPED, 0);
	ck_assert_uint_eq(hw_check_u32(bbo.map, bbo.size, 0), SIZE_MAX);
	/* A write, from a third context (b is faulted now, for good). */
	hw_ctx_open(&c);
	hw_bo_new(c.fd, 64 * 1024, 0, &cbo);
	expect_fault(&c, vnpu_fill_cmd(abo[3].va, 4096, 0, 4), cbo.handle,
		     abo[3].va, VNPU_FAULT_NOT_MAPPED, 1);
	hw_ctx_close(&c);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(hw_pattern_check(abo[i].map, abo[i].size,
						   100 + i),
				  SIZE_MAX);
	ck_assert_uint_eq(hw_param(a.fd, DRM_VNPU_PARAM_CONTEXT_STATE), 0);
	hw_ctx_close(&b);
	hw_ctx_close(&a);
}
END_TEST

/* mmap offsets belong to the file that holds the handle. */
START_TEST(test_mmap_offset_per_file)
{
	int a = hw_open(), b = hw_open();
	struct hw_bo bo;
	void *p;

	hw_bo_new(a, HW_PAGE_SIZE, 0, &bo);
	p = mmap(NULL, HW_PAGE_SIZE, PROT_READ, MAP_SHARED, b,
		 (off_t)bo.mmap_offset);
	ck_assert_msg(p == MAP_FAILED, "another file's BO was mapped");
	ck_assert_int_eq(errno, EACCES);
	close(b);
	hw_bo_free(a, &bo);
	close(a);
}
END_TEST

#define SCRUB_SIZE (8u << 20)

/* A child fills SCRUB_SIZE of VRAM (and system memory) with a pattern
 * through the device, then frees it and exits. */
static int dirty_child(uint32_t flags)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	struct vnpu_cmd c;

	hw_ctx_open(&ctx);
	if (hw_bo_create(ctx.fd, SCRUB_SIZE, flags, &bo))
		return 2;
	c = vnpu_fill_cmd(bo.va, bo.size, 0xdeadbeef, 4);
	if (hw_run(&ctx, &c, 1, &bo.handle, 1, NULL))
		return 3;
	if (((volatile uint32_t *)bo.map)[SCRUB_SIZE / 8] != 0xdeadbeef)
		return 4;
	hw_bo_free(ctx.fd, &bo);
	hw_ctx_close(&ctx);
	return 0;
}

static void check_scrubbed(uint32_t flags)
{
	struct hw_ctx ctx;
	struct hw_bo bo, sys;
	struct vnpu_cmd c;
	uint32_t bos[2];
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(dirty_child(flags));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the dirtying process failed (%#x)", status);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, SCRUB_SIZE, flags, &bo);
	hw_bo_new(ctx.fd, SCRUB_SIZE, 0, &sys);
	memset(sys.map, 0xa5, sys.size);
	/* Read through the device (VRAM reads over the BAR are slow). */
	c = vnpu_copy_cmd(bo.va, sys.va, bo.size);
	bos[0] = sys.handle;
	bos[1] = bo.handle;
	ck_assert_int_eq(hw_run(&ctx, &c, 1, bos, 2, NULL), 0);
	{
		size_t at = hw_check_u32(sys.map, sys.size, 0);

		ck_assert_msg(at == SIZE_MAX,
			      "a new BO holds old data at %zu: %#x", at,
			      ((uint32_t *)sys.map)[at / 4]);
	}
	ck_assert_uint_eq(((volatile uint32_t *)bo.map)[0], 0);
	hw_ctx_close(&ctx);
}

START_TEST(test_vram_scrubbed)
{
	check_scrubbed(DRM_VNPU_BO_VRAM);
}
END_TEST

START_TEST(test_system_memory_scrubbed)
{
	check_scrubbed(0);
}
END_TEST

static int va_range(int fd, uint64_t start, uint64_t end)
{
	struct drm_vnpu_va_range r = {.start = start, .end = end};

	return hw_ioctl(fd, DRM_IOCTL_VNPU_VA_RANGE, &r);
}

/* VA_RANGE: every bound checked; BOs, imports included, land inside the
 * window; a window that would leave a BO outside is refused. */
START_TEST(test_va_range)
{
	const uint64_t lo = 64ull << 30, hi = lo + (64ull << 20);
	const uint64_t limit = VNPU_VA_LIMIT;
	uint64_t start = 0, size = 0;
	struct hw_bo a, b, c;
	uint32_t imported;
	int fd = hw_open(), fd2 = hw_open(), dmabuf;

	start = hw_param(fd, DRM_VNPU_PARAM_VA_START);
	size = hw_param(fd, DRM_VNPU_PARAM_VA_SIZE);
	ck_assert_uint_eq(start, 1u << 20);
	ck_assert_uint_eq(start + size, limit);
	/* the bounds */
	ck_assert_int_eq(va_range(fd, lo + 1, hi), -EINVAL);
	ck_assert_int_eq(va_range(fd, lo, hi + 8), -EINVAL);
	ck_assert_int_eq(va_range(fd, hi, lo), -EINVAL);
	ck_assert_int_eq(va_range(fd, lo, lo), -EINVAL);
	ck_assert_int_eq(va_range(fd, lo, lo + HW_PAGE_SIZE), -EINVAL);
	ck_assert_int_eq(va_range(fd, 0, hi), -EINVAL);
	ck_assert_int_eq(va_range(fd, lo, limit + HW_PAGE_SIZE), -EINVAL);
	ck_assert_int_eq(va_range(fd, UINT64_MAX - 4095, UINT64_MAX - 4095),
			 -EINVAL);
	ck_assert_int_eq(va_range(fd, lo, hi), 0);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_VA_START), lo);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_VA_SIZE), hi - lo);
	/* BOs of both kinds inside, with their guard page */
	hw_bo_new(fd, 1u << 20, 0, &a);
	hw_bo_new(fd, 8192, DRM_VNPU_BO_VRAM, &b);
	ck_assert(a.va >= lo && a.va + a.size + HW_PAGE_SIZE <= hi);
	ck_assert(b.va >= lo && b.va + b.size + HW_PAGE_SIZE <= hi);
	/* an import from another file lands inside too */
	hw_bo_new(fd2, 4096, 0, &c);
	ck_assert_int_eq(hw_prime_export(fd2, c.handle, &dmabuf), 0);
	ck_assert_int_eq(hw_prime_import(fd, dmabuf, &imported), 0);
	{
		struct drm_vnpu_bo_info info;

		ck_assert_int_eq(hw_bo_info(fd, imported, &info), 0);
		ck_assert(info.device_va >= lo && info.device_va < hi);
	}
	close(dmabuf);
	/* a window leaving BOs outside is refused; one holding them is not */
	ck_assert_int_eq(va_range(fd, hi, hi + (64ull << 20)), -EBUSY);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_VA_START), lo);
	ck_assert_int_eq(va_range(fd, 1u << 20, limit), 0);
	ck_assert_int_eq(va_range(fd, lo, hi), 0);
	/* the window full: ENOSPC, and nothing lands outside */
	{
		uint32_t h;
		uint64_t va;

		ck_assert_int_eq(hw_bo_create_raw(fd, 64ull << 20, 0, &h, &va),
				 -ENOSPC);
	}
	/* another file's window is its own */
	ck_assert_uint_eq(hw_param(fd2, DRM_VNPU_PARAM_VA_START), 1u << 20);
	ck_assert_int_eq(hw_gem_close(fd, imported), 0);
	hw_bo_free(fd, &a);
	hw_bo_free(fd, &b);
	hw_bo_free(fd2, &c);
	/* empty again: any window */
	ck_assert_int_eq(va_range(fd, hi, hi + (64ull << 20)), 0);
	close(fd);
	close(fd2);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_mmu");
	TCase *tc = tcase_create("mmu");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fault_only_faulting_process);
	tcase_add_test(tc, test_guard_page);
	tcase_add_test(tc, test_read_only_bo);
	tcase_add_test(tc, test_other_context_va);
	tcase_add_test(tc, test_mmap_offset_per_file);
	tcase_add_test(tc, test_vram_scrubbed);
	tcase_add_test(tc, test_system_memory_scrubbed);
	tcase_add_test(tc, test_va_range);
	hw_suite_add(s, tc);
	return hw_main(argc, argv, s, 0);
}
