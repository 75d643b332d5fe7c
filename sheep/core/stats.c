// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The request counters that dog node stat shows (protocol.md §8.5): a
 * request is counted when the dispatcher starts it and stops being active
 * when it is done.  Main loop only.
 */
#include "core/request.h"

static struct sd_stat stat;

static void count_gateway(const struct request *req, bool wr)
{
	stat.gway_total++;
	if (wr)
		stat.gway_bytes_in += req->rq.data_length;
	else
		stat.gway_bytes_out += req->rq.data_length;
	if (req->rq.opcode == SD_OP_READ_OBJ)
		stat.gway_reads++;
	else if (req->rq.opcode == SD_OP_REMOVE_OBJ)
		stat.gway_removes++;
	else
		stat.gway_writes++;
}

static void count_peer(const struct request *req, bool wr)
{
	stat.peer_total++;
	if (wr)
		stat.peer_bytes_in += req->rq.data_length;
	else
		stat.peer_bytes_out += req->rq.data_length;
	if (req->rq.opcode == SD_OP_READ_PEER)
		stat.peer_reads++;
	else if (req->rq.opcode == SD_OP_REMOVE_PEER)
		stat.peer_removes++;
	else
		stat.peer_writes++;
}

void stat_request_start(struct request *req)
{
	bool wr = req->rq.flags & SD_FLAG_CMD_WRITE;

	switch (req->op->type) {
	case OP_GATEWAY:
		stat.gway_active++;
		req->stat_active = 1;
		count_gateway(req, wr);
		break;
	case OP_PEER:
		stat.peer_active++;
		req->stat_active = 2;
		count_peer(req, wr);
		break;
	default:
		/* a client's flush is a gateway request in the statistics */
		if (req->rq.opcode == SD_OP_FLUSH_VDI) {
			stat.gway_active++;
			req->stat_active = 1;
			stat.gway_flushes++;
		}
		break;
	}
}

void stat_request_end(struct request *req)
{
	if (req->stat_active == 1)
		stat.gway_active--;
	else if (req->stat_active == 2)
		stat.peer_active--;
	req->stat_active = 0;
}

void stat_read(struct sd_stat *st)
{
	*st = stat;
}
