// SPDX-License-Identifier: MIT
/*
 * The sim backend: an in-process driver for the firmware simulator. It
 * owns VRAM and the device's view of host memory (a registry of the host
 * ranges the device may master: page tables, rings, pinned BOs, the
 * firmware image; everything else is refused), boots firmware built from
 * the kernel table, builds page tables for one context, drives the queue
 * rings, takes interrupts as HAL callbacks, records faults and clears them
 * so later work runs, and resets a hung device (which is lost for good when
 * it does not come back).
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "fw_image.h"
#include "internal.h"
#include "vnpu/hw_fw.h"
#include "vnpu/hw_mmu.h"
#include "vnpu/hw_regs.h"
#include "vnpu/hw_status.h"
#include "vnpu_pt.h"
#include "vnpu_ring.h"
#include "vnpu_sim.h"

#define SIM_QUEUES 8
#define SIM_RING_LOG2 12
#define SIM_CTX 0
#define SIM_FW_VERSION 0x00010000u
/* Failures listed per queue to begin with; the list grows. */
#define SIM_FAILURES_INITIAL 64
#define SIM_BOOT_TIMEOUT_MS 5000
#define SIM_NO_WAITER UINT64_MAX

struct host_range {
	uint64_t start, len;
};

struct sim_queue {
	pthread_mutex_t lock;
	bool used;
	void *ring, *cpl;
	uint64_t next_seq;   /* seqno of the next command */
	uint64_t slot0_seq;  /* seqno written to ring slot 0 since enable */
	uint64_t done_floor; /* seqnos failed by a reset */
	uint64_t done;	     /* last retired (and scanned) */
	uint32_t tail;
	struct rt_failures fail;
	/* Interrupt filtering (see hal_irq): the smallest seqno a thread
	 * sleeps for (SIM_NO_WAITER: none). Read by the device's thread on
	 * every interrupt: kept off the cache lines the submitting thread
	 * writes. */
	_Alignas(64) _Atomic uint64_t wake_seq;
};

struct vnpurt_bdev {
	struct vnpu_sim *sim;
	const struct vnpurt_config *cfg;
	uint8_t *vram;
	uint64_t vram_size;
	unsigned cores;
	/* Every queue's command and completion ring, in one allocation that
	 * lives as long as the device: the device reaches it without the
	 * hosts lock (two of its three accesses per command). */
	uint8_t *rings;
	uint64_t rings_size;
	/* host memory the device may master (a mutex: its one reader is the
	 * device's thread, and a mutex costs half an uncontended rwlock) */
	pthread_mutex_t hosts_lock;
	struct host_range *hosts;
	size_t nhosts, hosts_cap;
	/* memory management */
	pthread_mutex_t mem_lock;
	struct vnpu_pt pt;
	void **tables;
	size_t ntables, tables_cap;
	struct rt_ranges vram_free, va_free;
	void *fw_image;
	size_t fw_size;
	/* queues and reset */
	pthread_rwlock_t reset_lock;
	struct sim_queue q[SIM_QUEUES];
	uint64_t reset_gen;
	/* Set (once, for good) when a reset could not bring the device back;
	 * lost_why is written before, under the reset lock, and never
	 * after. */
	_Atomic bool lost;
	char lost_why[160];
	/* interrupts: waiters sleep on irq_cond until irq_gen moves; the
	 * service thread sleeps on service_cond */
	pthread_mutex_t irq_lock;
	pthread_cond_t irq_cond, service_cond;
	uint64_t irq_gen;
	bool events_pending, stopping;
	pthread_t service;
	bool service_started;
	/* hang detection and faults */
	pthread_mutex_t hb_lock;
	uint32_t hb_last;
	uint64_t hb_change_ms;
	pthread_mutex_t fault_lock;
	uint64_t fault_va;
	uint32_t fault_reason;
	bool fault_write;
};

static uint64_t now_ms(void)
{
	return rt_now_ns() / 1000000u;
}

/* ---- host memory the device may master ------------------------------------ */

static bool host_register(struct vnpurt_bdev *d, const void *p, uint64_t len)
{
	uint64_t start = (uintptr_t)p;
	size_t i;

	pthread_mutex_lock(&d->hosts_lock);
	if (!rt_array_reserve((void **)&d->hosts, &d->hosts_cap, d->nhosts + 1,
			      sizeof(*d->hosts))) {
		pthread_mutex_unlock(&d->hosts_lock);
		return false;
	}
	for (i = d->nhosts; i > 0 && d->hosts[i - 1].start > start; i--)
		d->hosts[i] = d->hosts[i - 1];
	d->hosts[i].start = start;
	d->hosts[i].len = len;
	d->nhosts++;
	pthread_mutex_unlock(&d->hosts_lock);
	return true;
}

static void host_unregister(struct vnpurt_bdev *d, const void *p)
{
	uint64_t start = (uintptr_t)p;

	pthread_mutex_lock(&d->hosts_lock);
	for (size_t i = 0; i < d->nhosts; i++) {
		if (d->hosts[i].start == start) {
			memmove(&d->hosts[i], &d->hosts[i + 1],
				(d->nhosts - i - 1) * sizeof(*d->hosts));
			d->nhosts--;
			break;
		}
	}
	pthread_mutex_unlock(&d->hosts_lock);
}

/*
 * Whether [addr, addr + len) is covered by registered ranges (lock held):
 * one, or several that adjoin (the device moves physically contiguous runs
 * in one transfer, whatever blocks they were allocated as).
 */
static bool host_allowed(struct vnpurt_bdev *d, uint64_t addr, uint64_t len)
{
	size_t lo = 0, hi = d->nhosts;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d->hosts[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	for (lo--; lo < d->nhosts && d->hosts[lo].start <= addr; lo++) {
		uint64_t off = addr - d->hosts[lo].start;

		if (off > d->hosts[lo].len)
			return false;
		if (len <= d->hosts[lo].len - off)
			return true;
		/* Runs past this range: the rest must start where it ends. */
		len -= d->hosts[lo].len - off;
		addr = d->hosts[lo].start + d->hosts[lo].len;
	}
	return false;
}

/* Whether [addr, addr + len) lies in the rings (fixed until close). */
static bool in_rings(const struct vnpurt_bdev *d, uint64_t addr, uint64_t len)
{
	uint64_t off = addr - (uintptr_t)d->rings;

	return d->rings && addr >= (uintptr_t)d->rings &&
	       off <= d->rings_size && len <= d->rings_size - off;
}

static int hal_dma_read(void *opaque, uint64_t addr, void *buf, uint64_t len)
{
	struct vnpurt_bdev *d = opaque;
	bool ok;

	if (in_rings(d, addr, len)) {
		memcpy(buf, (const void *)(uintptr_t)addr, len);
		return 0;
	}
	pthread_mutex_lock(&d->hosts_lock);
	ok = host_allowed(d, addr, len);
	if (ok)
		memcpy(buf, (const void *)(uintptr_t)addr, len);
	pthread_mutex_unlock(&d->hosts_lock);
	return ok ? 0 : -1;
}

static int hal_dma_write(void *opaque, uint64_t addr, const void *buf,
			 uint64_t len)
{
	struct vnpurt_bdev *d = opaque;
	bool ok;

	if (in_rings(d, addr, len)) {
		uint64_t *dst = (uint64_t *)(uintptr_t)addr;

		/* Completion records, in 8-byte stores: a waiter reads their
		 * seqno while they are written (cpl_written). */
		if (!(addr % 8) && !(len % 8)) {
			for (uint64_t i = 0; i < len / 8; i++) {
				uint64_t w;

				memcpy(&w, (const uint8_t *)buf + i * 8, 8);
				__atomic_store_n(&dst[i], w, __ATOMIC_RELEASE);
			}
		} else {
			memcpy(dst, buf, len);
		}
		return 0;
	}
	pthread_mutex_lock(&d->hosts_lock);
	ok = host_allowed(d, addr, len);
	if (ok)
		memcpy((void *)(uintptr_t)addr, buf, len);
	pthread_mutex_unlock(&d->hosts_lock);
	return ok ? 0 : -1;
}

/* Wakes every waiter (irq_lock held); each re-registers what it waits
 * for if it sleeps again. */
static void wake_waiters_locked(struct vnpurt_bdev *d)
{
	d->irq_gen++;
	for (unsigned i = 0; i < SIM_QUEUES; i++)
		atomic_store(&d->q[i].wake_seq, SIM_NO_WAITER);
	pthread_cond_broadcast(&d->irq_cond);
}

static void wake_waiters(struct vnpurt_bdev *d)
{
	pthread_mutex_lock(&d->irq_lock);
	wake_waiters_locked(d);
	pthread_mutex_unlock(&d->irq_lock);
}

/* Whether seqno has a completion record: the record of its ring slot
 * names it (seqnos are never reused). Called on the device's thread right
 * after it wrote the records, so they are visible. */
static bool cpl_written(struct vnpurt_bdev *d, unsigned qi, uint64_t seqno)
{
	struct sim_queue *q = &d->q[qi];
	uint32_t mask = (1u << SIM_RING_LOG2) - 1;
	const struct vnpu_cpl *c =
		(const struct vnpu_cpl *)q->cpl +
		((seqno - q->slot0_seq) & mask);

	return __atomic_load_n(&c->seqno, __ATOMIC_ACQUIRE) == seqno;
}

/*
 * Every submission asks for a completion interrupt, but most have nobody
 * waiting: a queue interrupt wakes the sleeping threads only once the
 * oldest seqno one of them sleeps for has completed. No lock and no
 * system call otherwise. Device events always wake the service thread
 * and every waiter (they re-check faults, fatal errors and hangs).
 */
static void hal_irq(void *opaque, unsigned vector)
{
	struct vnpurt_bdev *d = opaque;
	unsigned qi = vector - VNPU_MSIX_VECTOR_QUEUE(0);
	uint64_t want;

	if (vector == VNPU_MSIX_VECTOR_EVENTS || qi >= SIM_QUEUES) {
		pthread_mutex_lock(&d->irq_lock);
		if (vector == VNPU_MSIX_VECTOR_EVENTS) {
			d->events_pending = true;
			pthread_cond_signal(&d->service_cond);
		}
		wake_waiters_locked(d);
		pthread_mutex_unlock(&d->irq_lock);
		return;
	}
	/* Read after the retirement that raised this interrupt: a waiter
	 * registering later finds that retirement in DONE_SEQ (wait_irq). */
	want = atomic_load(&d->q[qi].wake_seq);
	if (want != SIM_NO_WAITER && cpl_written(d, qi, want))
		wake_waiters(d);
}

static uint64_t hal_clock(void *opaque)
{
	return rt_now_ns();
}

static void hal_log(void *opaque, const char *msg)
{
	/* Guest errors of the in-process device are the runtime's own
	 * mistakes; they are visible through statuses, not printed. */
}

/* Page-aligned, zeroed host memory the device may master. */
static void *host_pages(struct vnpurt_bdev *d, uint64_t size)
{
	void *p;

	if (size > SIZE_MAX - VNPU_PAGE_SIZE)
		return NULL;
	p = aligned_alloc(VNPU_PAGE_SIZE, size);
	if (!p)
		return NULL;
	memset(p, 0, size);
	if (!host_register(d, p, size)) {
		free(p);
		return NULL;
	}
	return p;
}

static void host_pages_free(struct vnpurt_bdev *d, void *p)
{
	if (!p)
		return;
	host_unregister(d, p);
	free(p);
}

/* ---- page tables (in host memory) ----------------------------------------- */

static int pt_alloc_table(void *opaque, bool vram, uint64_t *addr)
{
	struct vnpurt_bdev *d = opaque;
	void *t;

	if (vram)
		return -1;
	if (!rt_array_reserve((void **)&d->tables, &d->tables_cap,
			      d->ntables + 1, sizeof(*d->tables)))
		return -1;
	t = host_pages(d, VNPU_PAGE_SIZE);
	if (!t)
		return -1;
	d->tables[d->ntables++] = t;
	*addr = (uintptr_t)t;
	return 0;
}

static uint64_t *pt_table_ptr(void *opaque, uint64_t addr, bool vram)
{
	return vram ? NULL : (uint64_t *)(uintptr_t)addr;
}

static const struct vnpu_pt_ops sim_pt_ops = {
	.alloc_table = pt_alloc_table,
	.table_ptr = pt_table_ptr,
};

/* ---- faults, events, hangs ------------------------------------------------ */

/* Records and clears a pending fault of the context so later work runs. */
static void handle_faults(struct vnpurt_bdev *d)
{
	uint32_t st;

	pthread_mutex_lock(&d->fault_lock);
	st = vnpu_sim_reg_read(d->sim,
			       VNPU_CTX_REG(SIM_CTX, VNPU_CTX_FAULT_STATUS));
	if (st & VNPU_FAULT_PENDING) {
		d->fault_va = vnpu_sim_reg_read(d->sim,
						VNPU_CTX_REG(SIM_CTX,
							     VNPU_CTX_FAULT_VA_LO)) |
			      (uint64_t)vnpu_sim_reg_read(
				      d->sim,
				      VNPU_CTX_REG(SIM_CTX,
						   VNPU_CTX_FAULT_VA_HI))
				      << 32;
		d->fault_reason = VNPU_FAULT_REASON(st);
		d->fault_write = st & VNPU_FAULT_WRITE;
		vnpu_sim_reg_write(d->sim,
				   VNPU_CTX_REG(SIM_CTX, VNPU_CTX_FAULT_STATUS),
				   VNPU_FAULT_PENDING);
	}
	pthread_mutex_unlock(&d->fault_lock);
}

/* The bottom half of the device-event interrupt. */
static void *service_main(void *arg)
{
	struct vnpurt_bdev *d = arg;

	pthread_mutex_lock(&d->irq_lock);
	while (!d->stopping) {
		uint32_t ev;

		if (!d->events_pending) {
			pthread_cond_wait(&d->service_cond, &d->irq_lock);
			continue;
		}
		d->events_pending = false;
		pthread_mutex_unlock(&d->irq_lock);
		ev = vnpu_sim_reg_read(d->sim, VNPU_REG_EVENT_STATUS);
		vnpu_sim_reg_write(d->sim, VNPU_REG_EVENT_STATUS, ev);
		if (ev & VNPU_EVENT_MMU_FAULT)
			handle_faults(d);
		pthread_mutex_lock(&d->irq_lock);
		/* Waiters re-check the device (fatal, faults). */
		wake_waiters_locked(d);
	}
	pthread_mutex_unlock(&d->irq_lock);
	return NULL;
}

/* Boots the firmware; false when the device refused it (BOOT_STATUS
 * says why) or did not answer. */
static bool boot(struct vnpurt_bdev *d)
{
	uint64_t bus = (uintptr_t)d->fw_image;
	uint64_t deadline = now_ms() + SIM_BOOT_TIMEOUT_MS;
	uint32_t status;

	vnpu_sim_reg_write(d->sim, VNPU_REG_EVENT_STATUS, VNPU_EVENT_BOOT_DONE);
	vnpu_sim_reg_write(d->sim, VNPU_REG_FW_ADDR_LO, (uint32_t)bus);
	vnpu_sim_reg_write(d->sim, VNPU_REG_FW_ADDR_HI, (uint32_t)(bus >> 32));
	vnpu_sim_reg_write(d->sim, VNPU_REG_FW_SIZE, (uint32_t)d->fw_size);
	vnpu_sim_reg_write(d->sim, VNPU_REG_CTRL, VNPU_CTRL_BOOT);
	/* OFF until the device has checked the image: then READY or the
	 * check that failed. */
	while ((status = vnpu_sim_reg_read(d->sim, VNPU_REG_BOOT_STATUS)) ==
	       VNPU_BOOT_OFF) {
		struct timespec ts = {0, 100000};

		if (now_ms() > deadline)
			return false;
		nanosleep(&ts, NULL);
	}
	return status == VNPU_BOOT_READY;
}

/* Queue registers and bookkeeping after enable (queue lock held). */
static bool queue_program(struct vnpurt_bdev *d, unsigned qi)
{
	struct sim_queue *q = &d->q[qi];

	q->tail = 0;
	q->slot0_seq = q->next_seq;
	return vnpu_ring_program(d->sim, qi, (uintptr_t)q->ring,
				 (uintptr_t)q->cpl, SIM_RING_LOG2, SIM_CTX,
				 true);
}

/* Marks the device lost for good (reset lock held for writing). */
static void set_lost(struct vnpurt_bdev *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_lost(struct vnpurt_bdev *d, const char *fmt, ...)
{
	va_list ap;

	if (atomic_load(&d->lost))
		return;
	va_start(ap, fmt);
	vsnprintf(d->lost_why, sizeof(d->lost_why), fmt, ap);
	va_end(ap);
	atomic_store(&d->lost, true);
}

/*
 * Resets the device, boots it again and re-creates the context and the
 * queues; every pending command fails with DEVICE_RESET. When the device
 * does not come back (it refuses its firmware or a queue), it is lost:
 * the pending commands fail with DEVICE_LOST and every later submission
 * fails, so that nobody waits for a queue that will never run. gen is the
 * reset generation the caller saw: a reset another thread made is not
 * repeated.
 */
static void device_reset(struct vnpurt_bdev *d, uint64_t gen)
{
	uint32_t status;

	pthread_rwlock_wrlock(&d->reset_lock);
	if (d->reset_gen != gen || atomic_load(&d->lost)) {
		pthread_rwlock_unlock(&d->reset_lock);
		return;
	}
	d->reset_gen++;
	vnpu_sim_reset(d->sim);
	if (!boot(d)) {
		uint32_t st = vnpu_sim_reg_read(d->sim, VNPU_REG_BOOT_STATUS);

		if (st == VNPU_BOOT_OFF)
			set_lost(d,
				 "it hung or failed, was reset, and then did "
				 "not boot within %d ms",
				 SIM_BOOT_TIMEOUT_MS);
		else
			set_lost(d,
				 "it hung or failed, was reset, and then "
				 "refused its firmware (BOOT_STATUS 0x%x: %s)",
				 st, vnpu_boot_status_name(st));
	} else {
		vnpu_pt_enable_ctx(&d->pt, d->sim, SIM_CTX);
		for (unsigned i = 0; i < SIM_QUEUES && !atomic_load(&d->lost);
		     i++) {
			pthread_mutex_lock(&d->q[i].lock);
			if (!queue_program(d, i))
				set_lost(d,
					 "it hung or failed, was reset, and "
					 "then refused queue %u",
					 i);
			pthread_mutex_unlock(&d->q[i].lock);
		}
	}
	/* The verdict first: a waiter may take the failures as soon as a
	 * queue's done moves. */
	status = atomic_load(&d->lost) ? VNPURT_STATUS_DEVICE_LOST
				       : VNPURT_STATUS_DEVICE_RESET;
	for (unsigned i = 0; i < SIM_QUEUES; i++) {
		struct sim_queue *q = &d->q[i];

		pthread_mutex_lock(&q->lock);
		if (q->next_seq - 1 > q->done) {
			struct vnpurt_failure f = {
				.first_seq = q->done + 1,
				.last_seq = q->next_seq - 1,
				.status = status,
			};

			rt_failures_push(&q->fail, &f);
		}
		q->done = q->done_floor = q->next_seq - 1;
		pthread_mutex_unlock(&q->lock);
	}
	pthread_mutex_lock(&d->hb_lock);
	d->hb_last = 0;
	d->hb_change_ms = now_ms();
	pthread_mutex_unlock(&d->hb_lock);
	pthread_rwlock_unlock(&d->reset_lock);
	wake_waiters(d);
}

/* Called while work is pending: resets a dead device (fatal, or heartbeat
 * standing still for the timeout). */
static void check_hang(struct vnpurt_bdev *d)
{
	uint32_t hb, status;
	uint64_t now, gen;
	bool dead;

	/* A lost device is not tried again: nothing is pending on it. */
	if (atomic_load(&d->lost))
		return;
	pthread_mutex_lock(&d->hb_lock);
	hb = vnpu_sim_reg_read(d->sim, VNPU_REG_HEARTBEAT);
	status = vnpu_sim_reg_read(d->sim, VNPU_REG_STATUS);
	/*
	 * Read under the lock: a time taken before it could be older than
	 * the hb_change_ms another thread just stored, and the difference
	 * would wrap into a "timeout" (a spurious reset under contention).
	 */
	now = now_ms();
	if (hb != d->hb_last) {
		d->hb_last = hb;
		d->hb_change_ms = now;
	}
	dead = (status & VNPU_STATUS_FATAL) ||
	       now - d->hb_change_ms >= d->cfg->sim_timeout_ms;
	pthread_mutex_unlock(&d->hb_lock);
	if (!dead)
		return;
	pthread_rwlock_rdlock(&d->reset_lock);
	gen = d->reset_gen;
	pthread_rwlock_unlock(&d->reset_lock);
	device_reset(d, gen);
}

/* Reads DONE_SEQ and scans the new completion records (queue lock held). */
static void update_done(struct vnpurt_bdev *d, unsigned qi)
{
	struct sim_queue *q = &d->q[qi];
	struct vnpu_ring_view v = {q->ring, q->cpl, 1u << SIM_RING_LOG2};
	uint64_t done = vnpu_ring_done_seq(d->sim, qi);
	bool faults = false;

	if (done < q->done_floor || done >= q->next_seq)
		done = q->done_floor > q->done ? q->done_floor : q->done;
	for (uint64_t s = q->done + 1; s <= done; s++) {
		struct vnpu_cpl c;
		struct vnpurt_failure f;

		vnpu_ring_read_cpl(&v, (uint32_t)((s - q->slot0_seq) &
						  (v.entries - 1)),
				   &c);
		if (c.status == VNPU_STATUS_OK)
			continue;
		memset(&f, 0, sizeof(f));
		f.first_seq = f.last_seq = s;
		f.status = c.status;
		f.info = c.info;
		if (c.status == VNPU_STATUS_MMU_FAULT ||
		    c.status == VNPU_STATUS_CONTEXT_FAULTED) {
			if (!faults)
				handle_faults(d);
			faults = true;
			pthread_mutex_lock(&d->fault_lock);
			if (c.status == VNPU_STATUS_MMU_FAULT &&
			    d->fault_va == c.info) {
				f.fault_reason = d->fault_reason;
				f.fault_write = d->fault_write;
			}
			pthread_mutex_unlock(&d->fault_lock);
		}
		rt_failures_push(&q->fail, &f);
	}
	if (done > q->done)
		q->done = done;
}

/* The wakes so far; taken before the caller checks the queue. */
static uint64_t irq_gen(struct vnpurt_bdev *d)
{
	uint64_t gen;

	pthread_mutex_lock(&d->irq_lock);
	gen = d->irq_gen;
	pthread_mutex_unlock(&d->irq_lock);
	return gen;
}

/*
 * Blocks until seqno of queue qi may have completed (its interrupt, or a
 * device event or reset), or timeout_ms. The caller found seqno not
 * completed after taking gen. Once seqno is registered, DONE_SEQ is read
 * again: a retirement it does not show yet raises its interrupt after the
 * registration, so hal_irq sees it.
 */
static void wait_irq(struct vnpurt_bdev *d, unsigned qi, uint64_t seqno,
		     uint64_t gen, unsigned timeout_ms)
{
	struct sim_queue *q = &d->q[qi];
	struct timespec ts;
	bool registered = false;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)timeout_ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_mutex_lock(&d->irq_lock);
	if (d->irq_gen == gen) {
		if (atomic_load(&q->wake_seq) > seqno)
			atomic_store(&q->wake_seq, seqno);
		registered = true;
	}
	pthread_mutex_unlock(&d->irq_lock);
	/* Not under irq_lock: register reads may deliver interrupts. */
	if (!registered || vnpu_ring_done_seq(d->sim, qi) >= seqno)
		return;
	pthread_mutex_lock(&d->irq_lock);
	/* Waking clears every registration and moves irq_gen. */
	while (d->irq_gen == gen) {
		if (pthread_cond_timedwait(&d->irq_cond, &d->irq_lock, &ts))
			break;
	}
	pthread_mutex_unlock(&d->irq_lock);
}

/* ---- backend operations ---------------------------------------------------- */

static int sim_device_count(const struct vnpurt_config *cfg, char *why,
			    size_t why_len)
{
	return 1;
}

static void sim_close(struct vnpurt_bdev *d)
{
	if (!d)
		return;
	if (d->service_started) {
		pthread_mutex_lock(&d->irq_lock);
		d->stopping = true;
		pthread_cond_signal(&d->service_cond);
		pthread_mutex_unlock(&d->irq_lock);
		pthread_join(d->service, NULL);
	}
	vnpu_sim_destroy(d->sim);
	host_pages_free(d, d->rings);
	for (unsigned i = 0; i < SIM_QUEUES; i++) {
		rt_failures_fini(&d->q[i].fail);
		pthread_mutex_destroy(&d->q[i].lock);
	}
	for (size_t i = 0; i < d->ntables; i++)
		host_pages_free(d, d->tables[i]);
	free(d->tables);
	host_pages_free(d, d->fw_image);
	if (d->vram)
		munmap(d->vram, d->vram_size);
	rt_ranges_fini(&d->vram_free);
	rt_ranges_fini(&d->va_free);
	free(d->hosts);
	pthread_mutex_destroy(&d->hosts_lock);
	pthread_rwlock_destroy(&d->reset_lock);
	pthread_mutex_destroy(&d->mem_lock);
	pthread_mutex_destroy(&d->irq_lock);
	pthread_cond_destroy(&d->irq_cond);
	pthread_cond_destroy(&d->service_cond);
	pthread_mutex_destroy(&d->hb_lock);
	pthread_mutex_destroy(&d->fault_lock);
	free(d);
}

static vnpu_error_t sim_open(int index, const struct vnpurt_config *cfg,
			     const struct vnpurt_va_window *window,
			     struct vnpurt_bdev **out)
{
	struct vnpurt_bdev *d;
	struct vnpu_sim_config sc;
	struct vnpu_sim_hal hal = {0};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t fw_cap = vnpu_fw_image_size();
	uint64_t ring_bytes, cpl_bytes;
	vnpu_error_t err = VNPU_ERROR_OUT_OF_MEMORY;
	int rc;

	if (index != 0)
		return rt_fail(VNPU_ERROR_NO_DEVICE, "sim has one device");
	d = aligned_alloc(_Alignof(struct vnpurt_bdev), sizeof(*d));
	if (!d)
		return rt_fail(err, "allocating the sim device");
	memset(d, 0, sizeof(*d));
	d->cfg = cfg;
	pthread_mutex_init(&d->hosts_lock, NULL);
	pthread_rwlock_init(&d->reset_lock, NULL);
	pthread_mutex_init(&d->mem_lock, NULL);
	pthread_mutex_init(&d->irq_lock, NULL);
	pthread_cond_init(&d->irq_cond, NULL);
	pthread_cond_init(&d->service_cond, NULL);
	pthread_mutex_init(&d->hb_lock, NULL);
	pthread_mutex_init(&d->fault_lock, NULL);
	for (unsigned i = 0; i < SIM_QUEUES; i++) {
		pthread_mutex_init(&d->q[i].lock, NULL);
		atomic_init(&d->q[i].wake_seq, SIM_NO_WAITER);
	}
	atomic_init(&d->lost, false);
	d->vram_size = cfg->sim_vram_bytes;
	d->cores = cfg->sim_cores ? cfg->sim_cores
				  : (unsigned)(cpus < 1 ? 1
						: cpus > 16 ? 16
							    : cpus);
	/* Untouched VRAM pages cost nothing. */
	d->vram = mmap(NULL, d->vram_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (d->vram == MAP_FAILED) {
		d->vram = NULL;
		goto fail;
	}
	if (rt_ranges_init(&d->vram_free, 0, d->vram_size) ||
	    rt_ranges_init(&d->va_free, window->start, window->size))
		goto fail;
	d->fw_image = host_pages(d, (fw_cap + VNPU_PAGE_SIZE - 1) &
					    ~(VNPU_PAGE_SIZE - 1));
	if (!d->fw_image ||
	    vnpu_fw_image_build(d->fw_image, fw_cap, SIM_FW_VERSION,
				"libvnpurt-sim", &d->fw_size))
		goto fail;
	ring_bytes = (uint64_t)VNPU_CMD_SIZE << SIM_RING_LOG2;
	cpl_bytes = (uint64_t)VNPU_CPL_SIZE << SIM_RING_LOG2;
	d->rings_size = SIM_QUEUES * (ring_bytes + cpl_bytes);
	d->rings = host_pages(d, d->rings_size);
	if (!d->rings)
		goto fail;
	for (unsigned i = 0; i < SIM_QUEUES; i++) {
		struct sim_queue *q = &d->q[i];

		/* command rings first, then completion rings */
		q->ring = d->rings + i * ring_bytes;
		q->cpl = d->rings + SIM_QUEUES * ring_bytes + i * cpl_bytes;
		q->next_seq = 1;
		if (!rt_failures_init(&q->fail, SIM_FAILURES_INITIAL))
			goto fail;
	}
	memset(&sc, 0, sizeof(sc));
	sc.vram = d->vram;
	sc.vram_size = d->vram_size;
	sc.num_queues = SIM_QUEUES;
	sc.num_contexts = 1;
	sc.num_cores = d->cores;
	sc.mode = VNPU_SIM_THREADS;
	sc.test_mode = cfg->sim_test_mode;
	hal.opaque = d;
	hal.dma_read = hal_dma_read;
	hal.dma_write = hal_dma_write;
	hal.irq = hal_irq;
	hal.clock_ns = hal_clock;
	hal.log = hal_log;
	rc = vnpu_sim_create(&sc, &hal, &d->sim);
	if (rc) {
		err = VNPU_ERROR_DEVICE_ERROR;
		rt_fail(err, "creating the simulator: %s", strerror(-rc));
		goto fail_quiet;
	}
	if (pthread_create(&d->service, NULL, service_main, d))
		goto fail;
	d->service_started = true;
	if (!boot(d)) {
		uint32_t st = vnpu_sim_reg_read(d->sim, VNPU_REG_BOOT_STATUS);

		err = VNPU_ERROR_DEVICE_ERROR;
		rt_fail(err,
			"the simulated device refused the firmware "
			"(BOOT_STATUS 0x%x: %s)",
			st, vnpu_boot_status_name(st));
		goto fail_quiet;
	}
	if (vnpu_pt_init(&d->pt, &sim_pt_ops, d, false))
		goto fail;
	vnpu_pt_enable_ctx(&d->pt, d->sim, SIM_CTX);
	for (unsigned i = 0; i < SIM_QUEUES; i++) {
		if (!queue_program(d, i)) {
			err = VNPU_ERROR_DEVICE_ERROR;
			rt_fail(err, "the simulated device refused queue %u", i);
			goto fail_quiet;
		}
	}
	d->hb_change_ms = now_ms();
	*out = d;
	return VNPU_SUCCESS;
fail:
	rt_fail(err, "setting up the simulated device");
fail_quiet:
	sim_close(d);
	return err;
}

static void sim_query(struct vnpurt_bdev *d, struct vnpurt_dev_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "vnpu (sim)");
	info->hw_version = vnpu_sim_reg_read(d->sim, VNPU_REG_HW_VERSION);
	info->fw_version = vnpu_sim_reg_read(d->sim, VNPU_REG_FW_VERSION);
	snprintf(info->fw_build, sizeof(info->fw_build), "libvnpurt-sim");
	info->cores = VNPU_CAPS_CORES(vnpu_sim_reg_read(d->sim, VNPU_REG_CAPS));
	info->queues = SIM_QUEUES;
	info->vram_size = d->vram_size;
	pthread_mutex_lock(&d->mem_lock);
	info->vram_free = d->vram_free.free_bytes;
	pthread_mutex_unlock(&d->mem_lock);
	info->ring_entries = 1u << SIM_RING_LOG2;
	info->reset_count = vnpu_sim_reg_read(d->sim, VNPU_REG_RESET_COUNT);
}

/* The largest free range of r (the caller locks). */
static uint64_t largest_free(const struct rt_ranges *r)
{
	uint64_t max = 0;

	for (size_t i = 0; i < r->n; i++)
		if (r->free[i].size > max)
			max = r->free[i].size;
	return max;
}

static vnpu_error_t sim_bo_create(struct vnpurt_bdev *d, uint64_t size,
				  enum vnpurt_domain domain,
				  struct vnpurt_bo *bo)
{
	uint64_t bytes, va, addr = 0;
	void *cpu = NULL;

	if (!size || size > VNPU_VA_LIMIT)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			       "more than the device's address space");
	bytes = (size + VNPU_PAGE_SIZE - 1) & ~(VNPU_PAGE_SIZE - 1);
	if (domain == VNPURT_DOMAIN_HOST) {
		cpu = host_pages(d, bytes);
		if (!cpu)
			return rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
				       "host memory exhausted: %" PRIu64
				       " bytes of pinned memory asked",
				       bytes);
		addr = (uintptr_t)cpu;
	}
	pthread_mutex_lock(&d->mem_lock);
	if (domain == VNPURT_DOMAIN_VRAM &&
	    !rt_ranges_alloc(&d->vram_free, bytes, VNPU_PAGE_SIZE, &addr)) {
		uint64_t free_b = d->vram_free.free_bytes;

		/* Enough free but split: the largest range says so. */
		if (free_b >= bytes)
			rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
				"device memory exhausted: %" PRIu64
				" bytes asked, %" PRIu64 " of %" PRIu64
				" bytes free, the largest range %" PRIu64,
				bytes, free_b, d->vram_size,
				largest_free(&d->vram_free));
		else
			rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
				"device memory exhausted: %" PRIu64
				" bytes asked, %" PRIu64 " of %" PRIu64
				" bytes free",
				bytes, free_b, d->vram_size);
		goto nomem;
	}
	/* A guard page after each BO: overruns fault. */
	if (!rt_ranges_alloc(&d->va_free, bytes + VNPU_PAGE_SIZE,
			     VNPU_PAGE_SIZE, &va)) {
		rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			"device address space exhausted: %" PRIu64
			" bytes asked, %" PRIu64 " bytes free",
			bytes + (uint64_t)VNPU_PAGE_SIZE, d->va_free.free_bytes);
		if (domain == VNPURT_DOMAIN_VRAM)
			rt_ranges_free(&d->vram_free, addr, bytes);
		goto nomem;
	}
	if (vnpu_pt_map(&d->pt, va, domain == VNPURT_DOMAIN_VRAM, addr, bytes,
			VNPU_PTE_READ | VNPU_PTE_WRITE)) {
		rt_fail(VNPU_ERROR_OUT_OF_MEMORY,
			"host memory exhausted: no page table to map %" PRIu64
			" bytes",
			bytes);
		vnpu_pt_unmap(&d->pt, va, bytes);
		rt_ranges_free(&d->va_free, va, bytes + VNPU_PAGE_SIZE);
		if (domain == VNPURT_DOMAIN_VRAM)
			rt_ranges_free(&d->vram_free, addr, bytes);
		goto nomem;
	}
	pthread_mutex_unlock(&d->mem_lock);
	bo->va = va;
	bo->cpu = cpu;
	bo->size = bytes;
	bo->domain = domain;
	bo->handle = addr;
	return VNPU_SUCCESS;
nomem:
	pthread_mutex_unlock(&d->mem_lock);
	host_pages_free(d, cpu);
	return VNPU_ERROR_OUT_OF_MEMORY;
}

static void sim_bo_free(struct vnpurt_bdev *d, struct vnpurt_bo *bo)
{
	pthread_mutex_lock(&d->mem_lock);
	vnpu_pt_unmap(&d->pt, bo->va, bo->size);
	vnpu_pt_tlb_invalidate(d->sim, SIM_CTX);
	rt_ranges_free(&d->va_free, bo->va, bo->size + VNPU_PAGE_SIZE);
	if (bo->domain == VNPURT_DOMAIN_VRAM)
		rt_ranges_free(&d->vram_free, bo->handle, bo->size);
	pthread_mutex_unlock(&d->mem_lock);
	if (bo->domain == VNPURT_DOMAIN_HOST)
		host_pages_free(d, bo->cpu);
	memset(bo, 0, sizeof(*bo));
}

static vnpu_error_t sim_queue_create(struct vnpurt_bdev *d, int priority,
				     unsigned *queue)
{
	for (unsigned i = 0; i < SIM_QUEUES; i++) {
		pthread_mutex_lock(&d->q[i].lock);
		if (!d->q[i].used) {
			d->q[i].used = true;
			pthread_mutex_unlock(&d->q[i].lock);
			*queue = i;
			return VNPU_SUCCESS;
		}
		pthread_mutex_unlock(&d->q[i].lock);
	}
	return VNPU_ERROR_OUT_OF_MEMORY;
}

static void sim_queue_destroy(struct vnpurt_bdev *d, unsigned queue)
{
	pthread_mutex_lock(&d->q[queue].lock);
	d->q[queue].used = false;
	pthread_mutex_unlock(&d->q[queue].lock);
}

static vnpu_error_t sim_submit(struct vnpurt_bdev *d, unsigned qi,
			       const struct vnpu_cmd *cmds, unsigned n,
			       uint64_t *seqno)
{
	struct sim_queue *q = &d->q[qi];
	struct vnpu_ring_view v = {q->ring, q->cpl, 1u << SIM_RING_LOG2};

	if (qi >= SIM_QUEUES || !n || n > v.entries / 2)
		return VNPU_ERROR_INVALID_VALUE;
	for (;;) {
		uint64_t gen, need;

		pthread_rwlock_rdlock(&d->reset_lock);
		/* Under the reset lock: nothing enters a lost device's rings
		 * (a reset fails what is in them). */
		if (atomic_load(&d->lost)) {
			pthread_rwlock_unlock(&d->reset_lock);
			return VNPU_ERROR_DEVICE_RESET;
		}
		pthread_mutex_lock(&q->lock);
		if (q->next_seq - 1 - q->done + n <= v.entries - 1)
			break;
		pthread_mutex_unlock(&q->lock);
		/* Full: wait for the commands that make room. */
		gen = irq_gen(d);
		pthread_mutex_lock(&q->lock);
		update_done(d, qi);
		need = q->next_seq - 1 + n - (v.entries - 1);
		if (q->next_seq - 1 - q->done + n <= v.entries - 1)
			break;
		pthread_mutex_unlock(&q->lock);
		pthread_rwlock_unlock(&d->reset_lock);
		check_hang(d);
		wait_irq(d, qi, need, gen, 2);
	}
	for (unsigned i = 0; i < n; i++) {
		struct vnpu_cmd c = cmds[i];

		/* The last command of a submission wakes waiters. */
		if (i == n - 1)
			c.hdr.flags |= VNPU_CMD_F_IRQ;
		vnpu_ring_write(&v, q->tail, &c, q->next_seq++);
		q->tail = (q->tail + 1) & (v.entries - 1);
	}
	vnpu_ring_doorbell(d->sim, qi, q->tail);
	*seqno = q->next_seq - 1;
	pthread_mutex_unlock(&q->lock);
	pthread_rwlock_unlock(&d->reset_lock);
	return VNPU_SUCCESS;
}

static uint64_t sim_completed(struct vnpurt_bdev *d, unsigned qi)
{
	struct sim_queue *q = &d->q[qi];
	uint64_t done;

	pthread_mutex_lock(&q->lock);
	update_done(d, qi);
	done = q->done;
	pthread_mutex_unlock(&q->lock);
	return done;
}

/* A spin-wait's first part without yielding the CPU (ns). */
#define SIM_SPIN_PAUSE_NS 1000u

/*
 * Spins up to VNPU_SIM_SPIN_US for seqno's completion record, reading the
 * completion ring without locks. A sleeping waiter is woken by the
 * interrupt through a condition variable, and that wake-up (10-50 us on a
 * busy or virtual machine) was the slow mode of a bimodal launch + sync
 * round trip; a short command completes well within the spin. After the
 * first microsecond it yields between reads: the device's thread may be
 * waiting for this very CPU (the scheduler often puts a waker and the
 * thread it woke on one CPU).
 */
static bool spin_for(struct vnpurt_bdev *d, unsigned qi, uint64_t seqno)
{
	uint64_t start, now;

	if (!d->cfg->sim_spin_us)
		return false;
	start = now = rt_now_ns();
	do {
		for (int i = 0; i < 32; i++) {
			if (cpl_written(d, qi, seqno))
				return true;
			rt_cpu_relax();
		}
		if (now - start >= SIM_SPIN_PAUSE_NS)
			sched_yield();
		now = rt_now_ns();
	} while (now - start < d->cfg->sim_spin_us * 1000ull);
	return cpl_written(d, qi, seqno);
}

static vnpu_error_t sim_wait(struct vnpurt_bdev *d, unsigned qi,
			     uint64_t seqno, unsigned timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;
	bool spun = false;

	for (;;) {
		uint64_t gen = irq_gen(d), now;

		if (sim_completed(d, qi) >= seqno)
			return VNPU_SUCCESS;
		if (!spun) {
			spun = true;
			if (spin_for(d, qi, seqno))
				continue;
		}
		check_hang(d);
		now = now_ms();
		if (now >= deadline)
			return VNPU_ERROR_TIMEOUT;
		/* Interrupts wake us; the slice bounds a lost one. */
		wait_irq(d, qi, seqno, gen,
			 (unsigned)(deadline - now < 5 ? deadline - now : 5));
	}
}

static bool sim_take_failure(struct vnpurt_bdev *d, unsigned qi,
			     struct vnpurt_failure *f)
{
	struct sim_queue *q = &d->q[qi];
	bool got;

	pthread_mutex_lock(&q->lock);
	got = rt_failures_take(&q->fail, f);
	pthread_mutex_unlock(&q->lock);
	return got;
}

static bool sim_lost(struct vnpurt_bdev *d, char *why, size_t why_len)
{
	/* lost_why is final once lost is seen set. */
	if (!atomic_load(&d->lost))
		return false;
	snprintf(why, why_len, "%s", d->lost_why);
	return true;
}

static bool sim_test_mode(struct vnpurt_bdev *d)
{
	return d->cfg->sim_test_mode;
}

void vnpurt_sim_test_corrupt_firmware(struct vnpurt_bdev *d)
{
	struct vnpu_fw_header *h = d->fw_image;

	/* The device reads the image only at boot, under the reset lock. */
	pthread_rwlock_wrlock(&d->reset_lock);
	h->magic = ~VNPU_FW_MAGIC;
	pthread_rwlock_unlock(&d->reset_lock);
}

bool vnpurt_sim_test_failure_list(struct vnpurt_bdev *d, unsigned qi,
				  size_t cap, bool grows)
{
	bool ok;

	if (qi >= SIM_QUEUES)
		return false;
	pthread_mutex_lock(&d->q[qi].lock);
	ok = rt_failures_resize(&d->q[qi].fail, cap, grows);
	pthread_mutex_unlock(&d->q[qi].lock);
	return ok;
}

const struct vnpurt_backend_ops vnpurt_backend_sim = {
	.name = "sim",
	.device_count = sim_device_count,
	.open = sim_open,
	.close = sim_close,
	.query = sim_query,
	.bo_create = sim_bo_create,
	.bo_free = sim_bo_free,
	.queue_create = sim_queue_create,
	.queue_destroy = sim_queue_destroy,
	.submit = sim_submit,
	.wait = sim_wait,
	.completed = sim_completed,
	.take_failure = sim_take_failure,
	.lost = sim_lost,
	.test_mode = sim_test_mode,
};
