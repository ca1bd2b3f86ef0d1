/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the simulated device, shared by the firmware-sim files.
 *
 * Execution: every queue has its own command in flight (struct sim_exec),
 * executed in steps, each a bounded piece of work (a fetch, a DMA chunk, a
 * batch of page translations, one kernel block in deterministic mode). The
 * command processor (the CP thread, or the caller of vnpu_sim_run) steps
 * the queues round robin, so that no queue waits for another queue's
 * command to finish. In threaded mode a launch's blocks go to the cores
 * (at most num_cores blocks at once), shared round robin between the
 * launches in flight, while the command processor keeps serving the other
 * queues; of the num_cores + 1 device threads, one at a time is the
 * command processor, and it runs a block itself when it has nothing else
 * to do (workers.c).
 *
 * Locking: `lock` protects every register and all queue/context/firmware
 * state. The command processor snapshots what a step needs under the lock,
 * runs the step WITHOUT the lock (HAL calls never happen with the lock
 * held; cp_busy is set meanwhile), and commits under the lock after
 * checking that no reset (epoch) and no queue disable (queue generation)
 * happened meanwhile. A queue's struct sim_exec belongs to the command
 * processor (and to reset, which runs while the command processor is not
 * busy); register writes only raise its atomic stop flag. The worker pool
 * has its own lock, taken after `lock` when both are needed, never the
 * other way round. Reset sets `cancel`, bumps the epoch, stops every
 * launch and waits until the command processor and the workers are idle.
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
/* Bounce buffers of one launch, all staged buffers together; also the
 * staging all launches in flight may hold at once. */
#define SIM_STAGING_LIMIT (256ull << 20)
/* Software TLB entries per context (direct mapped). */
#define SIM_TLB_ENTRIES 64
/* Threaded mode: how often a queue in FENCE_WAIT re-reads its fence when
 * nothing else runs. */
#define SIM_FENCE_POLL_NS 1000000ull
/* Threaded mode: how long the command processor keeps polling for a
 * doorbell after its queues ran dry, before it sleeps (a burst of
 * submissions then costs no thread wake-up per doorbell). */
#define SIM_CP_SPIN_NS 50000ull
/* doorbell_runs_short: at most this many commands per doorbell. */
#define SIM_DOORBELL_SHORT_MAX 8u
/* A spin-wait's first part, without yielding the CPU: on a host with few
 * CPUs the thread it waits for may need this one. */
#define SIM_SPIN_PAUSE_NS 1000ull
/* Bytes one step of a copy, fill, gather or scatter moves at most: a
 * fraction of a millisecond of memcpy, so that other queues, an abort and
 * a reset are served within about a millisecond. */
#define SIM_DMA_STEP_BYTES (4ull << 20)
/* Pages of launch buffers translated or staged per step (the same
 * SIM_DMA_STEP_BYTES for staging). */
#define SIM_STEP_PAGES (SIM_DMA_STEP_BYTES / VNPU_PAGE_SIZE)
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
	 * step, cp_busy, touches it; reset clears it while the CP is idle):
	 * a hit takes no lock. Its entries are valid while tlb_gen equals
	 * tlb_seen_gen; tlb_enabled is `enabled` as of that gen. */
	uint64_t tlb_seen_gen;
	bool tlb_enabled;
	struct sim_tlb_entry tlb[SIM_TLB_ENTRIES];
};

enum sim_phys_kind { SIM_PHYS_HOST, SIM_PHYS_VRAM };
struct sim_phys {
	enum sim_phys_kind kind;
	uint64_t addr; /* bus address or VRAM offset of the byte */
};

/* What the command in flight on a queue is doing between two steps. */
enum sim_phase {
	SIM_PH_FETCH,  /* not read from the ring yet */
	SIM_PH_WAIT,   /* FENCE_WAIT, not satisfied at its last check */
	SIM_PH_COPY,   /* DMA_COPY, `done` bytes moved */
	SIM_PH_FILL,   /* FILL, `done` bytes written */
	SIM_PH_LAUNCH, /* KERNEL_LAUNCH, see struct sim_launch */
	SIM_PH_DONE,   /* finished: retires with `status` */
	SIM_PH_DEAD,   /* HANG/FATAL or a fatal DMA error: never retires */
};

enum sim_launch_phase {
	SIM_LP_MAP,	/* translating buffer `cur` from page `pos` */
	SIM_LP_STAGE,	/* waiting for staging room, then allocating it */
	SIM_LP_GATHER,	/* reading staged buffer `cur` from page `pos` */
	SIM_LP_RUN,	/* blocks running */
	SIM_LP_SCATTER, /* writing staged buffer `cur` back from page `pos` */
};

struct sim_lbuf {
	uint64_t va;
	uint64_t size;
	uint32_t access;
	uint8_t *staging;	/* NULL when direct */
	struct sim_phys *pages; /* staged buffers: one entry per page */
	uint64_t npages;
	struct sim_phys one_page; /* pages of a one-page buffer (no malloc) */
	struct sim_phys p0;	  /* MAP: the first page */
	bool contiguous;	  /* MAP: physically contiguous VRAM so far */
};

struct sim_launch {
	const struct vnpu_kernel_def *kernel;
	uint32_t nbufs;
	uint32_t nblocks;
	struct sim_lbuf bufs[VNPU_KARGS_MAX_BUFFERS];
	struct vnpu_kbuf kbufs[VNPU_KARGS_MAX_BUFFERS];
	uint64_t staged; /* bytes of bounce buffers */
	bool budget;	 /* `staged` is counted in sim->staging_used */
	enum sim_launch_phase lphase;
	uint32_t cur;
	uint64_t pos;
	/* Blocks. Threaded mode: next_block, running and posted are the
	 * pool's (its lock); deterministic: the command processor's. */
	uint32_t next_block;
	uint32_t running;
	bool posted;
	/* threaded: its queue's Q_BUSY_US counter and the epoch its
	 * command started in (a charge after a reset is dropped) */
	_Atomic uint64_t *busy;
	uint64_t epoch;
	/* Abort, disable, reset or destroy: no block starts any more and
	 * running ones return at their next poll (the kernels' stop hook). */
	atomic_bool stop;
	_Alignas(16) uint8_t params[VNPU_KARGS_MAX_BYTES];
};

/* The command in flight on a queue, with what the CP snapshotted for it. */
struct sim_exec {
	unsigned queue;
	unsigned ctx;
	uint64_t epoch;
	uint64_t qgen;
	uint64_t cpl_base;
	uint64_t ring_base;
	uint32_t slot;
	uint32_t entries;
	struct vnpu_cmd cmd; /* local copy, fetched once */
	bool fetched;	     /* cmd holds it (phase may still be FETCH) */
	enum sim_phase phase;
	uint32_t status;
	uint64_t info;
	uint64_t done; /* COPY/FILL progress */
	/* Per step, from the snapshot: the context has a pending fault */
	bool faulted;
	struct sim_launch launch;
};

struct sim_queue {
	uint64_t ring_base;
	uint64_t cpl_base;
	uint32_t ring_log2;
	uint32_t ctx;
	bool enabled;  /* fetching commands */
	bool aborting; /* ABORT requested, its command not stopped yet */
	bool aborted;  /* Q_STATUS.ABORTED */
	bool irq_enable;
	bool irq_coalesce; /* Q_CTRL.IRQ_COALESCE */
	bool config_error;
	uint32_t last_error; /* Q_STATUS[31:16] */
	uint32_t head;
	uint32_t tail;
	uint64_t done_seq;
	/* Bumped on enable and disable (under the lock); atomic so that the
	 * command processor checks it without the lock. */
	_Atomic uint64_t gen;
	bool busy;    /* a command is in flight (exec is in use) */
	bool waiting; /* that command is blocked in FENCE_WAIT */
	/* Q_BUSY_US times num_cores, in ns (sim_queue_busy_ns_locked): a
	 * block's time counts num_cores / (the cores its launch uses alone)
	 * times, a step's num_cores times. Added to by
	 * every device thread, with the lock or the pool's held (a reset
	 * zeroes it with both). */
	_Atomic uint64_t busy_cns;
	struct sim_exec exec;
};

/* The device threads (workers.c) and the launches whose blocks they run. */
struct sim_pool {
	unsigned count;	   /* cores: blocks that may run at once */
	unsigned nthreads; /* started: count + 1 */
	pthread_t threads[VNPU_MAX_CORES + 1];
	pthread_mutex_t lock;
	pthread_cond_t work_cv; /* a launch was posted, a kick, or stop */
	pthread_cond_t idle_cv; /* a block finished */
	struct sim_launch *active[VNPU_MAX_QUEUES]; /* posted launches */
	unsigned nactive;
	unsigned rr;	   /* round robin between the launches */
	unsigned running;  /* blocks executing, all launches */
	atomic_uint posts; /* bumped (under the lock) by posts and kicks */
	/* A one-block launch was posted without waking the cores (set and
	 * cleared under the lock; read by the command processor without). */
	atomic_bool deferred;
	bool stop;
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
	pthread_cond_t idle_cv;		/* CP became not busy */
	pthread_cond_t wake_cv;		/* work for the CP thread */
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
	/* Bit q: queue q has a command in flight or is enabled with
	 * HEAD != TAIL. */
	uint32_t active_queues;

	/* command processor */
	_Atomic uint64_t epoch; /* bumped by every reset (under the lock) */
	atomic_bool cancel;	/* a reset wants the CP to stop */
	bool cp_busy;
	pthread_mutex_t run_lock; /* serialises vnpu_sim_run callers */
	/* Threaded: a device thread is the command processor (workers.c). */
	bool cp_role;
	bool cp_stop;
	/* The role's holder sleeps with nothing to do, and a doorbell's
	 * thread may step in for it (cp_lent while it does; queue.c). */
	bool cp_idle;
	bool cp_lent;
	/* Bytes of bounce buffers the launches in flight hold (the CP's). */
	uint64_t staging_used;
	struct sim_pool pool;

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
bool sim_any_waiting_locked(const struct vnpu_sim *sim);
/* Some queue has a command in flight that is not blocked in FENCE_WAIT,
 * or an enabled queue has a command to fetch (processing allowed). */
bool sim_queues_runnable_locked(const struct vnpu_sim *sim);
bool sim_queues_busy_locked(const struct vnpu_sim *sim);
void sim_queue_write_locked(struct vnpu_sim *sim, unsigned q, uint32_t reg,
			    uint32_t value);
uint32_t sim_queue_read_locked(struct vnpu_sim *sim, unsigned q, uint32_t reg);
void sim_doorbell_locked(struct vnpu_sim *sim, unsigned q, uint32_t value);
/* Wakes the command processor; when no thread is it (its last holder
 * runs a block), a core, which takes the role. */
void sim_wake_cp_locked(struct vnpu_sim *sim);
/* Lets go of what a queue's command in flight holds (bounce buffers,
 * page lists, staging room); its launch must not be on the cores. */
void sim_exec_release(struct vnpu_sim *sim, struct sim_exec *ex);

/* Booted and neither hung nor fatal (lock held). */
static inline bool sim_processing_allowed_locked(const struct vnpu_sim *sim)
{
	return sim->ready && !sim->fatal && !sim->hung;
}

/* queue.c: one step of the next queue (round robin) that can progress. */
enum sim_step {
	SIM_STEP_NONE,	   /* no queue could progress */
	SIM_STEP_PROGRESS, /* a queue's command progressed */
	SIM_STEP_RETIRED,  /* a command retired */
};
/* Entered and left with the lock held (it drops it while the step runs);
 * interrupts of a retirement are delivered at the caller's next
 * sim_unlock. */
enum sim_step sim_cp_step_locked(struct vnpu_sim *sim);
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
/* One step of a DMA_COPY / FILL from ex->done on (at most
 * SIM_DMA_STEP_BYTES). True when the command is over: all done, or failed
 * with ex->status set. */
bool sim_dma_copy_step(struct vnpu_sim *sim, struct sim_exec *ex);
bool sim_dma_fill_step(struct vnpu_sim *sim, struct sim_exec *ex);

/* cmd.c: the first step of the fetched command in ex (validation, and the
 * whole command for the short ones), and the later steps. Both leave
 * ex->phase at what remains to do. */
void sim_cmd_begin(struct vnpu_sim *sim, struct sim_exec *ex);
/* A later step; false when it could not progress (fence not satisfied,
 * staging room or the cores busy). */
bool sim_cmd_step(struct vnpu_sim *sim, struct sim_exec *ex);

/* launch.c */
void sim_launch_begin(struct vnpu_sim *sim, struct sim_exec *ex);
bool sim_launch_step(struct vnpu_sim *sim, struct sim_exec *ex);
/* Whether a launch's blocks are over (all ran, or stopped, and none is
 * running); threaded mode takes the pool lock. */
bool sim_launch_settled(struct vnpu_sim *sim, struct sim_launch *l);
void sim_launch_release(struct vnpu_sim *sim, struct sim_launch *l);

/* workers.c */
/* Threaded mode: starts num_cores + 1 device threads; stops and joins
 * them (cancelling the commands in flight). */
int sim_threads_start(struct vnpu_sim *sim);
void sim_threads_stop(struct vnpu_sim *sim);
/* The part of sim_wake_cp_locked for a free command-processor role. */
void sim_wake_cp_vacant_locked(struct vnpu_sim *sim);
/* Threaded mode: hands the launch's blocks to the workers. */
void sim_pool_post(struct vnpu_sim *sim, struct sim_launch *l,
		   _Atomic uint64_t *busy, uint64_t epoch);
/* Q_BUSY_US of queue q, in ns. */
uint64_t sim_queue_busy_ns_locked(struct vnpu_sim *sim, unsigned q);
/*
 * Threaded mode's Q_BUSY_US (workers.c): a step or block starts with
 * sim_charge_start (its wall clock) and ends with sim_charge_add to its
 * queue's counter, weighted weight / share: num_cores / 1 for a step,
 * num_cores / min(blocks, num_cores) for a block of a launch;
 * sim_charge_flush shares out the CPU time the thread ran since its last
 * flush among what it added (due once per tick of sim_coarse_ns, and
 * before the thread sleeps). Add and flush with the lock or the pool's
 * held. Work that is nobody's: sim_charge_skip with its wall time (a spin,
 * a FENCE_WAIT's re-read), or a flush before and sim_charge_forget after
 * it (a boot, the host's code): the next start reads the CPU clock afresh.
 */
uint64_t sim_charge_start(void);
void sim_charge_skip(uint64_t wall);
void sim_charge_add(struct vnpu_sim *sim, _Atomic uint64_t *counter,
		    uint64_t epoch, uint64_t start, unsigned weight,
		    unsigned share);
bool sim_charge_due(void);
void sim_charge_flush(void);
void sim_charge_forget(void);
/* A clock cheap enough to read at every poll of a kernel's stop hook (a
 * vDSO read, where the thread's CPU clock is a system call); it moves once
 * per tick of the host's timer. */
uint64_t sim_coarse_ns(void);
/* Takes a settled launch off the pool (pool lock held by the caller). */
void sim_pool_remove_locked(struct sim_pool *pool, struct sim_launch *l);
/* Waits until no block of any launch is running (every launch stopped). */
void sim_pool_wait_idle(struct vnpu_sim *sim);
/* Runs block b of l on the calling thread with l's stop hook installed. */
void sim_run_block(struct sim_launch *l, uint32_t b);

#endif /* VNPU_SIM_INTERNAL_H */
