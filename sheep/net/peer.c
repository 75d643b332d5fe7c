// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Asynchronous sheep-to-sheep requests.  One non-blocking connection per
 * peer carries many requests at once, matched to their responses by id;
 * nothing here ever waits.  A broken connection fails every request on it
 * with NETWORK_ERROR and the caller decides whether to retry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "net.h"
#include "hash.h"
#include "proto.h"
#include "core/core.h"
#include "net/peer.h"
#include "util.h"

struct peer {
	struct node_id nid;
	int fd;
	bool connected;
	struct list_head sendq;		/* not yet (fully) written */
	struct list_head inflight;	/* written, awaiting response */
	/* response being read */
	uint8_t hdr[SD_RSP_SIZE];
	size_t hdr_got;
	struct peer_req *rx;
	uint32_t rx_got, rx_len, rx_skip;
	struct list_head list;
	uint32_t events;	/* what epoll watches now */
};

static LIST_HEAD(peers);
static uint32_t next_id = 1;
static struct timer peer_timer;

static void peer_fail_all(struct peer *p, int result)
{
	struct peer_req *pr, *n;
	LIST_HEAD(failed);

	list_for_each_entry_safe(pr, n, &p->sendq, list) {
		list_del(&pr->list);
		list_add_tail(&pr->list, &failed);
	}
	list_for_each_entry_safe(pr, n, &p->inflight, list) {
		list_del(&pr->list);
		list_add_tail(&pr->list, &failed);
	}
	p->rx = NULL;
	list_for_each_entry_safe(pr, n, &failed, list) {
		list_del(&pr->list);
		pr->done(pr, result);
	}
}

static void peer_close(struct peer *p)
{
	if (p->fd >= 0) {
		event_del(sys.loop, p->fd);
		close(p->fd);
	}
	p->fd = -1;
	p->connected = false;
	p->hdr_got = 0;
	p->rx = NULL;
	p->rx_skip = 0;
	peer_fail_all(p, SD_RES_NETWORK_ERROR);
}

static void peer_update_events(struct peer *p)
{
	uint32_t ev = EPOLLIN;

	if (!p->connected || !list_empty(&p->sendq))
		ev |= EPOLLOUT;
	if (ev != p->events) {
		event_mod(sys.loop, p->fd, ev);
		p->events = ev;
	}
}

static struct peer_req *find_inflight(struct peer *p, uint32_t id)
{
	struct peer_req *pr;

	list_for_each_entry(pr, &p->inflight, list)
		if (pr->rq.id == id)
			return pr;
	return NULL;
}

static int peer_got_header(struct peer *p)
{
	struct sd_rsp rsp;

	sd_rsp_decode(&rsp, p->hdr);
	p->hdr_got = 0;
	p->rx = find_inflight(p, rsp.id);
	if (!p->rx) {
		sd_err("response with unknown id %u from peer", rsp.id);
		return -1;
	}
	p->rx->rp = rsp;
	p->rx_len = MIN(rsp.data_length, p->rx->rbuf_len);
	p->rx_skip = rsp.data_length - p->rx_len;
	p->rx_got = 0;
	return 0;
}

static void peer_rx_complete(struct peer *p)
{
	struct peer_req *pr = p->rx;

	p->rx = NULL;
	list_del(&pr->list);
	pr->rp.data_length = p->rx_len;
	pr->done(pr, pr->rp.result);
}

static int peer_read(struct peer *p)
{
	char junk[4096];
	ssize_t n;

	for (;;) {
		if (p->rx && p->rx_got < p->rx_len) {
			n = read(p->fd, (char *)p->rx->rbuf + p->rx_got,
				 p->rx_len - p->rx_got);
			if (n > 0)
				p->rx_got += (uint32_t)n;
		} else if (p->rx && p->rx_skip) {
			n = read(p->fd, junk, MIN(sizeof(junk), p->rx_skip));
			if (n > 0)
				p->rx_skip -= (uint32_t)n;
		} else if (p->rx) {
			peer_rx_complete(p);
			continue;
		} else {
			n = read(p->fd, p->hdr + p->hdr_got,
				 SD_RSP_SIZE - p->hdr_got);
			if (n > 0) {
				p->hdr_got += (size_t)n;
				if (p->hdr_got == SD_RSP_SIZE &&
				    peer_got_header(p))
					return -1;
			}
		}
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return -1;
	}
}

static int peer_write(struct peer *p)
{
	while (!list_empty(&p->sendq)) {
		struct peer_req *pr = list_first_entry(&p->sendq,
						       struct peer_req, list);
		uint32_t wlen = (pr->rq.flags & SD_FLAG_CMD_WRITE) ?
				pr->rq.data_length : 0;
		size_t total = SD_REQ_SIZE + wlen;
		struct iovec iov[2];
		ssize_t n;

		if (pr->sent < SD_REQ_SIZE) {
			iov[0].iov_base = pr->hdr + pr->sent;
			iov[0].iov_len = SD_REQ_SIZE - pr->sent;
			iov[1].iov_base = (void *)pr->wbuf;
			iov[1].iov_len = wlen;
			n = writev(p->fd, iov, wlen ? 2 : 1);
		} else {
			size_t off = pr->sent - SD_REQ_SIZE;

			n = write(p->fd, (const char *)pr->wbuf + off,
				  wlen - off);
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0)
			return -1;
		pr->sent += (size_t)n;
		if (pr->sent < total)
			continue;
		list_del(&pr->list);
		list_add_tail(&pr->list, &p->inflight);
	}
	return 0;
}

static void peer_handler(int fd, uint32_t events, void *data)
{
	struct peer *p = data;

	if (!p->connected && (events & EPOLLOUT)) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			peer_close(p);
			return;
		}
		p->connected = true;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		if (peer_read(p)) {
			peer_close(p);
			return;
		}
	}
	if (p->connected && peer_write(p)) {
		peer_close(p);
		return;
	}
	if (p->fd >= 0)
		peer_update_events(p);
}

static struct peer *peer_get(const struct node_id *nid)
{
	struct peer *p;

	list_for_each_entry(p, &peers, list)
		if (node_id_eq(&p->nid, nid))
			return p;
	p = xzalloc(sizeof(*p));
	p->nid = *nid;
	p->fd = -1;
	INIT_LIST_HEAD(&p->sendq);
	INIT_LIST_HEAD(&p->inflight);
	list_add(&p->list, &peers);
	return p;
}

static int peer_connect(struct peer *p)
{
	p->fd = net_connect_nonblock(p->nid.addr, p->nid.port);
	if (p->fd < 0)
		return -1;
	p->events = EPOLLOUT;
	if (event_add(sys.loop, p->fd, EPOLLOUT, peer_handler, p)) {
		close(p->fd);
		p->fd = -1;
		return -1;
	}
	return 0;
}

/* @pr->rq is filled by the caller; id and epoch are assigned here */
void peer_submit(const struct node_id *nid, struct peer_req *pr)
{
	struct peer *p = peer_get(nid);

	pr->rq.id = next_id++;
	pr->sent = 0;
	pr->deadline = now_msec() + SD_PEER_TIMEOUT_MS;
	sd_req_encode(&pr->rq, pr->hdr);
	if (p->fd < 0 && peer_connect(p)) {
		pr->done(pr, SD_RES_NETWORK_ERROR);
		return;
	}
	list_add_tail(&pr->list, &p->sendq);
	if (p->connected) {
		if (peer_write(p)) {
			peer_close(p);
			return;
		}
		peer_update_events(p);
	}
}

void peer_drop(const struct node_id *nid)
{
	struct peer *p;

	list_for_each_entry(p, &peers, list) {
		if (node_id_eq(&p->nid, nid)) {
			peer_close(p);
			return;
		}
	}
}

/* a peer that stops answering costs its requests, not the daemon */
static void peer_check_timeouts(struct timer *t)
{
	uint64_t now = now_msec();
	struct peer *p;

	list_for_each_entry(p, &peers, list) {
		struct peer_req *pr;
		bool expired = false;

		list_for_each_entry(pr, &p->inflight, list)
			if (pr->deadline < now)
				expired = true;
		list_for_each_entry(pr, &p->sendq, list)
			if (pr->deadline < now)
				expired = true;
		if (expired) {
			sd_warn("peer request timed out; closing connection");
			peer_close(p);
		}
	}
	timer_add(sys.loop, t, 1000);
}

void peer_init(void)
{
	peer_timer.fn = peer_check_timeouts;
	timer_add(sys.loop, &peer_timer, 1000);
}
