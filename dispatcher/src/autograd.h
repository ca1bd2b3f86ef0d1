/* SPDX-License-Identifier: MIT */
/* The autograd tape: nodes, edges, and the helpers autograd kernels use. */
#ifndef VNPU_AUTOGRAD_H
#define VNPU_AUTOGRAD_H

#include "dispatch_internal.h"

#define VNPU_AG_MAX_IO 4

/* The codes of the autograd family ufunc (native_functions.yaml): the
 * derivatives of PyTorch's derivatives.yaml, computed in float32 for
 * float16/bfloat16 and rounded once (autograd_ops.c). */
enum vnpu_ag_ufunc {
	UF_SIN, UF_COS, UF_TAN, UF_ASIN, UF_ACOS, UF_ATAN, UF_SINH, UF_COSH,
	UF_ASINH, UF_ACOSH, UF_ATANH, UF_LOG2, UF_LOG10, UF_LOG1P, UF_EXPM1,
	UF_EXP2, UF_ERF, UF_ERFC,
};

/* The codes of the autograd family grad_op (native_functions.yaml). */
enum vnpu_ag_grad_op {
	GO_EXP, GO_LOG, GO_TANH, GO_SIGMOID, GO_HARDSIGMOID, GO_HARDSWISH,
};

/* The codes of the autograd family binary (native_functions.yaml). */
enum vnpu_ag_binary_grad {
	BG_ATAN2, BG_REMAINDER, BG_FMOD, BG_HYPOT, BG_LOGADDEXP, BG_XLOGY,
};


struct vnpu_ag_node;
/* grads[i] is the gradient of output i (NULL: zero); writes the gradient
 * of input j into in[j] (new reference, or NULL for none). */
typedef bool (*vnpu_ag_backward_fn)(struct vnpu_ag_node *n,
				    struct vnpu_at_tensor **grads,
				    struct vnpu_at_tensor **in);

struct vnpu_ag_edge {
	struct vnpu_ag_node *fn;	/* retained; NULL for a leaf or none */
	struct vnpu_at_tensor *leaf;	/* retained leaf requiring grad */
	uint32_t nr;			/* output number of fn */
};

struct vnpu_ag_node {
	int refcount;
	const char *name;
	vnpu_ag_backward_fn backward;
	uint64_t seq;
	uint32_t n_in, n_out;
	struct vnpu_ag_edge next[VNPU_AG_MAX_IO];
	struct vnpu_at_tensor *saved[VNPU_AG_MAX_IO];	/* inputs only */
	int8_t in_dtype[VNPU_AG_MAX_IO];	/* each input's gradient dtype */
	int64_t ints[VNPU_AT_MAX_DIMS * 2];
	uint32_t nints;
	/* the shapes of inputs 0 and 1, for reducing or reshaping gradients */
	int64_t shape[2][VNPU_AT_MAX_DIMS];
	uint8_t shape_ndim[2];
	double d[2];
	int8_t dtype;
	struct vnpu_at_device device;
	struct vnpu_at_tensor *acc[VNPU_AG_MAX_IO];	/* during backward */
	/* a Tensor?[] argument (advanced indexing), NULL entries kept */
	struct vnpu_at_tensor *saved_list[VNPU_AT_MAX_DIMS];
	uint32_t saved_list_n;
};

struct vnpu_autograd_meta {
	bool requires_grad;
	struct vnpu_at_tensor *grad;
	struct vnpu_ag_node *grad_fn;
	uint32_t output_nr;
};

/* Whether a call with these inputs must be recorded (grad mode on and an
 * input requires grad). */
bool vnpu_ag_needed(uint32_t n, struct vnpu_at_tensor *const *inputs);
/* A node whose inputs are `inputs` (NULL entries: no gradient). */
struct vnpu_ag_node *vnpu_ag_node_new(const char *name, vnpu_ag_backward_fn fn,
				      uint32_t n, struct vnpu_at_tensor *const *inputs,
				      uint32_t n_out);
/* Saves an input (retained) in slot i. */
void vnpu_ag_save(struct vnpu_ag_node *n, uint32_t i, struct vnpu_at_tensor *t);
/* Saves a tensor list (retained entries, NULLs kept; at most
 * VNPU_AT_MAX_DIMS, which no Tensor?[] of indices exceeds). */
bool vnpu_ag_save_list(struct vnpu_ag_node *n, struct vnpu_at_tensor_list l);
/* Makes out the output nr of node (sets requires_grad and the key). */
bool vnpu_ag_set_output(struct vnpu_at_tensor *out, struct vnpu_ag_node *n,
			uint32_t nr);
void vnpu_ag_node_release(struct vnpu_ag_node *n);
/* Key set below autograd for a redispatch from an autograd kernel. */
static inline vnpu_keyset_t vnpu_ag_below(vnpu_keyset_t ks)
{
	return ks & vnpu_keyset_after(VNPU_FUNC_AUTOGRAD);
}
/* grad reduced to sizes (sum over broadcast dims), new reference. */
struct vnpu_at_tensor *vnpu_ag_sum_to(struct vnpu_at_tensor *grad,
				      uint32_t ndim, const int64_t *sizes);

#endif /* VNPU_AUTOGRAD_H */
