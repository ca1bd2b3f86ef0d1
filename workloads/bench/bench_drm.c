// SPDX-License-Identifier: MIT
/*
 * The driver path, measured in the guest (benchmarks, no asserts):
 *  - null-job round trip: SUBMIT of one NOP and a wait on its point of the
 *    queue's timeline syncobj, against a null ioctl (DRM_IOCTL_VERSION) on
 *    the same file; goal <= 3x;
 *  - H2D / D2H bandwidth through the runtime on the drm backend, pageable
 *    and pinned, against memcpy of the same size in the same run.
 *
 *   bench-drm [--iters N] [--mib M]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xf86drm.h>

#include "bench.h"
#include "uapi/drm/vnpu_accel.h"
#include "vnpu/hw_cmd_build.h"
#include "vnpu_runtime.h"

#define DIE(...)                                                               \
	do {                                                                   \
		fprintf(stderr, "bench-drm: " __VA_ARGS__);                    \
		fprintf(stderr, "\n");                                         \
		exit(1);                                                       \
	} while (0)

#define RT(call)                                                               \
	do {                                                                   \
		vnpu_error_t e_ = (call);                                      \
		if (e_)                                                        \
			DIE("%s: %s (%s)", #call, vnpu_error_string(e_),       \
			    vnpu_last_error_detail());                         \
	} while (0)

static int open_vnpu(void)
{
	for (int m = 0; m < 64; m++) {
		char path[32];
		drmVersionPtr v;
		int fd;

		snprintf(path, sizeof(path), "/dev/accel/accel%d", m);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		v = drmGetVersion(fd);
		if (v && v->name && !strcmp(v->name, "vnpu")) {
			drmFreeVersion(v);
			return fd;
		}
		drmFreeVersion(v);
		close(fd);
	}
	DIE("no /dev/accel/accel* node with driver \"vnpu\"");
}

static void bench_null_job(int iters)
{
	int fd = open_vnpu();
	struct drm_vnpu_bo_create bc = {.size = 4096};
	struct drm_vnpu_bo_info bi;
	struct drm_vnpu_queue_create qc = {.hw_queue = DRM_VNPU_HW_QUEUE_ANY};
	struct vnpu_cmd *cmd;
	double t, ioctl_us, job_us, submit_us = 0;
	uint64_t point = 0;

	if (drmIoctl(fd, DRM_IOCTL_VNPU_BO_CREATE, &bc))
		DIE("BO_CREATE: %s", strerror(errno));
	memset(&bi, 0, sizeof(bi));
	bi.handle = bc.handle;
	if (drmIoctl(fd, DRM_IOCTL_VNPU_BO_INFO, &bi))
		DIE("BO_INFO: %s", strerror(errno));
	cmd = mmap(NULL, bi.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)bi.mmap_offset);
	if (cmd == MAP_FAILED)
		DIE("mmap: %s", strerror(errno));
	*cmd = vnpu_nop_cmd();
	if (drmIoctl(fd, DRM_IOCTL_VNPU_QUEUE_CREATE, &qc))
		DIE("QUEUE_CREATE: %s", strerror(errno));

	/* Warm-up, then the null ioctl and the null job, same file. */
	for (int pass = 0; pass < 2; pass++) {
		int n = pass ? iters : iters / 10 + 1;

		t = bench_now();
		for (int i = 0; i < n; i++) {
			drmVersionPtr v = drmGetVersion(fd);

			drmFreeVersion(v);
		}
		ioctl_us = (bench_now() - t) / n * 1e6;
		submit_us = 0;
		t = bench_now();
		for (int i = 0; i < n; i++) {
			double ts = bench_now();
			struct drm_vnpu_submit s = {
				.queue_id = qc.queue_id,
				.cmd_bo = bc.handle,
				.cmd_count = 1,
				.bo_handles = (uintptr_t)&bc.handle,
				.bo_count = 1,
			};
			int r;

			if (drmIoctl(fd, DRM_IOCTL_VNPU_SUBMIT, &s))
				DIE("SUBMIT: %s", strerror(errno));
			submit_us += bench_now() - ts;
			point = s.seqno;
			r = drmSyncobjTimelineWait(fd, &qc.syncobj, &point, 1,
						   INT64_MAX, 0, NULL);
			if (r)
				DIE("syncobj wait: %s", strerror(-r));
		}
		job_us = (bench_now() - t) / n * 1e6;
		submit_us = submit_us / n * 1e6;
	}
	/* drmGetVersion makes two DRM_IOCTL_VERSION calls (sizes, then
	 * strings): one ioctl is half of it. */
	printf("null job (SUBMIT 1 NOP + syncobj wait): %.2f us; "
	       "DRM_IOCTL_VERSION: %.2f us; ratio %.1fx (goal <= 3x)\n",
	       job_us, ioctl_us / 2, job_us / (ioctl_us / 2));
	/* Where it goes: the ioctl itself, then queueing, the device and the
	 * interrupt until the syncobj signals. */
	printf("  of which SUBMIT ioctl %.2f us (%.1fx DRM_IOCTL_VERSION), "
	       "submit to signalled %.2f us\n",
	       submit_us, submit_us / (ioctl_us / 2), job_us - submit_us);
	munmap(cmd, bi.size);
	close(fd);
}

static double copy_gbs(void *dst, const void *src, size_t bytes,
		       enum vnpu_memcpy_kind kind, int reps)
{
	double t = bench_now();

	for (int i = 0; i < reps; i++)
		RT(vnpu_memcpy(dst, src, bytes, kind));
	return (double)bytes * reps / (bench_now() - t) / 1e9;
}

static void bench_copies(size_t bytes, int reps)
{
	void *d, *pin_src, *pin_dst;
	char *host = bench_alloc(bytes), *host2 = bench_alloc(bytes);
	double t, memcpy_gbs, h2d, d2h, h2d_pin, d2h_pin;
	struct vnpu_device_props p;

	setenv("VNPU_BACKEND", "drm", 0);
	RT(vnpu_init());
	RT(vnpu_device_properties(0, &p));
	RT(vnpu_malloc(&d, bytes));
	RT(vnpu_host_malloc(&pin_src, bytes));
	RT(vnpu_host_malloc(&pin_dst, bytes));
	memset(pin_src, 3, bytes);
	RT(vnpu_memcpy(d, host, bytes, VNPU_MEMCPY_H2D));
	t = bench_now();
	for (int i = 0; i < reps; i++)
		memcpy(host2, host, bytes);
	memcpy_gbs = (double)bytes * reps / (bench_now() - t) / 1e9;
	h2d = copy_gbs(d, host, bytes, VNPU_MEMCPY_H2D, reps);
	d2h = copy_gbs(host2, d, bytes, VNPU_MEMCPY_D2H, reps);
	h2d_pin = copy_gbs(d, pin_src, bytes, VNPU_MEMCPY_H2D, reps);
	d2h_pin = copy_gbs(pin_dst, d, bytes, VNPU_MEMCPY_D2H, reps);
	printf("copies of %zu MiB on %s (backend %s): memcpy %.2f GB/s\n",
	       bytes >> 20, p.name, p.backend, memcpy_gbs);
	printf("  H2D pageable %.3f GB/s (%.3fx memcpy), pinned %.3f GB/s "
	       "(%.3fx)\n",
	       h2d, h2d / memcpy_gbs, h2d_pin, h2d_pin / memcpy_gbs);
	printf("  D2H pageable %.3f GB/s (%.3fx memcpy), pinned %.3f GB/s "
	       "(%.3fx)\n",
	       d2h, d2h / memcpy_gbs, d2h_pin, d2h_pin / memcpy_gbs);
	RT(vnpu_free(d));
	RT(vnpu_host_free(pin_src));
	RT(vnpu_host_free(pin_dst));
	RT(vnpu_finalize());
	free(host);
	free(host2);
}

int main(int argc, char **argv)
{
	int iters = 2000;
	size_t mib = 16;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
			mib = (size_t)atoi(argv[++i]);
		else
			DIE("usage: bench-drm [--iters N] [--mib M]");
	}
	if (iters < 1 || mib < 1 || mib > 1024)
		DIE("--iters >= 1, --mib 1..1024");
	bench_null_job(iters);
	bench_copies(mib << 20, 4);
	return 0;
}
