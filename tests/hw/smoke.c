// SPDX-License-Identifier: MIT
/*
 * vnpu-smoke: driver smoke test, run inside the VM (not a host test).
 *
 * Opens /dev/accel/accel0 (or $VNPU_DEV) and checks, through raw ioctls:
 * GET_PARAM; BO_CREATE (VRAM and system) with its error cases; mmap;
 * SUBMIT of FILL, DMA_COPY and KERNEL_LAUNCH(fill) from a command-buffer
 * BO; BO_WAIT; the out-syncobj and the queue's timeline syncobj; an MMU
 * fault reported to the faulting context only; and, when the device is in
 * test mode and the test runs as root, a hang that resets the device while
 * an innocent context keeps working. Prints one line per check; exit 0 when
 * all pass, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "drm/vnpu_accel.h"
#include "vnpu/hw_cmd_build.h"
#include "vnpu/kernel_abi.h"

#define BO_SIZE (64 * 1024)

static int failures;

static void check(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: ", ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	if (!ok)
		failures++;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));
	return ret == -1 ? -errno : 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int open_dev(void)
{
	const char *path = getenv("VNPU_DEV");
	struct drm_version v;
	char name[32] = "";
	int fd = open(path ? path : "/dev/accel/accel0", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	memset(&v, 0, sizeof(v));
	v.name = name;
	v.name_len = sizeof(name) - 1;
	if (xioctl(fd, DRM_IOCTL_VERSION, &v) || strcmp(name, "vnpu")) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t param(int fd, uint32_t p, uint32_t index)
{
	struct drm_vnpu_get_param gp = { .param = p, .index = index };

	if (xioctl(fd, DRM_IOCTL_VNPU_GET_PARAM, &gp))
		return UINT64_MAX;
	return gp.value;
}

struct bo {
	uint32_t handle;
	uint64_t va;
	uint64_t size;
	void *map;
};

static int bo_new(int fd, uint64_t size, uint32_t flags, struct bo *bo)
{
	struct drm_vnpu_bo_create c = { .size = size, .flags = flags };
	struct drm_vnpu_bo_info info = { 0 };
	int ret = xioctl(fd, DRM_IOCTL_VNPU_BO_CREATE, &c);

	if (ret)
		return ret;
	info.handle = c.handle;
	ret = xioctl(fd, DRM_IOCTL_VNPU_BO_INFO, &info);
	if (ret)
		return ret;
	bo->handle = c.handle;
	bo->va = c.device_va;
	bo->size = info.size;
	bo->map = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)info.mmap_offset);
	if (bo->map == MAP_FAILED)
		return -errno;
	if (info.device_va != c.device_va)
		return -EINVAL;
	return 0;
}

static void bo_free(int fd, struct bo *bo)
{
	struct drm_gem_close gc = { .handle = bo->handle };

	munmap(bo->map, bo->size);
	xioctl(fd, DRM_IOCTL_GEM_CLOSE, &gc);
}

static int bo_wait(int fd, struct bo *bo, int64_t timeout_ns, int *job_error)
{
	struct drm_vnpu_bo_wait w = {
		.handle = bo->handle,
		.timeout_ns = now_ns() + timeout_ns,
	};
	int ret = xioctl(fd, DRM_IOCTL_VNPU_BO_WAIT, &w);

	if (!ret && job_error)
		*job_error = w.job_error;
	return ret;
}

static int queue_new(int fd, uint32_t *id, uint32_t *syncobj)
{
	struct drm_vnpu_queue_create q = { .hw_queue = DRM_VNPU_HW_QUEUE_ANY };
	int ret = xioctl(fd, DRM_IOCTL_VNPU_QUEUE_CREATE, &q);

	if (!ret) {
		*id = q.queue_id;
		if (syncobj)
			*syncobj = q.syncobj;
	}
	return ret;
}

/* Writes cmds into cmdbuf and submits them with the BOs in list. */
static int submit(int fd, uint32_t queue, struct bo *cmdbuf,
		  const struct vnpu_cmd *cmds, uint32_t n, const uint32_t *list,
		  uint32_t nlist, uint32_t out_syncobj, uint64_t *seqno)
{
	struct drm_vnpu_submit s = {
		.queue_id = queue,
		.cmd_bo = cmdbuf->handle,
		.cmd_count = n,
		.bo_handles = (uintptr_t)list,
		.bo_count = nlist,
		.out_syncobj = out_syncobj,
	};
	int ret;

	memcpy(cmdbuf->map, cmds, n * sizeof(*cmds));
	ret = xioctl(fd, DRM_IOCTL_VNPU_SUBMIT, &s);
	if (!ret && seqno)
		*seqno = s.seqno;
	return ret;
}

static int all_u32(const void *p, size_t bytes, uint32_t v)
{
	const uint32_t *w = p;

	for (size_t i = 0; i < bytes / 4; i++)
		if (w[i] != v)
			return 0;
	return 1;
}

static int syncobj_wait(int fd, uint32_t handle, uint64_t point,
			int timeline)
{
	uint64_t deadline = (uint64_t)now_ns() + 10000000000ull;

	if (timeline) {
		struct drm_syncobj_timeline_wait w = {
			.handles = (uintptr_t)&handle,
			.points = (uintptr_t)&point,
			.timeout_nsec = (int64_t)deadline,
			.count_handles = 1,
			.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
		};
		return xioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
	} else {
		struct drm_syncobj_wait w = {
			.handles = (uintptr_t)&handle,
			.timeout_nsec = (int64_t)deadline,
			.count_handles = 1,
		};
		return xioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w);
	}
}

/* ---- checks -------------------------------------------------------------- */

static void test_params(int fd)
{
	struct drm_vnpu_get_param gp = { .param = 999, .value = 42 };

	check(param(fd, DRM_VNPU_PARAM_DEVICE_ID, 0) == 0x1af410f7,
	      "DEVICE_ID 0x1af410f7");
	check(param(fd, DRM_VNPU_PARAM_FW_VERSION, 0) != 0, "FW_VERSION %#llx",
	      (unsigned long long)param(fd, DRM_VNPU_PARAM_FW_VERSION, 0));
	check(param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES, 0) >= 1,
	      "NUM_HW_QUEUES %llu",
	      (unsigned long long)param(fd, DRM_VNPU_PARAM_NUM_HW_QUEUES, 0));
	check(param(fd, DRM_VNPU_PARAM_VRAM_SIZE, 0) >= (1u << 20),
	      "VRAM_SIZE %llu",
	      (unsigned long long)param(fd, DRM_VNPU_PARAM_VRAM_SIZE, 0));
	check(xioctl(fd, DRM_IOCTL_VNPU_GET_PARAM, &gp) == -EINVAL &&
		      gp.value == 42,
	      "unknown param: EINVAL, value untouched");
	gp.param = DRM_VNPU_PARAM_VRAM_SIZE;
	gp.index = 1;
	check(xioctl(fd, DRM_IOCTL_VNPU_GET_PARAM, &gp) == -EINVAL,
	      "non-zero index: EINVAL");
}

static void test_bo_errors(int fd)
{
	struct drm_vnpu_bo_create c = { .size = 4096, .flags = 1u << 7,
					.handle = 77, .device_va = 88 };

	check(xioctl(fd, DRM_IOCTL_VNPU_BO_CREATE, &c) == -EINVAL &&
		      c.handle == 77 && c.device_va == 88,
	      "BO_CREATE unknown flag: EINVAL, outputs untouched");
	c.flags = 0;
	c.size = 0;
	check(xioctl(fd, DRM_IOCTL_VNPU_BO_CREATE, &c) == -EINVAL,
	      "BO_CREATE size 0: EINVAL");
	c.size = UINT64_MAX;
	check(xioctl(fd, DRM_IOCTL_VNPU_BO_CREATE, &c) == -EINVAL,
	      "BO_CREATE size UINT64_MAX: EINVAL");
	/* Under the VA limit, over any guest's RAM: refused, not pinned. */
	c.size = 1ull << 38;
	check(xioctl(fd, DRM_IOCTL_VNPU_BO_CREATE, &c) == -ENOMEM &&
		      c.handle == 77,
	      "BO_CREATE 256 GiB system BO: ENOMEM");
}

/* FILL, DMA_COPY and a fill kernel, checked through the mappings. */
static void test_exec(int fd)
{
	struct bo vram, sys, out, cmd, args;
	struct vnpu_cmd cmds[4];
	uint32_t list[4], q, qsync, out_sync;
	struct drm_syncobj_create sc = { 0 };
	uint64_t seqno = 0;
	int job_error = -1, ret;

	ret = bo_new(fd, BO_SIZE, DRM_VNPU_BO_VRAM, &vram);
	check(!ret, "VRAM BO: va %#llx", (unsigned long long)vram.va);
	ret |= bo_new(fd, BO_SIZE, 0, &sys);
	ret |= bo_new(fd, BO_SIZE, 0, &out);
	ret |= bo_new(fd, 4096, 0, &cmd);
	ret |= bo_new(fd, 4096, 0, &args);
	check(!ret, "system BOs");
	if (ret)
		return;
	check(vram.va != sys.va && sys.va != out.va, "distinct VAs");
	check(all_u32(vram.map, BO_SIZE, 0), "new VRAM BO reads zero");
	memset(sys.map, 0x5c, BO_SIZE);
	((uint32_t *)vram.map)[0] = 0x12345678;
	check(((uint32_t *)vram.map)[0] == 0x12345678, "VRAM mmap write/read");

	ret = queue_new(fd, &q, &qsync);
	check(!ret && q > 0, "QUEUE_CREATE id %u syncobj %u", q, qsync);
	check(!xioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &sc), "syncobj create");
	out_sync = sc.handle;

	/* VRAM[0:32K] = fill; VRAM[32K:] = sys; out = VRAM */
	cmds[0] = vnpu_fill_cmd(vram.va, BO_SIZE / 2, 0xa5a5a5a5, 4);
	cmds[1] = vnpu_copy_cmd(sys.va, vram.va + BO_SIZE / 2, BO_SIZE / 2);
	cmds[2] = vnpu_copy_cmd(vram.va, out.va, BO_SIZE);
	list[0] = vram.handle;
	list[1] = sys.handle;
	list[2] = out.handle;
	ret = submit(fd, q, &cmd, cmds, 3, list, 3, out_sync, &seqno);
	check(!ret && seqno == 1, "SUBMIT fill+copy+copy: seqno %llu (%d)",
	      (unsigned long long)seqno, ret);
	ret = bo_wait(fd, &out, 10000000000ll, &job_error);
	check(!ret && job_error == 0, "BO_WAIT: %d, job_error %d", ret,
	      job_error);
	check(all_u32(out.map, BO_SIZE / 2, 0xa5a5a5a5), "FILL result");
	check(all_u32((char *)out.map + BO_SIZE / 2, BO_SIZE / 2, 0x5c5c5c5c),
	      "DMA_COPY result");
	check(!syncobj_wait(fd, out_sync, 0, 0), "out-syncobj signalled");
	check(!syncobj_wait(fd, qsync, seqno, 1),
	      "queue timeline syncobj reached seqno %llu",
	      (unsigned long long)seqno);
	check(param(fd, DRM_VNPU_PARAM_QUEUE_DONE_SEQNO, q) == seqno,
	      "QUEUE_DONE_SEQNO");

	/* KERNEL_LAUNCH of the fill kernel over the system BO as f32. */
	{
		struct vnpu_kargs_header h = { 1, sizeof(struct vnpu_kp_fill),
					       0 };
		struct vnpu_kargs_buffer b = { sys.va, BO_SIZE,
					       VNPU_ACCESS_WRITE, 0 };
		struct vnpu_kp_fill kp;
		float expect = 2.5f;
		uint32_t bits;
		char *p = args.map;

		memset(&kp, 0, sizeof(kp));
		kp.out.buffer = 0;
		kp.out.dtype = VNPU_DTYPE_F32;
		kp.out.format = VNPU_FORMAT_ND;
		kp.out.ndim = 1;
		kp.out.sizes[0] = BO_SIZE / 4;
		kp.out.strides[0] = 1;
		kp.value = expect;
		memcpy(p, &h, sizeof(h));
		memcpy(p + sizeof(h), &b, sizeof(b));
		memcpy(p + sizeof(h) + sizeof(b), &kp, sizeof(kp));
		cmds[0] = vnpu_launch_cmd(VNPU_KERNEL_FILL, 4, args.va,
					  sizeof(h) + sizeof(b) + sizeof(kp));
		list[0] = sys.handle;
		list[1] = args.handle;
		ret = submit(fd, q, &cmd, cmds, 1, list, 2, 0, &seqno);
		check(!ret, "SUBMIT KERNEL_LAUNCH(fill): seqno %llu",
		      (unsigned long long)seqno);
		job_error = -1;
		ret = bo_wait(fd, &sys, 30000000000ll, &job_error);
		memcpy(&bits, &expect, 4);
		check(!ret && job_error == 0 && all_u32(sys.map, BO_SIZE, bits),
		      "KERNEL_LAUNCH result (wait %d, job_error %d)", ret,
		      job_error);
	}

	/* Unknown opcode and the command-buffer bounds are checked early. */
	memset(&cmds[0], 0, sizeof(cmds[0]));
	cmds[0].hdr.opcode = 0x42;
	check(submit(fd, q, &cmd, cmds, 1, NULL, 0, 0, NULL) == -EINVAL,
	      "unknown opcode: EINVAL");
	{
		struct drm_vnpu_submit s = { .queue_id = q, .cmd_bo = cmd.handle,
					     .cmd_count = 65, .seqno = 5 };

		check(xioctl(fd, DRM_IOCTL_VNPU_SUBMIT, &s) == -EINVAL &&
			      s.seqno == 5,
		      "command buffer overrun: EINVAL, seqno untouched");
		s.cmd_count = 1;
		s.queue_id = 999;
		check(xioctl(fd, DRM_IOCTL_VNPU_SUBMIT, &s) == -ENOENT,
		      "bad queue: ENOENT");
		s.queue_id = q;
		s.cmd_offset = UINT64_MAX - 7; /* offset + 64 wraps */
		check(xioctl(fd, DRM_IOCTL_VNPU_SUBMIT, &s) == -EINVAL &&
			      s.seqno == 5,
		      "command buffer offset wrapping: EINVAL");
	}
	cmds[0] = vnpu_nop_cmd();
	list[0] = sys.handle;
	list[1] = sys.handle;
	check(submit(fd, q, &cmd, cmds, 1, list, 2, 0, NULL) == -EINVAL,
	      "BO listed twice: EINVAL");
	{
		struct drm_prime_handle ph = { .handle = vram.handle,
					       .flags = DRM_CLOEXEC, .fd = -1 };

		ret = xioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph);
		check(ret < 0 && ph.fd == -1, "VRAM BO PRIME export refused (%d)",
		      ret);
		if (!ret)
			close(ph.fd);
	}
	{
		struct drm_vnpu_queue_destroy qd = { 0 };
		uint32_t q2, q2sync;

		ret = queue_new(fd, &q2, &q2sync);
		qd.queue_id = q2;
		check(!ret && !xioctl(fd, DRM_IOCTL_VNPU_QUEUE_DESTROY, &qd) &&
			      xioctl(fd, DRM_IOCTL_VNPU_QUEUE_DESTROY, &qd) ==
				      -ENOENT,
		      "QUEUE_DESTROY twice: ENOENT the second time");
		check(submit(fd, q2, &cmd, cmds, 1, NULL, 0, 0, NULL) == -ENOENT,
		      "SUBMIT to a destroyed queue: ENOENT");
	}
	bo_free(fd, &vram);
	bo_free(fd, &sys);
	bo_free(fd, &out);
	bo_free(fd, &cmd);
	bo_free(fd, &args);
}

/* A job of context A touches an unmapped VA; context B is not affected. */
static void test_fault(void)
{
	int a = open_dev(), b = open_dev();
	struct bo acmd, bcmd, abuf, bbuf;
	struct vnpu_cmd c;
	uint32_t qa, qb;
	int err = 0, ret;

	check(a >= 0 && b >= 0, "two contexts open");
	if (a < 0 || b < 0)
		return;
	ret = bo_new(a, 4096, 0, &acmd) | bo_new(a, 4096, 0, &abuf) |
	      bo_new(b, 4096, 0, &bcmd) | bo_new(b, 4096, 0, &bbuf) |
	      queue_new(a, &qa, NULL) | queue_new(b, &qb, NULL);
	check(!ret, "fault setup");
	if (ret)
		return;
	/* VA 0x1000 is below VA_START: never mapped. */
	c = vnpu_fill_cmd(0x1000, 4096, 1, 4);
	ret = submit(a, qa, &acmd, &c, 1, &abuf.handle, 1, 0, NULL);
	check(!ret, "SUBMIT faulting FILL in context A");
	ret = bo_wait(a, &abuf, 10000000000ll, &err);
	check(!ret && err == -EFAULT, "A's job failed with EFAULT (%d)", err);
	check(param(a, DRM_VNPU_PARAM_CONTEXT_STATE, 0) &
		      DRM_VNPU_CONTEXT_FAULTED,
	      "A is marked faulted");
	check(param(a, DRM_VNPU_PARAM_FAULT_VA, 0) == 0x1000,
	      "A's fault VA %#llx",
	      (unsigned long long)param(a, DRM_VNPU_PARAM_FAULT_VA, 0));
	check(param(a, DRM_VNPU_PARAM_QUEUE_ERROR, qa) == EFAULT,
	      "A's queue error EFAULT");
	check(param(b, DRM_VNPU_PARAM_CONTEXT_STATE, 0) == 0,
	      "B is not faulted");
	c = vnpu_fill_cmd(bbuf.va, 4096, 0x77777777, 4);
	ret = submit(b, qb, &bcmd, &c, 1, &bbuf.handle, 1, 0, NULL);
	err = -1;
	ret |= bo_wait(b, &bbuf, 10000000000ll, &err);
	check(!ret && !err && all_u32(bbuf.map, 4096, 0x77777777),
	      "B still works");
	c = vnpu_fill_cmd(abuf.va, 4096, 2, 4);
	ret = submit(a, qa, &acmd, &c, 1, &abuf.handle, 1, 0, NULL);
	err = 0;
	ret |= bo_wait(a, &abuf, 10000000000ll, &err);
	check(!ret && err == -EFAULT, "A's later jobs fail with EFAULT (%d)",
	      err);
	close(a);
	close(b);
}

static int write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, value, strlen(value)) == (ssize_t)strlen(value);
	close(fd);
	return ok ? 0 : -1;
}

/* Context C hangs the device; innocent context D keeps working. */
static void test_hang(void)
{
	int c = open_dev(), d = open_dev();
	struct bo ccmd, dcmd, cbuf, dbuf;
	struct vnpu_cmd cmd;
	uint64_t resets;
	uint32_t qc, qd;
	int err = 0, ret;

	if (c < 0 || d < 0)
		return;
	if (!(param(c, DRM_VNPU_PARAM_CAPABILITIES, 0) &
	      DRM_VNPU_CAP_TEST_MODE)) {
		printf("skip: hang test (device not in test mode)\n");
		goto out;
	}
	if (write_file("/sys/module/vnpu/parameters/allow_test_inject",
		       "Y")) {
		printf("skip: hang test (cannot enable allow_test_inject)\n");
		goto out;
	}
	resets = param(c, DRM_VNPU_PARAM_RESET_COUNT, 0);
	ret = bo_new(c, 4096, 0, &ccmd) | bo_new(c, 4096, 0, &cbuf) |
	      bo_new(d, 4096, 0, &dcmd) | bo_new(d, 4096, 0, &dbuf) |
	      queue_new(c, &qc, NULL) | queue_new(d, &qd, NULL);
	check(!ret, "hang setup");
	if (ret)
		goto out;
	cmd = vnpu_inject_cmd(VNPU_TEST_HANG, 0, 0);
	ret = submit(c, qc, &ccmd, &cmd, 1, &cbuf.handle, 1, 0, NULL);
	check(!ret, "SUBMIT TEST_INJECT(HANG) in context C");
	cmd = vnpu_fill_cmd(dbuf.va, 4096, 0x31313131, 4);
	ret = submit(d, qd, &dcmd, &cmd, 1, &dbuf.handle, 1, 0, NULL);
	check(!ret, "SUBMIT FILL in context D");
	ret = bo_wait(c, &cbuf, 60000000000ll, &err);
	check(!ret && err == -ETIMEDOUT, "C's job failed with ETIMEDOUT (%d)",
	      err);
	err = -1;
	ret = bo_wait(d, &dbuf, 60000000000ll, &err);
	check(!ret && !err && all_u32(dbuf.map, 4096, 0x31313131),
	      "D's job completed after the reset (%d, %d)", ret, err);
	check(param(d, DRM_VNPU_PARAM_RESET_COUNT, 0) == resets + 1,
	      "one device reset");
	check(param(c, DRM_VNPU_PARAM_CONTEXT_STATE, 0) &
		      DRM_VNPU_CONTEXT_BANNED,
	      "C is banned");
	check(submit(c, qc, &ccmd, &cmd, 1, NULL, 0, 0, NULL) == -ECANCELED,
	      "C's SUBMIT: ECANCELED");
	cmd = vnpu_fill_cmd(dbuf.va, 4096, 0x42424242, 4);
	ret = submit(d, qd, &dcmd, &cmd, 1, &dbuf.handle, 1, 0, NULL);
	err = -1;
	ret |= bo_wait(d, &dbuf, 10000000000ll, &err);
	check(!ret && !err && all_u32(dbuf.map, 4096, 0x42424242),
	      "D works after the reset");
out:
	write_file("/sys/module/vnpu/parameters/allow_test_inject", "N");
	if (c >= 0)
		close(c);
	if (d >= 0)
		close(d);
}

int main(void)
{
	int fd = open_dev();

	check(fd >= 0, "open vnpu device (%s)", fd < 0 ? strerror(errno) : "");
	if (fd < 0)
		return 1;
	test_params(fd);
	test_bo_errors(fd);
	test_exec(fd);
	close(fd);
	test_fault();
	test_hang();
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
