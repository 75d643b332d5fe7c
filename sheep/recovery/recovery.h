/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * recovery/: after an epoch change, bring every object this node should
 * hold to it, move superseded copies to the stale area, and purge the
 * stale area once every node has recovered (cluster.md §7).
 */
#ifndef SHEEP_RECOVERY_RECOVERY_H
#define SHEEP_RECOVERY_RECOVERY_H

#include <stdbool.h>
#include <stdint.h>
#include "core/request.h"

void recovery_start(uint32_t old_epoch);
void recovery_reset(void);
/*
 * A recovery is about to start: park requests for it until it does (or
 * until called with false)
 */
void recovery_expect(bool expected);
void recovery_restart(void);
/* a peer request for an object recovery has yet to bring: wait for it */
bool recovery_park(struct request *req);
bool recovery_supersede(struct request *req);
int recovery_stat(struct recovery_state *st);
/* the last recovery that finished on this node: its epoch, objects checked */
void recovery_last(uint32_t *epoch, uint64_t *objects);
bool recovery_halted(void);
void recovery_resume(void);
void recovery_set_throttle(const struct recovery_throttling *t);
void recovery_get_throttle(struct recovery_throttling *t);
/* -R ...,adaptive: the throttle holds only while clients do I/O here */
void recovery_set_throttle_adaptive(bool on);
bool recovery_throttle_adaptive(void);
/* times recovery waited for the throttle; objects it let pass (adaptive) */
void recovery_throttle_counts(uint64_t *waits, uint64_t *passed);
int recovery_complete_main(const struct sd_req *req, struct sd_rsp *rsp,
			   void *data, const struct cluster_ctx *ctx);
void recovery_stale_everything(uint32_t epoch);
/*
 * How recovery rebuilds a strip of an erasure-coded object (gw/'s read
 * path, handed down by sheep.c): strip @idx of @oid from the strips on
 * @nodes (strip i on nodes[i]); @done gets SD_RES_*, the version and the
 * strip (object_size / D bytes, to free).
 */
typedef void (*strip_rebuilt_fn)(void *arg, uint32_t result, uint64_t v,
				 uint8_t *strip);
typedef void (*strip_rebuild_fn)(uint64_t oid, uint8_t policy,
				 uint32_t obj_size,
				 const struct sd_node *nodes, int n, int idx,
				 strip_rebuilt_fn done, void *arg);
void recovery_set_strip_rebuild(strip_rebuild_fn fn);
/*
 * The last resort, when the strips where the rings put them do not
 * decode: every strip asked of every node of @nodes (all @n members),
 * stale copies with a settled version too (gw_ec_rebuild_anywhere)
 */
void recovery_set_strip_rebuild_anywhere(strip_rebuild_fn fn);
/* called (main thread) each time every node has recovered an epoch */
void recovery_set_settled(void (*fn)(void));

#endif
