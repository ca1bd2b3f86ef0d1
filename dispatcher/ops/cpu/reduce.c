/* SPDX-License-Identifier: MIT */
/*
 * CPU reference kernels: reductions other than sum and mean (those are in
 * core.c): prod, max/min, argmax/argmin, cumsum/cumprod, sort,
 * docs/dispatcher.md. Any strides and
 * dim lists; floats accumulate in double, integers in int64; max/min
 * propagate NaN and argmax/argmin take the first NaN or the first extremum
 * as PyTorch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../kernel_common.h"

enum red_op {
	RED_SUM,
	RED_MEAN,
	RED_MAX,
	RED_MIN,
	RED_ARGMAX,
	RED_ARGMIN,
	RED_PROD,
};

/*
 * Dim list to mask. A 0-dim tensor accepts dim 0 / -1 (reducing nothing),
 * as PyTorch treats it as 1-D for dim wrapping.
 */
static bool red_mask(const char *op, const struct vnpu_at_tensor *t,
		     struct vnpu_at_int_array dims, bool all_if_empty,
		     uint32_t *mask)
{
	if (t->ndim == 0) {
		for (int64_t i = 0; i < dims.n; i++)
			if (dims.v[i] != 0 && dims.v[i] != -1) {
				vnpu_at_error_set(VNPU_AT_ERR_INDEX,
					"%s: Dimension out of range (expected to be in range of [-1, 0], but got %lld)",
					op, (long long)dims.v[i]);
				return false;
			}
		*mask = 0;
		return true;
	}
	if (dims.n == 0 && !all_if_empty) {
		*mask = 0;
		return true;
	}
	return vnpu_at_dim_mask(op, dims, t->ndim, mask);
}

/* Extremum reductions refuse an empty reduced dim, naming it. */
static bool red_nonempty(const char *op, const char *py,
			 const struct vnpu_at_tensor *t, uint32_t mask)
{
	for (uint32_t d = 0; d < t->ndim; d++)
		if ((mask >> d & 1) && t->sizes[d] == 0) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: %s(): Expected reduction dim %u to have non-zero size.",
				op, py, d);
			return false;
		}
	return true;
}

/* Is candidate better than best for op (NaN counts as the extremum)? */
static bool red_better(enum red_op op, double cand, double best)
{
	if (isnan(best))
		return false;
	if (isnan(cand))
		return true;
	if (op == RED_MAX || op == RED_ARGMAX)
		return cand > best;
	return cand < best;
}

/*
 * Reduces t over mask into a new tensor (values of out_dt and/or int64
 * indices; either may be NULL-requested by passing NULL pointers).
 * `acc_dt` is the dtype elements are cast to before accumulating.
 */
static bool red_run(const struct vnpu_at_tensor *t, uint32_t mask,
		    bool keepdim, enum red_op op, enum vnpu_at_dtype acc_dt,
		    enum vnpu_at_dtype out_dt, struct vnpu_at_tensor **values,
		    struct vnpu_at_tensor **indices)
{
	struct kc_reduce_plan rp;
	const char *base = vnpu_at_data(t);
	char *vout = NULL;
	int64_t *iout = NULL;
	size_t vsz = vnpu_at_dtype_size(out_dt);
	bool int_acc = kc_is_int(acc_dt);

	kc_reduce_plan_init(&rp, t, mask, keepdim);
	if (values) {
		*values = vnpu_at_empty(rp.out_ndim, rp.out_sizes, out_dt,
					VNPU_AT_DEV_CPU);
		if (!*values)
			return false;
		vout = vnpu_at_data(*values);
	}
	if (indices) {
		*indices = vnpu_at_empty(rp.out_ndim, rp.out_sizes, VNPU_AT_I64,
					 VNPU_AT_DEV_CPU);
		if (!*indices) {
			if (values)
				vnpu_at_release(*values);
			return false;
		}
		iout = vnpu_at_data(*indices);
	}
	for (int64_t o = 0; o < rp.nout; o++) {
		const char *row = base + kc_reduce_outer(&rp, o);
		double dacc = 0.0;
		int64_t iacc = 0, best_i = 0;

		if (op == RED_SUM || op == RED_MEAN) {
			for (int64_t r = 0; r < rp.nred_elems; r++) {
				const char *p = row + kc_reduce_inner(&rp, r);

				if (int_acc)
					iacc = (int64_t)((uint64_t)iacc +
						(uint64_t)kc_round_int(acc_dt,
						vnpu_at_load_int(t->dtype, p)));
				else
					dacc += kc_round(acc_dt,
						vnpu_at_load(t->dtype, p));
			}
			if (op == RED_MEAN)
				dacc /= (double)rp.nred_elems;
		} else if (op == RED_PROD) {
			dacc = 1.0;
			iacc = 1;
			for (int64_t r = 0; r < rp.nred_elems; r++) {
				const char *p = row + kc_reduce_inner(&rp, r);

				if (int_acc)
					iacc = (int64_t)((uint64_t)iacc *
						(uint64_t)kc_round_int(acc_dt,
						vnpu_at_load_int(t->dtype, p)));
				else
					dacc *= kc_round(acc_dt,
						vnpu_at_load(t->dtype, p));
			}
		} else if (int_acc) {
			for (int64_t r = 0; r < rp.nred_elems; r++) {
				int64_t v = vnpu_at_load_int(t->dtype,
					row + kc_reduce_inner(&rp, r));
				bool max = op == RED_MAX || op == RED_ARGMAX;

				if (r == 0 || (max ? v > iacc : v < iacc)) {
					iacc = v;
					best_i = r;
				}
			}
		} else {
			for (int64_t r = 0; r < rp.nred_elems; r++) {
				double v = vnpu_at_load(t->dtype,
					row + kc_reduce_inner(&rp, r));

				if (r == 0 || red_better(op, v, dacc)) {
					dacc = v;
					best_i = r;
				}
			}
		}
		if (vout) {
			if (int_acc)
				vnpu_at_store_int(out_dt, vout + o * vsz, iacc);
			else
				vnpu_at_store(out_dt, vout + o * vsz, dacc);
		}
		if (iout)
			iout[o] = best_i;
	}
	return true;
}

static struct vnpu_at_tensor *amax_amin(const char *op, const char *py,
					enum red_op rop,
					struct vnpu_at_tensor *self,
					struct vnpu_at_int_array dim,
					bool keepdim)
{
	struct vnpu_at_tensor *out;
	uint32_t mask;

	if (!red_mask(op, self, dim, true, &mask) ||
	    !red_nonempty(op, py, self, mask))
		return NULL;
	if (!red_run(self, mask, keepdim, rop, self->dtype, self->dtype, &out,
		     NULL))
		return NULL;
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_amax(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     struct vnpu_at_int_array dim,
				     bool keepdim)
{
	(void)ks;
	return amax_amin("aten::amax", "amax", RED_MAX, self, dim, keepdim);
}

struct vnpu_at_tensor *vnpu_cpu_amin(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     struct vnpu_at_int_array dim,
				     bool keepdim)
{
	(void)ks;
	return amax_amin("aten::amin", "amin", RED_MIN, self, dim, keepdim);
}

/* PyTorch's prod: integers and bool give int64 unless dtype says
 * otherwise; an empty product is 1. */
static struct vnpu_at_tensor *prod_of(const char *op,
				      struct vnpu_at_tensor *self,
				      uint32_t mask, bool keepdim,
				      enum vnpu_at_dtype dtype)
{
	enum vnpu_at_dtype dt = dtype != VNPU_AT_DTYPE_NONE ? dtype :
				kc_is_int(self->dtype) ? VNPU_AT_I64 :
				(enum vnpu_at_dtype)self->dtype;
	struct vnpu_at_tensor *out;

	if (!red_run(self, mask, keepdim, RED_PROD, dt, dt, &out, NULL))
		return NULL;
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_prod(vnpu_keyset_t ks,
				     struct vnpu_at_tensor *self,
				     enum vnpu_at_dtype dtype)
{
	(void)ks;
	return prod_of("aten::prod", self, self->ndim ? (1u << self->ndim) - 1 : 0,
		       false, dtype);
}

struct vnpu_at_tensor *vnpu_cpu_prod_dim_int(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     int64_t dim, bool keepdim,
					     enum vnpu_at_dtype dtype)
{
	uint32_t mask;

	(void)ks;
	if (!red_mask("aten::prod.dim_int", self,
		      (struct vnpu_at_int_array){ .v = &dim, .n = 1 }, true,
		      &mask))
		return NULL;
	return prod_of("aten::prod.dim_int", self, mask, keepdim, dtype);
}

static struct vnpu_at_tensor *arg_extremum(const char *op, const char *py,
					   enum red_op rop,
					   struct vnpu_at_tensor *self,
					   struct vnpu_at_opt_int dim,
					   bool keepdim)
{
	struct vnpu_at_tensor *idx;
	uint32_t mask;

	if (!dim.has) {
		if (vnpu_at_numel(self) == 0)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: %s(): Expected reduction dim to be specified for input.numel() == 0.",
				op, py);
		/* Over the flattened tensor: the inner walk is row-major
		 * over every dim, so its counter is the flat index. */
		mask = (1u << self->ndim) - 1;
	} else {
		if (!red_mask(op, self, (struct vnpu_at_int_array){ &dim.v, 1 },
			      true, &mask) ||
		    !red_nonempty(op, py, self, mask))
			return NULL;
	}
	if (!red_run(self, mask, keepdim, rop, self->dtype, self->dtype, NULL,
		     &idx))
		return NULL;
	return idx;
}

struct vnpu_at_tensor *vnpu_cpu_argmax(vnpu_keyset_t ks,
				       struct vnpu_at_tensor *self,
				       struct vnpu_at_opt_int dim,
				       bool keepdim)
{
	(void)ks;
	return arg_extremum("aten::argmax", "argmax", RED_ARGMAX, self, dim,
			    keepdim);
}

struct vnpu_at_tensor *vnpu_cpu_argmin(vnpu_keyset_t ks,
				       struct vnpu_at_tensor *self,
				       struct vnpu_at_opt_int dim,
				       bool keepdim)
{
	(void)ks;
	return arg_extremum("aten::argmin", "argmin", RED_ARGMIN, self, dim,
			    keepdim);
}

struct vnpu_ret_max_dim vnpu_cpu_max_dim(vnpu_keyset_t ks,
					 struct vnpu_at_tensor *self,
					 int64_t dim, bool keepdim)
{
	struct vnpu_ret_max_dim r = { 0 };
	uint32_t mask;

	(void)ks;
	if (!red_mask("aten::max.dim", self,
		      (struct vnpu_at_int_array){ &dim, 1 }, true, &mask) ||
	    !red_nonempty("aten::max.dim", "max", self, mask))
		return r;
	if (!red_run(self, mask, keepdim, RED_ARGMAX, self->dtype, self->dtype,
		     &r.r0, &r.r1))
		return (struct vnpu_ret_max_dim){ 0 };
	return r;
}

/*
 * cumsum and cumprod: self converted to the result dtype first (integers
 * and bool give int64 unless dtype says otherwise), then each line along
 * dim folded in index order in PyTorch's CPU accumulation type: double for
 * f32 and f64, float for f16 and bf16, wrapping int64 for the integers.
 * A 0-dim tensor is its own prefix.
 */
static struct vnpu_at_tensor *cum_of(const char *op, bool prod,
				     struct vnpu_at_tensor *self, int64_t dim,
				     enum vnpu_at_dtype dtype)
{
	enum vnpu_at_dtype dt = dtype != VNPU_AT_DTYPE_NONE ? dtype :
				kc_is_int(self->dtype) ? VNPU_AT_I64 :
				(enum vnpu_at_dtype)self->dtype;
	struct vnpu_at_tensor *src, *out;
	struct kc_reduce_plan sp, opl;
	int64_t d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	const char *s;
	char *o;

	if (d < 0)
		return NULL;
	if (dt == VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: \"%s_out_cpu\" not implemented for 'Bool'", op,
			prod ? "cumprod" : "cumsum");
	/* a 0-dim tensor: a copy of itself in dt */
	if (!self->ndim)
		return vnpu_op__to_copy(self, dt, VNPU_AT_DEV_CPU, false);
	src = vnpu_at_converted(vnpu_at_retain(self), dt);
	if (!src)
		return NULL;
	out = vnpu_at_empty(self->ndim, self->sizes, dt, VNPU_AT_DEV_CPU);
	if (!out) {
		vnpu_at_release(src);
		return NULL;
	}
	kc_reduce_plan_init(&sp, src, 1u << d, true);
	kc_reduce_plan_init(&opl, out, 1u << d, true);
	s = vnpu_at_data(src);
	o = vnpu_at_data(out);
	for (int64_t r = 0; r < sp.nout; r++) {
		const char *sl = s + kc_reduce_outer(&sp, r);
		char *ol = o + kc_reduce_outer(&opl, r);
		double acc = prod;
		float facc = (float)prod;
		uint64_t iacc = prod;

		for (int64_t j = 0; j < sp.nred_elems; j++) {
			const char *x = sl + kc_reduce_inner(&sp, j);
			char *y = ol + kc_reduce_inner(&opl, j);

			if (dt == VNPU_AT_F32 || dt == VNPU_AT_F64) {
				double v = vnpu_at_load(dt, x);

				acc = prod ? acc * v : acc + v;
				vnpu_at_store(dt, y, acc);
			} else if (vnpu_at_dtype_is_float(dt)) {
				float v = (float)vnpu_at_load(dt, x);

				facc = prod ? facc * v : facc + v;
				vnpu_at_store(dt, y, facc);
			} else {
				uint64_t v = (uint64_t)vnpu_at_load_int(dt, x);

				iacc = prod ? iacc * v : iacc + v;
				vnpu_at_store_int(dt, y, (int64_t)iacc);
			}
		}
	}
	vnpu_at_release(src);
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_cumsum(vnpu_keyset_t ks,
				       struct vnpu_at_tensor *self, int64_t dim,
				       enum vnpu_at_dtype dtype)
{
	(void)ks;
	return cum_of("aten::cumsum", false, self, dim, dtype);
}

struct vnpu_at_tensor *vnpu_cpu_cumprod(vnpu_keyset_t ks,
					struct vnpu_at_tensor *self, int64_t dim,
					enum vnpu_at_dtype dtype)
{
	(void)ks;
	return cum_of("aten::cumprod", true, self, dim, dtype);
}

/* ---- sort ---------------------------------------------------------------------- */

/* One element of a line being sorted: its key and where it came from. */
struct sort_item {
	double f;	/* float dtypes */
	int64_t i;	/* integers and bool */
	int64_t pos;
};

/* How a line is ordered: floating keys or integer ones, descending. */
struct sort_order {
	bool floating, descending;
};

/* The stable order of the device's SORT (docs/hw-spec.md): by key, NaN
 * after every number, the keys reversed when descending; then by
 * position. */
static int sort_cmp(const void *x, const void *y, void *ctx)
{
	const struct sort_item *a = x, *b = y;
	const struct sort_order *o = ctx;
	int r;

	if (!o->floating)
		r = (a->i > b->i) - (a->i < b->i);
	else if (isnan(a->f) || isnan(b->f))
		r = isnan(a->f) - isnan(b->f);
	else
		r = (a->f > b->f) - (a->f < b->f);
	if (o->descending)
		r = -r;
	return r ? r : (a->pos > b->pos) - (a->pos < b->pos);
}

/*
 * sort: each line along dim sorted stably (equal values keep their order,
 * also where PyTorch's stable=False leaves it unspecified), NaN after every
 * number ascending and before descending, as PyTorch's CPU; values and
 * int64 indices new contiguous tensors. A 0-dim self is its own sort.
 */
struct vnpu_ret_sort_stable vnpu_cpu_sort_stable(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						 int64_t dim, bool descending)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	bool floating = vnpu_at_dtype_is_float(dt);
	int64_t d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	struct sort_order order = { floating, descending };
	size_t item = vnpu_at_dtype_size(dt);
	struct vnpu_ret_sort_stable r = { 0 };
	struct kc_reduce_plan sp, vp, ip;
	struct sort_item *line = NULL;
	const char *s;
	char *v, *o;

	(void)ks;
	if (d < 0)
		return r;
	r.r0 = vnpu_at_empty(self->ndim, self->sizes, dt, VNPU_AT_DEV_CPU);
	r.r1 = r.r0 ? vnpu_at_empty(self->ndim, self->sizes, VNPU_AT_I64, VNPU_AT_DEV_CPU) : NULL;
	if (!r.r1)
		goto fail;
	if (!self->ndim) {
		memcpy(vnpu_at_data(r.r0), vnpu_at_data(self), item);
		vnpu_at_store_int(VNPU_AT_I64, vnpu_at_data(r.r1), 0);
		return r;
	}
	if (!vnpu_at_numel(self))
		return r;
	kc_reduce_plan_init(&sp, self, 1u << d, true);
	kc_reduce_plan_init(&vp, r.r0, 1u << d, true);
	kc_reduce_plan_init(&ip, r.r1, 1u << d, true);
	line = malloc((size_t)sp.nred_elems * sizeof(*line));
	if (!line) {
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "aten::sort.stable: out of host memory");
		goto fail;
	}
	s = vnpu_at_data(self);
	v = vnpu_at_data(r.r0);
	o = vnpu_at_data(r.r1);
	for (int64_t l = 0; l < sp.nout; l++) {
		const char *sl = s + kc_reduce_outer(&sp, l);

		for (int64_t j = 0; j < sp.nred_elems; j++) {
			const char *x = sl + kc_reduce_inner(&sp, j);

			line[j].pos = j;
			if (floating)
				line[j].f = vnpu_at_load(dt, x);
			else
				line[j].i = vnpu_at_load_int(dt, x);
		}
		qsort_r(line, (size_t)sp.nred_elems, sizeof(*line), sort_cmp, &order);
		for (int64_t j = 0; j < sp.nred_elems; j++) {
			/* the element itself, bit for bit (-0.0, NaN payloads) */
			memcpy(v + kc_reduce_outer(&vp, l) + kc_reduce_inner(&vp, j),
			       sl + kc_reduce_inner(&sp, line[j].pos), item);
			vnpu_at_store_int(VNPU_AT_I64,
					  o + kc_reduce_outer(&ip, l) + kc_reduce_inner(&ip, j),
					  line[j].pos);
		}
	}
	free(line);
	return r;
fail:
	vnpu_at_release(r.r0);
	vnpu_at_release(r.r1);
	return (struct vnpu_ret_sort_stable){ 0 };
}
