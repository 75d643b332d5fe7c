// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The index of a hyper volume for an NBD export (doc/hyper-volumes.md §1):
 * the export reads entries on the event loop, so every allocated entry is
 * kept in memory (a hash of index -> vid, loaded when the export opens,
 * at most NBD_HYPER_MAX_ENTRIES of them, a map of up to 64 MiB); the
 * stored B-tree is walked and changed by lib/vindex.c on a thread of its
 * own with blocking gateway
 * calls, one change at a time, in the order of §2 (leaf objects, then the
 * inode's root range and btree_counter).  A B-tree entry is never cleared,
 * so the map only grows.  The tree written is the one of the vid the
 * export writes to now: when a snapshot gave the volume a new vid, the
 * next change opens that vid's tree (its entries are the same: a snapshot
 * copies them).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "btree.h"
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "vindex.h"
#include "work.h"
#include "core/core.h"
#include "front/nbd.h"
#include "gw/gw.h"
#include "vdi/hyper.h"

#define NBD_HYPER_MAX_ENTRIES	(1U << 22)	/* 16 TiB of objects */
#define NBD_HYPER_QUEUE		1024

struct hmap {
	uint32_t *idx, *vid;	/* vid 0: an empty slot */
	size_t cap, nr;
};

struct set_op {
	uint32_t idx, vid;
	void (*done)(void *arg, uint32_t res);
	void *arg;
	struct list_head list;
};

struct nbd_hyper {
	struct hmap map;		/* loop thread (the worker's at load) */
	struct list_head queue;		/* set_ops waiting, loop thread */
	struct set_op *cur;		/* the one the worker has */
	/* the worker's */
	struct vdi_index *vi;
	uint32_t vi_vid;
	uint8_t copies;
	uint32_t res;
	struct work work;
	/* loading */
	void (*loaded)(void *arg, struct nbd_hyper *h, uint32_t res);
	void *arg;
};

static struct work_queue *index_wq;

/* ---- the map ---- */

static size_t slot_of(const struct hmap *m, uint32_t idx)
{
	size_t s = (size_t)(idx * UINT32_C(2654435761)) & (m->cap - 1);

	while (m->vid[s] && m->idx[s] != idx)
		s = (s + 1) & (m->cap - 1);
	return s;
}

static void hmap_grow(struct hmap *m)
{
	struct hmap n = { .cap = m->cap ? m->cap * 2 : 1024 };

	n.idx = xzalloc(n.cap * sizeof(*n.idx));
	n.vid = xzalloc(n.cap * sizeof(*n.vid));
	for (size_t i = 0; i < m->cap; i++) {
		if (m->vid[i]) {
			size_t s = slot_of(&n, m->idx[i]);

			n.idx[s] = m->idx[i];
			n.vid[s] = m->vid[i];
			n.nr++;
		}
	}
	free(m->idx);
	free(m->vid);
	*m = n;
}

/* 0, or -1 when the map is full */
static int hmap_put(struct hmap *m, uint32_t idx, uint32_t vid)
{
	size_t s;

	if (2 * (m->nr + 1) > m->cap)
		hmap_grow(m);
	s = slot_of(m, idx);
	if (!m->vid[s]) {
		if (m->nr == NBD_HYPER_MAX_ENTRIES)
			return -1;
		m->nr++;
	}
	m->idx[s] = idx;
	m->vid[s] = vid;
	return 0;
}

uint32_t nbd_hyper_get(const struct nbd_hyper *h, uint32_t idx)
{
	return h->map.cap ? h->map.vid[slot_of(&h->map, idx)] : 0;
}

/* ---- the stored tree, on the worker ---- */

static int node_read(void *arg, uint64_t oid, uint8_t *buf)
{
	const struct nbd_hyper *h = arg;

	return gw_exec_sync(SD_OP_READ_OBJ, oid, buf, BT_NODE_SIZE, 0,
			    h->copies, 0) == SD_RES_SUCCESS ? 0 : -1;
}

static int node_write(void *arg, uint64_t oid, const uint8_t *buf,
		      uint32_t off, uint32_t len, bool create)
{
	const struct nbd_hyper *h = arg;

	return gw_exec_sync(create ? SD_OP_CREATE_AND_WRITE_OBJ :
			    SD_OP_WRITE_OBJ, oid, (void *)buf, len, off,
			    h->copies, SD_FLAG_CMD_WRITE) == SD_RES_SUCCESS ?
	       0 : -1;
}

static int inode_write(void *arg, const uint8_t *buf, uint32_t off,
		       uint32_t len)
{
	const struct nbd_hyper *h = arg;

	return gw_exec_sync(SD_OP_WRITE_OBJ, vid_to_vdi_oid(h->vi_vid),
			    (void *)buf, len, off, h->copies,
			    SD_FLAG_CMD_WRITE) == SD_RES_SUCCESS ? 0 : -1;
}

/* the tree of @vid, unless it is open already: SD_RES_* */
static uint32_t open_tree(struct nbd_hyper *h, uint32_t vid)
{
	struct vi_io io = { { node_read, node_write, h }, inode_write, h };
	uint8_t buf[SD_INODE_HEADER_SIZE];
	struct sd_inode_header hdr;
	uint8_t *root;
	int ret;

	if (h->vi && h->vi_vid == vid)
		return SD_RES_SUCCESS;
	if (h->vi)
		vi_close(h->vi);
	h->vi = NULL;
	ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(vid), buf,
			   sizeof(buf), 0, 0, 0);
	if (ret != SD_RES_SUCCESS)
		return (uint32_t)ret;
	inode_header_decode(&hdr, buf);
	if (hdr.store_policy != 1 || hdr.vdi_id != vid)
		return SD_RES_INVALID_PARMS;
	ret = hyper_read_root(vid, hdr.nr_copies, &root);
	if (ret != SD_RES_SUCCESS)
		return (uint32_t)ret;
	h->copies = hdr.nr_copies;
	h->vi_vid = vid;
	h->vi = vi_open_btree(vid, root, hdr.btree_counter, &io);
	return SD_RES_SUCCESS;
}

static void close_tree(struct nbd_hyper *h)
{
	if (h->vi)
		vi_close(h->vi);
	h->vi = NULL;
}

/* ---- loading ---- */

static int add_entry(uint32_t idx, uint32_t vid, void *arg)
{
	struct nbd_hyper *h = arg;

	return hmap_put(&h->map, idx, vid);
}

static void load_work(struct work *w)
{
	struct nbd_hyper *h = container_of(w, struct nbd_hyper, work);

	h->res = open_tree(h, h->vi_vid);
	if (h->res == SD_RES_SUCCESS && vi_for_each(h->vi, add_entry, h)) {
		/* a bad node, a failed read, or too many entries */
		h->res = h->map.nr == NBD_HYPER_MAX_ENTRIES ?
			 SD_RES_NO_MEM : SD_RES_EIO;
		close_tree(h);
	}
}

static void load_done(struct work *w)
{
	struct nbd_hyper *h = container_of(w, struct nbd_hyper, work);

	if (h->res != SD_RES_SUCCESS) {
		if (h->res == SD_RES_NO_MEM)
			sd_err("NBD export of hyper volume %" PRIx32 ": more "
			       "than %u objects allocated", h->vi_vid,
			       NBD_HYPER_MAX_ENTRIES);
		h->loaded(h->arg, NULL, h->res);
		nbd_hyper_free(h);
		return;
	}
	h->loaded(h->arg, h, SD_RES_SUCCESS);
}

void nbd_hyper_load(uint32_t vid,
		    void (*done)(void *arg, struct nbd_hyper *h, uint32_t res),
		    void *arg)
{
	struct nbd_hyper *h = xzalloc(sizeof(*h));

	if (!index_wq)
		index_wq = wq_create("nbd index", 1, NBD_HYPER_QUEUE,
				     sys.loop);
	INIT_LIST_HEAD(&h->queue);
	h->vi_vid = vid;
	h->loaded = done;
	h->arg = arg;
	h->work.fn = load_work;
	h->work.done = load_done;
	if (wq_queue(index_wq, &h->work)) {
		free(h);
		done(arg, NULL, SD_RES_NO_MEM);
	}
}

/* ---- changes, one at a time ---- */

static void set_next(struct nbd_hyper *h);

static void set_work(struct work *w)
{
	struct nbd_hyper *h = container_of(w, struct nbd_hyper, work);

	h->res = open_tree(h, h->cur->vid);
	if (h->res == SD_RES_SUCCESS &&
	    vi_set(h->vi, h->cur->idx, h->cur->vid)) {
		/* the tree refuses every call after a failed write-back */
		h->res = SD_RES_EIO;
		close_tree(h);
	}
}

static void set_done(struct work *w)
{
	struct nbd_hyper *h = container_of(w, struct nbd_hyper, work);
	struct set_op *op = h->cur;
	uint32_t res = h->res;

	h->cur = NULL;
	if (res == SD_RES_SUCCESS && hmap_put(&h->map, op->idx, op->vid))
		res = SD_RES_NO_MEM;	/* stored; the next open refuses */
	set_next(h);
	/*
	 * Last: the command this ends may close the export, and free @h
	 * with it (only with nothing else in flight, so nothing queued)
	 */
	op->done(op->arg, res);
	free(op);
}

static void set_next(struct nbd_hyper *h)
{
	struct set_op *op;

	if (h->cur || list_empty(&h->queue))
		return;
	op = list_first_entry(&h->queue, struct set_op, list);
	list_del(&op->list);
	h->cur = op;
	h->work.fn = set_work;
	h->work.done = set_done;
	if (wq_queue(index_wq, &h->work)) {
		h->cur = NULL;
		op->done(op->arg, SD_RES_NO_MEM);
		free(op);
		set_next(h);
	}
}

void nbd_hyper_set(struct nbd_hyper *h, uint32_t idx, uint32_t vid,
		   void (*done)(void *arg, uint32_t res), void *arg)
{
	struct set_op *op = xzalloc(sizeof(*op));

	op->idx = idx;
	op->vid = vid;
	op->done = done;
	op->arg = arg;
	list_add_tail(&op->list, &h->queue);
	set_next(h);
}

void nbd_hyper_free(struct nbd_hyper *h)
{
	if (!h)
		return;
	/* the export closes with no command in flight: nothing queued */
	close_tree(h);
	free(h->map.idx);
	free(h->map.vid);
	free(h);
}
