// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The transport over RDMA (net/rdma.h): a byte stream over SEND/RECV of
 * an RC queue pair, with the semantics of net/transport.h.
 *
 * Each connection registers one region of 2 x RDMA_NR_BUF buffers of
 * RDMA_BUF bytes: RDMA_NR_BUF receives stay posted, and a message is
 * copied into free send buffers in chunks, each starting with a header
 * {le32 payload bytes | RDMA_F_DESC, le16 credits, le16 releases}; a
 * chunk of up to RDMA_INLINE bytes is sent inline where the device can.
 *
 * Large buffers are not copied: a buffer of a message with RDMA_ZC_MIN
 * bytes or more left is registered for remote reads and the stream
 * carries a descriptor chunk in its place {le64 address, le32 rkey, le32
 * bytes}; the receiver reads those bytes with RDMA READ straight into the
 * buffer its owner posted (registered for that receive; a small bounce
 * buffer if it cannot be), then counts a release in the header of its
 * next chunk (one of credits only if nothing else goes back).  Releases
 * come in the order of the descriptors; the sender deregisters the buffer
 * and the message is done only once all of its buffers are released.  A
 * buffer that cannot be registered is copied.  So the key of a buffer is
 * valid for one message only, and a 4 MiB object crosses the wire once,
 * without a copy on either side.
 *
 * Flow control is by credits: a side
 * may only SEND into a receive the other has posted, so it starts with
 * RDMA_NR_BUF credits, spends one per SEND and gets them back in the
 * headers of the other side's chunks as that side reposts the buffers it
 * has consumed.  The last credit is kept for a chunk that carries credits
 * only, sent when the other side is running out and nothing else is
 * going its way; so neither side ever waits for credits the other holds
 * back, and no SEND ever finds no receive (no RNR).
 *
 * Back-pressure as with TCP: while the owner has no receive posted, the
 * chunks that arrived stay in their buffers, their credits are not
 * returned and the sender stops.
 *
 * Connection management: one event channel per process (its fd in the
 * loop) carries the events of every id; an id's context is its
 * connection or listener.  Completions: one completion channel per
 * connection, its fd in the loop.  A work completion in error, a
 * DISCONNECTED or any failed CM step breaks the connection as a TCP
 * error does (queued sends fail, closed() is called once).
 *
 * Every CM event is acknowledged as soon as it is taken from the channel,
 * before it is handled, so rdma_destroy_id() (which waits until the
 * events reported for the id are acknowledged) never waits in a handler;
 * events of an id not yet taken are dropped by the kernel with the id.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "net.h"
#include "proto.h"
#include "util.h"
#include "net/rdma.h"
#include "net/rdma_api.h"

#define RDMA_BUF	(32 * 1024)
#define RDMA_NR_BUF	16
#define RDMA_HDR	8
#define RDMA_PAYLOAD	(RDMA_BUF - RDMA_HDR)
#define RDMA_F_DESC	0x80000000u	/* header word 0: a descriptor */
#define RDMA_DESC_LEN	16
#define RDMA_ZC_MIN	(64 * 1024)	/* read by the peer, not copied */
#define RDMA_ZC_MAX	(1u << 30)	/* bytes of one descriptor */
#define RDMA_BOUNCE	(256 * 1024)
/* chunks this small go inline (in the work request) where the device can */
#define RDMA_INLINE	128
/* send credits back once the other side holds no more than this */
#define RDMA_LOW_CREDITS	(RDMA_NR_BUF / 2)
#define RDMA_TIMEOUT_MS	2000	/* address and route resolution */
#define WR_RECV		0x10000
#define WR_SEND		0x20000
#define WR_READ		0x40000

/* the process's connection manager channel */
static struct {
	const struct rdma_api *api;
	struct rdma_event_channel *ch;
	struct event_loop *loop;
	pid_t pid;		/* a forked child starts its own */
	int users;		/* listeners and connections on it */
} cm;

struct rdma_xlistener {
	struct xconn_base base;	/* xp NULL: an id's context is a listener */
	struct rdma_cm_id *id;
	struct event_loop *loop;
	bool closed;
	int refcnt;		/* open, connections, running handlers */
	int nr_open;
	int max;
	char *what;
	xaccept_fn fn;
	void *arg;
};

struct rdma_conn {
	struct xconn_base base;	/* first: xconn_transport() reads it */
	struct rdma_cm_id *id;
	struct event_loop *loop;
	struct timer kick;	/* deliver what arrived before a receive */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint32_t max_inline;	/* what the QP got: 0 if none */
	uint8_t *mem;		/* receive buffers, then send buffers */
	int busy;
	bool connected, dead, owner_closed, writing, draining, cch_added;
	bool delivering;
	const struct xconn_ops *ops;
	void *arg;
	/* the posted receive */
	bool rposted;
	void *rbuf;
	size_t rlen, rgot;
	/* chunks that arrived, oldest first, and how far the head is read */
	int ready[RDMA_NR_BUF];
	uint32_t ready_len[RDMA_NR_BUF];
	int nr_ready, ready_head;
	uint32_t ready_off;
	/* credits */
	uint32_t credits;	/* SENDs we may still post */
	uint32_t to_return;	/* receives reposted, not yet told */
	uint32_t their;		/* SENDs they may still post, as we know */
	/* sends, oldest first; the head may be partly copied out */
	struct list_head sendq;
	size_t backlog;
	int free_send[RDMA_NR_BUF];
	int nr_free_send;
	/* our buffers the peer reads, in the order described */
	struct {
		struct ibv_mr *mr;
		struct xmsg *m;
	} zc[RDMA_NR_BUF];
	int zc_head, nr_zc;
	struct list_head waitq;	/* sent whole, buffers not yet released */
	bool zc_warned;
	/* the peer's buffers we read: descriptors in the ready queue */
	bool ready_desc[RDMA_NR_BUF];
	uint64_t ready_addr[RDMA_NR_BUF];
	uint32_t ready_rkey[RDMA_NR_BUF];
	uint32_t to_release;	/* descriptors read, not yet told */
	bool reading;		/* an RDMA READ is in flight */
	uint32_t read_len;
	bool bounced;		/* the posted receive could not be registered */
	struct ibv_mr *rmr;	/* the posted receive's buffer */
	uint8_t *bounce;
	struct ibv_mr *bounce_mr;
	struct rdma_xlistener *l;	/* NULL for outgoing connections */
	struct sockaddr_storage peer;
};

static struct rdma_stats stats;

static void cm_put(void);

static const struct rdma_api *api(void)
{
	if (!cm.api)
		cm.api = rdma_api_get();
	return cm.api;
}

static uint8_t *rbuf_of(struct rdma_conn *c, int i)
{
	return c->mem + (size_t)i * RDMA_BUF;
}

static uint8_t *sbuf_of(struct rdma_conn *c, int i)
{
	return c->mem + (size_t)(RDMA_NR_BUF + i) * RDMA_BUF;
}

/* ---- lifetime ---- */

static void listener_put(struct rdma_xlistener *l)
{
	if (--l->refcnt)
		return;
	free(l->what);
	free(l);
}

/* every region registered for a message or a receive (the QP is gone) */
static void release_zc(struct rdma_conn *c)
{
	const struct rdma_api *a = api();

	for (; c->nr_zc; c->nr_zc--) {
		a->dereg_mr(c->zc[c->zc_head].mr);
		c->zc_head = (c->zc_head + 1) % RDMA_NR_BUF;
	}
	if (c->rmr)
		a->dereg_mr(c->rmr);
	if (c->bounce_mr)
		a->dereg_mr(c->bounce_mr);
	free(c->bounce);
	c->rmr = c->bounce_mr = NULL;
	c->bounce = NULL;
	c->reading = false;
}

static void release_verbs(struct rdma_conn *c)
{
	const struct rdma_api *a = api();

	if (c->id && c->id->qp)
		a->destroy_qp(c->id);
	release_zc(c);
	if (c->cq)
		a->destroy_cq(c->cq);
	if (c->cch) {
		if (c->cch_added)
			event_del(c->loop, a->comp_channel_fd(c->cch));
		a->destroy_comp_channel(c->cch);
	}
	if (c->mr)
		a->dereg_mr(c->mr);
	if (c->pd)
		a->dealloc_pd(c->pd);
	free(c->mem);
	c->cq = NULL;
	c->cch = NULL;
	c->mr = NULL;
	c->pd = NULL;
	c->mem = NULL;
	c->cch_added = false;
}

static void conn_free(struct rdma_conn *c)
{
	struct rdma_xlistener *l = c->l;

	free(c);
	if (l) {
		l->nr_open--;
		listener_put(l);
	}
}

static void conn_enter(struct rdma_conn *c)
{
	c->busy++;
}

static void conn_leave(struct rdma_conn *c)
{
	if (--c->busy)
		return;
	if (c->dead)
		conn_free(c);
}

static void fail_sends(struct rdma_conn *c)
{
	struct list_head *q[] = { &c->waitq, &c->sendq };

	if (c->draining)
		return;
	c->draining = true;
	for (int k = 0; k < 2; k++) {
		while (!list_empty(q[k])) {
			struct xmsg *m = list_first_entry(q[k], struct xmsg,
							  list);

			list_del(&m->list);
			m->done(m, -1);
		}
	}
	c->draining = false;
	c->backlog = 0;
}

static void conn_shutdown(struct rdma_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	c->rposted = false;
	c->rbuf = NULL;
	timer_del(&c->kick);
	if (c->id) {
		if (c->connected)
			api()->disconnect(c->id);
		release_verbs(c);
		api()->destroy_id(c->id);
		c->id = NULL;
		cm_put();
	}
	fail_sends(c);
}

static void conn_break(struct rdma_conn *c)
{
	if (c->dead)
		return;
	conn_enter(c);
	conn_shutdown(c);
	if (!c->owner_closed && c->ops && c->ops->closed)
		c->ops->closed((struct xconn *)c, c->arg);
	conn_leave(c);
}

/* ---- posting ---- */

static int post_recv(struct rdma_conn *c, int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rbuf_of(c, i),
		.length = RDMA_BUF,
		.lkey = c->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = WR_RECV | (uint64_t)i,
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return api()->post_recv(c->id->qp, &wr, &bad);
}

/* one chunk of @len payload bytes (already in send buffer @i) */
static int post_chunk(struct rdma_conn *c, int i, uint32_t len, uint32_t flags)
{
	uint8_t *b = sbuf_of(c, i);
	struct ibv_sge sge = {
		.addr = (uintptr_t)b,
		.length = RDMA_HDR + len,
		.lkey = c->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_SEND | (uint64_t)i,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (RDMA_HDR + len <= c->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	put_le32(b, len | flags);
	put_le32(b + 4, c->to_return | c->to_release << 16);
	c->their += c->to_return;
	c->to_return = 0;
	c->to_release = 0;
	c->credits--;
	return api()->post_send(c->id->qp, &wr, &bad);
}

/*
 * Copy up to one chunk of @m into send buffer @i: the bytes copied.  It
 * stops before a buffer the peer will read itself.
 */
static uint32_t copy_out(struct xmsg *m, uint8_t *dst)
{
	size_t skip = m->sent, n = 0;

	for (int k = 0; k < m->nr_iov && n < RDMA_PAYLOAD; k++) {
		size_t len = m->iov[k].iov_len, take;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		if (n && !m->zc_off && len - skip >= RDMA_ZC_MIN)
			break;
		take = MIN(len - skip, RDMA_PAYLOAD - n);
		memcpy(dst + n, (char *)m->iov[k].iov_base + skip, take);
		n += take;
		skip = 0;
	}
	m->sent += n;
	return (uint32_t)n;
}

/*
 * A chunk of credits only, if they run short on the other side, or of
 * releases (the other side waits for them to finish a message).
 */
static void maybe_return_credits(struct rdma_conn *c)
{
	if (c->dead || !c->connected || !c->credits || !c->nr_free_send)
		return;
	if (!c->to_release &&
	    (!c->to_return || c->their > RDMA_LOW_CREDITS))
		return;
	if (post_chunk(c, c->free_send[--c->nr_free_send], 0, 0))
		conn_break(c);
}

/* the rest of @m's current buffer if the peer is to read it, or 0 */
static size_t zc_span(const struct rdma_conn *c, const struct xmsg *m,
		      void **base)
{
	size_t skip = m->sent;

	if (m->zc_off || c->nr_zc == RDMA_NR_BUF)
		return 0;
	for (int k = 0; k < m->nr_iov; k++) {
		size_t len = m->iov[k].iov_len;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		if (len - skip < RDMA_ZC_MIN)
			return 0;
		*base = (char *)m->iov[k].iov_base + skip;
		return MIN(len - skip, (size_t)RDMA_ZC_MAX);
	}
	return 0;
}

/* describe @len bytes at @base in send buffer @i; -1 if not registered */
static int fill_desc(struct rdma_conn *c, int i, struct xmsg *m, void *base,
		     size_t len)
{
	uint8_t *b = sbuf_of(c, i) + RDMA_HDR;
	struct ibv_mr *mr;
	int slot;

	mr = api()->reg_mr(c->pd, base, len, IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		if (!c->zc_warned)
			sd_warn("rdma: cannot register %zu bytes (%m); "
				"copying instead", len);
		c->zc_warned = true;
		m->zc_off = true;
		return -1;
	}
	slot = (c->zc_head + c->nr_zc) % RDMA_NR_BUF;
	c->zc[slot].mr = mr;
	c->zc[slot].m = m;
	c->nr_zc++;
	m->zc_pending++;
	put_le64(b, (uintptr_t)base);
	put_le32(b + 8, mr->rkey);
	put_le32(b + 12, (uint32_t)len);
	m->sent += len;
	return 0;
}

/* the next chunk of @m into send buffer @i, posted; -1 on error */
static int write_chunk(struct rdma_conn *c, struct xmsg *m, int i)
{
	void *base = NULL;
	size_t zc = zc_span(c, m, &base);
	uint32_t n;

	if (zc && !fill_desc(c, i, m, base, zc)) {
		c->backlog -= zc;
		stats.described += zc;
		return post_chunk(c, i, RDMA_DESC_LEN, RDMA_F_DESC);
	}
	n = copy_out(m, sbuf_of(c, i) + RDMA_HDR);
	c->backlog -= n;
	stats.copied += n;
	return post_chunk(c, i, n, 0);
}

/*
 * Copy queued messages into chunks while buffers and credits last (one
 * credit stays for returning credits).  A done() that sends again only
 * queues: we are in this loop.
 */
static void conn_write(struct rdma_conn *c)
{
	if (c->writing)
		return;
	c->writing = true;
	while (!c->dead && c->connected && !list_empty(&c->sendq)) {
		struct xmsg *m = list_first_entry(&c->sendq, struct xmsg,
						  list);

		if (m->sent < m->len) {
			if (!c->nr_free_send || c->credits < 2)
				break;
			if (write_chunk(c, m,
					c->free_send[--c->nr_free_send])) {
				conn_break(c);
				break;
			}
			if (m->sent < m->len)
				continue;
		}
		list_del(&m->list);
		if (m->zc_pending)	/* done once the peer has read it */
			list_add_tail(&m->list, &c->waitq);
		else
			m->done(m, 0);
	}
	c->writing = false;
	maybe_return_credits(c);
}

/* ---- receiving ---- */

/* the posted receive's registration, if it had one */
static void rmr_drop(struct rdma_conn *c)
{
	if (c->rmr)
		api()->dereg_mr(c->rmr);
	c->rmr = NULL;
	c->bounced = false;
}

static void recv_complete(struct rdma_conn *c)
{
	rmr_drop(c);
	c->rposted = false;
	c->rbuf = NULL;
	if (c->ops && c->ops->recv_done)
		c->ops->recv_done((struct xconn *)c, c->arg);
}

/* the head chunk is used up: its receive goes back, its credit is due */
static void chunk_done(struct rdma_conn *c)
{
	int i = c->ready[c->ready_head];

	c->ready_head = (c->ready_head + 1) % RDMA_NR_BUF;
	c->nr_ready--;
	c->ready_off = 0;
	if (post_recv(c, i)) {
		conn_break(c);
		return;
	}
	c->to_return++;
}

/* @n bytes of the head chunk went to the posted receive */
static void consume(struct rdma_conn *c, size_t n)
{
	int h = c->ready_head;

	c->rgot += n;
	c->ready_off += (uint32_t)n;
	if (c->ready_off < c->ready_len[h])
		return;
	if (c->ready_desc[h])
		c->to_release++;
	chunk_done(c);
}

/*
 * Read up to @n bytes of the head descriptor into the posted receive:
 * into the owner's buffer, registered for this receive, or through the
 * bounce buffer if it cannot be registered.
 */
static int post_read(struct rdma_conn *c, size_t n)
{
	const struct rdma_api *a = api();
	int h = c->ready_head;
	struct ibv_sge sge = { .length = (uint32_t)n };
	struct ibv_send_wr wr = {
		.wr_id = WR_READ,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (!c->rmr && !c->bounced) {
		c->rmr = a->reg_mr(c->pd, c->rbuf, c->rlen,
				   IBV_ACCESS_LOCAL_WRITE);
		c->bounced = !c->rmr;
	}
	if (c->rmr) {
		sge.addr = (uintptr_t)((uint8_t *)c->rbuf + c->rgot);
		sge.lkey = c->rmr->lkey;
	} else {
		if (!c->bounce) {
			c->bounce = xmalloc(RDMA_BOUNCE);
			c->bounce_mr = a->reg_mr(c->pd, c->bounce, RDMA_BOUNCE,
						 IBV_ACCESS_LOCAL_WRITE);
			if (!c->bounce_mr)
				return -1;
		}
		sge.length = (uint32_t)MIN(n, (size_t)RDMA_BOUNCE);
		sge.addr = (uintptr_t)c->bounce;
		sge.lkey = c->bounce_mr->lkey;
	}
	wr.wr.rdma.remote_addr = c->ready_addr[h] + c->ready_off;
	wr.wr.rdma.rkey = c->ready_rkey[h];
	c->reading = true;
	c->read_len = sge.length;
	return a->post_send(c->id->qp, &wr, &bad);
}

static void read_done(struct rdma_conn *c)
{
	c->reading = false;
	if (!c->rposted || !c->nr_ready || !c->ready_desc[c->ready_head]) {
		conn_break(c);		/* cannot happen */
		return;
	}
	if (!c->rmr) {
		memcpy((uint8_t *)c->rbuf + c->rgot, c->bounce, c->read_len);
		stats.bounced += c->read_len;
	}
	stats.read += c->read_len;
	consume(c, c->read_len);
}

/*
 * Hand arrived bytes to the posted receive, as long as one is posted: a
 * recv_done() that posts the next one keeps us delivering.  A descriptor
 * is read with RDMA READ; delivery goes on when the read completes.
 */
static void deliver(struct rdma_conn *c)
{
	if (c->delivering)
		return;
	c->delivering = true;
	while (!c->dead && c->rposted) {
		size_t want = c->rlen - c->rgot, take;
		uint32_t left;
		int i;

		if (!want) {
			recv_complete(c);
			continue;
		}
		if (!c->nr_ready)
			break;
		i = c->ready[c->ready_head];
		left = c->ready_len[c->ready_head] - c->ready_off;
		take = MIN(want, (size_t)left);
		if (c->ready_desc[c->ready_head] && c->rbuf) {
			if (!c->reading && post_read(c, take))
				conn_break(c);
			break;
		}
		if (c->rbuf)
			memcpy((char *)c->rbuf + c->rgot,
			       rbuf_of(c, i) + RDMA_HDR + c->ready_off, take);
		consume(c, take);
	}
	c->delivering = false;
}

static void kick_fn(struct timer *t)
{
	struct rdma_conn *c = container_of(t, struct rdma_conn, kick);

	conn_enter(c);
	deliver(c);
	conn_write(c);		/* the credits of what was read */
	conn_leave(c);
}

/*
 * The peer has read @n more of our described buffers: they are
 * deregistered and a message whose buffers are all read is done.
 */
static int take_releases(struct rdma_conn *c, uint32_t n)
{
	if (n > (uint32_t)c->nr_zc)
		return -1;
	while (n-- && !c->dead) {
		struct xmsg *m = c->zc[c->zc_head].m;

		api()->dereg_mr(c->zc[c->zc_head].mr);
		c->zc_head = (c->zc_head + 1) % RDMA_NR_BUF;
		c->nr_zc--;
		if (--m->zc_pending == 0 && m->sent == m->len) {
			list_del(&m->list);	/* from waitq */
			m->done(m, 0);
		}
	}
	return 0;
}

/* a descriptor's bytes: 0 if malformed */
static uint32_t desc_len(const uint8_t *p, uint32_t len)
{
	uint32_t n = get_le32(p + 12);

	return len == RDMA_DESC_LEN && n <= RDMA_ZC_MAX ? n : 0;
}

static void on_recv(struct rdma_conn *c, int i, uint32_t byte_len)
{
	uint8_t *b = rbuf_of(c, i), *p = b + RDMA_HDR;
	uint32_t w0 = get_le32(b), w1 = get_le32(b + 4);
	uint32_t len = w0 & ~RDMA_F_DESC, credits = w1 & 0xffff;
	bool desc = w0 & RDMA_F_DESC;
	int slot;

	if (byte_len < RDMA_HDR || len != byte_len - RDMA_HDR ||
	    len > RDMA_PAYLOAD || c->their == 0 ||
	    (desc && !desc_len(p, len))) {
		sd_err("rdma: malformed chunk of %u bytes", byte_len);
		conn_break(c);
		return;
	}
	c->their--;
	/* checked before the sum: a huge count must not wrap round */
	if (credits > RDMA_NR_BUF - c->credits) {
		sd_err("rdma: the peer returned more credits than it had");
		conn_break(c);
		return;
	}
	c->credits += credits;
	if (!len) {		/* credits only */
		if (post_recv(c, i))
			conn_break(c);
		else
			c->to_return++;
	} else {
		slot = (c->ready_head + c->nr_ready) % RDMA_NR_BUF;
		c->ready[slot] = i;
		c->ready_desc[slot] = desc;
		c->ready_len[slot] = desc ? desc_len(p, len) : len;
		c->ready_addr[slot] = desc ? get_le64(p) : 0;
		c->ready_rkey[slot] = desc ? get_le32(p + 8) : 0;
		c->nr_ready++;
	}
	/* last: a message done here may send, or close the connection */
	if (!c->dead && take_releases(c, w1 >> 16)) {
		sd_err("rdma: the peer released buffers it was not given");
		conn_break(c);
	}
}

/* ---- completions ---- */

static void on_wc(struct rdma_conn *c, const struct ibv_wc *wc)
{
	int i = (int)(wc->wr_id & 0xffff);

	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			sd_info("rdma: work request failed: %s",
				ibv_wc_status_str(wc->status));
		conn_break(c);
		return;
	}
	if (wc->wr_id == WR_READ) {
		read_done(c);
		return;
	}
	if (i >= RDMA_NR_BUF) {
		conn_break(c);
		return;
	}
	if (wc->wr_id & WR_SEND)
		c->free_send[c->nr_free_send++] = i;
	else
		on_recv(c, i, wc->byte_len);
}

static void cq_handler(int fd, uint32_t events, void *data)
{
	struct rdma_conn *c = data;
	const struct rdma_api *a = api();
	struct ibv_wc wc[16];
	struct ibv_cq *cq;
	void *ctx;
	int n = 0;

	conn_enter(c);
	if (c->dead || a->get_cq_event(c->cch, &cq, &ctx))
		goto out;
	a->ack_cq_events(cq, 1);
	if (a->req_notify_cq(c->cq, 0)) {
		conn_break(c);
		goto out;
	}
	/* after re-arming: what completes meanwhile is polled here */
	while (!c->dead && (n = a->poll_cq(c->cq, 16, wc)) > 0)
		for (int k = 0; k < n && !c->dead; k++)
			on_wc(c, &wc[k]);
	if (!c->dead && n < 0)
		conn_break(c);
	deliver(c);
	conn_write(c);
out:
	conn_leave(c);
}

/* the queue pair, its buffers and its completion queue on @c->id */
static int setup_verbs(struct rdma_conn *c)
{
	const struct rdma_api *a = api();
	size_t size = 2 * (size_t)RDMA_NR_BUF * RDMA_BUF;
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = RDMA_NR_BUF + 1,	/* and a READ */
			.max_recv_wr = RDMA_NR_BUF,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	c->pd = a->alloc_pd(c->id->verbs);
	if (!c->pd)
		return -1;
	c->mem = xzalloc(size);
	c->mr = a->reg_mr(c->pd, c->mem, size, IBV_ACCESS_LOCAL_WRITE);
	c->cch = a->create_comp_channel(c->id->verbs);
	if (!c->mr || !c->cch)
		return -1;
	c->cq = a->create_cq(c->id->verbs, 2 * RDMA_NR_BUF + 1, c, c->cch, 0);
	if (!c->cq || a->req_notify_cq(c->cq, 0))
		return -1;
	/* a wake-up without an event must not block get_cq_event() */
	if (net_set_nonblock(a->comp_channel_fd(c->cch)) ||
	    event_add(c->loop, a->comp_channel_fd(c->cch), EPOLLIN,
		      cq_handler, c))
		return -1;
	c->cch_added = true;
	attr.send_cq = attr.recv_cq = c->cq;
	/* inline sends if the device takes them, else without */
	attr.cap.max_inline_data = RDMA_INLINE;
	if (a->create_qp(c->id, c->pd, &attr)) {
		attr.cap.max_inline_data = 0;
		if (a->create_qp(c->id, c->pd, &attr))
			return -1;
	}
	c->max_inline = attr.cap.max_inline_data;
	for (int i = 0; i < RDMA_NR_BUF; i++) {
		if (post_recv(c, i))
			return -1;
		c->free_send[c->nr_free_send++] = i;
	}
	c->credits = c->their = RDMA_NR_BUF;
	return 0;
}

static struct rdma_conn *conn_new(struct event_loop *loop)
{
	struct rdma_conn *c = xzalloc(sizeof(*c));

	c->base.xp = &rdma_transport;
	c->loop = loop;
	c->kick.fn = kick_fn;
	INIT_LIST_HEAD(&c->sendq);
	INIT_LIST_HEAD(&c->waitq);
	return c;
}

static void conn_param(struct rdma_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = 1;	/* the READs of descriptors */
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

/* ---- connection manager events ---- */

static void established(struct rdma_conn *c)
{
	struct rdma_xlistener *l = c->l;

	memcpy(&c->peer, &c->id->route.addr.dst_storage, sizeof(c->peer));
	c->connected = true;
	if (l) {
		/* handed to the owner only now, connected */
		if (l->closed || l->fn((struct xconn *)c, l->arg)) {
			c->owner_closed = true;
			conn_shutdown(c);
			return;
		}
	}
	conn_write(c);
	deliver(c);
}

static void conn_event(struct rdma_conn *c, enum rdma_cm_event_type type)
{
	struct rdma_conn_param p;

	conn_enter(c);
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (api()->resolve_route(c->id, RDMA_TIMEOUT_MS))
			conn_break(c);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		conn_param(&p);
		if (setup_verbs(c) || api()->connect(c->id, &p))
			conn_break(c);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		established(c);
		break;
	default:
		/* errors, rejects, disconnects, device removal */
		conn_break(c);
		break;
	}
	conn_leave(c);
}

static void connect_request(struct rdma_xlistener *l, struct rdma_cm_id *id)
{
	struct rdma_conn *c;
	struct rdma_conn_param p;

	if (l->closed || l->nr_open >= l->max) {
		sd_warn("%s: too many connections (%d): refused", l->what,
			l->nr_open);
		api()->reject(id, NULL, 0);
		api()->destroy_id(id);
		return;
	}
	c = conn_new(l->loop);
	c->id = id;
	id->context = c;
	cm.users++;		/* the new id is on our channel */
	c->l = l;
	l->refcnt++;
	l->nr_open++;
	conn_param(&p);
	conn_enter(c);
	if (setup_verbs(c) || api()->accept(id, &p)) {
		c->owner_closed = true;	/* nobody owns it yet */
		conn_shutdown(c);
	}
	conn_leave(c);
}

/* an id's context is a connection or a listener (no transport) */
static bool ctx_is_listener(void *ctx)
{
	return !((struct xconn_base *)ctx)->xp;
}

static void cm_handler(int fd, uint32_t events, void *data)
{
	const struct rdma_api *a = api();
	struct rdma_cm_event *ev;

	cm.users++;		/* the handlers may close the last id */
	while (!a->get_cm_event(cm.ch, &ev)) {
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id;
		void *ctx = id->context;
		struct rdma_cm_id *listen_id = ev->listen_id;

		a->ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST && listen_id) {
			struct rdma_xlistener *l = listen_id->context;

			l->refcnt++;
			connect_request(l, id);
			listener_put(l);
		} else if (ctx && !ctx_is_listener(ctx)) {
			conn_event(ctx, type);
		}
	}
	cm_put();
}

/* take the channel for one more id (in @loop: one loop per process) */
static int cm_get(struct event_loop *loop)
{
	const struct rdma_api *a = api();

	if (cm.ch && cm.pid == getpid()) {
		if (loop != cm.loop)
			return -1;
		cm.users++;
		return 0;
	}
	cm.pid = getpid();
	cm.users = 0;
	cm.ch = a->create_event_channel();
	if (!cm.ch)
		return -1;
	if (net_set_nonblock(a->event_channel_fd(cm.ch)) ||
	    event_add(loop, a->event_channel_fd(cm.ch), EPOLLIN, cm_handler,
		      NULL)) {
		a->destroy_event_channel(cm.ch);
		cm.ch = NULL;
		return -1;
	}
	cm.loop = loop;
	cm.users = 1;
	return 0;
}

/* an id on the channel is gone; the last one takes the channel along */
static void cm_put(void)
{
	const struct rdma_api *a = api();

	if (--cm.users)
		return;
	event_del(cm.loop, a->event_channel_fd(cm.ch));
	a->destroy_event_channel(cm.ch);
	cm.ch = NULL;
	cm.loop = NULL;
}

/* ---- the transport table ---- */

static struct rdma_conn *rc(struct xconn *x)
{
	return (struct rdma_conn *)x;
}

static void xr_set_ops(struct xconn *x, const struct xconn_ops *ops,
			 void *arg)
{
	rc(x)->ops = ops;
	rc(x)->arg = arg;
}

static void xr_recv(struct xconn *x, void *buf, size_t len)
{
	struct rdma_conn *c = rc(x);

	if (c->dead)
		return;
	if (c->rposted)
		sd_err("a receive is already posted; replacing it");
	conn_enter(c);
	if (c->reading) {	/* a READ still writes into the old one */
		conn_break(c);
		goto out;
	}
	rmr_drop(c);
	c->rposted = true;
	c->rbuf = buf;
	c->rlen = len;
	c->rgot = 0;
	/*
	 * What arrived already is delivered from the loop, never from here:
	 * recv_done() does not run inside the owner's own call.
	 */
	if (!c->delivering && (c->nr_ready || !len))
		timer_add(c->loop, &c->kick, 0);
out:
	conn_leave(c);
}

static size_t msg_len(const struct xmsg *m)
{
	size_t len = 0;

	for (int i = 0; i < m->nr_iov; i++)
		len += m->iov[i].iov_len;
	return len;
}

static void xr_send(struct xconn *x, struct xmsg *m)
{
	struct rdma_conn *c = rc(x);

	if (m->nr_iov < 0 || m->nr_iov > XMSG_MAX_IOV) {
		sd_err("message with %d buffers", m->nr_iov);
		m->done(m, -1);
		return;
	}
	m->len = msg_len(m);
	m->sent = 0;
	conn_enter(c);
	list_add_tail(&m->list, &c->sendq);
	if (c->dead) {
		fail_sends(c);
		goto out;
	}
	c->backlog += m->len;
	conn_write(c);
out:
	conn_leave(c);
}

static void xr_close(struct xconn *x)
{
	struct rdma_conn *c = rc(x);

	c->owner_closed = true;
	conn_enter(c);
	conn_shutdown(c);
	conn_leave(c);
}

static size_t xr_send_backlog(const struct xconn *x)
{
	return ((const struct rdma_conn *)x)->backlog;
}

static bool xr_connected(const struct xconn *x)
{
	return ((const struct rdma_conn *)x)->connected;
}

static size_t xr_recv_got(const struct xconn *x)
{
	const struct rdma_conn *c = (const struct rdma_conn *)x;

	return c->rposted ? c->rgot : 0;
}

static int xr_peer_addr(const struct xconn *x, struct sockaddr_storage *ss)
{
	const struct rdma_conn *c = (const struct rdma_conn *)x;

	if (c->dead || !c->connected)
		return -1;
	*ss = c->peer;
	return 0;
}

static struct xconn *xr_connect(struct event_loop *loop,
				  const uint8_t addr[16], uint16_t port)
{
	struct sockaddr_storage ss;
	struct rdma_conn *c;

	if (cm_get(loop))
		return NULL;
	net_addr_to_sockaddr(addr, port, &ss);
	c = conn_new(loop);
	if (api()->create_id(cm.ch, &c->id, c, RDMA_PS_TCP))
		goto fail;
	if (api()->resolve_addr(c->id, NULL, (struct sockaddr *)&ss,
				RDMA_TIMEOUT_MS))
		goto fail;
	return (struct xconn *)c;
fail:
	if (c->id)
		api()->destroy_id(c->id);
	free(c);
	cm_put();
	return NULL;
}

const struct transport rdma_transport = {
	.name = "rdma",
	.connect = xr_connect,
	.set_ops = xr_set_ops,
	.recv = xr_recv,
	.send = xr_send,
	.close = xr_close,
	.send_backlog = xr_send_backlog,
	.connected = xr_connected,
	.recv_got = xr_recv_got,
	.peer_addr = xr_peer_addr,
};

/* ---- listeners ---- */

struct rdma_xlistener *rdma_xlisten(struct event_loop *loop,
				  const uint8_t addr[16], uint16_t port,
				  int max, const char *what, xaccept_fn fn,
				  void *arg)
{
	struct sockaddr_storage ss;
	struct rdma_xlistener *l;
	int err;

	if (cm_get(loop))
		return NULL;
	net_addr_to_sockaddr(addr, port, &ss);
	l = xzalloc(sizeof(*l));
	l->loop = loop;
	l->refcnt = 1;
	l->max = max;
	l->what = xstrdup(what ? what : "connection");
	l->fn = fn;
	l->arg = arg;
	if (api()->create_id(cm.ch, &l->id, l, RDMA_PS_TCP))
		goto fail;
	if (api()->listen(l->id, (struct sockaddr *)&ss, 128))
		goto fail;
	return l;
fail:
	err = errno;
	if (l->id)
		api()->destroy_id(l->id);
	listener_put(l);
	cm_put();
	errno = err;
	return NULL;
}

void rdma_xlistener_close(struct rdma_xlistener *l)
{
	if (l->closed)
		return;
	l->closed = true;
	api()->destroy_id(l->id);
	l->id = NULL;
	listener_put(l);
	cm_put();
}

void rdma_get_stats(struct rdma_stats *st)
{
	*st = stats;
}
