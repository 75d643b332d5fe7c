// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <urcu.h>
#include "util.h"
#include "work.h"

struct work_queue {
	const char *name;
	struct event_loop *loop;
	pthread_mutex_t lock;		/* the list only, never held to sleep */
	/*
	 * One token per queued item, and one per thread at stop.  Not a
	 * condition variable: a woken waiter of one retakes the mutex marked
	 * contended, so its next unlock is a FUTEX_WAKE system call even
	 * when nobody waits; a post or a wait that does not sleep costs none.
	 */
	sem_t items;
	struct list_head q;
	/* queued or running: raised under the lock, lowered without it */
	size_t nr_queued;
	size_t capacity;
	int nr_threads;
	pthread_t *threads;
};

static void work_done_on_loop(struct loop_call *c)
{
	struct work *w = container_of(c, struct work, call);

	w->done(w);
}

static void *worker(void *arg)
{
	struct work_queue *wq = arg;

	rcu_register_thread();
	for (;;) {
		struct work *w;

		while (sem_wait(&wq->items) && errno == EINTR)
			;
		pthread_mutex_lock(&wq->lock);
		if (list_empty(&wq->q)) {
			/* a stop token: every item has a token of its own */
			pthread_mutex_unlock(&wq->lock);
			break;
		}
		w = list_first_entry(&wq->q, struct work, list);
		list_del(&w->list);
		pthread_mutex_unlock(&wq->lock);

		w->fn(w);

		/* before done() may queue again; one lock per item, not two */
		__atomic_sub_fetch(&wq->nr_queued, 1, __ATOMIC_RELEASE);
		if (w->done) {
			w->call.fn = work_done_on_loop;
			event_loop_call(wq->loop, &w->call);
		}
	}
	rcu_unregister_thread();
	return NULL;
}

struct work_queue *wq_create(const char *name, int nr_threads,
			     size_t capacity, struct event_loop *loop)
{
	struct work_queue *wq = xzalloc(sizeof(*wq));

	wq->name = name;
	wq->loop = loop;
	wq->capacity = capacity;
	wq->nr_threads = nr_threads;
	pthread_mutex_init(&wq->lock, NULL);
	sem_init(&wq->items, 0, 0);
	INIT_LIST_HEAD(&wq->q);
	wq->threads = xzalloc(sizeof(pthread_t) * (size_t)nr_threads);
	for (int i = 0; i < nr_threads; i++) {
		char comm[16];

		if (pthread_create(&wq->threads[i], NULL, worker, wq)) {
			sd_err("cannot start %s worker", name);
			abort();
		}
		/* "sheep-io" and the like in top -H and /proc */
		snprintf(comm, sizeof(comm), "sheep-%s", name);
		pthread_setname_np(wq->threads[i], comm);
	}
	return wq;
}

int wq_queue(struct work_queue *wq, struct work *w)
{
	pthread_mutex_lock(&wq->lock);
	/* a worker may lower it meanwhile: the check errs on the safe side */
	if (__atomic_load_n(&wq->nr_queued, __ATOMIC_ACQUIRE) >=
	    wq->capacity) {
		pthread_mutex_unlock(&wq->lock);
		return -1;
	}
	__atomic_add_fetch(&wq->nr_queued, 1, __ATOMIC_RELAXED);
	list_add_tail(&w->list, &wq->q);
	pthread_mutex_unlock(&wq->lock);
	sem_post(&wq->items);
	return 0;
}

size_t wq_pending(struct work_queue *wq)
{
	return __atomic_load_n(&wq->nr_queued, __ATOMIC_RELAXED);
}

void wq_destroy(struct work_queue *wq)
{
	for (int i = 0; i < wq->nr_threads; i++)
		sem_post(&wq->items);
	for (int i = 0; i < wq->nr_threads; i++)
		pthread_join(wq->threads[i], NULL);
	sem_destroy(&wq->items);
	pthread_mutex_destroy(&wq->lock);
	free(wq->threads);
	free(wq);
}
