// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Hyper volumes (objects.md §12) in VDI operations: the copy of a B-tree
 * index for a snapshot or clone, and the removal of a deleted volume's
 * objects.
 *
 * Sharing.  A snapshot or clone gets its own copy of the root and of
 * every leaf object (leaf objects carry their volume's vid, and only the
 * volume writes them); the entries still name the volumes that own the
 * data objects, as a flat index's data_vdi_id does.  There is no
 * reference counting (a flat index's grefs have no room for 2^32
 * entries): DEL_VDI instead asks the other volumes of the family whether
 * they still name an object before it removes it.  Only volumes derived
 * from its owner can name an object, so the family is every hyper volume
 * with the same oldest ancestor (deleted inodes keep their parent).  A
 * copy-on-write drops a name silently: a deleted volume whose objects
 * were still in use keeps its index, which later deletes in the family
 * walk again (doc/hyper-volumes.md §3).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "btree.h"
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "vindex.h"
#include "gw/gw.h"
#include "state/vdi.h"
#include "vdi/hyper.h"

/* ---- B-tree nodes through the gateway ---- */

struct node_io {
	uint8_t copies;		/* of the nodes read */
	uint8_t wcopies;	/* of the nodes written */
	int ret;		/* the last failure */
};

static int node_read(void *arg, uint64_t oid, uint8_t *buf)
{
	struct node_io *n = arg;
	int ret = gw_exec_sync(SD_OP_READ_OBJ, oid, buf, BT_NODE_SIZE, 0,
			       n->copies, 0);

	if (ret == SD_RES_SUCCESS)
		return 0;
	n->ret = ret;
	return -1;
}

static int node_write(void *arg, uint64_t oid, const uint8_t *buf,
		      uint32_t off, uint32_t len, bool create)
{
	struct node_io *n = arg;
	int ret = gw_exec_sync(create ? SD_OP_CREATE_AND_WRITE_OBJ :
			       SD_OP_WRITE_OBJ, oid, (void *)buf, len, off,
			       n->wcopies, SD_FLAG_CMD_WRITE);

	if (ret == SD_RES_SUCCESS)
		return 0;
	n->ret = ret;
	return -1;
}

static int no_write(void *arg, uint64_t oid, const uint8_t *buf,
		    uint32_t off, uint32_t len, bool create)
{
	return -1;	/* a walk writes nothing */
}

static int no_inode_write(void *arg, const uint8_t *buf, uint32_t off,
			  uint32_t len)
{
	return -1;
}

int hyper_read_root(uint32_t vid, uint8_t copies, uint8_t **root)
{
	int ret;

	*root = xmalloc(BT_NODE_SIZE);
	ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(vid), *root,
			   BT_NODE_SIZE, SD_INODE_INDEX_OFFSET, copies, 0);
	if (ret != SD_RES_SUCCESS) {
		free(*root);
		*root = NULL;
	}
	return ret;
}

/* ---- the copy for a snapshot or clone ---- */

struct undo {
	uint32_t vid;
	uint8_t copies;
};

/* a copy made before the failure: no inode will name it */
static int remove_copy(uint64_t oid, void *arg)
{
	const struct undo *u = arg;

	if (oid_to_vid(oid) == u->vid)
		gw_exec_sync(SD_OP_REMOVE_OBJ, oid, NULL, 0, 0, u->copies, 0);
	return 0;
}

/*
 * The copies are written before the caller creates the inode that points
 * at them, in one write with its header: a crash in between leaves leaf
 * objects no inode names (under a vid not yet in use: its next owner's
 * splits overwrite those its counter reaches, the others stay as leaked
 * objects), never a volume with part of an index.  A copy that fails
 * removes what it made.
 */
int hyper_copy_root(uint8_t *root, uint8_t from_copies,
		    const struct sd_inode_header *h)
{
	struct node_io n = { from_copies, h->nr_copies, SD_RES_SUCCESS };
	struct bt_io io = { node_read, node_write, &n };
	uint8_t *scratch;
	int ret;

	if (!bt_node_len(root))
		return SD_RES_EIO;	/* not a B-tree root */
	scratch = xmalloc(BT_NODE_SIZE);
	ret = bt_copy_leaves(root, h->vdi_id, &io, scratch);
	free(scratch);
	if (!ret)
		return SD_RES_SUCCESS;
	bt_for_each_leaf(root, remove_copy,
			 &(struct undo){ h->vdi_id, h->nr_copies });
	ret = n.ret != SD_RES_SUCCESS ? n.ret : SD_RES_EIO;
	sd_err("copying the leaf objects for hyper volume %" PRIx32
	       " failed: %s", h->vdi_id, sd_strerror((uint32_t)ret));
	return ret;
}

/* ---- the family of a volume ---- */

struct member {
	uint32_t vid, parent;
	uint8_t copies;
	bool live;		/* not deleted: its index names objects */
};

struct family {
	struct member *m;	/* every hyper volume, in vid order */
	uint32_t nr, cap;
};

static int add_member(struct family *f, uint32_t vid)
{
	uint8_t *buf = xmalloc(SD_INODE_HEADER_SIZE);
	struct sd_inode_header h;
	int ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(vid), buf,
			       SD_INODE_HEADER_SIZE, 0, 0, 0);

	if (ret == SD_RES_SUCCESS)
		inode_header_decode(&h, buf);
	free(buf);
	/* a vid whose inode never got written (NEW_VDI failed) */
	if (ret == SD_RES_NO_OBJ)
		return SD_RES_SUCCESS;
	if (ret != SD_RES_SUCCESS || h.store_policy != 1)
		return ret;
	if (f->nr == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->m = xrealloc(f->m, sizeof(*f->m) * f->cap);
	}
	f->m[f->nr++] = (struct member){
		.vid = vid, .parent = h.parent_vdi_id,
		.copies = h.nr_copies, .live = h.name[0] != 0,
	};
	return SD_RES_SUCCESS;
}

/*
 * Every hyper volume's header: deleted ones too, whose parent links
 * still tie their descendants to one family.  One read per VDI in use,
 * the price of deleting a hyper volume.
 */
static int load_members(struct family *f)
{
	for (uint32_t v = 1; v < SD_NR_VDIS; v++) {
		int ret;

		if (!vdi_test_inuse(v) && !vdi_test_deleted(v))
			continue;
		ret = add_member(f, v);
		if (ret != SD_RES_SUCCESS)
			return ret;
	}
	return SD_RES_SUCCESS;
}

static struct member *find_member(const struct family *f, uint32_t vid)
{
	uint32_t lo = 0, hi = f->nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (f->m[mid].vid < vid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->nr && f->m[lo].vid == vid ? &f->m[lo] : NULL;
}

/* the oldest ancestor of @vid that is a hyper volume; 0 for a loop */
static uint32_t root_of(const struct family *f, uint32_t vid)
{
	for (uint32_t steps = 0; steps <= f->nr; steps++) {
		const struct member *m = find_member(f, vid);

		if (!m || !m->parent || !find_member(f, m->parent))
			return vid;
		vid = m->parent;
	}
	return 0;
}

/* ---- removal ---- */

/*
 * DEL_VDI's reply waits for the removals and dog waits 30 s for a reply,
 * so they go DEL_THREADS at a time: on 3 local nodes sharing 2 busy
 * cores 20,000 removals took 4 s one at a time, 2.9 s 8 at a time; on a
 * network the round trips overlap too.  A volume of millions of objects
 * still outlasts dog's wait (the sheep goes on removing).
 */
#define DEL_BATCH	65536
#define DEL_THREADS	8

struct hyper_del {
	uint32_t vid;
	uint8_t copies;
	int ret;		/* the first failure */
	uint64_t *oids;		/* DEL_BATCH, to remove */
	uint8_t *ocopies;	/* their owners' copies */
	size_t nr, next;
	pthread_mutex_t lock;
	/* entries that may name the last use of an object */
	struct family fam;
	uint32_t *checker;	/* live members of the family but vid */
	uint32_t nr_checker;
	uint32_t *dead;		/* deleted members of the family */
	uint32_t nr_dead;
	uint32_t *cidx, *cown;	/* DEL_BATCH candidates */
	bool *keep;
	size_t nc;
	uint32_t swept;		/* the volume whose index is walked */
	bool kept;		/* it names an object still in use */
};

/* take the next oid of the batch and remove it, until none is left */
static void *remove_thread(void *arg)
{
	struct hyper_del *d = arg;

	for (;;) {
		size_t i = SIZE_MAX;
		int ret;

		pthread_mutex_lock(&d->lock);
		if (d->next < d->nr && d->ret == SD_RES_SUCCESS)
			i = d->next++;
		pthread_mutex_unlock(&d->lock);
		if (i == SIZE_MAX)
			return NULL;
		ret = gw_exec_sync(SD_OP_REMOVE_OBJ, d->oids[i], NULL, 0, 0,
				   d->ocopies[i], 0);
		/* NO_OBJ: removed by an earlier try that failed later */
		if (ret == SD_RES_SUCCESS || ret == SD_RES_NO_OBJ)
			continue;
		pthread_mutex_lock(&d->lock);
		if (d->ret == SD_RES_SUCCESS)
			d->ret = ret;
		pthread_mutex_unlock(&d->lock);
	}
}

/* remove the batch; 0, or -1 with d->ret set */
static int remove_batch(struct hyper_del *d)
{
	pthread_t t[DEL_THREADS];
	int n;

	if (!d->nr)
		return d->ret == SD_RES_SUCCESS ? 0 : -1;
	d->next = 0;
	for (n = 0; n < DEL_THREADS; n++)
		if (pthread_create(&t[n], NULL, remove_thread, d))
			break;
	if (!n)
		remove_thread(d);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	d->nr = 0;
	return d->ret == SD_RES_SUCCESS ? 0 : -1;
}

static int add_oid(struct hyper_del *d, uint64_t oid, uint8_t copies)
{
	d->ocopies[d->nr] = copies;
	d->oids[d->nr++] = oid;
	return d->nr == DEL_BATCH ? remove_batch(d) : 0;
}

/* keep the candidates that volume @m still names */
static int mark_kept(struct hyper_del *d, const struct member *m)
{
	struct node_io n = { m->copies, 0, SD_RES_SUCCESS };
	struct vi_io io = {
		{ node_read, no_write, &n }, no_inode_write, NULL,
	};
	struct vdi_index *vi;
	uint8_t *root;
	int ret = hyper_read_root(m->vid, m->copies, &root);

	if (ret != SD_RES_SUCCESS)
		return ret;
	vi = vi_open_btree(m->vid, root, 0, &io);
	for (size_t j = 0; j < d->nc; j++) {
		uint32_t owner;

		if (d->keep[j])
			continue;
		if (vi_get(vi, d->cidx[j], &owner)) {
			ret = n.ret != SD_RES_SUCCESS ? n.ret : SD_RES_EIO;
			break;
		}
		d->keep[j] = owner == d->cown[j];
	}
	vi_close(vi);
	return ret;
}

/* remove the candidates no other volume names; 0 or -1 (d->ret) */
static int flush_candidates(struct hyper_del *d)
{
	memset(d->keep, 0, d->nc * sizeof(*d->keep));
	for (uint32_t i = 0; i < d->nr_checker; i++) {
		int ret = mark_kept(d, find_member(&d->fam, d->checker[i]));

		if (ret != SD_RES_SUCCESS) {
			d->ret = ret;
			return -1;
		}
	}
	for (size_t j = 0; j < d->nc; j++) {
		const struct member *m = find_member(&d->fam, d->cown[j]);

		if (d->keep[j]) {
			d->kept = true;
			continue;
		}
		d->ocopies[d->nr] = m ? m->copies : d->copies;
		d->oids[d->nr++] = vid_to_data_oid(d->cown[j], d->cidx[j]);
	}
	d->nc = 0;
	return remove_batch(d);
}

/*
 * An entry of the volume is a candidate if it names an object of the
 * volume itself or of a deleted ancestor (whose last user it may be); an
 * object of a live ancestor stays, as that ancestor names it.
 */
static int remove_data(uint32_t idx, uint32_t owner, void *arg)
{
	struct hyper_del *d = arg;
	const struct member *m = find_member(&d->fam, owner);

	if (owner != d->swept && (!m || m->live))
		return 0;
	d->cidx[d->nc] = idx;
	d->cown[d->nc++] = owner;
	return d->nc == DEL_BATCH ? flush_candidates(d) : 0;
}

static int remove_leaf(uint64_t oid, void *arg)
{
	struct hyper_del *d = arg;
	const struct member *m = find_member(&d->fam, oid_to_vid(oid));

	return add_oid(d, oid, m ? m->copies : d->copies);
}

/* the other live and the deleted volumes of @d->vid's family; SD_RES_* */
static int find_members(struct hyper_del *d)
{
	struct family *f = &d->fam;
	uint32_t root;
	int ret = load_members(f);

	if (ret != SD_RES_SUCCESS)
		return ret;
	root = root_of(f, d->vid);
	d->checker = xmalloc(sizeof(*d->checker) * (f->nr + 1));
	d->dead = xmalloc(sizeof(*d->dead) * (f->nr + 1));
	for (uint32_t i = 0; root && i < f->nr; i++) {
		const struct member *m = &f->m[i];
		uint32_t r = root_of(f, m->vid);

		if (!r)
			root = 0;
		if (r != root || m->vid == d->vid)
			continue;
		if (m->live)
			d->checker[d->nr_checker++] = m->vid;
		else
			d->dead[d->nr_dead++] = m->vid;
	}
	if (!root) {
		sd_err("the parents of hyper volumes form a loop");
		return SD_RES_EIO;
	}
	/* from here on the volume counts as deleted */
	find_member(f, d->vid)->live = false;
	return SD_RES_SUCCESS;
}

static void hyper_del_free(struct hyper_del *d)
{
	pthread_mutex_destroy(&d->lock);
	free(d->oids);
	free(d->ocopies);
	free(d->fam.m);
	free(d->checker);
	free(d->dead);
	free(d->cidx);
	free(d->cown);
	free(d->keep);
}

/*
 * Remove the objects @root (the index of @vid) may name last; d->kept
 * says whether some stay.  0 or -1 (a bad node: d->ret, n->ret).
 */
static int sweep(struct hyper_del *d, uint32_t vid, const uint8_t *root,
		 struct node_io *n, uint8_t *scratch)
{
	struct bt_io io = { node_read, no_write, n };

	d->swept = vid;
	d->kept = false;
	return bt_for_each(root, &io, scratch, remove_data, d) ||
	       flush_candidates(d) ? -1 : 0;
}

static int drop_leaves(struct hyper_del *d, const uint8_t *root)
{
	return bt_for_each_leaf(root, remove_leaf, d) || remove_batch(d) ?
	       -1 : 0;
}

/*
 * A deleted volume whose index DEL_VDI kept (it named objects in use):
 * what it names may have lost its last other name since, by a
 * copy-on-write.  Once it names nothing in use, its index is cleared (a
 * crash before that only walks it again) and its leaf objects removed.
 */
static int sweep_dead(struct hyper_del *d, const struct member *m,
		      uint8_t *scratch)
{
	struct node_io n = { m->copies, 0, SD_RES_SUCCESS };
	uint8_t *root, *zero;
	uint32_t len;
	int ret = hyper_read_root(m->vid, m->copies, &root);

	if (ret != SD_RES_SUCCESS)
		return ret;
	len = bt_node_len(root);
	ret = SD_RES_SUCCESS;
	if (len <= BT_HDR || sweep(d, m->vid, root, &n, scratch) || d->kept)
		goto out;	/* nothing kept, a failure, or still in use */
	zero = xzalloc(len);
	ret = gw_exec_sync(SD_OP_WRITE_OBJ, vid_to_vdi_oid(m->vid), zero, len,
			   SD_INODE_INDEX_OFFSET, m->copies, SD_FLAG_CMD_WRITE);
	free(zero);
	if (ret == SD_RES_SUCCESS)
		drop_leaves(d, root);
out:
	if (ret == SD_RES_SUCCESS && d->ret != SD_RES_SUCCESS)
		ret = d->ret;
	if (ret == SD_RES_SUCCESS && n.ret != SD_RES_SUCCESS)
		ret = n.ret;
	free(root);
	return ret;
}

/* the volume's own index: swept, then its leaves unless it must stay */
static int sweep_own(struct hyper_del *d, uint8_t *scratch, bool *retain)
{
	struct node_io n = { d->copies, 0, SD_RES_SUCCESS };
	uint8_t *root;
	int ret = hyper_read_root(d->vid, d->copies, &root);

	if (ret != SD_RES_SUCCESS)
		return ret;
	if (sweep(d, d->vid, root, &n, scratch) ||
	    (!d->kept && drop_leaves(d, root)))
		ret = d->ret != SD_RES_SUCCESS ? d->ret :
		      n.ret != SD_RES_SUCCESS ? n.ret : SD_RES_EIO;
	*retain = d->kept;
	free(root);
	return ret;
}

/*
 * The volume's data objects no one else names, then (if it names none
 * in use) its leaf objects; then what the deleted members of the family
 * whose indexes were kept no longer need.
 */
int hyper_remove_objects(uint32_t vid, uint8_t copies, bool *retain)
{
	struct hyper_del d = {
		.vid = vid, .copies = copies, .ret = SD_RES_SUCCESS,
	};
	uint8_t *scratch = xmalloc(BT_NODE_SIZE);
	int ret;

	pthread_mutex_init(&d.lock, NULL);
	d.oids = xmalloc(DEL_BATCH * sizeof(*d.oids));
	d.ocopies = xmalloc(DEL_BATCH);
	d.cidx = xmalloc(DEL_BATCH * sizeof(*d.cidx));
	d.cown = xmalloc(DEL_BATCH * sizeof(*d.cown));
	d.keep = xmalloc(DEL_BATCH * sizeof(*d.keep));
	ret = find_members(&d);
	if (ret == SD_RES_SUCCESS)
		ret = sweep_own(&d, scratch, retain);
	if (ret != SD_RES_SUCCESS) {
		sd_err("removing the objects of hyper volume %" PRIx32
		       " failed: %s", vid, sd_strerror((uint32_t)ret));
		goto out;
	}
	/* a failure here only leaves objects for a later delete */
	for (uint32_t i = 0; i < d.nr_dead; i++) {
		uint32_t dv = d.dead[i];
		int r = sweep_dead(&d, find_member(&d.fam, dv), scratch);

		if (r != SD_RES_SUCCESS)
			sd_warn("objects of deleted hyper volume %" PRIx32
				" still kept: %s", dv,
				sd_strerror((uint32_t)r));
		d.ret = SD_RES_SUCCESS;
	}
out:
	hyper_del_free(&d);
	free(scratch);
	return ret;
}
