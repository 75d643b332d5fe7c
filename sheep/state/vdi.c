// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The VDI table of this node: the in-use and deleted bitmaps (objects.md
 * §6.2) and per-VDI state (§14: copies, shift, snapshot, lock), rebuilt
 * at start-up from local inodes and merged from other nodes at join.
 * Main thread, except the bitmap tests the cluster worker makes during
 * lookups.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "core/core.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "store/store.h"

#define VDI_HASH_BUCKETS 4096

struct vdi_entry {
	uint32_t vid;
	struct vdi_info info;
	struct vdi_entry *next;
};

static struct vdi_entry *vdi_hash[VDI_HASH_BUCKETS];
/* objects.md §6.2: bit per VDI id */
static uint8_t *vdi_inuse, *vdi_deleted;
/* recycling: free again, the old family's objects being removed */
static uint8_t *vdi_free;
static bool vdi_partial;	/* a member's state could not be fetched */
static int vdi_pulls;		/* fetches of other nodes' state running */
static void (*free_hook)(uint32_t vid);

static void bit_set(uint8_t *bm, uint32_t nr, bool on)
{
	if (on)
		bm[nr / 8] |= (uint8_t)(1 << (nr % 8));
	else
		bm[nr / 8] &= (uint8_t)~(1 << (nr % 8));
}

static bool bit_test(const uint8_t *bm, uint32_t nr)
{
	return bm[nr / 8] & (1 << (nr % 8));
}

void vdi_set_inuse(uint32_t vid, bool on)
{
	bit_set(vdi_inuse, vid, on);
}

void vdi_set_deleted(uint32_t vid, bool on)
{
	bit_set(vdi_deleted, vid, on);
}

bool vdi_test_inuse(uint32_t vid)
{
	return bit_test(vdi_inuse, vid);
}

bool vdi_test_deleted(uint32_t vid)
{
	return bit_test(vdi_deleted, vid);
}

bool vdi_test_free(uint32_t vid)
{
	return bit_test(vdi_free, vid);
}

uint32_t vdi_next_clear(uint32_t from)
{
	const uint64_t *w = (const uint64_t *)vdi_inuse;

	for (uint32_t v = from; v < SD_NR_VDIS;) {
		uint64_t word = w[v / 64] >> (v % 64);

		/* the rest of the word in use: next word */
		if (word == UINT64_MAX >> (v % 64)) {
			v = (v / 64 + 1) * 64;
			continue;
		}
		return v + (uint32_t)__builtin_ctzll(~word);
	}
	return 0;
}

uint32_t vdi_prev_used(uint32_t below)
{
	const uint64_t *iu = (const uint64_t *)vdi_inuse;
	const uint64_t *dl = (const uint64_t *)vdi_deleted;

	while (below > 1) {
		uint32_t v = below - 1;
		uint64_t word = (iu[v / 64] | dl[v / 64]);

		/* keep bits 0..v%64 */
		if (v % 64 != 63)
			word &= (UINT64_C(2) << (v % 64)) - 1;
		if (!word) {
			below = v / 64 * 64;
			continue;
		}
		v = v / 64 * 64 + 63 - (uint32_t)__builtin_clzll(word);
		return v ? v : 0;
	}
	return 0;
}

void vdi_set_free_hook(void (*fn)(uint32_t vid))
{
	free_hook = fn;
}

void vdi_sync_begin(void)
{
	vdi_pulls++;
}

void vdi_sync_end(void)
{
	sd_assert(vdi_pulls > 0);
	vdi_pulls--;
}

bool vdi_syncing(void)
{
	return vdi_pulls > 0;
}

int vdi_init_bitmaps(void)
{
	vdi_inuse = xzalloc(SD_NR_VDIS / 8);
	vdi_deleted = xzalloc(SD_NR_VDIS / 8);
	vdi_free = xzalloc(SD_NR_VDIS / 8);
	return 0;
}

struct vdi_info *vdi_get(uint32_t vid, bool create)
{
	struct vdi_entry *e;
	uint32_t b = vid % VDI_HASH_BUCKETS;

	for (e = vdi_hash[b]; e; e = e->next)
		if (e->vid == vid)
			return &e->info;
	if (!create)
		return NULL;
	e = xzalloc(sizeof(*e));
	e->vid = vid;
	e->info.lock_state = LOCK_STATE_UNLOCKED;
	/* until a header or a NEW_VDI says which it is */
	e->info.parent_unknown = 1;
	e->next = vdi_hash[b];
	vdi_hash[b] = e;
	return &e->info;
}

void vdi_state_mark_partial(void)
{
	if (!vdi_partial)
		sd_warn("the VDI table may lack VDIs until a restart: objects "
			"of deleted VDIs are not reclaimed meanwhile");
	vdi_partial = true;
}

struct lineage_count {
	size_t inuse;		/* entries of VDIs in use */
	size_t unknown;		/* entries whose parent is not known */
};

static void count_lineage(uint32_t vid, struct vdi_info *vi, void *arg)
{
	struct lineage_count *c = arg;

	if (vi->recycled)
		return;
	c->inuse += vdi_test_inuse(vid);
	c->unknown += vi->parent_unknown;
}

bool vdi_lineage_known(void)
{
	const uint64_t *w = (const uint64_t *)vdi_inuse;
	struct lineage_count c = { 0 };
	size_t inuse = 0;

	if (vdi_partial)
		return false;
	vdi_for_each(count_lineage, &c);
	if (c.unknown)
		return false;
	for (size_t i = 0; i < SD_NR_VDIS / 64; i++)
		inuse += (size_t)__builtin_popcountll(w[i]);
	/* a bit set by a message that made no entry: a VDI not known */
	return inuse == c.inuse;
}

void vdi_for_each(void (*fn)(uint32_t vid, struct vdi_info *vi, void *arg),
		  void *arg)
{
	for (int b = 0; b < VDI_HASH_BUCKETS; b++)
		for (struct vdi_entry *e = vdi_hash[b]; e; e = e->next)
			fn(e->vid, &e->info, arg);
}

void vdi_reset(void)
{
	for (int b = 0; b < VDI_HASH_BUCKETS; b++) {
		struct vdi_entry *e = vdi_hash[b];

		while (e) {
			struct vdi_entry *n = e->next;

			free(e);
			e = n;
		}
		vdi_hash[b] = NULL;
	}
	vdi_partial = false;
	memset(vdi_inuse, 0, SD_NR_VDIS / 8);
	memset(vdi_deleted, 0, SD_NR_VDIS / 8);
	memset(vdi_free, 0, SD_NR_VDIS / 8);
}

uint32_t vdi_copies(uint32_t vid)
{
	struct vdi_info *vi = vdi_get(vid, false);

	return vi && vi->nr_copies ? vi->nr_copies : cstate->copies;
}

/* a shift from a peer, a join message or a damaged inode may be anything */
static bool shift_known(uint8_t shift)
{
	return shift >= SD_MIN_BLOCK_SIZE_SHIFT &&
	       shift <= SD_MAX_BLOCK_SIZE_SHIFT;
}

uint8_t vdi_shift(uint32_t vid)
{
	struct vdi_info *vi = vdi_get(vid, false);

	if (vi && shift_known(vi->block_size_shift))
		return vi->block_size_shift;
	return shift_known(cstate->block_size_shift) ?
	       cstate->block_size_shift : SD_DEFAULT_BLOCK_SIZE_SHIFT;
}

/* ---- recycling: which of two states of a vid is newer ---- */

enum { PH_FREE, PH_LIVE, PH_DELETED };

static int entry_phase(const struct vdi_info *vi)
{
	return vi->recycled ? PH_FREE : vi->deleted ? PH_DELETED : PH_LIVE;
}

/* > 0 if (ga, pa) is newer; gens compare as serial numbers (RFC 1982) */
static int version_cmp(uint16_t ga, int pa, uint16_t gb, int pb)
{
	int16_t d = (int16_t)(uint16_t)(ga - gb);

	return d ? d : pa - pb;
}

/*
 * Does the entry @vi know of a newer incarnation than (@gen, @ph)?  Only
 * where recycling left its marks (a gen, a free vid): otherwise states of
 * one vid merge as they always did.
 */
static bool entry_newer(const struct vdi_info *vi, uint16_t gen, int ph)
{
	if (!vi || (vi->gen == gen && !vi->recycled && ph != PH_FREE))
		return false;
	return version_cmp(vi->gen, entry_phase(vi), gen, ph) >= 0;
}

void vdi_mark_free(uint32_t vid, uint16_t gen)
{
	struct vdi_info *vi = vdi_get(vid, true);
	bool was_free = vi->recycled;

	memset(vi, 0, sizeof(*vi));
	vi->lock_state = LOCK_STATE_UNLOCKED;
	vi->recycled = 1;
	vi->gen = gen;
	vdi_set_inuse(vid, false);
	vdi_set_deleted(vid, false);
	bit_set(vdi_free, vid, true);
	if (!was_free && free_hook)
		free_hook(vid);
}

void vdi_clear_free(uint32_t vid)
{
	struct vdi_info *vi = vdi_get(vid, true);

	vi->recycled = 0;
	bit_set(vdi_free, vid, false);
}

/* a newer incarnation than the entry's: start it afresh */
static void entry_restart(uint32_t vid, struct vdi_info *vi, uint16_t gen)
{
	memset(vi, 0, sizeof(*vi));
	vi->lock_state = LOCK_STATE_UNLOCKED;
	vi->parent_unknown = 1;
	vi->gen = gen;
	vdi_set_inuse(vid, false);
	vdi_set_deleted(vid, false);
	bit_set(vdi_free, vid, false);
}

void vdi_set_from_header(const struct sd_inode_header *h)
{
	bool kelpie = h->kelpie_magic == INODE_KELPIE_MAGIC;
	uint16_t gen = kelpie ? (uint16_t)h->recycle_gen : 0;
	int ph = kelpie && (h->kelpie_flags & INODE_FREE) ? PH_FREE :
		 !h->name[0] ? PH_DELETED : PH_LIVE;
	struct vdi_info *vi = vdi_get(h->vdi_id, false);

	/* a stale copy of an older incarnation, or a marker's older gen */
	if (entry_newer(vi, gen, ph))
		return;
	if (ph == PH_FREE) {
		vdi_mark_free(h->vdi_id, gen);
		return;
	}
	vi = vdi_get(h->vdi_id, true);
	if (vi->recycled || vi->gen != gen)
		entry_restart(h->vdi_id, vi, gen);
	vi->nr_copies = h->nr_copies;
	vi->copy_policy = h->copy_policy;
	vi->block_size_shift = h->block_size_shift;
	vi->snapshot = !!h->snap_ctime;
	vi->parent_vid = h->parent_vdi_id;
	vi->parent_unknown = 0;
	vi->deleted = !h->name[0];
	vdi_set_inuse(h->vdi_id, true);
	if (vi->deleted)
		vdi_set_deleted(h->vdi_id, true);
}

/*
 * Merge a VDI state record another node exported.  A known VDI keeps its
 * values, except that a member of a running cluster (@running) knows its
 * current number of copies better than a local inode written before an
 * ALTER_VDI_COPY that this node missed.
 */
void vdi_merge_state(const struct vdi_state *vs, bool running)
{
	int ph = (vs->pad[0] & VDI_STATE_RECYCLED) ? PH_FREE :
		 vs->deleted ? PH_DELETED : PH_LIVE;
	struct vdi_info *vi;

	if (!vs->vid || vs->vid >= SD_NR_VDIS)
		return;
	vi = vdi_get(vs->vid, false);
	/* what a node that missed a recycling says of the old family */
	if (vi && (vi->recycled || ph == PH_FREE || vi->gen != vs->recycle_gen)) {
		if (entry_newer(vi, vs->recycle_gen, ph))
			return;
		if (ph != PH_FREE) {
			entry_restart(vs->vid, vi, vs->recycle_gen);
			vi = NULL;
		}
	}
	if (ph == PH_FREE) {
		vdi_mark_free(vs->vid, vs->recycle_gen);
		return;
	}
	vdi_set_inuse(vs->vid, true);
	if (vs->deleted)
		vdi_set_deleted(vs->vid, true);
	if (vs->lock_state == LOCK_STATE_LOCKED) {
		struct vdi_info *l = vdi_get(vs->vid, true);

		l->lock_state = LOCK_STATE_LOCKED;
		l->lock_owner = vs->lock_owner;
	}
	if (vi) {
		vi->snapshot |= vs->snapshot;
		vi->deleted |= vs->deleted;
		if (vi->parent_unknown &&
		    !(vs->pad[0] & VDI_STATE_PARENT_UNKNOWN)) {
			vi->parent_vid = vs->parent_vid;
			vi->parent_unknown = 0;
		}
		if (running && vs->nr_copies &&
		    (vi->nr_copies != vs->nr_copies ||
		     vi->copy_policy != vs->copy_policy)) {
			sd_info("VDI %" PRIx32 ": %u copies, as the cluster "
				"says (the local inode says %u)", vs->vid,
				vs->nr_copies, vi->nr_copies);
			vi->nr_copies = vs->nr_copies;
			vi->copy_policy = vs->copy_policy;
		}
		return;
	}
	vi = vdi_get(vs->vid, true);
	vi->nr_copies = vs->nr_copies;
	vi->copy_policy = vs->copy_policy;
	vi->block_size_shift = vs->block_size_shift;
	vi->snapshot = vs->snapshot;
	vi->deleted = vs->deleted;
	vi->parent_vid = vs->parent_vid;
	vi->parent_unknown = !!(vs->pad[0] & VDI_STATE_PARENT_UNKNOWN);
	vi->gen = vs->recycle_gen;
}

static int scan_one(struct obj_key k, void *arg)
{
	uint64_t oid = k.oid;
	uint8_t buf[SD_INODE_HEADER_SIZE];
	struct sd_inode_header h;

	/* an inode is never stored as strips */
	if (!is_vdi_obj(oid) || k.idx != OBJ_IDX_REPLICA)
		return 0;
	if (store_read(k, buf, sizeof(buf), 0) != SD_RES_SUCCESS)
		return 0;
	inode_header_decode(&h, buf);
	if (h.vdi_id != oid_to_vid(oid) || h.vdi_id >= SD_NR_VDIS)
		return 0;
	vdi_set_from_header(&h);
	return 0;
}

/*
 * A stale copy of an inode names a VDI too.  A node stopped again before
 * recovery brought its copies back from the stale area (a whole-cluster
 * restart soon after the one that made them stale) holds the VDI's inode
 * only there; if every holder is such a node and the scan saw only
 * current copies, no node would list the VDI, although recovery then
 * restores its inode.  A current copy, when there is one, is newer: a
 * stale one only adds a VDI that none names.
 */
static int scan_stale_one(struct obj_key k, void *arg)
{
	uint8_t buf[SD_INODE_HEADER_SIZE];
	struct sd_inode_header h;
	uint32_t epoch;

	if (!is_vdi_obj(k.oid) || k.idx != OBJ_IDX_REPLICA ||
	    vdi_test_inuse(oid_to_vid(k.oid)))
		return 0;
	if (store_read_stale(k, buf, sizeof(buf), 0, &epoch) != SD_RES_SUCCESS)
		return 0;
	inode_header_decode(&h, buf);
	if (h.vdi_id != oid_to_vid(k.oid) || h.vdi_id >= SD_NR_VDIS)
		return 0;
	sd_info("VDI %" PRIx32 " known from a stale copy of its inode "
		"(epoch %" PRIu32 ")", h.vdi_id, epoch);
	vdi_set_from_header(&h);
	*(size_t *)arg += 1;
	return 0;
}

/* start-up: rebuild the bitmaps and VDI state from local inodes (§11.5) */
void vdi_scan_local(void)
{
	size_t from_stale = 0;

	if (sys.gateway)
		return;
	store_for_each(scan_one, NULL);
	store_for_each_stale(scan_stale_one, &from_stale);
	if (from_stale)
		sd_notice("%zu VDI(s) known here only from stale copies of "
			  "their inodes", from_stale);
}

static void unlock_owned(uint32_t vid, struct vdi_info *vi, void *arg)
{
	const struct node_id *nid = arg;

	if (vi->lock_state == LOCK_STATE_LOCKED &&
	    node_id_eq(&vi->lock_owner, nid)) {
		sd_info("VDI %x unlocked: its owner left", vid);
		vi->lock_state = LOCK_STATE_UNLOCKED;
		memset(&vi->lock_owner, 0, sizeof(vi->lock_owner));
	}
}

bool vdi_locked(uint32_t vid, struct node_id *owner)
{
	struct vdi_info *vi = vdi_get(vid, false);

	if (!vi || vi->lock_state != LOCK_STATE_LOCKED)
		return false;
	if (owner)
		*owner = vi->lock_owner;
	return true;
}

/* a node that leaves gives up its locks (every node, in event order) */
void vdi_release_node_locks(const struct node_id *nid)
{
	vdi_for_each(unlock_owned, (void *)nid);
}

/* a copy of the in-use (or deleted) bitmap, SD_NR_VDIS / 8 bytes */
void vdi_bitmap_read(bool deleted, void *buf)
{
	memcpy(buf, deleted ? vdi_deleted : vdi_inuse, SD_NR_VDIS / 8);
}
