// SPDX-License-Identifier: MIT
/*
 * hw suite, category 16: the per-user limits (docs/uapi.md, "Limits") on
 * kernel memory a user makes the driver allocate, and on VRAM. Device page
 * tables count against the user's pinned share and are freed with the last
 * mapping in them: a file that walks BOs across the VA space holds a
 * bounded amount, and a user at its share gets -EDQUOT when a mapping needs
 * a new table. A lone unprivileged user may take all VRAM but a reserve,
 * which another user can still allocate. Each out-of-memory path of
 * BO_CREATE answers its documented errno.
 */
#include "hw_util.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define LEAF_SPAN (2 * MIB) /* VA one leaf table maps */
#define MID_SPAN GIB	    /* VA one level-1 table maps */
#define LEAF_BYTES HW_PAGE_SIZE
/* A level-1 table: its page and its kernel array of child pointers. */
#define MID_BYTES (2 * HW_PAGE_SIZE)
#define PINNED_PARAM "/sys/module/vnpu/parameters/user_pinned_share"

/* Runs fn(arg) in a child as uid (group access to the node): its exit
 * status, or -1. */
static int run_as(uid_t uid, int (*fn)(void *arg), void *arg)
{
	gid_t groups[1] = { HW_ACCEL_GID };
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(1, groups) || setgid(uid) || setuid(uid))
			_exit(100);
		_exit(fn(arg));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A zeroed u64 a forked child can report through. */
static uint64_t *mmap_shared_u64(void)
{
	void *p = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert(p != MAP_FAILED);
	return p;
}

/* GET_PARAM in a child (no Check there): the value, UINT64_MAX on error. */
static uint64_t param_of(int fd, uint32_t param, uint32_t index)
{
	uint64_t v;

	return hw_get_param(fd, param, index, &v) ? UINT64_MAX : v;
}

static uint64_t pinned_used(int fd)
{
	return param_of(fd, DRM_VNPU_PARAM_QUOTA_USED, DRM_VNPU_QUOTA_PINNED);
}

static int va_range(int fd, uint64_t start, uint64_t end)
{
	struct drm_vnpu_va_range r = { .start = start, .end = end };

	return hw_ioctl(fd, DRM_IOCTL_VNPU_VA_RANGE, &r);
}

/* One step of the loop: window [b, b + 8K), a 4 KiB BO, close. */
static int churn_step(int fd, uint64_t b, uint64_t *used_mapped)
{
	uint32_t handle;
	int ret = va_range(fd, b, b + 2 * HW_PAGE_SIZE);

	if (!ret)
		ret = hw_bo_create_raw(fd, HW_PAGE_SIZE, 0, &handle, NULL);
	if (ret)
		return ret;
	*used_mapped = pinned_used(fd);
	return hw_gem_close(fd, handle);
}

#define CHURN_STEPS 2048
#define CHURN_BASE (16 * GIB)

/*
 * Child of test_page_tables_bounded (uid 1000): walks a 4 KiB BO over
 * CHURN_STEPS leaf tables (4 level-1 tables). While mapped, the user's
 * pinned memory is the BO plus the tables it needs; once closed (no job:
 * the mapping goes at once), exactly what it was before.
 */
static int churn_child(void *arg)
{
	uint64_t *max_held = arg;
	uint64_t base, mapped, want;
	int fd = hw_open_raw();

	if (fd < 0)
		return 10;
	base = pinned_used(fd);
	if (base == UINT64_MAX)
		return 11;
	for (uint64_t i = 0; i < CHURN_STEPS; i++) {
		uint64_t b = CHURN_BASE + i * LEAF_SPAN;

		if (churn_step(fd, b, &mapped))
			return 12;
		/* The BO, its leaf and level-1 tables: the close freed the
		 * previous step's, which it had emptied. */
		want = base + HW_PAGE_SIZE + LEAF_BYTES + MID_BYTES;
		if (mapped != want)
			return 13;
		if (pinned_used(fd) != base)
			return 14;
	}
	*max_held = mapped - base;
	close(fd);
	return 0;
}

START_TEST(test_page_tables_bounded)
{
	uint64_t *held = mmap_shared_u64();
	int ret = run_as(HW_USER_UID, churn_child, held);

	ck_assert_msg(ret == 0, "child step %d", ret);
	hw_figure("%d windows of 2 MiB walked: at most %llu bytes of page "
		  "tables and BO held, back to the baseline after each close",
		  CHURN_STEPS, (unsigned long long)*held);
	munmap(held, sizeof(*held));
}
END_TEST

#define PROBE_BASE (4 * GIB)	/* a window of one leaf table */
#define FILLER_BASE (64 * GIB)
#define FRESH_BASE (128 * GIB)	/* no table yet */

/* Page-table bytes a BO of size needs at a GiB-aligned VA. */
static uint64_t tables_for(uint64_t size)
{
	return LEAF_BYTES * ((size + LEAF_SPAN - 1) / LEAF_SPAN) +
	       MID_BYTES * ((size + MID_SPAN - 1) / MID_SPAN);
}

/*
 * Child of test_page_tables_at_share (uid 1000, three files): brings its
 * user within 8 KiB of the pinned share, then asks for a 4 KiB BO where
 * its tables do not exist (-EDQUOT: the BO and the two tables it needs
 * pass the share) and one where they do (fits). *arg gets what was left.
 */
static int share_child(void *arg)
{
	uint64_t *left = arg;
	uint64_t limit, rem, filler;
	uint32_t handle;
	int p = hw_open_raw(), f = hw_open_raw(), q = hw_open_raw();

	if (p < 0 || f < 0 || q < 0)
		return 10;
	limit = param_of(p, DRM_VNPU_PARAM_QUOTA_LIMIT, DRM_VNPU_QUOTA_PINNED);
	if (va_range(p, PROBE_BASE, PROBE_BASE + LEAF_SPAN) ||
	    hw_bo_create_raw(p, HW_PAGE_SIZE, 0, &handle, NULL))
		return 11;
	rem = limit - pinned_used(p);
	if (limit == UINT64_MAX || rem < 4 * MIB)
		return 12;
	/* Most of the rest in one BO of a file of its own... */
	filler = rem - MIB / 4 - tables_for(rem);
	filler -= filler % HW_PAGE_SIZE;
	if (va_range(f, FILLER_BASE, FILLER_BASE + filler + HW_PAGE_SIZE) ||
	    hw_bo_create_raw(f, filler, 0, &handle, NULL))
		return 13;
	/* ...then 4 KiB BOs where their leaf table exists, to < 8 KiB. */
	for (rem = limit - pinned_used(p); rem >= 2 * HW_PAGE_SIZE;
	     rem = limit - pinned_used(p)) {
		if (hw_bo_create_raw(p, HW_PAGE_SIZE, 0, &handle, NULL))
			return 14;
	}
	if (rem < HW_PAGE_SIZE)
		return 15;
	if (va_range(q, FRESH_BASE, FRESH_BASE + 2 * HW_PAGE_SIZE) ||
	    hw_bo_create_raw(q, HW_PAGE_SIZE, 0, &handle, NULL) != -EDQUOT)
		return 16;
	/* The refused BO left nothing counted. */
	if (limit - pinned_used(p) != rem)
		return 17;
	if (hw_bo_create_raw(p, HW_PAGE_SIZE, 0, &handle, NULL))
		return 18;
	*left = rem;
	close(q);
	close(f);
	close(p);
	return 0;
}

static unsigned int read_uint_file(const char *path)
{
	unsigned int v;
	FILE *f = fopen(path, "r");

	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fscanf(f, "%u", &v), 1);
	fclose(f);
	return v;
}

static void write_uint_file(const char *path, unsigned int v)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	ck_assert_int_gt(fprintf(f, "%u\n", v), 0);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_page_tables_at_share)
{
	uint64_t *left = mmap_shared_u64();
	unsigned int share = read_uint_file(PINNED_PARAM);
	int ret;

	/* A small share keeps the pages the test pins few. */
	write_uint_file(PINNED_PARAM, 2);
	ret = run_as(HW_USER_UID, share_child, left);
	write_uint_file(PINNED_PARAM, share);
	ck_assert_msg(ret == 0, "child step %d", ret);
	hw_figure("%llu bytes short of the pinned share: a BO needing new "
		  "page tables -EDQUOT, one in existing tables fits",
		  (unsigned long long)*left);
	munmap(left, sizeof(*left));
}
END_TEST

/* ---- VRAM: all but a reserve for the others ---------------------------- */

#define VRAM_CHUNK (4 * MIB)

struct hog {
	int up[2], down[2];
};

/* uid 1000 alone: VRAM in chunks until refused; reports the total and the
 * errno, holds it until told; then, the device full, asks once more: its
 * own limit is what it is told (-EDQUOT), not the device's (-ENOMEM). */
static int hog_child(void *arg)
{
	struct hog *h = arg;
	uint64_t report[2] = { 0, 0 };
	uint32_t handle;
	char go;
	int fd = hw_open_raw(), ret;

	if (fd < 0)
		return 10;
	while (!(ret = hw_bo_create_raw(fd, VRAM_CHUNK, DRM_VNPU_BO_VRAM,
					&handle, NULL)))
		report[0] += VRAM_CHUNK;
	report[1] = (uint64_t)-ret;
	if (write(h->up[1], report, sizeof(report)) != sizeof(report))
		return 11;
	if (read(h->down[0], &go, 1) != 1)
		return 12;
	if (hw_bo_create_raw(fd, VRAM_CHUNK, DRM_VNPU_BO_VRAM, &handle,
			     NULL) != -EDQUOT)
		return 13;
	close(fd);
	return 0;
}

/* Another user: the reserve is there for it. */
static int reserve_child(void *arg)
{
	uint64_t size, limit;
	uint32_t handle;
	int fd = hw_open_raw();

	(void)arg;
	if (fd < 0)
		return 10;
	limit = param_of(fd, DRM_VNPU_PARAM_QUOTA_LIMIT, DRM_VNPU_QUOTA_VRAM);
	size = param_of(fd, DRM_VNPU_PARAM_VRAM_SIZE, 0) - limit;
	size -= size % HW_PAGE_SIZE;
	if (!size || hw_bo_create_raw(fd, size, DRM_VNPU_BO_VRAM, &handle,
				      NULL))
		return 11;
	close(fd);
	return 0;
}

START_TEST(test_lone_user_most_vram)
{
	int fd = hw_open();
	uint64_t vram = hw_param(fd, DRM_VNPU_PARAM_VRAM_SIZE);
	uint64_t report[2];
	uint32_t handles[256];
	unsigned int n = 0;
	struct hog h;
	pid_t pid;
	int status, ret;

	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_VRAM_USED), 0);
	ck_assert_int_eq(pipe(h.up), 0);
	ck_assert_int_eq(pipe(h.down), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		gid_t groups[1] = { HW_ACCEL_GID };

		if (setgroups(1, groups) || setgid(HW_USER_UID) ||
		    setuid(HW_USER_UID))
			_exit(100);
		_exit(hog_child(&h));
	}
	ck_assert_int_eq(read(h.up[0], report, sizeof(report)),
			 sizeof(report));
	/* While it holds all it may, another user gets the reserve. */
	ret = run_as(HW_USER_UID + 1, reserve_child, NULL);
	/* Root (no share) fills the device. */
	while (n < 256 && !hw_bo_create_raw(fd, MIB, DRM_VNPU_BO_VRAM,
					    &handles[n], NULL))
		n++;
	ck_assert_int_eq(write(h.down[1], "g", 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	while (n)
		ck_assert_int_eq(hw_gem_close(fd, handles[--n]), 0);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0, "user step %d",
		      WEXITSTATUS(status));
	ck_assert_msg(ret == 0, "second user step %d", ret);
	ck_assert_uint_eq(report[1], EDQUOT);
	ck_assert_msg(report[0] > vram / 4 * 3,
		      "a lone user got %llu of %llu bytes of VRAM",
		      (unsigned long long)report[0],
		      (unsigned long long)vram);
	hw_figure("a lone user allocated %llu MiB of %llu MiB VRAM",
		  (unsigned long long)(report[0] >> 20),
		  (unsigned long long)(vram >> 20));
	close(fd);
}
END_TEST

/* ---- BO_CREATE out of memory: one errno per cause ------------------------ */

static int errno_child(void *arg)
{
	uint64_t vram, limit, b = FRESH_BASE;
	uint32_t handle;
	int fd = hw_open_raw();

	(void)arg;
	if (fd < 0)
		return 10;
	vram = param_of(fd, DRM_VNPU_PARAM_VRAM_SIZE, 0);
	limit = param_of(fd, DRM_VNPU_PARAM_QUOTA_LIMIT, DRM_VNPU_QUOTA_VRAM);
	/* More than the device has: never satisfiable. */
	if (hw_bo_create_raw(fd, vram + HW_PAGE_SIZE, DRM_VNPU_BO_VRAM,
			     &handle, NULL) != -ENOMEM)
		return 11;
	/* More than the user's share. */
	if (limit < vram && hw_bo_create_raw(fd, vram, DRM_VNPU_BO_VRAM,
					     &handle, NULL) != -EDQUOT)
		return 12;
	/* More than the machine's RAM. */
	if (hw_bo_create_raw(fd, 256 * GIB, 0, &handle, NULL) != -ENOMEM)
		return 13;
	/* The VA window full: system and VRAM BOs alike. */
	if (va_range(fd, b, b + 2 * HW_PAGE_SIZE) ||
	    hw_bo_create_raw(fd, HW_PAGE_SIZE, 0, &handle, NULL))
		return 14;
	if (hw_bo_create_raw(fd, HW_PAGE_SIZE, 0, &handle, NULL) != -ENOSPC ||
	    hw_bo_create_raw(fd, HW_PAGE_SIZE, DRM_VNPU_BO_VRAM, &handle,
			     NULL) != -ENOSPC)
		return 15;
	close(fd);
	return 0;
}

START_TEST(test_out_of_memory_errnos)
{
	uint32_t handles[512];
	unsigned int n = 0;
	int fd = hw_open(), ret;

	ret = run_as(HW_USER_UID, errno_child, NULL);
	ck_assert_msg(ret == 0, "child step %d", ret);
	/* Root has no share: the device itself runs out. */
	while (n < 512 && !(ret = hw_bo_create_raw(fd, 16 * MIB,
						   DRM_VNPU_BO_VRAM,
						   &handles[n], NULL)))
		n++;
	ck_assert_int_eq(ret, -ENOMEM);
	while (n)
		ck_assert_int_eq(hw_gem_close(fd, handles[--n]), 0);
	close(fd);
}
END_TEST

static Suite *limits_suite(void)
{
	Suite *s = suite_create("limits");
	TCase *pt = tcase_create("page_tables");
	TCase *vram = tcase_create("vram");

	tcase_add_test(pt, test_page_tables_bounded);
	tcase_add_test(pt, test_page_tables_at_share);
	tcase_set_timeout(pt, 120);
	hw_suite_add(s, pt);
	tcase_add_test(vram, test_lone_user_most_vram);
	tcase_add_test(vram, test_out_of_memory_errnos);
	tcase_set_timeout(vram, 60);
	hw_suite_add(s, vram);
	return s;
}

int main(int argc, char **argv)
{
	return hw_main(argc, argv, limits_suite(), 0);
}
