// SPDX-License-Identifier: MIT
/*
 * A GEMM on FRACTAL_NZ operands, fed by two streams that meet through an
 * event, checked against a plain CPU loop.
 *
 *   stream A: copy a (ND) to the device, cast it to FRACTAL_NZ, record evA
 *   stream B: copy b (ND) to the device, cast it to FRACTAL_NZ,
 *             wait for evA, launch "gemm" (out in ND), record evB
 *   host:     wait for evB, copy out back, compare
 *
 * Build out of tree:
 *   cc ex_gemm.c $(pkg-config --cflags --libs vnpurt) -o ex_gemm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vnpu_runtime.h>

#include "example_check.h"

#define M 100
#define K 70
#define N 50

static double absd(double x)
{
	return x < 0 ? -x : x;
}

/* A tensor of kernel params: logical sizes, in buffer `buffer` of the
 * launch. Internal formats (FRACTAL_NZ) take no strides; ND takes dense
 * row-major strides. */
static struct vnpu_tensor matrix(uint32_t buffer, uint32_t format, int64_t rows,
				 int64_t cols)
{
	const int64_t sizes[2] = {rows, cols};

	return vnpu_tensor_dense(buffer, VNPU_DTYPE_F32, format, 2, sizes);
}

/* Uploads host[rows x cols] on `stream` and casts it to FRACTAL_NZ in
 * *nz_out (allocated here). The ND staging buffer is returned in *nd_out
 * so that the caller frees it after the stream is done with it. */
static void upload_nz(const float *host, int64_t rows, int64_t cols,
		      vnpu_stream_t stream, void **nd_out, void **nz_out,
		      size_t *nz_bytes)
{
	int64_t shape[2] = {rows, cols};
	vnpu_tensor_desc_t nd, nz;
	size_t nd_bytes;

	CHECK(vnpu_tensor_desc_create(&nd, VNPU_DTYPE_F32, 2, shape,
				      VNPU_FORMAT_ND));
	CHECK(vnpu_tensor_desc_create(&nz, VNPU_DTYPE_F32, 2, shape,
				      VNPU_FORMAT_FRACTAL_NZ));
	CHECK(vnpu_tensor_desc_storage_size(nd, &nd_bytes));
	CHECK(vnpu_tensor_desc_storage_size(nz, nz_bytes));
	CHECK(vnpu_malloc(nd_out, nd_bytes));
	CHECK(vnpu_malloc(nz_out, *nz_bytes));
	/* pageable host memory: the call returns once `host` was consumed */
	CHECK(vnpu_memcpy_async(*nd_out, host, nd_bytes, VNPU_MEMCPY_H2D,
				stream));
	CHECK(vnpu_format_cast(nd, *nd_out, nz, *nz_out, stream));
	/* descriptors are host metadata: free to go once the call returned */
	CHECK(vnpu_tensor_desc_destroy(nd));
	CHECK(vnpu_tensor_desc_destroy(nz));
}

int main(void)
{
	static float a[M * K], b[K * N], out[M * N];
	struct vnpu_device_props props;
	vnpu_stream_t sa, sb;
	vnpu_event_t ev_a, ev_start, ev_done;
	void *a_nd, *a_nz, *b_nd, *b_nz, *d_out;
	size_t a_nz_bytes, b_nz_bytes;
	struct vnpu_kp_gemm kp;
	struct vnpu_launch_buffer bufs[3];
	double max_err = 0;
	float ms;

	for (int i = 0; i < M * K; i++)
		a[i] = (float)((i * 7 % 23) - 11) / 8.0f;
	for (int i = 0; i < K * N; i++)
		b[i] = (float)((i * 5 % 19) - 9) / 4.0f;

	CHECK(vnpu_init());
	CHECK(vnpu_device_properties(0, &props));
	printf("device: %s, %u cores, backend %s\n", props.name, props.cores,
	       props.backend);

	CHECK(vnpu_stream_create(&sa, VNPU_STREAM_PRIORITY_LOW));
	CHECK(vnpu_stream_create(&sb, VNPU_STREAM_PRIORITY_HIGH));
	CHECK(vnpu_event_create(&ev_a, VNPU_EVENT_DISABLE_TIMING));
	CHECK(vnpu_event_create(&ev_start, VNPU_EVENT_DEFAULT));
	CHECK(vnpu_event_create(&ev_done, VNPU_EVENT_DEFAULT));

	/* Both operands travel at once, one per stream. */
	CHECK(vnpu_event_record(ev_start, sb));
	upload_nz(a, M, K, sa, &a_nd, &a_nz, &a_nz_bytes);
	CHECK(vnpu_event_record(ev_a, sa));
	upload_nz(b, K, N, sb, &b_nd, &b_nz, &b_nz_bytes);
	CHECK(vnpu_malloc(&d_out, sizeof(out)));

	/* The GEMM on stream B must not start before a is ready on A. */
	CHECK(vnpu_stream_wait_event(sb, ev_a));
	memset(&kp, 0, sizeof(kp));
	kp.alpha = 1.0f;
	kp.beta = 0.0f;
	kp.activation = VNPU_ACT_NONE;
	kp.a = matrix(0, VNPU_FORMAT_FRACTAL_NZ, M, K);
	kp.b = matrix(1, VNPU_FORMAT_FRACTAL_NZ, K, N);
	kp.out = matrix(2, VNPU_FORMAT_ND, M, N);
	bufs[0] =
		(struct vnpu_launch_buffer){a_nz, a_nz_bytes, VNPU_ACCESS_READ};
	bufs[1] =
		(struct vnpu_launch_buffer){b_nz, b_nz_bytes, VNPU_ACCESS_READ};
	bufs[2] = (struct vnpu_launch_buffer){d_out, sizeof(out),
					      VNPU_ACCESS_WRITE};
	CHECK(vnpu_launch_kernel("gemm", props.cores, bufs, 3, &kp, sizeof(kp),
				 sb));
	CHECK(vnpu_event_record(ev_done, sb));

	/* The host waits for the last event only: it covers everything
	 * stream B did, and through ev_a the part of stream A it needed. */
	CHECK(vnpu_event_synchronize(ev_done));
	CHECK(vnpu_memcpy(out, d_out, sizeof(out), VNPU_MEMCPY_D2H));
	CHECK(vnpu_event_elapsed_time(&ms, ev_start, ev_done));

	for (int i = 0; i < M; i++) {
		for (int j = 0; j < N; j++) {
			double ref = 0, err;

			for (int k = 0; k < K; k++)
				ref += (double)a[i * K + k] * b[k * N + j];
			err = absd(out[i * N + j] - ref) / (absd(ref) + 1.0);
			if (err > max_err)
				max_err = err;
		}
	}
	printf("gemm %dx%dx%d on FRACTAL_NZ operands, two streams joined by "
	       "an event: %.3f ms device time\n",
	       M, K, N, ms);
	printf("checked %d outputs against a CPU loop: max relative error "
	       "%.2e\n",
	       M * N, max_err);

	CHECK(vnpu_free(a_nd));
	CHECK(vnpu_free(a_nz));
	CHECK(vnpu_free(b_nd));
	CHECK(vnpu_free(b_nz));
	CHECK(vnpu_free(d_out));
	CHECK(vnpu_event_destroy(ev_a));
	CHECK(vnpu_event_destroy(ev_start));
	CHECK(vnpu_event_destroy(ev_done));
	CHECK(vnpu_stream_destroy(sa));
	CHECK(vnpu_stream_destroy(sb));
	CHECK(vnpu_finalize());
	if (max_err > 1e-5) {
		printf("FAILED: error above 1e-5\n");
		return 1;
	}
	printf("OK\n");
	return 0;
}
