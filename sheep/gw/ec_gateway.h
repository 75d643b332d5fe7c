/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The gateway's path for data objects of erasure-coded VDIs
 * (doc/erasure-coding.md §3, §4, §4a): writes as versioned two-phase
 * strip updates, reads that decode around missing strips.
 */
#ifndef SHEEP_GW_EC_GATEWAY_H
#define SHEEP_GW_EC_GATEWAY_H

#include <stdbool.h>
#include <stdint.h>
#include "core/request.h"
#include "hash.h"

/* the code of @oid's VDI if it is a data object of a coded VDI, else 0 */
uint8_t gw_ec_policy(uint64_t oid);
/* VDI @vid changes layout: the versions known of its objects go */
void gw_ec_forget_vdi(uint32_t vid);

/*
 * Run READ_OBJ, WRITE_OBJ or CREATE_AND_WRITE_OBJ @req on the targets
 * @nodes (strip i on nodes[i]; @n from D to D+P: with fewer zones than
 * strips the last strips have no target, and do without; the caller holds
 * the object's write slot for a write); @done gets the result (the
 * request's reply data and length are set for a read).
 */
void gw_ec_start(struct request *req, uint8_t policy,
		 const struct sd_node *nodes, int n,
		 void (*done)(struct request *req, uint32_t result));

/*
 * Recovery: strip @idx of @oid rebuilt from the strips on @nodes (strip i
 * on nodes[i], @n of them, D to D+P; a node that does not answer counts
 * as a lost strip): the
 * whole object is read (versions in doubt resolved), decoded and encoded.
 * @rebuilt gets SD_RES_*, the version and the strip (object_size / D
 * bytes, the callee's to free; NULL on failure).  The strips' reads carry
 * SD_FLAG_CMD_RECOVERY: a target recovering the object answers at once.
 */
typedef void (*gw_ec_rebuilt_fn)(void *arg, uint32_t result, uint64_t v,
				 uint8_t *strip);
void gw_ec_rebuild(uint64_t oid, uint8_t policy, uint32_t obj_size,
		   const struct sd_node *nodes, int n, int idx,
		   gw_ec_rebuilt_fn rebuilt, void *arg);
/*
 * The same when those fail (recovery's last resort): every strip asked of
 * every node of @all, live or a stale copy that kept its settled version
 * (a node that came back after the cluster moved on); the newest copy of
 * each is read from where it is.  SD_RES_NO_OBJ when fewer than D strips
 * are anywhere.
 */
void gw_ec_rebuild_anywhere(uint64_t oid, uint8_t policy, uint32_t obj_size,
			    const struct sd_node *all, int nall, int idx,
			    gw_ec_rebuilt_fn rebuilt, void *arg);

#endif
