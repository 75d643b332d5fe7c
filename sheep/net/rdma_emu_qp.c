// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emulation's queue pairs: posting work requests, and the RC data
 * path the helper thread runs on them (rdma_emu_wire.c hands over each
 * frame and asks for the next one to write).
 *
 * Requests go out in SQ order, several at a time; each is answered by one
 * RESP frame, in order, and completes when its answer arrives.  A SEND
 * finding no posted receive is answered RNR; the responder then drops
 * every later request until that one comes again (go-back-N, as RC does)
 * and the requester resends from it after EMU_RNR_DELAY_MS.  A QP in the
 * error state completes everything posted with IBV_WC_WR_FLUSH_ERR,
 * except the request being written on the socket, whose buffers are
 * still read: it and those after it are flushed once it is out.
 * A READ's data is copied when its answer is written, so a later request
 * may complete at the responder first, as RC allows; IBV_SEND_FENCE on
 * the later one holds it until everything before it has completed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "net/rdma_emu.h"

static uint32_t emu_next_qpn;

static struct emu_swr *sq_at(struct emu_qp *qp, uint64_t pos)
{
	return &qp->sq[pos % qp->cap.max_send_wr];
}

static struct emu_rwr *rq_at(struct emu_qp *qp, uint64_t pos)
{
	return &qp->rq[pos % qp->cap.max_recv_wr];
}

/* ---- creation ---- */

static bool caps_ok(const struct ibv_qp_init_attr *a)
{
	const struct ibv_qp_cap *c = &a->cap;

	return a->qp_type == IBV_QPT_RC && a->send_cq && a->recv_cq &&
	       !a->srq && c->max_send_wr >= 1 &&
	       c->max_send_wr <= EMU_MAX_WR && c->max_recv_wr >= 1 &&
	       c->max_recv_wr <= EMU_MAX_WR && c->max_send_sge <= EMU_MAX_SGE &&
	       c->max_recv_sge <= EMU_MAX_SGE &&
	       c->max_inline_data <= EMU_MAX_INLINE;
}

static int alloc_queues(struct emu_qp *qp)
{
	struct ibv_qp_cap *c = &qp->cap;

	qp->sq = calloc(c->max_send_wr, sizeof(*qp->sq));
	qp->rq = calloc(c->max_recv_wr, sizeof(*qp->rq));
	if (!qp->sq || !qp->rq)
		return -1;
	for (uint32_t i = 0; i < c->max_send_wr; i++) {
		qp->sq[i].sge = calloc(c->max_send_sge + 1,
				       sizeof(struct ibv_sge));
		qp->sq[i].inl = malloc(c->max_inline_data + 1);
		if (!qp->sq[i].sge || !qp->sq[i].inl)
			return -1;
	}
	for (uint32_t i = 0; i < c->max_recv_wr; i++) {
		qp->rq[i].sge = calloc(c->max_recv_sge + 1,
				       sizeof(struct ibv_sge));
		if (!qp->rq[i].sge)
			return -1;
	}
	return 0;
}

static void free_qp(struct emu_qp *qp)
{
	for (uint32_t i = 0; qp->sq && i < qp->cap.max_send_wr; i++) {
		free(qp->sq[i].sge);
		free(qp->sq[i].inl);
	}
	for (uint32_t i = 0; qp->rq && i < qp->cap.max_recv_wr; i++)
		free(qp->rq[i].sge);
	free(qp->sq);
	free(qp->rq);
	free(qp->resp);
	free(qp);
}

int emu_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		  struct ibv_qp_init_attr *attr)
{
	struct emu_qp *qp;

	if (!pd || id->qp || !caps_ok(attr)) {
		errno = EINVAL;
		return -1;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -1;
	qp->cap = attr->cap;
	if (alloc_queues(qp)) {
		free_qp(qp);
		errno = ENOMEM;
		return -1;
	}
	qp->sq_sig_all = attr->sq_sig_all;
	qp->qp.context = &emu_ctx;
	qp->qp.qp_context = attr->qp_context;
	qp->qp.pd = pd;
	qp->qp.send_cq = attr->send_cq;
	qp->qp.recv_cq = attr->recv_cq;
	qp->qp.qp_type = IBV_QPT_RC;
	qp->qp.state = IBV_QPS_INIT;
	pthread_mutex_lock(&emu_lock);
	if (!emu_next_qpn)
		emu_next_qpn = ((uint32_t)getpid() << 8) & 0xffffff;
	qp->qp.qp_num = emu_next_qpn++ & 0xffffff;
	qp->qp.handle = qp->qp.qp_num;
	container_of(attr->send_cq, struct emu_cq, cq)->nr_qps++;
	container_of(attr->recv_cq, struct emu_cq, cq)->nr_qps++;
	id->qp = &qp->qp;
	id->pd = pd;
	id->send_cq = attr->send_cq;
	id->recv_cq = attr->recv_cq;
	id->send_cq_channel = attr->send_cq->channel;
	id->recv_cq_channel = attr->recv_cq->channel;
	id->qp_type = IBV_QPT_RC;
	pthread_mutex_unlock(&emu_lock);
	return 0;
}

/* the helper finds no QP on the id any more: its frames are dropped */
void emu_destroy_qp(struct rdma_cm_id *id)
{
	struct emu_qp *qp;

	pthread_mutex_lock(&emu_lock);
	qp = to_emu_qp(id->qp);
	if (!qp) {
		pthread_mutex_unlock(&emu_lock);
		return;
	}
	id->qp = NULL;
	container_of(qp->qp.send_cq, struct emu_cq, cq)->nr_qps--;
	container_of(qp->qp.recv_cq, struct emu_cq, cq)->nr_qps--;
	pthread_mutex_unlock(&emu_lock);
	free_qp(qp);
}

int emu_qp_connected(struct emu_qp *qp, uint32_t peer_qpn,
		     uint32_t peer_max_wr, uint8_t rnr_retry)
{
	if (!qp)
		return -1;
	/* the peer never has more requests unanswered than its SQ holds */
	qp->resp_cap = peer_max_wr < 1 ? 1 :
		       peer_max_wr > EMU_MAX_WR ? EMU_MAX_WR : peer_max_wr;
	free(qp->resp);
	qp->resp = calloc(qp->resp_cap, sizeof(*qp->resp));
	if (!qp->resp)
		return -1;
	qp->peer_qpn = peer_qpn;
	qp->rnr_retry = rnr_retry;
	qp->qp.state = IBV_QPS_RTS;
	return 0;
}

/* ---- completions and the error state ---- */

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	default:
		return IBV_WC_SEND;
	}
}

static void sq_complete(struct emu_qp *qp, int status)
{
	struct emu_swr *w = sq_at(qp, qp->sq_head);
	struct ibv_wc wc = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = wc_opcode(w->opcode),
		.byte_len = w->len,
		.qp_num = qp->qp.qp_num,
	};

	/* errors complete even unsignaled requests */
	if (status != IBV_WC_SUCCESS || qp->sq_sig_all ||
	    (w->flags & IBV_SEND_SIGNALED))
		emu_cq_push(qp->qp.send_cq, &wc, false);
	qp->sq_head++;
	if (qp->sq_sent < qp->sq_head)
		qp->sq_sent = qp->sq_head;
}

static void rq_complete(struct emu_qp *qp, int status, uint32_t len,
			bool solicited)
{
	struct ibv_wc wc = {
		.wr_id = rq_at(qp, qp->rq_head)->wr_id,
		.status = status,
		.opcode = IBV_WC_RECV,
		.byte_len = len,
		.qp_num = qp->qp.qp_num,
		.src_qp = qp->peer_qpn,
	};

	emu_cq_push(qp->qp.recv_cq, &wc, solicited);
	qp->rq_head++;
}

static void sq_flush(struct emu_qp *qp)
{
	while (qp->sq_head != qp->sq_tail) {
		if (qp->tx_busy && qp->tx_busy - 1 == qp->sq_head)
			break;
		sq_complete(qp, IBV_WC_WR_FLUSH_ERR);
	}
}

void emu_qp_error(struct emu_qp *qp)
{
	if (!qp || qp->qp.state == IBV_QPS_ERR)
		return;
	qp->qp.state = IBV_QPS_ERR;
	sq_flush(qp);
	while (qp->rq_head != qp->rq_tail)
		rq_complete(qp, IBV_WC_WR_FLUSH_ERR, 0, false);
}

/* the oldest unanswered request failed here, before it was sent */
static void sq_local_error(struct emu_qp *qp)
{
	if (qp->qp.state != IBV_QPS_RTS || qp->sq_head != qp->sq_sent ||
	    qp->sq_head == qp->sq_tail || !sq_at(qp, qp->sq_head)->err)
		return;
	sq_complete(qp, sq_at(qp, qp->sq_head)->err);
	emu_qp_error(qp);
}

/* ---- posting ---- */

static int copy_send(struct emu_qp *qp, struct emu_swr *w,
		     const struct ibv_send_wr *wr)
{
	uint64_t len = 0;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return EINVAL;
	if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_RDMA_WRITE &&
	    wr->opcode != IBV_WR_RDMA_READ)
		return EINVAL;
	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    (wr->opcode == IBV_WR_RDMA_READ || len > qp->cap.max_inline_data))
		return EINVAL;
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	w->remote_addr = wr->wr.rdma.remote_addr;
	w->rkey = wr->wr.rdma.rkey;
	w->len = len > EMU_MAX_MSG ? 0 : (uint32_t)len;
	w->err = len > EMU_MAX_MSG ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
	w->num_sge = wr->num_sge;
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
	if (!(wr->send_flags & IBV_SEND_INLINE))
		return 0;
	/* the caller may reuse inline buffers as soon as we return */
	len = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		memcpy(w->inl + len, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		len += wr->sg_list[i].length;
	}
	return 0;
}

int emu_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	struct emu_qp *qp = to_emu_qp(ibqp);
	int ret = 0;

	pthread_mutex_lock(&emu_lock);
	for (; wr; wr = wr->next) {
		if (ibqp->state != IBV_QPS_RTS && ibqp->state != IBV_QPS_ERR)
			ret = EINVAL;
		else if (qp->sq_tail - qp->sq_head == qp->cap.max_send_wr)
			ret = ENOMEM;
		else
			ret = copy_send(qp, sq_at(qp, qp->sq_tail), wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		qp->sq_tail++;
	}
	if (ibqp->state == IBV_QPS_ERR)
		sq_flush(qp);
	else
		emu_wake();
	pthread_mutex_unlock(&emu_lock);
	return ret;
}

int emu_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	struct emu_qp *qp = to_emu_qp(ibqp);
	struct emu_rwr *r;
	int ret = 0;

	pthread_mutex_lock(&emu_lock);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->cap.max_recv_sge)
			ret = EINVAL;
		else if (qp->rq_tail - qp->rq_head == qp->cap.max_recv_wr)
			ret = ENOMEM;
		if (ret) {
			*bad_wr = wr;
			break;
		}
		r = rq_at(qp, qp->rq_tail++);
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		r->len = 0;
		for (int i = 0; i < wr->num_sge; i++)
			r->len += wr->sg_list[i].length;
		if (wr->num_sge)
			memcpy(r->sge, wr->sg_list,
			       wr->num_sge * sizeof(*r->sge));
		if (ibqp->state == IBV_QPS_ERR)
			rq_complete(qp, IBV_WC_WR_FLUSH_ERR, 0, false);
	}
	pthread_mutex_unlock(&emu_lock);
	return ret;
}

/* ---- the data path, run by the helper thread ---- */

/* copy between a scatter list (at byte @off of it) and @buf */
static void sge_copy(const struct ibv_sge *sge, int n, uint64_t off,
		     uint8_t *buf, uint32_t len, bool into_sge)
{
	for (int i = 0; i < n && len; i++) {
		uint32_t step;
		uint8_t *p;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		step = sge[i].length - off < len ? sge[i].length - off : len;
		p = (uint8_t *)(uintptr_t)sge[i].addr + off;
		if (into_sge)
			memcpy(p, buf, step);
		else
			memcpy(buf, p, step);
		buf += step;
		len -= step;
		off = 0;
	}
}

static void answer(struct emu_qp *qp, const struct emu_frame *f,
		   uint16_t status)
{
	struct emu_resp *r;

	if (!qp->resp_cap)
		return;		/* never connected: no peer to answer */
	if (qp->resp_nr == qp->resp_cap) {
		/* the peer has more requests out than it said it could */
		emu_qp_error(qp);
		return;
	}
	r = &qp->resp[(qp->resp_first + qp->resp_nr++) % qp->resp_cap];
	r->seq = f->seq;
	r->status = status;
	r->addr = f->addr;
	r->rkey = f->rkey;
	r->len = f->op == EMU_OP_READ && status == EMU_ST_OK ? f->rlen : 0;
	emu_wake();
}

/* a request of the peer: where its payload goes, what to answer */
static void rx_request(struct emu_qp *qp, struct emu_rx *rx)
{
	const struct emu_frame *f = &rx->f;
	struct ibv_pd *pd = qp->qp.pd;
	struct emu_rwr *r;

	if (f->seq != qp->rx_expect)
		return;		/* after an RNR: until the retry comes */
	rx->answer = true;
	if (qp->qp.state != IBV_QPS_RTS) {
		rx->status = EMU_ST_QP_DOWN;
	} else if (f->op == EMU_OP_SEND) {
		if (qp->rq_head == qp->rq_tail) {
			rx->status = EMU_ST_RNR;
			return;
		}
		r = rq_at(qp, qp->rq_head);
		if (f->len > r->len)
			rx->status = EMU_ST_INV_REQ;
		else if (!emu_sges_ok(pd, r->sge, r->num_sge,
				      IBV_ACCESS_LOCAL_WRITE))
			rx->status = EMU_ST_OP_ERR;
		else
			rx->kind = EMU_RX_SEND;
		rx->pos = qp->rq_head;
	} else if (f->op == EMU_OP_WRITE) {
		if (emu_mr_ok(pd, f->rkey, f->addr, f->len,
			      IBV_ACCESS_REMOTE_WRITE))
			rx->kind = EMU_RX_WRITE;
		else
			rx->status = EMU_ST_ACCESS;
	} else if (!emu_mr_ok(pd, f->rkey, f->addr, f->rlen,
			      IBV_ACCESS_REMOTE_READ)) {
		rx->status = EMU_ST_ACCESS;
	}
	qp->rx_expect++;
}

/* an answer to our oldest request on the wire */
static void rx_answer(struct emu_qp *qp, struct emu_rx *rx)
{
	const struct emu_frame *f = &rx->f;
	struct emu_swr *w;

	if (qp->qp.state != IBV_QPS_RTS || f->seq != qp->sq_head ||
	    qp->sq_head == qp->sq_sent || f->status >= EMU_ST_MAX)
		return;
	w = sq_at(qp, qp->sq_head);
	if (f->len != (w->opcode == IBV_WR_RDMA_READ &&
		       f->status == EMU_ST_OK ? w->len : 0))
		return;
	rx->answer = true;
	rx->pos = qp->sq_head;
	if (f->len)
		rx->kind = EMU_RX_READ_DATA;
}

void emu_qp_rx_begin(struct emu_qp *qp, struct emu_rx *rx)
{
	rx->kind = EMU_RX_DISCARD;
	rx->answer = false;
	rx->status = EMU_ST_OK;
	rx->pos = 0;
	if (!qp)
		return;
	if (rx->f.op == EMU_OP_RESP)
		rx_answer(qp, rx);
	else
		rx_request(qp, rx);
}

void emu_qp_rx_data(struct emu_qp *qp, struct emu_rx *rx,
		    const uint8_t *buf, uint32_t n)
{
	struct emu_rwr *r;
	struct emu_swr *w;
	uint64_t at;

	if (!qp || qp->qp.state != IBV_QPS_RTS)
		return;
	switch (rx->kind) {
	case EMU_RX_SEND:
		if (qp->rq_head != rx->pos)
			return;
		r = rq_at(qp, rx->pos);
		sge_copy(r->sge, r->num_sge, rx->got, (uint8_t *)buf, n, true);
		break;
	case EMU_RX_WRITE:
		/* checked again: the region may be gone since the header */
		at = rx->f.addr + rx->got;
		if (emu_mr_ok(qp->qp.pd, rx->f.rkey, at, n,
			      IBV_ACCESS_REMOTE_WRITE))
			memcpy((void *)(uintptr_t)at, buf, n);
		else
			rx->status = EMU_ST_ACCESS;
		break;
	case EMU_RX_READ_DATA:
		if (qp->sq_head != rx->pos)
			return;
		w = sq_at(qp, rx->pos);
		sge_copy(w->sge, w->num_sge, rx->got, (uint8_t *)buf, n, true);
		break;
	}
}

/* the requester's side of an answer */
static void answered(struct emu_qp *qp, uint16_t status)
{
	static const int wc_status[EMU_ST_MAX] = {
		[EMU_ST_OK] = IBV_WC_SUCCESS,
		[EMU_ST_ACCESS] = IBV_WC_REM_ACCESS_ERR,
		[EMU_ST_INV_REQ] = IBV_WC_REM_INV_REQ_ERR,
		[EMU_ST_OP_ERR] = IBV_WC_REM_OP_ERR,
		[EMU_ST_QP_DOWN] = IBV_WC_RETRY_EXC_ERR,
	};

	if (status == EMU_ST_RNR &&
	    (qp->rnr_retry == EMU_RNR_INFINITE ||
	     qp->rnr_count < qp->rnr_retry)) {
		qp->rnr_count++;
		qp->sq_sent = qp->sq_head;	/* resend from it */
		qp->rnr_until = emu_now_ms() + EMU_RNR_DELAY_MS;
		return;
	}
	if (status == EMU_ST_RNR) {
		sq_complete(qp, IBV_WC_RNR_RETRY_EXC_ERR);
		emu_qp_error(qp);
		return;
	}
	sq_complete(qp, wc_status[status]);
	if (status != EMU_ST_OK) {
		emu_qp_error(qp);
		return;
	}
	qp->rnr_count = 0;
	sq_local_error(qp);
}

/* the responder's side: complete the receive, queue the answer */
static void served(struct emu_qp *qp, struct emu_rx *rx)
{
	bool solicited = rx->f.flags & EMU_F_SOLICITED;
	bool rq_ok = qp->rq_head == rx->pos && qp->rq_head != qp->rq_tail;

	/* failed while the payload came: it did not land (wholly) */
	if (qp->qp.state != IBV_QPS_RTS && rx->status == EMU_ST_OK)
		rx->status = EMU_ST_QP_DOWN;
	if (rx->f.op == EMU_OP_SEND && rq_ok && rx->status == EMU_ST_OK &&
	    qp->qp.state == IBV_QPS_RTS)
		rq_complete(qp, IBV_WC_SUCCESS, rx->f.len, solicited);
	else if (rx->status == EMU_ST_INV_REQ && rq_ok)
		rq_complete(qp, IBV_WC_LOC_LEN_ERR, rx->f.len, solicited);
	else if (rx->status == EMU_ST_OP_ERR && rq_ok)
		rq_complete(qp, IBV_WC_LOC_PROT_ERR, rx->f.len, solicited);
	answer(qp, &rx->f, rx->status);
	/* the responder's QP fails with the request, but not on RNR */
	if (rx->status != EMU_ST_OK && rx->status != EMU_ST_RNR)
		emu_qp_error(qp);
}

void emu_qp_rx_end(struct emu_qp *qp, struct emu_rx *rx)
{
	if (!qp || !rx->answer)
		return;
	if (rx->f.op != EMU_OP_RESP) {
		served(qp, rx);
		return;
	}
	if (qp->qp.state == IBV_QPS_RTS && qp->sq_head == rx->pos)
		answered(qp, rx->f.status);
}

uint64_t emu_qp_deadline(struct emu_qp *qp)
{
	if (!qp || qp->qp.state != IBV_QPS_RTS || qp->sq_sent == qp->sq_tail)
		return 0;
	return qp->rnr_until;
}

static bool tx_answer(struct emu_qp *qp, struct emu_tx *tx)
{
	tx->resp = qp->resp[qp->resp_first];
	qp->resp_first = (qp->resp_first + 1) % qp->resp_cap;
	qp->resp_nr--;
	tx->kind = EMU_TX_RESP;
	tx->f = (struct emu_frame){
		.op = EMU_OP_RESP,
		.status = tx->resp.status,
		.len = tx->resp.len,
		.seq = tx->resp.seq,
	};
	return true;
}

bool emu_qp_tx_next(struct emu_qp *qp, struct emu_tx *tx, uint64_t now)
{
	static const uint8_t ops[] = {
		[IBV_WR_SEND] = EMU_OP_SEND,
		[IBV_WR_RDMA_WRITE] = EMU_OP_WRITE,
		[IBV_WR_RDMA_READ] = EMU_OP_READ,
	};
	struct emu_swr *w;
	bool rd;

	if (!qp)
		return false;
	if (qp->resp_nr)
		return tx_answer(qp, tx);
	if (qp->qp.state != IBV_QPS_RTS || now < qp->rnr_until ||
	    qp->sq_sent == qp->sq_tail)
		return false;
	w = sq_at(qp, qp->sq_sent);
	/* fenced: not before everything earlier (READs above all) is done */
	if ((w->flags & IBV_SEND_FENCE) && qp->sq_head != qp->sq_sent)
		return false;
	rd = w->opcode == IBV_WR_RDMA_READ;
	if (!w->err && !(w->flags & IBV_SEND_INLINE) &&
	    !emu_sges_ok(qp->qp.pd, w->sge, w->num_sge,
			 rd ? IBV_ACCESS_LOCAL_WRITE : 0))
		w->err = IBV_WC_LOC_PROT_ERR;
	if (w->err) {
		sq_local_error(qp);
		return false;
	}
	tx->kind = EMU_TX_REQ;
	tx->pos = qp->sq_sent++;
	tx->f = (struct emu_frame){
		.op = ops[w->opcode],
		.flags = w->flags & IBV_SEND_SOLICITED ? EMU_F_SOLICITED : 0,
		.len = rd ? 0 : w->len,
		.seq = tx->pos,
		.addr = w->remote_addr,
		.rkey = w->rkey,
		.rlen = rd ? w->len : 0,
	};
	qp->tx_busy = tx->pos + 1;
	return true;
}

void emu_qp_tx_data(struct emu_qp *qp, struct emu_tx *tx, uint8_t *buf,
		    uint32_t n)
{
	struct emu_swr *w;
	uint64_t at;

	memset(buf, 0, n);
	if (!qp)
		return;		/* destroyed meanwhile: the bytes are moot */
	if (tx->kind == EMU_TX_RESP) {
		/* read under the lock: a region deregistered since reads 0 */
		at = tx->resp.addr + tx->staged;
		if (emu_mr_ok(qp->qp.pd, tx->resp.rkey, at, n,
			      IBV_ACCESS_REMOTE_READ))
			memcpy(buf, (void *)(uintptr_t)at, n);
		return;
	}
	if (qp->tx_busy != tx->pos + 1)
		return;
	w = sq_at(qp, tx->pos);
	if (w->flags & IBV_SEND_INLINE)
		memcpy(buf, w->inl + tx->staged, n);
	else
		sge_copy(w->sge, w->num_sge, tx->staged, buf, n, false);
}

void emu_qp_tx_end(struct emu_qp *qp, struct emu_tx *tx)
{
	if (!qp || tx->kind != EMU_TX_REQ || qp->tx_busy != tx->pos + 1)
		return;
	qp->tx_busy = 0;
	if (qp->qp.state == IBV_QPS_ERR)
		sq_flush(qp);
}
