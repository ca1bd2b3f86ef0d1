// SPDX-License-Identifier: MIT
/*
 * Autograd kernels (the Autograd alias key): each runs its op below
 * autograd and records a node whose backward computes input gradients
 * with other ops, so backward runs on the npu too. Inputs are saved;
 * outputs only as detached aliases (no autograd meta: no reference
 * cycles). Backward formulas follow PyTorch's derivatives.yaml and call
 * the same backward ops PyTorch's autograd does where we have them
 * (convolution_backward and the pooling ones: nn_backward.c); the rest
 * are composed here (norm gradients: pointwise ops and reductions).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "op_util.h"
#include "vnpu_ops_kernels.h"

/* ---- helpers ------------------------------------------------------------ */

/* Whether input i of the node needs a gradient (has an edge). */
static bool wants(const struct vnpu_ag_node *n, uint32_t i)
{
	return n->next[i].fn || n->next[i].leaf;
}

/* Which of a node's first three inputs need a gradient. */
#define WANTS3(n) ((const bool[3]){ wants(n, 0), wants(n, 1), wants(n, 2) })

/* A second handle on t's data without autograd meta (a detached alias). */
static struct vnpu_at_tensor *detach(struct vnpu_at_tensor *t)
{
	return vnpu_at_view_of(t, t->ndim, t->sizes, t->strides, t->offset);
}

static struct vnpu_at_int_array ints_of(const int64_t *v, int64_t n)
{
	return (struct vnpu_at_int_array){ v, n };
}

static struct vnpu_at_opt_int_array dims_of(const int64_t *v, int64_t n)
{
	return (struct vnpu_at_opt_int_array){ true, { v, n } };
}

/* t * s (a new reference to t when s == 1). */
static struct vnpu_at_tensor *scale(struct vnpu_at_tensor *t, double s)
{
	if (!t)
		return NULL;
	if (s == 1.0)
		return vnpu_at_retain(t);
	return vnpu_op_mul_Scalar(t, VNPU_AT_DOUBLE(s));
}


/* Remembers input i's (0 or 1) shape. */
static void save_shape(struct vnpu_ag_node *n, uint32_t i,
		       const struct vnpu_at_tensor *t)
{
	memcpy(n->shape[i], t->sizes, sizeof(int64_t) * t->ndim);
	n->shape_ndim[i] = t->ndim;
}

static struct vnpu_at_int_array saved_shape(const struct vnpu_ag_node *n,
					    uint32_t i)
{
	return ints_of(n->shape[i], n->shape_ndim[i]);
}

static struct vnpu_at_tensor *sum_to_input(struct vnpu_at_tensor *g,
					   const struct vnpu_ag_node *n,
					   uint32_t i)
{
	struct vnpu_at_int_array s = saved_shape(n, i);

	return vnpu_ag_sum_to(g, (uint32_t)s.n, s.v);
}

/* A node for an op whose inputs are in[0..n), or NULL with the error set
 * (the caller releases out). */
static struct vnpu_ag_node *node_for(const char *name, vnpu_ag_backward_fn fn,
				     uint32_t n,
				     struct vnpu_at_tensor *const *in)
{
	struct vnpu_ag_node *node = vnpu_ag_node_new(name, fn, n, in, 1);

	if (node)
		node->device = vnpu_at_device_of(in[0]);
	return node;
}

/* Makes out the output of node and drops the caller's node reference;
 * out is released (NULL returned) on failure. */
static struct vnpu_at_tensor *track(struct vnpu_at_tensor *out,
				    struct vnpu_ag_node *node)
{
	if (!node) {
		vnpu_at_release(out);
		return NULL;
	}
	if (!vnpu_ag_set_output(out, node, 0)) {
		vnpu_at_release(out);
		out = NULL;
	}
	vnpu_ag_node_release(node);
	return out;
}

static struct vnpu_at_tensor *record(struct vnpu_at_tensor *out,
				     const char *name, vnpu_ag_backward_fn fn,
				     uint32_t n,
				     struct vnpu_at_tensor *const *in,
				     bool save_inputs, double d0)
{
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(n, in))
		return out;
	node = node_for(name, fn, n, in);
	if (node) {
		for (uint32_t i = 0; i < n && i < 2; i++) {
			save_shape(node, i, in[i]);
			if (save_inputs)
				vnpu_ag_save(node, i, in[i]);
		}
		node->d[0] = d0;
	}
	return track(out, node);
}

/* A node of a one-input op whose backward needs its output: the output
 * saved as a detached alias in slot 0, the input in slot 1. NULL when it
 * cannot be made. */
static struct vnpu_ag_node *node_with_output(const char *name, vnpu_ag_backward_fn fn,
					     struct vnpu_at_tensor *self,
					     struct vnpu_at_tensor *out)
{
	struct vnpu_ag_node *node = node_for(name, fn, 1, &self);
	struct vnpu_at_tensor *alias = node ? detach(out) : NULL;

	if (!alias) {
		vnpu_ag_node_release(node);
		return NULL;
	}
	vnpu_ag_save(node, 0, alias);
	vnpu_ag_save(node, 1, self);
	vnpu_at_release(alias);
	return node;
}

/* Records a one-input op whose backward needs its output (slot 0) and
 * input (slot 1); d0 is the formula's constant. */
static struct vnpu_at_tensor *record_with_output(struct vnpu_at_tensor *out,
						 const char *name,
						 vnpu_ag_backward_fn fn,
						 struct vnpu_at_tensor *self,
						 double d0)
{
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_with_output(name, fn, self, out);
	if (node) {
		save_shape(node, 1, self);
		node->dtype = self->dtype;
		node->d[0] = d0;
	}
	return track(out, node);
}

/* Temporaries of a backward formula, released together. */
/* enough for a formula with a reduction over 8 dims put back twice */
#define TEMPS_MAX 48

struct temps {
	struct vnpu_at_tensor *v[TEMPS_MAX];
	uint32_t n;
};

/* Keeps x among the temporaries; NULL (an op failed) stays NULL. */
static struct vnpu_at_tensor *keep(struct temps *t, struct vnpu_at_tensor *x)
{
	assert(!x || t->n < TEMPS_MAX);
	if (x && t->n < TEMPS_MAX)
		t->v[t->n++] = x;
	return x;
}

static void temps_free(struct temps *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		vnpu_at_release(t->v[i]);
	t->n = 0;
}

/* x in float32 when it is float16/bfloat16 (a formula of several ops
 * rounds once, at the end, as PyTorch's fused backward kernels), else
 * x itself; NULL passes through. */
static struct vnpu_at_tensor *wide(struct temps *t, struct vnpu_at_tensor *x)
{
	if (!x)
		return NULL;
	if (x->dtype != VNPU_AT_F16 && x->dtype != VNPU_AT_BF16)
		return x;
	return keep(t, vnpu_op__to_copy(x, VNPU_AT_F32, VNPU_AT_DEV_NONE, false));
}

/* A bool mask as 0/1 of dtype. */
static struct vnpu_at_tensor *mask_as(struct temps *t, struct vnpu_at_tensor *m,
				      enum vnpu_at_dtype dtype)
{
	return m ? keep(t, vnpu_op__to_copy(m, dtype, VNPU_AT_DEV_NONE, false)) : NULL;
}

/* A 0-dim tensor of v, of x's dtype and device. */
static struct vnpu_at_tensor *scalar_of(struct temps *t, const struct vnpu_at_tensor *x,
					double v)
{
	return keep(t, vnpu_at_scalar_tensor(VNPU_AT_DOUBLE(v),
					     (enum vnpu_at_dtype)x->dtype,
					     vnpu_at_device_of(x)));
}


/* ---- factories of an input's shape ----------------------------------------- */

/* empty_like, zeros_like, ones_like: a new tensor that only takes the
 * input's shape, so never tracked (PyTorch's output_differentiability:
 * False), where the generic autograd would record a node that cannot
 * run backward. */
struct vnpu_at_tensor *vnpu_autograd_empty_like(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return vnpu_redispatch_empty_like(vnpu_ag_below(ks), self, dtype, device);
}

struct vnpu_at_tensor *vnpu_autograd_zeros_like(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return vnpu_redispatch_zeros_like(vnpu_ag_below(ks), self, dtype, device);
}

struct vnpu_at_tensor *vnpu_autograd_ones_like(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					       enum vnpu_at_dtype dtype, struct vnpu_at_device device)
{
	return vnpu_redispatch_ones_like(vnpu_ag_below(ks), self, dtype, device);
}

/* ---- pointwise ------------------------------------------------------------ */

/* add / sub: grad, alpha * grad (reduced to each input's shape) */
static bool add_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *scaled;

	if (wants(n, 0) && !(in[0] = sum_to_input(g[0], n, 0)))
		return false;
	if (!wants(n, 1))
		return true;
	scaled = scale(g[0], n->d[0]);
	in[1] = scaled ? sum_to_input(scaled, n, 1) : NULL;
	vnpu_at_release(scaled);
	return in[1] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_add_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *other, struct vnpu_at_scalar alpha)
{
	return record(vnpu_redispatch_add_Tensor(vnpu_ag_below(ks), self,
						 other, alpha),
		      "AddBackward0", add_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, false,
		      vnpu_at_scalar_to_double(alpha));
}

struct vnpu_at_tensor *vnpu_autograd_sub_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *other, struct vnpu_at_scalar alpha)
{
	return record(vnpu_redispatch_sub_Tensor(vnpu_ag_below(ks), self,
						 other, alpha),
		      "SubBackward0", add_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, false,
		      -vnpu_at_scalar_to_double(alpha));
}

/* lerp(self, end, w): grad * (1 - w) to self, grad * w to end (PyTorch's
 * derivatives.yaml), each reduced to its input's shape; d[0] is w */
static bool lerp_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	for (uint32_t i = 0; i < 2; i++) {
		struct vnpu_at_tensor *scaled;

		if (!wants(n, i))
			continue;
		scaled = scale(g[0], i ? n->d[0] : 1.0 - n->d[0]);
		in[i] = scaled ? sum_to_input(scaled, n, i) : NULL;
		vnpu_at_release(scaled);
		if (!in[i])
			return false;
	}
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_lerp_Scalar(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *end, struct vnpu_at_scalar weight)
{
	return record(vnpu_redispatch_lerp_Scalar(vnpu_ag_below(ks), self, end,
						  weight),
		      "LerpBackward0", lerp_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, end }, false,
		      vnpu_at_scalar_to_double(weight));
}

static bool mul_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	for (uint32_t i = 0; i < 2; i++) {
		struct vnpu_at_tensor *p;

		if (!wants(n, i))
			continue;
		p = vnpu_op_mul_Tensor(g[0], n->saved[1 - i]);
		in[i] = p ? sum_to_input(p, n, i) : NULL;
		vnpu_at_release(p);
		if (!in[i])
			return false;
	}
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_mul_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *other)
{
	return record(vnpu_redispatch_mul_Tensor(vnpu_ag_below(ks), self,
						 other),
		      "MulBackward0", mul_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, true, 0);
}

/* a / b: grad / b, -grad * ((a / b) / b) (PyTorch's order: b^2 would
 * overflow sooner), in f32 for f16/bf16 */
static bool div_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct temps t = { 0 };
	struct vnpu_at_tensor *gg = wide(&t, g[0]), *a = wide(&t, n->saved[0]);
	struct vnpu_at_tensor *b = wide(&t, n->saved[1]), *ga = NULL, *q, *p;
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)g[0]->dtype;

	if (gg && a && b)
		ga = keep(&t, vnpu_op_div_Tensor(gg, b));
	/* reduced to the input's shape before the one rounding */
	if (ga && wants(n, 0))
		in[0] = vnpu_at_converted(sum_to_input(ga, n, 0), dt);
	if (ga && wants(n, 1)) {
		q = keep(&t, vnpu_op_div_Tensor(a, b));
		q = q ? keep(&t, vnpu_op_div_Tensor(q, b)) : NULL;
		p = q ? keep(&t, vnpu_op_mul_Tensor(gg, q)) : NULL;
		q = p ? keep(&t, vnpu_op_neg(p)) : NULL;
		in[1] = q ? vnpu_at_converted(sum_to_input(q, n, 1), dt) : NULL;
	}
	temps_free(&t);
	return (!wants(n, 0) || in[0]) && (!wants(n, 1) || in[1]);
}

struct vnpu_at_tensor *vnpu_autograd_div_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *other)
{
	return record(vnpu_redispatch_div_Tensor(vnpu_ag_below(ks), self,
						 other),
		      "DivBackward0", div_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, true, 0);
}

static bool neg_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_neg(g[0]);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_neg(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return record(vnpu_redispatch_neg(vnpu_ag_below(ks), self),
		      "NegBackward0", neg_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, false, 0);
}

/* sqrt: grad / (2 out) */
static bool sqrt_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *q = vnpu_op_div_Tensor(g[0], n->saved[0]);

	in[0] = scale(q, 0.5);
	vnpu_at_release(q);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_sqrt(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return record_with_output(vnpu_redispatch_sqrt(vnpu_ag_below(ks),
						       self),
				  "SqrtBackward0", sqrt_backward, self, 0);
}

/* x ^ e: grad * e * x ^ (e - 1) */
static bool pow_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	double e = n->d[0];
	struct vnpu_at_tensor *p, *q;

	if (e == 0.0) {
		in[0] = vnpu_op_zeros_like(g[0], VNPU_AT_DTYPE_NONE,
					   VNPU_AT_DEV_NONE);
		return in[0] != NULL;
	}
	p = vnpu_op_pow_Tensor_Scalar(n->saved[0], VNPU_AT_DOUBLE(e - 1.0));
	q = p ? vnpu_op_mul_Tensor(g[0], p) : NULL;
	in[0] = scale(q, e);
	vnpu_at_release(p);
	vnpu_at_release(q);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_pow_Tensor_Scalar(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_scalar exponent)
{
	return record(vnpu_redispatch_pow_Tensor_Scalar(vnpu_ag_below(ks), self,
							exponent),
		      "PowBackward0", pow_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, true,
		      vnpu_at_scalar_to_double(exponent));
}

/* relu: grad where x > 0 (threshold_backward, as PyTorch) */
static bool relu_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_threshold_backward(g[0], n->saved[0], VNPU_AT_INT(0));
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_relu(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return record(vnpu_redispatch_relu(vnpu_ag_below(ks), self),
		      "ReluBackward0", relu_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, true, 0);
}

static bool gelu_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_gelu_backward(g[0], n->saved[0],
				      n->ints[0] ? "tanh" : "none");
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_gelu(vnpu_keyset_t ks, struct vnpu_at_tensor *self, const char *approximate)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_gelu(vnpu_ag_below(ks),
							  self, approximate);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("GeluBackward0", gelu_backward, 1, &self);
	if (node) {
		vnpu_ag_save(node, 0, self);
		node->ints[0] = approximate && !strcmp(approximate, "tanh");
	}
	return track(out, node);
}

/* hardtanh: hardtanh_backward of the gradient and self; the bounds are
 * kept as given (ints[0..1] their kinds, ints[2..3] an integer's value,
 * d[0..1] a float's), so that they round to self's dtype as PyTorch's. */
static struct vnpu_at_scalar saved_scalar(const struct vnpu_ag_node *n, int k)
{
	if (n->ints[k] == VNPU_AT_SCALAR_DOUBLE)
		return VNPU_AT_DOUBLE(n->d[k]);
	if (n->ints[k] == VNPU_AT_SCALAR_BOOL)
		return VNPU_AT_BOOLV(n->ints[2 + k] != 0);
	return VNPU_AT_INT(n->ints[2 + k]);
}

static void save_scalar(struct vnpu_ag_node *n, int k, struct vnpu_at_scalar s)
{
	n->ints[k] = s.kind;
	if (s.kind == VNPU_AT_SCALAR_DOUBLE)
		n->d[k] = s.d;
	else
		n->ints[2 + k] = s.kind == VNPU_AT_SCALAR_BOOL ? s.b : s.i;
}

static bool hardtanh_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			      struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_hardtanh_backward(g[0], n->saved[0], saved_scalar(n, 0),
					  saved_scalar(n, 1));
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_hardtanh(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					      struct vnpu_at_scalar min_val,
					      struct vnpu_at_scalar max_val)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_hardtanh(vnpu_ag_below(ks), self, min_val,
							      max_val);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("HardtanhBackward0", hardtanh_backward, 1, &self);
	if (node) {
		vnpu_ag_save(node, 0, self);
		save_scalar(node, 0, min_val);
		save_scalar(node, 1, max_val);
	}
	return track(out, node);
}

/* abs: grad * sgn(x), PyTorch's sgn: 0 at 0 and at NaN */
static bool abs_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *x = n->saved[0], *zero, *sg = NULL;
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)g[0]->dtype;
	struct temps t = { 0 };

	zero = scalar_of(&t, x, 0.0);
	if (zero) {
		struct vnpu_at_tensor *pos = mask_as(&t, keep(&t, vnpu_op_gt_Tensor(x, zero)), dt);
		struct vnpu_at_tensor *neg = mask_as(&t, keep(&t, vnpu_op_lt_Tensor(x, zero)), dt);

		sg = pos && neg ? keep(&t, vnpu_op_sub_Tensor(pos, neg, VNPU_AT_INT(1))) : NULL;
	}
	in[0] = sg ? vnpu_op_mul_Tensor(g[0], sg) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_abs(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return record(vnpu_redispatch_abs(vnpu_ag_below(ks), self),
		      "AbsBackward0", abs_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, true, 0);
}

/* silu: grad * s * (1 + x (1 - s)), s = sigmoid(x), in f32 for f16/bf16 */
static bool silu_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *x, *gg, *sg, *u = NULL, *r = NULL;
	struct temps t = { 0 };

	x = wide(&t, n->saved[0]);
	gg = wide(&t, g[0]);
	sg = x ? keep(&t, vnpu_op_sigmoid(x)) : NULL;
	if (sg && gg) {
		/* 1 + x - x s */
		struct vnpu_at_tensor *xs = keep(&t, vnpu_op_mul_Tensor(x, sg));
		struct vnpu_at_tensor *d = xs ? keep(&t, vnpu_op_sub_Tensor(x, xs, VNPU_AT_INT(1))) : NULL;

		u = d ? keep(&t, vnpu_op_add_Scalar(d, VNPU_AT_INT(1), VNPU_AT_INT(1))) : NULL;
	}
	if (u) {
		struct vnpu_at_tensor *su = keep(&t, vnpu_op_mul_Tensor(sg, u));

		r = su ? keep(&t, vnpu_op_mul_Tensor(gg, su)) : NULL;
	}
	in[0] = vnpu_at_converted(r ? vnpu_at_retain(r) : NULL, (enum vnpu_at_dtype)g[0]->dtype);
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_silu(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return record(vnpu_redispatch_silu(vnpu_ag_below(ks), self),
		      "SiluBackward0", silu_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, true, 0);
}

/* rsqrt: -grad * out^3 / 2; for f16/bf16 in f32 with out recomputed
 * from the saved input (cubing the rounded output triples its error) */
static bool rsqrt_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			   struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *o = n->saved[0], *gg, *o2 = NULL, *o3 = NULL, *r = NULL;
	struct temps t = { 0 };

	if (g[0]->dtype == VNPU_AT_F16 || g[0]->dtype == VNPU_AT_BF16) {
		struct vnpu_at_tensor *x = wide(&t, n->saved[1]);

		o = x ? keep(&t, vnpu_op_rsqrt(x)) : NULL;
	}
	gg = wide(&t, g[0]);
	if (o && gg)
		o2 = keep(&t, vnpu_op_mul_Tensor(o, o));
	if (o2)
		o3 = keep(&t, vnpu_op_mul_Tensor(o2, o));
	if (o3)
		r = keep(&t, vnpu_op_mul_Tensor(gg, o3));
	in[0] = vnpu_at_converted(r ? vnpu_op_mul_Scalar(r, VNPU_AT_DOUBLE(-0.5)) : NULL,
			 (enum vnpu_at_dtype)g[0]->dtype);
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_rsqrt(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return record_with_output(vnpu_redispatch_rsqrt(vnpu_ag_below(ks), self),
				  "RsqrtBackward0", rsqrt_backward, self, 0);
}

/*
 * maximum / minimum: the gradient goes to the larger (smaller) input, half
 * to each where they are equal (PyTorch's formula; NaN compares unequal
 * and unordered, so both get it). d[0] is +1 for maximum, -1 for minimum.
 */
static bool maxmin_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			    struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *a = n->saved[0], *b = n->saved[1];
	struct vnpu_at_tensor *eq, *half, *base = NULL, *zero;
	struct temps t = { 0 };
	bool ok = true;

	eq = keep(&t, vnpu_op_eq_Tensor(a, b));
	half = keep(&t, vnpu_op_mul_Scalar(g[0], VNPU_AT_DOUBLE(0.5)));
	zero = scalar_of(&t, g[0], 0.0);
	if (eq && half && zero)
		base = keep(&t, vnpu_op_where_self(eq, half, g[0]));
	for (uint32_t i = 0; i < 2 && ok; i++) {
		struct vnpu_at_tensor *lose, *r;

		if (!wants(n, i))
			continue;
		/* maximum: a loses where a < b, b where a > b */
		lose = base ? keep(&t, (i == 0) == (n->d[0] > 0) ?
				   vnpu_op_lt_Tensor(a, b) : vnpu_op_gt_Tensor(a, b)) : NULL;
		r = lose ? keep(&t, vnpu_op_where_self(lose, zero, base)) : NULL;
		in[i] = r ? sum_to_input(r, n, i) : NULL;
		ok = in[i] != NULL;
	}
	temps_free(&t);
	return ok;
}

struct vnpu_at_tensor *vnpu_autograd_maximum(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *other)
{
	return record(vnpu_redispatch_maximum(vnpu_ag_below(ks), self, other),
		      "MaximumBackward0", maxmin_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, true, 1.0);
}

struct vnpu_at_tensor *vnpu_autograd_minimum(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *other)
{
	return record(vnpu_redispatch_minimum(vnpu_ag_below(ks), self, other),
		      "MinimumBackward0", maxmin_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, true, -1.0);
}

/* where: the gradient to self where the condition holds, to other where
 * it does not (each reduced to its input's shape); saved[0] the
 * condition (no gradient) */
static bool where_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			   struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *zero, *r;
	struct temps t = { 0 };
	bool ok = true;

	zero = scalar_of(&t, g[0], 0.0);
	for (uint32_t i = 1; i < 3 && ok; i++) {
		if (!wants(n, i))
			continue;
		r = zero ? keep(&t, i == 1 ? vnpu_op_where_self(n->saved[0], g[0], zero) :
				    vnpu_op_where_self(n->saved[0], zero, g[0])) : NULL;
		in[i] = r ? vnpu_ag_sum_to(r, n->shape_ndim[i - 1], n->shape[i - 1]) : NULL;
		ok = in[i] != NULL;
	}
	temps_free(&t);
	return ok;
}

struct vnpu_at_tensor *vnpu_autograd_where_self(vnpu_keyset_t ks, struct vnpu_at_tensor *condition, struct vnpu_at_tensor *self, struct vnpu_at_tensor *other)
{
	struct vnpu_at_tensor *in[3] = { condition, self, other };
	struct vnpu_at_tensor *out = vnpu_redispatch_where_self(vnpu_ag_below(ks), condition,
								self, other);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(3, in))
		return out;
	node = vnpu_ag_node_new("WhereBackward0", where_backward, 3, in, 1);
	if (node) {
		node->device = vnpu_at_device_of(self);
		save_shape(node, 0, self);
		save_shape(node, 1, other);
		vnpu_ag_save(node, 0, condition);
	}
	return track(out, node);
}

/* masked_fill: self's gradient is the output's with the filled places
 * zeroed, reduced to self's shape; a value tensor's (input 2) is the sum
 * over the filled places (PyTorch's masked_fill_backward). saved[0] the
 * mask. */
static bool masked_fill_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				 struct vnpu_at_tensor **in)
{
	struct temps t = { 0 };
	struct vnpu_at_tensor *zero = scalar_of(&t, g[0], 0.0), *r;
	bool ok = zero != NULL;

	if (ok && wants(n, 0)) {
		r = keep(&t, vnpu_op_where_self(n->saved[0], zero, g[0]));
		in[0] = r ? sum_to_input(r, n, 0) : NULL;
		ok = in[0] != NULL;
	}
	if (ok && n->n_in == 3 && wants(n, 2)) {
		r = keep(&t, vnpu_op_where_self(n->saved[0], g[0], zero));
		in[2] = r ? vnpu_op_sum(r, VNPU_AT_DTYPE_NONE) : NULL;
		ok = in[2] != NULL;
	}
	temps_free(&t);
	return ok;
}

static struct vnpu_at_tensor *track_masked_fill(struct vnpu_at_tensor *out,
						const char *name, uint32_t n,
						struct vnpu_at_tensor **in)
{
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(n, in))
		return out;
	node = node_for(name, masked_fill_backward, n, in);
	if (node) {
		save_shape(node, 0, in[0]);
		vnpu_ag_save(node, 0, in[1]);
	}
	return track(out, node);
}

struct vnpu_at_tensor *vnpu_autograd_masked_fill_Scalar(vnpu_keyset_t ks,
							struct vnpu_at_tensor *self,
							struct vnpu_at_tensor *mask,
							struct vnpu_at_scalar value)
{
	return track_masked_fill(vnpu_redispatch_masked_fill_Scalar(vnpu_ag_below(ks), self,
								    mask, value),
				 "MaskedFillBackward0", 2,
				 (struct vnpu_at_tensor *[]){ self, mask });
}

struct vnpu_at_tensor *vnpu_autograd_masked_fill_Tensor(vnpu_keyset_t ks,
							struct vnpu_at_tensor *self,
							struct vnpu_at_tensor *mask,
							struct vnpu_at_tensor *value)
{
	return track_masked_fill(vnpu_redispatch_masked_fill_Tensor(vnpu_ag_below(ks), self,
								    mask, value),
				 "MaskedFillBackward1", 3,
				 (struct vnpu_at_tensor *[]){ self, mask, value });
}

/* gather: the output's gradient added into zeros of self's shape at the
 * positions gather read (index_add_ of the flattened gradient, which sums
 * repeated positions as PyTorch's scatter_add). saved[0] the index;
 * ints[0] dim; shape 0 self's. */
static bool gather_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			    struct vnpu_at_tensor **in)
{
	struct vnpu_at_int_array shape = saved_shape(n, 0);
	int64_t total = vnpu_at_numel(g[0]) ? -1 : 0, numel = 1;
	struct temps t = { 0 };
	struct vnpu_at_tensor *zeros, *pos, *fp, *fg, *r;

	for (int64_t k = 0; k < shape.n; k++)
		numel *= shape.v[k];
	zeros = keep(&t, vnpu_op_zeros(VNPU_AT_INTS(numel), (enum vnpu_at_dtype)g[0]->dtype,
				       n->device));
	pos = zeros ? keep(&t, vnpu_at_gather_positions((uint32_t)shape.n, shape.v,
							(uint32_t)n->ints[0], n->saved[0])) : NULL;
	fp = pos ? keep(&t, vnpu_op_reshape(pos, ints_of(&total, 1))) : NULL;
	fg = fp ? keep(&t, vnpu_op_reshape(g[0], ints_of(&total, 1))) : NULL;
	r = fg ? keep(&t, vnpu_op_index_add_(zeros, 0, fp, fg, VNPU_AT_INT(1))) : NULL;
	in[0] = r ? vnpu_op_view(zeros, shape) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_gather(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, struct vnpu_at_tensor *index,
					    bool sparse_grad)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_gather(vnpu_ag_below(ks), self, dim, index,
							    sparse_grad);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("GatherBackward0", gather_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		vnpu_ag_save(node, 0, index);
		node->ints[0] = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	}
	return track(out, node);
}

/* src's gradient of scatter and scatter_add: the output's gathered at the
 * positions written, in src's shape (zero beyond index's part). saved[0]
 * the index; ints[0] dim; shape 1 src's. */
static struct vnpu_at_tensor *scattered_src_grad(struct vnpu_ag_node *n,
						 struct vnpu_at_tensor *g)
{
	struct vnpu_at_int_array ss = saved_shape(n, 1);
	struct vnpu_at_tensor *idx = n->saved[0], *gat, *z, *part, *r;
	bool same = ss.n == idx->ndim && !memcmp(ss.v, idx->sizes, sizeof(int64_t) * ss.n);

	gat = vnpu_op_gather(g, n->ints[0], idx, false);
	if (!gat || same)
		return gat;
	z = vnpu_op_zeros(ss, (enum vnpu_at_dtype)g->dtype, n->device);
	part = z ? vnpu_at_view_of(z, idx->ndim, idx->sizes, z->strides, z->offset) : NULL;
	r = part ? vnpu_op_copy_(part, gat, false) : NULL;
	vnpu_at_release(r);
	vnpu_at_release(part);
	vnpu_at_release(gat);
	if (!r) {
		vnpu_at_release(z);
		return NULL;
	}
	return z;
}

/* scatter_add: self's gradient is the output's, src's gathered. */
static bool scatter_add_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				 struct vnpu_at_tensor **in)
{
	if (wants(n, 0) && !(in[0] = vnpu_at_retain(g[0])))
		return false;
	return !wants(n, 2) || (in[2] = scattered_src_grad(n, g[0])) != NULL;
}

/* scatter: self's gradient is the output's with the written positions
 * zeroed (PyTorch's grad.scatter(dim, index, 0)), src's (input 2, none
 * for the value form) gathered. */
static bool scatter_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			     struct vnpu_at_tensor **in)
{
	if (wants(n, 0) &&
	    !(in[0] = vnpu_op_scatter_value(g[0], n->ints[0], n->saved[0], VNPU_AT_INT(0))))
		return false;
	return n->n_in < 3 || !wants(n, 2) || (in[2] = scattered_src_grad(n, g[0])) != NULL;
}

static struct vnpu_at_tensor *record_scatter(struct vnpu_at_tensor *out, const char *name,
					     vnpu_ag_backward_fn fn, struct vnpu_at_tensor *self,
					     int64_t dim, struct vnpu_at_tensor *index,
					     struct vnpu_at_tensor *src)
{
	struct vnpu_at_tensor *in[3] = { self, index, src };
	uint32_t nin = src ? 3 : 2;
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(nin, in))
		return out;
	node = node_for(name, fn, nin, in);
	if (node) {
		if (src)
			save_shape(node, 1, src);
		vnpu_ag_save(node, 0, index);
		node->ints[0] = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	}
	return track(out, node);
}

struct vnpu_at_tensor *vnpu_autograd_scatter_add(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						 int64_t dim, struct vnpu_at_tensor *index,
						 struct vnpu_at_tensor *src)
{
	return record_scatter(vnpu_redispatch_scatter_add(vnpu_ag_below(ks), self, dim, index, src),
			      "ScatterAddBackward0", scatter_add_backward, self, dim, index, src);
}

struct vnpu_at_tensor *vnpu_autograd_scatter_src(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						 int64_t dim, struct vnpu_at_tensor *index,
						 struct vnpu_at_tensor *src)
{
	return record_scatter(vnpu_redispatch_scatter_src(vnpu_ag_below(ks), self, dim, index, src),
			      "ScatterBackward0", scatter_backward, self, dim, index, src);
}

struct vnpu_at_tensor *vnpu_autograd_scatter_value(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						   int64_t dim, struct vnpu_at_tensor *index,
						   struct vnpu_at_scalar value)
{
	return record_scatter(vnpu_redispatch_scatter_value(vnpu_ag_below(ks), self, dim, index,
							    value),
			      "ScatterBackward1", scatter_backward, self, dim, index, NULL);
}

/* triu/tril: the output's gradient cut to the same triangle; ints[0] the
 * diagonal, ints[1] 1 for triu. */
static bool triangle_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			      struct vnpu_at_tensor **in)
{
	in[0] = n->ints[1] ? vnpu_op_triu(g[0], n->ints[0]) : vnpu_op_tril(g[0], n->ints[0]);
	return in[0] != NULL;
}

static struct vnpu_at_tensor *track_triangle(struct vnpu_at_tensor *out, const char *name,
					     struct vnpu_at_tensor *self, int64_t diagonal,
					     bool upper)
{
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for(name, triangle_backward, 1, &self);
	if (node) {
		node->ints[0] = diagonal;
		node->ints[1] = upper;
	}
	return track(out, node);
}

struct vnpu_at_tensor *vnpu_autograd_triu(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  int64_t diagonal)
{
	return track_triangle(vnpu_redispatch_triu(vnpu_ag_below(ks), self, diagonal),
			      "TriuBackward0", self, diagonal, true);
}

struct vnpu_at_tensor *vnpu_autograd_tril(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  int64_t diagonal)
{
	return track_triangle(vnpu_redispatch_tril(vnpu_ag_below(ks), self, diagonal),
			      "TrilBackward0", self, diagonal, false);
}

/* ---- reductions ------------------------------------------------------------ */

/* sum / mean: grad with the reduced dims put back (ints[8] is their mask,
 * ints[9] keepdim), expanded to the input's shape, times d[0] (1 or
 * 1 / count) */
static bool sum_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct vnpu_at_int_array shape = saved_shape(n, 0);
	struct vnpu_at_tensor *cur = vnpu_at_retain(g[0]), *e, *c;

	for (int64_t d = 0; d < shape.n && cur && !n->ints[9]; d++) {
		struct vnpu_at_tensor *u;

		if (!(n->ints[8] >> d & 1))
			continue;
		u = vnpu_op_unsqueeze(cur, d);
		vnpu_at_release(cur);
		cur = u;
	}
	e = cur ? vnpu_op_expand(cur, shape, false) : NULL;
	c = e ? vnpu_op_contiguous(e) : NULL;
	in[0] = vnpu_at_converted(scale(c, n->d[0]), (enum vnpu_at_dtype)n->dtype);
	vnpu_at_release(cur);
	vnpu_at_release(e);
	vnpu_at_release(c);
	return in[0] != NULL;
}

/* The mask of the dims a reduction over `dim` (None or empty: all) covers;
 * 0 with the error set for a bad dim. */
static bool reduced_dims(const struct vnpu_at_tensor *self,
			 struct vnpu_at_opt_int_array dim, uint64_t *mask)
{
	*mask = 0;
	if (!dim.has || !dim.a.n) {
		*mask = self->ndim ? (1ull << self->ndim) - 1 : 0;
		return true;
	}
	for (int64_t i = 0; i < dim.a.n; i++) {
		int64_t d = vnpu_at_wrap_dim(dim.a.v[i], self->ndim ? self->ndim
								    : 1);

		if (d < 0)
			return false;
		if (self->ndim)
			*mask |= 1ull << d;
	}
	return true;
}

static struct vnpu_at_tensor *record_reduce(struct vnpu_at_tensor *out,
					    const char *name,
					    struct vnpu_at_tensor *self,
					    struct vnpu_at_opt_int_array dim,
					    bool keepdim, bool mean)
{
	struct vnpu_ag_node *node;
	uint64_t mask;
	int64_t count = 1;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	if (!reduced_dims(self, dim, &mask)) {
		vnpu_at_release(out);
		return NULL;
	}
	node = node_for(name, sum_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		for (uint32_t d = 0; d < self->ndim; d++)
			if (mask >> d & 1)
				count *= self->sizes[d];
		node->ints[8] = (int64_t)mask;
		node->ints[9] = keepdim;
		node->d[0] = mean ? (count ? 1.0 / (double)count : 0.0) : 1.0;
		node->dtype = self->dtype;
	}
	return track(out, node);
}

static const struct vnpu_at_opt_int_array all_dims = { false, { NULL, 0 } };

struct vnpu_at_tensor *vnpu_autograd_sum(vnpu_keyset_t ks, struct vnpu_at_tensor *self, enum vnpu_at_dtype dtype)
{
	return record_reduce(vnpu_redispatch_sum(vnpu_ag_below(ks), self,
						 dtype),
			     "SumBackward0", self, all_dims, false, false);
}

struct vnpu_at_tensor *vnpu_autograd_sum_dim_IntList(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_opt_int_array dim, bool keepdim, enum vnpu_at_dtype dtype)
{
	return record_reduce(vnpu_redispatch_sum_dim_IntList(vnpu_ag_below(ks),
							     self, dim, keepdim,
							     dtype),
			     "SumBackward1", self, dim, keepdim, false);
}

struct vnpu_at_tensor *vnpu_autograd_mean(vnpu_keyset_t ks, struct vnpu_at_tensor *self, enum vnpu_at_dtype dtype)
{
	return record_reduce(vnpu_redispatch_mean(vnpu_ag_below(ks), self,
						  dtype),
			     "MeanBackward0", self, all_dims, false, true);
}

struct vnpu_at_tensor *vnpu_autograd_mean_dim(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_opt_int_array dim, bool keepdim, enum vnpu_at_dtype dtype)
{
	return record_reduce(vnpu_redispatch_mean_dim(vnpu_ag_below(ks), self,
						      dim, keepdim, dtype),
			     "MeanBackward1", self, dim, keepdim, true);
}

/* g with the dims of mask (ints[8]) put back as size 1, unless keepdim
 * (ints[9]): the shape that broadcasts against the input. */
static struct vnpu_at_tensor *restore_dims(struct temps *t, const struct vnpu_ag_node *n,
					   struct vnpu_at_tensor *g)
{
	struct vnpu_at_tensor *cur = g;

	for (int64_t d = 0; d < n->shape_ndim[0] && cur && !n->ints[9]; d++)
		if (n->ints[8] >> d & 1)
			cur = keep(t, vnpu_op_unsqueeze(cur, d));
	return cur;
}

/*
 * amax / amin: the gradient shared evenly by the elements equal to the
 * result (PyTorch's scale_grad_by_count). saved[0] the output (detached),
 * saved[1] the input; ints[8] the reduced dims' mask, ints[9] keepdim.
 */
static bool amax_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *gr, *or, *m = NULL, *cnt = NULL, *q = NULL;
	int64_t dims[VNPU_AT_MAX_DIMS], nd = 0;
	struct temps t = { 0 };

	for (int64_t d = 0; d < n->shape_ndim[0]; d++)
		if (n->ints[8] >> d & 1)
			dims[nd++] = d;
	gr = restore_dims(&t, n, g[0]);
	or = restore_dims(&t, n, n->saved[0]);
	if (gr && or)
		m = mask_as(&t, keep(&t, vnpu_op_eq_Tensor(or, n->saved[1])),
			    (enum vnpu_at_dtype)g[0]->dtype);
	if (m)
		cnt = nd ? keep(&t, vnpu_op_sum_dim_IntList(m, dims_of(dims, nd), true,
							     VNPU_AT_DTYPE_NONE)) : m;
	if (cnt)
		q = keep(&t, vnpu_op_div_Tensor(gr, cnt));
	in[0] = q ? vnpu_op_mul_Tensor(q, m) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

static struct vnpu_at_tensor *record_amax(struct vnpu_at_tensor *out, const char *name,
					  struct vnpu_at_tensor *self,
					  struct vnpu_at_int_array dim, bool keepdim)
{
	struct vnpu_ag_node *node;
	uint64_t mask;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	out = record_with_output(out, name, amax_backward, self, 0);
	if (!out)
		return NULL;
	node = out->autograd->grad_fn;
	if (!reduced_dims(self, (struct vnpu_at_opt_int_array){ true, dim }, &mask)) {
		vnpu_at_release(out);
		return NULL;
	}
	save_shape(node, 0, self);
	node->ints[8] = (int64_t)mask;
	node->ints[9] = keepdim;
	return out;
}

struct vnpu_at_tensor *vnpu_autograd_amax(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_int_array dim, bool keepdim)
{
	return record_amax(vnpu_redispatch_amax(vnpu_ag_below(ks), self, dim, keepdim),
			   "AmaxBackward0", self, dim, keepdim);
}

struct vnpu_at_tensor *vnpu_autograd_amin(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_int_array dim, bool keepdim)
{
	return record_amax(vnpu_redispatch_amin(vnpu_ag_below(ks), self, dim, keepdim),
			   "AminBackward0", self, dim, keepdim);
}

/* sgn(x) of a real x as 0/1/-1 in dtype (NaN: 0, as PyTorch's sgn). */
static struct vnpu_at_tensor *sgn_of(struct temps *t, struct vnpu_at_tensor *x)
{
	struct vnpu_at_tensor *zero = scalar_of(t, x, 0.0), *pos, *neg;

	pos = zero ? mask_as(t, keep(t, vnpu_op_gt_Tensor(x, zero)),
			     (enum vnpu_at_dtype)x->dtype) : NULL;
	neg = pos ? mask_as(t, keep(t, vnpu_op_lt_Tensor(x, zero)),
			    (enum vnpu_at_dtype)x->dtype) : NULL;
	return neg ? keep(t, vnpu_op_sub_Tensor(pos, neg, VNPU_AT_INT(1))) : NULL;
}

/* v with 0 where r == 0 (PyTorch's masked_fill_(norm == 0, 0)). */
static struct vnpu_at_tensor *zero_where_zero(struct temps *t,
					      struct vnpu_at_tensor *v,
					      struct vnpu_at_tensor *r)
{
	struct vnpu_at_tensor *zero = v ? scalar_of(t, v, 0.0) : NULL;
	struct vnpu_at_tensor *rz = zero ? scalar_of(t, r, 0.0) : NULL;
	struct vnpu_at_tensor *m = rz ? keep(t, vnpu_op_eq_Tensor(r, rz)) : NULL;

	return m ? keep(t, vnpu_op_where_self(m, zero, v)) : NULL;
}

/*
 * linalg_vector_norm: PyTorch's norm_backward, op for op in the dtypes it
 * computes in (a float16 r^(p-1) overflows there as in PyTorch), with g
 * and the norm r put back to the input's rank:
 *   p = 0: no gradient; p = 1: sgn(x) g; p = 2: g (x / r, 0 where r = 0);
 *   p = +-inf: sgn(x) (g / count * mask), mask = (|x| == r or NaN), count
 *   its sum over the reduced dims;
 *   p < 1: (sgn(x) (|x|^(p-1), 0 where x = 0)) g r^(1-p);
 *   p < 2: sgn(x) |x|^(p-1) (g / r^(p-1), 0 where r = 0);
 *   else: x |x|^(p-2) (g / r^(p-1), 0 where r = 0).
 * saved[0] r (detached), saved[1] x; d[0] p; ints[8] the reduced dims'
 * mask, ints[9] keepdim.
 */
static bool vector_norm_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				 struct vnpu_at_tensor **in)
{
	double p = n->d[0];
	int64_t dims[VNPU_AT_MAX_DIMS], nd = 0;
	struct vnpu_at_tensor *x = n->saved[1], *r, *gr, *sg = NULL, *v = NULL;
	struct vnpu_at_tensor *a, *q;
	struct temps t = { 0 };

	if (p == 0.0)
		return true;	/* in[0] stays NULL: no gradient */
	for (int64_t d = 0; d < n->shape_ndim[0]; d++)
		if (n->ints[8] >> d & 1)
			dims[nd++] = d;
	gr = restore_dims(&t, n, g[0]);
	r = restore_dims(&t, n, n->saved[0]);
	if (gr && r && (p == 1.0 || isinf(p) || (p != 2.0 && p < 2.0)))
		sg = sgn_of(&t, x);
	if (!gr || !r || ((p == 1.0 || isinf(p) || p < 2.0) && p != 2.0 && !sg)) {
		temps_free(&t);
		return false;
	}
	if (p == 1.0) {
		v = keep(&t, vnpu_op_mul_Tensor(sg, gr));
	} else if (p == 2.0) {
		q = keep(&t, vnpu_op_div_Tensor(x, r));
		q = q ? zero_where_zero(&t, q, r) : NULL;
		v = q ? keep(&t, vnpu_op_mul_Tensor(gr, q)) : NULL;
	} else if (isinf(p)) {
		struct vnpu_at_tensor *ab = keep(&t, vnpu_op_abs(x)), *m, *nan, *cnt;

		m = ab ? keep(&t, vnpu_op_eq_Tensor(ab, r)) : NULL;
		nan = m ? keep(&t, vnpu_op_ne_Tensor(ab, ab)) : NULL;
		m = nan ? mask_as(&t, keep(&t, vnpu_op_maximum(m, nan)),
				  (enum vnpu_at_dtype)gr->dtype) : NULL;
		cnt = m ? (nd ? keep(&t, vnpu_op_sum_dim_IntList(m, dims_of(dims, nd), true,
								 VNPU_AT_DTYPE_NONE)) : m) : NULL;
		q = cnt ? keep(&t, vnpu_op_div_Tensor(gr, cnt)) : NULL;
		q = q ? keep(&t, vnpu_op_mul_Tensor(q, m)) : NULL;
		v = q ? keep(&t, vnpu_op_mul_Tensor(sg, q)) : NULL;
	} else {
		a = keep(&t, vnpu_op_abs(x));
		a = a ? keep(&t, vnpu_op_pow_Tensor_Scalar(
				 a, VNPU_AT_DOUBLE(p < 2.0 ? p - 1.0 : p - 2.0))) : NULL;
		if (a && p < 1.0)
			a = zero_where_zero(&t, a, x);
		a = a ? keep(&t, vnpu_op_mul_Tensor(p < 2.0 ? sg : x, a)) : NULL;
		if (a && p < 1.0) {
			q = keep(&t, vnpu_op_mul_Tensor(a, gr));
			r = q ? keep(&t, vnpu_op_pow_Tensor_Scalar(r, VNPU_AT_DOUBLE(1.0 - p))) : NULL;
			v = r ? keep(&t, vnpu_op_mul_Tensor(q, r)) : NULL;
		} else if (a) {
			q = keep(&t, vnpu_op_pow_Tensor_Scalar(r, VNPU_AT_DOUBLE(p - 1.0)));
			q = q ? keep(&t, vnpu_op_div_Tensor(gr, q)) : NULL;
			q = q ? zero_where_zero(&t, q, r) : NULL;
			v = q ? keep(&t, vnpu_op_mul_Tensor(a, q)) : NULL;
		}
	}
	in[0] = v ? vnpu_at_converted(vnpu_at_retain(v), (enum vnpu_at_dtype)n->dtype) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_linalg_vector_norm(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_scalar ord, struct vnpu_at_opt_int_array dim, bool keepdim, enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_linalg_vector_norm(
		vnpu_ag_below(ks), self, ord, dim, keepdim, dtype);
	struct vnpu_ag_node *node;
	uint64_t mask;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	out = record_with_output(out, "LinalgVectorNormBackward0",
				 vector_norm_backward, self, 0);
	if (!out)
		return NULL;
	node = out->autograd->grad_fn;
	if (!reduced_dims(self, dim, &mask)) {
		vnpu_at_release(out);
		return NULL;
	}
	save_shape(node, 0, self);
	node->ints[8] = (int64_t)mask;
	node->ints[9] = keepdim;
	node->d[0] = vnpu_at_scalar_to_double(ord);
	return out;
}

/*
 * max.dim: the gradient goes to the element each index names (a one-hot
 * of the indices along dim). saved[0] the indices; ints[8] the dim's
 * mask, ints[9] keepdim.
 */
static bool max_dim_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			     struct vnpu_at_tensor **in)
{
	struct vnpu_at_int_array shape = saved_shape(n, 0);
	int64_t dim = 0, ar_shape[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *gr, *ir, *ar = NULL, *arv = NULL, *oh = NULL;
	struct temps t = { 0 };

	if (!shape.n) {		/* 0-dim: the gradient itself */
		in[0] = vnpu_op_clone(g[0]);
		return in[0] != NULL;
	}
	while (!(n->ints[8] >> dim & 1))
		dim++;
	for (int64_t d = 0; d < shape.n; d++)
		ar_shape[d] = d == dim ? shape.v[d] : 1;
	gr = restore_dims(&t, n, g[0]);
	ir = restore_dims(&t, n, n->saved[0]);
	if (gr && ir)
		ar = keep(&t, vnpu_op_arange_start_step(VNPU_AT_INT(0), VNPU_AT_INT(shape.v[dim]),
							VNPU_AT_INT(1), VNPU_AT_I64, n->device));
	if (ar)
		arv = keep(&t, vnpu_op_view(ar, ints_of(ar_shape, shape.n)));
	if (arv)
		oh = mask_as(&t, keep(&t, vnpu_op_eq_Tensor(ir, arv)),
			     (enum vnpu_at_dtype)g[0]->dtype);
	in[0] = oh ? vnpu_op_mul_Tensor(oh, gr) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_ret_max_dim vnpu_autograd_max_dim(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim, bool keepdim)
{
	struct vnpu_ret_max_dim r = vnpu_redispatch_max_dim(vnpu_ag_below(ks), self, dim,
							    keepdim);
	struct vnpu_ag_node *node;

	if (!r.r0 || !vnpu_ag_needed(1, &self))
		return r;
	node = node_for("MaxBackward0", max_dim_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		vnpu_ag_save(node, 0, r.r1);
		node->ints[8] = self->ndim ? 1ll << vnpu_at_wrap_dim(dim, self->ndim) : 0;
		node->ints[9] = keepdim;
	}
	r.r0 = track(r.r0, node);
	if (!r.r0) {
		vnpu_at_release(r.r1);
		r.r1 = NULL;
	}
	return r;
}

/* sort, topk: the values' gradient put back where each value came from
 * (zero elsewhere, for topk), PyTorch's value_selecting_reduction_backward
 * with the dim kept. saved[0] the indices, ints[0] the dim. */
static bool selected_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			      struct vnpu_at_tensor **in)
{
	struct vnpu_at_int_array shape = saved_shape(n, 0);
	struct vnpu_at_tensor *z;

	if (!shape.n) {		/* 0-dim: the gradient itself */
		in[0] = vnpu_op_clone(g[0]);
		return in[0] != NULL;
	}
	z = vnpu_op_zeros(shape, (enum vnpu_at_dtype)g[0]->dtype, n->device);
	in[0] = z ? vnpu_op_scatter_src(z, n->ints[0], n->saved[0], g[0]) : NULL;
	vnpu_at_release(z);
	return in[0] != NULL;
}

/* Records values (r0) of a selection whose indices are r1; on failure both
 * are released. */
static void track_selected(const char *name, struct vnpu_at_tensor **values,
			   struct vnpu_at_tensor **indices, struct vnpu_at_tensor *self,
			   int64_t dim)
{
	struct vnpu_ag_node *node;

	if (!*values || !vnpu_ag_needed(1, &self))
		return;
	node = node_for(name, selected_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		vnpu_ag_save(node, 0, *indices);
		node->ints[0] = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	}
	*values = track(*values, node);
	if (!*values) {
		vnpu_at_release(*indices);
		*indices = NULL;
	}
}

struct vnpu_ret_sort_stable vnpu_autograd_sort_stable(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						      int64_t dim, bool descending)
{
	struct vnpu_ret_sort_stable r = vnpu_redispatch_sort_stable(vnpu_ag_below(ks), self, dim,
								    descending);

	track_selected("SortBackward0", &r.r0, &r.r1, self, dim);
	return r;
}

struct vnpu_ret_topk vnpu_autograd_topk(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					int64_t k, int64_t dim, bool largest, bool sorted)
{
	struct vnpu_ret_topk r = vnpu_redispatch_topk(vnpu_ag_below(ks), self, k, dim, largest,
						      sorted);

	track_selected("TopkBackward0", &r.r0, &r.r1, self, dim);
	return r;
}

/* ---- views and copies -------------------------------------------------------- */

/* view / unsqueeze / squeeze: grad reshaped back to the input's shape */
static bool view_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_reshape(g[0], saved_shape(n, 0));
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_view(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_int_array size)
{
	return record(vnpu_redispatch_view(vnpu_ag_below(ks), self, size),
		      "ViewBackward0", view_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, false, 0);
}

struct vnpu_at_tensor *vnpu_autograd_unsqueeze(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim)
{
	return record(vnpu_redispatch_unsqueeze(vnpu_ag_below(ks), self, dim),
		      "UnsqueezeBackward0", view_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, false, 0);
}

struct vnpu_at_tensor *vnpu_autograd_squeeze_dim(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim)
{
	return record(vnpu_redispatch_squeeze_dim(vnpu_ag_below(ks), self, dim),
		      "SqueezeBackward1", view_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, false, 0);
}

static bool expand_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			    struct vnpu_at_tensor **in)
{
	in[0] = sum_to_input(g[0], n, 0);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_expand(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_int_array size, bool implicit)
{
	return record(vnpu_redispatch_expand(vnpu_ag_below(ks), self, size,
					     implicit),
		      "ExpandBackward0", expand_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, false, 0);
}

static bool transpose_backward(struct vnpu_ag_node *n,
			       struct vnpu_at_tensor **g,
			       struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_transpose_int(g[0], n->ints[8], n->ints[9]);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_transpose_int(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim0, int64_t dim1)
{
	struct vnpu_at_tensor *out = record(
		vnpu_redispatch_transpose_int(vnpu_ag_below(ks), self, dim0,
					      dim1),
		"TransposeBackward0", transpose_backward, 1,
		(struct vnpu_at_tensor *[]){ self }, false, 0);

	if (out && out->autograd && out->autograd->grad_fn &&
	    out->autograd->grad_fn->backward == transpose_backward) {
		out->autograd->grad_fn->ints[8] = dim0;
		out->autograd->grad_fn->ints[9] = dim1;
	}
	return out;
}

/* permute: grad permuted by the inverse permutation (ints[8..]) */
static bool permute_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			     struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_permute(g[0], ints_of(&n->ints[8], g[0]->ndim));
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_permute(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_int_array dims)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_permute(vnpu_ag_below(ks),
							     self, dims);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("PermuteBackward0", permute_backward, 1, &self);
	/* the forward validated dims: a permutation of self's dims */
	for (int64_t i = 0; node && i < dims.n; i++)
		node->ints[8 + vnpu_at_wrap_dim(dims.v[i], self->ndim)] = i;
	return track(out, node);
}

/* slice / select: grad written into zeros of the input's shape */
static bool slice_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			   struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *z, *v = NULL, *c = NULL;
	const int64_t *a = &n->ints[8];

	z = vnpu_op_zeros(saved_shape(n, 0), g[0]->dtype, n->device);
	if (z && a[0] == 0)
		v = vnpu_op_slice_Tensor(z, a[1],
					 (struct vnpu_at_opt_int){ a[2], a[3] },
					 (struct vnpu_at_opt_int){ a[4], a[5] },
					 a[6]);
	else if (z)
		v = vnpu_op_select_int(z, a[1], a[2]);
	c = v ? vnpu_op_copy_(v, g[0], false) : NULL;
	vnpu_at_release(v);
	if (!c) {
		vnpu_at_release(z);
		return false;
	}
	vnpu_at_release(c);
	in[0] = z;
	return true;
}

static struct vnpu_at_tensor *record_slice(struct vnpu_at_tensor *out,
					   const char *name,
					   struct vnpu_at_tensor *self,
					   const int64_t args[7])
{
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for(name, slice_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		memcpy(&node->ints[8], args, 7 * sizeof(int64_t));
	}
	return track(out, node);
}

struct vnpu_at_tensor *vnpu_autograd_slice_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim, struct vnpu_at_opt_int start, struct vnpu_at_opt_int end, int64_t step)
{
	return record_slice(vnpu_redispatch_slice_Tensor(vnpu_ag_below(ks),
							 self, dim, start, end,
							 step),
			    "SliceBackward0", self,
			    (const int64_t[7]){ 0, dim, start.has, start.v,
						end.has, end.v, step });
}

struct vnpu_at_tensor *vnpu_autograd_select_int(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim, int64_t index)
{
	return record_slice(vnpu_redispatch_select_int(vnpu_ag_below(ks), self,
						       dim, index),
			    "SelectBackward0", self,
			    (const int64_t[7]){ 1, dim, index, 0, 0, 0, 0 });
}

static bool clone_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			   struct vnpu_at_tensor **in)
{
	in[0] = vnpu_at_retain(g[0]);
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_clone(vnpu_keyset_t ks, struct vnpu_at_tensor *self)
{
	return record(vnpu_redispatch_clone(vnpu_ag_below(ks), self),
		      "CloneBackward0", clone_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, false, 0);
}

/* _to_copy: grad copied back to the input's dtype and device */
static bool to_copy_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			     struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op__to_copy(g[0], (enum vnpu_at_dtype)n->dtype, n->device,
				 false);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd__to_copy(vnpu_keyset_t ks, struct vnpu_at_tensor *self, enum vnpu_at_dtype dtype, struct vnpu_at_device device, bool non_blocking)
{
	struct vnpu_at_tensor *out = vnpu_redispatch__to_copy(
		vnpu_ag_below(ks), self, dtype, device, non_blocking);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("ToCopyBackward0", to_copy_backward, 1, &self);
	if (node)
		node->dtype = self->dtype;
	return track(out, node);
}

/*
 * index_select: each selected slice's gradient added back to the slice it
 * came from (PyTorch's index_add into zeros). With dim moved last, that
 * is the gradient's rows times a one-hot of the index against the
 * input's positions (k x n): one mm, accumulating repeated indices in
 * f32. saved[0] the index; ints[0] the dim.
 */
static bool index_select_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				  struct vnpu_at_tensor **in)
{
	struct vnpu_at_int_array shape = saved_shape(n, 0);
	uint32_t nd = (uint32_t)shape.n, dim = (uint32_t)n->ints[0];
	int64_t perm[VNPU_AT_MAX_DIMS], inv[VNPU_AT_MAX_DIMS], moved[VNPU_AT_MAX_DIMS];
	int64_t k = vnpu_at_numel(n->saved[0]), rows = 1, len;
	struct vnpu_at_tensor *gp, *g2 = NULL, *ix = NULL, *ar = NULL, *oh = NULL;
	struct vnpu_at_tensor *m = NULL, *mv = NULL, *back = NULL;
	struct temps t = { 0 };

	if (!nd) {		/* a 0-dim self: its one element, selected */
		in[0] = vnpu_op_clone(g[0]);
		return in[0] != NULL;
	}
	len = shape.v[dim];
	for (uint32_t d = 0, j = 0; d < nd; d++)
		if (d != dim)
			perm[j++] = d;
	perm[nd - 1] = dim;
	for (uint32_t d = 0; d < nd; d++) {
		inv[perm[d]] = d;
		moved[d] = shape.v[perm[d]];
		if (d + 1 < nd)
			rows *= moved[d];
	}
	gp = keep(&t, vnpu_op_permute(g[0], ints_of(perm, nd)));
	if (gp)
		g2 = wide(&t, keep(&t, vnpu_op_reshape(gp, VNPU_AT_INTS(rows, k))));
	if (g2)
		ix = keep(&t, vnpu_op_reshape(n->saved[0], VNPU_AT_INTS(k, 1)));
	if (ix)
		ar = keep(&t, vnpu_op_arange_start_step(VNPU_AT_INT(0), VNPU_AT_INT(len),
							VNPU_AT_INT(1), VNPU_AT_I64,
							n->device));
	if (ar)
		oh = mask_as(&t, keep(&t, vnpu_op_eq_Tensor(ix, ar)),
			     (enum vnpu_at_dtype)g2->dtype);
	if (oh)
		m = keep(&t, vnpu_op_mm(g2, oh));
	if (m)
		mv = keep(&t, vnpu_op_view(m, ints_of(moved, nd)));
	if (mv)
		back = keep(&t, vnpu_op_permute(mv, ints_of(inv, nd)));
	in[0] = vnpu_at_converted(back ? vnpu_op_contiguous(back) : NULL,
			 (enum vnpu_at_dtype)g[0]->dtype);
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_index_select(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim, struct vnpu_at_tensor *index)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_index_select(vnpu_ag_below(ks), self,
								  dim, index);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("IndexSelectBackward0", index_select_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		vnpu_ag_save(node, 0, index);
		node->ints[0] = self->ndim ? vnpu_at_wrap_dim(dim, self->ndim) : 0;
	}
	return track(out, node);
}

/*
 * masked_select: the gradient's entries go back to the positions the
 * broadcast mask selected, zeros elsewhere, summed over self's broadcast
 * dims. The positions are masked_select of an arange; the scatter is
 * embedding's backward with rows of width 1 (each position once).
 * saved[0] the mask; shape 0 self's, shape 1 the broadcast shape.
 */
static bool masked_select_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				   struct vnpu_at_tensor **in)
{
	struct vnpu_at_int_array full = saved_shape(n, 1);
	int64_t numel = 1, c = vnpu_at_numel(g[0]);
	struct vnpu_at_tensor *m, *ar = NULL, *pos = NULL, *g2 = NULL, *fl = NULL;
	struct vnpu_at_tensor *fv = NULL;
	struct temps t = { 0 };

	for (int64_t d = 0; d < full.n; d++)
		numel *= full.v[d];
	m = keep(&t, vnpu_op_expand(n->saved[0], full, false));
	if (m)
		ar = keep(&t, vnpu_op_arange_start_step(VNPU_AT_INT(0), VNPU_AT_INT(numel),
							VNPU_AT_INT(1), VNPU_AT_I64,
							n->device));
	if (ar)
		ar = keep(&t, vnpu_op_view(ar, full));
	if (ar)
		pos = keep(&t, vnpu_op_masked_select(ar, m));
	if (pos)
		g2 = keep(&t, vnpu_op_reshape(g[0], VNPU_AT_INTS(c, 1)));
	if (g2)
		fl = keep(&t, vnpu_op_embedding_dense_backward(g2, pos, numel, -1, false));
	if (fl)
		fv = keep(&t, vnpu_op_view(fl, full));
	in[0] = fv ? sum_to_input(fv, n, 0) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_masked_select(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						   struct vnpu_at_tensor *mask)
{
	const struct vnpu_at_tensor *both[2] = { self, mask };
	struct vnpu_at_tensor *out = vnpu_redispatch_masked_select(vnpu_ag_below(ks), self, mask);
	struct vnpu_ag_node *node;
	int64_t sizes[VNPU_AT_MAX_DIMS];
	uint32_t nd;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	if (!vnpu_at_broadcast_shapes("aten::masked_select", 2, both, &nd, sizes)) {
		vnpu_at_release(out);
		return NULL;
	}
	node = node_for("MaskedSelectBackward0", masked_select_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		memcpy(node->shape[1], sizes, sizeof(int64_t) * nd);
		node->shape_ndim[1] = nd;
		vnpu_ag_save(node, 0, mask);
	}
	return track(out, node);
}

/* The storage position of element i (in row-major order) of t's view. */
static int64_t view_position(const struct vnpu_at_tensor *t, int64_t i)
{
	int64_t pos = t->offset;

	for (int d = (int)t->ndim - 1; d >= 0; d--) {
		pos += (i % t->sizes[d]) * t->strides[d];
		i /= t->sizes[d];
	}
	return pos;
}

/* One past the last storage position t's view reaches (0 if empty). */
static int64_t view_end(const struct vnpu_at_tensor *t)
{
	int64_t end = t->offset + 1;

	if (!vnpu_at_numel(t))
		return 0;
	for (uint32_t d = 0; d < t->ndim; d++)
		end += (t->sizes[d] - 1) * t->strides[d];
	return end;
}

/*
 * as_strided (PyTorch's as_strided_backward): each output element's
 * gradient is added to the storage element it views, and the input's
 * gradient read back through the input's geometry, divided among the
 * input elements that share a location. A scatter-add over positions the
 * dispatcher has no op for: done on the host in f64, then moved to the
 * node's device. saved[0] the input, saved[1] the output (detached).
 */
static bool as_strided_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				struct vnpu_at_tensor **in)
{
	const struct vnpu_at_tensor *x = n->saved[0], *o = n->saved[1];
	int64_t span = view_end(o) > view_end(x) ? view_end(o) : view_end(x);
	int64_t no = vnpu_at_numel(o), nx = vnpu_at_numel(x);
	struct vnpu_at_tensor *gc, *gd, *r = NULL;
	double *acc = NULL, *gp, *rp;
	uint32_t *cnt = NULL;

	gc = vnpu_op__to_copy(g[0], VNPU_AT_F64, VNPU_AT_DEV_CPU, false);
	gd = gc ? vnpu_op_contiguous(gc) : NULL;
	vnpu_at_release(gc);
	if (gd) {
		acc = calloc((size_t)span + 1, sizeof(*acc));
		cnt = calloc((size_t)span + 1, sizeof(*cnt));
		r = vnpu_at_empty(x->ndim, x->sizes, VNPU_AT_F64, VNPU_AT_DEV_CPU);
	}
	if (!acc || !cnt || !r) {
		if (gd && (!acc || !cnt))
			vnpu_at_error_set(VNPU_AT_ERR_OOM, "AsStridedBackward0: out of host memory");
		goto out;
	}
	gp = vnpu_at_data(gd);
	rp = vnpu_at_data(r);
	for (int64_t i = 0; i < no; i++)
		acc[view_position(o, i)] += gp[i];
	for (int64_t i = 0; i < nx; i++)
		cnt[view_position(x, i)]++;
	for (int64_t i = 0; i < nx; i++) {
		int64_t p = view_position(x, i);

		rp[i] = acc[p] / cnt[p];
	}
	in[0] = vnpu_op__to_copy(r, (enum vnpu_at_dtype)g[0]->dtype, n->device, false);
out:
	free(acc);
	free(cnt);
	vnpu_at_release(gd);
	vnpu_at_release(r);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_as_strided(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_int_array size, struct vnpu_at_int_array stride, struct vnpu_at_opt_int storage_offset)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_as_strided(vnpu_ag_below(ks), self, size,
								stride, storage_offset);
	struct vnpu_ag_node *node;
	struct vnpu_at_tensor *alias;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("AsStridedBackward0", as_strided_backward, 1, &self);
	alias = node ? detach(out) : NULL;
	if (!alias) {
		vnpu_ag_node_release(node);
		vnpu_at_release(out);
		return NULL;
	}
	vnpu_ag_save(node, 0, self);
	vnpu_ag_save(node, 1, alias);
	vnpu_at_release(alias);
	return track(out, node);
}

/* ---- linear algebra ------------------------------------------------------------ */

static bool mm_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *t;

	if (wants(n, 0)) {
		t = vnpu_op_t(n->saved[1]);
		in[0] = t ? vnpu_op_mm(g[0], t) : NULL;
		vnpu_at_release(t);
		if (!in[0])
			return false;
	}
	if (wants(n, 1)) {
		t = vnpu_op_t(n->saved[0]);
		in[1] = t ? vnpu_op_mm(t, g[0]) : NULL;
		vnpu_at_release(t);
		if (!in[1])
			return false;
	}
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_mm(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *mat2)
{
	return record(vnpu_redispatch_mm(vnpu_ag_below(ks), self, mat2),
		      "MmBackward0", mm_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, mat2 }, true, 0);
}

static bool bmm_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *t;

	if (wants(n, 0)) {
		t = vnpu_op_transpose_int(n->saved[1], 1, 2);
		in[0] = t ? vnpu_op_bmm(g[0], t) : NULL;
		vnpu_at_release(t);
		if (!in[0])
			return false;
	}
	if (wants(n, 1)) {
		t = vnpu_op_transpose_int(n->saved[0], 1, 2);
		in[1] = t ? vnpu_op_bmm(t, g[0]) : NULL;
		vnpu_at_release(t);
		if (!in[1])
			return false;
	}
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_bmm(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *mat2)
{
	return record(vnpu_redispatch_bmm(vnpu_ag_below(ks), self, mat2),
		      "BmmBackward0", bmm_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, mat2 }, true, 0);
}

/* beta * self + alpha * batch1 @ batch2, or (summed: addbmm) alpha times
 * the sum of those products over the batch (saved: batch1, batch2; d:
 * beta, alpha; ints[0]: summed) */
static bool batch_matmul_backward(struct vnpu_ag_node *n,
				  struct vnpu_at_tensor **g,
				  struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *t, *m, *gb;

	if (wants(n, 0)) {
		t = scale(g[0], n->d[0]);
		in[0] = t ? sum_to_input(t, n, 0) : NULL;
		vnpu_at_release(t);
		if (!in[0])
			return false;
	}
	if (!wants(n, 1) && !wants(n, 2))
		return true;
	/* addbmm's gradient reaches every batch alike */
	gb = !n->ints[0] ? vnpu_at_retain(g[0]) :
		vnpu_op_expand(g[0], VNPU_AT_INTS(n->saved[0]->sizes[0],
						  g[0]->sizes[0], g[0]->sizes[1]),
			       false);
	if (!gb)
		return false;
	for (uint32_t i = 1; i < 3; i++) {
		if (!wants(n, i))
			continue;
		t = vnpu_op_transpose_int(n->saved[i == 1 ? 1 : 0], 1, 2);
		m = !t ? NULL : i == 1 ? vnpu_op_bmm(gb, t) : vnpu_op_bmm(t, gb);
		in[i] = scale(m, n->d[1]);
		vnpu_at_release(t);
		vnpu_at_release(m);
		if (!in[i])
			break;
	}
	vnpu_at_release(gb);
	return (!wants(n, 1) || in[1]) && (!wants(n, 2) || in[2]);
}

static struct vnpu_at_tensor *batch_matmul_node(const char *node_name,
						bool summed,
						struct vnpu_at_tensor *out,
						struct vnpu_at_tensor *self,
						struct vnpu_at_tensor *batch1,
						struct vnpu_at_tensor *batch2,
						struct vnpu_at_scalar beta,
						struct vnpu_at_scalar alpha)
{
	struct vnpu_at_tensor *in[3] = { self, batch1, batch2 };
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(3, in))
		return out;
	node = node_for(node_name, batch_matmul_backward, 3, in);
	if (node) {
		save_shape(node, 0, self);
		vnpu_ag_save(node, 0, batch1);
		vnpu_ag_save(node, 1, batch2);
		node->d[0] = vnpu_at_scalar_to_double(beta);
		node->d[1] = vnpu_at_scalar_to_double(alpha);
		node->ints[0] = summed;
		node->nints = 1;
	}
	return track(out, node);
}

struct vnpu_at_tensor *vnpu_autograd_baddbmm(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *batch1, struct vnpu_at_tensor *batch2, struct vnpu_at_scalar beta, struct vnpu_at_scalar alpha)
{
	return batch_matmul_node("BaddbmmBackward0", false,
				 vnpu_redispatch_baddbmm(vnpu_ag_below(ks), self,
							 batch1, batch2, beta,
							 alpha),
				 self, batch1, batch2, beta, alpha);
}

struct vnpu_at_tensor *vnpu_autograd_addbmm(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *batch1, struct vnpu_at_tensor *batch2, struct vnpu_at_scalar beta, struct vnpu_at_scalar alpha)
{
	return batch_matmul_node("AddbmmBackward0", true,
				 vnpu_redispatch_addbmm(vnpu_ag_below(ks), self,
							batch1, batch2, beta,
							alpha),
				 self, batch1, batch2, beta, alpha);
}

/* beta * self + alpha * mat1 @ mat2 (saved: mat1, mat2; d: beta, alpha) */
static bool addmm_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			   struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *t, *m;

	if (wants(n, 0)) {
		t = scale(g[0], n->d[0]);
		in[0] = t ? sum_to_input(t, n, 0) : NULL;
		vnpu_at_release(t);
		if (!in[0])
			return false;
	}
	for (uint32_t i = 1; i < 3; i++) {
		if (!wants(n, i))
			continue;
		t = vnpu_op_t(n->saved[i == 1 ? 1 : 0]);
		m = !t ? NULL : i == 1 ? vnpu_op_mm(g[0], t)
				       : vnpu_op_mm(t, g[0]);
		in[i] = scale(m, n->d[1]);
		vnpu_at_release(t);
		vnpu_at_release(m);
		if (!in[i])
			return false;
	}
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_addmm(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *mat1, struct vnpu_at_tensor *mat2, struct vnpu_at_scalar beta, struct vnpu_at_scalar alpha)
{
	struct vnpu_at_tensor *in[3] = { self, mat1, mat2 };
	struct vnpu_at_tensor *out = vnpu_redispatch_addmm(vnpu_ag_below(ks),
							   self, mat1, mat2,
							   beta, alpha);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(3, in))
		return out;
	node = node_for("AddmmBackward0", addmm_backward, 3, in);
	if (node) {
		save_shape(node, 0, self);
		vnpu_ag_save(node, 0, mat1);
		vnpu_ag_save(node, 1, mat2);
		node->d[0] = vnpu_at_scalar_to_double(beta);
		node->d[1] = vnpu_at_scalar_to_double(alpha);
	}
	return track(out, node);
}

/* ---- convolution ------------------------------------------------------------------ */

/*
 * Node layout: saved input, weight; ints: stride[3] pad[3] dilation[3]
 * output_padding[3] groups transposed nsp.
 */
enum { CV_STRIDE = 0, CV_PAD = 3, CV_DIL = 6, CV_OPAD = 9, CV_GROUPS = 12,
       CV_TRANSPOSED = 13, CV_NSP = 14 };

/* The output_mask of a node's first three inputs. */
static struct vnpu_at_bool_list mask3(const struct vnpu_ag_node *n)
{
	return (struct vnpu_at_bool_list){ 3, (uint64_t)wants(n, 0) | (uint64_t)wants(n, 1) << 1 |
					      (uint64_t)wants(n, 2) << 2 };
}

/* convolution_backward (nn_backward.c), as PyTorch's ConvolutionBackward0 */
static bool conv_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	uint32_t nsp = (uint32_t)n->ints[CV_NSP];
	struct vnpu_ret_convolution_backward r = vnpu_op_convolution_backward(
		g[0], n->saved[0], n->saved[1], (struct vnpu_at_opt_int_array){ 0 },
		ints_of(&n->ints[CV_STRIDE], nsp), ints_of(&n->ints[CV_PAD], nsp),
		ints_of(&n->ints[CV_DIL], nsp), n->ints[CV_TRANSPOSED],
		ints_of(&n->ints[CV_OPAD], nsp), n->ints[CV_GROUPS], mask3(n));

	in[0] = r.r0;
	in[1] = r.r1;
	in[2] = r.r2;
	return (!wants(n, 0) || in[0]) && (!wants(n, 1) || in[1]) &&
	       (!wants(n, 2) || in[2]);
}

/* An int[] argument's value for dim i (one value repeats; none: def). */
static int64_t arg_at(struct vnpu_at_int_array a, uint32_t i, int64_t def)
{
	return a.n == 0 ? def : a.v[a.n == 1 ? 0 : i];
}

struct vnpu_at_tensor *vnpu_autograd_convolution(vnpu_keyset_t ks, struct vnpu_at_tensor *input, struct vnpu_at_tensor *weight, struct vnpu_at_tensor *bias, struct vnpu_at_int_array stride, struct vnpu_at_int_array padding, struct vnpu_at_int_array dilation, bool transposed, struct vnpu_at_int_array output_padding, int64_t groups)
{
	struct vnpu_at_tensor *in[3] = { input, weight, bias };
	struct vnpu_at_tensor *out = vnpu_redispatch_convolution(
		vnpu_ag_below(ks), input, weight, bias, stride, padding,
		dilation, transposed, output_padding, groups);
	struct vnpu_ag_node *node;
	uint32_t nsp;

	if (!out || !vnpu_ag_needed(3, in))
		return out;
	nsp = input->ndim - 2u;	/* the forward checked the dims */
	if (nsp > 3) {
		vnpu_at_release(out);
		return vnpu_at_error_set(VNPU_AT_ERR_AUTOGRAD,
					 "aten::convolution: gradients of convolutions with more than 3 spatial dims are not supported");
	}
	node = node_for("ConvolutionBackward0", conv_backward, 3, in);
	if (node) {
		vnpu_ag_save(node, 0, input);
		vnpu_ag_save(node, 1, weight);
		for (uint32_t i = 0; i < nsp; i++) {
			node->ints[CV_STRIDE + i] = arg_at(stride, i, 1);
			node->ints[CV_PAD + i] = arg_at(padding, i, 0);
			node->ints[CV_DIL + i] = arg_at(dilation, i, 1);
			node->ints[CV_OPAD + i] = arg_at(output_padding, i, 0);
		}
		node->ints[CV_GROUPS] = groups;
		node->ints[CV_TRANSPOSED] = transposed;
		node->ints[CV_NSP] = nsp;
	}
	return track(out, node);
}

/* ---- pooling ------------------------------------------------------------------ */

/* max_pool2d_with_indices_backward (nn_backward.c). Saved: the input and
 * the indices; ints: kernel, stride, padding, dilation (2 each), ceil. */
enum { MP_K = 0, MP_S = 2, MP_P = 4, MP_D = 6, MP_CEIL = 8 };

static bool max_pool_backward(struct vnpu_ag_node *n,
			      struct vnpu_at_tensor **g,
			      struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_max_pool2d_with_indices_backward(g[0], n->saved[0],
		ints_of(&n->ints[MP_K], 2), ints_of(&n->ints[MP_S], 2),
		ints_of(&n->ints[MP_P], 2), ints_of(&n->ints[MP_D], 2),
		n->ints[MP_CEIL], n->saved[1]);
	return in[0] != NULL;
}

/* The gradient of max_pool2d_with_indices_backward, as PyTorch's
 * max_pool_double_backward: grad_output's is the incoming gradient read
 * at each index (one index_select over the flattened planes); self's is
 * zero. Saved: the indices. */
static bool max_pool_double_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				     struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *idx = n->saved[0], *flat, *gg, *sel;
	struct vnpu_at_int_array out_shape = saved_shape(n, 0);
	int64_t hw = g[0]->sizes[g[0]->ndim - 1] * g[0]->sizes[g[0]->ndim - 2];
	int64_t outs = idx->sizes[idx->ndim - 1] * idx->sizes[idx->ndim - 2];
	int64_t planes = hw ? vnpu_at_numel(g[0]) / hw : 0;

	if (wants(n, 1)) {
		in[1] = vnpu_op_zeros_like(g[0], VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE);
		if (!in[1])
			return false;
	}
	if (!wants(n, 0))
		return true;
	if (!planes || !outs) {
		in[0] = vnpu_op_zeros(out_shape, g[0]->dtype, n->device);
		return in[0] != NULL;
	}
	flat = vnpu_max_pool_flat_indices(idx, planes, outs, hw);
	gg = flat ? vnpu_op_reshape(g[0], VNPU_AT_INTS(planes * hw)) : NULL;
	sel = gg ? vnpu_op_index_select(gg, 0, flat) : NULL;
	in[0] = sel ? vnpu_op_reshape(sel, out_shape) : NULL;
	vnpu_at_release(flat);
	vnpu_at_release(gg);
	vnpu_at_release(sel);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_max_pool2d_with_indices_backward(vnpu_keyset_t ks,
	struct vnpu_at_tensor *grad_output, struct vnpu_at_tensor *self,
	struct vnpu_at_int_array kernel_size, struct vnpu_at_int_array stride,
	struct vnpu_at_int_array padding, struct vnpu_at_int_array dilation, bool ceil_mode,
	struct vnpu_at_tensor *indices)
{
	struct vnpu_at_tensor *in[2] = { grad_output, self };
	struct vnpu_at_tensor *out = vnpu_redispatch_max_pool2d_with_indices_backward(
		vnpu_ag_below(ks), grad_output, self, kernel_size, stride, padding, dilation,
		ceil_mode, indices);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(2, in))
		return out;
	node = node_for("MaxPool2DWithIndicesBackwardBackward0", max_pool_double_backward, 2,
			in);
	if (node) {
		save_shape(node, 0, grad_output);
		vnpu_ag_save(node, 0, indices);
	}
	return track(out, node);
}

struct vnpu_ret_max_pool2d_with_indices vnpu_autograd_max_pool2d_with_indices(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_int_array kernel_size, struct vnpu_at_int_array stride, struct vnpu_at_int_array padding, struct vnpu_at_int_array dilation, bool ceil_mode)
{
	struct vnpu_ret_max_pool2d_with_indices r =
		vnpu_redispatch_max_pool2d_with_indices(vnpu_ag_below(ks), self,
			kernel_size, stride, padding, dilation, ceil_mode);
	struct vnpu_ag_node *node;

	if (!r.r0 || !vnpu_ag_needed(1, &self))
		return r;
	node = node_for("MaxPool2DWithIndicesBackward0", max_pool_backward, 1,
			&self);
	if (node) {
		vnpu_ag_save(node, 0, self);
		vnpu_ag_save(node, 1, r.r1);
		for (uint32_t i = 0; i < 2; i++) {
			node->ints[MP_K + i] = arg_at(kernel_size, i, 1);
			node->ints[MP_S + i] = arg_at(stride, i, node->ints[MP_K + i]);
			node->ints[MP_P + i] = arg_at(padding, i, 0);
			node->ints[MP_D + i] = arg_at(dilation, i, 1);
		}
		node->ints[MP_CEIL] = ceil_mode;
	}
	r.r0 = track(r.r0, node);
	if (!r.r0) {
		vnpu_at_release(r.r1);
		r.r1 = NULL;
	}
	return r;
}

/* avg_pool2d_backward (nn_backward.c). ints: kernel, stride, padding (2
 * each), ceil_mode, count_include_pad, divisor_override's presence and
 * value. */
enum { AP_K = 0, AP_S = 2, AP_P = 4, AP_CEIL = 6, AP_COUNT_PAD = 7, AP_HAS_DIV = 8,
       AP_DIV = 9 };

static bool avg_pool_backward(struct vnpu_ag_node *n,
			      struct vnpu_at_tensor **g,
			      struct vnpu_at_tensor **in)
{
	const int64_t *a = n->ints;

	in[0] = vnpu_op_avg_pool2d_backward(g[0], n->saved[0], ints_of(&a[AP_K], 2),
					    ints_of(&a[AP_S], 2), ints_of(&a[AP_P], 2),
					    a[AP_CEIL], a[AP_COUNT_PAD],
					    (struct vnpu_at_opt_int){ a[AP_HAS_DIV], a[AP_DIV] });
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_avg_pool2d(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_int_array kernel_size, struct vnpu_at_int_array stride, struct vnpu_at_int_array padding, bool ceil_mode, bool count_include_pad, struct vnpu_at_opt_int divisor_override)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_avg_pool2d(
		vnpu_ag_below(ks), self, kernel_size, stride, padding,
		ceil_mode, count_include_pad, divisor_override);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("AvgPool2DBackward0", avg_pool_backward, 1, &self);
	if (node) {
		vnpu_ag_save(node, 0, self);
		for (uint32_t i = 0; i < 2; i++) {
			node->ints[AP_K + i] = arg_at(kernel_size, i, 1);
			node->ints[AP_S + i] = arg_at(stride, i,
						      node->ints[AP_K + i]);
			node->ints[AP_P + i] = arg_at(padding, i, 0);
		}
		node->ints[AP_CEIL] = ceil_mode;
		node->ints[AP_COUNT_PAD] = count_include_pad;
		node->ints[AP_HAS_DIV] = divisor_override.has;
		node->ints[AP_DIV] = divisor_override.v;
	}
	return track(out, node);
}

/* ---- softmax ---------------------------------------------------------------------- */

/* saved: the output (detached); ints[0] dim; ints[1] log */
/*
 * For f16/bf16 the output is recomputed in f32 from the saved input and
 * the gradient formed in f32, rounded once: grad - sum(grad * y) cancels,
 * and the rounded output would carry its rounding into the difference.
 */
static bool softmax_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			     struct vnpu_at_tensor **in)
{
	/* the input's dtype: the gradient's, and the kernel's input_dtype */
	enum vnpu_at_dtype in_dt = (enum vnpu_at_dtype)n->dtype, dt = in_dt;
	struct vnpu_at_tensor *y = n->saved[0], *gg = g[0], *x;
	struct temps t = { 0 };
	bool log = n->ints[1];

	if (g[0]->dtype == VNPU_AT_F16 || g[0]->dtype == VNPU_AT_BF16) {
		x = wide(&t, n->saved[1]);
		gg = wide(&t, g[0]);
		y = !x ? NULL : keep(&t, log ? vnpu_op__log_softmax(x, n->ints[0], false) :
					   vnpu_op__softmax(x, n->ints[0], false));
		dt = VNPU_AT_F32;
	}
	if (y && gg)
		in[0] = log ? vnpu_op__log_softmax_backward_data(gg, y, n->ints[0], dt) :
			vnpu_op__softmax_backward_data(gg, y, n->ints[0], dt);
	in[0] = vnpu_at_converted(in[0], in_dt);
	temps_free(&t);
	return in[0] != NULL;
}

static struct vnpu_at_tensor *record_softmax(struct vnpu_at_tensor *out,
					     const char *name,
					     struct vnpu_at_tensor *self,
					     int64_t dim, bool log)
{
	struct vnpu_ag_node *node;

	out = record_with_output(out, name, softmax_backward, self, 0);
	if (!out || !out->autograd || !out->autograd->grad_fn ||
	    out->autograd->grad_fn->backward != softmax_backward)
		return out;
	node = out->autograd->grad_fn;
	node->ints[0] = dim;
	node->ints[1] = log;
	return out;
}

struct vnpu_at_tensor *vnpu_autograd__softmax(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim, bool half_to_float)
{
	return record_softmax(vnpu_redispatch__softmax(vnpu_ag_below(ks), self,
						       dim, half_to_float),
			      "SoftmaxBackward0", self, dim, false);
}

struct vnpu_at_tensor *vnpu_autograd__log_softmax(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim, bool half_to_float)
{
	return record_softmax(vnpu_redispatch__log_softmax(vnpu_ag_below(ks),
							   self, dim,
							   half_to_float),
			      "LogSoftmaxBackward0", self, dim, true);
}

/*
 * _softmax_backward_data(grad_output, output): grad_output's gradient is
 * the op itself on the incoming gradient; output's PyTorch's
 * softmax_double_backward, in the same order and dtype:
 * go * g - sum(output * go) * g - go * sum(output * g), sums over dim
 * kept. saved: grad_output, output; ints[0] dim, ints[1] input_dtype.
 */
static bool softmax_backward_data_backward(struct vnpu_ag_node *n,
					   struct vnpu_at_tensor **g,
					   struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *go = n->saved[0], *y = n->saved[1], *gg;
	struct vnpu_at_tensor *a, *b, *c, *d;
	struct temps t = { 0 };
	int64_t dim = n->ints[0];

	if (wants(n, 0)) {
		in[0] = vnpu_op__softmax_backward_data(g[0], y, dim,
				(enum vnpu_at_dtype)n->ints[1]);
		in[0] = vnpu_at_converted(in[0], (enum vnpu_at_dtype)go->dtype);
		if (!in[0])
			return false;
	}
	if (!wants(n, 1))
		return true;
	gg = g[0]->dtype == y->dtype ? g[0] :
	     keep(&t, vnpu_op__to_copy(g[0], (enum vnpu_at_dtype)y->dtype,
				       VNPU_AT_DEV_NONE, false));
	a = gg ? keep(&t, vnpu_op_mul_Tensor(go, gg)) : NULL;
	b = a ? keep(&t, vnpu_op_mul_Tensor(y, go)) : NULL;
	b = b ? keep(&t, vnpu_op_sum_dim_IntList(b, dims_of(&dim, 1), true,
						  VNPU_AT_DTYPE_NONE)) : NULL;
	b = b ? keep(&t, vnpu_op_mul_Tensor(b, gg)) : NULL;
	c = b ? keep(&t, vnpu_op_mul_Tensor(y, gg)) : NULL;
	c = c ? keep(&t, vnpu_op_sum_dim_IntList(c, dims_of(&dim, 1), true,
						  VNPU_AT_DTYPE_NONE)) : NULL;
	c = c ? keep(&t, vnpu_op_mul_Tensor(go, c)) : NULL;
	d = c ? keep(&t, vnpu_op_sub_Tensor(a, b, VNPU_AT_INT(1))) : NULL;
	in[1] = d ? vnpu_op_sub_Tensor(d, c, VNPU_AT_INT(1)) : NULL;
	in[1] = vnpu_at_converted(in[1], (enum vnpu_at_dtype)y->dtype);
	temps_free(&t);
	return in[1] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd__softmax_backward_data(vnpu_keyset_t ks, struct vnpu_at_tensor *grad_output, struct vnpu_at_tensor *output, int64_t dim, enum vnpu_at_dtype input_dtype)
{
	struct vnpu_at_tensor *in[2] = { grad_output, output };
	struct vnpu_at_tensor *out = vnpu_redispatch__softmax_backward_data(
		vnpu_ag_below(ks), grad_output, output, dim, input_dtype);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(2, in))
		return out;
	node = node_for("SoftmaxBackwardDataBackward0",
			softmax_backward_data_backward, 2, in);
	if (node) {
		for (uint32_t i = 0; i < 2; i++) {
			save_shape(node, i, in[i]);
			vnpu_ag_save(node, i, in[i]);
		}
		node->ints[0] = dim;
		node->ints[1] = input_dtype;
	}
	return track(out, node);
}

/* ---- normalisation ------------------------------------------------------------------ */

/*
 * The input gradient of a normalisation over `dims` (keepdim means):
 * rstd * (gh - mean(gh) - xhat * mean(gh * xhat)), gh = grad * weight.
 */
static struct vnpu_at_tensor *norm_input_grad(struct vnpu_at_tensor *gh,
					      struct vnpu_at_tensor *xhat,
					      struct vnpu_at_tensor *rstd,
					      const int64_t *dims, uint32_t nd)
{
	struct vnpu_at_tensor *m1, *p, *m2, *a = NULL, *b = NULL, *c = NULL;
	struct vnpu_at_tensor *r = NULL;

	m1 = vnpu_op_mean_dim(gh, dims_of(dims, nd), true, VNPU_AT_DTYPE_NONE);
	p = vnpu_op_mul_Tensor(gh, xhat);
	m2 = p ? vnpu_op_mean_dim(p, dims_of(dims, nd), true,
				  VNPU_AT_DTYPE_NONE) : NULL;
	if (m1 && m2) {
		a = vnpu_op_sub_Tensor(gh, m1, VNPU_AT_INT(1));
		b = vnpu_op_mul_Tensor(xhat, m2);
	}
	if (a && b)
		c = vnpu_op_sub_Tensor(a, b, VNPU_AT_INT(1));
	if (c)
		r = vnpu_op_mul_Tensor(c, rstd);
	vnpu_at_release(m1);
	vnpu_at_release(p);
	vnpu_at_release(m2);
	vnpu_at_release(a);
	vnpu_at_release(b);
	vnpu_at_release(c);
	return r;
}

/* Declared, with what it computes, in dispatch_internal.h. */
struct vnpu_at_tensor *vnpu_max_pool_flat_indices(struct vnpu_at_tensor *indices,
						  int64_t planes, int64_t outs, int64_t hw)
{
	struct vnpu_at_tensor *iv, *ar, *off = NULL, *sum = NULL, *r = NULL;

	iv = vnpu_op_reshape(indices, VNPU_AT_INTS(planes, outs));
	ar = iv ? vnpu_op_arange_start_step(VNPU_AT_INT(0), VNPU_AT_INT(planes * hw),
					    VNPU_AT_INT(hw), VNPU_AT_I64,
					    vnpu_at_device_of(indices)) : NULL;
	off = ar ? vnpu_op_reshape(ar, VNPU_AT_INTS(planes, 1)) : NULL;
	sum = off ? vnpu_op_add_Tensor(iv, off, VNPU_AT_INT(1)) : NULL;
	r = sum ? vnpu_op_reshape(sum, VNPU_AT_INTS(planes * outs)) : NULL;
	vnpu_at_release(iv);
	vnpu_at_release(ar);
	vnpu_at_release(off);
	vnpu_at_release(sum);
	return r;
}

/* (x - mean) * rstd */
static struct vnpu_at_tensor *normalized(struct vnpu_at_tensor *x,
					 struct vnpu_at_tensor *mean,
					 struct vnpu_at_tensor *rstd)
{
	struct vnpu_at_tensor *c = vnpu_op_sub_Tensor(x, mean, VNPU_AT_INT(1));
	struct vnpu_at_tensor *r = c ? vnpu_op_mul_Tensor(c, rstd) : NULL;

	vnpu_at_release(c);
	return r;
}

/* Declared, with what it computes, in dispatch_internal.h. */
bool vnpu_norm_backward(const bool want[3], struct vnpu_at_tensor *g,
			struct vnpu_at_tensor *x, struct vnpu_at_tensor *w,
			struct vnpu_at_tensor *mean, struct vnpu_at_tensor *rstd,
			bool train, const int64_t *inner, uint32_t ninner,
			const int64_t *outer, uint32_t nouter,
			struct vnpu_at_int_array wshape,
			struct vnpu_at_tensor **in)
{
	enum vnpu_at_dtype xdt = (enum vnpu_at_dtype)x->dtype;
	struct temps t = { 0 };
	struct vnpu_at_tensor *xhat, *gh;

	/* f16/bf16 in f32, rounded once (the engine rounds the weight and
	 * bias gradients to their dtype) */
	g = wide(&t, g);
	x = wide(&t, x);
	w = w ? wide(&t, w) : NULL;
	xhat = g && x ? normalized(x, mean, rstd) : NULL;
	if (!xhat) {
		temps_free(&t);
		return false;
	}
	gh = w ? vnpu_op_mul_Tensor(g, w) : vnpu_at_retain(g);
	if (gh && want[0])
		in[0] = vnpu_at_converted(train ? norm_input_grad(gh, xhat, rstd, inner,
							 ninner)
				       : vnpu_op_mul_Tensor(gh, rstd), xdt);
	vnpu_at_release(gh);
	if (want[0] && !in[0])
		goto fail;
	for (uint32_t i = 1; i < 3; i++) {
		struct vnpu_at_tensor *p, *s;

		if (!want[i])
			continue;
		p = i == 1 ? vnpu_op_mul_Tensor(g, xhat) : vnpu_at_retain(g);
		s = !p ? NULL : nouter ?
			vnpu_op_sum_dim_IntList(p, dims_of(outer, nouter),
						false, VNPU_AT_DTYPE_NONE) :
			vnpu_at_retain(p);
		in[i] = s ? vnpu_op_reshape(s, wshape) : NULL;
		vnpu_at_release(p);
		vnpu_at_release(s);
		if (!in[i])
			goto fail;
	}
	vnpu_at_release(xhat);
	temps_free(&t);
	return true;
fail:
	vnpu_at_release(xhat);
	temps_free(&t);
	return false;
}

/* saved: input, weight, mean, rstd; ints[0] how many dims are
 * normalized */
static bool layer_norm_backward(struct vnpu_ag_node *n,
				struct vnpu_at_tensor **g,
				struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *x = n->saved[0];
	uint32_t axis = x->ndim - (uint32_t)n->ints[0], ni = 0, no = 0;
	int64_t inner[VNPU_AT_MAX_DIMS], outer[VNPU_AT_MAX_DIMS];

	for (uint32_t d = 0; d < x->ndim; d++) {
		if (d < axis)
			outer[no++] = d;
		else
			inner[ni++] = d;
	}
	return vnpu_norm_backward(WANTS3(n), g[0], x, n->saved[1], n->saved[2],
				  n->saved[3], true, inner, ni, outer, no,
				  ints_of(&x->sizes[axis], ni), in);
}

struct vnpu_ret_native_layer_norm vnpu_autograd_native_layer_norm(vnpu_keyset_t ks, struct vnpu_at_tensor *input, struct vnpu_at_int_array normalized_shape, struct vnpu_at_tensor *weight, struct vnpu_at_tensor *bias, double eps)
{
	struct vnpu_at_tensor *in[3] = { input, weight, bias };
	struct vnpu_ret_native_layer_norm r = vnpu_redispatch_native_layer_norm(
		vnpu_ag_below(ks), input, normalized_shape, weight, bias, eps);
	struct vnpu_ag_node *node;

	if (!r.r0 || !vnpu_ag_needed(3, in))
		return r;
	node = node_for("NativeLayerNormBackward0", layer_norm_backward, 3,
			in);
	if (node) {
		vnpu_ag_save(node, 0, input);
		vnpu_ag_save(node, 1, weight);
		vnpu_ag_save(node, 2, r.r1);
		vnpu_ag_save(node, 3, r.r2);
		node->ints[0] = normalized_shape.n;
	}
	r.r0 = track(r.r0, node);
	if (!r.r0) {
		vnpu_at_release(r.r1);
		vnpu_at_release(r.r2);
		r.r1 = r.r2 = NULL;
	}
	return r;
}

/* saved: input, weight, mean, rstd as (1, C, 1, ...) views; ints[0]
 * training */
static bool batch_norm_backward(struct vnpu_ag_node *n,
				struct vnpu_at_tensor **g,
				struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *x = n->saved[0], *wv = NULL;
	int64_t dims[VNPU_AT_MAX_DIMS], bshape[VNPU_AT_MAX_DIMS];
	uint32_t nd = 0;
	bool ok;

	for (uint32_t d = 0; d < x->ndim; d++) {
		bshape[d] = d == 1 ? x->sizes[1] : 1;
		if (d != 1)
			dims[nd++] = d;
	}
	if (n->saved[1]) {
		wv = vnpu_op_view(n->saved[1], ints_of(bshape, x->ndim));
		if (!wv)
			return false;
	}
	ok = vnpu_norm_backward(WANTS3(n), g[0], x, wv, n->saved[2], n->saved[3],
				n->ints[0], dims, nd, dims, nd,
				ints_of(&x->sizes[1], 1), in);
	vnpu_at_release(wv);
	return ok;
}

/* The (1, C, 1, ...) view of a (C) statistic; eval: rstd from the running
 * variance. */
static struct vnpu_at_tensor *bn_stat(struct vnpu_at_tensor *s,
				      const struct vnpu_at_tensor *x,
				      bool rstd_of_var, double eps)
{
	int64_t bshape[VNPU_AT_MAX_DIMS];
	struct vnpu_at_tensor *t, *v;

	for (uint32_t d = 0; d < x->ndim; d++)
		bshape[d] = d == 1 ? x->sizes[1] : 1;
	if (rstd_of_var) {
		struct vnpu_at_tensor *e = vnpu_op_add_Scalar(s,
			VNPU_AT_DOUBLE(eps), VNPU_AT_INT(1));

		t = e ? vnpu_op_rsqrt(e) : NULL;
		vnpu_at_release(e);
	} else {
		t = vnpu_op_clone(s);	/* running stats change later */
	}
	v = t ? vnpu_op_view(t, ints_of(bshape, x->ndim)) : NULL;
	vnpu_at_release(t);
	return v;
}

struct vnpu_ret_native_batch_norm vnpu_autograd_native_batch_norm(vnpu_keyset_t ks, struct vnpu_at_tensor *input, struct vnpu_at_tensor *weight, struct vnpu_at_tensor *bias, struct vnpu_at_tensor *running_mean, struct vnpu_at_tensor *running_var, bool training, double momentum, double eps)
{
	struct vnpu_at_tensor *in[3] = { input, weight, bias };
	struct vnpu_at_tensor *mean = NULL, *rstd = NULL;
	struct vnpu_ret_native_batch_norm r;
	struct vnpu_ag_node *node;
	struct vnpu_tls_guard ng;

	r = vnpu_redispatch_native_batch_norm(vnpu_ag_below(ks), input, weight,
					      bias, running_mean, running_var,
					      training, momentum, eps);
	if (!r.r0 || !vnpu_ag_needed(3, in))
		return r;
	vnpu_no_grad_begin(&ng);
	mean = bn_stat(training ? r.r1 : running_mean, input, false, 0);
	rstd = training ? bn_stat(r.r2, input, false, 0)
			: bn_stat(running_var, input, true, eps);
	vnpu_tls_guard_end(&ng);
	node = mean && rstd ? node_for("NativeBatchNormBackward0",
				       batch_norm_backward, 3, in) : NULL;
	if (node) {
		vnpu_ag_save(node, 0, input);
		vnpu_ag_save(node, 1, weight);
		vnpu_ag_save(node, 2, mean);
		vnpu_ag_save(node, 3, rstd);
		node->ints[0] = training;
	}
	vnpu_at_release(mean);
	vnpu_at_release(rstd);
	r.r0 = track(r.r0, node);
	if (!r.r0) {
		vnpu_at_release(r.r1);
		vnpu_at_release(r.r2);
		r.r1 = r.r2 = NULL;
	}
	return r;
}

/* ---- embedding ---------------------------------------------------------------------- */

/* The rows the indices picked get their gradients added, by the op that
 * does that (embedding_dense_backward). saved: indices; shape[0] the
 * weight's; ints[8] padding_idx, ints[9] scale_grad_by_freq. */
static bool embedding_backward(struct vnpu_ag_node *n,
			       struct vnpu_at_tensor **g,
			       struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_embedding_dense_backward(g[0], n->saved[0], n->shape[0][0],
						 n->ints[8], n->ints[9]);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_embedding(vnpu_keyset_t ks, struct vnpu_at_tensor *weight, struct vnpu_at_tensor *indices, int64_t padding_idx, bool scale_grad_by_freq, bool sparse)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_embedding(
		vnpu_ag_below(ks), weight, indices, padding_idx,
		scale_grad_by_freq, sparse);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &weight))
		return out;
	node = node_for("EmbeddingBackward0", embedding_backward, 1, &weight);
	if (node) {
		save_shape(node, 0, weight);
		vnpu_ag_save(node, 0, indices);
		node->ints[8] = padding_idx;
		node->ints[9] = scale_grad_by_freq;
	}
	return track(out, node);
}

/* ---- losses ------------------------------------------------------------------------ */

/* saved: self, target; d[0] reduction; the target's gradient is the
 * negated one (both reduced to their input's shape) */
static bool mse_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *gs = vnpu_op_mse_loss_backward(g[0], n->saved[0],
			n->saved[1], (int64_t)n->d[0]), *neg = NULL;

	if (gs && wants(n, 0))
		in[0] = sum_to_input(gs, n, 0);
	if (gs && wants(n, 1)) {
		neg = vnpu_op_neg(gs);
		in[1] = neg ? sum_to_input(neg, n, 1) : NULL;
	}
	vnpu_at_release(gs);
	vnpu_at_release(neg);
	return (!wants(n, 0) || in[0]) && (!wants(n, 1) || in[1]);
}

struct vnpu_at_tensor *vnpu_autograd_mse_loss(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *target, int64_t reduction)
{
	return record(vnpu_redispatch_mse_loss(vnpu_ag_below(ks), self, target,
					       reduction),
		      "MseLossBackward0", mse_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, target }, true,
		      (double)reduction);
}

/* saved: self, target, weight, total_weight (detached); ints[0]
 * reduction, ints[1] ignore_index */
static bool nll_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			 struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_nll_loss_backward(g[0], n->saved[0], n->saved[1],
					  n->saved[2], n->ints[0], n->ints[1],
					  n->saved[3]);
	return in[0] != NULL;
}

struct vnpu_ret_nll_loss_forward vnpu_autograd_nll_loss_forward(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *target, struct vnpu_at_tensor *weight, int64_t reduction, int64_t ignore_index)
{
	struct vnpu_ret_nll_loss_forward r = vnpu_redispatch_nll_loss_forward(
		vnpu_ag_below(ks), self, target, weight, reduction,
		ignore_index);
	struct vnpu_at_tensor *tw;
	struct vnpu_ag_node *node;

	if (!r.r0 || !vnpu_ag_needed(1, &self))
		return r;
	node = node_for("NllLossBackward0", nll_backward, 1, &self);
	tw = node ? detach(r.r1) : NULL;
	if (tw) {
		vnpu_ag_save(node, 0, self);
		vnpu_ag_save(node, 1, target);
		vnpu_ag_save(node, 2, weight);
		vnpu_ag_save(node, 3, tw);
		node->ints[0] = reduction;
		node->ints[1] = ignore_index;
	} else {
		vnpu_ag_node_release(node);
		node = NULL;
	}
	vnpu_at_release(tw);
	r.r0 = track(r.r0, node);
	if (!r.r0) {
		vnpu_at_release(r.r1);
		r.r1 = NULL;
	}
	return r;
}

/* ---- advanced indexing and its index_add_/index_copy_ ------------------- */

static struct vnpu_at_tensor_list saved_indices(const struct vnpu_ag_node *n)
{
	return (struct vnpu_at_tensor_list){ n->saved_list, n->saved_list_n };
}

/* The rows of g that index picks along dim, in the source's shape (a
 * 0-dim source or self is one row). */
static struct vnpu_at_tensor *picked_rows(struct vnpu_ag_node *n, struct vnpu_at_tensor *g)
{
	struct vnpu_at_tensor *rows = vnpu_op_index_select(g, n->ints[0], n->saved[0]);
	struct vnpu_at_tensor *r = rows ? vnpu_op_reshape(rows, saved_shape(n, 1)) : NULL;

	vnpu_at_release(rows);
	return r;
}

/* index: the gradient's picks added back into zeros of self's shape
 * (repeated picks add up). saved_list the indices; shape 0 self's. */
static bool index_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			   struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *z = vnpu_op_zeros(saved_shape(n, 0), (enum vnpu_at_dtype)g[0]->dtype,
						 n->device);
	struct vnpu_at_tensor *r = z ? vnpu_op__index_put_impl_(z, saved_indices(n), g[0], true,
								 false) : NULL;

	vnpu_at_release(r);
	if (!r) {
		vnpu_at_release(z);
		return false;
	}
	in[0] = z;
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_index_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						  struct vnpu_at_tensor_list indices)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_index_Tensor(vnpu_ag_below(ks), self, indices);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("IndexBackward0", index_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		if (!vnpu_ag_save_list(node, indices)) {
			vnpu_ag_node_release(node);
			node = NULL;
		}
	}
	return track(out, node);
}

/* index_put: self's gradient is the output's with the written picks
 * zeroed (kept when accumulating); the values' is the output's picks,
 * summed to the values' shape. saved_list the indices; ints[0]
 * accumulate; shape 0 self's, 1 the values'. */
static bool index_put_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			       struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *zero = NULL, *picks = NULL;

	if (wants(n, 0)) {
		if (n->ints[0]) {
			in[0] = vnpu_op_clone(g[0]);
		} else {
			zero = vnpu_op_zeros((struct vnpu_at_int_array){ NULL, 0 },
					     (enum vnpu_at_dtype)g[0]->dtype, n->device);
			in[0] = zero ? vnpu_op_index_put(g[0], saved_indices(n), zero, false) : NULL;
			vnpu_at_release(zero);
		}
		if (!in[0])
			return false;
	}
	if (wants(n, 1)) {
		picks = vnpu_op_index_Tensor(g[0], saved_indices(n));
		in[1] = picks ? sum_to_input(picks, n, 1) : NULL;
		vnpu_at_release(picks);
		if (!in[1])
			return false;
	}
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_index_put(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					       struct vnpu_at_tensor_list indices,
					       struct vnpu_at_tensor *values, bool accumulate)
{
	struct vnpu_at_tensor *ins[2] = { self, values };
	struct vnpu_at_tensor *out = vnpu_redispatch_index_put(vnpu_ag_below(ks), self, indices,
							       values, accumulate);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(2, ins))
		return out;
	node = node_for("IndexPutBackward0", index_put_backward, 2, ins);
	if (node) {
		save_shape(node, 0, self);
		save_shape(node, 1, values);
		node->ints[0] = accumulate;
		if (!vnpu_ag_save_list(node, indices)) {
			vnpu_ag_node_release(node);
			node = NULL;
		}
	}
	return track(out, node);
}

/* index_add: self's gradient passes; the source's is the picked rows
 * times alpha. saved[0] the index; ints[0] dim; d[0] alpha; shape 1 the
 * source's. */
static bool index_add_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			       struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *rows;

	if (wants(n, 0) && !(in[0] = vnpu_op_clone(g[0])))
		return false;
	if (!wants(n, 1))
		return true;
	rows = picked_rows(n, g[0]);
	if (rows && n->d[0] != 1.0) {
		in[1] = vnpu_op_mul_Scalar(rows, VNPU_AT_DOUBLE(n->d[0]));
		vnpu_at_release(rows);
	} else {
		in[1] = rows;
	}
	return in[1] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_index_add(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					       int64_t dim, struct vnpu_at_tensor *index,
					       struct vnpu_at_tensor *source,
					       struct vnpu_at_scalar alpha)
{
	struct vnpu_at_tensor *ins[2] = { self, source };
	struct vnpu_at_tensor *out = vnpu_redispatch_index_add(vnpu_ag_below(ks), self, dim, index,
							       source, alpha);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(2, ins))
		return out;
	node = node_for("IndexAddBackward0", index_add_backward, 2, ins);
	if (node) {
		save_shape(node, 1, source);
		vnpu_ag_save(node, 0, index);
		node->ints[0] = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
		node->d[0] = vnpu_at_scalar_to_double(alpha);
	}
	return track(out, node);
}

/* index_copy: self's gradient is the output's with the copied rows
 * zeroed; the source's is those rows. saved[0] the index; ints[0] dim;
 * shape 1 the source's. */
static bool index_copy_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *zeros, *r;

	if (wants(n, 0)) {
		in[0] = vnpu_op_clone(g[0]);
		zeros = in[0] ? vnpu_op_zeros(saved_shape(n, 1), (enum vnpu_at_dtype)g[0]->dtype,
					      n->device) : NULL;
		r = zeros ? vnpu_op_index_copy_(in[0], n->ints[0], n->saved[0], zeros) : NULL;
		vnpu_at_release(zeros);
		vnpu_at_release(r);
		if (!r)
			return false;
	}
	if (wants(n, 1)) {
		in[1] = picked_rows(n, g[0]);
		if (!in[1])
			return false;
	}
	return true;
}

struct vnpu_at_tensor *vnpu_autograd_index_copy(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
						int64_t dim, struct vnpu_at_tensor *index,
						struct vnpu_at_tensor *source)
{
	struct vnpu_at_tensor *ins[2] = { self, source };
	struct vnpu_at_tensor *out = vnpu_redispatch_index_copy(vnpu_ag_below(ks), self, dim, index,
								source);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(2, ins))
		return out;
	node = node_for("IndexCopyBackward0", index_copy_backward, 2, ins);
	if (node) {
		save_shape(node, 1, source);
		vnpu_ag_save(node, 0, index);
		node->ints[0] = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	}
	return track(out, node);
}

/* flip: the gradient flipped back. ints the dims (nints of them). */
static bool flip_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	in[0] = vnpu_op_flip(g[0], ints_of(n->ints, n->nints));
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_flip(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  struct vnpu_at_int_array dims)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_flip(vnpu_ag_below(ks), self, dims);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	/* a valid dims list names each of at most VNPU_AT_MAX_DIMS dims once */
	node = node_for("FlipBackward0", flip_backward, 1, &self);
	if (node) {
		memcpy(node->ints, dims.v, sizeof(int64_t) * (size_t)dims.n);
		node->nints = (uint32_t)dims.n;
	}
	return track(out, node);
}

/* roll: the gradient rolled back. d[0] 1 when self was rolled flattened
 * (ints[0] the shift back), else ints[k] the shift back along dim k for
 * each of nints dims: a shift of size - (shift mod size), the inverse
 * without negating an int64 that may be its minimum. */
static bool roll_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	int64_t dims[VNPU_AT_MAX_DIMS];

	if (n->d[0]) {
		in[0] = vnpu_op_roll(g[0], ints_of(n->ints, 1), VNPU_AT_NO_INTS);
	} else {
		for (uint32_t k = 0; k < n->nints; k++)
			dims[k] = k;
		in[0] = vnpu_op_roll(g[0], ints_of(n->ints, n->nints), ints_of(dims, n->nints));
	}
	return in[0] != NULL;
}

static int64_t shift_back(int64_t shift, int64_t size)
{
	int64_t r = shift % size;

	return r < 0 ? -r : size - r;
}

struct vnpu_at_tensor *vnpu_autograd_roll(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					  struct vnpu_at_int_array shifts,
					  struct vnpu_at_int_array dims)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_roll(vnpu_ag_below(ks), self, shifts, dims);
	int64_t numel = vnpu_at_numel(self);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("RollBackward0", roll_backward, 1, &self);
	if (!node)
		return track(out, node);
	/* the forward succeeded, so the dims are valid unless self is empty */
	if (!dims.n || !numel) {
		node->d[0] = 1;
		node->ints[0] = numel && shifts.n ? shift_back(shifts.v[0], numel) : 0;
		return track(out, node);
	}
	node->nints = self->ndim;
	for (uint32_t d = 0; d < self->ndim; d++)
		node->ints[d] = 0;
	for (int64_t k = 0; k < dims.n; k++) {
		int64_t d = vnpu_at_wrap_dim(dims.v[k], self->ndim);
		int64_t size = self->sizes[d];

		/* both terms in [0, size] */
		node->ints[d] = (node->ints[d] + shift_back(shifts.v[k], size)) % size;
	}
	return track(out, node);
}

/* x flipped, summed along dim and flipped back: sums from each line's end. */
static struct vnpu_at_tensor *reversed_cumsum(struct temps *t, struct vnpu_at_tensor *x,
					      int64_t dim)
{
	struct vnpu_at_int_array dims = { &dim, 1 };
	struct vnpu_at_tensor *f = x ? keep(t, vnpu_op_flip(x, dims)) : NULL;
	struct vnpu_at_tensor *c = f ? keep(t, vnpu_op_cumsum(f, dim, VNPU_AT_DTYPE_NONE)) : NULL;

	return c ? keep(t, vnpu_op_flip(c, dims)) : NULL;
}

/* cumsum: the gradient in self's dtype, summed from the end (PyTorch's
 * cumsum_backward). ints[0] the wrapped dim. */
static bool cumsum_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			    struct vnpu_at_tensor **in)
{
	int64_t dim = n->ints[0];
	struct temps t = { 0 };
	struct vnpu_at_tensor *gs;

	gs = g[0]->dtype == n->in_dtype[0] ? g[0] :
		keep(&t, vnpu_op__to_copy(g[0], (enum vnpu_at_dtype)n->in_dtype[0],
					  VNPU_AT_DEV_NONE, false));
	if (gs && vnpu_at_numel(gs) > 1 && gs->ndim && gs->sizes[dim] > 1)
		gs = reversed_cumsum(&t, gs, dim);
	in[0] = gs ? vnpu_at_retain(gs) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_cumsum(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					    int64_t dim, enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_cumsum(vnpu_ag_below(ks), self, dim, dtype);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for("CumsumBackward0", cumsum_backward, 1, &self);
	if (node)
		node->ints[0] = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	return track(out, node);
}

/*
 * cumprod: PyTorch's O(n) cumprod_backward, whatever the zeros, without
 * reading anything back. Along each line, with z1 the first zero of x:
 * before z1, the reversed cumsum of grad * out (cut at z1) over x; at z1,
 * the sum over [z1, z2) of grad_k times the product of x after z1 up to k,
 * times out just before z1 (1 at the start); after z1, 0.
 * saved[0] the output (detached), saved[1] x; ints[0] the wrapped dim.
 */
static bool cumprod_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			     struct vnpu_at_tensor **in)
{
	struct vnpu_at_tensor *y = n->saved[0], *x = n->saved[1];
	int64_t dim = n->ints[0], len = x->ndim ? x->sizes[dim] : 1;
	struct vnpu_at_opt_int_array dims = { true, { &dim, 1 } };
	struct temps t = { 0 };
	struct vnpu_at_tensor *gs, *zero, *cs, *m0, *m1, *first, *between, *before, *s, *ysh;

	gs = g[0]->dtype == x->dtype ? g[0] :
		keep(&t, vnpu_op__to_copy(g[0], (enum vnpu_at_dtype)x->dtype,
					  VNPU_AT_DEV_NONE, false));
	if (!gs || vnpu_at_numel(x) <= 1 || len == 1) {
		in[0] = gs ? vnpu_at_retain(gs) : NULL;
		temps_free(&t);
		return in[0] != NULL;
	}
	zero = keep(&t, vnpu_op_eq_Scalar(x, VNPU_AT_INT(0)));
	cs = zero ? keep(&t, vnpu_op_cumsum(zero, dim, VNPU_AT_DTYPE_NONE)) : NULL;
	m0 = cs ? keep(&t, vnpu_op_eq_Scalar(cs, VNPU_AT_INT(0))) : NULL;
	m1 = cs ? keep(&t, vnpu_op_eq_Scalar(cs, VNPU_AT_INT(1))) : NULL;
	/* the only zero where the count of zeros is 1 is the first */
	first = m1 ? keep(&t, vnpu_op_logical_and(m1, zero)) : NULL;
	between = first ? keep(&t, vnpu_op_logical_xor(m1, first)) : NULL;
	/* before z1: the dividing formula, exact there (no zero yet) */
	before = m0 ? keep(&t, vnpu_op_mul_Tensor(y, gs)) : NULL;
	before = before ? keep(&t, vnpu_op_masked_fill_Scalar(before,
			keep(&t, vnpu_op_logical_not(m0)), VNPU_AT_INT(0))) : NULL;
	before = reversed_cumsum(&t, before, dim);
	before = before ? keep(&t, vnpu_op_div_Tensor(before, x)) : NULL;
	before = before ? keep(&t, vnpu_op_where_self(m0, before,
			scalar_of(&t, before, 0))) : NULL;
	/* at z1 */
	s = between ? keep(&t, vnpu_op_masked_fill_Scalar(x,
			keep(&t, vnpu_op_logical_not(between)), VNPU_AT_INT(1))) : NULL;
	s = s ? keep(&t, vnpu_op_cumprod(s, dim, VNPU_AT_DTYPE_NONE)) : NULL;
	s = s ? keep(&t, vnpu_op_mul_Tensor(s, keep(&t, vnpu_op_masked_fill_Scalar(gs,
			keep(&t, vnpu_op_logical_not(m1)), VNPU_AT_INT(0))))) : NULL;
	s = s ? keep(&t, vnpu_op_sum_dim_IntList(s, dims, true, VNPU_AT_DTYPE_NONE)) : NULL;
	ysh = s ? keep(&t, vnpu_op_slice_Tensor(y, dim, (struct vnpu_at_opt_int){ true, 0 },
						(struct vnpu_at_opt_int){ true, 1 }, 1)) : NULL;
	ysh = ysh ? keep(&t, vnpu_op_ones_like(ysh, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE)) : NULL;
	if (ysh) {
		struct vnpu_at_tensor *head = keep(&t, vnpu_op_slice_Tensor(y, dim,
			(struct vnpu_at_opt_int){ true, 0 }, (struct vnpu_at_opt_int){ true, len - 1 }, 1));

		ysh = head ? keep(&t, vnpu_op_cat((struct vnpu_at_tensor_list){
			(struct vnpu_at_tensor *[]){ ysh, head }, 2 }, dim)) : NULL;
	}
	s = ysh ? keep(&t, vnpu_op_mul_Tensor(s, ysh)) : NULL;
	in[0] = s ? vnpu_op_where_self(first, s, before) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

struct vnpu_at_tensor *vnpu_autograd_cumprod(vnpu_keyset_t ks, struct vnpu_at_tensor *self,
					     int64_t dim, enum vnpu_at_dtype dtype)
{
	struct vnpu_at_tensor *out = vnpu_redispatch_cumprod(vnpu_ag_below(ks), self, dim, dtype);
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_with_output("CumprodBackward0", cumprod_backward, self, out);
	if (node)
		node->ints[0] = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);
	return track(out, node);
}

/* ---- float ufuncs: grad * f'(x), f' from x or the saved output --------------- */

/* The autograd family ufunc: its codes (enum vnpu_ag_ufunc) in autograd.h. */
#define UF_LN2 0.693147180559945309417
#define UF_LN10 2.30258509299404568402
#define UF_2_SQRTPI 1.12837916709551257390	/* 2 / sqrt(pi) */

/* 1 + s * x^2, as a new tensor. */
static struct vnpu_at_tensor *one_plus_sq(struct temps *t,
					  struct vnpu_at_tensor *x, double s)
{
	struct vnpu_at_tensor *sq = keep(t, vnpu_op_mul_Tensor(x, x));

	sq = sq && s != 1.0 ? keep(t, scale(sq, s)) : sq;
	return sq ? keep(t, vnpu_op_add_Scalar(sq, VNPU_AT_INT(1),
					      VNPU_AT_INT(1))) : NULL;
}

/* f'(x); out is the forward's result (for tan, expm1, exp2). */
static struct vnpu_at_tensor *ufunc_grad(struct temps *t, enum vnpu_ag_ufunc f,
					 struct vnpu_at_tensor *x,
					 struct vnpu_at_tensor *out)
{
	struct vnpu_at_tensor *v;

	switch (f) {
	case UF_SIN:
		return keep(t, vnpu_op_cos(x));
	case UF_COS:
		v = keep(t, vnpu_op_sin(x));
		return v ? keep(t, vnpu_op_neg(v)) : NULL;
	case UF_TAN:
		return one_plus_sq(t, out, 1.0);
	case UF_ASIN:
	case UF_ACOS:
		v = one_plus_sq(t, x, -1.0);
		v = v ? keep(t, vnpu_op_rsqrt(v)) : NULL;
		return v && f == UF_ACOS ? keep(t, vnpu_op_neg(v)) : v;
	case UF_ATAN:
		v = one_plus_sq(t, x, 1.0);
		return v ? keep(t, vnpu_op_reciprocal(v)) : NULL;
	case UF_SINH:
		return keep(t, vnpu_op_cosh(x));
	case UF_COSH:
		return keep(t, vnpu_op_sinh(x));
	case UF_ASINH:
		v = one_plus_sq(t, x, 1.0);
		return v ? keep(t, vnpu_op_rsqrt(v)) : NULL;
	case UF_ACOSH:
		v = keep(t, vnpu_op_mul_Tensor(x, x));
		v = v ? keep(t, vnpu_op_add_Scalar(v, VNPU_AT_INT(-1),
						   VNPU_AT_INT(1))) : NULL;
		return v ? keep(t, vnpu_op_rsqrt(v)) : NULL;
	case UF_ATANH:
		v = one_plus_sq(t, x, -1.0);
		return v ? keep(t, vnpu_op_reciprocal(v)) : NULL;
	case UF_LOG2:
	case UF_LOG10:
		v = keep(t, scale(x, f == UF_LOG2 ? UF_LN2 : UF_LN10));
		return v ? keep(t, vnpu_op_reciprocal(v)) : NULL;
	case UF_LOG1P:
		v = keep(t, vnpu_op_add_Scalar(x, VNPU_AT_INT(1), VNPU_AT_INT(1)));
		return v ? keep(t, vnpu_op_reciprocal(v)) : NULL;
	case UF_EXPM1:
		return keep(t, vnpu_op_add_Scalar(out, VNPU_AT_INT(1),
						  VNPU_AT_INT(1)));
	case UF_EXP2:
		return keep(t, scale(out, UF_LN2));
	case UF_ERF:
	case UF_ERFC:
		v = keep(t, vnpu_op_mul_Tensor(x, x));
		v = v ? keep(t, vnpu_op_neg(v)) : NULL;
		v = v ? keep(t, vnpu_op_exp(v)) : NULL;
		return v ? keep(t, scale(v, f == UF_ERF ? UF_2_SQRTPI :
						      -UF_2_SQRTPI)) : NULL;
	}
	return NULL;
}

static bool ufunc_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			   struct vnpu_at_tensor **in)
{
	struct temps t = { 0 };
	struct vnpu_at_tensor *x = wide(&t, n->saved[1]);
	struct vnpu_at_tensor *out = wide(&t, n->saved[0]);
	struct vnpu_at_tensor *gg = wide(&t, g[0]), *d = NULL, *p = NULL;

	if (x && out && gg)
		d = ufunc_grad(&t, (enum vnpu_ag_ufunc)n->d[0], x, out);
	if (d)
		p = keep(&t, vnpu_op_mul_Tensor(gg, d));
	/* in the output's dtype; the engine converts to the input's */
	in[0] = p ? vnpu_at_converted(vnpu_at_retain(p),
				      (enum vnpu_at_dtype)g[0]->dtype) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

/* sin, cos, ... erfc (native_functions.yaml, autograd family ufunc). */
struct vnpu_at_tensor *vnpu_autograd_family_ufunc(struct vnpu_at_tensor *out,
						  const char *node,
						  uint32_t code,
						  struct vnpu_at_tensor *self)
{
	return record_with_output(out, node, ufunc_backward, self, (double)code);
}

/* The autograd family grad_op: the gradient is one op of the output's
 * gradient and one saved tensor, the output or the input (codes: enum
 * vnpu_ag_grad_op in autograd.h). */
static const struct {
	struct vnpu_at_tensor *(*grad)(struct vnpu_at_tensor *g,
				       struct vnpu_at_tensor *saved);
	bool saves_output;
} grad_ops[] = {
	[GO_EXP] = { vnpu_op_mul_Tensor, true },	/* grad * out */
	[GO_LOG] = { vnpu_op_div_Tensor, false },	/* grad / x */
	[GO_TANH] = { vnpu_op_tanh_backward, true },
	[GO_SIGMOID] = { vnpu_op_sigmoid_backward, true },
	[GO_HARDSIGMOID] = { vnpu_op_hardsigmoid_backward, false },
	[GO_HARDSWISH] = { vnpu_op_hardswish_backward, false },
};

static bool grad_op_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			     struct vnpu_at_tensor **in)
{
	in[0] = grad_ops[(uint32_t)n->d[0]].grad(g[0], n->saved[0]);
	return in[0] != NULL;
}

/* native_functions.yaml's autograd family grad_op */
struct vnpu_at_tensor *vnpu_autograd_family_grad_op(struct vnpu_at_tensor *out,
						    const char *node,
						    uint32_t code,
						    struct vnpu_at_tensor *self)
{
	if (grad_ops[code].saves_output)
		return record_with_output(out, node, grad_op_backward, self,
					  (double)code);
	return record(out, node, grad_op_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, true, (double)code);
}

/* floor, ceil, trunc, round, sign: a zero gradient */
static bool zero_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	(void)n;
	in[0] = vnpu_op_zeros_like(g[0], VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE);
	return in[0] != NULL;
}

/* native_functions.yaml's autograd family zero */
struct vnpu_at_tensor *vnpu_autograd_family_zero(struct vnpu_at_tensor *out,
						 const char *node,
						 struct vnpu_at_tensor *self)
{
	return record(out, node, zero_backward, 1,
		      (struct vnpu_at_tensor *[]){ self }, false, 0);
}

/* v, with 0 where cond holds. */
static struct vnpu_at_tensor *where_zero(struct temps *t,
					 struct vnpu_at_tensor *cond,
					 struct vnpu_at_tensor *v)
{
	struct vnpu_at_tensor *z = keep(t, vnpu_op_zeros_like(v, VNPU_AT_DTYPE_NONE,
							      VNPU_AT_DEV_NONE));

	return cond && z ? keep(t, vnpu_op_where_self(cond, z, v)) : NULL;
}

/* hypot: grad * a / r, grad * b / r with r = hypot(a, b); logaddexp:
 * grad / (1 + exp(b - a)), grad / (1 + exp(a - b)); xlogy: xlogy(grad, b),
 * 0 where a == 0 and b <= 0, and grad * a / b: PyTorch's formulas, in f32
 * for f16/bf16. False when an op failed. */
static bool binary_float_grads(struct temps *t, enum vnpu_ag_binary_grad f, struct vnpu_at_tensor *gg,
			       struct vnpu_at_tensor *a, struct vnpu_at_tensor *b,
			       struct vnpu_at_tensor **ga, struct vnpu_at_tensor **gb)
{
	struct vnpu_at_tensor *r, *d;

	switch (f) {
	case BG_HYPOT:
		r = keep(t, vnpu_op_hypot(a, b));
		*ga = r ? keep(t, vnpu_op_mul_Tensor(gg, a)) : NULL;
		*ga = *ga ? keep(t, vnpu_op_div_Tensor(*ga, r)) : NULL;
		*gb = r ? keep(t, vnpu_op_mul_Tensor(gg, b)) : NULL;
		*gb = *gb ? keep(t, vnpu_op_div_Tensor(*gb, r)) : NULL;
		break;
	case BG_LOGADDEXP:
		for (int i = 0; i < 2; i++) {
			struct vnpu_at_tensor **out = i ? gb : ga;

			d = keep(t, vnpu_op_sub_Tensor(i ? a : b, i ? b : a, VNPU_AT_INT(1)));
			d = d ? keep(t, vnpu_op_exp(d)) : NULL;
			d = d ? keep(t, vnpu_op_add_Scalar(d, VNPU_AT_INT(1), VNPU_AT_INT(1))) : NULL;
			*out = d ? keep(t, vnpu_op_div_Tensor(gg, d)) : NULL;
		}
		break;
	default: {	/* BG_XLOGY */
		struct vnpu_at_tensor *az = keep(t, vnpu_op_eq_Scalar(a, VNPU_AT_INT(0)));
		struct vnpu_at_tensor *bn = keep(t, vnpu_op_le_Scalar(b, VNPU_AT_INT(0)));
		struct vnpu_at_tensor *both = az && bn ? keep(t, vnpu_op_logical_and(az, bn)) : NULL;
		struct vnpu_at_tensor *x = both ? keep(t, vnpu_op_xlogy_Tensor(gg, b)) : NULL;
		struct vnpu_at_tensor *z = x ? keep(t, vnpu_op_zeros_like(x, VNPU_AT_DTYPE_NONE,
									VNPU_AT_DEV_NONE)) : NULL;

		*ga = z ? keep(t, vnpu_op_where_self(both, z, x)) : NULL;
		*gb = keep(t, vnpu_op_mul_Tensor(gg, a));
		*gb = *gb ? keep(t, vnpu_op_div_Tensor(*gb, b)) : NULL;
		break;
	}
	}
	return *ga && *gb;
}

/*
 * atan2(a, b): grad * b * r, grad * -a * r with r = 1 / (a^2 + b^2), in
 * PyTorch's order, r = 0 where a^2 + b^2 is 0 (PyTorch gives a zero
 * gradient at the origin);
 * remainder and fmod: grad, -grad * (a // b) (floor or trunc); each
 * reduced to its input's shape and rounded once; hypot, logaddexp and
 * xlogy by binary_float_grads.
 */
static bool binary_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			    struct vnpu_at_tensor **in)
{
	struct temps t = { 0 };
	struct vnpu_at_tensor *gg = wide(&t, g[0]), *a = wide(&t, n->saved[0]);
	struct vnpu_at_tensor *b = wide(&t, n->saved[1]), *ga = NULL, *gb = NULL;
	struct vnpu_at_tensor *den = NULL, *q = NULL;
	enum vnpu_ag_binary_grad f = (enum vnpu_ag_binary_grad)n->d[0];
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)g[0]->dtype;

	if (gg && a && b && f == BG_ATAN2) {
		struct vnpu_at_tensor *a2 = keep(&t, vnpu_op_mul_Tensor(a, a));
		struct vnpu_at_tensor *b2 = keep(&t, vnpu_op_mul_Tensor(b, b));

		struct vnpu_at_tensor *na = keep(&t, vnpu_op_neg(a));

		den = a2 && b2 ? keep(&t, vnpu_op_add_Tensor(a2, b2, VNPU_AT_INT(1))) :
				 NULL;
		q = den ? keep(&t, vnpu_op_reciprocal(den)) : NULL;
		q = q ? zero_where_zero(&t, q, den) : NULL;
		ga = q ? keep(&t, vnpu_op_mul_Tensor(gg, b)) : NULL;
		ga = ga ? keep(&t, vnpu_op_mul_Tensor(ga, q)) : NULL;
		gb = q && na ? keep(&t, vnpu_op_mul_Tensor(gg, na)) : NULL;
		gb = gb ? keep(&t, vnpu_op_mul_Tensor(gb, q)) : NULL;
	} else if (gg && a && b && f >= BG_HYPOT) {
		binary_float_grads(&t, f, gg, a, b, &ga, &gb);
	} else if (gg && a && b) {
		ga = gg;
		q = f == BG_REMAINDER ? keep(&t, vnpu_op_floor_divide(a, b)) :
			keep(&t, vnpu_op_div_Tensor(a, b));
		q = q && f == BG_FMOD ? keep(&t, vnpu_op_trunc(q)) : q;
		gb = q ? keep(&t, vnpu_op_mul_Tensor(gg, q)) : NULL;
		gb = gb ? keep(&t, vnpu_op_neg(gb)) : NULL;
	}
	if (ga && wants(n, 0))
		in[0] = vnpu_at_converted(sum_to_input(ga, n, 0), dt);
	if (gb && wants(n, 1))
		in[1] = vnpu_at_converted(sum_to_input(gb, n, 1), dt);
	temps_free(&t);
	return (!wants(n, 0) || in[0]) && (!wants(n, 1) || in[1]);
}

/* atan2, hypot, logaddexp, xlogy, remainder, fmod (native_functions.yaml,
 * autograd family binary). */
struct vnpu_at_tensor *vnpu_autograd_family_binary(struct vnpu_at_tensor *out,
						   const char *node,
						   uint32_t code,
						   struct vnpu_at_tensor *self,
						   struct vnpu_at_tensor *other)
{
	return record(out, node, binary_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, true, code);
}

/*
 * pow(a, b): grad * b * a^(b - 1), 0 where b == 0; grad * out * log(a),
 * 0 where a == 0 and b >= 0 (PyTorch's pow_backward_self/_exponent).
 * copysign(a, b): grad * out / a, 0 where a == 0; b gets zeros.
 */
static bool pow_tensor_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
				struct vnpu_at_tensor **in)
{
	struct temps t = { 0 };
	struct vnpu_at_tensor *gg = wide(&t, g[0]), *a = wide(&t, n->saved[0]);
	struct vnpu_at_tensor *b = wide(&t, n->saved[1]), *v, *c;
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)g[0]->dtype;

	if (gg && a && b && wants(n, 0)) {
		v = keep(&t, vnpu_op_add_Scalar(b, VNPU_AT_INT(-1), VNPU_AT_INT(1)));
		v = v ? keep(&t, vnpu_op_pow_Tensor_Tensor(a, v)) : NULL;
		v = v ? keep(&t, vnpu_op_mul_Tensor(v, b)) : NULL;
		v = v ? keep(&t, vnpu_op_mul_Tensor(v, gg)) : NULL;
		c = v ? keep(&t, vnpu_op_eq_Scalar(b, VNPU_AT_INT(0))) : NULL;
		v = where_zero(&t, c, v);
		in[0] = v ? vnpu_at_converted(sum_to_input(v, n, 0), dt) : NULL;
	}
	if (gg && a && b && wants(n, 1)) {
		struct vnpu_at_tensor *out = keep(&t, vnpu_op_pow_Tensor_Tensor(a, b));
		struct vnpu_at_tensor *az, *bp;

		v = keep(&t, vnpu_op_log(a));
		v = v && out ? keep(&t, vnpu_op_mul_Tensor(out, v)) : NULL;
		az = keep(&t, vnpu_op_eq_Scalar(a, VNPU_AT_INT(0)));
		bp = keep(&t, vnpu_op_ge_Scalar(b, VNPU_AT_INT(0)));
		c = az && bp ? keep(&t, vnpu_op_logical_and(az, bp)) : NULL;
		v = v ? where_zero(&t, c, v) : NULL;
		v = v ? keep(&t, vnpu_op_mul_Tensor(gg, v)) : NULL;
		in[1] = v ? vnpu_at_converted(sum_to_input(v, n, 1), dt) : NULL;
	}
	temps_free(&t);
	return (!wants(n, 0) || in[0]) && (!wants(n, 1) || in[1]);
}

struct vnpu_at_tensor *vnpu_autograd_pow_Tensor_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *exponent)
{
	return record(vnpu_redispatch_pow_Tensor_Tensor(vnpu_ag_below(ks), self,
							exponent),
		      "PowBackward1", pow_tensor_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, exponent }, true, 0);
}

static bool copysign_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			      struct vnpu_at_tensor **in)
{
	struct temps t = { 0 };
	struct vnpu_at_tensor *gg = wide(&t, g[0]), *a = wide(&t, n->saved[0]);
	struct vnpu_at_tensor *b = wide(&t, n->saved[1]), *v = NULL, *c;
	enum vnpu_at_dtype dt = (enum vnpu_at_dtype)g[0]->dtype;

	if (gg && a && b && wants(n, 0)) {
		v = keep(&t, vnpu_op_copysign_Tensor(a, b));
		v = v ? keep(&t, vnpu_op_div_Tensor(v, a)) : NULL;
		c = v ? keep(&t, vnpu_op_eq_Scalar(a, VNPU_AT_INT(0))) : NULL;
		v = v ? where_zero(&t, c, v) : NULL;
		v = v ? keep(&t, vnpu_op_mul_Tensor(gg, v)) : NULL;
		in[0] = v ? vnpu_at_converted(sum_to_input(v, n, 0), dt) : NULL;
	}
	if (wants(n, 1)) {
		in[1] = vnpu_op_zeros_like(n->saved[1], VNPU_AT_DTYPE_NONE,
					   VNPU_AT_DEV_NONE);
	}
	temps_free(&t);
	return (!wants(n, 0) || in[0]) && (!wants(n, 1) || in[1]);
}

struct vnpu_at_tensor *vnpu_autograd_copysign_Tensor(vnpu_keyset_t ks, struct vnpu_at_tensor *self, struct vnpu_at_tensor *other)
{
	return record(vnpu_redispatch_copysign_Tensor(vnpu_ag_below(ks), self,
						      other),
		      "CopysignBackward0", copysign_backward, 2,
		      (struct vnpu_at_tensor *[]){ self, other }, true, 0);
}

/*
 * prod: per reduced slice, grad * (result / x) when the slice has no zero;
 * with one zero, grad * (the product of the others) at the zero and 0
 * elsewhere; with more, 0 (PyTorch's prod_backward). ints[0] is the dim,
 * -1 for all; ints[1] keepdim.
 */
static bool prod_backward(struct vnpu_ag_node *n, struct vnpu_at_tensor **g,
			  struct vnpu_at_tensor **in)
{
	struct temps t = { 0 };
	struct vnpu_at_tensor *x = wide(&t, n->saved[0]), *gg = wide(&t, g[0]);
	struct vnpu_at_tensor *z = NULL, *one, *xnz = NULL, *p = NULL, *cnt = NULL;
	struct vnpu_at_tensor *q, *none = NULL, *only = NULL, *at0, *r = NULL;
	int64_t d = n->ints[0];

	if (x && gg && d >= 0 && !n->ints[1])
		gg = keep(&t, vnpu_op_unsqueeze(gg, d));
	z = x && gg ? keep(&t, vnpu_op_eq_Scalar(x, VNPU_AT_INT(0))) : NULL;
	one = z ? keep(&t, vnpu_at_scalar_tensor(VNPU_AT_INT(1), x->dtype,
						 vnpu_at_device_of(x))) : NULL;
	xnz = one ? keep(&t, vnpu_op_where_self(z, one, x)) : NULL;
	if (xnz && d < 0) {
		p = keep(&t, vnpu_op_prod(xnz, VNPU_AT_DTYPE_NONE));
		cnt = keep(&t, vnpu_op_sum(z, VNPU_AT_DTYPE_NONE));
	} else if (xnz) {
		p = keep(&t, vnpu_op_prod_dim_int(xnz, d, true, VNPU_AT_DTYPE_NONE));
		cnt = keep(&t, vnpu_op_sum_dim_IntList(z, (struct vnpu_at_opt_int_array){
				true, { &d, 1 } }, true, VNPU_AT_DTYPE_NONE));
	}
	/* no zero: grad * (result / x), result being p */
	q = p && cnt ? keep(&t, vnpu_op_div_Tensor(p, x)) : NULL;
	q = q ? keep(&t, vnpu_op_mul_Tensor(gg, q)) : NULL;
	none = q ? keep(&t, vnpu_op_eq_Scalar(cnt, VNPU_AT_INT(0))) : NULL;
	only = none ? keep(&t, vnpu_op_eq_Scalar(cnt, VNPU_AT_INT(1))) : NULL;
	only = only ? keep(&t, vnpu_op_logical_and(only, z)) : NULL;
	at0 = only ? keep(&t, vnpu_op_mul_Tensor(gg, p)) : NULL;
	at0 = at0 ? where_zero(&t, keep(&t, vnpu_op_logical_not(only)), at0) : NULL;
	if (at0)
		r = keep(&t, vnpu_op_where_self(none, q, at0));
	/* broadcast to the input's shape (a 0-dim result reaches every slice) */
	r = r ? keep(&t, vnpu_op_expand(r, saved_shape(n, 0), false)) : NULL;
	in[0] = r ? vnpu_at_converted(vnpu_op_contiguous(r),
				      (enum vnpu_at_dtype)g[0]->dtype) : NULL;
	temps_free(&t);
	return in[0] != NULL;
}

static struct vnpu_at_tensor *record_prod(struct vnpu_at_tensor *out,
					  const char *name,
					  struct vnpu_at_tensor *self,
					  int64_t dim, bool keepdim)
{
	struct vnpu_ag_node *node;

	if (!out || !vnpu_ag_needed(1, &self))
		return out;
	node = node_for(name, prod_backward, 1, &self);
	if (node) {
		save_shape(node, 0, self);
		vnpu_ag_save(node, 0, self);
		node->ints[0] = dim < 0 ? -1 :
				self->ndim ? vnpu_at_wrap_dim(dim, self->ndim) : -1;
		node->ints[1] = keepdim;
	}
	return track(out, node);
}

struct vnpu_at_tensor *vnpu_autograd_prod(vnpu_keyset_t ks, struct vnpu_at_tensor *self, enum vnpu_at_dtype dtype)
{
	return record_prod(vnpu_redispatch_prod(vnpu_ag_below(ks), self, dtype),
			   "ProdBackward0", self, -1, false);
}

struct vnpu_at_tensor *vnpu_autograd_prod_dim_int(vnpu_keyset_t ks, struct vnpu_at_tensor *self, int64_t dim, bool keepdim, enum vnpu_at_dtype dtype)
{
	int64_t d = vnpu_at_wrap_dim(dim, self->ndim ? self->ndim : 1);

	/* a bad dim: the kernel below words the error */
	return record_prod(vnpu_redispatch_prod_dim_int(vnpu_ag_below(ks), self, dim,
							keepdim, dtype),
			   "ProdBackward1", self, d < 0 ? 0 : d, keepdim);
}
