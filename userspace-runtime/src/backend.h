/* SPDX-License-Identifier: MIT */
/*
 * The runtime's internal backend interface: what a device driver offers,
 * whether it is the vnpu kernel driver (drm) or the simulator run
 * in-process (sim). Backends only move memory and command arrays built by
 * cmd.c; they know nothing of streams, events or kernels. The drm backend
 * maps these onto ioctls (BO_CREATE, SUBMIT, syncobj waits).
 *
 * Sequence numbers are per queue, increasing, never reused; a queue's
 * commands retire in order. A failure is a range of sequence numbers that
 * retired without doing their work.
 */
#ifndef VNPURT_BACKEND_H
#define VNPURT_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnpu/hw_cmd.h"
#include "vnpu_runtime.h"

struct vnpurt_config;
struct vnpurt_bdev;

enum vnpurt_domain {
	VNPURT_DOMAIN_VRAM, /* device memory; no CPU mapping */
	VNPURT_DOMAIN_HOST, /* pinned host memory: CPU mapping + device VA */
};

/* The range of the process's address space reserved for device VAs
 * (va_window.c): every BO of the device gets its VA inside it. */
struct vnpurt_va_window {
	uint64_t start, size;
};

struct vnpurt_bo {
	uint64_t va;	/* device VA of the first byte */
	void *cpu;	/* CPU mapping (HOST), else NULL */
	uint64_t size;	/* bytes, a page multiple */
	enum vnpurt_domain domain;
	uint64_t handle; /* backend's own reference */
};

struct vnpurt_dev_info {
	char name[64];
	uint32_t hw_version;
	uint32_t fw_version;
	char fw_build[32];
	uint32_t cores;
	uint32_t queues;
	uint64_t vram_size;
	uint64_t vram_free;
	uint32_t ring_entries; /* commands per queue ring */
	uint32_t reset_count;
};

/* A status the runtime did not get from a completion record. */
#define VNPURT_STATUS_DEVICE_RESET 0x10000u

/* A status the runtime did not get from a completion record: the device
 * could not be brought back after a reset (the backend's lost()). */
#define VNPURT_STATUS_DEVICE_LOST 0x10001u

struct vnpurt_failure {
	uint64_t first_seq, last_seq; /* inclusive range that failed */
	uint32_t status; /* enum vnpu_status, _DEVICE_RESET or _DEVICE_LOST */
	uint64_t info;	 /* completion info (fault VA) */
	uint32_t fault_reason; /* enum vnpu_fault_reason, 0 unknown */
	bool fault_write;
	/* Later failures were merged in (no memory to list them apart,
	 * failures.c): only [first_seq, exact_last_seq] is known to have
	 * failed with status; the rest of the range failed or ran between
	 * failures, and counts as failed. */
	bool merged;
	uint64_t exact_last_seq;
};

struct vnpurt_backend_ops {
	const char *name; /* "sim", "drm" */
	/* Devices this backend can open; 0 and a reason when none. */
	int (*device_count)(const struct vnpurt_config *cfg, char *why,
			    size_t why_len);
	/* Every BO of the device gets its VA inside window. */
	vnpu_error_t (*open)(int index, const struct vnpurt_config *cfg,
			     const struct vnpurt_va_window *window,
			     struct vnpurt_bdev **out);
	void (*close)(struct vnpurt_bdev *dev);
	void (*query)(struct vnpurt_bdev *dev, struct vnpurt_dev_info *info);
	/* size > 0; rounded up to pages. A failure sets the detail:
	 * VNPU_ERROR_OUT_OF_MEMORY when memory ran short (the device's, the
	 * host's, the address space, or a per-user limit of the driver), the
	 * detail saying which with the sizes; VNPU_ERROR_DEVICE_ERROR for
	 * anything else. */
	vnpu_error_t (*bo_create)(struct vnpurt_bdev *dev, uint64_t size,
				  enum vnpurt_domain domain,
				  struct vnpurt_bo *bo);
	/* The caller guarantees the device no longer uses it. */
	void (*bo_free)(struct vnpurt_bdev *dev, struct vnpurt_bo *bo);
	/* A hardware queue; VNPU_ERROR_OUT_OF_MEMORY when all are in use. */
	vnpu_error_t (*queue_create)(struct vnpurt_bdev *dev, int priority,
				     unsigned *queue);
	void (*queue_destroy)(struct vnpurt_bdev *dev, unsigned queue);
	/* Appends n (1..ring_entries / 2) commands as one submission; their
	 * seqno fields are assigned. Blocks while the ring is full. *seqno is
	 * the last command's. VNPU_ERROR_DEVICE_RESET once the device is
	 * lost. */
	vnpu_error_t (*submit)(struct vnpurt_bdev *dev, unsigned queue,
			       const struct vnpu_cmd *cmds, unsigned n,
			       uint64_t *seqno);
	/* Waits until seqno retired (successfully or not): VNPU_SUCCESS, or
	 * VNPU_ERROR_TIMEOUT after timeout_ms. Detects a hung device and
	 * resets it (the pending work then fails with DEVICE_RESET, or with
	 * DEVICE_LOST when the device does not come back). */
	vnpu_error_t (*wait)(struct vnpurt_bdev *dev, unsigned queue,
			     uint64_t seqno, unsigned timeout_ms);
	/* The last retired seqno of queue. */
	uint64_t (*completed)(struct vnpurt_bdev *dev, unsigned queue);
	/* Pops the oldest failure of queue not yet taken; false when none.
	 * No failure is ever dropped (failures.c). */
	bool (*take_failure)(struct vnpurt_bdev *dev, unsigned queue,
			     struct vnpurt_failure *f);
	/* Whether the device is lost for good (it did not come back after a
	 * reset); then why (NUL-terminated) says why. Once lost, every
	 * pending command has retired failed, and submit fails. */
	bool (*lost)(struct vnpurt_bdev *dev, char *why, size_t why_len);
	/* Test mode only (VNPU_SIM_TEST_MODE): whether TEST_INJECT works. */
	bool (*test_mode)(struct vnpurt_bdev *dev);
};

extern const struct vnpurt_backend_ops vnpurt_backend_sim;
extern const struct vnpurt_backend_ops vnpurt_backend_drm;

/* Test hooks of the sim backend (testing.c; the caller checked test
 * mode). The firmware image in host memory is corrupted: the device
 * refuses it at its next boot, so the next reset loses the device. */
void vnpurt_sim_test_corrupt_firmware(struct vnpurt_bdev *dev);
/* Replaces queue's failure list with one of cap entries (>= the failures
 * pending) that grows or not (then a full list merges). false: cap too
 * small or no memory. */
bool vnpurt_sim_test_failure_list(struct vnpurt_bdev *dev, unsigned queue,
				  size_t cap, bool grows);

#endif /* VNPURT_BACKEND_H */
