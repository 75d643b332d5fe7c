// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Admission (protocol.md §10.1) and dispatch of every request by its
 * class: gateway requests to gw/, peer requests to the store on the I/O
 * pool, local ops on the main loop or the pool, cluster ops to group/.
 */
#include "util.h"
#include "core/request.h"
#include "group/group.h"
#include "gw/gw.h"
#include "ops/md.h"
#include "ops/ops.h"
#include "recovery/recovery.h"
#include "recovery/scrub.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "store/store.h"

static uint32_t admission(const struct request *req)
{
	if (cstate->status == SD_STATUS_KILLED)
		return SD_RES_KILLED;
	if (cstate->status == SD_STATUS_SHUTDOWN)
		return SD_RES_SHUTDOWN;
	if (cstate->status != SD_STATUS_OK && !req->op->force)
		return cstate->ctime ? SD_RES_WAIT_FOR_JOIN :
		       SD_RES_WAIT_FOR_FORMAT;
	return SD_RES_SUCCESS;
}

static uint32_t check_peer_epoch(struct request *req)
{
	/* recovery reads name the epoch they want in tgt_epoch */
	if (req->rq.flags & SD_FLAG_CMD_RECOVERY)
		return SD_RES_SUCCESS;
	if (req->rq.epoch < cstate->epoch)
		return SD_RES_OLD_NODE_VER;
	if (req->rq.epoch > cstate->epoch)
		return SD_RES_NEW_NODE_VER;
	return SD_RES_SUCCESS;
}

/*
 * An object that recovery has yet to bring here: wait for it.  A copy
 * that failed its checksums: the reader goes to another copy, this one is
 * repaired from it soon (scrub.c).
 */
static void peer_io_done(struct request *req)
{
	uint8_t op = req->rq.opcode;

	if (req->rp.result == SD_RES_EIO &&
	    (op == SD_OP_READ_PEER || op == SD_OP_WRITE_PEER))
		scrub_heal(req->rq.obj.oid, OBJ_IDX_REPLICA);
	/* a write that met a failing disk goes on once the node knows */
	if (req->rp.result == SD_RES_EIO &&
	    (op == SD_OP_WRITE_PEER || op == SD_OP_CREATE_AND_WRITE_PEER ||
	     op == SD_OP_EC_PREPARE) && md_park_eio(req))
		return;
	/* a strip: the reader decodes around it */
	if (req->rp.result == SD_RES_EIO && op == SD_OP_EC_READ)
		scrub_heal(req->rq.obj.oid, req->rq.obj.ec_index);

	if (req->rp.result == SD_RES_NO_OBJ &&
	    (op == SD_OP_READ_PEER || op == SD_OP_WRITE_PEER ||
	     is_strip_op(op) || op == SD_OP_DECREF_PEER) && recovery_park(req))
		return;
	/*
	 * A ledger neither here nor coming with recovery: the drop starts
	 * it here, from the original reference (gw/refcount.c)
	 */
	if (req->rp.result == SD_RES_NO_OBJ && op == SD_OP_DECREF_PEER &&
	    !req->ledger_afresh) {
		req->ledger_afresh = true;
		submit_io(req);
		return;
	}
	request_done(req);
}

void queue_request(struct request *req)
{
	uint32_t ret;

	req->completed = false;	/* dispatched (again): one completion due */
	if (!req->op)
		req->op = get_sd_op(req->rq.opcode);
	ret = admission(req);

	if (ret != SD_RES_SUCCESS)
		goto done;
	stat_request_start(req);
	switch (req->op->type) {
	case OP_GATEWAY:
		/* alter-copy's conversion drives the gateway from above it */
		if (req->rq.opcode == SD_OP_CONVERT_OBJ)
			gw_convert(req);
		else
			gateway_submit(req);
		return;
	case OP_PEER:
		ret = check_peer_epoch(req);
		if (ret != SD_RES_SUCCESS)
			goto done;
		req->obj_size = sd_obj_size(req->rq.obj.oid,
					    vdi_shift(oid_to_vid(
						    req->rq.obj.oid)));
		if (req->rq.opcode == SD_OP_CREATE_AND_WRITE_PEER &&
		    (uint64_t)req->rq.obj.offset + req->rq.data_length >
		    req->obj_size) {
			ret = SD_RES_INVALID_PARMS;
			goto done;
		}
		if (req->rq.opcode == SD_OP_CREATE_AND_WRITE_PEER &&
		    recovery_supersede(req))
			return;
		if (req->rq.opcode == SD_OP_FLUSH_PEER) {
			flush_submit(req);
			return;
		}
		req->io_done = peer_io_done;
		submit_io(req);
		return;
	case OP_LOCAL:
		if (req->rq.opcode == SD_OP_FLUSH_VDI) {
			gateway_flush(req);
			return;
		}
		/* a main part first, when there is one: it may submit work */
		if (req->op->work_fn && !req->op->main_fn) {
			submit_io(req);
			return;
		}
		if (!req->op->main_fn) {
			/* a connection op (OPV_CONN) that reached us */
			ret = SD_RES_INVALID_PARMS;
			goto done;
		}
		ret = (uint32_t)req->op->main_fn(req);
		if (ret == SD_RES_ASYNC)
			return;
		goto done;
	case OP_CLUSTER:
		ret = (uint32_t)cluster_op_submit(req);
		if (ret == SD_RES_SUCCESS)
			return;
		goto done;
	}
done:
	req->rp.result = ret;
	if (ret != SD_RES_SUCCESS && ret != SD_RES_WAIT_FOR_FORMAT &&
	    ret != SD_RES_WAIT_FOR_JOIN && ret != SD_RES_SHUTDOWN &&
	    req->rq.opcode != SD_OP_STAT_CLUSTER)
		req->rp.data_length = 0;
	request_done(req);
}
