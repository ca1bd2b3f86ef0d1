/* SPDX-License-Identifier: MIT */
/*
 * The vnpu device in a QEMU started by qtest_client: PCI enumeration and
 * BAR programming through config space (ports 0xcf8/0xcfc), a bump
 * allocator over guest RAM, device page tables in guest RAM, firmware boot,
 * queues and commands - what a driver does, done over the qtest protocol.
 */
#ifndef VNPU_QDEV_H
#define VNPU_QDEV_H

#include <stdbool.h>
#include <stdint.h>

#include "qtest_client.h"
#include "vnpu/hw_cmd_build.h"
#include "vnpu/hw_fw.h"
#include "vnpu/hw_mmu.h"
#include "vnpu/hw_regs.h"
#include "vnpu/hw_status.h"
#include "vnpu/kernel_abi.h"

/* Where the tests put things in the guest's physical address space. */
#define VQ_DEVFN		(4 << 3)	/* 00:04.0 */
#define VQ_BAR0_ADDR		0xfe000000ull
#define VQ_BAR2_ADDR		0xfe010000ull
#define VQ_BAR4_ADDR		0x100000000ull	/* above 4 GiB: 64-bit BAR */
#define VQ_MSI_ADDR		0x00800000ull	/* MSI-X messages land here */
#define VQ_RAM_START		0x01000000ull	/* bump allocator */
#define VQ_MODES		2

struct vq_queue {
	uint64_t ring, cpl;	/* guest physical */
	uint32_t entries;
	uint32_t tail;
	uint64_t next_seq;
	unsigned ctx;
};

struct vq {
	struct qt *qt;
	bool deterministic;
	uint64_t vram_size;
	uint64_t ram_size;
	uint64_t ram_next;
	uint64_t vram_next;
	uint64_t root[VNPU_MAX_CONTEXTS];	/* guest physical root tables */
	uint64_t va_next[VNPU_MAX_CONTEXTS];
	struct vq_queue q[VNPU_MAX_QUEUES];
	unsigned msix_cap;
};

/* Mode i (0 threads, 1 deterministic) of a parametrised test. */
const char *vq_mode_name(int mode);

/* Starts QEMU with `-device vnpu,addr=04.0,exec-mode=...,<dev_opts>` and
 * `extra` QEMU options, enumerates the device, programs and enables its
 * BARs and bus mastering. vram_size must match dev_opts (0: 16 MiB, which
 * vq_start adds itself). */
struct vq *vq_start(int mode, const char *dev_opts, const char *extra);
void vq_stop(struct vq *v);

/* Config space of 00:04.0. */
uint32_t vq_cfg_read(struct vq *v, unsigned reg, unsigned size);
void vq_cfg_write(struct vq *v, unsigned reg, uint32_t val, unsigned size);
/* Capability offset of `id`, 0 when absent. */
unsigned vq_find_cap(struct vq *v, uint8_t id);

uint32_t vq_rd(struct vq *v, uint32_t reg);
void vq_wr(struct vq *v, uint32_t reg, uint32_t val);

/* Guest RAM and VRAM bump allocators (page aligned, zeroed). */
uint64_t vq_ram_alloc(struct vq *v, uint64_t size);
uint64_t vq_vram_alloc(struct vq *v, uint64_t size);

/* Firmware: the image named by $VNPU_FW (read whole, NULL when missing). */
void *vq_fw_image(uint32_t *size);
/* Copies `size` bytes of image to guest RAM, writes FW_ADDR/FW_SIZE
 * (fw_size), CTRL.BOOT, and waits for BOOT_STATUS != OFF. */
uint32_t vq_boot_image(struct vq *v, const void *image, uint32_t size,
		       uint32_t fw_size);
uint32_t vq_boot(struct vq *v);

/* MMU: root table in guest RAM, context enabled. */
void vq_ctx_init(struct vq *v, unsigned ctx);
/* Maps [va, va + size) to consecutive pages at addr (VRAM offset when
 * vram, else guest physical) with prot (VNPU_PTE_READ/WRITE). */
void vq_map(struct vq *v, unsigned ctx, uint64_t va, bool vram,
	    uint64_t addr, uint64_t size, uint64_t prot);
/* Writes a raw entry at `level` of va's walk (tables above created). */
void vq_set_pte(struct vq *v, unsigned ctx, uint64_t va, unsigned level,
		uint64_t pte);
/* Allocates and maps a buffer at a fresh VA; returns the VA and the
 * backing address (VRAM offset or guest physical) in *addr. */
uint64_t vq_alloc_map(struct vq *v, unsigned ctx, bool vram, uint64_t size,
		      uint64_t *addr);

/* Queue q on context ctx with 2^log2 entries; returns Q_STATUS. */
uint32_t vq_queue_init(struct vq *v, unsigned q, unsigned ctx, unsigned log2,
		       bool irq);
/* Writes cmd at the tail (seqno assigned and returned), no doorbell. */
uint64_t vq_push(struct vq *v, unsigned q, struct vnpu_cmd cmd);
void vq_ring(struct vq *v, unsigned q);
uint64_t vq_submit(struct vq *v, unsigned q, struct vnpu_cmd cmd);
/* Polls DONE_SEQ until >= seq (bounded); false on timeout. */
bool vq_wait(struct vq *v, unsigned q, uint64_t seq, unsigned timeout_ms);
struct vnpu_cpl vq_cpl(struct vq *v, unsigned q, uint64_t seq);
/* Submit + wait + completion status (UINT32_MAX on timeout). */
uint32_t vq_exec(struct vq *v, unsigned q, struct vnpu_cmd cmd,
		 struct vnpu_cpl *cpl);
/* Kernel launch with the argument block placed in guest RAM, mapped
 * read-only at a fresh VA of the queue's context. */
uint32_t vq_launch(struct vq *v, unsigned q, uint32_t kernel_id,
		   uint32_t blocks, const struct vnpu_kargs_buffer *bufs,
		   uint32_t nbufs, const void *params, uint32_t params_size,
		   struct vnpu_cpl *cpl);

/* MSI-X: enable with every vector aimed at VQ_MSI_ADDR + 4 * vector, data
 * 0x100 + vector, unmasked. */
void vq_msix_enable(struct vq *v, unsigned nvec);
void vq_msix_mask(struct vq *v, unsigned vector, bool masked);
bool vq_msix_pending(struct vq *v, unsigned vector);
/* The word at the vector's message address (0 = nothing delivered). */
uint32_t vq_msi_word(struct vq *v, unsigned vector);
void vq_msi_clear(struct vq *v, unsigned nvec);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t vq_now_ms(void);

#endif /* VNPU_QDEV_H */
