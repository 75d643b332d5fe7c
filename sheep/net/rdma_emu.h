/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The RDMA emulation (rdma_api_emu), private to rdma_emu*.c.
 *
 * Each connection is a unix stream socket between two processes of one
 * host, met through the directory $KELPIE_RDMA_EMU: a listener on
 * ADDR:PORT binds the socket file "ADDR-PORT" there ("any-PORT" for the
 * wildcard address) and a connect finds it.  One helper thread per
 * process (started by the first event channel) owns every socket: it
 * writes the queued work requests, serves the peer's requests against
 * this process's registered memory, delivers SENDs into posted receives,
 * and turns frames into completions and CM events.  So one-sided
 * operations complete while the peer's application does something else,
 * as on a real HCA.  Every object is guarded by one process-wide mutex;
 * nothing blocks while holding it (the sockets are non-blocking).
 *
 * Files, lowest first: rdma_emu_verbs.c (the lock, PD, MR, CQ and
 * completion channel), rdma_emu_qp.c (queue pairs: posting, the RC data
 * path, the error state), rdma_emu_wire.c (framing on a socket),
 * rdma_emu_addr.c (the socket files), rdma_emu_cm.c (ids, events, the
 * CM handshake) and rdma_emu.c (the helper thread, fork handling and the
 * table).
 *
 * Differences from real hardware: opcodes are SEND, RDMA_WRITE and
 * RDMA_READ only, with the flags SIGNALED, INLINE, SOLICITED and FENCE
 * (no immediate data, atomics, SRQ, UD or memory windows);
 * rnr_retry comes from each side's own rdma_conn_param (7: for ever) and
 * a retry waits EMU_RNR_DELAY_MS; lkey == rkey; a request reaching a QP
 * in the error state fails with IBV_WC_RETRY_EXC_ERR at once instead of
 * after a timeout; an overrun CQ makes poll_cq fail with EOVERFLOW; the
 * rendezvous ignores which address a wildcard listener was bound to.
 * $KELPIE_RDMA_EMU_MEMLOCK (bytes) limits the memory a process may have
 * registered, as RLIMIT_MEMLOCK does on a device (ENOMEM beyond it).
 */
#ifndef SHEEP_NET_RDMA_EMU_H
#define SHEEP_NET_RDMA_EMU_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "list.h"
#include "net/rdma_api.h"

/* what the emulated device supports (ibv_query_device would say) */
#define EMU_MEMLOCK_ENV		"KELPIE_RDMA_EMU_MEMLOCK"
#define EMU_MAX_WR		4096
#define EMU_MAX_SGE		16
#define EMU_MAX_INLINE		256
#define EMU_MAX_CQE		65536
#define EMU_MAX_MSG		(1u << 30)
#define EMU_CONN_PDATA		56	/* private data of rdma_connect */
#define EMU_PDATA		196	/* of rdma_accept */
#define EMU_REJ_PDATA		148	/* of rdma_reject */
#define EMU_RNR_INFINITE	7	/* rnr_retry: retry for ever */
#define EMU_RNR_DELAY_MS	1
#define EMU_REJ_NO_LISTENER	8	/* IB CM reject reasons (status) */
#define EMU_REJ_CONSUMER	28

/* staging buffer of each direction of a connection */
#define EMU_CHUNK		(64 * 1024)
/* bytes read from one socket before the helper looks at the others */
#define EMU_RX_BUDGET		(1u << 20)
/* CM frames a connection ever queues: REQ or REP, RTU, REJ, DREQ */
#define EMU_CMQ			4

/* ---- the wire: frames between the helper threads of two processes ---- */

enum emu_op {
	EMU_OP_REQ = 1,		/* connect request: struct emu_cm_msg */
	EMU_OP_REP,		/* accepted: struct emu_cm_msg */
	EMU_OP_RTU,		/* ready to use (the active side saw REP) */
	EMU_OP_REJ,		/* rejected: struct emu_cm_msg */
	EMU_OP_DREQ,		/* disconnect */
	EMU_OP_SEND,		/* data: the message */
	EMU_OP_WRITE,		/* data: written at addr under rkey */
	EMU_OP_READ,		/* asks rlen bytes at addr under rkey */
	EMU_OP_RESP,		/* the answer to request seq (READ: data) */
	EMU_OP_MAX
};

#define EMU_F_SOLICITED		0x1

/* how the responder answered a request */
enum emu_status {
	EMU_ST_OK,
	EMU_ST_RNR,		/* no receive posted: retry later */
	EMU_ST_ACCESS,		/* bad rkey, range or access rights */
	EMU_ST_INV_REQ,		/* the SEND is larger than the receive */
	EMU_ST_OP_ERR,		/* the receive's buffers are not registered */
	EMU_ST_QP_DOWN,		/* the responder's QP is in the error state */
	EMU_ST_MAX
};

/* both ends are on one host: native byte order */
struct emu_frame {
	uint8_t op;
	uint8_t flags;
	uint16_t status;	/* RESP */
	uint32_t len;		/* payload bytes after this header */
	uint64_t seq;		/* requests and their RESP: SQ position */
	uint64_t addr;		/* WRITE, READ */
	uint32_t rkey;
	uint32_t rlen;		/* READ */
};

struct emu_cm_msg {
	struct sockaddr_storage src;	/* REQ: the active side's address */
	uint32_t qp_num;
	uint32_t max_send_wr;		/* bounds the other's answers */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t pad;
	uint8_t pdata_len;
	uint8_t pdata[EMU_PDATA];
};

/* ---- rdma_emu_verbs.c: the lock, PD, MR, CQ, completion channel ---- */

extern pthread_mutex_t emu_lock;
extern struct ibv_context emu_ctx;	/* the one emulated device */
extern int emu_epfd;			/* the helper's epoll, -1: none */
extern int emu_wakefd;			/* eventfd that wakes the helper */

struct emu_cq {
	struct ibv_cq cq;
	struct ibv_wc *wc;		/* ring of cq.cqe completions */
	unsigned int first, nr;
	int armed;			/* 0, or 1 + solicited_only */
	unsigned int events;		/* notifications on the channel */
	struct list_head chan_list;	/* on the channel while events */
	int nr_qps;
	bool overrun;
};

struct emu_comp_channel {
	struct ibv_comp_channel ch;
	struct list_head cqs;		/* CQs with notifications */
};

void emu_wake(void);
uint64_t emu_now_ms(void);
/* with emu_lock: does a region of @pd under @key cover the range? */
bool emu_mr_ok(struct ibv_pd *pd, uint32_t key, uint64_t addr,
	       uint64_t len, int access);
bool emu_sges_ok(struct ibv_pd *pd, const struct ibv_sge *sge, int n,
		 int access);
/* with emu_lock: add a completion, notify the channel if armed */
void emu_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc,
		 bool solicited);

struct ibv_pd *emu_alloc_pd(struct ibv_context *ctx);
int emu_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *emu_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			  int access);
int emu_dereg_mr(struct ibv_mr *mr);
struct ibv_comp_channel *emu_create_comp_channel(struct ibv_context *ctx);
int emu_destroy_comp_channel(struct ibv_comp_channel *ch);
int emu_comp_channel_fd(struct ibv_comp_channel *ch);
struct ibv_cq *emu_create_cq(struct ibv_context *ctx, int cqe, void *cq_ctx,
			     struct ibv_comp_channel *ch, int comp_vector);
int emu_destroy_cq(struct ibv_cq *cq);
int emu_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int emu_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
		     void **cq_ctx);
void emu_ack_cq_events(struct ibv_cq *cq, unsigned int n);
int emu_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

/* ---- rdma_emu_qp.c: queue pairs and the RC data path ---- */

struct emu_swr {			/* a posted send work request */
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int flags;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t len;
	int num_sge;
	int err;			/* a local error (ibv_wc_status) */
	struct ibv_sge *sge;		/* cap.max_send_sge of them */
	uint8_t *inl;			/* cap.max_inline_data bytes */
};

struct emu_rwr {			/* a posted receive */
	uint64_t wr_id;
	int num_sge;
	uint64_t len;
	struct ibv_sge *sge;		/* cap.max_recv_sge of them */
};

struct emu_resp {			/* an answer not yet written */
	uint64_t seq;
	uint16_t status;
	uint64_t addr;			/* READ: where the data comes from */
	uint32_t rkey, len;
};

struct emu_qp {
	struct ibv_qp qp;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	uint8_t rnr_retry;
	uint32_t peer_qpn;
	/* SQ positions: [head, sent) on the wire, [sent, tail) waiting */
	struct emu_swr *sq;
	uint64_t sq_head, sq_sent, sq_tail;
	uint64_t tx_busy;		/* position being written + 1 */
	unsigned int rnr_count;
	uint64_t rnr_until;		/* ms: no sending before */
	struct emu_rwr *rq;
	uint64_t rq_head, rq_tail;
	uint64_t rx_expect;		/* the peer's next request */
	struct emu_resp *resp;		/* ring of resp_cap answers */
	unsigned int resp_cap, resp_first, resp_nr;
};

/* what the bytes after a frame header go to */
enum emu_rx_kind {
	EMU_RX_HDR,			/* reading a header */
	EMU_RX_DISCARD,
	EMU_RX_CM,			/* into the id's cm message */
	EMU_RX_SEND,			/* into receive pos */
	EMU_RX_WRITE,			/* into our registered memory */
	EMU_RX_READ_DATA,		/* into the READ at SQ pos */
};

struct emu_rx {
	struct emu_frame f;
	uint32_t got;			/* of the header, then of the payload */
	int kind;
	bool answer;			/* answer with status at the end */
	uint16_t status;
	uint64_t pos;
};

enum emu_tx_kind { EMU_TX_NONE, EMU_TX_CM, EMU_TX_REQ, EMU_TX_RESP };

struct emu_tx {
	struct emu_frame f;
	int kind;
	uint32_t hdr_done;		/* header bytes written */
	uint32_t staged;		/* payload bytes staged so far */
	uint32_t buf_len, buf_done;	/* the staged chunk, written of it */
	uint64_t pos;			/* REQ: SQ position */
	struct emu_resp resp;		/* RESP: what is answered */
};

static inline struct emu_qp *to_emu_qp(struct ibv_qp *qp)
{
	return qp ? container_of(qp, struct emu_qp, qp) : NULL;
}

int emu_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		  struct ibv_qp_init_attr *attr);
void emu_destroy_qp(struct rdma_cm_id *id);
int emu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
int emu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);
/* with emu_lock, from the CM and the wire; @qp may be NULL */
int emu_qp_connected(struct emu_qp *qp, uint32_t peer_qpn,
		     uint32_t peer_max_wr, uint8_t rnr_retry);
void emu_qp_error(struct emu_qp *qp);
uint64_t emu_qp_deadline(struct emu_qp *qp);
void emu_qp_rx_begin(struct emu_qp *qp, struct emu_rx *rx);
void emu_qp_rx_data(struct emu_qp *qp, struct emu_rx *rx,
		    const uint8_t *buf, uint32_t n);
void emu_qp_rx_end(struct emu_qp *qp, struct emu_rx *rx);
bool emu_qp_tx_next(struct emu_qp *qp, struct emu_tx *tx, uint64_t now);
void emu_qp_tx_data(struct emu_qp *qp, struct emu_tx *tx, uint8_t *buf,
		    uint32_t n);
void emu_qp_tx_end(struct emu_qp *qp, struct emu_tx *tx);

/* ---- rdma_emu_cm.c and rdma_emu_wire.c: ids and their sockets ---- */

enum emu_fd_kind { EMU_FD_LISTEN = 1, EMU_FD_CONN };

enum emu_state {
	EMU_IDLE,
	EMU_ADDR,		/* address resolved */
	EMU_ROUTE,		/* route resolved */
	EMU_LISTENING,
	EMU_CONNECTING,		/* active: REQ sent */
	EMU_REQ_WAIT,		/* passive: socket accepted, no REQ yet */
	EMU_REQ_RCVD,		/* passive: CONNECT_REQUEST delivered */
	EMU_ACCEPTING,		/* passive: REP sent, no RTU yet */
	EMU_CONNECTED,
	EMU_DISCONNECTED,
	EMU_FAILED,		/* rejected, unreachable */
};

struct emu_cm_out {
	uint8_t op;
	struct emu_cm_msg msg;
};

struct emu_id {
	int fd_kind;			/* first: epoll's data.ptr is us */
	struct rdma_cm_id id;
	int state;
	int fd;
	bool polled;			/* in the helper's epoll */
	bool want_out;			/* ... waiting to write too */
	bool dead;			/* destroyed, freed by the helper */
	bool peer_gone;
	uint8_t rnr_retry;		/* from our rdma_conn_param */
	struct emu_id *listener;	/* passive, before CONNECT_REQUEST */
	char path[108];			/* a listener's socket file */
	struct list_head list;		/* emu_ids */
	struct emu_cm_msg peer;		/* the other side's REQ or REP */
	/* the wire */
	struct emu_rx rx;
	struct emu_tx tx;
	struct emu_cm_msg rx_msg;
	struct emu_cm_out cmq[EMU_CMQ];
	unsigned int cmq_first, cmq_nr;
	uint8_t *rxbuf, *txbuf;		/* EMU_CHUNK each */
};

static inline struct emu_id *to_emu_id(struct rdma_cm_id *id)
{
	return container_of(id, struct emu_id, id);
}

/* rdma_emu_wire.c, with emu_lock */
enum { EMU_RX_AGAIN, EMU_RX_GOT_CM, EMU_RX_HUP };
int emu_wire_init(struct emu_id *e);
void emu_wire_free(struct emu_id *e);
int emu_wire_queue_cm(struct emu_id *e, uint8_t op,
		      const struct emu_cm_msg *m);
/* reads and serves data frames; GOT_CM: e->rx.f and e->rx_msg hold one */
int emu_wire_rx(struct emu_id *e);
/* writes what can be: 0 all, 1 the socket is full, -1 broken */
int emu_wire_tx(struct emu_id *e, uint64_t now);

/* rdma_emu_addr.c: the socket files */
socklen_t emu_sa_len(const struct sockaddr *sa);	/* 0: not IP */
uint16_t *emu_sa_port(struct sockaddr_storage *ss);
/* bind @fd to the file of the id's source address (port 0: pick one) */
int emu_bind_listener(int fd, struct emu_id *e);
/* a socket connected to the listener of @dst; -1: none, -2 errno */
int emu_dial(struct sockaddr_storage *dst);

/* rdma_emu_cm.c */
extern struct list_head emu_ids;
struct rdma_event_channel *emu_create_event_channel(void);
void emu_destroy_event_channel(struct rdma_event_channel *ch);
int emu_event_channel_fd(struct rdma_event_channel *ch);
int emu_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id,
		  void *context, enum rdma_port_space ps);
int emu_destroy_id(struct rdma_cm_id *id);
int emu_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
		     struct sockaddr *dst, int timeout_ms);
int emu_resolve_route(struct rdma_cm_id *id, int timeout_ms);
int emu_connect(struct rdma_cm_id *id, struct rdma_conn_param *param);
int emu_listen(struct rdma_cm_id *id, struct sockaddr *addr, int backlog);
int emu_accept(struct rdma_cm_id *id, struct rdma_conn_param *param);
int emu_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len);
int emu_disconnect(struct rdma_cm_id *id);
int emu_get_cm_event(struct rdma_event_channel *ch,
		     struct rdma_cm_event **event);
int emu_ack_cm_event(struct rdma_cm_event *event);
/* the helper, with emu_lock */
void emu_cm_accept_conn(struct emu_id *l);
void emu_cm_frame(struct emu_id *e);
void emu_cm_hangup(struct emu_id *e);
void emu_cm_set_out(struct emu_id *e, bool want);
/* free the ids destroyed since the helper last looked */
void emu_cm_reap(void);
/* in a forked child: drop (without touching) what the parent had */
void emu_cm_forget_all(void);

#endif
