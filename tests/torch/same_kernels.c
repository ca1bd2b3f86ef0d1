// SPDX-License-Identifier: MIT
/*
 * The C dispatcher's side of the test that both front ends run the same
 * NPU code (test_same_kernels.py): each case's inputs and its npu result,
 * computed through the dispatcher's typed API, written to stdout as
 *
 *   case:   u32 name length, name, u32 number of tensors (inputs, then
 *           the result)
 *   tensor: i32 dtype (enum vnpu_at_dtype), u32 ndim, i64 sizes[ndim],
 *           the contiguous bytes
 *
 * The Python side reads the inputs back, runs the same op through
 * PyTorch on npu, and requires the result bit for bit. Cases
 * named "matmul:..." and "ref:..." are the C front end's own composites
 * (matmul, cross_entropy with label smoothing), held to PyTorch's CPU
 * result within float32 tolerance instead (PyTorch decomposes those
 * itself on npu).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu_dispatch.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float next_float(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 40) & 0xffffff) / (float)0x1000000 * 4.0f - 2.0f;
}

static void die(const char *what)
{
	fprintf(stderr, "same_kernels: %s: %s\n", what, vnpu_at_error_message());
	exit(1);
}

/* A CPU tensor of dt with random values (drawn in f32, then converted). */
static struct vnpu_at_tensor *input(uint32_t ndim, const int64_t *sizes,
				    enum vnpu_at_dtype dt)
{
	struct vnpu_at_tensor *f = vnpu_at_empty(ndim, sizes, VNPU_AT_F32,
						 VNPU_AT_DEV_CPU), *c;
	float *p;

	if (!f)
		die("empty");
	p = vnpu_at_data(f);
	for (int64_t i = 0; i < vnpu_at_numel(f); i++)
		p[i] = next_float();
	c = vnpu_op__to_copy(f, dt, VNPU_AT_DEV_CPU, false);
	vnpu_at_release(f);
	if (!c)
		die("to dtype");
	return c;
}

static void write_tensor(struct vnpu_at_tensor *t)
{
	struct vnpu_at_tensor *c = vnpu_op__to_copy(t, VNPU_AT_DTYPE_NONE,
						    VNPU_AT_DEV_CPU, false);
	struct vnpu_at_tensor *k = c ? vnpu_op_contiguous(c) : NULL;
	int32_t dt = t->dtype;
	uint32_t nd = t->ndim;

	if (!k)
		die("to the CPU");
	fwrite(&dt, 4, 1, stdout);
	fwrite(&nd, 4, 1, stdout);
	fwrite(k->sizes, 8, nd, stdout);
	fwrite(vnpu_at_data(k), vnpu_at_dtype_size((enum vnpu_at_dtype)dt),
	       (size_t)vnpu_at_numel(k), stdout);
	vnpu_at_release(c);
	vnpu_at_release(k);
}

/* Writes the case: its CPU inputs, then the npu result of fn on npu
 * copies of them. */
typedef struct vnpu_at_tensor *(*case_fn)(struct vnpu_at_tensor **in);

static void run_case(const char *name, uint32_t n, struct vnpu_at_tensor **in,
		     case_fn fn)
{
	struct vnpu_at_tensor *dev[8], *r;
	uint32_t len = (uint32_t)strlen(name), count = n + 1;

	for (uint32_t i = 0; i < n; i++) {
		dev[i] = vnpu_op__to_copy(in[i], VNPU_AT_DTYPE_NONE,
					  VNPU_AT_DEV_NPU(0), false);
		if (!dev[i])
			die("to the npu");
	}
	r = fn(dev);
	if (!r)
		die(name);
	if (!vnpu_at_is_npu(r)) {
		fprintf(stderr, "same_kernels: %s: result not on the npu\n", name);
		exit(1);
	}
	fwrite(&len, 4, 1, stdout);
	fwrite(name, 1, len, stdout);
	fwrite(&count, 4, 1, stdout);
	for (uint32_t i = 0; i < n; i++) {
		write_tensor(in[i]);
		vnpu_at_release(in[i]);
		vnpu_at_release(dev[i]);
	}
	write_tensor(r);
	vnpu_at_release(r);
}

static struct vnpu_at_tensor *c_mm(struct vnpu_at_tensor **x)
{
	return vnpu_op_mm(x[0], x[1]);
}

static struct vnpu_at_tensor *c_addmm(struct vnpu_at_tensor **x)
{
	return vnpu_op_addmm(x[0], x[1], x[2], VNPU_AT_INT(1), VNPU_AT_INT(1));
}

static struct vnpu_at_tensor *c_add(struct vnpu_at_tensor **x)
{
	return vnpu_op_add_Tensor(x[0], x[1], VNPU_AT_DOUBLE(0.5));
}

static struct vnpu_at_tensor *c_gelu(struct vnpu_at_tensor **x)
{
	return vnpu_op_gelu(x[0], "none");
}

static struct vnpu_at_tensor *c_softmax(struct vnpu_at_tensor **x)
{
	return vnpu_op__softmax(x[0], 1, false);
}

static struct vnpu_at_tensor *c_sum(struct vnpu_at_tensor **x)
{
	int64_t d = 1;

	return vnpu_op_sum_dim_IntList(x[0], (struct vnpu_at_opt_int_array){
		true, { &d, 1 } }, false, VNPU_AT_DTYPE_NONE);
}

static struct vnpu_at_tensor *c_conv(struct vnpu_at_tensor **x)
{
	return vnpu_op_convolution(x[0], x[1], x[2], VNPU_AT_INTS(1, 1),
				   VNPU_AT_INTS(1, 1), VNPU_AT_INTS(1, 1),
				   false, VNPU_AT_INTS(0, 0), 1);
}

static struct vnpu_at_tensor *c_layer_norm(struct vnpu_at_tensor **x)
{
	struct vnpu_ret_native_layer_norm r = vnpu_op_native_layer_norm(
		x[0], VNPU_AT_INTS(24), x[1], x[2], 1e-5);

	vnpu_at_release(r.r1);
	vnpu_at_release(r.r2);
	return r.r0;
}

static struct vnpu_at_tensor *c_addcmul(struct vnpu_at_tensor **x)
{
	return vnpu_op_addcmul(x[0], x[1], x[2], VNPU_AT_DOUBLE(-0.25));
}

static struct vnpu_at_tensor *c_matmul(struct vnpu_at_tensor **x)
{
	return vnpu_op_matmul(x[0], x[1]);
}

/* cross_entropy with label smoothing; the parameters ride in the name */
static int64_t ce_reduction;
static double ce_smoothing;
static bool ce_weighted;

static struct vnpu_at_tensor *c_cross_entropy(struct vnpu_at_tensor **x)
{
	return vnpu_op_cross_entropy_loss(x[0], x[1], ce_weighted ? x[2] : NULL,
					  ce_reduction, -100, ce_smoothing);
}

static struct vnpu_at_tensor *c_nz_mm(struct vnpu_at_tensor **x)
{
	struct vnpu_at_tensor *w = vnpu_op_npu_format_cast(x[1], 29), *r;

	if (!w)
		return NULL;
	r = vnpu_op_mm(x[0], w);
	vnpu_at_release(w);
	return r;
}

int main(void)
{
	static const enum vnpu_at_dtype fl[] = { VNPU_AT_F32, VNPU_AT_F16,
						 VNPU_AT_BF16 };
	struct vnpu_at_tensor *in[4];
	char name[64];

	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		const char *dn = vnpu_at_dtype_name(fl[i]);

		in[0] = input(2, (int64_t[]){ 37, 70 }, fl[i]);
		in[1] = input(2, (int64_t[]){ 70, 45 }, fl[i]);
		snprintf(name, sizeof(name), "mm/%s", dn);
		run_case(name, 2, in, c_mm);

		in[0] = input(1, (int64_t[]){ 45 }, fl[i]);
		in[1] = input(2, (int64_t[]){ 37, 70 }, fl[i]);
		in[2] = input(2, (int64_t[]){ 70, 45 }, fl[i]);
		snprintf(name, sizeof(name), "addmm/%s", dn);
		run_case(name, 3, in, c_addmm);

		in[0] = input(2, (int64_t[]){ 37, 70 }, fl[i]);
		in[1] = input(2, (int64_t[]){ 70, 45 }, fl[i]);
		snprintf(name, sizeof(name), "mm_nz/%s", dn);
		run_case(name, 2, in, c_nz_mm);

		in[0] = input(3, (int64_t[]){ 4, 5, 6 }, fl[i]);
		in[1] = input(1, (int64_t[]){ 6 }, fl[i]);
		snprintf(name, sizeof(name), "add/%s", dn);
		run_case(name, 2, in, c_add);

		in[0] = input(2, (int64_t[]){ 9, 33 }, fl[i]);
		snprintf(name, sizeof(name), "gelu/%s", dn);
		run_case(name, 1, in, c_gelu);

		in[0] = input(2, (int64_t[]){ 9, 33 }, fl[i]);
		snprintf(name, sizeof(name), "softmax/%s", dn);
		run_case(name, 1, in, c_softmax);

		in[0] = input(3, (int64_t[]){ 3, 50, 7 }, fl[i]);
		snprintf(name, sizeof(name), "sum/%s", dn);
		run_case(name, 1, in, c_sum);

		in[0] = input(2, (int64_t[]){ 6, 24 }, fl[i]);
		in[1] = input(1, (int64_t[]){ 24 }, fl[i]);
		in[2] = input(1, (int64_t[]){ 24 }, fl[i]);
		snprintf(name, sizeof(name), "layer_norm/%s", dn);
		run_case(name, 3, in, c_layer_norm);

		in[0] = input(2, (int64_t[]){ 8, 8 }, fl[i]);
		in[1] = input(2, (int64_t[]){ 8, 8 }, fl[i]);
		in[2] = input(1, (int64_t[]){ 8 }, fl[i]);
		snprintf(name, sizeof(name), "addcmul/%s", dn);
		run_case(name, 3, in, c_addcmul);
	}
	{
		/* every rank pair torch.matmul takes */
		static const struct {
			uint32_t na, nb;
			int64_t a[4], b[4];
		} mm[] = {
			{ 1, 1, { 7 }, { 7 } },
			{ 2, 1, { 5, 7 }, { 7 } },
			{ 1, 2, { 7 }, { 7, 4 } },
			{ 3, 1, { 2, 5, 7 }, { 7 } },
			{ 1, 3, { 7 }, { 2, 7, 4 } },
			{ 3, 2, { 2, 5, 7 }, { 7, 4 } },
			{ 2, 3, { 5, 7 }, { 3, 7, 4 } },
			{ 4, 3, { 2, 1, 5, 7 }, { 3, 7, 4 } },
			{ 3, 4, { 3, 5, 7 }, { 2, 1, 7, 4 } },
			{ 1, 2, { 0 }, { 0, 33 } },
		};

		for (size_t i = 0; i < sizeof(mm) / sizeof(mm[0]); i++) {
			in[0] = input(mm[i].na, mm[i].a, VNPU_AT_F32);
			in[1] = input(mm[i].nb, mm[i].b, VNPU_AT_F32);
			snprintf(name, sizeof(name), "matmul:%zu/float32", i);
			run_case(name, 2, in, c_matmul);
		}
	}
	for (int i = 0; i < 6; i++) {
		static const int64_t tg[6] = { 0, 3, 1, -100, 2, 1 };
		struct vnpu_at_tensor *t = vnpu_at_empty(1, (int64_t[]){ 6 }, VNPU_AT_I64,
							 VNPU_AT_DEV_CPU);
		struct vnpu_at_tensor *w = input(1, (int64_t[]){ 4 }, VNPU_AT_F32);
		struct vnpu_at_tensor *wp = w ? vnpu_op_abs(w) : NULL;

		if (!t || !wp)
			die("cross_entropy inputs");
		memcpy(vnpu_at_data(t), tg, sizeof(tg));
		ce_reduction = i % 3;
		ce_smoothing = 0.1 * (i + 1);
		ce_weighted = i >= 3;
		in[0] = input(2, (int64_t[]){ 6, 4 }, VNPU_AT_F32);
		in[1] = t;
		in[2] = wp;
		snprintf(name, sizeof(name), "ref:cross_entropy:%lld:%g:%d/float32",
			 (long long)ce_reduction, ce_smoothing, ce_weighted);
		run_case(name, 3, in, c_cross_entropy);
		vnpu_at_release(w);
	}
	in[0] = input(4, (int64_t[]){ 2, 3, 9, 9 }, VNPU_AT_F32);
	in[1] = input(4, (int64_t[]){ 5, 3, 3, 3 }, VNPU_AT_F32);
	in[2] = input(1, (int64_t[]){ 5 }, VNPU_AT_F32);
	run_case("conv2d/float32", 3, in, c_conv);
	if (!vnpu_at_npu_synchronize())
		die("synchronize");
	return fflush(stdout) ? 1 : 0;
}
