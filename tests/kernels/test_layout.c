// SPDX-License-Identifier: MIT
/*
 * TRANSDATA and the internal formats' geometry. Every storage element the
 * kernel writes is checked against the closed-form GE/torch_npu mappings
 * written out again here (not taken from kernels/layout.h):
 *
 *   NC1HWC0    [N,C,H,W] -> [N, C1, H, W, C0]
 *              (((n*C1 + c/C0)*H + h)*W + w)*C0 + c%C0
 *   FRACTAL_Z  [N,C,H,W] -> [C1*H*W, N1, 16, C0]
 *              (((((c/C0)*H + h)*W + w)*N1 + n/16)*16 + n%16)*C0 + c%C0
 *   FRACTAL_NZ [b...,M,K] -> [b..., K1, M1, 16, C0]
 *              (((b*K1 + k/C0)*M1 + m/16)*16 + m%16)*C0 + k%C0
 *
 * with C0 = 32 for 1-byte types and 16 otherwise, C1 = ceil(C/C0),
 * N1 = ceil(N/16), K1 = ceil(K/C0), M1 = ceil(M/16). Padding is zero.
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "layout.h" /* the ISA knob only: formulas are written out here */
#include "tensor.h"

/* The definition itself, to check the registry hands it out. */
extern const struct vnpu_kernel_def vnpu_kernel_transdata;

#define FILL_BYTE 0xa5 /* kt_buffer's fill: bytes nobody wrote */
#define GUARD	  64   /* bytes after a storage region that must stay intact */

static const uint32_t all_dtypes[] = {
	VNPU_DTYPE_F32, VNPU_DTYPE_F16, VNPU_DTYPE_BF16, VNPU_DTYPE_I32,
	VNPU_DTYPE_I8,	VNPU_DTYPE_U8,	VNPU_DTYPE_BOOL, VNPU_DTYPE_I16,
};
#define NUM_DTYPES (sizeof(all_dtypes) / sizeof(all_dtypes[0]))

static const uint32_t block_counts[] = {1, 3, 7};

static size_t itemsize(uint32_t dtype)
{
	switch (dtype) {
	case VNPU_DTYPE_F32:
	case VNPU_DTYPE_I32:
		return 4;
	case VNPU_DTYPE_F16:
	case VNPU_DTYPE_BF16:
	case VNPU_DTYPE_I16:
		return 2;
	default:
		return 1;
	}
}

static int64_t cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int64_t ref_c0(uint32_t dtype)
{
	return itemsize(dtype) == 1 ? 32 : 16;
}

/* Reference storage shape, written from the research notes. */
static uint32_t ref_storage_shape(uint32_t format, uint32_t dtype,
				  uint32_t ndim, const int64_t *s, int64_t *out)
{
	int64_t c0 = ref_c0(dtype);

	switch (format) {
	case VNPU_FORMAT_NC1HWC0:
		out[0] = s[0];
		out[1] = cdiv(s[1], c0);
		out[2] = s[2];
		out[3] = s[3];
		out[4] = c0;
		return 5;
	case VNPU_FORMAT_FRACTAL_Z:
		out[0] = cdiv(s[1], c0) * s[2] * s[3];
		out[1] = cdiv(s[0], 16);
		out[2] = 16;
		out[3] = c0;
		return 4;
	default: /* FRACTAL_NZ */
		for (uint32_t i = 0; i + 2 < ndim; i++)
			out[i] = s[i];
		out[ndim - 2] = cdiv(s[ndim - 1], c0);
		out[ndim - 1] = cdiv(s[ndim - 2], 16);
		out[ndim] = 16;
		out[ndim + 1] = c0;
		return ndim + 2;
	}
}

static int64_t ref_storage_numel(uint32_t format, uint32_t dtype, uint32_t ndim,
				 const int64_t *s)
{
	int64_t shape[VNPU_MAX_DIMS + 2], n = 1;
	uint32_t sn = ref_storage_shape(format, dtype, ndim, s, shape);

	for (uint32_t i = 0; i < sn; i++)
		n *= shape[i];
	return n;
}

/* The closed forms from the file comment. */
static int64_t ref_index(uint32_t format, uint32_t dtype, uint32_t ndim,
			 const int64_t *s, const int64_t *idx)
{
	int64_t c0 = ref_c0(dtype);

	if (format == VNPU_FORMAT_NC1HWC0) {
		int64_t n = idx[0], c = idx[1], h = idx[2], w = idx[3];
		int64_t c1n = cdiv(s[1], c0);

		return (((n * c1n + c / c0) * s[2] + h) * s[3] + w) * c0 +
		       c % c0;
	}
	if (format == VNPU_FORMAT_FRACTAL_Z) {
		int64_t n = idx[0], c = idx[1], h = idx[2], w = idx[3];
		int64_t n1n = cdiv(s[0], 16);

		return (((((c / c0) * s[2] + h) * s[3] + w) * n1n + n / 16) *
				16 +
			n % 16) *
			       c0 +
		       c % c0;
	}
	/* FRACTAL_NZ: fold the batch dims row-major */
	int64_t b = 0, m = idx[ndim - 2], k = idx[ndim - 1];
	int64_t mm = s[ndim - 2], kk = s[ndim - 1];

	for (uint32_t i = 0; i + 2 < ndim; i++)
		b = b * s[i] + idx[i];
	return (((b * cdiv(kk, c0) + k / c0) * cdiv(mm, 16) + m / 16) * 16 +
		m % 16) *
		       c0 +
	       k % c0;
}

static int64_t numel_of(uint32_t ndim, const int64_t *s)
{
	int64_t n = 1;

	for (uint32_t i = 0; i < ndim; i++)
		n *= s[i];
	return n;
}

static void unravel(int64_t linear, uint32_t ndim, const int64_t *s,
		    int64_t *idx)
{
	for (uint32_t i = ndim; i-- > 0;) {
		idx[i] = linear % s[i];
		linear /= s[i];
	}
}

static int64_t plain_offset(const struct vnpu_tensor *t, const int64_t *idx)
{
	int64_t off = t->offset;

	for (uint32_t i = 0; i < t->ndim; i++)
		off += idx[i] * t->strides[i];
	return off;
}

/* How a test lays out a plain side. The gapped 4-D layouts keep (h, w)
 * or c contiguous, as the kernel's transposing paths need, and put random
 * gaps between the other dims plus a random offset. */
enum plain_layout {
	PLAIN_RANDOM,	   /* random dim order, gaps and offset */
	PLAIN_DENSE,	   /* row-major */
	PLAIN_GAPPED_NCHW, /* w stride 1, h stride W, gaps above */
	PLAIN_GAPPED_NHWC, /* c stride 1, gaps above */
	PLAIN_GAPPED_N,	   /* dense (c, h, w), gaps between images */
};

static void gapped_4d(struct vnpu_tensor *t, const int64_t *s,
		      enum plain_layout layout)
{
	int64_t *st = t->strides;

	if (layout == PLAIN_GAPPED_NCHW || layout == PLAIN_GAPPED_N) {
		st[3] = 1;
		st[2] = s[3];
		st[1] = s[2] * s[3] +
			(layout == PLAIN_GAPPED_N ? 0 : kt_rand_range(0, 3));
		st[0] = s[1] * st[1] + kt_rand_range(0, 3);
	} else {
		st[1] = 1;
		st[3] = s[1] + kt_rand_range(0, 2);
		st[2] = s[3] * st[3] + kt_rand_range(0, 2);
		st[0] = s[2] * st[2] + kt_rand_range(0, 3);
	}
	t->offset = kt_rand_range(0, 5);
}

/* A plain tensor in `layout` (see above; the gapped ones are 4-D).
 * Returns the buffer bytes it needs. */
static uint64_t random_plain(struct vnpu_tensor *t, uint32_t buffer,
			     uint32_t dtype, uint32_t ndim, const int64_t *s,
			     enum plain_layout layout)
{
	uint32_t perm[VNPU_MAX_DIMS];
	int64_t stride = 1, last = 0;

	for (uint32_t i = 0; i < ndim; i++)
		perm[i] = i;
	for (uint32_t i = ndim; layout == PLAIN_RANDOM && i > 1; i--) {
		uint32_t j = kt_rand() % i, tmp = perm[i - 1];

		perm[i - 1] = perm[j];
		perm[j] = tmp;
	}
	*t = kt_tensor(buffer, dtype, ndim, s, NULL);
	if (layout == PLAIN_RANDOM) {
		for (uint32_t k = ndim; k-- > 0;) {
			uint32_t d = perm[k];

			stride += kt_rand_range(0, 2);
			t->strides[d] = stride;
			stride *= s[d] > 0 ? s[d] : 1;
		}
		t->offset = kt_rand_range(0, 5);
	} else if (layout != PLAIN_DENSE) {
		ck_assert_uint_eq(ndim, 4);
		gapped_4d(t, s, layout);
	}
	for (uint32_t i = 0; i < ndim; i++)
		if (s[i] > 0)
			last += (s[i] - 1) * t->strides[i];
	return (uint64_t)(t->offset + last + 1) * itemsize(dtype);
}

static void random_bytes(struct vnpu_kbuf *b, uint32_t dtype)
{
	uint8_t *p = b->ptr;

	for (uint64_t i = 0; i < b->size; i++)
		p[i] = dtype == VNPU_DTYPE_BOOL ? kt_rand() & 1 : kt_rand();
}

static uint32_t launch(const struct vnpu_tensor *src,
		       const struct vnpu_tensor *out, struct vnpu_kbuf *bufs,
		       uint32_t nbufs, uint32_t nblocks)
{
	struct vnpu_kp_transdata kp;

	memset(&kp, 0, sizeof(kp));
	kp.src = *src;
	kp.out = *out;
	return kt_launch(VNPU_KERNEL_TRANSDATA, &kp, bufs, nbufs, nblocks);
}

/*
 * Plain -> internal. The expected storage is built from the closed form
 * (each index hit at most once, unhit ones are padding = 0) and compared
 * byte for byte; the bytes before `offset` and after the storage must
 * keep kt_buffer's fill.
 */
static void check_pack(uint32_t format, uint32_t dtype, uint32_t ndim,
		       const int64_t *s, uint32_t nblocks,
		       enum plain_layout layout)
{
	size_t isz = itemsize(dtype);
	int64_t numel = numel_of(ndim, s);
	int64_t snumel = ref_storage_numel(format, dtype, ndim, s);
	int64_t st_off = kt_rand_range(0, 3), idx[VNPU_MAX_DIMS];
	struct vnpu_tensor src, out;
	struct vnpu_kbuf bufs[2];
	uint8_t *expect = calloc((size_t)snumel + 1, isz);
	uint8_t *hit = calloc((size_t)snumel + 1, 1);
	const uint8_t *got;

	ck_assert_ptr_nonnull(expect);
	ck_assert_ptr_nonnull(hit);
	bufs[0] = kt_buffer(random_plain(&src, 0, dtype, ndim, s, layout));
	random_bytes(&bufs[0], dtype);
	bufs[1] = kt_buffer((uint64_t)(st_off + snumel) * isz + GUARD);
	out = kt_tensor_fmt(1, dtype, format, ndim, s);
	out.offset = st_off;

	for (int64_t i = 0; i < numel; i++) {
		int64_t r;

		unravel(i, ndim, s, idx);
		r = ref_index(format, dtype, ndim, s, idx);
		ck_assert_int_ge(r, 0);
		ck_assert_int_lt(r, snumel);
		ck_assert_msg(!hit[r], "two elements map to storage %lld",
			      (long long)r);
		hit[r] = 1;
		memcpy(expect + r * isz,
		       (uint8_t *)bufs[0].ptr + plain_offset(&src, idx) * isz,
		       isz);
	}

	ck_assert_uint_eq(launch(&src, &out, bufs, 2, nblocks), VNPU_STATUS_OK);
	got = bufs[1].ptr;
	for (int64_t b = 0; b < st_off * (int64_t)isz; b++)
		ck_assert_uint_eq(got[b], FILL_BYTE);
	got += st_off * isz;
	for (int64_t e = 0; e < snumel; e++) {
		if (memcmp(got + e * isz, expect + e * isz, isz) == 0)
			continue;
		ck_abort_msg("fmt %u dtype %u storage elem %lld (%s): got %02x "
			     "want %02x",
			     format, dtype, (long long)e,
			     hit[e] ? "data" : "padding", got[e * isz],
			     expect[e * isz]);
	}
	for (int64_t b = 0; b < GUARD; b++)
		ck_assert_uint_eq(got[snumel * isz + b], FILL_BYTE);

	kt_free(&bufs[0]);
	kt_free(&bufs[1]);
	free(expect);
	free(hit);
}

/*
 * Internal -> plain from random storage (padding holds garbage that must
 * be ignored): every logical element equals storage[closed form], and no
 * byte of the plain buffer outside its elements is written.
 */
static void check_unpack(uint32_t format, uint32_t dtype, uint32_t ndim,
			 const int64_t *s, uint32_t nblocks,
			 enum plain_layout layout)
{
	size_t isz = itemsize(dtype);
	int64_t numel = numel_of(ndim, s);
	int64_t snumel = ref_storage_numel(format, dtype, ndim, s);
	int64_t st_off = kt_rand_range(0, 3), idx[VNPU_MAX_DIMS];
	struct vnpu_tensor src, out;
	struct vnpu_kbuf bufs[2];
	uint8_t *touched, *got;
	const uint8_t *st;

	bufs[0] = kt_buffer((uint64_t)(st_off + snumel) * isz);
	random_bytes(&bufs[0], dtype);
	src = kt_tensor_fmt(0, dtype, format, ndim, s);
	src.offset = st_off;
	bufs[1] = kt_buffer(random_plain(&out, 1, dtype, ndim, s, layout));
	touched = calloc(bufs[1].size, 1);
	ck_assert_ptr_nonnull(touched);

	ck_assert_uint_eq(launch(&src, &out, bufs, 2, nblocks), VNPU_STATUS_OK);
	st = (const uint8_t *)bufs[0].ptr + st_off * isz;
	got = bufs[1].ptr;
	for (int64_t i = 0; i < numel; i++) {
		int64_t r, off;

		unravel(i, ndim, s, idx);
		r = ref_index(format, dtype, ndim, s, idx);
		off = plain_offset(&out, idx) * (int64_t)isz;
		ck_assert_msg(memcmp(got + off, st + r * isz, isz) == 0,
			      "fmt %u dtype %u logical %lld", format, dtype,
			      (long long)i);
		memset(touched + off, 1, isz);
	}
	for (uint64_t b = 0; b < bufs[1].size; b++)
		if (!touched[b])
			ck_assert_uint_eq(got[b], FILL_BYTE);

	kt_free(&bufs[0]);
	kt_free(&bufs[1]);
	free(touched);
}

/* plain (random strides) -> internal -> plain (other random strides) */
static void check_round_trip(uint32_t format, uint32_t dtype, uint32_t ndim,
			     const int64_t *s, uint32_t nblocks)
{
	size_t isz = itemsize(dtype);
	int64_t numel = numel_of(ndim, s), idx[VNPU_MAX_DIMS];
	struct vnpu_tensor a, mid, b;
	struct vnpu_kbuf bufs[3];

	bufs[0] = kt_buffer(random_plain(&a, 0, dtype, ndim, s, PLAIN_RANDOM));
	random_bytes(&bufs[0], dtype);
	bufs[1] = kt_buffer(
		(uint64_t)ref_storage_numel(format, dtype, ndim, s) * isz);
	mid = kt_tensor_fmt(1, dtype, format, ndim, s);
	bufs[2] = kt_buffer(random_plain(&b, 2, dtype, ndim, s, PLAIN_RANDOM));

	ck_assert_uint_eq(launch(&a, &mid, bufs, 3, nblocks), VNPU_STATUS_OK);
	ck_assert_uint_eq(launch(&mid, &b, bufs, 3, nblocks), VNPU_STATUS_OK);
	for (int64_t i = 0; i < numel; i++) {
		unravel(i, ndim, s, idx);
		ck_assert(memcmp((uint8_t *)bufs[2].ptr +
					 plain_offset(&b, idx) * isz,
				 (uint8_t *)bufs[0].ptr +
					 plain_offset(&a, idx) * isz,
				 isz) == 0);
	}
	for (int i = 0; i < 3; i++)
		kt_free(&bufs[i]);
}

/* Sizes the fractal edges care about, plus random ones. */
static int64_t edge_size(int64_t max_random)
{
	static const int64_t edges[] = {1, 2, 15, 16, 17, 31, 32, 33};

	if (kt_rand() % 3 == 0)
		return kt_rand_range(1, max_random);
	return edges[kt_rand() % (sizeof(edges) / sizeof(edges[0]))];
}

static uint32_t random_shape(uint32_t format, int64_t *s)
{
	if (format == VNPU_FORMAT_FRACTAL_NZ) {
		uint32_t ndim = 2 + kt_rand() % 3;

		for (uint32_t i = 0; i + 2 < ndim; i++)
			s[i] = kt_rand_range(1, 3);
		s[ndim - 2] = edge_size(70);
		s[ndim - 1] = edge_size(70);
		return ndim;
	}
	s[0] = edge_size(40);
	s[1] = edge_size(70);
	s[2] = kt_rand_range(1, 7);
	s[3] = kt_rand_range(1, 9);
	if (kt_rand() % 4 == 0)
		s[3] = 17; /* rows >= 16: the transposing tile path */
	return 4;
}

static const uint32_t internal_formats[] = {
	VNPU_FORMAT_NC1HWC0,
	VNPU_FORMAT_FRACTAL_Z,
	VNPU_FORMAT_FRACTAL_NZ,
};

START_TEST(test_registered)
{
	ck_assert_ptr_eq(vnpu_kernel_find(VNPU_KERNEL_TRANSDATA),
			 &vnpu_kernel_transdata);
	ck_assert_ptr_eq(vnpu_kernel_find_name("transdata"),
			 &vnpu_kernel_transdata);
	ck_assert_uint_eq(vnpu_kernel_transdata.params_size,
			  sizeof(struct vnpu_kp_transdata));
}
END_TEST

START_TEST(test_storage_shapes)
{
	/* hand-computed storage shapes */
	static const struct {
		uint32_t format, dtype, ndim;
		int64_t sizes[4];
		uint32_t sn;
		int64_t storage[6];
	} cases[] = {
		/* the research notes' example: 11100 elements in 16128 */
		{VNPU_FORMAT_FRACTAL_NZ,
		 VNPU_DTYPE_F16,
		 3,
		 {3, 100, 37},
		 5,
		 {3, 3, 7, 16, 16}},
		{VNPU_FORMAT_FRACTAL_NZ,
		 VNPU_DTYPE_F32,
		 2,
		 {16, 16},
		 4,
		 {1, 1, 16, 16}},
		{VNPU_FORMAT_FRACTAL_NZ,
		 VNPU_DTYPE_I8,
		 2,
		 {17, 33},
		 4,
		 {2, 2, 16, 32}},
		{VNPU_FORMAT_FRACTAL_NZ,
		 VNPU_DTYPE_BF16,
		 2,
		 {1, 1},
		 4,
		 {1, 1, 16, 16}},
		{VNPU_FORMAT_NC1HWC0,
		 VNPU_DTYPE_F32,
		 4,
		 {2, 20, 3, 5},
		 5,
		 {2, 2, 3, 5, 16}},
		{VNPU_FORMAT_NC1HWC0,
		 VNPU_DTYPE_U8,
		 4,
		 {1, 40, 2, 2},
		 5,
		 {1, 2, 2, 2, 32}},
		{VNPU_FORMAT_NC1HWC0,
		 VNPU_DTYPE_F16,
		 4,
		 {32, 64, 56, 56},
		 5,
		 {32, 4, 56, 56, 16}},
		{VNPU_FORMAT_FRACTAL_Z,
		 VNPU_DTYPE_F16,
		 4,
		 {20, 18, 3, 3},
		 4,
		 {18, 2, 16, 16}},
		{VNPU_FORMAT_FRACTAL_Z,
		 VNPU_DTYPE_I8,
		 4,
		 {5, 40, 1, 1},
		 4,
		 {2, 1, 16, 32}},
		{VNPU_FORMAT_ND,
		 VNPU_DTYPE_F16,
		 3,
		 {3, 100, 37},
		 3,
		 {3, 100, 37}},
	};
	int64_t storage[VNPU_MAX_DIMS + 2];
	uint32_t sn;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert(vnpu_storage_shape(cases[i].format, cases[i].dtype,
					     cases[i].ndim, cases[i].sizes,
					     storage, &sn));
		ck_assert_uint_eq(sn, cases[i].sn);
		for (uint32_t d = 0; d < sn; d++)
			ck_assert_int_eq(storage[d], cases[i].storage[d]);
	}

	/* ranks and dtypes without a storage shape */
	int64_t s[VNPU_MAX_DIMS] = {4, 5, 6, 7, 8, 9, 10, 11};

	ck_assert(!vnpu_storage_shape(VNPU_FORMAT_FRACTAL_NZ, VNPU_DTYPE_F16, 1,
				      s, storage, &sn));
	ck_assert(!vnpu_storage_shape(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_F16, 3, s,
				      storage, &sn));
	ck_assert(!vnpu_storage_shape(VNPU_FORMAT_FRACTAL_Z, VNPU_DTYPE_F16, 5,
				      s, storage, &sn));
	ck_assert(!vnpu_storage_shape(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_I64, 4, s,
				      storage, &sn));

	/* random shapes against the reference */
	kt_seed(11);
	for (int iter = 0; iter < 300; iter++) {
		uint32_t format = internal_formats[iter % 3];
		uint32_t dtype = all_dtypes[kt_rand() % NUM_DTYPES];
		int64_t ref[VNPU_MAX_DIMS + 2];
		uint32_t ndim = random_shape(format, s);
		uint32_t rn = ref_storage_shape(format, dtype, ndim, s, ref);

		ck_assert(vnpu_storage_shape(format, dtype, ndim, s, storage,
					     &sn));
		ck_assert_uint_eq(sn, rn);
		for (uint32_t d = 0; d < sn; d++)
			ck_assert_int_eq(storage[d], ref[d]);
	}
}
END_TEST

/* Packs `src` (dense) and returns the storage buffer for spot checks. */
static struct vnpu_kbuf pack_dense(uint32_t format, uint32_t dtype,
				   uint32_t ndim, const int64_t *s,
				   const void *data, uint64_t storage_numel)
{
	struct vnpu_kbuf bufs[2];
	struct vnpu_tensor src = kt_tensor(0, dtype, ndim, s, NULL);
	struct vnpu_tensor out = kt_tensor_fmt(1, dtype, format, ndim, s);
	size_t isz = itemsize(dtype);

	bufs[0] = kt_buffer((uint64_t)numel_of(ndim, s) * isz);
	memcpy(bufs[0].ptr, data, bufs[0].size);
	bufs[1] = kt_buffer(storage_numel * isz);
	ck_assert_uint_eq(launch(&src, &out, bufs, 2, 3), VNPU_STATUS_OK);
	kt_free(&bufs[0]);
	return bufs[1];
}

/* Element values that name their own logical position. */
static uint16_t *iota16(int64_t n)
{
	uint16_t *v = malloc((size_t)n * 2);

	for (int64_t i = 0; i < n; i++)
		v[i] = (uint16_t)(i + 1);
	return v;
}

START_TEST(test_hand_examples)
{
	/* fp16 [3,100,37] -> NZ [3,3,7,16,16]; value = row-major index + 1 */
	int64_t nz[3] = {3, 100, 37};
	uint16_t *v = iota16(3 * 100 * 37);
	struct vnpu_kbuf st = pack_dense(VNPU_FORMAT_FRACTAL_NZ, VNPU_DTYPE_F16,
					 3, nz, v, 16128);
	const uint16_t *p = st.ptr;

	/* (0,0,0) is storage 0 */
	ck_assert_uint_eq(p[0], 1);
	/* (1,20,35): k1=2 k0=3 m1=1 m0=4:
	 * (((1*3+2)*7+1)*16+4)*16+3 = 9283; logical 1*3700+20*37+35 = 4475 */
	ck_assert_uint_eq(p[9283], 4476);
	/* (2,99,36): k1=2 k0=4 m1=6 m0=3:
	 * (((2*3+2)*7+6)*16+3)*16+4 = 15924; logical 7400+3663+36 = 11099 */
	ck_assert_uint_eq(p[15924], 11100);
	/* (0,1,16): k1=1 k0=0 m1=0 m0=1: ((0*3+1)*7*16+1)*16 = 1808 */
	ck_assert_uint_eq(p[1808], 1 * 37 + 16 + 1);
	/* batch 0, k1=2, m1=0, row 0, k0=5 is k=37 >= K: padding */
	ck_assert_uint_eq(p[3589], 0);
	/* batch 0, k1=0, m1=6, row 4 is m=100 >= M: padding */
	ck_assert_uint_eq(p[(6 * 16 + 4) * 16], 0);
	kt_free(&st);
	free(v);

	/* f16 NC1HWC0 [2,20,3,5] -> [2,2,3,5,16]:
	 * (1,17,2,4): c1=1 c0=1: (((1*2+1)*3+2)*5+4)*16+1 = 945;
	 * logical ((1*20+17)*3+2)*5+4 = 569 */
	int64_t nchw[4] = {2, 20, 3, 5};

	v = iota16(600);
	st = pack_dense(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_F16, 4, nchw, v, 960);
	p = st.ptr;
	ck_assert_uint_eq(p[945], 570);
	/* (0,4,1,2): c1=0 c0=4: ((0*3+1)*5+2)*16+4 = 116; logical 4*15+7 */
	ck_assert_uint_eq(p[116], 68);
	/* n=0, c1=1, h=0, w=0, c0=4 is c=20 >= C: padding (index 244) */
	ck_assert_uint_eq(p[(1 * 3 * 5) * 16 + 4], 0);
	kt_free(&st);
	free(v);

	/* f16 FRACTAL_Z [20,18,3,3] -> [18,2,16,16]:
	 * (17,17,1,2): c1=1 c0=1 n1=1 n0=1:
	 * (((((1*3+1)*3+2)*2+1)*16+1)*16+1 = 7441;
	 * logical ((17*18+17)*3+1)*3+2 = 2912 */
	int64_t fz[4] = {20, 18, 3, 3};

	v = iota16(20 * 18 * 9);
	st = pack_dense(VNPU_FORMAT_FRACTAL_Z, VNPU_DTYPE_F16, 4, fz, v, 9216);
	p = st.ptr;
	ck_assert_uint_eq(p[7441], 2913);
	/* (3,5,0,0): c1=0 c0=5 n1=0 n0=3: 3*16+5 = 53; logical 3*162+5*9 */
	ck_assert_uint_eq(p[53], 3 * 162 + 45 + 1);
	/* n=20 (n1=1, n0=4) is >= N: padding at (1*16+4)*16 = 320 */
	ck_assert_uint_eq(p[320], 0);
	/* c=18 (c1=1, c0=2) is >= C: padding at 9*2*256 + 2 = 4610 */
	ck_assert_uint_eq(p[4610], 0);
	kt_free(&st);
	free(v);
}
END_TEST

/* int8 / uint8 / bool: C0 = 32 */
START_TEST(test_int8_c0_32)
{
	uint8_t data[17 * 33], *p;
	int64_t nz[2] = {17, 33}, nc[4] = {1, 40, 2, 2}, fz[4] = {5, 40, 1, 1};
	struct vnpu_kbuf st;

	for (int i = 0; i < 17 * 33; i++)
		data[i] = (uint8_t)(i % 251 + 1);
	/* NZ [17,33] -> [2,2,16,32]; (16,32): k1=1 k0=0 m1=1 m0=0:
	 * ((1*2+1)*16+0)*32+0 = 1536; logical 16*33+32 = 560 */
	st = pack_dense(VNPU_FORMAT_FRACTAL_NZ, VNPU_DTYPE_I8, 2, nz, data,
			2048);
	p = st.ptr;
	ck_assert_uint_eq(p[1536], 560 % 251 + 1);
	/* (0,31): k1=0 k0=31: 31 (with C0 = 16 it would be in k1=1) */
	ck_assert_uint_eq(p[31], 32);
	/* (0,1) k1=1 row 0 col 1 = k 33: padding at 2*16*32 + 1 */
	ck_assert_uint_eq(p[1025], 0);
	kt_free(&st);

	/* NC1HWC0 [1,40,2,2] -> [1,2,2,2,32]; (0,33,1,0): c1=1 c0=1:
	 * ((1*2+1)*2+0)*32+1 = 193; logical 33*4+2 = 134 */
	st = pack_dense(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_U8, 4, nc, data, 256);
	p = st.ptr;
	ck_assert_uint_eq(p[193], 135);
	kt_free(&st);

	/* FRACTAL_Z [5,40,1,1] -> [2,1,16,32]; (4,39): c1=1 c0=7 n0=4:
	 * (1*16+4)*32+7 = 647; logical 4*40+39 = 199 */
	st = pack_dense(VNPU_FORMAT_FRACTAL_Z, VNPU_DTYPE_BOOL, 4, fz, data,
			1024);
	p = st.ptr;
	ck_assert_uint_eq(p[647], 200);
	/* row n0=5 of fractal 0 is n = 5 >= N: padding */
	ck_assert_uint_eq(p[5 * 32], 0);
	kt_free(&st);

	/* and the random element-wise checks for the 1-byte types */
	int64_t s[VNPU_MAX_DIMS];

	kt_seed(23);
	for (int iter = 0; iter < 24; iter++) {
		uint32_t format = internal_formats[iter % 3];
		uint32_t dtype = iter % 2 ? VNPU_DTYPE_I8 : VNPU_DTYPE_U8;
		uint32_t ndim = random_shape(format, s);

		check_pack(format, dtype, ndim, s, block_counts[iter % 3],
			   PLAIN_RANDOM);
		check_unpack(format, dtype, ndim, s, block_counts[iter % 3],
			     PLAIN_RANDOM);
	}
}
END_TEST

/* Every internal format, every dtype, random shapes and layouts. */
static void pack_unpack_format(uint32_t format, uint64_t seed)
{
	int64_t s[VNPU_MAX_DIMS];

	kt_seed(seed);
	for (size_t d = 0; d < NUM_DTYPES; d++) {
		for (int iter = 0; iter < 6; iter++) {
			uint32_t ndim = random_shape(format, s);
			uint32_t nb = block_counts[iter % 3];
			enum plain_layout layout = PLAIN_RANDOM;

			if (iter < 2)
				layout = PLAIN_DENSE;
			else if (iter == 2 && ndim == 4)
				layout = PLAIN_GAPPED_NCHW;
			check_pack(format, all_dtypes[d], ndim, s, nb, layout);
			check_unpack(format, all_dtypes[d], ndim, s, nb,
				     layout);
		}
	}
}

START_TEST(test_nc1hwc0_elements)
{
	int64_t big[4] = {2, 33, 20, 20}; /* 400 rows: several tiles */

	pack_unpack_format(VNPU_FORMAT_NC1HWC0, 101);
	for (uint32_t b = 0; b < 3; b++) {
		check_pack(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_F16, 4, big,
			   block_counts[b], PLAIN_DENSE);
		check_unpack(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_F32, 4, big,
			     block_counts[b], PLAIN_DENSE);
		check_pack(VNPU_FORMAT_NC1HWC0, VNPU_DTYPE_I8, 4, big,
			   block_counts[b], PLAIN_RANDOM);
	}
}
END_TEST

START_TEST(test_fractal_z_elements)
{
	int64_t tall[4] = {150, 20, 2, 2}; /* n over several tiles */

	pack_unpack_format(VNPU_FORMAT_FRACTAL_Z, 202);
	for (uint32_t b = 0; b < 3; b++) {
		check_pack(VNPU_FORMAT_FRACTAL_Z, all_dtypes[b], 4, tall,
			   block_counts[b],
			   b == 0 ? PLAIN_DENSE : PLAIN_RANDOM);
		check_unpack(VNPU_FORMAT_FRACTAL_Z, all_dtypes[b + 3], 4, tall,
			     block_counts[b],
			     b == 1 ? PLAIN_DENSE : PLAIN_RANDOM);
	}
}
END_TEST

START_TEST(test_fractal_nz_elements)
{
	int64_t s[2] = {100, 37};
	int64_t tall[3][3] = {{300, 40}, {2, 129, 33}, {257, 64}};

	pack_unpack_format(VNPU_FORMAT_FRACTAL_NZ, 303);
	/* m over several tiles, the last one partial */
	for (uint32_t i = 0; i < 3; i++)
		for (uint32_t b = 0; b < 3; b++) {
			uint32_t nd = i == 1 ? 3 : 2;

			check_pack(VNPU_FORMAT_FRACTAL_NZ, all_dtypes[i + b],
				   nd, tall[i], block_counts[b],
				   b != 1 ? PLAIN_DENSE : PLAIN_RANDOM);
			check_unpack(VNPU_FORMAT_FRACTAL_NZ,
				     all_dtypes[i + b + 1], nd, tall[i],
				     block_counts[b],
				     b != 2 ? PLAIN_DENSE : PLAIN_RANDOM);
		}
	for (size_t d = 0; d < NUM_DTYPES; d++)
		for (uint32_t b = 0; b < 3; b++) {
			check_pack(VNPU_FORMAT_FRACTAL_NZ, all_dtypes[d], 2, s,
				   block_counts[b], PLAIN_DENSE);
			check_unpack(VNPU_FORMAT_FRACTAL_NZ, all_dtypes[d], 2,
				     s, block_counts[b], PLAIN_DENSE);
		}
}
END_TEST

START_TEST(test_round_trips)
{
	int64_t s[VNPU_MAX_DIMS];

	kt_seed(404);
	for (size_t f = 0; f < 3; f++)
		for (size_t d = 0; d < NUM_DTYPES; d++)
			for (int iter = 0; iter < 3; iter++) {
				uint32_t ndim =
					random_shape(internal_formats[f], s);

				check_round_trip(internal_formats[f],
						 all_dtypes[d], ndim, s,
						 block_counts[iter]);
			}
}
END_TEST

/* Column-major matrices and channels-last images: plain sides contiguous
 * along the tile rows, which the kernel transposes with vectors. */
START_TEST(test_transposed_plain_sides)
{
	static const int64_t mk[][2] = {
		{100, 37}, {64, 64}, {33, 17}, {1, 70}, {70, 1}};

	kt_seed(505);
	for (size_t d = 0; d < NUM_DTYPES; d++) {
		uint32_t dtype = all_dtypes[d];
		size_t isz = itemsize(dtype);

		for (size_t i = 0; i < sizeof(mk) / sizeof(mk[0]); i++) {
			int64_t m = mk[i][0], k = mk[i][1];
			int64_t cm[2] = {1, m}; /* column-major strides */
			int64_t snumel = ref_storage_numel(
				VNPU_FORMAT_FRACTAL_NZ, dtype, 2, mk[i]);
			struct vnpu_kbuf bufs[3];
			struct vnpu_tensor a, st, b;
			int64_t idx[2];

			bufs[0] = kt_buffer((uint64_t)(m * k) * isz);
			random_bytes(&bufs[0], dtype);
			bufs[1] = kt_buffer((uint64_t)snumel * isz);
			bufs[2] = kt_buffer((uint64_t)(m * k) * isz);
			a = kt_tensor(0, dtype, 2, mk[i], cm);
			st = kt_tensor_fmt(1, dtype, VNPU_FORMAT_FRACTAL_NZ, 2,
					   mk[i]);
			b = kt_tensor(2, dtype, 2, mk[i], cm);
			ck_assert_uint_eq(launch(&a, &st, bufs, 3, 3),
					  VNPU_STATUS_OK);
			for (int64_t e = 0; e < m * k; e++) {
				unravel(e, 2, mk[i], idx);
				ck_assert(
					memcmp((uint8_t *)bufs[1].ptr +
						       ref_index(
							       VNPU_FORMAT_FRACTAL_NZ,
							       dtype, 2, mk[i],
							       idx) *
							       isz,
					       (uint8_t *)bufs[0].ptr +
						       plain_offset(&a, idx) *
							       isz,
					       isz) == 0);
			}
			ck_assert_uint_eq(launch(&st, &b, bufs, 3, 7),
					  VNPU_STATUS_OK);
			ck_assert(memcmp(bufs[0].ptr, bufs[2].ptr,
					 bufs[0].size) == 0);
			for (int j = 0; j < 3; j++)
				kt_free(&bufs[j]);
		}
	}
}
END_TEST

/* NCHW <-> NHWC: a strided copy; sizes stay [N,C,H,W], the NHWC strides
 * are [H*W*C, 1, W*C, C]. */
START_TEST(test_nchw_nhwc)
{
	kt_seed(606);
	for (int iter = 0; iter < 12; iter++) {
		uint32_t dtype = all_dtypes[iter % NUM_DTYPES];
		size_t isz = itemsize(dtype);
		int64_t n = kt_rand_range(1, 3), c = edge_size(40);
		int64_t h = kt_rand_range(1, 9), w = kt_rand_range(1, 9);
		int64_t s[4] = {n, c, h, w};
		int64_t nhwc[4] = {h * w * c, 1, w * c, c};
		uint64_t bytes = (uint64_t)(n * c * h * w) * isz;
		struct vnpu_kbuf bufs[3];
		struct vnpu_tensor a, b, back;
		uint8_t *pa, *pb;

		bufs[0] = kt_buffer(bytes);
		bufs[1] = kt_buffer(bytes);
		bufs[2] = kt_buffer(bytes);
		random_bytes(&bufs[0], dtype);
		a = kt_tensor(0, dtype, 4, s, NULL);
		a.format = VNPU_FORMAT_NCHW;
		b = kt_tensor(1, dtype, 4, s, nhwc);
		b.format = VNPU_FORMAT_NHWC;
		back = kt_tensor(2, dtype, 4, s, NULL);
		back.format = VNPU_FORMAT_NCHW;
		ck_assert_uint_eq(
			launch(&a, &b, bufs, 3, block_counts[iter % 3]),
			VNPU_STATUS_OK);
		pa = bufs[0].ptr;
		pb = bufs[1].ptr;
		for (int64_t in = 0; in < n; in++)
			for (int64_t ic = 0; ic < c; ic++)
				for (int64_t ih = 0; ih < h; ih++)
					for (int64_t iw = 0; iw < w; iw++) {
						int64_t src =
							((in * c + ic) * h +
							 ih) * w +
							iw;
						int64_t dst =
							((in * h + ih) * w +
							 iw) * c +
							ic;

						ck_assert(memcmp(pb + dst * isz,
								 pa + src * isz,
								 isz) == 0);
					}
		ck_assert_uint_eq(launch(&b, &back, bufs, 3, 3),
				  VNPU_STATUS_OK);
		ck_assert(memcmp(bufs[2].ptr, bufs[0].ptr, bytes) == 0);

		/* channels-last straight into NC1HWC0 and back */
		check_pack(VNPU_FORMAT_NC1HWC0, dtype, 4, s, 3, PLAIN_RANDOM);
		for (int i = 0; i < 3; i++)
			kt_free(&bufs[i]);
	}
}
END_TEST

/*
 * NCHW weights into FRACTAL_Z and back with (h, w) contiguous on the plain
 * side, dense and with gaps between channel planes and images: the kernel
 * transposes C0 x H*W blocks. N and C at the fractal edges (1, 15, 17,
 * 33), H*W below, at and above the vector widths (2, 9 = 3x3, 17, 25, 33)
 * so full vectors, 8-byte vectors and element copies all run.
 */
START_TEST(test_fractal_z_weights)
{
	static const int64_t nc[][2] = {{1, 1},	  {15, 17}, {17, 33},
					{33, 15}, {16, 16}, {40, 64}};
	static const int64_t hw[][2] = {
		{1, 2}, {3, 3}, {1, 17}, {5, 5}, {3, 11}};
	int iter = 0;

	kt_seed(909);
	for (size_t i = 0; i < sizeof(nc) / sizeof(nc[0]); i++)
		for (size_t j = 0; j < sizeof(hw) / sizeof(hw[0]); j++) {
			int64_t s[4] = {nc[i][0], nc[i][1], hw[j][0], hw[j][1]};
			uint32_t dtype = all_dtypes[iter % NUM_DTYPES];
			uint32_t nb = block_counts[iter % 3];
			enum plain_layout layout =
				iter % 2 ? PLAIN_GAPPED_NCHW : PLAIN_DENSE;

			check_pack(VNPU_FORMAT_FRACTAL_Z, dtype, 4, s, nb,
				   layout);
			check_unpack(VNPU_FORMAT_FRACTAL_Z, dtype, 4, s, nb,
				     layout);
			iter++;
		}
	/* every dtype through the 3x3 case */
	for (size_t d = 0; d < NUM_DTYPES; d++) {
		int64_t s[4] = {33, 17, 3, 3};

		check_pack(VNPU_FORMAT_FRACTAL_Z, all_dtypes[d], 4, s, 3,
			   PLAIN_GAPPED_NCHW);
		check_unpack(VNPU_FORMAT_FRACTAL_Z, all_dtypes[d], 4, s, 7,
			     PLAIN_DENSE);
	}
}
END_TEST

/*
 * The vector paths of 3x3 weights (AVX2, AVX-512, when the CPU has them)
 * against the portable one, byte for byte over the whole output buffer:
 * data, padding, gaps and the bytes around. N and C off the fractal and
 * vector edges, so that full row pairs, an odd last row, padding rows and
 * partial channel groups all occur; a few block counts.
 */
static void check_fz_isas(uint32_t dtype, const int64_t *s,
			  enum plain_layout layout, uint32_t nblocks)
{
	static const uint32_t isas[] = {VNPU_TD_ISA_AVX2, VNPU_TD_ISA_AVX512};
	size_t isz = itemsize(dtype);
	int64_t sn = ref_storage_numel(VNPU_FORMAT_FRACTAL_Z, dtype, 4, s);
	int64_t st_off = kt_rand_range(0, 3);
	struct vnpu_tensor plain, packed;
	struct vnpu_kbuf pb, sb, bufs[2];
	uint8_t *ref_st, *ref_pl;

	pb = kt_buffer(random_plain(&plain, 0, dtype, 4, s, layout));
	sb = kt_buffer((uint64_t)(st_off + sn) * isz + GUARD);
	packed = kt_tensor_fmt(1, dtype, VNPU_FORMAT_FRACTAL_Z, 4, s);
	packed.offset = st_off;
	ref_st = malloc(sb.size);
	ref_pl = malloc(pb.size);
	ck_assert_ptr_nonnull(ref_st);
	ck_assert_ptr_nonnull(ref_pl);

	/* pack: the portable result, then each ISA from the same fill */
	random_bytes(&pb, dtype);
	bufs[0] = pb;
	bufs[1] = sb;
	vnpu_transdata_set_isa(VNPU_TD_ISA_PORTABLE);
	ck_assert_uint_eq(launch(&plain, &packed, bufs, 2, 1), VNPU_STATUS_OK);
	memcpy(ref_st, sb.ptr, sb.size);
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		if (vnpu_transdata_set_isa(isas[i]) != isas[i])
			continue;
		memset(sb.ptr, FILL_BYTE, sb.size);
		ck_assert_uint_eq(launch(&plain, &packed, bufs, 2, nblocks),
				  VNPU_STATUS_OK);
		ck_assert_msg(memcmp(sb.ptr, ref_st, sb.size) == 0,
			      "pack isa %u dtype %u [%lld,%lld,%lld,%lld] "
			      "%u blocks",
			      isas[i], dtype, (long long)s[0], (long long)s[1],
			      (long long)s[2], (long long)s[3], nblocks);
	}

	/* unpack from random storage (garbage padding) */
	random_bytes(&sb, dtype);
	packed.buffer = 0;
	plain.buffer = 1;
	bufs[0] = sb;
	bufs[1] = pb;
	memset(pb.ptr, FILL_BYTE, pb.size);
	vnpu_transdata_set_isa(VNPU_TD_ISA_PORTABLE);
	ck_assert_uint_eq(launch(&packed, &plain, bufs, 2, 1), VNPU_STATUS_OK);
	memcpy(ref_pl, pb.ptr, pb.size);
	for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
		if (vnpu_transdata_set_isa(isas[i]) != isas[i])
			continue;
		memset(pb.ptr, FILL_BYTE, pb.size);
		ck_assert_uint_eq(launch(&packed, &plain, bufs, 2, nblocks),
				  VNPU_STATUS_OK);
		ck_assert_msg(memcmp(pb.ptr, ref_pl, pb.size) == 0,
			      "unpack isa %u dtype %u [%lld,%lld,%lld,%lld] "
			      "%u blocks",
			      isas[i], dtype, (long long)s[0], (long long)s[1],
			      (long long)s[2], (long long)s[3], nblocks);
	}
	vnpu_transdata_set_isa(VNPU_TD_ISA_AUTO);
	kt_free(&pb);
	kt_free(&sb);
	free(ref_st);
	free(ref_pl);
}

START_TEST(test_fractal_z_isas)
{
	static const int64_t ns[] = {1, 2, 15, 16, 17, 31, 33, 48, 67};
	static const int64_t cs[] = {1, 15, 16, 17, 31, 32, 33, 48, 65};
	static const uint32_t nbs[] = {1, 2, 3, 5, 7};
	static const enum plain_layout layouts[] = {PLAIN_DENSE, PLAIN_GAPPED_N,
						    PLAIN_GAPPED_NCHW};
	int iter = 0;

	kt_seed(910);
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (size_t j = 0; j < sizeof(cs) / sizeof(cs[0]); j++) {
			int64_t s[4] = {ns[i], cs[j], 3, 3};

			check_fz_isas(all_dtypes[iter % NUM_DTYPES], s,
				      layouts[iter % 3], nbs[iter % 5]);
			iter++;
		}
	/* every dtype with whole groups of units, and other (h, w) */
	for (size_t d = 0; d < NUM_DTYPES; d++) {
		int64_t big[4] = {80, 64, 3, 3}, other[4] = {33, 40, 1, 9};

		check_fz_isas(all_dtypes[d], big, PLAIN_GAPPED_N, 3);
		check_fz_isas(all_dtypes[d], big, PLAIN_DENSE, 1);
		check_fz_isas(all_dtypes[d], other, PLAIN_DENSE, 2);
	}
	/* the closed form under each ISA */
	for (uint32_t isa = VNPU_TD_ISA_PORTABLE; isa <= VNPU_TD_ISA_AVX512;
	     isa++) {
		int64_t s[4] = {35, 50, 3, 3};

		if (vnpu_transdata_set_isa(isa) != isa)
			continue;
		for (size_t d = 0; d < NUM_DTYPES; d++) {
			check_pack(VNPU_FORMAT_FRACTAL_Z, all_dtypes[d], 4, s,
				   3, PLAIN_GAPPED_N);
			check_unpack(VNPU_FORMAT_FRACTAL_Z, all_dtypes[d], 4, s,
				     2, PLAIN_DENSE);
		}
	}
	vnpu_transdata_set_isa(VNPU_TD_ISA_AUTO);
}
END_TEST

/*
 * Plain -> plain from `a` to `b` (descriptors without buffers' sizes):
 * every element of b equals a's at the same logical index, computed from
 * the strides here, and every other byte of b's buffer keeps the fill.
 */
static void check_copy(struct vnpu_tensor a, struct vnpu_tensor b,
		       uint32_t nblocks)
{
	size_t isz = itemsize(a.dtype);
	int64_t idx[VNPU_MAX_DIMS], alast = a.offset, blast = b.offset;
	int64_t numel = numel_of(a.ndim, a.sizes);
	struct vnpu_kbuf bufs[2];
	uint8_t *touched;
	const uint8_t *pa, *pb;

	for (uint32_t i = 0; i < a.ndim; i++) {
		alast += (a.sizes[i] - 1) * a.strides[i];
		blast += (b.sizes[i] - 1) * b.strides[i];
	}
	a.buffer = 0;
	b.buffer = 1;
	bufs[0] = kt_buffer((uint64_t)(alast + 1) * isz);
	bufs[1] = kt_buffer((uint64_t)(blast + 1) * isz);
	random_bytes(&bufs[0], a.dtype);
	touched = calloc(bufs[1].size, 1);
	ck_assert_ptr_nonnull(touched);
	ck_assert_uint_eq(launch(&a, &b, bufs, 2, nblocks), VNPU_STATUS_OK);
	pa = bufs[0].ptr;
	pb = bufs[1].ptr;
	for (int64_t e = 0; e < numel; e++) {
		int64_t ob;

		unravel(e, a.ndim, a.sizes, idx);
		ob = plain_offset(&b, idx) * (int64_t)isz;
		ck_assert_msg(memcmp(pb + ob, pa + plain_offset(&a, idx) * isz,
				     isz) == 0,
			      "dtype %u element %lld of [%lld,%lld,%lld,%lld]",
			      a.dtype, (long long)e, (long long)a.sizes[0],
			      (long long)a.sizes[1], (long long)a.sizes[2],
			      (long long)a.sizes[3]);
		memset(touched + ob, 1, isz);
	}
	for (uint64_t i = 0; i < bufs[1].size; i++)
		if (!touched[i])
			ck_assert_uint_eq(pb[i], FILL_BYTE);
	free(touched);
	kt_free(&bufs[0]);
	kt_free(&bufs[1]);
}

/*
 * Copies that transpose two dim groups, which the kernel runs as tiled
 * block transposes: NCHW <-> NHWC (dense and gapped, with offsets), 2-D
 * matrix transposes and a broadcast source. The shapes cross the tile
 * sides (16/32/64 rows where rows are 1 KiB or more apart, 8 KiB runs
 * otherwise) with partial last tiles, and include 1, 3, 15, 17 and 33
 * channels.
 */
START_TEST(test_plain_transposes)
{
	static const struct {
		uint32_t dtype;
		int64_t sizes[4];
	} images[] = {
		{VNPU_DTYPE_F32,
		 {2, 33, 17, 17}}, /* far c rows: 16-row tiles */
		{VNPU_DTYPE_F32, {1, 17, 47, 45}}, /* hw crosses 2048 */
		{VNPU_DTYPE_F16, {1, 33, 23, 23}},
		{VNPU_DTYPE_BF16, {3, 15, 5, 7}},
		{VNPU_DTYPE_I8, {1, 65, 33, 33}},
		{VNPU_DTYPE_U8, {1, 3, 91, 91}}, /* hw crosses 8192 */
		{VNPU_DTYPE_I32, {2, 1, 4, 5}},
		{VNPU_DTYPE_BOOL, {5, 33, 2, 9}},
		{VNPU_DTYPE_F16, {2, 17, 1, 1}},
		{VNPU_DTYPE_F32, {3, 3, 16, 15}},
	};
	static const int64_t mk[][2] = {
		{33, 17}, {100, 129}, {1, 70}, {16, 16}, {15, 2}};

	kt_seed(1010);
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		const int64_t *s = images[i].sizes;
		uint32_t dtype = images[i].dtype;
		struct vnpu_tensor nchw, nhwc;
		uint32_t nb = block_counts[i % 3];

		for (int gaps = 0; gaps < 2; gaps++) {
			random_plain(&nchw, 0, dtype, 4, s,
				     gaps ? PLAIN_GAPPED_NCHW : PLAIN_DENSE);
			nhwc = kt_tensor(1, dtype, 4, s, NULL);
			gapped_4d(&nhwc, s, PLAIN_GAPPED_NHWC);
			if (!gaps) {
				nhwc.strides[0] = s[1] * s[2] * s[3];
				nhwc.strides[2] = s[1] * s[3];
				nhwc.strides[3] = s[1];
				nhwc.offset = 0;
			}
			check_copy(nchw, nhwc, nb);
			check_copy(nhwc, nchw, nb);
		}
	}
	/* row-major <-> column-major matrices */
	for (size_t i = 0; i < sizeof(mk) / sizeof(mk[0]); i++) {
		uint32_t dtype = all_dtypes[i % NUM_DTYPES];
		int64_t rm[2] = {mk[i][1], 1}, cm[2] = {1, mk[i][0]};
		struct vnpu_tensor a = kt_tensor(0, dtype, 2, mk[i], rm);
		struct vnpu_tensor b = kt_tensor(1, dtype, 2, mk[i], cm);

		check_copy(a, b, block_counts[i % 3]);
		b.offset = 3;
		check_copy(b, a, block_counts[(i + 1) % 3]);
	}
	/* a channel-broadcast source into NHWC */
	{
		int64_t s[4] = {2, 17, 5, 7}, bc[4] = {35, 0, 7, 1};
		int64_t cl[4] = {5 * 7 * 17, 1, 7 * 17, 17};

		check_copy(kt_tensor(0, VNPU_DTYPE_F16, 4, s, bc),
			   kt_tensor(1, VNPU_DTYPE_F16, 4, s, cl), 3);
	}
}
END_TEST

/* Plain -> plain with random layouts on both sides, I64 and F64 included. */
START_TEST(test_plain_copy)
{
	kt_seed(707);
	for (int iter = 0; iter < 40; iter++) {
		uint32_t dtype = iter % 10 == 0 ? VNPU_DTYPE_I64
				 : iter % 5 == 0
					 ? VNPU_DTYPE_F64
					 : all_dtypes[iter % NUM_DTYPES];
		size_t isz = iter % 5 == 0 ? 8 : itemsize(dtype);
		uint32_t ndim = (uint32_t)kt_rand_range(0, 5);
		int64_t s[VNPU_MAX_DIMS], idx[VNPU_MAX_DIMS];
		struct vnpu_kbuf bufs[2];
		struct vnpu_tensor a, b;
		uint64_t abytes, bbytes;

		for (uint32_t i = 0; i < ndim; i++)
			s[i] = kt_rand_range(iter == 7 ? 0 : 1, 6);
		abytes = random_plain(&a, 0, VNPU_DTYPE_U8, ndim, s,
				      PLAIN_RANDOM);
		bbytes = random_plain(&b, 1, VNPU_DTYPE_U8, ndim, s,
				      iter % 2 ? PLAIN_DENSE : PLAIN_RANDOM);
		a.dtype = b.dtype = dtype;
		bufs[0] = kt_buffer(abytes * isz);
		bufs[1] = kt_buffer(bbytes * isz);
		random_bytes(&bufs[0], dtype);
		if (iter % 3 == 0) { /* broadcast a size-1 or any dim of src */
			uint32_t d = ndim ? kt_rand() % ndim : 0;

			if (ndim)
				a.strides[d] = 0;
		}
		ck_assert_uint_eq(
			launch(&a, &b, bufs, 2, block_counts[iter % 3]),
			VNPU_STATUS_OK);
		for (int64_t e = 0; e < numel_of(ndim, s); e++) {
			unravel(e, ndim, s, idx);
			ck_assert(memcmp((uint8_t *)bufs[1].ptr +
						 plain_offset(&b, idx) * isz,
					 (uint8_t *)bufs[0].ptr +
						 plain_offset(&a, idx) * isz,
					 isz) == 0);
		}
		kt_free(&bufs[0]);
		kt_free(&bufs[1]);
	}
}
END_TEST

/*
 * Blocks own disjoint parts of the output: run each block alone on a
 * freshly filled output and record the bytes it changed; no byte may be
 * changed by two blocks, and together they produce the full result.
 */
static void check_block_ownership(const struct vnpu_tensor *src,
				  const struct vnpu_tensor *out,
				  struct vnpu_kbuf *bufs, uint32_t nblocks)
{
	struct vnpu_kp_transdata kp;
	uint64_t size = bufs[1].size;
	uint8_t *owner = calloc(size, 1), *full = malloc(size);
	const uint8_t *o = bufs[1].ptr;

	ck_assert_ptr_nonnull(owner);
	ck_assert_ptr_nonnull(full);
	memset(&kp, 0, sizeof(kp));
	kp.src = *src;
	kp.out = *out;
	ck_assert_uint_eq(vnpu_kernel_transdata.validate(&kp, bufs, 2),
			  VNPU_STATUS_OK);
	for (uint32_t b = 0; b < nblocks; b++)
		vnpu_kernel_transdata.run(&kp, bufs, b, nblocks);
	memcpy(full, o, size);
	for (uint32_t b = 0; b < nblocks; b++) {
		memset(bufs[1].ptr, FILL_BYTE, size);
		vnpu_kernel_transdata.run(&kp, bufs, b, nblocks);
		for (uint64_t i = 0; i < size; i++) {
			if (o[i] == FILL_BYTE)
				continue;
			ck_assert_msg(!owner[i],
				      "byte %llu written by blocks "
				      "%u and %u",
				      (unsigned long long)i, owner[i] - 1, b);
			ck_assert_uint_eq(o[i], full[i]);
			owner[i] = (uint8_t)(b + 1);
		}
	}
	for (uint64_t i = 0; i < size; i++)
		if (full[i] != FILL_BYTE)
			ck_assert(owner[i]);
	free(owner);
	free(full);
}

START_TEST(test_blocks_disjoint)
{
	static const struct {
		uint32_t format, ndim;
		int64_t sizes[4];
		enum plain_layout layout;
	} cases[] = {
		{VNPU_FORMAT_FRACTAL_NZ, 2, {100, 37}, PLAIN_RANDOM},
		{VNPU_FORMAT_FRACTAL_NZ, 3, {3, 33, 200}, PLAIN_DENSE},
		{VNPU_FORMAT_NC1HWC0, 4, {2, 33, 20, 20}, PLAIN_RANDOM},
		{VNPU_FORMAT_NC1HWC0, 4, {3, 17, 5, 7}, PLAIN_DENSE},
		{VNPU_FORMAT_FRACTAL_Z, 4, {33, 17, 3, 3}, PLAIN_RANDOM},
		{VNPU_FORMAT_FRACTAL_Z, 4, {150, 40, 1, 2}, PLAIN_DENSE},
		{VNPU_FORMAT_FRACTAL_NZ, 2, {300, 70}, PLAIN_RANDOM},
		/* FRACTAL_Z by (c1, 16 n) units over all (h, w) */
		{VNPU_FORMAT_FRACTAL_Z, 4, {33, 17, 3, 3}, PLAIN_GAPPED_NCHW},
		{VNPU_FORMAT_FRACTAL_Z, 4, {40, 33, 3, 3}, PLAIN_DENSE},
		{VNPU_FORMAT_FRACTAL_Z, 4, {17, 15, 1, 17}, PLAIN_GAPPED_NCHW},
		/* the vector paths' row pairs and groups of units */
		{VNPU_FORMAT_FRACTAL_Z, 4, {83, 40, 3, 3}, PLAIN_GAPPED_N},
	};

	kt_seed(808);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (uint32_t nb = 2; nb <= 7; nb += 5) {
			uint32_t dtype = all_dtypes[(i + nb) % NUM_DTYPES];
			size_t isz = itemsize(dtype);
			const int64_t *s = cases[i].sizes;
			uint32_t nd = cases[i].ndim;
			struct vnpu_tensor plain, packed;
			struct vnpu_kbuf bufs[2];
			int64_t sn = ref_storage_numel(cases[i].format, dtype,
						       nd, s);

			/* pack: storage written by exactly one block */
			bufs[0] = kt_buffer(random_plain(&plain, 0, dtype, nd,
							 s, cases[i].layout));
			random_bytes(&bufs[0], dtype);
			bufs[1] = kt_buffer((uint64_t)sn * isz);
			packed =
				kt_tensor_fmt(1, dtype, cases[i].format, nd, s);
			check_block_ownership(&plain, &packed, bufs, nb);
			/* unpack into the plain buffer's layout */
			packed.buffer = 0;
			plain.buffer = 1;
			kt_free(&bufs[0]);
			bufs[0] = bufs[1];
			bufs[1] = kt_buffer(random_plain(&plain, 1, dtype, nd,
							 s, cases[i].layout));
			check_block_ownership(&packed, &plain, bufs, nb);
			kt_free(&bufs[0]);
			kt_free(&bufs[1]);
		}
	}
}
END_TEST

/* Blocks of the transposing copies own disjoint parts of the output. */
START_TEST(test_plain_transposes_blocks)
{
	static const int64_t shapes[][4] = {
		{2, 33, 17, 17}, {3, 15, 5, 7}, {1, 17, 47, 45}};

	kt_seed(1111);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		/* the large shape (several 2048-element tiles) once */
		for (uint32_t nb = i == 2 ? 7 : 2; nb <= 7; nb += 5) {
			uint32_t dtype = all_dtypes[(i + nb) % NUM_DTYPES];
			struct vnpu_tensor nchw, nhwc;
			struct vnpu_kbuf bufs[2];

			bufs[0] = kt_buffer(random_plain(&nchw, 0, dtype, 4,
							 shapes[i],
							 PLAIN_GAPPED_NCHW));
			random_bytes(&bufs[0], dtype);
			bufs[1] = kt_buffer(random_plain(&nhwc, 1, dtype, 4,
							 shapes[i],
							 PLAIN_GAPPED_NHWC));
			check_block_ownership(&nchw, &nhwc, bufs, nb);
			/* and back, from the NHWC buffer into the NCHW one */
			nchw.buffer = 1;
			nhwc.buffer = 0;
			kt_free(&bufs[0]);
			bufs[0] = bufs[1];
			random_bytes(&bufs[0], dtype);
			bufs[1] = kt_buffer(random_plain(&nchw, 1, dtype, 4,
							 shapes[i],
							 PLAIN_GAPPED_NCHW));
			check_block_ownership(&nhwc, &nchw, bufs, nb);
			kt_free(&bufs[0]);
			kt_free(&bufs[1]);
		}
	}
}
END_TEST

/* Zero-size tensors are valid and write nothing. */
START_TEST(test_empty)
{
	static const struct {
		uint32_t format, ndim;
		int64_t sizes[4];
	} cases[] = {
		{VNPU_FORMAT_NC1HWC0, 4, {0, 3, 4, 5}},
		{VNPU_FORMAT_NC1HWC0, 4, {2, 0, 4, 5}},
		{VNPU_FORMAT_FRACTAL_Z, 4, {2, 3, 0, 5}},
		{VNPU_FORMAT_FRACTAL_Z, 4, {17, 33, 4, 0}},
		{VNPU_FORMAT_FRACTAL_NZ, 2, {0, 5}},
		{VNPU_FORMAT_FRACTAL_NZ, 2, {5, 0}},
		{VNPU_FORMAT_FRACTAL_NZ, 3, {0, 17, 33}},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vnpu_kbuf bufs[2] = {kt_buffer(1), kt_buffer(1)};
		struct vnpu_tensor a = kt_tensor(
			0, VNPU_DTYPE_F16, cases[i].ndim, cases[i].sizes, NULL);
		struct vnpu_tensor st =
			kt_tensor_fmt(1, VNPU_DTYPE_F16, cases[i].format,
				      cases[i].ndim, cases[i].sizes);

		ck_assert_uint_eq(launch(&a, &st, bufs, 2, 3), VNPU_STATUS_OK);
		ck_assert_uint_eq(launch(&st, &a, bufs, 2, 3), VNPU_STATUS_OK);
		ck_assert_uint_eq(((uint8_t *)bufs[0].ptr)[0], FILL_BYTE);
		ck_assert_uint_eq(((uint8_t *)bufs[1].ptr)[0], FILL_BYTE);
		kt_free(&bufs[0]);
		kt_free(&bufs[1]);
	}
}
END_TEST

/* A valid ND [17, 33] f16 -> NZ launch that each case breaks once. */
struct vcase {
	struct vnpu_kbuf bufs[3];
	struct vnpu_tensor src, out;
};

static void vcase_init(struct vcase *v)
{
	static const int64_t s[2] = {17, 33};

	v->bufs[0] = kt_buffer(17 * 33 * 2);
	v->bufs[1] = kt_buffer(2 * 3 * 16 * 16 * 2); /* exactly the storage */
	v->bufs[2] = kt_buffer(4096);
	v->src = kt_tensor(0, VNPU_DTYPE_F16, 2, s, NULL);
	v->out = kt_tensor_fmt(1, VNPU_DTYPE_F16, VNPU_FORMAT_FRACTAL_NZ, 2, s);
}

static uint32_t vcase_run(struct vcase *v)
{
	uint32_t st = launch(&v->src, &v->out, v->bufs, 3, 3);

	for (int i = 0; i < 3; i++)
		kt_free(&v->bufs[i]);
	return st;
}

START_TEST(test_validation)
{
	struct vcase v;

	vcase_init(&v);
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_OK);

	/* mismatched logical shape */
	vcase_init(&v);
	v.out.sizes[1] = 32;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	v.out.ndim = 3;
	v.out.sizes[2] = 1;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* mismatched dtype (same itemsize) */
	vcase_init(&v);
	v.out.dtype = VNPU_DTYPE_BF16;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* storage buffer one byte short, or offset pushing it past the end */
	vcase_init(&v);
	v.bufs[1].size -= 1;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	v.out.offset = 1;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	v.src.offset = 1;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* internal formats take no strides */
	vcase_init(&v);
	v.out.strides[1] = 1;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* rank rules: NZ needs rank >= 2, NC1HWC0 and FRACTAL_Z rank 4 */
	vcase_init(&v);
	v.src.ndim = v.out.ndim = 1;
	v.src.sizes[1] = v.out.sizes[1] = 0;
	v.src.strides[0] = 1;
	v.src.strides[1] = 0;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	v.out.format = VNPU_FORMAT_NC1HWC0;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	v.out.format = VNPU_FORMAT_FRACTAL_Z;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* internal -> internal is left to two steps through a plain format */
	vcase_init(&v);
	v.src = v.out;
	v.src.buffer = 2;
	v.out.buffer = 1;
	v.out.format = VNPU_FORMAT_FRACTAL_NZ;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_UNSUPPORTED);
	{
		int64_t s4[4] = {2, 3, 4, 5};

		vcase_init(&v);
		v.src = kt_tensor_fmt(2, VNPU_DTYPE_F16, VNPU_FORMAT_NC1HWC0, 4,
				      s4);
		v.out = kt_tensor_fmt(1, VNPU_DTYPE_F16, VNPU_FORMAT_FRACTAL_Z,
				      4, s4);
		kt_free(&v.bufs[1]);
		v.bufs[1] = kt_buffer(1 << 16);
		ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_UNSUPPORTED);
	}

	/* access rights: src needs READ, out needs WRITE */
	vcase_init(&v);
	v.bufs[1].access = VNPU_ACCESS_READ;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	v.bufs[0].access = VNPU_ACCESS_WRITE;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* 8-byte elements have no internal layout, either direction */
	vcase_init(&v);
	v.src.dtype = v.out.dtype = VNPU_DTYPE_I64;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_UNSUPPORTED);
	vcase_init(&v);
	v.src.dtype = v.out.dtype = VNPU_DTYPE_F64;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_UNSUPPORTED);
	vcase_init(&v);
	{
		struct vnpu_tensor t = v.src;

		v.src = v.out;
		v.out = t;
		v.src.buffer = 1;
		v.out.buffer = 0;
	}
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_OK);
	vcase_init(&v);
	{
		struct vnpu_tensor t = v.src;

		v.src = v.out;
		v.out = t;
		v.src.buffer = 1;
		v.out.buffer = 0;
	}
	v.src.dtype = v.out.dtype = VNPU_DTYPE_F64;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_UNSUPPORTED);

	/* unknown dtype and format */
	vcase_init(&v);
	v.src.dtype = v.out.dtype = 77;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_UNSUPPORTED);
	vcase_init(&v);
	v.out.format = 5;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_UNSUPPORTED);

	/* buffer index out of range */
	vcase_init(&v);
	v.out.buffer = 3;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* a plain output whose elements overlap (blocks would race) */
	vcase_init(&v);
	v.src = v.out;
	v.src.buffer = 1;
	v.out = kt_tensor(0, VNPU_DTYPE_F16, 2, v.src.sizes, NULL);
	v.out.strides[0] = 16; /* rows of 33 overlap */
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	v.src = v.out;
	v.src.buffer = 1;
	v.out = kt_tensor(0, VNPU_DTYPE_F16, 2, v.src.sizes, NULL);
	v.out.strides[0] = 0;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* src and out overlapping in one buffer */
	vcase_init(&v);
	kt_free(&v.bufs[0]);
	v.bufs[0] = kt_buffer(1 << 16);
	v.out.buffer = 0;
	v.out.offset = 100;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	kt_free(&v.bufs[0]);
	v.bufs[0] = kt_buffer(1 << 16);
	v.out.buffer = 0;
	v.out.offset = 17 * 33; /* right after src: fine */
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_OK);

	/* negative sizes, strides past ndim */
	vcase_init(&v);
	v.src.sizes[0] = v.out.sizes[0] = -1;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
	vcase_init(&v);
	v.src.strides[3] = 1;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);

	/* sizes far beyond any buffer (and 64-bit element counts) */
	vcase_init(&v);
	v.src.sizes[0] = v.out.sizes[0] = INT64_MAX / 8;
	v.src.strides[0] = 0;
	v.src.strides[1] = 0;
	ck_assert_uint_eq(vcase_run(&v), VNPU_STATUS_INVALID_ARGS);
}
END_TEST

static Suite *layout_suite(void)
{
	Suite *s = suite_create("layout");
	TCase *tc = tcase_create("transdata");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_registered);
	tcase_add_test(tc, test_storage_shapes);
	tcase_add_test(tc, test_hand_examples);
	tcase_add_test(tc, test_int8_c0_32);
	tcase_add_test(tc, test_nc1hwc0_elements);
	tcase_add_test(tc, test_fractal_z_elements);
	tcase_add_test(tc, test_fractal_nz_elements);
	tcase_add_test(tc, test_round_trips);
	tcase_add_test(tc, test_transposed_plain_sides);
	tcase_add_test(tc, test_nchw_nhwc);
	tcase_add_test(tc, test_fractal_z_weights);
	tcase_add_test(tc, test_fractal_z_isas);
	tcase_add_test(tc, test_plain_transposes);
	tcase_add_test(tc, test_plain_transposes_blocks);
	tcase_add_test(tc, test_plain_copy);
	tcase_add_test(tc, test_blocks_disjoint);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_validation);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(layout_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
