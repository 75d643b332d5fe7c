// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The data index of an open VDI, flat or B-tree (include/vindex.h).
 *
 * lib/btree.c reads a whole leaf (4 MiB) into the caller's scratch buffer
 * on every lookup and set.  The leaf cache here makes that free for a
 * leaf already held: the cache's buffers are the scratch buffers, each
 * tagged with the leaf it holds, and the read callback does nothing when
 * the buffer it is asked to fill already holds that leaf.  bt_set changes
 * a leaf in its scratch buffer and then writes what it changed from that
 * buffer, at the same offsets; so the write callback keeps a tag when the
 * write succeeds and drops it when it fails (the buffer then holds a
 * change the store does not).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "vindex.h"

#define VI_CACHE	4	/* leaves held; a walk needs one */
#define ROOT_ENT	16
/* a root change within this of the header goes in one write with it */
#define HDR_MERGE	4096
#define COUNTER_OFF	offsetof(struct sd_inode_header, btree_counter)

struct leaf_slot {
	uint64_t oid;		/* 0: holds nothing */
	uint64_t used;		/* for LRU */
	uint8_t *buf;		/* BT_NODE_SIZE, allocated on first use */
};

struct vdi_index {
	bool btree;
	bool broken;		/* a failed write-back: refuse everything */
	uint32_t vid;
	struct vi_io io;
	/* flat */
	uint32_t *flat;
	uint32_t nr;
	/* B-tree */
	uint8_t *root;
	uint32_t counter;
	struct bt_io cio;	/* io.node through the cache */
	struct leaf_slot slot[VI_CACHE];
	uint64_t clock;
};

/* ---- the leaf cache ---- */

static struct leaf_slot *slot_at(struct vdi_index *vi, const uint8_t *p)
{
	for (int i = 0; i < VI_CACHE; i++) {
		struct leaf_slot *s = &vi->slot[i];

		if (s->buf && p >= s->buf && p < s->buf + BT_NODE_SIZE)
			return s;
	}
	return NULL;
}

static struct leaf_slot *slot_of(struct vdi_index *vi, uint64_t oid)
{
	for (int i = 0; oid && i < VI_CACHE; i++)
		if (vi->slot[i].oid == oid)
			return &vi->slot[i];
	return NULL;
}

static int cache_read(void *arg, uint64_t oid, uint8_t *buf)
{
	struct vdi_index *vi = arg;
	struct leaf_slot *s = slot_at(vi, buf), *t;

	if (!s)
		return vi->io.node.read(vi->io.node.arg, oid, buf);
	if (s->oid == oid)
		return 0;
	t = slot_of(vi, oid);
	s->oid = 0;
	if (t) {
		/* moved, so that a leaf is held once */
		memcpy(buf, t->buf, BT_NODE_SIZE);
		t->oid = 0;
	} else if (vi->io.node.read(vi->io.node.arg, oid, buf)) {
		return -1;
	}
	s->oid = oid;
	return 0;
}

static int cache_write(void *arg, uint64_t oid, const uint8_t *buf,
		       uint32_t off, uint32_t len, bool create)
{
	struct vdi_index *vi = arg;
	struct leaf_slot *s = slot_at(vi, buf);
	int ret = vi->io.node.write(vi->io.node.arg, oid, buf, off, len,
				    create);

	for (int i = 0; i < VI_CACHE; i++)
		if (&vi->slot[i] != s && vi->slot[i].oid == oid)
			vi->slot[i].oid = 0;
	if (!s)
		return ret;
	/*
	 * The buffer matches the store if it held the leaf and wrote its
	 * own bytes back, or if it built a new leaf from its start (beyond
	 * the written entries the store has zeros and the buffer stale
	 * entries, which no one reads: a node's count bounds it).
	 */
	if (ret || buf != s->buf + off || (s->oid != oid && !(create && !off)))
		s->oid = 0;
	else
		s->oid = oid;
	return ret;
}

/* the child of a two-level root that holds @idx; 0 if none */
static uint64_t root_child_of(const uint8_t *root, uint32_t idx)
{
	uint32_t n = get_le32(root + 4), lo = 0, hi;

	if (get_le16(root) != BT_MAGIC || get_le16(root + 2) != 2 || !n ||
	    n > BT_ROOT_MAX)
		return 0;
	hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (get_le32(root + BT_HDR + mid * ROOT_ENT) < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n)
		lo = n - 1;
	return get_le64(root + BT_HDR + lo * ROOT_ENT + 8);
}

/* the buffer to use for @idx: the one holding its leaf, or the LRU one */
static uint8_t *scratch_for(struct vdi_index *vi, uint32_t idx)
{
	struct leaf_slot *s = slot_of(vi, root_child_of(vi->root, idx));

	if (!s) {
		s = &vi->slot[0];
		for (int i = 1; i < VI_CACHE; i++)
			if (vi->slot[i].used < s->used)
				s = &vi->slot[i];
	}
	if (!s->buf)
		s->buf = xmalloc(BT_NODE_SIZE);
	s->used = ++vi->clock;
	return s->buf;
}

/* ---- open and close ---- */

static struct vdi_index *vi_alloc(uint32_t vid, const struct vi_io *io)
{
	struct vdi_index *vi = xzalloc(sizeof(*vi));

	vi->vid = vid;
	vi->io = *io;
	return vi;
}

struct vdi_index *vi_open_flat(uint32_t vid, uint32_t *index, uint32_t nr,
			       const struct vi_io *io)
{
	struct vdi_index *vi = vi_alloc(vid, io);

	vi->flat = index;
	vi->nr = nr;
	return vi;
}

struct vdi_index *vi_open_btree(uint32_t vid, uint8_t *root,
				uint32_t counter, const struct vi_io *io)
{
	struct vdi_index *vi = vi_alloc(vid, io);

	vi->btree = true;
	vi->root = root;
	vi->counter = counter;
	vi->cio.read = cache_read;
	vi->cio.write = cache_write;
	vi->cio.arg = vi;
	return vi;
}

void vi_close(struct vdi_index *vi)
{
	if (!vi)
		return;
	for (int i = 0; i < VI_CACHE; i++)
		free(vi->slot[i].buf);
	free(vi->flat);
	free(vi->root);
	free(vi);
}

bool vi_is_btree(const struct vdi_index *vi)
{
	return vi->btree;
}

uint32_t vi_counter(const struct vdi_index *vi)
{
	return vi->counter;
}

/* ---- lookups ---- */

int vi_get(struct vdi_index *vi, uint32_t idx, uint32_t *vid)
{
	*vid = 0;
	if (vi->broken)
		return -1;
	if (!vi->btree) {
		if (idx < vi->nr)
			*vid = vi->flat[idx];
		return 0;
	}
	return bt_lookup(vi->root, idx, &vi->cio, scratch_for(vi, idx), vid);
}

struct walk_ctx {
	int (*fn)(uint32_t idx, uint32_t vid, void *arg);
	void *arg;
};

/*
 * bt_set never stores 0, but a node written by other means may hold an
 * entry of vid 0: unallocated, as in a flat index, so not walked (a clone
 * would otherwise create an object for it).
 */
static int walk_allocated(uint32_t idx, uint32_t vid, void *arg)
{
	const struct walk_ctx *w = arg;

	return vid ? w->fn(idx, vid, w->arg) : 0;
}

int vi_for_each(struct vdi_index *vi,
		int (*fn)(uint32_t idx, uint32_t vid, void *arg), void *arg)
{
	struct walk_ctx w = { fn, arg };

	if (vi->broken)
		return -1;
	if (vi->btree)
		return bt_for_each(vi->root, &vi->cio, scratch_for(vi, 0),
				   walk_allocated, &w);
	for (uint32_t i = 0; i < vi->nr; i++) {
		int ret;

		if (!vi->flat[i])
			continue;
		ret = fn(i, vi->flat[i], arg);
		if (ret)
			return ret;
	}
	return 0;
}

int vi_for_each_leaf(struct vdi_index *vi,
		     int (*fn)(uint64_t oid, void *arg), void *arg)
{
	if (vi->broken)
		return -1;
	if (!vi->btree)
		return 0;
	return bt_for_each_leaf(vi->root, fn, arg);
}

/* ---- sets ---- */

static int write_inode(struct vdi_index *vi, const uint8_t *buf,
		       uint32_t off, uint32_t len)
{
	return vi->io.write_inode(vi->io.arg, buf, off, len);
}

static int write_root(struct vdi_index *vi, uint32_t from, uint32_t to)
{
	return write_inode(vi, vi->root + from, SD_INODE_INDEX_OFFSET + from,
			   to - from);
}

/*
 * What bt_set changed, counter first: a root naming leaves whose ids the
 * stored counter does not cover would have them reused by the next
 * split.  Entries before the header: a crash between them loses at most
 * the entry pushed past the stored count, where the header first would
 * count an entry not yet written.
 */
static int write_back(struct vdi_index *vi, const struct bt_change *ch)
{
	uint32_t from = ch->root_off, to = ch->root_off + ch->root_len;
	uint8_t buf[4];

	if (ch->counter) {
		put_le32(buf, vi->counter);
		if (write_inode(vi, buf, COUNTER_OFF, sizeof(buf)))
			return -1;
	}
	if (ch->root_hdr && (!ch->root_len || from <= HDR_MERGE))
		return write_root(vi, 0, ch->root_len ? to : BT_HDR);
	if (ch->root_len && write_root(vi, from, to))
		return -1;
	return ch->root_hdr ? write_root(vi, 0, BT_HDR) : 0;
}

static int btree_set(struct vdi_index *vi, uint32_t idx, uint32_t vid)
{
	struct bt_change ch;

	/* at most one split per set: a split makes room for the entry */
	for (int round = 0; round < 2; round++) {
		uint32_t counter = vi->counter;
		int ret = bt_set(vi->root, vi->vid, &counter, idx, vid,
				 &vi->cio, scratch_for(vi, idx), &ch);

		if (ret < 0)
			return -1;	/* the root is as it was */
		vi->counter = counter;
		if (write_back(vi, &ch)) {
			vi->broken = true;
			return -1;
		}
		if (!ret)
			return 0;
	}
	return -1;
}

static int flat_set(struct vdi_index *vi, uint32_t idx, uint32_t vid)
{
	uint8_t buf[4];

	if (idx >= vi->nr)
		return -1;
	if (vi->flat[idx] == vid)
		return 0;
	put_le32(buf, vid);
	if (write_inode(vi, buf, inode_index_offset(idx), sizeof(buf)))
		return -1;
	vi->flat[idx] = vid;
	return 0;
}

int vi_set(struct vdi_index *vi, uint32_t idx, uint32_t vid)
{
	if (vi->broken)
		return -1;
	return vi->btree ? btree_set(vi, idx, vid) : flat_set(vi, idx, vid);
}
