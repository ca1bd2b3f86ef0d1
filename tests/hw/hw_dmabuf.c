// SPDX-License-Identifier: MIT
/*
 * hw suite, category 5: dma-buf (PRIME). Export and import within a file
 * (same handle back), between two files (each its own VA, the device of
 * one sees the other's writes), across fork, from vgem (a dumb buffer of
 * the guest's virtual GEM driver imported and used by the device), a
 * dma-buf that outlives the file that exported it, and a read-only dma-buf
 * imported by an unprivileged user: no writable CPU mapping, device writes
 * fault.
 */
#include "hw_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define SZ (64 * 1024)

/* The device fills or copies into a BO through a context's own VA. */
static void device_fill(struct hw_ctx *ctx, uint32_t handle, uint64_t va,
			uint64_t size, uint32_t value)
{
	struct vnpu_cmd c = vnpu_fill_cmd(va, size, value, 4);

	ck_assert_int_eq(hw_run(ctx, &c, 1, &handle, 1, NULL), 0);
}

START_TEST(test_same_file_roundtrip)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	uint32_t again;
	int dmabuf, dmabuf2;

	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, SZ, 0, &bo);
	ck_assert_int_eq(hw_prime_export(ctx.fd, bo.handle, &dmabuf), 0);
	ck_assert_int_eq(hw_prime_import(ctx.fd, dmabuf, &again), 0);
	ck_assert_uint_eq(again, bo.handle);
	/* Exporting again gives a dma-buf of the same BO. */
	ck_assert_int_eq(hw_prime_export(ctx.fd, bo.handle, &dmabuf2), 0);
	ck_assert_int_eq(hw_prime_import(ctx.fd, dmabuf2, &again), 0);
	ck_assert_uint_eq(again, bo.handle);
	close(dmabuf2);
	close(dmabuf);
	device_fill(&ctx, bo.handle, bo.va, SZ, 0x01020304);
	ck_assert_uint_eq(hw_check_u32(bo.map, SZ, 0x01020304), SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_two_files)
{
	struct hw_ctx a, b;
	struct hw_bo bo, imp, out;
	struct drm_vnpu_bo_info info;
	struct vnpu_cmd c;
	uint32_t handle, list[2];
	int dmabuf;

	hw_ctx_open(&a);
	hw_ctx_open(&b);
	hw_bo_new(a.fd, SZ, 0, &bo);
	hw_pattern_fill(bo.map, SZ, 31);
	ck_assert_int_eq(hw_prime_export(a.fd, bo.handle, &dmabuf), 0);
	ck_assert_int_eq(hw_prime_import(b.fd, dmabuf, &handle), 0);
	ck_assert_int_eq(hw_bo_info(b.fd, handle, &info), 0);
	/* A dma-buf of the same device is the exporter's own GEM object
	 * (the DRM core's self-import): no import attachment, so BO_INFO
	 * reports its creation flags without DRM_VNPU_BO_IMPORTED. */
	ck_assert_uint_eq(info.flags, 0);
	ck_assert_uint_eq(info.size, SZ);
	ck_assert_int_eq(hw_bo_from_handle(b.fd, handle, &imp), 0);
	/* B's CPU mapping sees A's data; B's device reads it. */
	ck_assert_uint_eq(hw_pattern_check(imp.map, SZ, 31), SIZE_MAX);
	hw_bo_new(b.fd, SZ, 0, &out);
	c = vnpu_copy_cmd(imp.va, out.va, SZ);
	list[0] = out.handle;
	list[1] = imp.handle;
	ck_assert_int_eq(hw_run(&b, &c, 1, list, 2, NULL), 0);
	ck_assert_uint_eq(hw_pattern_check(out.map, SZ, 31), SIZE_MAX);
	/* B's device writes, A's CPU and A's device see it. */
	device_fill(&b, imp.handle, imp.va, SZ, 0xfeedface);
	ck_assert_uint_eq(hw_check_u32(bo.map, SZ, 0xfeedface), SIZE_MAX);
	/* B closes its handle: A's BO is still fine. */
	munmap(imp.map, imp.size);
	ck_assert_int_eq(hw_gem_close(b.fd, handle), 0);
	device_fill(&a, bo.handle, bo.va, SZ, 0x0badcafe);
	ck_assert_uint_eq(hw_check_u32(bo.map, SZ, 0x0badcafe), SIZE_MAX);
	close(dmabuf);
	hw_ctx_close(&b);
	hw_ctx_close(&a);
}
END_TEST

/* Child of test_across_fork: own file, imports the inherited dma-buf, the
 * device writes the value; no Check calls here. */
static int fork_child(int dmabuf, uint32_t value)
{
	struct hw_ctx ctx;
	struct hw_bo imp;
	struct vnpu_cmd c;
	uint32_t handle;
	int fd = hw_open_raw();

	if (fd < 0)
		return 10;
	ctx.fd = fd;
	if (hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &ctx.queue, NULL) ||
	    hw_bo_create(fd, 4096, 0, &ctx.cmd))
		return 11;
	if (hw_prime_import(fd, dmabuf, &handle))
		return 12;
	if (hw_bo_from_handle(fd, handle, &imp))
		return 13;
	c = vnpu_fill_cmd(imp.va, SZ, value, 4);
	if (hw_submit(fd, ctx.queue, &ctx.cmd, 0, &c, 1, &handle, 1, 0, NULL))
		return 14;
	if (hw_bo_wait(fd, handle, HW_WAIT_NS, NULL))
		return 15;
	if (hw_check_u32(imp.map, SZ, value) != SIZE_MAX)
		return 16;
	close(fd);
	return 0;
}

START_TEST(test_across_fork)
{
	struct hw_bo bo;
	int fd = hw_open(), dmabuf, status;
	pid_t pid;

	hw_bo_new(fd, SZ, 0, &bo);
	ck_assert_int_eq(hw_prime_export(fd, bo.handle, &dmabuf), 0);
	/* DRM_CLOEXEC does not matter across fork (no exec). */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fork_child(dmabuf, 0x600dc0de));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0, "child step %d",
		      WEXITSTATUS(status));
	ck_assert_uint_eq(hw_check_u32(bo.map, SZ, 0x600dc0de), SIZE_MAX);
	close(dmabuf);
	close(fd);
}
END_TEST

START_TEST(test_exporter_closed_first)
{
	struct hw_ctx ctx;
	struct hw_bo bo, out;
	struct vnpu_cmd c;
	uint32_t handle, list[2];
	void *p;
	int fd = hw_open(), dmabuf;

	hw_bo_new(fd, SZ, 0, &bo);
	hw_pattern_fill(bo.map, SZ, 77);
	ck_assert_int_eq(hw_prime_export(fd, bo.handle, &dmabuf), 0);
	munmap(bo.map, bo.size);
	close(fd);
	/* The dma-buf keeps the pages: mmap it directly. */
	p = mmap(NULL, SZ, PROT_READ, MAP_SHARED, dmabuf, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_uint_eq(hw_pattern_check(p, SZ, 77), SIZE_MAX);
	munmap(p, SZ);
	/* A new file imports it and the device reads it. */
	hw_ctx_open(&ctx);
	ck_assert_int_eq(hw_prime_import(ctx.fd, dmabuf, &handle), 0);
	close(dmabuf);
	ck_assert_int_eq(hw_bo_from_handle(ctx.fd, handle, &bo), 0);
	hw_bo_new(ctx.fd, SZ, 0, &out);
	c = vnpu_copy_cmd(bo.va, out.va, SZ);
	list[0] = out.handle;
	list[1] = handle;
	ck_assert_int_eq(hw_run(&ctx, &c, 1, list, 2, NULL), 0);
	ck_assert_uint_eq(hw_pattern_check(out.map, SZ, 77), SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

START_TEST(test_import_keeps_bo_after_exporter_handle_close)
{
	struct hw_ctx ctx;
	struct hw_bo bo;
	uint32_t handle;
	int exporter = hw_open(), dmabuf;

	hw_bo_new(exporter, SZ, 0, &bo);
	ck_assert_int_eq(hw_prime_export(exporter, bo.handle, &dmabuf), 0);
	hw_ctx_open(&ctx);
	ck_assert_int_eq(hw_prime_import(ctx.fd, dmabuf, &handle), 0);
	close(dmabuf);
	/* The exporter drops everything; the importer's handle still works. */
	hw_bo_free(exporter, &bo);
	close(exporter);
	ck_assert_int_eq(hw_bo_from_handle(ctx.fd, handle, &bo), 0);
	device_fill(&ctx, handle, bo.va, SZ, 0x31415926);
	ck_assert_uint_eq(hw_check_u32(bo.map, SZ, 0x31415926), SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

/* PRIME export without DRM_RDWR: a dma-buf opened read-only. */
static int prime_export_ro(int fd, uint32_t handle, int *dmabuf_fd)
{
	struct drm_prime_handle ph = {
		.handle = handle, .flags = DRM_CLOEXEC, .fd = -1,
	};
	int ret = hw_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph);

	if (!ret)
		*dmabuf_fd = ph.fd;
	return ret;
}

/* Runs fn(arg) in a child as HW_USER_UID: its exit status, or -1. */
static int run_as_user(int (*fn)(void *arg), void *arg)
{
	gid_t groups[1] = { HW_ACCEL_GID };
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(1, groups) || setgid(HW_USER_UID) ||
		    setuid(HW_USER_UID))
			_exit(100);
		_exit(fn(arg));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct ro_import {
	int ro_dmabuf, rw_dmabuf;
};

/* The job faulted on a write: its errno and device status. */
static bool faulted(int ret, const struct drm_vnpu_bo_wait *w)
{
	return ret == -EFAULT && w->job_status == VNPU_STATUS_MMU_FAULT;
}

/* The vgem card node (the guest has no other DRM card driver). */
static int open_vgem(void)
{
	char path[300], name[32];
	struct dirent *e;
	DIR *d = opendir("/dev/dri");
	int found = -1;

	if (!d)
		return -ENODEV;
	while (found < 0 && (e = readdir(d))) {
		int fd;

		if (strncmp(e->d_name, "card", 4))
			continue;
		snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		hw_driver_name(fd, name, sizeof(name));
		if (!strcmp(name, "vgem"))
			found = fd;
		else
			close(fd);
	}
	closedir(d);
	return found;
}

START_TEST(test_import_from_vgem)
{
	struct drm_mode_create_dumb dumb = {
		.width = 256, .height = SZ / 1024, .bpp = 32,
	};
	struct drm_mode_map_dumb map = { 0 };
	struct drm_vnpu_bo_info info;
	struct hw_ctx ctx;
	struct hw_bo out;
	struct vnpu_cmd c;
	uint32_t handle, list[2];
	uint64_t va;
	int vgem = open_vgem(), dmabuf;
	void *p;

	ck_assert_msg(vgem >= 0, "no vgem card in /dev/dri (modprobe vgem)");
	ck_assert_int_eq(hw_ioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &dumb), 0);
	ck_assert_uint_ge(dumb.size, SZ);
	map.handle = dumb.handle;
	ck_assert_int_eq(hw_ioctl(vgem, DRM_IOCTL_MODE_MAP_DUMB, &map), 0);
	p = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_SHARED, vgem,
		 (off_t)map.offset);
	ck_assert_ptr_ne(p, MAP_FAILED);
	hw_pattern_fill(p, SZ, 4242);
	ck_assert_int_eq(hw_prime_export(vgem, dumb.handle, &dmabuf), 0);

	hw_ctx_open(&ctx);
	ck_assert_int_eq(hw_prime_import(ctx.fd, dmabuf, &handle), 0);
	ck_assert_int_eq(hw_bo_info(ctx.fd, handle, &info), 0);
	ck_assert_uint_eq(info.flags & DRM_VNPU_BO_IMPORTED,
			  DRM_VNPU_BO_IMPORTED);
	ck_assert_uint_ge(info.size, SZ);
	va = info.device_va;
	/* vgem's CPU writes reach the device ... */
	hw_bo_new(ctx.fd, SZ, 0, &out);
	c = vnpu_copy_cmd(va, out.va, SZ);
	list[0] = out.handle;
	list[1] = handle;
	ck_assert_int_eq(hw_run(&ctx, &c, 1, list, 2, NULL), 0);
	ck_assert_uint_eq(hw_pattern_check(out.map, SZ, 4242), SIZE_MAX);
	/* ... and the device's writes reach vgem's mapping. */
	device_fill(&ctx, handle, va, SZ, 0x76676d21);
	ck_assert_uint_eq(hw_check_u32(p, SZ, 0x76676d21), SIZE_MAX);
	/* Importing it again gives the same handle. */
	{
		uint32_t again;

		ck_assert_int_eq(hw_prime_import(ctx.fd, dmabuf, &again), 0);
		ck_assert_uint_eq(again, handle);
	}
	hw_ctx_close(&ctx);
	close(dmabuf);
	munmap(p, SZ);
	close(vgem);
}
END_TEST

/* Another driver's read-only dma-buf imports read-only too. */
START_TEST(test_import_read_only_from_vgem)
{
	struct drm_mode_create_dumb dumb = {
		.width = 256, .height = SZ / 1024, .bpp = 32,
	};
	struct drm_mode_map_dumb map = { 0 };
	struct drm_vnpu_bo_info info;
	struct drm_vnpu_bo_wait w;
	struct hw_ctx ctx;
	struct vnpu_cmd c;
	uint32_t handle;
	int vgem = open_vgem(), dmabuf;
	void *p, *q;

	ck_assert_msg(vgem >= 0, "no vgem card in /dev/dri (modprobe vgem)");
	ck_assert_int_eq(hw_ioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &dumb), 0);
	map.handle = dumb.handle;
	ck_assert_int_eq(hw_ioctl(vgem, DRM_IOCTL_MODE_MAP_DUMB, &map), 0);
	p = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_SHARED, vgem,
		 (off_t)map.offset);
	ck_assert_ptr_ne(p, MAP_FAILED);
	hw_pattern_fill(p, SZ, 4343);
	ck_assert_int_eq(prime_export_ro(vgem, dumb.handle, &dmabuf), 0);

	hw_ctx_open(&ctx);
	ck_assert_int_eq(hw_prime_import(ctx.fd, dmabuf, &handle), 0);
	ck_assert_int_eq(hw_bo_info(ctx.fd, handle, &info), 0);
	ck_assert_uint_eq(info.flags, DRM_VNPU_BO_IMPORTED |
					      DRM_VNPU_BO_DEVICE_READ_ONLY);
	q = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_SHARED, ctx.fd,
		 (off_t)info.mmap_offset);
	ck_assert(q == MAP_FAILED && (errno == EACCES || errno == EPERM));
	c = vnpu_fill_cmd(info.device_va, SZ, 0xbad0bad0, 4);
	memset(&w, 0, sizeof(w));
	ck_assert(faulted(hw_run(&ctx, &c, 1, &handle, 1, &w), &w));
	ck_assert_uint_eq(hw_pattern_check(p, SZ, 4343), SIZE_MAX);
	hw_ctx_close(&ctx);
	close(dmabuf);
	munmap(p, SZ);
	close(vgem);
}
END_TEST

START_TEST(test_vgem_exporter_gone)
{
	struct drm_mode_create_dumb dumb = { .width = 1024, .height = 16,
					     .bpp = 32 };
	struct hw_ctx ctx;
	struct hw_bo imp;
	uint32_t handle;
	int vgem = open_vgem(), dmabuf;

	ck_assert_msg(vgem >= 0, "no vgem card in /dev/dri (modprobe vgem)");
	ck_assert_int_eq(hw_ioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &dumb), 0);
	ck_assert_int_eq(hw_prime_export(vgem, dumb.handle, &dmabuf), 0);
	hw_ctx_open(&ctx);
	ck_assert_int_eq(hw_prime_import(ctx.fd, dmabuf, &handle), 0);
	close(dmabuf);
	close(vgem);
	/* vgem's file is gone; the imported BO is still the device's. */
	ck_assert_int_eq(hw_bo_from_handle(ctx.fd, handle, &imp), 0);
	device_fill(&ctx, handle, imp.va, SZ, 0x12121212);
	ck_assert_uint_eq(hw_check_u32(imp.map, SZ, 0x12121212), SIZE_MAX);
	hw_ctx_close(&ctx);
}
END_TEST

/*
 * Child of test_read_only_import (uid 1000, files of its own): the import
 * of the read-only dma-buf reads but cannot be written by the CPU or the
 * device; the read-write one can. No Check calls here: the step that went
 * wrong is the exit status.
 */
static int ro_import_child(void *arg)
{
	const struct ro_import *ri = arg;
	struct drm_vnpu_bo_info info;
	struct drm_vnpu_bo_wait w;
	struct hw_ctx ctx, ctx2;
	struct hw_bo out, rw;
	struct vnpu_cmd c;
	uint32_t handle, list[2];
	void *p;
	int fd = hw_open_raw(), fd2 = hw_open_raw();

	if (fd < 0 || fd2 < 0)
		return 10;
	ctx.fd = fd;
	ctx2.fd = fd2;
	if (hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &ctx.queue, NULL) ||
	    hw_bo_create(fd, 4096, 0, &ctx.cmd) ||
	    hw_queue_create(fd2, DRM_VNPU_HW_QUEUE_ANY, &ctx2.queue, NULL) ||
	    hw_bo_create(fd2, 4096, 0, &ctx2.cmd))
		return 11;
	if (hw_prime_import(fd, ri->ro_dmabuf, &handle) ||
	    hw_bo_info(fd, handle, &info))
		return 12;
	/* BO_INFO tells the import is read-only for the device. */
	if (!(info.flags & DRM_VNPU_BO_DEVICE_READ_ONLY))
		return 13;
	p = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)info.mmap_offset);
	if (p != MAP_FAILED || (errno != EACCES && errno != EPERM))
		return 14;
	p = mmap(NULL, SZ, PROT_READ, MAP_SHARED, fd,
		 (off_t)info.mmap_offset);
	if (p == MAP_FAILED)
		return 15;
	if (hw_pattern_check(p, SZ, 41) != SIZE_MAX)
		return 16;
	if (mprotect(p, SZ, PROT_READ | PROT_WRITE) == 0)
		return 17;
	/* The device reads it... */
	if (hw_bo_create(fd, SZ, 0, &out))
		return 18;
	c = vnpu_copy_cmd(info.device_va, out.va, SZ);
	list[0] = out.handle;
	list[1] = handle;
	if (hw_run(&ctx, &c, 1, list, 2, NULL) ||
	    hw_pattern_check(out.map, SZ, 41) != SIZE_MAX)
		return 19;
	/* ...but a FILL into it faults... */
	c = vnpu_fill_cmd(info.device_va, SZ, 0xbad0bad0, 4);
	memset(&w, 0, sizeof(w));
	if (!faulted(hw_run(&ctx, &c, 1, &handle, 1, &w), &w))
		return 20;
	/* ...and so does a DMA_COPY into it (another file: a fault is
	 * sticky to its context). */
	if (hw_prime_import(fd2, ri->ro_dmabuf, &handle) ||
	    hw_bo_info(fd2, handle, &info) || hw_bo_create(fd2, SZ, 0, &out))
		return 21;
	memset(out.map, 0x5c, SZ);
	c = vnpu_copy_cmd(out.va, info.device_va, SZ);
	list[0] = out.handle;
	list[1] = handle;
	memset(&w, 0, sizeof(w));
	if (!faulted(hw_run(&ctx2, &c, 1, list, 2, &w), &w))
		return 22;
	close(fd2);
	/* A read-write dma-buf still imports writable, for both. */
	fd2 = hw_open_raw();
	if (fd2 < 0)
		return 23;
	ctx2.fd = fd2;
	if (hw_queue_create(fd2, DRM_VNPU_HW_QUEUE_ANY, &ctx2.queue, NULL) ||
	    hw_bo_create(fd2, 4096, 0, &ctx2.cmd) ||
	    hw_prime_import(fd2, ri->rw_dmabuf, &handle) ||
	    hw_bo_from_handle(fd2, handle, &rw))
		return 24;
	if (rw.flags & DRM_VNPU_BO_DEVICE_READ_ONLY)
		return 25;
	((uint32_t *)rw.map)[0] = 0x0c0ffee0;
	c = vnpu_fill_cmd(rw.va + 4096, SZ - 4096, 0x600dc0de, 4);
	if (hw_run(&ctx2, &c, 1, &handle, 1, NULL))
		return 26;
	close(fd2);
	close(fd);
	return 0;
}

/*
 * A dma-buf exported without DRM_RDWR is a read-only file: an importer in
 * another user's file may read the BO, but gets no writable CPU mapping
 * and its device writes fault; the exporter's data stays as it was. A
 * read-write export of the same kind still imports writable.
 */
START_TEST(test_read_only_import)
{
	struct hw_ctx a;
	struct hw_bo bo, bo2;
	struct ro_import ri;
	void *p;
	int ret;

	hw_ctx_open(&a);
	hw_bo_new(a.fd, SZ, 0, &bo);
	hw_bo_new(a.fd, SZ, 0, &bo2);
	hw_pattern_fill(bo.map, SZ, 41);
	memset(bo2.map, 0, SZ);
	ck_assert_int_eq(prime_export_ro(a.fd, bo.handle, &ri.ro_dmabuf), 0);
	ck_assert_int_eq(hw_prime_export(a.fd, bo2.handle, &ri.rw_dmabuf), 0);
	/* The dma-buf itself is read-only (the dma-buf core's check). */
	p = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_SHARED, ri.ro_dmabuf,
		 0);
	ck_assert(p == MAP_FAILED);
	ret = run_as_user(ro_import_child, &ri);
	ck_assert_msg(ret == 0, "child step %d", ret);
	ck_assert_uint_eq(hw_pattern_check(bo.map, SZ, 41), SIZE_MAX);
	ck_assert_uint_eq(((uint32_t *)bo2.map)[0], 0x0c0ffee0);
	ck_assert_uint_eq(hw_check_u32((char *)bo2.map + 4096, SZ - 4096,
				       0x600dc0de),
			  SIZE_MAX);
	/* The exporter still writes its BO, by the CPU and the device. */
	device_fill(&a, bo.handle, bo.va, SZ, 0x0badcafe);
	ck_assert_uint_eq(hw_check_u32(bo.map, SZ, 0x0badcafe), SIZE_MAX);
	close(ri.ro_dmabuf);
	close(ri.rw_dmabuf);
	hw_ctx_close(&a);
}
END_TEST

static Suite *dmabuf_suite(void)
{
	Suite *s = suite_create("dmabuf");
	TCase *vnpu = tcase_create("vnpu");
	TCase *vgem = tcase_create("vgem");

	tcase_add_test(vnpu, test_same_file_roundtrip);
	tcase_add_test(vnpu, test_two_files);
	tcase_add_test(vnpu, test_across_fork);
	tcase_add_test(vnpu, test_exporter_closed_first);
	tcase_add_test(vnpu, test_import_keeps_bo_after_exporter_handle_close);
	tcase_add_test(vnpu, test_read_only_import);
	hw_suite_add(s, vnpu);
	tcase_add_test(vgem, test_import_from_vgem);
	tcase_add_test(vgem, test_vgem_exporter_gone);
	tcase_add_test(vgem, test_import_read_only_from_vgem);
	hw_suite_add(s, vgem);
	return s;
}

int main(int argc, char **argv)
{
	return hw_main(argc, argv, dmabuf_suite(), 0);
}
