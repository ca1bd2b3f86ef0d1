// SPDX-License-Identifier: MIT
/* The table of every kernel the device can run. */
#include <string.h>

#include "kernel.h"

extern const struct vnpu_kernel_def vnpu_kernel_fill;
extern const struct vnpu_kernel_def vnpu_kernel_cast;
extern const struct vnpu_kernel_def vnpu_kernel_unary;
extern const struct vnpu_kernel_def vnpu_kernel_binary;
extern const struct vnpu_kernel_def vnpu_kernel_where;
extern const struct vnpu_kernel_def vnpu_kernel_gemm;
extern const struct vnpu_kernel_def vnpu_kernel_conv2d;
extern const struct vnpu_kernel_def vnpu_kernel_qgemm;
extern const struct vnpu_kernel_def vnpu_kernel_pool2d;
extern const struct vnpu_kernel_def vnpu_kernel_softmax;
extern const struct vnpu_kernel_def vnpu_kernel_layer_norm;
extern const struct vnpu_kernel_def vnpu_kernel_reduce;
extern const struct vnpu_kernel_def vnpu_kernel_transdata;
extern const struct vnpu_kernel_def vnpu_kernel_index;
extern const struct vnpu_kernel_def vnpu_kernel_range;
extern const struct vnpu_kernel_def vnpu_kernel_scan;
extern const struct vnpu_kernel_def vnpu_kernel_sort;

/* Indexed by kernel id. */
static const struct vnpu_kernel_def *const kernels[] = {
	[VNPU_KERNEL_FILL] = &vnpu_kernel_fill,
	[VNPU_KERNEL_CAST] = &vnpu_kernel_cast,
	[VNPU_KERNEL_UNARY] = &vnpu_kernel_unary,
	[VNPU_KERNEL_BINARY] = &vnpu_kernel_binary,
	[VNPU_KERNEL_WHERE] = &vnpu_kernel_where,
	[VNPU_KERNEL_GEMM] = &vnpu_kernel_gemm,
	[VNPU_KERNEL_CONV2D] = &vnpu_kernel_conv2d,
	[VNPU_KERNEL_POOL2D] = &vnpu_kernel_pool2d,
	[VNPU_KERNEL_SOFTMAX] = &vnpu_kernel_softmax,
	[VNPU_KERNEL_LAYER_NORM] = &vnpu_kernel_layer_norm,
	[VNPU_KERNEL_REDUCE] = &vnpu_kernel_reduce,
	[VNPU_KERNEL_TRANSDATA] = &vnpu_kernel_transdata,
	[VNPU_KERNEL_QGEMM] = &vnpu_kernel_qgemm,
	[VNPU_KERNEL_INDEX] = &vnpu_kernel_index,
	[VNPU_KERNEL_RANGE] = &vnpu_kernel_range,
	[VNPU_KERNEL_SCAN] = &vnpu_kernel_scan,
	[VNPU_KERNEL_SORT] = &vnpu_kernel_sort,
};

_Static_assert(sizeof(kernels) / sizeof(kernels[0]) == VNPU_KERNEL_ID_MAX + 1,
	       "every kernel id has an entry");

const struct vnpu_kernel_def *vnpu_kernel_find(uint32_t id)
{
	if (id >= sizeof(kernels) / sizeof(kernels[0]))
		return NULL;
	return kernels[id];
}

size_t vnpu_kernel_count(void)
{
	return VNPU_KERNEL_ID_MAX;
}

const struct vnpu_kernel_def *vnpu_kernel_at(size_t index)
{
	return index < VNPU_KERNEL_ID_MAX ? kernels[index + 1] : NULL;
}

const struct vnpu_kernel_def *vnpu_kernel_find_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 1; i <= VNPU_KERNEL_ID_MAX; i++)
		if (kernels[i] && strcmp(kernels[i]->name, name) == 0)
			return kernels[i];
	return NULL;
}

/* The calling thread's cancellation hook (kernel.h). */
static _Thread_local struct {
	vnpu_kernel_stop_fn fn;
	void *opaque;
} stop_hook;

void vnpu_kernel_set_stop_hook(vnpu_kernel_stop_fn fn, void *opaque)
{
	stop_hook.fn = fn;
	stop_hook.opaque = opaque;
}

bool vnpu_kernel_should_stop(void)
{
	return stop_hook.fn && stop_hook.fn(stop_hook.opaque);
}
