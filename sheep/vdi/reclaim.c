// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reclaiming the objects deleted VDIs left in this node's store.
 *
 * A client clears an index entry before the object it named is removed
 * (gw/refcount.c): a power loss between the two leaves an object nothing
 * names.  So does a node that was down while a VDI's objects were removed:
 * its copies come back with it, and recovery spreads them again.  Nothing
 * would ever remove either.
 *
 * Only its VDI and the VDI's descendants (snapshots, clones: the parent
 * links) can name an object, since a new index is always copied from its
 * parent's.  Once a VDI and every descendant of it are deleted, each with
 * its inode cleared, the VDI's data objects and ledgers are garbage on
 * every node: each node removes its own copies, after every DEL_VDI and
 * after every recovery the whole cluster finished.  Inodes stay, as the
 * record of a deleted VDI (objects.md §10.2).
 *
 * The lineage comes from this node's VDI table, used only when it knows
 * every VDI and every parent (state/vdi.c); that a VDI and its
 * descendants are deleted is then checked on their inode headers, read
 * through the gateway, before anything is removed.  A clone of a deleted
 * VDI is refused (vdi.c), so a deleted VDI gets no new descendants.
 *
 * Their stale copies (cluster.md §7.2) are garbage too, and go in the
 * same pass: the stale area is otherwise emptied only at the end of a
 * recovery round the whole cluster finished, which nodes that die and come
 * back every few seconds put off for as long as they do, while the copies
 * of every VDI deleted meanwhile pile up (test 094 saw 919 MiB of stale
 * copies for 397 MiB of working ones).
 *
 * One pass at a time on its own worker (the header reads block it); a
 * request for a pass while one runs makes one more afterwards.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "work.h"
#include "core/core.h"
#include "gw/gw.h"
#include "state/vdi.h"
#include "store/store.h"
#include "vdi/reclaim.h"

#define RECLAIM_MAX	65536	/* objects removed per pass */

/* ---- the lineage: which deleted VDIs no live VDI descends from ---- */

static int cmp_vid(const void *a, const void *b)
{
	const struct reclaim_vdi *x = a, *y = b;

	return x->vid < y->vid ? -1 : x->vid > y->vid;
}

void reclaim_sort(struct reclaim_vdi *v, size_t nr)
{
	qsort(v, nr, sizeof(*v), cmp_vid);
}

struct reclaim_vdi *reclaim_find(struct reclaim_vdi *v, size_t nr,
				 uint32_t vid)
{
	struct reclaim_vdi key = { .vid = vid };

	return vid ? bsearch(&key, v, nr, sizeof(*v), cmp_vid) : NULL;
}

size_t reclaim_mark(struct reclaim_vdi *v, size_t nr)
{
	size_t n = 0;

	for (size_t i = 0; i < nr; i++)
		v[i].below_live = 0;
	for (size_t i = 0; i < nr; i++) {
		struct reclaim_vdi *p = &v[i];

		if (p->deleted)
			continue;
		/* every ancestor of a live VDI may be named by it */
		for (size_t steps = 0; steps < nr; steps++) {
			p = reclaim_find(v, nr, p->parent);
			if (!p || p->below_live)
				break;
			p->below_live = 1;
		}
	}
	for (size_t i = 0; i < nr; i++)
		n += v[i].deleted && !v[i].below_live;
	return n;
}

/* ---- a pass ---- */

struct reclaim_pass {
	struct work work;
	struct reclaim_vdi *v;		/* the VDI table, by vid */
	size_t nr;
	size_t nr_local;		/* VDIs with objects here */
	struct obj_key *keys;		/* local objects to remove */
	size_t nr_keys;
	uint64_t removed;
	uint64_t dropped;		/* stale copies */
};

static struct work_queue *reclaim_wq;
static bool running, again, told;
static uint64_t total_removed;

/* an object of a deleted VDI no live VDI descends from: its entry */
static struct reclaim_vdi *candidate(struct reclaim_vdi *v, size_t nr,
				     uint64_t oid)
{
	struct reclaim_vdi *e;

	if (!is_data_obj(oid) && !is_ledger_obj(oid))
		return NULL;
	e = reclaim_find(v, nr, oid_to_vid(oid));
	return e && e->deleted && !e->below_live ? e : NULL;
}

bool reclaim_take(struct reclaim_vdi *v, size_t nr, uint64_t oid)
{
	struct reclaim_vdi *e = candidate(v, nr, oid);

	/* has_local: its headers were read (an object new since was not) */
	return e && e->has_local && !e->doubt;
}

/* first walk: which candidate VDIs this node holds objects of */
static int mark_local(struct obj_key k, void *arg)
{
	struct reclaim_pass *rp = arg;
	struct reclaim_vdi *e = candidate(rp->v, rp->nr, k.oid);

	if (!e)
		return 0;
	rp->nr_local += !e->has_local;
	e->has_local = 1;
	return 0;
}

/*
 * second walk, after the headers were read: only objects of VDIs found
 * dead take a place in the batch, so that objects kept in doubt can never
 * fill it and hold up the others pass after pass
 */
static int collect(struct obj_key k, void *arg)
{
	struct reclaim_pass *rp = arg;

	if (!reclaim_take(rp->v, rp->nr, k.oid))
		return 0;
	if (rp->nr_keys == RECLAIM_MAX)
		return 1;
	rp->keys[rp->nr_keys++] = k;
	return 0;
}

/* the inode of @e says deleted and cleared (read once per pass) */
static bool header_dead(struct reclaim_vdi *e)
{
	uint8_t *buf;
	struct sd_inode_header h;
	int ret;

	if (e->checked)
		return e->checked == 1;
	buf = xmalloc(SD_INODE_HEADER_SIZE);
	ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(e->vid), buf,
			   SD_INODE_HEADER_SIZE, 0, 0, 0);
	if (ret == SD_RES_SUCCESS)
		inode_header_decode(&h, buf);
	free(buf);
	e->checked = ret == SD_RES_SUCCESS && !h.name[0] &&
		     h.vdi_id == e->vid && h.parent_vdi_id == e->parent ? 1 : 2;
	if (e->checked != 1)
		sd_debug("VDI %" PRIx32 " kept: %s", e->vid,
			 ret == SD_RES_SUCCESS ? "its inode is in use" :
			 sd_strerror((uint32_t)ret));
	return e->checked == 1;
}

/*
 * Which VDIs with local objects are, with every descendant, deleted as
 * their inodes say: one walk up from every VDI of the table (not one
 * per VDI with objects), reading a header only where it matters
 */
static void confirm(struct reclaim_pass *rp)
{
	for (size_t i = 0; i < rp->nr; i++) {
		struct reclaim_vdi *d = &rp->v[i], *a = d;

		if (d->has_local && !header_dead(d))
			d->doubt = 1;
		for (size_t steps = 0; steps < rp->nr; steps++) {
			a = reclaim_find(rp->v, rp->nr, a->parent);
			if (!a)
				break;
			if (a->has_local && !a->doubt && !header_dead(d))
				a->doubt = 1;
		}
	}
}

/*
 * the stale copies of dead VDIs' objects, each if still of its epoch: the
 * whole index (12 bytes an entry, as store_for_each_stale takes), since a
 * cap would see the same first entries pass after pass
 */
static void drop_stale(struct reclaim_pass *rp)
{
	uint64_t count, bytes;
	struct obj_key *keys;
	uint32_t *epochs;
	size_t n;

	store_stale_usage(&count, &bytes);
	if (!count)
		return;
	n = (size_t)count;
	keys = xmalloc(n * sizeof(*keys));
	epochs = xmalloc(n * sizeof(*epochs));
	n = (size_t)store_list_stale(keys, epochs, n);
	for (size_t i = 0; i < n; i++)
		if (reclaim_take(rp->v, rp->nr, keys[i].oid) &&
		    store_drop_stale(keys[i], epochs[i]) == SD_RES_SUCCESS)
			rp->dropped++;
	free(keys);
	free(epochs);
}

static void reclaim_fn(struct work *w)
{
	struct reclaim_pass *rp = container_of(w, struct reclaim_pass, work);

	store_for_each(mark_local, rp);
	store_for_each_stale(mark_local, rp);
	if (!rp->nr_local)
		return;
	confirm(rp);
	rp->keys = xmalloc(RECLAIM_MAX * sizeof(*rp->keys));
	store_for_each(collect, rp);
	for (size_t i = 0; i < rp->nr_keys; i++) {
		struct obj_key k = rp->keys[i];
		int ret = store_remove(k);

		if (ret == SD_RES_SUCCESS)
			rp->removed++;
		else if (ret != SD_RES_NO_OBJ)
			sd_warn("cannot remove %" PRIx64 " of deleted VDI "
				"%" PRIx32 ": %s", k.oid, oid_to_vid(k.oid),
				sd_strerror((uint32_t)ret));
	}
	drop_stale(rp);
}

static void reclaim_done(struct work *w)
{
	struct reclaim_pass *rp = container_of(w, struct reclaim_pass, work);
	/* a full pass that got somewhere leaves more: go on */
	bool more = rp->nr_keys == RECLAIM_MAX && rp->removed;

	if (rp->removed || rp->dropped)
		sd_notice("%" PRIu64 " object(s) and %" PRIu64 " stale "
			  "copy(ies) of deleted VDIs reclaimed", rp->removed,
			  rp->dropped);
	total_removed += rp->removed + rp->dropped;
	free(rp->keys);
	free(rp->v);
	free(rp);
	running = false;
	if (again || more)
		vdi_reclaim_kick();
}

struct table_copy {
	struct reclaim_vdi *v;
	size_t nr, cap;
};

static void copy_entry(uint32_t vid, struct vdi_info *vi, void *arg)
{
	struct table_copy *t = arg;

	/* a free vid: its family's objects went with the recycling */
	if (vi->recycled)
		return;
	if (t->nr == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	t->v[t->nr++] = (struct reclaim_vdi){
		.vid = vid, .parent = vi->parent_vid,
		.deleted = vi->deleted || vdi_test_deleted(vid),
	};
}

void vdi_reclaim_kick(void)
{
	struct table_copy t = { 0 };
	struct reclaim_pass *rp;

	if (sys.gateway || !reclaim_wq)
		return;
	if (running) {
		again = true;
		return;
	}
	again = false;
	if (!vdi_lineage_known()) {
		if (!told)
			sd_info("objects of deleted VDIs are not reclaimed: "
				"the VDI table lacks a VDI or a parent");
		told = true;
		return;
	}
	told = false;
	vdi_for_each(copy_entry, &t);
	reclaim_sort(t.v, t.nr);
	if (!reclaim_mark(t.v, t.nr)) {
		free(t.v);
		return;
	}
	rp = xzalloc(sizeof(*rp));
	rp->v = t.v;
	rp->nr = t.nr;
	rp->work.fn = reclaim_fn;
	rp->work.done = reclaim_done;
	running = true;
	if (wq_queue(reclaim_wq, &rp->work)) {
		running = false;
		free(rp->v);
		free(rp);
	}
}

uint64_t vdi_reclaimed(void)
{
	return total_removed;
}

void vdi_reclaim_init(void)
{
	reclaim_wq = wq_create("reclaim", 1, 1, sys.loop);
}
