// SPDX-License-Identifier: MIT
/* Autograd kernels (the Autograd alias key): each runs its op below
 * autograd and records a node whose backward computes input gradients
 * with other ops (so backward runs on the npu too). Inputs are saved,
 * never outputs (no reference cycles). */
#include "autograd.h"
#include "vnpu_ops_kernels.h"

static struct vnpu_at_tensor *sum_to_input(struct vnpu_at_tensor *g, const struct vnpu_ag_node *n,
					   uint32_t i)
{
	return vnpu_ag_sum_to(g, (uint32_t)n->ints[i * VNPU_AT_MAX_DIMS + VNPU_AT_MAX_DIMS - 1],
			      &n->ints[i * VNPU_AT_MAX_DIMS]);
}

/* Remembers input i's shape in ints (sizes, ndim in the last slot). */
static void save_shape(struct vnpu_ag_node *n, uint32_t i, const struct vnpu_at_tensor *t)
{
	int64_t *s = &n->ints[i * VNPU_AT_MAX_DIMS];

	for (uint32_t d = 0; d < t->ndim && d < VNPU_AT_MAX_DIMS - 1; d++)
		s[d] = t->sizes[d];
	s[VNPU_AT_MAX_DIMS - 1] = t->ndim;
}

static struct vnpu_at_tensor *record(struct vnpu_at_tensor *out, const char *name,
				     vnpu_ag_backward_fn fn, uint32_t n,
				     struct vnpu_at_tensor *const *in, bool save_inputs,
				     double d0)
{
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(n, in))
		return out;
	node = vnpu_ag_node_new(name, fn, n, in, 1);
	if (!node) {
		vnpu_at_release(out);
		return NULL;
	}
	for (uint32_t i = 0; i < n && i < 2; i++) {
		save_shape(node, i, in[i]);
		if (save_inputs)
			vnpu_ag_save(node, i, in[i]);
	}
	node->d[0] = d0;
	if (!vnpu_ag_set_output(out, node, 0)) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_ag_node_release(node);
	return out;
}

/* add / sub: grad, alpha * grad (reduced to each input's shape) */
static bool add_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *scaled;

	in[0] = sum_to_input(g[0], n, 0);
	scaled = vnpu_op_mul_Scalar(g[0], VNPU_AT_DOUBLE(n->d[0]));
	in[1] = scaled ? sum_to_input(scaled, n, 1) : NULL;
	vnpu_at_release(scaled);
	return in[0] && in[1];
}

struct vnpu_at_tensor *vnpu_autograd_add_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						struct vnpu_at_tensor *other,
						struct vnpu_at_scalar alpha)
{
	return record(vnpu_redispatch_add_Tensor(vnpu_ag_below(ks), self, other, alpha),
		      "AddBackward0", add_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, false,
		      vnpu_at_scalar_to_double(alpha));
}

struct vnpu_at_tensor *vnpu_autograd_sub_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						struct vnpu_at_tensor *other,
						struct vnpu_at_scalar alpha)
{
	return record(vnpu_redispatch_sub_Tensor(vnpu_ag_below(ks), self, other, alpha),
		      "SubBackward0", add_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, false,
		      -vnpu_at_scalar_to_double(alpha));
}

static bool mul_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *ga = vnpu_op_mul_Tensor(g[0], n->saved[1]);
	struct vnpu_at_tensor *gb = vnpu_op_mul_Tensor(g[0], n->saved[0]);

	in[0] = ga ? sum_to_input(ga, n, 0) : NULL;
	in[1] = gb ? sum_to_input(gb, n, 1) : NULL;
	vnpu_at_release(ga);
	vnpu_at_release(gb);
	return in[0] && in[1];
}

struct vnpu_at_tensor *vnpu_autograd_mul_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						struct vnpu_at_tensor *other)
{
	return record(vnpu_redispatch_mul_Tensor(vnpu_ag_below(ks), self, other),
		      "MulBackward0", mul_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, true, 0);
}

static bool mm_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *bt = vnpu_op_t(n->saved[1]), *at = vnpu_op_t(n->saved[0]);

	in[0] = bt ? vnpu_op_mm(g[0], bt) : NULL;
	in[1] = at ? vnpu_op_mm(at, g[0]) : NULL;
	vnpu_at_release(bt);
	vnpu_at_release(at);
	return in[0] && in[1];
}

struct vnpu_at_tensor *vnpu_autograd_mm(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					struct vnpu_at_tensor *mat2)
{
	return record(vnpu_redispatch_mm(vnpu_ag_below(ks), self, mat2), "MmBackward0",
		      mm_backward, 2, (struct vnpu_at_tensor *[]){ self, mat2 }, true, 0);
}

static bool relu_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	/* grad * (x > 0), from the saved input */
	struct vnpu_at_tensor *r = vnpu_op_relu(n->saved[0]), *zero, *mask, *mf;

	zero = r ? vnpu_op_zeros_like(r, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE) : NULL;
	mask = zero ? vnpu_op_gt_Tensor(r, zero) : NULL;
	mf = mask ? vnpu_op__to_copy(mask, (enum vnpu_at_dtype)g[0]->dtype,
				     VNPU_AT_DEV_NONE, false) : NULL;
	in[0] = mf ? vnpu_op_mul_Tensor(g[0], mf) : NULL;
	vnpu_at_release(r);
	vnpu_at_release(zero);
	vnpu_at_release(mask);
	vnpu_at_release(mf);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_relu(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return record(vnpu_redispatch_relu(vnpu_ag_below(ks), self), "ReluBackward0",
		      relu_backward, 1, (struct vnpu_at_tensor *[]){ self }, true, 0);
}

/* sum / mean: grad expanded to the input's shape (divided by numel) */
static bool sum_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct vnpu_at_int_array shape = { n->ints, n->ints[VNPU_AT_MAX_DIMS - 1] };
	struct vnpu_at_tensor *e = vnpu_op_expand(g[0], shape, false), *c;

	c = e ? vnpu_op_contiguous(e) : NULL;
	vnpu_at_release(e);
	if (c && n->d[0] != 1.0) {
		in[0] = vnpu_op_mul_Scalar(c, VNPU_AT_DOUBLE(n->d[0]));
		vnpu_at_release(c);
	} else {
		in[0] = c;
	}
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_sum(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					 enum vnpu_at_dtype dtype)
{
	return record(vnpu_redispatch_sum(vnpu_ag_below(ks), self, dtype), "SumBackward0",
		      sum_backward, 1, (struct vnpu_at_tensor *[]){ self }, false, 1.0);
}

struct vnpu_at_tensor *vnpu_autograd_mean(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  enum vnpu_at_dtype dtype)
{
	int64_t n = vnpu_at_numel(self);

	return record(vnpu_redispatch_mean(vnpu_ag_below(ks), self, dtype), "MeanBackward0",
		      sum_backward, 1, (struct vnpu_at_tensor *[]){ self }, false,
		      n ? 1.0 / (double)n : 0.0);
}

/* view / expand: grad reshaped (summed) back to the input's shape */
static bool view_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	struct vnpu_at_int_array shape = { n->ints, n->ints[VNPU_AT_MAX_DIMS - 1] };

	in[0] = vnpu_op_reshape(g[0], shape);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_view(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  struct vnpu_at_int_array size)
{
	return record(vnpu_redispatch_view(vnpu_ag_below(ks), self, size), "ViewBackward0",
		      view_backward, 1, (struct vnpu_at_tensor *[]){ self }, false, 0);
}

static bool expand_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			    struct vnpu_at_tensor **in)
{
	in[0] = sum_to_input(g[0], n, 0);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_expand(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    struct vnpu_at_int_array size, bool implicit)
{
	return record(vnpu_redispatch_expand(vnpu_ag_below(ks), self, size, implicit),
		      "ExpandBackward0", expand_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, false, 0);
}

static bool transpose_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			       struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_transpose_int(g[0], (int64_t)n->d[0], (int64_t)n->d[1]);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_transpose_int(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						   int64_t dim0, int64_t dim1)
{
	struct vnpu_at_tensor *out = record(
		vnpu_redispatch_transpose_int(vnpu_ag_below(ks), self, dim0, dim1),
		"TransposeBackward0", transpose_backward, 1,
		(struct vnpu_at_tensor *[]){ self }, false, (double)dim0);

	if (out && out->autograd && out->autograd->grad_fn)
		out->autograd->grad_fn->d[1] = (double)dim1;
	return out;
}
