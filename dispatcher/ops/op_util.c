// SPDX-License-Identifier: MIT
/* Kernel helpers: element conversions, strided iteration, shape rules. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "op_util.h"
#include "dispatch_internal.h"

float vnpu_at_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff, u;
	float f;

	if (exp == 0x1f) {
		u = sign | 0x7f800000u | (man << 13);
	} else if (exp) {
		u = sign | ((exp + 112) << 23) | (man << 13);
	} else if (man) {	/* subnormal: value man * 2^-24 */
		f = ldexpf((float)man, -24);
		return sign ? -f : f;
	} else {
		u = sign;
	}
	memcpy(&f, &u, sizeof(f));
	return f;
}

uint16_t vnpu_at_f32_to_f16(float f)
{
	uint32_t u, sign, exp, man;

	memcpy(&u, &f, sizeof(u));
	sign = (u >> 16) & 0x8000;
	exp = (u >> 23) & 0xff;
	man = u & 0x7fffff;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	{
		int e = (int)exp - 127 + 15;
		uint32_t m, rest, half;

		if (e >= 0x1f)
			return (uint16_t)(sign | 0x7c00);
		if (e <= 0) {
			if (e < -10)
				return (uint16_t)sign;
			m = man | 0x800000;
			{
				uint32_t shift = (uint32_t)(14 - e);

				rest = m & ((1u << shift) - 1);
				half = 1u << (shift - 1);
				m >>= shift;
			}
			if (rest > half || (rest == half && (m & 1)))
				m++;
			return (uint16_t)(sign | m);
		}
		m = man >> 13;
		rest = man & 0x1fff;
		if (rest > 0x1000 || (rest == 0x1000 && (m & 1))) {
			m++;
			if (m == 0x400) {
				m = 0;
				e++;
				if (e >= 0x1f)
					return (uint16_t)(sign | 0x7c00);
			}
		}
		return (uint16_t)(sign | ((uint32_t)e << 10) | m);
	}
}

float vnpu_at_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

uint16_t vnpu_at_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

double vnpu_at_load(enum vnpu_at_dtype dtype, const void *p)
{
	switch (dtype) {
	case VNPU_AT_F32: { float v; memcpy(&v, p, 4); return v; }
	case VNPU_AT_F64: { double v; memcpy(&v, p, 8); return v; }
	case VNPU_AT_F16: { uint16_t v; memcpy(&v, p, 2); return vnpu_at_f16_to_f32(v); }
	case VNPU_AT_BF16: { uint16_t v; memcpy(&v, p, 2); return vnpu_at_bf16_to_f32(v); }
	default: return (double)vnpu_at_load_int(dtype, p);
	}
}

int64_t vnpu_at_load_int(enum vnpu_at_dtype dtype, const void *p)
{
	switch (dtype) {
	case VNPU_AT_U8: return *(const uint8_t *)p;
	case VNPU_AT_I8: return *(const int8_t *)p;
	case VNPU_AT_I16: { int16_t v; memcpy(&v, p, 2); return v; }
	case VNPU_AT_BOOL: return *(const uint8_t *)p != 0;
	case VNPU_AT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case VNPU_AT_I64: { int64_t v; memcpy(&v, p, 8); return v; }
	default:
		return vnpu_at_scalar_to_int(VNPU_AT_DOUBLE(vnpu_at_load(dtype, p)));
	}
}

static int64_t sat(double v, double lo, double hi)
{
	if (!(v == v))
		return 0;
	if (v <= lo)
		return (int64_t)lo;
	if (v >= hi)
		return (int64_t)hi;
	return (int64_t)v;
}

void vnpu_at_store(enum vnpu_at_dtype dtype, void *p, double v)
{
	switch (dtype) {
	case VNPU_AT_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
	case VNPU_AT_F64: memcpy(p, &v, 8); return;
	case VNPU_AT_F16: { uint16_t h = vnpu_at_f32_to_f16((float)v); memcpy(p, &h, 2); return; }
	case VNPU_AT_BF16: { uint16_t h = vnpu_at_f32_to_bf16((float)v); memcpy(p, &h, 2); return; }
	case VNPU_AT_BOOL: *(uint8_t *)p = v != 0; return;
	case VNPU_AT_U8: *(uint8_t *)p = (uint8_t)sat(v, 0, 255); return;
	case VNPU_AT_I8: *(int8_t *)p = (int8_t)sat(v, -128, 127); return;
	case VNPU_AT_I16: { int16_t i = (int16_t)sat(v, -32768, 32767); memcpy(p, &i, 2); return; }
	case VNPU_AT_I32: { int32_t i = (int32_t)sat(v, -2147483648.0, 2147483647.0); memcpy(p, &i, 4); return; }
	case VNPU_AT_I64: { int64_t i = vnpu_at_scalar_to_int(VNPU_AT_DOUBLE(v)); memcpy(p, &i, 8); return; }
	default: return;
	}
}

void vnpu_at_store_int(enum vnpu_at_dtype dtype, void *p, int64_t v)
{
	switch (dtype) {
	case VNPU_AT_BOOL: *(uint8_t *)p = v != 0; return;
	case VNPU_AT_U8: *(uint8_t *)p = (uint8_t)v; return;	/* wraps, as C */
	case VNPU_AT_I8: *(int8_t *)p = (int8_t)v; return;
	case VNPU_AT_I16: { int16_t i = (int16_t)v; memcpy(p, &i, 2); return; }
	case VNPU_AT_I32: { int32_t i = (int32_t)v; memcpy(p, &i, 4); return; }
	case VNPU_AT_I64: memcpy(p, &v, 8); return;
	default: vnpu_at_store(dtype, p, (double)v); return;
	}
}

bool vnpu_at_iter_init(struct vnpu_at_iter *it, uint32_t ndim,
		       const int64_t *sizes, uint32_t n,
		       const struct vnpu_at_tensor *const *tensors)
{
	memset(it, 0, sizeof(*it));
	if (n > VNPU_AT_ITER_MAX || ndim > VNPU_AT_MAX_DIMS) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "iter: too many operands or dims");
		return false;
	}
	it->ndim = ndim;
	it->n = n;
	it->remaining = 1;
	for (uint32_t d = 0; d < ndim; d++) {
		it->sizes[d] = sizes[d];
		it->remaining *= sizes[d];
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct vnpu_at_tensor *t = tensors[i];
		int64_t isz = (int64_t)vnpu_at_dtype_size((enum vnpu_at_dtype)t->dtype);
		uint32_t lead;

		if (t->ndim > ndim || t->storage->device.type != VNPU_AT_CPU) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "iter: operand %u does not broadcast to the iteration shape (or is not on the CPU)", i);
			return false;
		}
		lead = ndim - t->ndim;
		for (uint32_t d = 0; d < t->ndim; d++) {
			if (t->sizes[d] != sizes[lead + d] && t->sizes[d] != 1) {
				vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						  "iter: operand %u does not broadcast to the iteration shape", i);
				return false;
			}
			it->bstride[i][lead + d] = t->sizes[d] == 1 ? 0 : t->strides[d] * isz;
		}
		it->base[i] = vnpu_at_data(t);
		it->p[i] = it->base[i];
	}
	return true;
}

bool vnpu_at_iter_next(struct vnpu_at_iter *it)
{
	if (it->remaining <= 0)
		return false;
	if (!it->started) {
		it->started = true;
		it->remaining--;
		return true;
	}
	for (uint32_t d = it->ndim; d-- > 0;) {
		if (++it->idx[d] < it->sizes[d]) {
			for (uint32_t i = 0; i < it->n; i++)
				it->p[i] += it->bstride[i][d];
			it->remaining--;
			return true;
		}
		for (uint32_t i = 0; i < it->n; i++)
			it->p[i] -= it->bstride[i][d] * (it->sizes[d] - 1);
		it->idx[d] = 0;
	}
	return false;
}

bool vnpu_at_broadcast_shapes(const char *op, uint32_t n,
			      const struct vnpu_at_tensor *const *ts,
			      uint32_t *ndim, int64_t *sizes)
{
	uint32_t nd = 0;

	for (uint32_t i = 0; i < n; i++)
		if (ts[i]->ndim > nd)
			nd = ts[i]->ndim;
	for (uint32_t d = 0; d < nd; d++)
		sizes[d] = 1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t lead = nd - ts[i]->ndim;

		for (uint32_t d = 0; d < ts[i]->ndim; d++) {
			int64_t s = ts[i]->sizes[d];

			if (s == sizes[lead + d] || s == 1)
				continue;
			if (sizes[lead + d] == 1) {
				sizes[lead + d] = s;
				continue;
			}
			/* PyTorch's words (infer_size) */
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton dimension %u",
					  op, (long long)sizes[lead + d], (long long)s,
					  lead + d);
			return false;
		}
	}
	*ndim = nd;
	return true;
}

static int category(enum vnpu_at_dtype d)
{
	return d == VNPU_AT_BOOL ? 0 : vnpu_at_dtype_is_float(d) ? 2 : 1;
}

/* The dtype of higher-ranked operands, raised by a lower rank's only
 * when that is of a higher category (c10's combine_categories). */
static enum vnpu_at_dtype combine_ranks(enum vnpu_at_dtype higher,
					enum vnpu_at_dtype lower)
{
	if (higher == VNPU_AT_DTYPE_NONE)
		return lower;
	if (lower == VNPU_AT_DTYPE_NONE ||
	    category(lower) <= category(higher))
		return higher;
	return vnpu_at_promote(higher, lower);
}

enum vnpu_at_dtype vnpu_at_result_type(const struct vnpu_at_tensor *a,
				       const struct vnpu_at_tensor *b)
{
	/* ranks: 0 dimensioned, 1 0-dim, 2 wrapped number */
	enum vnpu_at_dtype rank[3] = { VNPU_AT_DTYPE_NONE, VNPU_AT_DTYPE_NONE,
				       VNPU_AT_DTYPE_NONE };
	const struct vnpu_at_tensor *ts[2] = { a, b };

	/* every operand counts even when the dtypes agree: two float
	 * wrapped numbers give the default dtype (PyTorch 2: 2.5 + 1.5
	 * through aten::add.Tensor is float32; 1.13 kept float64) */
	for (int i = 0; i < 2; i++) {
		enum vnpu_at_dtype d = (enum vnpu_at_dtype)ts[i]->dtype;
		int r = ts[i]->wrapped_number ? 2 : ts[i]->ndim ? 0 : 1;

		if (r == 2 && vnpu_at_dtype_is_float(d))
			d = vnpu_at_default_dtype();
		rank[r] = rank[r] == VNPU_AT_DTYPE_NONE ? d :
			  vnpu_at_promote(rank[r], d);
	}
	return combine_ranks(rank[0], combine_ranks(rank[1], rank[2]));
}

bool vnpu_at_check_same_device(const char *op, uint32_t n,
			       const struct vnpu_at_tensor *const *ts)
{
	const struct vnpu_at_tensor *first = NULL;

	for (uint32_t i = 0; i < n; i++) {
		const struct vnpu_at_tensor *t = ts[i];

		if (!t || (t->storage->device.type == VNPU_AT_CPU && !t->ndim))
			continue;
		if (!first) {
			first = t;
			continue;
		}
		if (first->storage->device.type != t->storage->device.type ||
		    first->storage->device.index != t->storage->device.index) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: Expected all tensors to be on the same device, but found at least two devices, %s and %s!",
					  op, first->storage->device.type == VNPU_AT_NPU ? "npu" : "cpu",
					  t->storage->device.type == VNPU_AT_NPU ? "npu" : "cpu");
			return false;
		}
	}
	return true;
}

bool vnpu_at_dim_mask(const char *op, struct vnpu_at_int_array dims,
		      uint32_t ndim, uint32_t *mask)
{
	*mask = 0;
	if (!dims.n) {
		*mask = ndim ? (uint32_t)((1u << ndim) - 1) : 0;
		return true;
	}
	for (int64_t i = 0; i < dims.n; i++) {
		int64_t d = vnpu_at_wrap_dim(dims.v[i], ndim);

		if (d < 0)
			return false;
		if (!ndim)
			continue;
		if (*mask & (1u << d)) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: dim %lld appears multiple times in the list of dims",
					  op, (long long)d);
			return false;
		}
		*mask |= 1u << d;
	}
	return true;
}

void vnpu_at_contiguous_strides(uint32_t ndim, const int64_t *sizes,
				int64_t *strides)
{
	vnpu_at_contiguous_strides_impl(ndim, sizes, strides);
}

int64_t vnpu_at_shape_numel(uint32_t ndim, const int64_t *sizes)
{
	return vnpu_at_shape_numel_impl(ndim, sizes);
}

struct vnpu_at_tensor *vnpu_at_contiguous(struct vnpu_at_tensor *t)
{
	struct vnpu_at_tensor *c, *r;

	if (vnpu_at_is_contiguous(t) && t->storage->npu.npu_format == VNPU_FORMAT_ND)
		return vnpu_at_retain(t);
	c = vnpu_at_new(t->ndim, t->sizes, (enum vnpu_at_dtype)t->dtype,
			t->storage->device);
	if (!c)
		return NULL;
	r = vnpu_op_copy_(c, t, false);
	vnpu_at_release(c);
	return r;
}

/* c10's is_contiguous and is_channels_last_contiguous: dims of size 1
 * take any stride. */
static bool strides_follow(const struct vnpu_at_tensor *t, const int *order)
{
	int64_t expected = 1;

	if (!vnpu_at_numel(t))
		return true;
	for (uint32_t i = 0; i < t->ndim; i++) {
		int d = order[i];

		if (t->sizes[d] == 1)
			continue;
		if (t->strides[d] != expected)
			return false;
		expected *= t->sizes[d];
	}
	return true;
}

static const int ORDER_CONTIGUOUS[VNPU_AT_MAX_DIMS] = { 7, 6, 5, 4, 3, 2, 1, 0 };
static const int ORDER_CHANNELS_LAST[4] = { 1, 3, 2, 0 };

static bool is_contiguous_order(const struct vnpu_at_tensor *t)
{
	return strides_follow(t, ORDER_CONTIGUOUS + VNPU_AT_MAX_DIMS - t->ndim);
}

static bool is_channels_last(const struct vnpu_at_tensor *t)
{
	return t->ndim == 4 && strides_follow(t, ORDER_CHANNELS_LAST);
}

/* c10's is_non_overlapping_and_dense */
static bool is_dense(const struct vnpu_at_tensor *t)
{
	int perm[VNPU_AT_MAX_DIMS];
	int64_t expected = 1;

	for (uint32_t i = 0; i < t->ndim; i++) {
		int d = (int)i;
		uint32_t j = i;

		/* by stride, dims of size < 2 last */
		while (j > 0) {
			int e = perm[j - 1];
			bool before = t->sizes[d] >= 2 &&
				      (t->sizes[e] < 2 || t->strides[d] < t->strides[e]);

			if (!before)
				break;
			perm[j] = e;
			j--;
		}
		perm[j] = d;
	}
	for (uint32_t i = 0; i < t->ndim; i++) {
		if (t->sizes[perm[i]] < 2)
			return true;
		if (t->strides[perm[i]] != expected)
			return false;
		expected *= t->sizes[perm[i]];
	}
	return true;
}

bool vnpu_at_channels_last_like(const struct vnpu_at_tensor *t)
{
	int64_t min = 0;

	if (t->ndim != 4 || t->strides[1] == 0)
		return false;
	for (int i = 0; i < 4; i++) {
		int d = ORDER_CHANNELS_LAST[i];

		if (t->sizes[d] == 0 || t->strides[d] < min)
			return false;
		/* N111 and sliced N11W tensors stay NCHW */
		if (d == 0 && min == t->strides[1])
			return false;
		min = t->strides[d];
		if (t->sizes[d] > 1)
			min *= t->sizes[d];
	}
	return true;
}

void vnpu_at_channels_last_strides(const int64_t *sizes, int64_t *strides)
{
	int64_t e = 1;

	for (int i = 0; i < 4; i++) {
		strides[ORDER_CHANNELS_LAST[i]] = e;
		e *= sizes[ORDER_CHANNELS_LAST[i]];
	}
}

static bool same_shape(const struct vnpu_at_tensor *t, uint32_t ndim,
		       const int64_t *sizes)
{
	return t->ndim == ndim && !memcmp(t->sizes, sizes, ndim * sizeof(*sizes));
}

void vnpu_at_iter_strides(uint32_t n, const struct vnpu_at_tensor *const *in,
			  uint32_t ndim, const int64_t *sizes, int64_t *strides)
{
	int64_t bstrides[8][VNPU_AT_MAX_DIMS], next = 1;
	uint32_t perm[VNPU_AT_MAX_DIMS]; /* perm[0]: the innermost dim */
	bool same = n > 0, contiguous = true, channels_last = ndim == 4;

	/* TensorIterator's fast setup */
	for (uint32_t k = 0; k < n; k++) {
		same = same && same_shape(in[k], ndim, sizes);
		contiguous = contiguous && is_contiguous_order(in[k]);
		channels_last = channels_last && is_channels_last(in[k]);
	}
	if (same && !contiguous) {
		bool one_layout = is_dense(in[0]);

		for (uint32_t k = 1; k < n && one_layout; k++)
			one_layout = !memcmp(in[k]->strides, in[0]->strides,
					     ndim * sizeof(*strides));
		if (channels_last || one_layout) {
			if (channels_last)
				vnpu_at_channels_last_strides(sizes, strides);
			else
				memcpy(strides, in[0]->strides, ndim * sizeof(*strides));
			return;
		}
	}
	if (same && contiguous)
		n = 0; /* contiguous below */

	/* each input's strides in the result's shape, broadcast dims 0 */
	if (n > 8)
		n = 8;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t lead = ndim - in[k]->ndim;

		for (uint32_t d = 0; d < ndim; d++) {
			int64_t sz = d < lead ? 1 : in[k]->sizes[d - lead];

			bstrides[k][d] = d < lead || (sz == 1 && sizes[d] != 1) ?
					 0 : in[k]->strides[d - lead];
		}
	}
	/* TensorIterator's reorder_dimensions: an insertion sort */
	for (uint32_t i = 0; i < ndim; i++)
		perm[i] = ndim - 1 - i;
	for (uint32_t i = 1; n && i < ndim; i++) {
		uint32_t d1 = i;

		for (uint32_t d0 = i; d0-- > 0;) {
			int cmp = 0;

			for (uint32_t k = 0; k < n && !cmp; k++) {
				int64_t s0 = bstrides[k][perm[d0]];
				int64_t s1 = bstrides[k][perm[d1]];

				if (s0 == 0 || s1 == 0)
					continue;
				if (s0 != s1)
					cmp = s0 < s1 ? -1 : 1;
				else if (sizes[perm[d0]] > sizes[perm[d1]])
					cmp = 1;
			}
			if (cmp > 0) {
				uint32_t t = perm[d0];

				perm[d0] = perm[d1];
				perm[d1] = t;
				d1 = d0;
			} else if (cmp < 0) {
				break;
			}
		}
	}
	for (uint32_t i = 0; i < ndim; i++) {
		strides[perm[i]] = next;
		next *= sizes[perm[i]];
	}
}

struct vnpu_at_tensor *vnpu_at_new(uint32_t ndim, const int64_t *sizes,
				   enum vnpu_at_dtype dtype,
				   struct vnpu_at_device dev)
{
	return vnpu_op_empty_memory_format((struct vnpu_at_int_array){ sizes, ndim },
					   dtype, dev);
}

struct vnpu_at_tensor *vnpu_at_scalar_tensor(struct vnpu_at_scalar s,
					     enum vnpu_at_dtype dtype,
					     struct vnpu_at_device dev)
{
	return vnpu_op_full(VNPU_AT_NO_INTS, s, dtype, dev);
}

bool vnpu_at_arange_plan(const char *op, struct vnpu_at_scalar start,
			 struct vnpu_at_scalar end, struct vnpu_at_scalar step,
			 enum vnpu_at_dtype dt, struct vnpu_at_arange *a)
{
	double ds = vnpu_at_scalar_to_double(start), de = vnpu_at_scalar_to_double(end);
	double dst = vnpu_at_scalar_to_double(step), size_d;
	int64_t ie, span;

	/* (bool) of vnpu_at_error_set, which returns NULL: false */
	if (dt == VNPU_AT_BOOL)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: \"arange_cpu\" not implemented for 'Bool'", op);
	memset(a, 0, sizeof(*a));
	if (!(dst > 0 || dst < 0))
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: step must be nonzero", op);
	if (!isfinite(ds) || !isfinite(de))
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: unsupported range: %g -> %g",
					       op, ds, de);
	if (!((dst > 0 && de >= ds) || (dst < 0 && de <= ds)))
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: upper bound and lower bound inconsistent with step sign",
					       op);
	size_d = ceil((de - ds) / dst);
	if (!vnpu_at_dtype_is_float(dt)) {
		/* the terms from start and step truncated to int64 (a step
		 * that truncates to 0 repeats start, but for int64) */
		if (!vnpu_at_scalar_fits(start, VNPU_AT_I64) ||
		    !vnpu_at_scalar_fits(step, VNPU_AT_I64) ||
		    (dt == VNPU_AT_I64 && !vnpu_at_scalar_fits(end, VNPU_AT_I64)))
			return false;
		a->istart = vnpu_at_scalar_to_int(start);
		a->istep = vnpu_at_scalar_to_int(step);
		/* int64: the length from the truncated bounds in int64 (a
		 * span int64 cannot hold is no length) */
		if (dt == VNPU_AT_I64) {
			ie = vnpu_at_scalar_to_int(end);
			if (!a->istep)
				return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
							       "%s: step must be nonzero", op);
			if (__builtin_sub_overflow(ie, a->istart, &span) ||
			    __builtin_add_overflow(span, a->istep - (a->istep > 0 ? 1 : -1),
						   &span))
				size_d = -1;
			else
				size_d = (double)(span / a->istep);
		}
	} else if (dt == VNPU_AT_F16 || dt == VNPU_AT_BF16) {
		if (!vnpu_at_scalar_fits(start, VNPU_AT_F32) ||
		    !vnpu_at_scalar_fits(step, VNPU_AT_F32))
			return false;
		a->start = (float)ds;
		a->step = (float)dst;
	} else {
		a->start = ds;
		a->step = dst;
	}
	if (!(size_d >= 0 && size_d <= 9223372036854775807.0))
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: invalid size, possible overflow?", op);
	a->n = size_d >= 9223372036854775807.0 ? INT64_MAX : (int64_t)size_d;
	return true;
}

/* x rounded to float dtype dt once, as c10's Half and BFloat16 round a
 * result computed in float (f32: the float result itself). */
static double round_to_dtype(enum vnpu_at_dtype dt, double x)
{
	float f = (float)x;

	switch (dt) {
	case VNPU_AT_F64: return x;
	case VNPU_AT_F16: return vnpu_at_f16_to_f32(vnpu_at_f32_to_f16(f));
	case VNPU_AT_BF16: return vnpu_at_bf16_to_f32(vnpu_at_f32_to_bf16(f));
	default: return f;
	}
}

/* s as Scalar::to<dt>() gives it: an integer truncated and wrapped to the
 * width (a negative into uint8 wraps, as c10 allows), a float rounded. */
static double scalar_as_dtype(struct vnpu_at_scalar s, enum vnpu_at_dtype dt)
{
	int64_t v;

	if (vnpu_at_dtype_is_float(dt))
		return round_to_dtype(dt, vnpu_at_scalar_to_double(s));
	v = vnpu_at_scalar_to_int(s);
	switch (dt) {
	case VNPU_AT_U8: return (uint8_t)v;
	case VNPU_AT_I8: return (int8_t)v;
	case VNPU_AT_I16: return (int16_t)v;
	case VNPU_AT_I32: return (int32_t)v;
	default: return (double)v;
	}
}

bool vnpu_at_linspace_plan(const char *op, struct vnpu_at_scalar start,
			   struct vnpu_at_scalar end, int64_t steps,
			   enum vnpu_at_dtype dt, struct vnpu_at_linspace *l)
{
	double span;

	if (dt == VNPU_AT_BOOL)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: \"linspace_cpu\" not implemented for 'Bool'", op);
	if (!vnpu_at_scalar_fits(start, dt) || !vnpu_at_scalar_fits(end, dt))
		return false;
	l->dt = dt;
	l->steps = steps;
	l->start = scalar_as_dtype(start, dt);
	l->end = scalar_as_dtype(end, dt);
	if (!vnpu_at_dtype_is_float(dt)) {
		l->step = (l->end - l->start) / (double)(steps - 1);
		return true;
	}
	span = round_to_dtype(dt, l->end - l->start);
	l->step = round_to_dtype(dt, span / round_to_dtype(dt, (double)(steps - 1)));
	return true;
}

int vnpu_at_linspace_prepare(const char *op, struct vnpu_at_scalar start,
			     struct vnpu_at_scalar end, int64_t steps,
			     struct vnpu_at_tensor *out, struct vnpu_at_linspace *l)
{
	struct vnpu_at_tensor *r;

	if (steps < 0) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: number of steps must be non-negative", op);
		return -1;
	}
	if (vnpu_at_numel(out) != steps) {
		r = vnpu_op_resize_(out, (struct vnpu_at_int_array){ &steps, 1 });
		if (!r)
			return -1;
		vnpu_at_release(r);
	}
	if (steps == 1) {
		r = vnpu_op_fill__Scalar(out, start);
		vnpu_at_release(r);
		return r ? 0 : -1;
	}
	if (!steps)
		return 0;
	if (!vnpu_at_linspace_plan(op, start, end, steps, (enum vnpu_at_dtype)out->dtype, l) ||
	    !vnpu_at_check_no_self_overlap(op, out))
		return -1;
	return 1;
}

double vnpu_at_linspace_point(const struct vnpu_at_linspace *l, int64_t i)
{
	bool first_half = i < l->steps / 2;
	double k = (double)(first_half ? i : l->steps - 1 - i), d;

	if (!vnpu_at_dtype_is_float(l->dt))
		return trunc(first_half ? l->start + l->step * k : l->end - l->step * k);
	d = round_to_dtype(l->dt, l->step * round_to_dtype(l->dt, k));
	return round_to_dtype(l->dt, first_half ? l->start + d : l->end - d);
}

bool vnpu_at_arange_integral(struct vnpu_at_scalar start, struct vnpu_at_scalar end,
			     struct vnpu_at_scalar step)
{
	return start.kind != VNPU_AT_SCALAR_DOUBLE && end.kind != VNPU_AT_SCALAR_DOUBLE &&
	       step.kind != VNPU_AT_SCALAR_DOUBLE;
}

bool vnpu_at_can_cast(enum vnpu_at_dtype from, enum vnpu_at_dtype to)
{
	if (vnpu_at_dtype_is_float(from) && !vnpu_at_dtype_is_float(to))
		return false;
	return from == VNPU_AT_BOOL || to != VNPU_AT_BOOL;
}

const char *vnpu_at_scalar_type_name(enum vnpu_at_dtype dt)
{
	switch (dt) {
	case VNPU_AT_U8: return "Byte";
	case VNPU_AT_I8: return "Char";
	case VNPU_AT_I16: return "Short";
	case VNPU_AT_I32: return "Int";
	case VNPU_AT_I64: return "Long";
	case VNPU_AT_F16: return "Half";
	case VNPU_AT_BF16: return "BFloat16";
	case VNPU_AT_F32: return "Float";
	case VNPU_AT_F64: return "Double";
	case VNPU_AT_BOOL: return "Bool";
	default: return "?";
	}
}

bool vnpu_at_check_write(const char *op, const struct vnpu_at_tensor *out,
			 enum vnpu_at_dtype result, uint32_t nd,
			 const int64_t *sizes, bool resizable)
{
	char a[128], b[128];
	int n;

	/* in TensorIterator's order: overlap, shape, then types */
	if (!vnpu_at_check_no_self_overlap(op, out))
		return false;
	if (!resizable) {
		bool same = nd == out->ndim;

		for (uint32_t i = 0; same && i < nd; i++)
			same = sizes[i] == out->sizes[i];
		if (!same) {
			n = snprintf(b, sizeof(b), "[");
			for (uint32_t i = 0; i < nd && n < (int)sizeof(b); i++)
				n += snprintf(b + n, sizeof(b) - (size_t)n, "%s%lld",
					      i ? ", " : "", (long long)sizes[i]);
			if (n < (int)sizeof(b))
				snprintf(b + n, sizeof(b) - (size_t)n, "]");
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: output with shape %s doesn't match the broadcast shape %s",
					  op, vnpu_at_format_sizes(out, a, sizeof(a)), b);
			return false;
		}
	}
	if (!vnpu_at_can_cast(result, (enum vnpu_at_dtype)out->dtype)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: result type %s can't be cast to the desired output type %s",
				  op, vnpu_at_scalar_type_name(result),
				  vnpu_at_scalar_type_name((enum vnpu_at_dtype)out->dtype));
		return false;
	}
	return true;
}

static bool qscale_ok(double s)
{
	return isfinite(s) && s > 0 && (float)s > 0.0f && isfinite((float)s);
}

bool vnpu_qmm_check(const char *op, struct vnpu_qmm *q,
		    const struct vnpu_at_tensor *a,
		    const struct vnpu_at_tensor *b,
		    const struct vnpu_at_tensor *bias, int64_t za, int64_t zb,
		    bool linear, double a_scale, double b_scale,
		    double out_scale, int64_t out_zp)
{
	if (a->dtype != VNPU_AT_U8 || b->dtype != VNPU_AT_I8)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected uint8 %s and int8 %s, got %s and %s",
					 op, linear ? "input" : "self",
					 linear ? "weight" : "mat2",
					 vnpu_at_dtype_name((enum vnpu_at_dtype)a->dtype),
					 vnpu_at_dtype_name((enum vnpu_at_dtype)b->dtype));
	if ((linear ? a->ndim < 1 : a->ndim != 2) || b->ndim != 2)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: expected %s and a 2-D %s, got %u-D and %u-D",
					 op, linear ? "an input of at least 1-D" : "a 2-D self",
					 linear ? "weight" : "mat2", a->ndim, b->ndim);
	q->linear = linear;
	q->k = a->sizes[a->ndim - 1];
	q->m = q->k ? vnpu_at_numel(a) / q->k
		    : vnpu_at_shape_numel(a->ndim - 1, a->sizes);
	if (q->m < 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: the input's leading dims overflow int64",
					 op);
	q->n = b->sizes[linear ? 0 : 1];
	if (b->sizes[linear ? 1 : 0] != q->k)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: shapes cannot be multiplied (K %lld and %lld)",
					 op, (long long)q->k,
					 (long long)b->sizes[linear ? 1 : 0]);
	if (q->k > 32768)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: K = %lld is larger than 32768, where int32 sums could overflow",
					 op, (long long)q->k);
	if (za < 0 || za > 255 || zb < -128 || zb > 127)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: zero points must be in [0, 255] (uint8) and [-128, 127] (int8), got %lld and %lld",
					 op, (long long)za, (long long)zb);
	q->za = (int32_t)za;
	q->zb = (int32_t)zb;
	if (!linear)
		return true;
	if (!qscale_ok(a_scale) || !qscale_ok(b_scale) ||
	    !qscale_ok(out_scale) || !qscale_ok(a_scale * b_scale))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: scales must be finite and positive, got %g, %g and %g",
					 op, a_scale, b_scale, out_scale);
	if (out_zp < 0 || out_zp > 255)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: output_zero_point must be in [0, 255], got %lld",
					 op, (long long)out_zp);
	if (bias && (bias->dtype != VNPU_AT_F32 || bias->ndim != 1 ||
		     bias->sizes[0] != q->n))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: bias must be float32 [%lld], got %s %u-D",
					 op, (long long)q->n,
					 vnpu_at_dtype_name((enum vnpu_at_dtype)bias->dtype),
					 bias->ndim);
	q->scale = (float)(a_scale * b_scale);
	q->out_scale = (float)out_scale;
	q->out_zp = (int32_t)out_zp;
	return true;
}

struct vnpu_at_tensor *vnpu_at_host_contiguous(struct vnpu_at_tensor *t)
{
	struct vnpu_at_tensor *host = t->storage->device.type == VNPU_AT_CPU ?
				      vnpu_at_retain(t) :
				      vnpu_op__to_copy(t, (enum vnpu_at_dtype)t->dtype,
						       VNPU_AT_DEV_CPU, false);
	struct vnpu_at_tensor *c = host ? vnpu_at_contiguous(host) : NULL;

	vnpu_at_release(host);
	return c;
}

/* The first entry of index outside [lo, hi), in *bad; false when none.
 * NULL host copy: *failed. */
static bool find_out_of_range(struct vnpu_at_tensor *index, int64_t lo, int64_t hi,
			      int64_t *bad, bool *failed)
{
	struct vnpu_at_tensor *c = vnpu_at_host_contiguous(index);
	int64_t n = c ? vnpu_at_numel(c) : 0;
	size_t es = vnpu_at_dtype_size(index->dtype);
	bool found = false;

	*failed = c == NULL;
	for (int64_t k = 0; !found && k < n; k++) {
		int64_t v = vnpu_at_load_int((enum vnpu_at_dtype)c->dtype,
					     (const char *)vnpu_at_data(c) + (size_t)k * es);

		found = v < lo || v >= hi;
		*bad = v;
	}
	vnpu_at_release(c);
	return found;
}

bool vnpu_at_indices_in_range(const char *op, struct vnpu_at_tensor *index,
			      int64_t rows)
{
	int64_t v;
	bool failed;

	if (!find_out_of_range(index, 0, rows, &v, &failed))
		return !failed;
	vnpu_at_error_set(VNPU_AT_ERR_INDEX,
			  "%s: index out of range in self (index %lld, size %lld)",
			  op, (long long)v, (long long)rows);
	return false;
}

bool vnpu_at_indices_in_bounds(const char *op, const char *prefix, struct vnpu_at_tensor *index,
			       int64_t dim, int64_t size)
{
	int64_t v;
	bool failed;

	if (!find_out_of_range(index, 0, size, &v, &failed))
		return !failed;
	vnpu_at_error_set(VNPU_AT_ERR_INDEX,
			  "%s: %sindex %lld is out of bounds for dimension %lld with size %lld",
			  op, prefix, (long long)v, (long long)dim, (long long)size);
	return false;
}

bool vnpu_at_pair_arg(const char *op, const char *what, struct vnpu_at_int_array a,
		      const int64_t *dflt, int64_t out[2])
{
	if (a.n == 0 && dflt) {
		out[0] = dflt[0];
		out[1] = dflt[1];
		return true;
	}
	if (a.n != 1 && a.n != 2)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: %s must either be a single int, or a tuple of two ints",
					       op, what);
	out[0] = a.v[0];
	out[1] = a.v[a.n - 1];
	return true;
}

bool vnpu_at_gather_check(const char *op, const struct vnpu_at_tensor *self, int64_t d,
			  const struct vnpu_at_tensor *index)
{
	uint32_t nd = self->ndim ? self->ndim : 1;
	char a[128], b[128];

	if (index->dtype != VNPU_AT_I64 && index->dtype != VNPU_AT_I32)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: gather(): Expected dtype int32/int64 for index", op);
	if ((index->ndim ? index->ndim : 1) != nd)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: Index tensor must have the same number of dimensions as input tensor",
					       op);
	for (uint32_t k = 0; k < self->ndim && index->ndim; k++) {
		if (k == d || index->sizes[k] <= self->sizes[k])
			continue;
		vnpu_at_format_sizes(index, a, sizeof(a));
		vnpu_at_format_sizes(self, b, sizeof(b));
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: Size does not match at dimension %u expected index %s to be no larger than self %s apart from dimension %lld",
					       op, k, a, b, (long long)d);
	}
	return true;
}

bool vnpu_at_scatter_check(const char *op, const struct vnpu_at_tensor *self, int64_t d,
			   const struct vnpu_at_tensor *index, const struct vnpu_at_tensor *src)
{
	uint32_t nd = self->ndim ? self->ndim : 1;
	char a[128], b[128], c[128];

	/* an empty index is not checked (PyTorch's scatter meta) */
	if (vnpu_at_numel(index) && index->dtype != VNPU_AT_I64 && index->dtype != VNPU_AT_I32)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: scatter(): Expected dtype int32/int64 for index", op);
	if (src && src->dtype != self->dtype)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: scatter(): Expected self.dtype to be equal to src.dtype",
					       op);
	if (!vnpu_at_numel(index))
		return true;
	if ((index->ndim ? index->ndim : 1) != nd)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: Index tensor must have the same number of dimensions as self tensor",
					       op);
	if (src && (src->ndim ? src->ndim : 1) != nd)
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: Index tensor must have the same number of dimensions as src tensor",
					       op);
	for (uint32_t k = 0; k < index->ndim; k++) {
		if ((!src || index->sizes[k] <= src->sizes[k]) &&
		    (k == d || index->sizes[k] <= self->sizes[k]))
			continue;
		vnpu_at_format_sizes(index, a, sizeof(a));
		vnpu_at_format_sizes(self, b, sizeof(b));
		if (!src)
			return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						       "%s: Expected index %s to be no larger than self %s apart from dimension %lld",
						       op, a, b, (long long)d);
		vnpu_at_format_sizes(src, c, sizeof(c));
		return (bool)vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					       "%s: Expected index %s to be no larger than self %s apart from dimension %lld and to be no larger size than src %s",
					       op, a, b, (long long)d, c);
	}
	return true;
}

struct vnpu_at_tensor *vnpu_at_gather_positions(uint32_t ndim, const int64_t *self_sizes,
						uint32_t d, struct vnpu_at_tensor *index)
{
	struct vnpu_at_device dev = vnpu_at_device_of(index);
	int64_t st[VNPU_AT_MAX_DIMS], shape[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *wide, *pos, *a, *m, *v, *sum;

	vnpu_at_contiguous_strides(ndim, self_sizes, st);
	/* an int32 index widened first: the offsets exceed int32 */
	wide = vnpu_at_converted(vnpu_at_retain(index), VNPU_AT_I64);
	pos = wide ? vnpu_op_mul_Scalar(wide, VNPU_AT_INT(st[d])) : NULL;
	vnpu_at_release(wide);
	for (uint32_t k = 0; pos && k < ndim; k++) {
		if (k == d || index->sizes[k] == 1)
			continue;
		for (uint32_t j = 0; j < ndim; j++)
			shape[j] = j == k ? index->sizes[k] : 1;
		a = vnpu_op_arange_start_step(VNPU_AT_INT(0), VNPU_AT_INT(index->sizes[k]),
					      VNPU_AT_INT(1), VNPU_AT_I64, dev);
		m = a ? vnpu_op_mul_Scalar(a, VNPU_AT_INT(st[k])) : NULL;
		v = m ? vnpu_op_view(m, (struct vnpu_at_int_array){ shape, ndim }) : NULL;
		sum = v ? vnpu_op_add_Tensor(pos, v, VNPU_AT_INT(1)) : NULL;
		vnpu_at_release(v);
		vnpu_at_release(m);
		vnpu_at_release(a);
		vnpu_at_release(pos);
		pos = sum;
	}
	return pos;
}

struct vnpu_at_tensor *vnpu_at_converted(struct vnpu_at_tensor *t,
					 enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *c;

	if (!t || t->dtype == dtype)
		return t;
	c = vnpu_op__to_copy(t, dtype, VNPU_AT_DEV_NONE, false);
	vnpu_at_release(t);
	return c;
}

/* The element range [lo, hi] of t in its storage (numel > 0). */
static void element_range(const struct vnpu_at_tensor *t, int64_t *lo, int64_t *hi)
{
	*lo = *hi = t->offset;
	for (uint32_t d = 0; d < t->ndim; d++) {
		int64_t span = (t->sizes[d] - 1) * t->strides[d];

		if (span < 0)
			*lo += span;
		else
			*hi += span;
	}
}

struct vnpu_at_tensor *vnpu_at_new_or_clone(struct vnpu_at_tensor *r,
					    struct vnpu_at_tensor *self)
{
	if (r != self)
		return r;
	vnpu_at_release(r);
	return vnpu_op_clone(self);
}

bool vnpu_at_check_no_self_overlap(const char *op, const struct vnpu_at_tensor *written)
{
	for (uint32_t i = 0; i < written->ndim && vnpu_at_numel(written); i++)
		if (written->strides[i] == 0 && written->sizes[i] > 1) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
					  op);
			return false;
		}
	return true;
}

bool vnpu_at_may_overlap(const struct vnpu_at_tensor *a, const struct vnpu_at_tensor *b)
{
	int64_t alo, ahi, blo, bhi;
	size_t as = vnpu_at_dtype_size((enum vnpu_at_dtype)a->dtype);
	size_t bs = vnpu_at_dtype_size((enum vnpu_at_dtype)b->dtype);

	if (a->storage != b->storage || !vnpu_at_numel(a) || !vnpu_at_numel(b))
		return false;
	element_range(a, &alo, &ahi);
	element_range(b, &blo, &bhi);
	/* in bytes: the two may have different dtypes */
	return alo * (int64_t)as <= bhi * (int64_t)bs + (int64_t)bs - 1 &&
	       blo * (int64_t)bs <= ahi * (int64_t)as + (int64_t)as - 1;
}

bool vnpu_at_check_no_overlap(const char *op, const struct vnpu_at_tensor *written,
			      const struct vnpu_at_tensor *input)
{
	if (!input || !vnpu_at_may_overlap(written, input))
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.",
			  op);
	return false;
}

const char *vnpu_at_format_dims(const int64_t *sizes, uint32_t n, char *buf, size_t len)
{
	int k = snprintf(buf, len, "[");

	for (uint32_t i = 0; i < n && k < (int)len; i++)
		k += snprintf(buf + k, len - (size_t)k, "%s%lld", i ? ", " : "", (long long)sizes[i]);
	if (k < (int)len)
		snprintf(buf + k, len - (size_t)k, "]");
	return buf;
}

/* The sizes of t without dim d (a 0-dim tensor has none). */
static uint32_t sliced_sizes(const struct vnpu_at_tensor *t, int64_t d, int64_t *out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->ndim; i++)
		if ((int64_t)i != d)
			out[n++] = t->sizes[i];
	return n;
}

bool vnpu_at_index_scatter_check(const char *op, bool copy, const struct vnpu_at_tensor *self,
				 int64_t dim, const struct vnpu_at_tensor *index,
				 const struct vnpu_at_tensor *source, struct vnpu_at_scalar alpha,
				 int64_t *dim_out)
{
	const char *fn = copy ? "index_copy_()" : "index_add_()";
	const char *sdt = vnpu_at_scalar_type_name((enum vnpu_at_dtype)self->dtype);
	const char *cdt = vnpu_at_scalar_type_name((enum vnpu_at_dtype)source->dtype);
	/* index_copy_ raises IndexError for shape errors, index_add_ not */
	enum vnpu_at_error shape_err = copy ? VNPU_AT_ERR_INDEX : VNPU_AT_ERR_VALUE;
	int64_t ss[VNPU_AT_MAX_DIMS], cs[VNPU_AT_MAX_DIMS], n = vnpu_at_numel(index), d, rows;
	uint32_t sn, cn;
	bool same;
	char a[160], b[160];

	d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	if (d < 0)
		return false;
	if (index->ndim > 1) {
		if (copy)
			vnpu_at_error_set(VNPU_AT_ERR_INDEX,
					  "%s: %s: Index should have dimension 1 or 0 (got %u)", op, fn,
					  index->ndim);
		else
			vnpu_at_error_set(VNPU_AT_ERR_INDEX, "%s: %s: Index is supposed to be a vector",
					  op, fn);
		return false;
	}
	if (copy && source->ndim == 0 && n != 1) {
		vnpu_at_error_set(VNPU_AT_ERR_INDEX,
				  "%s: %s: When source is scalar, index should have one element (got %lld)",
				  op, fn, (long long)n);
		return false;
	}
	if (copy && source->ndim != self->ndim && source->ndim && self->ndim) {
		vnpu_at_error_set(VNPU_AT_ERR_INDEX,
				  "%s: %s: When source and destination are not scalars, their dimensionality must match. Source dimensionality (%u), destination dimensionality (%u)",
				  op, fn, source->ndim, self->ndim);
		return false;
	}
	if (copy && index->dtype != VNPU_AT_I64) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: %s: Expected a long tensor for index, but got %s", op, fn,
				  vnpu_at_scalar_type_name((enum vnpu_at_dtype)index->dtype));
		return false;
	}
	if (!copy && index->dtype != VNPU_AT_I64 && index->dtype != VNPU_AT_I32) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: %s: Expected dtype int32/int64 for index",
				  op, fn);
		return false;
	}
	if (source->dtype != self->dtype) {
		if (copy)
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: %s: self and source expected to have the same dtype, but got (self) %s and (source) %s",
					  op, fn, sdt, cdt);
		else
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: %s: self (%s) and source (%s) must have the same scalar type",
					  op, fn, sdt, cdt);
		return false;
	}
	if (!vnpu_at_check_same_device(op, 3, (const struct vnpu_at_tensor *[]){ self, index, source }))
		return false;
	if (!copy && d != 0 && d >= source->ndim) {
		vnpu_at_error_set(VNPU_AT_ERR_INDEX,
				  "%s: %s: Indexing dim %lld is out of bounds of the source tensor with dim %u",
				  op, fn, (long long)d, source->ndim);
		return false;
	}
	sn = sliced_sizes(self, d, ss);
	cn = sliced_sizes(source, d, cs);
	same = sn == cn;
	for (uint32_t i = 0; same && i < sn; i++)
		same = ss[i] == cs[i];
	if (copy && !same) {
		vnpu_at_error_set(VNPU_AT_ERR_INDEX,
				  "%s: %s: Source/destination tensor must have same slice shapes. Destination slice shape: %s at dimension %lld and source slice shape: %s at dimension 0.",
				  op, fn, vnpu_at_format_dims(ss, sn, a, sizeof(a)), (long long)d,
				  vnpu_at_format_dims(cs, cn, b, sizeof(b)));
		return false;
	}
	rows = source->ndim ? source->sizes[d] : 1;
	if (n != rows) {
		vnpu_at_error_set(shape_err,
				  "%s: %s: Number of indices (%lld) should be equal to source.size(dim) (%lld)",
				  op, fn, (long long)n, (long long)rows);
		return false;
	}
	/* index_add_ compares whole shapes when both have dims */
	if (!copy && !same && source->ndim && self->ndim) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = %s source.shape = %s",
				  op, vnpu_at_format_sizes(self, a, sizeof(a)),
				  vnpu_at_format_sizes(source, b, sizeof(b)));
		return false;
	}
	if (!copy && !vnpu_at_dtype_is_float((enum vnpu_at_dtype)self->dtype) &&
	    alpha.kind == VNPU_AT_SCALAR_DOUBLE) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: For integral input tensors, argument alpha must not be a floating point number.",
				  op);
		return false;
	}
	if (!vnpu_at_check_no_self_overlap(op, self))
		return false;
	if (!vnpu_at_check_no_overlap(op, self, index) || !vnpu_at_check_no_overlap(op, self, source))
		return false;
	/* the index values last, as the kernels check them */
	if (copy ? !vnpu_at_indices_in_bounds(op, "index_copy_(): ", (struct vnpu_at_tensor *)index,
					      d, self->ndim ? self->sizes[d] : 1) :
		   !vnpu_at_indices_in_range(op, (struct vnpu_at_tensor *)index,
					     self->ndim ? self->sizes[d] : 1))
		return false;
	*dim_out = d;
	return true;
}

struct vnpu_at_tensor *vnpu_at_as_vector(struct vnpu_at_tensor *t)
{
	static const int64_t one = 1;

	return t->ndim ? vnpu_at_retain(t) : vnpu_at_view_of(t, 1, &one, &one, t->offset);
}

bool vnpu_batch_matmul_check(const char *op, bool summed,
			     const struct vnpu_at_tensor *self,
			     const struct vnpu_at_tensor *batch1,
			     const struct vnpu_at_tensor *batch2)
{
	uint32_t nt = summed ? 2 : 3;

	if (batch1->ndim != 3 || batch2->ndim != 3) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: batch%d must be a 3D tensor",
				  op, batch1->ndim != 3 ? 1 : 2);
		return false;
	}
	if (summed && batch2->sizes[0] != batch1->sizes[0]) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: batch1 and batch2 must have same number of batches, got %lld and %lld",
				  op, (long long)batch1->sizes[0],
				  (long long)batch2->sizes[0]);
		return false;
	}
	if (summed && batch2->sizes[1] != batch1->sizes[2]) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: Incompatible matrix sizes for bmm (%lldx%lld and %lldx%lld)",
				  op, (long long)batch1->sizes[1],
				  (long long)batch1->sizes[2],
				  (long long)batch2->sizes[1],
				  (long long)batch2->sizes[2]);
		return false;
	}
	if (batch2->sizes[0] != batch1->sizes[0] ||
	    batch2->sizes[1] != batch1->sizes[2]) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, %lld].",
				  op, (long long)batch1->sizes[0],
				  (long long)batch1->sizes[2],
				  (long long)batch2->sizes[0],
				  (long long)batch2->sizes[1]);
		return false;
	}
	if (self->dtype != batch1->dtype || batch1->dtype != batch2->dtype) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: Input dtypes must be the same, got: input %s, batch1: %s, batch2: %s",
				  op, vnpu_at_dtype_name(self->dtype),
				  vnpu_at_dtype_name(batch1->dtype),
				  vnpu_at_dtype_name(batch2->dtype));
		return false;
	}
	if (self->dtype == VNPU_AT_BOOL) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: \"%s\" not implemented for 'Bool'", op,
				  summed ? "addmm_impl_cpu_" : "baddbmm");
		return false;
	}
	/* self expands to the result: [B, M, N], or [M, N] when summed */
	if (self->ndim > nt) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: expand: the number of sizes provided (%u) must be greater or equal to the number of dimensions in the tensor (%u)",
				  op, nt, self->ndim);
		return false;
	}
	for (uint32_t i = 0; i < self->ndim; i++) {
		uint32_t d = nt - self->ndim + i + (summed ? 1 : 0);
		int64_t want = d == 0 ? batch1->sizes[0] :
			       d == 1 ? batch1->sizes[1] : batch2->sizes[2];

		if (self->sizes[i] != 1 && self->sizes[i] != want) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: The expanded size of the tensor (%lld) must match the existing size (%lld) at non-singleton dimension %u.",
					  op, (long long)want,
					  (long long)self->sizes[i],
					  d - (summed ? 1 : 0));
			return false;
		}
	}
	return true;
}

/* The sizes whose arithmetic PyTorch leaves to int64 wrap-around: the
 * extent in + 2*pad + stride + d*(k-1) + 1 must stay in int64 (it bounds
 * every window coordinate the kernels form), and for an average the
 * window's element count k0*k1 too. */
static bool pool_fits(int64_t in, int64_t k, int64_t pad, int64_t s,
		      int64_t d)
{
	int64_t span, bound;

	return !__builtin_mul_overflow(d, k - 1, &span) &&
	       !__builtin_add_overflow(in, 2 * pad, &bound) &&
	       !__builtin_add_overflow(bound, s, &bound) &&
	       !__builtin_add_overflow(bound, span, &bound) &&
	       !__builtin_add_overflow(bound, 1, &bound);
}

/* PyTorch's pooling_output_shape, for sizes pool_fits() took. */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t s,
			int64_t d, bool ceil_mode)
{
	int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
	int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;

	if (ceil_mode && (out - 1) * s >= in + pad)
		out--;
	return out;
}

/* Declared, with what it checks, in op_util.h. */
bool vnpu_at_pool2d_setup(const char *op, const struct vnpu_at_tensor *self,
			  struct vnpu_at_int_array kernel_size,
			  struct vnpu_at_int_array stride,
			  struct vnpu_at_int_array padding,
			  struct vnpu_at_int_array dilation, bool ceil_mode,
			  bool is_max, struct vnpu_at_pool2d *g)
{
	if (self->ndim != 3 && self->ndim != 4) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Expected 3D or 4D (batch mode) tensor for input, but got %u-D",
			op, self->ndim);
		return false;
	}
	/* PyTorch's CPU max pooling takes every dtype but bool (2.x), its
	 * avg pooling int64 besides the floating ones */
	if (!vnpu_at_dtype_is_float(self->dtype) &&
	    (is_max ? self->dtype == VNPU_AT_BOOL :
		      self->dtype != VNPU_AT_I64)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: \"%s\" not implemented for '%s'", op,
			is_max ? "max_pool2d" : "avg_pool2d",
			vnpu_at_dtype_name(self->dtype));
		return false;
	}
	/* stride defaults to kernel_size */
	if (!vnpu_at_pair_arg(op, "kernel_size", kernel_size, NULL, g->k) ||
	    !vnpu_at_pair_arg(op, "stride", stride, g->k, g->s) ||
	    !vnpu_at_pair_arg(op, "padding", padding, (const int64_t[2]){ 0, 0 }, g->p) ||
	    !vnpu_at_pair_arg(op, "dilation", dilation, (const int64_t[2]){ 1, 1 }, g->d))
		return false;
	for (int i = 0; i < 2; i++) {
		if (g->k[i] <= 0) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: kernel size should be greater than zero, but got kH: %lld kW: %lld",
				op, (long long)g->k[0], (long long)g->k[1]);
			return false;
		}
		if (g->s[i] <= 0) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: stride should be greater than zero, but got dH: %lld dW: %lld",
				op, (long long)g->s[0], (long long)g->s[1]);
			return false;
		}
		if (g->d[i] <= 0) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: dilation should be greater than zero, but got dilationH: %lld dilationW: %lld",
				op, (long long)g->d[0], (long long)g->d[1]);
			return false;
		}
		if (g->p[i] < 0 || g->p[i] > g->k[i] / 2) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: pad should be at most half of effective kernel size, but got pad=%lld, kernel_size=%lld and dilation=%lld",
				op, (long long)g->p[i], (long long)g->k[i],
				(long long)g->d[i]);
			return false;
		}
	}
	g->batched = self->ndim == 4;
	g->N = g->batched ? self->sizes[0] : 1;
	g->C = self->sizes[self->ndim - 3];
	g->H = self->sizes[self->ndim - 2];
	g->W = self->sizes[self->ndim - 1];
	if (!pool_fits(g->H, g->k[0], g->p[0], g->s[0], g->d[0]) ||
	    !pool_fits(g->W, g->k[1], g->p[1], g->s[1], g->d[1]) ||
	    (!is_max && __builtin_mul_overflow(g->k[0], g->k[1],
					       &(int64_t){ 0 }))) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: kernel_size (%lld, %lld), stride (%lld, %lld), padding (%lld, %lld) and dilation (%lld, %lld) overflow int64 on an input of %lldx%lld",
			op, (long long)g->k[0], (long long)g->k[1],
			(long long)g->s[0], (long long)g->s[1],
			(long long)g->p[0], (long long)g->p[1],
			(long long)g->d[0], (long long)g->d[1],
			(long long)g->H, (long long)g->W);
		return false;
	}
	g->HO = pool_out(g->H, g->k[0], g->p[0], g->s[0], g->d[0], ceil_mode);
	g->WO = pool_out(g->W, g->k[1], g->p[1], g->s[1], g->d[1], ceil_mode);
	if (g->C == 0 || g->H == 0 || g->W == 0 || g->HO <= 0 || g->WO <= 0) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output size is too small",
			op, (long long)g->C, (long long)g->H, (long long)g->W,
			(long long)g->C, (long long)g->HO, (long long)g->WO);
		return false;
	}
	return true;
}
