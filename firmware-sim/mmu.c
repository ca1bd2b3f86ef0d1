// SPDX-License-Identifier: MIT
/* Per-context MMU: three-level table walk, software TLB and fault records. */
#include <string.h>

#include "sim_internal.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "page-table entries are read as little-endian words");

/* The command processor drops its entries when it sees the new gen. */
void sim_tlb_invalidate_locked(struct sim_ctx *ctx)
{
	ctx->tlb_gen++;
}

bool sim_mmu_range_ok(uint64_t va, uint64_t size, struct sim_fault *fault)
{
	if (va < VNPU_VA_LIMIT && size <= VNPU_VA_LIMIT - va)
		return true;
	fault->va = va < VNPU_VA_LIMIT ? VNPU_VA_LIMIT : va;
	fault->reason = VNPU_FAULT_VA_RANGE;
	return false;
}

/* Reads one table entry; false with the fault reason on failure. */
static bool read_entry(struct vnpu_sim *sim, uint64_t table, bool in_vram,
		       unsigned index, uint64_t *entry, uint32_t *reason)
{
	uint64_t addr = table + (uint64_t)index * 8;

	if (in_vram) {
		if (table > sim->cfg.vram_size - VNPU_PAGE_SIZE) {
			*reason = VNPU_FAULT_BAD_PTE;
			return false;
		}
		memcpy(entry, sim->vram + addr, sizeof(*entry));
		return true;
	}
	if (sim->hal.dma_read(sim->hal.opaque, addr, entry, sizeof(*entry))) {
		*reason = VNPU_FAULT_TABLE_DMA;
		return false;
	}
	return true;
}

/* Checks a table entry of the given level; false with the reason. */
static bool entry_ok(struct vnpu_sim *sim, uint64_t entry, bool last,
		     uint32_t *reason)
{
	if (!(entry & VNPU_PTE_VALID)) {
		*reason = VNPU_FAULT_NOT_MAPPED;
		return false;
	}
	if (entry & ~(last ? VNPU_PTE_LEAF_BITS : VNPU_PTE_TABLE_BITS)) {
		*reason = VNPU_FAULT_BAD_PTE;
		return false;
	}
	if ((entry & VNPU_PTE_VRAM) &&
	    (entry & VNPU_PTE_ADDR_MASK) > sim->cfg.vram_size - VNPU_PAGE_SIZE) {
		*reason = VNPU_FAULT_BAD_PTE;
		return false;
	}
	return true;
}

/* Walks from pt_base to the leaf table holding va's entry. */
static bool walk_to_leaf_table(struct vnpu_sim *sim, uint64_t pt_base,
			       uint64_t va, uint64_t *table, bool *in_vram,
			       uint32_t *reason)
{
	uint64_t entry;

	*table = pt_base & VNPU_PT_BASE_ADDR_MASK;
	*in_vram = pt_base & VNPU_PT_BASE_VRAM;
	if (pt_base & ~(VNPU_PT_BASE_ADDR_MASK | VNPU_PT_BASE_VRAM)) {
		*reason = VNPU_FAULT_BAD_PTE;
		return false;
	}
	for (unsigned level = 0; level < VNPU_PT_LEVELS - 1; level++) {
		if (!read_entry(sim, *table, *in_vram, VNPU_PT_INDEX(va, level),
				&entry, reason) ||
		    !entry_ok(sim, entry, false, reason))
			return false;
		*table = entry & VNPU_PTE_ADDR_MASK;
		*in_vram = entry & VNPU_PTE_VRAM;
	}
	return true;
}

/* Walks the tables from pt_base to the leaf entry mapping va. */
static bool walk(struct vnpu_sim *sim, uint64_t pt_base, uint64_t va,
		 uint64_t *leaf, uint32_t *reason)
{
	uint64_t table, entry = 0;
	bool in_vram;

	if (!walk_to_leaf_table(sim, pt_base, va, &table, &in_vram, reason) ||
	    !read_entry(sim, table, in_vram,
			VNPU_PT_INDEX(va, VNPU_PT_LEVELS - 1), &entry, reason) ||
	    !entry_ok(sim, entry, true, reason))
		return false;
	*leaf = entry;
	return true;
}

bool sim_mmu_translate(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		       bool write, struct sim_phys *phys,
		       struct sim_fault *fault)
{
	uint64_t vpn = va >> VNPU_PAGE_SHIFT;
	struct sim_ctx *ctx = &sim->ctx[ex->ctx];
	struct sim_tlb_entry *e;
	uint64_t pt_base, gen, pte;
	uint32_t reason;

	fault->va = va;
	fault->write = write;
	if (va >= VNPU_VA_LIMIT) {
		fault->reason = VNPU_FAULT_VA_RANGE;
		return false;
	}
	e = &ctx->tlb[vpn % SIM_TLB_ENTRIES];
	gen = atomic_load_explicit(&ctx->tlb_gen, memory_order_acquire);
	if (gen == ctx->tlb_seen_gen && ctx->tlb_enabled &&
	    e->vpn_plus_one == vpn + 1) {
		pte = e->pte;
	} else {
		bool enabled;

		sim_lock(sim);
		enabled = ctx->enabled;
		pt_base = ctx->pt_base;
		gen = atomic_load(&ctx->tlb_gen);
		sim_unlock(sim);
		if (gen != ctx->tlb_seen_gen) {
			memset(ctx->tlb, 0, sizeof(ctx->tlb));
			ctx->tlb_seen_gen = gen;
		}
		ctx->tlb_enabled = enabled;
		if (!enabled) {
			fault->reason = VNPU_FAULT_NOT_MAPPED;
			return false;
		}
		if (!walk(sim, pt_base, va, &pte, &reason)) {
			fault->reason = reason;
			return false;
		}
		/* An invalidation (or reset) during the walk wins over this
		 * result. */
		if (atomic_load(&ctx->tlb_gen) == gen) {
			e->vpn_plus_one = vpn + 1;
			e->pte = pte;
		}
	}
	if (!(pte & (write ? VNPU_PTE_WRITE : VNPU_PTE_READ))) {
		fault->reason = VNPU_FAULT_PERMISSION;
		return false;
	}
	phys->kind = (pte & VNPU_PTE_VRAM) ? SIM_PHYS_VRAM : SIM_PHYS_HOST;
	phys->addr = (pte & VNPU_PTE_ADDR_MASK) | (va & (VNPU_PAGE_SIZE - 1));
	return true;
}

void sim_mmu_fault(struct vnpu_sim *sim, struct sim_exec *ex,
		   const struct sim_fault *fault)
{
	struct sim_ctx *ctx = &sim->ctx[ex->ctx];

	ex->status = VNPU_STATUS_MMU_FAULT;
	ex->info = fault->va;
	sim_lock(sim);
	if (sim->epoch == ex->epoch) {
		if (!ctx->fault_status) {
			ctx->fault_status =
				VNPU_FAULT_PENDING |
				(fault->write ? VNPU_FAULT_WRITE : 0) |
				(fault->reason & 0xffu) << 8 |
				(ex->queue & 0xffu) << 16;
			ctx->fault_va = fault->va;
		}
		ctx->fault_count++;
		sim_log(sim, "vnpu: context %u: MMU fault at 0x%llx reason %u",
			ex->ctx, (unsigned long long)fault->va, fault->reason);
		sim_raise_event_locked(sim, VNPU_EVENT_MMU_FAULT);
	}
	sim_unlock(sim);
}

bool sim_mmu_translate_or_fault(struct vnpu_sim *sim, struct sim_exec *ex,
				uint64_t va, bool write, struct sim_phys *phys)
{
	struct sim_fault fault;

	if (sim_mmu_translate(sim, ex, va, write, phys, &fault))
		return true;
	sim_mmu_fault(sim, ex, &fault);
	return false;
}

uint64_t sim_mmu_contiguous(struct vnpu_sim *sim, struct sim_exec *ex,
			    uint64_t va, uint64_t len, bool write,
			    const struct sim_phys *phys)
{
	uint64_t run = VNPU_PAGE_SIZE - (va & (VNPU_PAGE_SIZE - 1));
	struct sim_ctx *ctx = &sim->ctx[ex->ctx];
	uint64_t leaf[VNPU_PT_ENTRIES], pt_base, need;
	uint32_t reason;
	bool enabled;

	if (run >= len)
		return len;
	sim_lock(sim);
	enabled = ctx->enabled;
	pt_base = ctx->pt_base;
	sim_unlock(sim);
	if (!enabled)
		return run;
	need = write ? VNPU_PTE_WRITE : VNPU_PTE_READ;
	while (run < len) {
		uint64_t next = va + run, table;
		unsigned idx = VNPU_PT_INDEX(next, VNPU_PT_LEVELS - 1);
		uint64_t pages = (len - run + VNPU_PAGE_SIZE - 1) >>
				 VNPU_PAGE_SHIFT;
		unsigned n = VNPU_PT_ENTRIES - idx;
		bool in_vram;

		if (pages < n)
			n = (unsigned)pages;
		/* One read for the rest of this leaf table. */
		if (!walk_to_leaf_table(sim, pt_base, next, &table, &in_vram,
					&reason))
			return run;
		if (in_vram) {
			if (table > sim->cfg.vram_size - VNPU_PAGE_SIZE)
				return run;
			memcpy(leaf, sim->vram + table + idx * 8ull, n * 8ull);
		} else if (sim->hal.dma_read(sim->hal.opaque,
					     table + idx * 8ull, leaf,
					     n * 8ull)) {
			return run;
		}
		for (unsigned k = 0; k < n; k++) {
			uint64_t e = leaf[k];
			bool vram = e & VNPU_PTE_VRAM;

			if (!entry_ok(sim, e, true, &reason) || !(e & need) ||
			    vram != (phys->kind == SIM_PHYS_VRAM) ||
			    (e & VNPU_PTE_ADDR_MASK) != phys->addr + run)
				return run;
			run += len - run < VNPU_PAGE_SIZE ? len - run
							   : VNPU_PAGE_SIZE;
		}
	}
	return run;
}
