// SPDX-License-Identifier: MIT
/*
 * A kernel that runs past the driver's time limit (drm backend, in the VM:
 * tests/vm/run-runtime-suite.sh) is aborted by the driver and reported as
 * VNPU_ERROR_LAUNCH_TIMEOUT with a detail naming the launch; the process's
 * context is banned afterwards (docs/runtime-api.md). The sim backend has
 * no time limit: the program reports itself skipped there (exit 77).
 */
#include <stdio.h>
#include <time.h>

#include "rt_check.h"

#define M 256
#define K (1ll << 23) /* about 16 s of one core: far past the 1 s limit */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(long_kernel_times_out)
{
	const float one = 1.0f;
	struct vnpu_launch_buffer b[2];
	struct vnpu_kp_gemm p;
	float *dev_one, *out;
	int64_t t0, took;
	vnpu_error_t err;

	RT_OK(vnpu_malloc((void **)&dev_one, 4096));
	RT_OK(vnpu_malloc((void **)&out, 4ull * M * M));
	RT_OK(vnpu_memcpy(dev_one, &one, 4, VNPU_MEMCPY_H2D));
	/* out[M,M] = A[M,K] x B[K,M], A and B one float broadcast */
	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.a = vnpu_tensor_f32_2d(0, M, K, 0, 0);
	p.b = vnpu_tensor_f32_2d(0, K, M, 0, 0);
	p.out = vnpu_tensor_f32_2d(1, M, M, M, 1);
	b[0] = (struct vnpu_launch_buffer){ dev_one, 4, VNPU_ACCESS_READ };
	b[1] = (struct vnpu_launch_buffer){ out, 4ull * M * M,
					    VNPU_ACCESS_WRITE };
	t0 = now_ms();
	RT_OK(vnpu_launch_kernel("gemm", 1, b, 2, &p, sizeof(p), NULL));
	err = vnpu_stream_synchronize(NULL);
	took = now_ms() - t0;
	printf("time limit: the launch ended after %.2f s: %s (%s)\n",
	       took / 1e3, vnpu_error_string(err), vnpu_last_error_detail());
	ck_assert_int_eq(err, VNPU_ERROR_LAUNCH_TIMEOUT);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "launch gemm"));
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "time limit"));
	/* Aborted, not run to its end. */
	ck_assert_int_lt(took, 10000);
	/* The context is banned: later work fails, it is not lost silently. */
	ck_assert_int_ne(vnpu_memset(out, 0, 64), VNPU_SUCCESS);
}
END_TEST

int main(void)
{
	struct vnpu_device_props props;
	SRunner *sr;
	Suite *s;
	TCase *tc;
	int failed;

	if (vnpu_init() || vnpu_device_properties(0, &props) ||
	    vnpu_finalize()) {
		printf("no device: %s\n", vnpu_last_error_detail());
		return 1;
	}
	if (strcmp(props.backend, "drm")) {
		printf("SKIP: the %s backend has no time limit\n",
		       props.backend);
		return 77;
	}
	/* Only now: what Check allocates is freed by srunner_free. */
	s = suite_create("runtime-time-limit");
	tc = tcase_create("time-limit");
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, long_kernel_times_out);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
