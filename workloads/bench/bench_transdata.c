// SPDX-License-Identifier: MIT
/*
 * TransData throughput against memcpy, both measured in this run on one
 * thread: the kernel runs as one block (block 0 of 1), memcpy copies as
 * many bytes as the larger side of the conversion (plain or packed
 * storage) between two other buffers. Both rates are reported as
 * larger-side bytes per second, medians of several runs, so the ratio is
 * memcpy time / TransData time for the same amount of data.
 *
 * Usage: bench-transdata [runs [name-substring [isa]]]
 * (default 9 runs, all cases; isa: auto, portable, avx2 or avx512 limits
 * TransData's vector paths)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "kernel.h"
#include "layout.h"
#include "tensor.h"

static const struct vnpu_kernel_def *transdata;

struct bench_case {
	const char *name;
	uint32_t dtype;
	uint32_t ndim;
	int64_t sizes[4];
	uint32_t format;    /* the internal side */
	bool channels_last; /* plain side NHWC-strided */
};

static const struct bench_case cases[] = {
	{"ND f16 [4096,4096] <-> NZ",
	 VNPU_DTYPE_F16,
	 2,
	 {4096, 4096},
	 VNPU_FORMAT_FRACTAL_NZ,
	 false},
	{"ND f32 [4096,4096] <-> NZ",
	 VNPU_DTYPE_F32,
	 2,
	 {4096, 4096},
	 VNPU_FORMAT_FRACTAL_NZ,
	 false},
	{"ND i8 [4096,4096] <-> NZ",
	 VNPU_DTYPE_I8,
	 2,
	 {4096, 4096},
	 VNPU_FORMAT_FRACTAL_NZ,
	 false},
	{"ND f16 [8,1000,1000] <-> NZ",
	 VNPU_DTYPE_F16,
	 3,
	 {8, 1000, 1000},
	 VNPU_FORMAT_FRACTAL_NZ,
	 false},
	{"NCHW f16 [32,64,56,56] <-> 5HD",
	 VNPU_DTYPE_F16,
	 4,
	 {32, 64, 56, 56},
	 VNPU_FORMAT_NC1HWC0,
	 false},
	{"NCHW f32 [32,64,56,56] <-> 5HD",
	 VNPU_DTYPE_F32,
	 4,
	 {32, 64, 56, 56},
	 VNPU_FORMAT_NC1HWC0,
	 false},
	{"NCHW i8 [32,64,56,56] <-> 5HD",
	 VNPU_DTYPE_I8,
	 4,
	 {32, 64, 56, 56},
	 VNPU_FORMAT_NC1HWC0,
	 false},
	{"NHWC f16 [32,64,56,56] <-> 5HD",
	 VNPU_DTYPE_F16,
	 4,
	 {32, 64, 56, 56},
	 VNPU_FORMAT_NC1HWC0,
	 true},
	{"NCHW f16 [256,256,3,3] <-> FZ",
	 VNPU_DTYPE_F16,
	 4,
	 {256, 256, 3, 3},
	 VNPU_FORMAT_FRACTAL_Z,
	 false},
	{"NCHW f32 [64,64,3,3] <-> FZ",
	 VNPU_DTYPE_F32,
	 4,
	 {64, 64, 3, 3},
	 VNPU_FORMAT_FRACTAL_Z,
	 false},
	{"NCHW f32 [512,256,1,1] <-> FZ",
	 VNPU_DTYPE_F32,
	 4,
	 {512, 256, 1, 1},
	 VNPU_FORMAT_FRACTAL_Z,
	 false},
	{"NCHW i8 [256,256,3,3] <-> FZ",
	 VNPU_DTYPE_I8,
	 4,
	 {256, 256, 3, 3},
	 VNPU_FORMAT_FRACTAL_Z,
	 false},
	/* ResNet-50 stage 4 3x3 weights: larger than L2 */
	{"NCHW f16 [512,512,3,3] <-> FZ",
	 VNPU_DTYPE_F16,
	 4,
	 {512, 512, 3, 3},
	 VNPU_FORMAT_FRACTAL_Z,
	 false},
	{"NCHW f16 [32,64,56,56] <-> NHWC",
	 VNPU_DTYPE_F16,
	 4,
	 {32, 64, 56, 56},
	 VNPU_FORMAT_NHWC,
	 true},
	{"NCHW f32 [32,64,56,56] <-> NHWC",
	 VNPU_DTYPE_F32,
	 4,
	 {32, 64, 56, 56},
	 VNPU_FORMAT_NHWC,
	 true},
	{"NCHW i8 [32,64,56,56] <-> NHWC",
	 VNPU_DTYPE_I8,
	 4,
	 {32, 64, 56, 56},
	 VNPU_FORMAT_NHWC,
	 true},
	{"NCHW f16 [8,3,224,224] <-> NHWC",
	 VNPU_DTYPE_F16,
	 4,
	 {8, 3, 224, 224},
	 VNPU_FORMAT_NHWC,
	 true},
};

static double time_transdata(const struct vnpu_kp_transdata *kp,
			     const struct vnpu_kbuf *bufs)
{
	double t0 = bench_now();

	transdata->run(kp, bufs, 0, 1);
	return bench_now() - t0;
}

static double time_memcpy(void *dst, const void *src, uint64_t bytes)
{
	double t0 = bench_now();

	memcpy(dst, src, bytes);
	t0 = bench_now() - t0;
	/* keep the copy observable */
	if (((volatile const char *)dst)[bytes / 2] == 42)
		puts("");
	return t0;
}

static void run_case(const struct bench_case *c, int runs)
{
	struct vnpu_kp_transdata pack, unpack;
	struct vnpu_tensor plain, packed;
	struct vnpu_kbuf bufs[2];
	uint64_t numel = 1, snumel, isz = vnpu_dtype_size(c->dtype);
	uint64_t plain_bytes, storage_bytes, larger;
	double t_pack, t_unpack, t_copy, *s_pack, *s_unpack, *s_copy;
	void *copy_a, *copy_b;

	memset(&plain, 0, sizeof(plain));
	plain.dtype = c->dtype;
	plain.format = c->channels_last ? VNPU_FORMAT_NHWC : VNPU_FORMAT_ND;
	plain.ndim = c->ndim;
	for (uint32_t i = 0; i < c->ndim; i++) {
		plain.sizes[i] = c->sizes[i];
		numel *= (uint64_t)c->sizes[i];
	}
	for (uint32_t i = c->ndim, stride = 1; i-- > 0;) {
		plain.strides[i] = stride;
		stride *= (uint32_t)c->sizes[i];
	}
	if (c->channels_last) { /* sizes [N,C,H,W], memory N,H,W,C */
		int64_t ch = c->sizes[1], w = c->sizes[3], h = c->sizes[2];

		plain.strides[1] = 1;
		plain.strides[3] = ch;
		plain.strides[2] = w * ch;
		plain.strides[0] = h * w * ch;
	}
	packed = plain;
	packed.buffer = 1;
	if (c->format == VNPU_FORMAT_NHWC) {
		/* plain -> plain: the packed side is the NCHW tensor */
		packed.format = VNPU_FORMAT_NCHW;
		for (uint32_t i = c->ndim, stride = 1; i-- > 0;) {
			packed.strides[i] = stride;
			stride *= (uint32_t)c->sizes[i];
		}
		snumel = numel;
	} else {
		packed.format = c->format;
		memset(packed.strides, 0, sizeof(packed.strides));
		vnpu_storage_numel(&packed, &snumel);
	}

	plain_bytes = numel * isz;
	storage_bytes = snumel * isz;
	larger = plain_bytes > storage_bytes ? plain_bytes : storage_bytes;
	bufs[0].ptr = bench_alloc(plain_bytes);
	bufs[0].size = plain_bytes;
	bufs[0].access = VNPU_ACCESS_READ | VNPU_ACCESS_WRITE;
	bufs[1].ptr = bench_alloc(storage_bytes);
	bufs[1].size = storage_bytes;
	bufs[1].access = VNPU_ACCESS_READ | VNPU_ACCESS_WRITE;
	for (uint64_t i = 0; i < plain_bytes; i++)
		((unsigned char *)bufs[0].ptr)[i] = (unsigned char)(i * 7);
	copy_a = bench_alloc(larger);
	copy_b = bench_alloc(larger);

	pack.src = plain;
	pack.out = packed;
	unpack.src = packed;
	unpack.out = plain;
	if (transdata->validate(&pack, bufs, 2) != VNPU_STATUS_OK ||
	    transdata->validate(&unpack, bufs, 2) != VNPU_STATUS_OK) {
		fprintf(stderr, "%s: launch rejected\n", c->name);
		exit(1);
	}
	/* one warm-up round, then the three interleaved so that they share
	 * whatever else the machine is doing */
	s_copy = calloc((size_t)runs, sizeof(double));
	s_pack = calloc((size_t)runs, sizeof(double));
	s_unpack = calloc((size_t)runs, sizeof(double));
	if (!s_copy || !s_pack || !s_unpack) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (int i = 0; i <= runs; i++) {
		double tc = time_memcpy(copy_b, copy_a, larger);
		double tp = time_transdata(&pack, bufs);
		double tu = time_transdata(&unpack, bufs);

		if (i == 0)
			continue;
		s_copy[i - 1] = tc;
		s_pack[i - 1] = tp;
		s_unpack[i - 1] = tu;
	}
	t_copy = bench_median(s_copy, runs);
	t_pack = bench_median(s_pack, runs);
	t_unpack = bench_median(s_unpack, runs);
	free(s_copy);
	free(s_pack);
	free(s_unpack);

	printf("%-34s %7.1f MB  memcpy %6.2f GB/s  to %6.2f GB/s (%.2fx)"
	       "  back %6.2f GB/s (%.2fx)\n",
	       c->name, (double)larger / 1e6, (double)larger / t_copy / 1e9,
	       (double)larger / t_pack / 1e9, t_copy / t_pack,
	       (double)larger / t_unpack / 1e9, t_copy / t_unpack);

	free(bufs[0].ptr);
	free(bufs[1].ptr);
	free(copy_a);
	free(copy_b);
}

static const char *const isa_names[] = {"auto", "portable", "avx2", "avx512"};

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 9;
	uint32_t isa = VNPU_TD_ISA_AUTO;

	if (runs < 1)
		runs = 1;
	if (argc > 3) {
		while (isa < 4 && strcmp(argv[3], isa_names[isa]) != 0)
			isa++;
		if (isa == 4) {
			fprintf(stderr, "unknown isa %s\n", argv[3]);
			return 1;
		}
	}
	isa = vnpu_transdata_set_isa(isa);
	transdata = vnpu_kernel_find(VNPU_KERNEL_TRANSDATA);
	if (!transdata) {
		fprintf(stderr, "transdata kernel not registered\n");
		return 1;
	}
	printf("TransData, one block on one thread, vs memcpy of the larger "
	       "side's bytes;\nrates are larger-side bytes per second, median "
	       "of %d runs (baseline glibc memcpy); ratio = memcpy time / TransData time\n",
	       runs);
	printf("vector paths: %s\n", isa_names[isa]);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (argc < 3 || !argv[2][0] || strstr(cases[i].name, argv[2]))
			run_case(&cases[i], runs);
	return 0;
}
