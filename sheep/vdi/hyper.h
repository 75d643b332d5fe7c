/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The B-tree index of hyper volumes in VDI operations (vdi/hyper.c,
 * objects.md §12): copied for snapshots and clones, walked by DEL_VDI.
 * Cluster worker thread.
 */
#ifndef SHEEP_VDI_HYPER_H
#define SHEEP_VDI_HYPER_H

#include <stdbool.h>
#include <stdint.h>
#include "sheepdog_proto.h"

/* *@root: a new buffer with the index area of @vid (BT_NODE_SIZE) */
int hyper_read_root(uint32_t vid, uint8_t copies, uint8_t **root);

/*
 * Copy the leaf objects @root points at (read with @from_copies) to new
 * ones of the volume @h is the header of, and point @root at them: the
 * index the new inode is then created with.  SD_RES_*.
 */
int hyper_copy_root(uint8_t *root, uint8_t from_copies,
		    const struct sd_inode_header *h);

/*
 * Remove the data objects of hyper volume @vid that no other volume
 * still uses, then its leaf objects.  *@retain: some objects it names
 * are still in use, so its index (and leaves) must stay in the deleted
 * inode for later deletes in the family to look at again.  SD_RES_*; on
 * failure the caller keeps the inode (a retry walks again).
 */
int hyper_remove_objects(uint32_t vid, uint8_t copies, bool *retain);

#endif
