// SPDX-License-Identifier: MIT
/* Kernel launch: real kernels against a host reference, every argument
 * error, device-side rejections reported asynchronously. */
#include "rt_check.h"

START_TEST(binary_add_matches_reference)
{
	int64_t sizes[] = {1, 15, 17, 1000, 65537};
	uint64_t seed = 11;

	for (unsigned t = 0; t < 5; t++) {
		int64_t n = sizes[t];
		float *a = malloc(n * 4), *b = malloc(n * 4), *o = malloc(n * 4);
		void *da, *db, *dout;
		struct vnpu_kp_binary p;

		for (int64_t i = 0; i < n; i++) {
			a[i] = (float)(rt_rand(&seed) % 1000) / 7.0f;
			b[i] = (float)(rt_rand(&seed) % 1000) / 3.0f;
		}
		RT_OK(vnpu_malloc(&da, n * 4));
		RT_OK(vnpu_malloc(&db, n * 4));
		RT_OK(vnpu_malloc(&dout, n * 4));
		RT_OK(vnpu_memcpy(da, a, n * 4, VNPU_MEMCPY_H2D));
		RT_OK(vnpu_memcpy(db, b, n * 4, VNPU_MEMCPY_H2D));
		memset(&p, 0, sizeof(p));
		p.op = VNPU_BINARY_ADD;
		p.alpha = 2.0;
		for (int k = 0; k < 3; k++) {
			struct vnpu_tensor *x = k == 0 ? &p.a : k == 1 ? &p.b
								 : &p.out;

			x->buffer = (uint32_t)k;
			x->dtype = VNPU_DTYPE_F32;
			x->format = VNPU_FORMAT_ND;
			x->ndim = 1;
			x->sizes[0] = n;
			x->strides[0] = 1;
		}
		{
			struct vnpu_launch_buffer bufs[3] = {
				{da, n * 4, VNPU_ACCESS_READ},
				{db, n * 4, VNPU_ACCESS_READ},
				{dout, n * 4, VNPU_ACCESS_WRITE},
			};

			RT_OK(vnpu_launch_kernel("binary", 4, bufs, 3, &p,
						 sizeof(p), NULL));
		}
		RT_OK(vnpu_memcpy(o, dout, n * 4, VNPU_MEMCPY_D2H));
		for (int64_t i = 0; i < n; i++)
			ck_assert_float_eq_tol(o[i], a[i] + 2.0f * b[i],
					       1e-5f * (a[i] + 2 * b[i]) + 1e-6f);
		RT_OK(vnpu_free(da));
		RT_OK(vnpu_free(db));
		RT_OK(vnpu_free(dout));
		free(a);
		free(b);
		free(o);
	}
}
END_TEST

START_TEST(pinned_buffers_in_launches)
{
	float *pin;
	struct vnpu_kp_fill p = rt_fill_params(1000, -1.25);
	struct vnpu_launch_buffer b;

	RT_OK(vnpu_host_malloc((void **)&pin, 4000));
	b.ptr = pin;
	b.size = 4000;
	b.access = VNPU_ACCESS_WRITE;
	RT_OK(vnpu_launch_kernel("fill", 3, &b, 1, &p, sizeof(p), NULL));
	RT_OK(vnpu_stream_synchronize(NULL));
	for (int i = 0; i < 1000; i++)
		ck_assert_float_eq(pin[i], -1.25f);
	RT_OK(vnpu_host_free(pin));
}
END_TEST

START_TEST(launch_argument_errors)
{
	struct vnpu_kp_fill p = rt_fill_params(16, 1);
	struct vnpu_launch_buffer b, bufs[9];
	void *d, *freed;
	char host[64];

	RT_OK(vnpu_malloc(&d, 64));
	RT_OK(vnpu_malloc(&freed, 64));
	RT_OK(vnpu_free(freed));
	b.ptr = d;
	b.size = 64;
	b.access = VNPU_ACCESS_WRITE;
	RT_ERR(vnpu_launch_kernel(NULL, 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_launch_kernel("nope", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_UNKNOWN_KERNEL);
	RT_ERR(vnpu_launch_kernel("", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_UNKNOWN_KERNEL);
	RT_ERR(vnpu_launch_kernel("fill", 0, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_launch_kernel("fill", 65537, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_VALUE);
	RT_ERR(vnpu_launch_kernel("fill", 1, NULL, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, NULL, sizeof(p), NULL),
	       VNPU_ERROR_NULL_POINTER);
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p) - 8, NULL),
	       VNPU_ERROR_INVALID_VALUE);
	for (int i = 0; i < 9; i++)
		bufs[i] = b;
	RT_ERR(vnpu_launch_kernel("fill", 1, bufs, 9, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_VALUE);
	b.size = 0;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_VALUE);
	b.size = 64;
	b.access = 0;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_VALUE);
	b.access = 4;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_VALUE);
	b.access = VNPU_ACCESS_WRITE;
	b.size = 65;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);
	b.size = 64;
	b.ptr = host;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);
	b.ptr = freed;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_INVALID_DEVICE_POINTER);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "buffer 0"));
	b.ptr = NULL;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), NULL),
	       VNPU_ERROR_NULL_POINTER);
	b.ptr = d;
	RT_ERR(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p),
				  (vnpu_stream_t)(uintptr_t)5),
	       VNPU_ERROR_INVALID_HANDLE);
	RT_OK(vnpu_free(d));
}
END_TEST

START_TEST(device_rejections_are_async)
{
	struct vnpu_kp_fill p = rt_fill_params(17, 1); /* 68 bytes */
	struct vnpu_launch_buffer b;
	vnpu_stream_t s;
	float *d, h[16];

	RT_OK(vnpu_stream_create(&s, 0));
	RT_OK(vnpu_malloc((void **)&d, 64));
	b.ptr = d;
	b.size = 64;
	b.access = VNPU_ACCESS_WRITE;
	/* The descriptor needs more than the buffer: INVALID_ARGS. */
	RT_OK(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), s));
	RT_ERR(vnpu_stream_synchronize(s), VNPU_ERROR_LAUNCH_FAILURE);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "launch fill #"));
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "INVALID_ARGS"));
	/* Reported once, then the stream works. */
	RT_OK(vnpu_stream_synchronize(s));
	p.out.dtype = 99;
	p.out.sizes[0] = 16;
	RT_OK(vnpu_launch_kernel("fill", 1, &b, 1, &p, sizeof(p), s));
	vnpu_error_t q;

	while ((q = vnpu_stream_query(s)) == VNPU_ERROR_NOT_READY)
		;
	ck_assert(q == VNPU_ERROR_LAUNCH_FAILURE || q == VNPU_ERROR_UNSUPPORTED);
	ck_assert_int_eq(vnpu_get_last_error(), q);
	RT_OK(vnpu_stream_query(s));
	RT_OK(rt_fill(d, 16, 9, s));
	RT_OK(vnpu_stream_synchronize(s));
	RT_OK(vnpu_memcpy(h, d, 64, VNPU_MEMCPY_D2H));
	for (int i = 0; i < 16; i++)
		ck_assert_float_eq(h[i], 9.0f);
	RT_OK(vnpu_free(d));
	RT_OK(vnpu_stream_destroy(s));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-launch");
	TCase *tc = tcase_create("launch");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, binary_add_matches_reference);
	tcase_add_test(tc, pinned_buffers_in_launches);
	tcase_add_test(tc, launch_argument_errors);
	tcase_add_test(tc, device_rejections_are_async);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
