// SPDX-License-Identifier: MIT
/*
 * VNPU_TRACE=file.json: a Chrome trace (chrome://tracing, Perfetto) of
 * device operations, timed by TIMESTAMP commands around each of them (the
 * device clock, in ns), and of host-side synchronisation. Written at
 * vnpu_finalize(), or at exit when the program never finalized. Nothing
 * is lost silently: events dropped for want of memory are counted and
 * the trace says so ("trace truncated: N events lost"), with one warning
 * on stderr; a file that cannot be written is a warning naming it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct trace_event {
	char name[48];
	uint32_t tid;
	bool host;
	uint64_t op_id, bytes;
	uint64_t start_ns, end_ns;
};

static struct {
	pthread_mutex_t lock;
	bool on, atexit_set;
	char *path;
	struct trace_event *ev;
	size_t n, cap;
	/* Events dropped this session for want of memory (the trace says
	 * so, and stderr once), and the host time of the first. */
	uint64_t lost, first_lost_ns;
	unsigned fail_allocs; /* testing: allocations still to fail */
} trace = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t rt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool rt_trace_on(void)
{
	return __atomic_load_n(&trace.on, __ATOMIC_RELAXED);
}

static void at_exit(void)
{
	rt_trace_write();
}

void rt_trace_start(const char *path)
{
	bool on;

	pthread_mutex_lock(&trace.lock);
	free(trace.path);
	trace.path = strdup(path);
	trace.n = 0;
	trace.lost = 0;
	on = trace.path != NULL;
	__atomic_store_n(&trace.on, on, __ATOMIC_RELAXED);
	if (!trace.atexit_set) {
		trace.atexit_set = !atexit(at_exit);
		if (!trace.atexit_set)
			fprintf(stderr,
				"libvnpurt: VNPU_TRACE: no exit handler: %s "
				"is written by vnpu_finalize() only\n",
				path);
	}
	pthread_mutex_unlock(&trace.lock);
	if (!on)
		fprintf(stderr,
			"libvnpurt: VNPU_TRACE=%s: out of memory; no trace "
			"is written\n",
			path);
}

void rt_trace_test_fail_allocs(unsigned count)
{
	pthread_mutex_lock(&trace.lock);
	trace.fail_allocs = count;
	pthread_mutex_unlock(&trace.lock);
}

/* Room for one more event (trace lock held); false without memory. */
static bool reserve(void)
{
	size_t cap = trace.cap ? trace.cap * 2 : 1024;
	struct trace_event *n;

	if (trace.n < trace.cap)
		return true;
	if (trace.fail_allocs) {
		trace.fail_allocs--;
		return false;
	}
	if (cap > SIZE_MAX / sizeof(*n))
		return false;
	n = realloc(trace.ev, cap * sizeof(*n));
	if (!n)
		return false;
	trace.ev = n;
	trace.cap = cap;
	return true;
}

static void add(const char *name, uint32_t tid, bool host, uint64_t op_id,
		uint64_t bytes, uint64_t start, uint64_t end)
{
	struct trace_event *e;

	pthread_mutex_lock(&trace.lock);
	if (!trace.on) {
		pthread_mutex_unlock(&trace.lock);
		return;
	}
	if (!reserve()) {
		/* Counted, so that the trace says it is incomplete. */
		if (!trace.lost++) {
			trace.first_lost_ns = rt_now_ns();
			fprintf(stderr,
				"libvnpurt: VNPU_TRACE: out of memory: events "
				"are dropped from %s (it will say how many)\n",
				trace.path);
		}
		pthread_mutex_unlock(&trace.lock);
		return;
	}
	e = &trace.ev[trace.n++];
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->tid = tid;
	e->host = host;
	e->op_id = op_id;
	e->bytes = bytes;
	e->start_ns = start;
	e->end_ns = end >= start ? end : start;
	pthread_mutex_unlock(&trace.lock);
}

void rt_trace_device(const char *what, uint32_t stream_id, uint64_t op_id,
		     uint64_t bytes, uint64_t start_ns, uint64_t end_ns,
		     bool failed)
{
	if (rt_trace_on() && !failed)
		add(what, stream_id, false, op_id, bytes, start_ns, end_ns);
}

void rt_trace_host(const char *what, uint64_t start_ns, uint64_t end_ns)
{
	if (rt_trace_on())
		add(what, (uint32_t)gettid(), true, 0, 0, start_ns, end_ns);
}

/* The trace file being written; err is the first write's errno. */
struct trace_out {
	FILE *f;
	int err;
};

static void out(struct trace_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out(struct trace_out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->err)
		return;
	va_start(ap, fmt);
	if (vfprintf(o->f, fmt, ap) < 0)
		o->err = errno ? errno : EIO;
	va_end(ap);
}

static void write_events(struct trace_out *o)
{
	out(o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	out(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
	       "\"args\":{\"name\":\"vnpu device\"}},\n");
	out(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,"
	       "\"args\":{\"name\":\"host\"}}");
	if (trace.lost)
		/* A global instant event where the first one was lost. */
		out(o,
		    ",\n{\"name\":\"trace truncated: %" PRIu64
		    " events lost\",\"cat\":\"vnpu\",\"ph\":\"i\",\"s\":\"g\","
		    "\"pid\":2,\"tid\":0,\"ts\":%" PRIu64 ".%03" PRIu64
		    ",\"args\":{\"lost\":%" PRIu64
		    ",\"cause\":\"out of memory\"}}",
		    trace.lost, trace.first_lost_ns / 1000,
		    trace.first_lost_ns % 1000, trace.lost);
	for (size_t i = 0; i < trace.n; i++) {
		const struct trace_event *e = &trace.ev[i];

		out(o,
		    ",\n{\"name\":\"%s\",\"cat\":\"%s\","
		    "\"ph\":\"X\",\"pid\":%d,\"tid\":%" PRIu32
		    ",\"ts\":%" PRIu64 ".%03" PRIu64 ",\"dur\":%" PRIu64
		    ".%03" PRIu64,
		    e->name, e->host ? "host" : "device", e->host ? 2 : 1,
		    e->tid, e->start_ns / 1000, e->start_ns % 1000,
		    (e->end_ns - e->start_ns) / 1000,
		    (e->end_ns - e->start_ns) % 1000);
		if (!e->host)
			out(o,
			    ",\"args\":{\"op\":%" PRIu64 ",\"bytes\":%" PRIu64
			    "}",
			    e->op_id, e->bytes);
		out(o, "}");
	}
	out(o, "\n]}\n");
}

void rt_trace_write(void)
{
	struct trace_out o = {NULL, 0};

	pthread_mutex_lock(&trace.lock);
	if (!trace.on || !trace.path) {
		pthread_mutex_unlock(&trace.lock);
		return;
	}
	errno = 0;
	o.f = fopen(trace.path, "w");
	if (!o.f) {
		fprintf(stderr,
			"libvnpurt: VNPU_TRACE: cannot open %s: %s; no trace "
			"is written\n",
			trace.path, strerror(errno));
	} else {
		write_events(&o);
		/* Buffered writes fail at the flush or the close. */
		if (fflush(o.f) && !o.err)
			o.err = errno;
		if (fclose(o.f) && !o.err)
			o.err = errno;
		if (o.err)
			fprintf(stderr,
				"libvnpurt: VNPU_TRACE: writing %s failed: "
				"%s; the trace is incomplete\n",
				trace.path, strerror(o.err));
	}
	/* Written once per session: a later vnpu_init starts afresh. */
	__atomic_store_n(&trace.on, false, __ATOMIC_RELAXED);
	free(trace.path);
	trace.path = NULL;
	free(trace.ev);
	trace.ev = NULL;
	trace.n = trace.cap = 0;
	trace.lost = 0;
	pthread_mutex_unlock(&trace.lock);
}
