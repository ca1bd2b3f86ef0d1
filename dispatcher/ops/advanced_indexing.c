/* SPDX-License-Identifier: MIT */
/*
 * Advanced indexing, for every backend: index.Tensor (x[idx], x[mask])
 * and _index_put_impl_ (x[idx] = v, accumulate or not), composed as
 * PyTorch's TensorAdvancedIndexing composes them, over the backend's
 * index_select, index_copy_ and index_add_.
 *
 * The index tensors are read back to the host (the other indexing ops
 * check their indices there too), a mask becomes its true positions, and
 * every pick becomes one row of self seen as [outer, rows, inner], rows
 * spanning the indexed dims: where they are adjacent in self, of self or
 * a contiguous copy of it; otherwise of a contiguous copy with them moved
 * to the front (PyTorch's transposeToFront), which put_ copies back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_util.h"
#include "dispatch_internal.h"

/* One index tensor after masks are expanded: it picks along `ndims`
 * consecutive dims of self (a mask's, or 1) by host values. */
struct index_group {
	uint32_t first, ndims;
	int64_t size;			/* product of the dims' sizes */
	uint32_t nd;			/* its shape, for broadcasting */
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *host;	/* an index: its CPU contiguous copy */
	int64_t *positions;		/* a mask: its true positions, row-major */
	uint32_t ordinal;		/* PyTorch's index number in errors */
};

struct index_plan {
	uint32_t ngroups;
	struct index_group g[VNPU_AT_MAX_DIMS];
	bool adjacent;
	uint32_t bnd;			/* the broadcast shape of the indices */
	int64_t bsizes[VNPU_AT_MAX_DIMS];
	uint32_t nd;			/* the shape of the indexing result */
	int64_t sizes[VNPU_AT_MAX_DIMS];
	int64_t outer, rows, inner, npicks;
};

static void plan_free(struct index_plan *p)
{
	for (uint32_t i = 0; i < p->ngroups; i++) {
		vnpu_at_release(p->g[i].host);
		free(p->g[i].positions);
	}
	p->ngroups = 0;
}

/* A mask's true positions (row-major over its dims) into g. */
static bool mask_positions(struct vnpu_at_tensor *mask, struct index_group *g)
{
	struct vnpu_at_tensor *h = vnpu_at_host_contiguous(mask);
	int64_t n = h ? vnpu_at_numel(h) : 0, count = 0;
	const uint8_t *m = h ? vnpu_at_data(h) : NULL;

	if (!h)
		return false;
	g->positions = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
	if (!g->positions) {
		vnpu_at_release(h);
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "indexing: out of host memory");
		return false;
	}
	for (int64_t i = 0; i < n; i++)
		if (m[i])
			g->positions[count++] = i;
	vnpu_at_release(h);
	g->nd = 1;
	g->sizes[0] = count;
	return true;
}

/* Expands masks and checks the index tensors and their broadcast, in
 * PyTorch's order and words (make_info); the index values are checked by
 * plan_rows. */
static bool plan_shapes(const char *op, const struct vnpu_at_tensor *self,
			struct vnpu_at_tensor_list indices, struct index_plan *p)
{
	int64_t dim_group[VNPU_AT_MAX_DIMS];
	uint32_t pos = 0, ordinal = 0, first = 0, last = 0;
	char a[160], b[160];

	memset(p, 0, sizeof(*p));
	if (indices.n > self->ndim) {
		vnpu_at_error_set(VNPU_AT_ERR_INDEX,
				  "%s: too many indices for tensor of dimension %u (got %lld)", op,
				  self->ndim, (long long)indices.n);
		return false;
	}
	for (int64_t i = 0; i < indices.n; i++) {
		const struct vnpu_at_tensor *t = indices.v[i];

		if (t && t->dtype != VNPU_AT_I64 && t->dtype != VNPU_AT_I32 &&
		    t->dtype != VNPU_AT_U8 && t->dtype != VNPU_AT_BOOL) {
			vnpu_at_error_set(VNPU_AT_ERR_INDEX,
					  "%s: tensors used as indices must be long, int, byte or bool tensors",
					  op);
			return false;
		}
		if (t && t->storage->device.type != VNPU_AT_CPU &&
		    (t->storage->device.type != self->storage->device.type ||
		     t->storage->device.index != self->storage->device.index)) {
			vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					  "%s: indices should be either on cpu or on the same device as the indexed tensor (%s)",
					  op, self->storage->device.type == VNPU_AT_NPU ? "npu" : "cpu");
			return false;
		}
	}
	for (uint32_t d = 0; d < VNPU_AT_MAX_DIMS; d++)
		dim_group[d] = -1;
	for (int64_t i = 0; i < indices.n; i++) {
		struct vnpu_at_tensor *t = indices.v[i];
		bool mask = t && (t->dtype == VNPU_AT_U8 || t->dtype == VNPU_AT_BOOL);
		uint32_t span = !t ? 1 : mask ? t->ndim : 1;
		struct index_group *g = &p->g[p->ngroups];

		if (!t) {
			pos++;
			continue;
		}
		if (mask && t->ndim == 0)	/* expands to no index (expandTensors) */
			continue;
		if (pos + span > self->ndim) {
			vnpu_at_error_set(VNPU_AT_ERR_INDEX,
					  "%s: too many indices for tensor of dimension %u (got %u)", op,
					  self->ndim, pos + span);
			plan_free(p);
			return false;
		}
		g->first = pos;
		g->ndims = span;
		g->size = 1;
		g->ordinal = ordinal;
		for (uint32_t j = 0; j < span; j++) {
			if (mask && t->sizes[j] != self->sizes[pos + j]) {
				vnpu_at_error_set(VNPU_AT_ERR_INDEX,
						  "%s: The shape of the mask %s at index %u does not match the shape of the indexed tensor %s at index %u",
						  op, vnpu_at_format_sizes(t, a, sizeof(a)), j,
						  vnpu_at_format_sizes(self, b, sizeof(b)), pos + j);
				plan_free(p);
				return false;
			}
			g->size *= self->sizes[pos + j];
			dim_group[pos + j] = p->ngroups;
		}
		p->ngroups++;
		if (mask ? !mask_positions(t, g) : !(g->host = vnpu_at_host_contiguous(t))) {
			plan_free(p);
			return false;
		}
		if (!mask) {
			g->nd = t->ndim;
			memcpy(g->sizes, t->sizes, sizeof(int64_t) * t->ndim);
		}
		ordinal += span;
		pos += span;
	}
	if (!p->ngroups) {
		vnpu_at_error_set(VNPU_AT_ERR_INDEX, "%s: indexing needs at least one index tensor",
				  op);
		return false;
	}

	/* broadcast: a mask counts once per dim it spans, as its expansion */
	for (uint32_t i = 0; i < p->ngroups; i++) {
		const struct index_group *g = &p->g[i];
		uint32_t nd = g->nd > p->bnd ? g->nd : p->bnd;
		int64_t out[VNPU_AT_MAX_DIMS];
		bool ok = true;

		for (uint32_t k = 0; k < nd; k++) {
			int64_t x = k + p->bnd >= nd ? p->bsizes[k + p->bnd - nd] : 1;
			int64_t y = k + g->nd >= nd ? g->sizes[k + g->nd - nd] : 1;

			ok = ok && (x == y || x == 1 || y == 1);
			out[k] = x == 1 ? y : x;
		}
		if (!ok) {
			int n = snprintf(a, sizeof(a), "%s", "");

			for (uint32_t j = 0; j < p->ngroups && n < (int)sizeof(a); j++)
				for (uint32_t r = 0; r < p->g[j].ndims && n < (int)sizeof(a); r++)
					n += snprintf(a + n, sizeof(a) - (size_t)n, "%s%s",
						      n ? ", " : "",
						      vnpu_at_format_dims(p->g[j].sizes, p->g[j].nd, b, sizeof(b)));
			vnpu_at_error_set(VNPU_AT_ERR_INDEX,
					  "%s: shape mismatch: indexing tensors could not be broadcast together with shapes %s",
					  op, a);
			plan_free(p);
			return false;
		}
		p->bnd = nd;
		memcpy(p->bsizes, out, sizeof(int64_t) * nd);
	}
	p->npicks = vnpu_at_shape_numel(p->bnd, p->bsizes);

	/* the result's shape, and self's as [outer, rows, inner] */
	first = p->g[0].first;
	last = p->g[p->ngroups - 1].first + p->g[p->ngroups - 1].ndims - 1;
	p->adjacent = true;
	for (uint32_t d = first; d <= last; d++)
		p->adjacent = p->adjacent && dim_group[d] >= 0;
	p->outer = p->rows = p->inner = 1;
	p->nd = 0;
	for (uint32_t d = 0; d < self->ndim; d++) {
		if (dim_group[d] >= 0)
			p->rows *= self->sizes[d];
		else if (p->adjacent && d < first)
			p->outer *= self->sizes[d];
		else
			p->inner *= self->sizes[d];
	}
	if (self->ndim - (last - first + 1) + p->bnd > VNPU_AT_MAX_DIMS) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "%s: the result would have more than %d dims",
				  op, VNPU_AT_MAX_DIMS);
		plan_free(p);
		return false;
	}
	if (p->adjacent)
		for (uint32_t d = 0; d < first; d++)
			p->sizes[p->nd++] = self->sizes[d];
	for (uint32_t k = 0; k < p->bnd; k++)
		p->sizes[p->nd++] = p->bsizes[k];
	for (uint32_t d = p->adjacent ? last + 1 : 0; d < self->ndim; d++)
		if (dim_group[d] < 0)
			p->sizes[p->nd++] = self->sizes[d];
	return true;
}

/* The row of each pick (row-major over the broadcast shape) as an int64
 * tensor on dev, the index values checked against their dims' sizes
 * (PyTorch's IndexError; negative ones count from the end). */
static struct vnpu_at_tensor *plan_rows(const char *op, const struct index_plan *p,
					struct vnpu_at_device dev)
{
	int64_t bstride[VNPU_AT_MAX_DIMS][VNPU_AT_MAX_DIMS], mult[VNPU_AT_MAX_DIMS];
	int64_t idx[VNPU_AT_MAX_DIMS] = { 0 }, m = 1, *rows;
	struct vnpu_at_tensor *host, *dev_rows;

	for (uint32_t i = p->ngroups; i-- > 0;) {
		const struct index_group *g = &p->g[i];
		int64_t s = 1;

		mult[i] = m;
		m *= g->size;
		/* contiguous strides of g's shape, aligned right, 0 where broadcast */
		for (uint32_t k = p->bnd; k-- > 0;) {
			uint32_t gk = k + g->nd - p->bnd;
			bool has = k + g->nd >= p->bnd;

			bstride[i][k] = has && g->sizes[gk] != 1 ? s : 0;
			if (has)
				s *= g->sizes[gk];
		}
	}
	host = vnpu_at_empty(1, &p->npicks, VNPU_AT_I64, VNPU_AT_DEV_CPU);
	if (!host)
		return NULL;
	rows = vnpu_at_data(host);
	for (int64_t e = 0; e < p->npicks; e++) {
		int64_t row = 0;

		for (uint32_t i = 0; i < p->ngroups; i++) {
			const struct index_group *g = &p->g[i];
			int64_t off = 0, v;

			for (uint32_t k = 0; k < p->bnd; k++)
				off += idx[k] * bstride[i][k];
			if (g->positions) {
				v = g->positions[off];
			} else {
				v = vnpu_at_load_int((enum vnpu_at_dtype)g->host->dtype,
						     (const char *)vnpu_at_data(g->host) +
							     off * (int64_t)vnpu_at_dtype_size(
								     g->host->dtype));
				if (v < -g->size || v >= g->size) {
					vnpu_at_release(host);
					return vnpu_at_error_set(VNPU_AT_ERR_INDEX,
								 "%s: index %lld is out of bounds for dimension %u with size %lld",
								 op, (long long)v, g->ordinal,
								 (long long)g->size);
				}
				if (v < 0)
					v += g->size;
			}
			row += v * mult[i];
		}
		rows[e] = row;
		for (uint32_t k = p->bnd; k-- > 0;)
			if (++idx[k] < p->bsizes[k])
				break;
			else
				idx[k] = 0;
	}
	if (dev.type == VNPU_AT_CPU)
		return host;
	dev_rows = vnpu_op__to_copy(host, VNPU_AT_I64, dev, false);
	vnpu_at_release(host);
	return dev_rows;
}

/* The tensor the rows address (as [outer, rows, inner]): a contiguous
 * self, or a contiguous copy of self (indexed dims first when they are
 * not adjacent). *back gets what the copy must be written back into
 * (self or its permuted view), NULL when it is self itself. */
static struct vnpu_at_tensor *plan_target(struct vnpu_at_tensor *self, const struct index_plan *p,
					  struct vnpu_at_tensor **back)
{
	struct vnpu_at_tensor *src, *c;
	int64_t perm[VNPU_AT_MAX_DIMS];
	uint32_t n = 0;

	*back = NULL;
	if (p->adjacent) {
		src = vnpu_at_retain(self);
	} else {
		for (uint32_t i = 0; i < p->ngroups; i++)
			for (uint32_t j = 0; j < p->g[i].ndims; j++)
				perm[n++] = p->g[i].first + j;
		for (uint32_t d = 0; d < self->ndim; d++) {
			bool indexed = false;

			for (uint32_t k = 0; k < n && !indexed; k++)
				indexed = perm[k] == d;
			if (!indexed)
				perm[n++] = d;
		}
		src = vnpu_op_permute(self, (struct vnpu_at_int_array){ perm, self->ndim });
	}
	c = src ? vnpu_at_contiguous(src) : NULL;
	if (c && c != src)
		*back = vnpu_at_retain(src);
	vnpu_at_release(src);
	return c;
}

struct vnpu_at_tensor *vnpu_cea_index_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					     struct vnpu_at_tensor_list indices)
{
	static const char op[] = "aten::index";
	struct vnpu_at_tensor *target = NULL, *back = NULL, *rows = NULL, *picked = NULL;
	struct vnpu_at_tensor *view = NULL, *out = NULL;
	struct index_plan p;

	(void)ks;
	if (!plan_shapes(op, self, indices, &p))
		return NULL;
	rows = plan_rows(op, &p, self->storage->device);
	target = rows ? plan_target(self, &p, &back) : NULL;
	view = target ? vnpu_op_view(target, VNPU_AT_INTS(p.outer, p.rows, p.inner)) : NULL;
	picked = view ? vnpu_op_index_select(view, 1, rows) : NULL;
	if (picked)
		out = vnpu_op_view(picked, (struct vnpu_at_int_array){ p.sizes, p.nd });
	vnpu_at_release(picked);
	vnpu_at_release(view);
	vnpu_at_release(target);
	vnpu_at_release(back);
	vnpu_at_release(rows);
	plan_free(&p);
	return out;
}

/* v expands to (nd, sizes): no more dims, each 1 or equal (aligned right). */
static bool broadcasts_to(const struct vnpu_at_tensor *v, uint32_t nd, const int64_t *sizes)
{
	if (v->ndim > nd)
		return false;
	for (uint32_t k = 0; k < v->ndim; k++) {
		int64_t x = v->sizes[v->ndim - 1 - k];

		if (x != 1 && x != sizes[nd - 1 - k])
			return false;
	}
	return true;
}

/* PyTorch's canDispatchToMaskedFill: one mask and a one-element CPU
 * value, which then fills (cast to self's dtype, any shape). */
static bool fills_by_mask(const struct vnpu_at_tensor *self, struct vnpu_at_tensor_list indices,
			  const struct vnpu_at_tensor *values)
{
	int64_t masks = 0;

	if (vnpu_at_numel(values) != 1 || values->storage->device.type != VNPU_AT_CPU)
		return false;
	for (int64_t i = 0; i < indices.n; i++) {
		const struct vnpu_at_tensor *t = indices.v[i];

		if (!t)
			continue;
		if ((t->dtype != VNPU_AT_BOOL && t->dtype != VNPU_AT_U8) ||
		    t->storage->device.type != self->storage->device.type || masks++)
			return false;
	}
	return masks == 1;
}

struct vnpu_at_tensor *vnpu_cea__index_put_impl_(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						 struct vnpu_at_tensor_list indices,
						 struct vnpu_at_tensor *values, bool accumulate,
						 bool unsafe)
{
	static const char op[] = "aten::_index_put_impl_";
	struct vnpu_at_tensor *v = NULL, *target = NULL, *back = NULL, *rows = NULL;
	struct vnpu_at_tensor *e = NULL, *c = NULL, *src = NULL, *r = NULL, *view = NULL;
	char a[160], b[160];
	struct index_plan p;
	bool ok = false;

	(void)ks;
	(void)unsafe;	/* skips no check here */
	if (indices.n > self->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_INDEX,
					 "%s: too many indices for tensor of dimension %u (got %lld)",
					 op, self->ndim, (long long)indices.n);
	if (!accumulate && fills_by_mask(self, indices, values)) {
		/* value.item(), cast to self's dtype, on self's device */
		struct vnpu_at_tensor *scalar = vnpu_op_view(values, (struct vnpu_at_int_array){ NULL, 0 });

		v = scalar ? vnpu_op__to_copy(scalar, (enum vnpu_at_dtype)self->dtype,
					      self->storage->device, false) : NULL;
		vnpu_at_release(scalar);
	} else if (values->ndim == 0 && values->storage->device.type != self->storage->device.type) {
		v = vnpu_op__to_copy(values, (enum vnpu_at_dtype)values->dtype,
				     self->storage->device, false);
	} else {
		v = vnpu_at_retain(values);
	}
	if (!v)
		return NULL;
	if (!vnpu_at_check_no_overlap(op, self, values))
		goto out;
	for (int64_t i = 0; i < indices.n; i++)
		if (!vnpu_at_check_no_overlap(op, self, indices.v[i]))
			goto out;
	if (!plan_shapes(op, self, indices, &p))
		goto out;
	if (!broadcasts_to(v, p.nd, p.sizes)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s",
				  op, vnpu_at_format_sizes(v, a, sizeof(a)),
				  vnpu_at_format_dims(p.sizes, p.nd, b, sizeof(b)));
		goto out_plan;
	}
	if (v->dtype != self->dtype) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: Index put requires the source and destination dtypes match, got %s for the destination and %s for the source.",
				  op, vnpu_at_scalar_type_name((enum vnpu_at_dtype)self->dtype),
				  vnpu_at_scalar_type_name((enum vnpu_at_dtype)v->dtype));
		goto out_plan;
	}
	if (!vnpu_at_check_same_device(op, 2, (const struct vnpu_at_tensor *[]){ self, v }))
		goto out_plan;
	rows = plan_rows(op, &p, self->storage->device);
	target = rows ? plan_target(self, &p, &back) : NULL;
	view = target ? vnpu_op_view(target, VNPU_AT_INTS(p.outer, p.rows, p.inner)) : NULL;
	e = view ? vnpu_op_expand(v, (struct vnpu_at_int_array){ p.sizes, p.nd }, false) : NULL;
	c = e ? vnpu_at_contiguous(e) : NULL;
	src = c ? vnpu_op_view(c, VNPU_AT_INTS(p.outer, p.npicks, p.inner)) : NULL;
	if (src)
		r = accumulate ? vnpu_op_index_add_(view, 1, rows, src, VNPU_AT_INT(1)) :
				 vnpu_op_index_copy_(view, 1, rows, src);
	ok = r != NULL;
	vnpu_at_release(r);
	if (ok && back) {
		r = vnpu_op_copy_(back, target, false);
		ok = r != NULL;
		vnpu_at_release(r);
	}
	vnpu_at_release(src);
	vnpu_at_release(c);
	vnpu_at_release(e);
	vnpu_at_release(view);
	vnpu_at_release(target);
	vnpu_at_release(back);
	vnpu_at_release(rows);
out_plan:
	plan_free(&p);
out:
	vnpu_at_release(v);
	return ok ? vnpu_at_retain(self) : NULL;
}

struct vnpu_at_tensor *vnpu_cea_index_put_(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   struct vnpu_at_tensor_list indices,
					   struct vnpu_at_tensor *values, bool accumulate)
{
	(void)ks;
	return vnpu_op__index_put_impl_(self, indices, values, accumulate, false);
}

struct vnpu_at_tensor *vnpu_cea_index_put(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  struct vnpu_at_tensor_list indices,
					  struct vnpu_at_tensor *values, bool accumulate)
{
	struct vnpu_at_tensor *c = vnpu_op_clone(self), *r;

	(void)ks;
	r = c ? vnpu_op__index_put_impl_(c, indices, values, accumulate, false) : NULL;
	vnpu_at_release(r);
	if (!r) {
		vnpu_at_release(c);
		return NULL;
	}
	return c;
}

struct vnpu_at_tensor *vnpu_cea_index_add(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  int64_t dim, struct vnpu_at_tensor *index,
					  struct vnpu_at_tensor *source, struct vnpu_at_scalar alpha)
{
	struct vnpu_at_tensor *c = vnpu_op_clone(self), *r;

	(void)ks;
	r = c ? vnpu_op_index_add_(c, dim, index, source, alpha) : NULL;
	vnpu_at_release(r);
	if (!r) {
		vnpu_at_release(c);
		return NULL;
	}
	return c;
}

struct vnpu_at_tensor *vnpu_cea_index_copy(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   int64_t dim, struct vnpu_at_tensor *index,
					   struct vnpu_at_tensor *source)
{
	struct vnpu_at_tensor *c = vnpu_op_clone(self), *r;

	(void)ks;
	r = c ? vnpu_op_index_copy_(c, dim, index, source) : NULL;
	vnpu_at_release(r);
	if (!r) {
		vnpu_at_release(c);
		return NULL;
	}
	return c;
}

/* masked_fill with a 0-dim value tensor: its value read back (PyTorch's
 * value.item(); a sync when it lives on the device), then the Scalar form. */
struct vnpu_at_tensor *vnpu_cea_masked_fill_Tensor(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *self,
						   struct vnpu_at_tensor *mask,
						   struct vnpu_at_tensor *value)
{
	struct vnpu_at_scalar v;

	(void)ks;
	if (value->ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "aten::masked_fill: masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %u dimension(s).",
					 value->ndim);
	v = vnpu_op__local_scalar_dense(value);
	if (v.kind == VNPU_AT_SCALAR_NONE)
		return NULL;
	return vnpu_op_masked_fill_Scalar(self, mask, v);
}

/* flip: each flipped dim's rows gathered in reverse (index_select of a
 * descending arange), so every backend and dtype index_select takes runs
 * it; a new tensor even when nothing flips. */
struct vnpu_at_tensor *vnpu_cea_flip(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				     struct vnpu_at_int_array dims)
{
	static const char op[] = "aten::flip";
	bool flip[VNPU_AT_MAX_DIMS] = { false };
	struct vnpu_at_tensor *cur;

	(void)ks;
	for (int64_t k = 0; k < dims.n; k++) {
		int64_t d = vnpu_at_wrap_dim(dims.v[k], self->ndim ? self->ndim : 1);

		if (d < 0)
			return NULL;
		if (flip[d])
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: dim %lld appears multiple times in the list of dims",
						 op, (long long)d);
		flip[d] = true;
	}
	cur = vnpu_at_retain(self);
	for (uint32_t d = 0; cur && d < self->ndim; d++) {
		int64_t n = self->sizes[d];
		struct vnpu_at_tensor *rev, *next;

		if (!flip[d] || n < 2)
			continue;
		rev = vnpu_op_arange_start_step(VNPU_AT_INT(n - 1), VNPU_AT_INT(-1), VNPU_AT_INT(-1),
						VNPU_AT_I64, self->storage->device);
		next = rev ? vnpu_op_index_select(cur, (int64_t)d, rev) : NULL;
		vnpu_at_release(rev);
		vnpu_at_release(cur);
		cur = next;
	}
	return vnpu_at_new_or_clone(cur, self);
}
