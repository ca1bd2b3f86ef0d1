// SPDX-License-Identifier: MIT
/* The operator registry: def / impl / fallback, per-operator dispatch
 * tables recomputed on every registration with c10's precedence, boxed
 * calls and redispatch. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch_internal.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vnpu_op **ops;
static size_t nops, capops;
static struct vnpu_registration *fallbacks[VNPU_NUM_RUNTIME_KEYS];

static bool is_autograd_key(int k)
{
	return k == VNPU_KEY_AUTOGRAD_CPU || k == VNPU_KEY_AUTOGRAD_PRIVATEUSE1;
}

static bool is_dense_key(int k)
{
	return k == VNPU_KEY_CPU || k == VNPU_KEY_PRIVATEUSE1;
}

static enum vnpu_functionality functionality_of(int k)
{
	switch (k) {
	case VNPU_KEY_CPU:
	case VNPU_KEY_PRIVATEUSE1:
		return VNPU_FUNC_DENSE;
	case VNPU_KEY_BACKEND_SELECT:
		return VNPU_FUNC_BACKEND_SELECT;
	case VNPU_KEY_AD_INPLACE_OR_VIEW:
		return VNPU_FUNC_AD_INPLACE_OR_VIEW;
	case VNPU_KEY_AUTOGRAD_CPU:
	case VNPU_KEY_AUTOGRAD_PRIVATEUSE1:
		return VNPU_FUNC_AUTOGRAD;
	case VNPU_KEY_PROFILER:
		return VNPU_FUNC_PROFILER;
	default:
		return VNPU_FUNC_UNDEFINED;
	}
}

/* The backend key under an autograd key. */
static int backend_of_autograd(int k)
{
	return k == VNPU_KEY_AUTOGRAD_CPU ? VNPU_KEY_CPU : VNPU_KEY_PRIVATEUSE1;
}

/* ---- the missing kernel and the fallthrough trampoline --------------------- */

static void missing_kernel(const struct vnpu_kernel *k, const struct vnpu_op *op,
			   vnpu_keyset_t ks, struct vnpu_stack *stack)
{
	char have[256] = "";
	size_t n = 0;
	bool first = true;

	for (int key = 0; key < VNPU_NUM_KEYS; key++) {
		if (!op->kernels[key] || op->kernels[key]->fallthrough)
			continue;
		n += (size_t)snprintf(have + n, n < sizeof(have) ? sizeof(have) - n : 0,
				      "%s%s", first ? "" : ", ",
				      vnpu_key_name((enum vnpu_dispatch_key)key));
		first = false;
		if (n >= sizeof(have))
			break;
	}
	if (k->key == VNPU_KEY_UNDEFINED)
		vnpu_at_error_set(VNPU_AT_ERR_NO_KERNEL,
				  "There were no tensor arguments to this function (e.g., you passed an empty list of Tensors), but no fallback function is registered for schema %s. '%s' is only available for these backends: [%s].",
				  op->name, op->name, have);
	else
		vnpu_at_error_set(VNPU_AT_ERR_NO_KERNEL,
				  "Could not run '%s' with arguments from the '%s' backend. '%s' is only available for these backends: [%s].",
				  op->name, vnpu_key_name((enum vnpu_dispatch_key)k->key),
				  op->name, have);
}

/* A fallthrough that only some backends of a per-backend functionality
 * have: the functionality bit stays in the mask, so the slot forwards. */
static void fallthrough_forward(const struct vnpu_kernel *k,
				const struct vnpu_op *op, vnpu_keyset_t ks,
				struct vnpu_stack *stack)
{
	vnpu_redispatch_boxed(op, ks & vnpu_keyset_after(functionality_of(k->key)),
			      stack);
}

/* ---- table computation (computeDispatchTableEntryWithDebug) ---------------- */

static struct vnpu_kernel compute_entry(const struct vnpu_op *op, int k)
{
	struct vnpu_registration *r = op->kernels[k];
	struct vnpu_registration *cea =
		op->kernels[VNPU_KEY_COMPOSITE_EXPLICIT_AUTOGRAD];
	struct vnpu_registration *cia =
		op->kernels[VNPU_KEY_COMPOSITE_IMPLICIT_AUTOGRAD];
	struct vnpu_registration *ag = op->kernels[VNPU_KEY_AUTOGRAD];
	struct vnpu_kernel e;
	uint8_t src;

	if (r) {
		src = r->fallthrough ? VNPU_SRC_FALLTHROUGH : VNPU_SRC_KERNEL;
	} else if (cea && (k == VNPU_KEY_UNDEFINED || is_dense_key(k))) {
		r = cea;
		src = VNPU_SRC_COMPOSITE_EXPLICIT;
	} else if (cia && (k == VNPU_KEY_UNDEFINED || is_dense_key(k) ||
			   (is_autograd_key(k) &&
			    !op->kernels[backend_of_autograd(k)] && !cea))) {
		r = cia;
		src = VNPU_SRC_COMPOSITE_IMPLICIT;
	} else if (ag && is_autograd_key(k)) {
		r = ag;
		src = VNPU_SRC_AUTOGRAD_ALIAS;
	} else if (fallbacks[k]) {
		r = fallbacks[k];
		src = r->fallthrough ? VNPU_SRC_FALLTHROUGH : VNPU_SRC_FALLBACK;
	} else {
		e = (struct vnpu_kernel){ .boxed = missing_kernel,
					  .source = VNPU_SRC_MISSING,
					  .key = (uint8_t)k };
		return e;
	}
	if (src == VNPU_SRC_FALLTHROUGH)
		e = (struct vnpu_kernel){ .boxed = fallthrough_forward };
	else
		e = r->kernel;
	e.source = src;
	e.key = (uint8_t)k;
	return e;
}

static void update_table(struct vnpu_op *op)
{
	vnpu_keyset_t mask = ~(vnpu_keyset_t)0;

	for (int k = 0; k < VNPU_NUM_RUNTIME_KEYS; k++)
		op->table[k] = compute_entry(op, k);
	/* fallthrough keys leave the mask; a per-backend functionality only
	 * when every backend's slot falls through */
	for (int k = 1; k < VNPU_NUM_RUNTIME_KEYS; k++) {
		enum vnpu_functionality f = functionality_of(k);
		bool all = true;

		if (op->table[k].source != VNPU_SRC_FALLTHROUGH)
			continue;
		if (f == VNPU_FUNC_DENSE || f == VNPU_FUNC_AUTOGRAD) {
			int first = vnpu_offsets[f].offset;

			for (int b = 0; b < VNPU_NUM_BACKENDS; b++)
				if (op->table[first + b].source != VNPU_SRC_FALLTHROUGH)
					all = false;
		}
		if (all)
			mask &= ~VNPU_KS_FUNC(f);
	}
	op->non_fallthrough = mask;
}

/* ---- registry ------------------------------------------------------------------ */

static struct vnpu_op *find_locked(const char *name)
{
	char q[256];

	if (!strstr(name, "::")) {
		snprintf(q, sizeof(q), "aten::%s", name);
		name = q;
	}
	for (size_t i = 0; i < nops; i++)
		if (!strcmp(ops[i]->name, name))
			return ops[i];
	return NULL;
}

const struct vnpu_op *vnpu_op_find(const char *qualified_name)
{
	const struct vnpu_op *op;

	vnpu_dispatch_init();
	pthread_mutex_lock(&reg_lock);
	op = find_locked(qualified_name);
	pthread_mutex_unlock(&reg_lock);
	return op;
}

const char *vnpu_op_name(const struct vnpu_op *op)
{
	return op->name;
}

const struct vnpu_schema *vnpu_op_schema(const struct vnpu_op *op)
{
	return op->schema;
}

static struct vnpu_op *def_locked(const char *text, vnpu_boxed_call_fn unbox)
{
	char err[512], name[256];
	struct vnpu_schema *s;
	struct vnpu_op *op, *old;

	if (!vnpu_schema_parse(text, &s, err, sizeof(err)))
		return vnpu_at_error_set(VNPU_AT_ERR_SCHEMA, "def: %s", err);
	snprintf(name, sizeof(name), "%s::%s%s%s", s->ns, s->name,
		 s->overload[0] ? "." : "", s->overload);
	old = find_locked(name);
	if (old) {
		bool same = vnpu_schema_equal(old->schema, s);

		vnpu_schema_free(s);
		if (!same)
			return vnpu_at_error_set(VNPU_AT_ERR_REGISTRATION,
						 "def: %s is already defined with a different schema",
						 name);
		return old;
	}
	if (s->nargs > 64) {
		vnpu_schema_free(s);
		return vnpu_at_error_set(VNPU_AT_ERR_SCHEMA,
					 "def: %s has more than 64 arguments", name);
	}
	op = calloc(1, sizeof(*op));
	if (!op || (nops == capops &&
		    !(ops = realloc(ops, (capops = capops ? 2 * capops : 256) *
				    sizeof(*ops))))) {
		free(op);
		vnpu_schema_free(s);
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "def: out of memory");
	}
	op->name = strdup(name);
	op->schema = s;
	op->unbox = unbox;
	op->nargs = s->nargs;
	op->nrets = s->nrets;
	for (uint32_t i = 0; i < s->nargs; i++)
		if (s->args[i].type.base == VNPU_TYPE_TENSOR)
			op->tensor_args |= (uint64_t)1 << i;
	update_table(op);	/* picks up the existing backend fallbacks */
	ops[nops++] = op;
	return op;
}

struct vnpu_op *vnpu_def_internal(const char *schema, vnpu_boxed_call_fn unbox)
{
	struct vnpu_op *op;

	pthread_mutex_lock(&reg_lock);
	op = def_locked(schema, unbox);
	pthread_mutex_unlock(&reg_lock);
	return op;
}

const struct vnpu_op *vnpu_def(const char *schema)
{
	vnpu_dispatch_init();
	return vnpu_def_internal(schema, NULL);
}

static struct vnpu_registration *impl_locked(struct vnpu_op *op,
					     enum vnpu_dispatch_key key,
					     void *unboxed,
					     vnpu_boxed_kernel_fn boxed,
					     bool fallthrough)
{
	struct vnpu_registration *r;

	if ((unsigned)key >= VNPU_NUM_KEYS || key == VNPU_KEY_UNDEFINED)
		return vnpu_at_error_set(VNPU_AT_ERR_REGISTRATION,
					 "impl: %s: invalid dispatch key %d",
					 op->name, key);
	if (!fallthrough && !boxed && !(unboxed && op->unbox))
		return vnpu_at_error_set(VNPU_AT_ERR_REGISTRATION,
					 "impl: %s: a kernel for an operator without a generated signature must be boxed",
					 op->name);
	r = calloc(1, sizeof(*r));
	if (!r)
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "impl: out of memory");
	r->op = op;
	r->key = key;
	r->fallthrough = fallthrough;
	r->kernel.unboxed = boxed && !unboxed ? NULL : unboxed;
	if (boxed) {
		r->kernel.boxed = vnpu_kernel_call_user_boxed;
		r->kernel.user_boxed = boxed;
	} else {
		r->kernel.boxed = op->unbox;
	}
	if (op->kernels[key] && !fallthrough)
		fprintf(stderr,
			"vnpu dispatcher: warning: overriding a previously registered kernel for the same operator and the same dispatch key\n  operator: %s\n  dispatch key: %s\n",
			op->name, vnpu_key_name(key));
	r->next = op->kernels[key];
	op->kernels[key] = r;
	update_table(op);
	return r;
}

struct vnpu_registration *vnpu_impl(const char *op_name,
				    enum vnpu_dispatch_key key, void *unboxed,
				    vnpu_boxed_kernel_fn boxed)
{
	struct vnpu_registration *r;
	struct vnpu_op *op;

	vnpu_dispatch_init();
	pthread_mutex_lock(&reg_lock);
	op = find_locked(op_name);
	r = op ? impl_locked(op, key, unboxed, boxed, false) :
		 vnpu_at_error_set(VNPU_AT_ERR_REGISTRATION,
				   "impl: operator %s is not defined (def it first)",
				   op_name);
	pthread_mutex_unlock(&reg_lock);
	return r;
}

struct vnpu_registration *vnpu_impl_fallthrough(const char *op_name,
						enum vnpu_dispatch_key key)
{
	struct vnpu_registration *r;
	struct vnpu_op *op;

	vnpu_dispatch_init();
	pthread_mutex_lock(&reg_lock);
	op = find_locked(op_name);
	r = op ? impl_locked(op, key, NULL, NULL, true) :
		 vnpu_at_error_set(VNPU_AT_ERR_REGISTRATION,
				   "impl: operator %s is not defined", op_name);
	pthread_mutex_unlock(&reg_lock);
	return r;
}

static struct vnpu_registration *fallback_locked(enum vnpu_dispatch_key key,
						 vnpu_boxed_kernel_fn fn)
{
	struct vnpu_registration *r;

	if ((unsigned)key >= VNPU_NUM_RUNTIME_KEYS || key == VNPU_KEY_UNDEFINED)
		return vnpu_at_error_set(VNPU_AT_ERR_REGISTRATION,
					 "fallback: %s is not a runtime key",
					 vnpu_key_name(key));
	if (fallbacks[key])
		return vnpu_at_error_set(VNPU_AT_ERR_REGISTRATION,
					 "Tried to register multiple backend fallbacks for the same dispatch key %s",
					 vnpu_key_name(key));
	r = calloc(1, sizeof(*r));
	if (!r)
		return vnpu_at_error_set(VNPU_AT_ERR_OOM, "fallback: out of memory");
	r->key = key;
	r->fallthrough = fn == NULL;
	r->kernel.boxed = vnpu_kernel_call_user_boxed;
	r->kernel.user_boxed = fn;
	fallbacks[key] = r;
	for (size_t i = 0; i < nops; i++)
		update_table(ops[i]);
	return r;
}

struct vnpu_registration *vnpu_fallback(enum vnpu_dispatch_key key,
					vnpu_boxed_kernel_fn fn)
{
	struct vnpu_registration *r;

	vnpu_dispatch_init();
	pthread_mutex_lock(&reg_lock);
	r = fallback_locked(key, fn);
	pthread_mutex_unlock(&reg_lock);
	return r;
}

struct vnpu_registration *vnpu_fallback_internal(enum vnpu_dispatch_key key,
						 vnpu_boxed_kernel_fn fn)
{
	struct vnpu_registration *r;

	pthread_mutex_lock(&reg_lock);
	r = fallback_locked(key, fn);
	pthread_mutex_unlock(&reg_lock);
	return r;
}

void vnpu_deregister(struct vnpu_registration *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&reg_lock);
	if (!r->op) {
		if (fallbacks[r->key] == r)
			fallbacks[r->key] = NULL;
		for (size_t i = 0; i < nops; i++)
			update_table(ops[i]);
	} else {
		for (struct vnpu_registration **pp = &r->op->kernels[r->key];
		     *pp; pp = &(*pp)->next)
			if (*pp == r) {
				*pp = r->next;
				break;
			}
		update_table(r->op);
	}
	pthread_mutex_unlock(&reg_lock);
	free(r);
}

/* ---- calls ------------------------------------------------------------------- */

vnpu_keyset_t vnpu_op_dispatch_keyset(const struct vnpu_op *op,
				      vnpu_keyset_t tensor_keys)
{
	return vnpu_dispatch_keyset(op, tensor_keys);
}

static vnpu_keyset_t stack_keys(const struct vnpu_op *op,
				const struct vnpu_stack *s)
{
	const struct vnpu_ivalue *args = s->v + s->size - op->nargs;
	vnpu_keyset_t ks = 0;

	for (uint32_t i = 0; i < op->nargs; i++) {
		if (!(op->tensor_args & ((uint64_t)1 << i)))
			continue;
		if (args[i].tag == VNPU_IV_TENSOR)
			ks |= args[i].t->keys;
		else if (args[i].tag == VNPU_IV_TENSOR_LIST)
			for (int64_t j = 0; j < args[i].tl->n; j++)
				ks |= vnpu_keys_of(args[i].tl->v[j]);
	}
	return ks;
}

static bool call_entry(const struct vnpu_op *op, vnpu_keyset_t ks,
		       struct vnpu_stack *stack)
{
	const struct vnpu_kernel *k = vnpu_dispatch_kernel(op, ks);
	uint64_t seq = vnpu_error_seq();

	k->boxed(k, op, ks, stack);
	if (vnpu_error_seq() != seq)
		return false;
	return true;
}

bool vnpu_call_boxed(const struct vnpu_op *op, struct vnpu_stack *stack)
{
	if (!vnpu_stack_has(op, stack, op->nargs))
		return false;
	return call_entry(op, vnpu_dispatch_keyset(op, stack_keys(op, stack)),
			  stack);
}

bool vnpu_redispatch_boxed(const struct vnpu_op *op, vnpu_keyset_t ks,
			   struct vnpu_stack *stack)
{
	if (!vnpu_stack_has(op, stack, op->nargs))
		return false;
	return call_entry(op, ks & op->non_fallthrough, stack);
}

const char *vnpu_op_table_source(const struct vnpu_op *op,
				 enum vnpu_dispatch_key key)
{
	static const char *const names[] = {
		[VNPU_SRC_MISSING] = "missing",
		[VNPU_SRC_KERNEL] = "kernel",
		[VNPU_SRC_COMPOSITE_EXPLICIT] = "composite explicit",
		[VNPU_SRC_COMPOSITE_IMPLICIT] = "composite implicit",
		[VNPU_SRC_AUTOGRAD_ALIAS] = "autograd kernel",
		[VNPU_SRC_FALLBACK] = "backend fallback",
		[VNPU_SRC_FALLTHROUGH] = "fallthrough",
	};

	if ((unsigned)key >= VNPU_NUM_RUNTIME_KEYS)
		return "invalid key";
	return names[op->table[key].source];
}

void vnpu_op_dump_table(const struct vnpu_op *op, void *file)
{
	FILE *f = file ? file : stdout;

	fprintf(f, "%s\n", op->name);
	for (int k = 0; k < VNPU_NUM_RUNTIME_KEYS; k++)
		fprintf(f, "  %-20s %s\n", vnpu_key_name((enum vnpu_dispatch_key)k),
			vnpu_op_table_source(op, (enum vnpu_dispatch_key)k));
}

/* ---- initialisation --------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_all(void)
{
	for (size_t i = 0; i < VNPU_NUM_GEN_OPS; i++) {
		vnpu_gen_ops[i] = vnpu_def_internal(vnpu_gen_op_defs[i].schema,
						    vnpu_gen_op_defs[i].unbox);
		if (!vnpu_gen_ops[i]) {
			fprintf(stderr, "vnpu dispatcher: %s\n",
				vnpu_at_error_message());
			abort();	/* the generated schemas are checked at build time */
		}
		vnpu_gen_ops[i]->mixes_devices = vnpu_gen_op_defs[i].mixes_devices;
	}
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < vnpu_gen_num_kernels; i++) {
		const struct vnpu_gen_kernel *g = &vnpu_gen_kernels[i];

		impl_locked(vnpu_gen_ops[g->op], g->key, g->fn, NULL, false);
	}
	pthread_mutex_unlock(&reg_lock);
	vnpu_register_builtin_fallbacks();
}

void vnpu_dispatch_init(void)
{
	pthread_once(&init_once, init_all);
}

__attribute__((constructor)) static void dispatch_ctor(void)
{
	vnpu_dispatch_init();
}
