/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The index of a hyper volume (objects.md §12): a B-tree of at most two
 * levels mapping a data index to the vid owning the object.  The root is
 * the inode's 4 MiB index area; when it is a full leaf it is split into
 * two leaf objects (B-tree node objects, ids from the inode's
 * btree_counter) and becomes a root of indirect entries.
 *
 * A node: {le16 magic 0x6274, le16 depth, le32 entries} then the entries,
 * sorted by index: leaves (depth 1) {le32 idx, le32 vid}, the root of a
 * two-level tree (depth 2) {le32 largest idx of the child, le32 pad, le64
 * child oid}.
 *
 * Node contents come from the network or a disk: every function checks
 * what it reads (magic, depth, counts, order where it walks) and fails
 * with -1 rather than read outside a node.
 */
#ifndef KELPIE_BTREE_H
#define KELPIE_BTREE_H

#include <stdbool.h>
#include <stdint.h>
#include "sheepdog_proto.h"

#define BT_MAGIC	0x6274
#define BT_HDR		8
#define BT_NODE_SIZE	SD_BTREE_OBJ_SIZE	/* also the root's area */
#define BT_LEAF_MAX	((BT_NODE_SIZE - BT_HDR) / 8)	/* 524,287 */
#define BT_ROOT_MAX	((BT_NODE_SIZE - BT_HDR) / 16)	/* 262,143 */

/* how a tree's node objects are read and written */
struct bt_io {
	/* the whole node @oid (BT_NODE_SIZE bytes) into @buf: 0 or -1 */
	int (*read)(void *arg, uint64_t oid, uint8_t *buf);
	/*
	 * @len bytes at @off of node @oid; @create: a new object of
	 * BT_NODE_SIZE bytes, zero beyond what is written.  0 or -1.
	 */
	int (*write)(void *arg, uint64_t oid, const uint8_t *buf,
		     uint32_t off, uint32_t len, bool create);
	void *arg;
};

/*
 * What bt_set changed in the caller's copy of the inode: the root's
 * header (its first BT_HDR bytes), a range of the root area, the
 * btree_counter.  Offsets are from the start of the root area.
 */
struct bt_change {
	bool root_hdr;
	uint32_t root_off, root_len;	/* len 0: no entry changed */
	bool counter;
};

static inline uint64_t vid_to_btree_oid(uint32_t vid, uint32_t n)
{
	return VDI_BTREE_BIT | ((uint64_t)vid << VDI_SPACE_SHIFT) | n;
}

/* an empty tree in @root (BT_NODE_SIZE bytes) */
void bt_init(uint8_t *root);

/*
 * *@vid: the vid owning data index @idx, 0 if unallocated.  @scratch:
 * BT_NODE_SIZE bytes for a leaf.  0, or -1 (a bad node, a failed read).
 */
int bt_lookup(const uint8_t *root, uint32_t idx, const struct bt_io *io,
	      uint8_t *scratch, uint32_t *vid);

/*
 * Map @idx to @value (non-zero) in the tree of volume @vid: in @root, or
 * in a leaf object (written through @io).  @ch says what the caller must
 * write back of its inode (root and btree_counter).  Returns 0 when done;
 * 1 when the leaf it needed was full and has been split (new leaf objects
 * written, ids from *@counter, the root changed): the caller writes back
 * what @ch says and then calls again, so that the split is committed
 * before any leaf the stored root points at changes; -1 for a bad node, a
 * failed read or write, or a full index.  On failure the tree is as it
 * was, except that a split may have written a new leaf object no node
 * points at.
 */
int bt_set(uint8_t *root, uint32_t vid, uint32_t *counter, uint32_t idx,
	   uint32_t value, const struct bt_io *io, uint8_t *scratch,
	   struct bt_change *ch);

/*
 * Call @fn for every entry, in index order, until it returns non-zero
 * (returned).  -1 for a bad node or a failed read: a node whose entries
 * are out of order is bad.
 */
int bt_for_each(const uint8_t *root, const struct bt_io *io, uint8_t *scratch,
		int (*fn)(uint32_t idx, uint32_t vid, void *arg), void *arg);

/* the oids of the leaf objects (none for a one-level tree), in order;
 * -1 for a bad root */
int bt_for_each_leaf(const uint8_t *root,
		     int (*fn)(uint64_t oid, void *arg), void *arg);

/* the bytes of @node that its header counts (header included); 0 if bad */
uint32_t bt_node_len(const uint8_t *node);

/*
 * Give the tree in @root a copy of every leaf object it points at, owned
 * by volume @vid (same node ids, so the caller's btree_counter still
 * covers them), and point @root at the copies.  Entries are not changed:
 * they still name the volumes owning the data.  Used by snapshots and
 * clones, so that each volume writes only leaf objects of its own.
 * @scratch: BT_NODE_SIZE bytes.  0, or -1 (a bad node, a failed read or
 * write) with @root partly changed: the caller drops it, and the copies
 * made so far are objects no root points at.
 */
int bt_copy_leaves(uint8_t *root, uint32_t vid, const struct bt_io *io,
		   uint8_t *scratch);

#endif
