// SPDX-License-Identifier: MIT
/*
 * Hardware queues as the runtime uses them: which operation each submitted
 * sequence number belongs to (the op log), the argument arena, failure
 * attribution to streams, retiring and waiting.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vnpu/hw_mmu.h"
#include "vnpu/hw_status.h"

static const char *fault_reason_name(uint32_t reason)
{
	switch (reason) {
	case VNPU_FAULT_NOT_MAPPED:
		return "not mapped";
	case VNPU_FAULT_PERMISSION:
		return "permission";
	case VNPU_FAULT_BAD_PTE:
		return "bad page-table entry";
	case VNPU_FAULT_TABLE_DMA:
		return "page table unreadable";
	case VNPU_FAULT_VA_RANGE:
		return "VA beyond 2^39";
	case VNPU_FAULT_INJECTED:
		return "injected";
	default:
		return "unknown reason";
	}
}

static void describe(char *buf, size_t len, struct rt_device *d,
		     const struct rt_op *op, const struct vnpurt_failure *f)
{
	char why[192];
	int n = snprintf(buf, len, "%s #%" PRIu64 " on stream %u: ", op->what,
			 op->op_id, op->stream_id);

	if (n < 0 || (size_t)n >= len)
		return;
	buf += n;
	len -= (size_t)n;
	if (f->merged && op->first_seq > f->exact_last_seq) {
		/* Past the failure this one was merged into (failures.c):
		 * it may have run, but it cannot be told apart. */
		snprintf(buf, len,
			 "counted as failed: its queue failed more often "
			 "than the runtime had memory to record apart (the "
			 "first such failure: %s at seq %" PRIu64 ")",
			 rt_status_name(f->status), f->first_seq);
		return;
	}
	switch (f->status) {
	case VNPU_STATUS_MMU_FAULT:
		snprintf(buf, len, "MMU fault at VA 0x%" PRIx64 " (%s%s)",
			 f->info, fault_reason_name(f->fault_reason),
			 f->fault_reason ? (f->fault_write ? ", write"
							   : ", read")
					 : "");
		break;
	case VNPU_STATUS_CONTEXT_FAULTED:
		snprintf(buf, len, "not run: the context was faulted by an "
				   "earlier MMU fault");
		break;
	case VNPURT_STATUS_DEVICE_RESET:
		snprintf(buf, len, "lost: the device stopped responding and "
				   "was reset");
		break;
	case VNPURT_STATUS_DEVICE_LOST:
		if (!d->be->lost(d->bdev, why, sizeof(why)))
			snprintf(why, sizeof(why), "no reason given");
		snprintf(buf, len, "lost, with the device: %s", why);
		break;
	case VNPU_STATUS_INVALID_ARGS:
		snprintf(buf, len, "the device rejected the kernel's "
				   "arguments (INVALID_ARGS)");
		break;
	case VNPU_STATUS_UNSUPPORTED:
		snprintf(buf, len, "the kernel does not implement this dtype "
				   "or format combination (UNSUPPORTED)");
		break;
	case VNPU_STATUS_ABORTED:
		snprintf(buf, len, "aborted: it ran past the device's time "
				   "limit (ABORTED)");
		break;
	default:
		snprintf(buf, len, "device status %s (%u), info 0x%" PRIx64,
			 rt_status_name(f->status), f->status, f->info);
		break;
	}
}

/* Raises q's timeline word to at least value, from the host. */
static void timeline_release(struct rt_hwq *q, uint64_t value)
{
	uint64_t *word = q->timeline_bo.cpu;
	uint64_t cur = __atomic_load_n(word, __ATOMIC_ACQUIRE);

	while (cur < value &&
	       !__atomic_compare_exchange_n(word, &cur, value, false,
					    __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		;
}

/* Marks every op of [f->first_seq, f->last_seq] failed (hwq lock held). */
static void attribute(struct rt_hwq *q, const struct vnpurt_failure *f)
{
	struct rt_device *d = q->dev;

	for (uint32_t i = 0; i < q->op_count; i++) {
		struct rt_op *op = &q->ops[(q->op_head + i) % q->op_cap];
		struct rt_stream *s = op->stream;

		if (op->last_seq < f->first_seq || op->first_seq > f->last_seq)
			continue;
		/* A record's FENCE_SIGNAL that will never run must not leave
		 * waiters on other queues blocked: release them from the
		 * host (never lowering the word: later records may have
		 * run). */
		if (op->event)
			timeline_release(q, op->timeline_value);
		op->fail_status = f->status;
		op->traced = false;
		if (s->err == VNPU_SUCCESS) {
			s->err = rt_status_error(f->status);
			describe(s->err_detail, sizeof(s->err_detail), d, op,
				 f);
			pthread_mutex_lock(&d->err_lock);
			if (d->err == VNPU_SUCCESS) {
				d->err = s->err;
				memcpy(d->err_detail, s->err_detail,
				       sizeof(d->err_detail));
			}
			pthread_mutex_unlock(&d->err_lock);
		}
	}
}

void rt_hwq_drain_locked(struct rt_hwq *q)
{
	struct rt_device *d = q->dev;
	struct vnpurt_failure f;
	uint64_t done = d->be->completed(d->bdev, q->qid);
	const struct rt_stamps *ts = q->stamp_bo.cpu;

	while (d->be->take_failure(d->bdev, q->qid, &f))
		attribute(q, &f);
	while (q->op_count) {
		uint32_t idx = q->op_head;
		struct rt_op *op = &q->ops[idx];

		if (op->last_seq > done)
			break;
		if (op->traced)
			rt_trace_device(op->what, op->stream_id, op->op_id,
					op->bytes, ts[idx].start, ts[idx].end,
					false);
		if (op->event)
			rt_event_retired(op->event, op->record_id,
					 op->fail_status,
					 op->fail_status ? 0 : ts[idx].event);
		if (op->arena_end != UINT32_MAX) {
			q->arena_tail = op->arena_end;
			q->arena_live--;
		}
		q->op_head = (q->op_head + 1) % q->op_cap;
		q->op_count--;
	}
	if (!q->arena_live)
		q->arena_head = q->arena_tail = 0;
	if (done > q->done)
		__atomic_store_n(&q->done, done, __ATOMIC_RELEASE);
}

void rt_hwq_drain(struct rt_hwq *q)
{
	pthread_mutex_lock(&q->lock);
	rt_hwq_drain_locked(q);
	pthread_mutex_unlock(&q->lock);
}

void rt_hwq_wait(struct rt_hwq *q, uint64_t seq)
{
	struct rt_device *d = q->dev;

	for (;;) {
		vnpu_error_t r = d->be->wait(d->bdev, q->qid, seq,
					     RT_WAIT_SLICE_MS);

		rt_hwq_drain(q);
		if (r != VNPU_ERROR_TIMEOUT)
			return;
		/* Still waiting: other queues' failed event records may be
		 * what this queue waits for; attribute them. */
		for (unsigned i = 0; i < d->nhwq; i++) {
			struct rt_hwq *o = d->hwqs[i];

			if (o != q && !pthread_mutex_trylock(&o->lock)) {
				rt_hwq_drain_locked(o);
				pthread_mutex_unlock(&o->lock);
			}
		}
	}
}

/*
 * An event record is complete once its FENCE_SIGNAL ran: another queue
 * may have passed its FENCE_WAIT on it, and what that queue did next can
 * complete before this queue's own completion reaches us (the two
 * interrupts are not ordered), and then CUDA's order says the record is
 * done. Such an op ends with the record, so its retirement is only
 * delivery away: it is waited for, for the op's status and timestamps.
 */
bool rt_hwq_op_done(struct rt_hwq *q, uint64_t seq, uint64_t record_value)
{
	const uint64_t *word = q->timeline_bo.cpu;
	bool done, signalled;

	pthread_mutex_lock(&q->lock);
	rt_hwq_drain_locked(q);
	done = q->done >= seq;
	signalled = record_value &&
		    __atomic_load_n(word, __ATOMIC_ACQUIRE) >= record_value;
	pthread_mutex_unlock(&q->lock);
	if (!done && signalled) {
		rt_hwq_wait(q, seq);
		done = true;
	}
	return done;
}

/* Reserves `size` bytes of the argument arena, a ring whose live part
 * runs from tail to head (hwq lock held). head == tail only when empty. */
static bool arena_alloc(struct rt_hwq *q, uint32_t size, uint32_t *off)
{
	uint32_t cap = (uint32_t)q->arena.size;

	if (!q->arena_live)
		q->arena_head = q->arena_tail = 0;
	if (q->arena_head >= q->arena_tail) {
		if (cap - q->arena_head >= size)
			*off = q->arena_head;
		else if (q->arena_tail > size)
			*off = 0;
		else
			return false;
	} else if (q->arena_tail - q->arena_head > size) {
		*off = q->arena_head;
	} else {
		return false;
	}
	q->arena_head = *off + size;
	return true;
}

vnpu_error_t rt_submit(struct rt_stream *s, const struct rt_opdesc *desc,
		       struct vnpu_cmd *cmds, unsigned n, uint64_t *seq_out)
{
	struct rt_hwq *q = s->hwq;
	struct rt_device *d = s->dev;
	struct vnpu_cmd all[RT_MAX_SUBMIT_CMDS];
	uint32_t args_size = desc->args_size, arena_off = 0, idx;
	uint32_t arena_need = (args_size + 63u) & ~63u;
	unsigned total = 0;
	bool traced = rt_trace_on();
	struct rt_op *op;
	uint64_t seq, stamps, timeline_value = 0;
	vnpu_error_t err;

	if (n > RT_MAX_OP_CMDS)
		return rt_fail(VNPU_ERROR_INVALID_VALUE,
			       "%s: %u commands in one operation (at most %u)",
			       desc->what, n, RT_MAX_OP_CMDS);
	err = rt_device_check(d, "%s", desc->what);
	if (err)
		return err;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		bool room = q->op_count < q->op_cap;

		if (room && args_size)
			room = arena_alloc(q, arena_need, &arena_off);
		if (room)
			break;
		rt_hwq_drain_locked(q);
		if (q->op_count == q->op_cap ||
		    (args_size && !arena_alloc(q, arena_need, &arena_off))) {
			/* Wait for a quarter of the ops, not just the
			 * oldest: one wake-up per many retirements. */
			uint64_t upto = q->ops[(q->op_head + q->op_count / 4) %
					       q->op_cap]
						.last_seq;

			pthread_mutex_unlock(&q->lock);
			rt_hwq_wait(q, upto);
			pthread_mutex_lock(&q->lock);
			continue;
		}
		break;
	}
	idx = (q->op_head + q->op_count) % q->op_cap;
	stamps = q->stamp_bo.va + sizeof(struct rt_stamps) * idx;
	if (traced)
		all[total++] = vnpu_timestamp_cmd(
			stamps + offsetof(struct rt_stamps, start));
	for (unsigned i = 0; i < n; i++) {
		all[total] = cmds[i];
		if (all[total].hdr.opcode == VNPU_OP_KERNEL_LAUNCH) {
			all[total].launch.args_va = q->arena.va + arena_off;
			all[total].launch.args_size = args_size;
		}
		total++;
	}
	if (desc->record) {
		/* Values are given in queue order under the hwq lock, so
		 * the device raises the word monotonically. */
		timeline_value = q->timeline_next + 1;
		if (rt_event_timed(desc->record))
			all[total++] = vnpu_timestamp_cmd(
				stamps + offsetof(struct rt_stamps, event));
		all[total++] = vnpu_fence_signal_cmd(q->timeline_bo.va,
						     timeline_value);
	}
	if (traced)
		all[total++] = vnpu_timestamp_cmd(
			stamps + offsetof(struct rt_stamps, end));
	if (args_size)
		memcpy((uint8_t *)q->arena.cpu + arena_off, desc->args,
		       args_size);
	err = d->be->submit(d->bdev, q->qid, all, total, &seq);
	if (err) {
		/* Give the arena space back: nothing was queued. */
		if (args_size)
			q->arena_head = arena_off;
		pthread_mutex_unlock(&q->lock);
		/* The device may have been lost since the check above. */
		if (rt_device_check(d, "%s", desc->what))
			return VNPU_ERROR_DEVICE_RESET;
		return rt_fail(err, "%s: submission failed", desc->what);
	}
	op = &q->ops[idx];
	memset(op, 0, sizeof(*op));
	op->first_seq = seq - total + 1;
	op->last_seq = seq;
	op->op_id = atomic_fetch_add(&d->next_op_id, 1) + 1;
	op->stream = s;
	op->stream_id = s->id;
	{
		size_t len = strnlen(desc->what, sizeof(op->what) - 1);

		memcpy(op->what, desc->what, len);
		op->what[len] = '\0';
	}
	op->bytes = desc->bytes;
	op->arena_end = args_size ? arena_off + arena_need : UINT32_MAX;
	if (args_size)
		q->arena_live++;
	if (desc->record) {
		q->timeline_next = timeline_value;
		op->event = desc->record;
		op->timeline_value = timeline_value;
		op->record_id = rt_event_recorded(desc->record, q, seq,
						  timeline_value);
	}
	op->traced = traced;
	q->op_count++;
	q->last_seq = seq;
	s->last_seq = seq;
	s->last_record_value = timeline_value;
	pthread_mutex_unlock(&q->lock);
	if (seq_out)
		*seq_out = seq;
	return VNPU_SUCCESS;
}

vnpu_error_t rt_stream_take_error(struct rt_stream *s)
{
	vnpu_error_t err;

	pthread_mutex_lock(&s->hwq->lock);
	err = s->err;
	if (err) {
		rt_fail_detail(err, s->err_detail);
		s->err = VNPU_SUCCESS;
	}
	pthread_mutex_unlock(&s->hwq->lock);
	/* Once its own failures were reported, a lost device still is. */
	if (!err)
		err = rt_device_check(s->dev, "stream %u", s->id);
	return err;
}

vnpu_error_t rt_stream_sync(struct rt_stream *s, bool report)
{
	uint64_t seq;

	pthread_mutex_lock(&s->hwq->lock);
	seq = s->last_seq;
	pthread_mutex_unlock(&s->hwq->lock);
	rt_hwq_wait(s->hwq, seq);
	return report ? rt_stream_take_error(s) : VNPU_SUCCESS;
}

void rt_device_wait_all(struct rt_device *d)
{
	for (unsigned i = 0; i < d->nhwq; i++) {
		struct rt_hwq *q = d->hwqs[i];
		uint64_t seq;

		pthread_mutex_lock(&q->lock);
		seq = q->last_seq;
		pthread_mutex_unlock(&q->lock);
		rt_hwq_wait(q, seq);
	}
}

/* ---- creation ----------------------------------------------------------- */

static vnpu_error_t hwq_new(struct rt_device *d, unsigned qid,
			    struct rt_hwq **out)
{
	struct rt_hwq *q = calloc(1, sizeof(*q));
	vnpu_error_t err = VNPU_ERROR_OUT_OF_MEMORY;

	if (!q)
		return err;
	q->dev = d;
	q->qid = qid;
	q->op_cap = d->info.ring_entries;
	q->ops = calloc(q->op_cap, sizeof(*q->ops));
	pthread_mutex_init(&q->lock, NULL);
	pthread_mutex_init(&q->staging_lock, NULL);
	if (!q->ops)
		goto fail;
	err = d->be->bo_create(d->bdev, RT_ARENA_BYTES, VNPURT_DOMAIN_HOST,
			       &q->arena);
	if (err)
		goto fail;
	err = d->be->bo_create(d->bdev, sizeof(struct rt_stamps) * q->op_cap,
			       VNPURT_DOMAIN_HOST, &q->stamp_bo);
	if (!err)
		err = d->be->bo_create(d->bdev, sizeof(uint64_t),
				       VNPURT_DOMAIN_HOST, &q->timeline_bo);
	if (err)
		goto fail;
	memset(q->stamp_bo.cpu, 0, sizeof(struct rt_stamps) * q->op_cap);
	memset(q->timeline_bo.cpu, 0, sizeof(uint64_t));
	*out = q;
	return VNPU_SUCCESS;
fail:
	rt_hwq_destroy(d, q);
	return err;
}

void rt_hwq_destroy(struct rt_device *d, struct rt_hwq *q)
{
	/* Records that never retired (a dead device) release their events. */
	for (uint32_t i = 0; q->ops && i < q->op_count; i++) {
		struct rt_op *op = &q->ops[(q->op_head + i) % q->op_cap];

		if (op->event)
			rt_event_retired(op->event, op->record_id,
					 VNPURT_STATUS_DEVICE_RESET, 0);
	}
	if (q->arena.size)
		d->be->bo_free(d->bdev, &q->arena);
	if (q->stamp_bo.size)
		d->be->bo_free(d->bdev, &q->stamp_bo);
	if (q->timeline_bo.size)
		d->be->bo_free(d->bdev, &q->timeline_bo);
	for (int i = 0; i < 2; i++)
		if (q->staging[i].size)
			d->be->bo_free(d->bdev, &q->staging[i]);
	pthread_mutex_destroy(&q->lock);
	pthread_mutex_destroy(&q->staging_lock);
	free(q->ops);
	free(q);
}

vnpu_error_t rt_hwq_create(struct rt_device *d, int priority,
			   struct rt_hwq **out)
{
	struct rt_hwq *q = NULL;
	unsigned qid;
	vnpu_error_t err = VNPU_SUCCESS;

	pthread_mutex_lock(&d->lock);
	/* A queue no stream uses any more comes first. */
	for (unsigned i = 0; i < d->nhwq && !q; i++)
		if (!d->hwqs[i]->users)
			q = d->hwqs[i];
	if (!q && d->nhwq < VNPU_MAX_QUEUES &&
	    d->be->queue_create(d->bdev, priority, &qid) == VNPU_SUCCESS) {
		err = hwq_new(d, qid, &q);
		if (err)
			d->be->queue_destroy(d->bdev, qid);
		else
			d->hwqs[d->nhwq++] = q;
	}
	if (!q && !err && d->nhwq) {
		/* Every queue is taken: share. A high-priority stream
		 * prefers a queue no low-priority stream uses; otherwise
		 * round robin. */
		for (unsigned i = 0; i < d->nhwq && !q; i++) {
			struct rt_hwq *o = d->hwqs[(d->rr_next + i) % d->nhwq];

			if (priority == VNPU_STREAM_PRIORITY_HIGH &&
			    o->users == o->high_users)
				q = o;
		}
		if (!q)
			q = d->hwqs[d->rr_next % d->nhwq];
		d->rr_next++;
	}
	if (q) {
		q->users++;
		if (priority == VNPU_STREAM_PRIORITY_HIGH)
			q->high_users++;
	} else if (!err) {
		err = VNPU_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&d->lock);
	if (err)
		return rt_fail(err, "creating a hardware queue");
	*out = q;
	return VNPU_SUCCESS;
}

void rt_hwq_release(struct rt_device *d, struct rt_hwq *q)
{
	pthread_mutex_lock(&d->lock);
	q->users--;
	pthread_mutex_unlock(&d->lock);
}

vnpu_error_t rt_stream_new(struct rt_device *d, int priority,
			   struct rt_stream **out)
{
	struct rt_stream *s = calloc(1, sizeof(*s));
	vnpu_error_t err;

	if (!s)
		return rt_fail(VNPU_ERROR_OUT_OF_MEMORY, "allocating a stream");
	err = rt_hwq_create(d, priority, &s->hwq);
	if (err) {
		free(s);
		return err;
	}
	s->dev = d;
	s->priority = priority;
	s->id = (uint32_t)atomic_fetch_add(&d->next_stream_id, 1);
	/* Work of this stream may already be queued by a previous user of
	 * the hwq: start after it. */
	pthread_mutex_lock(&s->hwq->lock);
	s->last_seq = s->hwq->last_seq;
	pthread_mutex_unlock(&s->hwq->lock);
	*out = s;
	return VNPU_SUCCESS;
}

void rt_stream_free(struct rt_stream *s)
{
	struct rt_hwq *q = s->hwq;
	uint64_t seq;

	/* Every op of this stream must retire before it goes. */
	pthread_mutex_lock(&q->lock);
	seq = s->last_seq;
	pthread_mutex_unlock(&q->lock);
	rt_hwq_wait(q, seq);
	pthread_mutex_lock(&q->dev->lock);
	if (s->priority == VNPU_STREAM_PRIORITY_HIGH)
		q->high_users--;
	pthread_mutex_unlock(&q->dev->lock);
	rt_hwq_release(s->dev, q);
	free(s);
}
