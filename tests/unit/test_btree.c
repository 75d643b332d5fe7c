// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The hyper volume index (lib/btree.c, objects.md §12) against a sorted
 * reference: random inserts and updates in a one-level tree, the split of
 * a full root into two leaf objects, the split of a full leaf of a
 * two-level tree, what bt_set reports as changed (a copy of the root
 * written only through those ranges must equal the root), a crash before
 * the root of a split is written back (the tree is as before), failed
 * writes, hostile nodes (bad magic, depth, counts, order, reads that
 * fail) refused without reading outside a node, and the copy of a tree's
 * leaves for a snapshot or clone (changes to either side stay there).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "btree.h"
#include "proto.h"

#define VID		0x7c2b25
#define MAX_NODES	16

/* ---- an object store of B-tree nodes in memory ---- */

static struct {
	uint64_t oid[MAX_NODES];
	uint8_t *buf[MAX_NODES];
	int nr;
	int fail_writes;	/* the writes that still succeed; -1: all */
	int nr_reads;
} st;

static int find(uint64_t oid)
{
	for (int i = 0; i < st.nr; i++)
		if (st.oid[i] == oid)
			return i;
	return -1;
}

static int mem_read(void *arg, uint64_t oid, uint8_t *buf)
{
	int i = find(oid);

	st.nr_reads++;
	if (i < 0)
		return -1;
	memcpy(buf, st.buf[i], BT_NODE_SIZE);
	return 0;
}

static int mem_write(void *arg, uint64_t oid, const uint8_t *buf,
		     uint32_t off, uint32_t len, bool create)
{
	int i = find(oid);

	if (st.fail_writes == 0)
		return -1;
	if (st.fail_writes > 0)
		st.fail_writes--;
	assert_true((uint64_t)off + len <= BT_NODE_SIZE);
	if (i < 0) {
		assert_true(create);
		assert_true(st.nr < MAX_NODES);
		i = st.nr++;
		st.oid[i] = oid;
		st.buf[i] = calloc(1, BT_NODE_SIZE);
	} else if (create) {
		memset(st.buf[i], 0, BT_NODE_SIZE);
	}
	memmove(st.buf[i] + off, buf, len);
	return 0;
}

static const struct bt_io io = { mem_read, mem_write, NULL };

/* ---- the caller's inode: the root and its written-back copy ---- */

static uint8_t *root, *disk, *scratch;
static uint32_t counter;

static int setup(void **state)
{
	memset(&st, 0, sizeof(st));
	st.fail_writes = -1;
	root = malloc(BT_NODE_SIZE);
	disk = malloc(BT_NODE_SIZE);
	scratch = malloc(BT_NODE_SIZE);
	bt_init(root);
	memcpy(disk, root, BT_NODE_SIZE);
	counter = 0;
	return 0;
}

static int teardown(void **state)
{
	for (int i = 0; i < st.nr; i++)
		free(st.buf[i]);
	free(root);
	free(disk);
	free(scratch);
	return 0;
}

/* write back what bt_set says changed, as a caller does */
static void write_back(const struct bt_change *ch)
{
	if (ch->root_hdr)
		memcpy(disk, root, BT_HDR);
	if (ch->root_len) {
		assert_true((uint64_t)ch->root_off + ch->root_len <=
			    BT_NODE_SIZE);
		memcpy(disk + ch->root_off, root + ch->root_off,
		       ch->root_len);
	}
}

/* bt_set as a caller uses it: after a split, write back, call again */
static int set(uint32_t idx, uint32_t value)
{
	struct bt_change ch;
	int ret, rounds = 0;

	do {
		ret = bt_set(root, VID, &counter, idx, value, &io, scratch,
			     &ch);
		if (ret < 0)
			return ret;
		write_back(&ch);
		assert_true(++rounds <= 2);
	} while (ret == 1);
	return 0;
}

static uint32_t get(const uint8_t *r, uint32_t idx)
{
	uint32_t vid = 0xdead;

	assert_int_equal(bt_lookup(r, idx, &io, scratch, &vid), 0);
	return vid;
}

/* ---- the reference ---- */

struct walk {
	const uint32_t *idx, *vid;
	uint32_t n, at;
	bool bad;
};

static int walk_fn(uint32_t idx, uint32_t vid, void *arg)
{
	struct walk *w = arg;

	if (w->at >= w->n || w->idx[w->at] != idx || w->vid[w->at] != vid)
		w->bad = true;
	w->at++;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- tests ---- */

static void test_empty(void **state)
{
	struct walk w = { 0 };

	assert_int_equal(get(root, 0), 0);
	assert_int_equal(get(root, UINT32_MAX), 0);
	assert_int_equal(bt_for_each(root, &io, scratch, walk_fn, &w), 0);
	assert_int_equal(w.at, 0);
	assert_int_equal(set(5, 0), -1);	/* 0 is "unallocated" */
}

/* random inserts and updates against a sorted reference */
static void test_random(void **state)
{
	enum { N = 20000 };
	static uint32_t ref_idx[N], ref_vid[N], keys[N], vids[N];
	uint32_t n = 0;
	struct walk w;

	srandom(7);
	for (int i = 0; i < N; i++) {
		uint32_t idx = (uint32_t)random() % (N * 4);
		uint32_t vid = 1 + (uint32_t)random() % 1000;
		uint32_t k;

		assert_int_equal(set(idx, vid), 0);
		for (k = 0; k < n && ref_idx[k] != idx; k++)
			;
		if (k == n)
			ref_idx[n++] = idx;
		ref_vid[k] = vid;
		if (i % 2000 == 0)
			assert_memory_equal(root, disk, BT_NODE_SIZE);
	}
	assert_memory_equal(root, disk, BT_NODE_SIZE);
	for (uint32_t k = 0; k < n; k++) {
		assert_int_equal(get(root, ref_idx[k]), ref_vid[k]);
		assert_int_equal(get(disk, ref_idx[k]), ref_vid[k]);
	}
	for (uint32_t idx = N * 4; idx < N * 4 + 100; idx++)
		assert_int_equal(get(root, idx), 0);
	/* the walk: every entry once, in index order */
	for (uint32_t k = 0; k < n; k++)
		keys[k] = ref_idx[k];
	qsort(keys, n, sizeof(uint32_t), cmp_u32);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t j = 0;

		while (ref_idx[j] != keys[k])
			j++;
		vids[k] = ref_vid[j];
	}
	w = (struct walk){ keys, vids, n, 0, false };
	assert_int_equal(bt_for_each(root, &io, scratch, walk_fn, &w), 0);
	assert_false(w.bad);
	assert_int_equal(w.at, n);
	assert_int_equal(st.nr, 0);	/* one level: no node objects */
	assert_int_equal(counter, 0);
}

/* fill the root with @n entries idx 2k -> k + 1, in order */
static void fill_root(uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		assert_int_equal(set(2 * k, k + 1), 0);
}

static int leaf_fn(uint64_t oid, void *arg)
{
	uint64_t *o = arg;

	o[o[0] + 1] = oid;
	o[0]++;
	return 0;
}

/* a full root becomes two leaf objects and a root of two entries */
static void test_root_split(void **state)
{
	uint64_t leaves[8] = { 0 };

	fill_root(BT_LEAF_MAX);
	assert_int_equal(st.nr, 0);
	assert_int_equal(set(1, 99), 0);	/* new, in the first half */
	assert_int_equal(counter, 2);
	assert_int_equal(st.nr, 2);
	assert_int_equal(get_le16(root + 2), 2);
	assert_int_equal(get_le32(root + 4), 2);
	assert_memory_equal(root, disk, BT_NODE_SIZE);
	assert_int_equal(bt_for_each_leaf(root, leaf_fn, leaves), 0);
	assert_int_equal(leaves[0], 2);
	assert_int_equal(leaves[1], vid_to_btree_oid(VID, 0));
	assert_int_equal(leaves[2], vid_to_btree_oid(VID, 1));
	assert_int_equal(get(root, 1), 99);
	for (uint32_t k = 0; k < BT_LEAF_MAX; k += 997)
		assert_int_equal(get(root, 2 * k), k + 1);
	assert_int_equal(get(root, 2 * (BT_LEAF_MAX - 1)),
			 BT_LEAF_MAX);
	assert_int_equal(get(root, 3), 0);
	assert_int_equal(get(root, 2 * BT_LEAF_MAX), 0);
	/* growing past the end: into the last leaf, whose key follows */
	assert_int_equal(set(4 * BT_LEAF_MAX, 7), 0);
	assert_int_equal(get(root, 4 * BT_LEAF_MAX), 7);
	assert_int_equal(get_le32(root + BT_HDR + 16), 4 * BT_LEAF_MAX);
	assert_memory_equal(root, disk, BT_NODE_SIZE);
	/* an update in place of an entry of a leaf object */
	assert_int_equal(set(2 * 10, 555), 0);
	assert_int_equal(get(root, 20), 555);
}

/* the walk of a two-level tree: every entry, in order */
static int count_fn(uint32_t idx, uint32_t vid, void *arg)
{
	uint64_t *c = arg;

	if ((int64_t)idx <= (int64_t)c[1] - 1 && c[0])
		c[2] = 1;		/* out of order */
	c[0]++;
	c[1] = (uint64_t)idx + 1;
	return 0;
}

/*
 * A full leaf of a two-level tree is split.  A crash after the split,
 * before its root is written back, leaves the tree as it was.
 */
static void test_leaf_split(void **state)
{
	uint32_t half = BT_LEAF_MAX / 2, base = 2 * half, last;
	uint64_t c[3] = { 0 };
	uint8_t *leaf = calloc(1, BT_NODE_SIZE);
	struct bt_change ch;

	fill_root(BT_LEAF_MAX);
	assert_int_equal(set(1, 99), 0);		/* the root split */
	assert_int_equal(counter, 2);
	/* the second leaf made full directly: even indexes from base */
	put_le16(leaf, BT_MAGIC);
	put_le16(leaf + 2, 1);
	put_le32(leaf + 4, BT_LEAF_MAX);
	for (uint32_t k = 0; k < BT_LEAF_MAX; k++) {
		put_le32(leaf + BT_HDR + 8 * k, base + 2 * k);
		put_le32(leaf + BT_HDR + 8 * k + 4, 3);
	}
	last = base + 2 * (BT_LEAF_MAX - 1);
	assert_int_equal(mem_write(NULL, vid_to_btree_oid(VID, 1), leaf, 0,
				   BT_NODE_SIZE, true), 0);
	put_le32(root + BT_HDR + 16, last);
	memcpy(disk, root, BT_NODE_SIZE);	/* the inode as written */
	/* a new index inside the full leaf: split, then a second call */
	assert_int_equal(bt_set(root, VID, &counter, base + 1, 42, &io,
				scratch, &ch), 1);
	assert_int_equal(counter, 3);
	assert_true(ch.counter && ch.root_hdr);
	assert_int_equal(get_le32(root + 4), 3);
	/* "crash" here: the stored root is the old one; nothing is lost */
	assert_int_equal(get(disk, base), 3);
	assert_int_equal(get(disk, last), 3);
	assert_int_equal(get(disk, base + 2 * half + 2), 3);
	assert_int_equal(get(disk, 2 * 1000), 1001);
	assert_int_equal(get(disk, 1), 99);
	/* and without a crash: written back, called again */
	write_back(&ch);
	assert_memory_equal(root, disk, BT_NODE_SIZE);
	assert_int_equal(bt_set(root, VID, &counter, base + 1, 42, &io,
				scratch, &ch), 0);
	write_back(&ch);
	assert_memory_equal(root, disk, BT_NODE_SIZE);
	assert_int_equal(get(root, base + 1), 42);
	assert_int_equal(get(root, base), 3);
	assert_int_equal(get(root, last), 3);
	assert_int_equal(get(root, base + 2 * half), 3);
	assert_int_equal(get(root, base + 2 * half - 2), 3);
	assert_int_equal(get(root, base + 3), 0);
	assert_int_equal(get(root, 2 * 1000), 1001);
	assert_int_equal(bt_for_each(root, &io, scratch, count_fn, c), 0);
	assert_int_equal(c[0], half + 1 + BT_LEAF_MAX + 1);
	assert_int_equal(c[2], 0);
	free(leaf);
}

/* a split whose leaf write fails changes nothing the caller keeps */
static void test_failed_split(void **state)
{
	uint8_t *copy = malloc(BT_NODE_SIZE);
	uint32_t c0;

	fill_root(BT_LEAF_MAX);
	memcpy(copy, root, BT_NODE_SIZE);
	c0 = counter;
	st.fail_writes = 1;		/* the second leaf fails */
	assert_int_equal(set(1, 9), -1);
	assert_memory_equal(root, copy, BT_NODE_SIZE);
	assert_int_equal(counter, c0);
	st.fail_writes = -1;
	assert_int_equal(set(1, 9), 0);	/* and then it works */
	assert_int_equal(get(root, 1), 9);
	free(copy);
}

/* ---- hostile nodes ---- */

static void expect_bad(const uint8_t *r)
{
	uint32_t vid;
	struct walk w = { 0 };

	assert_int_equal(bt_lookup(r, 10, &io, scratch, &vid), -1);
	assert_int_equal(bt_for_each(r, &io, scratch, walk_fn, &w), -1);
}

static void test_hostile_root(void **state)
{
	struct bt_change ch;

	put_le16(root, 0x1234);			/* magic */
	expect_bad(root);
	assert_int_equal(bt_set(root, VID, &counter, 1, 1, &io, scratch, &ch),
			 -1);
	bt_init(root);
	put_le16(root + 2, 3);			/* depth */
	expect_bad(root);
	bt_init(root);
	put_le32(root + 4, BT_LEAF_MAX + 1);	/* too many entries */
	expect_bad(root);
	bt_init(root);
	put_le16(root + 2, 2);			/* a two-level root, empty */
	expect_bad(root);
	put_le32(root + 4, BT_ROOT_MAX + 1);
	expect_bad(root);
	assert_int_equal(bt_for_each_leaf(root, leaf_fn, (uint64_t[4]){ 0 }),
			 -1);
}

static void test_hostile_children(void **state)
{
	uint8_t *leaf = calloc(1, BT_NODE_SIZE);
	uint32_t vid;
	struct walk w = { 0 };

	/* a two-level root with one child that does not exist */
	put_le16(root, BT_MAGIC);
	put_le16(root + 2, 2);
	put_le32(root + 4, 1);
	put_le32(root + BT_HDR, 100);
	put_le64(root + BT_HDR + 8, vid_to_btree_oid(VID, 0));
	expect_bad(root);
	assert_int_equal(bt_lookup(root, 101, &io, scratch, &vid), 0);
	assert_int_equal(vid, 0);		/* above every key: no read */
	/* the child is a root, not a leaf */
	put_le16(leaf, BT_MAGIC);
	put_le16(leaf + 2, 2);
	put_le32(leaf + 4, 1);
	assert_int_equal(mem_write(NULL, vid_to_btree_oid(VID, 0), leaf, 0,
				   BT_NODE_SIZE, true), 0);
	expect_bad(root);
	/* a leaf whose entries are out of order: found bad by the walk */
	put_le16(leaf + 2, 1);
	put_le32(leaf + 4, 2);
	put_le32(leaf + BT_HDR, 50);
	put_le32(leaf + BT_HDR + 4, 1);
	put_le32(leaf + BT_HDR + 8, 40);
	put_le32(leaf + BT_HDR + 12, 1);
	assert_int_equal(mem_write(NULL, vid_to_btree_oid(VID, 0), leaf, 0,
				   BT_NODE_SIZE, true), 0);
	assert_int_equal(bt_for_each(root, &io, scratch, walk_fn, &w), -1);
	/* a leaf claiming more entries than fit */
	put_le32(leaf + 4, BT_LEAF_MAX + 1);
	assert_int_equal(mem_write(NULL, vid_to_btree_oid(VID, 0), leaf, 0,
				   BT_NODE_SIZE, true), 0);
	expect_bad(root);
	free(leaf);
}

/* ---- copies (snapshots and clones of hyper volumes) ---- */

#define VID2		0x7c2b26

/* bt_set on another tree than the fixture's, writing nothing back */
static int set_in(uint8_t *r, uint32_t vid, uint32_t *cnt, uint32_t idx,
		  uint32_t value)
{
	struct bt_change ch;
	int ret, rounds = 0;

	do {
		ret = bt_set(r, vid, cnt, idx, value, &io, scratch, &ch);
		assert_true(++rounds <= 2);
	} while (ret == 1);
	return ret;
}

static void test_node_len(void **state)
{
	assert_int_equal(bt_node_len(root), BT_HDR);
	assert_int_equal(set(7, 1), 0);
	assert_int_equal(set(9, 1), 0);
	assert_int_equal(bt_node_len(root), BT_HDR + 2 * 8);
	fill_root(BT_LEAF_MAX);
	assert_int_equal(set(1, 99), 0);	/* two levels, two leaves */
	assert_int_equal(bt_node_len(root), BT_HDR + 2 * 16);
	put_le16(root, 0x1234);
	assert_int_equal(bt_node_len(root), 0);
}

/*
 * A copy points at leaves of its own volume with the same entries; sets
 * in either tree (in place, new entries, past the end) leave the other
 * as it was.
 */
static void test_copy_leaves(void **state)
{
	uint8_t *copy = malloc(BT_NODE_SIZE);
	uint64_t leaves[8] = { 0 };
	uint32_t c2;

	fill_root(BT_LEAF_MAX);
	assert_int_equal(set(1, 99), 0);
	memcpy(copy, root, BT_NODE_SIZE);
	c2 = counter;
	assert_int_equal(bt_copy_leaves(copy, VID2, &io, scratch), 0);
	assert_int_equal(st.nr, 4);
	assert_int_equal(bt_for_each_leaf(copy, leaf_fn, leaves), 0);
	assert_int_equal(leaves[0], 2);
	assert_int_equal(leaves[1], vid_to_btree_oid(VID2, 0));
	assert_int_equal(leaves[2], vid_to_btree_oid(VID2, 1));
	for (uint32_t k = 0; k < BT_LEAF_MAX; k += 991)
		assert_int_equal(get(copy, 2 * k), k + 1);
	assert_int_equal(get(copy, 1), 99);
	/* the copy changes: an entry in place, a new one, past the end */
	assert_int_equal(set_in(copy, VID2, &c2, 20, 555), 0);
	assert_int_equal(set_in(copy, VID2, &c2, 3, 556), 0);
	assert_int_equal(set_in(copy, VID2, &c2, 4 * BT_LEAF_MAX, 557), 0);
	assert_int_equal(get(copy, 20), 555);
	assert_int_equal(get(copy, 3), 556);
	assert_int_equal(get(copy, 4 * BT_LEAF_MAX), 557);
	assert_int_equal(get(root, 20), 11);
	assert_int_equal(get(root, 3), 0);
	assert_int_equal(get(root, 4 * BT_LEAF_MAX), 0);
	/* and the source changes: the copy does not see it */
	assert_int_equal(set(22, 777), 0);
	assert_int_equal(get(copy, 22), 12);
	assert_int_equal(get(root, 22), 777);
	free(copy);
}

/* a one-level tree has no leaf to copy; a failed copy says so */
static void test_copy_fails(void **state)
{
	uint8_t *copy = malloc(BT_NODE_SIZE);

	assert_int_equal(set(5, 1), 0);
	assert_int_equal(bt_copy_leaves(root, VID2, &io, scratch), 0);
	assert_int_equal(st.nr, 0);
	assert_int_equal(get(root, 5), 1);
	fill_root(BT_LEAF_MAX);
	assert_int_equal(set(1, 99), 0);
	memcpy(copy, root, BT_NODE_SIZE);
	st.fail_writes = 1;		/* the second leaf's copy fails */
	assert_int_equal(bt_copy_leaves(copy, VID2, &io, scratch), -1);
	st.fail_writes = -1;
	/* a child that is not a B-tree node object */
	memcpy(copy, root, BT_NODE_SIZE);
	put_le64(copy + BT_HDR + 8, vid_to_data_oid(VID, 0));
	assert_int_equal(bt_copy_leaves(copy, VID2, &io, scratch), -1);
	/* a child that does not exist */
	memcpy(copy, root, BT_NODE_SIZE);
	put_le64(copy + BT_HDR + 8, vid_to_btree_oid(VID, 9));
	assert_int_equal(bt_copy_leaves(copy, VID2, &io, scratch), -1);
	put_le16(copy, 0);
	assert_int_equal(bt_copy_leaves(copy, VID2, &io, scratch), -1);
	free(copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_split, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_leaf_split, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_failed_split, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hostile_root, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hostile_children, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_node_len, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_copy_leaves, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_copy_fails, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
