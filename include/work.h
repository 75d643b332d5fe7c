/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A bounded pool of worker threads.  work->fn runs on a worker; work->done
 * runs afterwards on the event-loop thread.  The queue has a fixed capacity:
 * wq_queue() refuses work beyond it, and the caller applies back-pressure.
 */
#ifndef KELPIE_WORK_H
#define KELPIE_WORK_H

#include <stddef.h>
#include "event.h"
#include "list.h"

struct work {
	void (*fn)(struct work *w);
	void (*done)(struct work *w);
	struct loop_call call;
	struct list_head list;
};

struct work_queue;

struct work_queue *wq_create(const char *name, int nr_threads,
			     size_t capacity, struct event_loop *loop);
/* 0, or -1 when the queue is full */
int wq_queue(struct work_queue *wq, struct work *w);
size_t wq_pending(struct work_queue *wq);
/* stop the threads after the queued work has run */
void wq_destroy(struct work_queue *wq);

#endif
