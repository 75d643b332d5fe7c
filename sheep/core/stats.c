// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The request counters that dog node stat shows (protocol.md §8.5): a
 * request is counted when the dispatcher starts it and stops being active
 * when it is done.  Besides, per class of request, results by kind and a
 * latency histogram for the metrics endpoint (front/metrics.c).  Main
 * loop only.
 */
#include <time.h>
#include "util.h"
#include "core/request.h"

static struct sd_stat stat;
static struct stat_metrics metrics;
/* when object I/O a client caused last started here (ns, 0: never) */
static uint64_t client_io_ns;

/*
 * Per-VDI counters of client reads and writes of data objects: open
 * addressing on the vid, bounded; once the table is full, VDIs seen for
 * the first time are counted together under vid 0.
 */
#define VDI_SLOTS	4096
static struct stat_vdi vdi_table[VDI_SLOTS];
static size_t vdi_used;
static struct stat_vdi vdi_other;

/* upper bounds of the latency buckets, 25 us to 10 s */
const uint64_t stat_bucket_ns[STAT_NR_BUCKETS] = {
	25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 25000000, 50000000,
	100000000, 250000000, 500000000,
	1000000000, 2500000000, 5000000000, 10000000000,
};

static int class_of(const struct request *req)
{
	uint8_t op = req->rq.opcode;

	if (req->stat_active == 1) {
		if (op == SD_OP_READ_OBJ)
			return SC_CLIENT_READ;
		if (op == SD_OP_REMOVE_OBJ)
			return SC_CLIENT_REMOVE;
		if (op == SD_OP_FLUSH_VDI)
			return SC_CLIENT_FLUSH;
		return SC_CLIENT_WRITE;
	}
	if (op == SD_OP_READ_PEER)
		return SC_PEER_READ;
	if (op == SD_OP_REMOVE_PEER)
		return SC_PEER_REMOVE;
	return SC_PEER_WRITE;
}

static int result_kind(uint32_t res)
{
	switch (res) {
	case SD_RES_SUCCESS:
		return SR_OK;
	case SD_RES_NO_OBJ:
	case SD_RES_NO_VDI:
		return SR_NOT_FOUND;
	case SD_RES_EIO:
		return SR_IO_ERROR;
	case SD_RES_NO_SPACE:
		return SR_NO_SPACE;
	case SD_RES_NETWORK_ERROR:
		return SR_NETWORK;
	case SD_RES_OLD_NODE_VER:
	case SD_RES_NEW_NODE_VER:
	case SD_RES_WAIT_FOR_JOIN:
	case SD_RES_WAIT_FOR_FORMAT:
	case SD_RES_AGAIN:
		return SR_RETRY;
	case SD_RES_INVALID_PARMS:
		return SR_INVALID;
	default:
		return SR_OTHER;
	}
}

static struct stat_vdi *vdi_slot(uint32_t vid)
{
	size_t i = (vid * 2654435761U) % VDI_SLOTS;

	for (size_t k = 0; k < VDI_SLOTS; k++, i = (i + 1) % VDI_SLOTS) {
		if (vdi_table[i].vid == vid)
			return &vdi_table[i];
		if (!vdi_table[i].vid) {
			if (vdi_used >= VDI_SLOTS * 3 / 4)
				break;
			vdi_used++;
			vdi_table[i].vid = vid;
			return &vdi_table[i];
		}
	}
	return &vdi_other;
}

static void count_vdi(const struct request *req, int cls)
{
	struct stat_vdi *v;

	if ((cls != SC_CLIENT_READ && cls != SC_CLIENT_WRITE) ||
	    !is_data_obj(req->rq.obj.oid) || req->rp.result != SD_RES_SUCCESS)
		return;
	v = vdi_slot(oid_to_vid(req->rq.obj.oid));
	if (cls == SC_CLIENT_READ) {
		v->reads++;
		v->read_bytes += req->rq.data_length;
	} else {
		v->writes++;
		v->write_bytes += req->rq.data_length;
	}
}

/* the @n busiest VDIs (reads and writes) into @top; how many there are */
size_t stat_top_vdis(struct stat_vdi *top, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < VDI_SLOTS; i++) {
		const struct stat_vdi *v = &vdi_table[i];
		uint64_t ops = v->reads + v->writes;
		size_t j;

		if (!v->vid || (k == n && ops <= top[k - 1].reads +
				top[k - 1].writes))
			continue;
		/* insertion into @top, busiest first */
		j = k < n ? k++ : n - 1;
		while (j > 0 && top[j - 1].reads + top[j - 1].writes < ops) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = *v;
	}
	if (vdi_other.reads + vdi_other.writes && k < n)
		top[k++] = vdi_other;
	return k;
}

static void count_result(const struct request *req)
{
	int cls = class_of(req), b = 0;
	struct stat_class_metrics *c = &metrics.cls[cls];
	uint64_t ns = now_nsec() - req->stat_start_ns;

	c->results[result_kind(req->rp.result)]++;
	count_vdi(req, cls);
	while (b < STAT_NR_BUCKETS && ns > stat_bucket_ns[b])
		b++;
	c->buckets[b]++;
	c->sum_ns += ns;
}

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

	req->stat_start_ns = now_nsec();
	switch (req->op->type) {
	case OP_GATEWAY:
		stat.gway_active++;
		req->stat_active = 1;
		count_gateway(req, wr);
		client_io_ns = req->stat_start_ns;
		break;
	case OP_PEER:
		stat.peer_active++;
		req->stat_active = 2;
		count_peer(req, wr);
		/* recovery's and scrub's reads are no client's */
		if (!(req->rq.flags & SD_FLAG_CMD_RECOVERY))
			client_io_ns = req->stat_start_ns;
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
	if (req->stat_active)
		count_result(req);
	if (req->stat_active == 1)
		stat.gway_active--;
	else if (req->stat_active == 2)
		stat.peer_active--;
	req->stat_active = 0;
}

uint64_t stat_last_client_io_ns(void)
{
	return client_io_ns;
}

void stat_read(struct sd_stat *st)
{
	*st = stat;
}

void stat_read_metrics(struct stat_metrics *m)
{
	*m = metrics;
}
