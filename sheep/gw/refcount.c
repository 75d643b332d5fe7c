// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reference maintenance on inode index updates (objects.md §9.3).  A
 * client that allocates or drops a block rewrites index entries of its
 * inode; the old entries' references are then dropped: never-shared
 * objects are removed, shared ones are decremented in their ledger, and a
 * ledger that reaches zero frees its data object.
 *
 * The sequence (read old entries, write, clear grefs, drop references) runs
 * on one worker thread, so index updates of this gateway never interleave.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "core/request.h"
#include "gw/gw.h"
#include "store/store.h"

static struct work_queue *index_wq;
static void index_update_submit(struct request *req);
static uint64_t op_seq;		/* the last drop's identity */

void refcount_init(void)
{
	/* identities of this run's drops, apart from every other gateway's */
	if (getrandom(&op_seq, sizeof(op_seq), 0) != sizeof(op_seq))
		op_seq = ((uint64_t)getpid() << 32) ^ (uint64_t)now_msec();
	index_wq = wq_create("index", 1, 4096, sys.loop);
	gateway_set_index_update(index_update_submit);
}

static uint64_t next_op_id(void)
{
	uint64_t id;

	do {
		id = __atomic_add_fetch(&op_seq, 1, __ATOMIC_RELAXED);
	} while (!id);
	return id;
}

static int drop_ref(uint32_t vid, uint32_t idx, int32_t generation,
		    int32_t count)
{
	uint64_t oid = vid_to_data_oid(vid, idx);
	struct sd_req rq;
	uint32_t probe;
	int ret;

	if (!generation && !count) {
		ret = gw_exec_sync(SD_OP_REMOVE_OBJ, oid, NULL, 0, 0, 0, 0);
		return ret == SD_RES_NO_OBJ ? SD_RES_SUCCESS : ret;
	}
	memset(&rq, 0, sizeof(rq));
	rq.opcode = SD_OP_DECREF_OBJ;
	rq.proto_ver = SD_SHEEP_PROTO_VER;
	rq.ref.oid = data_oid_to_ledger_oid(oid);
	rq.ref.generation = (uint32_t)generation;
	rq.ref.count = (uint32_t)count;
	/* the gateway retries with the same request, hence the same id */
	rq.ref.op_id = next_op_id();
	ret = gw_exec_req(&rq, NULL);
	if (ret != SD_RES_SUCCESS)
		return ret;
	/* a ledger that reached zero was removed: nobody refers to oid */
	ret = gw_exec_sync(SD_OP_READ_OBJ, rq.ref.oid, &probe, sizeof(probe),
			   0, 0, 0);
	if (ret != SD_RES_NO_OBJ)
		return ret == SD_RES_SUCCESS ? SD_RES_SUCCESS : ret;
	sd_debug("last reference to %016" PRIx64 " dropped", oid);
	ret = gw_exec_sync(SD_OP_REMOVE_OBJ, oid, NULL, 0, 0, 0, 0);
	return ret == SD_RES_NO_OBJ ? SD_RES_SUCCESS : ret;
}

struct index_range {
	uint32_t first, nr;
	uint32_t *old, *now;
	uint32_t *gref;
};

static int read_range(uint64_t oid, struct index_range *r, uint8_t copies)
{
	uint8_t *buf = xmalloc((size_t)r->nr * 8);
	int ret = gw_exec_sync(SD_OP_READ_OBJ, oid, buf, r->nr * 4,
			       inode_index_offset(r->first), copies, 0);

	if (ret == SD_RES_SUCCESS) {
		le32_array_decode(r->old, r->nr, buf);
		ret = gw_exec_sync(SD_OP_READ_OBJ, oid, buf, r->nr * 8,
				   inode_gref_offset(r->first), copies, 0);
	}
	if (ret == SD_RES_SUCCESS)
		le32_array_decode(r->gref, (size_t)r->nr * 2, buf);
	free(buf);
	return ret;
}

/*
 * The index area of a hyper volume holds its B-tree root (objects.md
 * §12), not vids to drop references to: no reference counting there.
 * The policy is read from the inode, as the VDI state a node merged from
 * others does not carry it.
 */
static int hyper_volume(uint64_t oid, uint8_t copies, bool *hyper)
{
	uint8_t policy;
	int ret = gw_exec_sync(SD_OP_READ_OBJ, oid, &policy, 1,
			       offsetof(struct sd_inode_header, store_policy),
			       copies, 0);

	*hyper = ret == SD_RES_SUCCESS && policy == 1;
	return ret;
}

static int index_update(struct request *req)
{
	uint64_t oid = req->rq.obj.oid;
	uint32_t off = req->rq.obj.offset, len = req->rq.data_length;
	uint32_t vid = oid_to_vid(oid);
	uint8_t copies = req->rq.obj.copies;
	struct index_range r;
	uint8_t *raw;
	bool hyper;
	int ret;

	ret = hyper_volume(oid, copies, &hyper);
	if (ret != SD_RES_SUCCESS)
		return ret;
	/*
	 * A discard would zero 4 bytes of the B-tree root.  So would a
	 * client that takes the root for a flat index (the original QEMU
	 * driver cannot tell): its entry writes are 4 bytes at 4-byte
	 * offsets, where a B-tree's entries and header are 8 or 16 bytes at
	 * 8-byte offsets.  (Even writes of two entries still get through.)
	 */
	if (hyper && (req->flat_index || (off - SD_INODE_INDEX_OFFSET) % 8 ||
		      len % 8))
		return SD_RES_NO_SUPPORT;
	if (hyper)
		return gw_exec_sync(SD_OP_WRITE_OBJ, oid, req->data, len, off,
				    copies, req->rq.flags);
	r.first = (off - SD_INODE_INDEX_OFFSET) / 4;
	r.nr = (off + len - 1 - SD_INODE_INDEX_OFFSET) / 4 - r.first + 1;
	r.old = xzalloc((size_t)r.nr * 4);
	r.now = xzalloc((size_t)r.nr * 4);
	r.gref = xzalloc((size_t)r.nr * 8);
	ret = read_range(oid, &r, copies);
	if (ret != SD_RES_SUCCESS)
		goto out;
	ret = gw_exec_sync(SD_OP_WRITE_OBJ, oid, req->data, len, off, copies,
			   req->rq.flags);
	if (ret != SD_RES_SUCCESS)
		goto out;
	/* the entries as they are now: old ones overlaid with the write */
	raw = xmalloc((size_t)r.nr * 4);
	le32_array_encode(r.old, r.nr, raw);
	memcpy(raw + (off - inode_index_offset(r.first)), req->data, len);
	le32_array_decode(r.now, r.nr, raw);
	memset(raw, 0, (size_t)r.nr * 4);
	free(raw);
	raw = xzalloc((size_t)r.nr * 8);
	ret = gw_exec_sync(SD_OP_WRITE_OBJ, oid, raw, r.nr * 8,
			   inode_gref_offset(r.first), copies,
			   SD_FLAG_CMD_WRITE);
	free(raw);
	if (ret != SD_RES_SUCCESS)
		goto out;
	for (uint32_t i = 0; i < r.nr; i++) {
		int dr;

		if (!r.old[i] || r.old[i] == r.now[i])
			continue;
		dr = drop_ref(r.old[i], r.first + i, (int32_t)r.gref[2 * i],
			      (int32_t)r.gref[2 * i + 1]);
		if (dr != SD_RES_SUCCESS)
			sd_err("dropping %x:%u failed: %s (object may leak)",
			       r.old[i], r.first + i,
			       sd_strerror((uint32_t)dr));
	}
	(void)vid;
out:
	free(r.old);
	free(r.now);
	free(r.gref);
	return ret;
}

static void index_work(struct work *w)
{
	struct request *req = container_of(w, struct request, work);

	req->rp.result = (uint32_t)index_update(req);
}

static void index_done(struct work *w)
{
	struct request *req = container_of(w, struct request, work);

	request_done(req);
}

static void index_update_submit(struct request *req)
{
	req->work.fn = index_work;
	req->work.done = index_done;
	if (wq_queue(index_wq, &req->work)) {
		req->rp.result = SD_RES_AGAIN;
		request_done(req);
	}
}

/*
 * ---- the ledger of one replica (DECREF_PEER, I/O worker) ----
 *
 * A drop the gateway sends again (a replica did not answer; the epoch
 * changed) reaches replicas that applied it already, and a new replica
 * may have recovered a copy that has it.  Applied twice, a drop makes the
 * ledger reach zero while references remain, and the object goes (test
 * 188).  So a drop carries an identity (ref.op_id), and the ledger keeps
 * the last LEDGER_RING of them in its tail, which recovery copies with
 * the counters: a drop found there was applied.  The tail is written
 * before the counters: a crash between the two loses the drop (a leak,
 * which reclaim.c ends once the family is deleted), never applies it twice.
 * Copies that applied the same drops in another order (two gateways'
 * drops crossing) differ in the tail only: GET_HASH, the scrub's
 * comparison of copies, hashes the counters alone (ops.c).
 *
 * A ledger this node does not hold may be one recovery has yet to bring
 * (a new target): a drop with an identity says so (NO_OBJ) unless
 * @absent_ok, and ops/ parks it for recovery; only when nothing will
 * come does it start afresh here, from the original reference.
 */

static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;

#define LEDGER_RING	64
/* the tail: LEDGER_RING ids, the next slot (u32), a u32 reserved */
#define LEDGER_TAIL_SIZE	(LEDGER_RING * 8 + 8)
#define LEDGER_TAIL	LEDGER_COUNTERS_SIZE
#define LEDGER_ENTRIES	(LEDGER_TAIL / 4)
_Static_assert(LEDGER_TAIL + LEDGER_TAIL_SIZE == SD_LEDGER_OBJ_SIZE,
	       "the ledger's tail ends the object");

struct ledger_tail {
	uint64_t ids[LEDGER_RING];
	uint32_t next;
};

static void tail_decode(struct ledger_tail *t, const uint8_t *raw)
{
	le64_array_decode(t->ids, LEDGER_RING, raw);
	t->next = get_le32(raw + 8 * LEDGER_RING) % LEDGER_RING;
}

static void tail_encode(const struct ledger_tail *t, uint8_t *raw)
{
	memset(raw, 0, LEDGER_TAIL_SIZE);
	le64_array_encode(t->ids, LEDGER_RING, raw);
	put_le32(raw + 8 * LEDGER_RING, t->next);
}

static bool tail_has(const struct ledger_tail *t, uint64_t id)
{
	for (int i = 0; i < LEDGER_RING; i++)
		if (t->ids[i] == id)
			return true;
	return false;
}

/* the counters (top * 4 bytes), after the tail when there is an id */
static int ledger_store(uint64_t oid, bool existed, const uint8_t *raw,
			uint32_t top, uint64_t op_id, bool sync)
{
	struct obj_key k = obj_key_rep(oid);
	int ret;

	if (!existed) {
		ret = op_id ? store_create(k, SD_LEDGER_OBJ_SIZE,
					   raw + LEDGER_TAIL, LEDGER_TAIL_SIZE,
					   LEDGER_TAIL, sync) :
			      store_create(k, SD_LEDGER_OBJ_SIZE, NULL, 0, 0,
					   sync);
	} else {
		ret = op_id ? store_write(k, raw + LEDGER_TAIL,
					  LEDGER_TAIL_SIZE, LEDGER_TAIL, sync) :
			      SD_RES_SUCCESS;
	}
	if (ret != SD_RES_SUCCESS)
		return ret;
	return store_write(k, raw, top * 4, 0, sync);
}

int ledger_decref(uint64_t oid, uint32_t generation, uint32_t count,
		  uint64_t op_id, bool absent_ok, bool sync)
{
	uint8_t *raw = xmalloc(SD_LEDGER_OBJ_SIZE);
	uint32_t *l = xmalloc(LEDGER_ENTRIES * 4);
	struct ledger_tail tail = { 0 };
	bool existed = true, empty = true;
	uint32_t top;
	int ret;

	if (generation >= LEDGER_ENTRIES - 1) {
		ret = SD_RES_INVALID_PARMS;
		goto out;
	}
	pthread_mutex_lock(&ledger_lock);
	ret = store_read(obj_key_rep(oid), raw, SD_LEDGER_OBJ_SIZE, 0);
	if (ret == SD_RES_NO_OBJ) {
		if (op_id && !absent_ok)
			goto unlock;	/* recovery may bring it */
		existed = false;
		memset(l, 0, LEDGER_ENTRIES * 4);
		l[0] = 1;	/* the original reference */
	} else if (ret != SD_RES_SUCCESS) {
		goto unlock;
	} else {
		le32_array_decode(l, LEDGER_ENTRIES, raw);
		tail_decode(&tail, raw + LEDGER_TAIL);
		if (op_id && tail_has(&tail, op_id)) {
			sd_debug("drop %" PRIx64 " on %016" PRIx64 " was "
				 "applied already", op_id, oid);
			goto unlock;	/* SD_RES_SUCCESS */
		}
	}
	l[generation] -= 1;
	l[generation + 1] += count;
	top = generation + 2;
	for (uint32_t i = 0; i < LEDGER_ENTRIES; i++) {
		if (l[i]) {
			empty = false;
			if (i >= top)
				top = i + 1;
		}
	}
	if (empty) {
		/*
		 * The last reference went: the gateway removes the object.
		 * A drop sent again after this finds no ledger and starts
		 * afresh: a leak, not a loss.
		 */
		ret = existed ? store_remove(obj_key_rep(oid)) :
				SD_RES_SUCCESS;
		goto unlock;
	}
	if (op_id) {
		tail.ids[tail.next] = op_id;
		tail.next = (tail.next + 1) % LEDGER_RING;
	}
	le32_array_encode(l, top, raw);
	tail_encode(&tail, raw + LEDGER_TAIL);
	ret = ledger_store(oid, existed, raw, top, op_id, sync);
unlock:
	pthread_mutex_unlock(&ledger_lock);
out:
	free(raw);
	free(l);
	return ret;
}
