/* SPDX-License-Identifier: MIT */
/*
 * libvnpurt internals shared by the runtime's source files: configuration,
 * devices, hardware-queue bookkeeping, streams, events, memory maps,
 * handles, errors and tracing. Lock order: staging lock -> hwq lock ->
 * device lock / error lock / memory lock / trace lock -> an event's lock;
 * the backend's locks are innermost.
 */
#ifndef VNPURT_INTERNAL_H
#define VNPURT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend.h"
#include "vnpu/hw_cmd_build.h"
#include "vnpu/hw_regs.h"
#include "vnpu_runtime.h"

#define RT_MAX_DEVICES 4
#define RT_ARENA_BYTES (1u << 20)	    /* argument arena per hwq */
#define RT_STAGING_BYTES (4u << 20)	    /* per staging buffer */
#define RT_WAIT_SLICE_MS 20
#define RT_MAX_OP_CMDS 8
/* With the trace's two TIMESTAMPs and an event record's two commands. */
#define RT_MAX_SUBMIT_CMDS (RT_MAX_OP_CMDS + 4)

/* A spin-wait's pause between two reads. */
static inline void rt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* Room for `need` elements of `size` bytes in the array *a of *cap, which
 * doubles from 64 as it grows; false without memory (nothing changed). */
static inline bool rt_array_reserve(void **a, size_t *cap, size_t need,
				    size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *grown;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	grown = realloc(*a, n * size);
	if (!grown)
		return false;
	*a = grown;
	*cap = n;
	return true;
}

/* ---- configuration (env.c) ---------------------------------------------- */

struct vnpurt_config {
	char backend[8]; /* "", "sim" or "drm" */
	bool launch_blocking;
	char *trace_path; /* NULL: no trace */
	uint64_t sim_vram_bytes;
	bool sim_test_mode;
	unsigned sim_timeout_ms;
	unsigned sim_cores; /* 0: online CPUs, capped */
	unsigned sim_spin_us; /* a wait spins this long before it sleeps */
};

/* Reads VNPU_* variables; returns VNPU_ERROR_INVALID_VALUE with a detail
 * naming the variable when one is malformed. */
vnpu_error_t rt_config_read(struct vnpurt_config *cfg);
void rt_config_free(struct vnpurt_config *cfg);

/* ---- errors (status.c) ------------------------------------------------- */

/* Sets the thread's last error with a formatted detail; returns err. */
vnpu_error_t rt_fail(vnpu_error_t err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Sets the thread's last error with a plain detail. */
vnpu_error_t rt_fail_detail(vnpu_error_t err, const char *detail);
/* Sets the thread's last error, its detail the formatted operation
 * followed by the detail a failing callee set (the cause): "device
 * allocation of 4096 bytes: device memory exhausted (...)". */
vnpu_error_t rt_fail_prefix(vnpu_error_t err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A device completion status as a runtime error. */
vnpu_error_t rt_status_error(uint32_t status);
const char *rt_status_name(uint32_t status);

/* ---- range allocator (range.c): first fit, coalescing ------------------- */

struct rt_range {
	uint64_t start, size;
};

struct rt_ranges {
	struct rt_range *free; /* sorted by start, never adjacent */
	size_t n, cap;
	uint64_t free_bytes;
};

int rt_ranges_init(struct rt_ranges *r, uint64_t start, uint64_t size);
void rt_ranges_fini(struct rt_ranges *r);
/* align: power of two. false when no range fits. */
bool rt_ranges_alloc(struct rt_ranges *r, uint64_t size, uint64_t align,
		     uint64_t *start);
/* Returns [start, start + size) (previously allocated). false when the
 * free list could not grow (the range is then lost, never corrupted). */
bool rt_ranges_free(struct rt_ranges *r, uint64_t start, uint64_t size);

/* ---- failures of a backend queue (failures.c) ------------------------- */

/* Failures not yet taken, oldest first, in sequence order; the owner
 * locks. Never drops one: it grows, or merges into the newest. */
struct rt_failures {
	struct vnpurt_failure *buf;
	size_t head, n, cap;
	bool fixed; /* never grows (testing: as if out of memory) */
};

/* Room for cap (>= 1) failures to begin with; false without memory. */
bool rt_failures_init(struct rt_failures *r, size_t cap);
void rt_failures_fini(struct rt_failures *r);
/* Room for cap (>= the pending ones) failures, the pending kept; grows
 * false makes a full list merge instead of growing. false: cap too small
 * or no memory (then nothing changed). */
bool rt_failures_resize(struct rt_failures *r, size_t cap, bool grows);
/* Appends f (a range after every pending one's). */
void rt_failures_push(struct rt_failures *r, const struct vnpurt_failure *f);
/* Pops the oldest; false when none. */
bool rt_failures_take(struct rt_failures *r, struct vnpurt_failure *f);

/* ---- unified addressing (va_window.c) ------------------------------------ */

/* Reserves a window of the process's address space for a device's VAs
 * (va_window.c says where). */
vnpu_error_t rt_va_window_reserve(struct vnpurt_va_window *w);
void rt_va_window_release(struct vnpurt_va_window *w);

/* ---- handles (handle.c) -------------------------------------------------- */

enum rt_handle_type {
	RT_HANDLE_STREAM = 1,
	RT_HANDLE_EVENT = 2,
	RT_HANDLE_TENSOR_DESC = 3,
};

struct rt_hslot {
	void *obj;
	uint32_t gen;
	uint32_t refs;
	bool live;
	uint32_t next_free;
};

struct rt_handles {
	pthread_mutex_t lock;
	pthread_cond_t released;
	enum rt_handle_type type;
	struct rt_hslot *slots;
	uint32_t n, cap, free_head;
};

/* Once per table and process; later calls keep the table. */
void rt_handles_init(struct rt_handles *t, enum rt_handle_type type);
/* Every handle of the table becomes invalid (finalize); generations stay. */
void rt_handles_invalidate(struct rt_handles *t);
/* A new handle for obj, or NULL when out of memory. */
void *rt_handle_add(struct rt_handles *t, void *obj);
/* The live object of h with a reference taken, or NULL. */
void *rt_handle_get(struct rt_handles *t, const void *h);
void rt_handle_put(struct rt_handles *t, const void *h);
/* Makes h invalid for every later get, waits for references taken before
 * to be put, and returns the object (NULL when h was not live). */
void *rt_handle_remove(struct rt_handles *t, const void *h);
/* Every live object (for finalize): calls fn and invalidates each. */
void rt_handles_drain(struct rt_handles *t, void (*fn)(void *obj));

/* ---- devices, queues, streams -------------------------------------------- */

struct rt_device;
struct rt_stream;

struct rt_event;

struct rt_op {
	uint64_t first_seq, last_seq;
	uint64_t op_id;
	struct rt_stream *stream;
	uint32_t stream_id;
	char what[48];
	uint64_t bytes;
	uint32_t arena_end; /* UINT32_MAX: no argument block */
	bool traced;
	uint32_t fail_status; /* set when the op retired without running */
	/* An event record: the event (a reference), the record's id, and
	 * the value it signals on the queue's timeline. */
	struct rt_event *event;
	uint64_t record_id;
	uint64_t timeline_value;
};

/* Per op of a hwq's ring, device timestamps (hwq.c): the trace's start
 * and end, and a timing event's record. */
struct rt_stamps {
	uint64_t start, end, event;
};

/* A hardware queue of the device and what was submitted to it. */
struct rt_hwq {
	struct rt_device *dev;
	unsigned qid;
	unsigned users, high_users;
	pthread_mutex_t lock;
	struct rt_op *ops; /* ring of ops not yet retired */
	uint32_t op_cap, op_head, op_count;
	struct vnpurt_bo arena;
	uint32_t arena_head, arena_tail; /* ring of argument blocks */
	uint32_t arena_live;		 /* ops holding an argument block */
	/* Last retired seqno seen; written with the lock held, read
	 * atomically without it (memory.c's stream-ordered reuse). */
	uint64_t done;
	struct vnpurt_bo stamp_bo; /* op_cap struct rt_stamps */
	uint64_t last_seq;
	/*
	 * The queue's timeline: a 64-bit word the device raises with
	 * FENCE_SIGNAL at every event record on this queue, to the value
	 * timeline_next gave it. The queue runs in order, so the word only
	 * grows; other queues wait for a record with FENCE_WAIT on it.
	 */
	struct vnpurt_bo timeline_bo;
	uint64_t timeline_next;
	/* Staging for pageable copies (copy.c). */
	pthread_mutex_t staging_lock;
	struct vnpurt_bo staging[2];
	uint64_t staging_seq[2];
};

struct rt_stream {
	struct rt_device *dev;
	struct rt_hwq *hwq;
	uint32_t id;
	int priority;
	void *handle;	    /* NULL for the default stream */
	uint64_t last_seq;  /* hwq lock */
	/* The timeline value of the last op when it is an event record,
	 * else 0 (hwq lock). */
	uint64_t last_record_value;
	vnpu_error_t err;   /* first async error not yet reported; hwq lock */
	char err_detail[256];
};

/* One device allocation the user sees (device memory or pinned host). */
struct rt_alloc {
	uint64_t key;	/* device VA (device map) or CPU address (host map) */
	uint64_t size;	/* bytes the user asked for */
	uint64_t va;	/* device VA */
	uint64_t block; /* bytes of the block (cache class or BO size) */
	int cls;	/* cache class, or -1 for a BO of its own */
	struct vnpurt_bo bo; /* cls < 0: the BO */
	struct rt_chunk *chunk;	 /* cls >= 0: the chunk */
};

struct rt_amap {
	struct rt_alloc *a; /* sorted by key */
	size_t n, cap;
};

#define RT_CACHE_CLASSES 13 /* 256 B .. 1 MiB */
#define RT_CHUNK_BYTES (2u << 20)

struct rt_chunk {
	struct vnpurt_bo bo;
	int cls;
	uint32_t blocks, used;
	struct rt_chunk *next;
};

/*
 * A block given back by vnpu_free_async: free once hwq q retired seq (the
 * freeing stream's last op then); before that, only for work queued on q
 * after it (a hwq runs its ops in order).
 */
struct rt_pending {
	struct rt_alloc a;
	struct rt_hwq *q;
	uint64_t seq;
};

struct rt_device {
	int index;
	const struct vnpurt_backend_ops *be;
	struct vnpurt_bdev *bdev;
	struct vnpurt_va_window va_window;
	struct vnpurt_dev_info info;
	pthread_mutex_t lock; /* hwq assignment */
	struct rt_hwq *hwqs[VNPU_MAX_QUEUES];
	unsigned nhwq, rr_next;
	struct rt_stream *default_stream;
	/* First async error of any stream since vnpu_device_synchronize
	 * last reported one (hwq locks order before err_lock). */
	pthread_mutex_t err_lock;
	vnpu_error_t err;
	char err_detail[256];
	atomic_uint_fast32_t next_stream_id;
	atomic_uint_fast64_t next_op_id;
	/* memory.c */
	pthread_mutex_t mem_lock;
	struct rt_amap dmap, hmap;
	struct rt_chunk *chunks;
	uint64_t *class_free[RT_CACHE_CLASSES]; /* free block VAs */
	size_t class_nfree[RT_CACHE_CLASSES], class_cap[RT_CACHE_CLASSES];
	struct rt_pending *pending; /* vnpu_free_async's blocks */
	size_t npending, pending_cap;
	struct vnpu_mem_stats stats;
};

struct rt_runtime {
	pthread_mutex_t lock;
	int refs;
	struct vnpurt_config cfg;
	const struct vnpurt_backend_ops *be;
	struct rt_device *devs[RT_MAX_DEVICES];
	int ndev;
	struct rt_handles streams, events;
};

extern struct rt_runtime rt;

/* The runtime when initialised (VNPU_ERROR_NOT_INITIALIZED otherwise,
 * with the last error set). */
vnpu_error_t rt_ready(void);
/* The calling thread's current device (after rt_ready). */
struct rt_device *rt_current_device(void);
/* VNPU_SUCCESS while d works. Once its backend lost it for good: the
 * persistent VNPU_ERROR_DEVICE_RESET, with a detail naming what was
 * refused (formatted only then) and saying why. */
vnpu_error_t rt_device_check(struct rt_device *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Resolves a stream handle (NULL: default stream of the current device)
 * with a reference; rt_stream_put releases it. */
vnpu_error_t rt_stream_get(vnpu_stream_t h, struct rt_stream **s);
void rt_stream_put(struct rt_stream *s);

/* hwq.c: one submission of an operation on a stream. args (args_size
 * bytes) is copied into the queue's argument arena and its VA patched into
 * every KERNEL_LAUNCH of cmds. */
struct rt_opdesc {
	const char *what;
	uint64_t bytes;
	const void *args;
	uint32_t args_size;
	/* An event record: rt_submit appends the event's TIMESTAMP (timing
	 * events) and the FENCE_SIGNAL of the queue's timeline. */
	struct rt_event *record;
};
vnpu_error_t rt_submit(struct rt_stream *s, const struct rt_opdesc *op,
		       struct vnpu_cmd *cmds, unsigned n, uint64_t *seq);
/* Attributes failures and retires finished ops of hwq (hwq lock held). */
void rt_hwq_drain_locked(struct rt_hwq *q);
void rt_hwq_drain(struct rt_hwq *q);
/* Waits until q retired seq, draining as it goes; never gives up while
 * the backend still makes progress or recovers. */
void rt_hwq_wait(struct rt_hwq *q, uint64_t seq);
/* Whether the op ending at seq is complete (see hwq.c); record_value is
 * its timeline value when it is an event record, else 0. */
bool rt_hwq_op_done(struct rt_hwq *q, uint64_t seq, uint64_t record_value);
/* Stream: wait and take the pending error (VNPU_SUCCESS if none). */
vnpu_error_t rt_stream_sync(struct rt_stream *s, bool report);
vnpu_error_t rt_stream_take_error(struct rt_stream *s);
void rt_device_wait_all(struct rt_device *d);
vnpu_error_t rt_hwq_create(struct rt_device *d, int priority,
			   struct rt_hwq **out);
void rt_hwq_release(struct rt_device *d, struct rt_hwq *q);
void rt_hwq_destroy(struct rt_device *d, struct rt_hwq *q);
vnpu_error_t rt_stream_new(struct rt_device *d, int priority,
			   struct rt_stream **out);
void rt_stream_free(struct rt_stream *s);

/* memory.c */
void rt_memory_init(struct rt_device *d);
void rt_memory_fini(struct rt_device *d);
/* The device VA of [ptr, ptr + size) inside one live allocation (device
 * memory or pinned host memory); *host tells which. */
vnpu_error_t rt_resolve(struct rt_device *d, const void *ptr, uint64_t size,
			uint64_t *va, bool *host);
enum rt_ptr_kind { RT_PTR_HOST, RT_PTR_PINNED, RT_PTR_DEVICE };
/* Where ptr lies; inside an allocation also its device VA and the bytes
 * from ptr to the allocation's end. Never sets the last error. */
enum rt_ptr_kind rt_lookup(struct rt_device *d, const void *ptr,
			   uint64_t *va, uint64_t *avail);

/* event.c */
/* Drops the handle's reference; the event goes when no record is pending. */
void rt_event_free_obj(void *obj);
bool rt_event_timed(const struct rt_event *e);
/* rt_submit queued a record of e (hwq lock held): it becomes the latest,
 * and holds a reference until it retires. Returns the record's id. */
uint64_t rt_event_recorded(struct rt_event *e, struct rt_hwq *q,
			   uint64_t seq, uint64_t timeline_value);
/* A record retired (hwq lock held): fail_status 0 when it ran; ts its
 * device timestamp. Drops the record's reference. */
void rt_event_retired(struct rt_event *e, uint64_t record_id,
		      uint32_t fail_status, uint64_t ts);

/* cmd.c: commands are built with include/vnpu/hw_cmd_build.h; FILL of a
 * byte value and argument blocks here. */
struct vnpu_cmd rt_cmd_fill(uint64_t dst_va, uint64_t size, uint8_t value,
			    bool wide);
/* Writes a kernel argument block (header, buffers, params) into dst
 * (capacity cap); returns its size or 0 when it does not fit. */
uint32_t rt_args_build(void *dst, size_t cap,
		       const struct vnpu_kargs_buffer *bufs, uint32_t nbufs,
		       const void *params, uint32_t params_size);

/* trace.c */
bool rt_trace_on(void);
void rt_trace_start(const char *path);
void rt_trace_device(const char *what, uint32_t stream_id, uint64_t op_id,
		     uint64_t bytes, uint64_t start_ns, uint64_t end_ns,
		     bool failed);
void rt_trace_host(const char *what, uint64_t start_ns, uint64_t end_ns);
/* Writes the trace (once per session); a failure is a warning on stderr
 * naming the file. */
void rt_trace_write(void);
/* Testing: the trace's next count allocations fail. */
void rt_trace_test_fail_allocs(unsigned count);
uint64_t rt_now_ns(void);

#endif /* VNPURT_INTERNAL_H */
