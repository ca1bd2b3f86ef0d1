// SPDX-License-Identifier: MIT
/*
 * QGEMM (int8 matrix multiply, quantized linear) against a reference in
 * int64 and double: random shapes with ragged edges and K not a multiple
 * of four, transposed and strided operands, every zero point range, the
 * three output stages, several block counts, on every int8 microkernel
 * this CPU has; and the validator's refusals.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_core.h"
#include "harness.h"
#include "kernel.h"

static const uint32_t block_counts[] = {1, 2, 3, 7};

struct qcase {
	int64_t m, n, k;
	bool trans_a, trans_b;
	int64_t pad_a, pad_b; /* extra elements per stored row */
	int32_t za, zb;
	uint32_t out_dtype;
	bool has_bias, relu;
	float scale, out_scale;
	int32_t out_zp;
	uint32_t nblocks;
};

/* A stored matrix of rows x cols bytes with row pitch cols + pad. */
static struct vnpu_tensor stored(uint32_t buffer, uint32_t dtype, int64_t rows,
				 int64_t cols, int64_t pad)
{
	const int64_t sizes[] = {rows, cols}, strides[] = {cols + pad, 1};

	return kt_tensor(buffer, dtype, 2, sizes, strides);
}

static double quantize_ref(double v, const struct qcase *c)
{
	double r = nearbyint(v / c->out_scale) + c->out_zp;

	return r < 0 ? 0 : r > 255 ? 255 : r;
}

static void run_qcase(const struct qcase *c)
{
	int64_t ar = c->trans_a ? c->k : c->m, ac = c->trans_a ? c->m : c->k;
	int64_t br = c->trans_b ? c->n : c->k, bc = c->trans_b ? c->k : c->n;
	uint32_t osz = c->out_dtype == VNPU_DTYPE_U8 ? 1 : 4;
	struct vnpu_kbuf bufs[4] = {
		kt_buffer((uint64_t)(ar * (ac + c->pad_a) + 1)),
		kt_buffer((uint64_t)(br * (bc + c->pad_b) + 1)),
		kt_buffer((uint64_t)(c->m * c->n * osz + 1)),
		kt_buffer((uint64_t)(c->n * 4 + 4)),
	};
	uint8_t *a = bufs[0].ptr;
	int8_t *b = bufs[1].ptr;
	float *bias = bufs[3].ptr;
	struct vnpu_kp_qgemm p;

	for (uint64_t i = 0; i < bufs[0].size; i++)
		a[i] = (uint8_t)kt_rand();
	for (uint64_t i = 0; i < bufs[1].size; i++)
		b[i] = (int8_t)kt_rand();
	for (int64_t j = 0; j < c->n; j++)
		bias[j] = kt_rand_float(-50.0f, 50.0f);
	memset(&p, 0, sizeof(p));
	p.trans_a = c->trans_a;
	p.trans_b = c->trans_b;
	p.a_zero_point = c->za;
	p.b_zero_point = c->zb;
	p.a = stored(0, VNPU_DTYPE_U8, ar, ac, c->pad_a);
	p.b = stored(1, VNPU_DTYPE_I8, br, bc, c->pad_b);
	p.out = stored(2, c->out_dtype, c->m, c->n, 0);
	if (c->out_dtype != VNPU_DTYPE_I32) {
		const int64_t bs[] = {c->n};

		p.scale = c->scale;
		p.has_bias = c->has_bias;
		p.activation = c->relu ? VNPU_ACT_RELU : VNPU_ACT_NONE;
		p.bias = kt_tensor(3, VNPU_DTYPE_F32, 1, bs, NULL);
	}
	if (c->out_dtype == VNPU_DTYPE_U8) {
		p.out_scale = c->out_scale;
		p.out_zero_point = c->out_zp;
	}
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_QGEMM, &p, bufs, 4, c->nblocks),
			  VNPU_STATUS_OK);

	for (int64_t i = 0; i < c->m; i++)
		for (int64_t j = 0; j < c->n; j++) {
			int64_t acc = 0;
			double v;

			for (int64_t k = 0; k < c->k; k++) {
				int64_t x =
					c->trans_a ? a[k * (ac + c->pad_a) + i]
						   : a[i * (ac + c->pad_a) + k];
				int64_t y =
					c->trans_b ? b[j * (bc + c->pad_b) + k]
						   : b[k * (bc + c->pad_b) + j];

				acc += (x - c->za) * (y - c->zb);
			}
			char *o = (char *)bufs[2].ptr + (i * c->n + j) * osz;

			if (c->out_dtype == VNPU_DTYPE_I32) {
				int32_t got;

				memcpy(&got, o, 4);
				ck_assert_msg(
					got == acc,
					"[%ld][%ld] %d, want %ld (M %ld N "
					"%ld K %ld)",
					(long)i, (long)j, got, (long)acc,
					(long)c->m, (long)c->n, (long)c->k);
				continue;
			}
			v = (double)c->scale * (double)acc +
			    (c->has_bias ? bias[j] : 0.0);
			if (c->relu && v < 0)
				v = 0;
			if (c->out_dtype == VNPU_DTYPE_F32) {
				float got;

				memcpy(&got, o, 4);
				ck_assert_msg(fabs(got - v) <=
						      1e-5 * (1 + fabs(v)),
					      "[%ld][%ld] %g, want %g", (long)i,
					      (long)j, got, v);
				continue;
			}
			/* f32 arithmetic may round a tie the other way */
			ck_assert_msg(
				fabs(*(uint8_t *)o - quantize_ref(v, c)) <= 1,
				"[%ld][%ld] %u, want %g", (long)i, (long)j,
				*(uint8_t *)o, quantize_ref(v, c));
		}
	for (int i = 0; i < 4; i++)
		kt_free(&bufs[i]);
}

static struct qcase random_qcase(int64_t max)
{
	static const uint32_t outs[] = {VNPU_DTYPE_I32, VNPU_DTYPE_F32,
					VNPU_DTYPE_U8};
	struct qcase c;

	memset(&c, 0, sizeof(c));
	c.m = kt_rand_range(1, max);
	c.n = kt_rand_range(1, max);
	c.k = kt_rand_range(0, 3 * max);
	c.trans_a = kt_rand() % 2;
	c.trans_b = kt_rand() % 2;
	c.pad_a = kt_rand() % 2 ? 0 : kt_rand_range(1, 5);
	c.pad_b = kt_rand() % 2 ? 0 : kt_rand_range(1, 5);
	c.za = kt_rand() % 3 ? (int32_t)kt_rand_range(0, 255) : 0;
	c.zb = kt_rand() % 3 ? (int32_t)kt_rand_range(-128, 127) : 0;
	c.out_dtype = outs[kt_rand() % 3];
	c.has_bias = kt_rand() % 2;
	c.relu = kt_rand() % 2;
	c.scale = kt_rand_float(1e-5f, 1e-3f);
	c.out_scale = kt_rand_float(0.01f, 0.5f);
	c.out_zp = (int32_t)kt_rand_range(0, 255);
	c.nblocks = block_counts[kt_rand() % 4];
	return c;
}

/* Random cases on every int8 microkernel family this CPU has. */
START_TEST(test_qgemm_random)
{
	static const uint32_t isas[] = {VNPU_GEMM_ISA_PORTABLE,
					VNPU_GEMM_ISA_AUTO};

	kt_seed(4200 + (uint64_t)_i);
	vnpu_gemm_set_isa(isas[_i]);
	for (int it = 0; it < 40; it++) {
		struct qcase c = random_qcase(70);

		run_qcase(&c);
	}
	vnpu_gemm_set_isa(VNPU_GEMM_ISA_AUTO);
}
END_TEST

/* Past the core's blocking (KC 256, NC 1024, MB 384), extreme zero
 * points, and K at its limit with the largest products. */
START_TEST(test_qgemm_large)
{
	struct qcase c;

	kt_seed(99);
	memset(&c, 0, sizeof(c));
	c = (struct qcase){.m = 400,
			   .n = 1030,
			   .k = 517,
			   .za = 255,
			   .zb = -128,
			   .out_dtype = VNPU_DTYPE_I32,
			   .nblocks = 3};
	run_qcase(&c);
	c = (struct qcase){.m = 13,
			   .n = 37,
			   .k = 1031,
			   .trans_b = true,
			   .za = 0,
			   .zb = 127,
			   .out_dtype = VNPU_DTYPE_U8,
			   .has_bias = true,
			   .scale = 1e-4f,
			   .out_scale = 0.3f,
			   .out_zp = 128,
			   .nblocks = 2};
	run_qcase(&c);
}
END_TEST

/* The sum bound: K = VNPU_QGEMM_MAX_K, every product 255 * 127 with the
 * zero points maximising |a - za| |b - zb|, stays exact. */
START_TEST(test_qgemm_max_k)
{
	const int64_t k = VNPU_QGEMM_MAX_K;
	const int64_t sa[] = {1, k}, sb[] = {k, 2}, so[] = {1, 2};
	struct vnpu_kbuf bufs[3] = {kt_buffer((uint64_t)k + 1),
				    kt_buffer((uint64_t)(k + 1) * 2),
				    kt_buffer(8)};
	struct vnpu_kp_qgemm p;
	int32_t got[2];

	memset(bufs[0].ptr, 255, (size_t)k + 1);
	memset(bufs[1].ptr, 0x80, (size_t)(k + 1) * 2); /* -128 */
	memset(&p, 0, sizeof(p));
	p.b_zero_point = 127;
	p.a = kt_tensor(0, VNPU_DTYPE_U8, 2, sa, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_I8, 2, sb, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_I32, 2, so, NULL);
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_QGEMM, &p, bufs, 3, 1),
			  VNPU_STATUS_OK);
	memcpy(got, bufs[2].ptr, 8);
	ck_assert_int_eq(got[0], (int32_t)(k * 255 * -255));
	ck_assert_int_eq(got[1], got[0]);
	p.a.sizes[1] = k + 1;
	p.b.sizes[0] = k + 1;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_QGEMM, &p, bufs, 3, 1),
			  VNPU_STATUS_INVALID_ARGS);
	for (int i = 0; i < 3; i++)
		kt_free(&bufs[i]);
}
END_TEST

struct qfix {
	struct vnpu_kbuf bufs[4];
	struct vnpu_kp_qgemm p;
};

/* Valid: u8 [4, 8] x s8 [8, 5] -> u8 [4, 5] with bias. */
static void qfix_init(struct qfix *f)
{
	const int64_t sa[] = {4, 8}, sb[] = {8, 5}, so[] = {4, 5}, sn[] = {5};

	f->bufs[0] = kt_buffer(1024); /* room for an NZ view */
	f->bufs[1] = kt_buffer(40);
	f->bufs[2] = kt_buffer(80); /* room for any output dtype */
	f->bufs[3] = kt_buffer(20);
	memset(&f->p, 0, sizeof(f->p));
	f->p.a = kt_tensor(0, VNPU_DTYPE_U8, 2, sa, NULL);
	f->p.b = kt_tensor(1, VNPU_DTYPE_I8, 2, sb, NULL);
	f->p.out = kt_tensor(2, VNPU_DTYPE_U8, 2, so, NULL);
	f->p.bias = kt_tensor(3, VNPU_DTYPE_F32, 1, sn, NULL);
	f->p.has_bias = 1;
	f->p.scale = 0.01f;
	f->p.out_scale = 0.1f;
	f->p.out_zero_point = 3;
}

#define EXPECT_Q(mutation, status)                                             \
	do {                                                                   \
		struct qfix f;                                                 \
		uint32_t got_;                                                 \
		qfix_init(&f);                                                 \
		mutation;                                                      \
		got_ = kt_launch(VNPU_KERNEL_QGEMM, &f.p, f.bufs, 4, 1);       \
		ck_assert_msg(got_ == (status), "%s: got %u want %u",          \
			      #mutation, got_, (uint32_t)(status));            \
		for (int i_ = 0; i_ < 4; i_++)                                 \
			kt_free(&f.bufs[i_]);                                  \
	} while (0)

START_TEST(test_qgemm_validate)
{
	const uint32_t ok = VNPU_STATUS_OK, inv = VNPU_STATUS_INVALID_ARGS;
	const uint32_t uns = VNPU_STATUS_UNSUPPORTED;

	EXPECT_Q((void)0, ok);
	EXPECT_Q(f.p.a.dtype = VNPU_DTYPE_I8, uns);
	EXPECT_Q(f.p.b.dtype = VNPU_DTYPE_U8, uns);
	EXPECT_Q(f.p.out.dtype = VNPU_DTYPE_F16, uns);
	/* no F64 anywhere (80 bytes hold the 4 x 5 output at 4 bytes; at 8
	 * a 2 x 5 one) */
	EXPECT_Q((f.p.out.dtype = VNPU_DTYPE_F64, f.p.out.sizes[0] = 2,
		  f.p.a.sizes[0] = 2),
		 uns);
	EXPECT_Q((f.p.out.dtype = VNPU_DTYPE_F64, f.p.out.sizes[0] = 2,
		  f.p.a.sizes[0] = 2, f.p.has_bias = 0, f.p.scale = 0,
		  f.p.out_scale = 0, f.p.out_zero_point = 0),
		 uns);
	EXPECT_Q(f.p.a.dtype = VNPU_DTYPE_F64, uns);
	EXPECT_Q((f.p.bias.dtype = VNPU_DTYPE_F64, f.p.bias.sizes[0] = 2,
		  f.p.out.sizes[1] = 2, f.p.b.sizes[1] = 2),
		 uns);
	EXPECT_Q((f.p.a.format = VNPU_FORMAT_FRACTAL_NZ,
		  f.p.a.strides[0] = f.p.a.strides[1] = 0),
		 uns);
	EXPECT_Q(f.p.trans_a = 2, inv);
	EXPECT_Q(f.p.reserved = 1, inv);
	EXPECT_Q(f.p.a_zero_point = 256, inv);
	EXPECT_Q(f.p.a_zero_point = -1, inv);
	EXPECT_Q(f.p.b_zero_point = 128, inv);
	EXPECT_Q(f.p.b_zero_point = -129, inv);
	EXPECT_Q(f.p.activation = VNPU_ACT_GELU, inv);
	EXPECT_Q(f.p.b.sizes[0] = 7, inv);
	EXPECT_Q(f.p.out.sizes[1] = 6, inv);
	EXPECT_Q(f.p.out_scale = 0.0f, inv);
	EXPECT_Q(f.p.out_scale = -1.0f, inv);
	EXPECT_Q(f.p.out_scale = INFINITY, inv);
	EXPECT_Q(f.p.scale = NAN, inv);
	EXPECT_Q(f.p.out_zero_point = 256, inv);
	EXPECT_Q(f.p.bias.dtype = VNPU_DTYPE_F16, uns);
	EXPECT_Q(f.p.bias.sizes[0] = 4, inv);
	/* an output whose elements overlap would let blocks race */
	EXPECT_Q(f.p.out.strides[0] = 0, inv);
	/* I32 output takes no output stage */
	EXPECT_Q(f.p.out.dtype = VNPU_DTYPE_I32, inv);
	EXPECT_Q((f.p.out.dtype = VNPU_DTYPE_I32, f.p.has_bias = 0,
		  f.p.scale = 0, f.p.out_scale = 0, f.p.out_zero_point = 0),
		 ok);
	/* F32 output takes no output quantisation */
	EXPECT_Q(f.p.out.dtype = VNPU_DTYPE_F32, inv);
	/* a buffer too small for its view */
	EXPECT_Q(f.p.a.sizes[0] = 5, inv);
}
END_TEST

static Suite *qgemm_suite(void)
{
	Suite *s = suite_create("qgemm");
	TCase *tc = tcase_create("qgemm");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_qgemm_random, 0, 2);
	tcase_add_test(tc, test_qgemm_large);
	tcase_add_test(tc, test_qgemm_max_k);
	tcase_add_test(tc, test_qgemm_validate);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(qgemm_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
