/* SPDX-License-Identifier: MIT */
/* Helpers shared by the runtime tests. */
#ifndef RT_CHECK_H
#define RT_CHECK_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu_runtime.h"

/* A call that must succeed; prints the runtime's detail when it fails. */
#define RT_OK(call)                                                          \
	do {                                                                 \
		vnpu_error_t rt_err_ = (call);                               \
		ck_assert_msg(rt_err_ == VNPU_SUCCESS, "%s: %s (%s)", #call, \
			      vnpu_error_string(rt_err_),                    \
			      vnpu_last_error_detail());                     \
	} while (0)

/* A call that must fail with `want`, and leave it as the last error. */
#define RT_ERR(call, want)                                                   \
	do {                                                                 \
		vnpu_error_t rt_err_ = (call);                               \
		ck_assert_msg(rt_err_ == (want), "%s: got %s, want %s",      \
			      #call, vnpu_error_string(rt_err_),             \
			      vnpu_error_string(want));                      \
		ck_assert_int_eq(vnpu_get_last_error(), (want));             \
	} while (0)

static inline void rt_setup(void)
{
	RT_OK(vnpu_init());
}

static inline void rt_teardown(void)
{
	RT_OK(vnpu_finalize());
}

/* An f32 fill of n elements (dense, ND) at buffer 0. */
static inline struct vnpu_kp_fill rt_fill_params(int64_t n, double value)
{
	struct vnpu_kp_fill p;

	memset(&p, 0, sizeof(p));
	p.out.dtype = VNPU_DTYPE_F32;
	p.out.format = VNPU_FORMAT_ND;
	p.out.ndim = 1;
	p.out.sizes[0] = n;
	p.out.strides[0] = 1;
	p.value = value;
	return p;
}

static inline vnpu_error_t rt_fill(float *dev, int64_t n, double value,
				   vnpu_stream_t s)
{
	struct vnpu_kp_fill p = rt_fill_params(n, value);
	struct vnpu_launch_buffer b = {dev, (size_t)(n ? n : 1) * 4,
				       VNPU_ACCESS_WRITE};

	return vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), s);
}

/* Deterministic pseudo-random numbers. */
static inline uint32_t rt_rand(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*state >> 33);
}

static inline int rt_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* RT_CHECK_H */
