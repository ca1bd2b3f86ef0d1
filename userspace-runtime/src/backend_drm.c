// SPDX-License-Identifier: MIT
/*
 * The drm backend: the vnpu kernel driver through /dev/accel/accel*. The
 * driver (and its UAPI) come with a later issue; until then this backend
 * only detects vnpu nodes, so that auto-detection can prefer the real
 * device, and reports itself unavailable.
 *
 * Detection: an accel node belongs to vnpu when the name of its driver,
 * the link /sys/class/accel/accelN/device/driver, is "vnpu" (the same name
 * DRM_IOCTL_VERSION returns, read without opening the node or libdrm).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "internal.h"

#define DRM_UNAVAILABLE                                                       \
	"the drm backend needs the vnpu kernel driver and its UAPI, which "  \
	"are not part of this build yet; use VNPU_BACKEND=sim (or leave it " \
	"unset without a vnpu accel node)"

static int drm_device_count(const struct vnpurt_config *cfg, char *why,
			    size_t why_len)
{
	DIR *dir = opendir("/sys/class/accel");
	struct dirent *e;
	int n = 0;

	if (!dir) {
		snprintf(why, why_len, "no /sys/class/accel (no accel nodes)");
		return 0;
	}
	while ((e = readdir(dir))) {
		char path[PATH_MAX], target[PATH_MAX];
		const char *base;
		ssize_t len;

		if (strncmp(e->d_name, "accel", 5))
			continue;
		snprintf(path, sizeof(path), "/sys/class/accel/%s/device/driver",
			 e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		base = strrchr(target, '/');
		base = base ? base + 1 : target;
		if (!strcmp(base, "vnpu"))
			n++;
	}
	closedir(dir);
	if (!n)
		snprintf(why, why_len,
			 "no /dev/accel/accel* node with driver \"vnpu\"");
	return n;
}

static vnpu_error_t drm_open(int index, const struct vnpurt_config *cfg,
			     struct vnpurt_bdev **out)
{
	return rt_fail_detail(VNPU_ERROR_BACKEND_UNAVAILABLE, DRM_UNAVAILABLE);
}

/* Nothing below is reachable: open never succeeds. They exist so that the
 * table is complete and the runtime never calls through NULL. */
static void drm_close(struct vnpurt_bdev *dev)
{
}

static void drm_query(struct vnpurt_bdev *dev, struct vnpurt_dev_info *info)
{
	memset(info, 0, sizeof(*info));
}

static vnpu_error_t drm_bo_create(struct vnpurt_bdev *dev, uint64_t size,
				  enum vnpurt_domain domain,
				  struct vnpurt_bo *bo)
{
	return VNPU_ERROR_BACKEND_UNAVAILABLE;
}

static void drm_bo_free(struct vnpurt_bdev *dev, struct vnpurt_bo *bo)
{
}

static vnpu_error_t drm_queue_create(struct vnpurt_bdev *dev, int priority,
				     unsigned *queue)
{
	return VNPU_ERROR_BACKEND_UNAVAILABLE;
}

static void drm_queue_destroy(struct vnpurt_bdev *dev, unsigned queue)
{
}

static vnpu_error_t drm_submit(struct vnpurt_bdev *dev, unsigned queue,
			       const struct vnpu_cmd *cmds, unsigned n,
			       uint64_t *seqno)
{
	return VNPU_ERROR_BACKEND_UNAVAILABLE;
}

static vnpu_error_t drm_wait(struct vnpurt_bdev *dev, unsigned queue,
			     uint64_t seqno, unsigned timeout_ms)
{
	return VNPU_ERROR_BACKEND_UNAVAILABLE;
}

static uint64_t drm_completed(struct vnpurt_bdev *dev, unsigned queue)
{
	return 0;
}

static bool drm_take_failure(struct vnpurt_bdev *dev, unsigned queue,
			     struct vnpurt_failure *f)
{
	return false;
}

static bool drm_test_mode(struct vnpurt_bdev *dev)
{
	return false;
}

const struct vnpurt_backend_ops vnpurt_backend_drm = {
	.name = "drm",
	.device_count = drm_device_count,
	.open = drm_open,
	.close = drm_close,
	.query = drm_query,
	.bo_create = drm_bo_create,
	.bo_free = drm_bo_free,
	.queue_create = drm_queue_create,
	.queue_destroy = drm_queue_destroy,
	.submit = drm_submit,
	.wait = drm_wait,
	.completed = drm_completed,
	.take_failure = drm_take_failure,
	.test_mode = drm_test_mode,
};
