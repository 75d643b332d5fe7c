/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The node's view of the cluster: format parameters, status, epoch and
 * membership (cluster.md §3-§4).  Only group/ (membership and cluster
 * ops) and state/ change it, through cstate_mut(); every other layer
 * reads it through cstate, on the main thread.  Other threads read the
 * RCU-published cluster_view instead.
 */
#ifndef SHEEP_STATE_CLUSTER_H
#define SHEEP_STATE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <urcu.h>
#include "hash.h"
#include "internal_proto.h"

/* the published view of the cluster: immutable once published */
struct cluster_view {
	uint32_t epoch;
	uint8_t status;
	struct vnode_ring ring;		/* members of the current epoch */
	struct rcu_head rcu;
};

struct cluster_state {
	uint64_t ctime;
	uint16_t flags;
	uint8_t copies;
	uint8_t copy_policy;
	uint8_t block_size_shift;
	char store[SD_MAX_STORE_NAME];
	uint8_t status;
	uint8_t disable_recovery;
	uint32_t epoch;
	uint64_t epoch_since_ms;	/* unix ms: when this node entered it */
	/* stable vnodes: a mean node's count at format (0: 128) */
	uint16_t format_vnodes;
	bool joined;
	bool shutdown_clean;		/* the config's shutdown flag */
	struct sd_node *members;	/* current membership */
	size_t nr_members;
	struct sd_node *epoch_nodes;	/* node list of the latest epoch */
	size_t nr_epoch_nodes;
	struct cluster_view *view;	/* RCU-published */
};

extern const struct cluster_state *const cstate;
/* group/ and state/ only */
struct cluster_state *cstate_mut(void);

/* publish a new view from the current epoch, status and members */
void publish_view(void);
/* main thread only */
struct cluster_view *current_view(void);
bool node_is_self(const struct sd_node *n);
void set_members(const struct sd_node *nodes, size_t nr);
/*
 * Is the node "ADDR:PORT" (as node_to_str writes it) a member now?  Any
 * thread; an answer of the moment, as membership moves on
 */
#define MEMBER_NAME_LEN	64
bool cluster_has_member(const char *name);
/* the zones of the current ring, from any thread (of the moment too) */
int cluster_zones(void);
void set_epoch_nodes(const struct sd_node *nodes, size_t nr);

#endif
