// SPDX-License-Identifier: MIT
/*
 * INDEX against references written here with doubles and explicit index
 * math: SELECT, COPY and ADD of every dtype, along every dim
 * of random shapes (0 and 1 sizes included), with transposed and padded
 * strides, strided I32 and I64 index lists holding out-of-range entries,
 * repeated entries and a skipped one, several block counts (run in a
 * shuffled order), and every validator error path. NONZERO over every
 * dtype with zeros, -0.0 and NaN, strided and of length 0 and 1.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ew_check.h"
#include "harness.h"

extern const struct vnpu_kernel_def vnpu_kernel_index;

START_TEST(test_registry)
{
	ck_assert_ptr_eq(vnpu_kernel_find(VNPU_KERNEL_INDEX), &vnpu_kernel_index);
	ck_assert_ptr_eq(vnpu_kernel_find_name("index"), &vnpu_kernel_index);
	ck_assert_uint_eq(vnpu_kernel_index.params_size, sizeof(struct vnpu_kp_index));
}
END_TEST

struct index_case {
	uint32_t op, dt, idx_dt, nblocks;
};

/* The size along dim of the tensor the indices point into. */
static void run_index_case(const struct index_case *ic)
{
	int64_t shape[MAXD], src_sizes[MAXD], out_sizes[MAXD], idx[MAXD];
	uint32_t ndim = 0;
	struct operand os, oi, oo;
	struct vnpu_kbuf b[3];
	struct vnpu_kp_index p;
	int64_t n, size, *entries;
	void *before;
	uint64_t nout;
	uint32_t dim;

	while (ndim == 0)
		ndim = rand_shape(shape, 4, 1);
	dim = (uint32_t)kt_rand_range(0, ndim - 1);
	n = kt_rand_range(0, 9);
	size = shape[dim];
	memcpy(src_sizes, shape, sizeof(shape));
	memcpy(out_sizes, shape, sizeof(shape));
	if (ic->op == VNPU_INDEX_SELECT)
		out_sizes[dim] = n;
	else
		src_sizes[dim] = n;
	os = make_operand(0, ic->dt, ndim, src_sizes, rand_layout(0));
	oi = make_operand(1, ic->idx_dt, 1, &n, rand_layout(0));
	oo = make_operand(2, ic->dt, ndim, out_sizes, rand_layout(0));
	b[0] = operand_buffer(&os, -4, 4);
	b[1] = operand_buffer(&oi, 0, 0);
	b[2] = operand_buffer(&oo, -4, 4);
	entries = malloc((size_t)(n ? n : 1) * sizeof(*entries));
	ck_assert_ptr_nonnull(entries);
	for (int64_t i = 0; i < n; i++) {
		/* mostly in range, repeats likely; sometimes -1 or size */
		entries[i] = kt_rand() % 6 == 0 ? (kt_rand() % 2 ? -1 : size)
						: kt_rand_range(0, size ? size - 1 : 0);
		put_val(b[1].ptr, ic->idx_dt, oi.t.offset + (uint64_t)(i * oi.t.strides[0]),
			(double)entries[i]);
	}
	memset(&p, 0, sizeof(p));
	p.op = ic->op;
	p.dim = dim;
	p.alpha = kt_rand() % 2 ? 1.0 : ic->dt == VNPU_DTYPE_F64 ? rand_double(-2, 2)
				    : is_float(ic->dt)	      ? -0.5
								  : -2.0;
	p.skip = n && kt_rand() % 2 ? entries[kt_rand() % n] : -1;
	p.src = os.t;
	p.index = oi.t;
	p.out = oo.t;
	before = dup_bytes(&b[2]);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, ic->nblocks),
			  VNPU_STATUS_OK);
	nout = numel_of(ndim, out_sizes);
	for (uint64_t e = 0; e < nout; e++) {
		int64_t sidx[MAXD];
		double want, got, scale = 0;

		unravel(e, ndim, out_sizes, idx);
		memcpy(sidx, idx, sizeof(sidx));
		got = get_val(b[2].ptr, ic->dt, elem_off(&oo.t, idx));
		if (ic->op == VNPU_INDEX_SELECT) {
			int64_t j = entries[idx[dim]];

			sidx[dim] = j;
			want = j < 0 || j >= size ? 0.0 :
			       get_val(b[0].ptr, ic->dt, elem_off(&os.t, sidx));
			ck_assert_msg(got == want || (isnan(got) && isnan(want)),
				      "select dt %u dim %u: %g, want %g", ic->dt, dim, got, want);
			continue;
		}
		want = get_val(before, ic->dt, elem_off(&oo.t, idx));
		if (ic->op == VNPU_INDEX_COPY) {
			/* the last entry naming this row, if any */
			for (int64_t i = 0; i < n; i++) {
				if (entries[i] != idx[dim] || entries[i] == p.skip)
					continue;
				sidx[dim] = i;
				want = get_val(b[0].ptr, ic->dt, elem_off(&os.t, sidx));
			}
			ck_assert_msg(got == want || (isnan(got) && isnan(want)),
				      "copy dt %u dim %u: %g, want %g", ic->dt, dim, got, want);
			continue;
		}
		if (!is_float(ic->dt)) {
			int64_t acc = (int64_t)want;

			for (int64_t i = 0; i < n; i++) {
				if (entries[i] != idx[dim] || entries[i] == p.skip)
					continue;
				sidx[dim] = i;
				acc = ew_wrap_int(acc + (int64_t)p.alpha *
						  (int64_t)get_val(b[0].ptr, ic->dt,
								   elem_off(&os.t, sidx)), ic->dt);
			}
			ck_assert_msg(got == (double)acc, "add dt %u dim %u: %g, want %lld",
				      ic->dt, dim, got, (long long)acc);
			continue;
		}
		scale = fabs(want);
		for (int64_t i = 0; i < n; i++) {
			double v;

			if (entries[i] != idx[dim] || entries[i] == p.skip)
				continue;
			sidx[dim] = i;
			v = p.alpha * get_val(b[0].ptr, ic->dt, elem_off(&os.t, sidx));
			want += v;
			scale += fabs(v);
		}
		if (ic->dt == VNPU_DTYPE_F64) { /* in index order, in double: exact */
			ck_assert_msg(same_double(got, want), "add f64 dim %u: %a, want %a", dim,
				      got, want);
			continue;
		}
		ck_assert_msg(close_to(got, want, 0, rtol_of(ic->dt) * (scale + 1e-30) * (double)(n + 1)),
			      "add dt %u dim %u: %g, want %g", ic->dt, dim, got, want);
	}
	check_untouched(&oo.t, before, b[2].ptr, b[2].size);
	free(before);
	free(entries);
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}

/* iters random cases of op for each dtype, alternating the index dtype. */
static void run_index_cases(uint32_t op, const uint32_t *dts, uint32_t n_dts, int iters)
{
	for (uint32_t d = 0; d < n_dts; d++)
		for (int iter = 0; iter < iters; iter++) {
			struct index_case ic = {
				op, dts[d], iter % 2 ? VNPU_DTYPE_I64 : VNPU_DTYPE_I32,
				block_counts[iter % 3],
			};

			run_index_case(&ic);
		}
}

START_TEST(test_index_select)
{
	static const uint32_t dts[] = {VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16,
				       VNPU_DTYPE_I32, VNPU_DTYPE_I64, VNPU_DTYPE_I8,
				       VNPU_DTYPE_U8, VNPU_DTYPE_BOOL, VNPU_DTYPE_I16,
				       VNPU_DTYPE_F64};

	kt_seed(1401);
	run_index_cases(VNPU_INDEX_SELECT, dts, sizeof(dts) / sizeof(dts[0]), 40);
}
END_TEST

START_TEST(test_index_add)
{
	static const uint32_t dts[] = {VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16,
				       VNPU_DTYPE_I32, VNPU_DTYPE_I64, VNPU_DTYPE_I8,
				       VNPU_DTYPE_U8, VNPU_DTYPE_BOOL, VNPU_DTYPE_I16,
				       VNPU_DTYPE_F64};

	kt_seed(1402);
	run_index_cases(VNPU_INDEX_ADD, dts, sizeof(dts) / sizeof(dts[0]), 60);
}
END_TEST

START_TEST(test_index_copy)
{
	static const uint32_t dts[] = {VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16,
				       VNPU_DTYPE_I32, VNPU_DTYPE_I64, VNPU_DTYPE_I8,
				       VNPU_DTYPE_U8, VNPU_DTYPE_BOOL, VNPU_DTYPE_I16,
				       VNPU_DTYPE_F64};

	kt_seed(1404);
	run_index_cases(VNPU_INDEX_COPY, dts, sizeof(dts) / sizeof(dts[0]), 40);
}
END_TEST

/* Integer ADD wraps to the width as PyTorch's index_add_ does; bool ors. */
START_TEST(test_index_add_int_wraps)
{
	int64_t sz = 2, isz = 3;
	int64_t ent[3] = {0, 0, 1};
	int8_t src[3] = {100, 100, 1}, out[2] = {100, -128};
	uint8_t bsrc[3] = {0, 1, 0}, bout[2] = {0, 1};
	struct vnpu_kbuf b[3];
	struct vnpu_kp_index p;

	b[0] = kt_buffer(sizeof(src));
	memcpy(b[0].ptr, src, sizeof(src));
	b[1] = kt_buffer(sizeof(ent));
	memcpy(b[1].ptr, ent, sizeof(ent));
	b[2] = kt_buffer(sizeof(out));
	memcpy(b[2].ptr, out, sizeof(out));
	memset(&p, 0, sizeof(p));
	p.op = VNPU_INDEX_ADD;
	p.alpha = 1;
	p.skip = -1;
	p.src = kt_tensor(0, VNPU_DTYPE_I8, 1, &isz, NULL);
	p.index = kt_tensor(1, VNPU_DTYPE_I64, 1, &isz, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_I8, 1, &sz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 2), VNPU_STATUS_OK);
	ck_assert_int_eq(((int8_t *)b[2].ptr)[0], 44);	/* 300 mod 256 */
	ck_assert_int_eq(((int8_t *)b[2].ptr)[1], -127);
	p.alpha = 0.5; /* an integer add refuses a fractional alpha */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 2), VNPU_STATUS_INVALID_ARGS);
	p.alpha = NAN;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 2), VNPU_STATUS_INVALID_ARGS);
	p.alpha = 1;
	memcpy(b[0].ptr, bsrc, sizeof(bsrc));
	memcpy(b[2].ptr, bout, sizeof(bout));
	p.src.dtype = p.out.dtype = VNPU_DTYPE_BOOL;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 2), VNPU_STATUS_OK);
	ck_assert_uint_eq(((uint8_t *)b[2].ptr)[0], 1);
	ck_assert_uint_eq(((uint8_t *)b[2].ptr)[1], 1);
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

/* An embedding's backward: many repeats of few rows, added in order. */
START_TEST(test_index_add_repeats_in_order)
{
	int64_t wsz[2] = {3, 2}, gsz[2] = {5, 2}, isz = 5;
	int64_t ent[5] = {1, 1, 2, 1, 0};
	float g[10] = {1e8f, 1, 4, 1, -1e8f, 1, 4, 1, 5, 1};
	struct vnpu_kbuf b[3];
	struct vnpu_kp_index p;
	float *w;

	b[0] = kt_buffer(sizeof(g));
	memcpy(b[0].ptr, g, sizeof(g));
	b[1] = kt_buffer(sizeof(ent));
	memcpy(b[1].ptr, ent, sizeof(ent));
	b[2] = kt_buffer(6 * sizeof(float));
	memset(b[2].ptr, 0, 6 * sizeof(float));
	memset(&p, 0, sizeof(p));
	p.op = VNPU_INDEX_ADD;
	p.alpha = 1;
	p.skip = 2;
	p.src = kt_tensor(0, VNPU_DTYPE_F32, 2, gsz, NULL);
	p.index = kt_tensor(1, VNPU_DTYPE_I64, 1, &isz, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_F32, 2, wsz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 7), VNPU_STATUS_OK);
	w = b[2].ptr;
	/* row 1 gets g rows 0, 1 and 3 in that order, each add rounded to
	 * f32 (1e8 has an ulp of 8): 1e8 + 4 ties to 1e8 twice, where
	 * 4 + 4 + 1e8 would give 1e8 + 8 */
	ck_assert(w[0] == 5 && w[1] == 1);
	ck_assert(w[2] == 1e8f && w[3] == 3);
	ck_assert(w[4] == 0 && w[5] == 0); /* row 2 skipped */
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

/* F64: SELECT and COPY move all 8 bytes (a NaN's payload too); ADD adds
 * in index order in double, alpha unrounded: 2^53 + 1 ties back to 2^53
 * each time, where any other order or f32 would differ. */
START_TEST(test_index_f64)
{
	int64_t wsz[2] = {3, 2}, gsz[2] = {5, 2}, isz = 5;
	int64_t ent[5] = {1, 1, 2, 1, 0};
	const double big = 0x1p53, a = 1.0 + 0x1p-40;
	double g[10] = {big, 1, 1, 0x1p-1074, -big, 1e300, 1, 3, 5, -0.0};
	uint64_t nan_bits = 0x7ff8dead0000beefull;
	struct vnpu_kbuf b[3];
	struct vnpu_kp_index p;
	double *w;

	memcpy(&g[2], &nan_bits, 8);
	b[0] = kt_buffer(sizeof(g));
	memcpy(b[0].ptr, g, sizeof(g));
	b[1] = kt_buffer(sizeof(ent));
	memcpy(b[1].ptr, ent, sizeof(ent));
	b[2] = kt_buffer(10 * sizeof(double));
	memset(&p, 0, sizeof(p));
	p.skip = -1;
	p.index = kt_tensor(1, VNPU_DTYPE_I64, 1, &isz, NULL);

	/* SELECT rows of g (5 x 2) by ent: bytes for bytes */
	p.op = VNPU_INDEX_SELECT;
	p.src = kt_tensor(0, VNPU_DTYPE_F64, 2, gsz, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_F64, 2, gsz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 3), VNPU_STATUS_OK);
	for (int i = 0; i < 5; i++)
		ck_assert(memcmp((char *)b[2].ptr + i * 16, &g[ent[i] * 2], 16) == 0);

	/* COPY: the last of the repeated rows stays */
	p.op = VNPU_INDEX_COPY;
	p.out = kt_tensor(2, VNPU_DTYPE_F64, 2, wsz, NULL);
	memset(b[2].ptr, 0, 6 * sizeof(double));
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 2), VNPU_STATUS_OK);
	ck_assert(memcmp(b[2].ptr, &g[8], 16) == 0);
	ck_assert(memcmp((char *)b[2].ptr + 16, &g[6], 16) == 0);
	ck_assert(memcmp((char *)b[2].ptr + 32, &g[4], 16) == 0);

	/* ADD of g (NaN row replaced) into zeros, row 2 skipped */
	g[2] = 1;
	memcpy(b[0].ptr, g, sizeof(g));
	memset(b[2].ptr, 0, 6 * sizeof(double));
	p.op = VNPU_INDEX_ADD;
	p.alpha = a;
	p.skip = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 7), VNPU_STATUS_OK);
	w = b[2].ptr;
	/* row 0: g row 4 */
	ck_assert(same_double(w[0], 0.0 + a * 5) && same_double(w[1], 0.0 + a * -0.0));
	/* row 1: g rows 0, 1, 3 in order */
	ck_assert(same_double(w[2], ((0.0 + a * big) + a * 1) + a * 1));
	ck_assert(same_double(w[3], ((0.0 + a * 1) + a * 0x1p-1074) + a * 3));
	ck_assert(w[4] == 0 && w[5] == 0);
	/* alpha 1: 2^53 + 1 ties back to 2^53, then - 2^53 leaves 0 (1 in
	 * another order); any alpha is valid for F64 */
	p.alpha = 1e300;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 1), VNPU_STATUS_OK);
	p.alpha = 1;
	g[6] = -big;
	memcpy(b[0].ptr, g, sizeof(g));
	memset(b[2].ptr, 0, 6 * sizeof(double));
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 1), VNPU_STATUS_OK);
	ck_assert(same_double(w[2], 0.0));
	ck_assert(same_double(w[3], (1 + 0x1p-1074) + 3));
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

START_TEST(test_index_errors)
{
	int64_t sz[2] = {4, 3}, osz[2] = {2, 3}, isz = 2, isz2[2] = {1, 2};
	struct vnpu_kbuf b[3];
	struct vnpu_kp_index p, q;

	b[0] = kt_buffer(12 * 4);
	b[1] = kt_buffer(2 * 8);
	memset(b[1].ptr, 0, 16);
	b[2] = kt_buffer(6 * 4);
	memset(&p, 0, sizeof(p));
	p.op = VNPU_INDEX_SELECT;
	p.skip = -1;
	p.src = kt_tensor(0, VNPU_DTYPE_F32, 2, sz, NULL);
	p.index = kt_tensor(1, VNPU_DTYPE_I64, 1, &isz, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_F32, 2, osz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 3, 1), VNPU_STATUS_OK);

	q = p;
	q.op = VNPU_INDEX_COUNT;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.dim = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.dim = 1; /* out has 3 along dim 1, the index 2 entries */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.index = kt_tensor(1, VNPU_DTYPE_I64, 2, isz2, NULL); /* rank 2 */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.index.sizes[0] = 3; /* past its buffer */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.index.dtype = VNPU_DTYPE_F32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_UNSUPPORTED);
	q = p;
	q.out.dtype = VNPU_DTYPE_I32; /* src and out differ */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.out.sizes[1] = 2; /* other dims differ */
	q.out.strides[0] = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.out.strides[0] = 0; /* overlapping output rows */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.out.buffer = 3;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);

	/* ADD: src has the index's length along dim; integers take an
	 * integral alpha */
	q = p;
	q.op = VNPU_INDEX_ADD;
	q.src = p.out;
	q.src.buffer = 2;
	q.out = p.src;
	q.out.buffer = 0;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_OK);
	b[0].access = VNPU_ACCESS_WRITE; /* ADD reads its output */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	b[0].access = VNPU_ACCESS_READ | VNPU_ACCESS_WRITE;
	q.src.dtype = q.out.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_OK);
	q.alpha = 1.5;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	q.alpha = 1e300; /* beyond int64 */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	/* COPY writes but does not read its output */
	q.op = VNPU_INDEX_COPY;
	b[0].access = VNPU_ACCESS_WRITE;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_OK);
	q.out.strides[0] = 0; /* overlapping output rows */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

START_TEST(test_index_nonzero)
{
	static const uint32_t dts[] = {VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16,
				       VNPU_DTYPE_I32, VNPU_DTYPE_I64, VNPU_DTYPE_I8,
				       VNPU_DTYPE_U8, VNPU_DTYPE_BOOL, VNPU_DTYPE_I16,
				       VNPU_DTYPE_F64};

	kt_seed(1403);
	for (uint32_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
		for (int iter = 0; iter < 30; iter++) {
			uint32_t dt = dts[d];
			int64_t n = iter < 2 ? iter : kt_rand_range(2, 700);
			int64_t stride = kt_rand_range(1, 3), on = n + 1;
			struct vnpu_kbuf b[2] = {kt_buffer((uint64_t)(n * stride + 1) * 8),
						 kt_buffer((uint64_t)on * 8)};
			struct vnpu_kp_index p;
			int64_t want = 0;

			memset(&p, 0, sizeof(p));
			p.op = VNPU_INDEX_NONZERO;
			p.src = kt_tensor(0, dt, 1, &n, &stride);
			p.out = kt_tensor(1, VNPU_DTYPE_I64, 1, &on, NULL);
			memset(b[1].ptr, 0x5a, (size_t)on * 8);
			for (int64_t i = 0; i < n; i++) {
				int r = kt_rand() % 4;
				double v = r == 0 ? 0 : rand_val(dt, -3, 3);

				if (is_float(dt) && r == 1)
					v = kt_rand() % 2 ? -0.0 : NAN;
				if (dt == VNPU_DTYPE_F64 && r == 2) /* zero in f32 */
					v = kt_rand() % 2 ? 1e-320 : -1e-300;
				put_val(b[0].ptr, dt, (uint64_t)(i * stride), v);
			}
			ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 2,
						    block_counts[iter % 3]),
					  VNPU_STATUS_OK);
			for (int64_t i = 0; i < n; i++) {
				double v = get_val(b[0].ptr, dt, (uint64_t)(i * stride));

				if (v == 0 && !isnan(v))
					continue;
				want++;
				ck_assert_int_eq(get_int(b[1].ptr, VNPU_DTYPE_I64, (uint64_t)want),
						 i);
			}
			ck_assert_int_eq(get_int(b[1].ptr, VNPU_DTYPE_I64, 0), want);
			for (int64_t k = want + 1; k < on; k++) /* the rest unwritten */
				ck_assert_uint_eq(((uint8_t *)b[1].ptr)[k * 8], 0x5a);
			kt_free(&b[0]);
			kt_free(&b[1]);
		}
}
END_TEST

START_TEST(test_index_nonzero_errors)
{
	int64_t n = 4, on = 5, two[2] = {2, 2};
	struct vnpu_kbuf b[2] = {kt_buffer(4 * 4), kt_buffer(5 * 8)};
	struct vnpu_kp_index p, q;

	memset(&p, 0, sizeof(p));
	p.op = VNPU_INDEX_NONZERO;
	p.src = kt_tensor(0, VNPU_DTYPE_F32, 1, &n, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_I64, 1, &on, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 2, 2), VNPU_STATUS_OK);
	q = p;
	q.out.sizes[0] = 4; /* no room for the count */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 2, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.out.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 2, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.src = kt_tensor(0, VNPU_DTYPE_F32, 2, two, NULL); /* rank 1 only */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 2, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.dim = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 2, 1), VNPU_STATUS_INVALID_ARGS);
	q = p;
	q.src.sizes[0] = 5; /* past its buffer */
	q.out.sizes[0] = 6;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &q, b, 2, 1), VNPU_STATUS_INVALID_ARGS);
	b[1].access = VNPU_ACCESS_READ; /* the output must be writable */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_INDEX, &p, b, 2, 1), VNPU_STATUS_INVALID_ARGS);
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kernels-index");
	TCase *tc = tcase_create("index");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_index_select);
	tcase_add_test(tc, test_index_add);
	tcase_add_test(tc, test_index_copy);
	tcase_add_test(tc, test_index_add_int_wraps);
	tcase_add_test(tc, test_index_add_repeats_in_order);
	tcase_add_test(tc, test_index_f64);
	tcase_add_test(tc, test_index_errors);
	tcase_add_test(tc, test_index_nonzero);
	tcase_add_test(tc, test_index_nonzero_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
