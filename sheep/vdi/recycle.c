// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * VID recycling: cluster flag 0x10, dog cluster format -R (objects.md
 * §6.4, §11; doc/vid-recycling.md has the reasoning).
 *
 * When a DEL_VDI leaves a whole family deleted (a root and every
 * descendant, each inode cleared), the node that ran it sends
 * RECYCLE_VDIS.  Its work part turns each inode into a free marker: the
 * inode object stays, with the next incarnation number (gen) of the vid
 * and the FREE flag.  Its main part, on every node, marks the vids free
 * in the VDI table and removes the node's own objects of them (working
 * and stale copies; the marker stays).
 *
 * Two hazards decide the rest:
 * - A node that missed the recycling (down, or stopped before it got the
 *   message) still has the old family in its inodes and objects.  What
 *   it says of a vid is ordered by gen (state/vdi.c): a free marker of
 *   gen g, then the VDI of gen g, then its deletion, then the marker of
 *   gen g + 1, so the old family never comes back into a table.  Its old
 *   objects are stale copies once it rejoins a cluster that moved on
 *   (linked back only when their hash matches a current copy); a node
 *   that did not stale them learns the marker at join and removes them.
 * - An old object left under a reused vid would become the new VDI's
 *   data once recovery finds it "already present".  So a free vid is
 *   taken by NEW_VDI only when every member answers RECYCLE_BUSY with
 *   success: it knows the vid is free, removed its objects, and has
 *   merged every other node's VDI state.  Until then NEW_VDI takes
 *   another vid.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "event.h"
#include "inode.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "work.h"
#include "core/core.h"
#include "gw/gw.h"
#include "net/peer.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "store/store.h"
#include "vdi/recycle.h"

#define POLL_TRIES	8	/* free vids polled per NEW_VDI */
#define RETRY_MS	5000	/* a failed removal is tried again */

/* removals (one batch at a time) and family checks: workers of their own */
static struct work_queue *recycle_wq, *check_wq;
static uint64_t total_removed;

bool recycling(void)
{
	return cstate->flags & SD_CLUSTER_FLAG_RECYCLE_VID;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int read_header(uint32_t vid, struct sd_inode_header *h)
{
	uint8_t *buf = xmalloc(SD_INODE_HEADER_SIZE);
	int ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(vid), buf,
			       SD_INODE_HEADER_SIZE, 0, 0, 0);

	if (ret == SD_RES_SUCCESS)
		inode_header_decode(h, buf);
	free(buf);
	return ret;
}

static uint32_t header_gen(const struct sd_inode_header *h)
{
	return h->kelpie_magic == INODE_KELPIE_MAGIC ? h->recycle_gen : 0;
}

static bool header_free(const struct sd_inode_header *h)
{
	return h->kelpie_magic == INODE_KELPIE_MAGIC &&
	       (h->kelpie_flags & INODE_FREE);
}

/*
 * The gen a recycling of this inode gives: the next, or the marker's own
 * when an earlier RECYCLE_VDIS wrote the marker and then failed
 */
static uint32_t next_gen(const struct sd_inode_header *h)
{
	return header_free(h) ? header_gen(h) : header_gen(h) + 1;
}

static int write_marker(struct sd_inode_header *h, uint32_t gen)
{
	uint8_t *buf = xmalloc(SD_INODE_HEADER_SIZE);
	int ret;

	h->kelpie_magic = INODE_KELPIE_MAGIC;
	h->recycle_gen = gen;
	h->kelpie_flags = INODE_FREE;
	inode_header_encode(h, buf);
	ret = gw_exec_sync(SD_OP_WRITE_OBJ, vid_to_vdi_oid(h->vdi_id), buf,
			   SD_INODE_HEADER_SIZE, 0, h->nr_copies,
			   SD_FLAG_CMD_WRITE);
	free(buf);
	return ret;
}

/* ---- removing this node's objects of free vids ---- */

/*
 * Vids whose objects are still to go (main thread); the batch a worker
 * removes now is in @batch
 */
static uint32_t *pending, *batch;
static size_t nr_pending, cap_pending, nr_batch;
static bool removing, failed;
static struct timer retry_timer;
static struct work remove_work;
static uint64_t batch_removed;

static bool in_list(const uint32_t *v, size_t nr, uint32_t vid)
{
	for (size_t i = 0; i < nr; i++)
		if (v[i] == vid)
			return true;
	return false;
}

struct key_list {
	const uint32_t *vids;	/* sorted */
	size_t nr_vids;
	struct obj_key *keys;
	size_t nr, cap;
};

static bool vid_listed(const struct key_list *kl, uint64_t oid)
{
	uint32_t vid = oid_to_vid(oid);

	/* the free marker stays: it holds the vid's next gen */
	if (is_vdi_obj(oid))
		return false;
	return bsearch(&vid, kl->vids, kl->nr_vids, sizeof(vid), cmp_u32);
}

static int collect(struct obj_key k, void *arg)
{
	struct key_list *kl = arg;

	if (!vid_listed(kl, k.oid))
		return 0;
	if (kl->nr == kl->cap) {
		kl->cap = kl->cap ? kl->cap * 2 : 256;
		kl->keys = xrealloc(kl->keys, kl->cap * sizeof(*kl->keys));
	}
	kl->keys[kl->nr++] = k;
	return 0;
}

static int remove_stale(struct key_list *kl, uint64_t *removed)
{
	size_t n = (size_t)store_nr_stale();
	struct obj_key *keys;
	uint32_t *epochs;
	int ret = 0;

	if (!n)
		return 0;
	keys = xmalloc(n * sizeof(*keys));
	epochs = xmalloc(n * sizeof(*epochs));
	n = (size_t)store_list_stale(keys, epochs, n);
	for (size_t i = 0; i < n; i++) {
		int r;

		if (!vid_listed(kl, keys[i].oid))
			continue;
		r = store_drop_stale(keys[i], epochs[i]);
		if (r == SD_RES_SUCCESS)
			(*removed)++;
		else if (r != SD_RES_NO_OBJ)
			ret = -1;
	}
	free(keys);
	free(epochs);
	return ret;
}

static void remove_fn(struct work *w)
{
	struct key_list kl = { .vids = batch, .nr_vids = nr_batch };

	batch_removed = 0;
	failed = false;
	if (store_for_each(collect, &kl))
		failed = true;
	for (size_t i = 0; i < kl.nr; i++) {
		int ret = store_remove(kl.keys[i]);

		if (ret == SD_RES_SUCCESS) {
			batch_removed++;
		} else if (ret != SD_RES_NO_OBJ) {
			sd_err("cannot remove %" PRIx64 " of recycled VDI %"
			       PRIx32 ": %s", kl.keys[i].oid,
			       oid_to_vid(kl.keys[i].oid),
			       sd_strerror((uint32_t)ret));
			failed = true;
		}
	}
	free(kl.keys);
	if (remove_stale(&kl, &batch_removed))
		failed = true;
}

static void start_removal(void);

static void retry_fn(struct timer *t)
{
	start_removal();
}

static void add_pending(uint32_t vid)
{
	if (in_list(pending, nr_pending, vid))
		return;
	if (nr_pending == cap_pending) {
		cap_pending = cap_pending ? cap_pending * 2 : 64;
		pending = xrealloc(pending, cap_pending * sizeof(*pending));
	}
	pending[nr_pending++] = vid;
}

static void remove_done(struct work *w)
{
	removing = false;
	total_removed += batch_removed;
	if (batch_removed)
		sd_notice("%" PRIu64 " object(s) of %zu recycled VDI(s) removed",
			  batch_removed, nr_batch);
	if (failed) {
		/* the vids stay busy: no reuse until their objects are gone */
		for (size_t i = 0; i < nr_batch; i++)
			add_pending(batch[i]);
		sd_err("objects of %zu recycled VDI(s) could not all be "
		       "removed: their ids are not reused; trying again in "
		       "%d s", nr_batch, RETRY_MS / 1000);
		nr_batch = 0;
		timer_add(sys.loop, &retry_timer, RETRY_MS);
		return;
	}
	nr_batch = 0;
	start_removal();
}

static void start_removal(void)
{
	if (removing || !nr_pending)
		return;
	free(batch);
	batch = xmalloc(nr_pending * sizeof(*batch));
	memcpy(batch, pending, nr_pending * sizeof(*batch));
	/* sorted here: recycle_busy() reads it while the worker runs */
	qsort(batch, nr_pending, sizeof(*batch), cmp_u32);
	nr_batch = nr_pending;
	nr_pending = 0;
	removing = true;
	remove_work.fn = remove_fn;
	remove_work.done = remove_done;
	if (wq_queue(recycle_wq, &remove_work)) {
		/* back into the list, tried again on the timer */
		removing = false;
		for (size_t i = 0; i < nr_batch; i++)
			add_pending(batch[i]);
		nr_batch = 0;
		timer_add(sys.loop, &retry_timer, RETRY_MS);
	}
}

/* state/vdi.c: @vid became free in this node's table */
static void vid_freed(uint32_t vid)
{
	if (sys.gateway)
		return;
	/* a batch running now may have passed the vid's objects already */
	add_pending(vid);
	start_removal();
}

int recycle_busy(struct request *req)
{
	uint32_t vid = oid_to_vid(req->rq.obj.oid);

	if (!vdi_test_free(vid) || vdi_syncing() ||
	    in_list(pending, nr_pending, vid) ||
	    (removing && in_list(batch, nr_batch, vid)))
		return SD_RES_AGAIN;
	return SD_RES_SUCCESS;
}

uint64_t recycle_removed(void)
{
	return total_removed;
}

void recycle_init(void)
{
	recycle_wq = wq_create("recycle", 1, 1, sys.loop);
	check_wq = wq_create("recycle-check", 1, 64, sys.loop);
	retry_timer.fn = retry_fn;
	vdi_set_free_hook(vid_freed);
}

/* ---- after a DEL_VDI: is the whole family deleted? ---- */

struct fam_vdi {
	uint32_t vid, parent;		/* vid first: cmp_u32 sorts by it */
	struct fam_vdi *up;		/* the parent's entry, or NULL */
	uint32_t family;		/* 0: none looked at yet */
	uint8_t deleted, locked;
};

struct fam_check {
	struct work work;
	uint32_t vid;			/* the VDI just deleted; 0: every one */
	struct fam_vdi *v;		/* the table, sorted by vid */
	size_t nr, cap;
	uint8_t *pairs;			/* RECYCLE_VDIS payload */
	size_t nr_pairs;
};

static void copy_vdi(uint32_t vid, struct vdi_info *vi, void *arg)
{
	struct fam_check *fc = arg;

	if (vi->recycled)
		return;
	if (fc->nr == fc->cap) {
		fc->cap = fc->cap ? fc->cap * 2 : 256;
		fc->v = xrealloc(fc->v, fc->cap * sizeof(*fc->v));
	}
	fc->v[fc->nr++] = (struct fam_vdi){
		.vid = vid, .parent = vi->parent_vid,
		.deleted = vi->deleted || vdi_test_deleted(vid),
		.locked = vi->lock_state != LOCK_STATE_UNLOCKED,
	};
}

static struct fam_vdi *fam_find(struct fam_check *fc, uint32_t vid)
{
	struct fam_vdi key = { .vid = vid };

	return vid ? bsearch(&key, fc->v, fc->nr, sizeof(key), cmp_u32) :
		     NULL;
}

/*
 * Tag with @family the family of @start: its root (up the parent links)
 * and every descendant of the root.  How many.
 */
static size_t mark_family(struct fam_check *fc, struct fam_vdi *start,
			  uint32_t family)
{
	struct fam_vdi *root = start, *p;
	size_t n = 1;
	bool more = true;

	for (size_t steps = 0; steps < fc->nr; steps++) {
		p = root->up;
		if (!p || p == root)
			break;
		root = p;
	}
	root->family = family;
	/* whoever names a member as parent, to a fixed point */
	while (more) {
		more = false;
		for (size_t i = 0; i < fc->nr; i++) {
			p = fc->v[i].up;
			if (fc->v[i].family == family || !p ||
			    p->family != family)
				continue;
			fc->v[i].family = family;
			more = true;
			n++;
		}
	}
	return n;
}

/*
 * Every member deleted, none held by a client, each inode cleared (a
 * flat VDI whose index still names objects keeps its inode): add its
 * (vid, next gen) pairs to the payload
 */
static void check_family(struct fam_check *fc, uint32_t family, size_t n)
{
	size_t first = fc->nr_pairs;

	if (n > RECYCLE_FAMILY_MAX - fc->nr_pairs)
		return;
	for (size_t i = 0; i < fc->nr; i++)
		if (fc->v[i].family == family &&
		    (!fc->v[i].deleted || fc->v[i].locked))
			return;
	for (size_t i = 0; i < fc->nr; i++) {
		struct sd_inode_header h;

		if (fc->v[i].family != family)
			continue;
		if (read_header(fc->v[i].vid, &h) != SD_RES_SUCCESS ||
		    h.name[0] || h.vdi_size) {
			fc->nr_pairs = first;
			return;
		}
		put_le32(fc->pairs + fc->nr_pairs * 8, fc->v[i].vid);
		put_le32(fc->pairs + fc->nr_pairs * 8 + 4, next_gen(&h));
		fc->nr_pairs++;
	}
}

static void check_fn(struct work *w)
{
	struct fam_check *fc = container_of(w, struct fam_check, work);
	uint32_t family = 0;

	fc->pairs = xmalloc(RECYCLE_FAMILY_MAX * 8);
	for (size_t i = 0; i < fc->nr; i++)
		fc->v[i].up = fam_find(fc, fc->v[i].parent);
	for (size_t i = 0; i < fc->nr; i++) {
		struct fam_vdi *f = &fc->v[i];

		if (f->family || !f->deleted || (fc->vid && f->vid != fc->vid))
			continue;
		family++;
		check_family(fc, family, mark_family(fc, f, family));
	}
}

static void check_done(struct work *w)
{
	struct fam_check *fc = container_of(w, struct fam_check, work);
	struct request *req;

	if (fc->nr_pairs) {
		req = alloc_request((uint32_t)(fc->nr_pairs * 8));
		req->rq.opcode = SD_OP_RECYCLE_VDIS;
		req->rq.proto_ver = SD_SHEEP_PROTO_VER;
		req->rq.flags = SD_FLAG_CMD_WRITE;
		req->rq.data_length = (uint32_t)(fc->nr_pairs * 8);
		memcpy(req->data, fc->pairs, fc->nr_pairs * 8);
		req->internal = true;
		req->complete = free_request;
		request_submit(req);
	}
	free(fc->pairs);
	free(fc->v);
	free(fc);
}

static void start_check(uint32_t vid)
{
	struct fam_check *fc;

	if (!recycling() || !check_wq)
		return;
	if (!vdi_lineage_known()) {
		sd_info("deleted VDIs are not recycled: the VDI table lacks a "
			"VDI or a parent");
		return;
	}
	fc = xzalloc(sizeof(*fc));
	fc->vid = vid;
	vdi_for_each(copy_vdi, fc);
	qsort(fc->v, fc->nr, sizeof(*fc->v), cmp_u32);
	fc->work.fn = check_fn;
	fc->work.done = check_done;
	if (wq_queue(check_wq, &fc->work)) {
		/* the sweep after the next recovery looks again */
		sd_warn("too many recycling checks queued: VDI %" PRIx32
			"'s family is not checked now", vid);
		free(fc->v);
		free(fc);
	}
}

void recycle_after_delete(uint32_t vid)
{
	start_check(vid);
}

/*
 * Every deleted family, when the whole cluster finished a recovery: a
 * node that ran a DEL_VDI may have died before it recycled the family.
 * The first member asks (any may: a second RECYCLE_VDIS of the same
 * vids finds them free and sends nothing).
 */
void recycle_sweep(void)
{
	for (size_t i = 0; i < cstate->nr_members; i++) {
		if (!cstate->members[i].nr_vnodes)
			continue;
		if (node_is_self(&cstate->members[i]))
			start_check(0);
		return;
	}
}

/* ---- RECYCLE_VDIS ---- */

static bool pairs_valid(const struct sd_req *rq)
{
	return rq->data_length && rq->data_length % 8 == 0 &&
	       rq->data_length <= RECYCLE_FAMILY_MAX * 8;
}

/*
 * Originator, cluster worker (the cluster is blocked): each vid is still
 * a deleted VDI with a cleared inode of the gen before; its inode becomes
 * the free marker of the next gen.  Anything else (recycled meanwhile by
 * another node's message) sends nothing.
 */
int recycle_work(struct request *req)
{
	const uint8_t *p = req->data;
	uint32_t n = req->rq.data_length / 8;

	if (!recycling() || !pairs_valid(&req->rq))
		return SD_RES_INVALID_PARMS;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t vid = get_le32(p + i * 8), gen = get_le32(p + i * 8 + 4);
		struct sd_inode_header h;
		int ret;

		if (!vid || vid >= SD_NR_VDIS || !vdi_test_inuse(vid) ||
		    !vdi_test_deleted(vid) || vdi_test_free(vid) ||
		    vdi_locked(vid, NULL))
			return SD_RES_AGAIN;
		ret = read_header(vid, &h);
		if (ret != SD_RES_SUCCESS)
			return ret;
		if (h.name[0] || h.vdi_size || next_gen(&h) != gen)
			return SD_RES_AGAIN;
		ret = write_marker(&h, gen);
		if (ret != SD_RES_SUCCESS) {
			sd_err("cannot make the inode of VDI %" PRIx32 " a free "
			       "marker: %s", vid, sd_strerror((uint32_t)ret));
			return ret;
		}
	}
	return SD_RES_SUCCESS;
}

/* every node, in message order */
int recycle_main(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		 const struct cluster_ctx *ctx)
{
	const uint8_t *p = data;
	uint32_t n = req->data_length / 8;

	if (!recycling() || !pairs_valid(req))
		return SD_RES_INVALID_PARMS;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t vid = get_le32(p + i * 8), gen = get_le32(p + i * 8 + 4);

		if (!vid || vid >= SD_NR_VDIS)
			continue;
		vdi_mark_free(vid, (uint16_t)gen);
	}
	sd_info("%" PRIu32 " VDI id(s) recycled, from %" PRIx32, n,
		get_le32(p));
	return SD_RES_SUCCESS;
}

/* ---- NEW_VDI: may a free vid be taken? ---- */

/* the cluster worker asks every member on the main thread */
struct poll {
	struct loop_call call;
	uint32_t vid;
	int left;
	bool ok;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

struct poll_req {
	struct peer_req pr;
	struct poll *poll;
};

static void poll_finish(struct poll *pl)
{
	pthread_mutex_lock(&pl->lock);
	pl->done = true;
	pthread_cond_signal(&pl->cond);
	pthread_mutex_unlock(&pl->lock);
}

static void poll_answer(struct poll *pl, int result)
{
	if (result != SD_RES_SUCCESS)
		pl->ok = false;
	if (--pl->left == 0)
		poll_finish(pl);
}

static void poll_done(struct peer_req *pr, int result)
{
	struct poll_req *r = container_of(pr, struct poll_req, pr);

	poll_answer(r->poll, result);
	free(r);
}

static void poll_start(struct loop_call *c)
{
	struct poll *pl = container_of(c, struct poll, call);
	struct request self = { .rq.obj.oid = vid_to_vdi_oid(pl->vid) };

	pl->ok = cstate->status == SD_STATUS_OK;
	pl->left = 1;
	for (size_t i = 0; i < cstate->nr_members; i++) {
		struct poll_req *r;

		if (node_is_self(&cstate->members[i]))
			continue;
		r = xzalloc(sizeof(*r));
		r->poll = pl;
		sd_init_req(&r->pr.rq, SD_OP_RECYCLE_BUSY);
		r->pr.rq.obj.oid = vid_to_vdi_oid(pl->vid);
		r->pr.done = poll_done;
		pl->left++;
		peer_submit(&cstate->members[i].nid, &r->pr);
	}
	poll_answer(pl, recycle_busy(&self));
}

static bool members_ready(uint32_t vid)
{
	struct poll pl = { .vid = vid };

	pthread_mutex_init(&pl.lock, NULL);
	pthread_cond_init(&pl.cond, NULL);
	pl.call.fn = poll_start;
	event_loop_call(sys.loop, &pl.call);
	pthread_mutex_lock(&pl.lock);
	while (!pl.done)
		pthread_cond_wait(&pl.cond, &pl.lock);
	pthread_mutex_unlock(&pl.lock);
	pthread_mutex_destroy(&pl.lock);
	pthread_cond_destroy(&pl.cond);
	return pl.ok;
}

uint32_t recycle_pick_vid(uint32_t *gen)
{
	int tries = 0;

	for (uint32_t v = vdi_next_clear(1); v; v = vdi_next_clear(v + 1)) {
		struct sd_inode_header h;

		if (!vdi_test_free(v)) {
			*gen = 0;
			return v;
		}
		if (tries++ >= POLL_TRIES)
			continue;
		if (read_header(v, &h) != SD_RES_SUCCESS || !header_free(&h))
			continue;
		if (members_ready(v)) {
			*gen = header_gen(&h);
			return v;
		}
		sd_info("VDI id %" PRIx32 " not reused yet: a member still "
			"removes objects of its old family", v);
	}
	return 0;
}

void recycle_stamp(struct sd_inode_header *h, uint32_t gen)
{
	if (recycling()) {
		h->kelpie_magic = INODE_KELPIE_MAGIC;
		h->recycle_gen = gen;
	} else {
		h->kelpie_magic = 0;
		h->recycle_gen = 0;
	}
	h->kelpie_flags = 0;
}
