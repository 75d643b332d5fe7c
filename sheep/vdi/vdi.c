// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * VDI operations: the work parts of NEW_VDI, GET_VDI_INFO/LOCK_VDI,
 * DEL_VDI and GET_VDI_ATTR (objects.md §6, §7, §8, §10) and their main
 * parts.  Work parts run on the cluster worker thread and reach objects
 * through the gateway (gw_exec_sync); main parts run on the main thread
 * of every node and update the VDI table (state/vdi.h).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "btree.h"
#include "ec.h"
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "core/request.h"
#include "gw/gw.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "vdi/hyper.h"
#include "vdi/reclaim.h"
#include "vdi/recycle.h"
#include "vdi/vdi.h"

/* ---- lookup (objects.md §6.3); cluster worker thread ---- */

struct lookup {
	char name[SD_MAX_VDI_LEN];
	char tag[SD_MAX_VDI_TAG_LEN];
	uint32_t snapid;
	/* results */
	uint32_t vid;
	uint32_t free_vid;
	uint32_t next_snapid;
	uint32_t free_gen;	/* recycling: the free vid's incarnation */
	struct sd_inode_header h;
};

static int read_header(uint32_t vid, struct sd_inode_header *h)
{
	uint8_t *buf = xmalloc(SD_INODE_HEADER_SIZE);
	int ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(vid), buf,
			       SD_INODE_HEADER_SIZE, 0, 0, 0);

	if (ret == SD_RES_SUCCESS)
		inode_header_decode(h, buf);
	free(buf);
	return ret;
}

static int find_free_range(uint32_t left, uint32_t *right, bool *wrapped)
{
	*wrapped = false;
	for (uint32_t v = left; v < SD_NR_VDIS; v++) {
		if (!vdi_test_inuse(v)) {
			*right = v;
			return SD_RES_SUCCESS;
		}
	}
	*wrapped = true;
	for (uint32_t v = 1; v < left; v++) {
		if (!vdi_test_inuse(v)) {
			*right = v;
			return SD_RES_SUCCESS;
		}
	}
	return SD_RES_FULL_VDI;
}

/* returns SUCCESS, NO_VDI, NO_TAG or an I/O error; -1 = keep scanning */
static int check_candidate(struct lookup *lk, uint32_t vid, bool *seen_cur)
{
	bool has_tag = lk->tag[0] || lk->snapid;
	struct sd_inode_header h;
	int ret;

	if (!vdi_test_inuse(vid) && !vdi_test_deleted(vid))
		return -1;
	ret = read_header(vid, &h);
	if (ret == SD_RES_NO_OBJ)
		return -1;
	if (ret != SD_RES_SUCCESS)
		return ret;
	if (strncmp(h.name, lk->name, SD_MAX_VDI_LEN))
		return -1;
	if (has_tag) {
		if (!h.snap_ctime) {
			*seen_cur = true;
			return -1;
		}
		if ((lk->tag[0] && !strncmp(h.tag, lk->tag,
					    SD_MAX_VDI_TAG_LEN)) ||
		    (lk->snapid && h.snap_id == lk->snapid)) {
			lk->vid = vid;
			lk->h = h;
			return SD_RES_SUCCESS;
		}
		return -1;
	}
	lk->next_snapid = h.snap_id + 1;
	lk->h = h;
	lk->vid = vid;
	return h.snap_ctime ? SD_RES_NO_VDI : SD_RES_SUCCESS;
}

static int scan_range(struct lookup *lk, uint32_t hi, uint32_t lo,
		      bool *seen_cur)
{
	for (uint32_t v = hi; v-- > lo;) {
		int ret = check_candidate(lk, v, seen_cur);

		if (ret >= 0)
			return ret;
	}
	return -1;
}

/*
 * With VID recycling (objects.md §6.4): slots are freed, so runs are not
 * contiguous: every vid in use or deleted, from high to low.  The free
 * slot is NEW_VDI's to pick (recycle.c).  A name whose newest inode is a
 * snapshot still in use is found as that snapshot: the name is not
 * created again while its snapshots remain.
 */
static int lookup_recycling(struct lookup *lk)
{
	bool has_tag = lk->tag[0] || lk->snapid, seen_cur = false;

	for (uint32_t v = vdi_prev_used(SD_NR_VDIS); v; v = vdi_prev_used(v)) {
		int ret = check_candidate(lk, v, &seen_cur);

		if (ret < 0)
			continue;
		if (ret == SD_RES_NO_VDI && !has_tag && vdi_test_inuse(lk->vid))
			return SD_RES_SUCCESS;
		return ret;
	}
	return seen_cur ? SD_RES_NO_TAG : SD_RES_NO_VDI;
}

static int vdi_lookup(struct lookup *lk)
{
	uint32_t left = sd_hash_vdi(lk->name), right;
	bool wrapped, seen_cur = false;
	int ret;

	if (recycling()) {
		lk->vid = 0;
		lk->next_snapid = 1;
		lk->free_vid = 0;
		return lookup_recycling(lk);
	}
	if (!left)
		left = 1;
	lk->vid = 0;
	lk->next_snapid = 1;
	ret = find_free_range(left, &right, &wrapped);
	if (ret != SD_RES_SUCCESS)
		return ret;
	lk->free_vid = right;
	if (right == left)
		return SD_RES_NO_VDI;
	if (wrapped) {
		ret = scan_range(lk, right, 1, &seen_cur);
		if (ret < 0)
			ret = scan_range(lk, SD_NR_VDIS, left, &seen_cur);
	} else {
		ret = scan_range(lk, right, left, &seen_cur);
	}
	if (ret >= 0)
		return ret;
	return seen_cur ? SD_RES_NO_TAG : SD_RES_NO_VDI;
}

static int parse_name(struct request *req, struct lookup *lk, bool name_only)
{
	uint32_t len = req->rq.data_length;

	memset(lk, 0, sizeof(*lk));
	if (!(req->rq.flags & SD_FLAG_CMD_WRITE) ||
	    (len != SD_MAX_VDI_LEN && (name_only || len != SD_MAX_VDI_LEN +
				       SD_MAX_VDI_TAG_LEN)))
		return SD_RES_INVALID_PARMS;
	memcpy(lk->name, req->data, SD_MAX_VDI_LEN);
	lk->name[SD_MAX_VDI_LEN - 1] = 0;
	if (len > SD_MAX_VDI_LEN) {
		memcpy(lk->tag, (char *)req->data + SD_MAX_VDI_LEN,
		       SD_MAX_VDI_TAG_LEN);
		lk->tag[SD_MAX_VDI_TAG_LEN - 1] = 0;
	}
	lk->snapid = req->rq.vdi.snapid;
	if (!lk->name[0])
		return SD_RES_INVALID_PARMS;
	return SD_RES_SUCCESS;
}

int vdi_lookup_work(struct request *req)
{
	struct lookup lk;
	int ret = parse_name(req, &lk, false);

	if (ret != SD_RES_SUCCESS)
		return ret;
	ret = vdi_lookup(&lk);
	if (ret != SD_RES_SUCCESS)
		return ret;
	req->rp.vdi.vdi_id = lk.vid;
	req->rp.vdi.copies = lk.h.nr_copies;
	req->rp.vdi.block_size_shift = lk.h.block_size_shift;
	return SD_RES_SUCCESS;
}

/* ---- NEW_VDI (objects.md §7) ---- */

/*
 * An inode's header and the used part of its index and grefs; a hyper
 * volume's B-tree root instead (no grefs: objects.md §12)
 */
struct inode_img {
	struct sd_inode_header h;
	uint32_t nr;
	uint32_t *idx;
	uint32_t *gref;		/* generation, count pairs */
	uint8_t *root;		/* BT_NODE_SIZE, hyper volumes */
};

static void inode_img_free(struct inode_img *ino)
{
	free(ino->idx);
	free(ino->gref);
	free(ino->root);
}

static uint32_t inode_used_entries(const struct sd_inode_header *h)
{
	uint64_t nr = inode_nr_objs(h->vdi_size, h->block_size_shift ?
				    h->block_size_shift :
				    SD_DEFAULT_BLOCK_SIZE_SHIFT);

	return (uint32_t)MIN(nr, (uint64_t)SD_INODE_DATA_INDEX);
}

static int inode_load(uint32_t vid, struct inode_img *ino)
{
	uint64_t oid = vid_to_vdi_oid(vid);
	uint8_t *buf;
	int ret;

	memset(ino, 0, sizeof(*ino));
	ret = read_header(vid, &ino->h);
	if (ret != SD_RES_SUCCESS)
		return ret;
	if (ino->h.store_policy > 1)
		return SD_RES_NO_SUPPORT;
	if (ino->h.store_policy)
		return hyper_read_root(vid, ino->h.nr_copies, &ino->root);
	ino->nr = inode_used_entries(&ino->h);
	ino->idx = xzalloc((size_t)ino->nr * 4 + 4);
	ino->gref = xzalloc((size_t)ino->nr * 8 + 8);
	if (!ino->nr)
		return SD_RES_SUCCESS;
	buf = xmalloc((size_t)ino->nr * 8);
	ret = gw_exec_sync(SD_OP_READ_OBJ, oid, buf, ino->nr * 4,
			   SD_INODE_INDEX_OFFSET, ino->h.nr_copies, 0);
	if (ret == SD_RES_SUCCESS) {
		le32_array_decode(ino->idx, ino->nr, buf);
		ret = gw_exec_sync(SD_OP_READ_OBJ, oid, buf, ino->nr * 8,
				   SD_INODE_GREF_OFFSET, ino->h.nr_copies, 0);
	}
	if (ret == SD_RES_SUCCESS)
		le32_array_decode(ino->gref, (size_t)ino->nr * 2, buf);
	free(buf);
	if (ret != SD_RES_SUCCESS)
		inode_img_free(ino);
	return ret;
}

static int write_grefs(uint32_t vid, uint8_t copies, const uint32_t *gref,
		       uint32_t nr)
{
	uint8_t *buf;
	int ret;

	if (!nr)
		return SD_RES_SUCCESS;
	buf = xmalloc((size_t)nr * 8);
	le32_array_encode(gref, (size_t)nr * 2, buf);
	ret = gw_exec_sync(SD_OP_WRITE_OBJ, vid_to_vdi_oid(vid), buf, nr * 8,
			   SD_INODE_GREF_OFFSET, copies, SD_FLAG_CMD_WRITE);
	free(buf);
	return ret;
}

/* the copy of an index entry gains a reference: count++ (§9.2) */
static int inode_share(uint32_t vid, struct inode_img *ino)
{
	for (uint32_t i = 0; i < ino->nr; i++)
		if (ino->idx[i])
			ino->gref[2 * i + 1]++;
	return write_grefs(vid, ino->h.nr_copies, ino->gref, ino->nr);
}

static int write_header(const struct sd_inode_header *h, uint32_t off,
			uint32_t len)
{
	uint8_t *buf = xmalloc(SD_INODE_HEADER_SIZE);
	int ret;

	inode_header_encode(h, buf);
	ret = gw_exec_sync(SD_OP_WRITE_OBJ, vid_to_vdi_oid(h->vdi_id),
			   buf + off, len, off, h->nr_copies,
			   SD_FLAG_CMD_WRITE);
	free(buf);
	return ret;
}

/*
 * The index area of a live hyper volume in @buf (BT_NODE_SIZE): @src's
 * root (its leaves already copied: hyper.c), or an empty B-tree (§12).
 * Returns the length that counts.
 */
static uint32_t hyper_root(const struct inode_img *src, uint8_t *buf)
{
	uint32_t len;

	if (src && src->root) {
		len = bt_node_len(src->root);
		memcpy(buf, src->root, len);
		return len;
	}
	/* what follows the header is zero: the rest is a hole */
	bt_init(buf);
	return BT_HDR;
}

/*
 * Create inode @h; with @src its index is copied and every shared entry
 * gets the reference {generation + 1, 0}.  One create carries header,
 * index and references (zeros between them are holes in the store): an
 * inode whose references a crash left out would take the objects it
 * shares for its own, and its first copy-on-write would delete them from
 * under the snapshot (test 093 found it).
 */
static int create_inode(const struct sd_inode_header *h,
			const struct inode_img *src)
{
	uint32_t nr = src ? MIN(src->nr, inode_used_entries(h)) : 0;
	size_t len = nr ? SD_INODE_GREF_OFFSET + (size_t)nr * 8 :
			  SD_INODE_HEADER_SIZE;
	bool hyper = h->store_policy && h->name[0];
	uint8_t *buf;
	int ret;

	if (hyper)
		len = SD_INODE_INDEX_OFFSET + BT_NODE_SIZE;
	buf = xzalloc(len);
	inode_header_encode(h, buf);
	if (hyper)
		len = SD_INODE_INDEX_OFFSET +
		      hyper_root(src, buf + SD_INODE_INDEX_OFFSET);
	if (nr) {
		uint8_t *g = buf + SD_INODE_GREF_OFFSET;

		le32_array_encode(src->idx, nr, buf + SD_INODE_INDEX_OFFSET);
		for (uint32_t i = 0; i < nr; i++)
			if (src->idx[i])
				put_le32(g + 8 * i, src->gref[2 * i] + 1);
	}
	ret = gw_exec_sync(SD_OP_CREATE_AND_WRITE_OBJ, vid_to_vdi_oid(h->vdi_id),
			   buf, (uint32_t)len, 0, h->nr_copies,
			   SD_FLAG_CMD_WRITE);
	free(buf);
	return ret;
}

static void new_header_from(struct sd_inode_header *h,
			    const struct sd_inode_header *src,
			    const char *name, uint32_t vid, uint32_t snap_id,
			    uint32_t parent)
{
	*h = *src;
	memcpy(h->name, name, sizeof(h->name));
	memset(h->tag, 0, sizeof(h->tag));
	h->create_time = sd_time_now();
	h->snap_ctime = 0;
	h->vm_clock_nsec = 0;
	h->vm_state_size = 0;
	h->snap_id = snap_id;
	h->vdi_id = vid;
	h->parent_vdi_id = parent;
}

/*
 * A hyper volume shares objects only with read-only volumes (hyper.c
 * removes an object when no other volume of its family names it, which
 * relies on a volume's own entries never changing once others copied
 * them): only a snapshot can be a base.
 */
static bool hyper_base_ok(const struct inode_img *src)
{
	if (!src->root || src->h.snap_ctime)
		return true;
	sd_err("hyper volume %" PRIx32 " is not a snapshot: not a base",
	       src->h.vdi_id);
	return false;
}

/* a hyper volume's leaf objects for new volume @h, before its inode */
static int copy_hyper_index(struct inode_img *src,
			    const struct sd_inode_header *h)
{
	if (!src->root)
		return SD_RES_SUCCESS;
	return hyper_copy_root(src->root, src->h.nr_copies, h);
}

/* snapshot (base == current) or rebase (base != current), §7.2 */
static int vdi_snapshot(struct request *req, struct lookup *lk)
{
	uint32_t cur = lk->vid, base = req->rq.vdi.base_vdi_id;
	struct inode_img src;
	struct sd_inode_header h;
	int ret;

	if (!base)
		base = cur;
	ret = inode_load(base, &src);
	if (ret == SD_RES_NO_SUPPORT)
		return ret;
	if (ret != SD_RES_SUCCESS)
		return base == cur ? SD_RES_VDI_READ : SD_RES_BASE_VDI_READ;
	if (base != cur && !hyper_base_ok(&src)) {
		ret = SD_RES_INVALID_PARMS;
		goto out;
	}
	/*
	 * In the order a crash can stop anywhere in: the shared references
	 * first (a crash after it leaks objects, never frees them), then the
	 * new working VDI, and only then is the current one made a snapshot.
	 * The other way round, a crash left the name with snapshots only:
	 * "No VDI found" (test 093).  A crash before the last step leaves two
	 * working VDIs of the name; the newer one is the current.
	 */
	if (inode_share(base, &src) != SD_RES_SUCCESS) {
		ret = SD_RES_BASE_VDI_WRITE;
		goto out;
	}
	new_header_from(&h, &src.h, lk->name, lk->free_vid, lk->next_snapid,
			base);
	recycle_stamp(&h, lk->free_gen);
	if (req->rq.vdi.vdi_size > h.vdi_size)
		h.vdi_size = req->rq.vdi.vdi_size;
	ret = copy_hyper_index(&src, &h);
	if (ret == SD_RES_SUCCESS)
		ret = create_inode(&h, &src);
	if (ret != SD_RES_SUCCESS) {
		ret = SD_RES_VDI_WRITE;
		goto out;
	}
	/*
	 * A hyper volume's header is not written whole: its btree_counter
	 * is the index's (a writer's split may have moved it since).
	 */
	if (base == cur && !src.root) {
		src.h.snap_ctime = sd_time_now();
		ret = write_header(&src.h, 0, SD_INODE_HEADER_SIZE);
	} else {
		struct sd_inode_header ch = lk->h;

		ch.snap_ctime = sd_time_now();
		ret = write_header(&ch, 512, 16);
	}
	if (ret != SD_RES_SUCCESS) {
		ret = SD_RES_BASE_VDI_WRITE;
		goto out;
	}
	req->aux = cur;		/* becomes a snapshot everywhere */
	req->rp.vdi.vdi_id = h.vdi_id;
	req->rp.vdi.copies = h.nr_copies;
	req->rp.vdi.block_size_shift = h.block_size_shift;
out:
	inode_img_free(&src);
	return ret;
}

/* a new name whose index starts as a copy of @base's (§7.1 step 5) */
static int vdi_clone(struct request *req, struct lookup *lk, uint32_t base)
{
	struct inode_img src;
	struct sd_inode_header h;
	int ret = inode_load(base, &src);

	if (ret == SD_RES_NO_SUPPORT)
		return ret;
	if (ret != SD_RES_SUCCESS)
		return SD_RES_BASE_VDI_READ;
	/*
	 * A deleted VDI (dog cannot name one, a raw request can): its
	 * objects are gone or going (reclaim.c), and it was not the
	 * client's to read anyway
	 */
	if (!src.h.name[0]) {
		ret = SD_RES_NO_VDI;
		goto out;
	}
	if (!hyper_base_ok(&src)) {
		ret = SD_RES_INVALID_PARMS;
		goto out;
	}
	if (inode_share(base, &src) != SD_RES_SUCCESS) {
		ret = SD_RES_BASE_VDI_WRITE;
		goto out;
	}
	new_header_from(&h, &src.h, lk->name, lk->free_vid,
			lk->next_snapid, base);
	recycle_stamp(&h, lk->free_gen);
	h.vdi_size = req->rq.vdi.vdi_size ? req->rq.vdi.vdi_size :
		     src.h.vdi_size;
	if (req->rq.vdi.copies) {
		h.nr_copies = req->rq.vdi.copies;
		h.copy_policy = req->rq.vdi.copy_policy;
	}
	ret = copy_hyper_index(&src, &h);
	if (ret == SD_RES_SUCCESS)
		ret = create_inode(&h, &src);
	if (ret != SD_RES_SUCCESS) {
		ret = SD_RES_VDI_WRITE;
		goto out;
	}
	req->rp.vdi.vdi_id = h.vdi_id;
	req->rp.vdi.copies = h.nr_copies;
	req->rp.vdi.block_size_shift = h.block_size_shift;
out:
	inode_img_free(&src);
	return ret;
}

/*
 * The code of a new coded VDI (its own, or the cluster's when it names no
 * copies) must be one the codec has, with D+P copies; hyper volumes are
 * not coded
 */
static bool code_ok(const struct sd_req *rq)
{
	uint8_t copies = rq->vdi.copies ? rq->vdi.copies : cstate->copies;
	uint8_t policy = rq->vdi.copies ? rq->vdi.copy_policy :
			 cstate->copy_policy;
	struct ec_code c;

	return !ec_init_policy(&c, policy) && copies == c.d + c.p &&
	       !rq->vdi.store_policy;
}

/*
 * The object size of a new VDI and whether its size fits: a flat index
 * addresses 2^20 objects, a hyper volume 16 PiB of 4 MiB objects
 * (objects.md §12).  SD_RES_SUCCESS or INVALID_PARMS.
 */
static int new_vdi_shift(const struct sd_req *rq, uint8_t *shift)
{
	uint64_t max;

	*shift = rq->vdi.block_size_shift ? rq->vdi.block_size_shift :
		 cstate->block_size_shift;
	max = inode_max_size(*shift);
	if (rq->vdi.store_policy) {
		if (rq->vdi.block_size_shift &&
		    rq->vdi.block_size_shift != SD_DEFAULT_BLOCK_SIZE_SHIFT)
			return SD_RES_INVALID_PARMS;
		*shift = SD_DEFAULT_BLOCK_SIZE_SHIFT;
		max = SD_MAX_VDI_SIZE;
	}
	if (*shift < SD_MIN_BLOCK_SIZE_SHIFT ||
	    *shift > KELPIE_MAX_BLOCK_SIZE_SHIFT ||
	    rq->vdi.copies > SD_MAX_COPIES || rq->vdi.store_policy > 1 ||
	    rq->vdi.vdi_size > max)
		return SD_RES_INVALID_PARMS;
	return SD_RES_SUCCESS;
}

int vdi_new_work(struct request *req)
{
	const struct sd_req *rq = &req->rq;
	struct sd_inode_header h;
	struct lookup lk;
	uint8_t shift;
	int ret = parse_name(req, &lk, true);

	if (ret != SD_RES_SUCCESS)
		return ret;
	ret = new_vdi_shift(rq, &shift);
	if (ret != SD_RES_SUCCESS)
		return ret;
	lk.snapid = 0;
	lk.tag[0] = 0;
	ret = vdi_lookup(&lk);
	if (recycling() && ((ret == SD_RES_SUCCESS && rq->vdi.snapid) ||
			    (ret == SD_RES_NO_VDI && !rq->vdi.snapid))) {
		lk.free_vid = recycle_pick_vid(&lk.free_gen);
		if (!lk.free_vid)
			return SD_RES_FULL_VDI;
	}
	if (rq->vdi.snapid) {
		if (ret != SD_RES_SUCCESS)
			return ret == SD_RES_NO_TAG ? SD_RES_NO_VDI : ret;
		return vdi_snapshot(req, &lk);
	}
	if (ret == SD_RES_SUCCESS)
		return SD_RES_VDI_EXIST;
	if (ret != SD_RES_NO_VDI)
		return ret;
	/* a code (doc/erasure-coding.md); snapshots keep their VDI's */
	if ((rq->vdi.copies ? rq->vdi.copy_policy :
	     !rq->vdi.base_vdi_id && cstate->copy_policy) && !code_ok(rq))
		return SD_RES_INVALID_PARMS;
	if (rq->vdi.base_vdi_id)
		return vdi_clone(req, &lk, rq->vdi.base_vdi_id);
	memset(&h, 0, sizeof(h));
	memcpy(h.name, lk.name, sizeof(h.name));
	h.create_time = sd_time_now();
	h.vdi_size = rq->vdi.vdi_size;
	h.copy_policy = rq->vdi.copies ? rq->vdi.copy_policy :
			cstate->copy_policy;
	h.nr_copies = rq->vdi.copies ? rq->vdi.copies : cstate->copies;
	h.block_size_shift = shift;
	h.store_policy = rq->vdi.store_policy;
	h.snap_id = lk.next_snapid;
	h.vdi_id = lk.free_vid;
	/* snap_id continues a deleted VDI's snapshots; parent stays 0 */
	h.parent_vdi_id = 0;
	recycle_stamp(&h, lk.free_gen);
	ret = create_inode(&h, NULL);
	if (ret != SD_RES_SUCCESS) {
		sd_err("cannot create inode of %s: %s", lk.name,
		       sd_strerror((uint32_t)ret));
		/* say why when the reason is the cluster's, not the disk's */
		return ret == SD_RES_HALT || ret == SD_RES_NO_SPACE ? ret :
		       SD_RES_VDI_WRITE;
	}
	req->rp.vdi.vdi_id = h.vdi_id;
	req->rp.vdi.copies = h.nr_copies;
	req->rp.vdi.block_size_shift = shift;
	return SD_RES_SUCCESS;
}

int vdi_notify_add(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		   const struct cluster_ctx *ctx)
{
	struct vdi_info *vi = vdi_get(rsp->vdi.vdi_id, true);

	if (ctx->aux) {
		struct vdi_info *old = vdi_get(ctx->aux, true);

		old->snapshot = 1;
	}
	vi->parent_vid = req->vdi.base_vdi_id ? req->vdi.base_vdi_id :
			 ctx->aux;
	vi->parent_unknown = 0;
	vi->nr_copies = rsp->vdi.copies;
	vi->block_size_shift = rsp->vdi.block_size_shift;
	vi->copy_policy = req->vdi.copies ? req->vdi.copy_policy :
			  cstate->copy_policy;
	vi->deleted = 0;
	vi->snapshot = 0;
	if (vi->recycled)
		vdi_clear_free(rsp->vdi.vdi_id);
	vdi_set_inuse(rsp->vdi.vdi_id, true);
	return SD_RES_SUCCESS;
}

/* ---- NOTIFY_VDI_ADD (dog cluster snapshot load) ---- */

/* no code, or one whose strips are the copies */
static bool policy_fits(const struct sd_inode_header *h)
{
	struct ec_code c;

	return !h->copy_policy || (!ec_init_policy(&c, h->copy_policy) &&
				   h->nr_copies == c.d + c.p);
}

static int restore_from_header(uint32_t vid, const void *data, uint32_t len)
{
	struct sd_inode_header h;

	if (len != SD_INODE_HEADER_SIZE)
		return SD_RES_INVALID_PARMS;
	inode_header_decode(&h, data);
	if (h.vdi_id != vid || !h.nr_copies || h.nr_copies > SD_MAX_COPIES ||
	    !policy_fits(&h) ||
	    (h.block_size_shift &&
	     (h.block_size_shift < SD_MIN_BLOCK_SIZE_SHIFT ||
	      h.block_size_shift > KELPIE_MAX_BLOCK_SIZE_SHIFT)))
		return SD_RES_INVALID_PARMS;
	vdi_set_from_header(&h);
	return SD_RES_SUCCESS;
}

/*
 * Without payload (Sheepdog's form): @new_vid gets the copies, policy and
 * object size of the request, in use if set_bitmap, and @old_vid becomes
 * a snapshot.  Kelpie's dog also sends the VDI's inode header, written
 * before: the VDI then takes its state from it (snapshot, deleted,
 * parent), as a sheep does from the inodes in its store at start-up.
 */
int vdi_notify_restore(const struct sd_req *req, struct sd_rsp *rsp,
		       void *data, const struct cluster_ctx *ctx)
{
	uint32_t vid = req->vdi_state.new_vid;
	struct vdi_info *vi, *old;

	if (req->data_length)
		return restore_from_header(vid, data, req->data_length);
	vi = vdi_get(vid, true);
	vi->nr_copies = req->vdi_state.copies;
	vi->copy_policy = req->vdi_state.copy_policy;
	vi->block_size_shift = req->vdi_state.block_size_shift;
	vi->deleted = 0;
	if (req->vdi_state.set_bitmap)
		vdi_set_inuse(vid, true);
	if (req->vdi_state.old_vid) {
		old = vdi_get(req->vdi_state.old_vid, false);
		if (old)
			old->snapshot = 1;
	}
	return SD_RES_SUCCESS;
}

/* ---- DEL_VDI (objects.md §10.2) ---- */

int vdi_del_work(struct request *req)
{
	struct sd_inode_header h;
	struct node_id owner;
	struct lookup lk;
	uint32_t nr, *idx;
	uint8_t *buf;
	char who[64];
	int ret = parse_name(req, &lk, false);

	if (ret != SD_RES_SUCCESS)
		return ret;
	ret = vdi_lookup(&lk);
	if (ret != SD_RES_SUCCESS)
		return ret;
	req->rp.vdi.vdi_id = lk.vid;
	h = lk.h;
	if (!h.name[0] && !h.vdi_size)
		return SD_RES_SUCCESS;
	/* object storage's volumes go only through the gateway (front/s3) */
	if (!req->internal && !strncmp(lk.name, ".kelpie/", 8)) {
		sd_notice("VDI %s not deleted: it belongs to object storage",
			  lk.name);
		return SD_RES_VDI_LOCKED;
	}
	/*
	 * A client's VDI is not deleted from under it (dog checks first).
	 * Right after a snapshot the client's lock is still on the snapshot
	 * (the parent) until its next write finds the new current VDI.
	 */
	if (vdi_locked(lk.vid, &owner) ||
	    (!h.snap_ctime && h.parent_vdi_id &&
	     vdi_locked(h.parent_vdi_id, &owner))) {
		sd_notice("VDI %s not deleted: a client of %s holds it", lk.name,
			  addr_to_str(owner.addr, who, sizeof(who)));
		return SD_RES_VDI_LOCKED;
	}
	if (h.store_policy) {
		bool retain;

		ret = hyper_remove_objects(lk.vid, h.nr_copies, &retain);
		if (ret != SD_RES_SUCCESS)
			return ret;
		memset(h.name, 0, sizeof(h.name));
		h.vdi_size = 0;
		/* an index naming objects in use stays (hyper.c) */
		if (retain)
			return write_header(&h, 0, SD_INODE_HEADER_SIZE);
		return create_inode(&h, NULL);
	}
	nr = (uint32_t)DIV_ROUND_UP(h.vdi_size,
				    (uint64_t)1 << h.block_size_shift);
	if (nr > SD_INODE_DATA_INDEX)
		nr = SD_INODE_DATA_INDEX;
	buf = xmalloc((size_t)nr * 4 + 1);
	idx = xmalloc((size_t)nr * 4 + 4);
	ret = nr ? gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(lk.vid), buf,
				nr * 4, SD_INODE_INDEX_OFFSET, h.nr_copies, 0) :
		   SD_RES_SUCCESS;
	if (ret == SD_RES_SUCCESS) {
		le32_array_decode(idx, nr, buf);
		for (uint32_t i = 0; i < nr; i++) {
			if (idx[i]) {
				/* clients zero the index first (§10.1) */
				sd_info("%s still has data: inode kept",
					lk.name);
				goto out;
			}
		}
		memset(h.name, 0, sizeof(h.name));
		h.vdi_size = 0;
		ret = create_inode(&h, NULL);
	}
out:
	free(buf);
	free(idx);
	return ret;
}

int vdi_notify_del(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		   const struct cluster_ctx *ctx)
{
	struct vdi_info *vi = vdi_get(rsp->vdi.vdi_id, true);

	vi->deleted = 1;
	vdi_set_deleted(rsp->vdi.vdi_id, true);
	/* what an earlier deletion of its family could not remove */
	vdi_reclaim_kick();
	/* the originator: the whole family deleted frees its vids */
	if (ctx->originator)
		recycle_after_delete(rsp->vdi.vdi_id);
	return SD_RES_SUCCESS;
}

/* ---- locks (cluster.md §12), only with the USE_LOCK cluster flag ---- */

int vdi_lock_main(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		  const struct cluster_ctx *ctx)
{
	struct vdi_info *vi = vdi_get(rsp->vdi.vdi_id, false);

	/* alter-copy copies it to its new layout: not to be used meanwhile */
	if (vi && vi->conv_state == VDI_CONV_COPYING)
		return SD_RES_VDI_LOCKED;
	/* the lock is real with `cluster format -l`, or when asked for */
	if (!(cstate->flags & SD_CLUSTER_FLAG_USE_LOCK) &&
	    !(req->flags & SD_FLAG_CMD_KLOCK))
		return SD_RES_SUCCESS;
	vi = vdi_get(rsp->vdi.vdi_id, true);
	if (vi->lock_state == LOCK_STATE_LOCKED)
		return SD_RES_VDI_LOCKED;
	vi->lock_state = LOCK_STATE_LOCKED;
	vi->lock_owner = ctx->sender->nid;
	return SD_RES_SUCCESS;
}

int vdi_release_main(const struct sd_req *req, struct sd_rsp *rsp,
		     void *data, const struct cluster_ctx *ctx)
{
	struct vdi_info *vi = vdi_get(req->vdi.base_vdi_id, false);

	/* KLOCK: only a lock the sender still owns (client_lock.c) */
	if (vi && (req->flags & SD_FLAG_CMD_KLOCK) &&
	    (vi->lock_state != LOCK_STATE_LOCKED ||
	     !node_id_eq(&vi->lock_owner, &ctx->sender->nid)))
		return SD_RES_SUCCESS;
	if (vi) {
		vi->lock_state = LOCK_STATE_UNLOCKED;
		memset(&vi->lock_owner, 0, sizeof(vi->lock_owner));
	}
	return SD_RES_SUCCESS;
}

/* ---- VDI attributes (objects.md §8); cluster worker, serialised ---- */

#define ATTR_KEY_OFF	528
#define ATTR_MATCH_LEN	(ATTR_KEY_OFF + SD_MAX_VDI_ATTR_KEY_LEN)

static uint32_t attr_hash(const uint8_t *attr)
{
	uint64_t h = fnv_64a_buf(attr, SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN,
				 FNV1A_64_INIT);

	h = fnv_64a_buf(attr + 520, 4, h);		/* snap_id */
	h = fnv_64a_buf(attr + ATTR_KEY_OFF, SD_MAX_VDI_ATTR_KEY_LEN, h);
	return (uint32_t)h;
}

/* same name, tag, snap_id and key? */
static bool attr_match(const uint8_t *a, const uint8_t *b)
{
	return !memcmp(a, b, 512) && !memcmp(a + 520, b + 520, 4) &&
	       !memcmp(a + ATTR_KEY_OFF, b + ATTR_KEY_OFF,
		       SD_MAX_VDI_ATTR_KEY_LEN);
}

int vdi_attr_work(struct request *req)
{
	uint16_t flags = req->rq.flags;
	uint32_t len = req->rq.data_length, vid, start, id;
	uint8_t *attr = req->data, *cur = NULL;
	struct lookup lk;
	uint8_t copies;
	int ret;

	if (!(flags & SD_FLAG_CMD_WRITE) || len < ATTR_MATCH_LEN ||
	    len > SD_ATTR_OBJ_SIZE)
		return SD_RES_INVALID_PARMS;
	memset(&lk, 0, sizeof(lk));
	memcpy(lk.name, attr, SD_MAX_VDI_LEN - 1);
	memcpy(lk.tag, attr + SD_MAX_VDI_LEN, SD_MAX_VDI_TAG_LEN - 1);
	lk.snapid = req->rq.vdi.snapid;
	ret = vdi_lookup(&lk);
	if (ret != SD_RES_SUCCESS)
		return ret;
	put_le64(attr + 512, lk.h.create_time);
	vid = sd_hash_vdi(lk.name);
	copies = (uint8_t)vdi_copies(vid);
	start = id = attr_hash(attr);
	cur = xmalloc(SD_ATTR_OBJ_SIZE);
	do {
		uint64_t oid = vid_to_attr_oid(vid, id);

		if ((flags & SD_FLAG_CMD_CREAT) && !(flags & SD_FLAG_CMD_EXCL)) {
			ret = gw_exec_sync(SD_OP_CREATE_AND_WRITE_OBJ, oid, attr,
					   len, 0, copies, SD_FLAG_CMD_WRITE);
			goto found;
		}
		ret = gw_exec_sync(SD_OP_READ_OBJ, oid, cur, SD_ATTR_OBJ_SIZE,
				   0, copies, 0);
		if (ret == SD_RES_NO_OBJ) {
			if (flags & SD_FLAG_CMD_CREAT)
				ret = gw_exec_sync(SD_OP_CREATE_AND_WRITE_OBJ,
						   oid, attr, len, 0, copies,
						   SD_FLAG_CMD_WRITE);
			goto found;
		}
		if (ret != SD_RES_SUCCESS)
			goto out;
		if (cur[0] && attr_match(cur, attr)) {
			if (flags & SD_FLAG_CMD_EXCL) {
				ret = SD_RES_VDI_EXIST;
			} else if (flags & SD_FLAG_CMD_DEL) {
				uint8_t zero = 0;

				ret = gw_exec_sync(SD_OP_WRITE_OBJ, oid, &zero,
						   1, 0, copies,
						   SD_FLAG_CMD_WRITE);
			}
			goto found;
		}
		id++;
	} while (id != start);
	ret = SD_RES_FULL_VDI;
	goto out;
found:
	req->rp.vdi.vdi_id = vid;
	req->rp.vdi.attr_id = id;
	req->rp.vdi.copies = copies;
out:
	free(cur);
	return ret;
}
