// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Wire codec.  Host structures have the wire layout (asserted in the
 * protocol headers); what differs is only byte order.  Each structure is
 * described by the offsets and widths of its multi-byte fields, and one
 * generic routine moves the bytes, so a new structure costs one table.
 */
#include <string.h>
#include "proto.h"

struct wire_field {
	uint16_t off;
	uint8_t size;
	uint16_t count;		/* consecutive elements of that size */
};

#define F(o, s) { (o), (s), 1 }
#define FA(o, s, n) { (o), (s), (n) }
#define NR(a) (sizeof(a) / sizeof((a)[0]))

static void field_to_le(uint8_t *dst, const uint8_t *src, uint8_t size)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (size) {
	case 2:
		memcpy(&v16, src, 2);
		put_le16(dst, v16);
		break;
	case 4:
		memcpy(&v32, src, 4);
		put_le32(dst, v32);
		break;
	case 8:
		memcpy(&v64, src, 8);
		put_le64(dst, v64);
		break;
	}
}

static void field_from_le(uint8_t *dst, const uint8_t *src, uint8_t size)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (size) {
	case 2:
		v16 = get_le16(src);
		memcpy(dst, &v16, 2);
		break;
	case 4:
		v32 = get_le32(src);
		memcpy(dst, &v32, 4);
		break;
	case 8:
		v64 = get_le64(src);
		memcpy(dst, &v64, 8);
		break;
	}
}

/* @dst and @src both have the wire layout; convert listed fields */
static void wire_convert(void *dst, const void *src, size_t len,
			 const struct wire_field *f, size_t nr, int to_le)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (dst != src)
		memcpy(dst, src, len);
	for (size_t i = 0; i < nr; i++) {
		for (size_t j = 0; j < f[i].count; j++) {
			size_t off = f[i].off + j * f[i].size;

			if (to_le)
				field_to_le(d + off, s + off, f[i].size);
			else
				field_from_le(d + off, s + off, f[i].size);
		}
	}
}

static const struct wire_field hdr_fields[] = {
	F(2, 2), F(4, 4), F(8, 4), F(12, 4),
};

static const struct wire_field req_obj[] = {
	F(16, 8), F(24, 8), F(36, 4), F(40, 4), F(44, 4),
};
static const struct wire_field req_vdi[] = {
	F(16, 8), F(24, 4), F(32, 4), F(36, 4), F(40, 4), F(44, 4),
};
static const struct wire_field req_cluster[] = {
	F(16, 8), F(24, 8), F(34, 2), F(36, 4), F(40, 4),
};
static const struct wire_field req_vdi_state[] = {
	F(16, 4), F(20, 4),
};
static const struct wire_field req_ref[] = {
	F(16, 8), F(24, 4), F(28, 4),
};
static const struct wire_field req_forw[] = {
	F(16, 8), F(40, 2),
};

static const struct wire_field rsp_result[] = { F(16, 4) };
static const struct wire_field rsp_obj[] = { F(16, 4), F(24, 8) };
static const struct wire_field rsp_vdi[] = { F(16, 4), F(24, 4), F(28, 4) };
static const struct wire_field rsp_node[] = {
	F(16, 4), F(20, 4), F(32, 8), F(40, 8),
};

struct field_set {
	const struct wire_field *f;
	size_t nr;
};
#define SET(a) ((struct field_set){ (a), NR(a) })

static struct field_set req_union_fields(uint8_t opcode)
{
	switch (opcode) {
	case SD_OP_NEW_VDI ... SD_OP_GET_CLUSTER_DEFAULT:
	case SD_OP_GET_VDI_ATTR:
		return SET(req_vdi);
	case SD_OP_MAKE_FS:
	case SD_OP_STAT_CLUSTER:
	case SD_OP_ALTER_CLUSTER_COPY:
		return SET(req_cluster);
	case SD_OP_NOTIFY_VDI_ADD:
	case SD_OP_ALTER_VDI_COPY:
		return SET(req_vdi_state);
	case SD_OP_DECREF_OBJ:
	case SD_OP_DECREF_PEER:
		return SET(req_ref);
	case SD_OP_REPAIR_REPLICA:
		return SET(req_forw);
	default:
		return SET(req_obj);
	}
}

static struct field_set rsp_union_fields(uint8_t opcode)
{
	switch (opcode) {
	case SD_OP_CREATE_AND_WRITE_OBJ ... SD_OP_DISCARD_OBJ:
	case SD_OP_CREATE_AND_WRITE_PEER ... SD_OP_REMOVE_PEER:
	case SD_OP_EC_PREPARE ... SD_OP_EC_CHECK:	/* EC_READ's version */
		return SET(rsp_obj);
	case SD_OP_NEW_VDI ... SD_OP_DEL_VDI:
	case SD_OP_GET_VDI_ATTR:
		return SET(rsp_vdi);
	case SD_OP_GET_NODE_LIST:
	case SD_OP_STAT_SHEEP:
		return SET(rsp_node);
	default:
		return SET(rsp_result);
	}
}

void sd_req_encode(const struct sd_req *req, void *buf)
{
	struct field_set u = req_union_fields(req->opcode);

	wire_convert(buf, req, SD_REQ_SIZE, hdr_fields, NR(hdr_fields), 1);
	wire_convert(buf, req, SD_REQ_SIZE, u.f, u.nr, 1);
}

void sd_req_decode(struct sd_req *req, const void *buf)
{
	struct field_set u = req_union_fields(((const uint8_t *)buf)[1]);
	uint8_t tmp[SD_REQ_SIZE];

	wire_convert(tmp, buf, SD_REQ_SIZE, hdr_fields, NR(hdr_fields), 0);
	/* decode the union from the raw bytes, not the half-converted copy */
	for (size_t i = 0; i < u.nr; i++)
		field_from_le(tmp + u.f[i].off,
			      (const uint8_t *)buf + u.f[i].off, u.f[i].size);
	memcpy(req, tmp, SD_REQ_SIZE);
}

void sd_rsp_encode(const struct sd_rsp *rsp, void *buf)
{
	struct field_set u = rsp_union_fields(rsp->opcode);

	wire_convert(buf, rsp, SD_RSP_SIZE, hdr_fields, NR(hdr_fields), 1);
	wire_convert(buf, rsp, SD_RSP_SIZE, u.f, u.nr, 1);
}

void sd_rsp_decode(struct sd_rsp *rsp, const void *buf)
{
	struct field_set u = rsp_union_fields(((const uint8_t *)buf)[1]);
	uint8_t tmp[SD_RSP_SIZE];

	wire_convert(tmp, buf, SD_RSP_SIZE, hdr_fields, NR(hdr_fields), 0);
	for (size_t i = 0; i < u.nr; i++)
		field_from_le(tmp + u.f[i].off,
			      (const uint8_t *)buf + u.f[i].off, u.f[i].size);
	memcpy(rsp, tmp, SD_RSP_SIZE);
}

#define CODEC(name, type, table)					\
void name##_encode(const struct type *v, void *buf)			\
{									\
	wire_convert(buf, v, sizeof(*v), table, NR(table), 1);		\
}									\
void name##_decode(struct type *v, const void *buf)			\
{									\
	wire_convert(v, buf, sizeof(*v), table, NR(table), 0);		\
}

/* node_id: port @16, io_port @34 */
static const struct wire_field node_fields[] = {
	F(24 + 16, 2), F(24 + 34, 2), F(64, 2), F(66, 2), F(68, 4), F(72, 8),
};

void sd_node_encode(const struct sd_node *n, void *buf)
{
	wire_convert(buf, n, sizeof(*n), node_fields, NR(node_fields), 1);
	memset(buf, 0, sizeof(n->rb));
}

void sd_node_decode(struct sd_node *n, const void *buf)
{
	wire_convert(n, buf, sizeof(*n), node_fields, NR(node_fields), 0);
	memset(n->rb, 0, sizeof(n->rb));
}

void sd_nodes_encode(const struct sd_node *n, size_t nr, void *buf)
{
	for (size_t i = 0; i < nr; i++)
		sd_node_encode(&n[i], (uint8_t *)buf + i * sizeof(*n));
}

void sd_nodes_decode(struct sd_node *n, size_t nr, const void *buf)
{
	for (size_t i = 0; i < nr; i++)
		sd_node_decode(&n[i], (const uint8_t *)buf + i * sizeof(*n));
}

static const struct wire_field cinfo_fields[] = {
	F(2, 2), F(4, 4), F(8, 8), F(16, 2),
};
CODEC(cinfo_hdr, cluster_info_hdr, cinfo_fields)

static const struct wire_field epoch_log_fields[] = {
	F(0, 8), F(8, 8), F(16, 4), F(20, 4), F(30, 2),
};
CODEC(epoch_log_hdr, epoch_log_hdr, epoch_log_fields)

static const struct wire_field vdi_state_fields[] = {
	F(0, 4), F(10, 2), F(12, 4), F(16, 4), F(20 + 16, 2), F(20 + 34, 2),
	F(60, 4),
	FA(64, 4, SD_MAX_COPIES),
};

void vdi_state_encode(const struct vdi_state *v, void *buf)
{
	uint8_t *b = buf;

	wire_convert(buf, v, sizeof(*v), vdi_state_fields,
		     NR(vdi_state_fields), 1);
	for (int i = 0; i < SD_MAX_COPIES; i++) {
		put_le16(b + 188 + i * 40 + 16, v->participants[i].port);
		put_le16(b + 188 + i * 40 + 34, v->participants[i].io_port);
	}
}

void vdi_state_decode(struct vdi_state *v, const void *buf)
{
	const uint8_t *b = buf;

	wire_convert(v, buf, sizeof(*v), vdi_state_fields,
		     NR(vdi_state_fields), 0);
	for (int i = 0; i < SD_MAX_COPIES; i++) {
		v->participants[i].port = get_le16(b + 188 + i * 40 + 16);
		v->participants[i].io_port = get_le16(b + 188 + i * 40 + 34);
	}
}

static const struct wire_field inode_fields[] = {
	F(512, 8), F(520, 8), F(528, 8), F(536, 8), F(544, 8),
	F(556, 4), F(560, 4), F(564, 4), F(568, 4),
	F(4652, 4), F(4656, 4), F(4660, 4),
};
CODEC(inode_header, sd_inode_header, inode_fields)

static const struct wire_field config_fields[] = {
	F(0, 8), F(8, 2), F(30, 2), F(32, 8),
};
CODEC(config, sheepdog_config, config_fields)

static const struct wire_field recovery_state_fields[] = {
	F(4, 4), F(8, 8), F(16, 8),
};
CODEC(recovery_state, recovery_state, recovery_state_fields)

static const struct wire_field stat_fields[] = { FA(0, 8, 15) };
CODEC(sd_stat, sd_stat, stat_fields)

static const struct wire_field throttling_fields[] = { F(0, 4), F(8, 8) };
CODEC(throttling, recovery_throttling, throttling_fields)

void le32_array_encode(const uint32_t *v, size_t nr, void *buf)
{
	for (size_t i = 0; i < nr; i++)
		put_le32((uint8_t *)buf + 4 * i, v[i]);
}

void le32_array_decode(uint32_t *v, size_t nr, const void *buf)
{
	for (size_t i = 0; i < nr; i++)
		v[i] = get_le32((const uint8_t *)buf + 4 * i);
}

void le64_array_encode(const uint64_t *v, size_t nr, void *buf)
{
	for (size_t i = 0; i < nr; i++)
		put_le64((uint8_t *)buf + 8 * i, v[i]);
}

void le64_array_decode(uint64_t *v, size_t nr, const void *buf)
{
	for (size_t i = 0; i < nr; i++)
		v[i] = get_le64((const uint8_t *)buf + 8 * i);
}

int sd_opcode_is_internal(uint8_t opcode)
{
	return opcode >= 0x80;
}

static const char *const result_text[] = {
	[SD_RES_SUCCESS] = "Success",
	[SD_RES_UNKNOWN] = "Unknown error",
	[SD_RES_NO_OBJ] = "No object found",
	[SD_RES_EIO] = "I/O error",
	[SD_RES_VDI_EXIST] = "VDI exists already",
	[SD_RES_INVALID_PARMS] = "Invalid parameters",
	[SD_RES_SYSTEM_ERROR] = "System error",
	[SD_RES_VDI_LOCKED] = "VDI is already locked",
	[SD_RES_NO_VDI] = "No VDI found",
	[SD_RES_NO_BASE_VDI] = "No base VDI found",
	[SD_RES_VDI_READ] = "Failed to read from requested VDI",
	[SD_RES_VDI_WRITE] = "Failed to write to requested VDI",
	[SD_RES_BASE_VDI_READ] = "Failed to read from base VDI",
	[SD_RES_BASE_VDI_WRITE] = "Failed to write to base VDI",
	[SD_RES_NO_TAG] = "Failed to find requested tag",
	[SD_RES_STARTUP] = "System is still booting",
	[SD_RES_VDI_NOT_LOCKED] = "VDI is not locked",
	[SD_RES_SHUTDOWN] = "System is shutting down",
	[SD_RES_NO_MEM] = "Out of memory on server",
	[SD_RES_FULL_VDI] = "Maximum number of VDIs reached",
	[SD_RES_VER_MISMATCH] = "Protocol version mismatch",
	[SD_RES_NO_SPACE] = "Server has no space for new objects",
	[SD_RES_WAIT_FOR_FORMAT] = "Waiting for cluster to be formatted",
	[SD_RES_WAIT_FOR_JOIN] = "Waiting for other nodes to join cluster",
	[SD_RES_JOIN_FAILED] = "Node has failed to join cluster",
	[SD_RES_HALT] = "IO has halted as there are not enough living nodes",
	[SD_RES_READONLY] = "Object is read-only",
	[SD_RES_INODE_INVALIDATED] = "Inode object is invalidated",
	[SD_RES_OLD_NODE_VER] = "Request has an old epoch",
	[SD_RES_NEW_NODE_VER] = "Request has a new epoch",
	[SD_RES_NOT_FORMATTED] = "Cluster has not been formatted",
	[SD_RES_INVALID_CTIME] = "Creation times differ",
	[SD_RES_INVALID_EPOCH] = "Invalid epoch",
	[SD_RES_NETWORK_ERROR] = "Network error between sheep",
	[SD_RES_NO_CACHE] = "No object cache",
	[SD_RES_BUFFER_SMALL] = "The buffer is too small",
	[SD_RES_FORCE_RECOVER] =
		"Cluster is running/halted and cannot be force recovered",
	[SD_RES_NO_STORE] = "Targeted backend store is not found",
	[SD_RES_NO_SUPPORT] = "Operation is not supported",
	[SD_RES_NODE_IN_RECOVERY] = "Targeted node is in recovery",
	[SD_RES_KILLED] = "Node is killed",
	[SD_RES_OID_EXIST] = "Object ID exists already",
	[SD_RES_AGAIN] = "Ask to try again",
	[SD_RES_STALE_OBJ] = "Object may be stale",
	[SD_RES_CLUSTER_ERROR] = "Cluster driver error",
	[SD_RES_VDI_NOT_EMPTY] = "VDI is not empty",
	[SD_RES_NOT_FOUND] = "Cannot found target",
	[SD_RES_INCOMPLETE] = "Object (in kv) is incomplete uploading",
	[SD_RES_COLLECTING_CINFO] =
		"sheep is collecting cluster wide status of VDI",
	[SD_RES_GATEWAY_MODE] = "Targeted node is gateway mode",
	[SD_RES_INVALID_VNODES_STRATEGY] = "Invalid cluster vnodes strategy",
	[SD_RES_NO_CHECKPOINT_ENTRY] = "Missing checkpoint entry",
};

const char *sd_strerror(uint32_t result)
{
	if (result < NR(result_text) && result_text[result])
		return result_text[result];
	return "Invalid error code";
}
