// SPDX-License-Identifier: MIT
/*
 * vnpu_format_cast on the device, against a host reference that packs and
 * unpacks with the closed-form GE/torch_npu mappings written out here
 * (not taken from kernels/layout.h):
 *
 *   padding    rank < 4 for NCHW-family formats: [] -> [1,1,1,1],
 *              [C] -> [1,C,1,1], [C,H] -> [1,C,H,1], [C,H,W] -> [1,C,H,W]
 *   NHWC       [N,C,H,W] at ((n*H + h)*W + w)*C + c
 *   NC1HWC0    [N,C,H,W] at (((n*C1 + c/C0)*H + h)*W + w)*C0 + c%C0
 *   FRACTAL_Z  [N,C,H,W] at (((((c/C0)*H + h)*W + w)*N1 + n/16)*16 + n%16)*C0
 *                           + c%C0
 *   FRACTAL_NZ [b...,M,K] at (((b*K1 + k/C0)*M1 + m/16)*16 + m%16)*C0 + k%C0
 *
 * C0 = 32 for 1-byte types, 16 otherwise; C1 = ceil(C/C0), N1 = ceil(N/16),
 * K1 = ceil(K/C0), M1 = ceil(M/16); padding is zero.
 *
 * Every cast writes into a destination pre-filled with a non-zero byte, and
 * the whole destination storage is compared with the reference, so padding
 * that was not zeroed and elements out of place both fail.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu_runtime.h"

#define FILL 0xa5
#define REPS 4 /* random shapes per format pair and dtype */

static const enum vnpu_dtype all_dtypes[] = {
	VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16, VNPU_DTYPE_I32,
	VNPU_DTYPE_I8,	VNPU_DTYPE_U8,	VNPU_DTYPE_BOOL, VNPU_DTYPE_I64,
};
#define NUM_DTYPES (sizeof(all_dtypes) / sizeof(all_dtypes[0]))

static const enum vnpu_format all_formats[] = {
	VNPU_FORMAT_NCHW,    VNPU_FORMAT_NHWC,	    VNPU_FORMAT_ND,
	VNPU_FORMAT_NC1HWC0, VNPU_FORMAT_FRACTAL_Z, VNPU_FORMAT_FRACTAL_NZ,
};
#define NUM_FORMATS (sizeof(all_formats) / sizeof(all_formats[0]))

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static size_t item(enum vnpu_dtype dt)
{
	switch (dt) {
	case VNPU_DTYPE_I64:
		return 8;
	case VNPU_DTYPE_F32:
	case VNPU_DTYPE_I32:
		return 4;
	case VNPU_DTYPE_F16:
	case VNPU_DTYPE_BF16:
		return 2;
	default:
		return 1;
	}
}

static uint64_t cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static bool is_internal(enum vnpu_format f)
{
	return f == VNPU_FORMAT_NC1HWC0 || f == VNPU_FORMAT_FRACTAL_Z ||
	       f == VNPU_FORMAT_FRACTAL_NZ;
}

static bool format_takes(enum vnpu_format f, enum vnpu_dtype dt, uint32_t nd)
{
	if (is_internal(f) && dt == VNPU_DTYPE_I64)
		return false;
	if (f == VNPU_FORMAT_FRACTAL_NZ)
		return nd >= 2 && nd <= 6;
	if (f == VNPU_FORMAT_ND || f == VNPU_FORMAT_NCHW)
		return true;
	return nd <= 4;
}

/* A tensor in the test: dtype, logical shape. */
struct shape {
	enum vnpu_dtype dt;
	uint32_t nd;
	int64_t s[VNPU_MAX_DIMS];
};

static uint64_t numel(const struct shape *t)
{
	uint64_t n = 1;

	for (uint32_t i = 0; i < t->nd; i++)
		n *= (uint64_t)t->s[i];
	return n;
}

static void pad4(const struct shape *t, uint64_t p[4])
{
	p[0] = p[1] = p[2] = p[3] = 1;
	for (uint32_t i = 0; i < t->nd; i++)
		p[t->nd == 4 ? i : i + 1] = (uint64_t)t->s[i];
}

/* Storage elements of t in format f. */
static uint64_t ref_storage_elems(const struct shape *t, enum vnpu_format f)
{
	uint64_t c0 = item(t->dt) == 1 ? 32 : 16, p[4], b = 1;

	switch (f) {
	case VNPU_FORMAT_NC1HWC0:
		pad4(t, p);
		return p[0] * cdiv(p[1], c0) * p[2] * p[3] * c0;
	case VNPU_FORMAT_FRACTAL_Z:
		pad4(t, p);
		return cdiv(p[1], c0) * p[2] * p[3] * cdiv(p[0], 16) * 16 * c0;
	case VNPU_FORMAT_FRACTAL_NZ:
		for (uint32_t i = 0; i + 2 < t->nd; i++)
			b *= (uint64_t)t->s[i];
		return b * cdiv((uint64_t)t->s[t->nd - 1], c0) *
		       cdiv((uint64_t)t->s[t->nd - 2], 16) * 16 * c0;
	default:
		return numel(t);
	}
}

/* Storage element index of the logical element with row-major index
 * `lin` of t in format f. */
static uint64_t ref_index(const struct shape *t, enum vnpu_format f,
			  uint64_t lin)
{
	uint64_t c0 = item(t->dt) == 1 ? 32 : 16, p[4];
	uint64_t n, c, h, w, b, m, k, c1, n1, k1, m1;

	if (f == VNPU_FORMAT_ND || f == VNPU_FORMAT_NCHW)
		return lin;
	if (f == VNPU_FORMAT_FRACTAL_NZ) {
		uint64_t M = (uint64_t)t->s[t->nd - 2];
		uint64_t K = (uint64_t)t->s[t->nd - 1];

		k = lin % K;
		m = lin / K % M;
		b = lin / K / M;
		k1 = cdiv(K, c0);
		m1 = cdiv(M, 16);
		return (((b * k1 + k / c0) * m1 + m / 16) * 16 + m % 16) * c0 +
		       k % c0;
	}
	pad4(t, p);
	w = lin % p[3];
	h = lin / p[3] % p[2];
	c = lin / p[3] / p[2] % p[1];
	n = lin / p[3] / p[2] / p[1];
	c1 = cdiv(p[1], c0);
	n1 = cdiv(p[0], 16);
	switch (f) {
	case VNPU_FORMAT_NHWC:
		return ((n * p[2] + h) * p[3] + w) * p[1] + c;
	case VNPU_FORMAT_NC1HWC0:
		return (((n * c1 + c / c0) * p[2] + h) * p[3] + w) * c0 +
		       c % c0;
	default: /* FRACTAL_Z */
		return (((((c / c0) * p[2] + h) * p[3] + w) * n1 + n / 16) *
				16 +
			n % 16) *
			       c0 +
		       c % c0;
	}
}

/* Packs row-major logical data into format f's storage (zero padding). */
static void *ref_pack(const struct shape *t, enum vnpu_format f,
		      const uint8_t *logical, size_t *bytes)
{
	size_t isz = item(t->dt);
	uint64_t n = numel(t);
	uint8_t *st;

	*bytes = ref_storage_elems(t, f) * isz;
	st = calloc(1, *bytes ? *bytes : 1);
	ck_assert_ptr_nonnull(st);
	for (uint64_t i = 0; i < n; i++)
		memcpy(st + ref_index(t, f, i) * isz, logical + i * isz, isz);
	return st;
}

static uint8_t *random_logical(const struct shape *t)
{
	size_t isz = item(t->dt), bytes = numel(t) * isz;
	uint8_t *p = malloc(bytes ? bytes : 1);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < bytes; i++)
		p[i] = t->dt == VNPU_DTYPE_BOOL ? (uint8_t)(rnd() & 1)
						: (uint8_t)rnd();
	/* a data byte equal to the destination's fill could hide an element
	 * the cast never wrote */
	for (size_t i = 0; i < bytes; i++)
		if (p[i] == FILL)
			p[i] = 0x5a;
	return p;
}

static vnpu_tensor_desc_t make_desc(const struct shape *t, enum vnpu_format f)
{
	vnpu_tensor_desc_t d;

	ck_assert_int_eq(vnpu_tensor_desc_create(&d, t->dt, t->nd, t->s, f),
			 VNPU_SUCCESS);
	return d;
}

static void *dev_alloc(size_t bytes)
{
	void *p;

	ck_assert_int_eq(vnpu_malloc(&p, bytes ? bytes : 1), VNPU_SUCCESS);
	return p;
}

/* Compares device storage with the reference, element by element. */
static void expect_storage(const void *dev, const uint8_t *want, size_t bytes,
			   const struct shape *t, enum vnpu_format from,
			   enum vnpu_format to)
{
	size_t isz = item(t->dt);
	uint8_t *got = malloc(bytes ? bytes : 1);

	ck_assert_ptr_nonnull(got);
	if (bytes)
		ck_assert_int_eq(vnpu_memcpy(got, dev, bytes, VNPU_MEMCPY_D2H),
				 VNPU_SUCCESS);
	for (size_t i = 0; i < bytes; i += isz)
		if (memcmp(got + i, want + i, isz) != 0)
			ck_abort_msg("cast %d -> %d dtype %d rank %u "
				     "[%lld,%lld,%lld,%lld,...]: storage "
				     "element %zu differs (byte 0x%02x, want "
				     "0x%02x)",
				     from, to, t->dt, t->nd, (long long)t->s[0],
				     (long long)t->s[1], (long long)t->s[2],
				     (long long)t->s[3], i / isz, got[i],
				     want[i]);
	free(got);
}

/* One cast a -> b and back to a, checked at both steps. */
struct trip {
	struct shape t;
	enum vnpu_format a, b;
	vnpu_tensor_desc_t da, db;
	uint8_t *logical, *want_a, *want_b;
	size_t bytes_a, bytes_b;
	void *src, *mid, *back;
};

static void trip_start(struct trip *r, vnpu_stream_t stream)
{
	size_t sz;

	r->logical = random_logical(&r->t);
	r->want_a = ref_pack(&r->t, r->a, r->logical, &r->bytes_a);
	r->want_b = ref_pack(&r->t, r->b, r->logical, &r->bytes_b);
	r->da = make_desc(&r->t, r->a);
	r->db = make_desc(&r->t, r->b);
	ck_assert_int_eq(vnpu_tensor_desc_storage_size(r->da, &sz),
			 VNPU_SUCCESS);
	ck_assert_uint_eq(sz, r->bytes_a);
	ck_assert_int_eq(vnpu_tensor_desc_storage_size(r->db, &sz),
			 VNPU_SUCCESS);
	ck_assert_uint_eq(sz, r->bytes_b);

	r->src = dev_alloc(r->bytes_a);
	r->mid = dev_alloc(r->bytes_b);
	r->back = dev_alloc(r->bytes_a);
	if (r->bytes_a) {
		ck_assert_int_eq(vnpu_memcpy(r->src, r->want_a, r->bytes_a,
					     VNPU_MEMCPY_H2D),
				 VNPU_SUCCESS);
		ck_assert_int_eq(vnpu_memset(r->back, FILL, r->bytes_a),
				 VNPU_SUCCESS);
	}
	if (r->bytes_b)
		ck_assert_int_eq(vnpu_memset(r->mid, FILL, r->bytes_b),
				 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_format_cast(r->da, r->src, r->db, r->mid, stream),
			 VNPU_SUCCESS);
	ck_assert_int_eq(
		vnpu_format_cast(r->db, r->mid, r->da, r->back, stream),
		VNPU_SUCCESS);
}

static void trip_finish(struct trip *r)
{
	expect_storage(r->mid, r->want_b, r->bytes_b, &r->t, r->a, r->b);
	expect_storage(r->back, r->want_a, r->bytes_a, &r->t, r->b, r->a);
	ck_assert_int_eq(vnpu_free(r->src), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_free(r->mid), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_free(r->back), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(r->da), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(r->db), VNPU_SUCCESS);
	free(r->logical);
	free(r->want_a);
	free(r->want_b);
}

static int64_t rnd_dim(void)
{
	static const int64_t special[] = {1, 15, 16, 17, 31, 33, 0};

	if (rnd() % 3 == 0)
		return special[rnd() % 7];
	return 1 + (int64_t)(rnd() % 40);
}

/* A random shape that both formats take, at most ~24k elements. */
static void random_shape(struct shape *t, enum vnpu_dtype dt,
			 enum vnpu_format a, enum vnpu_format b)
{
	t->dt = dt;
	do {
		t->nd = (uint32_t)(rnd() % 7);
		memset(t->s, 0, sizeof(t->s));
		for (uint32_t i = 0; i < t->nd; i++)
			t->s[i] = i + 2 < t->nd ? 1 + (int64_t)(rnd() % 3)
						: rnd_dim();
	} while (!format_takes(a, dt, t->nd) || !format_takes(b, dt, t->nd) ||
		 numel(t) > 24000);
}

static void setup(void)
{
	ck_assert_int_eq(vnpu_init(), VNPU_SUCCESS);
}

static void teardown(void)
{
	ck_assert_int_eq(vnpu_finalize(), VNPU_SUCCESS);
}

/* Every ordered pair of formats, every dtype each pair allows, random
 * shapes: a -> b -> a. */
START_TEST(round_trips)
{
	vnpu_stream_t stream;
	unsigned trips = 0;

	ck_assert_int_eq(vnpu_stream_create(&stream, VNPU_STREAM_PRIORITY_LOW),
			 VNPU_SUCCESS);
	for (size_t ai = 0; ai < NUM_FORMATS; ai++) {
		for (size_t bi = 0; bi < NUM_FORMATS; bi++) {
			for (size_t di = 0; di < NUM_DTYPES; di++) {
				enum vnpu_format a = all_formats[ai];
				enum vnpu_format b = all_formats[bi];
				struct trip r = {.a = a, .b = b};

				if ((is_internal(a) || is_internal(b)) &&
				    all_dtypes[di] == VNPU_DTYPE_I64)
					continue;
				for (int rep = 0; rep < REPS; rep++) {
					random_shape(&r.t, all_dtypes[di], a,
						     b);
					trip_start(&r, stream);
					ck_assert_int_eq(
						vnpu_stream_synchronize(stream),
						VNPU_SUCCESS);
					trip_finish(&r);
					trips++;
				}
			}
		}
	}
	ck_assert_int_eq(vnpu_stream_destroy(stream), VNPU_SUCCESS);
	/* 36 pairs x 7 dtypes + 9 plain pairs with I64, REPS shapes each */
	ck_assert_uint_eq(trips, REPS * (36 * 7 + 9));
}
END_TEST

/* Shapes chosen by hand: rank < 4 padding, int8 C0 = 32, sizes just over
 * and under a multiple of 16, through each internal format. */
START_TEST(chosen_shapes)
{
	static const struct {
		enum vnpu_dtype dt;
		enum vnpu_format a, b;
		uint32_t nd;
		int64_t s[4];
	} cases[] = {
		{VNPU_DTYPE_F16,
		 VNPU_FORMAT_ND,
		 VNPU_FORMAT_FRACTAL_NZ,
		 3,
		 {3, 100, 37}},
		{VNPU_DTYPE_I8,
		 VNPU_FORMAT_ND,
		 VNPU_FORMAT_FRACTAL_NZ,
		 2,
		 {17, 33}},
		{VNPU_DTYPE_I8,
		 VNPU_FORMAT_NCHW,
		 VNPU_FORMAT_NC1HWC0,
		 4,
		 {1, 40, 2, 2}},
		{VNPU_DTYPE_F32,
		 VNPU_FORMAT_NCHW,
		 VNPU_FORMAT_NC1HWC0,
		 1,
		 {17}},
		{VNPU_DTYPE_BF16,
		 VNPU_FORMAT_ND,
		 VNPU_FORMAT_NC1HWC0,
		 2,
		 {33, 5}},
		{VNPU_DTYPE_F16,
		 VNPU_FORMAT_NHWC,
		 VNPU_FORMAT_NC1HWC0,
		 3,
		 {17, 3, 5}},
		{VNPU_DTYPE_F16,
		 VNPU_FORMAT_NCHW,
		 VNPU_FORMAT_FRACTAL_Z,
		 4,
		 {20, 18, 3, 3}},
		{VNPU_DTYPE_U8,
		 VNPU_FORMAT_NCHW,
		 VNPU_FORMAT_FRACTAL_Z,
		 0,
		 {0}},
		{VNPU_DTYPE_F32,
		 VNPU_FORMAT_NCHW,
		 VNPU_FORMAT_NHWC,
		 4,
		 {2, 3, 4, 5}},
		{VNPU_DTYPE_I32, VNPU_FORMAT_NHWC, VNPU_FORMAT_ND, 2, {7, 9}},
		/* internal -> internal, through the base format */
		{VNPU_DTYPE_F16,
		 VNPU_FORMAT_NC1HWC0,
		 VNPU_FORMAT_FRACTAL_Z,
		 4,
		 {17, 33, 2, 3}},
		{VNPU_DTYPE_I8,
		 VNPU_FORMAT_FRACTAL_NZ,
		 VNPU_FORMAT_NC1HWC0,
		 3,
		 {33, 17, 5}},
		{VNPU_DTYPE_BOOL,
		 VNPU_FORMAT_FRACTAL_Z,
		 VNPU_FORMAT_FRACTAL_NZ,
		 4,
		 {17, 2, 15, 31}},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct trip r = {.a = cases[i].a, .b = cases[i].b};

		r.t.dt = cases[i].dt;
		r.t.nd = cases[i].nd;
		memcpy(r.t.s, cases[i].s, sizeof(cases[i].s));
		trip_start(&r, NULL);
		ck_assert_int_eq(vnpu_stream_synchronize(NULL), VNPU_SUCCESS);
		trip_finish(&r);
	}
}
END_TEST

/* The temporary of an internal -> internal cast is returned. */
START_TEST(through_base_frees_its_temporary)
{
	struct trip r = {.a = VNPU_FORMAT_FRACTAL_NZ,
			 .b = VNPU_FORMAT_FRACTAL_Z};
	struct vnpu_mem_stats before, after;

	r.t.dt = VNPU_DTYPE_F32;
	r.t.nd = 4;
	r.t.s[0] = 18;
	r.t.s[1] = 20;
	r.t.s[2] = 3;
	r.t.s[3] = 17;
	trip_start(&r, NULL);
	ck_assert_int_eq(vnpu_mem_stats(&before), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_format_cast(r.db, r.mid, r.da, r.back, NULL),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_mem_stats(&after), VNPU_SUCCESS);
	ck_assert_uint_eq(after.in_use, before.in_use);
	ck_assert_int_eq(vnpu_stream_synchronize(NULL), VNPU_SUCCESS);
	trip_finish(&r);
}
END_TEST

/* Casts on two streams in flight at once, checked after both finish. */
START_TEST(two_streams)
{
	static const enum vnpu_format pairs[][2] = {
		{VNPU_FORMAT_ND, VNPU_FORMAT_FRACTAL_NZ},
		{VNPU_FORMAT_NCHW, VNPU_FORMAT_NC1HWC0},
		{VNPU_FORMAT_NHWC, VNPU_FORMAT_FRACTAL_Z},
		{VNPU_FORMAT_NC1HWC0, VNPU_FORMAT_FRACTAL_NZ},
	};
	vnpu_stream_t s[2];
	struct trip r[8];

	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(vnpu_stream_create(&s[i], i), VNPU_SUCCESS);
	for (int i = 0; i < 8; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].a = pairs[i % 4][0];
		r[i].b = pairs[i % 4][1];
		r[i].t.dt = all_dtypes[i % 7];
		r[i].t.nd = 4;
		r[i].t.s[0] = 3 + i;
		r[i].t.s[1] = 17 + 5 * i;
		r[i].t.s[2] = 9;
		r[i].t.s[3] = 31 + i;
		trip_start(&r[i], s[i % 2]);
	}
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(vnpu_stream_synchronize(s[i]), VNPU_SUCCESS);
	for (int i = 0; i < 8; i++)
		trip_finish(&r[i]);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(vnpu_stream_destroy(s[i]), VNPU_SUCCESS);
}
END_TEST

/* ND <-> NCHW share one layout: a copy, or nothing in place. */
START_TEST(relabel)
{
	int64_t s[3] = {3, 5, 7};
	uint8_t host[105 * 4], got[105 * 4];
	vnpu_tensor_desc_t nd, nchw;
	void *a = dev_alloc(sizeof(host)), *b = dev_alloc(sizeof(host));

	for (size_t i = 0; i < sizeof(host); i++)
		host[i] = (uint8_t)rnd();
	ck_assert_int_eq(vnpu_tensor_desc_create(&nd, VNPU_DTYPE_F32, 3, s,
						 VNPU_FORMAT_ND),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_create(&nchw, VNPU_DTYPE_F32, 3, s,
						 VNPU_FORMAT_NCHW),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_memcpy(a, host, sizeof(host), VNPU_MEMCPY_H2D),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_format_cast(nd, a, nchw, a, NULL), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_format_cast(nd, a, nchw, b, NULL), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_memcpy(got, b, sizeof(got), VNPU_MEMCPY_D2H),
			 VNPU_SUCCESS);
	ck_assert_mem_eq(got, host, sizeof(host));
	ck_assert_int_eq(vnpu_memcpy(got, a, sizeof(got), VNPU_MEMCPY_D2H),
			 VNPU_SUCCESS);
	ck_assert_mem_eq(got, host, sizeof(host));
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nd), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nchw), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_free(a), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_free(b), VNPU_SUCCESS);
}
END_TEST

#define EXPECT_ERR(call, err)                                                  \
	do {                                                                   \
		(void)vnpu_get_last_error();                                   \
		ck_assert_int_eq((call), (err));                               \
		ck_assert_int_eq(vnpu_get_last_error(), (err));                \
	} while (0)

START_TEST(errors)
{
	int64_t s[2] = {20, 33}, s2[2] = {20, 34}, s3[3] = {1, 20, 33};
	vnpu_tensor_desc_t nd, nz, nz_f32, nz_other, nd3, dead;
	size_t nd_bytes, nz_bytes;
	vnpu_stream_t stream;
	void *src, *dst, *small, *freed;
	uint8_t host[64];

	ck_assert_int_eq(vnpu_tensor_desc_create(&nd, VNPU_DTYPE_F16, 2, s,
						 VNPU_FORMAT_ND),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_create(&nz, VNPU_DTYPE_F16, 2, s,
						 VNPU_FORMAT_FRACTAL_NZ),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_create(&nz_f32, VNPU_DTYPE_F32, 2, s,
						 VNPU_FORMAT_FRACTAL_NZ),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_create(&nz_other, VNPU_DTYPE_F16, 2,
						 s2, VNPU_FORMAT_FRACTAL_NZ),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_create(&nd3, VNPU_DTYPE_F16, 3, s3,
						 VNPU_FORMAT_ND),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_create(&dead, VNPU_DTYPE_F16, 2, s,
						 VNPU_FORMAT_ND),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(dead), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_storage_size(nd, &nd_bytes),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_storage_size(nz, &nz_bytes),
			 VNPU_SUCCESS);
	ck_assert_uint_eq(nd_bytes, 20 * 33 * 2);
	ck_assert_uint_eq(nz_bytes, 3 * 2 * 16 * 16 * 2);
	src = dev_alloc(nd_bytes);
	dst = dev_alloc(nz_bytes);
	small = dev_alloc(nd_bytes / 2);
	freed = dev_alloc(nz_bytes);
	ck_assert_int_eq(vnpu_free(freed), VNPU_SUCCESS);

	EXPECT_ERR(vnpu_format_cast(dead, src, nz, dst, NULL),
		   VNPU_ERROR_INVALID_HANDLE);
	EXPECT_ERR(vnpu_format_cast(nd, src, dead, dst, NULL),
		   VNPU_ERROR_INVALID_HANDLE);
	EXPECT_ERR(
		vnpu_format_cast((vnpu_tensor_desc_t)host, src, nz, dst, NULL),
		VNPU_ERROR_INVALID_HANDLE);
	EXPECT_ERR(vnpu_format_cast(nd, NULL, nz, dst, NULL),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_format_cast(nd, src, nz, NULL, NULL),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_format_cast(nd, src, nz_f32, dst, NULL),
		   VNPU_ERROR_INVALID_DESCRIPTOR);
	EXPECT_ERR(vnpu_format_cast(nd, src, nz_other, dst, NULL),
		   VNPU_ERROR_INVALID_DESCRIPTOR);
	/* [1,20,33] is not [20,33]: a cast never reshapes */
	EXPECT_ERR(vnpu_format_cast(nd3, src, nz, dst, NULL),
		   VNPU_ERROR_INVALID_DESCRIPTOR);
	/* the buffers must hold the descriptors' storage; the detail names
	 * the argument */
	EXPECT_ERR(vnpu_format_cast(nd, src, nz, small, NULL),
		   VNPU_ERROR_INVALID_DEVICE_POINTER);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "format cast: dst"));
	EXPECT_ERR(vnpu_format_cast(nd, small, nz, dst, NULL),
		   VNPU_ERROR_INVALID_DEVICE_POINTER);
	ck_assert_ptr_nonnull(strstr(vnpu_last_error_detail(), "format cast: src"));
	EXPECT_ERR(vnpu_format_cast(nz, dst, nd, small, NULL),
		   VNPU_ERROR_INVALID_DEVICE_POINTER);
	EXPECT_ERR(
		vnpu_format_cast(nd, (char *)src + nd_bytes / 2, nz, dst, NULL),
		VNPU_ERROR_INVALID_DEVICE_POINTER);
	EXPECT_ERR(vnpu_format_cast(nd, src, nz, freed, NULL),
		   VNPU_ERROR_INVALID_DEVICE_POINTER);
	EXPECT_ERR(vnpu_format_cast(nd, host, nz, dst, NULL),
		   VNPU_ERROR_INVALID_DEVICE_POINTER);
	/* the same-layout copy checks its buffers too */
	EXPECT_ERR(vnpu_format_cast(nz, dst, nz, small, NULL),
		   VNPU_ERROR_INVALID_DEVICE_POINTER);
	/* overlapping source and destination (not a relabel in place) */
	EXPECT_ERR(vnpu_format_cast(nd, dst, nz, dst, NULL),
		   VNPU_ERROR_INVALID_VALUE);
	{
		void *twice = dev_alloc(2 * nz_bytes);

		EXPECT_ERR(vnpu_format_cast(nz, twice, nz, (char *)twice + 32,
					    NULL),
			   VNPU_ERROR_INVALID_VALUE);
		ck_assert_int_eq(vnpu_free(twice), VNPU_SUCCESS);
	}
	/* a relabel in place is checked like any cast */
	EXPECT_ERR(vnpu_format_cast(nz, small, nz, small, NULL),
		   VNPU_ERROR_INVALID_DEVICE_POINTER);
	/* a destroyed stream */
	ck_assert_int_eq(vnpu_stream_create(&stream, VNPU_STREAM_PRIORITY_LOW),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_stream_destroy(stream), VNPU_SUCCESS);
	EXPECT_ERR(vnpu_format_cast(nd, src, nz, dst, stream),
		   VNPU_ERROR_INVALID_HANDLE);
	/* and the right call still works after all that */
	ck_assert_int_eq(vnpu_format_cast(nd, src, nz, dst, NULL),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_stream_synchronize(NULL), VNPU_SUCCESS);

	ck_assert_int_eq(vnpu_free(src), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_free(dst), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_free(small), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nd), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nz), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nz_f32), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nz_other), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nd3), VNPU_SUCCESS);
}
END_TEST

/* Without vnpu_init a cast has no device to run on. */
START_TEST(not_initialized)
{
	int64_t s[2] = {4, 4};
	vnpu_tensor_desc_t nd, nz;
	void *fake = (void *)(uintptr_t)0x10000;

	ck_assert_int_eq(vnpu_tensor_desc_create(&nd, VNPU_DTYPE_F16, 2, s,
						 VNPU_FORMAT_ND),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_create(&nz, VNPU_DTYPE_F16, 2, s,
						 VNPU_FORMAT_FRACTAL_NZ),
			 VNPU_SUCCESS);
	EXPECT_ERR(vnpu_format_cast(nd, fake, nz, (char *)fake + 4096, NULL),
		   VNPU_ERROR_NOT_INITIALIZED);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nd), VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(nz), VNPU_SUCCESS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("format_cast");
	TCase *dev = tcase_create("device");
	TCase *bare = tcase_create("bare");
	SRunner *sr;
	int failed;

	tcase_set_timeout(dev, 120);
	tcase_add_checked_fixture(dev, setup, teardown);
	tcase_add_test(dev, round_trips);
	tcase_add_test(dev, chosen_shapes);
	tcase_add_test(dev, through_base_frees_its_temporary);
	tcase_add_test(dev, two_streams);
	tcase_add_test(dev, relabel);
	tcase_add_test(dev, errors);
	suite_add_tcase(s, dev);
	tcase_add_test(bare, not_initialized);
	suite_add_tcase(s, bare);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
