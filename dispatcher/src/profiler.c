// SPDX-License-Identifier: MIT
/* The Profiler key: a backend fallback that counts and times every op,
 * reached while the thread's TLS includes the Profiler key. */
#include <stdio.h>
#include <time.h>

#include "dispatch_internal.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void vnpu_profiler_fallback(const struct vnpu_op *op, vnpu_keyset_t ks,
			    struct vnpu_stack *stack)
{
	uint64_t t0 = now_ns();

	vnpu_redispatch_boxed(op, ks & vnpu_keyset_after(VNPU_FUNC_PROFILER), stack);
	atomic_fetch_add(&((struct vnpu_op *)op)->prof_calls, 1);
	atomic_fetch_add(&((struct vnpu_op *)op)->prof_ns, now_ns() - t0);
}

void vnpu_profiler_enable(bool on)
{
	vnpu_keyset_t bit = VNPU_KS_FUNC(VNPU_FUNC_PROFILER);
	vnpu_keyset_t inc = vnpu_tls_included();

	inc = on ? inc | bit : inc & ~bit;
	vnpu_tls.included_xor = inc ^ VNPU_DEFAULT_INCLUDED;
}

void vnpu_profiler_print(void *file)
{
	FILE *f = file ? file : stdout;

	vnpu_dispatch_init();
	fprintf(f, "%-36s %10s %12s\n", "op (inclusive)", "calls", "total us");
	for (size_t i = 0; i < VNPU_NUM_GEN_OPS; i++) {
		uint64_t c = atomic_load(&vnpu_gen_ops[i]->prof_calls);

		if (c)
			fprintf(f, "%-36s %10llu %12.1f\n", vnpu_gen_ops[i]->name,
				(unsigned long long)c,
				(double)atomic_load(&vnpu_gen_ops[i]->prof_ns) / 1e3);
	}
}

void vnpu_profiler_reset(void)
{
	vnpu_dispatch_init();
	for (size_t i = 0; i < VNPU_NUM_GEN_OPS; i++) {
		atomic_store(&vnpu_gen_ops[i]->prof_calls, 0);
		atomic_store(&vnpu_gen_ops[i]->prof_ns, 0);
	}
}
