// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One peer request of the gateway to one target.  The local target's
 * request goes through the same peer path as a remote one (request_submit,
 * the daemon's own dispatch), so that it meets the same epoch checks and
 * waits for recovery the same way; its completion reaches @pr->done like
 * a remote answer.
 */
#include <stdlib.h>
#include "util.h"
#include "core/request.h"
#include "gw/sub.h"
#include "state/cluster.h"

static void local_complete(struct request *r)
{
	struct peer_req *pr = r->caller;

	pr->rp = r->rp;
	free(r);
	pr->done(pr, (int)pr->rp.result);
}

void gw_peer_submit(struct peer_req *pr, const struct sd_node *n)
{
	struct request *r;

	if (!node_is_self(n)) {
		peer_submit(&n->nid, pr);
		return;
	}
	r = xzalloc(sizeof(*r));
	INIT_LIST_HEAD(&r->list);
	r->rq = pr->rq;
	r->data = pr->rbuf ? pr->rbuf : (void *)pr->wbuf;
	/* what request_done lets the reply's data_length be */
	r->data_len = pr->rbuf ? pr->rbuf_len : pr->rq.data_length;
	r->internal = true;
	r->complete = local_complete;
	r->caller = pr;
	request_submit(r);
}
