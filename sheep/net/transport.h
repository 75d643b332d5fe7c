/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transport interface: byte-stream connections driven by the event
 * loop, used by client connections, peer connections and the NBD export.
 * TCP (and unix sockets) implement it in tcp.c; an RDMA transport plugs in
 * behind the same table.
 *
 * The model is one posted receive and a queue of sends per connection:
 *   - xconn_recv() asks for exactly @len bytes into @buf; when they have
 *     arrived, ops->recv_done() runs (on the loop thread).  While no
 *     receive is posted, nothing is read: that is how an owner applies
 *     back-pressure (TCP may have read up to 32 KiB ahead while the last
 *     one was posted).  A receive into a NULL buffer discards @len bytes.
 *   - xconn_send() queues a message (a header and a scatter list of up to
 *     XMSG_MAX_IOV buffers in all); messages go out whole and in order
 *     (TCP writes a connection's first of a turn of the loop at once, the
 *     rest of the turn's together at its end).
 *     msg->done(msg, 0) runs once it is written, or msg->done(msg, -1)
 *     when the connection goes away first.  The buffers belong to the
 *     caller and must stay valid until done() runs.
 *   - A connection that breaks (peer hangs up, I/O error, failed connect)
 *     drops its queued sends (their done(-1)) and then calls ops->closed()
 *     once.  xconn_close() by the owner first writes what the socket
 *     takes at once (those sends hear done(0)), then does the same except
 *     that closed() is not called.  After closed() or xconn_close() the
 *     xconn is gone.
 * Every call, and every callback, happens on the loop thread.  Callbacks
 * may call any xconn function on the same connection, including
 * xconn_close(); xconn_send() may call msg->done() before it returns.
 */
#ifndef SHEEP_NET_TRANSPORT_H
#define SHEEP_NET_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "event.h"
#include "list.h"

#define XMSG_MAX_IOV	4

/*
 * TCP keepalive of every connection: a silent peer is probed after 30 s,
 * then every 10 s, and dropped after 3 unanswered probes (about 60 s).
 */
#define XPRT_KEEPIDLE	30
#define XPRT_KEEPINTVL	10
#define XPRT_KEEPCNT	3
/*
 * The least retransmission timeout of every TCP connection, where the
 * kernel lets us set it: a lost segment of a request at depth 1 costs
 * 10 ms instead of Linux's 200 (doc/scale.md, "Slow and lossy links").
 * Only a floor: on a path with longer round trips the kernel's own
 * estimate is larger and wins.
 */
#define XPRT_RTO_MIN_US	10000

struct xconn;
struct xlistener;

/* one message to send: the caller fills iov/nr_iov and done */
struct xmsg {
	struct iovec iov[XMSG_MAX_IOV];
	int nr_iov;
	void (*done)(struct xmsg *m, int err);
	/* private to the transport */
	struct list_head list;
	size_t len, sent;
	int zc_pending;		/* rdma: buffers the peer still reads */
	bool zc_off;		/* rdma: copy every byte */
};

/* what a connection's owner is told, with the arg given to xconn_set_ops */
struct xconn_ops {
	void (*recv_done)(struct xconn *c, void *arg);
	void (*closed)(struct xconn *c, void *arg);
};

/* called for each accepted connection; return non-zero to refuse it */
typedef int (*xaccept_fn)(struct xconn *c, void *arg);

struct transport {
	const char *name;
	struct xconn *(*connect)(struct event_loop *loop,
				 const uint8_t addr[16], uint16_t port);
	void (*set_ops)(struct xconn *c, const struct xconn_ops *ops,
			void *arg);
	void (*recv)(struct xconn *c, void *buf, size_t len);
	void (*send)(struct xconn *c, struct xmsg *m);
	void (*close)(struct xconn *c);
	/* bytes of posted sends not yet written */
	size_t (*send_backlog)(const struct xconn *c);
	/* the connection is up (an outgoing one: its connect finished) */
	bool (*connected)(const struct xconn *c);
	/* bytes of the posted receive that arrived so far (0: none posted) */
	size_t (*recv_got)(const struct xconn *c);
	/* the other end's address (AF_INET, AF_INET6 or AF_UNIX) */
	int (*peer_addr)(const struct xconn *c, struct sockaddr_storage *ss);
};

/* every connection starts with its transport's table */
struct xconn_base {
	const struct transport *xp;
};

static inline const struct transport *xconn_transport(const struct xconn *c)
{
	return ((const struct xconn_base *)c)->xp;
}

static inline void xconn_set_ops(struct xconn *c, const struct xconn_ops *ops,
				 void *arg)
{
	xconn_transport(c)->set_ops(c, ops, arg);
}

static inline void xconn_recv(struct xconn *c, void *buf, size_t len)
{
	xconn_transport(c)->recv(c, buf, len);
}

static inline void xconn_send(struct xconn *c, struct xmsg *m)
{
	xconn_transport(c)->send(c, m);
}

static inline void xconn_close(struct xconn *c)
{
	xconn_transport(c)->close(c);
}

static inline size_t xconn_send_backlog(const struct xconn *c)
{
	return xconn_transport(c)->send_backlog(c);
}

static inline bool xconn_connected(const struct xconn *c)
{
	return xconn_transport(c)->connected(c);
}

static inline size_t xconn_recv_got(const struct xconn *c)
{
	return xconn_transport(c)->recv_got(c);
}

static inline int xconn_peer_addr(const struct xconn *c,
				  struct sockaddr_storage *ss)
{
	return xconn_transport(c)->peer_addr(c, ss);
}

/* TCP and unix-socket transport (tcp.c) */
extern const struct transport tcp_transport;

/*
 * Listen on TCP @bindaddr:@port (NULL: every address) or on the unix
 * socket @path.  Each accepted connection is handed to @fn; while @max
 * connections of this listener are open, new ones are accepted and closed
 * at once (logged as @what).  NULL with errno on failure.
 */
struct xlistener *tcp_listen(struct event_loop *loop, const char *bindaddr,
			     int port, int max, const char *what,
			     xaccept_fn fn, void *arg);
struct xlistener *unix_listen(struct event_loop *loop, const char *path,
			      int max, const char *what, xaccept_fn fn,
			      void *arg);
void xlistener_close(struct xlistener *l);

#endif
