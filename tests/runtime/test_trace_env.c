// SPDX-License-Identifier: MIT
/* VNPU_TRACE writes a Chrome trace with device-timed operations and host
 * synchronisation. */
#include <stdio.h>
#include <unistd.h>

#include "rt_check.h"

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

int main(void)
{
	Suite *s = suite_create("runtime-trace-env");
	TCase *tc = tcase_create("trace");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, trace_file);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
