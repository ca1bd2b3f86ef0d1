/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vnpu DRM accel driver: the device, per-file contexts, user queues, jobs.
 */
#ifndef VNPU_DRV_H
#define VNPU_DRV_H

#include <linux/dma-fence.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>
#include <drm/gpu_scheduler.h>

#include <vnpu/hw_cmd.h>
#include <vnpu/hw_fw.h>
#include <vnpu/hw_mmu.h>
#include <vnpu/hw_regs.h>
#include <vnpu/hw_status.h>
#include <uapi/drm/vnpu_accel.h>

#define VNPU_DRIVER_NAME "vnpu"
#define VNPU_FW_NAME	 "vnpu/vnpu.fw"

/* Device VA layout of every context: nothing below 1 MiB (catches NULL). */
#define VNPU_VA_START BIT_ULL(20)
#define VNPU_VA_END   VNPU_VA_LIMIT

/* Ring size the driver programs (capped by CAPS). */
#define VNPU_DRV_RING_LOG2 10
#define VNPU_QUEUE_DEPTH   64 /* unfinished jobs per user queue */
#define VNPU_EVENT_LOG_LEN 64
#define VNPU_MAX_HEARTBEAT_PERIOD_US 10000 /* the spec's is 1000 */
#define VNPU_EVENT_MSG_LEN 112
/* The device stops an aborted command in well under 10 ms. */
#define VNPU_ABORT_WAIT_US (500 * USEC_PER_MSEC)

extern unsigned int vnpu_job_timeout_ms;
extern bool vnpu_allow_test_inject;

struct vnpu_device;
struct vnpu_ctx;

/* What one user may hold a share of (vnpu_quota.c), as the UAPI numbers. */
enum vnpu_quota_res {
	VNPU_QUOTA_CONTEXTS = DRM_VNPU_QUOTA_CONTEXTS,
	VNPU_QUOTA_VRAM = DRM_VNPU_QUOTA_VRAM,
	VNPU_QUOTA_PINNED = DRM_VNPU_QUOTA_PINNED,
	VNPU_QUOTA_RES_COUNT
};

/* One user (effective uid) of the device and what it holds. */
struct vnpu_user {
	struct vnpu_device *vdev;
	kuid_t uid;
	u32 refs;			  /* under vdev->users_lock */
	u64 used[VNPU_QUOTA_RES_COUNT]; /* under vdev->users_lock */
};

/* One page-table page in DMA-coherent host memory. */
struct vnpu_pt_table {
	u64 *entries;
	dma_addr_t dma;
	struct vnpu_pt_table **child; /* levels 0 and 1 only */
	u32 live;		      /* valid entries (vnpu_mmu.c) */
	struct list_head free_node;   /* vnpu_bo_mapping.pt_free */
};

/* A hardware queue: its ring, its scheduler and the jobs in its ring. */
struct vnpu_hwq {
	struct vnpu_device *vdev;
	u32 index;
	u32 entries;
	u32 ring_log2;
	struct vnpu_cmd *ring; /* entries commands */
	dma_addr_t ring_dma;
	struct vnpu_cpl *cpl; /* entries completion records */
	dma_addr_t cpl_dma;

	struct drm_gpu_scheduler sched;
	struct workqueue_struct *submit_wq; /* the scheduler's */
	atomic_t users; /* user queues on it (vnpu_pick_hwq) */
	bool sched_ready;

	spinlock_t fence_lock;	   /* of the hardware fences */
	spinlock_t lock;	   /* all fields below */
	u32 tail;		   /* next free ring slot */
	u64 next_seqno;		   /* next command seqno, never 0 */
	int cur_ctx;		   /* context in Q_CTX, -1 none */
	/*
	 * Contexts waiting for the queue, in the order they asked: each with
	 * the scheduled fence of the job that asked (vnpu_hwq.c).
	 */
	struct {
		struct dma_fence *fence;
		int ctx;
		bool parked; /* the context's jobs wait in `parked` */
		u32 credits; /* of the job that asked (ring slots) */
		struct vnpu_hwq *hwq; /* for cb */
		struct dma_fence_cb cb; /* queues resume_work */
	} switch_req[VNPU_MAX_CONTEXTS];
	u32 switch_head, switch_count;
	DECLARE_BITMAP(switch_asked, VNPU_MAX_CONTEXTS);
	struct list_head inflight; /* vnpu_job, ring order */
	/*
	 * Jobs a preemption took out of the ring (vnpu_reset.c), ring order;
	 * each context's go back when its switch request comes first and the
	 * ring is empty (resume_work, or whoever empties the ring).
	 */
	struct list_head parked;
	struct work_struct resume_work;
	/* Signalled when the ring has drained, for a switch (prepare_job). */
	struct dma_fence *drain_fence;
	/* Between a device reset and its recovery: nothing is put back. */
	bool resetting;
	u64 fence_ctx;
	/* What the timeout check last measured progress against. */
	u64 last_done_seq;
	u32 last_heartbeat;
	ktime_t last_judged;
	int judged_resets; /* the reset count then */
	/*
	 * The job at the head of the ring (compared, never dereferenced: set
	 * whenever the head changes), since when it is there and Q_BUSY_US
	 * then. limit_work has it judged once it may have used its limit.
	 */
	const struct vnpu_job *head_job;
	ktime_t head_since;
	u32 head_busy_us;
	struct delayed_work limit_work;
	char name[16];
};

/* Recorded driver events, shown as debugfs fw_log. */
struct vnpu_event_log {
	spinlock_t lock; /* all fields, taken from interrupt context */
	u32 next;
	u32 count;
	struct {
		u64 ns;
		char msg[VNPU_EVENT_MSG_LEN];
	} entry[VNPU_EVENT_LOG_LEN];
};

struct vnpu_device {
	struct drm_device drm;
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *vram_map;	  /* BAR4, write-combined */
	resource_size_t vram_bar; /* bus address of BAR4 */
	u64 vram_size;
	u32 heartbeat_period_us;

	u32 hw_version;
	u32 caps;
	u32 num_hwq;
	u32 num_cores;
	u32 num_contexts;
	u32 fw_version;
	bool test_mode;
	bool irq_coalesce; /* Q_CTRL.IRQ_COALESCE (hardware ABI minor 2) */

	/* firmware image kept for re-boots after reset */
	void *fw_cpu;
	dma_addr_t fw_dma;
	u32 fw_size;

	struct mutex vram_lock; /* vram_mm, vram_used */
	struct drm_mm vram_mm;
	u64 vram_used;

	struct mutex users_lock; /* users and every vnpu_user */
	struct xarray users;	 /* uid -> vnpu_user */

	spinlock_t ctx_lock; /* ctxs[], ctx_map */
	struct vnpu_ctx *ctxs[VNPU_MAX_CONTEXTS];
	unsigned long ctx_map[BITS_TO_LONGS(VNPU_MAX_CONTEXTS)];
	atomic_t open_files;
	atomic_t queue_count;
	atomic_t job_errors;
	struct mutex fault_lock; /* one reader of the fault registers */

	struct vnpu_hwq hwq[VNPU_MAX_QUEUES];
	struct workqueue_struct *reset_wq; /* ordered: timeouts of all hwqs */
	/* Resets a device whose queue did not stop for a fault (reset_wq). */
	struct work_struct stuck_reset_work;
	struct mutex reset_lock; /* one reset, abort or preemption at a time */
	atomic_t reset_count;
	bool dead; /* unplugged or unrecoverable */

	struct vnpu_event_log log;
};

#define to_vnpu_device(d) container_of(d, struct vnpu_device, drm)

/* Per-file context: its own device address space. */
struct vnpu_ctx {
	struct kref ref;
	struct vnpu_device *vdev;
	int index; /* hardware context */
	struct vnpu_user *user; /* who opened the file */
	bool quota_exempt;	/* opened with CAP_SYS_ADMIN */
	atomic_long_t unfinished_jobs, unfinished_bytes; /* vnpu_quota.c */
	atomic_t job_errors; /* failed jobs of the file (GET_PARAM) */

	struct mutex mmu_lock; /* page tables, va_mm and the VA window */
	struct vnpu_pt_table root;
	u64 pt_bytes; /* page tables below the root, charged as PINNED */
	struct drm_mm va_mm;
	u64 va_lo, va_hi; /* VA_RANGE: where BOs are placed */

	struct mutex queue_lock; /* queues */
	struct xarray queues;	 /* id -> vnpu_queue */

	/* Mappings of closed BOs on their way out (vnpu_gem.c). */
	struct mutex retire_lock;
	struct list_head retiring;
	struct work_struct retire_work;
	/*
	 * Job epochs: every pushed job counts in the current epoch until it
	 * ends; drained_upto is the newest epoch whose jobs, and all older
	 * ones', have ended. The IRQ-safe lock covers all of it.
	 */
	spinlock_t epoch_lock;
	struct list_head epochs; /* oldest first; the last is the current */
	u64 drained_upto;

	bool faulted;
	bool banned;
	u32 fault_count;
	u64 fault_va;
	u32 fault_status;
};

/* A user queue: one scheduler entity on one hardware queue. */
struct vnpu_queue {
	struct kref ref;
	struct rcu_head rcu; /* SUBMIT looks queues up under RCU */
	u32 id;
	struct vnpu_ctx *ctx;
	struct vnpu_hwq *hwq;
	struct drm_gpu_scheduler *sched_list[1];
	struct drm_sched_entity entity;
	struct drm_syncobj *syncobj; /* timeline, point = seqno */

	struct mutex submit_lock; /* closed, seqno, last_fence, arm + push */
	bool closed;		  /* destroyed: SUBMIT pushes no more jobs */
	u64 seqno;
	struct dma_fence *last_fence;
	atomic_t pending;

	spinlock_t err_lock; /* the error fields and done_seqno */
	int error;	     /* first failed job, positive errno */
	u64 error_seqno;
	u32 error_status; /* its enum vnpu_status (vnpu_job_status) */
	u64 error_info;
	u64 done_seqno;
};

/* How a job ended on the device: its first failed command's record. */
struct vnpu_job_status {
	u32 status; /* enum vnpu_status, 0 when no command failed */
	u32 cmd;    /* index of that command in the job */
	u64 info;   /* the record's info (MMU_FAULT: the VA) */
};

/* Hardware fence of a job; carries the job's status to BO_WAIT. */
struct vnpu_hw_fence {
	struct dma_fence base; /* first: freed by dma_fence_free */
	struct vnpu_job_status st;
};

struct vnpu_job {
	struct drm_sched_job base;
	struct vnpu_queue *queue;
	struct vnpu_ctx *ctx;
	u64 seqno; /* user-visible */
	u32 cmd_count;
	struct drm_gem_object **bos; /* bo_count of them, after cmds[] */
	u32 bo_count;

	/*
	 * A fence allocated at SUBMIT for a queue switch (a drained ring, a
	 * preempted context's return), where allocating is not allowed: the
	 * scheduler's and the timeout's paths signal fences. Under hwq->lock
	 * once pushed.
	 */
	struct dma_fence *switch_fence;
	/* ring placement, under hwq->lock */
	struct dma_fence *hw_fence;
	struct list_head node;	   /* hwq->inflight */
	u64 first_seqno;	   /* seqno of cmds[0] */
	u32 resume_idx;		   /* first cmd in the current ring run */
	u32 slot_base;		   /* ring slot of cmds[resume_idx] */
	int error;		   /* from retired commands */
	struct vnpu_job_status st; /* first failed command */
	bool guilty;
	/* Time it waited in FENCE_WAIT at the head before preemptions. */
	u64 waited_us;
	struct dma_fence_cb finished_cb;
	struct vnpu_epoch *epoch; /* of its context, counted until it ends */
	u64 charged_bytes;	  /* against its file (vnpu_quota.c) */
	/* The job is one allocation: the commands, then the BO pointers. */
	struct vnpu_cmd cmds[];
};

/* A span of a context's job submissions (see vnpu_ctx.epochs). */
struct vnpu_epoch {
	struct list_head node;
	u64 id;
	u32 jobs; /* pushed in this epoch and not ended */
};

/*
 * How a mapping leaves once its file closed the BO (docs/uapi.md, memory
 * lifetime): it stays mapped until every job its context had submitted
 * has ended, is then unmapped, and its VA range and memory stay held until
 * every job that could have translated it before the unmap has ended too.
 */
enum vnpu_retire_stage {
	VNPU_MAPPED,	/* in use by the file */
	VNPU_CLOSED,	/* waiting for the context's jobs; still mapped */
	VNPU_UNMAPPED,	/* waiting for jobs that may hold translations */
};

/* BO: system memory (shmem) or VRAM, mapped once per context using it. */
struct vnpu_bo_mapping {
	struct list_head node; /* bo->mappings */
	struct vnpu_ctx *ctx;
	struct drm_mm_node va;
	u32 users;
	/* retiring: under ctx->retire_lock */
	enum vnpu_retire_stage stage;
	struct list_head retire_node; /* ctx->retiring */
	struct drm_gem_object *obj;   /* reference held while retiring */
	u64 wait_epoch;		      /* the stage ends when it drained */
	bool snapped;		      /* wait_epoch taken for this stage */
	/* Tables emptied by the unmap, freed with the VA (vnpu_mmu.c). */
	struct list_head pt_free;
};

struct vnpu_bo {
	struct drm_gem_shmem_object shmem; /* base for both kinds */
	u32 flags;			   /* DRM_VNPU_BO_* */
	bool vram;
	struct drm_mm_node vram_node;
	struct mutex map_lock; /* mappings */
	struct list_head mappings;
	/* The user its memory counts against, from its first handle on. */
	struct vnpu_user *charged; /* under map_lock */
	/* Kernel mapping kept for command reads (vnpu_bo_read), or NULL. */
	void *cmd_vaddr;
	/*
	 * Imported from a dma-buf opened without write access: no writable
	 * CPU mapping, no device write (DRM_VNPU_BO_DEVICE_READ_ONLY).
	 */
	bool read_only;
	/* Another vnpu BO's memory, counted against that BO's user. */
	bool uncharged_import;
};

#define to_vnpu_bo(obj) container_of(obj, struct vnpu_bo, shmem.base)

/* Why ctx may run nothing more, as its jobs' errno; 0 if it may. */
static inline int vnpu_ctx_refusal(const struct vnpu_ctx *ctx)
{
	/* Both flags only ever go from false to true: any order is right. */
	if (READ_ONCE(ctx->banned))
		return -ECANCELED;
	if (READ_ONCE(ctx->faulted))
		return -EFAULT;
	return 0;
}

/* vnpu_quota.c */
void vnpu_quota_init(struct vnpu_device *vdev);
void vnpu_quota_fini(struct vnpu_device *vdev);
struct vnpu_user *vnpu_user_get_current(struct vnpu_device *vdev);
void vnpu_user_get(struct vnpu_user *user);
void vnpu_user_put(struct vnpu_user *user);
bool vnpu_quota_exempt_current(void);
int vnpu_quota_charge(struct vnpu_user *user, bool exempt,
		      enum vnpu_quota_res res, u64 amount);
void vnpu_quota_uncharge(struct vnpu_user *user, enum vnpu_quota_res res,
			 u64 amount);
bool vnpu_quota_exceeded(struct vnpu_user *user, bool exempt,
			 enum vnpu_quota_res res, u64 amount);
int vnpu_quota_param(struct vnpu_ctx *ctx, u32 param, u32 index, u64 *value);
int vnpu_ctx_charge_job(struct vnpu_ctx *ctx, u64 bytes);
void vnpu_ctx_uncharge_job(struct vnpu_ctx *ctx, u64 bytes);

/* vnpu_drv.c */
void vnpu_log(struct vnpu_device *vdev, const char *fmt, ...) __printf(2, 3);
struct vnpu_ctx *vnpu_ctx_get_by_index(struct vnpu_device *vdev, u32 index);
void vnpu_ctx_put(struct vnpu_ctx *ctx);

/* vnpu_fw.c */
int vnpu_fw_load(struct vnpu_device *vdev);
void vnpu_fw_fini(struct vnpu_device *vdev);
int vnpu_fw_boot(struct vnpu_device *vdev);

/* vnpu_mmu.c */
int vnpu_mmu_ctx_init(struct vnpu_ctx *ctx);
void vnpu_mmu_ctx_fini(struct vnpu_ctx *ctx);
void vnpu_mmu_ctx_program(struct vnpu_ctx *ctx);
int vnpu_mmu_map_bo(struct vnpu_ctx *ctx, struct vnpu_bo *bo, u64 *va);
void vnpu_mmu_va_range(struct vnpu_ctx *ctx, u64 *lo, u64 *hi);
int vnpu_va_range_ioctl(struct drm_device *dev, void *data,
			struct drm_file *file);
void vnpu_mmu_unmap(struct vnpu_ctx *ctx, struct vnpu_bo_mapping *m);
void vnpu_mmu_free_va(struct vnpu_ctx *ctx, struct vnpu_bo_mapping *m);
void vnpu_mmu_handle_faults(struct vnpu_device *vdev);

/* vnpu_gem.c */
struct drm_gem_object *vnpu_gem_create_object(struct drm_device *dev,
					      size_t size);
struct drm_gem_object *vnpu_gem_prime_import(struct drm_device *dev,
					     struct dma_buf *dma_buf);
int vnpu_bo_read(struct drm_gem_object *obj, u64 offset, void *dst,
		 size_t len);
int vnpu_bo_create_ioctl(struct drm_device *dev, void *data,
			 struct drm_file *file);
int vnpu_bo_info_ioctl(struct drm_device *dev, void *data,
		       struct drm_file *file);
int vnpu_bo_wait_ioctl(struct drm_device *dev, void *data,
		       struct drm_file *file);
bool vnpu_bo_va(struct drm_gem_object *obj, struct vnpu_ctx *ctx, u64 *va);
int vnpu_ctx_retire_init(struct vnpu_ctx *ctx);
void vnpu_ctx_retire_fini(struct vnpu_ctx *ctx);
void vnpu_ctx_retire(struct vnpu_ctx *ctx);
void vnpu_ctx_job_pushed(struct vnpu_job *job);
void vnpu_ctx_job_ended(struct vnpu_job *job);
void vnpu_vram_init(struct vnpu_device *vdev);
void vnpu_vram_fini(struct vnpu_device *vdev);

static inline struct vnpu_job *to_vnpu_job(struct drm_sched_job *sj)
{
	return container_of(sj, struct vnpu_job, base);
}

/* vnpu_hwq.c */
int vnpu_hwq_init(struct vnpu_device *vdev, u32 index);
void vnpu_hwq_fini(struct vnpu_hwq *hwq);
void vnpu_hwq_job_pushed(struct vnpu_hwq *hwq, struct vnpu_job *job);
void vnpu_hwq_program(struct vnpu_hwq *hwq, int ctx_index);
void vnpu_hwq_push(struct vnpu_hwq *hwq, struct vnpu_job *job);
bool vnpu_hwq_retire(struct vnpu_hwq *hwq, bool ok_only);
void vnpu_hwq_head_update(struct vnpu_hwq *hwq, bool restart);
bool vnpu_hwq_contended(struct vnpu_hwq *hwq);
struct dma_fence *vnpu_hwq_fence_create(struct vnpu_hwq *hwq);
bool vnpu_hwq_wait_stopped(struct vnpu_hwq *hwq);
bool vnpu_hwq_may_preempt(struct vnpu_hwq *hwq);
int vnpu_hwq_park(struct vnpu_hwq *hwq);
void vnpu_hwq_try_resume(struct vnpu_hwq *hwq);
void vnpu_hwq_fail_parked(struct vnpu_hwq *hwq, int error);
bool vnpu_cmd_restartable(const struct vnpu_cmd *c);
bool vnpu_cmd_stopped(struct vnpu_hwq *hwq, struct vnpu_job *job, u32 i);
void vnpu_job_lost(struct vnpu_job *job, u32 i);
bool vnpu_cmd_retired(struct vnpu_hwq *hwq, struct vnpu_job *job, u32 i);
void vnpu_job_collect(struct vnpu_hwq *hwq, struct vnpu_job *job, u32 end);
u32 vnpu_job_current_cmd(struct vnpu_hwq *hwq, struct vnpu_job *job);
void vnpu_job_signal(struct vnpu_job *job, int error);
void vnpu_ctx_fault_abort(struct vnpu_device *vdev, int ctx_index,
			  u32 fault_status);
void vnpu_fence_job_status(struct dma_fence *finished,
			   struct vnpu_job_status *st);

/* vnpu_reset.c */
#define VNPU_RESET_FORCE (-1)
int vnpu_device_reset(struct vnpu_device *vdev, struct vnpu_job *bad,
		      int seen_resets, const char *why);
void vnpu_device_stop(struct vnpu_device *vdev);
u64 vnpu_hwq_done_seq(struct vnpu_hwq *hwq);
void vnpu_stuck_reset_work(struct work_struct *work);
enum drm_gpu_sched_stat vnpu_timedout_job(struct drm_sched_job *sj);

/* vnpu_queue.c */
int vnpu_queue_create_ioctl(struct drm_device *dev, void *data,
			    struct drm_file *file);
int vnpu_queue_destroy_ioctl(struct drm_device *dev, void *data,
			     struct drm_file *file);
void vnpu_ctx_destroy_queues(struct vnpu_ctx *ctx);
struct vnpu_queue *vnpu_queue_lookup(struct vnpu_ctx *ctx, u32 id);
void vnpu_queue_put(struct vnpu_queue *queue);

/* vnpu_job.c */
int vnpu_submit_ioctl(struct drm_device *dev, void *data,
		      struct drm_file *file);

/* vnpu_debugfs.c */
void vnpu_debugfs_init(struct vnpu_device *vdev);

#endif /* VNPU_DRV_H */
