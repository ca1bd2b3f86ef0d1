// SPDX-License-Identifier: MIT
/*
 * The C dispatcher's boxed call, flattened for ctypes (vnpu_c.py), so that
 * the OpInfo harness judges the C front end by the same samples as
 * torch_vnpu. Tensors are opaque handles (struct vnpu_at_tensor *, one
 * reference each); a call's stack is built argument by argument and holds
 * the returns after it. Test-only: nothing here is installed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boxed_call.h"
#include "vnpu_schema.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT void bc_init(void)
{
	vnpu_dispatch_init();
}

EXPORT const char *bc_error(void)
{
	return vnpu_at_error_message();
}

/* ---- tensors ------------------------------------------------------ */

static struct vnpu_at_device device(int type, int index)
{
	return type == VNPU_AT_NPU ? VNPU_AT_DEV_NPU(index) : VNPU_AT_DEV_CPU;
}

/* A tensor on (type, index) whose storage holds the nelem elements at
 * bytes, viewed with sizes/strides/offset: the same geometry as the
 * PyTorch tensor it comes from, views and overlaps included. */
EXPORT struct vnpu_at_tensor *bc_tensor(int dtype, int type, int index,
					const void *bytes, int64_t nelem,
					uint32_t ndim, const int64_t *sizes,
					const int64_t *strides, int64_t offset)
{
	int64_t n = nelem > 0 ? nelem : 0;
	struct vnpu_at_tensor *host, *base, *view;

	host = vnpu_at_empty(1, &n, (enum vnpu_at_dtype)dtype, VNPU_AT_DEV_CPU);
	if (!host)
		return NULL;
	if (n)
		memcpy(vnpu_at_data(host), bytes,
		       (size_t)n *
			       vnpu_at_dtype_size((enum vnpu_at_dtype)dtype));
	if (type == VNPU_AT_NPU) {
		base = vnpu_op__to_copy(host, VNPU_AT_DTYPE_NONE,
					device(type, index), false);
		vnpu_at_release(host);
		if (!base)
			return NULL;
	} else {
		base = host;
	}
	view = vnpu_at_view_of(base, ndim, sizes, strides, offset);
	vnpu_at_release(base);
	return view;
}

/* Marks t as a Python scalar PyTorch wrapped into a tensor. */
EXPORT void bc_set_wrapped_number(struct vnpu_at_tensor *t)
{
	t->wrapped_number = true;
}

EXPORT void bc_release(struct vnpu_at_tensor *t)
{
	vnpu_at_release(t);
}

/* dtype, device type, ndim and sizes of t (sizes has room for 8). */
EXPORT int bc_meta(const struct vnpu_at_tensor *t, int *dtype, int *dev,
		   int64_t *sizes)
{
	*dtype = t->dtype;
	*dev = vnpu_at_device_of(t).type;
	memcpy(sizes, t->sizes, sizeof(int64_t) * t->ndim);
	return t->ndim;
}

/* t's elements, contiguous, into out (numel * element size bytes). */
EXPORT bool bc_read(struct vnpu_at_tensor *t, void *out)
{
	struct vnpu_at_tensor *c, *k;
	size_t n;

	c = vnpu_op__to_copy(t, VNPU_AT_DTYPE_NONE, VNPU_AT_DEV_CPU, false);
	k = c ? vnpu_op_contiguous(c) : NULL;
	if (!k) {
		vnpu_at_release(c);
		return false;
	}
	n = (size_t)vnpu_at_numel(k) * vnpu_at_dtype_size(k->dtype);
	if (n)
		memcpy(out, vnpu_at_data(k), n);
	vnpu_at_release(c);
	vnpu_at_release(k);
	return true;
}

/* ---- the boxed call ----------------------------------------------- */

EXPORT struct vnpu_stack *bc_stack_new(void)
{
	struct vnpu_stack *s = malloc(sizeof(*s));

	if (s)
		vnpu_stack_init(s);
	return s;
}

EXPORT void bc_stack_free(struct vnpu_stack *s)
{
	if (!s)
		return;
	vnpu_stack_destroy(s);
	free(s);
}

EXPORT bool bc_push_none(struct vnpu_stack *s)
{
	return vnpu_stack_push_none(s);
}

EXPORT bool bc_push_tensor(struct vnpu_stack *s, struct vnpu_at_tensor *t)
{
	return vnpu_stack_push_tensor(s, t);
}

EXPORT bool bc_push_tensor_list(struct vnpu_stack *s, struct vnpu_at_tensor **v,
				int64_t n)
{
	return vnpu_stack_push_tensor_list(s,
					   (struct vnpu_at_tensor_list){v, n});
}

EXPORT bool bc_push_int(struct vnpu_stack *s, int64_t v)
{
	return vnpu_stack_push_int(s, v);
}

EXPORT bool bc_push_double(struct vnpu_stack *s, double v)
{
	return vnpu_stack_push_double(s, v);
}

EXPORT bool bc_push_bool(struct vnpu_stack *s, bool v)
{
	return vnpu_stack_push_bool(s, v);
}

EXPORT bool bc_push_string(struct vnpu_stack *s, const char *v)
{
	return vnpu_stack_push_string(s, v);
}

EXPORT bool bc_push_int_list(struct vnpu_stack *s, const int64_t *v, int64_t n)
{
	return vnpu_stack_push_int_list(s, (struct vnpu_at_int_array){v, n});
}

EXPORT bool bc_push_bool_list(struct vnpu_stack *s, uint64_t bits, uint32_t n)
{
	return vnpu_stack_push_bool_list(s, (struct vnpu_at_bool_list){ n, bits });
}

EXPORT bool bc_push_device(struct vnpu_stack *s, int type, int index)
{
	return vnpu_stack_push_device(s, device(type, index));
}

/* kind: 1 int, 2 double, 3 bool (enum vnpu_at_scalar_kind) */
EXPORT bool bc_push_scalar(struct vnpu_stack *s, int kind, int64_t i, double d)
{
	struct vnpu_at_scalar v = kind == VNPU_AT_SCALAR_INT ? VNPU_AT_INT(i)
				  : kind == VNPU_AT_SCALAR_BOOL
					  ? VNPU_AT_BOOLV(i != 0)
					  : VNPU_AT_DOUBLE(d);

	return vnpu_stack_push_scalar(s, v);
}

/* Calls op (qualified name) on the stack; false with bc_error() set. */
EXPORT bool bc_call(const char *name, struct vnpu_stack *s)
{
	const struct vnpu_op *op = vnpu_op_find(name);

	if (!op) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE, "no operator %s", name);
		return false;
	}
	return vnpu_call_boxed(op, s);
}

EXPORT size_t bc_stack_size(const struct vnpu_stack *s)
{
	return s->size;
}

/* Tag of entry i (enum vnpu_ivalue_tag) and its payload: a new reference
 * for a tensor, the length for a list, the value for the rest; -1 past
 * the stack. */
EXPORT int bc_stack_get(const struct vnpu_stack *s, size_t i, int64_t *iv,
			double *dv, struct vnpu_at_tensor **t)
{
	const struct vnpu_ivalue *v;

	*t = NULL;
	if (i >= s->size)
		return -1;
	v = &s->v[i];
	switch (v->tag) {
	case VNPU_IV_TENSOR:
		*t = v->t ? vnpu_at_retain(v->t) : NULL;
		break;
	case VNPU_IV_TENSOR_LIST:
		*iv = v->tl->n;
		break;
	case VNPU_IV_INT:
		*iv = v->i;
		break;
	case VNPU_IV_BOOL:
		*iv = v->b;
		break;
	case VNPU_IV_DOUBLE:
		*dv = v->d;
		break;
	default:
		break;
	}
	return (int)v->tag;
}

/* Entry j of the tensor list at stack entry i (a new reference; NULL for
 * a None entry or one that is not there). */
EXPORT struct vnpu_at_tensor *bc_stack_list_item(const struct vnpu_stack *s,
						 size_t i, int64_t j)
{
	struct vnpu_at_tensor *t;

	if (i >= s->size || s->v[i].tag != VNPU_IV_TENSOR_LIST || j < 0 ||
	    j >= s->v[i].tl->n)
		return NULL;
	t = s->v[i].tl->v[j];
	return t ? vnpu_at_retain(t) : NULL;
}

/* ---- the op's schema, for binding PyTorch's arguments by name ---------- */

EXPORT int bc_schema_nargs(const char *name)
{
	const struct vnpu_op *op = vnpu_op_find(name);

	return op ? (int)vnpu_op_schema(op)->nargs : -1;
}

/* Argument i of op name: its name, type base, list and optional flags;
 * NULL for no such op or argument. */
EXPORT const char *bc_schema_arg(const char *name, int i, int *base,
				 int *is_list, int *optional)
{
	const struct vnpu_op *op = vnpu_op_find(name);
	const struct vnpu_schema_arg *a;

	if (!op || i < 0 || (uint32_t)i >= vnpu_op_schema(op)->nargs)
		return NULL;
	a = &vnpu_op_schema(op)->args[i];
	*base = a->type.base;
	*is_list = a->type.is_list;
	*optional = a->type.optional;
	return a->name;
}

/* ---- autograd and the fallback report ----------------------------- */

EXPORT bool bc_set_requires_grad(struct vnpu_at_tensor *t)
{
	return vnpu_at_set_requires_grad(t, true);
}

/* Backward of sum(out * g): the leaves' .grad get d/dx <out, g>. */
EXPORT bool bc_backward(struct vnpu_at_tensor *out, struct vnpu_at_tensor *g)
{
	struct vnpu_at_tensor *prod, *loss;
	bool ok;

	prod = vnpu_op_mul_Tensor(out, g);
	loss = prod ? vnpu_op_sum(prod, VNPU_AT_DTYPE_NONE) : NULL;
	ok = loss && vnpu_at_backward(loss);
	vnpu_at_release(prod);
	vnpu_at_release(loss);
	return ok;
}

/* A new reference to t's accumulated gradient, or NULL. */
EXPORT struct vnpu_at_tensor *bc_grad(struct vnpu_at_tensor *t)
{
	struct vnpu_at_tensor *g = vnpu_at_grad(t);

	return g ? vnpu_at_retain(g) : NULL;
}

EXPORT void bc_fallback_reset(void)
{
	vnpu_fallback_reset();
}

/* Calls that ran on the CPU fallback since the last reset. */
EXPORT uint64_t bc_fallback_calls(void)
{
	struct vnpu_fallback_entry e[64];
	size_t n = vnpu_fallback_report(e, 64);
	uint64_t calls = 0;

	for (size_t i = 0; i < n && i < 64; i++)
		calls += e[i].count;
	return calls;
}
