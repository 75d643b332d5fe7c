// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: the request header of a sheep connection, decoded by
 * sd_req_decode (lib/proto.c), looked up in the opcode table (get_sd_op,
 * sheep/ops/ops.c) and checked by validate_request and request_cost
 * (sheep/ops/validate.c) for every origin and admin flag.
 *
 * Input:
 *   48 bytes    the request header, as it comes off the socket
 *   4 bytes     cluster state: copies, block_size_shift, status, flags
 *   then        VDI state records of 8 bytes each (at most 8), merged
 *               into the VDI table the way a peer's records are
 *               (vdi_merge_state): vid (3 bytes), copies, copy_policy,
 *               block_size_shift, flags (snapshot, deleted, locked,
 *               running), parent vid low byte
 *
 * The VDI table is emptied after every input that filled it, so every
 * input starts from the same state.  Besides the sanitizers, the harness
 * checks that more trust never refuses more: what a client may send a
 * member may send too, and what passes without admin rights passes with
 * them; and that daemon-internal ops are refused from any connection.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "proto.h"
#include "util.h"
#include "core/request.h"
#include "ops/ops.h"
#include "ops/validate.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "fuzz_input.h"

#define MAX_VDIS	8

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

static void set_cluster(struct fuzz_in *in)
{
	struct cluster_state *cs = cstate_mut();

	cs->copies = take_u8(in);
	cs->block_size_shift = take_u8(in);
	cs->status = take_u8(in);
	cs->flags = take_u8(in);
}

/* returns whether the table was touched */
static bool fill_vdis(struct fuzz_in *in)
{
	int n = 0;

	while (n < MAX_VDIS && fuzz_left(in) >= 8) {
		struct vdi_state vs = { 0 };
		uint8_t fl;

		vs.vid = take_u16(in) | (uint32_t)take_u8(in) << 16;
		vs.nr_copies = take_u8(in);
		vs.copy_policy = take_u8(in);
		vs.block_size_shift = take_u8(in);
		fl = take_u8(in);
		vs.parent_vid = take_u8(in);
		vs.snapshot = fl & 1;
		vs.deleted = !!(fl & 2);
		vs.lock_state = fl & 4 ? LOCK_STATE_LOCKED :
				LOCK_STATE_UNLOCKED;
		vdi_merge_state(&vs, fl & 8);
		n++;
	}
	return n > 0;
}

static uint32_t check(const struct sd_req *rq, const struct sd_op *op,
		      enum req_origin from, bool admin)
{
	uint32_t ret = validate_request(rq, op, from, admin);
	uint32_t max = op->max_len ? op->max_len : SD_MAX_PAYLOAD;

	if (ret != SD_RES_SUCCESS)
		return ret;
	if (rq->data_length > max)
		die("%s: %u payload bytes passed (max %u)\n", op->name,
		    rq->data_length, max);
	if (request_cost(rq, op) < rq->data_length)
		die("%s: cost below the payload\n", op->name);
	return ret;
}

static void validate_all(const struct sd_req *rq, const struct sd_op *op)
{
	uint32_t r[2][2];	/* [trusted][admin] */

	for (int t = 0; t < 2; t++)
		for (int a = 0; a < 2; a++)
			r[t][a] = check(rq, op, t ? FROM_TRUSTED : FROM_CLIENT,
					a);
	(void)check(rq, op, FROM_DAEMON, false);
	for (int t = 0; t < 2; t++)
		if (r[t][0] == SD_RES_SUCCESS && r[t][1] != SD_RES_SUCCESS)
			die("%s: refused with admin rights only\n", op->name);
	for (int a = 0; a < 2; a++)
		if (r[0][a] == SD_RES_SUCCESS && r[1][a] != SD_RES_SUCCESS)
			die("%s: a client may, a member may not\n", op->name);
	if ((op->checks & OPV_INTERNAL) && (r[0][1] == SD_RES_SUCCESS ||
					    r[1][1] == SD_RES_SUCCESS))
		die("%s: internal op accepted from a connection\n", op->name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	vdi_init_bitmaps();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in;
	uint8_t hdr[SD_REQ_SIZE];
	struct sd_req rq;
	const struct sd_op *op;
	bool touched;

	fuzz_in_init(&in, data, size);
	take_bytes(&in, hdr, sizeof(hdr));
	sd_req_decode(&rq, hdr);
	set_cluster(&in);
	touched = fill_vdis(&in);
	op = get_sd_op(rq.opcode);
	if (op)
		validate_all(&rq, op);
	if (touched)
		vdi_reset();
	return 0;
}
