// SPDX-License-Identifier: MIT
/* The minimal in-process host (see vnpu_simhost.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fw_image.h"
#include "vnpu/hw_fw.h"
#include "vnpu/hw_mmu.h"
#include "vnpu/hw_status.h"
#include "vnpu_pt.h"
#include "vnpu_ring.h"
#include "vnpu_simhost.h"

#define MIB (1ull << 20)

/* ---- HAL ----------------------------------------------------------------- */

/* Host pointer for [bus, bus + len) when all of it is backed, else NULL. */
void *vnpu_simhost_host_ptr(struct vnpu_simhost *h, uint64_t bus, uint64_t len)
{
	uint64_t lo = VNPU_SIMHOST_BUS_BASE + VNPU_SIMHOST_HOLE_SIZE;
	uint64_t hi = VNPU_SIMHOST_BUS_BASE + h->cfg.host_mem_size;

	if (bus < lo || bus > hi || len > hi - bus)
		return NULL;
	return h->host_mem + (bus - VNPU_SIMHOST_BUS_BASE);
}

static int hal_dma_read(void *opaque, uint64_t addr, void *buf, uint64_t len)
{
	void *p = vnpu_simhost_host_ptr(opaque, addr, len);

	if (!p)
		return -1;
	memcpy(buf, p, len);
	return 0;
}

static int hal_dma_write(void *opaque, uint64_t addr, const void *buf,
			 uint64_t len)
{
	void *p = vnpu_simhost_host_ptr(opaque, addr, len);

	if (!p)
		return -1;
	memcpy(p, buf, len);
	return 0;
}

/* Whether this thread is inside vnpu_simhost_wr. */
static _Thread_local bool in_reg_write;

static void hal_irq(void *opaque, unsigned vector)
{
	struct vnpu_simhost *h = opaque;

	if (in_reg_write)
		atomic_fetch_add(&h->irqs_in_reg_write, 1);
	if (vector < VNPU_MSIX_VECTORS(VNPU_MAX_QUEUES))
		atomic_fetch_add(&h->irq_count[vector], 1);
}

static uint64_t hal_clock(void *opaque)
{
	struct vnpu_simhost *h = opaque;
	struct timespec ts;

	if (!h->cfg.real_clock)
		return atomic_load(&h->clock_ns);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void hal_log(void *opaque, const char *msg)
{
	struct vnpu_simhost *h = opaque;

	atomic_fetch_add(&h->log_count, 1);
	pthread_mutex_lock(&h->log_lock);
	snprintf(h->last_log, sizeof(h->last_log), "%s", msg);
	pthread_mutex_unlock(&h->log_lock);
	if (!h->cfg.quiet)
		fprintf(stderr, "%s\n", msg);
}

/* ---- creation ------------------------------------------------------------ */

int vnpu_simhost_create(const struct vnpu_simhost_config *cfg,
			struct vnpu_simhost **out)
{
	struct vnpu_simhost *h = calloc(1, sizeof(*h));
	struct vnpu_sim_config sc;
	struct vnpu_sim_hal hal = {0};
	int err;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->cfg = *cfg;
	if (!h->cfg.host_mem_size)
		h->cfg.host_mem_size = 16 * MIB;
	if (!h->cfg.vram_size)
		h->cfg.vram_size = 16 * MIB;
	if (!h->cfg.num_queues)
		h->cfg.num_queues = 4;
	if (!h->cfg.num_contexts)
		h->cfg.num_contexts = 4;
	if (!h->cfg.num_cores)
		h->cfg.num_cores = 2;
	if (h->cfg.host_mem_size <= VNPU_SIMHOST_HOLE_SIZE) {
		free(h);
		return -EINVAL;
	}
	h->host_mem = calloc(1, h->cfg.host_mem_size);
	h->vram = calloc(1, h->cfg.vram_size);
	pthread_mutex_init(&h->log_lock, NULL);
	if (!h->host_mem || !h->vram) {
		vnpu_simhost_destroy(h);
		return -ENOMEM;
	}
	h->host_next = VNPU_SIMHOST_HOLE_SIZE;
	atomic_init(&h->clock_ns, 1000);
	memset(&sc, 0, sizeof(sc));
	sc.vram = h->vram;
	sc.vram_size = h->cfg.vram_size;
	sc.num_queues = h->cfg.num_queues;
	sc.num_contexts = h->cfg.num_contexts;
	sc.num_cores = h->cfg.num_cores;
	sc.mode = h->cfg.mode;
	sc.test_mode = h->cfg.test_mode;
	sc.doorbell_runs_short = h->cfg.doorbell_runs_short;
	hal.opaque = h;
	hal.dma_read = hal_dma_read;
	hal.dma_write = hal_dma_write;
	hal.irq = hal_irq;
	hal.clock_ns = hal_clock;
	hal.log = hal_log;
	err = vnpu_sim_create(&sc, &hal, &h->sim);
	if (err) {
		vnpu_simhost_destroy(h);
		return err;
	}
	*out = h;
	return 0;
}

void vnpu_simhost_destroy(struct vnpu_simhost *h)
{
	if (!h)
		return;
	vnpu_sim_destroy(h->sim);
	pthread_mutex_destroy(&h->log_lock);
	free(h->vram);
	free(h->host_mem);
	free(h);
}

uint32_t vnpu_simhost_rd(struct vnpu_simhost *h, uint32_t offset)
{
	return vnpu_sim_reg_read(h->sim, offset);
}

void vnpu_simhost_wr(struct vnpu_simhost *h, uint32_t offset, uint32_t value)
{
	in_reg_write = true;
	vnpu_sim_reg_write(h->sim, offset, value);
	in_reg_write = false;
}

/* ---- memory -------------------------------------------------------------- */

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

uint64_t vnpu_simhost_host_alloc(struct vnpu_simhost *h, uint64_t size,
				 uint64_t align)
{
	uint64_t off = align_up(h->host_next, align ? align : 8);

	if (size > h->cfg.host_mem_size || off > h->cfg.host_mem_size - size)
		return 0;
	h->host_next = off + size;
	return VNPU_SIMHOST_BUS_BASE + off;
}

uint64_t vnpu_simhost_hole(struct vnpu_simhost *h)
{
	return VNPU_SIMHOST_BUS_BASE;
}

uint64_t vnpu_simhost_vram_alloc(struct vnpu_simhost *h, uint64_t size,
				 uint64_t align)
{
	uint64_t off = align_up(h->vram_next, align ? align : 8);

	if (size > h->cfg.vram_size || off > h->cfg.vram_size - size)
		return UINT64_MAX;
	h->vram_next = off + size;
	return off;
}

void *vnpu_simhost_vram_ptr(struct vnpu_simhost *h, uint64_t offset)
{
	return offset < h->cfg.vram_size ? h->vram + offset : NULL;
}

void vnpu_simhost_advance(struct vnpu_simhost *h, uint64_t ns)
{
	atomic_fetch_add(&h->clock_ns, ns);
}

uint64_t vnpu_simhost_now(struct vnpu_simhost *h)
{
	return hal_clock(h);
}

/* ---- boot ---------------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = {0, (long)us * 1000};

	nanosleep(&ts, NULL);
}

uint32_t vnpu_simhost_boot_at(struct vnpu_simhost *h, uint64_t bus,
			      uint32_t fw_size)
{
	uint64_t deadline = now_ms() + VNPU_SIMHOST_TIMEOUT_MS;

	vnpu_simhost_wr(h, VNPU_REG_EVENT_STATUS, VNPU_EVENT_BOOT_DONE);
	vnpu_simhost_wr(h, VNPU_REG_FW_ADDR_LO, (uint32_t)bus);
	vnpu_simhost_wr(h, VNPU_REG_FW_ADDR_HI, (uint32_t)(bus >> 32));
	vnpu_simhost_wr(h, VNPU_REG_FW_SIZE, fw_size);
	vnpu_simhost_wr(h, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
	if (h->cfg.mode == VNPU_SIM_DETERMINISTIC)
		vnpu_sim_run(h->sim, 0);
	while (!(vnpu_simhost_rd(h, VNPU_REG_EVENT_STATUS) &
		 VNPU_EVENT_BOOT_DONE) &&
	       now_ms() < deadline)
		sleep_us(100);
	return vnpu_simhost_rd(h, VNPU_REG_BOOT_STATUS);
}

uint32_t vnpu_simhost_boot_image(struct vnpu_simhost *h, const void *image,
				 uint64_t size, uint32_t fw_size)
{
	uint64_t bus = vnpu_simhost_host_alloc(h, size ? size : 1, 4096);
	void *p = vnpu_simhost_host_ptr(h, bus, size);

	if (!bus || !p)
		return UINT32_MAX;
	memcpy(p, image, size);
	return vnpu_simhost_boot_at(h, bus, fw_size);
}

uint32_t vnpu_simhost_boot(struct vnpu_simhost *h)
{
	size_t size = vnpu_fw_image_size(), got;
	uint8_t *image = malloc(size);
	uint32_t status = UINT32_MAX;

	if (image &&
	    !vnpu_fw_image_build(image, size, 0x00010000, "simhost", &got))
		status = vnpu_simhost_boot_image(h, image, got, (uint32_t)got);
	free(image);
	return status;
}

/* ---- page tables --------------------------------------------------------- */

static uint64_t *table_ptr(void *opaque, uint64_t addr, bool vram)
{
	struct vnpu_simhost *h = opaque;

	if (vram)
		return addr <= h->cfg.vram_size - VNPU_PAGE_SIZE
			       ? (uint64_t *)(h->vram + addr)
			       : NULL;
	return vnpu_simhost_host_ptr(h, addr, VNPU_PAGE_SIZE);
}

static int alloc_table(void *opaque, bool vram, uint64_t *addr)
{
	struct vnpu_simhost *h = opaque;

	if (vram) {
		*addr = vnpu_simhost_vram_alloc(h, VNPU_PAGE_SIZE,
						VNPU_PAGE_SIZE);
		return *addr == UINT64_MAX ? -1 : 0;
	}
	*addr = vnpu_simhost_host_alloc(h, VNPU_PAGE_SIZE, VNPU_PAGE_SIZE);
	return *addr ? 0 : -1;
}

static const struct vnpu_pt_ops simhost_pt_ops = {
	.alloc_table = alloc_table,
	.table_ptr = table_ptr,
};

/* The shared page-table code's view of context ctx's tables. */
static struct vnpu_pt ctx_pt(struct vnpu_simhost *h, unsigned ctx)
{
	struct vnpu_pt pt = {
		.ops = &simhost_pt_ops,
		.opaque = h,
		.root = h->ctx[ctx].root,
		.tables_in_vram = h->ctx[ctx].tables_in_vram,
	};

	return pt;
}

int vnpu_simhost_ctx_init(struct vnpu_simhost *h, unsigned ctx,
			  bool tables_in_vram)
{
	struct vnpu_simhost_ctx *c = &h->ctx[ctx];
	uint64_t args_bus, size = VNPU_SIMHOST_ARGS_SLOTS * VNPU_PAGE_SIZE;

	if (ctx >= VNPU_MAX_CONTEXTS)
		return -1;
	struct vnpu_pt pt;

	memset(c, 0, sizeof(*c));
	c->tables_in_vram = tables_in_vram;
	if (vnpu_pt_init(&pt, &simhost_pt_ops, h, tables_in_vram))
		return -1;
	c->root = pt.root;
	c->init = true;
	c->va_next = VNPU_SIMHOST_VA_START;
	vnpu_pt_enable_ctx(&pt, h->sim, ctx);
	args_bus = vnpu_simhost_host_alloc(h, size, VNPU_PAGE_SIZE);
	if (!args_bus)
		return -1;
	c->args_mem = vnpu_simhost_host_ptr(h, args_bus, size);
	return vnpu_simhost_map(h, ctx, VNPU_SIMHOST_ARGS_VA, false, args_bus,
				size, VNPU_PTE_READ);
}

int vnpu_simhost_map(struct vnpu_simhost *h, unsigned ctx, uint64_t va,
		     bool vram, uint64_t addr, uint64_t size, uint64_t prot)
{
	struct vnpu_pt pt = ctx_pt(h, ctx);

	return vnpu_pt_map(&pt, va, vram, addr, size, prot);
}

void vnpu_simhost_unmap(struct vnpu_simhost *h, unsigned ctx, uint64_t va,
			uint64_t size)
{
	struct vnpu_pt pt = ctx_pt(h, ctx);

	vnpu_pt_unmap(&pt, va, size);
}

int vnpu_simhost_set_pte(struct vnpu_simhost *h, unsigned ctx, uint64_t va,
			 unsigned level, uint64_t value)
{
	struct vnpu_pt pt = ctx_pt(h, ctx);
	uint64_t *e;

	if (level >= VNPU_PT_LEVELS)
		return -1;
	e = vnpu_pt_slot(&pt, va, level, true);
	if (!e)
		return -1;
	*e = value;
	return 0;
}

void vnpu_simhost_tlb_invalidate(struct vnpu_simhost *h, unsigned ctx)
{
	vnpu_pt_tlb_invalidate(h->sim, ctx);
}

void *vnpu_simhost_alloc_map(struct vnpu_simhost *h, unsigned ctx, bool vram,
			     uint64_t size, uint64_t prot, uint64_t *va)
{
	struct vnpu_simhost_ctx *c = &h->ctx[ctx];
	uint64_t bytes = align_up(size ? size : 1, VNPU_PAGE_SIZE);
	uint64_t addr;
	void *p;

	if (vram) {
		addr = vnpu_simhost_vram_alloc(h, bytes, VNPU_PAGE_SIZE);
		p = addr == UINT64_MAX ? NULL : vnpu_simhost_vram_ptr(h, addr);
	} else {
		addr = vnpu_simhost_host_alloc(h, bytes, VNPU_PAGE_SIZE);
		p = addr ? vnpu_simhost_host_ptr(h, addr, bytes) : NULL;
	}
	if (!p || vnpu_simhost_map(h, ctx, c->va_next, vram, addr, bytes, prot))
		return NULL;
	*va = c->va_next;
	/* A guard page between allocations. */
	c->va_next += bytes + VNPU_PAGE_SIZE;
	return p;
}

/* ---- queues -------------------------------------------------------------- */

int vnpu_simhost_queue_init(struct vnpu_simhost *h, unsigned q, unsigned ctx,
			    unsigned ring_log2, bool irq_enable)
{
	struct vnpu_simhost_queue *qu = &h->q[q];
	uint32_t entries = 1u << ring_log2;

	if (q >= VNPU_MAX_QUEUES || ring_log2 > VNPU_RING_LOG2_MAX)
		return -1;
	memset(qu, 0, sizeof(*qu));
	qu->ctx = ctx;
	qu->entries = entries;
	qu->next_seq = 1;
	qu->ring_bus = vnpu_simhost_host_alloc(
		h, (uint64_t)entries * VNPU_CMD_SIZE, VNPU_RING_ALIGN);
	qu->cpl_bus = vnpu_simhost_host_alloc(
		h, (uint64_t)entries * VNPU_CPL_SIZE, VNPU_RING_ALIGN);
	if (!qu->ring_bus || !qu->cpl_bus)
		return -1;
	return vnpu_ring_program(h->sim, q, qu->ring_bus, qu->cpl_bus,
				 ring_log2, ctx, irq_enable)
		       ? 0
		       : -1;
}

uint64_t vnpu_simhost_push(struct vnpu_simhost *h, unsigned q,
			   struct vnpu_cmd cmd)
{
	struct vnpu_simhost_queue *qu = &h->q[q];
	void *slot = vnpu_simhost_host_ptr(
		h, qu->ring_bus + (uint64_t)qu->tail * VNPU_CMD_SIZE,
		VNPU_CMD_SIZE);
	struct vnpu_ring_view v = {slot, NULL, 1};
	uint64_t seqno = qu->next_seq++;

	if (slot)
		vnpu_ring_write(&v, 0, &cmd, seqno);
	qu->tail = (qu->tail + 1) & (qu->entries - 1);
	return seqno;
}

void vnpu_simhost_ring(struct vnpu_simhost *h, unsigned q)
{
	in_reg_write = true;
	vnpu_ring_doorbell(h->sim, q, h->q[q].tail);
	in_reg_write = false;
}

uint64_t vnpu_simhost_submit(struct vnpu_simhost *h, unsigned q,
			     struct vnpu_cmd cmd)
{
	uint64_t seqno = vnpu_simhost_push(h, q, cmd);

	vnpu_simhost_ring(h, q);
	return seqno;
}

static uint64_t done_seq(struct vnpu_simhost *h, unsigned q)
{
	return vnpu_ring_done_seq(h->sim, q);
}

int vnpu_simhost_wait(struct vnpu_simhost *h, unsigned q, uint64_t seqno,
		      unsigned timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;

	if (h->cfg.mode == VNPU_SIM_DETERMINISTIC) {
		vnpu_sim_run(h->sim, UINT32_MAX);
		return done_seq(h, q) >= seqno ? 0 : -1;
	}
	while (done_seq(h, q) < seqno) {
		if (now_ms() >= deadline)
			return -1;
		sleep_us(50);
	}
	return 0;
}

struct vnpu_cpl vnpu_simhost_cpl(struct vnpu_simhost *h, unsigned q,
				 uint64_t seqno)
{
	struct vnpu_simhost_queue *qu = &h->q[q];
	uint64_t slot = (seqno - 1) & (qu->entries - 1);
	struct vnpu_cpl cpl;
	void *p = vnpu_simhost_host_ptr(h, qu->cpl_bus + slot * VNPU_CPL_SIZE,
					VNPU_CPL_SIZE);
	struct vnpu_ring_view v = {NULL, p, 1};

	memset(&cpl, 0xff, sizeof(cpl));
	if (p)
		vnpu_ring_read_cpl(&v, 0, &cpl);
	return cpl;
}

uint32_t vnpu_simhost_exec(struct vnpu_simhost *h, unsigned q,
			   struct vnpu_cmd cmd, struct vnpu_cpl *cpl)
{
	uint64_t seqno = vnpu_simhost_submit(h, q, cmd);
	struct vnpu_cpl c;

	if (vnpu_simhost_wait(h, q, seqno, VNPU_SIMHOST_TIMEOUT_MS))
		return UINT32_MAX;
	c = vnpu_simhost_cpl(h, q, seqno);
	if (cpl)
		*cpl = c;
	return c.status;
}

/* ---- commands ------------------------------------------------------------ */

uint64_t vnpu_simhost_write_args(struct vnpu_simhost *h, unsigned ctx,
				 const struct vnpu_kargs_buffer *bufs,
				 uint32_t nbufs, const void *params,
				 uint32_t params_size, uint32_t *args_size)
{
	struct vnpu_simhost_ctx *c = &h->ctx[ctx];
	struct vnpu_kargs_header hdr = {nbufs, params_size, 0};
	uint64_t size =
		sizeof(hdr) + (uint64_t)nbufs * sizeof(*bufs) + params_size;
	unsigned slot = c->args_slot++ % VNPU_SIMHOST_ARGS_SLOTS;
	uint8_t *p = c->args_mem + (size_t)slot * VNPU_PAGE_SIZE;

	if (!c->args_mem || size > VNPU_PAGE_SIZE)
		return 0;
	memcpy(p, &hdr, sizeof(hdr));
	memcpy(p + sizeof(hdr), bufs, (size_t)nbufs * sizeof(*bufs));
	memcpy(p + sizeof(hdr) + (size_t)nbufs * sizeof(*bufs), params,
	       params_size);
	*args_size = (uint32_t)size;
	return VNPU_SIMHOST_ARGS_VA + (uint64_t)slot * VNPU_PAGE_SIZE;
}

uint32_t vnpu_simhost_launch(struct vnpu_simhost *h, unsigned q,
			     uint32_t kernel_id, uint32_t block_count,
			     const struct vnpu_kargs_buffer *bufs,
			     uint32_t nbufs, const void *params,
			     uint32_t params_size, struct vnpu_cpl *cpl)
{
	uint32_t args_size = 0;
	uint64_t va = vnpu_simhost_write_args(h, h->q[q].ctx, bufs, nbufs,
					      params, params_size, &args_size);

	if (!va)
		return UINT32_MAX;
	return vnpu_simhost_exec(
		h, q, vnpu_launch_cmd(kernel_id, block_count, va, args_size),
		cpl);
}

unsigned vnpu_simhost_irq_count(struct vnpu_simhost *h, unsigned vector)
{
	return vector < VNPU_MSIX_VECTORS(VNPU_MAX_QUEUES)
		       ? atomic_load(&h->irq_count[vector])
		       : 0;
}

unsigned vnpu_simhost_irqs_in_reg_write(struct vnpu_simhost *h)
{
	return atomic_load(&h->irqs_in_reg_write);
}

void vnpu_simhost_irq_clear_counts(struct vnpu_simhost *h)
{
	for (unsigned v = 0; v < VNPU_MSIX_VECTORS(VNPU_MAX_QUEUES); v++)
		atomic_store(&h->irq_count[v], 0);
}

unsigned vnpu_simhost_log_count(struct vnpu_simhost *h)
{
	return atomic_load(&h->log_count);
}
