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
 * Copies in chunks that stay inside one source and one destination page;
 * each chunk is translated (source first), then moved with memmove
 * semantics. A fault or refused DMA stops the copy: the chunks before it
 * have been written.
 */
void sim_dma_copy(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t src,
		  uint64_t dst, uint64_t size)
{
	uint8_t bounce[VNPU_PAGE_SIZE];

	if (!range_ok(sim, ex, src, size, false) ||
	    !range_ok(sim, ex, dst, size, true))
		return;
	while (size) {
		uint64_t chunk = min3(page_left(src), page_left(dst), size);
		struct sim_phys ps, pd;

		if (atomic_load(&sim->cancel))
			return; /* a reset drops this command anyway */
		if (!sim_mmu_translate_or_fault(sim, ex, src, false, &ps) ||
		    !sim_mmu_translate_or_fault(sim, ex, dst, true, &pd))
			return;
		if (ps.kind == SIM_PHYS_VRAM && pd.kind == SIM_PHYS_VRAM) {
			memmove(sim->vram + pd.addr, sim->vram + ps.addr,
				chunk);
		} else if (pd.kind == SIM_PHYS_VRAM) {
			/* Host to VRAM: straight into VRAM, no bounce. */
			if (!sim_phys_read(sim, &ps, sim->vram + pd.addr,
					   chunk)) {
				dma_error(ex, src);
				return;
			}
		} else if (ps.kind == SIM_PHYS_VRAM) {
			if (!sim_phys_write(sim, &pd, sim->vram + ps.addr,
					    chunk)) {
				dma_error(ex, dst);
				return;
			}
		} else {
			if (!sim_phys_read(sim, &ps, bounce, chunk)) {
				dma_error(ex, src);
				return;
			}
			if (!sim_phys_write(sim, &pd, bounce, chunk)) {
				dma_error(ex, dst);
				return;
			}
		}
		src += chunk;
		dst += chunk;
		size -= chunk;
	}
}

void sim_dma_fill(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t dst,
		  uint64_t size, uint32_t pattern, uint32_t width)
{
	uint8_t buf[VNPU_PAGE_SIZE];

	/* dst and every page start are width-aligned, so each chunk starts
	 * at byte 0 of the pattern. */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(pattern >> (8 * (i % width)));
	if (!range_ok(sim, ex, dst, size, true))
		return;
	while (size) {
		uint64_t chunk = page_left(dst) < size ? page_left(dst) : size;
		struct sim_phys pd;

		if (atomic_load(&sim->cancel))
			return;
		if (!sim_mmu_translate_or_fault(sim, ex, dst, true, &pd))
			return;
		if (!sim_phys_write(sim, &pd, buf, chunk)) {
			dma_error(ex, dst);
			return;
		}
		dst += chunk;
		size -= chunk;
	}
}
