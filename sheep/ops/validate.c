// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every request header is checked here against its opcode's entry in the
 * table (OPV_* flags, max_len) before the daemon allocates its payload or
 * runs it: lengths, flags against the opcode, object ids and ranges,
 * cluster parameters, and who may send it.  Handlers may then trust the
 * header fields; payload contents are checked where they are parsed.
 */
#include "ec.h"
#include "util.h"
#include "core/request.h"
#include "ops/validate.h"
#include "state/vdi.h"

/* flags a client's object request never carries (see validate_request) */
#define OBJ_INTERNAL_FLAGS	(SD_FLAG_CMD_RECOVERY | SD_FLAG_CMD_WILDCARD | \
				 SD_FLAG_CMD_EXCL | SD_FLAG_CMD_DEL | \
				 SD_FLAG_CMD_KLOCK)

/* a data, inode, vmstate, attribute or ledger object id of a VDI */
static bool oid_valid(uint64_t oid)
{
	uint64_t type = oid & OID_TYPE_MASK;
	uint32_t vid = oid_to_vid(oid);

	/* bits between the VDI id and the type bits are never set */
	if (oid & (UINT64_C(7) << 56))
		return false;
	if (!vid)
		return false;
	/* at most one type bit */
	if (type & (type - 1))
		return false;
	if (type == VDI_BIT)
		return !(uint32_t)oid;
	/*
	 * Data objects: any index, as a hyper volume has 2^32 of them and
	 * the VDI state a node merged from others does not say which VDIs
	 * are hyper volumes.  Ledgers exist only for flat indexes.  B-tree
	 * nodes: any id the volume's btree_counter gave.
	 */
	if (type == LEDGER_BIT)
		return data_oid_to_idx(oid) < SD_INODE_DATA_INDEX;
	return true;
}

static bool range_valid(const struct sd_req *rq)
{
	uint64_t oid = rq->obj.oid;
	uint32_t size = sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));

	return (uint64_t)rq->obj.offset + rq->data_length <= size;
}

static bool shift_valid(uint8_t shift)
{
	return !shift || (shift >= SD_MIN_BLOCK_SIZE_SHIFT &&
			  shift <= KELPIE_MAX_BLOCK_SIZE_SHIFT);
}

/* MAKE_FS, ALTER_CLUSTER_COPY */
static bool cluster_valid(const struct sd_req *rq)
{
	if (rq->cluster.copies > SD_MAX_COPIES)
		return false;
	return shift_valid(rq->cluster.block_size_shift);
}

static bool new_vdi_valid(const struct sd_req *rq)
{
	if (rq->vdi.copies > SD_MAX_COPIES || rq->vdi.store_policy > 1)
		return false;
	return shift_valid(rq->vdi.block_size_shift);
}

static bool code_valid(uint8_t policy)
{
	int d = ec_policy_data(policy), p = ec_policy_parity(policy);

	return (d == 2 || d == 4 || d == 8 || d == 16) && p >= 1 && p <= 15;
}

static bool vdi_state_valid(const struct sd_req *rq)
{
	uint8_t policy = rq->vdi_state.copy_policy;

	if (!rq->vdi_state.new_vid || rq->vdi_state.new_vid >= SD_NR_VDIS ||
	    rq->vdi_state.old_vid >= SD_NR_VDIS)
		return false;
	if (!rq->vdi_state.copies || rq->vdi_state.copies > SD_MAX_COPIES)
		return false;
	/*
	 * A code, in a coded VDI's state restored (cluster snapshot load):
	 * its strips are the copies
	 */
	if (policy && (!code_valid(policy) || rq->vdi_state.copies !=
		       ec_policy_data(policy) + ec_policy_parity(policy)))
		return false;
	return shift_valid(rq->vdi_state.block_size_shift);
}

static bool strip_valid(const struct sd_req *rq)
{
	uint64_t oid = rq->obj.oid;
	struct vdi_info *vi = vdi_get(oid_to_vid(oid), false);
	uint8_t policy = rq->obj.copy_policy;
	uint32_t strip;

	/* inodes and other metadata of an EC VDI are replicated */
	if (!is_data_obj(oid) || !oid_valid(oid))
		return false;
	/* or the code alter-copy converts the VDI to, or from */
	if (!vi || !policy || !code_valid(policy) ||
	    (vi->copy_policy != policy &&
	     (!vi->conv_state || vi->conv_policy != policy)))
		return false;
	if (rq->obj.ec_index >= ec_policy_data(policy) +
				ec_policy_parity(policy))
		return false;
	if (rq->opcode == SD_OP_EC_STATE)
		return rq->data_length == EC_STATE_LEN;
	if (!rq->obj.cow_oid && rq->opcode != SD_OP_EC_READ)
		return false;
	if (rq->opcode == SD_OP_EC_PREPARE &&
	    ec_prev_get(rq) >= rq->obj.cow_oid)
		return false;
	if (rq->opcode != SD_OP_EC_PREPARE && rq->opcode != SD_OP_EC_READ &&
	    rq->opcode != SD_OP_EC_INSTALL)
		return !rq->data_length;
	strip = sd_obj_size(oid, vdi_shift(oid_to_vid(oid))) /
		(uint32_t)ec_policy_data(policy);
	if (rq->opcode == SD_OP_EC_INSTALL)	/* the whole strip */
		return !rq->obj.offset && rq->data_length == strip &&
		       rq->obj.copies <= 1;
	return rq->data_length &&
	       (uint64_t)rq->obj.offset + rq->data_length <= strip;
}

/* OIDS_EXIST of strips (dog vdi check -e): a code, one of its strips */
static bool exist_valid(const struct sd_req *rq)
{
	uint8_t policy = rq->obj.copy_policy;

	return !policy || (code_valid(policy) &&
			   rq->obj.ec_index < ec_policy_data(policy) +
					      ec_policy_parity(policy));
}

static uint32_t check_origin(const struct sd_op *op, enum req_origin from,
			     bool admin_ok)
{
	if (from == FROM_DAEMON)
		return SD_RES_SUCCESS;
	if (op->checks & OPV_INTERNAL)
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_PEER) && from != FROM_TRUSTED)
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_ADMIN) && !admin_ok)
		return SD_RES_INVALID_PARMS;
	return SD_RES_SUCCESS;
}

uint32_t validate_request(const struct sd_req *rq, const struct sd_op *op,
			  enum req_origin from, bool admin_ok)
{
	uint32_t max = op->max_len ? op->max_len : SD_MAX_PAYLOAD;
	uint32_t ret = check_origin(op, from, admin_ok);

	if (ret != SD_RES_SUCCESS)
		return ret;
	if (rq->data_length > max)
		return SD_RES_INVALID_PARMS;
	/* a write without its payload would store whatever the buffer held */
	if ((op->checks & OPV_PAYLOAD) && rq->data_length &&
	    !(rq->flags & SD_FLAG_CMD_WRITE))
		return SD_RES_INVALID_PARMS;
	/*
	 * A read with the write flag would have its length taken for a
	 * payload (and once made the peer request claim one)
	 */
	if ((op->checks & OPV_READ) && (rq->flags & SD_FLAG_CMD_WRITE))
		return SD_RES_INVALID_PARMS;
	/*
	 * The flags from 0x80 up mean something only between sheep
	 * (recovery, wildcard epochs) or for other opcodes (attributes,
	 * locks): no client sets them on an object request
	 */
	if ((op->checks & OPV_OBJ) && op->type != OP_PEER &&
	    from != FROM_DAEMON && (rq->flags & OBJ_INTERNAL_FLAGS))
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_OBJ) && !oid_valid(rq->obj.oid))
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_RANGE) && !range_valid(rq))
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_CLUSTER) && !cluster_valid(rq))
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_NEW_VDI) && !new_vdi_valid(rq))
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_VDI_STATE) && !vdi_state_valid(rq))
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_STRIP) && !strip_valid(rq))
		return SD_RES_INVALID_PARMS;
	if ((op->checks & OPV_EXIST) && !exist_valid(rq))
		return SD_RES_INVALID_PARMS;
	return SD_RES_SUCCESS;
}

static uint32_t obj_size_of(uint64_t oid)
{
	return sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));
}

/*
 * A data object of a coded VDI: the gateway holds the strips of the
 * stripes the range touches, (D+P)/D of their bytes, and joins or merges
 * them in a buffer of those stripes (gw/ec_gateway.c)
 */
static uint64_t ec_cost(const struct sd_req *rq)
{
	struct vdi_info *vi;
	uint64_t start, end;
	int d, n;

	if (!is_data_obj(rq->obj.oid) || !rq->data_length)
		return 0;
	vi = vdi_get(oid_to_vid(rq->obj.oid), false);
	if (!vi || !vi->copy_policy)
		return 0;
	d = ec_policy_data(vi->copy_policy);
	n = d + ec_policy_parity(vi->copy_policy);
	if (!d)
		return 0;
	start = rq->obj.offset / EC_STRIPE_SIZE * EC_STRIPE_SIZE;
	end = ((uint64_t)rq->obj.offset + rq->data_length +
	       EC_STRIPE_SIZE - 1) / EC_STRIPE_SIZE * EC_STRIPE_SIZE;
	return (end - start) * (uint64_t)n / (uint64_t)d + (end - start);
}

/*
 * A conversion holds the object as read, then the strips of a coded write
 * (the other layout's code, or the VDI's)
 */
static uint64_t convert_cost(const struct sd_req *rq)
{
	struct vdi_info *vi = vdi_get(oid_to_vid(rq->obj.oid), false);
	uint64_t obj = obj_size_of(rq->obj.oid);
	uint8_t policy;
	int d;

	if (!vi)
		return 0;
	policy = vi->conv_policy ? vi->conv_policy : vi->copy_policy;
	d = ec_policy_data(policy);
	if (!policy || !d)
		return obj;
	return obj + obj * (uint64_t)(d + ec_policy_parity(policy)) /
		     (uint64_t)d + obj;
}

/* a check holds every strip twice (as read, as it should be) and the data */
static uint64_t ec_check_cost(const struct sd_req *rq)
{
	struct vdi_info *vi = vdi_get(oid_to_vid(rq->obj.oid), false);
	uint64_t obj = obj_size_of(rq->obj.oid);
	int d, n;

	if (!vi || !vi->copy_policy)
		return 0;
	d = ec_policy_data(vi->copy_policy);
	n = d + ec_policy_parity(vi->copy_policy);
	return d ? obj * 2 * (uint64_t)n / (uint64_t)d + obj : 0;
}

uint64_t request_cost(const struct sd_req *rq, const struct sd_op *op)
{
	uint64_t cost = rq->data_length;

	switch (rq->opcode) {
	case SD_OP_CREATE_AND_WRITE_OBJ:
		/* copy-on-write reads the whole source object */
		if (rq->flags & SD_FLAG_CMD_COW)
			cost += obj_size_of(rq->obj.oid);
		cost += ec_cost(rq);
		break;
	case SD_OP_READ_OBJ:
	case SD_OP_WRITE_OBJ:
		cost += ec_cost(rq);
		break;
	case SD_OP_GET_HASH:
		cost += obj_size_of(rq->obj.oid);
		break;
	case SD_OP_EC_CHECK:
		cost += ec_check_cost(rq);
		break;
	case SD_OP_CONVERT_OBJ:
		cost += convert_cost(rq);
		break;
	case SD_OP_REPAIR_REPLICA:
		cost += obj_size_of(rq->forw.oid);
		break;
	default:
		break;
	}
	return cost;
}
