// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Membership, epochs and cluster operations (cluster.md §3-§5).  Driver
 * callbacks arrive on the main thread in the same order on every node, so
 * every node applies the same deterministic state changes.  The resulting
 * cluster view is published with RCU for readers on other threads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "net.h"
#include "proto.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "net/peer.h"
#include "recovery/recovery.h"
#include "state/cluster.h"
#include "state/epoch.h"
#include "state/vdi.h"
#include "store/store.h"
#include "gw/gw.h"
#include "group/driver.h"
#include "group/epoch_fetch.h"
#include "group/group.h"
#include "group/vnodes.h"

#define CMSG_HDR_SIZE	(8 + SD_REQ_SIZE + SD_RSP_SIZE)

static LIST_HEAD(pending_block);	/* waiting for the block grant */
static LIST_HEAD(pending_reply);	/* waiting for our own message */
static uint32_t cluster_seq;
static struct work_queue *cluster_wq;
static bool recover_pending;	/* a recovery is to start ... */
static uint32_t recover_from;	/* ... from this epoch (0: no old ring) */
static struct cluster_state *cs;	/* the state we own (state/cluster.h) */
static struct cluster_driver *cdrv;
static struct group_hooks hooks;
/* the members as the driver announced them, before weighing */
static struct sd_node *announced;
static size_t nr_announced;

/* ---- epochs ---- */

/* @epoch is this node's from now on (metrics: how long agreement took) */
static void enter_epoch(uint32_t epoch)
{
	struct timespec ts;

	if (cs->epoch == epoch && cs->epoch_since_ms)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	cs->epoch = epoch;
	cs->epoch_since_ms = (uint64_t)ts.tv_sec * 1000 +
			     (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Publish the view; a new epoch sends the gateway's retries that wait for
 * the ring to move (a dead target) at once
 */
static void publish(void)
{
	static uint32_t published;

	publish_view();
	if (cs->epoch != published) {
		published = cs->epoch;
		gateway_epoch_changed();
	}
}

static void new_epoch(void)
{
	if (cs->epoch && cs->status == SD_STATUS_OK) {
		recover_from = cs->epoch;
		recover_pending = true;
	}
	enter_epoch(cs->epoch + 1);
	set_epoch_nodes(cs->members, cs->nr_members);
	epoch_log_write(cs->epoch, cs->members, cs->nr_members);
	sd_notice("epoch %u: %zu node(s)", cs->epoch, cs->nr_members);
	if (cs->shutdown_clean) {
		cs->shutdown_clean = false;
		config_save();
	}
}

/*
 * The same ring: the same nodes with the same vnode counts.  A count that
 * differs (capacity-weighted vnodes computed anew, say after an upgrade
 * from a daemon that gave every node 128) needs an epoch and a recovery
 * just as a node that came or went.
 */
static bool same_nodes(const struct sd_node *a, size_t na,
		       const struct sd_node *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (node_cmp(&a[i], &b[i]) || a[i].nr_vnodes != b[i].nr_vnodes)
			return false;
	return true;
}

/* the driver's member list, weighed (group/vnodes.h) */
static void take_members(const struct sd_node *nodes, size_t nr)
{
	if (nodes != announced) {
		free(announced);
		announced = xmalloc((nr ? nr : 1) * sizeof(*nodes));
		memcpy(announced, nodes, nr * sizeof(*nodes));
		nr_announced = nr;
	}
	set_members(nodes, nr);
	vnodes_weigh(cs->members, cs->nr_members, cs->epoch_nodes,
		     cs->nr_epoch_nodes);
}

/* are all nodes of the latest epoch among @members? */
static bool epoch_nodes_present(const struct sd_node *members, size_t nr)
{
	for (size_t i = 0; i < cs->nr_epoch_nodes; i++) {
		bool found = false;

		for (size_t j = 0; j < nr; j++)
			if (node_id_eq(&cs->epoch_nodes[i].nid,
				       &members[j].nid))
				found = true;
		if (!found)
			return false;
	}
	return true;
}

/*
 * A joiner's recovery waits for the epochs it missed (where the previous
 * epoch put erasure-coded strips) and for the members' VDI state (which
 * objects are coded): requests meanwhile wait in recovery's queue.
 */
static int join_pulls;
/*
 * Joining a running cluster, every member knows every VDI (each took in
 * the others' at its own join and has followed every event since), so
 * once half the members' state came (not one alone: a member whose own
 * pull failed may lack some), the others are waited for this long only:
 * a member that does not answer (frozen, overloaded) held the joiner's
 * recovery, and the requests parked for it, for the peer timeout, 30 s.
 * What a late member sends is merged when it comes.
 */
#define JOIN_PULL_GRACE_MS	3000
static bool join_gate_open, join_gate_armed;
static int join_pulls_asked, join_pulls_ok;	/* of our join, members */
static struct timer join_gate_timer;
static void start_pending_recovery(void);


/*
 * VDI state exchange at join (objects.md §6.2, §14): a node knows only the
 * VDIs whose inodes it stores, so the joiner learns the others' from every
 * member and every member learns the joiner's.
 */
struct vdi_pull {
	struct peer_req pr;
	struct node_id from;
	uint32_t nr;		/* records asked for */
	bool running;		/* from a member of a running cluster */
	bool gate;		/* our recovery waits for it */
};

static void pull_vdi_state(const struct node_id *from, uint32_t nr,
			   bool running, bool gate);

static void join_gate_fire(struct timer *t)
{
	(void)t;
	join_gate_armed = false;
	if (!join_pulls)
		return;
	sd_warn("%d member(s) sent no VDI state within %d ms of the others: "
		"recovery starts without waiting for them", join_pulls,
		JOIN_PULL_GRACE_MS);
	join_gate_open = true;
	start_pending_recovery();
}

/* a gating pull is settled (@ok: from a member of a running cluster) */
static void join_pull_settled(bool ok)
{
	join_pulls--;
	join_pulls_ok += ok;
	sd_assert(join_pulls >= 0);
	if (!join_pulls) {
		timer_del(&join_gate_timer);
		join_gate_open = join_gate_armed = false;
	} else if (ok && join_pulls_ok * 2 >= join_pulls_asked &&
		   !join_gate_open && !join_gate_armed) {
		join_gate_armed = true;
		join_gate_timer.fn = join_gate_fire;
		timer_add(sys.loop, &join_gate_timer, JOIN_PULL_GRACE_MS);
	}
	start_pending_recovery();
}

static void vdi_pull_done(struct peer_req *pr, int result)
{
	struct vdi_pull *vp = container_of(pr, struct vdi_pull, pr);
	uint32_t n = pr->rp.data_length / sizeof(struct vdi_state);

	vdi_sync_end();
	if (result == SD_RES_BUFFER_SMALL &&
	    vp->nr < (64U << 20) / sizeof(struct vdi_state)) {
		pull_vdi_state(&vp->from, vp->nr * 2, vp->running, vp->gate);
	} else if (result == SD_RES_SUCCESS) {
		for (uint32_t i = 0; i < n; i++) {
			struct vdi_state vs;

			vdi_state_decode(&vs, (uint8_t *)pr->rbuf +
					 i * sizeof(vs));
			vdi_merge_state(&vs, vp->running);
		}
	} else {
		sd_warn("cannot fetch VDI state: %s",
			sd_strerror((uint32_t)result));
		vdi_state_mark_partial();
	}
	/* (a retry with a larger buffer holds a gate of its own) */
	if (vp->gate)
		join_pull_settled(vp->running && result == SD_RES_SUCCESS);
	free(pr->rbuf);
	free(vp);
}

static void pull_vdi_state(const struct node_id *from, uint32_t nr,
			   bool running, bool gate)
{
	struct vdi_pull *vp = xzalloc(sizeof(*vp));

	vp->from = *from;
	vp->running = running;
	vp->gate = gate;
	join_pulls += gate;
	vdi_sync_begin();
	sd_init_req(&vp->pr.rq, SD_OP_GET_VDI_COPIES);
	vp->pr.rq.data_length = nr * (uint32_t)sizeof(struct vdi_state);
	vp->nr = nr;
	vp->pr.rbuf_len = vp->pr.rq.data_length;
	vp->pr.alloc_rbuf = peer_reply_sized_buf;
	vp->pr.done = vdi_pull_done;
	peer_submit(from, &vp->pr);
}

/*
 * @running: we join a cluster that was running, whose members followed
 * every event since we left: what they say about a VDI's copies wins
 * over our own inodes, which may predate an ALTER_VDI_COPY.
 */
static void exchange_vdi_state(const struct sd_node *joined, bool me,
			       bool running)
{
	if (!me) {
		pull_vdi_state(&joined->nid, 1024, false, false);
		return;
	}
	/* our join: the gate closes again */
	timer_del(&join_gate_timer);
	join_gate_open = join_gate_armed = false;
	join_pulls_asked = join_pulls_ok = 0;
	for (size_t i = 0; i < cs->nr_members; i++)
		if (!node_is_self(&cs->members[i])) {
			join_pulls_asked++;
			pull_vdi_state(&cs->members[i].nid, 1024, running,
				       true);
		}
}

static void start_pending_recovery(void)
{
	if (!recover_pending)
		return;
	if (cs->status == SD_STATUS_OK &&
	    ((join_pulls && !join_gate_open) || epoch_fetch_busy())) {
		recovery_expect(true);
		return;
	}
	recover_pending = false;
	if (cs->status == SD_STATUS_OK)
		recovery_start(recover_from);
	else
		recovery_expect(false);
}

/* ---- join (cluster.md §4.2, §4.3) ---- */

size_t cinfo_encode(void *buf, size_t max, uint8_t status)
{
	struct cluster_info_hdr h = { 0 };
	size_t nr = cs->nr_epoch_nodes;

	if (sizeof(h) + nr * sizeof(struct sd_node) > max)
		nr = (max - sizeof(h)) / sizeof(struct sd_node);
	h.proto_ver = SD_SHEEP_PROTO_VER;
	h.disable_recovery = cs->disable_recovery;
	h.nr_nodes = (int16_t)nr;
	h.epoch = cs->epoch;
	h.ctime = cs->ctime;
	/* before a format, the vnode mode is this node's own (dog format) */
	if (cs->ctime)
		h.flags = cs->flags;
	else
		h.flags = sys.fixed_vnodes ? 0 : SD_CLUSTER_FLAG_AUTO_VNODES;
	h.fixed_vnodes = sys.fixed_vnodes ? 1 : 0;
	if (cs->ctime)
		cinfo_set_format_vnodes(&h, cs->format_vnodes);
	h.nr_copies = cs->copies;
	h.copy_policy = cs->copy_policy;
	h.status = status;
	h.block_size_shift = cs->block_size_shift;
	memcpy(h.default_store, cs->store, sizeof(h.default_store));
	cinfo_hdr_encode(&h, buf);
	sd_nodes_encode(cs->epoch_nodes, nr, (uint8_t *)buf + sizeof(h));
	return sizeof(h) + nr * sizeof(struct sd_node);
}

static int cinfo_decode(const void *buf, size_t len,
			struct cluster_info_hdr *h, struct sd_node **nodes)
{
	if (len < sizeof(*h))
		return -1;
	cinfo_hdr_decode(h, buf);
	if (h->nr_nodes < 0 ||
	    sizeof(*h) + (size_t)h->nr_nodes * sizeof(struct sd_node) > len)
		return -1;
	*nodes = xmalloc(((size_t)h->nr_nodes + 1) * sizeof(struct sd_node));
	sd_nodes_decode(*nodes, (size_t)h->nr_nodes,
			(const uint8_t *)buf + sizeof(*h));
	return 0;
}

static void adopt_cinfo(const struct cluster_info_hdr *h,
			const struct sd_node *nodes)
{
	enter_epoch(h->epoch);
	cs->ctime = h->ctime;
	cs->flags = h->flags;
	cs->format_vnodes = cinfo_format_vnodes(h);
	cs->copies = h->nr_copies;
	cs->copy_policy = h->copy_policy;
	cs->block_size_shift = h->block_size_shift;
	cs->disable_recovery = h->disable_recovery;
	memcpy(cs->store, h->default_store, sizeof(cs->store));
	cs->store[sizeof(cs->store) - 1] = 0;
	/* a node formatted with the other store moves its files over */
	if (!sys.gateway && cs->store[0] &&
	    store_set_layout(cs->store) != SD_RES_SUCCESS) {
		/* files left in the other layout would be served as missing */
		sd_emerg("the cluster's store is \"%s\" and this node cannot "
			 "move its files to that layout: leaving", cs->store);
		sheep_exit(1);
	}
	set_epoch_nodes(nodes, (size_t)h->nr_nodes);
}

static void stale_if_left_behind(const struct cluster_info_hdr *h,
				 const struct sd_node *nodes);

static bool sd_join_handler(const struct sd_node *joining,
		     const struct sd_node *members, size_t nr_members,
		     void *opaque, size_t *len, size_t max_len)
{
	struct cluster_info_hdr jh;
	struct sd_node *jnodes = NULL, *all;
	uint8_t status = cs->status;
	bool self = node_is_self(joining) && !cs->joined;

	if (cinfo_decode(opaque, *len, &jh, &jnodes)) {
		sd_err("malformed join message");
		return false;
	}
	if (!self && status == SD_STATUS_WAIT) {
		if (jh.epoch > 0 && cs->epoch > 0 && jh.ctime != cs->ctime) {
			/* the joiner notices the mismatch and leaves */
			goto out;
		}
		if (jh.epoch > cs->epoch) {
			stale_if_left_behind(&jh, jnodes);
			adopt_cinfo(&jh, jnodes);
		}
	}
	if (status == SD_STATUS_WAIT && cs->ctime && cs->epoch) {
		all = xmalloc((nr_members + 1) * sizeof(*all));
		memcpy(all, members, nr_members * sizeof(*all));
		all[nr_members] = *joining;
		if (epoch_nodes_present(all, nr_members + 1))
			status = SD_STATUS_OK;
		free(all);
	}
	if (!self && !vnodes_joiner_ok(joining, jh.fixed_vnodes)) {
		free(jnodes);
		return false;
	}
out:
	*len = cinfo_encode(opaque, max_len, status);
	free(jnodes);
	return true;
}

static bool in_nodes(const struct sd_node *nodes, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (node_is_self(&nodes[i]))
			return true;
	return false;
}

/*
 * The cluster moved on without us: what we hold may be out of date.  Keep
 * it only as stale copies, tagged with the epoch we last knew.  Also when
 * the history is learnt while the cluster still waits for its nodes (a
 * whole-cluster restart that this node, down since an earlier epoch,
 * joined first): its old copies must never be served as current.
 */
static void stale_if_left_behind(const struct cluster_info_hdr *h,
				 const struct sd_node *nodes)
{
	uint32_t my_epoch = cs->epoch;

	if (!h->epoch || !my_epoch || sys.gateway ||
	    in_nodes(nodes, (size_t)h->nr_nodes))
		return;
	sd_notice("joining at epoch %u after epoch %u: local objects become "
		  "stale copies", h->epoch, my_epoch);
	recovery_stale_everything(my_epoch);
}

static void joiner_accepted(const struct cluster_info_hdr *h,
			    const struct sd_node *nodes)
{
	uint32_t my_epoch = cs->epoch;

	if (h->proto_ver != SD_SHEEP_PROTO_VER) {
		sd_emerg("cluster speaks protocol %u, not %u", h->proto_ver,
			 SD_SHEEP_PROTO_VER);
		sheep_exit(1);
	}
	if (h->epoch && cs->epoch && h->ctime != cs->ctime) {
		sd_emerg("this node's store belongs to another cluster "
			 "(creation time %" PRIx64 ", the cluster's %" PRIx64
			 "): leaving; start it on a store of this cluster, "
			 "or an empty one", cs->ctime, h->ctime);
		sheep_exit(1);
	}
	cs->joined = true;
	if ((h->status == SD_STATUS_OK && h->epoch != my_epoch) ||
	    h->epoch > my_epoch)
		stale_if_left_behind(h, nodes);
	if (h->epoch >= cs->epoch || h->status == SD_STATUS_OK)
		adopt_cinfo(h, nodes);
	if (cs->ctime)
		config_save();
}

static void sd_accept_handler(const struct sd_node *joined,
		       const struct sd_node *members, size_t nr_members,
		       const void *opaque, size_t len, bool more)
{
	struct cluster_info_hdr h;
	struct sd_node *nodes = NULL;
	bool me = node_is_self(joined) && !cs->joined;
	bool was_waiting = cs->status == SD_STATUS_WAIT;
	char name[128];

	if (cinfo_decode(opaque, len, &h, &nodes)) {
		sd_err("malformed accept message");
		return;
	}
	/* joins are decided together only in a running cluster */
	if (more && h.status != SD_STATUS_OK) {
		sd_err("malformed accept message: one of several joins "
		       "decided together, in a cluster not running (%u)",
		       h.status);
		free(nodes);
		return;
	}
	sd_info("%s joined", node_to_str(joined, name, sizeof(name)));
	if (me)
		joiner_accepted(&h, nodes);
	else if (cs->status == SD_STATUS_WAIT && h.epoch > cs->epoch) {
		stale_if_left_behind(&h, nodes);
		adopt_cinfo(&h, nodes);
	}
	take_members(members, nr_members);
	if (me && hooks.joined)
		hooks.joined();
	if (cs->status != SD_STATUS_SHUTDOWN)
		cs->status = h.status == SD_STATUS_OK ? SD_STATUS_OK :
			     cs->status;
	if (cs->status == SD_STATUS_WAIT && cs->ctime && cs->epoch &&
	    epoch_nodes_present(cs->members, cs->nr_members))
		cs->status = SD_STATUS_OK;
	/* how long a whole-cluster restart took is read off this line */
	if (was_waiting && cs->status == SD_STATUS_OK)
		sd_notice("cluster running at epoch %u with %zu node(s)",
			  cs->epoch, cs->nr_members);
	/*
	 * Back after a whole-cluster stop: a recovery the stop cut short is
	 * run again (what is already here is only checked), and copies that
	 * writes cut short by the stop left missing are made.  Also at epoch
	 * 1, where there is no old ring: every member's list is the source.
	 * A new epoch, if one follows, starts its own instead.
	 */
	if (was_waiting && cs->status == SD_STATUS_OK && !recover_pending) {
		recover_from = cs->epoch - 1;
		recover_pending = true;
	}
	/* joins decided together make one epoch, at the last of them */
	if (!more && cs->status == SD_STATUS_OK &&
	    !same_nodes(cs->members, cs->nr_members, cs->epoch_nodes,
			cs->nr_epoch_nodes))
		new_epoch();
	free(nodes);
	if (!more)
		publish();
	/* a node that came back, or adopted a newer history, fills gaps */
	if (cs->status == SD_STATUS_OK)
		epoch_fetch_start(start_pending_recovery);
	exchange_vdi_state(joined, me, h.status == SD_STATUS_OK);
	if (!more)
		start_pending_recovery();
}

/*
 * Joins are judged one after the other against this node's state before
 * any of them is taken in: only a running cluster's judging changes
 * nothing.  While it waits for its nodes (a whole-cluster restart), a
 * joiner with a newer history makes the judge adopt it, and the joiners
 * judged before would have been told the older one (test 013: two epoch
 * histories).
 */
static bool sd_joins_together(void)
{
	return cs->status == SD_STATUS_OK;
}

/* the nodes that left in one change make one epoch together */
static void sd_leave_handler(const struct sd_node *left, size_t nr_left,
			     const struct sd_node *members, size_t nr_members)
{
	char name[128];

	sd_assert(nr_left > 0);
	take_members(members, nr_members);
	for (size_t i = 0; i < nr_left; i++) {
		sd_info("%s left%s", node_to_str(&left[i], name, sizeof(name)),
			nr_left > 1 ? " (with others, one epoch)" : "");
		peer_drop(&left[i].nid);
		vdi_release_node_locks(&left[i].nid);
	}
	if (cs->status == SD_STATUS_OK)
		new_epoch();
	publish();
	start_pending_recovery();
}

/* ---- cluster operations (protocol.md §10.4) ---- */

static void *build_msg(struct request *req, size_t *len)
{
	size_t plen = 0;
	uint8_t *msg;

	if ((req->rq.flags & SD_FLAG_CMD_WRITE) && req->rq.data_length)
		plen = req->rq.data_length;
	if (CMSG_HDR_SIZE + plen > SD_MAX_EVENT_BUF_SIZE)
		plen = 0;
	msg = xzalloc(CMSG_HDR_SIZE + plen);
	put_le32(msg, req->cseq);
	put_le32(msg + 4, req->aux);
	sd_req_encode(&req->rq, msg + 8);
	sd_rsp_encode(&req->rp, msg + 8 + SD_REQ_SIZE);
	if (plen)
		memcpy(msg + CMSG_HDR_SIZE, req->data, plen);
	*len = CMSG_HDR_SIZE + plen;
	return msg;
}

static void cwork_fn(struct work *w)
{
	struct request *req = container_of(w, struct request, work);

	req->rp.result = (uint32_t)req->op->work_fn(req);
}

static void block_work_done(struct request *req)
{
	size_t len;
	void *msg;

	/* the main parts run only if the work part succeeded */
	req->rp.opcode = req->rq.opcode;
	msg = build_msg(req, &len);
	list_add_tail(&req->list, &pending_reply);
	if (cdrv->unblock(msg, len)) {
		list_del(&req->list);
		req->rp.result = SD_RES_CLUSTER_ERROR;
		request_done(req);
	}
	free(msg);
}

static void cwork_done(struct work *w)
{
	struct request *req = container_of(w, struct request, work);

	if (req->op->cluster_fn)
		block_work_done(req);
	else
		request_done(req);
}

static int cwork_queue_req(struct request *req)
{
	req->work.fn = cwork_fn;
	req->work.done = cwork_done;
	return wq_queue(cluster_wq, &req->work);
}

int cluster_op_submit(struct request *req)
{
	size_t len;
	void *msg;

	if (!req->op->cluster_fn) {
		/* a lookup: runs on the cluster worker, no ordering needed */
		return cwork_queue_req(req) ? SD_RES_AGAIN : SD_RES_SUCCESS;
	}
	req->cseq = ++cluster_seq;
	if (req->op->work_fn) {
		list_add_tail(&req->list, &pending_block);
		if (cdrv->block()) {
			list_del(&req->list);
			return SD_RES_CLUSTER_ERROR;
		}
		return SD_RES_SUCCESS;
	}
	msg = build_msg(req, &len);
	list_add_tail(&req->list, &pending_reply);
	if (cdrv->notify(msg, len)) {
		list_del(&req->list);
		free(msg);
		return SD_RES_CLUSTER_ERROR;
	}
	free(msg);
	return SD_RES_SUCCESS;
}

static void sd_block_handler(const struct sd_node *sender)
{
	struct request *req;

	if (!node_is_self(sender) || list_empty(&pending_block))
		return;
	req = list_first_entry(&pending_block, struct request, list);
	list_del(&req->list);
	if (cwork_queue_req(req)) {
		req->rp.result = SD_RES_AGAIN;
		block_work_done(req);
	}
}

static struct request *find_pending(uint32_t seq)
{
	struct request *req;

	list_for_each_entry(req, &pending_reply, list)
		if (req->cseq == seq)
			return req;
	return NULL;
}

static void sd_notify_handler(const struct sd_node *sender, const void *msg,
		       size_t len)
{
	const uint8_t *m = msg;
	struct sd_req rq;
	struct sd_rsp rp;
	const struct sd_op *op;
	struct request *req = NULL;
	struct cluster_ctx ctx;
	bool mine = node_is_self(sender);
	uint32_t seq;
	int ret;

	if (len < CMSG_HDR_SIZE) {
		sd_err("short cluster message (%zu bytes)", len);
		return;
	}
	seq = get_le32(m);
	sd_req_decode(&rq, m + 8);
	sd_rsp_decode(&rp, m + 8 + SD_REQ_SIZE);
	op = hooks.op_lookup(rq.opcode);
	if (!op || !op->cluster_fn) {
		sd_err("unknown cluster op %x", rq.opcode);
		return;
	}
	/*
	 * Main parts read the payload by data_length: no further than the
	 * message goes (build_msg leaves out a payload too large for it).
	 */
	if (!(rq.flags & SD_FLAG_CMD_WRITE) ||
	    rq.data_length > len - CMSG_HDR_SIZE)
		rq.data_length = (uint32_t)(len - CMSG_HDR_SIZE);
	if (mine)
		req = find_pending(seq);
	ctx.sender = sender;
	ctx.originator = mine;
	ctx.aux = get_le32(m + 4);
	ret = (int)rp.result;
	if (ret == SD_RES_SUCCESS)
		ret = op->cluster_fn(&rq, &rp, (void *)(m + CMSG_HDR_SIZE),
				     &ctx);
	if (!req)
		return;
	list_del(&req->list);
	req->rp.result = (uint32_t)ret;
	request_done(req);
}

/* ---- format and shutdown: main parts on every node ---- */

int group_format(const struct sd_req *req, const char *store)
{
	if (sys.gateway == false && (store_wipe() != SD_RES_SUCCESS ||
				     store_set_layout(store) != SD_RES_SUCCESS))
		return SD_RES_EIO;
	recovery_reset();
	epoch_log_clear();
	vdi_reset();
	cs->ctime = req->cluster.ctime;
	cs->flags = req->cluster.flags;
	cs->format_vnodes = format_vnodes(req);
	cs->copies = req->cluster.copies ? req->cluster.copies :
		     SD_DEFAULT_COPIES;
	cs->copy_policy = req->cluster.copy_policy;
	cs->block_size_shift = req->cluster.block_size_shift ?
			       req->cluster.block_size_shift :
			       SD_DEFAULT_BLOCK_SIZE_SHIFT;
	memset(cs->store, 0, sizeof(cs->store));
	strncpy(cs->store, store, sizeof(cs->store) - 1);
	cs->disable_recovery = 0;
	cs->epoch = 0;
	cs->shutdown_clean = false;
	cs->status = SD_STATUS_OK;
	/* the members as announced, weighed afresh for the new cluster */
	if (announced) {
		set_epoch_nodes(announced, 0);
		take_members(announced, nr_announced);
	}
	new_epoch();
	recover_pending = false;
	config_save();
	publish();
	if (cs->copy_policy)
		sd_notice("cluster formatted: erasure code %d:%d, store %s",
			  ec_policy_data(cs->copy_policy),
			  ec_policy_parity(cs->copy_policy), cs->store);
	else
		sd_notice("cluster formatted: %u copies, store %s",
			  cs->copies, cs->store);
	return SD_RES_SUCCESS;
}

static struct timer shutdown_timer;

static void shutdown_now(struct timer *t)
{
	sd_notice("cluster shutdown: exiting");
	sheep_exit(0);
}

void group_shutdown(void)
{
	cs->status = SD_STATUS_SHUTDOWN;
	cs->shutdown_clean = true;
	if (cs->ctime)
		config_save();
	hooks.stop_listening();
	/* leave time for the originator's reply to reach the client */
	shutdown_timer.fn = shutdown_now;
	timer_add(sys.loop, &shutdown_timer, 500);
}

/* ---- cluster state changes asked for by ops ---- */

/*
 * dog cluster recover force (cluster.md §4.6): in WAIT, the members now
 * present become the next epoch and recover; what only the missing nodes
 * held is lost.  On every member, in total order.
 */
int group_force_recover(void)
{
	if (cs->status != SD_STATUS_WAIT || !cs->ctime || !cs->epoch)
		return SD_RES_FORCE_RECOVER;
	sd_warn("recovery forced: %zu of %zu node(s) of epoch %u present",
		cs->nr_members, cs->nr_epoch_nodes, cs->epoch);
	cs->status = SD_STATUS_OK;
	new_epoch();
	publish();
	epoch_fetch_start(start_pending_recovery);
	start_pending_recovery();
	return SD_RES_SUCCESS;
}

/*
 * A member's record changed (dog node vnodes set, dog cluster reweight):
 * on every member, in total order.  @nr_vnodes counts only with fixed
 * vnodes; 0 keeps the member's.  The new record goes into a new epoch,
 * whose record wins from now on (group/vnodes.h), and data moves.
 */
int group_update_node(const struct node_id *nid, uint64_t space,
		      uint16_t nr_vnodes)
{
	struct sd_node *m = NULL;
	char name[128];

	if (cs->status != SD_STATUS_OK)
		return SD_RES_HALT;
	for (size_t i = 0; i < cs->nr_members; i++)
		if (node_id_eq(&cs->members[i].nid, nid))
			m = &cs->members[i];
	if (!m)
		return SD_RES_INVALID_PARMS;
	if (!m->nr_vnodes)
		return SD_RES_GATEWAY_MODE;
	if (space)
		m->space = space;
	if (nr_vnodes && !vnodes_auto())
		m->nr_vnodes = nr_vnodes;
	if (node_is_self(m)) {
		sys.self.space = m->space;
		sys.self.nr_vnodes = m->nr_vnodes;
		config_save();
	}
	/* weighed against a list that holds the new record */
	set_epoch_nodes(cs->members, cs->nr_members);
	vnodes_weigh(cs->members, cs->nr_members, cs->epoch_nodes,
		     cs->nr_epoch_nodes);
	sd_notice("%s: %" PRIu64 " bytes, %u vnodes", node_to_str(m, name,
		  sizeof(name)), m->space, m->nr_vnodes);
	new_epoch();
	publish();
	start_pending_recovery();
	return SD_RES_SUCCESS;
}

void group_set_recovery(bool disabled)
{
	cs->disable_recovery = disabled;
}

int group_alter_copies(uint8_t copies)
{
	cs->copies = copies;
	return config_save();
}

void group_set_killed(void)
{
	cs->status = SD_STATUS_KILLED;
}

/* ---- start-up ---- */

static const struct cluster_handlers handlers = {
	.join = sd_join_handler,
	.accept = sd_accept_handler,
	.leave = sd_leave_handler,
	.notify = sd_notify_handler,
	.block = sd_block_handler,
	.joins_together = sd_joins_together,
};

static struct cluster_driver *find_driver(const char *driver,
					  const char **opt)
{
	const char *colon = strchr(driver, ':');
	size_t n = colon ? (size_t)(colon - driver) : strlen(driver);

	*opt = colon ? colon + 1 : NULL;
	if (n == 5 && !strncmp(driver, "local", n))
		return &cdrv_local;
	if (n == 8 && !strncmp(driver, "corosync", n))
		return &cdrv_corosync;
	if (n == 9 && !strncmp(driver, "zookeeper", n))
		return &cdrv_zookeeper;
	sd_err("unknown cluster driver '%.*s' (-c takes local[:DIR], "
	       "corosync[:GROUP] or zookeeper:HOST:PORT[,...])", (int)n, driver);
	return NULL;
}

static int load_latest_epoch(void)
{
	uint32_t latest = epoch_log_latest();
	struct sd_node *nodes;
	int nr;

	if (!latest)
		return 0;
	nodes = xmalloc(SD_MAX_NODES * sizeof(*nodes));
	nr = epoch_log_read(latest, nodes, SD_MAX_NODES, NULL);
	if (nr < 0) {
		sd_err("cannot read epoch %u", latest);
		free(nodes);
		return -1;
	}
	enter_epoch(latest);
	set_epoch_nodes(nodes, (size_t)nr);
	free(nodes);
	return 0;
}

int group_init(const char *driver, const struct group_hooks *h)
{
	const char *opt;

	cs = cstate_mut();
	hooks = *h;
	cdrv = find_driver(driver, &opt);
	if (!cdrv)
		return -1;
	cluster_wq = wq_create("cluster", 1, 4096, sys.loop);
	if (epoch_log_init() || load_latest_epoch() ||
	    vnodes_check_self(cs->epoch_nodes, cs->nr_epoch_nodes, cs->epoch))
		return -1;
	cs->status = SD_STATUS_WAIT;
	publish();
	return cdrv->init(opt, sys.loop, &handlers);
}

void group_join(void)
{
	uint8_t *buf = xmalloc(SD_MAX_EVENT_BUF_SIZE);
	size_t len = cinfo_encode(buf, SD_MAX_EVENT_BUF_SIZE, cs->status);

	if (cdrv->join(&sys.self, buf, len)) {
		sd_emerg("cannot join the cluster");
		sheep_exit(1);
	}
	free(buf);
}

void group_leave(void)
{
	if (cdrv && cs->joined)
		cdrv->leave();
}
