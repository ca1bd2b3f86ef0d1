// SPDX-License-Identifier: MIT
/*
 * Streams and events against a model of CUDA's semantics: seeded random
 * sequences of writes, event records and re-records, stream waits, reads,
 * queries and synchronizations over several streams and events, with
 * gates (device-side waits on a pinned word the host opens) holding
 * streams back so that queues complete out of order.
 *
 * The model is a vector clock per stream: vc[s][t] is the last operation
 * of stream t that every later operation of s happens after (program
 * order, plus stream_wait_event on the record current at the call). It
 * says, for every read of another stream's cell, the smallest value the
 * read must see; for every query, whether it must be NOT_READY (its
 * record is behind a closed gate) or SUCCESS (its record is known done);
 * and which host synchronizations must return. A violation, or a wait
 * longer than the watchdog allows, fails the test and prints the seed.
 *
 *   VNPU_STRESS_SEQUENCES  sequences to run (default 1000)
 *   VNPU_STRESS_SEED       seed of the first sequence (default 1)
 *   VNPU_STRESS_WATCHDOG   seconds one host call may block (default 60)
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "rt_check.h"
#include "vnpurt_testing.h"

#define MAX_STREAMS 4
#define EVENTS	    3
#define MAX_GATES   8
#define MAX_OPS	    48
#define MAX_READS   MAX_OPS
#define CELL	    64

struct record {
	bool recorded;
	int stream;
	int pos;	     /* the record's position on it */
	int vc[MAX_STREAMS]; /* what it happens after */
};

struct model {
	int streams;
	int pos[MAX_STREAMS]; /* operations issued per stream */
	int vc[MAX_STREAMS][MAX_STREAMS];
	int writes[MAX_STREAMS]; /* values written to each cell */
	/* cell value of stream s after its operation p */
	int value_after[MAX_STREAMS][MAX_OPS + 1];
	struct record ev[EVENTS];
	int ngates;
	int gate_stream[MAX_GATES], gate_pos[MAX_GATES];
	bool gate_open[MAX_GATES];
	int done[MAX_STREAMS]; /* positions known complete */
	/* A stream wait is the last thing issued on the stream: the stream
	 * is not known complete until that wait is. */
	bool tail_wait[MAX_STREAMS];
	int nreads;
	int read_min[MAX_READS], read_cell[MAX_READS], read_stream[MAX_READS];
};

/* ---- device side -------------------------------------------------------- */

static vnpu_stream_t streams[MAX_STREAMS];
static vnpu_event_t events[EVENTS];
static uint8_t *cells;	     /* MAX_STREAMS cells */
static uint8_t *results;     /* MAX_READS slots */
static uint64_t *gate_words; /* pinned */
static uint8_t host_results[MAX_READS * CELL];
static int nstreams;

/* ---- watchdog ------------------------------------------------------------ */

static atomic_uint_fast64_t call_deadline_ms; /* 0: no call blocking */
static uint64_t current_seed;
static int current_op;
static unsigned watchdog_s = 60;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		uint64_t d = atomic_load(&call_deadline_ms);

		if (d && now_ms() > d) {
			fprintf(stderr,
				"stream-model: a host call blocked for more "
				"than %u s: sequence seed %" PRIu64
				", operation %d (rerun with "
				"VNPU_STRESS_SEED=%" PRIu64
				" VNPU_STRESS_SEQUENCES=1)\n",
				watchdog_s, current_seed, current_op,
				current_seed);
			abort();
		}
		usleep(100 * 1000);
	}
	return NULL;
}

static void blocking_begin(void)
{
	atomic_store(&call_deadline_ms, now_ms() + watchdog_s * 1000ull);
}

static void blocking_end(void)
{
	atomic_store(&call_deadline_ms, 0);
}

/* ---- the model --------------------------------------------------------- */

static bool behind_closed_gate(const struct model *m, const int *vc)
{
	for (int g = 0; g < m->ngates; g++)
		if (!m->gate_open[g] && vc[m->gate_stream[g]] >= m->gate_pos[g])
			return true;
	return false;
}

static void learn_done(struct model *m, const int *vc)
{
	for (int t = 0; t < m->streams; t++)
		if (vc[t] > m->done[t])
			m->done[t] = vc[t];
}

static int op_issue(struct model *m, int s)
{
	int p = ++m->pos[s];

	m->vc[s][s] = p;
	m->value_after[s][p] = m->writes[s];
	m->tail_wait[s] = false;
	return p;
}

/* ---- one sequence ----------------------------------------------------- */

static char log_buf[4096];
static size_t log_len;

__attribute__((format(printf, 1, 2))) static void oplog(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (log_len >= sizeof(log_buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(log_buf + log_len, sizeof(log_buf) - log_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		log_len += (size_t)n;
	if (log_len > sizeof(log_buf) - 1)
		log_len = sizeof(log_buf) - 1;
}

#define MODEL_CHECK(cond, fmt, ...)                                            \
	ck_assert_msg(cond, "seed %" PRIu64 " op %d: " fmt, current_seed,      \
		      current_op, __VA_ARGS__)

static vnpu_error_t expect_query(struct model *m, int e)
{
	const struct record *r = &m->ev[e];
	vnpu_error_t q = vnpu_event_query(events[e]);

	MODEL_CHECK(q == VNPU_SUCCESS || q == VNPU_ERROR_NOT_READY,
		    "query(e%d): %s (%s)\n%s", e, vnpu_error_string(q),
		    vnpu_last_error_detail(), log_buf);
	if (!r->recorded) {
		MODEL_CHECK(q == VNPU_SUCCESS,
			    "query(e%d) of a never-recorded event: %s\n%s", e,
			    vnpu_error_string(q), log_buf);
		return q;
	}
	if (behind_closed_gate(m, r->vc))
		MODEL_CHECK(q == VNPU_ERROR_NOT_READY,
			    "query(e%d): SUCCESS, but its latest record (s%d "
			    "#%d) is behind a closed gate\n%s",
			    e, r->stream, r->pos, log_buf);
	if (r->pos <= m->done[r->stream])
		MODEL_CHECK(q == VNPU_SUCCESS,
			    "query(e%d): NOT_READY, but its latest record (s%d "
			    "#%d) is known done\n%s",
			    e, r->stream, r->pos, log_buf);
	if (q == VNPU_SUCCESS)
		learn_done(m, r->vc);
	return q;
}

static void run_sequence(uint64_t seed)
{
	struct model m;
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
	int nops = 12 + (int)(rt_rand(&rng) % (MAX_OPS - 12));

	memset(&m, 0, sizeof(m));
	m.streams = nstreams;
	log_len = 0;
	log_buf[0] = '\0';
	current_seed = seed;
	for (int g = 0; g < MAX_GATES; g++)
		__atomic_store_n(&gate_words[g], 0, __ATOMIC_RELEASE);
	blocking_begin();
	RT_OK(vnpu_memset(cells, 0, (size_t)MAX_STREAMS * CELL));
	RT_OK(vnpu_memset(results, 0xff, (size_t)MAX_READS * CELL));
	blocking_end();
	/* Fresh events: nothing of the last sequence is the latest record. */
	for (int e = 0; e < EVENTS; e++) {
		RT_OK(vnpu_event_destroy(events[e]));
		RT_OK(vnpu_event_create(&events[e],
					rt_rand(&rng) % 2
						? VNPU_EVENT_DEFAULT
						: VNPU_EVENT_DISABLE_TIMING));
	}

	for (current_op = 0; current_op < nops; current_op++) {
		unsigned kind = rt_rand(&rng) % 100;
		int s = (int)(rt_rand(&rng) % (unsigned)nstreams);
		int t = (int)(rt_rand(&rng) % (unsigned)nstreams);
		int e = (int)(rt_rand(&rng) % EVENTS);

		if (kind < 24) { /* write */
			int k = ++m.writes[s];

			oplog("w s%d=%d; ", s, k);
			RT_OK(vnpu_memset_async(cells + s * CELL, k, 4,
						streams[s]));
			op_issue(&m, s);
		} else if (kind < 40) { /* record */
			struct record *r = &m.ev[e];

			oplog("rec e%d@s%d; ", e, s);
			RT_OK(vnpu_event_record(events[e], streams[s]));
			r->recorded = true;
			r->stream = s;
			r->pos = op_issue(&m, s);
			memcpy(r->vc, m.vc[s], sizeof(r->vc));
		} else if (kind < 55) { /* wait */
			oplog("s%d wait e%d; ", s, e);
			RT_OK(vnpu_stream_wait_event(streams[s], events[e]));
			m.tail_wait[s] |= m.ev[e].recorded;
			if (m.ev[e].recorded)
				for (int u = 0; u < nstreams; u++)
					if (m.ev[e].vc[u] > m.vc[s][u])
						m.vc[s][u] = m.ev[e].vc[u];
		} else if (kind < 70 && m.nreads < MAX_READS) { /* read */
			int i = m.nreads++;

			oplog("s%d read s%d->r%d; ", t, s, i);
			RT_OK(vnpu_memcpy_async(results + i * CELL,
						cells + s * CELL, 4,
						VNPU_MEMCPY_D2D, streams[t]));
			m.read_min[i] = m.value_after[s][m.vc[t][s]];
			m.read_cell[i] = s;
			m.read_stream[i] = t;
			op_issue(&m, t);
		} else if (kind < 76 && m.ngates < MAX_GATES) { /* gate */
			int g = m.ngates++;

			oplog("gate g%d@s%d; ", g, s);
			RT_OK(vnpurt_test_gate(streams[s], &gate_words[g], 1));
			m.gate_stream[g] = s;
			m.gate_pos[g] = op_issue(&m, s);
			m.gate_open[g] = false;
		} else if (kind < 85) { /* open a closed gate */
			for (int g = 0; g < m.ngates; g++) {
				if (m.gate_open[g])
					continue;
				oplog("open g%d; ", g);
				__atomic_store_n(&gate_words[g], 1,
						 __ATOMIC_RELEASE);
				m.gate_open[g] = true;
				break;
			}
		} else if (kind < 91) { /* query */
			oplog("query e%d; ", e);
			expect_query(&m, e);
		} else if (kind < 95) { /* event synchronize */
			struct record *r = &m.ev[e];

			if (r->recorded && behind_closed_gate(&m, r->vc)) {
				oplog("query e%d; ", e);
				expect_query(&m, e);
				continue;
			}
			oplog("esync e%d; ", e);
			blocking_begin();
			RT_OK(vnpu_event_synchronize(events[e]));
			blocking_end();
			if (r->recorded)
				learn_done(&m, r->vc);
			expect_query(&m, e);
		} else if (kind < 99) { /* stream synchronize */
			if (behind_closed_gate(&m, m.vc[s])) {
				oplog("squery s%d; ", s);
				MODEL_CHECK(vnpu_stream_query(streams[s]) ==
						    VNPU_ERROR_NOT_READY,
					    "stream %d done behind a closed "
					    "gate\n%s",
					    s, log_buf);
				continue;
			}
			if (m.pos[s] <= m.done[s] && !m.tail_wait[s]) {
				vnpu_error_t q;

				/* Done by what other streams waited for. */
				oplog("squery s%d; ", s);
				q = vnpu_stream_query(streams[s]);
				MODEL_CHECK(q == VNPU_SUCCESS,
					    "query(s%d): %s, but its last "
					    "operation #%d is known done\n%s",
					    s, vnpu_error_string(q), m.pos[s],
					    log_buf);
			}
			oplog("ssync s%d; ", s);
			blocking_begin();
			RT_OK(vnpu_stream_synchronize(streams[s]));
			blocking_end();
			learn_done(&m, m.vc[s]);
			m.tail_wait[s] = false;
		} else { /* device synchronize, when nothing is held */
			bool held = false;

			for (int u = 0; u < nstreams; u++)
				held |= behind_closed_gate(&m, m.vc[u]);
			if (held)
				continue;
			oplog("dsync; ");
			blocking_begin();
			RT_OK(vnpu_device_synchronize());
			blocking_end();
			for (int u = 0; u < nstreams; u++)
				m.done[u] = m.pos[u];
			memset(m.tail_wait, 0, sizeof(m.tail_wait));
		}
	}

	/* Open everything, finish, and judge every read. */
	for (int g = 0; g < m.ngates; g++)
		__atomic_store_n(&gate_words[g], 1, __ATOMIC_RELEASE);
	blocking_begin();
	RT_OK(vnpu_device_synchronize());
	RT_OK(vnpu_memcpy(host_results, results, (size_t)m.nreads * CELL + 1,
			  VNPU_MEMCPY_D2H));
	blocking_end();
	for (int i = 0; i < m.nreads; i++) {
		int seen = host_results[i * CELL];

		MODEL_CHECK(seen >= m.read_min[i] &&
				    seen <= m.writes[m.read_cell[i]],
			    "read r%d of s%d's cell on s%d saw %d; the model "
			    "allows %d..%d\n%s",
			    i, m.read_cell[i], m.read_stream[i], seen,
			    m.read_min[i], m.writes[m.read_cell[i]], log_buf);
	}
	for (int e = 0; e < EVENTS; e++)
		RT_OK(vnpu_event_query(events[e]));
}

static unsigned env_uint(const char *name, unsigned dflt)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

START_TEST(random_sequences_against_the_model)
{
	unsigned n = env_uint("VNPU_STRESS_SEQUENCES", 1000);
	uint64_t seed0 = env_uint("VNPU_STRESS_SEED", 1);
	unsigned dq, q[MAX_STREAMS];
	struct vnpu_device_props p;
	pthread_t wd;
	double t0 = (double)now_ms();

	watchdog_s = env_uint("VNPU_STRESS_WATCHDOG", 60);
	ck_assert_int_eq(pthread_create(&wd, NULL, watchdog, NULL), 0);
	pthread_detach(wd);
	RT_OK(vnpu_device_properties(0, &p));
	/* Streams on queues of their own (a gate holds its whole queue). */
	RT_OK(vnpurt_test_stream_queue(NULL, &dq));
	for (nstreams = 0; nstreams < MAX_STREAMS; nstreams++) {
		bool shared = false;

		RT_OK(vnpu_stream_create(&streams[nstreams], 0));
		RT_OK(vnpurt_test_stream_queue(streams[nstreams],
					       &q[nstreams]));
		shared = q[nstreams] == dq;
		for (int i = 0; i < nstreams; i++)
			shared |= q[i] == q[nstreams];
		if (shared) {
			RT_OK(vnpu_stream_destroy(streams[nstreams]));
			break;
		}
	}
	ck_assert_msg(nstreams >= 2, "fewer than 2 streams on queues of "
				     "their own");
	for (int e = 0; e < EVENTS; e++)
		RT_OK(vnpu_event_create(&events[e], 0));
	RT_OK(vnpu_malloc((void **)&cells, (size_t)MAX_STREAMS * CELL));
	RT_OK(vnpu_malloc((void **)&results, (size_t)MAX_READS * CELL + 1));
	RT_OK(vnpu_host_malloc((void **)&gate_words, 4096));

	for (unsigned i = 0; i < n; i++)
		run_sequence(seed0 + i);
	printf("stream-model: %u sequences (seeds %" PRIu64 "..%" PRIu64
	       ") on %s with %d streams, %d events: no violation, %.1f s\n",
	       n, seed0, seed0 + n - 1, p.backend, nstreams, EVENTS,
	       ((double)now_ms() - t0) / 1000.0);

	RT_OK(vnpu_host_free(gate_words));
	RT_OK(vnpu_free(cells));
	RT_OK(vnpu_free(results));
	for (int e = 0; e < EVENTS; e++)
		RT_OK(vnpu_event_destroy(events[e]));
	for (int s = 0; s < nstreams; s++)
		RT_OK(vnpu_stream_destroy(streams[s]));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-stream-model");
	TCase *tc = tcase_create("model");

	/* The watchdog judges hangs; Check's limit only stops a runaway. */
	tcase_set_timeout(tc, 3600);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, random_sequences_against_the_model);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
