// SPDX-License-Identifier: MIT
/* The CPU fallback for PrivateUse1 (PyTorch's at::native::cpu_fallback):
 * tensor arguments to the CPU in schema order, the CPU kernel by
 * redispatch, written (a!) arguments copied back, returns moved to the
 * target device. Per-op counters, the allow/warn/error policy, a report. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch_internal.h"
#include "vnpu_frontend.h"

static pthread_once_t policy_once = PTHREAD_ONCE_INIT;
static _Atomic int policy = VNPU_FALLBACK_ALLOW;

static void read_policy(void)
{
	const char *e = getenv("VNPU_FALLBACK");

	if (!e || !*e || !strcmp(e, "allow"))
		return;
	if (!strcmp(e, "warn"))
		policy = VNPU_FALLBACK_WARN;
	else if (!strcmp(e, "error"))
		policy = VNPU_FALLBACK_ERROR;
	else
		fprintf(stderr, "vnpu dispatcher: VNPU_FALLBACK=%s is not allow, warn or error; using allow\n", e);
}

void vnpu_fallback_set_policy(enum vnpu_fallback_policy p)
{
	pthread_once(&policy_once, read_policy);
	policy = p;
}

enum vnpu_fallback_policy vnpu_fallback_policy(void)
{
	pthread_once(&policy_once, read_policy);
	return policy;
}

static struct vnpu_at_tensor *to_device(struct vnpu_at_tensor *t,
					struct vnpu_at_device dev)
{
	struct vnpu_at_tensor *c = vnpu_op__to_copy(t, VNPU_AT_DTYPE_NONE, dev,
						    false);

	if (c)
		c->wrapped_number = t->wrapped_number;
	return c;
}

static bool is_npu_tensor(const struct vnpu_ivalue *v)
{
	return v->tag == VNPU_IV_TENSOR && v->t->storage->device.type == VNPU_AT_NPU;
}

/* Set while a front end runs NPU kernels and its own fallback. */
static _Thread_local bool deferred;

bool vnpu_fallback_defer_begin(void)
{
	bool was = deferred;

	deferred = true;
	return was;
}

void vnpu_fallback_defer_end(bool previous)
{
	deferred = previous;
}

/* The policy for one fallback of `name`: refuse, or warn once. */
static bool admit(const char *name, atomic_bool *warned)
{
	enum vnpu_fallback_policy p = vnpu_fallback_policy();

	if (p == VNPU_FALLBACK_ERROR) {
		vnpu_at_error_set(VNPU_AT_ERR_FALLBACK,
				  "The operator '%s' is not currently implemented for the npu device, and CPU fallback is disabled (VNPU_FALLBACK=error).",
				  name);
		return false;
	}
	if (p == VNPU_FALLBACK_WARN && !atomic_exchange(warned, true))
		fprintf(stderr,
			"vnpu dispatcher: CAUTION: The operator '%s' is not currently supported on the npu backend and will fall back to run on the CPU. This may have performance implications.\n",
			name);
	return true;
}

/*
 * Ops a front end falls back for that the dispatcher does not declare
 * (PyTorch has ~2,000): counted by name in a table of fixed size, so a
 * hostile stream of op names cannot grow it; names past it share one
 * "(other operators)" entry.
 */
#define FOREIGN_MAX 512
struct foreign_op {
	char name[96];
	_Atomic uint64_t count;
	_Atomic uint64_t rejected;
	atomic_bool warned;
};
static struct foreign_op foreign[FOREIGN_MAX + 1];
static size_t nforeign;
static pthread_mutex_t foreign_lock = PTHREAD_MUTEX_INITIALIZER;

static struct foreign_op *foreign_entry(const char *name)
{
	struct foreign_op *e = &foreign[FOREIGN_MAX];

	pthread_mutex_lock(&foreign_lock);
	for (size_t i = 0; i < nforeign; i++)
		if (!strcmp(foreign[i].name, name)) {
			e = &foreign[i];
			goto out;
		}
	if (nforeign < FOREIGN_MAX && strlen(name) < sizeof(e->name)) {
		e = &foreign[nforeign++];
		strcpy(e->name, name);
	}
out:
	if (!e->name[0])
		strcpy(e->name, "(other operators)");
	pthread_mutex_unlock(&foreign_lock);
	return e;
}

bool vnpu_fallback_enter(const char *qualified_name)
{
	const struct vnpu_op *op = vnpu_op_find(qualified_name);

	vnpu_at_error_clear();
	if (op)
		return admit(op->name, &((struct vnpu_op *)op)->fallback_warned);
	return admit(qualified_name, &foreign_entry(qualified_name)->warned);
}

void vnpu_fallback_done(const char *qualified_name, bool ok)
{
	const struct vnpu_op *op = vnpu_op_find(qualified_name);
	struct foreign_op *e;

	if (op) {
		atomic_fetch_add(ok ? &((struct vnpu_op *)op)->fallback_count :
				      &((struct vnpu_op *)op)->fallback_rejected, 1);
		return;
	}
	e = foreign_entry(qualified_name);
	atomic_fetch_add(ok ? &e->count : &e->rejected, 1);
}

/*
 * The device rule the NPU kernels apply, on the fallback path too: npu
 * tensors and CPU tensors of one or more dims do not mix (a 0-dim CPU
 * tensor is a scalar). Copies are what mixes devices on purpose (the
 * yaml's mixes_devices).
 */
static bool same_device(const struct vnpu_op *op, const struct vnpu_ivalue *args,
			uint32_t n)
{
	bool npu = false, cpu = false;

	if (op->mixes_devices)
		return true;
	for (uint32_t i = 0; i < n; i++) {
		const struct vnpu_at_tensor *t = args[i].tag == VNPU_IV_TENSOR ?
						 args[i].t : NULL;

		if (!t)
			continue;
		if (t->storage->device.type == VNPU_AT_NPU)
			npu = true;
		else if (t->ndim)
			cpu = true;
	}
	if (npu && cpu) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: Expected all tensors to be on the same device, but found at least two devices, npu and cpu!",
				  op->name);
		return false;
	}
	return true;
}

void vnpu_cpu_fallback(const struct vnpu_op *op, vnpu_keyset_t ks,
		       struct vnpu_stack *stack)
{
	const struct vnpu_schema *s = op->schema;
	uint32_t n = op->nargs, nr = op->nrets;
	struct vnpu_ivalue *orig;
	struct vnpu_at_tensor **cpu;
	struct vnpu_at_device tgt = VNPU_AT_DEV_NONE;
	struct vnpu_tls_guard g;
	size_t base;
	bool ok = false;

	if (deferred) {
		vnpu_at_error_set(VNPU_AT_ERR_FALLBACK_DEFERRED,
				  "%s: left to the front end's CPU fallback",
				  op->name);
		return;
	}
	if (!admit(op->name, &((struct vnpu_op *)op)->fallback_warned))
		return;
	if (!vnpu_stack_has(op, stack, n))
		return;
	base = stack->size - n;
	if (!same_device(op, stack->v + base, n))
		return;
	orig = calloc(n ? n : 1, sizeof(*orig));
	cpu = calloc(n ? n : 1, sizeof(*cpu));
	if (!orig || !cpu) {
		free(orig);
		free(cpu);
		vnpu_at_error_set(VNPU_AT_ERR_OOM, "%s: CPU fallback: out of memory",
				  op->name);
		return;
	}
	/* below autograd: the copies must not be recorded */
	vnpu_no_grad_begin(&g);

	/* 1. inputs to the CPU, in schema order */
	for (uint32_t i = 0; i < n; i++) {
		struct vnpu_ivalue *a = &stack->v[base + i];

		if (is_npu_tensor(a)) {
			struct vnpu_at_tensor *c = NULL;

			/* one tensor passed twice (add(x, y, out=x)) is one
			 * CPU tensor: the CPU kernel must see that its out=
			 * is an input, which TensorIterator never resizes */
			for (uint32_t j = 0; j < i && !c; j++)
				if (cpu[j] && orig[j].tag == VNPU_IV_TENSOR &&
				    orig[j].t == a->t)
					c = vnpu_at_retain(cpu[j]);
			if (!c)
				c = to_device(a->t, VNPU_AT_DEV_CPU);
			if (!c)
				goto restore;
			orig[i] = *a;	/* keeps the reference */
			a->t = c;
			cpu[i] = vnpu_at_retain(c);
		} else if (a->tag == VNPU_IV_TENSOR_LIST) {
			struct vnpu_ivalue copy;
			bool any = false;

			for (int64_t j = 0; j < a->tl->n; j++)
				any |= a->tl->v[j] && vnpu_at_is_npu(a->tl->v[j]);
			if (!any)
				continue;
			if (!vnpu_ivalue_copy(&copy, a))
				goto restore;
			for (int64_t j = 0; j < copy.tl->n; j++) {
				struct vnpu_at_tensor *t = copy.tl->v[j];

				if (!t || !vnpu_at_is_npu(t))
					continue;
				copy.tl->v[j] = to_device(t, VNPU_AT_DEV_CPU);
				vnpu_at_release(t);
				if (!copy.tl->v[j]) {
					vnpu_ivalue_drop(&copy);
					goto restore;
				}
			}
			orig[i] = *a;
			*a = copy;
		} else if (a->tag == VNPU_IV_DEVICE) {
			tgt = a->dev;
			a->dev = VNPU_AT_DEV_CPU;
		}
	}
	if (tgt.type == VNPU_AT_DEVICE_NONE) {
		for (uint32_t i = 0; i < n && tgt.type == VNPU_AT_DEVICE_NONE; i++) {
			if (orig[i].tag == VNPU_IV_TENSOR)
				tgt = orig[i].t->storage->device;
			else if (orig[i].tag == VNPU_IV_TENSOR_LIST)
				for (int64_t j = 0; j < orig[i].tl->n; j++)
					if (orig[i].tl->v[j]) {
						tgt = orig[i].tl->v[j]->storage->device;
						break;
					}
		}
	}

	/* 2. the CPU kernel, by redispatch (no extraction, no TLS) */
	if (!vnpu_redispatch_boxed(op, vnpu_keyset_of(VNPU_KEY_CPU), stack))
		goto out;
	if (stack->size != base + nr) {
		vnpu_at_error_set(VNPU_AT_ERR_VALUE,
				  "%s: CPU fallback: the CPU kernel left %zu values, expected %u",
				  op->name, stack->size - base, nr);
		goto out;
	}

	ok = true;
out:
	{
		/* 3. written (a!) arguments: copy the CPU result back into the
		 * original npu tensor (resizing it as _copy_from_and_resize) */
		for (uint32_t i = 0; ok && i < n; i++) {
			struct vnpu_at_tensor *r;

			if (!s->args[i].is_write || !cpu[i] ||
			    orig[i].tag != VNPU_IV_TENSOR)
				continue;
			r = vnpu_op__copy_from_and_resize(cpu[i], orig[i].t);
			if (!r)
				ok = false;
			vnpu_at_release(r);
		}
		/* 4. returns */
		for (uint32_t r = 0; ok && r < nr; r++) {
			struct vnpu_ivalue *rv = &stack->v[base + r];
			const struct vnpu_schema_arg *sr = &s->rets[r];

			if (sr->is_write) {
				bool found = false;

				for (uint32_t i = 0; i < n; i++) {
					if (s->args[i].alias_set != sr->alias_set ||
					    !s->args[i].is_write)
						continue;
					found = true;
					if (orig[i].tag != VNPU_IV_NONE) {
						vnpu_ivalue_drop(rv);
						vnpu_ivalue_copy(rv, &orig[i]);
					}
				}
				if (!found) {
					vnpu_at_error_set(VNPU_AT_ERR_VALUE,
							  "%s: CPU fallback: the schema appears to have invalid alias information",
							  op->name);
					ok = false;
				}
				continue;
			}
			if (sr->alias_set)
				fprintf(stderr,
					"vnpu dispatcher: warning: %s appears to be a view operator, but it has no implementation for the npu backend; its result is a copy, not a view\n",
					op->name);
			if (tgt.type != VNPU_AT_NPU)
				continue;
			if (rv->tag == VNPU_IV_TENSOR) {
				struct vnpu_at_tensor *d = to_device(rv->t, tgt);

				if (!d) {
					ok = false;
					break;
				}
				vnpu_at_release(rv->t);
				rv->t = d;
			} else if (rv->tag == VNPU_IV_TENSOR_LIST) {
				for (int64_t j = 0; j < rv->tl->n; j++) {
					struct vnpu_at_tensor *t = rv->tl->v[j];

					if (!t)
						continue;
					rv->tl->v[j] = to_device(t, tgt);
					vnpu_at_release(t);
					if (!rv->tl->v[j])
						ok = false;
				}
			}
		}
	}
	/* a fallback that ran; or an input the CPU kernel refused, which an
	 * NPU kernel left to it for the wording of the error */
	atomic_fetch_add(ok ? &((struct vnpu_op *)op)->fallback_count :
			      &((struct vnpu_op *)op)->fallback_rejected, 1);
	if (!ok && stack->size >= base)
		vnpu_stack_drop(stack, stack->size - base);
	for (uint32_t i = 0; i < n; i++) {
		vnpu_ivalue_drop(&orig[i]);
		vnpu_at_release(cpu[i]);
	}
	free(orig);
	free(cpu);
	vnpu_tls_guard_end(&g);
	return;
restore:
	/* put the original arguments back, drop the copies made so far */
	for (uint32_t i = 0; i < n; i++)
		if (orig[i].tag != VNPU_IV_NONE) {
			vnpu_ivalue_drop(&stack->v[base + i]);
			stack->v[base + i] = orig[i];
			orig[i].tag = VNPU_IV_NONE;
		}
	for (uint32_t i = 0; i < n; i++)
		vnpu_at_release(cpu[i]);
	free(orig);
	free(cpu);
	vnpu_tls_guard_end(&g);
}

/* ---- the report ------------------------------------------------------------- */

struct fb_sort {
	const char *op;
	uint64_t count;
};

static int by_count(const void *a, const void *b)
{
	const struct fb_sort *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->op, y->op);
}

/* Fallbacks (rejected false) or rejected inputs (true) per op, most
 * first. */
static size_t collect(struct vnpu_fallback_entry *out, size_t max,
		      bool rejected)
{
	struct fb_sort *all;
	size_t n = 0;

	vnpu_dispatch_init();
	all = calloc(VNPU_NUM_GEN_OPS + FOREIGN_MAX + 1, sizeof(*all));
	if (!all)
		return 0;
	for (size_t i = 0; i < VNPU_NUM_GEN_OPS; i++) {
		uint64_t c = atomic_load(rejected ? &vnpu_gen_ops[i]->fallback_rejected :
					 &vnpu_gen_ops[i]->fallback_count);

		if (c)
			all[n++] = (struct fb_sort){ vnpu_gen_ops[i]->name, c };
	}
	pthread_mutex_lock(&foreign_lock);
	for (size_t i = 0; i <= FOREIGN_MAX; i++) {
		uint64_t c = atomic_load(rejected ? &foreign[i].rejected :
					 &foreign[i].count);

		if (c)
			all[n++] = (struct fb_sort){ foreign[i].name, c };
	}
	pthread_mutex_unlock(&foreign_lock);
	qsort(all, n, sizeof(*all), by_count);
	for (size_t i = 0; i < n && i < max; i++)
		out[i] = (struct vnpu_fallback_entry){ all[i].op, all[i].count };
	free(all);
	return n;
}

size_t vnpu_fallback_report(struct vnpu_fallback_entry *out, size_t max)
{
	return collect(out, max, false);
}

size_t vnpu_fallback_rejections(struct vnpu_fallback_entry *out, size_t max)
{
	return collect(out, max, true);
}

void vnpu_fallback_print(void *file)
{
	FILE *f = file ? file : stdout;
	enum { MAX = VNPU_NUM_GEN_OPS + FOREIGN_MAX + 1 };
	struct vnpu_fallback_entry *e = calloc(MAX, sizeof(*e));
	size_t n = e ? vnpu_fallback_report(e, MAX) : 0;
	uint64_t calls = 0;

	for (size_t i = 0; i < n; i++)
		calls += e[i].count;
	fprintf(f, "CPU fallback: %zu op%s, %llu call%s\n", n, n == 1 ? "" : "s",
		(unsigned long long)calls, calls == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-36s %llu\n", e[i].op, (unsigned long long)e[i].count);
	n = e ? vnpu_fallback_rejections(e, MAX) : 0;
	calls = 0;
	for (size_t i = 0; i < n; i++)
		calls += e[i].count;
	if (n)
		fprintf(f, "rejected inputs (left to the CPU kernel, which refused them; not fallbacks): %llu call%s\n",
			(unsigned long long)calls, calls == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-36s %llu\n", e[i].op, (unsigned long long)e[i].count);
	free(e);
}

void vnpu_fallback_reset(void)
{
	vnpu_dispatch_init();
	for (size_t i = 0; i < VNPU_NUM_GEN_OPS; i++) {
		atomic_store(&vnpu_gen_ops[i]->fallback_count, 0);
		atomic_store(&vnpu_gen_ops[i]->fallback_rejected, 0);
		atomic_store(&vnpu_gen_ops[i]->fallback_warned, false);
	}
	pthread_mutex_lock(&foreign_lock);
	for (size_t i = 0; i <= FOREIGN_MAX; i++) {
		atomic_store(&foreign[i].count, 0);
		atomic_store(&foreign[i].rejected, 0);
		atomic_store(&foreign[i].warned, false);
	}
	pthread_mutex_unlock(&foreign_lock);
}

void vnpu_register_builtin_fallbacks(void)
{
	vnpu_fallback_internal(VNPU_KEY_PRIVATEUSE1, vnpu_cpu_fallback);
	vnpu_fallback_internal(VNPU_KEY_BACKEND_SELECT, NULL);
	vnpu_fallback_internal(VNPU_KEY_AD_INPLACE_OR_VIEW, NULL);
	vnpu_fallback_internal(VNPU_KEY_AUTOGRAD_CPU, vnpu_autograd_fallback);
	vnpu_fallback_internal(VNPU_KEY_AUTOGRAD_PRIVATEUSE1, vnpu_autograd_fallback);
	vnpu_fallback_internal(VNPU_KEY_PROFILER, vnpu_profiler_fallback);
}
