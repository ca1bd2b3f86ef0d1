// SPDX-License-Identifier: MIT
/*
 * The driver path, measured in the guest (benchmarks, no asserts), each
 * figure the median of per-call timings, the kinds interleaved in chunks
 * so that all see the same machine:
 *  - the null ioctl (one DRM_IOCTL_VERSION), the SUBMIT ioctl of one NOP
 *    (goal <= 3x the null ioctl) and the null-job round trip (SUBMIT and
 *    the wait on its point of the queue's timeline syncobj);
 *  - with --blk DEV, the same round trip on QEMU's best-tuned device in the
 *    same VM: a 512-byte O_DIRECT read of virtio-blk (doorbell, work on a
 *    host thread, completion interrupt; scripts/vm.sh --bench-disk);
 *    goal: the null job <= 1.0x it;
 *  - bursts of small jobs (a 64-byte FILL each, run by the device's
 *    command processor) submitted back to back: time and interrupts per
 *    job (the device coalesces queue interrupts until the driver clears
 *    them; a lone job's is never held back);
 *  - H2D / D2H bandwidth through the runtime on the drm backend, pageable
 *    and pinned, against memcpy of the same size in the same run.
 *
 *   bench-drm [--iters N] [--mib M] [--blk DEV]
 *
 * --mib 0 measures the round trips only (scripts/vm-profile.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xf86drm.h>

#include "bench.h"
#include "drm_node.h"
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

/* The first accel node whose driver is vnpu. */
static int open_vnpu(void)
{
	int minors[VNPURT_DRM_MAX_NODES];
	int n = vnpurt_drm_node_minors(minors, VNPURT_DRM_MAX_NODES);

	for (int i = 0; i < n; i++) {
		int fd = vnpurt_drm_node_open(minors[i]);

		if (fd >= 0)
			return fd;
	}
	DIE("no /dev/accel/accel* node with driver \"vnpu\"");
}

static double median_us(double *v, int n)
{
	return bench_median(v, n) * 1e6;
}

struct rt_bench {
	int fd, blk;
	uint32_t queue, bo, syncobj;
	uint32_t data_bo; /* the bursts' FILL target */
	void *sector;
};

/* Interrupts the vnpu vectors have taken, over all CPUs (/proc/interrupts). */
static long vnpu_interrupts(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	long sum = 0;

	if (!f)
		DIE("/proc/interrupts: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (!p || !strstr(line, " vnpu"))
			continue;
		for (p++;;) {
			char *end;
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
	}
	fclose(f);
	return sum;
}

/* Waits for point `point` of the queue's timeline. */
static void wait_point(const struct rt_bench *b, uint64_t point)
{
	uint32_t syncobj = b->syncobj;
	int r = drmSyncobjTimelineWait(b->fd, &syncobj, &point, 1, INT64_MAX, 0,
				       NULL);

	if (r)
		DIE("syncobj wait: %s", strerror(-r));
}

/* `jobs` one-FILL jobs (cmds[1]) submitted back to back, then the wait
 * for the last; returns the time, *irqs the interrupts taken meanwhile. */
static double one_burst(const struct rt_bench *b, int jobs, long *irqs)
{
	struct drm_vnpu_submit sub = {
		.flags = DRM_VNPU_SUBMIT_EXPLICIT_SYNC,
		.queue_id = b->queue,
		.cmd_bo = b->bo,
		.cmd_offset = VNPU_CMD_SIZE,
		.cmd_count = 1,
		.bo_handles = (uintptr_t)&b->data_bo,
		.bo_count = 1,
	};
	long before = vnpu_interrupts();
	double t0 = bench_now(), t;

	for (int i = 0; i < jobs; i++)
		if (drmIoctl(b->fd, DRM_IOCTL_VNPU_SUBMIT, &sub))
			DIE("SUBMIT: %s", strerror(errno));
	wait_point(b, sub.seqno);
	t = bench_now() - t0;
	*irqs = vnpu_interrupts() - before;
	return t;
}

/* One DRM_IOCTL_VERSION with no buffers: the cheapest ioctl of the file. */
static double one_null_ioctl(const struct rt_bench *b)
{
	struct drm_version v;
	double t;

	memset(&v, 0, sizeof(v));
	t = bench_now();
	if (ioctl(b->fd, DRM_IOCTL_VERSION, &v))
		DIE("DRM_IOCTL_VERSION: %s", strerror(errno));
	return bench_now() - t;
}

/* A null job: SUBMIT of one NOP, then the wait on its syncobj point.
 * Returns the round trip, *submit the SUBMIT ioctl alone. */
static double one_null_job(const struct rt_bench *b, double *submit)
{
	struct drm_vnpu_submit sub = {
		.queue_id = b->queue,
		.cmd_bo = b->bo,
		.cmd_count = 1,
		.bo_handles = (uintptr_t)&b->bo,
		.bo_count = 1,
	};
	double t0 = bench_now();

	if (drmIoctl(b->fd, DRM_IOCTL_VNPU_SUBMIT, &sub))
		DIE("SUBMIT: %s", strerror(errno));
	*submit = bench_now() - t0;
	wait_point(b, sub.seqno);
	return bench_now() - t0;
}

/* A 512-byte read of the disk past the guest's page cache. */
static double one_blk_read(const struct rt_bench *b)
{
	double t = bench_now();

	if (pread(b->blk, b->sector, 512, 0) != 512)
		DIE("virtio-blk read: %s", strerror(errno));
	return bench_now() - t;
}

static void bench_round_trips(int iters, const char *blk)
{
	enum { CHUNKS = 20 };
	enum { BURST = 32 };
	struct drm_vnpu_bo_create bc = {.size = 4096}, dc = {.size = 4096};
	struct drm_vnpu_bo_info bi;
	struct drm_vnpu_queue_create qc = {.hw_queue = DRM_VNPU_HW_QUEUE_ANY};
	double *ioc = calloc((size_t)iters, sizeof(double));
	double *sub = calloc((size_t)iters, sizeof(double));
	double *job = calloc((size_t)iters, sizeof(double));
	double *dsk = calloc((size_t)iters, sizeof(double));
	int bursts = iters / BURST + 5;
	double *bst = calloc((size_t)bursts, sizeof(double));
	long irqs = 0;
	struct rt_bench b = {.fd = open_vnpu(), .blk = -1};
	double m_ioc, m_sub, m_job, m_dsk = 0;
	struct vnpu_cmd *cmd;

	if (!ioc || !sub || !job || !dsk || !bst)
		DIE("out of memory");
	if (drmIoctl(b.fd, DRM_IOCTL_VNPU_BO_CREATE, &bc) ||
	    drmIoctl(b.fd, DRM_IOCTL_VNPU_BO_CREATE, &dc))
		DIE("BO_CREATE: %s", strerror(errno));
	memset(&bi, 0, sizeof(bi));
	bi.handle = bc.handle;
	if (drmIoctl(b.fd, DRM_IOCTL_VNPU_BO_INFO, &bi))
		DIE("BO_INFO: %s", strerror(errno));
	cmd = mmap(NULL, bi.size, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd,
		   (off_t)bi.mmap_offset);
	if (cmd == MAP_FAILED)
		DIE("mmap: %s", strerror(errno));
	cmd[0] = vnpu_nop_cmd();
	cmd[1] = vnpu_fill_cmd(dc.device_va, 64, 0x5a5a5a5a, 4);
	if (drmIoctl(b.fd, DRM_IOCTL_VNPU_QUEUE_CREATE, &qc))
		DIE("QUEUE_CREATE: %s", strerror(errno));
	b.queue = qc.queue_id;
	b.bo = bc.handle;
	b.data_bo = dc.handle;
	b.syncobj = qc.syncobj;
	if (blk) {
		b.blk = open(blk, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (b.blk < 0)
			DIE("%s: %s", blk, strerror(errno));
		if (posix_memalign(&b.sector, 4096, 4096))
			DIE("out of memory");
	}

	/* warm-up: first faults, caches, the device's first launch */
	for (int i = 0; i < iters / 20 + 1; i++) {
		double s;

		one_null_ioctl(&b);
		one_null_job(&b, &s);
		if (blk)
			one_blk_read(&b);
	}
	for (int c = 0; c < CHUNKS; c++) {
		int lo = iters * c / CHUNKS, hi = iters * (c + 1) / CHUNKS;

		for (int i = lo; i < hi; i++)
			ioc[i] = one_null_ioctl(&b);
		for (int i = lo; i < hi; i++)
			job[i] = one_null_job(&b, &sub[i]);
		for (int i = lo; i < hi && blk; i++)
			dsk[i] = one_blk_read(&b);
	}
	for (int i = 0; i < bursts; i++) {
		long n;

		bst[i] = one_burst(&b, BURST, &n) / BURST;
		irqs += n;
	}
	m_ioc = median_us(ioc, iters);
	m_sub = median_us(sub, iters);
	m_job = median_us(job, iters);
	printf("round trips, median of %d each, interleaved in %d chunks:\n",
	       iters, CHUNKS);
	printf("  null ioctl (DRM_IOCTL_VERSION)      %8.2f us\n", m_ioc);
	printf("  SUBMIT ioctl (one NOP)              %8.2f us  %.1fx the "
	       "null ioctl (goal <= 3x)\n",
	       m_sub, m_sub / m_ioc);
	printf("  null job (SUBMIT + syncobj wait)    %8.2f us  %.1fx the "
	       "null ioctl\n",
	       m_job, m_job / m_ioc);
	if (blk) {
		m_dsk = median_us(dsk, iters);
		printf("  virtio-blk 512 B O_DIRECT read (%s) %8.2f us\n", blk,
		       m_dsk);
		printf("  null job / virtio-blk round trip    %8.2fx (goal <= "
		       "1.0x)\n",
		       m_job / m_dsk);
		free(b.sector);
		close(b.blk);
	}
	printf("  bursts of %d one-FILL jobs (%d)        %8.2f us per job, "
	       "%.2f interrupts per job\n",
	       BURST, bursts, median_us(bst, bursts),
	       (double)irqs / ((double)bursts * BURST));
	munmap(cmd, bi.size);
	close(b.fd);
	free(ioc);
	free(sub);
	free(job);
	free(dsk);
	free(bst);
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
	const char *blk = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
			mib = (size_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--blk") && i + 1 < argc)
			blk = argv[++i];
		else
			DIE("usage: bench-drm [--iters N] [--mib M] [--blk DEV]");
	}
	if (iters < 20 || mib > 1024)
		DIE("--iters >= 20, --mib 0..1024");
	bench_round_trips(iters, blk);
	if (mib)
		bench_copies(mib << 20, 4);
	return 0;
}
