// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog node md info|plug|unplug (dog.md §3.6): the disks of a multi-disk
 * sheep (sheep BASE,DIR1,DIR2...).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dog.h"
#include "net.h"
#include "node_md.h"
#include "proto.h"
#include "util.h"

#define MD_ENTRIES	64
#define MD_ENT_SIZE	4120
#define MD_INFO_SIZE	(MD_ENTRIES * MD_ENT_SIZE + 8)

/* MD_INFO of @nid (NULL: the sheep of -a/-p) printed as rows */
static int md_info_of(const struct node_id *nid, const char *where)
{
	uint8_t *buf = xzalloc(MD_INFO_SIZE);
	struct sd_req req;
	struct sd_rsp rsp;
	uint32_t nr;
	int ret = EXIT_FAILURE;

	sd_init_req(&req, SD_OP_MD_INFO);
	req.data_length = MD_INFO_SIZE;
	if (nid ? dog_exec_node(nid, &req, buf, MD_INFO_SIZE, &rsp) :
		  dog_exec(&req, buf, MD_INFO_SIZE, &rsp))
		goto out;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to get multi-disk information: %s\n",
			sd_strerror(rsp.result));
		goto out;
	}
	nr = rsp.data_length >= MD_INFO_SIZE ?
	     get_le32(buf + MD_ENTRIES * MD_ENT_SIZE) : 0;
	for (uint32_t i = 0; i < nr && i < MD_ENTRIES; i++) {
		const uint8_t *p = buf + (size_t)i * MD_ENT_SIZE;
		uint64_t free_b = get_le64(p + 8), used = get_le64(p + 16);
		char s[32], u[32], f[32], path[4097];
		int idx = (int)get_le32(p);

		memcpy(path, p + 24, 4096);
		path[4096] = 0;
		size_to_str(used + free_b, s, sizeof(s));
		size_to_str(used, u, sizeof(u));
		size_to_str(free_b, f, sizeof(f));
		if (raw_output)
			printf("%s %d %s %s %s %d%% %s\n", where, idx, s, u, f,
			       use_percent(used, used + free_b), path);
		else
			printf("%2d\t%s\t%s\t%s\t%3d%%\t%s\n", idx, s, u, f,
			       use_percent(used, used + free_b), path);
	}
	ret = EXIT_SUCCESS;
out:
	free(buf);
	return ret;
}

static int md_info(int argc, char **argv)
{
	char where[INET6_ADDRSTRLEN + 16];
	int ret = EXIT_SUCCESS;

	if (!raw_output)
		printf("Id\tSize\tUsed\tAvail\tUse%%\tPath\n");
	if (!nopt.all) {
		snprintf(where, sizeof(where), "%s:%d", sdhost, sdport);
		return md_info_of(NULL, where);
	}
	for (int i = 0; i < sd_nodes_nr; i++) {
		if (!raw_output)
			printf("Node %d:\n", i);
		node_to_str(&sd_nodes[i], where, sizeof(where));
		if (md_info_of(&sd_nodes[i].nid, where))
			ret = EXIT_FAILURE;
	}
	return ret;
}

static const char *md_error(uint8_t opcode, uint32_t result)
{
	switch (result) {
	case SD_RES_UNKNOWN:
		return opcode == SD_OP_MD_PLUG ? "nothing changed (plugged "
		       "already)" : "nothing changed (not a disk of the node)";
	case SD_RES_NO_SUPPORT:
		return "the sheep has one store directory (disks are for "
		       "sheep BASE,DIR1,DIR2...)";
	case SD_RES_INVALID_PARMS:
		return opcode == SD_OP_MD_UNPLUG ?
		       "the last disk of a node cannot be unplugged" :
		       "give absolute paths";
	case SD_RES_VDI_LOCKED:
		return "the directory is in use by another sheep (its store "
		       "or one of its disks): nothing was purged";
	}
	return sd_strerror(result);
}

static int md_change(uint8_t opcode, const char *list, const char *caution)
{
	struct sd_req req;
	struct sd_rsp rsp;

	if (!nopt.force && !confirm(caution))
		return EXIT_SUCCESS;
	sd_init_req(&req, opcode);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = (uint32_t)strlen(list) + 1;
	if (dog_exec(&req, (void *)list, 0, &rsp))
		return EXIT_FAILURE;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to execute request: %s\n",
			md_error(opcode, rsp.result));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

static int md_plug(int argc, char **argv)
{
	return md_change(SD_OP_MD_PLUG, argv[0],
			 "Caution! The directories to be plugged will be "
			 "purged.");
}

static int md_unplug(int argc, char **argv)
{
	return md_change(SD_OP_MD_UNPLUG, argv[0],
			 "Caution! Recovery will be triggered after "
			 "unplugging.");
}

const struct subcommand node_md_cmds[] = {
	{ "info", NULL, "aprAhT", "show the disks of the node (-A: of every "
	  "node)", NULL, CMD_NEED_NODELIST, 0, md_info },
	{ "plug", "<dir[,dir...]>", "apfhT", "add disks to the node (their "
	  "contents are deleted)", NULL, 0, 1, md_plug },
	{ "unplug", "<dir[,dir...]>", "apfhT", "remove disks from the node "
	  "(their objects are recovered from other nodes)", NULL, 0, 1,
	  md_unplug },
	{ NULL },
};
