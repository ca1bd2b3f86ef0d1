// SPDX-License-Identifier: MIT
/*
 * REDUCE, SOFTMAX, LAYER_NORM and POOL2D against references written here
 * with doubles and explicit loops: random shapes (0, 1, 15, 17 included),
 * transposed and padded strides, offsets, in-place where the kernel allows
 * it, several block counts, NaN handling, and every validator error path.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ew_check.h"
#include "harness.h"

/* The definitions themselves, to check the registry hands them out. */
extern const struct vnpu_kernel_def vnpu_kernel_reduce, vnpu_kernel_softmax,
	vnpu_kernel_layer_norm, vnpu_kernel_pool2d;

START_TEST(test_registry)
{
	ck_assert_ptr_eq(vnpu_kernel_find(VNPU_KERNEL_REDUCE),
			 &vnpu_kernel_reduce);
	ck_assert_ptr_eq(vnpu_kernel_find(VNPU_KERNEL_SOFTMAX),
			 &vnpu_kernel_softmax);
	ck_assert_ptr_eq(vnpu_kernel_find(VNPU_KERNEL_LAYER_NORM),
			 &vnpu_kernel_layer_norm);
	ck_assert_ptr_eq(vnpu_kernel_find(VNPU_KERNEL_POOL2D),
			 &vnpu_kernel_pool2d);
	ck_assert_ptr_eq(vnpu_kernel_find_name("reduce"), &vnpu_kernel_reduce);
	ck_assert_ptr_eq(vnpu_kernel_find_name("softmax"),
			 &vnpu_kernel_softmax);
	ck_assert_ptr_eq(vnpu_kernel_find_name("layer_norm"),
			 &vnpu_kernel_layer_norm);
	ck_assert_ptr_eq(vnpu_kernel_find_name("pool2d"), &vnpu_kernel_pool2d);
	ck_assert_uint_eq(vnpu_kernel_reduce.params_size,
			  sizeof(struct vnpu_kp_reduce));
	ck_assert_uint_eq(vnpu_kernel_softmax.params_size,
			  sizeof(struct vnpu_kp_softmax));
	ck_assert_uint_eq(vnpu_kernel_layer_norm.params_size,
			  sizeof(struct vnpu_kp_layer_norm));
	ck_assert_uint_eq(vnpu_kernel_pool2d.params_size,
			  sizeof(struct vnpu_kp_pool2d));
}
END_TEST

/* Plain element offset of full index idx (no broadcasting). */
static uint64_t at(const struct vnpu_tensor *t, const int64_t *idx)
{
	uint64_t off = (uint64_t)t->offset;

	for (uint32_t d = 0; d < t->ndim; d++)
		off += (uint64_t)(idx[d] * t->strides[d]);
	return off;
}

/* -------------------------------------------------------------- REDUCE */

struct red_ref {
	double prod;	 /* sequential, rounded as the dtype (red_prod) */
	uint64_t iprod; /* wrapping */
	double sum, abs_sum, best;
	long double lsum; /* F64 sums against long double */
	int64_t isum, ibest, best_at;
	uint64_t count;
	int any;
};

/* One more factor of a PROD, in the order of the input's row-major walk
 * (the kernel's and PyTorch's for a strided reduction): F32 products
 * rounded to f32, F16 and BF16 to their dtype after each (PyTorch's half
 * accumulation; the product of two of them is exact in f32), F64 as
 * double does it. */
static void red_prod(struct red_ref *r, uint32_t dt, double v, int64_t iv)
{
	double x = r->prod * v;

	r->prod = dt == VNPU_DTYPE_F32	  ? ew_round_f32(x)
		  : dt == VNPU_DTYPE_F16  ? ew_round_f16(x)
		  : dt == VNPU_DTYPE_BF16 ? ew_round_bf16(x)
					  : x;
	r->iprod *= (uint64_t)iv;
}

static void red_fold(struct red_ref *r, uint32_t op, double v, int64_t iv,
		     int64_t pos, int integer)
{
	r->sum += v;
	r->lsum += v;
	r->abs_sum += fabs(v);
	r->isum += iv;
	r->count++;
	if (!r->any) {
		r->any = 1;
		r->best = v;
		r->ibest = iv;
		r->best_at = pos;
		return;
	}
	if (integer) {
		if ((op == VNPU_REDUCE_MAX || op == VNPU_REDUCE_ARGMAX)
			    ? iv > r->ibest
			    : iv < r->ibest) {
			r->ibest = iv;
			r->best_at = pos;
		}
		return;
	}
	if (isnan(r->best))
		return; /* the first NaN stays */
	if (isnan(v) || ((op == VNPU_REDUCE_MAX || op == VNPU_REDUCE_ARGMAX)
				 ? v > r->best
				 : v < r->best)) {
		r->best = v;
		r->best_at = pos;
	}
}

/* An F64 result: MAX and MIN exactly; SUM within the bound of a double
 * sum in any order, (count + 1) * 2^-53 * sum |x|, of the long double one
 * (an f32 accumulation, or f32 loads, would be 2^29 times that), MEAN
 * likewise divided by the count. */
static void check_reduce_f64(uint32_t op, const struct red_ref *r, double got)
{
	long double want, tol;

	if (op == VNPU_REDUCE_MAX || op == VNPU_REDUCE_MIN) {
		ck_assert_msg(same_double(got, r->best),
			      "reduce op %u f64: %a, want %a", op, got,
			      r->best);
		return;
	}
	want = r->lsum;
	tol = (long double)(r->count + 1) * 0x1p-53L * r->abs_sum;
	if (op == VNPU_REDUCE_MEAN) {
		want = r->count ? want / r->count : NAN;
		tol = r->count ? tol / r->count + 0x1p-53L * fabsl(want) : 0;
	}
	if (isnan(want)) {
		ck_assert_msg(isnan(got), "reduce op %u f64: %a, want NaN", op,
			      got);
		return;
	}
	ck_assert_msg(fabsl((long double)got - want) <= tol,
		      "reduce op %u f64: %a, want %La", op, got, want);
}

static void run_reduce_case(uint32_t op, uint32_t dt, uint32_t nblocks,
			    int ties)
{
	int64_t sizes[MAXD], idx[MAXD], oidx[MAXD];
	int64_t osz[MAXD] = { 0 };
	uint32_t ndim, mask = 0, arg_dim = 0;
	int arg = op == VNPU_REDUCE_ARGMAX || op == VNPU_REDUCE_ARGMIN;
	int extremum = arg || op == VNPU_REDUCE_MAX || op == VNPU_REDUCE_MIN;
	int integer = !is_float(dt);
	uint32_t out_dt = arg ? (uint32_t)VNPU_DTYPE_I64 : dt;
	struct operand oi, oo;
	struct vnpu_kbuf b[2];
	struct vnpu_kp_reduce p;
	struct red_ref *ref;
	uint64_t n, on;
	void *before;

	for (;;) {
		ndim = rand_shape(sizes, 5, 1);
		mask = 0;
		if (arg) {
			if (ndim == 0)
				continue;
			arg_dim = kt_rand() % ndim;
			mask = 1u << arg_dim;
		} else {
			for (uint32_t d = 0; d < ndim; d++)
				if (kt_rand() % 2)
					mask |= 1u << d;
		}
		/* extrema over an empty dim are rejected; tested elsewhere */
		int empty = 0;

		for (uint32_t d = 0; d < ndim; d++)
			if ((mask >> d & 1) && sizes[d] == 0)
				empty = 1;
		if (!(extremum && empty))
			break;
	}
	for (uint32_t d = 0; d < ndim; d++)
		osz[d] = (mask >> d & 1) ? 1 : sizes[d];
	oi = make_operand(0, dt, ndim, sizes, rand_layout(LAY_ZERO));
	oo = make_operand(1, out_dt, ndim, osz, rand_layout(0));
	b[0] = operand_buffer(&oi, -10, 10);
	b[1] = operand_buffer(&oo, -1, 1);
	n = numel_of(ndim, sizes);
	on = numel_of(ndim, osz);
	if (op == VNPU_REDUCE_PROD) {
		/* factors near 1 in size (floats), small (integers) */
		int64_t lo = dt == VNPU_DTYPE_U8 ? 0 : -3;

		for (uint64_t i = 0; i < oi.nelem; i++)
			put_val(b[0].ptr, dt, i,
				integer ? (double)kt_rand_range(lo, 3)
					: (kt_rand() % 3 ? 1 : -1) *
						  rand_double(0.7, 1.3));
	}
	if (ties)
		for (uint64_t i = 0; i < oi.nelem; i++)
			put_val(b[0].ptr, dt, i,
				(double)kt_rand_range(dt == VNPU_DTYPE_U8 ? 0 : -2, 2));
	if (!integer && n > 0 && kt_rand() % 3 == 0) {
		/* a NaN or two: they propagate / win the arg */
		unravel(kt_rand() % n, ndim, sizes, idx);
		put_val(b[0].ptr, dt, at(&oi.t, idx), NAN);
		unravel(kt_rand() % n, ndim, sizes, idx);
		put_val(b[0].ptr, dt, at(&oi.t, idx), NAN);
	}
	ref = calloc(on ? on : 1, sizeof(*ref));
	ck_assert_ptr_nonnull(ref);
	for (uint64_t i = 0; i < on; i++) {
		ref[i].prod = 1; /* the empty product */
		ref[i].iprod = 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t lin = 0;

		unravel(i, ndim, sizes, idx);
		for (uint32_t d = 0; d < ndim; d++) {
			oidx[d] = (mask >> d & 1) ? 0 : idx[d];
			lin = lin * (uint64_t)osz[d] + (uint64_t)oidx[d];
		}
		red_fold(&ref[lin], op, get_val(b[0].ptr, dt, at(&oi.t, idx)),
			 integer ? get_int(b[0].ptr, dt, at(&oi.t, idx)) : 0,
			 arg ? idx[arg_dim] : 0, integer);
		red_prod(&ref[lin], dt, get_val(b[0].ptr, dt, at(&oi.t, idx)),
			 integer ? get_int(b[0].ptr, dt, at(&oi.t, idx)) : 0);
	}
	before = dup_bytes(&b[1]);
	memset(&p, 0, sizeof(p));
	p.op = op;
	p.dim_mask = mask;
	p.input = oi.t;
	p.out = oo.t;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, nblocks),
			  VNPU_STATUS_OK);
	for (uint64_t i = 0; i < on; i++) {
		struct red_ref *r = &ref[i];
		uint64_t off;
		double want, got, tol;

		unravel(i, ndim, osz, oidx);
		off = at(&oo.t, oidx);
		if (arg) {
			ck_assert_msg(get_int(b[1].ptr, VNPU_DTYPE_I64, off) ==
					      r->best_at,
				      "arg op %u dt %u: %lld, want %lld", op,
				      dt,
				      (long long)get_int(b[1].ptr,
							 VNPU_DTYPE_I64, off),
				      (long long)r->best_at);
			continue;
		}
		got = get_val(b[1].ptr, dt, off);
		if (op == VNPU_REDUCE_PROD) {
			if (integer)
				ck_assert_int_eq(get_int(b[1].ptr, dt, off),
						 ew_wrap_int((int64_t)r->iprod,
							     dt));
			else
				ck_assert_msg(same_double(got, r->prod),
					      "prod dt %u mask %x: %a, want %a",
					      dt, mask, got, r->prod);
			continue;
		}
		if (dt == VNPU_DTYPE_F64) {
			check_reduce_f64(op, r, got);
			continue;
		}
		if (integer) {
			int64_t w = op == VNPU_REDUCE_SUM ? r->isum : r->ibest;

			ck_assert_int_eq(get_int(b[1].ptr, dt, off),
					 ew_wrap_int(w, dt));
			continue;
		}
		switch (op) {
		case VNPU_REDUCE_SUM:
			want = r->sum;
			tol = (dt == VNPU_DTYPE_F32 ? 1e-6 : 1e-4) * r->abs_sum;
			break;
		case VNPU_REDUCE_MEAN:
			want = r->count ? r->sum / (double)r->count : NAN;
			tol = r->count ? (dt == VNPU_DTYPE_F32 ? 1e-6 : 1e-4) *
						 r->abs_sum / (double)r->count
				       : 0;
			break;
		default:
			want = r->best;
			tol = 0;
			break;
		}
		if (isnan(r->sum) && !isnan(want))
			want = r->sum; /* a NaN in a sum makes it NaN */
		ck_assert_msg(close_to(got, want, rtol_of(dt), tol),
			      "reduce op %u dt %u mask %x: %.9g, want %.9g", op,
			      dt, mask, got, want);
	}
	check_untouched(&oo.t, before, b[1].ptr, b[1].size);
	free(before);
	free(ref);
	kt_free(&b[0]);
	kt_free(&b[1]);
}

START_TEST(test_reduce)
{
	static const uint32_t dts[] = {
		VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16, VNPU_DTYPE_I32,
		VNPU_DTYPE_I8,	VNPU_DTYPE_U8,	VNPU_DTYPE_I64,	 VNPU_DTYPE_BOOL,
		VNPU_DTYPE_I16, VNPU_DTYPE_F64};

	kt_seed(606);
	for (uint32_t op = 0; op < VNPU_REDUCE_COUNT; op++)
		for (uint32_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
			if (!is_float(dts[d]) && op == VNPU_REDUCE_MEAN)
				continue;
			for (int iter = 0; iter < 60; iter++)
				run_reduce_case(op, dts[d],
						block_counts[iter % 3],
						iter % 4 == 1);
		}
}
END_TEST

/* PROD: F16/BF16 rounded after every product, as PyTorch (results from
 * PyTorch 2.13: one f32 product rounded once would differ), the empty
 * product 1, and int8's wrapping product. */
START_TEST(test_reduce_prod)
{
	static const struct {
		uint32_t dt;
		double x[4], want;
	} cases[] = {
		{VNPU_DTYPE_BF16,
		 {0x1.5cp+0, 0x1.eap-1, 0x1.f6p-1, 0x1.44p+0},
		 0x1.ap+0},
		{VNPU_DTYPE_F16,
		 {0x1.3c4p+0, 0x1.07cp+0, 0x1.d74p-1, 0x1.4bp+0},
		 0x1.838p+0},
		{VNPU_DTYPE_F32, {3.0, -0.5, 0x1p-100, 0x1p+90}, -0x1.8p-10},
		{VNPU_DTYPE_F64, {NAN, 0.0, 1.0, 2.0}, NAN},
	};
	int64_t sizes[2] = {4, 1}, osz[2] = {1, 1}, esz[2] = {0, 3};
	struct vnpu_kbuf b[2] = {kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_reduce p;

	memset(&p, 0, sizeof(p));
	p.op = VNPU_REDUCE_PROD;
	p.dim_mask = 1;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		p.input = kt_tensor(0, cases[c].dt, 2, sizes, NULL);
		p.out = kt_tensor(1, cases[c].dt, 2, osz, NULL);
		for (int i = 0; i < 4; i++)
			put_val(b[0].ptr, cases[c].dt, (uint64_t)i,
				cases[c].x[i]);
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
				  VNPU_STATUS_OK);
		ck_assert_msg(same_double(get_val(b[1].ptr, cases[c].dt, 0),
					  cases[c].want),
			      "case %zu: %a, want %a", c,
			      get_val(b[1].ptr, cases[c].dt, 0),
			      cases[c].want);
	}
	/* int8: 100 * 100 * 100 wraps to 64 (torch.prod(.., dtype=int8)) */
	p.input = kt_tensor(0, VNPU_DTYPE_I8, 2, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_I8, 2, osz, NULL);
	memset(b[0].ptr, 100, 3);
	((int8_t *)b[0].ptr)[3] = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert_int_eq(((int8_t *)b[1].ptr)[0], 64);
	/* empty: 1 for every dtype */
	for (size_t d = 0; d < N_ALL_DTYPES; d++) {
		int64_t o2[2] = {1, 3};

		p.input = kt_tensor(0, all_dtypes[d], 2, esz, NULL);
		p.out = kt_tensor(1, all_dtypes[d], 2, o2, NULL);
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 2),
				  VNPU_STATUS_OK);
		for (int i = 0; i < 3; i++)
			ck_assert(get_val(b[1].ptr, all_dtypes[d],
					  (uint64_t)i) == 1.0);
	}
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

START_TEST(test_reduce_long_sum)
{
	/* 1e6 f32 ones plus one large value: f64 accumulation stays exact */
	const int64_t n = 1000000;
	int64_t sizes[1] = {n}, osz[1] = {1};
	struct vnpu_kbuf b[2] = {kt_buffer((uint64_t)n * 4), kt_buffer(8)};
	struct vnpu_kp_reduce p;

	for (int64_t i = 0; i < n; i++)
		put_val(b[0].ptr, VNPU_DTYPE_F32, (uint64_t)i, 1.0);
	put_val(b[0].ptr, VNPU_DTYPE_F32, 7, 1e8);
	memset(&p, 0, sizeof(p));
	p.op = VNPU_REDUCE_SUM;
	p.dim_mask = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 1, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 1, osz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 3),
			  VNPU_STATUS_OK);
	ck_assert_double_eq(get_val(b[1].ptr, VNPU_DTYPE_F32, 0),
			    (double)(float)(1e8 + (double)(n - 1)));
	p.op = VNPU_REDUCE_MEAN;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(close_to(get_val(b[1].ptr, VNPU_DTYPE_F32, 0),
			   (1e8 + (double)(n - 1)) / (double)n, 1e-7, 0));
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

/* F64 reductions whose results f32 could not hold: sums beyond its range,
 * extrema and arg positions among values equal in f32. */
START_TEST(test_reduce_f64)
{
	const double eps = 0x1p-52;
	const struct {
		uint32_t op;
		double x[4];
		double want;
	} cases[] = {
		{VNPU_REDUCE_SUM, {1e300, 1e300, -1e300, 1e-300}, 1e300},
		{VNPU_REDUCE_SUM, {1.0, eps, eps, -1.0}, 2 * eps},
		{VNPU_REDUCE_MEAN,
		 {0x1p1000, 0x1p1000, 0x1p1001, 0.0},
		 0x1p1000},
		{VNPU_REDUCE_MAX,
		 {1.0, 1.0 + eps, 1.0 + 2 * eps, 1.0},
		 1.0 + 2 * eps},
		{VNPU_REDUCE_MIN,
		 {1e-300, 1e-310, 0x1p-1074, 1e-308},
		 0x1p-1074},
		{VNPU_REDUCE_MAX, {1.0, NAN, 2.0, 3.0}, NAN},
		{VNPU_REDUCE_ARGMAX, {1.0, 1.0 + eps, 1.0 + eps, 1.0}, 1},
		{VNPU_REDUCE_ARGMIN, {1e-300, 1e-310, 0.0, 1e-320}, 2},
		{VNPU_REDUCE_ARGMIN, {1.0, 0.5, NAN, NAN}, 2},
	};
	int64_t sizes[2] = {2, 4}, osz[2] = {2, 1};
	struct vnpu_kbuf b[2] = {kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_reduce p;

	memset(&p, 0, sizeof(p));
	p.dim_mask = 2;
	p.input = kt_tensor(0, VNPU_DTYPE_F64, 2, sizes, NULL);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int arg = cases[c].op >= VNPU_REDUCE_ARGMAX;

		p.op = cases[c].op;
		p.out = kt_tensor(1, arg ? VNPU_DTYPE_I64 : VNPU_DTYPE_F64, 2,
				  osz, NULL);
		/* row 1 the same values reversed */
		for (int i = 0; i < 4; i++) {
			put_val(b[0].ptr, VNPU_DTYPE_F64, (uint64_t)i,
				cases[c].x[i]);
			put_val(b[0].ptr, VNPU_DTYPE_F64, (uint64_t)(7 - i),
				cases[c].x[i]);
		}
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 2),
				  VNPU_STATUS_OK);
		if (arg) {
			ck_assert_int_eq(get_int(b[1].ptr, VNPU_DTYPE_I64, 0),
					 (int64_t)cases[c].want);
			continue;
		}
		ck_assert_msg(same_double(get_val(b[1].ptr, VNPU_DTYPE_F64, 0),
					  cases[c].want),
			      "case %zu: %a, want %a", c,
			      get_val(b[1].ptr, VNPU_DTYPE_F64, 0),
			      cases[c].want);
		if (p.op != VNPU_REDUCE_SUM && p.op != VNPU_REDUCE_MEAN)
			ck_assert(same_double(
				get_val(b[1].ptr, VNPU_DTYPE_F64, 1),
				cases[c].want));
	}
	/* an F64 reduction writes F64 (or I64 for the arg ops) */
	p.op = VNPU_REDUCE_SUM;
	p.out.dtype = VNPU_DTYPE_F32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

/* F64 belongs to the vector kernels: the fused softmax, layer norm and
 * pooling return UNSUPPORTED for it (with buffers large enough for every
 * view, so that only the dtype is wrong). */
START_TEST(test_fused_f64_unsupported)
{
	int64_t sizes[4] = {1, 2, 4, 4}, osz[4] = {1, 2, 2, 2}, norm[1] = {4};
	int64_t rows[3] = {1, 2, 4};
	struct vnpu_kbuf b[6];
	struct vnpu_kp_softmax ps;
	struct vnpu_kp_layer_norm pl;
	struct vnpu_kp_pool2d pp;

	for (int i = 0; i < 6; i++)
		b[i] = kt_buffer(1024);
	memset(&ps, 0, sizeof(ps));
	ps.dim = 3;
	ps.input = kt_tensor(0, VNPU_DTYPE_F32, 4, sizes, NULL);
	ps.out = kt_tensor(1, VNPU_DTYPE_F32, 4, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &ps, b, 2, 1),
			  VNPU_STATUS_OK);
	ps.input.dtype = ps.out.dtype = VNPU_DTYPE_F64;
	for (ps.log = 0; ps.log <= 1; ps.log++)
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &ps, b, 2, 1),
				  VNPU_STATUS_UNSUPPORTED);

	memset(&pl, 0, sizeof(pl));
	pl.norm_ndim = 1;
	pl.eps = 1e-5;
	pl.has_weight = pl.has_bias = pl.has_stats = 1;
	pl.input = kt_tensor(0, VNPU_DTYPE_F32, 4, sizes, NULL);
	pl.out = kt_tensor(1, VNPU_DTYPE_F32, 4, sizes, NULL);
	pl.weight = kt_tensor(2, VNPU_DTYPE_F32, 1, norm, NULL);
	pl.bias = kt_tensor(3, VNPU_DTYPE_F32, 1, norm, NULL);
	pl.mean = kt_tensor(4, VNPU_DTYPE_F32, 3, rows, NULL);
	pl.rstd = kt_tensor(5, VNPU_DTYPE_F32, 3, rows, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_LAYER_NORM, &pl, b, 6, 1),
			  VNPU_STATUS_OK);
	pl.weight.dtype = VNPU_DTYPE_F64; /* an F64 weight for F32 input */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_LAYER_NORM, &pl, b, 6, 1),
			  VNPU_STATUS_UNSUPPORTED);
	pl.input.dtype = pl.out.dtype = pl.bias.dtype = VNPU_DTYPE_F64;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_LAYER_NORM, &pl, b, 6, 1),
			  VNPU_STATUS_UNSUPPORTED);
	pl.has_weight = pl.has_bias = pl.has_stats = 0;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_LAYER_NORM, &pl, b, 6, 1),
			  VNPU_STATUS_UNSUPPORTED);

	memset(&pp, 0, sizeof(pp));
	pp.kernel_h = pp.kernel_w = 2;
	pp.stride_h = pp.stride_w = 2;
	pp.dil_h = pp.dil_w = 1;
	pp.input = kt_tensor(0, VNPU_DTYPE_F32, 4, sizes, NULL);
	pp.out = kt_tensor(1, VNPU_DTYPE_F32, 4, osz, NULL);
	pp.indices = kt_tensor(2, VNPU_DTYPE_I64, 4, osz, NULL);
	for (pp.mode = VNPU_POOL_MAX; pp.mode <= VNPU_POOL_AVG; pp.mode++) {
		pp.input.dtype = pp.out.dtype = VNPU_DTYPE_F32;
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &pp, b, 3, 1),
				  VNPU_STATUS_OK);
		pp.input.dtype = pp.out.dtype = VNPU_DTYPE_F64;
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &pp, b, 3, 1),
				  VNPU_STATUS_UNSUPPORTED);
	}
	for (int i = 0; i < 6; i++)
		kt_free(&b[i]);
}
END_TEST

START_TEST(test_reduce_errors_and_empty)
{
	int64_t sizes[3] = {2, 0, 3}, osz[3] = {2, 1, 3};
	struct vnpu_kbuf b[2] = {kt_buffer(256), kt_buffer(256)};
	struct vnpu_kp_reduce p;

	memset(&p, 0, sizeof(p));
	p.op = VNPU_REDUCE_SUM;
	p.dim_mask = 2;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 3, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 3, osz, NULL);
	/* sum over an empty dim is 0, mean NaN */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 3),
			  VNPU_STATUS_OK);
	for (int i = 0; i < 6; i++)
		ck_assert_double_eq(
			get_val(b[1].ptr, VNPU_DTYPE_F32, (uint64_t)i), 0.0);
	p.op = VNPU_REDUCE_MEAN;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 2),
			  VNPU_STATUS_OK);
	for (int i = 0; i < 6; i++)
		ck_assert(
			isnan(get_val(b[1].ptr, VNPU_DTYPE_F32, (uint64_t)i)));
	/* extrema of nothing are rejected */
	for (uint32_t op = VNPU_REDUCE_MAX; op <= VNPU_REDUCE_ARGMIN; op++) {
		p.op = op;
		p.out.dtype = op >= VNPU_REDUCE_ARGMAX ? VNPU_DTYPE_I64
						       : VNPU_DTYPE_F32;
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
				  VNPU_STATUS_INVALID_ARGS);
	}

	sizes[1] = 4;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 3, sizes, NULL);
	p.op = VNPU_REDUCE_MAX;
	p.out.dtype = VNPU_DTYPE_F32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	p.op = VNPU_REDUCE_COUNT;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.op = VNPU_REDUCE_SUM;
	p.dim_mask = 2 | 8; /* bit past ndim */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.dim_mask = 1u << 31;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.dim_mask = 2 | 4; /* out keeps dim 2 at 3: wrong shape */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.dim_mask = 2;
	p.out.ndim = 2; /* rank must be kept */
	p.out.sizes[2] = 0;
	p.out.strides[2] = 0;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.out = kt_tensor(1, VNPU_DTYPE_F16, 3, osz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS); /* dtype differs */
	p.out.dtype = VNPU_DTYPE_F32;
	p.op = VNPU_REDUCE_ARGMAX; /* needs I64 out */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.out.dtype = VNPU_DTYPE_I64;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	p.dim_mask = 0; /* exactly one dim */
	p.out = kt_tensor(1, VNPU_DTYPE_I64, 3, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.dim_mask = 3;
	osz[0] = 1;
	p.out = kt_tensor(1, VNPU_DTYPE_I64, 3, osz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	osz[0] = 2;

	p.op = VNPU_REDUCE_MEAN; /* integer mean: unsupported */
	p.dim_mask = 2;
	p.input.dtype = VNPU_DTYPE_I32;
	p.out = kt_tensor(1, VNPU_DTYPE_I32, 3, osz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_UNSUPPORTED);
	p.op = VNPU_REDUCE_SUM;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	p.input.dtype = p.out.dtype = VNPU_DTYPE_I8;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	p.input.dtype = p.out.dtype = 77; /* no such dtype */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_UNSUPPORTED);
	p.input.dtype = p.out.dtype = VNPU_DTYPE_F32;
	b[1].access = VNPU_ACCESS_READ;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	b[1].access |= VNPU_ACCESS_WRITE;
	p.input.strides[0] = 1000; /* past the buffer */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.input.strides[0] = 12;
	p.input.format = VNPU_FORMAT_NC1HWC0;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS); /* strides must be 0 */
	memset(p.input.strides, 0, sizeof(p.input.strides));
	p.input.ndim = 4;
	p.input.sizes[3] = 1;
	b[0].size = 4096;
	b[0].ptr = realloc(b[0].ptr, 4096);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_REDUCE, &p, b, 2, 1),
			  VNPU_STATUS_UNSUPPORTED);
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

/* ------------------------------------------------------------- SOFTMAX */

static void run_softmax_case(uint32_t dt, int log_out, int in_place,
			     uint32_t nblocks)
{
	int64_t sizes[MAXD], idx[MAXD];
	uint32_t ndim, dim;
	struct operand oi, oo;
	struct vnpu_kbuf b[2];
	struct vnpu_kp_softmax p;
	uint64_t n;
	double *x, *want;
	void *before;

	do
		ndim = rand_shape(sizes, 4, 1);
	while (ndim == 0);
	dim = kt_rand() % ndim;
	oi = make_operand(0, dt, ndim, sizes, rand_layout(0));
	oo = in_place ? oi : make_operand(1, dt, ndim, sizes, rand_layout(0));
	b[0] = operand_buffer(&oi, -8, 8);
	b[1] = in_place ? b[0] : operand_buffer(&oo, -1, 1);
	n = numel_of(ndim, sizes);
	x = malloc((n ? n : 1) * sizeof(double));
	want = malloc((n ? n : 1) * sizeof(double));
	ck_assert(x && want);
	for (uint64_t i = 0; i < n; i++) {
		unravel(i, ndim, sizes, idx);
		x[i] = get_val(b[0].ptr, dt, at(&oi.t, idx));
	}
	/* reference: for each element, max and sum over its row along dim */
	for (uint64_t i = 0; i < n; i++) {
		double mx = -INFINITY, sum = 0;
		int64_t j[MAXD];

		unravel(i, ndim, sizes, idx);
		memcpy(j, idx, sizeof(j));
		for (j[dim] = 0; j[dim] < sizes[dim]; j[dim]++) {
			uint64_t lin = 0;

			for (uint32_t d = 0; d < ndim; d++)
				lin = lin * (uint64_t)sizes[d] + (uint64_t)j[d];
			if (x[lin] > mx)
				mx = x[lin];
		}
		for (j[dim] = 0; j[dim] < sizes[dim]; j[dim]++) {
			uint64_t lin = 0;

			for (uint32_t d = 0; d < ndim; d++)
				lin = lin * (uint64_t)sizes[d] + (uint64_t)j[d];
			sum += exp(x[lin] - mx);
		}
		want[i] = log_out ? x[i] - mx - log(sum) : exp(x[i] - mx) / sum;
	}
	before = dup_bytes(&b[1]);
	memset(&p, 0, sizeof(p));
	p.dim = dim;
	p.log = (uint32_t)log_out;
	p.input = oi.t;
	p.out = oo.t;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, nblocks),
			  VNPU_STATUS_OK);
	for (uint64_t i = 0; i < n; i++) {
		double got;

		unravel(i, ndim, sizes, idx);
		got = get_val(b[1].ptr, dt, at(&oo.t, idx));
		/* log-softmax: absolute error scales with the inputs */
		ck_assert_msg(close_to(got, want[i], rtol_of(dt) * 4,
				       log_out ? rtol_of(dt) * 16 : 1e-7),
			      "softmax dt %u log %d: %.9g, want %.9g", dt,
			      log_out, got, want[i]);
	}
	if (!in_place)
		check_untouched(&oo.t, before, b[1].ptr, b[1].size);
	free(before);
	free(x);
	free(want);
	kt_free(&b[0]);
	if (!in_place)
		kt_free(&b[1]);
}

START_TEST(test_softmax)
{
	kt_seed(707);
	for (uint32_t k = 0; k < 3; k++)
		for (int log_out = 0; log_out < 2; log_out++)
			for (int iter = 0; iter < 60; iter++)
				run_softmax_case(float_dtypes[k], log_out,
						 iter % 5 == 4,
						 block_counts[iter % 3]);
}
END_TEST

START_TEST(test_softmax_stability)
{
	int64_t sizes[2] = {2, 3};
	struct vnpu_kbuf b = kt_buffer(64);
	struct vnpu_kp_softmax p;
	const float in[6] = {1000, 1001, 1002, -INFINITY, 0, NAN};
	double e0 = exp(-2.0), e1 = exp(-1.0), s = e0 + e1 + 1;

	memcpy(b.ptr, in, sizeof(in));
	memset(&p, 0, sizeof(p));
	p.dim = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 2, sizes, NULL);
	p.out = p.input;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, &b, 1, 2),
			  VNPU_STATUS_OK);
	ck_assert(close_to(get_val(b.ptr, VNPU_DTYPE_F32, 0), e0 / s, 1e-6, 0));
	ck_assert(close_to(get_val(b.ptr, VNPU_DTYPE_F32, 2), 1 / s, 1e-6, 0));
	/* a NaN in a row makes the whole row NaN */
	for (int i = 3; i < 6; i++)
		ck_assert(isnan(get_val(b.ptr, VNPU_DTYPE_F32, (uint64_t)i)));
	memcpy(b.ptr, in, sizeof(in));
	p.log = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, &b, 1, 1),
			  VNPU_STATUS_OK);
	ck_assert(close_to(get_val(b.ptr, VNPU_DTYPE_F32, 1), -1 - log(s), 1e-6,
			   0));
	kt_free(&b);
}
END_TEST

START_TEST(test_softmax_errors)
{
	int64_t sizes[2] = {3, 4}, other[2] = {4, 3};
	struct vnpu_kbuf b[2] = {kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_softmax p;

	memset(&p, 0, sizeof(p));
	p.dim = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 2, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 2, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	p.dim = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.dim = 0;
	p.log = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.log = 0;
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 2, other, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.out = kt_tensor(1, VNPU_DTYPE_F16, 2, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.out.dtype = p.input.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_UNSUPPORTED);
	p.out.dtype = p.input.dtype = VNPU_DTYPE_F32;
	p.out.strides[0] = 1; /* output rows overlap */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.out.strides[0] = 4;
	p.input.buffer = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.input.buffer = 0;
	p.input.ndim = 0; /* no dim to reduce */
	memset(p.input.sizes, 0, sizeof(p.input.sizes));
	memset(p.input.strides, 0, sizeof(p.input.strides));
	p.out = p.input;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SOFTMAX, &p, b, 2, 1),
			  VNPU_STATUS_INVALID_ARGS);
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

/* ---------------------------------------------------------- LAYER_NORM */

static void run_layer_norm_case(uint32_t dt, uint32_t nblocks, int in_place)
{
	int64_t sizes[MAXD], idx[MAXD], widx[MAXD], lead_sizes[MAXD];
	uint32_t ndim, norm_ndim, lead;
	struct operand oi, oo, ow, ob, om, orr;
	struct vnpu_kbuf b[6];
	struct vnpu_kp_layer_norm p;
	uint64_t rows = 1, row_len = 1;
	double *mean, *rstd;
	void *before;
	uint32_t wdt = kt_rand() % 2 ? dt : (uint32_t)VNPU_DTYPE_F32;

	do
		ndim = rand_shape(sizes, 4, 1);
	while (ndim == 0);
	norm_ndim = 1 + kt_rand() % ndim;
	lead = ndim - norm_ndim;
	for (uint32_t d = 0; d < lead; d++) {
		rows *= (uint64_t)sizes[d];
		lead_sizes[d] = sizes[d];
	}
	for (uint32_t d = lead; d < ndim; d++)
		row_len *= (uint64_t)sizes[d];
	memset(&p, 0, sizeof(p));
	p.norm_ndim = norm_ndim;
	p.has_weight = kt_rand() % 2;
	p.has_bias = kt_rand() % 2;
	p.has_stats = kt_rand() % 2;
	p.eps = kt_rand() % 2 ? 1e-5 : 0.5;
	oi = make_operand(0, dt, ndim, sizes, rand_layout(0));
	oo = in_place ? oi : make_operand(1, dt, ndim, sizes, rand_layout(0));
	ow = make_operand(2, wdt, norm_ndim, sizes + lead,
			  rand_layout(LAY_ZERO));
	ob = make_operand(3, wdt, norm_ndim, sizes + lead, rand_layout(0));
	if (kt_rand() % 2 || lead == 0) {
		/* stats shaped as the leading dims */
		om = make_operand(4, VNPU_DTYPE_F32, lead, lead_sizes,
				  rand_layout(0));
		orr = make_operand(5, VNPU_DTYPE_F32, lead, lead_sizes,
				   rand_layout(0));
	} else {
		/* ... or flattened to [rows] */
		int64_t r = (int64_t)rows;

		om = make_operand(4, VNPU_DTYPE_F32, 1, &r, rand_layout(0));
		orr = make_operand(5, VNPU_DTYPE_F32, 1, &r, rand_layout(0));
	}
	b[0] = operand_buffer(&oi, -3, 5);
	b[1] = in_place ? b[0] : operand_buffer(&oo, -1, 1);
	b[2] = operand_buffer(&ow, 0.5, 2);
	b[3] = operand_buffer(&ob, -1, 1);
	b[4] = operand_buffer(&om, -1, 1);
	b[5] = operand_buffer(&orr, -1, 1);
	p.input = oi.t;
	p.out = oo.t;
	p.weight = ow.t;
	p.bias = ob.t;
	p.mean = om.t;
	p.rstd = orr.t;
	if (!p.has_weight)
		memset(&p.weight, 0xee, sizeof(p.weight)); /* ignored */

	/* reference statistics per row, two passes in double */
	mean = calloc(rows ? rows : 1, sizeof(double));
	rstd = calloc(rows ? rows : 1, sizeof(double));
	uint64_t total = rows * row_len;
	double *want = malloc((total > 0 ? total : 1) * sizeof(double));
	ck_assert(mean && rstd && want);
	for (uint64_t r = 0; r < rows; r++) {
		double s = 0, sq = 0;

		for (uint64_t k = 0; k < row_len; k++) {
			unravel(r * row_len + k, ndim, sizes, idx);
			s += get_val(b[0].ptr, dt, at(&oi.t, idx));
		}
		mean[r] = s / (double)row_len;
		for (uint64_t k = 0; k < row_len; k++) {
			unravel(r * row_len + k, ndim, sizes, idx);
			double dv =
				get_val(b[0].ptr, dt, at(&oi.t, idx)) - mean[r];

			sq += dv * dv;
		}
		rstd[r] = 1.0 / sqrt(sq / (double)row_len + p.eps);
		for (uint64_t k = 0; k < row_len; k++) {
			double v;

			unravel(r * row_len + k, ndim, sizes, idx);
			memcpy(widx, idx + lead, norm_ndim * sizeof(int64_t));
			v = (get_val(b[0].ptr, dt, at(&oi.t, idx)) - mean[r]) *
			    rstd[r];
			if (p.has_weight)
				v *= get_val(b[2].ptr, wdt, at(&ow.t, widx));
			if (p.has_bias)
				v += get_val(b[3].ptr, wdt, at(&ob.t, widx));
			want[r * row_len + k] = v;
		}
	}
	before = dup_bytes(&b[1]);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_LAYER_NORM, &p, b, 6, nblocks),
			  VNPU_STATUS_OK);
	for (uint64_t i = 0; i < rows * row_len; i++) {
		double got;

		unravel(i, ndim, sizes, idx);
		got = get_val(b[1].ptr, dt, at(&oo.t, idx));
		ck_assert_msg(
			close_to(got, want[i], rtol_of(dt) * 4,
				 dt == VNPU_DTYPE_F32 ? 2e-5 : rtol_of(dt) * 8),
			"layer_norm dt %u: %.9g, want %.9g", dt, got, want[i]);
	}
	if (!in_place)
		check_untouched(&oo.t, before, b[1].ptr, b[1].size);
	if (p.has_stats)
		for (uint64_t r = 0; r < rows; r++) {
			unravel(r, om.t.ndim, om.t.sizes, idx);
			ck_assert(close_to(get_val(b[4].ptr, VNPU_DTYPE_F32,
						   at(&om.t, idx)),
					   mean[r], 1e-6, 1e-6));
			ck_assert(close_to(get_val(b[5].ptr, VNPU_DTYPE_F32,
						   at(&orr.t, idx)),
					   rstd[r], 1e-4, 0));
		}
	free(before);
	free(mean);
	free(rstd);
	free(want);
	for (int k = 0; k < 6; k++)
		if (k != 1 || !in_place)
			kt_free(&b[k]);
}

START_TEST(test_layer_norm)
{
	kt_seed(808);
	for (uint32_t k = 0; k < 3; k++)
		for (int iter = 0; iter < 150; iter++)
			run_layer_norm_case(float_dtypes[k],
					    block_counts[iter % 3],
					    iter % 5 == 4);
}
END_TEST

START_TEST(test_layer_norm_errors)
{
	int64_t sizes[3] = {2, 3, 4}, norm[2] = {3, 4}, rows[1] = {2};
	int64_t bad[2] = {4, 3};
	struct vnpu_kbuf b[6];
	struct vnpu_kp_layer_norm p;

	for (int i = 0; i < 6; i++)
		b[i] = kt_buffer(256);
	memset(&p, 0, sizeof(p));
	p.norm_ndim = 2;
	p.has_weight = p.has_bias = p.has_stats = 1;
	p.eps = 1e-5;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 3, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 3, sizes, NULL);
	p.weight = kt_tensor(2, VNPU_DTYPE_F32, 2, norm, NULL);
	p.bias = kt_tensor(3, VNPU_DTYPE_F32, 2, norm, NULL);
	p.mean = kt_tensor(4, VNPU_DTYPE_F32, 1, rows, NULL);
	p.rstd = kt_tensor(5, VNPU_DTYPE_F32, 1, rows, NULL);
#define LN(expect)                                                             \
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_LAYER_NORM, &p, b, 6, 1),      \
			  (expect))
	LN(VNPU_STATUS_OK);
	p.norm_ndim = 0;
	LN(VNPU_STATUS_INVALID_ARGS);
	p.norm_ndim = 4;
	LN(VNPU_STATUS_INVALID_ARGS);
	p.norm_ndim = 2;
	p.has_bias = 2;
	LN(VNPU_STATUS_INVALID_ARGS);
	p.has_bias = 1;
	p.eps = -1;
	LN(VNPU_STATUS_INVALID_ARGS);
	p.eps = NAN;
	LN(VNPU_STATUS_INVALID_ARGS);
	p.eps = 1e-5;
	p.weight = kt_tensor(2, VNPU_DTYPE_F32, 2, bad, NULL);
	LN(VNPU_STATUS_INVALID_ARGS);
	p.has_weight = 0; /* then weight is not looked at */
	LN(VNPU_STATUS_OK);
	p.has_weight = 1;
	p.weight = kt_tensor(2, VNPU_DTYPE_F16, 2, norm, NULL);
	LN(VNPU_STATUS_UNSUPPORTED); /* neither input's dtype nor F32 */
	p.weight = kt_tensor(2, VNPU_DTYPE_F32, 1, norm + 1, NULL);
	LN(VNPU_STATUS_INVALID_ARGS); /* rank differs from norm_ndim */
	p.weight = kt_tensor(2, VNPU_DTYPE_F32, 2, norm, NULL);
	p.mean = kt_tensor(4, VNPU_DTYPE_F32, 1, norm, NULL);
	LN(VNPU_STATUS_INVALID_ARGS); /* 3 stats for 2 rows */
	p.mean = kt_tensor(4, VNPU_DTYPE_F16, 1, rows, NULL);
	LN(VNPU_STATUS_INVALID_ARGS);
	p.mean = kt_tensor(4, VNPU_DTYPE_F32, 1, rows, NULL);
	b[5].access = VNPU_ACCESS_READ;
	LN(VNPU_STATUS_INVALID_ARGS);
	b[5].access |= VNPU_ACCESS_WRITE;
	p.rstd.offset = 63; /* past the buffer */
	LN(VNPU_STATUS_INVALID_ARGS);
	p.rstd.offset = 0;
	p.out = kt_tensor(1, VNPU_DTYPE_F16, 3, sizes, NULL);
	LN(VNPU_STATUS_INVALID_ARGS);
	p.out.dtype = p.input.dtype = VNPU_DTYPE_I32;
	LN(VNPU_STATUS_UNSUPPORTED);
	p.out.dtype = p.input.dtype = VNPU_DTYPE_F32;
	p.out.sizes[2] = 3;
	LN(VNPU_STATUS_INVALID_ARGS);
#undef LN
	for (int i = 0; i < 6; i++)
		kt_free(&b[i]);
}
END_TEST

/* -------------------------------------------------------------- POOL2D */

/* Output length by the definition: floor or ceil of the window count,
 * minus a last window starting beyond input + left padding. */
static int64_t ref_out_len(int64_t in, int64_t k, int64_t s, int64_t pad,
			   int64_t dil, int ceil_mode)
{
	double q = (double)(in + 2 * pad - dil * (k - 1) - 1) / (double)s;
	int64_t o = (int64_t)(ceil_mode ? ceil(q) : floor(q)) + 1;

	if (ceil_mode && (o - 1) * s >= in + pad)
		o--;
	return o;
}

static void run_pool_case(uint32_t dt, uint32_t mode, uint32_t nblocks)
{
	struct vnpu_kp_pool2d p;
	int64_t sizes[4], osz[4], idx[4], oidx[4];
	int64_t ho, wo;
	struct operand oi, oo, ox;
	struct vnpu_kbuf b[3];
	static const int64_t dims[] = {1, 2, 3, 5, 7, 15, 17};
	void *before, *before_idx;

	memset(&p, 0, sizeof(p));
	p.mode = mode;
	do {
		p.kernel_h = (uint32_t)kt_rand_range(1, 4);
		p.kernel_w = (uint32_t)kt_rand_range(1, 4);
		p.stride_h = (uint32_t)kt_rand_range(1, 3);
		p.stride_w = (uint32_t)kt_rand_range(1, 3);
		p.pad_h = (uint32_t)kt_rand_range(0, p.kernel_h / 2);
		p.pad_w = (uint32_t)kt_rand_range(0, p.kernel_w / 2);
		p.dil_h = mode == VNPU_POOL_MAX ? (uint32_t)kt_rand_range(1, 2)
						: 1;
		p.dil_w = mode == VNPU_POOL_MAX ? (uint32_t)kt_rand_range(1, 2)
						: 1;
		p.ceil_mode = kt_rand() % 2;
		sizes[0] = kt_rand() % 6 == 0 ? 0 : kt_rand_range(1, 2);
		sizes[1] = dims[kt_rand() % 4];
		sizes[2] = dims[kt_rand() % 7];
		sizes[3] = dims[kt_rand() % 7];
		ho = ref_out_len(sizes[2], p.kernel_h, p.stride_h, p.pad_h,
				 p.dil_h, (int)p.ceil_mode);
		wo = ref_out_len(sizes[3], p.kernel_w, p.stride_w, p.pad_w,
				 p.dil_w, (int)p.ceil_mode);
	} while (ho < 1 || wo < 1);
	p.count_include_pad = kt_rand() % 2;
	p.has_indices = mode == VNPU_POOL_MAX && kt_rand() % 2;
	osz[0] = sizes[0];
	osz[1] = sizes[1];
	osz[2] = ho;
	osz[3] = wo;
	oi = make_operand(0, dt, 4, sizes, rand_layout(0));
	oo = make_operand(1, dt, 4, osz, rand_layout(0));
	ox = make_operand(2, VNPU_DTYPE_I64, 4, osz, rand_layout(0));
	b[0] = operand_buffer(&oi, -10, 10);
	b[1] = operand_buffer(&oo, -1, 1);
	b[2] = operand_buffer(&ox, -1, 1);
	if (dt != VNPU_DTYPE_I32 && kt_rand() % 4 == 0 && oi.nelem > 0)
		put_val(b[0].ptr, dt, kt_rand() % oi.nelem, NAN);
	if (kt_rand() % 3 == 0) /* ties: first maximum must win */
		for (uint64_t i = 0; i < oi.nelem; i++)
			put_val(b[0].ptr, dt, i, (double)kt_rand_range(-1, 1));
	p.input = oi.t;
	p.out = oo.t;
	p.indices = ox.t;
	before = dup_bytes(&b[1]);
	before_idx = dup_bytes(&b[2]);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &p, b, 3, nblocks),
			  VNPU_STATUS_OK);
	for (uint64_t i = 0; i < numel_of(4, osz); i++) {
		double best = -INFINITY, sum = 0, got;
		int64_t best_at = -1, first_valid = -1;
		int64_t valid = 0, padded = 0;

		unravel(i, 4, osz, oidx);
		idx[0] = oidx[0];
		idx[1] = oidx[1];
		for (int64_t kh = 0; kh < (int64_t)p.kernel_h; kh++) {
			int64_t h =
				oidx[2] * p.stride_h - p.pad_h + kh * p.dil_h;

			for (int64_t kw = 0; kw < (int64_t)p.kernel_w; kw++) {
				int64_t w = oidx[3] * p.stride_w - p.pad_w +
					    kw * p.dil_w;
				int in_h = h >= 0 && h < sizes[2];
				int in_w = w >= 0 && w < sizes[3];
				double v;

				if (h < sizes[2] + p.pad_h &&
				    w < sizes[3] + p.pad_w)
					padded++;
				if (!in_h || !in_w)
					continue;
				idx[2] = h;
				idx[3] = w;
				v = get_val(b[0].ptr, dt, at(&oi.t, idx));
				valid++;
				sum += v;
				if (first_valid < 0)
					first_valid = h * sizes[3] + w;
				if (!isnan(best) && (isnan(v) || v > best)) {
					best = v;
					best_at = h * sizes[3] + w;
				} else if (isnan(v)) {
					best_at = h * sizes[3] + w;
				}
			}
		}
		got = get_val(b[1].ptr, dt, at(&oo.t, oidx));
		if (mode == VNPU_POOL_MAX) {
			if (valid == 0) {
				/* only with dilation: -inf, and as index the
				 * first dilated position past the padding */
				int64_t h = oidx[2] * p.stride_h - p.pad_h;
				int64_t w = oidx[3] * p.stride_w - p.pad_w;

				while (h < 0)
					h += p.dil_h;
				while (w < 0)
					w += p.dil_w;
				first_valid = h * sizes[3] + w;
			}
			ck_assert_msg(close_to(got, best, 0, 0),
				      "maxpool dt %u: %g, want %g", dt, got,
				      best);
			if (p.has_indices)
				ck_assert_int_eq(
					get_int(b[2].ptr, VNPU_DTYPE_I64,
						at(&ox.t, oidx)),
					best_at < 0 ? first_valid : best_at);
		} else {
			double want =
				valid == 0 ? 0
					   : sum / (double)(p.count_include_pad
								    ? padded
								    : valid);

			ck_assert_msg(close_to(got, want, rtol_of(dt) * 2,
					       rtol_of(dt) * 10),
				      "avgpool dt %u cip %u: %g, want %g", dt,
				      p.count_include_pad, got, want);
		}
	}
	check_untouched(&oo.t, before, b[1].ptr, b[1].size);
	if (!p.has_indices)
		ck_assert_mem_eq(before_idx, b[2].ptr, b[2].size);
	free(before);
	free(before_idx);
	for (int k = 0; k < 3; k++)
		kt_free(&b[k]);
}

START_TEST(test_pool2d)
{
	kt_seed(909);
	for (uint32_t k = 0; k < 3; k++)
		for (uint32_t mode = 0; mode < 2; mode++)
			for (int iter = 0; iter < 150; iter++)
				run_pool_case(float_dtypes[k], mode,
					      block_counts[iter % 3]);
}
END_TEST

START_TEST(test_pool2d_known_values)
{
	int64_t sizes[4] = {1, 1, 4, 4}, osz[4] = {1, 1, 2, 2};
	int64_t s3[4] = {1, 1, 3, 3}, o3[4] = {1, 1, 3, 3};
	struct vnpu_kbuf b[3] = {kt_buffer(256), kt_buffer(256),
				 kt_buffer(256)};
	struct vnpu_kp_pool2d p;
	const int64_t want_idx[4] = {5, 7, 13, 15};

	for (int i = 0; i < 16; i++)
		put_val(b[0].ptr, VNPU_DTYPE_F32, (uint64_t)i, i);
	memset(&p, 0, sizeof(p));
	p.mode = VNPU_POOL_MAX;
	p.kernel_h = p.kernel_w = p.stride_h = p.stride_w = 2;
	p.dil_h = p.dil_w = 1;
	p.has_indices = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 4, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 4, osz, NULL);
	p.indices = kt_tensor(2, VNPU_DTYPE_I64, 4, osz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &p, b, 3, 1),
			  VNPU_STATUS_OK);
	for (int i = 0; i < 4; i++) {
		ck_assert_double_eq(
			get_val(b[1].ptr, VNPU_DTYPE_F32, (uint64_t)i),
			(double)want_idx[i]);
		ck_assert_int_eq(get_int(b[2].ptr, VNPU_DTYPE_I64, (uint64_t)i),
				 want_idx[i]);
	}
	/* 3x3 ones, 3x3 window, pad 1: corners see 4 of 9 */
	for (int i = 0; i < 9; i++)
		put_val(b[0].ptr, VNPU_DTYPE_F32, (uint64_t)i, 1.0);
	p.mode = VNPU_POOL_AVG;
	p.has_indices = 0;
	p.kernel_h = p.kernel_w = 3;
	p.stride_h = p.stride_w = 1;
	p.pad_h = p.pad_w = 1;
	p.count_include_pad = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 4, s3, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 4, o3, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &p, b, 3, 2),
			  VNPU_STATUS_OK);
	ck_assert(close_to(get_val(b[1].ptr, VNPU_DTYPE_F32, 0), 4.0 / 9, 1e-6,
			   0));
	ck_assert(close_to(get_val(b[1].ptr, VNPU_DTYPE_F32, 1), 6.0 / 9, 1e-6,
			   0));
	ck_assert_double_eq(get_val(b[1].ptr, VNPU_DTYPE_F32, 4), 1.0);
	p.count_include_pad = 0;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &p, b, 3, 1),
			  VNPU_STATUS_OK);
	ck_assert_double_eq(get_val(b[1].ptr, VNPU_DTYPE_F32, 0), 1.0);
	/* ceil_mode drops a window that would start in the right padding:
	 * H=4, k=2, s=3, p=1 gives 2 rows, not 3 */
	p.mode = VNPU_POOL_MAX;
	p.kernel_h = p.kernel_w = 2;
	p.stride_h = p.stride_w = 3;
	p.ceil_mode = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 4, sizes, NULL);
	osz[2] = osz[3] = 3;
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 4, osz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &p, b, 3, 1),
			  VNPU_STATUS_INVALID_ARGS);
	osz[2] = osz[3] = 2;
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 4, osz, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &p, b, 3, 1),
			  VNPU_STATUS_OK);
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

START_TEST(test_pool2d_errors)
{
	int64_t sizes[4] = {1, 2, 5, 5}, osz[4] = {1, 2, 2, 2};
	struct vnpu_kbuf b[3] = {kt_buffer(512), kt_buffer(512),
				 kt_buffer(512)};
	struct vnpu_kp_pool2d p;

	memset(&p, 0, sizeof(p));
	p.mode = VNPU_POOL_MAX;
	p.kernel_h = p.kernel_w = 2;
	p.stride_h = p.stride_w = 2;
	p.dil_h = p.dil_w = 1;
	p.has_indices = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 4, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 4, osz, NULL);
	p.indices = kt_tensor(2, VNPU_DTYPE_I64, 4, osz, NULL);
#define POOL(expect)                                                           \
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_POOL2D, &p, b, 3, 1), (expect))
	POOL(VNPU_STATUS_OK);
	p.mode = 2;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.mode = VNPU_POOL_MAX;
	p.pad_h = 2; /* > kernel / 2 */
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.pad_h = 0;
	p.kernel_w = 0;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.kernel_w = 2;
	p.stride_h = 0;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.stride_h = 2;
	p.dil_w = 0;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.dil_w = 1;
	p.ceil_mode = 3;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.ceil_mode = 0;
	p.mode = VNPU_POOL_AVG; /* avg: no indices */
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.has_indices = 0;
	POOL(VNPU_STATUS_OK);
	p.dil_h = 2; /* avg: no dilation */
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.dil_h = 1;
	p.mode = VNPU_POOL_MAX;
	p.has_indices = 1;
	p.indices.dtype = VNPU_DTYPE_I32;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.indices.dtype = VNPU_DTYPE_I64;
	p.indices.sizes[3] = 1;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.indices.sizes[3] = 2;
	b[2].access = VNPU_ACCESS_READ;
	POOL(VNPU_STATUS_INVALID_ARGS);
	b[2].access |= VNPU_ACCESS_WRITE;
	p.out.sizes[2] = 3; /* floor mode gives 2 */
	p.out.strides[1] = 6;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.out.sizes[2] = 2;
	p.out.strides[1] = 4;
	p.out.sizes[1] = 1; /* channels must match */
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.out.sizes[1] = 2;
	p.kernel_h = 7; /* window larger than the input: empty output */
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.kernel_h = 2;
	p.input.dtype = p.out.dtype = VNPU_DTYPE_I32;
	POOL(VNPU_STATUS_UNSUPPORTED);
	p.input.dtype = VNPU_DTYPE_F32;
	POOL(VNPU_STATUS_INVALID_ARGS); /* out dtype differs */
	p.out.dtype = VNPU_DTYPE_F32;
	p.input.ndim = 3;
	p.input.sizes[3] = 0;
	p.input.strides[3] = 0;
	POOL(VNPU_STATUS_INVALID_ARGS);
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 4, sizes, NULL);
	p.input.strides[0] = INT64_MAX / 2; /* overflowing extent */
	p.input.sizes[0] = 3;
	POOL(VNPU_STATUS_INVALID_ARGS);
#undef POOL
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

static Suite *reduce_norm_suite(void)
{
	Suite *s = suite_create("reduce_norm");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_reduce);
	tcase_add_test(tc, test_reduce_prod);
	tcase_add_test(tc, test_reduce_long_sum);
	tcase_add_test(tc, test_reduce_f64);
	tcase_add_test(tc, test_fused_f64_unsupported);
	tcase_add_test(tc, test_reduce_errors_and_empty);
	tcase_add_test(tc, test_softmax);
	tcase_add_test(tc, test_softmax_stability);
	tcase_add_test(tc, test_softmax_errors);
	tcase_add_test(tc, test_layer_norm);
	tcase_add_test(tc, test_layer_norm_errors);
	tcase_add_test(tc, test_pool2d);
	tcase_add_test(tc, test_pool2d_known_values);
	tcase_add_test(tc, test_pool2d_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(reduce_norm_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
