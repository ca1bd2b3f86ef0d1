/* SPDX-License-Identifier: MIT */
/*
 * Shared harness of the in-VM hardware test suite (tests/hw/hw_*.c): opening
 * the vnpu accel node, ioctl wrappers returning -errno, BO / queue / submit
 * helpers building commands from include/vnpu/hw_cmd.h, debugfs readers
 * (reset counter, VRAM use) and the Check main with the reset guard.
 *
 * Every wrapper returns 0 or a negative errno and writes its outputs only on
 * success, so tests can compare errors with docs/uapi.md directly.
 */
#ifndef VNPU_TESTS_HW_UTIL_H
#define VNPU_TESTS_HW_UTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drm/vnpu_accel.h"
#include "vnpu/hw_cmd_build.h"
#include "vnpu/hw_status.h"
#include "vnpu/kernel_abi.h"

#define HW_PAGE_SIZE		4096u
/* Generous: the guest may run under TCG on a loaded host. */
#define HW_WAIT_NS		(20ll * 1000 * 1000 * 1000)
/* The guest's unprivileged user (scripts/initramfs.sh). */
#define HW_USER_UID		1000
#define HW_ACCEL_GID		990

/* hw_main() flags. */
#define HW_EXPECTS_RESET	(1u << 0) /* the program resets the device */

/* ioctl() returning 0 or -errno, retrying EINTR. */
int hw_ioctl(int fd, unsigned long request, void *arg);
int64_t hw_now_ns(void);

/* Path of the device node: $VNPU_DEV, else the first /dev/accel/accel*
 * whose DRM driver name is "vnpu". Returns 0 or -ENODEV. */
int hw_dev_path(char *path, size_t len);
/* open() of that node, O_RDWR | O_CLOEXEC: the fd or -errno. */
int hw_open_raw(void);
/* hw_open_raw() that must succeed (ck_assert). */
int hw_open(void);
/* The DRM driver name of fd ("" on error). */
void hw_driver_name(int fd, char *name, size_t len);

int hw_get_param(int fd, uint32_t param, uint32_t index, uint64_t *value);
/* hw_get_param() that must succeed (ck_assert). */
uint64_t hw_param(int fd, uint32_t param);
bool hw_test_mode(int fd);

struct hw_bo {
	uint32_t handle;
	uint32_t flags;		/* BO_INFO flags */
	uint64_t size;		/* page multiple */
	uint64_t va;
	uint64_t mmap_offset;
	void *map;		/* NULL when not mapped */
};

/* BO_CREATE; *handle and *va only on success. */
int hw_bo_create_raw(int fd, uint64_t size, uint32_t flags, uint32_t *handle,
		     uint64_t *va);
int hw_bo_info(int fd, uint32_t handle, struct drm_vnpu_bo_info *info);
/* BO_CREATE + BO_INFO + mmap (read/write, shared): 0 or -errno. */
int hw_bo_create(int fd, uint64_t size, uint32_t flags, struct hw_bo *bo);
/* Fills bo from BO_INFO of an existing handle and maps it. */
int hw_bo_from_handle(int fd, uint32_t handle, struct hw_bo *bo);
/* hw_bo_create() that must succeed (ck_assert). */
void hw_bo_new(int fd, uint64_t size, uint32_t flags, struct hw_bo *bo);
int hw_gem_close(int fd, uint32_t handle);
/* munmap + GEM_CLOSE, which must succeed. */
void hw_bo_free(int fd, struct hw_bo *bo);
/* BO_WAIT with a deadline timeout_ns from now; *out (may be NULL) gets the
 * ioctl's struct back on success. */
int hw_bo_wait(int fd, uint32_t handle, int64_t timeout_ns,
	       struct drm_vnpu_bo_wait *out);

int hw_queue_create(int fd, uint32_t hw_queue, uint32_t *queue_id,
		    uint32_t *syncobj);
int hw_queue_destroy(int fd, uint32_t queue_id);

int hw_prime_export(int fd, uint32_t handle, int *dmabuf_fd);
int hw_prime_import(int fd, int dmabuf_fd, uint32_t *handle);
int hw_syncobj_create(int fd, uint32_t flags, uint32_t *handle);
int hw_syncobj_destroy(int fd, uint32_t handle);
/* Waits for all syncobjs[i] at points[i] (points NULL: binary). */
int hw_syncobj_wait(int fd, const uint32_t *syncobjs, const uint64_t *points,
		    uint32_t count, int64_t timeout_ns);

/* Copies cmds to cmdbuf->map + offset and submits them. */
int hw_submit(int fd, uint32_t queue_id, const struct hw_bo *cmdbuf,
	      uint64_t offset, const struct vnpu_cmd *cmds, uint32_t count,
	      const uint32_t *bos, uint32_t bo_count, uint32_t out_syncobj,
	      uint64_t *seqno);

/* An open file with one queue and a 64 KiB system command BO. */
struct hw_ctx {
	int fd;
	uint32_t queue;
	uint32_t syncobj;
	struct hw_bo cmd;
};

void hw_ctx_open(struct hw_ctx *ctx);
/* Like hw_ctx_open() on an fd already open. */
void hw_ctx_init(struct hw_ctx *ctx, int fd);
void hw_ctx_close(struct hw_ctx *ctx);
/*
 * Submits cmds with the BO list bos (bo_count >= 1) on ctx's queue and
 * waits for it through BO_WAIT on bos[0]: returns the ioctl error, else
 * the job's error (0 or -errno); *wait (may be NULL) gets BO_WAIT's struct.
 */
int hw_run(struct hw_ctx *ctx, const struct vnpu_cmd *cmds, uint32_t count,
	   const uint32_t *bos, uint32_t bo_count,
	   struct drm_vnpu_bo_wait *wait);

/* debugfs (/sys/kernel/debug/accel/<minor>/, root): reads `file` of the
 * device into buf (NUL-terminated). Returns bytes read or -errno. */
long hw_debugfs_read(const char *file, char *buf, size_t len);
int hw_debugfs_write(const char *file, const char *text);
/* debugfs reset_counter, else GET_PARAM(RESET_COUNT) on a fresh fd;
 * -errno when neither can be read. */
long hw_reset_count(void);
/* debugfs bos: VRAM bytes used and allocated blocks of the allocator. */
int hw_vram_stats(uint64_t *used, uint64_t *blocks);

/* Deterministic xorshift64* generator. */
uint64_t hw_rand(uint64_t *state);

/* Fills / checks memory with a position-dependent pattern from seed. */
void hw_pattern_fill(void *p, size_t size, uint32_t seed);
/* Returns the offset of the first mismatch, or SIZE_MAX. */
size_t hw_pattern_check(const void *p, size_t size, uint32_t seed);
/* Offset of the first 32-bit word != value, or SIZE_MAX. */
size_t hw_check_u32(const void *p, size_t size, uint32_t value);

/* A figure the test measured, as a line "figure: ..." on stdout, which
 * run-hw-suite.sh shows under the program's result. */
void hw_figure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Adds tc to s with the reset guard: a checked fixture that fails the test
 * when the device's reset counter moved during it.
 */
void hw_suite_add(Suite *s, TCase *tc);
/*
 * Runs s (Check's CK_ENV verbosity, forked tests) and returns the exit
 * status. `prog --expects-reset` exits 0 when flags has HW_EXPECTS_RESET
 * (the runner then does not treat a moved reset counter as an error).
 */
int hw_main(int argc, char **argv, Suite *s, unsigned int flags);

#endif /* VNPU_TESTS_HW_UTIL_H */
