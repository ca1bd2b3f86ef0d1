/* SPDX-License-Identifier: MIT */
/*
 * Building struct vnpu_cmd (hw_cmd.h): one builder per command, shared by
 * the runtime, the firmware simulator's host and every test that writes
 * commands itself. Each returns a command with all reserved fields and
 * padding zero, header flags 0 and seqno 0 (the queue's writer sets it).
 */
#ifndef VNPU_HW_CMD_BUILD_H
#define VNPU_HW_CMD_BUILD_H

#include "hw_cmd.h"

#ifdef __KERNEL__
#include <linux/string.h>
#else
#include <string.h>
#endif

/* A zeroed command of any opcode, valid or not (tests build bad ones). */
static inline struct vnpu_cmd vnpu_cmd_of(uint8_t opcode)
{
	struct vnpu_cmd c;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = opcode;
	return c;
}

static inline struct vnpu_cmd vnpu_nop_cmd(void)
{
	return vnpu_cmd_of(VNPU_OP_NOP);
}

static inline struct vnpu_cmd vnpu_launch_cmd(uint32_t kernel_id,
					      uint32_t block_count,
					      uint64_t args_va,
					      uint32_t args_size)
{
	struct vnpu_cmd c = vnpu_cmd_of(VNPU_OP_KERNEL_LAUNCH);

	c.launch.kernel_id = kernel_id;
	c.launch.block_count = block_count;
	c.launch.args_va = args_va;
	c.launch.args_size = args_size;
	return c;
}

static inline struct vnpu_cmd vnpu_copy_cmd(uint64_t src_va, uint64_t dst_va,
					    uint64_t size)
{
	struct vnpu_cmd c = vnpu_cmd_of(VNPU_OP_DMA_COPY);

	c.copy.src_va = src_va;
	c.copy.dst_va = dst_va;
	c.copy.size = size;
	return c;
}

/* width is the pattern's size in bytes: 1, 2 or 4. */
static inline struct vnpu_cmd vnpu_fill_cmd(uint64_t dst_va, uint64_t size,
					    uint32_t pattern, uint32_t width)
{
	struct vnpu_cmd c = vnpu_cmd_of(VNPU_OP_FILL);

	c.fill.dst_va = dst_va;
	c.fill.size = size;
	c.fill.pattern = pattern;
	c.fill.width = width;
	return c;
}

/* opcode is VNPU_OP_FENCE_SIGNAL or VNPU_OP_FENCE_WAIT. */
static inline struct vnpu_cmd vnpu_fence_cmd(uint8_t opcode, uint64_t va,
					     uint64_t value)
{
	struct vnpu_cmd c = vnpu_cmd_of(opcode);

	c.fence.va = va;
	c.fence.value = value;
	return c;
}

static inline struct vnpu_cmd vnpu_fence_signal_cmd(uint64_t va, uint64_t value)
{
	return vnpu_fence_cmd(VNPU_OP_FENCE_SIGNAL, va, value);
}

static inline struct vnpu_cmd vnpu_fence_wait_cmd(uint64_t va, uint64_t value)
{
	return vnpu_fence_cmd(VNPU_OP_FENCE_WAIT, va, value);
}

static inline struct vnpu_cmd vnpu_timestamp_cmd(uint64_t va)
{
	struct vnpu_cmd c = vnpu_cmd_of(VNPU_OP_TIMESTAMP);

	c.timestamp.va = va;
	return c;
}

/* Test mode only: kind is enum vnpu_inject_kind. */
static inline struct vnpu_cmd vnpu_inject_cmd(uint32_t kind, uint64_t va,
					      uint32_t write)
{
	struct vnpu_cmd c = vnpu_cmd_of(VNPU_OP_TEST_INJECT);

	c.inject.kind = kind;
	c.inject.va = va;
	c.inject.write = write;
	return c;
}

#endif /* VNPU_HW_CMD_BUILD_H */
