// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog cluster scrub start|stop|status (Kelpie): every node verifies the
 * objects it stores against their checksums in the background and
 * repairs failing blocks from another copy (sheep/recovery/scrub.c).
 * Each command goes to every node of the cluster.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dog.h"
#include "net.h"
#include "proto.h"
#include "util.h"

/* send a header-only request to every node; 0 if every node took it */
static int to_every_node(uint8_t opcode, const char *what)
{
	char s[NODE_STR_LEN];
	int ret = EXIT_SUCCESS;

	for (int i = 0; i < sd_nodes_nr; i++) {
		struct sd_req req;
		struct sd_rsp rsp;

		sd_init_req(&req, opcode);
		if (dog_exec_node(&sd_nodes[i].nid, &req, NULL, 0, &rsp) ||
		    (rsp.result != SD_RES_SUCCESS &&
		     rsp.result != SD_RES_NO_SUPPORT)) {
			fprintf(stderr, "failed to %s the scrub on %s%s%s\n",
				what, node_to_str(&sd_nodes[i], s, sizeof(s)),
				rsp.result ? ": " : "",
				rsp.result ? sd_strerror(rsp.result) : "");
			ret = EXIT_FAILURE;
		}
	}
	return ret;
}

static int scrub_start_cmd(int argc, char **argv)
{
	int ret = to_every_node(SD_OP_SCRUB_START, "start");

	if (ret == EXIT_SUCCESS)
		printf("Scrub started on %d node(s)\n", sd_nodes_nr);
	return ret;
}

static int scrub_stop_cmd(int argc, char **argv)
{
	int ret = to_every_node(SD_OP_SCRUB_STOP, "stop");

	if (ret == EXIT_SUCCESS)
		printf("Scrub stopped\n");
	return ret;
}

static int scrub_status_cmd(int argc, char **argv)
{
	char s[NODE_STR_LEN];
	int ret = EXIT_SUCCESS;

	if (!raw_output)
		printf("  Id   Host:Port             State     Objects  Verified"
		       "   Damaged  Repaired  Unrepaired  Detected    Healed"
		       "  Unhealed  Diverged  Reconciled\n");
	for (int i = 0; i < sd_nodes_nr; i++) {
		uint8_t buf[SCRUB_STATUS_LEN];
		uint64_t f[SCRUB_STATUS_LEN / 8];
		struct sd_req req;
		struct sd_rsp rsp;

		sd_init_req(&req, SD_OP_SCRUB_STATUS);
		req.data_length = sizeof(buf);
		node_to_str(&sd_nodes[i], s, sizeof(s));
		if (dog_exec_node(&sd_nodes[i].nid, &req, buf, sizeof(buf),
				  &rsp) || rsp.result != SD_RES_SUCCESS ||
		    rsp.data_length < sizeof(buf)) {
			fprintf(stderr, "no scrub status from %s\n", s);
			ret = EXIT_FAILURE;
			continue;
		}
		for (size_t k = 0; k < SCRUB_STATUS_LEN / 8; k++)
			f[k] = get_le64(buf + 8 * k);
		if (raw_output)
			printf("%d %s %s %" PRIu64 " %" PRIu64 " %" PRIu64
			       " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			       " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", i, s,
			       f[0] ? "running" : "idle", f[1], f[2], f[3],
			       f[4], f[5], f[6], f[7], f[8], f[9], f[10]);
		else
			printf("%4d   %-20s  %-8s%9" PRIu64 "%10" PRIu64 "%10"
			       PRIu64 "%10" PRIu64 "%12" PRIu64 "%10" PRIu64
			       "%10" PRIu64 "%10" PRIu64 "%10" PRIu64 "%12"
			       PRIu64 "\n", i, s,
			       f[0] ? "running" : "idle", f[1], f[2], f[3],
			       f[4], f[5], f[6], f[7], f[8], f[9], f[10]);
	}
	return ret;
}

const struct subcommand scrub_cmds[] = {
	{ "start", NULL, NULL, "verify every stored object against its "
	  "checksums and repair from other copies", NULL, CMD_NEED_NODELIST,
	  0, scrub_start_cmd },
	{ "stop", NULL, NULL, "stop a running scrub", NULL, CMD_NEED_NODELIST,
	  0, scrub_stop_cmd },
	{ "status", NULL, "r", "objects verified, damaged and repaired, and "
	  "with copies that differed and were reconciled, per node", NULL, CMD_NEED_NODELIST, 0, scrub_status_cmd },
	{ NULL },
};
