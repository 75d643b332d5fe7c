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
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "core/request.h"
#include "gw/gw.h"
#include "store/store.h"

static struct work_queue *index_wq;
static void index_update_submit(struct request *req);

void refcount_init(void)
{
	index_wq = wq_create("index", 1, 4096, sys.loop);
	gateway_set_index_update(index_update_submit);
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

/* ---- the ledger of one replica (DECREF_PEER, I/O worker) ---- */

static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
#define LEDGER_ENTRIES (SD_LEDGER_OBJ_SIZE / 4)

int ledger_decref(uint64_t oid, uint32_t generation, uint32_t count,
		  bool sync)
{
	uint8_t *raw = xmalloc(SD_LEDGER_OBJ_SIZE);
	uint32_t *l = xmalloc(SD_LEDGER_OBJ_SIZE);
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
		existed = false;
		memset(l, 0, SD_LEDGER_OBJ_SIZE);
		l[0] = 1;	/* the original reference */
	} else if (ret != SD_RES_SUCCESS) {
		goto unlock;
	} else {
		le32_array_decode(l, LEDGER_ENTRIES, raw);
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
		ret = existed ? store_remove(obj_key_rep(oid)) :
				SD_RES_SUCCESS;
		goto unlock;
	}
	if (!existed) {
		ret = store_create(obj_key_rep(oid), SD_LEDGER_OBJ_SIZE, NULL,
				   0, 0, sync);
		if (ret != SD_RES_SUCCESS)
			goto unlock;
	}
	le32_array_encode(l, top, raw);
	ret = store_write(obj_key_rep(oid), raw, top * 4, 0, sync);
unlock:
	pthread_mutex_unlock(&ledger_lock);
out:
	free(raw);
	free(l);
	return ret;
}
