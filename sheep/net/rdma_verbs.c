// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The rdma_api table on the real libraries: every member calls its
 * librdmacm/libibverbs function.  Wrappers exist only where the library
 * offers an inline function or a macro (which has no address), or where
 * the table joins two calls (listen = bind + listen).
 */
#include "net/rdma_api.h"

static int verbs_event_channel_fd(struct rdma_event_channel *ch)
{
	return ch->fd;
}

static int verbs_listen(struct rdma_cm_id *id, struct sockaddr *addr,
			int backlog)
{
	if (rdma_bind_addr(id, addr))
		return -1;
	return rdma_listen(id, backlog);
}

/* ibv_reg_mr is a macro choosing between two library entry points */
static struct ibv_mr *verbs_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t len, int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

static int verbs_comp_channel_fd(struct ibv_comp_channel *ch)
{
	return ch->fd;
}

/* the data-path calls are inline functions of verbs.h */
static int verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

static int verbs_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

static int verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	return ibv_post_send(qp, wr, bad_wr);
}

static int verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	return ibv_post_recv(qp, wr, bad_wr);
}

const struct rdma_api rdma_api_verbs = {
	.name			= "verbs",
	.create_event_channel	= rdma_create_event_channel,
	.destroy_event_channel	= rdma_destroy_event_channel,
	.event_channel_fd	= verbs_event_channel_fd,
	.create_id		= rdma_create_id,
	.destroy_id		= rdma_destroy_id,
	.resolve_addr		= rdma_resolve_addr,
	.resolve_route		= rdma_resolve_route,
	.connect		= rdma_connect,
	.listen			= verbs_listen,
	.accept			= rdma_accept,
	.reject			= rdma_reject,
	.disconnect		= rdma_disconnect,
	.get_cm_event		= rdma_get_cm_event,
	.ack_cm_event		= rdma_ack_cm_event,
	.alloc_pd		= ibv_alloc_pd,
	.dealloc_pd		= ibv_dealloc_pd,
	.reg_mr			= verbs_reg_mr,
	.dereg_mr		= ibv_dereg_mr,
	.create_comp_channel	= ibv_create_comp_channel,
	.destroy_comp_channel	= ibv_destroy_comp_channel,
	.comp_channel_fd	= verbs_comp_channel_fd,
	.create_cq		= ibv_create_cq,
	.destroy_cq		= ibv_destroy_cq,
	.req_notify_cq		= verbs_req_notify_cq,
	.get_cq_event		= ibv_get_cq_event,
	.ack_cq_events		= ibv_ack_cq_events,
	.poll_cq		= verbs_poll_cq,
	.create_qp		= rdma_create_qp,
	.destroy_qp		= rdma_destroy_qp,
	.post_send		= verbs_post_send,
	.post_recv		= verbs_post_recv,
};
