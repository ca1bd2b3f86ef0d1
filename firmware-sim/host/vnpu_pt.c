// SPDX-License-Identifier: MIT
/* Page tables of a vnpu context (see vnpu_pt.h). */
#include <string.h>

#include "vnpu/hw_mmu.h"
#include "vnpu/hw_regs.h"
#include "vnpu_pt.h"

static int new_table(struct vnpu_pt *pt, uint64_t *addr)
{
	uint64_t *t;

	if (pt->ops->alloc_table(pt->opaque, pt->tables_in_vram, addr))
		return -1;
	t = pt->ops->table_ptr(pt->opaque, *addr, pt->tables_in_vram);
	if (!t)
		return -1;
	memset(t, 0, VNPU_PAGE_SIZE);
	return 0;
}

int vnpu_pt_init(struct vnpu_pt *pt, const struct vnpu_pt_ops *ops,
		 void *opaque, bool tables_in_vram)
{
	pt->ops = ops;
	pt->opaque = opaque;
	pt->tables_in_vram = tables_in_vram;
	return new_table(pt, &pt->root);
}

uint64_t *vnpu_pt_slot(struct vnpu_pt *pt, uint64_t va, unsigned level,
		       bool create)
{
	uint64_t table = pt->root;
	bool vram = pt->tables_in_vram;
	uint64_t *t;

	for (unsigned l = 0; l < level; l++) {
		uint64_t *e;

		t = pt->ops->table_ptr(pt->opaque, table, vram);
		if (!t)
			return NULL;
		e = &t[VNPU_PT_INDEX(va, l)];
		if (!(*e & VNPU_PTE_VALID)) {
			uint64_t addr;

			if (!create || new_table(pt, &addr))
				return NULL;
			*e = addr | VNPU_PTE_VALID |
			     (pt->tables_in_vram ? VNPU_PTE_VRAM : 0);
		}
		table = *e & VNPU_PTE_ADDR_MASK;
		vram = *e & VNPU_PTE_VRAM;
	}
	t = pt->ops->table_ptr(pt->opaque, table, vram);
	return t ? &t[VNPU_PT_INDEX(va, level)] : NULL;
}

int vnpu_pt_map(struct vnpu_pt *pt, uint64_t va, bool vram, uint64_t addr,
		uint64_t size, uint64_t prot)
{
	if ((va | addr | size) & (VNPU_PAGE_SIZE - 1))
		return -1;
	for (uint64_t off = 0; off < size; off += VNPU_PAGE_SIZE) {
		uint64_t *e = vnpu_pt_slot(pt, va + off, VNPU_PT_LEVELS - 1,
					   true);

		if (!e)
			return -1;
		*e = (addr + off) | VNPU_PTE_VALID | prot |
		     (vram ? VNPU_PTE_VRAM : 0);
	}
	return 0;
}

void vnpu_pt_unmap(struct vnpu_pt *pt, uint64_t va, uint64_t size)
{
	for (uint64_t off = 0; off < size; off += VNPU_PAGE_SIZE) {
		uint64_t *e = vnpu_pt_slot(pt, va + off, VNPU_PT_LEVELS - 1,
					   false);

		if (e)
			*e = 0;
	}
}

void vnpu_pt_enable_ctx(const struct vnpu_pt *pt, struct vnpu_sim *sim,
			unsigned ctx)
{
	vnpu_sim_reg_write(sim, VNPU_CTX_REG(ctx, VNPU_CTX_PT_BASE_LO),
			   (uint32_t)pt->root |
				   (pt->tables_in_vram ? VNPU_PT_BASE_VRAM
						       : 0));
	vnpu_sim_reg_write(sim, VNPU_CTX_REG(ctx, VNPU_CTX_PT_BASE_HI),
			   (uint32_t)(pt->root >> 32));
	vnpu_sim_reg_write(sim, VNPU_CTX_REG(ctx, VNPU_CTX_CTRL),
			   VNPU_CTX_CTRL_ENABLE);
}

void vnpu_pt_tlb_invalidate(struct vnpu_sim *sim, unsigned ctx)
{
	vnpu_sim_reg_write(sim, VNPU_CTX_REG(ctx, VNPU_CTX_CTRL),
			   VNPU_CTX_CTRL_ENABLE |
				   VNPU_CTX_CTRL_TLB_INVALIDATE);
}
