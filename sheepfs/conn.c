// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sheepfs: connections to the cluster.
 *
 * Requests go to one sheep of the -a list at a time (the "current"
 * address) over a small pool of sockets, one request in flight per socket,
 * so every FUSE worker thread has a connection of its own while it needs
 * one.  When a connection breaks, or the sheep says it is going away, the
 * current address moves on to the next one and the request is sent again:
 * object reads and writes are idempotent (protocol.md §12.13).  Every
 * request has a deadline (--timeout); waiting for an answer is never cut
 * short by anything but the deadline or a dead connection, because a
 * request abandoned on a slow but live sheep could still be applied after
 * its retry.  TCP keepalive notices a peer host that vanished.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "net.h"
#include "proto.h"
#include "sheepfs.h"
#include "util.h"

#define POOL_MAX		32	/* idle connections kept */
#define CONNECT_TIMEOUT_MS	5000	/* one connection attempt */
#define RETRY_PAUSE_MS		200	/* before resending a transient error */
#define BACKOFF_MAX_MS		1000	/* between rounds over all addresses */

struct sfs_addr {
	char host[256];
	char port[8];
};

struct conn {
	int fd;
	int addr;		/* index into addrs */
	bool reused;		/* taken from the pool */
};

static struct sfs_addr *addrs;
static int nr_addrs;
static int timeout_ms = SFS_DEFAULT_TIMEOUT * 1000;
static bool (*exit_check)(void);

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn pool[POOL_MAX];	/* idle connections */
static int nr_pool;
static int cur_addr;			/* under pool_lock */
static atomic_uint next_id = 1;

/* ---- addresses ---- */

static int add_addr(const char *s, int default_port)
{
	struct sfs_addr a;
	const char *colon = strrchr(s, ':'), *host = s;
	size_t hlen = strlen(s);
	long port = default_port;
	char *end;

	if (s[0] == '[') {
		/* [v6addr] or [v6addr]:port */
		const char *rb = strchr(s, ']');

		if (!rb || (rb[1] && rb[1] != ':'))
			return -1;
		host = s + 1;
		hlen = (size_t)(rb - host);
		colon = rb[1] ? rb + 1 : NULL;
	} else if (colon && strchr(s, ':') != colon) {
		colon = NULL;	/* a bare IPv6 address */
	} else if (colon) {
		hlen = (size_t)(colon - s);
	}
	if (colon) {
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end)
			return -1;
	}
	if (!hlen || hlen >= sizeof(a.host) || port < 1 || port > 65535)
		return -1;
	memcpy(a.host, host, hlen);
	a.host[hlen] = 0;
	snprintf(a.port, sizeof(a.port), "%ld", port);
	addrs = xrealloc(addrs, sizeof(*addrs) * (size_t)(nr_addrs + 1));
	addrs[nr_addrs++] = a;
	return 0;
}

int conn_add_addrs(const char *list, int default_port)
{
	char *copy = xstrdup(list), *save = NULL, *tok;
	int ret = 0;

	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save))
		ret = add_addr(tok, default_port);
	if (!ret && !nr_addrs)
		ret = -1;
	free(copy);
	return ret;
}

int conn_nr_addrs(void)
{
	return nr_addrs;
}

void conn_set_timeout(int sec)
{
	timeout_ms = sec * 1000;
}

void conn_set_exit_check(bool (*fn)(void))
{
	exit_check = fn;
}

static bool stopping(void)
{
	return exit_check && exit_check();
}

/* ---- sockets with a deadline ---- */

static int64_t ms_left(uint64_t deadline)
{
	return (int64_t)(deadline - now_msec());
}

/* wait until @fd is ready for @ev; -1 with errno at the deadline */
static int wait_fd(int fd, short ev, uint64_t deadline)
{
	for (;;) {
		int64_t left = ms_left(deadline);
		struct pollfd p = { .fd = fd, .events = ev };
		int r;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (stopping()) {
			errno = ESHUTDOWN;
			return -1;
		}
		/* wake up every second to notice an unmount */
		r = poll(&p, 1, (int)MIN(left, 1000));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static int sock_xfer(int fd, void *buf, size_t len, bool wr,
		     uint64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r;

		if (wr)
			r = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		else
			r = recv(fd, p, len, MSG_DONTWAIT);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (wait_fd(fd, wr ? POLLOUT : POLLIN, deadline))
			return -1;
	}
	return 0;
}

static int sock_discard(int fd, uint32_t len, uint64_t deadline)
{
	uint8_t buf[4096];

	while (len) {
		uint32_t n = MIN(len, (uint32_t)sizeof(buf));

		if (sock_xfer(fd, buf, n, false, deadline))
			return -1;
		len -= n;
	}
	return 0;
}

static void set_sock_opts(int fd)
{
	int on = 1, idle = 5, intvl = 2, cnt = 3;
	unsigned int user_timeout = 15000;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	/* unacknowledged data: the peer host is gone */
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout,
		   sizeof(user_timeout));
}

static int connect_ai(const struct addrinfo *ai, uint64_t deadline)
{
	uint64_t until = MIN(deadline, now_msec() + CONNECT_TIMEOUT_MS);
	socklen_t elen = sizeof(int);
	int fd, err = 0;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		goto fail;
	if (wait_fd(fd, POLLOUT, until))
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err) {
		errno = err ? err : errno;
		goto fail;
	}
	set_sock_opts(fd);
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

static int connect_addr(int idx, uint64_t deadline)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	int fd = -1, r;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	r = getaddrinfo(addrs[idx].host, addrs[idx].port, &hints, &res);
	if (r) {
		sd_err("cannot resolve %s: %s", addrs[idx].host,
		       gai_strerror(r));
		errno = EHOSTUNREACH;
		return -1;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = connect_ai(ai, deadline);
	freeaddrinfo(res);
	return fd;
}

/* ---- the pool and the current address ---- */

static int current_addr(void)
{
	int a;

	pthread_mutex_lock(&pool_lock);
	a = cur_addr;
	pthread_mutex_unlock(&pool_lock);
	return a;
}

/* address @a failed: move on, unless another thread already did */
static void addr_failed(int a)
{
	pthread_mutex_lock(&pool_lock);
	if (cur_addr == a && nr_addrs > 1) {
		cur_addr = (a + 1) % nr_addrs;
		sd_warn("%s:%s failed, switching to %s:%s", addrs[a].host,
			addrs[a].port, addrs[cur_addr].host,
			addrs[cur_addr].port);
	}
	pthread_mutex_unlock(&pool_lock);
}

static bool pool_take(struct conn *c)
{
	bool found = false;

	pthread_mutex_lock(&pool_lock);
	while (nr_pool && !found) {
		*c = pool[--nr_pool];
		c->reused = true;
		if (c->addr == cur_addr)
			found = true;
		else
			close(c->fd);	/* left behind by a switch */
	}
	pthread_mutex_unlock(&pool_lock);
	return found;
}

static void conn_put(struct conn *c)
{
	pthread_mutex_lock(&pool_lock);
	if (nr_pool < POOL_MAX && c->addr == cur_addr) {
		pool[nr_pool++] = *c;
		c = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	if (c)
		close(c->fd);
}

/*
 * @c broke.  An idle connection may have been closed by a sheep that is
 * fine (restarted, say): only a fresh one condemns the address.
 */
static void conn_fail(struct conn *c, bool always)
{
	close(c->fd);
	if (always || !c->reused)
		addr_failed(c->addr);
}

static void pause_ms(int64_t ms, uint64_t deadline)
{
	struct timespec ts;

	ms = MIN(ms, ms_left(deadline));
	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	nanosleep(&ts, NULL);
}

/* a connection to the current address, trying the others in turn */
static int conn_get(struct conn *c, uint64_t deadline)
{
	int64_t backoff = 100;
	int failed = 0;

	if (pool_take(c))
		return 0;
	for (;;) {
		c->addr = current_addr();
		c->reused = false;
		c->fd = connect_addr(c->addr, deadline);
		if (c->fd >= 0)
			return 0;
		sd_warn("cannot connect to %s:%s: %s", addrs[c->addr].host,
			addrs[c->addr].port, strerror(errno));
		if (ms_left(deadline) <= 0 || stopping())
			return -1;
		addr_failed(c->addr);
		if (++failed % nr_addrs == 0) {
			pause_ms(backoff, deadline);
			backoff = MIN(backoff * 2, BACKOFF_MAX_MS);
		}
	}
}

int conn_probe(void)
{
	uint64_t deadline = now_msec() + CONNECT_TIMEOUT_MS;

	for (int i = 0; i < nr_addrs; i++) {
		int idx = (cur_addr + i) % nr_addrs;
		int fd = connect_addr(idx, deadline);

		if (fd >= 0) {
			cur_addr = idx;
			close(fd);
			return 0;
		}
		fprintf(stderr, "sheepfs: cannot connect to %s:%s: %s\n",
			addrs[idx].host, addrs[idx].port, strerror(errno));
	}
	return -1;
}

void conn_cleanup(void)
{
	pthread_mutex_lock(&pool_lock);
	while (nr_pool)
		close(pool[--nr_pool].fd);
	pthread_mutex_unlock(&pool_lock);
	free(addrs);
	addrs = NULL;
	nr_addrs = 0;
}

/* ---- requests ---- */

/* one exchange on @fd; -1 with errno on a transport error */
static int exchange(int fd, struct sd_req *req, void *data, uint32_t buf_len,
		    struct sd_rsp *rsp, uint64_t deadline)
{
	uint8_t hdr[SD_REQ_SIZE];
	uint32_t got;

	sd_req_encode(req, hdr);
	if (sock_xfer(fd, hdr, sizeof(hdr), true, deadline))
		return -1;
	if ((req->flags & SD_FLAG_CMD_WRITE) && req->data_length &&
	    sock_xfer(fd, data, req->data_length, true, deadline))
		return -1;
	if (sock_xfer(fd, hdr, sizeof(hdr), false, deadline))
		return -1;
	sd_rsp_decode(rsp, hdr);
	if (rsp->id != req->id) {
		errno = EPROTO;
		return -1;
	}
	got = MIN(rsp->data_length, buf_len);
	if (got && sock_xfer(fd, data, got, false, deadline))
		return -1;
	if (rsp->data_length > got &&
	    sock_discard(fd, rsp->data_length - got, deadline))
		return -1;
	return 0;
}

/* the sheep is leaving: ask another one */
static bool node_leaving(uint32_t result)
{
	return result == SD_RES_SHUTDOWN || result == SD_RES_KILLED;
}

/* the cluster is in a passing state: ask again a little later */
static bool transient(uint32_t result)
{
	switch (result) {
	case SD_RES_HALT:
	case SD_RES_NETWORK_ERROR:
	case SD_RES_AGAIN:
	case SD_RES_STARTUP:
	case SD_RES_WAIT_FOR_JOIN:
	case SD_RES_NODE_IN_RECOVERY:
	case SD_RES_COLLECTING_CINFO:
	case SD_RES_OLD_NODE_VER:
	case SD_RES_NEW_NODE_VER:
		return true;
	}
	return false;
}

int sfs_exec_held(struct sd_req *req, void *data, uint32_t buf_len,
		  struct sd_rsp *rsp, int *fd)
{
	uint64_t deadline = now_msec() + (uint64_t)timeout_ms;
	struct conn c;

	for (;;) {
		if (conn_get(&c, deadline))
			break;
		req->id = atomic_fetch_add(&next_id, 1);
		if (exchange(c.fd, req, data, buf_len, rsp, deadline)) {
			conn_fail(&c, errno == ETIMEDOUT);
		} else if (node_leaving(rsp->result)) {
			conn_fail(&c, true);
		} else {
			/* the caller keeps it: it is never pooled again */
			*fd = c.fd;
			return 0;
		}
		if (ms_left(deadline) <= 0 || stopping())
			break;
	}
	sd_err("request %#x gave up", req->opcode);
	return -1;
}

int sfs_exec(struct sd_req *req, void *data, uint32_t buf_len,
	     struct sd_rsp *rsp, unsigned int flags)
{
	uint64_t deadline = now_msec() + (uint64_t)timeout_ms;
	struct conn c;

	for (;;) {
		if (conn_get(&c, deadline))
			break;
		req->id = atomic_fetch_add(&next_id, 1);
		if (exchange(c.fd, req, data, buf_len, rsp, deadline)) {
			sd_warn("request %#x to %s:%s failed: %s",
				req->opcode, addrs[c.addr].host,
				addrs[c.addr].port, strerror(errno));
			conn_fail(&c, errno == ETIMEDOUT);
		} else if (!(flags & SFS_RAW) && node_leaving(rsp->result)) {
			conn_fail(&c, true);
		} else if (!(flags & SFS_RAW) && transient(rsp->result) &&
			   ms_left(deadline) > RETRY_PAUSE_MS) {
			sd_debug("request %#x: %s, retrying", req->opcode,
				 sd_strerror(rsp->result));
			conn_put(&c);
			pause_ms(RETRY_PAUSE_MS, deadline);
		} else {
			conn_put(&c);
			return 0;
		}
		if (ms_left(deadline) <= 0 || stopping())
			break;
	}
	sd_err("request %#x gave up", req->opcode);
	return -1;
}
