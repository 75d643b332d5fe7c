// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Budget for threads (budget_gate.h).  A take posts a call to the loop,
 * which charges it at once when nothing waits before it and the budget
 * allows, else queues it; every release of budget (a request finished,
 * a put) grants the queue's head for as long as the budget allows, in
 * order, so a large take is not passed over by small ones for ever.
 * The waiting list is the loop thread's alone; a take's caller sleeps on
 * its own condition.  Takes are bounded by the threads that make them.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include "event.h"
#include "list.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "front/budget_gate.h"

struct take {
	struct loop_call call;
	struct list_head wait;
	uint64_t bytes;
	bool granted;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

struct put {
	struct loop_call call;
	uint64_t bytes;
};

static LIST_HEAD(waiting);

static void grant(struct take *t)
{
	budget_charge(t->bytes);
	pthread_mutex_lock(&t->lock);
	t->granted = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* a release hook: grant the waiting takes the budget now allows */
static void resume(void)
{
	while (!list_empty(&waiting)) {
		struct take *t = list_first_entry(&waiting, struct take, wait);

		if (budget_over(t->bytes, false))
			return;
		list_del(&t->wait);
		grant(t);
	}
}

static void take_on_loop(struct loop_call *c)
{
	struct take *t = container_of(c, struct take, call);

	if (list_empty(&waiting) && !budget_over(t->bytes, false))
		grant(t);
	else
		list_add_tail(&t->wait, &waiting);
}

static void put_on_loop(struct loop_call *c)
{
	struct put *p = container_of(c, struct put, call);

	budget_release(p->bytes);	/* runs the hooks: resume() too */
	free(p);
}

void budget_gate_init(void)
{
	budget_add_release_hook(resume);
}

void budget_gate_take(uint64_t bytes)
{
	struct take t = { .bytes = bytes };

	/* it waits for the loop: on the loop, it would wait for ever */
	sd_assert(!event_loop_on_thread(sys.loop));
	INIT_LIST_HEAD(&t.wait);
	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	t.call.fn = take_on_loop;
	event_loop_call(sys.loop, &t.call);
	pthread_mutex_lock(&t.lock);
	while (!t.granted)
		pthread_cond_wait(&t.cond, &t.lock);
	pthread_mutex_unlock(&t.lock);
	pthread_mutex_destroy(&t.lock);
	pthread_cond_destroy(&t.cond);
}

void budget_gate_put(uint64_t bytes)
{
	struct put *p = xzalloc(sizeof(*p));

	p->bytes = bytes;
	p->call.fn = put_on_loop;
	event_loop_call(sys.loop, &p->call);
}
