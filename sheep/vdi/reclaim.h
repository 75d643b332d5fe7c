/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reclaiming the objects deleted VDIs left behind (vdi/reclaim.c). */
#ifndef SHEEP_VDI_RECLAIM_H
#define SHEEP_VDI_RECLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void vdi_reclaim_init(void);
/*
 * Main thread: start a pass over this node's store (after a DEL_VDI, or a
 * recovery every node finished); one more follows if one is running
 */
void vdi_reclaim_kick(void);
/* objects removed since start-up */
uint64_t vdi_reclaimed(void);

/* one VDI of the table, as a pass sees it */
struct reclaim_vdi {
	uint32_t vid, parent;
	uint8_t deleted;
	uint8_t below_live;	/* a live VDI descends from it */
	uint8_t checked;	/* 0 not yet, 1 its inode is cleared, 2 not */
	uint8_t has_local;	/* this node stores objects of it */
	uint8_t doubt;		/* its or a descendant's inode is in use */
};

void reclaim_sort(struct reclaim_vdi *v, size_t nr);
/* the entry of @vid in @v (sorted), or NULL; never one for vid 0 */
struct reclaim_vdi *reclaim_find(struct reclaim_vdi *v, size_t nr,
				 uint32_t vid);
/*
 * Set below_live on every entry of @v (sorted) that a live entry descends
 * from; return how many deleted entries have none: their objects can
 * only be named by deleted VDIs
 */
size_t reclaim_mark(struct reclaim_vdi *v, size_t nr);
/*
 * Whether a pass removes @oid: a data object or ledger of a deleted VDI
 * that no live VDI descends from, whose headers the pass read (has_local)
 * and found its and every descendant's inode cleared (no doubt)
 */
bool reclaim_take(struct reclaim_vdi *v, size_t nr, uint64_t oid);

#endif
