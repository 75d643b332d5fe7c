// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi object map|dump-inode and dog vdi track (dog.md §2.9, §2.10):
 * which VDI owns each block, what an inode file on a node's disk says, and
 * where placement put an object in every epoch.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dog.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"
#include "vindex.h"

/* ---- object map ---- */

static int map_entry(uint32_t idx, uint32_t vid, void *arg)
{
	printf("%08" PRIu32 " %8" PRIx32 "\n", idx, vid);
	return 0;
}

/* the allocated entries of the index, flat or B-tree */
int object_map(int argc, char **argv)
{
	struct vdi_inode in;
	uint32_t owner;
	int ret;

	ret = open_vdi(argv[0], vopt.snapid, vopt.tag, &in, true);
	if (ret)
		return ret;
	ret = EXIT_FAILURE;
	/* 64 bits: a 16 PiB hyper volume has 2^32 objects */
	if (vopt.index_set && vopt.index >= DIV_ROUND_UP(in.h.vdi_size,
			(uint64_t)inode_obj_size(&in.h))) {
		fprintf(stderr, "The offset is too large!\n");
		goto out;
	}
	printf("Index       VID\n");
	if (vopt.index_set) {
		if (vi_get(in.vi, (uint32_t)vopt.index, &owner))
			goto fail;
		map_entry((uint32_t)vopt.index, owner, NULL);
	} else if (vi_for_each(in.vi, map_entry, NULL)) {
		goto fail;
	}
	ret = EXIT_SUCCESS;
	goto out;
fail:
	fprintf(stderr, "Failed to read the index\n");
out:
	free_inode(&in);
	return ret;
}

/* ---- object dump-inode ---- */

#define BTREE_MAGIC	0x6274

/* the B-tree root a hyper volume keeps in its index area (objects.md §12) */
static void dump_btree_root(const uint8_t *p, size_t len)
{
	uint16_t magic = get_le16(p), depth = get_le16(p + 2);
	uint32_t nr = get_le32(p + 4);
	size_t esize = depth == 1 ? 8 : 16;

	printf("data_vdi_id:\n");
	if (magic != BTREE_MAGIC || (depth != 1 && depth != 2)) {
		fprintf(stderr, "warning: no valid B-tree root (magic %x, "
			"depth %u)\n", magic, depth);
		return;
	}
	if (nr > (len - 8) / esize)
		nr = (uint32_t)((len - 8) / esize);
	for (uint32_t i = 0; i < nr; i++) {
		const uint8_t *e = p + 8 + i * esize;

		if (depth == 1)
			printf("%" PRIu32 ": %" PRIx32 "\n", get_le32(e),
			       get_le32(e + 4));
		else
			printf("%" PRIu32 ": node %016" PRIx64 "\n",
			       get_le32(e), get_le64(e + 8));
	}
}

/* decode a file of @len bytes holding (at least the header of) an inode */
static void dump_inode(const uint8_t *buf, size_t len)
{
	struct sd_inode_header h;
	char name[SD_MAX_VDI_LEN + 1], tag[SD_MAX_VDI_TAG_LEN + 1];
	size_t nr_index = 0;
	bool have_gref = len >= SD_INODE_SIZE;

	inode_header_decode(&h, buf);
	inode_name(&h, name);
	inode_tag(&h, tag);
	printf("name: %s\n", name);
	printf("tag: %s\n", tag);
	printf("create_time: %" PRIx64 "\n", h.create_time);
	printf("snap_ctime: %" PRIx64 "\n", h.snap_ctime);
	printf("vm_clock_nsec: %" PRIx64 "\n", h.vm_clock_nsec);
	printf("vdi_size: %" PRIu64 "\n", h.vdi_size);
	printf("vm_state_size: %" PRIu64 "\n", h.vm_state_size);
	printf("copy_policy: %u\n", h.copy_policy);
	printf("store_policy: %u\n", h.store_policy);
	printf("nr_copies: %u\n", h.nr_copies);
	printf("block_size_shift: %u\n", h.block_size_shift);
	printf("snap_id: %" PRIu32 "\n", h.snap_id);
	printf("vdi_id: %" PRIx32 "\n", h.vdi_id);
	printf("parent_vdi_id: %" PRIx32 "\n", h.parent_vdi_id);
	printf("btree_counter: %" PRIu32 "\n", h.btree_counter);

	if (len > SD_INODE_INDEX_OFFSET)
		nr_index = MIN((len - SD_INODE_INDEX_OFFSET) / 4,
			       (size_t)SD_INODE_DATA_INDEX);
	if (h.store_policy == 1) {
		if (nr_index >= 2)
			dump_btree_root(buf + SD_INODE_INDEX_OFFSET,
					nr_index * 4);
		return;
	}
	printf("data_vdi_id:\n");
	for (size_t i = 0; i < nr_index; i++) {
		uint32_t v = get_le32(buf + SD_INODE_INDEX_OFFSET + 4 * i);

		if (v)
			printf("%zu: %" PRIx32 "\n", i, v);
	}
	if (!have_gref)
		return;
	printf("gref:\n");
	for (size_t i = 0; i < SD_INODE_DATA_INDEX; i++) {
		const uint8_t *g = buf + SD_INODE_GREF_OFFSET + 8 * i;
		uint32_t v = i < nr_index ?
			     get_le32(buf + SD_INODE_INDEX_OFFSET + 4 * i) : 0;
		int32_t gen = (int32_t)get_le32(g);
		int32_t cnt = (int32_t)get_le32(g + 4);

		if (v)
			printf("%zu: %" PRIx32 ", %" PRId32 ", %" PRId32 "\n",
			       i, v, gen, cnt);
		else if (gen || cnt)
			fprintf(stderr, "warning: entry %zu is empty but its "
				"gref is %" PRId32 ", %" PRId32 "\n", i, gen,
				cnt);
	}
}

int object_dump_inode(int argc, char **argv)
{
	const char *path = argv[0];
	struct stat st;
	uint8_t *buf;
	size_t len;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "Failed to open %s: %s\n", path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return EXIT_SYSFAIL;
	}
	len = (size_t)MIN((uint64_t)st.st_size, (uint64_t)SD_INODE_SIZE);
	if (len < SD_INODE_HEADER_SIZE) {
		fprintf(stderr, "%s is not an inode object: %zu bytes, an "
			"inode has at least %d\n", path, len,
			SD_INODE_HEADER_SIZE);
		close(fd);
		return EXIT_FAILURE;
	}
	buf = xmalloc(len);
	if (xread(fd, buf, len) != (ssize_t)len) {
		fprintf(stderr, "Failed to read %s: %s\n", path,
			strerror(errno));
		free(buf);
		close(fd);
		return EXIT_SYSFAIL;
	}
	close(fd);
	dump_inode(buf, len);
	free(buf);
	return EXIT_SUCCESS;
}

/* ---- track ---- */

/* the targets of @oid among the members of one epoch */
static void print_epoch_targets(const struct epoch_rec *r, uint64_t oid,
				int copies)
{
	struct vnode_ring ring;
	char s[NODE_STR_LEN];
	int tgt[SD_MAX_COPIES], n;

	printf("\nobj %016" PRIx64 " locations at epoch %" PRIu32 ", copies = "
	       "%d\n", oid, r->h.epoch, copies);
	printf("---------------------------------------------------\n");
	if (r->h.nr_nodes < (uint32_t)copies) {
		/* fewer nodes than copies: every node holds one */
		struct sd_node *nodes = xmalloc(sizeof(*nodes) *
						(r->h.nr_nodes + 1));

		memcpy(nodes, r->nodes, sizeof(*nodes) * r->h.nr_nodes);
		nodes_sort(nodes, r->h.nr_nodes);
		for (uint32_t i = 0; i < r->h.nr_nodes; i++)
			printf("%s\n", node_to_str(&nodes[i], s, sizeof(s)));
		free(nodes);
		return;
	}
	if (ring_build(&ring, r->nodes, r->h.nr_nodes)) {
		fprintf(stderr, "Failed to build the node ring of epoch %"
			PRIu32 "\n", r->h.epoch);
		return;
	}
	n = ring_targets(&ring, oid, MIN(copies, SD_MAX_COPIES), tgt);
	for (int i = 0; i < n; i++)
		printf("%s\n", node_to_str(&ring.nodes[tgt[i]], s, sizeof(s)));
	ring_free(&ring);
}

int vdi_track(int argc, char **argv)
{
	struct epoch_rec *recs = NULL;
	struct vdi_inode in;
	uint32_t result, idx = 0;
	uint64_t oid;
	int ret, n;

	if (vopt.index_set && vopt.oid_set) {
		fprintf(stderr, "Please specify only one of the '-i' and "
			"'-o' options\n");
		return EXIT_USAGE;
	}
	ret = open_vdi(argv[0], vopt.snapid, vopt.tag, &in, false);
	if (ret)
		return ret;
	if (vopt.oid_set) {
		oid = vopt.oid;
		idx = data_oid_to_idx(oid);
	} else if (vopt.index_set) {
		uint32_t owner;

		if (vopt.index > UINT32_MAX) {
			fprintf(stderr, "The offset is too large!\n");
			return EXIT_FAILURE;
		}
		idx = (uint32_t)vopt.index;
		ret = data_entry(&in, idx, &owner);
		if (ret)
			return ret;
		if (!owner) {
			printf("The inode object 0x%" PRIx32 " idx %" PRIu32
			       " is not allocated\n", in.vid, idx);
			return EXIT_FAILURE;
		}
		oid = vid_to_data_oid(owner, idx);
	} else {
		oid = vid_to_vdi_oid(in.vid);
	}
	if (vopt.index_set || vopt.oid_set)
		printf("Tracking the object %016" PRIx64 " (the inode vid 0x%"
		       PRIx32 " idx %" PRIu32 ") with %d nodes\n", oid, in.vid,
		       idx, sd_nodes_nr);
	else
		printf("Tracking the inode object 0x%" PRIx32 " with %d "
		       "nodes\n", in.vid, sd_nodes_nr);

	n = fetch_epoch_log(&recs, &result);
	if (n < 0)
		return EXIT_SYSFAIL;
	if (n == 0) {
		fprintf(stderr, "Failed to read the epoch history: %s\n",
			sd_strerror(result));
		free_epoch_log(recs, n);
		return EXIT_FAILURE;
	}
	for (int i = 0; i < n; i++)
		print_epoch_targets(&recs[i], oid, in.h.nr_copies);
	free_epoch_log(recs, n);
	return EXIT_SUCCESS;
}
