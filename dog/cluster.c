// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog cluster format|info|shutdown|recover|check|alter-copy (dog.md §4).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dog.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"

#define STORE_LIST_BUF_SIZE	512

static struct cluster_opts {
	char store[SD_MAX_STORE_NAME];
	uint8_t copies;
	bool copies_given;	/* -c: without it the sheep chooses */
	uint8_t copy_policy;
	uint8_t block_size_shift;
	bool force;
	bool strict;
	bool use_lock;
	bool avoid_diskfull;
	bool recycle_vid;
	bool fixed_vnodes;
	bool stable_vnodes;	/* -S: a way of weighing, not with -V */
	uint16_t vnodes;	/* -N: a mean node's vnodes, with -S */
	bool diff;
} copt = {
	.store = "plain",
	.copies = SD_DEFAULT_COPIES,
	.block_size_shift = SD_DEFAULT_BLOCK_SIZE_SHIFT,
};

/* ---- cluster format ---- */

/* CLUSTER_INFO of one node: 0 and the header, or -1 */
static int node_cluster_info(const struct sd_node *n,
			     struct cluster_info_hdr *c)
{
	uint32_t result;

	if (dog_cluster_info(&n->nid, c, &result) ||
	    result != SD_RES_SUCCESS)
		return -1;
	return 0;
}

/* every storage node must agree with -V about fixed or auto vnodes */
static int check_vnode_strategy(void)
{
	if (copt.vnodes && !copt.stable_vnodes) {
		fprintf(stderr, "-N/--vnodes needs -S/--stable-vnodes: the "
			"default weighing gives a node of the mean capacity "
			"128 vnodes\n");
		return EXIT_FAILURE;
	}
	if (copt.fixed_vnodes && copt.stable_vnodes) {
		fprintf(stderr, "-S/--stable-vnodes weighs vnodes by capacity: "
			"it cannot be used with -V/--fixedvnodes\n");
		return EXIT_FAILURE;
	}
	for (int i = 0; i < sd_nodes_nr; i++) {
		struct cluster_info_hdr c;
		bool is_auto;

		if (!sd_nodes[i].nr_vnodes)
			continue;
		if (node_cluster_info(&sd_nodes[i], &c))
			continue;
		is_auto = c.flags & SD_CLUSTER_FLAG_AUTO_VNODES;
		if (copt.fixed_vnodes && is_auto) {
			fprintf(stderr, "Can not apply the option of '-V', "
				"because there are vnode strategy of sheep "
				"is auto in the cluster\n");
			return EXIT_FAILURE;
		}
		if (!copt.fixed_vnodes && !is_auto) {
			fprintf(stderr, "Need to specify the option of '-V', "
				"because there are vnode strategy of sheep "
				"is fixed in the cluster\n");
			return EXIT_FAILURE;
		}
	}
	return 0;
}

/* does any VDI exist?  Unknown counts as no. */
bool cluster_has_vdis(void)
{
	uint8_t *map = vdi_bitmap_alloc();
	bool found = false;
	uint32_t len;

	if (!read_vdi_bitmaps(map, NULL, &len))
		found = !is_zero(map, len);
	vdi_bitmap_free(map);
	return found;
}

bool cluster_forced(void)
{
	return copt.force;
}

static void list_stores(void)
{
	char buf[STORE_LIST_BUF_SIZE + 1];
	struct sd_req req;
	struct sd_rsp rsp;

	memset(buf, 0, sizeof(buf));
	sd_init_req(&req, SD_OP_GET_STORE_LIST);
	req.data_length = STORE_LIST_BUF_SIZE;
	if (dog_exec(&req, buf, STORE_LIST_BUF_SIZE, &rsp) ||
	    rsp.result != SD_RES_SUCCESS)
		return;
	fprintf(stderr, "Available stores: %s\n", buf);
}

static int confirm_format(void)
{
	int zones = nr_storage_zones();
	char msg[256];

	/* held VDIs are refused even with -f: their clients detach first */
	if (cluster_has_vdis() && refuse_any_in_use("format the cluster"))
		return -2;
	if (copt.force)
		return 0;
	/* without -c the sheep chooses (as Sheepdog's): nothing to ask */
	if (copt.copies_given && copt.copies > zones) {
		/* word for word as Sheepdog's: scripts answer it */
		snprintf(msg, sizeof(msg), "Number of copies (%u) is larger "
			 "than number of zones (%d).", copt.copies, zones);
		if (!confirm(msg))
			return -1;
	}
	if (cluster_has_vdis() &&
	    !confirm("Caution! The cluster is not empty: formatting it "
		     "destroys every VDI and all of its data."))
		return -1;
	return 0;
}

static int cluster_format(int argc, char **argv)
{
	uint8_t name[SD_MAX_STORE_NAME];
	struct sd_req req;
	struct sd_rsp rsp;
	int ret;

	ret = check_vnode_strategy();
	if (ret)
		return ret;
	if (ec_refused(copt.copies, copt.copy_policy))
		return EXIT_FAILURE;
	ret = confirm_format();
	if (ret)
		return ret == -2 ? EXIT_FAILURE : EXIT_SUCCESS;
	printf("using backend %s store\n", copt.store);
	fflush(stdout);

	memset(name, 0, sizeof(name));
	strcpy((char *)name, copt.store);
	sd_init_req(&req, SD_OP_MAKE_FS);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = (uint32_t)strlen(copt.store) + 1;
	/* 0: the sheep's default, as Sheepdog's dog sends without -c */
	req.cluster.copies = copt.copies_given ? copt.copies : 0;
	req.cluster.copy_policy = copt.copy_policy;
	req.cluster.block_size_shift = copt.block_size_shift;
	req.cluster.ctime = sd_time_now();
	if (copt.strict)
		req.cluster.flags |= SD_CLUSTER_FLAG_STRICT;
	if (copt.use_lock)
		req.cluster.flags |= SD_CLUSTER_FLAG_USE_LOCK;
	if (copt.avoid_diskfull)
		req.cluster.flags |= SD_CLUSTER_FLAG_AVOID_DISKFULL;
	if (copt.recycle_vid)
		req.cluster.flags |= SD_CLUSTER_FLAG_RECYCLE_VID;
	if (!copt.fixed_vnodes)
		req.cluster.flags |= SD_CLUSTER_FLAG_AUTO_VNODES;
	if (copt.stable_vnodes)
		req.cluster.flags |= SD_CLUSTER_FLAG_STABLE_VNODES;
	set_format_vnodes(&req, copt.vnodes);
	if (dog_exec(&req, name, 0, &rsp))
		return EXIT_SYSFAIL;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Format failed: %s\n",
			sd_strerror(rsp.result));
		if (rsp.result == SD_RES_NO_STORE)
			list_stores();
		return EXIT_SYSFAIL;
	}
	return EXIT_SUCCESS;
}

/* ---- cluster info ---- */

static void print_node_list(const struct epoch_rec *r)
{
	char s[NODE_STR_LEN];

	for (uint32_t i = 0; i < r->h.nr_nodes; i++)
		printf("%s%s:%u", i ? ", " : "",
		       node_to_str(&r->nodes[i], s, sizeof(s)),
		       r->nodes[i].nr_vnodes);
}

static bool node_in(const struct sd_node *n, const struct epoch_rec *r)
{
	for (uint32_t i = 0; i < r->h.nr_nodes; i++)
		if (node_id_eq(&n->nid, &r->nodes[i].nid))
			return true;
	return false;
}

/* -d: members added (+) and removed (-) since the previous epoch */
static void print_node_diff(const struct epoch_rec *r,
			    const struct epoch_rec *prev)
{
	char s[NODE_STR_LEN];
	bool first = true;

	if (!prev) {
		printf("formated");
		return;
	}
	for (uint32_t i = 0; i < r->h.nr_nodes; i++) {
		if (node_in(&r->nodes[i], prev))
			continue;
		printf("%s+%s", first ? "" : ", ",
		       node_to_str(&r->nodes[i], s, sizeof(s)));
		first = false;
	}
	for (uint32_t i = 0; i < prev->h.nr_nodes; i++) {
		if (node_in(&prev->nodes[i], r))
			continue;
		printf("%s-%s", first ? "" : ", ",
		       node_to_str(&prev->nodes[i], s, sizeof(s)));
		first = false;
	}
}

static void print_cluster_details(const struct epoch_rec *first)
{
	struct epoch_log_hdr zero = { 0 };
	const struct epoch_log_hdr *h = first ? &first->h : &zero;
	char store[SD_MAX_STORE_NAME + 1], copies[16];

	memcpy(store, h->drv_name, SD_MAX_STORE_NAME);
	store[SD_MAX_STORE_NAME] = 0;
	printf("Cluster store: %s with %s redundancy policy\n", store,
	       copies_to_str(h->nr_copies, h->copy_policy, copies,
			     sizeof(copies)));
	printf("Cluster vnodes strategy: %s\n",
	       !(h->flags & SD_CLUSTER_FLAG_AUTO_VNODES) ? "fixed" :
	       h->flags & SD_CLUSTER_FLAG_STABLE_VNODES ? "auto (stable)" :
	       "auto");
	printf("Cluster vnode mode: %s\n",
	       h->flags & SD_CLUSTER_FLAG_DISKMODE ? "disk" : "node");
}

static void print_epoch(const struct epoch_rec *r,
			const struct epoch_rec *prev)
{
	char t[64];

	fmt_time(r->h.time, "%Y-%m-%d %H:%M:%S", t, sizeof(t));
	if (raw_output)
		printf("%s %" PRIu32 " [", t, r->h.epoch);
	else
		printf("%s %6" PRIu32 " [", t, r->h.epoch);
	if (copt.diff)
		print_node_diff(r, prev);
	else
		print_node_list(r);
	printf("]\n");
}

static int cluster_info(int argc, char **argv)
{
	struct epoch_rec *recs = NULL;
	uint32_t result;
	int n;

	n = fetch_epoch_log(&recs, &result);
	if (n < 0)
		return EXIT_SYSFAIL;
	if (!raw_output)
		printf("Cluster status: ");
	if (result == SD_RES_SUCCESS)
		printf("running, auto-recovery %s\n",
		       n && recs[0].h.disable_recovery ? "disabled" :
		       "enabled");
	else
		printf("%s\n", sd_strerror(result));
	if (verbose)
		print_cluster_details(n ? &recs[0] : NULL);
	if (n && !raw_output) {
		time_t ct = (time_t)(recs[0].h.ctime >> 32);

		if (!verbose)
			printf("\n");
		printf("Cluster created at %s\n", ctime(&ct));
		printf("Epoch Time           Version [Host:Port:V-Nodes,,,]\n");
	}
	for (int i = 0; i < n; i++)
		print_epoch(&recs[i], i + 1 < n ? &recs[i + 1] : NULL);
	free_epoch_log(recs, n);
	return EXIT_SUCCESS;
}

/* ---- cluster shutdown ---- */

static int cluster_shutdown(int argc, char **argv)
{
	struct sd_req req;

	sd_init_req(&req, SD_OP_SHUTDOWN);
	if (dog_light_req(&req)) {
		fprintf(stderr, "failed to execute request\n");
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

/* ---- cluster reweight ---- */

/*
 * Every node measures its capacity again and, if it moved by 1 % or more,
 * announces it: capacity-weighted vnodes change and data moves (one epoch
 * per node that changed).  Clusters of fixed vnodes refuse it.
 */
static int cluster_reweight(int argc, char **argv)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_REWEIGHT);
	if (dog_exec(&req, NULL, 0, &rsp))
		return EXIT_SYSFAIL;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to reweight the cluster: %s\n",
			sd_strerror(rsp.result));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

/* ---- cluster recover ---- */

static int recover_force(int argc, char **argv)
{
	uint8_t *buf;
	struct sd_req req;
	struct sd_rsp rsp;
	int ret = EXIT_SUCCESS;

	if (!copt.force &&
	    !confirm("Caution! Forcing recovery is only needed when some "
		     "nodes of the last epoch can never come back:\n"
		     "the cluster then continues with the nodes that are "
		     "running now, and data\nthat lived only on the missing "
		     "nodes is lost."))
		return EXIT_SUCCESS;
	buf = xzalloc(NODE_LIST_BUF_SIZE);
	sd_init_req(&req, SD_OP_FORCE_RECOVER);
	req.data_length = NODE_LIST_BUF_SIZE;
	if (dog_exec(&req, buf, NODE_LIST_BUF_SIZE, &rsp)) {
		fprintf(stderr, "failed to execute request\n");
		ret = EXIT_FAILURE;
	} else if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "failed to execute request, %s\n",
			sd_strerror(rsp.result));
		ret = EXIT_FAILURE;
	}
	free(buf);
	return ret;
}

static int recover_toggle(uint8_t opcode, const char *what)
{
	struct sd_req req;

	sd_init_req(&req, opcode);
	if (dog_light_req(&req)) {
		fprintf(stderr, "failed to execute request\n");
		return EXIT_FAILURE;
	}
	printf("Cluster recovery: %s\n", what);
	return EXIT_SUCCESS;
}

static int recover_enable(int argc, char **argv)
{
	return recover_toggle(SD_OP_ENABLE_RECOVER, "enable");
}

static int recover_disable(int argc, char **argv)
{
	return recover_toggle(SD_OP_DISABLE_RECOVER, "disable");
}

static const struct subcommand recover_cmds[] = {
	{ "force", NULL, NULL, "leave the waiting state with the nodes "
	  "alive now", NULL, 0, 0, recover_force },
	{ "enable", NULL, NULL, "resume automatic recovery", NULL, 0, 0,
	  recover_enable },
	{ "disable", NULL, NULL, "suspend automatic recovery", NULL, 0, 0,
	  recover_disable },
	{ NULL },
};

/* ---- cluster check ---- */

static void check_one(uint32_t vid, const struct sd_inode_header *h,
		      const uint32_t *index, uint32_t nr, void *data)
{
	int *ret = data;
	struct vdi_inode in = {
		.vid = vid, .h = *h, .nr = nr, .index = (uint32_t *)index,
	};
	char name[SD_MAX_VDI_LEN + 1], tag[SD_MAX_VDI_TAG_LEN + 1];

	inode_name(h, name);
	inode_tag(h, tag);
	if (h->snap_ctime)
		printf("fix snapshot %s (id: %" PRIu32 ", tag: \"%s\")\n",
		       name, h->snap_id, tag);
	else
		printf("fix vdi %s\n", name);
	fflush(stdout);
	if (check_vdi(name, &in, false))
		*ret = EXIT_FAILURE;
}

/* dog.md §4.7: vdi check of every VDI, in ascending vid order */
static int cluster_check(int argc, char **argv)
{
	int ret = EXIT_SUCCESS, r;

	r = parse_vdi(check_one, true, &ret);
	return r ? r : ret;
}

/* ---- cluster alter-copy ---- */

/* dog.md §4.8: the default number of copies of the VDIs created later */
static int alter_copy(int argc, char **argv)
{
	struct epoch_rec *recs = NULL;
	uint8_t old_copies, old_policy;
	struct sd_req req;
	struct sd_rsp rsp;
	uint32_t result;
	char msg[256];
	int n;

	if (copt.copy_policy) {
		fprintf(stderr, "The cluster's redundancy level can only be "
			"set to a number of copies (-c N)\n");
		return EXIT_USAGE;
	}
	if (!copt.force && copt.copies > sd_nodes_nr) {
		snprintf(msg, sizeof(msg), "Caution! The number of copies "
			 "(%u) is larger than the number of nodes (%d):\n"
			 "objects will have fewer copies than requested "
			 "until more nodes join.", copt.copies, sd_nodes_nr);
		if (!confirm(msg))
			return EXIT_SUCCESS;
	}
	n = fetch_epoch_log(&recs, &result);
	if (n < 0)
		return EXIT_SYSFAIL;
	if (!n || result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to get the cluster's defaults: %s\n",
			result != SD_RES_SUCCESS ? sd_strerror(result) :
			"no epoch");
		free_epoch_log(recs, n);
		return EXIT_FAILURE;
	}
	old_copies = recs[0].h.nr_copies;
	old_policy = recs[0].h.copy_policy;
	free_epoch_log(recs, n);
	if (old_policy) {
		fprintf(stderr, "The cluster's copy policy is erasure code, "
			"changing it is not supported yet.\n");
		return EXIT_FAILURE;
	}
	if (old_copies == copt.copies) {
		fprintf(stderr, "The cluster's redundancy level is already "
			"set to %u, nothing changed.\n", copt.copies);
		return EXIT_FAILURE;
	}
	if (!copt.force &&
	    !confirm("Caution! Changing cluster's redundancy level will "
		     "affect\nall the VDIs to be created later."))
		return EXIT_SUCCESS;

	sd_init_req(&req, SD_OP_ALTER_CLUSTER_COPY);
	req.cluster.copies = copt.copies;
	req.cluster.copy_policy = 0;
	if (dog_exec(&req, NULL, 0, &rsp))
		return EXIT_SYSFAIL;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to change the cluster's redundancy "
			"level: %s\n", sd_strerror(rsp.result));
		return EXIT_FAILURE;
	}
	fprintf(stderr, "The cluster's redundancy level is set to %u, the old "
		"one was %u.\n", copt.copies, old_copies);
	return EXIT_SUCCESS;
}

/* ---- options and table ---- */

static int cluster_parser(int ch, const char *arg)
{
	switch (ch) {
	case 'b':
		if (strlen(arg) >= SD_MAX_STORE_NAME) {
			fprintf(stderr, "Invalid store name '%s'\n", arg);
			return EXIT_USAGE;
		}
		strcpy(copt.store, arg);
		break;
	case 'c':
		if (parse_copies(arg, &copt.copies, &copt.copy_policy))
			return EXIT_FAILURE;
		copt.copies_given = true;
		break;
	case 'z':
		return parse_block_shift(arg, &copt.block_size_shift);
	case 'f':
		copt.force = true;
		break;
	case 'F':
		copt.avoid_diskfull = true;
		break;
	case 'l':
		copt.use_lock = true;
		break;
	case 'm':
	case 't':
		copt.strict = true;
		break;
	case 'R':
		copt.recycle_vid = true;
		break;
	case 'V':
		copt.fixed_vnodes = true;
		break;
	case 'S':
		copt.stable_vnodes = true;
		break;
	case 'N': {
		uint64_t v;

		if (parse_u64_range(arg, SD_MAX_FORMAT_VNODES, &v) ||
		    v < SD_MIN_FORMAT_VNODES) {
			fprintf(stderr, "Invalid number of vnodes '%s': must be "
				"an integer between %d and %d\n", arg,
				SD_MIN_FORMAT_VNODES, SD_MAX_FORMAT_VNODES);
			return EXIT_USAGE;
		}
		copt.vnodes = (uint16_t)v;
		break;
	}
	case 'd':
		copt.diff = true;
		break;
	}
	return 0;
}

static const struct sd_option cluster_options[] = {
	{ 'b', "store", true, "store", "backend store (plain or tree)" },
	{ 'c', "copies", true, "copies",
	  "default redundancy: N copies or D:P erasure code" },
	{ 'f', "force", false, NULL, "do not ask for confirmation" },
	{ 'F', "avoid-diskfull", false, NULL,
	  "skip recoveries that would fill a disk" },
	{ 'l', "lock", false, NULL, "really lock VDIs on open" },
	{ 'm', "multithread", false, NULL, "use several threads" },
	{ 'R', "recyclevid", false, NULL,
	  "reuse the ids of fully deleted VDI families" },
	{ 't', "strict", false, NULL,
	  "refuse writes when fewer zones than copies are alive" },
	{ 'z', "block_size_shift", true, "shift",
	  "default object size 2^shift (20 to 26)" },
	{ 'V', "fixedvnodes", false, NULL,
	  "fixed number of vnodes per node" },
	{ 'S', "stable-vnodes", false, NULL,
	  "re-weigh only the nodes a membership change concerns" },
	{ 'N', "vnodes", true, "count",
	  "with -S: vnodes of a node of the mean capacity (16 to 4096, "
	  "default 128)" },
	{ 'd', "diff", false, NULL,
	  "show membership changes instead of node lists" },
	{ 0, NULL, false, NULL, NULL },
};

static const struct subcommand cluster_cmds[] = {
	{ "info", NULL, "aprhvTd", "show cluster status and epoch history",
	  NULL, CMD_NEED_NODELIST, 0, cluster_info },
	{ "format", NULL, "bcltaphzTVSNRfF", "create a new cluster", NULL,
	  CMD_NEED_NODELIST, 0, cluster_format },
	{ "shutdown", NULL, "aphT", "stop every sheep of the cluster", NULL,
	  0, 0, cluster_shutdown },
	{ "recover", NULL, "afphT", "control recovery", recover_cmds, 0, 0,
	  NULL },
	{ "scrub", NULL, "aphrT", "verify stored objects against their "
	  "checksums and repair them", scrub_cmds, CMD_NEED_NODELIST, 0,
	  NULL },
	{ "snapshot", NULL, "aphrTf", "save the VDIs of the cluster to a "
	  "directory, or format the cluster and load them back",
	  cluster_snapshot_cmds, 0, 0, NULL },
	{ "check", NULL, "aphT",
	  "check and repair the replicas of every image", NULL,
	  CMD_NEED_NODELIST, 0, cluster_check },
	{ "reweight", NULL, "aphT", "weigh the nodes' vnodes by their "
	  "capacity again", NULL, 0, 0, cluster_reweight },
	{ "alter-copy", NULL, "aphTcf",
	  "change the default redundancy of new images", NULL,
	  CMD_NEED_NODELIST, 0, alter_copy },
	{ NULL },
};

struct command cluster_command = {
	.name = "cluster",
	.sub = cluster_cmds,
	.options = cluster_options,
	.parser = cluster_parser,
};
