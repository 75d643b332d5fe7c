// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sheepfs: the files of vdi/.
 *
 * The directory is a table of every live VDI (READ_VDIS, READ_DEL_VDIS and
 * one header read per VDI), refreshed when older than a second.  A current
 * VDI is the file <name>, a snapshot <name>@<tag> (or <name>@<snap id>
 * when it has no tag or its tag clashes with another file).
 *
 * An open VDI file keeps the inode's data index in memory, shared by every
 * handle of that file and re-read on each open.  I/O follows
 * protocol.md §12.4-§12.5: reads go to the object named by the index
 * entry, writes overwrite an object the VDI owns, or create it (copying
 * from a parent snapshot's object first) and then set the index entry.
 * Creations of one index are serialised: a writer that finds the index
 * being created waits for it and then overwrites.  A hyper volume's index
 * is its B-tree (lib/vindex.c over this process's connections, used under
 * the file's lock): entries are looked up and set through it, the root
 * and leaf objects it changes written before the creation returns.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "btree.h"
#include "inode.h"
#include "net.h"
#include "proto.h"
#include "sheepfs.h"
#include "util.h"
#include "vindex.h"

#define TABLE_TTL_MS		1000	/* directory table lifetime */
#define VDI_BITMAP_SIZE		(SD_NR_VDIS / 8)
#define INDEX_READ_CHUNK	(1U << 20)
#define DELETE_BATCH		128	/* index entries zeroed per write */

bool sfs_allow_delete;
bool sfs_sync_writes;

/* ---- requests ---- */

int sd_res_to_errno(uint32_t result)
{
	switch (result) {
	case SD_RES_SUCCESS:
		return 0;
	case SD_RES_NO_VDI:
	case SD_RES_NO_TAG:
		return -ENOENT;
	case SD_RES_READONLY:
		return -EROFS;
	case SD_RES_NO_SPACE:
		return -ENOSPC;
	case SD_RES_VDI_LOCKED:
		return -EBUSY;
	case SD_RES_NO_MEM:
		return -ENOMEM;
	case SD_RES_INVALID_PARMS:
		return -EINVAL;
	}
	return -EIO;
}

/* run @req; the result code, SD_RES_EIO when the cluster did not answer */
static uint32_t exec_req(struct sd_req *req, void *data, uint32_t buf_len,
			 struct sd_rsp *rsp)
{
	if (sfs_exec(req, data, buf_len, rsp, 0))
		return SD_RES_EIO;
	return rsp->result;
}

static uint32_t obj_read(uint64_t oid, void *buf, uint32_t len, uint32_t off,
			 uint8_t copies, uint8_t policy)
{
	struct sd_req req;
	struct sd_rsp rsp;
	uint32_t ret;

	sd_init_req(&req, SD_OP_READ_OBJ);
	req.data_length = len;
	req.obj.oid = oid;
	req.obj.offset = off;
	req.obj.copies = copies;
	req.obj.copy_policy = policy;
	ret = exec_req(&req, buf, len, &rsp);
	if (ret == SD_RES_SUCCESS && rsp.data_length < len)
		memset((uint8_t *)buf + rsp.data_length, 0,
		       len - rsp.data_length);
	return ret;
}

struct obj_write {
	uint64_t oid;
	uint64_t cow_oid;
	uint32_t off;
	uint16_t flags;
	uint8_t copies;
	uint8_t policy;
	bool create;
};

static uint32_t obj_write(const struct obj_write *w, const void *buf,
			  uint32_t len)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, w->create ? SD_OP_CREATE_AND_WRITE_OBJ :
			  SD_OP_WRITE_OBJ);
	req.flags = w->flags | SD_FLAG_CMD_WRITE;
	if (w->cow_oid)
		req.flags |= SD_FLAG_CMD_COW;
	req.data_length = len;
	req.obj.oid = w->oid;
	req.obj.cow_oid = w->cow_oid;
	req.obj.offset = w->off;
	req.obj.copies = w->copies;
	req.obj.copy_policy = w->policy;
	return exec_req(&req, (void *)buf, 0, &rsp);
}

/* write @len bytes at @off of VDI @vid's inode, durably */
static uint32_t inode_write(uint32_t vid, uint8_t copies, const void *buf,
			    uint32_t len, uint32_t off)
{
	struct obj_write w = {
		.oid = vid_to_vdi_oid(vid),
		.off = off,
		.flags = SD_FLAG_CMD_DIRECT,
		.copies = copies,
	};

	return obj_write(&w, buf, len);
}

static void fill_name_tag(uint8_t *buf, const char *name, const char *tag)
{
	memset(buf, 0, SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN);
	memcpy(buf, name, strnlen(name, SD_MAX_VDI_LEN - 1));
	memcpy(buf + SD_MAX_VDI_LEN, tag, strnlen(tag, SD_MAX_VDI_TAG_LEN - 1));
}

/* GET_VDI_INFO of the current VDI @name */
static uint32_t lookup_current(const char *name, uint32_t *vid)
{
	uint8_t buf[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN];
	struct sd_req req;
	struct sd_rsp rsp;
	uint32_t ret;

	fill_name_tag(buf, name, "");
	sd_init_req(&req, SD_OP_GET_VDI_INFO);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(buf);
	ret = exec_req(&req, buf, 0, &rsp);
	if (ret == SD_RES_SUCCESS)
		*vid = rsp.vdi.vdi_id;
	return ret;
}

static uint32_t read_header(uint32_t vid, struct sd_inode_header *h)
{
	uint8_t *buf = xmalloc(SD_INODE_HEADER_SIZE);
	uint32_t ret;

	ret = obj_read(vid_to_vdi_oid(vid), buf, SD_INODE_HEADER_SIZE, 0, 0,
		       0);
	if (ret == SD_RES_SUCCESS)
		inode_header_decode(h, buf);
	free(buf);
	return ret;
}

static uint32_t obj_shift(const struct sd_inode_header *h)
{
	return h->block_size_shift ? h->block_size_shift :
	       SD_DEFAULT_BLOCK_SIZE_SHIFT;
}

/* entries of the flat index that a VDI of @size covers */
static uint32_t nr_index(uint64_t size, uint32_t shift)
{
	return (uint32_t)MIN(inode_nr_objs(size, (uint8_t)shift),
			     (uint64_t)SD_INODE_DATA_INDEX);
}

/* ---- inode images ---- */

struct inode_img {
	uint32_t vid;
	struct sd_inode_header h;
	uint32_t *index;
	uint32_t nr;
	uint8_t *root;		/* a hyper volume's index area instead */
};

static uint32_t read_index(struct inode_img *img)
{
	uint8_t *buf = xmalloc(INDEX_READ_CHUNK);
	uint32_t done = 0, ret = SD_RES_SUCCESS;

	while (done < img->nr && ret == SD_RES_SUCCESS) {
		uint32_t n = MIN(img->nr - done, INDEX_READ_CHUNK / 4);

		ret = obj_read(vid_to_vdi_oid(img->vid), buf, n * 4,
			       inode_index_offset(done), img->h.nr_copies, 0);
		if (ret == SD_RES_SUCCESS)
			le32_array_decode(img->index + done, n, buf);
		done += n;
	}
	free(buf);
	return ret;
}

/* a hyper volume's B-tree root, the inode's index area */
static int load_root(struct inode_img *img)
{
	uint32_t ret;

	if (img->h.store_policy != 1 ||
	    img->h.block_size_shift != SD_DEFAULT_BLOCK_SIZE_SHIFT)
		return -EOPNOTSUPP;	/* a layout this sheepfs does not know */
	img->root = xmalloc(BT_NODE_SIZE);
	ret = obj_read(vid_to_vdi_oid(img->vid), img->root, BT_NODE_SIZE,
		       SD_INODE_INDEX_OFFSET, img->h.nr_copies, 0);
	if (ret != SD_RES_SUCCESS) {
		free(img->root);
		img->root = NULL;
		return sd_res_to_errno(ret);
	}
	return 0;
}

static void img_free(struct inode_img *img)
{
	free(img->index);
	free(img->root);
	img->index = NULL;
	img->root = NULL;
}

/* ---- a hyper volume's B-tree index through this process's requests ---- */

struct hyper_io {
	uint32_t vid;
	uint8_t copies;
};

static int hnode_read(void *arg, uint64_t oid, uint8_t *buf)
{
	const struct hyper_io *h = arg;

	return obj_read(oid, buf, BT_NODE_SIZE, 0, h->copies, 0) ==
	       SD_RES_SUCCESS ? 0 : -1;
}

static int hnode_write(void *arg, uint64_t oid, const uint8_t *buf,
		       uint32_t off, uint32_t len, bool create)
{
	const struct hyper_io *h = arg;
	struct obj_write w = {
		.oid = oid, .off = off, .flags = SD_FLAG_CMD_DIRECT,
		.copies = h->copies, .create = create,
	};

	return obj_write(&w, buf, len) == SD_RES_SUCCESS ? 0 : -1;
}

static int hinode_write(void *arg, const uint8_t *buf, uint32_t off,
			uint32_t len)
{
	const struct hyper_io *h = arg;

	return inode_write(h->vid, h->copies, buf, len, off) ==
	       SD_RES_SUCCESS ? 0 : -1;
}

/* the index of @img's hyper volume (its root taken over); @h must live as
 * long as the index */
static struct vdi_index *hyper_open(struct inode_img *img,
				    struct hyper_io *h)
{
	struct vi_io io = {
		{ hnode_read, hnode_write, h }, hinode_write, h,
	};
	struct vdi_index *vi;

	h->vid = img->vid;
	h->copies = img->h.nr_copies;
	vi = vi_open_btree(img->vid, img->root, img->h.btree_counter, &io);
	img->root = NULL;
	return vi;
}

/* the header and (with @with_index) the index of @vid: a flat array, or a
 * hyper volume's root */
static int load_inode(uint32_t vid, struct inode_img *img, bool with_index)
{
	uint32_t ret;

	memset(img, 0, sizeof(*img));
	img->vid = vid;
	ret = read_header(vid, &img->h);
	if (ret != SD_RES_SUCCESS)
		return sd_res_to_errno(ret);
	if (!img->h.name[0])
		return -ENOENT;		/* deleted meanwhile */
	if (!with_index)
		return 0;
	if (img->h.store_policy)
		return load_root(img);
	img->nr = nr_index(img->h.vdi_size, obj_shift(&img->h));
	img->index = xzalloc((size_t)MAX(img->nr, 1U) * 4);
	ret = read_index(img);
	if (ret != SD_RES_SUCCESS) {
		free(img->index);
		img->index = NULL;
		return sd_res_to_errno(ret);
	}
	return 0;
}

/* ---- the directory table ---- */

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vdi_ent *tab;		/* sorted by fname */
static size_t nr_tab;
static bool tab_valid;
static uint64_t tab_time;

static bool fname_ok(const char *s)
{
	return s[0] && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

static void ent_set_alt_name(struct vdi_ent *e)
{
	snprintf(e->fname, sizeof(e->fname), "%s@%u", e->name, e->snap_id);
}

static bool fill_ent(struct vdi_ent *e, uint32_t vid,
		     const struct sd_inode_header *h)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->name, h->name, SD_MAX_VDI_LEN - 1);
	memcpy(e->tag, h->tag, SD_MAX_VDI_TAG_LEN - 1);
	if (!fname_ok(e->name))
		return false;
	e->vid = vid;
	e->snap_id = h->snap_id;
	e->size = h->vdi_size;
	e->snapshot = h->snap_ctime != 0;
	e->store_policy = h->store_policy;
	e->mtime = (e->snapshot ? h->snap_ctime : h->create_time) >> 32;
	if (!e->snapshot)
		snprintf(e->fname, sizeof(e->fname), "%s", e->name);
	else if (e->tag[0] && !strchr(e->tag, '/'))
		snprintf(e->fname, sizeof(e->fname), "%s@%s", e->name,
			 e->tag);
	else
		ent_set_alt_name(e);
	return true;
}

/* by name; on a clash the current VDI, then the newest snapshot first */
static int ent_cmp(const void *a, const void *b)
{
	const struct vdi_ent *x = a, *y = b;
	int c = strcmp(x->fname, y->fname);

	if (c)
		return c;
	if (x->snapshot != y->snapshot)
		return x->snapshot ? 1 : -1;
	return x->snap_id < y->snap_id ? 1 : x->snap_id > y->snap_id ? -1 : 0;
}

/* sort, give clashing snapshots their id names, drop what still clashes */
static size_t table_sort(struct vdi_ent *t, size_t n)
{
	bool renamed = false;
	size_t k = 0;

	if (!n)
		return 0;
	qsort(t, n, sizeof(*t), ent_cmp);
	for (size_t i = 1; i < n; i++) {
		char old[sizeof(t[i].fname)];

		if (strcmp(t[i].fname, t[i - 1].fname) || !t[i].snapshot)
			continue;
		memcpy(old, t[i].fname, sizeof(old));
		ent_set_alt_name(&t[i]);
		renamed |= strcmp(old, t[i].fname) != 0;
	}
	if (renamed)
		qsort(t, n, sizeof(*t), ent_cmp);
	for (size_t i = 0; i < n; i++)
		if (!k || strcmp(t[i].fname, t[k - 1].fname))
			t[k++] = t[i];
	return k;
}

static uint32_t read_bitmap(uint8_t opcode, uint8_t *map)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, opcode);
	req.data_length = VDI_BITMAP_SIZE;
	memset(map, 0, VDI_BITMAP_SIZE);
	return exec_req(&req, map, VDI_BITMAP_SIZE, &rsp);
}

/* a new table of every live VDI; 0 or -EIO */
static int table_build(struct vdi_ent **out, size_t *nr_out)
{
	uint8_t *inuse = xmalloc(VDI_BITMAP_SIZE);
	uint8_t *deleted = xmalloc(VDI_BITMAP_SIZE);
	struct vdi_ent *t = NULL;
	size_t n = 0, cap = 0;
	int ret = -EIO;

	if (read_bitmap(SD_OP_READ_VDIS, inuse) != SD_RES_SUCCESS ||
	    read_bitmap(SD_OP_READ_DEL_VDIS, deleted) != SD_RES_SUCCESS)
		goto out;
	for (uint32_t byte = 0; byte < VDI_BITMAP_SIZE; byte++) {
		uint8_t live = inuse[byte] & (uint8_t)~deleted[byte];

		for (uint32_t bit = 0; live && bit < 8; bit++) {
			uint32_t vid = byte * 8 + bit, r;
			struct sd_inode_header h;

			if (!(live & (1U << bit)) || !vid)
				continue;
			r = read_header(vid, &h);
			if (r == SD_RES_NO_OBJ)
				continue;
			if (r != SD_RES_SUCCESS)
				goto out;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				t = xrealloc(t, cap * sizeof(*t));
			}
			if (h.name[0] && fill_ent(&t[n], vid, &h))
				n++;
		}
	}
	*nr_out = table_sort(t, n);
	*out = t;
	t = NULL;
	ret = 0;
out:
	free(t);
	free(inuse);
	free(deleted);
	return ret;
}

static bool table_fresh(uint64_t max_age)
{
	bool fresh;

	pthread_mutex_lock(&tab_lock);
	fresh = tab_valid && now_msec() - tab_time <= max_age;
	pthread_mutex_unlock(&tab_lock);
	return fresh;
}

static void table_invalidate(void)
{
	pthread_mutex_lock(&tab_lock);
	tab_valid = false;
	pthread_mutex_unlock(&tab_lock);
}

/*
 * Rebuild the table unless it is younger than @max_age.  When the cluster
 * does not answer, an old table is served for one more lifetime.
 */
static int table_refresh(uint64_t max_age)
{
	struct vdi_ent *t = NULL;
	size_t n = 0;
	int ret = 0;

	if (table_fresh(max_age))
		return 0;
	pthread_mutex_lock(&refresh_lock);
	if (table_fresh(max_age))
		goto out;
	ret = table_build(&t, &n);
	pthread_mutex_lock(&tab_lock);
	if (!ret) {
		free(tab);
		tab = t;
		nr_tab = n;
	} else if (tab) {
		sd_warn("cannot list VDIs, serving the old list");
		ret = 0;
	}
	tab_valid = !ret;
	tab_time = now_msec();
	pthread_mutex_unlock(&tab_lock);
out:
	pthread_mutex_unlock(&refresh_lock);
	return ret;
}

static int fname_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vdi_ent *)a)->fname,
		      ((const struct vdi_ent *)b)->fname);
}

static bool table_find(const char *fname, struct vdi_ent *ent)
{
	struct vdi_ent key, *e;

	snprintf(key.fname, sizeof(key.fname), "%s", fname);
	pthread_mutex_lock(&tab_lock);
	e = nr_tab ? bsearch(&key, tab, nr_tab, sizeof(*tab), fname_cmp) : NULL;
	if (e)
		*ent = *e;
	pthread_mutex_unlock(&tab_lock);
	return e != NULL;
}

/* GET_VDI_INFO of a snapshot by tag or id */
static uint32_t lookup_snapshot(const char *name, const char *tag,
				uint32_t snapid)
{
	uint8_t buf[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN];
	struct sd_req req;
	struct sd_rsp rsp;

	fill_name_tag(buf, name, tag);
	sd_init_req(&req, SD_OP_GET_VDI_INFO);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(buf);
	req.vdi.snapid = snapid;
	return exec_req(&req, buf, 0, &rsp);
}

/*
 * Does the cluster know a VDI that file name @fname could stand for
 * (<name>, <name>@<tag>, <name>@<snap id>)?  Cheaper than listing all.
 */
static bool vdi_may_exist(const char *fname)
{
	char name[SD_MAX_VDI_LEN];
	const char *at = strrchr(fname, '@');
	uint32_t vid, snapid = 0;
	char *end;

	if (strlen(fname) < SD_MAX_VDI_LEN &&
	    lookup_current(fname, &vid) == SD_RES_SUCCESS)
		return true;
	if (!at || at == fname || (size_t)(at - fname) >= SD_MAX_VDI_LEN ||
	    strlen(at + 1) >= SD_MAX_VDI_TAG_LEN || !at[1])
		return false;
	memcpy(name, fname, (size_t)(at - fname));
	name[at - fname] = 0;
	if (lookup_snapshot(name, at + 1, 0) == SD_RES_SUCCESS)
		return true;
	errno = 0;
	snapid = (uint32_t)strtoul(at + 1, &end, 10);
	return !errno && !*end && snapid &&
	       lookup_snapshot(name, "", snapid) == SD_RES_SUCCESS;
}

/* a fresher size of a VDI than the table's (read on open) */
static void table_set_size(const char *fname, uint32_t vid, uint64_t size)
{
	struct vdi_ent key, *e;

	snprintf(key.fname, sizeof(key.fname), "%s", fname);
	pthread_mutex_lock(&tab_lock);
	e = nr_tab ? bsearch(&key, tab, nr_tab, sizeof(*tab), fname_cmp) : NULL;
	if (e && e->vid == vid)
		e->size = size;
	pthread_mutex_unlock(&tab_lock);
}

int vdi_lookup(const char *fname, struct vdi_ent *ent)
{
	int ret;

	if (strlen(fname) >= sizeof(ent->fname))
		return -ENOENT;
	ret = table_refresh(TABLE_TTL_MS);
	if (ret)
		return ret;
	if (table_find(fname, ent))
		return 0;
	/* created since the table was built? */
	if (!vdi_may_exist(fname))
		return -ENOENT;
	ret = table_refresh(0);
	if (ret)
		return ret;
	return table_find(fname, ent) ? 0 : -ENOENT;
}

int vdi_list(void (*fn)(const struct vdi_ent *ent, void *arg), void *arg)
{
	/* a listing is rare and should show what dog just did */
	int ret = table_refresh(0);

	if (ret)
		return ret;
	pthread_mutex_lock(&tab_lock);
	for (size_t i = 0; i < nr_tab; i++)
		fn(&tab[i], arg);
	pthread_mutex_unlock(&tab_lock);
	return 0;
}

/* ---- open VDIs ---- */

struct svdi {
	struct svdi *next;
	char fname[sizeof(((struct vdi_ent *)0)->fname)];
	char name[SD_MAX_VDI_LEN];
	bool snapshot;
	int refs;			/* under reg_lock */

	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t cond;		/* a creation finished */
	/*
	 * A writer holds the VDI's lock (LOCK_VDI with KLOCK, as the NBD
	 * export and Kelpie's QEMU driver do) on a connection of its own,
	 * so that dog refuses to delete or roll back a VDI open for writing;
	 * closing it lets go.  -1 while nobody opened the file to write.
	 */
	int lock_fd;
	uint32_t vid;
	uint64_t size;
	uint8_t nr_copies;
	uint8_t copy_policy;
	uint32_t obj_size;
	uint32_t *index;
	uint32_t nr_index;		/* entries (a hyper volume: objects) */
	struct vdi_index *vi;		/* a hyper volume's, else NULL */
	struct hyper_io hio;		/* for vi */
	uint32_t *busy;			/* indices being created */
	size_t nr_busy;
	size_t cap_busy;
	uint64_t wgen;			/* cached writes done */
	uint64_t fgen;			/* ... of which flushed */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct svdi *open_list;

static struct svdi *reg_find(const char *fname)
{
	for (struct svdi *v = open_list; v; v = v->next)
		if (!strcmp(v->fname, fname))
			return v;
	return NULL;
}

static struct svdi *reg_get(const struct vdi_ent *ent)
{
	struct svdi *v;

	pthread_mutex_lock(&reg_lock);
	v = reg_find(ent->fname);
	if (!v) {
		v = xzalloc(sizeof(*v));
		memcpy(v->fname, ent->fname, sizeof(v->fname));
		memcpy(v->name, ent->name, sizeof(v->name));
		v->snapshot = ent->snapshot;
		v->lock_fd = -1;
		pthread_mutex_init(&v->lock, NULL);
		pthread_cond_init(&v->cond, NULL);
		v->next = open_list;
		open_list = v;
	}
	v->refs++;
	pthread_mutex_unlock(&reg_lock);
	return v;
}

static void svdi_free(struct svdi *v)
{
	if (v->lock_fd >= 0)
		close(v->lock_fd);
	pthread_mutex_destroy(&v->lock);
	pthread_cond_destroy(&v->cond);
	free(v->index);
	if (v->vi)
		vi_close(v->vi);
	free(v->busy);
	free(v);
}

void vdi_close(struct svdi *v)
{
	struct svdi **p;

	pthread_mutex_lock(&reg_lock);
	if (--v->refs) {
		pthread_mutex_unlock(&reg_lock);
		return;
	}
	for (p = &open_list; *p && *p != v; p = &(*p)->next)
		;
	if (*p)
		*p = v->next;
	pthread_mutex_unlock(&reg_lock);
	svdi_free(v);
}

bool vdi_open_size(const char *fname, uint64_t *size)
{
	struct svdi *v;

	pthread_mutex_lock(&reg_lock);
	v = reg_find(fname);
	if (v) {
		pthread_mutex_lock(&v->lock);
		*size = v->size;
		pthread_mutex_unlock(&v->lock);
	}
	pthread_mutex_unlock(&reg_lock);
	return v != NULL;
}

static void set_geometry(struct svdi *v, const struct sd_inode_header *h)
{
	v->size = h->vdi_size;
	v->nr_copies = h->nr_copies;
	v->copy_policy = h->copy_policy;
	v->obj_size = UINT32_C(1) << obj_shift(h);
}

/*
 * Adopt a freshly read inode (under v->lock).  For the same VDI, entries
 * this process set stay set: their creation may still be on its way.
 */
static void install(struct svdi *v, struct inode_img *img)
{
	if (v->vi) {
		vi_close(v->vi);
		v->vi = NULL;
	}
	if (img->root) {
		/* what this process set is in the stored tree already */
		free(v->index);
		v->index = NULL;
		v->nr_index = (uint32_t)MIN(inode_nr_objs(img->h.vdi_size,
							  SD_DEFAULT_BLOCK_SIZE_SHIFT),
					    (uint64_t)UINT32_MAX);
		v->vi = hyper_open(img, &v->hio);
		v->vid = img->vid;
		set_geometry(v, &img->h);
		return;
	}
	if (v->index && v->vid == img->vid) {
		for (uint32_t i = 0; i < MIN(v->nr_index, img->nr); i++)
			if (v->index[i] == v->vid)
				img->index[i] = v->vid;
	}
	free(v->index);
	v->index = img->index;
	v->nr_index = img->nr;
	img->index = NULL;
	v->vid = img->vid;
	set_geometry(v, &img->h);
}

/*
 * The first open for writing takes the VDI's lock; 0, -EBUSY when another
 * client (QEMU, an NBD export, another mount) holds it, or another -errno
 */
static int take_lock(struct svdi *v)
{
	uint8_t buf[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN];
	struct sd_req req;
	struct sd_rsp rsp;
	int fd, ret = 0;

	pthread_mutex_lock(&v->lock);
	if (v->lock_fd >= 0)
		goto out;
	fill_name_tag(buf, v->name, "");
	sd_init_req(&req, SD_OP_LOCK_VDI);
	req.flags = SD_FLAG_CMD_WRITE | SD_FLAG_CMD_KLOCK;
	req.data_length = sizeof(buf);
	if (sfs_exec_held(&req, buf, 0, &rsp, &fd)) {
		ret = -EIO;
		goto out;
	}
	ret = sd_res_to_errno(rsp.result);
	if (ret) {
		close(fd);
		if (ret == -EBUSY)
			sd_warn("%s is in use by another client: not opened "
				"for writing", v->fname);
		goto out;
	}
	v->lock_fd = fd;
out:
	pthread_mutex_unlock(&v->lock);
	return ret;
}

int vdi_open(const char *fname, bool write, struct svdi **out)
{
	struct inode_img img;
	struct vdi_ent ent;
	uint32_t vid;
	struct svdi *v;
	int ret;

	ret = vdi_lookup(fname, &ent);
	if (ret)
		return ret;
	if (ent.snapshot && write)
		return -EROFS;
	vid = ent.vid;
	/* the table may be a second old: a snapshot changes the vid */
	if (!ent.snapshot) {
		ret = sd_res_to_errno(lookup_current(ent.name, &vid));
		if (ret)
			return ret;
	}
	ret = load_inode(vid, &img, true);
	if (ret)
		return ret;
	v = reg_get(&ent);
	if (write && !ent.snapshot) {
		ret = take_lock(v);
		if (ret) {
			img_free(&img);
			vdi_close(v);
			return ret;
		}
	}
	pthread_mutex_lock(&v->lock);
	install(v, &img);
	pthread_mutex_unlock(&v->lock);
	img_free(&img);
	table_set_size(fname, vid, img.h.vdi_size);
	*out = v;
	return 0;
}

/*
 * A write to the current VDI was refused as read-only: someone took a
 * snapshot, and the VDI has a new id (protocol.md §12.13).  Look it up
 * again and adopt its inode.  0 if the caller should retry.
 */
static int follow_current(struct svdi *v, uint32_t old)
{
	struct inode_img img;
	uint32_t vid;

	if (lookup_current(v->name, &vid) != SD_RES_SUCCESS || vid == old)
		return -1;
	if (load_inode(vid, &img, true)) {
		img_free(&img);
		return -1;
	}
	sd_notice("%s: now VDI %" PRIx32 " (was %" PRIx32 ")", v->name, vid,
		  old);
	pthread_mutex_lock(&v->lock);
	if (v->vid == old)
		install(v, &img);
	pthread_mutex_unlock(&v->lock);
	img_free(&img);
	return 0;
}

/* ---- reads ---- */

/* the owner of @idx (under v->lock): 0, or -1 (a hyper volume's read) */
static int entry_get(struct svdi *v, uint32_t idx, uint32_t *owner)
{
	*owner = 0;
	if (idx >= v->nr_index)
		return 0;
	if (v->vi)
		return vi_get(v->vi, idx, owner);
	*owner = v->index[idx];
	return 0;
}

static int read_chunk(struct svdi *v, uint32_t idx, char *buf, uint32_t len,
		      uint32_t ooff)
{
	uint32_t owner;
	uint8_t copies, policy;
	int ret;

	pthread_mutex_lock(&v->lock);
	ret = entry_get(v, idx, &owner);
	copies = v->nr_copies;
	policy = v->copy_policy;
	pthread_mutex_unlock(&v->lock);
	if (ret)
		return -EIO;
	if (!owner) {
		memset(buf, 0, len);
		return 0;
	}
	return sd_res_to_errno(obj_read(vid_to_data_oid(owner, idx), buf,
					len, ooff, copies, policy));
}

static int write_chunk(struct svdi *v, uint32_t idx, const char *buf,
		       uint32_t len, uint32_t ooff);

/*
 * Split [pos, pos + size) of a VDI of @vsize bytes at object boundaries and
 * run @rd (buf is read into) or @wr (buf is written from) on each piece;
 * the bytes done, or the first error if nothing was done.
 */
static ssize_t for_each_chunk(struct svdi *v, char *rbuf, const char *wbuf,
			      size_t size, uint64_t pos, uint64_t vsize,
			      uint32_t obj)
{
	size_t done = 0;

	size = (size_t)MIN((uint64_t)size, vsize - pos);
	while (done < size) {
		uint64_t p = pos + done;
		uint32_t idx = (uint32_t)(p / obj), ooff = (uint32_t)(p % obj);
		uint32_t n = (uint32_t)MIN((uint64_t)(obj - ooff),
					   (uint64_t)(size - done));
		int ret = rbuf ? read_chunk(v, idx, rbuf + done, n, ooff) :
				 write_chunk(v, idx, wbuf + done, n, ooff);

		if (ret)
			return done ? (ssize_t)done : ret;
		done += n;
	}
	return (ssize_t)done;
}

static void snapshot_size(struct svdi *v, uint64_t *vsize, uint32_t *obj)
{
	pthread_mutex_lock(&v->lock);
	*vsize = v->size;
	*obj = v->obj_size;
	pthread_mutex_unlock(&v->lock);
}

ssize_t vdi_read(struct svdi *v, char *buf, size_t size, off_t off)
{
	uint64_t vsize;
	uint32_t obj;

	snapshot_size(v, &vsize, &obj);
	if (off < 0)
		return -EINVAL;
	if ((uint64_t)off >= vsize)
		return 0;
	return for_each_chunk(v, buf, NULL, size, (uint64_t)off, vsize, obj);
}

/* ---- writes ---- */

static bool busy_has(const struct svdi *v, uint32_t idx)
{
	for (size_t i = 0; i < v->nr_busy; i++)
		if (v->busy[i] == idx)
			return true;
	return false;
}

static void busy_add(struct svdi *v, uint32_t idx)
{
	if (v->nr_busy == v->cap_busy) {
		v->cap_busy = v->cap_busy ? v->cap_busy * 2 : 8;
		v->busy = xrealloc(v->busy, v->cap_busy * sizeof(*v->busy));
	}
	v->busy[v->nr_busy++] = idx;
}

static void busy_del(struct svdi *v, uint32_t idx)
{
	for (size_t i = 0; i < v->nr_busy; i++) {
		if (v->busy[i] == idx) {
			v->busy[i] = v->busy[--v->nr_busy];
			break;
		}
	}
	pthread_cond_broadcast(&v->cond);
}

static uint32_t set_index(uint32_t vid, uint8_t copies, uint32_t idx)
{
	uint8_t buf[4];

	put_le32(buf, vid);
	return inode_write(vid, copies, buf, sizeof(buf),
			   inode_index_offset(idx));
}

/*
 * Create object @idx (copying the parent's) and point a flat index at it
 * (@flat; a hyper volume's entry is set by the caller, under the lock)
 */
static uint32_t create_chunk(struct obj_write *w, uint32_t owner,
			     uint32_t vid, uint32_t idx, const char *buf,
			     uint32_t len, bool flat)
{
	uint32_t ret;

	/*
	 * Durable even in write-back mode: after a crash an index entry
	 * must never name an object that was lost.
	 */
	w->create = true;
	w->flags = 0;
	w->cow_oid = owner ? vid_to_data_oid(owner, idx) : 0;
	ret = obj_write(w, buf, len);
	if (ret == SD_RES_SUCCESS && flat)
		ret = set_index(vid, w->copies, idx);
	return ret;
}

/* one chunk inside object @idx; returns a result code, the vid used */
static uint32_t try_write_chunk(struct svdi *v, uint32_t idx, const char *buf,
				uint32_t len, uint32_t ooff, uint32_t *used)
{
	struct obj_write w = { .off = ooff };
	uint32_t owner, vid, ret;
	bool flat;

	pthread_mutex_lock(&v->lock);
	for (;;) {
		if (idx >= v->nr_index) {
			pthread_mutex_unlock(&v->lock);
			return SD_RES_NO_SPACE;
		}
		if (entry_get(v, idx, &owner)) {
			pthread_mutex_unlock(&v->lock);
			return SD_RES_EIO;
		}
		if (owner == v->vid || !busy_has(v, idx))
			break;
		pthread_cond_wait(&v->cond, &v->lock);
	}
	flat = !v->vi;
	vid = *used = v->vid;
	w.oid = vid_to_data_oid(vid, idx);
	w.flags = sfs_sync_writes ? 0 : SD_FLAG_CMD_CACHE;
	w.copies = v->nr_copies;
	w.policy = v->copy_policy;
	if (owner != vid)
		busy_add(v, idx);
	pthread_mutex_unlock(&v->lock);

	if (owner == vid)
		ret = obj_write(&w, buf, len);
	else
		ret = create_chunk(&w, owner, vid, idx, buf, len, flat);

	pthread_mutex_lock(&v->lock);
	if (owner != vid) {
		if (ret == SD_RES_SUCCESS && !flat)
			/* a snapshot meanwhile: the writer follows it, again */
			ret = v->vid != vid || !v->vi ? SD_RES_READONLY :
			      vi_set(v->vi, idx, vid) ? SD_RES_EIO :
			      SD_RES_SUCCESS;
		else if (ret == SD_RES_SUCCESS && v->vid == vid)
			v->index[idx] = vid;
		busy_del(v, idx);
	}
	if (ret == SD_RES_SUCCESS && (w.flags & SD_FLAG_CMD_CACHE))
		v->wgen++;
	pthread_mutex_unlock(&v->lock);
	return ret;
}

static int write_chunk(struct svdi *v, uint32_t idx, const char *buf,
		       uint32_t len, uint32_t ooff)
{
	uint32_t ret, vid;

	for (int tries = 0;; tries++) {
		ret = try_write_chunk(v, idx, buf, len, ooff, &vid);
		if (ret != SD_RES_READONLY || v->snapshot || tries >= 2 ||
		    follow_current(v, vid))
			break;
	}
	if (ret != SD_RES_SUCCESS)
		sd_err("%s: write of object %" PRIu32 " failed: %s", v->fname,
		       idx, sd_strerror(ret));
	return sd_res_to_errno(ret);
}

ssize_t vdi_write(struct svdi *v, const char *buf, size_t size, off_t off)
{
	uint64_t vsize;
	uint32_t obj;

	if (v->snapshot)
		return -EROFS;
	snapshot_size(v, &vsize, &obj);
	if (off < 0)
		return -EINVAL;
	/* like a block device: no writing past the end */
	if ((uint64_t)off >= vsize)
		return size ? -ENOSPC : 0;
	return for_each_chunk(v, NULL, buf, size, (uint64_t)off, vsize, obj);
}

/* FLUSH_VDI when writes were sent with SD_FLAG_CMD_CACHE since the last */
int vdi_flush(struct svdi *v)
{
	struct sd_req req;
	struct sd_rsp rsp;
	uint64_t gen;
	uint32_t vid, ret;

	pthread_mutex_lock(&v->lock);
	gen = v->wgen;
	vid = v->vid;
	ret = gen == v->fgen;
	pthread_mutex_unlock(&v->lock);
	if (ret)
		return 0;
	sd_init_req(&req, SD_OP_FLUSH_VDI);
	req.obj.oid = vid_to_vdi_oid(vid);
	ret = exec_req(&req, NULL, 0, &rsp);
	/* a sheep without write-back answers INVALID_PARMS: all durable */
	if (ret != SD_RES_SUCCESS && ret != SD_RES_INVALID_PARMS) {
		sd_err("%s: flush failed: %s", v->fname, sd_strerror(ret));
		return -EIO;
	}
	pthread_mutex_lock(&v->lock);
	if (gen > v->fgen)
		v->fgen = gen;
	pthread_mutex_unlock(&v->lock);
	return 0;
}

/* ---- resize and delete ---- */

/* an open file of the VDI grows too */
static void grow_open(const char *fname, uint32_t vid, uint64_t size)
{
	struct svdi *v;

	pthread_mutex_lock(&reg_lock);
	v = reg_find(fname);
	if (v) {
		pthread_mutex_lock(&v->lock);
		if (v->vid == vid && size > v->size && v->vi) {
			v->nr_index = (uint32_t)MIN(inode_nr_objs(size,
						SD_DEFAULT_BLOCK_SIZE_SHIFT),
						    (uint64_t)UINT32_MAX);
			v->size = size;
		} else if (v->vid == vid && size > v->size) {
			uint32_t nr = nr_index(size, (uint32_t)__builtin_ctz(
					       v->obj_size));

			v->index = xrealloc(v->index, (size_t)MAX(nr, 1U) * 4);
			if (nr > v->nr_index)
				memset(v->index + v->nr_index, 0,
				       (size_t)(nr - v->nr_index) * 4);
			v->nr_index = MAX(nr, v->nr_index);
			v->size = size;
		}
		pthread_mutex_unlock(&v->lock);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* grow like `dog vdi resize`: write the header with the new size */
int vdi_truncate(const char *fname, uint64_t size)
{
	uint8_t *buf = NULL;
	struct sd_inode_header h;
	struct vdi_ent ent;
	uint32_t vid, r;
	int ret;

	ret = vdi_lookup(fname, &ent);
	if (ret)
		return ret;
	if (ent.snapshot)
		return -EROFS;
	ret = sd_res_to_errno(lookup_current(ent.name, &vid));
	if (ret)
		return ret;
	ret = sd_res_to_errno(read_header(vid, &h));
	if (ret)
		return ret;
	if (size == h.vdi_size)
		return 0;
	if (size < h.vdi_size)
		return -EPERM;		/* shrinking is not supported */
	if (!h.store_policy && size > inode_max_size((uint8_t)obj_shift(&h)))
		return -EFBIG;
	if (size > SD_MAX_VDI_SIZE)
		return -EFBIG;
	h.vdi_size = size;
	buf = xmalloc(SD_INODE_HEADER_SIZE);
	inode_header_encode(&h, buf);
	r = inode_write(vid, h.nr_copies, buf, SD_INODE_HEADER_SIZE, 0);
	free(buf);
	if (r != SD_RES_SUCCESS) {
		sd_err("%s: resize failed: %s", fname, sd_strerror(r));
		return sd_res_to_errno(r);
	}
	grow_open(fname, vid, size);
	table_invalidate();
	return 0;
}

/* zero the non-zero index entries in batches (objects.md §10.1) */
static uint32_t clear_index(struct inode_img *img)
{
	uint8_t *zero = xzalloc((size_t)img->nr * 4 + 4);
	uint32_t i = 0, ret = SD_RES_SUCCESS;

	while (ret == SD_RES_SUCCESS) {
		uint32_t first, last = 0, cnt = 0;

		while (i < img->nr && !img->index[i])
			i++;
		if (i >= img->nr)
			break;
		for (first = i; i < img->nr && cnt < DELETE_BATCH; i++) {
			if (img->index[i]) {
				last = i;
				cnt++;
			}
		}
		ret = inode_write(img->vid, img->h.nr_copies, zero,
				  (last - first + 1) * 4,
				  inode_index_offset(first));
	}
	free(zero);
	return ret;
}

static uint32_t del_vdi(const struct vdi_ent *ent)
{
	uint8_t buf[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN];
	struct sd_req req;
	struct sd_rsp rsp;

	fill_name_tag(buf, ent->name, "");
	sd_init_req(&req, SD_OP_DEL_VDI);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(buf);
	req.vdi.snapid = ent->snapshot ? ent->snap_id : 0;
	return exec_req(&req, buf, 0, &rsp);
}

static bool is_open(const char *fname)
{
	bool open;

	pthread_mutex_lock(&reg_lock);
	open = reg_find(fname) != NULL;
	pthread_mutex_unlock(&reg_lock);
	return open;
}

/* delete like `dog vdi delete`: release the objects, then DEL_VDI */
int vdi_unlink(const char *fname)
{
	struct inode_img img;
	struct vdi_ent ent;
	uint32_t vid, r;
	int ret;

	if (!sfs_allow_delete)
		return -EPERM;
	ret = vdi_lookup(fname, &ent);
	if (ret)
		return ret;
	if (is_open(fname))
		return -EBUSY;
	vid = ent.vid;
	if (!ent.snapshot) {
		ret = sd_res_to_errno(lookup_current(ent.name, &vid));
		if (ret)
			return ret;
	}
	ret = load_inode(vid, &img, true);
	if (ret)
		return ret;
	r = img.index ? clear_index(&img) : SD_RES_SUCCESS;
	img_free(&img);
	if (r == SD_RES_SUCCESS)
		r = del_vdi(&ent);
	table_invalidate();
	if (r != SD_RES_SUCCESS)
		sd_err("%s: delete failed: %s", fname, sd_strerror(r));
	return sd_res_to_errno(r);
}

void vdi_init(void)
{
}

void vdi_cleanup(void)
{
	pthread_mutex_lock(&tab_lock);
	free(tab);
	tab = NULL;
	nr_tab = 0;
	tab_valid = false;
	pthread_mutex_unlock(&tab_lock);
}
