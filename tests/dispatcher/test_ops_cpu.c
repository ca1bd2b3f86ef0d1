// SPDX-License-Identifier: MIT
/*
 * The CPU reference kernels of the kernels helper against straightforward
 * double references written here (convolution in gather form, pooling,
 * norms, softmax, losses, reductions with NaN, indexing), dtype promotion
 * and error messages, and every backward op against central finite
 * differences in float64.
 */
#include <math.h>

#include "ops_test_util.h"

static struct vnpu_at_tensor *f64(uint32_t nd, const int64_t *sizes, double lo,
				  double hi, enum ot_layout layout)
{
	return ot_rand(nd, sizes, VNPU_AT_F64, lo, hi, layout);
}

static int64_t numel_of(uint32_t nd, const int64_t *s)
{
	int64_t n = 1;

	for (uint32_t i = 0; i < nd; i++)
		n *= s[i];
	return n;
}

/* A contiguous f64 CPU tensor holding ref[] (row-major). */
static struct vnpu_at_tensor *from_ref(uint32_t nd, const int64_t *sizes,
				       const double *ref)
{
	struct vnpu_at_tensor *t = vnpu_at_empty(nd, sizes, VNPU_AT_F64,
						 VNPU_AT_DEV_CPU);

	ck_assert_ptr_nonnull(t);
	if (numel_of(nd, sizes))
		memcpy(vnpu_at_data(t), ref,
		       (size_t)numel_of(nd, sizes) * sizeof(double));
	return t;
}

static void expect_ref(const char *what, struct vnpu_at_tensor *got,
		       uint32_t nd, const int64_t *sizes, const double *ref,
		       double tol)
{
	struct vnpu_at_tensor *want = from_ref(nd, sizes, ref);

	ot_expect_close(what, want, got, tol, tol);
	vnpu_at_release(want);
}

static void expect_error(const char *what, void *r, const char *needle)
{
	ck_assert_msg(r == NULL, "%s: expected an error", what);
	ck_assert_msg(strstr(vnpu_at_error_message(), needle) != NULL,
		      "%s: message '%s' lacks '%s'", what,
		      vnpu_at_error_message(), needle);
	vnpu_at_error_clear();
}

/* ---- convolution: gather-form reference --------------------------------------- */

START_TEST(convolution_reference)
{
	static const struct {
		int64_t in[4], w[4];
		int64_t s[2], p[2], d[2], groups;
		bool transposed, bias;
		int64_t op;
	} cs[] = {
		{ { 2, 4, 7, 9 }, { 6, 2, 3, 2 }, { 2, 1 }, { 1, 0 }, { 1, 2 }, 2, false, true, 0 },
		{ { 1, 3, 15, 17 }, { 5, 3, 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, false, false, 0 },
		{ { 2, 4, 5, 6 }, { 4, 3, 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 1, true, true, 1 },
		{ { 1, 4, 4, 5 }, { 4, 1, 2, 3 }, { 1, 2 }, { 0, 1 }, { 2, 1 }, 2, true, false, 0 },
	};

	ot_seed(1);
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		struct vnpu_at_tensor *x = f64(4, cs[c].in, -1, 1, c % 2 ? OT_STRIDED : OT_CONTIG);
		struct vnpu_at_tensor *w = f64(4, cs[c].w, -1, 1, OT_TRANSPOSED);
		int64_t N = cs[c].in[0], C = cs[c].in[1], H = cs[c].in[2], W = cs[c].in[3];
		int64_t KH = cs[c].w[2], KW = cs[c].w[3], G = cs[c].groups;
		int64_t CO, HO, WO, cin_g, cout_g, osz[4];
		struct vnpu_at_tensor *b = NULL, *got;
		double *ref;

		if (!cs[c].transposed) {
			CO = cs[c].w[0];
			cin_g = cs[c].w[1];
			cout_g = CO / G;
			HO = (H + 2 * cs[c].p[0] - cs[c].d[0] * (KH - 1) - 1) / cs[c].s[0] + 1;
			WO = (W + 2 * cs[c].p[1] - cs[c].d[1] * (KW - 1) - 1) / cs[c].s[1] + 1;
		} else {
			cin_g = C / G;
			cout_g = cs[c].w[1];
			CO = cout_g * G;
			HO = (H - 1) * cs[c].s[0] - 2 * cs[c].p[0] + cs[c].d[0] * (KH - 1) + cs[c].op + 1;
			WO = (W - 1) * cs[c].s[1] - 2 * cs[c].p[1] + cs[c].d[1] * (KW - 1) + cs[c].op + 1;
		}
		if (cs[c].bias)
			b = f64(1, &CO, -1, 1, OT_STRIDED);
		osz[0] = N;
		osz[1] = CO;
		osz[2] = HO;
		osz[3] = WO;
		ref = calloc((size_t)numel_of(4, osz), sizeof(double));
		for (int64_t n = 0; n < N; n++)
		for (int64_t co = 0; co < CO; co++)
		for (int64_t oh = 0; oh < HO; oh++)
		for (int64_t ow = 0; ow < WO; ow++) {
			int64_t g = co / cout_g;
			double acc = b ? ot_get(b, (int64_t[]){ co }) : 0;

			for (int64_t ci = 0; ci < cin_g; ci++)
			for (int64_t kh = 0; kh < KH; kh++)
			for (int64_t kw = 0; kw < KW; kw++) {
				int64_t c_in = g * cin_g + ci, ih, iw;
				double wv;

				if (!cs[c].transposed) {
					ih = oh * cs[c].s[0] - cs[c].p[0] + kh * cs[c].d[0];
					iw = ow * cs[c].s[1] - cs[c].p[1] + kw * cs[c].d[1];
					wv = ot_get(w, (int64_t[]){ co, ci, kh, kw });
				} else {
					int64_t th = oh + cs[c].p[0] - kh * cs[c].d[0];
					int64_t tw = ow + cs[c].p[1] - kw * cs[c].d[1];

					if (th % cs[c].s[0] || tw % cs[c].s[1])
						continue;
					ih = th / cs[c].s[0];
					iw = tw / cs[c].s[1];
					wv = ot_get(w, (int64_t[]){ c_in, co % cout_g, kh, kw });
				}
				if (ih < 0 || iw < 0 || ih >= H || iw >= W)
					continue;
				acc += wv * ot_get(x, (int64_t[]){ n, c_in, ih, iw });
			}
			ref[((n * CO + co) * HO + oh) * WO + ow] = acc;
		}
		got = vnpu_op_convolution(x, w, b, (struct vnpu_at_int_array){ cs[c].s, 2 },
					  (struct vnpu_at_int_array){ cs[c].p, 2 },
					  (struct vnpu_at_int_array){ cs[c].d, 2 },
					  cs[c].transposed,
					  (struct vnpu_at_int_array){ &cs[c].op, 1 }, G);
		expect_ref("convolution", got, 4, osz, ref, 1e-12);
		free(ref);
		vnpu_at_release(got);
		vnpu_at_release(x);
		vnpu_at_release(w);
		vnpu_at_release(b);
	}
	/* 1-D convolution is 2-D with height 1 */
	{
		int64_t xs[3] = { 2, 3, 17 }, ws[3] = { 4, 3, 5 };
		struct vnpu_at_tensor *x = f64(3, xs, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *w = f64(3, ws, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *got = vnpu_op_convolution(x, w, NULL, VNPU_AT_INTS(2),
			VNPU_AT_INTS(2), VNPU_AT_INTS(1), false, VNPU_AT_INTS(0), 1);
		int64_t osz[3] = { 2, 4, 9 };
		double ref[2 * 4 * 9];

		for (int64_t n = 0; n < 2; n++)
		for (int64_t co = 0; co < 4; co++)
		for (int64_t o = 0; o < 9; o++) {
			double acc = 0;

			for (int64_t ci = 0; ci < 3; ci++)
				for (int64_t k = 0; k < 5; k++) {
					int64_t i = o * 2 - 2 + k;

					if (i >= 0 && i < 17)
						acc += ot_get(x, (int64_t[]){ n, ci, i }) *
						       ot_get(w, (int64_t[]){ co, ci, k });
				}
			ref[(n * 4 + co) * 9 + o] = acc;
		}
		expect_ref("conv1d", got, 3, osz, ref, 1e-12);
		vnpu_at_release(got);
		expect_error("conv channels", vnpu_op_convolution(x, w, NULL,
			VNPU_AT_INTS(1), VNPU_AT_INTS(0), VNPU_AT_INTS(1), false,
			VNPU_AT_INTS(0), 3), "aten::convolution: Given groups=3");
		vnpu_at_release(x);
		vnpu_at_release(w);
	}
}
END_TEST

/* ---- pooling ---------------------------------------------------------------------------- */

START_TEST(pooling_reference)
{
	int64_t xs[4] = { 2, 3, 15, 17 };
	struct vnpu_at_tensor *x = f64(4, xs, -2, 2, OT_TRANSPOSED);

	ot_seed(2);
	for (int cfg = 0; cfg < 3; cfg++) {
		int64_t k = 3, s = 2, p = cfg == 2 ? 0 : 1, d = cfg == 1 ? 2 : 1;
		bool ceil = cfg != 1;
		int64_t HO, WO, osz[4];
		struct vnpu_ret_max_pool2d_with_indices r;
		double *vals, *idx;

		/* PyTorch's output size: floor (or ceil) of the window count,
		 * a last window starting in the right padding dropped */
		HO = (15 + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0)) / s + 1;
		WO = (17 + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0)) / s + 1;
		if (ceil && (HO - 1) * s >= 15 + p)
			HO--;
		if (ceil && (WO - 1) * s >= 17 + p)
			WO--;
		osz[0] = 2;
		osz[1] = 3;
		osz[2] = HO;
		osz[3] = WO;
		vals = malloc(sizeof(double) * (size_t)numel_of(4, osz));
		idx = malloc(sizeof(double) * (size_t)numel_of(4, osz));
		for (int64_t n = 0; n < 2; n++)
		for (int64_t c = 0; c < 3; c++)
		for (int64_t oh = 0; oh < HO; oh++)
		for (int64_t ow = 0; ow < WO; ow++) {
			double best = -INFINITY, bi = -1;

			for (int64_t i = 0; i < k; i++)
				for (int64_t j = 0; j < k; j++) {
					int64_t h = oh * s - p + i * d, w = ow * s - p + j * d;
					double v;

					if (h < 0 || w < 0 || h >= 15 || w >= 17)
						continue;
					v = ot_get(x, (int64_t[]){ n, c, h, w });
					if (bi < 0 || v > best) {
						best = v;
						bi = (double)(h * 17 + w);
					}
				}
			vals[((n * 3 + c) * HO + oh) * WO + ow] = best;
			idx[((n * 3 + c) * HO + oh) * WO + ow] = bi;
		}
		r = vnpu_op_max_pool2d_with_indices(x, (struct vnpu_at_int_array){ &k, 1 },
			(struct vnpu_at_int_array){ &s, 1 }, (struct vnpu_at_int_array){ &p, 1 },
			(struct vnpu_at_int_array){ &d, 1 }, ceil);
		expect_ref("max_pool2d", r.r0, 4, osz, vals, 0);
		ck_assert_int_eq(r.r1->dtype, VNPU_AT_I64);
		for (int64_t i = 0; i < numel_of(4, osz); i++)
			ck_assert_int_eq((int64_t)ot_flat(r.r1, i), (int64_t)idx[i]);
		vnpu_at_release(r.r0);
		vnpu_at_release(r.r1);

		if (d == 1) {
			for (int cip = 0; cip < 2; cip++) {
				struct vnpu_at_tensor *a;

				for (int64_t n = 0; n < 2; n++)
				for (int64_t c = 0; c < 3; c++)
				for (int64_t oh = 0; oh < HO; oh++)
				for (int64_t ow = 0; ow < WO; ow++) {
					double sum = 0;
					int64_t cnt = 0, padded = 0;

					for (int64_t i = 0; i < k; i++)
						for (int64_t j = 0; j < k; j++) {
							int64_t h = oh * s - p + i, w = ow * s - p + j;

							/* padded extent counts, past it not */
							if (h < 15 + p && w < 17 + p)
								padded++;
							if (h < 0 || w < 0 || h >= 15 || w >= 17)
								continue;
							sum += ot_get(x, (int64_t[]){ n, c, h, w });
							cnt++;
						}
					vals[((n * 3 + c) * HO + oh) * WO + ow] =
						sum / (double)(cip ? padded : cnt);
				}
				a = vnpu_op_avg_pool2d(x, (struct vnpu_at_int_array){ &k, 1 },
					(struct vnpu_at_int_array){ &s, 1 },
					(struct vnpu_at_int_array){ &p, 1 }, ceil, cip,
					VNPU_AT_NO_INT);
				expect_ref("avg_pool2d", a, 4, osz, vals, 1e-12);
				vnpu_at_release(a);
			}
		}
		free(vals);
		free(idx);
	}
	expect_error("pool pad", vnpu_op_max_pool2d_with_indices(x, VNPU_AT_INTS(2),
		VNPU_AT_NO_INTS, VNPU_AT_INTS(2), VNPU_AT_INTS(1), false).r0,
		"pad should be at most half");
	vnpu_at_release(x);
}
END_TEST

/* Windows far wider than the input: a padding of 2^40 (valid, half a
 * kernel of 2^41 + 1) is skipped in one step, not 2^40 (a hang before);
 * a kernel whose extent leaves int64 is refused, not wrapped. */
START_TEST(pooling_huge_windows)
{
	int64_t xs[4] = { 1, 2, 5, 7 }, big = (INT64_C(1) << 41) + 1;
	int64_t half = INT64_C(1) << 40, huge = INT64_C(1) << 62;
	struct vnpu_at_tensor *x = f64(4, xs, -2, 2, OT_TRANSPOSED);
	struct vnpu_ret_max_pool2d_with_indices r, plane;

	r = vnpu_op_max_pool2d_with_indices(x, VNPU_AT_INTS(big, big),
					    VNPU_AT_INTS(1, 1),
					    VNPU_AT_INTS(half, half),
					    VNPU_AT_INTS(1, 1), false);
	plane = vnpu_op_max_pool2d_with_indices(x, VNPU_AT_INTS(5, 7),
						VNPU_AT_NO_INTS,
						VNPU_AT_INTS(0, 0),
						VNPU_AT_INTS(1, 1), false);
	ck_assert_msg(r.r0 && plane.r0, "%s", vnpu_at_error_message());
	ck_assert_int_eq(r.r0->sizes[2], 5);
	ck_assert_int_eq(r.r0->sizes[3], 7);
	for (int64_t i = 0; i < 2 * 5 * 7; i++) {
		ck_assert(ot_flat(r.r0, i) == ot_flat(plane.r0, i / 35));
		ck_assert(ot_flat(r.r1, i) == ot_flat(plane.r1, i / 35));
	}
	vnpu_at_release(r.r0);
	vnpu_at_release(r.r1);
	vnpu_at_release(plane.r0);
	vnpu_at_release(plane.r1);
	expect_error("pool extent", vnpu_op_max_pool2d_with_indices(x,
		VNPU_AT_INTS(huge, 2), VNPU_AT_INTS(1, 1), VNPU_AT_INTS(0, 0),
		VNPU_AT_INTS(4, 1), false).r0, "overflow int64");
	/* the window's element count of an average: (2^41 + 1)^2 */
	expect_error("avg pool count", vnpu_op_avg_pool2d(x,
		VNPU_AT_INTS(big, big), VNPU_AT_INTS(1, 1),
		VNPU_AT_INTS(half, half), false, true, VNPU_AT_NO_INT),
		"overflow int64");
	vnpu_at_release(x);
}
END_TEST

/* ---- norms and softmax ------------------------------------------------------------------ */

START_TEST(norm_reference)
{
	int64_t xs[3] = { 3, 4, 17 };
	struct vnpu_at_tensor *x, *w, *b, *rm, *rv;
	struct vnpu_ret_native_layer_norm ln;
	struct vnpu_ret_native_batch_norm bn;
	double out[3 * 4 * 17], mean[12], rstd[12], rm_want[4], rv_want[4];

	ot_seed(3);
	x = f64(3, xs, -2, 2, OT_STRIDED);
	w = f64(1, xs + 2, 0.5, 1.5, OT_CONTIG);
	b = f64(1, xs + 2, -1, 1, OT_STRIDED);
	for (int64_t r = 0; r < 12; r++) {
		double m = 0, v = 0;

		for (int64_t j = 0; j < 17; j++)
			m += ot_flat(x, r * 17 + j);
		m /= 17;
		for (int64_t j = 0; j < 17; j++)
			v += (ot_flat(x, r * 17 + j) - m) * (ot_flat(x, r * 17 + j) - m);
		v /= 17;
		mean[r] = m;
		rstd[r] = 1 / sqrt(v + 1e-5);
		for (int64_t j = 0; j < 17; j++)
			out[r * 17 + j] = (ot_flat(x, r * 17 + j) - m) * rstd[r] *
					  ot_flat(w, j) + ot_flat(b, j);
	}
	ln = vnpu_op_native_layer_norm(x, (struct vnpu_at_int_array){ xs + 2, 1 }, w, b, 1e-5);
	expect_ref("layer_norm", ln.r0, 3, xs, out, 1e-12);
	expect_ref("layer_norm mean", ln.r1, 3, (int64_t[]){ 3, 4, 1 }, mean, 1e-12);
	expect_ref("layer_norm rstd", ln.r2, 3, (int64_t[]){ 3, 4, 1 }, rstd, 1e-12);
	vnpu_at_release(ln.r0);
	vnpu_at_release(ln.r1);
	vnpu_at_release(ln.r2);
	expect_error("layer_norm shape", vnpu_op_native_layer_norm(x, VNPU_AT_INTS(5),
		NULL, NULL, 1e-5).r0, "expected input with shape [*, 5]");

	/* batch norm over channel dim 1 (4 channels, 3 * 17 values each) */
	rm = f64(1, xs + 1, -1, 1, OT_CONTIG);
	rv = f64(1, xs + 1, 0.5, 2, OT_CONTIG);
	for (int64_t c = 0; c < 4; c++) {
		double m = 0, v = 0;

		for (int64_t n = 0; n < 3; n++)
			for (int64_t j = 0; j < 17; j++)
				m += ot_get(x, (int64_t[]){ n, c, j });
		m /= 51;
		for (int64_t n = 0; n < 3; n++)
			for (int64_t j = 0; j < 17; j++) {
				double dv = ot_get(x, (int64_t[]){ n, c, j }) - m;

				v += dv * dv;
			}
		mean[c] = m;
		rstd[c] = 1 / sqrt(v / 51 + 1e-5);
		rm_want[c] = 0.9 * ot_flat(rm, c) + 0.1 * m;
		rv_want[c] = 0.9 * ot_flat(rv, c) + 0.1 * v / 50;
		for (int64_t n = 0; n < 3; n++)
			for (int64_t j = 0; j < 17; j++)
				out[(n * 4 + c) * 17 + j] =
					(ot_get(x, (int64_t[]){ n, c, j }) - m) * rstd[c];
	}
	bn = vnpu_op_native_batch_norm(x, NULL, NULL, rm, rv, true, 0.1, 1e-5);
	expect_ref("batch_norm train", bn.r0, 3, xs, out, 1e-12);
	expect_ref("batch_norm save_mean", bn.r1, 1, xs + 1, mean, 1e-12);
	expect_ref("batch_norm save_invstd", bn.r2, 1, xs + 1, rstd, 1e-12);
	expect_ref("batch_norm running_mean", rm, 1, xs + 1, rm_want, 1e-12);
	expect_ref("batch_norm running_var", rv, 1, xs + 1, rv_want, 1e-12);
	vnpu_at_release(bn.r0);
	vnpu_at_release(bn.r1);
	vnpu_at_release(bn.r2);
	/* eval: the running statistics normalise, nothing is updated */
	for (int64_t c = 0; c < 4; c++)
		for (int64_t n = 0; n < 3; n++)
			for (int64_t j = 0; j < 17; j++)
				out[(n * 4 + c) * 17 + j] =
					(ot_get(x, (int64_t[]){ n, c, j }) - rm_want[c]) /
					sqrt(rv_want[c] + 1e-5) * ot_flat(w, 0) + 0.25;
	{
		struct vnpu_at_tensor *w4 = vnpu_op_full(VNPU_AT_INTS(4), VNPU_AT_DOUBLE(ot_flat(w, 0)),
							 VNPU_AT_F64, VNPU_AT_DEV_CPU);
		struct vnpu_at_tensor *b4 = vnpu_op_full(VNPU_AT_INTS(4), VNPU_AT_DOUBLE(0.25),
							 VNPU_AT_F64, VNPU_AT_DEV_CPU);

		bn = vnpu_op_native_batch_norm(x, w4, b4, rm, rv, false, 0.1, 1e-5);
		expect_ref("batch_norm eval", bn.r0, 3, xs, out, 1e-12);
		expect_ref("batch_norm eval keeps running_mean", rm, 1, xs + 1, rm_want, 0);
		vnpu_at_release(bn.r0);
		vnpu_at_release(bn.r1);
		vnpu_at_release(bn.r2);
		vnpu_at_release(w4);
		vnpu_at_release(b4);
	}

	/* softmax / log_softmax along dim 1 of a transposed view */
	{
		struct vnpu_at_tensor *y = f64(3, xs, -3, 3, OT_TRANSPOSED), *s, *ls;

		for (int64_t n = 0; n < 3; n++)
			for (int64_t j = 0; j < 17; j++) {
				double mx = -INFINITY, sum = 0;

				for (int64_t c = 0; c < 4; c++)
					mx = fmax(mx, ot_get(y, (int64_t[]){ n, c, j }));
				for (int64_t c = 0; c < 4; c++)
					sum += exp(ot_get(y, (int64_t[]){ n, c, j }) - mx);
				for (int64_t c = 0; c < 4; c++)
					out[(n * 4 + c) * 17 + j] =
						exp(ot_get(y, (int64_t[]){ n, c, j }) - mx) / sum;
			}
		s = vnpu_op__softmax(y, 1, false);
		expect_ref("softmax", s, 3, xs, out, 1e-12);
		for (int64_t i = 0; i < 3 * 4 * 17; i++)
			out[i] = log(out[i]);
		ls = vnpu_op__log_softmax(y, -2, false);
		expect_ref("log_softmax", ls, 3, xs, out, 1e-12);
		vnpu_at_release(s);
		vnpu_at_release(ls);
		vnpu_at_release(y);
	}
	vnpu_at_release(x);
	vnpu_at_release(w);
	vnpu_at_release(b);
	vnpu_at_release(rm);
	vnpu_at_release(rv);
}
END_TEST

/* ---- losses -------------------------------------------------------------------------- */

START_TEST(loss_reference)
{
	int64_t xs[2] = { 17, 5 };
	struct vnpu_at_tensor *x, *t, *w, *tgt;
	struct vnpu_ret_nll_loss_forward r;
	double none[17], sum = 0, wsum = 0;

	ot_seed(4);
	x = f64(2, xs, -2, 2, OT_TRANSPOSED);
	w = f64(1, xs + 1, 0.5, 2, OT_CONTIG);
	tgt = ot_rand(1, xs, VNPU_AT_I64, 0, 5, OT_STRIDED);
	ot_set_flat(tgt, 3, -100);	/* ignored */
	for (int64_t i = 0; i < 17; i++) {
		int64_t c = (int64_t)ot_flat(tgt, i);

		none[i] = c == -100 ? 0 : -ot_flat(w, c) * ot_get(x, (int64_t[]){ i, c });
		sum += none[i];
		wsum += c == -100 ? 0 : ot_flat(w, c);
	}
	r = vnpu_op_nll_loss_forward(x, tgt, w, 0, -100);
	expect_ref("nll none", r.r0, 1, xs, none, 1e-12);
	vnpu_at_release(r.r0);
	vnpu_at_release(r.r1);
	r = vnpu_op_nll_loss_forward(x, tgt, w, 1, -100);
	expect_ref("nll mean", r.r0, 0, NULL, (double[]){ sum / wsum }, 1e-12);
	expect_ref("nll total_weight", r.r1, 0, NULL, &wsum, 1e-12);
	vnpu_at_release(r.r0);
	vnpu_at_release(r.r1);
	r = vnpu_op_nll_loss_forward(x, tgt, NULL, 2, -100);
	sum = 0;
	for (int64_t i = 0; i < 17; i++) {
		int64_t c = (int64_t)ot_flat(tgt, i);

		sum += c == -100 ? 0 : -ot_get(x, (int64_t[]){ i, c });
	}
	expect_ref("nll sum", r.r0, 0, NULL, &sum, 1e-12);
	vnpu_at_release(r.r0);
	vnpu_at_release(r.r1);
	ot_set_flat(tgt, 4, 5);
	expect_error("nll target", vnpu_op_nll_loss_forward(x, tgt, w, 1, -100).r0,
		     "Target 5 is out of bounds");

	/* mse with broadcasting target [5] */
	t = f64(1, xs + 1, -1, 1, OT_CONTIG);
	{
		struct vnpu_at_tensor *m = vnpu_op_mse_loss(x, t, 1);
		double s2 = 0;

		for (int64_t i = 0; i < 17; i++)
			for (int64_t j = 0; j < 5; j++) {
				double dv = ot_get(x, (int64_t[]){ i, j }) - ot_flat(t, j);

				s2 += dv * dv;
			}
		s2 /= 85;
		expect_ref("mse mean", m, 0, NULL, &s2, 1e-12);
		vnpu_at_release(m);
	}
	vnpu_at_release(x);
	vnpu_at_release(t);
	vnpu_at_release(w);
	vnpu_at_release(tgt);
}
END_TEST

/* ---- reductions, pointwise semantics, indexing ---------------------------------------------- */

START_TEST(reduce_pointwise_index)
{
	int64_t xs[2] = { 3, 4 };
	double d[12] = { 1, 5, 5, -2, NAN, 0, 7, 7, -1, -3, -3, 2 };
	struct vnpu_at_tensor *x = from_ref(2, xs, d), *r;
	struct vnpu_ret_max_dim m;

	r = vnpu_op_amax(x, VNPU_AT_INTS(1), false);
	expect_ref("amax NaN", r, 1, (int64_t[]){ 3 }, (double[]){ 5, NAN, 2 }, 0);
	vnpu_at_release(r);
	r = vnpu_op_argmax(x, VNPU_AT_SOME_INT(1), false);
	ck_assert_int_eq((int64_t)ot_flat(r, 0), 1);	/* first of the ties */
	ck_assert_int_eq((int64_t)ot_flat(r, 1), 0);	/* NaN wins */
	ck_assert_int_eq((int64_t)ot_flat(r, 2), 3);
	vnpu_at_release(r);
	r = vnpu_op_argmin(x, VNPU_AT_NO_INT, true);
	ck_assert_int_eq(r->ndim, 2);
	ck_assert_int_eq((int64_t)ot_flat(r, 0), 4);	/* NaN is the extremum */
	vnpu_at_release(r);
	m = vnpu_op_max_dim(x, 0, true);
	ck_assert_int_eq(m.r0->sizes[0], 1);
	ck_assert(isnan(ot_flat(m.r0, 0)));
	ck_assert_int_eq((int64_t)ot_flat(m.r1, 3), 1);
	vnpu_at_release(m.r0);
	vnpu_at_release(m.r1);
	vnpu_at_release(x);
	x = vnpu_at_empty(1, (int64_t[]){ 0 }, VNPU_AT_F32, VNPU_AT_DEV_CPU);
	expect_error("amax empty", vnpu_op_amax(x, VNPU_AT_NO_INTS, false),
		     "Expected reduction dim 0 to have non-zero size");
	vnpu_at_release(x);

	/* promotion: int tensor / int tensor is float32; int ** int stays
	 * int; clamp of int with a float bound is float32 */
	{
		int64_t n = 5;
		struct vnpu_at_tensor *a = ot_rand(1, &n, VNPU_AT_I32, -9, 9, OT_STRIDED);
		struct vnpu_at_tensor *b = ot_rand(1, &n, VNPU_AT_I64, 1, 4, OT_CONTIG);
		struct vnpu_at_tensor *q = vnpu_op_div_Tensor(a, b);
		struct vnpu_at_tensor *p = vnpu_op_pow_Tensor_Scalar(a, VNPU_AT_INT(3));
		struct vnpu_at_tensor *c = vnpu_op_clamp(a, VNPU_AT_DOUBLE(-2.5), VNPU_AT_SCALAR_NONEV);
		struct vnpu_at_tensor *e = vnpu_op_eq_Scalar(a, VNPU_AT_DOUBLE(2.5));

		ck_assert_int_eq(q->dtype, VNPU_AT_F32);
		ck_assert_int_eq(p->dtype, VNPU_AT_I32);
		ck_assert_int_eq(c->dtype, VNPU_AT_F32);
		ck_assert_int_eq(e->dtype, VNPU_AT_BOOL);
		for (int64_t i = 0; i < n; i++) {
			double av = ot_flat(a, i);

			ck_assert(fabs(ot_flat(q, i) - (double)(float)(av / ot_flat(b, i))) < 1e-6);
			ck_assert(ot_flat(p, i) == av * av * av);
			ck_assert(ot_flat(c, i) == fmax(av, -2.5));
			ck_assert(ot_flat(e, i) == 0);
		}
		expect_error("neg bool", vnpu_op_neg(e), "aten::neg: Negation");
		expect_error("pow negative", vnpu_op_pow_Tensor_Scalar(a, VNPU_AT_INT(-1)),
			     "Integers to negative integer powers");
		expect_error("where cond", vnpu_op_where_self(a, a, a),
			     "where expected condition to be a boolean tensor");
		/* Bool has no arithmetic: each op refuses it with PyTorch's
		 * message instead of computing on 0/1 bytes. */
		{
			int64_t s2[2] = { 2, 2 }, s3[3] = { 1, 2, 2 };
			struct vnpu_at_tensor *i2 = ot_rand(2, s2, VNPU_AT_I32, 0, 1, OT_CONTIG);
			struct vnpu_at_tensor *i3 = ot_rand(3, s3, VNPU_AT_I32, 0, 1, OT_CONTIG);
			struct vnpu_at_tensor *bool2 = vnpu_op_eq_Scalar(i2, VNPU_AT_INT(1));
			struct vnpu_at_tensor *bool3 = vnpu_op_eq_Scalar(i3, VNPU_AT_INT(1));

			ck_assert_int_eq(bool2->dtype, VNPU_AT_BOOL);
			expect_error("relu bool", vnpu_op_relu(bool2),
				     "aten::relu: not implemented for 'Bool'");
			expect_error("relu_ bool", vnpu_op_relu_(bool2),
				     "aten::relu_: not implemented for 'Bool'");
			expect_error("mm bool", vnpu_op_mm(bool2, bool2),
				     "aten::mm: not implemented for 'Bool'");
			expect_error("bmm bool", vnpu_op_bmm(bool3, bool3),
				     "\"bmm\" not implemented for 'Bool'");
			expect_error("addmm bool",
				     vnpu_op_addmm(bool2, bool2, bool2, VNPU_AT_INT(1), VNPU_AT_INT(1)),
				     "\"addmm\" not implemented for 'Bool'");
			vnpu_at_release(i2);
			vnpu_at_release(i3);
			vnpu_at_release(bool2);
			vnpu_at_release(bool3);
		}
		vnpu_at_release(a);
		vnpu_at_release(b);
		vnpu_at_release(q);
		vnpu_at_release(p);
		vnpu_at_release(c);
		vnpu_at_release(e);
	}

	/* index_select / embedding / cat */
	{
		int64_t ws[2] = { 6, 17 }, is[2] = { 2, 3 };
		struct vnpu_at_tensor *w = f64(2, ws, -1, 1, OT_TRANSPOSED);
		struct vnpu_at_tensor *idx = ot_rand(2, is, VNPU_AT_I64, 0, 6, OT_STRIDED);
		struct vnpu_at_tensor *empty = vnpu_at_empty(1, (int64_t[]){ 0 },
							     VNPU_AT_F32, VNPU_AT_DEV_CPU);
		struct vnpu_at_tensor *e = vnpu_op_embedding(w, idx, -1, false, false);
		struct vnpu_at_tensor *row = vnpu_op_select_int(idx, 0, 1);
		struct vnpu_at_tensor *s = vnpu_op_index_select(w, 1, row);
		struct vnpu_at_tensor *parts[3], *cat;

		ck_assert_msg(e && s, "%s", vnpu_at_error_message());
		ck_assert_int_eq(e->ndim, 3);
		ck_assert_int_eq(e->sizes[2], 17);
		for (int64_t i = 0; i < 6; i++) {
			int64_t k = (int64_t)ot_flat(idx, i);

			for (int64_t j = 0; j < 17; j++)
				ck_assert(ot_flat(e, i * 17 + j) ==
					  ot_get(w, (int64_t[]){ k, j }));
		}
		for (int64_t i = 0; i < 6; i++)
			for (int64_t j = 0; j < 3; j++) {
				int64_t k = (int64_t)ot_flat(row, j);

				ck_assert(ot_get(s, (int64_t[]){ i, j }) ==
					  ot_get(w, (int64_t[]){ i, k }));
			}
		ot_set_flat(idx, 0, 6);
		expect_error("embedding range", vnpu_op_embedding(w, idx, -1, false, false),
			     "index out of range in self");
		ot_set_flat(idx, 0, -1);
		expect_error("embedding negative", vnpu_op_embedding(w, idx, -1, false, false),
			     "index out of range in self");
		parts[0] = w;
		parts[1] = empty;
		parts[2] = s;
		cat = vnpu_op_cat((struct vnpu_at_tensor_list){ parts, 3 }, 1);
		ck_assert_msg(cat != NULL, "%s", vnpu_at_error_message());
		ck_assert_int_eq(cat->sizes[1], 20);
		ck_assert_int_eq(cat->dtype, VNPU_AT_F64);
		for (int64_t i = 0; i < 6; i++) {
			ck_assert(ot_get(cat, (int64_t[]){ i, 16 }) ==
				  ot_get(w, (int64_t[]){ i, 16 }));
			ck_assert(ot_get(cat, (int64_t[]){ i, 18 }) ==
				  ot_get(s, (int64_t[]){ i, 1 }));
		}
		parts[1] = idx;
		expect_error("cat sizes", vnpu_op_cat((struct vnpu_at_tensor_list){ parts, 2 }, 0),
			     "Sizes of tensors must match except in dimension 0");
		vnpu_at_release(cat);
		vnpu_at_release(w);
		vnpu_at_release(idx);
		vnpu_at_release(e);
		vnpu_at_release(row);
		vnpu_at_release(s);
		vnpu_at_release(empty);
	}
	{
		int64_t a3[3] = { 2, 3, 4 }, b3[3] = { 2, 5, 6 };
		struct vnpu_at_tensor *a = f64(3, a3, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *b = f64(3, b3, -1, 1, OT_CONTIG);

		expect_error("bmm shapes", vnpu_op_bmm(a, b),
			     "aten::bmm: Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].");
		vnpu_at_release(a);
		vnpu_at_release(b);
	}
}
END_TEST

START_TEST(bmm_addmm_reference)
{
	int64_t as[3] = { 3, 15, 17 }, bs[3] = { 3, 17, 2 }, cs[1] = { 2 };
	struct vnpu_at_tensor *a = f64(3, as, -1, 1, OT_TRANSPOSED);
	struct vnpu_at_tensor *b = f64(3, bs, -1, 1, OT_STRIDED);
	struct vnpu_at_tensor *c = f64(1, cs, -1, 1, OT_CONTIG);
	struct vnpu_at_tensor *r, *a2, *b2;
	double ref[3 * 15 * 2];

	ot_seed(5);
	for (int64_t n = 0; n < 3; n++)
		for (int64_t i = 0; i < 15; i++)
			for (int64_t j = 0; j < 2; j++) {
				double acc = 0;

				for (int64_t k = 0; k < 17; k++)
					acc += ot_get(a, (int64_t[]){ n, i, k }) *
					       ot_get(b, (int64_t[]){ n, k, j });
				ref[(n * 15 + i) * 2 + j] = acc;
			}
	r = vnpu_op_bmm(a, b);
	expect_ref("bmm", r, 3, (int64_t[]){ 3, 15, 2 }, ref, 1e-12);
	vnpu_at_release(r);
	a2 = vnpu_op_select_int(a, 0, 1);
	b2 = vnpu_op_select_int(b, 0, 1);
	for (int64_t i = 0; i < 15; i++)
		for (int64_t j = 0; j < 2; j++)
			ref[i * 2 + j] = 0.5 * ot_flat(c, j) + 2 * ref[(15 + i) * 2 + j];
	r = vnpu_op_addmm(c, a2, b2, VNPU_AT_DOUBLE(0.5), VNPU_AT_DOUBLE(2));
	expect_ref("addmm", r, 2, (int64_t[]){ 15, 2 }, ref, 1e-12);
	vnpu_at_release(r);
	vnpu_at_release(a2);
	vnpu_at_release(b2);
	vnpu_at_release(a);
	vnpu_at_release(b);
	vnpu_at_release(c);
}
END_TEST

/* ---- backward ops against central differences (float64) ----------------------------------- */

/* sum(g * f(x)) for the forward of a backward op. */
typedef double (*objective_fn)(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g,
			       const void *ctx);

static double weighted_sum(struct vnpu_at_tensor *y, struct vnpu_at_tensor *g)
{
	double s = 0;

	ck_assert_msg(y != NULL, "%s", vnpu_at_error_message());
	for (int64_t i = 0; i < vnpu_at_numel(y); i++)
		s += ot_flat(y, i) * (g ? ot_flat(g, i) : 1.0);
	vnpu_at_release(y);
	return s;
}

static double obj_softmax(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g, const void *c)
{
	return weighted_sum(vnpu_op__softmax(x, *(const int64_t *)c, false), g);
}
static double obj_log_softmax(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g, const void *c)
{
	return weighted_sum(vnpu_op__log_softmax(x, *(const int64_t *)c, false), g);
}
static double obj_gelu(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g, const void *c)
{
	return weighted_sum(vnpu_op_gelu(x, (const char *)c), g);
}
static double obj_sigmoid(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g, const void *c)
{
	return weighted_sum(vnpu_op_sigmoid(x), g);
}
static double obj_tanh(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g, const void *c)
{
	return weighted_sum(vnpu_op_tanh(x), g);
}
static double obj_relu(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g, const void *c)
{
	return weighted_sum(vnpu_op_relu(x), g);
}
static double obj_mse(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g, const void *c)
{
	const int64_t *red = c;
	struct vnpu_at_tensor *t = (struct vnpu_at_tensor *)(uintptr_t)red[1];

	return weighted_sum(vnpu_op_mse_loss(x, t, red[0]), red[0] ? NULL : g) *
	       (red[0] ? ot_flat(g, 0) : 1.0);
}
static double obj_nll(struct vnpu_at_tensor *x, struct vnpu_at_tensor *g, const void *c)
{
	const int64_t *red = c;
	struct vnpu_at_tensor *t = (struct vnpu_at_tensor *)(uintptr_t)red[1];
	struct vnpu_at_tensor *w = (struct vnpu_at_tensor *)(uintptr_t)red[2];
	struct vnpu_ret_nll_loss_forward r = vnpu_op_nll_loss_forward(x, t, w, red[0], 1);
	double v;

	vnpu_at_release(r.r1);
	v = weighted_sum(r.r0, red[0] ? NULL : g);
	return red[0] ? v * ot_flat(g, 0) : v;
}

/* Asserts analytic (a tensor shaped like x) matches d obj / dx. */
static void check_fd(const char *what, objective_fn obj, const void *ctx,
		     struct vnpu_at_tensor *x, struct vnpu_at_tensor *g,
		     struct vnpu_at_tensor *analytic)
{
	const double h = 1e-6;

	ck_assert_msg(analytic != NULL, "%s: %s", what, vnpu_at_error_message());
	for (int64_t i = 0; i < vnpu_at_numel(x); i++) {
		double x0 = ot_flat(x, i), fp, fm, num;

		ot_set_flat(x, i, x0 + h);
		fp = obj(x, g, ctx);
		ot_set_flat(x, i, x0 - h);
		fm = obj(x, g, ctx);
		ot_set_flat(x, i, x0);
		num = (fp - fm) / (2 * h);
		ck_assert_msg(fabs(num - ot_flat(analytic, i)) <= 1e-6 + 1e-5 * fabs(num),
			      "%s: d/dx[%lld] = %.10g, finite difference %.10g", what,
			      (long long)i, ot_flat(analytic, i), num);
	}
	vnpu_at_release(analytic);
}

START_TEST(backward_finite_differences)
{
	int64_t xs[3] = { 2, 3, 5 }, dim = 1, ls[2] = { 7, 4 };
	struct vnpu_at_tensor *x, *g, *y;

	ot_seed(6);
	x = f64(3, xs, -2, 2, OT_STRIDED);
	g = f64(3, xs, -1, 1, OT_TRANSPOSED);
	y = vnpu_op__softmax(x, dim, false);
	check_fd("_softmax_backward_data", obj_softmax, &dim, x, g,
		 vnpu_op__softmax_backward_data(g, y, dim, VNPU_AT_F64));
	vnpu_at_release(y);
	y = vnpu_op__log_softmax(x, dim, false);
	check_fd("_log_softmax_backward_data", obj_log_softmax, &dim, x, g,
		 vnpu_op__log_softmax_backward_data(g, y, dim, VNPU_AT_F64));
	vnpu_at_release(y);
	check_fd("gelu_backward", obj_gelu, "none", x, g,
		 vnpu_op_gelu_backward(g, x, "none"));
	check_fd("gelu_backward tanh", obj_gelu, "tanh", x, g,
		 vnpu_op_gelu_backward(g, x, "tanh"));
	y = vnpu_op_sigmoid(x);
	check_fd("sigmoid_backward", obj_sigmoid, NULL, x, g, vnpu_op_sigmoid_backward(g, y));
	vnpu_at_release(y);
	y = vnpu_op_tanh(x);
	check_fd("tanh_backward", obj_tanh, NULL, x, g, vnpu_op_tanh_backward(g, y));
	vnpu_at_release(y);
	/* relu's kink at 0 is avoided by the inputs (|x| > 1e-3 w.p. ~1) */
	check_fd("threshold_backward", obj_relu, NULL, x, g,
		 vnpu_op_threshold_backward(g, x, VNPU_AT_INT(0)));
	vnpu_at_release(x);
	vnpu_at_release(g);

	/* losses: none (grad per element) and mean/sum (grad 0-dim) */
	x = f64(2, ls, -2, 2, OT_TRANSPOSED);
	for (int64_t red = 0; red < 3; red++) {
		struct vnpu_at_tensor *t = f64(2, ls, -1, 1, OT_CONTIG);
		struct vnpu_at_tensor *tgt = ot_rand(1, ls, VNPU_AT_I64, 0, 4, OT_STRIDED);
		struct vnpu_at_tensor *w = f64(1, ls + 1, 0.5, 2, OT_CONTIG);
		struct vnpu_ret_nll_loss_forward fw;
		int64_t ctx[3] = { red, (int64_t)(uintptr_t)t, (int64_t)(uintptr_t)w };
		struct vnpu_at_tensor *gg = red ? f64(0, NULL, 0.5, 1.5, OT_CONTIG) :
						  f64(2, ls, -1, 1, OT_CONTIG);

		check_fd("mse_loss_backward", obj_mse, ctx, x, gg,
			 vnpu_op_mse_loss_backward(gg, x, t, red));
		vnpu_at_release(gg);
		gg = red ? f64(0, NULL, 0.5, 1.5, OT_CONTIG) : f64(1, ls, -1, 1, OT_CONTIG);
		ot_set_flat(tgt, 2, 1);	/* ignore_index 1 in the objective */
		ctx[1] = (int64_t)(uintptr_t)tgt;
		fw = vnpu_op_nll_loss_forward(x, tgt, w, red, 1);
		check_fd("nll_loss_backward", obj_nll, ctx, x, gg,
			 vnpu_op_nll_loss_backward(gg, x, tgt, w, red, 1, fw.r1));
		vnpu_at_release(fw.r0);
		vnpu_at_release(fw.r1);
		vnpu_at_release(gg);
		vnpu_at_release(t);
		vnpu_at_release(tgt);
		vnpu_at_release(w);
	}
	vnpu_at_release(x);
}
END_TEST

/* ---- Scalars into tensors: PyTorch's checked_convert (values and errors
 * measured with PyTorch 1.13's CPU), on the CPU and npu kernels ---------- */

START_TEST(scalar_conversion)
{
	static const struct {
		struct vnpu_at_scalar v;
		enum vnpu_at_dtype dt;
		double want;		/* NAN with err: an overflow error */
		bool err;
	} c[] = {
		{ VNPU_AT_DOUBLE(NAN), VNPU_AT_BOOL, 1, false },
		{ VNPU_AT_DOUBLE(0.5), VNPU_AT_BOOL, 1, false },
		{ VNPU_AT_INT(5), VNPU_AT_BOOL, 1, false },
		{ VNPU_AT_DOUBLE(0.0), VNPU_AT_BOOL, 0, false },
		{ VNPU_AT_INT(-3), VNPU_AT_U8, 253, false },
		{ VNPU_AT_INT(300), VNPU_AT_U8, 0, true },
		{ VNPU_AT_DOUBLE(-3.5), VNPU_AT_U8, 0, true },
		{ VNPU_AT_DOUBLE(2.9), VNPU_AT_I32, 2, false },
		{ VNPU_AT_DOUBLE(-2.9), VNPU_AT_I32, -2, false },
		{ VNPU_AT_DOUBLE(NAN), VNPU_AT_I32, 0, true },
		{ VNPU_AT_DOUBLE(INFINITY), VNPU_AT_I32, 0, true },
		{ VNPU_AT_INT(2147483648LL), VNPU_AT_I32, 0, true },
		{ VNPU_AT_DOUBLE(1e19), VNPU_AT_I64, 0, true },
		{ VNPU_AT_INT(-128), VNPU_AT_I8, -128, false },
		{ VNPU_AT_BOOLV(true), VNPU_AT_I8, 1, false },
		{ VNPU_AT_DOUBLE(1e39), VNPU_AT_F32, 0, true },
		{ VNPU_AT_DOUBLE(1e39), VNPU_AT_BF16, 0, true },
		{ VNPU_AT_INT(70000), VNPU_AT_F16, 0, true },
		{ VNPU_AT_DOUBLE(1e5), VNPU_AT_F16, 0, true },
		{ VNPU_AT_DOUBLE(INFINITY), VNPU_AT_F16, INFINITY, false },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		for (int dev = 0; dev < 2; dev++) {
			struct vnpu_at_device d = dev ? VNPU_AT_DEV_NPU(0) : VNPU_AT_DEV_CPU;
			struct vnpu_at_tensor *t = vnpu_op_full(VNPU_AT_INTS(2), c[i].v,
								c[i].dt, d), *h;
			char what[64];

			snprintf(what, sizeof(what), "case %zu on %s", i, dev ? "npu" : "cpu");
			if (c[i].err) {
				expect_error(what, t, "without overflow");
				continue;
			}
			ck_assert_msg(t, "%s: %s", what, vnpu_at_error_message());
			h = vnpu_op__to_copy(t, VNPU_AT_F64, VNPU_AT_DEV_CPU, false);
			ck_assert_msg(h && ((double *)vnpu_at_data(h))[1] == c[i].want,
				      "%s: got %g, want %g", what,
				      h ? ((double *)vnpu_at_data(h))[1] : NAN, c[i].want);
			vnpu_at_release(h);
			vnpu_at_release(t);
		}
	}
}
END_TEST

/* arange as PyTorch 2.13 computes it (issue 18's class 7; the expected
 * values were printed by PyTorch's CPU): an integer range takes start and
 * step truncated to int64, its length from the doubles but for int64 */
START_TEST(arange_like_pytorch)
{
	static const struct {
		double start, end, step;
		enum vnpu_at_dtype dt;
		int64_t n;		/* -1: "step must be nonzero" */
		double first, last;
	} c[] = {
		{ -3, 7.25, 1, VNPU_AT_I64, 10, -3, 6 },
		{ -1, 1, 0.25, VNPU_AT_I64, -1, 0, 0 },
		{ -3, 7.25, 1, VNPU_AT_I32, 11, -3, 7 },
		{ 0, 5.5, 1.5, VNPU_AT_I64, 5, 0, 4 },
		{ 0, 5.5, 1.5, VNPU_AT_I32, 4, 0, 3 },
		{ 0.5, 5, 1, VNPU_AT_I32, 5, 0, 4 },
		{ 0, 1, 0.25, VNPU_AT_F32, 4, 0, 0.75 },
		{ 0, 1, 0.25, VNPU_AT_I32, 4, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct vnpu_at_tensor *t = vnpu_op_arange_start_step(
			VNPU_AT_DOUBLE(c[i].start), VNPU_AT_DOUBLE(c[i].end),
			VNPU_AT_DOUBLE(c[i].step), c[i].dt, VNPU_AT_DEV_CPU);

		if (c[i].n < 0) {
			expect_error("arange", t, "step must be nonzero");
			continue;
		}
		ck_assert_msg(t, "case %zu: %s", i, vnpu_at_error_message());
		ck_assert_msg(t->sizes[0] == c[i].n, "case %zu: %lld elements, want %lld",
			      i, (long long)t->sizes[0], (long long)c[i].n);
		ck_assert(ot_flat(t, 0) == c[i].first);
		ck_assert(ot_flat(t, c[i].n - 1) == c[i].last);
		vnpu_at_release(t);
	}
	expect_error("arange inconsistent",
		     vnpu_op_arange_start_step(VNPU_AT_INT(5), VNPU_AT_INT(0),
					       VNPU_AT_INT(1), VNPU_AT_DTYPE_NONE,
					       VNPU_AT_DEV_CPU),
		     "upper bound and lower bound inconsistent with step sign");
}
END_TEST

/* clamp's NaN bounds as PyTorch 2 (1.13 ignored a lone one, issue 18's
 * class 11), both devices: a NaN bound, alone or with the other, gives
 * NaN everywhere; an int tensor with a float bound gives float32 */
START_TEST(clamp_nan_bounds)
{
	static const double xs[3] = { 1, 5, -3 };

	for (int dev = 0; dev < 2; dev++) {
		struct vnpu_at_device d = dev ? VNPU_AT_DEV_NPU(0) : VNPU_AT_DEV_CPU;
		struct vnpu_at_tensor *c = vnpu_at_empty(1, (int64_t[]){ 3 },
							 VNPU_AT_I32, VNPU_AT_DEV_CPU);
		struct vnpu_at_tensor *x, *r, *h;

		for (int i = 0; i < 3; i++)
			((int32_t *)vnpu_at_data(c))[i] = (int32_t)xs[i];
		x = vnpu_op__to_copy(c, VNPU_AT_DTYPE_NONE, d, false);
		r = vnpu_op_clamp(x, VNPU_AT_DOUBLE(NAN), VNPU_AT_SCALAR_NONEV);
		ck_assert_msg(r && r->dtype == VNPU_AT_F32, "%s", vnpu_at_error_message());
		ck_assert(r->storage != x->storage);
		h = vnpu_op__to_copy(r, VNPU_AT_F64, VNPU_AT_DEV_CPU, false);
		for (int i = 0; i < 3; i++)
			ck_assert_msg(isnan(((double *)vnpu_at_data(h))[i]),
				      "lone NaN min on %s", dev ? "npu" : "cpu");
		vnpu_at_release(h);
		vnpu_at_release(r);
		r = vnpu_op_clamp(x, VNPU_AT_INT(2), VNPU_AT_DOUBLE(NAN));
		h = r ? vnpu_op__to_copy(r, VNPU_AT_F64, VNPU_AT_DEV_CPU, false) : NULL;
		ck_assert(h);
		for (int i = 0; i < 3; i++)
			ck_assert_msg(isnan(((double *)vnpu_at_data(h))[i]),
				      "NaN max with a min on %s", dev ? "npu" : "cpu");
		vnpu_at_release(h);
		vnpu_at_release(r);
		vnpu_at_release(x);
		vnpu_at_release(c);
	}
}
END_TEST

/* matmul's errors as PyTorch words them (its values: test_same_kernels) */
START_TEST(matmul_errors)
{
	struct vnpu_at_tensor *s0 = vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(1), VNPU_AT_F32,
							  VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *v3 = vnpu_op_ones(VNPU_AT_INTS(3), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *v4 = vnpu_op_ones(VNPU_AT_INTS(4), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *m23 = vnpu_op_ones(VNPU_AT_INTS(2, 3), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *b234 = vnpu_op_ones(VNPU_AT_INTS(2, 3, 4), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *b345 = vnpu_op_ones(VNPU_AT_INTS(3, 4, 5), VNPU_AT_F32, VNPU_AT_DEV_CPU);

	expect_error("0-dim", vnpu_op_matmul(s0, m23),
		     "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
	expect_error("dot", vnpu_op_matmul(v3, v4), "inconsistent tensor size");
	expect_error("mv", vnpu_op_matmul(m23, v4), "size mismatch, got input (2), mat (2x3), vec (4)");
	expect_error("batch", vnpu_op_matmul(b234, b345),
		     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
	vnpu_at_release(s0);
	vnpu_at_release(v3);
	vnpu_at_release(v4);
	vnpu_at_release(m23);
	vnpu_at_release(b234);
	vnpu_at_release(b345);
}
END_TEST

/* pow with the exponents PyTorch specialises, at -0 and +-inf (issue
 * 18's class 12; expected values printed by PyTorch's CPU), both devices */
START_TEST(pow_special_values)
{
	static const double x[5] = { -0.0, 0.0, -INFINITY, INFINITY, 4.0 };
	static const struct { double e, want[5]; } c[] = {
		{ 0.5, { -0.0, 0.0, NAN, INFINITY, 2.0 } },
		{ -0.5, { -INFINITY, INFINITY, NAN, 0.0, 0.5 } },
		{ -1, { -INFINITY, INFINITY, -0.0, 0.0, 0.25 } },
		{ -2, { INFINITY, INFINITY, 0.0, 0.0, 0.0625 } },
		{ 3, { -0.0, 0.0, -INFINITY, INFINITY, 64.0 } },
		{ 1.5, { 0.0, 0.0, INFINITY, INFINITY, 8.0 } },
	};

	for (int dev = 0; dev < 2; dev++) {
		struct vnpu_at_tensor *h = vnpu_at_empty(1, (int64_t[]){ 5 }, VNPU_AT_F32,
							 VNPU_AT_DEV_CPU), *t;

		for (int i = 0; i < 5; i++)
			((float *)vnpu_at_data(h))[i] = (float)x[i];
		t = vnpu_op__to_copy(h, VNPU_AT_DTYPE_NONE,
				     dev ? VNPU_AT_DEV_NPU(0) : VNPU_AT_DEV_CPU, false);
		for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
			struct vnpu_at_tensor *r = vnpu_op_pow_Tensor_Scalar(t, VNPU_AT_DOUBLE(c[k].e));
			struct vnpu_at_tensor *b = r ? vnpu_op__to_copy(r, VNPU_AT_F64,
								       VNPU_AT_DEV_CPU, false) : NULL;

			ck_assert(b);
			for (int i = 0; i < 5; i++) {
				double got = ((double *)vnpu_at_data(b))[i], want = c[k].want[i];

				ck_assert_msg((isnan(got) && isnan(want)) ||
					      (got == want && signbit(got) == signbit(want)),
					      "%s: pow(%g, %g) = %g, want %g", dev ? "npu" : "cpu",
					      x[i], c[k].e, got, want);
			}
			vnpu_at_release(b);
			vnpu_at_release(r);
		}
		vnpu_at_release(t);
		vnpu_at_release(h);
	}
}
END_TEST

/* A Python scalar does not decide the dtype against a 0-dim tensor of
 * its category (issue 18's class 10), both devices */
START_TEST(wrapped_number_dtype)
{
	for (int dev = 0; dev < 2; dev++) {
		struct vnpu_at_device d = dev ? VNPU_AT_DEV_NPU(0) : VNPU_AT_DEV_CPU;
		struct vnpu_at_tensor *h = vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(1.5),
								 VNPU_AT_F16, d);
		struct vnpu_at_tensor *b = vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(1.5),
								 VNPU_AT_BF16, d);
		struct vnpu_at_tensor *i = vnpu_at_scalar_tensor(VNPU_AT_INT(3),
								 VNPU_AT_I32, d);
		struct vnpu_at_tensor *r[4];

		r[0] = vnpu_op_add_Scalar(h, VNPU_AT_DOUBLE(NAN), VNPU_AT_INT(1));
		r[1] = vnpu_op_mul_Scalar(b, VNPU_AT_DOUBLE(NAN));
		r[2] = vnpu_op_add_Scalar(i, VNPU_AT_DOUBLE(2.5), VNPU_AT_INT(1));
		r[3] = vnpu_op_mul_Scalar(i, VNPU_AT_INT(2));
		ck_assert(r[0] && r[0]->dtype == VNPU_AT_F16);
		ck_assert(r[1] && r[1]->dtype == VNPU_AT_BF16);
		ck_assert(r[2] && r[2]->dtype == VNPU_AT_F32);
		ck_assert(r[3] && r[3]->dtype == VNPU_AT_I32);
		for (int k = 0; k < 4; k++)
			vnpu_at_release(r[k]);
		vnpu_at_release(h);
		vnpu_at_release(b);
		vnpu_at_release(i);
	}
}
END_TEST

/* What PyTorch checks before writing into an existing tensor (issue 18's
 * class 4), both devices; messages as PyTorch's CPU prints them */
START_TEST(inplace_and_out_checks)
{
	for (int dev = 0; dev < 2; dev++) {
		struct vnpu_at_device d = dev ? VNPU_AT_DEV_NPU(0) : VNPU_AT_DEV_CPU;
		struct vnpu_at_tensor *i64 = vnpu_op_ones(VNPU_AT_INTS(3), VNPU_AT_I64, d);
		struct vnpu_at_tensor *f = vnpu_op_ones(VNPU_AT_INTS(3), VNPU_AT_F32, d);
		struct vnpu_at_tensor *b = vnpu_op_ones(VNPU_AT_INTS(3), VNPU_AT_BOOL, d);
		struct vnpu_at_tensor *f23 = vnpu_op_ones(VNPU_AT_INTS(2, 3), VNPU_AT_F32, d);
		struct vnpu_at_tensor *r;

		expect_error("add_ int64 += f32", vnpu_op_add__Tensor(i64, f, VNPU_AT_INT(1)),
			     "result type Float can't be cast to the desired output type Long");
		expect_error("mul_ bool *= f32", vnpu_op_mul__Tensor(b, f),
			     "result type Float can't be cast to the desired output type Bool");
		expect_error("add.out into Long", vnpu_op_add_out(f, f, VNPU_AT_INT(1), i64),
			     "result type Float can't be cast to the desired output type Long");
		expect_error("add_ broadcast", vnpu_op_add__Tensor(f, f23, VNPU_AT_INT(1)),
			     "output with shape [3] doesn't match the broadcast shape [2, 3]");
		expect_error("sub bool", vnpu_op_sub_Tensor(f, b, VNPU_AT_INT(1)),
			     "with a bool tensor is not supported");
		expect_error("add int alpha 0.5", vnpu_op_add_Scalar(i64, VNPU_AT_INT(1),
								     VNPU_AT_DOUBLE(0.5)),
			     "argument alpha must not be a floating point number");
		/* and what is allowed still works: int into float, out= resized */
		r = vnpu_op_add__Tensor(f, i64, VNPU_AT_INT(1));
		ck_assert_msg(r, "add_ f32 += int64: %s", vnpu_at_error_message());
		vnpu_at_release(r);
		vnpu_at_release(i64);
		vnpu_at_release(f);
		vnpu_at_release(b);
		vnpu_at_release(f23);
	}
}
END_TEST

/* PyTorch's result_type ranks (issue 18's OpInfo harness): a 0-dim tensor
 * of a higher category decides, a wrapped bool Scalar is bool, two float
 * wrapped numbers give the default dtype (PyTorch 2) */
START_TEST(promotion_ranks)
{
	struct vnpu_at_tensor *i = vnpu_at_scalar_tensor(VNPU_AT_INT(3), VNPU_AT_I32,
							 VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *f = vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(0.5), VNPU_AT_F64,
							 VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *v = f64(1, (int64_t[]){ 4 }, -1, 1, OT_CONTIG);
	struct vnpu_at_tensor *b = vnpu_op__to_copy(v, VNPU_AT_BOOL, VNPU_AT_DEV_CPU, false);
	struct vnpu_at_tensor *r;

	r = vnpu_op_add_Tensor(i, f, VNPU_AT_INT(1));	/* two 0-dim: promoted */
	ck_assert(r && r->dtype == VNPU_AT_F64);
	vnpu_at_release(r);
	/* neither holds the other's range: int16, as PyTorch */
	ck_assert_int_eq(vnpu_at_promote(VNPU_AT_U8, VNPU_AT_I8), VNPU_AT_I16);
	ck_assert_int_eq(vnpu_at_promote(VNPU_AT_I16, VNPU_AT_U8), VNPU_AT_I16);
	ck_assert_int_eq(vnpu_at_promote(VNPU_AT_I16, VNPU_AT_I32), VNPU_AT_I32);
	ck_assert_int_eq(vnpu_at_promote(VNPU_AT_I16, VNPU_AT_F16), VNPU_AT_F16);
	r = vnpu_op_mul_Tensor(f, f);	/* 0-dim, not wrapped: stays float64 */
	ck_assert(r && r->dtype == VNPU_AT_F64);
	vnpu_at_release(r);
	f->wrapped_number = true;
	r = vnpu_op_mul_Tensor(f, f);	/* two wrapped: the default dtype */
	ck_assert(r && r->dtype == VNPU_AT_F32);
	vnpu_at_release(r);
	r = vnpu_op_add_Tensor(v, f, VNPU_AT_INT(1));	/* dimensioned decides */
	ck_assert(r && r->dtype == VNPU_AT_F64);
	vnpu_at_release(r);
	f->wrapped_number = false;
	/* PyTorch 2: a bool Scalar is a bool wrapped number (1.13: int64) */
	r = vnpu_op_add_Scalar(b, VNPU_AT_BOOLV(true), VNPU_AT_INT(1));
	ck_assert(r && r->dtype == VNPU_AT_BOOL);
	vnpu_at_release(r);
	r = vnpu_op_add_Scalar(b, VNPU_AT_INT(1), VNPU_AT_INT(1));
	ck_assert(r && r->dtype == VNPU_AT_I64);
	vnpu_at_release(r);
	r = vnpu_op_mul_Tensor(b, i);	/* a 0-dim int raises bool */
	ck_assert(r && r->dtype == VNPU_AT_I32);
	vnpu_at_release(r);
	vnpu_at_release(i);
	vnpu_at_release(f);
	vnpu_at_release(v);
	vnpu_at_release(b);
}
END_TEST

/* cross_entropy_loss forms PyTorch takes, against the class-index form:
 * one-hot probabilities, and (N, C, d) inputs flattened by hand */
START_TEST(cross_entropy_forms)
{
	static const int64_t cls[] = { 2, 0, 1, 1, 0, 2 };
	struct vnpu_at_tensor *x = f64(2, (int64_t[]){ 6, 3 }, -2, 2, OT_CONTIG);
	struct vnpu_at_tensor *t = vnpu_at_empty(1, (int64_t[]){ 6 }, VNPU_AT_I64,
						 VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *oh, *p, *a, *c, *x3, *t2, *k;

	memcpy(vnpu_at_data(t), cls, sizeof(cls));
	oh = vnpu_at_empty(2, (int64_t[]){ 6, 3 }, VNPU_AT_F64, VNPU_AT_DEV_CPU);
	for (int n = 0; n < 6; n++)
		for (int j = 0; j < 3; j++)
			((double *)vnpu_at_data(oh))[n * 3 + j] = j == cls[n];
	for (int64_t red = 0; red < 3; red++) {
		a = vnpu_op_cross_entropy_loss(x, t, NULL, red, -100, 0.1);
		p = vnpu_op_cross_entropy_loss(x, oh, NULL, red, -100, 0.1);
		ck_assert_msg(a && p, "%s", vnpu_at_error_message());
		ot_expect_close("one-hot probabilities", a, p, 1e-12, 1e-12);
		vnpu_at_release(a);
		vnpu_at_release(p);
	}
	/* rows (n, d) of a [2, 3, 3] input are rows n * 3 + d of x */
	c = vnpu_op_view(x, VNPU_AT_INTS(2, 3, 3));
	x3 = vnpu_op_permute(c, VNPU_AT_INTS(0, 2, 1));
	t2 = vnpu_op_view(t, VNPU_AT_INTS(2, 3));
	a = vnpu_op_cross_entropy_loss(x, t, NULL, 0, -100, 0.0);
	k = vnpu_op_cross_entropy_loss(x3, t2, NULL, 0, -100, 0.0);
	ck_assert_msg(k && k->ndim == 2 && k->sizes[0] == 2 && k->sizes[1] == 3,
		      "%s", vnpu_at_error_message());
	p = vnpu_op_view(a, VNPU_AT_INTS(2, 3));
	ot_expect_close("(N, C, d) input", p, k, 1e-12, 1e-12);
	vnpu_at_release(p);
	vnpu_at_release(a);
	vnpu_at_release(k);
	vnpu_at_release(c);
	vnpu_at_release(x3);
	vnpu_at_release(t2);
	vnpu_at_release(oh);
	vnpu_at_release(x);
	vnpu_at_release(t);
}
END_TEST

/* PyTorch's default dtype decides float factories, float Python scalars
 * and float ops on integer tensors; only float dtypes may be it */
START_TEST(default_dtype)
{
	int64_t n = 3;
	struct vnpu_at_tensor *i = vnpu_at_empty(1, &n, VNPU_AT_I32, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *r[4];

	ck_assert(vnpu_at_default_dtype() == VNPU_AT_F32);
	ck_assert(!vnpu_at_set_default_dtype(VNPU_AT_I64));
	ck_assert_int_eq(vnpu_at_error_code(), VNPU_AT_ERR_VALUE);
	vnpu_at_error_clear();
	ck_assert(vnpu_at_set_default_dtype(VNPU_AT_F64));
	vnpu_at_release(vnpu_op_fill__Scalar(i, VNPU_AT_INT(3)));
	r[0] = vnpu_op_div_Tensor(i, i);
	r[1] = vnpu_op_add_Scalar(i, VNPU_AT_DOUBLE(0.5), VNPU_AT_INT(1));
	r[2] = vnpu_op_full(VNPU_AT_INTS(2), VNPU_AT_DOUBLE(1.5), VNPU_AT_DTYPE_NONE,
			    VNPU_AT_DEV_CPU);
	r[3] = vnpu_op_zeros(VNPU_AT_INTS(2), VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_CPU);
	ck_assert(vnpu_at_set_default_dtype(VNPU_AT_F32));
	for (int k = 0; k < 4; k++) {
		ck_assert_msg(r[k], "%s", vnpu_at_error_message());
		ck_assert_int_eq(r[k]->dtype, VNPU_AT_F64);
		vnpu_at_release(r[k]);
	}
	r[0] = vnpu_op_div_Tensor(i, i);
	ck_assert(r[0] && r[0]->dtype == VNPU_AT_F32);
	vnpu_at_release(r[0]);
	vnpu_at_release(i);
}
END_TEST

/* int64 convolution and average pooling are exact, as PyTorch's CPU */
START_TEST(int64_conv_pool)
{
	struct vnpu_at_tensor *x = ot_rand(4, (int64_t[]){ 1, 2, 5, 5 }, VNPU_AT_I64,
					   -9, 9, OT_STRIDED);
	struct vnpu_at_tensor *w = ot_rand(4, (int64_t[]){ 3, 2, 3, 3 }, VNPU_AT_I64,
					   -9, 9, OT_CONTIG);
	struct vnpu_at_tensor *xd = vnpu_op__to_copy(x, VNPU_AT_F64, VNPU_AT_DEV_CPU, false);
	struct vnpu_at_tensor *wd = vnpu_op__to_copy(w, VNPU_AT_F64, VNPU_AT_DEV_CPU, false);
	struct vnpu_at_tensor *ci, *cd, *cc, *pi;

	ci = vnpu_op_conv2d(x, w, NULL, VNPU_AT_INTS(1), VNPU_AT_INTS(1), VNPU_AT_INTS(1), 1);
	cd = vnpu_op_conv2d(xd, wd, NULL, VNPU_AT_INTS(1), VNPU_AT_INTS(1), VNPU_AT_INTS(1), 1);
	ck_assert_msg(ci && ci->dtype == VNPU_AT_I64, "%s", vnpu_at_error_message());
	cc = vnpu_op__to_copy(ci, VNPU_AT_F64, VNPU_AT_DEV_CPU, false);
	ot_expect_close("int64 conv2d", cd, cc, 0, 0);
	/* 2x2 windows: the integer sum divided by 4, truncated */
	pi = vnpu_op_avg_pool2d(x, VNPU_AT_INTS(2), VNPU_AT_NO_INTS, VNPU_AT_INTS(0), false,
				true, (struct vnpu_at_opt_int){ false, 0 });
	ck_assert_msg(pi && pi->dtype == VNPU_AT_I64, "%s", vnpu_at_error_message());
	for (int64_t c = 0; c < 2; c++) {
		int64_t sum = 0;

		for (int64_t h = 0; h < 2; h++)
			for (int64_t ww = 0; ww < 2; ww++)
				sum += *(int64_t *)((char *)vnpu_at_data(x) +
						    8 * (c * x->strides[1] + h * x->strides[2] +
							 ww * x->strides[3]));
		ck_assert_int_eq(((int64_t *)vnpu_at_data(pi))[c * 4], sum / 4);
	}
	vnpu_at_release(pi);
	vnpu_at_release(cc);
	vnpu_at_release(ci);
	vnpu_at_release(cd);
	vnpu_at_release(xd);
	vnpu_at_release(wd);
	vnpu_at_release(x);
	vnpu_at_release(w);
}
END_TEST

/* max_pool2d takes the integer dtypes (PyTorch 2's CPU): exact for int64
 * beyond 2^53, uint8 unsigned; bool is refused */
START_TEST(int_max_pool)
{
	static const int64_t big[4] = { (INT64_C(1) << 53) + 1, (INT64_C(1) << 53),
					INT64_MIN, (INT64_C(1) << 53) - 1 };
	static const uint8_t u8[4] = { 7, 200, 129, 3 };
	struct vnpu_at_tensor *x = vnpu_at_empty(3, (int64_t[]){ 1, 2, 2 }, VNPU_AT_I64,
						 VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *u = vnpu_at_empty(3, (int64_t[]){ 1, 2, 2 }, VNPU_AT_U8,
						 VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *b = vnpu_at_empty(3, (int64_t[]){ 1, 2, 2 }, VNPU_AT_BOOL,
						 VNPU_AT_DEV_CPU);
	struct vnpu_ret_max_pool2d_with_indices r;

	ck_assert(x && u && b);
	memcpy(vnpu_at_data(x), big, sizeof(big));
	memcpy(vnpu_at_data(u), u8, sizeof(u8));
	memset(vnpu_at_data(b), 0, 4);
	r = vnpu_op_max_pool2d_with_indices(x, VNPU_AT_INTS(2), VNPU_AT_NO_INTS,
					    VNPU_AT_INTS(0), VNPU_AT_INTS(1), false);
	ck_assert_msg(r.r0 && r.r0->dtype == VNPU_AT_I64, "%s", vnpu_at_error_message());
	ck_assert(*(int64_t *)vnpu_at_data(r.r0) == big[0]);
	ck_assert_int_eq(*(int64_t *)vnpu_at_data(r.r1), 0);
	vnpu_at_release(r.r0);
	vnpu_at_release(r.r1);
	r = vnpu_op_max_pool2d_with_indices(u, VNPU_AT_INTS(2), VNPU_AT_NO_INTS,
					    VNPU_AT_INTS(0), VNPU_AT_INTS(1), false);
	ck_assert_msg(r.r0 && r.r0->dtype == VNPU_AT_U8, "%s", vnpu_at_error_message());
	ck_assert_int_eq(*(uint8_t *)vnpu_at_data(r.r0), 200);
	ck_assert_int_eq(*(int64_t *)vnpu_at_data(r.r1), 1);
	vnpu_at_release(r.r0);
	vnpu_at_release(r.r1);
	r = vnpu_op_max_pool2d_with_indices(b, VNPU_AT_INTS(2), VNPU_AT_NO_INTS,
					    VNPU_AT_INTS(0), VNPU_AT_INTS(1), false);
	ck_assert(!r.r0 && !r.r1);
	ck_assert(strstr(vnpu_at_error_message(), "not implemented for 'bool'"));
	vnpu_at_release(x);
	vnpu_at_release(u);
	vnpu_at_release(b);
}
END_TEST

/* float16 sigmoid_backward rounds each op to float16, as PyTorch's CPU
 * (2.13: sigmoid_backward(0.9580078125, 0.7578125) is 0.1759033203125 in
 * float16, where rounding g * (1 - y) * y once gives 0.17578125) */
START_TEST(sigmoid_backward_f16)
{
	struct vnpu_at_tensor *g = vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(0.9580078125),
							 VNPU_AT_F16, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *y = vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(0.7578125),
							 VNPU_AT_F16, VNPU_AT_DEV_CPU);
	struct vnpu_at_tensor *r = vnpu_op_sigmoid_backward(g, y);

	ck_assert_msg(r && r->dtype == VNPU_AT_F16, "%s", vnpu_at_error_message());
	ck_assert_double_eq(vnpu_at_load(VNPU_AT_F16, vnpu_at_data(r)),
			    0.1759033203125);
	vnpu_at_release(r);
	vnpu_at_release(g);
	vnpu_at_release(y);
}
END_TEST

/* matmul of a 2-D by a batched operand (folded, transposed) equals bmm of
 * the expanded operand */
START_TEST(matmul_fold_transposed)
{
	struct vnpu_at_tensor *a = f64(2, (int64_t[]){ 4, 3 }, -1, 1, OT_TRANSPOSED);
	struct vnpu_at_tensor *b = f64(3, (int64_t[]){ 2, 3, 5 }, -1, 1, OT_STRIDED);
	struct vnpu_at_tensor *m = vnpu_op_matmul(a, b), *e, *r;

	e = vnpu_op_expand(a, VNPU_AT_INTS(2, 4, 3), false);
	r = e ? vnpu_op_bmm(e, b) : NULL;
	ck_assert_msg(m && r, "%s", vnpu_at_error_message());
	ot_expect_close("2-D @ 3-D", r, m, 1e-12, 1e-12);
	vnpu_at_release(m);
	vnpu_at_release(e);
	vnpu_at_release(r);
	vnpu_at_release(a);
	vnpu_at_release(b);
}
END_TEST

static Suite *ops_cpu_suite(void)
{
	Suite *s = suite_create("ops_cpu");
	TCase *tc = tcase_create("reference");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, convolution_reference);
	tcase_add_test(tc, pooling_reference);
	tcase_add_test(tc, pooling_huge_windows);
	tcase_add_test(tc, norm_reference);
	tcase_add_test(tc, loss_reference);
	tcase_add_test(tc, reduce_pointwise_index);
	tcase_add_test(tc, bmm_addmm_reference);
	tcase_add_test(tc, backward_finite_differences);
	tcase_add_test(tc, scalar_conversion);
	tcase_add_test(tc, arange_like_pytorch);
	tcase_add_test(tc, clamp_nan_bounds);
	tcase_add_test(tc, matmul_errors);
	tcase_add_test(tc, pow_special_values);
	tcase_add_test(tc, wrapped_number_dtype);
	tcase_add_test(tc, inplace_and_out_checks);
	tcase_add_test(tc, promotion_ranks);
	tcase_add_test(tc, cross_entropy_forms);
	tcase_add_test(tc, int64_conv_pool);
	tcase_add_test(tc, default_dtype);
	tcase_add_test(tc, matmul_fold_transposed);
	tcase_add_test(tc, int_max_pool);
	tcase_add_test(tc, sigmoid_backward_f16);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ops_cpu_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
