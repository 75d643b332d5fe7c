// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The EC_* peer ops (sheep/ops/strip_ops.c, validated by
 * sheep/ops/validate.c): refused from clients, for a VDI without that
 * code, for metadata objects, strip indices past D+P, version 0, ranges
 * past the strip, a payload where none belongs and a state reply of the
 * wrong size; served from members: prepare, read (with the version the
 * bytes are of), state (through its wire format and back), commit,
 * abort; with SD_FLAG_CMD_WILDCARD, state and read of a strip left
 * behind by a rejoin, from its stale copy.  The state decoder refuses replies
 * that cannot be one.  OIDS_EXIST of strips names a strip of a code; a VDI
 * that alter-copy converts takes strips of the code it converts to.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "proto.h"
#include "ops/ops.h"
#include "ops/strip_ops.h"
#include "ops/validate.h"
#include "state/vdi.h"
#include "store/store.h"

#define VID	0x123456u
#define PLAIN	0x654321u
#define POLICY	0x12		/* 2:2 (objects.md §2: D / 2 high, P low) */
#define OBJ	(4u << 20)
#define STRIP	(OBJ / 2)

static char base[] = "/dev/shm/kelpie-test-strip-ops.XXXXXX";
static uint8_t buf[EC_STATE_LEN > 8192 ? EC_STATE_LEN : 8192];

static int setup(void **state)
{
	struct vdi_info *vi;

	if (!mkdtemp(base))
		return -1;
	vi = vdi_get(VID, true);
	vi->nr_copies = 4;
	vi->copy_policy = POLICY;
	vi->block_size_shift = 22;
	vi = vdi_get(PLAIN, true);
	vi->nr_copies = 3;
	vi->block_size_shift = 22;
	return store_init(base, true);
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	return system(cmd) ? -1 : 0;
}

static struct sd_req req(uint8_t op, uint8_t idx, uint64_t v, uint32_t off,
			 uint32_t len)
{
	struct sd_req rq;

	memset(&rq, 0, sizeof(rq));
	rq.opcode = op;
	rq.obj.oid = vid_to_data_oid(VID, 5);
	rq.obj.copy_policy = POLICY;
	rq.obj.ec_index = idx;
	rq.obj.cow_oid = v;
	rq.obj.offset = off;
	rq.data_length = len;
	if (op == SD_OP_EC_PREPARE || op == SD_OP_EC_INSTALL)
		rq.flags = SD_FLAG_CMD_WRITE;
	return rq;
}

static uint32_t check(const struct sd_req *rq)
{
	return validate_request(rq, get_sd_op(rq->opcode), FROM_TRUSTED,
				false);
}

static int run(const struct sd_req *rq, void *data, struct sd_rsp *rp)
{
	assert_int_equal(check(rq), SD_RES_SUCCESS);
	memset(rp, 0, sizeof(*rp));
	return strip_exec(rq, data, rp, OBJ);
}

static void test_refused(void **state)
{
	static const uint8_t ops[] = { SD_OP_EC_PREPARE, SD_OP_EC_COMMIT,
				       SD_OP_EC_ABORT, SD_OP_EC_STATE,
				       SD_OP_EC_READ, SD_OP_EC_INSTALL };
	struct sd_req rq;

	for (size_t i = 0; i < sizeof(ops); i++) {
		uint8_t op = ops[i];
		uint32_t len = op == SD_OP_EC_PREPARE ||
			       op == SD_OP_EC_READ ? 512 :
			       op == SD_OP_EC_STATE ? EC_STATE_LEN :
			       op == SD_OP_EC_INSTALL ? STRIP : 0;

		rq = req(op, 3, 1, 0, len);
		assert_int_equal(check(&rq), SD_RES_SUCCESS);
		/* peers only */
		assert_int_equal(validate_request(&rq, get_sd_op(op),
						  FROM_CLIENT, true),
				 SD_RES_INVALID_PARMS);
		/* strip index past D+P */
		rq.obj.ec_index = 4;
		assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
		/* another code than the VDI's, none, a VDI without one */
		rq = req(op, 0, 1, 0, len);
		rq.obj.copy_policy = 0x22;
		assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
		rq.obj.copy_policy = 0;
		assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
		rq = req(op, 0, 1, 0, len);
		rq.obj.oid = vid_to_data_oid(PLAIN, 5);
		assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
		/* an unknown VDI, an inode */
		rq.obj.oid = vid_to_data_oid(0x42, 5);
		assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
		rq.obj.oid = vid_to_vdi_oid(VID);
		assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
		/* version 0, where one is needed */
		rq = req(op, 0, 0, 0, len);
		assert_int_equal(check(&rq), op == SD_OP_EC_STATE ||
				 op == SD_OP_EC_READ ? SD_RES_SUCCESS :
				 SD_RES_INVALID_PARMS);
	}
	/* ranges, payloads and reply sizes */
	rq = req(SD_OP_EC_PREPARE, 0, 1, STRIP - 512, 512);
	assert_int_equal(check(&rq), SD_RES_SUCCESS);
	rq = req(SD_OP_EC_PREPARE, 0, 1, STRIP - 511, 512);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq = req(SD_OP_EC_PREPARE, 0, 1, 0, 0);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq = req(SD_OP_EC_PREPARE, 0, 1, 0, 512);
	rq.flags = 0;		/* a payload that would not be sent */
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	/* a write builds on an older version */
	rq = req(SD_OP_EC_PREPARE, 0, 5, 0, 512);
	ec_prev_set(&rq, 4);
	assert_int_equal(check(&rq), SD_RES_SUCCESS);
	ec_prev_set(&rq, 5);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	ec_prev_set(&rq, UINT64_C(1) << 40);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	/* INSTALL: the whole strip, nothing else */
	rq = req(SD_OP_EC_INSTALL, 0, 1, 0, STRIP - 512);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq = req(SD_OP_EC_INSTALL, 0, 1, 512, STRIP - 512);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq = req(SD_OP_EC_INSTALL, 0, 1, 0, STRIP);
	rq.flags = 0;
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq = req(SD_OP_EC_COMMIT, 0, 1, 0, 8);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq = req(SD_OP_EC_STATE, 0, 0, 0, EC_STATE_LEN - 1);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq = req(SD_OP_EC_READ, 0, 0, 0, 0);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq = req(SD_OP_EC_READ, 0, 0, STRIP - 511, 512);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
}

static void get_state(uint8_t idx, struct strip_state *st)
{
	struct sd_req rq = req(SD_OP_EC_STATE, idx, 0, 0, EC_STATE_LEN);
	struct sd_rsp rp;

	assert_int_equal(run(&rq, buf, &rp), SD_RES_SUCCESS);
	assert_int_equal(rp.data_length, EC_STATE_LEN);
	assert_int_equal(strip_state_get(buf, rp.data_length, st), 0);
}

static void test_served(void **state)
{
	static uint8_t data[8192], got[8192], whole[STRIP];
	struct strip_state st;
	struct sd_req rq;
	struct sd_rsp rp;

	memset(data, 0x5a, sizeof(data));
	memset(whole, 0xa5, sizeof(whole));
	rq = req(SD_OP_EC_STATE, 1, 0, 0, EC_STATE_LEN);
	assert_int_equal(run(&rq, buf, &rp), SD_RES_NO_OBJ);
	rq = req(SD_OP_EC_PREPARE, 1, 7, 4096, 8192);
	assert_int_equal(run(&rq, data, &rp), SD_RES_SUCCESS);
	get_state(1, &st);
	assert_int_equal(st.high, 7);
	assert_int_equal(st.nr_pending, 1);
	assert_int_equal(st.pending[0].v, 7);
	assert_int_equal(st.pending[0].off, 4096);
	assert_int_equal(st.pending[0].len, 8192);
	assert_true(st.pending[0].complete);
	/* the strip is a file of its own, STRIP bytes */
	assert_int_equal(store_read((struct obj_key){ .oid = rq.obj.oid,
						      .idx = 1 },
				    got, 8192, 4096), SD_RES_SUCCESS);
	assert_memory_equal(got, data, 8192);
	assert_int_equal(store_read((struct obj_key){ .oid = rq.obj.oid,
						      .idx = 1 },
				    got, 512, STRIP - 512), SD_RES_SUCCESS);
	/* EC_READ: the bytes, with the version they are of, pending */
	rq = req(SD_OP_EC_READ, 1, 0, 4096, 8192);
	assert_int_equal(run(&rq, got, &rp), SD_RES_SUCCESS);
	assert_memory_equal(got, data, 8192);
	assert_int_equal(rp.data_length, 8192);
	assert_int_equal(rp.obj.offset, 7);
	assert_int_equal(rp.obj.copies, STRIP_PENDING);
	rq = req(SD_OP_EC_COMMIT, 1, 7, 0, 0);
	assert_int_equal(run(&rq, NULL, &rp), SD_RES_SUCCESS);
	rq = req(SD_OP_EC_READ, 1, 0, 4096, 512);
	assert_int_equal(run(&rq, got, &rp), SD_RES_SUCCESS);
	assert_int_equal(rp.obj.offset, 7);
	assert_int_equal(rp.obj.copies, STRIP_FINAL);
	get_state(1, &st);
	assert_int_equal(st.committed, 7);
	assert_int_equal(st.nr_pending, 0);
	rq = req(SD_OP_EC_PREPARE, 1, 8, 0, 512);
	assert_int_equal(run(&rq, data, &rp), SD_RES_STALE_OBJ);
	ec_prev_set(&rq, 7);
	assert_int_equal(run(&rq, data, &rp), SD_RES_SUCCESS);
	rq = req(SD_OP_EC_ABORT, 1, 8, 0, 0);
	assert_int_equal(run(&rq, NULL, &rp), SD_RES_SUCCESS);
	rq = req(SD_OP_EC_PREPARE, 1, 8, 0, 512);
	ec_prev_set(&rq, 7);
	assert_int_equal(run(&rq, data, &rp), SD_RES_STALE_OBJ);
	get_state(1, &st);
	assert_int_equal(st.committed, 7);
	assert_int_equal(st.high, 8);
	/* missed version 9: refused, then rebuilt whole at 9 */
	rq = req(SD_OP_EC_PREPARE, 1, 10, 0, 512);
	ec_prev_set(&rq, 9);
	assert_int_equal(run(&rq, data, &rp), SD_RES_NO_OBJ);
	rq = req(SD_OP_EC_INSTALL, 1, 9, 0, STRIP);
	assert_int_equal(run(&rq, whole, &rp), SD_RES_SUCCESS);
	get_state(1, &st);
	assert_int_equal(st.committed, 9);
	assert_int_equal(st.nr_pending, 0);
	rq = req(SD_OP_EC_READ, 1, 0, STRIP - 512, 512);
	assert_int_equal(run(&rq, got, &rp), SD_RES_SUCCESS);
	assert_memory_equal(got, whole + STRIP - 512, 512);
	assert_int_equal(rp.obj.offset, 9);
	rq = req(SD_OP_EC_PREPARE, 1, 10, 0, 512);
	ec_prev_set(&rq, 9);
	assert_int_equal(run(&rq, data, &rp), SD_RES_SUCCESS);
}

/*
 * A strip left behind by a rejoin (its stale copy kept the version it
 * settled at): EC_STATE and EC_READ answer from it only when asked with
 * SD_FLAG_CMD_WILDCARD (recovery's last resort), with that version
 */
static void test_stale_wildcard(void **state)
{
	static uint8_t data[8192], got[8192];
	struct strip_state st;
	struct sd_req rq;
	struct sd_rsp rp;

	memset(data, 0x3c, sizeof(data));
	rq = req(SD_OP_EC_PREPARE, 3, 4, 0, 8192);
	assert_int_equal(run(&rq, data, &rp), SD_RES_SUCCESS);
	rq = req(SD_OP_EC_COMMIT, 3, 4, 0, 0);
	assert_int_equal(run(&rq, NULL, &rp), SD_RES_SUCCESS);
	assert_int_equal(store_stale_all(21), SD_RES_SUCCESS);
	store_drain_left();
	rq = req(SD_OP_EC_STATE, 3, 0, 0, EC_STATE_LEN);
	assert_int_equal(run(&rq, buf, &rp), SD_RES_NO_OBJ);
	rq.flags |= SD_FLAG_CMD_WILDCARD;
	assert_int_equal(run(&rq, buf, &rp), SD_RES_SUCCESS);
	assert_int_equal(strip_state_get(buf, rp.data_length, &st), 0);
	assert_int_equal(st.committed, 4);
	assert_int_equal(st.nr_pending, 0);
	rq = req(SD_OP_EC_READ, 3, 0, 0, 8192);
	assert_int_equal(run(&rq, got, &rp), SD_RES_NO_OBJ);
	rq.flags |= SD_FLAG_CMD_WILDCARD;
	assert_int_equal(run(&rq, got, &rp), SD_RES_SUCCESS);
	assert_memory_equal(got, data, 8192);
	assert_int_equal(rp.obj.offset, 4);
	assert_int_equal(rp.obj.copies, STRIP_FINAL);
	/* a strip that has no stale copy: still none */
	rq = req(SD_OP_EC_STATE, 2, 0, 0, EC_STATE_LEN);
	rq.flags |= SD_FLAG_CMD_WILDCARD;
	assert_int_equal(run(&rq, buf, &rp), SD_RES_NO_OBJ);
	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
}

static void test_state_decoder(void **state)
{
	struct strip_state st = { .committed = 3, .high = 9, .nr_pending = 2 };
	struct strip_state got;

	st.pending[0].v = 5;
	st.pending[0].len = 512;
	st.pending[0].complete = true;
	st.pending[1].v = 9;
	st.pending[1].off = 1024;
	st.pending[1].len = 4096;
	strip_state_put(&st, buf);
	assert_int_equal(strip_state_get(buf, EC_STATE_LEN, &got), 0);
	assert_int_equal(got.committed, 3);
	assert_int_equal(got.high, 9);
	assert_int_equal(got.nr_pending, 2);
	assert_true(got.pending[0].complete);
	assert_false(got.pending[1].complete);
	assert_int_equal(got.pending[1].off, 1024);
	assert_int_equal(strip_state_get(buf, EC_STATE_LEN - 1, &got), -1);
	/* too many entries */
	put_le32(buf + 16, STRIP_MAX_PENDING + 1);
	assert_int_equal(strip_state_get(buf, EC_STATE_LEN, &got), -1);
	/* versions out of order, at or below committed, above high */
	strip_state_put(&st, buf);
	put_le64(buf + 24 + EC_STATE_ENTRY, 5);
	assert_int_equal(strip_state_get(buf, EC_STATE_LEN, &got), -1);
	strip_state_put(&st, buf);
	put_le64(buf + 24, 3);
	assert_int_equal(strip_state_get(buf, EC_STATE_LEN, &got), -1);
	strip_state_put(&st, buf);
	put_le64(buf + 8, 8);
	assert_int_equal(strip_state_get(buf, EC_STATE_LEN, &got), -1);
	/* committed above high */
	st.nr_pending = 0;
	st.committed = 10;
	strip_state_put(&st, buf);
	assert_int_equal(strip_state_get(buf, EC_STATE_LEN, &got), -1);
}

/* admission counts the strips and the stripes' buffer of a coded object */
static void test_cost(void **state)
{
	struct sd_req rq;

	memset(&rq, 0, sizeof(rq));
	rq.opcode = SD_OP_WRITE_OBJ;
	rq.flags = SD_FLAG_CMD_WRITE;
	rq.obj.oid = vid_to_data_oid(VID, 5);
	rq.data_length = 4096;
	/* 2:2: strips twice the span, plus the span */
	assert_int_equal(request_cost(&rq, get_sd_op(rq.opcode)),
			 4096 + 2 * 4096 + 4096);
	/* 100 bytes at 1000 touch the stripes 512..1535 */
	rq.obj.offset = 1000;
	rq.data_length = 100;
	assert_int_equal(request_cost(&rq, get_sd_op(rq.opcode)),
			 100 + 2 * 1024 + 1024);
	rq.opcode = SD_OP_READ_OBJ;
	rq.flags = 0;
	assert_int_equal(request_cost(&rq, get_sd_op(rq.opcode)),
			 100 + 2 * 1024 + 1024);
	/* replicated VDIs and inodes cost their payload */
	rq.obj.oid = vid_to_data_oid(PLAIN, 5);
	assert_int_equal(request_cost(&rq, get_sd_op(rq.opcode)), 100);
	rq.obj.oid = vid_to_vdi_oid(VID);
	assert_int_equal(request_cost(&rq, get_sd_op(rq.opcode)), 100);
	/* a check holds every strip twice and the data: 2:2, 2 x 2 + 1 */
	memset(&rq, 0, sizeof(rq));
	rq.opcode = SD_OP_EC_CHECK;
	rq.obj.oid = vid_to_data_oid(VID, 5);
	assert_int_equal(request_cost(&rq, get_sd_op(rq.opcode)), 5 * OBJ);
	rq.obj.oid = vid_to_data_oid(PLAIN, 5);
	assert_int_equal(request_cost(&rq, get_sd_op(rq.opcode)), 0);
}

/* a coded VDI's state restored is taken if its strips are its copies */
static void test_vdi_state(void **state)
{
	struct sd_req rq;

	memset(&rq, 0, sizeof(rq));
	rq.opcode = SD_OP_NOTIFY_VDI_ADD;
	rq.vdi_state.new_vid = 0x42;
	rq.vdi_state.copies = 4;
	rq.vdi_state.copy_policy = POLICY;
	rq.vdi_state.block_size_shift = 22;
	assert_int_equal(validate_request(&rq, get_sd_op(rq.opcode),
					  FROM_CLIENT, true), SD_RES_SUCCESS);
	rq.vdi_state.copies = 3;	/* 2:2 has 4 strips */
	assert_int_equal(validate_request(&rq, get_sd_op(rq.opcode),
					  FROM_CLIENT, true),
			 SD_RES_INVALID_PARMS);
	rq.vdi_state.copies = 4;
	rq.vdi_state.copy_policy = 0x30;	/* no parity */
	assert_int_equal(validate_request(&rq, get_sd_op(rq.opcode),
					  FROM_CLIENT, true),
			 SD_RES_INVALID_PARMS);
	rq.vdi_state.copy_policy = 0;
	assert_int_equal(validate_request(&rq, get_sd_op(rq.opcode),
					  FROM_CLIENT, true), SD_RES_SUCCESS);
}

/* OIDS_EXIST names a strip only of a code that exists, below its D+P */
static void test_exist(void **state)
{
	struct sd_req rq;

	memset(&rq, 0, sizeof(rq));
	rq.opcode = SD_OP_OIDS_EXIST;
	rq.flags = SD_FLAG_CMD_WRITE;
	rq.data_length = 8;
	rq.obj.ec_index = 200;		/* ignored without a code */
	assert_int_equal(check(&rq), SD_RES_SUCCESS);
	rq.obj.copy_policy = POLICY;
	rq.obj.ec_index = 3;
	assert_int_equal(check(&rq), SD_RES_SUCCESS);
	rq.obj.ec_index = 4;		/* 2:2 has strips 0 to 3 */
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq.obj.ec_index = 0;
	rq.obj.copy_policy = 0x30;	/* no parity: no code */
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
}

/*
 * While alter-copy converts a replicated VDI to a code, its peers take
 * strips of that code (and no other), and once it is over no longer
 */
static void test_converting(void **state)
{
	struct vdi_info *vi = vdi_get(PLAIN, false);
	struct sd_req rq = req(SD_OP_EC_STATE, 1, 1, 0, EC_STATE_LEN);

	rq.obj.oid = vid_to_data_oid(PLAIN, 5);
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	vi->conv_state = VDI_CONV_COPYING;
	vi->conv_copies = 4;
	vi->conv_policy = POLICY;
	assert_int_equal(check(&rq), SD_RES_SUCCESS);
	rq.obj.copy_policy = 0x11;	/* 2:1, not the code converted to */
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
	rq.obj.copy_policy = POLICY;
	vi->conv_state = VDI_CONV_NONE;
	vi->conv_copies = 0;
	vi->conv_policy = 0;
	assert_int_equal(check(&rq), SD_RES_INVALID_PARMS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_served),
		cmocka_unit_test(test_stale_wildcard),
		cmocka_unit_test(test_state_decoder),
		cmocka_unit_test(test_cost),
		cmocka_unit_test(test_vdi_state),
		cmocka_unit_test(test_exist),
		cmocka_unit_test(test_converting),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
