// SPDX-License-Identifier: MIT
/*
 * Op semantics PyTorch's CPU decides, on the CPU key and on npu:
 * out= that is also an input (TensorIterator never resizes it), Python
 * scalars a comparison's dtype cannot hold (cast as TensorIterator casts
 * them, never refused), matmul of FRACTAL_NZ operands in every rank
 * combination, where linear rounds its bias in, and float16/bfloat16
 * times or divided by a Python scalar they cannot hold. Expected values and
 * messages are what PyTorch printed for the same calls.
 */
#include <math.h>

#include "ops_test_util.h"
#include "vnpu/kernel_abi.h"

/* loop index 0: the CPU key, 1: npu:0 */
static struct vnpu_at_device dev_of(int i)
{
	return i ? VNPU_AT_DEV_NPU(0) : VNPU_AT_DEV_CPU;
}

/* A tensor of sizes on dev holding vals (row-major) in dtype dt. */
static struct vnpu_at_tensor *tensor_of(uint32_t nd, const int64_t *sizes,
					enum vnpu_at_dtype dt,
					const double *vals,
					struct vnpu_at_device dev)
{
	struct vnpu_at_tensor *c = vnpu_at_empty(nd, sizes, dt, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *r;

	ck_assert_ptr_nonnull(c);
	for (int64_t i = 0; vals && i < vnpu_at_numel(c); i++)
		ot_set_flat(c, i, vals[i]);
	if (dev.type == VNPU_AT_CPU)
		return c;
	r = ot_to_npu(c);
	vnpu_at_release(c);
	return r;
}

/* op failed with a message containing want, and left its out alone. */
static void expect_error(const char *what, struct vnpu_at_tensor *r,
			 const char *want)
{
	ck_assert_msg(r == NULL, "%s: succeeded, PyTorch raises \"%s\"", what,
		      want);
	ck_assert_msg(strstr(vnpu_at_error_message(), want),
		      "%s: error \"%s\", PyTorch's is \"%s\"", what,
		      vnpu_at_error_message(), want);
}

static void expect_sizes(const char *what, const struct vnpu_at_tensor *t,
			 uint32_t nd, const int64_t *sizes)
{
	char a[96];

	vnpu_at_format_sizes(t, a, sizeof(a));
	ck_assert_msg(t->ndim == nd &&
		      !memcmp(t->sizes, sizes, nd * sizeof(int64_t)),
		      "%s: shape %s", what, a);
}

/* ---- out= that is also an input ------------------------------------------ */

START_TEST(out_that_is_an_input)
{
	struct vnpu_at_device dev = dev_of(_i);
	int64_t s127[3] = { 1, 2, 7 }, s7027[4] = { 7, 0, 2, 7 };
	int64_t s27[2] = { 2, 7 }, s327[3] = { 3, 2, 7 }, s7127[4] = { 7, 1, 2, 7 };
	int64_t s0[1] = { 0 }, s31[2] = { 3, 1 }, s2[1] = { 2 }, s32[2] = { 3, 2 };
	struct vnpu_at_tensor *x, *y, *o, *r, *want;

	ot_seed(2801 + (uint64_t)_i);
	/* torch.add(x, y, out=x): "output with shape [1, 2, 7] doesn't
	 * match the broadcast shape [7, 0, 2, 7]", x keeps its shape */
	x = tensor_of(3, s127, VNPU_AT_F32, NULL, dev);
	y = tensor_of(4, s7027, VNPU_AT_F32, NULL, dev);
	expect_error("add out=self", vnpu_op_add_out(x, y, VNPU_AT_INT(1), x),
		     "output with shape [1, 2, 7] doesn't match the broadcast shape [7, 0, 2, 7]");
	expect_sizes("add out=self", x, 3, s127);
	expect_error("mul out=self", vnpu_op_mul_out(x, y, x),
		     "output with shape [1, 2, 7] doesn't match the broadcast shape [7, 0, 2, 7]");
	expect_sizes("mul out=self", x, 3, s127);
	vnpu_at_release(x);
	vnpu_at_release(y);

	/* out=other: the same; out=the larger input: it matches, computed */
	x = ot_rand(2, s27, VNPU_AT_F32, -2, 2, OT_CONTIG);
	y = ot_rand(3, s327, VNPU_AT_F32, -2, 2, OT_CONTIG);
	want = vnpu_op_mul_Tensor(x, y);
	if (dev.type == VNPU_AT_NPU) {
		struct vnpu_at_tensor *xn = ot_to_npu(x), *yn = ot_to_npu(y);

		vnpu_at_release(x);
		vnpu_at_release(y);
		x = xn;
		y = yn;
	}
	expect_error("mul out=other", vnpu_op_mul_out(y, x, x),
		     "output with shape [2, 7] doesn't match the broadcast shape [3, 2, 7]");
	expect_sizes("mul out=other", x, 2, s27);
	r = vnpu_op_mul_out(x, y, y);
	ot_expect_close("mul out=the larger input", want, r, 0, 0);
	ck_assert_ptr_eq(r, y);
	vnpu_at_release(r);
	vnpu_at_release(want);
	vnpu_at_release(x);
	vnpu_at_release(y);

	/* an empty out that is an input is not resized either: "output with
	 * shape [0] doesn't match the broadcast shape [3, 0]" */
	x = tensor_of(1, s0, VNPU_AT_F32, NULL, dev);
	y = tensor_of(2, s31, VNPU_AT_F32, NULL, dev);
	expect_error("add empty out=self", vnpu_op_add_out(x, y, VNPU_AT_INT(1), x),
		     "output with shape [0] doesn't match the broadcast shape [3, 0]");
	expect_sizes("add empty out=self", x, 1, s0);
	vnpu_at_release(x);
	vnpu_at_release(y);

	/* the shape is judged before the dtype: an int32 out=self */
	x = tensor_of(1, s2, VNPU_AT_I32, NULL, dev);
	y = tensor_of(2, s32, VNPU_AT_F32, NULL, dev);
	expect_error("add int out=self", vnpu_op_add_out(x, y, VNPU_AT_INT(1), x),
		     "output with shape [2] doesn't match the broadcast shape [3, 2]");
	o = tensor_of(2, s32, VNPU_AT_I32, NULL, dev);
	expect_error("add int out", vnpu_op_add_out(y, y, VNPU_AT_INT(1), o),
		     "result type Float can't be cast to the desired output type Int");
	vnpu_at_release(o);
	vnpu_at_release(x);
	vnpu_at_release(y);

	/* an out= that is no input is resized (PyTorch warns), non-empty or
	 * empty, and may be of a wider dtype */
	x = ot_rand(4, s7127, VNPU_AT_F32, -2, 2, OT_CONTIG);
	y = ot_rand(2, s27, VNPU_AT_F32, -2, 2, OT_STRIDED);
	want = vnpu_op_add_Tensor(x, y, VNPU_AT_DOUBLE(0.5));
	if (dev.type == VNPU_AT_NPU) {
		struct vnpu_at_tensor *xn = ot_to_npu(x), *yn = ot_to_npu(y);

		vnpu_at_release(x);
		vnpu_at_release(y);
		x = xn;
		y = yn;
	}
	o = tensor_of(3, s127, VNPU_AT_F32, NULL, dev);
	r = vnpu_op_add_out(x, y, VNPU_AT_DOUBLE(0.5), o);
	ot_expect_close("add out resized", want, r, 0, 0);
	vnpu_at_release(r);
	vnpu_at_release(o);
	o = tensor_of(1, s0, VNPU_AT_F32, NULL, dev);
	r = vnpu_op_add_out(x, y, VNPU_AT_DOUBLE(0.5), o);
	ot_expect_close("add empty out resized", want, r, 0, 0);
	vnpu_at_release(r);
	vnpu_at_release(o);
	vnpu_at_release(want);
	vnpu_at_release(x);
	vnpu_at_release(y);
}
END_TEST

/* ---- comparisons with a scalar the dtype cannot hold --------------------- */

struct cmp_case {
	enum vnpu_at_dtype dt;
	uint32_t n;
	double vals[8];
	struct vnpu_at_scalar s;
	int eq[8], gt[8];	/* PyTorch 1.13's CPU */
};

START_TEST(compare_with_out_of_range_scalars)
{
	struct vnpu_at_device dev = dev_of(_i);
	/* f16: 65504, -65504, 1, inf, -inf, nan, 0 */
#define F16V { 65504, -65504, 1, INFINITY, -INFINITY, NAN, 0 }
	static const struct cmp_case cases[] = {
		{ VNPU_AT_F16, 7, F16V, VNPU_AT_DOUBLE(1e30),
		  { 0, 0, 0, 1, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0 } },
		{ VNPU_AT_F16, 7, F16V, VNPU_AT_DOUBLE(-1e30),
		  { 0, 0, 0, 0, 1, 0, 0 }, { 1, 1, 1, 1, 0, 0, 1 } },
		{ VNPU_AT_F16, 7, F16V, VNPU_AT_DOUBLE(INFINITY),
		  { 0, 0, 0, 1, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0 } },
		{ VNPU_AT_F16, 7, F16V, VNPU_AT_DOUBLE(NAN),
		  { 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0 } },
		/* rounds to 65504 in f16, as PyTorch casts it */
		{ VNPU_AT_F16, 7, F16V, VNPU_AT_DOUBLE(65519.0),
		  { 1, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 1, 0, 0, 0 } },
		{ VNPU_AT_F16, 7, F16V, VNPU_AT_INT(100000),
		  { 0, 0, 0, 1, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0 } },
		{ VNPU_AT_BF16, 3, { 3.3895313892515355e38, 1, INFINITY },
		  VNPU_AT_DOUBLE(1e39), { 0, 0, 1 }, { 0, 0, 0 } },
		{ VNPU_AT_BF16, 3, { 3.3895313892515355e38, 1, INFINITY },
		  VNPU_AT_DOUBLE(-1e300), { 0, 0, 0 }, { 1, 1, 1 } },
		{ VNPU_AT_F32, 2, { 3.4028234663852886e38, 1 },
		  VNPU_AT_DOUBLE(1e300), { 0, 0 }, { 0, 0 } },
		/* integers wrap: 1000 is -24 to int8, -255 is 1 */
		{ VNPU_AT_I8, 4, { 1, -1, 127, 0 }, VNPU_AT_INT(1000),
		  { 0, 0, 0, 0 }, { 1, 1, 1, 1 } },
		{ VNPU_AT_I8, 4, { 1, -1, 127, 0 }, VNPU_AT_INT(-255),
		  { 1, 0, 0, 0 }, { 0, 0, 1, 0 } },
		{ VNPU_AT_U8, 3, { 1, 255, 0 }, VNPU_AT_INT(1000),
		  { 0, 0, 0 }, { 0, 1, 0 } },
		{ VNPU_AT_U8, 3, { 1, 255, 0 }, VNPU_AT_INT(-1),
		  { 0, 1, 0 }, { 0, 0, 0 } },
		{ VNPU_AT_I16, 4, { 1, -1, 32767, 0 }, VNPU_AT_INT(65537),
		  { 1, 0, 0, 0 }, { 0, 0, 1, 0 } },
		{ VNPU_AT_I32, 4, { 1, -1, 127, 0 }, VNPU_AT_INT(1099511627776),
		  { 0, 0, 0, 1 }, { 1, 0, 1, 0 } },
		/* a float scalar makes the comparison float32 */
		{ VNPU_AT_I8, 4, { 1, -1, 127, 0 }, VNPU_AT_DOUBLE(1e30),
		  { 0, 0, 0, 0 }, { 0, 0, 0, 0 } },
	};
#undef F16V

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct cmp_case *k = &cases[c];
		int64_t n = k->n;
		struct vnpu_at_tensor *x = tensor_of(1, &n, k->dt, k->vals, dev);

		for (int op = 0; op < 2; op++) {
			struct vnpu_at_tensor *r = op ? vnpu_op_gt_Scalar(x, k->s) :
							vnpu_op_eq_Scalar(x, k->s);
			struct vnpu_at_tensor *h;
			const int *want = op ? k->gt : k->eq;

			ck_assert_msg(r != NULL, "case %zu %s %s: %s", c,
				      op ? "gt" : "eq",
				      vnpu_at_dtype_name(k->dt),
				      vnpu_at_error_message());
			h = vnpu_at_is_npu(r) ? ot_to_cpu(r) : vnpu_at_retain(r);
			ck_assert_int_eq(h->dtype, VNPU_AT_BOOL);
			for (int64_t i = 0; i < n; i++)
				ck_assert_msg((int)ot_flat(h, i) == want[i],
					      "case %zu %s %s: element %lld is %d, PyTorch's %d",
					      c, op ? "gt" : "eq",
					      vnpu_at_dtype_name(k->dt),
					      (long long)i, (int)ot_flat(h, i),
					      want[i]);
			vnpu_at_release(h);
			vnpu_at_release(r);
		}
		vnpu_at_release(x);
	}
}
END_TEST

/* ---- matmul of FRACTAL_NZ operands --------------------------------------- */

struct mm_case {
	uint32_t na, nb;
	int64_t a[4], b[4];
};

START_TEST(matmul_of_internal_formats)
{
	static const struct mm_case cases[] = {
		{ 2, 3, { 5, 1 }, { 2, 1, 5 } },	/* the reported case */
		{ 2, 2, { 3, 4 }, { 4, 5 } },
		{ 2, 1, { 3, 4 }, { 4 } },
		{ 1, 2, { 4 }, { 4, 5 } },
		{ 3, 2, { 2, 3, 4 }, { 4, 5 } },
		{ 3, 1, { 2, 3, 4 }, { 4 } },
		{ 2, 3, { 3, 4 }, { 2, 4, 5 } },
		{ 1, 3, { 4 }, { 2, 4, 5 } },
		{ 3, 3, { 2, 3, 4 }, { 2, 4, 5 } },
		{ 4, 3, { 2, 1, 3, 4 }, { 3, 4, 5 } },
		{ 3, 4, { 1, 3, 4 }, { 2, 3, 4, 5 } },
		{ 2, 4, { 17, 16 }, { 2, 1, 16, 18 } },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct mm_case *k = &cases[c];
		struct vnpu_at_tensor *a, *b, *an, *bn, *want, *got;
		char what[64];

		ot_seed(2813 + c);
		a = ot_rand(k->na, k->a, VNPU_AT_F32, -1, 1, OT_CONTIG);
		b = ot_rand(k->nb, k->b, VNPU_AT_F32, -1, 1, OT_CONTIG);
		want = vnpu_op_matmul(a, b);
		/* every operand of 2 or more dims in FRACTAL_NZ */
		an = ot_to_npu(a);
		bn = ot_to_npu(b);
		for (int i = 0; i < 2; i++) {
			struct vnpu_at_tensor **t = i ? &bn : &an, *nz;

			if ((*t)->ndim < 2)
				continue;
			nz = vnpu_op_npu_format_cast(*t, VNPU_FORMAT_FRACTAL_NZ);
			ck_assert_msg(nz != NULL, "%s", vnpu_at_error_message());
			ck_assert_int_eq(vnpu_op_get_npu_format(nz),
					 VNPU_FORMAT_FRACTAL_NZ);
			vnpu_at_release(*t);
			*t = nz;
		}
		got = vnpu_op_matmul(an, bn);
		snprintf(what, sizeof(what), "matmul case %zu (NZ operands)", c);
		ot_expect_close(what, want, got, 1e-5, 1e-5);
		vnpu_at_release(got);
		/* and a transposed view of an NZ operand */
		if (bn->ndim >= 2 && k->b[k->nb - 1] == k->b[k->nb - 2]) {
			struct vnpu_at_tensor *bt = vnpu_op_transpose_int(bn, -1, -2);
			struct vnpu_at_tensor *ct = vnpu_op_transpose_int(b, -1, -2);
			struct vnpu_at_tensor *w2 = vnpu_op_matmul(a, ct);

			got = vnpu_op_matmul(an, bt);
			ot_expect_close(what, w2, got, 1e-5, 1e-5);
			vnpu_at_release(got);
			vnpu_at_release(w2);
			vnpu_at_release(ct);
			vnpu_at_release(bt);
		}
		vnpu_at_release(want);
		vnpu_at_release(a);
		vnpu_at_release(b);
		vnpu_at_release(an);
		vnpu_at_release(bn);
	}
}
END_TEST

/* ---- linear: where the bias is added --------------------------------------- */

/* PyTorch's linear with a 1-D bias is one addmm of the input flattened to
 * 2-D whenever the input is contiguous, of any rank (the bias added before
 * the one rounding); a non-contiguous input of 3 or more dims is matmul,
 * then the bias added (rounded twice). In bfloat16 the two differ. */
START_TEST(linear_rounds_the_bias_in_as_pytorch)
{
	static const struct {
		uint32_t nd;
		int64_t sizes[4];
		enum ot_layout layout;
	} cases[] = {
		{ 1, { 16 }, OT_CONTIG },
		{ 2, { 6, 16 }, OT_CONTIG },
		{ 3, { 2, 3, 16 }, OT_CONTIG },
		{ 4, { 2, 1, 3, 16 }, OT_CONTIG },
		{ 3, { 2, 3, 16 }, OT_STRIDED },
	};
	struct vnpu_at_device dev = dev_of(_i);

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint32_t nd = cases[c].nd;
		int64_t rows = 1, out[4];
		struct vnpu_at_tensor *x, *w, *b, *wt, *flat, *mm, *want, *got;
		char what[64];

		ot_seed(9001 + c);
		x = ot_rand(nd, cases[c].sizes, VNPU_AT_BF16, -4, 4, cases[c].layout);
		w = ot_rand(2, (int64_t[]){ 8, 16 }, VNPU_AT_BF16, -4, 4, OT_CONTIG);
		b = ot_rand(1, (int64_t[]){ 8 }, VNPU_AT_BF16, -64, 64, OT_CONTIG);
		if (dev.type != VNPU_AT_CPU) {
			struct vnpu_at_tensor *t[3] = { x, w, b };

			for (int i = 0; i < 3; i++) {
				struct vnpu_at_tensor *n = ot_to_npu(t[i]);

				vnpu_at_release(t[i]);
				t[i] = n;
			}
			x = t[0], w = t[1], b = t[2];
		}
		for (uint32_t d = 0; d + 1 < nd; d++)
			rows *= cases[c].sizes[d];
		for (uint32_t d = 0; d + 1 < nd; d++)
			out[d] = cases[c].sizes[d];
		out[nd - 1] = 8;
		wt = vnpu_op_t(w);
		if (cases[c].layout == OT_CONTIG) {
			flat = vnpu_op_view(x, VNPU_AT_INTS(rows, 16));
			mm = vnpu_op_addmm(b, flat, wt, VNPU_AT_INT(1), VNPU_AT_INT(1));
			want = vnpu_op_view(mm, (struct vnpu_at_int_array){ out, nd });
		} else {
			flat = vnpu_op_matmul(x, wt);
			mm = NULL;
			want = vnpu_op_add_Tensor(flat, b, VNPU_AT_INT(1));
		}
		got = vnpu_op_linear(x, w, b);
		snprintf(what, sizeof(what), "linear case %zu on %s", c,
			 _i ? "npu" : "cpu");
		if (vnpu_at_is_npu(want)) {
			struct vnpu_at_tensor *h = ot_to_cpu(want);

			vnpu_at_release(want);
			want = h;
		}
		ot_expect_close(what, want, got, 0, 0);
		vnpu_at_release(got);
		vnpu_at_release(want);
		vnpu_at_release(mm);
		vnpu_at_release(flat);
		vnpu_at_release(wt);
		vnpu_at_release(x);
		vnpu_at_release(w);
		vnpu_at_release(b);
	}
}
END_TEST

/* ---- float16 and bfloat16 with a wider scalar -------------------------- */

START_TEST(reduced_float_with_a_wider_scalar)
{
	/* PyTorch's mul and div take the scalar as it is (in float32), add
	 * rounds it to the tensor's dtype: values PyTorch 2.13 printed */
	static const struct {
		enum vnpu_at_dtype dt;
		double x[3];
		int op; /* 0 div, 1 mul, 2 add */
		double s, want[3];
	} cases[] = {
		{ VNPU_AT_F16, { 1, -1.1259765625, 65504 }, 0, 1e5,
		  { 1.0013580322265625e-05, -1.1265277862548828e-05, 0.6552734375 } },
		{ VNPU_AT_F16, { 1, -1.1259765625, 65504 }, 1, 0.1,
		  { 0.0999755859375, -0.11260986328125, 6552 } },
		{ VNPU_AT_F16, { 1, -1.1259765625, 65504 }, 2, 1e5,
		  { INFINITY, INFINITY, INFINITY } },
		{ VNPU_AT_BF16, { 1, -1.125, 65536 }, 0, 1e5,
		  { 1.0013580322265625e-05, -1.1265277862548828e-05, 0.65625 } },
		{ VNPU_AT_BF16, { 1, -1.125, 65536 }, 1, 0.1,
		  { 0.10009765625, -0.1123046875, 6560 } },
		{ VNPU_AT_BF16, { 1, -1.125, 65536 }, 2, 1e5,
		  { 99840, 99840, 165888 } },
	};
	struct vnpu_at_device dev = dev_of(_i);
	int64_t n = 3;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct vnpu_at_tensor *x = tensor_of(1, &n, cases[c].dt, cases[c].x, dev);
		struct vnpu_at_tensor *s = vnpu_at_scalar_tensor(
			VNPU_AT_DOUBLE(cases[c].s), VNPU_AT_F64, VNPU_AT_DEV_CPU);
		struct vnpu_at_tensor *r, *h;

		ck_assert_ptr_nonnull(s);
		s->wrapped_number = true;
		r = cases[c].op == 0 ? vnpu_op_div_Tensor(x, s) :
		    cases[c].op == 1 ? vnpu_op_mul_Tensor(x, s) :
				       vnpu_op_add_Tensor(x, s, VNPU_AT_INT(1));
		ck_assert_msg(r != NULL, "case %zu: %s", c, vnpu_at_error_message());
		h = vnpu_at_is_npu(r) ? ot_to_cpu(r) : vnpu_at_retain(r);
		ck_assert_int_eq(h->dtype, cases[c].dt);
		for (int64_t i = 0; i < n; i++)
			ck_assert_msg(ot_flat(h, i) == cases[c].want[i],
				      "case %zu on %s: element %lld is %.17g, PyTorch's %.17g",
				      c, _i ? "npu" : "cpu", (long long)i,
				      ot_flat(h, i), cases[c].want[i]);
		vnpu_at_release(h);
		vnpu_at_release(r);
		vnpu_at_release(s);
		vnpu_at_release(x);
	}
}
END_TEST

static Suite *semantics_suite(void)
{
	Suite *s = suite_create("op_semantics");
	TCase *tc = tcase_create("semantics");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, out_that_is_an_input, 0, 2);
	tcase_add_loop_test(tc, compare_with_out_of_range_scalars, 0, 2);
	tcase_add_test(tc, matmul_of_internal_formats);
	tcase_add_loop_test(tc, linear_rounds_the_bias_in_as_pytorch, 0, 2);
	tcase_add_loop_test(tc, reduced_float_with_a_wider_scalar, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(semantics_suite());
	int failed;

	vnpu_fallback_set_policy(VNPU_FALLBACK_ALLOW);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
