/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Recovery of erasure-coded strips (doc/erasure-coding.md §5): which strip
 * of an object this node holds in a ring, rebuilding one from the strips
 * of a ring, and dropping the strips it no longer holds.
 */
#ifndef SHEEP_RECOVERY_STRIPS_H
#define SHEEP_RECOVERY_STRIPS_H

#include <stdint.h>
#include "hash.h"
#include "recovery/recovery.h"

/* the code of @oid's VDI if it is a data object of a coded VDI, else 0 */
uint8_t strip_policy(uint64_t oid);
/*
 * The strip of @oid this node holds in @ring, -1 if none, STRIP_NO_RING
 * if @ring has fewer zones than the code has data strips (with fewer
 * zones than strips, the last strips have no target)
 */
#define STRIP_NO_RING	(-2)
int strip_index(const struct vnode_ring *ring, uint64_t oid, uint8_t policy);
/*
 * The targets of @oid's strips in @ring (strip i on ring node tgt[i]):
 * D+P, or fewer (down to D) when the ring has fewer zones (the last strips
 * have none); -1 below D
 */
int strip_targets(const struct vnode_ring *ring, uint64_t oid,
		  uint8_t policy, int *tgt);
/* whether every strip of @oid has a target in @ring */
bool strips_all_placed(const struct vnode_ring *ring, uint64_t oid,
		       uint8_t policy);
/*
 * Rebuild strip @idx of @oid from the strips on @ring's targets (strip i
 * on target i); -1 (and no call of @done) if @ring has too few zones or
 * nobody handed recovery a way to rebuild
 */
int strip_rebuild(const struct vnode_ring *ring, uint64_t oid, uint8_t policy,
		  int idx, strip_rebuilt_fn done, void *arg);
/*
 * The same from every strip on any node of @ring, stale copies that kept
 * their version too (a last resort); -1 if it cannot be asked
 */
int strip_rebuild_anywhere(const struct vnode_ring *ring, uint64_t oid,
			   uint8_t policy, int idx, strip_rebuilt_fn done,
			   void *arg);

/* a coded object this node listed, and the strip it keeps (-1: none) */
struct strip_keep {
	uint64_t oid;
	int8_t keep;
	uint8_t n;		/* D+P */
};
/*
 * In a worker, once every node has recovered the epoch: remove the strips
 * of @k that this node no longer holds, unless *@stop turns true
 */
void strips_drop_misplaced(const struct strip_keep *k, size_t nr,
			   const bool *stop);

#endif
