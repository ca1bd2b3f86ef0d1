// SPDX-License-Identifier: MIT
/*
 * Tensor descriptors: storage shapes and sizes of every format and dtype
 * against values worked out by hand and against the torch_npu/GE rules
 * written out again here; handle validation; every error path.
 *
 *   rank < 4 in NCHW, NHWC, NC1HWC0, FRACTAL_Z:
 *              [] -> [1,1,1,1], [C] -> [1,C,1,1], [C,H] -> [1,C,H,1],
 *              [C,H,W] -> [1,C,H,W]
 *   NHWC       [N,C,H,W] stored as [N, H, W, C]
 *   NC1HWC0    [N,C,H,W] -> [N, C1, H, W, C0]
 *   FRACTAL_Z  [N,C,H,W] -> [C1*H*W, N1, 16, C0]
 *   FRACTAL_NZ [b...,M,K] -> [b..., K1, M1, 16, C0], rank 2..6
 *
 * C0 = 32 for 1-byte types, 16 otherwise; C1 = ceil(C/C0), N1 = ceil(N/16),
 * K1 = ceil(K/C0), M1 = ceil(M/16).
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu_runtime.h"

#define MAXS VNPU_STORAGE_MAX_DIMS

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

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static int64_t rnd_dim(void)
{
	static const int64_t special[] = {0, 1, 15, 16, 17, 31, 32, 33};

	if (rnd() % 2)
		return special[rnd() % 8];
	return 1 + (int64_t)(rnd() % 70);
}

static int64_t item(enum vnpu_dtype dt)
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

static int64_t cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* The expected storage shape, from the rules in the header comment. */
static uint32_t ref_storage(enum vnpu_format f, enum vnpu_dtype dt, uint32_t nd,
			    const int64_t *s, int64_t *out)
{
	int64_t c0 = item(dt) == 1 ? 32 : 16;
	int64_t p[4] = {1, 1, 1, 1};

	if (f != VNPU_FORMAT_ND && f != VNPU_FORMAT_FRACTAL_NZ && nd <= 4) {
		for (uint32_t i = 0; i < nd; i++)
			p[nd == 4 ? i : i + 1] = s[i];
	}
	switch (f) {
	case VNPU_FORMAT_NCHW:
		if (nd > 4) {
			memcpy(out, s, nd * sizeof(*s));
			return nd;
		}
		memcpy(out, p, sizeof(p));
		return 4;
	case VNPU_FORMAT_NHWC:
		out[0] = p[0];
		out[1] = p[2];
		out[2] = p[3];
		out[3] = p[1];
		return 4;
	case VNPU_FORMAT_NC1HWC0:
		out[0] = p[0];
		out[1] = cdiv(p[1], c0);
		out[2] = p[2];
		out[3] = p[3];
		out[4] = c0;
		return 5;
	case VNPU_FORMAT_FRACTAL_Z:
		out[0] = cdiv(p[1], c0) * p[2] * p[3];
		out[1] = cdiv(p[0], 16);
		out[2] = 16;
		out[3] = c0;
		return 4;
	case VNPU_FORMAT_FRACTAL_NZ:
		memcpy(out, s, (nd - 2) * sizeof(*s));
		out[nd - 2] = cdiv(s[nd - 1], c0);
		out[nd - 1] = cdiv(s[nd - 2], 16);
		out[nd] = 16;
		out[nd + 1] = c0;
		return nd + 2;
	default:
		memcpy(out, s, nd * sizeof(*s));
		return nd;
	}
}

static bool format_takes(enum vnpu_format f, enum vnpu_dtype dt, uint32_t nd)
{
	bool internal = f == VNPU_FORMAT_NC1HWC0 ||
			f == VNPU_FORMAT_FRACTAL_Z ||
			f == VNPU_FORMAT_FRACTAL_NZ;

	if (internal && dt == VNPU_DTYPE_I64)
		return false;
	if (f == VNPU_FORMAT_FRACTAL_NZ)
		return nd >= 2 && nd <= 6;
	if (f == VNPU_FORMAT_ND || f == VNPU_FORMAT_NCHW)
		return true;
	return nd <= 4;
}

/* Creates a descriptor and checks its storage shape and size against
 * `want` (want_nd dims). */
static void expect_storage(enum vnpu_format f, enum vnpu_dtype dt, uint32_t nd,
			   const int64_t *s, uint32_t want_nd,
			   const int64_t *want)
{
	vnpu_tensor_desc_t d;
	int64_t got[MAXS];
	uint32_t got_nd;
	size_t bytes;
	int64_t prod = item(dt);

	ck_assert_int_eq(vnpu_tensor_desc_create(&d, dt, nd, s, f),
			 VNPU_SUCCESS);
	ck_assert_int_eq(vnpu_tensor_desc_storage_shape(d, &got_nd, got),
			 VNPU_SUCCESS);
	ck_assert_uint_eq(got_nd, want_nd);
	for (uint32_t i = 0; i < want_nd; i++) {
		ck_assert_msg(got[i] == want[i],
			      "format %d dtype %d rank %u: storage dim %u is "
			      "%lld, want %lld",
			      f, dt, nd, i, (long long)got[i],
			      (long long)want[i]);
		prod *= want[i];
	}
	for (uint32_t i = want_nd; i < MAXS; i++)
		ck_assert_int_eq(got[i], 0);
	ck_assert_int_eq(vnpu_tensor_desc_storage_size(d, &bytes),
			 VNPU_SUCCESS);
	ck_assert_int_eq((int64_t)bytes, prod);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(d), VNPU_SUCCESS);
}

#define SHAPE(...)		     ((const int64_t[]){__VA_ARGS__})
#define EXPECT(f, dt, nd, s, wnd, w) expect_storage(f, dt, nd, s, wnd, w)

/* Worked by hand (docs/formats.md's examples among them). */
START_TEST(storage_shapes_by_hand)
{
	/* FRACTAL_NZ fp16 [3,100,37]: K1 = 3, M1 = 7 */
	EXPECT(VNPU_FORMAT_FRACTAL_NZ, VNPU_DTYPE_F16, 3, SHAPE(3, 100, 37), 5,
	       SHAPE(3, 3, 7, 16, 16));
	/* f32 keeps C0 = 16; int8 and u8 and bool use 32 */
	EXPECT(VNPU_FORMAT_FRACTAL_NZ, VNPU_DTYPE_F32, 2, SHAPE(17, 33), 4,
	       SHAPE(3, 2, 16, 16));
	EXPECT(VNPU_FORMAT_FRACTAL_NZ, VNPU_DTYPE_I8, 2, SHAPE(17, 33), 4,
	       SHAPE(2, 2, 16, 32));
	EXPECT(VNPU_FORMAT_FRACTAL_NZ, VNPU_DTYPE_BOOL, 6,
	       SHAPE(2, 1, 3, 1, 1, 1), 8, SHAPE(2, 1, 3, 1, 1, 1, 16, 32));
	/* NC1HWC0 f32 [2,20,3,5] -> [2,2,3,5,16]; int8 [1,40,2,2] C0 = 32 */
	EXPECT(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_F32, 4, SHAPE(2, 20, 3, 5), 5,
	       SHAPE(2, 2, 3, 5, 16));
	EXPECT(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_I8, 4, SHAPE(1, 40, 2, 2), 5,
	       SHAPE(1, 2, 2, 2, 32));
	/* FRACTAL_Z fp16 [20,18,3,3] -> [18,2,16,16] */
	EXPECT(VNPU_FORMAT_FRACTAL_Z, VNPU_DTYPE_F16, 4, SHAPE(20, 18, 3, 3), 4,
	       SHAPE(18, 2, 16, 16));
	EXPECT(VNPU_FORMAT_FRACTAL_Z, VNPU_DTYPE_U8, 4, SHAPE(33, 65, 1, 2), 4,
	       SHAPE(6, 3, 16, 32));
	/* rank < 4 padding: [C] -> [1,C,1,1], [C,H] -> [1,C,H,1], ... */
	EXPECT(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_F16, 1, SHAPE(17), 5,
	       SHAPE(1, 2, 1, 1, 16));
	EXPECT(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_BF16, 2, SHAPE(17, 5), 5,
	       SHAPE(1, 2, 5, 1, 16));
	EXPECT(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_I32, 3, SHAPE(3, 4, 5), 5,
	       SHAPE(1, 1, 4, 5, 16));
	EXPECT(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_F32, 0, NULL, 5,
	       SHAPE(1, 1, 1, 1, 16));
	EXPECT(VNPU_FORMAT_FRACTAL_Z, VNPU_DTYPE_F16, 1, SHAPE(40), 4,
	       SHAPE(3, 1, 16, 16));
	EXPECT(VNPU_FORMAT_FRACTAL_Z, VNPU_DTYPE_I8, 3, SHAPE(40, 3, 3), 4,
	       SHAPE(18, 1, 16, 32));
	EXPECT(VNPU_FORMAT_NCHW, VNPU_DTYPE_F32, 1, SHAPE(7), 4,
	       SHAPE(1, 7, 1, 1));
	EXPECT(VNPU_FORMAT_NCHW, VNPU_DTYPE_I64, 2, SHAPE(7, 9), 4,
	       SHAPE(1, 7, 9, 1));
	EXPECT(VNPU_FORMAT_NCHW, VNPU_DTYPE_F32, 0, NULL, 4, SHAPE(1, 1, 1, 1));
	EXPECT(VNPU_FORMAT_NCHW, VNPU_DTYPE_F16, 5, SHAPE(2, 3, 4, 5, 6), 5,
	       SHAPE(2, 3, 4, 5, 6));
	/* NHWC: physical order N, H, W, C */
	EXPECT(VNPU_FORMAT_NHWC, VNPU_DTYPE_F32, 4, SHAPE(2, 3, 4, 5), 4,
	       SHAPE(2, 4, 5, 3));
	EXPECT(VNPU_FORMAT_NHWC, VNPU_DTYPE_U8, 1, SHAPE(3), 4,
	       SHAPE(1, 1, 1, 3));
	EXPECT(VNPU_FORMAT_NHWC, VNPU_DTYPE_F16, 2, SHAPE(3, 5), 4,
	       SHAPE(1, 5, 1, 3));
	/* ND is never padded */
	EXPECT(VNPU_FORMAT_ND, VNPU_DTYPE_F32, 0, NULL, 0, NULL);
	EXPECT(VNPU_FORMAT_ND, VNPU_DTYPE_I64, 1, SHAPE(7), 1, SHAPE(7));
	/* empty tensors have empty storage */
	EXPECT(VNPU_FORMAT_FRACTAL_NZ, VNPU_DTYPE_F16, 2, SHAPE(0, 5), 4,
	       SHAPE(1, 0, 16, 16));
	EXPECT(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_F16, 4, SHAPE(2, 0, 3, 3), 5,
	       SHAPE(2, 0, 3, 3, 16));
}
END_TEST

/* Random shapes, every format and dtype, against ref_storage. */
START_TEST(storage_shapes_random)
{
	unsigned checked = 0;

	for (int iter = 0; iter < 300; iter++) {
		for (size_t fi = 0; fi < NUM_FORMATS; fi++) {
			for (size_t di = 0; di < NUM_DTYPES; di++) {
				enum vnpu_format f = all_formats[fi];
				enum vnpu_dtype dt = all_dtypes[di];
				uint32_t nd = (uint32_t)(rnd() % 9);
				int64_t s[8], want[MAXS];
				uint32_t wnd;

				if (!format_takes(f, dt, nd))
					continue;
				for (uint32_t i = 0; i < nd; i++)
					s[i] = nd > 5 ? (int64_t)(rnd() % 4)
						      : rnd_dim();
				wnd = ref_storage(f, dt, nd, s, want);
				expect_storage(f, dt, nd, s, wnd, want);
				checked++;
			}
		}
	}
	ck_assert_uint_gt(checked, 5000);
}
END_TEST

START_TEST(get_returns_the_logical_shape)
{
	int64_t s[3] = {5, 17, 33}, got[VNPU_MAX_DIMS];
	vnpu_tensor_desc_t d;
	enum vnpu_dtype dt;
	enum vnpu_format f;
	uint32_t nd;

	ck_assert_int_eq(vnpu_tensor_desc_create(&d, VNPU_DTYPE_BF16, 3, s,
						 VNPU_FORMAT_NC1HWC0),
			 VNPU_SUCCESS);
	/* the caller's array is copied */
	s[0] = 99;
	memset(got, 0x5a, sizeof(got));
	ck_assert_int_eq(vnpu_tensor_desc_get(d, &dt, &f, &nd, got),
			 VNPU_SUCCESS);
	ck_assert_int_eq(dt, VNPU_DTYPE_BF16);
	ck_assert_int_eq(f, VNPU_FORMAT_NC1HWC0);
	ck_assert_uint_eq(nd, 3);
	ck_assert_int_eq(got[0], 5);
	ck_assert_int_eq(got[1], 17);
	ck_assert_int_eq(got[2], 33);
	for (int i = 3; i < VNPU_MAX_DIMS; i++)
		ck_assert_int_eq(got[i], 0);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(d), VNPU_SUCCESS);
}
END_TEST

/* Expects `call` to fail with `err` and leave that as the last error. */
#define EXPECT_ERR(call, err)                                                  \
	do {                                                                   \
		(void)vnpu_get_last_error();                                   \
		ck_assert_int_eq((call), (err));                               \
		ck_assert_int_eq(vnpu_peek_last_error(), (err));               \
		ck_assert_ptr_nonnull(vnpu_last_error_detail());               \
		ck_assert_int_eq(vnpu_get_last_error(), (err));                \
		ck_assert_int_eq(vnpu_get_last_error(), VNPU_SUCCESS);         \
	} while (0)

START_TEST(create_errors)
{
	vnpu_tensor_desc_t d = NULL;
	int64_t s4[4] = {2, 3, 4, 5};
	int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	int64_t neg[3] = {2, -1, 3};
	int64_t huge[4] = {INT64_MAX, 2, 1, 1};
	int64_t big[4] = {1ll << 31, 1ll << 31, 4, 1};
	int64_t nz_big[2] = {INT64_MAX - 1, INT64_MAX - 1};

	EXPECT_ERR(vnpu_tensor_desc_create(NULL, VNPU_DTYPE_F32, 4, s4,
					   VNPU_FORMAT_ND),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F32, 4, NULL,
					   VNPU_FORMAT_ND),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F32, 9, s9,
					   VNPU_FORMAT_ND),
		   VNPU_ERROR_INVALID_VALUE);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, (enum vnpu_dtype)5, 4, s4,
					   VNPU_FORMAT_ND),
		   VNPU_ERROR_INVALID_VALUE);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, (enum vnpu_dtype) - 1, 4, s4,
					   VNPU_FORMAT_ND),
		   VNPU_ERROR_INVALID_VALUE);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F32, 4, s4,
					   (enum vnpu_format)5),
		   VNPU_ERROR_INVALID_VALUE);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F32, 4, s4,
					   (enum vnpu_format)30),
		   VNPU_ERROR_INVALID_VALUE);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F32, 3, neg,
					   VNPU_FORMAT_ND),
		   VNPU_ERROR_INVALID_VALUE);
	/* storage sizes that overflow 64 bits, in elements or bytes */
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F32, 4, huge,
					   VNPU_FORMAT_ND),
		   VNPU_ERROR_INVALID_VALUE);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F32, 4, big,
					   VNPU_FORMAT_NCHW),
		   VNPU_ERROR_INVALID_VALUE);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F16, 4, huge,
					   VNPU_FORMAT_FRACTAL_Z),
		   VNPU_ERROR_INVALID_VALUE);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F16, 2, nz_big,
					   VNPU_FORMAT_FRACTAL_NZ),
		   VNPU_ERROR_INVALID_VALUE);
	/* 8-byte types have no internal layout */
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_I64, 4, s4,
					   VNPU_FORMAT_NC1HWC0),
		   VNPU_ERROR_UNSUPPORTED);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_I64, 4, s4,
					   VNPU_FORMAT_FRACTAL_Z),
		   VNPU_ERROR_UNSUPPORTED);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_I64, 2, s4,
					   VNPU_FORMAT_FRACTAL_NZ),
		   VNPU_ERROR_UNSUPPORTED);
	/* ranks a format does not take */
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F16, 5, s9,
					   VNPU_FORMAT_NC1HWC0),
		   VNPU_ERROR_UNSUPPORTED);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F16, 5, s9,
					   VNPU_FORMAT_FRACTAL_Z),
		   VNPU_ERROR_UNSUPPORTED);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F16, 5, s9,
					   VNPU_FORMAT_NHWC),
		   VNPU_ERROR_UNSUPPORTED);
	EXPECT_ERR(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F16, 7, s9,
					   VNPU_FORMAT_FRACTAL_NZ),
		   VNPU_ERROR_UNSUPPORTED);
	/* no rank-0 or rank-1 NZ (newer torch_npu refuses them too) */
	for (uint32_t nd = 0; nd < 2; nd++) {
		ck_assert_int_eq(
			vnpu_tensor_desc_create(&d, VNPU_DTYPE_F16, nd, s4,
						VNPU_FORMAT_FRACTAL_NZ),
			VNPU_ERROR_UNSUPPORTED);
		ck_assert_ptr_nonnull(
			strstr(vnpu_last_error_detail(), "rank-1"));
		ck_assert_int_eq(vnpu_get_last_error(), VNPU_ERROR_UNSUPPORTED);
	}
	/* nothing was written on failure */
	ck_assert_ptr_null(d);
}
END_TEST

START_TEST(handle_errors)
{
	int64_t s[2] = {3, 4}, shape[VNPU_MAX_DIMS], st[MAXS];
	vnpu_tensor_desc_t d, d2;
	enum vnpu_dtype dt;
	enum vnpu_format f;
	uint32_t nd;
	size_t bytes;
	int local;
	vnpu_tensor_desc_t foreign[] = {
		NULL,
		(vnpu_tensor_desc_t)(uintptr_t)0x1234,
		(vnpu_tensor_desc_t)(void *)&local,
		(vnpu_tensor_desc_t)(uintptr_t)UINTPTR_MAX,
	};

	ck_assert_int_eq(vnpu_tensor_desc_create(&d, VNPU_DTYPE_F32, 2, s,
						 VNPU_FORMAT_ND),
			 VNPU_SUCCESS);
	EXPECT_ERR(vnpu_tensor_desc_get(d, NULL, &f, &nd, shape),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_tensor_desc_get(d, &dt, NULL, &nd, shape),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_tensor_desc_get(d, &dt, &f, NULL, shape),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_tensor_desc_get(d, &dt, &f, &nd, NULL),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_tensor_desc_storage_shape(d, NULL, st),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_tensor_desc_storage_shape(d, &nd, NULL),
		   VNPU_ERROR_NULL_POINTER);
	EXPECT_ERR(vnpu_tensor_desc_storage_size(d, NULL),
		   VNPU_ERROR_NULL_POINTER);
	ck_assert_int_eq(vnpu_tensor_desc_destroy(d), VNPU_SUCCESS);

	/* destroyed: every call refuses it, the slot's next user does not
	 * answer to the old handle */
	EXPECT_ERR(vnpu_tensor_desc_destroy(d), VNPU_ERROR_INVALID_HANDLE);
	EXPECT_ERR(vnpu_tensor_desc_get(d, &dt, &f, &nd, shape),
		   VNPU_ERROR_INVALID_HANDLE);
	EXPECT_ERR(vnpu_tensor_desc_storage_shape(d, &nd, st),
		   VNPU_ERROR_INVALID_HANDLE);
	EXPECT_ERR(vnpu_tensor_desc_storage_size(d, &bytes),
		   VNPU_ERROR_INVALID_HANDLE);
	ck_assert_int_eq(vnpu_tensor_desc_create(&d2, VNPU_DTYPE_F16, 2, s,
						 VNPU_FORMAT_ND),
			 VNPU_SUCCESS);
	ck_assert_ptr_ne(d, d2);
	EXPECT_ERR(vnpu_tensor_desc_storage_size(d, &bytes),
		   VNPU_ERROR_INVALID_HANDLE);
	EXPECT_ERR(vnpu_tensor_desc_destroy(d), VNPU_ERROR_INVALID_HANDLE);
	ck_assert_int_eq(vnpu_tensor_desc_storage_size(d2, &bytes),
			 VNPU_SUCCESS);
	ck_assert_uint_eq(bytes, 24);

	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		EXPECT_ERR(vnpu_tensor_desc_storage_size(foreign[i], &bytes),
			   VNPU_ERROR_INVALID_HANDLE);
		EXPECT_ERR(
			vnpu_tensor_desc_get(foreign[i], &dt, &f, &nd, shape),
			VNPU_ERROR_INVALID_HANDLE);
		EXPECT_ERR(vnpu_tensor_desc_destroy(foreign[i]),
			   VNPU_ERROR_INVALID_HANDLE);
	}
	ck_assert_int_eq(vnpu_tensor_desc_destroy(d2), VNPU_SUCCESS);
}
END_TEST

/* Several threads create, check and destroy descriptors at once; each one
 * must always see its own. */
#define THREADS	   4
#define PER_THREAD 2000

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	vnpu_tensor_desc_t live[16] = {0};

	for (int i = 0; i < PER_THREAD; i++) {
		int slot = i % 16;
		int64_t s[2] = {(int64_t)id + 1, i};
		enum vnpu_dtype dt;
		enum vnpu_format f;
		uint32_t nd;
		int64_t got[VNPU_MAX_DIMS];

		if (live[slot]) {
			if (vnpu_tensor_desc_get(live[slot], &dt, &f, &nd,
						 got) != VNPU_SUCCESS ||
			    got[0] != (int64_t)id + 1 || got[1] != i - 16)
				return (void *)1;
			if (vnpu_tensor_desc_destroy(live[slot]) !=
			    VNPU_SUCCESS)
				return (void *)1;
			if (vnpu_tensor_desc_destroy(live[slot]) !=
			    VNPU_ERROR_INVALID_HANDLE)
				return (void *)1;
		}
		if (vnpu_tensor_desc_create(&live[slot], VNPU_DTYPE_F16, 2, s,
					    VNPU_FORMAT_FRACTAL_NZ) !=
		    VNPU_SUCCESS)
			return (void *)1;
	}
	for (int slot = 0; slot < 16; slot++)
		if (vnpu_tensor_desc_destroy(live[slot]) != VNPU_SUCCESS)
			return (void *)1;
	return NULL;
}

START_TEST(threads)
{
	pthread_t t[THREADS];

	for (uintptr_t i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, churn, (void *)i),
				 0);
	for (int i = 0; i < THREADS; i++) {
		void *ret;

		ck_assert_int_eq(pthread_join(t[i], &ret), 0);
		ck_assert_ptr_null(ret);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tensor_desc");
	TCase *tc = tcase_create("tensor_desc");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, storage_shapes_by_hand);
	tcase_add_test(tc, storage_shapes_random);
	tcase_add_test(tc, get_returns_the_logical_shape);
	tcase_add_test(tc, create_errors);
	tcase_add_test(tc, handle_errors);
	tcase_add_test(tc, threads);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
