// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog node ok-to-stop N... : before maintenance, may nodes N... be stopped
 * now?  No while any node is still recovering (what it recovers may have
 * its only up-to-date copies elsewhere, perhaps on the nodes to stop);
 * otherwise no if, with those nodes gone, an object of any VDI would keep
 * no copy (replicated), fewer than D strips (erasure coded D:P), or a
 * strict cluster would have fewer zones than a VDI's copies (its writes
 * refused).  Placement is the ring's, which recovery has made true once it
 * finished.  Prints what would become unavailable; exits 0 (yes) or 1.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dog.h"
#include "hash.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"

#define SHOW_OIDS	3	/* objects named per VDI */

struct stop_check {
	bool stop[SD_MAX_NODES];	/* by ring node index */
	int alive_zones;
	bool strict;
	uint64_t nr_objects;		/* looked at */
	uint64_t nr_lost;		/* that would be unavailable */
	int nr_vdis;			/* with such objects */
	int nr_unwritable;		/* VDIs a strict cluster would refuse */
	int ret;			/* EXIT_* of a failure to look */
};

/* the ring index of node @idx of `node list`, or -1 */
static int ring_index(int idx)
{
	const struct vnode_ring *ring = dog_ring();

	for (size_t i = 0; i < ring->nr_nodes; i++)
		if (node_id_eq(&ring->nodes[i].nid, &sd_nodes[idx].nid))
			return (int)i;
	return -1;
}

/* 0 and the ring index of `node list` id @arg, or -1 (printed) */
static int parse_node(const char *arg, int *out)
{
	unsigned long idx;
	char *end;

	if (!isdigit((unsigned char)arg[0]) ||
	    (idx = strtoul(arg, &end, 10), *end) ||
	    idx >= (unsigned long)sd_nodes_nr) {
		fprintf(stderr, "Invalid node index '%s'\n", arg);
		return -1;
	}
	*out = ring_index((int)idx);
	if (*out >= 0)
		return 0;
	fprintf(stderr, "Node %lu is not in the ring\n", idx);
	return -1;
}

/* storage zones left once the nodes to stop are gone */
static int zones_left(const struct stop_check *c)
{
	const struct vnode_ring *ring = dog_ring();
	uint32_t zones[SD_MAX_NODES];
	int n = 0;

	for (size_t i = 0; i < ring->nr_nodes; i++) {
		bool seen = false;

		if (c->stop[i] || !ring->nodes[i].nr_vnodes)
			continue;
		for (int k = 0; k < n && !seen; k++)
			seen = zones[k] == ring->nodes[i].zone;
		if (!seen)
			zones[n++] = ring->nodes[i].zone;
	}
	return n;
}

/*
 * How many nodes recover now (each printed).  A node that does not answer
 * (it was just killed, say) is down already: its copies do not count, as
 * if it were one of those to stop.
 */
static int nodes_recovering(struct stop_check *c)
{
	struct recovery_state rs;
	char s[NODE_STR_LEN];
	int n = 0, r;

	for (int i = 0; i < sd_nodes_nr; i++) {
		node_to_str(&sd_nodes[i], s, sizeof(s));
		if (stat_recovery(&sd_nodes[i].nid, &rs)) {
			printf("node %d (%s) does not answer: its copies are "
			       "not counted\n", i, s);
			r = ring_index(i);
			if (r >= 0)
				c->stop[r] = true;
			continue;
		}
		if (!rs.in_recovery)
			continue;
		printf("node %d (%s) is recovering: %" PRIu64 " of %" PRIu64
		       " objects done\n", i, s, rs.nr_finished, rs.nr_total);
		n++;
	}
	return n;
}

/* copies of @oid left, and how many it needs */
static void copies_left(const struct stop_check *c, uint64_t oid,
			const struct sd_inode_header *h, int *left, int *need)
{
	int tgt[SD_MAX_COPIES], n, width = h->nr_copies;

	*need = 1;
	if (h->copy_policy && is_data_obj(oid)) {
		width = ec_policy_data(h->copy_policy) +
			ec_policy_parity(h->copy_policy);
		*need = ec_policy_data(h->copy_policy);
	}
	n = ring_targets(dog_ring(), oid, MIN(width, SD_MAX_COPIES), tgt);
	*left = 0;
	for (int k = 0; k < n; k++)
		if (!c->stop[tgt[k]])
			(*left)++;
}

static void check_vdi_objects(uint32_t vid, const struct sd_inode_header *h,
			      const uint32_t *index, uint32_t nr, void *data)
{
	struct stop_check *c = data;
	struct vdi_inode in = {
		.vid = vid, .h = *h, .nr = nr, .index = (uint32_t *)index,
	};
	struct oid_list l = { 0 };
	char name[SD_MAX_VDI_LEN + 1];
	uint64_t lost = 0;
	int left, need, copies;

	inode_name(h, name);
	if (vdi_oids(&in, &l)) {
		fprintf(stderr, "Failed to read the index of VDI %s\n", name);
		c->ret = EXIT_FAILURE;
		goto out;
	}
	copies = h->copy_policy ? ec_policy_data(h->copy_policy) +
				  ec_policy_parity(h->copy_policy) :
				  h->nr_copies;
	if (c->strict && !h->snap_ctime && c->alive_zones < copies) {
		printf("VDI %s: writes refused (strict: %d copies, %d zones "
		       "left)\n", name, copies, c->alive_zones);
		c->nr_unwritable++;
	}
	for (size_t i = 0; i < l.nr; i++) {
		c->nr_objects++;
		copies_left(c, l.oids[i], h, &left, &need);
		if (left >= need)
			continue;
		if (lost++ < SHOW_OIDS)
			printf("VDI %s: object %" PRIx64 " would have %d of "
			       "the %d copies it needs\n", name, l.oids[i],
			       left, need);
	}
	if (lost > SHOW_OIDS)
		printf("VDI %s: ... %" PRIu64 " objects in all\n", name, lost);
	if (lost) {
		c->nr_lost += lost;
		c->nr_vdis++;
	}
out:
	free(l.oids);
}

int node_ok_to_stop(int argc, char **argv)
{
	struct stop_check c = { .ret = EXIT_SUCCESS };
	struct cluster_info_hdr info;
	uint32_t result;
	int idx, rec, r;

	if (argc < 1) {
		fprintf(stderr, "Specify the indices of the nodes to stop\n");
		return EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		if (parse_node(argv[i], &idx))
			return EXIT_USAGE;
		c.stop[idx] = true;
	}
	if (dog_cluster_info(NULL, &info, &result) || result != SD_RES_SUCCESS)
		return EXIT_SYSFAIL;
	c.strict = info.flags & SD_CLUSTER_FLAG_STRICT;
	rec = nodes_recovering(&c);
	c.alive_zones = zones_left(&c);
	r = parse_vdi(check_vdi_objects, true, &c);
	if (r)
		return r;
	if (c.ret)
		return c.ret;
	if (rec || c.nr_vdis || c.nr_unwritable) {
		const char *sep = "";

		printf("no: stopping %s now would", argc > 1 ? "them" : "it");
		if (rec) {
			printf(" take copies from %d recovering node%s", rec,
			       rec > 1 ? "s" : "");
			sep = ",";
		}
		if (c.nr_vdis) {
			printf("%s make %" PRIu64 " object%s of %d VDI%s "
			       "unavailable", sep, c.nr_lost,
			       c.nr_lost > 1 ? "s" : "", c.nr_vdis,
			       c.nr_vdis > 1 ? "s" : "");
			sep = ",";
		}
		if (c.nr_unwritable)
			printf("%s refuse writes to %d VDI%s (strict)", sep,
			       c.nr_unwritable, c.nr_unwritable > 1 ? "s" : "");
		printf("\n");
		return EXIT_FAILURE;
	}
	printf("yes: every object of the cluster (%" PRIu64 ") keeps the "
	       "copies it needs\n", c.nr_objects);
	return EXIT_SUCCESS;
}
