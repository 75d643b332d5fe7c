/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Validation of a request header against its opcode (validate.c), before
 * anything is allocated or stored.  The checks of each opcode are flags
 * in its table entry (ops.c).
 */
#ifndef SHEEP_OPS_VALIDATE_H
#define SHEEP_OPS_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>
#include "core/request.h"

/* the request names an object (obj.oid) of a valid class and VDI */
#define OPV_OBJ		(1 << 0)
/* obj.offset + data_length lies within the object */
#define OPV_RANGE	(1 << 1)
/* data_length is a payload the op consumes: it must be sent (WRITE) */
#define OPV_PAYLOAD	(1 << 2)
/* sheep-to-sheep and repair ops: only from members and local clients */
#define OPV_PEER	(1 << 3)
/* issued by the daemon itself only, never accepted from a connection */
#define OPV_INTERNAL	(1 << 4)
/* format, shutdown, kill, copies, recovery control: --admin-from */
#define OPV_ADMIN	(1 << 5)
/* cluster parameters (copies, policy, object size) in their ranges */
#define OPV_CLUSTER	(1 << 6)
/* VDI creation parameters (copies, object size) in their ranges */
#define OPV_NEW_VDI	(1 << 7)
/* about the connection itself: served by front/, never dispatched */
#define OPV_CONN	(1 << 8)
/* NOTIFY_VDI_ADD: the VDI id, copies and object size in their ranges */
#define OPV_VDI_STATE	(1 << 9)
/*
 * EC_*: a strip of a data object of an erasure-coded VDI, the VDI's own
 * code, a version (but for EC_STATE), a range within the strip
 */
#define OPV_STRIP	(1 << 10)
/* OIDS_EXIST: a code named (obj.copy_policy) and its strip index below D+P */
#define OPV_EXIST	(1 << 11)
/* a read: it never carries a payload, so never the write flag */
#define OPV_READ	(1 << 12)

/* who sent a request */
enum req_origin {
	FROM_DAEMON,	/* an internal request */
	FROM_TRUSTED,	/* a cluster member (with the cluster key, if any),
			 * loopback or the unix socket */
	FROM_CLIENT,	/* anyone else on the network */
};

/* SD_RES_SUCCESS, or the result to answer @rq with */
uint32_t validate_request(const struct sd_req *rq, const struct sd_op *op,
			  enum req_origin from, bool admin_ok);

/*
 * The payload bytes running @rq will hold at once: its payload plus the
 * object-sized buffers some ops take (copy-on-write, GET_HASH, repair).
 * Admission checks it against the budget before reading the payload.
 */
uint64_t request_cost(const struct sd_req *rq, const struct sd_op *op);

#endif
