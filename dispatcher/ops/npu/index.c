/* SPDX-License-Identifier: MIT */
/*
 * NPU kernels (PrivateUse1) on INDEX: index_select and embedding gather
 * rows, embedding_dense_backward adds them back in index order. The
 * indices are read back and checked before the launch: PyTorch's CPU
 * raises IndexError before it writes (CUDA asserts on the device
 * instead), so these ops wait for the index's stream. What the device
 * cannot take (float64, an index on another device, scale_grad_by_freq)
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
		return vnpu_fallback_index_select(ks, self, dim, index);
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
		return vnpu_fallback_embedding(ks, weight, indices, padding_idx,
					       scale_grad_by_freq, sparse);
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
		return vnpu_fallback_embedding_dense_backward(ks, grad_output, indices,
							      num_weights, padding_idx,
							      scale_grad_by_freq);
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
