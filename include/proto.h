/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Little-endian codec for every wire structure.  Each encoder writes the
 * exact wire bytes of a host structure; each decoder reads them back.  These
 * are the only places where protocol bytes and host structures meet.
 */
#ifndef KELPIE_PROTO_H
#define KELPIE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include "internal_proto.h"

void sd_req_encode(const struct sd_req *req, void *buf);
void sd_req_decode(struct sd_req *req, const void *buf);
void sd_rsp_encode(const struct sd_rsp *rsp, void *buf);
void sd_rsp_decode(struct sd_rsp *rsp, const void *buf);

void sd_node_encode(const struct sd_node *n, void *buf);
void sd_node_decode(struct sd_node *n, const void *buf);
void sd_nodes_encode(const struct sd_node *n, size_t nr, void *buf);
void sd_nodes_decode(struct sd_node *n, size_t nr, const void *buf);
void cinfo_hdr_encode(const struct cluster_info_hdr *c, void *buf);
void cinfo_hdr_decode(struct cluster_info_hdr *c, const void *buf);
void epoch_log_hdr_encode(const struct epoch_log_hdr *e, void *buf);
void epoch_log_hdr_decode(struct epoch_log_hdr *e, const void *buf);
void vdi_state_encode(const struct vdi_state *v, void *buf);
void vdi_state_decode(struct vdi_state *v, const void *buf);
void inode_header_encode(const struct sd_inode_header *h, void *buf);
void inode_header_decode(struct sd_inode_header *h, const void *buf);
void config_encode(const struct sheepdog_config *c, void *buf);
void config_decode(struct sheepdog_config *c, const void *buf);
void recovery_state_encode(const struct recovery_state *r, void *buf);
void recovery_state_decode(struct recovery_state *r, const void *buf);
void sd_stat_encode(const struct sd_stat *s, void *buf);
void sd_stat_decode(struct sd_stat *s, const void *buf);
void throttling_encode(const struct recovery_throttling *t, void *buf);
void throttling_decode(struct recovery_throttling *t, const void *buf);

/* inode index entries (u32) and grefs (2 x i32), arrays of little-endian */
void le32_array_encode(const uint32_t *v, size_t nr, void *buf);
void le32_array_decode(uint32_t *v, size_t nr, const void *buf);
void le64_array_encode(const uint64_t *v, size_t nr, void *buf);
void le64_array_decode(uint64_t *v, size_t nr, const void *buf);

static inline void put_le16(void *p, uint16_t v)
{
	uint8_t *b = p;

	b[0] = v;
	b[1] = v >> 8;
}

static inline void put_le32(void *p, uint32_t v)
{
	uint8_t *b = p;

	b[0] = v;
	b[1] = v >> 8;
	b[2] = v >> 16;
	b[3] = v >> 24;
}

static inline void put_le64(void *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t get_le16(const void *p)
{
	const uint8_t *b = p;

	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t get_le32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static inline uint64_t get_le64(const void *p)
{
	return get_le32(p) | (uint64_t)get_le32((const uint8_t *)p + 4) << 32;
}

/* which opcode classes exist: see ops table in sheep/ops.c */
int sd_opcode_is_internal(uint8_t opcode);

/*
 * MAKE_FS with STABLE_VNODES (dog cluster format -S -N): the vnodes of a
 * node of the mean capacity, in the cluster part's reserved bytes (0 from
 * a dog that does not know them: 128)
 */
static inline uint16_t format_vnodes(const struct sd_req *req)
{
	return get_le16(req->cluster.reserved);
}

static inline void set_format_vnodes(struct sd_req *req, uint16_t n)
{
	put_le16(req->cluster.reserved, n);
}

/*
 * A -N base as MAKE_FS allows it, else 0 (the default): what a join
 * message or a config file says is checked like a format request
 */
static inline uint16_t format_vnodes_valid(uint16_t n)
{
	return n >= SD_MIN_FORMAT_VNODES && n <= SD_MAX_FORMAT_VNODES ? n : 0;
}

/* the -N base in a cluster_info_hdr (its pad bytes, unaligned: le16) */
static inline uint16_t cinfo_format_vnodes(const struct cluster_info_hdr *h)
{
	return format_vnodes_valid((uint16_t)(h->pad[0] | h->pad[1] << 8));
}

static inline void cinfo_set_format_vnodes(struct cluster_info_hdr *h,
					   uint16_t n)
{
	h->pad[0] = (uint8_t)n;
	h->pad[1] = (uint8_t)(n >> 8);
}

#endif
