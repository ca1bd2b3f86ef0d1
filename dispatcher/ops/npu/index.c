/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1) on INDEX: index_select and embedding gather
 * rows, embedding_dense_backward adds them back in index order,
 * masked_select lists the mask's true positions on the device and
 * gathers them (one 8-byte read-back: the count, as CUDA's),
 * masked_fill is a WHERE of the mask. The
 * indices are read back and checked before the launch: PyTorch's CPU
 * raises IndexError before it writes (CUDA asserts on the device
 * instead), so these ops wait for the index's stream. What the device
 * cannot take (an index on another device, scale_grad_by_freq)
 * and invalid arguments go to the CPU kernel, which words the error.
 */
#include "npu_ops_common.h"

static bool index_dtype(const struct vnpu_at_tensor *index)
{
	return index->dtype == VNPU_AT_I64 || index->dtype == VNPU_AT_I32;
}

/* out[.., i, ..] = self[.., index[i], ..] along dim d of self; index a
 * checked 1-d view. */
static struct vnpu_at_tensor *gather(const char *name, struct vnpu_at_tensor *self,
				     uint32_t d, struct vnpu_at_tensor *index)
{
	struct vnpu_kp_index p = { .op = VNPU_INDEX_SELECT, .dim = d, .skip = -1 };
	struct vnpu_npu_launch l = { 0 };
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *src, *idx = NULL, *out = NULL;

	memcpy(sizes, self->sizes, sizeof(int64_t) * self->ndim);
	sizes[d] = index->sizes[0];
	src = vnpu_npu_plain(self);
	idx = src ? vnpu_npu_plain(index) : NULL;
	out = idx ? vnpu_npu_empty(self->ndim, sizes, (enum vnpu_at_dtype)self->dtype) : NULL;
	if (out && vnpu_at_numel(out) &&
	    (!vnpu_npu_arg(&l, src, VNPU_ACCESS_READ, &p.src) ||
	     !vnpu_npu_arg(&l, idx, VNPU_ACCESS_READ, &p.index) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch(name, &l, "index", &p, sizeof(p), vnpu_at_numel(out)))) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_at_release(src);
	vnpu_at_release(idx);
	return out;
}

/* index as a 1-d tensor (a view, or a copy when it has no 1-d view). */
static struct vnpu_at_tensor *flat(struct vnpu_at_tensor *index)
{
	return vnpu_op_reshape(index, VNPU_AT_INTS(-1));
}

struct vnpu_at_tensor *vnpu_npu_index_select(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					     int64_t dim, struct vnpu_at_tensor *index)
{
	static const char name[] = "aten::index_select";
	struct vnpu_at_tensor *idx, *out = NULL;
	int64_t d;

	if (index->ndim > 1 || !index_dtype(index) || !self->ndim || !vnpu_at_is_npu(index) ||
	    !vnpu_at_is_npu(self) ||
	    vnpu_npu_dtype((enum vnpu_at_dtype)self->dtype) < 0)
		return vnpu_npu_unsupported();
	d = vnpu_at_wrap_dim(dim, self->ndim);
	if (d < 0 || !vnpu_at_indices_in_range(name, index, self->sizes[d]))
		return NULL;
	idx = flat(index);
	if (idx)
		out = gather(name, self, (uint32_t)d, idx);
	vnpu_at_release(idx);
	return out;
}

struct vnpu_at_tensor *vnpu_npu_embedding(vnpu_keyset_t ks, struct vnpu_at_tensor *weight,
					  struct vnpu_at_tensor *indices, int64_t padding_idx,
					  bool scale_grad_by_freq, bool sparse)
{
	static const char name[] = "aten::embedding";
	int64_t shape[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *idx, *rows = NULL, *out = NULL;

	if (weight->ndim != 2 || !index_dtype(indices) || !vnpu_at_is_npu(indices) ||
	    !vnpu_at_is_npu(weight) ||
	    indices->ndim + 1 > VNPU_AT_MAX_DIMS ||
	    vnpu_npu_dtype((enum vnpu_at_dtype)weight->dtype) < 0)
		return vnpu_npu_unsupported();
	if (!vnpu_at_indices_in_range(name, indices, weight->sizes[0]))
		return NULL;
	idx = flat(indices);
	rows = idx ? gather(name, weight, 0, idx) : NULL;
	memcpy(shape, indices->sizes, sizeof(int64_t) * indices->ndim);
	shape[indices->ndim] = weight->sizes[1];
	if (rows)
		out = vnpu_op_view(rows, (struct vnpu_at_int_array){ shape, indices->ndim + 1 });
	vnpu_at_release(idx);
	vnpu_at_release(rows);
	return out;
}

struct vnpu_at_tensor *vnpu_npu_embedding_dense_backward(vnpu_keyset_t ks,
	struct vnpu_at_tensor *grad_output, struct vnpu_at_tensor *indices,
	int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq)
{
	static const char name[] = "aten::embedding_dense_backward";
	struct vnpu_kp_index p = { .op = VNPU_INDEX_ADD, .alpha = 1.0, .skip = padding_idx };
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)grad_output->dtype;
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *g = NULL, *idx = NULL, *out = NULL;
	int64_t n = vnpu_at_numel(indices);
	int64_t d = grad_output->ndim ? grad_output->sizes[grad_output->ndim - 1] : 1;

	if (scale_grad_by_freq || !npk_float(dt) || !index_dtype(indices) ||
	    !vnpu_at_is_npu(indices) || !vnpu_at_is_npu(grad_output) || num_weights < 0 ||
	    grad_output->ndim != indices->ndim + 1 || vnpu_at_numel(grad_output) != n * d)
		return vnpu_npu_unsupported();
	if (!vnpu_at_indices_in_range(name, indices, num_weights))
		return NULL;
	g = vnpu_op_reshape(grad_output, VNPU_AT_INTS(n, d));
	idx = g ? flat(indices) : NULL;
	out = idx ? vnpu_op_zeros((struct vnpu_at_int_array){ (int64_t[]){ num_weights, d }, 2 },
				  dt, vnpu_npu_device()) : NULL;
	if (out && n && d && num_weights &&
	    (!vnpu_npu_arg(&l, g, VNPU_ACCESS_READ, &p.src) ||
	     !vnpu_npu_arg(&l, idx, VNPU_ACCESS_READ, &p.index) ||
	     !vnpu_npu_arg(&l, out, VNPU_ACCESS_READ | VNPU_ACCESS_WRITE, &p.out) ||
	     !vnpu_npu_launch(name, &l, "index", &p, sizeof(p), num_weights * d))) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_at_release(g);
	vnpu_at_release(idx);
	return out;
}

/* self broadcast to sizes as a dense 1-d device tensor. */
static struct vnpu_at_tensor *dense_flat(struct vnpu_at_tensor *self, uint32_t nd,
					 const int64_t *sizes)
{
	struct vnpu_at_tensor *e = vnpu_op_expand(self, (struct vnpu_at_int_array){ sizes, nd },
						  false);
	struct vnpu_at_tensor *c = e ? vnpu_op_contiguous(e) : NULL;
	struct vnpu_at_tensor *f = c ? vnpu_op_reshape(c, VNPU_AT_INTS(-1)) : NULL;

	vnpu_at_release(e);
	vnpu_at_release(c);
	return f;
}

/* out[0] = how many entries of the 1-d mask are true, out[1..] where. */
static struct vnpu_at_tensor *true_positions(const char *name, struct vnpu_at_tensor *mask)
{
	struct vnpu_kp_index p = { .op = VNPU_INDEX_NONZERO, .skip = -1 };
	struct vnpu_npu_launch l = { 0 };
	int64_t n = mask->sizes[0] + 1;
	struct vnpu_at_tensor *out = vnpu_npu_empty(1, &n, VNPU_AT_I64);

	if (out && (!vnpu_npu_arg(&l, mask, VNPU_ACCESS_READ, &p.src) ||
		    !vnpu_npu_arg(&l, out, VNPU_ACCESS_WRITE, &p.out) ||
		    !vnpu_npu_launch(name, &l, "index", &p, sizeof(p), 1))) {
		vnpu_at_release(out);
		out = NULL;
	}
	return out;
}

struct vnpu_at_tensor *vnpu_npu_masked_select(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					      struct vnpu_at_tensor *mask)
{
	static const char name[] = "aten::masked_select";
	const struct vnpu_at_tensor *in[2] = { self, mask };
	int64_t sizes[VNPU_AT_MAX_DIMS], count;
	struct vnpu_at_tensor *src = NULL, *m = NULL, *pos = NULL, *head, *idx, *out = NULL;
	struct vnpu_at_scalar c;
	uint32_t nd;

	if (mask->dtype != VNPU_AT_BOOL || !vnpu_at_is_npu(self) || !vnpu_at_is_npu(mask) ||
	    vnpu_npu_dtype((enum vnpu_at_dtype)self->dtype) < 0 ||
	    !vnpu_at_broadcast_shapes(name, 2, in, &nd, sizes))
		return vnpu_npu_unsupported();
	src = dense_flat(self, nd, sizes);
	m = src ? dense_flat(mask, nd, sizes) : NULL;
	pos = m ? true_positions(name, m) : NULL;
	head = pos ? vnpu_op_select_int(pos, 0, 0) : NULL;
	c = head ? vnpu_op__local_scalar_dense(head) : VNPU_AT_SCALAR_NONEV;
	vnpu_at_release(head);
	if (c.kind == VNPU_AT_SCALAR_INT) {
		count = c.i;
		idx = vnpu_op_slice_Tensor(pos, 0, VNPU_AT_SOME_INT(1),
					   VNPU_AT_SOME_INT(1 + count), 1);
		if (idx && count)
			out = gather(name, src, 0, idx);
		else if (idx)
			out = vnpu_npu_empty(1, &count, (enum vnpu_at_dtype)self->dtype);
		vnpu_at_release(idx);
	}
	vnpu_at_release(src);
	vnpu_at_release(m);
	vnpu_at_release(pos);
	return out;
}

/* gather: one INDEX SELECT of the row-major self at the positions index
 * picks (op_util's vnpu_at_gather_positions, computed on the device; the
 * index read back and checked first). What PyTorch refuses, a 0-dim
 * self and an int32 index (PyTorch 2.6 refuses it, 2.13 takes it) go to
 * the CPU kernel. */
struct vnpu_at_tensor *vnpu_npu_gather(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
				       int64_t dim, struct vnpu_at_tensor *index,
				       bool sparse_grad)
{
	static const char name[] = "aten::gather";
	int64_t d = self->ndim ? vnpu_at_wrap_dim(dim, self->ndim) : -1;
	int64_t n = -1;
	struct vnpu_at_tensor *pos = NULL, *flat_pos = NULL, *src = NULL, *flat = NULL;
	struct vnpu_at_tensor *g = NULL, *out = NULL;

	/* an empty index is not checked further (PyTorch's gather meta) */
	if (d >= 0 && !vnpu_at_numel(index) && vnpu_at_is_npu(self) &&
	    vnpu_npu_dtype((enum vnpu_at_dtype)self->dtype) >= 0)
		return vnpu_npu_empty(index->ndim, index->sizes, (enum vnpu_at_dtype)self->dtype);
	if (d < 0 || index->dtype != VNPU_AT_I64 || !vnpu_at_is_npu(self) ||
	    !vnpu_at_is_npu(index) || vnpu_npu_dtype((enum vnpu_at_dtype)self->dtype) < 0 ||
	    index->ndim != self->ndim || !vnpu_at_gather_check(name, self, d, index) ||
	    !vnpu_at_indices_in_range(name, index, self->sizes[d])) {
		vnpu_at_error_clear();
		return vnpu_npu_unsupported();
	}
	pos = vnpu_at_gather_positions(self->ndim, self->sizes, (uint32_t)d, index);
	flat_pos = pos ? vnpu_op_reshape(pos, (struct vnpu_at_int_array){ &n, 1 }) : NULL;
	src = flat_pos ? vnpu_op_contiguous(self) : NULL;
	flat = src ? vnpu_op_view(src, (struct vnpu_at_int_array){ &n, 1 }) : NULL;
	g = flat ? gather(name, flat, 0, flat_pos) : NULL;
	out = g ? vnpu_op_view(g, (struct vnpu_at_int_array){ index->sizes, index->ndim }) : NULL;
	vnpu_at_release(g);
	vnpu_at_release(flat);
	vnpu_at_release(src);
	vnpu_at_release(flat_pos);
	vnpu_at_release(pos);
	return out;
}

/* scatter and scatter_add: a row-major copy of self, then one INDEX ADD
 * (repeated positions add in index order) or INDEX COPY (the last write of
 * a position stays, as PyTorch's CPU loop) of src, or of the value spread
 * to index's shape (src NULL), at the row-major positions of
 * vnpu_at_gather_positions. What PyTorch refuses, an int32 index and a
 * value self's dtype cannot hold are unsupported here: the CPU kernel
 * judges them. A 0-dim self is one of size [1] (index and src 0-dim or
 * 1-D), as PyTorch's scatter takes it. */
static struct vnpu_at_tensor *npu_scatter(const char *name, bool add,
					  struct vnpu_at_tensor *self, int64_t dim,
					  struct vnpu_at_tensor *index,
					  struct vnpu_at_tensor *src,
					  struct vnpu_at_scalar value);

static struct vnpu_at_tensor *npu_scatter_0dim(const char *name, bool add,
					       struct vnpu_at_tensor *self, int64_t dim,
					       struct vnpu_at_tensor *index,
					       struct vnpu_at_tensor *src,
					       struct vnpu_at_scalar value)
{
	int64_t one = 1, ni = vnpu_at_numel(index);
	struct vnpu_at_tensor *s1, *i1 = NULL, *v1 = NULL, *r1 = NULL, *r = NULL;

	if (vnpu_at_wrap_dim(dim, 1) < 0 || index->ndim > 1 || (src && src->ndim > 1))
		return vnpu_npu_unsupported();
	s1 = vnpu_op_reshape(self, (struct vnpu_at_int_array){ &one, 1 });
	i1 = s1 ? vnpu_op_reshape(index, (struct vnpu_at_int_array){ &ni, 1 }) : NULL;
	if (i1 && src && !src->ndim)
		v1 = vnpu_op_reshape(src, (struct vnpu_at_int_array){ &one, 1 });
	else if (i1 && src)
		v1 = vnpu_at_retain(src);
	if (i1 && (!src || v1))
		r1 = npu_scatter(name, add, s1, 0, i1, v1, value);
	if (r1)
		r = vnpu_op_reshape(r1, VNPU_AT_NO_INTS);
	vnpu_at_release(r1);
	vnpu_at_release(v1);
	vnpu_at_release(i1);
	vnpu_at_release(s1);
	return r;
}

static struct vnpu_at_tensor *npu_scatter(const char *name, bool add,
					  struct vnpu_at_tensor *self, int64_t dim,
					  struct vnpu_at_tensor *index,
					  struct vnpu_at_tensor *src,
					  struct vnpu_at_scalar value)
{
	int64_t d;
	int64_t n = -1;
	struct vnpu_at_tensor *out, *pos = NULL, *fpos = NULL, *part = NULL, *fpart = NULL;
	struct vnpu_at_tensor *fout = NULL, *r = NULL;
	bool empty = !vnpu_at_numel(index);

	if (!self->ndim)
		return npu_scatter_0dim(name, add, self, dim, index, src, value);
	d = vnpu_at_wrap_dim(dim, self->ndim);
	if (d < 0 || !vnpu_at_is_npu(self) || !vnpu_at_is_npu(index) ||
	    (src && !vnpu_at_is_npu(src)) ||
	    vnpu_npu_dtype((enum vnpu_at_dtype)self->dtype) < 0 ||
	    !vnpu_at_scatter_check(name, self, d, index, src) ||
	    (!empty && (index->dtype != VNPU_AT_I64 || index->ndim != self->ndim ||
			!vnpu_at_indices_in_range(name, index, self->sizes[d]))))
		return vnpu_npu_unsupported();
	if (!src && !empty) {
		/* PyTorch converts the value checked, as fill_ */
		part = vnpu_op_full((struct vnpu_at_int_array){ index->sizes, index->ndim },
				    value, (enum vnpu_at_dtype)self->dtype, vnpu_npu_device());
		if (!part)
			return vnpu_npu_unsupported();
	}
	out = vnpu_npu_empty(self->ndim, self->sizes, (enum vnpu_at_dtype)self->dtype);
	if (!out || !vnpu_npu_copy(name, out, self)) {
		vnpu_at_release(part);
		vnpu_at_release(out);
		return NULL;
	}
	if (empty)
		return out;
	pos = vnpu_at_gather_positions(self->ndim, self->sizes, (uint32_t)d, index);
	fpos = pos ? vnpu_op_reshape(pos, (struct vnpu_at_int_array){ &n, 1 }) : NULL;
	if (src)
		part = fpos ? vnpu_at_view_of(src, index->ndim, index->sizes, src->strides,
					      src->offset) : NULL;
	fpart = part && fpos ? vnpu_op_reshape(part, (struct vnpu_at_int_array){ &n, 1 }) : NULL;
	fout = fpart ? vnpu_op_view(out, (struct vnpu_at_int_array){ &n, 1 }) : NULL;
	if (fout)
		r = add ? vnpu_op_index_add_(fout, 0, fpos, fpart, VNPU_AT_INT(1)) :
			  vnpu_op_index_copy_(fout, 0, fpos, fpart);
	vnpu_at_release(r);
	vnpu_at_release(fout);
	vnpu_at_release(fpart);
	vnpu_at_release(part);
	vnpu_at_release(fpos);
	vnpu_at_release(pos);
	if (!r) {
		vnpu_at_release(out);
		return NULL;
	}
	return out;
}

struct vnpu_at_tensor *vnpu_npu_scatter_add(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, struct vnpu_at_tensor *index,
					    struct vnpu_at_tensor *src)
{
	return npu_scatter("aten::scatter_add", true, self, dim, index, src,
			   VNPU_AT_INT(0));
}

struct vnpu_at_tensor *vnpu_npu_scatter_src(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, struct vnpu_at_tensor *index,
					    struct vnpu_at_tensor *src)
{
	return npu_scatter("aten::scatter.src", false, self, dim, index, src,
			   VNPU_AT_INT(0));
}

struct vnpu_at_tensor *vnpu_npu_scatter_value(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					      int64_t dim, struct vnpu_at_tensor *index,
					      struct vnpu_at_scalar value)
{
	return npu_scatter("aten::scatter.value", false, self, dim, index,
			   NULL, value);
}

/* masked_fill: WHERE of the mask, the value (converted to self's dtype
 * as PyTorch's Scalar::to does) and self, into a row-major result of the
 * broadcast shape (PyTorch clones before it fills). A mask that is not
 * bool or does not broadcast, and a value self's dtype cannot hold, go to
 * the CPU kernel, which words the error (PyTorch 2.6 and 2.13 name the
 * dtype differently). */
struct vnpu_at_tensor *vnpu_npu_masked_fill_Scalar(vnpu_keyset_t ks,
						   struct vnpu_at_tensor *self,
						   struct vnpu_at_tensor *mask,
						   struct vnpu_at_scalar value)
{
	static const char name[] = "aten::masked_fill";
	const struct vnpu_at_tensor *in[2] = { self, mask };
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)self->dtype;
	int64_t sizes[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *v, *out;
	uint32_t nd;

	if (mask->dtype != VNPU_AT_BOOL || !vnpu_at_is_npu(self) || !vnpu_at_is_npu(mask) ||
	    vnpu_npu_dtype(dt) < 0 || !vnpu_at_broadcast_shapes(name, 2, in, &nd, sizes) ||
	    !vnpu_at_scalar_fits(value, dt)) {
		vnpu_at_error_clear();
		return vnpu_npu_unsupported();
	}
	v = npk_scalar_of(value, dt);
	out = v ? npk_where_layout(name, mask, v, self, dt, true) : NULL;
	vnpu_at_release(v);
	return out;
}

/* index_add_ (copy false) and index_copy_ in place on INDEX ADD/COPY:
 * each element of self sees its rows in index order. The checks are the
 * CPU kernel's (op_util); a dtype or format the device lacks, an index
 * off the device or an alpha a double cannot hold goes to the CPU kernel. */
static struct vnpu_at_tensor *scatter_rows(const char *op, bool copy, struct vnpu_at_tensor *self,
					   int64_t dim, struct vnpu_at_tensor *index,
					   struct vnpu_at_tensor *source,
					   struct vnpu_at_scalar alpha)
{
	struct vnpu_kp_index p = { .op = copy ? VNPU_INDEX_COPY : VNPU_INDEX_ADD,
				   .alpha = vnpu_at_scalar_to_double(alpha), .skip = -1 };
	struct vnpu_npu_launch l = { 0 };
	struct vnpu_at_tensor *dst = NULL, *src = NULL, *idx = NULL;
	int64_t d;
	bool ok;

	if (!vnpu_at_index_scatter_check(op, copy, self, dim, index, source, alpha, &d))
		return NULL;
	if (!vnpu_at_numel(source))
		return vnpu_at_retain(self);
	p.dim = (uint32_t)d;
	dst = vnpu_at_as_vector(self);
	src = dst ? vnpu_npu_plain(source) : NULL;
	if (src && !src->ndim) {
		struct vnpu_at_tensor *v = vnpu_at_as_vector(src);

		vnpu_at_release(src);
		src = v;
	}
	idx = src ? flat(index) : NULL;
	ok = idx && vnpu_npu_arg(&l, src, VNPU_ACCESS_READ, &p.src) &&
	     vnpu_npu_arg(&l, idx, VNPU_ACCESS_READ, &p.index) &&
	     vnpu_npu_arg(&l, dst, copy ? VNPU_ACCESS_WRITE : VNPU_ACCESS_READ | VNPU_ACCESS_WRITE,
			  &p.out) &&
	     vnpu_npu_launch(op, &l, "index", &p, sizeof(p), vnpu_at_numel(src));
	vnpu_at_release(dst);
	vnpu_at_release(src);
	vnpu_at_release(idx);
	return ok ? vnpu_at_retain(self) : NULL;
}

/* What INDEX ADD/COPY cannot take in place on self. */
static bool scatter_on_device(const struct vnpu_at_tensor *self,
			      const struct vnpu_at_tensor *index,
			      const struct vnpu_at_tensor *source)
{
	return vnpu_at_is_npu(self) && vnpu_at_is_npu(index) && vnpu_at_is_npu(source) &&
	       index_dtype(index) && source->dtype == self->dtype &&
	       vnpu_npu_dtype((enum vnpu_at_dtype)self->dtype) >= 0 &&
	       vnpu_npu_format_of(self) == VNPU_FORMAT_ND && vnpu_npu_injective(self);
}

struct vnpu_at_tensor *vnpu_npu_index_add_(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					   int64_t dim, struct vnpu_at_tensor *index,
					   struct vnpu_at_tensor *source, struct vnpu_at_scalar alpha)
{
	if (!scatter_on_device(self, index, source) || !npk_alpha_exact(alpha))
		return vnpu_npu_unsupported();
	return scatter_rows("aten::index_add_", false, self, dim, index, source, alpha);
}

struct vnpu_at_tensor *vnpu_npu_index_copy_(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, struct vnpu_at_tensor *index,
					    struct vnpu_at_tensor *source)
{
	if (!scatter_on_device(self, index, source))
		return vnpu_npu_unsupported();
	return scatter_rows("aten::index_copy_", true, self, dim, index, source, VNPU_AT_INT(1));
}
