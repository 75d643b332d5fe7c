/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The placement simulator's core (doc/scale.md, "Placement at 100 to
 * 10,000 nodes"): clusters of made-up nodes placed with the daemon's own
 * ring (lib/hash.c: ring_build, ring_targets, nodes_auto_vnodes) and,
 * for comparison, with weighted rendezvous hashing; a membership change
 * is measured as the copies it moves against the least any placement
 * must move, the moves no share change asks for, and the balance
 * before and after.
 */
#ifndef KELPIE_SIM_PLACEMENT_H
#define KELPIE_SIM_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "internal_proto.h"

enum sim_algo {
	SIM_RING,		/* the daemon's ring, as sheep places objects */
	SIM_RENDEZVOUS,		/* weighted rendezvous hashing, the reference */
};

struct sim_node {
	uint32_t id;		/* stable across memberships */
	uint32_t zone;
	uint64_t space;		/* capacity: the weight */
};

struct sim_layout {
	int copies;		/* replicas, or data + parity strips */
	bool strips;		/* erasure coding: the position is the strip */
	size_t nr_objects;
	uint32_t nr_ids;	/* node ids are below this */
	uint16_t fixed_vnodes;	/* sheep -V for every node; 0: by capacity */
	/* stable vnodes (format -S): the members before the change */
	bool stable;
	uint16_t base;		/* a mean node's vnodes at format (-S -N) */
	const struct sim_node *prev;
	size_t nr_prev;
};

/* where every copy of every object is: nr_objects * copies node ids */
struct sim_placement {
	uint32_t *node;
	int width;		/* copies placed per object (zones permitting) */
};

struct sim_change {
	uint64_t moved;		/* copies now on a node that lacked them */
	uint64_t ideal;		/* the least any weighted placement moves */
	uint64_t needless;	/* moved onto a node whose share does not
				 * grow, or off one that stays and does not
				 * shrink */
	double max_before;	/* max/mean of copies per unit of capacity */
	double max_after;
	double zone_max_after;	/* the same per zone */
};

int sim_place(enum sim_algo algo, const struct sim_node *nodes, size_t nr,
	      const struct sim_layout *lay, struct sim_placement *out);
void sim_placement_free(struct sim_placement *p);
/* no two copies of an object in one zone */
bool sim_zones_distinct(const struct sim_node *nodes, size_t nr,
			const struct sim_placement *p,
			const struct sim_layout *lay);

void sim_compare(const struct sim_node *before, size_t nr_before,
		 const struct sim_placement *pb,
		 const struct sim_node *after, size_t nr_after,
		 const struct sim_placement *pa,
		 const struct sim_layout *lay, struct sim_change *out);

/* max over nodes (or zones) of copies per capacity, over the mean */
double sim_balance(const struct sim_node *nodes, size_t nr,
		   const struct sim_placement *p,
		   const struct sim_layout *lay, bool by_zone);

/*
 * What recovery moves from @pb (members before) to @pa (members @after):
 * per node id, the copies it receives (@in) and sends (@out), each copy
 * read from the first holder before that is still a member (a strip
 * whose holder is gone is decoded from data-many others).  Returns the
 * objects some copy of which no member could give (lost).
 */
uint64_t sim_recovery_traffic(const struct sim_node *after, size_t nr_after,
			      const struct sim_placement *pb,
			      const struct sim_placement *pa,
			      const struct sim_layout *lay, int data,
			      uint64_t *in, uint64_t *out);

/* the data object ids the simulation places: spread over 256 VDIs */
uint64_t sim_oid(size_t i);

#endif
