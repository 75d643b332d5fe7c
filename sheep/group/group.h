/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * group/: membership, epochs and cluster operations (cluster.md §3-§5)
 * over a cluster driver (driver.h).  The only writer of the cluster state
 * (state/cluster.h) besides state/ itself.
 */
#ifndef SHEEP_GROUP_GROUP_H
#define SHEEP_GROUP_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/request.h"

/* what group/ needs from the layers above it, handed over at start-up */
struct group_hooks {
	/* the cluster op of an opcode (ops/get_sd_op) */
	const struct sd_op *(*op_lookup)(uint8_t opcode);
	/* stop accepting client connections (cluster shutdown) */
	void (*stop_listening)(void);
	/* our own join was accepted: the daemon has started */
	void (*joined)(void);
};

int group_init(const char *driver, const struct group_hooks *hooks);
void group_join(void);
/* leave the cluster if joined (the daemon is stopping) */
void group_leave(void);

/* run a cluster op: SD_RES_SUCCESS when it will complete later */
int cluster_op_submit(struct request *req);

/* main parts of cluster ops that change the cluster state */
int group_format(const struct sd_req *req, const char *store);
void group_shutdown(void);
void group_set_recovery(bool disabled);
/* SD_RES_*: leave WAIT with the members present (dog cluster recover force) */
int group_force_recover(void);
int group_alter_copies(uint8_t copies);
/*
 * SD_RES_*: a member announces a new capacity (@space, 0: unchanged) or,
 * with fixed vnodes, a new count (@nr_vnodes, 0: unchanged); epoch+1
 */
int group_update_node(const struct node_id *nid, uint64_t space,
		      uint16_t nr_vnodes);
void group_set_killed(void);

/* this node's cluster_info header + latest epoch's nodes; returns bytes */
size_t cinfo_encode(void *buf, size_t max, uint8_t status);

#endif
