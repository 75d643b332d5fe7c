// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Framing of the emulation on one connection's socket (non-blocking, run
 * by the helper thread with emu_lock held): a struct emu_frame header,
 * then its payload.  Payload goes through a staging buffer of EMU_CHUNK
 * bytes in each direction, copied under the lock from or to the QP's
 * buffers and registered memory, so memory that is deregistered or
 * flushed meanwhile is never touched.  CM frames are handed back to the
 * caller; data frames go to the QP (rdma_emu_qp.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "net/rdma_emu.h"

int emu_wire_init(struct emu_id *e)
{
	e->rxbuf = malloc(EMU_CHUNK);
	e->txbuf = malloc(EMU_CHUNK);
	if (!e->rxbuf || !e->txbuf) {
		emu_wire_free(e);
		return -1;
	}
	e->rx.kind = EMU_RX_HDR;
	e->rx.got = 0;
	e->tx.kind = EMU_TX_NONE;
	return 0;
}

/* a request being written is done with: its WR may complete now */
static void tx_stop(struct emu_id *e)
{
	if (e->tx.kind == EMU_TX_REQ)
		emu_qp_tx_end(to_emu_qp(e->id.qp), &e->tx);
	e->tx.kind = EMU_TX_NONE;
	e->cmq_nr = 0;
}

void emu_wire_free(struct emu_id *e)
{
	tx_stop(e);
	free(e->rxbuf);
	free(e->txbuf);
	e->rxbuf = e->txbuf = NULL;
}

#define MIN_PDATA(a, b)	((a) < (b) ? (a) : (b))

static bool has_msg(uint8_t op)
{
	return op == EMU_OP_REQ || op == EMU_OP_REP || op == EMU_OP_REJ;
}

static uint32_t msg_len(const struct emu_cm_msg *m)
{
	return offsetof(struct emu_cm_msg, pdata) + m->pdata_len;
}

int emu_wire_queue_cm(struct emu_id *e, uint8_t op,
		      const struct emu_cm_msg *m)
{
	struct emu_cm_out *o;

	if (e->cmq_nr == EMU_CMQ)
		return -1;
	o = &e->cmq[(e->cmq_first + e->cmq_nr++) % EMU_CMQ];
	o->op = op;
	if (m)
		o->msg = *m;
	else
		memset(&o->msg, 0, sizeof(o->msg));
	emu_wake();
	return 0;
}

/* ---- reading ---- */

/* a whole header is in: check it, decide where the payload goes */
static int rx_header(struct emu_id *e)
{
	struct emu_rx *rx = &e->rx;

	rx->got = 0;
	if (!rx->f.op || rx->f.op >= EMU_OP_MAX)
		return -1;
	if (rx->f.op >= EMU_OP_SEND) {
		if (rx->f.len > EMU_MAX_MSG)
			return -1;
		emu_qp_rx_begin(to_emu_qp(e->id.qp), rx);
		return 0;
	}
	if (!has_msg(rx->f.op) && rx->f.len)
		return -1;
	if (has_msg(rx->f.op) &&
	    (rx->f.len < offsetof(struct emu_cm_msg, pdata) ||
	     rx->f.len > sizeof(e->rx_msg)))
		return -1;
	memset(&e->rx_msg, 0, sizeof(e->rx_msg));
	rx->kind = EMU_RX_CM;
	return 0;
}

/* one recv(): bytes, 0 at EOF, -1 with errno */
static ssize_t rx_some(struct emu_id *e, uint32_t budget)
{
	struct emu_rx *rx = &e->rx;
	uint32_t want;
	void *to;

	if (rx->kind == EMU_RX_HDR) {
		to = (uint8_t *)&rx->f + rx->got;
		want = sizeof(rx->f) - rx->got;
	} else {
		to = rx->kind == EMU_RX_CM ? (uint8_t *)&e->rx_msg + rx->got :
					     e->rxbuf;
		want = rx->f.len - rx->got;
		if (want > EMU_CHUNK)
			want = EMU_CHUNK;
		if (want > budget)
			want = budget;
	}
	return recv(e->fd, to, want, MSG_DONTWAIT);
}

/* the frame's payload is all in */
static bool rx_done(struct emu_id *e)
{
	int kind = e->rx.kind;

	e->rx.kind = EMU_RX_HDR;
	e->rx.got = 0;
	if (kind == EMU_RX_CM) {
		/* no more private data than came */
		if (e->rx.f.len)
			e->rx_msg.pdata_len = MIN_PDATA(e->rx_msg.pdata_len,
				e->rx.f.len - offsetof(struct emu_cm_msg, pdata));
		return true;
	}
	emu_qp_rx_end(to_emu_qp(e->id.qp), &e->rx);
	return false;
}

int emu_wire_rx(struct emu_id *e)
{
	struct emu_rx *rx = &e->rx;
	uint32_t budget = EMU_RX_BUDGET;
	ssize_t n;

	for (;;) {
		if (rx->kind != EMU_RX_HDR && rx->got == rx->f.len) {
			if (rx_done(e))
				return EMU_RX_GOT_CM;
			continue;
		}
		if (!budget)
			return EMU_RX_AGAIN;
		n = rx_some(e, budget);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return EMU_RX_AGAIN;
		if (n <= 0)
			return EMU_RX_HUP;
		budget -= (uint32_t)n < budget ? (uint32_t)n : budget;
		if (rx->kind == EMU_RX_HDR) {
			rx->got += n;
			if (rx->got == sizeof(rx->f) && rx_header(e))
				return EMU_RX_HUP;
			continue;
		}
		if (rx->kind != EMU_RX_CM && rx->kind != EMU_RX_DISCARD)
			emu_qp_rx_data(to_emu_qp(e->id.qp), rx, e->rxbuf, n);
		rx->got += n;
	}
}

/* ---- writing ---- */

/* the next frame: CM frames first, then the QP's answers and requests */
static bool tx_pick(struct emu_id *e, uint64_t now)
{
	struct emu_tx *tx = &e->tx;
	struct emu_cm_out *o;

	tx->hdr_done = tx->staged = tx->buf_len = tx->buf_done = 0;
	if (e->cmq_nr) {
		o = &e->cmq[e->cmq_first];
		e->cmq_first = (e->cmq_first + 1) % EMU_CMQ;
		e->cmq_nr--;
		tx->kind = EMU_TX_CM;
		tx->f = (struct emu_frame){
			.op = o->op,
			.len = has_msg(o->op) ? msg_len(&o->msg) : 0,
		};
		memcpy(e->txbuf, &o->msg, tx->f.len);
		tx->staged = tx->buf_len = tx->f.len;
		return true;
	}
	if (emu_qp_tx_next(to_emu_qp(e->id.qp), tx, now))
		return true;
	tx->kind = EMU_TX_NONE;
	return false;
}

/* stage the next chunk of payload; false when the frame is all out */
static bool tx_stage(struct emu_id *e)
{
	struct emu_tx *tx = &e->tx;
	uint32_t n = tx->f.len - tx->staged;

	if (!n)
		return false;
	if (n > EMU_CHUNK)
		n = EMU_CHUNK;
	emu_qp_tx_data(to_emu_qp(e->id.qp), tx, e->txbuf, n);
	tx->staged += n;
	tx->buf_len = n;
	tx->buf_done = 0;
	return true;
}

static ssize_t tx_some(struct emu_id *e)
{
	struct emu_tx *tx = &e->tx;

	if (tx->hdr_done < sizeof(tx->f))
		return send(e->fd, (uint8_t *)&tx->f + tx->hdr_done,
			    sizeof(tx->f) - tx->hdr_done,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
	return send(e->fd, e->txbuf + tx->buf_done,
		    tx->buf_len - tx->buf_done, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int emu_wire_tx(struct emu_id *e, uint64_t now)
{
	struct emu_tx *tx = &e->tx;
	ssize_t n;

	for (;;) {
		if (tx->kind == EMU_TX_NONE && !tx_pick(e, now))
			return 0;
		if (tx->hdr_done == sizeof(tx->f) &&
		    tx->buf_done == tx->buf_len && !tx_stage(e)) {
			if (tx->kind != EMU_TX_CM)
				emu_qp_tx_end(to_emu_qp(e->id.qp), tx);
			tx->kind = EMU_TX_NONE;
			continue;
		}
		n = tx_some(e);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (n < 0) {
			tx_stop(e);
			return -1;
		}
		if (tx->hdr_done < sizeof(tx->f))
			tx->hdr_done += n;
		else
			tx->buf_done += n;
	}
}
