// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Wire codec tests (protocol.md §2, §9; objects.md §3; cluster.md §11.3).
 *
 * Every structure is filled with distinctive values, encoded, and the
 * result is compared against an expected image that this file builds byte
 * by byte from the offsets in the specifications (never from the host
 * structures), so a wrong offset, width or byte order shows up as a
 * mismatch.  Each structure is then decoded back and compared with the
 * original, and decoded from the hand-built image as well.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "proto.h"

/* ---- helpers independent of the codec under test ---- */

/* store @size bytes of @v little-endian at @off */
static void put(uint8_t *b, size_t off, size_t size, uint64_t v)
{
	for (size_t i = 0; i < size; i++)
		b[off + i] = (uint8_t)(v >> (8 * i));
}

/* the @size bytes at @off are @v, little-endian */
static void check_le_at(const uint8_t *b, size_t off, size_t size,
			uint64_t v, int line)
{
	for (size_t i = 0; i < size; i++) {
		unsigned want = (unsigned)((v >> (8 * i)) & 0xff);

		if (b[off + i] != want)
			fail_msg("line %d: byte %zu (field @%zu, %zu bytes) is "
				 "0x%02x, want 0x%02x", line, off + i, off,
				 size, b[off + i], want);
	}
}
#define check_le(b, off, size, v) check_le_at(b, off, size, v, __LINE__)

static void check_image(const uint8_t *got, const uint8_t *want, size_t len,
			int line)
{
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i])
			fail_msg("line %d: encoded byte %zu is 0x%02x, want "
				 "0x%02x", line, i, got[i], want[i]);
}
#define check_bytes(got, want, len) check_image(got, want, len, __LINE__)

/* ---- request headers ---- */

#define REQ_EPOCH	UINT32_C(0x11223344)
#define REQ_ID		UINT32_C(0xa1b2c3d4)
#define REQ_DLEN	UINT32_C(0x00400123)
#define REQ_FLAGS	UINT16_C(0x0109)

static void fill_req_hdr(struct sd_req *r, uint8_t opcode)
{
	memset(r, 0, sizeof(*r));
	r->proto_ver = opcode < 0x80 ? SD_PROTO_VER : SD_SHEEP_PROTO_VER;
	r->opcode = opcode;
	r->flags = REQ_FLAGS;
	r->epoch = REQ_EPOCH;
	r->id = REQ_ID;
	r->data_length = REQ_DLEN;
}

static void expect_req_hdr(uint8_t *b, uint8_t opcode)
{
	memset(b, 0, SD_REQ_SIZE);
	b[0] = opcode < 0x80 ? 0x02 : 0x0a;
	b[1] = opcode;
	put(b, 2, 2, REQ_FLAGS);
	put(b, 4, 4, REQ_EPOCH);
	put(b, 8, 4, REQ_ID);
	put(b, 12, 4, REQ_DLEN);
}

static void check_req_hdr_fields(const struct sd_req *r, uint8_t opcode)
{
	assert_int_equal(r->proto_ver,
			 opcode < 0x80 ? SD_PROTO_VER : SD_SHEEP_PROTO_VER);
	assert_int_equal(r->opcode, opcode);
	assert_int_equal(r->flags, REQ_FLAGS);
	assert_int_equal(r->epoch, REQ_EPOCH);
	assert_int_equal(r->id, REQ_ID);
	assert_int_equal(r->data_length, REQ_DLEN);
}

/* encode @r, compare with @want, decode both ways */
static void roundtrip_req(const struct sd_req *r, const uint8_t *want,
			  int line)
{
	uint8_t buf[SD_REQ_SIZE];
	struct sd_req back;

	memset(buf, 0xEE, sizeof(buf));
	sd_req_encode(r, buf);
	check_image(buf, want, SD_REQ_SIZE, line);
	memset(&back, 0x55, sizeof(back));
	sd_req_decode(&back, buf);
	if (memcmp(&back, r, sizeof(back)))
		fail_msg("line %d: decode(encode(req)) differs", line);
	memset(&back, 0x55, sizeof(back));
	sd_req_decode(&back, want);
	check_req_hdr_fields(&back, r->opcode);
	if (memcmp(&back, r, sizeof(back)))
		fail_msg("line %d: decode(expected image) differs", line);
}

static void test_req_common_header(void **state)
{
	struct sd_req r;
	uint8_t buf[SD_REQ_SIZE];

	fill_req_hdr(&r, SD_OP_READ_OBJ);
	sd_req_encode(&r, buf);
	check_le(buf, 0, 1, 0x02);
	check_le(buf, 1, 1, 0x02);
	check_le(buf, 2, 2, REQ_FLAGS);
	check_le(buf, 4, 4, REQ_EPOCH);
	check_le(buf, 8, 4, REQ_ID);
	check_le(buf, 12, 4, REQ_DLEN);
	/* explicit bytes, in case the helper and the codec share a bug */
	assert_int_equal(buf[2], 0x09);
	assert_int_equal(buf[3], 0x01);
	assert_int_equal(buf[4], 0x44);
	assert_int_equal(buf[7], 0x11);
	assert_int_equal(buf[8], 0xd4);
	assert_int_equal(buf[11], 0xa1);
	assert_int_equal(buf[12], 0x23);
	assert_int_equal(buf[13], 0x01);
	assert_int_equal(buf[14], 0x40);
	assert_int_equal(buf[15], 0x00);
	assert_int_equal(SD_REQ_SIZE, 48);
	assert_int_equal(SD_RSP_SIZE, 48);
}

static const uint8_t obj_opcodes[] = {
	SD_OP_CREATE_AND_WRITE_OBJ, SD_OP_READ_OBJ, SD_OP_WRITE_OBJ,
	SD_OP_REMOVE_OBJ, SD_OP_DISCARD_OBJ, SD_OP_CREATE_AND_WRITE_PEER,
	SD_OP_READ_PEER, SD_OP_WRITE_PEER, SD_OP_REMOVE_PEER,
	SD_OP_GET_HASH, SD_OP_EXIST, SD_OP_GET_EPOCH,
};

static void test_req_obj(void **state)
{
	for (size_t i = 0; i < sizeof(obj_opcodes); i++) {
		uint8_t op = obj_opcodes[i], want[SD_REQ_SIZE];
		struct sd_req r;

		fill_req_hdr(&r, op);
		r.obj.oid = UINT64_C(0x807c2b2500000001);
		r.obj.cow_oid = UINT64_C(0x0102030405060708);
		r.obj.copies = 3;
		r.obj.copy_policy = 0x22;
		r.obj.ec_index = 5;
		r.obj.tgt_epoch = UINT32_C(0x21222324);
		r.obj.offset = UINT32_C(0x003ff200);

		expect_req_hdr(want, op);
		put(want, 16, 8, UINT64_C(0x807c2b2500000001));
		put(want, 24, 8, UINT64_C(0x0102030405060708));
		want[32] = 3;
		want[33] = 0x22;
		want[34] = 5;
		put(want, 36, 4, 0x21222324);
		put(want, 40, 4, 0x003ff200);
		roundtrip_req(&r, want, __LINE__);
	}
}

/* QEMU sends a 64-bit offset at 40; only bytes 40..43 are the offset */
static void test_req_obj_qemu_offset(void **state)
{
	uint8_t b[SD_REQ_SIZE];
	struct sd_req r;

	memset(b, 0, sizeof(b));
	b[0] = 0;			/* QEMU sends proto_ver 0 */
	b[1] = SD_OP_WRITE_OBJ;
	put(b, 2, 2, SD_FLAG_CMD_WRITE | SD_FLAG_CMD_CACHE);
	put(b, 8, 4, 77);
	put(b, 12, 4, 4096);
	put(b, 16, 8, UINT64_C(0x007c2b2500000003));
	b[32] = 3;
	put(b, 40, 8, UINT64_C(0xdeadbeef00123000));
	sd_req_decode(&r, b);
	assert_int_equal(r.proto_ver, 0);
	assert_int_equal(r.opcode, SD_OP_WRITE_OBJ);
	assert_int_equal(r.flags, SD_FLAG_CMD_WRITE | SD_FLAG_CMD_CACHE);
	assert_int_equal(r.id, 77);
	assert_int_equal(r.data_length, 4096);
	assert_true(r.obj.oid == UINT64_C(0x007c2b2500000003));
	assert_int_equal(r.obj.copies, 3);
	assert_int_equal(r.obj.offset, 0x00123000);
}

static const uint8_t vdi_opcodes[] = {
	SD_OP_NEW_VDI, SD_OP_LOCK_VDI, SD_OP_RELEASE_VDI, SD_OP_GET_VDI_INFO,
	SD_OP_READ_VDIS, SD_OP_DEL_VDI, SD_OP_GET_VDI_ATTR,
};

static void test_req_vdi(void **state)
{
	for (size_t i = 0; i < sizeof(vdi_opcodes); i++) {
		uint8_t op = vdi_opcodes[i], want[SD_REQ_SIZE];
		struct sd_req r;

		fill_req_hdr(&r, op);
		r.vdi.vdi_size = UINT64_C(0x0000010000000000);	/* 1 TiB */
		r.vdi.base_vdi_id = 0x7c2b25;
		r.vdi.copies = 6;
		r.vdi.copy_policy = 0x22;
		r.vdi.store_policy = 1;
		r.vdi.block_size_shift = 22;
		r.vdi.snapid = UINT32_C(0x01020304);
		r.vdi.type = 1;

		expect_req_hdr(want, op);
		put(want, 16, 8, UINT64_C(0x0000010000000000));
		put(want, 24, 4, 0x7c2b25);
		want[28] = 6;
		want[29] = 0x22;
		want[30] = 1;
		want[31] = 22;
		put(want, 32, 4, 0x01020304);
		put(want, 36, 4, 1);
		roundtrip_req(&r, want, __LINE__);
	}
}

static const uint8_t cluster_opcodes[] = {
	SD_OP_MAKE_FS, SD_OP_STAT_CLUSTER, SD_OP_ALTER_CLUSTER_COPY,
};

static void test_req_cluster(void **state)
{
	for (size_t i = 0; i < sizeof(cluster_opcodes); i++) {
		uint8_t op = cluster_opcodes[i], want[SD_REQ_SIZE];
		struct sd_req r;

		fill_req_hdr(&r, op);
		r.cluster.oid = UINT64_C(0x0807060504030201);
		r.cluster.ctime = UINT64_C(0x65e2f0c43b9ac000);
		r.cluster.copies = 3;
		r.cluster.copy_policy = 0x11;
		r.cluster.flags = SD_CLUSTER_FLAG_AUTO_VNODES |
				  SD_CLUSTER_FLAG_AVOID_DISKFULL |
				  SD_CLUSTER_FLAG_STRICT;
		r.cluster.tag = UINT32_C(0xcafef00d);
		r.cluster.nodes_nr = 6144;
		r.cluster.block_size_shift = 23;

		expect_req_hdr(want, op);
		put(want, 16, 8, UINT64_C(0x0807060504030201));
		put(want, 24, 8, UINT64_C(0x65e2f0c43b9ac000));
		want[32] = 3;
		want[33] = 0x11;
		put(want, 34, 2, 0x0025);
		put(want, 36, 4, 0xcafef00d);
		put(want, 40, 4, 6144);
		want[44] = 23;
		roundtrip_req(&r, want, __LINE__);
	}
}

static void test_req_vdi_state(void **state)
{
	static const uint8_t ops[] = {
		SD_OP_NOTIFY_VDI_ADD, SD_OP_ALTER_VDI_COPY,
	};

	for (size_t i = 0; i < sizeof(ops); i++) {
		uint8_t op = ops[i], want[SD_REQ_SIZE];
		struct sd_req r;

		fill_req_hdr(&r, op);
		r.vdi_state.old_vid = 0x7c2b25;
		r.vdi_state.new_vid = 0x7c2b26;
		r.vdi_state.copies = 2;
		r.vdi_state.set_bitmap = 1;
		r.vdi_state.copy_policy = 0x8f;
		r.vdi_state.block_size_shift = 21;

		expect_req_hdr(want, op);
		put(want, 16, 4, 0x7c2b25);
		put(want, 20, 4, 0x7c2b26);
		want[24] = 2;
		want[25] = 1;
		want[26] = 0x8f;
		want[27] = 21;
		roundtrip_req(&r, want, __LINE__);
	}
}

static void test_req_ref(void **state)
{
	static const uint8_t ops[] = { SD_OP_DECREF_OBJ, SD_OP_DECREF_PEER };

	for (size_t i = 0; i < sizeof(ops); i++) {
		uint8_t op = ops[i], want[SD_REQ_SIZE];
		struct sd_req r;

		fill_req_hdr(&r, op);
		r.ref.oid = UINT64_C(0x087c2b2500000001);
		r.ref.generation = UINT32_C(0xfffffffe);	/* -2 */
		r.ref.count = 7;

		expect_req_hdr(want, op);
		put(want, 16, 8, UINT64_C(0x087c2b2500000001));
		put(want, 24, 4, 0xfffffffe);
		put(want, 28, 4, 7);
		roundtrip_req(&r, want, __LINE__);
	}
}

static void test_req_forw(void **state)
{
	uint8_t want[SD_REQ_SIZE];
	struct sd_req r;

	fill_req_hdr(&r, SD_OP_REPAIR_REPLICA);
	r.forw.oid = UINT64_C(0x007c2b2500000009);
	memset(r.forw.addr, 0, 16);
	r.forw.addr[12] = 10;
	r.forw.addr[13] = 99;
	r.forw.addr[14] = 0;
	r.forw.addr[15] = 3;
	r.forw.port = 7002;

	expect_req_hdr(want, SD_OP_REPAIR_REPLICA);
	put(want, 16, 8, UINT64_C(0x007c2b2500000009));
	want[24 + 12] = 10;
	want[24 + 13] = 99;
	want[24 + 15] = 3;
	put(want, 40, 2, 7002);
	roundtrip_req(&r, want, __LINE__);
	assert_int_equal(want[40], 0x5a);
	assert_int_equal(want[41], 0x1b);
}

/* ---- response headers ---- */

#define RSP_EPOCH	UINT32_C(0x00000107)
#define RSP_ID		UINT32_C(0x5566778f)
#define RSP_DLEN	UINT32_C(0x00201000)

static void fill_rsp_hdr(struct sd_rsp *r, uint8_t opcode, uint32_t result)
{
	memset(r, 0, sizeof(*r));
	r->opcode = opcode;
	r->epoch = RSP_EPOCH;
	r->id = RSP_ID;
	r->data_length = RSP_DLEN;
	r->result = result;
}

static void expect_rsp_hdr(uint8_t *b, uint8_t opcode, uint32_t result)
{
	memset(b, 0, SD_RSP_SIZE);
	b[1] = opcode;
	put(b, 4, 4, RSP_EPOCH);
	put(b, 8, 4, RSP_ID);
	put(b, 12, 4, RSP_DLEN);
	put(b, 16, 4, result);
}

static void roundtrip_rsp(const struct sd_rsp *r, const uint8_t *want,
			  int line)
{
	uint8_t buf[SD_RSP_SIZE];
	struct sd_rsp back;

	memset(buf, 0xEE, sizeof(buf));
	sd_rsp_encode(r, buf);
	check_image(buf, want, SD_RSP_SIZE, line);
	memset(&back, 0x55, sizeof(back));
	sd_rsp_decode(&back, buf);
	if (memcmp(&back, r, sizeof(back)))
		fail_msg("line %d: decode(encode(rsp)) differs", line);
	memset(&back, 0x55, sizeof(back));
	sd_rsp_decode(&back, want);
	if (memcmp(&back, r, sizeof(back)))
		fail_msg("line %d: decode(expected image) differs", line);
}

static void test_rsp_obj(void **state)
{
	static const uint8_t ops[] = {
		SD_OP_READ_OBJ, SD_OP_WRITE_OBJ, SD_OP_CREATE_AND_WRITE_OBJ,
		SD_OP_READ_PEER,
	};

	for (size_t i = 0; i < sizeof(ops); i++) {
		uint8_t want[SD_RSP_SIZE];
		struct sd_rsp r;

		fill_rsp_hdr(&r, ops[i], SD_RES_NO_SPACE);
		r.obj.copies = 3;
		r.obj.offset = UINT64_C(0x0000000100002000);

		expect_rsp_hdr(want, ops[i], 0x15);
		want[20] = 3;
		put(want, 24, 8, UINT64_C(0x0000000100002000));
		roundtrip_rsp(&r, want, __LINE__);
	}
}

static void test_rsp_vdi(void **state)
{
	static const uint8_t ops[] = {
		SD_OP_NEW_VDI, SD_OP_GET_VDI_INFO, SD_OP_LOCK_VDI,
		SD_OP_DEL_VDI, SD_OP_GET_VDI_ATTR,
	};

	for (size_t i = 0; i < sizeof(ops); i++) {
		uint8_t want[SD_RSP_SIZE];
		struct sd_rsp r;

		fill_rsp_hdr(&r, ops[i], SD_RES_SUCCESS);
		r.vdi.vdi_id = 0x7c2b25;
		r.vdi.attr_id = UINT32_C(0x17d2d865);
		r.vdi.copies = 3;
		r.vdi.block_size_shift = 22;

		expect_rsp_hdr(want, ops[i], 0);
		put(want, 24, 4, 0x7c2b25);
		put(want, 28, 4, 0x17d2d865);
		want[32] = 3;
		want[33] = 22;
		roundtrip_rsp(&r, want, __LINE__);
	}
}

static void test_rsp_node(void **state)
{
	uint8_t want[SD_RSP_SIZE];
	struct sd_rsp r;

	fill_rsp_hdr(&r, SD_OP_GET_NODE_LIST, SD_RES_SUCCESS);
	r.node.nr_nodes = 6144;
	expect_rsp_hdr(want, SD_OP_GET_NODE_LIST, 0);
	put(want, 20, 4, 6144);
	roundtrip_rsp(&r, want, __LINE__);

	fill_rsp_hdr(&r, SD_OP_STAT_SHEEP, SD_RES_SUCCESS);
	r.node.store_size = UINT64_C(0x0000001234567890);
	r.node.store_free = UINT64_C(0x0000000987654321);
	expect_rsp_hdr(want, SD_OP_STAT_SHEEP, 0);
	put(want, 32, 8, UINT64_C(0x0000001234567890));
	put(want, 40, 8, UINT64_C(0x0000000987654321));
	roundtrip_rsp(&r, want, __LINE__);
}

static void test_rsp_hash(void **state)
{
	uint8_t want[SD_RSP_SIZE];
	struct sd_rsp r;

	fill_rsp_hdr(&r, SD_OP_GET_HASH, SD_RES_SUCCESS);
	for (int i = 0; i < 20; i++)
		r.hash.digest[i] = (uint8_t)(0xa0 + i);
	expect_rsp_hdr(want, SD_OP_GET_HASH, 0);
	for (int i = 0; i < 20; i++)
		want[24 + i] = (uint8_t)(0xa0 + i);
	roundtrip_rsp(&r, want, __LINE__);
}

static void test_rsp_cluster_default(void **state)
{
	uint8_t want[SD_RSP_SIZE];
	struct sd_rsp r;

	fill_rsp_hdr(&r, SD_OP_GET_CLUSTER_DEFAULT, SD_RES_SUCCESS);
	r.cluster_default.nr_copies = 3;
	r.cluster_default.copy_policy = 0x22;
	r.cluster_default.block_size_shift = 22;
	expect_rsp_hdr(want, SD_OP_GET_CLUSTER_DEFAULT, 0);
	want[20] = 3;
	want[21] = 0x22;
	want[22] = 22;
	roundtrip_rsp(&r, want, __LINE__);
}

static void test_rsp_error_result(void **state)
{
	uint8_t want[SD_RSP_SIZE];
	struct sd_rsp r;

	/* an internal result code through an opcode without a union */
	fill_rsp_hdr(&r, SD_OP_CLUSTER_INFO, SD_RES_BUFFER_SMALL);
	expect_rsp_hdr(want, SD_OP_CLUSTER_INFO, 0x88);
	roundtrip_rsp(&r, want, __LINE__);
	assert_int_equal(want[16], 0x88);
	assert_int_equal(want[17], 0);
}

/* ---- payload structures ---- */

static void fill_node(struct sd_node *n, uint16_t port, uint32_t zone)
{
	memset(n, 0, sizeof(*n));
	memset(n->rb, 0xEE, sizeof(n->rb));
	n->nid.addr[12] = 127;
	n->nid.addr[15] = 1;
	n->nid.port = port;
	n->nid.io_addr[12] = 10;
	n->nid.io_addr[13] = 1;
	n->nid.io_addr[14] = 2;
	n->nid.io_addr[15] = 3;
	n->nid.io_port = (uint16_t)(port + 1000);
	n->nr_vnodes = 128;
	n->zone = zone;
	n->space = UINT64_C(0x0000001234567890) + port;
}

static void expect_node(uint8_t *b, uint16_t port, uint32_t zone)
{
	memset(b, 0, 80);
	b[24 + 12] = 127;
	b[24 + 15] = 1;
	put(b, 40, 2, port);
	b[42 + 12] = 10;
	b[42 + 13] = 1;
	b[42 + 14] = 2;
	b[42 + 15] = 3;
	put(b, 58, 2, (uint16_t)(port + 1000));
	put(b, 64, 2, 128);
	put(b, 68, 4, zone);
	put(b, 72, 8, UINT64_C(0x0000001234567890) + port);
}

static void test_sd_node(void **state)
{
	struct sd_node n, back;
	uint8_t buf[80], want[80];

	fill_node(&n, 7000, 16777343);
	expect_node(want, 7000, 16777343);
	memset(buf, 0x77, sizeof(buf));
	sd_node_encode(&n, buf);
	check_bytes(buf, want, sizeof(buf));	/* rb links go out as zero */
	check_le(buf, 40, 2, 7000);
	assert_int_equal(buf[40], 0x58);
	assert_int_equal(buf[41], 0x1b);
	check_le(buf, 68, 4, 16777343);
	assert_int_equal(buf[68], 0x7f);
	assert_int_equal(buf[71], 0x01);

	/* garbage in the rb area is ignored by the decoder */
	memset(want, 0xC3, 24);
	sd_node_decode(&back, want);
	memset(n.rb, 0, sizeof(n.rb));
	assert_memory_equal(&back, &n, sizeof(n));
}

static void test_sd_nodes_array(void **state)
{
	struct sd_node n[3], back[3];
	uint8_t buf[3 * 80], want[3 * 80];

	for (int i = 0; i < 3; i++) {
		fill_node(&n[i], (uint16_t)(7000 + i), (uint32_t)i);
		expect_node(want + 80 * i, (uint16_t)(7000 + i), (uint32_t)i);
	}
	sd_nodes_encode(n, 3, buf);
	check_bytes(buf, want, sizeof(buf));
	sd_nodes_decode(back, 3, buf);
	for (int i = 0; i < 3; i++) {
		memset(n[i].rb, 0, sizeof(n[i].rb));
		assert_memory_equal(&back[i], &n[i], sizeof(n[i]));
	}
}

static void test_cluster_info_hdr(void **state)
{
	struct cluster_info_hdr c, back;
	uint8_t buf[48], want[48];

	memset(&c, 0, sizeof(c));
	c.proto_ver = SD_SHEEP_PROTO_VER;
	c.disable_recovery = 1;
	c.nr_nodes = -2;
	c.epoch = UINT32_C(0x01020304);
	c.ctime = UINT64_C(0x65e2f0c43b9ac000);
	c.flags = SD_CLUSTER_FLAG_AUTO_VNODES | SD_CLUSTER_FLAG_USE_LOCK;
	c.nr_copies = 3;
	c.copy_policy = 0x22;
	c.status = SD_STATUS_WAIT;
	c.block_size_shift = 22;
	strcpy(c.default_store, "plain");

	memset(want, 0, sizeof(want));
	want[0] = 0x0a;
	want[1] = 1;
	put(want, 2, 2, 0xfffe);
	put(want, 4, 4, 0x01020304);
	put(want, 8, 8, UINT64_C(0x65e2f0c43b9ac000));
	put(want, 16, 2, 0x000c);
	want[18] = 3;
	want[19] = 0x22;
	want[20] = 2;
	want[21] = 22;
	memcpy(want + 25, "plain", 5);

	cinfo_hdr_encode(&c, buf);
	check_bytes(buf, want, sizeof(buf));
	cinfo_hdr_decode(&back, want);
	assert_memory_equal(&back, &c, sizeof(c));
	assert_int_equal(back.nr_nodes, -2);
	assert_int_equal(SD_CLUSTER_INFO_SIZE, 491568);
}

static void test_epoch_log_hdr(void **state)
{
	struct epoch_log_hdr e, back;
	uint8_t buf[48], want[48];

	memset(&e, 0, sizeof(e));
	e.ctime = UINT64_C(0x65e2f0c43b9ac000);
	e.time = UINT64_C(1709369700);
	e.epoch = 42;
	e.nr_nodes = 3;
	e.disable_recovery = 1;
	e.nr_copies = 2;
	e.copy_policy = 0x11;
	e.flags = 0x0024;
	strcpy(e.drv_name, "tree");

	memset(want, 0, sizeof(want));
	put(want, 0, 8, UINT64_C(0x65e2f0c43b9ac000));
	put(want, 8, 8, UINT64_C(1709369700));
	put(want, 16, 4, 42);
	put(want, 20, 4, 3);
	want[24] = 1;
	want[25] = 2;
	want[26] = 0x11;
	put(want, 30, 2, 0x0024);
	memcpy(want + 32, "tree", 4);

	epoch_log_hdr_encode(&e, buf);
	check_bytes(buf, want, sizeof(buf));
	epoch_log_hdr_decode(&back, want);
	assert_memory_equal(&back, &e, sizeof(e));
}

static void test_vdi_state(void **state)
{
	static struct vdi_state v, back;
	static uint8_t buf[1428], want[1428];

	memset(&v, 0, sizeof(v));
	v.vid = 0x7c2b25;
	v.nr_copies = 3;
	v.snapshot = 1;
	v.deleted = 0;
	v.copy_policy = 0x11;
	v.block_size_shift = 22;
	v.parent_vid = 0xed202b;
	v.lock_state = LOCK_STATE_SHARED;
	v.lock_owner.addr[12] = 127;
	v.lock_owner.addr[15] = 1;
	v.lock_owner.port = 7001;
	v.lock_owner.io_port = 8001;
	v.nr_participants = 31;
	for (int i = 0; i < SD_MAX_COPIES; i++) {
		v.participants_state[i] = (uint32_t)(1 + i % 3);
		v.participants[i].addr[12] = 192;
		v.participants[i].addr[15] = (uint8_t)i;
		v.participants[i].port = (uint16_t)(7000 + i);
		v.participants[i].io_port = (uint16_t)(0x1234 + i);
	}

	memset(want, 0, sizeof(want));
	put(want, 0, 4, 0x7c2b25);
	want[4] = 3;
	want[5] = 1;
	want[6] = 0;
	want[7] = 0x11;
	want[8] = 22;
	put(want, 12, 4, 0xed202b);
	put(want, 16, 4, 3);
	want[20 + 12] = 127;
	want[20 + 15] = 1;
	put(want, 36, 2, 7001);
	put(want, 54, 2, 8001);
	put(want, 60, 4, 31);
	for (int i = 0; i < SD_MAX_COPIES; i++) {
		size_t p = 188 + 40 * (size_t)i;

		put(want, 64 + 4 * (size_t)i, 4, (uint64_t)(1 + i % 3));
		want[p + 12] = 192;
		want[p + 15] = (uint8_t)i;
		put(want, p + 16, 2, (uint64_t)(7000 + i));
		put(want, p + 34, 2, (uint64_t)(0x1234 + i));
	}

	vdi_state_encode(&v, buf);
	check_bytes(buf, want, sizeof(buf));
	/* the last participant ends exactly at the end of the record */
	check_le(buf, 1388 + 16, 2, 7030);
	check_le(buf, 184, 4, 1 + 30 % 3);
	vdi_state_decode(&back, want);
	assert_memory_equal(&back, &v, sizeof(v));
}

static void test_inode_header(void **state)
{
	static struct sd_inode_header h, back;
	static uint8_t buf[SD_INODE_HEADER_SIZE], want[SD_INODE_HEADER_SIZE];

	memset(&h, 0, sizeof(h));
	strcpy(h.name, "alpha");
	strcpy(h.tag, "daily");
	h.create_time = UINT64_C(0x65e2f0c400002710);
	h.snap_ctime = UINT64_C(0x65e2f0d000004e20);
	h.vm_clock_nsec = UINT64_C(0x0000000ba43b7400);
	h.vdi_size = UINT64_C(10) << 30;
	h.vm_state_size = UINT64_C(0x1000000);
	h.copy_policy = 0x22;
	h.store_policy = 1;
	h.nr_copies = 6;
	h.block_size_shift = 22;
	h.snap_id = 3;
	h.vdi_id = 0xed202b;
	h.parent_vdi_id = 0xed202a;
	h.btree_counter = UINT32_C(0x01020304);

	memset(want, 0, sizeof(want));
	memcpy(want, "alpha", 5);
	memcpy(want + 256, "daily", 5);
	put(want, 512, 8, UINT64_C(0x65e2f0c400002710));
	put(want, 520, 8, UINT64_C(0x65e2f0d000004e20));
	put(want, 528, 8, UINT64_C(0x0000000ba43b7400));
	put(want, 536, 8, UINT64_C(10) << 30);
	put(want, 544, 8, UINT64_C(0x1000000));
	want[552] = 0x22;
	want[553] = 1;
	want[554] = 6;
	want[555] = 22;
	put(want, 556, 4, 3);
	put(want, 560, 4, 0xed202b);
	put(want, 564, 4, 0xed202a);
	put(want, 568, 4, 0x01020304);

	inode_header_encode(&h, buf);
	check_bytes(buf, want, sizeof(buf));
	inode_header_decode(&back, want);
	assert_memory_equal(&back, &h, sizeof(h));
	assert_int_equal(SD_INODE_HEADER_SIZE, 4664);
	assert_int_equal(SD_INODE_SIZE, 12587576);
	assert_int_equal(SD_INODE_GREF_OFFSET, 4198968);
}

static void test_config(void **state)
{
	struct sheepdog_config c, back;
	uint8_t buf[40], want[40];

	memset(&c, 0, sizeof(c));
	c.ctime = UINT64_C(0x65e2f0c43b9ac000);
	c.flags = 0x0015;
	c.copies = 3;
	strcpy(c.store, "plain");
	c.shutdown = 1;
	c.copy_policy = 0x44;
	c.block_size_shift = 22;
	c.version = SD_FORMAT_VERSION;
	c.space = UINT64_C(0x0000004000000000);

	memset(want, 0, sizeof(want));
	put(want, 0, 8, UINT64_C(0x65e2f0c43b9ac000));
	put(want, 8, 2, 0x0015);
	want[10] = 3;
	memcpy(want + 11, "plain", 5);
	want[27] = 1;
	want[28] = 0x44;
	want[29] = 22;
	put(want, 30, 2, 6);
	put(want, 32, 8, UINT64_C(0x0000004000000000));

	config_encode(&c, buf);
	check_bytes(buf, want, sizeof(buf));
	config_decode(&back, want);
	assert_memory_equal(&back, &c, sizeof(c));
}

static void test_recovery_state(void **state)
{
	struct recovery_state r, back;
	uint8_t buf[24], want[24];

	memset(&r, 0, sizeof(r));
	r.in_recovery = 1;
	r.state = 2;
	r.nr_finished = UINT64_C(0x0000000100000002);
	r.nr_total = UINT64_C(0x0000000300000004);

	memset(want, 0, sizeof(want));
	want[0] = 1;
	put(want, 4, 4, 2);
	put(want, 8, 8, UINT64_C(0x0000000100000002));
	put(want, 16, 8, UINT64_C(0x0000000300000004));

	recovery_state_encode(&r, buf);
	check_bytes(buf, want, sizeof(buf));
	recovery_state_decode(&back, want);
	assert_memory_equal(&back, &r, sizeof(r));
}

static void test_sd_stat(void **state)
{
	struct sd_stat s, back;
	uint8_t buf[120], want[120];
	uint64_t *f[15] = {
		&s.gway_active, &s.peer_active, &s.gway_total, &s.peer_total,
		&s.gway_bytes_in, &s.gway_bytes_out, &s.peer_bytes_in,
		&s.peer_bytes_out, &s.gway_removes, &s.gway_reads,
		&s.gway_writes, &s.gway_flushes, &s.peer_removes,
		&s.peer_reads, &s.peer_writes,
	};

	memset(&s, 0, sizeof(s));
	memset(want, 0, sizeof(want));
	for (int i = 0; i < 15; i++) {
		uint64_t v = (UINT64_C(0x0100000000) * (uint64_t)(i + 1)) |
			     (uint64_t)(0x10 + i);

		*f[i] = v;
		put(want, 8 * (size_t)i, 8, v);
	}
	sd_stat_encode(&s, buf);
	check_bytes(buf, want, sizeof(buf));
	/* documented order: gateway active first, peer writes last */
	check_le(buf, 0, 8, s.gway_active);
	check_le(buf, 72, 8, s.gway_reads);
	check_le(buf, 80, 8, s.gway_writes);
	check_le(buf, 112, 8, s.peer_writes);
	sd_stat_decode(&back, want);
	assert_memory_equal(&back, &s, sizeof(s));
}

static void test_throttling(void **state)
{
	struct recovery_throttling t, back;
	uint8_t buf[24], want[24];

	memset(&t, 0, sizeof(t));
	t.max_exec_count = UINT32_C(0x01020304);
	t.queue_work_interval = UINT64_C(0x0000000a0000000b);
	t.throttling = 1;

	memset(want, 0, sizeof(want));
	put(want, 0, 4, 0x01020304);
	put(want, 8, 8, UINT64_C(0x0000000a0000000b));
	want[16] = 1;

	throttling_encode(&t, buf);
	check_bytes(buf, want, sizeof(buf));
	throttling_decode(&back, want);
	assert_memory_equal(&back, &t, sizeof(t));
}

static void test_le_arrays(void **state)
{
	uint32_t v32[4] = { 0x7c2b25, 0, 0xffffffff, 0x01020304 }, b32[4];
	uint64_t v64[3] = { UINT64_C(0x0000000100000000),
			    UINT64_C(0xfffffffe00000003), 1 }, b64[3];
	uint8_t buf[32], want[32];

	memset(want, 0, sizeof(want));
	for (int i = 0; i < 4; i++)
		put(want, 4 * (size_t)i, 4, v32[i]);
	le32_array_encode(v32, 4, buf);
	check_bytes(buf, want, 16);
	le32_array_decode(b32, 4, want);
	assert_memory_equal(b32, v32, sizeof(v32));

	for (int i = 0; i < 3; i++)
		put(want, 8 * (size_t)i, 8, v64[i]);
	le64_array_encode(v64, 3, buf);
	check_bytes(buf, want, 24);
	le64_array_decode(b64, 3, want);
	assert_memory_equal(b64, v64, sizeof(v64));
}

static void test_get_put_le(void **state)
{
	uint8_t b[8];

	put_le16(b, 0x1234);
	assert_int_equal(b[0], 0x34);
	assert_int_equal(b[1], 0x12);
	put_le32(b, 0x89abcdef);
	assert_int_equal(b[0], 0xef);
	assert_int_equal(b[3], 0x89);
	assert_int_equal(get_le32(b), 0x89abcdef);
	put_le64(b, UINT64_C(0x0102030405060708));
	assert_int_equal(b[0], 0x08);
	assert_int_equal(b[7], 0x01);
	assert_true(get_le64(b) == UINT64_C(0x0102030405060708));
	assert_int_equal(get_le16(b + 6), 0x0102);
}

static void test_strerror(void **state)
{
	assert_string_equal(sd_strerror(SD_RES_SUCCESS), "Success");
	assert_string_equal(sd_strerror(SD_RES_UNKNOWN), "Unknown error");
	assert_string_equal(sd_strerror(SD_RES_NO_OBJ), "No object found");
	assert_string_equal(sd_strerror(SD_RES_VDI_EXIST),
			    "VDI exists already");
	assert_string_equal(sd_strerror(SD_RES_INVALID_PARMS),
			    "Invalid parameters");
	assert_string_equal(sd_strerror(SD_RES_NO_VDI), "No VDI found");
	assert_string_equal(sd_strerror(SD_RES_NO_TAG),
			    "Failed to find requested tag");
	assert_string_equal(sd_strerror(SD_RES_VER_MISMATCH),
			    "Protocol version mismatch");
	assert_string_equal(sd_strerror(SD_RES_NO_SPACE),
			    "Server has no space for new objects");
	assert_string_equal(sd_strerror(SD_RES_WAIT_FOR_FORMAT),
			    "Waiting for cluster to be formatted");
	assert_string_equal(sd_strerror(SD_RES_WAIT_FOR_JOIN),
			    "Waiting for other nodes to join cluster");
	assert_string_equal(sd_strerror(SD_RES_HALT),
			    "IO has halted as there are not enough living nodes");
	assert_string_equal(sd_strerror(SD_RES_READONLY),
			    "Object is read-only");
	assert_string_equal(sd_strerror(SD_RES_SHUTDOWN),
			    "System is shutting down");
	assert_string_equal(sd_strerror(SD_RES_INODE_INVALIDATED),
			    "Inode object is invalidated");
	assert_string_equal(sd_strerror(SD_RES_OLD_NODE_VER),
			    "Request has an old epoch");
	/* unused and out-of-range codes still give some text */
	assert_non_null(sd_strerror(0x1B));
	assert_non_null(sd_strerror(0x96));
	assert_non_null(sd_strerror(0xffffffff));
	assert_string_not_equal(sd_strerror(0xffffffff), "Success");
}

static void test_opcode_class(void **state)
{
	assert_false(sd_opcode_is_internal(SD_OP_READ_OBJ));
	assert_false(sd_opcode_is_internal(0x7f));
	assert_true(sd_opcode_is_internal(0x80));
	assert_true(sd_opcode_is_internal(SD_OP_GET_NODE_LIST));
	assert_true(sd_opcode_is_internal(SD_OP_GET_VNODES));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_common_header),
		cmocka_unit_test(test_req_obj),
		cmocka_unit_test(test_req_obj_qemu_offset),
		cmocka_unit_test(test_req_vdi),
		cmocka_unit_test(test_req_cluster),
		cmocka_unit_test(test_req_vdi_state),
		cmocka_unit_test(test_req_ref),
		cmocka_unit_test(test_req_forw),
		cmocka_unit_test(test_rsp_obj),
		cmocka_unit_test(test_rsp_vdi),
		cmocka_unit_test(test_rsp_node),
		cmocka_unit_test(test_rsp_hash),
		cmocka_unit_test(test_rsp_cluster_default),
		cmocka_unit_test(test_rsp_error_result),
		cmocka_unit_test(test_sd_node),
		cmocka_unit_test(test_sd_nodes_array),
		cmocka_unit_test(test_cluster_info_hdr),
		cmocka_unit_test(test_epoch_log_hdr),
		cmocka_unit_test(test_vdi_state),
		cmocka_unit_test(test_inode_header),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_recovery_state),
		cmocka_unit_test(test_sd_stat),
		cmocka_unit_test(test_throttling),
		cmocka_unit_test(test_le_arrays),
		cmocka_unit_test(test_get_put_le),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_opcode_class),
	};

	return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
