// SPDX-License-Identifier: MIT
/* Tagged values, the boxed stack, and the helpers the generated boxing
 * adapters use to read arguments and move returns. */
#include <stdlib.h>
#include <string.h>

#include "dispatch_internal.h"

void vnpu_stack_init(struct vnpu_stack *s)
{
	s->v = NULL;
	s->size = 0;
	s->cap = 0;
}

void vnpu_ivalue_drop(struct vnpu_ivalue *v)
{
	switch (v->tag) {
	case VNPU_IV_TENSOR:
		vnpu_at_release(v->t);
		break;
	case VNPU_IV_TENSOR_LIST:
		for (int64_t i = 0; i < v->tl->n; i++)
			vnpu_at_release(v->tl->v[i]);
		free(v->tl);
		break;
	case VNPU_IV_INT_LIST:
		free(v->il);
		break;
	case VNPU_IV_STRING:
		free(v->s);
		break;
	default:
		break;
	}
	v->tag = VNPU_IV_NONE;
	v->i = 0;
}

void vnpu_stack_drop(struct vnpu_stack *s, size_t n)
{
	if (n > s->size)
		n = s->size;
	while (n--)
		vnpu_ivalue_drop(&s->v[--s->size]);
}

void vnpu_stack_clear(struct vnpu_stack *s)
{
	vnpu_stack_drop(s, s->size);
}

void vnpu_stack_destroy(struct vnpu_stack *s)
{
	vnpu_stack_clear(s);
	free(s->v);
	vnpu_stack_init(s);
}

bool vnpu_stack_push(struct vnpu_stack *s, struct vnpu_ivalue v)
{
	if (s->size == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct vnpu_ivalue *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv) {
			vnpu_ivalue_drop(&v);
			vnpu_at_error_set(VNPU_AT_ERR_OOM, "stack: out of memory");
			return false;
		}
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->size++] = v;
	return true;
}

bool vnpu_stack_push_none(struct vnpu_stack *s)
{
	return vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_NONE });
}

bool vnpu_stack_push_tensor(struct vnpu_stack *s, struct vnpu_at_tensor *t)
{
	if (!t)
		return vnpu_stack_push_none(s);
	return vnpu_stack_push(s, (struct vnpu_ivalue){
		.tag = VNPU_IV_TENSOR, .t = vnpu_at_retain(t) });
}

bool vnpu_stack_push_tensor_list(struct vnpu_stack *s,
				 struct vnpu_at_tensor_list l)
{
	struct vnpu_iv_tensor_list *tl;

	if (l.n < 0)
		l.n = 0;
	tl = malloc(sizeof(*tl) + (size_t)l.n * sizeof(tl->v[0]));
	if (!tl) {
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "stack: out of memory");
		return false;
	}
	tl->n = l.n;
	for (int64_t i = 0; i < l.n; i++)
		tl->v[i] = l.v[i] ? vnpu_at_retain(l.v[i]) : NULL;
	return vnpu_stack_push(s, (struct vnpu_ivalue){
		.tag = VNPU_IV_TENSOR_LIST, .tl = tl });
}

bool vnpu_stack_push_int(struct vnpu_stack *s, int64_t v)
{
	return vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_INT, .i = v });
}

bool vnpu_stack_push_double(struct vnpu_stack *s, double v)
{
	return vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_DOUBLE, .d = v });
}

bool vnpu_stack_push_bool(struct vnpu_stack *s, bool v)
{
	return vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_BOOL, .b = v });
}

bool vnpu_stack_push_scalar(struct vnpu_stack *s, struct vnpu_at_scalar v)
{
	switch (v.kind) {
	case VNPU_AT_SCALAR_INT: return vnpu_stack_push_int(s, v.i);
	case VNPU_AT_SCALAR_DOUBLE: return vnpu_stack_push_double(s, v.d);
	case VNPU_AT_SCALAR_BOOL: return vnpu_stack_push_bool(s, v.b);
	default: return vnpu_stack_push_none(s);
	}
}

bool vnpu_stack_push_string(struct vnpu_stack *s, const char *v)
{
	char *c = strdup(v ? v : "");

	if (!c) {
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "stack: out of memory");
		return false;
	}
	return vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_STRING, .s = c });
}

bool vnpu_stack_push_int_list(struct vnpu_stack *s, struct vnpu_at_int_array a)
{
	struct vnpu_iv_int_list *il;

	if (a.n < 0)
		a.n = 0;
	il = malloc(sizeof(*il) + (size_t)a.n * sizeof(int64_t));
	if (!il) {
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "stack: out of memory");
		return false;
	}
	il->n = a.n;
	if (a.n)
		memcpy(il->v, a.v, (size_t)a.n * sizeof(int64_t));
	return vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_INT_LIST, .il = il });
}

bool vnpu_stack_push_device(struct vnpu_stack *s, struct vnpu_at_device d)
{
	return vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_DEVICE, .dev = d });
}

bool vnpu_stack_push_bool_list(struct vnpu_stack *s, struct vnpu_at_bool_list l)
{
	if (l.n > VNPU_AT_BOOL_LIST_MAX) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "a bool[] of %u elements: at most %d are supported",
				  l.n, VNPU_AT_BOOL_LIST_MAX);
		return false;
	}
	if (l.n < 64)
		l.bits &= (UINT64_C(1) << l.n) - 1;
	return vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_BOOL_LIST,
						       .reserved = l.n, .bits = l.bits });
}

struct vnpu_ivalue vnpu_stack_pop(struct vnpu_stack *s)
{
	if (!s->size)
		return (struct vnpu_ivalue){ .tag = VNPU_IV_NONE };
	return s->v[--s->size];
}

bool vnpu_ivalue_copy(struct vnpu_ivalue *dst, const struct vnpu_ivalue *v)
{
	struct vnpu_stack tmp;

	vnpu_stack_init(&tmp);
	switch (v->tag) {
	case VNPU_IV_TENSOR:
		*dst = *v;
		vnpu_at_retain(v->t);
		return true;
	case VNPU_IV_TENSOR_LIST:
		if (!vnpu_stack_push_tensor_list(&tmp, (struct vnpu_at_tensor_list){
				v->tl->v, v->tl->n }))
			return false;
		break;
	case VNPU_IV_INT_LIST:
		if (!vnpu_stack_push_int_list(&tmp, (struct vnpu_at_int_array){
				v->il->v, v->il->n }))
			return false;
		break;
	case VNPU_IV_STRING:
		if (!vnpu_stack_push_string(&tmp, v->s))
			return false;
		break;
	default:
		*dst = *v;
		return true;
	}
	*dst = tmp.v[0];
	free(tmp.v);
	return true;
}

struct vnpu_at_scalar vnpu_ivalue_scalar(const struct vnpu_ivalue *v)
{
	switch (v->tag) {
	case VNPU_IV_INT: return VNPU_AT_INT(v->i);
	case VNPU_IV_DOUBLE: return VNPU_AT_DOUBLE(v->d);
	case VNPU_IV_BOOL: return VNPU_AT_BOOLV(v->b);
	default: return VNPU_AT_SCALAR_NONEV;
	}
}

/* ---- adapters -------------------------------------------------------------- */

void vnpu_kernel_call_user_boxed(const struct vnpu_kernel *k,
				 const struct vnpu_op *op, vnpu_keyset_t ks,
				 struct vnpu_stack *stack)
{
	k->user_boxed(op, ks, stack);
}

bool vnpu_stack_has(const struct vnpu_op *op, struct vnpu_stack *s, size_t n)
{
	if (s->size >= n)
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: expected %zu arguments on the stack, found %zu",
			  op->name, n, s->size);
	return false;
}

bool vnpu_stack_returns_ok(const struct vnpu_op *op, struct vnpu_stack *s,
			   size_t nrets)
{
	if (s->size == nrets)
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: the kernel left %zu values on the stack, expected %zu returns",
			  op->name, s->size, nrets);
	return false;
}

static const char *tag_name(uint32_t tag)
{
	static const char *const names[] = {
		"None", "Tensor", "Tensor[]", "int", "float", "bool", "str",
		"int[]", "Device", "bool[]",
	};
	return tag < sizeof(names) / sizeof(names[0]) ? names[tag] : "?";
}

static bool bad(const struct vnpu_op *op, const char *name, const char *want,
		const struct vnpu_ivalue *v)
{
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: argument '%s' must be %s, not %s", op->name,
			  name, want, tag_name(v->tag));
	return false;
}

bool vnpu_iv_get_tensor(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, struct vnpu_at_tensor **out)
{
	if (v->tag != VNPU_IV_TENSOR)
		return bad(op, name, "Tensor", v);
	*out = v->t;
	return true;
}

bool vnpu_iv_get_opt_tensor(const struct vnpu_op *op, struct vnpu_ivalue *v,
			    const char *name, struct vnpu_at_tensor **out)
{
	if (v->tag == VNPU_IV_NONE) {
		*out = NULL;
		return true;
	}
	return vnpu_iv_get_tensor(op, v, name, out);
}

bool vnpu_iv_get_tensor_list(const struct vnpu_op *op, struct vnpu_ivalue *v,
			     const char *name, struct vnpu_at_tensor_list *out)
{
	if (v->tag != VNPU_IV_TENSOR_LIST)
		return bad(op, name, "Tensor[]", v);
	out->v = v->tl->v;
	out->n = v->tl->n;
	return true;
}

bool vnpu_iv_get_int(const struct vnpu_op *op, struct vnpu_ivalue *v,
		     const char *name, int64_t *out)
{
	if (v->tag == VNPU_IV_BOOL) {
		*out = v->b;
		return true;
	}
	if (v->tag != VNPU_IV_INT)
		return bad(op, name, "int", v);
	*out = v->i;
	return true;
}

bool vnpu_iv_get_opt_int(const struct vnpu_op *op, struct vnpu_ivalue *v,
			 const char *name, struct vnpu_at_opt_int *out)
{
	out->has = v->tag != VNPU_IV_NONE;
	out->v = 0;
	return !out->has || vnpu_iv_get_int(op, v, name, &out->v);
}

bool vnpu_iv_get_int_list(const struct vnpu_op *op, struct vnpu_ivalue *v,
			  const char *name, struct vnpu_at_int_array *out)
{
	if (v->tag == VNPU_IV_INT) {	/* int[N] given as one int */
		out->v = &v->i;
		out->n = 1;
		return true;
	}
	if (v->tag != VNPU_IV_INT_LIST)
		return bad(op, name, "int[]", v);
	out->v = v->il->v;
	out->n = v->il->n;
	return true;
}

bool vnpu_iv_get_bool_list(const struct vnpu_op *op, struct vnpu_ivalue *v,
			   const char *name, struct vnpu_at_bool_list *out)
{
	if (v->tag != VNPU_IV_BOOL_LIST)
		return bad(op, name, "bool[]", v);
	out->n = v->reserved;
	out->bits = v->bits;
	return true;
}

bool vnpu_iv_get_opt_int_list(const struct vnpu_op *op,
			      struct vnpu_ivalue *v, const char *name,
			      struct vnpu_at_opt_int_array *out)
{
	out->has = v->tag != VNPU_IV_NONE;
	out->a = VNPU_AT_NO_INTS;
	return !out->has || vnpu_iv_get_int_list(op, v, name, &out->a);
}

bool vnpu_iv_get_double(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, double *out)
{
	if (v->tag == VNPU_IV_INT) {
		*out = (double)v->i;
		return true;
	}
	if (v->tag != VNPU_IV_DOUBLE)
		return bad(op, name, "float", v);
	*out = v->d;
	return true;
}

bool vnpu_iv_get_opt_double(const struct vnpu_op *op, struct vnpu_ivalue *v,
			    const char *name, struct vnpu_at_opt_double *out)
{
	out->has = v->tag != VNPU_IV_NONE;
	out->v = 0;
	return !out->has || vnpu_iv_get_double(op, v, name, &out->v);
}

bool vnpu_iv_get_bool(const struct vnpu_op *op, struct vnpu_ivalue *v,
		      const char *name, bool *out)
{
	if (v->tag != VNPU_IV_BOOL)
		return bad(op, name, "bool", v);
	*out = v->b;
	return true;
}

bool vnpu_iv_get_string(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, const char **out)
{
	if (v->tag != VNPU_IV_STRING)
		return bad(op, name, "str", v);
	*out = v->s;
	return true;
}

bool vnpu_iv_get_scalar(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, struct vnpu_at_scalar *out)
{
	if (v->tag != VNPU_IV_INT && v->tag != VNPU_IV_DOUBLE &&
	    v->tag != VNPU_IV_BOOL)
		return bad(op, name, "Scalar", v);
	*out = vnpu_ivalue_scalar(v);
	return true;
}

bool vnpu_iv_get_opt_scalar(const struct vnpu_op *op, struct vnpu_ivalue *v,
			    const char *name, struct vnpu_at_scalar *out)
{
	if (v->tag == VNPU_IV_NONE) {
		*out = VNPU_AT_SCALAR_NONEV;
		return true;
	}
	return vnpu_iv_get_scalar(op, v, name, out);
}

bool vnpu_iv_get_dtype(const struct vnpu_op *op, struct vnpu_ivalue *v,
		       const char *name, enum vnpu_at_dtype *out)
{
	if (v->tag == VNPU_IV_NONE) {
		*out = VNPU_AT_DTYPE_NONE;
		return true;
	}
	if (v->tag != VNPU_IV_INT)
		return bad(op, name, "ScalarType", v);
	if (!vnpu_at_dtype_valid((enum vnpu_at_dtype)v->i)) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: argument '%s': %lld is not a dtype",
				  op->name, name, (long long)v->i);
		return false;
	}
	*out = (enum vnpu_at_dtype)v->i;
	return true;
}

bool vnpu_iv_get_device(const struct vnpu_op *op, struct vnpu_ivalue *v,
			const char *name, struct vnpu_at_device *out)
{
	if (v->tag == VNPU_IV_NONE) {
		*out = VNPU_AT_DEV_NONE;
		return true;
	}
	if (v->tag != VNPU_IV_DEVICE)
		return bad(op, name, "Device", v);
	*out = v->dev;
	return true;
}

void vnpu_iv_push_ret_tensor(struct vnpu_stack *s, struct vnpu_at_tensor *t)
{
	if (!t) {
		vnpu_stack_push_none(s);
		return;
	}
	/* moves the kernel's reference onto the stack */
	vnpu_stack_push(s, (struct vnpu_ivalue){ .tag = VNPU_IV_TENSOR, .t = t });
}

void vnpu_iv_push_ret_scalar(struct vnpu_stack *s, struct vnpu_at_scalar v)
{
	vnpu_stack_push_scalar(s, v);
}

void vnpu_iv_push_ret_int(struct vnpu_stack *s, int64_t v)
{
	vnpu_stack_push_int(s, v);
}

void vnpu_iv_push_ret_double(struct vnpu_stack *s, double v)
{
	vnpu_stack_push_double(s, v);
}

void vnpu_iv_push_ret_bool(struct vnpu_stack *s, bool v)
{
	vnpu_stack_push_bool(s, v);
}

void vnpu_iv_take_ret_tensor(struct vnpu_ivalue *v, struct vnpu_at_tensor **r)
{
	if (v->tag == VNPU_IV_TENSOR) {
		*r = v->t;
		v->tag = VNPU_IV_NONE;
	} else {
		*r = NULL;
	}
}

void vnpu_iv_take_ret_scalar(struct vnpu_ivalue *v, struct vnpu_at_scalar *r)
{
	*r = vnpu_ivalue_scalar(v);
}

void vnpu_iv_take_ret_int(struct vnpu_ivalue *v, int64_t *r)
{
	*r = v->tag == VNPU_IV_INT ? v->i : v->tag == VNPU_IV_BOOL ? v->b : 0;
}

void vnpu_iv_take_ret_double(struct vnpu_ivalue *v, double *r)
{
	*r = v->tag == VNPU_IV_DOUBLE ? v->d : v->tag == VNPU_IV_INT ? (double)v->i : 0;
}

void vnpu_iv_take_ret_bool(struct vnpu_ivalue *v, bool *r)
{
	*r = v->tag == VNPU_IV_BOOL ? v->b : false;
}
