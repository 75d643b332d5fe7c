// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "event.h"
#include "util.h"

struct handler {
	event_fn fn;
	void *data;
	int active;
};

struct event_loop {
	int epfd;
	int callfd;
	int stop;
	uint64_t turn;		/* epoll_wait() calls so far */
	struct handler *h;
	int nr_h;
	struct list_head timers;	/* sorted by when */
	pthread_mutex_t call_lock;
	struct list_head calls;
	pthread_t runner;	/* the thread in event_loop_run, if running */
	int running;
};

static void run_calls(int fd, uint32_t events, void *data)
{
	struct event_loop *loop = data;
	struct list_head todo;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		sd_err("eventfd read: %m");
	INIT_LIST_HEAD(&todo);
	pthread_mutex_lock(&loop->call_lock);
	if (!list_empty(&loop->calls)) {
		todo.next = loop->calls.next;
		todo.prev = loop->calls.prev;
		todo.next->prev = &todo;
		todo.prev->next = &todo;
		INIT_LIST_HEAD(&loop->calls);
	}
	pthread_mutex_unlock(&loop->call_lock);
	while (!list_empty(&todo)) {
		struct loop_call *c = list_first_entry(&todo, struct loop_call,
						       list);

		list_del(&c->list);
		c->fn(c);
	}
}

struct event_loop *event_loop_create(void)
{
	struct event_loop *loop = xzalloc(sizeof(*loop));

	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	loop->callfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->epfd < 0 || loop->callfd < 0) {
		free(loop);
		return NULL;
	}
	INIT_LIST_HEAD(&loop->timers);
	INIT_LIST_HEAD(&loop->calls);
	pthread_mutex_init(&loop->call_lock, NULL);
	event_add(loop, loop->callfd, EPOLLIN, run_calls, loop);
	return loop;
}

void event_loop_destroy(struct event_loop *loop)
{
	close(loop->epfd);
	close(loop->callfd);
	free(loop->h);
	free(loop);
}

int event_add(struct event_loop *loop, int fd, uint32_t events, event_fn fn,
	      void *data)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	if (fd >= loop->nr_h) {
		int n = MAX(fd + 1, loop->nr_h * 2);

		loop->h = xrealloc(loop->h, (size_t)n * sizeof(*loop->h));
		memset(loop->h + loop->nr_h, 0,
		       (size_t)(n - loop->nr_h) * sizeof(*loop->h));
		loop->nr_h = n;
	}
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev))
		return -1;
	loop->h[fd] = (struct handler){ fn, data, 1 };
	return 0;
}

int event_mod(struct event_loop *loop, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void event_del(struct event_loop *loop, int fd)
{
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (fd < loop->nr_h)
		loop->h[fd].active = 0;
}

void timer_add(struct event_loop *loop, struct timer *t, uint64_t ms)
{
	struct timer *pos;

	if (t->armed)
		list_del(&t->list);
	t->when = now_msec() + ms;
	t->armed = 1;
	list_for_each_entry(pos, &loop->timers, list) {
		if (pos->when > t->when) {
			list_add_tail(&t->list, &pos->list);
			return;
		}
	}
	list_add_tail(&t->list, &loop->timers);
}

void timer_del(struct timer *t)
{
	if (t->armed) {
		list_del(&t->list);
		t->armed = 0;
	}
}

void event_loop_call(struct event_loop *loop, struct loop_call *c)
{
	uint64_t one = 1;

	bool wake;

	pthread_mutex_lock(&loop->call_lock);
	/* the loop takes the whole list at once: wake it only once */
	wake = list_empty(&loop->calls);
	list_add_tail(&c->list, &loop->calls);
	pthread_mutex_unlock(&loop->call_lock);
	if (wake && write(loop->callfd, &one, sizeof(one)) < 0 &&
	    errno != EAGAIN)
		sd_err("eventfd write: %m");
}

static int next_timeout(struct event_loop *loop)
{
	struct timer *t;
	uint64_t now;

	if (list_empty(&loop->timers))
		return 1000;
	t = list_first_entry(&loop->timers, struct timer, list);
	now = now_msec();
	return t->when <= now ? 0 : (int)MIN(t->when - now, 1000);
}

static void run_timers(struct event_loop *loop)
{
	uint64_t now = now_msec();

	while (!list_empty(&loop->timers)) {
		struct timer *t = list_first_entry(&loop->timers, struct timer,
						   list);

		if (t->when > now)
			break;
		list_del(&t->list);
		t->armed = 0;
		t->fn(t);
	}
}

void event_loop_run(struct event_loop *loop)
{
	struct epoll_event evs[128];

	loop->stop = 0;		/* a stopped loop may be run again */
	loop->runner = pthread_self();
	__atomic_store_n(&loop->running, 1, __ATOMIC_RELEASE);
	while (!loop->stop) {
		int n = epoll_wait(loop->epfd, evs, 128, next_timeout(loop));

		loop->turn++;
		if (n < 0 && errno != EINTR) {
			sd_err("epoll_wait: %m");
			break;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			/* a handler may have closed fds later in this batch */
			if (fd < loop->nr_h && loop->h[fd].active)
				loop->h[fd].fn(fd, evs[i].events,
					       loop->h[fd].data);
		}
		run_timers(loop);
	}
	__atomic_store_n(&loop->running, 0, __ATOMIC_RELEASE);
}

bool event_loop_on_thread(const struct event_loop *loop)
{
	return loop && __atomic_load_n(&loop->running, __ATOMIC_ACQUIRE) &&
	       pthread_equal(loop->runner, pthread_self());
}

uint64_t event_loop_turn(const struct event_loop *loop)
{
	return loop->turn;
}

void event_loop_stop(struct event_loop *loop)
{
	loop->stop = 1;
}
