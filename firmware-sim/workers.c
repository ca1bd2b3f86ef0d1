// SPDX-License-Identifier: MIT
/*
 * Threaded mode: the command-processor thread, woken by doorbells and by
 * the workers, and the worker threads ("cores") that run the blocks of the
 * launches in flight, one block of each launch in turn. In deterministic
 * mode the command processor runs one block per step on the caller's
 * thread.
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
 * Polls *counter for up to `ns` for a change from `seen`, without any lock:
 * a thread about to sleep on a condition variable catches the next event of
 * a burst without a wake-up through the kernel. After the first
 * microseconds it yields between polls: on a loaded machine the thread that
 * would make the change may be waiting for this very CPU.
 */
static bool spin_for_change(atomic_uint *counter, unsigned seen, uint64_t ns)
{
	uint64_t start, now;

	start = now = mono_ns();
	do {
		if (now - start < SIM_CP_SPIN_NS / 10) {
			for (int i = 0; i < 16; i++)
				cpu_relax();
		} else {
			sched_yield();
		}
		if (atomic_load_explicit(counter, memory_order_acquire) != seen)
			return true;
		now = mono_ns();
	} while (now - start < ns);
	return false;
}

/* The kernels' stop hook of a launch's blocks. */
static bool launch_should_stop(void *opaque)
{
	struct sim_launch *l = opaque;

	return atomic_load_explicit(&l->stop, memory_order_relaxed);
}

void sim_run_block(struct sim_launch *l, uint32_t b)
{
	vnpu_kernel_set_stop_hook(launch_should_stop, l);
	l->kernel->run(l->params, l->kbufs, b, l->nblocks);
	vnpu_kernel_set_stop_hook(NULL, NULL);
}

/* The next block to run, round robin between the posted launches (one
 * block of each in turn); NULL when none has a block left. Pool lock. */
static struct sim_launch *pool_pick_locked(struct vnpu_sim *sim,
					   uint32_t *block)
{
	struct sim_pool *pool = &sim->pool;

	for (unsigned i = 0; i < pool->nactive; i++) {
		unsigned k = (pool->rr + i) % pool->nactive;
		struct sim_launch *l = pool->active[k];

		if (l->next_block >= l->nblocks || atomic_load(&l->stop))
			continue;
		*block = l->next_block++;
		/* The queue is busy while any block of its launch runs. */
		if (l->running++ == 0)
			l->run_since = sim_clock(sim);
		pool->running++;
		pool->rr = k + 1;
		return l;
	}
	return NULL;
}

/* Wakes the command processor: a launch's blocks are over. Takes the
 * simulator lock (never with the pool lock held), so that the command
 * processor cannot miss it between its check and its sleep. */
static void wake_cp(struct vnpu_sim *sim)
{
	pthread_mutex_lock(&sim->lock);
	sim_wake_cp_locked(sim);
	pthread_mutex_unlock(&sim->lock);
}

static void *worker_main(void *arg)
{
	struct vnpu_sim *sim = arg;
	struct sim_pool *pool = &sim->pool;

	thread_start(sim);
	pthread_mutex_lock(&pool->lock);
	while (!pool->stop) {
		struct sim_launch *l;
		uint32_t b;
		bool over;

		l = pool_pick_locked(sim, &b);
		if (!l) {
			unsigned seen = atomic_load(&pool->posts);

			/* the next launch of a burst, without a wake-up */
			pthread_mutex_unlock(&pool->lock);
			spin_for_change(&pool->posts, seen, SIM_CP_SPIN_NS);
			pthread_mutex_lock(&pool->lock);
			/* posts move under the lock: none is missed */
			if (atomic_load(&pool->posts) == seen && !pool->stop)
				pthread_cond_wait(&pool->work_cv, &pool->lock);
			continue;
		}
		pthread_mutex_unlock(&pool->lock);
		sim_run_block(l, b);
		pthread_mutex_lock(&pool->lock);
		if (--l->running == 0)
			atomic_fetch_add(l->busy_ns,
					 sim_clock(sim) - l->run_since);
		pool->running--;
		over = l->running == 0 &&
		       (l->next_block >= l->nblocks || atomic_load(&l->stop));
		if (pool->running == 0)
			pthread_cond_broadcast(&pool->idle_cv);
		if (over) {
			pthread_mutex_unlock(&pool->lock);
			wake_cp(sim);
			pthread_mutex_lock(&pool->lock);
		}
	}
	pthread_mutex_unlock(&pool->lock);
	thread_exit(sim);
	return NULL;
}

int sim_workers_start(struct vnpu_sim *sim)
{
	struct sim_pool *pool = &sim->pool;

	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work_cv, NULL);
	pthread_cond_init(&pool->idle_cv, NULL);
	pool->count = 0;
	for (unsigned i = 0; i < sim->cfg.num_cores; i++) {
		int err = pthread_create(&pool->threads[i], NULL, worker_main,
					 sim);

		if (err) {
			sim_workers_stop(sim);
			return -err;
		}
		pool->count++;
	}
	return 0;
}

void sim_workers_stop(struct vnpu_sim *sim)
{
	struct sim_pool *pool = &sim->pool;

	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	/* Blocks still running return at their next poll. */
	for (unsigned i = 0; i < pool->nactive; i++)
		atomic_store(&pool->active[i]->stop, true);
	pthread_cond_broadcast(&pool->work_cv);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->count; i++)
		pthread_join(pool->threads[i], NULL);
	pool->count = 0;
	pool->nactive = 0;
	pthread_cond_destroy(&pool->idle_cv);
	pthread_cond_destroy(&pool->work_cv);
	pthread_mutex_destroy(&pool->lock);
}

void sim_pool_post(struct vnpu_sim *sim, struct sim_launch *l,
		   _Atomic uint64_t *busy_ns)
{
	struct sim_pool *pool = &sim->pool;

	pthread_mutex_lock(&pool->lock);
	l->next_block = 0;
	l->running = 0;
	l->busy_ns = busy_ns;
	l->posted = true;
	pool->active[pool->nactive++] = l; /* one launch per queue */
	atomic_fetch_add(&pool->posts, 1);
	pthread_cond_broadcast(&pool->work_cv);
	pthread_mutex_unlock(&pool->lock);
}

void sim_pool_remove_locked(struct sim_pool *pool, struct sim_launch *l)
{
	for (unsigned i = 0; i < pool->nactive; i++) {
		if (pool->active[i] != l)
			continue;
		pool->active[i] = pool->active[--pool->nactive];
		if (pool->rr > pool->nactive)
			pool->rr = 0;
		break;
	}
	l->posted = false;
}

bool sim_launch_settled(struct vnpu_sim *sim, struct sim_launch *l)
{
	struct sim_pool *pool = &sim->pool;
	bool settled;

	if (sim->cfg.mode != VNPU_SIM_THREADS)
		return l->next_block >= l->nblocks || atomic_load(&l->stop);
	pthread_mutex_lock(&pool->lock);
	settled = !l->posted ||
		  (l->running == 0 &&
		   (l->next_block >= l->nblocks || atomic_load(&l->stop)));
	if (settled && l->posted)
		sim_pool_remove_locked(pool, l);
	pthread_mutex_unlock(&pool->lock);
	return settled;
}

/* Q_BUSY_US in ns: what ended, and the blocks of its launch running now.
 * Takes the pool lock inside the simulator's, as the command processor
 * does. */
uint64_t sim_queue_busy_ns_locked(struct vnpu_sim *sim, unsigned q)
{
	struct sim_queue *qu = &sim->queue[q];
	struct sim_launch *l = &qu->exec.launch;
	uint64_t ns = atomic_load(&qu->busy_ns);

	if (sim->cfg.mode != VNPU_SIM_THREADS || !qu->busy)
		return ns;
	pthread_mutex_lock(&sim->pool.lock);
	if (l->posted && l->running)
		ns += sim_clock(sim) - l->run_since;
	pthread_mutex_unlock(&sim->pool.lock);
	return ns;
}

void sim_pool_wait_idle(struct vnpu_sim *sim)
{
	struct sim_pool *pool = &sim->pool;

	if (sim->cfg.mode != VNPU_SIM_THREADS)
		return;
	pthread_mutex_lock(&pool->lock);
	while (pool->running)
		pthread_cond_wait(&pool->idle_cv, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
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

/*
 * Polls for a wake (doorbell, Q_CTRL, CTRL.BOOT, fault clear, a launch's
 * blocks over) for up to `ns` without the lock, so that the next doorbell
 * of a burst finds the command processor awake. Entered and left with the
 * lock held (no interrupt is pending: the caller delivered them). True when
 * a wake came (the caller looks for work again).
 */
static bool cp_poll_wake(struct vnpu_sim *sim, uint64_t ns)
{
	unsigned seen = atomic_load_explicit(&sim->wakes, memory_order_relaxed);
	bool woken;

	sim_unlock(sim);
	woken = spin_for_change(&sim->wakes, seen, ns);
	sim_lock(sim);
	/* A wake between the last poll and the lock is seen here: wakes
	 * only move under the lock. */
	return woken ||
	       atomic_load_explicit(&sim->wakes, memory_order_relaxed) != seen;
}

/* A boot, or an enabled queue with a command to fetch. */
static bool cp_has_work_locked(const struct vnpu_sim *sim)
{
	if (sim->boot_pending)
		return true;
	return sim_queues_runnable_locked(sim);
}

static void *cp_main(void *arg)
{
	struct vnpu_sim *sim = arg;

	thread_start(sim);
	sim_lock(sim);
	while (!sim->cp_stop) {
		/* A retirement's interrupt goes out with the next step's
		 * snapshot (sim_cp_step_locked drops the lock busy)... */
		if (!sim->boot_pending &&
		    sim_cp_step_locked(sim) != SIM_STEP_NONE)
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
		else if (sim_queues_busy_locked(sim)) {
			/* launches on the cores: the workers wake us (a
			 * launch waiting for staging room waits for them).
			 * Only a short poll: a longer one takes the CPU
			 * from the workers on a loaded host. */
			if (!cp_poll_wake(sim, SIM_CP_SPIN_NS / 10) &&
			    !sim->cp_stop)
				pthread_cond_wait(&sim->wake_cv, &sim->lock);
		} else if (!cp_has_work_locked(sim) &&
			   !cp_poll_wake(sim, SIM_CP_SPIN_NS) &&
			   !cp_has_work_locked(sim) && !sim->cp_stop) {
			pthread_cond_wait(&sim->wake_cv, &sim->lock);
		}
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
