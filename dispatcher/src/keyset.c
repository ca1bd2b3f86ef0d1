// SPDX-License-Identifier: MIT
/* Dispatch keys and key sets: c10's bit layout, priority and table index,
 * and the thread-local include/exclude sets. */
#include <stdio.h>
#include <string.h>

#include "dispatch_internal.h"

_Thread_local struct vnpu_tls_state vnpu_tls;

/* offset: first table slot of the functionality; mask: backends for the
 * per-backend functionalities (initializeFunctionalityOffsetsAndMasks). */
const struct vnpu_offset_mask vnpu_offsets[VNPU_NUM_FUNCTIONALITIES] = {
	[VNPU_FUNC_UNDEFINED] = { 0, 0 },
	[VNPU_FUNC_DENSE] = { 1, VNPU_KS_FULL_BACKENDS },
	[VNPU_FUNC_BACKEND_SELECT] = { 1 + VNPU_NUM_BACKENDS, 0 },
	[VNPU_FUNC_AD_INPLACE_OR_VIEW] = { 2 + VNPU_NUM_BACKENDS, 0 },
	[VNPU_FUNC_AUTOGRAD] = { 3 + VNPU_NUM_BACKENDS, VNPU_KS_FULL_BACKENDS },
	[VNPU_FUNC_PROFILER] = { 3 + 2 * VNPU_NUM_BACKENDS, 0 },
};

_Static_assert(VNPU_KEY_CPU == 1 && VNPU_KEY_PRIVATEUSE1 == 2 &&
	       VNPU_KEY_BACKEND_SELECT == 1 + VNPU_NUM_BACKENDS &&
	       VNPU_KEY_AUTOGRAD_CPU == 3 + VNPU_NUM_BACKENDS &&
	       VNPU_KEY_PROFILER == 3 + 2 * VNPU_NUM_BACKENDS &&
	       VNPU_NUM_RUNTIME_KEYS == 4 + 2 * VNPU_NUM_BACKENDS,
	       "runtime keys are numbered by their table slot");

vnpu_keyset_t vnpu_keyset_of(enum vnpu_dispatch_key key)
{
	vnpu_keyset_t autograd = VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD) |
				 VNPU_KS_FULL_BACKENDS;
	vnpu_keyset_t dense = VNPU_KS_FUNC(VNPU_FUNC_DENSE) |
			      VNPU_KS_FULL_BACKENDS;

	switch (key) {
	case VNPU_KEY_CPU:
		return VNPU_KS_FUNC(VNPU_FUNC_DENSE) |
		       VNPU_KS_BACKEND(VNPU_BACKEND_CPU);
	case VNPU_KEY_PRIVATEUSE1:
		return VNPU_KS_FUNC(VNPU_FUNC_DENSE) |
		       VNPU_KS_BACKEND(VNPU_BACKEND_PRIVATEUSE1);
	case VNPU_KEY_BACKEND_SELECT:
		return VNPU_KS_FUNC(VNPU_FUNC_BACKEND_SELECT);
	case VNPU_KEY_AD_INPLACE_OR_VIEW:
		return VNPU_KS_FUNC(VNPU_FUNC_AD_INPLACE_OR_VIEW);
	case VNPU_KEY_AUTOGRAD_CPU:
		return VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD) |
		       VNPU_KS_BACKEND(VNPU_BACKEND_CPU);
	case VNPU_KEY_AUTOGRAD_PRIVATEUSE1:
		return VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD) |
		       VNPU_KS_BACKEND(VNPU_BACKEND_PRIVATEUSE1);
	case VNPU_KEY_PROFILER:
		return VNPU_KS_FUNC(VNPU_FUNC_PROFILER);
	case VNPU_KEY_AUTOGRAD:
		return autograd;
	case VNPU_KEY_COMPOSITE_EXPLICIT_AUTOGRAD:
		return dense;
	case VNPU_KEY_COMPOSITE_IMPLICIT_AUTOGRAD:
		return dense | autograd;
	default:
		return 0;
	}
}

enum vnpu_dispatch_key vnpu_keyset_highest(vnpu_keyset_t ks)
{
	return (enum vnpu_dispatch_key)vnpu_keyset_index(ks);
}

vnpu_keyset_t vnpu_keyset_after(enum vnpu_functionality f)
{
	if (f <= VNPU_FUNC_UNDEFINED)
		return 0;
	return (VNPU_KS_FUNC(f) - 1) | VNPU_KS_FULL_BACKENDS;
}

vnpu_keyset_t vnpu_backend_keyset(struct vnpu_at_device dev)
{
	return dev.type == VNPU_AT_NPU ? vnpu_keyset_of(VNPU_KEY_PRIVATEUSE1)
				       : vnpu_keyset_of(VNPU_KEY_CPU);
}

vnpu_keyset_t vnpu_device_keys(struct vnpu_at_device dev)
{
	return vnpu_backend_keyset(dev);
}

vnpu_keyset_t vnpu_list_keys(struct vnpu_at_tensor_list l)
{
	vnpu_keyset_t ks = 0;

	for (int64_t i = 0; i < l.n; i++)
		ks |= vnpu_keys_of(l.v[i]);
	return ks;
}

static const char *const key_names[VNPU_NUM_KEYS] = {
	[VNPU_KEY_UNDEFINED] = "Undefined",
	[VNPU_KEY_CPU] = "CPU",
	[VNPU_KEY_PRIVATEUSE1] = "npu",
	[VNPU_KEY_BACKEND_SELECT] = "BackendSelect",
	[VNPU_KEY_AD_INPLACE_OR_VIEW] = "ADInplaceOrView",
	[VNPU_KEY_AUTOGRAD_CPU] = "AutogradCPU",
	[VNPU_KEY_AUTOGRAD_PRIVATEUSE1] = "AutogradPrivateUse1",
	[VNPU_KEY_PROFILER] = "Profiler",
	[VNPU_KEY_AUTOGRAD] = "Autograd",
	[VNPU_KEY_COMPOSITE_EXPLICIT_AUTOGRAD] = "CompositeExplicitAutograd",
	[VNPU_KEY_COMPOSITE_IMPLICIT_AUTOGRAD] = "CompositeImplicitAutograd",
};

const char *vnpu_key_name(enum vnpu_dispatch_key key)
{
	if ((unsigned)key >= VNPU_NUM_KEYS)
		return "Invalid";
	return key_names[key];
}

char *vnpu_keyset_format(vnpu_keyset_t ks, char *buf, size_t size)
{
	size_t len = 0;
	bool first = true;

	if (!size)
		return buf;
	len = (size_t)snprintf(buf, size, "DispatchKeySet(");
	/* highest priority first, as c10 prints */
	for (int k = VNPU_NUM_RUNTIME_KEYS - 1; k > 0; k--) {
		vnpu_keyset_t bits = vnpu_keyset_of((enum vnpu_dispatch_key)k);

		if ((ks & bits) != bits)
			continue;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s",
						first ? "" : ", ",
						vnpu_key_name((enum vnpu_dispatch_key)k));
		first = false;
	}
	if (len < size)
		snprintf(buf + len, size - len, ")");
	return buf;
}

void vnpu_tls_include_begin(struct vnpu_tls_guard *g, vnpu_keyset_t ks)
{
	vnpu_keyset_t inc = vnpu_tls.included_xor ^ VNPU_DEFAULT_INCLUDED;

	g->saved_included = vnpu_tls.included_xor;
	g->saved_excluded = vnpu_tls.excluded;
	vnpu_tls.included_xor = (inc | ks) ^ VNPU_DEFAULT_INCLUDED;
}

void vnpu_tls_exclude_begin(struct vnpu_tls_guard *g, vnpu_keyset_t ks)
{
	g->saved_included = vnpu_tls.included_xor;
	g->saved_excluded = vnpu_tls.excluded;
	vnpu_tls.excluded |= ks & ~VNPU_KS_FULL_BACKENDS;
}

void vnpu_tls_guard_end(struct vnpu_tls_guard *g)
{
	vnpu_tls.included_xor = g->saved_included;
	vnpu_tls.excluded = g->saved_excluded;
}

vnpu_keyset_t vnpu_tls_included(void)
{
	return vnpu_tls.included_xor ^ VNPU_DEFAULT_INCLUDED;
}

vnpu_keyset_t vnpu_tls_excluded(void)
{
	return vnpu_tls.excluded;
}

void vnpu_no_grad_begin(struct vnpu_tls_guard *g)
{
	vnpu_tls_exclude_begin(g, VNPU_KS_FUNC(VNPU_FUNC_AUTOGRAD));
}
