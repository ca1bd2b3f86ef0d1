// SPDX-License-Identifier: MIT
/*
 * hw_unbind: category 11 of the in-VM hardware suite. The PCI device is
 * unbound from vnpu.ko and bound again (sysfs), and the module is unloaded
 * and loaded again, with work in flight: the open file's unfinished jobs end
 * with -ENODEV, its ioctls answer -ENODEV, the module cannot go while a file
 * is open, and a fresh open works afterwards. vm.sh fails the run on any
 * kernel WARN/BUG these paths print.
 *
 * Reloading the module restarts the reset counter, so the program declares
 * HW_EXPECTS_RESET and its tests do not use the per-test reset guard.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hw_util.h"

#define DRV_DIR "/sys/bus/pci/drivers/vnpu"

static char pci_addr[300];

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != strlen(text))
		ret = -EIO;
	close(fd);
	return ret;
}

/* The PCI address of the vnpu device bound to the driver, or "". */
static void find_bound_device(char *addr, size_t len)
{
	DIR *d = opendir(DRV_DIR);
	struct dirent *e;

	addr[0] = '\0';
	if (!d)
		return;
	while ((e = readdir(d)))
		if (strchr(e->d_name, ':') && strchr(e->d_name, '.'))
			snprintf(addr, len, "%s", e->d_name);
	closedir(d);
}

/* The accel node of pci_addr once the driver has probed it (up to 20 s):
 * exported in VNPU_DEV for the harness. */
static int wait_for_node(void)
{
	char dir[400], path[300];
	int i;

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s/accel", pci_addr);
	for (i = 0; i < 200; i++) {
		DIR *d = opendir(dir);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			if (strncmp(e->d_name, "accel", 5))
				continue;
			snprintf(path, sizeof(path), "/dev/%s/%s", "accel",
				 e->d_name);
			if (access(path, F_OK) == 0) {
				closedir(d);
				setenv("VNPU_DEV", path, 1);
				return 0;
			}
		}
		if (d)
			closedir(d);
		usleep(100 * 1000);
	}
	return -ETIMEDOUT;
}

static int module_loaded(void)
{
	return access("/sys/module/vnpu", F_OK) == 0;
}

static int unload_module(void)
{
	if (syscall(SYS_delete_module, "vnpu", O_NONBLOCK) == 0)
		return 0;
	return -errno;
}

/* Whatever a failed test left: module loaded, device bound. */
static void restore_device(void)
{
	char addr[300];

	if (!module_loaded() && system("modprobe vnpu") != 0)
		fprintf(stderr, "hw_unbind: modprobe vnpu failed\n");
	find_bound_device(addr, sizeof(addr));
	if (!addr[0] && pci_addr[0] &&
	    write_file(DRV_DIR "/bind", pci_addr) != 0)
		fprintf(stderr, "hw_unbind: rebinding %s failed\n", pci_addr);
}

/* A FILL of buf in ctx: the device works. */
static void fill_works(struct hw_ctx *ctx, struct hw_bo *buf, uint32_t v)
{
	struct vnpu_cmd c = vnpu_fill_cmd(buf->va, buf->size, v, 4);

	ck_assert_int_eq(hw_run(ctx, &c, 1, &buf->handle, 1, NULL), 0);
	ck_assert_uint_eq(hw_check_u32(buf->map, buf->size, v), SIZE_MAX);
}

static void fresh_context_works(void)
{
	struct hw_ctx ctx;
	struct hw_bo buf;

	ck_assert_int_eq(wait_for_node(), 0);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 256 * 1024, DRM_VNPU_BO_VRAM, &buf);
	fill_works(&ctx, &buf, 0x5eed5eed);
	hw_bo_free(ctx.fd, &buf); /* a mapping would keep the file open */
	hw_ctx_close(&ctx);
}

struct wait_arg {
	int fd;
	uint32_t handle;
	int ret;
	struct drm_vnpu_bo_wait w;
};

static void *wait_thread(void *p)
{
	struct wait_arg *a = p;

	a->ret = hw_bo_wait(a->fd, a->handle, HW_WAIT_NS, &a->w);
	return NULL;
}

/*
 * Context with a job held by FENCE_WAIT (never released) and another queued
 * behind it; the device is unbound under it.
 */
START_TEST(test_unbind_with_jobs_in_flight)
{
	struct hw_ctx ctx;
	struct hw_bo gate, buf;
	struct drm_vnpu_bo_wait w;
	struct vnpu_cmd c[2];
	uint32_t bos[2], q;
	uint64_t v;
	struct wait_arg wa;
	pthread_t waiter;

	ck_assert_msg(pci_addr[0], "no device bound to vnpu");
	ck_assert_int_eq(wait_for_node(), 0);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, HW_PAGE_SIZE, 0, &gate);
	hw_bo_new(ctx.fd, 64 * 1024, 0, &buf);
	memset(gate.map, 0, gate.size);
	memset(buf.map, 0, buf.size);
	c[0] = vnpu_fence_wait_cmd(gate.va, 1);
	c[1] = vnpu_fill_cmd(buf.va, buf.size, 1, 4);
	bos[0] = buf.handle;
	bos[1] = gate.handle;
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, c, 2, bos,
				   2, 0, NULL),
			 0);
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c[1], 1,
				   bos, 1, 0, NULL),
			 0);
	ck_assert_int_eq(hw_bo_wait(ctx.fd, buf.handle, 0, NULL), -ETIMEDOUT);

	/* A BO_WAIT already sleeping ends when the removal fails the job. */
	wa.fd = ctx.fd;
	wa.handle = buf.handle;
	ck_assert_int_eq(pthread_create(&waiter, NULL, wait_thread, &wa), 0);
	usleep(200 * 1000);
	ck_assert_int_eq(write_file(DRV_DIR "/unbind", pci_addr), 0);
	pthread_join(waiter, NULL);
	ck_assert_int_eq(wa.ret, 0);
	ck_assert_int_eq(wa.w.job_error, -ENODEV);
	/* New calls, BO_WAIT included, are refused by the DRM core. */
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(hw_bo_wait(ctx.fd, buf.handle, HW_WAIT_NS, &w),
			 -ENODEV);
	ck_assert_uint_eq(hw_check_u32(buf.map, buf.size, 0), SIZE_MAX);
	ck_assert_int_eq(hw_get_param(ctx.fd, DRM_VNPU_PARAM_DEVICE_ID, 0, &v),
			 -ENODEV);
	ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c[1], 1,
				   bos, 1, 0, NULL),
			 -ENODEV);
	ck_assert_int_eq(hw_queue_create(ctx.fd, DRM_VNPU_HW_QUEUE_ANY, &q,
					 NULL),
			 -ENODEV);
	/* The module is pinned by the open file. */
	ck_assert_int_eq(unload_module(), -EWOULDBLOCK);
	munmap(gate.map, gate.size);
	munmap(buf.map, buf.size);
	munmap(ctx.cmd.map, ctx.cmd.size);
	close(ctx.fd);

	ck_assert_int_eq(write_file(DRV_DIR "/bind", pci_addr), 0);
	fresh_context_works();
}
END_TEST

/* Unbind and bind twice quickly, with nobody holding the device. */
START_TEST(test_unbind_bind_idle)
{
	int i;

	ck_assert_msg(pci_addr[0], "no device bound to vnpu");
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(write_file(DRV_DIR "/unbind", pci_addr), 0);
		ck_assert_int_eq(write_file(DRV_DIR "/bind", pci_addr), 0);
	}
	fresh_context_works();
}
END_TEST

/*
 * Jobs submitted and the file closed without waiting; the module unloads
 * at once (close waits for the jobs) and loads again.
 */
START_TEST(test_module_reload_after_work)
{
	struct hw_ctx ctx;
	struct hw_bo buf;
	struct vnpu_cmd c;
	int i;

	ck_assert_int_eq(wait_for_node(), 0);
	hw_ctx_open(&ctx);
	hw_bo_new(ctx.fd, 4u << 20, DRM_VNPU_BO_VRAM, &buf);
	c = vnpu_fill_cmd(buf.va, buf.size, 0x1234, 4);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(hw_submit(ctx.fd, ctx.queue, &ctx.cmd, 0, &c,
					   1, &buf.handle, 1, 0, NULL),
				 0);
	munmap(buf.map, buf.size);
	munmap(ctx.cmd.map, ctx.cmd.size);
	close(ctx.fd);
	ck_assert_int_eq(unload_module(), 0);
	ck_assert(!module_loaded());
	ck_assert_int_eq(access(DRV_DIR, F_OK), -1);
	ck_assert_int_eq(system("modprobe vnpu"), 0);
	ck_assert(module_loaded());
	fresh_context_works();
	/* A fresh load: no resets, one context open meanwhile, now none. */
	{
		int fd = hw_open();

		ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_RESET_COUNT), 0);
		/* Jobs drop their BO references in the scheduler's free
		 * worker, after close returned: give it a moment. */
		for (i = 0; i < 100 && hw_param(fd, DRM_VNPU_PARAM_VRAM_USED);
		     i++)
			usleep(20 * 1000);
		ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_VRAM_USED), 0);
		close(fd);
	}
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("hw_unbind");
	TCase *tc = tcase_create("unbind");

	find_bound_device(pci_addr, sizeof(pci_addr));
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, restore_device, NULL);
	tcase_add_unchecked_fixture(tc, NULL, restore_device);
	tcase_add_test(tc, test_unbind_with_jobs_in_flight);
	tcase_add_test(tc, test_unbind_bind_idle);
	tcase_add_test(tc, test_module_reload_after_work);
	/* Not hw_suite_add: a module reload restarts the reset counter. */
	suite_add_tcase(s, tc);
	return hw_main(argc, argv, s, HW_EXPECTS_RESET);
}
