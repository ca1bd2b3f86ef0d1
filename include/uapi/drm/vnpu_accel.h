/* SPDX-License-Identifier: MIT */
/*
 * vnpu DRM accel driver: user-space interface (/dev/accel/accelN, driver
 * name "vnpu"). docs/uapi.md describes every ioctl, field and error.
 *
 * Rules common to all ioctls: structs are 64-bit aligned with explicit
 * padding; every pad, reserved and flags field not defined here must be zero
 * (else -EINVAL); output fields are written only when the ioctl succeeds;
 * timeouts are absolute CLOCK_MONOTONIC times in nanoseconds; user pointers
 * are __u64. The DRM core ioctls GEM_CLOSE, PRIME_HANDLE_TO_FD,
 * PRIME_FD_TO_HANDLE and SYNCOBJ_* work on the same file.
 */
#ifndef VNPU_ACCEL_H
#define VNPU_ACCEL_H

#ifdef __KERNEL__
#include <drm/drm.h>
#else
/* With libdrm's include directory or the kernel's uapi on the path. */
#include "drm.h"
#endif

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_VNPU_GET_PARAM	0x00
#define DRM_VNPU_BO_CREATE	0x01
#define DRM_VNPU_BO_INFO	0x02
#define DRM_VNPU_BO_WAIT	0x03
#define DRM_VNPU_QUEUE_CREATE	0x04
#define DRM_VNPU_QUEUE_DESTROY	0x05
#define DRM_VNPU_SUBMIT		0x06
#define DRM_VNPU_VA_RANGE	0x07

/* GET_PARAM parameters; `index` must be 0 unless the parameter says. */
enum drm_vnpu_param {
	DRM_VNPU_PARAM_DEVICE_ID = 0,	/* PCI vendor << 16 | device */
	DRM_VNPU_PARAM_REVISION = 1,	/* PCI revision */
	DRM_VNPU_PARAM_HW_VERSION = 2,	/* HW_VERSION: major << 16 | minor */
	DRM_VNPU_PARAM_FW_VERSION = 3,	/* fw_version of the booted image */
	DRM_VNPU_PARAM_NUM_HW_QUEUES = 4, /* hardware queues */
	DRM_VNPU_PARAM_NUM_CORES = 5,
	DRM_VNPU_PARAM_NUM_CONTEXTS = 6, /* hardware contexts (open files max) */
	DRM_VNPU_PARAM_VRAM_SIZE = 7,	/* bytes */
	DRM_VNPU_PARAM_VRAM_USED = 8,	/* bytes allocated by all clients */
	DRM_VNPU_PARAM_VA_START = 9,	/* first device VA this file's BOs may
					 * get (its VA_RANGE window) */
	DRM_VNPU_PARAM_VA_SIZE = 10,	/* size of that VA range */
	DRM_VNPU_PARAM_PAGE_SIZE = 11,	/* device MMU page size */
	DRM_VNPU_PARAM_CAPABILITIES = 12, /* DRM_VNPU_CAP_* bits */
	DRM_VNPU_PARAM_RESET_COUNT = 13, /* device resets done by the driver */
	DRM_VNPU_PARAM_CONTEXT_ID = 14,	/* this file's hardware context */
	DRM_VNPU_PARAM_CONTEXT_STATE = 15, /* DRM_VNPU_CONTEXT_* bits */
	DRM_VNPU_PARAM_FAULT_COUNT = 16, /* MMU faults of this file */
	DRM_VNPU_PARAM_FAULT_VA = 17,	/* VA of this file's last fault */
	DRM_VNPU_PARAM_FAULT_STATUS = 18, /* FAULT_STATUS of that fault */
	DRM_VNPU_PARAM_HEARTBEAT = 19,	/* HEARTBEAT register now */
	DRM_VNPU_PARAM_TIMESTAMP = 20,	/* device clock now, ns */
	DRM_VNPU_PARAM_MAX_SUBMIT_CMDS = 21, /* max cmd_count of one SUBMIT */
	DRM_VNPU_PARAM_QUEUE_DEPTH = 22, /* max unfinished jobs per queue */
	DRM_VNPU_PARAM_QUEUE_ERROR = 23, /* index = queue_id: positive errno
					  * of its first failed job, 0 none */
	DRM_VNPU_PARAM_QUEUE_ERROR_SEQNO = 24, /* index = queue_id: seqno of
						* that job, 0 none */
	DRM_VNPU_PARAM_QUEUE_DONE_SEQNO = 25, /* index = queue_id: seqno of
					       * its last finished job */
	DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS = 26, /* files open on the device */
	DRM_VNPU_PARAM_QUEUE_COUNT = 27, /* user queues of all files */
	DRM_VNPU_PARAM_JOB_ERROR_COUNT = 28, /* failed jobs since load */
	DRM_VNPU_PARAM_QUEUE_ERROR_STATUS = 29, /* index = queue_id: job_status
						 * of its first failed job */
	DRM_VNPU_PARAM_QUEUE_ERROR_INFO = 30, /* index = queue_id: job_info
					       * of that job */
	DRM_VNPU_PARAM_QUOTA_LIMIT = 31, /* index = DRM_VNPU_QUOTA_*: how much
					  * this file's user may hold; ~0 no
					  * limit (docs/uapi.md, Limits) */
	DRM_VNPU_PARAM_QUOTA_USED = 32,	/* index = DRM_VNPU_QUOTA_*: how much
					 * that user holds now */
	DRM_VNPU_PARAM_FILE_MAX_JOBS = 33, /* unfinished jobs per file */
	DRM_VNPU_PARAM_FILE_JOB_BYTES = 34, /* what they may hold, per file,
					     * each counted as DRM_VNPU_JOB_BYTES */
	DRM_VNPU_PARAM_JOB_TIMEOUT_MS = 35, /* a job's time limit on the
					     * device (docs/uapi.md) */
};

/* Kernel memory an unfinished job counts as (FILE_JOB_BYTES). */
#define DRM_VNPU_JOB_BYTES(cmd_count, bo_count) \
	(1024ull + 64ull * (cmd_count) + 8ull * (bo_count))

/* What a user may hold a share of (QUOTA_LIMIT, QUOTA_USED). */
#define DRM_VNPU_QUOTA_CONTEXTS		0 /* open files (hardware contexts) */
#define DRM_VNPU_QUOTA_VRAM		1 /* bytes of VRAM BOs */
#define DRM_VNPU_QUOTA_PINNED		2 /* bytes of system BOs (pinned) */

#define DRM_VNPU_CAP_TEST_MODE		(1ull << 0) /* device in test mode */
#define DRM_VNPU_CAP_TEST_INJECT	(1ull << 1) /* SUBMIT accepts TEST_INJECT */

#define DRM_VNPU_CONTEXT_FAULTED	(1ull << 0) /* had an MMU fault */
#define DRM_VNPU_CONTEXT_BANNED		(1ull << 1) /* caused a hang */

struct drm_vnpu_get_param {
	__u32 param;	/* in: enum drm_vnpu_param */
	__u32 index;	/* in: see the parameter, else 0 */
	__u64 value;	/* out */
};

/* BO_CREATE flags. Without DRM_VNPU_BO_VRAM the BO is system memory. */
#define DRM_VNPU_BO_VRAM		(1u << 0) /* device memory (BAR4) */
#define DRM_VNPU_BO_DEVICE_READ_ONLY	(1u << 1) /* device may not write */
#define DRM_VNPU_BO_FLAGS		(DRM_VNPU_BO_VRAM | \
					 DRM_VNPU_BO_DEVICE_READ_ONLY)

struct drm_vnpu_bo_create {
	__u64 size;	 /* in: bytes, > 0; rounded up to the page size */
	__u32 flags;	 /* in: DRM_VNPU_BO_* */
	__u32 handle;	 /* out: GEM handle */
	__u64 device_va; /* out: VA in this file's device address space */
};

struct drm_vnpu_bo_info {
	__u32 handle;	   /* in */
	__u32 flags;	   /* out: DRM_VNPU_BO_*, plus DRM_VNPU_BO_IMPORTED */
	__u64 size;	   /* out: bytes (page multiple) */
	__u64 mmap_offset; /* out: offset for mmap() on the device fd */
	__u64 device_va;   /* out */
};

#define DRM_VNPU_BO_IMPORTED		(1u << 31) /* BO_INFO: a PRIME import */

/*
 * BO_WAIT. The job_status, job_info and job_cmd outputs were added after
 * the first 24 bytes (job_status was a zero pad): a binary built with the
 * 24-byte struct keeps working and only gets job_error.
 */
struct drm_vnpu_bo_wait {
	__u32 handle;	  /* in */
	__u32 flags;	  /* in: must be 0 */
	__s64 timeout_ns; /* in: absolute CLOCK_MONOTONIC; <= now polls */
	__s32 job_error;  /* out: 0, or the negative errno of a failed job
			   * among the jobs that used the BO last */
	__u32 job_status; /* out: that job's enum vnpu_status (hw_status.h)
			   * from the device's completion record of its
			   * first failed command; 0 when no command failed
			   * on the device (hang, ban, removal) */
	__u64 job_info;	  /* out: that record's info (MMU_FAULT: the VA) */
	__u32 job_cmd;	  /* out: index of that command in the job */
	__u32 reserved;	  /* must be 0 */
};

/* QUEUE_CREATE: hw_queue picks the device queue; this one lets the driver
 * pick the least used. */
#define DRM_VNPU_HW_QUEUE_ANY		0xffffffffu

struct drm_vnpu_queue_create {
	__u32 hw_queue;	 /* in: < NUM_HW_QUEUES or DRM_VNPU_HW_QUEUE_ANY */
	__u32 flags;	 /* in: must be 0 */
	__u32 queue_id;	 /* out: > 0 */
	__u32 syncobj;	 /* out: timeline syncobj, point = SUBMIT seqno */
	__u64 reserved;	 /* must be 0 */
};

struct drm_vnpu_queue_destroy {
	__u32 queue_id;	/* in */
	__u32 pad;	/* must be 0 */
};

/*
 * SUBMIT: one job = cmd_count struct vnpu_cmd (include/vnpu/hw_cmd.h, 64
 * bytes each) read from the BO cmd_bo at cmd_offset when the ioctl runs.
 * The driver assigns the header seqno and VNPU_CMD_F_IRQ; those header
 * fields are ignored on input. Every BO the commands touch must be in
 * bo_handles (the job keeps them alive and orders against other jobs
 * through their implicit fences).
 */
/*
 * SUBMIT flags. EXPLICIT_SYNC: the job takes no implicit dependencies on
 * its BOs and adds its fence to them as bookkeeping only, so it neither
 * waits for nor holds up other jobs that share a BO; order it with
 * in-syncobjs or the device's own fences. BO_WAIT and closing a BO still
 * wait for it.
 */
#define DRM_VNPU_SUBMIT_EXPLICIT_SYNC	(1u << 0)
#define DRM_VNPU_SUBMIT_FLAGS		DRM_VNPU_SUBMIT_EXPLICIT_SYNC

struct drm_vnpu_submit {
	__u32 queue_id;		/* in */
	__u32 flags;		/* in: DRM_VNPU_SUBMIT_* */
	__u32 cmd_bo;		/* in: handle of the command buffer */
	__u32 cmd_count;	/* in: 1 .. MAX_SUBMIT_CMDS */
	__u64 cmd_offset;	/* in: bytes, multiple of 8 */
	__u64 bo_handles;	/* in: pointer to __u32[bo_count] */
	__u32 bo_count;		/* in: <= DRM_VNPU_MAX_SUBMIT_BOS */
	__u32 in_syncobj_count;	/* in: <= DRM_VNPU_MAX_SUBMIT_SYNCOBJS */
	__u64 in_syncobjs;	/* in: pointer to __u32[in_syncobj_count] */
	__u32 out_syncobj;	/* in: binary syncobj to replace, 0 = none */
	__u32 pad;		/* must be 0 */
	__u64 seqno;		/* out: the job's point on the queue's syncobj */
	__u64 reserved;		/* must be 0 */
};

#define DRM_VNPU_MAX_SUBMIT_BOS		4096
#define DRM_VNPU_MAX_SUBMIT_SYNCOBJS	64

/*
 * VA_RANGE: the window [start, end) of this file's device address space
 * that BO_CREATE and PRIME import place BOs in (with their guard page).
 * Page-aligned, inside [VA_START, VA_START + VA_SIZE) as a new file reports
 * them, and at least two pages; -EBUSY when a BO of the file lies outside.
 * A runtime reserves the same range in its process (mmap PROT_NONE) so that
 * no device pointer is ever a host address of the process.
 */
struct drm_vnpu_va_range {
	__u64 start;	/* in */
	__u64 end;	/* in: exclusive */
};

#define DRM_IOCTL_VNPU_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VNPU_GET_PARAM, struct drm_vnpu_get_param)
#define DRM_IOCTL_VNPU_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VNPU_BO_CREATE, struct drm_vnpu_bo_create)
#define DRM_IOCTL_VNPU_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VNPU_BO_INFO, struct drm_vnpu_bo_info)
#define DRM_IOCTL_VNPU_BO_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VNPU_BO_WAIT, struct drm_vnpu_bo_wait)
#define DRM_IOCTL_VNPU_QUEUE_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VNPU_QUEUE_CREATE, \
		 struct drm_vnpu_queue_create)
#define DRM_IOCTL_VNPU_QUEUE_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VNPU_QUEUE_DESTROY, \
		struct drm_vnpu_queue_destroy)
#define DRM_IOCTL_VNPU_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VNPU_SUBMIT, struct drm_vnpu_submit)
#define DRM_IOCTL_VNPU_VA_RANGE \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VNPU_VA_RANGE, struct drm_vnpu_va_range)

#ifdef __KERNEL__
#define DRM_VNPU_UAPI_ASSERT(type, size) \
	static_assert(sizeof(type) == (size), #type " size")
#elif defined(__cplusplus)
#define DRM_VNPU_UAPI_ASSERT(type, size) \
	static_assert(sizeof(type) == (size), #type " size")
#else
#define DRM_VNPU_UAPI_ASSERT(type, size) \
	_Static_assert(sizeof(type) == (size), #type " size")
#endif
DRM_VNPU_UAPI_ASSERT(struct drm_vnpu_get_param, 16);
DRM_VNPU_UAPI_ASSERT(struct drm_vnpu_bo_create, 24);
DRM_VNPU_UAPI_ASSERT(struct drm_vnpu_bo_info, 32);
DRM_VNPU_UAPI_ASSERT(struct drm_vnpu_bo_wait, 40);
DRM_VNPU_UAPI_ASSERT(struct drm_vnpu_queue_create, 24);
DRM_VNPU_UAPI_ASSERT(struct drm_vnpu_queue_destroy, 8);
DRM_VNPU_UAPI_ASSERT(struct drm_vnpu_submit, 72);
DRM_VNPU_UAPI_ASSERT(struct drm_vnpu_va_range, 16);
#undef DRM_VNPU_UAPI_ASSERT

#if defined(__cplusplus)
}
#endif

#endif /* VNPU_ACCEL_H */
