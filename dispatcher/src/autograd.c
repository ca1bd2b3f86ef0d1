// SPDX-License-Identifier: MIT
/* Reverse-mode autograd: the tape of nodes recorded by autograd kernels,
 * backward() on a scalar loss, and the fallback for ops without an
 * autograd kernel. */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"

static _Atomic uint64_t node_seq;

static struct vnpu_autograd_meta *meta_of(struct vnpu_at_tensor *t)
{
	if (!t->autograd)
		t->autograd = calloc(1, sizeof(*t->autograd));
	return t->autograd;
}

void vnpu_ag_node_release(struct vnpu_ag_node *n)
{
	if (!n || __atomic_sub_fetch(&n->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	for (uint32_t i = 0; i < VNPU_AG_MAX_IO; i++) {
		vnpu_ag_node_release(n->next[i].fn);
		vnpu_at_release(n->next[i].leaf);
		vnpu_at_release(n->saved[i]);
		vnpu_at_release(n->acc[i]);
	}
	for (uint32_t i = 0; i < n->saved_list_n; i++)
		vnpu_at_release(n->saved_list[i]);
	free(n);
}

void vnpu_autograd_meta_free(struct vnpu_autograd_meta *m)
{
	if (!m)
		return;
	vnpu_at_release(m->grad);
	vnpu_ag_node_release(m->grad_fn);
	free(m);
}

bool vnpu_at_set_requires_grad(struct vnpu_at_tensor *t, bool on)
{
	struct vnpu_autograd_meta *m;

	if (on && !vnpu_at_dtype_is_float((enum vnpu_at_dtype)t->dtype)) {
		vnpu_at_error_set(VNPU_AT_ERR_AUTOGRAD,
				  "only Tensors of floating point dtype can require gradients");
		return false;
	}
	if (t->autograd && t->autograd->grad_fn && !on) {
		vnpu_at_error_set(VNPU_AT_ERR_AUTOGRAD,
				  "you can only change requires_grad flags of leaf variables");
		return false;
	}
	m = meta_of(t);
	if (!m) {
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "out of memory");
		return false;
	}
	m->requires_grad = on;
	if (on)
		t->keys |= VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD);
	else
		t->keys &= ~VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD);
	return true;
}

bool vnpu_at_requires_grad(const struct vnpu_at_tensor *t)
{
	return t && t->autograd && t->autograd->requires_grad;
}

struct vnpu_at_tensor *vnpu_at_grad(const struct vnpu_at_tensor *t)
{
	return t->autograd ? t->autograd->grad : NULL;
}

void vnpu_at_zero_grad(struct vnpu_at_tensor *t)
{
	if (t->autograd) {
		vnpu_at_release(t->autograd->grad);
		t->autograd->grad = NULL;
	}
}

const char *vnpu_at_grad_fn_name(const struct vnpu_at_tensor *t)
{
	return t->autograd && t->autograd->grad_fn ? t->autograd->grad_fn->name
						   : NULL;
}

bool vnpu_ag_needed(uint32_t n, struct vnpu_at_tensor *const *inputs)
{
	if (vnpu_tls.excluded & VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD))
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (vnpu_at_requires_grad(inputs[i]))
			return true;
	return false;
}

struct vnpu_ag_node *vnpu_ag_node_new(const char *name, vnpu_ag_backward_fn fn,
				      uint32_t n, struct vnpu_at_tensor *const *inputs,
				      uint32_t n_out)
{
	struct vnpu_ag_node *node = calloc(1, sizeof(*node));

	if (!node)
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "autograd: out of memory");
	node->refcount = 1;
	node->name = name;
	node->backward = fn;
	node->seq = atomic_fetch_add(&node_seq, 1);
	node->n_in = n;
	node->n_out = n_out;
	for (uint32_t i = 0; i < n; i++) {
		struct vnpu_at_tensor *t = inputs[i];

		if (!vnpu_at_requires_grad(t))
			continue;
		node->in_dtype[i] = t->dtype;
		if (t->autograd->grad_fn) {
			node->next[i].fn = t->autograd->grad_fn;
			__atomic_add_fetch(&node->next[i].fn->refcount, 1,
					   __ATOMIC_RELAXED);
			node->next[i].nr = t->autograd->output_nr;
		} else {
			node->next[i].leaf = vnpu_at_retain(t);
		}
	}
	return node;
}

void vnpu_ag_save(struct vnpu_ag_node *n, uint32_t i, struct vnpu_at_tensor *t)
{
	vnpu_at_release(n->saved[i]);
	n->saved[i] = t ? vnpu_at_retain(t) : NULL;
}

bool vnpu_ag_save_list(struct vnpu_ag_node *n, struct vnpu_at_tensor_list l)
{
	if (l.n < 0 || l.n > VNPU_AT_MAX_DIMS) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "autograd: cannot save a list of %lld tensors",
				  (long long)l.n);
		return false;
	}
	for (uint32_t i = 0; i < n->saved_list_n; i++)
		vnpu_at_release(n->saved_list[i]);
	for (int64_t i = 0; i < l.n; i++)
		n->saved_list[i] = l.v[i] ? vnpu_at_retain(l.v[i]) : NULL;
	n->saved_list_n = (uint32_t)l.n;
	return true;
}

bool vnpu_ag_set_output(struct vnpu_at_tensor *out, struct vnpu_ag_node *n,
			uint32_t nr)
{
	struct vnpu_autograd_meta *m;

	if (!vnpu_at_dtype_is_float((enum vnpu_at_dtype)out->dtype))
		return true;	/* integer outputs are not differentiable */
	m = meta_of(out);
	if (!m) {
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "autograd: out of memory");
		return false;
	}
	vnpu_ag_node_release(m->grad_fn);
	__atomic_add_fetch(&n->refcount, 1, __ATOMIC_RELAXED);
	m->grad_fn = n;
	m->output_nr = nr;
	m->requires_grad = true;
	out->keys |= VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD);
	return true;
}

static struct vnpu_at_tensor *accumulate(struct vnpu_at_tensor *acc,
					 struct vnpu_at_tensor *g)
{
	struct vnpu_at_tensor *sum;

	if (!acc)
		return vnpu_at_retain(g);
	sum = vnpu_op_add_Tensor(acc, g, VNPU_AT_INT(1));
	vnpu_at_release(acc);
	return sum;
}

struct vnpu_at_tensor *vnpu_ag_sum_to(struct vnpu_at_tensor *grad,
				      uint32_t ndim, const int64_t *sizes)
{
	int64_t dims[VNPU_AT_MAX_DIMS];
	uint32_t nd = 0, lead = grad->ndim - ndim;
	struct vnpu_at_tensor *s, *v;

	if (grad->ndim < ndim)
		return vnpu_at_error_set(VNPU_AT_ERR_AUTOGRAD,
					 "autograd: gradient has fewer dims than its input");
	for (uint32_t i = 0; i < grad->ndim; i++)
		if (i < lead || (sizes[i - lead] == 1 && grad->sizes[i] != 1))
			dims[nd++] = i;
	if (!nd)
		return vnpu_at_retain(grad);
	s = vnpu_op_sum_dim_IntList(grad, (struct vnpu_at_opt_int_array){
		true, { dims, nd } }, true, VNPU_AT_DTYPE_NONE);
	if (!s)
		return NULL;
	v = vnpu_op_view(s, (struct vnpu_at_int_array){ sizes, ndim });
	vnpu_at_release(s);
	return v;
}

static int by_seq_desc(const void *a, const void *b)
{
	const struct vnpu_ag_node *x = *(struct vnpu_ag_node *const *)a;
	const struct vnpu_ag_node *y = *(struct vnpu_ag_node *const *)b;

	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

bool vnpu_at_backward(struct vnpu_at_tensor *loss)
{
	struct vnpu_ag_node **nodes = NULL, **todo = NULL;
	size_t nn = 0, cap = 0, ntodo = 0;
	struct vnpu_tls_guard g;
	struct vnpu_at_tensor *seed;
	bool ok = false;

	if (!vnpu_at_requires_grad(loss))
		return vnpu_at_error_set(VNPU_AT_ERR_AUTOGRAD,
					 "element 0 of tensors does not require grad and does not have a grad_fn"),
		       false;
	if (vnpu_at_numel(loss) != 1)
		return vnpu_at_error_set(VNPU_AT_ERR_AUTOGRAD,
					 "grad can be implicitly created only for scalar outputs"),
		       false;
	vnpu_no_grad_begin(&g);
	seed = vnpu_op_ones_like(loss, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_NONE);
	if (!seed)
		goto out;
	if (!loss->autograd->grad_fn) {	/* the loss is a leaf */
		loss->autograd->grad = accumulate(loss->autograd->grad, seed);
		vnpu_at_release(seed);
		ok = loss->autograd->grad != NULL;
		goto out;
	}
	/* every node reachable from the loss, by DFS; each once */
	todo = malloc(sizeof(*todo));
	if (!todo)
		goto out;
	todo[ntodo++] = loss->autograd->grad_fn;
	while (ntodo) {
		struct vnpu_ag_node *n = todo[--ntodo];
		bool seen = false;

		for (size_t i = 0; i < nn && !seen; i++)
			seen = nodes[i] == n;
		if (seen)
			continue;
		if (nn == cap) {
			struct vnpu_ag_node **nv = realloc(nodes, (cap = cap ? 2 * cap : 64) * sizeof(*nv));

			if (!nv)
				goto out;
			nodes = nv;
		}
		nodes[nn++] = n;
		{
			struct vnpu_ag_node **nt = realloc(todo, (ntodo + VNPU_AG_MAX_IO + 1) * sizeof(*nt));

			if (!nt)
				goto out;
			todo = nt;
		}
		for (uint32_t i = 0; i < n->n_in; i++)
			if (n->next[i].fn)
				todo[ntodo++] = n->next[i].fn;
	}
	/* a node runs after every node created later: its consumers */
	qsort(nodes, nn, sizeof(*nodes), by_seq_desc);
	loss->autograd->grad_fn->acc[loss->autograd->output_nr] = seed;
	for (size_t k = 0; k < nn; k++) {
		struct vnpu_ag_node *n = nodes[k];
		struct vnpu_at_tensor *in[VNPU_AG_MAX_IO] = { 0 };
		bool any = false;

		for (uint32_t i = 0; i < n->n_out; i++)
			any |= n->acc[i] != NULL;
		if (!any)
			continue;
		if (!n->backward(n, n->acc, in)) {
			for (uint32_t i = 0; i < VNPU_AG_MAX_IO; i++)
				vnpu_at_release(in[i]);
			goto out;
		}
		for (uint32_t i = 0; i < n->n_out; i++) {
			vnpu_at_release(n->acc[i]);
			n->acc[i] = NULL;
		}
		for (uint32_t i = 0; i < n->n_in; i++) {
			struct vnpu_ag_edge *e = &n->next[i];

			if (!in[i])
				continue;
			/* a gradient has its input's dtype (PyTorch's
			 * validate_outputs): a bf16 leaf of an f32
			 * computation gets a bf16 .grad */
			if (in[i]->dtype != n->in_dtype[i] && (e->fn || e->leaf)) {
				struct vnpu_at_tensor *c = vnpu_op__to_copy(
					in[i], (enum vnpu_at_dtype)n->in_dtype[i],
					VNPU_AT_DEV_NONE, false);

				vnpu_at_release(in[i]);
				in[i] = c;
				if (!c)
					goto fail_in;
			}
			if (e->fn) {
				e->fn->acc[e->nr] = accumulate(e->fn->acc[e->nr], in[i]);
				if (!e->fn->acc[e->nr])
					goto fail_in;
			} else if (e->leaf) {
				struct vnpu_autograd_meta *m = e->leaf->autograd;

				m->grad = accumulate(m->grad, in[i]);
				if (!m->grad)
					goto fail_in;
			}
			vnpu_at_release(in[i]);
			in[i] = NULL;
			continue;
fail_in:
			for (uint32_t j = 0; j < VNPU_AG_MAX_IO; j++)
				vnpu_at_release(in[j]);
			goto out;
		}
	}
	ok = true;
out:
	for (size_t k = 0; k < nn; k++)
		for (uint32_t i = 0; i < VNPU_AG_MAX_IO; i++) {
			vnpu_at_release(nodes[k]->acc[i]);
			nodes[k]->acc[i] = NULL;
		}
	free(nodes);
	free(todo);
	vnpu_tls_guard_end(&g);
	return ok;
}

/* ---- ops without an autograd kernel ----------------------------------------- */

static bool not_implemented_backward(struct vnpu_ag_node *n,
				     struct vnpu_at_tensor **grads,
				     struct vnpu_at_tensor **in)
{
	vnpu_at_error_set(VNPU_AT_ERR_AUTOGRAD,
			  "the derivative for '%s' is not implemented", n->name);
	return false;
}

void vnpu_autograd_fallback(const struct vnpu_op *op, vnpu_keyset_t ks,
			    struct vnpu_stack *stack)
{
	struct vnpu_at_tensor *inputs[VNPU_AG_MAX_IO];
	uint32_t n = 0, base, nr = op->nrets;
	bool needed = false;
	struct vnpu_ag_node *node;

	if (!vnpu_stack_has(op, stack, op->nargs))
		return;
	base = (uint32_t)(stack->size - op->nargs);
	for (uint32_t i = 0; i < op->nargs; i++) {
		struct vnpu_ivalue *v = &stack->v[base + i];

		if (v->tag != VNPU_IV_TENSOR || !vnpu_at_requires_grad(v->t))
			continue;
		needed = true;
		if (op->schema->args[i].is_write && !v->t->autograd->grad_fn) {
			vnpu_at_error_set(VNPU_AT_ERR_AUTOGRAD,
					  "%s: a leaf Variable that requires grad is being used in an in-place operation.",
					  op->name);
			return;
		}
		if (n < VNPU_AG_MAX_IO)
			inputs[n++] = v->t;
	}
	if (!vnpu_redispatch_boxed(op, vnpu_ag_below(ks), stack) || !needed)
		return;
	if (vnpu_tls.excluded & VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD))
		return;
	node = vnpu_ag_node_new(op->name, not_implemented_backward, n, inputs, nr);
	if (!node)
		return;
	for (uint32_t r = 0; r < nr && r < VNPU_AG_MAX_IO; r++) {
		struct vnpu_ivalue *v = &stack->v[stack->size - nr + r];

		if (v->tag == VNPU_IV_TENSOR && !op->schema->rets[r].is_write)
			vnpu_ag_set_output(v->t, node, r);
	}
	vnpu_ag_node_release(node);
}
