// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog node list|info|kill|recovery|stat|log|vnodes|format (dog.md §3);
 * node md is in node_md.c.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dog.h"
#include "node_md.h"
#include "node_metrics.h"
#include "net.h"
#include "proto.h"
#include "util.h"

struct node_opts nopt;

static int node_list(int argc, char **argv)
{
	char s[NODE_STR_LEN];

	if (!raw_output)
		printf("  Id   Host:Port         V-Nodes       Zone\n");
	for (int i = 0; i < sd_nodes_nr; i++) {
		const struct sd_node *n = &sd_nodes[i];

		node_to_str(n, s, sizeof(s));
		if (raw_output)
			printf("%d %s %d %" PRIu32 "\n", i, s, n->nr_vnodes,
			       n->zone);
		else
			printf("%4d   %-20s\t%2d%11" PRIu32 "\n", i, s,
			       n->nr_vnodes, n->zone);
	}
	return EXIT_SUCCESS;
}

/* ---- node info ---- */


static void add_current_size(uint32_t vid, const struct sd_inode_header *h,
			     const uint32_t *index, uint32_t nr, void *data)
{
	if (!h->snap_ctime)
		*(uint64_t *)data += h->vdi_size;
}

static void print_info_row(const char *id, uint64_t size, uint64_t used,
			   uint64_t avail)
{
	char a[32], b[32], c[32];

	fmt_size(size, a, sizeof(a));
	fmt_size(used, b, sizeof(b));
	fmt_size(avail, c, sizeof(c));
	if (raw_output)
		printf("%s %s %s %s %d%%", id, a, b, c, use_percent(used, size));
	else
		printf("%s\t%s\t%s\t%s\t%3d%%", id, a, b, c,
		       use_percent(used, size));
}

static int node_info(int argc, char **argv)
{
	uint64_t total = 0, total_avail = 0, vsize = 0;
	int ok = 0, ret;
	char id[16], v[32];

	if (!raw_output)
		printf("Id\tSize\tUsed\tAvail\tUse%%\n");
	for (int i = 0; i < sd_nodes_nr; i++) {
		struct sd_req req;
		struct sd_rsp rsp;
		uint64_t size, avail;

		sd_init_req(&req, SD_OP_STAT_SHEEP);
		req.epoch = sd_epoch;
		if (dog_exec_node(&sd_nodes[i].nid, &req, NULL, 0, &rsp) ||
		    rsp.result != SD_RES_SUCCESS)
			continue;
		size = rsp.node.store_size;
		avail = MIN(rsp.node.store_free, size);
		snprintf(id, sizeof(id), raw_output ? "%d" : "%2d", i);
		print_info_row(id, size, size - avail, avail);
		printf("\n");
		total += size;
		total_avail += avail;
		ok++;
	}
	if (!ok) {
		fprintf(stderr, "Cannot get information from any nodes\n");
		return EXIT_SYSFAIL;
	}
	ret = parse_vdi(add_current_size, false, &vsize);
	if (ret)
		return ret;
	print_info_row("Total", total, total - total_avail, total_avail);
	fmt_size(vsize, v, sizeof(v));
	if (raw_output)
		printf(" %s\n", v);
	else
		printf("\n\nTotal virtual image size\t%s\n", v);
	return EXIT_SUCCESS;
}

/* ---- node kill ---- */

static int node_kill(int argc, char **argv)
{
	struct sd_req req;
	struct sd_rsp rsp;
	unsigned long idx;
	char *end;

	sd_init_req(&req, SD_OP_KILL_NODE);
	if (nopt.local) {
		if (dog_exec(&req, NULL, 0, &rsp))
			return EXIT_FAILURE;
	} else {
		if (argc < 1) {
			fprintf(stderr, "Specify a node index or -l\n");
			return EXIT_USAGE;
		}
		if (!isdigit((unsigned char)argv[0][0]) ||
		    (idx = strtoul(argv[0], &end, 10), *end) ||
		    idx >= (unsigned long)sd_nodes_nr) {
			fprintf(stderr, "Invalid node index '%s'\n", argv[0]);
			return EXIT_USAGE;
		}
		req.epoch = sd_epoch;
		if (dog_exec_node(&sd_nodes[idx].nid, &req, NULL, 0, &rsp))
			return EXIT_FAILURE;
	}
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to kill the node: %s\n",
			sd_strerror(rsp.result));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

/* ---- node recovery ---- */

int stat_recovery(const struct node_id *nid, struct recovery_state *rs)
{
	uint8_t buf[sizeof(struct recovery_state)];
	struct sd_req req;
	struct sd_rsp rsp;
	int ret;

	memset(buf, 0, sizeof(buf));
	sd_init_req(&req, SD_OP_STAT_RECOVERY);
	req.data_length = sizeof(buf);
	req.epoch = sd_epoch;
	if (nid)
		ret = dog_exec_node(nid, &req, buf, sizeof(buf), &rsp);
	else
		ret = dog_exec(&req, buf, sizeof(buf), &rsp);
	if (ret || rsp.result != SD_RES_SUCCESS)
		return -1;
	recovery_state_decode(rs, buf);
	return 0;
}

/* -P: follow the recovery of the target node once a second */
static int recovery_progress(void)
{
	struct recovery_state rs;

	for (;;) {
		if (stat_recovery(NULL, &rs))
			return EXIT_SYSFAIL;
		if (!rs.in_recovery)
			break;
		if (rs.state == 0)
			printf("\rpreparing a checked object list...");
		else if (rs.state == 2)
			printf("\rnotifying a completion of recovery...");
		else if (rs.state == RECOVERY_STATE_HALTED)
			printf("\rhalted: the disk is nearly full");
		else
			show_count_progress(rs.nr_finished, rs.nr_total,
					    "objects");
		fflush(stdout);
		sleep(1);
	}
	printf("\n");
	return EXIT_SUCCESS;
}

static int recovery_info(int argc, char **argv)
{
	char s[NODE_STR_LEN];

	if (nopt.progress)
		return recovery_progress();
	if (!raw_output)
		printf("Nodes In Recovery:\n"
		       "  Id   Host:Port         V-Nodes       Zone"
		       "       Progress\n");
	for (int i = 0; i < sd_nodes_nr; i++) {
		const struct sd_node *n = &sd_nodes[i];
		struct recovery_state rs;
		double pct;

		bool stale_full;

		if (stat_recovery(&n->nid, &rs))
			continue;
		stale_full = rs.pad[0] & RECOVERY_FLAG_STALE_FULL;
		if (!rs.in_recovery && !stale_full)
			continue;
		node_to_str(n, s, sizeof(s));
		pct = rs.nr_total ? (double)rs.nr_finished * 100 /
				    (double)rs.nr_total : 0;
		if (raw_output)
			printf("%d %s %d %d %" PRIu64 " %" PRIu64 "\n", i, s,
			       n->nr_vnodes, (int)n->zone, rs.nr_finished,
			       rs.nr_total);
		else
			printf("%4d   %-20s%5d%11d%11.1f%%%s%s\n", i, s,
			       n->nr_vnodes, (int)n->zone, pct,
			       rs.state == RECOVERY_STATE_HALTED ?
			       "  halted: disk nearly full" : "",
			       stale_full ? "  stale area over its bound" : "");
	}
	return EXIT_SUCCESS;
}

static int recovery_set_throttle(int argc, char **argv)
{
	uint8_t buf[sizeof(struct recovery_throttling)];
	struct recovery_throttling t = { 0 };
	struct sd_req req;
	struct sd_rsp rsp;
	uint64_t max, interval;

	if (parse_u64_range(argv[0], UINT32_MAX, &max)) {
		fprintf(stderr, "Invalid max (%s)\n", argv[0]);
		return EXIT_USAGE;
	}
	/* no more than the sheep's clock can add without wrapping */
	if (parse_u64_range(argv[1], INT64_MAX, &interval)) {
		fprintf(stderr, "Invalid interval (%s)\n", argv[1]);
		return EXIT_USAGE;
	}
	if (!max != !interval) {
		fprintf(stderr, "Invalid interval max (%" PRIu64 "), "
			"interval (%" PRIu64 ")\n", max, interval);
		return EXIT_USAGE;
	}
	t.max_exec_count = (uint32_t)max;
	t.queue_work_interval = interval;
	t.throttling = max && interval;
	throttling_encode(&t, buf);
	sd_init_req(&req, SD_OP_SET_RECOVERY);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(buf);
	if (dog_exec(&req, buf, 0, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to set the recovery throttle: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	return EXIT_SUCCESS;
}

static int recovery_get_throttle(int argc, char **argv)
{
	uint8_t buf[sizeof(struct recovery_throttling)];
	struct recovery_throttling t;
	struct sd_req req;
	struct sd_rsp rsp;

	memset(buf, 0, sizeof(buf));
	sd_init_req(&req, SD_OP_GET_RECOVERY);
	req.data_length = sizeof(buf);
	if (dog_exec(&req, buf, sizeof(buf), &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to get the recovery throttle: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	throttling_decode(&t, buf);
	fprintf(stderr, "max (%" PRIu32 "), interval (%" PRIu64 ")\n",
		t.max_exec_count, t.queue_work_interval);
	return EXIT_SUCCESS;
}

static const struct subcommand recovery_cmds[] = {
	{ "info", NULL, NULL, "show the nodes in recovery", NULL,
	  CMD_NEED_NODELIST, 0, recovery_info },
	{ "set-throttle", "<max> <interval>", NULL,
	  "limit recovery to <max> objects per <interval> ms (0 0 = off)",
	  NULL, 0, 2, recovery_set_throttle },
	{ "get-throttle", NULL, NULL, "show the recovery throttle", NULL, 0,
	  0, recovery_get_throttle },
	{ NULL },
};

/* ---- node stat ---- */

/* one row of `node stat`: the counters of one side of the sheep */
struct stat_row {
	const char *name;
	uint64_t active, total, writes, reads, removes, flushes;
	uint64_t bytes_in, bytes_out;
};

static void stat_rows(const struct sd_stat *s, struct stat_row *client,
		      struct stat_row *peer)
{
	*client = (struct stat_row) {
		.name = "Client", .active = s->gway_active,
		.total = s->gway_total, .writes = s->gway_writes,
		.reads = s->gway_reads, .removes = s->gway_removes,
		.flushes = s->gway_flushes, .bytes_in = s->gway_bytes_in,
		.bytes_out = s->gway_bytes_out,
	};
	/* sheep does not count peer flushes: that column is always 0 */
	*peer = (struct stat_row) {
		.name = "Peer", .active = s->peer_active,
		.total = s->peer_total, .writes = s->peer_writes,
		.reads = s->peer_reads, .removes = s->peer_removes,
		.bytes_in = s->peer_bytes_in, .bytes_out = s->peer_bytes_out,
	};
}

/* STAT on the target node; 0 or an exit code */
static int get_stat(struct sd_stat *st)
{
	uint8_t buf[sizeof(struct sd_stat)];
	struct sd_req req;
	struct sd_rsp rsp;

	memset(buf, 0, sizeof(buf));
	sd_init_req(&req, SD_OP_STAT);
	req.data_length = sizeof(buf);
	if (dog_exec(&req, buf, sizeof(buf), &rsp))
		return EXIT_SYSFAIL;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to get the request statistics: %s\n",
			sd_strerror(rsp.result));
		return EXIT_FAILURE;
	}
	sd_stat_decode(st, buf);
	return 0;
}

static void put_field(const char *s, bool first)
{
	printf("%s%s", first ? "" : raw_output ? " " : "\t", s);
}

static void put_count(uint64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	put_field(s, false);
}

static void put_size(uint64_t v)
{
	char s[32];

	put_field(fmt_size(v, s, sizeof(s)), false);
}

/* per second change of a counter over @secs seconds */
static uint64_t per_sec(uint64_t now, uint64_t before, double secs)
{
	if (now <= before || secs <= 0)
		return 0;
	return (uint64_t)((double)(now - before) / secs + 0.5);
}

/*
 * One row.  Like 1.0, the plain form puts the reads under "Write" and
 * the writes under "Read"; -w (@prev set) follows the header and adds
 * the write and read bandwidth and the requests per second.
 */
static void print_stat_row(const struct stat_row *r,
			   const struct stat_row *prev, double secs)
{
	put_field(r->name, true);
	put_count(r->active);
	put_count(r->total);
	put_count(prev ? r->writes : r->reads);
	put_count(prev ? r->reads : r->writes);
	put_count(r->removes);
	put_count(r->flushes);
	put_size(r->bytes_in);
	put_size(r->bytes_out);
	if (prev) {
		put_size(per_sec(r->bytes_in, prev->bytes_in, secs));
		put_size(per_sec(r->bytes_out, prev->bytes_out, secs));
		put_count(per_sec(r->total, prev->total, secs));
	}
	printf("\n");
}

static void print_stat(const struct sd_stat *s, const struct sd_stat *prev,
		       double secs)
{
	struct stat_row client, peer, pclient, ppeer;

	if (!raw_output)
		printf("Request\tActive\tTotal\tWrite\tRead\tRemove\tFlush\t"
		       "All WR\tAll RD%s\n", prev ? "\tWRBW\tRDBW\tRPS" : "");
	stat_rows(s, &client, &peer);
	if (prev)
		stat_rows(prev, &pclient, &ppeer);
	print_stat_row(&client, prev ? &pclient : NULL, secs);
	print_stat_row(&peer, prev ? &ppeer : NULL, secs);
}

/* -w: the counters and their change every second, until interrupted */
static int stat_watch(void)
{
	struct sd_stat prev, cur;
	uint64_t t0, t1;
	int ret;

	ret = get_stat(&prev);
	if (ret)
		return ret;
	t0 = now_msec();
	for (;;) {
		sleep(1);
		ret = get_stat(&cur);
		if (ret)
			return ret;
		t1 = now_msec();
		print_stat(&cur, &prev, (double)(t1 - t0) / 1000);
		fflush(stdout);
		prev = cur;
		t0 = t1;
	}
}

static int node_stat(int argc, char **argv)
{
	struct sd_stat st;
	int ret;

	if (nopt.metrics && nopt.watch) {
		fprintf(stderr, "-m and -w cannot be used together\n");
		return EXIT_USAGE;
	}
	if (nopt.metrics)
		return node_stat_metrics();
	if (nopt.watch)
		return stat_watch();
	ret = get_stat(&st);
	if (ret)
		return ret;
	print_stat(&st, NULL, 0);
	return EXIT_SUCCESS;
}

/* ---- node log level ---- */

static const char *const log_level_names[] = {
	"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

static void list_log_levels(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(log_level_names); i++)
		fprintf(f, "%s (%zu)\n", log_level_names[i], i);
}

static int log_level_set(const char *name)
{
	uint8_t buf[4];
	struct sd_req req;
	struct sd_rsp rsp;
	int level = -1;

	for (size_t i = 0; i < ARRAY_SIZE(log_level_names); i++)
		if (!strcmp(name, log_level_names[i]))
			level = (int)i;
	if (level < 0) {
		fprintf(stderr, "Invalid log level '%s'\n"
			"Available log levels:\n", name);
		list_log_levels(stderr);
		return -1;
	}
	put_le32(buf, (uint32_t)level);
	sd_init_req(&req, SD_OP_SET_LOGLEVEL);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(buf);
	if (dog_exec(&req, buf, 0, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to set the log level: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	return EXIT_SUCCESS;
}

static int log_level_get(void)
{
	uint8_t buf[4];
	struct sd_req req;
	struct sd_rsp rsp;
	int32_t level;

	memset(buf, 0, sizeof(buf));
	sd_init_req(&req, SD_OP_GET_LOGLEVEL);
	req.data_length = sizeof(buf);
	if (dog_exec(&req, buf, sizeof(buf), &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to get the log level: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	level = (int32_t)get_le32(buf);
	if (level < 0 || level >= (int32_t)ARRAY_SIZE(log_level_names)) {
		fprintf(stderr, "Unknown log level %" PRId32 "\n", level);
		return -1;
	}
	fprintf(stderr, "%s (%" PRId32 ")\n", log_level_names[level], level);
	return EXIT_SUCCESS;
}

/* node log level set <level> | get | list */
static int log_level(int argc, char **argv)
{
	if (!strcmp(argv[0], "set")) {
		if (argc < 2) {
			fprintf(stderr, "Specify a log level\n");
			return EXIT_USAGE;
		}
		return log_level_set(argv[1]);
	}
	if (!strcmp(argv[0], "get"))
		return log_level_get();
	if (!strcmp(argv[0], "list")) {
		list_log_levels(stdout);
		return EXIT_SUCCESS;
	}
	fprintf(stderr, "Invalid command 'node log level %s'\n", argv[0]);
	return EXIT_USAGE;
}

static const struct subcommand log_cmds[] = {
	{ "level", "{set <level>|get|list}", NULL,
	  "set, show or list the log level of the sheep", NULL, 0, 1,
	  log_level },
	{ NULL },
};

/* ---- node vnodes set ---- */

/* node vnodes set <n>: this node's vnodes in a cluster of fixed vnodes */
static int vnodes_set(int argc, char **argv)
{
	uint8_t buf[8] = { 0 };
	struct sd_req req;
	struct sd_rsp rsp;
	char *end;
	long n;

	errno = 0;
	n = strtol(argv[0], &end, 10);
	if (errno || end == argv[0] || *end || n < 1 || n > UINT16_MAX) {
		fprintf(stderr, "Invalid number of vnodes '%s': must be an "
			"integer between 1 and 65535\n", argv[0]);
		return EXIT_USAGE;
	}
	/* Sheepdog's dog declares 8 bytes; the count is the first 4 */
	put_le32(buf, (uint32_t)n);
	sd_init_req(&req, SD_OP_SET_VNODES);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(buf);
	if (dog_exec(&req, buf, 0, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to set the number of vnodes: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	return EXIT_SUCCESS;
}

static const struct subcommand vnodes_cmds[] = {
	{ "set", "<n>", NULL, "give the node n vnodes (fixed vnodes only)",
	  NULL, 0, 1, vnodes_set },
	{ NULL },
};

/* ---- node format ---- */

/* a local file: <dir>/node_config holding the store name (16 bytes) */
static int node_format(int argc, char **argv)
{
	const char *dir = argv[0], *store = argv[1];
	char path[PATH_MAX], name[SD_MAX_STORE_NAME];
	struct stat st;
	int fd;

	if (strcmp(store, "plain") && strcmp(store, "tree")) {
		fprintf(stderr, "Invalid store '%s': plain or tree\n", store);
		return EXIT_USAGE;
	}
	if (stat(dir, &st)) {
		fprintf(stderr, "Cannot use %s: %s\n", dir, strerror(errno));
		return EXIT_SYSFAIL;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "Cannot use %s: not a directory\n", dir);
		return EXIT_SYSFAIL;
	}
	if (snprintf(path, sizeof(path), "%s/node_config", dir) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "Directory name too long: %s\n", dir);
		return EXIT_USAGE;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 && errno == EEXIST) {
		fprintf(stderr, "%s already exists: the node is already "
			"formatted\n", path);
		return EXIT_FAILURE;
	}
	if (fd < 0) {
		fprintf(stderr, "Cannot create %s: %s\n", path,
			strerror(errno));
		return EXIT_SYSFAIL;
	}
	memset(name, 0, sizeof(name));
	memcpy(name, store, strlen(store));
	if (write(fd, name, sizeof(name)) != (ssize_t)sizeof(name) ||
	    fsync(fd)) {
		fprintf(stderr, "Cannot write %s: %s\n", path,
			strerror(errno));
		close(fd);
		unlink(path);
		return EXIT_SYSFAIL;
	}
	if (close(fd)) {
		fprintf(stderr, "Cannot write %s: %s\n", path,
			strerror(errno));
		unlink(path);
		return EXIT_SYSFAIL;
	}
	return EXIT_SUCCESS;
}

static int node_parser(int ch, const char *arg)
{
	switch (ch) {
	case 'P':
		nopt.progress = true;
		break;
	case 'l':
		nopt.local = true;
		break;
	case 'w':
		nopt.watch = true;
		break;
	case 'm':
		nopt.metrics = true;
		break;
	case 'A':
		nopt.all = true;
		break;
	case 'f':
		nopt.force = true;
		break;
	}
	return 0;
}

static const struct sd_option node_options[] = {
	{ 'P', "progress", false, NULL, "follow the recovery progress" },
	{ 'l', "local", false, NULL, "kill the node dog is talking to" },
	{ 'w', "watch", false, NULL,
	  "print the statistics and their rates every second, each "
	  "under its own name (without -w the rows are Sheepdog 1.0's: "
	  "reads under Write, writes under Read)" },
	{ 'm', "metrics", false, NULL,
	  "print every counter of the sheep (what --http serves)" },
	{ 'A', "all", false, NULL, "md info of every node" },
	{ 'f', "force", false, NULL, "do not ask for confirmation" },
	{ 0, NULL, false, NULL, NULL },
};

static const struct subcommand node_cmds[] = {
	{ "kill", "<node id>", "aprhlT", "stop one sheep", NULL,
	  CMD_NEED_NODELIST, 0, node_kill },
	{ "list", NULL, "aprhT", "list the nodes", NULL, CMD_NEED_NODELIST,
	  0, node_list },
	{ "ok-to-stop", "<node id>...", "aphT", "tell whether stopping the "
	  "nodes now leaves every object available", NULL,
	  CMD_NEED_NODELIST, 1, node_ok_to_stop },
	{ "info", NULL, "aprhT", "show the capacity of every node", NULL,
	  CMD_NEED_NODELIST, 0, node_info },
	{ "recovery", NULL, "aphPrT", "show or tune recovery", recovery_cmds,
	  CMD_NEED_NODELIST, 0, recovery_info },
	{ "stat", NULL, "amprwhT", "show the request statistics of the sheep",
	  NULL, 0, 0, node_stat },
	{ "log", NULL, "aphT", "show or change the log level of the sheep",
	  log_cmds, 0, 0, NULL },
	{ "vnodes", NULL, "aphT", "change the number of vnodes of the node",
	  vnodes_cmds, 0, 0, NULL },
	{ "md", NULL, "aprAfhT", "show, plug or unplug the disks of the node",
	  node_md_cmds, 0, 0, NULL },
	{ "format", "<dir> <plain|tree>", "aphT",
	  "write the store name into <dir>/node_config", NULL, 0, 2,
	  node_format },
	{ NULL },
};

struct command node_command = {
	.name = "node",
	.sub = node_cmds,
	.options = node_options,
	.parser = node_parser,
};
