// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi alter-copy (dog.md §2.18): change the redundancy of one
 * standalone VDI.  Between numbers of copies, the new count goes into
 * the inode header first, then ALTER_VDI_COPY makes every sheep record it
 * and recover again in the current epoch, which adds or drops the
 * replicas.  Between copies and a code (Kelpie), the objects change form,
 * so dog converts them one by one (doc/erasure-coding.md §5b): BEGIN (the
 * VDI takes no writes and no lock meanwhile), each object copied to the
 * new layout (CONVERT_OBJ), the header, COMMIT (the new layout is the
 * VDI's), each object's old form removed, FINISH.  Until COMMIT the old
 * layout is whole and the VDI's; a failure aborts.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dog.h"
#include "ec.h"
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

/* write the header of @in with @copies and @policy, to @via copies */
static int write_layout(struct vdi_inode *in, uint8_t copies, uint8_t policy,
			uint8_t via)
{
	uint8_t buf[SD_INODE_HEADER_SIZE];

	in->h.nr_copies = copies;
	in->h.copy_policy = policy;
	inode_header_encode(&in->h, buf);
	return dog_write_object(vid_to_vdi_oid(in->vid), 0, buf, sizeof(buf),
				0, SD_FLAG_CMD_DIRECT, via, 0, false);
}

/* refuses a VDI with a parent, snapshots or clones */
static int check_standalone(const struct vdi_inode *in, const char *name)
{
	struct family fam = { .vid = in->vid };
	int ret = parse_vdi(count_child, false, &fam);

	if (ret)
		return ret;
	if (!in->h.parent_vdi_id && !fam.nr_children)
		return 0;
	fprintf(stderr, "%s is not a standalone VDI (it has %s): only "
		"the redundancy level of a VDI without snapshots,\n"
		"parent or clones can be changed; clone it with -n "
		"first to get a standalone copy.\n", name,
		in->h.parent_vdi_id ? "a parent or snapshot" : "children");
	return EXIT_FAILURE;
}

/* ALTER_VDI_COPY: one phase of a conversion (ALTER_CONV_*) */
static uint32_t alter_phase(const struct vdi_inode *in, uint8_t phase,
			    uint8_t copies, uint8_t policy)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_ALTER_VDI_COPY);
	req.vdi_state.new_vid = in->vid;
	req.vdi_state.copies = copies;
	req.vdi_state.copy_policy = policy;
	req.vdi_state.set_bitmap = phase;
	req.vdi_state.block_size_shift = in->h.block_size_shift;
	if (dog_exec(&req, NULL, 0, &rsp))
		return SD_RES_EIO;
	return rsp.result;
}

/* CONVERT_OBJ on every data object: copied, or its old form dropped */
static uint32_t convert_objects(const struct vdi_inode *in)
{
	uint64_t size = inode_obj_size(&in->h);
	struct sd_req req;
	struct sd_rsp rsp;

	for (uint32_t i = 0; i < in->nr; i++) {
		if (!in->index[i])
			continue;
		sd_init_req(&req, SD_OP_CONVERT_OBJ);
		req.obj.oid = vid_to_data_oid(in->vid, i);
		if (dog_exec(&req, NULL, 0, &rsp))
			return SD_RES_EIO;
		if (rsp.result != SD_RES_SUCCESS) {
			fprintf(stderr, "Failed to convert object %" PRIx64
				": %s\n", req.obj.oid,
				sd_strerror(rsp.result));
			return rsp.result;
		}
		show_progress((i + 1) * size, in->nr * size);
	}
	return SD_RES_SUCCESS;
}

static int convert_failed(struct vdi_inode *in, const char *name,
			  uint32_t res, const char *what)
{
	if (res == SD_RES_VDI_LOCKED)
		fprintf(stderr, "%s is in use (locked by a VM or an export): "
			"detach it first\n", name);
	else if (what)
		fprintf(stderr, "Failed to %s %s: %s\n", what, name,
			sd_strerror(res));
	/* the old layout is still whole and the VDI's */
	alter_phase(in, ALTER_CONV_ABORT, 0, 0);
	return EXIT_FAILURE;
}

/*
 * Between copies and a code: the objects of @in (opened with its index)
 * take the new form one by one, then the VDI does
 */
static int convert_vdi(struct vdi_inode *in, const char *name,
		       uint8_t copies, uint8_t policy)
{
	uint8_t old = in->h.nr_copies, old_policy = in->h.copy_policy;
	uint32_t res;

	res = alter_phase(in, ALTER_CONV_BEGIN, copies, policy);
	if (res != SD_RES_SUCCESS)
		return convert_failed(in, name, res, "start converting");
	res = convert_objects(in);
	if (res != SD_RES_SUCCESS)
		return convert_failed(in, name, res, NULL);
	/* the header to the replicas the inode has now */
	if (write_layout(in, copies, policy, old))
		return convert_failed(in, name, SD_RES_EIO, NULL);
	res = alter_phase(in, ALTER_CONV_COMMIT, copies, policy);
	if (res != SD_RES_SUCCESS) {
		if (write_layout(in, old, old_policy, old))
			fprintf(stderr, "The header of %s still names the new "
				"layout\n", name);
		return convert_failed(in, name, res, "switch");
	}
	res = convert_objects(in);
	alter_phase(in, ALTER_CONV_FINISH, 0, 0);
	if (res != SD_RES_SUCCESS) {
		fprintf(stderr, "%s uses its new layout; the old copies of "
			"some of its objects are left on disk\n", name);
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

/*
 * The level asked for is the VDI's already: finish what an interrupted
 * change between copies and a code left.  A copy to another layout is
 * abandoned (the VDI takes writes again); after its switch, the objects'
 * old forms are dropped.  1 if there was something, 0 if not, -1 if the
 * old forms could not all be dropped.
 */
static int finish_interrupted(struct vdi_inode *in, const char *name)
{
	struct sd_req req;
	struct sd_rsp rsp;
	uint32_t i = 0;

	if (alter_phase(in, ALTER_CONV_ABORT, 0, 0) == SD_RES_SUCCESS) {
		fprintf(stderr, "An interrupted change of %s's redundancy "
			"level was abandoned: %s takes writes again.\n", name,
			name);
		return 1;
	}
	while (i < in->nr && !in->index[i])
		i++;
	if (i == in->nr)
		return 0;
	/* refused unless the old layout is still to be dropped */
	sd_init_req(&req, SD_OP_CONVERT_OBJ);
	req.obj.oid = vid_to_data_oid(in->vid, i);
	if (dog_exec(&req, NULL, 0, &rsp) || rsp.result != SD_RES_SUCCESS)
		return 0;
	if (convert_objects(in) != SD_RES_SUCCESS) {
		fprintf(stderr, "Some old copies of %s's objects are still "
			"left on disk\n", name);
		return -1;
	}
	alter_phase(in, ALTER_CONV_FINISH, 0, 0);
	fprintf(stderr, "The old copies an interrupted change of %s's "
		"redundancy level left were removed.\n", name);
	return 1;
}

static int confirm_change(const char *name, const char *from, const char *to)
{
	char msg[512];

	if (vopt.force)
		return 1;
	snprintf(msg, sizeof(msg), "Caution! Changing the redundancy "
		 "level of %s (%s -> %s) affects only this VDI,\nand starts "
		 "a recovery on every node that copies or removes its "
		 "objects.", name, from, to);
	return confirm(msg);
}

/* between numbers of copies: the header, then every sheep recovers */
static int alter_copies(struct vdi_inode *in, const char *name,
			uint8_t copies)
{
	uint8_t old = in->h.nr_copies;
	struct sd_req req;
	struct sd_rsp rsp;
	int ret;

	/* the header goes to the replicas that exist now */
	if (write_layout(in, copies, 0, old))
		return EXIT_FAILURE;
	sd_init_req(&req, SD_OP_ALTER_VDI_COPY);
	req.vdi_state.new_vid = in->vid;
	req.vdi_state.copies = copies;
	req.vdi_state.copy_policy = 0;
	req.vdi_state.block_size_shift = in->h.block_size_shift;
	ret = dog_exec(&req, NULL, 0, &rsp);
	if (ret || rsp.result != SD_RES_SUCCESS) {
		if (!ret)
			fprintf(stderr, "Failed to change the redundancy level "
				"of %s: %s\n", name, sd_strerror(rsp.result));
		/* the sheep still use the old count: so must the header */
		if (write_layout(in, old, 0, old))
			fprintf(stderr, "The header of %s still says %u "
				"copies\n", name, copies);
		return ret ? EXIT_SYSFAIL : EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

int vdi_alter_copy(int argc, char **argv)
{
	const char *name = argv[0];
	uint8_t copies = vopt.copies, policy = vopt.copy_policy;
	char from[16], to[16], msg[512];
	struct vdi_inode in;
	bool convert;
	int ret;

	ret = check_name(name);
	if (ret)
		return ret;
	if (!copies) {
		copies = SD_DEFAULT_COPIES;
		fprintf(stderr, "No redundancy level given (-c N): using the "
			"default, %u copies.\n", copies);
	}
	if (ec_refused(copies, policy))
		return EXIT_FAILURE;
	if (!vopt.force && !policy && copies > sd_nodes_nr) {
		snprintf(msg, sizeof(msg), "Caution! The number of copies "
			 "(%u) is larger than the number of nodes (%d):\n"
			 "the objects of %s will have fewer copies than "
			 "requested until more nodes join.", copies,
			 sd_nodes_nr, name);
		if (!confirm(msg))
			return EXIT_SUCCESS;
	}

	ret = open_vdi(name, 0, "", &in, true);
	if (ret)
		return ret;
	copies_to_str(in.h.nr_copies, in.h.copy_policy, from, sizeof(from));
	copies_to_str(copies, policy, to, sizeof(to));
	convert = policy || in.h.copy_policy;
	if (in.h.copy_policy == policy && (policy || in.h.nr_copies == copies)) {
		ret = in.h.store_policy ? 0 : finish_interrupted(&in, name);
		if (!ret)
			fprintf(stderr, "%s's redundancy level is already set "
				"to %s, nothing changed.\n", name, to);
		ret = ret > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
		goto out;
	}
	if (convert && reject_hyper(&in, "Erasure coding")) {
		ret = EXIT_FAILURE;
		goto out;
	}
	ret = check_standalone(&in, name);
	if (ret)
		goto out;
	if (!confirm_change(name, from, to)) {
		ret = EXIT_SUCCESS;
		goto out;
	}
	/* a change interrupted after its switch is finished first */
	if (!in.h.store_policy && finish_interrupted(&in, name) < 0) {
		ret = EXIT_FAILURE;
		goto out;
	}
	ret = convert ? convert_vdi(&in, name, copies, policy) :
			alter_copies(&in, name, copies);
	if (ret == EXIT_SUCCESS)
		fprintf(stderr, "%s's redundancy level is set to %s, the old "
			"one was %s.\n", name, to, from);
out:
	free_inode(&in);
	return ret;
}
