/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the op kernel tests (test_ops_cpu.c, test_ops_npu.c):
 * deterministic random tensors (contiguous, strided, transposed views),
 * element access by index, device moves and tolerance comparison.
 */
#ifndef VNPU_OPS_TEST_UTIL_H
#define VNPU_OPS_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnpu_dispatch.h"
#include "op_util.h"

static uint64_t ot_rng = 0x9e3779b97f4a7c15ull;

static inline void ot_seed(uint64_t s)
{
	ot_rng = s * 0x9e3779b97f4a7c15ull + 1;
}

static inline uint64_t ot_next(void)
{
	ot_rng ^= ot_rng << 13;
	ot_rng ^= ot_rng >> 7;
	ot_rng ^= ot_rng << 17;
	return ot_rng;
}

/* Uniform in [lo, hi). */
static inline double ot_uniform(double lo, double hi)
{
	return lo + (hi - lo) * (double)(ot_next() >> 11) / 9007199254740992.0;
}

static inline int64_t ot_randint(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(ot_next() % (uint64_t)(hi - lo));
}

/* Address of element idx of a CPU tensor. */
static inline char *ot_addr(const struct vnpu_at_tensor *t,
			    const int64_t *idx)
{
	int64_t off = 0;

	for (uint32_t d = 0; d < t->ndim; d++)
		off += idx[d] * t->strides[d];
	return (char *)t->storage->data +
	       (t->offset + off) * (int64_t)vnpu_at_dtype_size(t->dtype);
}

static inline double ot_get(const struct vnpu_at_tensor *t,
			    const int64_t *idx)
{
	return vnpu_at_load(t->dtype, ot_addr(t, idx));
}

/* Element i in row-major order of t's logical shape. */
static inline double ot_flat(const struct vnpu_at_tensor *t, int64_t i)
{
	int64_t idx[VNPU_AT_MAX_DIMS];

	for (uint32_t d = t->ndim; d-- > 0;) {
		idx[d] = i % t->sizes[d];
		i /= t->sizes[d];
	}
	return ot_get(t, idx);
}

static inline void ot_set_flat(struct vnpu_at_tensor *t, int64_t i, double v)
{
	int64_t idx[VNPU_AT_MAX_DIMS];

	for (uint32_t d = t->ndim; d-- > 0;) {
		idx[d] = i % t->sizes[d];
		i /= t->sizes[d];
	}
	vnpu_at_store(t->dtype, ot_addr(t, idx), v);
}

/* Views a random tensor can be: contiguous, every other element of the
 * last dim (offset 1), or the transpose of a contiguous tensor. */
enum ot_layout { OT_CONTIG, OT_STRIDED, OT_TRANSPOSED };

/* A CPU tensor of sizes with values uniform in [lo, hi), laid out as
 * `layout` over a larger storage. */
static inline struct vnpu_at_tensor *ot_rand(uint32_t nd, const int64_t *sizes,
					     enum vnpu_at_dtype dt, double lo,
					     double hi, enum ot_layout layout)
{
	int64_t bsz[VNPU_AT_MAX_DIMS], st[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *base, *v;
	int64_t off = 0;

	if (nd)
		memcpy(bsz, sizes, nd * sizeof(int64_t));
	if (nd < 2 && layout == OT_TRANSPOSED)
		layout = OT_STRIDED;
	if (nd == 0)
		layout = OT_CONTIG;
	if (layout == OT_STRIDED) {
		bsz[nd - 1] = 2 * sizes[nd - 1] + 1;
		off = 1;
	} else if (layout == OT_TRANSPOSED) {
		bsz[nd - 1] = sizes[nd - 2];
		bsz[nd - 2] = sizes[nd - 1];
	}
	base = vnpu_at_empty(nd, bsz, dt, VNPU_AT_DEV_CPU);
	ck_assert_ptr_nonnull(base);
	for (int64_t i = 0; i < vnpu_at_numel(base); i++)
		vnpu_at_store(dt, (char *)vnpu_at_data(base) +
			      i * (int64_t)vnpu_at_dtype_size(dt),
			      vnpu_at_dtype_is_float(dt) ?
			      ot_uniform(lo, hi) :
			      (double)ot_randint((int64_t)lo, (int64_t)hi));
	if (nd)
		memcpy(st, base->strides, nd * sizeof(int64_t));
	if (layout == OT_STRIDED) {
		st[nd - 1] = 2;
	} else if (layout == OT_TRANSPOSED) {
		st[nd - 1] = base->strides[nd - 2];
		st[nd - 2] = base->strides[nd - 1];
	}
	v = vnpu_at_view_of(base, nd, sizes, st, off);
	vnpu_at_release(base);
	ck_assert_ptr_nonnull(v);
	return v;
}

/* The same view on the npu: the base storage copied, the geometry kept. */
static inline struct vnpu_at_tensor *ot_to_npu(struct vnpu_at_tensor *t)
{
	int64_t n = (int64_t)(t->storage->nbytes / vnpu_at_dtype_size(t->dtype));
	struct vnpu_at_tensor *flat, *dev, *v;

	flat = vnpu_at_from_blob(t->storage->data, 1, &n, (int64_t[]){ 1 },
				 t->dtype);
	ck_assert_ptr_nonnull(flat);
	dev = vnpu_op__to_copy(flat, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NPU(0),
			       false);
	vnpu_at_release(flat);
	ck_assert_msg(dev != NULL, "to npu: %s", vnpu_at_error_message());
	v = vnpu_at_view_of(dev, t->ndim, t->sizes, t->strides, t->offset);
	vnpu_at_release(dev);
	ck_assert_ptr_nonnull(v);
	return v;
}

static inline struct vnpu_at_tensor *ot_to_cpu(struct vnpu_at_tensor *t)
{
	struct vnpu_at_tensor *c = vnpu_op__to_copy(t, VNPU_AT_DTYPE_NONE,
						    VNPU_AT_DEV_CPU, false);

	ck_assert_msg(c != NULL, "to cpu: %s", vnpu_at_error_message());
	return c;
}

static inline void ot_fmt(const struct vnpu_at_tensor *t, char *buf,
			  size_t size)
{
	vnpu_at_format_sizes(t, buf, size);
}

/*
 * Asserts got (any device) equals want (CPU) in shape and dtype, and
 * elementwise within atol + rtol * |want| (NaN matches NaN).
 */
static inline void ot_expect_close(const char *what,
				   struct vnpu_at_tensor *want,
				   struct vnpu_at_tensor *got, double rtol,
				   double atol)
{
	struct vnpu_at_tensor *g;
	char a[96], b[96];
	double worst = 0.0;
	int64_t worst_i = -1;

	ck_assert_msg(want != NULL, "%s: reference failed: %s", what,
		      vnpu_at_error_message());
	ck_assert_msg(got != NULL, "%s: failed: %s", what,
		      vnpu_at_error_message());
	g = vnpu_at_is_npu(got) ? ot_to_cpu(got) : vnpu_at_retain(got);
	ot_fmt(want, a, sizeof(a));
	ot_fmt(g, b, sizeof(b));
	ck_assert_msg(want->ndim == g->ndim &&
		      !memcmp(want->sizes, g->sizes, want->ndim * sizeof(int64_t)),
		      "%s: shape %s, expected %s", what, b, a);
	ck_assert_msg(want->dtype == g->dtype, "%s: dtype %s, expected %s", what,
		      vnpu_at_dtype_name(g->dtype),
		      vnpu_at_dtype_name(want->dtype));
	for (int64_t i = 0; i < vnpu_at_numel(want); i++) {
		double x = ot_flat(want, i), y = ot_flat(g, i);
		double err;

		if (isnan(x) && isnan(y))
			continue;
		if (x == y)
			continue;
		err = fabs(x - y) / (atol + rtol * fabs(x));
		if (!(err <= worst)) {
			worst = isnan(err) ? INFINITY : err;
			worst_i = i;
		}
	}
	ck_assert_msg(worst <= 1.0,
		      "%s %s: element %lld is %.9g, expected %.9g (rtol %g atol %g)",
		      what, a, (long long)worst_i, ot_flat(g, worst_i),
		      ot_flat(want, worst_i), rtol, atol);
	vnpu_at_release(g);
}

#endif /* VNPU_OPS_TEST_UTIL_H */
