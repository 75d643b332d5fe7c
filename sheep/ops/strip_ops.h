/* SPDX-License-Identifier: GPL-2.0-or-later */
/* EC_PREPARE, EC_COMMIT, EC_ABORT, EC_STATE: a target's strips (strip_ops.c) */
#ifndef SHEEP_OPS_STRIP_OPS_H
#define SHEEP_OPS_STRIP_OPS_H

#include "core/request.h"

/*
 * The op of @rq (validated: OPV_STRIP) on the store, for an object of
 * @obj_size bytes; SD_RES_*
 */
int strip_exec(const struct sd_req *rq, void *data, struct sd_rsp *rp,
	       uint32_t obj_size);
/* the same for a request, on an I/O worker */
int strip_peer_work(struct request *req);

#endif
