/* SPDX-License-Identifier: MIT */
/*
 * CPU reference kernels: embedding, cat, index_select, masked_select,
 * gather, scatter, scatter_add, masked_fill, index_add_, index_copy_
 * (docs/dispatcher.md).
 * Element copies through strides; indices are int64 or int32 and must be
 * in [0, size) of the indexed dim (negative ones are refused, as PyTorch's
 * CPU kernels), checked before anything is written.
 */
#include <stdlib.h>

#include "../kernel_common.h"

/* Copies element src (dtype sdt) to dst (dtype ddt), exactly when equal. */
static void copy_elem(enum vnpu_at_dtype ddt, void *dst,
		      enum vnpu_at_dtype sdt, const void *src)
{
	if (ddt == sdt)
		memcpy(dst, src, vnpu_at_dtype_size(ddt));
	else if (kc_is_int(ddt) && kc_is_int(sdt))
		vnpu_at_store_int(ddt, dst, vnpu_at_load_int(sdt, src));
	else
		vnpu_at_store(ddt, dst, vnpu_at_load(sdt, src));
}

static bool index_dtype_ok(const char *op, const struct vnpu_at_tensor *idx)
{
	if (idx->dtype == VNPU_AT_I64 || idx->dtype == VNPU_AT_I32)
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got %s instead",
			  op, vnpu_at_dtype_name(idx->dtype));
	return false;
}

/*
 * out = self with dim `dim` replaced by the rows index picks: the output
 * shape is out_sizes; dims [dim, dim + idx_ndim) of the output walk the
 * index (any rank, row-major) and pick row index[...] of self's dim.
 */
static struct vnpu_at_tensor *gather_rows(const char *op,
					  struct vnpu_at_tensor *self,
					  uint32_t dim,
					  struct vnpu_at_tensor *index)
{
	int64_t out_sizes[VNPU_AT_MAX_DIMS], idx_strides[VNPU_AT_MAX_DIMS];
	uint32_t ni = index->ndim, out_nd = self->ndim - 1 + ni;
	int64_t rows = self->sizes[dim];
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	int64_t isz = (int64_t)vnpu_at_dtype_size(self->dtype);
	int64_t xsz = (int64_t)vnpu_at_dtype_size(index->dtype);
	const char *ibase = vnpu_at_data(index);

	if (out_nd > VNPU_AT_MAX_DIMS)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: result would have more than %d dims",
					 op, VNPU_AT_MAX_DIMS);
	/* Every index is checked before the output is written. */
	if (!vnpu_at_indices_in_range(op, index, rows))
		return NULL;
	for (uint32_t d = 0; d < dim; d++)
		out_sizes[d] = self->sizes[d];
	for (uint32_t d = 0; d < ni; d++) {
		out_sizes[dim + d] = index->sizes[d];
		idx_strides[d] = index->strides[d];
	}
	for (uint32_t d = dim + 1; d < self->ndim; d++)
		out_sizes[d - 1 + ni] = self->sizes[d];
	out = vnpu_at_empty(out_nd, out_sizes, self->dtype, VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	/* Walk the output with a plain counter over its (contiguous) sizes. */
	if (!vnpu_at_iter_init(&it, out_nd, out_sizes, 1,
			       (const struct vnpu_at_tensor *[]){ out })) {
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it)) {
		int64_t ioff = 0, soff = 0, row;

		for (uint32_t d = 0; d < ni; d++)
			ioff += it.idx[dim + d] * idx_strides[d];
		row = vnpu_at_load_int(index->dtype, ibase + ioff * xsz);
		for (uint32_t d = 0; d < dim; d++)
			soff += it.idx[d] * self->strides[d];
		soff += row * self->strides[dim];
		for (uint32_t d = dim + 1; d < self->ndim; d++)
			soff += it.idx[d - 1 + ni] * self->strides[d];
		memcpy(it.p[0], (const char *)vnpu_at_data(self) + soff * isz,
		       (size_t)isz);
	}
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_embedding(vnpu_keyset_t ks,
					  struct vnpu_at_tensor *weight,
					  struct vnpu_at_tensor *indices,
					  int64_t padding_idx,
					  bool scale_grad_by_freq, bool sparse)
{
	(void)ks;
	(void)padding_idx;	/* only affects the backward */
	(void)scale_grad_by_freq;
	(void)sparse;
	if (weight->ndim != 2)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"aten::embedding: 'weight' must be 2-D");
	if (!index_dtype_ok("aten::embedding", indices))
		return NULL;
	return gather_rows("aten::embedding", weight, 0, indices);
}

struct vnpu_at_tensor *vnpu_cpu_index_select(vnpu_keyset_t ks,
					     struct vnpu_at_tensor *self,
					     int64_t dim,
					     struct vnpu_at_tensor *index)
{
	static const char op[] = "aten::index_select";
	struct vnpu_at_tensor *view, *out;
	int64_t d;

	(void)ks;
	if (index->ndim > 1)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: index_select(): Index is supposed to be a vector",
			op);
	if (index->dtype != VNPU_AT_I64 && index->dtype != VNPU_AT_I32)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: index_select(): Expected dtype int32/int64 for index but got: %s",
			op, vnpu_at_dtype_name(index->dtype));
	d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	if (d < 0)
		return NULL;
	if (self->ndim == 0) {
		/* A scalar is indexed as a 1-element vector (the indices
		 * checked), and the result is 0-dim whatever the index's
		 * length, as PyTorch 1.13's */
		view = vnpu_at_view_of(self, 1, (int64_t[]){ 1 },
				       (int64_t[]){ 1 }, self->offset);
		if (!view)
			return NULL;
		out = gather_rows(op, view, 0, index);
		vnpu_at_release(view);
		if (out) {
			struct vnpu_at_tensor *s = vnpu_at_view_of(out, 0, NULL,
							NULL, out->offset);

			vnpu_at_release(out);
			out = s;
		}
		return out;
	}
	if (index->ndim == 0) {
		/* A 0-dim index keeps the dim with size 1. */
		view = vnpu_at_view_of(index, 1, (int64_t[]){ 1 },
				       (int64_t[]){ 1 }, index->offset);
		if (!view)
			return NULL;
		out = gather_rows(op, self, (uint32_t)d, view);
		vnpu_at_release(view);
		return out;
	}
	return gather_rows(op, self, (uint32_t)d, index);
}

struct vnpu_at_tensor *vnpu_cpu_cat(vnpu_keyset_t ks,
				    struct vnpu_at_tensor_list tensors,
				    int64_t dim)
{
	static const char op[] = "aten::cat";
	const struct vnpu_at_tensor *ref = NULL;
	int64_t sizes[VNPU_AT_MAX_DIMS], d, pos = 0;
	enum vnpu_at_dtype dt = VNPU_AT_DTYPE_NONE;
	struct vnpu_at_tensor *out;

	(void)ks;
	if (tensors.n == 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: torch.cat(): expected a non-empty list of Tensors",
			op);
	/* Legacy rule: 1-D empty tensors are skipped; the first other
	 * tensor fixes the rank and the sizes off the cat dim. */
	for (int64_t i = 0; i < tensors.n; i++) {
		const struct vnpu_at_tensor *t = tensors.v[i];

		if (!t)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: tensor %lld is None", op, (long long)i);
		dt = dt == VNPU_AT_DTYPE_NONE ? (enum vnpu_at_dtype)t->dtype :
			vnpu_at_promote(dt, (enum vnpu_at_dtype)t->dtype);
		if (!ref && !(t->ndim == 1 && t->sizes[0] == 0))
			ref = t;
	}
	if (!ref)	/* all legacy-empty: the result is empty too */
		ref = tensors.v[0];
	if (ref->ndim == 0)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			"%s: zero-dimensional tensor (at position 0) cannot be concatenated",
			op);
	d = vnpu_at_wrap_dim(dim, ref->ndim);
	if (d < 0)
		return NULL;
	memcpy(sizes, ref->sizes, sizeof(int64_t) * ref->ndim);
	sizes[d] = 0;
	for (int64_t i = 0; i < tensors.n; i++) {
		const struct vnpu_at_tensor *t = tensors.v[i];

		if (t->ndim == 1 && t->sizes[0] == 0 && t != ref)
			continue;
		if (t->ndim != ref->ndim)
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				"%s: Tensors must have same number of dimensions: got %u and %u",
				op, ref->ndim, t->ndim);
		for (uint32_t k = 0; k < t->ndim; k++)
			if ((int64_t)k != d && t->sizes[k] != ref->sizes[k])
				return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					"%s: Sizes of tensors must match except in dimension %lld. Expected size %lld but got size %lld for tensor number %lld in the list.",
					op, (long long)d,
					(long long)ref->sizes[k],
					(long long)t->sizes[k], (long long)i);
		if (__builtin_add_overflow(sizes[d], t->sizes[d], &sizes[d]))
			return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
						 "%s: size overflow", op);
	}
	out = vnpu_at_empty(ref->ndim, sizes, dt, VNPU_AT_DEV_CPU);
	if (!out)
		return NULL;
	for (int64_t i = 0; i < tensors.n; i++) {
		struct vnpu_at_tensor *t = tensors.v[i];
		struct vnpu_at_tensor *slot;
		struct vnpu_at_iter it;
		int64_t ssz[VNPU_AT_MAX_DIMS];

		if (t->ndim == 1 && t->sizes[0] == 0 && t != ref)
			continue;
		memcpy(ssz, sizes, sizeof(int64_t) * ref->ndim);
		ssz[d] = t->sizes[d];
		slot = vnpu_at_view_of(out, ref->ndim, ssz, out->strides,
				       out->offset + pos * out->strides[d]);
		if (!slot || !vnpu_at_iter_init(&it, ref->ndim, ssz, 2,
				(const struct vnpu_at_tensor *[]){ slot, t })) {
			vnpu_at_release(slot);
			vnpu_at_release(out);
			return NULL;
		}
		while (vnpu_at_iter_next(&it))
			copy_elem(dt, it.p[0], t->dtype, it.p[1]);
		vnpu_at_release(slot);
		pos += t->sizes[d];
	}
	return out;
}

/*
 * The gradient of embedding: grad_output's rows (one per index, grad's
 * last dim the embedding's) added into zeros of (num_weights, D), in
 * index order; an index equal to padding_idx adds nothing, and with
 * scale_grad_by_freq each row is divided by its index's count.
 */
struct vnpu_at_tensor *vnpu_cpu_embedding_dense_backward(vnpu_keyset_t ks,
	struct vnpu_at_tensor *grad_output, struct vnpu_at_tensor *indices,
	int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq)
{
	static const char op[] = "aten::embedding_dense_backward";
	struct vnpu_at_tensor *g = NULL, *idx = NULL, *out = NULL;
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)grad_output->dtype;
	int64_t n, d, *counts = NULL;
	size_t es = vnpu_at_dtype_size(dt), xs;

	(void)ks;
	if (!index_dtype_ok(op, indices))
		return NULL;
	if (!vnpu_at_dtype_is_float(dt))
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: \"embedding_backward\" not implemented for '%s'",
					 op, vnpu_at_dtype_name(dt));
	n = vnpu_at_numel(indices);
	d = grad_output->ndim ? grad_output->sizes[grad_output->ndim - 1] : 1;
	if (num_weights < 0 || grad_output->ndim != indices->ndim + 1 ||
	    vnpu_at_numel(grad_output) != n * d)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: grad_output must be indices' shape + (embedding_dim), and num_weights >= 0",
					 op);
	if (!vnpu_at_indices_in_range(op, indices, num_weights))
		return NULL;
	g = vnpu_at_contiguous(grad_output);
	idx = g ? vnpu_at_contiguous(indices) : NULL;
	out = idx ? vnpu_op_zeros((struct vnpu_at_int_array){ (int64_t[]){ num_weights, d }, 2 },
				  dt, VNPU_AT_DEV_CPU) : NULL;
	if (out && scale_grad_by_freq) {
		counts = calloc((size_t)(num_weights ? num_weights : 1), sizeof(*counts));
		if (!counts) {
			vnpu_at_error_set(VNPU_AT_ERR_OOM, "%s: out of memory", op);
			vnpu_at_release(out);
			out = NULL;
		}
	}
	xs = vnpu_at_dtype_size(indices->dtype);
	for (int64_t i = 0; counts && i < n; i++)
		counts[vnpu_at_load_int((enum vnpu_at_dtype)idx->dtype,
					(const char *)vnpu_at_data(idx) + (size_t)i * xs)]++;
	for (int64_t i = 0; out && i < n; i++) {
		int64_t row = vnpu_at_load_int((enum vnpu_at_dtype)idx->dtype,
					       (const char *)vnpu_at_data(idx) + (size_t)i * xs);
		const char *src = (const char *)vnpu_at_data(g) + (size_t)(i * d) * es;
		char *dst = (char *)vnpu_at_data(out) + (size_t)(row * d) * es;
		double scale = counts ? 1.0 / (double)counts[row] : 1.0;

		if (row == padding_idx)
			continue;
		/* each add rounded to the dtype, as PyTorch's index_add_ */
		for (int64_t k = 0; k < d; k++)
			vnpu_at_store(dt, dst + (size_t)k * es,
				      vnpu_at_load(dt, dst + (size_t)k * es) +
				      vnpu_at_load(dt, src + (size_t)k * es) * scale);
	}
	free(counts);
	vnpu_at_release(g);
	vnpu_at_release(idx);
	return out;
}

/* The elements of self where the broadcast mask is true, in row-major
 * order of the broadcast shape. */
struct vnpu_at_tensor *vnpu_cpu_masked_select(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					      struct vnpu_at_tensor *mask)
{
	static const char op[] = "aten::masked_select";
	const struct vnpu_at_tensor *in[2] = { self, mask };
	size_t es = vnpu_at_dtype_size(self->dtype);
	int64_t sizes[VNPU_AT_MAX_DIMS], count = 0;
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	char *dst;
	uint32_t nd;

	(void)ks;
	if (mask->dtype != VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: masked_select: expected BoolTensor for mask", op);
	if (!vnpu_at_broadcast_shapes(op, 2, in, &nd, sizes) ||
	    !vnpu_at_iter_init(&it, nd, sizes, 2, in))
		return NULL;
	while (vnpu_at_iter_next(&it))
		count += *it.p[1] != 0;
	out = vnpu_at_empty(1, &count, (enum vnpu_at_dtype)self->dtype, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, nd, sizes, 2, in)) {
		vnpu_at_release(out);
		return NULL;
	}
	dst = vnpu_at_data(out);
	while (vnpu_at_iter_next(&it))
		if (*it.p[1]) {
			memcpy(dst, it.p[0], es);
			dst += es;
		}
	return out;
}

/* gather: out[p] = self[p with dim d replaced by index[p]], out of index's
 * shape; every index checked before anything is written. */
struct vnpu_at_tensor *vnpu_cpu_gather(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				       int64_t dim, struct vnpu_at_tensor *index,
				       bool sparse_grad)
{
	static const char op[] = "aten::gather";
	int64_t d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	size_t es = vnpu_at_dtype_size(self->dtype);
	int64_t st[VNPU_AT_MAX_DIMS], size, sdst;
	struct vnpu_at_tensor *out, *pick;
	struct vnpu_at_iter it;

	(void)ks;
	(void)sparse_grad;
	if (d < 0)
		return NULL;
	/* an empty index is not checked further (PyTorch's gather meta) */
	if (!vnpu_at_numel(index))
		return vnpu_at_empty(index->ndim, index->sizes, (enum vnpu_at_dtype)self->dtype,
				     VNPU_AT_DEV_CPU);
	if (!vnpu_at_gather_check(op, self, d, index))
		return NULL;
	size = self->ndim ? self->sizes[d] : 1;
	sdst = self->ndim ? self->strides[d] : 0;
	if (!vnpu_at_indices_in_bounds(op, "", index, d, size))
		return NULL;
	out = vnpu_at_empty(index->ndim, index->sizes, (enum vnpu_at_dtype)self->dtype,
			    VNPU_AT_DEV_CPU);
	/* self seen with index's sizes, dim d pinned at 0: the element of p
	 * before its dim-d offset */
	memcpy(st, self->strides, sizeof(int64_t) * self->ndim);
	if (index->ndim)
		st[d] = 0;
	pick = out ? vnpu_at_view_of(self, index->ndim, index->sizes, st, self->offset) : NULL;
	if (!pick || !vnpu_at_iter_init(&it, index->ndim, index->sizes, 3,
					(const struct vnpu_at_tensor *[]){ out, index, pick })) {
		vnpu_at_release(pick);
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it)) {
		int64_t i = vnpu_at_load_int((enum vnpu_at_dtype)index->dtype, it.p[1]);

		memcpy(it.p[0], it.p[2] + i * sdst * (int64_t)es, es);
	}
	vnpu_at_release(pick);
	return out;
}

/* scatter and scatter_add: a row-major copy of self, src[p] (or the value)
 * written or added at p with dim d replaced by index[p], in index's
 * row-major order (the last write of a position stays); every index
 * checked before anything is written. src NULL: value, in self's dtype
 * (PyTorch's checked conversion). */
static struct vnpu_at_tensor *scatter_elements(vnpu_keyset_t ks, const char *op, bool add,
					       struct vnpu_at_tensor *self, int64_t dim,
					       struct vnpu_at_tensor *index,
					       struct vnpu_at_tensor *src,
					       struct vnpu_at_scalar value)
{
	int64_t d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	size_t es = vnpu_at_dtype_size(dt);
	int64_t st[VNPU_AT_MAX_DIMS], size, sdst;
	struct vnpu_at_tensor *out, *r, *put = NULL, *part = NULL, *v = NULL;
	struct vnpu_at_iter it;

	if (d < 0 || !vnpu_at_scatter_check(op, self, d, index, src))
		return NULL;
	size = self->ndim ? self->sizes[d] : 1;
	if (vnpu_at_numel(index) && !vnpu_at_indices_in_bounds(op, "", index, d, size))
		return NULL;
	if (!src) {
		/* the value as one element of self's dtype, read at stride 0 */
		v = vnpu_at_scalar_tensor(value, dt, VNPU_AT_DEV_CPU);
		if (!v)
			return NULL;
	}
	out = vnpu_at_empty(self->ndim, self->sizes, dt, VNPU_AT_DEV_CPU);
	r = out ? vnpu_cpu_copy_(ks, out, self, false) : NULL;
	vnpu_at_release(r);
	if (!r || !vnpu_at_numel(index)) {
		vnpu_at_release(v);
		if (!r)
			vnpu_at_release(out);
		return r ? out : NULL;
	}
	sdst = self->ndim ? out->strides[d] : 0;
	memcpy(st, out->strides, sizeof(int64_t) * out->ndim);
	if (index->ndim)
		st[d] = 0;
	put = vnpu_at_view_of(out, index->ndim, index->sizes, st, 0);
	if (put)
		part = src ? vnpu_at_view_of(src, index->ndim, index->sizes, src->strides,
					     src->offset) :
			     vnpu_at_view_of(v, index->ndim, index->sizes,
					     (int64_t[VNPU_AT_MAX_DIMS]){ 0 }, v->offset);
	vnpu_at_release(v);
	if (!part || !vnpu_at_iter_init(&it, index->ndim, index->sizes, 3,
					(const struct vnpu_at_tensor *[]){ put, index, part })) {
		vnpu_at_release(part);
		vnpu_at_release(put);
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it)) {
		int64_t i = vnpu_at_load_int((enum vnpu_at_dtype)index->dtype, it.p[1]);
		char *dst = it.p[0] + i * sdst * (int64_t)es;

		if (!add)
			memcpy(dst, it.p[2], es);
		else if (vnpu_at_dtype_is_float(dt))
			vnpu_at_store(dt, dst, vnpu_at_load(dt, dst) + vnpu_at_load(dt, it.p[2]));
		else if (dt == VNPU_AT_BOOL)
			vnpu_at_store_int(dt, dst, vnpu_at_load_int(dt, dst) |
						   vnpu_at_load_int(dt, it.p[2]));
		else
			vnpu_at_store_int(dt, dst, (int64_t)((uint64_t)vnpu_at_load_int(dt, dst) +
							     (uint64_t)vnpu_at_load_int(dt, it.p[2])));
	}
	vnpu_at_release(part);
	vnpu_at_release(put);
	return out;
}

struct vnpu_at_tensor *vnpu_cpu_scatter_add(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, struct vnpu_at_tensor *index,
					    struct vnpu_at_tensor *src)
{
	return scatter_elements(ks, "aten::scatter_add", true, self, dim, index, src,
				VNPU_AT_INT(0));
}

struct vnpu_at_tensor *vnpu_cpu_scatter_src(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, struct vnpu_at_tensor *index,
					    struct vnpu_at_tensor *src)
{
	return scatter_elements(ks, "aten::scatter.src", false, self, dim, index, src,
				VNPU_AT_INT(0));
}

struct vnpu_at_tensor *vnpu_cpu_scatter_value(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					      int64_t dim, struct vnpu_at_tensor *index,
					      struct vnpu_at_scalar value)
{
	return scatter_elements(ks, "aten::scatter.value", false, self, dim, index, NULL, value);
}

/* masked_fill: self where the mask is false, the value (checked and
 * converted to self's dtype, as Scalar::to) where it is true, in a
 * row-major result of the broadcast shape (PyTorch clones, then fills). */
struct vnpu_at_tensor *vnpu_cpu_masked_fill_Scalar(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *self,
						   struct vnpu_at_tensor *mask,
						   struct vnpu_at_scalar value)
{
	static const char op[] = "aten::masked_fill";
	const struct vnpu_at_tensor *in[2] = { self, mask };
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	size_t es = vnpu_at_dtype_size(dt);
	int64_t sizes[VNPU_AT_MAX_DIMS];
	unsigned char fill[8];
	struct vnpu_at_tensor *out;
	struct vnpu_at_iter it;
	uint32_t nd;

	(void)ks;
	if (mask->dtype != VNPU_AT_BOOL)
		return vnpu_at_error_set(VNPU_AT_ERR_VALUE,
					 "%s: masked_fill_ only supports boolean masks, but got mask with dtype %s",
					 op, vnpu_at_dtype_name(mask->dtype));
	if (!vnpu_at_broadcast_shapes(op, 2, in, &nd, sizes) ||
	    !vnpu_at_scalar_fits(value, dt))
		return NULL;
	if (vnpu_at_dtype_is_float(dt))
		vnpu_at_store(dt, fill, vnpu_at_scalar_to_double(value));
	else
		vnpu_at_store_int(dt, fill, vnpu_at_scalar_to_int_as(value, dt));
	out = vnpu_at_empty(nd, sizes, dt, VNPU_AT_DEV_CPU);
	if (!out || !vnpu_at_iter_init(&it, nd, sizes, 3,
			(const struct vnpu_at_tensor *[]){ out, self, mask })) {
		vnpu_at_release(out);
		return NULL;
	}
	while (vnpu_at_iter_next(&it))
		memcpy(it.p[0], *it.p[2] ? (const void *)fill : it.p[1], es);
	return out;
}

/* index_add_ (copy false) and index_copy_: self[.., index[i], ..] gets
 * source[.., i, ..] (added, times alpha), walking source row-major so
 * that each element of self sees its rows in index order. */
static struct vnpu_at_tensor *scatter_rows(const char *op, bool copy, struct vnpu_at_tensor *self,
					   int64_t dim, struct vnpu_at_tensor *index,
					   struct vnpu_at_tensor *source,
					   struct vnpu_at_scalar alpha)
{
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	size_t es = vnpu_at_dtype_size(dt);
	struct vnpu_at_tensor *dst = NULL, *src = NULL, *idx = NULL;
	struct vnpu_at_iter it;
	int64_t d;
	bool ok;

	if (!vnpu_at_index_scatter_check(op, copy, self, dim, index, source, alpha, &d))
		return NULL;
	if (!vnpu_at_numel(source))
		return vnpu_at_retain(self);
	dst = vnpu_at_as_vector(self);
	src = dst ? vnpu_at_as_vector(source) : NULL;
	idx = src ? vnpu_at_retain(index) : NULL;
	ok = idx && vnpu_at_iter_init(&it, src->ndim, src->sizes, 1,
				      (const struct vnpu_at_tensor *[]){ src });
	while (ok && vnpu_at_iter_next(&it)) {
		int64_t row = kc_load_index(idx, it.idx[d]), off = 0;
		char *o;

		for (uint32_t k = 0; k < dst->ndim; k++)
			off += ((int64_t)k == d ? row : it.idx[k]) * dst->strides[k];
		o = (char *)vnpu_at_data(dst) + off * (int64_t)es;
		if (copy)
			memcpy(o, it.p[0], es);
		else if (kc_is_int(dt))
			vnpu_at_store_int(dt, o, (int64_t)((uint64_t)vnpu_at_load_int(dt, o) +
							   (uint64_t)vnpu_at_scalar_to_int(alpha) *
							   (uint64_t)vnpu_at_load_int(dt, it.p[0])));
		else
			vnpu_at_store(dt, o, kc_round(dt, vnpu_at_load(dt, o) +
							      kc_round(dt, vnpu_at_scalar_to_double(alpha) *
									   vnpu_at_load(dt, it.p[0]))));
	}
	vnpu_at_release(dst);
	vnpu_at_release(src);
	vnpu_at_release(idx);
	return ok ? vnpu_at_retain(self) : NULL;
}

struct vnpu_at_tensor *vnpu_cpu_index_add_(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   int64_t dim, struct vnpu_at_tensor *index,
					   struct vnpu_at_tensor *source, struct vnpu_at_scalar alpha)
{
	(void)ks;
	return scatter_rows("aten::index_add_", false, self, dim, index, source, alpha);
}

struct vnpu_at_tensor *vnpu_cpu_index_copy_(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, struct vnpu_at_tensor *index,
					    struct vnpu_at_tensor *source)
{
	(void)ks;
	return scatter_rows("aten::index_copy_", true, self, dim, index, source,
			    VNPU_AT_INT(1));
}
