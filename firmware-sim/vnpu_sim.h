/* SPDX-License-Identifier: MIT */
/*
 * The vnpu device as a plain C library: register file, queues, command
 * processor, MMU, DMA engine, interrupts, faults, hangs, reset and the
 * firmware boot handshake. A host (the QEMU device, the runtime's sim
 * backend, the tests) gives it VRAM and a HAL, forwards BAR0 accesses and,
 * in deterministic mode, calls vnpu_sim_run() to make it work.
 *
 * docs/hw-spec.md describes the behaviour; include/vnpu/hw_*.h the formats.
 */
#ifndef VNPU_SIM_H
#define VNPU_SIM_H

#include <stdbool.h>
#include <stdint.h>

struct vnpu_sim;

/*
 * What the device needs from its host. In threaded mode the callbacks are
 * called from the command-processor thread without any simulator lock held;
 * they must not call back into the simulator and must not wait for a thread
 * that may itself be blocked in vnpu_sim_reset(), vnpu_sim_reg_write() or
 * vnpu_sim_destroy() (a QEMU host defers msix_notify to a bottom half).
 * clock_ns and log may also be called from the thread accessing registers,
 * with the simulator lock held. With doorbell_runs_short (below), a thread
 * inside vnpu_sim_reg_write may call any of them, without the lock.
 */
struct vnpu_sim_hal {
	void *opaque;
	/* Bus-master access to host memory at bus address addr. Return 0, or
	 * non-zero when the bus refuses (unmapped, the device's own BARs...).
	 * The device never asks for len == 0. */
	int (*dma_read)(void *opaque, uint64_t addr, void *buf, uint64_t len);
	int (*dma_write)(void *opaque, uint64_t addr, const void *buf,
			 uint64_t len);
	/* Signal MSI-X vector `vector` (edge). INTx users poll
	 * vnpu_sim_irq_level() after this and after register writes. */
	void (*irq)(void *opaque, unsigned vector);
	/* Monotonic device clock in ns. */
	uint64_t (*clock_ns)(void *opaque);
	/* Optional: guest-error log line (QEMU: LOG_GUEST_ERROR). May be NULL.
	 */
	void (*log)(void *opaque, const char *msg);
	/* Optional: called first and last on every thread the simulator
	 * starts, before and after it may call any other hook (QEMU: RCU
	 * registration). May be NULL. */
	void (*thread_start)(void *opaque);
	void (*thread_exit)(void *opaque);
};

enum vnpu_sim_mode {
	VNPU_SIM_DETERMINISTIC, /* no threads; vnpu_sim_run() does the work */
	VNPU_SIM_THREADS,	/* a command processor + num_cores workers */
};

struct vnpu_sim_config {
	void *vram;	       /* owned by the host, vram_size bytes */
	uint64_t vram_size;    /* page multiple, VNPU_VRAM_SIZE_MIN..MAX */
	unsigned num_queues;   /* 1..VNPU_MAX_QUEUES */
	unsigned num_contexts; /* 1..VNPU_MAX_CONTEXTS */
	unsigned num_cores;    /* 1..VNPU_MAX_CORES */
	enum vnpu_sim_mode mode;
	bool test_mode; /* TEST_INJECT register and command allowed */
	/*
	 * Threaded mode: a doorbell rung while the command processor sleeps
	 * with nothing to do runs the queue's short commands (NOP,
	 * FENCE_SIGNAL, TIMESTAMP; a bounded number) in the ringing thread,
	 * inside vnpu_sim_reg_write, which then also calls hal.irq for them:
	 * no thread wake-up on the way to the completion. For hosts whose
	 * irq callback may run there (it must not take a lock the writer of
	 * a doorbell holds).
	 */
	bool doorbell_runs_short;
};

/* Returns 0, -EINVAL for a bad config or HAL, -ENOMEM, or -errno of a
 * failed thread creation. */
int vnpu_sim_create(const struct vnpu_sim_config *cfg,
		    const struct vnpu_sim_hal *hal, struct vnpu_sim **out);
/* Cancels and joins every thread. VRAM is the host's and stays. */
void vnpu_sim_destroy(struct vnpu_sim *sim);

/* BAR0 accesses (32-bit). A bad offset or an unaligned one reads 0 and is
 * logged; writes to it are ignored and logged. Thread-safe. */
uint32_t vnpu_sim_reg_read(struct vnpu_sim *sim, uint32_t offset);
void vnpu_sim_reg_write(struct vnpu_sim *sim, uint32_t offset, uint32_t value);

/* Deterministic mode: performs a pending boot, then executes commands until
 * no queue can progress or max_commands commands have retired; returns how
 * many retired. Queues are stepped round robin, a bounded piece of work per
 * step (a fetch, a DMA chunk, one kernel block...), so commands of other
 * queues may be left part-done when it returns. Threaded mode: returns 0 at
 * once. */
unsigned vnpu_sim_run(struct vnpu_sim *sim, unsigned max_commands);

/* Deterministic mode: performs a pending boot or one step (of the next
 * queue, round robin, that can progress); false when nothing could
 * progress. For hosts that bound the time they give the device at once (a
 * step is at most a few megabytes of DMA or one kernel block). Threaded
 * mode: returns false at once. */
bool vnpu_sim_step(struct vnpu_sim *sim);

/* INTx level: (IRQ_STATUS & ~IRQ_MASK) != 0. */
bool vnpu_sim_irq_level(struct vnpu_sim *sim);

/* FLR / system reset: the same as writing CTRL.RESET. */
void vnpu_sim_reset(struct vnpu_sim *sim);

/* True when nothing can run: no boot pending, no command executing and no
 * enabled queue with a fetchable command (queues blocked in FENCE_WAIT
 * count as idle; so does everything while hung, fatal or not booted). */
bool vnpu_sim_idle(struct vnpu_sim *sim);

#endif /* VNPU_SIM_H */
