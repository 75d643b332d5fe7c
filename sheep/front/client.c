// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Client connections (dog, QEMU, other sheep) over the transport
 * interface: framing, admission and replies.  A connection reads one
 * request at a time, runs many at once and answers in completion order.
 * Back-pressure: no header is read while the connection has too many
 * requests in flight or the daemon holds too many payload bytes (the
 * header that found the budget spent waits, decoded, for its release).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "proto.h"
#include "util.h"
#include "core/auth.h"
#include "core/request.h"
#include "front/access.h"
#include "front/front.h"
#include "front/slots.h"
#include "net/rdma.h"
#include "net/rdma_api.h"
#include "net/stall.h"
#include "net/transport.h"
#include "ops/ops.h"
#include "ops/validate.h"
#include "state/cluster.h"

enum rx_state {
	RX_HDR,		/* a header is posted (or, paused, will be) */
	RX_PAYLOAD,	/* c->rx's payload is posted */
	RX_DISCARD,	/* the payload of a refused request is posted */
	RX_PARKED,	/* a decoded header waits for budget */
	RX_STOPPED,	/* nothing more is read (hang-up after an answer) */
};

struct client {
	struct xconn *xc;
	int refcnt;
	bool dead;
	bool paused;		/* on paused_clients */
	enum rx_state rx_state;
	int nr_inflight;	/* requests whose reply is not written yet */
	uint64_t bytes;		/* payload bytes of those requests */
	uint8_t hdr[SD_REQ_SIZE];
	struct request *rx;	/* the request whose payload is read */
	uint64_t rx_cost;	/* its cost, counted in incomplete_bytes */
	uint64_t rx_since;	/* its payload began to arrive */
	struct list_head paused_list;
	struct client_access access;	/* who is at the other end */
	bool member_slot;		/* from a member's address (slots.c) */
	uint8_t nonce[AUTH_NONCE_LEN];	/* the cluster-key challenge */
	bool nonce_set;
	bool authed;			/* proved the cluster key */
	struct list_head list;		/* all_clients */
	struct stall_watch stall;	/* check_stalled */
	bool told_refused;	/* a refusal of this client was logged */
	/* VDIs locked with KLOCK on this connection (client_lock.c) */
	uint32_t locks[SD_MAX_CLIENT_LOCKS];
	int nr_locks;
	int nr_lock_pending;	/* KLOCK LOCK_VDIs not answered yet */
	bool told_locks;	/* a refusal for the limit was logged */
};

/* a reply on the wire: its header and the request that owns the data */
struct reply {
	struct xmsg msg;
	uint8_t hdr[SD_RSP_SIZE];
	struct request *req;
};

static struct xlistener *listeners[2];
static struct rdma_xlistener *rdma_listener;
static LIST_HEAD(paused_clients);
/*
 * When a request waits for room, payloads arriving slower than
 * SD_CLIENT_MIN_RATE (averaged since they began, after a quarter of a
 * second) are dropped at once, not only at the end of the rate window
 */
#define EVICT_AFTER_MS		250
static struct timer evict_timer;
static LIST_HEAD(all_clients);
static size_t nr_clients;
static struct timer resume_timer;
static struct timer stall_timer;

static void client_req_done(struct request *req);
static void read_next(struct client *c);
static void payload_done(struct client *c);

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

static void client_unpause(struct client *c)
{
	if (!c->paused)
		return;
	c->paused = false;
	list_del(&c->paused_list);
}

static void client_pause(struct client *c)
{
	if (c->paused)
		return;
	c->paused = true;
	list_add_tail(&c->paused_list, &paused_clients);
}

/* the end of the connection; the transport is gone or asked to go */
static void client_gone(struct client *c, bool close_xconn)
{
	if (c->dead)
		return;
	c->dead = true;
	list_del(&c->list);
	nr_clients--;
	for (int i = 0; i < c->nr_locks; i++)
		client_lock_release(c->locks[i]);
	c->nr_locks = 0;
	client_unpause(c);
	if (c->rx) {
		payload_done(c);
		c->bytes -= c->rx->caller_bytes;
		free_request(c->rx);
		c->rx = NULL;
		c->nr_inflight--;
		client_put(c);
	}
	/* last: the payload it was receiving is off its source's count */
	slots_put(c->access.addr, c->member_slot);
	if (close_xconn)
		xconn_close(c->xc);	/* replies it cannot write: -1 */
	c->xc = NULL;
	client_put(c);
}

static void client_close(struct client *c)
{
	client_gone(c, true);
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
		c->refcnt++;
		list_add_tail(&c->paused_list, &ready);
	}
	list_for_each_entry_safe(c, n, &ready, paused_list) {
		list_del(&c->paused_list);
		INIT_LIST_HEAD(&c->paused_list);
		if (!c->dead)
			read_next(c);
		client_put(c);
	}
}

/* protocol.md §3 and §10.1 admission checks, then the opcode's own */
/* LOCK_VDI with KLOCK: a lock this connection will hold */
static bool is_klock(const struct sd_req *rq)
{
	return rq->opcode == SD_OP_LOCK_VDI && (rq->flags & SD_FLAG_CMD_KLOCK);
}

static int check_header(struct client *c, const struct sd_req *rq,
			const struct sd_op **op)
{
	enum req_origin from;
	uint32_t ret;

	if (rq->opcode >= 0x80) {
		if (rq->proto_ver != SD_SHEEP_PROTO_VER)
			return SD_RES_VER_MISMATCH;
	} else if (rq->proto_ver > SD_PROTO_VER) {
		return SD_RES_VER_MISMATCH;
	}
	*op = get_sd_op(rq->opcode);
	if (!*op)
		return SD_RES_INVALID_PARMS;
	/* membership matters only to sheep-to-sheep opcodes */
	from = ((*op)->checks & OPV_PEER) ?
		access_origin(&c->access, c->authed) :
		FROM_CLIENT;
	ret = validate_request(rq, *op, from, c->access.admin);
	/*
	 * A lock taken with KLOCK goes with its connection, which tracks
	 * SD_MAX_CLIENT_LOCKS of them: one more is refused before it is
	 * taken, so that no lock can outlive its connection
	 */
	if (ret == SD_RES_SUCCESS && is_klock(rq) &&
	    c->nr_locks + c->nr_lock_pending >= SD_MAX_CLIENT_LOCKS) {
		if (!c->told_locks)
			sd_warn("a connection with %d VDI locks asked for one "
				"more: refused (a connection holds at most %d)",
				c->nr_locks + c->nr_lock_pending,
				SD_MAX_CLIENT_LOCKS);
		c->told_locks = true;
		return SD_RES_INVALID_PARMS;
	}
	if (ret != SD_RES_SUCCESS && !c->told_refused) {
		c->told_refused = true;
		sd_info("refused %s (flags %x, %u bytes) from a client: %s",
			(*op)->name, rq->flags, rq->data_length,
			sd_strerror(ret));
	}
	return (int)ret;
}

/* a request of @c with a @len-byte buffer, @cost counted for @c */
static struct request *client_request(struct client *c, uint32_t len,
				      uint64_t cost)
{
	struct request *req = alloc_payload_request(len);

	c->bytes += cost;
	req->caller_bytes = cost;
	req->caller = c;
	req->complete = client_req_done;
	c->refcnt++;
	c->nr_inflight++;
	return req;
}

static void reply_error(struct client *c, const struct sd_req *rq,
			uint32_t result)
{
	struct request *req = client_request(c, 0, 0);

	req->rq = *rq;
	req->rp.result = result;
	request_done(req);
}

/* AUTH_NONCE, AUTH_PROVE: a sheep proves the cluster key (core/auth.h) */
static uint32_t client_auth(struct client *c, struct request *req)
{
	if (!auth_enabled())
		return SD_RES_NO_SUPPORT;
	if (req->rq.opcode == SD_OP_AUTH_NONCE) {
		if (req->data_len < AUTH_NONCE_LEN)
			return SD_RES_INVALID_PARMS;
		auth_nonce(c->nonce);
		c->nonce_set = true;
		memcpy(req->data, c->nonce, AUTH_NONCE_LEN);
		req->rp.data_length = AUTH_NONCE_LEN;
		return SD_RES_SUCCESS;
	}
	/* a nonce proves one connection once */
	if (!c->nonce_set || req->rq.data_length != AUTH_MAC_LEN)
		return SD_RES_INVALID_PARMS;
	c->nonce_set = false;
	if (!auth_verify(c->nonce, req->data)) {
		sd_warn("a client failed the cluster-key challenge");
		return SD_RES_INVALID_PARMS;
	}
	c->authed = true;
	return SD_RES_SUCCESS;
}

static void start_request(struct client *c, struct request *req)
{
	if (req->op->checks & OPV_CONN) {
		req->rp.result = client_auth(c, req);
		request_done(req);
		return;
	}
	/*
	 * Object reads fill their whole buffer or send nothing; other
	 * replies may be shorter than the buffer and must not leak memory.
	 */
	if (!(req->rq.flags & SD_FLAG_CMD_WRITE) &&
	    req->op->type != OP_GATEWAY && req->op->type != OP_PEER)
		memset(req->data, 0, req->data_len);
	queue_request(req);
}

/*
 * The daemon's budget, of which client traffic leaves a share to the
 * sheep-to-sheep ops, and this connection's share of it.
 */
static bool over_budget(struct client *c, const struct sd_req *rq,
			const struct sd_op *op)
{
	uint64_t cost = request_cost(rq, op);

	if (c->bytes && c->bytes + cost > budget_conn_share())
		return true;
	return budget_over(cost, op->type == OP_PEER);
}

/* drop the payloads that trickle in, from the loop */
static void evict_slow(struct timer *t)
{
	static struct log_limit ll;
	uint64_t now = now_msec();
	struct client *c, *n;

	list_for_each_entry_safe(c, n, &all_clients, list) {
		uint64_t span = now - c->rx_since;

		if (c->rx_state != RX_PAYLOAD || span < EVICT_AFTER_MS ||
		    (uint64_t)xconn_recv_got(c->xc) * 1000 >=
		    (uint64_t)SD_CLIENT_MIN_RATE * span)
			continue;
		sd_warn_limited(&ll, "a client sent its payload slower than "
				"16 KiB/s while others waited: disconnecting "
				"it");
		client_close(c);
	}
	/* payloads too young to judge: look again while clients wait */
	if (!list_empty(&paused_clients))
		timer_add(sys.loop, t, EVICT_AFTER_MS);
}

static void want_room(void)
{
	if (!evict_timer.armed)
		timer_add(sys.loop, &evict_timer, 0);
}

/* the payload of c->rx arrived, or will not */
static void payload_done(struct client *c)
{
	uint64_t cost = c->rx_cost;

	c->rx_cost = 0;
	slots_incomplete_sub(c->access.addr, cost);
}

/* a header is decoded in c->hdr: refuse it, park it, or start it */
static void got_header(struct client *c)
{
	const struct sd_op *op = NULL;
	struct request *req;
	struct sd_req rq;
	uint32_t len;
	int ret;

	sd_req_decode(&rq, c->hdr);
	len = rq.data_length;
	ret = check_header(c, &rq, &op);
	if (len > SD_MAX_PAYLOAD) {
		/* cannot skip an unbounded payload: answer and hang up */
		sd_warn("request %x: data_length %u too large", rq.opcode, len);
		c->rx_state = RX_STOPPED;
		reply_error(c, &rq, SD_RES_INVALID_PARMS);
		return;
	}
	if (ret != SD_RES_SUCCESS) {
		reply_error(c, &rq, ret);
		if (c->dead)
			return;	/* the reply found the connection gone */
		if ((rq.flags & SD_FLAG_CMD_WRITE) && len) {
			c->rx_state = RX_DISCARD;
			xconn_recv(c->xc, NULL, len);
			return;
		}
		c->rx_state = RX_HDR;
		read_next(c);
		return;
	}
	if (over_budget(c, &rq, op) ||
	    ((rq.flags & SD_FLAG_CMD_WRITE) && len &&
	     slots_incomplete_full(c->access.addr, request_cost(&rq, op)))) {
		c->rx_state = RX_PARKED;
		client_pause(c);
		want_room();
		return;		/* header kept; retried on resume */
	}
	req = client_request(c, len, request_cost(&rq, op));
	req->rq = rq;
	req->op = op;
	if (is_klock(&rq))
		c->nr_lock_pending++;
	if ((rq.flags & SD_FLAG_CMD_WRITE) && len) {
		c->rx = req;
		c->rx_cost = request_cost(&rq, op);
		c->rx_since = now_msec();
		slots_incomplete_add(c->access.addr, c->rx_cost);
		c->rx_state = RX_PAYLOAD;
		xconn_recv(c->xc, req->data, len);
		return;
	}
	c->rx_state = RX_HDR;
	start_request(c, req);
	read_next(c);
}

/* post the next header, unless the connection must wait */
static void read_next(struct client *c)
{
	if (c->dead)
		return;
	if (c->rx_state == RX_PARKED) {
		got_header(c);
		return;
	}
	if (c->rx_state != RX_HDR)
		return;
	if (c->nr_inflight >= SD_CONN_MAX_INFLIGHT) {
		client_pause(c);
		return;
	}
	xconn_recv(c->xc, c->hdr, SD_REQ_SIZE);
}

static void client_recv_done(struct xconn *xc, void *arg)
{
	struct client *c = arg;
	struct request *req;

	/*
	 * What follows may close the connection and drop its last reference
	 * (a reply written at once into a connection the client closed):
	 * keep c until we are done with it.
	 */
	c->refcnt++;
	switch (c->rx_state) {
	case RX_HDR:
		got_header(c);
		break;
	case RX_PAYLOAD:
		payload_done(c);
		req = c->rx;
		c->rx = NULL;
		c->rx_state = RX_HDR;
		start_request(c, req);
		read_next(c);
		break;
	case RX_DISCARD:
		c->rx_state = RX_HDR;
		read_next(c);
		break;
	default:
		break;
	}
	client_put(c);
}

static void client_closed(struct xconn *xc, void *arg)
{
	client_gone(arg, false);
}

static const struct xconn_ops client_ops = {
	.recv_done = client_recv_done,
	.closed = client_closed,
};

static int client_accept(struct xconn *xc, void *arg)
{
	struct client *c = xzalloc(sizeof(*c));
	struct sockaddr_storage ss = { 0 };

	c->xc = xc;
	list_add_tail(&c->list, &all_clients);
	nr_clients++;
	stall_watch_init(&c->stall, now_msec());
	if (xconn_peer_addr(xc, &ss))
		ss.ss_family = AF_UNSPEC;	/* trusted with nothing */
	access_classify(&ss, &c->access);
	c->member_slot = access_member_addr(&c->access);
	if (!slots_take(c->access.addr, c->member_slot)) {
		list_del(&c->list);
		nr_clients--;
		free(c);
		return -1;	/* the listener closes it */
	}
	c->refcnt = 1;
	c->rx_state = RX_HDR;
	INIT_LIST_HEAD(&c->paused_list);
	xconn_set_ops(xc, &client_ops, c);
	read_next(c);
	return 0;
}

/*
 * A client that stops reading its replies holds their buffers, and one
 * that sends half a request holds a connection: once either has not
 * moved for SD_CLIENT_STALL_MS, the client is disconnected.  An idle
 * client between requests stays (QEMU may be quiet for hours).
 */
static void check_stalled(struct timer *t)
{
	static struct log_limit ll[STALL_SLOW + 1];	/* one per cause */
	uint64_t now = now_msec();
	struct client *c, *n;

	list_for_each_entry_safe(c, n, &all_clients, list) {
		size_t got = xconn_recv_got(c->xc);
		bool begun = got || c->rx_state == RX_PAYLOAD ||
			     c->rx_state == RX_DISCARD;
		enum stall st = stall_check(&c->stall, c->xc, begun, got, now);

		if (st == STALL_NONE)
			continue;
		sd_warn_limited(&ll[st], "a client %s: disconnecting it",
				stall_reason(st));
		client_close(c);
	}
	timer_add(sys.loop, t, STALL_CHECK_MS);
}

int listen_init(const char *bindaddr, int port, const char *sock_path)
{
	resume_timer.fn = resume_paused;
	evict_timer.fn = evict_slow;
	budget_add_release_hook(budget_released);
	stall_timer.fn = check_stalled;
	timer_add(sys.loop, &stall_timer, STALL_CHECK_MS);
	listeners[0] = tcp_listen(sys.loop, bindaddr, port, slots_listener_max(),
				  "client", client_accept, NULL);
	if (!listeners[0]) {
		sd_err("cannot listen on port %d: %m%s", port,
		       errno == EADDRINUSE ? " (another program has it: give "
		       "sheep another -p PORT)" : "");
		return -1;
	}
	listeners[1] = unix_listen(sys.loop, sock_path, slots_listener_max(),
				   "client", client_accept, NULL);
	if (!listeners[1]) {
		sd_err("cannot listen on %s: %m%s", sock_path,
		       errno == EADDRINUSE ? " (left by a sheep still "
		       "running on this store?)" : "");
		return -1;
	}
	return 0;
}

int listen_rdma(const uint8_t addr[16], uint16_t port)
{
	char a[64];

	rdma_listener = rdma_xlisten(sys.loop, addr, port, SD_MAX_CLIENTS,
				     "rdma connection", client_accept, NULL);
	if (!rdma_listener) {
		sd_err("cannot listen for RDMA on %s:%u: %m",
		       addr_to_str(addr, a, sizeof(a)), port);
		return -1;
	}
	sd_info("RDMA: listening on %s:%u (%s)",
		addr_to_str(addr, a, sizeof(a)), port, rdma_api_get()->name);
	return 0;
}

void listen_stop(void)
{
	if (rdma_listener)
		rdma_xlistener_close(rdma_listener);
	rdma_listener = NULL;
	for (int i = 0; i < 2; i++) {
		if (listeners[i])
			xlistener_close(listeners[i]);
		listeners[i] = NULL;
	}
}

static void client_add_lock(struct client *c, uint32_t vid)
{
	if (c->dead) {
		/* it went away while locking */
		client_lock_release(vid);
		return;
	}
	/* got_header refused any lock beyond what the connection tracks */
	sd_assert(c->nr_locks < SD_MAX_CLIENT_LOCKS);
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

	/* refused before it ran (reply_error): it took nothing */
	if (!req->op)
		return false;
	if (is_klock(&req->rq)) {
		sd_assert(c->nr_lock_pending > 0);
		c->nr_lock_pending--;
		if (res == SD_RES_SUCCESS) {
			client_add_lock(c, req->rp.vdi.vdi_id);
		} else if (res == SD_RES_VDI_LOCKED && !c->dead &&
			   client_lock_wait_release(req)) {
			c->nr_lock_pending++;	/* tried again later */
			return true;
		}
	} else if (req->rq.opcode == SD_OP_RELEASE_VDI &&
		   res == SD_RES_SUCCESS) {
		client_drop_lock(c, req->rq.vdi.base_vdi_id);
	}
	return false;
}

/* the reply is written (or dropped with the connection) */
static void reply_sent(struct xmsg *m, int err)
{
	struct reply *r = container_of(m, struct reply, msg);
	struct client *c = r->req->caller;

	c->bytes -= r->req->caller_bytes;
	free_request(r->req);
	free(r);
	c->nr_inflight--;
	if (!err)
		c->stall.tx_progress_at = now_msec();
	/* hang up once the answer to a request we cannot read is out */
	if (!err && !c->dead && c->rx_state == RX_STOPPED && !c->nr_inflight)
		client_close(c);
	client_put(c);
}

/* a client's request is done: its reply goes out in completion order */
static void client_req_done(struct request *req)
{
	struct client *c = req->caller;
	struct reply *r;

	if (track_locks(c, req))
		return;
	req->rp.epoch = cstate->epoch;
	if (c->dead) {
		c->bytes -= req->caller_bytes;
		free_request(req);
		c->nr_inflight--;
		client_put(c);
		return;
	}
	r = xzalloc(sizeof(*r));
	r->req = req;
	sd_rsp_encode(&req->rp, r->hdr);
	r->msg.iov[0].iov_base = r->hdr;
	r->msg.iov[0].iov_len = SD_RSP_SIZE;
	r->msg.iov[1].iov_base = req->data;
	r->msg.iov[1].iov_len = req->rp.data_length;
	r->msg.nr_iov = req->rp.data_length ? 2 : 1;
	r->msg.done = reply_sent;
	xconn_send(c->xc, &r->msg);
}

size_t client_count(void)
{
	return nr_clients;
}
