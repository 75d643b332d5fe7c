// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi alter-copy (dog.md §2.18): change the number of copies of one
 * standalone, replicated VDI.  The new count goes into the inode header
 * first, then ALTER_VDI_COPY makes every sheep record it and recover
 * again in the current epoch, which adds or drops the replicas.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "dog.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"

struct family {
	uint32_t vid;
	uint32_t nr_children;
};

static void count_child(uint32_t vid, const struct sd_inode_header *h,
			const uint32_t *index, uint32_t nr, void *data)
{
	struct family *f = data;

	if (vid != f->vid && h->parent_vdi_id == f->vid)
		f->nr_children++;
}

/* write the header of @in with @copies, sending it to @via copies */
static int write_copies(struct vdi_inode *in, uint8_t copies, uint8_t via)
{
	uint8_t buf[SD_INODE_HEADER_SIZE];

	in->h.nr_copies = copies;
	inode_header_encode(&in->h, buf);
	return dog_write_object(vid_to_vdi_oid(in->vid), 0, buf, sizeof(buf),
				0, SD_FLAG_CMD_DIRECT, via, 0, false);
}

int vdi_alter_copy(int argc, char **argv)
{
	const char *name = argv[0];
	struct family fam = { 0 };
	struct vdi_inode in;
	struct sd_req req;
	struct sd_rsp rsp;
	uint8_t copies = vopt.copies, old;
	char msg[512];
	int ret;

	if (vopt.copy_policy) {
		fprintf(stderr, "Changing redundancy level of erasure coded "
			"vdi is not supported yet.\n");
		return EXIT_USAGE;
	}
	ret = check_name(name);
	if (ret)
		return ret;
	if (!copies) {
		copies = SD_DEFAULT_COPIES;
		fprintf(stderr, "No redundancy level given (-c N): using the "
			"default, %u copies.\n", copies);
	}
	if (!vopt.force && copies > sd_nodes_nr) {
		snprintf(msg, sizeof(msg), "Caution! The number of copies "
			 "(%u) is larger than the number of nodes (%d):\n"
			 "the objects of %s will have fewer copies than "
			 "requested until more nodes join.", copies,
			 sd_nodes_nr, name);
		if (!confirm(msg))
			return EXIT_SUCCESS;
	}

	ret = open_vdi(name, 0, "", &in, false);
	if (ret)
		return ret;
	old = in.h.nr_copies;
	if (in.h.copy_policy) {
		fprintf(stderr, "%s's copy policy is erasure code, changing it "
			"is not supported yet.\n", name);
		return EXIT_FAILURE;
	}
	if (old == copies) {
		fprintf(stderr, "%s's redundancy level is already set to %u, "
			"nothing changed.\n", name, copies);
		return EXIT_FAILURE;
	}
	fam.vid = in.vid;
	ret = parse_vdi(count_child, false, &fam);
	if (ret)
		return ret;
	if (in.h.parent_vdi_id || fam.nr_children) {
		fprintf(stderr, "%s is not a standalone VDI (it has %s): only "
			"the redundancy level of a VDI without snapshots,\n"
			"parent or clones can be changed; clone it with -n "
			"first to get a standalone copy.\n", name,
			in.h.parent_vdi_id ? "a parent or snapshot" :
			"children");
		return EXIT_FAILURE;
	}
	if (!vopt.force) {
		snprintf(msg, sizeof(msg), "Caution! Changing the redundancy "
			 "level of %s (%u -> %u copies) affects only this "
			 "VDI,\nand starts a recovery on every node that "
			 "copies or removes its objects.", name, old, copies);
		if (!confirm(msg))
			return EXIT_SUCCESS;
	}

	/* the header goes to the replicas that exist now */
	if (write_copies(&in, copies, old))
		return EXIT_FAILURE;
	sd_init_req(&req, SD_OP_ALTER_VDI_COPY);
	req.vdi_state.new_vid = in.vid;
	req.vdi_state.copies = copies;
	req.vdi_state.copy_policy = 0;
	req.vdi_state.block_size_shift = in.h.block_size_shift;
	ret = dog_exec(&req, NULL, 0, &rsp);
	if (ret || rsp.result != SD_RES_SUCCESS) {
		if (!ret)
			fprintf(stderr, "Failed to change the redundancy level "
				"of %s: %s\n", name, sd_strerror(rsp.result));
		/* the sheep still use the old count: so must the header */
		if (write_copies(&in, old, old))
			fprintf(stderr, "The header of %s still says %u "
				"copies\n", name, copies);
		return ret ? EXIT_SYSFAIL : EXIT_FAILURE;
	}
	fprintf(stderr, "%s's redundancy level is set to %u, the old one was "
		"%u.\n", name, copies, old);
	return EXIT_SUCCESS;
}
