// SPDX-License-Identifier: MIT
/*
 * Cancellation: every kernel polls the stop hook (kernel.h) inside a block,
 * at a granularity that keeps a stop within a fraction of a millisecond;
 * told to stop, a block returns at once with its output partially written,
 * and a hook that never says stop changes no result.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernel.h"

/* The counting hook: says stop from the (stop_after + 1)-th poll on. */
static unsigned polls, stop_after;

static bool counting_hook(void *opaque)
{
	(void)opaque;
	polls++;
	return polls > stop_after;
}

struct kcase {
	const char *name;
	uint32_t kernel;
	const void *params;
	struct vnpu_kbuf bufs[4];
	uint32_t nbufs;
	uint32_t out; /* the output buffer checked */
};

/* Bytes of the output that differ from the 0xA5 fill. */
static uint64_t written(const struct vnpu_kbuf *b)
{
	const uint8_t *p = b->ptr;
	uint64_t n = 0;

	for (uint64_t i = 0; i < b->size; i++)
		n += p[i] != 0xa5;
	return n;
}

/* Block 0 of 1 with the hook stopping after `after` polls; returns the
 * output bytes written, *n the polls made. */
static uint64_t run_stopping(const struct kcase *c, unsigned after, unsigned *n)
{
	const struct vnpu_kernel_def *k = vnpu_kernel_find(c->kernel);

	memset(c->bufs[c->out].ptr, 0xa5, c->bufs[c->out].size);
	polls = 0;
	stop_after = after;
	vnpu_kernel_set_stop_hook(counting_hook, NULL);
	k->run(c->params, c->bufs, 0, 1);
	vnpu_kernel_set_stop_hook(NULL, NULL);
	*n = polls;
	return written(&c->bufs[c->out]);
}

static void check_case(const struct kcase *c)
{
	const struct vnpu_kernel_def *k = vnpu_kernel_find(c->kernel);
	uint64_t full, none, half;
	unsigned n_full, n_none, n_half;
	uint8_t *ref;

	uint32_t st = k->validate(c->params, c->bufs, c->nbufs);

	ck_assert_msg(st == VNPU_STATUS_OK, "%s: validate: %u", c->name, st);
	/* a hook that never stops: the results of a run without one */
	memset(c->bufs[c->out].ptr, 0xa5, c->bufs[c->out].size);
	k->run(c->params, c->bufs, 0, 1);
	ref = malloc(c->bufs[c->out].size);
	memcpy(ref, c->bufs[c->out].ptr, c->bufs[c->out].size);
	full = run_stopping(c, ~0u, &n_full);
	ck_assert_msg(memcmp(ref, c->bufs[c->out].ptr, c->bufs[c->out].size) ==
			      0,
		      "%s: polling changed the result", c->name);
	ck_assert_msg(n_full >= 4, "%s: %u polls in a big block", c->name,
		      n_full);
	/* stopped at the first poll: it returns, having written less */
	none = run_stopping(c, 0, &n_none);
	ck_assert_msg(none < full, "%s: wrote %llu of %llu bytes", c->name,
		      (unsigned long long)none, (unsigned long long)full);
	/* the nested loops unwind with a few more polls at most */
	ck_assert_msg(n_none <= 8, "%s: %u polls after the stop", c->name,
		      n_none);
	/* stopped half way: not the whole result (a GEMM has written all
	 * of its output after the first reduction step, with partial
	 * sums) */
	half = run_stopping(c, n_full / 2, &n_half);
	ck_assert_msg(half < full || memcmp(ref, c->bufs[c->out].ptr,
					    c->bufs[c->out].size) != 0,
		      "%s: the half-way stop finished the block", c->name);
	ck_assert_uint_le(n_half, n_full / 2 + 8);
	free(ref);
}

static struct vnpu_kbuf f32_buf(uint64_t n, float v)
{
	struct vnpu_kbuf b = kt_buffer(n * 4);
	float *p = b.ptr;

	for (uint64_t i = 0; i < n; i++)
		p[i] = v + (float)(i % 7) * 0.25f;
	return b;
}

static void free_case(struct kcase *c)
{
	for (uint32_t i = 0; i < c->nbufs; i++)
		kt_free(&c->bufs[i]);
}

START_TEST(gemm_stops)
{
	int64_t sa[2] = {256, 1024}, sb[2] = {1024, 256}, so[2] = {256, 256};
	struct vnpu_kp_gemm p;
	struct kcase c = {"gemm", VNPU_KERNEL_GEMM, &p, {{0}}, 3, 2};

	memset(&p, 0, sizeof(p));
	p.alpha = 1.0f;
	p.a = kt_tensor(0, VNPU_DTYPE_F32, 2, sa, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_F32, 2, sb, NULL);
	p.out = kt_tensor(2, VNPU_DTYPE_F32, 2, so, NULL);
	c.bufs[0] = f32_buf(256 * 1024, 0.5f);
	c.bufs[1] = f32_buf(256 * 1024, 0.25f);
	c.bufs[2] = kt_buffer(256 * 256 * 4);
	check_case(&c);
	/* F16 goes through the workspace epilogue */
	p.a.dtype = p.b.dtype = p.out.dtype = VNPU_DTYPE_F16;
	memset(c.bufs[0].ptr, 0x3c, 256 * 1024 * 2);
	memset(c.bufs[1].ptr, 0x3c, 256 * 1024 * 2);
	c.name = "gemm f16";
	check_case(&c);
	free_case(&c);
}
END_TEST

START_TEST(conv2d_stops)
{
	int64_t si[4] = {1, 16, 64, 64}, sw[4] = {32, 16, 3, 3};
	int64_t so[4] = {1, 32, 62, 62};
	struct vnpu_kp_conv2d p;
	struct kcase c = {"conv2d", VNPU_KERNEL_CONV2D, &p, {{0}}, 3, 2};

	memset(&p, 0, sizeof(p));
	p.stride_h = p.stride_w = p.dil_h = p.dil_w = p.groups = 1;
	p.input = kt_tensor_fmt(0, VNPU_DTYPE_F32, VNPU_FORMAT_NC1HWC0, 4, si);
	p.weight =
		kt_tensor_fmt(1, VNPU_DTYPE_F32, VNPU_FORMAT_FRACTAL_Z, 4, sw);
	p.out = kt_tensor_fmt(2, VNPU_DTYPE_F32, VNPU_FORMAT_NC1HWC0, 4, so);
	c.bufs[0] = f32_buf(64 * 64 * 16, 0.5f);
	c.bufs[1] = f32_buf(9 * 2 * 16 * 16, 0.125f);
	c.bufs[2] = kt_buffer(2 * 62 * 62 * 16 * 4);
	check_case(&c);
	free_case(&c);
}
END_TEST

START_TEST(transdata_stops)
{
	int64_t s[2] = {1024, 1024}, s4[4] = {4, 64, 64, 64};
	struct vnpu_kp_transdata p;
	struct kcase c = {
		"transdata nz", VNPU_KERNEL_TRANSDATA, &p, {{0}}, 2, 1};

	memset(&p, 0, sizeof(p));
	p.src = kt_tensor(0, VNPU_DTYPE_F32, 2, s, NULL);
	p.out = kt_tensor_fmt(1, VNPU_DTYPE_F32, VNPU_FORMAT_FRACTAL_NZ, 2, s);
	c.bufs[0] = f32_buf(1024 * 1024, 1.0f);
	c.bufs[1] = kt_buffer(1024 * 1024 * 4);
	check_case(&c);
	/* plain to plain: NCHW -> NHWC (a transpose) */
	p.src = kt_tensor(0, VNPU_DTYPE_F32, 4, s4, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 4, s4,
			  (int64_t[]){64 * 64 * 64, 1, 64 * 64, 64});
	p.out.format = VNPU_FORMAT_NHWC;
	c.name = "transdata nchw->nhwc";
	check_case(&c);
	/* a plain strided copy, rows of 2^20 */
	p.src = kt_tensor(0, VNPU_DTYPE_F32, 1, (int64_t[]){1 << 20}, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 1, (int64_t[]){1 << 20}, NULL);
	c.name = "transdata copy";
	check_case(&c);
	free_case(&c);
}
END_TEST

START_TEST(reductions_stop)
{
	int64_t s[2] = {4, 1 << 20}, so[2] = {4, 1};
	int64_t s1[1] = {1 << 22}, so1[1] = {1};
	struct vnpu_kp_reduce p;
	struct kcase c = {"reduce rows", VNPU_KERNEL_REDUCE, &p, {{0}}, 2, 1};

	memset(&p, 0, sizeof(p));
	p.op = VNPU_REDUCE_SUM;
	p.dim_mask = 2;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 2, s, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 2, so, NULL);
	c.bufs[0] = f32_buf(1 << 22, 1.0f);
	c.bufs[1] = kt_buffer(16);
	check_case(&c);
	/* one output: the poll inside the reduction */
	p.dim_mask = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 1, s1, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 1, so1, NULL);
	c.name = "reduce all";
	check_case(&c);
	free_case(&c);
}
END_TEST

START_TEST(pooling_stops)
{
	int64_t si[4] = {1, 4, 256, 256}, so[4] = {1, 4, 254, 254};
	int64_t sg[4] = {1, 1, 1, 1};
	struct vnpu_kp_pool2d p;
	struct kcase c = {"pool max", VNPU_KERNEL_POOL2D, &p, {{0}}, 2, 1};

	memset(&p, 0, sizeof(p));
	p.mode = VNPU_POOL_MAX;
	p.kernel_h = p.kernel_w = 3;
	p.stride_h = p.stride_w = p.dil_h = p.dil_w = 1;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 4, si, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 4, so, NULL);
	c.bufs[0] = f32_buf(512 * 512, 0.0f);
	c.bufs[1] = kt_buffer(4 * 254 * 254 * 4);
	check_case(&c);
	p.mode = VNPU_POOL_AVG;
	c.name = "pool avg";
	check_case(&c);
	/* a single window over the whole plane: the poll inside it */
	si[1] = 1;
	si[2] = si[3] = 512;
	p.kernel_h = p.kernel_w = 512;
	p.stride_h = p.stride_w = 512;
	p.input = kt_tensor(0, VNPU_DTYPE_F32, 4, si, NULL);
	p.out = kt_tensor(1, VNPU_DTYPE_F32, 4, sg, NULL);
	c.name = "pool avg global";
	check_case(&c);
	p.mode = VNPU_POOL_MAX;
	c.name = "pool max global";
	check_case(&c);
	free_case(&c);
}
END_TEST

START_TEST(normalisations_stop)
{
	int64_t s[2] = {64, 16384};
	struct vnpu_kp_softmax sm;
	struct vnpu_kp_layer_norm ln;
	struct kcase c = {"softmax", VNPU_KERNEL_SOFTMAX, &sm, {{0}}, 2, 1};

	memset(&sm, 0, sizeof(sm));
	sm.dim = 1;
	sm.input = kt_tensor(0, VNPU_DTYPE_F32, 2, s, NULL);
	sm.out = kt_tensor(1, VNPU_DTYPE_F32, 2, s, NULL);
	c.bufs[0] = f32_buf(64 * 16384, 0.5f);
	c.bufs[1] = kt_buffer(64 * 16384 * 4);
	check_case(&c);
	/* one long row */
	s[0] = 1;
	s[1] = 1 << 20;
	sm.input = kt_tensor(0, VNPU_DTYPE_F32, 2, s, NULL);
	sm.out = kt_tensor(1, VNPU_DTYPE_F32, 2, s, NULL);
	c.name = "softmax long row";
	check_case(&c);
	memset(&ln, 0, sizeof(ln));
	ln.norm_ndim = 1;
	ln.eps = 1e-5;
	ln.input = kt_tensor(0, VNPU_DTYPE_F32, 2, s, NULL);
	ln.out = kt_tensor(1, VNPU_DTYPE_F32, 2, s, NULL);
	c.name = "layer_norm";
	c.kernel = VNPU_KERNEL_LAYER_NORM;
	c.params = &ln;
	check_case(&c);
	free_case(&c);
}
END_TEST

START_TEST(elementwise_stops)
{
	const int64_t n = 1 << 22;
	int64_t s2[2] = {2048, 1024}, s1[2] = {1, 1024};
	struct vnpu_kp_binary bin;
	struct vnpu_kp_unary un;
	struct vnpu_kp_cast cast;
	struct vnpu_kp_fill fill;
	struct kcase c = {"add dense", VNPU_KERNEL_BINARY, &bin, {{0}}, 3, 2};

	c.bufs[0] = f32_buf(n, 1.0f);
	c.bufs[1] = f32_buf(n, 2.0f);
	c.bufs[2] = kt_buffer(n * 4);
	memset(&bin, 0, sizeof(bin));
	bin.op = VNPU_BINARY_ADD;
	bin.alpha = 1.0;
	bin.a = kt_tensor(0, VNPU_DTYPE_F32, 1, &n, NULL);
	bin.b = kt_tensor(1, VNPU_DTYPE_F32, 1, &n, NULL);
	bin.out = kt_tensor(2, VNPU_DTYPE_F32, 1, &n, NULL);
	check_case(&c);
	bin.op = VNPU_BINARY_MUL;
	bin.a = kt_tensor(0, VNPU_DTYPE_F32, 2, s2, NULL);
	bin.b = kt_tensor(1, VNPU_DTYPE_F32, 2, s1, NULL);
	bin.out = kt_tensor(2, VNPU_DTYPE_F32, 2, s2, NULL);
	c.name = "mul broadcast";
	check_case(&c);
	memset(&un, 0, sizeof(un));
	un.op = VNPU_UNARY_EXP;
	un.src = kt_tensor(0, VNPU_DTYPE_F32, 1, &n, NULL);
	un.out = kt_tensor(2, VNPU_DTYPE_F32, 1, &n, NULL);
	c.name = "unary";
	c.kernel = VNPU_KERNEL_UNARY;
	c.params = &un;
	check_case(&c);
	memset(&cast, 0, sizeof(cast));
	cast.src = kt_tensor(0, VNPU_DTYPE_F32, 1, &n, NULL);
	cast.out = kt_tensor(2, VNPU_DTYPE_F16, 1, &n, NULL);
	c.name = "cast";
	c.kernel = VNPU_KERNEL_CAST;
	c.params = &cast;
	check_case(&c);
	memset(&fill, 0, sizeof(fill));
	fill.out = kt_tensor(2, VNPU_DTYPE_F32, 1, &n, NULL);
	fill.value = 3.0;
	c.name = "fill";
	c.kernel = VNPU_KERNEL_FILL;
	c.params = &fill;
	check_case(&c);
	free_case(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kernels-cancel");
	TCase *tc = tcase_create("cancel");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, gemm_stops);
	tcase_add_test(tc, conv2d_stops);
	tcase_add_test(tc, transdata_stops);
	tcase_add_test(tc, reductions_stop);
	tcase_add_test(tc, pooling_stops);
	tcase_add_test(tc, normalisations_stop);
	tcase_add_test(tc, elementwise_stops);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
