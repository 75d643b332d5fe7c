/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnode counts: fixed or weighted by capacity (cluster.md §2.4) */
#ifndef SHEEP_GROUP_VNODES_H
#define SHEEP_GROUP_VNODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "internal_proto.h"

/* is the cluster formatted with capacity-weighted vnodes? */
bool vnodes_auto(void);
/*
 * Set the capacity and vnode count of every member of a formatted
 * cluster: the latest epoch's record of a member wins (updates live
 * there), then automatic vnodes are weighted by capacity.
 */
void vnodes_weigh(struct sd_node *members, size_t nr,
		  const struct sd_node *epoch, size_t nr_epoch);
/* start-up: -1 (logged) if this node's -V does not fit its cluster */
int vnodes_check_self(const struct sd_node *epoch, size_t nr_epoch,
		      uint32_t epoch_nr);
/* may a node whose join message says @fixed join this cluster? */
bool vnodes_joiner_ok(const struct sd_node *joining, bool fixed);
/*
 * dog cluster reweight on this node: measure the capacity in an I/O
 * worker and, if it moved by 1 % or more, announce it (UPDATE_NODE)
 */
void vnodes_reweigh_self(void);

#endif
