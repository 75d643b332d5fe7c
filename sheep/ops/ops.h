/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops/: the opcode table (ops.c) and the dispatcher (dispatch.c) that
 * runs every request, from a client or from the daemon, by its class.
 */
#ifndef SHEEP_OPS_OPS_H
#define SHEEP_OPS_OPS_H

#include <stdint.h>
#include "core/request.h"

/* the description of @opcode, or NULL for an unknown one */
const struct sd_op *get_sd_op(uint8_t opcode);
/* admit and run @req (req->op may be NULL: it is looked up) */
void queue_request(struct request *req);

#endif
