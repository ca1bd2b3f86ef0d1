// SPDX-License-Identifier: MIT
/*
 * Workloads through the dispatcher's typed op API, as a PyTorch user would
 * write them in C: MLP inference, a LeNet-style CNN, a transformer encoder
 * block and an MLP trained with SGD. Each network runs on npu and on the
 * CPU with the same inputs and weights; prints the max error between the
 * two, the time on each (and their ratio) and the CPU-fallback report of
 * the npu run: which ops ran on the CPU and how often.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnpu_dispatch.h"
#include "uniform.h"

#define MAX_PARAMS 24

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double uniform(double lo, double hi)
{
	return wl_uniform(&rng, lo, hi);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, vnpu_at_error_message());
	exit(2);
}

/* A CPU f32 tensor, uniform in [-a, a). */
static struct vnpu_at_tensor *rand_tensor(struct vnpu_at_int_array sizes,
					  double a)
{
	struct vnpu_at_tensor *t = vnpu_at_empty((uint32_t)sizes.n, sizes.v,
						 VNPU_AT_F32, VNPU_AT_DEV_CPU);
	float *d;

	if (!t)
		die("rand_tensor");
	d = vnpu_at_data(t);
	for (int64_t i = 0; i < vnpu_at_numel(t); i++)
		d[i] = (float)uniform(-a, a);
	return t;
}

/* The set of tensors of a network: weights then inputs, on one device. */
struct net {
	struct vnpu_at_tensor *t[MAX_PARAMS];
	int n;
};

static int net_add(struct net *n, struct vnpu_at_tensor *t)
{
	n->t[n->n] = t;
	return n->n++;
}

/* A linear layer's weight and bias, PyTorch's default init range. */
static int net_linear(struct net *n, int64_t in, int64_t out)
{
	int w = net_add(n, rand_tensor(VNPU_AT_INTS(out, in),
				       1.0 / sqrt((double)in)));

	net_add(n, rand_tensor(VNPU_AT_INTS(out), 1.0 / sqrt((double)in)));
	return w;
}

/* The network on dev, its tensors cast to dtype (NONE: kept). */
static void net_to(const struct net *src, struct net *dst,
		   struct vnpu_at_device dev, enum vnpu_at_dtype dtype)
{
	dst->n = src->n;
	for (int i = 0; i < src->n; i++) {
		dst->t[i] = vnpu_op__to_copy(src->t[i], dtype, dev, false);
		if (!dst->t[i])
			die("copy to device");
	}
}

static void net_free(struct net *n)
{
	for (int i = 0; i < n->n; i++)
		vnpu_at_release(n->t[i]);
	n->n = 0;
}

/* Consumes a and b; returns a op b (the chains below stay flat). */
typedef struct vnpu_at_tensor *tensor_t;

static tensor_t take(tensor_t r, tensor_t a, tensor_t b)
{
	vnpu_at_release(a);
	vnpu_at_release(b);
	if (!r)
		die("op");
	return r;
}

static tensor_t linear(tensor_t x, const struct net *n, int w)
{
	return take(vnpu_op_linear(x, n->t[w], n->t[w + 1]), x, NULL);
}

static tensor_t relu(tensor_t x)
{
	return take(vnpu_op_relu(x), x, NULL);
}

/* ---- the networks ------------------------------------------------------------ */

enum { MLP_L1, MLP_L2 = 2, MLP_L3 = 4, MLP_X = 6 };

static void mlp_init(struct net *n)
{
	net_linear(n, 256, 512);
	net_linear(n, 512, 256);
	net_linear(n, 256, 10);
	net_add(n, rand_tensor(VNPU_AT_INTS(64, 256), 1));
}

static tensor_t mlp_forward(const struct net *n)
{
	tensor_t h = relu(linear(vnpu_at_retain(n->t[MLP_X]), n, MLP_L1));

	h = relu(linear(h, n, MLP_L2));
	h = linear(h, n, MLP_L3);
	return take(vnpu_op_softmax_int(h, 1, VNPU_AT_DTYPE_NONE), h, NULL);
}

/* LeNet-5 shaped: conv-norm-relu-pool twice, then three linear layers. */
enum { LN_C1, LN_BN1 = 2, LN_C2 = 6, LN_BN2 = 8, LN_F1 = 12, LN_F2 = 14,
       LN_F3 = 16, LN_X = 18 };

static void batch_norm_init(struct net *n, int64_t c)
{
	struct vnpu_at_tensor *var = rand_tensor(VNPU_AT_INTS(c), 0.5);
	float *v = vnpu_at_data(var);

	for (int64_t i = 0; i < c; i++)
		v[i] += 1.0f;	/* running variance in [0.5, 1.5) */
	net_add(n, rand_tensor(VNPU_AT_INTS(c), 1));	/* weight */
	net_add(n, rand_tensor(VNPU_AT_INTS(c), 0.5));	/* bias */
	net_add(n, rand_tensor(VNPU_AT_INTS(c), 0.5));	/* running mean */
	net_add(n, var);
}

static void lenet_init(struct net *n)
{
	net_add(n, rand_tensor(VNPU_AT_INTS(6, 1, 5, 5), 0.2));
	net_add(n, rand_tensor(VNPU_AT_INTS(6), 0.2));
	batch_norm_init(n, 6);
	net_add(n, rand_tensor(VNPU_AT_INTS(16, 6, 5, 5), 0.08));
	net_add(n, rand_tensor(VNPU_AT_INTS(16), 0.08));
	batch_norm_init(n, 16);
	net_linear(n, 256, 120);
	net_linear(n, 120, 84);
	net_linear(n, 84, 10);
	net_add(n, rand_tensor(VNPU_AT_INTS(8, 1, 28, 28), 1));
}

static tensor_t conv_bn_relu_pool(tensor_t x, const struct net *n, int c,
				  int bn)
{
	struct vnpu_ret_native_batch_norm r;
	tensor_t y = take(vnpu_op_conv2d(x, n->t[c], n->t[c + 1],
					 VNPU_AT_INTS(1), VNPU_AT_INTS(0),
					 VNPU_AT_INTS(1), 1), x, NULL);

	/* inference: the running statistics normalise */
	r = vnpu_op_native_batch_norm(y, n->t[bn], n->t[bn + 1], n->t[bn + 2],
				      n->t[bn + 3], false, 0.1, 1e-5);
	y = take(r.r0, y, NULL);
	vnpu_at_release(r.r1);
	vnpu_at_release(r.r2);
	y = relu(y);
	return take(vnpu_op_max_pool2d(y, VNPU_AT_INTS(2), VNPU_AT_NO_INTS,
				       VNPU_AT_INTS(0), VNPU_AT_INTS(1), false),
		    y, NULL);
}

static tensor_t lenet_forward(const struct net *n)
{
	tensor_t h = conv_bn_relu_pool(vnpu_at_retain(n->t[LN_X]), n, LN_C1,
				       LN_BN1);

	h = conv_bn_relu_pool(h, n, LN_C2, LN_BN2);
	h = take(vnpu_op_flatten_using_ints(h, 1, -1), h, NULL);
	h = relu(linear(h, n, LN_F1));
	h = relu(linear(h, n, LN_F2));
	return linear(h, n, LN_F3);
}

/* A post-norm transformer encoder block (BERT's): multi-head attention
 * with bmm and softmax, residual + layer norm, GELU MLP, residual + layer
 * norm. */
enum { TB = 2, TS = 32, TD = 64, TH = 4, TDH = TD / TH, TF = 4 * TD };
enum { TR_Q, TR_K = 2, TR_V = 4, TR_O = 6, TR_LN1 = 8, TR_FF1 = 10,
       TR_FF2 = 12, TR_LN2 = 14, TR_X = 16 };

static void transformer_init(struct net *n)
{
	for (int i = 0; i < 4; i++)
		net_linear(n, TD, TD);
	net_add(n, rand_tensor(VNPU_AT_INTS(TD), 1));
	net_add(n, rand_tensor(VNPU_AT_INTS(TD), 0.2));
	net_linear(n, TD, TF);
	net_linear(n, TF, TD);
	net_add(n, rand_tensor(VNPU_AT_INTS(TD), 1));
	net_add(n, rand_tensor(VNPU_AT_INTS(TD), 0.2));
	net_add(n, rand_tensor(VNPU_AT_INTS(TB, TS, TD), 1));
}

/* (B, S, D) -> (B * H, S, Dh) */
static tensor_t split_heads(tensor_t x)
{
	tensor_t v = take(vnpu_op_view(x, VNPU_AT_INTS(TB, TS, TH, TDH)), x,
			  NULL);

	v = take(vnpu_op_permute(v, VNPU_AT_INTS(0, 2, 1, 3)), v, NULL);
	return take(vnpu_op_reshape(v, VNPU_AT_INTS(TB * TH, TS, TDH)), v,
		    NULL);
}

static tensor_t merge_heads(tensor_t x)
{
	tensor_t v = take(vnpu_op_view(x, VNPU_AT_INTS(TB, TH, TS, TDH)), x,
			  NULL);

	v = take(vnpu_op_permute(v, VNPU_AT_INTS(0, 2, 1, 3)), v, NULL);
	return take(vnpu_op_reshape(v, VNPU_AT_INTS(TB, TS, TD)), v, NULL);
}

static tensor_t add_norm(tensor_t a, tensor_t b, const struct net *n, int ln)
{
	tensor_t s = take(vnpu_op_add_Tensor(a, b, VNPU_AT_INT(1)), a, b);

	return take(vnpu_op_layer_norm(s, VNPU_AT_INTS(TD), n->t[ln],
				       n->t[ln + 1], 1e-5, true), s, NULL);
}

static tensor_t transformer_forward(const struct net *n)
{
	tensor_t x = n->t[TR_X], q, k, v, kt, s, p, a, h;

	q = split_heads(linear(vnpu_at_retain(x), n, TR_Q));
	k = split_heads(linear(vnpu_at_retain(x), n, TR_K));
	v = split_heads(linear(vnpu_at_retain(x), n, TR_V));
	kt = take(vnpu_op_transpose_int(k, 1, 2), k, NULL);
	s = take(vnpu_op_bmm(q, kt), q, kt);
	s = take(vnpu_op_mul_Scalar(s, VNPU_AT_DOUBLE(1.0 / sqrt(TDH))), s,
		 NULL);
	p = take(vnpu_op_softmax_int(s, -1, VNPU_AT_DTYPE_NONE), s, NULL);
	a = merge_heads(take(vnpu_op_bmm(p, v), p, v));
	a = linear(a, n, TR_O);
	h = add_norm(vnpu_at_retain(x), a, n, TR_LN1);
	a = linear(vnpu_at_retain(h), n, TR_FF1);
	a = take(vnpu_op_gelu(a, "none"), a, NULL);
	a = linear(a, n, TR_FF2);
	return add_norm(h, a, n, TR_LN2);
}

/* ---- running a network on both devices ------------------------------------------- */

struct result {
	const char *name;
	enum vnpu_at_dtype dtype;
	double err, tol, cpu_ms, npu_ms;
	bool ok;
	char note[160];
};

/* max |a - b| / max(1, max |b|) over two CPU f32 tensors of one shape */
static double max_error(tensor_t a, tensor_t b)
{
	tensor_t ca = vnpu_op_contiguous(a), cb = vnpu_op_contiguous(b);
	const float *x, *y;
	double err = 0, mag = 1;

	if (!ca || !cb || vnpu_at_numel(ca) != vnpu_at_numel(cb))
		die("max_error");
	x = vnpu_at_data(ca);
	y = vnpu_at_data(cb);
	for (int64_t i = 0; i < vnpu_at_numel(ca); i++) {
		err = fmax(err, fabs((double)x[i] - y[i]));
		mag = fmax(mag, fabs((double)y[i]));
		if (isnan(x[i]) != isnan(y[i]))
			err = INFINITY;
	}
	vnpu_at_release(ca);
	vnpu_at_release(cb);
	return err / mag;
}

/* Consumes t; a CPU f32 copy of it. */
static tensor_t to_cpu(tensor_t t)
{
	return take(vnpu_op__to_copy(t, VNPU_AT_F32, VNPU_AT_DEV_CPU, false),
		    t, NULL);
}

/* One warm-up pass on each device (npu: formats cast and cached, the
 * runtime up), then one timed pass. */
static double timed(tensor_t (*forward)(const struct net *),
		    const struct net *n, bool npu, tensor_t *out)
{
	double t0;

	vnpu_at_release(forward(n));
	if (npu && !vnpu_at_npu_synchronize())
		die("synchronize");
	vnpu_fallback_reset();	/* the report covers the timed pass */
	t0 = now_ms();
	*out = forward(n);
	if (npu && !vnpu_at_npu_synchronize())
		die("synchronize");
	return now_ms() - t0;
}

/* As the kernel workloads: what a kernel may differ by in each dtype. */
static double tolerance_of(enum vnpu_at_dtype dtype)
{
	return dtype == VNPU_AT_F32 ? 1e-5 : dtype == VNPU_AT_F16 ? 2e-3 : 2e-2;
}

/* The network in dtype on npu and on the CPU key (PyTorch's semantics in
 * that dtype: every op's result rounded to it), same inputs and weights. */
static void run_inference(struct result *r, const char *name,
			  void (*init)(struct net *),
			  tensor_t (*forward)(const struct net *),
			  enum vnpu_at_dtype dtype)
{
	struct net f32 = { 0 }, cpu = { 0 }, npu = { 0 };
	tensor_t yc, yn;

	r->name = name;
	r->dtype = dtype;
	r->tol = tolerance_of(dtype);
	init(&f32);
	net_to(&f32, &cpu, VNPU_AT_DEV_CPU, dtype);
	net_to(&f32, &npu, VNPU_AT_DEV_NPU(0), dtype);
	r->cpu_ms = timed(forward, &cpu, false, &yc);
	r->npu_ms = timed(forward, &npu, true, &yn);
	if (!vnpu_at_is_npu(yn))
		die("the npu result is not on npu");
	yn = to_cpu(yn);
	yc = to_cpu(yc);
	r->err = max_error(yn, yc);
	r->ok = r->err <= r->tol;
	snprintf(r->note, sizeof(r->note), "output [%lld x %lld%s]",
		 (long long)yc->sizes[0], (long long)yc->sizes[1],
		 yc->ndim > 2 ? " x ..." : "");
	vnpu_at_release(yc);
	vnpu_at_release(yn);
	net_free(&f32);
	net_free(&cpu);
	net_free(&npu);
}

/* ---- training ------------------------------------------------------------------ */

/*
 * Synthetic classification: labels are the argmax of a fixed random linear
 * teacher; a 16-64-4 MLP student learns them with SGD on cross entropy.
 */
enum { TRAIN_N = 256, TRAIN_IN = 16, TRAIN_HID = 64, TRAIN_CLASSES = 4,
       TRAIN_STEPS = 60 };
#define TRAIN_LR 0.5

static tensor_t student_loss(const struct net *n, tensor_t x, tensor_t y)
{
	tensor_t h = relu(linear(vnpu_at_retain(x), n, 0));

	h = linear(h, n, 2);
	return take(vnpu_op_cross_entropy_loss(h, y, NULL, 1, -100, 0.0), h,
		    NULL);
}

static double scalar_of(tensor_t t)
{
	struct vnpu_at_scalar s = vnpu_op_item(t);

	if (vnpu_at_error_code() != VNPU_AT_OK)
		die("item");
	return vnpu_at_scalar_to_double(s);
}

/* Trains the student on one device; returns the time, fills the first
 * and last losses. */
static double train(struct net *n, tensor_t x, tensor_t y, double *first,
		    double *last)
{
	double t0 = now_ms();

	for (int i = 0; i < n->n; i++)
		if (!vnpu_at_set_requires_grad(n->t[i], true))
			die("requires_grad");
	for (int step = 0; step < TRAIN_STEPS; step++) {
		tensor_t loss = student_loss(n, x, y);
		struct vnpu_tls_guard ng;

		if (step == 0)
			*first = scalar_of(loss);
		if (step == TRAIN_STEPS - 1)
			*last = scalar_of(loss);
		if (!vnpu_at_backward(loss))
			die("backward");
		vnpu_at_release(loss);
		/* p -= lr * p.grad, in place outside the tape */
		vnpu_no_grad_begin(&ng);
		for (int i = 0; i < n->n; i++) {
			tensor_t p = n->t[i];
			tensor_t upd = vnpu_op_sub_Tensor(p, vnpu_at_grad(p),
						VNPU_AT_DOUBLE(TRAIN_LR));

			/* copy_ returns p with a new reference */
			vnpu_at_release(take(upd ? vnpu_op_copy_(p, upd, false)
						 : NULL, upd, NULL));
			vnpu_at_zero_grad(p);
		}
		vnpu_tls_guard_end(&ng);
	}
	if (vnpu_at_is_npu(n->t[0]) && !vnpu_at_npu_synchronize())
		die("synchronize");
	return now_ms() - t0;
}

static void run_training(struct result *r)
{
	struct net cpu = { 0 }, npu = { 0 };
	tensor_t x = rand_tensor(VNPU_AT_INTS(TRAIN_N, TRAIN_IN), 1);
	tensor_t teacher = rand_tensor(VNPU_AT_INTS(TRAIN_CLASSES, TRAIN_IN), 1);
	tensor_t logits, y, xn, yn;
	double c0, c1, n0, n1;

	r->name = "mlp_training";
	r->dtype = VNPU_AT_F32;
	r->tol = tolerance_of(VNPU_AT_F32);
	logits = vnpu_op_linear(x, teacher, NULL);
	y = take(vnpu_op_argmax(logits, VNPU_AT_SOME_INT(1), false), logits,
		 teacher);
	net_linear(&cpu, TRAIN_IN, TRAIN_HID);
	net_linear(&cpu, TRAIN_HID, TRAIN_CLASSES);
	net_to(&cpu, &npu, VNPU_AT_DEV_NPU(0), VNPU_AT_DTYPE_NONE);
	xn = vnpu_op__to_copy(x, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NPU(0), false);
	yn = vnpu_op__to_copy(y, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NPU(0), false);
	if (!xn || !yn)
		die("copy to npu");
	r->cpu_ms = train(&cpu, x, y, &c0, &c1);
	vnpu_fallback_reset();
	r->npu_ms = train(&npu, xn, yn, &n0, &n1);
	r->err = fabs(n1 - c1) / fmax(1, fabs(c1));
	for (int i = 0; i < cpu.n; i++) {
		tensor_t w = to_cpu(vnpu_at_retain(npu.t[i]));

		r->err = fmax(r->err, max_error(w, cpu.t[i]));
		vnpu_at_release(w);
	}
	/* the loss must clearly fall on both devices */
	r->ok = r->err <= r->tol && c1 < 0.5 * c0 && n1 < 0.5 * n0;
	snprintf(r->note, sizeof(r->note),
		 "%d SGD steps, loss cpu %.4f -> %.4f, npu %.4f -> %.4f%s",
		 TRAIN_STEPS, c0, c1, n0, n1,
		 c1 < 0.5 * c0 && n1 < 0.5 * n0 ? "" : " (did not fall)");
	vnpu_at_release(x);
	vnpu_at_release(y);
	vnpu_at_release(xn);
	vnpu_at_release(yn);
	net_free(&cpu);
	net_free(&npu);
}

static const struct {
	const char *name;
	void (*init)(struct net *);
	tensor_t (*forward)(const struct net *);
} networks[] = {
	{ "mlp_inference", mlp_init, mlp_forward },
	{ "lenet_cnn", lenet_init, lenet_forward },
	{ "transformer_block", transformer_init, transformer_forward },
};

static const enum vnpu_at_dtype dtypes[] = { VNPU_AT_F32, VNPU_AT_F16,
					     VNPU_AT_BF16 };

static bool report(struct result *r)
{
	printf("%-18s %-8s %-4s error %.2e (tol %.0e)  npu %9.2f ms  ref "
	       "%9.2f ms  %s\n",
	       r->name, vnpu_at_dtype_name(r->dtype), r->ok ? "PASS" : "FAIL",
	       r->err, r->tol, r->npu_ms, r->cpu_ms, r->note);
	printf("  ");
	vnpu_fallback_print(stdout);
	return r->ok;
}

int main(void)
{
	int passed = 0, failed = 0;
	struct result r;

	if (!vnpu_at_npu_set_device(0))
		die("npu:0");
	printf("dispatcher workloads: npu:0 against the CPU key, same inputs "
	       "and weights, in each dtype\n");
	printf("error: max |npu - ref| / max(1, max |ref|), limit per dtype as "
	       "the kernel workloads'; time: one pass after a warm-up pass "
	       "(training: the whole loop)\n"
	       "ref: the same program on the dispatcher's CPU kernels in the "
	       "same dtype, the correctness reference\n  (naive loops "
	       "accumulating in double): not a CPU performance baseline, so "
	       "no speed ratio\n\n");
	for (size_t w = 0; w < sizeof(networks) / sizeof(networks[0]); w++)
		for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
			memset(&r, 0, sizeof(r));
			run_inference(&r, networks[w].name, networks[w].init,
				      networks[w].forward, dtypes[d]);
			report(&r) ? passed++ : failed++;
		}
	memset(&r, 0, sizeof(r));
	run_training(&r);
	report(&r) ? passed++ : failed++;
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
