// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emulation's helper thread and its table (rdma_api_emu).
 *
 * The helper starts with the first event channel and runs for the life
 * of the process.  It waits on every socket of the process, on a wake-up
 * eventfd (work posted) and on the nearest RNR retry; then, with
 * emu_lock held, it reads and serves what came, writes what is queued on
 * every connection, and frees the ids destroyed meanwhile.  It blocks
 * every signal, so they reach the application's threads.
 *
 * A forked child has no helper: its first event channel starts one, and
 * it forgets (closes its copies of) the parent's sockets, which stay the
 * parent's.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "net/rdma_emu.h"

#define EMU_EVENTS	64

static bool helper_running;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* ms until the nearest RNR retry, -1: none */
static int next_timeout(uint64_t now)
{
	uint64_t best = 0, t;
	struct emu_id *e;

	list_for_each_entry(e, &emu_ids, list) {
		t = emu_qp_deadline(to_emu_qp(e->id.qp));
		if (t > now && (!best || t < best))
			best = t;
	}
	return best ? (int)(best - now) : -1;
}

static void serve_conn(struct emu_id *e)
{
	int r;

	while ((r = emu_wire_rx(e)) == EMU_RX_GOT_CM) {
		emu_cm_frame(e);
		if (!e->polled)
			return;
	}
	if (r == EMU_RX_HUP)
		emu_cm_hangup(e);
}

static void serve(struct epoll_event *ev)
{
	struct emu_id *e = ev->data.ptr;
	uint64_t n;

	if (!e) {
		/* drain the wake-ups: write_all() follows for everyone */
		if (read(emu_wakefd, &n, sizeof(n)) < 0)
			n = 0;
		return;
	}
	if (e->dead || !e->polled)
		return;
	if (e->fd_kind == EMU_FD_LISTEN)
		emu_cm_accept_conn(e);
	else if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		serve_conn(e);
}

/* write what every connection has queued */
static void write_all(uint64_t now)
{
	struct emu_id *e, *n;
	int r;

	list_for_each_entry_safe(e, n, &emu_ids, list) {
		if (!e->polled || e->fd_kind != EMU_FD_CONN)
			continue;
		r = emu_wire_tx(e, now);
		if (r < 0)
			emu_cm_hangup(e);
		else
			emu_cm_set_out(e, r == 1);
	}
}

static void *helper(void *arg)
{
	struct epoll_event evs[EMU_EVENTS];
	int epfd = emu_epfd, n, timeout;

	pthread_mutex_lock(&emu_lock);
	for (;;) {
		timeout = next_timeout(emu_now_ms());
		pthread_mutex_unlock(&emu_lock);
		n = epoll_wait(epfd, evs, EMU_EVENTS, timeout);
		pthread_mutex_lock(&emu_lock);
		for (int i = 0; i < n; i++)
			serve(&evs[i]);
		write_all(emu_now_ms());
		/* nothing of this batch refers to them any more */
		emu_cm_reap();
	}
	return NULL;
}

static void before_fork(void)
{
	pthread_mutex_lock(&emu_lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&emu_lock);
}

static void after_fork_child(void)
{
	if (helper_running) {
		close(emu_epfd);
		close(emu_wakefd);
		emu_epfd = emu_wakefd = -1;
		helper_running = false;
		emu_cm_forget_all();
	}
	pthread_mutex_unlock(&emu_lock);
}

static void register_atfork(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static int spawn_helper(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &attr, helper, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return err;
}

static int start_helper(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int err = 0;

	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&emu_lock);
	if (helper_running)
		goto out;
	emu_epfd = epoll_create1(EPOLL_CLOEXEC);
	emu_wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (emu_epfd < 0 || emu_wakefd < 0 ||
	    epoll_ctl(emu_epfd, EPOLL_CTL_ADD, emu_wakefd, &ev)) {
		err = errno;
		goto fail;
	}
	err = spawn_helper();
	if (err)
		goto fail;
	helper_running = true;
	goto out;
fail:
	if (emu_epfd >= 0)
		close(emu_epfd);
	if (emu_wakefd >= 0)
		close(emu_wakefd);
	emu_epfd = emu_wakefd = -1;
out:
	pthread_mutex_unlock(&emu_lock);
	errno = err;
	return err ? -1 : 0;
}

/* every CM user starts here, so the helper is up before any socket */
static struct rdma_event_channel *emu_new_event_channel(void)
{
	if (start_helper())
		return NULL;
	return emu_create_event_channel();
}

const struct rdma_api rdma_api_emu = {
	.name			= "emulation",
	.create_event_channel	= emu_new_event_channel,
	.destroy_event_channel	= emu_destroy_event_channel,
	.event_channel_fd	= emu_event_channel_fd,
	.create_id		= emu_create_id,
	.destroy_id		= emu_destroy_id,
	.resolve_addr		= emu_resolve_addr,
	.resolve_route		= emu_resolve_route,
	.connect		= emu_connect,
	.listen			= emu_listen,
	.accept			= emu_accept,
	.reject			= emu_reject,
	.disconnect		= emu_disconnect,
	.get_cm_event		= emu_get_cm_event,
	.ack_cm_event		= emu_ack_cm_event,
	.alloc_pd		= emu_alloc_pd,
	.dealloc_pd		= emu_dealloc_pd,
	.reg_mr			= emu_reg_mr,
	.dereg_mr		= emu_dereg_mr,
	.create_comp_channel	= emu_create_comp_channel,
	.destroy_comp_channel	= emu_destroy_comp_channel,
	.comp_channel_fd	= emu_comp_channel_fd,
	.create_cq		= emu_create_cq,
	.destroy_cq		= emu_destroy_cq,
	.req_notify_cq		= emu_req_notify_cq,
	.get_cq_event		= emu_get_cq_event,
	.ack_cq_events		= emu_ack_cq_events,
	.poll_cq		= emu_poll_cq,
	.create_qp		= emu_create_qp,
	.destroy_qp		= emu_destroy_qp,
	.post_send		= emu_post_send,
	.post_recv		= emu_post_recv,
};
