// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: per-context device page tables (docs/hw-spec.md
 * section 8) in DMA-coherent host memory, the VA allocator, and MMU faults.
 */
#include <linux/dma-mapping.h>
#include <linux/scatterlist.h>
#include <drm/drm_drv.h>

#include "vnpu_hw.h"

/*
 * Page tables below the root are allocated when a mapping needs them and
 * charged, as the pinned host memory they are, to the context's user (the
 * root is part of the context, bounded by the context share). A table
 * counts its valid entries; the unmap that empties one detaches it from
 * its parent, and it is freed only with the mapping's VA range, once no
 * job can still walk it (see vnpu_mmu_unmap()).
 */
static u64 vnpu_pt_bytes(bool with_children)
{
	return VNPU_PAGE_SIZE +
	       (with_children ? VNPU_PT_ENTRIES * sizeof(void *) : 0);
}

static int vnpu_pt_table_alloc(struct vnpu_ctx *ctx, struct vnpu_pt_table *t,
			       bool with_children)
{
	struct device *dev = ctx->vdev->drm.dev;

	t->entries =
		dma_alloc_coherent(dev, VNPU_PAGE_SIZE, &t->dma, GFP_KERNEL);
	if (!t->entries)
		return -ENOMEM;
	t->child = NULL;
	t->live = 0;
	INIT_LIST_HEAD(&t->free_node);
	if (with_children) {
		t->child =
			kcalloc(VNPU_PT_ENTRIES, sizeof(*t->child), GFP_KERNEL);
		if (!t->child) {
			dma_free_coherent(dev, VNPU_PAGE_SIZE, t->entries,
					  t->dma);
			t->entries = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/* Frees t and the tables below it; uncharges all but the root. */
static void vnpu_pt_table_free(struct vnpu_ctx *ctx, struct vnpu_pt_table *t,
			       int level)
{
	bool inner = t->child;
	u32 i;

	if (!t->entries)
		return;
	if (t->child) {
		for (i = 0; i < VNPU_PT_ENTRIES; i++) {
			if (!t->child[i])
				continue;
			vnpu_pt_table_free(ctx, t->child[i], level + 1);
			kfree(t->child[i]);
		}
		kfree(t->child);
	}
	dma_free_coherent(ctx->vdev->drm.dev, VNPU_PAGE_SIZE, t->entries,
			  t->dma);
	t->entries = NULL;
	if (level) {
		ctx->pt_bytes -= vnpu_pt_bytes(inner);
		vnpu_quota_uncharge(ctx->user, VNPU_QUOTA_PINNED,
				    vnpu_pt_bytes(inner));
	}
}

/*
 * The tables on the way to va (path[0] is the root), creating missing ones
 * when asked: the leaf table, NULL when one is missing and create is
 * false, or an ERR_PTR (-ENOMEM, -EDQUOT past the user's pinned share).
 */
static struct vnpu_pt_table *
vnpu_pt_walk(struct vnpu_ctx *ctx, u64 va, bool create,
	     struct vnpu_pt_table *path[VNPU_PT_LEVELS])
{
	struct vnpu_pt_table *t = &ctx->root;
	int level, ret;

	lockdep_assert_held(&ctx->mmu_lock);
	for (level = 0; level < VNPU_PT_LEVELS - 1; level++) {
		u32 idx = VNPU_PT_INDEX(va, level);
		struct vnpu_pt_table *next = t->child[idx];

		path[level] = t;
		if (!next) {
			bool inner = level + 1 < VNPU_PT_LEVELS - 1;
			u64 pte;

			if (!create)
				return NULL;
			ret = vnpu_quota_charge(ctx->user, ctx->quota_exempt,
						VNPU_QUOTA_PINNED,
						vnpu_pt_bytes(inner));
			if (ret)
				return ERR_PTR(ret);
			next = kzalloc(sizeof(*next), GFP_KERNEL);
			if (!next || vnpu_pt_table_alloc(ctx, next, inner)) {
				kfree(next);
				vnpu_quota_uncharge(ctx->user,
						    VNPU_QUOTA_PINNED,
						    vnpu_pt_bytes(inner));
				return ERR_PTR(-ENOMEM);
			}
			ctx->pt_bytes += vnpu_pt_bytes(inner);
			t->child[idx] = next;
			t->live++;
			pte = (next->dma & VNPU_PTE_ADDR_MASK) | VNPU_PTE_VALID;
			WRITE_ONCE(t->entries[idx], cpu_to_le64(pte));
		}
		t = next;
	}
	path[level] = t;
	return t;
}

static int vnpu_pt_map_page(struct vnpu_ctx *ctx, u64 va, u64 addr, u64 prot)
{
	struct vnpu_pt_table *path[VNPU_PT_LEVELS];
	struct vnpu_pt_table *leaf = vnpu_pt_walk(ctx, va, true, path);
	u64 *pte;

	if (IS_ERR(leaf))
		return PTR_ERR(leaf);
	pte = &leaf->entries[VNPU_PT_INDEX(va, VNPU_PT_LEVELS - 1)];
	if (!(le64_to_cpu(READ_ONCE(*pte)) & VNPU_PTE_VALID))
		leaf->live++;
	WRITE_ONCE(*pte, cpu_to_le64((addr & VNPU_PTE_ADDR_MASK) |
				     VNPU_PTE_VALID | prot));
	return 0;
}

/*
 * Clears the leaf entries of [va, va + size). With a list, each table that
 * this leaves empty is detached from its parent (the parent's entry
 * cleared) and put on the list for the caller to free once the device can
 * no longer walk it; without one, empty tables stay in place.
 */
static void vnpu_pt_unmap_range(struct vnpu_ctx *ctx, u64 va, u64 size,
				struct list_head *detached)
{
	struct vnpu_pt_table *path[VNPU_PT_LEVELS];
	u64 off;

	for (off = 0; off < size; off += VNPU_PAGE_SIZE) {
		struct vnpu_pt_table *leaf =
			vnpu_pt_walk(ctx, va + off, false, path);
		int level = VNPU_PT_LEVELS - 1;
		u32 idx = VNPU_PT_INDEX(va + off, level);

		if (!leaf ||
		    !(le64_to_cpu(READ_ONCE(leaf->entries[idx])) &
		      VNPU_PTE_VALID))
			continue;
		WRITE_ONCE(leaf->entries[idx], 0);
		/* Up the path while a table became empty; never the root. */
		for (; level >= 0; level--) {
			struct vnpu_pt_table *t = path[level], *parent;

			if (--t->live || !level || !detached)
				break;
			parent = path[level - 1];
			idx = VNPU_PT_INDEX(va + off, level - 1);
			WRITE_ONCE(parent->entries[idx], 0);
			parent->child[idx] = NULL;
			list_add_tail(&t->free_node, detached);
		}
	}
}

/* Frees tables vnpu_pt_unmap_range() detached. */
static void vnpu_pt_free_detached(struct vnpu_ctx *ctx,
				  struct list_head *detached)
{
	struct vnpu_pt_table *t, *tmp;

	lockdep_assert_held(&ctx->mmu_lock);
	list_for_each_entry_safe(t, tmp, detached, free_node) {
		list_del(&t->free_node);
		/* Empty: its children were detached (and listed) before it. */
		vnpu_pt_table_free(ctx, t, 1);
		kfree(t);
	}
}

static void vnpu_tlb_invalidate(struct vnpu_ctx *ctx)
{
	struct vnpu_device *vdev = ctx->vdev;
	int idx;

	if (!drm_dev_enter(&vdev->drm, &idx))
		return;
	/* Table writes must be visible before the device walks again. */
	wmb();
	vnpu_wr(vdev, VNPU_CTX_REG(ctx->index, VNPU_CTX_CTRL),
		VNPU_CTX_CTRL_ENABLE | VNPU_CTX_CTRL_TLB_INVALIDATE);
	drm_dev_exit(idx);
}

void vnpu_mmu_ctx_program(struct vnpu_ctx *ctx)
{
	struct vnpu_device *vdev = ctx->vdev;

	vnpu_wr(vdev, VNPU_CTX_REG(ctx->index, VNPU_CTX_PT_BASE_LO),
		lower_32_bits(ctx->root.dma & VNPU_PT_BASE_ADDR_MASK));
	vnpu_wr(vdev, VNPU_CTX_REG(ctx->index, VNPU_CTX_PT_BASE_HI),
		upper_32_bits(ctx->root.dma & VNPU_PT_BASE_ADDR_MASK));
	vnpu_wr(vdev, VNPU_CTX_REG(ctx->index, VNPU_CTX_CTRL),
		VNPU_CTX_CTRL_ENABLE | VNPU_CTX_CTRL_TLB_INVALIDATE);
}

int vnpu_mmu_ctx_init(struct vnpu_ctx *ctx)
{
	int ret = vnpu_pt_table_alloc(ctx, &ctx->root, true);

	if (ret)
		return ret;
	mutex_init(&ctx->mmu_lock);
	drm_mm_init(&ctx->va_mm, VNPU_VA_START, VNPU_VA_END - VNPU_VA_START);
	ctx->va_lo = VNPU_VA_START;
	ctx->va_hi = VNPU_VA_END;
	return 0;
}

/*
 * VA_RANGE: later BOs go into [lo, hi). Refused while a BO of the context
 * lies outside it, so the window always holds every mapping.
 */
static int vnpu_mmu_set_va_range(struct vnpu_ctx *ctx, u64 lo, u64 hi)
{
	struct drm_mm_node *node;
	int ret = 0;

	if (!IS_ALIGNED(lo | hi, VNPU_PAGE_SIZE) || lo < VNPU_VA_START ||
	    hi > VNPU_VA_END || lo >= hi || hi - lo < 2 * VNPU_PAGE_SIZE)
		return -EINVAL;
	mutex_lock(&ctx->mmu_lock);
	drm_mm_for_each_node(node, &ctx->va_mm) {
		if (node->start < lo || node->start + node->size > hi) {
			ret = -EBUSY;
			break;
		}
	}
	if (!ret) {
		ctx->va_lo = lo;
		ctx->va_hi = hi;
	}
	mutex_unlock(&ctx->mmu_lock);
	return ret;
}

void vnpu_mmu_va_range(struct vnpu_ctx *ctx, u64 *lo, u64 *hi)
{
	mutex_lock(&ctx->mmu_lock);
	*lo = ctx->va_lo;
	*hi = ctx->va_hi;
	mutex_unlock(&ctx->mmu_lock);
}

int vnpu_va_range_ioctl(struct drm_device *dev, void *data,
			struct drm_file *file)
{
	struct drm_vnpu_va_range *args = data;

	return vnpu_mmu_set_va_range(file->driver_priv, args->start, args->end);
}

/* The device no longer uses the context; its user is still held. */
void vnpu_mmu_ctx_fini(struct vnpu_ctx *ctx)
{
	drm_mm_takedown(&ctx->va_mm);
	vnpu_pt_table_free(ctx, &ctx->root, 0);
	WARN_ON(ctx->pt_bytes);
	mutex_destroy(&ctx->mmu_lock);
}

static int vnpu_mmu_fill(struct vnpu_ctx *ctx, struct vnpu_bo *bo, u64 va)
{
	u64 prot = VNPU_PTE_READ;
	u64 off, size = bo->shmem.base.size;
	struct sg_table *sgt;
	struct sg_dma_page_iter it;
	int ret;

	if (!(bo->flags & DRM_VNPU_BO_DEVICE_READ_ONLY) && !bo->read_only)
		prot |= VNPU_PTE_WRITE;
	if (bo->vram) {
		for (off = 0; off < size; off += VNPU_PAGE_SIZE) {
			ret = vnpu_pt_map_page(ctx, va + off,
					       bo->vram_node.start + off,
					       prot | VNPU_PTE_VRAM);
			if (ret)
				return ret;
		}
		return 0;
	}
	sgt = bo->shmem.sgt;
	if (!sgt) {
		sgt = drm_gem_shmem_get_pages_sgt(&bo->shmem);
		/*
		 * shmem says -ENOSPC when it cannot back the pages; to
		 * BO_CREATE that errno means a full VA window.
		 */
		if (IS_ERR(sgt))
			return PTR_ERR(sgt) == -ENOSPC ? -ENOMEM : PTR_ERR(sgt);
	}
	off = 0;
	for_each_sgtable_dma_page(sgt, &it, 0) {
		if (off >= size)
			break;
		ret = vnpu_pt_map_page(ctx, va + off,
				       sg_page_iter_dma_address(&it), prot);
		if (ret)
			return ret;
		off += VNPU_PAGE_SIZE;
	}
	return off == size ? 0 : -EINVAL;
}

/*
 * Maps the whole BO at a new VA of ctx, with an unmapped guard page after
 * it so that running off the end faults.
 */
int vnpu_mmu_map_bo(struct vnpu_ctx *ctx, struct vnpu_bo *bo, u64 *va)
{
	struct drm_mm_node *node;
	struct vnpu_bo_mapping *m;
	u64 size = bo->shmem.base.size;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	node = &m->va;
	mutex_lock(&ctx->mmu_lock);
	ret = drm_mm_insert_node_in_range(&ctx->va_mm, node,
					  size + VNPU_PAGE_SIZE, VNPU_PAGE_SIZE,
					  0, ctx->va_lo, ctx->va_hi,
					  DRM_MM_INSERT_BEST);
	if (ret)
		goto err_unlock;
	ret = vnpu_mmu_fill(ctx, bo, node->start);
	if (ret) {
		/*
		 * Tables made on the way stay (charged, reused): a job of the
		 * context may be walking them, as it may any VA.
		 */
		vnpu_pt_unmap_range(ctx, node->start, size, NULL);
		drm_mm_remove_node(node);
		goto err_unlock;
	}
	mutex_unlock(&ctx->mmu_lock);
	/* A new mapping replaces no cached translation; no invalidate. */
	m->ctx = ctx;
	m->users = 1;
	INIT_LIST_HEAD(&m->pt_free);
	kref_get(&ctx->ref);
	list_add(&m->node, &bo->mappings);
	*va = node->start;
	return 0;

err_unlock:
	mutex_unlock(&ctx->mmu_lock);
	kfree(m);
	return ret;
}

/*
 * Clears the mapping's entries and flushes the context's TLB. Tables this
 * empties are detached from their parents but not freed: a job that was
 * running may have read the parent's entry before it was cleared and be
 * walking the table still (the flush only ends cached translations), so
 * the tables wait on m->pt_free for vnpu_mmu_free_va(), which the retire
 * path calls only once every job pushed before this unmap has ended. A job
 * pushed later starts after the cleared entries and the flush, so its
 * walks end at the cleared parent entry and never reach them.
 */
void vnpu_mmu_unmap(struct vnpu_ctx *ctx, struct vnpu_bo_mapping *m)
{
	mutex_lock(&ctx->mmu_lock);
	vnpu_pt_unmap_range(ctx, m->va.start, m->va.size - VNPU_PAGE_SIZE,
			    &m->pt_free);
	vnpu_tlb_invalidate(ctx);
	mutex_unlock(&ctx->mmu_lock);
}

/*
 * Returns the mapping's VA range (and guard page) to the context and frees
 * the tables its unmap emptied (no job can walk them any more).
 */
void vnpu_mmu_free_va(struct vnpu_ctx *ctx, struct vnpu_bo_mapping *m)
{
	mutex_lock(&ctx->mmu_lock);
	vnpu_pt_free_detached(ctx, &m->pt_free);
	drm_mm_remove_node(&m->va);
	mutex_unlock(&ctx->mmu_lock);
}

/* MMU_FAULT event: record each faulted context's fault, then clear it. */
void vnpu_mmu_handle_faults(struct vnpu_device *vdev)
{
	u64 faulted;
	u32 c;

	mutex_lock(&vdev->fault_lock);
	faulted = (u64)vnpu_rd(vdev, VNPU_REG_FAULTED_CTX_HI) << 32 |
		  vnpu_rd(vdev, VNPU_REG_FAULTED_CTX_LO);

	for (c = 0; c < vdev->num_contexts; c++) {
		struct vnpu_ctx *ctx;
		u32 status;
		u64 va;

		if (!(faulted & BIT_ULL(c)))
			continue;
		status = vnpu_rd(vdev, VNPU_CTX_REG(c, VNPU_CTX_FAULT_STATUS));
		va = vnpu_rd64_stable(vdev,
				      VNPU_CTX_REG(c, VNPU_CTX_FAULT_VA_LO),
				      VNPU_CTX_REG(c, VNPU_CTX_FAULT_VA_HI));
		ctx = vnpu_ctx_get_by_index(vdev, c);
		if (ctx) {
			/* Set before the clear: jobs retiring later see it. */
			WRITE_ONCE(ctx->fault_va, va);
			WRITE_ONCE(ctx->fault_status, status);
			WRITE_ONCE(ctx->fault_count, ctx->fault_count + 1);
			WRITE_ONCE(ctx->faulted, true);
			/* The fault record before FAULTED_CTX is cleared. */
			smp_wmb();
		}
		vnpu_log(vdev,
			 "MMU fault: context %u queue %u VA %#llx reason %u %s",
			 c, VNPU_FAULT_QUEUE(status), va,
			 VNPU_FAULT_REASON(status),
			 status & VNPU_FAULT_WRITE ? "write" : "read");
		/* Nothing more of this context may run once it is cleared. */
		vnpu_ctx_fault_abort(vdev, c, status);
		vnpu_wr(vdev, VNPU_CTX_REG(c, VNPU_CTX_FAULT_STATUS),
			VNPU_FAULT_PENDING);
		if (ctx)
			vnpu_ctx_put(ctx);
	}
	mutex_unlock(&vdev->fault_lock);
}
