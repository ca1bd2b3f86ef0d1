// SPDX-License-Identifier: MIT
/* Initialisation, devices, properties, status strings, last error. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_check.h"
#include "vnpu/hw_regs.h"
#include "vnpurt_testing.h"

START_TEST(not_initialized)
{
	void *p = NULL;
	int n;
	vnpu_stream_t s;

	RT_ERR(vnpu_device_count(&n), VNPU_ERROR_NOT_INITIALIZED);
	RT_ERR(vnpu_malloc(&p, 16), VNPU_ERROR_NOT_INITIALIZED);
	RT_ERR(vnpu_stream_create(&s, 0), VNPU_ERROR_NOT_INITIALIZED);
	RT_ERR(vnpu_memcpy(&n, &n, 4, VNPU_MEMCPY_H2H),
	       VNPU_ERROR_NOT_INITIALIZED);
	RT_ERR(vnpu_finalize(), VNPU_ERROR_NOT_INITIALIZED);
	RT_ERR(vnpu_device_synchronize(), VNPU_ERROR_NOT_INITIALIZED);
}
END_TEST

START_TEST(init_is_counted)
{
	int n = 0;

	RT_OK(vnpu_init());
	RT_OK(vnpu_init());
	RT_OK(vnpu_finalize());
	RT_OK(vnpu_device_count(&n)); /* still initialised */
	ck_assert_int_eq(n, 1);
	RT_OK(vnpu_finalize());
	RT_ERR(vnpu_device_count(&n), VNPU_ERROR_NOT_INITIALIZED);
	/* And again from scratch. */
	RT_OK(vnpu_init());
	RT_OK(vnpu_finalize());
}
END_TEST

/* A process that never finalizes cannot wrap the count round. */
START_TEST(init_count_has_a_limit)
{
	int refs = 0;

	RT_OK(vnpu_init());
	RT_OK(vnpurt_test_set_init_refs(INT_MAX - 1));
	RT_OK(vnpu_init());
	RT_ERR(vnpu_init(), VNPU_ERROR_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "vnpu_finalize"));
	RT_OK(vnpurt_test_init_refs(&refs));
	ck_assert_int_eq(refs, INT_MAX);
	ck_assert_int_eq(vnpu_is_initialized(), 1);
	RT_OK(vnpurt_test_set_init_refs(1));
	RT_OK(vnpu_finalize());
	RT_ERR(vnpurt_test_init_refs(&refs), VNPU_ERROR_NOT_INITIALIZED);
}
END_TEST

/* What a child forked at this point exits with, after `run`. */
static int child_status(int (*run)(void))
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(run());
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int uses_the_device(void)
{
	void *p = NULL;

	return vnpu_init() || vnpu_malloc(&p, 64) || vnpu_free(p) ||
	       vnpu_finalize();
}

static int refused_as_forked(void)
{
	int n = 0;

	return vnpu_is_initialized() || vnpu_init() != VNPU_ERROR_FORKED ||
	       vnpu_device_count_probe(&n) || n != 1;
}

/* Counting devices starts nothing: a child forked afterwards uses the
 * device; a child forked after vnpu_init() is refused. */
START_TEST(count_without_starting)
{
	int n = -1, m = -1;

	ck_assert_int_eq(vnpu_is_initialized(), 0);
	RT_OK(vnpu_device_count_probe(&n));
	ck_assert_int_eq(n, 1);
	RT_ERR(vnpu_device_count_probe(NULL), VNPU_ERROR_NULL_POINTER);
	ck_assert_int_eq(vnpu_is_initialized(), 0);
	ck_assert_int_eq(child_status(uses_the_device), 0);
	RT_OK(vnpu_init());
	ck_assert_int_eq(vnpu_is_initialized(), 1);
	RT_OK(vnpu_device_count(&m));
	ck_assert_int_eq(m, n);
	ck_assert_int_eq(child_status(refused_as_forked), 0);
	RT_OK(vnpu_finalize());
	ck_assert_int_eq(vnpu_is_initialized(), 0);
}
END_TEST

START_TEST(devices_and_properties)
{
	struct vnpu_device_props p;
	size_t free_b, total;
	int dev = -1;

	rt_setup();
	RT_OK(vnpu_get_device(&dev));
	ck_assert_int_eq(dev, 0);
	RT_OK(vnpu_set_device(0));
	RT_ERR(vnpu_set_device(1), VNPU_ERROR_NO_DEVICE);
	RT_ERR(vnpu_set_device(-1), VNPU_ERROR_NO_DEVICE);
	RT_ERR(vnpu_get_device(NULL), VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_device_count(NULL), VNPU_ERROR_NULL_POINTER);
	RT_OK(vnpu_device_properties(0, &p));
	ck_assert_str_eq(p.backend, "sim");
	ck_assert_str_eq(p.name, "vnpu (sim)");
	ck_assert_uint_eq(p.hw_version,
			  VNPU_HW_ABI_MAJOR << 16 | VNPU_HW_ABI_MINOR);
	ck_assert_uint_eq(p.fw_version, 0x00010000u);
	ck_assert_uint_eq(p.vram_size, 256ull << 20);
	ck_assert_uint_ge(p.cores, 1);
	ck_assert_uint_ge(p.queues, 2);
	ck_assert_str_eq(p.fw_build, "libvnpurt-sim");
	RT_ERR(vnpu_device_properties(1, &p), VNPU_ERROR_NO_DEVICE);
	RT_ERR(vnpu_device_properties(0, NULL), VNPU_ERROR_NULL_POINTER);
	RT_OK(vnpu_mem_info(&free_b, &total));
	ck_assert_uint_eq(total, 256ull << 20);
	ck_assert_uint_le(free_b, total);
	ck_assert_uint_gt(free_b, total / 2);
	RT_ERR(vnpu_mem_info(NULL, &total), VNPU_ERROR_NULL_POINTER);
	RT_OK(vnpu_device_synchronize());
	rt_teardown();
}
END_TEST

START_TEST(error_strings_and_last_error)
{
	int n;

	for (int e = 0; e < VNPU_ERROR_COUNT; e++) {
		ck_assert_ptr_nonnull(vnpu_error_string(e));
		for (int f = 0; f < e; f++)
			ck_assert_str_ne(vnpu_error_string(e),
					 vnpu_error_string(f));
	}
	ck_assert_str_eq(vnpu_error_string(VNPU_ERROR_COUNT), "unknown status");
	ck_assert_str_eq(vnpu_error_string((vnpu_error_t)-1), "unknown status");
	vnpu_get_last_error();
	ck_assert_int_eq(vnpu_peek_last_error(), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_device_count(&n), VNPU_ERROR_NOT_INITIALIZED);
	ck_assert_int_eq(vnpu_peek_last_error(), VNPU_ERROR_NOT_INITIALIZED);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "vnpu_init"));
	ck_assert_int_eq(vnpu_peek_last_error(), VNPU_ERROR_NOT_INITIALIZED);
	ck_assert_int_eq(vnpu_get_last_error(), VNPU_ERROR_NOT_INITIALIZED);
	ck_assert_int_eq(vnpu_get_last_error(), VNPU_SUCCESS);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "vnpu_init"));
}
END_TEST

START_TEST(backend_selection)
{
	struct vnpu_device_props p;

	setenv("VNPU_BACKEND", "drm", 1);
	RT_ERR(vnpu_init(), VNPU_ERROR_BACKEND_UNAVAILABLE);
	setenv("VNPU_BACKEND", "cuda", 1);
	RT_ERR(vnpu_init(), VNPU_ERROR_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "VNPU_BACKEND"));
	/* Auto-detection: no vnpu accel node here, so sim. */
	unsetenv("VNPU_BACKEND");
	RT_OK(vnpu_init());
	RT_OK(vnpu_device_properties(0, &p));
	ck_assert_str_eq(p.backend, "sim");
	RT_OK(vnpu_finalize());
	setenv("VNPU_BACKEND", "sim", 1);
	setenv("VNPU_SIM_VRAM_MB", "lots", 1);
	RT_ERR(vnpu_init(), VNPU_ERROR_INVALID_VALUE);
	ck_assert_ptr_nonnull(
		strstr(vnpu_last_error_detail(), "VNPU_SIM_VRAM_MB"));
	setenv("VNPU_SIM_VRAM_MB", "64", 1);
	RT_OK(vnpu_init());
	RT_OK(vnpu_device_properties(0, &p));
	ck_assert_uint_eq(p.vram_size, 64ull << 20);
	RT_OK(vnpu_finalize());
	setenv("VNPU_SIM_VRAM_MB", "256", 1);
	setenv("VNPU_LAUNCH_BLOCKING", "2", 1);
	RT_ERR(vnpu_init(), VNPU_ERROR_INVALID_VALUE);
	unsetenv("VNPU_LAUNCH_BLOCKING");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-init");
	TCase *tc = tcase_create("init");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, not_initialized);
	tcase_add_test(tc, init_is_counted);
	tcase_add_test(tc, init_count_has_a_limit);
	tcase_add_test(tc, count_without_starting);
	tcase_add_test(tc, devices_and_properties);
	tcase_add_test(tc, error_strings_and_last_error);
	tcase_add_test(tc, backend_selection);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
