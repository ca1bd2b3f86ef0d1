// SPDX-License-Identifier: MIT
/*
 * Shared harness of the in-VM hardware test suite; see hw_util.h.
 */
#include "hw_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

int hw_ioctl(int fd, unsigned long request, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, request, arg);
	} while (ret == -1 && errno == EINTR);
	return ret == -1 ? -errno : 0;
}

int64_t hw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void hw_driver_name(int fd, char *name, size_t len)
{
	struct drm_version v;

	memset(&v, 0, sizeof(v));
	memset(name, 0, len);
	v.name = name;
	v.name_len = len - 1;
	if (hw_ioctl(fd, DRM_IOCTL_VERSION, &v))
		name[0] = '\0';
}

int hw_dev_path(char *path, size_t len)
{
	/* Found once: a later scan could not open a node whose contexts are
	 * all in use. */
	static char found[64];
	const char *env = getenv("VNPU_DEV");
	int best = -1;
	struct dirent *e;
	DIR *d;

	if (env && *env) {
		snprintf(path, len, "%s", env);
		return 0;
	}
	if (found[0]) {
		snprintf(path, len, "%s", found);
		return 0;
	}
	d = opendir("/dev/accel");
	if (!d)
		return -ENODEV;
	/* The lowest numbered accel node whose driver is vnpu. */
	while ((e = readdir(d))) {
		char p[64], name[32];
		int n, fd;

		if (sscanf(e->d_name, "accel%d", &n) != 1)
			continue;
		if (best >= 0 && n >= best)
			continue;
		snprintf(p, sizeof(p), "/dev/accel/accel%d", n);
		fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		hw_driver_name(fd, name, sizeof(name));
		close(fd);
		if (!strcmp(name, "vnpu"))
			best = n;
	}
	closedir(d);
	if (best < 0)
		return -ENODEV;
	snprintf(found, sizeof(found), "/dev/accel/accel%d", best);
	snprintf(path, len, "%s", found);
	return 0;
}

int hw_open_raw(void)
{
	char path[256];
	int ret = hw_dev_path(path, sizeof(path));
	int fd;

	if (ret)
		return ret;
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int hw_open(void)
{
	int fd = hw_open_raw();

	ck_assert_msg(fd >= 0, "open the vnpu node: %s", strerror(-fd));
	return fd;
}

int hw_get_param(int fd, uint32_t param, uint32_t index, uint64_t *value)
{
	struct drm_vnpu_get_param gp = { .param = param, .index = index };
	int ret = hw_ioctl(fd, DRM_IOCTL_VNPU_GET_PARAM, &gp);

	if (!ret)
		*value = gp.value;
	return ret;
}

uint64_t hw_param(int fd, uint32_t param)
{
	uint64_t v = 0;
	int ret = hw_get_param(fd, param, 0, &v);

	ck_assert_msg(ret == 0, "GET_PARAM %u: %s", param, strerror(-ret));
	return v;
}

bool hw_test_mode(int fd)
{
	return hw_param(fd, DRM_VNPU_PARAM_CAPABILITIES) &
	       DRM_VNPU_CAP_TEST_MODE;
}

int hw_bo_create_raw(int fd, uint64_t size, uint32_t flags, uint32_t *handle,
		     uint64_t *va)
{
	struct drm_vnpu_bo_create c = { .size = size, .flags = flags };
	int ret = hw_ioctl(fd, DRM_IOCTL_VNPU_BO_CREATE, &c);

	if (!ret) {
		*handle = c.handle;
		if (va)
			*va = c.device_va;
	}
	return ret;
}

int hw_bo_info(int fd, uint32_t handle, struct drm_vnpu_bo_info *info)
{
	memset(info, 0, sizeof(*info));
	info->handle = handle;
	return hw_ioctl(fd, DRM_IOCTL_VNPU_BO_INFO, info);
}

int hw_bo_from_handle(int fd, uint32_t handle, struct hw_bo *bo)
{
	struct drm_vnpu_bo_info info;
	int ret = hw_bo_info(fd, handle, &info);
	void *map;

	if (ret)
		return ret;
	map = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)info.mmap_offset);
	if (map == MAP_FAILED)
		return -errno;
	bo->handle = handle;
	bo->flags = info.flags;
	bo->size = info.size;
	bo->va = info.device_va;
	bo->mmap_offset = info.mmap_offset;
	bo->map = map;
	return 0;
}

int hw_bo_create(int fd, uint64_t size, uint32_t flags, struct hw_bo *bo)
{
	uint32_t handle;
	uint64_t va;
	int ret = hw_bo_create_raw(fd, size, flags, &handle, &va);

	if (ret)
		return ret;
	ret = hw_bo_from_handle(fd, handle, bo);
	if (ret) {
		hw_gem_close(fd, handle);
		return ret;
	}
	return bo->va == va ? 0 : -EPROTO;
}

void hw_bo_new(int fd, uint64_t size, uint32_t flags, struct hw_bo *bo)
{
	int ret = hw_bo_create(fd, size, flags, bo);

	ck_assert_msg(ret == 0, "BO of %llu bytes, flags %#x: %s",
		      (unsigned long long)size, flags, strerror(-ret));
}

int hw_gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close gc = { .handle = handle };

	return hw_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &gc);
}

void hw_bo_free(int fd, struct hw_bo *bo)
{
	int ret;

	if (bo->map)
		munmap(bo->map, bo->size);
	bo->map = NULL;
	ret = hw_gem_close(fd, bo->handle);
	ck_assert_msg(ret == 0, "GEM_CLOSE %u: %s", bo->handle,
		      strerror(-ret));
}

int hw_bo_wait(int fd, uint32_t handle, int64_t timeout_ns,
	       struct drm_vnpu_bo_wait *out)
{
	struct drm_vnpu_bo_wait w = {
		.handle = handle,
		.timeout_ns = hw_now_ns() + timeout_ns,
	};
	int ret = hw_ioctl(fd, DRM_IOCTL_VNPU_BO_WAIT, &w);

	if (!ret && out)
		*out = w;
	return ret;
}

int hw_queue_create(int fd, uint32_t hw_queue, uint32_t *queue_id,
		    uint32_t *syncobj)
{
	struct drm_vnpu_queue_create q = { .hw_queue = hw_queue };
	int ret = hw_ioctl(fd, DRM_IOCTL_VNPU_QUEUE_CREATE, &q);

	if (!ret) {
		*queue_id = q.queue_id;
		if (syncobj)
			*syncobj = q.syncobj;
	}
	return ret;
}

int hw_queue_destroy(int fd, uint32_t queue_id)
{
	struct drm_vnpu_queue_destroy d = { .queue_id = queue_id };

	return hw_ioctl(fd, DRM_IOCTL_VNPU_QUEUE_DESTROY, &d);
}

int hw_prime_export(int fd, uint32_t handle, int *dmabuf_fd)
{
	struct drm_prime_handle ph = {
		.handle = handle, .flags = DRM_CLOEXEC | DRM_RDWR, .fd = -1,
	};
	int ret = hw_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph);

	if (!ret)
		*dmabuf_fd = ph.fd;
	return ret;
}

int hw_prime_import(int fd, int dmabuf_fd, uint32_t *handle)
{
	struct drm_prime_handle ph = { .fd = dmabuf_fd };
	int ret = hw_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph);

	if (!ret)
		*handle = ph.handle;
	return ret;
}

int hw_syncobj_create(int fd, uint32_t flags, uint32_t *handle)
{
	struct drm_syncobj_create c = { .flags = flags };
	int ret = hw_ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c);

	if (!ret)
		*handle = c.handle;
	return ret;
}

int hw_syncobj_destroy(int fd, uint32_t handle)
{
	struct drm_syncobj_destroy d = { .handle = handle };

	return hw_ioctl(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}

int hw_syncobj_wait(int fd, const uint32_t *syncobjs, const uint64_t *points,
		    uint32_t count, int64_t timeout_ns)
{
	int64_t deadline = hw_now_ns() + timeout_ns;

	if (points) {
		struct drm_syncobj_timeline_wait w = {
			.handles = (uintptr_t)syncobjs,
			.points = (uintptr_t)points,
			.timeout_nsec = deadline,
			.count_handles = count,
			.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL |
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
		};
		return hw_ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
	} else {
		struct drm_syncobj_wait w = {
			.handles = (uintptr_t)syncobjs,
			.timeout_nsec = deadline,
			.count_handles = count,
			.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL,
		};
		return hw_ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w);
	}
}

int hw_submit(int fd, uint32_t queue_id, const struct hw_bo *cmdbuf,
	      uint64_t offset, const struct vnpu_cmd *cmds, uint32_t count,
	      const uint32_t *bos, uint32_t bo_count, uint32_t out_syncobj,
	      uint64_t *seqno)
{
	struct drm_vnpu_submit s = {
		.queue_id = queue_id,
		.cmd_bo = cmdbuf->handle,
		.cmd_count = count,
		.cmd_offset = offset,
		.bo_handles = (uintptr_t)bos,
		.bo_count = bo_count,
		.out_syncobj = out_syncobj,
	};
	int ret;

	ck_assert_msg(offset + (uint64_t)count * sizeof(*cmds) <= cmdbuf->size,
		      "commands beyond the command BO");
	memcpy((char *)cmdbuf->map + offset, cmds, count * sizeof(*cmds));
	ret = hw_ioctl(fd, DRM_IOCTL_VNPU_SUBMIT, &s);
	if (!ret && seqno)
		*seqno = s.seqno;
	return ret;
}

void hw_ctx_init(struct hw_ctx *ctx, int fd)
{
	int ret;

	ctx->fd = fd;
	ret = hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &ctx->queue,
			      &ctx->syncobj);
	ck_assert_msg(ret == 0, "QUEUE_CREATE: %s", strerror(-ret));
	hw_bo_new(fd, 64 * 1024, 0, &ctx->cmd);
}

void hw_ctx_open(struct hw_ctx *ctx)
{
	hw_ctx_init(ctx, hw_open());
}

void hw_ctx_close(struct hw_ctx *ctx)
{
	if (ctx->cmd.map)
		munmap(ctx->cmd.map, ctx->cmd.size);
	ctx->cmd.map = NULL;
	close(ctx->fd);
	ctx->fd = -1;
}

int hw_run(struct hw_ctx *ctx, const struct vnpu_cmd *cmds, uint32_t count,
	   const uint32_t *bos, uint32_t bo_count,
	   struct drm_vnpu_bo_wait *wait)
{
	struct drm_vnpu_bo_wait w;
	int ret;

	ck_assert(bo_count >= 1);
	ret = hw_submit(ctx->fd, ctx->queue, &ctx->cmd, 0, cmds, count, bos,
			bo_count, 0, NULL);
	if (ret)
		return ret;
	ret = hw_bo_wait(ctx->fd, bos[0], HW_WAIT_NS, &w);
	if (ret)
		return ret;
	if (wait)
		*wait = w;
	return w.job_error;
}

/* debugfs directory of the device: named after its PCI device (the
 * device link of the node's char device in sysfs). */
static int debugfs_dir(char *dir, size_t len)
{
	char path[256], link[128], *real;
	struct stat st;
	const char *base;
	int ret = hw_dev_path(path, sizeof(path));

	if (ret)
		return ret;
	if (stat(path, &st))
		return -errno;
	snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/device",
		 major(st.st_rdev), minor(st.st_rdev));
	real = realpath(link, NULL);
	if (!real)
		return -errno;
	base = strrchr(real, '/');
	snprintf(dir, len, "/sys/kernel/debug/accel/%s",
		 base ? base + 1 : real);
	free(real);
	return 0;
}

long hw_debugfs_read(const char *file, char *buf, size_t len)
{
	char dir[128], path[256];
	size_t got = 0;
	int ret = debugfs_dir(dir, sizeof(dir));
	int fd;

	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			close(fd);
			return ret;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return (long)got;
}

int hw_debugfs_write(const char *file, const char *text)
{
	char dir[128], path[256];
	int ret = debugfs_dir(dir, sizeof(dir));
	size_t len = strlen(text);
	ssize_t n;
	int fd;

	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	ret = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
	close(fd);
	return ret;
}

long hw_reset_count(void)
{
	char buf[64];
	uint64_t v;
	int fd, ret;

	if (hw_debugfs_read("reset_counter", buf, sizeof(buf)) > 0)
		return strtol(buf, NULL, 10);
	fd = hw_open_raw();
	if (fd < 0)
		return fd;
	ret = hw_get_param(fd, DRM_VNPU_PARAM_RESET_COUNT, 0, &v);
	close(fd);
	return ret ? ret : (long)v;
}

int hw_vram_stats(uint64_t *used, uint64_t *blocks)
{
	static char buf[1 << 16];
	unsigned long long u = 0;
	uint64_t n = 0;
	long len = hw_debugfs_read("bos", buf, sizeof(buf));
	char *line;

	if (len < 0)
		return (int)len;
	if (sscanf(buf, "VRAM used %llu", &u) != 1)
		return -EPROTO;
	/* drm_mm_print(): one "start-end: size: used" line per block. */
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (strstr(line, ": used"))
			n++;
	*used = u;
	*blocks = n;
	return 0;
}

uint64_t hw_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static uint32_t pattern_word(size_t i, uint32_t seed)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x;
}

void hw_pattern_fill(void *p, size_t size, uint32_t seed)
{
	unsigned char *b = p;

	for (size_t i = 0; i < size; i++)
		b[i] = (unsigned char)(pattern_word(i / 4, seed) >> (i % 4 * 8));
}

size_t hw_pattern_check(const void *p, size_t size, uint32_t seed)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < size; i++)
		if (b[i] !=
		    (unsigned char)(pattern_word(i / 4, seed) >> (i % 4 * 8)))
			return i;
	return SIZE_MAX;
}

size_t hw_check_u32(const void *p, size_t size, uint32_t value)
{
	const unsigned char *b = p;

	for (size_t i = 0; i + 4 <= size; i += 4) {
		uint32_t w;

		memcpy(&w, b + i, 4);
		if (w != value)
			return i;
	}
	return SIZE_MAX;
}

static long guard_resets;

static void reset_guard_setup(void)
{
	guard_resets = hw_reset_count();
}

static void reset_guard_teardown(void)
{
	long now = hw_reset_count();

	ck_assert_msg(now == guard_resets,
		      "unexpected device reset during the test (%ld -> %ld)",
		      guard_resets, now);
}

void hw_suite_add(Suite *s, TCase *tc)
{
	tcase_add_checked_fixture(tc, reset_guard_setup, reset_guard_teardown);
	suite_add_tcase(s, tc);
}

int hw_main(int argc, char **argv, Suite *s, unsigned int flags)
{
	SRunner *sr;
	int failed;

	if (argc > 1 && !strcmp(argv[1], "--expects-reset"))
		return flags & HW_EXPECTS_RESET ? 0 : 1;
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

void hw_figure(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("figure: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	fflush(stdout);
}
