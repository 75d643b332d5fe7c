/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sheep<->sheep and dog-only opcodes and payload structures
 * (protocol.md §6.2, §7.2, §9; cluster.md §3, §11.3).
 * Host representation with wire layout; see proto.h for the codec.
 */
#ifndef INTERNAL_PROTO_H
#define INTERNAL_PROTO_H

#include <stdbool.h>
#include "sheepdog_proto.h"

#define SD_OP_GET_NODE_LIST		0x82
#define SD_OP_MAKE_FS			0x84
#define SD_OP_SHUTDOWN			0x85
#define SD_OP_STAT_SHEEP		0x86
#define SD_OP_STAT_CLUSTER		0x87
#define SD_OP_GET_VDI_ATTR		0x89
#define SD_OP_FORCE_RECOVER		0x8a
#define SD_OP_GET_STORE_LIST		0x90
#define SD_OP_SNAPSHOT			0x91
#define SD_OP_RESTORE			0x92
#define SD_OP_GET_SNAP_FILE		0x93
#define SD_OP_CLEANUP			0x94
#define SD_OP_TRACE_STATUS		0x95
#define SD_OP_TRACE_READ_BUF		0x96
#define SD_OP_STAT_RECOVERY		0x97
#define SD_OP_FLUSH_DEL_CACHE		0x98
#define SD_OP_NOTIFY_VDI_DEL		0x99
#define SD_OP_KILL_NODE			0x9A
#define SD_OP_TRACE_ENABLE		0x9B
#define SD_OP_TRACE_DISABLE		0x9C
#define SD_OP_GET_OBJ_LIST		0xA1
#define SD_OP_GET_EPOCH			0xA2
#define SD_OP_CREATE_AND_WRITE_PEER	0xA3
#define SD_OP_READ_PEER			0xA4
#define SD_OP_WRITE_PEER		0xA5
#define SD_OP_REMOVE_PEER		0xA6
#define SD_OP_ENABLE_RECOVER		0xA8
#define SD_OP_DISABLE_RECOVER		0xA9
#define SD_OP_GET_VDI_COPIES		0xAB
#define SD_OP_COMPLETE_RECOVERY		0xAC
/* obsolete in the original; Kelpie: make cached writes durable */
#define SD_OP_FLUSH_PEER		0xAE
#define SD_OP_NOTIFY_VDI_ADD		0xAF
#define SD_OP_DELETE_CACHE		0xB0
#define SD_OP_MD_INFO			0xB1
#define SD_OP_MD_PLUG			0xB2
#define SD_OP_MD_UNPLUG			0xB3
#define SD_OP_GET_HASH			0xB4
#define SD_OP_REWEIGHT			0xB5
#define SD_OP_STAT			0xB8
#define SD_OP_GET_LOGLEVEL		0xB9
#define SD_OP_SET_LOGLEVEL		0xBA
#define SD_OP_EXIST			0xBD
#define SD_OP_CLUSTER_INFO		0xBE
#define SD_OP_ALTER_CLUSTER_COPY	0xBF
#define SD_OP_ALTER_VDI_COPY		0xC0
#define SD_OP_DECREF_OBJ		0xC1
#define SD_OP_DECREF_PEER		0xC2
#define SD_OP_REPAIR_REPLICA		0xC5
/* Kelpie: with obj.copy_policy set, strip obj.ec_index of each oid */
#define SD_OP_OIDS_EXIST		0xC6
#define SD_OP_READ_DEL_VDIS		0xC9
#define SD_OP_GET_RECOVERY		0xCA
#define SD_OP_SET_RECOVERY		0xCB
#define SD_OP_SET_VNODES		0xCC
#define SD_OP_GET_VNODES		0xCD
/* Kelpie: the cluster-key challenge between sheep (sheep/core/auth.h) */
#define SD_OP_AUTH_NONCE		0xE0
#define SD_OP_AUTH_PROVE		0xE1
/*
 * Kelpie: scrub (dog cluster scrub); the status reply is 11 le64: running,
 * total, verified, damaged, repaired, unrepaired (this scrub), detected,
 * healed, unhealed (since start-up; heals follow failed reads), diverged,
 * reconciled (this scrub: objects whose copies differed without rot, and
 * of them those made one)
 */
#define SD_OP_SCRUB_START		0xE2
#define SD_OP_SCRUB_STOP		0xE3
#define SD_OP_SCRUB_STATUS		0xE4
#define SCRUB_STATUS_LEN		88
/*
 * Kelpie: the node's counters as text in the Prometheus exposition format,
 * what `sheep --http` serves at /metrics (dog node stat -m); the reply
 * is at most METRICS_TEXT_MAX bytes, BUFFER_SMALL if data_length is short
 */
#define SD_OP_GET_METRICS		0xE5
#define METRICS_TEXT_MAX		(256 * 1024)
/*
 * Kelpie, between sheep only: the sender announces its changed record
 * (an sd_node: its capacity after dog cluster reweight); every node
 * replaces it, weighs the vnodes again and starts a new epoch
 */
#define SD_OP_UPDATE_NODE		0xE6
/*
 * Kelpie, between sheep only (the scrub, sheep/recovery/scrub.c): FENCE_OBJ
 * holds every write of obj.oid that the receiving gateway starts, once
 * its running writes have finished, for at most obj.offset milliseconds
 * (FENCE_LEASE_MAX at most); UNFENCE_OBJ lifts it.  Both carry the
 * sender's epoch (rq.epoch) and fail with OLD_NODE_VER/NEW_NODE_VER on
 * any other; AGAIN if the object is fenced already.
 */
#define SD_OP_FENCE_OBJ			0xE7
#define SD_OP_UNFENCE_OBJ		0xE8
#define FENCE_LEASE_MAX			30000
/*
 * Kelpie, between sheep only: versioned updates of the strips of an
 * erasure-coded object (doc/erasure-coding.md §3, sheep/store/strip.c).
 * obj.oid and obj.ec_index name the strip, obj.copy_policy is the VDI's
 * code (it must be the one the VDI has; its D sizes a strip: the object
 * size / D), obj.cow_oid is the version (never 0).  EC_PREPARE writes its
 * payload at obj.offset of the strip; EC_COMMIT makes every version up to
 * the one given final; EC_ABORT undoes the versions from it on; EC_STATE
 * answers EC_STATE_LEN bytes: le64 committed, le64 high, le32 number of
 * pending versions, le32 0, then STRIP_MAX_PENDING entries of {le64
 * version, le32 offset, le32 length, le32 complete, le32 0}.
 */
#define SD_OP_EC_PREPARE		0xE9
#define SD_OP_EC_COMMIT			0xEA
#define SD_OP_EC_ABORT			0xEB
#define SD_OP_EC_STATE			0xEC
/*
 * EC_READ: data_length bytes at obj.offset of the strip; the reply's
 * obj.offset is the version they are of, obj.copies 0 if it is committed,
 * 1 if pending, 2 if pending and cut short (store.h STRIP_*)
 */
#define SD_OP_EC_READ			0xED
/*
 * EC_PREPARE builds on the version it names, prev (below the version, 0
 * for the first write): obj.tgt_epoch holds its low 32 bits, obj.pad the
 * high ones.  A strip that holds an older version answers NO_OBJ (it
 * missed one the others committed), a newer one STALE_OBJ.
 * EC_INSTALL replaces the whole strip (obj.offset 0, data_length the
 * strip's size) by the payload, committed at version obj.cow_oid.
 */
#define SD_OP_EC_INSTALL		0xEE
/*
 * Kelpie, a gateway op (dog vdi check): every strip of coded object
 * obj.oid read, the object decoded, and every strip that is missing, of
 * another version or other bytes rebuilt (doc/erasure-coding.md §5).
 * The reply's obj.offset is the mask of the strips fixed; NO_OBJ if no
 * strip of it exists; INVALID_PARMS for an object that is not coded.
 */
#define SD_OP_EC_CHECK			0xEF
/*
 * Kelpie, a gateway op (dog vdi alter-copy between copies and a code):
 * data object obj.oid of a VDI under conversion (ALTER_VDI_COPY phases
 * below) is read whole in the VDI's layout and written whole in the
 * other one (copying), or its copy in the old layout is removed
 * (dropping).  INVALID_PARMS if its VDI is not being converted.
 */
#define SD_OP_CONVERT_OBJ		0xF0
/*
 * VID recycling (cluster flag 0x10, doc/vid-recycling.md).  RECYCLE_VDIS:
 * internal cluster op, its payload (vid, gen) le32 pairs of a deleted
 * family whose inodes the sender made free markers; every node marks the
 * vids free and removes its own objects of them.  RECYCLE_BUSY (peer):
 * SD_RES_SUCCESS if this node holds no object of obj.oid's vid from
 * before the recycle and its VDI table is settled, SD_RES_AGAIN if not
 * yet: a vid is reused only when every member says SUCCESS.
 */
#define SD_OP_RECYCLE_VDIS		0xF1
#define SD_OP_RECYCLE_BUSY		0xF2
/*
 * Kelpie, object storage (doc/object-storage.md): the registry of S3
 * users and buckets, a cluster op applied in total order.  Its payload is
 * a struct s3reg_req; the originator's work part changes the registry in
 * the system volume (VDI ".kelpie/s3", named by vid); every node's main
 * part then counts a new generation, and gateways read the registry again.
 * VDI_EXIST: the user or bucket exists; NO_VDI: it does not (or, adding
 * a bucket, its user does not); INVALID_PARMS: a malformed payload.
 * BUCKET_MOVE makes gateway/node/boot the bucket's owner if it still is
 * old_gateway/old_boot (else AGAIN) and that gateway is gone: its sheep
 * (the recorded node) is no member, or it is the new gateway's own
 * earlier life (same gateway, another boot); else VDI_LOCKED.
 */
#define SD_OP_S3_REGISTRY		0xF3
#define S3REG_USER_ADD			1
#define S3REG_USER_DEL			2
#define S3REG_BUCKET_ADD		3
#define S3REG_BUCKET_DEL		4
#define S3REG_BUCKET_MOVE		5
#define S3REG_NAME_LEN			64	/* with its NUL */
#define S3REG_ACCESS_LEN		32
#define S3REG_SECRET_LEN		64
#define S3REG_SYSTEM_VOLUME		".kelpie/s3"
struct s3reg_req {
	uint8_t kind;			/* S3REG_* */
	uint8_t pad[3];
	uint32_t vid;			/* the system volume */
	uint64_t created;		/* seconds since the epoch */
	char name[S3REG_NAME_LEN];	/* the user or the bucket */
	char user[S3REG_NAME_LEN];	/* a bucket's user */
	char access[S3REG_ACCESS_LEN];	/* a user's access key */
	char secret[S3REG_SECRET_LEN];	/* and secret */
	char gateway[S3REG_NAME_LEN];	/* a bucket's gateway, ADDR:PORT */
	char node[S3REG_NAME_LEN];	/* its sheep, ADDR:PORT */
	uint64_t boot;			/* the gateway's life (random) */
	char old_gateway[S3REG_NAME_LEN];	/* MOVE: the owner it replaces */
	uint64_t old_boot;
};
/*
 * ALTER_VDI_COPY's vdi_state.set_bitmap, for a change between copies and
 * a code (0: between numbers of copies, as Sheepdog): BEGIN records the
 * new layout (vdi_state.copies, copy_policy) beside the old one and
 * refuses other writes to the VDI's data; COMMIT makes the new layout
 * the VDI's, the old one is left to drop; FINISH forgets it; ABORT
 * forgets a new layout not committed.
 */
#define ALTER_CONV_BEGIN		1
#define ALTER_CONV_COMMIT		2
#define ALTER_CONV_FINISH		3
#define ALTER_CONV_ABORT		4
static inline bool is_strip_op(uint8_t opcode)
{
	return opcode >= SD_OP_EC_PREPARE && opcode <= SD_OP_EC_INSTALL;
}

static inline uint64_t ec_prev_get(const struct sd_req *rq)
{
	return rq->obj.tgt_epoch | (uint64_t)rq->obj.pad << 32;
}

static inline void ec_prev_set(struct sd_req *rq, uint64_t prev)
{
	rq->obj.tgt_epoch = (uint32_t)prev;
	rq->obj.pad = (uint32_t)(prev >> 32);
}
#define EC_STATE_ENTRY			24
#define EC_STATE_LEN			(24 + 16 * EC_STATE_ENTRY)

#define SD_FLAG_CMD_RECOVERY		0x0080
#define SD_FLAG_CMD_WILDCARD		0x0100
#define SD_FLAG_CMD_CREAT		0x0100
#define SD_FLAG_CMD_EXCL		0x0200
#define SD_FLAG_CMD_DEL			0x0400
/* Kelpie: LOCK_VDI locks even without the cluster's USE_LOCK flag */
#define SD_FLAG_CMD_KLOCK		0x0800

#define SD_RES_OLD_NODE_VER		0x81
#define SD_RES_NEW_NODE_VER		0x82
#define SD_RES_NOT_FORMATTED		0x83
#define SD_RES_INVALID_CTIME		0x84
#define SD_RES_INVALID_EPOCH		0x85
#define SD_RES_NETWORK_ERROR		0x86
#define SD_RES_NO_CACHE			0x87
#define SD_RES_BUFFER_SMALL		0x88
#define SD_RES_FORCE_RECOVER		0x89
#define SD_RES_NO_STORE			0x8A
#define SD_RES_NO_SUPPORT		0x8B
#define SD_RES_NODE_IN_RECOVERY		0x8C
#define SD_RES_KILLED			0x8D
#define SD_RES_OID_EXIST		0x8E
#define SD_RES_AGAIN			0x8F
#define SD_RES_STALE_OBJ		0x90
#define SD_RES_CLUSTER_ERROR		0x91
#define SD_RES_VDI_NOT_EMPTY		0x92
#define SD_RES_NOT_FOUND		0x93
#define SD_RES_INCOMPLETE		0x94
#define SD_RES_COLLECTING_CINFO		0x95
#define SD_RES_GATEWAY_MODE		0x97
#define SD_RES_INVALID_VNODES_STRATEGY	0x98
#define SD_RES_NO_CHECKPOINT_ENTRY	0x99

/* cluster status (cluster.md §3.2) */
#define SD_STATUS_OK			1
#define SD_STATUS_WAIT			2
#define SD_STATUS_SHUTDOWN		3
#define SD_STATUS_KILLED		4

/* cluster flags (cluster.md §3.3) */
#define SD_CLUSTER_FLAG_STRICT		0x0001
#define SD_CLUSTER_FLAG_DISKMODE	0x0002
#define SD_CLUSTER_FLAG_AUTO_VNODES	0x0004
#define SD_CLUSTER_FLAG_USE_LOCK	0x0008
#define SD_CLUSTER_FLAG_RECYCLE_VID	0x0010
#define SD_CLUSTER_FLAG_AVOID_DISKFULL	0x0020
/* Kelpie: with AUTO_VNODES, re-weigh only the nodes a change concerns */
#define SD_CLUSTER_FLAG_STABLE_VNODES	0x0040

#define SD_MAX_NODES			6144
#define SD_DEFAULT_VNODES		128
/* dog cluster format -S -N: the range of a mean node's vnodes */
#define SD_MIN_FORMAT_VNODES		16
#define SD_MAX_FORMAT_VNODES		4096
#define SD_MAX_EVENT_BUF_SIZE		(128 * 1024)
#define SD_FORMAT_VERSION		6
#define SD_MAX_STORE_NAME		16

#define LOCK_STATE_UNLOCKED		1
#define LOCK_STATE_LOCKED		2
#define LOCK_STATE_SHARED		3

struct node_id {
	uint8_t addr[16];
	uint16_t port;
	uint8_t io_addr[16];
	uint16_t io_port;
	uint8_t pad[4];
};

struct sd_node {
	uint8_t rb[24];		/* rb-tree links in the original; zero here */
	struct node_id nid;
	uint16_t nr_vnodes;
	uint16_t pad;
	uint32_t zone;
	uint64_t space;
};

struct cluster_info_hdr {
	uint8_t proto_ver;
	uint8_t disable_recovery;
	int16_t nr_nodes;
	uint32_t epoch;
	uint64_t ctime;
	uint16_t flags;
	uint8_t nr_copies;
	uint8_t copy_policy;
	uint8_t status;
	uint8_t block_size_shift;
	/* Kelpie: the sender runs with a fixed vnode count (sheep -V) */
	uint8_t fixed_vnodes;
	/* Kelpie: dog cluster format -N, le16 (cinfo_format_vnodes()) */
	uint8_t pad[2];
	char default_store[SD_MAX_STORE_NAME];
	uint8_t pad2[7];
};
#define SD_CLUSTER_INFO_SIZE \
	(sizeof(struct cluster_info_hdr) + SD_MAX_NODES * sizeof(struct sd_node))

struct epoch_log_hdr {
	uint64_t ctime;
	uint64_t time;
	uint32_t epoch;
	uint32_t nr_nodes;
	uint8_t disable_recovery;
	uint8_t nr_copies;
	uint8_t copy_policy;
	uint8_t pad[3];
	uint16_t flags;
	char drv_name[SD_MAX_STORE_NAME];
};

struct vdi_state {
	uint32_t vid;
	uint8_t nr_copies;
	uint8_t snapshot;
	uint8_t deleted;
	uint8_t copy_policy;
	uint8_t block_size_shift;
	uint8_t pad[1];			/* Kelpie: VDI_STATE_* flags */
	uint16_t recycle_gen;		/* Kelpie: low bits of the vid's gen */
	uint32_t parent_vid;
	uint32_t lock_state;
	struct node_id lock_owner;
	uint32_t nr_participants;
	uint32_t participants_state[SD_MAX_COPIES];
	struct node_id participants[SD_MAX_COPIES];
};

/* Kelpie: flags in vdi_state.pad[0] */
#define VDI_STATE_PARENT_UNKNOWN	1	/* parent_vid means nothing */
/* the vid is free again: its family was recycled (recycle_gen is next) */
#define VDI_STATE_RECYCLED		2

/* recovery_state.state: 0 preparing, 1 recovering, 2 notifying, and */
#define RECOVERY_STATE_HALTED		3	/* Kelpie: stopped, disk full */
/* Kelpie: flags in recovery_state.pad[0] */
#define RECOVERY_FLAG_STALE_FULL	1	/* stale area over its bound */

struct recovery_state {
	uint8_t in_recovery;
	uint8_t pad[3];
	uint32_t state;
	uint64_t nr_finished;
	uint64_t nr_total;
};

struct sd_stat {
	uint64_t gway_active, peer_active;
	uint64_t gway_total, peer_total;
	uint64_t gway_bytes_in, gway_bytes_out;
	uint64_t peer_bytes_in, peer_bytes_out;
	uint64_t gway_removes, gway_reads, gway_writes, gway_flushes;
	uint64_t peer_removes, peer_reads, peer_writes;
};

struct recovery_throttling {
	uint32_t max_exec_count;
	uint32_t pad;
	uint64_t queue_work_interval;
	uint8_t throttling;
	uint8_t pad2[7];
};

/* BASE/config (cluster.md §11.3) */
struct sheepdog_config {
	uint64_t ctime;
	uint16_t flags;
	uint8_t copies;
	char store[SD_MAX_STORE_NAME];
	uint8_t shutdown;
	uint8_t copy_policy;
	uint8_t block_size_shift;
	uint16_t version;
	uint64_t space;
};

_Static_assert(sizeof(struct node_id) == 40, "node_id size");
SD_ASSERT_OFF(node_id, port, 16);
SD_ASSERT_OFF(node_id, io_addr, 18);
SD_ASSERT_OFF(node_id, io_port, 34);
_Static_assert(sizeof(struct sd_node) == 80, "sd_node size");
SD_ASSERT_OFF(sd_node, nid, 24);
SD_ASSERT_OFF(sd_node, nr_vnodes, 64);
SD_ASSERT_OFF(sd_node, zone, 68);
SD_ASSERT_OFF(sd_node, space, 72);
_Static_assert(sizeof(struct cluster_info_hdr) == 48, "cinfo header size");
SD_ASSERT_OFF(cluster_info_hdr, nr_nodes, 2);
SD_ASSERT_OFF(cluster_info_hdr, epoch, 4);
SD_ASSERT_OFF(cluster_info_hdr, ctime, 8);
SD_ASSERT_OFF(cluster_info_hdr, flags, 16);
SD_ASSERT_OFF(cluster_info_hdr, nr_copies, 18);
SD_ASSERT_OFF(cluster_info_hdr, status, 20);
SD_ASSERT_OFF(cluster_info_hdr, block_size_shift, 21);
SD_ASSERT_OFF(cluster_info_hdr, default_store, 25);
_Static_assert(SD_CLUSTER_INFO_SIZE == 491568, "cluster_info size");
_Static_assert(sizeof(struct epoch_log_hdr) == 48, "epoch_log size");
SD_ASSERT_OFF(epoch_log_hdr, time, 8);
SD_ASSERT_OFF(epoch_log_hdr, epoch, 16);
SD_ASSERT_OFF(epoch_log_hdr, nr_nodes, 20);
SD_ASSERT_OFF(epoch_log_hdr, disable_recovery, 24);
SD_ASSERT_OFF(epoch_log_hdr, copy_policy, 26);
SD_ASSERT_OFF(epoch_log_hdr, flags, 30);
SD_ASSERT_OFF(epoch_log_hdr, drv_name, 32);
_Static_assert(sizeof(struct vdi_state) == 1428, "vdi_state size");
SD_ASSERT_OFF(vdi_state, parent_vid, 12);
SD_ASSERT_OFF(vdi_state, lock_state, 16);
SD_ASSERT_OFF(vdi_state, lock_owner, 20);
SD_ASSERT_OFF(vdi_state, nr_participants, 60);
SD_ASSERT_OFF(vdi_state, participants_state, 64);
SD_ASSERT_OFF(vdi_state, participants, 188);
_Static_assert(sizeof(struct recovery_state) == 24, "recovery_state size");
SD_ASSERT_OFF(recovery_state, state, 4);
SD_ASSERT_OFF(recovery_state, nr_finished, 8);
_Static_assert(sizeof(struct sd_stat) == 120, "sd_stat size");
_Static_assert(sizeof(struct recovery_throttling) == 24, "throttling size");
SD_ASSERT_OFF(recovery_throttling, queue_work_interval, 8);
SD_ASSERT_OFF(recovery_throttling, throttling, 16);
_Static_assert(sizeof(struct sheepdog_config) == 40, "config size");
SD_ASSERT_OFF(sheepdog_config, store, 11);
SD_ASSERT_OFF(sheepdog_config, shutdown, 27);
SD_ASSERT_OFF(sheepdog_config, block_size_shift, 29);
SD_ASSERT_OFF(sheepdog_config, version, 30);
SD_ASSERT_OFF(sheepdog_config, space, 32);

#endif
