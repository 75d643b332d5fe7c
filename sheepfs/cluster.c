// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sheepfs: cluster/info and node/list, the text of `dog cluster info` and
 * `dog node list` (dog.md §3.1, §4.2), generated when the file is opened.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hash.h"
#include "net.h"
#include "proto.h"
#include "sheepfs.h"
#include "util.h"

#define NODE_STR_LEN	64

void sbuf_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = sb->cap - sb->len;

		va_start(ap, fmt);
		n = vsnprintf(sb->buf ? sb->buf + sb->len : NULL, room, fmt,
			      ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			sb->len += (size_t)n;
			return;
		}
		sb->cap = MAX(sb->cap * 2, sb->len + (size_t)n + 1);
		sb->buf = xrealloc(sb->buf, sb->cap);
	}
}

void sbuf_free(struct sbuf *sb)
{
	free(sb->buf);
	memset(sb, 0, sizeof(*sb));
}

/* GET_NODE_LIST: the sorted members and the epoch; 0 or -EIO */
static int fetch_nodes(struct sd_node **out, int *nr, uint32_t *epoch)
{
	uint32_t len = SD_MAX_NODES * sizeof(struct sd_node);
	uint8_t *buf = xzalloc(len);
	struct sd_req req;
	struct sd_rsp rsp;
	int n;

	sd_init_req(&req, SD_OP_GET_NODE_LIST);
	req.data_length = len;
	if (sfs_exec(&req, buf, len, &rsp, SFS_RAW) ||
	    rsp.result != SD_RES_SUCCESS) {
		free(buf);
		return -EIO;
	}
	n = (int)MIN(rsp.node.nr_nodes,
		     MIN(rsp.data_length, len) / sizeof(struct sd_node));
	*out = xzalloc(sizeof(struct sd_node) * (size_t)(n + 1));
	sd_nodes_decode(*out, (size_t)n, buf);
	nodes_sort(*out, (size_t)n);
	*nr = n;
	*epoch = rsp.epoch;
	free(buf);
	return 0;
}

int node_list_text(struct sbuf *sb)
{
	struct sd_node *nodes;
	char s[NODE_STR_LEN];
	uint32_t epoch;
	int nr;

	if (fetch_nodes(&nodes, &nr, &epoch))
		return -EIO;
	sbuf_printf(sb, "  Id   Host:Port         V-Nodes       Zone\n");
	for (int i = 0; i < nr; i++)
		sbuf_printf(sb, "%4d   %-20s\t%2d%11" PRIu32 "\n", i,
			    node_to_str(&nodes[i], s, sizeof(s)),
			    nodes[i].nr_vnodes, nodes[i].zone);
	free(nodes);
	return 0;
}

/* ---- cluster info ---- */

struct epoch_rec {
	struct epoch_log_hdr h;
	struct sd_node *nodes;
};

static void free_recs(struct epoch_rec *recs, int n)
{
	for (int i = 0; i < n; i++)
		free(recs[i].nodes);
	free(recs);
}

static int decode_recs(const uint8_t *buf, size_t len, uint32_t slots,
		       struct epoch_rec **out)
{
	size_t rec_size = sizeof(struct epoch_log_hdr) +
			  (size_t)slots * sizeof(struct sd_node);
	int n = (int)(len / rec_size);
	struct epoch_rec *recs = xzalloc(sizeof(*recs) * (size_t)(n + 1));

	for (int i = 0; i < n; i++) {
		const uint8_t *p = buf + (size_t)i * rec_size;

		epoch_log_hdr_decode(&recs[i].h, p);
		recs[i].h.nr_nodes = MIN(recs[i].h.nr_nodes, slots);
		recs[i].nodes = xzalloc(sizeof(struct sd_node) *
					(recs[i].h.nr_nodes + 1));
		sd_nodes_decode(recs[i].nodes, recs[i].h.nr_nodes,
				p + sizeof(struct epoch_log_hdr));
	}
	*out = recs;
	return n;
}

/*
 * STAT_CLUSTER with room for @nr_logs records, doubling the node slots on
 * BUFFER_SMALL.  The number of records (newest first) or -EIO.
 */
static int fetch_epochs(uint32_t nr_logs, int nr_nodes,
			struct epoch_rec **out, uint32_t *result)
{
	uint32_t slots = (uint32_t)MAX(nr_nodes, 1);
	struct sd_req req;
	struct sd_rsp rsp;
	uint8_t *buf;
	int n;

	for (;;) {
		size_t rec_size = sizeof(struct epoch_log_hdr) +
				  (size_t)slots * sizeof(struct sd_node);
		size_t len = rec_size * nr_logs;

		buf = xzalloc(MAX(len, (size_t)1));
		sd_init_req(&req, SD_OP_STAT_CLUSTER);
		req.cluster.nodes_nr = slots;
		req.data_length = (uint32_t)len;
		if (sfs_exec(&req, buf, (uint32_t)len, &rsp, SFS_RAW)) {
			free(buf);
			return -EIO;
		}
		if (rsp.result != SD_RES_BUFFER_SMALL || slots >= SD_MAX_NODES)
			break;
		free(buf);
		slots = MIN(slots * 2, SD_MAX_NODES);
	}
	*result = rsp.result;
	n = decode_recs(buf, MIN(rsp.data_length, req.data_length), slots,
			out);
	free(buf);
	return n;
}

static void print_epoch(struct sbuf *sb, const struct epoch_rec *r)
{
	char t[64], s[NODE_STR_LEN];
	time_t sec = (time_t)r->h.time;
	struct tm tm;

	localtime_r(&sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%d %H:%M:%S", &tm);
	sbuf_printf(sb, "%s %6" PRIu32 " [", t, r->h.epoch);
	for (uint32_t i = 0; i < r->h.nr_nodes; i++)
		sbuf_printf(sb, "%s%s:%u", i ? ", " : "",
			    node_to_str(&r->nodes[i], s, sizeof(s)),
			    r->nodes[i].nr_vnodes);
	sbuf_printf(sb, "]\n");
}

int cluster_info_text(struct sbuf *sb)
{
	struct epoch_rec *recs;
	struct sd_node *nodes;
	uint32_t epoch, result;
	int nr, n;

	if (fetch_nodes(&nodes, &nr, &epoch))
		return -EIO;
	free(nodes);
	n = fetch_epochs(epoch, nr, &recs, &result);
	if (n < 0)
		return -EIO;
	sbuf_printf(sb, "Cluster status: ");
	if (result == SD_RES_SUCCESS)
		sbuf_printf(sb, "running, auto-recovery %s\n",
			    n && recs[0].h.disable_recovery ? "disabled" :
			    "enabled");
	else
		sbuf_printf(sb, "%s\n", sd_strerror(result));
	if (n) {
		time_t ct = (time_t)(recs[0].h.ctime >> 32);
		char c[64];

		/* ctime_r's text ends with a newline, hence the empty line */
		sbuf_printf(sb, "\nCluster created at %s\n",
			    ctime_r(&ct, c) ? c : "?\n");
		sbuf_printf(sb, "Epoch Time           Version "
			    "[Host:Port:V-Nodes,,,]\n");
	}
	for (int i = 0; i < n; i++)
		print_epoch(sb, &recs[i]);
	free_recs(recs, n);
	return 0;
}
