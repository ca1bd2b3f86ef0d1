/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the simulated device, shared by the firmware-sim files.
 *
 * Locking: `lock` protects every register and all queue/context/firmware
 * state. The command processor (the CP thread, or the caller of
 * vnpu_sim_run) snapshots what it needs under the lock, executes a command
 * WITHOUT the lock (HAL calls never happen with the lock held), and retires
 * it under the lock after checking that no reset (epoch) and no queue
 * disable (queue generation) happened meanwhile. Reset sets `cancel`, bumps
 * the epoch and waits until the command processor is no longer busy.
 */
#ifndef VNPU_SIM_INTERNAL_H
#define VNPU_SIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vnpu/hw_cmd.h"
#include "vnpu/hw_fw.h"
#include "vnpu/hw_mmu.h"
#include "vnpu/hw_regs.h"
#include "vnpu/hw_status.h"
#include "vnpu/kernel_abi.h"
#include "kernel.h"
#include "vnpu_sim.h"

#define SIM_HEARTBEAT_PERIOD_US 1000u
/* Bounce buffers of one launch, all staged buffers together. */
#define SIM_STAGING_LIMIT (256ull << 20)
/* Software TLB entries per context (direct mapped). */
#define SIM_TLB_ENTRIES 64
/* Threaded mode: how often a queue in FENCE_WAIT re-reads its fence. */
#define SIM_FENCE_POLL_NS 1000000ull
/* Threaded mode: how long the command processor keeps polling for a
 * doorbell after its queues ran dry, before it sleeps (a burst of
 * submissions then costs no thread wake-up per doorbell). */
#define SIM_CP_SPIN_NS 50000ull
/* ERR_QUEUE value when an error concerns no queue. */
#define SIM_ERR_NO_QUEUE 0xffffffffu

_Static_assert(VNPU_MAX_QUEUES <= 32, "active_queues is a 32-bit mask");

struct sim_tlb_entry {
	uint64_t vpn_plus_one; /* 0 = empty */
	uint64_t pte;	       /* the leaf entry */
};

struct sim_ctx {
	uint64_t pt_base; /* PT_BASE_HI:LO as written */
	bool enabled;
	uint32_t fault_status; /* 0 when no fault is pending */
	uint64_t fault_va;
	uint32_t fault_count;
	/* Bumped (under the lock) by every invalidation, every change of
	 * `enabled` and reset; read by the command processor without it. */
	_Atomic uint64_t tlb_gen;
	/* The TLB belongs to the command processor (only code executing a
	 * command, cp_busy, touches it; reset clears it while the CP is
	 * idle): a hit takes no lock. Its entries are valid while tlb_gen
	 * equals tlb_seen_gen; tlb_enabled is `enabled` as of that gen. */
	uint64_t tlb_seen_gen;
	bool tlb_enabled;
	struct sim_tlb_entry tlb[SIM_TLB_ENTRIES];
};

struct sim_queue {
	uint64_t ring_base;
	uint64_t cpl_base;
	uint32_t ring_log2;
	uint32_t ctx;
	bool enabled;
	bool irq_enable;
	bool config_error;
	uint32_t last_error; /* Q_STATUS[31:16] */
	uint32_t head;
	uint32_t tail;
	uint64_t done_seq;
	/* Bumped on enable and disable (under the lock); atomic so that the
	 * command processor checks it without the lock. */
	_Atomic uint64_t gen;
	bool waiting; /* blocked in FENCE_WAIT on wait_cmd */
	struct vnpu_cmd wait_cmd;
};

/* The command being executed, with what the CP snapshotted to run it. */
struct sim_exec {
	unsigned queue;
	unsigned ctx;
	uint64_t epoch;
	uint64_t qgen;
	struct vnpu_cmd cmd; /* local copy, fetched once */
	uint32_t status;
	uint64_t info;
	bool wait; /* FENCE_WAIT not satisfied yet */
	bool stop; /* HANG/FATAL: no completion */
};

/* Kernel blocks of one launch handed to the worker threads. */
struct sim_job {
	const struct vnpu_kernel_def *kernel;
	const void *params;
	const struct vnpu_kbuf *bufs;
	uint32_t nblocks;
	atomic_uint next_block;
};

struct sim_workers {
	unsigned count;
	pthread_t threads[VNPU_MAX_CORES];
	pthread_mutex_t lock;
	pthread_cond_t start_cv;
	pthread_cond_t done_cv;
	uint64_t job_gen;
	unsigned running; /* workers still on the current job */
	bool stop;
	struct sim_job job;
};

struct vnpu_sim {
	struct vnpu_sim_config cfg;
	struct vnpu_sim_hal hal;
	uint8_t *vram;

	/* The lock, taken by every register access, and the wake counter,
	 * polled by the command processor, each on a cache line of its own:
	 * a doorbell must not evict what the command processor reads on
	 * every command (cfg, hal). The structure is allocated aligned. */
	_Alignas(64) pthread_mutex_t lock;
	pthread_cond_t idle_cv; /* CP became not busy */
	pthread_cond_t wake_cv; /* work for the CP thread */
	_Alignas(64) atomic_uint wakes; /* bumped with every wake_cv signal */

	/* global registers and firmware state */
	_Alignas(64) uint32_t boot_status;
	uint32_t fw_version;
	uint32_t fw_addr_lo, fw_addr_hi, fw_size;
	uint32_t fatal_code;
	uint32_t irq_status, irq_mask, event_status;
	uint32_t scratch, reset_count;
	uint32_t err_code, err_queue, err_value;
	uint32_t timestamp_hi_latch;
	bool ready, fatal, hung, lost_irq;
	bool boot_pending;
	uint64_t boot_time_ns;
	uint32_t frozen_heartbeat;
	bool kernel_loaded[VNPU_KERNEL_ID_MAX + 1];

	struct sim_ctx ctx[VNPU_MAX_CONTEXTS];
	struct sim_queue queue[VNPU_MAX_QUEUES];
	unsigned rr_next; /* round-robin start queue */
	/* Bit q: queue q is enabled and waiting or has HEAD != TAIL. */
	uint32_t active_queues;

	/* command processor */
	_Atomic uint64_t epoch; /* bumped by every reset (under the lock) */
	atomic_bool cancel; /* a reset wants the CP to stop */
	bool cp_busy;
	pthread_mutex_t run_lock; /* serialises vnpu_sim_run callers */
	bool cp_started;
	bool cp_stop;
	pthread_t cp_thread;
	struct sim_workers workers;

	/* interrupts to deliver once the lock is dropped */
	uint32_t pending_vectors;
};

/* sim.c */
void sim_log(struct vnpu_sim *sim, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t sim_clock(struct vnpu_sim *sim);
void sim_lock(struct vnpu_sim *sim);
/* Unlocks and delivers the interrupts collected meanwhile. */
void sim_unlock(struct vnpu_sim *sim);
void sim_hw_reset_locked(struct vnpu_sim *sim);

/* regs.c / queue.c (lock held) */
void sim_raise_irq_locked(struct vnpu_sim *sim, uint32_t bit, unsigned vector);
void sim_raise_event_locked(struct vnpu_sim *sim, uint32_t events);
void sim_set_error_locked(struct vnpu_sim *sim, uint32_t code, uint32_t queue,
			  uint32_t value, uint32_t event);
void sim_fatal_locked(struct vnpu_sim *sim, uint32_t code);
void sim_hang_locked(struct vnpu_sim *sim);
uint32_t sim_heartbeat_locked(struct vnpu_sim *sim);
bool sim_queue_fetchable_locked(const struct vnpu_sim *sim, unsigned q);
bool sim_any_waiting_locked(const struct vnpu_sim *sim);
void sim_queue_write_locked(struct vnpu_sim *sim, unsigned q, uint32_t reg,
			    uint32_t value);
uint32_t sim_queue_read_locked(struct vnpu_sim *sim, unsigned q, uint32_t reg);
void sim_doorbell_locked(struct vnpu_sim *sim, unsigned q, uint32_t value);
void sim_wake_cp_locked(struct vnpu_sim *sim);

/* Booted and neither hung nor fatal (lock held). */
static inline bool sim_processing_allowed_locked(const struct vnpu_sim *sim)
{
	return sim->ready && !sim->fatal && !sim->hung;
}

/* queue.c: one scheduling pass; true when a command retired. The _locked
 * form is entered and left with the lock held (it drops it while a
 * command executes); interrupts of its last retirement are delivered at
 * the caller's next sim_unlock. */
bool sim_cp_step(struct vnpu_sim *sim);
bool sim_cp_step_locked(struct vnpu_sim *sim);
/* Delivers the command processor's collected interrupts (lock held on
 * entry and exit; dropped meanwhile, with cp_busy set). */
void sim_cp_deliver_locked(struct vnpu_sim *sim);
/* Pending boot, if any (CP context). */
void sim_cp_boot(struct vnpu_sim *sim);

/* fw.c (CP context, lock not held) */
uint32_t sim_fw_verify(struct vnpu_sim *sim, const uint8_t *image,
		       uint32_t size, uint32_t *fw_version,
		       bool loaded[VNPU_KERNEL_ID_MAX + 1]);

/* mmu.c */
enum sim_phys_kind { SIM_PHYS_HOST, SIM_PHYS_VRAM };
struct sim_phys {
	enum sim_phys_kind kind;
	uint64_t addr; /* bus address or VRAM offset of the byte */
};
struct sim_fault {
	uint64_t va;
	uint32_t reason; /* enum vnpu_fault_reason */
	bool write;
};
/* Translates the page holding va; false with *fault filled on failure. */
bool sim_mmu_translate(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		       bool write, struct sim_phys *phys,
		       struct sim_fault *fault);
/* Checks [va, va + size) against the VA limit (size >= 1, no u64 wrap). */
bool sim_mmu_range_ok(uint64_t va, uint64_t size, struct sim_fault *fault);
/* Records a fault on the executing command's context; status MMU_FAULT. */
void sim_mmu_fault(struct vnpu_sim *sim, struct sim_exec *ex,
		   const struct sim_fault *fault);
/* phys translates va: how many bytes from va (at most len) go on at the
 * consecutive addresses of phys's kind, with the access allowed. Reads each
 * leaf table once for the whole stretch it covers; faults nothing. */
uint64_t sim_mmu_contiguous(struct vnpu_sim *sim, struct sim_exec *ex,
			    uint64_t va, uint64_t len, bool write,
			    const struct sim_phys *phys);
/* Translates, or records the fault (sim_mmu_fault) and returns false. */
bool sim_mmu_translate_or_fault(struct vnpu_sim *sim, struct sim_exec *ex,
				uint64_t va, bool write, struct sim_phys *phys);
void sim_tlb_invalidate_locked(struct sim_ctx *ctx);

/* dma.c: the longest physically contiguous run one copy step moves: long
 * enough for memcpy's streaming (non-temporal) stores, which glibc uses
 * above a threshold of about the shared cache size, and short enough that
 * a reset's cancel is seen within some milliseconds. */
#define SIM_DMA_RUN_MAX (64ull << 20)

/* dma.c: accesses through the executing context's MMU. They set ex->status
 * and ex->info and return false on MMU_FAULT or DMA_ERROR. */
bool sim_phys_read(struct vnpu_sim *sim, const struct sim_phys *p, void *buf,
		   uint64_t len);
bool sim_phys_write(struct vnpu_sim *sim, const struct sim_phys *p,
		    const void *buf, uint64_t len);
bool sim_va_read(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		 void *buf, uint64_t len);
bool sim_va_write(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t va,
		  const void *buf, uint64_t len);
void sim_dma_copy(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t src,
		  uint64_t dst, uint64_t size);
void sim_dma_fill(struct vnpu_sim *sim, struct sim_exec *ex, uint64_t dst,
		  uint64_t size, uint32_t pattern, uint32_t width);

/* cmd.c */
void sim_cmd_execute(struct vnpu_sim *sim, struct sim_exec *ex);

/* launch.c */
void sim_launch(struct vnpu_sim *sim, struct sim_exec *ex);

/* workers.c */
int sim_workers_start(struct vnpu_sim *sim);
void sim_workers_stop(struct vnpu_sim *sim);
/* Runs blocks 0..nblocks-1; stops early when sim->cancel is set. */
void sim_run_blocks(struct vnpu_sim *sim, const struct vnpu_kernel_def *k,
		    const void *params, const struct vnpu_kbuf *bufs,
		    uint32_t nblocks);
int sim_cp_thread_start(struct vnpu_sim *sim);
void sim_cp_thread_stop(struct vnpu_sim *sim);

#endif /* VNPU_SIM_INTERNAL_H */
