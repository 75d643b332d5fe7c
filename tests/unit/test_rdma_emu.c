// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests of the RDMA emulation (sheep/net/rdma_emu*.c) through the
 * rdma_api table that rdma_api_get() picks when KELPIE_RDMA_EMU is set:
 * the CM handshake and its events, rejects, SEND/RECV order, inline
 * sends, RDMA WRITE and READ, a wrong rkey, RNR retries, flushing in the
 * error state, the completion channel's fd, and two processes: a forked
 * peer that works on our memory, and one that is killed.
 * Waits are bounded (WAIT_MS) and nothing depends on timing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "net/rdma_api.h"

#define WAIT_MS		20000
#define DEPTH		64		/* WRs per queue */
#define BUF		(1u << 20)	/* each end's registered buffer */
#define MSG		256		/* a receive's size */
#define INLINE		64

static const struct rdma_api *api;
static char dir[] = "/tmp/kelpie-rdma-emu.XXXXXX";

/* one end of a connection, with everything it owns */
struct end {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen, *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;		/* sends and receives */
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* the remote buffer a peer announces in its private data */
struct remote {
	uint64_t addr;
	uint32_t rkey;
};

/* ---- waiting ---- */

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* the next CM event must be @type; returns its id, copies private data */
static struct rdma_cm_id *event_pdata(struct rdma_event_channel *ch,
				      enum rdma_cm_event_type type,
				      void *pdata, size_t len, int *status)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	assert_true(readable(api->event_channel_fd(ch), WAIT_MS));
	assert_int_equal(api->get_cm_event(ch, &ev), 0);
	if (ev->event != type)
		fail_msg("CM event %s, expected %s", rdma_event_str(ev->event),
			 rdma_event_str(type));
	if (pdata) {
		assert_true(ev->param.conn.private_data_len >= len);
		memcpy(pdata, ev->param.conn.private_data, len);
	}
	if (status)
		*status = ev->status;
	id = ev->id;
	api->ack_cm_event(ev);
	return id;
}

static struct rdma_cm_id *event(struct rdma_event_channel *ch,
				enum rdma_cm_event_type type)
{
	return event_pdata(ch, type, NULL, 0, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* one completion, waited for (fails the test after WAIT_MS) */
static bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;
	int n;

	while ((n = api->poll_cq(cq, 1, wc)) == 0 && now_ms() < end)
		usleep(200);
	return n == 1;
}

static void wc_expect(struct ibv_cq *cq, uint64_t wr_id, int status)
{
	struct ibv_wc wc;

	assert_true(poll_one(cq, &wc));
	if (wc.status != (enum ibv_wc_status)status)
		fail_msg("wr %llu: %s, expected %s",
			 (unsigned long long)wc.wr_id,
			 ibv_wc_status_str(wc.status),
			 ibv_wc_status_str(status));
	assert_int_equal(wc.wr_id, wr_id);
}

/* ---- setting up ---- */

static void end_init(struct end *e)
{
	memset(e, 0, sizeof(*e));
	e->ch = api->create_event_channel();
	assert_non_null(e->ch);
}

/* PD, CQ and MR on the id's device, and an RC QP */
static void end_qp(struct end *e, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 4, .max_recv_sge = 4,
			 .max_inline_data = INLINE },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};

	e->id = id;
	e->pd = api->alloc_pd(id->verbs);
	assert_non_null(e->pd);
	e->cc = api->create_comp_channel(id->verbs);
	assert_non_null(e->cc);
	e->cq = api->create_cq(id->verbs, 4 * DEPTH, e, e->cc, 0);
	assert_non_null(e->cq);
	e->buf = calloc(1, BUF);
	assert_non_null(e->buf);
	e->mr = api->reg_mr(e->pd, e->buf, BUF, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_non_null(e->mr);
	attr.send_cq = attr.recv_cq = e->cq;
	assert_int_equal(api->create_qp(id, e->pd, &attr), 0);
}

static void end_free(struct end *e)
{
	if (e->id && e->id->qp)
		api->destroy_qp(e->id);
	if (e->id)
		api->destroy_id(e->id);
	if (e->listen)
		api->destroy_id(e->listen);
	if (e->mr)
		api->dereg_mr(e->mr);
	if (e->cq)
		assert_int_equal(api->destroy_cq(e->cq), 0);
	if (e->cc)
		assert_int_equal(api->destroy_comp_channel(e->cc), 0);
	if (e->pd)
		assert_int_equal(api->dealloc_pd(e->pd), 0);
	free(e->buf);
	api->destroy_event_channel(e->ch);
	memset(e, 0, sizeof(*e));
}

/* listen on 127.0.0.1, port chosen by the emulation; returns the port */
static uint16_t end_listen(struct end *s)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(api->create_id(s->ch, &s->listen, s, RDMA_PS_TCP), 0);
	assert_int_equal(api->listen(s->listen, (struct sockaddr *)&sin, 8), 0);
	assert_int_equal(s->listen->route.addr.src_sin.sin_family, AF_INET);
	assert_int_not_equal(s->listen->route.addr.src_sin.sin_port, 0);
	return ntohs(s->listen->route.addr.src_sin.sin_port);
}

/* the active side up to (not including) the connect */
static void end_dial(struct end *c, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_id *id;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	assert_int_equal(api->create_id(c->ch, &id, c, RDMA_PS_TCP), 0);
	c->id = id;
	assert_int_equal(api->resolve_addr(id, NULL, (struct sockaddr *)&sin,
					   1000), 0);
	assert_ptr_equal(event(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED), id);
	assert_int_equal(api->resolve_route(id, 1000), 0);
	assert_ptr_equal(event(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED), id);
	end_qp(c, id);
}

static int conn(struct end *c, uint8_t rnr_retry, const void *pdata,
		uint8_t len)
{
	struct rdma_conn_param p = {
		.private_data = pdata, .private_data_len = len,
		.responder_resources = 4, .initiator_depth = 4,
		.retry_count = 7, .rnr_retry_count = rnr_retry,
	};

	return api->connect(c->id, &p);
}

/* the passive side takes the request and accepts it */
static void end_take(struct end *s, uint8_t rnr_retry, const void *pdata,
		     uint8_t len)
{
	struct rdma_conn_param p = {
		.private_data = pdata, .private_data_len = len,
		.responder_resources = 4, .initiator_depth = 4,
		.rnr_retry_count = rnr_retry,
	};

	end_qp(s, event(s->ch, RDMA_CM_EVENT_CONNECT_REQUEST));
	assert_ptr_equal(s->id->context, s);	/* the listener's context */
	assert_int_equal(api->accept(s->id, &p), 0);
}

/* a connected pair in this process: @c dials @s */
static void pair(struct end *c, struct end *s, uint8_t rnr_retry)
{
	end_init(c);
	end_init(s);
	end_dial(c, end_listen(s));
	assert_int_equal(conn(c, rnr_retry, NULL, 0), 0);
	end_take(s, rnr_retry, NULL, 0);
	assert_ptr_equal(event(c->ch, RDMA_CM_EVENT_ESTABLISHED), c->id);
	assert_ptr_equal(event(s->ch, RDMA_CM_EVENT_ESTABLISHED), s->id);
}

/* ---- posting ---- */

static void post_recv(struct end *e, uint64_t wr_id, uint32_t off,
		      uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf + off, .length = len,
		.lkey = e->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	assert_int_equal(api->post_recv(e->id->qp, &wr, &bad), 0);
}

static int post(struct end *e, uint64_t wr_id, enum ibv_wr_opcode op,
		uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf + off, .length = len,
		.lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;

	return api->post_send(e->id->qp, &wr, &bad);
}

/* ---- the tests ---- */

static void test_selector(void **state)
{
	assert_ptr_equal(rdma_api_get(), &rdma_api_emu);
	unsetenv(RDMA_EMU_ENV);
	assert_ptr_equal(rdma_api_get(), &rdma_api_verbs);
	setenv(RDMA_EMU_ENV, dir, 1);
	assert_ptr_equal(rdma_api_get(), &rdma_api_emu);
}

static void test_connect(void **state)
{
	struct end c, s;
	char req[16] = "hello, server", rep[16] = "hello, client";
	char got[16];

	end_init(&c);
	end_init(&s);
	end_dial(&c, end_listen(&s));
	assert_int_equal(conn(&c, 7, req, sizeof(req)), 0);
	/* the request carries the private data and the listener */
	assert_true(readable(api->event_channel_fd(s.ch), WAIT_MS));
	end_qp(&s, event_pdata(s.ch, RDMA_CM_EVENT_CONNECT_REQUEST, got,
			       sizeof(got), NULL));
	assert_string_equal(got, req);
	assert_int_equal(api->accept(s.id, &(struct rdma_conn_param){
		.private_data = rep, .private_data_len = sizeof(rep),
		.rnr_retry_count = 7 }), 0);
	assert_ptr_equal(event_pdata(c.ch, RDMA_CM_EVENT_ESTABLISHED, got,
				     sizeof(got), NULL), c.id);
	assert_string_equal(got, rep);
	assert_ptr_equal(event(s.ch, RDMA_CM_EVENT_ESTABLISHED), s.id);
	assert_int_equal(c.id->qp->state, IBV_QPS_RTS);
	assert_int_equal(s.id->qp->state, IBV_QPS_RTS);
	/* no event is left over */
	assert_false(readable(api->event_channel_fd(c.ch), 0));
	assert_false(readable(api->event_channel_fd(s.ch), 0));

	assert_int_equal(api->disconnect(c.id), 0);
	assert_ptr_equal(event(c.ch, RDMA_CM_EVENT_DISCONNECTED), c.id);
	assert_ptr_equal(event(s.ch, RDMA_CM_EVENT_DISCONNECTED), s.id);
	assert_int_equal(c.id->qp->state, IBV_QPS_ERR);
	assert_int_equal(s.id->qp->state, IBV_QPS_ERR);
	end_free(&c);
	end_free(&s);
}

static void test_reject(void **state)
{
	struct end c, s, lone;
	char why[8] = "go away", got[8];
	struct rdma_cm_id *id;
	int status;

	end_init(&c);
	end_init(&s);
	end_dial(&c, end_listen(&s));
	assert_int_equal(conn(&c, 7, NULL, 0), 0);
	id = event(s.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(api->reject(id, why, sizeof(why)), 0);
	event_pdata(c.ch, RDMA_CM_EVENT_REJECTED, got, sizeof(got), &status);
	assert_string_equal(got, why);
	assert_int_equal(status, 28);		/* consumer reject */
	api->destroy_id(id);
	end_free(&c);

	/* nobody listens on the port any more */
	end_init(&lone);
	end_dial(&lone, ntohs(s.listen->route.addr.src_sin.sin_port));
	end_free(&s);
	assert_int_equal(conn(&lone, 7, NULL, 0), 0);
	event_pdata(lone.ch, RDMA_CM_EVENT_REJECTED, NULL, 0, &status);
	assert_int_equal(status, 8);		/* invalid service id */
	end_free(&lone);
}

/* many messages, more than the queues hold, arrive whole and in order */
static void test_send_order(void **state)
{
	enum { N = 2000 };
	struct end c, s;
	struct ibv_wc wc;
	uint32_t sent = 0, done = 0, got = 0, seq;

	pair(&c, &s, 7);
	for (int i = 0; i < DEPTH; i++)
		post_recv(&s, i, i * MSG, MSG);
	while (got < N) {
		while (sent < N && sent - done < DEPTH) {
			uint32_t off = BUF / 2 + (sent % DEPTH) * MSG;

			memcpy(c.buf + off, &sent, sizeof(sent));
			memset(c.buf + off + 4, sent & 0xff, 60);
			assert_int_equal(post(&c, sent, IBV_WR_SEND, off,
					      4 + sent % 61, 0, 0), 0);
			sent++;
		}
		while (api->poll_cq(c.cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.opcode, IBV_WC_SEND);
			assert_int_equal(wc.wr_id, done++);
		}
		if (api->poll_cq(s.cq, 1, &wc) != 1) {
			usleep(100);
			continue;
		}
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV);
		assert_int_equal(wc.byte_len, 4 + got % 61);
		assert_int_equal(wc.qp_num, s.id->qp->qp_num);
		assert_int_equal(wc.src_qp, c.id->qp->qp_num);
		memcpy(&seq, s.buf + wc.wr_id * MSG, sizeof(seq));
		assert_int_equal(seq, got);
		got++;
		post_recv(&s, wc.wr_id, wc.wr_id * MSG, MSG);
	}
	while (done < N)
		wc_expect(c.cq, done++, IBV_WC_SUCCESS);
	end_free(&c);
	end_free(&s);
}

/* inline data is taken at post time, from memory never registered */
static void test_inline(void **state)
{
	struct end c, s;
	char data[INLINE];
	struct ibv_sge sge = { .addr = (uintptr_t)data, .length = INLINE };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE,
	}, *bad;
	struct ibv_wc wc;

	pair(&c, &s, 7);
	post_recv(&s, 9, 0, MSG);
	memset(data, 'i', sizeof(data));
	assert_int_equal(api->post_send(c.id->qp, &wr, &bad), 0);
	memset(data, 'x', sizeof(data));	/* too late to matter */
	wc_expect(c.cq, 1, IBV_WC_SUCCESS);
	assert_true(poll_one(s.cq, &wc));
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, INLINE);
	for (int i = 0; i < INLINE; i++)
		assert_int_equal(s.buf[i], 'i');
	/* more than max_inline_data is refused */
	sge.length = INLINE + 1;
	assert_int_equal(api->post_send(c.id->qp, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	end_free(&c);
	end_free(&s);
}

/* one-sided operations complete without the target doing anything */
static void test_write_read(void **state)
{
	const uint32_t len = BUF / 2 - 4099;	/* many chunks, odd size */
	uint64_t raddr;
	struct end c, s;
	struct ibv_wc wc;

	pair(&c, &s, 7);
	raddr = (uintptr_t)s.buf + 4099;
	for (uint32_t i = 0; i < len; i++)
		c.buf[i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(post(&c, 1, IBV_WR_RDMA_WRITE, 0, len, raddr,
			      s.mr->rkey), 0);
	/* read it back into the other half, behind the write */
	assert_int_equal(post(&c, 2, IBV_WR_RDMA_READ, BUF / 2, len, raddr,
			      s.mr->rkey), 0);
	wc_expect(c.cq, 1, IBV_WC_SUCCESS);
	wc_expect(c.cq, 2, IBV_WC_SUCCESS);
	assert_memory_equal(s.buf + 4099, c.buf, len);
	assert_memory_equal(c.buf + BUF / 2, c.buf, len);
	/* the target saw no completion */
	assert_int_equal(api->poll_cq(s.cq, 1, &wc), 0);
	end_free(&c);
	end_free(&s);
}

/* a bad rkey or range fails the request and both QPs */
static void bad_access(uint32_t rkey_delta, uint64_t addr_delta,
		       enum ibv_wr_opcode op)
{
	struct end c, s;

	pair(&c, &s, 7);
	post_recv(&s, 5, 0, MSG);
	assert_int_equal(post(&c, 1, op, 0, 64,
			      (uintptr_t)s.buf + addr_delta,
			      s.mr->rkey + rkey_delta), 0);
	assert_int_equal(post(&c, 2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	wc_expect(c.cq, 1, IBV_WC_REM_ACCESS_ERR);
	wc_expect(c.cq, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(c.id->qp->state, IBV_QPS_ERR);
	/* the responder fails too: its receive is flushed */
	wc_expect(s.cq, 5, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(s.id->qp->state, IBV_QPS_ERR);
	end_free(&c);
	end_free(&s);
}

static void test_bad_rkey(void **state)
{
	bad_access(0x100, 0, IBV_WR_RDMA_WRITE);
	bad_access(0x100, 0, IBV_WR_RDMA_READ);
	bad_access(0, BUF - 32, IBV_WR_RDMA_WRITE);	/* past the end */
}

static void test_rnr(void **state)
{
	struct end c, s;
	struct ibv_wc wc;

	/* no receive ever: 3 retries, then the error and a flush */
	pair(&c, &s, 3);
	assert_int_equal(post(&c, 1, IBV_WR_SEND, 0, 16, 0, 0), 0);
	assert_int_equal(post(&c, 2, IBV_WR_RDMA_WRITE, 0, 16,
			      (uintptr_t)s.buf, s.mr->rkey), 0);
	wc_expect(c.cq, 1, IBV_WC_RNR_RETRY_EXC_ERR);
	wc_expect(c.cq, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(c.id->qp->state, IBV_QPS_ERR);
	/* RNR does not fail the responder */
	assert_int_equal(s.id->qp->state, IBV_QPS_RTS);
	end_free(&c);
	end_free(&s);

	/* retrying for ever: the send goes once a receive is posted */
	pair(&c, &s, 7);
	memcpy(c.buf, "late", 4);
	assert_int_equal(post(&c, 1, IBV_WR_SEND, 0, 4, 0, 0), 0);
	usleep(20000);
	assert_int_equal(api->poll_cq(c.cq, 1, &wc), 0);
	post_recv(&s, 3, MSG, MSG);
	wc_expect(c.cq, 1, IBV_WC_SUCCESS);
	wc_expect(s.cq, 3, IBV_WC_SUCCESS);
	assert_memory_equal(s.buf + MSG, "late", 4);
	end_free(&c);
	end_free(&s);
}

static void test_flush(void **state)
{
	struct end c, s;

	pair(&c, &s, 7);
	for (int i = 0; i < 4; i++)
		post_recv(&c, 10 + i, i * MSG, MSG);
	/* a message larger than the receive fails both sides */
	post_recv(&s, 20, 0, 8);
	assert_int_equal(post(&c, 1, IBV_WR_SEND, 0, 9, 0, 0), 0);
	wc_expect(c.cq, 1, IBV_WC_REM_INV_REQ_ERR);
	for (int i = 0; i < 4; i++)
		wc_expect(c.cq, 10 + i, IBV_WC_WR_FLUSH_ERR);
	wc_expect(s.cq, 20, IBV_WC_LOC_LEN_ERR);
	/* in the error state everything posted is flushed at once */
	assert_int_equal(post(&c, 2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	post_recv(&c, 30, 0, MSG);
	wc_expect(c.cq, 2, IBV_WC_WR_FLUSH_ERR);
	wc_expect(c.cq, 30, IBV_WC_WR_FLUSH_ERR);
	post_recv(&s, 21, 0, MSG);
	wc_expect(s.cq, 21, IBV_WC_WR_FLUSH_ERR);
	end_free(&c);
	end_free(&s);
}

/* a full send queue refuses more, like real verbs */
static void test_queue_full(void **state)
{
	struct end c, s;
	int i;

	pair(&c, &s, 7);
	/* nothing completes: the peer posts no receive (RNR for ever) */
	for (i = 0; i < DEPTH; i++)
		assert_int_equal(post(&c, i, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(post(&c, i, IBV_WR_SEND, 0, 8, 0, 0), ENOMEM);
	for (i = 0; i < DEPTH; i++)
		post_recv(&s, i, i * MSG, MSG);
	for (i = 0; i < DEPTH; i++)
		wc_expect(c.cq, i, IBV_WC_SUCCESS);
	end_free(&c);
	end_free(&s);
}

static void test_comp_channel(void **state)
{
	struct end c, s;
	struct ibv_cq *cq;
	void *ctx;
	struct ibv_wc wc;
	int fd;

	pair(&c, &s, 7);
	fd = api->comp_channel_fd(s.cc);
	assert_int_equal(api->req_notify_cq(s.cq, 0), 0);
	assert_false(readable(fd, 0));
	post_recv(&s, 4, 0, MSG);
	assert_int_equal(post(&c, 1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_true(readable(fd, WAIT_MS));
	assert_int_equal(api->get_cq_event(s.cc, &cq, &ctx), 0);
	assert_ptr_equal(cq, s.cq);
	assert_ptr_equal(ctx, &s);
	api->ack_cq_events(cq, 1);
	assert_false(readable(fd, 0));
	assert_int_equal(api->poll_cq(s.cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 4);
	/* not armed again: the next completion does not notify */
	post_recv(&s, 5, 0, MSG);
	assert_int_equal(post(&c, 2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	wc_expect(s.cq, 5, IBV_WC_SUCCESS);
	assert_false(readable(fd, 0));
	end_free(&c);
	end_free(&s);
}

/* ---- two processes ---- */

/* in a forked child cmocka cannot report: exit with the failing line */
#define CHECK(x)	do { if (!(x)) _exit(__LINE__ % 200 + 50); } while (0)

static struct rdma_cm_id *child_event(struct rdma_event_channel *ch,
				      enum rdma_cm_event_type type,
				      struct remote *r)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	CHECK(readable(api->event_channel_fd(ch), WAIT_MS));
	CHECK(!api->get_cm_event(ch, &ev));
	CHECK(ev->event == type);
	if (r) {
		CHECK(ev->param.conn.private_data_len >= sizeof(*r));
		memcpy(r, ev->param.conn.private_data, sizeof(*r));
	}
	id = ev->id;
	api->ack_cm_event(ev);
	return id;
}

static void child_wc(struct ibv_cq *cq, uint64_t wr_id)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct ibv_wc wc;
	int n;

	while ((n = api->poll_cq(cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(200);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id);
}

/*
 * The child's side: connect, learn the parent's buffer from its
 * private data, WRITE a pattern there, READ it back, tell the parent by
 * a SEND, wait for its answer.  With @hang it stops after the first SEND
 * and waits to be killed.
 */
static void child(uint16_t port, bool hang)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	struct rdma_conn_param p = { .rnr_retry_count = 7 };
	struct rdma_event_channel *ch = api->create_event_channel();
	struct rdma_cm_id *id;
	struct remote r;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *rcq;
	struct ibv_mr *mr;
	uint8_t *buf = calloc(1, 2 * BUF + MSG);	/* write, read, recv */

	CHECK(ch && buf && !api->create_id(ch, &id, NULL, RDMA_PS_TCP));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	CHECK(!api->resolve_addr(id, NULL, (struct sockaddr *)&sin, 1000));
	child_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	CHECK(!api->resolve_route(id, 1000));
	child_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
	pd = api->alloc_pd(id->verbs);
	cq = api->create_cq(id->verbs, 32, NULL, NULL, 0);
	rcq = api->create_cq(id->verbs, 32, NULL, NULL, 0);
	mr = api->reg_mr(pd, buf, 2 * BUF + MSG, IBV_ACCESS_LOCAL_WRITE);
	CHECK(pd && cq && rcq && mr);
	attr.send_cq = cq;
	attr.recv_cq = rcq;
	CHECK(!api->create_qp(id, pd, &attr));
	CHECK(!api->connect(id, &p));
	child_event(ch, RDMA_CM_EVENT_ESTABLISHED, &r);

	struct ibv_sge wsge = { (uintptr_t)buf, BUF, mr->lkey };
	struct ibv_sge rsge = { (uintptr_t)buf + BUF, BUF, mr->lkey };
	struct ibv_sge ssge = { (uintptr_t)buf, 4, mr->lkey };
	struct ibv_sge rcv = { (uintptr_t)buf + 2 * BUF, MSG, mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &rcv, .num_sge = 1 };
	struct ibv_send_wr w[3] = {
		{ .wr_id = 1, .sg_list = &wsge, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE, .next = &w[1],
		  .wr.rdma = { r.addr, r.rkey } },
		{ .wr_id = 2, .sg_list = &rsge, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_READ, .next = &w[2],
		  .wr.rdma = { r.addr, r.rkey } },
		/* fenced: the parent changes the memory read once it has it */
		{ .wr_id = 3, .sg_list = &ssge, .num_sge = 1,
		  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_FENCE },
	}, *bad;
	struct ibv_recv_wr *rbad;

	for (uint32_t i = 0; i < BUF; i++)
		buf[i] = (uint8_t)(i * 13 + 1);
	CHECK(!api->post_recv(id->qp, &rwr, &rbad));
	CHECK(!api->post_send(id->qp, w, &bad));
	child_wc(cq, 1);
	child_wc(cq, 2);
	child_wc(cq, 3);
	CHECK(!memcmp(buf, buf + BUF, BUF));
	if (hang)
		for (;;)
			pause();
	child_wc(rcq, 9);		/* the parent's answer */
	CHECK(!memcmp(buf + 2 * BUF, "ok", 2));
	child_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
	_exit(0);
}

static pid_t spawn(struct end *s, bool hang)
{
	uint16_t port = end_listen(s);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		child(port, hang);
	return pid;
}

/* the parent accepts, announcing its buffer in the private data */
static void accept_child(struct end *s)
{
	struct remote r;

	end_qp(s, event(s->ch, RDMA_CM_EVENT_CONNECT_REQUEST));
	r.addr = (uintptr_t)s->buf;
	r.rkey = s->mr->rkey;
	assert_int_equal(api->accept(s->id, &(struct rdma_conn_param){
		.private_data = &r, .private_data_len = sizeof(r),
		.rnr_retry_count = 7 }), 0);
	assert_ptr_equal(event(s->ch, RDMA_CM_EVENT_ESTABLISHED), s->id);
}

static void check_pattern(const uint8_t *buf)
{
	for (uint32_t i = 0; i < BUF; i++)
		if (buf[i] != (uint8_t)(i * 13 + 1))
			fail_msg("byte %u: %u", i, buf[i]);
}

static void test_two_processes(void **state)
{
	struct end s;
	struct ibv_wc wc;
	pid_t pid;
	int st;

	end_init(&s);
	pid = spawn(&s, false);
	accept_child(&s);
	/* the child's SEND comes after its WRITE landed (RC order) */
	post_recv(&s, 7, BUF - MSG, MSG);
	assert_true(poll_one(s.cq, &wc));
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 4);
	check_pattern(s.buf);
	memcpy(s.buf + BUF - 2 * MSG, "ok", 2);
	assert_int_equal(post(&s, 8, IBV_WR_SEND, BUF - 2 * MSG, 2, 0, 0), 0);
	wc_expect(s.cq, 8, IBV_WC_SUCCESS);
	assert_int_equal(api->disconnect(s.id), 0);
	event(s.ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	end_free(&s);
}

static void test_peer_killed(void **state)
{
	struct end s;
	struct ibv_wc wc;
	pid_t pid;
	int st;

	end_init(&s);
	pid = spawn(&s, true);
	accept_child(&s);
	for (int i = 0; i < 4; i++)
		post_recv(&s, 40 + i, i * MSG, MSG);
	assert_true(poll_one(s.cq, &wc));
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 40);
	check_pattern(s.buf);		/* its SEND was bytes of it too */
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	event(s.ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(s.id->qp->state, IBV_QPS_ERR);
	for (int i = 1; i < 4; i++)
		wc_expect(s.cq, 40 + i, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(post(&s, 50, IBV_WR_SEND, 0, 8, 0, 0), 0);
	wc_expect(s.cq, 50, IBV_WC_WR_FLUSH_ERR);
	end_free(&s);
}

/* ---- the rendezvous directory ---- */

static int group_setup(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	setenv(RDMA_EMU_ENV, dir, 1);
	api = rdma_api_get();
	return api == &rdma_api_emu ? 0 : -1;
}

static int group_teardown(void **state)
{
	char path[sizeof(dir) + 300];
	struct dirent *d;
	DIR *dp = opendir(dir);

	while (dp && (d = readdir(dp)))
		if (d->d_name[0] != '.' &&
		    snprintf(path, sizeof(path), "%s/%s", dir,
			     d->d_name) < (int)sizeof(path))
			unlink(path);
	if (dp)
		closedir(dp);
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selector),
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_send_order),
		cmocka_unit_test(test_inline),
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_bad_rkey),
		cmocka_unit_test(test_rnr),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_queue_full),
		cmocka_unit_test(test_comp_channel),
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_peer_killed),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
