// SPDX-License-Identifier: MIT
/*
 * Threaded mode: num_cores + 1 device threads. One at a time is the
 * command processor (it holds cp_role): it steps the queues and sleeps on
 * wake_cv when nothing is left. The others are the cores: they run the
 * blocks of the launches in flight, one block of each launch in turn, and
 * sleep on the pool's work_cv. At most num_cores blocks run at once, so a
 * thread is always left to be the command processor.
 *
 * When the command processor has nothing else to do and a posted block
 * waits for a free core, it gives the role up and runs the block itself: a
 * one-block launch then costs no hand-off between threads (each one a
 * thread wake-up, or a context switch where CPUs are few). Whoever ends a
 * launch's last block takes the role back if it is free; a wake for the
 * command processor while the role is free (a doorbell during a long
 * block) wakes the cores, and one of them takes it. In deterministic mode
 * the command processor runs one block per step on the caller's thread.
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
		if (now - start < SIM_SPIN_PAUSE_NS) {
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

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sim_coarse_ns(void)
{
	struct timespec ts;

#ifdef CLOCK_MONOTONIC_COARSE
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
	clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CHARGE_SLOTS 8

/*
 * Threaded mode's Q_BUSY_US (hw-spec D.11): what this thread ran since it
 * last read its CPU clock, per queue counter (and the epoch it belongs to),
 * as the wall time of the steps and blocks charged to it (a step's times
 * num_cores: counters hold ns x num_cores). The CPU clock is a system call
 * that takes the scheduler's lock (about a microsecond), too dear for each
 * step and block of a burst of small commands: it is read once per tick of
 * the coarse clock or before the thread idles, and the CPU time the thread
 * ran meanwhile is shared out in proportion to those wall times, never
 * more than them. So the time the host took from the thread (wall time
 * without CPU time) is nobody's, and so is the thread's own work between
 * the pieces (picking the next queue or block) when it is preempted.
 */
static _Thread_local struct {
	bool valid; /* cpu_from, tick, wall and skip are this interval's */
	uint64_t cpu_from; /* the thread's CPU clock at its start */
	uint64_t tick;	   /* sim_coarse_ns() then */
	uint64_t wall;	   /* wall time of the pieces, unweighted */
	uint64_t skip;	   /* wall time of work that is nobody's */
	unsigned n;
	struct {
		struct vnpu_sim *sim;
		_Atomic uint64_t *counter;
		uint64_t epoch;
		uint64_t wall; /* weighted */
	} slot[CHARGE_SLOTS];
} chg;

uint64_t sim_charge_start(void)
{
	if (!chg.valid) {
		chg.valid = true;
		chg.cpu_from = thread_cpu_ns();
		chg.tick = sim_coarse_ns();
		chg.wall = 0;
		chg.skip = 0;
	}
	return mono_ns();
}

void sim_charge_skip(uint64_t wall)
{
	chg.skip += wall;
}

bool sim_charge_due(void)
{
	return chg.n && sim_coarse_ns() != chg.tick;
}

void sim_charge_flush(void)
{
	uint64_t cpu, now;

	if (!chg.n) {
		/* what the thread ran since is nobody's: after a tick of it,
		 * the next start reads the CPU clock afresh */
		if (sim_coarse_ns() != chg.tick)
			chg.valid = false;
		return;
	}
	now = thread_cpu_ns();
	cpu = now - chg.cpu_from;
	/* work that is nobody's ran all its wall time, or less (then the
	 * pieces are charged less) */
	cpu = cpu > chg.skip ? cpu - chg.skip : 0;
	for (unsigned i = 0; i < chg.n; i++) {
		uint64_t ns = chg.slot[i].wall;

		if (cpu < chg.wall)
			ns = (uint64_t)((unsigned __int128)ns * cpu / chg.wall);
		/* not into the counter of a reset that came meanwhile */
		if (chg.slot[i].epoch == atomic_load(&chg.slot[i].sim->epoch))
			atomic_fetch_add_explicit(chg.slot[i].counter, ns,
						  memory_order_relaxed);
	}
	chg.n = 0;
	chg.wall = 0;
	chg.skip = 0;
	chg.cpu_from = now;
	chg.tick = sim_coarse_ns();
}

void sim_charge_add(struct vnpu_sim *sim, _Atomic uint64_t *counter,
		    uint64_t epoch, uint64_t start, unsigned weight,
		    unsigned share)
{
	uint64_t wall = mono_ns() - start;
	unsigned i;

	for (i = 0; i < chg.n; i++)
		if (chg.slot[i].counter == counter &&
		    chg.slot[i].epoch == epoch)
			break;
	if (i == CHARGE_SLOTS) {
		sim_charge_flush();
		i = 0;
	}
	if (i == chg.n) {
		chg.slot[i].sim = sim;
		chg.slot[i].counter = counter;
		chg.slot[i].epoch = epoch;
		chg.slot[i].wall = 0;
		chg.n++;
	}
	chg.slot[i].wall += wall * weight / share;
	chg.wall += wall;
}

void sim_charge_forget(void)
{
	chg.valid = false;
}

/*
 * The cores a launch uses when it has the device to itself: its blocks'
 * CPU time over this is its time, however many other launches share the
 * cores with it (hw-spec D.11).
 */
static unsigned launch_width(const struct vnpu_sim *sim,
			     const struct sim_launch *l)
{
	return l->nblocks < sim->cfg.num_cores ? l->nblocks
					       : sim->cfg.num_cores;
}

/* A block on a core thread (threaded mode). */
struct block_run {
	struct vnpu_sim *sim;
	struct sim_launch *l;
	uint64_t start; /* sim_charge_start() of its part not charged yet */
};

/*
 * The kernels' stop hook of a launch's blocks on the cores. Once per tick
 * of the coarse clock it also charges the block so far, so that Q_BUSY_US
 * grows while a long block runs (the driver judges it meanwhile); the
 * coarse clock costs a few ns, and the hook is polled every ~0.1 ms of
 * work.
 */
static bool launch_should_stop(void *opaque)
{
	struct block_run *r = opaque;

	if (sim_coarse_ns() != chg.tick) {
		struct sim_pool *pool = &r->sim->pool;

		pthread_mutex_lock(&pool->lock);
		sim_charge_add(r->sim, r->l->busy, r->l->epoch, r->start,
			       r->sim->cfg.num_cores, launch_width(r->sim, r->l));
		sim_charge_flush();
		pthread_mutex_unlock(&pool->lock);
		r->start = sim_charge_start();
	}
	return atomic_load_explicit(&r->l->stop, memory_order_relaxed);
}

/* Deterministic mode's hook: the step that runs the block is charged. */
static bool launch_stopped(void *opaque)
{
	struct sim_launch *l = opaque;

	return atomic_load_explicit(&l->stop, memory_order_relaxed);
}

void sim_run_block(struct sim_launch *l, uint32_t b)
{
	vnpu_kernel_set_stop_hook(launch_stopped, l);
	l->kernel->run(l->params, l->kbufs, b, l->nblocks);
	vnpu_kernel_set_stop_hook(NULL, NULL);
}

/* The next block to run, round robin between the posted launches (one
 * block of each in turn); NULL when none has a block left or no core is
 * free. Pool lock. */
static struct sim_launch *pool_pick_locked(struct vnpu_sim *sim,
					   uint32_t *block)
{
	struct sim_pool *pool = &sim->pool;

	/* every core busy (a thread is left for the command processor) */
	if (pool->running >= pool->count)
		return NULL;
	for (unsigned i = 0; i < pool->nactive; i++) {
		unsigned k = (pool->rr + i) % pool->nactive;
		struct sim_launch *l = pool->active[k];

		if (l->next_block >= l->nblocks || atomic_load(&l->stop))
			continue;
		*block = l->next_block++;
		l->running++;
		pool->running++;
		pool->rr = k + 1;
		return l;
	}
	return NULL;
}

void sim_pool_post(struct vnpu_sim *sim, struct sim_launch *l,
		   _Atomic uint64_t *busy, uint64_t epoch)
{
	struct sim_pool *pool = &sim->pool;

	pthread_mutex_lock(&pool->lock);
	l->next_block = 0;
	l->running = 0;
	l->busy = busy;
	l->epoch = epoch;
	l->posted = true;
	pool->active[pool->nactive++] = l; /* one launch per queue */
	atomic_fetch_add(&pool->posts, 1);
	/* One block: the command processor runs it once it is idle, unless
	 * it goes on working (then it wakes a core: cp_kick_cores_locked). */
	if (l->nblocks > 1)
		pthread_cond_broadcast(&pool->work_cv);
	else
		atomic_store_explicit(&pool->deferred, true,
				      memory_order_relaxed);
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

/* Q_BUSY_US in ns (docs/hw-spec.md, D.11). A block running now has been
 * charged up to its last tick of the coarse clock. */
uint64_t sim_queue_busy_ns_locked(struct vnpu_sim *sim, unsigned q)
{
	return atomic_load_explicit(&sim->queue[q].busy_cns,
				    memory_order_relaxed) /
	       sim->cfg.num_cores;
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
	uint64_t start = mono_ns();
	bool woken;

	sim_unlock(sim);
	woken = spin_for_change(&sim->wakes, seen, ns);
	sim_charge_skip(mono_ns() - start); /* the spin is nobody's */
	sim_lock(sim);
	/* A wake between the last poll and the lock is seen here: wakes
	 * only move under the lock. */
	return woken ||
	       atomic_load_explicit(&sim->wakes, memory_order_relaxed) != seen;
}

/* Whether a posted block waits for a core (pool lock). */
static bool pool_has_block_locked(const struct sim_pool *pool)
{
	for (unsigned i = 0; i < pool->nactive; i++) {
		const struct sim_launch *l = pool->active[i];

		if (l->next_block < l->nblocks && !atomic_load(&l->stop))
			return true;
	}
	return false;
}

/* Wakes the cores for the blocks posted without a wake-up (sim lock held;
 * the pool's is taken inside it). */
static void cp_kick_cores_locked(struct vnpu_sim *sim)
{
	struct sim_pool *pool = &sim->pool;

	if (!atomic_load_explicit(&pool->deferred, memory_order_relaxed))
		return;
	pthread_mutex_lock(&pool->lock);
	atomic_store_explicit(&pool->deferred, false, memory_order_relaxed);
	if (pool_has_block_locked(pool)) {
		atomic_fetch_add(&pool->posts, 1);
		pthread_cond_broadcast(&pool->work_cv);
	}
	pthread_mutex_unlock(&pool->lock);
}

void sim_wake_cp_vacant_locked(struct vnpu_sim *sim)
{
	struct sim_pool *pool = &sim->pool;

	if (sim->cfg.mode != VNPU_SIM_THREADS || sim->cp_role)
		return;
	/* Nobody is the command processor: a core takes the role. */
	pthread_mutex_lock(&pool->lock);
	atomic_fetch_add(&pool->posts, 1);
	pthread_cond_broadcast(&pool->work_cv);
	pthread_mutex_unlock(&pool->lock);
}

/* A boot, or an enabled queue with a command to fetch. */
static bool cp_has_work_locked(const struct vnpu_sim *sim)
{
	if (sim->boot_pending)
		return true;
	return sim_queues_runnable_locked(sim);
}

/*
 * The command processor, idle, takes a block that waits for a free core
 * and gives the role up to run it (lock held). Not while a fence is polled
 * or a reset waits: those need the role held.
 */
static struct sim_launch *cp_take_block_locked(struct vnpu_sim *sim,
					       uint32_t *block)
{
	struct sim_pool *pool = &sim->pool;
	struct sim_launch *l;

	pthread_mutex_lock(&pool->lock);
	l = pool_pick_locked(sim, block);
	if (l && atomic_load_explicit(&pool->deferred, memory_order_relaxed)) {
		atomic_store_explicit(&pool->deferred, false,
				      memory_order_relaxed);
		/* more blocks than this one: the cores take them */
		if (pool_has_block_locked(pool)) {
			atomic_fetch_add(&pool->posts, 1);
			pthread_cond_broadcast(&pool->work_cv);
		}
	}
	pthread_mutex_unlock(&pool->lock);
	if (l)
		sim->cp_role = false;
	return l;
}

/*
 * The command processor's loop (lock held, role taken). Returns a block it
 * took after giving the role up, or NULL at cp_stop.
 */
static struct sim_launch *cp_serve_locked(struct vnpu_sim *sim, uint32_t *block)
{
	struct sim_launch *l;

	while (!sim->cp_stop) {
		if (!sim->boot_pending) {
			/* a one-block launch posted before this step waits
			 * while the command processor works on: a core
			 * takes it */
			bool deferred = atomic_load_explicit(
				&sim->pool.deferred, memory_order_relaxed);

			/* A retirement's interrupt goes out with the next
			 * step's snapshot (sim_cp_step_locked drops the
			 * lock busy)... */
			if (sim_cp_step_locked(sim) != SIM_STEP_NONE) {
				if (deferred)
					cp_kick_cores_locked(sim);
				continue;
			}
		}
		if (sim->pending_vectors) {
			/* ...or here, before anything else */
			sim_cp_deliver_locked(sim);
			continue;
		}
		if (sim->boot_pending) {
			cp_kick_cores_locked(sim);
			sim_charge_flush();
			sim_unlock(sim);
			sim_cp_boot(sim);
			sim_charge_forget(); /* the boot is nobody's */
			sim_lock(sim);
			continue;
		}
		if (sim->cp_stop)
			break;
		if (atomic_load(&sim->cancel) || sim_any_waiting_locked(sim)) {
			/* let a reset finish; re-read fences periodically */
			cp_kick_cores_locked(sim);
			sim_charge_flush(); /* before sleeping */
			timed_wait_locked(sim, SIM_FENCE_POLL_NS);
			continue;
		}
		l = cp_take_block_locked(sim, block);
		if (l)
			return l;
		if (sim_queues_busy_locked(sim)) {
			/* launches on the cores: the cores wake us (a launch
			 * waiting for staging room waits for them). Only a
			 * short poll: a longer one takes the CPU from the
			 * cores on a loaded host. */
			if (!cp_poll_wake(sim, SIM_CP_SPIN_NS / 10) &&
			    !sim->cp_stop) {
				sim_charge_flush(); /* before sleeping */
				pthread_cond_wait(&sim->wake_cv, &sim->lock);
			}
		} else if (!cp_has_work_locked(sim) &&
			   !cp_poll_wake(sim, SIM_CP_SPIN_NS) &&
			   !cp_has_work_locked(sim) && !sim->cp_stop) {
			sim_charge_flush(); /* before sleeping */
			/* asleep, a doorbell's thread may step in (queue.c) */
			sim->cp_idle = true;
			pthread_cond_wait(&sim->wake_cv, &sim->lock);
			sim->cp_idle = false;
			while (sim->cp_lent)
				pthread_cond_wait(&sim->idle_cv, &sim->lock);
		}
	}
	return NULL;
}

/* Runs block b of l and accounts for it; true when it ended the launch. */
static bool core_run_block(struct vnpu_sim *sim, struct sim_launch *l,
			   uint32_t b)
{
	struct sim_pool *pool = &sim->pool;
	struct block_run r = {sim, l, sim_charge_start()};
	bool over;

	vnpu_kernel_set_stop_hook(launch_should_stop, &r);
	l->kernel->run(l->params, l->kbufs, b, l->nblocks);
	vnpu_kernel_set_stop_hook(NULL, NULL);
	pthread_mutex_lock(&pool->lock);
	/* under a lock, as every charge: a reset zeroes the counters with
	 * both held, and a charge from before it is dropped (its epoch) */
	sim_charge_add(sim, l->busy, l->epoch, r.start, sim->cfg.num_cores,
		       launch_width(sim, l));
	if (sim_charge_due())
		sim_charge_flush();
	l->running--;
	pool->running--;
	over = l->running == 0 &&
	       (l->next_block >= l->nblocks || atomic_load(&l->stop));
	if (pool->running == 0)
		pthread_cond_broadcast(&pool->idle_cv);
	pthread_mutex_unlock(&pool->lock);
	return over;
}

/*
 * A core: runs blocks while there are and a core is free; when there were
 * none, sleeps until a post or a kick (posts no longer `seen`). True when
 * it ended a launch (its queue is then steppable).
 */
static bool core_run(struct vnpu_sim *sim, unsigned seen)
{
	struct sim_pool *pool = &sim->pool;

	pthread_mutex_lock(&pool->lock);
	while (!pool->stop) {
		struct sim_launch *l;
		uint32_t b;

		l = pool_pick_locked(sim, &b);
		if (!l) {
			/* idle: what ran is charged */
			sim_charge_flush();
			/* posts move under the lock: none is missed */
			if (atomic_load(&pool->posts) == seen)
				pthread_cond_wait(&pool->work_cv, &pool->lock);
			break;
		}
		pthread_mutex_unlock(&pool->lock);
		if (core_run_block(sim, l, b))
			return true;
		seen = atomic_load(&pool->posts);
		pthread_mutex_lock(&pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	return false;
}

static void *device_main(void *arg)
{
	struct vnpu_sim *sim = arg;

	thread_start(sim);
	pthread_mutex_lock(&sim->lock);
	while (!sim->cp_stop) {
		struct sim_launch *l = NULL;
		uint32_t b = 0;
		unsigned seen = 0;
		bool over;

		if (!sim->cp_role) {
			sim->cp_role = true;
			l = cp_serve_locked(sim, &b);
			if (!l)
				break; /* cp_stop */
		} else {
			/* read with the role seen taken: a kick for a free
			 * role from now on is seen */
			seen = atomic_load(&sim->pool.posts);
		}
		/* pending_vectors is 0: the role delivers before it idles,
		 * and a core never collects any */
		pthread_mutex_unlock(&sim->lock);
		over = l ? core_run_block(sim, l, b) : core_run(sim, seen);
		pthread_mutex_lock(&sim->lock);
		/* the launch's queue can be stepped: by this thread if the
		 * role is free (the loop takes it), else by its holder */
		if (over && sim->cp_role)
			sim_wake_cp_locked(sim);
	}
	pthread_mutex_unlock(&sim->lock);
	thread_exit(sim);
	return NULL;
}

int sim_threads_start(struct vnpu_sim *sim)
{
	struct sim_pool *pool = &sim->pool;

	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work_cv, NULL);
	pthread_cond_init(&pool->idle_cv, NULL);
	atomic_init(&pool->deferred, false);
	pool->count = sim->cfg.num_cores;
	pool->nthreads = 0;
	for (unsigned i = 0; i <= sim->cfg.num_cores; i++) {
		int err = pthread_create(&pool->threads[i], NULL, device_main,
					 sim);

		if (err) {
			sim_threads_stop(sim);
			return -err;
		}
		pool->nthreads++;
	}
	return 0;
}

void sim_threads_stop(struct vnpu_sim *sim)
{
	struct sim_pool *pool = &sim->pool;

	pthread_mutex_lock(&sim->lock);
	sim->cp_stop = true;
	/* Stop a long command early; nothing it did is retired any more. */
	atomic_store(&sim->cancel, true);
	sim->epoch++;
	sim_wake_cp_locked(sim);
	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	/* Blocks still running return at their next poll. */
	for (unsigned i = 0; i < pool->nactive; i++)
		atomic_store(&pool->active[i]->stop, true);
	pthread_cond_broadcast(&pool->work_cv);
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&sim->lock);
	for (unsigned i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pool->nthreads = 0;
	pool->nactive = 0;
	pthread_cond_destroy(&pool->idle_cv);
	pthread_cond_destroy(&pool->work_cv);
	pthread_mutex_destroy(&pool->lock);
}
