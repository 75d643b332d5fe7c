// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reconciling the copies of one object (the scrub's second check).
 *
 * Copies can differ without rot: a write that reached some targets and
 * failed on others was never acknowledged, but it stays where it landed,
 * and reads served by different copies then disagree.  The object's first
 * target compares the SHA-1 of every copy (GET_HASH).  Where they differ,
 * the difference may only be a write in flight, so it fences the object
 * on every member (FENCE_OBJ: each gateway finishes its running writes of
 * it and holds new ones), compares again, and only then makes the copies
 * one: the content most copies hold (on a tie, its own) is copied over
 * the others (REPAIR_REPLICA), the copies are compared a last time, and
 * the fences are lifted.  Any content is correct to keep: with no write
 * in flight, every acknowledged write is on every copy.
 *
 * Copies that cannot be compared (missing: recovery's job; failing their
 * checksums: the heal's job; a member that does not answer) are left
 * alone.  An epoch change stops the reconciliation where it is.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "net.h"
#include "proto.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "net/peer.h"
#include "recovery/reconcile.h"
#include "state/cluster.h"
#include "state/vdi.h"

#define HASH_LEN	20		/* SHA-1, GET_HASH */
#define FENCE_LEASE_MS	10000
/* repairs start only this early in the lease, so they end inside it */
#define REPAIR_BY_MS	(FENCE_LEASE_MS / 2)

enum rc_phase { RC_PRECHECK, RC_FENCE, RC_CHECK, RC_REPAIR, RC_VERIFY,
		RC_UNFENCE };

struct rc_op {
	struct peer_req pr;
	int idx;
};

static struct {
	bool busy;
	enum rc_phase phase;
	uint64_t oid;
	uint32_t epoch;
	int nr_tgt;
	struct sd_node tgt[SD_MAX_COPIES];
	uint8_t hash[SD_MAX_COPIES][HASH_LEN];
	int res[SD_MAX_COPIES];
	struct sd_node *mem;	/* members fenced (or asked to be) */
	bool *fenced;
	size_t nr_mem;
	int pending;
	int failed;		/* an op of this phase failed */
	int winner;
	uint64_t fenced_at;
	int outcome;
	void (*done)(int outcome);
} rc;

static void phase_done(void);

static void op_finished(struct rc_op *op, int result)
{
	switch (rc.phase) {
	case RC_PRECHECK:
	case RC_CHECK:
	case RC_VERIFY:
		rc.res[op->idx] = result;
		if (result == SD_RES_SUCCESS)
			memcpy(rc.hash[op->idx], op->pr.rp.hash.digest,
			       HASH_LEN);
		break;
	case RC_FENCE:
		rc.fenced[op->idx] = result == SD_RES_SUCCESS;
		break;
	default:
		break;
	}
	if (result != SD_RES_SUCCESS && rc.phase != RC_UNFENCE)
		rc.failed++;
	free(op);
	if (--rc.pending == 0)
		phase_done();
}

static void peer_op_done(struct peer_req *pr, int result)
{
	op_finished(container_of(pr, struct rc_op, pr), result);
}

/* the local node serves its own ops through the dispatcher */
static void self_op_done(struct request *req)
{
	struct rc_op *op = req->caller;

	op->pr.rp = req->rp;
	free_request(req);
	op_finished(op, (int)op->pr.rp.result);
}

static void send_op(const struct sd_node *n, int idx, uint8_t opcode,
		    uint64_t offset, const struct sd_node *src)
{
	struct rc_op *op = xzalloc(sizeof(*op));
	struct request *req;

	op->idx = idx;
	sd_init_req(&op->pr.rq, opcode);
	op->pr.rq.proto_ver = SD_SHEEP_PROTO_VER;
	op->pr.rq.epoch = rc.epoch;
	if (src) {		/* REPAIR_REPLICA: from @src to @n */
		op->pr.rq.forw.oid = rc.oid;
		memcpy(op->pr.rq.forw.addr, src->nid.addr,
		       sizeof(op->pr.rq.forw.addr));
		op->pr.rq.forw.port = src->nid.port;
	} else {
		op->pr.rq.obj.oid = rc.oid;
		op->pr.rq.obj.offset = offset;
	}
	op->pr.done = peer_op_done;
	rc.pending++;
	if (!node_is_self(n)) {
		peer_submit(&n->nid, &op->pr);
		return;
	}
	req = alloc_request(0);
	req->rq = op->pr.rq;
	req->internal = true;
	req->caller = op;
	req->complete = self_op_done;
	request_submit(req);
}

/*
 * A batch of ops: the local one may complete while the loop still sends,
 * so the batch itself counts as pending until it is all sent.
 */
static void batch_begin(enum rc_phase phase)
{
	rc.phase = phase;
	rc.failed = 0;
	rc.pending++;
}

static void batch_end(void)
{
	if (--rc.pending == 0)
		phase_done();
}

static void hash_all(enum rc_phase phase)
{
	batch_begin(phase);
	for (int i = 0; i < rc.nr_tgt; i++)
		send_op(&rc.tgt[i], i, SD_OP_GET_HASH, 0, NULL);
	batch_end();
}

static bool all_same(void)
{
	for (int i = 1; i < rc.nr_tgt; i++)
		if (memcmp(rc.hash[i], rc.hash[0], HASH_LEN))
			return false;
	return true;
}

/* the copy most copies agree with; on a tie the first in ring order */
static int pick_winner(void)
{
	int best = 0, best_n = 0;

	for (int i = 0; i < rc.nr_tgt; i++) {
		int n = 0;

		for (int j = 0; j < rc.nr_tgt; j++)
			n += !memcmp(rc.hash[i], rc.hash[j], HASH_LEN);
		if (n > best_n) {
			best = i;
			best_n = n;
		}
	}
	return best;
}

static void finish(void)
{
	void (*done)(int outcome) = rc.done;

	free(rc.mem);
	free(rc.fenced);
	rc.mem = NULL;
	rc.fenced = NULL;
	rc.busy = false;
	done(rc.outcome);
}

static void unfence_all(void)
{
	batch_begin(RC_UNFENCE);
	for (size_t i = 0; i < rc.nr_mem; i++)
		if (rc.fenced[i])
			send_op(&rc.mem[i], (int)i, SD_OP_UNFENCE_OBJ, 0, NULL);
	batch_end();
}

static void fence_all(void)
{
	rc.nr_mem = cstate->nr_members;
	rc.mem = xmalloc(rc.nr_mem * sizeof(*rc.mem));
	memcpy(rc.mem, cstate->members, rc.nr_mem * sizeof(*rc.mem));
	rc.fenced = xzalloc(rc.nr_mem * sizeof(*rc.fenced));
	batch_begin(RC_FENCE);
	for (size_t i = 0; i < rc.nr_mem; i++)
		send_op(&rc.mem[i], (int)i, SD_OP_FENCE_OBJ, FENCE_LEASE_MS,
			NULL);
	batch_end();
}

static void repair_losers(void)
{
	batch_begin(RC_REPAIR);
	for (int i = 0; i < rc.nr_tgt; i++)
		if (memcmp(rc.hash[i], rc.hash[rc.winner], HASH_LEN))
			send_op(&rc.tgt[i], i, SD_OP_REPAIR_REPLICA, 0,
				&rc.tgt[rc.winner]);
	batch_end();
}

static bool epoch_moved(void)
{
	return cstate->epoch != rc.epoch || cstate->status != SD_STATUS_OK;
}

static void phase_done(void)
{
	char s[64];

	switch (rc.phase) {
	case RC_PRECHECK:
		if (rc.failed || epoch_moved())
			rc.outcome = RECONCILE_SKIPPED;
		else if (all_same())
			rc.outcome = RECONCILE_SAME;
		else {
			fence_all();
			return;
		}
		finish();
		return;
	case RC_FENCE:
		if (rc.failed || epoch_moved()) {
			rc.outcome = RECONCILE_SKIPPED;
			break;
		}
		rc.fenced_at = now_msec();
		hash_all(RC_CHECK);
		return;
	case RC_CHECK:
		if (rc.failed || epoch_moved()) {
			rc.outcome = RECONCILE_SKIPPED;
			break;
		}
		if (all_same()) {	/* it was a write in flight */
			rc.outcome = RECONCILE_SAME;
			break;
		}
		rc.winner = pick_winner();
		if (now_msec() - rc.fenced_at > REPAIR_BY_MS) {
			sd_warn("copies of object %" PRIx64 " differ; the "
				"fence took too long to repair them now",
				rc.oid);
			rc.outcome = RECONCILE_SKIPPED;
			break;
		}
		sd_notice("copies of object %" PRIx64 " differ (no rot: a "
			  "write that did not reach every copy): making them "
			  "the copy of %s", rc.oid,
			  node_to_str(&rc.tgt[rc.winner], s, sizeof(s)));
		repair_losers();
		return;
	case RC_REPAIR:
		if (epoch_moved()) {
			rc.outcome = RECONCILE_FAILED;
			break;
		}
		hash_all(RC_VERIFY);
		return;
	case RC_VERIFY:
		rc.outcome = !rc.failed && all_same() ? RECONCILE_DONE :
			     RECONCILE_FAILED;
		if (rc.outcome == RECONCILE_FAILED)
			sd_err("copies of object %" PRIx64 " still differ "
			       "after the repair", rc.oid);
		break;
	case RC_UNFENCE:
		finish();
		return;
	}
	unfence_all();
}

bool reconcile_wanted(uint64_t oid)
{
	const struct cluster_view *v = current_view();
	int tgt[SD_MAX_COPIES], n, copies = (int)vdi_copies(oid_to_vid(oid));

	if (rc.busy || !v || cstate->status != SD_STATUS_OK || copies < 2)
		return false;
	n = ring_targets(&v->ring, oid, copies, tgt);
	return n == copies && node_is_self(&v->ring.nodes[tgt[0]]);
}

void reconcile_start(uint64_t oid, void (*done)(int outcome))
{
	const struct cluster_view *v = current_view();
	int tgt[SD_MAX_COPIES];

	rc.busy = true;
	rc.oid = oid;
	rc.epoch = cstate->epoch;
	rc.done = done;
	rc.pending = 0;
	rc.nr_tgt = ring_targets(&v->ring, oid,
				 (int)vdi_copies(oid_to_vid(oid)), tgt);
	for (int i = 0; i < rc.nr_tgt; i++)
		rc.tgt[i] = v->ring.nodes[tgt[i]];
	hash_all(RC_PRECHECK);
}
