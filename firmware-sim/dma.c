// SPDX-License-Identifier: MIT
/* The DMA engine: reads, writes, copies and fills of device virtual ranges,
 * page by page through the executing command's context. */
#include <string.h>

#include "sim_internal.h"

bool sim_phys_read(struct vnpu_sim *sim, const struct sim_phys *p, void *buf,
		   uint64_t len)
{
	if (p->kind == SIM_PHYS_VRAM) {
		memcpy(buf, sim->vram + p->addr, len);
		return true;
	}
	return sim->hal.dma_read(sim->hal.opaque, p->addr, buf, len) == 0;
}

bool sim_phys_write(struct vnpu_sim *sim, const struct sim_phys *p,
		    const void *buf, uint64_t len)
{
	if (p->kind == SIM_PHYS_VRAM) {
		memcpy(sim->vram + p->addr, buf, len);
		return true;
	}
	return sim->hal.dma_write(sim->hal.opaque, p->addr, buf, len) == 0;
}

static uint64_t page_left(uint64_t va)
{
	return VNPU_PAGE_SIZE - (va & (VNPU_PAGE_SIZE - 1));
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;

	return m < c ? m : c;
}

static void dma_error(struct sim_exec *ex, uint64_t va)
{
	ex->status = VNPU_STATUS_DMA_ERROR;
	ex->info = va;
}

/* Checks [va, va + len) for the VA limit, faulting when it fails. */
static bool range_ok(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		     uint64_t len, bool write)
{
	struct sim_fault fault;

	if (sim_mmu_range_ok(va, len, &fault))
		return true;
	fault.write = write;
	sim_mmu_fault(sim, ex, &fault);
	return false;
}

static bool va_access(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		      void *buf, uint64_t len, bool write)
{
	uint8_t *p = buf;

	if (!range_ok(sim, ex, va, len, write))
		return false;
	while (len) {
		uint64_t chunk = page_left(va) < len ? page_left(va) : len;
		struct sim_phys phys;
		bool ok;

		if (!sim_mmu_translate_or_fault(sim, ex, va, write, &phys))
			return false;
		ok = write ? sim_phys_write(sim, &phys, p, chunk)
			   : sim_phys_read(sim, &phys, p, chunk);
		if (!ok) {
			dma_error(ex, va);
			return false;
		}
		va += chunk;
		p += chunk;
		len -= chunk;
	}
	return true;
}

bool sim_va_read(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		 void *buf, uint64_t len)
{
	return va_access(sim, ex, va, buf, len, false);
}

bool sim_va_write(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		  const void *buf, uint64_t len)
{
	return va_access(sim, ex, va, (void *)buf, len, true);
}

/*
 * The run of pages from va (at most len bytes) that translate to
 * consecutive addresses of one kind: one memmove or one host DMA for the
 * whole run instead of one per page. Returns its length and *phys its
 * start; 0 with the fault recorded when the first page faults. A later
 * page that does not translate only ends the run.
 */
static uint64_t phys_run(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
			 uint64_t len, bool write, struct sim_phys *phys)
{
	if (!sim_mmu_translate_or_fault(sim, ex, va, write, phys))
		return 0;
	return sim_mmu_contiguous(sim, ex, va, len, write, phys);
}

/*
 * A run of host memory contiguous on the bus, in one transfer; when the
 * bus refuses it, again page by page, so that the DMA_ERROR names the
 * first refused page (the pages before it are transferred, as a copy
 * leaves the runs before a failure written). va is the run's VA.
 */
static bool host_run(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		     const struct sim_phys *phys, uint8_t *buf, uint64_t len,
		     bool write)
{
	uint64_t off = 0;

	if (write ? sim_phys_write(sim, phys, buf, len)
		  : sim_phys_read(sim, phys, buf, len))
		return true;
	while (off < len) {
		uint64_t chunk = page_left(va + off) < len - off
					 ? page_left(va + off)
					 : len - off;
		struct sim_phys page = *phys;

		page.addr += off;
		if (!(write ? sim_phys_write(sim, &page, buf + off, chunk)
			    : sim_phys_read(sim, &page, buf + off, chunk)))
			break;
		off += chunk;
	}
	if (off == len)
		return true;
	dma_error(ex, va + off);
	return false;
}

/*
 * Copies in runs that are contiguous on both sides (see phys_run); each run
 * is translated (source first), then moved with memmove semantics. A fault
 * or refused DMA stops the copy: the runs before it have been written. One
 * step moves at most SIM_DMA_STEP_BYTES, so that the command processor
 * serves the other queues, an abort and a reset between steps.
 */
bool sim_dma_copy_step(struct vnpu_sim *sim, struct sim_exec *ex)
{
	const struct vnpu_cmd_copy *c = &ex->cmd.copy;
	uint64_t budget = SIM_DMA_STEP_BYTES;
	uint8_t bounce[VNPU_PAGE_SIZE];

	if (ex->done == 0 && (!range_ok(sim, ex, c->src_va, c->size, false) ||
			      !range_ok(sim, ex, c->dst_va, c->size, true)))
		return true;
	while (ex->done < c->size && budget) {
		uint64_t src = c->src_va + ex->done, dst = c->dst_va + ex->done;
		uint64_t left = c->size - ex->done;
		struct sim_phys ps, pd;
		uint64_t chunk;

		chunk = phys_run(sim, ex, src, left < budget ? left : budget,
				 false, &ps);
		if (chunk)
			chunk = phys_run(sim, ex, dst, chunk, true, &pd);
		if (!chunk)
			return true;
		if (ps.kind != SIM_PHYS_VRAM && pd.kind != SIM_PHYS_VRAM)
			chunk = min3(page_left(src), page_left(dst), chunk);
		if (ps.kind == SIM_PHYS_VRAM && pd.kind == SIM_PHYS_VRAM) {
			memmove(sim->vram + pd.addr, sim->vram + ps.addr,
				chunk);
		} else if (pd.kind == SIM_PHYS_VRAM) {
			/* Host to VRAM: straight into VRAM, no bounce. */
			if (!host_run(sim, ex, src, &ps, sim->vram + pd.addr,
				      chunk, false))
				return true;
		} else if (ps.kind == SIM_PHYS_VRAM) {
			if (!host_run(sim, ex, dst, &pd, sim->vram + ps.addr,
				      chunk, true))
				return true;
		} else {
			if (!sim_phys_read(sim, &ps, bounce, chunk)) {
				dma_error(ex, src);
				return true;
			}
			if (!sim_phys_write(sim, &pd, bounce, chunk)) {
				dma_error(ex, dst);
				return true;
			}
		}
		ex->done += chunk;
		budget -= chunk;
	}
	return ex->done == c->size;
}

/* len bytes of the pattern at p, starting at the pattern's byte 0. */
static void fill_pattern(uint8_t *p, uint64_t len, const uint8_t word[4])
{
	if (word[0] == word[1] && word[0] == word[2] && word[0] == word[3]) {
		memset(p, word[0], len);
		return;
	}
	/* 1, 2 and 4 divide 4: the word repeats the pattern whole. */
	for (; len >= 4; p += 4, len -= 4)
		memcpy(p, word, 4);
	memcpy(p, word, len);
}

/*
 * Fills in runs contiguous in device memory (see phys_run): VRAM directly,
 * host memory through a page of the pattern. dst and every run start are
 * width-aligned, so each starts at byte 0 of the pattern. At most
 * SIM_DMA_STEP_BYTES per step, as a copy.
 */
bool sim_dma_fill_step(struct vnpu_sim *sim, struct sim_exec *ex)
{
	const struct vnpu_cmd_fill *f = &ex->cmd.fill;
	uint64_t budget = SIM_DMA_STEP_BYTES;
	uint8_t word[4], page[VNPU_PAGE_SIZE];
	bool page_ready = false;

	for (unsigned i = 0; i < 4; i++)
		word[i] = (uint8_t)(f->pattern >> (8 * (i % f->width)));
	if (ex->done == 0 && !range_ok(sim, ex, f->dst_va, f->size, true))
		return true;
	while (ex->done < f->size && budget) {
		uint64_t dst = f->dst_va + ex->done, left = f->size - ex->done;
		struct sim_phys pd;
		uint64_t run;

		run = phys_run(sim, ex, dst, left < budget ? left : budget,
			       true, &pd);
		if (!run)
			return true;
		if (pd.kind == SIM_PHYS_VRAM) {
			fill_pattern(sim->vram + pd.addr, run, word);
		} else {
			run = page_left(dst) < run ? page_left(dst) : run;
			if (!page_ready) {
				fill_pattern(page, sizeof(page), word);
				page_ready = true;
			}
			if (!sim_phys_write(sim, &pd, page, run)) {
				dma_error(ex, dst);
				return true;
			}
		}
		ex->done += run;
		budget -= run;
	}
	return ex->done == f->size;
}
