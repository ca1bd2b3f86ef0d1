// SPDX-License-Identifier: MIT
/*
 * Every NPU op of the kernels helper against the CPU kernel on the same
 * data: random shapes with sizes 0, 1, 15, 17, broadcasting, strided and
 * transposed views, 0-dim CPU operands, in f32, f16 and bf16. Tolerances
 * (atol + rtol * |cpu|): f32 1e-5 (1e-4 for reductions, GEMM, conv,
 * norms), f16 2e-3, bf16 1.6e-2, with an atol that grows with the length
 * of a reduction. Every case also checks that the op ran on the device
 * (nothing in the fallback report), except those documented to fall back.
 */
#include <math.h>

#include "ops_test_util.h"
#include "vnpu/kernel_abi.h"

struct tol {
	enum vnpu_at_dtype dt;
	double rtol, atol;	/* elementwise */
	double red;		/* reductions: rtol = atol */
};

static const struct tol dtypes[] = {
	{ VNPU_AT_F32, 1e-5, 1e-5, 1e-4 },
	{ VNPU_AT_F16, 2e-3, 2e-3, 1e-2 },
	{ VNPU_AT_BF16, 1.6e-2, 1.6e-2, 6e-2 },
};
#define NDT (sizeof(dtypes) / sizeof(dtypes[0]))

/* Nothing may have gone through the CPU fallback since the last reset. */
static void expect_on_device(const char *what)
{
	struct vnpu_fallback_entry e[4];
	size_t n = vnpu_fallback_report(e, 4);

	ck_assert_msg(n == 0, "%s fell back to the CPU (%s)", what,
		      n ? e[0].op : "");
}

static void expect_fell_back(const char *op)
{
	struct vnpu_fallback_entry e[8];
	size_t n = vnpu_fallback_report(e, 8);
	bool found = false;

	for (size_t i = 0; i < n && i < 8; i++)
		found |= strcmp(e[i].op, op) == 0;
	ck_assert_msg(found, "%s did not fall back", op);
}

/* Values rounded to integers, so that comparisons see ties. */
static void quantize(struct vnpu_at_tensor *t)
{
	for (int64_t i = 0; i < vnpu_at_numel(t); i++)
		ot_set_flat(t, i, round(ot_flat(t, i)));
}

static const struct {
	uint32_t nd;
	int64_t s[4];
} shapes[] = {
	{ 1, { 0 } }, { 1, { 1 } }, { 2, { 15, 17 } }, { 3, { 2, 3, 17 } },
	{ 0, { 0 } }, { 2, { 0, 17 } },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* ---- unary ---------------------------------------------------------------------- */

typedef struct vnpu_at_tensor *(*unary_fn)(struct vnpu_at_tensor *x);

static struct vnpu_at_tensor *u_neg(struct vnpu_at_tensor *x) { return vnpu_op_neg(x); }
static struct vnpu_at_tensor *u_abs(struct vnpu_at_tensor *x) { return vnpu_op_abs(x); }
static struct vnpu_at_tensor *u_exp(struct vnpu_at_tensor *x) { return vnpu_op_exp(x); }
static struct vnpu_at_tensor *u_log(struct vnpu_at_tensor *x) { return vnpu_op_log(x); }
static struct vnpu_at_tensor *u_sqrt(struct vnpu_at_tensor *x) { return vnpu_op_sqrt(x); }
static struct vnpu_at_tensor *u_rsqrt(struct vnpu_at_tensor *x) { return vnpu_op_rsqrt(x); }
static struct vnpu_at_tensor *u_sigmoid(struct vnpu_at_tensor *x) { return vnpu_op_sigmoid(x); }
static struct vnpu_at_tensor *u_tanh(struct vnpu_at_tensor *x) { return vnpu_op_tanh(x); }
static struct vnpu_at_tensor *u_gelu(struct vnpu_at_tensor *x) { return vnpu_op_gelu(x, "none"); }
static struct vnpu_at_tensor *u_silu(struct vnpu_at_tensor *x) { return vnpu_op_silu(x); }
static struct vnpu_at_tensor *u_pow2(struct vnpu_at_tensor *x)
{
	return vnpu_op_pow_Tensor_Scalar(x, VNPU_AT_DOUBLE(2.0));
}
static struct vnpu_at_tensor *u_pow_half(struct vnpu_at_tensor *x)
{
	return vnpu_op_pow_Tensor_Scalar(x, VNPU_AT_DOUBLE(0.5));
}
static struct vnpu_at_tensor *u_pow_m1(struct vnpu_at_tensor *x)
{
	return vnpu_op_pow_Tensor_Scalar(x, VNPU_AT_INT(-1));
}
static struct vnpu_at_tensor *u_clamp(struct vnpu_at_tensor *x)
{
	return vnpu_op_clamp(x, VNPU_AT_DOUBLE(-0.5), VNPU_AT_DOUBLE(0.25));
}
static struct vnpu_at_tensor *u_clamp_min(struct vnpu_at_tensor *x)
{
	return vnpu_op_clamp(x, VNPU_AT_DOUBLE(-0.5), VNPU_AT_SCALAR_NONEV);
}
static struct vnpu_at_tensor *u_softmax(struct vnpu_at_tensor *x)
{
	return vnpu_op__softmax(x, -1, false);
}
static struct vnpu_at_tensor *u_log_softmax(struct vnpu_at_tensor *x)
{
	return vnpu_op__log_softmax(x, 0, false);
}

static const struct {
	const char *name;
	unary_fn fn;
	double lo, hi;
	bool reduces;	/* looser tolerance: a reduction inside */
} unaries[] = {
	{ "neg", u_neg, -2, 2, false },
	{ "abs", u_abs, -2, 2, false },
	{ "exp", u_exp, -3, 3, false },
	{ "log", u_log, 0.1, 4, false },
	{ "sqrt", u_sqrt, 0.01, 4, false },
	{ "rsqrt", u_rsqrt, 0.1, 4, false },
	{ "sigmoid", u_sigmoid, -6, 6, false },
	{ "tanh", u_tanh, -3, 3, false },
	{ "gelu", u_gelu, -4, 4, false },
	{ "silu", u_silu, -4, 4, false },
	{ "pow 2", u_pow2, -2, 2, false },
	{ "pow 0.5", u_pow_half, 0.01, 4, false },
	{ "pow -1", u_pow_m1, 0.5, 2, false },
	{ "clamp", u_clamp, -1, 1, false },
	{ "clamp min", u_clamp_min, -1, 1, false },
	{ "_softmax", u_softmax, -4, 4, true },
	{ "_log_softmax", u_log_softmax, -4, 4, true },
};

START_TEST(unary_ops)
{
	const struct tol *tl = &dtypes[_i];

	ot_seed(100 + (uint64_t)_i);
	for (size_t u = 0; u < sizeof(unaries) / sizeof(unaries[0]); u++)
		for (size_t s = 0; s < NSHAPES; s++)
			for (int lay = OT_CONTIG; lay <= OT_TRANSPOSED; lay++) {
		struct vnpu_at_tensor *x, *xn, *want, *got;
		char what[96];

		if (unaries[u].reduces && shapes[s].nd == 0)
			continue;	/* 0-dim softmax: the CPU's case */
		x = ot_rand(shapes[s].nd, shapes[s].s, tl->dt, unaries[u].lo,
			    unaries[u].hi, (enum ot_layout)lay);
		xn = ot_to_npu(x);
		snprintf(what, sizeof(what), "%s %s layout %d", unaries[u].name,
			 vnpu_at_dtype_name(tl->dt), lay);
		want = unaries[u].fn(x);
		vnpu_fallback_reset();
		got = unaries[u].fn(xn);
		expect_on_device(what);
		ot_expect_close(what, want, got, tl->rtol,
				unaries[u].reduces ? tl->red : tl->atol);
		vnpu_at_release(x);
		vnpu_at_release(xn);
		vnpu_at_release(want);
		vnpu_at_release(got);
			}
}
END_TEST

/* Advanced indexing (index.Tensor, _index_put_impl_ with and without
 * accumulate, through index_select, index_copy_ and index_add_) agrees
 * with the CPU kernels, runs on the device, and refuses an index out of
 * range before it writes anything. */
static struct vnpu_at_tensor *index_list_op(struct vnpu_at_tensor *x, bool npu,
					    struct vnpu_at_tensor **idx, int64_t n,
					    struct vnpu_at_tensor *values, bool accumulate)
{
	struct vnpu_at_tensor *l[4] = { NULL }, *self, *v = NULL, *r;

	for (int64_t i = 0; i < n; i++)
		l[i] = idx[i] ? (npu ? ot_to_npu(idx[i]) : vnpu_at_retain(idx[i])) : NULL;
	self = npu ? ot_to_npu(x) : vnpu_op_clone(x);
	if (values)
		v = npu ? ot_to_npu(values) : vnpu_at_retain(values);
	r = values ? vnpu_op__index_put_impl_(self, (struct vnpu_at_tensor_list){ l, n }, v,
					      accumulate, false) :
		     vnpu_op_index_Tensor(self, (struct vnpu_at_tensor_list){ l, n });
	for (int64_t i = 0; i < n; i++)
		vnpu_at_release(l[i]);
	vnpu_at_release(v);
	if (values && r) {
		vnpu_at_release(r);
		return self;
	}
	vnpu_at_release(self);
	return r;
}

START_TEST(advanced_indexing)
{
	int64_t xs[3] = { 4, 5, 6 }, ms[2] = { 4, 5 }, is[1] = { 4 }, vs[2] = { 4, 5 };
	struct vnpu_at_tensor *x, *m, *i, *j, *v, *w, *g, *xn, *vn, *jn, *bad, *badn;

	ot_seed(31);
	x = ot_rand(3, xs, VNPU_AT_F32, -3, 3, OT_STRIDED);
	m = ot_rand(2, ms, VNPU_AT_BOOL, 0, 1, OT_CONTIG);
	i = ot_rand(1, is, VNPU_AT_I64, -4, 3, OT_CONTIG);
	j = ot_rand(1, is, VNPU_AT_I64, 0, 5, OT_CONTIG);
	v = ot_rand(2, vs, VNPU_AT_F32, -3, 3, OT_CONTIG);

	struct vnpu_at_tensor *cases[][3] = {
		{ i, NULL, NULL }, { NULL, i, NULL }, { i, j, NULL }, { i, NULL, j }, { m, NULL, NULL },
	};

	vnpu_fallback_reset();
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int64_t n = cases[k][2] ? 3 : cases[k][1] ? 2 : 1;

		w = index_list_op(x, false, cases[k], n, NULL, false);
		g = index_list_op(x, true, cases[k], n, NULL, false);
		ot_expect_close("index", w, g, 0, 0);
		vnpu_at_release(w);
		vnpu_at_release(g);
	}
	/* x[i, :, j] = v (non-adjacent: a copy, written back), then += */
	for (int acc = 0; acc < 2; acc++) {
		w = index_list_op(x, false, cases[3], 3, v, acc);
		g = index_list_op(x, true, cases[3], 3, v, acc);
		ot_expect_close("index_put", w, g, 1e-6, 1e-6);
		vnpu_at_release(w);
		vnpu_at_release(g);
	}
	expect_on_device("advanced indexing");

	/* out of range: IndexError, self unchanged */
	xn = ot_to_npu(x);
	vn = ot_to_npu(v);
	jn = ot_to_npu(j);
	bad = ot_rand(1, is, VNPU_AT_I64, 5, 6, OT_CONTIG);
	badn = ot_to_npu(bad);
	g = vnpu_op__index_put_impl_(xn,
				     (struct vnpu_at_tensor_list){
					     (struct vnpu_at_tensor *[]){ badn, NULL, jn }, 3 },
				     vn, false, false);
	ck_assert_ptr_null(g);
	ck_assert_msg(vnpu_at_error_code() == VNPU_AT_ERR_INDEX, "%s", vnpu_at_error_message());
	ot_expect_close("untouched", x, xn, 0, 0);
	vnpu_at_release(bad);
	vnpu_at_release(badn);
	vnpu_at_release(jn);
	vnpu_at_release(vn);
	vnpu_at_release(xn);
	vnpu_at_release(x);
	vnpu_at_release(m);
	vnpu_at_release(i);
	vnpu_at_release(j);
	vnpu_at_release(v);
}
END_TEST

/* Integer dtypes the device's UNARY/BINARY take (I32, I8, I16). */
START_TEST(int_ops)
{
	static const enum vnpu_at_dtype its[] = { VNPU_AT_I32, VNPU_AT_I8,
						  VNPU_AT_I16 };

	ot_seed(7);
	for (size_t k = 0; k < 3; k++) {
		int64_t sz[2] = { 15, 17 };
		struct vnpu_at_tensor *a = ot_rand(2, sz, its[k], -50, 50, OT_STRIDED);
		struct vnpu_at_tensor *b = ot_rand(1, sz + 1, its[k], -50, 50, OT_CONTIG);
		struct vnpu_at_tensor *an = ot_to_npu(a), *bn = ot_to_npu(b);
		struct vnpu_at_tensor *w, *g;

		vnpu_fallback_reset();
		w = vnpu_op_neg(a);
		g = vnpu_op_neg(an);
		ot_expect_close("neg int", w, g, 0, 0);
		vnpu_at_release(w);
		vnpu_at_release(g);
		w = vnpu_op_sub_Tensor(a, b, VNPU_AT_INT(2));
		g = vnpu_op_sub_Tensor(an, bn, VNPU_AT_INT(2));
		ot_expect_close("sub int", w, g, 0, 0);
		vnpu_at_release(w);
		vnpu_at_release(g);
		w = vnpu_op_maximum(a, b);
		g = vnpu_op_maximum(an, bn);
		ot_expect_close("maximum int", w, g, 0, 0);
		vnpu_at_release(w);
		vnpu_at_release(g);
		w = vnpu_op_le_Tensor(a, b);
		g = vnpu_op_le_Tensor(an, bn);
		ot_expect_close("le int", w, g, 0, 0);
		vnpu_at_release(w);
		vnpu_at_release(g);
		w = vnpu_op_clamp(a, VNPU_AT_INT(-10), VNPU_AT_INT(20));
		g = vnpu_op_clamp(an, VNPU_AT_INT(-10), VNPU_AT_INT(20));
		ot_expect_close("clamp int", w, g, 0, 0);
		vnpu_at_release(w);
		vnpu_at_release(g);
		expect_on_device("int ops");
		/* exp of ints is float32, converted on the device */
		w = vnpu_op_exp(b);
		g = vnpu_op_exp(bn);
		ck_assert_int_eq(g->dtype, VNPU_AT_F32);
		vnpu_at_release(w);
		vnpu_at_release(g);
		vnpu_at_release(a);
		vnpu_at_release(b);
		vnpu_at_release(an);
		vnpu_at_release(bn);
	}
}
END_TEST

typedef struct vnpu_at_tensor *(*binary_fn)(struct vnpu_at_tensor *,
					    struct vnpu_at_tensor *);
typedef struct vnpu_at_tensor *(*unary_fn)(struct vnpu_at_tensor *);

static struct vnpu_at_tensor *prod_dim1(struct vnpu_at_tensor *t)
{
	return vnpu_op_prod_dim_int(t, 1, false, VNPU_AT_DTYPE_NONE);
}

static struct vnpu_at_tensor *prod_all(struct vnpu_at_tensor *t)
{
	return vnpu_op_prod(t, VNPU_AT_DTYPE_NONE);
}

/* pow, remainder, fmod, floor_divide, copysign, atan2, hypot, logaddexp,
 * xlogy, the float ufuncs,
 * the rounding ops, sign and prod: the device against the CPU kernels,
 * broadcast and strided, f32 and int32, with no fallback; an integer
 * zero divisor raises ZeroDivisionError on both. */
START_TEST(arith_and_math_ops)
{
	static const struct { const char *name; binary_fn fn; bool ints; } bin[] = {
		{ "pow", vnpu_op_pow_Tensor_Tensor, true },
		{ "remainder", vnpu_op_remainder_Tensor, true },
		{ "fmod", vnpu_op_fmod_Tensor, true },
		{ "floor_divide", vnpu_op_floor_divide, true },
		{ "copysign", vnpu_op_copysign_Tensor, false },
		{ "atan2", vnpu_op_atan2, false },
		{ "hypot", vnpu_op_hypot, false },
		{ "logaddexp", vnpu_op_logaddexp, false },
		{ "xlogy", vnpu_op_xlogy_Tensor, false },
	};
	static const struct { const char *name; unary_fn fn; } un[] = {
		{ "sin", vnpu_op_sin }, { "acos", vnpu_op_acos },
		{ "atanh", vnpu_op_atanh }, { "log1p", vnpu_op_log1p },
		{ "erfc", vnpu_op_erfc }, { "floor", vnpu_op_floor },
		{ "round", vnpu_op_round }, { "sign", vnpu_op_sign },
		{ "prod", prod_all }, { "prod dim 1", prod_dim1 },
	};
	static const enum vnpu_at_dtype dts[] = { VNPU_AT_F32, VNPU_AT_I32 };
	int64_t sz[2] = { 6, 7 };

	ot_seed(17);
	for (size_t d = 0; d < 2; d++) {
		bool f = dts[d] == VNPU_AT_F32;
		struct vnpu_at_tensor *a = ot_rand(2, sz, dts[d], -4, 4, OT_STRIDED);
		struct vnpu_at_tensor *b = ot_rand(1, sz + 1, dts[d], 1, 3, OT_CONTIG);
		struct vnpu_at_tensor *an = ot_to_npu(a), *bn = ot_to_npu(b), *w, *g;

		vnpu_fallback_reset();
		for (size_t i = 0; i < sizeof(bin) / sizeof(bin[0]); i++) {
			if (!f && !bin[i].ints)
				continue;
			w = bin[i].fn(a, b);
			g = bin[i].fn(an, bn);
			ck_assert_msg(w && g, "%s: %s", bin[i].name, vnpu_at_error_message());
			ot_expect_close(bin[i].name, w, g, f ? 1e-5 : 0, f ? 1e-6 : 0);
			vnpu_at_release(w);
			vnpu_at_release(g);
		}
		for (size_t i = 0; i < sizeof(un) / sizeof(un[0]); i++) {
			w = un[i].fn(a);
			g = un[i].fn(an);
			ck_assert_msg(w && g, "%s: %s", un[i].name, vnpu_at_error_message());
			/* an integer input's float result is float32 too */
			f = vnpu_at_dtype_is_float(w->dtype);
			ot_expect_close(un[i].name, w, g, f ? 1e-5 : 0, f ? 1e-6 : 0);
			f = dts[d] == VNPU_AT_F32;
			vnpu_at_release(w);
			vnpu_at_release(g);
		}
		expect_on_device("arithmetic and math ops");
		if (!f) {
			struct vnpu_at_tensor *z = vnpu_op_zeros_like(bn, VNPU_AT_DTYPE_NONE,
								      VNPU_AT_DEV_NONE);

			ck_assert_ptr_null(vnpu_op_remainder_Tensor(an, z));
			ck_assert_ptr_nonnull(strstr(vnpu_at_error_message(),
						     "ZeroDivisionError"));
			vnpu_at_release(z);
		}
		vnpu_at_release(a);
		vnpu_at_release(b);
		vnpu_at_release(an);
		vnpu_at_release(bn);
	}
}
END_TEST

/* Expects two results of one backward op to agree (NULL where the mask
 * left a gradient out: both). */
static void expect_grads(const char *what, struct vnpu_at_tensor **w,
			 struct vnpu_at_tensor **g, uint32_t n, double tol)
{
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_msg(!w[i] == !g[i], "%s: gradient %u defined on one side only",
			      what, i);
		if (w[i])
			ot_expect_close(what, w[i], g[i], tol, tol);
		vnpu_at_release(w[i]);
		vnpu_at_release(g[i]);
	}
}

/* The nn layers' backward ops and hard activations: the device (no
 * fallback) against the same composites and the C kernels on the CPU. */
START_TEST(nn_backward_ops)
{
	static const struct {
		int64_t w[4], stride, pad, dil, groups;
	} convs[] = {
		{ { 6, 8, 3, 3 }, 1, 1, 1, 1 },
		{ { 6, 8, 3, 3 }, 2, 1, 1, 1 },
		{ { 6, 4, 3, 2 }, 2, 2, 2, 2 },
		{ { 8, 1, 3, 3 }, 2, 1, 1, 8 },
		{ { 3, 8, 2, 2 }, 3, 4, 1, 1 },
	};
	int64_t xs[4] = { 2, 8, 9, 8 }, cs[1] = { 8 };
	struct vnpu_at_bool_list all = { 3, 7 }, input_only = { 3, 1 };
	struct vnpu_at_tensor *x, *xn;

	ot_seed(23);
	x = ot_rand(4, xs, VNPU_AT_F32, -2, 2, OT_CONTIG);
	xn = ot_to_npu(x);
	vnpu_fallback_reset();
	for (size_t c = 0; c < sizeof(convs) / sizeof(convs[0]); c++) {
		struct vnpu_at_tensor *w = ot_rand(4, convs[c].w, VNPU_AT_F32, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *wn = ot_to_npu(w);
		struct vnpu_at_tensor *y = vnpu_op_convolution(x, w, NULL,
			VNPU_AT_INTS(convs[c].stride), VNPU_AT_INTS(convs[c].pad),
			VNPU_AT_INTS(convs[c].dil), false, VNPU_AT_INTS(0), convs[c].groups);
		struct vnpu_at_tensor *go, *gon;
		struct vnpu_ret_convolution_backward rw, rg;

		ck_assert_msg(y, "conv %zu: %s", c, vnpu_at_error_message());
		go = ot_rand(y->ndim, y->sizes, VNPU_AT_F32, -1, 1, OT_STRIDED);
		gon = ot_to_npu(go);
		rw = vnpu_op_convolution_backward(go, x, w, (struct vnpu_at_opt_int_array){ 0 },
			VNPU_AT_INTS(convs[c].stride), VNPU_AT_INTS(convs[c].pad),
			VNPU_AT_INTS(convs[c].dil), false, VNPU_AT_INTS(0), convs[c].groups,
			c == 1 ? input_only : all);
		rg = vnpu_op_convolution_backward(gon, xn, wn, (struct vnpu_at_opt_int_array){ 0 },
			VNPU_AT_INTS(convs[c].stride), VNPU_AT_INTS(convs[c].pad),
			VNPU_AT_INTS(convs[c].dil), false, VNPU_AT_INTS(0), convs[c].groups,
			c == 1 ? input_only : all);
		ck_assert_msg(rw.r0 && rg.r0, "conv %zu backward: %s", c, vnpu_at_error_message());
		expect_grads("convolution_backward", (struct vnpu_at_tensor *[]){ rw.r0, rw.r1, rw.r2 },
			     (struct vnpu_at_tensor *[]){ rg.r0, rg.r1, rg.r2 }, 3, 1e-4);
		vnpu_at_release(w);
		vnpu_at_release(wn);
		vnpu_at_release(y);
		vnpu_at_release(go);
		vnpu_at_release(gon);
	}
	for (int train = 0; train < 2; train++) {
		struct vnpu_at_tensor *g = ot_rand(4, xs, VNPU_AT_F32, -1, 1, OT_STRIDED);
		struct vnpu_at_tensor *w = ot_rand(1, cs, VNPU_AT_F32, 0.5, 2, OT_CONTIG);
		struct vnpu_at_tensor *m = ot_rand(1, cs, VNPU_AT_F32, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *v = ot_rand(1, cs, VNPU_AT_F32, 0.5, 2, OT_CONTIG);
		struct vnpu_at_tensor *on[5] = { ot_to_npu(g), ot_to_npu(w), ot_to_npu(m),
						 ot_to_npu(v), NULL };
		struct vnpu_ret_native_batch_norm_backward rw, rg;

		/* train: the saved mean and inverse std; m and v stand for them */
		rw = vnpu_op_native_batch_norm_backward(g, x, w, m, v, m, v, train, 1e-5, all);
		rg = vnpu_op_native_batch_norm_backward(on[0], xn, on[1], on[2], on[3], on[2],
							on[3], train, 1e-5, all);
		ck_assert_msg(rw.r0 && rg.r0, "batch norm backward: %s", vnpu_at_error_message());
		expect_grads("native_batch_norm_backward",
			     (struct vnpu_at_tensor *[]){ rw.r0, rw.r1, rw.r2 },
			     (struct vnpu_at_tensor *[]){ rg.r0, rg.r1, rg.r2 }, 3, 1e-4);
		vnpu_at_release(g);
		vnpu_at_release(w);
		vnpu_at_release(m);
		vnpu_at_release(v);
		for (int i = 0; i < 4; i++)
			vnpu_at_release(on[i]);
	}
	{
		struct vnpu_ret_max_pool2d_with_indices pw, pg;
		struct vnpu_at_tensor *go, *gon, *w[1], *g[1];

		pw = vnpu_op_max_pool2d_with_indices(x, VNPU_AT_INTS(3), VNPU_AT_INTS(2),
						     VNPU_AT_INTS(1), VNPU_AT_INTS(1), true);
		pg = vnpu_op_max_pool2d_with_indices(xn, VNPU_AT_INTS(3), VNPU_AT_INTS(2),
						     VNPU_AT_INTS(1), VNPU_AT_INTS(1), true);
		ck_assert(pw.r0 && pg.r0);
		go = ot_rand(pw.r0->ndim, pw.r0->sizes, VNPU_AT_F32, -1, 1, OT_STRIDED);
		gon = ot_to_npu(go);
		w[0] = vnpu_op_max_pool2d_with_indices_backward(go, x, VNPU_AT_INTS(3),
			VNPU_AT_INTS(2), VNPU_AT_INTS(1), VNPU_AT_INTS(1), true, pw.r1);
		g[0] = vnpu_op_max_pool2d_with_indices_backward(gon, xn, VNPU_AT_INTS(3),
			VNPU_AT_INTS(2), VNPU_AT_INTS(1), VNPU_AT_INTS(1), true, pg.r1);
		ck_assert_msg(w[0] && g[0], "max pool backward: %s", vnpu_at_error_message());
		expect_grads("max_pool2d_with_indices_backward", w, g, 1, 1e-6);
		/* avg pooling of the same window, padding left out of the
		 * divisor */
		w[0] = vnpu_op_avg_pool2d_backward(go, x, VNPU_AT_INTS(3), VNPU_AT_INTS(2),
						   VNPU_AT_INTS(1), true, false,
						   (struct vnpu_at_opt_int){ 0 });
		g[0] = vnpu_op_avg_pool2d_backward(gon, xn, VNPU_AT_INTS(3), VNPU_AT_INTS(2),
						   VNPU_AT_INTS(1), true, false,
						   (struct vnpu_at_opt_int){ 0 });
		ck_assert_msg(w[0] && g[0], "avg pool backward: %s", vnpu_at_error_message());
		expect_grads("avg_pool2d_backward", w, g, 1, 1e-6);
		vnpu_at_release(pw.r0);
		vnpu_at_release(pw.r1);
		vnpu_at_release(pg.r0);
		vnpu_at_release(pg.r1);
		vnpu_at_release(go);
		vnpu_at_release(gon);
	}
	{
		struct vnpu_at_tensor *g = ot_rand(4, xs, VNPU_AT_F32, -1, 1, OT_STRIDED);
		struct vnpu_at_tensor *gn = ot_to_npu(g), *w[4], *d[4];
		struct vnpu_at_tensor *x5 = vnpu_op_mul_Scalar(x, VNPU_AT_DOUBLE(2.5));
		struct vnpu_at_tensor *x5n = ot_to_npu(x5);

		w[0] = vnpu_op_hardsigmoid(x5);
		d[0] = vnpu_op_hardsigmoid(x5n);
		w[1] = vnpu_op_hardswish(x5);
		d[1] = vnpu_op_hardswish(x5n);
		w[2] = vnpu_op_hardsigmoid_backward(g, x5);
		d[2] = vnpu_op_hardsigmoid_backward(gn, x5n);
		w[3] = vnpu_op_hardswish_backward(g, x5);
		d[3] = vnpu_op_hardswish_backward(gn, x5n);
		expect_grads("hard activations", w, d, 4, 1e-6);
		vnpu_at_release(g);
		vnpu_at_release(gn);
		vnpu_at_release(x5);
		vnpu_at_release(x5n);
	}
	expect_on_device("nn backward ops");
	vnpu_at_release(x);
	vnpu_at_release(xn);
}
END_TEST

/* Powers without a device kernel and int64 go through the fallback. */
START_TEST(fallback_cases)
{
	int64_t sz[2] = { 3, 5 };
	struct vnpu_at_tensor *x = ot_rand(2, sz, VNPU_AT_F32, 0.5, 2, OT_CONTIG);
	struct vnpu_at_tensor *xn = ot_to_npu(x), *w, *g;

	vnpu_fallback_reset();
	w = vnpu_op_pow_Tensor_Scalar(x, VNPU_AT_DOUBLE(3.0));
	g = vnpu_op_pow_Tensor_Scalar(xn, VNPU_AT_DOUBLE(3.0));
	ck_assert(vnpu_at_is_npu(g));
	ot_expect_close("pow 3 (fallback)", w, g, 1e-6, 1e-6);
	expect_fell_back("aten::pow.Tensor_Scalar");
	vnpu_at_release(w);
	vnpu_at_release(g);
	w = vnpu_op_gelu(x, "tanh");
	g = vnpu_op_gelu(xn, "tanh");
	ot_expect_close("gelu tanh (fallback)", w, g, 1e-6, 1e-6);
	expect_fell_back("aten::gelu");
	vnpu_at_release(w);
	vnpu_at_release(g);
	/* errors come from the CPU kernel, naming the op */
	g = vnpu_op_gelu(xn, "bogus");
	ck_assert_ptr_null(g);
	ck_assert_ptr_nonnull(strstr(vnpu_at_error_message(), "aten::gelu"));
	vnpu_at_error_clear();
	vnpu_at_release(x);
	vnpu_at_release(xn);
}
END_TEST

/* ---- binary ----------------------------------------------------------------------- */

typedef struct vnpu_at_tensor *(*binary_fn)(struct vnpu_at_tensor *a,
					    struct vnpu_at_tensor *b);

static struct vnpu_at_tensor *b_sub(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	return vnpu_op_sub_Tensor(a, b, VNPU_AT_DOUBLE(2.0));
}
static struct vnpu_at_tensor *b_div(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	return vnpu_op_div_Tensor(a, b);
}
static struct vnpu_at_tensor *b_max(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	return vnpu_op_maximum(a, b);
}
static struct vnpu_at_tensor *b_min(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	return vnpu_op_minimum(a, b);
}
static struct vnpu_at_tensor *b_eq(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b) { return vnpu_op_eq_Tensor(a, b); }
static struct vnpu_at_tensor *b_ne(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b) { return vnpu_op_ne_Tensor(a, b); }
static struct vnpu_at_tensor *b_lt(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b) { return vnpu_op_lt_Tensor(a, b); }
static struct vnpu_at_tensor *b_le(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b) { return vnpu_op_le_Tensor(a, b); }
static struct vnpu_at_tensor *b_gt(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b) { return vnpu_op_gt_Tensor(a, b); }
static struct vnpu_at_tensor *b_ge(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b) { return vnpu_op_ge_Tensor(a, b); }
static struct vnpu_at_tensor *b_thr(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	return vnpu_op_threshold_backward(a, b, VNPU_AT_DOUBLE(0.0));
}
static struct vnpu_at_tensor *b_sigbw(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	return vnpu_op_sigmoid_backward(a, b);
}
static struct vnpu_at_tensor *b_tanhbw(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	return vnpu_op_tanh_backward(a, b);
}
static struct vnpu_at_tensor *b_mse(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	return vnpu_op_mse_loss(a, b, 0);
}
static struct vnpu_at_tensor *b_where(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b)
{
	struct vnpu_at_tensor *c = vnpu_op_gt_Tensor(a, b), *r;

	r = c ? vnpu_op_where_self(c, b, a) : NULL;
	vnpu_at_release(c);
	return r;
}

static const struct {
	const char *name;
	binary_fn fn;
	bool quantized;	/* integer-valued inputs: ties for comparisons */
} binaries[] = {
	{ "sub", b_sub, false }, { "div", b_div, false },
	{ "maximum", b_max, true }, { "minimum", b_min, true },
	{ "eq", b_eq, true }, { "ne", b_ne, true }, { "lt", b_lt, true },
	{ "le", b_le, true }, { "gt", b_gt, true }, { "ge", b_ge, true },
	{ "threshold_backward", b_thr, false },
	{ "sigmoid_backward", b_sigbw, false },
	{ "tanh_backward", b_tanhbw, false },
	{ "mse_loss none", b_mse, false },
	{ "where", b_where, true },
};

static const struct {
	uint32_t na, nb;
	int64_t a[3], b[3];
} bshapes[] = {
	{ 2, 2, { 15, 17 }, { 15, 17 } },
	{ 2, 1, { 15, 1 }, { 17 } },
	{ 3, 2, { 2, 3, 17 }, { 3, 1 } },
	{ 2, 1, { 0, 17 }, { 1 } },
	{ 1, 0, { 16 }, { 0 } },
};

START_TEST(binary_ops)
{
	const struct tol *tl = &dtypes[_i];

	ot_seed(200 + (uint64_t)_i);
	for (size_t o = 0; o < sizeof(binaries) / sizeof(binaries[0]); o++)
		for (size_t s = 0; s < sizeof(bshapes) / sizeof(bshapes[0]); s++)
			for (int lay = OT_CONTIG; lay <= OT_TRANSPOSED; lay++) {
		double lo = binaries[o].quantized ? -3 : -2;
		double hi = binaries[o].quantized ? 3 : 2;
		struct vnpu_at_tensor *a, *b, *an, *bn, *want, *got;
		char what[96];

		a = ot_rand(bshapes[s].na, bshapes[s].a, tl->dt, lo, hi,
			    (enum ot_layout)lay);
		/* divisors away from 0 */
		b = ot_rand(bshapes[s].nb, bshapes[s].b, tl->dt,
			    binaries[o].fn == b_div ? 0.5 : lo,
			    binaries[o].fn == b_div ? 2 : hi, OT_CONTIG);
		if (binaries[o].quantized) {
			quantize(a);
			quantize(b);
		}
		an = ot_to_npu(a);
		/* a 0-dim b stays on the CPU, as a CUDA kernel's scalar */
		bn = b->ndim ? ot_to_npu(b) : vnpu_at_retain(b);
		snprintf(what, sizeof(what), "%s %s shape %zu layout %d",
			 binaries[o].name, vnpu_at_dtype_name(tl->dt), s, lay);
		want = binaries[o].fn(a, b);
		vnpu_fallback_reset();
		got = binaries[o].fn(an, bn);
		expect_on_device(what);
		ot_expect_close(what, want, got, tl->rtol, tl->atol);
		vnpu_at_release(a);
		vnpu_at_release(b);
		vnpu_at_release(an);
		vnpu_at_release(bn);
		vnpu_at_release(want);
		vnpu_at_release(got);
			}
}
END_TEST

START_TEST(scalar_compare_and_cat)
{
	const struct tol *tl = &dtypes[_i];
	int64_t s1[2] = { 2, 17 }, s2[2] = { 0, 17 }, s3[2] = { 3, 17 };
	struct vnpu_at_tensor *a, *b, *c, *an, *bn, *cn, *want, *got;

	ot_seed(300 + (uint64_t)_i);
	a = ot_rand(2, s1, tl->dt, -3, 3, OT_STRIDED);
	quantize(a);
	an = ot_to_npu(a);
	vnpu_fallback_reset();
	want = vnpu_op_eq_Scalar(a, VNPU_AT_INT(1));
	got = vnpu_op_eq_Scalar(an, VNPU_AT_INT(1));
	ot_expect_close("eq.Scalar", want, got, 0, 0);
	vnpu_at_release(want);
	vnpu_at_release(got);
	want = vnpu_op_gt_Scalar(a, VNPU_AT_DOUBLE(0.5));
	got = vnpu_op_gt_Scalar(an, VNPU_AT_DOUBLE(0.5));
	ot_expect_close("gt.Scalar", want, got, 0, 0);
	vnpu_at_release(want);
	vnpu_at_release(got);

	b = ot_rand(2, s2, tl->dt, -3, 3, OT_CONTIG);
	c = ot_rand(2, s3, VNPU_AT_F32, -3, 3, OT_TRANSPOSED);
	bn = ot_to_npu(b);
	cn = ot_to_npu(c);
	want = vnpu_op_cat((struct vnpu_at_tensor_list){
		(struct vnpu_at_tensor *[]){ a, b, c }, 3 }, 0);
	got = vnpu_op_cat((struct vnpu_at_tensor_list){
		(struct vnpu_at_tensor *[]){ an, bn, cn }, 3 }, 0);
	ot_expect_close("cat dim 0 (promoted)", want, got, 0, 0);
	vnpu_at_release(want);
	vnpu_at_release(got);
	want = vnpu_op_cat((struct vnpu_at_tensor_list){
		(struct vnpu_at_tensor *[]){ a, a }, 2 }, -1);
	got = vnpu_op_cat((struct vnpu_at_tensor_list){
		(struct vnpu_at_tensor *[]){ an, an }, 2 }, -1);
	ot_expect_close("cat dim -1", want, got, 0, 0);
	expect_on_device("eq/gt.Scalar, cat");
	vnpu_at_release(want);
	vnpu_at_release(got);
	vnpu_at_release(a);
	vnpu_at_release(b);
	vnpu_at_release(c);
	vnpu_at_release(an);
	vnpu_at_release(bn);
	vnpu_at_release(cn);
}
END_TEST

/* ---- reductions ------------------------------------------------------------------- */

START_TEST(reductions)
{
	const struct tol *tl = &dtypes[_i];
	static const struct {
		uint32_t nd;
		int64_t s[3];
	} rs[] = { { 2, { 15, 17 } }, { 3, { 2, 3, 17 } }, { 2, { 1, 33 } } };

	ot_seed(400 + (uint64_t)_i);
	for (size_t s = 0; s < 3; s++)
		for (int lay = OT_CONTIG; lay <= OT_TRANSPOSED; lay++) {
		struct vnpu_at_tensor *x = ot_rand(rs[s].nd, rs[s].s, tl->dt, -2, 2,
						   (enum ot_layout)lay);
		struct vnpu_at_tensor *xn = ot_to_npu(x);
		struct vnpu_at_tensor *w, *g;
		struct vnpu_ret_max_dim mw, mg;
		int64_t d1 = 1, dl[2] = { 0, -1 };
		struct vnpu_at_int_array one = { &d1, 1 }, two = { dl, 2 };

		vnpu_fallback_reset();
#define RED_CASE(label, call_cpu, call_npu, tol)				\
		do {							\
			w = call_cpu;					\
			g = call_npu;					\
			ot_expect_close(label, w, g, tol, tol);		\
			vnpu_at_release(w);				\
			vnpu_at_release(g);				\
		} while (0)
		RED_CASE("amax dim 1", vnpu_op_amax(x, one, false),
			 vnpu_op_amax(xn, one, false), 0);
		RED_CASE("amin all keepdim", vnpu_op_amin(x, VNPU_AT_NO_INTS, true),
			 vnpu_op_amin(xn, VNPU_AT_NO_INTS, true), 0);
		RED_CASE("argmax flat", vnpu_op_argmax(x, VNPU_AT_NO_INT, false),
			 vnpu_op_argmax(xn, VNPU_AT_NO_INT, false), 0);
		RED_CASE("argmax flat keepdim",
			 vnpu_op_argmax(x, VNPU_AT_NO_INT, true),
			 vnpu_op_argmax(xn, VNPU_AT_NO_INT, true), 0);
		RED_CASE("argmin dim 1 keepdim",
			 vnpu_op_argmin(x, VNPU_AT_SOME_INT(1), true),
			 vnpu_op_argmin(xn, VNPU_AT_SOME_INT(1), true), 0);
		RED_CASE("sum dims 0,-1",
			 vnpu_op_sum_dim_IntList(x, (struct vnpu_at_opt_int_array){ true, two },
						 false, VNPU_AT_DTYPE_NONE),
			 vnpu_op_sum_dim_IntList(xn, (struct vnpu_at_opt_int_array){ true, two },
						 false, VNPU_AT_DTYPE_NONE),
			 tl->red);
		RED_CASE("mean", vnpu_op_mean(x, VNPU_AT_DTYPE_NONE),
			 vnpu_op_mean(xn, VNPU_AT_DTYPE_NONE), tl->red);
		RED_CASE("mean dim 1 keepdim",
			 vnpu_op_mean_dim(x, (struct vnpu_at_opt_int_array){ true, one },
					  true, VNPU_AT_DTYPE_NONE),
			 vnpu_op_mean_dim(xn, (struct vnpu_at_opt_int_array){ true, one },
					  true, VNPU_AT_DTYPE_NONE),
			 tl->red);
		RED_CASE("mse_loss mean", vnpu_op_mse_loss(x, x, 1),
			 vnpu_op_mse_loss(xn, xn, 1), tl->red);
#undef RED_CASE
		mw = vnpu_op_max_dim(x, -1, true);
		mg = vnpu_op_max_dim(xn, -1, true);
		ot_expect_close("max.dim values", mw.r0, mg.r0, 0, 0);
		ot_expect_close("max.dim indices", mw.r1, mg.r1, 0, 0);
		expect_on_device("reductions");
		vnpu_at_release(mw.r0);
		vnpu_at_release(mw.r1);
		vnpu_at_release(mg.r0);
		vnpu_at_release(mg.r1);
		vnpu_at_release(x);
		vnpu_at_release(xn);
		}
}
END_TEST

/* ---- softmax backward, layer norm, mse backward ---------------------------------------- */

START_TEST(norms_and_backward)
{
	const struct tol *tl = &dtypes[_i];
	int64_t sz[3] = { 2, 15, 17 }, ns[2] = { 15, 17 };

	ot_seed(500 + (uint64_t)_i);
	for (int lay = OT_CONTIG; lay <= OT_TRANSPOSED; lay++) {
		struct vnpu_at_tensor *x = ot_rand(3, sz, tl->dt, -2, 2, (enum ot_layout)lay);
		struct vnpu_at_tensor *gr = ot_rand(3, sz, tl->dt, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *wt = ot_rand(2, ns, tl->dt, 0.5, 1.5, OT_CONTIG);
		struct vnpu_at_tensor *bs = ot_rand(1, ns + 1, VNPU_AT_F32, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *xn = ot_to_npu(x), *gn = ot_to_npu(gr);
		struct vnpu_at_tensor *wn = ot_to_npu(wt), *bn = ot_to_npu(bs);
		struct vnpu_at_tensor *y, *yn, *w, *g;
		struct vnpu_ret_native_layer_norm lw, lg;

		vnpu_fallback_reset();
		y = vnpu_op__softmax(x, 1, false);
		yn = vnpu_op__softmax(xn, 1, false);
		w = vnpu_op__softmax_backward_data(gr, y, 1, tl->dt);
		g = vnpu_op__softmax_backward_data(gn, yn, 1, tl->dt);
		ot_expect_close("_softmax_backward_data", w, g, tl->red, tl->red);
		vnpu_at_release(w);
		vnpu_at_release(g);
		vnpu_at_release(y);
		vnpu_at_release(yn);
		y = vnpu_op__log_softmax(x, -1, false);
		yn = vnpu_op__log_softmax(xn, -1, false);
		w = vnpu_op__log_softmax_backward_data(gr, y, -1, tl->dt);
		g = vnpu_op__log_softmax_backward_data(gn, yn, -1, tl->dt);
		ot_expect_close("_log_softmax_backward_data", w, g, tl->red, tl->red);
		vnpu_at_release(w);
		vnpu_at_release(g);
		vnpu_at_release(y);
		vnpu_at_release(yn);
		w = vnpu_op_mse_loss_backward(gr, x, gr, 2);
		g = vnpu_op_mse_loss_backward(gn, xn, gn, 2);
		ot_expect_close("mse_loss_backward", w, g, tl->rtol, tl->atol);
		vnpu_at_release(w);
		vnpu_at_release(g);

		/* layer norm over [15, 17] with weight (input dtype) */
		lw = vnpu_op_native_layer_norm(x, (struct vnpu_at_int_array){ ns, 2 },
					       wt, NULL, 1e-5);
		lg = vnpu_op_native_layer_norm(xn, (struct vnpu_at_int_array){ ns, 2 },
					       wn, NULL, 1e-5);
		ot_expect_close("layer_norm out", lw.r0, lg.r0, tl->red, tl->red);
		/* f16/bf16 statistics are float32 on both sides */
		ot_expect_close("layer_norm mean", lw.r1, lg.r1, 1e-4, 1e-4);
		ot_expect_close("layer_norm rstd", lw.r2, lg.r2, 1e-4, 1e-4);
		vnpu_at_release(lw.r0);
		vnpu_at_release(lw.r1);
		vnpu_at_release(lw.r2);
		vnpu_at_release(lg.r0);
		vnpu_at_release(lg.r1);
		vnpu_at_release(lg.r2);
		/* over [17] with a float32 bias only; and both */
		lw = vnpu_op_native_layer_norm(x, (struct vnpu_at_int_array){ ns + 1, 1 },
					       NULL, bs, 1e-5);
		lg = vnpu_op_native_layer_norm(xn, (struct vnpu_at_int_array){ ns + 1, 1 },
					       NULL, bn, 1e-5);
		ot_expect_close("layer_norm bias", lw.r0, lg.r0, tl->red, tl->red);
		vnpu_at_release(lw.r0);
		vnpu_at_release(lw.r1);
		vnpu_at_release(lw.r2);
		vnpu_at_release(lg.r0);
		vnpu_at_release(lg.r1);
		vnpu_at_release(lg.r2);
		expect_on_device("softmax backward, layer norm, mse backward");
		vnpu_at_release(x);
		vnpu_at_release(gr);
		vnpu_at_release(wt);
		vnpu_at_release(bs);
		vnpu_at_release(xn);
		vnpu_at_release(gn);
		vnpu_at_release(wn);
		vnpu_at_release(bn);
	}
}
END_TEST

/* Batch norm: training (running stats updated in place on both devices)
 * then eval with the updated stats. */
START_TEST(batch_norm)
{
	const struct tol *tl = &dtypes[_i];
	int64_t xs[4] = { 3, 5, 7, 9 }, C = 5;

	ot_seed(800 + (uint64_t)_i);
	for (int lay = OT_CONTIG; lay <= OT_TRANSPOSED; lay++) {
		struct vnpu_at_tensor *x = ot_rand(4, xs, tl->dt, -2, 2, (enum ot_layout)lay);
		struct vnpu_at_tensor *w = ot_rand(1, &C, tl->dt, 0.5, 1.5, OT_CONTIG);
		struct vnpu_at_tensor *b = ot_rand(1, &C, tl->dt, -1, 1, OT_STRIDED);
		struct vnpu_at_tensor *rm = ot_rand(1, &C, VNPU_AT_F32, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *rv = ot_rand(1, &C, VNPU_AT_F32, 0.5, 2, OT_CONTIG);
		struct vnpu_at_tensor *xn = ot_to_npu(x), *wn = ot_to_npu(w);
		struct vnpu_at_tensor *bn = ot_to_npu(b), *rmn = ot_to_npu(rm);
		struct vnpu_at_tensor *rvn = ot_to_npu(rv);
		struct vnpu_ret_native_batch_norm cw, cg;

		vnpu_fallback_reset();
		for (int train = 1; train >= 0; train--) {
			cw = vnpu_op_native_batch_norm(x, w, b, rm, rv, train, 0.1, 1e-5);
			cg = vnpu_op_native_batch_norm(xn, wn, bn, rmn, rvn, train, 0.1,
						       1e-5);
			ot_expect_close("batch_norm out", cw.r0, cg.r0, tl->red, tl->red);
			ot_expect_close("batch_norm save_mean", cw.r1, cg.r1, 1e-4, 1e-4);
			ot_expect_close("batch_norm save_invstd", cw.r2, cg.r2, 1e-4, 1e-4);
			ot_expect_close("batch_norm running_mean", rm, rmn, 1e-4, 1e-4);
			ot_expect_close("batch_norm running_var", rv, rvn, 1e-4, 1e-4);
			vnpu_at_release(cw.r0);
			vnpu_at_release(cw.r1);
			vnpu_at_release(cw.r2);
			vnpu_at_release(cg.r0);
			vnpu_at_release(cg.r1);
			vnpu_at_release(cg.r2);
		}
		expect_on_device("batch_norm");
		vnpu_at_release(x);
		vnpu_at_release(w);
		vnpu_at_release(b);
		vnpu_at_release(rm);
		vnpu_at_release(rv);
		vnpu_at_release(xn);
		vnpu_at_release(wn);
		vnpu_at_release(bn);
		vnpu_at_release(rmn);
		vnpu_at_release(rvn);
	}
}
END_TEST

/* nll_loss forward/backward (one-hot on the device): weights, an ignored
 * class, every reduction, 1-D input; a bad target is reported. */
START_TEST(nll_loss)
{
	const struct tol *tl = &dtypes[_i];
	int64_t xs[2] = { 17, 5 }, C = 5;

	ot_seed(900 + (uint64_t)_i);
	for (int64_t red = 0; red < 3; red++)
		for (int wt = 0; wt < 2; wt++) {
		struct vnpu_at_tensor *x = ot_rand(2, xs, tl->dt, -3, 0, OT_TRANSPOSED);
		struct vnpu_at_tensor *t = ot_rand(1, xs, VNPU_AT_I64, 0, 5, OT_STRIDED);
		struct vnpu_at_tensor *w = wt ? ot_rand(1, &C, tl->dt, 0.5, 2, OT_CONTIG) : NULL;
		struct vnpu_at_tensor *xn = ot_to_npu(x), *tn, *wn = w ? ot_to_npu(w) : NULL;
		struct vnpu_at_tensor *g, *gn, *bw, *bg, *x1, *x1n, *t0, *t0n;
		struct vnpu_ret_nll_loss_forward fw, fg;
		int64_t gs = red ? 0 : 17;

		ot_set_flat(t, 0, 2);	/* class 2 is ignored */
		tn = ot_to_npu(t);
		vnpu_fallback_reset();
		fw = vnpu_op_nll_loss_forward(x, t, w, red, 2);
		fg = vnpu_op_nll_loss_forward(xn, tn, wn, red, 2);
		ot_expect_close("nll_loss_forward", fw.r0, fg.r0, tl->red, tl->red);
		ot_expect_close("nll_loss total_weight", fw.r1, fg.r1, tl->red, tl->red);
		g = ot_rand(red ? 0 : 1, &gs, tl->dt, 0.5, 1.5, OT_CONTIG);
		gn = ot_to_npu(g);
		bw = vnpu_op_nll_loss_backward(g, x, t, w, red, 2, fw.r1);
		bg = vnpu_op_nll_loss_backward(gn, xn, tn, wn, red, 2, fg.r1);
		ot_expect_close("nll_loss_backward", bw, bg, tl->red, tl->red);
		vnpu_at_release(bw);
		vnpu_at_release(bg);
		vnpu_at_release(fw.r0);
		vnpu_at_release(fw.r1);
		vnpu_at_release(fg.r0);
		vnpu_at_release(fg.r1);
		/* 1-D input, 0-dim target */
		x1 = vnpu_op_select_int(x, 0, 3);
		x1n = vnpu_op_select_int(xn, 0, 3);
		t0 = vnpu_op_select_int(t, 0, 3);
		t0n = vnpu_op_select_int(tn, 0, 3);
		fw = vnpu_op_nll_loss_forward(x1, t0, w, red, -100);
		fg = vnpu_op_nll_loss_forward(x1n, t0n, wn, red, -100);
		ot_expect_close("nll_loss_forward 1-D", fw.r0, fg.r0, tl->red, tl->red);
		expect_on_device("nll_loss");
		vnpu_at_release(fw.r0);
		vnpu_at_release(fw.r1);
		vnpu_at_release(fg.r0);
		vnpu_at_release(fg.r1);
		vnpu_at_release(x1);
		vnpu_at_release(x1n);
		vnpu_at_release(t0);
		vnpu_at_release(t0n);
		vnpu_at_release(tn);
		ot_set_flat(t, 5, 7);
		tn = ot_to_npu(t);
		fg = vnpu_op_nll_loss_forward(xn, tn, wn, red, 2);
		ck_assert_ptr_null(fg.r0);
		ck_assert_ptr_nonnull(strstr(vnpu_at_error_message(),
					     "Target 7 is out of bounds"));
		vnpu_at_error_clear();
		vnpu_at_release(x);
		vnpu_at_release(t);
		vnpu_at_release(w);
		vnpu_at_release(xn);
		vnpu_at_release(tn);
		vnpu_at_release(wn);
		vnpu_at_release(g);
		vnpu_at_release(gn);
		}
}
END_TEST

/* ---- GEMM ------------------------------------------------------------------------- */

START_TEST(bmm_addmm)
{
	const struct tol *tl = &dtypes[_i];
	int64_t a3[3] = { 2, 15, 17 }, b3[3] = { 2, 17, 16 };
	int64_t m1[2] = { 15, 33 }, m2[2] = { 33, 17 }, wts[2] = { 17, 33 };
	int64_t bias1 = 17, bias2[2] = { 15, 1 };
	double atol = tl->red * 4;	/* K = 33 terms of |x| < 1 */

	ot_seed(600 + (uint64_t)_i);
	for (int lay = OT_CONTIG; lay <= OT_TRANSPOSED; lay++) {
		struct vnpu_at_tensor *a = ot_rand(3, a3, tl->dt, -1, 1, (enum ot_layout)lay);
		struct vnpu_at_tensor *b = ot_rand(3, b3, tl->dt, -1, 1, (enum ot_layout)lay);
		struct vnpu_at_tensor *x = ot_rand(2, m1, tl->dt, -1, 1, (enum ot_layout)lay);
		struct vnpu_at_tensor *y = ot_rand(2, m2, tl->dt, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *wt = ot_rand(2, wts, tl->dt, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *c1 = ot_rand(1, &bias1, tl->dt, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *c2 = ot_rand(2, bias2, tl->dt, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *an = ot_to_npu(a), *bn = ot_to_npu(b);
		struct vnpu_at_tensor *xn = ot_to_npu(x), *yn = ot_to_npu(y);
		struct vnpu_at_tensor *wn = ot_to_npu(wt), *c1n = ot_to_npu(c1);
		struct vnpu_at_tensor *c2n = ot_to_npu(c2);
		struct vnpu_at_tensor *w, *g, *wtt, *wnt, *nz;

		vnpu_fallback_reset();
		w = vnpu_op_bmm(a, b);
		g = vnpu_op_bmm(an, bn);
		ot_expect_close("bmm", w, g, tl->red, atol);
		vnpu_at_release(w);
		vnpu_at_release(g);
		/* nn.Linear: addmm(bias, x, W^T), W^T a transposed view */
		wtt = vnpu_op_t(wt);
		wnt = vnpu_op_t(wn);
		w = vnpu_op_addmm(c1, x, wtt, VNPU_AT_INT(1), VNPU_AT_INT(1));
		g = vnpu_op_addmm(c1n, xn, wnt, VNPU_AT_INT(1), VNPU_AT_INT(1));
		ot_expect_close("addmm linear", w, g, tl->red, atol);
		vnpu_at_release(w);
		vnpu_at_release(g);
		w = vnpu_op_addmm(c2, x, y, VNPU_AT_DOUBLE(0.5), VNPU_AT_DOUBLE(2.0));
		g = vnpu_op_addmm(c2n, xn, yn, VNPU_AT_DOUBLE(0.5), VNPU_AT_DOUBLE(2.0));
		ot_expect_close("addmm beta/alpha", w, g, tl->red, 2 * atol);
		vnpu_at_release(w);
		vnpu_at_release(g);
		w = vnpu_op_addmm(c2, x, y, VNPU_AT_INT(0), VNPU_AT_INT(1));
		g = vnpu_op_addmm(c2n, xn, yn, VNPU_AT_INT(0), VNPU_AT_INT(1));
		ot_expect_close("addmm beta 0", w, g, tl->red, atol);
		vnpu_at_release(w);
		vnpu_at_release(g);
		/* baddbmm: c2 [15, 1] broadcast over the batch and columns */
		w = vnpu_op_baddbmm(c2, a, b, VNPU_AT_DOUBLE(0.5), VNPU_AT_DOUBLE(2.0));
		g = vnpu_op_baddbmm(c2n, an, bn, VNPU_AT_DOUBLE(0.5), VNPU_AT_DOUBLE(2.0));
		ot_expect_close("baddbmm beta/alpha", w, g, tl->red, 2 * atol);
		vnpu_at_release(w);
		vnpu_at_release(g);
		/* addbmm: the batch of 2 summed, c2 [15, 1] broadcast */
		w = vnpu_op_addbmm(c2, a, b, VNPU_AT_DOUBLE(0.5), VNPU_AT_DOUBLE(2.0));
		g = vnpu_op_addbmm(c2n, an, bn, VNPU_AT_DOUBLE(0.5), VNPU_AT_DOUBLE(2.0));
		ot_expect_close("addbmm beta/alpha", w, g, tl->red, 4 * atol);
		vnpu_at_release(w);
		vnpu_at_release(g);
		/* a FRACTAL_NZ mat2 goes to GEMM as it is */
		nz = vnpu_op_npu_format_cast(yn, VNPU_FORMAT_FRACTAL_NZ);
		ck_assert_msg(nz != NULL, "format cast: %s", vnpu_at_error_message());
		ck_assert_int_eq(vnpu_op_get_npu_format(nz), VNPU_FORMAT_FRACTAL_NZ);
		w = vnpu_op_addmm(c1, x, y, VNPU_AT_INT(1), VNPU_AT_INT(1));
		g = vnpu_op_addmm(c1n, xn, nz, VNPU_AT_INT(1), VNPU_AT_INT(1));
		ot_expect_close("addmm NZ weight", w, g, tl->red, atol);
		vnpu_at_release(w);
		vnpu_at_release(g);
		expect_on_device("bmm/addmm");
		vnpu_at_release(nz);
		vnpu_at_release(wtt);
		vnpu_at_release(wnt);
		vnpu_at_release(a);
		vnpu_at_release(b);
		vnpu_at_release(x);
		vnpu_at_release(y);
		vnpu_at_release(wt);
		vnpu_at_release(c1);
		vnpu_at_release(c2);
		vnpu_at_release(an);
		vnpu_at_release(bn);
		vnpu_at_release(xn);
		vnpu_at_release(yn);
		vnpu_at_release(wn);
		vnpu_at_release(c1n);
		vnpu_at_release(c2n);
	}
}
END_TEST

/* ---- convolution and pooling -------------------------------------------------------- */

START_TEST(conv_pool)
{
	const struct tol *tl = &dtypes[_i];
	static const struct {
		int64_t in[4], w[4];
		int64_t stride, pad, dil, groups;
		bool bias;
	} cs[] = {
		{ { 2, 5, 9, 11 }, { 6, 5, 3, 3 }, 1, 1, 1, 1, true },
		{ { 1, 6, 10, 9 }, { 4, 3, 3, 3 }, 2, 1, 1, 2, false },
		{ { 2, 17, 7, 8 }, { 3, 17, 1, 1 }, 1, 0, 1, 1, true },
		{ { 1, 3, 12, 12 }, { 5, 3, 3, 2 }, 1, 2, 2, 1, true },
	};

	ot_seed(700 + (uint64_t)_i);
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		struct vnpu_at_tensor *x = ot_rand(4, cs[c].in, tl->dt, -1, 1,
						   c % 2 ? OT_STRIDED : OT_CONTIG);
		struct vnpu_at_tensor *wt = ot_rand(4, cs[c].w, tl->dt, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *b = cs[c].bias ?
			ot_rand(1, cs[c].w, tl->dt, -1, 1, OT_CONTIG) : NULL;
		struct vnpu_at_tensor *xn = ot_to_npu(x), *wn = ot_to_npu(wt);
		struct vnpu_at_tensor *bn = b ? ot_to_npu(b) : NULL, *w, *g;
		struct vnpu_at_int_array st = { &cs[c].stride, 1 };
		struct vnpu_at_int_array pd = { &cs[c].pad, 1 };
		struct vnpu_at_int_array dl = { &cs[c].dil, 1 };
		double atol = tl->red * 4;

		vnpu_fallback_reset();
		w = vnpu_op_convolution(x, wt, b, st, pd, dl, false,
					VNPU_AT_NO_INTS, cs[c].groups);
		for (int rep = 0; rep < 2; rep++) {	/* 2nd: cached FRACTAL_Z */
			g = vnpu_op_convolution(xn, wn, bn, st, pd, dl, false,
						VNPU_AT_NO_INTS, cs[c].groups);
			ot_expect_close("convolution", w, g, tl->red, atol);
			vnpu_at_release(g);
		}
		expect_on_device("convolution");
		vnpu_at_release(w);
		vnpu_at_release(x);
		vnpu_at_release(wt);
		vnpu_at_release(b);
		vnpu_at_release(xn);
		vnpu_at_release(wn);
		vnpu_at_release(bn);
	}
	{
		int64_t in4[4] = { 2, 3, 15, 17 }, in3[3] = { 4, 9, 9 };
		struct vnpu_at_tensor *x = ot_rand(4, in4, tl->dt, -2, 2, OT_TRANSPOSED);
		struct vnpu_at_tensor *y = ot_rand(3, in3, tl->dt, -2, 2, OT_STRIDED);
		struct vnpu_at_tensor *xn = ot_to_npu(x), *yn = ot_to_npu(y);
		struct vnpu_ret_max_pool2d_with_indices mw, mg;
		struct vnpu_at_tensor *w, *g;

		vnpu_fallback_reset();
		mw = vnpu_op_max_pool2d_with_indices(x, VNPU_AT_INTS(3), VNPU_AT_INTS(2),
						     VNPU_AT_INTS(1), VNPU_AT_INTS(1), true);
		mg = vnpu_op_max_pool2d_with_indices(xn, VNPU_AT_INTS(3), VNPU_AT_INTS(2),
						     VNPU_AT_INTS(1), VNPU_AT_INTS(1), true);
		ot_expect_close("max_pool2d values", mw.r0, mg.r0, 0, 0);
		ot_expect_close("max_pool2d indices", mw.r1, mg.r1, 0, 0);
		vnpu_at_release(mw.r0);
		vnpu_at_release(mw.r1);
		vnpu_at_release(mg.r0);
		vnpu_at_release(mg.r1);
		mw = vnpu_op_max_pool2d_with_indices(y, VNPU_AT_INTS(2), VNPU_AT_NO_INTS,
						     VNPU_AT_INTS(0), VNPU_AT_INTS(2), false);
		mg = vnpu_op_max_pool2d_with_indices(yn, VNPU_AT_INTS(2), VNPU_AT_NO_INTS,
						     VNPU_AT_INTS(0), VNPU_AT_INTS(2), false);
		ot_expect_close("max_pool2d 3-D dilated", mw.r0, mg.r0, 0, 0);
		ot_expect_close("max_pool2d 3-D indices", mw.r1, mg.r1, 0, 0);
		vnpu_at_release(mw.r0);
		vnpu_at_release(mw.r1);
		vnpu_at_release(mg.r0);
		vnpu_at_release(mg.r1);
		for (int cip = 0; cip < 2; cip++) {
			w = vnpu_op_avg_pool2d(x, VNPU_AT_INTS(3, 2), VNPU_AT_INTS(2),
					       VNPU_AT_INTS(1), cip == 0, cip == 1,
					       VNPU_AT_NO_INT);
			g = vnpu_op_avg_pool2d(xn, VNPU_AT_INTS(3, 2), VNPU_AT_INTS(2),
					       VNPU_AT_INTS(1), cip == 0, cip == 1,
					       VNPU_AT_NO_INT);
			ot_expect_close("avg_pool2d", w, g, tl->rtol * 2, tl->atol * 2);
			vnpu_at_release(w);
			vnpu_at_release(g);
		}
		expect_on_device("pooling");
		vnpu_at_release(x);
		vnpu_at_release(y);
		vnpu_at_release(xn);
		vnpu_at_release(yn);
	}
}
END_TEST

/* float64 npu tensors (the device moves their bytes, the host converts):
 * copies with any strides in every direction, and the backward of
 * nll_loss and sum in float64 (issue 18's class 15) */
START_TEST(float64_copies)
{
	int64_t sz[2] = { 5, 7 };
	struct vnpu_at_tensor *c = ot_rand(2, sz, VNPU_AT_F64, -2, 2, OT_CONTIG);
	struct vnpu_at_tensor *n = ot_to_npu(c), *ct, *nt, *back, *d, *r;
	int64_t tsz[2] = { 7, 5 }, tst[2] = { 1, 7 };

	/* D2H of a transposed view */
	nt = vnpu_at_view_of(n, 2, tsz, tst, 0);
	ct = vnpu_at_view_of(c, 2, tsz, tst, 0);
	back = ot_to_cpu(nt);
	ot_expect_close("f64 D2H transposed", ct, back, 0, 0);
	vnpu_at_release(back);
	/* H2D into a transposed view, D2D between strided views, f64->f32 */
	d = vnpu_op_empty_memory_format(VNPU_AT_INTS(7, 5), VNPU_AT_F64,
					VNPU_AT_DEV_NPU(0));
	r = vnpu_op_copy_(d, ct, false);
	ck_assert_msg(r, "H2D: %s", vnpu_at_error_message());
	vnpu_at_release(r);
	ot_expect_close("f64 H2D", ct, d, 0, 0);
	r = vnpu_op_copy_(d, nt, false);
	ck_assert_msg(r, "D2D: %s", vnpu_at_error_message());
	vnpu_at_release(r);
	ot_expect_close("f64 D2D", ct, d, 0, 0);
	r = vnpu_op__to_copy(nt, VNPU_AT_F32, VNPU_AT_DEV_NPU(0), false);
	ck_assert_msg(r, "to f32: %s", vnpu_at_error_message());
	{
		struct vnpu_at_tensor *w = vnpu_op__to_copy(ct, VNPU_AT_F32,
							    VNPU_AT_DEV_CPU, false);

		ot_expect_close("f64 -> f32 on npu", w, r, 0, 0);
		vnpu_at_release(w);
	}
	vnpu_at_release(r);
	/* the gradient of sum over a float64 npu tensor */
	ck_assert(vnpu_at_set_requires_grad(n, true));
	r = vnpu_op_sum(n, VNPU_AT_DTYPE_NONE);
	ck_assert_msg(r && vnpu_at_backward(r), "backward: %s",
		      vnpu_at_error_message());
	ck_assert_msg(vnpu_at_grad(n) && vnpu_at_numel(vnpu_at_grad(n)) == 35,
		      "no gradient");
	vnpu_at_release(r);
	vnpu_at_release(d);
	vnpu_at_release(nt);
	vnpu_at_release(ct);
	vnpu_at_release(n);
	vnpu_at_release(c);
}
END_TEST

/* views of a 0-dim tensor (issue 18's class 3): any shape of ones */
START_TEST(zero_dim_views)
{
	for (int dev = 0; dev < 2; dev++) {
		struct vnpu_at_tensor *x = vnpu_at_scalar_tensor(
			VNPU_AT_DOUBLE(1.125), VNPU_AT_F32,
			dev ? VNPU_AT_DEV_NPU(0) : VNPU_AT_DEV_CPU);
		struct vnpu_at_tensor *v[3];

		ck_assert(x);
		v[0] = vnpu_op_view(x, VNPU_AT_INTS(1, 1));
		v[1] = vnpu_op_reshape(x, VNPU_AT_INTS(-1));
		v[2] = vnpu_op_flatten_using_ints(x, 0, -1);
		for (int i = 0; i < 3; i++) {
			struct vnpu_at_tensor *h;

			ck_assert_msg(v[i], "view %d on %s: %s", i,
				      dev ? "npu" : "cpu", vnpu_at_error_message());
			ck_assert_int_eq(vnpu_at_numel(v[i]), 1);
			ck_assert(v[i]->storage == x->storage);
			h = ot_to_cpu(v[i]);
			ck_assert(ot_flat(h, 0) == 1.125);
			vnpu_at_release(h);
			vnpu_at_release(v[i]);
		}
		/* index_select of a 0-dim self is 0-dim, whatever the
		 * index's length (PyTorch 1.13; issue 18's class 8) */
		{
			struct vnpu_at_tensor *ic = vnpu_at_empty(1, (int64_t[]){ 2 },
								  VNPU_AT_I64, VNPU_AT_DEV_CPU);
			struct vnpu_at_tensor *idx, *r, *h;

			memset(vnpu_at_data(ic), 0, 16);
			idx = dev ? ot_to_npu(ic) : vnpu_at_retain(ic);
			r = vnpu_op_index_select(x, 0, idx);
			ck_assert_msg(r && r->ndim == 0, "index_select on %s: %s",
				      dev ? "npu" : "cpu", vnpu_at_error_message());
			h = ot_to_cpu(r);
			ck_assert(ot_flat(h, 0) == 1.125);
			vnpu_at_release(h);
			vnpu_at_release(r);
			vnpu_at_release(idx);
			vnpu_at_release(ic);
		}
		vnpu_at_release(x);
	}
}
END_TEST

/* nll_loss_forward of a 1-D input with reduction none (issue 18's
 * class 9): PyTorch's total_weight is weight[target], not 0 */
START_TEST(nll_loss_one_sample)
{
	int64_t c5 = 5;
	struct vnpu_at_tensor *x = ot_rand(1, &c5, VNPU_AT_F32, -2, 2, OT_CONTIG);
	struct vnpu_at_tensor *w = ot_rand(1, &c5, VNPU_AT_F32, 0.1, 1, OT_CONTIG);
	struct vnpu_at_tensor *t = vnpu_at_scalar_tensor(VNPU_AT_INT(2), VNPU_AT_I64,
							 VNPU_AT_DEV_CPU);

	for (int dev = 0; dev < 2; dev++) {
		struct vnpu_at_tensor *xs = dev ? ot_to_npu(x) : vnpu_at_retain(x);
		struct vnpu_at_tensor *ws = dev ? ot_to_npu(w) : vnpu_at_retain(w);
		struct vnpu_at_tensor *ts = dev ? ot_to_npu(t) : vnpu_at_retain(t);
		struct vnpu_ret_nll_loss_forward r =
			vnpu_op_nll_loss_forward(xs, ts, ws, 0, -100);
		struct vnpu_at_tensor *out, *tw;

		ck_assert_msg(r.r0 && r.r1, "%s", vnpu_at_error_message());
		out = ot_to_cpu(r.r0);
		tw = ot_to_cpu(r.r1);
		ck_assert_int_eq(r.r0->ndim, 0);
		ck_assert_msg(ot_flat(tw, 0) == ot_flat(w, 2), "%s: total_weight %g, want %g",
			      dev ? "npu" : "cpu", ot_flat(tw, 0), ot_flat(w, 2));
		ck_assert(fabs(ot_flat(out, 0) + ot_flat(w, 2) * ot_flat(x, 2)) < 1e-6);
		vnpu_at_release(out);
		vnpu_at_release(tw);
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);
		vnpu_at_release(xs);
		vnpu_at_release(ws);
		vnpu_at_release(ts);
	}
	vnpu_at_release(x);
	vnpu_at_release(w);
	vnpu_at_release(t);
}
END_TEST

/* npu and CPU tensors do not mix on the fallback path either (issue
 * 18's class 17): int64 sub and maximum fall back, and refuse as the NPU
 * kernels do; a 0-dim CPU tensor stays a scalar */
START_TEST(mixed_devices_on_the_fallback)
{
	struct vnpu_at_tensor *c = vnpu_op_ones(VNPU_AT_INTS(2, 3), VNPU_AT_I64, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *n = ot_to_npu(c);
	struct vnpu_at_tensor *s = vnpu_at_scalar_tensor(VNPU_AT_INT(2), VNPU_AT_I64,
							 VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *r;

	r = vnpu_op_sub_Tensor(n, c, VNPU_AT_INT(1));
	ck_assert_msg(!r && strstr(vnpu_at_error_message(), "Expected all tensors to be on the same device"),
		      "sub: %s", r ? "succeeded" : vnpu_at_error_message());
	vnpu_at_error_clear();
	r = vnpu_op_maximum(c, n);
	ck_assert(!r && strstr(vnpu_at_error_message(), "same device"));
	vnpu_at_error_clear();
	r = vnpu_op_sub_Tensor(n, s, VNPU_AT_INT(1));
	ck_assert_msg(r && vnpu_at_is_npu(r), "%s", vnpu_at_error_message());
	vnpu_at_release(r);
	vnpu_at_release(s);
	vnpu_at_release(n);
	vnpu_at_release(c);
}
END_TEST

/* Results in the layout PyTorch's TensorIterator and its convolution and
 * pooling kernels give (docs/torch.md, "Result layouts"). */
/* masked_fill on the device: exact against the CPU kernel in every dtype
 * the device has, the mask broadcast over a strided self and growing it,
 * a value to convert, the value-tensor form; a result the shape of both,
 * row-major; PyTorch's refusals. */
START_TEST(masked_fill_ops)
{
	static const enum vnpu_at_dtype dts[] = { VNPU_AT_F32, VNPU_AT_F16, VNPU_AT_BF16,
						  VNPU_AT_I64, VNPU_AT_I32, VNPU_AT_I16,
						  VNPU_AT_I8, VNPU_AT_U8, VNPU_AT_BOOL };
	int64_t xs[3] = { 3, 4, 5 }, ms[2] = { 4, 5 }, gs[3] = { 2, 1, 5 };
	struct vnpu_at_tensor *x, *m, *g, *xn, *mn, *gn, *want, *got, *v, *vn;

	ot_seed(47);
	m = ot_rand(2, ms, VNPU_AT_BOOL, 0, 1, OT_TRANSPOSED);
	mn = ot_to_npu(m);
	g = ot_rand(3, (int64_t[]){ 2, 4, 1 }, VNPU_AT_BOOL, 0, 1, OT_CONTIG);
	gn = ot_to_npu(g);
	for (size_t k = 0; k < sizeof(dts) / sizeof(dts[0]); k++) {
		x = ot_rand(3, xs, dts[k], -9, 9, OT_STRIDED);
		xn = ot_to_npu(x);
		vnpu_fallback_reset();
		want = vnpu_op_masked_fill_Scalar(x, m, VNPU_AT_DOUBLE(1.75));
		got = vnpu_op_masked_fill_Scalar(xn, mn, VNPU_AT_DOUBLE(1.75));
		ot_expect_close("masked_fill", want, got, 0, 0);
		vnpu_at_release(want);
		vnpu_at_release(got);
		/* self [2, 1, 5] grown by a [2, 4, 1] mask, the value a tensor */
		vnpu_at_release(x);
		vnpu_at_release(xn);
		x = ot_rand(3, gs, dts[k], -9, 9, OT_CONTIG);
		xn = ot_to_npu(x);
		v = vnpu_at_scalar_tensor(VNPU_AT_INT(-1), dts[k], VNPU_AT_DEV_CPU);
		vn = ot_to_npu(v);
		want = vnpu_op_masked_fill_Tensor(x, g, v);
		got = vnpu_op_masked_fill_Tensor(xn, gn, vn);
		ot_expect_close("masked_fill.Tensor", want, got, 0, 0);
		ck_assert(got->ndim == 3 && got->sizes[1] == 4 && vnpu_at_is_contiguous(got));
		expect_on_device("masked_fill");
		vnpu_at_release(want);
		vnpu_at_release(got);
		vnpu_at_release(v);
		vnpu_at_release(vn);
		vnpu_at_release(x);
		vnpu_at_release(xn);
	}
	/* refused: a value tensor with dims, a value uint8 cannot hold, an
	 * integer mask (the CPU kernel words it) */
	xn = vnpu_op_ones(VNPU_AT_INTS(4, 5), VNPU_AT_U8, VNPU_AT_DEV_NPU(0));
	v = vnpu_op_ones(VNPU_AT_INTS(1), VNPU_AT_F32, VNPU_AT_DEV_NPU(0));
	ck_assert_ptr_null(vnpu_op_masked_fill_Tensor(xn, mn, v));
	ck_assert_msg(strstr(vnpu_at_error_message(), "0-dimensional value tensor"), "%s",
		      vnpu_at_error_message());
	ck_assert_ptr_null(vnpu_op_masked_fill_Scalar(xn, mn, VNPU_AT_INT(300)));
	ck_assert_msg(strstr(vnpu_at_error_message(), "without overflow"), "%s",
		      vnpu_at_error_message());
	ck_assert_ptr_null(vnpu_op_masked_fill_Scalar(mn, xn, VNPU_AT_INT(1)));
	ck_assert_msg(strstr(vnpu_at_error_message(), "only supports boolean masks"), "%s",
		      vnpu_at_error_message());
	vnpu_at_release(v);
	vnpu_at_release(xn);
	vnpu_at_release(m);
	vnpu_at_release(mn);
	vnpu_at_release(g);
	vnpu_at_release(gn);
}
END_TEST

/* arange on the device's RANGE: every dtype it has against the CPU
 * kernel, exactly (both compute each term on its own the same way), into
 * a fresh result and into a strided out= of the right length; what the
 * CPU decides goes there (an integer range with a float bound). */
START_TEST(arange_on_device)
{
	static const enum vnpu_at_dtype dts[] = { VNPU_AT_F32, VNPU_AT_F16, VNPU_AT_BF16,
						  VNPU_AT_F64, VNPU_AT_I64, VNPU_AT_I32,
						  VNPU_AT_I16, VNPU_AT_I8, VNPU_AT_U8 };
	struct vnpu_at_tensor *want, *got, *base, *out, *r;

	for (size_t k = 0; k < sizeof(dts) / sizeof(dts[0]); k++) {
		bool fl = vnpu_at_dtype_is_float(dts[k]);
		struct vnpu_at_scalar s = fl ? VNPU_AT_DOUBLE(-2.5) : VNPU_AT_INT(-7);
		struct vnpu_at_scalar e = fl ? VNPU_AT_DOUBLE(90.1) : VNPU_AT_INT(300);
		struct vnpu_at_scalar st = fl ? VNPU_AT_DOUBLE(0.7) : VNPU_AT_INT(3);

		vnpu_fallback_reset();
		want = vnpu_op_arange_start_step(s, e, st, dts[k], VNPU_AT_DEV_CPU);
		got = vnpu_op_arange_start_step(s, e, st, dts[k], VNPU_AT_DEV_NPU(0));
		ot_expect_close("arange", want, got, 0, 0);
		base = vnpu_op_zeros(VNPU_AT_INTS(2 * want->sizes[0]), dts[k], VNPU_AT_DEV_NPU(0));
		out = vnpu_op_slice_Tensor(base, 0, VNPU_AT_SOME_INT(0),
					   VNPU_AT_SOME_INT(2 * want->sizes[0]), 2);
		r = vnpu_op_arange_start_out(s, e, st, out);
		ot_expect_close("arange out=", want, r, 0, 0);
		expect_on_device("arange");
		vnpu_at_release(r);
		vnpu_at_release(out);
		vnpu_at_release(base);
		vnpu_at_release(want);
		vnpu_at_release(got);
	}
	got = vnpu_op_arange_start_step(VNPU_AT_DOUBLE(0), VNPU_AT_DOUBLE(5.5),
					VNPU_AT_DOUBLE(1.5), VNPU_AT_I32, VNPU_AT_DEV_NPU(0));
	ck_assert_msg(got && got->sizes[0] == 4, "%s", vnpu_at_error_message());
	expect_fell_back("aten::arange.start_out");
	vnpu_at_release(got);
	ck_assert_ptr_null(vnpu_op_arange_start_step(VNPU_AT_INT(0), VNPU_AT_INT(5), VNPU_AT_INT(0),
						     VNPU_AT_I64, VNPU_AT_DEV_NPU(0)));
	ck_assert_msg(strstr(vnpu_at_error_message(), "step must be nonzero"), "%s",
		      vnpu_at_error_message());
}
END_TEST

/* linspace on the device's RANGE: every dtype it has against the CPU
 * kernel, exactly (both compute each point on its own the same way), into
 * a fresh result and into a strided 2-d out= (its shape kept, points in
 * row-major order); one step fills, bool and a bound the dtype cannot
 * hold go to the CPU kernel's error. */
START_TEST(linspace_on_device)
{
	static const enum vnpu_at_dtype dts[] = { VNPU_AT_F32, VNPU_AT_F16, VNPU_AT_BF16,
						  VNPU_AT_F64, VNPU_AT_I64, VNPU_AT_I32,
						  VNPU_AT_I16, VNPU_AT_I8, VNPU_AT_U8 };
	static const int64_t steps[] = { 0, 1, 2, 7, 50, 301 };
	struct vnpu_at_tensor *want, *got, *base, *out, *r;

	for (size_t k = 0; k < sizeof(dts) / sizeof(dts[0]); k++) {
		for (size_t j = 0; j < sizeof(steps) / sizeof(steps[0]); j++) {
			bool fl = vnpu_at_dtype_is_float(dts[k]);
			struct vnpu_at_scalar s = fl ? VNPU_AT_DOUBLE(-2.3) : VNPU_AT_INT(3);
			struct vnpu_at_scalar e = fl ? VNPU_AT_DOUBLE(90.1) : VNPU_AT_DOUBLE(120.7);
			int64_t n = steps[j];

			vnpu_fallback_reset();
			want = vnpu_op_linspace(s, e, n, dts[k], VNPU_AT_DEV_CPU);
			got = vnpu_op_linspace(s, e, n, dts[k], VNPU_AT_DEV_NPU(0));
			ot_expect_close("linspace", want, got, 0, 0);
			if (n > 1)
				expect_on_device("linspace");
			if (n % 2 == 0 && n) {
				/* a (2, n/2) view of every other element */
				base = vnpu_op_zeros(VNPU_AT_INTS(2 * n), dts[k],
						     VNPU_AT_DEV_NPU(0));
				out = vnpu_op_as_strided(base, VNPU_AT_INTS(2, n / 2),
							 VNPU_AT_INTS(n, 2),
							 VNPU_AT_NO_INT);
				r = vnpu_op_linspace_out(s, e, n, out);
				ck_assert_msg(r && r->ndim == 2, "%s", vnpu_at_error_message());
				vnpu_at_release(r);
				r = vnpu_op_reshape(out, VNPU_AT_INTS(n));
				ot_expect_close("linspace out=", want, r, 0, 0);
				expect_on_device("linspace out=");
				vnpu_at_release(r);
				vnpu_at_release(out);
				vnpu_at_release(base);
			}
			vnpu_at_release(want);
			vnpu_at_release(got);
		}
	}
	ck_assert_ptr_null(vnpu_op_linspace(VNPU_AT_INT(0), VNPU_AT_INT(1), 3, VNPU_AT_BOOL,
					    VNPU_AT_DEV_NPU(0)));
	ck_assert_msg(strstr(vnpu_at_error_message(), "\"linspace_cpu\" not implemented for 'Bool'"),
		      "%s", vnpu_at_error_message());
	ck_assert_ptr_null(vnpu_op_linspace(VNPU_AT_INT(0), VNPU_AT_INT(300), 3, VNPU_AT_U8,
					    VNPU_AT_DEV_NPU(0)));
	ck_assert_msg(strstr(vnpu_at_error_message(), "without overflow"), "%s",
		      vnpu_at_error_message());
	ck_assert_ptr_null(vnpu_op_linspace(VNPU_AT_INT(0), VNPU_AT_INT(1), -1, VNPU_AT_F32,
					    VNPU_AT_DEV_NPU(0)));
	ck_assert_msg(strstr(vnpu_at_error_message(), "number of steps must be non-negative"),
		      "%s", vnpu_at_error_message());
}
END_TEST

/* triu/tril: exact against the CPU and run on the device (aranges,
 * a compare and a WHERE there), batched and transposed. */
START_TEST(triangles_on_device)
{
	int64_t xs[3] = { 2, 5, 4 };
	struct vnpu_at_tensor *x, *xn, *want, *got;

	ot_seed(53);
	x = ot_rand(3, xs, VNPU_AT_F32, -3, 3, OT_TRANSPOSED);
	xn = ot_to_npu(x);
	for (int64_t k = -5; k <= 5; k += 2) {
		vnpu_fallback_reset();
		want = vnpu_op_triu(x, k);
		got = vnpu_op_triu(xn, k);
		ot_expect_close("triu", want, got, 0, 0);
		ck_assert(vnpu_at_is_contiguous(got));
		vnpu_at_release(want);
		vnpu_at_release(got);
		want = vnpu_op_tril(x, k);
		got = vnpu_op_tril(xn, k);
		ot_expect_close("tril", want, got, 0, 0);
		expect_on_device("triu/tril");
		vnpu_at_release(want);
		vnpu_at_release(got);
	}
	vnpu_at_release(x);
	vnpu_at_release(xn);
}
END_TEST

/* sort and topk on the device (SORT), against the CPU kernel: a line of
 * equal values keeps their order, NaN sorts last (first descending), the
 * input strided; topk's k largest with their positions; the gradient goes
 * back to the positions the values came from. */
START_TEST(sort_on_device)
{
	int64_t xs[2] = { 4, 9 };
	struct vnpu_at_tensor *x, *xn;

	ot_seed(79);
	x = ot_rand(2, xs, VNPU_AT_F32, -3, 3, OT_TRANSPOSED);
	/* ties and NaN: whole numbers, one NaN per row */
	for (int64_t k = 0; k < 36; k++)
		ot_set_flat(x, k, k % 9 == 4 ? NAN : floor(ot_flat(x, k)));
	xn = ot_to_npu(x);
	for (int desc = 0; desc < 2; desc++) {
		for (int64_t dim = -1; dim < 1; dim++) {
			struct vnpu_ret_sort w = vnpu_op_sort(x, dim, desc);
			struct vnpu_ret_sort g;

			vnpu_fallback_reset();
			g = vnpu_op_sort(xn, dim, desc);
			ck_assert_msg(g.r0 && g.r1, "%s", vnpu_at_error_message());
			expect_on_device("sort");
			ot_expect_close("sort values", w.r0, g.r0, 0, 0);
			ot_expect_close("sort indices", w.r1, g.r1, 0, 0);
			vnpu_at_release(w.r0);
			vnpu_at_release(w.r1);
			vnpu_at_release(g.r0);
			vnpu_at_release(g.r1);
		}
	}
	/* the stable order itself, on row 0 of the CPU kernel's result */
	{
		struct vnpu_ret_sort w = vnpu_op_sort(x, 1, false);

		for (int64_t j = 0; j + 1 < 9; j++) {
			double a = ot_get(w.r0, (int64_t[]){ 0, j });
			double b = ot_get(w.r0, (int64_t[]){ 0, j + 1 });

			ck_assert(isnan(b) || (!isnan(a) && a <= b));
			if (a == b)
				ck_assert(ot_get(w.r1, (int64_t[]){ 0, j }) <
					  ot_get(w.r1, (int64_t[]){ 0, j + 1 }));
		}
		ck_assert(isnan(ot_get(w.r0, (int64_t[]){ 0, 8 })));
		vnpu_at_release(w.r0);
		vnpu_at_release(w.r1);
	}
	/* topk and its gradient */
	for (int dev = 0; dev < 2; dev++) {
		struct vnpu_at_tensor *a = vnpu_op_clone(dev ? xn : x);
		struct vnpu_ret_topk t;
		struct vnpu_at_tensor *sum, *grad;

		ck_assert(a && vnpu_at_set_requires_grad(a, true));
		vnpu_fallback_reset();
		t = vnpu_op_topk(a, 3, 1, true, true);
		ck_assert_msg(t.r0 && t.r1, "%s", vnpu_at_error_message());
		ck_assert_int_eq(t.r0->sizes[1], 3);
		sum = vnpu_op_sum(t.r0, VNPU_AT_DTYPE_NONE);
		ck_assert_msg(sum && vnpu_at_backward(sum), "%s", vnpu_at_error_message());
		if (dev)
			expect_on_device("topk");
		grad = ot_to_cpu(vnpu_at_grad(a));
		/* ones at the selected positions, zeros elsewhere: 3 per row */
		for (int64_t r = 0; r < 4; r++) {
			double total = 0;

			for (int64_t c = 0; c < 9; c++)
				total += ot_get(grad, (int64_t[]){ r, c });
			ck_assert(total == 3);
		}
		vnpu_at_release(grad);
		vnpu_at_release(sum);
		vnpu_at_release(t.r0);
		vnpu_at_release(t.r1);
		vnpu_at_release(a);
	}
	ck_assert_ptr_null(vnpu_op_topk(xn, 10, 1, true, true).r0);
	ck_assert_msg(strstr(vnpu_at_error_message(), "selected index k out of range"), "%s",
		      vnpu_at_error_message());
	vnpu_at_release(x);
	vnpu_at_release(xn);
}
END_TEST

/* An NPU kernel whose op TensorIterator does not compute takes its tensors
 * on one device, as PyTorch's CUDA wrappers check: a CPU index beside an
 * npu self is refused naming it, in either order; copies across devices
 * and a CPU 0-dim scalar of a TensorIterator op are not refused. */
START_TEST(devices_of_tensor_arguments)
{
	int64_t xs[2] = { 3, 4 };
	struct vnpu_at_tensor *x, *xn, *i, *in, *r;

	ot_seed(73);
	x = ot_rand(2, xs, VNPU_AT_F32, -3, 3, OT_CONTIG);
	xn = ot_to_npu(x);
	i = ot_rand(1, (int64_t[]){ 2 }, VNPU_AT_I64, 0, 3, OT_CONTIG);
	in = ot_to_npu(i);
	ck_assert_ptr_null(vnpu_op_index_select(xn, 0, i));
	ck_assert_int_eq(vnpu_at_error_code(), VNPU_AT_ERR_VALUE);
	ck_assert_msg(strstr(vnpu_at_error_message(),
			     "but got index is on cpu, different from other tensors on npu:0"),
		      "%s", vnpu_at_error_message());
	ck_assert_ptr_null(vnpu_op_index_select(x, 0, in));
	ck_assert_msg(strstr(vnpu_at_error_message(),
			     "but got index is on npu:0, different from other tensors on cpu"),
		      "%s", vnpu_at_error_message());
	ck_assert_ptr_null(vnpu_op_cat((struct vnpu_at_tensor_list){
		(struct vnpu_at_tensor *[]){ xn, x }, 2 }, 0));
	ck_assert_msg(strstr(vnpu_at_error_message(), "but got tensors is on cpu"),
		      "%s", vnpu_at_error_message());
	r = vnpu_op_index_select(xn, 0, in);
	ck_assert_msg(r != NULL, "%s", vnpu_at_error_message());
	vnpu_at_release(r);
	r = vnpu_op_copy_(xn, x, false);
	ck_assert_msg(r != NULL, "%s", vnpu_at_error_message());
	vnpu_at_release(r);
	vnpu_at_release(in);
	vnpu_at_release(i);
	vnpu_at_release(xn);
	vnpu_at_release(x);
}
END_TEST

/* roll on the device against each element's source computed here: two
 * dims (one named twice, a negative shift), and the flattened roll; the
 * gradient is the output's rolled back. */
START_TEST(roll_on_device)
{
	int64_t xs[2] = { 3, 5 };
	struct vnpu_at_tensor *x, *xn, *got, *cpu, *grad;

	ot_seed(71);
	x = ot_rand(2, xs, VNPU_AT_F32, -3, 3, OT_STRIDED);
	xn = ot_to_npu(x);
	vnpu_fallback_reset();
	/* rows by 1 + 3, columns by -7: out[i][j] = x[(i - 4) mod 3][(j + 7) mod 5] */
	got = vnpu_op_roll(xn, VNPU_AT_INTS(1, -7, 3), VNPU_AT_INTS(0, 1, -2));
	ck_assert_ptr_nonnull(got);
	cpu = ot_to_cpu(got);
	for (int64_t i = 0; i < 3; i++)
		for (int64_t j = 0; j < 5; j++)
			ck_assert(ot_get(cpu, (int64_t[]){ i, j }) ==
				  ot_get(x, (int64_t[]){ (i + 2) % 3, (j + 7) % 5 }));
	vnpu_at_release(cpu);
	vnpu_at_release(got);
	/* flattened: out[k] = x.flat[(k - 11) mod 15] */
	got = vnpu_op_roll(xn, VNPU_AT_INTS(11), VNPU_AT_NO_INTS);
	ck_assert_ptr_nonnull(got);
	cpu = ot_to_cpu(got);
	for (int64_t k = 0; k < 15; k++)
		ck_assert(ot_flat(cpu, k) == ot_flat(x, (k + 4) % 15));
	vnpu_at_release(cpu);
	expect_on_device("roll");

	/* d/dx[m] of sum(roll(x) * w) is w.flat[(m + 11) mod 15] */
	{
		struct vnpu_at_tensor *a = vnpu_op_clone(xn);
		struct vnpu_at_tensor *w = ot_rand(2, xs, VNPU_AT_F32, -3, 3, OT_CONTIG);
		struct vnpu_at_tensor *wn = ot_to_npu(w), *p = NULL, *sum = NULL;

		ck_assert(a && vnpu_at_set_requires_grad(a, true));
		vnpu_at_release(got);
		vnpu_fallback_reset();
		got = vnpu_op_roll(a, VNPU_AT_INTS(11), VNPU_AT_NO_INTS);
		p = got ? vnpu_op_mul_Tensor(got, wn) : NULL;
		sum = p ? vnpu_op_sum(p, VNPU_AT_DTYPE_NONE) : NULL;
		ck_assert_msg(sum && vnpu_at_backward(sum), "%s", vnpu_at_error_message());
		expect_on_device("roll grad");
		grad = ot_to_cpu(vnpu_at_grad(a));
		for (int64_t m = 0; m < 15; m++)
			ck_assert(ot_flat(grad, m) == ot_flat(w, (m + 11) % 15));
		vnpu_at_release(grad);
		vnpu_at_release(sum);
		vnpu_at_release(p);
		vnpu_at_release(wn);
		vnpu_at_release(w);
		vnpu_at_release(a);
	}
	vnpu_at_release(got);
	vnpu_at_release(x);
	vnpu_at_release(xn);
}
END_TEST

/* scatter (src and value) on the device, exact against the CPU kernel:
 * repeated positions keep the last write; C autograd (self's gradient
 * with the written positions zeroed, src's gathered) there too. */
START_TEST(scatter_on_device)
{
	int64_t xs[2] = { 3, 4 };
	struct vnpu_at_tensor *x, *xn, *s, *sn, *i, *in, *want, *got, *grads[2][2];

	ot_seed(67);
	x = ot_rand(2, xs, VNPU_AT_F32, -3, 3, OT_STRIDED);
	xn = ot_to_npu(x);
	s = ot_rand(2, (int64_t[]){ 3, 5 }, VNPU_AT_F32, -3, 3, OT_CONTIG);
	sn = ot_to_npu(s);
	i = ot_rand(2, (int64_t[]){ 3, 6 }, VNPU_AT_I64, 0, 3, OT_CONTIG);
	in = ot_to_npu(i);
	for (int value = 0; value < 2; value++) {
		struct vnpu_at_tensor *ip = vnpu_op_slice_Tensor(i, 1, (struct vnpu_at_opt_int){ true, 0 },
			(struct vnpu_at_opt_int){ true, value ? 6 : 5 }, 1);
		struct vnpu_at_tensor *ipn = vnpu_op_slice_Tensor(in, 1, (struct vnpu_at_opt_int){ true, 0 },
			(struct vnpu_at_opt_int){ true, value ? 6 : 5 }, 1);

		vnpu_fallback_reset();
		want = value ? vnpu_op_scatter_value(x, 1, ip, VNPU_AT_DOUBLE(2.5)) :
			       vnpu_op_scatter_src(x, 1, ip, s);
		got = value ? vnpu_op_scatter_value(xn, 1, ipn, VNPU_AT_DOUBLE(2.5)) :
			      vnpu_op_scatter_src(xn, 1, ipn, sn);
		ck_assert_msg(want && got, "%s", vnpu_at_error_message());
		ot_expect_close("scatter", want, got, 0, 0);
		expect_on_device("scatter");
		vnpu_at_release(want);
		vnpu_at_release(got);
		vnpu_at_release(ip);
		vnpu_at_release(ipn);
	}
	/* gradients of self and src */
	for (int dev = 0; dev < 2; dev++) {
		struct vnpu_at_tensor *a = vnpu_op_clone(dev ? xn : x);
		struct vnpu_at_tensor *b = vnpu_op_clone(dev ? sn : s);
		struct vnpu_at_tensor *ip = vnpu_op_slice_Tensor(dev ? in : i, 1,
			(struct vnpu_at_opt_int){ true, 0 }, (struct vnpu_at_opt_int){ true, 4 }, 1);
		struct vnpu_at_tensor *o, *sq, *sum;

		ck_assert(a && b && ip && vnpu_at_set_requires_grad(a, true) &&
			  vnpu_at_set_requires_grad(b, true));
		vnpu_fallback_reset();
		o = vnpu_op_scatter_src(a, 1, ip, b);
		sq = o ? vnpu_op_mul_Tensor(o, o) : NULL;
		sum = sq ? vnpu_op_sum(sq, VNPU_AT_DTYPE_NONE) : NULL;
		ck_assert_msg(sum && vnpu_at_backward(sum), "%s", vnpu_at_error_message());
		grads[dev][0] = vnpu_at_retain(vnpu_at_grad(a));
		grads[dev][1] = vnpu_at_retain(vnpu_at_grad(b));
		if (dev) {
			expect_on_device("scatter grad");
			ot_expect_close("scatter grad self", grads[0][0], grads[1][0], 1e-6, 1e-6);
			ot_expect_close("scatter grad src", grads[0][1], grads[1][1], 1e-6, 1e-6);
		}
		vnpu_at_release(sum);
		vnpu_at_release(sq);
		vnpu_at_release(o);
		vnpu_at_release(ip);
		vnpu_at_release(b);
		vnpu_at_release(a);
	}
	for (int k = 0; k < 4; k++)
		vnpu_at_release(grads[k / 2][k % 2]);
	vnpu_at_release(i);
	vnpu_at_release(in);
	vnpu_at_release(s);
	vnpu_at_release(sn);
	vnpu_at_release(x);
	vnpu_at_release(xn);
}
END_TEST

/* cumsum and cumprod on the device's SCAN, exact against the CPU kernel
 * (both fold in PyTorch's accumulation type): every dim, strided input,
 * integer input summed in int64, dtype=; cumsum's C autograd (a reversed
 * cumsum) there too. */
START_TEST(scans_on_device)
{
	int64_t xs[3] = { 3, 4, 17 };
	static const enum vnpu_at_dtype dts[] = { VNPU_AT_F32, VNPU_AT_F16,
						  VNPU_AT_BF16, VNPU_AT_F64,
						  VNPU_AT_I8, VNPU_AT_I32 };
	struct vnpu_at_tensor *x, *xn, *want, *got, *xg, *sum, *grad, *gw = NULL;

	ot_seed(61);
	for (size_t k = 0; k < sizeof(dts) / sizeof(dts[0]); k++) {
		x = ot_rand(3, xs, dts[k], -2, 2, OT_STRIDED);
		xn = ot_to_npu(x);
		for (int64_t d = -1; d < 3; d++) {
			for (int prod = 0; prod < 2; prod++) {
				enum vnpu_at_dtype as = d == 1 ? VNPU_AT_F64 :
							VNPU_AT_DTYPE_NONE;

				vnpu_fallback_reset();
				want = prod ? vnpu_op_cumprod(x, d, as) :
					      vnpu_op_cumsum(x, d, as);
				got = prod ? vnpu_op_cumprod(xn, d, as) :
					     vnpu_op_cumsum(xn, d, as);
				ck_assert_msg(want && got, "%s", vnpu_at_error_message());
				ck_assert_int_eq(got->dtype, want->dtype);
				ot_expect_close(prod ? "cumprod" : "cumsum", want, got, 0, 0);
				expect_on_device(prod ? "cumprod" : "cumsum");
				vnpu_at_release(want);
				vnpu_at_release(got);
			}
		}
		vnpu_at_release(x);
		vnpu_at_release(xn);
	}
	/* a 0-dim tensor is its own prefix, a copy of it */
	x = vnpu_at_scalar_tensor(VNPU_AT_INT(7), VNPU_AT_I16, VNPU_AT_DEV_CPU);
	xn = ot_to_npu(x);
	got = vnpu_op_cumsum(xn, -1, VNPU_AT_DTYPE_NONE);
	ck_assert(got && got->dtype == VNPU_AT_I64 && got->storage != xn->storage);
	vnpu_at_release(got);
	vnpu_at_release(xn);
	vnpu_at_release(x);
	/* the gradient: the output's summed from the end of each line */
	x = ot_rand(3, xs, VNPU_AT_F32, -3, 3, OT_CONTIG);
	xn = ot_to_npu(x);
	for (int dev = 0; dev < 2; dev++) {
		xg = vnpu_op_clone(dev ? xn : x);
		ck_assert(xg && vnpu_at_set_requires_grad(xg, true));
		vnpu_fallback_reset();
		got = vnpu_op_cumsum(xg, 2, VNPU_AT_DTYPE_NONE);
		want = got ? vnpu_op_mul_Tensor(got, got) : NULL;
		sum = want ? vnpu_op_sum(want, VNPU_AT_DTYPE_NONE) : NULL;
		ck_assert_msg(sum && vnpu_at_backward(sum), "%s", vnpu_at_error_message());
		grad = vnpu_at_grad(xg);
		if (dev) {
			ot_expect_close("cumsum grad", gw, grad, 1e-5, 1e-5);
			expect_on_device("cumsum grad");
			vnpu_at_release(gw);
		} else {
			gw = vnpu_at_retain(grad);
		}
		vnpu_at_release(sum);
		vnpu_at_release(want);
		vnpu_at_release(got);
		vnpu_at_release(xg);
	}
	vnpu_at_release(x);
	vnpu_at_release(xn);
}
END_TEST

/* gather on the device (positions computed there, one INDEX SELECT),
 * exact against the CPU kernel, every dim, strided self; its C autograd
 * (index_add_ of the gradient) runs there too. */
START_TEST(gather_on_device)
{
	int64_t xs[3] = { 3, 4, 5 };
	struct vnpu_at_tensor *x, *xn, *i, *in, *want, *got, *xg, *sum, *grad, *gw;

	ot_seed(59);
	x = ot_rand(3, xs, VNPU_AT_F32, -3, 3, OT_STRIDED);
	xn = ot_to_npu(x);
	for (int64_t d = 0; d < 3; d++) {
		int64_t is[3] = { 2, 3, 4 };

		is[d] = 6;
		i = ot_rand(3, is, VNPU_AT_I64, 0, xs[d] - 1, OT_TRANSPOSED);
		in = ot_to_npu(i);
		vnpu_fallback_reset();
		want = vnpu_op_gather(x, d, i, false);
		got = vnpu_op_gather(xn, d, in, false);
		ot_expect_close("gather", want, got, 0, 0);
		expect_on_device("gather");
		vnpu_at_release(want);
		vnpu_at_release(got);
		vnpu_at_release(i);
		vnpu_at_release(in);
	}
	/* scatter_add: repeated positions summed in index order, src larger
	 * than index */
	i = ot_rand(3, (int64_t[]){ 3, 6, 5 }, VNPU_AT_I64, 0, 3, OT_CONTIG);
	in = ot_to_npu(i);
	want = ot_rand(3, (int64_t[]){ 3, 7, 5 }, VNPU_AT_F32, -3, 3, OT_STRIDED);
	got = ot_to_npu(want);
	xg = vnpu_op_scatter_add(x, 1, i, want);
	vnpu_fallback_reset();
	gw = vnpu_op_scatter_add(xn, 1, in, got);
	ot_expect_close("scatter_add", xg, gw, 1e-6, 1e-6);
	expect_on_device("scatter_add");
	vnpu_at_release(xg);
	vnpu_at_release(gw);
	vnpu_at_release(want);
	vnpu_at_release(got);
	vnpu_at_release(i);
	vnpu_at_release(in);
	/* the gradient: index_add_ of the output's, repeated rows summed */
	i = ot_rand(3, (int64_t[]){ 3, 9, 5 }, VNPU_AT_I64, 0, 3, OT_CONTIG);
	in = ot_to_npu(i);
	gw = NULL;
	for (int dev = 0; dev < 2; dev++) {
		xg = vnpu_op_clone(dev ? xn : x);
		ck_assert(xg && vnpu_at_set_requires_grad(xg, true));
		vnpu_fallback_reset();
		got = vnpu_op_gather(xg, 1, dev ? in : i, false);
		sum = got ? vnpu_op_sum(got, VNPU_AT_DTYPE_NONE) : NULL;
		ck_assert_msg(sum && vnpu_at_backward(sum), "%s", vnpu_at_error_message());
		grad = vnpu_at_grad(xg);
		if (dev) {
			ot_expect_close("gather grad", gw, grad, 0, 0);
			expect_on_device("gather grad");
			vnpu_at_release(gw);
		} else {
			gw = vnpu_at_retain(grad);
		}
		vnpu_at_release(sum);
		vnpu_at_release(got);
		vnpu_at_release(xg);
	}
	vnpu_at_release(i);
	vnpu_at_release(in);
	vnpu_at_release(x);
	vnpu_at_release(xn);
}
END_TEST

START_TEST(result_layouts)
{
	const int64_t cl_sizes[4] = { 2, 3, 4, 5 }, cl_strides[4] = { 60, 1, 15, 3 };
	const int64_t ks[2] = { 2, 2 };
	struct vnpu_at_tensor *m, *t, *r, *x, *p;

	m = vnpu_op_ones(VNPU_AT_INTS(6, 5), VNPU_AT_F32, VNPU_AT_DEV_NPU(0));
	t = vnpu_op_t(m);
	r = vnpu_op_add_Tensor(t, t, VNPU_AT_INT(1));
	ck_assert_msg(r && r->strides[0] == 1 && r->strides[1] == 5,
		      "t() + t(): strides (%lld, %lld)", r ? (long long)r->strides[0] : -1,
		      r ? (long long)r->strides[1] : -1);
	vnpu_at_release(r);

	x = vnpu_at_empty_strided(4, cl_sizes, cl_strides, VNPU_AT_F32,
				  VNPU_AT_DEV_NPU(0));
	ck_assert(x);
	vnpu_at_release(vnpu_op_fill__Scalar(x, VNPU_AT_DOUBLE(1.5)));
	r = vnpu_op_relu(x);
	ck_assert(r);
	ck_assert(!memcmp(r->strides, cl_strides, sizeof(cl_strides)));
	vnpu_at_release(r);
	p = vnpu_op_max_pool2d(x, (struct vnpu_at_int_array){ ks, 2 },
			       VNPU_AT_NO_INTS, (struct vnpu_at_int_array){ (int64_t[]){ 0, 0 }, 2 },
			       (struct vnpu_at_int_array){ (int64_t[]){ 1, 1 }, 2 }, false);
	ck_assert_msg(p, "%s", vnpu_at_error_message());
	/* [2, 3, 2, 2] channels_last */
	ck_assert(p->strides[1] == 1 && p->strides[3] == 3 && p->strides[2] == 6);
	vnpu_at_release(p);
	vnpu_at_release(x);
	vnpu_at_release(t);
	vnpu_at_release(m);
	expect_on_device("result_layouts");
}
END_TEST

static Suite *ops_npu_suite(void)
{
	Suite *s = suite_create("ops_npu");
	TCase *tc = tcase_create("ops");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, unary_ops, 0, NDT);
	tcase_add_test(tc, int_ops);
	tcase_add_test(tc, arith_and_math_ops);
	tcase_add_test(tc, nn_backward_ops);
	tcase_add_test(tc, fallback_cases);
	tcase_add_loop_test(tc, binary_ops, 0, NDT);
	tcase_add_loop_test(tc, scalar_compare_and_cat, 0, NDT);
	tcase_add_loop_test(tc, reductions, 0, NDT);
	tcase_add_loop_test(tc, norms_and_backward, 0, NDT);
	tcase_add_loop_test(tc, batch_norm, 0, NDT);
	tcase_add_loop_test(tc, nll_loss, 0, NDT);
	tcase_add_loop_test(tc, bmm_addmm, 0, NDT);
	tcase_add_loop_test(tc, conv_pool, 0, NDT);
	tcase_add_test(tc, float64_copies);
	tcase_add_test(tc, zero_dim_views);
	tcase_add_test(tc, nll_loss_one_sample);
	tcase_add_test(tc, mixed_devices_on_the_fallback);
	tcase_add_test(tc, result_layouts);
	tcase_add_test(tc, masked_fill_ops);
	tcase_add_test(tc, arange_on_device);
	tcase_add_test(tc, linspace_on_device);
	tcase_add_test(tc, triangles_on_device);
	tcase_add_test(tc, roll_on_device);
	tcase_add_test(tc, devices_of_tensor_arguments);
	tcase_add_test(tc, sort_on_device);
	tcase_add_test(tc, gather_on_device);
	tcase_add_test(tc, scans_on_device);
	tcase_add_test(tc, scatter_on_device);
	tcase_add_test(tc, advanced_indexing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ops_npu_suite());
	int failed;

	vnpu_fallback_set_policy(VNPU_FALLBACK_ALLOW);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
