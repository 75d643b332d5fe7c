// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Asynchronous sheep-to-sheep requests.  One connection per peer carries
 * many requests at once, matched to their responses by id; nothing here
 * ever waits.  A broken connection fails every request on it with
 * NETWORK_ERROR and the caller decides whether to retry.
 */
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "core/auth.h"
#include "core/core.h"
#include "net/peer.h"
#include "net/rdma.h"
#include "net/transport.h"

enum peer_rx { RX_HDR, RX_DATA, RX_SKIP };

/* after an RDMA connection that never answered: TCP for this long */
#define RDMA_FALLBACK_MS	60000

/*
 * A connection that is not up this long after its connect is given up,
 * and its requests fail: the kernel's own SYN retries back off to 16 and
 * 32 s, so a peer whose link came back (a partition healed, a host
 * restarted) would otherwise stay unreachable until the requests' own
 * 30 s ran out.  Three SYNs go out in 5 s.
 */
#define PEER_CONNECT_MS		5000

/* responses are matched to requests by id: a hash, not a list walk */
#define ID_BUCKETS	64

struct peer {
	struct node_id nid;
	struct xconn *xc;		/* NULL while not connected */
	bool rdma;			/* xc is over RDMA */
	bool rdma_answered;		/* and a response came back on it */
	uint64_t tcp_until;		/* no RDMA before (monotonic ms) */
	uint64_t dial_deadline;		/* not connected by then: give up */
	struct list_head sendq;		/* not yet (fully) written */
	struct list_head inflight;	/* written, awaiting response */
	struct peer_req *byid[ID_BUCKETS];	/* inflight, by id */
	/* with a cluster key: held until the challenge is answered */
	bool authing;
	struct list_head held;
	struct peer_req auth_nonce, auth_prove;
	uint8_t nonce[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN];
	/* the response being read */
	enum peer_rx rx_state;
	uint8_t hdr[SD_RSP_SIZE];
	struct peer_req *rx;
	uint32_t rx_len, rx_skip;
	struct list_head list;
};

static LIST_HEAD(peers);
static uint32_t next_id = 1;
static struct timer peer_timer;

static void peer_fail_all(struct peer *p, int result)
{
	struct peer_req *pr, *n;
	LIST_HEAD(failed);

	/* a done() may submit again: fail only what was here */
	list_splice_tail_init(&p->sendq, &failed);
	list_splice_tail_init(&p->inflight, &failed);
	memset(p->byid, 0, sizeof(p->byid));
	list_splice_tail_init(&p->held, &failed);
	p->authing = false;
	p->rx = NULL;
	list_for_each_entry_safe(pr, n, &failed, list) {
		list_del(&pr->list);
		pr->done(pr, result);
	}
}

static void peer_close(struct peer *p)
{
	struct xconn *xc = p->xc;

	p->xc = NULL;
	if (xc)
		xconn_close(xc);	/* unsent ones: msg_sent(-1) */
	peer_fail_all(p, SD_RES_NETWORK_ERROR);
}

/* where the inflight request @id is linked (*result NULL: none) */
static struct peer_req **id_slot(struct peer *p, uint32_t id)
{
	struct peer_req **s = &p->byid[id % ID_BUCKETS];

	while (*s && (*s)->rq.id != id)
		s = &(*s)->id_next;
	return s;
}

static struct peer_req *find_inflight(struct peer *p, uint32_t id)
{
	return *id_slot(p, id);
}

static void read_header(struct peer *p)
{
	p->rx_state = RX_HDR;
	xconn_recv(p->xc, p->hdr, SD_RSP_SIZE);
}

static void rx_complete(struct peer *p)
{
	struct peer_req *pr = p->rx;

	p->rx = NULL;
	list_del(&pr->list);
	*id_slot(p, pr->rq.id) = pr->id_next;
	pr->rp.data_length = p->rx_len;
	read_header(p);
	pr->done(pr, pr->rp.result);
}

static void rx_skip(struct peer *p)
{
	if (!p->rx_skip) {
		rx_complete(p);
		return;
	}
	p->rx_state = RX_SKIP;
	xconn_recv(p->xc, NULL, p->rx_skip);
}

static int got_header(struct peer *p)
{
	struct sd_rsp rsp;

	sd_rsp_decode(&rsp, p->hdr);
	p->rdma_answered = true;
	p->rx = find_inflight(p, rsp.id);
	if (!p->rx) {
		sd_err("response with unknown id %u from peer", rsp.id);
		return -1;
	}
	p->rx->rp = rsp;
	if (!p->rx->rbuf && p->rx->alloc_rbuf && rsp.data_length)
		p->rx->rbuf = p->rx->alloc_rbuf(p->rx, rsp.data_length);
	p->rx_len = p->rx->rbuf ? MIN(rsp.data_length, p->rx->rbuf_len) : 0;
	p->rx_skip = rsp.data_length - p->rx_len;
	if (!p->rx_len) {
		rx_skip(p);
		return 0;
	}
	p->rx_state = RX_DATA;
	xconn_recv(p->xc, p->rx->rbuf, p->rx_len);
	return 0;
}

static void peer_recv_done(struct xconn *xc, void *arg)
{
	struct peer *p = arg;

	switch (p->rx_state) {
	case RX_HDR:
		if (got_header(p))
			peer_close(p);
		break;
	case RX_DATA:
		rx_skip(p);
		break;
	case RX_SKIP:
		rx_complete(p);
		break;
	}
}

/*
 * An RDMA connection that broke before any answer (no device, no route,
 * a peer whose RDMA listener cannot be reached): the next connections
 * go over TCP for a while, so that replication does not depend on it.
 */
static void rdma_failed(struct peer *p)
{
	char a[64];

	p->tcp_until = now_msec() + RDMA_FALLBACK_MS;
	sd_warn("RDMA to %s:%u failed before any answer: TCP for %d s",
		addr_to_str(p->nid.addr, a, sizeof(a)), p->nid.port,
		RDMA_FALLBACK_MS / 1000);
}

static void peer_closed(struct xconn *xc, void *arg)
{
	struct peer *p = arg;

	if (p->rdma && !p->rdma_answered)
		rdma_failed(p);
	p->xc = NULL;
	peer_fail_all(p, SD_RES_NETWORK_ERROR);
}

static const struct xconn_ops peer_ops = {
	.recv_done = peer_recv_done,
	.closed = peer_closed,
};

/* written: the request waits for its response */
static void msg_sent(struct xmsg *m, int err)
{
	struct peer_req *pr = container_of(m, struct peer_req, msg);
	struct peer *p = pr->priv_peer;

	if (err)
		return;		/* failed with the connection */
	list_del(&pr->list);
	list_add_tail(&pr->list, &p->inflight);
	pr->id_next = p->byid[pr->rq.id % ID_BUCKETS];
	p->byid[pr->rq.id % ID_BUCKETS] = pr;
}

static struct peer *peer_get(const struct node_id *nid)
{
	struct peer *p;

	list_for_each_entry(p, &peers, list)
		if (node_id_eq(&p->nid, nid))
			return p;
	p = xzalloc(sizeof(*p));
	p->nid = *nid;
	INIT_LIST_HEAD(&p->sendq);
	INIT_LIST_HEAD(&p->inflight);
	INIT_LIST_HEAD(&p->held);
	list_add(&p->list, &peers);
	return p;
}

/* over RDMA when both ends have an RDMA address (--rdma), else TCP */
static struct xconn *connect_to(struct peer *p)
{
	const struct node_id *nid = &p->nid;
	struct xconn *xc;
	char a[64], b[64];

	p->rdma = sys.self.nid.io_port && nid->io_port &&
		  now_msec() >= p->tcp_until;
	p->rdma_answered = false;
	if (p->rdma) {
		sd_info("to %s:%u over RDMA (%s:%u)",
			addr_to_str(nid->addr, a, sizeof(a)), nid->port,
			addr_to_str(nid->io_addr, b, sizeof(b)), nid->io_port);
		xc = rdma_transport.connect(sys.loop, nid->io_addr,
					    nid->io_port);
		if (xc)
			return xc;
		rdma_failed(p);
		p->rdma = false;
	}
	return tcp_transport.connect(sys.loop, nid->addr, nid->port);
}

static int peer_connect(struct peer *p)
{
	p->xc = connect_to(p);
	if (!p->xc)
		return -1;
	p->dial_deadline = now_msec() + PEER_CONNECT_MS;
	xconn_set_ops(p->xc, &peer_ops, p);
	read_header(p);
	return 0;
}

void *peer_reply_sized_buf(struct peer_req *pr, uint32_t len)
{
	pr->rbuf_len = MIN(len, pr->rbuf_len);
	return xmalloc(pr->rbuf_len);
}

/* put @pr on the wire after what is queued */
static void send_req(struct peer *p, struct peer_req *pr)
{
	uint32_t wlen = (pr->rq.flags & SD_FLAG_CMD_WRITE) ?
			pr->rq.data_length : 0;

	sd_req_encode(&pr->rq, pr->hdr);
	pr->msg.iov[0].iov_base = pr->hdr;
	pr->msg.iov[0].iov_len = SD_REQ_SIZE;
	pr->msg.iov[1].iov_base = (void *)pr->wbuf;
	pr->msg.iov[1].iov_len = wlen;
	pr->msg.nr_iov = wlen ? 2 : 1;
	pr->msg.done = msg_sent;
	list_add_tail(&pr->list, &p->sendq);
	xconn_send(p->xc, &pr->msg);
}

static void prepare(struct peer *p, struct peer_req *pr)
{
	pr->rq.id = next_id++;
	pr->deadline = now_msec() + SD_PEER_TIMEOUT_MS;
	pr->priv_peer = p;
}

/* the challenge is answered (or the peer has no key): release the rest */
static void release_held(struct peer *p)
{
	p->authing = false;
	while (!list_empty(&p->held) && p->xc) {
		struct peer_req *pr = list_first_entry(&p->held,
						       struct peer_req, list);

		list_del(&pr->list);
		send_req(p, pr);
	}
}

static void auth_prove_done(struct peer_req *pr, int result)
{
	if (result != SD_RES_SUCCESS && result != SD_RES_NETWORK_ERROR)
		sd_err("a peer does not accept our cluster key: %s",
		       sd_strerror((uint32_t)result));
}

static void auth_nonce_done(struct peer_req *pr, int result)
{
	struct peer *p = pr->priv;

	if (!p->xc)
		return;		/* the connection is gone; so are the held */
	if (result == SD_RES_SUCCESS && pr->rp.data_length == AUTH_NONCE_LEN) {
		auth_prove(p->nonce, p->mac);
		sd_init_req(&p->auth_prove.rq, SD_OP_AUTH_PROVE);
		p->auth_prove.rq.flags = SD_FLAG_CMD_WRITE;
		p->auth_prove.rq.data_length = AUTH_MAC_LEN;
		p->auth_prove.wbuf = p->mac;
		p->auth_prove.done = auth_prove_done;
		p->auth_prove.priv = p;
		prepare(p, &p->auth_prove);
		send_req(p, &p->auth_prove);
	} else if (result != SD_RES_NO_SUPPORT) {
		/* held requests go anyway and meet the peer's verdict */
		sd_err("cluster-key challenge failed: %s",
		       sd_strerror((uint32_t)result));
	}
	release_held(p);
}

/* first on a new connection when we hold a cluster key */
static void start_auth(struct peer *p)
{
	memset(&p->auth_nonce, 0, sizeof(p->auth_nonce));
	sd_init_req(&p->auth_nonce.rq, SD_OP_AUTH_NONCE);
	p->auth_nonce.rq.data_length = AUTH_NONCE_LEN;
	p->auth_nonce.rbuf = p->nonce;
	p->auth_nonce.rbuf_len = AUTH_NONCE_LEN;
	p->auth_nonce.done = auth_nonce_done;
	p->auth_nonce.priv = p;
	p->authing = true;
	prepare(p, &p->auth_nonce);
	send_req(p, &p->auth_nonce);
}

/* @pr->rq is filled by the caller; id and epoch are assigned here */
void peer_submit(const struct node_id *nid, struct peer_req *pr)
{
	struct peer *p = peer_get(nid);

	prepare(p, pr);
	if (!p->xc) {
		if (peer_connect(p)) {
			pr->done(pr, SD_RES_NETWORK_ERROR);
			return;
		}
		if (auth_enabled())
			start_auth(p);
	}
	if (p->authing) {
		list_add_tail(&pr->list, &p->held);
		return;
	}
	send_req(p, pr);
}

static bool peer_idle(const struct peer *p)
{
	return !p->xc && list_empty(&p->sendq) && list_empty(&p->inflight) &&
	       list_empty(&p->held);
}

void peer_drop(const struct node_id *nid)
{
	struct peer *p;

	list_for_each_entry(p, &peers, list) {
		if (node_id_eq(&p->nid, nid)) {
			peer_close(p);
			if (peer_idle(p)) {
				list_del(&p->list);
				free(p);
			}
			return;
		}
	}
}

/* where @p's first request past its deadline waits, or NULL */
static const char *peer_expired(struct peer *p, uint64_t now, uint8_t *op)
{
	static const struct {
		size_t off;
		const char *what;
	} lists[] = {
		{ offsetof(struct peer, inflight), "sent and unanswered" },
		{ offsetof(struct peer, sendq), "not yet sent" },
		{ offsetof(struct peer, held), "held for authentication" },
	};
	struct peer_req *pr;

	for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
		struct list_head *h = (void *)((char *)p + lists[i].off);

		list_for_each_entry(pr, h, list)
			if (pr->deadline < now) {
				*op = pr->rq.opcode;
				return lists[i].what;
			}
	}
	return NULL;
}

/*
 * A peer that stops answering costs its requests, not the daemon; a
 * peer with no connection and nothing to do is forgotten, so the list
 * holds only the nodes in use.
 */
static void peer_check_timeouts(struct timer *t)
{
	uint64_t now = now_msec();
	struct peer *p, *n;

	list_for_each_entry_safe(p, n, &peers, list) {
		const char *where;
		uint8_t op;
		char a[64];

		where = peer_expired(p, now, &op);
		if (where) {
			sd_warn("peer %s:%u: request %#x %s after %d s; closing "
				"the connection%s",
				addr_to_str(p->nid.addr, a, sizeof(a)),
				p->nid.port, op, where,
				SD_PEER_TIMEOUT_MS / 1000,
				p->xc ? "" : " (not connected)");
			peer_close(p);
		} else if (p->xc && p->dial_deadline < now &&
			   !xconn_connected(p->xc)) {
			sd_warn("peer %s:%u: no connection after %d s; "
				"failing its requests",
				addr_to_str(p->nid.addr, a, sizeof(a)),
				p->nid.port, PEER_CONNECT_MS / 1000);
			peer_close(p);
		}
		if (peer_idle(p)) {
			list_del(&p->list);
			free(p);
		}
	}
	timer_add(sys.loop, t, 1000);
}

void peer_init(void)
{
	peer_timer.fn = peer_check_timeouts;
	timer_add(sys.loop, &peer_timer, 1000);
}
