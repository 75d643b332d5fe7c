/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The public Sheepdog wire protocol (protocol.md, objects.md).
 *
 * Structures here are the *host* representation.  Their layout matches the
 * wire byte for byte (checked by the _Static_asserts below), but the byte
 * order on the wire is always little-endian: convert with the encode/decode
 * helpers of proto.h, never by sending a struct's memory directly.
 */
#ifndef SHEEPDOG_PROTO_H
#define SHEEPDOG_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define SD_PROTO_VER			0x02
#define SD_SHEEP_PROTO_VER		0x0a
#define SD_LISTEN_PORT			7000

#define SD_REQ_SIZE			48
#define SD_RSP_SIZE			48

/* public opcodes */
#define SD_OP_CREATE_AND_WRITE_OBJ	0x01
#define SD_OP_READ_OBJ			0x02
#define SD_OP_WRITE_OBJ			0x03
#define SD_OP_REMOVE_OBJ		0x04
#define SD_OP_DISCARD_OBJ		0x05
#define SD_OP_NEW_VDI			0x11
#define SD_OP_LOCK_VDI			0x12
#define SD_OP_RELEASE_VDI		0x13
#define SD_OP_GET_VDI_INFO		0x14
#define SD_OP_READ_VDIS			0x15
#define SD_OP_FLUSH_VDI			0x16
#define SD_OP_DEL_VDI			0x17
#define SD_OP_GET_CLUSTER_DEFAULT	0x18

/* public flags */
#define SD_FLAG_CMD_WRITE		0x0001
#define SD_FLAG_CMD_COW			0x0002
#define SD_FLAG_CMD_CACHE		0x0004
#define SD_FLAG_CMD_DIRECT		0x0008
#define SD_FLAG_CMD_PIGGYBACK		0x0010
#define SD_FLAG_CMD_TGT			0x0020
#define SD_FLAG_CMD_FWD			0x0040

/* public result codes */
#define SD_RES_SUCCESS			0x00
#define SD_RES_UNKNOWN			0x01
#define SD_RES_NO_OBJ			0x02
#define SD_RES_EIO			0x03
#define SD_RES_VDI_EXIST		0x04
#define SD_RES_INVALID_PARMS		0x05
#define SD_RES_SYSTEM_ERROR		0x06
#define SD_RES_VDI_LOCKED		0x07
#define SD_RES_NO_VDI			0x08
#define SD_RES_NO_BASE_VDI		0x09
#define SD_RES_VDI_READ			0x0A
#define SD_RES_VDI_WRITE		0x0B
#define SD_RES_BASE_VDI_READ		0x0C
#define SD_RES_BASE_VDI_WRITE		0x0D
#define SD_RES_NO_TAG			0x0E
#define SD_RES_STARTUP			0x0F
#define SD_RES_VDI_NOT_LOCKED		0x10
#define SD_RES_SHUTDOWN			0x11
#define SD_RES_NO_MEM			0x12
#define SD_RES_FULL_VDI			0x13
#define SD_RES_VER_MISMATCH		0x14
#define SD_RES_NO_SPACE			0x15
#define SD_RES_WAIT_FOR_FORMAT		0x16
#define SD_RES_WAIT_FOR_JOIN		0x17
#define SD_RES_JOIN_FAILED		0x18
#define SD_RES_HALT			0x19
#define SD_RES_READONLY			0x1A
#define SD_RES_INODE_INVALIDATED	0x1D

/* object ids (objects.md §1) */
#define VDI_SPACE_SHIFT			32
#define VDI_BIT				(UINT64_C(1) << 63)
#define VMSTATE_BIT			(UINT64_C(1) << 62)
#define VDI_ATTR_BIT			(UINT64_C(1) << 61)
#define VDI_BTREE_BIT			(UINT64_C(1) << 60)
#define LEDGER_BIT			(UINT64_C(1) << 59)
#define OID_TYPE_MASK			(UINT64_C(0x1f) << 59)
#define VID_MASK			UINT64_C(0x00FFFFFF00000000)

#define SD_NR_VDIS			(UINT32_C(1) << 24)
#define SD_MAX_VDI_LEN			256
#define SD_MAX_VDI_TAG_LEN		256
#define SD_MAX_VDI_ATTR_KEY_LEN		256
#define SD_MAX_VDI_ATTR_VALUE_LEN	65536
#define SD_MAX_COPIES			31
#define SD_DEFAULT_COPIES		3
#define SD_EC_MAX_STRIP			16

#define SD_DEFAULT_BLOCK_SIZE_SHIFT	22
#define SD_MIN_BLOCK_SIZE_SHIFT		20
#define SD_MAX_BLOCK_SIZE_SHIFT		31	/* the protocol's */
/*
 * Kelpie's largest object: recovery, repair and copy-on-write move an
 * object in one message of at most 64 MiB (SD_MAX_PAYLOAD).
 */
#define KELPIE_MAX_BLOCK_SIZE_SHIFT	26
#define SD_DATA_OBJ_SIZE		(UINT32_C(1) << 22)
#define SD_INODE_DATA_INDEX		(UINT32_C(1) << 20)
#define SD_INODE_HEADER_SIZE		4664
#define SD_INODE_INDEX_OFFSET		SD_INODE_HEADER_SIZE
#define SD_INODE_GREF_OFFSET		(SD_INODE_INDEX_OFFSET + 4 * SD_INODE_DATA_INDEX)
#define SD_INODE_SIZE			(SD_INODE_GREF_OFFSET + 8 * SD_INODE_DATA_INDEX)
#define SD_ATTR_OBJ_SIZE		66320
#define SD_LEDGER_OBJ_SIZE		(UINT32_C(1) << 22)
#define SD_BTREE_OBJ_SIZE		(UINT32_C(1) << 22)
#define SD_MAX_VDI_SIZE			(UINT64_C(1) << 54)	/* 16 PiB */

struct sd_req {
	uint8_t proto_ver;
	uint8_t opcode;
	uint16_t flags;
	uint32_t epoch;
	uint32_t id;
	uint32_t data_length;
	union {
		struct {
			uint64_t oid;
			uint64_t cow_oid;
			uint8_t copies;
			uint8_t copy_policy;
			uint8_t ec_index;
			uint8_t reserved;
			uint32_t tgt_epoch;
			uint32_t offset;
			uint32_t pad;
		} obj;
		struct {
			uint64_t vdi_size;
			uint32_t base_vdi_id;
			uint8_t copies;
			uint8_t copy_policy;
			uint8_t store_policy;
			uint8_t block_size_shift;
			uint32_t snapid;
			uint32_t type;
			uint32_t pad[2];
		} vdi;
		struct {
			uint64_t oid;
			uint64_t ctime;
			uint8_t copies;
			uint8_t copy_policy;
			uint16_t flags;
			uint32_t tag;
			uint32_t nodes_nr;
			uint8_t block_size_shift;
			/* Kelpie, MAKE_FS with STABLE_VNODES: le16 vnodes of a
			 * node of the mean capacity (0: 128) */
			uint8_t reserved[3];
		} cluster;
		struct {
			uint32_t old_vid;
			uint32_t new_vid;
			uint8_t copies;
			uint8_t set_bitmap;
			uint8_t copy_policy;
			uint8_t block_size_shift;
		} vdi_state;
		struct {
			uint64_t oid;
			uint32_t generation;
			uint32_t count;
			/* obj.copies..tgt_epoch: the gateway sets ec_index */
			uint8_t __reserved[8];
			/*
			 * Kelpie: the drop's identity, the same on every
			 * retry, so that a replica applies it once (0: none)
			 */
			uint64_t op_id;
		} ref;
		struct {
			uint64_t oid;
			uint8_t addr[16];
			uint16_t port;
		} forw;
		uint32_t __pad[8];
	};
};

struct sd_rsp {
	uint8_t proto_ver;
	uint8_t opcode;
	uint16_t flags;
	uint32_t epoch;
	uint32_t id;
	uint32_t data_length;
	union {
		uint32_t result;
		struct {
			uint32_t __result;
			uint8_t copies;
			uint8_t reserved[3];
			uint64_t offset;
		} obj;
		struct {
			uint32_t __result;
			uint32_t rsvd;
			uint32_t vdi_id;
			uint32_t attr_id;
			uint8_t copies;
			uint8_t block_size_shift;
			uint8_t reserved[2];
		} vdi;
		struct {
			uint32_t __result;
			uint32_t nr_nodes;
			uint32_t reserved[2];
			uint64_t store_size;
			uint64_t store_free;
		} node;
		struct {
			uint32_t __result;
			uint32_t reserved;
			uint8_t digest[20];
		} hash;
		struct {
			uint32_t __result;
			uint8_t nr_copies;
			uint8_t copy_policy;
			uint8_t block_size_shift;
		} cluster_default;
		uint32_t __pad[8];
	};
};

/* the inode header: the first 4664 bytes of an inode object */
struct sd_inode_header {
	char name[SD_MAX_VDI_LEN];
	char tag[SD_MAX_VDI_TAG_LEN];
	uint64_t create_time;
	uint64_t snap_ctime;
	uint64_t vm_clock_nsec;
	uint64_t vdi_size;
	uint64_t vm_state_size;
	uint8_t copy_policy;
	uint8_t store_policy;
	uint8_t nr_copies;
	uint8_t block_size_shift;
	uint32_t snap_id;
	uint32_t vdi_id;
	uint32_t parent_vdi_id;
	uint32_t btree_counter;
	uint8_t unused[4080];
	/*
	 * Kelpie, VID recycling (doc/vid-recycling.md): the last 12 bytes
	 * of the old child list.  Meaningful only with the magic.
	 */
	uint32_t kelpie_magic;		/* INODE_KELPIE_MAGIC */
	uint32_t recycle_gen;		/* incarnation of this vid */
	uint32_t kelpie_flags;		/* INODE_FREE */
};

#define INODE_KELPIE_MAGIC	0x4b4c5052	/* "KLPR" */
/* the vid is free: its VDI family was recycled (an inode kept as marker) */
#define INODE_FREE		0x1

struct sd_gref {
	int32_t generation;
	int32_t count;
};

#define SD_ASSERT_OFF(type, field, off) \
	_Static_assert(offsetof(struct type, field) == (off), #type "." #field)

_Static_assert(sizeof(struct sd_req) == SD_REQ_SIZE, "sd_req size");
_Static_assert(sizeof(struct sd_rsp) == SD_RSP_SIZE, "sd_rsp size");
SD_ASSERT_OFF(sd_req, epoch, 4);
SD_ASSERT_OFF(sd_req, id, 8);
SD_ASSERT_OFF(sd_req, data_length, 12);
SD_ASSERT_OFF(sd_req, obj.oid, 16);
SD_ASSERT_OFF(sd_req, obj.cow_oid, 24);
SD_ASSERT_OFF(sd_req, obj.copies, 32);
SD_ASSERT_OFF(sd_req, obj.ec_index, 34);
SD_ASSERT_OFF(sd_req, obj.tgt_epoch, 36);
SD_ASSERT_OFF(sd_req, obj.offset, 40);
SD_ASSERT_OFF(sd_req, vdi.vdi_size, 16);
SD_ASSERT_OFF(sd_req, vdi.base_vdi_id, 24);
SD_ASSERT_OFF(sd_req, vdi.copies, 28);
SD_ASSERT_OFF(sd_req, vdi.block_size_shift, 31);
SD_ASSERT_OFF(sd_req, vdi.snapid, 32);
SD_ASSERT_OFF(sd_req, vdi.type, 36);
SD_ASSERT_OFF(sd_req, cluster.ctime, 24);
SD_ASSERT_OFF(sd_req, cluster.copies, 32);
SD_ASSERT_OFF(sd_req, cluster.flags, 34);
SD_ASSERT_OFF(sd_req, cluster.tag, 36);
SD_ASSERT_OFF(sd_req, cluster.nodes_nr, 40);
SD_ASSERT_OFF(sd_req, cluster.block_size_shift, 44);
SD_ASSERT_OFF(sd_req, cluster.copy_policy, 33);
SD_ASSERT_OFF(sd_req, vdi_state.old_vid, 16);
SD_ASSERT_OFF(sd_req, vdi_state.new_vid, 20);
SD_ASSERT_OFF(sd_req, vdi_state.copies, 24);
SD_ASSERT_OFF(sd_req, vdi_state.set_bitmap, 25);
SD_ASSERT_OFF(sd_req, vdi_state.copy_policy, 26);
SD_ASSERT_OFF(sd_req, vdi_state.block_size_shift, 27);
SD_ASSERT_OFF(sd_req, ref.generation, 24);
SD_ASSERT_OFF(sd_req, ref.count, 28);
SD_ASSERT_OFF(sd_req, ref.op_id, 40);
SD_ASSERT_OFF(sd_req, forw.addr, 24);
SD_ASSERT_OFF(sd_req, forw.port, 40);
SD_ASSERT_OFF(sd_rsp, result, 16);
SD_ASSERT_OFF(sd_rsp, obj.copies, 20);
SD_ASSERT_OFF(sd_rsp, obj.offset, 24);
SD_ASSERT_OFF(sd_rsp, vdi.vdi_id, 24);
SD_ASSERT_OFF(sd_rsp, vdi.attr_id, 28);
SD_ASSERT_OFF(sd_rsp, vdi.copies, 32);
SD_ASSERT_OFF(sd_rsp, vdi.block_size_shift, 33);
SD_ASSERT_OFF(sd_rsp, node.nr_nodes, 20);
SD_ASSERT_OFF(sd_rsp, node.store_size, 32);
SD_ASSERT_OFF(sd_rsp, node.store_free, 40);
SD_ASSERT_OFF(sd_rsp, hash.digest, 24);
SD_ASSERT_OFF(sd_rsp, cluster_default.nr_copies, 20);
SD_ASSERT_OFF(sd_rsp, cluster_default.block_size_shift, 22);
_Static_assert(sizeof(struct sd_inode_header) == SD_INODE_HEADER_SIZE,
	       "inode header size");
SD_ASSERT_OFF(sd_inode_header, tag, 256);
SD_ASSERT_OFF(sd_inode_header, create_time, 512);
SD_ASSERT_OFF(sd_inode_header, snap_ctime, 520);
SD_ASSERT_OFF(sd_inode_header, vdi_size, 536);
SD_ASSERT_OFF(sd_inode_header, copy_policy, 552);
SD_ASSERT_OFF(sd_inode_header, nr_copies, 554);
SD_ASSERT_OFF(sd_inode_header, block_size_shift, 555);
SD_ASSERT_OFF(sd_inode_header, snap_id, 556);
SD_ASSERT_OFF(sd_inode_header, vdi_id, 560);
SD_ASSERT_OFF(sd_inode_header, parent_vdi_id, 564);
SD_ASSERT_OFF(sd_inode_header, btree_counter, 568);
_Static_assert(SD_INODE_SIZE == 12587576, "inode size");
_Static_assert(SD_INODE_GREF_OFFSET == 4198968, "gref offset");

/* object id helpers (objects.md §1.2) */
static inline uint64_t vid_to_vdi_oid(uint32_t vid)
{
	return VDI_BIT | ((uint64_t)vid << VDI_SPACE_SHIFT);
}

static inline uint64_t vid_to_data_oid(uint32_t vid, uint32_t idx)
{
	return ((uint64_t)vid << VDI_SPACE_SHIFT) | idx;
}

static inline uint64_t vid_to_vmstate_oid(uint32_t vid, uint32_t idx)
{
	return VMSTATE_BIT | ((uint64_t)vid << VDI_SPACE_SHIFT) | idx;
}

static inline uint64_t vid_to_attr_oid(uint32_t vid, uint32_t attr)
{
	return VDI_ATTR_BIT | ((uint64_t)vid << VDI_SPACE_SHIFT) | attr;
}

static inline uint64_t data_oid_to_ledger_oid(uint64_t oid)
{
	return oid | LEDGER_BIT;
}

static inline uint32_t oid_to_vid(uint64_t oid)
{
	return (uint32_t)((oid & VID_MASK) >> VDI_SPACE_SHIFT);
}

static inline uint32_t data_oid_to_idx(uint64_t oid)
{
	return (uint32_t)oid;
}

static inline int is_vdi_obj(uint64_t oid)
{
	return !!(oid & VDI_BIT);
}

static inline int is_vmstate_obj(uint64_t oid)
{
	return !!(oid & VMSTATE_BIT);
}

static inline int is_vdi_attr_obj(uint64_t oid)
{
	return !!(oid & VDI_ATTR_BIT);
}

static inline int is_ledger_obj(uint64_t oid)
{
	return !!(oid & LEDGER_BIT);
}

static inline int is_data_obj(uint64_t oid)
{
	return !(oid & OID_TYPE_MASK);
}

/* inode and ledger objects are stored sparse (cluster.md §11.4) */
static inline int is_sparse_obj(uint64_t oid)
{
	return is_vdi_obj(oid) || is_ledger_obj(oid);
}

/* size of an object of @oid in a VDI with objects of 1 << @shift bytes */
static inline uint32_t sd_obj_size(uint64_t oid, uint8_t shift)
{
	if (is_vdi_obj(oid))
		return SD_INODE_SIZE;
	if (is_vdi_attr_obj(oid))
		return SD_ATTR_OBJ_SIZE;
	if (is_ledger_obj(oid))
		return SD_LEDGER_OBJ_SIZE;
	if (oid & VDI_BTREE_BIT)
		return SD_BTREE_OBJ_SIZE;
	return UINT32_C(1) << (shift ? shift : SD_DEFAULT_BLOCK_SIZE_SHIFT);
}

/* erasure code policy byte (objects.md §2) */
static inline int ec_policy_data(uint8_t policy)
{
	return (policy >> 4) * 2;
}

static inline int ec_policy_parity(uint8_t policy)
{
	return policy & 0x0f;
}

const char *sd_strerror(uint32_t result);

#endif
