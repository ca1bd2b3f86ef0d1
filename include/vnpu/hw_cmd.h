/* SPDX-License-Identifier: MIT */
/*
 * vnpu device: queue rings, commands and completion records.
 *
 * A queue is a ring of 2^RING_LOG2 commands of 64 bytes in host memory and a
 * completion ring with the same number of 32-byte records. The command in
 * ring slot i completes into completion slot i, so the completion ring can
 * never overflow. Commands of one queue run strictly in order; each starts
 * after the previous one has retired. All addresses inside commands are device
 * virtual addresses of the queue's context; ring and completion addresses are
 * bus addresses programmed through registers.
 */
#ifndef VNPU_HW_CMD_H
#define VNPU_HW_CMD_H

#include "hw_types.h"

#define VNPU_CMD_SIZE		64
#define VNPU_CPL_SIZE		32
#define VNPU_RING_ALIGN		4096

enum vnpu_opcode {
	VNPU_OP_NOP = 0x00,
	VNPU_OP_KERNEL_LAUNCH = 0x01,
	VNPU_OP_DMA_COPY = 0x02,
	VNPU_OP_FILL = 0x03,
	VNPU_OP_FENCE_SIGNAL = 0x04,
	VNPU_OP_FENCE_WAIT = 0x05,
	VNPU_OP_TIMESTAMP = 0x06,
	VNPU_OP_TEST_INJECT = 0x7f,	/* test mode only */
};

/* Nonzero for an opcode the device executes; any other completes with
 * VNPU_STATUS_INVALID_OPCODE (the driver refuses it first). */
static inline int vnpu_opcode_known(uint32_t opcode)
{
	return opcode <= VNPU_OP_TIMESTAMP || opcode == VNPU_OP_TEST_INJECT;
}

/* Command flags. Any other bit set is VNPU_STATUS_INVALID_FIELD. */
#define VNPU_CMD_F_IRQ		(1u << 0)	/* interrupt on completion */
#define VNPU_CMD_F_ALL		VNPU_CMD_F_IRQ

/* Limits checked by the command processor. */
#define VNPU_COPY_MAX_BYTES	(1ull << 32)	/* DMA_COPY and FILL size */
#define VNPU_KARGS_MAX_BYTES	4096		/* kernel argument block */
#define VNPU_LAUNCH_MAX_BLOCKS	65536

struct vnpu_cmd_header {
	uint8_t opcode;		/* enum vnpu_opcode */
	uint8_t flags;		/* VNPU_CMD_F_* */
	uint16_t reserved0;	/* must be zero */
	uint32_t reserved1;	/* must be zero */
	uint64_t seqno;		/* echoed in the completion and DONE_SEQ */
};

struct vnpu_cmd_launch {
	uint32_t kernel_id;	/* enum vnpu_kernel_id, must be in the firmware */
	uint32_t block_count;	/* 1 .. VNPU_LAUNCH_MAX_BLOCKS */
	uint64_t args_va;	/* struct vnpu_kargs_header, 8-byte aligned */
	uint32_t args_size;	/* bytes, <= VNPU_KARGS_MAX_BYTES */
	uint32_t reserved[7];
};

struct vnpu_cmd_copy {
	uint64_t src_va;
	uint64_t dst_va;
	uint64_t size;		/* 1 .. VNPU_COPY_MAX_BYTES */
	uint64_t reserved[3];
};

struct vnpu_cmd_fill {
	uint64_t dst_va;	/* aligned to width */
	uint64_t size;		/* bytes, multiple of width, 1 .. VNPU_COPY_MAX_BYTES */
	uint32_t pattern;	/* low `width` bytes are repeated */
	uint32_t width;		/* 1, 2 or 4 */
	uint64_t reserved[3];
};

/* FENCE_SIGNAL writes value; FENCE_WAIT blocks the queue until the 64-bit
 * word at va is >= value (unsigned). Both need an 8-byte aligned va. */
struct vnpu_cmd_fence {
	uint64_t va;
	uint64_t value;
	uint64_t reserved[4];
};

/* Writes the device clock (ns, the TIMESTAMP register) as a 64-bit word. */
struct vnpu_cmd_timestamp {
	uint64_t va;		/* 8-byte aligned */
	uint64_t reserved[5];
};

enum vnpu_inject_kind {
	VNPU_TEST_HANG = 1,	/* the firmware stops executing and heart-beating */
	VNPU_TEST_MMU_FAULT = 2,	/* access va as if a kernel did */
	VNPU_TEST_FATAL = 3,	/* firmware fatal error */
	VNPU_TEST_LOST_IRQ = 4,	/* the next interrupt is dropped */
};

struct vnpu_cmd_test_inject {
	uint32_t kind;		/* enum vnpu_inject_kind */
	uint32_t write;		/* VNPU_TEST_MMU_FAULT: 1 = write access */
	uint64_t va;		/* VNPU_TEST_MMU_FAULT */
	uint64_t reserved[4];
};

struct vnpu_cmd {
	struct vnpu_cmd_header hdr;
	union {
		struct vnpu_cmd_launch launch;
		struct vnpu_cmd_copy copy;
		struct vnpu_cmd_fill fill;
		struct vnpu_cmd_fence fence;
		struct vnpu_cmd_timestamp timestamp;
		struct vnpu_cmd_test_inject inject;
		uint8_t raw[48];
	};
};

/* Written by the device when a command retires, before DONE_SEQ moves and
 * before the interrupt. */
struct vnpu_cpl {
	uint64_t seqno;		/* the command's header seqno */
	uint32_t status;	/* enum vnpu_status */
	uint8_t opcode;
	uint8_t reserved[3];
	uint64_t info;		/* MMU_FAULT: faulting VA; else status detail */
	uint64_t timestamp;	/* device clock at retirement, ns */
};

VNPU_ASSERT_SIZE(struct vnpu_cmd_header, 16);
VNPU_ASSERT_SIZE(struct vnpu_cmd_launch, 48);
VNPU_ASSERT_SIZE(struct vnpu_cmd_copy, 48);
VNPU_ASSERT_SIZE(struct vnpu_cmd_fill, 48);
VNPU_ASSERT_SIZE(struct vnpu_cmd_fence, 48);
VNPU_ASSERT_SIZE(struct vnpu_cmd_timestamp, 48);
VNPU_ASSERT_SIZE(struct vnpu_cmd_test_inject, 48);
VNPU_ASSERT_SIZE(struct vnpu_cmd, VNPU_CMD_SIZE);
VNPU_ASSERT_SIZE(struct vnpu_cpl, VNPU_CPL_SIZE);
VNPU_ASSERT_OFFSET(struct vnpu_cmd_header, seqno, 8);
VNPU_ASSERT_OFFSET(struct vnpu_cmd, launch, 16);
VNPU_ASSERT_OFFSET(struct vnpu_cmd_launch, args_va, 8);
VNPU_ASSERT_OFFSET(struct vnpu_cmd_launch, args_size, 16);
VNPU_ASSERT_OFFSET(struct vnpu_cmd_copy, size, 16);
VNPU_ASSERT_OFFSET(struct vnpu_cmd_fill, pattern, 16);
VNPU_ASSERT_OFFSET(struct vnpu_cmd_fill, width, 20);
VNPU_ASSERT_OFFSET(struct vnpu_cmd_fence, value, 8);
VNPU_ASSERT_OFFSET(struct vnpu_cmd_test_inject, va, 8);
VNPU_ASSERT_OFFSET(struct vnpu_cpl, status, 8);
VNPU_ASSERT_OFFSET(struct vnpu_cpl, opcode, 12);
VNPU_ASSERT_OFFSET(struct vnpu_cpl, info, 16);
VNPU_ASSERT_OFFSET(struct vnpu_cpl, timestamp, 24);

#endif /* VNPU_HW_CMD_H */
