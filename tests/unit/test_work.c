// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The bounded worker pool (lib/work.c): every queued item runs exactly once
 * on a worker and its done() once on the loop thread; the capacity refuses
 * work beyond it and frees up as items finish; wq_destroy() runs what is
 * queued before the threads stop; producers on several threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

#include "event.h"
#include "util.h"
#include "work.h"

#define NR_ITEMS	20000

struct item {
	struct work w;
	int ran;
	int done;
	pthread_t ran_on;
};

static struct event_loop *loop;
static pthread_t loop_thread;
static struct item *items;
static int nr_done, done_wrong_thread;

static void count_fn(struct work *w)
{
	struct item *it = container_of(w, struct item, w);

	__atomic_add_fetch(&it->ran, 1, __ATOMIC_RELAXED);
	it->ran_on = pthread_self();
}

static void count_done(struct work *w)
{
	struct item *it = container_of(w, struct item, w);

	if (!pthread_equal(pthread_self(), loop_thread))
		done_wrong_thread++;
	it->done++;
	if (++nr_done == NR_ITEMS)
		event_loop_stop(loop);
}

static void test_each_item_once(void **state)
{
	struct work_queue *wq;

	(void)state;
	loop = event_loop_create();
	loop_thread = pthread_self();
	items = calloc(NR_ITEMS, sizeof(*items));
	assert_non_null(items);
	nr_done = done_wrong_thread = 0;
	wq = wq_create("t", 4, NR_ITEMS, loop);
	for (int i = 0; i < NR_ITEMS; i++) {
		items[i].w.fn = count_fn;
		items[i].w.done = count_done;
		assert_int_equal(wq_queue(wq, &items[i].w), 0);
	}
	event_loop_run(loop);
	for (int i = 0; i < NR_ITEMS; i++) {
		assert_int_equal(items[i].ran, 1);
		assert_int_equal(items[i].done, 1);
		assert_false(pthread_equal(items[i].ran_on, loop_thread));
	}
	assert_int_equal(done_wrong_thread, 0);
	assert_int_equal(wq_pending(wq), 0);
	wq_destroy(wq);
	free(items);
	event_loop_destroy(loop);
}

/* the first item holds its worker until released */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool inside, released;

static void gate_fn(struct work *w)
{
	(void)w;
	pthread_mutex_lock(&mu);
	inside = true;
	pthread_cond_broadcast(&cv);
	while (!released)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void noop_fn(struct work *w)
{
	(void)w;
}

static int gate_done_count;

static void gate_done(struct work *w)
{
	(void)w;
	if (++gate_done_count == 2)
		event_loop_stop(loop);
}

static void test_capacity(void **state)
{
	struct work_queue *wq;
	struct work a = { .fn = gate_fn, .done = gate_done };
	struct work b = { .fn = noop_fn, .done = gate_done };
	struct work c = { .fn = noop_fn, .done = NULL };

	(void)state;
	loop = event_loop_create();
	gate_done_count = 0;
	inside = released = false;
	wq = wq_create("t", 1, 2, loop);
	assert_int_equal(wq_queue(wq, &a), 0);
	pthread_mutex_lock(&mu);
	while (!inside)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	/* a running item still counts against the capacity */
	assert_int_equal(wq_queue(wq, &b), 0);
	assert_int_equal(wq_pending(wq), 2);
	assert_int_equal(wq_queue(wq, &c), -1);
	pthread_mutex_lock(&mu);
	released = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	event_loop_run(loop);
	assert_int_equal(gate_done_count, 2);
	assert_int_equal(wq_pending(wq), 0);
	assert_int_equal(wq_queue(wq, &c), 0);
	wq_destroy(wq);
	event_loop_destroy(loop);
}

static int slow_ran;

static void slow_fn(struct work *w)
{
	(void)w;
	usleep(100);
	__atomic_add_fetch(&slow_ran, 1, __ATOMIC_RELAXED);
}

static void test_destroy_runs_queued(void **state)
{
	struct work_queue *wq;
	static struct work ws[500];

	(void)state;
	loop = event_loop_create();
	slow_ran = 0;
	wq = wq_create("t", 3, 500, loop);
	for (int i = 0; i < 500; i++) {
		ws[i].fn = slow_fn;
		ws[i].done = NULL;
		assert_int_equal(wq_queue(wq, &ws[i]), 0);
	}
	wq_destroy(wq);
	assert_int_equal(slow_ran, 500);
	event_loop_destroy(loop);
}

#define NR_PRODUCERS	4
#define PER_PRODUCER	5000

static struct work_queue *shared_wq;
static int produced_ran;

static void produced_fn(struct work *w)
{
	(void)w;
	__atomic_add_fetch(&produced_ran, 1, __ATOMIC_RELAXED);
}

static void *producer(void *arg)
{
	struct work *ws = arg;

	for (int i = 0; i < PER_PRODUCER; i++) {
		ws[i].fn = produced_fn;
		ws[i].done = NULL;
		while (wq_queue(shared_wq, &ws[i]))
			usleep(10);	/* full: back-pressure, try again */
	}
	return NULL;
}

static void test_producers(void **state)
{
	pthread_t t[NR_PRODUCERS];
	struct work *ws;

	(void)state;
	loop = event_loop_create();
	produced_ran = 0;
	ws = calloc(NR_PRODUCERS * PER_PRODUCER, sizeof(*ws));
	assert_non_null(ws);
	/* a small capacity, so that producers meet a full queue */
	shared_wq = wq_create("t", 2, 64, loop);
	for (int i = 0; i < NR_PRODUCERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, producer,
						ws + i * PER_PRODUCER), 0);
	for (int i = 0; i < NR_PRODUCERS; i++)
		pthread_join(t[i], NULL);
	wq_destroy(shared_wq);
	assert_int_equal(produced_ran, NR_PRODUCERS * PER_PRODUCER);
	free(ws);
	event_loop_destroy(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_item_once),
		cmocka_unit_test(test_capacity),
		cmocka_unit_test(test_destroy_runs_queued),
		cmocka_unit_test(test_producers),
	};

	return cmocka_run_group_tests_name("work", tests, NULL, NULL);
}
