// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Scrub (dog cluster scrub): every node reads each object it stores, one
 * at a time, verifying every block against its checksums.  A copy that
 * fails is repaired from another target of the object: the whole object
 * is read from it (that node verifies it on the way out) and only the
 * failing blocks of the local copy are rewritten (store_repair(), which
 * never undoes a client's write).  Attribute and ledger objects, which
 * dog vdi check does not look at, are covered too.
 *
 * A strip of an erasure-coded object (doc/erasure-coding.md §5) that fails
 * is rebuilt whole instead: decoded from the other strips of the current
 * ring by recovery's strip rebuild, installed at the version they agree
 * on (a write since then makes the install refuse; the next scrub looks
 * again).
 *
 * The first target of an object also compares its copies with each other
 * (reconcile.c): copies that differ without rot, where a write reached
 * some of them and was never acknowledged, are made one.
 *
 * A read or write that fails its checksums here (dispatch.c) queues the
 * object for the same repair at once ("healing"), whether a scrub runs or
 * not: the reader got its data from another copy, the rot is gone soon
 * after.  The queue is bounded; what does not fit waits for a scrub.
 *
 * It runs on the main loop like recovery: disk work on the I/O pool, the
 * fetch through the async peer layer, a pause between objects so that it
 * stays in the background.  Counters live until the daemon stops.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net.h"
#include "proto.h"
#include "ec.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "net/peer.h"
#include "recovery/reconcile.h"
#include "recovery/scrub.h"
#include "recovery/strips.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "store/store.h"

#define SCRUB_PAUSE_MS	5	/* between two objects */
#define HEAL_QUEUE	64	/* objects waiting for a repair after a read */

static struct {
	bool running, stopping;
	bool listed;		/* oids[] is complete: the scrub may take them */
	bool active;		/* an object in hand, or the pause after it */
	bool healing;		/* the object in hand came from heal[] */
	struct obj_key heal[HEAL_QUEUE];
	int nr_heal;
	uint64_t healed, unhealed;	/* since start-up */
	struct work list_work;
	struct obj_key *keys;
	size_t nr, next, cap;
	struct obj_key key;	/* a replica, or a strip */
	uint8_t policy;		/* a strip's code */
	uint64_t version;	/* a strip rebuilt: its version */
	struct strip_state local;	/* a strip's, as verified */
	bool behind;		/* a sound strip that missed a version */
	struct state_ask *asks;	/* the other strips' states */
	int nr_asks, asks_pending;
	uint32_t size;
	void *buf;
	int res, repaired_blocks, src;
	struct work work;
	struct timer timer;
	struct peer_req pr;
	struct scrub_stat st;
} sc;

static void scrub_next(void);

/* " strip N" for a strip, "" for a replica (messages) */
static const char *strip_name(struct obj_key k)
{
	static char buf[16];

	if (k.idx == OBJ_IDX_REPLICA)
		return "";
	snprintf(buf, sizeof(buf), " strip %u", k.idx);
	return buf;
}


static void buf_put(void)
{
	if (!sc.buf)
		return;
	free(sc.buf);
	sc.buf = NULL;
	budget_release(sc.size);
}

static void scrub_finish(void)
{
	buf_put();
	free(sc.keys);
	sc.keys = NULL;
	sd_notice("scrub %s: %" PRIu64 " object(s) verified, %" PRIu64
		  " damaged, %" PRIu64 " repaired, %" PRIu64 " not repaired; "
		  "%" PRIu64 " with copies that differed, %" PRIu64
		  " reconciled", sc.stopping ? "stopped" : "done",
		  sc.st.scanned, sc.st.damaged, sc.st.repaired,
		  sc.st.unrepaired, sc.st.diverged, sc.st.reconciled);
	sc.running = sc.stopping = sc.listed = false;
}

static void scrub_timer(struct timer *t)
{
	scrub_next();
}

static void object_done(bool repaired)
{
	if (sc.res == SD_RES_EIO && sc.healing)
		*(repaired ? &sc.healed : &sc.unhealed) += 1;
	else if (sc.res == SD_RES_EIO && repaired)
		sc.st.repaired++;
	else if (sc.res == SD_RES_EIO)
		sc.st.unrepaired++;
	buf_put();
	sc.timer.fn = scrub_timer;
	timer_add(sys.loop, &sc.timer, SCRUB_PAUSE_MS);
}

/* ---- repair: fetch a good copy, rewrite the failing blocks ---- */

static void repair_work(struct work *w)
{
	if (sc.key.idx != OBJ_IDX_REPLICA) {
		/* the same version, rebuilt from the other strips */
		sc.res = store_strip_install(sc.key, sc.size, sc.version,
					     sc.buf, true);
		return;
	}
	sc.res = store_repair(sc.key, sc.buf, sc.size, &sc.repaired_blocks);
}

static void repair_done(struct work *w)
{
	bool ok = sc.res == SD_RES_SUCCESS;

	if (sc.behind) {
		/* not rot: a strip the others' newer version passed by */
		if (ok)
			sc.st.reconciled++;
		sd_notice("scrub: strip %u of object %" PRIx64 " was behind: "
			  "%s at version %" PRIu64, sc.key.idx, sc.key.oid,
			  ok ? "rebuilt" : "not rebuilt", sc.version);
		sc.res = SD_RES_SUCCESS;
		object_done(false);
		return;
	}

	if (ok && sc.key.idx != OBJ_IDX_REPLICA)
		sd_notice("scrub: rebuilt object %" PRIx64 "%s at version %"
			  PRIu64, sc.key.oid, strip_name(sc.key), sc.version);
	else if (ok)
		sd_notice("scrub: repaired %d block(s) of object %" PRIx64,
			  sc.repaired_blocks, sc.key.oid);
	else
		sd_err("scrub: cannot repair object %" PRIx64 "%s: %s",
		       sc.key.oid, strip_name(sc.key),
		       sd_strerror((uint32_t)sc.res));
	sc.res = SD_RES_EIO;		/* it was damaged */
	object_done(ok);
}

/* sc.buf holds what to repair from (a copy, or a rebuilt strip) */
static void queue_repair(void)
{
	sc.work.fn = repair_work;
	sc.work.done = repair_done;
	if (wq_queue(sys.io_wq, &sc.work))
		object_done(false);
}

/* the ring to repair from; NULL (the object done) while it is changing */
static const struct vnode_ring *settled_ring(void)
{
	if (!current_view() || cstate->status != SD_STATUS_OK) {
		object_done(false);
		return NULL;
	}
	return &current_view()->ring;
}

static void fetch_from_next(void);

static void fetch_done(struct peer_req *pr, int result)
{
	if (result != SD_RES_SUCCESS)
		fetch_from_next();
	else
		queue_repair();
}

/* the other targets of the object in the current ring, in turn */
static void fetch_from_next(void)
{
	const struct vnode_ring *ring = settled_ring();
	int tgt[SD_MAX_COPIES], n;

	if (!ring)
		return;
	n = ring_targets(ring, sc.key.oid,
			 (int)vdi_copies(oid_to_vid(sc.key.oid)), tgt);
	while (sc.src < n && node_is_self(&ring->nodes[tgt[sc.src]]))
		sc.src++;
	if (sc.src >= n) {
		sd_err("scrub: no good copy of object %" PRIx64 " found",
		       sc.key.oid);
		object_done(false);
		return;
	}
	memset(&sc.pr, 0, sizeof(sc.pr));
	sd_init_req(&sc.pr.rq, SD_OP_READ_PEER);
	sc.pr.rq.flags = SD_FLAG_CMD_RECOVERY;
	sc.pr.rq.obj.oid = sc.key.oid;
	sc.pr.rq.obj.tgt_epoch = cstate->epoch;
	sc.pr.rq.data_length = sc.size;
	sc.pr.rbuf = sc.buf;
	sc.pr.rbuf_len = sc.size;
	sc.pr.done = fetch_done;
	peer_submit(&ring->nodes[tgt[sc.src++]].nid, &sc.pr);
}

/* ---- a strip: rebuilt whole from the others, at their version ---- */

static void strip_rebuilt(void *arg, uint32_t result, uint64_t v,
			  uint8_t *strip)
{
	if (result != SD_RES_SUCCESS || !v || !strip) {
		sd_err("scrub: cannot rebuild object %" PRIx64 "%s: %s",
		       sc.key.oid, strip_name(sc.key), sd_strerror(result));
		free(strip);
		object_done(false);
		return;
	}
	/* of the strip's size: it takes the read buffer's place and share */
	free(sc.buf);
	sc.buf = strip;
	sc.version = v;
	queue_repair();
}

/*
 * Decoded from the other strips of the current ring (ours, failing its
 * checksums, counts as lost), then installed at the same version: a
 * write that came in meanwhile makes the install refuse (STALE_OBJ), the
 * next scrub looks again.  A strip this node no longer holds is not
 * repaired: the stale purge removes it.
 */
static void strip_repair(void)
{
	const struct vnode_ring *ring = settled_ring();

	if (!ring)
		return;
	if (strip_index(ring, sc.key.oid, sc.policy) != sc.key.idx ||
	    strip_rebuild(ring, sc.key.oid, sc.policy, sc.key.idx,
			  strip_rebuilt, NULL))
		object_done(false);
}

/* ---- verify one object ---- */

static void verify_work(struct work *w)
{
	sc.res = store_read(sc.key, sc.buf, sc.size, 0);
	if (sc.res == SD_RES_SUCCESS && sc.key.idx != OBJ_IDX_REPLICA &&
	    store_strip_state(sc.key, &sc.local) != SD_RES_SUCCESS)
		sc.local.nr_pending = 1;	/* unknown: not compared */
}

/* ---- a sound strip: is it of the version the others hold? ---- */

struct state_ask {
	struct peer_req pr;
	uint8_t buf[EC_STATE_LEN];
	uint64_t committed;	/* 0: unknown, or a write in flight */
};

/*
 * The newest version at least D of the other strips have committed with
 * nothing pending; ours behind it (and nothing pending here either) is a
 * strip that missed a write: rebuilt at that version like a rotten one
 */
static void states_done(void)
{
	int d = ec_policy_data(sc.policy), n = 0;
	uint64_t v = 0;

	for (int i = 0; i < sc.nr_asks; i++) {
		uint64_t c = sc.asks[i].committed;

		n = 0;
		for (int k = 0; k < sc.nr_asks; k++)
			n += c && sc.asks[k].committed == c;
		if (n >= d && c > v)
			v = c;
	}
	free(sc.asks);
	sc.asks = NULL;
	if (!v || sc.local.nr_pending || sc.local.committed >= v) {
		object_done(false);
		return;
	}
	sc.st.diverged++;
	sc.behind = true;
	strip_repair();
}

static void state_answered(struct peer_req *pr, int result)
{
	struct state_ask *a = container_of(pr, struct state_ask, pr);
	struct strip_state st;

	if (result == SD_RES_SUCCESS &&
	    !strip_state_get(a->buf, pr->rp.data_length, &st) &&
	    !st.nr_pending)
		a->committed = st.committed;
	if (!--sc.asks_pending)
		states_done();
}

static void ask_states(void)
{
	const struct vnode_ring *ring = settled_ring();
	int tgt[SD_MAX_COPIES], n;

	if (!ring)
		return;
	n = strip_targets(ring, sc.key.oid, sc.policy, tgt);
	if (n <= sc.key.idx || !node_is_self(&ring->nodes[tgt[sc.key.idx]])) {
		object_done(false);	/* not ours any more: the purge's */
		return;
	}
	sc.asks = xzalloc(sizeof(*sc.asks) * (size_t)n);
	sc.nr_asks = n;
	sc.asks_pending = n - 1;
	for (int i = 0; i < n; i++) {
		struct state_ask *a = &sc.asks[i];

		if (i == sc.key.idx)
			continue;
		sd_init_req(&a->pr.rq, SD_OP_EC_STATE);
		a->pr.rq.flags = SD_FLAG_CMD_RECOVERY;
		a->pr.rq.epoch = cstate->epoch;
		a->pr.rq.data_length = EC_STATE_LEN;
		a->pr.rq.obj.oid = sc.key.oid;
		a->pr.rq.obj.ec_index = (uint8_t)i;
		a->pr.rq.obj.copy_policy = sc.policy;
		a->pr.rbuf = a->buf;
		a->pr.rbuf_len = sizeof(a->buf);
		a->pr.done = state_answered;
		peer_submit(&ring->nodes[tgt[i]].nid, &a->pr);
	}
	if (!sc.asks_pending)
		states_done();
}

static void reconcile_done(int outcome)
{
	switch (outcome) {
	case RECONCILE_DONE:
		sc.st.diverged++;
		sc.st.reconciled++;
		break;
	case RECONCILE_FAILED:
		sc.st.diverged++;
		break;
	default:
		break;
	}
	object_done(false);
}

static void verify_done(struct work *w)
{
	if (sc.res != SD_RES_NO_OBJ && !sc.healing)	/* not deleted */
		sc.st.scanned++;
	if (sc.res == SD_RES_SUCCESS && !sc.healing &&
	    sc.key.idx == OBJ_IDX_REPLICA && reconcile_wanted(sc.key.oid)) {
		buf_put();
		reconcile_start(sc.key.oid, reconcile_done);
		return;
	}
	if (sc.res == SD_RES_SUCCESS && sc.key.idx != OBJ_IDX_REPLICA &&
	    !sc.healing) {
		ask_states();
		return;
	}
	if (sc.res != SD_RES_EIO) {
		object_done(false);
		return;
	}
	if (!sc.healing)
		sc.st.damaged++;
	if (sc.key.idx != OBJ_IDX_REPLICA) {
		strip_repair();
		return;
	}
	sc.src = 0;
	fetch_from_next();
}

/* the next object: a queued heal first, then the scrub's list */
static void scrub_next(void)
{
	if (sc.nr_heal) {
		sc.key = sc.heal[0];
		memmove(sc.heal, sc.heal + 1, --sc.nr_heal * sizeof(sc.heal[0]));
		sc.healing = true;
	} else if (sc.running && sc.listed && !sc.stopping &&
		   sc.next < sc.nr) {
		sc.key = sc.keys[sc.next++];
		sc.healing = false;
	} else {
		if (sc.running && sc.listed)	/* list_done comes back */
			scrub_finish();
		sc.active = false;
		return;
	}
	sc.active = true;
	sc.behind = false;
	sc.size = sd_obj_size(sc.key.oid, vdi_shift(oid_to_vid(sc.key.oid)));
	if (sc.key.idx != OBJ_IDX_REPLICA) {
		sc.policy = strip_policy(sc.key.oid);
		/* of a VDI no longer coded: left to whoever removes it */
		if (!sc.policy || sc.key.idx >= ec_policy_data(sc.policy) +
						ec_policy_parity(sc.policy)) {
			sc.res = SD_RES_SUCCESS;
			object_done(false);
			return;
		}
		sc.size /= (uint32_t)ec_policy_data(sc.policy);
	}
	/* background work's share of the payload budget, like recovery */
	sc.buf = xmalloc(sc.size);
	budget_charge(sc.size);
	sc.work.fn = verify_work;
	sc.work.done = verify_done;
	if (wq_queue(sys.io_wq, &sc.work)) {
		sc.res = SD_RES_SUCCESS;
		object_done(false);
	}
}

/* ---- the object list ---- */

static int add_key(struct obj_key k, void *arg)
{
	if (sc.nr == sc.cap) {
		sc.cap = sc.cap ? sc.cap * 2 : 1024;
		sc.keys = xrealloc(sc.keys, sc.cap * sizeof(*sc.keys));
	}
	sc.keys[sc.nr++] = k;
	return 0;
}

static void list_work(struct work *w)
{
	store_for_each(add_key, NULL);
}

static void list_done(struct work *w)
{
	sc.st.total = sc.nr;
	sc.listed = true;
	sd_notice("scrub starts: %zu object(s) to verify", sc.nr);
	if (!sc.active)
		scrub_next();
}

int scrub_start(void)
{
	if (sys.gateway)
		return SD_RES_NO_SUPPORT;
	if (sc.running)
		return SD_RES_SUCCESS;		/* already running */
	memset(&sc.st, 0, sizeof(sc.st));
	sc.running = true;
	sc.stopping = sc.listed = false;
	sc.nr = sc.next = sc.cap = 0;
	sc.list_work.fn = list_work;
	sc.list_work.done = list_done;
	if (wq_queue(sys.io_wq, &sc.list_work)) {
		sc.running = false;
		return SD_RES_AGAIN;
	}
	return SD_RES_SUCCESS;
}

void scrub_stop(void)
{
	if (sc.running)
		sc.stopping = true;
}

void scrub_get_stat(struct scrub_stat *st)
{
	*st = sc.st;
	st->running = sc.running;
	st->detected = store_nr_mismatches();
	st->healed = sc.healed;
	st->unhealed = sc.unhealed;
}

static bool key_eq(struct obj_key a, struct obj_key b)
{
	return a.oid == b.oid && a.idx == b.idx;
}

void scrub_heal(uint64_t oid, uint8_t idx)
{
	struct obj_key k = { .oid = oid, .idx = idx };
	static uint64_t warned_at;

	if (sys.gateway || (sc.active && key_eq(sc.key, k)))
		return;
	for (int i = 0; i < sc.nr_heal; i++)
		if (key_eq(sc.heal[i], k))
			return;
	if (sc.nr_heal == HEAL_QUEUE) {
		if (now_msec() - warned_at > 10000) {
			warned_at = now_msec();
			sd_warn("heal queue full: object %" PRIx64 " waits for "
				"a scrub", oid);
		}
		return;
	}
	/* EIO: rot the checksums caught, or the disk failed the read */
	sd_notice("object %" PRIx64 "%s failed its checksums or a read: "
		  "repairing it from %s", oid, strip_name(k),
		  idx == OBJ_IDX_REPLICA ? "another copy" : "the other strips");
	sc.heal[sc.nr_heal++] = k;
	if (!sc.active)
		scrub_next();
}
