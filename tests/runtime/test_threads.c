// SPDX-License-Identifier: MIT
/* Many threads on many streams at once, each checking its own data, plus
 * concurrent allocation and event traffic between threads. */
#include <pthread.h>

#include "rt_check.h"

#define THREADS 8
#define ROUNDS 40
#define N 2048

static int failures[THREADS];

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t seed = 1000 + id;
	vnpu_stream_t s;
	uint8_t *src = malloc(N * 4), *back = malloc(N * 4);
	float *h = malloc(N * 4);

	if (vnpu_stream_create(&s, id % 2)) {
		failures[id]++;
		return NULL;
	}
	for (int r = 0; r < ROUNDS; r++) {
		size_t n = 1 + rt_rand(&seed) % (N * 4);
		void *d, *d2;
		float v = (float)(id * 1000 + r);

		for (size_t i = 0; i < n; i++)
			src[i] = (uint8_t)rt_rand(&seed);
		if (vnpu_malloc(&d, N * 4) || vnpu_malloc(&d2, n)) {
			failures[id]++;
			break;
		}
		/* copy chain, then a kernel, all async on the stream */
		failures[id] += vnpu_memcpy_async(d2, src, n, VNPU_MEMCPY_H2D,
						  s) != VNPU_SUCCESS;
		failures[id] += vnpu_memcpy_async(back, d2, n, VNPU_MEMCPY_D2H,
						  s) != VNPU_SUCCESS;
		failures[id] += rt_fill(d, N, v, s) != VNPU_SUCCESS;
		failures[id] += vnpu_memcpy_async(h, d, N * 4, VNPU_MEMCPY_D2H,
						  s) != VNPU_SUCCESS;
		failures[id] += vnpu_stream_synchronize(s) != VNPU_SUCCESS;
		failures[id] += memcmp(back, src, n) != 0;
		for (int i = 0; i < N; i++)
			failures[id] += h[i] != v;
		failures[id] += vnpu_free(d) != VNPU_SUCCESS;
		failures[id] += vnpu_free(d2) != VNPU_SUCCESS;
	}
	failures[id] += vnpu_stream_destroy(s) != VNPU_SUCCESS;
	free(src);
	free(back);
	free(h);
	return NULL;
}

START_TEST(many_threads_many_streams)
{
	pthread_t t[THREADS];
	struct vnpu_mem_stats st;

	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(failures[i], 0);
	RT_OK(vnpu_mem_stats(&st));
	ck_assert_uint_eq(st.in_use, 0);
}
END_TEST

/* A producer/consumer pair: thread A fills a buffer on its stream and
 * records an event; thread B's stream waits for it on the device and
 * copies the data out. */
struct pc {
	float *d;
	vnpu_event_t e;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int produced, consumed, bad;
};

static void *producer(void *arg)
{
	struct pc *pc = arg;
	vnpu_stream_t s;

	vnpu_stream_create(&s, 0);
	for (int r = 1; r <= 30; r++) {
		pthread_mutex_lock(&pc->lock);
		while (pc->consumed != r - 1)
			pthread_cond_wait(&pc->cond, &pc->lock);
		pthread_mutex_unlock(&pc->lock);
		for (int k = 0; k < 5; k++)
			pc->bad += rt_fill(pc->d, N, r * 10 + k, s) != 0;
		pc->bad += vnpu_event_record(pc->e, s) != 0;
		pthread_mutex_lock(&pc->lock);
		pc->produced = r;
		pthread_cond_broadcast(&pc->cond);
		pthread_mutex_unlock(&pc->lock);
	}
	vnpu_stream_destroy(s);
	return NULL;
}

static void *consumer(void *arg)
{
	struct pc *pc = arg;
	vnpu_stream_t s;
	float *h = malloc(N * 4);

	vnpu_stream_create(&s, 1);
	for (int r = 1; r <= 30; r++) {
		pthread_mutex_lock(&pc->lock);
		while (pc->produced != r)
			pthread_cond_wait(&pc->cond, &pc->lock);
		pthread_mutex_unlock(&pc->lock);
		pc->bad += vnpu_stream_wait_event(s, pc->e) != 0;
		pc->bad += vnpu_memcpy_async(h, pc->d, N * 4, VNPU_MEMCPY_D2H,
					     s) != 0;
		pc->bad += vnpu_stream_synchronize(s) != 0;
		for (int i = 0; i < N; i++)
			pc->bad += h[i] != r * 10 + 4;
		pthread_mutex_lock(&pc->lock);
		pc->consumed = r;
		pthread_cond_broadcast(&pc->cond);
		pthread_mutex_unlock(&pc->lock);
	}
	vnpu_stream_destroy(s);
	free(h);
	return NULL;
}

START_TEST(events_between_threads)
{
	struct pc pc;
	pthread_t a, b;

	memset(&pc, 0, sizeof(pc));
	pthread_mutex_init(&pc.lock, NULL);
	pthread_cond_init(&pc.cond, NULL);
	RT_OK(vnpu_malloc((void **)&pc.d, N * 4));
	RT_OK(vnpu_event_create(&pc.e, VNPU_EVENT_DISABLE_TIMING));
	pthread_create(&a, NULL, producer, &pc);
	pthread_create(&b, NULL, consumer, &pc);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	ck_assert_int_eq(pc.bad, 0);
	RT_OK(vnpu_event_destroy(pc.e));
	RT_OK(vnpu_free(pc.d));
	pthread_mutex_destroy(&pc.lock);
	pthread_cond_destroy(&pc.cond);
}
END_TEST

/* Last error is per thread. */
static void *error_thread(void *arg)
{
	int *ok = arg;

	*ok = vnpu_malloc(NULL, 1) == VNPU_ERROR_NULL_POINTER &&
	      vnpu_peek_last_error() == VNPU_ERROR_NULL_POINTER;
	return NULL;
}

START_TEST(last_error_is_thread_local)
{
	pthread_t t;
	int ok = 0;

	vnpu_get_last_error();
	pthread_create(&t, NULL, error_thread, &ok);
	pthread_join(t, NULL);
	ck_assert(ok);
	ck_assert_int_eq(vnpu_peek_last_error(), VNPU_SUCCESS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime-threads");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
	tcase_add_test(tc, many_threads_many_streams);
	tcase_add_test(tc, events_between_threads);
	tcase_add_test(tc, last_error_is_thread_local);
	suite_add_tcase(s, tc);
	return rt_run(s);
}
