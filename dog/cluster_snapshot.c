// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog cluster snapshot save|list|load|show (dog.md §4.5): the VDIs of a
 * cluster saved into a local directory, and loaded into a freshly
 * formatted cluster.  The layout is Kelpie's own, after Sheepdog's farm
 * (doc/cluster-snapshot.md):
 *
 *   DIR/snap_log        a 32-byte header {le32 0xfee1c001, le32 1, copies,
 *                       policy, shift, 21 zero bytes}, then one 288-byte
 *                       record per snapshot {le32 index (from 1), tag[256],
 *                       le64 unix time, the trunk's SHA-1}
 *   DIR/objects/...     content-addressed object files (farm.h); a
 *                       snapshot's trunk is one of them: "KFTRUNK1", le64
 *                       count, then 40-byte entries {le64 oid, copies,
 *                       policy, shift, 0, le32 length, SHA-1, le32 0}
 *
 * save takes every VDI in use (or only those named) as it reads it: the
 * inode, the data objects its index names (whichever VDI owns them), their
 * ledgers and the vmstate objects; the inodes of VDIs whose objects are
 * named but that are not saved themselves (a deleted parent) are saved
 * too, so that a load reserves their ids.  Take VDI snapshots first for a
 * consistent point in time: a VDI written meanwhile is copied as it is
 * read.  Attribute objects are not saved.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "dog.h"
#include "farm.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"
#include "vindex.h"

#define LOG_MAGIC	0xfee1c001
#define LOG_VERSION	1
#define LOG_HDR		32
#define LOG_TAG		256
#define LOG_REC		(4 + LOG_TAG + 8 + FARM_SHA1_LEN)
#define TRUNK_MAGIC	"KFTRUNK1"
#define TRUNK_HDR	16
#define TRUNK_ENT	40

struct log_hdr {
	uint8_t copies, policy, shift;
};

struct snap_rec {
	uint32_t idx;
	char tag[LOG_TAG];
	uint64_t time;
	uint8_t trunk[FARM_SHA1_LEN];
};

struct trunk_ent {
	uint64_t oid;
	uint8_t copies, policy, shift;
	uint32_t len;
	uint8_t sha1[FARM_SHA1_LEN];
};

/* a set of 64-bit ids (oids, vids), open addressing; 0 is never stored */
struct idset {
	uint64_t *slot;
	size_t cap, nr;
};

static bool idset_has(const struct idset *s, uint64_t id)
{
	if (!s->cap)
		return false;
	for (size_t i = id * 0x9e3779b97f4a7c15ULL % s->cap;;
	     i = (i + 1) % s->cap) {
		if (s->slot[i] == id)
			return true;
		if (!s->slot[i])
			return false;
	}
}

static void idset_add(struct idset *s, uint64_t id)
{
	if (idset_has(s, id))
		return;
	if (2 * (s->nr + 1) > s->cap) {
		struct idset n = { .cap = s->cap ? 2 * s->cap : 1024 };

		n.slot = xzalloc(n.cap * sizeof(*n.slot));
		for (size_t i = 0; i < s->cap; i++)
			if (s->slot[i])
				idset_add(&n, s->slot[i]);
		free(s->slot);
		*s = n;
	}
	for (size_t i = id * 0x9e3779b97f4a7c15ULL % s->cap;;
	     i = (i + 1) % s->cap)
		if (!s->slot[i]) {
			s->slot[i] = id;
			s->nr++;
			return;
		}
}

/* ---- the snapshot log ---- */

static void log_path(const char *dir, char *buf, size_t len)
{
	snprintf(buf, len, "%s/snap_log", dir);
}

static void rec_decode(const uint8_t *p, struct snap_rec *r)
{
	r->idx = get_le32(p);
	memcpy(r->tag, p + 4, LOG_TAG);
	r->tag[LOG_TAG - 1] = 0;
	r->time = get_le64(p + 4 + LOG_TAG);
	memcpy(r->trunk, p + 4 + LOG_TAG + 8, FARM_SHA1_LEN);
}

/* the header and the records of DIR/snap_log; -1 with a message */
static int read_log(const char *dir, struct log_hdr *h, struct snap_rec **out,
		    size_t *nr)
{
	char path[4200];
	uint8_t hdr[LOG_HDR], rec[LOG_REC];
	int fd;

	log_path(dir, path, sizeof(path));
	*out = NULL;
	*nr = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (xread(fd, hdr, LOG_HDR) != LOG_HDR ||
	    get_le32(hdr) != LOG_MAGIC || get_le32(hdr + 4) != LOG_VERSION) {
		fprintf(stderr, "%s is not a snapshot log\n", path);
		close(fd);
		return -1;
	}
	h->copies = hdr[8];
	h->policy = hdr[9];
	h->shift = hdr[10];
	while (xread(fd, rec, LOG_REC) == LOG_REC) {
		*out = xrealloc(*out, (*nr + 1) * sizeof(**out));
		rec_decode(rec, &(*out)[(*nr)++]);
	}
	close(fd);
	return 0;
}

/* the record of @which (an index, or a tag) */
static int find_rec(const char *dir, const char *which, struct log_hdr *h,
		    struct snap_rec *r)
{
	struct snap_rec *recs;
	bool by_idx = *which && strspn(which, "0123456789") == strlen(which);
	size_t nr;

	if (read_log(dir, h, &recs, &nr))
		return -1;
	for (size_t i = nr; i-- > 0;) {
		if (by_idx ? recs[i].idx == strtoul(which, NULL, 10) :
		    !strcmp(recs[i].tag, which)) {
			*r = recs[i];
			free(recs);
			return 0;
		}
	}
	free(recs);
	fprintf(stderr, "No snapshot %s in %s\n", which, dir);
	return -1;
}

static int get_cluster_defaults(struct log_hdr *h)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_GET_CLUSTER_DEFAULT);
	if (dog_exec(&req, NULL, 0, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to get the cluster's defaults: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	h->copies = rsp.cluster_default.nr_copies;
	h->policy = rsp.cluster_default.copy_policy;
	h->shift = rsp.cluster_default.block_size_shift;
	return 0;
}

/* append a record to the log (created with the cluster's defaults) */
static int append_rec(const char *dir, const char *tag,
		      const uint8_t *trunk)
{
	uint8_t hdr[LOG_HDR] = { 0 }, rec[LOG_REC] = { 0 };
	char path[4200];
	struct snap_rec *recs = NULL;
	struct log_hdr h;
	size_t nr = 0;
	int fd, ret = -1;

	log_path(dir, path, sizeof(path));
	if (!access(path, F_OK)) {
		if (read_log(dir, &h, &recs, &nr))
			return -1;
		fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	} else {
		if (get_cluster_defaults(&h))
			return -1;
		put_le32(hdr, LOG_MAGIC);
		put_le32(hdr + 4, LOG_VERSION);
		hdr[8] = h.copies;
		hdr[9] = h.policy;
		hdr[10] = h.shift;
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 && xwrite(fd, hdr, LOG_HDR) < 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		goto out;
	put_le32(rec, nr ? recs[nr - 1].idx + 1 : 1);
	strncpy((char *)rec + 4, tag, LOG_TAG - 1);
	put_le64(rec + 4 + LOG_TAG, (uint64_t)time(NULL));
	memcpy(rec + 4 + LOG_TAG + 8, trunk, FARM_SHA1_LEN);
	if (xwrite(fd, rec, LOG_REC) < 0 || fsync(fd))
		goto close;
	ret = 0;
close:
	close(fd);
out:
	if (ret)
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
	free(recs);
	return ret;
}

/* ---- trunks ---- */

static void *trunk_encode(const struct trunk_ent *e, size_t nr, size_t *len)
{
	uint8_t *buf = xzalloc(TRUNK_HDR + nr * TRUNK_ENT), *p;

	memcpy(buf, TRUNK_MAGIC, 8);
	put_le64(buf + 8, nr);
	for (size_t i = 0; i < nr; i++) {
		p = buf + TRUNK_HDR + i * TRUNK_ENT;
		put_le64(p, e[i].oid);
		p[8] = e[i].copies;
		p[9] = e[i].policy;
		p[10] = e[i].shift;
		put_le32(p + 12, e[i].len);
		memcpy(p + 16, e[i].sha1, FARM_SHA1_LEN);
	}
	*len = TRUNK_HDR + nr * TRUNK_ENT;
	return buf;
}

static int read_trunk(const char *dir, const struct snap_rec *r,
		      struct trunk_ent **out, size_t *nr)
{
	uint8_t *buf, *p;
	uint32_t len;

	if (farm_get(dir, r->trunk, (void **)&buf, &len))
		return -1;
	if (len < TRUNK_HDR || memcmp(buf, TRUNK_MAGIC, 8) ||
	    get_le64(buf + 8) != (len - TRUNK_HDR) / TRUNK_ENT ||
	    (len - TRUNK_HDR) % TRUNK_ENT) {
		fprintf(stderr, "the trunk of snapshot %" PRIu32 " is not "
			"one\n", r->idx);
		free(buf);
		return -1;
	}
	*nr = (len - TRUNK_HDR) / TRUNK_ENT;
	*out = xzalloc((*nr ? *nr : 1) * sizeof(**out));
	for (size_t i = 0; i < *nr; i++) {
		p = buf + TRUNK_HDR + i * TRUNK_ENT;
		(*out)[i] = (struct trunk_ent) {
			.oid = get_le64(p), .copies = p[8], .policy = p[9],
			.shift = p[10], .len = get_le32(p + 12),
		};
		memcpy((*out)[i].sha1, p + 16, FARM_SHA1_LEN);
	}
	free(buf);
	return 0;
}

/* ---- save ---- */

struct save_ctx {
	const char *dir;
	char **names;
	int nr_names;
	struct idset saved_oids, saved_vids, ref_vids;
	struct trunk_ent *ents;
	size_t nr_ents, cap_ents;
	uint32_t nr_vdis, vdis_done;
	int err;
};

static bool selected(const struct save_ctx *c, const char *name)
{
	if (!c->nr_names)
		return true;
	for (int i = 0; i < c->nr_names; i++)
		if (!strcmp(c->names[i], name))
			return true;
	return false;
}

/* READ_OBJ without a message for a missing object: 0, 1 absent, -1 */
static int read_quiet(uint64_t oid, void *buf, uint32_t len, uint8_t copies,
		      uint8_t policy)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_READ_OBJ);
	req.data_length = len;
	req.obj.oid = oid;
	req.obj.copies = copies;
	req.obj.copy_policy = policy;
	if (dog_exec(&req, buf, len, &rsp))
		return -1;
	if (rsp.result == SD_RES_NO_OBJ)
		return 1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to read object %" PRIx64 ": %s\n", oid,
			sd_strerror(rsp.result));
		return -1;
	}
	if (rsp.data_length < len)
		memset((uint8_t *)buf + rsp.data_length, 0,
		       len - rsp.data_length);
	return 0;
}

/* save @oid (once): 0, 1 if it does not exist and may not, -1 */
static int save_object(struct save_ctx *c, uint64_t oid,
		       const struct sd_inode_header *h, bool optional)
{
	/* the shift comes from the sheep: inode_obj_size() checks it */
	uint32_t len = is_data_obj(oid) || is_vmstate_obj(oid) ?
		       inode_obj_size(h) :
		       sd_obj_size(oid, SD_DEFAULT_BLOCK_SIZE_SHIFT);
	struct trunk_ent e = {
		.oid = oid, .copies = h->nr_copies, .policy = h->copy_policy,
		.shift = h->block_size_shift, .len = len,
	};
	bool dedup;
	void *buf;
	int ret;

	if (idset_has(&c->saved_oids, oid))
		return 0;
	buf = xmalloc(len);
	ret = read_quiet(oid, buf, len, h->nr_copies, h->copy_policy);
	if (ret == 1 && !optional) {
		fprintf(stderr, "Failed to read object %" PRIx64 ": %s\n", oid,
			sd_strerror(SD_RES_NO_OBJ));
		ret = -1;
	}
	if (!ret && farm_put(c->dir, buf, len, e.sha1, &dedup))
		ret = -1;
	free(buf);
	if (ret)
		return ret;	/* 1: absent, and allowed to be */
	idset_add(&c->saved_oids, oid);
	if (c->nr_ents == c->cap_ents) {
		c->cap_ents = c->cap_ents ? 2 * c->cap_ents : 1024;
		c->ents = xrealloc(c->ents, c->cap_ents * sizeof(*c->ents));
	}
	c->ents[c->nr_ents++] = e;
	return 0;
}

static void progress(const struct save_ctx *c)
{
	show_count_progress(c->vdis_done, c->nr_vdis ? c->nr_vdis : 1, "VDIs");
}

static int save_vdi(struct save_ctx *c, uint32_t vid,
		    const struct sd_inode_header *h, const uint32_t *index,
		    uint32_t nr)
{
	uint32_t size = inode_obj_size(h);
	uint64_t vm = h->vm_state_size;

	if (save_object(c, vid_to_vdi_oid(vid), h, false) < 0)
		return -1;
	idset_add(&c->saved_vids, vid);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t oid;

		progress(c);
		if (!index[i])
			continue;
		oid = vid_to_data_oid(index[i], i);
		if (save_object(c, oid, h, false) < 0 ||
		    save_object(c, data_oid_to_ledger_oid(oid), h, true) < 0)
			return -1;
		if (index[i] != vid)
			idset_add(&c->ref_vids, index[i]);
	}
	/* chunks of the state stream, up to the first missing one */
	for (uint32_t i = 0; (uint64_t)i * size < vm; i++) {
		int ret = save_object(c, vid_to_vmstate_oid(vid, i), h, true);

		if (ret < 0)
			return -1;
		if (ret > 0)
			break;
	}
	return 0;
}

/* a hyper volume: its leaf objects and the data objects its B-tree names */
struct hyper_save {
	struct save_ctx *c;
	uint32_t vid;
	const struct sd_inode_header *h;
	uint64_t nr;
};

static int save_hyper_leaf(uint64_t oid, void *arg)
{
	struct hyper_save *hs = arg;

	return save_object(hs->c, oid, hs->h, false) < 0 ? -1 : 0;
}

static int save_hyper_data(uint32_t idx, uint32_t owner, void *arg)
{
	struct hyper_save *hs = arg;
	uint64_t oid = vid_to_data_oid(owner, idx);

	progress(hs->c);
	if (save_object(hs->c, oid, hs->h, false) < 0)
		return -1;
	if (owner != hs->vid)
		idset_add(&hs->c->ref_vids, owner);
	return 0;
}

static int save_hyper(struct save_ctx *c, uint32_t vid,
		      const struct sd_inode_header *h)
{
	struct hyper_save hs = { .c = c, .vid = vid, .h = h,
				 .nr = inode_nr_objs(h) ? inode_nr_objs(h) : 1 };
	struct vdi_inode in;
	int ret;

	/* the inode carries the root; no ledgers: no reference counting */
	if (save_object(c, vid_to_vdi_oid(vid), h, false) < 0 ||
	    open_vdi_vid(vid, &in, true))
		return -1;
	idset_add(&c->saved_vids, vid);
	ret = vi_for_each_leaf(in.vi, save_hyper_leaf, &hs) ||
	      vi_for_each(in.vi, save_hyper_data, &hs) ? -1 : 0;
	free_inode(&in);
	return ret;
}

static void count_vdi(uint32_t vid, const struct sd_inode_header *h,
		      const uint32_t *index, uint32_t nr, void *data)
{
	struct save_ctx *c = data;

	c->nr_vdis += selected(c, h->name);
}

static void visit_save(uint32_t vid, const struct sd_inode_header *h,
		       const uint32_t *index, uint32_t nr, void *data)
{
	struct save_ctx *c = data;

	if (c->err || !selected(c, h->name))
		return;
	if (h->store_policy ? save_hyper(c, vid, h) :
	    save_vdi(c, vid, h, index, nr))
		c->err = 1;
	c->vdis_done++;
}

/* the inodes of VDIs whose objects were saved but that were not */
static int save_referenced(struct save_ctx *c)
{
	struct sd_inode_header h;

	for (size_t i = 0; i < c->ref_vids.cap; i++) {
		uint32_t vid = (uint32_t)c->ref_vids.slot[i];

		if (!vid || idset_has(&c->saved_vids, vid))
			continue;
		if (read_inode_header(vid, &h) ||
		    save_object(c, vid_to_vdi_oid(vid), &h, false) < 0)
			return -1;
	}
	return 0;
}

static int check_tag(const char *tag)
{
	if (!*tag || isdigit((unsigned char)*tag)) {
		fprintf(stderr, "Tag must not start with a digit (and must "
			"not be empty): %s\n", tag);
		return -1;
	}
	if (strlen(tag) >= LOG_TAG) {
		fprintf(stderr, "Tag is longer than %d characters\n",
			LOG_TAG - 1);
		return -1;
	}
	return 0;
}

/*
 * The inodes of deleted VDIs (kept, nameless, while their vids are in
 * use): a name is looked up from its hash to the first free vid, so a
 * deleted VDI left out would cut off the VDIs of the same hash after it
 */
static int save_deleted(struct save_ctx *c)
{
	uint8_t *inuse = vdi_bitmap_alloc(), *deleted = vdi_bitmap_alloc();
	struct sd_inode_header h;
	uint32_t len;
	int ret = read_vdi_bitmaps(inuse, deleted, &len);

	for (uint32_t vid = 1; !ret && vid < len * 8; vid++) {
		if (!(inuse[vid / 8] & deleted[vid / 8] & (1U << (vid % 8))))
			continue;
		if (read_inode_header(vid, &h) == SD_RES_SUCCESS &&
		    save_object(c, vid_to_vdi_oid(vid), &h, true) < 0)
			ret = -1;
	}
	vdi_bitmap_free(inuse);
	vdi_bitmap_free(deleted);
	return ret;
}

static int snapshot_save(int argc, char **argv)
{
	struct save_ctx c = {
		.dir = argv[1], .names = argv + 2, .nr_names = argc - 2,
	};
	uint8_t trunk[FARM_SHA1_LEN];
	size_t len;
	void *buf;
	bool dedup;
	int ret = EXIT_SYSFAIL;

	if (check_tag(argv[0]))
		return EXIT_USAGE;
	if (mkdir_p(c.dir)) {
		fprintf(stderr, "cannot create %s: %s\n", c.dir,
			strerror(errno));
		return EXIT_SYSFAIL;
	}
	if (parse_vdi(count_vdi, false, &c))
		goto out;
	if (c.nr_names && !c.nr_vdis) {
		fprintf(stderr, "No VDI of those names\n");
		ret = EXIT_FAILURE;
		goto out;
	}
	if (parse_vdi(visit_save, true, &c) || c.err || save_referenced(&c) ||
	    (!c.nr_names && save_deleted(&c)))
		goto out;
	show_count_progress(c.nr_vdis, c.nr_vdis, "VDIs");
	buf = trunk_encode(c.ents, c.nr_ents, &len);
	if (farm_put(c.dir, buf, (uint32_t)len, trunk, &dedup)) {
		free(buf);
		goto out;
	}
	free(buf);
	if (farm_sync(c.dir) || append_rec(c.dir, argv[0], trunk))
		goto out;
	ret = EXIT_SUCCESS;
out:
	free(c.saved_oids.slot);
	free(c.saved_vids.slot);
	free(c.ref_vids.slot);
	free(c.ents);
	return ret;
}

/* ---- list and show ---- */

static int snapshot_list(int argc, char **argv)
{
	struct snap_rec *recs;
	struct log_hdr h;
	size_t nr;

	if (read_log(argv[0], &h, &recs, &nr))
		return EXIT_SYSFAIL;
	if (!raw_output)
		printf("Index\t\tTag\t\tSnapshot Time\n");
	for (size_t i = 0; i < nr; i++) {
		time_t t = (time_t)recs[i].time;
		struct tm tm;
		char when[64];

		if (raw_output) {
			printf("%" PRIu32 " %s %" PRIu64 "\n", recs[i].idx,
			       recs[i].tag, recs[i].time);
			continue;
		}
		/* a time from the file: localtime fails on absurd ones */
		if (!localtime_r(&t, &tm) ||
		    !strftime(when, sizeof(when), "%a %b %e %H:%M:%S %Y",
			      &tm))
			snprintf(when, sizeof(when), "%" PRIu64, recs[i].time);
		printf("%" PRIu32 "\t\t%s\t\t%s\n", recs[i].idx, recs[i].tag,
		       when);
	}
	free(recs);
	return EXIT_SUCCESS;
}

/* the header of the inode saved as @e */
static int saved_header(const char *dir, const struct trunk_ent *e,
			struct sd_inode_header *h)
{
	uint32_t len;
	void *buf;

	if (farm_get(dir, e->sha1, &buf, &len))
		return -1;
	if (len < SD_INODE_HEADER_SIZE) {
		free(buf);
		fprintf(stderr, "the inode %" PRIx64 " is too short\n",
			e->oid);
		return -1;
	}
	inode_header_decode(h, buf);
	free(buf);
	return 0;
}

static int snapshot_show(int argc, char **argv)
{
	struct sd_inode_header h;
	struct trunk_ent *ents;
	struct snap_rec r;
	struct log_hdr lh;
	size_t nr;
	int n = 0, ret = EXIT_SUCCESS;

	if (find_rec(argv[1], argv[0], &lh, &r) ||
	    read_trunk(argv[1], &r, &ents, &nr))
		return EXIT_FAILURE;
	for (size_t i = 0; i < nr; i++) {
		if (!is_vdi_obj(ents[i].oid))
			continue;
		if (saved_header(argv[1], &ents[i], &h)) {
			ret = EXIT_FAILURE;
			break;
		}
		if (!h.name[0])
			continue;	/* a deleted parent, saved for its id */
		fprintf(stderr, "%d. VDI id: %" PRIx32 ", name: %s, tag: %s\n",
			++n, h.vdi_id, h.name, h.tag);
	}
	free(ents);
	return ret;
}

/* ---- load ---- */

/*
 * The options to format with: the cluster's (its vnode mode and -N base,
 * -t, -l, -F, -R: a load does not drop what the operator chose), or
 * before a format the node's own vnode mode (sheep -V or not);
 * CLUSTER_INFO reports either
 */
static void format_options(struct sd_req *req)
{
	struct cluster_info_hdr c;
	uint32_t result;

	req->cluster.flags = SD_CLUSTER_FLAG_AUTO_VNODES;
	if (dog_cluster_info(NULL, &c, &result) || result != SD_RES_SUCCESS)
		return;
	req->cluster.flags = c.flags;
	if (c.flags & SD_CLUSTER_FLAG_STABLE_VNODES)
		set_format_vnodes(req, cinfo_format_vnodes(&c));
}

static int make_fs(const struct log_hdr *h)
{
	char store[SD_MAX_STORE_NAME] = "plain";
	struct sd_req req;
	struct sd_rsp rsp;

	printf("using backend %s store\n", store);
	fflush(stdout);
	sd_init_req(&req, SD_OP_MAKE_FS);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = (uint32_t)strlen(store) + 1;
	req.cluster.copies = h->copies;
	req.cluster.copy_policy = h->policy;
	req.cluster.block_size_shift = h->shift;
	req.cluster.ctime = sd_time_now();
	format_options(&req);
	if (dog_exec(&req, store, 0, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Format failed: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	return 0;
}

/* NOTIFY_VDI_ADD: by the header's values, or with the header itself */
static int notify_vdi(const struct sd_inode_header *h, bool with_header)
{
	uint8_t buf[SD_INODE_HEADER_SIZE];
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_NOTIFY_VDI_ADD);
	req.vdi_state.new_vid = h->vdi_id;
	req.vdi_state.copies = h->nr_copies;
	req.vdi_state.copy_policy = h->copy_policy;
	req.vdi_state.block_size_shift = h->block_size_shift;
	req.vdi_state.set_bitmap = 1;
	if (with_header) {
		inode_header_encode(h, buf);
		req.flags = SD_FLAG_CMD_WRITE;
		req.data_length = sizeof(buf);
	}
	if (dog_exec(&req, buf, 0, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to register VDI %" PRIx32 ": %s\n",
			h->vdi_id, sd_strerror(rsp.result));
		return -1;
	}
	return 0;
}

static int load_object(const char *dir, const struct trunk_ent *e)
{
	uint32_t len;
	void *buf;
	int ret;

	if (farm_get(dir, e->sha1, &buf, &len))
		return -1;
	ret = dog_write_object(e->oid, 0, buf, len, 0, 0, e->copies,
			       e->policy, true) ? -1 : 0;
	free(buf);
	return ret;
}

/*
 * Register every VDI with its copies and object size, write the objects,
 * then the inodes, and register each VDI again from its inode (snapshot,
 * deleted, parent): its data objects are written before it turns into a
 * read-only snapshot.
 */
static int load_all(const char *dir, const struct trunk_ent *e, size_t nr)
{
	struct sd_inode_header h;
	size_t done = 0;

	for (size_t i = 0; i < nr; i++)
		if (is_vdi_obj(e[i].oid) &&
		    (saved_header(dir, &e[i], &h) || notify_vdi(&h, false)))
			return -1;
	for (size_t i = 0; i < nr; i++) {
		if (is_vdi_obj(e[i].oid))
			continue;
		if (load_object(dir, &e[i]))
			return -1;
		show_count_progress(++done, nr, "objects");
	}
	for (size_t i = 0; i < nr; i++) {
		if (!is_vdi_obj(e[i].oid))
			continue;
		if (load_object(dir, &e[i]) || saved_header(dir, &e[i], &h) ||
		    notify_vdi(&h, true))
			return -1;
		show_count_progress(++done, nr, "objects");
	}
	return 0;
}

/* every object readable and intact, before the cluster is formatted */
static int verify_all(const char *dir, const struct trunk_ent *e, size_t nr)
{
	uint32_t len;
	void *buf;

	for (size_t i = 0; i < nr; i++) {
		if (farm_get(dir, e[i].sha1, &buf, &len))
			return -1;
		free(buf);
		if (len != e[i].len) {
			fprintf(stderr, "object %" PRIx64 " has %" PRIu32
				" bytes, not %" PRIu32 "\n", e[i].oid, len,
				e[i].len);
			return -1;
		}
	}
	return 0;
}

static int snapshot_load(int argc, char **argv)
{
	struct trunk_ent *ents;
	struct snap_rec r;
	struct log_hdr h;
	size_t nr;
	int ret;

	if (argc > 2) {
		fprintf(stderr, "Loading some VDIs of a snapshot is not "
			"supported: load all of it, or save only those\n");
		return EXIT_USAGE;
	}
	if (find_rec(argv[1], argv[0], &h, &r) ||
	    read_trunk(argv[1], &r, &ents, &nr))
		return EXIT_FAILURE;
	/* a cluster whose new VDIs were coded needs the zones for it */
	if (h.policy && ec_refused(h.copies, h.policy)) {
		free(ents);
		return EXIT_FAILURE;
	}
	if (verify_all(argv[1], ents, nr)) {
		fprintf(stderr, "The snapshot is damaged: the cluster is left "
			"as it is\n");
		free(ents);
		return EXIT_FAILURE;
	}
	/* a load formats the cluster: as cluster format, it asks first */
	if (cluster_has_vdis() &&
	    refuse_any_in_use("load a snapshot into the cluster")) {
		free(ents);
		return EXIT_FAILURE;
	}
	if (!cluster_forced() && cluster_has_vdis() &&
	    !confirm("Caution! The cluster is not empty: loading a snapshot "
		     "formats it, which destroys every VDI and all of its "
		     "data.")) {
		free(ents);
		return EXIT_SUCCESS;
	}
	ret = make_fs(&h) || load_all(argv[1], ents, nr) ? EXIT_SYSFAIL :
	      EXIT_SUCCESS;
	free(ents);
	return ret;
}

const struct subcommand cluster_snapshot_cmds[] = {
	{ "save", "<tag> <dir> [vdi...]", NULL,
	  "save the VDIs of the cluster into <dir>", NULL, 0, 2,
	  snapshot_save },
	{ "list", "<dir>", "r", "list the snapshots in <dir>", NULL, 0, 1,
	  snapshot_list },
	{ "load", "<tag|index> <dir>", "f",
	  "format the cluster and load a snapshot into it", NULL,
	  CMD_NEED_NODELIST, 2, snapshot_load },
	{ "show", "<tag|index> <dir>", NULL,
	  "list the VDIs of a snapshot", NULL, 0, 2, snapshot_show },
	{ NULL },
};
