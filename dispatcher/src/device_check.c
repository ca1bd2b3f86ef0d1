// SPDX-License-Identifier: MIT
/*
 * The device check of a backend kernel's arguments, as PyTorch's generated
 * wrappers of CUDA kernels make it (device_check: ExactSame, the default):
 * every tensor argument on one device, no CPU scalar excepted. Ops that
 * TensorIterator computes (structured_inherits) and those whose yaml entry
 * says device_check: NoCheck (copies across devices) are not checked here.
 */
#include <stdio.h>

#include "dispatch_internal.h"

static const char *device_name(struct vnpu_at_device d, char *buf, size_t size)
{
	if (d.type == VNPU_AT_CPU)
		return "cpu";
	snprintf(buf, size, "npu:%d", d.index);
	return buf;
}

bool vnpu_device_check_arg(struct vnpu_device_check *c, const struct vnpu_at_tensor *t,
			   const char *arg)
{
	struct vnpu_at_device d;
	char a[16], b[16];

	if (!t)		/* an absent optional tensor */
		return true;
	d = t->storage->device;
	if (!c->have) {
		c->device = d;
		c->have = true;
		return true;
	}
	if (d.type == c->device.type && d.index == c->device.index)
		return true;
	vnpu_at_error_set(VNPU_AT_ERR_VALUE,
			  "%s: Expected all tensors to be on the same device, but got %s is on %s, different from other tensors on %s (when checking argument in method %s)",
			  c->op->name, arg, device_name(d, a, sizeof(a)),
			  device_name(c->device, b, sizeof(b)), c->op->name);
	return false;
}

bool vnpu_device_check_list(struct vnpu_device_check *c, struct vnpu_at_tensor_list l,
			    const char *arg)
{
	for (int64_t i = 0; i < l.n; i++)
		if (!vnpu_device_check_arg(c, l.v[i], arg))
			return false;
	return true;
}
