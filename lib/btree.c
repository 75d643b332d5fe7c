// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The two-level index of a hyper volume (include/btree.h, objects.md §12).
 *
 * The keys of the root of a two-level tree bound its children: child k
 * holds the indexes above key k-1 up to key k, and only its entries up to
 * key k count.  A split writes the new leaf objects and changes the root
 * in the caller's buffer, and bt_set returns at once: the old leaf is not
 * rewritten, its entries above its new key simply stop counting.  So the
 * root, which the caller writes back before it calls bt_set again, is the
 * commit point of a split: a crash before it leaves the tree as it was
 * (and at most an unreferenced new leaf object), and no leaf the written
 * root points at loses an entry before the root that moved it is written.
 */
#include <string.h>
#include "btree.h"
#include "proto.h"

#define LEAF_ENT	8
#define ROOT_ENT	16

static uint32_t leaf_off(uint32_t k)
{
	return BT_HDR + k * LEAF_ENT;
}

static uint32_t root_off(uint32_t k)
{
	return BT_HDR + k * ROOT_ENT;
}

static uint32_t leaf_idx(const uint8_t *p, uint32_t k)
{
	return get_le32(p + leaf_off(k));
}

static uint32_t leaf_vid(const uint8_t *p, uint32_t k)
{
	return get_le32(p + leaf_off(k) + 4);
}

static uint32_t root_key(const uint8_t *p, uint32_t k)
{
	return get_le32(p + root_off(k));
}

static uint64_t root_child(const uint8_t *p, uint32_t k)
{
	return get_le64(p + root_off(k) + 8);
}

static void put_hdr(uint8_t *p, uint16_t depth, uint32_t n)
{
	put_le16(p, BT_MAGIC);
	put_le16(p + 2, depth);
	put_le32(p + 4, n);
}

static void put_leaf(uint8_t *p, uint32_t k, uint32_t idx, uint32_t vid)
{
	put_le32(p + leaf_off(k), idx);
	put_le32(p + leaf_off(k) + 4, vid);
}

static void put_root(uint8_t *p, uint32_t k, uint32_t key, uint64_t oid)
{
	put_le32(p + root_off(k), key);
	put_le32(p + root_off(k) + 4, 0);
	put_le64(p + root_off(k) + 8, oid);
}

/* a node's depth (1 or 2) and count, checked; -1 if bad */
static int node_hdr(const uint8_t *p, uint32_t *n)
{
	uint16_t depth = get_le16(p + 2);

	*n = get_le32(p + 4);
	if (get_le16(p) != BT_MAGIC)
		return -1;
	if (depth == 1 && *n <= BT_LEAF_MAX)
		return 1;
	/* a two-level root always has children */
	if (depth == 2 && *n >= 1 && *n <= BT_ROOT_MAX)
		return 2;
	return -1;
}

/* the first of @n entries whose key (by @key) is >= @idx (@n: none) */
static uint32_t lower(const uint8_t *p, uint32_t n, uint32_t idx,
		      uint32_t (*key)(const uint8_t *p, uint32_t k))
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (key(p, mid) < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint32_t leaf_lower(const uint8_t *p, uint32_t n, uint32_t idx)
{
	return lower(p, n, idx, leaf_idx);
}

/* the child of a root of @n entries that holds @idx: the last if none */
static uint32_t root_pick(const uint8_t *p, uint32_t n, uint32_t idx)
{
	uint32_t k = lower(p, n, idx, root_key);

	return k < n ? k : n - 1;
}

/*
 * Read child @k of @root into @buf; its entries that count (those up to
 * the child's key) in *@n.  -1 if the read fails or the node is bad.
 */
static int read_child(const uint8_t *root, uint32_t k, const struct bt_io *io,
		      uint8_t *buf, uint32_t *n)
{
	uint32_t all;

	if (io->read(io->arg, root_child(root, k), buf) ||
	    node_hdr(buf, &all) != 1)
		return -1;
	/* entries above the key were moved by a split */
	*n = leaf_lower(buf, all, root_key(root, k));
	if (*n < all && leaf_idx(buf, *n) == root_key(root, k))
		(*n)++;
	return 0;
}

void bt_init(uint8_t *root)
{
	memset(root, 0, BT_NODE_SIZE);
	put_hdr(root, 1, 0);
}

int bt_lookup(const uint8_t *root, uint32_t idx, const struct bt_io *io,
	      uint8_t *scratch, uint32_t *vid)
{
	const uint8_t *leaf = root;
	uint32_t n, k;
	int depth = node_hdr(root, &n);

	*vid = 0;
	if (depth < 0)
		return -1;
	if (depth == 2) {
		k = root_pick(root, n, idx);
		if (idx > root_key(root, k))
			return 0;	/* above every index written */
		if (read_child(root, k, io, scratch, &n))
			return -1;
		leaf = scratch;
	}
	k = leaf_lower(leaf, n, idx);
	if (k < n && leaf_idx(leaf, k) == idx)
		*vid = leaf_vid(leaf, k);
	return 0;
}

/* ---- changes ---- */

static void root_dirty(struct bt_change *ch, uint32_t off, uint32_t end)
{
	uint32_t cur_end = ch->root_off + ch->root_len;

	if (!ch->root_len) {
		ch->root_off = off;
		ch->root_len = end - off;
		return;
	}
	if (off < ch->root_off)
		ch->root_off = off;
	if (end > cur_end)
		cur_end = end;
	ch->root_len = cur_end - ch->root_off;
}

/*
 * Put @idx -> @value among the @n entries of @leaf (room for one more is
 * the caller's business when @idx is new).  The changed entries in
 * [*@from, *@to); returns the new count.
 */
static uint32_t leaf_put(uint8_t *leaf, uint32_t n, uint32_t idx,
			 uint32_t value, uint32_t *from, uint32_t *to)
{
	uint32_t k = leaf_lower(leaf, n, idx);

	*from = leaf_off(k);
	if (k < n && leaf_idx(leaf, k) == idx) {
		put_leaf(leaf, k, idx, value);
		*to = leaf_off(k + 1);
		return n;
	}
	memmove(leaf + leaf_off(k + 1), leaf + leaf_off(k),
		(size_t)(n - k) * LEAF_ENT);
	put_leaf(leaf, k, idx, value);
	*to = leaf_off(n + 1);
	return n + 1;
}

static bool leaf_has(const uint8_t *leaf, uint32_t n, uint32_t idx)
{
	uint32_t k = leaf_lower(leaf, n, idx);

	return k < n && leaf_idx(leaf, k) == idx;
}

/*
 * A new leaf object @oid with the @n entries at @src, built in @buf (which
 * may hold @src: the entries are moved down)
 */
static int write_new_leaf(const struct bt_io *io, uint64_t oid,
			  const uint8_t *src, uint32_t n, uint8_t *buf)
{
	memmove(buf + BT_HDR, src, (size_t)n * LEAF_ENT);
	put_hdr(buf, 1, n);
	return io->write(io->arg, oid, buf, 0, leaf_off(n), true);
}

/*
 * The root is a full leaf: its halves go to two new leaf objects and it
 * becomes a root of two entries.
 */
static int split_root(uint8_t *root, uint32_t vid, uint32_t *counter,
		      const struct bt_io *io, uint8_t *scratch,
		      struct bt_change *ch)
{
	uint32_t n = BT_LEAF_MAX, half = n / 2;
	uint64_t left = vid_to_btree_oid(vid, *counter);
	uint64_t right = vid_to_btree_oid(vid, *counter + 1);
	uint32_t key_left = leaf_idx(root, half - 1);
	uint32_t key_right = leaf_idx(root, n - 1);

	if (*counter > UINT32_MAX - 2 ||
	    write_new_leaf(io, left, root + leaf_off(0), half, scratch) ||
	    write_new_leaf(io, right, root + leaf_off(half), n - half,
			   scratch))
		return -1;
	*counter += 2;
	memset(root, 0, BT_NODE_SIZE);
	put_hdr(root, 2, 2);
	put_root(root, 0, key_left, left);
	put_root(root, 1, key_right, right);
	ch->counter = true;
	ch->root_hdr = true;
	root_dirty(ch, BT_HDR, BT_NODE_SIZE);
	return 0;
}

/*
 * Child @k (its @n counting entries in @leaf) is full: its upper half
 * goes to a new leaf object, entered after it in the root.  @leaf is used
 * to build the new one (the caller reads the child again).
 */
static int split_child(uint8_t *root, uint32_t nroot, uint32_t k,
		       uint8_t *leaf, uint32_t n, uint32_t vid,
		       uint32_t *counter, const struct bt_io *io,
		       struct bt_change *ch)
{
	uint32_t half = n / 2, key = root_key(root, k);
	uint32_t left_key = leaf_idx(leaf, half - 1);
	uint64_t oid = vid_to_btree_oid(vid, *counter);

	if (nroot == BT_ROOT_MAX || *counter == UINT32_MAX ||
	    write_new_leaf(io, oid, leaf + leaf_off(half), n - half, leaf))
		return -1;
	(*counter)++;
	memmove(root + root_off(k + 2), root + root_off(k + 1),
		(size_t)(nroot - k - 1) * ROOT_ENT);
	put_root(root, k + 1, key, oid);
	put_root(root, k, left_key, root_child(root, k));
	put_hdr(root, 2, nroot + 1);
	ch->counter = true;
	ch->root_hdr = true;
	root_dirty(ch, root_off(k), root_off(nroot + 1));
	return 0;
}

/*
 * Write the changed part of leaf @oid: [from, to) and, if @hdr, its
 * header (in the same write when the two are close)
 */
static int write_leaf(const struct bt_io *io, uint64_t oid,
		      const uint8_t *leaf, bool hdr, uint32_t from,
		      uint32_t to)
{
	if (hdr && from <= 64)
		from = 0;
	else if (hdr && io->write(io->arg, oid, leaf, 0, BT_HDR, false))
		return -1;
	return io->write(io->arg, oid, leaf + from, from, to - from, false);
}

/* @idx -> @value in a two-level tree (root of @nroot entries) */
static int set_two_level(uint8_t *root, uint32_t nroot, uint32_t vid,
			 uint32_t *counter, uint32_t idx, uint32_t value,
			 const struct bt_io *io, uint8_t *leaf,
			 struct bt_change *ch)
{
	uint32_t k, n, from, to, nn;
	uint64_t oid;

	k = root_pick(root, nroot, idx);
	if (read_child(root, k, io, leaf, &n))
		return -1;
	if (n == BT_LEAF_MAX && !leaf_has(leaf, n, idx))
		return split_child(root, nroot, k, leaf, n, vid, counter, io,
				   ch) ? -1 : 1;
	oid = root_child(root, k);
	nn = leaf_put(leaf, n, idx, value, &from, &to);
	if (nn != n)
		put_hdr(leaf, 1, nn);
	if (write_leaf(io, oid, leaf, nn != n, from, to))
		return -1;
	if (idx > root_key(root, k)) {	/* the last child grows */
		put_root(root, k, idx, oid);
		root_dirty(ch, root_off(k), root_off(k + 1));
	}
	return 0;
}

int bt_set(uint8_t *root, uint32_t vid, uint32_t *counter, uint32_t idx,
	   uint32_t value, const struct bt_io *io, uint8_t *scratch,
	   struct bt_change *ch)
{
	uint32_t n, from, to, nn;
	int depth;

	memset(ch, 0, sizeof(*ch));
	depth = node_hdr(root, &n);
	if (depth < 0 || !value)
		return -1;
	if (depth == 1 && n == BT_LEAF_MAX && !leaf_has(root, n, idx))
		return split_root(root, vid, counter, io, scratch, ch) ? -1 : 1;
	if (depth == 2)
		return set_two_level(root, n, vid, counter, idx, value, io,
				     scratch, ch);
	nn = leaf_put(root, n, idx, value, &from, &to);
	if (nn != n) {
		put_hdr(root, 1, nn);
		ch->root_hdr = true;
	}
	root_dirty(ch, from, to);
	return 0;
}

/* ---- walks ---- */

/* the @n entries of @leaf in order, all above *@last (updated) */
static int walk_leaf(const uint8_t *leaf, uint32_t n, int64_t *last,
		     int (*fn)(uint32_t idx, uint32_t vid, void *arg),
		     void *arg)
{
	for (uint32_t k = 0; k < n; k++) {
		uint32_t idx = leaf_idx(leaf, k);
		int ret;

		if ((int64_t)idx <= *last)
			return -1;	/* out of order: a bad node */
		*last = idx;
		ret = fn(idx, leaf_vid(leaf, k), arg);
		if (ret)
			return ret;
	}
	return 0;
}

int bt_for_each(const uint8_t *root, const struct bt_io *io, uint8_t *scratch,
		int (*fn)(uint32_t idx, uint32_t vid, void *arg), void *arg)
{
	int64_t last = -1;
	uint32_t n, cn;
	int depth = node_hdr(root, &n), ret;

	if (depth < 0)
		return -1;
	if (depth == 1)
		return walk_leaf(root, n, &last, fn, arg);
	for (uint32_t k = 0; k < n; k++) {
		if ((int64_t)root_key(root, k) <= last ||
		    read_child(root, k, io, scratch, &cn))
			return -1;
		ret = walk_leaf(scratch, cn, &last, fn, arg);
		if (ret)
			return ret;
		last = root_key(root, k);
	}
	return 0;
}

int bt_for_each_leaf(const uint8_t *root,
		     int (*fn)(uint64_t oid, void *arg), void *arg)
{
	uint32_t n;
	int depth = node_hdr(root, &n), ret;

	if (depth < 0)
		return -1;
	for (uint32_t k = 0; depth == 2 && k < n; k++) {
		ret = fn(root_child(root, k), arg);
		if (ret)
			return ret;
	}
	return 0;
}

uint32_t bt_node_len(const uint8_t *node)
{
	uint32_t n;
	int depth = node_hdr(node, &n);

	if (depth < 0)
		return 0;
	return depth == 1 ? leaf_off(n) : root_off(n);
}

/* ---- copies ---- */

/*
 * A leaf is copied byte for byte, entries above its key included: they do
 * not count, and a copy that dropped them would differ from its source in
 * nothing a reader sees but would be one more thing to get right.
 */
int bt_copy_leaves(uint8_t *root, uint32_t vid, const struct bt_io *io,
		   uint8_t *scratch)
{
	uint32_t n, all;
	int depth = node_hdr(root, &n);

	if (depth < 0)
		return -1;
	for (uint32_t k = 0; depth == 2 && k < n; k++) {
		uint64_t from = root_child(root, k);
		uint64_t to = vid_to_btree_oid(vid, (uint32_t)from);

		if (!(from & VDI_BTREE_BIT) ||
		    io->read(io->arg, from, scratch) ||
		    node_hdr(scratch, &all) != 1 ||
		    io->write(io->arg, to, scratch, 0, leaf_off(all), true))
			return -1;
		put_root(root, k, root_key(root, k), to);
	}
	return 0;
}
