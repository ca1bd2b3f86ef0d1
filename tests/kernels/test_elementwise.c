// SPDX-License-Identifier: MIT
/*
 * FILL, CAST, UNARY, BINARY and WHERE against references written here with
 * doubles and explicit index math: random shapes (0, 1, 15, 17 included),
 * transposed and padded strides, offsets, broadcasting by size-1 dims and
 * by stride 0, in-place operation, several block counts, and every
 * validator error path. Element values are encoded by frexp/ldexp
 * arithmetic for f16 and by truncating f32 for bf16, independently of
 * kernels/dtype.h.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ew_check.h"
#include "harness.h"

/* ------------------------------------------------------------ registry */

/* The definitions themselves, to check the registry hands them out. */
extern const struct vnpu_kernel_def vnpu_kernel_fill, vnpu_kernel_cast,
	vnpu_kernel_unary, vnpu_kernel_binary, vnpu_kernel_where;

START_TEST(test_registry)
{
	static const struct {
		const struct vnpu_kernel_def *def;
		uint32_t id;
		const char *name;
		uint32_t params_size;
	} k[] = {
		{&vnpu_kernel_fill, VNPU_KERNEL_FILL, "fill",
		 sizeof(struct vnpu_kp_fill)},
		{&vnpu_kernel_cast, VNPU_KERNEL_CAST, "cast",
		 sizeof(struct vnpu_kp_cast)},
		{&vnpu_kernel_unary, VNPU_KERNEL_UNARY, "unary",
		 sizeof(struct vnpu_kp_unary)},
		{&vnpu_kernel_binary, VNPU_KERNEL_BINARY, "binary",
		 sizeof(struct vnpu_kp_binary)},
		{&vnpu_kernel_where, VNPU_KERNEL_WHERE, "where",
		 sizeof(struct vnpu_kp_where)},
	};

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		ck_assert_ptr_eq(vnpu_kernel_find(k[i].id), k[i].def);
		ck_assert_ptr_eq(vnpu_kernel_find_name(k[i].name), k[i].def);
		ck_assert_uint_eq(k[i].def->id, k[i].id);
		ck_assert_uint_eq(k[i].def->params_size, k[i].params_size);
	}
}
END_TEST

/* ---------------------------------------------------------------- FILL */

START_TEST(test_fill)
{
	kt_seed(101);
	for (int iter = 0; iter < 160; iter++) {
		uint32_t dt = all_dtypes[iter % N_ALL_DTYPES];
		int64_t sizes[MAXD];
		uint32_t ndim = rand_shape(sizes, 4, 1);
		struct operand o =
			make_operand(0, dt, ndim, sizes, rand_layout(0));
		struct vnpu_kbuf b = operand_buffer(&o, -5, 5);
		void *before = dup_bytes(&b);
		struct vnpu_kp_fill p;
		uint64_t n = numel_of(ndim, sizes);
		int64_t idx[MAXD];
		double want;

		memset(&p, 0, sizeof(p));
		p.out = o.t;
		p.value = kt_rand_float(-300, 300);
		if (dt == VNPU_DTYPE_F64) /* every bit matters */
			p.value = rand_double(-300, 300);
		p.ivalue = kt_rand_range(-400, 400);
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &p, &b, 1,
					    block_counts[iter % 3]),
				  VNPU_STATUS_OK);
		switch (dt) {
		case VNPU_DTYPE_F32:
		case VNPU_DTYPE_F16:
		case VNPU_DTYPE_BF16:
		case VNPU_DTYPE_F64:
			want = p.value;
			break;
		case VNPU_DTYPE_I8:
			want = (int8_t)(uint8_t)(p.ivalue & 0xff);
			break;
		case VNPU_DTYPE_I16:
			want = (int16_t)(uint16_t)(p.ivalue & 0xffff);
			break;
		case VNPU_DTYPE_U8:
			want = (uint8_t)(p.ivalue & 0xff);
			break;
		case VNPU_DTYPE_BOOL:
			want = p.ivalue != 0;
			break;
		default:
			want = (double)p.ivalue;
			break;
		}
		for (uint64_t i = 0; i < n; i++) {
			unravel(i, ndim, sizes, idx);
			double got = get_val(b.ptr, dt, elem_off(&o.t, idx));

			if (dt == VNPU_DTYPE_F64)
				ck_assert_msg(same_double(got, want),
					      "fill f64: %a vs %a", got, want);
			ck_assert_msg(
				close_to(got, want, rtol_of(dt) + 6e-8, 0),
				"fill dt %u: %g vs %g", dt, got, want);
		}
		check_untouched(&o.t, before, b.ptr, b.size);
		free(before);
		kt_free(&b);
	}
}
END_TEST

/* ---------------------------------------------------------------- RANGE */

/* Every element exactly as its own formula gives it, whatever the layout
 * and the number of blocks; integers wrap; BOOL and a reserved bit are
 * refused without a write. */
START_TEST(test_range)
{
	kt_seed(103);
	for (int iter = 0; iter < 160; iter++) {
		uint32_t dt = all_dtypes[iter % N_ALL_DTYPES];
		int64_t sizes[MAXD], idx[MAXD];
		uint32_t ndim = rand_shape(sizes, 3, 1);
		struct operand o =
			make_operand(0, dt, ndim, sizes, rand_layout(0));
		struct vnpu_kbuf b = operand_buffer(&o, -5, 5);
		void *before = dup_bytes(&b);
		uint64_t n = numel_of(ndim, sizes);
		struct vnpu_kp_range p;

		memset(&p, 0, sizeof(p));
		p.out = o.t;
		p.start = rand_double(-50, 50);
		p.step = rand_double(-3, 3);
		p.istart = kt_rand_range(-400, 400);
		p.istep = kt_rand_range(-9, 9);
		if (dt == VNPU_DTYPE_BOOL) {
			ck_assert_uint_eq(kt_launch(VNPU_KERNEL_RANGE, &p, &b, 1, 1),
					  VNPU_STATUS_UNSUPPORTED);
			ck_assert(!memcmp(before, b.ptr, b.size));
			free(before);
			kt_free(&b);
			continue;
		}
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_RANGE, &p, &b, 1,
					    block_counts[iter % 3]),
				  VNPU_STATUS_OK);
		for (uint64_t i = 0; i < n; i++) {
			double got, want;

			unravel(i, ndim, sizes, idx);
			got = get_val(b.ptr, dt, elem_off(&o.t, idx));
			if (dt == VNPU_DTYPE_F64)
				want = p.start + p.step * (double)i;
			else if (dt == VNPU_DTYPE_F32)
				want = ew_round_f32(p.start + p.step * (double)i);
			else if (!is_float(dt))
				want = (double)ew_wrap_int(p.istart + p.istep * (int64_t)i, dt);
			else {
				float f = (float)p.start + (float)p.step * (float)i;

				want = dt == VNPU_DTYPE_F16 ? ew_round_f16(f) : ew_round_bf16(f);
			}
			ck_assert_msg(same_double(got, want), "range dt %u [%llu]: %a vs %a",
				      dt, (unsigned long long)i, got, want);
		}
		check_untouched(&o.t, before, b.ptr, b.size);
		free(before);
		kt_free(&b);
	}
}
END_TEST

START_TEST(test_range_edges)
{
	int64_t sizes[1] = {4};
	struct vnpu_kbuf b = kt_buffer(64);
	struct vnpu_kp_range p;

	memset(&p, 0, sizeof(p));
	p.out = kt_tensor(0, VNPU_DTYPE_I64, 1, sizes, NULL);
	p.istart = INT64_MAX - 1;
	p.istep = 1; /* wraps past the top */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_RANGE, &p, &b, 1, 2), VNPU_STATUS_OK);
	ck_assert(get_int(b.ptr, VNPU_DTYPE_I64, 1) == INT64_MAX);
	ck_assert(get_int(b.ptr, VNPU_DTYPE_I64, 2) == INT64_MIN);
	p.out = kt_tensor(0, VNPU_DTYPE_U8, 1, sizes, NULL);
	p.istart = 254;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_RANGE, &p, &b, 1, 1), VNPU_STATUS_OK);
	ck_assert(get_int(b.ptr, VNPU_DTYPE_U8, 3) == 1);
	p.reserved = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_RANGE, &p, &b, 1, 1),
			  VNPU_STATUS_INVALID_ARGS);
	kt_free(&b);
}
END_TEST

/* A value rounded to float dtype dt, as one operation of c10's arithmetic
 * in that dtype leaves it. */
static double dtype_round(uint32_t dt, double v)
{
	if (dt == VNPU_DTYPE_F64)
		return v;
	if (dt == VNPU_DTYPE_F32)
		return ew_round_f32(v);
	return dt == VNPU_DTYPE_F16 ? ew_round_f16(ew_round_f32(v))
				    : ew_round_bf16(ew_round_f32(v));
}

/* LINSPACE: element i as PyTorch's CPU kernel computes it (the first half
 * from start, the rest from end; every float operation rounded to the
 * dtype, integers through a double step, truncated), both ends exact,
 * whatever the layout and the number of blocks. */
START_TEST(test_linspace)
{
	kt_seed(107);
	for (int iter = 0; iter < 160; iter++) {
		uint32_t dt = all_dtypes[iter % N_ALL_DTYPES];
		int64_t sizes[MAXD], idx[MAXD];
		uint32_t ndim = rand_shape(sizes, 3, 1);
		struct operand o =
			make_operand(0, dt, ndim, sizes, rand_layout(0));
		struct vnpu_kbuf b = operand_buffer(&o, -5, 5);
		void *before = dup_bytes(&b);
		int64_t n = (int64_t)numel_of(ndim, sizes);
		double s, e, step;
		struct vnpu_kp_range p;

		if (dt == VNPU_DTYPE_BOOL) {
			free(before);
			kt_free(&b);
			continue;
		}
		memset(&p, 0, sizeof(p));
		p.out = o.t;
		p.mode = VNPU_RANGE_LINSPACE;
		p.start = rand_double(-50, 50);
		p.end = rand_double(-50, 50);
		if (!is_float(dt)) {
			p.start = (double)kt_rand_range(0, 120);
			p.end = (double)kt_rand_range(0, 120);
		}
		if (is_float(dt)) {
			s = dtype_round(dt, p.start);
			e = dtype_round(dt, p.end);
			step = n > 1 ? dtype_round(dt, dtype_round(dt, e - s) /
						       dtype_round(dt, (double)(n - 1)))
				     : 0;
		} else {
			s = p.start;
			e = p.end;
			step = n > 1 ? (e - s) / (double)(n - 1) : 0;
		}
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_RANGE, &p, &b, 1,
					    block_counts[iter % 3]),
				  VNPU_STATUS_OK);
		for (int64_t i = 0; i < n; i++) {
			bool first = i < n / 2;
			double k = (double)(first ? i : n - 1 - i), got, want;

			if (n == 1)
				want = s;
			else if (is_float(dt))
				want = dtype_round(dt, first ? s + dtype_round(dt, step * dtype_round(dt, k))
							     : e - dtype_round(dt, step * dtype_round(dt, k)));
			else
				want = trunc(first ? s + step * k : e - step * k);
			unravel((uint64_t)i, ndim, sizes, idx);
			got = get_val(b.ptr, dt, elem_off(&o.t, idx));
			ck_assert_msg(same_double(got, want), "linspace dt %u [%lld of %lld]: %a vs %a",
				      dt, (long long)i, (long long)n, got, want);
			if (i == n - 1 && n > 1)
				ck_assert(same_double(got, e));
		}
		check_untouched(&o.t, before, b.ptr, b.size);
		free(before);
		kt_free(&b);
	}
}
END_TEST

/* An unknown mode is refused. */
START_TEST(test_range_mode)
{
	int64_t sizes[1] = {4};
	struct vnpu_kbuf b = kt_buffer(64);
	struct vnpu_kp_range p;

	memset(&p, 0, sizeof(p));
	p.out = kt_tensor(0, VNPU_DTYPE_F32, 1, sizes, NULL);
	p.mode = VNPU_RANGE_LINSPACE + 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_RANGE, &p, &b, 1, 1),
			  VNPU_STATUS_INVALID_ARGS);
	kt_free(&b);
}
END_TEST

/* ----------------------------------------------------------------- SCAN */

/* The reference fold of one line up to and including position `upto`,
 * from the input's values as doubles, in the accumulation type PyTorch's
 * CPU uses for the dtype (double, float or wrapping int64). */
static double scan_ref(uint32_t op, uint32_t dt, const void *buf,
		       const struct vnpu_tensor *t, int64_t *idx, uint32_t dim,
		       int64_t upto)
{
	double d = op == VNPU_SCAN_PROD;
	float f = (float)d;
	uint64_t i = (uint64_t)d;

	for (int64_t k = 0; k <= upto; k++) {
		idx[dim] = k;
		if (dt == VNPU_DTYPE_F32 || dt == VNPU_DTYPE_F64) {
			double x = get_val(buf, dt, elem_off(t, idx));

			d = op == VNPU_SCAN_SUM ? d + x : d * x;
		} else if (is_float(dt)) {
			float x = (float)get_val(buf, dt, elem_off(t, idx));

			f = op == VNPU_SCAN_SUM ? f + x : f * x;
		} else {
			uint64_t x = (uint64_t)get_int(buf, dt, elem_off(t, idx));

			i = op == VNPU_SCAN_SUM ? i + x : i * x;
		}
	}
	idx[dim] = upto;
	if (dt == VNPU_DTYPE_F64)
		return d;
	if (dt == VNPU_DTYPE_F32)
		return ew_round_f32(d);
	if (is_float(dt))
		return dt == VNPU_DTYPE_F16 ? ew_round_f16(f) : ew_round_bf16(f);
	return (double)ew_wrap_int((int64_t)i, dt);
}

/* Every prefix of every line against its own fold, any layout of input
 * and output, any dim and block count, in place too; BOOL refused. */
START_TEST(test_scan)
{
	kt_seed(107);
	for (int iter = 0; iter < 240; iter++) {
		uint32_t dt = all_dtypes[iter % N_ALL_DTYPES];
		uint32_t op = (uint32_t)(iter / N_ALL_DTYPES) % VNPU_SCAN_COUNT;
		bool in_place = iter % 5 == 4;
		int64_t sizes[MAXD], idx[MAXD];
		uint32_t ndim = rand_shape(sizes, 4, 1);
		struct operand in, out;
		struct vnpu_kbuf b[2];
		void *before;
		struct vnpu_kp_scan p;
		uint64_t n;

		if (!ndim) {
			ndim = 1;
			sizes[0] = 17;
		}
		n = numel_of(ndim, sizes);
		in = make_operand(0, dt, ndim, sizes, rand_layout(0));
		out = in_place ? in : make_operand(1, dt, ndim, sizes, rand_layout(0));
		out.t.buffer = in_place ? 0 : 1;
		/* products stay finite and exact enough over 17 factors */
		b[0] = operand_buffer(&in, op == VNPU_SCAN_PROD ? -2 : -50,
				      op == VNPU_SCAN_PROD ? 2 : 50);
		b[1] = in_place ? kt_buffer(8) : operand_buffer(&out, -5, 5);
		memset(&p, 0, sizeof(p));
		p.op = op;
		p.dim = (uint32_t)kt_rand_range(0, ndim - 1);
		p.input = in.t;
		p.out = out.t;
		if (dt == VNPU_DTYPE_BOOL) {
			before = dup_bytes(&b[1]);
			ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, b, 2, 1),
					  VNPU_STATUS_UNSUPPORTED);
			ck_assert(!memcmp(before, b[1].ptr, b[1].size));
		} else {
			void *src = dup_bytes(&b[0]);

			before = dup_bytes(&b[in_place ? 0 : 1]);
			ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, b, 2,
						    block_counts[iter % 3]),
					  VNPU_STATUS_OK);
			for (uint64_t e = 0; e < n; e++) {
				double got, want;

				unravel(e, ndim, sizes, idx);
				want = scan_ref(op, dt, src, &in.t, idx, p.dim,
						idx[p.dim]);
				got = get_val(b[out.t.buffer].ptr, dt,
					      elem_off(&out.t, idx));
				ck_assert_msg(same_double(got, want),
					      "scan op %u dt %u dim %u [%llu]: %a vs %a",
					      op, dt, p.dim, (unsigned long long)e,
					      got, want);
			}
			check_untouched(&out.t, before, b[out.t.buffer].ptr,
					b[out.t.buffer].size);
			free(src);
		}
		free(before);
		kt_free(&b[0]);
		kt_free(&b[1]);
	}
}
END_TEST

/* The stable sort of one line, written here independently: positions
 * ordered by key (NaN after every number, the reverse when descending),
 * equal keys by position. */
struct sort_ref_ctx {
	const double *keys;
	bool descending;
};

static int sort_ref_order(const struct sort_ref_ctx *c, int64_t a, int64_t b)
{
	double x = c->keys[a], y = c->keys[b];
	int r;

	if (isnan(x) || isnan(y))
		r = isnan(x) - isnan(y);
	else
		r = (x > y) - (x < y);
	if (c->descending)
		r = -r;
	return r ? r : (a > b) - (a < b);
}

static void sort_ref(const double *keys, int64_t n, bool descending, int64_t *order)
{
	struct sort_ref_ctx c = { keys, descending };

	/* insertion sort: quadratic, obviously right */
	for (int64_t i = 0; i < n; i++) {
		int64_t j = i;

		order[i] = i;
		while (j > 0 && sort_ref_order(&c, order[j - 1], i) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

/* SORT against sort_ref on every dtype and layout, lines full of equal
 * values (and NaN, -0.0 in floats), values in place of the input or not,
 * ascending and descending, split across blocks. */
START_TEST(test_sort)
{
	kt_seed(131);
	for (int iter = 0; iter < 240; iter++) {
		uint32_t dt = all_dtypes[iter % N_ALL_DTYPES];
		bool in_place = iter % 5 == 4, floating = is_float(dt);
		int64_t sizes[MAXD], idx[MAXD];
		uint32_t ndim = rand_shape(sizes, 4, 1);
		struct operand in, values, indices;
		struct vnpu_kbuf b[3];
		struct vnpu_kp_sort p;
		void *src, *before[2];
		uint64_t n;

		if (!ndim) {
			ndim = 1;
			sizes[0] = 17;
		}
		n = numel_of(ndim, sizes);
		in = make_operand(0, dt, ndim, sizes, rand_layout(in_place ? 0 : LAY_ZERO));
		values = in_place ? in : make_operand(1, dt, ndim, sizes, rand_layout(0));
		values.t.buffer = in_place ? 0 : 1;
		indices = make_operand(2, VNPU_DTYPE_I64, ndim, sizes, rand_layout(0));
		b[0] = operand_buffer(&in, -4, 4);
		/* ties everywhere: whole numbers in [-4, 4], NaN and -0.0 */
		for (uint64_t i = 0; i < in.nelem; i++) {
			double v = dt == VNPU_DTYPE_BOOL ? kt_rand() % 2 :
				   (double)kt_rand_range(-4, 4);

			if (dt == VNPU_DTYPE_U8)
				v = kt_rand_range(0, 8);
			if (floating && kt_rand() % 8 == 0)
				v = kt_rand() % 2 ? NAN : -0.0;
			put_val(b[0].ptr, dt, i, v);
		}
		b[1] = in_place ? kt_buffer(8) : operand_buffer(&values, -5, 5);
		b[2] = operand_buffer(&indices, -5, 5);
		memset(&p, 0, sizeof(p));
		p.dim = (uint32_t)kt_rand_range(0, ndim - 1);
		p.descending = (uint32_t)(iter / N_ALL_DTYPES) % 2;
		p.input = in.t;
		p.values = values.t;
		p.indices = indices.t;
		src = dup_bytes(&b[0]);
		before[0] = dup_bytes(&b[values.t.buffer]);
		before[1] = dup_bytes(&b[2]);
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SORT, &p, b, 3, block_counts[iter % 3]),
				  VNPU_STATUS_OK);
		for (uint64_t e = 0; e < n; e++) {
			int64_t len = sizes[p.dim], order[32];
			double keys[32];

			unravel(e, ndim, sizes, idx);
			if (idx[p.dim])
				continue;	/* one check per line */
			ck_assert_int_le(len, 32);
			for (int64_t k = 0; k < len; k++) {
				idx[p.dim] = k;
				keys[k] = get_val(src, dt, elem_off(&in.t, idx));
			}
			sort_ref(keys, len, p.descending, order);
			for (int64_t k = 0; k < len; k++) {
				double got;
				int64_t at;

				idx[p.dim] = k;
				got = get_val(b[values.t.buffer].ptr, dt, elem_off(&values.t, idx));
				at = (int64_t)get_val(b[2].ptr, VNPU_DTYPE_I64, elem_off(&indices.t, idx));
				ck_assert_msg(at == order[k] && same_double(got, keys[order[k]]),
					      "sort dt %u dim %u desc %u line %llu [%lld]: %lld %a vs %lld %a",
					      dt, p.dim, p.descending, (unsigned long long)e,
					      (long long)k, (long long)at, got, (long long)order[k],
					      keys[order[k]]);
				/* -0.0 and 0.0 are equal keys; the value moved is the one there */
				if (floating && got == 0)
					ck_assert(signbit(got) == signbit(keys[order[k]]));
			}
		}
		check_untouched(&values.t, before[0], b[values.t.buffer].ptr, b[values.t.buffer].size);
		check_untouched(&indices.t, before[1], b[2].ptr, b[2].size);
		free(src);
		free(before[0]);
		free(before[1]);
		for (int k = 0; k < 3; k++)
			kt_free(&b[k]);
	}
}
END_TEST

/* The validator: dtypes, shapes, the flag, reserved, dim. */
START_TEST(test_sort_validate)
{
	int64_t sizes[2] = {3, 4};
	struct vnpu_kbuf b[3] = { kt_buffer(64), kt_buffer(64), kt_buffer(128) };
	struct vnpu_kp_sort p, bad;

	memset(&p, 0, sizeof(p));
	p.dim = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 2, sizes, NULL);
	p.values = kt_tensor(1, VNPU_DTYPE_F32, 2, sizes, NULL);
	p.indices = kt_tensor(2, VNPU_DTYPE_I64, 2, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SORT, &p, b, 3, 1), VNPU_STATUS_OK);
	bad = p;
	bad.descending = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SORT, &bad, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	bad = p;
	bad.reserved = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SORT, &bad, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	bad = p;
	bad.dim = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SORT, &bad, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	bad = p;
	bad.indices.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SORT, &bad, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	bad = p;
	bad.values.dtype = VNPU_DTYPE_F16;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SORT, &bad, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	bad = p;
	bad.indices.sizes[0] = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SORT, &bad, b, 3, 1), VNPU_STATUS_INVALID_ARGS);
	/* an indices tensor past its buffer */
	bad = p;
	bad.indices.offset = 8;
	ck_assert_uint_ne(kt_launch(VNPU_KERNEL_SORT, &bad, b, 3, 1), VNPU_STATUS_OK);
	for (int k = 0; k < 3; k++)
		kt_free(&b[k]);
}
END_TEST

/* PyTorch's accumulation types at their edges, and the validator. */
START_TEST(test_scan_edges)
{
	int64_t sizes[1] = {4};
	struct vnpu_kbuf b = kt_buffer(64);
	struct vnpu_kp_scan p;
	const float f32[4] = {1e8f, 1.0f, -1e8f, 0.0f};

	memset(&p, 0, sizeof(p));
	p.op = VNPU_SCAN_SUM;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 1, sizes, NULL);
	p.out = p.input;
	/* f32 sums in double: the 1 lost in 1e8 + 1 comes back */
	memcpy(b.ptr, f32, sizeof(f32));
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, &b, 1, 1), VNPU_STATUS_OK);
	ck_assert(get_val(b.ptr, VNPU_DTYPE_F32, 2) == 1.0);
	/* i8 wraps at each store, the int64 sum does not */
	p.input = kt_tensor(0, VNPU_DTYPE_I8, 1, sizes, NULL);
	p.out = p.input;
	memcpy(b.ptr, (const int8_t[4]){100, 100, -100, 0}, 4);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, &b, 1, 2), VNPU_STATUS_OK);
	ck_assert(get_int(b.ptr, VNPU_DTYPE_I8, 1) == -56);
	ck_assert(get_int(b.ptr, VNPU_DTYPE_I8, 2) == 100);
	/* errors: op, reserved, dim, dtype or shape mismatch */
	p.op = VNPU_SCAN_COUNT;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, &b, 1, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.op = VNPU_SCAN_PROD;
	p.reserved = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, &b, 1, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.reserved = 0;
	p.dim = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, &b, 1, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.dim = 0;
	p.out.dtype = VNPU_DTYPE_U8;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, &b, 1, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.out = p.input;
	p.out.sizes[0] = 3;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, &b, 1, 1),
			  VNPU_STATUS_INVALID_ARGS);
	p.input.ndim = 0;
	p.input.sizes[0] = 0;
	p.input.strides[0] = 0;
	p.out = p.input;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_SCAN, &p, &b, 1, 1),
			  VNPU_STATUS_INVALID_ARGS);
	kt_free(&b);
}
END_TEST

START_TEST(test_fill_wide_values)
{
	int64_t sizes[1] = {5};
	struct vnpu_kbuf b = kt_buffer(64);
	struct vnpu_kp_fill p;

	memset(&p, 0, sizeof(p));
	p.out = kt_tensor(0, VNPU_DTYPE_I64, 1, sizes, NULL);
	p.ivalue = INT64_MIN + 3;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &p, &b, 1, 2),
			  VNPU_STATUS_OK);
	for (int i = 0; i < 5; i++)
		ck_assert(get_int(b.ptr, VNPU_DTYPE_I64, (uint64_t)i) ==
			  INT64_MIN + 3);
	p.out = kt_tensor(0, VNPU_DTYPE_F16, 1, sizes, NULL);
	p.value = 1e6; /* beyond f16: infinity */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &p, &b, 1, 1),
			  VNPU_STATUS_OK);
	ck_assert(isinf(get_val(b.ptr, VNPU_DTYPE_F16, 4)));
	p.out = kt_tensor(0, VNPU_DTYPE_I32, 1, sizes, NULL);
	p.ivalue = 0x100000005ll; /* wraps to 5 */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &p, &b, 1, 1),
			  VNPU_STATUS_OK);
	ck_assert(get_int(b.ptr, VNPU_DTYPE_I32, 2) == 5);
	/* F64 stores the double itself: beyond f32's range and precision,
	 * subnormal, -0.0 and NaN */
	{
		const double vals[] = {1e300, 1.0 + 0x1p-52, 0x1p-1070, -0.0,
				       NAN, -INFINITY};

		p.out = kt_tensor(0, VNPU_DTYPE_F64, 1, sizes, NULL);
		for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++) {
			p.value = vals[k];
			ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &p, &b,
						    1, 2),
					  VNPU_STATUS_OK);
			for (int i = 0; i < 5; i++)
				ck_assert_msg(memcmp((char *)b.ptr + i * 8,
						     &vals[k], 8) == 0,
					      "fill f64 %a", vals[k]);
		}
	}
	kt_free(&b);
}
END_TEST

/* ---------------------------------------------------------------- CAST */

/* Reference conversion of a source value to the output dtype. Integer to
 * integer wraps, float to integer truncates and saturates, NaN -> 0. */
static double cast_ref(double v, uint32_t src, uint32_t dst)
{
	double lo, hi;
	int64_t i;

	if (dst == VNPU_DTYPE_BOOL)
		return v != 0;
	if (dst == VNPU_DTYPE_F16 && fabs(v) >= 65520.0)
		return copysign(INFINITY, v); /* rounds past the largest half */
	if (is_float(dst))
		return v;
	if (is_float(src)) {
		if (isnan(v))
			return 0;
		v = trunc(v);
		switch (dst) {
		case VNPU_DTYPE_I8:
			lo = -128;
			hi = 127;
			break;
		case VNPU_DTYPE_U8:
			lo = 0;
			hi = 255;
			break;
		case VNPU_DTYPE_I16:
			lo = -32768;
			hi = 32767;
			break;
		case VNPU_DTYPE_I32:
			lo = -2147483648.0;
			hi = 2147483647.0;
			break;
		default:
			lo = -9223372036854775808.0;
			hi = 9223372036854775807.0;
			break;
		}
		return v < lo ? lo : v > hi ? hi : v;
	}
	i = (int64_t)v;
	switch (dst) {
	case VNPU_DTYPE_I8:
		return (int8_t)(uint8_t)((uint64_t)i & 0xff);
	case VNPU_DTYPE_U8:
		return (uint8_t)((uint64_t)i & 0xff);
	case VNPU_DTYPE_I16:
		return (int16_t)(uint16_t)((uint64_t)i & 0xffff);
	case VNPU_DTYPE_I32:
		return (int32_t)(uint32_t)((uint64_t)i & 0xffffffffu);
	default:
		return (double)i;
	}
}

/* The conversions with F64 on either side, exactly: from F64 rounded once
 * to nearest even (ew_round_*), into F64 as the value itself (I64 rounded
 * to nearest even, as get_val reads it), to integers as cast_ref. */
static double cast_ref_f64(double v, uint32_t src, uint32_t dst)
{
	switch (dst) {
	case VNPU_DTYPE_F64:
		return v;
	case VNPU_DTYPE_F32:
		return ew_round_f32(v);
	case VNPU_DTYPE_F16:
		return ew_round_f16(v);
	case VNPU_DTYPE_BF16:
		return ew_round_bf16(v);
	default: /* + 0.0: an integer has no -0 */
		return cast_ref(v, src, dst) + 0.0;
	}
}

static double cast_rtol(uint32_t src, uint32_t dst)
{
	if (dst == VNPU_DTYPE_F16)
		return 0x1p-11 * 1.0000001;
	if (dst == VNPU_DTYPE_BF16)
		return 0x1p-8 * 1.0000001;
	if (dst == VNPU_DTYPE_F32 && src == VNPU_DTYPE_I64)
		return 0x1p-24;
	return 0;
}

START_TEST(test_cast)
{
	kt_seed(202);
	for (uint32_t si = 0; si < N_ALL_DTYPES; si++) {
		for (uint32_t di = 0; di < N_ALL_DTYPES; di++) {
			for (int iter = 0; iter < 8; iter++) {
				uint32_t src = all_dtypes[si];
				uint32_t dst = all_dtypes[di];
				int64_t sizes[MAXD];
				uint32_t ndim = rand_shape(sizes, 4, 1);
				struct operand os =
					make_operand(0, src, ndim, sizes,
						     rand_layout(LAY_ZERO));
				struct operand oo = make_operand(
					1, dst, ndim, sizes, rand_layout(0));
				struct vnpu_kbuf b[2];
				struct vnpu_kp_cast p;
				uint64_t n = numel_of(ndim, sizes);
				int64_t idx[MAXD];
				void *before;

				/* range beyond i8/u8 to exercise saturation */
				b[0] = operand_buffer(&os, -300, 300);
				b[1] = operand_buffer(&oo, -1, 1);
				if (src == VNPU_DTYPE_F32 && n > 0) {
					put_val(b[0].ptr, src, os.nelem - 1,
						NAN);
					put_val(b[0].ptr, src, 0, 3e10);
					put_val(b[0].ptr, src, os.t.offset,
						-1e20);
				}
				if (src == VNPU_DTYPE_F64 && n > 0) {
					/* beyond f32 and every integer,
					 * below f32's subnormals */
					put_val(b[0].ptr, src, os.nelem - 1,
						NAN);
					put_val(b[0].ptr, src, 0, 1e300);
					put_val(b[0].ptr, src, os.t.offset,
						-3e19);
					if (os.nelem > 2)
						put_val(b[0].ptr, src, 1,
							-1e-310);
				}
				before = dup_bytes(&b[1]);
				memset(&p, 0, sizeof(p));
				p.src = os.t;
				p.out = oo.t;
				ck_assert_uint_eq(
					kt_launch(VNPU_KERNEL_CAST, &p, b, 2,
						  block_counts[iter % 3]),
					VNPU_STATUS_OK);
				for (uint64_t i = 0; i < n; i++) {
					unravel(i, ndim, sizes, idx);
					double v =
						get_val(b[0].ptr, src,
							elem_off(&os.t, idx));
					double want = cast_ref(v, src, dst);
					double got;

					if (src == VNPU_DTYPE_I64 &&
					    !is_float(dst))
						want = cast_ref(
							(double)get_int(
								b[0].ptr, src,
								elem_off(&os.t,
									 idx)),
							src, dst);
					got = get_val(b[1].ptr, dst,
						      elem_off(&oo.t, idx));
					if (dst == VNPU_DTYPE_I64)
						got = (double)get_int(
							b[1].ptr, dst,
							elem_off(&oo.t, idx));
					if (src == VNPU_DTYPE_F64 ||
					    dst == VNPU_DTYPE_F64) {
						want = cast_ref_f64(v, src,
								    dst);
						ck_assert_msg(
							same_double(got, want),
							"cast %u->%u: %a vs %a "
							"(src %a)",
							src, dst, got, want, v);
						continue;
					}
					ck_assert_msg(
						close_to(got, want,
							 cast_rtol(src, dst),
							 dst == VNPU_DTYPE_F16
								 ? 0x1p-25
								 : 0),
						"cast %u->%u: %.17g vs %.17g "
						"(src %.17g)",
						src, dst, got, want, v);
				}
				check_untouched(&oo.t, before, b[1].ptr,
						b[1].size);
				free(before);
				kt_free(&b[0]);
				kt_free(&b[1]);
			}
		}
	}
}
END_TEST

START_TEST(test_cast_exact_cases)
{
	int64_t sizes[1] = {6};
	struct vnpu_kbuf b[2] = {kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_cast p;
	const double f16_in[6] = {65504.0, 1.0 / 3.0, -0.0, 2049.0, 1e-7, -1.5};
	/* round to nearest even: 2049 is a tie between 2048 and 2050 */
	const double f16_out[6] = {65504.0, 0.333251953125,	    -0.0,
				   2048.0,  1.1920928955078125e-07, -1.5};

	memset(&p, 0, sizeof(p));
	p.src = kt_tensor(0, VNPU_DTYPE_F32, 1, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F16, 1, sizes, NULL);
	for (int i = 0; i < 6; i++)
		put_val(b[0].ptr, VNPU_DTYPE_F32, (uint64_t)i, f16_in[i]);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	for (int i = 0; i < 6; i++)
		ck_assert_double_eq(
			get_val(b[1].ptr, VNPU_DTYPE_F16, (uint64_t)i),
			f16_out[i]);
	ck_assert(signbit(get_val(b[1].ptr, VNPU_DTYPE_F16, 2)));

	/* float -> I32 saturates; NaN -> 0; -2.7 -> -2 */
	const double i32_in[6] = {3e9, -3e9, NAN, -2.7, 2.7, INFINITY};
	const int64_t i32_out[6] = {INT32_MAX, INT32_MIN, 0, -2, 2, INT32_MAX};

	p.out = kt_tensor(1, VNPU_DTYPE_I32, 1, sizes, NULL);
	for (int i = 0; i < 6; i++)
		put_val(b[0].ptr, VNPU_DTYPE_F32, (uint64_t)i, i32_in[i]);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 3),
			  VNPU_STATUS_OK);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(get_int(b[1].ptr, VNPU_DTYPE_I32, (uint64_t)i),
				 i32_out[i]);

	/* F32 -> I64 saturates at both ends */
	p.out = kt_tensor(1, VNPU_DTYPE_I64, 1, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(get_int(b[1].ptr, VNPU_DTYPE_I64, 5) == INT64_MAX);
	put_val(b[0].ptr, VNPU_DTYPE_F32, 0, -1e30);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(get_int(b[1].ptr, VNPU_DTYPE_I64, 0) == INT64_MIN);

	/* NaN to BOOL is true, -0.0 false */
	p.out = kt_tensor(1, VNPU_DTYPE_BOOL, 1, sizes, NULL);
	put_val(b[0].ptr, VNPU_DTYPE_F32, 2, NAN);
	put_val(b[0].ptr, VNPU_DTYPE_F32, 3, -0.0);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert_int_eq(((unsigned char *)b[1].ptr)[2], 1);
	ck_assert_int_eq(((unsigned char *)b[1].ptr)[3], 0);
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

/* F64 -> F16/BF16/F32 rounds once, from the double: values just off a
 * halfway point that rounding to f32 first would put exactly on it (and
 * the tie then to even, the wrong way), in the normal and subnormal ranges
 * and at the overflow threshold, and the other specials. The wanted bits
 * are written out, independent of both the kernel and ew_round_to. */
START_TEST(test_cast_f64_rounding)
{
	static const struct {
		double v;
		uint16_t f16, bf16;
	} cases[] = {
		/* 1 + 2^-11 is f16's halfway between 1 and 1 + 2^-10 */
		{1.0 + 0x1p-11 + 0x1p-40, 0x3c01, 0x3f80},
		{-(1.0 + 0x1p-11 + 0x1p-40), 0xbc01, 0xbf80},
		{1.0 + 0x1p-11, 0x3c00, 0x3f80}, /* a tie: to even */
		{1.0 + 3 * 0x1p-11 - 0x1p-40, 0x3c01, 0x3f80},
		{1.0 + 3 * 0x1p-11, 0x3c02, 0x3f80},
		/* 1 + 2^-8 is bf16's halfway between 1 and 1 + 2^-7 */
		{1.0 + 0x1p-8 + 0x1p-40, 0x3c04, 0x3f81},
		{1.0 + 3 * 0x1p-8 - 0x1p-40, 0x3c0c, 0x3f81},
		{1.0 + 0x1p-8, 0x3c04, 0x3f80},
		/* f16 subnormals: 2^-25 is half the least one */
		{0x1p-25 + 0x1p-60, 0x0001, 0x3300},
		{0x1p-25, 0x0000, 0x3300},
		{3 * 0x1p-25 - 0x1p-60, 0x0001, 0x33c0},
		/* f16 overflow: 65520 is halfway past the largest, 65504 */
		{65520.0 - 0x1p-30, 0x7bff, 0x4780},
		{65520.0, 0x7c00, 0x4780},
		/* bf16 near its largest, 0x1.fep127: 0x1.ffp127 is halfway
		 * to infinity */
		{0x1.ffp127 - 0x1p90, 0x7c00, 0x7f7f},
		{0x1.ffp127, 0x7c00, 0x7f80},
		/* bf16 subnormals: 2^-134 is half the least one */
		{0x1p-134 + 0x1p-160, 0x0000, 0x0001},
		{0x1p-134, 0x0000, 0x0000},
		{1e300, 0x7c00, 0x7f80},
		{-1e300, 0xfc00, 0xff80},
		{-1e-300, 0x8000, 0x8000},
		{-0.0, 0x8000, 0x8000},
		{INFINITY, 0x7c00, 0x7f80},
	};
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	int64_t sizes[1] = {(int64_t)n + 1};
	struct vnpu_kbuf b[2] = {kt_buffer((n + 1) * 8),
				 kt_buffer((n + 1) * 8)};
	struct vnpu_kp_cast p;
	uint16_t h;
	float f;

	memset(&p, 0, sizeof(p));
	p.src = kt_tensor(0, VNPU_DTYPE_F64, 1, sizes, NULL);
	for (size_t i = 0; i < n; i++)
		put_val(b[0].ptr, VNPU_DTYPE_F64, i, cases[i].v);
	put_val(b[0].ptr, VNPU_DTYPE_F64, n, NAN);

	p.out = kt_tensor(1, VNPU_DTYPE_F16, 1, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 2),
			  VNPU_STATUS_OK);
	for (size_t i = 0; i < n; i++) {
		memcpy(&h, (char *)b[1].ptr + i * 2, 2);
		ck_assert_msg(h == cases[i].f16, "f16 of %a: %#x, want %#x",
			      cases[i].v, h, cases[i].f16);
		ck_assert(same_double(ew_half_decode(h),
				      ew_round_f16(cases[i].v)));
	}
	memcpy(&h, (char *)b[1].ptr + n * 2, 2);
	ck_assert((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0);

	p.out = kt_tensor(1, VNPU_DTYPE_BF16, 1, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 3),
			  VNPU_STATUS_OK);
	for (size_t i = 0; i < n; i++) {
		memcpy(&h, (char *)b[1].ptr + i * 2, 2);
		ck_assert_msg(h == cases[i].bf16, "bf16 of %a: %#x, want %#x",
			      cases[i].v, h, cases[i].bf16);
		ck_assert(same_double(get_val(b[1].ptr, VNPU_DTYPE_BF16, i),
				      ew_round_bf16(cases[i].v)));
	}
	memcpy(&h, (char *)b[1].ptr + n * 2, 2);
	ck_assert((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0);

	/* to F32 the C conversion is the single rounding */
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 1, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	for (size_t i = 0; i < n; i++) {
		memcpy(&f, (char *)b[1].ptr + i * 4, 4);
		ck_assert(same_double(f, (float)cases[i].v));
		ck_assert(same_double(f, ew_round_f32(cases[i].v)));
	}
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

/* F64 <-> integers and bool: truncation and saturation from the double
 * value, integers beyond f32's precision exact, I64 rounded to nearest. */
START_TEST(test_cast_f64_int)
{
	const double in[6] = {16777217.0, -2.999999999, 1e19, -1e19, NAN,
			      -0.0};
	const int64_t i64_out[6] = {16777217, -2, INT64_MAX, INT64_MIN, 0, 0};
	const int64_t i32_out[6] = {16777217, -2, INT32_MAX, INT32_MIN, 0, 0};
	const int64_t i16_out[6] = {32767, -2, 32767, -32768, 0, 0};
	const int64_t u8_out[6] = {255, 0, 255, 0, 0, 0};
	const int64_t bool_out[6] = {1, 1, 1, 1, 1, 0};
	const struct {
		uint32_t dt;
		const int64_t *want;
	} outs[] = {
		{VNPU_DTYPE_I64, i64_out}, {VNPU_DTYPE_I32, i32_out},
		{VNPU_DTYPE_I16, i16_out}, {VNPU_DTYPE_U8, u8_out},
		{VNPU_DTYPE_BOOL, bool_out},
	};
	int64_t sizes[1] = {6};
	struct vnpu_kbuf b[2] = {kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_cast p;
	const int64_t wide[3] = {INT64_MAX, (INT64_C(1) << 53) + 1,
				 -(INT64_C(1) << 60) - 384};

	memset(&p, 0, sizeof(p));
	p.src = kt_tensor(0, VNPU_DTYPE_F64, 1, sizes, NULL);
	memcpy(b[0].ptr, in, sizeof(in));
	for (size_t o = 0; o < sizeof(outs) / sizeof(outs[0]); o++) {
		p.out = kt_tensor(1, outs[o].dt, 1, sizes, NULL);
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 2),
				  VNPU_STATUS_OK);
		for (int i = 0; i < 6; i++)
			ck_assert_msg(get_int(b[1].ptr, outs[o].dt,
					      (uint64_t)i) == outs[o].want[i],
				      "f64 %g -> dt %u", in[i], outs[o].dt);
	}
	/* I64 -> F64: one rounding to nearest even */
	sizes[0] = 3;
	p.src = kt_tensor(0, VNPU_DTYPE_I64, 1, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F64, 1, sizes, NULL);
	memcpy(b[0].ptr, wide, sizeof(wide));
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(same_double(get_val(b[1].ptr, VNPU_DTYPE_F64, 0), 0x1p63));
	ck_assert(same_double(get_val(b[1].ptr, VNPU_DTYPE_F64, 1), 0x1p53));
	ck_assert(same_double(get_val(b[1].ptr, VNPU_DTYPE_F64, 2),
			      -0x1p60 - 512)); /* a tie: to even */
	/* I32 -> F64 is exact where F32 is not */
	p.src = kt_tensor(0, VNPU_DTYPE_I32, 1, sizes, NULL);
	((int32_t *)b[0].ptr)[0] = 16777217;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(same_double(get_val(b[1].ptr, VNPU_DTYPE_F64, 0),
			      16777217.0));
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

/* An exact integer result as the dtype stores it (I64: the results of
 * these tests are exact and inside it; its edges are test_*_int64_edges). */
static double wrap_int(double v, uint32_t dt)
{
	return dt == VNPU_DTYPE_I64 ? v : (double)ew_wrap_int((int64_t)v, dt);
}

/* --------------------------------------------------------------- UNARY */

static double unary_ref(uint32_t op, double x)
{
	switch (op) {
	case VNPU_UNARY_ABS:
		return fabs(x);
	case VNPU_UNARY_NEG:
		return -x;
	case VNPU_UNARY_EXP:
		return exp(x);
	case VNPU_UNARY_LOG:
		return log(x);
	case VNPU_UNARY_SQRT:
		return sqrt(x);
	case VNPU_UNARY_RSQRT:
		return 1.0 / sqrt(x);
	case VNPU_UNARY_RELU:
		return x < 0 ? 0 : x;
	case VNPU_UNARY_GELU:
		return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case VNPU_UNARY_SILU:
		return x / (1.0 + exp(-x));
	case VNPU_UNARY_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	case VNPU_UNARY_BITWISE_NOT: /* integers only; BOOL in its own test */
		return (double)~(int64_t)x;
	case VNPU_UNARY_FLOOR:
		return floor(x);
	case VNPU_UNARY_CEIL:
		return ceil(x);
	case VNPU_UNARY_TRUNC:
		return trunc(x);
	case VNPU_UNARY_ROUND: /* half to even, by hand */
		if (isnan(x) || isinf(x) || fabs(x) >= 0x1p52)
			return x;
		if (fabs(x - floor(x) - 0.5) == 0)
			return copysign(fmod(floor(x), 2) == 0 ? floor(x)
							      : floor(x) + 1,
					x);
		return copysign(floor(x + 0.5), x);
	case VNPU_UNARY_SIGN: /* NaN and -0.0 give +0.0, as torch.sign */
		return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
	case VNPU_UNARY_RECIPROCAL:
		return 1.0 / x;
	case VNPU_UNARY_SIN:
		return sin(x);
	case VNPU_UNARY_COS:
		return cos(x);
	case VNPU_UNARY_TAN:
		return tan(x);
	case VNPU_UNARY_ASIN:
		return asin(x);
	case VNPU_UNARY_ACOS:
		return acos(x);
	case VNPU_UNARY_ATAN:
		return atan(x);
	case VNPU_UNARY_SINH:
		return sinh(x);
	case VNPU_UNARY_COSH:
		return cosh(x);
	case VNPU_UNARY_ASINH:
		return asinh(x);
	case VNPU_UNARY_ACOSH:
		return acosh(x);
	case VNPU_UNARY_ATANH:
		return atanh(x);
	case VNPU_UNARY_LOG2:
		return log(x) / log(2.0);
	case VNPU_UNARY_LOG10:
		return log(x) / log(10.0);
	case VNPU_UNARY_LOG1P:
		return log1p(x);
	case VNPU_UNARY_EXPM1:
		return expm1(x);
	case VNPU_UNARY_EXP2:
		return pow(2.0, x);
	case VNPU_UNARY_ERF:
		return erf(x);
	case VNPU_UNARY_ERFC:
		return erfc(x);
	case VNPU_UNARY_HARDSIGMOID: /* NaN stays NaN through both clamps */
		return isnan(x) ? x : fmin(fmax(x + 3, 0), 6) / 6;
	case VNPU_UNARY_HARDSWISH:
		return isnan(x) ? x : x * fmin(fmax(x + 3, 0), 6) / 6;
	default:
		return tanh(x);
	}
}

/* The exact UNARY ops: results compared bit for bit. */
static int unary_exact(uint32_t op)
{
	return op == VNPU_UNARY_FLOOR || op == VNPU_UNARY_CEIL ||
	       op == VNPU_UNARY_TRUNC || op == VNPU_UNARY_ROUND ||
	       op == VNPU_UNARY_SIGN || op == VNPU_UNARY_RECIPROCAL;
}

/* |got - want| <= units * 2^-53 * |want|: an F64 result against a long
 * double reference (NaN and infinities exactly). */
static int f64_close(double got, long double want, long double units)
{
	if (isnan(want))
		return isnan(got);
	if (isinf(want))
		return got == want;
	return fabsl((long double)got - want) <= units * 0x1p-53L * fabsl(want);
}

/* The F64 result of UNARY op on x: the ops C's double arithmetic does
 * exactly (ABS, NEG, RELU, SQRT correctly rounded, RSQRT as 1 / sqrt,
 * HARDSIGMOID and HARDSWISH as their formulas)
 * bit for bit; the others within 8 ulp of a long double reference, GELU
 * with 2 x^2 ulp more: it takes erfc of the rounded x / sqrt(2), and erfc
 * turns a relative argument error into about x^2 times that. */
static void check_unary_f64(uint32_t op, double x, double got)
{
	long double lx = x, want;
	long double units = 16;

	if (unary_exact(op)) {
		ck_assert_msg(same_double(got, unary_ref(op, x)),
			      "unary op %u f64: f(%a) = %a, want %a", op, x,
			      got, unary_ref(op, x));
		return;
	}
	switch (op) {
	case VNPU_UNARY_ABS:
	case VNPU_UNARY_NEG:
	case VNPU_UNARY_RELU:
	case VNPU_UNARY_SQRT:
	case VNPU_UNARY_RSQRT:
	case VNPU_UNARY_HARDSIGMOID:
	case VNPU_UNARY_HARDSWISH:
		ck_assert_msg(same_double(got, unary_ref(op, x)),
			      "unary op %u f64: f(%a) = %a, want %a", op, x,
			      got, unary_ref(op, x));
		return;
	case VNPU_UNARY_SIN:
		want = sinl(lx);
		break;
	case VNPU_UNARY_COS:
		want = cosl(lx);
		break;
	case VNPU_UNARY_TAN:
		want = tanl(lx);
		break;
	case VNPU_UNARY_ASIN:
		want = asinl(lx);
		break;
	case VNPU_UNARY_ACOS:
		want = acosl(lx);
		break;
	case VNPU_UNARY_ATAN:
		want = atanl(lx);
		break;
	case VNPU_UNARY_SINH:
		want = sinhl(lx);
		break;
	case VNPU_UNARY_COSH:
		want = coshl(lx);
		break;
	case VNPU_UNARY_ASINH:
		want = asinhl(lx);
		break;
	case VNPU_UNARY_ACOSH:
		want = acoshl(lx);
		break;
	case VNPU_UNARY_ATANH:
		want = atanhl(lx);
		break;
	case VNPU_UNARY_LOG2:
		want = log2l(lx);
		break;
	case VNPU_UNARY_LOG10:
		want = log10l(lx);
		break;
	case VNPU_UNARY_LOG1P:
		want = log1pl(lx);
		break;
	case VNPU_UNARY_EXPM1:
		want = expm1l(lx);
		break;
	case VNPU_UNARY_EXP2:
		want = exp2l(lx);
		break;
	case VNPU_UNARY_ERF:
		want = erfl(lx);
		break;
	case VNPU_UNARY_ERFC:
		want = erfcl(lx);
		break;
	case VNPU_UNARY_EXP:
		want = expl(lx);
		break;
	case VNPU_UNARY_LOG:
		want = logl(lx);
		break;
	case VNPU_UNARY_GELU:
		want = 0.5L * lx * erfcl(-lx / sqrtl(2.0L));
		units += 4 * lx * lx;
		break;
	case VNPU_UNARY_SILU:
		want = lx / (1.0L + expl(-lx));
		break;
	case VNPU_UNARY_SIGMOID:
		want = 1.0L / (1.0L + expl(-lx));
		break;
	default:
		want = tanhl(lx);
		break;
	}
	ck_assert_msg(f64_close(got, want, units),
		      "unary op %u f64: f(%a) = %a, want %La", op, x, got,
		      want);
}

static void run_unary_case(uint32_t op, uint32_t dt, int in_place,
			   uint32_t nblocks)
{
	int64_t sizes[MAXD];
	uint32_t ndim = rand_shape(sizes, 5, 1);
	struct operand os = make_operand(0, dt, ndim, sizes, rand_layout(0));
	struct operand oo =
		in_place ? os
			 : make_operand(1, dt, ndim, sizes, rand_layout(0));
	struct vnpu_kbuf b[2];
	struct vnpu_kp_unary p;
	uint64_t n = numel_of(ndim, sizes);
	int64_t idx[MAXD];
	double *src_vals = malloc((n ? n : 1) * sizeof(double));
	double lo = -6, hi = 6;
	void *before;

	if (op == VNPU_UNARY_LOG || op == VNPU_UNARY_SQRT ||
	    op == VNPU_UNARY_RSQRT || op == VNPU_UNARY_LOG2 ||
	    op == VNPU_UNARY_LOG10 || op == VNPU_UNARY_LOG1P)
		lo = -0.5; /* mostly positive; negatives give NaN */
	if (op == VNPU_UNARY_ASIN || op == VNPU_UNARY_ACOS ||
	    op == VNPU_UNARY_ATANH) {
		lo = -1.2; /* mostly inside [-1, 1] */
		hi = 1.2;
	}
	if (op == VNPU_UNARY_ACOSH)
		lo = 0.5;
	b[0] = operand_buffer(&os, lo, hi);
	b[1] = in_place ? b[0] : operand_buffer(&oo, -1, 1);
	ck_assert_ptr_nonnull(src_vals);
	for (uint64_t i = 0; i < n; i++) {
		unravel(i, ndim, sizes, idx);
		src_vals[i] = get_val(b[0].ptr, dt, elem_off(&os.t, idx));
	}
	if (dt == VNPU_DTYPE_I32 && n > 0) { /* INT_MIN wraps */
		unravel(0, ndim, sizes, idx);
		put_val(b[0].ptr, dt, elem_off(&os.t, idx), INT32_MIN);
		src_vals[0] = INT32_MIN;
	}
	before = dup_bytes(&b[1]);
	memset(&p, 0, sizeof(p));
	p.op = op;
	p.src = os.t;
	p.out = oo.t;
	ck_assert_uint_eq(
		kt_launch(VNPU_KERNEL_UNARY, &p, b, in_place ? 1 : 2, nblocks),
		VNPU_STATUS_OK);
	for (uint64_t i = 0; i < n; i++) {
		double want = unary_ref(op, src_vals[i]);
		double got;

		unravel(i, ndim, sizes, idx);
		got = get_val(b[1].ptr, dt, elem_off(&oo.t, idx));
		if (dt == VNPU_DTYPE_F64) {
			check_unary_f64(op, src_vals[i], got);
			continue;
		}
		if (!is_float(dt))
			want = wrap_int(want, dt);
		if (unary_exact(op)) {
			/* exact in f32 (1 / x rounded once), then to dt */
			want = dt == VNPU_DTYPE_F16    ? ew_round_f16(want)
			       : dt == VNPU_DTYPE_BF16 ? ew_round_bf16(want)
			       : dt == VNPU_DTYPE_F32  ? ew_round_f32(want)
						       : want;
			ck_assert_msg(same_double(got, want),
				      "unary op %u dt %u: f(%a) = %a, want %a",
				      op, dt, src_vals[i], got, want);
			continue;
		}
		ck_assert_msg(close_to(got, want, rtol_of(dt) * 2,
				       is_float(dt) ? 1e-6 : 0),
			      "unary op %u dt %u: f(%.9g) = %.9g, want %.9g",
			      op, dt, src_vals[i], got, want);
	}
	if (!in_place)
		check_untouched(&oo.t, before, b[1].ptr, b[1].size);
	free(before);
	free(src_vals);
	kt_free(&b[0]);
	if (!in_place)
		kt_free(&b[1]);
}

START_TEST(test_unary_float)
{
	static const uint32_t dts[] = {VNPU_DTYPE_F32, VNPU_DTYPE_F16,
				       VNPU_DTYPE_BF16, VNPU_DTYPE_F64};

	kt_seed(303);
	for (uint32_t op = 0; op < VNPU_UNARY_COUNT; op++)
		for (uint32_t k = 0; op != VNPU_UNARY_BITWISE_NOT && k < 4; k++)
			for (int iter = 0; iter < 9; iter++)
				run_unary_case(op, dts[k], iter % 4 == 3,
					       block_counts[iter % 3]);
}
END_TEST

/* F64 specials through every float op: NaN, infinities, signed zeros,
 * and values whose results f32 could not hold (beyond its range, or
 * differing from 1 below its precision). */
START_TEST(test_unary_f64_special)
{
	static const double x[] = {
		NAN,	INFINITY, -INFINITY, -0.0,	    0.0,    700.0,
		-700.0, 1e-300,	  1.0 + 0x1p-52, -1e-20, -30.0,
	};
	const size_t n = sizeof(x) / sizeof(x[0]);
	int64_t sizes[1] = {(int64_t)n};
	struct vnpu_kbuf b[2] = {kt_buffer(n * 8), kt_buffer(n * 8)};
	struct vnpu_kp_unary p;
	double y[sizeof(x) / sizeof(x[0])];

	memset(&p, 0, sizeof(p));
	p.src = kt_tensor(0, VNPU_DTYPE_F64, 1, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F64, 1, sizes, NULL);
	memcpy(b[0].ptr, x, sizeof(x));
	for (uint32_t op = 0; op < VNPU_UNARY_COUNT; op++) {
		if (op == VNPU_UNARY_BITWISE_NOT)
			continue;
		p.op = op;
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 2),
				  VNPU_STATUS_OK);
		memcpy(y, b[1].ptr, sizeof(y));
		for (size_t i = 0; i < n; i++)
			check_unary_f64(op, x[i], y[i]);
	}
	/* the signs and specials spelled out */
	p.op = VNPU_UNARY_NEG;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(signbit(get_val(b[1].ptr, VNPU_DTYPE_F64, 4)));
	p.op = VNPU_UNARY_SQRT;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(signbit(get_val(b[1].ptr, VNPU_DTYPE_F64, 3)));
	ck_assert(isnan(get_val(b[1].ptr, VNPU_DTYPE_F64, 2)));
	p.op = VNPU_UNARY_RELU; /* NaN passes, -0.0 is not below 0 */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(isnan(get_val(b[1].ptr, VNPU_DTYPE_F64, 0)));
	ck_assert(signbit(get_val(b[1].ptr, VNPU_DTYPE_F64, 3)));
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 6) == 0.0);
	p.op = VNPU_UNARY_EXP; /* e^700 ~ 1e304, e^-700 ~ 1e-304 */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 5) > 1e304);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 6) > 0.0);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 2) == 0.0);
	p.op = VNPU_UNARY_LOG; /* log(1e-300) ~ -690.8, log(1 + 2^-52) */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(close_to(get_val(b[1].ptr, VNPU_DTYPE_F64, 7),
			   -300 * log(10.0), 1e-15, 0));
	ck_assert(close_to(get_val(b[1].ptr, VNPU_DTYPE_F64, 8), 0x1p-52,
			   1e-15, 0));
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 3) == -INFINITY);
	p.op = VNPU_UNARY_RSQRT;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 3) == -INFINITY);
	ck_assert(close_to(get_val(b[1].ptr, VNPU_DTYPE_F64, 7), 1e150,
			   1e-15, 0));
	p.op = VNPU_UNARY_SIGMOID;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 1) == 1.0);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 2) == 0.0);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 6) > 0.0); /* e^-700 */
	p.op = VNPU_UNARY_GELU; /* far left: about -2.3e-196, 0 in f32 */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 10) < -1e-197);
	ck_assert(get_val(b[1].ptr, VNPU_DTYPE_F64, 10) > -1e-195);
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

START_TEST(test_unary_int)
{
	static const uint32_t ops[] = {
		VNPU_UNARY_ABS,	  VNPU_UNARY_NEG,  VNPU_UNARY_RELU,
		VNPU_UNARY_BITWISE_NOT, VNPU_UNARY_FLOOR, VNPU_UNARY_CEIL,
		VNPU_UNARY_TRUNC, VNPU_UNARY_ROUND, VNPU_UNARY_SIGN};
	static const uint32_t dts[] = {VNPU_DTYPE_I32, VNPU_DTYPE_I8,
				       VNPU_DTYPE_U8, VNPU_DTYPE_I64,
				       VNPU_DTYPE_I16};

	kt_seed(304);
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
		for (int d = 0; d < 5; d++)
			for (int iter = 0; iter < 12; iter++)
				run_unary_case(ops[o], dts[d], iter % 4 == 3,
					       block_counts[iter % 3]);
}
END_TEST

START_TEST(test_unary_special_values)
{
	int64_t sizes[1] = {4};
	struct vnpu_kbuf b = kt_buffer(64);
	struct vnpu_kp_unary p;

	memset(&p, 0, sizeof(p));
	p.src = kt_tensor(0, VNPU_DTYPE_F32, 1, sizes, NULL);
	p.out = p.src;
	put_val(b.ptr, VNPU_DTYPE_F32, 0, NAN);
	put_val(b.ptr, VNPU_DTYPE_F32, 1, -200.0);
	put_val(b.ptr, VNPU_DTYPE_F32, 2, 200.0);
	put_val(b.ptr, VNPU_DTYPE_F32, 3, -10.0);
	p.op = VNPU_UNARY_SIGMOID;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, &b, 1, 1),
			  VNPU_STATUS_OK);
	ck_assert(isnan(get_val(b.ptr, VNPU_DTYPE_F32, 0)));
	ck_assert_double_eq(get_val(b.ptr, VNPU_DTYPE_F32, 1), 0.0);
	ck_assert_double_eq(get_val(b.ptr, VNPU_DTYPE_F32, 2), 1.0);
	ck_assert(close_to(get_val(b.ptr, VNPU_DTYPE_F32, 3),
			   1.0 / (1.0 + exp(10.0)), 1e-5, 0));
	/* gelu far left: tiny negative, not zero from cancellation */
	put_val(b.ptr, VNPU_DTYPE_F32, 3, -5.0);
	p.op = VNPU_UNARY_GELU;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, &b, 1, 1),
			  VNPU_STATUS_OK);
	ck_assert(close_to(get_val(b.ptr, VNPU_DTYPE_F32, 3),
			   -2.5 * erfc(5.0 / sqrt(2.0)), 1e-4, 0));
	/* relu keeps NaN */
	p.op = VNPU_UNARY_RELU;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, &b, 1, 1),
			  VNPU_STATUS_OK);
	ck_assert(isnan(get_val(b.ptr, VNPU_DTYPE_F32, 0)));
	kt_free(&b);
}
END_TEST

/* -------------------------------------------------------------- BINARY */

static int is_cmp(uint32_t op)
{
	return op >= VNPU_BINARY_EQ && op <= VNPU_BINARY_GE;
}

/* Which dtypes each BINARY op takes (kernel_abi.h), written out here. */
static int binary_takes(uint32_t op, uint32_t dt)
{
	switch (op) {
	case VNPU_BINARY_GELU_BACKWARD:
	case VNPU_BINARY_HARDSIGMOID_BACKWARD:
	case VNPU_BINARY_HARDSWISH_BACKWARD:
	case VNPU_BINARY_ATAN2:
	case VNPU_BINARY_COPYSIGN:
	case VNPU_BINARY_LOGADDEXP:
	case VNPU_BINARY_XLOGY:
	case VNPU_BINARY_HYPOT:
	case VNPU_BINARY_NEXTAFTER:
		return is_float(dt);
	case VNPU_BINARY_BITWISE_AND:
	case VNPU_BINARY_BITWISE_OR:
	case VNPU_BINARY_BITWISE_XOR:
		return !is_float(dt);
	case VNPU_BINARY_BITWISE_LEFT_SHIFT:
	case VNPU_BINARY_BITWISE_RIGHT_SHIFT:
	case VNPU_BINARY_GCD:
		return !is_float(dt) && dt != VNPU_DTYPE_BOOL;
	case VNPU_BINARY_POW:
	case VNPU_BINARY_FMOD:
	case VNPU_BINARY_REMAINDER:
	case VNPU_BINARY_FLOOR_DIVIDE:
		return dt != VNPU_DTYPE_BOOL;
	default:
		return 1;
	}
}

/* The new integer ops (POW .. GCD) compare as exact int64. */
static int int_op_new(uint32_t op)
{
	return op >= VNPU_BINARY_POW;
}

/* v rounded as the kernel's dtype keeps an f32 result: once to f32, then
 * to f16 or bf16 (PyTorch's Half and BFloat16 arithmetic does the same
 * f32 operation and conversion); F64 as it is. */
static double round_dt(uint32_t dt, double v)
{
	switch (dt) {
	case VNPU_DTYPE_F32:
		return ew_round_f32(v);
	case VNPU_DTYPE_F16:
		return ew_round_f16(ew_round_f32(v));
	case VNPU_DTYPE_BF16:
		return ew_round_bf16(ew_round_f32(v));
	default:
		return v;
	}
}

/* floor(a / b) by PyTorch's div_floor_floating (c10), every step
 * rounded as dt's arithmetic rounds it (f32 for F32, F16 and BF16 each
 * step, double for F64). */
static double floor_divide_ref(uint32_t dt, double a, double b)
{
	double q = round_dt(dt, a / b), mod, div, fd;

	if (b == 0)
		return q;
	mod = fmod(a, b); /* exact */
	div = round_dt(dt, round_dt(dt, a - mod) / b);
	if (mod != 0 && (b < 0) != (mod < 0))
		div = round_dt(dt, div - 1);
	if (div == 0)
		return copysign(0.0, q);
	fd = floor(div);
	if (round_dt(dt, div - fd) > 0.5)
		fd = round_dt(dt, fd + 1);
	return fd;
}

/* The value after a toward b in dt's format (p significant bits, least
 * normal exponent emin, largest finite max), by frexp arithmetic. */
static double nextafter_ref(uint32_t dt, double a, double b)
{
	int p = dt == VNPU_DTYPE_F64	? 53
		: dt == VNPU_DTYPE_F32	? 24
		: dt == VNPU_DTYPE_F16	? 11
					: 8;
	int emin = dt == VNPU_DTYPE_F64	  ? -1022
		   : dt == VNPU_DTYPE_F16 ? -14
					  : -126;
	double max = dt == VNPU_DTYPE_F64   ? 0x1.fffffffffffffp1023
		     : dt == VNPU_DTYPE_F32 ? 0x1.fffffep127
		     : dt == VNPU_DTYPE_F16 ? 65504.0
					    : 0x1.fep127;
	double m = fabs(a), ulp, r;
	int e, away;

	if (isnan(a) || isnan(b))
		return NAN;
	if (a == b)
		return b;
	if (a == 0)
		return copysign(ldexp(1.0, emin - (p - 1)), b);
	if (isinf(a))
		return copysign(max, a);
	away = (b > a) == (a > 0);
	frexp(m, &e);
	e = e - 1 < emin ? emin : e - 1;
	ulp = ldexp(1.0, e - (p - 1));
	if (!away && m == ldexp(1.0, e) && e > emin)
		ulp /= 2; /* below a power of two the spacing halves */
	r = away ? m + ulp : m - ulp;
	return copysign(r > max ? INFINITY : r, a);
}

/* The integer ops added with POW, exactly, in int64 (the caller wraps to
 * dt): written apart from the kernel's algorithms (magnitudes, powers by
 * repeated multiplication, shifts as products and floor quotients). */
static int64_t binary_int_ref(uint32_t op, uint32_t dt, int64_t a, int64_t b)
{
	int64_t w = 8 * (int64_t)esize(dt);
	uint64_t ua = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
	uint64_t ub = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
	uint64_t r;
	int64_t q;

	switch (op) {
	case VNPU_BINARY_POW:
		if (b < 0)
			return a == 1 ? 1 : a == -1 ? (ub % 2 ? -1 : 1) : 0;
		r = 1;
		for (int64_t i = 0; i < b; i++)
			r *= (uint64_t)a;
		return (int64_t)r;
	case VNPU_BINARY_FMOD: /* sign of a, |a| mod |b| */
		if (b == 0)
			return 0;
		return a < 0 ? -(int64_t)(ua % ub) : (int64_t)(ua % ub);
	case VNPU_BINARY_REMAINDER:
		if (b == 0)
			return 0;
		q = a < 0 ? -(int64_t)(ua % ub) : (int64_t)(ua % ub);
		return q != 0 && (q < 0) != (b < 0) ? q + b : q;
	case VNPU_BINARY_FLOOR_DIVIDE:
		if (b == 0)
			return 0;
		return (int64_t)floorl((long double)a / (long double)b);
	case VNPU_BINARY_BITWISE_LEFT_SHIFT:
		if (b < 0 || b >= w)
			return 0;
		r = (uint64_t)a;
		for (int64_t i = 0; i < b; i++)
			r *= 2;
		return (int64_t)r;
	case VNPU_BINARY_BITWISE_RIGHT_SHIFT:
		if (b < 0 || b >= w)
			return a < 0 ? -1 : 0;
		return (int64_t)floorl((long double)a / ldexpl(1.0L, (int)b));
	default: /* GCD of the magnitudes */
		q = w == 64 ? INT64_MIN : -(INT64_C(1) << (w - 1));
		if (dt != VNPU_DTYPE_U8 && (a == q || b == q)) {
			/* |INT_MIN| wraps to INT_MIN: Euclid on the wrapped
			 * magnitudes, remainders signed as C's (PyTorch's
			 * calc_gcd; its results: test_binary_int_ops_edges) */
			q = ew_wrap_int((int64_t)ua, dt);
			a = ew_wrap_int((int64_t)ub, dt);
			while (q != 0) {
				int64_t c = q;

				q = c == -1 ? 0 : a % c;
				a = c;
			}
			return a;
		}
		while (ub != 0) {
			r = ua % ub;
			ua = ub;
			ub = r;
		}
		return (int64_t)ua;
	}
}

static double binary_ref(uint32_t op, double alpha, double a, double b,
			 int integer, uint32_t dt)
{
	double m;

	switch (op) {
	case VNPU_BINARY_POW:
		return pow(a, b);
	case VNPU_BINARY_ATAN2:
		return atan2(a, b);
	case VNPU_BINARY_COPYSIGN:
		return copysign(a, b);
	case VNPU_BINARY_FMOD:
		return fmod(a, b);
	case VNPU_BINARY_REMAINDER:
		m = fmod(a, b);
		return m != 0 && (m < 0) != (b < 0) ? m + b : m;
	case VNPU_BINARY_FLOOR_DIVIDE:
		return floor_divide_ref(dt, a, b);
	case VNPU_BINARY_LOGADDEXP:
		if (isinf(a) && a == b)
			return a;
		m = a > b ? a : b;
		return m + log(exp(a - m) + exp(b - m));
	case VNPU_BINARY_XLOGY:
		if (isnan(b))
			return NAN;
		if (a == 0)
			return 0;
		/* F16/BF16 take log(b) rounded to the dtype (c10's Half log) */
		return a * (dt == VNPU_DTYPE_F16 || dt == VNPU_DTYPE_BF16
				    ? round_dt(dt, log(b))
				    : log(b));
	case VNPU_BINARY_HYPOT:
		return sqrt(a * a + b * b);
	case VNPU_BINARY_NEXTAFTER:
		return nextafter_ref(dt, a, b);
	case VNPU_BINARY_HARDSIGMOID_BACKWARD: /* PyTorch's float 1/6 */
		return b > -3 && b < 3 ? a * (double)(1.0f / 6.0f) : 0;
	case VNPU_BINARY_HARDSWISH_BACKWARD:
		return b <= -3 ? 0 : b >= 3 ? a : a * (b / 3 + 0.5);
	default:
		break;
	}
	switch (op) {
	case VNPU_BINARY_ADD:
		return a + alpha * b;
	case VNPU_BINARY_SUB:
		return a - alpha * b;
	case VNPU_BINARY_MUL:
		return a * b;
	case VNPU_BINARY_DIV:
		if (integer)
			return b == 0 ? 0 : trunc(a / b);
		return a / b;
	case VNPU_BINARY_MAXIMUM:
		return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
	case VNPU_BINARY_MINIMUM:
		return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
	case VNPU_BINARY_EQ:
		return a == b;
	case VNPU_BINARY_NE:
		return a != b;
	case VNPU_BINARY_LT:
		return a < b;
	case VNPU_BINARY_LE:
		return a <= b;
	case VNPU_BINARY_GT:
		return a > b;
	case VNPU_BINARY_BITWISE_AND:
		return (double)((int64_t)a & (int64_t)b);
	case VNPU_BINARY_BITWISE_OR:
		return (double)((int64_t)a | (int64_t)b);
	case VNPU_BINARY_BITWISE_XOR:
		return (double)((int64_t)a ^ (int64_t)b);
	case VNPU_BINARY_GELU_BACKWARD:
		/* PyTorch's GeluBackward: grad * (cdf(x) + x * pdf(x)) */
		return a * (0.5 * erfc(-b * M_SQRT1_2) +
			    b * exp(-0.5 * b * b) * 0.5 * M_2_SQRTPI *
				    M_SQRT1_2);
	default:
		return a >= b;
	}
}

/* An F64 result of BINARY: GELU_BACKWARD against long double within 8 ulp
 * of its terms' magnitude, plus the erfc argument's x^2 (check_unary_f64);
 * every other op bit for bit C's double arithmetic (binary_ref). */
static void check_binary_f64(uint32_t op, double alpha, double a, double b,
			     double got)
{
	long double la = a, lb = b, cdf, pdf, want, mag;

	if (op == VNPU_BINARY_POW || op == VNPU_BINARY_ATAN2 ||
	    op == VNPU_BINARY_HYPOT || op == VNPU_BINARY_LOGADDEXP ||
	    op == VNPU_BINARY_XLOGY) {
		/* within 16 ulp of long double (of the terms' magnitude) */
		switch (op) {
		case VNPU_BINARY_POW:
			want = powl(la, lb);
			break;
		case VNPU_BINARY_ATAN2:
			want = atan2l(la, lb);
			break;
		case VNPU_BINARY_HYPOT:
			want = hypotl(la, lb);
			break;
		case VNPU_BINARY_XLOGY:
			want = isnan(b) ? NAN : a == 0 ? 0 : la * logl(lb);
			break;
		default:
			want = isinf(a) && a == b ? la
			       : a > b ? la + log1pl(expl(lb - la))
				       : lb + log1pl(expl(la - lb));
			break;
		}
		mag = op == VNPU_BINARY_LOGADDEXP ? fabsl(la) + fabsl(lb) + 1
						  : fabsl(want);
		if (isnan(want) || isinf(want)) {
			ck_assert_msg(same_double(got, (double)want),
				      "binary op %u f64: %a ? %a = %a, want %La",
				      op, a, b, got, want);
			return;
		}
		ck_assert_msg(fabsl((long double)got - want) <=
				      16 * 0x1p-53L * mag,
			      "binary op %u f64: %a ? %a = %a, want %La", op, a,
			      b, got, want);
		return;
	}
	if (op != VNPU_BINARY_GELU_BACKWARD) {
		double exact = binary_ref(op, alpha, a, b, 0, VNPU_DTYPE_F64);

		ck_assert_msg(same_double(got, exact),
			      "binary op %u f64: %a ? %a = %a, want %a", op, a,
			      b, got, exact);
		return;
	}
	cdf = 0.5L * erfcl(-lb / sqrtl(2.0L));
	pdf = expl(-0.5L * lb * lb) / sqrtl(2.0L * 3.14159265358979323846264L);
	want = (long double)a * (cdf + lb * pdf);
	if (isnan(want)) {
		ck_assert(isnan(got));
		return;
	}
	ck_assert_msg(fabsl((long double)got - want) <=
			      (16 + 4 * lb * lb) * 0x1p-53L * fabsl(a) *
				      (cdf + fabsl(lb * pdf)),
		      "gelu backward f64: %a, %a: %a, want %La", a, b, got,
		      want);
}

struct binary_case {
	uint32_t op, dt, nblocks;
	int in_place; /* out aliases a */
	int broadcast;
};

static void run_binary_case(const struct binary_case *bc)
{
	uint32_t dt = bc->dt;
	uint32_t out_dt = is_cmp(bc->op) ? (uint32_t)VNPU_DTYPE_BOOL : dt;
	int integer = !is_float(dt);
	int64_t sizes[MAXD], sa[MAXD], sb[MAXD];
	uint32_t ndim = rand_shape(sizes, 5, 1);
	struct operand oa, ob, oo;
	struct vnpu_kbuf b[3];
	struct vnpu_kp_binary p;
	uint64_t n = numel_of(ndim, sizes);
	int64_t idx[MAXD];
	double *va, *vb;
	void *before;

	memcpy(sa, sizes, sizeof(sa));
	memcpy(sb, sizes, sizeof(sb));
	if (bc->broadcast) {
		if (!bc->in_place)
			broadcast_shape(ndim, sizes, sa);
		broadcast_shape(ndim, sizes, sb);
	}
	oa = make_operand(0, dt, ndim, sa,
			  bc->in_place
				  ? rand_layout(0)
				  : rand_layout(bc->broadcast ? LAY_ZERO : 0));
	ob = make_operand(1, dt, ndim, sb,
			  rand_layout(bc->broadcast ? LAY_ZERO : 0));
	oo = bc->in_place
		     ? oa
		     : make_operand(2, out_dt, ndim, sizes, rand_layout(0));
	b[0] = operand_buffer(&oa, -4, 4);
	b[1] = operand_buffer(&ob, -4, 4);
	b[2] = bc->in_place ? b[0] : operand_buffer(&oo, -1, 1);
	if (integer && (bc->op == VNPU_BINARY_POW ||
			bc->op == VNPU_BINARY_BITWISE_LEFT_SHIFT ||
			bc->op == VNPU_BINARY_BITWISE_RIGHT_SHIFT)) {
		/* exponents and counts around [0, width), some negative */
		int64_t lo = dt == VNPU_DTYPE_U8 ? 0 : -3;
		int64_t hi = 16 * (int64_t)esize(dt) + 2; /* 2 * width + 2 */

		for (uint64_t i = 0; i < ob.nelem; i++)
			put_val(b[1].ptr, dt, i,
				(double)kt_rand_range(lo, hi));
	}
	if (bc->op == VNPU_BINARY_GCD &&
	    (dt == VNPU_DTYPE_I8 || dt == VNPU_DTYPE_I16)) {
		/* INT_MIN's wrapped magnitude: test_binary_int_ops_edges */
		double min = dt == VNPU_DTYPE_I8 ? -128 : -32768;

		for (uint64_t i = 0; i < oa.nelem; i++)
			if (get_val(b[0].ptr, dt, i) == min)
				put_val(b[0].ptr, dt, i, min + 1);
		for (uint64_t i = 0; i < ob.nelem; i++)
			if (get_val(b[1].ptr, dt, i) == min)
				put_val(b[1].ptr, dt, i, min + 1);
	}
	memset(&p, 0, sizeof(p));
	p.op = bc->op;
	p.alpha = 1.0;
	if (bc->op <= VNPU_BINARY_SUB && kt_rand() % 2)
		p.alpha = integer		  ? (double)kt_rand_range(-3, 3)
			  : dt == VNPU_DTYPE_F64 ? rand_double(-2, 2)
						  : -0.75;
	p.a = oa.t;
	p.b = ob.t;
	p.out = oo.t;
	if (integer && n > 0) {
		/* some zero divisors, equal pairs and INT_MIN / -1 */
		unravel(0, ndim, sizes, idx);
		put_val(b[1].ptr, dt, elem_off(&ob.t, idx), 0);
		unravel(n - 1, ndim, sizes, idx);
		put_val(b[0].ptr, dt, elem_off(&oa.t, idx),
			dt == VNPU_DTYPE_I8     ? -128
			: dt == VNPU_DTYPE_I16  ? -32768
			: dt == VNPU_DTYPE_U8   ? 128
			: dt == VNPU_DTYPE_BOOL ? 1
						: INT32_MIN);
		put_val(b[1].ptr, dt, elem_off(&ob.t, idx),
			dt == VNPU_DTYPE_U8 ? 255 : -1);
	}
	if (!integer && n > 2 && !bc->in_place) {
		unravel(n / 2, ndim, sizes, idx);
		put_val(b[0].ptr, dt, elem_off(&oa.t, idx), NAN);
	}
	va = malloc((n ? n : 1) * sizeof(double));
	vb = malloc((n ? n : 1) * sizeof(double));
	ck_assert(va && vb);
	for (uint64_t i = 0; i < n; i++) {
		unravel(i, ndim, sizes, idx);
		va[i] = get_val(b[0].ptr, dt, elem_off(&oa.t, idx));
		vb[i] = get_val(b[1].ptr, dt, elem_off(&ob.t, idx));
		if (kt_rand() % 8 == 0 && !bc->in_place && !bc->broadcast) {
			/* equal operands for the comparisons */
			put_val(b[1].ptr, dt, elem_off(&ob.t, idx), va[i]);
			vb[i] = va[i];
		}
	}
	before = dup_bytes(&b[2]);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b,
				    bc->in_place ? 2 : 3, bc->nblocks),
			  VNPU_STATUS_OK);
	for (uint64_t i = 0; i < n; i++) {
		double want = binary_ref(bc->op, p.alpha, va[i], vb[i],
					 integer, dt);
		double got, scale;

		unravel(i, ndim, sizes, idx);
		got = get_val(b[2].ptr, out_dt, elem_off(&oo.t, idx));
		if (dt == VNPU_DTYPE_F64) {
			check_binary_f64(bc->op, p.alpha, va[i], vb[i], got);
			continue;
		}
		if (integer && int_op_new(bc->op)) {
			int64_t wi = ew_wrap_int(
				binary_int_ref(bc->op, dt, (int64_t)va[i],
					       (int64_t)vb[i]),
				dt);
			int64_t gi =
				get_int(b[2].ptr, dt, elem_off(&oo.t, idx));

			ck_assert_msg(gi == wi,
				      "binary op %u dt %u: %.0f ? %.0f = %lld, "
				      "want %lld",
				      bc->op, dt, va[i], vb[i], (long long)gi,
				      (long long)wi);
			continue;
		}
		if (bc->op == VNPU_BINARY_COPYSIGN ||
		    bc->op == VNPU_BINARY_FMOD ||
		    bc->op == VNPU_BINARY_FLOOR_DIVIDE ||
		    bc->op == VNPU_BINARY_NEXTAFTER) {
			/* exact results (floor_divide_ref rounds as dt) */
			want = round_dt(dt, want);
			ck_assert_msg(same_double(got, want),
				      "binary op %u dt %u: %a ? %a = %a, want %a",
				      bc->op, dt, va[i], vb[i], got, want);
			continue;
		}
		if (bc->op >= VNPU_BINARY_POW) {
			/* relative, but for the cancellations of m + b,
			 * max + log1p and b / 3 + 0.5 */
			scale = bc->op == VNPU_BINARY_REMAINDER ? fabs(vb[i])
				: bc->op == VNPU_BINARY_LOGADDEXP
					? fabs(va[i]) + fabs(vb[i])
				: bc->op == VNPU_BINARY_HARDSWISH_BACKWARD
					? fabs(va[i]) * (fabs(vb[i]) / 3 + 0.5)
					: 0;
			if (isnan(scale))
				scale = 0;
			want = round_dt(dt, want); /* overflow to inf */
			ck_assert_msg(close_to(got, want, rtol_of(dt),
					       rtol_of(dt) * scale),
				      "binary op %u dt %u: %a ? %a = %a, want %a",
				      bc->op, dt, va[i], vb[i], got, want);
			continue;
		}
		if (integer && !is_cmp(bc->op))
			want = wrap_int(want, dt);
		/* f32 rounding of alpha * b before the add */
		scale = fabs(va[i]) + fabs(p.alpha * vb[i]);
		if (isnan(scale) || is_cmp(bc->op))
			scale = 0;
		ck_assert_msg(close_to(got, want, rtol_of(out_dt),
				       rtol_of(dt) * scale),
			      "binary op %u dt %u: %.9g ? %.9g = %.9g, want "
			      "%.9g",
			      bc->op, dt, va[i], vb[i], got, want);
	}
	if (!bc->in_place)
		check_untouched(&oo.t, before, b[2].ptr, b[2].size);
	free(before);
	free(va);
	free(vb);
	kt_free(&b[0]);
	kt_free(&b[1]);
	if (!bc->in_place)
		kt_free(&b[2]);
}

START_TEST(test_binary)
{
	static const uint32_t dts[] = {
		VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16, VNPU_DTYPE_I32,
		VNPU_DTYPE_I8,	VNPU_DTYPE_U8,	VNPU_DTYPE_I64,	 VNPU_DTYPE_BOOL,
		VNPU_DTYPE_I16, VNPU_DTYPE_F64};

	kt_seed(404);
	for (uint32_t op = 0; op < VNPU_BINARY_COUNT; op++)
		for (uint32_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
			for (int iter = 0; iter < 10; iter++) {
				/* the unsupported pairs: test_binary_errors */
				if (!binary_takes(op, dts[d]))
					continue;
				struct binary_case bc = {
					.op = op,
					.dt = dts[d],
					.nblocks = block_counts[iter % 3],
					.in_place = iter % 5 == 4 &&
						    op < VNPU_BINARY_EQ,
					.broadcast = iter % 2,
				};

				run_binary_case(&bc);
			}
}
END_TEST

/* The dense f32 path (one loop over whole block ranges) and its fallback
 * for a buffer that is not 4-byte aligned. */
START_TEST(test_binary_dense_f32)
{
	const int64_t n = 100003;
	int64_t sizes[2] = {1, n};
	struct vnpu_kbuf b[3], shifted[3];
	struct vnpu_kp_binary p;

	kt_seed(405);
	for (int i = 0; i < 3; i++) {
		b[i] = kt_buffer((uint64_t)n * 4 + 1);
		for (int64_t k = 0; k < n; k++)
			put_val(b[i].ptr, VNPU_DTYPE_F32, (uint64_t)k,
				kt_rand_float(-100, 100));
		shifted[i] = b[i];
		shifted[i].ptr = (char *)b[i].ptr + 1;
		shifted[i].size = (uint64_t)n * 4;
	}
	memset(&p, 0, sizeof(p));
	p.op = VNPU_BINARY_ADD;
	p.alpha = 1.0;
	p.a = kt_tensor(0, VNPU_DTYPE_F32, 2, sizes, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_F32, 2, sizes, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_F32, 2, sizes, NULL);
	for (uint32_t k = 0; k < 3; k++) {
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3,
					    block_counts[k]),
				  VNPU_STATUS_OK);
		for (int64_t i = 0; i < n; i++) {
			double want = (double)(float)(get_val(b[0].ptr,
							      VNPU_DTYPE_F32,
							      (uint64_t)i) +
						      get_val(b[1].ptr,
							      VNPU_DTYPE_F32,
							      (uint64_t)i));

			ck_assert_double_eq(
				get_val(b[2].ptr, VNPU_DTYPE_F32, (uint64_t)i),
				want);
		}
	}
	/* same data read at a one-byte shift */
	memset(b[2].ptr, 0, b[2].size);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, shifted, 3, 3),
			  VNPU_STATUS_OK);
	for (int64_t i = 0; i < n; i += 997) {
		float fa, fb, fo;

		memcpy(&fa, (char *)shifted[0].ptr + i * 4, 4);
		memcpy(&fb, (char *)shifted[1].ptr + i * 4, 4);
		memcpy(&fo, (char *)shifted[2].ptr + i * 4, 4);
		ck_assert(fo == fa + fb || (isnan(fo) && isnan(fa + fb)));
	}
	/* in place: a += a */
	p.b = p.a;
	p.out = p.a;
	memcpy(b[2].ptr, b[0].ptr, b[0].size);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 7),
			  VNPU_STATUS_OK);
	for (int64_t i = 0; i < n; i++)
		ck_assert_double_eq(
			get_val(b[0].ptr, VNPU_DTYPE_F32, (uint64_t)i),
			2 * get_val(b[2].ptr, VNPU_DTYPE_F32, (uint64_t)i));
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

/* Outputs of 32 MiB and more take the streaming-store path; an output
 * offset of one element makes its start unaligned to 16 bytes. */
START_TEST(test_binary_dense_f32_large)
{
	const int64_t n = (8 << 20) + 5;
	int64_t sizes[1] = {n};
	struct vnpu_kbuf b[3];
	struct vnpu_kp_binary p;
	float *fa, *fb, *fo;

	kt_seed(406);
	for (int i = 0; i < 3; i++) {
		b[i] = kt_buffer((uint64_t)(n + 1) * 4);
		ck_assert_ptr_nonnull(b[i].ptr);
	}
	fa = b[0].ptr;
	fb = b[1].ptr;
	fo = b[2].ptr;
	for (int64_t k = 0; k < n; k++) {
		fa[k] = kt_rand_float(-100, 100);
		fb[k] = kt_rand_float(-100, 100);
	}
	memset(&p, 0, sizeof(p));
	p.op = VNPU_BINARY_ADD;
	p.alpha = 1.0;
	p.a = kt_tensor(0, VNPU_DTYPE_F32, 1, sizes, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_F32, 1, sizes, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_F32, 1, sizes, NULL);
	p.out.offset = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 3),
			  VNPU_STATUS_OK);
	for (int64_t k = 0; k < n; k++)
		if (fo[k + 1] != fa[k] + fb[k])
			ck_abort_msg("sum %lld: %g, want %g", (long long)k,
				     fo[k + 1], fa[k] + fb[k]);
	ck_assert_uint_eq(((uint32_t *)b[2].ptr)[0], 0xa5a5a5a5u);
	/* in place, b += a */
	p.out = p.b;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 2),
			  VNPU_STATUS_OK);
	for (int64_t k = 0; k < n; k++)
		if (fb[k] != fo[k + 1])
			ck_abort_msg("in place %lld: %g, want %g", (long long)k,
				     fb[k], fo[k + 1]);
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

START_TEST(test_binary_int_edges)
{
	int64_t sizes[1] = {6};
	struct vnpu_kbuf b[3] = {kt_buffer(64), kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_binary p;
	const int32_t a[6] = {7, -7, 7, -7, INT32_MIN, 5};
	const int32_t d[6] = {2, 2, -2, -2, -1, 0};
	const int32_t q[6] = {3, -3, -3, 3, INT32_MIN, 0};

	memset(&p, 0, sizeof(p));
	p.op = VNPU_BINARY_DIV;
	p.a = kt_tensor(0, VNPU_DTYPE_I32, 1, sizes, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_I32, 1, sizes, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_I32, 1, sizes, NULL);
	memcpy(b[0].ptr, a, sizeof(a));
	memcpy(b[1].ptr, d, sizeof(d));
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 2),
			  VNPU_STATUS_OK);
	ck_assert_mem_eq(b[2].ptr, q, sizeof(q));
	/* INT32_MAX + 1 wraps */
	p.op = VNPU_BINARY_ADD;
	p.alpha = 1;
	((int32_t *)b[0].ptr)[0] = INT32_MAX;
	((int32_t *)b[1].ptr)[0] = 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 1),
			  VNPU_STATUS_OK);
	ck_assert_int_eq(((int32_t *)b[2].ptr)[0], INT32_MIN);
	kt_free(&b[0]);
	kt_free(&b[1]);
	kt_free(&b[2]);
}
END_TEST

/* I64 where int64_t itself would overflow (the C behaviour is undefined,
 * the device's is two's complement), U8 wrapping and BOOL as 0/1. */
START_TEST(test_binary_int64_edges)
{
	int64_t sizes[1] = {4};
	struct vnpu_kbuf b[3] = {kt_buffer(64), kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_binary p;
	struct vnpu_kp_unary pu;
	const int64_t two32p1 = (INT64_C(1) << 32) + 1;
	const struct {
		uint32_t op;
		int64_t a[4], b[4], want[4];
	} cases[] = {
		{VNPU_BINARY_DIV,
		 {INT64_MIN, INT64_MIN, 7, -9},
		 {-1, 1, 0, 2},
		 {INT64_MIN, INT64_MIN, 0, -4}},
		{VNPU_BINARY_MUL,
		 {INT64_MIN, two32p1, INT64_MAX, 3},
		 {-1, two32p1, 2, -5},
		 {INT64_MIN, (INT64_C(1) << 33) + 1, -2, -15}},
		{VNPU_BINARY_ADD,
		 {INT64_MAX, INT64_MIN, 1, 0},
		 {1, -1, -1, 0},
		 {INT64_MIN, INT64_MAX, 0, 0}},
		{VNPU_BINARY_LT,
		 {INT64_MIN, INT64_MAX, -1, 5},
		 {INT64_MAX, INT64_MIN, 0, 5},
		 {1, 0, 1, 0}},
	};

	memset(&p, 0, sizeof(p));
	p.alpha = 1;
	p.a = kt_tensor(0, VNPU_DTYPE_I64, 1, sizes, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_I64, 1, sizes, NULL);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		p.op = cases[c].op;
		p.out = kt_tensor(2, p.op == VNPU_BINARY_LT ? VNPU_DTYPE_BOOL
							  : VNPU_DTYPE_I64,
				  1, sizes, NULL);
		memcpy(b[0].ptr, cases[c].a, sizeof(cases[c].a));
		memcpy(b[1].ptr, cases[c].b, sizeof(cases[c].b));
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 2),
				  VNPU_STATUS_OK);
		for (int i = 0; i < 4; i++)
			ck_assert_msg(get_int(b[2].ptr, p.out.dtype,
					      (uint64_t)i) == cases[c].want[i],
				      "op %u element %d", p.op, i);
	}
	/* -INT64_MIN and |INT64_MIN| are INT64_MIN */
	memset(&pu, 0, sizeof(pu));
	pu.src = pu.out = kt_tensor(0, VNPU_DTYPE_I64, 1, sizes, NULL);
	for (uint32_t op = VNPU_UNARY_ABS; op <= VNPU_UNARY_NEG; op++) {
		((int64_t *)b[0].ptr)[0] = INT64_MIN;
		pu.op = op;
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 1, 1),
				  VNPU_STATUS_OK);
		ck_assert(((int64_t *)b[0].ptr)[0] == INT64_MIN);
	}
	/* U8: 3 - 5 wraps to 254; BOOL: true + true and true - true */
	p.a = kt_tensor(0, VNPU_DTYPE_U8, 1, sizes, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_U8, 1, sizes, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_U8, 1, sizes, NULL);
	p.op = VNPU_BINARY_SUB;
	memset(b[0].ptr, 3, 4);
	memset(b[1].ptr, 5, 4);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 1),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(((uint8_t *)b[2].ptr)[3], 254);
	p.a.dtype = p.b.dtype = p.out.dtype = VNPU_DTYPE_BOOL;
	memset(b[0].ptr, 1, 4);
	memset(b[1].ptr, 1, 4);
	p.op = VNPU_BINARY_ADD;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 1),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(((uint8_t *)b[2].ptr)[0], 1);
	p.op = VNPU_BINARY_SUB;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 1),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(((uint8_t *)b[2].ptr)[0], 0);
	/* ~true is false and ~false true, not ~1 = -2 stored as true */
	pu.op = VNPU_UNARY_BITWISE_NOT;
	pu.src = pu.out = kt_tensor(0, VNPU_DTYPE_BOOL, 1, sizes, NULL);
	((uint8_t *)b[0].ptr)[1] = 0;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 1, 1),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(((uint8_t *)b[0].ptr)[0], 0);
	ck_assert_uint_eq(((uint8_t *)b[0].ptr)[1], 1);
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

/* F64 specials, each result spelled out: signed zeros, NaN and infinities,
 * subnormals, and results f32 could not hold (beyond its range, or below
 * its precision). */
START_TEST(test_binary_f64_special)
{
	const double tiny = 0x1p-1074, eps = 0x1p-52;
	const struct {
		uint32_t op;
		double alpha;
		double a[4], b[4], want[4];
	} cases[] = {
		{VNPU_BINARY_ADD,
		 1,
		 {-0.0, 1e300, 1.0, INFINITY},
		 {-0.0, 1e300, eps, -INFINITY},
		 {-0.0, 2e300, 1.0 + eps, NAN}},
		{VNPU_BINARY_ADD, /* alpha in double, not rounded to f32 */
		 1e-10,
		 {0.0, tiny, 0.0, -1.0},
		 {3.0, tiny, -0.0, 1e10},
		 {1e-10 * 3.0, tiny, 0.0, -1.0 + 1e-10 * 1e10}},
		{VNPU_BINARY_SUB,
		 1,
		 {0.0, 1.0 + eps, tiny, 1e-308},
		 {0.0, 1.0, -tiny, 0.0},
		 {0.0, eps, 2 * tiny, 1e-308}},
		{VNPU_BINARY_MUL,
		 1,
		 {1e200, -0.0, INFINITY, 1.0 + eps},
		 {1e100, 5.0, 0.0, 1.0 + eps},
		 {1e200 * 1e100, -0.0, NAN, 1.0 + 2 * eps}},
		{VNPU_BINARY_DIV,
		 1,
		 {1.0, -1.0, 0.0, 1e-300},
		 {0.0, 0.0, 0.0, 1e300},
		 {INFINITY, -INFINITY, NAN, 0.0}},
		{VNPU_BINARY_MAXIMUM,
		 1,
		 {NAN, 1.0, 1e300, -INFINITY},
		 {1.0, NAN, 1e299, -1e300},
		 {NAN, NAN, 1e300, -1e300}},
		{VNPU_BINARY_MINIMUM,
		 1,
		 {NAN, 1.0, 1.0 + eps, -INFINITY},
		 {1.0, NAN, 1.0, -1e300},
		 {NAN, NAN, 1.0, -INFINITY}},
		{VNPU_BINARY_GT,
		 1,
		 {1.0 + eps, NAN, 0.0, 1e300},
		 {1.0, 1.0, -0.0, INFINITY},
		 {1, 0, 0, 0}},
		{VNPU_BINARY_EQ,
		 1,
		 {-0.0, NAN, 1.0 + eps, tiny},
		 {0.0, NAN, 1.0, tiny},
		 {1, 0, 0, 1}},
		{VNPU_BINARY_NE,
		 1,
		 {-0.0, NAN, 1.0 + eps, tiny},
		 {0.0, NAN, 1.0, 0.0},
		 {0, 1, 1, 1}},
		{VNPU_BINARY_LE,
		 1,
		 {NAN, -INFINITY, 1.0, 1.0 + eps},
		 {NAN, -1e300, 1.0, 1.0},
		 {0, 1, 1, 0}},
	};
	int64_t sizes[1] = {4};
	struct vnpu_kbuf b[3] = {kt_buffer(64), kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_binary p;

	memset(&p, 0, sizeof(p));
	p.a = kt_tensor(0, VNPU_DTYPE_F64, 1, sizes, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_F64, 1, sizes, NULL);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		p.op = cases[c].op;
		p.alpha = cases[c].alpha;
		p.out = kt_tensor(2, is_cmp(p.op) ? VNPU_DTYPE_BOOL
						  : VNPU_DTYPE_F64,
				  1, sizes, NULL);
		memcpy(b[0].ptr, cases[c].a, sizeof(cases[c].a));
		memcpy(b[1].ptr, cases[c].b, sizeof(cases[c].b));
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 2),
				  VNPU_STATUS_OK);
		for (int i = 0; i < 4; i++) {
			double got = get_val(b[2].ptr, p.out.dtype,
					     (uint64_t)i);

			ck_assert_msg(same_double(got, cases[c].want[i]),
				      "op %u element %d: %a, want %a", p.op, i,
				      got, cases[c].want[i]);
		}
	}
	kt_free(&b[0]);
	kt_free(&b[1]);
	kt_free(&b[2]);
}
END_TEST

/* --------------------------------------------------------------- WHERE */

START_TEST(test_where)
{
	kt_seed(505);
	for (int iter = 0; iter < 120; iter++) {
		uint32_t dt = all_dtypes[iter % N_ALL_DTYPES];
		int64_t sizes[MAXD], sc[MAXD], sa[MAXD], sb[MAXD];
		uint32_t ndim = rand_shape(sizes, 5, 1);
		int in_place = iter % 6 == 5;
		struct operand oc, oa, ob, oo;
		struct vnpu_kbuf b[4];
		struct vnpu_kp_where p;
		uint64_t n = numel_of(ndim, sizes);
		int64_t idx[MAXD];
		double *want = malloc((n ? n : 1) * sizeof(double));
		void *before;

		ck_assert_ptr_nonnull(want);
		broadcast_shape(ndim, sizes, sc);
		if (in_place)
			memcpy(sa, sizes, sizeof(sa));
		else
			broadcast_shape(ndim, sizes, sa);
		broadcast_shape(ndim, sizes, sb);
		oc = make_operand(0, VNPU_DTYPE_BOOL, ndim, sc,
				  rand_layout(LAY_ZERO));
		oa = make_operand(1, dt, ndim, sa,
				  rand_layout(in_place ? 0 : LAY_ZERO));
		ob = make_operand(2, dt, ndim, sb, rand_layout(LAY_ZERO));
		oo = in_place
			     ? oa
			     : make_operand(3, dt, ndim, sizes, rand_layout(0));
		b[0] = operand_buffer(&oc, 0, 1);
		b[1] = operand_buffer(&oa, -50, 50);
		b[2] = operand_buffer(&ob, -50, 50);
		b[3] = in_place ? b[1] : operand_buffer(&oo, 0, 1);
		if (in_place)
			oo.t.buffer = 1;
		for (uint64_t i = 0; i < n; i++) {
			unravel(i, ndim, sizes, idx);
			want[i] = get_val(b[0].ptr, VNPU_DTYPE_BOOL,
					  elem_off(&oc.t, idx))
					  ? get_val(b[1].ptr, dt,
						    elem_off(&oa.t, idx))
					  : get_val(b[2].ptr, dt,
						    elem_off(&ob.t, idx));
		}
		before = dup_bytes(&b[3]);
		memset(&p, 0, sizeof(p));
		p.cond = oc.t;
		p.a = oa.t;
		p.b = ob.t;
		p.out = oo.t;
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_WHERE, &p, b, 4,
					    block_counts[iter % 3]),
				  VNPU_STATUS_OK);
		for (uint64_t i = 0; i < n; i++) {
			unravel(i, ndim, sizes, idx);
			ck_assert_double_eq(
				get_val(b[3].ptr, dt, elem_off(&oo.t, idx)),
				want[i]);
		}
		if (!in_place)
			check_untouched(&oo.t, before, b[3].ptr, b[3].size);
		free(before);
		free(want);
		for (int k = 0; k < 3; k++)
			kt_free(&b[k]);
		if (!in_place)
			kt_free(&b[3]);
	}
}
END_TEST

/* ---------------------------------------------------------- validators */

struct bin_setup {
	struct vnpu_kbuf b[3];
	struct vnpu_kp_binary p;
};

static void bin_setup(struct bin_setup *s)
{
	int64_t sizes[2] = {3, 5};

	for (int i = 0; i < 3; i++)
		s->b[i] = kt_buffer(15 * 8); /* room for 8-byte dtypes */
	memset(&s->p, 0, sizeof(s->p));
	s->p.op = VNPU_BINARY_ADD;
	s->p.alpha = 1;
	s->p.a = kt_tensor(0, VNPU_DTYPE_F32, 2, sizes, NULL);
	s->p.b = kt_tensor(1, VNPU_DTYPE_F32, 2, sizes, NULL);
	s->p.out = kt_tensor(2, VNPU_DTYPE_F32, 2, sizes, NULL);
}

static uint32_t bin_launch(struct bin_setup *s)
{
	return kt_launch(VNPU_KERNEL_BINARY, &s->p, s->b, 3, 1);
}

static void bin_free(struct bin_setup *s)
{
	for (int i = 0; i < 3; i++)
		kt_free(&s->b[i]);
}

START_TEST(test_binary_errors)
{
	struct bin_setup s;
	int64_t big[2] = {3, 6};

	bin_setup(&s);
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);

	s.p.op = VNPU_BINARY_COUNT;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.op = VNPU_BINARY_ADD;
	s.p.reserved = 1;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.reserved = 0;

	s.p.b.buffer = 3; /* bad buffer index */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.b.buffer = 1;

	s.p.out.offset = 16; /* 15 + 16 elements > the 30 that fit */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.out.offset = -1;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.out.offset = 0;

	s.p.a.strides[0] = INT64_MAX / 2 + 1; /* (3-1)*stride overflows */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.a.strides[0] = -5;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.a.strides[0] = 5;
	s.p.a.sizes[3] = 1; /* entry past ndim */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.a.sizes[3] = 0;
	s.p.a.ndim = VNPU_MAX_DIMS + 1;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.a.ndim = 2;

	s.b[2].access = VNPU_ACCESS_READ; /* output not writable */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.b[2].access = VNPU_ACCESS_READ | VNPU_ACCESS_WRITE;
	s.b[0].access = VNPU_ACCESS_WRITE; /* input not readable */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.b[0].access = VNPU_ACCESS_READ;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);

	s.p.out.sizes[1] = 6; /* shape mismatch */
	s.p.out.strides[0] = 6;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.out = kt_tensor(2, VNPU_DTYPE_F32, 2, big, NULL);
	s.b[2].size = 18 * 4;
	s.b[2].ptr = realloc(s.b[2].ptr, s.b[2].size);
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.a.sizes[1] = 1; /* a broadcasts, b still does not */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.b.sizes[1] = 1;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.b.ndim = 1; /* rank differs */
	s.p.b.sizes[1] = 0;
	s.p.b.strides[1] = 0;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	bin_free(&s);

	bin_setup(&s);
	s.p.out.strides[0] = 0; /* overlapping output rows */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.out.strides[0] = 2; /* rows overlap partially */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.out.strides[0] = 5;

	s.p.b.dtype = VNPU_DTYPE_F16; /* a and b differ */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.b.dtype = VNPU_DTYPE_F32;
	s.p.op = VNPU_BINARY_GELU_BACKWARD; /* floats only */
	s.p.a.dtype = s.p.b.dtype = s.p.out.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_UNSUPPORTED);
	s.p.a.dtype = s.p.b.dtype = s.p.out.dtype = VNPU_DTYPE_F32;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.op = VNPU_BINARY_BITWISE_XOR; /* integers and bool only */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_UNSUPPORTED);
	s.p.op = VNPU_BINARY_LT; /* comparison needs a BOOL output */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.out.dtype = VNPU_DTYPE_BOOL;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.op = VNPU_BINARY_ADD; /* arithmetic does not write BOOL */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);

	s.p.a.dtype = s.p.b.dtype = s.p.out.dtype = VNPU_DTYPE_I64;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.a.dtype = s.p.b.dtype = s.p.out.dtype = VNPU_DTYPE_U8;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.a.dtype = s.p.b.dtype = s.p.out.dtype = 77;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_UNSUPPORTED);
	s.p.a.dtype = s.p.b.dtype = s.p.out.dtype = VNPU_DTYPE_I32;
	s.p.alpha = 0.5; /* integer alpha must be integral */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.alpha = NAN;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.alpha = 1e19;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.alpha = -2;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.op = VNPU_BINARY_MUL; /* alpha ignored */
	s.p.alpha = 0.5;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);

	s.p.a.dtype = s.p.b.dtype = s.p.out.dtype = VNPU_DTYPE_F32;
	s.p.a.format = 7; /* unknown format */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_UNSUPPORTED);
	s.p.a.format = VNPU_FORMAT_NC1HWC0; /* internal: not for this kernel */
	memset(s.p.a.strides, 0, sizeof(s.p.a.strides));
	s.p.a.ndim = 4;
	s.p.a.sizes[2] = s.p.a.sizes[3] = 1;
	s.b[0].size = 4096;
	s.b[0].ptr = realloc(s.b[0].ptr, s.b[0].size);
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_UNSUPPORTED);
	bin_free(&s);

	/* F64: the float ops, any alpha; no bitwise ops, no fractal */
	bin_setup(&s);
	s.p.a.dtype = s.p.b.dtype = s.p.out.dtype = VNPU_DTYPE_F64;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.alpha = 0.3;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.alpha = 1e300;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.op = VNPU_BINARY_GELU_BACKWARD;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	for (uint32_t op = VNPU_BINARY_BITWISE_AND;
	     op <= VNPU_BINARY_BITWISE_XOR; op++) {
		s.p.op = op;
		ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_UNSUPPORTED);
	}
	s.p.op = VNPU_BINARY_GE; /* comparisons write BOOL */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.out.dtype = VNPU_DTYPE_BOOL;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_OK);
	s.p.b.dtype = VNPU_DTYPE_F32; /* no mixing with f32 */
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_INVALID_ARGS);
	s.p.b.dtype = VNPU_DTYPE_F64;
	s.p.a.format = VNPU_FORMAT_NC1HWC0;
	memset(s.p.a.strides, 0, sizeof(s.p.a.strides));
	s.p.a.ndim = 4;
	s.p.a.sizes[2] = s.p.a.sizes[3] = 1;
	ck_assert_uint_eq(bin_launch(&s), VNPU_STATUS_UNSUPPORTED);
	bin_free(&s);
}
END_TEST

/* The integer ops added with POW, each result from PyTorch 2.13's CPU
 * (torch.<op>(a, b) on tensors of the dtype), for every integer dtype:
 * INT_MIN with -1, signs, negative exponents, shifts by negative, width
 * and larger counts, gcd with INT_MIN; a zero divisor gives 0 (the
 * documented device result: PyTorch raises ZeroDivisionError). */
START_TEST(test_binary_int_ops_edges)
{
	static const struct {
		uint32_t op, dt;
		int64_t a[8], b[8], want[8];
	} cases[] = {
	{VNPU_BINARY_FMOD,
	 VNPU_DTYPE_I8,
	 {5, -5, 5, -5, INT8_MIN, INT8_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {2, -2, 2, -2, 0, 0, 0, 0}},
	{VNPU_BINARY_REMAINDER,
	 VNPU_DTYPE_I8,
	 {5, -5, 5, -5, INT8_MIN, INT8_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {2, 1, -1, -2, 0, 0, 0, 0}},
	{VNPU_BINARY_FLOOR_DIVIDE,
	 VNPU_DTYPE_I8,
	 {5, -5, 5, -5, INT8_MIN, INT8_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {1, -2, -2, 1, INT8_MIN, 0, 0, -1}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_I8,
	 {1, -1, -1, 0, 0, 2, -2, INT8_MIN},
	 {-1, -3, INT8_MIN, 0, -1, -1, 3, 2},
	 {1, -1, 1, 1, 0, 0, -8, 0}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_I8,
	 {INT8_MIN, -1, 3, 127, -3, 1, -1, 5},
	 {1, -127, 11, 2, 3, INT8_MIN, -2, 0},
	 {INT8_MIN, -1, -5, 1, -27, 1, 1, 1}},
	{VNPU_BINARY_GCD,
	 VNPU_DTYPE_I8,
	 {0, 0, -12, INT8_MIN, INT8_MIN, INT8_MIN, INT8_MIN, 6},
	 {0, -5, 18, 0, INT8_MIN, -1, 6, INT8_MIN},
	 {0, 5, 6, INT8_MIN, INT8_MIN, 1, -2, -2}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I8,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {-1, -100, 0, 1, 7, 8, 9, 127},
	 {0, 0, 1, 2, INT8_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I8,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {-1, -100, 0, 1, 7, 8, 9, 127},
	 {0, 0, 1, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I8,
	 {-1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -100, 0, 1, 7, 8, 9, 127},
	 {0, 0, -1, -2, INT8_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I8,
	 {-1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -100, 0, 1, 7, 8, 9, 127},
	 {-1, -1, -1, -1, -1, -1, -1, -1}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I8,
	 {INT8_MIN, INT8_MIN, INT8_MIN, INT8_MIN, INT8_MIN, INT8_MIN,
	  INT8_MIN, INT8_MIN},
	 {-1, -100, 0, 1, 7, 8, 9, 127},
	 {0, 0, INT8_MIN, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I8,
	 {INT8_MIN, INT8_MIN, INT8_MIN, INT8_MIN, INT8_MIN, INT8_MIN,
	  INT8_MIN, INT8_MIN},
	 {-1, -100, 0, 1, 7, 8, 9, 127},
	 {-1, -1, INT8_MIN, -64, -1, -1, -1, -1}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I8,
	 {127, 127, 127, 127, 127, 127, 127, 127},
	 {-1, -100, 0, 1, 7, 8, 9, 127},
	 {0, 0, 127, -2, INT8_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I8,
	 {127, 127, 127, 127, 127, 127, 127, 127},
	 {-1, -100, 0, 1, 7, 8, 9, 127},
	 {0, 0, 127, 63, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I8,
	 {1, -1, INT8_MIN, 127, 5, -5, 100, -100},
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {2, -2, 0, -2, 10, -10, -56, 56}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I8,
	 {1, -1, INT8_MIN, 127, 5, -5, 100, -100},
	 {7, 7, 7, 7, 7, 7, 7, 7},
	 {0, -1, -1, 0, 0, -1, 0, -1}},
	{VNPU_BINARY_FMOD,
	 VNPU_DTYPE_U8,
	 {5, 250, 7, 9, 200, 0, 255, 13},
	 {3, 7, 255, 0, 200, 9, 1, 4},
	 {2, 5, 7, 0, 0, 0, 0, 1}},
	{VNPU_BINARY_REMAINDER,
	 VNPU_DTYPE_U8,
	 {5, 250, 7, 9, 200, 0, 255, 13},
	 {3, 7, 255, 0, 200, 9, 1, 4},
	 {2, 5, 7, 0, 0, 0, 0, 1}},
	{VNPU_BINARY_FLOOR_DIVIDE,
	 VNPU_DTYPE_U8,
	 {5, 250, 7, 9, 200, 0, 255, 13},
	 {3, 7, 255, 0, 200, 9, 1, 4},
	 {1, 35, 0, 0, 1, 0, 255, 3}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_U8,
	 {255, 2, 3, 0, 0, 254, 1, 16},
	 {3, 8, 5, 0, 5, 7, 200, 2},
	 {255, 0, 243, 1, 0, 128, 1, 0}},
	{VNPU_BINARY_GCD,
	 VNPU_DTYPE_U8,
	 {0, 12, 255, 128, 7, 0, 200, 81},
	 {0, 18, 0, 64, 0, 5, 150, 27},
	 {0, 6, 255, 64, 7, 5, 50, 27}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_U8,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {0, 1, 7, 8, 9, 127, 128, 255},
	 {1, 2, 128, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_U8,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {0, 1, 7, 8, 9, 127, 128, 255},
	 {1, 0, 0, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_U8,
	 {255, 255, 255, 255, 255, 255, 255, 255},
	 {0, 1, 7, 8, 9, 127, 128, 255},
	 {255, 254, 128, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_U8,
	 {255, 255, 255, 255, 255, 255, 255, 255},
	 {0, 1, 7, 8, 9, 127, 128, 255},
	 {255, 127, 1, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_U8,
	 {128, 128, 128, 128, 128, 128, 128, 128},
	 {0, 1, 7, 8, 9, 127, 128, 255},
	 {128, 0, 0, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_U8,
	 {128, 128, 128, 128, 128, 128, 128, 128},
	 {0, 1, 7, 8, 9, 127, 128, 255},
	 {128, 64, 1, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_U8,
	 {127, 127, 127, 127, 127, 127, 127, 127},
	 {0, 1, 7, 8, 9, 127, 128, 255},
	 {127, 254, 128, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_U8,
	 {127, 127, 127, 127, 127, 127, 127, 127},
	 {0, 1, 7, 8, 9, 127, 128, 255},
	 {127, 63, 0, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_U8,
	 {1, 255, 128, 127, 5, 200, 100, 3},
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {2, 254, 0, 254, 10, 144, 200, 6}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_U8,
	 {1, 255, 128, 127, 5, 200, 100, 3},
	 {7, 7, 7, 7, 7, 7, 7, 7},
	 {0, 1, 1, 0, 0, 1, 0, 0}},
	{VNPU_BINARY_FMOD,
	 VNPU_DTYPE_I16,
	 {5, -5, 5, -5, INT16_MIN, INT16_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {2, -2, 2, -2, 0, 0, 0, 0}},
	{VNPU_BINARY_REMAINDER,
	 VNPU_DTYPE_I16,
	 {5, -5, 5, -5, INT16_MIN, INT16_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {2, 1, -1, -2, 0, 0, 0, 0}},
	{VNPU_BINARY_FLOOR_DIVIDE,
	 VNPU_DTYPE_I16,
	 {5, -5, 5, -5, INT16_MIN, INT16_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {1, -2, -2, 1, INT16_MIN, 0, 0, -1}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_I16,
	 {1, -1, -1, 0, 0, 2, -2, INT16_MIN},
	 {-1, -3, INT16_MIN, 0, -1, -1, 3, 2},
	 {1, -1, 1, 1, 0, 0, -8, 0}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_I16,
	 {INT16_MIN, -1, 3, 32767, -3, 1, -1, 5},
	 {1, -32767, 19, 2, 3, INT16_MIN, -2, 0},
	 {INT16_MIN, -1, -19493, 1, -27, 1, 1, 1}},
	{VNPU_BINARY_GCD,
	 VNPU_DTYPE_I16,
	 {0, 0, -12, INT16_MIN, INT16_MIN, INT16_MIN, INT16_MIN, 6},
	 {0, -5, 18, 0, INT16_MIN, -1, 6, INT16_MIN},
	 {0, 5, 6, INT16_MIN, INT16_MIN, 1, -2, -2}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I16,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {-1, -100, 0, 1, 15, 16, 17, 32767},
	 {0, 0, 1, 2, INT16_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I16,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {-1, -100, 0, 1, 15, 16, 17, 32767},
	 {0, 0, 1, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I16,
	 {-1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -100, 0, 1, 15, 16, 17, 32767},
	 {0, 0, -1, -2, INT16_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I16,
	 {-1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -100, 0, 1, 15, 16, 17, 32767},
	 {-1, -1, -1, -1, -1, -1, -1, -1}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I16,
	 {INT16_MIN, INT16_MIN, INT16_MIN, INT16_MIN, INT16_MIN, INT16_MIN,
	  INT16_MIN, INT16_MIN},
	 {-1, -100, 0, 1, 15, 16, 17, 32767},
	 {0, 0, INT16_MIN, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I16,
	 {INT16_MIN, INT16_MIN, INT16_MIN, INT16_MIN, INT16_MIN, INT16_MIN,
	  INT16_MIN, INT16_MIN},
	 {-1, -100, 0, 1, 15, 16, 17, 32767},
	 {-1, -1, INT16_MIN, -16384, -1, -1, -1, -1}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I16,
	 {32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767},
	 {-1, -100, 0, 1, 15, 16, 17, 32767},
	 {0, 0, 32767, -2, INT16_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I16,
	 {32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767},
	 {-1, -100, 0, 1, 15, 16, 17, 32767},
	 {0, 0, 32767, 16383, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I16,
	 {1, -1, INT16_MIN, 32767, 5, -5, 100, -100},
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {2, -2, 0, -2, 10, -10, 200, -200}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I16,
	 {1, -1, INT16_MIN, 32767, 5, -5, 100, -100},
	 {15, 15, 15, 15, 15, 15, 15, 15},
	 {0, -1, -1, 0, 0, -1, 0, -1}},
	{VNPU_BINARY_FMOD,
	 VNPU_DTYPE_I32,
	 {5, -5, 5, -5, INT32_MIN, INT32_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {2, -2, 2, -2, 0, 0, 0, 0}},
	{VNPU_BINARY_REMAINDER,
	 VNPU_DTYPE_I32,
	 {5, -5, 5, -5, INT32_MIN, INT32_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {2, 1, -1, -2, 0, 0, 0, 0}},
	{VNPU_BINARY_FLOOR_DIVIDE,
	 VNPU_DTYPE_I32,
	 {5, -5, 5, -5, INT32_MIN, INT32_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {1, -2, -2, 1, INT32_MIN, 0, 0, -1}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_I32,
	 {1, -1, -1, 0, 0, 2, -2, INT32_MIN},
	 {-1, -3, INT32_MIN, 0, -1, -1, 3, 2},
	 {1, -1, 1, 1, 0, 0, -8, 0}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_I32,
	 {INT32_MIN, -1, 3, INT32_MAX, -3, 1, -1, 5},
	 {1, -2147483647, 35, 2, 3, INT32_MIN, -2, 0},
	 {INT32_MIN, -1, -651126885, 1, -27, 1, 1, 1}},
	{VNPU_BINARY_GCD,
	 VNPU_DTYPE_I32,
	 {0, 0, -12, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, 6},
	 {0, -5, 18, 0, INT32_MIN, -1, 6, INT32_MIN},
	 {0, 5, 6, INT32_MIN, INT32_MIN, 1, -2, -2}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I32,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {-1, -100, 0, 1, 31, 32, 33, INT32_MAX},
	 {0, 0, 1, 2, INT32_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I32,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {-1, -100, 0, 1, 31, 32, 33, INT32_MAX},
	 {0, 0, 1, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I32,
	 {-1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -100, 0, 1, 31, 32, 33, INT32_MAX},
	 {0, 0, -1, -2, INT32_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I32,
	 {-1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -100, 0, 1, 31, 32, 33, INT32_MAX},
	 {-1, -1, -1, -1, -1, -1, -1, -1}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I32,
	 {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
	  INT32_MIN, INT32_MIN},
	 {-1, -100, 0, 1, 31, 32, 33, INT32_MAX},
	 {0, 0, INT32_MIN, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I32,
	 {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
	  INT32_MIN, INT32_MIN},
	 {-1, -100, 0, 1, 31, 32, 33, INT32_MAX},
	 {-1, -1, INT32_MIN, -1073741824, -1, -1, -1, -1}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I32,
	 {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX,
	  INT32_MAX, INT32_MAX},
	 {-1, -100, 0, 1, 31, 32, 33, INT32_MAX},
	 {0, 0, INT32_MAX, -2, INT32_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I32,
	 {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX,
	  INT32_MAX, INT32_MAX},
	 {-1, -100, 0, 1, 31, 32, 33, INT32_MAX},
	 {0, 0, INT32_MAX, 1073741823, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I32,
	 {1, -1, INT32_MIN, INT32_MAX, 5, -5, 100, -100},
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {2, -2, 0, -2, 10, -10, 200, -200}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I32,
	 {1, -1, INT32_MIN, INT32_MAX, 5, -5, 100, -100},
	 {31, 31, 31, 31, 31, 31, 31, 31},
	 {0, -1, -1, 0, 0, -1, 0, -1}},
	{VNPU_BINARY_FMOD,
	 VNPU_DTYPE_I64,
	 {5, -5, 5, -5, INT64_MIN, INT64_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {2, -2, 2, -2, 0, 0, 0, 0}},
	{VNPU_BINARY_REMAINDER,
	 VNPU_DTYPE_I64,
	 {5, -5, 5, -5, INT64_MIN, INT64_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {2, 1, -1, -2, 0, 0, 0, 0}},
	{VNPU_BINARY_FLOOR_DIVIDE,
	 VNPU_DTYPE_I64,
	 {5, -5, 5, -5, INT64_MIN, INT64_MIN, 7, -7},
	 {3, 3, -3, -3, -1, 0, 0, 7},
	 {1, -2, -2, 1, INT64_MIN, 0, 0, -1}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_I64,
	 {1, -1, -1, 0, 0, 2, -2, INT64_MIN},
	 {-1, -3, INT64_MIN, 0, -1, -1, 3, 2},
	 {1, -1, 1, 1, 0, 0, -8, 0}},
	{VNPU_BINARY_POW,
	 VNPU_DTYPE_I64,
	 {INT64_MIN, -1, 3, INT64_MAX, -3, 1, -1, 5},
	 {1, -9223372036854775807, 67, 2, 3, INT64_MIN, -2, 0},
	 {INT64_MIN, -1, -4014347941998366949, 1, -27, 1, 1, 1}},
	{VNPU_BINARY_GCD,
	 VNPU_DTYPE_I64,
	 {0, 0, -12, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, 6},
	 {0, -5, 18, 0, INT64_MIN, -1, 6, INT64_MIN},
	 {0, 5, 6, INT64_MIN, INT64_MIN, 1, -2, -2}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I64,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {-1, -100, 0, 1, 63, 64, 65, INT64_MAX},
	 {0, 0, 1, 2, INT64_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I64,
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {-1, -100, 0, 1, 63, 64, 65, INT64_MAX},
	 {0, 0, 1, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I64,
	 {-1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -100, 0, 1, 63, 64, 65, INT64_MAX},
	 {0, 0, -1, -2, INT64_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I64,
	 {-1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -100, 0, 1, 63, 64, 65, INT64_MAX},
	 {-1, -1, -1, -1, -1, -1, -1, -1}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I64,
	 {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN,
	  INT64_MIN, INT64_MIN},
	 {-1, -100, 0, 1, 63, 64, 65, INT64_MAX},
	 {0, 0, INT64_MIN, 0, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I64,
	 {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN,
	  INT64_MIN, INT64_MIN},
	 {-1, -100, 0, 1, 63, 64, 65, INT64_MAX},
	 {-1, -1, INT64_MIN, -4611686018427387904, -1, -1, -1, -1}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I64,
	 {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX,
	  INT64_MAX, INT64_MAX},
	 {-1, -100, 0, 1, 63, 64, 65, INT64_MAX},
	 {0, 0, INT64_MAX, -2, INT64_MIN, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I64,
	 {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX,
	  INT64_MAX, INT64_MAX},
	 {-1, -100, 0, 1, 63, 64, 65, INT64_MAX},
	 {0, 0, INT64_MAX, 4611686018427387903, 0, 0, 0, 0}},
	{VNPU_BINARY_BITWISE_LEFT_SHIFT,
	 VNPU_DTYPE_I64,
	 {1, -1, INT64_MIN, INT64_MAX, 5, -5, 100, -100},
	 {1, 1, 1, 1, 1, 1, 1, 1},
	 {2, -2, 0, -2, 10, -10, 200, -200}},
	{VNPU_BINARY_BITWISE_RIGHT_SHIFT,
	 VNPU_DTYPE_I64,
	 {1, -1, INT64_MIN, INT64_MAX, 5, -5, 100, -100},
	 {63, 63, 63, 63, 63, 63, 63, 63},
	 {0, -1, -1, 0, 0, -1, 0, -1}},
	};
	int64_t sizes[1] = {8};
	struct vnpu_kbuf b[3] = {kt_buffer(64), kt_buffer(64), kt_buffer(64)};
	struct vnpu_kp_binary p;

	memset(&p, 0, sizeof(p));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint32_t dt = cases[c].dt;

		p.op = cases[c].op;
		p.a = kt_tensor(0, dt, 1, sizes, NULL);
		p.b = kt_tensor(1, dt, 1, sizes, NULL);
		p.out = kt_tensor(2, dt, 1, sizes, NULL);
		for (int i = 0; i < 8; i++) {
			int64_t va = cases[c].a[i], vb = cases[c].b[i];

			size_t es = esize(dt);

			/* the low bytes: the dtype's value (little endian) */
			memcpy((char *)b[0].ptr + (size_t)i * es, &va, es);
			memcpy((char *)b[1].ptr + (size_t)i * es, &vb, es);
		}
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 2),
				  VNPU_STATUS_OK);
		for (int i = 0; i < 8; i++)
			ck_assert_msg(get_int(b[2].ptr, dt, (uint64_t)i) ==
					      cases[c].want[i],
				      "case %zu op %u dt %u element %d: %lld, "
				      "want %lld",
				      c, p.op, dt, i,
				      (long long)get_int(b[2].ptr, dt,
							 (uint64_t)i),
				      (long long)cases[c].want[i]);
	}
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

/* The float ops added with POW on signed zeros, infinities, NaN and exact
 * cases, for F32, F64, F16 and BF16; want[k] is PyTorch 2.13's CPU result
 * for dtype k (generated with torch, on 1024-element tensors: its
 * vectorised path), compared bit for bit (any NaN matching any NaN). */
START_TEST(test_binary_float_ops_special)
{
	static const uint32_t dts[4] = {VNPU_DTYPE_F32, VNPU_DTYPE_F64,
					VNPU_DTYPE_F16, VNPU_DTYPE_BF16};
	static const struct {
		uint32_t op;
		double a[16], b[16], want[4][16];
	} cases[] = {
	{VNPU_BINARY_FMOD,
	 {0x1.4p+2, -0x1.4p+2, 0x1.4p+2, -0x1.4p+2, 0.0, -0.0, 0x1.8p+1,
	  INFINITY, -INFINITY, NAN, 0x1p+0, 0x1.4p+2, -0x1.4p+2, 0x1p-3, 0.0,
	  -0.0},
	 {0x1.8p+1, 0x1.8p+1, -0x1.8p+1, -0x1.8p+1, 0x1.8p+1, 0x1.8p+1, 0.0,
	  0x1.8p+1, 0x1.8p+1, 0x1p+0, NAN, INFINITY, INFINITY, -0x1p+0,
	  -0x1.8p+1, -0x1.8p+1},
	 {{0x1p+1, -0x1p+1, 0x1p+1, -0x1p+1, 0.0, -0.0, NAN, -NAN, NAN, NAN,
	   NAN, 0x1.4p+2, -0x1.4p+2, 0x1p-3, 0.0, -0.0},
	  {0x1p+1, -0x1p+1, 0x1p+1, -0x1p+1, 0.0, -0.0, NAN, -NAN, NAN, NAN,
	   -NAN, 0x1.4p+2, -0x1.4p+2, 0x1p-3, 0.0, -0.0},
	  {0x1p+1, -0x1p+1, 0x1p+1, -0x1p+1, 0.0, -0.0, NAN, -NAN, NAN, NAN,
	   NAN, 0x1.4p+2, -0x1.4p+2, 0x1p-3, 0.0, -0.0},
	  {0x1p+1, -0x1p+1, 0x1p+1, -0x1p+1, 0.0, -0.0, -NAN, -NAN, -NAN, -NAN,
	   -NAN, 0x1.4p+2, -0x1.4p+2, 0x1p-3, 0.0, -0.0}}},
	{VNPU_BINARY_REMAINDER,
	 {0x1.4p+2, -0x1.4p+2, 0x1.4p+2, -0x1.4p+2, 0.0, -0.0, 0x1.8p+1,
	  INFINITY, -INFINITY, NAN, 0x1p+0, 0x1.4p+2, -0x1.4p+2, 0x1p-3, 0.0,
	  -0.0},
	 {0x1.8p+1, 0x1.8p+1, -0x1.8p+1, -0x1.8p+1, 0x1.8p+1, 0x1.8p+1, 0.0,
	  0x1.8p+1, 0x1.8p+1, 0x1p+0, NAN, INFINITY, INFINITY, -0x1p+0,
	  -0x1.8p+1, -0x1.8p+1},
	 {{0x1p+1, 0x1p+0, -0x1p+0, -0x1p+1, 0.0, -0.0, NAN, -NAN, NAN, NAN,
	   NAN, 0x1.4p+2, INFINITY, -0x1.cp-1, 0.0, -0.0},
	  {0x1p+1, 0x1p+0, -0x1p+0, -0x1p+1, 0.0, -0.0, NAN, -NAN, NAN, NAN,
	   -NAN, 0x1.4p+2, INFINITY, -0x1.cp-1, 0.0, -0.0},
	  {0x1p+1, 0x1p+0, -0x1p+0, -0x1p+1, 0.0, -0.0, NAN, -NAN, NAN, NAN,
	   NAN, 0x1.4p+2, INFINITY, -0x1.cp-1, 0.0, -0.0},
	  {0x1p+1, 0x1p+0, -0x1p+0, -0x1p+1, 0.0, -0.0, -NAN, -NAN, -NAN, -NAN,
	   -NAN, 0x1.4p+2, INFINITY, -0x1.cp-1, 0.0, -0.0}}},
	{VNPU_BINARY_FLOOR_DIVIDE,
	 {0x1.4p+2, -0x1.4p+2, 0x1.4p+2, -0x1.4p+2, 0.0, -0.0, 0x1.8p+1,
	  INFINITY, -INFINITY, NAN, 0x1p+0, 0x1.4p+2, -0x1.4p+2, 0x1p-3, 0.0,
	  -0.0},
	 {0x1.8p+1, 0x1.8p+1, -0x1.8p+1, -0x1.8p+1, 0x1.8p+1, 0x1.8p+1, 0.0,
	  0x1.8p+1, 0x1.8p+1, 0x1p+0, NAN, INFINITY, INFINITY, -0x1p+0,
	  -0x1.8p+1, -0x1.8p+1},
	 {{0x1p+0, -0x1p+1, -0x1p+1, 0x1p+0, 0.0, -0.0, INFINITY, -NAN, NAN,
	   NAN, NAN, 0.0, -0x1p+0, -0x1p+0, -0.0, 0.0},
	  {0x1p+0, -0x1p+1, -0x1p+1, 0x1p+0, 0.0, -0.0, INFINITY, -NAN, NAN,
	   NAN, -NAN, 0.0, -0x1p+0, -0x1p+0, -0.0, 0.0},
	  {0x1p+0, -0x1p+1, -0x1p+1, 0x1p+0, 0.0, -0.0, INFINITY, -NAN, NAN,
	   NAN, NAN, 0.0, -0x1p+0, -0x1p+0, -0.0, 0.0},
	  {0x1p+0, -0x1p+1, -0x1p+1, 0x1p+0, 0.0, -0.0, INFINITY, -NAN, -NAN,
	   -NAN, -NAN, 0.0, -0x1p+0, -0x1p+0, -0.0, 0.0}}},
	{VNPU_BINARY_COPYSIGN,
	 {0x1p+0, -0x1p+0, 0.0, -0.0, NAN, INFINITY, -INFINITY, 0x1p+1,
	  0x1.8p+1, -0x1.8p+1, 0x1p-1, -0x1p-1, 0.0, 0x1.cp+2, -0x1.cp+2,
	  0x1p+0},
	 {-0.0, 0.0, -0x1p+0, 0x1p+0, -0x1p+0, -0.0, NAN, -NAN, INFINITY,
	  -INFINITY, -0x1p+1, 0x1p+1, -INFINITY, 0.0, 0.0, -0.0},
	 {{-0x1p+0, 0x1p+0, -0.0, 0.0, -NAN, -INFINITY, INFINITY, -0x1p+1,
	   0x1.8p+1, -0x1.8p+1, -0x1p-1, 0x1p-1, -0.0, 0x1.cp+2, 0x1.cp+2,
	   -0x1p+0},
	  {-0x1p+0, 0x1p+0, -0.0, 0.0, -NAN, -INFINITY, INFINITY, -0x1p+1,
	   0x1.8p+1, -0x1.8p+1, -0x1p-1, 0x1p-1, -0.0, 0x1.cp+2, 0x1.cp+2,
	   -0x1p+0},
	  {-0x1p+0, 0x1p+0, -0.0, 0.0, -NAN, -INFINITY, INFINITY, -0x1p+1,
	   0x1.8p+1, -0x1.8p+1, -0x1p-1, 0x1p-1, -0.0, 0x1.cp+2, 0x1.cp+2,
	   -0x1p+0},
	  {-0x1p+0, 0x1p+0, -0.0, 0.0, -NAN, -INFINITY, INFINITY, -0x1p+1,
	   0x1.8p+1, -0x1.8p+1, -0x1p-1, 0x1p-1, -0.0, 0x1.cp+2, 0x1.cp+2,
	   -0x1p+0}}},
	{VNPU_BINARY_POW,
	 {-0.0, 0.0, -INFINITY, NAN, 0x1p+0, -0x1p+1, -0x1p+0, 0x1p-1, 0x1p+1,
	  0.0, -0.0, INFINITY, -INFINITY, 0x1.8p+1, -0x1.8p+1, 0x1p+2},
	 {-0x1p+0, -0x1p+0, 0x1.8p+1, 0.0, NAN, 0x1p-1, INFINITY, -INFINITY,
	  0x1.4p+3, 0.0, 0x1.8p+1, -0x1p+0, -0x1p+1, 0x1p+1, 0x1.8p+1, -0x1p-1},
	 {{-INFINITY, INFINITY, -INFINITY, 0x1p+0, 0x1p+0, NAN, 0x1p+0,
	   INFINITY, 0x1p+10, 0x1p+0, -0.0, 0.0, 0.0, 0x1.2p+3, -0x1.bp+4,
	   0x1p-1},
	  {-INFINITY, INFINITY, -INFINITY, 0x1p+0, 0x1p+0, NAN, 0x1p+0,
	   INFINITY, 0x1p+10, 0x1p+0, -0.0, 0.0, 0.0, 0x1.2p+3, -0x1.bp+4,
	   0x1p-1},
	  {-INFINITY, INFINITY, -INFINITY, 0x1p+0, 0x1p+0, NAN, 0x1p+0,
	   INFINITY, 0x1p+10, 0x1p+0, -0.0, 0.0, 0.0, 0x1.2p+3, -0x1.bp+4,
	   0x1p-1},
	  {-INFINITY, INFINITY, -INFINITY, 0x1p+0, 0x1p+0, -NAN, 0x1p+0,
	   INFINITY, 0x1p+10, 0x1p+0, -0.0, 0.0, 0.0, 0x1.2p+3, -0x1.bp+4,
	   0x1p-1}}},
	{VNPU_BINARY_ATAN2,
	 {0.0, -0.0, 0.0, -0.0, INFINITY, NAN, 0x1p+0, -0x1p+0, 0.0, INFINITY,
	  -INFINITY, -0.0, 0x1p+0, 0.0, 0x1.4p+2, -0x1.4p+2},
	 {0.0, 0.0, -0.0, -0.0, INFINITY, 0x1p+0, -INFINITY, -INFINITY,
	  0x1.4p+2, -INFINITY, 0x1.8p+1, -0x1.4p+2, NAN, -0x1.4p+2, INFINITY,
	  INFINITY},
	 {{0.0, -0.0, 0x1.921fb6p+1, -0x1.921fb6p+1, 0x1.921fb6p-1, -NAN,
	   0x1.921fb6p+1, -0x1.921fb6p+1, 0.0, 0x1.2d97c8p+1, -0x1.921fb6p+0,
	   -0x1.921fb6p+1, -NAN, 0x1.921fb6p+1, 0.0, -0.0},
	  {0.0, -0.0, 0x1.921fb54442d18p+1, -0x1.921fb54442d18p+1,
	   0x1.921fb54442d18p-1, -NAN, 0x1.921fb54442d18p+1,
	   -0x1.921fb54442d18p+1, 0.0, 0x1.2d97c7f3321d2p+1,
	   -0x1.921fb54442d18p+0, -0x1.921fb54442d18p+1, -NAN,
	   0x1.921fb54442d18p+1, 0.0, -0.0},
	  {0.0, -0.0, 0x1.92p+1, -0x1.92p+1, 0x1.92p-1, -NAN, 0x1.92p+1,
	   -0x1.92p+1, 0.0, 0x1.2d8p+1, -0x1.92p+0, -0x1.92p+1, -NAN,
	   0x1.92p+1, 0.0, -0.0},
	  {0.0, -0.0, 0x1.92p+1, -0x1.92p+1, 0x1.92p-1, -NAN, 0x1.92p+1,
	   -0x1.92p+1, 0.0, 0x1.2ep+1, -0x1.92p+0, -0x1.92p+1, -NAN, 0x1.92p+1,
	   0.0, -0.0}}},
	{VNPU_BINARY_LOGADDEXP,
	 {INFINITY, -INFINITY, INFINITY, -INFINITY, NAN, 0.0, -INFINITY,
	  0x1p+0, 0.0, -0.0, INFINITY, 0x1.8p+1, -INFINITY, -INFINITY, 0x1p+1,
	  -0x1.8p+1},
	 {INFINITY, -INFINITY, -INFINITY, 0x1.8p+1, 0x1p+0, NAN, -INFINITY,
	  0x1p+0, -INFINITY, -INFINITY, NAN, -INFINITY, 0x1p+1, 0x1.4p+2,
	  -INFINITY, -INFINITY},
	 {{INFINITY, -INFINITY, INFINITY, 0x1.8p+1, -NAN, -NAN, -INFINITY,
	   0x1.b17218p+0, 0.0, 0.0, -NAN, 0x1.8p+1, 0x1p+1, 0x1.4p+2, 0x1p+1,
	   -0x1.8p+1},
	  {INFINITY, -INFINITY, INFINITY, 0x1.8p+1, NAN, NAN, -INFINITY,
	   0x1.b17217f7d1cf8p+0, 0.0, 0.0, NAN, 0x1.8p+1, 0x1p+1, 0x1.4p+2,
	   0x1p+1, -0x1.8p+1},
	  {INFINITY, -INFINITY, INFINITY, 0x1.8p+1, -NAN, -NAN, -INFINITY,
	   0x1.b18p+0, 0.0, 0.0, -NAN, 0x1.8p+1, 0x1p+1, 0x1.4p+2, 0x1p+1,
	   -0x1.8p+1},
	  {INFINITY, -INFINITY, INFINITY, 0x1.8p+1, -NAN, -NAN, -INFINITY,
	   0x1.b2p+0, 0.0, 0.0, -NAN, 0x1.8p+1, 0x1p+1, 0x1.4p+2, 0x1p+1,
	   -0x1.8p+1}}},
	{VNPU_BINARY_XLOGY,
	 {0.0, 0.0, 0.0, -0.0, 0x1p+0, NAN, 0x1p+1, 0.0, 0.0, -0.0, 0x1.8p+1,
	  -0x1p+1, 0x1p+0, 0.0, 0x1.4p+2, INFINITY},
	 {NAN, 0.0, INFINITY, 0x1.4p+2, 0.0, 0x1p+0, -0x1p+0, -0x1p+0, -0.0,
	  0x1p-1, 0x1p+0, 0x1p+0, INFINITY, -INFINITY, NAN, 0.0},
	 {{NAN, 0.0, 0.0, 0.0, -INFINITY, NAN, -NAN, 0.0, 0.0, 0.0, 0.0, -0.0,
	   INFINITY, 0.0, NAN, -INFINITY},
	  {NAN, 0.0, 0.0, 0.0, -INFINITY, NAN, NAN, 0.0, 0.0, 0.0, 0.0, -0.0,
	   INFINITY, 0.0, NAN, -INFINITY},
	  {NAN, 0.0, 0.0, 0.0, -INFINITY, NAN, -NAN, 0.0, 0.0, 0.0, 0.0, -0.0,
	   INFINITY, 0.0, NAN, -INFINITY},
	  {NAN, 0.0, 0.0, 0.0, -INFINITY, NAN, NAN, 0.0, 0.0, 0.0, 0.0, -0.0,
	   INFINITY, 0.0, NAN, -INFINITY}}},
	{VNPU_BINARY_HYPOT,
	 {INFINITY, NAN, 0x1.8p+1, -0.0, -INFINITY, NAN, 0.0, -0x1.8p+1,
	  0x1.4p+2, 0.0, -INFINITY, 0x1p+0, -0.0, 0x1p+3, -0x1p+3, NAN},
	 {NAN, INFINITY, 0x1p+2, 0.0, NAN, -INFINITY, 0.0, -0x1p+2, 0x1.8p+3,
	  -0x1.cp+2, 0x1p+0, 0.0, -0.0, -0x1.8p+2, 0x1.8p+2, 0x1p+1},
	 {{INFINITY, INFINITY, 0x1.4p+2, 0.0, INFINITY, INFINITY, 0.0,
	   0x1.4p+2, 0x1.ap+3, 0x1.cp+2, INFINITY, 0x1p+0, 0.0, 0x1.4p+3,
	   0x1.4p+3, NAN},
	  {INFINITY, INFINITY, 0x1.4p+2, 0.0, INFINITY, INFINITY, 0.0,
	   0x1.4p+2, 0x1.ap+3, 0x1.cp+2, INFINITY, 0x1p+0, 0.0, 0x1.4p+3,
	   0x1.4p+3, NAN},
	  {INFINITY, INFINITY, 0x1.4p+2, 0.0, INFINITY, INFINITY, 0.0,
	   0x1.4p+2, 0x1.ap+3, 0x1.cp+2, INFINITY, 0x1p+0, 0.0, 0x1.4p+3,
	   0x1.4p+3, NAN},
	  {INFINITY, INFINITY, 0x1.4p+2, 0.0, INFINITY, INFINITY, 0.0,
	   0x1.4p+2, 0x1.ap+3, 0x1.cp+2, INFINITY, 0x1p+0, 0.0, 0x1.4p+3,
	   0x1.4p+3, -NAN}}},
	{VNPU_BINARY_NEXTAFTER,
	 {0x1p+0, 0.0, -0.0, 0x1p+0, INFINITY, -INFINITY, NAN, 0x1p+0, 0.0,
	  -0.0, 0.0, -0.0, 0.0, -0x1p+0, 0x1p+1, 0x1p+2},
	 {0x1p+1, 0x1p+0, -0x1p+0, 0.0, 0.0, 0.0, 0x1p+0, NAN, -0.0, 0.0, 0.0,
	  -0.0, -0x1p+0, -0x1p+1, INFINITY, -INFINITY},
	 {{0x1.000002p+0, 0x1p-149, -0x1p-149, 0x1.fffffep-1, 0x1.fffffep+127,
	   -0x1.fffffep+127, NAN, NAN, -0.0, 0.0, 0.0, -0.0, -0x1p-149,
	   -0x1.000002p+0, 0x1.000002p+1, 0x1.fffffep+1},
	  {0x1.0000000000001p+0, 0x0.0000000000001p-1022,
	   -0x0.0000000000001p-1022, 0x1.fffffffffffffp-1,
	   0x1.fffffffffffffp+1023, -0x1.fffffffffffffp+1023, NAN, NAN, -0.0,
	   0.0, 0.0, -0.0, -0x0.0000000000001p-1022, -0x1.0000000000001p+0,
	   0x1.0000000000001p+1, 0x1.fffffffffffffp+1},
	  {0x1.004p+0, 0x1p-24, -0x1p-24, 0x1.ffcp-1, 0x1.ffcp+15,
	   -0x1.ffcp+15, NAN, NAN, -0.0, 0.0, 0.0, -0.0, -0x1p-24, -0x1.004p+0,
	   0x1.004p+1, 0x1.ffcp+1},
	  {0x1.02p+0, 0x1p-133, -0x1p-133, 0x1.fep-1, 0x1.fep+127,
	   -0x1.fep+127, NAN, NAN, -0.0, 0.0, 0.0, -0.0, -0x1p-133, -0x1.02p+0,
	   0x1.02p+1, 0x1.fep+1}}},
	};
	int64_t sizes[1] = {16};
	struct vnpu_kbuf b[3] = {kt_buffer(128), kt_buffer(128),
				 kt_buffer(128)};
	struct vnpu_kp_binary p;

	memset(&p, 0, sizeof(p));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (int k = 0; k < 4; k++) {
			uint32_t dt = dts[k];

			p.op = cases[c].op;
			p.a = kt_tensor(0, dt, 1, sizes, NULL);
			p.b = kt_tensor(1, dt, 1, sizes, NULL);
			p.out = kt_tensor(2, dt, 1, sizes, NULL);
			for (int i = 0; i < 16; i++) {
				put_val(b[0].ptr, dt, (uint64_t)i,
					cases[c].a[i]);
				put_val(b[1].ptr, dt, (uint64_t)i,
					cases[c].b[i]);
			}
			ck_assert_uint_eq(
				kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 2),
				VNPU_STATUS_OK);
			for (int i = 0; i < 16; i++) {
				double got = get_val(b[2].ptr, dt, (uint64_t)i);

				ck_assert_msg(same_double(got,
							  cases[c].want[k][i]),
					      "op %u dt %u element %d: %a ? %a "
					      "= %a, want %a",
					      p.op, dt, i, cases[c].a[i],
					      cases[c].b[i], got,
					      cases[c].want[k][i]);
			}
		}
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

/* hardsigmoid, hardswish and their gradients at the branch points, NaN and
 * infinities: PyTorch 2.13's CPU values (its vectorised kernels), in every
 * float dtype (each exact in all of them). */
START_TEST(test_hard_activation_edges)
{
	static const double x[] = {-3, 3, NAN, INFINITY, -INFINITY, 0};
	static const struct {
		int binary;
		uint32_t op;
		double want[6];
	} cases[] = {
		{0, VNPU_UNARY_HARDSIGMOID, {0, 1, NAN, 1, 0, 0.5}},
		{0, VNPU_UNARY_HARDSWISH, {-0.0, 3, NAN, INFINITY, NAN, 0}},
		{1, VNPU_BINARY_HARDSIGMOID_BACKWARD,
		 {0, 0, 0, 0, 0, (double)(1.0f / 6.0f)}},
		{1, VNPU_BINARY_HARDSWISH_BACKWARD, {0, 1, NAN, 1, 0, 0.5}},
	};
	static const uint32_t dts[] = {VNPU_DTYPE_F32, VNPU_DTYPE_F16,
				       VNPU_DTYPE_BF16, VNPU_DTYPE_F64};
	int64_t sizes[1] = {6};
	struct vnpu_kbuf b[3] = {kt_buffer(48), kt_buffer(48), kt_buffer(48)};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
			uint32_t dt = dts[d];
			uint32_t st;

			for (int i = 0; i < 6; i++) {
				put_val(b[0].ptr, dt, i, cases[c].binary ? 1 : x[i]);
				put_val(b[1].ptr, dt, i, x[i]);
			}
			if (cases[c].binary) {
				struct vnpu_kp_binary p;

				memset(&p, 0, sizeof(p));
				p.op = cases[c].op;
				p.a = kt_tensor(0, dt, 1, sizes, NULL);
				p.b = kt_tensor(1, dt, 1, sizes, NULL);
				p.out = kt_tensor(2, dt, 1, sizes, NULL);
				st = kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 1);
			} else {
				struct vnpu_kp_unary p;

				memset(&p, 0, sizeof(p));
				p.op = cases[c].op;
				p.src = kt_tensor(0, dt, 1, sizes, NULL);
				p.out = kt_tensor(2, dt, 1, sizes, NULL);
				st = kt_launch(VNPU_KERNEL_UNARY, &p, b, 3, 1);
			}
			ck_assert_uint_eq(st, VNPU_STATUS_OK);
			for (int i = 0; i < 6; i++) {
				double got = get_val(b[2].ptr, dt, i);
				double want = round_dt(dt, cases[c].want[i]);

				ck_assert_msg(same_double(got, want),
					      "op %u (binary %d) dt %u: f(%a) = %a, want %a",
					      cases[c].op, cases[c].binary, dt, x[i], got, want);
			}
		}
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

/* F16 and BF16 where PyTorch's results are not one f32 evaluation rounded
 * once: floor_divide rounds each step to the dtype (102, not 103, for
 * bf16 -8.6875 // -0.083984375), NEXTAFTER steps the 16-bit encoding,
 * XLOGY rounds the log; and LOGADDEXP's log1p (PyTorch's values). */
START_TEST(test_binary_half_steps)
{
	static const struct {
		uint32_t op, dt;
		double a, b, want;
	} cases[] = {
		{VNPU_BINARY_FLOOR_DIVIDE, VNPU_DTYPE_BF16, -8.6875,
		 -0.083984375, 102},
		{VNPU_BINARY_FLOOR_DIVIDE, VNPU_DTYPE_BF16, 46, 0.099609375,
		 462},
		{VNPU_BINARY_FLOOR_DIVIDE, VNPU_DTYPE_BF16, 141, -0.8359375,
		 -168},
		{VNPU_BINARY_FLOOR_DIVIDE, VNPU_DTYPE_F32, -8.6875,
		 -0.083984375, 103},
		{VNPU_BINARY_NEXTAFTER, VNPU_DTYPE_F16, 1, 2, 1 + 0x1p-10},
		{VNPU_BINARY_NEXTAFTER, VNPU_DTYPE_BF16, 1, 2, 1 + 0x1p-7},
		{VNPU_BINARY_NEXTAFTER, VNPU_DTYPE_F16, 1, 0, 1 - 0x1p-11},
		{VNPU_BINARY_NEXTAFTER, VNPU_DTYPE_F16, 65504, INFINITY,
		 INFINITY},
		{VNPU_BINARY_NEXTAFTER, VNPU_DTYPE_BF16, 0, -1, -0x1p-133},
		{VNPU_BINARY_NEXTAFTER, VNPU_DTYPE_F16, 0x1p-24, 0, 0},
		{VNPU_BINARY_NEXTAFTER, VNPU_DTYPE_F16, -0x1p-24, 1, -0.0},
		{VNPU_BINARY_XLOGY, VNPU_DTYPE_F16, 7, 5.03125, 11.3046875},
		/* log1p keeps exp(-40), which 1 + exp(-40) would lose */
		{VNPU_BINARY_LOGADDEXP, VNPU_DTYPE_F64, 0, -40,
		 0x1.39792499b1a24p-58},
		{VNPU_BINARY_LOGADDEXP, VNPU_DTYPE_F32, 0, -20, 0x1.1b4866p-29},
	};
	int64_t sizes[1] = {1};
	struct vnpu_kbuf b[3] = {kt_buffer(8), kt_buffer(8), kt_buffer(8)};
	struct vnpu_kp_binary p;

	memset(&p, 0, sizeof(p));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint32_t dt = cases[c].dt;
		double got;

		p.op = cases[c].op;
		p.a = kt_tensor(0, dt, 1, sizes, NULL);
		p.b = kt_tensor(1, dt, 1, sizes, NULL);
		p.out = kt_tensor(2, dt, 1, sizes, NULL);
		put_val(b[0].ptr, dt, 0, cases[c].a);
		put_val(b[1].ptr, dt, 0, cases[c].b);
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_BINARY, &p, b, 3, 1),
				  VNPU_STATUS_OK);
		got = get_val(b[2].ptr, dt, 0);
		ck_assert_msg(same_double(got, cases[c].want),
			      "case %zu: %a, want %a", c, got, cases[c].want);
	}
	for (int i = 0; i < 3; i++)
		kt_free(&b[i]);
}
END_TEST

/* The rounding ops and SIGN bit for bit on every float dtype (signed
 * zeros: ceil(-0.5) = -0.0, round(-0.5) = -0.0, sign(-0.0) = +0.0, sign
 * of NaN 0, as torch gives), on the integers (identity; sign -1/0/1) and
 * SIGN on BOOL; and the dtypes each new UNARY op refuses. */
START_TEST(test_unary_rounding_sign)
{
	static const double x[14] = {NAN,  INFINITY, -INFINITY, 0.0,  -0.0,
				     2.5,  -2.5,     3.5,	-0.5, 0.5,
				     1.5,  -1.5,     -0.25,	0.75};
	static const struct {
		uint32_t op;
		double want[14];
	} cases[] = {
		{VNPU_UNARY_FLOOR,
		 {NAN, INFINITY, -INFINITY, 0.0, -0.0, 2, -3, 3, -1, 0, 1, -2,
		  -1, 0}},
		{VNPU_UNARY_CEIL,
		 {NAN, INFINITY, -INFINITY, 0.0, -0.0, 3, -2, 4, -0.0, 1, 2,
		  -1, -0.0, 1}},
		{VNPU_UNARY_TRUNC,
		 {NAN, INFINITY, -INFINITY, 0.0, -0.0, 2, -2, 3, -0.0, 0.0, 1,
		  -1, -0.0, 0.0}},
		{VNPU_UNARY_ROUND,
		 {NAN, INFINITY, -INFINITY, 0.0, -0.0, 2, -2, 4, -0.0, 0.0, 2,
		  -2, -0.0, 1}},
		{VNPU_UNARY_SIGN,
		 {0.0, 1, -1, 0.0, 0.0, 1, -1, 1, -1, 1, 1, -1, -1, 1}},
	};
	static const uint32_t dts[4] = {VNPU_DTYPE_F32, VNPU_DTYPE_F64,
					VNPU_DTYPE_F16, VNPU_DTYPE_BF16};
	static const uint32_t idts[5] = {VNPU_DTYPE_I8, VNPU_DTYPE_U8,
					 VNPU_DTYPE_I16, VNPU_DTYPE_I32,
					 VNPU_DTYPE_I64};
	int64_t sizes[1] = {14};
	struct vnpu_kbuf b[2] = {kt_buffer(14 * 8), kt_buffer(14 * 8)};
	struct vnpu_kp_unary p;

	memset(&p, 0, sizeof(p));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (int k = 0; k < 4; k++) {
			p.op = cases[c].op;
			p.src = kt_tensor(0, dts[k], 1, sizes, NULL);
			p.out = kt_tensor(1, dts[k], 1, sizes, NULL);
			for (int i = 0; i < 14; i++)
				put_val(b[0].ptr, dts[k], (uint64_t)i, x[i]);
			ck_assert_uint_eq(
				kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 2),
				VNPU_STATUS_OK);
			for (int i = 0; i < 14; i++) {
				double got = get_val(b[1].ptr, dts[k],
						     (uint64_t)i);

				ck_assert_msg(same_double(got,
							  cases[c].want[i]),
					      "op %u dt %u: f(%a) = %a, want %a",
					      p.op, dts[k], x[i], got,
					      cases[c].want[i]);
			}
		}
	/* integers: the rounding ops keep the value, SIGN gives -1/0/1 */
	for (int k = 0; k < 5; k++) {
		int64_t v[3] = {-100, 0, 77}, got;

		if (idts[k] == VNPU_DTYPE_U8)
			v[0] = 200;
		p.src = kt_tensor(0, idts[k], 1, sizes, NULL);
		p.out = kt_tensor(1, idts[k], 1, sizes, NULL);
		p.src.sizes[0] = p.out.sizes[0] = 3;
		for (int i = 0; i < 3; i++)
			put_val(b[0].ptr, idts[k], (uint64_t)i, (double)v[i]);
		for (uint32_t op = VNPU_UNARY_FLOOR; op <= VNPU_UNARY_SIGN;
		     op++) {
			p.op = op;
			ck_assert_uint_eq(
				kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
				VNPU_STATUS_OK);
			for (int i = 0; i < 3; i++) {
				int64_t sign = (v[i] > 0) - (v[i] < 0);

				got = get_int(b[1].ptr, idts[k], (uint64_t)i);
				ck_assert_int_eq(got, op == VNPU_UNARY_SIGN
							      ? sign
							      : v[i]);
			}
		}
		/* the float-only ops refuse integers */
		for (uint32_t op = VNPU_UNARY_RECIPROCAL;
		     op < VNPU_UNARY_COUNT; op++) {
			p.op = op;
			ck_assert_uint_eq(
				kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
				VNPU_STATUS_UNSUPPORTED);
		}
	}
	/* BOOL: SIGN is the identity; the rounding ops are refused */
	p.src = kt_tensor(0, VNPU_DTYPE_BOOL, 1, sizes, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_BOOL, 1, sizes, NULL);
	p.src.sizes[0] = p.out.sizes[0] = 2;
	((uint8_t *)b[0].ptr)[0] = 0;
	((uint8_t *)b[0].ptr)[1] = 1;
	p.op = VNPU_UNARY_SIGN;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
			  VNPU_STATUS_OK);
	ck_assert_uint_eq(((uint8_t *)b[1].ptr)[0], 0);
	ck_assert_uint_eq(((uint8_t *)b[1].ptr)[1], 1);
	for (uint32_t op = VNPU_UNARY_FLOOR; op < VNPU_UNARY_COUNT; op++) {
		p.op = op;
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &p, b, 2, 1),
				  op == VNPU_UNARY_SIGN
					  ? VNPU_STATUS_OK
					  : VNPU_STATUS_UNSUPPORTED);
	}
	kt_free(&b[0]);
	kt_free(&b[1]);
}
END_TEST

/* Every BINARY op against every dtype: OK exactly where binary_takes says,
 * UNSUPPORTED elsewhere (floats to shifts or gcd, integers to atan2 ..
 * nextafter, BOOL to pow, fmod, remainder, floor_divide, shifts, gcd). */
START_TEST(test_binary_dtype_support)
{
	struct bin_setup s;

	bin_setup(&s);
	for (uint32_t op = 0; op < VNPU_BINARY_COUNT; op++)
		for (size_t d = 0; d < N_ALL_DTYPES; d++) {
			uint32_t dt = all_dtypes[d];
			uint32_t want = binary_takes(op, dt)
						? VNPU_STATUS_OK
						: VNPU_STATUS_UNSUPPORTED;

			s.p.op = op;
			s.p.a.dtype = s.p.b.dtype = dt;
			s.p.out.dtype = is_cmp(op) ? (uint32_t)VNPU_DTYPE_BOOL
						   : dt;
			ck_assert_msg(bin_launch(&s) == want, "op %u dt %u",
				      op, dt);
		}
	bin_free(&s);
}
END_TEST

START_TEST(test_other_errors)
{
	int64_t sizes[2] = {4, 4}, other[2] = {4, 3};
	struct vnpu_kbuf b[4];
	struct vnpu_kp_fill pf;
	struct vnpu_kp_cast pc;
	struct vnpu_kp_unary pu;
	struct vnpu_kp_where pw;

	for (int i = 0; i < 4; i++)
		b[i] = kt_buffer(16 * 8);

	memset(&pf, 0, sizeof(pf));
	pf.out = kt_tensor(0, VNPU_DTYPE_I64, 2, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &pf, b, 4, 1),
			  VNPU_STATUS_OK);
	pf.out.strides[1] = 3; /* buffer too small for this stride */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &pf, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pf.out.strides[1] = 1;
	pf.out.buffer = 9;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &pf, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pf.out.buffer = 0;
	b[0].access = VNPU_ACCESS_READ;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &pf, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	b[0].access |= VNPU_ACCESS_WRITE;
	pf.out.dtype = 5; /* no such dtype */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_FILL, &pf, b, 4, 1),
			  VNPU_STATUS_UNSUPPORTED);

	memset(&pc, 0, sizeof(pc));
	pc.src = kt_tensor(0, VNPU_DTYPE_F32, 2, sizes, NULL);
	pc.out = kt_tensor(1, VNPU_DTYPE_BF16, 2, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &pc, b, 4, 1),
			  VNPU_STATUS_OK);
	pc.out = kt_tensor(1, VNPU_DTYPE_BF16, 2, other, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &pc, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pc.out = kt_tensor(1, VNPU_DTYPE_BF16, 2, sizes, NULL);
	b[0].access = VNPU_ACCESS_WRITE;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &pc, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	b[0].access |= VNPU_ACCESS_READ;
	pc.src = kt_tensor_fmt(0, VNPU_DTYPE_F32, VNPU_FORMAT_FRACTAL_NZ, 2,
			       sizes);
	b[0].size = 4096;
	b[0].ptr = realloc(b[0].ptr, 4096);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CAST, &pc, b, 4, 1),
			  VNPU_STATUS_UNSUPPORTED);

	memset(&pu, 0, sizeof(pu));
	pu.op = VNPU_UNARY_EXP;
	pu.src = kt_tensor(0, VNPU_DTYPE_F16, 2, sizes, NULL);
	pu.out = kt_tensor(1, VNPU_DTYPE_F16, 2, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_OK);
	pu.op = VNPU_UNARY_COUNT;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pu.op = VNPU_UNARY_EXP;
	pu.reserved = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pu.reserved = 0;
	pu.out.dtype = VNPU_DTYPE_F32; /* dtype differs */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pu.src.dtype = pu.out.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_UNSUPPORTED);
	pu.op = VNPU_UNARY_NEG;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_OK);
	pu.src.dtype = pu.out.dtype = VNPU_DTYPE_I64;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_OK);
	pu.src.dtype = pu.out.dtype = VNPU_DTYPE_BOOL; /* -bool: PyTorch refuses */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_UNSUPPORTED);
	pu.op = VNPU_UNARY_BITWISE_NOT; /* ~bool is its negation */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_OK);
	pu.src.dtype = pu.out.dtype = VNPU_DTYPE_F16; /* no floats */
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_UNSUPPORTED);
	pu.src.dtype = pu.out.dtype = VNPU_DTYPE_F64;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_UNSUPPORTED);
	for (uint32_t op = 0; op < VNPU_UNARY_BITWISE_NOT; op++) {
		pu.op = op; /* every float op takes F64 */
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
				  VNPU_STATUS_OK);
	}
	pu.op = VNPU_UNARY_NEG;
	pu.src.dtype = pu.out.dtype = VNPU_DTYPE_F32;
	pu.out.sizes[0] = 3;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_UNARY, &pu, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);

	memset(&pw, 0, sizeof(pw));
	pw.cond = kt_tensor(0, VNPU_DTYPE_BOOL, 2, sizes, NULL);
	pw.a = kt_tensor(1, VNPU_DTYPE_I64, 2, sizes, NULL);
	pw.b = kt_tensor(2, VNPU_DTYPE_I64, 2, sizes, NULL);
	pw.out = kt_tensor(3, VNPU_DTYPE_I64, 2, sizes, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_WHERE, &pw, b, 4, 1),
			  VNPU_STATUS_OK);
	pw.cond.dtype = VNPU_DTYPE_U8;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_WHERE, &pw, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pw.cond.dtype = VNPU_DTYPE_BOOL;
	pw.b.dtype = VNPU_DTYPE_I32;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_WHERE, &pw, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pw.b.dtype = VNPU_DTYPE_I64;
	pw.cond.sizes[1] = 2;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_WHERE, &pw, b, 4, 1),
			  VNPU_STATUS_INVALID_ARGS);
	pw.cond.sizes[1] = 4;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_WHERE, &pw, b, 3, 1),
			  VNPU_STATUS_INVALID_ARGS); /* out's buffer missing */
	for (int i = 0; i < 4; i++)
		kt_free(&b[i]);
}
END_TEST

static Suite *elementwise_suite(void)
{
	Suite *s = suite_create("elementwise");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_fill);
	tcase_add_test(tc, test_fill_wide_values);
	tcase_add_test(tc, test_range);
	tcase_add_test(tc, test_range_edges);
	tcase_add_test(tc, test_linspace);
	tcase_add_test(tc, test_range_mode);
	tcase_add_test(tc, test_cast);
	tcase_add_test(tc, test_cast_exact_cases);
	tcase_add_test(tc, test_cast_f64_rounding);
	tcase_add_test(tc, test_cast_f64_int);
	tcase_add_test(tc, test_unary_float);
	tcase_add_test(tc, test_unary_int);
	tcase_add_test(tc, test_unary_special_values);
	tcase_add_test(tc, test_unary_f64_special);
	tcase_add_test(tc, test_binary);
	tcase_add_test(tc, test_binary_dense_f32);
	tcase_add_test(tc, test_binary_dense_f32_large);
	tcase_add_test(tc, test_binary_int_edges);
	tcase_add_test(tc, test_binary_int64_edges);
	tcase_add_test(tc, test_binary_f64_special);
	tcase_add_test(tc, test_where);
	tcase_add_test(tc, test_binary_errors);
	tcase_add_test(tc, test_binary_int_ops_edges);
	tcase_add_test(tc, test_binary_float_ops_special);
	tcase_add_test(tc, test_binary_half_steps);
	tcase_add_test(tc, test_hard_activation_edges);
	tcase_add_test(tc, test_unary_rounding_sign);
	tcase_add_test(tc, test_binary_dtype_support);
	tcase_add_test(tc, test_other_errors);
	tcase_add_test(tc, test_scan);
	tcase_add_test(tc, test_scan_edges);
	tcase_add_test(tc, test_sort);
	tcase_add_test(tc, test_sort_validate);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(elementwise_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
