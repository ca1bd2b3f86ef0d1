// SPDX-License-Identifier: MIT
/* Creation, destruction, reset and the top-level entry points. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

void sim_log(struct vnpu_sim *sim, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!sim->hal.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sim->hal.log(sim->hal.opaque, line);
}

uint64_t sim_clock(struct vnpu_sim *sim)
{
	return sim->hal.clock_ns(sim->hal.opaque);
}

void sim_lock(struct vnpu_sim *sim)
{
	pthread_mutex_lock(&sim->lock);
}

void sim_unlock(struct vnpu_sim *sim)
{
	uint32_t vectors = sim->pending_vectors;

	sim->pending_vectors = 0;
	pthread_mutex_unlock(&sim->lock);
	for (unsigned v = 0; vectors; v++, vectors >>= 1)
		if (vectors & 1)
			sim->hal.irq(sim->hal.opaque, v);
}

static bool config_valid(const struct vnpu_sim_config *cfg,
			 const struct vnpu_sim_hal *hal)
{
	if (!cfg || !hal || !cfg->vram)
		return false;
	if (!hal->dma_read || !hal->dma_write || !hal->irq || !hal->clock_ns)
		return false;
	if (cfg->vram_size < VNPU_VRAM_SIZE_MIN ||
	    cfg->vram_size > VNPU_VRAM_SIZE_MAX ||
	    cfg->vram_size % VNPU_PAGE_SIZE)
		return false;
	if (cfg->num_queues < 1 || cfg->num_queues > VNPU_MAX_QUEUES)
		return false;
	if (cfg->num_contexts < 1 || cfg->num_contexts > VNPU_MAX_CONTEXTS)
		return false;
	if (cfg->num_cores < 1 || cfg->num_cores > VNPU_MAX_CORES)
		return false;
	return cfg->mode == VNPU_SIM_DETERMINISTIC ||
	       cfg->mode == VNPU_SIM_THREADS;
}

int vnpu_sim_create(const struct vnpu_sim_config *cfg,
		    const struct vnpu_sim_hal *hal, struct vnpu_sim **out)
{
	struct vnpu_sim *sim;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!config_valid(cfg, hal))
		return -EINVAL;
	sim = aligned_alloc(_Alignof(struct vnpu_sim), sizeof(*sim));
	if (!sim)
		return -ENOMEM;
	memset(sim, 0, sizeof(*sim));
	sim->cfg = *cfg;
	sim->hal = *hal;
	sim->vram = cfg->vram;
	pthread_mutex_init(&sim->lock, NULL);
	pthread_mutex_init(&sim->run_lock, NULL);
	pthread_cond_init(&sim->idle_cv, NULL);
	pthread_cond_init(&sim->wake_cv, NULL);
	atomic_init(&sim->cancel, false);
	atomic_init(&sim->wakes, 0);
	atomic_init(&sim->epoch, 0);
	if (cfg->mode == VNPU_SIM_THREADS) {
		err = sim_threads_start(sim);
		if (err) {
			pthread_cond_destroy(&sim->wake_cv);
			pthread_cond_destroy(&sim->idle_cv);
			pthread_mutex_destroy(&sim->run_lock);
			pthread_mutex_destroy(&sim->lock);
			free(sim);
			return err;
		}
	}
	*out = sim;
	return 0;
}

/* Lets go of every queue's command in flight (reset, destroy): the
 * command processor is idle and no block runs. */
static void release_all(struct vnpu_sim *sim)
{
	for (unsigned q = 0; q < VNPU_MAX_QUEUES; q++) {
		struct sim_exec *ex = &sim->queue[q].exec;

		if (sim->cfg.mode == VNPU_SIM_THREADS && ex->launch.posted) {
			pthread_mutex_lock(&sim->pool.lock);
			sim_pool_remove_locked(&sim->pool, &ex->launch);
			pthread_mutex_unlock(&sim->pool.lock);
		}
		sim_exec_release(sim, ex);
	}
}

void vnpu_sim_destroy(struct vnpu_sim *sim)
{
	if (!sim)
		return;
	if (sim->cfg.mode == VNPU_SIM_THREADS) {
		sim_threads_stop(sim);
		/* the pool's lock is gone: nothing is posted any more */
		for (unsigned q = 0; q < VNPU_MAX_QUEUES; q++)
			sim->queue[q].exec.launch.posted = false;
	}
	release_all(sim);
	pthread_cond_destroy(&sim->wake_cv);
	pthread_cond_destroy(&sim->idle_cv);
	pthread_mutex_destroy(&sim->run_lock);
	pthread_mutex_destroy(&sim->lock);
	free(sim);
}

/*
 * The one reset routine (CTRL.RESET, FLR, system reset). Stops the command
 * processor at the end of its step (a bounded piece of work) and every
 * launch's blocks at their next poll of the kernels' stop hook, waits for
 * both, then returns every register to its reset value. VRAM keeps its
 * contents.
 */
void sim_hw_reset_locked(struct vnpu_sim *sim)
{
	uint32_t reset_count = sim->reset_count;

	atomic_store(&sim->cancel, true);
	sim->epoch++;
	for (unsigned q = 0; q < VNPU_MAX_QUEUES; q++)
		if (sim->queue[q].busy)
			atomic_store(&sim->queue[q].exec.launch.stop, true);
	sim_wake_cp_locked(sim);
	while (sim->cp_busy)
		pthread_cond_wait(&sim->idle_cv, &sim->lock);
	/* The workers take only their own lock: waiting for them with ours
	 * held cannot block them. */
	sim_pool_wait_idle(sim);
	release_all(sim);

	sim->boot_status = VNPU_BOOT_OFF;
	sim->fw_version = 0;
	sim->fw_addr_lo = sim->fw_addr_hi = sim->fw_size = 0;
	sim->fatal_code = VNPU_FATAL_NONE;
	sim->irq_status = sim->irq_mask = sim->event_status = 0;
	sim->scratch = 0;
	sim->err_code = VNPU_ERR_NONE;
	sim->err_queue = sim->err_value = 0;
	sim->timestamp_hi_latch = 0;
	sim->ready = sim->fatal = sim->hung = sim->lost_irq = false;
	sim->boot_pending = false;
	sim->boot_time_ns = 0;
	sim->frozen_heartbeat = 0;
	memset(sim->kernel_loaded, 0, sizeof(sim->kernel_loaded));
	for (unsigned c = 0; c < VNPU_MAX_CONTEXTS; c++) {
		struct sim_ctx *ctx = &sim->ctx[c];
		uint64_t gen = atomic_load(&ctx->tlb_gen);

		memset(ctx, 0, sizeof(*ctx));
		atomic_store(&ctx->tlb_gen, gen + 1);
	}
	/* Q_BUSY_US is charged with either lock held (workers.c) */
	if (sim->cfg.mode == VNPU_SIM_THREADS)
		pthread_mutex_lock(&sim->pool.lock);
	for (unsigned q = 0; q < VNPU_MAX_QUEUES; q++) {
		struct sim_queue *qu = &sim->queue[q];
		uint64_t gen = atomic_load(&qu->gen);

		/* The registers; exec is scratch of the command processor
		 * (released above, reinitialised at the next fetch). */
		memset(qu, 0, offsetof(struct sim_queue, exec));
		atomic_store(&qu->gen, gen + 1);
	}
	if (sim->cfg.mode == VNPU_SIM_THREADS)
		pthread_mutex_unlock(&sim->pool.lock);
	sim->rr_next = 0;
	sim->active_queues = 0;
	sim->pending_vectors = 0;
	sim->reset_count = reset_count + 1;
	atomic_store(&sim->cancel, false);
}

void vnpu_sim_reset(struct vnpu_sim *sim)
{
	sim_lock(sim);
	sim_hw_reset_locked(sim);
	sim_unlock(sim);
}

/* One step of the command processor; delivers its interrupts. */
static enum sim_step run_one_step(struct vnpu_sim *sim)
{
	enum sim_step step;

	sim_lock(sim);
	step = sim_cp_step_locked(sim);
	sim_cp_deliver_locked(sim);
	sim_unlock(sim);
	return step;
}

unsigned vnpu_sim_run(struct vnpu_sim *sim, unsigned max_commands)
{
	unsigned retired = 0;

	if (sim->cfg.mode != VNPU_SIM_DETERMINISTIC)
		return 0;
	pthread_mutex_lock(&sim->run_lock);
	sim_cp_boot(sim);
	while (retired < max_commands) {
		enum sim_step step = run_one_step(sim);

		if (step == SIM_STEP_NONE)
			break;
		if (step == SIM_STEP_RETIRED)
			retired++;
	}
	pthread_mutex_unlock(&sim->run_lock);
	return retired;
}

bool vnpu_sim_step(struct vnpu_sim *sim)
{
	bool boot, progressed;

	if (sim->cfg.mode != VNPU_SIM_DETERMINISTIC)
		return false;
	pthread_mutex_lock(&sim->run_lock);
	sim_lock(sim);
	boot = sim->boot_pending;
	sim_unlock(sim);
	if (boot) {
		sim_cp_boot(sim);
		progressed = true;
	} else {
		progressed = run_one_step(sim) != SIM_STEP_NONE;
	}
	pthread_mutex_unlock(&sim->run_lock);
	return progressed;
}

bool vnpu_sim_irq_level(struct vnpu_sim *sim)
{
	bool level;

	sim_lock(sim);
	level = (sim->irq_status & ~sim->irq_mask) != 0;
	sim_unlock(sim);
	return level;
}

bool vnpu_sim_idle(struct vnpu_sim *sim)
{
	bool idle = true;

	sim_lock(sim);
	if (sim->boot_pending || sim->cp_busy ||
	    sim_queues_runnable_locked(sim))
		idle = false;
	sim_unlock(sim);
	return idle;
}
