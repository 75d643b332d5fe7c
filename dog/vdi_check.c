// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi check (dog.md §2.17, cluster.md §10): compare the replicas of
 * the inode, of every allocated data object of a VDI and of a hyper
 * volume's leaf objects, and repair the ones that are missing or differ
 * from the majority.
 *
 * For each object dog computes its targets from the current node list and
 * asks each target for the SHA-1 of its copy (GET_HASH).  A Boyer-Moore
 * majority vote over the copies found picks the good content; every target
 * lacking the object or holding another digest is told to fetch it from a
 * majority holder (REPAIR_REPLICA).  A copy whose node reports an I/O error
 * (it failed its checksums) takes no part in the vote and is repaired.
 * With -e only existence is checked, one OIDS_EXIST request per node and
 * batch.  A data object of an erasure-coded VDI is checked by a gateway
 * (EC_CHECK): it reads every strip, decodes, and rebuilds each strip that
 * is missing, of another version or of other bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dog.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"
#include "vindex.h"

#define DIGEST_LEN		20
#define OIDS_PER_REQUEST	65536

/* COPY_DAMAGED: the node's copy failed its checksums (GET_HASH: EIO) */
enum copy_state { COPY_UNKNOWN, COPY_MISSING, COPY_PRESENT, COPY_DAMAGED };

struct copy {
	int node;		/* index into dog_ring()->nodes */
	enum copy_state state;
	uint8_t digest[DIGEST_LEN];
};

static const struct sd_node *ring_node(int idx)
{
	return &dog_ring()->nodes[idx];
}

/* GET_HASH of @oid on one target */
static void get_hash(uint64_t oid, struct copy *c)
{
	char s[NODE_STR_LEN];
	struct sd_req req;
	struct sd_rsp rsp;

	c->state = COPY_UNKNOWN;
	sd_init_req(&req, SD_OP_GET_HASH);
	req.epoch = sd_epoch;
	req.obj.oid = oid;
	req.obj.tgt_epoch = sd_epoch;
	if (dog_exec_node(&ring_node(c->node)->nid, &req, NULL, 0, &rsp))
		return;
	switch (rsp.result) {
	case SD_RES_SUCCESS:
		c->state = COPY_PRESENT;
		memcpy(c->digest, rsp.hash.digest, DIGEST_LEN);
		break;
	case SD_RES_NO_OBJ:
		c->state = COPY_MISSING;
		break;
	case SD_RES_EIO:
		c->state = COPY_DAMAGED;
		break;
	default:
		fprintf(stderr, "failed to get the hash of %016" PRIx64
			" from %s: %s\n", oid,
			node_to_str(ring_node(c->node), s, sizeof(s)),
			sd_strerror(rsp.result));
	}
}

/* tell the node of @to to copy @oid from the node of @from */
static int repair_replica(uint64_t oid, const struct copy *to,
			  const struct copy *from)
{
	const struct node_id *src = &ring_node(from->node)->nid;
	char s[NODE_STR_LEN];
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_REPAIR_REPLICA);
	req.epoch = sd_epoch;
	req.forw.oid = oid;
	memcpy(req.forw.addr, src->addr, sizeof(req.forw.addr));
	req.forw.port = src->port;
	if (dog_exec_node(&ring_node(to->node)->nid, &req, NULL, 0, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "failed to repair %016" PRIx64 " on %s: %s\n",
			oid, node_to_str(ring_node(to->node), s, sizeof(s)),
			sd_strerror(rsp.result));
		return -1;
	}
	return 0;
}

/*
 * Boyer-Moore majority vote over the present copies: the index of a copy
 * holding a digest that more than half of them share, or -1 with
 * *@found = the number of present copies.
 */
static int majority(const struct copy *c, int n, int *found)
{
	int cand = -1, count = 0, votes = 0;

	*found = 0;
	for (int i = 0; i < n; i++) {
		if (c[i].state != COPY_PRESENT)
			continue;
		(*found)++;
		if (!count) {
			cand = i;
			count = 1;
		} else if (!memcmp(c[i].digest, c[cand].digest, DIGEST_LEN)) {
			count++;
		} else {
			count--;
		}
	}
	if (cand < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (c[i].state == COPY_PRESENT &&
		    !memcmp(c[i].digest, c[cand].digest, DIGEST_LEN))
			votes++;
	return votes * 2 > *found ? cand : -1;
}

/* check and repair one replicated object; returns 0 if it is now fine */
static int check_object(uint64_t oid, int copies)
{
	struct copy c[SD_MAX_COPIES];
	int tgt[SD_MAX_COPIES], n, good, found, ret = 0;

	n = ring_targets(dog_ring(), oid, MIN(copies, SD_MAX_COPIES), tgt);
	for (int i = 0; i < n; i++) {
		c[i].node = tgt[i];
		get_hash(oid, &c[i]);
	}
	good = majority(c, n, &found);
	if (good < 0) {
		if (!found)
			fprintf(stderr, "no node has %" PRIx64 "\n", oid);
		else
			fprintf(stderr, "no majority of %016" PRIx64 "\n",
				oid);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		bool missing = c[i].state == COPY_MISSING;

		if (c[i].state == COPY_UNKNOWN) {
			ret = -1;
			continue;
		}
		if (c[i].state == COPY_PRESENT &&
		    !memcmp(c[i].digest, c[good].digest, DIGEST_LEN))
			continue;
		if (repair_replica(oid, &c[i], &c[good])) {
			ret = -1;
			continue;
		}
		printf("fixed %s %016" PRIx64 "\n",
		       missing ? "missing" : "replica", oid);
		fflush(stdout);
	}
	return ret;
}

/* ---- -e: existence only ---- */

void oid_list_add(struct oid_list *l, uint64_t oid)
{
	if (l->nr == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->oids = xrealloc(l->oids, l->cap * sizeof(*l->oids));
	}
	l->oids[l->nr++] = oid;
}

/*
 * OIDS_EXIST on one node for @nr oids (strip @idx of each if @policy is a
 * code): print the missing ones and return their count, or -1 if the node
 * could not be asked.
 */
static int oids_exist(const struct sd_node *node, const uint64_t *oids,
		      size_t nr, uint8_t policy, int idx)
{
	char s[NODE_STR_LEN];
	struct sd_req req;
	struct sd_rsp rsp;
	uint32_t len = (uint32_t)(nr * 8);
	uint8_t *buf = xmalloc(len);
	int missing = 0;

	le64_array_encode(oids, nr, buf);
	sd_init_req(&req, SD_OP_OIDS_EXIST);
	req.flags = SD_FLAG_CMD_WRITE | SD_FLAG_CMD_PIGGYBACK;
	req.epoch = sd_epoch;
	req.data_length = len;
	req.obj.copy_policy = policy;
	req.obj.ec_index = (uint8_t)idx;
	node_to_str(node, s, sizeof(s));
	if (dog_exec_node(&node->nid, &req, buf, len, &rsp)) {
		missing = -1;
		goto out;
	}
	if (rsp.result == SD_RES_SUCCESS)
		goto out;
	if (rsp.result != SD_RES_NO_OBJ) {
		fprintf(stderr, "failed to check the objects on %s: %s\n", s,
			sd_strerror(rsp.result));
		missing = -1;
		goto out;
	}
	for (uint32_t i = 0; i < MIN(rsp.data_length, len) / 8; i++) {
		if (policy)
			printf("[%s] oid %016" PRIx64 " copy index %d is "
			       "missing.\n", s, get_le64(buf + 8 * i), idx);
		else
			printf("[%s] oid %016" PRIx64 " is missing.\n", s,
			       get_le64(buf + 8 * i));
		missing++;
	}
out:
	free(buf);
	return missing;
}

/*
 * Every target of each of @nr oids asked whether it has its copy, or with
 * @policy a code, whether target i has strip i (the oids are data objects
 * of a coded VDI).  The count of missing ones, or -1 if a node could not
 * be asked.
 */
static int count_missing(const uint64_t *oids, size_t nr, int copies,
			 uint8_t policy)
{
	size_t nr_nodes = dog_ring()->nr_nodes;
	/* per node, and per strip index for a code */
	size_t nr_lists = nr_nodes * (size_t)(policy ? copies : 1);
	struct oid_list *lists = xzalloc(sizeof(*lists) * nr_lists);
	int tgt[SD_MAX_COPIES], lost = 0;
	bool failed = false;

	for (size_t i = 0; i < nr; i++) {
		int n = ring_targets(dog_ring(), oids[i],
				     MIN(copies, SD_MAX_COPIES), tgt);

		for (int k = 0; k < n; k++)
			oid_list_add(&lists[(size_t)tgt[k] +
					    (policy ? (size_t)k * nr_nodes : 0)],
				     oids[i]);
	}
	for (size_t j = 0; j < nr_lists; j++) {
		struct oid_list *l = &lists[j];

		for (size_t off = 0; off < l->nr; off += OIDS_PER_REQUEST) {
			int m = oids_exist(ring_node((int)(j % nr_nodes)),
					   l->oids + off,
					   MIN(l->nr - off,
					       (size_t)OIDS_PER_REQUEST),
					   policy, (int)(j / nr_nodes));

			if (m < 0)
				failed = true;
			else
				lost += m;
		}
		free(l->oids);
	}
	free(lists);
	return failed && !lost ? -1 : lost;
}

static int check_existence(const char *name, const uint64_t *oids,
			   size_t nr, int copies, uint8_t policy)
{
	struct oid_list meta = { 0 }, data = { 0 };
	bool failed = false;
	int lost = 0, m;

	/* a coded VDI's data objects are strips; its metadata replicas */
	for (size_t i = 0; i < nr; i++)
		oid_list_add(policy && is_data_obj(oids[i]) ? &data : &meta,
			     oids[i]);
	m = count_missing(meta.oids, meta.nr, copies, 0);
	failed |= m < 0;
	lost += m > 0 ? m : 0;
	m = count_missing(data.oids, data.nr, copies, policy);
	failed |= m < 0;
	lost += m > 0 ? m : 0;
	free(meta.oids);
	free(data.oids);
	if (lost) {
		printf("%s lost %d object(s).\n", name, lost);
		return EXIT_FAILURE;
	}
	if (failed) {
		fprintf(stderr, "Some nodes could not be checked\n");
		return EXIT_FAILURE;
	}
	printf("%s is fine, no object is missing.\n", name);
	return EXIT_SUCCESS;
}

/* ---- the whole VDI ---- */

static int add_data(uint32_t idx, uint32_t vid, void *arg)
{
	oid_list_add(arg, vid_to_data_oid(vid, idx));
	return 0;
}

static int add_leaf(uint64_t oid, void *arg)
{
	oid_list_add(arg, oid);
	return 0;
}

/*
 * The objects of @in: its inode, the leaf objects of a hyper volume (first,
 * so that a repaired leaf is there for what reads it next) and the data
 * objects.  0, or -1 if the index could not be read.
 */
int vdi_oids(struct vdi_inode *in, struct oid_list *l)
{
	struct vdi_index *vi = in->vi;
	struct dog_index_io io;
	int ret = 0;

	oid_list_add(l, vid_to_vdi_oid(in->vid));
	if (!in->h.store_policy) {
		for (uint32_t i = 0; i < in->nr; i++)
			if (in->index[i])
				add_data(i, in->index[i], l);
		return 0;
	}
	/* cluster check hands over the header only */
	if (!vi)
		vi = open_vdi_index(&io, in->vid, &in->h, NULL, 0);
	if (!vi)
		return -1;
	if (vi_for_each_leaf(vi, add_leaf, l) || vi_for_each(vi, add_data, l))
		ret = -1;
	if (vi != in->vi)
		vi_close(vi);
	return ret;
}

/* a coded data object, checked and repaired by the gateway; 0 or -1 */
static int check_strips(uint64_t oid)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_EC_CHECK);
	req.obj.oid = oid;
	if (dog_exec(&req, NULL, 0, &rsp))
		return -1;
	if (rsp.result == SD_RES_NO_OBJ) {
		fprintf(stderr, "no node has %" PRIx64 "\n", oid);
		return -1;
	}
	for (int i = 0; i < SD_MAX_COPIES; i++)
		if (rsp.obj.offset & (UINT64_C(1) << i))
			printf("fixed missing %016" PRIx64 ", copy index %d\n",
			       oid, i);
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to check %" PRIx64 ": %s\n", oid,
			sd_strerror(rsp.result));
		return -1;
	}
	return 0;
}

/*
 * Check VDI @in named @name: its header and, for a flat VDI, its index
 * read (a hyper volume's is read here when @in has none open).
 * Returns an exit code: 1 if something could not be checked or repaired.
 */
int check_vdi(const char *name, struct vdi_inode *in, bool exist_only)
{
	uint32_t obj = inode_obj_size(&in->h);
	struct oid_list l = { 0 };
	int copies = in->h.nr_copies, ret = EXIT_SUCCESS;

	if (in->h.copy_policy && nr_storage_zones() < copies) {
		fprintf(stderr, "ABORT: Not enough active zones for "
			"consistency-checking erasure coded VDI\n");
		return EXIT_FAILURE;
	}
	if (!copies)
		copies = SD_DEFAULT_COPIES;

	if (vdi_oids(in, &l)) {
		fprintf(stderr, "Failed to read the index of %s\n", name);
		free(l.oids);
		return EXIT_FAILURE;
	}
	if (exist_only) {
		ret = check_existence(name, l.oids, l.nr, copies,
				      in->h.copy_policy);
		free(l.oids);
		return ret;
	}
	for (size_t i = 0; i < l.nr; i++) {
		uint64_t oid = l.oids[i];

		if (in->h.copy_policy && is_data_obj(oid) ? check_strips(oid) :
		    check_object(oid, copies))
			ret = EXIT_FAILURE;
		show_progress((uint64_t)(i + 1) * obj, (uint64_t)l.nr * obj);
	}
	printf("finish check&repair %s\n", name);
	free(l.oids);
	return ret;
}

int vdi_check(int argc, char **argv)
{
	struct vdi_inode in;
	int ret;

	ret = open_vdi(argv[0], vopt.snapid, vopt.tag, &in, true);
	if (ret)
		return ret;
	ret = check_vdi(argv[0], &in, vopt.exist);
	free_inode(&in);
	return ret;
}
