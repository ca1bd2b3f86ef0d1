// SPDX-License-Identifier: MIT
/*
 * Elementwise throughput: the BINARY kernel adding two dense f32 tensors
 * (validate + one block of one, on this thread) against memcpy, both
 * measured in this run, the median of several repetitions.
 *
 * Two baselines:
 *   - memcpy of the output's bytes: the add writes those and reads twice
 *     as much, so a ratio near 0.67 means the add runs at memcpy speed;
 *   - memcpy moving as many bytes as the add does (it reads 2 arrays and
 *     writes 1: copying 1.5 arrays reads and writes the same total), the
 *     like-for-like comparison; the goal is a ratio >= 0.7.
 * Ratios are memcpy time / add time for the stated bytes.
 *
 * Usage: bench-elementwise [mebi-elements] [runs]   (default 16 and 9)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "kernel.h"


static struct vnpu_tensor dense_f32(uint32_t buffer, int64_t n)
{
	return vnpu_tensor_dense(buffer, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 1, &n);
}

static double time_memcpy(void *dst, const void *src, size_t bytes)
{
	double t0 = bench_now();

	memcpy(dst, src, bytes);
	return bench_now() - t0;
}

int main(int argc, char **argv)
{
	int64_t mi = argc > 1 ? atoll(argv[1]) : 16;
	int runs = argc > 2 ? atoi(argv[2]) : 9;
	int64_t n = mi * 1024 * 1024;
	uint64_t bytes = (uint64_t)n * sizeof(float);
	const struct vnpu_kernel_def *k = vnpu_kernel_find(VNPU_KERNEL_BINARY);
	struct vnpu_kbuf bufs[3];
	struct vnpu_kp_binary kp;
	float *a, *b, *out;
	char *copy_src, *copy_dst;
	double t_add, t_out, t_all, gib = 1024.0 * 1024 * 1024;
	double *s_add, *s_out, *s_all;
	uint32_t st;

	if (mi < 1 || runs < 1) {
		fprintf(stderr, "usage: %s [mebi-elements] [runs]\n", argv[0]);
		return 2;
	}
	if (!k) {
		fprintf(stderr, "binary kernel not registered\n");
		return 1;
	}
	a = bench_alloc(bytes);
	b = bench_alloc(bytes);
	out = bench_alloc(bytes);
	/* memcpy buffers of 1.5 arrays, the add's total traffic */
	copy_src = bench_alloc(bytes + bytes / 2);
	copy_dst = bench_alloc(bytes + bytes / 2);
	for (int64_t i = 0; i < n; i++) {
		a[i] = (float)(i % 1000) * 0.5f;
		b[i] = (float)(i % 777) * 0.25f;
	}
	bufs[0] = (struct vnpu_kbuf){a, bytes, VNPU_ACCESS_READ};
	bufs[1] = (struct vnpu_kbuf){b, bytes, VNPU_ACCESS_READ};
	bufs[2] = (struct vnpu_kbuf){out, bytes, VNPU_ACCESS_WRITE};
	memset(&kp, 0, sizeof(kp));
	kp.op = VNPU_BINARY_ADD;
	kp.alpha = 1.0;
	kp.a = dense_f32(0, n);
	kp.b = dense_f32(1, n);
	kp.out = dense_f32(2, n);

	/* interleaved, so that load from other processes hits all alike */
	s_add = calloc((size_t)runs, sizeof(double));
	s_out = calloc((size_t)runs, sizeof(double));
	s_all = calloc((size_t)runs, sizeof(double));
	if (!s_add || !s_out || !s_all) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = bench_now();

		st = k->validate(&kp, bufs, 3);
		if (st != VNPU_STATUS_OK) {
			fprintf(stderr, "validate: status %u\n", st);
			return 1;
		}
		k->run(&kp, bufs, 0, 1);
		s_add[r] = bench_now() - t0;
		s_out[r] = time_memcpy(copy_dst, copy_src, bytes);
		s_all[r] = time_memcpy(copy_dst, copy_src, bytes + bytes / 2);
	}
	t_add = bench_median(s_add, runs);
	t_out = bench_median(s_out, runs);
	t_all = bench_median(s_all, runs);
	free(s_add);
	free(s_out);
	free(s_all);
	/* the result must be right, or the timing means nothing */
	for (int64_t i = 0; i < n; i += 4099)
		if (out[i] != a[i] + b[i]) {
			fprintf(stderr, "wrong sum at %lld\n", (long long)i);
			return 1;
		}

	printf("f32 add, %lld Mi elements, 1 block, median of %d; baseline "
	       "glibc memcpy\n",
	       (long long)mi, runs);
	printf("  add            %8.3f ms  %6.2f GiB/s output  %6.2f GiB/s "
	       "moved (3 arrays)\n",
	       t_add * 1e3, (double)bytes / t_add / gib,
	       3.0 * (double)bytes / t_add / gib);
	printf("  memcpy output  %8.3f ms  %6.2f GiB/s copied  ratio "
	       "add/memcpy "
	       "%.2fx (0.67x = memcpy speed)\n",
	       t_out * 1e3, (double)bytes / t_out / gib, t_out / t_add);
	printf("  memcpy 1.5 arr %8.3f ms  %6.2f GiB/s moved   ratio "
	       "add/memcpy "
	       "%.2fx (goal >= 0.7x)\n",
	       t_all * 1e3, 3.0 * (double)bytes / t_all / gib,
	       t_all / t_add);
	free(a);
	free(b);
	free(out);
	free(copy_src);
	free(copy_dst);
	return 0;
}
