/* SPDX-License-Identifier: GPL-2.0-or-later */
/* FNV-1a hashing, vnodes and object placement (cluster.md §2) */
#ifndef KELPIE_HASH_H
#define KELPIE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include "internal_proto.h"

#define FNV1A_64_INIT	UINT64_C(0xcbf29ce484222325)
#define FNV_64_PRIME	UINT64_C(0x100000001b3)

uint64_t fnv_64a_buf(const void *buf, size_t len, uint64_t seed);
uint64_t sd_hash(const void *buf, size_t len);
uint64_t sd_hash_oid(uint64_t oid);
uint64_t sd_hash_next(uint64_t h);
uint32_t sd_hash_vdi(const char *name);

struct vnode {
	uint64_t hash;
	uint32_t node;		/* index into the ring's node array */
};

/* an immutable placement ring built from a member list */
struct vnode_ring {
	size_t nr_nodes;
	struct sd_node *nodes;	/* sorted member list */
	size_t nr_vnodes;
	struct vnode *vnodes;	/* sorted by hash */
	int nr_zones;
};

uint64_t node_base_hash(const struct node_id *nid);
int node_cmp(const struct sd_node *a, const struct sd_node *b);
int node_id_eq(const struct node_id *a, const struct node_id *b);
/*
 * Find nodes by id in O(log n): a copy of @nodes sorted by id (free()
 * it; NULL if out of memory), then nodes_find() in it.  Membership code
 * that looked each member up in another list went O(n^2): 180 ms at
 * 6,144 nodes, on the main loop of every node.
 */
struct sd_node *nodes_sorted_copy(const struct sd_node *nodes, size_t nr);
const struct sd_node *nodes_find(const struct sd_node *sorted, size_t nr,
				 const struct node_id *nid);
void nodes_sort(struct sd_node *nodes, size_t nr);

/*
 * Automatic vnodes (cluster.md §2.4): every storage node with a known
 * capacity gets rintf(128 * space / avg) vnodes, avg being the integer
 * mean capacity of those nodes, in IEEE single precision.  Gateways (0
 * vnodes) and nodes of unknown capacity (space 0) are left alone.  A
 * storage node never rounds down to 0 (it would silently stop storing
 * anything), and a count never passes 65535.
 */
void nodes_auto_vnodes(struct sd_node *nodes, size_t nr);
/* the same with @base vnodes for a node of the mean capacity, not 128 */
void nodes_auto_vnodes_base(struct sd_node *nodes, size_t nr, uint16_t base);

/*
 * Stable vnodes (Kelpie, cluster flag STABLE_VNODES, opt-in at format):
 * counts weighted by capacity like nodes_auto_vnodes, but a change of
 * membership re-weighs only the nodes it concerns.  The vnodes per byte
 * are the median of the counts over capacities in @prev (the latest
 * epoch's records); a storage node of @nodes whose record there still
 * fits that ratio (within a vnode and 1 %) keeps its count, any other
 * (a joiner, a node whose capacity changed) gets its capacity times the
 * ratio.  Without records to go by (the first epoch) it is
 * nodes_auto_vnodes_base with @base (0: 128), so the base chosen at
 * format lives on in the records.  Integer arithmetic only: every node
 * computes the same counts.
 */
void nodes_stable_vnodes(struct sd_node *nodes, size_t nr,
			 const struct sd_node *prev, size_t nr_prev,
			 uint16_t base);

/* returns 0, or -1 if out of memory */
int ring_build(struct vnode_ring *ring, const struct sd_node *nodes,
	       size_t nr);
void ring_free(struct vnode_ring *ring);
/*
 * Fill @tgt with the indices (into ring->nodes) of the first
 * min(copies, nr_zones) zone-distinct targets of @oid; returns the count.
 */
int ring_targets(const struct vnode_ring *ring, uint64_t oid, int copies,
		 int *tgt);

#endif
