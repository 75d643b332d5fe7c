// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The connections of the object storage endpoint (sheep --s3, s3.h).
 *
 * A poller thread accepts connections and reads their request heads
 * without blocking, each into a buffer of its own: a client that trickles
 * its head, or sends none, costs a slot and a buffer, never a thread, and
 * is dropped when its head is not complete within S3_HEAD_SEC of its
 * first byte or of the connection (or when it idles past S3_IDLE_SEC
 * between requests).  A complete head goes to
 * one of S3_WORKERS threads, which serves the request with blocking I/O
 * (each read and send within S3_IO_SEC) and the cluster's requests
 * (front_exec, gw_exec_sync), then hands the connection back to the poller
 * if it is kept alive.  At most S3_MAX_CONNS connections, and
 * S3_MAX_PER_PEER from one address: one more is answered 503 and closed.  Nothing here runs on the main loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "net.h"
#include "util.h"
#include "front/s3.h"

#define S3_MAX_CONNS	256
#define S3_MAX_PER_PEER	64	/* connections from one address */
#define S3_WORKERS	8
#define S3_HEAD_SEC	10
#define S3_IDLE_SEC	60
#define S3_IO_SEC	30
#define S3_LINGER_MS	2000		/* reading an unwanted body before close */
#define S3_LINGER_BYTES	(16U << 20)

enum conn_state { C_FREE, C_HEAD, C_QUEUED, C_BUSY };

struct s3_conn {
	int fd;
	enum conn_state state;
	uint8_t peer[16];		/* the client's address (v4 mapped) */
	uint64_t since;			/* ms: the head began, or idle since */
	size_t got;			/* bytes in buf */
	size_t head_len;		/* of the request served */
	uint64_t body_left;		/* of its body */
	bool close;
	bool continued;			/* 100 Continue sent */
	bool fresh;			/* no request served yet */
	struct http_request req;
	char buf[HTTP_MAX_HEAD];
};

static void (*serve_fn)(struct s3_conn *c);
static int listen_fd = -1, ep_fd = -1;
static struct s3_conn conns[S3_MAX_CONNS];

/* conns' states, and the queue of complete heads for the workers */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER;
static struct s3_conn *queue[S3_MAX_CONNS];
static unsigned int q_head, q_len;

const struct http_request *s3_request(const struct s3_conn *c)
{
	return &c->req;
}

void s3_close_after(struct s3_conn *c)
{
	c->close = true;
}

bool s3_closing(const struct s3_conn *c)
{
	return c->close || !c->req.keep_alive;
}

void s3_answering(struct s3_conn *c)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

	/*
	 * An empty body awaited with Expect: S3 says 100 first, and some
	 * clients (botocore) misread the connection's next answer if not
	 */
	if (c->req.expect_continue && !c->continued && !c->req.chunked &&
	    !c->req.content_length) {
		c->continued = true;
		s3_send(c, cont, sizeof(cont) - 1);
	}
}

const char *s3_head(const struct s3_conn *c, size_t *len)
{
	*len = c->head_len;
	return c->buf;
}

int s3_fd(const struct s3_conn *c)
{
	return c->fd;
}

size_t s3_body_buffered(const struct s3_conn *c)
{
	size_t extra = c->got - c->head_len;

	return (size_t)MIN((uint64_t)extra, c->body_left);
}

uint64_t s3_body_left(const struct s3_conn *c)
{
	return c->body_left;
}

void s3_no_continue(struct s3_conn *c)
{
	c->continued = true;
}

int s3_send(struct s3_conn *c, const void *buf, size_t len)
{
	if (net_send_all(c->fd, buf, len)) {
		c->close = true;
		return -1;
	}
	return 0;
}

ssize_t s3_body_read(struct s3_conn *c, void *buf, size_t len)
{
	size_t extra = c->got - c->head_len;
	ssize_t n;

	if (len > c->body_left)
		len = (size_t)c->body_left;
	if (!len)
		return 0;
	/* the client waits for a word before it sends the body */
	if (c->req.expect_continue && !c->continued && !extra) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

		c->continued = true;
		if (s3_send(c, cont, sizeof(cont) - 1))
			return -1;
	}
	if (extra) {
		/* body bytes that came with the head */
		n = (ssize_t)MIN(len, extra);
		memcpy(buf, c->buf + c->head_len, (size_t)n);
		memmove(c->buf + c->head_len, c->buf + c->head_len + n,
			extra - (size_t)n);
		c->got -= (size_t)n;
	} else {
		do {
			n = recv(c->fd, buf, len, 0);
		} while (n < 0 && errno == EINTR);
		if (n <= 0) {
			c->close = true;
			return -1;
		}
	}
	c->body_left -= (uint64_t)n;
	return n;
}

int s3_body_drain(struct s3_conn *c)
{
	char scratch[16384];

	while (c->body_left) {
		if (s3_body_read(c, scratch, sizeof(scratch)) <= 0)
			return -1;
	}
	return 0;
}

/* ---- the poller ---- */

static void conn_free(struct s3_conn *c)
{
	close(c->fd);
	pthread_mutex_lock(&lock);
	c->state = C_FREE;
	c->fd = -1;
	pthread_mutex_unlock(&lock);
}

static int arm(struct s3_conn *c, int op)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT,
				  .data.ptr = c };

	return epoll_ctl(ep_fd, op, c->fd, &ev);
}

/* a short answer from the poller, before any worker saw the request */
static void refuse(int fd, int status, const char *reason)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg), "HTTP/1.1 %d %s\r\n"
			 "Content-Length: 0\r\nConnection: close\r\n\r\n",
			 status, reason);

	if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return;	/* the client is gone or full: it is closed anyway */
}

static const char *reason_of(int err)
{
	switch (err) {
	case HTTP_TOO_LONG_URI: return "URI Too Long";
	case HTTP_EXPECTATION: return "Expectation Failed";
	case HTTP_TOO_LARGE: return "Request Header Fields Too Large";
	case HTTP_NOT_IMPL: return "Not Implemented";
	case HTTP_VERSION: return "HTTP Version Not Supported";
	default: return "Bad Request";
	}
}

static void enqueue(struct s3_conn *c)
{
	pthread_mutex_lock(&lock);
	c->state = C_QUEUED;
	queue[(q_head + q_len) % S3_MAX_CONNS] = c;
	q_len++;
	pthread_cond_signal(&queued);
	pthread_mutex_unlock(&lock);
}

/* @c's buffer: a complete head (queued), more to wait for, or an error */
static void head_check(struct s3_conn *c)
{
	int n = http_parse_head(c->buf, c->got, &c->req);

	if (n > 0) {
		c->head_len = (size_t)n;
		enqueue(c);
		return;
	}
	if (n < 0) {
		refuse(c->fd, -n, reason_of(n));
		conn_free(c);
		return;
	}
	if (c->got == sizeof(c->buf)) {
		refuse(c->fd, 431, reason_of(HTTP_TOO_LARGE));
		conn_free(c);
		return;
	}
	if (arm(c, EPOLL_CTL_MOD))
		conn_free(c);
}

static void readable(struct s3_conn *c)
{
	ssize_t n;

	do {
		n = recv(c->fd, c->buf + c->got, sizeof(c->buf) - c->got,
			 MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno != EAGAIN)) {
		conn_free(c);
		return;
	}
	if (n > 0) {
		if (!c->got)
			c->since = now_msec();	/* the head begins */
		c->got += (size_t)n;
	}
	head_check(c);
}

/*
 * A free slot for @fd from @peer: NULL if none, or if the peer holds
 * S3_MAX_PER_PEER already (*@busy_peer), so that one client cannot take
 * every slot
 */
static struct s3_conn *slot_take(int fd, const uint8_t peer[16],
				 bool *busy_peer)
{
	struct s3_conn *c = NULL;
	int same = 0;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < S3_MAX_CONNS; i++) {
		if (conns[i].state == C_FREE && !c)
			c = &conns[i];
		else if (conns[i].state != C_FREE &&
			 !memcmp(conns[i].peer, peer, 16))
			same++;
	}
	*busy_peer = same >= S3_MAX_PER_PEER;
	if (*busy_peer)
		c = NULL;
	if (c) {
		memcpy(c->peer, peer, 16);
		c->state = C_HEAD;
		c->fd = fd;
		c->got = 0;
		c->close = false;
		c->fresh = true;
		c->since = now_msec();
	}
	pthread_mutex_unlock(&lock);
	return c;
}

/* the address of a peer, IPv4 as IPv4-mapped IPv6 */
static void peer_of(const struct sockaddr_storage *sa, uint8_t out[16])
{
	memset(out, 0, 16);
	if (sa->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else if (sa->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

static void accept_one(void)
{
	struct sockaddr_storage sa;
	socklen_t slen = sizeof(sa);
	int fd = accept4(listen_fd, (struct sockaddr *)&sa, &slen,
			 SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct s3_conn *c;
	uint8_t peer[16];
	bool busy_peer;

	if (fd < 0)
		return;	/* EAGAIN, or EMFILE: the next round */
	/*
	 * An answer is a head and a body sent apart: with Nagle the body
	 * would wait for the head's ACK, which the client delays (40 ms)
	 */
	net_set_nodelay(fd);
	peer_of(&sa, peer);
	c = slot_take(fd, peer, &busy_peer);
	if (!c) {
		refuse(fd, 503, busy_peer ? "Service Unavailable (too many "
		       "connections from this address)" :
		       "Service Unavailable");
		close(fd);
		return;
	}
	if (arm(c, EPOLL_CTL_ADD))
		conn_free(c);
}

/* heads not complete in time, connections idle too long */
static void sweep(void)
{
	uint64_t now = now_msec();

	for (int i = 0; i < S3_MAX_CONNS; i++) {
		struct s3_conn *c = &conns[i];
		/* a connection that never sent a request has no idle time */
		uint64_t limit = (c->got || c->fresh ? S3_HEAD_SEC :
				  S3_IDLE_SEC) * 1000;
		bool drop;

		pthread_mutex_lock(&lock);
		drop = c->state == C_HEAD && now - c->since > limit;
		pthread_mutex_unlock(&lock);
		if (!drop)
			continue;
		if (c->got)
			refuse(c->fd, 408, "Request Timeout");
		epoll_ctl(ep_fd, EPOLL_CTL_DEL, c->fd, NULL);
		conn_free(c);
	}
}

static void *poller(void *arg)
{
	struct epoll_event evs[64];
	uint64_t last_sweep = now_msec();

	(void)arg;
	for (;;) {
		int n = epoll_wait(ep_fd, evs, 64, 1000);

		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr)
				accept_one();
			else
				readable(evs[i].data.ptr);
		}
		if (now_msec() - last_sweep >= 1000) {
			sweep();
			last_sweep = now_msec();
		}
	}
	return NULL;
}

/* ---- the workers ---- */

static struct s3_conn *dequeue(void)
{
	struct s3_conn *c;

	pthread_mutex_lock(&lock);
	while (!q_len)
		pthread_cond_wait(&queued, &lock);
	c = queue[q_head];
	q_head = (q_head + 1) % S3_MAX_CONNS;
	q_len--;
	c->state = C_BUSY;
	pthread_mutex_unlock(&lock);
	return c;
}

static void set_blocking(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, on ? fl & ~O_NONBLOCK : fl | O_NONBLOCK);
}

/* the request's bytes leave the buffer; what follows it stays */
static void consume_head(struct s3_conn *c)
{
	c->got -= c->head_len;
	memmove(c->buf, c->buf + c->head_len, c->got);
	c->head_len = 0;
}

/* serve the requests of @c whose heads are here: false to close it */
static bool serve_conn(struct s3_conn *c)
{
	for (;;) {
		int n;

		c->body_left = c->req.chunked ? 0 : c->req.content_length;
		c->continued = false;
		serve_fn(c);
		if (c->close || !c->req.keep_alive || s3_body_drain(c))
			return false;
		consume_head(c);
		if (!c->got)
			return true;
		/* a pipelined request */
		n = http_parse_head(c->buf, c->got, &c->req);
		if (n < 0)
			return false;
		if (!n)
			return true;
		c->head_len = (size_t)n;
	}
}

/*
 * A connection closed with a body unread: its answer is sent, so say no
 * more and read what the client still sends, for a bounded time, before
 * closing: a close with unread bytes would reset the connection and the
 * client could lose the answer
 */
static void linger_close(struct s3_conn *c)
{
	struct timeval tv = { .tv_sec = 1 };
	char scratch[16384];
	size_t total = 0;
	uint64_t until = now_msec() + S3_LINGER_MS;

	if (!c->body_left && !c->req.chunked)
		return;
	shutdown(c->fd, SHUT_WR);
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (total < S3_LINGER_BYTES && now_msec() < until) {
		ssize_t n = recv(c->fd, scratch, sizeof(scratch), 0);

		if (n <= 0 && !(n < 0 && errno == EINTR))
			break;
		if (n > 0)
			total += (size_t)n;
	}
}

static void *worker(void *arg)
{
	struct timeval tv = { .tv_sec = S3_IO_SEC };

	(void)arg;
	for (;;) {
		struct s3_conn *c = dequeue();

		set_blocking(c->fd, true);
		setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (!serve_conn(c)) {
			linger_close(c);
			epoll_ctl(ep_fd, EPOLL_CTL_DEL, c->fd, NULL);
			conn_free(c);
			continue;
		}
		set_blocking(c->fd, false);
		pthread_mutex_lock(&lock);
		c->state = C_HEAD;
		c->fresh = false;
		c->since = now_msec();
		pthread_mutex_unlock(&lock);
		if (arm(c, EPOLL_CTL_MOD)) {
			epoll_ctl(ep_fd, EPOLL_CTL_DEL, c->fd, NULL);
			conn_free(c);
		}
	}
	return NULL;
}

int s3_thread_start(void *(*fn)(void *))
{
	sigset_t all, old;
	pthread_t t;
	int ret;

	/* signals are the main loop's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&t, NULL, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -1;
	pthread_detach(t);
	return 0;
}

int s3_conns_start(const char *addr, int port,
		   void (*serve)(struct s3_conn *c))
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	serve_fn = serve;
	for (int i = 0; i < S3_MAX_CONNS; i++)
		conns[i].fd = -1;
	listen_fd = net_listen_tcp(addr, port);
	if (listen_fd < 0) {
		sd_err("S3: cannot listen on %s:%d: %m%s", addr ? addr : "*",
		       port, errno == EADDRINUSE ? " (another program has "
		       "it: give --s3 another port)" : "");
		return -1;
	}
	ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ep_fd < 0 || epoll_ctl(ep_fd, EPOLL_CTL_ADD, listen_fd, &ev)) {
		sd_err("S3: cannot start: %m");
		return -1;
	}
	for (int i = 0; i < S3_WORKERS; i++)
		if (s3_thread_start(worker)) {
			sd_err("S3: cannot start a worker: %m");
			return -1;
		}
	if (s3_thread_start(poller)) {
		sd_err("S3: cannot start: %m");
		return -1;
	}
	sd_info("S3 on http://%s:%d/", addr ? addr : "*", port);
	return 0;
}
