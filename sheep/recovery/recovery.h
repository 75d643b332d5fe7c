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
int recovery_complete_main(const struct sd_req *req, struct sd_rsp *rsp,
			   void *data, const struct cluster_ctx *ctx);
void recovery_stale_everything(uint32_t epoch);

#endif
