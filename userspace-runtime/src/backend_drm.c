// SPDX-License-Identifier: MIT
/*
 * The drm backend: the vnpu kernel driver (kernel-module/) through libdrm
 * on /dev/accel/accel* (include/uapi/drm/vnpu_accel.h, docs/uapi.md).
 *
 * Devices: every /dev/accel/accelN whose DRM_IOCTL_VERSION name is "vnpu",
 * in node order (libdrm's device enumeration does not list accel nodes).
 *
 * Memory: BO_CREATE gives a handle and a device VA in this file's address
 * space; host BOs are mapped for the CPU through BO_INFO's mmap offset.
 * Every BO is kept in a table sorted by VA, so that a submission can name
 * the BOs its commands touch (SUBMIT's BO list) from the VAs in them.
 *
 * Queues: one driver queue per runtime queue, each on its own hardware
 * queue. Every job is submitted with EXPLICIT_SYNC: the driver's implicit
 * sync would serialise streams whose work shares a BO (sub-allocated
 * blocks share chunks), which CUDA's model does not. A submission's commands are written into one of the queue's
 * command-buffer BOs (one page each, QUEUE_DEPTH of them, reused once
 * their job retired) and submitted as one job. The runtime numbers
 * commands, the driver numbers jobs: the backend keeps the pending jobs in
 * order with both. A job retires when BO_WAIT on its command buffer says
 * so; that also returns the job's error and the device's status of its
 * first failed command (the command buffer is in the job's BO list and only
 * that job's fence is left in it), which becomes the failure reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <xf86drm.h>

#include "backend.h"
#include "drm_node.h"
#include "internal.h"
#include "uapi/drm/vnpu_accel.h"
#include "vnpu/hw_mmu.h"
#include "vnpu/hw_status.h"

#define DRM_MAX_DEVICES 16
#define DRM_CMDBUF_BYTES 4096u
#define DRM_CMDBUF_CMDS (DRM_CMDBUF_BYTES / VNPU_CMD_SIZE)
#define DRM_MAX_DEPTH 256u
#define DRM_MAX_QUEUES 16u
/* Failures listed per queue to begin with; the list grows. */
#define DRM_FAILURES_INITIAL 64
/* A job error the completion-status diagnosis could not name. */
#define DRM_STATUS_UNKNOWN VNPU_STATUS_COUNT

struct drm_bo_entry {
	uint64_t va, size;
	uint32_t handle;
	void *cpu;
};

struct drm_job {
	uint64_t kseq;	     /* driver seqno; 0: failed at submission */
	uint64_t first_seq;  /* runtime seqnos of its commands */
	uint64_t last_seq;
	int32_t submit_err;  /* kseq 0: the SUBMIT error */
	uint32_t slot;
};

struct drm_queue {
	pthread_mutex_t lock;
	bool used;
	uint32_t id, syncobj;
	uint32_t slot_handle[DRM_MAX_DEPTH];
	void *slot_cpu[DRM_MAX_DEPTH];
	uint32_t free_slot[DRM_MAX_DEPTH], nfree;
	struct drm_job job[DRM_MAX_DEPTH];
	uint32_t job_head, job_count;
	uint64_t next_seq, done;
	struct rt_failures fail;
	/* BO handles of one submission (queue lock held) */
	uint32_t *bo_list;
	uint32_t bo_cap;
};

struct vnpurt_bdev {
	int fd;
	int minor;
	const struct vnpurt_config *cfg;
	uint32_t depth, nqueues, max_cmds;
	uint64_t caps;
	uint64_t va_window_size; /* no BO is larger, with its guard page */
	pthread_rwlock_t bo_lock;
	struct drm_bo_entry *bos; /* sorted by va */
	size_t nbos, bos_cap;
	pthread_mutex_t fault_lock;
	uint64_t faults_seen;
	struct drm_queue q[DRM_MAX_QUEUES];
};

/* ---- devices -------------------------------------------------------------- */

/* The minors of the vnpu accel nodes, ascending; their count. Nodes this
 * process may not open are counted in *unusable. */
static int vnpu_minors(int *minors, int max, int *unusable)
{
	int found[VNPURT_DRM_MAX_NODES], nfound, n = 0;

	*unusable = 0;
	nfound = vnpurt_drm_node_minors(found, VNPURT_DRM_MAX_NODES);
	for (int i = 0; i < nfound && n < max; i++) {
		int fd = vnpurt_drm_node_open(found[i]);

		if (fd < 0) {
			if (errno == EACCES || errno == EPERM)
				(*unusable)++;
			continue;
		}
		close(fd);
		minors[n++] = found[i];
	}
	return n;
}

static int drm_device_count(const struct vnpurt_config *cfg, char *why,
			    size_t why_len)
{
	int minors[DRM_MAX_DEVICES], unusable;
	int n = vnpu_minors(minors, DRM_MAX_DEVICES, &unusable);

	if (!n)
		snprintf(why, why_len,
			 unusable ? "/dev/accel/accel* exists but cannot be "
				    "opened (permission denied)"
				  : "no /dev/accel/accel* node with driver "
				    "\"vnpu\"");
	return n;
}

static int get_param(struct vnpurt_bdev *d, uint32_t param, uint32_t index,
		     uint64_t *value)
{
	struct drm_vnpu_get_param p = {.param = param, .index = index};

	if (drmIoctl(d->fd, DRM_IOCTL_VNPU_GET_PARAM, &p))
		return -errno;
	*value = p.value;
	return 0;
}

static uint64_t param_or_zero(struct vnpurt_bdev *d, uint32_t param)
{
	uint64_t v = 0;

	get_param(d, param, 0, &v);
	return v;
}

static void queue_release(struct vnpurt_bdev *d, struct drm_queue *q);

static void drm_close(struct vnpurt_bdev *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < DRM_MAX_QUEUES; i++) {
		if (d->fd >= 0)
			queue_release(d, &d->q[i]);
		pthread_mutex_destroy(&d->q[i].lock);
	}
	/* Closing the file releases its BOs, queues and syncobjs. */
	for (size_t i = 0; i < d->nbos; i++)
		if (d->bos[i].cpu)
			munmap(d->bos[i].cpu, d->bos[i].size);
	free(d->bos);
	if (d->fd >= 0)
		close(d->fd);
	pthread_rwlock_destroy(&d->bo_lock);
	pthread_mutex_destroy(&d->fault_lock);
	free(d);
}

static vnpu_error_t drm_open(int index, const struct vnpurt_config *cfg,
			     const struct vnpurt_va_window *window,
			     struct vnpurt_bdev **out)
{
	int minors[DRM_MAX_DEVICES], unusable;
	int n = vnpu_minors(minors, DRM_MAX_DEVICES, &unusable);
	struct vnpurt_bdev *d;
	uint64_t v = 0;

	if (index < 0 || index >= n)
		return rt_fail(VNPU_ERROR_NO_DEVICE,
			       "drm: no vnpu accel node number %d (%d found)",
			       index, n);
	d = calloc(1, sizeof(*d));
	if (!d)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY, "drm: allocating");
	d->fd = -1;
	d->cfg = cfg;
	d->minor = minors[index];
	pthread_rwlock_init(&d->bo_lock, NULL);
	pthread_mutex_init(&d->fault_lock, NULL);
	for (unsigned i = 0; i < DRM_MAX_QUEUES; i++)
		pthread_mutex_init(&d->q[i].lock, NULL);
	d->fd = vnpurt_drm_node_open(d->minor);
	if (d->fd < 0) {
		drm_close(d);
		return rt_fail(VNPU_ERROR_BACKEND_UNAVAILABLE,
			       "drm: opening /dev/accel/accel%d: %s",
			       minors[index], strerror(errno));
	}
	if (get_param(d, DRM_VNPU_PARAM_QUEUE_DEPTH, 0, &v) || !v) {
		drm_close(d);
		return rt_fail(VNPU_ERROR_DEVICE_ERROR,
			       "drm: GET_PARAM(QUEUE_DEPTH) failed: %s",
			       strerror(errno));
	}
	d->depth = v < DRM_MAX_DEPTH ? (uint32_t)v : DRM_MAX_DEPTH;
	d->nqueues = (uint32_t)param_or_zero(d, DRM_VNPU_PARAM_NUM_HW_QUEUES);
	if (d->nqueues > DRM_MAX_QUEUES)
		d->nqueues = DRM_MAX_QUEUES;
	v = param_or_zero(d, DRM_VNPU_PARAM_MAX_SUBMIT_CMDS);
	d->max_cmds = v < DRM_CMDBUF_CMDS ? (uint32_t)v : DRM_CMDBUF_CMDS;
	d->caps = param_or_zero(d, DRM_VNPU_PARAM_CAPABILITIES);
	d->faults_seen = param_or_zero(d, DRM_VNPU_PARAM_FAULT_COUNT);
	if (!d->nqueues || d->max_cmds < 2 * RT_MAX_SUBMIT_CMDS) {
		drm_close(d);
		return rt_fail(VNPU_ERROR_DEVICE_ERROR,
			       "drm: the driver reports %u hardware queues and "
			       "%u commands per submission",
			       d->nqueues, d->max_cmds);
	}
	/* Every BO of this file inside the window the process reserved. */
	d->va_window_size = window->size;
	{
		struct drm_vnpu_va_range r = {
			.start = window->start,
			.end = window->start + window->size,
		};

		if (drmIoctl(d->fd, DRM_IOCTL_VNPU_VA_RANGE, &r)) {
			int e = errno;

			drm_close(d);
			return rt_fail(VNPU_ERROR_DEVICE_ERROR,
				       "drm: VA_RANGE [0x%llx, 0x%llx): %s%s",
				       (unsigned long long)r.start,
				       (unsigned long long)r.end, strerror(e),
				       e == EINVAL || e == ENOTTY
					       ? " (a vnpu.ko without VA_RANGE?)"
					       : "");
		}
	}
	*out = d;
	return VNPU_SUCCESS;
}

static void drm_query(struct vnpurt_bdev *d, struct vnpurt_dev_info *info)
{
	uint64_t used, limit = 0, user_used = 0;

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "vnpu (drm accel%d)",
		 d->minor);
	info->hw_version = (uint32_t)param_or_zero(d, DRM_VNPU_PARAM_HW_VERSION);
	info->fw_version = (uint32_t)param_or_zero(d, DRM_VNPU_PARAM_FW_VERSION);
	snprintf(info->fw_build, sizeof(info->fw_build), "vnpu.ko firmware");
	info->cores = (uint32_t)param_or_zero(d, DRM_VNPU_PARAM_NUM_CORES);
	info->queues = d->nqueues;
	info->vram_size = param_or_zero(d, DRM_VNPU_PARAM_VRAM_SIZE);
	used = param_or_zero(d, DRM_VNPU_PARAM_VRAM_USED);
	info->vram_free = used < info->vram_size ? info->vram_size - used : 0;
	/* Free to this file: no more than its user's share leaves (a driver
	 * without the parameters has no shares). */
	if (!get_param(d, DRM_VNPU_PARAM_QUOTA_LIMIT, DRM_VNPU_QUOTA_VRAM,
		       &limit) &&
	    !get_param(d, DRM_VNPU_PARAM_QUOTA_USED, DRM_VNPU_QUOTA_VRAM,
		       &user_used)) {
		uint64_t left = user_used < limit ? limit - user_used : 0;

		if (left < info->vram_free)
			info->vram_free = left;
	}
	/* Runtime ops in flight per queue; SUBMIT's -EBUSY bounds the rest. */
	info->ring_entries = 2 * d->max_cmds;
	info->reset_count =
		(uint32_t)param_or_zero(d, DRM_VNPU_PARAM_RESET_COUNT);
}

/* ---- BOs ------------------------------------------------------------------ */

/* Index of the first BO whose va > key (bo lock held). */
static size_t bo_upper(struct vnpurt_bdev *d, uint64_t key)
{
	size_t lo = 0, hi = d->nbos;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->bos[mid].va <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The BO containing va, or NULL (bo lock held). */
static const struct drm_bo_entry *bo_find(struct vnpurt_bdev *d, uint64_t va)
{
	size_t i = bo_upper(d, va);

	if (!i)
		return NULL;
	i--;
	return va - d->bos[i].va < d->bos[i].size ? &d->bos[i] : NULL;
}

static bool bo_insert(struct vnpurt_bdev *d, const struct drm_bo_entry *e)
{
	size_t i;

	pthread_rwlock_wrlock(&d->bo_lock);
	if (d->nbos == d->bos_cap) {
		size_t cap = d->bos_cap ? 2 * d->bos_cap : 64;
		struct drm_bo_entry *n = realloc(d->bos, cap * sizeof(*n));

		if (!n) {
			pthread_rwlock_unlock(&d->bo_lock);
			return false;
		}
		d->bos = n;
		d->bos_cap = cap;
	}
	i = bo_upper(d, e->va);
	memmove(&d->bos[i + 1], &d->bos[i], (d->nbos - i) * sizeof(*d->bos));
	d->bos[i] = *e;
	d->nbos++;
	pthread_rwlock_unlock(&d->bo_lock);
	return true;
}

static void bo_remove(struct vnpurt_bdev *d, uint64_t va)
{
	size_t i;

	pthread_rwlock_wrlock(&d->bo_lock);
	i = bo_upper(d, va);
	if (i && d->bos[i - 1].va == va) {
		i--;
		memmove(&d->bos[i], &d->bos[i + 1],
			(d->nbos - i - 1) * sizeof(*d->bos));
		d->nbos--;
	}
	pthread_rwlock_unlock(&d->bo_lock);
}

static void gem_close(struct vnpurt_bdev *d, uint32_t handle)
{
	struct drm_gem_close c = {.handle = handle};

	drmIoctl(d->fd, DRM_IOCTL_GEM_CLOSE, &c);
}

/* Creates a BO, maps host BOs for the CPU; no table entry. */
static int bo_new(struct vnpurt_bdev *d, uint64_t size, bool vram,
		  struct drm_bo_entry *e)
{
	struct drm_vnpu_bo_create c = {.size = size};
	struct drm_vnpu_bo_info info;
	void *cpu = NULL;
	int err;

	c.flags = vram ? DRM_VNPU_BO_VRAM : 0;
	if (drmIoctl(d->fd, DRM_IOCTL_VNPU_BO_CREATE, &c))
		return -errno;
	memset(&info, 0, sizeof(info));
	info.handle = c.handle;
	if (drmIoctl(d->fd, DRM_IOCTL_VNPU_BO_INFO, &info)) {
		err = -errno;
		gem_close(d, c.handle);
		return err;
	}
	if (!vram) {
		cpu = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED,
			   d->fd, (off_t)info.mmap_offset);
		if (cpu == MAP_FAILED) {
			err = -errno;
			gem_close(d, c.handle);
			return err;
		}
	}
	e->va = info.device_va;
	e->size = info.size;
	e->handle = c.handle;
	e->cpu = cpu;
	return 0;
}

static void bo_delete(struct vnpurt_bdev *d, struct drm_bo_entry *e)
{
	if (e->cpu)
		munmap(e->cpu, e->size);
	gem_close(d, e->handle);
}

/*
 * BO_CREATE ran short of memory (err: its -errno): the detail says whether
 * the device's (or the machine's) memory is exhausted or the driver's
 * per-user share is reached (-EDQUOT, docs/uapi.md "Limits"), with sizes.
 */
static vnpu_error_t bo_nomem(struct vnpurt_bdev *d, int err, uint64_t size,
			     bool vram)
{
	const char *what = vram ? "VRAM" : "pinned memory";
	uint32_t res = vram ? DRM_VNPU_QUOTA_VRAM : DRM_VNPU_QUOTA_PINNED;
	unsigned long long limit, used;
	uint64_t v = 0;

	if (err == -EDQUOT) {
		if (get_param(d, DRM_VNPU_PARAM_QUOTA_LIMIT, res, &v))
			return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
				       "the driver's per-user limit of %s is "
				       "reached: %llu bytes asked",
				       what, (unsigned long long)size);
		limit = v;
		used = get_param(d, DRM_VNPU_PARAM_QUOTA_USED, res, &v) ? 0 : v;
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "the driver's per-user limit of %s is reached: "
			       "%llu bytes asked, this user holds %llu of its "
			       "%llu",
			       what, (unsigned long long)size, used, limit);
	}
	if (!vram)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "host memory exhausted (%s): %llu bytes of "
			       "pinned memory asked",
			       strerror(-err), (unsigned long long)size);
	return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
		       "device memory exhausted (%s): %llu bytes asked, %llu "
		       "of %llu bytes of VRAM in use",
		       strerror(-err), (unsigned long long)size,
		       (unsigned long long)param_or_zero(
			       d, DRM_VNPU_PARAM_VRAM_USED),
		       (unsigned long long)param_or_zero(
			       d, DRM_VNPU_PARAM_VRAM_SIZE));
}

static vnpu_error_t drm_bo_create(struct vnpurt_bdev *d, uint64_t size,
				  enum vnpurt_domain domain,
				  struct vnpurt_bo *bo)
{
	bool vram = domain == VNPURT_DOMAIN_VRAM;
	struct drm_bo_entry e;
	int err;

	/* Its VA and guard page could never fit: no use asking. */
	if (!size || size > d->va_window_size - VNPU_PAGE_SIZE)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "more than the device's address space");
	err = bo_new(d, size, vram, &e);
	if (err == -ENOMEM || err == -ENOSPC || err == -EDQUOT)
		return bo_nomem(d, err, size, vram);
	if (err)
		return rt_fail(VNPU_ERROR_DEVICE_ERROR,
			       "drm: creating a %llu-byte BO: %s",
			       (unsigned long long)size, strerror(-err));
	if (!bo_insert(d, &e)) {
		bo_delete(d, &e);
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "host memory exhausted: no room to list a BO");
	}
	bo->va = e.va;
	bo->cpu = e.cpu;
	bo->size = e.size;
	bo->domain = domain;
	bo->handle = e.handle;
	return VNPU_SUCCESS;
}

static void drm_bo_free(struct vnpurt_bdev *d, struct vnpurt_bo *bo)
{
	struct drm_bo_entry e = {bo->va, bo->size, (uint32_t)bo->handle,
				 bo->cpu};

	bo_remove(d, bo->va);
	bo_delete(d, &e);
	memset(bo, 0, sizeof(*bo));
}

/* ---- queues --------------------------------------------------------------- */

static void queue_release(struct vnpurt_bdev *d, struct drm_queue *q)
{
	for (uint32_t i = 0; i < d->depth; i++) {
		if (!q->slot_handle[i])
			continue;
		if (q->slot_cpu[i])
			munmap(q->slot_cpu[i], DRM_CMDBUF_BYTES);
		gem_close(d, q->slot_handle[i]);
		q->slot_handle[i] = 0;
		q->slot_cpu[i] = NULL;
	}
	if (q->id) {
		struct drm_vnpu_queue_destroy qd = {.queue_id = q->id};

		/* The queue's syncobj handle stays with the file. */
		drmIoctl(d->fd, DRM_IOCTL_VNPU_QUEUE_DESTROY, &qd);
		if (q->syncobj)
			drmSyncobjDestroy(d->fd, q->syncobj);
	}
	rt_failures_fini(&q->fail);
	free(q->bo_list);
	q->bo_list = NULL;
	q->id = q->syncobj = 0;
	q->used = false;
}

static vnpu_error_t queue_setup(struct vnpurt_bdev *d, struct drm_queue *q,
				unsigned hw_queue)
{
	struct drm_vnpu_queue_create qc = {.hw_queue = hw_queue};

	q->bo_cap = 64;
	q->bo_list = calloc(q->bo_cap, sizeof(*q->bo_list));
	if (!rt_failures_init(&q->fail, DRM_FAILURES_INITIAL) || !q->bo_list)
		return VNPU_ERROR_OUT_OF_MEMORY;
	q->job_head = q->job_count = 0;
	q->next_seq = 1;
	q->done = 0;
	q->nfree = 0;
	for (uint32_t i = 0; i < d->depth; i++) {
		struct drm_bo_entry e;

		if (bo_new(d, DRM_CMDBUF_BYTES, false, &e))
			return VNPU_ERROR_OUT_OF_MEMORY;
		q->slot_handle[i] = e.handle;
		q->slot_cpu[i] = e.cpu;
		q->free_slot[q->nfree++] = d->depth - 1 - i;
	}
	if (drmIoctl(d->fd, DRM_IOCTL_VNPU_QUEUE_CREATE, &qc))
		return errno == ENOSPC ? VNPU_ERROR_OUT_OF_MEMORY
				       : rt_fail(VNPU_ERROR_DEVICE_ERROR,
						 "drm: QUEUE_CREATE: %s",
						 strerror(errno));
	q->id = qc.queue_id;
	q->syncobj = qc.syncobj;
	return VNPU_SUCCESS;
}

static vnpu_error_t drm_queue_create(struct vnpurt_bdev *d, int priority,
				     unsigned *queue)
{
	for (unsigned i = 0; i < d->nqueues; i++) {
		struct drm_queue *q = &d->q[i];
		vnpu_error_t err;

		pthread_mutex_lock(&q->lock);
		if (q->used) {
			pthread_mutex_unlock(&q->lock);
			continue;
		}
		/* One driver queue per hardware queue: streams spread. */
		err = queue_setup(d, q, i);
		if (err) {
			queue_release(d, q);
			pthread_mutex_unlock(&q->lock);
			return err;
		}
		q->used = true;
		pthread_mutex_unlock(&q->lock);
		*queue = i;
		return VNPU_SUCCESS;
	}
	return VNPU_ERROR_OUT_OF_MEMORY;
}

static void drm_queue_destroy(struct vnpurt_bdev *d, unsigned queue)
{
	struct drm_queue *q = &d->q[queue];

	pthread_mutex_lock(&q->lock);
	queue_release(d, q);
	pthread_mutex_unlock(&q->lock);
}

/* ---- failures ------------------------------------------------------------- */

/*
 * The failures of a job the driver finished with w->job_error (< 0): the
 * device's status of its first failed command (BO_WAIT's job_status,
 * job_info, job_cmd, from the completion record), or the driver's reason
 * when no command failed on the device (hang, ban, removal).
 */
static void job_failure(struct vnpurt_bdev *d, struct drm_queue *q,
			const struct drm_job *j,
			const struct drm_vnpu_bo_wait *w)
{
	uint64_t ncmds = j->last_seq - j->first_seq + 1;
	struct vnpurt_failure f = {
		.first_seq = j->first_seq,
		.last_seq = j->last_seq,
		.status = DRM_STATUS_UNKNOWN,
		.info = (uint64_t)-(int64_t)w->job_error,
	};

	if (w->job_status > VNPU_STATUS_OK && w->job_status < VNPU_STATUS_COUNT) {
		f.status = w->job_status;
		f.info = w->job_info;
		if (w->job_status != VNPU_STATUS_CONTEXT_FAULTED &&
		    w->job_cmd < ncmds)
			f.first_seq = f.last_seq = j->first_seq + w->job_cmd;
	} else if (w->job_error == -ETIMEDOUT || w->job_error == -ECANCELED ||
		   w->job_error == -ENODEV ||
		   w->job_status == VNPU_STATUS_LOST) {
		/* LOST: that command was executing at a reset; neither it
		 * nor the later ones ran again. */
		f.status = VNPURT_STATUS_DEVICE_RESET;
		if (w->job_status == VNPU_STATUS_LOST && w->job_cmd < ncmds)
			f.first_seq = j->first_seq + w->job_cmd;
	}
	if (f.status == VNPU_STATUS_MMU_FAULT) {
		uint64_t count = 0, st = 0;

		/* The reason and direction are in the fault registers. */
		pthread_mutex_lock(&d->fault_lock);
		if (!get_param(d, DRM_VNPU_PARAM_FAULT_COUNT, 0, &count) &&
		    count > d->faults_seen &&
		    !get_param(d, DRM_VNPU_PARAM_FAULT_STATUS, 0, &st)) {
			d->faults_seen = count;
			f.fault_reason = VNPU_FAULT_REASON((uint32_t)st);
			f.fault_write = st & VNPU_FAULT_WRITE;
		}
		pthread_mutex_unlock(&d->fault_lock);
	}
	rt_failures_push(&q->fail, &f);
	/* The rest of a faulted job did not run. */
	if (f.status == VNPU_STATUS_MMU_FAULT && f.last_seq < j->last_seq) {
		f = (struct vnpurt_failure){
			.first_seq = f.last_seq + 1,
			.last_seq = j->last_seq,
			.status = VNPU_STATUS_CONTEXT_FAULTED,
		};
		rt_failures_push(&q->fail, &f);
	}
}

/* Retires the finished jobs in order (queue lock held). */
static void retire(struct vnpurt_bdev *d, struct drm_queue *q)
{
	uint64_t signaled = 0;
	bool queried = false;

	while (q->job_count) {
		struct drm_job *j = &q->job[q->job_head];
		struct drm_vnpu_bo_wait w = {0};

		if (j->kseq) {
			/* One query of the timeline's signaled point says
			 * which jobs are done; BO_WAIT (polling) then reads
			 * each one's error and device status. */
			if (!queried &&
			    drmSyncobjQuery(d->fd, &q->syncobj, &signaled, 1))
				break;
			queried = true;
			if (j->kseq > signaled)
				break;
		}
		if (j->kseq) {
			w.handle = q->slot_handle[j->slot];
			if (drmIoctl(d->fd, DRM_IOCTL_VNPU_BO_WAIT, &w))
				break;
		} else {
			w.job_error = j->submit_err;
		}
		if (w.job_error)
			job_failure(d, q, j, &w);
		if (j->kseq)
			q->free_slot[q->nfree++] = j->slot;
		q->done = j->last_seq;
		q->job_head = (q->job_head + 1) % DRM_MAX_DEPTH;
		q->job_count--;
	}
}

/* Waits for driver seqno kseq of q until the absolute time deadline_ns;
 * false on timeout. Called without the queue lock. */
static bool wait_kseq(struct vnpurt_bdev *d, uint32_t syncobj, uint64_t kseq,
		      int64_t deadline_ns)
{
	int r = drmSyncobjTimelineWait(d->fd, &syncobj, &kseq, 1, deadline_ns,
				       0, NULL);

	return r != -ETIME && r != -ETIMEDOUT;
}

/* ---- submission ----------------------------------------------------------- */

static bool bo_list_add(struct drm_queue *q, uint32_t *n, uint32_t handle)
{
	for (uint32_t i = 0; i < *n; i++)
		if (q->bo_list[i] == handle)
			return true;
	if (*n == q->bo_cap) {
		uint32_t cap = q->bo_cap * 2;
		uint32_t *nl = realloc(q->bo_list, cap * sizeof(*nl));

		if (!nl)
			return false;
		q->bo_list = nl;
		q->bo_cap = cap;
	}
	q->bo_list[(*n)++] = handle;
	return true;
}

/* Adds every BO that [va, va + size) overlaps (bo lock held). */
static bool bo_list_range(struct vnpurt_bdev *d, struct drm_queue *q,
			  uint32_t *n, uint64_t va, uint64_t size)
{
	uint64_t end;
	size_t i;

	if (!size)
		size = 1;
	if (__builtin_add_overflow(va, size, &end))
		end = UINT64_MAX;
	i = bo_upper(d, va);
	if (i && va - d->bos[i - 1].va < d->bos[i - 1].size)
		i--;
	for (; i < d->nbos && d->bos[i].va < end; i++)
		if (!bo_list_add(q, n, d->bos[i].handle))
			return false;
	return true;
}

/* The launch's argument block and the buffers it names (bo lock held). */
static bool bo_list_launch(struct vnpurt_bdev *d, struct drm_queue *q,
			   uint32_t *n, const struct vnpu_cmd_launch *c)
{
	const struct drm_bo_entry *bo = bo_find(d, c->args_va);
	struct vnpu_kargs_header hdr;
	const uint8_t *args;
	uint64_t off;

	if (!bo_list_range(d, q, n, c->args_va, c->args_size))
		return false;
	if (!bo || !bo->cpu)
		return true;
	off = c->args_va - bo->va;
	if (c->args_size < sizeof(hdr) || c->args_size > bo->size - off)
		return true;
	args = (const uint8_t *)bo->cpu + off;
	memcpy(&hdr, args, sizeof(hdr));
	for (uint32_t i = 0; i < hdr.num_buffers && i < VNPU_KARGS_MAX_BUFFERS;
	     i++) {
		struct vnpu_kargs_buffer kb;

		if (sizeof(hdr) + (i + 1) * sizeof(kb) > c->args_size)
			break;
		memcpy(&kb, args + sizeof(hdr) + i * sizeof(kb), sizeof(kb));
		if (!bo_list_range(d, q, n, kb.va, kb.size))
			return false;
	}
	return true;
}

/* Fills q->bo_list with the command buffer and every BO the commands
 * reference; returns the count, or -1 without memory. */
static int build_bo_list(struct vnpurt_bdev *d, struct drm_queue *q,
			 uint32_t slot, const struct vnpu_cmd *cmds,
			 unsigned ncmds)
{
	uint32_t n = 0;
	bool ok = true;

	q->bo_list[n++] = q->slot_handle[slot];
	pthread_rwlock_rdlock(&d->bo_lock);
	for (unsigned i = 0; i < ncmds && ok; i++) {
		const struct vnpu_cmd *c = &cmds[i];

		switch (c->hdr.opcode) {
		case VNPU_OP_KERNEL_LAUNCH:
			ok = bo_list_launch(d, q, &n, &c->launch);
			break;
		case VNPU_OP_DMA_COPY:
			ok = bo_list_range(d, q, &n, c->copy.src_va,
					   c->copy.size) &&
			     bo_list_range(d, q, &n, c->copy.dst_va,
					   c->copy.size);
			break;
		case VNPU_OP_FILL:
			ok = bo_list_range(d, q, &n, c->fill.dst_va,
					   c->fill.size);
			break;
		case VNPU_OP_FENCE_SIGNAL:
		case VNPU_OP_FENCE_WAIT:
			ok = bo_list_range(d, q, &n, c->fence.va, 8);
			break;
		case VNPU_OP_TIMESTAMP:
			ok = bo_list_range(d, q, &n, c->timestamp.va, 8);
			break;
		default:
			break;
		}
	}
	pthread_rwlock_unlock(&d->bo_lock);
	return ok ? (int)n : -1;
}

/* Waits for the oldest pending job of q (queue lock held, dropped while
 * waiting) and retires what finished. */
static void wait_oldest(struct vnpurt_bdev *d, struct drm_queue *q)
{
	struct drm_job *j;
	uint64_t kseq;

	retire(d, q);
	if (!q->job_count)
		return;
	j = &q->job[q->job_head];
	kseq = j->kseq;
	if (kseq) {
		uint32_t syncobj = q->syncobj;

		pthread_mutex_unlock(&q->lock);
		wait_kseq(d, syncobj, kseq,
			  (int64_t)(rt_now_ns() + RT_WAIT_SLICE_MS * 1000000ull));
		pthread_mutex_lock(&q->lock);
	}
	retire(d, q);
}

static vnpu_error_t drm_submit(struct vnpurt_bdev *d, unsigned qi,
			       const struct vnpu_cmd *cmds, unsigned n,
			       uint64_t *seqno)
{
	struct drm_queue *q = &d->q[qi];
	struct drm_vnpu_submit s;
	struct vnpu_cmd *buf;
	struct drm_job *j;
	uint32_t slot;
	int nbos, err;

	if (qi >= DRM_MAX_QUEUES || !n || n > d->max_cmds)
		return VNPU_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&q->lock);
	if (!q->used) {
		pthread_mutex_unlock(&q->lock);
		return VNPU_ERROR_INVALID_VALUE;
	}
	while (!q->nfree || q->job_count == DRM_MAX_DEPTH) {
		retire(d, q);
		if (!q->nfree || q->job_count == DRM_MAX_DEPTH)
			wait_oldest(d, q);
	}
	slot = q->free_slot[--q->nfree];
	buf = q->slot_cpu[slot];
	for (unsigned i = 0; i < n; i++) {
		buf[i] = cmds[i];
		/* The driver assigns its own; these name the runtime's. */
		buf[i].hdr.seqno = q->next_seq + i;
		buf[i].hdr.flags = 0;
	}
	nbos = build_bo_list(d, q, slot, cmds, n);
	if (nbos < 0) {
		q->free_slot[q->nfree++] = slot;
		pthread_mutex_unlock(&q->lock);
		return VNPU_ERROR_OUT_OF_MEMORY;
	}
	for (;;) {
		memset(&s, 0, sizeof(s));
		/* Streams order through events only (CUDA's rule): no job
		 * waits for another because both touch one BO. */
		s.flags = DRM_VNPU_SUBMIT_EXPLICIT_SYNC;
		s.queue_id = q->id;
		s.cmd_bo = q->slot_handle[slot];
		s.cmd_count = n;
		s.bo_handles = (uintptr_t)q->bo_list;
		s.bo_count = (uint32_t)nbos;
		err = drmIoctl(d->fd, DRM_IOCTL_VNPU_SUBMIT, &s) ? errno : 0;
		if (err != EBUSY)
			break;
		/* The driver's queue is full, or the file's jobs are at
		 * their limit: let this queue's oldest job finish, or, with
		 * none, the file's other queues' (for a moment, unlocked).
		 * The BO list stays valid: BOs are freed only when idle. */
		retire(d, q);
		if (q->job_count) {
			wait_oldest(d, q);
		} else {
			struct timespec ts = {0, 200000};

			pthread_mutex_unlock(&q->lock);
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&q->lock);
		}
	}
	if (err && err != ECANCELED && err != ENODEV) {
		q->free_slot[q->nfree++] = slot;
		pthread_mutex_unlock(&q->lock);
		if (err == EPERM)
			return rt_fail(VNPU_ERROR_UNSUPPORTED,
				       "drm: the driver refuses test commands "
				       "(vnpu.ko without test injection)");
		return rt_fail(err == ENOMEM ? VNPU_ERROR_OUT_OF_MEMORY
					     : VNPU_ERROR_DEVICE_ERROR,
			       "drm: SUBMIT of %u commands: %s", n,
			       strerror(err));
	}
	j = &q->job[(q->job_head + q->job_count) % DRM_MAX_DEPTH];
	j->first_seq = q->next_seq;
	j->last_seq = q->next_seq + n - 1;
	if (err) {
		/* The context is banned after a hang or the device is gone:
		 * the work retires failed, in order, like lost work. */
		j->kseq = 0;
		j->submit_err = -err;
		q->free_slot[q->nfree++] = slot;
	} else {
		j->kseq = s.seqno;
		j->submit_err = 0;
		j->slot = slot;
	}
	q->job_count++;
	q->next_seq += n;
	*seqno = j->last_seq;
	pthread_mutex_unlock(&q->lock);
	return VNPU_SUCCESS;
}

static uint64_t drm_completed(struct vnpurt_bdev *d, unsigned qi)
{
	struct drm_queue *q = &d->q[qi];
	uint64_t done;

	pthread_mutex_lock(&q->lock);
	retire(d, q);
	done = q->done;
	pthread_mutex_unlock(&q->lock);
	return done;
}

static vnpu_error_t drm_wait(struct vnpurt_bdev *d, unsigned qi,
			     uint64_t seqno, unsigned timeout_ms)
{
	struct drm_queue *q = &d->q[qi];
	int64_t deadline = (int64_t)(rt_now_ns() + timeout_ms * 1000000ull);

	for (;;) {
		uint64_t kseq = 0;
		uint32_t syncobj;

		pthread_mutex_lock(&q->lock);
		retire(d, q);
		if (q->done >= seqno) {
			pthread_mutex_unlock(&q->lock);
			return VNPU_SUCCESS;
		}
		/* The first job not retired that holds seqno or precedes it:
		 * jobs retire in order. */
		for (uint32_t i = 0; i < q->job_count; i++) {
			const struct drm_job *j =
				&q->job[(q->job_head + i) % DRM_MAX_DEPTH];

			if (j->kseq)
				kseq = j->kseq;
			if (j->last_seq >= seqno)
				break;
		}
		syncobj = q->syncobj;
		pthread_mutex_unlock(&q->lock);
		if ((int64_t)rt_now_ns() >= deadline)
			return VNPU_ERROR_TIMEOUT;
		/* The driver detects hangs and resets the device; a reset
		 * fails the guilty job and signals its fence. */
		if (!kseq) {
			/* seqno was never submitted: nothing will retire it. */
			struct timespec ts = {0, 1000000};

			nanosleep(&ts, NULL);
			continue;
		}
		if (!wait_kseq(d, syncobj, kseq, deadline))
			return VNPU_ERROR_TIMEOUT;
	}
}

static bool drm_take_failure(struct vnpurt_bdev *d, unsigned qi,
			     struct vnpurt_failure *f)
{
	struct drm_queue *q = &d->q[qi];
	bool got;

	pthread_mutex_lock(&q->lock);
	got = rt_failures_take(&q->fail, f);
	pthread_mutex_unlock(&q->lock);
	return got;
}

static bool drm_lost(struct vnpurt_bdev *d, char *why, size_t why_len)
{
	/* The driver resets the device itself; a context it banned, or a
	 * device that went away, fails each job (ECANCELED, ENODEV), and
	 * those failures reach the runtime like any other. */
	return false;
}

static bool drm_test_mode(struct vnpurt_bdev *d)
{
	return d->caps & DRM_VNPU_CAP_TEST_INJECT;
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
	.lost = drm_lost,
	.test_mode = drm_test_mode,
};
