// SPDX-License-Identifier: MIT
/*
 * Dispatch overhead: the same CPU kernel called directly, through the typed
 * entry point (key extraction + TLS + table + indirect call) and boxed (a
 * stack of tagged values, generated unboxing adapter). Two kernels: one
 * that does nothing (npu::get_npu_format on the CPU) and add.Tensor on one
 * element (which allocates its result).
 */
#include "bench.h"
#include "vnpu_dispatch.h"
#include "vnpu_ops_kernels.h"

#define N 2000000

static volatile int64_t sink;

static void report(const char *name, double direct, double unboxed, double boxed)
{
	printf("%-22s direct %7.1f ns  unboxed %7.1f ns (+%5.1f ns, x%.2f)  boxed %7.1f ns (+%6.1f ns, x%.2f)\n",
	       name, direct, unboxed, unboxed - direct, unboxed / direct, boxed,
	       boxed - direct, boxed / direct);
}

int main(void)
{
	struct vnpu_at_tensor *t = vnpu_op_ones(VNPU_AT_INTS(1), VNPU_AT_F32, VNPU_AT_DEV_CPU);
	const struct vnpu_op *fmt = vnpu_op_find("npu::get_npu_format");
	const struct vnpu_op *add = vnpu_op_find("aten::add.Tensor");
	vnpu_keyset_t ks = t->keys;
	struct vnpu_stack s;
	double t0, d, u, b;

	vnpu_stack_init(&s);
	/* no-op kernel */
	t0 = bench_now();
	for (int i = 0; i < N; i++)
		sink += vnpu_cpu_get_npu_format(ks, t);
	d = (bench_now() - t0) / N * 1e9;
	t0 = bench_now();
	for (int i = 0; i < N; i++)
		sink += vnpu_op_get_npu_format(t);
	u = (bench_now() - t0) / N * 1e9;
	t0 = bench_now();
	for (int i = 0; i < N; i++) {
		struct vnpu_ivalue v;

		vnpu_stack_push_tensor(&s, t);
		vnpu_call_boxed(fmt, &s);
		v = vnpu_stack_pop(&s);
		sink += v.i;
	}
	b = (bench_now() - t0) / N * 1e9;
	report("get_npu_format (no-op)", d, u, b);

	/* add.Tensor on one element */
	t0 = bench_now();
	for (int i = 0; i < N / 4; i++)
		vnpu_at_release(vnpu_cpu_add_Tensor(ks, t, t, VNPU_AT_INT(1)));
	d = (bench_now() - t0) / (N / 4) * 1e9;
	t0 = bench_now();
	for (int i = 0; i < N / 4; i++)
		vnpu_at_release(vnpu_op_add_Tensor(t, t, VNPU_AT_INT(1)));
	u = (bench_now() - t0) / (N / 4) * 1e9;
	t0 = bench_now();
	for (int i = 0; i < N / 4; i++) {
		vnpu_stack_push_tensor(&s, t);
		vnpu_stack_push_tensor(&s, t);
		vnpu_stack_push_int(&s, 1);
		vnpu_call_boxed(add, &s);
		vnpu_stack_clear(&s);
	}
	b = (bench_now() - t0) / (N / 4) * 1e9;
	report("add.Tensor [1] f32", d, u, b);
	vnpu_stack_destroy(&s);
	vnpu_at_release(t);
	return 0;
}
