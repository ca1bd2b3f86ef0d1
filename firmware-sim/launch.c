// SPDX-License-Identifier: MIT
/*
 * KERNEL_LAUNCH, in steps: reads the argument block through the MMU and
 * validates it, maps every buffer (a direct VRAM pointer when its pages are
 * physically contiguous VRAM, else a bounce buffer gathered before and
 * scattered after the kernel), lets the kernel validate its params, then
 * runs the blocks: on the worker threads in threaded mode (the command
 * processor meanwhile serves the other queues), one block per step in
 * deterministic mode.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* Allocates b's page list when page n turns out not to continue the
 * physically contiguous VRAM run of pages 0 .. n-1 that starts at p0. */
static bool page_list_start(struct sim_lbuf *b, uint64_t first, uint64_t n)
{
	b->pages = malloc(b->npages * sizeof(*b->pages)); /* <= 1 MiB */
	if (!b->pages)
		return false;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t va = k ? first + k * VNPU_PAGE_SIZE : b->va;

		b->pages[k].kind = SIM_PHYS_VRAM;
		b->pages[k].addr = b->p0.addr + (va - b->va);
	}
	return true;
}

/*
 * Translates pages of buffer l->cur from page l->pos on, with the
 * permissions its access needs, as many as the step's budget (*work, in
 * pages) allows, and once all are done decides direct or staged. False
 * with ex->status set on failure.
 */
static bool map_step(struct vnpu_sim *sim, struct sim_exec *ex,
		     struct sim_launch *l, uint64_t *work)
{
	struct sim_lbuf *b = &l->bufs[l->cur];
	struct vnpu_kbuf *kb = &l->kbufs[l->cur];
	uint64_t first = b->va & ~(VNPU_PAGE_SIZE - 1);
	uint64_t end = l->pos + (SIM_STEP_PAGES - *work);
	struct sim_fault fault;

	if (l->pos == 0) {
		uint64_t last = (b->va + b->size - 1) & ~(VNPU_PAGE_SIZE - 1);

		if (!sim_mmu_range_ok(b->va, b->size, &fault)) {
			fault.write = !(b->access & VNPU_ACCESS_READ);
			sim_mmu_fault(sim, ex, &fault);
			return false;
		}
		b->npages = (last - first) / VNPU_PAGE_SIZE + 1;
		b->contiguous = true;
		/* Only a staged buffer needs its page list: a multi-page one
		 * gets it when its first discontiguous page shows (the pages
		 * before it follow from the first one), so a direct buffer
		 * costs no malloc. */
		if (b->npages == 1)
			b->pages = &b->one_page;
	}
	if (end > b->npages)
		end = b->npages;
	for (uint64_t i = l->pos; i < end; i++) {
		uint64_t va = i ? first + i * VNPU_PAGE_SIZE : b->va;
		struct sim_phys p = {SIM_PHYS_HOST, 0};

		if ((b->access & VNPU_ACCESS_READ) &&
		    !sim_mmu_translate_or_fault(sim, ex, va, false, &p))
			return false;
		if ((b->access & VNPU_ACCESS_WRITE) &&
		    !sim_mmu_translate_or_fault(sim, ex, va, true, &p))
			return false;
		if (i == 0)
			b->p0 = p;
		if (b->contiguous && (p.kind != SIM_PHYS_VRAM ||
				      p.addr != b->p0.addr + (va - b->va))) {
			b->contiguous = false;
			/* Only within the launch's staging limit: beyond it
			 * the buffer gives TOO_LARGE once mapped. */
			if (!b->pages &&
			    b->size <= SIM_STAGING_LIMIT - l->staged) {
				if (!page_list_start(b, first, i)) {
					ex->status = VNPU_STATUS_TOO_LARGE;
					return false;
				}
				l->staged += b->size;
			}
		}
		if (b->pages)
			b->pages[i] = p;
	}
	*work += end - l->pos;
	l->pos = end;
	if (end < b->npages)
		return true;
	/* The whole buffer is mapped. */
	kb->size = b->size;
	kb->access = b->access;
	kb->ptr = NULL; /* staged: the bounce buffer, once allocated */
	if (b->contiguous) {
		kb->ptr = sim->vram + b->p0.addr;
		if (b->pages != &b->one_page)
			free(b->pages);
		b->pages = NULL;
	} else if (!b->pages) {
		ex->status = VNPU_STATUS_TOO_LARGE;
		return false;
	} else if (b->pages == &b->one_page) {
		/* A one-page buffer outside VRAM: staged, counted now. */
		if (b->size > SIM_STAGING_LIMIT - l->staged) {
			ex->status = VNPU_STATUS_TOO_LARGE;
			return false;
		}
		l->staged += b->size;
	}
	l->cur++;
	l->pos = 0;
	return true;
}

/* Moves pages of staged buffer l->cur between its pages and its bounce
 * buffer, from page l->pos on, as many as the step's budget allows. */
static bool stage_step(struct vnpu_sim *sim, struct sim_exec *ex,
		       struct sim_launch *l, bool write_back, uint64_t *work)
{
	struct sim_lbuf *b = &l->bufs[l->cur];
	uint64_t first = b->va & ~(VNPU_PAGE_SIZE - 1);

	while (l->pos < b->npages && *work < SIM_STEP_PAGES) {
		uint64_t i = l->pos;
		uint64_t va = i ? first + i * VNPU_PAGE_SIZE : b->va;
		uint64_t off = va - b->va;
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
		(*work)++;
		l->pos++;
	}
	return true;
}

/* The next staged buffer at or after l->cur that the phase moves (WRITE
 * buffers only when scattering); l->nbufs when none is left. */
static void next_staged(struct sim_launch *l, bool write_back)
{
	while (l->cur < l->nbufs &&
	       (!l->bufs[l->cur].staging ||
		(write_back && !(l->bufs[l->cur].access & VNPU_ACCESS_WRITE))))
		l->cur++;
	l->pos = 0;
}

/* Checks the argument block's header and buffer table. */
static bool parse_args(struct sim_exec *ex, struct sim_launch *l,
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
		struct sim_lbuf *b = &l->bufs[i];
		struct vnpu_kargs_buffer kb;
		uint64_t end;

		memcpy(&kb, args + sizeof(hdr) + i * sizeof(kb), sizeof(kb));
		if (kb.size == 0 || kb.reserved || kb.access == 0 ||
		    kb.access & ~(VNPU_ACCESS_READ | VNPU_ACCESS_WRITE) ||
		    __builtin_add_overflow(kb.va, kb.size, &end)) {
			ex->status = VNPU_STATUS_INVALID_ARGS;
			return false;
		}
		memset(b, 0, sizeof(*b));
		b->va = kb.va;
		b->size = kb.size;
		b->access = kb.access;
	}
	/* From here on sim_launch_release frees what the buffers get. */
	l->nbufs = hdr.num_buffers;
	return true;
}

void sim_launch_release(struct vnpu_sim *sim, struct sim_launch *l)
{
	for (uint32_t i = 0; i < l->nbufs; i++) {
		free(l->bufs[i].staging);
		l->bufs[i].staging = NULL;
		if (l->bufs[i].pages != &l->bufs[i].one_page)
			free(l->bufs[i].pages);
		l->bufs[i].pages = NULL;
	}
	l->nbufs = 0;
	if (l->budget) {
		sim->staging_used -= l->staged;
		l->budget = false;
	}
	l->staged = 0;
}

void sim_launch_begin(struct vnpu_sim *sim, struct sim_exec *ex)
{
	const struct vnpu_cmd_launch *c = &ex->cmd.launch;
	_Alignas(16) uint8_t args[VNPU_KARGS_MAX_BYTES];
	struct sim_launch *l = &ex->launch;
	uint64_t end;

	for (size_t i = 0; i < sizeof(c->reserved) / sizeof(c->reserved[0]);
	     i++) {
		if (c->reserved[i]) {
			ex->status = VNPU_STATUS_INVALID_FIELD;
			return;
		}
	}
	/* Only what sim_launch_release needs before parse_args fills the
	 * rest (the structure is large; this runs for every launch). */
	l->nbufs = 0;
	l->staged = 0;
	l->budget = false;
	l->posted = false;
	/* l->stop was cleared at the fetch, under the lock: an ABORT since
	 * then has set it and must stay seen */
	l->kernel = vnpu_kernel_find(c->kernel_id);
	/* kernel_loaded only changes while the CP is idle (boot, reset). */
	if (!l->kernel || c->kernel_id > VNPU_KERNEL_ID_MAX ||
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
	if (!parse_args(ex, l, args, c->args_size))
		return;
	memcpy(l->params, args + c->args_size - l->kernel->params_size,
	       l->kernel->params_size);
	l->nblocks = c->block_count;
	l->next_block = 0;
	l->running = 0;
	l->lphase = SIM_LP_MAP;
	l->cur = 0;
	l->pos = 0;
	ex->phase = SIM_PH_LAUNCH;
}

/* After the last buffer is mapped: the kernel's validator. */
static bool validate(struct sim_exec *ex, struct sim_launch *l)
{
	uint32_t status = l->kernel->validate(l->params, l->kbufs, l->nbufs);

	if (status == VNPU_STATUS_OK)
		return true;
	ex->status = status == VNPU_STATUS_UNSUPPORTED
			     ? VNPU_STATUS_UNSUPPORTED
			     : VNPU_STATUS_INVALID_ARGS;
	return false;
}

/*
 * Room for the launch's bounce buffers: all launches in flight together
 * stay within SIM_STAGING_LIMIT (the host memory a guest can make the
 * device allocate). False while the room is held by other launches (they
 * are past this phase and give it back when they retire).
 */
static bool stage_alloc(struct vnpu_sim *sim, struct sim_exec *ex,
			struct sim_launch *l)
{
	if (l->staged > SIM_STAGING_LIMIT - sim->staging_used)
		return false;
	sim->staging_used += l->staged;
	l->budget = true;
	for (uint32_t i = 0; i < l->nbufs; i++) {
		struct sim_lbuf *b = &l->bufs[i];

		if (!b->pages)
			continue;
		b->staging = malloc(b->size); /* bounded by the limit */
		if (!b->staging) {
			sim_log(sim, "vnpu: no memory to stage %llu bytes",
				(unsigned long long)b->size);
			ex->status = VNPU_STATUS_TOO_LARGE;
			return true;
		}
		l->kbufs[i].ptr = b->staging;
	}
	return true;
}

/* One phase's share of a step; false when it could not progress. */
static bool launch_phase(struct vnpu_sim *sim, struct sim_exec *ex,
			 struct sim_launch *l, uint64_t *work)
{
	switch (l->lphase) {
	case SIM_LP_MAP:
		if (!map_step(sim, ex, l, work)) {
			ex->phase = SIM_PH_DONE;
		} else if (l->cur == l->nbufs) {
			if (!validate(ex, l))
				ex->phase = SIM_PH_DONE;
			else
				l->lphase = SIM_LP_STAGE;
		}
		return true;
	case SIM_LP_STAGE:
		if (!stage_alloc(sim, ex, l))
			return false;
		if (ex->status != VNPU_STATUS_OK) {
			ex->phase = SIM_PH_DONE;
			return true;
		}
		l->cur = 0;
		next_staged(l, false);
		l->lphase = SIM_LP_GATHER;
		return true;
	case SIM_LP_GATHER:
		/* Every staged buffer, including write-only ones: bytes the
		 * kernel does not write keep their values. */
		if (l->cur < l->nbufs) {
			if (!stage_step(sim, ex, l, false, work)) {
				ex->phase = SIM_PH_DONE;
				return true;
			}
			if (l->pos == l->bufs[l->cur].npages) {
				l->cur++;
				next_staged(l, false);
			}
			return true;
		}
		l->lphase = SIM_LP_RUN;
		if (sim->cfg.mode == VNPU_SIM_THREADS)
			sim_pool_post(sim, l, &sim->queue[ex->queue].busy_cns,
				      ex->epoch);
		return true;
	case SIM_LP_RUN:
		if (sim->cfg.mode != VNPU_SIM_THREADS &&
		    l->next_block < l->nblocks && !atomic_load(&l->stop)) {
			sim_run_block(l, l->next_block++);
			return true;
		}
		if (!sim_launch_settled(sim, l))
			return false;
		/* A stopped launch is cancelled: the queue's abort or
		 * disable (or reset), seen at the next step, ends it without
		 * write-back. */
		if (atomic_load(&l->stop))
			return true;
		l->cur = 0;
		next_staged(l, true);
		l->lphase = SIM_LP_SCATTER;
		return true;
	case SIM_LP_SCATTER:
		/* In buffer order: of overlapping staged buffers the later
		 * one wins. */
		if (l->cur < l->nbufs) {
			if (!stage_step(sim, ex, l, true, work)) {
				ex->phase = SIM_PH_DONE;
				return true;
			}
			if (l->pos == l->bufs[l->cur].npages) {
				l->cur++;
				next_staged(l, true);
			}
			return true;
		}
		ex->phase = SIM_PH_DONE;
		return true;
	}
	return false;
}

/*
 * A step goes through the phases as far as SIM_STEP_PAGES pages of
 * translation or staging allow, so that a small launch takes few steps. It
 * ends while the blocks run (posted to the cores, or one block run in
 * deterministic mode) and at a stop.
 */
bool sim_launch_step(struct vnpu_sim *sim, struct sim_exec *ex)
{
	struct sim_launch *l = &ex->launch;
	bool progressed = false;
	uint64_t work = 0;

	while (ex->phase == SIM_PH_LAUNCH && work < SIM_STEP_PAGES) {
		if (!launch_phase(sim, ex, l, &work))
			break;
		progressed = true;
		if (l->lphase == SIM_LP_RUN || atomic_load(&l->stop))
			break;
	}
	return progressed;
}
