// SPDX-License-Identifier: MIT
/*
 * Command building: every runtime operation becomes an array of struct
 * vnpu_cmd (include/vnpu/hw_cmd.h) referencing device VAs, so that every
 * backend only transports command arrays.
 */
#include <string.h>

#include "internal.h"

static struct vnpu_cmd cmd_new(uint8_t opcode)
{
	struct vnpu_cmd c;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = opcode;
	return c;
}

struct vnpu_cmd rt_cmd_launch(uint32_t kernel_id, uint32_t blocks,
			      uint64_t args_va, uint32_t args_size)
{
	struct vnpu_cmd c = cmd_new(VNPU_OP_KERNEL_LAUNCH);

	c.launch.kernel_id = kernel_id;
	c.launch.block_count = blocks;
	c.launch.args_va = args_va;
	c.launch.args_size = args_size;
	return c;
}

struct vnpu_cmd rt_cmd_copy(uint64_t src_va, uint64_t dst_va, uint64_t size)
{
	struct vnpu_cmd c = cmd_new(VNPU_OP_DMA_COPY);

	c.copy.src_va = src_va;
	c.copy.dst_va = dst_va;
	c.copy.size = size;
	return c;
}

struct vnpu_cmd rt_cmd_fill(uint64_t dst_va, uint64_t size, uint8_t value,
			    bool wide)
{
	struct vnpu_cmd c = cmd_new(VNPU_OP_FILL);

	c.fill.dst_va = dst_va;
	c.fill.size = size;
	/* Four bytes at a time when dst and size allow: same bytes. */
	c.fill.pattern = wide ? value * 0x01010101u : value;
	c.fill.width = wide ? 4 : 1;
	return c;
}

struct vnpu_cmd rt_cmd_fence_signal(uint64_t va, uint64_t value)
{
	struct vnpu_cmd c = cmd_new(VNPU_OP_FENCE_SIGNAL);

	c.fence.va = va;
	c.fence.value = value;
	return c;
}

struct vnpu_cmd rt_cmd_fence_wait(uint64_t va, uint64_t value)
{
	struct vnpu_cmd c = cmd_new(VNPU_OP_FENCE_WAIT);

	c.fence.va = va;
	c.fence.value = value;
	return c;
}

struct vnpu_cmd rt_cmd_timestamp(uint64_t va)
{
	struct vnpu_cmd c = cmd_new(VNPU_OP_TIMESTAMP);

	c.timestamp.va = va;
	return c;
}

struct vnpu_cmd rt_cmd_inject(uint32_t kind, uint64_t va, bool write)
{
	struct vnpu_cmd c = cmd_new(VNPU_OP_TEST_INJECT);

	c.inject.kind = kind;
	c.inject.va = va;
	c.inject.write = write;
	return c;
}

uint32_t rt_args_build(void *dst, size_t cap,
		       const struct vnpu_kargs_buffer *bufs, uint32_t nbufs,
		       const void *params, uint32_t params_size)
{
	struct vnpu_kargs_header hdr = {nbufs, params_size, 0};
	size_t size = sizeof(hdr) + (size_t)nbufs * sizeof(*bufs) + params_size;
	uint8_t *p = dst;

	if (nbufs > VNPU_KARGS_MAX_BUFFERS || size > cap ||
	    size > VNPU_KARGS_MAX_BYTES)
		return 0;
	memcpy(p, &hdr, sizeof(hdr));
	if (nbufs)
		memcpy(p + sizeof(hdr), bufs, (size_t)nbufs * sizeof(*bufs));
	if (params_size)
		memcpy(p + sizeof(hdr) + (size_t)nbufs * sizeof(*bufs), params,
		       params_size);
	return (uint32_t)size;
}
