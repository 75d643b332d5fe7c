// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The stale sweeper: drops a stale copy as soon as every current target
 * of its object holds a working copy, object by object.  The purge at the
 * end of a recovery round (recovery.c, §7.6) needs every node to finish
 * one epoch's recovery, which never happens while nodes keep coming and
 * going; without this the stale area grows with every restart of a node.
 *
 * One round: list the stale copies (I/O worker), ask each target with
 * OIDS_EXIST which of its objects it lacks (peer requests, main loop),
 * then, if the epoch did not change meanwhile, delete the copies of the
 * objects that no target lacks (I/O worker).  A target that does not
 * answer keeps its objects' stale copies.  Rounds run every few seconds,
 * one at a time, at most SWEEP_MAX objects each.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "net.h"
#include "proto.h"
#include "util.h"
#include "core/core.h"
#include "net/peer.h"
#include "recovery/sweep.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "store/store.h"

#define SWEEP_MAX	65536		/* stale objects looked at per round */
#define SWEEP_CHUNK	8192		/* oids per OIDS_EXIST request */
#define SWEEP_EVERY_MS	3000
#define STALE_BOUND_DIV	4		/* alarm at 1/4 of the store's disk */

struct sweep_ask {
	struct peer_req pr;
	struct sweep *sw;
	uint64_t *oids;
	uint32_t nr;
};

struct sweep {
	struct work work;
	uint32_t epoch;
	uint64_t *oids;			/* sorted */
	uint32_t *epochs;
	uint8_t *flags;
	size_t nr;
	int asks;			/* OIDS_EXIST requests in flight */
	uint64_t count, bytes, disk;	/* stale usage, store size */
	size_t dropped;
};

#define F_LOCAL		1		/* this node is a target */
#define F_MISSING	2		/* a target lacks it: keep */

static struct timer sweep_timer;
static bool over_bound;

static void sweep_arm(void);

bool stale_over_bound(void)
{
	return over_bound;
}

static void sweep_free(struct sweep *sw)
{
	free(sw->oids);
	free(sw->epochs);
	free(sw->flags);
	free(sw);
	sweep_arm();
}

/* ---- step 3: delete what every target holds ---- */

static void drop_fn(struct work *w)
{
	struct sweep *sw = container_of(w, struct sweep, work);

	for (size_t i = 0; i < sw->nr; i++) {
		if (sw->flags[i] & F_MISSING)
			continue;
		if ((sw->flags[i] & F_LOCAL) &&
		    store_exist(obj_key_rep(sw->oids[i])) != SD_RES_SUCCESS)
			continue;
		if (store_drop_stale(obj_key_rep(sw->oids[i]),
				     sw->epochs[i]) == SD_RES_SUCCESS)
			sw->dropped++;
	}
}

static void drop_done(struct work *w)
{
	struct sweep *sw = container_of(w, struct sweep, work);

	if (sw->dropped)
		sd_info("stale area: dropped %zu cop%s whose targets all hold "
			"the object", sw->dropped, sw->dropped == 1 ? "y" :
			"ies");
	sweep_free(sw);
}

static void sweep_finish(struct sweep *sw)
{
	if (sw->epoch != cstate->epoch || cstate->status != SD_STATUS_OK) {
		sweep_free(sw);
		return;
	}
	sw->work.fn = drop_fn;
	sw->work.done = drop_done;
	if (wq_queue(sys.io_wq, &sw->work))
		sweep_free(sw);
}

/* ---- step 2: ask the targets ---- */

static int oid_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void mark_missing(struct sweep *sw, uint64_t oid)
{
	uint64_t *p = bsearch(&oid, sw->oids, sw->nr, sizeof(oid), oid_cmp);

	if (p)
		sw->flags[p - sw->oids] |= F_MISSING;
}

static void ask_done(struct peer_req *pr, int result)
{
	struct sweep_ask *a = container_of(pr, struct sweep_ask, pr);
	struct sweep *sw = a->sw;

	if (result == SD_RES_NO_OBJ && pr->rp.data_length <= a->nr * 8) {
		uint32_t n = pr->rp.data_length / 8;

		for (uint32_t i = 0; i < n; i++)
			mark_missing(sw, get_le64((uint8_t *)pr->rbuf + 8 * i));
	} else if (result != SD_RES_SUCCESS) {
		for (uint32_t i = 0; i < a->nr; i++)
			mark_missing(sw, a->oids[i]);
	}
	free(a->oids);
	free(pr->rbuf);
	free((void *)pr->wbuf);
	free(a);
	if (--sw->asks == 0)
		sweep_finish(sw);
}

static void ask(struct sweep *sw, const struct sd_node *n, uint64_t *oids,
		uint32_t nr)
{
	struct sweep_ask *a = xzalloc(sizeof(*a));
	uint8_t *buf = xmalloc((size_t)nr * 8);

	for (uint32_t i = 0; i < nr; i++)
		put_le64(buf + 8 * i, oids[i]);
	a->sw = sw;
	a->oids = oids;
	a->nr = nr;
	sd_init_req(&a->pr.rq, SD_OP_OIDS_EXIST);
	a->pr.rq.flags = SD_FLAG_CMD_WRITE;
	a->pr.rq.data_length = nr * 8;
	a->pr.wbuf = buf;
	a->pr.rbuf = xmalloc((size_t)nr * 8);
	a->pr.rbuf_len = nr * 8;
	a->pr.done = ask_done;
	sw->asks++;
	peer_submit(&n->nid, &a->pr);
}

/* the oids that node @k is a target of, SWEEP_CHUNK at a time */
static void ask_node(struct sweep *sw, const struct vnode_ring *ring, size_t k)
{
	uint64_t *oids = NULL;
	uint32_t nr = 0;

	for (size_t i = 0; i < sw->nr; i++) {
		int tgt[SD_MAX_COPIES];
		uint32_t vid = oid_to_vid(sw->oids[i]);
		int n = ring_targets(ring, sw->oids[i], (int)vdi_copies(vid),
				     tgt);

		for (int j = 0; j < n; j++) {
			if ((size_t)tgt[j] != k)
				continue;
			if (!oids)
				oids = xmalloc(SWEEP_CHUNK * 8);
			oids[nr++] = sw->oids[i];
			if (nr == SWEEP_CHUNK) {
				ask(sw, &ring->nodes[k], oids, nr);
				oids = NULL;
				nr = 0;
			}
		}
	}
	if (nr)
		ask(sw, &ring->nodes[k], oids, nr);
	else
		free(oids);
}

static void mark_local(struct sweep *sw, const struct vnode_ring *ring)
{
	for (size_t i = 0; i < sw->nr; i++) {
		int tgt[SD_MAX_COPIES];
		uint32_t vid = oid_to_vid(sw->oids[i]);
		int n = ring_targets(ring, sw->oids[i], (int)vdi_copies(vid),
				     tgt);

		if (n <= 0)
			sw->flags[i] |= F_MISSING;	/* no ring: keep */
		for (int j = 0; j < n; j++)
			if (node_is_self(&ring->nodes[tgt[j]]))
				sw->flags[i] |= F_LOCAL;
	}
}

static void check_bound(struct sweep *sw)
{
	uint64_t bound = sw->disk / STALE_BOUND_DIV;
	bool over = sw->disk && sw->bytes > bound;

	if (over && !over_bound)
		sd_warn("stale area over its bound: %" PRIu64 " MiB in %"
			PRIu64 " copies (bound %" PRIu64 " MiB, a quarter of "
			"the disk); copies no target holds yet are kept",
			sw->bytes >> 20, sw->count, bound >> 20);
	else if (!over && over_bound)
		sd_notice("stale area back under its bound: %" PRIu64 " MiB",
			  sw->bytes >> 20);
	over_bound = over;
}

/* ---- step 1: list the stale copies ---- */

/* OIDS_EXIST asks by oid: strips are swept once it carries the index */
static size_t list_replicas(uint64_t *oids, uint32_t *ep)
{
	struct obj_key *keys = xmalloc(SWEEP_MAX * sizeof(*keys));
	size_t n = 0, nr = (size_t)store_list_stale(keys, ep, SWEEP_MAX);

	for (size_t i = 0; i < nr; i++)
		if (keys[i].idx == OBJ_IDX_REPLICA) {
			oids[n] = keys[i].oid;
			ep[n++] = ep[i];
		}
	free(keys);
	return n;
}

static void list_fn(struct work *w)
{
	struct sweep *sw = container_of(w, struct sweep, work);
	uint64_t free_bytes;
	uint32_t *ep;

	store_stale_usage(&sw->count, &sw->bytes);
	if (store_stat(&sw->disk, &free_bytes) != SD_RES_SUCCESS)
		sw->disk = 0;
	if (!sw->count)
		return;
	sw->oids = xmalloc(SWEEP_MAX * sizeof(*sw->oids));
	ep = xmalloc(SWEEP_MAX * sizeof(*ep));
	sw->nr = list_replicas(sw->oids, ep);
	/* sort the oids and keep each one's epoch beside it */
	{
		uint64_t *pairs = xmalloc(sw->nr * 16);

		for (size_t i = 0; i < sw->nr; i++) {
			pairs[2 * i] = sw->oids[i];
			pairs[2 * i + 1] = ep[i];
		}
		qsort(pairs, sw->nr, 16, oid_cmp);
		for (size_t i = 0; i < sw->nr; i++) {
			sw->oids[i] = pairs[2 * i];
			ep[i] = (uint32_t)pairs[2 * i + 1];
		}
		free(pairs);
	}
	sw->epochs = ep;
	sw->flags = xzalloc(sw->nr ? sw->nr : 1);
}

static void list_done(struct work *w)
{
	struct sweep *sw = container_of(w, struct sweep, work);
	const struct vnode_ring *ring;

	check_bound(sw);
	if (!sw->nr || sw->epoch != cstate->epoch ||
	    cstate->status != SD_STATUS_OK || !current_view()) {
		sweep_free(sw);
		return;
	}
	ring = &current_view()->ring;
	mark_local(sw, ring);
	sw->asks = 1;		/* held while asking */
	for (size_t k = 0; k < ring->nr_nodes; k++)
		if (!node_is_self(&ring->nodes[k]) && ring->nodes[k].nr_vnodes)
			ask_node(sw, ring, k);
	if (--sw->asks == 0)
		sweep_finish(sw);
}

static void sweep_round(struct timer *t)
{
	struct sweep *sw;

	if (sys.gateway || cstate->status != SD_STATUS_OK) {
		sweep_arm();
		return;
	}
	sw = xzalloc(sizeof(*sw));
	sw->epoch = cstate->epoch;
	sw->work.fn = list_fn;
	sw->work.done = list_done;
	if (wq_queue(sys.io_wq, &sw->work)) {
		free(sw);
		sweep_arm();
	}
}

static void sweep_arm(void)
{
	sweep_timer.fn = sweep_round;
	timer_add(sys.loop, &sweep_timer, SWEEP_EVERY_MS);
}

void stale_sweep_start(void)
{
	sweep_arm();
}
