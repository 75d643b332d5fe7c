/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data index of an open VDI (doc/hyper-volumes.md §1): which vid owns
 * the object of each data index.  Two implementations behind one
 * interface: flat (the inode's data_vdi_id array, up to 2^20 entries) and
 * B-tree (hyper volumes, objects.md §12, up to 2^32 entries over
 * lib/btree.c), so that readers need not hold an array of every entry.
 *
 * vi_set writes the index back to the inode itself, through the caller's
 * write_inode, in the order of doc/hyper-volumes.md §2: after a split the
 * btree_counter, then the root range, before anything else changes.  The
 * caller writes the data object before it calls vi_set and acknowledges
 * its client after.
 *
 * One writer per VDI (the VDI lock, an exclusive export): an index is not
 * safe against a second writer, nor for use by two threads at once.
 */
#ifndef KELPIE_VINDEX_H
#define KELPIE_VINDEX_H

#include <stdbool.h>
#include <stdint.h>
#include "btree.h"

struct vi_io {
	/* B-tree node objects (unused by a flat index) */
	struct bt_io node;
	/* @len bytes at @off of the inode object: 0 or -1 */
	int (*write_inode)(void *arg, const uint8_t *buf, uint32_t off,
			   uint32_t len);
	void *arg;
};

struct vdi_index;

/*
 * A flat index of @nr entries (host order) of VDI @vid; @index is taken
 * over (freed by vi_close).  NULL: out of memory is fatal, so never.
 */
struct vdi_index *vi_open_flat(uint32_t vid, uint32_t *index, uint32_t nr,
			       const struct vi_io *io);
/*
 * The B-tree index of hyper volume @vid: @root is the inode's index area
 * (BT_NODE_SIZE bytes, taken over), @counter its btree_counter.
 */
struct vdi_index *vi_open_btree(uint32_t vid, uint8_t *root,
				uint32_t counter, const struct vi_io *io);
void vi_close(struct vdi_index *vi);

bool vi_is_btree(const struct vdi_index *vi);

/* *@vid: owner of data index @idx, 0 if unallocated.  0 or -1 (I/O, bad
 * node) */
int vi_get(struct vdi_index *vi, uint32_t idx, uint32_t *vid);

/*
 * Map @idx to @vid and write the change back to the inode (and leaf
 * objects).  A B-tree entry cannot be cleared (@vid 0); a flat index has
 * no entry at or above its @nr.  0 or -1.  After a failed write-back of
 * the inode the index no longer matches what is stored and refuses every
 * call: reopen it.
 */
int vi_set(struct vdi_index *vi, uint32_t idx, uint32_t vid);

/*
 * @fn for every allocated entry in index order until it returns non-zero
 * (returned); -1 for a failed read or a bad node.
 */
int vi_for_each(struct vdi_index *vi,
		int (*fn)(uint32_t idx, uint32_t vid, void *arg), void *arg);

/* the leaf objects of a B-tree index (none for flat or one-level) */
int vi_for_each_leaf(struct vdi_index *vi,
		     int (*fn)(uint64_t oid, void *arg), void *arg);

/* the btree_counter as vi_set left it */
uint32_t vi_counter(const struct vdi_index *vi);

#endif
