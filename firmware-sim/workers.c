// SPDX-License-Identifier: MIT
/*
 * Threaded mode: the command-processor thread, woken by doorbells, and the
 * worker threads ("cores") that run kernel blocks. In deterministic mode
 * blocks run in order on the caller's thread.
 */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "sim_internal.h"

static void thread_start(struct vnpu_sim *sim)
{
	if (sim->hal.thread_start)
		sim->hal.thread_start(sim->hal.opaque);
}

static void thread_exit(struct vnpu_sim *sim)
{
	if (sim->hal.thread_exit)
		sim->hal.thread_exit(sim->hal.opaque);
}

static void *worker_main(void *arg)
{
	struct vnpu_sim *sim = arg;
	struct sim_workers *w = &sim->workers;
	uint64_t seen = 0;

	thread_start(sim);
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct sim_job *job = &w->job;

		while (!w->stop && w->job_gen == seen)
			pthread_cond_wait(&w->start_cv, &w->lock);
		if (w->stop)
			break;
		seen = w->job_gen;
		pthread_mutex_unlock(&w->lock);
		while (!atomic_load(&sim->cancel)) {
			unsigned b = atomic_fetch_add(&job->next_block, 1);

			if (b >= job->nblocks)
				break;
			job->kernel->run(job->params, job->bufs, b,
					 job->nblocks);
		}
		pthread_mutex_lock(&w->lock);
		if (--w->running == 0)
			pthread_cond_signal(&w->done_cv);
	}
	pthread_mutex_unlock(&w->lock);
	thread_exit(sim);
	return NULL;
}

int sim_workers_start(struct vnpu_sim *sim)
{
	struct sim_workers *w = &sim->workers;

	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->start_cv, NULL);
	pthread_cond_init(&w->done_cv, NULL);
	w->count = 0;
	for (unsigned i = 0; i < sim->cfg.num_cores; i++) {
		int err =
			pthread_create(&w->threads[i], NULL, worker_main, sim);

		if (err) {
			sim_workers_stop(sim);
			return -err;
		}
		w->count++;
	}
	return 0;
}

void sim_workers_stop(struct vnpu_sim *sim)
{
	struct sim_workers *w = &sim->workers;

	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->start_cv);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->count; i++)
		pthread_join(w->threads[i], NULL);
	w->count = 0;
	pthread_cond_destroy(&w->done_cv);
	pthread_cond_destroy(&w->start_cv);
	pthread_mutex_destroy(&w->lock);
}

void sim_run_blocks(struct vnpu_sim *sim, const struct vnpu_kernel_def *k,
		    const void *params, const struct vnpu_kbuf *bufs,
		    uint32_t nblocks)
{
	struct sim_workers *w = &sim->workers;

	if (sim->cfg.mode != VNPU_SIM_THREADS || nblocks == 1) {
		for (uint32_t b = 0; b < nblocks; b++) {
			if (atomic_load(&sim->cancel))
				return;
			k->run(params, bufs, b, nblocks);
		}
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->job.kernel = k;
	w->job.params = params;
	w->job.bufs = bufs;
	w->job.nblocks = nblocks;
	atomic_store(&w->job.next_block, 0);
	w->running = w->count;
	w->job_gen++;
	pthread_cond_broadcast(&w->start_cv);
	while (w->running)
		pthread_cond_wait(&w->done_cv, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static void timed_wait_locked(struct vnpu_sim *sim, uint64_t ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ns;
	while (ts.tv_nsec >= 1000000000L) {
		ts.tv_nsec -= 1000000000L;
		ts.tv_sec++;
	}
	pthread_cond_timedwait(&sim->wake_cv, &sim->lock, &ts);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/*
 * Polls for a wake (doorbell, Q_CTRL, CTRL.BOOT, fault clear) for up to
 * SIM_CP_SPIN_NS without the lock, so that the next doorbell of a burst
 * finds the command processor awake. After the first microseconds it
 * yields between polls: on a loaded machine the submitting thread may be
 * waiting for this very CPU. Entered and left with the lock held (no
 * interrupt is pending: the caller delivered them). True when a wake came
 * (the caller looks for work again).
 */
static bool cp_poll_wake(struct vnpu_sim *sim)
{
	unsigned seen = atomic_load_explicit(&sim->wakes, memory_order_relaxed);
	uint64_t start, now;
	bool woken = false;

	sim_unlock(sim);
	start = now = mono_ns();
	do {
		if (now - start < SIM_CP_SPIN_NS / 10) {
			for (int i = 0; i < 16; i++)
				cpu_relax();
		} else {
			sched_yield();
		}
		if (atomic_load_explicit(&sim->wakes, memory_order_acquire) !=
		    seen) {
			woken = true;
			break;
		}
		now = mono_ns();
	} while (now - start < SIM_CP_SPIN_NS);
	sim_lock(sim);
	/* A wake between the last poll and the lock is seen here: wakes
	 * only move under the lock. */
	return woken || atomic_load_explicit(&sim->wakes,
					     memory_order_relaxed) != seen;
}

static bool cp_has_work_locked(const struct vnpu_sim *sim)
{
	if (sim->boot_pending)
		return true;
	for (unsigned q = 0; q < sim->cfg.num_queues; q++)
		if (sim_queue_fetchable_locked(sim, q))
			return true;
	return false;
}

static void *cp_main(void *arg)
{
	struct vnpu_sim *sim = arg;

	thread_start(sim);
	sim_lock(sim);
	while (!sim->cp_stop) {
		/* A retirement's interrupt goes out with the next command's
		 * snapshot (sim_cp_step_locked drops the lock busy)... */
		if (!sim->boot_pending && sim_cp_step_locked(sim))
			continue;
		if (sim->pending_vectors) {
			/* ...or here, before anything else */
			sim_cp_deliver_locked(sim);
			continue;
		}
		if (sim->boot_pending) {
			sim_unlock(sim);
			sim_cp_boot(sim);
			sim_lock(sim);
			continue;
		}
		if (sim->cp_stop)
			break;
		if (atomic_load(&sim->cancel) || sim_any_waiting_locked(sim))
			/* let a reset finish; re-read fences periodically */
			timed_wait_locked(sim, SIM_FENCE_POLL_NS);
		else if (!cp_has_work_locked(sim) && !cp_poll_wake(sim) &&
			 !cp_has_work_locked(sim) && !sim->cp_stop)
			pthread_cond_wait(&sim->wake_cv, &sim->lock);
	}
	sim_unlock(sim);
	thread_exit(sim);
	return NULL;
}

int sim_cp_thread_start(struct vnpu_sim *sim)
{
	int err = pthread_create(&sim->cp_thread, NULL, cp_main, sim);

	if (err)
		return -err;
	sim->cp_started = true;
	return 0;
}

void sim_cp_thread_stop(struct vnpu_sim *sim)
{
	if (!sim->cp_started)
		return;
	pthread_mutex_lock(&sim->lock);
	sim->cp_stop = true;
	/* Stop a long command early; nothing it did is retired any more. */
	atomic_store(&sim->cancel, true);
	sim->epoch++;
	sim_wake_cp_locked(sim);
	pthread_mutex_unlock(&sim->lock);
	pthread_join(sim->cp_thread, NULL);
	sim->cp_started = false;
}
