/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gw/sub.c: a gateway's peer request to one target, local or remote */
#ifndef SHEEP_GW_SUB_H
#define SHEEP_GW_SUB_H

#include "internal_proto.h"
#include "net/peer.h"

/* send @pr to @n; @pr->done gets the answer (the local one too) */
void gw_peer_submit(struct peer_req *pr, const struct sd_node *n);

#endif
