/* SPDX-License-Identifier: MIT */
/*
 * vnpu device: per-context MMU page tables.
 *
 * Each context translates 39-bit device virtual addresses through a
 * three-level table of 4 KiB pages: VA[38:30] indexes the level-0 table,
 * VA[29:21] level 1, VA[20:12] level 2, whose entries map 4 KiB pages.
 * A table is 512 little-endian 64-bit entries in one 4 KiB-aligned page,
 * in host memory (bus address) or in VRAM (offset), as the referring entry
 * or the PT_BASE register says. The device may cache translations until the
 * driver writes CTX_CTRL.TLB_INVALIDATE.
 */
#ifndef VNPU_HW_MMU_H
#define VNPU_HW_MMU_H

#include "hw_types.h"

#define VNPU_PAGE_SHIFT		12
#define VNPU_PAGE_SIZE		(1ull << VNPU_PAGE_SHIFT)
#define VNPU_VA_BITS		39
#define VNPU_VA_LIMIT		(1ull << VNPU_VA_BITS)
#define VNPU_PT_LEVELS		3
#define VNPU_PT_ENTRIES		512
#define VNPU_PT_INDEX(va, level) \
	(((va) >> (VNPU_PAGE_SHIFT + 9 * (VNPU_PT_LEVELS - 1 - (level)))) & 0x1ffu)

/* Page-table entry bits. Bits not listed must be zero (else BAD_PTE). */
#define VNPU_PTE_VALID		(1ull << 0)
#define VNPU_PTE_READ		(1ull << 1)	/* leaf only */
#define VNPU_PTE_WRITE		(1ull << 2)	/* leaf only */
#define VNPU_PTE_VRAM		(1ull << 3)	/* address is a VRAM offset */
#define VNPU_PTE_ADDR_MASK	0x000ffffffffff000ull	/* bits 51:12 */
#define VNPU_PTE_TABLE_BITS	(VNPU_PTE_VALID | VNPU_PTE_VRAM | VNPU_PTE_ADDR_MASK)
#define VNPU_PTE_LEAF_BITS	(VNPU_PTE_TABLE_BITS | VNPU_PTE_READ | VNPU_PTE_WRITE)

/* CTX_PT_BASE_LO bit 0: the root table is in VRAM. */
#define VNPU_PT_BASE_VRAM	(1u << 0)
#define VNPU_PT_BASE_ADDR_MASK	VNPU_PTE_ADDR_MASK

/* Reason field of CTX_FAULT_STATUS. */
enum vnpu_fault_reason {
	VNPU_FAULT_NONE = 0,
	VNPU_FAULT_NOT_MAPPED = 1,	/* an entry on the walk is not VALID */
	VNPU_FAULT_PERMISSION = 2,	/* leaf lacks READ or WRITE */
	VNPU_FAULT_BAD_PTE = 3,		/* reserved bits set, VRAM offset beyond VRAM */
	VNPU_FAULT_TABLE_DMA = 4,	/* a table could not be read */
	VNPU_FAULT_VA_RANGE = 5,	/* VA (or VA + size) beyond VNPU_VA_LIMIT */
	VNPU_FAULT_INJECTED = 6,	/* VNPU_TEST_MMU_FAULT on a mapped VA */
};

VNPU_STATIC_ASSERT(VNPU_PT_ENTRIES * 8 == VNPU_PAGE_SIZE, "one table per page");
VNPU_STATIC_ASSERT(VNPU_PAGE_SHIFT + 9 * VNPU_PT_LEVELS == VNPU_VA_BITS, "VA bits");

#endif /* VNPU_HW_MMU_H */
