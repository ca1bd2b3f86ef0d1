// SPDX-License-Identifier: MIT
/*
 * REDUCE over any subset of dims. Each block owns a range of output
 * elements; for each it walks the reduced dims of the input with an index
 * counter, the innermost reduced dim as a strided run.
 *
 * Float SUM/MEAN accumulate in f64 for F32 and F64 input (F64 loads and
 * compares in double as well) and in f32 for F16/BF16; MAX/MIN propagate
 * NaN; ARGMAX/ARGMIN return the first extremum, a NaN counting as beyond
 * every number (the first NaN wins), as PyTorch does.
 * Integer dtypes (I8, U8, I16, I32, I64, and BOOL as 0/1) take SUM (int64
 * accumulation wrapping as two's complement, stored in the dtype's width),
 * MAX, MIN and the arg variants; MEAN is for floats.
 * PROD multiplies one element after the other in the walk's (row-major)
 * order: F32 in f32, F16 and BF16 in f32 rounded to their dtype after each
 * product (PyTorch accumulates their products in the half type), F64 in
 * double, integers and BOOL in int64 wrapping.
 */
#include <math.h>
#include <stdint.h>

#include "elementwise.h"

struct reduce_plan {
	uint32_t op;
	uint32_t dtype;
	/* kept dims: one output element per position */
	uint32_t kept_ndim;
	int64_t kept_sizes[VNPU_MAX_DIMS];
	int64_t kept_in_strides[VNPU_MAX_DIMS];
	int64_t kept_out_strides[VNPU_MAX_DIMS];
	/* reduced dims, size-1 dims dropped; the last one is the run */
	uint32_t red_ndim;
	int64_t red_sizes[VNPU_MAX_DIMS];
	int64_t red_strides[VNPU_MAX_DIMS];
	uint64_t count; /* elements reduced into each output */
};

/* Accumulator state over one output element. */
struct reduce_acc {
	double sum;    /* f64 sums (F32, F64) */
	float fsum;    /* f32 sums (F16, BF16) */
	uint64_t isum; /* wraps; the store keeps the dtype's width */
	float fbest;
	double dbest; /* F64 */
	int64_t ibest;
	int64_t best_index; /* ARG*: position along the reduced dim */
	bool any;	    /* fbest/ibest hold a value */
	float fprod;	    /* PROD of F32, F16, BF16 */
	double dprod;	    /* PROD of F64 */
	uint64_t iprod;	    /* PROD of integers; wraps */
};

/* An f32 value rounded to F16 or BF16 and back (F32 as it is). */
static float round_to_dtype(uint32_t dtype, float v)
{
	switch (dtype) {
	case VNPU_DTYPE_F16:
		return vnpu_f16_to_f32(vnpu_f32_to_f16(v));
	case VNPU_DTYPE_BF16:
		return vnpu_bf16_to_f32(vnpu_f32_to_bf16(v));
	default:
		return v;
	}
}

/* MAX/MIN and ARGMAX/ARGMIN: folds n values of T (float into acc->fbest,
 * double into acc->dbest) at position `first` along the reduced dim. */
#define DEFINE_FOLD_EXTREMUM(name, T, best)                                    \
	static void name(const struct reduce_plan *rp, struct reduce_acc *acc, \
			 const T *x, int64_t n, int64_t first)                 \
	{                                                                      \
		int64_t i = 0;                                                 \
                                                                               \
		if (rp->op == VNPU_REDUCE_MAX || rp->op == VNPU_REDUCE_MIN) {  \
			if (!acc->any) {                                       \
				acc->best = x[0];                              \
				acc->any = true;                               \
				i = 1;                                         \
			}                                                      \
			/* once NaN, only another NaN replaces it */           \
			if (rp->op == VNPU_REDUCE_MAX) {                       \
				for (; i < n; i++)                             \
					if (x[i] > acc->best || x[i] != x[i])  \
						acc->best = x[i];              \
			} else {                                               \
				for (; i < n; i++)                             \
					if (x[i] < acc->best || x[i] != x[i])  \
						acc->best = x[i];              \
			}                                                      \
			return;                                                \
		}                                                              \
		/* ARGMAX, ARGMIN */                                           \
		if (!acc->any) {                                               \
			acc->best = x[0];                                      \
			acc->best_index = first;                               \
			acc->any = true;                                       \
			i = 1;                                                 \
		}                                                              \
		for (; i < n && acc->best == acc->best; i++) {                 \
			bool better = x[i] != x[i] ||                          \
				      (rp->op == VNPU_REDUCE_ARGMAX            \
					       ? x[i] > acc->best              \
					       : x[i] < acc->best);            \
                                                                               \
			if (better) {                                          \
				acc->best = x[i];                              \
				acc->best_index = first + i;                   \
			}                                                      \
		}                                                              \
	}

DEFINE_FOLD_EXTREMUM(fold_extremum_f32, float, fbest)
DEFINE_FOLD_EXTREMUM(fold_extremum_f64, double, dbest)

/* Folds n floats at position `first` (along the reduced dim) into acc. */
static void fold_f32(const struct reduce_plan *rp, struct reduce_acc *acc,
		     const float *x, int64_t n, int64_t first)
{
	if (rp->op == VNPU_REDUCE_PROD) {
		float p = acc->fprod;

		if (rp->dtype == VNPU_DTYPE_F32)
			for (int64_t i = 0; i < n; i++)
				p *= x[i];
		else
			for (int64_t i = 0; i < n; i++)
				p = round_to_dtype(rp->dtype, p * x[i]);
		acc->fprod = p;
		return;
	}
	if (rp->op != VNPU_REDUCE_SUM && rp->op != VNPU_REDUCE_MEAN) {
		fold_extremum_f32(rp, acc, x, n, first);
		return;
	}
	if (rp->dtype == VNPU_DTYPE_F32) {
		double s = 0;

		for (int64_t i = 0; i < n; i++)
			s += x[i];
		acc->sum += s;
	} else {
		float s = 0;

		for (int64_t i = 0; i < n; i++)
			s += x[i];
		acc->fsum += s;
	}
}

/* F64: the sum in double, element after element in the walk's order. */
static void fold_f64(const struct reduce_plan *rp, struct reduce_acc *acc,
		     const double *x, int64_t n, int64_t first)
{
	if (rp->op == VNPU_REDUCE_PROD) {
		for (int64_t i = 0; i < n; i++)
			acc->dprod *= x[i];
		return;
	}
	if (rp->op != VNPU_REDUCE_SUM && rp->op != VNPU_REDUCE_MEAN) {
		fold_extremum_f64(rp, acc, x, n, first);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		acc->sum += x[i];
}

static void fold_i64(const struct reduce_plan *rp, struct reduce_acc *acc,
		     const int64_t *x, int64_t n, int64_t first)
{
	int64_t i = 0;

	switch (rp->op) {
	case VNPU_REDUCE_SUM:
		for (; i < n; i++)
			acc->isum += (uint64_t)x[i];
		return;
	case VNPU_REDUCE_PROD:
		for (; i < n; i++)
			acc->iprod *= (uint64_t)x[i];
		return;
	case VNPU_REDUCE_MAX:
	case VNPU_REDUCE_MIN:
		if (!acc->any) {
			acc->ibest = x[0];
			acc->any = true;
		}
		for (; i < n; i++)
			if (rp->op == VNPU_REDUCE_MAX ? x[i] > acc->ibest
						      : x[i] < acc->ibest)
				acc->ibest = x[i];
		return;
	default:
		if (!acc->any) {
			acc->ibest = x[0];
			acc->best_index = first;
			acc->any = true;
		}
		for (; i < n; i++)
			if (rp->op == VNPU_REDUCE_ARGMAX ? x[i] > acc->ibest
							 : x[i] < acc->ibest) {
				acc->ibest = x[i];
				acc->best_index = first + i;
			}
		return;
	}
}

/* Reduces the elements feeding one output, the input at element offset
 * `base` (from the buffer start). True when the cancellation hook (polled
 * through *work) stopped it. */
static bool reduce_one(const struct reduce_plan *rp, const char *in,
		       int64_t base, struct reduce_acc *acc, uint64_t *work)
{
	uint32_t itemsize = vnpu_dtype_size(rp->dtype);
	bool is_float = vnpu_dtype_is_float(rp->dtype);
	uint32_t outer = rp->red_ndim ? rp->red_ndim - 1 : 0;
	int64_t run = rp->red_ndim ? rp->red_sizes[outer] : 1;
	int64_t step = rp->red_ndim ? rp->red_strides[outer] : 0;
	struct vnpu_nd_counter c;
	uint64_t runs = run ? rp->count / (uint64_t)run : 0;

	memset(acc, 0, sizeof(*acc));
	acc->fprod = 1.0f;
	acc->dprod = 1.0;
	acc->iprod = 1;
	vnpu_nd_counter_init(&c, outer, rp->red_sizes, rp->red_strides, NULL,
			     0);
	for (uint64_t r = 0; r < runs; r++) {
		const char *p = in + (base + c.off[0]) * itemsize;

		for (int64_t done = 0; done < run; done += VNPU_EW_CHUNK) {
			int64_t n = run - done < VNPU_EW_CHUNK ? run - done
							       : VNPU_EW_CHUNK;
			const char *q = p + done * step * itemsize;

			if (vnpu_kernel_poll(work, (uint64_t)n))
				return true;
			if (rp->dtype == VNPU_DTYPE_F64) {
				double x[VNPU_EW_CHUNK];

				vnpu_ew_load_f64(q, step, rp->dtype, n, x);
				fold_f64(rp, acc, x, n, done);
			} else if (is_float) {
				float x[VNPU_EW_CHUNK];

				vnpu_ew_load_f32(q, step, rp->dtype, n, x);
				fold_f32(rp, acc, x, n, done);
			} else {
				int64_t x[VNPU_EW_CHUNK];

				vnpu_ew_load_i64(q, step, rp->dtype, n, x);
				fold_i64(rp, acc, x, n, done);
			}
		}
		vnpu_nd_counter_next(&c);
	}
	return false;
}

static void store_result(const struct reduce_plan *rp,
			 const struct reduce_acc *acc, char *out)
{
	double v;

	switch (rp->op) {
	case VNPU_REDUCE_ARGMAX:
	case VNPU_REDUCE_ARGMIN:
		vnpu_ew_store_i64(out, 1, VNPU_DTYPE_I64, 1, &acc->best_index);
		return;
	case VNPU_REDUCE_PROD:
		if (rp->dtype == VNPU_DTYPE_F64) {
			vnpu_ew_store_f64(out, 1, rp->dtype, 1, &acc->dprod);
		} else if (vnpu_dtype_is_float(rp->dtype)) {
			vnpu_st_f32(out, rp->dtype, acc->fprod);
		} else {
			int64_t prod = (int64_t)acc->iprod;

			vnpu_ew_store_i64(out, 1, rp->dtype, 1, &prod);
		}
		return;
	case VNPU_REDUCE_SUM:
	case VNPU_REDUCE_MEAN:
		if (rp->dtype == VNPU_DTYPE_F64) {
			v = acc->sum;
			if (rp->op == VNPU_REDUCE_MEAN)
				v /= (double)rp->count;
			vnpu_ew_store_f64(out, 1, rp->dtype, 1, &v);
			return;
		}
		if (!vnpu_dtype_is_float(rp->dtype)) {
			int64_t sum = (int64_t)acc->isum;

			vnpu_ew_store_i64(out, 1, rp->dtype, 1, &sum);
			return;
		}
		v = rp->dtype == VNPU_DTYPE_F32 ? acc->sum : acc->fsum;
		if (rp->op == VNPU_REDUCE_MEAN)
			v /= (double)rp->count; /* 0 / 0 is NaN */
		vnpu_st_f32(out, rp->dtype, (float)v);
		return;
	default:
		if (rp->dtype == VNPU_DTYPE_F64)
			vnpu_ew_store_f64(out, 1, rp->dtype, 1, &acc->dbest);
		else if (vnpu_dtype_is_float(rp->dtype))
			vnpu_st_f32(out, rp->dtype, acc->fbest);
		else
			vnpu_ew_store_i64(out, 1, rp->dtype, 1, &acc->ibest);
		return;
	}
}

static uint32_t reduce_validate(const void *params,
				const struct vnpu_kbuf *bufs, uint32_t nbufs)
{
	const struct vnpu_kp_reduce *p = params;
	const struct vnpu_tensor *in = &p->input, *out = &p->out;
	bool arg = p->op == VNPU_REDUCE_ARGMAX || p->op == VNPU_REDUCE_ARGMIN;
	bool extremum =
		arg || p->op == VNPU_REDUCE_MAX || p->op == VNPU_REDUCE_MIN;
	uint32_t st;

	if (p->op >= VNPU_REDUCE_COUNT)
		return VNPU_STATUS_INVALID_ARGS;
	st = vnpu_ew_check(in, bufs, nbufs, VNPU_ACCESS_READ);
	if (st == VNPU_STATUS_OK)
		st = vnpu_ew_check_out(out, bufs, nbufs);
	if (st != VNPU_STATUS_OK)
		return st;
	if ((p->dim_mask >> in->ndim) != 0) /* ndim <= 8 after the check */
		return VNPU_STATUS_INVALID_ARGS;
	if (arg && __builtin_popcount(p->dim_mask) != 1)
		return VNPU_STATUS_INVALID_ARGS;
	if (out->ndim != in->ndim)
		return VNPU_STATUS_INVALID_ARGS;
	for (uint32_t d = 0; d < in->ndim; d++) {
		bool reduced = (p->dim_mask >> d) & 1;

		if (out->sizes[d] != (reduced ? 1 : in->sizes[d]))
			return VNPU_STATUS_INVALID_ARGS;
		if (reduced && extremum && in->sizes[d] == 0)
			return VNPU_STATUS_INVALID_ARGS;
	}
	if (out->dtype != (arg ? (uint32_t)VNPU_DTYPE_I64 : in->dtype))
		return VNPU_STATUS_INVALID_ARGS;
	if (vnpu_dtype_is_floating(in->dtype))
		return VNPU_STATUS_OK;
	return p->op == VNPU_REDUCE_MEAN ? VNPU_STATUS_UNSUPPORTED
					 : VNPU_STATUS_OK;
}

static void reduce_plan_init(struct reduce_plan *rp,
			     const struct vnpu_kp_reduce *p)
{
	const struct vnpu_tensor *in = &p->input;

	rp->op = p->op;
	rp->dtype = in->dtype;
	rp->kept_ndim = 0;
	rp->red_ndim = 0;
	rp->count = 1;
	for (uint32_t d = 0; d < in->ndim; d++) {
		if (!((p->dim_mask >> d) & 1)) {
			rp->kept_sizes[rp->kept_ndim] = in->sizes[d];
			rp->kept_in_strides[rp->kept_ndim] = in->strides[d];
			rp->kept_out_strides[rp->kept_ndim] = p->out.strides[d];
			rp->kept_ndim++;
			continue;
		}
		rp->count *= (uint64_t)in->sizes[d];
		if (in->sizes[d] == 1)
			continue;
		rp->red_sizes[rp->red_ndim] = in->sizes[d];
		rp->red_strides[rp->red_ndim] = in->strides[d];
		rp->red_ndim++;
	}
}

static void reduce_run(const void *params, const struct vnpu_kbuf *bufs,
		       uint32_t block, uint32_t nblocks)
{
	const struct vnpu_kp_reduce *p = params;
	const char *in = bufs[p->input.buffer].ptr;
	char *out = bufs[p->out.buffer].ptr;
	uint32_t out_size = vnpu_dtype_size(p->out.dtype);
	struct reduce_plan rp;
	struct vnpu_nd_counter c;
	struct reduce_acc acc;
	uint64_t numel = 1, begin, end, work = 0;

	reduce_plan_init(&rp, p);
	for (uint32_t d = 0; d < rp.kept_ndim; d++)
		numel *= (uint64_t)rp.kept_sizes[d];
	vnpu_block_range(numel, block, nblocks, &begin, &end);
	if (begin >= end)
		return;
	vnpu_nd_counter_init(&c, rp.kept_ndim, rp.kept_sizes,
			     rp.kept_in_strides, rp.kept_out_strides, begin);
	for (uint64_t i = begin; i < end; i++) {
		if (vnpu_kernel_poll(&work, 1) ||
		    reduce_one(&rp, in, p->input.offset + c.off[0], &acc,
			       &work))
			return;
		store_result(&rp, &acc,
			     out + (p->out.offset + c.off[1]) * out_size);
		vnpu_nd_counter_next(&c);
	}
}

const struct vnpu_kernel_def vnpu_kernel_reduce = {
	.id = VNPU_KERNEL_REDUCE,
	.name = "reduce",
	.params_size = sizeof(struct vnpu_kp_reduce),
	.validate = reduce_validate,
	.run = reduce_run,
};
