/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The librdmacm/libibverbs calls an RC (reliable connected) transport
 * needs, as a table, so that the transport can run on real devices
 * (rdma_api_verbs, rdma_verbs.c: each member calls its library function)
 * or on an emulation that works between processes of one host over unix
 * sockets (rdma_api_emu, rdma_emu*.c) where no RDMA device exists.
 *
 * The types are the libraries' own; each member behaves like the library
 * call it is named after (same arguments, same return convention: 0 or a
 * pointer on success, -1 or NULL with errno set on failure) except:
 *   - listen() is rdma_bind_addr() followed by rdma_listen();
 *   - event_channel_fd() and comp_channel_fd() return the descriptor to
 *     poll (readable while an event is waiting);
 *   - create_qp() is rdma_create_qp() on an RC id, destroy_qp() is
 *     rdma_destroy_qp().
 * The emulation's limits and differences are listed in rdma_emu.h.
 */
#ifndef SHEEP_NET_RDMA_API_H
#define SHEEP_NET_RDMA_API_H

#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* set to a directory: rdma_api_get() returns the emulation meeting there */
#define RDMA_EMU_ENV	"KELPIE_RDMA_EMU"

struct rdma_api {
	const char *name;

	/* connection manager */
	struct rdma_event_channel *(*create_event_channel)(void);
	void (*destroy_event_channel)(struct rdma_event_channel *ch);
	int (*event_channel_fd)(struct rdma_event_channel *ch);
	int (*create_id)(struct rdma_event_channel *ch, struct rdma_cm_id **id,
			 void *context, enum rdma_port_space ps);
	int (*destroy_id)(struct rdma_cm_id *id);
	int (*resolve_addr)(struct rdma_cm_id *id, struct sockaddr *src,
			    struct sockaddr *dst, int timeout_ms);
	int (*resolve_route)(struct rdma_cm_id *id, int timeout_ms);
	int (*connect)(struct rdma_cm_id *id, struct rdma_conn_param *param);
	int (*listen)(struct rdma_cm_id *id, struct sockaddr *addr,
		      int backlog);
	int (*accept)(struct rdma_cm_id *id, struct rdma_conn_param *param);
	int (*reject)(struct rdma_cm_id *id, const void *private_data,
		      uint8_t private_data_len);
	int (*disconnect)(struct rdma_cm_id *id);
	int (*get_cm_event)(struct rdma_event_channel *ch,
			    struct rdma_cm_event **event);
	int (*ack_cm_event)(struct rdma_cm_event *event);

	/* verbs */
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len,
				 int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_comp_channel *(*create_comp_channel)(
		struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	int (*comp_channel_fd)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe,
				    void *cq_context,
				    struct ibv_comp_channel *ch,
				    int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq,
			    void **cq_context);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int nevents);
	/* returns the number of completions taken, or -1 */
	int (*poll_cq)(struct ibv_cq *cq, int nentries, struct ibv_wc *wc);
	int (*create_qp)(struct rdma_cm_id *id, struct ibv_pd *pd,
			 struct ibv_qp_init_attr *attr);
	void (*destroy_qp)(struct rdma_cm_id *id);
	/* these two return 0 or an errno value, as libibverbs does */
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
};

extern const struct rdma_api rdma_api_verbs;
extern const struct rdma_api rdma_api_emu;

/* the emulation when $KELPIE_RDMA_EMU names a directory, else verbs */
const struct rdma_api *rdma_api_get(void);

#endif
