// SPDX-License-Identifier: MIT
/*
 * Autograd kernels against central finite differences in f64 on the CPU:
 * each case builds loss = sum(f(inputs) * R) with a fixed random R, runs
 * backward() and compares every input element's gradient with
 * (loss(x + h) - loss(x - h)) / 2h. Then one gradient check of a small
 * network on npu against the same network on the CPU (f32).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu_dispatch.h"

#define MAX_IN 4

static uint64_t rng = 0x853c49e6748fea9bull;

static double uniform(double lo, double hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53;
}

/* A contiguous CPU f64 tensor of uniform values in [lo, hi). */
static struct vnpu_at_tensor *rand_f64(struct vnpu_at_int_array sizes,
				       double lo, double hi)
{
	struct vnpu_at_tensor *t = vnpu_at_empty((uint32_t)sizes.n, sizes.v,
						 VNPU_AT_F64, VNPU_AT_DEV_CPU);
	double *d;

	ck_assert_ptr_nonnull(t);
	d = vnpu_at_data(t);
	for (int64_t i = 0; i < vnpu_at_numel(t); i++)
		d[i] = uniform(lo, hi);
	return t;
}

static struct vnpu_at_tensor *i64_tensor(struct vnpu_at_int_array sizes,
					 const int64_t *v)
{
	struct vnpu_at_tensor *t = vnpu_at_empty((uint32_t)sizes.n, sizes.v,
						 VNPU_AT_I64, VNPU_AT_DEV_CPU);

	ck_assert_ptr_nonnull(t);
	memcpy(vnpu_at_data(t), v, sizeof(int64_t) * (size_t)vnpu_at_numel(t));
	return t;
}

typedef struct vnpu_at_tensor *(*case_fn)(struct vnpu_at_tensor **in);

/* sum(f(in) * r); r is made on the first call (the output's shape) */
static double loss_of(case_fn f, struct vnpu_at_tensor **in,
		      struct vnpu_at_tensor **r, struct vnpu_at_tensor **keep)
{
	struct vnpu_at_tensor *out = f(in), *p, *l;
	double v;

	ck_assert_msg(out, "forward: %s", vnpu_at_error_message());
	if (!*r) {
		struct vnpu_at_int_array s = { out->sizes, out->ndim };

		*r = rand_f64(s, -1, 1);
	}
	p = vnpu_op_mul_Tensor(out, *r);
	l = p ? vnpu_op_sum(p, VNPU_AT_DTYPE_NONE) : NULL;
	ck_assert_msg(l, "loss: %s", vnpu_at_error_message());
	v = *(double *)vnpu_at_data(l);
	vnpu_at_release(out);
	vnpu_at_release(p);
	if (keep)
		*keep = l;
	else
		vnpu_at_release(l);
	return v;
}

/*
 * Checks the gradients of the inputs whose bit is set in `diff` (the
 * others are indices or constants); takes the inputs' references.
 */
static void gradcheck(const char *name, case_fn f, int n,
		      struct vnpu_at_tensor **in, unsigned diff,
		      const char *grad_fn)
{
	struct vnpu_at_tensor *r = NULL, *l;
	struct vnpu_tls_guard ng;

	for (int i = 0; i < n; i++)
		if (diff >> i & 1)
			ck_assert(vnpu_at_set_requires_grad(in[i], true));
	loss_of(f, in, &r, &l);
	if (grad_fn) {
		struct vnpu_at_tensor *out = f(in);

		ck_assert_str_eq(vnpu_at_grad_fn_name(out), grad_fn);
		vnpu_at_release(out);
	}
	ck_assert_msg(vnpu_at_backward(l), "%s: backward: %s", name,
		      vnpu_at_error_message());
	vnpu_at_release(l);
	vnpu_no_grad_begin(&ng);
	for (int i = 0; i < n; i++) {
		struct vnpu_at_tensor *g = vnpu_at_grad(in[i]);
		double *x = vnpu_at_data(in[i]), *gd;

		if (!(diff >> i & 1))
			continue;
		ck_assert_msg(g, "%s: input %d has no gradient", name, i);
		ck_assert_int_eq(g->ndim, in[i]->ndim);
		for (uint32_t d = 0; d < g->ndim; d++)
			ck_assert_int_eq(g->sizes[d], in[i]->sizes[d]);
		/* the gradient may be any layout: compare a contiguous copy */
		g = vnpu_op_contiguous(g);
		ck_assert_ptr_nonnull(g);
		gd = vnpu_at_data(g);
		for (int64_t k = 0; k < vnpu_at_numel(in[i]); k++) {
			double keep = x[k], h = 1e-6, num;

			x[k] = keep + h;
			num = loss_of(f, in, &r, NULL);
			x[k] = keep - h;
			num -= loss_of(f, in, &r, NULL);
			x[k] = keep;
			num /= 2 * h;
			ck_assert_msg(fabs(num - gd[k]) <= 1e-6 + 1e-5 * fabs(num),
				      "%s: input %d element %lld: finite difference %.9g, backward %.9g",
				      name, i, (long long)k, num, gd[k]);
		}
		vnpu_at_release(g);
	}
	vnpu_tls_guard_end(&ng);
	for (int i = 0; i < n; i++)
		vnpu_at_release(in[i]);
	vnpu_at_release(r);
}

#define GC(name, f, diff, grad_fn, ...)                                      \
	do {                                                                 \
		struct vnpu_at_tensor *in_[] = { __VA_ARGS__ };              \
		gradcheck(name, f, (int)(sizeof(in_) / sizeof(in_[0])), in_, \
			  diff, grad_fn);                                    \
	} while (0)

#define R(...) rand_f64(VNPU_AT_INTS(__VA_ARGS__), -1, 1)
#define RPOS(...) rand_f64(VNPU_AT_INTS(__VA_ARGS__), 0.5, 2)

/* ---- linear algebra ------------------------------------------------------ */

static struct vnpu_at_tensor *f_addmm(struct vnpu_at_tensor **in)
{
	return vnpu_op_addmm(in[0], in[1], in[2], VNPU_AT_DOUBLE(0.5),
			     VNPU_AT_DOUBLE(2));
}

static struct vnpu_at_tensor *f_bmm(struct vnpu_at_tensor **in)
{
	return vnpu_op_bmm(in[0], in[1]);
}

static struct vnpu_at_tensor *f_mm_t(struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *t = vnpu_op_t(in[1]), *r = vnpu_op_mm(in[0], t);

	vnpu_at_release(t);
	return r;
}

static struct vnpu_at_tensor *f_linear(struct vnpu_at_tensor **in)
{
	return vnpu_op_linear(in[0], in[1], in[2]);
}

START_TEST(linalg)
{
	GC("addmm", f_addmm, 7, "AddmmBackward0", R(4), R(2, 3), R(3, 4));
	GC("addmm column bias", f_addmm, 7, NULL, R(2, 1), R(2, 3), R(3, 4));
	GC("bmm", f_bmm, 3, "BmmBackward0", R(2, 3, 4), R(2, 4, 5));
	GC("mm of a transpose", f_mm_t, 3, "MmBackward0", R(3, 4), R(5, 4));
	GC("linear 3-d", f_linear, 7, NULL, R(2, 3, 4), R(5, 4), R(5));
}
END_TEST

/* ---- convolution and pooling ----------------------------------------------- */

static struct vnpu_at_tensor *f_conv_groups(struct vnpu_at_tensor **in)
{
	return vnpu_op_convolution(in[0], in[1], in[2], VNPU_AT_INTS(2, 1),
				   VNPU_AT_INTS(1, 0), VNPU_AT_INTS(1, 2),
				   false, VNPU_AT_INTS(0, 0), 2);
}

static struct vnpu_at_tensor *f_conv2d(struct vnpu_at_tensor **in)
{
	return vnpu_op_conv2d(in[0], in[1], in[2], VNPU_AT_INTS(1),
			      VNPU_AT_INTS(1), VNPU_AT_INTS(1), 1);
}

static struct vnpu_at_tensor *f_conv_transposed(struct vnpu_at_tensor **in)
{
	return vnpu_op_convolution(in[0], in[1], in[2], VNPU_AT_INTS(2, 2),
				   VNPU_AT_INTS(1, 1), VNPU_AT_INTS(1, 1),
				   true, VNPU_AT_INTS(1, 0), 1);
}

static struct vnpu_at_tensor *f_max_pool(struct vnpu_at_tensor **in)
{
	return vnpu_op_max_pool2d(in[0], VNPU_AT_INTS(3, 2), VNPU_AT_INTS(2, 2),
				  VNPU_AT_INTS(1, 1), VNPU_AT_INTS(1, 1), true);
}

static struct vnpu_at_tensor *f_max_pool_lenet(struct vnpu_at_tensor **in)
{
	return vnpu_op_max_pool2d(in[0], VNPU_AT_INTS(2, 2), VNPU_AT_NO_INTS,
				  VNPU_AT_INTS(0), VNPU_AT_INTS(1), false);
}

static struct vnpu_at_tensor *f_avg_pool(struct vnpu_at_tensor **in)
{
	return vnpu_op_avg_pool2d(in[0], VNPU_AT_INTS(3, 2), VNPU_AT_INTS(2, 2),
				  VNPU_AT_INTS(1, 1), true, false,
				  VNPU_AT_NO_INT);
}

static struct vnpu_at_tensor *f_avg_pool_pad(struct vnpu_at_tensor **in)
{
	return vnpu_op_avg_pool2d(in[0], VNPU_AT_INTS(3), VNPU_AT_INTS(2),
				  VNPU_AT_INTS(1), false, true, VNPU_AT_NO_INT);
}

static struct vnpu_at_tensor *f_avg_pool_div(struct vnpu_at_tensor **in)
{
	return vnpu_op_avg_pool2d(in[0], VNPU_AT_INTS(2), VNPU_AT_NO_INTS,
				  VNPU_AT_INTS(0), false, true,
				  VNPU_AT_SOME_INT(3));
}

START_TEST(conv_pool)
{
	GC("convolution groups/stride/dilation", f_conv_groups, 7,
	   "ConvolutionBackward0", R(2, 4, 6, 5), R(6, 2, 3, 2), R(6));
	GC("conv2d padding 1", f_conv2d, 7, NULL, R(2, 3, 5, 5), R(4, 3, 3, 3),
	   R(4));
	GC("transposed convolution", f_conv_transposed, 7, NULL, R(1, 2, 4, 3),
	   R(2, 3, 3, 3), R(3));
	GC("max_pool2d ceil/pad", f_max_pool, 1,
	   "MaxPool2DWithIndicesBackward0", R(2, 2, 5, 6));
	GC("max_pool2d 2x2", f_max_pool_lenet, 1, NULL, R(1, 3, 4, 6));
	GC("avg_pool2d ceil, pad excluded", f_avg_pool, 1,
	   "AvgPool2DBackward0", R(2, 2, 5, 6));
	GC("avg_pool2d pad included", f_avg_pool_pad, 1, NULL, R(1, 2, 6, 5));
	GC("avg_pool2d divisor_override", f_avg_pool_div, 1, NULL, R(2, 5, 4));
}
END_TEST

/* ---- softmax and norms ----------------------------------------------------------- */

static struct vnpu_at_tensor *f_softmax(struct vnpu_at_tensor **in)
{
	return vnpu_op_softmax_int(in[0], 1, VNPU_AT_DTYPE_NONE);
}

static struct vnpu_at_tensor *f_log_softmax0(struct vnpu_at_tensor **in)
{
	return vnpu_op_log_softmax_int(in[0], 0, VNPU_AT_DTYPE_NONE);
}

static struct vnpu_at_tensor *f_layer_norm(struct vnpu_at_tensor **in)
{
	return vnpu_op_layer_norm(in[0], VNPU_AT_INTS(4, 5), in[1], in[2], 1e-5,
				  true);
}

static struct vnpu_at_tensor *f_layer_norm_plain(struct vnpu_at_tensor **in)
{
	return vnpu_op_layer_norm(in[0], VNPU_AT_INTS(6), NULL, NULL, 1e-5,
				  true);
}

static struct vnpu_at_tensor *f_batch_norm(struct vnpu_at_tensor **in)
{
	struct vnpu_ret_native_batch_norm r = vnpu_op_native_batch_norm(
		in[0], in[1], in[2], in[3], in[4], true, 0.1, 1e-5);

	vnpu_at_release(r.r1);
	vnpu_at_release(r.r2);
	return r.r0;
}

static struct vnpu_at_tensor *f_batch_norm_eval(struct vnpu_at_tensor **in)
{
	struct vnpu_ret_native_batch_norm r = vnpu_op_native_batch_norm(
		in[0], in[1], in[2], in[3], in[4], false, 0.1, 1e-5);

	vnpu_at_release(r.r1);
	vnpu_at_release(r.r2);
	return r.r0;
}

START_TEST(softmax_norm)
{
	GC("softmax", f_softmax, 1, "SoftmaxBackward0", R(3, 5));
	GC("log_softmax dim 0", f_log_softmax0, 1, "LogSoftmaxBackward0",
	   R(4, 2, 3));
	GC("layer_norm", f_layer_norm, 7, "NativeLayerNormBackward0",
	   R(3, 4, 5), R(4, 5), R(4, 5));
	GC("layer_norm without affine", f_layer_norm_plain, 1, NULL, R(2, 6));
	GC("batch_norm training", f_batch_norm, 7, "NativeBatchNormBackward0",
	   R(4, 3, 2, 2), R(3), R(3), R(3), RPOS(3));
	GC("batch_norm 2-d", f_batch_norm, 7, NULL, R(5, 3), R(3), R(3), R(3),
	   RPOS(3));
	GC("batch_norm eval", f_batch_norm_eval, 7, NULL, R(2, 3, 2, 3), R(3),
	   R(3), R(3), RPOS(3));
}
END_TEST

/* ---- pointwise -------------------------------------------------------------------- */

#define UNARY(fname, call)                                               \
	static struct vnpu_at_tensor *fname(struct vnpu_at_tensor **in)  \
	{                                                                \
		return call;                                             \
	}

UNARY(f_gelu, vnpu_op_gelu(in[0], "none"))
UNARY(f_gelu_tanh, vnpu_op_gelu(in[0], "tanh"))
UNARY(f_tanh, vnpu_op_tanh(in[0]))
UNARY(f_sigmoid, vnpu_op_sigmoid(in[0]))
UNARY(f_exp, vnpu_op_exp(in[0]))
UNARY(f_log, vnpu_op_log(in[0]))
UNARY(f_hardswish, vnpu_op_hardswish(in[0]))
UNARY(f_hardsigmoid, vnpu_op_hardsigmoid(in[0]))
UNARY(f_sqrt, vnpu_op_sqrt(in[0]))
UNARY(f_neg, vnpu_op_neg(in[0]))
UNARY(f_relu, vnpu_op_relu(in[0]))
UNARY(f_pow, vnpu_op_pow_Tensor_Scalar(in[0], VNPU_AT_DOUBLE(2.5)))
UNARY(f_div, vnpu_op_div_Tensor(in[0], in[1]))
UNARY(f_sub, vnpu_op_sub_Tensor(in[0], in[1], VNPU_AT_DOUBLE(1.5)))
UNARY(f_mul_scalar, vnpu_op_mul_Scalar(in[0], VNPU_AT_DOUBLE(-3)))

START_TEST(pointwise)
{
	GC("gelu", f_gelu, 1, "GeluBackward0", R(3, 4));
	GC("gelu tanh", f_gelu_tanh, 1, NULL, R(3, 4));
	GC("tanh", f_tanh, 1, "TanhBackward0", R(3, 4));
	GC("sigmoid", f_sigmoid, 1, "SigmoidBackward0", R(3, 4));
	GC("exp", f_exp, 1, "ExpBackward0", R(3, 4));
	GC("log", f_log, 1, "LogBackward0", RPOS(3, 4));
	GC("hardswish", f_hardswish, 1, "HardswishBackward0", R(3, 4));
	GC("hardsigmoid", f_hardsigmoid, 1, "HardsigmoidBackward0", R(3, 4));
	GC("sqrt", f_sqrt, 1, "SqrtBackward0", RPOS(3, 4));
	GC("neg", f_neg, 1, "NegBackward0", R(3, 4));
	GC("relu", f_relu, 1, "ReluBackward0", R(3, 4));
	GC("pow", f_pow, 1, "PowBackward0", RPOS(3, 4));
	GC("div broadcast", f_div, 3, "DivBackward0", R(3, 4), RPOS(4));
	GC("sub broadcast", f_sub, 3, "SubBackward0", R(3, 1), R(2, 1, 4));
	GC("mul by a scalar", f_mul_scalar, 1, "MulBackward0", R(2, 3));
}
END_TEST

/* ---- reductions, views, embedding, losses ---------------------------------------- */

UNARY(f_sum_dims, vnpu_op_sum_dim_IntList(in[0],
	(struct vnpu_at_opt_int_array){ true, VNPU_AT_INTS(0, -1) }, false,
	VNPU_AT_DTYPE_NONE))
UNARY(f_mean_keep, vnpu_op_mean_dim(in[0],
	(struct vnpu_at_opt_int_array){ true, VNPU_AT_INTS(1) }, true,
	VNPU_AT_DTYPE_NONE))
UNARY(f_mean_all, vnpu_op_mean(in[0], VNPU_AT_DTYPE_NONE))
UNARY(f_permute, vnpu_op_permute(in[0], VNPU_AT_INTS(2, 0, 1)))
UNARY(f_unsqueeze, vnpu_op_unsqueeze(in[0], 1))
UNARY(f_squeeze, vnpu_op_squeeze_dim(in[0], 1))
UNARY(f_slice, vnpu_op_slice_Tensor(in[0], 1, VNPU_AT_SOME_INT(1),
				    VNPU_AT_SOME_INT(5), 2))
UNARY(f_select, vnpu_op_select_int(in[0], 0, -1))
UNARY(f_to_copy, vnpu_op__to_copy(in[0], VNPU_AT_F64, VNPU_AT_DEV_CPU,
				  false))

/* reshape of a non-contiguous view: clone + view */
static struct vnpu_at_tensor *f_reshape_t(struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *t = vnpu_op_transpose_int(in[0], 0, 1);
	struct vnpu_at_tensor *r = vnpu_op_reshape(t, VNPU_AT_INTS(-1));

	vnpu_at_release(t);
	return r;
}

UNARY(f_embedding, vnpu_op_embedding(in[0], in[1], -1, false, false))
UNARY(f_embedding_pad, vnpu_op_embedding(in[0], in[1], 2, true, false))
UNARY(f_mse, vnpu_op_mse_loss(in[0], in[1], 1))
UNARY(f_mse_sum, vnpu_op_mse_loss(in[0], in[1], 2))
UNARY(f_cross_entropy, vnpu_op_cross_entropy_loss(in[0], in[1], NULL, 1,
						   -100, 0.0))

static struct vnpu_at_tensor *f_nll_weighted(struct vnpu_at_tensor **in)
{
	struct vnpu_ret_nll_loss_forward r = vnpu_op_nll_loss_forward(
		in[0], in[1], in[2], 1, 1);

	vnpu_at_release(r.r1);
	return r.r0;
}

/*
 * padding_idx and scale_grad_by_freq are not derivatives (PyTorch's
 * definition): the padding row gets none, the others are divided by how
 * often their index occurs. Against sums written here.
 */
START_TEST(embedding_padding_and_frequency)
{
	static const int64_t idx[] = { 0, 2, 5, 2, 1, 0, 2, 0 };
	struct vnpu_at_tensor *w = R(6, 3), *r = R(8, 3), *i, *e, *p, *l;
	const double *rd = vnpu_at_data(r), *gd;
	int64_t count[6] = { 0 };

	i = i64_tensor(VNPU_AT_INTS(8), idx);
	ck_assert(vnpu_at_set_requires_grad(w, true));
	e = f_embedding_pad((struct vnpu_at_tensor *[]){ w, i });
	p = e ? vnpu_op_mul_Tensor(e, r) : NULL;
	l = p ? vnpu_op_sum(p, VNPU_AT_DTYPE_NONE) : NULL;
	ck_assert_msg(l && vnpu_at_backward(l), "%s", vnpu_at_error_message());
	for (int m = 0; m < 8; m++)
		count[idx[m]]++;
	gd = vnpu_at_data(vnpu_at_grad(w));
	for (int64_t v = 0; v < 6; v++)
		for (int64_t d = 0; d < 3; d++) {
			double want = 0;

			for (int m = 0; m < 8 && v != 2; m++)
				if (idx[m] == v)
					want += rd[m * 3 + d] / (double)count[v];
			ck_assert_msg(fabs(gd[v * 3 + d] - want) < 1e-12,
				      "row %lld col %lld: %g, want %g",
				      (long long)v, (long long)d, gd[v * 3 + d],
				      want);
		}
	vnpu_at_release(w);
	vnpu_at_release(r);
	vnpu_at_release(i);
	vnpu_at_release(e);
	vnpu_at_release(p);
	vnpu_at_release(l);
}
END_TEST

START_TEST(reduce_view_loss)
{
	static const int64_t idx[] = { 0, 2, 5, 2, 1, 0, 2, 4 };
	static const int64_t labels[] = { 1, 0, 3, 1, 2 };

	GC("sum over dims", f_sum_dims, 1, "SumBackward1", R(2, 3, 4));
	GC("mean keepdim", f_mean_keep, 1, "MeanBackward1", R(2, 3, 4));
	GC("mean", f_mean_all, 1, "MeanBackward0", R(2, 3));
	GC("permute", f_permute, 1, "PermuteBackward0", R(2, 3, 4));
	GC("unsqueeze", f_unsqueeze, 1, "UnsqueezeBackward0", R(2, 3));
	GC("squeeze", f_squeeze, 1, "SqueezeBackward1", R(2, 1, 3));
	GC("slice step 2", f_slice, 1, "SliceBackward0", R(2, 6));
	GC("select", f_select, 1, "SelectBackward0", R(3, 4));
	GC("_to_copy", f_to_copy, 1, "ToCopyBackward0", R(3, 2));
	GC("reshape of a transpose", f_reshape_t, 1, "ViewBackward0", R(3, 4));
	GC("embedding", f_embedding, 1, "EmbeddingBackward0", R(6, 3),
	   i64_tensor(VNPU_AT_INTS(2, 4), idx));
	GC("mse_loss", f_mse, 3, "MseLossBackward0", R(3, 4), R(3, 4));
	GC("mse_loss sum", f_mse_sum, 3, NULL, R(5), R(5));
	GC("cross_entropy", f_cross_entropy, 1, "NllLossBackward0", R(5, 4),
	   i64_tensor(VNPU_AT_INTS(5), labels));
	GC("nll_loss weight, ignore_index", f_nll_weighted, 1, NULL, R(5, 4),
	   i64_tensor(VNPU_AT_INTS(5), labels), RPOS(4));
}
END_TEST

/* ---- npu against the CPU ---------------------------------------------------------- */

enum { NET_X, NET_W1, NET_B1, NET_LW, NET_LB, NET_W2, NET_B2, NET_Y, NET_N };

/* cross_entropy(linear(gelu(layer_norm(linear(x)))), y) */
static struct vnpu_at_tensor *net_loss(struct vnpu_at_tensor **p)
{
	struct vnpu_at_tensor *h = vnpu_op_linear(p[NET_X], p[NET_W1],
						  p[NET_B1]);
	struct vnpu_at_tensor *n = vnpu_op_layer_norm(h, VNPU_AT_INTS(24),
						      p[NET_LW], p[NET_LB],
						      1e-5, true);
	struct vnpu_at_tensor *a = vnpu_op_gelu(n, "none");
	struct vnpu_at_tensor *o = vnpu_op_linear(a, p[NET_W2], p[NET_B2]);
	struct vnpu_at_tensor *l = vnpu_op_cross_entropy_loss(o, p[NET_Y], NULL,
							      1, -100, 0.0);

	vnpu_at_release(h);
	vnpu_at_release(n);
	vnpu_at_release(a);
	vnpu_at_release(o);
	return l;
}

START_TEST(npu_against_cpu)
{
	static const int64_t shapes[NET_N][2] = {
		{ 6, 20 }, { 24, 20 }, { 24, 0 }, { 24, 0 }, { 24, 0 },
		{ 5, 24 }, { 5, 0 }, { 6, 0 },
	};
	static const int64_t labels[] = { 0, 4, 2, 1, 3, 2 };
	struct vnpu_at_tensor *cpu[NET_N], *npu[NET_N], *lc, *ln;

	for (int i = 0; i < NET_N; i++) {
		struct vnpu_at_int_array s = { shapes[i], shapes[i][1] ? 2 : 1 };
		struct vnpu_at_tensor *d;

		d = i == NET_Y ? i64_tensor(s, labels) : rand_f64(s, -1, 1);
		cpu[i] = i == NET_Y ? vnpu_at_retain(d) :
			 vnpu_op__to_copy(d, VNPU_AT_F32, VNPU_AT_DEV_NONE,
					  false);
		npu[i] = vnpu_op__to_copy(cpu[i], VNPU_AT_DTYPE_NONE,
					  VNPU_AT_DEV_NPU(0), false);
		vnpu_at_release(d);
		ck_assert_msg(cpu[i] && npu[i], "%s", vnpu_at_error_message());
		if (i != NET_Y) {
			ck_assert(vnpu_at_set_requires_grad(cpu[i], true));
			ck_assert(vnpu_at_set_requires_grad(npu[i], true));
		}
	}
	lc = net_loss(cpu);
	ln = net_loss(npu);
	ck_assert_msg(lc && ln, "%s", vnpu_at_error_message());
	ck_assert(vnpu_at_is_npu(ln));
	ck_assert_msg(vnpu_at_backward(lc), "%s", vnpu_at_error_message());
	ck_assert_msg(vnpu_at_backward(ln), "%s", vnpu_at_error_message());
	for (int i = 0; i < NET_Y; i++) {
		struct vnpu_at_tensor *gn = vnpu_at_grad(npu[i]);
		struct vnpu_at_tensor *gc = vnpu_at_grad(cpu[i]), *back, *c;
		double err = 0, scale = 1e-3;
		const float *a, *b;

		ck_assert_ptr_nonnull(gc);
		ck_assert_msg(gn, "npu input %d has no gradient", i);
		ck_assert(vnpu_at_is_npu(gn));
		back = vnpu_op__to_copy(gn, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_CPU,
					false);
		c = vnpu_op_contiguous(gc);
		ck_assert_msg(back && c, "%s", vnpu_at_error_message());
		a = vnpu_at_data(back);
		b = vnpu_at_data(c);
		for (int64_t k = 0; k < vnpu_at_numel(c); k++) {
			err = fmax(err, fabs((double)a[k] - b[k]));
			scale = fmax(scale, fabs((double)b[k]));
		}
		/* f32 with different summation orders on the device */
		ck_assert_msg(err <= 1e-4 * scale,
			      "input %d: npu gradient differs by %g (max %g)",
			      i, err, scale);
		vnpu_at_release(back);
		vnpu_at_release(c);
	}
	vnpu_at_release(lc);
	vnpu_at_release(ln);
	for (int i = 0; i < NET_N; i++) {
		vnpu_at_release(cpu[i]);
		vnpu_at_release(npu[i]);
	}
}
END_TEST

/* ---- the derivatives PyTorch's OpInfo samples asked for ----------------------------- */

UNARY(f_abs, vnpu_op_abs(in[0]))
UNARY(f_silu, vnpu_op_silu(in[0]))
UNARY(f_rsqrt, vnpu_op_rsqrt(in[0]))
UNARY(f_maximum, vnpu_op_maximum(in[0], in[1]))
UNARY(f_minimum, vnpu_op_minimum(in[0], in[1]))
UNARY(f_amax, vnpu_op_amax(in[0], VNPU_AT_INTS(0, 2), false))
UNARY(f_amin_keep, vnpu_op_amin(in[0], VNPU_AT_INTS(1), true))
UNARY(f_index_select, vnpu_op_index_select(in[0], 1, in[1]))
/* an output whose elements overlap: each input element gathers every
 * output gradient that views it */
UNARY(f_as_strided, vnpu_op_as_strided(in[0], VNPU_AT_INTS(3, 3),
				       VNPU_AT_INTS(2, 1), VNPU_AT_SOME_INT(1)))

static struct vnpu_at_tensor *f_where(struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *c = vnpu_op_gt_Scalar(in[0], VNPU_AT_DOUBLE(0));
	struct vnpu_at_tensor *r = c ? vnpu_op_where_self(c, in[0], in[1]) : NULL;

	vnpu_at_release(c);
	return r;
}

static struct vnpu_at_tensor *f_max_dim(struct vnpu_at_tensor **in)
{
	struct vnpu_ret_max_dim r = vnpu_op_max_dim(in[0], -1, false);

	vnpu_at_release(r.r1);
	return r.r0;
}

START_TEST(pytorch_derivatives)
{
	static const int64_t rep[] = { 3, 0, 3, 1, 3 };

	GC("abs", f_abs, 1, "AbsBackward0", R(3, 4));
	GC("silu", f_silu, 1, "SiluBackward0", R(3, 4));
	GC("rsqrt", f_rsqrt, 1, "RsqrtBackward0", RPOS(3, 4));
	GC("maximum broadcast", f_maximum, 3, "MaximumBackward0", R(3, 4), R(4));
	GC("minimum broadcast", f_minimum, 3, "MinimumBackward0", R(2, 1, 3), R(4, 1));
	GC("where broadcast", f_where, 3, "WhereBackward0", R(3, 4), R(4));
	GC("amax over two dims", f_amax, 1, "AmaxBackward0", R(2, 3, 4));
	GC("amin keepdim", f_amin_keep, 1, "AminBackward0", R(2, 3, 4));
	GC("max.dim", f_max_dim, 1, "MaxBackward0", R(3, 5));
	GC("index_select, repeated indices", f_index_select, 1,
	   "IndexSelectBackward0", R(2, 4, 3), i64_tensor(VNPU_AT_INTS(5), rep));
	GC("as_strided, overlapping", f_as_strided, 1, "AsStridedBackward0",
	   R(12));
}
END_TEST

/* Ties share the gradient as in PyTorch: maximum halves it between equal
 * inputs, amax divides it among the elements equal to the maximum. */
START_TEST(ties_share_the_gradient)
{
	static const double a[] = { 1, 2, 3 }, b[] = { 1, 5, 0 };
	static const double x[] = { 4, 1, 4, 2 };
	struct vnpu_at_tensor *ta = vnpu_at_empty(1, (int64_t[]){ 3 }, VNPU_AT_F64,
						  VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *tb = vnpu_at_empty(1, (int64_t[]){ 3 }, VNPU_AT_F64,
						  VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *tx = vnpu_at_empty(1, (int64_t[]){ 4 }, VNPU_AT_F64,
						  VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *m, *s;
	const double *ga, *gb, *gx;

	memcpy(vnpu_at_data(ta), a, sizeof(a));
	memcpy(vnpu_at_data(tb), b, sizeof(b));
	memcpy(vnpu_at_data(tx), x, sizeof(x));
	ck_assert(vnpu_at_set_requires_grad(ta, true));
	ck_assert(vnpu_at_set_requires_grad(tb, true));
	ck_assert(vnpu_at_set_requires_grad(tx, true));
	m = vnpu_op_maximum(ta, tb);
	s = vnpu_op_sum(m, VNPU_AT_DTYPE_NONE);
	ck_assert(vnpu_at_backward(s));
	vnpu_at_release(m);
	vnpu_at_release(s);
	ga = vnpu_at_data(vnpu_at_grad(ta));
	gb = vnpu_at_data(vnpu_at_grad(tb));
	ck_assert(ga[0] == 0.5 && gb[0] == 0.5);
	ck_assert(ga[1] == 0 && gb[1] == 1 && ga[2] == 1 && gb[2] == 0);
	m = vnpu_op_amax(tx, VNPU_AT_INTS(0), false);
	ck_assert(vnpu_at_backward(m));
	vnpu_at_release(m);
	gx = vnpu_at_data(vnpu_at_grad(tx));
	ck_assert(gx[0] == 0.5 && gx[1] == 0 && gx[2] == 0.5 && gx[3] == 0);
	vnpu_at_release(ta);
	vnpu_at_release(tb);
	vnpu_at_release(tx);
}
END_TEST

/* A bf16 leaf of an f32 computation gets a bf16 gradient (PyTorch's
 * validate_outputs). */
START_TEST(gradient_in_the_input_dtype)
{
	struct vnpu_at_tensor *x = R(2, 3), *xb, *w = R(2, 3), *wf, *p, *s;

	xb = vnpu_op__to_copy(x, VNPU_AT_BF16, VNPU_AT_DEV_CPU, false);
	wf = vnpu_op__to_copy(w, VNPU_AT_F32, VNPU_AT_DEV_CPU, false);
	ck_assert(vnpu_at_set_requires_grad(xb, true));
	p = vnpu_op_mul_Tensor(xb, wf);
	ck_assert_int_eq(p->dtype, VNPU_AT_F32);
	s = vnpu_op_sum(p, VNPU_AT_DTYPE_NONE);
	ck_assert(vnpu_at_backward(s));
	ck_assert_int_eq(vnpu_at_grad(xb)->dtype, VNPU_AT_BF16);
	vnpu_at_release(p);
	vnpu_at_release(s);
	vnpu_at_release(x);
	vnpu_at_release(xb);
	vnpu_at_release(w);
	vnpu_at_release(wf);
}
END_TEST

/* The *_like factories take only the input's shape: their results are not
 * tracked (PyTorch's output_differentiability: False), so they neither
 * require grad nor break a backward that reaches them. */
START_TEST(like_factories_are_not_tracked)
{
	struct vnpu_at_tensor *x = R(2, 3), *o, *z, *e, *p, *s;

	ck_assert(vnpu_at_set_requires_grad(x, true));
	o = vnpu_op_ones_like(x, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE);
	z = vnpu_op_zeros_like(x, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE);
	e = vnpu_op_empty_like(x, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE);
	ck_assert(o && z && e);
	ck_assert(!vnpu_at_requires_grad(o) && !vnpu_at_requires_grad(z) &&
		  !vnpu_at_requires_grad(e));
	p = vnpu_op_mul_Tensor(x, o);
	s = vnpu_op_sum(p, VNPU_AT_DTYPE_NONE);
	ck_assert(vnpu_at_backward(s));
	ck_assert_ptr_nonnull(vnpu_at_grad(x));
	vnpu_at_release(o);
	vnpu_at_release(z);
	vnpu_at_release(e);
	vnpu_at_release(p);
	vnpu_at_release(s);
	vnpu_at_release(x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("autograd");
	TCase *tc = tcase_create("finite differences");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, linalg);
	tcase_add_test(tc, conv_pool);
	tcase_add_test(tc, softmax_norm);
	tcase_add_test(tc, pointwise);
	tcase_add_test(tc, reduce_view_loss);
	tcase_add_test(tc, embedding_padding_and_frequency);
	tcase_add_test(tc, npu_against_cpu);
	tcase_add_test(tc, pytorch_derivatives);
	tcase_add_test(tc, ties_share_the_gradient);
	tcase_add_test(tc, gradient_in_the_input_dtype);
	tcase_add_test(tc, like_factories_are_not_tracked);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
