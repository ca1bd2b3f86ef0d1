/* SPDX-License-Identifier: MIT */
/*
 * Page tables of a vnpu context (include/vnpu/hw_mmu.h), built the way a
 * driver builds them: the caller supplies table allocation and CPU access,
 * so the same code serves the test host (tables in its bus arena or VRAM)
 * and the runtime's sim backend (tables in process memory).
 */
#ifndef VNPU_PT_H
#define VNPU_PT_H

#include <stdbool.h>
#include <stdint.h>

#include "vnpu_sim.h"

struct vnpu_pt_ops {
	/* A zeroed 4 KiB table in VRAM (vram) or host memory; returns 0 and
	 * its VRAM offset or bus address in *addr, or -1. */
	int (*alloc_table)(void *opaque, bool vram, uint64_t *addr);
	/* The CPU view of the 4 KiB table at addr, NULL when not backed. */
	uint64_t *(*table_ptr)(void *opaque, uint64_t addr, bool vram);
};

struct vnpu_pt {
	const struct vnpu_pt_ops *ops;
	void *opaque;
	uint64_t root;	    /* bus address or VRAM offset of the root table */
	bool tables_in_vram; /* where new tables (and the root) live */
};

/* Allocates the root table. 0 or -1. */
int vnpu_pt_init(struct vnpu_pt *pt, const struct vnpu_pt_ops *ops,
		 void *opaque, bool tables_in_vram);
/* The entry of `level` (0..2) on va's walk; creates missing tables above
 * it when `create`, else NULL when one is missing. */
uint64_t *vnpu_pt_slot(struct vnpu_pt *pt, uint64_t va, unsigned level,
		       bool create);
/* Maps [va, va + size) (page-aligned) to consecutive pages at addr (VRAM
 * offset when vram, else bus address) with prot (VNPU_PTE_READ|WRITE). */
int vnpu_pt_map(struct vnpu_pt *pt, uint64_t va, bool vram, uint64_t addr,
		uint64_t size, uint64_t prot);
/* Clears the leaf entries of [va, va + size); tables stay. */
void vnpu_pt_unmap(struct vnpu_pt *pt, uint64_t va, uint64_t size);
/* Programs context ctx's PT_BASE with the root table and enables it. */
void vnpu_pt_enable_ctx(const struct vnpu_pt *pt, struct vnpu_sim *sim,
			unsigned ctx);
/* Drops cached translations of context ctx (after any change). */
void vnpu_pt_tlb_invalidate(struct vnpu_sim *sim, unsigned ctx);

#endif /* VNPU_PT_H */
