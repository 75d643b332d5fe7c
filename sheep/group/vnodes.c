// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Vnode counts (cluster.md §2.4): fixed per node (sheep -V, a cluster
 * formatted with dog cluster format -V) or weighted by capacity (the
 * default, cluster flag AUTO_VNODES), every count against the mean of
 * the members, or, opt-in (dog cluster format -S, flag STABLE_VNODES),
 * only the counts of the nodes a change concerns (lib/hash.c).  The
 * rules here are plain functions of the lists they are given; group.c
 * applies them to the membership in the same order on every node, so
 * every ring is the same.
 */
#include <inttypes.h>
#include <stdlib.h>
#include "hash.h"
#include "proto.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "work.h"
#include "state/cluster.h"
#include "store/store.h"
#include "group/vnodes.h"

/* a change of capacity smaller than 1/REWEIGHT_STEP is not announced */
#define REWEIGHT_STEP	100

bool vnodes_auto(void)
{
	return cstate->flags & SD_CLUSTER_FLAG_AUTO_VNODES;
}

static const struct sd_node *find_node(const struct sd_node *nodes,
				       size_t nr, const struct node_id *nid)
{
	for (size_t i = 0; i < nr; i++)
		if (node_id_eq(&nodes[i].nid, nid))
			return &nodes[i];
	return NULL;
}

/*
 * The drivers hand over each member as it announced itself when it
 * joined; an update since (dog node vnodes set, dog cluster reweight) is
 * in the latest epoch's record, which therefore wins for the capacity and,
 * with fixed vnodes, for the count.  Gateways stay at 0.
 */
void vnodes_weigh(struct sd_node *members, size_t nr,
		  const struct sd_node *epoch, size_t nr_epoch)
{
	bool weighted = vnodes_auto();
	struct sd_node *sorted;

	if (!cstate->ctime)
		return;		/* not formatted: nothing is placed yet */
	/* every member looked up: O(n log n), not O(n^2), on the main loop */
	sorted = nodes_sorted_copy(epoch, nr_epoch);
	sd_assert(sorted);
	for (size_t i = 0; i < nr; i++) {
		const struct sd_node *e;

		if (!members[i].nr_vnodes)
			continue;
		e = nodes_find(sorted, nr_epoch, &members[i].nid);
		if (!e || !e->nr_vnodes)
			continue;
		members[i].space = e->space;
		if (!weighted)
			members[i].nr_vnodes = e->nr_vnodes;
	}
	free(sorted);
	if (!weighted)
		return;
	if (cstate->flags & SD_CLUSTER_FLAG_STABLE_VNODES)
		nodes_stable_vnodes(members, nr, epoch, nr_epoch,
				    cstate->format_vnodes);
	else
		nodes_auto_vnodes(members, nr);
}

int vnodes_check_self(const struct sd_node *epoch, size_t nr_epoch,
		      uint32_t epoch_nr)
{
	const struct sd_node *e;

	if (!cstate->ctime || sys.gateway)
		return 0;
	if (vnodes_auto() && sys.fixed_vnodes) {
		sd_emerg("-V %ld: the cluster of %s weighs vnodes by capacity "
			 "(formatted without -V); start without -V",
			 sys.fixed_vnodes, sys.base);
		return -1;
	}
	if (!vnodes_auto() && !sys.fixed_vnodes) {
		sd_emerg("the cluster of %s has fixed vnodes (formatted with "
			 "-V): start with -V N", sys.base);
		return -1;
	}
	if (vnodes_auto())
		return 0;
	e = find_node(epoch, nr_epoch, &sys.self.nid);
	if (e && e->nr_vnodes && e->nr_vnodes != sys.fixed_vnodes) {
		sd_emerg("-V %ld: this node has %u vnodes in epoch %" PRIu32
			 " (dog node vnodes set); start it with -V %u",
			 sys.fixed_vnodes, e->nr_vnodes, epoch_nr,
			 e->nr_vnodes);
		return -1;
	}
	return 0;
}

bool vnodes_joiner_ok(const struct sd_node *joining, bool fixed)
{
	char name[128];

	if (!cstate->ctime || !joining->nr_vnodes || fixed != vnodes_auto())
		return true;
	sd_err("refusing %s: it runs with %s vnodes, the cluster's are %s",
	       node_to_str(joining, name, sizeof(name)),
	       fixed ? "fixed (-V)" : "capacity-weighted",
	       fixed ? "capacity-weighted" : "fixed (-V)");
	return false;
}

/* ---- dog cluster reweight on this node ---- */

struct reweigh {
	struct work work;
	uint64_t capacity;	/* 0: not measured */
};

static bool reweighing;

/* the capacity, as at start-up: the size of the store's file system */
static void measure_work(struct work *w)
{
	struct reweigh *r = container_of(w, struct reweigh, work);
	uint64_t size, free_bytes;

	if (store_stat(&size, &free_bytes))
		return;
	r->capacity = size;
}

static void announce(uint64_t capacity)
{
	struct request *req = alloc_request(sizeof(struct sd_node));
	struct sd_node self = sys.self;

	self.space = capacity;
	req->rq.opcode = SD_OP_UPDATE_NODE;
	req->rq.proto_ver = SD_SHEEP_PROTO_VER;
	req->rq.flags = SD_FLAG_CMD_WRITE;
	req->rq.data_length = sizeof(struct sd_node);
	sd_node_encode(&self, req->data);
	req->internal = true;
	req->complete = free_request;
	request_submit(req);
}

static void measure_done(struct work *w)
{
	struct reweigh *r = container_of(w, struct reweigh, work);
	uint64_t old = sys.self.space, diff;

	reweighing = false;
	if (!r->capacity) {
		sd_err("reweight: cannot measure the store's capacity");
		goto out;
	}
	diff = r->capacity > old ? r->capacity - old : old - r->capacity;
	if (old && diff < old / REWEIGHT_STEP) {
		sd_info("reweight: capacity %" PRIu64 " bytes, within 1%% of "
			"%" PRIu64 ": unchanged", r->capacity, old);
		goto out;
	}
	sd_notice("reweight: capacity %" PRIu64 " bytes, was %" PRIu64,
		  r->capacity, old);
	announce(r->capacity);
out:
	free(r);
}

void vnodes_reweigh_self(void)
{
	struct reweigh *r;

	if (sys.gateway || reweighing)
		return;
	r = xzalloc(sizeof(*r));
	r->work.fn = measure_work;
	r->work.done = measure_done;
	reweighing = true;
	if (wq_queue(sys.io_wq, &r->work)) {
		reweighing = false;
		sd_err("reweight: the I/O queue is full");
		free(r);
	}
}
