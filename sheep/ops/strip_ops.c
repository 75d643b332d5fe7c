// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The target's half of erasure-coded writes, as peer ops (internal_proto.h
 * SD_OP_EC_*): validate.c has checked the strip, the code and the range,
 * so this only maps a request onto store/strip.c.
 */
#include <string.h>
#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "ops/strip_ops.h"
#include "store/store.h"

static int strip_state_reply(struct obj_key k, void *data, struct sd_rsp *rp)
{
	struct strip_state st;
	int ret = store_strip_state(k, &st);

	if (ret == SD_RES_SUCCESS) {
		strip_state_put(&st, data);
		rp->data_length = EC_STATE_LEN;
	}
	return ret;
}

static int strip_read_reply(const struct sd_req *rq, struct obj_key k,
			    void *data, struct sd_rsp *rp)
{
	uint64_t version = 0;
	int state = 0, ret;

	ret = store_strip_read(k, data, rq->data_length, rq->obj.offset,
			       &version, &state);
	if (ret == SD_RES_SUCCESS) {
		rp->data_length = rq->data_length;
		rp->obj.offset = version;
		rp->obj.copies = (uint8_t)state;
	}
	return ret;
}

/*
 * The last resort of a rebuild (recovery's, doc/erasure-coding.md §5):
 * with SD_FLAG_CMD_WILDCARD, a strip this node does not hold is answered
 * from its stale copy, when that kept the version it had settled at.
 */
static int stale_state_reply(struct obj_key k, void *data, struct sd_rsp *rp)
{
	struct strip_state st;
	uint64_t v;

	if (store_strip_stale_version(k, &v) != SD_RES_SUCCESS)
		return SD_RES_NO_OBJ;
	memset(&st, 0, sizeof(st));
	st.committed = st.high = v;
	strip_state_put(&st, data);
	rp->data_length = EC_STATE_LEN;
	return SD_RES_SUCCESS;
}

static int stale_read_reply(const struct sd_req *rq, struct obj_key k,
			    void *data, struct sd_rsp *rp)
{
	uint64_t v, again;
	uint32_t epoch;
	int ret;

	if (store_strip_stale_version(k, &v) != SD_RES_SUCCESS)
		return SD_RES_NO_OBJ;
	ret = store_read_stale(k, data, rq->data_length, rq->obj.offset,
			       &epoch);
	if (ret != SD_RES_SUCCESS)
		return ret;
	/* another copy moved in meanwhile: its bytes, maybe not of v */
	if (store_strip_stale_version(k, &again) != SD_RES_SUCCESS ||
	    again != v)
		return SD_RES_NO_OBJ;
	rp->data_length = rq->data_length;
	rp->obj.offset = v;
	rp->obj.copies = STRIP_FINAL;
	return SD_RES_SUCCESS;
}

int strip_exec(const struct sd_req *rq, void *data, struct sd_rsp *rp,
	       uint32_t obj_size)
{
	struct obj_key k = { .oid = rq->obj.oid, .idx = rq->obj.ec_index };
	uint32_t d = (uint32_t)ec_policy_data(rq->obj.copy_policy);
	uint64_t v = rq->obj.cow_oid;
	bool wild = rq->flags & SD_FLAG_CMD_WILDCARD;
	int ret;

	switch (rq->opcode) {
	case SD_OP_EC_PREPARE:
		return store_strip_prepare(k, obj_size / d, v,
					   ec_prev_get(rq), data,
					   rq->data_length, rq->obj.offset);
	case SD_OP_EC_INSTALL:
		if (rq->obj.offset || rq->data_length != obj_size / d)
			return SD_RES_INVALID_PARMS;
		/* obj.copies 1: a repair, which may replace version v */
		return store_strip_install(k, obj_size / d, v, data,
					   rq->obj.copies == 1);
	case SD_OP_EC_COMMIT:
		return store_strip_commit(k, v);
	case SD_OP_EC_ABORT:
		return store_strip_abort(k, v);
	case SD_OP_EC_STATE:
		ret = strip_state_reply(k, data, rp);
		return ret == SD_RES_NO_OBJ && wild ?
		       stale_state_reply(k, data, rp) : ret;
	case SD_OP_EC_READ:
		ret = strip_read_reply(rq, k, data, rp);
		return ret == SD_RES_NO_OBJ && wild ?
		       stale_read_reply(rq, k, data, rp) : ret;
	default:
		return SD_RES_INVALID_PARMS;
	}
}

int strip_peer_work(struct request *req)
{
	/* the object's size was taken on the main loop, with the VDI's */
	return strip_exec(&req->rq, req->data, &req->rp, req->obj_size);
}
