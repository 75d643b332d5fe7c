/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A small epoll event loop: fd handlers, one-shot timers, and calls posted
 * from other threads (completions of worker threads arrive this way).
 */
#ifndef KELPIE_EVENT_H
#define KELPIE_EVENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include "list.h"

struct event_loop;
typedef void (*event_fn)(int fd, uint32_t events, void *data);

struct timer {
	uint64_t when;			/* monotonic ms */
	void (*fn)(struct timer *t);
	struct list_head list;
	int armed;
};

/* a call posted to the loop thread, possibly from another thread */
struct loop_call {
	void (*fn)(struct loop_call *c);
	struct list_head list;
};

struct event_loop *event_loop_create(void);
void event_loop_destroy(struct event_loop *loop);
int event_add(struct event_loop *loop, int fd, uint32_t events, event_fn fn,
	      void *data);
int event_mod(struct event_loop *loop, int fd, uint32_t events);
void event_del(struct event_loop *loop, int fd);
/* (re)arm @t to fire once, @ms from now; on the loop thread only */
void timer_add(struct event_loop *loop, struct timer *t, uint64_t ms);
void timer_del(struct timer *t);
/* thread-safe; @c->fn runs on the loop thread */
void event_loop_call(struct event_loop *loop, struct loop_call *c);
void event_loop_run(struct event_loop *loop);
/* is the caller the thread running @loop? (for asserts: who must not
 * block on it) */
bool event_loop_on_thread(const struct event_loop *loop);
/* which turn of the loop (one epoll_wait() and its handlers) this is */
uint64_t event_loop_turn(const struct event_loop *loop);
void event_loop_stop(struct event_loop *loop);

#endif
