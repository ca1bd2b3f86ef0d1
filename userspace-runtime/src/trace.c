// SPDX-License-Identifier: MIT
/*
 * VNPU_TRACE=file.json: a Chrome trace (chrome://tracing, Perfetto) of
 * device operations, timed by TIMESTAMP commands around each of them (the
 * device clock, in ns), and of host-side synchronisation. Written at
 * vnpu_finalize(), or at exit when the program never finalized.
 */
#include <inttypes.h>
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
	pthread_mutex_lock(&trace.lock);
	free(trace.path);
	trace.path = strdup(path);
	trace.n = 0;
	__atomic_store_n(&trace.on, trace.path != NULL, __ATOMIC_RELAXED);
	if (!trace.atexit_set)
		trace.atexit_set = !atexit(at_exit);
	pthread_mutex_unlock(&trace.lock);
}

static void add(const char *name, uint32_t tid, bool host, uint64_t op_id,
		uint64_t bytes, uint64_t start, uint64_t end)
{
	struct trace_event *e;

	pthread_mutex_lock(&trace.lock);
	if (trace.n == trace.cap) {
		size_t cap = trace.cap ? trace.cap * 2 : 1024;
		struct trace_event *n = realloc(trace.ev, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&trace.lock);
			return;
		}
		trace.ev = n;
		trace.cap = cap;
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

void rt_trace_write(void)
{
	FILE *f;

	pthread_mutex_lock(&trace.lock);
	if (!trace.on || !trace.path) {
		pthread_mutex_unlock(&trace.lock);
		return;
	}
	f = fopen(trace.path, "w");
	if (f) {
		fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
		fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
			   "\"args\":{\"name\":\"vnpu device\"}},\n");
		fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,"
			   "\"args\":{\"name\":\"host\"}}");
		for (size_t i = 0; i < trace.n; i++) {
			const struct trace_event *e = &trace.ev[i];

			fprintf(f,
				",\n{\"name\":\"%s\",\"cat\":\"%s\","
				"\"ph\":\"X\",\"pid\":%d,\"tid\":%" PRIu32
				",\"ts\":%" PRIu64 ".%03" PRIu64
				",\"dur\":%" PRIu64 ".%03" PRIu64,
				e->name, e->host ? "host" : "device",
				e->host ? 2 : 1, e->tid, e->start_ns / 1000,
				e->start_ns % 1000,
				(e->end_ns - e->start_ns) / 1000,
				(e->end_ns - e->start_ns) % 1000);
			if (!e->host)
				fprintf(f,
					",\"args\":{\"op\":%" PRIu64
					",\"bytes\":%" PRIu64 "}",
					e->op_id, e->bytes);
			fprintf(f, "}");
		}
		fprintf(f, "\n]}\n");
		fclose(f);
	}
	/* Written once per session: a later vnpu_init starts afresh. */
	trace.on = false;
	free(trace.path);
	trace.path = NULL;
	free(trace.ev);
	trace.ev = NULL;
	trace.n = trace.cap = 0;
	pthread_mutex_unlock(&trace.lock);
}
