// SPDX-License-Identifier: MIT
/* Dispatcher core: key sets, extraction, TLS, table precedence for every
 * rule, boxed/unboxed/redispatch, CPU fallback (functional, in-place,
 * out=), error messages, schema parser, autograd against finite
 * differences. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu_dispatch.h"
#include "vnpu_schema.h"

static struct vnpu_at_tensor *cpu_f64(int64_t r, int64_t c, unsigned seed)
{
	struct vnpu_at_tensor *t = vnpu_at_empty(2, (int64_t[]){ r, c }, VNPU_AT_F64,
						 VNPU_AT_DEV_CPU);
	double *d = vnpu_at_data(t);

	srand(seed);
	for (int64_t i = 0; i < r * c; i++)
		d[i] = (double)rand() / RAND_MAX * 2 - 1;
	return t;
}

START_TEST(keyset_priority)
{
	vnpu_keyset_t cpu = vnpu_keyset_of(VNPU_KEY_CPU);
	vnpu_keyset_t npu = vnpu_keyset_of(VNPU_KEY_PRIVATEUSE1);
	vnpu_keyset_t agc = vnpu_keyset_of(VNPU_KEY_AUTOGRAD_CPU);
	char buf[128];

	ck_assert_int_eq(vnpu_keyset_highest(cpu), VNPU_KEY_CPU);
	ck_assert_int_eq(vnpu_keyset_highest(cpu | npu), VNPU_KEY_PRIVATEUSE1);
	ck_assert_int_eq(vnpu_keyset_highest(cpu | agc), VNPU_KEY_AUTOGRAD_CPU);
	ck_assert_int_eq(vnpu_keyset_highest(cpu | npu | agc), VNPU_KEY_AUTOGRAD_PRIVATEUSE1);
	ck_assert_int_eq(vnpu_keyset_highest(cpu | vnpu_keyset_of(VNPU_KEY_PROFILER)),
			 VNPU_KEY_PROFILER);
	ck_assert_int_eq(vnpu_keyset_highest(0), VNPU_KEY_UNDEFINED);
	/* remove() only drops functionality bits */
	ck_assert_int_eq(vnpu_keyset_highest(vnpu_keyset_remove(cpu | agc, agc)), VNPU_KEY_CPU);
	ck_assert_uint_eq(vnpu_keyset_after(VNPU_FUNC_AUTOGRAD) & agc, cpu & agc);
	vnpu_keyset_format(cpu | agc, buf, sizeof(buf));
	ck_assert_str_eq(buf, "DispatchKeySet(AutogradCPU, CPU)");
}
END_TEST

static int hits[4];

static void boxed_marker(const struct vnpu_op *op, vnpu_keyset_t ks, struct vnpu_stack *s)
{
	struct vnpu_ivalue v = vnpu_stack_pop(s);

	hits[0]++;
	vnpu_stack_push_tensor(s, v.t);
	vnpu_ivalue_drop(&v);
}

START_TEST(table_precedence)
{
	const struct vnpu_op *op = vnpu_def("test::prec(Tensor self) -> Tensor");
	struct vnpu_registration *cia, *cea, *k, *fb = NULL;
	struct vnpu_at_tensor *t = vnpu_op_ones(VNPU_AT_INTS(2), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_stack s;

	ck_assert_ptr_nonnull(op);
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_CPU), "missing");
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_PRIVATEUSE1), "backend fallback");
	cia = vnpu_impl("test::prec", VNPU_KEY_COMPOSITE_IMPLICIT_AUTOGRAD, NULL, boxed_marker);
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_CPU), "composite implicit");
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_AUTOGRAD_CPU), "composite implicit");
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_UNDEFINED), "composite implicit");
	cea = vnpu_impl("test::prec", VNPU_KEY_COMPOSITE_EXPLICIT_AUTOGRAD, NULL, boxed_marker);
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_CPU), "composite explicit");
	/* CIA leaves the autograd slot once a CEA kernel exists */
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_AUTOGRAD_CPU), "backend fallback");
	k = vnpu_impl("test::prec", VNPU_KEY_CPU, NULL, boxed_marker);
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_CPU), "kernel");
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_PRIVATEUSE1), "composite explicit");
	vnpu_deregister(k);
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_CPU), "composite explicit");
	vnpu_deregister(cea);
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_CPU), "composite implicit");
	vnpu_deregister(cia);
	ck_assert_str_eq(vnpu_op_table_source(op, VNPU_KEY_CPU), "missing");
	/* missing kernel error names op, key and backends with kernels */
	vnpu_impl("test::prec", VNPU_KEY_PRIVATEUSE1, NULL, boxed_marker);
	vnpu_stack_init(&s);
	vnpu_stack_push_tensor(&s, t);
	ck_assert(!vnpu_call_boxed(op, &s));
	ck_assert_str_eq(vnpu_at_error_message(),
			 "Could not run 'test::prec' with arguments from the 'CPU' backend. 'test::prec' is only available for these backends: [npu].");
	vnpu_stack_destroy(&s);
	/* a second fallback for one key is refused */
	ck_assert_ptr_null(vnpu_fallback(VNPU_KEY_PRIVATEUSE1, boxed_marker));
	ck_assert(strstr(vnpu_at_error_message(), "multiple backend fallbacks"));
	(void)fb;
	vnpu_at_release(t);
}
END_TEST

START_TEST(boxed_unboxed_redispatch_tls)
{
	const struct vnpu_op *op = vnpu_def("test::both(Tensor self) -> Tensor");
	struct vnpu_at_tensor *t = vnpu_op_ones(VNPU_AT_INTS(3), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_registration *r;
	struct vnpu_tls_guard g;
	struct vnpu_stack s;

	memset(hits, 0, sizeof(hits));
	r = vnpu_impl("test::both", VNPU_KEY_CPU, NULL, boxed_marker);
	ck_assert_ptr_nonnull(r);
	vnpu_stack_init(&s);
	vnpu_stack_push_tensor(&s, t);
	ck_assert(vnpu_call_boxed(op, &s));
	ck_assert_int_eq(hits[0], 1);
	ck_assert_uint_eq(s.size, 1);
	ck_assert_ptr_eq(s.v[0].t, t);
	vnpu_stack_clear(&s);
	/* redispatch to a key with a kernel, and to one without */
	vnpu_stack_push_tensor(&s, t);
	ck_assert(vnpu_redispatch_boxed(op, vnpu_keyset_of(VNPU_KEY_CPU), &s));
	ck_assert_int_eq(hits[0], 2);
	vnpu_stack_clear(&s);
	/* TLS include: the Profiler key takes the call, then forwards */
	vnpu_profiler_reset();
	vnpu_tls_include_begin(&g, vnpu_keyset_of(VNPU_KEY_PROFILER));
	ck_assert_int_eq(vnpu_keyset_highest(vnpu_op_dispatch_keyset(op, t->keys)),
			 VNPU_KEY_PROFILER);
	vnpu_stack_push_tensor(&s, t);
	ck_assert(vnpu_call_boxed(op, &s));
	vnpu_tls_guard_end(&g);
	ck_assert_int_eq(hits[0], 3);
	ck_assert_int_eq(vnpu_keyset_highest(vnpu_op_dispatch_keyset(op, t->keys)), VNPU_KEY_CPU);
	vnpu_stack_clear(&s);
	/* TLS exclude: exclusion wins over the tensor's autograd key */
	vnpu_at_set_requires_grad(t, true);
	ck_assert_int_eq(vnpu_keyset_highest(vnpu_op_dispatch_keyset(op, t->keys)),
			 VNPU_KEY_AUTOGRAD_CPU);
	vnpu_no_grad_begin(&g);
	ck_assert_int_eq(vnpu_keyset_highest(vnpu_op_dispatch_keyset(op, t->keys)), VNPU_KEY_CPU);
	vnpu_tls_guard_end(&g);
	vnpu_at_set_requires_grad(t, false);
	vnpu_stack_destroy(&s);
	vnpu_deregister(r);
	/* a generated op: the unboxed kernel called boxed through its adapter */
	{
		const struct vnpu_op *add = vnpu_op_find("aten::add.Tensor");
		struct vnpu_at_tensor *o;

		vnpu_stack_init(&s);
		vnpu_stack_push_tensor(&s, t);
		vnpu_stack_push_tensor(&s, t);
		vnpu_stack_push_int(&s, 3);
		ck_assert(vnpu_call_boxed(add, &s));
		ck_assert_uint_eq(s.size, 1);
		o = s.v[0].t;
		ck_assert_float_eq(((float *)vnpu_at_data(o))[2], 4.0f);
		vnpu_stack_destroy(&s);
	}
	vnpu_at_release(t);
}
END_TEST

START_TEST(fallback_paths)
{
	struct vnpu_at_tensor *c = vnpu_op_full(VNPU_AT_INTS(2, 3), VNPU_AT_DOUBLE(2.0), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *n = vnpu_op__to_copy(c, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NPU(0), false);
	struct vnpu_at_tensor *r, *h, *out;
	struct vnpu_fallback_entry e[8];
	size_t cnt;

	ck_assert_ptr_nonnull(n);
	vnpu_fallback_reset();
	vnpu_fallback_set_policy(VNPU_FALLBACK_ALLOW);
	/* in-place (a!): add_.Tensor has no npu kernel; the npu tensor is updated */
	r = vnpu_op_add__Tensor(n, n, VNPU_AT_INT(1));
	ck_assert_ptr_eq(r, n);
	vnpu_at_release(r);
	h = vnpu_op__to_copy(n, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_CPU, false);
	ck_assert_float_eq(((float *)vnpu_at_data(h))[5], 4.0f);
	vnpu_at_release(h);
	/* out=: resized and written on the npu */
	out = vnpu_op_empty_memory_format(VNPU_AT_INTS(1), VNPU_AT_F32, VNPU_AT_DEV_NPU(0));
	r = vnpu_op_mul_out(n, n, out);
	ck_assert_ptr_eq(r, out);
	ck_assert_int_eq(out->ndim, 2);
	ck_assert(vnpu_at_is_npu(out));
	h = vnpu_op__to_copy(out, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_CPU, false);
	ck_assert_float_eq(((float *)vnpu_at_data(h))[0], 16.0f);
	vnpu_at_release(h);
	vnpu_at_release(r);
	cnt = vnpu_fallback_report(e, 8);
	ck_assert_uint_eq(cnt, 2);
	/* an input the npu kernel leaves to the CPU kernel, which refuses it,
	 * is a rejected input, not a fallback */
	h = vnpu_op_mm(n, n);
	ck_assert_ptr_null(h);
	ck_assert(strstr(vnpu_at_error_message(), "cannot be multiplied"));
	vnpu_at_error_clear();
	ck_assert_uint_eq(vnpu_fallback_report(e, 8), 2);
	ck_assert_uint_eq(vnpu_fallback_rejections(e, 8), 1);
	ck_assert_str_eq(e[0].op, "aten::mm");
	ck_assert_uint_eq(e[0].count, 1);
	/* error policy */
	vnpu_fallback_set_policy(VNPU_FALLBACK_ERROR);
	ck_assert_ptr_null(vnpu_op_add__Tensor(n, n, VNPU_AT_INT(1)));
	ck_assert(strstr(vnpu_at_error_message(), "aten::add_.Tensor"));
	ck_assert_int_eq(vnpu_at_error_code(), VNPU_AT_ERR_FALLBACK);
	vnpu_fallback_set_policy(VNPU_FALLBACK_ALLOW);
	vnpu_at_release(out);
	vnpu_at_release(n);
	vnpu_at_release(c);
}
END_TEST

START_TEST(schema_parser)
{
	static const char *const good[] = {
		"add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
		"aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
		"max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
		"conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1) -> Tensor",
		"sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
		"index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
		"view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
		"gelu(Tensor self, *, str approximate='none') -> Tensor",
		"foo() -> ()",
	};
	static const struct { const char *s; unsigned col; } bad[] = {
		{ "add(Tensor self Tensor other) -> Tensor", 17 },
		{ "add(Tensor self, Tensr other) -> Tensor", 18 },
		{ "add(Tensor self) Tensor", 18 },
		{ "add(int(a) x) -> Tensor", 8 },
		{ "add(Tensor x, Tensor x) -> Tensor", 22 },
		{ "add(int x=None) -> Tensor", 15 },
		{ "add(Tensor(a!) x) -> Tensor(b!)", 32 },
		{ "add(Tensor x) -> Tensor extra more", 31 },
	};
	char err[512], buf[512];
	struct vnpu_schema *s;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(vnpu_schema_parse(good[i], &s, err, sizeof(err)), "%s: %s", good[i], err);
		vnpu_schema_format(s, buf, sizeof(buf));
		ck_assert_msg(strstr(buf, "::"), "%s", buf);
		vnpu_schema_free(s);
	}
	ck_assert(vnpu_schema_parse(good[1], &s, err, sizeof(err)));
	ck_assert_str_eq(s->ns, "aten");
	ck_assert_str_eq(s->overload, "out");
	ck_assert(s->args[3].is_write && s->args[3].alias_set == 'a' && s->args[3].kwarg_only);
	ck_assert(s->args[2].kwarg_only && !s->args[0].kwarg_only);
	ck_assert_str_eq(s->args[2].default_value, "1");
	vnpu_schema_format(s, buf, sizeof(buf));
	ck_assert_str_eq(buf, good[1]);
	vnpu_schema_free(s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[32];

		ck_assert_msg(!vnpu_schema_parse(bad[i].s, &s, err, sizeof(err)), "%s", bad[i].s);
		snprintf(want, sizeof(want), "column %u:", bad[i].col);
		ck_assert_msg(!strncmp(err, want, strlen(want)), "%s -> %s", bad[i].s, err);
		/* the caret line points at the column */
		ck_assert(strchr(err, '^') - strrchr(err, '\n') == (long)bad[i].col);
	}
	/* def rejects a malformed schema with the parser's message */
	ck_assert_ptr_null(vnpu_def("test::bad(Tensor self,) -> Tensor"));
	ck_assert_int_eq(vnpu_at_error_code(), VNPU_AT_ERR_SCHEMA);
}
END_TEST

/* loss = sum(relu(a @ b + c) * a2); gradients against central differences */
static double loss_of(struct vnpu_at_tensor *a, struct vnpu_at_tensor *b,
		      struct vnpu_at_tensor *c, struct vnpu_at_tensor *a2,
		      struct vnpu_at_tensor **keep)
{
	struct vnpu_at_tensor *m = vnpu_op_mm(a, b);
	struct vnpu_at_tensor *s = vnpu_op_add_Tensor(m, c, VNPU_AT_DOUBLE(0.5));
	struct vnpu_at_tensor *r = vnpu_op_relu(s);
	struct vnpu_at_tensor *p = vnpu_op_mul_Tensor(r, a2);
	struct vnpu_at_tensor *t = vnpu_op_transpose_int(p, 0, 1);
	struct vnpu_at_tensor *l = vnpu_op_mean(t, VNPU_AT_DTYPE_NONE);
	double v = *(double *)vnpu_at_data(l);

	vnpu_at_release(m);
	vnpu_at_release(s);
	vnpu_at_release(r);
	vnpu_at_release(p);
	vnpu_at_release(t);
	if (keep)
		*keep = l;
	else
		vnpu_at_release(l);
	return v;
}

START_TEST(autograd_finite_differences)
{
	struct vnpu_at_tensor *a = cpu_f64(3, 4, 1), *b = cpu_f64(4, 5, 2);
	struct vnpu_at_tensor *c = cpu_f64(1, 5, 3), *a2 = cpu_f64(3, 5, 4), *l;
	struct vnpu_at_tensor *ins[3] = { a, b, c };

	for (int i = 0; i < 3; i++)
		ck_assert(vnpu_at_set_requires_grad(ins[i], true));
	loss_of(a, b, c, a2, &l);
	ck_assert_str_eq(vnpu_at_grad_fn_name(l), "MeanBackward0");
	ck_assert_msg(vnpu_at_backward(l), "%s", vnpu_at_error_message());
	vnpu_at_release(l);
	for (int i = 0; i < 3; i++) {
		struct vnpu_at_tensor *g = vnpu_at_grad(ins[i]);
		double *d = vnpu_at_data(ins[i]);
		int64_t n = vnpu_at_numel(ins[i]);
		struct vnpu_tls_guard gd;

		ck_assert_ptr_nonnull(g);
		vnpu_no_grad_begin(&gd);
		for (int64_t k = 0; k < n; k++) {
			double x = d[k], h = 1e-6, num;

			d[k] = x + h;
			num = loss_of(a, b, c, a2, NULL);
			d[k] = x - h;
			num -= loss_of(a, b, c, a2, NULL);
			d[k] = x;
			num /= 2 * h;
			ck_assert_msg(fabs(num - ((double *)vnpu_at_data(g))[k]) < 1e-6,
				      "input %d elem %lld: %g vs %g", i, (long long)k, num,
				      ((double *)vnpu_at_data(g))[k]);
		}
		vnpu_tls_guard_end(&gd);
	}
	for (int i = 0; i < 3; i++)
		vnpu_at_release(ins[i]);
	vnpu_at_release(a2);
}
END_TEST

START_TEST(error_messages)
{
	struct vnpu_at_tensor *a = vnpu_op_ones(VNPU_AT_INTS(2, 3), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *b = vnpu_op_ones(VNPU_AT_INTS(4, 5), VNPU_AT_F32, VNPU_AT_DEV_CPU);

	ck_assert_ptr_null(vnpu_op_mm(a, b));
	ck_assert_str_eq(vnpu_at_error_message(),
			 "aten::mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
	/* a NULL from a failed op keeps the first error */
	ck_assert_ptr_null(vnpu_op_relu(vnpu_op_mm(a, b)));
	ck_assert(strstr(vnpu_at_error_message(), "cannot be multiplied"));
	vnpu_at_error_clear();
	ck_assert_ptr_null(vnpu_op_relu(NULL));
	ck_assert_str_eq(vnpu_at_error_message(),
			 "aten::relu: argument 'self' is None (expected a Tensor)");
	ck_assert_ptr_null(vnpu_op_view(a, VNPU_AT_INTS(4)));
	ck_assert(strstr(vnpu_at_error_message(), "shape is invalid for input of size 6"));
	vnpu_at_release(a);
	vnpu_at_release(b);
}
END_TEST

/* bool[N] arguments (output masks) boxed: a bit list of its length; an
 * int list or a longer list is refused; an unmasked Tensor return is
 * None on the stack. */
START_TEST(bool_list_arguments)
{
	const struct vnpu_op *op = vnpu_op_find("aten::native_layer_norm_backward");
	struct vnpu_at_tensor *x = vnpu_op_ones(VNPU_AT_INTS(2, 3), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_ret_native_layer_norm ln = vnpu_op_native_layer_norm(x, VNPU_AT_INTS(3), NULL,
									  NULL, 1e-5);
	struct vnpu_stack s;

	ck_assert_ptr_nonnull(op);
	ck_assert_ptr_nonnull(ln.r0);
	for (int round = 0; round < 2; round++) {
		vnpu_stack_init(&s);
		vnpu_stack_push_tensor(&s, x);
		vnpu_stack_push_tensor(&s, x);
		vnpu_stack_push_int_list(&s, VNPU_AT_INTS(3));
		vnpu_stack_push_tensor(&s, ln.r1);
		vnpu_stack_push_tensor(&s, ln.r2);
		vnpu_stack_push_none(&s);
		vnpu_stack_push_none(&s);
		if (round == 0) {
			vnpu_stack_push_int_list(&s, VNPU_AT_INTS(1, 0, 0));
			ck_assert(!vnpu_call_boxed(op, &s));
			ck_assert(strstr(vnpu_at_error_message(),
					 "argument 'output_mask' must be bool[], not int[]"));
		} else {
			ck_assert(vnpu_stack_push_bool_list(&s, (struct vnpu_at_bool_list){ 3, 0x5 }));
			ck_assert(vnpu_call_boxed(op, &s));
			ck_assert_uint_eq(s.size, 3);
			ck_assert_uint_eq(s.v[0].tag, VNPU_IV_TENSOR);
			ck_assert_uint_eq(s.v[1].tag, VNPU_IV_NONE);
			ck_assert_uint_eq(s.v[2].tag, VNPU_IV_TENSOR);
		}
		vnpu_stack_destroy(&s);
	}
	vnpu_stack_init(&s);
	ck_assert(!vnpu_stack_push_bool_list(&s, (struct vnpu_at_bool_list){ 65, 1 }));
	ck_assert(strstr(vnpu_at_error_message(), "at most 64"));
	vnpu_stack_destroy(&s);
	vnpu_at_release(ln.r0);
	vnpu_at_release(ln.r1);
	vnpu_at_release(ln.r2);
	vnpu_at_release(x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dispatcher");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, keyset_priority);
	tcase_add_test(tc, table_precedence);
	tcase_add_test(tc, boxed_unboxed_redispatch_tls);
	tcase_add_test(tc, fallback_paths);
	tcase_add_test(tc, schema_parser);
	tcase_add_test(tc, autograd_finite_differences);
	tcase_add_test(tc, error_messages);
	tcase_add_test(tc, bool_list_arguments);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
