// SPDX-License-Identifier: MIT
/*
 * hw suite, category 1: discovery and open. The node and its driver name,
 * many open files up to the device's hardware contexts (-EBUSY past them),
 * open/close cycles, files across fork and across processes, and the
 * node's permissions: the unprivileged user 'vnpu' opens it through group
 * 'accel', a user outside the group cannot (the test drops root's
 * privileges in a forked child with setgroups/setgid/setuid).
 */
#include "hw_util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define ACCEL_MAJOR 261
#define MAX_FDS 256

static uint64_t open_contexts(void)
{
	int fd = hw_open();
	uint64_t n = hw_param(fd, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS);

	close(fd);
	return n - 1;
}

/* Runs fn in a forked child; returns its exit status (or 128 + signal). */
static int in_child(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fn(arg));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

START_TEST(test_node)
{
	char path[256], name[32];
	struct stat st;
	int fd;

	ck_assert_int_eq(hw_dev_path(path, sizeof(path)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_uint_eq(major(st.st_rdev), ACCEL_MAJOR);
	fd = hw_open();
	hw_driver_name(fd, name, sizeof(name));
	ck_assert_str_eq(name, "vnpu");
	close(fd);
}
END_TEST

START_TEST(test_version_ioctl)
{
	char name[32], date[32], desc[128];
	struct drm_version v;
	int fd = hw_open();

	memset(&v, 0, sizeof(v));
	/* Lengths only: the driver reports what it would copy. */
	ck_assert_int_eq(hw_ioctl(fd, DRM_IOCTL_VERSION, &v), 0);
	ck_assert_uint_eq(v.name_len, 4);
	ck_assert_uint_lt(v.desc_len, sizeof(desc));
	v.name = name;
	v.name_len = sizeof(name);
	v.date = date;
	v.date_len = sizeof(date);
	v.desc = desc;
	v.desc_len = sizeof(desc);
	ck_assert_int_eq(hw_ioctl(fd, DRM_IOCTL_VERSION, &v), 0);
	ck_assert_int_eq(memcmp(name, "vnpu", 4), 0);
	ck_assert_int_ge(v.version_major, 0);
	close(fd);
}
END_TEST

START_TEST(test_many_fds)
{
	uint64_t nctx, base = open_contexts();
	int fds[MAX_FDS], n = 0, fd, extra;
	uint64_t seen = 0;

	fd = hw_open();
	nctx = hw_param(fd, DRM_VNPU_PARAM_NUM_CONTEXTS);
	close(fd);
	ck_assert_uint_le(nctx, 64);
	ck_assert_uint_lt(base, nctx);
	/* Every free hardware context, each a distinct id. */
	for (uint64_t i = base; i < nctx; i++) {
		uint64_t id;

		fds[n] = hw_open_raw();
		ck_assert_msg(fds[n] >= 0, "open %d of %llu: %s", n,
			      (unsigned long long)(nctx - base),
			      strerror(-fds[n]));
		id = hw_param(fds[n], DRM_VNPU_PARAM_CONTEXT_ID);
		ck_assert_uint_lt(id, nctx);
		ck_assert_msg(!(seen & (1ull << id)), "context %llu twice",
			      (unsigned long long)id);
		seen |= 1ull << id;
		n++;
	}
	ck_assert_uint_eq(hw_param(fds[0], DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS),
			  nctx);
	/* All used: the next open is refused, and works again after a close. */
	extra = hw_open_raw();
	ck_assert_int_eq(extra, -EBUSY);
	close(fds[n / 2]);
	fds[n / 2] = hw_open_raw();
	ck_assert_int_ge(fds[n / 2], 0);
	ck_assert_int_eq(hw_open_raw(), -EBUSY);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	ck_assert_uint_eq(open_contexts(), base);
}
END_TEST

START_TEST(test_open_close_cycles)
{
	uint64_t base = open_contexts();

	for (int i = 0; i < 300; i++) {
		int fd = hw_open();
		struct hw_bo bo;

		/* Every tenth file leaves a BO and a queue for close(). */
		if (i % 10 == 0) {
			uint32_t q;

			hw_bo_new(fd, 8192, i % 20 ? 0 : DRM_VNPU_BO_VRAM, &bo);
			munmap(bo.map, bo.size);
			ck_assert_int_eq(hw_queue_create(fd,
							 DRM_VNPU_HW_QUEUE_ANY,
							 &q, NULL), 0);
		}
		ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_PAGE_SIZE),
				  4096);
		close(fd);
	}
	ck_assert_uint_eq(open_contexts(), base);
}
END_TEST

static int child_uses_inherited_fd(void *arg)
{
	int fd = *(int *)arg;
	uint32_t handle;

	/* The same file: the child's BO is visible to the parent. */
	if (hw_bo_create_raw(fd, 4096, 0, &handle, NULL))
		return 10;
	return handle < 256 ? (int)handle : 11;
}

START_TEST(test_fd_across_fork)
{
	int fd = hw_open();
	uint64_t id = hw_param(fd, DRM_VNPU_PARAM_CONTEXT_ID);
	struct drm_vnpu_bo_info info;
	int handle = in_child(child_uses_inherited_fd, &fd);

	ck_assert_int_gt(handle, 0);
	ck_assert_int_lt(handle, 10);
	ck_assert_int_eq(hw_bo_info(fd, (uint32_t)handle, &info), 0);
	ck_assert_uint_eq(info.size, 4096);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_CONTEXT_ID), id);
	close(fd);
}
END_TEST

/* Child of test_two_processes: its own file, its own context. */
static int child_own_context(void *arg)
{
	int *pipefd = arg;
	int fd = hw_open_raw();
	uint64_t id;
	uint32_t handle;
	char c;

	if (fd < 0)
		return 10;
	if (hw_get_param(fd, DRM_VNPU_PARAM_CONTEXT_ID, 0, &id))
		return 11;
	if (hw_bo_create_raw(fd, 4096, 0, &handle, NULL))
		return 12;
	/* Hold the file open until the parent has looked. */
	if (write(pipefd[1], &id, sizeof(id)) != sizeof(id))
		return 13;
	if (read(pipefd[0], &c, 1) != 1)
		return 14;
	close(fd);
	return 0;
}

START_TEST(test_two_processes)
{
	int to_parent[2], to_child[2], fd, status;
	uint64_t child_id, open_now, base = open_contexts();
	struct drm_vnpu_bo_info info;
	pid_t pid;

	ck_assert_int_eq(pipe(to_parent), 0);
	ck_assert_int_eq(pipe(to_child), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int ends[2] = { to_child[0], to_parent[1] };

		_exit(child_own_context(ends));
	}
	ck_assert_int_eq(read(to_parent[0], &child_id, sizeof(child_id)),
			 sizeof(child_id));
	fd = hw_open();
	open_now = hw_param(fd, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS);
	ck_assert_uint_eq(open_now, base + 2);
	ck_assert_uint_ne(hw_param(fd, DRM_VNPU_PARAM_CONTEXT_ID), child_id);
	/* The child's handle 1 is not ours. */
	ck_assert_int_eq(hw_bo_info(fd, 1, &info), -ENOENT);
	ck_assert_int_eq(write(to_child[1], "x", 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_uint_eq(hw_param(fd, DRM_VNPU_PARAM_NUM_OPEN_CONTEXTS),
			  base + 1);
	close(fd);
}
END_TEST

START_TEST(test_dup_shares_file)
{
	int fd = hw_open();
	int fd2 = dup(fd);
	uint32_t handle;
	struct drm_vnpu_bo_info info;

	ck_assert_int_ge(fd2, 0);
	ck_assert_int_eq(hw_bo_create_raw(fd, 4096, 0, &handle, NULL), 0);
	close(fd);
	/* The file stays open through the duplicate. */
	ck_assert_int_eq(hw_bo_info(fd2, handle, &info), 0);
	close(fd2);
}
END_TEST

START_TEST(test_node_mode)
{
	char path[256];
	struct stat st;

	ck_assert_int_eq(hw_dev_path(path, sizeof(path)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0660);
	ck_assert_uint_eq(st.st_uid, 0);
	ck_assert_uint_eq(st.st_gid, HW_ACCEL_GID);
}
END_TEST

/* Drops to uid 1000, with group accel or without: 0 when the open
 * result matched, else a code naming the step. */
static int child_as_user(void *arg)
{
	bool in_group = *(bool *)arg;
	gid_t groups[1] = { HW_ACCEL_GID };
	char buf[64];
	uint64_t v;
	int fd;

	if (setgroups(in_group ? 1 : 0, groups))
		return 10;
	if (setgid(HW_USER_UID) || setuid(HW_USER_UID))
		return 11;
	if (getuid() != HW_USER_UID || geteuid() != HW_USER_UID)
		return 12;
	/* debugfs stays root's. */
	if (hw_debugfs_read("reset_counter", buf, sizeof(buf)) >= 0)
		return 13;
	fd = hw_open_raw();
	if (!in_group)
		return fd == -EACCES ? 0 : 20;
	if (fd < 0)
		return 21;
	if (hw_get_param(fd, DRM_VNPU_PARAM_DEVICE_ID, 0, &v) ||
	    v != 0x1af410f7)
		return 22;
	/* The user can use the device, not only open it. */
	{
		struct hw_ctx ctx;
		struct hw_bo bo;
		struct vnpu_cmd fill;

		/* No ck_assert in this grandchild of Check's runner. */
		ctx.fd = fd;
		if (hw_queue_create(fd, DRM_VNPU_HW_QUEUE_ANY, &ctx.queue,
				    NULL) ||
		    hw_bo_create(fd, 64 * 1024, 0, &ctx.cmd) ||
		    hw_bo_create(fd, 4096, 0, &bo))
			return 23;
		fill = vnpu_fill_cmd(bo.va, 4096, 0xdeadbeef, 4);
		if (hw_run(&ctx, &fill, 1, &bo.handle, 1, NULL))
			return 24;
		if (hw_check_u32(bo.map, 4096, 0xdeadbeef) != SIZE_MAX)
			return 25;
	}
	close(fd);
	return 0;
}

START_TEST(test_user_in_accel_group)
{
	bool in_group = true;
	int rc;

	ck_assert_msg(getuid() == 0, "must start as root to drop to user "
		      "'vnpu' (run-hw-suite.sh runs the suite as root)");
	rc = in_child(child_as_user, &in_group);
	ck_assert_msg(rc == 0, "user vnpu in group accel: step %d failed", rc);
}
END_TEST

START_TEST(test_user_outside_group)
{
	bool in_group = false;
	int rc;

	ck_assert_msg(getuid() == 0, "must start as root to drop privileges");
	rc = in_child(child_as_user, &in_group);
	ck_assert_msg(rc == 0, "uid 1000 without group accel: step %d", rc);
}
END_TEST

static Suite *discovery_suite(void)
{
	Suite *s = suite_create("discovery");
	TCase *open_tc = tcase_create("open");
	TCase *perm = tcase_create("permissions");

	tcase_set_timeout(open_tc, 120);
	tcase_add_test(open_tc, test_node);
	tcase_add_test(open_tc, test_version_ioctl);
	tcase_add_test(open_tc, test_many_fds);
	tcase_add_test(open_tc, test_open_close_cycles);
	tcase_add_test(open_tc, test_fd_across_fork);
	tcase_add_test(open_tc, test_two_processes);
	tcase_add_test(open_tc, test_dup_shares_file);
	hw_suite_add(s, open_tc);
	tcase_add_test(perm, test_node_mode);
	tcase_add_test(perm, test_user_in_accel_group);
	tcase_add_test(perm, test_user_outside_group);
	hw_suite_add(s, perm);
	return s;
}

int main(int argc, char **argv)
{
	return hw_main(argc, argv, discovery_suite(), 0);
}
