// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Recovery (cluster.md §7): after an epoch change every storage node works
 * out which objects it must now hold and fetches those it lacks, first as
 * working copies from any member, then as the newest stale copy.  Objects
 * it no longer owns move to the stale area.  A peer request for an object
 * still awaiting recovery is parked and that object recovered first.
 *
 * Everything here runs on the main loop; object reads go through the async
 * peer layer and disk work through the I/O pool.  A newer epoch cancels the
 * running recovery: it finishes nothing further and the new one starts.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "net.h"
#include "proto.h"
#include "util.h"
#include "core/request.h"
#include "net/peer.h"
#include "recovery/recovery.h"
#include "recovery/strips.h"
#include "recovery/sweep.h"
#include "state/cluster.h"
#include "state/epoch.h"
#include "state/vdi.h"
#include "store/store.h"

#define RHASH		4096
#define MAX_INFLIGHT	4
/*
 * A member's object list is fetched into a buffer of a guessed size that
 * grows fourfold while the member answers BUFFER_SMALL.  The responder
 * allocates (and charges to its budget) the whole buffer: a fixed 4 MiB
 * cost every node 4 MiB per member on every epoch, a 100-node cluster
 * 400 MiB of each node's budget.  So the guess starts small and follows
 * the largest list seen.
 */
#define LIST_BUF_MIN	(64U << 10)
#define LIST_BUF_MAX	(256U << 20)
#define DISK_MARGIN_PCT	5
#define HALT_RETRY_MS	10000	/* a halted recovery tries again */
#define FAIL_RETRY_MS	1000	/* an object that could not be stored */

enum robj_state { RO_PENDING, RO_ACTIVE, RO_STORING, RO_DONE };
enum rstate { RS_PREPARING, RS_RECOVERING, RS_NOTIFYING, RS_DONE,
	RS_HALTED };

struct robj {
	uint64_t oid;
	uint8_t idx;		/* a strip's index, or OBJ_IDX_REPLICA */
	uint8_t policy;		/* a strip's code */
	uint64_t version;	/* a strip rebuilt: the version it holds */
	uint8_t state;
	bool superseded;
	bool urgent;		/* a request waits: store past the margin */
	bool charged;		/* started against the throttle's budget */
	bool stored;		/* this recovery created the working copy */
	bool ondemand;		/* added for a request, not in work[] */
	uint32_t fail_res;	/* the store failed (no space): SD_RES_* */
	uint64_t fail_at;	/* when, in ms */
	int pass;		/* 1: working copies, 2: stale copies too */
	int next_src;
	uint32_t size;
	void *buf;
	void *best_buf;		/* pass 2: the newest copy found so far */
	uint64_t best_epoch;
	struct list_head parked;
	struct robj *hnext;
	struct recovery *rw;
	struct work work;
	struct peer_req pr;
};

struct recovery {
	uint32_t epoch;
	uint32_t old_epoch;
	uint32_t gen;		/* numbers recoveries from 1 (asked_rec) */
	struct vnode_ring old_ring;
	struct vnode_ring cur_ring;
	enum rstate state;
	bool cancelled;
	int refs;		/* outstanding async operations + 1 */
	/* list collection */
	int lists_pending;
	int lists_missed;	/* members whose list never came */
	uint64_t *cand;
	size_t nr_cand, cap_cand;
	uint64_t *local;	/* our own object list */
	size_t nr_local;
	struct strip_keep *keep;	/* our coded objects: the strip kept */
	size_t nr_keep;
	/* work */
	struct robj **work;
	size_t nr_work, next;
	struct robj *hash[RHASH];
	int inflight;
	uint64_t nr_done;
	struct timer timer;
	struct list_head parked;	/* while preparing */
	struct work stale_work;
	int staling;		/* moves to the stale area not done yet */
	bool halted;		/* the disk margin stopped it once */
	bool overfill;		/* -F: it would overfill a node: not started */
	struct timer halt_timer;
};

static struct recovery *rec;
static uint32_t rec_gen;	/* the last recovery's gen */
static struct recovery_throttling throttle;
static uint32_t throttle_budget;
static uint64_t throttle_window;
/*
 * Adaptive (-R ...,adaptive): the throttle holds only while clients do
 * object I/O here (one started within the last interval); a node no
 * client uses recovers at full speed.  The counts are for the metrics.
 */
static bool throttle_adaptive;
static uint64_t throttle_waits, throttle_passed;

/* COMPLETE_RECOVERY bookkeeping (§7.6) */
static struct node_id *completed;
static size_t nr_completed;
static uint32_t completed_epoch;
/* the last recovery that finished here, for the metrics */
static uint32_t last_epoch;
/* requests that came before a recovery the group layer holds back */
static LIST_HEAD(early_parked);
static bool rec_expected;
static uint64_t last_objects;

static void rec_pump(struct recovery *rw);
static void robj_fetch(struct robj *ro);
static void robj_store(struct robj *ro);
static void robj_start(struct robj *ro);
static void robj_halt(struct robj *ro);
static void rec_unhalt(struct timer *t);
static void stale_late_copy(uint64_t oid);

static void rec_put(struct recovery *rw)
{
	if (--rw->refs)
		return;
	for (size_t i = 0; i < RHASH; i++)
		for (struct robj *ro = rw->hash[i], *n; ro; ro = n) {
			n = ro->hnext;
			if (!ro->ondemand)
				continue;
			free(ro->buf);
			free(ro->best_buf);
			free(ro);
		}
	for (size_t i = 0; i < rw->nr_work; i++) {
		free(rw->work[i]->buf);
		free(rw->work[i]->best_buf);
		free(rw->work[i]);
	}
	free(rw->work);
	free(rw->cand);
	free(rw->local);
	free(rw->keep);
	ring_free(&rw->old_ring);
	ring_free(&rw->cur_ring);
	timer_del(&rw->timer);
	timer_del(&rw->halt_timer);
	free(rw);
}

static size_t rhash(uint64_t oid, uint8_t idx)
{
	return (oid + idx) % RHASH;
}

static struct robj *robj_find(struct recovery *rw, uint64_t oid, uint8_t idx)
{
	struct robj *ro = rw->hash[rhash(oid, idx)];

	while (ro && (ro->oid != oid || ro->idx != idx))
		ro = ro->hnext;
	return ro;
}

/*
 * A new object (or strip @idx of a coded one, with its @policy) to
 * recover, in the hash (the caller puts it in the list)
 */
static struct robj *robj_new(struct recovery *rw, uint64_t oid, uint8_t idx,
			     uint8_t policy)
{
	struct robj *ro = xzalloc(sizeof(*ro));

	ro->oid = oid;
	ro->idx = idx;
	ro->policy = policy;
	ro->rw = rw;
	INIT_LIST_HEAD(&ro->parked);
	ro->hnext = rw->hash[rhash(oid, idx)];
	rw->hash[rhash(oid, idx)] = ro;
	return ro;
}

static struct obj_key robj_key(const struct robj *ro)
{
	return (struct obj_key){ .oid = ro->oid, .idx = ro->idx };
}

static bool is_strip(const struct robj *ro)
{
	return ro->idx != OBJ_IDX_REPLICA;
}

/*
 * A parked request meets the epoch check again: the ring may have moved
 * while it waited (a fetch to a frozen node can take many seconds).  Run
 * against this node's store in a newer epoch, a write could land on a
 * node that no longer is a target, and a read or write could be answered
 * "no object" by a recovery that no longer looks for it; the gateway
 * retries either way with the current ring.
 */
static void resubmit(struct request *req)
{
	if (!(req->rq.flags & SD_FLAG_CMD_RECOVERY) &&
	    req->rq.epoch != cstate->epoch) {
		req->rp.result = req->rq.epoch < cstate->epoch ?
				 SD_RES_OLD_NODE_VER : SD_RES_NEW_NODE_VER;
		req->rp.data_length = 0;
		request_done(req);
		return;
	}
	submit_io(req);
}

static void resubmit_list(struct list_head *head)
{
	struct request *req, *n;
	LIST_HEAD(todo);

	list_for_each_entry_safe(req, n, head, list) {
		list_del(&req->list);
		list_add_tail(&req->list, &todo);
	}
	list_for_each_entry_safe(req, n, &todo, list) {
		list_del(&req->list);
		resubmit(req);
	}
}

static uint8_t copies_of(uint64_t oid)
{
	return (uint8_t)vdi_copies(oid_to_vid(oid));
}

static bool self_is_target(const struct vnode_ring *ring, uint64_t oid)
{
	int tgt[SD_MAX_COPIES];
	int n = ring_targets(ring, oid, copies_of(oid), tgt);

	for (int i = 0; i < n; i++)
		if (node_is_self(&ring->nodes[tgt[i]]))
			return true;
	return false;
}

/* ---- completion ---- */

static void send_complete(struct recovery *rw)
{
	struct request *req = alloc_request(sizeof(struct sd_node));

	req->rq.opcode = SD_OP_COMPLETE_RECOVERY;
	req->rq.proto_ver = SD_SHEEP_PROTO_VER;
	req->rq.flags = SD_FLAG_CMD_WRITE;
	req->rq.data_length = sizeof(struct sd_node);
	req->rq.obj.tgt_epoch = rw->epoch;
	sd_node_encode(&sys.self, req->data);
	req->internal = true;
	req->complete = free_request;
	request_submit(req);
}

static void rec_finish(struct recovery *rw)
{
	if (rw->cancelled || rw->state != RS_RECOVERING)
		return;
	/*
	 * Report only once what we no longer own is in the stale area: the
	 * last report makes every node purge it (§7.6), and a purge racing
	 * with the move would leave working copies behind.
	 */
	if (rw->next < rw->nr_work || rw->inflight || rw->staling)
		return;
	sd_notice("recovery of epoch %u done: %" PRIu64 " object(s) checked",
		  rw->epoch, rw->nr_done);
	rw->state = RS_DONE;
	last_epoch = rw->epoch;
	last_objects = rw->nr_done;
	/*
	 * A member's list names its stale copies too, and one of them may
	 * be the last copy of an object we were to recover: the purge our
	 * report may set off would remove it.  Not reported, this epoch's
	 * purge never comes; a later epoch's recovery that lists everyone
	 * purges, and the sweep drops what the targets hold meanwhile.
	 */
	if (rw->lists_missed) {
		sd_warn("recovery of epoch %u went on without the object "
			"list of %d member(s): the stale area is kept", rw->epoch,
			rw->lists_missed);
		return;
	}
	send_complete(rw);
}

/* free an object buffer of recovery and give its bytes back */
static void robj_buf_put(void **buf, uint32_t size)
{
	if (!*buf)
		return;
	free(*buf);
	*buf = NULL;
	budget_release(size);
}

static void robj_unhash(struct robj *ro)
{
	struct robj **pp = &ro->rw->hash[rhash(ro->oid, ro->idx)];

	while (*pp && *pp != ro)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = ro->hnext;
}

/*
 * The object is settled.  One a request added (robj_add) is forgotten
 * then, unless its store failed (the failure is remembered for a while):
 * requests for objects that exist nowhere must not leave a trace each.
 */
static void robj_done(struct robj *ro)
{
	struct recovery *rw = ro->rw;

	if (ro->state != RO_DONE) {
		ro->state = RO_DONE;
		rw->nr_done += !ro->ondemand;
	}
	robj_buf_put(&ro->buf, ro->size);
	robj_buf_put(&ro->best_buf, ro->size);
	resubmit_list(&ro->parked);
	if (ro->ondemand && !ro->fail_res) {
		robj_unhash(ro);
		free(ro);
	}
}

/* ---- recovering one object ---- */

/*
 * @ro, in flight, is settled (given up, superseded by a create, or its
 * recovery cancelled): the recovery moves on, and ends if it was the last
 * in flight (a superseded fetch that skipped this hung it at 14 of 15
 * objects: ci41, test 005)
 */
static void robj_settle(struct robj *ro)
{
	struct recovery *rw = ro->rw;

	rw->inflight--;
	robj_done(ro);
	rec_pump(rw);
	rec_finish(rw);
	rec_put(rw);
}

static bool recycled_obj(uint64_t oid)
{
	return !is_vdi_obj(oid) && vdi_test_free(oid_to_vid(oid));
}

static void robj_store_work(struct work *w)
{
	struct robj *ro = container_of(w, struct robj, work);
	uint64_t size, free_bytes;
	int ret;

	/*
	 * An object of a recycled family (vdi/recycle.c): gone everywhere
	 * or going, never recovered, and a copy here is not "present"
	 */
	if (recycled_obj(ro->oid)) {
		ro->pass = -1;
		return;
	}
	if (!ro->buf) {
		/* step 1: maybe it is here already */
		ro->pass = store_exist(robj_key(ro)) == SD_RES_SUCCESS ?
			   -1 : 1;
		return;
	}
	/*
	 * The margin keeps background recovery from filling the disk; an
	 * object a request is waiting for is stored like a client's write
	 * would be, up to the real end of the space.
	 */
	if (!__atomic_load_n(&ro->urgent, __ATOMIC_RELAXED) &&
	    store_stat(&size, &free_bytes) == SD_RES_SUCCESS &&
	    free_bytes < ro->size + size / 100 * DISK_MARGIN_PCT) {
		ro->pass = -2;
		return;
	}
	/* late stores of a cancelled recovery must not replace newer data */
	if (is_strip(ro)) {
		ret = store_strip_install(robj_key(ro), ro->size, ro->version,
					  ro->buf, false);
		if (ret == SD_RES_STALE_OBJ)
			ret = SD_RES_SUCCESS;	/* it holds a newer one */
	} else {
		ret = store_create_new(obj_key_rep(ro->oid), ro->size,
				       ro->buf, ro->size, 0, true);
		/* recycled while it was fetched: the removal may have passed */
		if (ret == SD_RES_SUCCESS && recycled_obj(ro->oid))
			store_remove(obj_key_rep(ro->oid));
	}
	ro->pass = ret == SD_RES_SUCCESS ? -1 : -3;
	ro->stored = ret == SD_RES_SUCCESS;
	ro->fail_res = ret == SD_RES_SUCCESS ? 0 : (uint32_t)ret;
}

/*
 * The throttle limits the objects moved.  Most of a recovery's work list
 * is usually here already (every object this node is a target of), and
 * one at a time against the budget, finding them took longer than moving
 * what was missing (6 nodes, 1 per 100 ms: 36 s for a node's 55 objects).
 */
static void throttle_refund(void)
{
	if (throttle.throttling && throttle_budget < throttle.max_exec_count)
		throttle_budget++;
}

static void robj_store_done(struct work *w)
{
	struct robj *ro = container_of(w, struct robj, work);
	struct recovery *rw = ro->rw;

	if (ro->pass == -2) {
		if (!rw->halted)
			sd_emerg("recovery halted: the disk would be nearly "
				 "full (keeping %d%% free); object %016" PRIx64
				 " not recovered", DISK_MARGIN_PCT, ro->oid);
		rw->state = RS_HALTED;
		rw->halted = true;
		rw->halt_timer.fn = rec_unhalt;
		timer_del(&rw->halt_timer);
		timer_add(sys.loop, &rw->halt_timer, HALT_RETRY_MS);
		robj_halt(ro);
		return;
	} else if (ro->pass == -3) {
		ro->fail_at = now_msec();
		sd_err("cannot store recovered %016" PRIx64, ro->oid);
	}
	/* here already: a look at the store, nothing moved, nothing owed */
	if (ro->charged && !ro->buf && ro->pass == -1)
		throttle_refund();
	ro->charged = false;
	if (ro->pass == 1 && !rw->cancelled && !ro->superseded) {
		ro->state = RO_ACTIVE;
		ro->next_src = 0;
		robj_fetch(ro);
		return;
	}
	rw->inflight--;
	if (rw->cancelled && ro->stored && !is_strip(ro))
		stale_late_copy(ro->oid);
	robj_done(ro);
	if (!rw->cancelled)
		rec_pump(rw);
	rec_finish(rw);
	rec_put(rw);
}

/*
 * Halted by the disk margin: the object stays pending, so that a request
 * for it later still gets it recovered (past the margin), and one that
 * parked while it was being stored is served now.
 */
static void robj_halt(struct robj *ro)
{
	struct recovery *rw = ro->rw;

	rw->inflight--;
	robj_buf_put(&ro->buf, ro->size);
	ro->state = RO_PENDING;
	if (!list_empty(&ro->parked) && !rw->cancelled)
		robj_start(ro);
	rec_put(rw);
}

/* the order in which to ask members: old targets first, then the rest */
static const struct sd_node *source(struct robj *ro, int k)
{
	struct recovery *rw = ro->rw;
	int tgt[SD_MAX_COPIES], n = 0, i;

	if (rw->old_ring.nr_vnodes)
		n = ring_targets(&rw->old_ring, ro->oid, copies_of(ro->oid),
				 tgt);
	for (i = 0; i < n; i++) {
		const struct sd_node *s = &rw->old_ring.nodes[tgt[i]];

		if (k-- == 0)
			return s;
	}
	for (size_t j = 0; j < rw->cur_ring.nr_nodes; j++) {
		const struct sd_node *s = &rw->cur_ring.nodes[j];

		if (k-- == 0)
			return s;
	}
	return NULL;
}

/*
 * The buffer is taken when a copy's bytes are on their way, not before: a
 * read of an object that exists nowhere must cost no object-size buffer
 * (nor the budget it is charged to).
 */
static void *robj_alloc_buf(struct peer_req *pr, uint32_t len)
{
	struct robj *ro = container_of(pr, struct robj, pr);

	if (len != ro->size)
		return NULL;
	/* recovery's share of the daemon's payload budget */
	ro->buf = xmalloc(ro->size);
	budget_charge(ro->size);
	return ro->buf;
}

static void robj_read_done(struct peer_req *pr, int result)
{
	struct robj *ro = container_of(pr, struct robj, pr);
	struct recovery *rw = ro->rw;

	/* a copy is the whole object, never part of one */
	if (result == SD_RES_SUCCESS && pr->rp.data_length != ro->size)
		result = SD_RES_EIO;

	if (rw->cancelled || ro->superseded) {
		robj_settle(ro);
		return;
	}
	if (result == SD_RES_SUCCESS && ro->pass == 2) {
		/* stale copies: ask everyone, keep the newest (§7.4) */
		uint64_t epoch = pr->rp.obj.offset + 1;

		if (epoch > ro->best_epoch) {
			robj_buf_put(&ro->best_buf, ro->size);
			ro->best_buf = ro->buf;
			ro->best_epoch = epoch;
			ro->buf = NULL;
		}
	} else if (result == SD_RES_SUCCESS) {
		robj_store(ro);
		return;
	}
	robj_fetch(ro);
}

static void robj_store(struct robj *ro)
{
	ro->state = RO_STORING;
	ro->work.fn = robj_store_work;
	ro->work.done = robj_store_done;
	if (!wq_queue(sys.io_wq, &ro->work))
		return;
	robj_buf_put(&ro->buf, ro->size);
	robj_fetch(ro);
}

/* nowhere to get it from: settled, not recovered */
static void robj_give_up(struct robj *ro)
{
	/*
	 * A request may ask for what never existed, and a listed object of
	 * a VDI deleted since was removed on purpose: only the others are
	 * lost
	 */
	if (!ro->ondemand && vdi_test_deleted(oid_to_vid(ro->oid)))
		sd_info("no copy of %016" PRIx64 " found anywhere: its VDI "
			"was deleted", ro->oid);
	else if (ro->ondemand && is_strip(ro))
		sd_debug("no copy of %016" PRIx64 " (strip %u) found anywhere",
			 ro->oid, ro->idx);
	else if (ro->ondemand)
		sd_debug("no copy of %016" PRIx64 " found anywhere", ro->oid);
	else if (is_strip(ro))
		sd_err("no copy of %016" PRIx64 " (strip %u) found anywhere",
		       ro->oid, ro->idx);
	else
		sd_err("no copy of %016" PRIx64 " found anywhere", ro->oid);
	robj_settle(ro);
}

static void strip_fetch(struct robj *ro);

static void strip_fetched(void *arg, uint32_t result, uint64_t v,
			  uint8_t *strip)
{
	struct robj *ro = arg;
	struct recovery *rw = ro->rw;

	if (rw->cancelled || ro->superseded) {
		free(strip);
		robj_settle(ro);
		return;
	}
	if (result != SD_RES_SUCCESS || !v || !strip) {
		sd_debug("strip %u of %016" PRIx64 " not rebuilt from ring %d: "
			 "%s", ro->idx, ro->oid, ro->next_src - 1,
			 sd_strerror(result));
		free(strip);
		strip_fetch(ro);
		return;
	}
	/* recovery's share of the daemon's payload budget */
	budget_charge(ro->size);
	ro->buf = strip;
	ro->version = v;
	robj_store(ro);
}

/*
 * A strip: rebuilt from where the previous epoch put the strips, else
 * from where the current one does (a rebuild there started earlier),
 * else from the newest copy of each strip on any member, stale ones of
 * a node that came back after the cluster moved on included (when every
 * node was lost one after the other, those are all that is left)
 */
static void strip_fetch(struct robj *ro)
{
	struct recovery *rw = ro->rw;

	while (ro->next_src < 2) {
		const struct vnode_ring *ring = ro->next_src++ ?
						&rw->cur_ring : &rw->old_ring;

		if (!strip_rebuild(ring, ro->oid, ro->policy, ro->idx,
				   strip_fetched, ro))
			return;
	}
	if (ro->next_src++ == 2 &&
	    !strip_rebuild_anywhere(&rw->cur_ring, ro->oid, ro->policy,
				    ro->idx, strip_fetched, ro))
		return;
	robj_give_up(ro);
}

static void robj_fetch(struct robj *ro)
{
	struct recovery *rw = ro->rw;
	const struct sd_node *src;

	if (is_strip(ro)) {
		strip_fetch(ro);
		return;
	}
	for (;;) {
		src = source(ro, ro->next_src++);
		if (src)
			break;
		if (ro->pass == 2 && ro->best_buf) {
			/* the newest copy any member had, and one had it */
			sd_assert(ro->best_epoch > 0);
			robj_buf_put(&ro->buf, ro->size);
			ro->buf = ro->best_buf;
			ro->best_buf = NULL;
			ro->pass = 3;
			robj_store(ro);
			return;
		}
		if (ro->pass >= 2) {
			robj_give_up(ro);
			return;
		}
		ro->pass = 2;
		ro->next_src = 0;
	}
	if (ro->pass == 1 && node_is_self(src)) {
		robj_fetch(ro);
		return;
	}
	memset(&ro->pr, 0, sizeof(ro->pr));
	sd_init_req(&ro->pr.rq, SD_OP_READ_PEER);
	ro->pr.rq.epoch = cstate->epoch;
	ro->pr.rq.flags = SD_FLAG_CMD_RECOVERY |
			  (ro->pass == 2 ? SD_FLAG_CMD_WILDCARD : 0);
	ro->pr.rq.obj.oid = ro->oid;
	ro->pr.rq.obj.tgt_epoch = rw->old_epoch;
	ro->pr.rq.data_length = ro->size;
	ro->pr.rbuf = ro->buf;
	ro->pr.rbuf_len = ro->size;
	ro->pr.alloc_rbuf = robj_alloc_buf;
	ro->pr.done = robj_read_done;
	peer_submit(&src->nid, &ro->pr);
}

static void robj_start(struct robj *ro)
{
	struct recovery *rw = ro->rw;

	ro->state = RO_ACTIVE;
	ro->size = sd_obj_size(ro->oid, vdi_shift(oid_to_vid(ro->oid)));
	if (is_strip(ro))
		ro->size /= (uint32_t)ec_policy_data(ro->policy);
	rw->inflight++;
	rw->refs++;
	ro->work.fn = robj_store_work;
	ro->work.done = robj_store_done;
	if (wq_queue(sys.io_wq, &ro->work)) {
		ro->pass = 1;
		robj_store_done(&ro->work);
	}
}

/* does the adaptive throttle see no client at @now (ms)? */
static bool no_client_io(uint64_t now)
{
	uint64_t last = stat_last_client_io_ns() / 1000000;

	return throttle_adaptive &&
	       (!last || now - last >= throttle.queue_work_interval);
}

static bool throttled(void)
{
	uint64_t now;

	if (!throttle.throttling)
		return false;
	now = now_msec();
	if (now >= throttle_window + throttle.queue_work_interval) {
		throttle_window = now;
		throttle_budget = throttle.max_exec_count;
	}
	if (throttle_budget)
		return false;
	if (no_client_io(now)) {
		throttle_passed++;
		return false;
	}
	throttle_waits++;
	return true;
}

static void rec_timer(struct timer *t)
{
	struct recovery *rw = container_of(t, struct recovery, timer);

	rec_pump(rw);
}

/* the disk may have room again (objects deleted, the stale area swept) */
static void rec_unhalt(struct timer *t)
{
	struct recovery *rw = container_of(t, struct recovery, halt_timer);

	/* -F's refusal stands until the membership changes */
	if (rw->cancelled || rw->state != RS_HALTED || rw->overfill)
		return;
	rw->state = RS_RECOVERING;
	rec_pump(rw);
}

static void rec_pump(struct recovery *rw)
{
	if (rw->cancelled || rw->state != RS_RECOVERING)
		return;
	while (rw->inflight < MAX_INFLIGHT && rw->next < rw->nr_work) {
		struct robj *ro = rw->work[rw->next];

		if (ro->state != RO_PENDING) {
			rw->next++;
			continue;
		}
		if (cstate->disable_recovery)
			return;
		if (throttled()) {
			rw->timer.fn = rec_timer;
			timer_add(sys.loop, &rw->timer, 50);
			return;
		}
		/* (none left: the adaptive throttle let it pass) */
		if (throttle.throttling && throttle_budget) {
			throttle_budget--;
			ro->charged = true;
		}
		rw->next++;
		robj_start(ro);
	}
	rec_finish(rw);
}

/* ---- building the work list ---- */

static int oid_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void stale_move_work(struct work *w)
{
	struct recovery *rw = container_of(w, struct recovery, stale_work);

	for (size_t i = 0; i < rw->nr_local; i++)
		if (rw->local[i] != UINT64_MAX)
			store_move_to_stale(obj_key_rep(rw->local[i]),
					    rw->old_epoch);
}

static void stale_move_done(struct work *w)
{
	struct recovery *rw = container_of(w, struct recovery, stale_work);

	rw->staling--;
	rec_finish(rw);
	rec_put(rw);
}

struct late_copy {
	struct work work;
	struct recovery *rw;
	uint64_t oid;
};

static void late_copy_work(struct work *w)
{
	struct late_copy *lc = container_of(w, struct late_copy, work);

	store_move_to_stale(obj_key_rep(lc->oid), lc->rw->old_epoch);
}

static void late_copy_done(struct work *w)
{
	struct late_copy *lc = container_of(w, struct late_copy, work);
	struct recovery *rw = lc->rw;

	free(lc);
	rw->staling--;
	rec_finish(rw);
	rec_put(rw);
}

/*
 * A cancelled recovery's store can land after the current recovery listed
 * our objects (the epoch changed while the object was on its way here).
 * A copy the current ring does not give us would then stay a working copy
 * for good, a fourth copy of three: it goes to the stale area like the
 * listed ones.  Called on the main loop, where rec is the newest recovery.
 */
static void stale_late_copy(uint64_t oid)
{
	struct late_copy *lc;

	if (!rec || rec->cancelled || self_is_target(&rec->cur_ring, oid))
		return;
	sd_info("object %" PRIx64 " arrived after epoch %u began, which does "
		"not place it here: to the stale area", oid, rec->epoch);
	lc = xzalloc(sizeof(*lc));
	lc->rw = rec;
	lc->oid = oid;
	lc->work.fn = late_copy_work;
	lc->work.done = late_copy_done;
	rec->refs++;
	rec->staling++;
	if (wq_queue(sys.io_wq, &lc->work)) {
		sd_err("object %" PRIx64 " left here by a cancelled recovery "
		       "stays until the next one", oid);
		rec->staling--;
		rec_put(rec);
		free(lc);
	}
}

/*
 * Our coded objects and the strip of each we hold now: the others we
 * hold stay, for the others' rebuilds, until every node has recovered
 */
static void keep_list(struct recovery *rw)
{
	qsort(rw->local, rw->nr_local, sizeof(uint64_t), oid_cmp);
	rw->keep = xmalloc((rw->nr_local + 1) * sizeof(*rw->keep));
	for (size_t i = 0; i < rw->nr_local; i++) {
		uint64_t oid = rw->local[i];
		uint8_t policy = strip_policy(oid);
		int idx;

		if (!policy || (i && oid == rw->local[i - 1]))
			continue;
		idx = strip_index(&rw->cur_ring, oid, policy);
		/* strips without a target now: keep everything */
		if (!strips_all_placed(&rw->cur_ring, oid, policy))
			continue;
		rw->keep[rw->nr_keep++] = (struct strip_keep){
			.oid = oid, .keep = (int8_t)idx,
			.n = (uint8_t)(ec_policy_data(policy) +
				       ec_policy_parity(policy)) };
	}
}

/*
 * The work list's object for @oid, @idx: a request's (recovery_park) from
 * before the lists came, if there is one, becomes the list's own
 */
static struct robj *work_obj(struct recovery *rw, uint64_t oid, uint8_t idx,
			     uint8_t policy)
{
	struct robj *ro = robj_find(rw, oid, idx);

	if (!ro)
		return robj_new(rw, oid, idx, policy);
	/* only requests add objects before the work list exists */
	sd_assert(ro->ondemand);
	ro->ondemand = false;
	rw->nr_done += ro->state == RO_DONE;
	return ro;
}

/* the strip of coded object @oid we hold now, to recover */
static struct robj *strip_work(struct recovery *rw, uint64_t oid,
			       uint8_t policy)
{
	int idx = strip_index(&rw->cur_ring, oid, policy);

	return idx < 0 ? NULL : work_obj(rw, oid, (uint8_t)idx, policy);
}

/*
 * Cluster flag AVOID_DISKFULL (dog cluster format -F; cluster.md §3.3,
 * §7.3): the bytes each storage node would hold under the new ring, from
 * every member's object list, against its capacity.  A recovery that
 * would give a node more than it can hold does not start: nothing is
 * moved, rather than filling that node and halting with the copies
 * spread half-way.  Every node decides the same from the same lists.
 */
static bool would_overfill(struct recovery *rw)
{
	const struct vnode_ring *r = &rw->cur_ring;
	uint64_t *need;
	bool over = false;

	if (!(cstate->flags & SD_CLUSTER_FLAG_AVOID_DISKFULL))
		return false;
	need = xzalloc((r->nr_nodes + 1) * sizeof(*need));
	for (size_t i = 0; i < rw->nr_cand; i++) {
		uint64_t oid = rw->cand[i];
		uint8_t policy = strip_policy(oid);
		uint64_t size = sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));
		int tgt[SD_MAX_COPIES], k;

		if (i && oid == rw->cand[i - 1])
			continue;
		if (policy) {
			k = strip_targets(r, oid, policy, tgt);
			size /= (uint64_t)ec_policy_data(policy);
		} else {
			k = ring_targets(r, oid, copies_of(oid), tgt);
		}
		for (int j = 0; j < k; j++) {
			sd_assert(tgt[j] >= 0 && (size_t)tgt[j] < r->nr_nodes);
			need[tgt[j]] += size;
		}
	}
	for (size_t j = 0; j < r->nr_nodes; j++) {
		char name[128], a[32], b[32];

		/* gateways hold nothing; a capacity not known is no limit */
		if (!r->nodes[j].nr_vnodes || !r->nodes[j].space ||
		    need[j] <= r->nodes[j].space)
			continue;
		sd_emerg("recovery of epoch %u not started (-F, avoid disk "
			 "full): node %s would hold %s of objects, its capacity "
			 "is %s", rw->epoch,
			 node_to_str(&r->nodes[j], name, sizeof(name)),
			 size_to_str(need[j], a, sizeof(a)),
			 size_to_str(r->nodes[j].space, b, sizeof(b)));
		over = true;
	}
	free(need);
	return over;
}

static void build_work(struct recovery *rw)
{
	size_t n = 0;

	qsort(rw->cand, rw->nr_cand, sizeof(uint64_t), oid_cmp);
	if (would_overfill(rw)) {
		/* halted for good: the next membership change checks again */
		rw->state = RS_HALTED;
		rw->halted = true;
		rw->overfill = true;
		resubmit_list(&rw->parked);
		return;
	}
	rw->work = xzalloc((rw->nr_cand + 1) * sizeof(*rw->work));
	for (size_t i = 0; i < rw->nr_cand; i++) {
		uint64_t oid = rw->cand[i];
		uint8_t policy = strip_policy(oid);

		if (i && oid == rw->cand[i - 1])
			continue;
		if (policy) {
			rw->work[n] = strip_work(rw, oid, policy);
			n += rw->work[n] != NULL;
			continue;
		}
		if (!self_is_target(&rw->cur_ring, oid))
			continue;
		rw->work[n++] = work_obj(rw, oid, OBJ_IDX_REPLICA, 0);
	}
	rw->nr_work = n;
	keep_list(rw);
	/* what we hold but no longer own goes to the stale area */
	for (size_t i = 0; i < rw->nr_local; i++)
		if (self_is_target(&rw->cur_ring, rw->local[i]) ||
		    strip_policy(rw->local[i]))
			rw->local[i] = UINT64_MAX;
	rw->stale_work.fn = stale_move_work;
	rw->stale_work.done = stale_move_done;
	rw->refs++;
	rw->staling++;
	if (wq_queue(sys.io_wq, &rw->stale_work)) {
		rw->staling--;
		rec_put(rw);
	}
	sd_info("recovery of epoch %u: %zu object(s) to check", rw->epoch,
		rw->nr_work);
	rw->state = RS_RECOVERING;
	resubmit_list(&rw->parked);
	rec_pump(rw);
}

struct list_fetch {
	struct peer_req pr;
	struct recovery *rw;
	struct sd_node node;
	int tries;
	int waits;
};

#define LIST_TRIES	2
/*
 * A member that has yet to take in the epoch we ask in may not know us
 * as a member: a node that joins learns of its join after the others do
 * (and they of it after it does), and refuses a non-member's GET_OBJ_LIST
 * as a client's (INVALID_PARMS), or answers NEW_NODE_VER once it knows
 * us.  A refusal from a member of our epoch is asked again every
 * LIST_WAIT_MS, LIST_WAITS times at most; a newer epoch cancels the wait.
 * Non-members keep their plain refusal (the trust boundary, test 091).
 */
#define LIST_WAIT_MS	100
#define LIST_WAITS	100

struct list_wait {
	struct timer timer;
	struct recovery *rw;
	struct sd_node node;
	uint32_t size;
	int waits;
};

/* the largest object list a member answered, in bytes (list_start) */
static uint32_t list_seen;

/* the first buffer to ask a member's list into: room to grow by half */
static uint32_t list_start(void)
{
	uint64_t want = (uint64_t)list_seen + list_seen / 2 + 8;
	uint32_t size = LIST_BUF_MIN;

	while (size < want && size < LIST_BUF_MAX)
		size *= 2;
	return size;
}

static void fetch_list_try(struct recovery *rw, const struct sd_node *n,
			   uint32_t size, int tries, int waits);

static void fetch_list(struct recovery *rw, const struct sd_node *n,
		       uint32_t size)
{
	fetch_list_try(rw, n, size, 0, 0);
}

static void list_pending_put(struct recovery *rw)
{
	if (--rw->lists_pending == 0 && !rw->cancelled)
		build_work(rw);
	rec_put(rw);
}

static void list_wait_fire(struct timer *t)
{
	struct list_wait *w = container_of(t, struct list_wait, timer);
	struct recovery *rw = w->rw;

	if (!rw->cancelled)
		fetch_list_try(rw, &w->node, w->size, 0, w->waits);
	list_pending_put(rw);
	free(w);
}

/* ask @lf's member again in a while; the wait holds the recovery */
static void list_wait(struct list_fetch *lf, uint32_t size)
{
	struct list_wait *w = xzalloc(sizeof(*w));

	w->rw = lf->rw;
	w->node = lf->node;
	w->size = size;
	w->waits = lf->waits + 1;
	w->timer.fn = list_wait_fire;
	w->rw->refs++;
	w->rw->lists_pending++;
	timer_add(sys.loop, &w->timer, LIST_WAIT_MS);
}

static void list_done(struct peer_req *pr, int result)
{
	struct list_fetch *lf = container_of(pr, struct list_fetch, pr);
	struct recovery *rw = lf->rw;
	uint32_t nr = pr->rp.data_length / 8;
	bool self = node_is_self(&lf->node);

	if (!rw->cancelled && result == SD_RES_BUFFER_SMALL &&
	    pr->rbuf_len < LIST_BUF_MAX) {
		fetch_list(rw, &lf->node, MIN(pr->rbuf_len * 4, LIST_BUF_MAX));
	} else if (!rw->cancelled && result == SD_RES_SUCCESS) {
		if (pr->rp.data_length > list_seen)
			list_seen = pr->rp.data_length;
		if (rw->nr_cand + nr > rw->cap_cand) {
			rw->cap_cand = (rw->nr_cand + nr) * 2;
			rw->cand = xrealloc(rw->cand, rw->cap_cand * 8);
		}
		le64_array_decode(rw->cand + rw->nr_cand, nr, pr->rbuf);
		if (self) {
			rw->local = xmalloc((nr + 1) * 8);
			memcpy(rw->local, rw->cand + rw->nr_cand, nr * 8);
			rw->nr_local = nr;
		}
		rw->nr_cand += nr;
	} else if (!rw->cancelled && (result == SD_RES_NEW_NODE_VER ||
				      result == SD_RES_INVALID_PARMS) &&
		   lf->waits < LIST_WAITS) {
		list_wait(lf, pr->rbuf_len);
	} else if (!rw->cancelled && lf->tries < LIST_TRIES) {
		/* a member we cannot list would leave its objects behind */
		sd_warn("no object list from a member (%s): asking again",
			sd_strerror((uint32_t)result));
		fetch_list_try(rw, &lf->node, pr->rbuf_len, lf->tries + 1,
			       lf->waits);
	} else if (!rw->cancelled) {
		rw->lists_missed++;
		sd_err("no object list from a member: %s; its objects are "
		       "recovered when a request needs them",
		       sd_strerror((uint32_t)result));
	}
	free(pr->rbuf);
	free(lf);
	list_pending_put(rw);
}

/* the reply's size, not the size asked for: most lists are small */
static void *list_buf(struct peer_req *pr, uint32_t len)
{
	pr->rbuf_len = MIN(len, pr->rbuf_len);
	return xmalloc(pr->rbuf_len);
}

static void fetch_list_try(struct recovery *rw, const struct sd_node *n,
			   uint32_t size, int tries, int waits)
{
	struct list_fetch *lf = xzalloc(sizeof(*lf));

	lf->tries = tries;
	lf->waits = waits;
	lf->rw = rw;
	lf->node = *n;
	rw->refs++;
	rw->lists_pending++;
	sd_init_req(&lf->pr.rq, SD_OP_GET_OBJ_LIST);
	lf->pr.rq.epoch = cstate->epoch;
	lf->pr.rq.data_length = size;
	lf->pr.rbuf_len = size;
	lf->pr.alloc_rbuf = list_buf;
	lf->pr.done = list_done;
	peer_submit(&n->nid, &lf->pr);
}

static void rec_cancel(struct recovery *rw)
{
	rw->cancelled = true;
	timer_del(&rw->timer);
	timer_del(&rw->halt_timer);
	resubmit_list(&rw->parked);
	for (size_t i = 0; i < rw->nr_work; i++)
		resubmit_list(&rw->work[i]->parked);
	rec_put(rw);
}

void recovery_expect(bool expected)
{
	rec_expected = expected;
	if (!expected)
		resubmit_list(&early_parked);
}

void recovery_reset(void)
{
	rec_expected = false;
	resubmit_list(&early_parked);
	if (rec)
		rec_cancel(rec);
	rec = NULL;
	nr_completed = 0;
	completed_epoch = 0;
}

void recovery_start(uint32_t old_epoch)
{
	struct sd_node *nodes;
	struct recovery *rw;
	int nr;

	if (sys.gateway) {
		recovery_expect(false);
		return;
	}
	rw = xzalloc(sizeof(*rw));
	rw->refs = 1;
	rw->gen = ++rec_gen ? rec_gen : ++rec_gen;
	rw->epoch = cstate->epoch;
	rw->old_epoch = old_epoch;
	/* copies are fetched from where an epoch up to this one put them */
	sd_assert(old_epoch <= rw->epoch);
	rw->state = RS_PREPARING;
	INIT_LIST_HEAD(&rw->parked);
	rec_expected = false;
	list_splice_tail_init(&early_parked, &rw->parked);
	nodes = xmalloc(SD_MAX_NODES * sizeof(*nodes));
	nr = old_epoch ? epoch_log_read(old_epoch, nodes, SD_MAX_NODES, NULL)
		       : -1;
	if (nr > 0)
		ring_build(&rw->old_ring, nodes, (size_t)nr);
	free(nodes);
	ring_build(&rw->cur_ring, cstate->members, cstate->nr_members);
	if (rec)
		rec_cancel(rec);
	rec = rw;
	sd_info("recovery of epoch %u starts (from epoch %u)", rw->epoch,
		old_epoch);
	rw->refs++;		/* held while fetching lists */
	for (size_t i = 0; i < rw->cur_ring.nr_nodes; i++)
		if (rw->cur_ring.nodes[i].nr_vnodes)
			fetch_list(rw, &rw->cur_ring.nodes[i], list_start());
	if (!rw->lists_pending)
		build_work(rw);
	rec_put(rw);
}

/*
 * ALTER_VDI_COPY (cluster.md §7.1): the ring is unchanged but a VDI's
 * number of copies is not, so recover again within the current epoch:
 * old ring = current ring, tgt_epoch = epoch.  Objects gaining a target
 * are copied there, copies on nodes that are no longer among the targets
 * go to the stale area.  Every node runs this at the same point of the
 * event order, so the COMPLETE_RECOVERY round starts afresh: the stale
 * area is purged once every node has finished this recovery.
 */
void recovery_restart(void)
{
	if (sys.gateway || cstate->status != SD_STATUS_OK || !cstate->epoch)
		return;
	nr_completed = 0;
	completed_epoch = cstate->epoch;
	recovery_start(cstate->epoch);
}

/* ---- hooks for the request path ---- */

/*
 * An object no member listed (a list that could not be fetched, an
 * object created since) that a request needs here: recover it now.
 */
static struct robj *robj_add(struct recovery *rw, uint64_t oid, uint8_t idx)
{
	uint8_t policy = strip_policy(oid);
	struct robj *ro;

	if (idx != OBJ_IDX_REPLICA) {
		if (!policy || strip_index(&rw->cur_ring, oid, policy) != idx)
			return NULL;
	} else if (policy || !self_is_target(&rw->cur_ring, oid)) {
		return NULL;
	}
	ro = robj_new(rw, oid, idx, idx == OBJ_IDX_REPLICA ? 0 : policy);
	ro->ondemand = true;
	return ro;
}

/*
 * A peer op answered NO_OBJ: if the object is still to be recovered here,
 * keep the request and answer it after recovery.  Returns true if parked.
 */
bool recovery_park(struct request *req)
{
	struct recovery *rw = rec;
	uint8_t idx = is_strip_op(req->rq.opcode) ? req->rq.obj.ec_index :
		      OBJ_IDX_REPLICA;
	struct robj *ro;

	if (req->rq.flags & SD_FLAG_CMD_RECOVERY)
		return false;
	if (rec_expected) {
		list_add_tail(&req->list, &early_parked);
		return true;
	}
	if (!rw || rw->cancelled)
		return false;
	if (rw->state != RS_PREPARING && rw->state != RS_RECOVERING &&
	    rw->state != RS_HALTED && rw->state != RS_DONE)
		return false;
	/*
	 * While the members' lists are fetched too: the object's old
	 * holders are known from the rings, and the lists of a large
	 * cluster take seconds (a client's write waited for all of them)
	 */
	ro = robj_find(rw, req->rq.obj.oid, idx);
	if (!ro && req->asked_rec != rw->gen)
		ro = robj_add(rw, req->rq.obj.oid, idx);
	if (!ro && rw->state == RS_PREPARING) {
		list_add_tail(&req->list, &rw->parked);
		return true;
	}
	if (ro && ro->state == RO_DONE && ro->fail_res) {
		/*
		 * It could not be stored here (a full disk): say so, rather
		 * than "no object"; a request a second later tries again.
		 */
		if (now_msec() < ro->fail_at + FAIL_RETRY_MS) {
			req->rp.result = ro->fail_res;
			return false;
		}
		ro->fail_res = 0;
		ro->state = RO_PENDING;
		rw->nr_done -= !ro->ondemand;
	}
	if (!ro || ro->state == RO_DONE)
		return false;
	list_add_tail(&req->list, &ro->parked);
	/*
	 * An on-demand object is forgotten once settled: ask once only in
	 * this recovery (a later one, with other members, may ask again).
	 */
	if (ro->ondemand)
		req->asked_rec = rw->gen;
	__atomic_store_n(&ro->urgent, true, __ATOMIC_RELAXED);
	if (ro->state == RO_PENDING)
		robj_start(ro);		/* prioritised recovery (§7.5) */
	return true;
}

/*
 * A create is about to replace @oid: recovery must not overwrite it with
 * older data.  Returns true if the create must wait for a store in flight.
 */
bool recovery_supersede(struct request *req)
{
	struct recovery *rw = rec;
	struct robj *ro;

	if (!rw || rw->cancelled || (req->rq.flags & SD_FLAG_CMD_RECOVERY))
		return false;
	ro = robj_find(rw, req->rq.obj.oid, OBJ_IDX_REPLICA);
	if (!ro || ro->state == RO_DONE)
		return false;
	if (ro->state == RO_STORING) {
		list_add_tail(&req->list, &ro->parked);
		return true;
	}
	ro->superseded = true;
	if (ro->state == RO_PENDING) {
		ro->state = RO_DONE;
		rw->nr_done += !ro->ondemand;
	}
	return false;
}

void recovery_last(uint32_t *epoch, uint64_t *objects)
{
	*epoch = last_epoch;
	*objects = last_objects;
}

int recovery_stat(struct recovery_state *st)
{
	struct recovery *rw = rec;

	memset(st, 0, sizeof(*st));
	if (stale_over_bound())
		st->pad[0] |= RECOVERY_FLAG_STALE_FULL;
	if (!rw || rw->state == RS_DONE)
		return 0;
	st->in_recovery = 1;
	st->state = rw->state == RS_PREPARING ? 0 :
		    rw->state == RS_HALTED ? RECOVERY_STATE_HALTED : 1;
	st->nr_finished = rw->nr_done;
	st->nr_total = rw->nr_work;
	return 0;
}

bool recovery_halted(void)
{
	return rec && rec->state == RS_HALTED;
}

void recovery_resume(void)
{
	if (rec && !rec->cancelled)
		rec_pump(rec);
}

void recovery_set_throttle(const struct recovery_throttling *t)
{
	throttle = *t;
	throttle.throttling = t->max_exec_count && t->queue_work_interval;
	throttle_budget = throttle.max_exec_count;
	throttle_window = now_msec();
}

void recovery_get_throttle(struct recovery_throttling *t)
{
	*t = throttle;
}

void recovery_set_throttle_adaptive(bool on)
{
	throttle_adaptive = on;
}

bool recovery_throttle_adaptive(void)
{
	return throttle_adaptive;
}

void recovery_throttle_counts(uint64_t *waits, uint64_t *passed)
{
	*waits = throttle_waits;
	*passed = throttle_passed;
}

/* ---- COMPLETE_RECOVERY: purge the stale area once everyone is done ---- */

static struct work purge_work;
static bool purging, purge_again;
static struct recovery *purge_rw;	/* its misplaced strips go too */
static void (*settled_fn)(void);	/* sheep.c's: vdi/reclaim.c */

void recovery_set_settled(void (*fn)(void))
{
	settled_fn = fn;
}

static void purge_fn(struct work *w)
{
	store_purge_stale();
	if (purge_rw)
		strips_drop_misplaced(purge_rw->keep, purge_rw->nr_keep,
				      &purge_rw->cancelled);
}

static void purge_start(void);

static void purge_done(struct work *w)
{
	purging = false;
	if (purge_rw)
		rec_put(purge_rw);
	purge_rw = NULL;
	/* a round completed while we purged: what it staled goes too */
	if (purge_again)
		purge_start();
}

static void purge_start(void)
{
	purge_again = false;
	purging = true;
	purge_work.fn = purge_fn;
	purge_work.done = purge_done;
	/* a newer epoch (rec cancelled) stops the strips' removal */
	if (rec && !rec->cancelled && rec->state == RS_DONE &&
	    rec->epoch == cstate->epoch) {
		purge_rw = rec;
		rec->refs++;
	}
	if (wq_queue(sys.io_wq, &purge_work))
		purge_done(&purge_work);
}

static bool node_done(const struct node_id *nid)
{
	for (size_t j = 0; j < nr_completed; j++)
		if (node_id_eq(&completed[j], nid))
			return true;
	return false;
}

int recovery_complete_main(const struct sd_req *req, struct sd_rsp *rsp,
			   void *data, const struct cluster_ctx *ctx)
{
	uint32_t epoch = req->obj.tgt_epoch;
	size_t storage = 0, done = 0;

	if (epoch != cstate->epoch)
		return SD_RES_SUCCESS;
	if (completed_epoch != epoch) {
		nr_completed = 0;
		completed_epoch = epoch;
	}
	/* once per node: the list stays as long as the membership */
	if (!node_done(&ctx->sender->nid)) {
		completed = xrealloc(completed, (nr_completed + 1) *
				     sizeof(*completed));
		completed[nr_completed++] = ctx->sender->nid;
	}
	for (size_t i = 0; i < cstate->nr_members; i++) {
		if (!cstate->members[i].nr_vnodes)
			continue;
		storage++;
		if (node_done(&cstate->members[i].nid))
			done++;
	}
	if (done < storage || sys.gateway)
		return SD_RES_SUCCESS;
	if (settled_fn)
		settled_fn();
	if (purging) {
		purge_again = true;
		return SD_RES_SUCCESS;
	}
	sd_info("every node recovered epoch %u: purging stale objects", epoch);
	purge_start();
	return SD_RES_SUCCESS;
}

/*
 * A node rejoining after the cluster moved on keeps nothing current.  The
 * store makes every object a stale copy at once (the object directory is
 * swapped, so none is served from here on); the files are moved into the
 * stale area by a worker, not on this loop: that is one rename per object.
 */
static struct work drain_work;
static bool draining, drain_again;
static uint32_t drain_epoch;
static uint64_t drained, drain_started;

static void drain_fn(struct work *w)
{
	drained = store_drain_left();
}

static void drain_done(struct work *w)
{
	draining = false;
	sd_notice("%" PRIu64 " object(s) of epoch %u moved to the stale area "
		  "in %" PRIu64 " ms", drained, drain_epoch,
		  now_msec() - drain_started);
	if (drain_again) {
		drain_again = false;
		draining = true;
		drain_started = now_msec();
		if (wq_queue(sys.io_wq, &drain_work)) {
			draining = false;
			store_drain_left();
		}
	}
}

/* strips too: each keeps its index in the stale area */
static int stale_one(struct obj_key k, void *arg)
{
	store_move_to_stale(k, *(uint32_t *)arg);
	return 0;
}

void recovery_stale_everything(uint32_t epoch)
{
	if (store_stale_all(epoch) != SD_RES_SUCCESS) {
		/* the swap failed: one object at a time, before serving */
		sd_err("cannot swap the object directory: moving every object "
		       "to the stale area here");
		store_for_each(stale_one, &epoch);
		return;
	}
	drain_epoch = epoch;
	if (draining) {
		drain_again = true;
		return;
	}
	drain_work.fn = drain_fn;
	drain_work.done = drain_done;
	draining = true;
	drain_started = now_msec();
	if (wq_queue(sys.io_wq, &drain_work)) {
		draining = false;
		store_drain_left();
	}
}
