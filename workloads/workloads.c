// SPDX-License-Identifier: MIT
/*
 * The main job's workloads: small networks run layer by layer on the NPU,
 * each checked against the double-precision CPU reference. Prints per
 * workload the check, the wall time, the device time of its kernels and
 * what fell back to the CPU (nothing: every layer has an NPU kernel).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu.h"
#include "reference.h"
#include "uniform.h"

#define RW (VNPU_ACCESS_READ | VNPU_ACCESS_WRITE)
#define RD VNPU_ACCESS_READ
#define WR VNPU_ACCESS_WRITE

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double uniform(double lo, double hi)
{
	return wl_uniform(&rng, lo, hi);
}

/* Random host data in both precisions: f32 for the device, double for the
 * reference (the same values). */
static float *random_data(int64_t n, double lo, double hi, double **ref)
{
	float *f = malloc(sizeof(float) * (size_t)n);
	double *d = malloc(sizeof(double) * (size_t)n);

	if (!f || !d)
		abort();
	for (int64_t i = 0; i < n; i++) {
		f[i] = (float)uniform(lo, hi);
		d[i] = f[i];
	}
	*ref = d;
	return f;
}

/* An f32 ND tensor holding `data`. */
static bool upload(struct npu *npu, struct npu_tensor *t, uint32_t ndim,
		   const int64_t *sizes, const float *data)
{
	return npu_tensor(npu, t, VNPU_DTYPE_F32, VNPU_FORMAT_ND, ndim, sizes) &&
	       npu_upload(npu, t, data);
}

static bool transdata(struct npu *npu, const struct npu_tensor *src,
		      uint32_t format, struct npu_tensor *out)
{
	struct npu_launch l = { 0 };
	struct vnpu_kp_transdata p;

	if (!npu_tensor(npu, out, src->desc.dtype, format, src->desc.ndim,
			src->desc.sizes))
		return false;
	p.src = npu_arg(&l, src, RD);
	p.out = npu_arg(&l, out, WR);
	return npu_launch(npu, &l, VNPU_KERNEL_TRANSDATA, &p, sizeof(p));
}

static bool cast(struct npu *npu, const struct npu_tensor *src,
		 uint32_t dtype, struct npu_tensor *out)
{
	struct npu_launch l = { 0 };
	struct vnpu_kp_cast p;

	if (!npu_tensor(npu, out, dtype, VNPU_FORMAT_ND, src->desc.ndim,
			src->desc.sizes))
		return false;
	p.src = npu_arg(&l, src, RD);
	p.out = npu_arg(&l, out, WR);
	return npu_launch(npu, &l, VNPU_KERNEL_CAST, &p, sizeof(p));
}

/* out = act(alpha * a @ b + bias); a, b, out any of the supported layouts. */
static bool gemm(struct npu *npu, const struct npu_tensor *a,
		 const struct npu_tensor *b, const struct npu_tensor *bias,
		 uint32_t trans_b, float alpha, uint32_t act,
		 struct npu_tensor *out)
{
	struct npu_launch l = { 0 };
	struct vnpu_kp_gemm p;

	memset(&p, 0, sizeof(p));
	p.trans_b = trans_b;
	p.activation = act;
	p.alpha = alpha;
	p.a = npu_arg(&l, a, RD);
	p.b = npu_arg(&l, b, RD);
	p.out = npu_arg(&l, out, WR);
	if (bias) {
		p.has_bias = 1;
		p.bias = npu_arg(&l, bias, RD);
	}
	return npu_launch(npu, &l, VNPU_KERNEL_GEMM, &p, sizeof(p));
}

static bool softmax(struct npu *npu, const struct npu_tensor *x, uint32_t dim,
		    uint32_t log_form, struct npu_tensor *out)
{
	struct npu_launch l = { 0 };
	struct vnpu_kp_softmax p = { .dim = dim, .log = log_form };

	p.input = npu_arg(&l, x, RD);
	p.out = npu_arg(&l, out, WR);
	return npu_launch(npu, &l, VNPU_KERNEL_SOFTMAX, &p, sizeof(p));
}

static bool layer_norm(struct npu *npu, const struct npu_tensor *x,
		       const struct npu_tensor *w, const struct npu_tensor *b,
		       struct npu_tensor *out)
{
	struct npu_launch l = { 0 };
	struct vnpu_kp_layer_norm p;

	memset(&p, 0, sizeof(p));
	p.norm_ndim = 1;
	p.has_weight = 1;
	p.has_bias = 1;
	p.eps = 1e-5;
	p.input = npu_arg(&l, x, RD);
	p.weight = npu_arg(&l, w, RD);
	p.bias = npu_arg(&l, b, RD);
	p.out = npu_arg(&l, out, WR);
	return npu_launch(npu, &l, VNPU_KERNEL_LAYER_NORM, &p, sizeof(p));
}

static bool add(struct npu *npu, const struct npu_tensor *a,
		const struct npu_tensor *b, struct npu_tensor *out)
{
	struct npu_launch l = { 0 };
	struct vnpu_kp_binary p;

	memset(&p, 0, sizeof(p));
	p.op = VNPU_BINARY_ADD;
	p.alpha = 1.0;
	p.a = npu_arg(&l, a, RD);
	p.b = npu_arg(&l, b, RD);
	p.out = npu_arg(&l, out, WR);
	return npu_launch(npu, &l, VNPU_KERNEL_BINARY, &p, sizeof(p));
}

/* The error of an f32 result tensor against the reference. */
static bool compare(struct npu *npu, const struct npu_tensor *t,
		    const double *want, int64_t n, double *error)
{
	float *got = malloc(t->bytes);
	bool ok = got && npu_download(npu, t, got);

	if (ok)
		*error = ref_error(got, want, n);
	free(got);
	return ok;
}

struct result {
	double error;
	double tolerance;
	double ref_ms; /* the double-precision reference's time */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* MLP 784-256-10 on a batch of 64: GEMM (weights in FRACTAL_NZ, cast once
 * like torch_npu's internal formats) + bias + ReLU fused, GEMM + bias,
 * softmax. In f32, or in f16 with f32 accumulation. */
static bool mlp(struct npu *npu, uint32_t dtype, struct result *res)
{
	const int64_t B = 64, I = 784, H = 256, O = 10;
	double *rx, *rw1, *rb1, *rw2, *rb2;
	float *x = random_data(B * I, -1, 1, &rx);
	float *w1 = random_data(I * H, -0.05, 0.05, &rw1);
	float *b1 = random_data(H, -0.1, 0.1, &rb1);
	float *w2 = random_data(H * O, -0.1, 0.1, &rw2);
	float *b2 = random_data(O, -0.1, 0.1, &rb2);
	struct npu_tensor tx, tw1, tb1, tw2, tb2, nw1, h, logits, probs, out;
	struct npu_tensor dx, dw1, db1, dw2, db2;
	double *rh = malloc(sizeof(double) * B * H);
	double *ro = malloc(sizeof(double) * B * O);
	bool ok;

	ok = upload(npu, &tx, 2, (int64_t[]){ B, I }, x) &&
	     upload(npu, &tw1, 2, (int64_t[]){ I, H }, w1) &&
	     upload(npu, &tb1, 1, (int64_t[]){ H }, b1) &&
	     upload(npu, &tw2, 2, (int64_t[]){ H, O }, w2) &&
	     upload(npu, &tb2, 1, (int64_t[]){ O }, b2);
	if (ok && dtype != VNPU_DTYPE_F32)
		ok = cast(npu, &tx, dtype, &dx) && cast(npu, &tw1, dtype, &dw1) &&
		     cast(npu, &tb1, dtype, &db1) &&
		     cast(npu, &tw2, dtype, &dw2) && cast(npu, &tb2, dtype, &db2);
	else
		dx = tx, dw1 = tw1, db1 = tb1, dw2 = tw2, db2 = tb2;
	ok = ok && transdata(npu, &dw1, VNPU_FORMAT_FRACTAL_NZ, &nw1) &&
	     npu_tensor(npu, &h, dtype, VNPU_FORMAT_ND, 2, (int64_t[]){ B, H }) &&
	     npu_tensor(npu, &logits, dtype, VNPU_FORMAT_ND, 2,
			(int64_t[]){ B, O }) &&
	     npu_tensor(npu, &probs, dtype, VNPU_FORMAT_ND, 2,
			(int64_t[]){ B, O }) &&
	     gemm(npu, &dx, &nw1, &db1, 0, 1.0f, VNPU_ACT_RELU, &h) &&
	     gemm(npu, &h, &dw2, &db2, 0, 1.0f, VNPU_ACT_NONE, &logits) &&
	     softmax(npu, &logits, 1, 0, &probs);
	if (ok && dtype != VNPU_DTYPE_F32)
		ok = cast(npu, &probs, VNPU_DTYPE_F32, &out);
	else
		out = probs;

	res->ref_ms = now_ms();
	ref_gemm(1, B, H, I, rx, (int64_t[]){ 0, I, 1 }, rw1,
		 (int64_t[]){ 0, H, 1 }, rb1, 1.0, REF_RELU, rh);
	ref_gemm(1, B, O, H, rh, (int64_t[]){ 0, H, 1 }, rw2,
		 (int64_t[]){ 0, O, 1 }, rb2, 1.0, REF_NONE, ro);
	ref_softmax_rows(ro, B, O, 0);
	res->ref_ms = now_ms() - res->ref_ms;
	ok = ok && compare(npu, &out, ro, B * O, &res->error);
	res->tolerance = dtype == VNPU_DTYPE_F32 ? 1e-5 :
			 dtype == VNPU_DTYPE_F16 ? 2e-3 : 2e-2;
	free(x), free(w1), free(b1), free(w2), free(b2);
	free(rx), free(rw1), free(rb1), free(rw2), free(rb2), free(rh), free(ro);
	return ok;
}

/* CNN: NCHW input cast to NC1HWC0, 3x3 conv (FRACTAL_Z weights) + bias +
 * ReLU, back to NCHW, 2x2 max pool, global average pool, linear, log-softmax. */
static bool cnn(struct npu *npu, struct result *res)
{
	const int64_t N = 4, C = 3, HW = 32, CO = 16, K = 3, O = 10;
	const int64_t P = HW / 2;
	double *rx, *rw, *rb, *rfc;
	float *x = random_data(N * C * HW * HW, -1, 1, &rx);
	float *w = random_data(CO * C * K * K, -0.3, 0.3, &rw);
	float *b = random_data(CO, -0.1, 0.1, &rb);
	float *fc = random_data(CO * O, -0.5, 0.5, &rfc);
	struct npu_tensor tx, tw, tb, tfc, x5, wz, y5, y, pooled, mean, logits,
		lsm, feat;
	double *ry = malloc(sizeof(double) * N * CO * HW * HW);
	double *rp = malloc(sizeof(double) * N * CO * P * P);
	double *rm = malloc(sizeof(double) * N * CO);
	double *ro = malloc(sizeof(double) * N * O);
	struct npu_launch l;
	bool ok;

	ok = upload(npu, &tx, 4, (int64_t[]){ N, C, HW, HW }, x) &&
	     upload(npu, &tw, 4, (int64_t[]){ CO, C, K, K }, w) &&
	     upload(npu, &tb, 1, (int64_t[]){ CO }, b) &&
	     upload(npu, &tfc, 2, (int64_t[]){ CO, O }, fc) &&
	     transdata(npu, &tx, VNPU_FORMAT_NC1HWC0, &x5) &&
	     transdata(npu, &tw, VNPU_FORMAT_FRACTAL_Z, &wz) &&
	     npu_tensor(npu, &y5, VNPU_DTYPE_F32, VNPU_FORMAT_NC1HWC0, 4,
			(int64_t[]){ N, CO, HW, HW });
	if (ok) {
		struct vnpu_kp_conv2d p;

		memset(&p, 0, sizeof(p));
		p.stride_h = p.stride_w = 1;
		p.pad_h = p.pad_w = 1;
		p.dil_h = p.dil_w = 1;
		p.groups = 1;
		p.has_bias = 1;
		p.activation = VNPU_ACT_RELU;
		l = (struct npu_launch){ 0 };
		p.input = npu_arg(&l, &x5, RD);
		p.weight = npu_arg(&l, &wz, RD);
		p.bias = npu_arg(&l, &tb, RD);
		p.out = npu_arg(&l, &y5, WR);
		ok = npu_launch(npu, &l, VNPU_KERNEL_CONV2D, &p, sizeof(p));
	}
	ok = ok && transdata(npu, &y5, VNPU_FORMAT_NCHW, &y) &&
	     npu_tensor(npu, &pooled, VNPU_DTYPE_F32, VNPU_FORMAT_NCHW, 4,
			(int64_t[]){ N, CO, P, P });
	if (ok) {
		struct vnpu_kp_pool2d p;

		memset(&p, 0, sizeof(p));
		p.mode = VNPU_POOL_MAX;
		p.kernel_h = p.kernel_w = 2;
		p.stride_h = p.stride_w = 2;
		p.dil_h = p.dil_w = 1;
		l = (struct npu_launch){ 0 };
		p.input = npu_arg(&l, &y, RD);
		p.out = npu_arg(&l, &pooled, WR);
		ok = npu_launch(npu, &l, VNPU_KERNEL_POOL2D, &p, sizeof(p));
	}
	ok = ok && npu_tensor(npu, &mean, VNPU_DTYPE_F32, VNPU_FORMAT_NCHW, 4,
			      (int64_t[]){ N, CO, 1, 1 });
	if (ok) {
		struct vnpu_kp_reduce p = { .op = VNPU_REDUCE_MEAN,
					    .dim_mask = 0xc };

		l = (struct npu_launch){ 0 };
		p.input = npu_arg(&l, &pooled, RD);
		p.out = npu_arg(&l, &mean, WR);
		ok = npu_launch(npu, &l, VNPU_KERNEL_REDUCE, &p, sizeof(p));
	}
	/* [N, CO, 1, 1] seen as the [N, CO] feature matrix: a view. */
	feat = npu_view(&mean, 2, (int64_t[]){ N, CO }, (int64_t[]){ CO, 1 }, 0);
	ok = ok && npu_tensor(npu, &logits, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2,
			      (int64_t[]){ N, O }) &&
	     npu_tensor(npu, &lsm, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2,
			(int64_t[]){ N, O }) &&
	     gemm(npu, &feat, &tfc, NULL, 0, 1.0f, VNPU_ACT_NONE, &logits) &&
	     softmax(npu, &logits, 1, 1, &lsm);

	res->ref_ms = now_ms();
	ref_conv2d(rx, N, C, HW, HW, rw, CO, K, K, 1, rb, REF_RELU, ry);
	ref_maxpool2x2(ry, N * CO, HW, HW, rp);
	ref_mean_planes(rp, N * CO, P * P, rm);
	ref_gemm(1, N, O, CO, rm, (int64_t[]){ 0, CO, 1 }, rfc,
		 (int64_t[]){ 0, O, 1 }, NULL, 1.0, REF_NONE, ro);
	ref_softmax_rows(ro, N, O, 1);
	res->ref_ms = now_ms() - res->ref_ms;
	ok = ok && compare(npu, &lsm, ro, N * O, &res->error);
	res->tolerance = 1e-5;
	free(x), free(w), free(b), free(fc);
	free(rx), free(rw), free(rb), free(rfc), free(ry), free(rp), free(rm),
		free(ro);
	return ok;
}

/* A single-head pre-norm transformer block on [batch 2, seq 32, d 64]:
 * LN, fused QKV projection, attention through batched GEMMs on strided
 * views of the QKV tensor, output projection, residual, LN, GELU MLP,
 * residual. */
static bool transformer(struct npu *npu, struct result *res)
{
	const int64_t B = 2, S = 32, D = 64, F = 4 * D, T = B * S;
	double *rx, *rg1, *rb1, *rwqkv, *rwo, *rg2, *rb2, *rw1, *rw2, *rc1, *rc2;
	float *x = random_data(T * D, -1, 1, &rx);
	float *g1 = random_data(D, 0.5, 1.5, &rg1), *b1 = random_data(D, -0.1, 0.1, &rb1);
	float *g2 = random_data(D, 0.5, 1.5, &rg2), *b2 = random_data(D, -0.1, 0.1, &rb2);
	float *wqkv = random_data(D * 3 * D, -0.1, 0.1, &rwqkv);
	float *wo = random_data(D * D, -0.1, 0.1, &rwo);
	float *w1 = random_data(D * F, -0.1, 0.1, &rw1);
	float *c1 = random_data(F, -0.1, 0.1, &rc1);
	float *w2 = random_data(F * D, -0.1, 0.1, &rw2);
	float *c2 = random_data(D, -0.1, 0.1, &rc2);
	struct npu_tensor tx, tg1, tb1, tg2, tb2, twqkv, two, tw1, tc1, tw2, tc2;
	struct npu_tensor ln1, qkv, q, k, v, scores, probs, ctx, proj, h1, ln2,
		f1, f2, y;
	const double scale = 1.0 / sqrt((double)D);
	double *r_ln1 = malloc(sizeof(double) * T * D);
	double *r_qkv = malloc(sizeof(double) * T * 3 * D);
	double *r_sc = malloc(sizeof(double) * B * S * S);
	double *r_ctx = malloc(sizeof(double) * T * D);
	double *r_h1 = malloc(sizeof(double) * T * D);
	double *r_ln2 = malloc(sizeof(double) * T * D);
	double *r_f1 = malloc(sizeof(double) * T * F);
	double *r_y = malloc(sizeof(double) * T * D);
	bool ok;

	ok = upload(npu, &tx, 3, (int64_t[]){ B, S, D }, x) &&
	     upload(npu, &tg1, 1, (int64_t[]){ D }, g1) &&
	     upload(npu, &tb1, 1, (int64_t[]){ D }, b1) &&
	     upload(npu, &tg2, 1, (int64_t[]){ D }, g2) &&
	     upload(npu, &tb2, 1, (int64_t[]){ D }, b2) &&
	     upload(npu, &twqkv, 2, (int64_t[]){ D, 3 * D }, wqkv) &&
	     upload(npu, &two, 2, (int64_t[]){ D, D }, wo) &&
	     upload(npu, &tw1, 2, (int64_t[]){ D, F }, w1) &&
	     upload(npu, &tc1, 1, (int64_t[]){ F }, c1) &&
	     upload(npu, &tw2, 2, (int64_t[]){ F, D }, w2) &&
	     upload(npu, &tc2, 1, (int64_t[]){ D }, c2);
	ok = ok &&
	     npu_tensor(npu, &ln1, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, (int64_t[]){ T, D }) &&
	     npu_tensor(npu, &qkv, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, (int64_t[]){ T, 3 * D }) &&
	     npu_tensor(npu, &scores, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 3, (int64_t[]){ B, S, S }) &&
	     npu_tensor(npu, &probs, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 3, (int64_t[]){ B, S, S }) &&
	     npu_tensor(npu, &ctx, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 3, (int64_t[]){ B, S, D }) &&
	     npu_tensor(npu, &proj, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, (int64_t[]){ T, D }) &&
	     npu_tensor(npu, &h1, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, (int64_t[]){ T, D }) &&
	     npu_tensor(npu, &ln2, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, (int64_t[]){ T, D }) &&
	     npu_tensor(npu, &f1, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, (int64_t[]){ T, F }) &&
	     npu_tensor(npu, &f2, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, (int64_t[]){ T, D }) &&
	     npu_tensor(npu, &y, VNPU_DTYPE_F32, VNPU_FORMAT_ND, 2, (int64_t[]){ T, D });
	if (ok) {
		/* [B,S,D] input as [T,D]; q, k, v as [B,S,D] views of qkv. */
		struct npu_tensor x2 = npu_view(&tx, 2, (int64_t[]){ T, D },
						(int64_t[]){ D, 1 }, 0);
		const int64_t st[3] = { S * 3 * D, 3 * D, 1 };

		q = npu_view(&qkv, 3, (int64_t[]){ B, S, D }, st, 0);
		k = npu_view(&qkv, 3, (int64_t[]){ B, S, D }, st, D);
		v = npu_view(&qkv, 3, (int64_t[]){ B, S, D }, st, 2 * D);
		struct npu_tensor ctx2 = npu_view(&ctx, 2, (int64_t[]){ T, D },
						  (int64_t[]){ D, 1 }, 0);
		ok = layer_norm(npu, &x2, &tg1, &tb1, &ln1) &&
		     gemm(npu, &ln1, &twqkv, NULL, 0, 1.0f, VNPU_ACT_NONE, &qkv) &&
		     gemm(npu, &q, &k, NULL, 1, (float)scale, VNPU_ACT_NONE, &scores) &&
		     softmax(npu, &scores, 2, 0, &probs) &&
		     gemm(npu, &probs, &v, NULL, 0, 1.0f, VNPU_ACT_NONE, &ctx) &&
		     gemm(npu, &ctx2, &two, NULL, 0, 1.0f, VNPU_ACT_NONE, &proj) &&
		     add(npu, &x2, &proj, &h1) &&
		     layer_norm(npu, &h1, &tg2, &tb2, &ln2) &&
		     gemm(npu, &ln2, &tw1, &tc1, 0, 1.0f, VNPU_ACT_GELU, &f1) &&
		     gemm(npu, &f1, &tw2, &tc2, 0, 1.0f, VNPU_ACT_NONE, &f2) &&
		     add(npu, &h1, &f2, &y);
	}

	res->ref_ms = now_ms();
	ref_layer_norm_rows(rx, T, D, rg1, rb1, 1e-5, r_ln1);
	ref_gemm(1, T, 3 * D, D, r_ln1, (int64_t[]){ 0, D, 1 }, rwqkv,
		 (int64_t[]){ 0, 3 * D, 1 }, NULL, 1.0, REF_NONE, r_qkv);
	/* scores[b] = q[b] k[b]^T: k^T element (d, j) is qkv[b, j, D + d] */
	ref_gemm(B, S, S, D, r_qkv, (int64_t[]){ S * 3 * D, 3 * D, 1 },
		 r_qkv + D, (int64_t[]){ S * 3 * D, 1, 3 * D }, NULL, scale,
		 REF_NONE, r_sc);
	ref_softmax_rows(r_sc, B * S, S, 0);
	ref_gemm(B, S, D, S, r_sc, (int64_t[]){ S * S, S, 1 }, r_qkv + 2 * D,
		 (int64_t[]){ S * 3 * D, 3 * D, 1 }, NULL, 1.0, REF_NONE, r_ctx);
	ref_gemm(1, T, D, D, r_ctx, (int64_t[]){ 0, D, 1 }, rwo,
		 (int64_t[]){ 0, D, 1 }, NULL, 1.0, REF_NONE, r_h1);
	for (int64_t i = 0; i < T * D; i++)
		r_h1[i] += rx[i];
	ref_layer_norm_rows(r_h1, T, D, rg2, rb2, 1e-5, r_ln2);
	ref_gemm(1, T, F, D, r_ln2, (int64_t[]){ 0, D, 1 }, rw1,
		 (int64_t[]){ 0, F, 1 }, rc1, 1.0, REF_GELU, r_f1);
	ref_gemm(1, T, D, F, r_f1, (int64_t[]){ 0, F, 1 }, rw2,
		 (int64_t[]){ 0, D, 1 }, rc2, 1.0, REF_NONE, r_y);
	for (int64_t i = 0; i < T * D; i++)
		r_y[i] += r_h1[i];
	res->ref_ms = now_ms() - res->ref_ms;
	ok = ok && compare(npu, &y, r_y, T * D, &res->error);
	res->tolerance = 1e-4;
	free(x), free(g1), free(b1), free(g2), free(b2), free(wqkv), free(wo),
		free(w1), free(c1), free(w2), free(c2);
	free(rx), free(rg1), free(rb1), free(rg2), free(rb2), free(rwqkv),
		free(rwo), free(rw1), free(rc1), free(rw2), free(rc2);
	free(r_ln1), free(r_qkv), free(r_sc), free(r_ctx), free(r_h1),
		free(r_ln2), free(r_f1), free(r_y);
	return ok;
}

int main(void)
{
	struct npu *npu = npu_open();
	int failed = 0, passed = 0;
	const char *backend;
	unsigned cores;
	static const char *const names[] = { "mlp-f32", "mlp-f16", "mlp-bf16",
					     "cnn-f32", "transformer-f32" };

	if (!npu)
		return 1;
	backend = npu_backend(npu, &cores);
	printf("device: vnpu, %s backend (%s), %u cores\n", backend,
	       strcmp(backend, "drm") == 0 ? "the vnpu kernel driver"
					   : "the device simulator in-process",
	       cores);
	printf("error: max |npu - ref| / max(1, max |ref|) against a "
	       "double-precision reference\n"
	       "device ms: device time of the kernels (timing events around "
	       "each launch)\n"
	       "wall ms: the whole workload: data generation, copies, "
	       "launches and the reference\n"
	       "ref ms: the reference alone, naive loops in double that check "
	       "correctness;\n  it is not a CPU performance baseline, so no "
	       "speed ratio is printed\n\n");
	printf("%-16s %-5s %10s %9s %9s %10s %9s  %s\n", "workload", "check",
	       "error", "limit", "device ms", "wall ms", "ref ms", "fallback");
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct result r = { .error = INFINITY };
		double t0 = now_ms(), t1, device_ms;
		uint64_t kernels;
		bool ok;

		switch (i) {
		case 0: ok = mlp(npu, VNPU_DTYPE_F32, &r); break;
		case 1: ok = mlp(npu, VNPU_DTYPE_F16, &r); break;
		case 2: ok = mlp(npu, VNPU_DTYPE_BF16, &r); break;
		case 3: ok = cnn(npu, &r); break;
		default: ok = transformer(npu, &r); break;
		}
		ok = npu_stats(npu, &kernels, &device_ms) && ok;
		t1 = now_ms();
		npu_release(npu);
		ok = ok && r.error <= r.tolerance;
		printf("%-16s %-5s %10.2e %9.0e %9.2f %10.2f %9.2f  none (%llu "
		       "kernels on the NPU)\n",
		       names[i], ok ? "PASS" : "FAIL", r.error, r.tolerance,
		       device_ms, t1 - t0, r.ref_ms,
		       (unsigned long long)kernels);
		ok ? passed++ : failed++;
	}
	npu_close(npu);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
