/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Asynchronous sheep-to-sheep requests (peer.c) over the transport
 * interface (transport.h).  Completions run on the main loop.
 */
#ifndef SHEEP_NET_PEER_H
#define SHEEP_NET_PEER_H

#include <stddef.h>
#include <stdint.h>
#include "internal_proto.h"
#include "list.h"
#include "net/transport.h"

struct peer_req {
	struct sd_req rq;
	struct sd_rsp rp;
	const void *wbuf;
	void *rbuf;
	uint32_t rbuf_len;
	uint64_t deadline;
	struct list_head list;
	void (*done)(struct peer_req *pr, int result);
	/*
	 * Optional, for a NULL @rbuf: called when the response announces
	 * @len bytes, returns the buffer to read them into (at least
	 * @rbuf_len bytes, which it may lower first) or NULL to drop them.
	 * A request that may find nothing, or little, then costs no more
	 * buffer than that.
	 */
	void *(*alloc_rbuf)(struct peer_req *pr, uint32_t len);
	void *priv;
	/* private to peer.c */
	uint8_t hdr[SD_REQ_SIZE];
	struct xmsg msg;
	void *priv_peer;
	struct peer_req *id_next;	/* in its peer's id hash */
};

/*
 * peer_req.alloc_rbuf for a request that may find little: a buffer of the
 * reply's size (bounded by @pr->rbuf_len), not of the largest reply
 */
void *peer_reply_sized_buf(struct peer_req *pr, uint32_t len);
/* @pr->rq is filled by the caller; id and epoch are assigned here */
void peer_submit(const struct node_id *nid, struct peer_req *pr);
void peer_init(void);
/* fail every request to @nid and close its connection */
void peer_drop(const struct node_id *nid);

#endif
