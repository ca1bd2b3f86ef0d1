/* SPDX-License-Identifier: MIT */
/*
 * vnpu device: PCI identity, BARs, BAR0 register map and interrupt model.
 * docs/hw-spec.md is the datasheet; this header is its machine-readable form.
 * All registers are 32 bits wide, little endian, accessed with aligned 32-bit
 * loads and stores. 64-bit values are split into _LO/_HI pairs.
 */
#ifndef VNPU_HW_REGS_H
#define VNPU_HW_REGS_H

#include "hw_types.h"

/* ---- PCI identity ------------------------------------------------------ */
#define VNPU_PCI_VENDOR_ID		0x1af4
#define VNPU_PCI_DEVICE_ID		0x10f7
#define VNPU_PCI_REVISION		0x01
#define VNPU_PCI_CLASS			0x1200	/* processing accelerator */

#define VNPU_BAR_REGS			0	/* 64 KiB MMIO registers */
#define VNPU_BAR_MSIX			2	/* MSI-X table and PBA */
#define VNPU_BAR_VRAM			4	/* 64-bit prefetchable VRAM */
#define VNPU_REGS_SIZE			0x10000u

/* Hardware ABI version reported in HW_VERSION and required of firmware.
 * Minor 1 added Q_CTRL.ABORT and Q_BUSY_US, minor 2 Q_CTRL.IRQ_COALESCE,
 * minor 3 made Q_BUSY_US count the work a queue's blocks did (their CPU
 * time over the cores) rather than the wall time they were on a core. */
#define VNPU_HW_ABI_MAJOR		1
#define VNPU_HW_ABI_MINOR		3

/* ---- limits -------------------------------------------------------------- */
#define VNPU_MAX_QUEUES			16
#define VNPU_MAX_CONTEXTS		64
#define VNPU_MAX_CORES			64
#define VNPU_RING_LOG2_MIN		2	/* 4 entries */
#define VNPU_RING_LOG2_MAX		12	/* 4096 entries */
#define VNPU_VRAM_SIZE_MIN		(1ull << 20)
#define VNPU_VRAM_SIZE_MAX		(1ull << 36)

/* MSI-X: vector 0 signals device events, vector 1 + q signals queue q. */
#define VNPU_MSIX_VECTOR_EVENTS		0
#define VNPU_MSIX_VECTOR_QUEUE(q)	(1u + (q))
#define VNPU_MSIX_VECTORS(nqueues)	(1u + (nqueues))

/* ---- global registers (page 0) ----------------------------------------- */
#define VNPU_REG_ID			0x000	/* RO "VNPU" */
#define   VNPU_ID_VALUE			0x55504e56u
#define VNPU_REG_HW_VERSION		0x004	/* RO [31:16] major [15:0] minor */
#define VNPU_REG_CAPS			0x008	/* RO, see VNPU_CAPS_* */
#define   VNPU_CAPS_QUEUES(v)		((v) & 0xffu)
#define   VNPU_CAPS_CORES(v)		(((v) >> 8) & 0xffu)
#define   VNPU_CAPS_RING_LOG2_MAX(v)	(((v) >> 16) & 0xffu)
#define   VNPU_CAPS_TEST_MODE		(1u << 24)
#define VNPU_REG_NUM_CONTEXTS		0x00c	/* RO */
#define VNPU_REG_VRAM_SIZE_LO		0x010	/* RO */
#define VNPU_REG_VRAM_SIZE_HI		0x014	/* RO */
#define VNPU_REG_HEARTBEAT_PERIOD_US	0x018	/* RO */
#define VNPU_REG_CTRL			0x020	/* WO, reads 0 */
#define   VNPU_CTRL_RESET		(1u << 0)
#define   VNPU_CTRL_BOOT		(1u << 1)
#define VNPU_REG_STATUS			0x024	/* RO */
#define   VNPU_STATUS_READY		(1u << 0)
#define   VNPU_STATUS_FATAL		(1u << 1)
#define   VNPU_STATUS_BUSY		(1u << 2)
#define VNPU_REG_BOOT_STATUS		0x028	/* RO, enum vnpu_boot_status */
#define VNPU_REG_FW_VERSION		0x02c	/* RO, 0 until READY */
#define VNPU_REG_FW_ADDR_LO		0x030	/* RW bus address of the image */
#define VNPU_REG_FW_ADDR_HI		0x034	/* RW */
#define VNPU_REG_FW_SIZE		0x038	/* RW bytes */
#define VNPU_REG_FATAL_CODE		0x03c	/* RO, enum vnpu_fatal_code */
#define VNPU_REG_IRQ_STATUS		0x040	/* RW1C */
#define VNPU_REG_IRQ_MASK		0x044	/* RW, 1 = masked */
#define   VNPU_IRQ_EVENTS		(1u << 0)
#define   VNPU_IRQ_QUEUE(q)		(1u << (1 + (q)))
#define VNPU_REG_EVENT_STATUS		0x048	/* RW1C, causes of VNPU_IRQ_EVENTS */
#define   VNPU_EVENT_BOOT_DONE		(1u << 0)
#define   VNPU_EVENT_MMU_FAULT		(1u << 1)
#define   VNPU_EVENT_FATAL		(1u << 2)
#define   VNPU_EVENT_DOORBELL_ERROR	(1u << 3)
#define   VNPU_EVENT_QUEUE_ERROR	(1u << 4)
#define VNPU_REG_HEARTBEAT		0x050	/* RO */
#define VNPU_REG_TIMESTAMP_LO		0x058	/* RO ns; reading LO latches HI */
#define VNPU_REG_TIMESTAMP_HI		0x05c	/* RO */
#define VNPU_REG_SCRATCH		0x060	/* RW */
#define VNPU_REG_RESET_COUNT		0x064	/* RO */
#define VNPU_REG_FAULTED_CTX_LO		0x068	/* RO bitmap, contexts 0..31 */
#define VNPU_REG_FAULTED_CTX_HI		0x06c	/* RO bitmap, contexts 32..63 */
#define VNPU_REG_ERR_CODE		0x070	/* RO last event error detail */
#define VNPU_REG_ERR_QUEUE		0x074	/* RO queue of ERR_CODE */
#define VNPU_REG_ERR_VALUE		0x078	/* RO offending value */
#define VNPU_REG_TEST_INJECT		0x080	/* WO, test mode only */
#define   VNPU_INJECT_HANG		1u	/* firmware stops: no heartbeat */
#define   VNPU_INJECT_FATAL		2u	/* firmware reports a fatal error */
#define   VNPU_INJECT_LOST_IRQ		3u	/* next interrupt is not sent */

/* ---- per-context registers (page 1) ------------------------------------ */
#define VNPU_CTX_BASE			0x1000
#define VNPU_CTX_STRIDE			0x20
#define VNPU_CTX_REG(c, r)		(VNPU_CTX_BASE + (c) * VNPU_CTX_STRIDE + (r))
#define VNPU_CTX_PT_BASE_LO		0x00	/* RW root table, see VNPU_PT_BASE_* */
#define VNPU_CTX_PT_BASE_HI		0x04	/* RW */
#define VNPU_CTX_CTRL			0x08	/* RW */
#define   VNPU_CTX_CTRL_ENABLE		(1u << 0)
#define   VNPU_CTX_CTRL_TLB_INVALIDATE	(1u << 1)	/* WO, self-clearing */
#define VNPU_CTX_FAULT_STATUS		0x0c	/* RW1C bit 0 */
#define   VNPU_FAULT_PENDING		(1u << 0)
#define   VNPU_FAULT_WRITE		(1u << 1)
#define   VNPU_FAULT_REASON(v)		(((v) >> 8) & 0xffu)
#define   VNPU_FAULT_QUEUE(v)		(((v) >> 16) & 0xffu)
#define VNPU_CTX_FAULT_VA_LO		0x10	/* RO */
#define VNPU_CTX_FAULT_VA_HI		0x14	/* RO */
#define VNPU_CTX_FAULT_COUNT		0x18	/* RO faults since reset */

/* ---- per-queue registers (page 2) -------------------------------------- */
#define VNPU_QUEUE_BASE			0x2000
#define VNPU_QUEUE_STRIDE		0x40
#define VNPU_QUEUE_REG(q, r)		(VNPU_QUEUE_BASE + (q) * VNPU_QUEUE_STRIDE + (r))
#define VNPU_Q_RING_BASE_LO		0x00	/* RW bus address, 4 KiB aligned */
#define VNPU_Q_RING_BASE_HI		0x04	/* RW */
#define VNPU_Q_RING_LOG2		0x08	/* RW entries = 1 << n */
#define VNPU_Q_CTX			0x0c	/* RW context index */
#define VNPU_Q_CPL_BASE_LO		0x10	/* RW bus address, 4 KiB aligned */
#define VNPU_Q_CPL_BASE_HI		0x14	/* RW */
#define VNPU_Q_CTRL			0x18	/* RW */
#define   VNPU_Q_CTRL_ENABLE		(1u << 0)
#define   VNPU_Q_CTRL_IRQ_ENABLE	(1u << 1)
/* WO, reads 0: abort the command in flight (it completes with
 * VNPU_STATUS_ABORTED) and disable the queue; the other bits of that write
 * are ignored. Q_STATUS.ENABLED reads 1 until the command has stopped. */
#define   VNPU_Q_CTRL_ABORT		(1u << 2)
/* RW: while the queue's IRQ_STATUS bit is set, its retirements signal no
 * vector (the bit stays set): a driver clears the bit, then reads the
 * completion records. The first retirement after a clear always signals. */
#define   VNPU_Q_CTRL_IRQ_COALESCE	(1u << 3)
#define VNPU_Q_STATUS			0x1c	/* RO */
#define   VNPU_Q_STATUS_ENABLED		(1u << 0)
#define   VNPU_Q_STATUS_WAITING		(1u << 1)	/* on FENCE_WAIT */
#define   VNPU_Q_STATUS_CONFIG_ERROR	(1u << 2)
#define   VNPU_Q_STATUS_ABORTED		(1u << 3)	/* until re-enabled */
#define   VNPU_Q_STATUS_ERROR(v)	((v) >> 16)	/* enum vnpu_status */
#define VNPU_Q_HEAD			0x20	/* RO next entry to fetch */
#define VNPU_Q_TAIL			0x24	/* RO last doorbell value */
#define VNPU_Q_DONE_SEQ_LO		0x28	/* RO seqno of last retired cmd */
#define VNPU_Q_DONE_SEQ_HI		0x2c	/* RO */
/* RO: device time, in us, the queue's commands have used since the device
 * reset: the CPU time its blocks ran over the number of cores, and its
 * command-processor steps; not waiting (for a core, a FENCE_WAIT), other
 * queues or host load (hw-spec D.11); wraps at 2^32. */
#define VNPU_Q_BUSY_US			0x30

/* ---- doorbells (page 3, alone so it can be mapped by itself) ----------- */
#define VNPU_DOORBELL_BASE		0x3000
#define VNPU_DOORBELL(q)		(VNPU_DOORBELL_BASE + (q) * 4)

VNPU_STATIC_ASSERT(VNPU_CTX_BASE + VNPU_MAX_CONTEXTS * VNPU_CTX_STRIDE <= VNPU_QUEUE_BASE,
	       "context registers overlap queue registers");
VNPU_STATIC_ASSERT(VNPU_QUEUE_BASE + VNPU_MAX_QUEUES * VNPU_QUEUE_STRIDE <= VNPU_DOORBELL_BASE,
	       "queue registers overlap doorbells");
VNPU_STATIC_ASSERT(VNPU_DOORBELL_BASE + VNPU_MAX_QUEUES * 4 <= 0x4000,
	       "doorbells exceed their page");
VNPU_STATIC_ASSERT(VNPU_REGS_SIZE >= 0x4000, "BAR0 too small");
VNPU_STATIC_ASSERT(1 + VNPU_MAX_QUEUES <= 32, "IRQ_STATUS has a bit per queue");

#endif /* VNPU_HW_REGS_H */
