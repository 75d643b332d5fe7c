// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi create|snapshot|clone|delete|list|read|write|resize|object
 * (dog.md §2); the other subcommands live in the files named in vdi.h.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "dog.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"
#include "vindex.h"

#define DEFAULT_BATCH	128

struct vdi_opts vopt = {
	.nr_batch = DEFAULT_BATCH,
};

void free_inode(struct vdi_inode *in)
{
	if (in->vi)
		vi_close(in->vi);	/* owns the flat array */
	else
		free(in->index);
	in->vi = NULL;
	in->index = NULL;
}

int check_name(const char *name)
{
	if (strlen(name) >= SD_MAX_VDI_LEN) {
		fprintf(stderr, "VDI name '%s' is too long (at most %d "
			"bytes)\n", name, SD_MAX_VDI_LEN - 1);
		return EXIT_USAGE;
	}
	return 0;
}

/*
 * Names under .kelpie/ hold object storage (the S3 registry, buckets'
 * indexes and data): made and removed by the sheep, never by hand
 */
int reserved_name(const char *name, const char *what)
{
	if (strncmp(name, ".kelpie/", 8))
		return 0;
	fprintf(stderr, "Cannot %s %s: names under .kelpie/ belong to object "
		"storage (sheep --s3); delete buckets through S3 and users with "
		"dog s3 user delete\n", what, name);
	return EXIT_FAILURE;
}

/* read the header (and index) of VDI @vid; returns 0 or an exit code */
int open_vdi_vid(uint32_t vid, struct vdi_inode *in, bool with_index)
{
	memset(in, 0, sizeof(*in));
	in->vid = vid;
	if (read_inode_header(in->vid, &in->h) != SD_RES_SUCCESS)
		return EXIT_FAILURE;
	if (!with_index)
		return 0;
	if (in->h.store_policy == 0) {
		in->nr = inode_nr_objs(&in->h);
		in->index = xzalloc((size_t)(in->nr ? in->nr : 1) * 4);
		if (read_inode_index(in->vid, &in->h, in->index, in->nr)) {
			free_inode(in);
			return EXIT_FAILURE;
		}
	}
	in->vi = open_vdi_index(&in->io, in->vid, &in->h, in->index, in->nr);
	if (!in->vi) {
		in->index = NULL;	/* freed by open_vdi_index */
		in->nr = 0;
		return EXIT_FAILURE;
	}
	return 0;
}

/* find a VDI and read its header (and index); returns 0 or an exit code */
int open_vdi(const char *name, uint32_t snapid, const char *tag,
	     struct vdi_inode *in, bool with_index)
{
	uint32_t vid;

	memset(in, 0, sizeof(*in));
	if (find_vdi(name, snapid, tag, &vid) != SD_RES_SUCCESS)
		return EXIT_FAILURE;
	return open_vdi_vid(vid, in, with_index);
}

int reject_hyper(const struct vdi_inode *in, const char *what)
{
	if (!in->h.store_policy)
		return 0;
	fprintf(stderr, "%s of hyper volumes is not supported\n", what);
	return EXIT_FAILURE;
}

/* NEW_VDI; returns the result code and the new vid */
int new_vdi(const struct new_vdi *nv, uint32_t *vid)
{
	uint8_t name[SD_MAX_VDI_LEN];
	struct sd_req req;
	struct sd_rsp rsp;

	memset(name, 0, sizeof(name));
	strncpy((char *)name, nv->name, sizeof(name) - 1);
	sd_init_req(&req, SD_OP_NEW_VDI);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(name);
	req.vdi.vdi_size = nv->size;
	req.vdi.base_vdi_id = nv->base;
	req.vdi.snapid = nv->snapid;
	req.vdi.copies = nv->copies;
	req.vdi.copy_policy = nv->copy_policy;
	req.vdi.store_policy = nv->store_policy;
	req.vdi.block_size_shift = nv->shift;
	if (dog_exec(&req, name, 0, &rsp))
		return SD_RES_EIO;
	if (rsp.result == SD_RES_SUCCESS)
		*vid = rsp.vdi.vdi_id;
	return (int)rsp.result;
}

/* the cluster's default object size shift from CLUSTER_INFO */
static int default_block_shift(const char *name, uint8_t *shift)
{
	struct cluster_info_hdr c;
	uint32_t result;

	if (dog_cluster_info(NULL, &c, &result))
		return EXIT_FAILURE;
	if (result == SD_RES_SUCCESS && !c.ctime)
		result = SD_RES_WAIT_FOR_FORMAT;
	if (result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to create VDI %s: %s\n", name,
			sd_strerror(result));
		return EXIT_FAILURE;
	}
	*shift = c.block_size_shift ? c.block_size_shift :
		 SD_DEFAULT_BLOCK_SIZE_SHIFT;
	return 0;
}

/*
 * -P: create every data object empty and point the index at it.  A coded
 * object has no empty form (its strips carry versions and checksums of
 * their bytes): it is written whole, with zeros.
 */
static int preallocate(uint32_t vid)
{
	struct vdi_inode in;
	uint32_t nr, size, len;
	void *zeros = NULL;
	int ret = open_vdi_vid(vid, &in, true);

	if (ret)
		return ret;
	nr = inode_nr_objs(&in.h);
	size = inode_obj_size(&in.h);
	len = in.h.copy_policy ? size : 0;
	if (len)
		zeros = xzalloc(len);
	for (uint32_t i = 0; i < nr; i++) {
		if (dog_write_object(vid_to_data_oid(vid, i), 0, zeros, len, 0,
				     SD_FLAG_CMD_DIRECT, in.h.nr_copies,
				     in.h.copy_policy, true) ||
		    vi_set(in.vi, i, vid)) {
			ret = EXIT_FAILURE;
			break;
		}
		show_progress((uint64_t)(i + 1) * size,
			      (uint64_t)nr * size);
	}
	free(zeros);
	free_inode(&in);
	return ret;
}

static int vdi_create(int argc, char **argv)
{
	struct new_vdi nv = { .name = argv[0] };
	uint64_t max;
	uint32_t vid;
	int ret;

	ret = check_name(nv.name);
	if (!ret)
		ret = reserved_name(nv.name, "create");
	if (ret)
		return ret;
	if (parse_size(argv[1], &nv.size)) {
		print_size_error(argv[1]);
		return EXIT_USAGE;
	}
	/* parse_size takes 0 (an offset may be 0): a disk of 0 bytes not */
	if (!nv.size) {
		fprintf(stderr, "Invalid size '%s': a VDI needs at least one "
			"byte\n", argv[1]);
		return EXIT_USAGE;
	}
	if (vopt.hyper && vopt.shift) {
		fprintf(stderr, "The -y and -z options cannot be used "
			"together\n");
		return EXIT_USAGE;
	}
	if (vopt.copy_policy && vopt.hyper) {
		fprintf(stderr, "Erasure coding (-c D:P) of hyper volumes is "
			"not supported yet\n");
		return EXIT_FAILURE;
	}
	if (ec_refused(vopt.copies, vopt.copy_policy))
		return EXIT_FAILURE;
	nv.shift = vopt.shift;
	/* hyper volumes: a B-tree index of 4 MiB objects (objects.md §12) */
	if (vopt.hyper) {
		nv.shift = SD_DEFAULT_BLOCK_SIZE_SHIFT;
		nv.store_policy = 1;
	}
	if (!nv.shift) {
		ret = default_block_shift(nv.name, &nv.shift);
		if (ret)
			return ret;
	}
	if (nv.size > SD_MAX_VDI_SIZE) {
		fprintf(stderr, "VDI size is too large\n");
		return EXIT_USAGE;
	}
	max = (UINT64_C(1) << nv.shift) * SD_INODE_DATA_INDEX;
	if (!vopt.hyper && nv.size > max) {
		char m[32];

		fprintf(stderr, "VDI size is larger than %s, the maximum for "
			"objects of 2^%u bytes; choose larger objects with "
			"-z\n", size_to_str(max, m, sizeof(m)), nv.shift);
		return EXIT_USAGE;
	}
	nv.copies = vopt.copies;
	nv.copy_policy = vopt.copy_policy;
	ret = new_vdi(&nv, &vid);
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to create VDI %s: %s\n", nv.name,
			sd_strerror((uint32_t)ret));
		return EXIT_FAILURE;
	}
	if (vopt.prealloc && preallocate(vid))
		return EXIT_FAILURE;
	if (verbose) {
		if (raw_output)
			printf("%x\n", vid);
		else
			printf("VDI ID of newly created VDI: %x\n", vid);
	}
	return EXIT_SUCCESS;
}

/* ---- snapshot and clone ---- */

static int owned_fn(uint32_t idx, uint32_t owner, void *arg)
{
	return owner == *(const uint32_t *)arg;
}

/* written since the last snapshot?  (a failed walk says yes) */
static bool owns_objects(struct vdi_inode *in)
{
	return vi_for_each(in->vi, owned_fn, &in->vid) != 0;
}

static int vdi_snapshot(int argc, char **argv)
{
	const char *name = argv[0];
	uint8_t tag[SD_MAX_VDI_TAG_LEN];
	struct vdi_inode in;
	struct new_vdi nv = { .name = name };
	uint32_t vid;
	int ret;

	if (vopt.snapid) {
		fprintf(stderr, "Please specify a non-integer value for a "
			"snapshot tag name\n");
		return EXIT_USAGE;
	}
	if (vopt.tag[0] && lookup_vdi(name, 0, vopt.tag, &vid) ==
	    SD_RES_SUCCESS) {
		fprintf(stderr, "VDI %s already has a snapshot tagged %s\n",
			name, vopt.tag);
		return EXIT_FAILURE;
	}
	ret = open_vdi(name, 0, "", &in, vopt.reduce);
	if (ret)
		return ret;
	ret = EXIT_FAILURE;
	if (vopt.reduce && !owns_objects(&in)) {
		ret = EXIT_SUCCESS;
		goto out;
	}
	memset(tag, 0, sizeof(tag));
	strcpy((char *)tag, vopt.tag);
	if (dog_write_object(vid_to_vdi_oid(in.vid), 0, tag, sizeof(tag),
			     SD_MAX_VDI_LEN, SD_FLAG_CMD_DIRECT,
			     in.h.nr_copies, 0, false))
		goto out;
	nv.size = in.h.vdi_size;
	nv.base = in.vid;
	nv.snapid = 1;
	nv.copies = in.h.nr_copies;
	nv.copy_policy = in.h.copy_policy;
	nv.store_policy = in.h.store_policy;
	nv.shift = in.h.block_size_shift;
	ret = new_vdi(&nv, &vid);
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to create snapshot for %s: %s\n",
			name, sd_strerror((uint32_t)ret));
		/* the working VDI goes on with the tag it had */
		memcpy(tag, in.h.tag, sizeof(tag));
		dog_write_object(vid_to_vdi_oid(in.vid), 0, tag, sizeof(tag),
				 SD_MAX_VDI_LEN, SD_FLAG_CMD_DIRECT,
				 in.h.nr_copies, 0, false);
		ret = EXIT_FAILURE;
		goto out;
	}
	ret = EXIT_SUCCESS;
	if (verbose) {
		if (raw_output)
			printf("%x %x\n", vid, in.vid);
		else
			printf("new VID of original VDI: %x, VDI ID of newly "
			       "created snapshot: %x\n", vid, in.vid);
	}
out:
	free_inode(&in);
	return ret;
}

struct clone_ctx {
	struct vdi_inode *src, dst;
	uint8_t *buf;
};

/* give the clone its own object @idx: a copy of @from's, or empty */
static int clone_object(uint32_t idx, uint32_t from, void *arg)
{
	struct clone_ctx *c = arg;
	const struct sd_inode_header *h = &c->src->h;
	uint32_t len = 0, size = inode_obj_size(h);

	if (from) {
		len = size;
		if (dog_read_object(vid_to_data_oid(from, idx), c->buf, len,
				    0, h->nr_copies, h->copy_policy))
			return -1;
	} else if (c->dst.h.copy_policy) {
		/* a coded object has no empty form: zeros, whole */
		memset(c->buf, 0, size);
		len = size;
	}
	if (dog_write_object(vid_to_data_oid(c->dst.vid, idx), 0, c->buf,
			     len, 0, SD_FLAG_CMD_DIRECT, c->dst.h.nr_copies,
			     c->dst.h.copy_policy, true) ||
	    vi_set(c->dst.vi, idx, c->dst.vid))
		return -1;
	show_progress(((uint64_t)idx + 1) * size,
		      (uint64_t)inode_nr_objs(h) * size);
	return 0;
}

/* -P: every object, allocated in the source or not */
static int clone_all(struct clone_ctx *c)
{
	uint32_t nr = inode_nr_objs(&c->src->h);

	for (uint32_t i = 0; i < nr; i++) {
		uint32_t from;

		if (vi_get(c->src->vi, i, &from) || clone_object(i, from, c))
			return -1;
	}
	return 0;
}

/* copy (or create empty) the clone's objects so it owns all of them */
static int clone_objects(struct vdi_inode *src, uint32_t vid)
{
	struct clone_ctx c = { .src = src };
	int ret = open_vdi_vid(vid, &c.dst, true);

	if (ret)
		return ret;
	c.buf = xmalloc(inode_obj_size(&src->h));
	if (vopt.prealloc)
		ret = clone_all(&c);
	else
		ret = vi_for_each(src->vi, clone_object, &c);
	free(c.buf);
	free_inode(&c.dst);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int vdi_clone(int argc, char **argv)
{
	struct new_vdi nv = { .name = argv[1] };
	struct vdi_inode src;
	uint32_t vid;
	int ret;

	if (!vopt.snapid && !vopt.tag[0]) {
		fprintf(stderr, "Only snapshot VDIs can be cloned\n"
			"Please specify the '-s' option\n");
		return EXIT_USAGE;
	}
	ret = check_name(nv.name);
	if (!ret)
		ret = reserved_name(nv.name, "create");
	if (ret)
		return ret;
	ret = open_vdi(argv[0], vopt.snapid, vopt.tag, &src, true);
	if (ret)
		return ret;
	nv.size = src.h.vdi_size;
	nv.base = vopt.no_share ? 0 : src.vid;
	nv.copies = src.h.nr_copies;
	nv.copy_policy = src.h.copy_policy;
	/* Kelpie: -c, a clone of its own redundancy (copy-on-write reads
	 * the parent's objects in the parent's layout) */
	if (vopt.copies) {
		nv.copies = vopt.copies;
		nv.copy_policy = vopt.copy_policy;
		if (ec_refused(nv.copies, nv.copy_policy) ||
		    (nv.copy_policy && reject_hyper(&src, "Erasure coding"))) {
			ret = EXIT_FAILURE;
			goto out;
		}
	}
	nv.store_policy = src.h.store_policy;
	nv.shift = src.h.block_size_shift;
	ret = new_vdi(&nv, &vid);
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to create VDI %s: %s\n", nv.name,
			sd_strerror((uint32_t)ret));
		ret = EXIT_FAILURE;
		goto out;
	}
	ret = EXIT_SUCCESS;
	if (vopt.prealloc || vopt.no_share)
		ret = clone_objects(&src, vid);
	if (!ret && verbose)
		printf("VDI ID of newly created clone: %x\n", vid);
out:
	free_inode(&src);
	return ret;
}

/* ---- delete ---- */

static int write_zero_range(const struct vdi_inode *in, uint32_t first,
			    uint32_t last)
{
	uint32_t len = (last - first + 1) * 4;
	uint8_t *zero = xzalloc(len);
	int ret;

	ret = dog_write_object(vid_to_vdi_oid(in->vid), 0, zero, len,
			       SD_INODE_INDEX_OFFSET + 4 * first,
			       SD_FLAG_CMD_DIRECT, in->h.nr_copies, 0, false);
	free(zero);
	return ret;
}

/*
 * Zero the non-zero index entries, at most nr_batch of them per write,
 * so that the sheep drops the references (objects.md §10.1).  Returns
 * 0, or -1 on a write failure.
 */
int clear_index(struct vdi_inode *in)
{
	uint32_t limit = vopt.max_reclaim ? vopt.max_reclaim : UINT32_MAX;
	uint32_t i = 0, cleared = 0;

	while (cleared < limit) {
		uint32_t first, last = 0, cnt = 0;

		while (i < in->nr && !in->index[i])
			i++;
		if (i >= in->nr)
			break;
		first = i;
		for (; i < in->nr && cnt < vopt.nr_batch &&
		       cleared + cnt < limit; i++) {
			if (!in->index[i])
				continue;
			in->index[i] = 0;
			last = i;
			cnt++;
		}
		if (write_zero_range(in, first, last))
			return -1;
		cleared += cnt;
		if (vopt.interval && i < in->nr && cleared < limit)
			sleep(vopt.interval);
	}
	return 0;
}

/* DEL_VDI; returns the result code after printing a failure */
int del_vdi(const char *name, uint32_t snapid, const char *tag)
{
	uint8_t buf[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN];
	struct sd_req req;
	struct sd_rsp rsp;

	fill_name_tag(buf, name, tag);
	sd_init_req(&req, SD_OP_DEL_VDI);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(buf);
	req.vdi.snapid = snapid;
	if (dog_exec(&req, buf, 0, &rsp))
		return SD_RES_EIO;
	if (rsp.result != SD_RES_SUCCESS)
		fprintf(stderr, "Failed to delete %s: %s\n", name,
			sd_strerror(rsp.result));
	return (int)rsp.result;
}

/*
 * Release the objects of an opened VDI (honouring -B, -I and -m) and
 * delete it (dog.md §2.4).  Returns the result code; with -m the VDI is
 * kept and SD_RES_SUCCESS returned.
 */
int delete_vdi_inode(struct vdi_inode *in, const char *name, uint32_t snapid,
		     const char *tag)
{
	/* before anything is released: the client's data stays its own */
	if (refuse_in_use(in->vid, name, "delete"))
		return SD_RES_VDI_LOCKED;
	if (!in->h.store_policy && clear_index(in))
		return SD_RES_EIO;
	if (vopt.max_reclaim)
		return SD_RES_SUCCESS;
	return del_vdi(name, snapid, tag);
}

/* always exits 0, even after printing an error (dog.md §1.2 quirk) */
static int vdi_delete(int argc, char **argv)
{
	struct vdi_inode in;

	if (reserved_name(argv[0], "delete"))
		return EXIT_FAILURE;
	if (open_vdi(argv[0], vopt.snapid, vopt.tag, &in, true))
		return EXIT_SUCCESS;
	delete_vdi_inode(&in, argv[0], vopt.snapid, vopt.tag);
	free_inode(&in);
	return EXIT_SUCCESS;
}

/* ---- list ---- */

/* the list flag: s snapshot, c clone, blank (raw: =) otherwise */
char vdi_flag(const struct sd_inode_header *h)
{
	if (h->snap_ctime)
		return 's';
	if (h->snap_id == 1 && h->parent_vdi_id)
		return 'c';
	return raw_output ? '=' : ' ';
}

/* the name and tag fields as C strings (buffers of field size + 1) */
void inode_name(const struct sd_inode_header *h, char *name)
{
	memcpy(name, h->name, SD_MAX_VDI_LEN);
	name[SD_MAX_VDI_LEN] = 0;
}

void inode_tag(const struct sd_inode_header *h, char *tag)
{
	memcpy(tag, h->tag, SD_MAX_VDI_TAG_LEN);
	tag[SD_MAX_VDI_TAG_LEN] = 0;
}

struct list_filter {
	const char *name;
};

static void print_escaped(const char *s)
{
	for (; *s; s++) {
		if (*s == ' ' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
}

/* objects a VDI owns and shares, and whether it holds @oid (-o) */
struct usage {
	uint32_t vid;
	uint64_t own, shared;
	bool has_oid;
};

static void count_entry(struct usage *u, uint32_t idx, uint32_t owner)
{
	if (owner == u->vid)
		u->own++;
	else if (owner)
		u->shared++;
	if (vopt.oid_set && owner && idx == data_oid_to_idx(vopt.oid) &&
	    owner == oid_to_vid(vopt.oid))
		u->has_oid = true;
}

static int count_fn(uint32_t idx, uint32_t owner, void *arg)
{
	count_entry(arg, idx, owner);
	return 0;
}

/* a hyper volume's through its B-tree; 0 or -1 */
static int hyper_usage(const struct sd_inode_header *h, struct usage *u)
{
	struct dog_index_io io;
	struct vdi_index *vi = open_vdi_index(&io, u->vid, h, NULL, 0);
	int ret;

	if (!vi)
		return -1;
	ret = vi_for_each(vi, count_fn, u);
	vi_close(vi);
	return ret;
}

static void list_one(uint32_t vid, const struct sd_inode_header *h,
		     const uint32_t *index, uint32_t nr, void *data)
{
	const struct list_filter *f = data;
	uint64_t obj = inode_obj_size(h), own, shared;
	struct usage u = { .vid = vid };
	char size[32], used[32], shr[32], date[32], copies[16];
	char name[SD_MAX_VDI_LEN + 1], tag[SD_MAX_VDI_TAG_LEN + 1];
	bool snap = h->snap_ctime != 0;
	char flag = vdi_flag(h);

	inode_name(h, name);
	inode_tag(h, tag);
	if (f->name && strcmp(f->name, name))
		return;
	/* object storage's own (reserved_name): listed only when named */
	if (!f->name && !strncmp(name, ".kelpie/", 8))
		return;
	for (uint32_t i = 0; i < nr; i++)
		count_entry(&u, i, index[i]);
	if (h->store_policy && hyper_usage(h, &u))
		return;
	if (vopt.oid_set && !u.has_oid)
		return;
	own = u.own;
	shared = u.shared;
	fmt_size(h->vdi_size, size, sizeof(size));
	fmt_size(own * obj, used, sizeof(used));
	fmt_size(shared * obj, shr, sizeof(shr));
	fmt_time(h->create_time >> 32, "%Y-%m-%d %H:%M", date, sizeof(date));
	copies_to_str(h->nr_copies, h->copy_policy, copies, sizeof(copies));
	if (raw_output) {
		printf("%c ", flag);
		print_escaped(name);
		printf(" %" PRIu32 " %s %s %s %s %x %s %s %u\n",
		       snap ? h->snap_id : 0, size, used, shr, date, vid,
		       copies, tag, h->block_size_shift);
		return;
	}
	printf("%c %-8s %5" PRIu32 " %7s %7s %7s %s  %7x %6s %13s %3u\n",
	       flag, name, snap ? h->snap_id : 0, size, used, shr, date, vid,
	       copies, tag, h->block_size_shift);
}

static void list_header(void)
{
	if (!raw_output)
		printf("  Name        Id    Size    Used  Shared    Creation "
		       "time   VDI id  Copies  Tag   Block Size Shift\n");
}

static int vdi_list(int argc, char **argv)
{
	struct list_filter f = { .name = argc ? argv[0] : NULL };
	struct epoch_rec *recs;
	uint32_t result;
	int n;

	/*
	 * A cluster that does not serve (waiting for its nodes, not
	 * formatted) knows no VDIs yet: an empty table would read as if
	 * every disk were gone
	 */
	n = fetch_epoch_log(&recs, &result);
	if (n < 0)
		return EXIT_SYSFAIL;
	free_epoch_log(recs, n);
	if (result != SD_RES_SUCCESS && result != SD_RES_HALT) {
		fprintf(stderr, "Failed to list VDIs: the cluster does not "
			"serve yet (Cluster status: %s)\n",
			sd_strerror(result));
		return EXIT_FAILURE;
	}
	return parse_vdi_start(list_one, true, &f, list_header);
}

/* ---- read and write ---- */

/* [offset [len]] arguments; returns 0 or EXIT_USAGE */
static int parse_range(int argc, char **argv, uint64_t *off, uint64_t *len,
		       bool *has_len)
{
	*off = 0;
	*has_len = false;
	if (argc > 1 && parse_size(argv[1], off)) {
		print_size_error(argv[1]);
		return EXIT_USAGE;
	}
	if (argc > 2) {
		if (parse_size(argv[2], len)) {
			print_size_error(argv[2]);
			return EXIT_USAGE;
		}
		*has_len = true;
	}
	return 0;
}

static uint64_t range_end(uint64_t off, uint64_t len, bool has_len,
			  uint64_t size)
{
	if (!has_len || len > size - off)
		return size;
	return off + len;
}

static int vdi_read(int argc, char **argv)
{
	struct vdi_inode in;
	uint64_t off, len, end, start;
	uint32_t obj;
	uint8_t *buf = NULL;
	bool has_len;
	int ret;

	ret = parse_range(argc, argv, &off, &len, &has_len);
	if (ret)
		return ret;
	ret = open_vdi(argv[0], vopt.snapid, vopt.tag, &in, true);
	if (ret)
		return ret;
	ret = EXIT_FAILURE;
	if (off > in.h.vdi_size) {
		fprintf(stderr, "Read offset is beyond the end of the VDI\n");
		goto out;
	}
	end = range_end(off, len, has_len, in.h.vdi_size);
	start = off;
	obj = inode_obj_size(&in.h);
	buf = xmalloc(obj);
	progress_on_stderr = true;	/* stdout is the data */
	while (off < end) {
		uint32_t idx = (uint32_t)(off / obj);
		uint32_t ooff = (uint32_t)(off % obj);
		uint32_t n = (uint32_t)MIN((uint64_t)(obj - ooff), end - off);
		uint32_t owner;

		if (vi_get(in.vi, idx, &owner)) {
			fprintf(stderr, "Failed to read the index\n");
			goto out;
		}
		if (!owner)
			memset(buf, 0, n);
		else if (dog_read_object(vid_to_data_oid(owner, idx), buf, n,
					 ooff, in.h.nr_copies,
					 in.h.copy_policy))
			goto out;
		if (xwrite(STDOUT_FILENO, buf, n) < 0) {
			/* a reader that stopped early is not worth a message */
			if (errno != EPIPE)
				fprintf(stderr, "Failed to write to stdout: "
					"%s\n", strerror(errno));
			ret = EXIT_SYSFAIL;
			goto out;
		}
		off += n;
		show_progress(off - start, end - start);
	}
	ret = EXIT_SUCCESS;
out:
	free(buf);
	free_inode(&in);
	return ret;
}

/* read up to @len bytes; returns the count (short only at EOF) or -1 */
ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = read(fd, buf + done, len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/*
 * Write one chunk inside object @idx, allocating or COWing it: the data
 * object first, then its index entry (which for a hyper volume may split
 * a leaf: doc/hyper-volumes.md §2), so that no entry names an object
 * not written.
 */
int write_chunk(struct vdi_inode *in, uint32_t idx, const uint8_t *buf,
		       uint32_t len, uint32_t ooff)
{
	uint32_t owner;
	uint64_t cow = 0;
	bool create;
	uint16_t flags = vopt.writeback ? SD_FLAG_CMD_CACHE : 0;

	if (vi_get(in->vi, idx, &owner))
		return -1;
	create = owner != in->vid;
	if (owner && owner != in->vid)
		cow = vid_to_data_oid(owner, idx);
	if (dog_write_object(vid_to_data_oid(in->vid, idx), cow, buf, len,
			     ooff, flags, in->h.nr_copies, in->h.copy_policy,
			     create))
		return -1;
	if (!create)
		return 0;
	return vi_set(in->vi, idx, in->vid);
}

static void flush_vdi(uint32_t vid)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_FLUSH_VDI);
	req.obj.oid = vid_to_vdi_oid(vid);
	dog_exec(&req, NULL, 0, &rsp);
}

static int vdi_write(int argc, char **argv)
{
	struct vdi_inode in;
	uint64_t off, len, end, start;
	uint8_t *buf = NULL;
	uint32_t obj;
	bool has_len;
	int ret;

	ret = parse_range(argc, argv, &off, &len, &has_len);
	if (ret)
		return ret;
	ret = open_vdi(argv[0], 0, "", &in, true);
	if (ret)
		return ret;
	ret = EXIT_FAILURE;
	if (off > in.h.vdi_size) {
		fprintf(stderr, "Write offset is beyond the end of the VDI\n");
		goto out;
	}
	end = range_end(off, len, has_len, in.h.vdi_size);
	start = off;
	obj = inode_obj_size(&in.h);
	buf = xmalloc(obj);
	while (off < end) {
		uint32_t idx = (uint32_t)(off / obj);
		uint32_t ooff = (uint32_t)(off % obj);
		uint32_t n = (uint32_t)MIN((uint64_t)(obj - ooff), end - off);
		ssize_t r = read_full(STDIN_FILENO, buf, n);

		if (r < 0) {
			fprintf(stderr, "Failed to read from stdin: %s\n",
				strerror(errno));
			ret = EXIT_SYSFAIL;
			goto out;
		}
		/*
		 * The input ended: write exactly what it gave (the rest of
		 * the object keeps its data, or its parent's), and nothing
		 * at all when it ended on an object boundary
		 */
		if ((uint32_t)r < n) {
			n = (uint32_t)r;
			end = off + n;
			if (!n)
				break;
		}
		if (write_chunk(&in, idx, buf, n, ooff)) {
			fprintf(stderr, "Failed to write VDI\n");
			goto out;
		}
		off += n;
		show_progress(off - start, end - start);
	}
	if (vopt.writeback)
		flush_vdi(in.vid);
	ret = EXIT_SUCCESS;
out:
	free(buf);
	free_inode(&in);
	return ret;
}

/* ---- resize ---- */

static int vdi_resize(int argc, char **argv)
{
	uint8_t buf[SD_INODE_HEADER_SIZE];
	struct vdi_inode in;
	uint64_t size, max;
	int ret;

	if (parse_size(argv[1], &size)) {
		print_size_error(argv[1]);
		return EXIT_USAGE;
	}
	ret = open_vdi(argv[0], 0, "", &in, false);
	if (ret)
		return ret;
	max = in.h.store_policy ? SD_MAX_VDI_SIZE :
	      (uint64_t)inode_obj_size(&in.h) * SD_INODE_DATA_INDEX;
	if (size < in.h.vdi_size) {
		fprintf(stderr, "Shrinking VDIs is not implemented\n");
		return EXIT_USAGE;
	}
	if (size > max) {
		char m[32];

		fprintf(stderr, "New VDI size is too large: this VDI can "
			"grow to at most %s\n", size_to_str(max, m, sizeof(m)));
		return EXIT_USAGE;
	}
	in.h.vdi_size = size;
	inode_header_encode(&in.h, buf);
	if (dog_write_object(vid_to_vdi_oid(in.vid), 0, buf, sizeof(buf), 0,
			     SD_FLAG_CMD_DIRECT, in.h.nr_copies, 0, false))
		return EXIT_FAILURE;
	return EXIT_SUCCESS;
}

/* ---- object location ---- */

static void print_targets(uint64_t oid, int copies)
{
	char s[NODE_STR_LEN];
	int tgt[SD_MAX_COPIES];
	int n;

	if (sd_nodes_nr < copies) {
		printf("\nThere are only %d nodes, fewer than the %d copies "
		       "of the object.\n", sd_nodes_nr, copies);
		return;
	}
	n = ring_targets(dog_ring(), oid, MIN(copies, SD_MAX_COPIES), tgt);
	printf("\nAccording to sheepdog algorithm, the object should be "
	       "located at:\n");
	/* separated by spaces, none after the last (as the original) */
	for (int i = 0; i < n; i++)
		printf("%s%s", i ? " " : "",
		       node_to_str(&dog_ring()->nodes[tgt[i]], s, sizeof(s)));
	printf("\n");
}

static void ask_nodes(uint64_t oid)
{
	char s[NODE_STR_LEN];

	for (int i = 0; i < sd_nodes_nr; i++) {
		struct sd_req req;
		struct sd_rsp rsp;
		bool has;

		sd_init_req(&req, SD_OP_EXIST);
		req.epoch = sd_epoch;
		req.obj.oid = oid;
		has = !dog_exec_node(&sd_nodes[i].nid, &req, NULL, 0, &rsp) &&
		      rsp.result == SD_RES_SUCCESS;
		printf("%s %s the object\n",
		       node_to_str(&sd_nodes[i], s, sizeof(s)),
		       has ? "has" : "doesn't have");
	}
}

/*
 * The owner of data index @idx of @in (opened without its index): one
 * entry read from a flat index, a lookup in a hyper volume's B-tree.
 * Returns 0 or an exit code.
 */
int data_entry(const struct vdi_inode *in, uint32_t idx, uint32_t *owner)
{
	struct dog_index_io io;
	struct vdi_index *vi;
	uint8_t buf[4];
	int ret;

	*owner = 0;
	if (in->h.store_policy) {
		vi = open_vdi_index(&io, in->vid, &in->h, NULL, 0);
		if (!vi)
			return EXIT_FAILURE;
		ret = vi_get(vi, idx, owner);
		vi_close(vi);
		return ret ? EXIT_FAILURE : 0;
	}
	if (idx >= SD_INODE_DATA_INDEX)
		return 0;
	if (dog_read_object(vid_to_vdi_oid(in->vid), buf, sizeof(buf),
			    SD_INODE_INDEX_OFFSET + 4 * idx, 0, 0))
		return EXIT_FAILURE;
	*owner = get_le32(buf);
	return 0;
}

static int object_location(int argc, char **argv)
{
	struct vdi_inode in;
	uint32_t owner;
	uint64_t oid;
	int ret;

	ret = open_vdi(argv[0], vopt.snapid, vopt.tag, &in, false);
	if (ret)
		return ret;
	if (!vopt.index_set) {
		oid = vid_to_vdi_oid(in.vid);
		printf("Looking for the inode object 0x%" PRIx32 " with %d "
		       "nodes\n\n", in.vid, sd_nodes_nr);
		goto found;
	}
	if (vopt.index > UINT32_MAX) {
		fprintf(stderr, "The offset is too large!\n");
		return EXIT_FAILURE;
	}
	ret = data_entry(&in, (uint32_t)vopt.index, &owner);
	if (ret)
		return ret;
	if (!owner) {
		printf("The inode object 0x%" PRIx32 " idx %" PRIu64 " is not "
		       "allocated\n", in.vid, vopt.index);
		return EXIT_FAILURE;
	}
	oid = vid_to_data_oid(owner, (uint32_t)vopt.index);
	printf("Looking for the object 0x%" PRIx64 " (vid 0x%" PRIx32
	       " idx %" PRIu64 ", %u copies) with %d nodes\n\n", oid, in.vid,
	       vopt.index, in.h.nr_copies, sd_nodes_nr);
found:
	ask_nodes(oid);
	print_targets(oid, in.h.nr_copies);
	return EXIT_SUCCESS;
}

static const struct subcommand object_cmds[] = {
	{ "location", "<vdiname>", NULL,
	  "show where an object of a VDI is and should be", NULL,
	  CMD_NEED_NODELIST, 1, object_location },
	{ "map", "<vdiname>", NULL,
	  "show which VDI owns each data object", NULL, 0, 1, object_map },
	{ "dump-inode", "<inode file>", NULL,
	  "decode an inode object file of a local store", NULL, 0, 1,
	  object_dump_inode },
	{ NULL },
};

static const struct subcommand lock_cmds[] = {
	{ "list", NULL, NULL, "list the locked VDIs", NULL, 0, 0,
	  lock_list },
	{ "unlock", "<vdiname>", NULL, "release the lock of a VDI", NULL, 0,
	  1, lock_unlock },
	{ NULL },
};

/* ---- options and table ---- */

static int parse_u32_opt(const char *arg, int ch, uint32_t *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = isdigit((unsigned char)arg[0]) ? strtoull(arg, &end, 10) : 0;
	if (!isdigit((unsigned char)arg[0]) || *end || errno || n == 0 ||
	    n > UINT32_MAX) {
		fprintf(stderr, "Invalid value '%s' for -%c: a positive "
			"integer is required\n", arg, ch);
		return EXIT_USAGE;
	}
	*v = (uint32_t)n;
	return 0;
}

static int parse_index(const char *arg)
{
	bool hex = !strncasecmp(arg, "0x", 2);
	const char *d = hex ? arg + 2 : arg;
	char *end;

	errno = 0;
	if (!isxdigit((unsigned char)d[0]))
		goto bad;
	vopt.index = strtoull(d, &end, hex ? 16 : 10);
	if (*end || errno)
		goto bad;
	vopt.index_set = true;
	return 0;
bad:
	fprintf(stderr, "Invalid index '%s'\n", arg);
	return EXIT_USAGE;
}

static int parse_oid(const char *arg)
{
	const char *d = strncasecmp(arg, "0x", 2) ? arg : arg + 2;
	char *end;

	errno = 0;
	if (!isxdigit((unsigned char)d[0]))
		goto bad;
	vopt.oid = strtoull(d, &end, 16);
	if (*end || errno)
		goto bad;
	vopt.oid_set = true;
	return 0;
bad:
	fprintf(stderr, "Invalid object id '%s'\n", arg);
	return EXIT_USAGE;
}

static int vdi_parser(int ch, const char *arg)
{
	switch (ch) {
	case 'P':
		vopt.prealloc = true;
		break;
	case 'n':
		vopt.no_share = true;
		break;
	case 'w':
		vopt.writeback = true;
		break;
	case 'y':
		vopt.hyper = true;
		break;
	case 'R':
		vopt.reduce = true;
		break;
	case 'i':
		return parse_index(arg);
	case 's':
		return parse_snapshot(arg, &vopt.snapid, vopt.tag);
	case 'c':
		if (parse_copies(arg, &vopt.copies, &vopt.copy_policy))
			return EXIT_FAILURE;
		break;
	case 'z':
		return parse_block_shift(arg, &vopt.shift);
	case 'o':
		return parse_oid(arg);
	case 'B':
		return parse_u32_opt(arg, ch, &vopt.nr_batch);
	case 'I':
		return parse_u32_opt(arg, ch, &vopt.interval);
	case 'm':
		return parse_u32_opt(arg, ch, &vopt.max_reclaim);
	case 'x':
		vopt.exclusive = true;
		break;
	case 'd':
		vopt.delete = true;
		break;
	case 'f':
		vopt.force = true;
		break;
	case 'e':
		vopt.exist = true;
		break;
	case 'K':
		vopt.checksummed = true;
		break;
	case 'F':
		vopt.from_set = true;
		return parse_snapshot(arg, &vopt.from_snapid, vopt.from_tag);
	}
	return 0;
}

static const struct sd_option vdi_options[] = {
	{ 'P', "prealloc", false, NULL, "allocate every object up front" },
	{ 'n', "no-share", false, NULL,
	  "copy the data instead of sharing it with the snapshot" },
	{ 'i', "index", true, "index",
	  "data object index (decimal or 0x hex)" },
	{ 's', "snapshot", true, "snapshot",
	  "snapshot id (a number) or tag (anything else)" },
	{ 'w', "writeback", false, NULL, "use the sheep's write cache" },
	{ 'c', "copies", true, "copies",
	  "redundancy: N copies or D:P erasure code" },
	{ 'y', "hyper", false, NULL, "create a hyper volume" },
	{ 'o', "oid", true, "oid", "object id (hex)" },
	{ 'z', "block_size_shift", true, "shift",
	  "object size 2^shift (20 to 26)" },
	{ 'R', "reduce-identical-snapshots", false, NULL,
	  "skip the snapshot if nothing was written since the last one" },
	{ 'B', "nr-batched-reclamation", true, "count",
	  "index entries cleared per request (default 128)" },
	{ 'I', "reclamation-interval", true, "seconds",
	  "pause between two batches" },
	{ 'm', "max-reclaim", true, "count",
	  "clear at most this many entries and keep the VDI" },
	{ 'x', "exclusive", false, NULL,
	  "fail if the attribute already exists" },
	{ 'd', "delete", false, NULL, "delete the attribute" },
	{ 'f', "force", false, NULL, "do not ask for confirmation" },
	{ 'e', "exist", false, NULL,
	  "only check that every copy exists" },
	{ 'F', "from", true, "snapshot",
	  "base snapshot of an incremental backup (id or tag)" },
	{ 'K', "checksummed", false, NULL,
	  "write Kelpie's checksummed stream, not Sheepdog's" },
	{ 0, NULL, false, NULL, NULL },
};

static const struct subcommand vdi_cmds[] = {
	{ "check", "<vdiname>", "seaphT",
	  "check and repair the replicas of an image", NULL,
	  CMD_NEED_NODELIST, 1, vdi_check },
	{ "create", "<vdiname> <size>", "PycaphrvzT", "create an image",
	  NULL, CMD_NEED_NODELIST, 2, vdi_create },
	{ "snapshot", "<vdiname>", "saphrvTR", "create a snapshot", NULL, 0,
	  1, vdi_snapshot },
	{ "clone", "<src vdi> <dst vdi>", "sPnaphrvTc",
	  "create a clone of a snapshot", NULL, CMD_NEED_NODELIST, 2,
	  vdi_clone },
	{ "delete", "<vdiname>", "saphTBIm", "delete an image", NULL, 0, 1,
	  vdi_delete },
	{ "rollback", "<vdiname>", "saphfrvTBI",
	  "roll an image back to a snapshot", NULL, 0, 1, vdi_rollback },
	{ "list", "[vdiname]", "aprhoT", "list images", NULL, 0, 0,
	  vdi_list },
	{ "tree", NULL, "aphT", "show images and snapshots as a tree", NULL,
	  0, 0, vdi_tree },
	{ "graph", NULL, "aphT",
	  "show images and snapshots as a Graphviz graph", NULL, 0, 0,
	  vdi_graph },
	{ "object", NULL, "isaphT", "inspect the objects of an image",
	  object_cmds, 0, 0, NULL },
	{ "track", "<vdiname>", "isaphoT",
	  "show where an object was placed in every epoch", NULL,
	  CMD_NEED_NODELIST, 1, vdi_track },
	{ "setattr", "<vdiname> <key> [value]", "dxaphT",
	  "set (or with -d delete) an attribute of an image", NULL, 0, 2,
	  vdi_setattr },
	{ "getattr", "<vdiname> <key>", "aphT",
	  "print an attribute of an image", NULL, 0, 2, vdi_getattr },
	{ "lock", NULL, "saphT", "list or release image locks", lock_cmds,
	  0, 0, NULL },
	{ "alter-copy", "<vdiname>", "caphTf",
	  "change the number of copies of an image", NULL,
	  CMD_NEED_NODELIST, 1, vdi_alter_copy },
	{ "resize", "<vdiname> <new size>", "aphT", "grow an image", NULL, 0,
	  2, vdi_resize },
	{ "read", "<vdiname> [<offset> [<len>]]", "saphT",
	  "read image data to stdout", NULL, 0, 1, vdi_read },
	{ "write", "<vdiname> [<offset> [<len>]]", "apwhT",
	  "write stdin into an image", NULL, 0, 1, vdi_write },
	{ "backup", "<vdiname>", "sFKaphT",
	  "write the changes between two snapshots to stdout", NULL, 0, 1,
	  vdi_backup },
	{ "restore", "<vdiname>", "saphTBI",
	  "restore a backup from stdin on top of a snapshot", NULL, 0, 1,
	  vdi_restore },
	{ NULL },
};

struct command vdi_command = {
	.name = "vdi",
	.sub = vdi_cmds,
	.options = vdi_options,
	.parser = vdi_parser,
};
