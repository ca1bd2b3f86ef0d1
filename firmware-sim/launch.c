// SPDX-License-Identifier: MIT
/*
 * KERNEL_LAUNCH: reads the argument block through the MMU, validates it,
 * maps every buffer (a direct VRAM pointer when its pages are physically
 * contiguous VRAM, else a bounce buffer gathered before and scattered after
 * the kernel), lets the kernel validate its params, then runs the blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

struct launch_buf {
	uint64_t va;
	uint64_t size;
	uint32_t access;
	uint8_t *staging;	/* NULL when direct */
	struct sim_phys *pages; /* staged buffers: one entry per page */
	uint64_t npages;
	struct sim_phys one_page; /* pages of a one-page buffer (no malloc) */
};

struct launch {
	const struct vnpu_kernel_def *kernel;
	uint32_t nbufs;
	struct launch_buf bufs[VNPU_KARGS_MAX_BUFFERS];
	struct vnpu_kbuf kbufs[VNPU_KARGS_MAX_BUFFERS];
	uint64_t staged; /* bytes of bounce buffers */
};

/* Allocates b's page list when page n turns out not to continue the
 * physically contiguous VRAM run of pages 0 .. n-1 that starts at p0. */
static bool page_list_start(struct launch_buf *b, uint64_t first,
			    struct sim_phys p0, uint64_t n)
{
	uint64_t npages = (((b->va + b->size - 1) & ~(VNPU_PAGE_SIZE - 1)) -
			   first) / VNPU_PAGE_SIZE + 1;

	b->pages = malloc(npages * sizeof(*b->pages)); /* <= 1 MiB */
	if (!b->pages)
		return false;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t va = k ? first + k * VNPU_PAGE_SIZE : b->va;

		b->pages[k].kind = SIM_PHYS_VRAM;
		b->pages[k].addr = p0.addr + (va - b->va);
	}
	return true;
}

/* Translates every page of b with the permissions its access needs and
 * decides direct or staged. False with ex->status set on failure. */
static bool map_buffer(struct vnpu_sim *sim, struct sim_exec *ex,
		       struct launch *l, struct launch_buf *b,
		       struct vnpu_kbuf *kb)
{
	uint64_t first = b->va & ~(VNPU_PAGE_SIZE - 1);
	uint64_t last = (b->va + b->size - 1) & ~(VNPU_PAGE_SIZE - 1);
	uint64_t npages = (last - first) / VNPU_PAGE_SIZE + 1;
	struct sim_phys p0 = {SIM_PHYS_HOST, 0};
	struct sim_fault fault;
	bool contiguous = true;

	if (!sim_mmu_range_ok(b->va, b->size, &fault)) {
		fault.write = !(b->access & VNPU_ACCESS_READ);
		sim_mmu_fault(sim, ex, &fault);
		return false;
	}
	/* Only a staged buffer needs its page list: a multi-page one gets
	 * it when its first discontiguous page shows (the pages before it
	 * follow from the first one), so a direct buffer costs no malloc. */
	if (npages == 1)
		b->pages = &b->one_page;
	for (uint64_t i = 0; i < npages; i++) {
		uint64_t va = i ? first + i * VNPU_PAGE_SIZE : b->va;
		struct sim_phys p = {SIM_PHYS_HOST, 0};

		if ((i & 1023) == 1023 && atomic_load(&sim->cancel))
			return false; /* the reset drops this command */
		if ((b->access & VNPU_ACCESS_READ) &&
		    !sim_mmu_translate_or_fault(sim, ex, va, false, &p))
			return false;
		if ((b->access & VNPU_ACCESS_WRITE) &&
		    !sim_mmu_translate_or_fault(sim, ex, va, true, &p))
			return false;
		if (i == 0)
			p0 = p;
		if (contiguous && (p.kind != SIM_PHYS_VRAM ||
				   p.addr != p0.addr + (va - b->va))) {
			contiguous = false;
			if (!b->pages && b->size <= SIM_STAGING_LIMIT &&
			    !page_list_start(b, first, p0, i)) {
				ex->status = VNPU_STATUS_TOO_LARGE;
				return false;
			}
		}
		if (b->pages)
			b->pages[i] = p;
	}
	b->npages = npages;
	kb->size = b->size;
	kb->access = b->access;
	if (contiguous) {
		kb->ptr = sim->vram + p0.addr;
		if (b->pages != &b->one_page)
			free(b->pages);
		b->pages = NULL;
		return true;
	}
	if (!b->pages || b->size > SIM_STAGING_LIMIT - l->staged) {
		ex->status = VNPU_STATUS_TOO_LARGE;
		return false;
	}
	b->staging = malloc(b->size); /* bounded by SIM_STAGING_LIMIT */
	if (!b->staging) {
		sim_log(sim, "vnpu: no memory to stage %llu bytes",
			(unsigned long long)b->size);
		ex->status = VNPU_STATUS_TOO_LARGE;
		return false;
	}
	l->staged += b->size;
	kb->ptr = b->staging;
	return true;
}

/* Moves a staged buffer between its pages and its bounce buffer. */
static bool stage(struct vnpu_sim *sim, struct sim_exec *ex,
		  struct launch_buf *b, bool write_back)
{
	uint64_t off = 0;

	for (uint64_t i = 0; i < b->npages; i++) {
		uint64_t va = b->va + off;
		uint64_t left = VNPU_PAGE_SIZE - (va & (VNPU_PAGE_SIZE - 1));
		uint64_t chunk = left < b->size - off ? left : b->size - off;
		bool ok = write_back ? sim_phys_write(sim, &b->pages[i],
						      b->staging + off, chunk)
				     : sim_phys_read(sim, &b->pages[i],
						     b->staging + off, chunk);

		if (!ok) {
			ex->status = VNPU_STATUS_DMA_ERROR;
			ex->info = va;
			return false;
		}
		off += chunk;
	}
	return true;
}

/* Checks the argument block's header and buffer table. */
static bool parse_args(struct sim_exec *ex, struct launch *l,
		       const uint8_t *args, uint32_t args_size)
{
	struct vnpu_kargs_header hdr;
	uint64_t need;

	memcpy(&hdr, args, sizeof(hdr));
	if (hdr.reserved || hdr.num_buffers > VNPU_KARGS_MAX_BUFFERS ||
	    hdr.params_size != l->kernel->params_size) {
		ex->status = VNPU_STATUS_INVALID_ARGS;
		return false;
	}
	need = sizeof(hdr) +
	       (uint64_t)hdr.num_buffers * sizeof(struct vnpu_kargs_buffer) +
	       hdr.params_size;
	if (need != args_size) {
		ex->status = VNPU_STATUS_INVALID_ARGS;
		return false;
	}
	for (uint32_t i = 0; i < hdr.num_buffers; i++) {
		struct launch_buf *b = &l->bufs[i];
		struct vnpu_kargs_buffer kb;
		uint64_t end;

		memcpy(&kb, args + sizeof(hdr) + i * sizeof(kb), sizeof(kb));
		if (kb.size == 0 || kb.reserved || kb.access == 0 ||
		    kb.access & ~(VNPU_ACCESS_READ | VNPU_ACCESS_WRITE) ||
		    __builtin_add_overflow(kb.va, kb.size, &end)) {
			ex->status = VNPU_STATUS_INVALID_ARGS;
			return false;
		}
		b->va = kb.va;
		b->size = kb.size;
		b->access = kb.access;
		b->staging = NULL;
		b->pages = NULL;
		b->npages = 0;
	}
	/* From here on launch_free releases what the buffers get. */
	l->nbufs = hdr.num_buffers;
	return true;
}

static void launch_free(struct launch *l)
{
	for (uint32_t i = 0; i < l->nbufs; i++) {
		free(l->bufs[i].staging);
		if (l->bufs[i].pages != &l->bufs[i].one_page)
			free(l->bufs[i].pages);
	}
}

static void launch_run(struct vnpu_sim *sim, struct sim_exec *ex,
		       struct launch *l, const uint8_t *args,
		       uint32_t args_size)
{
	const struct vnpu_cmd_launch *c = &ex->cmd.launch;
	_Alignas(16) uint8_t params[VNPU_KARGS_MAX_BYTES];
	uint32_t status;

	if (!parse_args(ex, l, args, args_size))
		return;
	memcpy(params, args + args_size - l->kernel->params_size,
	       l->kernel->params_size);
	for (uint32_t i = 0; i < l->nbufs; i++)
		if (!map_buffer(sim, ex, l, &l->bufs[i], &l->kbufs[i]))
			return;
	status = l->kernel->validate(params, l->kbufs, l->nbufs);
	if (status != VNPU_STATUS_OK) {
		ex->status = status == VNPU_STATUS_UNSUPPORTED
				     ? VNPU_STATUS_UNSUPPORTED
				     : VNPU_STATUS_INVALID_ARGS;
		return;
	}
	for (uint32_t i = 0; i < l->nbufs; i++)
		if (l->bufs[i].staging && !stage(sim, ex, &l->bufs[i], false))
			return;
	sim_run_blocks(sim, l->kernel, params, l->kbufs, c->block_count);
	if (atomic_load(&sim->cancel))
		return;
	for (uint32_t i = 0; i < l->nbufs; i++)
		if (l->bufs[i].staging &&
		    (l->bufs[i].access & VNPU_ACCESS_WRITE) &&
		    !stage(sim, ex, &l->bufs[i], true))
			return;
}

void sim_launch(struct vnpu_sim *sim, struct sim_exec *ex)
{
	const struct vnpu_cmd_launch *c = &ex->cmd.launch;
	_Alignas(16) uint8_t args[VNPU_KARGS_MAX_BYTES];
	struct launch l;
	uint64_t end;

	for (size_t i = 0; i < sizeof(c->reserved) / sizeof(c->reserved[0]);
	     i++) {
		if (c->reserved[i]) {
			ex->status = VNPU_STATUS_INVALID_FIELD;
			return;
		}
	}
	/* Only what launch_free needs before parse_args fills the rest
	 * (the structure is large; this runs for every launch). */
	l.nbufs = 0;
	l.staged = 0;
	l.kernel = vnpu_kernel_find(c->kernel_id);
	/* kernel_loaded only changes while the CP is idle (boot, reset). */
	if (!l.kernel || c->kernel_id > VNPU_KERNEL_ID_MAX ||
	    !sim->kernel_loaded[c->kernel_id]) {
		ex->status = VNPU_STATUS_UNKNOWN_KERNEL;
		return;
	}
	if (c->block_count == 0 || c->block_count > VNPU_LAUNCH_MAX_BLOCKS ||
	    c->args_size < sizeof(struct vnpu_kargs_header) ||
	    c->args_size > VNPU_KARGS_MAX_BYTES || c->args_va % 8 ||
	    __builtin_add_overflow(c->args_va, c->args_size, &end)) {
		ex->status = VNPU_STATUS_INVALID_ARGS;
		return;
	}
	if (!sim_va_read(sim, ex, c->args_va, args, c->args_size))
		return;
	launch_run(sim, ex, &l, args, c->args_size);
	launch_free(&l);
}
