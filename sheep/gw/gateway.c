// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Gateway: a client's object request becomes peer requests to the object's
 * targets in the current ring.  Writes go to every target in parallel and
 * complete when all have answered; reads of data try the local copy first,
 * reads of metadata go in ring order, and both fail over to the other
 * targets.  Transient failures (a dead peer, an epoch change) retry the
 * whole request against the newest ring, boundedly.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "inode.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "core/request.h"
#include "gw/ec_gateway.h"
#include "gw/gw.h"
#include "gw/sub.h"
#include "net/peer.h"
#include "state/cluster.h"
#include "state/vdi.h"

struct gw_sub {
	struct peer_req pr;
	struct request *req;
	int tgt;		/* index in the read order */
};

static void gw_start(struct request *req);
static void (*index_update)(struct request *req);

void gateway_set_index_update(void (*fn)(struct request *req))
{
	index_update = fn;
}

/* the peer opcode that carries a gateway opcode to a target */
static uint8_t gateway_to_peer_opcode(uint8_t opcode)
{
	switch (opcode) {
	case SD_OP_CREATE_AND_WRITE_OBJ:
		return SD_OP_CREATE_AND_WRITE_PEER;
	case SD_OP_READ_OBJ:
		return SD_OP_READ_PEER;
	case SD_OP_WRITE_OBJ:
		return SD_OP_WRITE_PEER;
	case SD_OP_REMOVE_OBJ:
		return SD_OP_REMOVE_PEER;
	case SD_OP_DECREF_OBJ:
		return SD_OP_DECREF_PEER;
	default:
		return opcode;
	}
}

/*
 * Writes to one object run at once unless they overlap: a write waits
 * while an earlier write (running or waiting) touches any of its bytes,
 * so overlapping writes reach every replica in one (arrival) order, and
 * writes to other bytes of the object do not queue behind them (the
 * store orders its own updates of a file's checksums).  Creates,
 * copy-on-write, removes and reference drops take the whole object.
 */
#define SLOT_BUCKETS 1024

struct oid_slot {
	uint64_t oid;
	struct list_head active;	/* running writes */
	struct list_head waiters;	/* in arrival order */
	struct oid_slot *next;
};

static struct oid_slot *slots[SLOT_BUCKETS];

static struct oid_slot **slot_find(uint64_t oid)
{
	struct oid_slot **p = &slots[oid % SLOT_BUCKETS];

	while (*p && (*p)->oid != oid)
		p = &(*p)->next;
	return p;
}

static bool writes_conflict(const struct request *a, const struct request *b)
{
	uint64_t a0 = a->rq.obj.offset, a1 = a0 + a->rq.data_length;
	uint64_t b0 = b->rq.obj.offset, b1 = b0 + b->rq.data_length;

	if (a->rq.opcode != SD_OP_WRITE_OBJ || b->rq.opcode != SD_OP_WRITE_OBJ)
		return true;
	/* every write of a coded object changes every strip */
	if (gw_ec_policy(a->rq.obj.oid))
		return true;
	return a0 < b1 && b0 < a1;
}

/* does @req conflict with an entry of @head before @stop (NULL: any)? */
static bool conflicts_in(const struct request *req, struct list_head *head,
			 const struct request *stop)
{
	struct request *r;

	list_for_each_entry(r, head, slot_list) {
		if (r == stop)
			break;
		if (writes_conflict(req, r))
			return true;
	}
	return false;
}

/* true if @req may run now; otherwise it waits in its object's slot */
static bool slot_acquire(struct request *req)
{
	struct oid_slot **p = slot_find(req->rq.obj.oid), *s = *p;

	if (!s) {
		s = xzalloc(sizeof(*s));
		s->oid = req->rq.obj.oid;
		INIT_LIST_HEAD(&s->active);
		INIT_LIST_HEAD(&s->waiters);
		*p = s;
	}
	if (conflicts_in(req, &s->active, NULL) ||
	    conflicts_in(req, &s->waiters, NULL)) {
		list_add_tail(&req->slot_list, &s->waiters);
		return false;
	}
	list_add_tail(&req->slot_list, &s->active);
	req->slot_held = true;
	return true;
}

/* the write slot's invariant: no two overlapping writes active at once */
static void assert_slot_active(struct request *req, struct oid_slot *s)
{
	struct request *r;

	list_for_each_entry(r, &s->active, slot_list)
		sd_assert(r == req || !writes_conflict(req, r));
}

static void fence_granted(struct request *req);

static void gw_slot_start(struct timer *t)
{
	struct request *req = container_of(t, struct request, retry_timer);

	if (req->rq.opcode == SD_OP_FENCE_OBJ)
		fence_granted(req);
	else
		gw_start(req);
}

static void slot_release(struct request *req)
{
	struct oid_slot **p = slot_find(req->rq.obj.oid), *s = *p;
	struct request *w, *n;

	req->slot_held = false;
	if (!s)
		return;
	list_del(&req->slot_list);
	/* start every waiter that conflicts with nothing before it */
	list_for_each_entry_safe(w, n, &s->waiters, slot_list) {
		if (conflicts_in(w, &s->active, NULL) ||
		    conflicts_in(w, &s->waiters, w))
			continue;
		list_del(&w->slot_list);
		assert_slot_active(w, s);
		list_add_tail(&w->slot_list, &s->active);
		w->slot_held = true;
		/* from the loop, not from this stack */
		w->retry_timer.fn = gw_slot_start;
		timer_add(sys.loop, &w->retry_timer, 0);
	}
	if (list_empty(&s->active) && list_empty(&s->waiters)) {
		*p = s->next;
		free(s);
	}
}

/*
 * Fences (FENCE_OBJ): the scrub compares and reconciles the copies of an
 * object only while no write of it runs anywhere.  A fence is a waiter
 * that conflicts with every write of its object in this gateway's slot:
 * it is granted once the writes before it have finished, and the writes
 * after it wait until it is lifted.  With a fence granted on every
 * member, no write of the object is in flight in the cluster.  A lease
 * lifts a fence whose holder vanished; a fence not granted within its
 * lease fails.
 */
#define NR_FENCES 64	/* one per scrubbing node and object at a time */

struct fence {
	struct request req;		/* its place in the object's slot */
	void (*ready)(void *arg, int res);
	void *arg;
	struct timer lease;
	bool granted;
};

static struct fence *fences[NR_FENCES];

static struct fence **fence_find(uint64_t oid)
{
	for (int i = 0; i < NR_FENCES; i++)
		if (fences[i] && fences[i]->req.rq.obj.oid == oid)
			return &fences[i];
	return NULL;
}

static void fence_drop(struct fence **fp)
{
	struct fence *f = *fp;

	*fp = NULL;
	timer_del(&f->lease);
	timer_del(&f->req.retry_timer);
	slot_release(&f->req);	/* held or waiting: its writes may go */
	free(f);
}

static void fence_granted(struct request *req)
{
	struct fence *f = container_of(req, struct fence, req);

	f->granted = true;
	f->ready(f->arg, SD_RES_SUCCESS);
}

static void fence_expired(struct timer *t)
{
	struct fence *f = container_of(t, struct fence, lease);
	void (*ready)(void *arg, int res) = f->ready;
	void *arg = f->arg;
	bool granted = f->granted;

	if (granted)
		sd_warn("fence of object %" PRIx64 " lifted by its lease",
			f->req.rq.obj.oid);
	fence_drop(fence_find(f->req.rq.obj.oid));
	if (!granted)
		ready(arg, SD_RES_AGAIN);
}

int gateway_fence(uint64_t oid, uint32_t lease_ms,
		  void (*ready)(void *arg, int res), void *arg)
{
	struct fence *f;
	int i;

	if (fence_find(oid))
		return SD_RES_AGAIN;	/* another scrub holds it */
	for (i = 0; i < NR_FENCES && fences[i]; i++)
		;
	if (i == NR_FENCES)
		return SD_RES_AGAIN;
	f = xzalloc(sizeof(*f));
	INIT_LIST_HEAD(&f->req.list);
	INIT_LIST_HEAD(&f->req.slot_list);
	f->req.rq.opcode = SD_OP_FENCE_OBJ;
	f->req.rq.obj.oid = oid;
	f->ready = ready;
	f->arg = arg;
	f->lease.fn = fence_expired;
	fences[i] = f;
	timer_add(sys.loop, &f->lease, lease_ms);
	if (!slot_acquire(&f->req))
		return SD_RES_ASYNC;
	f->granted = true;
	return SD_RES_SUCCESS;
}

int gateway_unfence(uint64_t oid)
{
	struct fence **fp = fence_find(oid);
	bool granted;

	if (!fp)
		return SD_RES_NO_OBJ;	/* its lease ran out */
	granted = (*fp)->granted;
	fence_drop(fp);
	return granted ? SD_RES_SUCCESS : SD_RES_AGAIN;
}

static bool retriable(uint32_t res)
{
	switch (res) {
	case SD_RES_NETWORK_ERROR:
	case SD_RES_OLD_NODE_VER:
	case SD_RES_NEW_NODE_VER:
	case SD_RES_WAIT_FOR_JOIN:
	case SD_RES_WAIT_FOR_FORMAT:
	case SD_RES_KILLED:
		return true;
	default:
		return false;
	}
}

static bool is_write_op(uint8_t op)
{
	return op == SD_OP_CREATE_AND_WRITE_OBJ || op == SD_OP_WRITE_OBJ ||
	       op == SD_OP_REMOVE_OBJ || op == SD_OP_DECREF_OBJ;
}

/*
 * Requests whose retry waits: most wait for the ring to move (a target
 * died, the targets' epoch is not ours), so a new epoch sends them at
 * once, not at the next tick (up to SD_GW_RETRY_MS later)
 */
static LIST_HEAD(retry_waiting);

static void gw_retry_timer(struct timer *t)
{
	struct request *req = container_of(t, struct request, retry_timer);

	list_del(&req->list);
	gw_start(req);
}

void gateway_epoch_changed(void)
{
	LIST_HEAD(now);
	int nr = 0;

	/* a retry that fails again waits on the list anew */
	list_splice_tail_init(&retry_waiting, &now);
	while (!list_empty(&now)) {
		struct request *req = list_first_entry(&now, struct request,
						       list);

		list_del(&req->list);
		timer_del(&req->retry_timer);
		gw_start(req);
		nr++;
	}
	if (nr)
		sd_info("epoch %u: %d request(s) waiting to retry sent at once",
			cstate->epoch, nr);
}

static void gw_finish(struct request *req, uint32_t result)
{
	if (retriable(result) && req->nr_retries < SD_GW_MAX_RETRIES &&
	    cstate->status == SD_STATUS_OK) {
		req->nr_retries++;
		sd_debug("retry %x oid %" PRIx64 " (%s), attempt %d",
			 req->rq.opcode, req->rq.obj.oid,
			 sd_strerror(result), req->nr_retries);
		req->retry_timer.fn = gw_retry_timer;
		timer_add(sys.loop, &req->retry_timer, SD_GW_RETRY_MS);
		list_add_tail(&req->list, &retry_waiting);
		return;
	}
	if (retriable(result))
		result = SD_RES_NETWORK_ERROR;
	if (req->slot_held)
		slot_release(req);
	req->rp.result = result;
	if (result != SD_RES_SUCCESS)
		req->rp.data_length = 0;
	request_done(req);
}

/*
 * The request to a target is built from what this gateway vouches for,
 * never the client's flags as they came: a READ_OBJ with the write flag
 * made the peer request claim a payload it did not have (the send failed
 * and the connection between the sheep broke, again and again), and the
 * internal flags (recovery, wildcard) are not a client's to set.  A write
 * keeps whether it may be cached.
 */
static void build_peer_req(struct request *req, struct gw_sub *s, int idx,
			   bool write)
{
	struct sd_req *rq = &s->pr.rq;

	sd_init_req(rq, gateway_to_peer_opcode(req->rq.opcode));
	rq->proto_ver = SD_SHEEP_PROTO_VER;
	rq->epoch = cstate->epoch;
	rq->data_length = req->rq.data_length;
	rq->obj = req->rq.obj;
	rq->obj.ec_index = (uint8_t)idx;
	if (write)
		rq->flags = SD_FLAG_CMD_WRITE |
			    (req->rq.flags & SD_FLAG_CMD_CACHE);
	s->req = req;
}

/* ---- writes: all targets in parallel ---- */

static void write_sub_done(struct peer_req *pr, int result)
{
	struct gw_sub *s = container_of(pr, struct gw_sub, pr);
	struct request *req = s->req;

	if (result != SD_RES_SUCCESS) {
		/* a lost replica means retry; anything else is the answer */
		if (!retriable(req->gw_result) || retriable(result))
			req->gw_result = result;
	}
	free(s);
	if (--req->nr_pending)
		return;
	gw_finish(req, req->gw_result);
}

static void gw_write(struct request *req, const struct vnode_ring *ring,
		     const int *tgt, int nr)
{
	req->nr_pending = nr;
	req->gw_result = SD_RES_SUCCESS;
	for (int i = 0; i < nr; i++) {
		struct gw_sub *s = xzalloc(sizeof(*s));

		build_peer_req(req, s, i, req->rq.data_length &&
			       (req->rq.flags & SD_FLAG_CMD_WRITE));
		s->pr.wbuf = req->data;
		s->pr.done = write_sub_done;
		gw_peer_submit(&s->pr, &ring->nodes[tgt[i]]);
	}
}

/* ---- reads: one target at a time ---- */

struct read_state {
	int nr;
	int next;
	struct sd_node nodes[SD_MAX_COPIES];
};

static void read_try_next(struct request *req);

static void read_sub_done(struct peer_req *pr, int result)
{
	struct gw_sub *s = container_of(pr, struct gw_sub, pr);
	struct request *req = s->req;

	if (result == SD_RES_SUCCESS) {
		req->rp.data_length = req->rq.data_length;
		free(s);
		free(req->priv);
		req->priv = NULL;
		gw_finish(req, SD_RES_SUCCESS);
		return;
	}
	free(s);
	if (!retriable(req->gw_result))
		req->gw_result = result;
	/* a missing or failed copy: try the next target */
	read_try_next(req);
}

static void read_try_next(struct request *req)
{
	struct read_state *rs = req->priv;
	struct gw_sub *s;

	if (rs->next >= rs->nr) {
		free(rs);
		req->priv = NULL;
		gw_finish(req, req->gw_result);
		return;
	}
	s = xzalloc(sizeof(*s));
	build_peer_req(req, s, rs->next, false);
	s->pr.rbuf = req->data;
	s->pr.rbuf_len = req->rq.data_length;
	s->pr.done = read_sub_done;
	gw_peer_submit(&s->pr, &rs->nodes[rs->next++]);
}

static void gw_read(struct request *req, const struct vnode_ring *ring,
		    const int *tgt, int nr)
{
	struct read_state *rs = xzalloc(sizeof(*rs));
	bool meta = !is_data_obj(req->rq.obj.oid);
	int start = meta ? 0 : rand() % nr, k = 0;

	/*
	 * Metadata (inodes, attributes) is read in ring order, never local
	 * first: a write cut short by a crash can leave its copies different
	 * (nothing reconciles them yet), and every node must then see the
	 * same VDIs and tags, those of the first target that answers.
	 */
	for (int i = 0; i < nr && !meta; i++)
		if (node_is_self(&ring->nodes[tgt[i]]))
			rs->nodes[k++] = ring->nodes[tgt[i]];
	for (int i = 0; i < nr; i++) {
		const struct sd_node *n = &ring->nodes[tgt[(start + i) % nr]];

		if (meta || !node_is_self(n))
			rs->nodes[k++] = *n;
	}
	rs->nr = k;
	req->gw_result = SD_RES_NO_OBJ;
	req->priv = rs;
	read_try_next(req);
}

/* a data object of a coded VDI: strip i on the object's target i */
static void gw_ec(struct request *req, const struct vnode_ring *ring,
		  uint8_t policy)
{
	int n = ec_policy_data(policy) + ec_policy_parity(policy);
	struct sd_node nodes[SD_MAX_COPIES];
	int tgt[SD_MAX_COPIES];

	/* fewer zones than strips: the last ones do without, down to D */
	if (n > SD_MAX_COPIES)
		n = 0;
	else
		n = ring_targets(ring, req->rq.obj.oid, n, tgt);
	if (n < ec_policy_data(policy)) {
		gw_finish(req, SD_RES_HALT);
		return;
	}
	for (int i = 0; i < n; i++)
		nodes[i] = ring->nodes[tgt[i]];
	gw_ec_start(req, policy, nodes, n, gw_finish);
}

/*
 * The layout @req goes to: its VDI's copies and code, or for convert.c
 * the other layout of the VDI's conversion (false when there is none)
 */
static bool req_layout(const struct request *req, int *copies,
		       uint8_t *policy)
{
	uint32_t vid = oid_to_vid(req->rq.obj.oid);
	struct vdi_info *vi;

	if (!req->conv_layout) {
		*copies = req->rq.obj.copies ? req->rq.obj.copies :
			  (int)vdi_copies(vid);
		*policy = gw_ec_policy(req->rq.obj.oid);
		return true;
	}
	vi = vdi_get(vid, false);
	if (!vi || vi->conv_state == VDI_CONV_NONE)
		return false;
	*copies = vi->conv_copies;
	*policy = vi->conv_policy;
	return true;
}

static void gw_start(struct request *req)
{
	struct cluster_view *v = current_view();
	uint64_t oid = req->rq.obj.oid;
	uint32_t vid = oid_to_vid(oid);
	int tgt[SD_MAX_COPIES];
	uint8_t policy;
	int copies, nr;

	if (cstate->status != SD_STATUS_OK) {
		gw_finish(req, cstate->ctime ? SD_RES_WAIT_FOR_JOIN :
			  SD_RES_WAIT_FOR_FORMAT);
		return;
	}
	if (!req_layout(req, &copies, &policy)) {
		gw_finish(req, SD_RES_INVALID_PARMS);	/* aborted */
		return;
	}
	if (req->rq.opcode == SD_OP_REMOVE_OBJ) {
		/* a coded object's peers remove its strips (ops.c) */
		req->rq.obj.copy_policy = policy;
		if (policy)
			copies = ec_policy_data(policy) +
				 ec_policy_parity(policy);
	}
	nr = ring_targets(&v->ring, oid, copies, tgt);
	/* copies on distinct nodes of distinct zones, never more than asked */
	sd_assert(nr <= copies);
	for (int i = 0; i < nr; i++)
		for (int j = 0; j < i; j++)
			sd_assert(tgt[i] != tgt[j] &&
				  v->ring.nodes[tgt[i]].zone !=
				  v->ring.nodes[tgt[j]].zone);
	if (!nr) {
		gw_finish(req, SD_RES_HALT);
		return;
	}
	if (is_write_op(req->rq.opcode) &&
	    (cstate->flags & SD_CLUSTER_FLAG_STRICT) && nr < copies) {
		gw_finish(req, SD_RES_HALT);
		return;
	}
	req->obj_size = sd_obj_size(oid, vdi_shift(vid));
	if (req->rq.opcode == SD_OP_EC_CHECK && !policy) {
		gw_finish(req, SD_RES_INVALID_PARMS);	/* not coded */
		return;
	}
	if (policy && req->rq.opcode != SD_OP_REMOVE_OBJ &&
	    req->rq.opcode != SD_OP_DECREF_OBJ) {
		gw_ec(req, &v->ring, policy);
		return;
	}
	if (req->rq.opcode == SD_OP_READ_OBJ)
		gw_read(req, &v->ring, tgt, nr);
	else
		gw_write(req, &v->ring, tgt, nr);
}

static void gw_begin(struct request *req)
{
	req->nr_retries = 0;
	/* a coded object's reads wait for its writes: strips must agree */
	if ((is_write_op(req->rq.opcode) ||
	     gw_ec_policy(req->rq.obj.oid)) && !slot_acquire(req))
		return;
	gw_start(req);
}

/* ---- copy-on-write: read the source object, overlay, create ---- */

static void cow_read_done(struct request *r2)
{
	struct request *req = r2->caller;
	uint32_t size = r2->rq.data_length;

	if (r2->rp.result != SD_RES_SUCCESS) {
		sd_err("copy-on-write source %016" PRIx64 ": %s",
		       r2->rq.obj.oid, sd_strerror(r2->rp.result));
		req->rp.result = r2->rp.result;
		free(r2->data);
		free(r2);
		budget_release(size);
		request_done(req);
		return;
	}
	memcpy((char *)r2->data + req->rq.obj.offset, req->data,
	       req->rq.data_length);
	budget_release(req->data_len);
	free(req->data);
	req->data = r2->data;
	req->data_len = size;
	req->rq.data_length = size;
	req->rq.obj.offset = 0;
	req->rq.flags &= (uint16_t)~SD_FLAG_CMD_COW;
	free(r2);
	gw_begin(req);
}

static void gw_cow(struct request *req, uint32_t size)
{
	struct request *r2 = xzalloc(sizeof(*r2));

	INIT_LIST_HEAD(&r2->list);
	r2->rq.opcode = SD_OP_READ_OBJ;
	r2->rq.proto_ver = SD_PROTO_VER;
	r2->rq.data_length = size;
	r2->rq.obj.oid = req->rq.obj.cow_oid;
	/* admitted with this cost (ops/validate.c request_cost) */
	r2->data = xzalloc(size);
	budget_charge(size);
	r2->internal = true;
	r2->complete = cow_read_done;
	r2->caller = req;
	gateway_submit(r2);
}

void gateway_submit(struct request *req)
{
	uint64_t oid = req->rq.obj.oid;
	uint8_t op = req->rq.opcode;
	struct vdi_info *vi;
	uint32_t size;

	if ((op == SD_OP_WRITE_OBJ || op == SD_OP_CREATE_AND_WRITE_OBJ) &&
	    is_data_obj(oid)) {
		vi = vdi_get(oid_to_vid(oid), false);
		/* what alter-copy has copied already must stay as it is */
		if (vi && (vi->snapshot || (!req->conv_layout &&
				vi->conv_state == VDI_CONV_COPYING))) {
			req->rp.result = SD_RES_READONLY;
			request_done(req);
			return;
		}
	}
	size = sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));
	if ((uint64_t)req->rq.obj.offset + req->rq.data_length > size &&
	    op != SD_OP_REMOVE_OBJ && op != SD_OP_DECREF_OBJ) {
		req->rp.result = SD_RES_INVALID_PARMS;
		request_done(req);
		return;
	}
	if (op == SD_OP_CREATE_AND_WRITE_OBJ &&
	    (req->rq.flags & SD_FLAG_CMD_COW) &&
	    req->rq.data_length < size) {
		gw_cow(req, size);
		return;
	}
	if (op == SD_OP_WRITE_OBJ && !req->internal && is_vdi_obj(oid) &&
	    inode_range_in_index(req->rq.obj.offset, req->rq.data_length)) {
		index_update(req);
		return;
	}
	gw_begin(req);
}

/* ---- FLUSH_VDI: make cached writes durable on every storage node ---- */

static void flush_retry_timer(struct timer *t)
{
	gateway_flush(container_of(t, struct request, retry_timer));
}

/*
 * A node lost during a flush takes its copies with it; what the flush must
 * cover lives on the nodes of the next epoch, so flush those (like a
 * write, a flush fails only when the cluster does not settle).
 */
static void flush_sub_done(struct peer_req *pr, int result)
{
	struct gw_sub *s = container_of(pr, struct gw_sub, pr);
	struct request *req = s->req;
	uint32_t res;

	if (result != SD_RES_SUCCESS &&
	    (!retriable(req->gw_result) || retriable(result)))
		req->gw_result = result;
	free(s);
	if (--req->nr_pending)
		return;
	res = req->gw_result;
	if (retriable(res) && req->nr_retries < SD_GW_MAX_RETRIES &&
	    cstate->status == SD_STATUS_OK) {
		req->nr_retries++;
		sd_debug("retry flush (%s), attempt %d", sd_strerror(res),
			 req->nr_retries);
		req->retry_timer.fn = flush_retry_timer;
		timer_add(sys.loop, &req->retry_timer, SD_GW_RETRY_MS);
		return;
	}
	if (retriable(res))
		res = SD_RES_NETWORK_ERROR;
	req->rp.result = res;
	request_done(req);
}

void gateway_flush(struct request *req)
{
	struct cluster_view *v = current_view();
	size_t n = 0;

	req->gw_result = SD_RES_SUCCESS;
	for (size_t i = 0; i < v->ring.nr_nodes; i++)
		if (v->ring.nodes[i].nr_vnodes)
			n++;
	if (!n) {
		req->rp.result = SD_RES_SUCCESS;
		request_done(req);
		return;
	}
	req->nr_pending = (int)n;
	for (size_t i = 0; i < v->ring.nr_nodes; i++) {
		struct gw_sub *s;

		if (!v->ring.nodes[i].nr_vnodes)
			continue;
		s = xzalloc(sizeof(*s));
		s->req = req;
		sd_init_req(&s->pr.rq, SD_OP_FLUSH_PEER);
		s->pr.rq.epoch = cstate->epoch;
		s->pr.done = flush_sub_done;
		gw_peer_submit(&s->pr, &v->ring.nodes[i]);
	}
}

/* ---- synchronous gateway I/O for the cluster worker thread ---- */

struct sync_call {
	struct loop_call call;
	struct request *req;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void sync_complete(struct request *req)
{
	struct sync_call *sc = req->caller;

	pthread_mutex_lock(&sc->lock);
	sc->done = true;
	pthread_cond_signal(&sc->cond);
	pthread_mutex_unlock(&sc->lock);
}

static void sync_start(struct loop_call *c)
{
	struct sync_call *sc = container_of(c, struct sync_call, call);

	gateway_submit(sc->req);
}

int gw_exec_req(const struct sd_req *rq, void *buf)
{
	struct sync_call sc = { .done = false };
	struct request *req = xzalloc(sizeof(*req));
	int ret;

	INIT_LIST_HEAD(&req->list);
	req->rq = *rq;
	/* the caller's buffer serves both directions */
	req->data = buf;
	req->internal = true;
	req->complete = sync_complete;
	req->caller = &sc;
	pthread_mutex_init(&sc.lock, NULL);
	pthread_cond_init(&sc.cond, NULL);
	sc.req = req;
	sc.call.fn = sync_start;
	event_loop_call(sys.loop, &sc.call);
	pthread_mutex_lock(&sc.lock);
	while (!sc.done)
		pthread_cond_wait(&sc.cond, &sc.lock);
	pthread_mutex_unlock(&sc.lock);
	ret = (int)req->rp.result;
	free(req);
	return ret;
}

int gw_exec_sync(uint8_t opcode, uint64_t oid, void *buf, uint32_t len,
		 uint32_t offset, uint8_t copies, uint16_t flags)
{
	struct sd_req rq;

	memset(&rq, 0, sizeof(rq));
	rq.opcode = opcode;
	rq.proto_ver = SD_PROTO_VER;
	rq.flags = flags;
	rq.data_length = len;
	rq.obj.oid = oid;
	rq.obj.offset = offset;
	rq.obj.copies = copies;
	return gw_exec_req(&rq, buf);
}
