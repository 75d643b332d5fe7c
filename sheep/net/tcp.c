// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The transport over TCP and unix stream sockets (net/transport.h).
 *
 * A receive of less than STAGE_SIZE bytes (a header, a small payload) is
 * served from a per-connection stage: one read() takes whatever the socket
 * holds, up to STAGE_SIZE, and later small receives are copied out of it,
 * so a client that pipelines 4 KiB writes costs one read() for many
 * requests instead of two per request.  Larger receives are read straight
 * into the owner's buffer (after what the stage already holds).  A
 * connection's first send of a turn of the loop is written at once (no
 * wait at depth 1); later ones of the same turn are written together at
 * its end (a zero timer), in one writev(): the replies that one batch of
 * completions produces, the peer requests that one read of pipelined
 * client requests produces.  epoll is told only about changes of
 * interest.
 *
 * Lifetime: every entry point (the fd handler, xconn_send, xconn_recv,
 * xconn_close, the accept path) holds the connection busy while it runs.
 * Closing only marks it dead and releases the socket; the memory goes when
 * the last busy holder leaves, so a callback may close the connection
 * under the feet of the loop that called it.  The same outermost holder
 * recomputes the epoll interest once on its way out.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "net.h"
#include "util.h"
#include "net/transport.h"

/*
 * Read-ahead per connection: at most this much is read beyond the posted
 * receive, and only while one is posted (back-pressure still holds the
 * rest in the socket).  Held only while it holds bytes: thousands of idle
 * connections (SD_MAX_CLIENTS per listener) cost no memory for it.
 */
#define STAGE_SIZE	(32 * 1024)
/* buffers of queued messages gathered into one writev() */
#define WRITE_IOV	64

struct xlistener {
	struct event_loop *loop;
	int fd;
	bool closed;
	/* one for being open, one per connection, one per running handler */
	int refcnt;
	int nr_open;		/* connections of this listener not yet freed */
	int max;
	char *what;
	struct accept_logs logs;	/* refusals, one line per interval */
	xaccept_fn fn;
	void *arg;
};

struct tcp_conn {
	struct xconn_base base;	/* first: xconn_transport() reads it */
	struct event_loop *loop;
	int fd;
	uint32_t events;	/* what epoll watches now */
	int busy;		/* entry points running for this connection */
	bool connected;
	bool dead;
	bool owner_closed;	/* xconn_close() ran: closed() is not due */
	bool writing;		/* inside the write loop */
	bool draining;		/* inside the done(-1) loop */
	const struct xconn_ops *ops;
	void *arg;
	/* the posted receive */
	bool rposted;
	void *rbuf;
	size_t rlen, rgot;
	bool reading;		/* inside conn_read() */
	/* bytes read ahead: stage[soff, soff + slen) */
	char *stage;
	size_t soff, slen;
	/* delivers staged bytes to a receive posted outside conn_read() */
	struct timer stage_timer;
	/* writes what was queued during the loop's turn */
	struct timer flush_timer;
	uint64_t sent_turn;	/* the turn of the last send written at once */
	/* sends, oldest first; the head may be partly written */
	struct list_head sendq;
	size_t backlog;		/* bytes of sendq not yet written */
	struct xlistener *l;	/* NULL for outgoing connections */
};

static struct tcp_conn *tc(struct xconn *x)
{
	return (struct tcp_conn *)x;
}

static void listener_put(struct xlistener *l)
{
	if (--l->refcnt)
		return;
	free(l->what);
	free(l);
}

/* ---- lifetime ---- */

static void conn_free(struct tcp_conn *c)
{
	struct xlistener *l = c->l;

	timer_del(&c->stage_timer);
	timer_del(&c->flush_timer);
	free(c->stage);
	free(c);
	if (l) {
		l->nr_open--;
		listener_put(l);
	}
}

static void update_events(struct tcp_conn *c)
{
	uint32_t ev = 0;

	if (c->rposted)
		ev |= EPOLLIN;
	/*
	 * Writability also reports the end of a non-blocking connect; sends
	 * the flush timer will write need no wake-up.
	 */
	if (!c->connected ||
	    (!list_empty(&c->sendq) && !c->flush_timer.armed))
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	if (event_mod(c->loop, c->fd, ev)) {
		sd_err("event_mod: %m");
		return;
	}
	c->events = ev;
}

static void conn_enter(struct tcp_conn *c)
{
	c->busy++;
}

/* the outermost holder frees a dead connection or settles epoll interest */
static void conn_leave(struct tcp_conn *c)
{
	if (--c->busy)
		return;
	if (c->dead)
		conn_free(c);
	else
		update_events(c);
}

/*
 * Fail queued sends in order.  A done(-1) may send again: the message
 * joins the queue and this loop fails it too, after the older ones.
 */
static void fail_sends(struct tcp_conn *c)
{
	if (c->draining)
		return;
	c->draining = true;
	while (!list_empty(&c->sendq)) {
		struct xmsg *m = list_first_entry(&c->sendq, struct xmsg,
						  list);

		list_del(&m->list);
		m->done(m, -1);
	}
	c->draining = false;
	c->backlog = 0;
}

static void conn_shutdown(struct tcp_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	c->rposted = false;
	c->rbuf = NULL;
	event_del(c->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	fail_sends(c);
}

/* the connection broke under us: the owner hears of it once */
static void conn_break(struct tcp_conn *c)
{
	if (c->dead)
		return;
	conn_enter(c);
	conn_shutdown(c);
	if (!c->owner_closed && c->ops && c->ops->closed)
		c->ops->closed((struct xconn *)c, c->arg);
	conn_leave(c);
}

static void stage_timer_fn(struct timer *t);
static void flush_timer_fn(struct timer *t);

static struct tcp_conn *conn_new(struct event_loop *loop, int fd,
				 bool connected)
{
	struct tcp_conn *c = xzalloc(sizeof(*c));

	c->base.xp = &tcp_transport;
	c->loop = loop;
	c->fd = fd;
	c->connected = connected;
	INIT_LIST_HEAD(&c->sendq);
	c->stage_timer.fn = stage_timer_fn;
	c->flush_timer.fn = flush_timer_fn;
	return c;
}

/* ---- receiving ---- */

/* a receive into no buffer: drop up to 64 KiB per read */
static ssize_t read_discard(int fd, size_t len)
{
	char junk[65536];

	return read(fd, junk, MIN(len, sizeof(junk)));
}

static void recv_complete(struct tcp_conn *c)
{
	c->rposted = false;
	c->rbuf = NULL;
	if (c->ops && c->ops->recv_done)
		c->ops->recv_done((struct xconn *)c, c->arg);
}

/* move staged bytes into the posted receive (or drop them for a discard) */
static void take_staged(struct tcp_conn *c, size_t want)
{
	size_t n = MIN(want, c->slen);

	if (c->rbuf)
		memcpy((char *)c->rbuf + c->rgot, c->stage + c->soff, n);
	c->rgot += n;
	c->soff += n;
	c->slen -= n;
}

/* one read() of whatever the socket holds into the (empty) stage */
static ssize_t read_stage(struct tcp_conn *c)
{
	ssize_t n;

	if (!c->stage)
		c->stage = xmalloc(STAGE_SIZE);
	n = read(c->fd, c->stage, STAGE_SIZE);
	if (n > 0) {
		c->soff = 0;
		c->slen = (size_t)n;
	}
	return n;
}

static ssize_t read_direct(struct tcp_conn *c, size_t want)
{
	if (c->rbuf)
		return read(c->fd, (char *)c->rbuf + c->rgot, want);
	return read_discard(c->fd, want);
}

/*
 * Read while a receive is posted: a recv_done() that posts the next one
 * keeps us reading, one that does not stops us (back-pressure).  Staged
 * bytes go first; only then is the socket read.
 */
static void conn_read(struct tcp_conn *c)
{
	/*
	 * A read that got less than it asked for emptied the socket: the
	 * next would only say EAGAIN (one system call per wake-up, five per
	 * write at depth 1 over three nodes).  epoll is level-triggered, so
	 * bytes that come later wake us again.
	 */
	bool drained = false;

	c->reading = true;
	while (!c->dead && c->rposted) {
		size_t want = c->rlen - c->rgot;
		ssize_t n;

		/* checked first: a read of 0 bytes would look like EOF */
		if (!want) {
			recv_complete(c);
			continue;
		}
		if (c->slen) {
			take_staged(c, want);
			continue;
		}
		if (drained)
			break;
		if (want < STAGE_SIZE) {
			n = read_stage(c);
			drained = n > 0 && n < STAGE_SIZE;
		} else {
			n = read_direct(c, want);
			if (n > 0)
				c->rgot += (size_t)n;
			drained = n > 0 && (size_t)n < want;
		}
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		conn_break(c);
		break;
	}
	c->reading = false;
	if (!c->slen) {
		free(c->stage);
		c->stage = NULL;
	}
}

/* a receive posted outside conn_read() that staged bytes can serve */
static void stage_timer_fn(struct timer *t)
{
	struct tcp_conn *c = container_of(t, struct tcp_conn, stage_timer);

	conn_enter(c);
	if (!c->dead && c->connected && c->rposted)
		conn_read(c);
	conn_leave(c);
}

/* ---- sending ---- */

/* the unsent bytes of the queued messages, oldest first, into @iov */
static int gather(struct tcp_conn *c, struct iovec *iov, size_t *total)
{
	struct xmsg *m;
	int nr = 0;

	*total = 0;
	list_for_each_entry(m, &c->sendq, list) {
		size_t skip = m->sent;

		for (int i = 0; i < m->nr_iov; i++) {
			size_t len = m->iov[i].iov_len;

			if (skip >= len) {
				skip -= len;
				continue;
			}
			if (nr == WRITE_IOV)
				return nr;
			iov[nr].iov_base = (char *)m->iov[i].iov_base + skip;
			iov[nr++].iov_len = len - skip;
			*total += len - skip;
			skip = 0;
		}
	}
	return nr;
}

/* count @n written bytes; the messages now whole move to @done */
static void credit(struct tcp_conn *c, size_t n, struct list_head *done)
{
	while (!list_empty(&c->sendq)) {
		struct xmsg *m = list_first_entry(&c->sendq, struct xmsg,
						  list);
		size_t take = MIN(m->len - m->sent, n);

		m->sent += take;
		n -= take;
		if (m->sent < m->len)
			break;
		list_del(&m->list);
		list_add_tail(&m->list, done);
	}
}

/*
 * Write queued messages until the socket is full, as many per writev()
 * as fit.  The written ones hear done(0) in order, from a list of their
 * own: one that closes the connection fails only the unwritten ones.  A
 * done() that sends again only queues (we are in this loop).
 */
static void conn_write(struct tcp_conn *c)
{
	if (c->writing)
		return;
	c->writing = true;
	while (!c->dead && !list_empty(&c->sendq)) {
		struct iovec iov[WRITE_IOV];
		size_t total;
		int nr = gather(c, iov, &total);
		ssize_t n = 0;
		LIST_HEAD(done);

		if (nr) {
			n = writev(c->fd, iov, nr);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n < 0) {
				conn_break(c);
				break;
			}
			c->backlog -= (size_t)n;
		}
		credit(c, (size_t)n, &done);
		while (!list_empty(&done)) {
			struct xmsg *m = list_first_entry(&done, struct xmsg,
							  list);

			list_del(&m->list);
			m->done(m, 0);
		}
		if ((size_t)n < total)
			break;		/* the socket is full: EPOLLOUT */
	}
	c->writing = false;
}

/* the end of the loop's turn: write what was queued during it */
static void flush_timer_fn(struct timer *t)
{
	struct tcp_conn *c = container_of(t, struct tcp_conn, flush_timer);

	conn_enter(c);
	if (!c->dead && c->connected)
		conn_write(c);
	conn_leave(c);
}

/* ---- the fd handler ---- */

/* writable (or failed): the non-blocking connect has finished */
static void finish_connect(struct tcp_conn *c)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		conn_break(c);
		return;
	}
	c->connected = true;
}

static void conn_handler(int fd, uint32_t events, void *data)
{
	struct tcp_conn *c = data;

	conn_enter(c);
	if (!c->connected) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			finish_connect(c);
	} else if ((events & (EPOLLERR | EPOLLHUP)) && !c->rposted) {
		/* nobody reads the error: a level-triggered HUP would spin */
		conn_break(c);
	}
	if (!c->dead && c->connected && c->rposted &&
	    (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		conn_read(c);
	if (!c->dead && c->connected && (events & EPOLLOUT))
		conn_write(c);
	conn_leave(c);
}

/* ---- the transport table ---- */

static void tcp_set_ops(struct xconn *x, const struct xconn_ops *ops,
			void *arg)
{
	struct tcp_conn *c = tc(x);

	c->ops = ops;
	c->arg = arg;
}

static void tcp_recv(struct xconn *x, void *buf, size_t len)
{
	struct tcp_conn *c = tc(x);

	if (c->dead)
		return;
	if (c->rposted)
		sd_err("a receive is already posted; replacing it");
	conn_enter(c);
	c->rposted = true;
	c->rbuf = buf;
	c->rlen = len;
	c->rgot = 0;
	/*
	 * The socket may hold nothing more to wake epoll: serve the staged
	 * bytes from the loop, never from under the caller.
	 */
	if (c->slen && !c->reading)
		timer_add(c->loop, &c->stage_timer, 0);
	conn_leave(c);
}

static size_t msg_len(const struct xmsg *m)
{
	size_t len = 0;

	for (int i = 0; i < m->nr_iov; i++)
		len += m->iov[i].iov_len;
	return len;
}

static void tcp_send(struct xconn *x, struct xmsg *m)
{
	struct tcp_conn *c = tc(x);
	bool first;

	if (m->nr_iov < 0 || m->nr_iov > XMSG_MAX_IOV) {
		sd_err("message with %d buffers", m->nr_iov);
		m->done(m, -1);
		return;
	}
	m->len = msg_len(m);
	m->sent = 0;
	conn_enter(c);
	first = list_empty(&c->sendq);
	list_add_tail(&m->list, &c->sendq);
	if (c->dead) {
		/* only reachable from our own callbacks while closing */
		fail_sends(c);
		goto out;
	}
	c->backlog += m->len;
	/*
	 * Nothing ahead of it: the turn's first send is written now, later
	 * ones at the end of the turn with whatever else comes meanwhile.
	 * (Behind others, the socket is full and EPOLLOUT will write it, or
	 * a flush is due anyway.)
	 */
	if (first && c->connected && !c->writing) {
		uint64_t turn = event_loop_turn(c->loop);

		if (c->sent_turn != turn) {
			c->sent_turn = turn;
			conn_write(c);
		} else {
			timer_add(c->loop, &c->flush_timer, 0);
		}
	}
out:
	conn_leave(c);
}

static void tcp_close(struct xconn *x)
{
	struct tcp_conn *c = tc(x);

	c->owner_closed = true;
	conn_enter(c);
	/* what is queued goes out if the socket takes it now (a last reply) */
	if (!c->dead && c->connected)
		conn_write(c);
	conn_shutdown(c);
	conn_leave(c);
}

static size_t tcp_send_backlog(const struct xconn *x)
{
	return ((const struct tcp_conn *)x)->backlog;
}

static bool tcp_connected(const struct xconn *x)
{
	return ((const struct tcp_conn *)x)->connected;
}

/* the least RTO of a new connection; a refusal other than "unknown" once */
static void set_rto_min(int fd)
{
	static bool warned;

	if (net_set_rto_min(fd, XPRT_RTO_MIN_US) < 0 && !warned) {
		warned = true;
		sd_warn("cannot set a least retransmission timeout of %d us: "
			"%m; connections keep the system's", XPRT_RTO_MIN_US);
	}
}

static struct xconn *tcp_connect(struct event_loop *loop,
				 const uint8_t addr[16], uint16_t port)
{
	struct tcp_conn *c;
	int fd = net_connect_nonblock(addr, port);

	if (fd < 0)
		return NULL;
	c = conn_new(loop, fd, false);
	net_set_keepalive(fd, XPRT_KEEPIDLE, XPRT_KEEPINTVL, XPRT_KEEPCNT);
	set_rto_min(fd);
	if (event_add(loop, fd, EPOLLOUT, conn_handler, c))
		goto fail;
	c->events = EPOLLOUT;
	return (struct xconn *)c;
fail:
	close(fd);
	free(c);
	return NULL;
}

static size_t tcp_recv_got(const struct xconn *x)
{
	const struct tcp_conn *c = (const struct tcp_conn *)x;

	return c->rposted ? c->rgot : 0;
}

static int tcp_peer_addr(const struct xconn *x, struct sockaddr_storage *ss)
{
	const struct tcp_conn *c = (const struct tcp_conn *)x;
	socklen_t len = sizeof(*ss);

	if (c->dead)
		return -1;
	return getpeername(c->fd, (struct sockaddr *)ss, &len);
}

const struct transport tcp_transport = {
	.name = "tcp",
	.connect = tcp_connect,
	.set_ops = tcp_set_ops,
	.recv = tcp_recv,
	.send = tcp_send,
	.close = tcp_close,
	.send_backlog = tcp_send_backlog,
	.connected = tcp_connected,
	.recv_got = tcp_recv_got,
	.peer_addr = tcp_peer_addr,
};

/* ---- listeners ---- */

static void accept_one(struct xlistener *l, int fd)
{
	struct tcp_conn *c = conn_new(l->loop, fd, true);

	/* a dead host's connections go in bounded time (unix ones fail) */
	net_set_keepalive(fd, XPRT_KEEPIDLE, XPRT_KEEPINTVL, XPRT_KEEPCNT);
	set_rto_min(fd);

	/* no receive posted yet: only errors and hang-ups are reported */
	if (event_add(l->loop, fd, 0, conn_handler, c)) {
		sd_err("%s: event_add: %m", l->what);
		close(fd);
		free(c);
		return;
	}
	c->l = l;
	l->refcnt++;
	l->nr_open++;
	conn_enter(c);
	if (l->fn((struct xconn *)c, l->arg))
		tcp_close((struct xconn *)c);
	conn_leave(c);
}

static void accept_handler(int fd, uint32_t events, void *data)
{
	struct xlistener *l = data;

	/* the accept fn may close the listener: keep it until we are out */
	l->refcnt++;
	while (!l->closed) {
		int cfd = net_accept_bounded(fd, l->nr_open, l->max, l->what,
					     &l->logs);

		if (cfd < 0)
			break;
		accept_one(l, cfd);
	}
	listener_put(l);
}

static struct xlistener *listener_new(struct event_loop *loop, int fd,
				      int max, const char *what,
				      xaccept_fn fn, void *arg)
{
	struct xlistener *l;
	int err;

	if (fd < 0)
		return NULL;
	l = xzalloc(sizeof(*l));
	l->loop = loop;
	l->fd = fd;
	l->refcnt = 1;
	l->max = max;
	l->what = xstrdup(what ? what : "connection");
	l->fn = fn;
	l->arg = arg;
	if (event_add(loop, fd, EPOLLIN, accept_handler, l))
		goto fail;
	return l;
fail:
	err = errno;
	close(fd);
	listener_put(l);
	errno = err;
	return NULL;
}

struct xlistener *tcp_listen(struct event_loop *loop, const char *bindaddr,
			     int port, int max, const char *what,
			     xaccept_fn fn, void *arg)
{
	return listener_new(loop, net_listen_tcp(bindaddr, port), max, what,
			    fn, arg);
}

struct xlistener *unix_listen(struct event_loop *loop, const char *path,
			      int max, const char *what, xaccept_fn fn,
			      void *arg)
{
	return listener_new(loop, net_listen_unix(path), max, what, fn, arg);
}

/* open connections stay; they release the listener as they are freed */
void xlistener_close(struct xlistener *l)
{
	if (l->closed)
		return;
	l->closed = true;
	event_del(l->loop, l->fd);
	close(l->fd);
	l->fd = -1;
	listener_put(l);
}
