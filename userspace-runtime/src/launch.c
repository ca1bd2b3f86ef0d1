// SPDX-License-Identifier: MIT
/* Kernel launch by name: validation, argument block, KERNEL_LAUNCH. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kernel.h"

vnpu_error_t vnpu_launch_kernel(const char *name, uint32_t blocks,
				const struct vnpu_launch_buffer *bufs,
				uint32_t nbufs, const void *params,
				size_t params_size, vnpu_stream_t stream)
{
	const struct vnpu_kernel_def *k;
	struct vnpu_kargs_buffer kb[VNPU_KARGS_MAX_BUFFERS];
	uint8_t args[VNPU_KARGS_MAX_BYTES];
	struct rt_stream *s;
	struct vnpu_cmd c;
	uint32_t args_size;
	char what[48];
	vnpu_error_t err = rt_stream_get(stream, &s);

	if (err)
		return err;
	if (!name) {
		err = rt_fail(VNPU_ERROR_NULL_POINTER, "kernel name is NULL");
		goto out;
	}
	k = vnpu_kernel_find_name(name);
	if (!k) {
		err = rt_fail(VNPU_ERROR_UNKNOWN_KERNEL,
			      "no kernel named \"%.32s\"", name);
		goto out;
	}
	if (!blocks || blocks > VNPU_LAUNCH_MAX_BLOCKS) {
		err = rt_fail(VNPU_ERROR_INVALID_VALUE,
			      "launch %s: %" PRIu32 " blocks (1..%u)", name,
			      blocks, VNPU_LAUNCH_MAX_BLOCKS);
		goto out;
	}
	if (nbufs > VNPU_KARGS_MAX_BUFFERS) {
		err = rt_fail(VNPU_ERROR_INVALID_VALUE,
			      "launch %s: %" PRIu32 " buffers (at most %u)",
			      name, nbufs, VNPU_KARGS_MAX_BUFFERS);
		goto out;
	}
	if ((nbufs && !bufs) || (params_size && !params)) {
		err = rt_fail(VNPU_ERROR_NULL_POINTER, "launch %s: %s is NULL",
			      name, params_size && !params ? "params" : "bufs");
		goto out;
	}
	if (params_size != k->params_size) {
		err = rt_fail(VNPU_ERROR_INVALID_VALUE,
			      "launch %s: params_size %zu, the kernel's params "
			      "are %" PRIu32 " bytes",
			      name, params_size, k->params_size);
		goto out;
	}
	for (uint32_t i = 0; i < nbufs; i++) {
		const struct vnpu_launch_buffer *b = &bufs[i];

		if (!b->size || !b->access ||
		    (b->access & ~(uint32_t)(VNPU_ACCESS_READ |
					     VNPU_ACCESS_WRITE))) {
			err = rt_fail(VNPU_ERROR_INVALID_VALUE,
				      "launch %s: buffer %" PRIu32
				      ": size %zu, access 0x%x (size >= 1, "
				      "access READ and/or WRITE)",
				      name, i, b->size, b->access);
			goto out;
		}
		if (!b->ptr) {
			err = rt_fail(VNPU_ERROR_NULL_POINTER,
				      "launch %s: buffer %" PRIu32 " is NULL",
				      name, i);
			goto out;
		}
		err = rt_resolve(s->dev, b->ptr, b->size, &kb[i].va, NULL);
		if (err) {
			char detail[320];

			snprintf(detail, sizeof(detail),
				 "launch %s: buffer %" PRIu32 ": %s", name, i,
				 vnpu_last_error_detail());
			rt_fail_detail(err, detail);
			goto out;
		}
		kb[i].size = b->size;
		kb[i].access = b->access;
		kb[i].reserved = 0;
	}
	args_size = rt_args_build(args, sizeof(args), kb, nbufs, params,
				  (uint32_t)params_size);
	c = vnpu_launch_cmd(k->id, blocks, 0, args_size);
	{
		/* "launch <name>" without the cost of snprintf per launch */
		static const char prefix[] = "launch ";
		size_t len = strnlen(k->name, sizeof(what) - sizeof(prefix));

		memcpy(what, prefix, sizeof(prefix) - 1);
		memcpy(what + sizeof(prefix) - 1, k->name, len);
		what[sizeof(prefix) - 1 + len] = '\0';
	}
	{
		struct rt_opdesc op = {
			.what = what,
			.args = args,
			.args_size = args_size,
		};

		err = rt_submit(s, &op, &c, 1, NULL);
	}
	if (!err && rt.cfg.launch_blocking)
		err = rt_stream_sync(s, true);
out:
	rt_stream_put(s);
	return err;
}
