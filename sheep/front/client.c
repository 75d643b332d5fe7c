// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Client connections: framing, admission and replies.  Every connection is
 * non-blocking and served by the main loop.  Requests are read one at a
 * time, then run concurrently; responses go out in completion order.
 * Back-pressure: a connection stops being read while it has too many
 * requests in flight or the daemon holds too many payload bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "net.h"
#include "proto.h"
#include "util.h"
#include "core/request.h"
#include "front/front.h"
#include "ops/ops.h"
#include "state/cluster.h"

struct client {
	int fd;
	int refcnt;
	bool dead;
	bool paused;
	int nr_inflight;
	/* receive side */
	uint8_t hdr[SD_REQ_SIZE];
	size_t hdr_got;
	struct request *rx;
	uint32_t rx_got;
	uint32_t discard;	/* payload bytes to drop (rejected request) */
	/* send side */
	struct list_head txq;
	struct request *tx;
	uint8_t tx_hdr[SD_RSP_SIZE];
	size_t tx_off;
	struct list_head paused_list;
	uint32_t events;	/* what epoll watches now */
	/* VDIs locked with KLOCK on this connection (client_lock.c) */
	uint32_t locks[SD_MAX_CLIENT_LOCKS];
	int nr_locks;
};

static int listen_fds[2] = { -1, -1 };
static int nr_clients;
static LIST_HEAD(paused_clients);

static void client_update_events(struct client *c);
static void client_read(struct client *c);
static void client_req_done(struct request *req);

static struct timer resume_timer;

/* budget came back: resume paused clients from the loop, never from
 * inside another client's I/O */
static void budget_released(void)
{
	if (!list_empty(&paused_clients) && !resume_timer.armed)
		timer_add(sys.loop, &resume_timer, 0);
}

static void client_put(struct client *c)
{
	if (--c->refcnt)
		return;
	free(c);
}

static void client_close(struct client *c)
{
	struct request *req, *n;

	if (c->dead)
		return;
	c->dead = true;
	for (int i = 0; i < c->nr_locks; i++)
		client_lock_release(c->locks[i]);
	c->nr_locks = 0;
	event_del(sys.loop, c->fd);
	close(c->fd);
	if (c->paused)
		list_del(&c->paused_list);
	if (c->rx)
		free_request(c->rx);
	c->rx = NULL;
	if (c->tx)
		list_add(&c->tx->list, &c->txq);
	c->tx = NULL;
	list_for_each_entry_safe(req, n, &c->txq, list) {
		list_del(&req->list);
		free_request(req);
		client_put(c);
	}
	nr_clients--;
	client_put(c);
}

static void client_pause(struct client *c)
{
	if (c->paused)
		return;
	c->paused = true;
	list_add_tail(&c->paused_list, &paused_clients);
	client_update_events(c);
}

static void resume_paused(struct timer *t)
{
	struct client *c, *n;
	LIST_HEAD(ready);

	list_for_each_entry_safe(c, n, &paused_clients, paused_list) {
		if (c->nr_inflight >= SD_CONN_MAX_INFLIGHT)
			continue;
		list_del(&c->paused_list);
		c->paused = false;
		client_update_events(c);
		if (c->hdr_got == SD_REQ_SIZE) {
			c->refcnt++;
			list_add_tail(&c->paused_list, &ready);
		}
	}
	/* a header parked for budget may have no more bytes behind it */
	list_for_each_entry_safe(c, n, &ready, paused_list) {
		list_del(&c->paused_list);
		INIT_LIST_HEAD(&c->paused_list);
		client_read(c);
		client_put(c);
	}
}

static void client_update_events(struct client *c)
{
	uint32_t ev = 0;

	if (c->dead)
		return;
	if (!c->paused)
		ev |= EPOLLIN;
	if (c->tx || !list_empty(&c->txq))
		ev |= EPOLLOUT;
	if (ev != c->events) {
		event_mod(sys.loop, c->fd, ev);
		c->events = ev;
	}
}

/* protocol.md §3 and §10.1 admission checks on a fresh header */
static int check_header(const struct sd_req *rq, const struct sd_op **op)
{
	if (rq->opcode >= 0x80) {
		if (rq->proto_ver != SD_SHEEP_PROTO_VER)
			return SD_RES_VER_MISMATCH;
	} else if (rq->proto_ver > SD_PROTO_VER) {
		return SD_RES_VER_MISMATCH;
	}
	*op = get_sd_op(rq->opcode);
	if (!*op)
		return SD_RES_INVALID_PARMS;
	return SD_RES_SUCCESS;
}

static void reply_error(struct client *c, const struct sd_req *rq,
			uint32_t result)
{
	struct request *req = alloc_request(0);

	req->rq = *rq;
	req->caller = c;
	req->complete = client_req_done;
	c->refcnt++;
	c->nr_inflight++;
	req->rp.result = result;
	request_done(req);
}

static void start_request(struct client *c, struct request *req)
{
	c->rx = NULL;
	c->rx_got = 0;
	c->hdr_got = 0;
	/*
	 * Object reads fill their whole buffer or send nothing; other
	 * replies may be shorter than the buffer and must not leak memory.
	 */
	if (!(req->rq.flags & SD_FLAG_CMD_WRITE) &&
	    req->op->type != OP_GATEWAY && req->op->type != OP_PEER)
		memset(req->data, 0, req->data_len);
	queue_request(req);
}

static void got_header(struct client *c)
{
	struct sd_req rq;
	const struct sd_op *op = NULL;
	struct request *req;
	uint32_t len;
	int ret;

	sd_req_decode(&rq, c->hdr);
	len = rq.data_length;
	ret = check_header(&rq, &op);
	if (len > SD_MAX_PAYLOAD) {
		/* cannot skip an unbounded payload: answer and hang up */
		sd_warn("request %x: data_length %u too large", rq.opcode, len);
		reply_error(c, &rq, SD_RES_INVALID_PARMS);
		c->hdr_got = 0;
		c->discard = UINT32_MAX;
		return;
	}
	if (ret != SD_RES_SUCCESS) {
		reply_error(c, &rq, ret);
		c->hdr_got = 0;
		if (rq.flags & SD_FLAG_CMD_WRITE)
			c->discard = len;
		return;
	}
	if (budget_over(len)) {
		client_pause(c);
		return;		/* header kept; retried on resume */
	}
	req = alloc_payload_request(len);
	req->rq = rq;
	req->op = op;
	req->caller = c;
	req->complete = client_req_done;
	c->refcnt++;
	c->nr_inflight++;
	if (c->nr_inflight >= SD_CONN_MAX_INFLIGHT)
		client_pause(c);
	if ((rq.flags & SD_FLAG_CMD_WRITE) && len) {
		c->rx = req;
		c->rx_got = 0;
		return;
	}
	start_request(c, req);
}

static int client_discard(struct client *c)
{
	char buf[65536];

	while (c->discard) {
		ssize_t n = read(c->fd, buf, MIN(sizeof(buf), c->discard));

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 1;
		if (n <= 0)
			return -1;
		if (c->discard != UINT32_MAX)
			c->discard -= (uint32_t)n;
	}
	return 0;
}

static void client_read(struct client *c)
{
	for (;;) {
		ssize_t n;

		if (c->dead || (c->paused && !c->rx))
			return;
		if (c->discard) {
			int r = client_discard(c);

			if (r < 0)
				goto close;
			if (r > 0)
				return;
			continue;
		}
		if (c->rx) {
			n = read(c->fd, (char *)c->rx->data + c->rx_got,
				 c->rx->rq.data_length - c->rx_got);
			if (n > 0) {
				c->rx_got += (uint32_t)n;
				if (c->rx_got == c->rx->rq.data_length)
					start_request(c, c->rx);
				continue;
			}
		} else if (c->hdr_got == SD_REQ_SIZE) {
			/* a header waiting for memory budget */
			got_header(c);
			if (c->hdr_got == SD_REQ_SIZE)
				return;
			continue;
		} else {
			n = read(c->fd, c->hdr + c->hdr_got,
				 SD_REQ_SIZE - c->hdr_got);
			if (n > 0) {
				c->hdr_got += (size_t)n;
				if (c->hdr_got == SD_REQ_SIZE)
					got_header(c);
				continue;
			}
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		goto close;
	}
close:
	client_close(c);
}

static void client_write(struct client *c)
{
	while (!c->dead) {
		struct request *req = c->tx;
		struct iovec iov[2];
		size_t total;
		ssize_t n;

		if (!req) {
			if (list_empty(&c->txq))
				break;
			req = list_first_entry(&c->txq, struct request, list);
			list_del(&req->list);
			c->tx = req;
			c->tx_off = 0;
			sd_rsp_encode(&req->rp, c->tx_hdr);
		}
		total = SD_RSP_SIZE + req->rp.data_length;
		if (c->tx_off < SD_RSP_SIZE) {
			iov[0].iov_base = c->tx_hdr + c->tx_off;
			iov[0].iov_len = SD_RSP_SIZE - c->tx_off;
			iov[1].iov_base = req->data;
			iov[1].iov_len = req->rp.data_length;
			n = writev(c->fd, iov, req->rp.data_length ? 2 : 1);
		} else {
			size_t off = c->tx_off - SD_RSP_SIZE;

			n = write(c->fd, (char *)req->data + off,
				  req->rp.data_length - off);
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0) {
			client_close(c);
			return;
		}
		c->tx_off += (size_t)n;
		if (c->tx_off < total)
			continue;
		c->tx = NULL;
		c->nr_inflight--;
		free_request(req);
		client_put(c);
	}
	client_update_events(c);
}

static void client_handler(int fd, uint32_t events, void *data)
{
	struct client *c = data;

	c->refcnt++;
	if (events & (EPOLLERR | EPOLLHUP))
		client_read(c);
	if (events & EPOLLIN)
		client_read(c);
	if (!c->dead && (events & EPOLLOUT))
		client_write(c);
	if (!c->dead && c->discard == UINT32_MAX && !c->tx &&
	    list_empty(&c->txq))
		client_close(c);
	client_put(c);
}

static void accept_handler(int fd, uint32_t events, void *data)
{
	int cfd;

	while ((cfd = net_accept_bounded(fd, nr_clients, SD_MAX_CLIENTS,
					 "client")) >= 0) {
		struct client *c = xzalloc(sizeof(*c));

		c->fd = cfd;
		c->refcnt = 1;
		c->events = EPOLLIN;
		INIT_LIST_HEAD(&c->txq);
		INIT_LIST_HEAD(&c->paused_list);
		if (event_add(sys.loop, cfd, EPOLLIN, client_handler, c)) {
			close(cfd);
			free(c);
			continue;
		}
		nr_clients++;
	}
}

int listen_init(const char *bindaddr, int port, const char *sock_path)
{
	resume_timer.fn = resume_paused;
	budget_set_release_hook(budget_released);
	listen_fds[0] = net_listen_tcp(bindaddr, port);
	if (listen_fds[0] < 0) {
		sd_err("cannot listen on port %d: %m", port);
		return -1;
	}
	listen_fds[1] = net_listen_unix(sock_path);
	if (listen_fds[1] < 0) {
		sd_err("cannot listen on %s: %m", sock_path);
		return -1;
	}
	for (int i = 0; i < 2; i++)
		event_add(sys.loop, listen_fds[i], EPOLLIN, accept_handler,
			  NULL);
	return 0;
}

void listen_stop(void)
{
	for (int i = 0; i < 2; i++) {
		if (listen_fds[i] < 0)
			continue;
		event_del(sys.loop, listen_fds[i]);
		close(listen_fds[i]);
		listen_fds[i] = -1;
	}
}

static void client_add_lock(struct client *c, uint32_t vid)
{
	if (c->dead) {
		/* it went away while locking */
		client_lock_release(vid);
		return;
	}
	if (c->nr_locks == SD_MAX_CLIENT_LOCKS) {
		sd_warn("VDI %" PRIx32 ": more than %d locks on one connection:"
			" this one outlives it", vid, SD_MAX_CLIENT_LOCKS);
		return;
	}
	c->locks[c->nr_locks++] = vid;
}

static void client_drop_lock(struct client *c, uint32_t vid)
{
	for (int i = 0; i < c->nr_locks; i++) {
		if (c->locks[i] == vid) {
			c->locks[i] = c->locks[--c->nr_locks];
			return;
		}
	}
}

/* the locks a client takes with KLOCK go with its connection */
static bool track_locks(struct client *c, struct request *req)
{
	uint32_t res = req->rp.result;

	if (req->rq.opcode == SD_OP_LOCK_VDI &&
	    (req->rq.flags & SD_FLAG_CMD_KLOCK)) {
		if (res == SD_RES_SUCCESS)
			client_add_lock(c, req->rp.vdi.vdi_id);
		else if (res == SD_RES_VDI_LOCKED && !c->dead)
			return client_lock_wait_release(req);
	} else if (req->rq.opcode == SD_OP_RELEASE_VDI &&
		   res == SD_RES_SUCCESS) {
		client_drop_lock(c, req->rq.vdi.base_vdi_id);
	}
	return false;
}

/* a client's request is done: its reply goes out in completion order */
static void client_req_done(struct request *req)
{
	struct client *c = req->caller;

	if (track_locks(c, req))
		return;
	req->rp.epoch = cstate->epoch;
	if (c->dead) {
		free_request(req);
		client_put(c);
		return;
	}
	list_add_tail(&req->list, &c->txq);
	client_write(c);
}
