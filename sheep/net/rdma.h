/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transport over RDMA (rdma.c): RC queue pairs through the connection
 * manager, behind the table of net/rdma_api.h (the libraries, or their
 * emulation when $KELPIE_RDMA_EMU names a directory).  Connections behave
 * exactly as transport.h says for TCP.
 */
#ifndef SHEEP_NET_RDMA_H
#define SHEEP_NET_RDMA_H

#include <stdint.h>
#include "event.h"
#include "net/transport.h"

extern const struct transport rdma_transport;

struct rdma_xlistener;

/*
 * Listen on @addr (16 bytes, IPv4-mapped or IPv6; all zeros: every
 * address) and @port.  Each connection is handed to @fn once established;
 * while @max of this listener's connections are open, new requests are
 * rejected (logged as @what).  NULL with errno on failure.
 */
struct rdma_xlistener *rdma_xlisten(struct event_loop *loop,
				  const uint8_t addr[16], uint16_t port,
				  int max, const char *what, xaccept_fn fn,
				  void *arg);
/* stop listening; open connections stay */
void rdma_xlistener_close(struct rdma_xlistener *l);

/*
 * Payload bytes this process has sent by copying them into chunks, sent
 * by describing them for the peer to read, and read from peers' buffers.
 */
struct rdma_stats {
	uint64_t copied, described, read;
	uint64_t bounced;	/* of read: through the bounce buffer */
};
void rdma_get_stats(struct rdma_stats *st);

#endif
