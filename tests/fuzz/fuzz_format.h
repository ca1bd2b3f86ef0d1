/* SPDX-License-Identifier: MIT */
/*
 * Input format of the fuzz_cmd target (shared with the corpus generator).
 *
 *   u8 flags     bit 0: context 0 page tables in VRAM; bits 1-2: queue q
 *                ring of 2^(2 + bit) entries
 *   then operations, each a byte (value % FUZZ_OP_COUNT) and its operands,
 *   little endian, until the input ends:
 *     REG     u16 offset, u32 value            BAR0 write
 *     HOST    u16 offset, u8 len, len bytes    host window contents
 *     VRAM    u16 offset, u8 len, len bytes    VRAM window contents
 *     SUBMIT  u8 queue, 64 bytes command       push (seqno replaced), doorbell
 *     RUN     u8 budget                        vnpu_sim_run + invariants
 *     CLOCK   u32 ns                           advance the device clock
 *     PTE     u8 ctx, u32 va page, u8 level, u64 value   raw table entry
 *     MAP     u8 ctx, u16 va page, u16 page, u8 flags    bit0 VRAM (else
 *             host, pages 0-1 refused by the bus), bit1 READ, bit2 WRITE
 */
#ifndef VNPU_FUZZ_FORMAT_H
#define VNPU_FUZZ_FORMAT_H

#include "vnpu/hw_mmu.h"
#include "vnpu_simhost.h"

enum fuzz_op {
	FUZZ_OP_REG,
	FUZZ_OP_HOST,
	FUZZ_OP_VRAM,
	FUZZ_OP_SUBMIT,
	FUZZ_OP_RUN,
	FUZZ_OP_CLOCK,
	FUZZ_OP_PTE,
	FUZZ_OP_MAP,
	FUZZ_OP_COUNT
};

#define FUZZ_QUEUES	 2
#define FUZZ_CONTEXTS	 2
#define FUZZ_HOST_MEM	 (1u << 20)
#define FUZZ_VRAM	 (1u << 20)
#define FUZZ_HOST_WINDOW 0x10000u
#define FUZZ_VRAM_WINDOW 0x10000u
#define FUZZ_MAX_OPS	 512
/* Where the windows are: bus / VRAM offset, and device VA (both contexts). */
#define FUZZ_HOST_BUS	 (VNPU_SIMHOST_BUS_BASE + VNPU_SIMHOST_HOLE_SIZE)
#define FUZZ_VRAM_OFFSET 0u
#define FUZZ_HOST_VA	 0x10000ull
#define FUZZ_VRAM_VA	 0x40000ull

#endif /* VNPU_FUZZ_FORMAT_H */
