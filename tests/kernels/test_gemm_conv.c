// SPDX-License-Identifier: MIT
/*
 * GEMM and CONV2D against straightforward double-precision loops over
 * logical indices. Packed operands are built here element by element from
 * the GE/torch_npu mappings (docs: pytorch-anchors section 4.4), written
 * out again rather than taken from kernels/layout.h:
 *
 *   FRACTAL_NZ [b, R, C] -> (((b*C1 + c/16)*R1 + r/16)*16 + r%16)*16 + c%16
 *   NC1HWC0    [N,C,H,W] -> (((n*C1 + c/16)*H + h)*W + w)*16 + c%16
 *   FRACTAL_Z  [N,C,H,W] -> (((((c/16)*H + h)*W + w)*N1 + n/16)*16
 *                            + n%16)*16 + c%16
 *
 * (C0 = 16 for F32, F16 and BF16; C1 = ceil(C/16), R1 = ceil(R/16),
 * N1 = ceil(N/16)). Input padding is filled with NaN: the kernels must not
 * read it. Output padding (NZ rows/columns past M/N, NC1HWC0 channels past
 * Cout) must come back as zero, and nothing outside the output's storage
 * may change.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "gemm_core.h"
#include "gemm_operand.h"
#include "harness.h"

/* The definitions themselves, to check the registry hands them out. */
extern const struct vnpu_kernel_def vnpu_kernel_gemm;
extern const struct vnpu_kernel_def vnpu_kernel_conv2d;

static const uint32_t float_dtypes[] = {VNPU_DTYPE_F32, VNPU_DTYPE_F16,
					VNPU_DTYPE_BF16};
static const uint32_t block_counts[] = {1, 2, 3, 7};
#define N_BLOCK_COUNTS (sizeof(block_counts) / sizeof(block_counts[0]))
static const int64_t edge_sizes[] = {0, 1, 15, 16, 17, 33};

static int64_t cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static size_t isize(uint32_t dtype)
{
	return dtype == VNPU_DTYPE_F32 ? 4 : 2;
}

/* Element idx of a buffer of `dtype`, as double / from double (rounded to
 * nearest even). */
static double get_elem(const struct vnpu_kbuf *b, uint32_t dtype, int64_t idx)
{
	return vnpu_load_f64((const char *)b->ptr + idx * isize(dtype), dtype);
}

static void set_elem(struct vnpu_kbuf *b, uint32_t dtype, int64_t idx, double v)
{
	vnpu_store_f64((char *)b->ptr + idx * isize(dtype), dtype, v);
}

/* A random value exactly representable in dtype. */
static double rand_value(uint32_t dtype)
{
	char tmp[8] = {0};

	vnpu_store_f64(tmp, dtype, kt_rand_float(-1.0f, 1.0f));
	return vnpu_load_f64(tmp, dtype);
}

static double ref_act(uint32_t act, double x)
{
	switch (act) {
	case VNPU_ACT_RELU:
		return x > 0 ? x : 0;
	case VNPU_ACT_GELU:
		return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case VNPU_ACT_SILU:
		return x / (1.0 + exp(-x));
	case VNPU_ACT_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	case VNPU_ACT_TANH:
		return tanh(x);
	default:
		return x;
	}
}

/* |got - ref| allowed: rounding of the stored result plus f32
 * accumulation error relative to the magnitude of the summed terms. */
static double tolerance(uint32_t dtype, double ref, double mag)
{
	double out_eps = dtype == VNPU_DTYPE_F32   ? 1e-6
			 : dtype == VNPU_DTYPE_F16 ? 1e-3
						   : 8e-3;

	return out_eps * fabs(ref) + 2e-6 * mag + 1e-6;
}

/* ------------------------------------------------------------------ */
/* Test-side placement of a logical [batch, rows, cols] matrix stack.  */

enum nd_mode {
	ND_DENSE,     /* row-major */
	ND_PADDED,    /* row-major, padded rows and batches, offset */
	ND_COLMAJOR,  /* column-major storage (a transposed view) */
	ND_BROADCAST, /* rows stride 0 (inputs only) */
	ND_MODES
};

struct mat {
	uint32_t dtype, format;
	uint32_t ndim;		   /* 2 or 3 */
	int64_t batch, rows, cols; /* logical; batch 1 when ndim 2 */
	int64_t offset;
	int64_t bs, rs, cs; /* ND */
	int64_t storage;    /* elements after offset */
};

static struct mat mat_make(uint32_t dtype, bool nz, uint32_t ndim,
			   int64_t batch, int64_t rows, int64_t cols,
			   enum nd_mode mode)
{
	struct mat m = {dtype, nz ? VNPU_FORMAT_FRACTAL_NZ : VNPU_FORMAT_ND,
			ndim,  batch,
			rows,  cols,
			0,     0,
			0,     0,
			0};

	if (nz) {
		m.offset = kt_rand_range(0, 5);
		m.storage = batch * cdiv(cols, 16) * cdiv(rows, 16) * 256;
		return m;
	}
	switch (mode) {
	case ND_DENSE:
		m.cs = 1;
		m.rs = cols;
		m.bs = rows * cols;
		break;
	case ND_PADDED:
		m.offset = kt_rand_range(0, 9);
		m.cs = 1;
		m.rs = cols + kt_rand_range(0, 5);
		m.bs = rows * m.rs + kt_rand_range(0, 7);
		break;
	case ND_COLMAJOR:
		m.offset = kt_rand_range(0, 3);
		m.rs = 1;
		m.cs = rows + kt_rand_range(0, 3);
		m.bs = cols * m.cs + 1;
		break;
	default:
		m.offset = kt_rand_range(0, 3);
		m.rs = 0;
		m.cs = kt_rand_range(1, 2);
		m.bs = cols * m.cs;
		break;
	}
	if (batch == 1 && kt_rand() % 2)
		m.bs = 0;
	m.storage = 1;
	if (batch && rows && cols)
		m.storage = (batch - 1) * m.bs + (rows - 1) * m.rs +
			    (cols - 1) * m.cs + 1;
	return m;
}

static int64_t mat_index(const struct mat *m, int64_t b, int64_t r, int64_t c)
{
	if (m->format == VNPU_FORMAT_FRACTAL_NZ)
		return m->offset +
		       (((b * cdiv(m->cols, 16) + c / 16) * cdiv(m->rows, 16) +
			 r / 16) *
				16 +
			r % 16) *
			       16 +
		       c % 16;
	return m->offset + b * m->bs + r * m->rs + c * m->cs;
}

static struct vnpu_tensor mat_tensor(const struct mat *m, uint32_t buffer)
{
	struct vnpu_tensor t;
	uint32_t d = m->ndim;

	memset(&t, 0, sizeof(t));
	t.buffer = buffer;
	t.dtype = m->dtype;
	t.format = m->format;
	t.ndim = d;
	t.offset = m->offset;
	if (d == 3)
		t.sizes[0] = m->batch;
	t.sizes[d - 2] = m->rows;
	t.sizes[d - 1] = m->cols;
	if (m->format == VNPU_FORMAT_ND) {
		if (d == 3)
			t.strides[0] = m->bs;
		t.strides[d - 2] = m->rs;
		t.strides[d - 1] = m->cs;
	}
	return t;
}

/* Buffer with exactly offset + storage elements (+ slack bytes that must
 * stay untouched), NaN everywhere, then the logical values `v`
 * ([batch][rows][cols]) at their places. */
static struct vnpu_kbuf mat_buffer(const struct mat *m, const double *v,
				   size_t slack)
{
	int64_t total = m->offset + m->storage;
	struct vnpu_kbuf buf =
		kt_buffer((uint64_t)total * isize(m->dtype) + slack);

	ck_assert_ptr_nonnull(buf.ptr);
	for (int64_t i = 0; i < total; i++)
		set_elem(&buf, m->dtype, i, NAN);
	if (v)
		for (int64_t b = 0; b < m->batch; b++)
			for (int64_t r = 0; r < m->rows; r++)
				for (int64_t c = 0; c < m->cols; c++)
					set_elem(&buf, m->dtype,
						 mat_index(m, b, r, c),
						 v[(b * m->rows + r) * m->cols +
						   c]);
	return buf;
}

static void mat_reload(const struct mat *m, const struct vnpu_kbuf *buf,
		       double *v)
{
	for (int64_t b = 0; b < m->batch; b++)
		for (int64_t r = 0; r < m->rows; r++)
			for (int64_t c = 0; c < m->cols; c++)
				v[(b * m->rows + r) * m->cols + c] = get_elem(
					buf, m->dtype, mat_index(m, b, r, c));
}

static double *rand_values(uint32_t dtype, int64_t n)
{
	double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));

	ck_assert_ptr_nonnull(v);
	for (int64_t i = 0; i < n; i++)
		v[i] = rand_value(dtype);
	return v;
}

/* ------------------------------------------------------------------ */
/* GEMM                                                                */

struct gemm_case {
	uint32_t dtype;
	int64_t m, n, k;
	uint32_t out_ndim; /* 2: no batch */
	int64_t batch, batch_a, batch_b;
	bool trans_a, trans_b;
	bool nz_a, nz_b, nz_out;
	enum nd_mode mode_a, mode_b, mode_out, mode_bias;
	bool has_bias;
	uint32_t act;
	float alpha, beta;
	uint32_t nblocks;
	size_t misalign;  /* bytes added to the input buffer pointers */
	bool aligned_out; /* ... and not to out's */
};

static void case_name(const struct gemm_case *c, char *s, size_t n)
{
	snprintf(s, n,
		 "dtype %u M %ld N %ld K %ld batch %ld/%ld/%ld nd %u ta %d tb "
		 "%d "
		 "nz %d%d%d modes %d%d%d bias %d act %u alpha %g beta %g "
		 "blocks %u misalign %zu aligned out %d",
		 c->dtype, (long)c->m, (long)c->n, (long)c->k, (long)c->batch,
		 (long)c->batch_a, (long)c->batch_b, c->out_ndim, c->trans_a,
		 c->trans_b, c->nz_a, c->nz_b, c->nz_out, c->mode_a, c->mode_b,
		 c->mode_out, c->has_bias, c->act, c->alpha, c->beta,
		 c->nblocks, c->misalign, c->aligned_out);
}

static struct vnpu_kbuf shifted(struct vnpu_kbuf b, size_t by)
{
	b.ptr = (char *)b.ptr + by;
	b.size -= by;
	return b;
}

static void run_gemm_case(const struct gemm_case *c)
{
	uint32_t dt = c->dtype;
	uint32_t in_ndim = c->out_ndim;
	int64_t ar = c->trans_a ? c->k : c->m, ac = c->trans_a ? c->m : c->k;
	int64_t br = c->trans_b ? c->n : c->k, bc = c->trans_b ? c->k : c->n;
	struct mat ma =
		mat_make(dt, c->nz_a, in_ndim, c->batch_a, ar, ac, c->mode_a);
	struct mat mb =
		mat_make(dt, c->nz_b, in_ndim, c->batch_b, br, bc, c->mode_b);
	struct mat mo = mat_make(dt, c->nz_out, c->out_ndim, c->batch, c->m,
				 c->n, c->mode_out);
	struct mat mbias = mat_make(dt, false, 2, 1, 1, c->n, c->mode_bias);
	double *va = rand_values(dt, ma.batch * ar * ac);
	double *vb = rand_values(dt, mb.batch * br * bc);
	double *vo = rand_values(dt, c->batch * c->m * c->n);
	double *vbias = rand_values(dt, c->n);
	const size_t slack = 32, pre = c->misalign;
	struct vnpu_kbuf raw[4], bufs[4], before;
	struct vnpu_kp_gemm p;
	char name[400];
	uint32_t st;

	case_name(c, name, sizeof(name));
	raw[0] = mat_buffer(&ma, va, slack + pre);
	raw[1] = mat_buffer(&mb, vb, slack + pre);
	raw[2] = mat_buffer(&mo, c->beta != 0 ? vo : NULL, slack + pre);
	raw[3] = mat_buffer(&mbias, vbias, slack + pre);
	/* broadcast strides alias elements: the last write is the value */
	mat_reload(&ma, &raw[0], va);
	mat_reload(&mb, &raw[1], vb);
	mat_reload(&mbias, &raw[3], vbias);
	for (int i = 0; i < 4; i++) {
		/* move the contents up by `pre` bytes for misalignment */
		size_t by = i == 2 && c->aligned_out ? 0 : pre;

		memmove((char *)raw[i].ptr + by, raw[i].ptr, raw[i].size - pre);
		bufs[i] = shifted(raw[i], by);
		bufs[i].size -= pre - by;
		bufs[i].size -= slack;
	}
	before = kt_buffer(bufs[2].size + slack);
	memcpy(before.ptr, bufs[2].ptr, bufs[2].size + slack);

	memset(&p, 0, sizeof(p));
	p.trans_a = c->trans_a;
	p.trans_b = c->trans_b;
	p.activation = c->act;
	p.has_bias = c->has_bias;
	p.alpha = c->alpha;
	p.beta = c->beta;
	p.a = mat_tensor(&ma, 0);
	p.b = mat_tensor(&mb, 1);
	p.out = mat_tensor(&mo, 2);
	if (c->has_bias) {
		p.bias = mat_tensor(&mbias, 3);
		p.bias.ndim = 1;
		p.bias.sizes[0] = c->n;
		p.bias.sizes[1] = 0;
		p.bias.strides[0] = mbias.cs;
		p.bias.strides[1] = 0;
	}
	st = kt_launch(VNPU_KERNEL_GEMM, &p, bufs, 4, c->nblocks);
	ck_assert_msg(st == VNPU_STATUS_OK, "status %u: %s", st, name);

	for (int64_t b = 0; b < c->batch; b++)
		for (int64_t i = 0; i < c->m; i++)
			for (int64_t j = 0; j < c->n; j++) {
				int64_t ba = c->batch_a == 1 ? 0 : b;
				int64_t bb = c->batch_b == 1 ? 0 : b;
				double sum = 0, mag = 0, ref, got;

				for (int64_t k = 0; k < c->k; k++) {
					double x = c->trans_a
							   ? va[(ba * ar + k) *
									ac +
								i]
							   : va[(ba * ar + i) *
									ac +
								k];
					double y = c->trans_b
							   ? vb[(bb * br + j) *
									bc +
								k]
							   : vb[(bb * br + k) *
									bc +
								j];

					sum += x * y;
					mag += fabs(x * y);
				}
				ref = c->alpha * sum;
				mag = fabs(c->alpha) * mag;
				if (c->beta != 0) {
					double o =
						vo[(b * c->m + i) * c->n + j];

					ref += c->beta * o;
					mag += fabs(c->beta * o);
				}
				if (c->has_bias) {
					ref += vbias[j];
					mag += fabs(vbias[j]);
				}
				ref = ref_act(c->act, ref);
				got = get_elem(&bufs[2], dt,
					       mat_index(&mo, b, i, j));
				ck_assert_msg(
					fabs(got - ref) <=
						tolerance(dt, ref, mag),
					"out[%ld][%ld][%ld] = %g, want %g: %s",
					(long)b, (long)i, (long)j, got, ref,
					name);
			}

	/* Everything that is not a logical output element: NZ padding must
	 * be zero, the rest (ND gaps, offset, slack) unchanged. */
	{
		int64_t total = mo.offset + mo.storage;
		char *flag = calloc((size_t)total + 1, 1);

		ck_assert_ptr_nonnull(flag);
		for (int64_t b = 0; b < c->batch; b++)
			for (int64_t i = 0; i < c->m; i++)
				for (int64_t j = 0; j < c->n; j++)
					flag[mat_index(&mo, b, i, j)] = 1;
		for (int64_t e = 0; e < total; e++) {
			if (flag[e])
				continue;
			if (c->nz_out && e >= mo.offset) {
				ck_assert_msg(get_elem(&bufs[2], dt, e) == 0.0,
					      "NZ padding %ld not zero: %s",
					      (long)e, name);
			} else {
				ck_assert_msg(
					memcmp((char *)bufs[2].ptr +
						       e * isize(dt),
					       (char *)before.ptr +
						       e * isize(dt),
					       isize(dt)) == 0,
					"element %ld outside out changed: %s",
					(long)e, name);
			}
		}
		ck_assert_msg(memcmp((char *)bufs[2].ptr + total * isize(dt),
				     (char *)before.ptr + total * isize(dt),
				     slack) == 0,
			      "write past the output: %s", name);
		free(flag);
	}

	for (int i = 0; i < 4; i++)
		kt_free(&raw[i]);
	kt_free(&before);
	free(va);
	free(vb);
	free(vo);
	free(vbias);
}

static int64_t pick_size(int64_t max)
{
	if (kt_rand() % 2)
		return edge_sizes[kt_rand() % 6];
	return kt_rand_range(0, max);
}

static struct gemm_case random_case(uint32_t dtype, int64_t max)
{
	static const float betas[] = {0.0f, 1.0f, 0.5f, -1.25f};
	struct gemm_case c;

	memset(&c, 0, sizeof(c));
	c.dtype = dtype;
	c.m = pick_size(max);
	c.n = pick_size(max);
	c.k = pick_size(max);
	c.out_ndim = kt_rand() % 3 ? 3 : 2;
	c.batch = c.out_ndim == 3 ? kt_rand_range(1, 3) : 1;
	c.batch_a = kt_rand() % 3 == 0 ? 1 : c.batch;
	c.batch_b = kt_rand() % 3 == 0 ? 1 : c.batch;
	c.trans_a = kt_rand() % 2;
	c.trans_b = kt_rand() % 2;
	c.nz_a = kt_rand() % 3 == 0;
	c.nz_b = kt_rand() % 3 == 0;
	c.nz_out = kt_rand() % 3 == 0;
	c.mode_a = (enum nd_mode)(kt_rand() % ND_MODES);
	c.mode_b = (enum nd_mode)(kt_rand() % ND_MODES);
	c.mode_out = (enum nd_mode)(kt_rand() % ND_BROADCAST);
	c.mode_bias = kt_rand() % 2 ? ND_DENSE : ND_BROADCAST;
	c.has_bias = kt_rand() % 2;
	c.act = kt_rand() % 2 ? VNPU_ACT_NONE : kt_rand() % 6;
	c.alpha = kt_rand() % 2 ? 1.0f : kt_rand_float(-2.0f, 2.0f);
	c.beta = betas[kt_rand() % 4];
	c.nblocks = block_counts[kt_rand() % N_BLOCK_COUNTS];
	return c;
}

/* Random shapes, layouts, transposes, batch broadcast, epilogues and block
 * counts for each dtype (the bias, a one-row matrix, gets stride 1 or 2). */
START_TEST(test_gemm_random)
{
	kt_seed(1000 + (uint64_t)_i);
	for (int it = 0; it < 60; it++) {
		struct gemm_case c = random_case(float_dtypes[_i % 3], 40);

		run_gemm_case(&c);
	}
}
END_TEST

/* Every microkernel family this CPU has, through ragged edges (the
 * AVX512-BF16 limit runs bf16 cases on the bf16 engine, the others on
 * f32 microkernels). */
START_TEST(test_gemm_isa)
{
	static const uint32_t isas[] = {
		VNPU_GEMM_ISA_PORTABLE, VNPU_GEMM_ISA_AVX2,
		VNPU_GEMM_ISA_AVX512, VNPU_GEMM_ISA_AVX512_BF16};

	kt_seed(77 + (uint64_t)_i);
	vnpu_gemm_set_isa(isas[_i]);
	for (int it = 0; it < 25; it++) {
		struct gemm_case c = random_case(float_dtypes[it % 3], 70);

		run_gemm_case(&c);
	}
	vnpu_gemm_set_isa(VNPU_GEMM_ISA_AUTO);
}
END_TEST

/* The vectorised f32 -> f16/bf16 stores round exactly as the scalar
 * conversions, specials included: every ISA limit, random bit patterns
 * (subnormals, ties, NaNs, infinities) and runs of every length. */
START_TEST(test_store_runs_exact)
{
	static const uint32_t isas[] = {VNPU_GEMM_ISA_PORTABLE,
					VNPU_GEMM_ISA_AVX2, VNPU_GEMM_ISA_AUTO};
	static const uint32_t specials[] = {
		0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000,
		0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffbfffff,
		0x3f808000, 0x3f818000, 0x477fefff, 0x477ff000, 0x33000000,
		0x33000001, 0x38800000, 0x387fc000, 0x7f7fffff, 0x3f7fffff};
	enum { N = 1000 };
	float src[N];
	uint16_t got[N];

	kt_seed(17);
	for (int i = 0; i < N; i++) {
		uint32_t u = i < 20 ? specials[i] : kt_rand() ^ kt_rand() << 7;

		memcpy(&src[i], &u, 4);
	}
	for (size_t s = 0; s < sizeof(isas) / sizeof(isas[0]); s++) {
		vnpu_gemm_set_isa(isas[s]);
		for (int n = 0; n <= 40; n += 7)
			for (int dt = 0; dt < 2; dt++) {
				uint32_t dtype =
					dt ? VNPU_DTYPE_BF16 : VNPU_DTYPE_F16;

				vnpu_operand_store_run((char *)got, dtype, 1,
						       N - n, src + n);
				for (int i = n; i < N; i++) {
					uint16_t want =
						dt ? vnpu_f32_to_bf16(src[i])
						   : vnpu_f32_to_f16(src[i]);
					bool nan = src[i] != src[i];

					/* NaN payloads need not survive */
					ck_assert_msg(
						nan ? got[i - n] != 0 &&
								(got[i - n] &
								 0x7fff) >=
									(dt ? 0x7f81
									    : 0x7c01)
						    : got[i - n] == want,
						"isa %u dtype %u: %08x -> %04x, want %04x",
						isas[s], dtype,
						((const uint32_t *)src)[i],
						got[i - n], want);
				}
			}
	}
	vnpu_gemm_set_isa(VNPU_GEMM_ISA_AUTO);
}
END_TEST

/* Sizes past the core's blocking: several K blocks (KC 256), N blocks
 * (NC 1024) and workspace row blocks (MB 384). */
START_TEST(test_gemm_large)
{
	static const struct {
		int64_t m, n, k;
		uint32_t dtype;
		bool nz_out;
	} shapes[] = {
		{70, 1100, 300, VNPU_DTYPE_F32, false},
		{400, 40, 530, VNPU_DTYPE_F16, false},
		{401, 35, 260, VNPU_DTYPE_F32, true},
		{33, 1030, 20, VNPU_DTYPE_BF16, true},
		/* bf16 pairs: an odd K, its last KC block a single step */
		{37, 70, 513, VNPU_DTYPE_BF16, false},
		{29, 45, 257, VNPU_DTYPE_BF16, false},
	};
	const struct gemm_case base = {
		.out_ndim = 2,
		.batch = 1,
		.batch_a = 1,
		.batch_b = 1,
		.alpha = 1.0f,
		.nblocks = 1,
	};

	kt_seed(5);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		struct gemm_case c = base;

		c.m = shapes[s].m;
		c.n = shapes[s].n;
		c.k = shapes[s].k;
		c.dtype = shapes[s].dtype;
		c.nz_out = shapes[s].nz_out;
		c.beta = s % 2 ? 0.5f : 0.0f;
		c.has_bias = s % 2;
		c.act = (uint32_t)s;
		c.trans_b = s == 2 || s == 5;
		c.nblocks = block_counts[s % N_BLOCK_COUNTS];
		c.mode_a = s == 3 ? ND_COLMAJOR : ND_PADDED;
		run_gemm_case(&c);
	}
}
END_TEST

/* Operand pointers that are not even 4-byte aligned (buffers may sit at
 * any device address). */
START_TEST(test_gemm_misaligned)
{
	kt_seed(31);
	for (int it = 0; it < 24; it++) {
		struct gemm_case c = random_case(float_dtypes[it % 3], 40);

		c.misalign = (size_t)(1 + it % 3);
		c.aligned_out = it % 2;
		c.has_bias = c.has_bias || c.aligned_out;
		run_gemm_case(&c);
	}
}
END_TEST

/* beta == 0 never reads out: NaN garbage there must not leak through
 * (mat_buffer leaves the output all NaN when beta is 0). */
START_TEST(test_gemm_beta_zero_ignores_out)
{
	for (size_t d = 0; d < 3; d++)
		for (int nz = 0; nz < 2; nz++) {
			struct gemm_case c = {
				.dtype = float_dtypes[d],
				.m = 17,
				.n = 33,
				.k = 15,
				.out_ndim = 3,
				.batch = 2,
				.batch_a = 2,
				.batch_b = 1,
				.nz_out = nz,
				.alpha = 1.5f,
				.nblocks = 3,
			};

			run_gemm_case(&c);
			c.k = 0; /* act(0 + bias) without reading out */
			c.has_bias = true;
			c.act = VNPU_ACT_SIGMOID;
			run_gemm_case(&c);
		}
}
END_TEST

/* NZ in, NZ out, every size class, all block counts: padding rows and
 * columns of the output come back zero. */
START_TEST(test_gemm_nz_all)
{
	kt_seed(9);
	for (size_t mi = 0; mi < 6; mi++)
		for (size_t ni = 0; ni < 6; ni += 1 + (mi % 2)) {
			struct gemm_case c = {
				.dtype = float_dtypes[(mi + ni) % 3],
				.m = edge_sizes[mi],
				.n = edge_sizes[ni],
				.k = edge_sizes[(mi + ni) % 6] + 2,
				.out_ndim = 3,
				.batch = 2,
				.batch_a = 2,
				.batch_b = 2,
				.trans_a = mi % 2,
				.trans_b = ni % 2,
				.nz_a = true,
				.nz_b = true,
				.nz_out = true,
				.alpha = 1.0f,
				.beta = 0.5f,
				.nblocks = block_counts[(mi + ni) %
							N_BLOCK_COUNTS],
			};

			run_gemm_case(&c);
		}
}
END_TEST

/* ---- validator ---- */

/* Each buffer of n replaced by one twice its size: room for F64 views of
 * the same shapes, so that only the dtype is wrong. */
static void grow_buffers(struct vnpu_kbuf *b, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t size = b[i].size * 2;

		kt_free(&b[i]);
		b[i] = kt_buffer(size);
	}
}

struct gemm_fixture {
	struct vnpu_kbuf bufs[4];
	struct vnpu_kp_gemm p;
};

/* A valid launch: a [2,5,7] x b [7,6] + bias [6] -> out [2,5,6], F32. */
static void gemm_fixture_init(struct gemm_fixture *f)
{
	const int64_t sa[] = {2, 5, 7}, sb[] = {7, 6}, so[] = {2, 5, 6};
	const int64_t sbias[] = {6};

	f->bufs[0] = kt_buffer(2 * 5 * 7 * 4);
	f->bufs[1] = kt_buffer(7 * 6 * 4);
	f->bufs[2] = kt_buffer(2 * 5 * 6 * 4);
	f->bufs[3] = kt_buffer(6 * 4);
	memset(&f->p, 0, sizeof(f->p));
	f->p.a = kt_tensor(0, VNPU_DTYPE_F32, 3, sa, NULL);
	f->p.b = kt_tensor(1, VNPU_DTYPE_F32, 2, sb, NULL);
	f->p.out = kt_tensor(2, VNPU_DTYPE_F32, 3, so, NULL);
	f->p.bias = kt_tensor(3, VNPU_DTYPE_F32, 1, sbias, NULL);
	f->p.has_bias = 1;
	f->p.alpha = 1.0f;
	f->p.beta = 1.0f;
}

static void gemm_fixture_free(struct gemm_fixture *f)
{
	for (int i = 0; i < 4; i++)
		kt_free(&f->bufs[i]);
}

static uint32_t gemm_validate(struct gemm_fixture *f)
{
	return vnpu_kernel_gemm.validate(&f->p, f->bufs, 4);
}

#define EXPECT_GEMM(mutation, status)                                          \
	do {                                                                   \
		struct gemm_fixture f;                                         \
		gemm_fixture_init(&f);                                         \
		mutation;                                                      \
		ck_assert_msg(gemm_validate(&f) == (status),                   \
			      "%s: got %u want %u", #mutation,                 \
			      gemm_validate(&f), (uint32_t)(status));          \
		gemm_fixture_free(&f);                                         \
	} while (0)

START_TEST(test_gemm_validate)
{
	const uint32_t inv = VNPU_STATUS_INVALID_ARGS;
	const uint32_t uns = VNPU_STATUS_UNSUPPORTED;

	ck_assert_ptr_eq(vnpu_kernel_find(VNPU_KERNEL_GEMM), &vnpu_kernel_gemm);
	ck_assert_ptr_eq(vnpu_kernel_find_name("gemm"), &vnpu_kernel_gemm);
	ck_assert_uint_eq(vnpu_kernel_gemm.params_size,
			  sizeof(struct vnpu_kp_gemm));
	EXPECT_GEMM((void)0, VNPU_STATUS_OK);
	EXPECT_GEMM(f.p.trans_a = 2, inv);
	EXPECT_GEMM(f.p.trans_b = 7, inv);
	EXPECT_GEMM(f.p.has_bias = 2, inv);
	EXPECT_GEMM(f.p.activation = VNPU_ACT_TANH + 1, inv);
	/* shapes */
	EXPECT_GEMM(f.p.trans_a = 1, inv);
	EXPECT_GEMM(f.p.trans_b = 1, inv);
	EXPECT_GEMM(f.p.b.sizes[0] = 6, inv);
	EXPECT_GEMM(f.p.out.sizes[1] = 4, inv);
	EXPECT_GEMM(f.p.out.sizes[2] = 5, inv);
	EXPECT_GEMM(f.p.bias.sizes[0] = 5, inv);
	EXPECT_GEMM((f.p.bias.ndim = 2, f.p.bias.sizes[1] = 1,
		     f.p.bias.strides[1] = 1),
		    inv);
	EXPECT_GEMM((f.p.a.sizes[0] = 3, f.p.a.strides[0] = 0), inv);
	EXPECT_GEMM((f.p.a.ndim = 1, f.p.a.sizes[1] = 0, f.p.a.sizes[2] = 0,
		     f.p.a.strides[1] = 0, f.p.a.strides[2] = 0,
		     f.p.a.sizes[0] = 5),
		    inv);
	EXPECT_GEMM((f.p.a.ndim = 4, f.p.a.sizes[3] = 1), inv);
	/* batch 1 broadcasts; out without batch needs batch-1 operands */
	EXPECT_GEMM((f.p.a.sizes[0] = 1), VNPU_STATUS_OK);
	EXPECT_GEMM((f.p.out.ndim = 2, f.p.out.sizes[0] = 5,
		     f.p.out.sizes[1] = 6, f.p.out.sizes[2] = 0,
		     f.p.out.strides[0] = 6, f.p.out.strides[1] = 1,
		     f.p.out.strides[2] = 0),
		    inv);
	/* dtypes and formats */
	EXPECT_GEMM(f.p.a.dtype = VNPU_DTYPE_F16, inv);
	EXPECT_GEMM(f.p.b.dtype = VNPU_DTYPE_BF16, inv);
	EXPECT_GEMM(f.p.out.dtype = VNPU_DTYPE_F16, inv);
	EXPECT_GEMM(f.p.bias.dtype = VNPU_DTYPE_F16, inv);
	EXPECT_GEMM(f.p.bias.dtype = VNPU_DTYPE_I32, uns);
	EXPECT_GEMM((f.p.a.dtype = f.p.b.dtype = f.p.out.dtype =
			     f.p.bias.dtype = VNPU_DTYPE_I32),
		    uns);
	EXPECT_GEMM((f.p.a.dtype = f.p.b.dtype = f.p.out.dtype =
			     f.p.bias.dtype = VNPU_DTYPE_I8),
		    uns);
	EXPECT_GEMM(f.p.a.dtype = 99, uns);
	EXPECT_GEMM(f.p.out.format = VNPU_FORMAT_NC1HWC0, inv);
	EXPECT_GEMM(f.p.b.format = VNPU_FORMAT_NHWC, uns);
	EXPECT_GEMM(f.p.bias.format = VNPU_FORMAT_NCHW, uns);
	EXPECT_GEMM(f.p.b.format = 77, uns);
	/* descriptors against buffers */
	EXPECT_GEMM(f.bufs[0].size -= 1, inv);
	EXPECT_GEMM(f.bufs[2].size -= 4, inv);
	EXPECT_GEMM(f.bufs[3].size = 20, inv);
	EXPECT_GEMM(f.p.a.buffer = 4, inv);
	EXPECT_GEMM(f.p.out.offset = -1, inv);
	EXPECT_GEMM(f.p.out.offset = 1, inv);
	EXPECT_GEMM(f.p.b.strides[1] = -1, inv);
	EXPECT_GEMM(f.p.a.strides[5] = 1, inv);
	EXPECT_GEMM(f.p.out.sizes[4] = 1, inv);
	EXPECT_GEMM(f.p.a.strides[1] = INT64_MAX / 2, inv);
	EXPECT_GEMM(f.bufs[2].access = VNPU_ACCESS_READ, inv);
	EXPECT_GEMM(f.bufs[2].access = VNPU_ACCESS_WRITE, inv);
	EXPECT_GEMM((f.bufs[2].access = VNPU_ACCESS_WRITE, f.p.beta = 0.0f),
		    VNPU_STATUS_OK);
	EXPECT_GEMM(f.bufs[0].access = VNPU_ACCESS_WRITE, inv);
	EXPECT_GEMM(f.bufs[3].access = VNPU_ACCESS_WRITE, inv);
	/* an output whose elements overlap would let blocks race */
	EXPECT_GEMM(f.p.out.strides[2] = 0, inv);
	EXPECT_GEMM(f.p.out.strides[1] = 1, inv);
	/* an unused bias descriptor is not looked at */
	EXPECT_GEMM((f.p.has_bias = 0, f.p.bias.buffer = 99), VNPU_STATUS_OK);
	/* NZ strides must be zero; NZ storage must fit */
	EXPECT_GEMM(f.p.b.format = VNPU_FORMAT_FRACTAL_NZ, inv);
	EXPECT_GEMM((f.p.b.format = VNPU_FORMAT_FRACTAL_NZ,
		     f.p.b.strides[0] = f.p.b.strides[1] = 0),
		    inv);
	/* F64 is a vector-unit dtype only: the cube refuses it in any
	 * operand, plain or fractal */
	EXPECT_GEMM((grow_buffers(f.bufs, 4),
		     f.p.a.dtype = f.p.b.dtype = f.p.out.dtype =
			     f.p.bias.dtype = VNPU_DTYPE_F64),
		    uns);
	EXPECT_GEMM((grow_buffers(f.bufs, 4), f.p.a.dtype = VNPU_DTYPE_F64),
		    uns);
	EXPECT_GEMM((grow_buffers(f.bufs, 4), f.p.out.dtype = VNPU_DTYPE_F64),
		    uns);
	EXPECT_GEMM((grow_buffers(f.bufs, 4), f.p.bias.dtype = VNPU_DTYPE_F64),
		    uns);
	EXPECT_GEMM((grow_buffers(f.bufs, 4),
		     f.p.a.dtype = f.p.b.dtype = f.p.out.dtype =
			     f.p.bias.dtype = VNPU_DTYPE_F64,
		     f.p.b.format = VNPU_FORMAT_FRACTAL_NZ,
		     memset(f.p.b.strides, 0, sizeof(f.p.b.strides))),
		    uns);
}
END_TEST

/* NZ descriptors the validator accepts exactly when storage fits. */
START_TEST(test_gemm_validate_nz)
{
	const int64_t s[] = {17, 20};
	struct vnpu_kbuf bufs[3] = {kt_buffer(2 * 2 * 256 * 4),
				    kt_buffer(2 * 2 * 256 * 4),
				    kt_buffer(2 * 2 * 256 * 4)};
	struct vnpu_kp_gemm p;

	memset(&p, 0, sizeof(p));
	p.a = kt_tensor_fmt(0, VNPU_DTYPE_F32, VNPU_FORMAT_FRACTAL_NZ, 2, s);
	p.b = kt_tensor_fmt(1, VNPU_DTYPE_F32, VNPU_FORMAT_FRACTAL_NZ, 2, s);
	p.out = kt_tensor_fmt(2, VNPU_DTYPE_F32, VNPU_FORMAT_FRACTAL_NZ, 2, s);
	p.trans_b = 1;
	p.out.sizes[1] = 17;
	ck_assert_uint_eq(vnpu_kernel_gemm.validate(&p, bufs, 3),
			  VNPU_STATUS_OK);
	p.a.offset = 1;
	ck_assert_uint_eq(vnpu_kernel_gemm.validate(&p, bufs, 3),
			  VNPU_STATUS_INVALID_ARGS);
	p.a.offset = 0;
	bufs[1].size -= 4;
	ck_assert_uint_eq(vnpu_kernel_gemm.validate(&p, bufs, 3),
			  VNPU_STATUS_INVALID_ARGS);
	for (int i = 0; i < 3; i++)
		kt_free(&bufs[i]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* CONV2D                                                              */

struct conv_case {
	uint32_t dtype;
	int64_t n, c, h, w, cout, kh, kw;
	uint32_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
	bool has_bias;
	uint32_t act;
	uint32_t nblocks;
};

static int64_t nc1hwc0_at(int64_t c, int64_t h, int64_t w, int64_t n,
			  int64_t ci, int64_t y, int64_t x)
{
	return (((n * cdiv(c, 16) + ci / 16) * h + y) * w + x) * 16 + ci % 16;
}

static int64_t fz_at(int64_t nn, int64_t c, int64_t h, int64_t w, int64_t co,
		     int64_t ci, int64_t y, int64_t x)
{
	return (((((ci / 16) * h + y) * w + x) * cdiv(nn, 16) + co / 16) * 16 +
		co % 16) *
		       16 +
	       ci % 16;
}

static void run_conv_case(const struct conv_case *c)
{
	uint32_t dt = c->dtype;
	int64_t cg = c->c / c->groups, cog = c->cout / c->groups;
	int64_t ho = (c->h + 2 * c->pad_h - c->dil_h * (c->kh - 1) - 1) /
			     c->stride_h +
		     1;
	int64_t wo = (c->w + 2 * c->pad_w - c->dil_w * (c->kw - 1) - 1) /
			     c->stride_w +
		     1;
	int64_t in_st = c->n * cdiv(c->c, 16) * c->h * c->w * 16;
	int64_t w_st = cdiv(cg, 16) * c->kh * c->kw * cdiv(c->cout, 16) * 256;
	int64_t out_st = c->n * cdiv(c->cout, 16) * ho * wo * 16;
	int64_t nx = c->n * c->c * c->h * c->w;
	int64_t nw = c->cout * cg * c->kh * c->kw;
	double *vx = rand_values(dt, nx), *vw = rand_values(dt, nw);
	double *vbias = rand_values(dt, c->cout);
	const size_t slack = 32;
	struct vnpu_kbuf bufs[4];
	struct vnpu_kp_conv2d p;
	char *flag;
	char name[300];
	uint32_t st;

	snprintf(name, sizeof(name),
		 "dtype %u N %ld C %ld H %ld W %ld Cout %ld k %ldx%ld s %u,%u "
		 "p %u,%u d %u,%u g %u bias %d act %u blocks %u",
		 dt, (long)c->n, (long)c->c, (long)c->h, (long)c->w,
		 (long)c->cout, (long)c->kh, (long)c->kw, c->stride_h,
		 c->stride_w, c->pad_h, c->pad_w, c->dil_h, c->dil_w, c->groups,
		 c->has_bias, c->act, c->nblocks);
	bufs[0] = kt_buffer((uint64_t)in_st * isize(dt));
	bufs[1] = kt_buffer((uint64_t)w_st * isize(dt));
	bufs[2] = kt_buffer((uint64_t)out_st * isize(dt) + slack);
	bufs[3] = kt_buffer((uint64_t)c->cout * isize(dt) + 1);
	bufs[2].size -= slack;
	for (int64_t e = 0; e < in_st; e++)
		set_elem(&bufs[0], dt, e, NAN);
	for (int64_t e = 0; e < w_st; e++)
		set_elem(&bufs[1], dt, e, NAN);
	for (int64_t n = 0; n < c->n; n++)
		for (int64_t ci = 0; ci < c->c; ci++)
			for (int64_t y = 0; y < c->h; y++)
				for (int64_t x = 0; x < c->w; x++)
					set_elem(&bufs[0], dt,
						 nc1hwc0_at(c->c, c->h, c->w, n,
							    ci, y, x),
						 vx[((n * c->c + ci) * c->h +
						     y) * c->w +
						    x]);
	for (int64_t co = 0; co < c->cout; co++)
		for (int64_t ci = 0; ci < cg; ci++)
			for (int64_t y = 0; y < c->kh; y++)
				for (int64_t x = 0; x < c->kw; x++)
					set_elem(&bufs[1], dt,
						 fz_at(c->cout, cg, c->kh,
						       c->kw, co, ci, y, x),
						 vw[((co * cg + ci) * c->kh +
						     y) * c->kw +
						    x]);
	for (int64_t co = 0; co < c->cout; co++)
		set_elem(&bufs[3], dt, co, vbias[co]);

	memset(&p, 0, sizeof(p));
	p.stride_h = c->stride_h;
	p.stride_w = c->stride_w;
	p.pad_h = c->pad_h;
	p.pad_w = c->pad_w;
	p.dil_h = c->dil_h;
	p.dil_w = c->dil_w;
	p.groups = c->groups;
	p.has_bias = c->has_bias;
	p.activation = c->act;
	{
		const int64_t si[] = {c->n, c->c, c->h, c->w};
		const int64_t sw[] = {c->cout, cg, c->kh, c->kw};
		const int64_t so[] = {c->n, c->cout, ho, wo};
		const int64_t sb[] = {c->cout};

		p.input = kt_tensor_fmt(0, dt, VNPU_FORMAT_NC1HWC0, 4, si);
		p.weight = kt_tensor_fmt(1, dt, VNPU_FORMAT_FRACTAL_Z, 4, sw);
		p.out = kt_tensor_fmt(2, dt, VNPU_FORMAT_NC1HWC0, 4, so);
		p.bias = kt_tensor(3, dt, 1, sb, NULL);
	}
	st = kt_launch(VNPU_KERNEL_CONV2D, &p, bufs, 4, c->nblocks);
	ck_assert_msg(st == VNPU_STATUS_OK, "status %u: %s", st, name);

	flag = calloc((size_t)out_st + 1, 1);
	ck_assert_ptr_nonnull(flag);
	for (int64_t n = 0; n < c->n; n++)
		for (int64_t co = 0; co < c->cout; co++)
			for (int64_t oy = 0; oy < ho; oy++)
				for (int64_t ox = 0; ox < wo; ox++) {
					int64_t g = co / cog;
					double sum = 0, mag = 0, ref, got;
					int64_t at = nc1hwc0_at(c->cout, ho, wo,
								n, co, oy, ox);

					for (int64_t ci = 0; ci < cg; ci++)
						for (int64_t y = 0; y < c->kh;
						     y++)
							for (int64_t x = 0;
							     x < c->kw; x++) {
								int64_t iy =
									oy * c->stride_h -
									c->pad_h +
									y * c->dil_h;
								int64_t ix =
									ox * c->stride_w -
									c->pad_w +
									x * c->dil_w;
								double a, b;

								if (iy < 0 ||
								    iy >= c->h ||
								    ix < 0 ||
								    ix >= c->w)
									continue;
								a = vx[((n * c->c +
									 g * cg +
									 ci) * c->h +
									iy) * c->w +
								       ix];
								b = vw[((co * cg +
									 ci) * c->kh +
									y) * c->kw +
								       x];
								sum += a * b;
								mag += fabs(a *
									    b);
							}
					if (c->has_bias) {
						sum += vbias[co];
						mag += fabs(vbias[co]);
					}
					ref = ref_act(c->act, sum);
					got = get_elem(&bufs[2], dt, at);
					flag[at] = 1;
					ck_assert_msg(
						fabs(got - ref) <=
							tolerance(dt, ref, mag),
						"out[%ld][%ld][%ld][%ld] = %g, "
						"want %g: %s",
						(long)n, (long)co, (long)oy,
						(long)ox, got, ref, name);
				}
	for (int64_t e = 0; e < out_st; e++)
		if (!flag[e])
			ck_assert_msg(get_elem(&bufs[2], dt, e) == 0.0,
				      "channel padding %ld not zero: %s",
				      (long)e, name);
	for (size_t e = 0; e < slack; e++)
		ck_assert_msg(((unsigned char *)bufs[2]
				       .ptr)[out_st * isize(dt) + e] == 0xa5,
			      "write past the output: %s", name);
	free(flag);
	for (int i = 0; i < 4; i++)
		kt_free(&bufs[i]);
	free(vx);
	free(vw);
	free(vbias);
}

START_TEST(test_conv_cases)
{
	/* dtype, N, C, H, W, Cout, KH, KW, s, s, p, p, d, d, groups */
	static const struct conv_case cases[] = {
		{VNPU_DTYPE_F32, 2, 3, 9, 8, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1,
		 false, 0, 0},
		{VNPU_DTYPE_F32, 1, 20, 11, 10, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1,
		 false, 0, 0},
		{VNPU_DTYPE_F16, 2, 18, 7, 9, 6, 3, 2, 1, 2, 0, 1, 2, 2, 2,
		 false, 0, 0},
		{VNPU_DTYPE_BF16, 1, 32, 8, 8, 16, 1, 1, 1, 1, 0, 0, 1, 1, 2,
		 false, 0, 0},
		/* depthwise, multiplier 1 and 2 */
		{VNPU_DTYPE_F32, 2, 17, 10, 9, 17, 3, 3, 1, 1, 1, 1, 1, 1, 17,
		 false, 0, 0},
		{VNPU_DTYPE_F16, 1, 5, 9, 12, 10, 3, 3, 2, 2, 1, 1, 2, 1, 5,
		 false, 0, 0},
		{VNPU_DTYPE_BF16, 1, 16, 6, 6, 16, 5, 5, 1, 1, 2, 2, 1, 1, 16,
		 false, 0, 0},
		/* dilation 2 with large padding, asymmetric kernel */
		{VNPU_DTYPE_F32, 1, 7, 6, 13, 9, 2, 5, 1, 3, 3, 2, 2, 2, 1,
		 false, 0, 0},
		/* kernel exactly the padded input; 1x1 output */
		{VNPU_DTYPE_F32, 3, 4, 3, 3, 5, 5, 5, 1, 1, 1, 1, 1, 1, 1,
		 false, 0, 0},
		/* deep reduction: several K blocks (K = 30*9 = 270 > 256) */
		{VNPU_DTYPE_F32, 1, 30, 5, 5, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1,
		 false, 0, 0},
		/* more pixels than one workspace block (MB 384) */
		{VNPU_DTYPE_F16, 1, 3, 24, 20, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1,
		 false, 0, 0},
		/* output rows longer than the direct path's 256 segment */
		{VNPU_DTYPE_F16, 1, 2, 2, 300, 4, 1, 3, 1, 1, 0, 1, 1, 1, 2,
		 false, 0, 0},
		{VNPU_DTYPE_F32, 1, 3, 3, 530, 3, 2, 3, 1, 2, 1, 1, 1, 2, 3,
		 false, 0, 0},
		/* few output channels per group (direct path), C per group 5 */
		{VNPU_DTYPE_BF16, 2, 10, 6, 7, 4, 3, 3, 2, 1, 1, 1, 1, 1, 2,
		 false, 0, 0},
		/* empty batch and empty channels */
		{VNPU_DTYPE_F32, 0, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1,
		 false, 0, 0},
		{VNPU_DTYPE_F32, 1, 0, 5, 5, 8, 3, 3, 1, 1, 0, 0, 1, 1, 1,
		 false, 0, 0},
		{VNPU_DTYPE_F32, 1, 4, 5, 5, 0, 3, 3, 1, 1, 0, 0, 1, 1, 1,
		 false, 0, 0},
	};

	kt_seed(4242);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conv_case c = cases[i];

		c.has_bias = i % 2 == 0;
		c.act = (uint32_t)(i % 6);
		c.nblocks = block_counts[i % N_BLOCK_COUNTS];
		run_conv_case(&c);
		c.nblocks = block_counts[(i + 1) % N_BLOCK_COUNTS];
		run_conv_case(&c);
	}
}
END_TEST

START_TEST(test_conv_random)
{
	kt_seed(900);
	for (int it = 0; it < 40; it++) {
		struct conv_case c;

		memset(&c, 0, sizeof(c));
		c.dtype = float_dtypes[it % 3];
		c.groups = (uint32_t)kt_rand_range(1, 3);
		c.n = kt_rand_range(1, 2);
		c.c = c.groups * kt_rand_range(1, 12);
		c.cout = c.groups * kt_rand_range(1, 12);
		c.kh = kt_rand_range(1, 4);
		c.kw = kt_rand_range(1, 4);
		c.stride_h = (uint32_t)kt_rand_range(1, 3);
		c.stride_w = (uint32_t)kt_rand_range(1, 3);
		c.dil_h = (uint32_t)kt_rand_range(1, 2);
		c.dil_w = (uint32_t)kt_rand_range(1, 2);
		c.pad_h = (uint32_t)kt_rand_range(0, 2);
		c.pad_w = (uint32_t)kt_rand_range(0, 2);
		c.h = c.dil_h * (c.kh - 1) + kt_rand_range(1, 9) - 2 * c.pad_h;
		c.w = c.dil_w * (c.kw - 1) + kt_rand_range(1, 9) - 2 * c.pad_w;
		if (c.h < 1)
			c.h = 1 + c.dil_h * (c.kh - 1);
		if (c.w < 1)
			c.w = 1 + c.dil_w * (c.kw - 1);
		c.has_bias = kt_rand() % 2;
		c.act = kt_rand() % 6;
		c.nblocks = block_counts[kt_rand() % N_BLOCK_COUNTS];
		run_conv_case(&c);
	}
}
END_TEST

/* The out-of-memory path of the GEMM core: one on-stack micro-panel per
 * operand, for GEMM and the implicit-GEMM conv. */
START_TEST(test_stack_blocking)
{
	static const struct conv_case conv = {VNPU_DTYPE_F32,
					      1,
					      40,
					      7,
					      9,
					      35,
					      3,
					      3,
					      1,
					      1,
					      1,
					      1,
					      1,
					      1,
					      1,
					      true,
					      VNPU_ACT_RELU,
					      3};

	kt_seed(606);
	vnpu_gemm_force_stack_blocking(true);
	for (int it = 0; it < 20; it++) {
		struct gemm_case c = random_case(float_dtypes[it % 3], 90);

		run_gemm_case(&c);
	}
	run_conv_case(&conv);
	vnpu_gemm_force_stack_blocking(false);
}
END_TEST

/* Blocks of one launch on several threads at once, as the device runs
 * them: each thread has its own packing buffers and tiles are disjoint,
 * so the result matches a one-block run. */
struct block_worker {
	pthread_t thread;
	const struct vnpu_kernel_def *kernel;
	const void *params;
	const struct vnpu_kbuf *bufs;
	uint32_t first, step, nblocks;
};

static void *block_worker_main(void *arg)
{
	struct block_worker *w = arg;

	for (uint32_t b = w->first; b < w->nblocks; b += w->step)
		w->kernel->run(w->params, w->bufs, b, w->nblocks);
	return NULL;
}

/* The blocks of one launch on `threads` concurrent workers, as the
 * device's cores run them. */
static void run_threaded(const struct vnpu_kernel_def *k, const void *params,
			 const struct vnpu_kbuf *bufs, uint32_t threads,
			 uint32_t nblocks)
{
	struct block_worker w[8];

	ck_assert_uint_le(threads, 8);
	for (uint32_t t = 0; t < threads; t++) {
		w[t] = (struct block_worker){.kernel = k,
					     .params = params,
					     .bufs = bufs,
					     .first = t,
					     .step = threads,
					     .nblocks = nblocks};
		ck_assert_int_eq(pthread_create(&w[t].thread, NULL,
						block_worker_main, &w[t]),
				 0);
	}
	for (uint32_t t = 0; t < threads; t++)
		pthread_join(w[t].thread, NULL);
}

static void expect_close_f32(const float *got, const float *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(fabsf(got[i] - want[i]) <=
				      1e-5f * (1.0f + fabsf(want[i])),
			      "element %zu: %g vs %g", i, got[i], want[i]);
}

START_TEST(test_threads)
{
	const int64_t sa[] = {3, 130, 300}, sb[] = {300, 150};
	const int64_t so[] = {3, 130, 150};
	struct vnpu_kbuf g[3] = {kt_buffer(3 * 130 * 300 * 4),
				 kt_buffer(300 * 150 * 4),
				 kt_buffer(3 * 144 * 160 * 4)};
	struct vnpu_kp_gemm p;
	float *want;
	size_t out_n = 3 * 144 * 160;

	kt_seed(321);
	for (size_t i = 0; i < 3 * 130 * 300; i++)
		((float *)g[0].ptr)[i] = kt_rand_float(-1, 1);
	for (size_t i = 0; i < 300 * 150; i++)
		((float *)g[1].ptr)[i] = kt_rand_float(-1, 1);
	memset(&p, 0, sizeof(p));
	p.a = kt_tensor(0, VNPU_DTYPE_F32, 3, sa, NULL);
	p.b = kt_tensor(1, VNPU_DTYPE_F32, 2, sb, NULL);
	p.alpha = 1.0f;
	p.activation = VNPU_ACT_GELU;
	for (int nz = 0; nz < 2; nz++) {
		p.out = nz ? kt_tensor_fmt(2, VNPU_DTYPE_F32,
					   VNPU_FORMAT_FRACTAL_NZ, 3, so)
			   : kt_tensor(2, VNPU_DTYPE_F32, 3, so, NULL);
		ck_assert_uint_eq(kt_launch(VNPU_KERNEL_GEMM, &p, g, 3, 1),
				  VNPU_STATUS_OK);
		want = malloc(out_n * 4);
		ck_assert_ptr_nonnull(want);
		memcpy(want, g[2].ptr, out_n * 4);
		/* one block per core on 1, 2, 3 and 7 cores, and more
		 * blocks than cores */
		for (size_t c = 0; c < N_BLOCK_COUNTS; c++) {
			memset(g[2].ptr, 0xa5, out_n * 4);
			run_threaded(&vnpu_kernel_gemm, &p, g, block_counts[c],
				     block_counts[c]);
			expect_close_f32(g[2].ptr, want, out_n);
		}
		memset(g[2].ptr, 0xa5, out_n * 4);
		run_threaded(&vnpu_kernel_gemm, &p, g, 3, 64);
		expect_close_f32(g[2].ptr, want, out_n);
		free(want);
	}
	for (int i = 0; i < 3; i++)
		kt_free(&g[i]);
}
END_TEST

struct conv_fixture {
	struct vnpu_kbuf bufs[4];
	struct vnpu_kp_conv2d p;
};

/* Valid: input [2,6,8,8], weight [4,3,3,3], groups 2, stride 2, pad 1 ->
 * out [2,4,4,4]; bias [4]; F32. */
static void conv_fixture_init(struct conv_fixture *f)
{
	const int64_t si[] = {2, 6, 8, 8}, sw[] = {4, 3, 3, 3};
	const int64_t so[] = {2, 4, 4, 4}, sb[] = {4};

	f->bufs[0] = kt_buffer(2 * 1 * 8 * 8 * 16 * 4);
	f->bufs[1] = kt_buffer(1 * 3 * 3 * 1 * 16 * 16 * 4);
	f->bufs[2] = kt_buffer(2 * 1 * 4 * 4 * 16 * 4);
	f->bufs[3] = kt_buffer(4 * 4);
	memset(&f->p, 0, sizeof(f->p));
	f->p.stride_h = f->p.stride_w = 2;
	f->p.pad_h = f->p.pad_w = 1;
	f->p.dil_h = f->p.dil_w = 1;
	f->p.groups = 2;
	f->p.has_bias = 1;
	f->p.input =
		kt_tensor_fmt(0, VNPU_DTYPE_F32, VNPU_FORMAT_NC1HWC0, 4, si);
	f->p.weight =
		kt_tensor_fmt(1, VNPU_DTYPE_F32, VNPU_FORMAT_FRACTAL_Z, 4, sw);
	f->p.out = kt_tensor_fmt(2, VNPU_DTYPE_F32, VNPU_FORMAT_NC1HWC0, 4, so);
	f->p.bias = kt_tensor(3, VNPU_DTYPE_F32, 1, sb, NULL);
}

static void conv_fixture_free(struct conv_fixture *f)
{
	for (int i = 0; i < 4; i++)
		kt_free(&f->bufs[i]);
}

#define EXPECT_CONV(mutation, status)                                          \
	do {                                                                   \
		struct conv_fixture f;                                         \
		uint32_t got_;                                                 \
		conv_fixture_init(&f);                                         \
		mutation;                                                      \
		got_ = vnpu_kernel_conv2d.validate(&f.p, f.bufs, 4);           \
		ck_assert_msg(got_ == (status), "%s: got %u want %u",          \
			      #mutation, got_, (uint32_t)(status));            \
		conv_fixture_free(&f);                                         \
	} while (0)

START_TEST(test_conv_validate)
{
	const uint32_t inv = VNPU_STATUS_INVALID_ARGS;
	const uint32_t uns = VNPU_STATUS_UNSUPPORTED;

	ck_assert_ptr_eq(vnpu_kernel_find(VNPU_KERNEL_CONV2D),
			 &vnpu_kernel_conv2d);
	ck_assert_ptr_eq(vnpu_kernel_find_name("conv2d"), &vnpu_kernel_conv2d);
	ck_assert_uint_eq(vnpu_kernel_conv2d.params_size,
			  sizeof(struct vnpu_kp_conv2d));
	EXPECT_CONV((void)0, VNPU_STATUS_OK);
	EXPECT_CONV(f.p.stride_h = 0, inv);
	EXPECT_CONV(f.p.stride_w = 0, inv);
	EXPECT_CONV(f.p.dil_h = 0, inv);
	EXPECT_CONV(f.p.dil_w = 0, inv);
	EXPECT_CONV(f.p.groups = 0, inv);
	EXPECT_CONV(f.p.groups = 4, inv); /* does not divide C = 6 */
	EXPECT_CONV(f.p.groups = 3, inv); /* nor Cout = 4 */
	EXPECT_CONV(f.p.groups = 1, inv); /* weight C must be 6 then */
	EXPECT_CONV(f.p.has_bias = 2, inv);
	EXPECT_CONV(f.p.activation = VNPU_ACT_TANH + 1, inv);
	EXPECT_CONV(f.p.reserved = 1, inv);
	EXPECT_CONV(f.p.out.sizes[2] = 5, inv);
	EXPECT_CONV(f.p.out.sizes[3] = 3, inv);
	EXPECT_CONV(f.p.out.sizes[1] = 2, inv);
	EXPECT_CONV(f.p.out.sizes[0] = 1, inv);
	EXPECT_CONV(f.p.stride_h = 1, inv); /* out would be 8 rows */
	EXPECT_CONV(f.p.pad_w = 0, inv);    /* out would be 3 cols */
	EXPECT_CONV(f.p.bias.sizes[0] = 3, inv);
	EXPECT_CONV(f.p.weight.sizes[1] = 2, inv);
	EXPECT_CONV(f.p.weight.sizes[2] = 0, inv);
	/* kernel larger than the padded input: no output size */
	EXPECT_CONV((f.p.dil_h = 5, f.p.out.sizes[2] = 0), inv);
	EXPECT_CONV((f.p.dil_h = 0x7fffffff), inv);
	EXPECT_CONV(f.p.input.format = VNPU_FORMAT_NCHW, uns);
	EXPECT_CONV(f.p.weight.format = VNPU_FORMAT_NC1HWC0, uns);
	EXPECT_CONV(f.p.out.format = VNPU_FORMAT_ND, uns);
	EXPECT_CONV(f.p.bias.format = VNPU_FORMAT_NCHW, uns);
	EXPECT_CONV(f.p.input.dtype = VNPU_DTYPE_F16, inv);
	EXPECT_CONV(f.p.weight.dtype = VNPU_DTYPE_F16, inv);
	EXPECT_CONV(f.p.bias.dtype = VNPU_DTYPE_BF16, inv);
	EXPECT_CONV((f.p.input.dtype = f.p.weight.dtype = f.p.out.dtype =
			     f.p.bias.dtype = VNPU_DTYPE_I8),
		    uns);
	EXPECT_CONV(f.bufs[0].size -= 1, inv);
	EXPECT_CONV(f.bufs[1].size -= 4, inv);
	EXPECT_CONV(f.bufs[2].size -= 4, inv);
	EXPECT_CONV(f.bufs[3].size -= 4, inv);
	EXPECT_CONV(f.bufs[2].access = VNPU_ACCESS_READ, inv);
	EXPECT_CONV(f.bufs[0].access = VNPU_ACCESS_WRITE, inv);
	EXPECT_CONV(f.p.out.buffer = 9, inv);
	EXPECT_CONV(f.p.input.strides[0] = 1, inv);
	EXPECT_CONV((f.p.has_bias = 0, f.p.bias.buffer = 9), VNPU_STATUS_OK);
	/* F64: no fractal geometry, and the cube does not take it */
	EXPECT_CONV((grow_buffers(f.bufs, 4),
		     f.p.input.dtype = f.p.weight.dtype = f.p.out.dtype =
			     f.p.bias.dtype = VNPU_DTYPE_F64),
		    uns);
	EXPECT_CONV((grow_buffers(f.bufs, 4), f.p.bias.dtype = VNPU_DTYPE_F64),
		    uns);
	EXPECT_CONV((grow_buffers(f.bufs, 4), f.p.input.dtype = VNPU_DTYPE_F64),
		    uns);
}
END_TEST

/* Empty tensors leave sizes no buffer bounds: huge N with zero channels,
 * a huge kernel over zero input channels. Nothing may overflow or loop. */
START_TEST(test_conv_empty_extremes)
{
	struct conv_fixture f;
	const int64_t big = (int64_t)1 << 40;

	conv_fixture_init(&f);
	f.p.groups = 1;
	f.p.input.sizes[0] = big;
	f.p.input.sizes[1] = 0;
	f.p.weight.sizes[0] = 0;
	f.p.weight.sizes[1] = 0;
	f.p.out.sizes[0] = big;
	f.p.out.sizes[1] = 0;
	f.p.has_bias = 0;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CONV2D, &f.p, f.bufs, 4, 3),
			  VNPU_STATUS_OK);
	conv_fixture_free(&f);

	/* C = 0, Cout = 4: out = act(bias) whatever the kernel size (the
	 * tensor layer bounds KH * KW of FRACTAL_Z below 2^63) */
	conv_fixture_init(&f);
	f.p.groups = 1;
	f.p.stride_h = f.p.stride_w = 1;
	f.p.pad_h = f.p.pad_w = 0;
	f.p.input.sizes[0] = 1;
	f.p.input.sizes[1] = 0;
	f.p.input.sizes[2] = (int64_t)1 << 31;
	f.p.input.sizes[3] = (int64_t)1 << 31;
	f.p.weight.sizes[1] = 0;
	f.p.weight.sizes[2] = (int64_t)1 << 31;
	f.p.weight.sizes[3] = (int64_t)1 << 31;
	f.p.out.sizes[0] = 1;
	f.p.out.sizes[2] = 1;
	f.p.out.sizes[3] = 1;
	f.p.activation = VNPU_ACT_RELU;
	for (int i = 0; i < 4; i++)
		((float *)f.bufs[3].ptr)[i] = (float)i - 1.5f;
	ck_assert_uint_eq(kt_launch(VNPU_KERNEL_CONV2D, &f.p, f.bufs, 4, 7),
			  VNPU_STATUS_OK);
	for (int i = 0; i < 16; i++)
		ck_assert_float_eq(((float *)f.bufs[2].ptr)[i],
				   i < 4 && i > 1 ? (float)i - 1.5f : 0.0f);
	conv_fixture_free(&f);
}
END_TEST

static Suite *gemm_conv_suite(void)
{
	Suite *s = suite_create("gemm-conv");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_gemm_random, 0, 6);
	tcase_add_loop_test(tc, test_gemm_isa, 0, 4);
	tcase_add_test(tc, test_gemm_large);
	tcase_add_test(tc, test_store_runs_exact);
	tcase_add_test(tc, test_stack_blocking);
	tcase_add_test(tc, test_gemm_misaligned);
	tcase_add_test(tc, test_gemm_beta_zero_ignores_out);
	tcase_add_test(tc, test_gemm_nz_all);
	tcase_add_test(tc, test_gemm_validate);
	tcase_add_test(tc, test_gemm_validate_nz);
	tcase_add_test(tc, test_conv_cases);
	tcase_add_test(tc, test_conv_random);
	tcase_add_test(tc, test_conv_validate);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_conv_empty_extremes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gemm_conv_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
