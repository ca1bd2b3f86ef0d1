// SPDX-License-Identifier: GPL-2.0
/*
 * vnpu DRM accel driver: buffer objects. System-memory BOs are GEM shmem
 * objects (PRIME export and import work); VRAM BOs are ranges of BAR4 from a
 * drm_mm allocator, mmapped write-combined. A BO is mapped into a context's
 * device address space when a handle to it is created in that file and
 * unmapped when the file's last handle goes.
 */
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <drm/drm_drv.h>
#include <drm/drm_gem.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>

#include "vnpu_hw.h"

static enum vnpu_quota_res vnpu_bo_quota_res(struct vnpu_bo *bo)
{
	return bo->vram ? VNPU_QUOTA_VRAM : VNPU_QUOTA_PINNED;
}

/*
 * The first handle to a BO, in any file, makes its memory count against
 * that file's user until the BO is freed: the creator's for our own BOs,
 * the importer's for another driver's (whose pages we pin by mapping).
 */
static int vnpu_bo_charge(struct vnpu_bo *bo, struct vnpu_ctx *ctx)
{
	int ret;

	lockdep_assert_held(&bo->map_lock);
	if (bo->charged || bo->uncharged_import)
		return 0;
	ret = vnpu_quota_charge(ctx->user, ctx->quota_exempt,
				vnpu_bo_quota_res(bo), bo->shmem.base.size);
	if (ret)
		return ret;
	vnpu_user_get(ctx->user);
	bo->charged = ctx->user;
	return 0;
}

static void vnpu_bo_uncharge(struct vnpu_bo *bo)
{
	if (!bo->charged)
		return;
	vnpu_quota_uncharge(bo->charged, vnpu_bo_quota_res(bo),
			    bo->shmem.base.size);
	vnpu_user_put(bo->charged);
	bo->charged = NULL;
}

static int vnpu_bo_open(struct drm_gem_object *obj, struct drm_file *file)
{
	struct vnpu_bo *bo = to_vnpu_bo(obj);
	struct vnpu_ctx *ctx = file->driver_priv;
	struct vnpu_bo_mapping *m;
	u64 va;
	int ret = 0;

	mutex_lock(&bo->map_lock);
	list_for_each_entry(m, &bo->mappings, node) {
		/* Never a retiring mapping: a new handle gets a new VA. */
		if (m->ctx == ctx && m->stage == VNPU_MAPPED) {
			m->users++;
			goto out;
		}
	}
	/* Counted before the mapping pins the pages. */
	ret = vnpu_bo_charge(bo, ctx);
	if (!ret)
		ret = vnpu_mmu_map_bo(ctx, bo, &va);
out:
	mutex_unlock(&bo->map_lock);
	return ret;
}

/* ---- memory lifetime ---------------------------------------------------- */

/*
 * A job can reach any VA of its context, listed BOs or not (a launch's
 * argument block names VAs), and the device may keep a translation for as
 * long as the command runs. So the memory behind a closed BO's mapping
 * never moves while a job that could reach it is unfinished:
 *
 *  CLOSED    the file closed its last handle: the mapping stays, until
 *            every job the context had submitted has ended;
 *  UNMAPPED  the entries are cleared and the TLB flushed; the VA range and
 *            the BO (its VRAM range, its pinned pages) stay held until
 *            every job submitted before the unmap has ended;
 *  then the range goes back to the context and the BO reference is dropped
 *  (VRAM is scrubbed when the range is handed out again).
 *
 * Closing never waits: without unfinished jobs the mapping goes at once,
 * else the work item moves it on, kicked by the end of each of the
 * context's jobs.
 */

/*
 * Frees the epochs at the head whose jobs, and all older ones', ended
 * (epoch_lock held). The current epoch stays.
 */
static void vnpu_epochs_drain(struct vnpu_ctx *ctx)
{
	struct vnpu_epoch *e, *tmp;

	lockdep_assert_held(&ctx->epoch_lock);
	list_for_each_entry_safe(e, tmp, &ctx->epochs, node) {
		if (e->jobs || list_is_last(&e->node, &ctx->epochs))
			break;
		ctx->drained_upto = e->id;
		list_del(&e->node);
		kfree(e);
	}
}

/*
 * The epoch that holds every job pushed so far: draining it means all of
 * them ended. Starts a new current epoch when the current one has jobs.
 * -ENOMEM leaves nothing changed.
 */
static int vnpu_ctx_epoch_snapshot(struct vnpu_ctx *ctx, u64 *epoch)
{
	struct vnpu_epoch *next = kzalloc(sizeof(*next), GFP_KERNEL);
	struct vnpu_epoch *cur;
	unsigned long flags;

	if (!next)
		return -ENOMEM;
	spin_lock_irqsave(&ctx->epoch_lock, flags);
	cur = list_last_entry(&ctx->epochs, struct vnpu_epoch, node);
	if (!cur->jobs) {
		/* Nothing pushed since the last snapshot. */
		*epoch = cur->id - 1;
	} else {
		*epoch = cur->id;
		next->id = cur->id + 1;
		list_add_tail(&next->node, &ctx->epochs);
		next = NULL;
		vnpu_epochs_drain(ctx);
	}
	spin_unlock_irqrestore(&ctx->epoch_lock, flags);
	kfree(next);
	return 0;
}

static bool vnpu_ctx_epoch_drained(struct vnpu_ctx *ctx, u64 epoch)
{
	unsigned long flags;
	bool drained;

	spin_lock_irqsave(&ctx->epoch_lock, flags);
	drained = ctx->drained_upto >= epoch;
	spin_unlock_irqrestore(&ctx->epoch_lock, flags);
	return drained;
}

/* SUBMIT, past the point of no return: the job counts until it ends. */
void vnpu_ctx_job_pushed(struct vnpu_job *job)
{
	struct vnpu_ctx *ctx = job->ctx;
	unsigned long flags;

	spin_lock_irqsave(&ctx->epoch_lock, flags);
	job->epoch = list_last_entry(&ctx->epochs, struct vnpu_epoch, node);
	job->epoch->jobs++;
	spin_unlock_irqrestore(&ctx->epoch_lock, flags);
}

static void vnpu_ctx_retire_kick(struct vnpu_ctx *ctx);

/* The job's finished fence signalled (any context, IRQ included). */
void vnpu_ctx_job_ended(struct vnpu_job *job)
{
	struct vnpu_ctx *ctx = job->ctx;
	unsigned long flags;

	spin_lock_irqsave(&ctx->epoch_lock, flags);
	job->epoch->jobs--;
	job->epoch = NULL;
	vnpu_epochs_drain(ctx);
	spin_unlock_irqrestore(&ctx->epoch_lock, flags);
	/* Mappings of closed BOs may have waited for this job. */
	vnpu_ctx_retire_kick(ctx);
}

/*
 * Moves one retiring mapping on as far as the context's jobs allow; frees
 * it at the end (ctx->retire_lock held). A failed snapshot (no memory)
 * leaves it where it is, to be tried again at the next kick.
 */
static void vnpu_mapping_retire_step(struct vnpu_ctx *ctx,
				     struct vnpu_bo_mapping *m)
{
	struct vnpu_bo *bo = to_vnpu_bo(m->obj);
	struct drm_gem_object *obj = m->obj;

	lockdep_assert_held(&ctx->retire_lock);
	for (;;) {
		if (!m->snapped) {
			if (vnpu_ctx_epoch_snapshot(ctx, &m->wait_epoch))
				return;
			m->snapped = true;
		}
		if (!vnpu_ctx_epoch_drained(ctx, m->wait_epoch))
			return;
		m->snapped = false;
		if (m->stage == VNPU_UNMAPPED)
			break;
		vnpu_mmu_unmap(ctx, m);
		m->stage = VNPU_UNMAPPED;
	}
	mutex_lock(&bo->map_lock);
	list_del(&m->node);
	mutex_unlock(&bo->map_lock);
	list_del(&m->retire_node);
	vnpu_mmu_free_va(ctx, m);
	kfree(m);
	drm_gem_object_put(obj);
	/* The mapping's context reference (vnpu_mmu_map_bo). */
	vnpu_ctx_put(ctx);
}

/*
 * Moves every retiring mapping of ctx on. Each step drops a context
 * reference of its own, so the caller must hold one.
 */
void vnpu_ctx_retire(struct vnpu_ctx *ctx)
{
	struct vnpu_bo_mapping *m, *tmp;

	mutex_lock(&ctx->retire_lock);
	list_for_each_entry_safe(m, tmp, &ctx->retiring, retire_node)
		vnpu_mapping_retire_step(ctx, m);
	mutex_unlock(&ctx->retire_lock);
}

static void vnpu_ctx_retire_work(struct work_struct *work)
{
	struct vnpu_ctx *ctx = container_of(work, struct vnpu_ctx,
					    retire_work);

	vnpu_ctx_retire(ctx);
	/* The reference vnpu_ctx_retire_kick() took for this run. */
	vnpu_ctx_put(ctx);
}

/* After a job of ctx ended, or a mapping started retiring. */
static void vnpu_ctx_retire_kick(struct vnpu_ctx *ctx)
{
	if (list_empty_careful(&ctx->retiring))
		return;
	kref_get(&ctx->ref);
	if (!queue_work(system_unbound_wq, &ctx->retire_work))
		vnpu_ctx_put(ctx); /* already queued: it holds its own */
}

int vnpu_ctx_retire_init(struct vnpu_ctx *ctx)
{
	struct vnpu_epoch *first = kzalloc(sizeof(*first), GFP_KERNEL);

	if (!first)
		return -ENOMEM;
	first->id = 1;
	mutex_init(&ctx->retire_lock);
	INIT_LIST_HEAD(&ctx->retiring);
	INIT_WORK(&ctx->retire_work, vnpu_ctx_retire_work);
	spin_lock_init(&ctx->epoch_lock);
	INIT_LIST_HEAD(&ctx->epochs);
	list_add(&first->node, &ctx->epochs);
	return 0;
}

/* The context is going: no job, no retiring mapping is left. */
void vnpu_ctx_retire_fini(struct vnpu_ctx *ctx)
{
	struct vnpu_epoch *e, *tmp;

	WARN_ON(!list_empty(&ctx->retiring));
	list_for_each_entry_safe(e, tmp, &ctx->epochs, node) {
		WARN_ON(e->jobs);
		list_del(&e->node);
		kfree(e);
	}
	mutex_destroy(&ctx->retire_lock);
}

static void vnpu_bo_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct vnpu_bo *bo = to_vnpu_bo(obj);
	struct vnpu_ctx *ctx = file->driver_priv;
	struct vnpu_bo_mapping *m, *found = NULL;

	mutex_lock(&bo->map_lock);
	list_for_each_entry(m, &bo->mappings, node) {
		if (m->ctx == ctx && m->stage == VNPU_MAPPED) {
			if (!--m->users)
				found = m;
			break;
		}
	}
	if (found) {
		/* The mapping now holds the BO: its memory stays put. */
		drm_gem_object_get(obj);
		found->obj = obj;
		found->stage = VNPU_CLOSED;
	}
	mutex_unlock(&bo->map_lock);
	if (!found)
		return;
	mutex_lock(&ctx->retire_lock);
	list_add_tail(&found->retire_node, &ctx->retiring);
	mutex_unlock(&ctx->retire_lock);
	/*
	 * With no job of the context unfinished the mapping goes at once, so
	 * that the memory is free when close returns (a runtime that waited
	 * for the device before freeing allocates again right away). Else
	 * the end of those jobs moves it on.
	 */
	vnpu_ctx_retire(ctx);
}

bool vnpu_bo_va(struct drm_gem_object *obj, struct vnpu_ctx *ctx, u64 *va)
{
	struct vnpu_bo *bo = to_vnpu_bo(obj);
	struct vnpu_bo_mapping *m;
	bool found = false;

	mutex_lock(&bo->map_lock);
	list_for_each_entry(m, &bo->mappings, node) {
		if (m->ctx == ctx && m->stage == VNPU_MAPPED) {
			*va = m->va.start;
			found = true;
			break;
		}
	}
	mutex_unlock(&bo->map_lock);
	return found;
}

static void vnpu_shmem_free(struct drm_gem_object *obj)
{
	struct vnpu_bo *bo = to_vnpu_bo(obj);

	WARN_ON(!list_empty(&bo->mappings));
	if (bo->cmd_vaddr) {
		struct iosys_map map = IOSYS_MAP_INIT_VADDR(bo->cmd_vaddr);

		dma_resv_lock(obj->resv, NULL);
		drm_gem_shmem_vunmap(&bo->shmem, &map);
		dma_resv_unlock(obj->resv);
	}
	vnpu_bo_uncharge(bo);
	mutex_destroy(&bo->map_lock);
	drm_gem_shmem_free(&bo->shmem);
}

/* A read-only import maps read-only, and cannot be mprotect()ed writable. */
static int vnpu_shmem_mmap(struct drm_gem_object *obj,
			   struct vm_area_struct *vma)
{
	if (to_vnpu_bo(obj)->read_only) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	return drm_gem_shmem_object_mmap(obj, vma);
}

static const struct drm_gem_object_funcs vnpu_shmem_funcs = {
	.free = vnpu_shmem_free,
	.open = vnpu_bo_open,
	.close = vnpu_bo_close,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = vnpu_shmem_mmap,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

/*
 * The kernel mapping SUBMIT copies commands through. Mapping a shmem BO
 * and unmapping it again (page tables, a TLB flush) took a fifth of a
 * SUBMIT, so a BO of our own keeps the mapping its first SUBMIT made until
 * it is freed: kernel address space and pinned pages for memory its owner
 * is already charged for. VRAM is mapped for good anyway; an imported BO
 * belongs to its exporter and is mapped per call.
 */
static void *vnpu_bo_cmd_vaddr(struct vnpu_bo *bo)
{
	struct drm_gem_object *obj = &bo->shmem.base;
	/* Pairs with the smp_store_release() below: a complete mapping. */
	void *vaddr = smp_load_acquire(&bo->cmd_vaddr);
	struct iosys_map map;

	if (vaddr)
		return vaddr;
	if (dma_resv_lock_interruptible(obj->resv, NULL))
		return ERR_PTR(-ERESTARTSYS);
	vaddr = bo->cmd_vaddr;
	if (!vaddr) {
		int ret = drm_gem_shmem_vmap(&bo->shmem, &map);

		if (ret) {
			vaddr = ERR_PTR(ret);
		} else {
			vaddr = map.vaddr;
			/* Pairs with the smp_load_acquire() above. */
			smp_store_release(&bo->cmd_vaddr, vaddr);
		}
	}
	dma_resv_unlock(obj->resv);
	return vaddr;
}

/* Copies len bytes at offset (checked by the caller) out of a BO. */
int vnpu_bo_read(struct drm_gem_object *obj, u64 offset, void *dst,
		 size_t len)
{
	struct vnpu_bo *bo = to_vnpu_bo(obj);
	struct iosys_map map;
	void *vaddr;
	int ret;

	if (bo->vram || drm_gem_is_imported(obj)) {
		ret = drm_gem_vmap_unlocked(obj, &map);
		if (ret)
			return ret;
		iosys_map_memcpy_from(dst, &map, offset, len);
		drm_gem_vunmap_unlocked(obj, &map);
		return 0;
	}
	vaddr = vnpu_bo_cmd_vaddr(bo);
	if (IS_ERR(vaddr))
		return PTR_ERR(vaddr);
	memcpy(dst, vaddr + offset, len);
	return 0;
}

/* drm_driver.gem_create_object: shmem BOs, own and PRIME-imported. */
struct drm_gem_object *vnpu_gem_create_object(struct drm_device *dev,
					      size_t size)
{
	struct vnpu_bo *bo = kzalloc(sizeof(*bo), GFP_KERNEL);

	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->shmem.base.funcs = &vnpu_shmem_funcs;
	mutex_init(&bo->map_lock);
	INIT_LIST_HEAD(&bo->mappings);
	return &bo->shmem.base;
}

/*
 * drm_driver.gem_prime_import. A dma-buf carries its access mode in its
 * file: one opened without write access must give the importer neither a
 * writable CPU mapping nor device write. The core's import hands back the
 * exporter's own object for a dma-buf of this device, which its exporter
 * may write, so a read-only dma-buf (ours or another driver's) always
 * gets an object of its own, on its own attachment, marked read-only.
 * Writable dma-bufs go the core's way. VRAM BOs are never exported.
 */
struct drm_gem_object *vnpu_gem_prime_import(struct drm_device *dev,
					     struct dma_buf *dma_buf)
{
	struct dma_buf_attachment *attach;
	struct drm_gem_object *obj;
	struct sg_table *sgt;
	struct vnpu_bo *bo;
	int ret;

	if (dma_buf->file->f_mode & FMODE_WRITE)
		return drm_gem_prime_import(dev, dma_buf);
	attach = dma_buf_attach(dma_buf, dev->dev);
	if (IS_ERR(attach))
		return ERR_CAST(attach);
	get_dma_buf(dma_buf);
	sgt = dma_buf_map_attachment_unlocked(attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto err_detach;
	}
	obj = drm_gem_shmem_prime_import_sg_table(dev, attach, sgt);
	if (IS_ERR(obj)) {
		ret = PTR_ERR(obj);
		goto err_unmap;
	}
	/* From here on freeing the object detaches (drm_prime_gem_destroy). */
	obj->import_attach = attach;
	obj->resv = dma_buf->resv;
	bo = to_vnpu_bo(obj);
	bo->read_only = true;
	bo->flags = DRM_VNPU_BO_DEVICE_READ_ONLY;
	/*
	 * Our own exports (drm_gem_prime_export() names the driver's module)
	 * are vnpu BOs, counted against their creator for as long as this
	 * attachment holds them: counting them again would bill the importer
	 * for memory the sharer already pays for.
	 */
	bo->uncharged_import = dma_buf->owner == THIS_MODULE;
	return obj;

err_unmap:
	dma_buf_unmap_attachment_unlocked(attach, sgt, DMA_BIDIRECTIONAL);
err_detach:
	dma_buf_detach(dma_buf, attach);
	dma_buf_put(dma_buf);
	return ERR_PTR(ret);
}

/* ---- VRAM BOs ---------------------------------------------------------- */

void vnpu_vram_init(struct vnpu_device *vdev)
{
	mutex_init(&vdev->vram_lock);
	drm_mm_init(&vdev->vram_mm, 0, vdev->vram_size);
}

void vnpu_vram_fini(struct vnpu_device *vdev)
{
	drm_mm_takedown(&vdev->vram_mm);
	mutex_destroy(&vdev->vram_lock);
}

static void vnpu_vram_free(struct drm_gem_object *obj)
{
	struct vnpu_device *vdev = to_vnpu_device(obj->dev);
	struct vnpu_bo *bo = to_vnpu_bo(obj);

	WARN_ON(!list_empty(&bo->mappings));
	vnpu_bo_uncharge(bo);
	mutex_lock(&vdev->vram_lock);
	if (drm_mm_node_allocated(&bo->vram_node)) {
		drm_mm_remove_node(&bo->vram_node);
		vdev->vram_used -= obj->size;
	}
	mutex_unlock(&vdev->vram_lock);
	drm_gem_free_mmap_offset(obj);
	drm_gem_object_release(obj);
	mutex_destroy(&bo->map_lock);
	kfree(bo);
}

static int vnpu_vram_mmap(struct drm_gem_object *obj,
			  struct vm_area_struct *vma)
{
	struct vnpu_device *vdev = to_vnpu_device(obj->dev);
	struct vnpu_bo *bo = to_vnpu_bo(obj);
	unsigned long first =
		vma->vm_pgoff - drm_vma_node_start(&obj->vma_node);
	unsigned long pages = vma_pages(vma);
	unsigned long pfn;

	if (first > obj->size >> PAGE_SHIFT ||
	    pages > (obj->size >> PAGE_SHIFT) - first)
		return -EINVAL;
	pfn = (vdev->vram_bar + bo->vram_node.start) >> PAGE_SHIFT;
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot =
		pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	return io_remap_pfn_range(vma, vma->vm_start, pfn + first,
				  pages << PAGE_SHIFT, vma->vm_page_prot);
}

static int vnpu_vram_vmap(struct drm_gem_object *obj, struct iosys_map *map)
{
	struct vnpu_device *vdev = to_vnpu_device(obj->dev);
	u64 start = to_vnpu_bo(obj)->vram_node.start;

	iosys_map_set_vaddr_iomem(map, vdev->vram_map + start);
	return 0;
}

/*
 * VRAM is I/O memory without struct pages: the core's PRIME export would
 * hand importers a dma-buf whose map_dma_buf WARNs (no get_sg_table).
 */
static struct dma_buf *vnpu_vram_export(struct drm_gem_object *obj, int flags)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static const struct vm_operations_struct vnpu_vram_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static const struct drm_gem_object_funcs vnpu_vram_funcs = {
	.free = vnpu_vram_free,
	.open = vnpu_bo_open,
	.close = vnpu_bo_close,
	.export = vnpu_vram_export,
	.vmap = vnpu_vram_vmap,
	.mmap = vnpu_vram_mmap,
	.vm_ops = &vnpu_vram_vm_ops,
};

static struct drm_gem_object *vnpu_vram_create(struct vnpu_device *vdev,
					       u64 size)
{
	struct vnpu_bo *bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	struct drm_gem_object *obj;
	int ret;

	if (!bo)
		return ERR_PTR(-ENOMEM);
	obj = &bo->shmem.base;
	obj->funcs = &vnpu_vram_funcs;
	bo->vram = true;
	mutex_init(&bo->map_lock);
	INIT_LIST_HEAD(&bo->mappings);
	drm_gem_private_object_init(&vdev->drm, obj, size);

	mutex_lock(&vdev->vram_lock);
	ret = drm_mm_insert_node_generic(&vdev->vram_mm, &bo->vram_node, size,
					 VNPU_PAGE_SIZE, 0, DRM_MM_INSERT_BEST);
	if (!ret)
		vdev->vram_used += size;
	mutex_unlock(&vdev->vram_lock);
	if (ret) {
		ret = -ENOMEM;
		goto err;
	}
	/* Its -ENOSPC (offset space) is no VA window: out of memory too. */
	if (drm_gem_create_mmap_offset(obj)) {
		ret = -ENOMEM;
		goto err;
	}
	/* VRAM keeps its contents across owners: never hand out old data. */
	memset_io(vdev->vram_map + bo->vram_node.start, 0, size);
	return obj;
err:
	drm_gem_object_put(obj);
	return ERR_PTR(ret);
}

/* ---- ioctls ------------------------------------------------------------ */

int vnpu_bo_create_ioctl(struct drm_device *dev, void *data,
			 struct drm_file *file)
{
	struct vnpu_device *vdev = to_vnpu_device(dev);
	struct drm_vnpu_bo_create *args = data;
	struct vnpu_ctx *ctx = file->driver_priv;
	struct drm_gem_object *obj;
	struct drm_gem_shmem_object *shmem;
	u64 size, va;
	u32 handle;
	int ret;

	if (args->flags & ~DRM_VNPU_BO_FLAGS || !args->size ||
	    args->size > VNPU_VA_END - VNPU_VA_START - VNPU_PAGE_SIZE)
		return -EINVAL;
	size = round_up(args->size, VNPU_PAGE_SIZE);
	if (args->flags & DRM_VNPU_BO_VRAM) {
		if (size > vdev->vram_size)
			return -ENOMEM;
		if (vnpu_quota_exceeded(ctx->user, ctx->quota_exempt,
					VNPU_QUOTA_VRAM, size))
			return -EDQUOT;
		obj = vnpu_vram_create(vdev, size);
	} else {
		/*
		 * The pages are pinned when the BO is mapped, at creation:
		 * more than the machine has would only end in the OOM killer.
		 */
		if (size > (u64)totalram_pages() << PAGE_SHIFT)
			return -ENOMEM;
		if (vnpu_quota_exceeded(ctx->user, ctx->quota_exempt,
					VNPU_QUOTA_PINNED, size))
			return -EDQUOT;
		shmem = drm_gem_shmem_create(dev, size);
		obj = IS_ERR(shmem) ? ERR_CAST(shmem) : &shmem->base;
	}
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	to_vnpu_bo(obj)->flags = args->flags;
	ret = drm_gem_handle_create(file, obj, &handle);
	/*
	 * The new handle is visible to the file's other threads at once: a
	 * GEM_CLOSE of it may drop the handle's reference, so ours is kept
	 * until the VA is read. The mapping is gone only after such a close,
	 * and then the handle is too (it may name another BO already: it is
	 * not ours to delete).
	 */
	if (!ret && !vnpu_bo_va(obj, file->driver_priv, &va))
		ret = -ENOENT;
	drm_gem_object_put(obj);
	if (ret)
		return ret;
	args->handle = handle;
	args->device_va = va;
	return 0;
}

int vnpu_bo_info_ioctl(struct drm_device *dev, void *data,
		       struct drm_file *file)
{
	struct drm_vnpu_bo_info *args = data;
	struct drm_gem_object *obj;
	u64 va;
	int ret;

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	ret = drm_gem_create_mmap_offset(obj);
	if (!ret && !vnpu_bo_va(obj, file->driver_priv, &va))
		ret = -ENOENT;
	if (!ret) {
		args->flags = to_vnpu_bo(obj)->flags |
			      (obj->import_attach ? DRM_VNPU_BO_IMPORTED : 0);
		args->size = obj->size;
		args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);
		args->device_va = va;
	}
	drm_gem_object_put(obj);
	return ret;
}

/* The first failed job among the fences left in the BO's resv. */
static void vnpu_bo_job_error(struct drm_gem_object *obj,
			      struct drm_vnpu_bo_wait *args)
{
	struct dma_resv_iter cursor;
	struct vnpu_job_status st;
	struct dma_fence *fence;

	args->job_error = 0;
	args->job_status = 0;
	args->job_info = 0;
	args->job_cmd = 0;
	dma_resv_lock(obj->resv, NULL);
	dma_resv_for_each_fence(&cursor, obj->resv, DMA_RESV_USAGE_BOOKKEEP,
				fence) {
		if (dma_fence_is_signaled(fence) && fence->error < 0) {
			vnpu_fence_job_status(fence, &st);
			args->job_error = fence->error;
			args->job_status = st.status;
			args->job_info = st.info;
			args->job_cmd = st.cmd;
			break;
		}
	}
	dma_resv_unlock(obj->resv);
}

int vnpu_bo_wait_ioctl(struct drm_device *dev, void *data,
		       struct drm_file *file)
{
	struct drm_vnpu_bo_wait *args = data;
	struct drm_gem_object *obj;
	s64 now = ktime_get_ns();
	long timeout, ret;
	u64 remaining;

	if (args->flags || args->reserved)
		return -EINVAL;
	/* Compared before subtracting: a very negative deadline must poll. */
	if (args->timeout_ns <= now) {
		timeout = 0;
	} else {
		remaining = (u64)args->timeout_ns - (u64)now;
		timeout = min_t(u64, nsecs_to_jiffies64(remaining),
				MAX_SCHEDULE_TIMEOUT);
		if (!timeout)
			timeout = 1;
	}
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	/*
	 * A zero timeout polls: dma_resv_wait_timeout() would still wait up
	 * to a jiffy for an unsignalled fence.
	 */
	/* Every job that used the BO, explicitly synchronised ones too. */
	if (!timeout)
		ret = dma_resv_test_signaled(obj->resv,
					     DMA_RESV_USAGE_BOOKKEEP);
	else
		ret = dma_resv_wait_timeout(obj->resv, DMA_RESV_USAGE_BOOKKEEP,
					    true, timeout);
	if (ret == 0)
		ret = -ETIMEDOUT;
	if (ret > 0) {
		vnpu_bo_job_error(obj, args);
		ret = 0;
	}
	drm_gem_object_put(obj);
	return ret;
}
