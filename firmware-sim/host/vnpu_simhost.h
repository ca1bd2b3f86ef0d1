/* SPDX-License-Identifier: MIT */
/*
 * A minimal in-process host for the simulated device: what a driver does,
 * without a kernel. Host memory is an arena at bus addresses
 * [VNPU_SIMHOST_BUS_BASE, + host_mem_size) whose first
 * VNPU_SIMHOST_HOLE_SIZE bytes are deliberately unmapped (the bus refuses
 * them, as it refuses everything outside the arena). It builds page tables,
 * boots firmware, sets up queues, submits commands, waits for them and
 * records interrupts. Used by the tests, the fuzzer and demos.
 */
#ifndef VNPU_SIMHOST_H
#define VNPU_SIMHOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vnpu/hw_cmd_build.h"
#include "vnpu/hw_regs.h"
#include "vnpu/kernel_abi.h"
#include "vnpu_sim.h"

#define VNPU_SIMHOST_BUS_BASE  0x100000000ull /* above 4 GiB: HI regs matter */
#define VNPU_SIMHOST_HOLE_SIZE 0x10000ull
/* Per context, the host keeps argument blocks in a read-only area here. */
#define VNPU_SIMHOST_ARGS_VA	0x7000000000ull
#define VNPU_SIMHOST_ARGS_SLOTS 16
/* alloc_map() hands out VAs from here up. */
#define VNPU_SIMHOST_VA_START	0x100000000ull
#define VNPU_SIMHOST_TIMEOUT_MS 10000

struct vnpu_simhost_config {
	uint64_t host_mem_size; /* 0: 16 MiB */
	uint64_t vram_size;	/* 0: 16 MiB */
	unsigned num_queues;	/* 0: 4 */
	unsigned num_contexts;	/* 0: 4 */
	unsigned num_cores;	/* 0: 2 */
	enum vnpu_sim_mode mode;
	bool test_mode;
	bool real_clock; /* CLOCK_MONOTONIC instead of a manual clock */
	bool quiet;	 /* do not print the device's log lines */
	bool doorbell_runs_short; /* vnpu_sim_config's */
};

struct vnpu_simhost_ctx {
	bool init;
	bool tables_in_vram;
	uint64_t root; /* bus address or VRAM offset */
	uint64_t va_next;
	uint8_t *args_mem; /* host view of the args area */
	unsigned args_slot;
};

struct vnpu_simhost_queue {
	unsigned ctx;
	uint64_t ring_bus, cpl_bus;
	uint32_t entries;
	uint32_t tail;
	uint64_t next_seq;
};

struct vnpu_simhost {
	struct vnpu_sim *sim;
	struct vnpu_simhost_config cfg;
	uint8_t *host_mem;
	uint8_t *vram;
	uint64_t host_next; /* bump allocators */
	uint64_t vram_next;
	atomic_uint_fast64_t clock_ns;
	atomic_uint irq_count[VNPU_MSIX_VECTORS(VNPU_MAX_QUEUES)];
	atomic_uint irqs_in_reg_write; /* raised inside vnpu_simhost_wr */
	atomic_uint log_count;
	pthread_mutex_t log_lock;
	char last_log[256];
	struct vnpu_simhost_ctx ctx[VNPU_MAX_CONTEXTS];
	struct vnpu_simhost_queue q[VNPU_MAX_QUEUES];
};

int vnpu_simhost_create(const struct vnpu_simhost_config *cfg,
			struct vnpu_simhost **out);
void vnpu_simhost_destroy(struct vnpu_simhost *h);

uint32_t vnpu_simhost_rd(struct vnpu_simhost *h, uint32_t offset);
void vnpu_simhost_wr(struct vnpu_simhost *h, uint32_t offset, uint32_t value);

/* Host memory: returns a bus address (0 when the arena is full); the
 * arena starts zeroed. host_ptr() is NULL outside the backed range. */
uint64_t vnpu_simhost_host_alloc(struct vnpu_simhost *h, uint64_t size,
				 uint64_t align);
void *vnpu_simhost_host_ptr(struct vnpu_simhost *h, uint64_t bus, uint64_t len);
/* A page-aligned bus address the bus refuses. */
uint64_t vnpu_simhost_hole(struct vnpu_simhost *h);
/* VRAM: returns an offset (UINT64_MAX when full). */
uint64_t vnpu_simhost_vram_alloc(struct vnpu_simhost *h, uint64_t size,
				 uint64_t align);
void *vnpu_simhost_vram_ptr(struct vnpu_simhost *h, uint64_t offset);

/* The manual clock (ignored with real_clock). */
void vnpu_simhost_advance(struct vnpu_simhost *h, uint64_t ns);
uint64_t vnpu_simhost_now(struct vnpu_simhost *h);

/* Boots the library's firmware image; returns BOOT_STATUS. */
uint32_t vnpu_simhost_boot(struct vnpu_simhost *h);
/* Boots `size` bytes copied into host memory (size may exceed the image
 * for tests: FW_SIZE is `fw_size`). Returns BOOT_STATUS. */
uint32_t vnpu_simhost_boot_image(struct vnpu_simhost *h, const void *image,
				 uint64_t size, uint32_t fw_size);
/* Writes FW_ADDR/FW_SIZE and CTRL.BOOT and waits for EVENT_BOOT_DONE. */
uint32_t vnpu_simhost_boot_at(struct vnpu_simhost *h, uint64_t bus,
			      uint32_t fw_size);

/* Context setup: root table, PT_BASE, ENABLE and the args area. */
int vnpu_simhost_ctx_init(struct vnpu_simhost *h, unsigned ctx,
			  bool tables_in_vram);
/* Maps [va, va + size) (page-aligned) to consecutive pages at addr (VRAM
 * offset or bus address) with prot = VNPU_PTE_READ | VNPU_PTE_WRITE bits. */
int vnpu_simhost_map(struct vnpu_simhost *h, unsigned ctx, uint64_t va,
		     bool vram, uint64_t addr, uint64_t size, uint64_t prot);
void vnpu_simhost_unmap(struct vnpu_simhost *h, unsigned ctx, uint64_t va,
			uint64_t size);
/* Writes a raw entry at `level` (0..2) of va's walk, creating the tables
 * above it. */
int vnpu_simhost_set_pte(struct vnpu_simhost *h, unsigned ctx, uint64_t va,
			 unsigned level, uint64_t value);
void vnpu_simhost_tlb_invalidate(struct vnpu_simhost *h, unsigned ctx);
/* Allocates backing (VRAM or host), maps it at a fresh VA; returns the
 * host pointer to the backing (NULL when out of memory). */
void *vnpu_simhost_alloc_map(struct vnpu_simhost *h, unsigned ctx, bool vram,
			     uint64_t size, uint64_t prot, uint64_t *va);

/* Queue setup: ring and completion ring in host memory, registers, enable.
 * Returns 0, or -1 when the device refused the configuration. */
int vnpu_simhost_queue_init(struct vnpu_simhost *h, unsigned q, unsigned ctx,
			    unsigned ring_log2, bool irq_enable);
/* Writes cmd (seqno assigned, returned) at the tail, without doorbell. */
uint64_t vnpu_simhost_push(struct vnpu_simhost *h, unsigned q,
			   struct vnpu_cmd cmd);
void vnpu_simhost_ring(struct vnpu_simhost *h, unsigned q);
uint64_t vnpu_simhost_submit(struct vnpu_simhost *h, unsigned q,
			     struct vnpu_cmd cmd);
/* Deterministic: runs the device; threaded: polls DONE_SEQ. 0 when
 * DONE_SEQ >= seqno, else -1 (timeout, or nothing can run). */
int vnpu_simhost_wait(struct vnpu_simhost *h, unsigned q, uint64_t seqno,
		      unsigned timeout_ms);
/* The completion record of seqno (slot (seqno - 1) % entries). */
struct vnpu_cpl vnpu_simhost_cpl(struct vnpu_simhost *h, unsigned q,
				 uint64_t seqno);
/* Submit, wait, return the completion status (UINT32_MAX on timeout). */
uint32_t vnpu_simhost_exec(struct vnpu_simhost *h, unsigned q,
			   struct vnpu_cmd cmd, struct vnpu_cpl *cpl);

/* Writes an argument block into the queue's context args area (rotating
 * slots) and returns its VA and size. */
uint64_t vnpu_simhost_write_args(struct vnpu_simhost *h, unsigned ctx,
				 const struct vnpu_kargs_buffer *bufs,
				 uint32_t nbufs, const void *params,
				 uint32_t params_size, uint32_t *args_size);
/* Builds the argument block and executes a KERNEL_LAUNCH on queue q. */
uint32_t vnpu_simhost_launch(struct vnpu_simhost *h, unsigned q,
			     uint32_t kernel_id, uint32_t block_count,
			     const struct vnpu_kargs_buffer *bufs,
			     uint32_t nbufs, const void *params,
			     uint32_t params_size, struct vnpu_cpl *cpl);

unsigned vnpu_simhost_irq_count(struct vnpu_simhost *h, unsigned vector);
/* Interrupts raised by the thread of a register write, inside it. */
unsigned vnpu_simhost_irqs_in_reg_write(struct vnpu_simhost *h);
void vnpu_simhost_irq_clear_counts(struct vnpu_simhost *h);
unsigned vnpu_simhost_log_count(struct vnpu_simhost *h);

#endif /* VNPU_SIMHOST_H */
