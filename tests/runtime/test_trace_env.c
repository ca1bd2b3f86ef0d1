// SPDX-License-Identifier: MIT
/* VNPU_TRACE writes a Chrome trace with device-timed operations and host
 * synchronisation; events it loses, and a file it cannot write, are
 * never silent. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_check.h"
#include "vnpurt_testing.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s++;
	}
	return n;
}

START_TEST(trace_file)
{
	char path[] = "vnpu-trace-XXXXXX";
	int fd = mkstemp(path);
	float *d, h[64];
	vnpu_stream_t s;
	char *json;

	ck_assert_int_ge(fd, 0);
	close(fd);
	setenv("VNPU_TRACE", path, 1);
	RT_OK(vnpu_init());
	unsetenv("VNPU_TRACE");
	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_malloc((void **)&d, sizeof(h)));
	RT_OK(rt_fill(d, 64, 1, s));
	RT_OK(rt_fill(d, 64, 2, s));
	RT_OK(vnpu_memset_async(d, 0, 16, s));
	RT_OK(vnpu_memcpy_async(h, d, sizeof(h), VNPU_MEMCPY_D2H, s));
	RT_OK(vnpu_stream_synchronize(s));
	ck_assert_float_eq(h[0], 0.0f);
	ck_assert_float_eq(h[63], 2.0f);
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_stream_destroy(s));
	RT_OK(vnpu_finalize());
	json = slurp(path);
	ck_assert_ptr_nonnull(json);
	ck_assert_ptr_nonnull(strstr(json, "\"traceEvents\""));
	ck_assert_int_eq(count(json, "\"name\":\"launch fill\""), 2);
	ck_assert_int_eq(count(json, "\"name\":\"memset\""), 1);
	ck_assert_int_eq(count(json, "\"name\":\"memcpy D2H (staged)\""), 1);
	ck_assert_int_ge(count(json, "\"name\":\"stream synchronize\""), 1);
	ck_assert_int_ge(count(json, "\"ph\":\"X\""), 5);
	/* Balanced braces: a well-formed document. */
	ck_assert_int_eq(count(json, "{"), count(json, "}"));
	ck_assert_int_eq(count(json, "["), count(json, "]"));
	free(json);
	unlink(path);
	/* A session without VNPU_TRACE writes nothing. */
	RT_OK(vnpu_init());
	RT_OK(vnpu_finalize());
	ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

/* stderr goes to a temporary file from capture_begin() to capture_end(),
 * which returns what was written. */
static char captured_path[32];
static int saved_stderr = -1;

static void capture_begin(void)
{
	int fd;

	snprintf(captured_path, sizeof(captured_path), "vnpu-stderr-XXXXXX");
	fd = mkstemp(captured_path);

	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved_stderr = dup(2);
	ck_assert_int_ge(saved_stderr, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
	close(fd);
}

static char *capture_end(void)
{
	char *text;

	fflush(stderr);
	ck_assert_int_eq(dup2(saved_stderr, 2), 2);
	close(saved_stderr);
	text = slurp(captured_path);
	ck_assert_ptr_nonnull(text);
	unlink(captured_path);
	return text;
}

/* A short session tracing a few operations, with VNPU_TRACE=path. */
static void traced_session(const char *path, bool finalize)
{
	float *d;

	setenv("VNPU_TRACE", path, 1);
	RT_OK(vnpu_init());
	unsetenv("VNPU_TRACE");
	RT_OK(vnpu_malloc((void **)&d, 256));
	for (int i = 0; i < 4; i++)
		RT_OK(rt_fill(d, 64, i, NULL));
	RT_OK(vnpu_stream_synchronize(NULL));
	RT_OK(vnpu_free(d));
	if (finalize)
		RT_OK(vnpu_finalize());
}

START_TEST(lost_events_are_marked)
{
	char path[] = "vnpu-trace-XXXXXX";
	int fd = mkstemp(path);
	char *json, *err;

	ck_assert_int_ge(fd, 0);
	close(fd);
	capture_begin();
	/* The first three events find no memory; the rest do. */
	vnpurt_test_trace_fail_allocs(3);
	traced_session(path, true);
	err = capture_end();
	json = slurp(path);
	ck_assert_ptr_nonnull(json);
	ck_assert_msg(strstr(json, "\"name\":\"trace truncated: 3 events "
				   "lost\""),
		      "no marker in %s", json);
	ck_assert_int_eq(count(json, "trace truncated"), 1);
	/* Four launches and a synchronize were traced, three lost. */
	ck_assert_int_eq(count(json, "\"ph\":\"X\""), 2);
	ck_assert_int_eq(count(json, "{"), count(json, "}"));
	/* One warning, however many were lost. */
	ck_assert_int_eq(count(err, "VNPU_TRACE"), 1);
	ck_assert_msg(strstr(err, "out of memory") && strstr(err, path),
		      "stderr: %s", err);
	free(json);
	free(err);
	unlink(path);
}
END_TEST

/* A file that cannot be written: a warning with its path and why. */
static void expect_write_warning(const char *path, int errnum)
{
	char *err;

	capture_begin();
	traced_session(path, true);
	err = capture_end();
	ck_assert_int_eq(count(err, "VNPU_TRACE"), 1);
	ck_assert_msg(strstr(err, path) && strstr(err, strerror(errnum)),
		      "stderr lacks \"%s\" and \"%s\": %s", path,
		      strerror(errnum), err);
	free(err);
}

START_TEST(unwritable_file_warns)
{
	char dir[] = "vnpu-trace-dir-XXXXXX", path[64];

	/* A directory that is gone: the file cannot be created. */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(rmdir(dir), 0);
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	expect_write_warning(path, ENOENT);
	/* A device that takes no data: the writes fail. */
	if (access("/dev/full", W_OK) == 0)
		expect_write_warning("/dev/full", ENOSPC);
}
END_TEST

/* A program that never finalizes writes its trace at exit: a failure
 * there warns too. */
START_TEST(unwritable_file_at_exit_warns)
{
	char dir[] = "vnpu-trace-dir-XXXXXX", path[64];
	char *err;
	int status;
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(rmdir(dir), 0);
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	capture_begin();
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		traced_session(path, false);
		exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	err = capture_end();
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_msg(strstr(err, path) && strstr(err, strerror(ENOENT)),
		      "stderr: %s", err);
	free(err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-trace-env");
	TCase *tc = tcase_create("trace");
	TCase *loss = tcase_create("loss");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, trace_file);
	suite_add_tcase(s, tc);
	tcase_set_timeout(loss, 60);
	tcase_add_test(loss, lost_events_are_marked);
	tcase_add_test(loss, unwritable_file_warns);
	tcase_add_test(loss, unwritable_file_at_exit_warns);
	suite_add_tcase(s, loss);
	return rt_run(s);
}
