// SPDX-License-Identifier: MIT
/*
 * Format cast: an fp32 activation [N, C, H, W] = [2, 20, 3, 5] goes
 * NCHW -> NC1HWC0 -> NCHW on the device.
 *
 * NC1HWC0 splits the channels into groups of C0 = 16 and stores each
 * group innermost: storage [N, C1, H, W, C0] with C1 = ceil(20/16) = 2, so
 * channels 20..31 of the second group are padding, written as zero. The
 * program prints the storage shapes, checks one element at the position
 * the layout formula gives, checks the padding, and checks that the round
 * trip gives the input back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vnpu_runtime.h>

#include "example_check.h"

enum { N = 2, C = 20, H = 3, W = 5, C0 = 16, C1 = 2 };

static void print_storage(const char *name, vnpu_tensor_desc_t d)
{
	int64_t shape[VNPU_STORAGE_MAX_DIMS];
	uint32_t nd;
	size_t bytes;

	CHECK(vnpu_tensor_desc_storage_shape(d, &nd, shape));
	CHECK(vnpu_tensor_desc_storage_size(d, &bytes));
	printf("  %-8s storage [", name);
	for (uint32_t i = 0; i < nd; i++)
		printf("%s%lld", i ? ", " : "", (long long)shape[i]);
	printf("], %zu bytes\n", bytes);
}

int main(void)
{
	static float x[N * C * H * W], packed[N * C1 * H * W * C0],
		back[N * C * H * W];
	int64_t shape[4] = {N, C, H, W};
	vnpu_tensor_desc_t nchw, nc1hwc0, bias;
	size_t nchw_bytes, packed_bytes;
	void *d_x, *d_packed, *d_back;
	int64_t n = 1, c = 17, h = 2, w = 4;
	size_t pad_nonzero = 0;
	int ok;

	for (int i = 0; i < N * C * H * W; i++)
		x[i] = (float)i;

	CHECK(vnpu_init());
	CHECK(vnpu_tensor_desc_create(&nchw, VNPU_DTYPE_F32, 4, shape,
				      VNPU_FORMAT_NCHW));
	CHECK(vnpu_tensor_desc_create(&nc1hwc0, VNPU_DTYPE_F32, 4, shape,
				      VNPU_FORMAT_NC1HWC0));
	/* A rank-1 tensor in an NCHW-family format is padded to 4-D as
	 * torch_npu does: [C] is [1, C, 1, 1]. */
	CHECK(vnpu_tensor_desc_create(&bias, VNPU_DTYPE_F16, 1, &shape[1],
				      VNPU_FORMAT_NC1HWC0));
	printf("fp32 [%d, %d, %d, %d], and an fp16 [%d] bias:\n", N, C, H, W,
	       C);
	print_storage("NCHW", nchw);
	print_storage("NC1HWC0", nc1hwc0);
	print_storage("bias", bias);

	CHECK(vnpu_tensor_desc_storage_size(nchw, &nchw_bytes));
	CHECK(vnpu_tensor_desc_storage_size(nc1hwc0, &packed_bytes));
	CHECK(vnpu_malloc(&d_x, nchw_bytes));
	CHECK(vnpu_malloc(&d_packed, packed_bytes));
	CHECK(vnpu_malloc(&d_back, nchw_bytes));
	CHECK(vnpu_memcpy(d_x, x, nchw_bytes, VNPU_MEMCPY_H2D));

	/* Both casts on the default stream (NULL), in order. */
	CHECK(vnpu_format_cast(nchw, d_x, nc1hwc0, d_packed, NULL));
	CHECK(vnpu_format_cast(nc1hwc0, d_packed, nchw, d_back, NULL));
	CHECK(vnpu_memcpy(packed, d_packed, packed_bytes, VNPU_MEMCPY_D2H));
	CHECK(vnpu_memcpy(back, d_back, nchw_bytes, VNPU_MEMCPY_D2H));

	/* (n, c, h, w) lives at (((n*C1 + c/C0)*H + h)*W + w)*C0 + c%C0 */
	{
		size_t at =
			(size_t)((((n * C1 + c / C0) * H + h) * W + w) * C0 +
				 c % C0);
		float want = x[((n * C + c) * H + h) * W + w];

		printf("element (1, 17, 2, 4) = %g at storage index %zu: %s\n",
		       packed[at], at, packed[at] == want ? "ok" : "WRONG");
		ok = packed[at] == want;
	}
	/* channels 20..31 of group c1 = 1 are padding */
	for (int in = 0; in < N; in++)
		for (int i = 0; i < H * W; i++)
			for (int c0 = C - C0; c0 < C0; c0++)
				pad_nonzero += packed[((in * C1 + 1) * H * W +
						       i) * C0 +
						      c0] != 0.0f;
	printf("padding channels 20..31 all zero: %s\n",
	       pad_nonzero ? "NO" : "yes");
	ok = ok && !pad_nonzero;
	printf("NCHW -> NC1HWC0 -> NCHW gives the input back: %s\n",
	       memcmp(back, x, sizeof(x)) ? "NO" : "yes");
	ok = ok && !memcmp(back, x, sizeof(x));

	CHECK(vnpu_free(d_x));
	CHECK(vnpu_free(d_packed));
	CHECK(vnpu_free(d_back));
	CHECK(vnpu_tensor_desc_destroy(nchw));
	CHECK(vnpu_tensor_desc_destroy(nc1hwc0));
	CHECK(vnpu_tensor_desc_destroy(bias));
	CHECK(vnpu_finalize());
	printf(ok ? "OK\n" : "FAILED\n");
	return !ok;
}
