// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CONVERT_OBJ (internal_proto.h): one data object of a VDI that `dog vdi
 * alter-copy` moves between copies and a code.  While the VDI is being
 * copied (ALTER_VDI_COPY BEGIN), the object is read whole in the VDI's
 * layout and written whole in the new one, which the gateway's sub-request
 * marks conv_layout; once the new layout is the VDI's (COMMIT), the old
 * one is the other layout and its copy of the object is removed.  The
 * VDI's data takes no other writes while it is copied (gateway.c), so the
 * object written is the object read.
 */
#include <inttypes.h>
#include <stdlib.h>
#include "proto.h"
#include "util.h"
#include "core/request.h"
#include "gw/gw.h"
#include "state/vdi.h"

static uint32_t object_size(const struct request *req)
{
	uint64_t oid = req->rq.obj.oid;

	return sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));
}

static struct request *sub_request(struct request *req, uint8_t opcode,
				   void *data, uint32_t len,
				   void (*complete)(struct request *r))
{
	struct request *r = xzalloc(sizeof(*r));

	INIT_LIST_HEAD(&r->list);
	r->rq.opcode = opcode;
	r->rq.proto_ver = SD_PROTO_VER;
	r->rq.obj.oid = req->rq.obj.oid;
	r->rq.data_length = len;
	r->data = data;
	r->internal = true;
	r->complete = complete;
	r->caller = req;
	return r;
}

/* the object as read is in req->priv; sub-request @r is done */
static void convert_finish(struct request *r, uint32_t result)
{
	struct request *req = r->caller;

	req->rp.result = result;
	if (result != SD_RES_SUCCESS)
		sd_err("converting %" PRIx64 ": %s", req->rq.obj.oid,
		       sd_strerror(result));
	free(r);
	if (req->priv) {
		free(req->priv);
		req->priv = NULL;
		budget_release(object_size(req));
	}
	request_done(req);
}

static void written(struct request *r)
{
	convert_finish(r, r->rp.result);
}

/* the object's form in the new layout, as a conversion cut short left it */
static void cleared(struct request *r)
{
	struct request *req = r->caller, *w;

	if (r->rp.result != SD_RES_SUCCESS &&
	    r->rp.result != SD_RES_NO_OBJ) {
		convert_finish(r, r->rp.result);
		return;
	}
	free(r);
	w = sub_request(req, SD_OP_CREATE_AND_WRITE_OBJ, req->priv,
			object_size(req), written);
	w->rq.flags = SD_FLAG_CMD_WRITE;
	w->conv_layout = true;
	gateway_submit(w);
}

/*
 * Read whole: then whatever an earlier conversion left of the object in
 * the new layout goes (strips of another version would refuse or
 * confuse a fresh write), and the object is written whole there
 */
static void read_done(struct request *r)
{
	struct request *req = r->caller, *rm;

	r->data = NULL;		/* req->priv */
	if (r->rp.result != SD_RES_SUCCESS) {
		convert_finish(r, r->rp.result);
		return;
	}
	free(r);
	rm = sub_request(req, SD_OP_REMOVE_OBJ, NULL, 0, cleared);
	rm->conv_layout = true;
	gateway_submit(rm);
}

static void dropped(struct request *r)
{
	/* nothing left in the old layout is what dropping asks for */
	convert_finish(r, r->rp.result == SD_RES_NO_OBJ ? SD_RES_SUCCESS :
			  r->rp.result);
}

void gw_convert(struct request *req)
{
	uint64_t oid = req->rq.obj.oid;
	struct vdi_info *vi = vdi_get(oid_to_vid(oid), false);
	struct request *r;
	uint32_t size;

	if (!is_data_obj(oid) || !vi || vi->conv_state == VDI_CONV_NONE) {
		req->rp.result = SD_RES_INVALID_PARMS;
		request_done(req);
		return;
	}
	if (vi->conv_state == VDI_CONV_DROPPING) {
		r = sub_request(req, SD_OP_REMOVE_OBJ, NULL, 0, dropped);
		r->conv_layout = true;
		gateway_submit(r);
		return;
	}
	/* admitted with this cost (ops/validate.c request_cost) */
	size = object_size(req);
	req->priv = xmalloc(size);
	budget_charge(size);
	r = sub_request(req, SD_OP_READ_OBJ, req->priv, size, read_done);
	gateway_submit(r);
}
