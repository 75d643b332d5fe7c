// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Erasure-coded data objects at the gateway (doc/erasure-coding.md §4a).
 *
 * A write of version v: (the version from a small cache, or from an
 * EC_STATE round that first resolves a version left in doubt) the stripes
 * of the range are split and encoded, strip i of them goes to target i as
 * EC_PREPARE(v); once all D+P prepared, the client has its answer and
 * EC_COMMIT(v) goes out without anyone waiting.  Any failure aborts v on
 * every target and leaves the retry to the gateway.  The caller holds the
 * object's write slot, so versions of one object are prepared one after
 * the other, as ec_resolve needs.
 *
 * A write that does not cover whole stripes first reads the stripes it
 * touches (the read path below, at the version before its own), overlays
 * its bytes and writes them whole.
 *
 * A strip that missed a version the others committed (its target did not
 * answer when a version in doubt was resolved) refuses a PREPARE that
 * builds on that version: the object is read whole, the strip rebuilt
 * from the others (EC_INSTALL) and the write retried.
 *
 * A read: EC_READ of the range's stripes from the D data strips; if they
 * all answer at one version with nothing pending, they are joined.  Else
 * every strip is read, a version in doubt is resolved, and D strips of the
 * newest committed version are decoded.
 *
 * Everything runs on the main loop; strips go out as peer requests (the
 * local one through request_submit, like the replicated path).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ec.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "gw/ec_gateway.h"
#include "gw/ec_resolve.h"
#include "gw/sub.h"
#include "net/peer.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "store/store.h"

#define STRIPE		EC_STRIPE_SIZE
#define MAX_ROUNDS	4		/* resolutions before giving up */
#define VCACHE		4096		/* objects whose next version we know */

enum phase {
	P_STATE, P_RESOLVE, P_PREPARE, P_COMMIT, P_ABORT, P_DATA_READ,
	P_READ, P_HEAL_READ, P_INSTALL, P_FIND,
};

enum mode { M_READ, M_WRITE, M_REBUILD, M_CHECK };

struct ec_op {
	struct request *req;		/* NULL once answered */
	void (*done)(struct request *req, uint32_t result);
	/* M_REBUILD: no request; one strip for recovery */
	gw_ec_rebuilt_fn rebuilt;
	void *rebuilt_arg;
	int rebuild_idx;
	uint8_t *out;			/* the rebuilt strip */
	enum mode mode;
	uint64_t oid;
	uint32_t obj_size;
	struct ec_code code;
	uint8_t policy;
	int d, n;
	/*
	 * the strips that have a target: with fewer zones than D+P the
	 * last ones have none (and at least D must)
	 */
	uint32_t present;
	struct sd_node nodes[EC_MAX_STRIPS];
	enum phase phase;
	int pending, rounds;
	uint64_t v;
	uint64_t prev;			/* the version v builds on */
	uint32_t behind;		/* strips to rebuild first */
	uint32_t soff, slen;		/* the range within every strip */
	uint32_t s0, ns;		/* its stripes */
	uint8_t *strip[EC_MAX_STRIPS];
	uint8_t *statebuf;
	uint8_t *merged;		/* read-modify-write: the stripes */
	bool rmw;
	uint32_t res[EC_MAX_STRIPS];
	struct sd_rsp rsp[EC_MAX_STRIPS];
	uint64_t charged;
	/*
	 * gw_ec_rebuild_anywhere: strips asked of every node (@all), stale
	 * copies with a settled version too (SD_FLAG_CMD_WILDCARD); the
	 * newest settled copy of each strip found so far
	 */
	bool wild;
	struct sd_node *all;
	int nall, rot;
	uint64_t best_v[EC_MAX_STRIPS];
	int best[EC_MAX_STRIPS];
};

struct ec_sub {
	struct peer_req pr;
	struct ec_op *op;
	int i;
};

/* per object: the version its next write gets, the one that builds on */
static struct vcache_ent {
	uint64_t oid, next, prev;
} vcache[VCACHE];

static struct vcache_ent *vcache_get(uint64_t oid)
{
	uint64_t h = oid * UINT64_C(0x9e3779b97f4a7c15);

	return vcache[h % VCACHE].oid == oid ? &vcache[h % VCACHE] : NULL;
}

static uint64_t *vcache_slot(uint64_t oid)
{
	struct vcache_ent *e = vcache_get(oid);

	return e ? &e->next : NULL;
}

static void vcache_set(uint64_t oid, uint64_t next, uint64_t prev)
{
	uint64_t h = oid * UINT64_C(0x9e3779b97f4a7c15);

	vcache[h % VCACHE] = (struct vcache_ent){ .oid = next ? oid : 0,
		.next = next, .prev = prev };
}

void gw_ec_forget_vdi(uint32_t vid)
{
	for (size_t i = 0; i < VCACHE; i++)
		if (vcache[i].oid && oid_to_vid(vcache[i].oid) == vid)
			vcache[i] = (struct vcache_ent){ 0 };
}

uint8_t gw_ec_policy(uint64_t oid)
{
	struct vdi_info *vi;

	if (!is_data_obj(oid))
		return 0;
	vi = vdi_get(oid_to_vid(oid), false);
	return vi ? vi->copy_policy : 0;
}

static void op_free(struct ec_op *op)
{
	for (int i = 0; i < op->n; i++)
		free(op->strip[i]);
	free(op->statebuf);
	free(op->merged);
	free(op->out);
	free(op->all);
	budget_release(op->charged);
	free(op);
}

static void op_answer(struct ec_op *op, uint32_t result)
{
	struct request *req = op->req;
	gw_ec_rebuilt_fn rebuilt = op->rebuilt;
	uint8_t *out = op->out;

	op->req = NULL;
	op->rebuilt = NULL;
	op->out = NULL;
	if (req)
		op->done(req, result);
	else if (rebuilt)
		rebuilt(op->rebuilt_arg, result, op->v, out);
	else
		free(out);
}

static void op_finish(struct ec_op *op, uint32_t result)
{
	op_answer(op, result);
	op_free(op);
}

/* ---- fan-out of one peer op to a set of targets ---- */

static void phase_done(struct ec_op *op);

static void sub_done(struct peer_req *pr, int result)
{
	struct ec_sub *s = container_of(pr, struct ec_sub, pr);
	struct ec_op *op = s->op;

	op->res[s->i] = (uint32_t)result;
	op->rsp[s->i] = pr->rp;
	free(s);
	if (!--op->pending)
		phase_done(op);
}

static void sub_setup(struct ec_op *op, struct ec_sub *s, uint8_t opcode,
		      int i)
{
	struct sd_req *rq = &s->pr.rq;

	s->op = op;
	s->i = i;
	s->pr.done = sub_done;
	sd_init_req(rq, opcode);
	rq->proto_ver = SD_SHEEP_PROTO_VER;
	rq->epoch = cstate->epoch;
	rq->obj.oid = op->oid;
	rq->obj.copy_policy = op->policy;
	rq->obj.ec_index = (uint8_t)i;
	rq->obj.cow_oid = op->v;
	switch (opcode) {
	case SD_OP_EC_PREPARE:
	case SD_OP_EC_INSTALL:
		if (opcode == SD_OP_EC_PREPARE)
			ec_prev_set(rq, op->prev);
		else	/* a check's repair replaces bytes of its version */
			rq->obj.copies = op->mode == M_CHECK;
		rq->flags = SD_FLAG_CMD_WRITE;
		rq->data_length = op->slen;
		rq->obj.offset = op->soff;
		s->pr.wbuf = op->strip[i];
		break;
	case SD_OP_EC_READ:
		rq->data_length = op->slen;
		rq->obj.offset = op->soff;
		s->pr.rbuf = op->strip[i];
		s->pr.rbuf_len = op->slen;
		break;
	case SD_OP_EC_STATE:
		rq->data_length = EC_STATE_LEN;
		s->pr.rbuf = op->statebuf + i * EC_STATE_LEN;
		s->pr.rbuf_len = EC_STATE_LEN;
		break;
	default:
		break;
	}
	/* recovery's reads: served from what is there, never parked */
	if (op->mode == M_REBUILD)
		rq->flags |= SD_FLAG_CMD_RECOVERY;
	if (op->wild && (opcode == SD_OP_EC_READ || opcode == SD_OP_EC_STATE))
		rq->flags |= SD_FLAG_CMD_WILDCARD;
}

/* send @opcode to the targets of @mask; false if there were none */
static bool fan_out(struct ec_op *op, enum phase phase, uint8_t opcode,
		    uint64_t oid, uint32_t mask)
{
	int nr = 0;

	op->phase = phase;
	mask &= op->present;
	for (int i = 0; i < op->n; i++) {
		/* not asked (or no target): no answer */
		op->res[i] = SD_RES_NETWORK_ERROR;
		nr += !!(mask & (1u << i));
	}
	op->pending = nr;
	for (int i = 0; i < op->n; i++) {
		struct ec_sub *s;

		if (!(mask & (1u << i)))
			continue;
		s = xzalloc(sizeof(*s));
		sub_setup(op, s, opcode, i);
		s->pr.rq.obj.oid = oid;
		gw_peer_submit(&s->pr, &op->nodes[i]);
	}
	return nr > 0;
}

/* every strip that has a target */
static uint32_t all_mask(const struct ec_op *op)
{
	return op->present;
}

/* ---- versions: what the targets say, resolving what is in doubt ---- */

static uint64_t op_oid(const struct ec_op *op)
{
	return op->oid;
}

static void ask_state(struct ec_op *op)
{
	if (!op->statebuf)
		op->statebuf = xzalloc((size_t)op->n * EC_STATE_LEN);
	fan_out(op, P_STATE, SD_OP_EC_STATE, op_oid(op), all_mask(op));
}

static void write_go(struct ec_op *op);
static void read_all(struct ec_op *op);

/* the states: 0, or SD_RES_* to fail with; *@answered the mask */
static uint32_t collect_states(struct ec_op *op, struct strip_state *st,
			       uint32_t *answered)
{
	int nr = 0;

	*answered = 0;
	for (int i = 0; i < op->n; i++) {
		memset(&st[i], 0, sizeof(st[i]));
		if (op->res[i] == SD_RES_NO_OBJ) {
			*answered |= 1u << i;	/* no strip: version 0 */
			nr++;
		} else if (op->res[i] == SD_RES_SUCCESS &&
			   !strip_state_get(op->statebuf + i * EC_STATE_LEN,
					    op->rsp[i].data_length, &st[i])) {
			*answered |= 1u << i;
			nr++;
		} else {
			sd_debug("strip %d state: %s, %u bytes", i,
				 sd_strerror(op->res[i]),
				 op->rsp[i].data_length);
		}
	}
	return nr * 2 > op->n ? SD_RES_SUCCESS : SD_RES_NETWORK_ERROR;
}

/* after a resolution round: ask again, boundedly */
static void resolved(struct ec_op *op)
{
	if (++op->rounds > MAX_ROUNDS) {
		sd_info("object %" PRIx64 ": still in doubt after %d rounds",
			op_oid(op), MAX_ROUNDS);
		op_finish(op, SD_RES_NETWORK_ERROR);
		return;
	}
	ask_state(op);
}

/*
 * The first version of an object none of whose strips has one: above any
 * version an earlier life of the oid (removed, then written again) may
 * have left in a stale copy that recovery's last pass reads
 * (gw_ec_rebuild_anywhere).  A node keeps such a copy only if it left
 * before the removal, and its leaving began a new epoch: the new life's
 * first version is above every version of the earlier one (2^32 writes
 * would be needed to reach the next epoch's first version).
 */
static uint64_t first_version(void)
{
	return ((uint64_t)cstate->epoch << 32) + 1;
}

static void states_done(struct ec_op *op)
{
	static struct strip_state st[EC_MAX_STRIPS];
	enum ec_holds t[EC_MAX_STRIPS];
	uint32_t answered, ret, holders = 0;
	bool ans[EC_MAX_STRIPS];
	uint64_t vp, high = 0, committed = 0;

	ret = collect_states(op, st, &answered);
	if (ret != SD_RES_SUCCESS) {
		sd_info("object %" PRIx64 ": too few strips answer (%#x)",
			op_oid(op), answered);
		op_finish(op, ret);
		return;
	}
	for (int i = 0; i < op->n; i++) {
		ans[i] = answered & (1u << i);
		if (ans[i] && st[i].high > high)
			high = st[i].high;
		if (ans[i] && st[i].committed > committed)
			committed = st[i].committed;
	}
	vp = ec_newest_pending(st, op->n, ans);
	for (int i = 0; i < op->n; i++)
		sd_debug("strip %d: answered %d committed %" PRIu64 " high %"
			 PRIu64 " pending %d", i, ans[i], st[i].committed,
			 st[i].high, st[i].nr_pending);
	if (!vp) {
		/*
		 * nothing pending: the newest committed version is what a
		 * majority's strips hold (a version commits on a majority)
		 */
		op->v = high || op->mode != M_WRITE ? high + 1 :
						      first_version();
		op->prev = committed;
		if (op->mode != M_WRITE)
			read_all(op);
		else
			write_go(op);
		return;
	}
	for (int i = 0; i < op->n; i++) {
		t[i] = ans[i] ? ec_holds_of(&st[i], vp) : EC_UNKNOWN;
		if (t[i] == EC_HOLDS)
			holders |= 1u << i;
	}
	op->v = vp;
	switch (ec_resolve(op->d, op->n, t)) {
	case EC_ABORT:
		sd_notice("object %" PRIx64 ": version %" PRIu64 " in doubt, "
			  "aborted", op_oid(op), vp);
		fan_out(op, P_RESOLVE, SD_OP_EC_ABORT, op_oid(op), answered);
		return;
	case EC_COMMIT:
		sd_notice("object %" PRIx64 ": version %" PRIu64 " in doubt, "
			  "committed", op_oid(op), vp);
		if (!fan_out(op, P_RESOLVE, SD_OP_EC_COMMIT, op_oid(op),
			     holders))
			resolved(op);
		return;
	case EC_WAIT:
		sd_info("object %" PRIx64 ": version %" PRIu64 " in doubt, "
			"too few answers to decide", op_oid(op), vp);
		op_finish(op, SD_RES_NETWORK_ERROR);
		return;
	}
}

/* ---- writes ---- */

static int alloc_strips(struct ec_op *op)
{
	for (int i = 0; i < op->n; i++)
		op->strip[i] = xmalloc(op->slen ? op->slen : 1);
	op->charged += (uint64_t)op->n * op->slen;
	budget_charge((uint64_t)op->n * op->slen);
	return 0;
}

static void write_prepare(struct ec_op *op)
{
	const uint8_t *src = op->merged ? op->merged : op->req->data;

	ec_split(&op->code, src, op->ns, op->strip);
	ec_encode(&op->code, op->slen, op->strip, op->strip + op->d);
	fan_out(op, P_PREPARE, SD_OP_EC_PREPARE, op_oid(op), all_mask(op));
}

static void prepared(struct ec_op *op)
{
	uint64_t oid = op_oid(op);
	uint32_t bad = SD_RES_SUCCESS, mine = 0;

	op->behind = 0;
	for (int i = 0; i < op->n; i++) {
		if (!(op->present & (1u << i)))
			continue;
		if (op->res[i] == SD_RES_NO_OBJ)
			op->behind |= 1u << i;
		else if (op->res[i] != SD_RES_SUCCESS &&
			 bad == SD_RES_SUCCESS)
			bad = op->res[i];
		/*
		 * STALE_OBJ: the target holds version v or later already,
		 * another gateway's: an ABORT of v there would undo that
		 * one's write, which its client may have been told of
		 */
		if (op->res[i] != SD_RES_STALE_OBJ)
			mine |= 1u << i;
	}
	if (bad == SD_RES_SUCCESS && op->behind &&
	    __builtin_popcount(op->present & ~op->behind) >= op->d) {
		/* undo v, rebuild the strips that are behind, retry */
		vcache_set(oid, 0, 0);
		sd_info("object %" PRIx64 ": strips %#x missed a version "
			"before %" PRIu64 ": rebuilding them", oid, op->behind,
			op->v);
		fan_out(op, P_ABORT, SD_OP_EC_ABORT, oid, all_mask(op));
		return;
	}
	if (op->behind && bad == SD_RES_SUCCESS)
		bad = SD_RES_NETWORK_ERROR;	/* more than P behind */
	op->behind = 0;
	if (bad != SD_RES_SUCCESS) {
		/* nobody was told: undo it where it may be ours, retry */
		vcache_set(oid, 0, 0);
		sd_debug("object %" PRIx64 ": version %" PRIu64 " not "
			 "prepared everywhere (%s): aborting", oid, op->v,
			 sd_strerror(bad));
		op_answer(op, bad == SD_RES_STALE_OBJ ? SD_RES_NETWORK_ERROR :
			  bad);
		if (!fan_out(op, P_ABORT, SD_OP_EC_ABORT, oid, mine))
			op_free(op);
		return;
	}
	vcache_set(oid, op->v + 1, op->v);
	op_answer(op, SD_RES_SUCCESS);
	/* a COMMIT that gets lost is resolved by the next one to look */
	fan_out(op, P_COMMIT, SD_OP_EC_COMMIT, oid, all_mask(op));
}

static void data_read_start(struct ec_op *op);

/* the version is known: write, or first read the stripes to merge into */
static void write_go(struct ec_op *op)
{
	if (op->rmw)
		data_read_start(op);
	else
		write_prepare(op);
}

/* the stripes as they are, read: overlay the client's bytes, write them */
static void rmw_merge(struct ec_op *op, uint8_t *stripes)
{
	struct request *req = op->req;
	uint32_t off = req->rq.obj.offset - op->s0 * STRIPE;

	if (!op->merged) {
		op->charged += (uint64_t)op->ns * STRIPE;
		budget_charge((uint64_t)op->ns * STRIPE);
	}
	free(op->merged);
	op->merged = stripes;
	memcpy(stripes + off, req->data, req->rq.data_length);
	write_prepare(op);
}

static void write_start(struct ec_op *op)
{
	uint64_t *next = vcache_slot(op_oid(op));

	alloc_strips(op);
	if (next) {
		op->v = *next;
		op->prev = vcache_get(op_oid(op))->prev;
		write_go(op);
		return;
	}
	ask_state(op);
}

/* ---- strips that missed a version: rebuilt from the others ---- */

static void heal_read(struct ec_op *op)
{
	uint32_t size = op->obj_size;

	for (int i = 0; i < op->n; i++)
		free(op->strip[i]);
	op->s0 = 0;
	op->ns = size / STRIPE;
	op->soff = 0;
	op->slen = op->ns * (uint32_t)op->code.strip;
	alloc_strips(op);
	fan_out(op, P_HEAL_READ, SD_OP_EC_READ, op_oid(op), all_mask(op));
}

static bool usable(const struct ec_op *op, int i);

/* every strip of the newest version D strips hold; false if none */
static bool heal_decode(struct ec_op *op)
{
	uint8_t *in[EC_MAX_DATA], *data[EC_MAX_DATA];
	int idx[EC_MAX_DATA], k = 0;
	uint64_t v = 0;

	for (int i = 0; i < op->n; i++)
		if (usable(op, i) && !(op->behind & (1u << i)) &&
		    op->rsp[i].obj.offset > v)
			v = op->rsp[i].obj.offset;
	for (int i = 0; i < op->n && k < op->d; i++)
		if (usable(op, i) && !(op->behind & (1u << i)) &&
		    op->rsp[i].obj.offset == v) {
			idx[k] = i;
			in[k++] = op->strip[i];
		}
	if (!v || k < op->d)
		return false;
	for (int j = 0; j < op->d; j++)
		data[j] = xmalloc(op->slen);
	if (ec_decode(&op->code, op->slen, idx, in, data)) {
		for (int j = 0; j < op->d; j++)
			free(data[j]);
		return false;
	}
	for (int j = 0; j < op->d; j++) {
		free(op->strip[j]);
		op->strip[j] = data[j];
	}
	ec_encode(&op->code, op->slen, op->strip, op->strip + op->d);
	op->v = v;
	return true;
}

static void heal_install(struct ec_op *op)
{
	if (!heal_decode(op)) {
		sd_info("object %" PRIx64 ": too few strips agree to rebuild "
			"%#x", op_oid(op), op->behind);
		op_finish(op, SD_RES_NETWORK_ERROR);
		return;
	}
	fan_out(op, P_INSTALL, SD_OP_EC_INSTALL, op_oid(op), op->behind);
}

static void installed(struct ec_op *op)
{
	uint32_t result = SD_RES_SUCCESS;
	uint64_t fixed = 0;

	for (int i = 0; i < op->n; i++) {
		if (!(op->behind & (1u << i)))
			continue;
		sd_notice("object %" PRIx64 ": strip %d rebuilt at version "
			  "%" PRIu64 ": %s", op_oid(op), i, op->v,
			  sd_strerror(op->res[i]));
		if (op->res[i] == SD_RES_SUCCESS)
			fixed |= UINT64_C(1) << i;
		else
			result = op->res[i];
	}
	if (op->mode == M_CHECK) {
		op->req->rp.obj.offset = fixed;
		op_finish(op, result);
		return;
	}
	/* the gateway retries the write, on the strips as they are now */
	op_finish(op, SD_RES_NETWORK_ERROR);
}

/* ---- reads ---- */

/*
 * A check: every strip as it should be, from the data strips decoded;
 * those that are missing, of another version or other bytes are
 * rebuilt.  The reply's obj.offset is the mask of the strips fixed.
 */
static void check_reply(struct ec_op *op, uint8_t *const *data)
{
	uint8_t *want[EC_MAX_STRIPS];

	for (int i = 0; i < op->n; i++)
		want[i] = xmalloc(op->slen);
	for (int j = 0; j < op->d; j++)
		memcpy(want[j], data[j], op->slen);
	ec_encode(&op->code, op->slen, want, want + op->d);
	op->behind = 0;
	for (int i = 0; i < op->n; i++) {
		if (!(op->present & (1u << i)))
			continue;
		if (!usable(op, i) || op->rsp[i].obj.offset != op->v ||
		    memcmp(op->strip[i], want[i], op->slen))
			op->behind |= 1u << i;
	}
	for (int i = 0; i < op->n; i++) {
		free(op->strip[i]);
		op->strip[i] = want[i];
	}
	if (!op->behind) {
		op->req->rp.obj.offset = 0;
		op_finish(op, SD_RES_SUCCESS);
		return;
	}
	fan_out(op, P_INSTALL, SD_OP_EC_INSTALL, op_oid(op), op->behind);
}

/* recovery's strip from the whole object's data strips */
static void rebuild_reply(struct ec_op *op, uint8_t *const *data)
{
	uint8_t *par[EC_MAX_STRIPS];
	int i = op->rebuild_idx, p = op->n - op->d;

	op->out = xmalloc(op->slen);
	if (i < op->d) {
		memcpy(op->out, data[i], op->slen);
	} else {
		for (int j = 0; j < p; j++)
			par[j] = j == i - op->d ? op->out : xmalloc(op->slen);
		ec_encode(&op->code, op->slen, data, par);
		for (int j = 0; j < p; j++)
			if (par[j] != op->out)
				free(par[j]);
	}
	op_finish(op, SD_RES_SUCCESS);
}

/* the range's object bytes from the data strips, into the reply */
static void read_reply(struct ec_op *op, uint8_t *const *data)
{
	struct request *req = op->req;
	uint32_t off;
	uint8_t *buf;

	if (op->mode == M_REBUILD) {
		rebuild_reply(op, data);
		return;
	}
	if (op->mode == M_CHECK) {
		check_reply(op, data);
		return;
	}
	off = req->rq.obj.offset - op->s0 * STRIPE;
	buf = xmalloc((size_t)op->ns * STRIPE);

	ec_join(&op->code, data, op->ns, buf);
	if (op->rmw) {
		rmw_merge(op, buf);
		return;
	}
	memcpy(req->data, buf + off, req->rq.data_length);
	free(buf);
	req->rp.data_length = req->rq.data_length;
	op_finish(op, SD_RES_SUCCESS);
}

/*
 * Whether strip @i as read may be used: committed, or pending at a version
 * this gateway wrote and answered (its COMMIT is on the way)
 */
static bool usable(const struct ec_op *op, int i)
{
	uint64_t *next = vcache_slot(op_oid(op));

	if (op->res[i] != SD_RES_SUCCESS)
		return false;
	if (op->rsp[i].obj.copies == STRIP_FINAL)
		return true;
	return op->rsp[i].obj.copies == STRIP_PENDING && next &&
	       *next == op->rsp[i].obj.offset + 1;
}

/* D usable strips at version @v among those read, decoded */
static void read_decode(struct ec_op *op, uint64_t v)
{
	uint8_t *in[EC_MAX_DATA], *data[EC_MAX_DATA];
	int idx[EC_MAX_DATA], k = 0;

	for (int i = 0; i < op->n && k < op->d; i++)
		if (usable(op, i) && op->rsp[i].obj.offset == v) {
			idx[k] = i;
			in[k++] = op->strip[i];
		}
	if (op->mode == M_REBUILD || op->mode == M_CHECK)
		op->v = v;	/* the version the strips are rebuilt at */
	if (k < op->d) {
		sd_info("object %" PRIx64 ": %d strips of version %" PRIu64
			", %d needed", op_oid(op), k, v, op->d);
		for (int i = 0; i < op->n; i++) {
			char nb[64];

			sd_info("  strip %d on %s: %s, version %" PRIu64
				", state %u", i,
				node_to_str(&op->nodes[i], nb, sizeof(nb)),
				sd_strerror(op->res[i]),
				op->rsp[i].obj.offset, op->rsp[i].obj.copies);
		}
		op_finish(op, SD_RES_NETWORK_ERROR);
		return;
	}
	for (int j = 0; j < op->d; j++)
		data[j] = xmalloc(op->slen);
	if (ec_decode(&op->code, op->slen, idx, in, data)) {
		for (int j = 0; j < op->d; j++)
			free(data[j]);
		op_finish(op, SD_RES_EIO);
		return;
	}
	read_reply(op, data);
	for (int j = 0; j < op->d; j++)
		free(data[j]);
}

static void all_read(struct ec_op *op)
{
	uint64_t v = 0;
	int missing = 0, doubt = 0;

	for (int i = 0; i < op->n; i++) {
		if (op->res[i] == SD_RES_NO_OBJ)
			missing++;
		else if (op->res[i] == SD_RES_SUCCESS && !usable(op, i))
			doubt++;
		else if (usable(op, i) && op->rsp[i].obj.offset > v)
			v = op->rsp[i].obj.offset;
	}
	if (missing == __builtin_popcount(op->present)) {
		if (op->rmw)	/* never written: zeros */
			rmw_merge(op, xzalloc((size_t)op->ns * STRIPE));
		else
			op_finish(op, SD_RES_NO_OBJ);
		return;
	}
	if (doubt && op->wild) {
		/* stale copies are never committed or aborted: give up */
		op_finish(op, SD_RES_NETWORK_ERROR);
		return;
	}
	if (doubt) {
		/* a version in doubt: resolve it, then read again */
		for (int i = 0; i < op->n; i++)
			sd_debug("strip %d: %s, version %" PRIu64 " state %u",
				 i, sd_strerror(op->res[i]),
				 op->rsp[i].obj.offset, op->rsp[i].obj.copies);
		if (++op->rounds > MAX_ROUNDS) {
			sd_info("object %" PRIx64 ": strips still in doubt",
				op_oid(op));
			op_finish(op, SD_RES_NETWORK_ERROR);
			return;
		}
		ask_state(op);
		return;
	}
	read_decode(op, v);
}

static void read_all(struct ec_op *op)
{
	fan_out(op, P_READ, SD_OP_EC_READ, op_oid(op), all_mask(op));
}

/* the data strips answered: join them if they agree */
static void data_read(struct ec_op *op)
{
	uint64_t v = op->rsp[0].obj.offset;

	for (int i = 0; i < op->d; i++)
		if (!usable(op, i) || op->rsp[i].obj.offset != v) {
			read_all(op);
			return;
		}
	read_reply(op, op->strip);
}

static void data_read_start(struct ec_op *op)
{
	fan_out(op, P_DATA_READ, SD_OP_EC_READ, op_oid(op),
		(1u << op->d) - 1);
}

static void read_start(struct ec_op *op)
{
	alloc_strips(op);
	data_read_start(op);
}

/* ---- phases ---- */

static void find_done(struct ec_op *op);

static void phase_done(struct ec_op *op)
{
	switch (op->phase) {
	case P_FIND:
		find_done(op);
		break;
	case P_STATE:
		states_done(op);
		break;
	case P_RESOLVE:
		resolved(op);
		break;
	case P_PREPARE:
		prepared(op);
		break;
	case P_ABORT:
		if (op->behind && op->req) {
			heal_read(op);
			break;
		}
		/* fall through */
	case P_COMMIT:
		op_free(op);
		break;
	case P_HEAL_READ:
		heal_install(op);
		break;
	case P_INSTALL:
		installed(op);
		break;
	case P_READ:
		all_read(op);
		break;
	case P_DATA_READ:
		data_read(op);
		break;
	}
}

/* the code, and strip i on nodes[i] for the @n that have a target */
static int op_setup(struct ec_op *op, uint8_t policy,
		    const struct sd_node *nodes, int n)
{
	op->policy = policy;
	if (ec_init_policy(&op->code, policy) || n < op->code.d ||
	    n > op->code.d + op->code.p)
		return -1;
	op->d = op->code.d;
	op->n = op->code.d + op->code.p;
	op->present = (uint32_t)((UINT64_C(1) << n) - 1);
	memcpy(op->nodes, nodes, sizeof(nodes[0]) * (size_t)n);
	return 0;
}

/* every strip whole, read from every target (a check, a rebuild) */
static void read_whole(struct ec_op *op)
{
	op->ns = op->obj_size / STRIPE;
	op->slen = op->ns * (uint32_t)op->code.strip;
	alloc_strips(op);
	read_all(op);
}

void gw_ec_start(struct request *req, uint8_t policy,
		 const struct sd_node *nodes, int n,
		 void (*done)(struct request *req, uint32_t result))
{
	uint32_t off = req->rq.obj.offset, len = req->rq.data_length;
	bool read = req->rq.opcode == SD_OP_READ_OBJ;
	struct ec_op *op = xzalloc(sizeof(*op));

	op->req = req;
	op->done = done;
	op->oid = req->rq.obj.oid;
	op->obj_size = req->obj_size;
	op->mode = read ? M_READ : M_WRITE;
	if (op_setup(op, policy, nodes, n)) {
		op_finish(op, SD_RES_HALT);
		return;
	}
	if (req->rq.opcode == SD_OP_EC_CHECK) {
		op->mode = M_CHECK;
		read_whole(op);
		return;
	}
	if (!read && !len) {
		op_finish(op, SD_RES_INVALID_PARMS);
		return;
	}
	/* QEMU and NBD write whole sectors, so whole stripes */
	op->rmw = !read && (off % STRIPE || len % STRIPE);
	op->s0 = off / STRIPE;
	op->ns = (off + len + STRIPE - 1) / STRIPE - op->s0;
	op->soff = op->s0 * (uint32_t)op->code.strip;
	op->slen = op->ns * (uint32_t)op->code.strip;
	if (read)
		read_start(op);
	else
		write_start(op);
}

/* an op that rebuilds strip @idx of @oid for recovery */
static struct ec_op *rebuild_op(uint64_t oid, uint32_t obj_size, int idx,
				gw_ec_rebuilt_fn rebuilt, void *arg)
{
	struct ec_op *op = xzalloc(sizeof(*op));

	op->rebuilt = rebuilt;
	op->rebuilt_arg = arg;
	op->rebuild_idx = idx;
	op->mode = M_REBUILD;
	op->oid = oid;
	op->obj_size = obj_size;
	return op;
}

void gw_ec_rebuild(uint64_t oid, uint8_t policy, uint32_t obj_size,
		   const struct sd_node *nodes, int n, int idx,
		   gw_ec_rebuilt_fn rebuilt, void *arg)
{
	struct ec_op *op = rebuild_op(oid, obj_size, idx, rebuilt, arg);

	if (op_setup(op, policy, nodes, n) || idx < 0 || idx >= op->n ||
	    obj_size % STRIPE) {
		op_finish(op, SD_RES_INVALID_PARMS);
		return;
	}
	read_whole(op);
}

/*
 * ---- the last resort of recovery: every strip wherever it is ----
 *
 * Round r asks node (i + r) mod N of all N nodes for the state of strip
 * i, live or a stale copy with a settled version; after N rounds every
 * node was asked for every strip.  The newest settled copy of each strip
 * is then read from where it is and the object decoded as a rebuild
 * does, at the newest version D of them agree on; a strip in doubt
 * anywhere makes it give up, since stale copies are never resolved.
 */
static void find_round(struct ec_op *op)
{
	for (int i = 0; i < op->n; i++)
		op->nodes[i] = op->all[(i + op->rot) % op->nall];
	if (!op->statebuf)
		op->statebuf = xzalloc((size_t)op->n * EC_STATE_LEN);
	fan_out(op, P_FIND, SD_OP_EC_STATE, op_oid(op), op->present);
}

static void find_done(struct ec_op *op)
{
	uint32_t found = 0;

	for (int i = 0; i < op->n; i++) {
		struct strip_state st;
		int at = (i + op->rot) % op->nall;

		if (op->res[i] != SD_RES_SUCCESS ||
		    strip_state_get(op->statebuf + i * EC_STATE_LEN,
				    op->rsp[i].data_length, &st) ||
		    st.nr_pending || st.committed <= op->best_v[i])
			continue;
		op->best_v[i] = st.committed;
		op->best[i] = at;
	}
	if (++op->rot < op->nall) {
		find_round(op);
		return;
	}
	for (int i = 0; i < op->n; i++) {
		if (!op->best_v[i])
			continue;
		found |= 1u << i;
		op->nodes[i] = op->all[op->best[i]];
	}
	if (__builtin_popcount(found) < op->d) {
		sd_debug("object %" PRIx64 ": %d strips anywhere, %d needed",
			 op_oid(op), __builtin_popcount(found), op->d);
		op_finish(op, SD_RES_NO_OBJ);
		return;
	}
	op->present = found;
	read_whole(op);
}

void gw_ec_rebuild_anywhere(uint64_t oid, uint8_t policy, uint32_t obj_size,
			    const struct sd_node *all, int nall, int idx,
			    gw_ec_rebuilt_fn rebuilt, void *arg)
{
	struct ec_op *op = rebuild_op(oid, obj_size, idx, rebuilt, arg);

	op->wild = true;
	if (nall < 1 || ec_init_policy(&op->code, policy) || idx < 0 ||
	    idx >= op->code.d + op->code.p || obj_size % STRIPE) {
		op_finish(op, SD_RES_INVALID_PARMS);
		return;
	}
	op->policy = policy;
	op->d = op->code.d;
	op->n = op->code.d + op->code.p;
	op->present = (uint32_t)((UINT64_C(1) << op->n) - 1);
	op->all = xmalloc(sizeof(*all) * (size_t)nall);
	memcpy(op->all, all, sizeof(*all) * (size_t)nall);
	op->nall = nall;
	find_round(op);
}
