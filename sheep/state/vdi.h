/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The VDI table of this node (state/vdi.c). */
#ifndef SHEEP_STATE_VDI_H
#define SHEEP_STATE_VDI_H

#include <stdbool.h>
#include <stdint.h>
#include "internal_proto.h"

struct vdi_info {
	uint8_t nr_copies;
	uint8_t copy_policy;
	uint8_t block_size_shift;
	uint8_t snapshot;
	uint8_t deleted;
	/*
	 * parent_vid is not known: the entry came from a message that does
	 * not carry it (a lock, a deletion or Sheepdog's NOTIFY_VDI_ADD of a
	 * VDI this node had not heard of).  Reclaiming trusts no lineage
	 * while such an entry exists (vdi/reclaim.c).
	 */
	uint8_t parent_unknown;
	uint32_t parent_vid;
	uint32_t lock_state;
	struct node_id lock_owner;
	/*
	 * dog vdi alter-copy between copies and a code: the other layout
	 * (the new one while copying, the old one while dropping).  Kept
	 * in memory only: a restart forgets it, and the inode header says
	 * which layout the VDI has.
	 */
	uint8_t conv_state;		/* VDI_CONV_* */
	uint8_t conv_copies;
	uint8_t conv_policy;
	/*
	 * VID recycling (doc/vid-recycling.md): the vid is free again, its
	 * family recycled; gen (low 16 bits of the inode's recycle_gen)
	 * orders what nodes say about the vid: a free marker of gen g, then
	 * the VDI of gen g, then its deletion, then the marker of gen g + 1.
	 */
	uint8_t recycled;
	uint16_t gen;
};

enum { VDI_CONV_NONE, VDI_CONV_COPYING, VDI_CONV_DROPPING };

int vdi_init_bitmaps(void);
/* start-up: rebuild the bitmaps and VDI state from local inodes */
void vdi_scan_local(void);
/* the state of a VDI as its inode header tells (in use, snapshot, deleted) */
void vdi_set_from_header(const struct sd_inode_header *h);
void vdi_set_inuse(uint32_t vid, bool on);
void vdi_set_deleted(uint32_t vid, bool on);
bool vdi_test_inuse(uint32_t vid);
bool vdi_test_deleted(uint32_t vid);
/* recycling: the vid is free again, its old family's objects go (any thread) */
bool vdi_test_free(uint32_t vid);
/* the lowest vid >= @from not in use, 0 if none (any thread) */
uint32_t vdi_next_clear(uint32_t from);
/* the highest vid below @below in use or deleted, 0 if none (any thread) */
uint32_t vdi_prev_used(uint32_t below);
/* main thread: @vid becomes free at @gen (a RECYCLE_VDIS, a marker) */
void vdi_mark_free(uint32_t vid, uint16_t gen);
/* main thread: a free @vid is taken by a new VDI (NEW_VDI), gen kept */
void vdi_clear_free(uint32_t vid);
/*
 * Called (main thread) whenever a vid becomes free here: objects of its
 * old family this node holds must go (vdi/recycle.c hands it down)
 */
void vdi_set_free_hook(void (*fn)(uint32_t vid));
/*
 * The state of other nodes is being fetched (group.c, at joins): what
 * this node says about free vids may still change
 */
void vdi_sync_begin(void);
void vdi_sync_end(void);
bool vdi_syncing(void);
void vdi_bitmap_read(bool deleted, void *buf);
struct vdi_info *vdi_get(uint32_t vid, bool create);
/* the VDI's copies and object size shift, or the cluster's defaults */
uint32_t vdi_copies(uint32_t vid);
uint8_t vdi_shift(uint32_t vid);
void vdi_reset(void);
void vdi_merge_state(const struct vdi_state *vs, bool running);
void vdi_release_node_locks(const struct node_id *nid);
/*
 * Is @vid locked by a client (its node in @owner)?  For a cluster op's
 * work_fn too: it runs while the cluster is blocked, when no cluster op
 * changes the table
 */
bool vdi_locked(uint32_t vid, struct node_id *owner);
/*
 * The table may lack VDIs: the state of a member could not be fetched at
 * join (group.c), so nothing may be concluded from a VDI's absence
 */
void vdi_state_mark_partial(void);
/* every VDI in use has an entry whose parent is known, none is missing */
bool vdi_lineage_known(void);
void vdi_for_each(void (*fn)(uint32_t vid, struct vdi_info *vi, void *arg),
		  void *arg);

#endif
