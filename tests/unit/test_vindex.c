// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The VDI index interface (lib/vindex.c): one sequence of sets, gets and
 * walks against a flat index and a B-tree index, compared after every
 * step that matters; enough entries for the split of the root and of a
 * leaf; both reopened from what they wrote back (the inode and the leaf
 * objects) must still agree.  Then failures: a leaf write, a leaf read, a
 * write-back of the inode, in and out of splits, each leaving what is
 * stored a tree that reads as before.  An entry of vid 0 (written by
 * other means than vi_set) is unallocated, as in a flat index.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto.h"
#include "vindex.h"

#define VID		0x5a17e
#define MAX_NODES	8
#define FLAT_NR		SD_INODE_DATA_INDEX
#define INODE_LEN	(SD_INODE_INDEX_OFFSET + BT_NODE_SIZE)
#define COUNTER_OFF	offsetof(struct sd_inode_header, btree_counter)

/* ---- leaf objects in memory ---- */

static struct {
	uint64_t oid[MAX_NODES];
	uint8_t *buf[MAX_NODES];
	int nr;
	int fail_writes;	/* writes that still succeed; -1: all */
	int fail_reads;
	int nr_reads;
} st;

static int find(uint64_t oid)
{
	for (int i = 0; i < st.nr; i++)
		if (st.oid[i] == oid)
			return i;
	return -1;
}

static bool spend(int *budget)
{
	if (*budget == 0)
		return true;
	if (*budget > 0)
		(*budget)--;
	return false;
}

static int mem_read(void *arg, uint64_t oid, uint8_t *buf)
{
	int i = find(oid);

	st.nr_reads++;
	if (spend(&st.fail_reads) || i < 0)
		return -1;
	memcpy(buf, st.buf[i], BT_NODE_SIZE);
	return 0;
}

static int mem_write(void *arg, uint64_t oid, const uint8_t *buf,
		     uint32_t off, uint32_t len, bool create)
{
	int i = find(oid);

	if (spend(&st.fail_writes))
		return -1;
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

/* ---- the two inodes, written only through write_inode ---- */

struct disk {
	uint8_t *buf;		/* INODE_LEN bytes */
	int fail_writes;
};

static struct disk fdisk, bdisk;

static int disk_write(void *arg, const uint8_t *buf, uint32_t off,
		      uint32_t len)
{
	struct disk *d = arg;

	if (spend(&d->fail_writes))
		return -1;
	assert_true((uint64_t)off + len <= INODE_LEN);
	memcpy(d->buf + off, buf, len);
	return 0;
}

static struct vdi_index *open_flat(void)
{
	struct vi_io io = { { mem_read, mem_write, NULL }, disk_write,
			    &fdisk };
	uint32_t *index = malloc(FLAT_NR * 4);

	le32_array_decode(index, FLAT_NR, fdisk.buf + SD_INODE_INDEX_OFFSET);
	return vi_open_flat(VID, index, FLAT_NR, &io);
}

static struct vdi_index *open_btree(void)
{
	struct vi_io io = { { mem_read, mem_write, NULL }, disk_write,
			    &bdisk };
	uint8_t *root = malloc(BT_NODE_SIZE);

	memcpy(root, bdisk.buf + SD_INODE_INDEX_OFFSET, BT_NODE_SIZE);
	return vi_open_btree(VID, root, get_le32(bdisk.buf + COUNTER_OFF),
			     &io);
}

static struct vdi_index *fl, *bt;

static int setup(void **state)
{
	memset(&st, 0, sizeof(st));
	st.fail_writes = st.fail_reads = -1;
	fdisk = (struct disk){ calloc(1, INODE_LEN), -1 };
	bdisk = (struct disk){ calloc(1, INODE_LEN), -1 };
	bt_init(bdisk.buf + SD_INODE_INDEX_OFFSET);
	fl = open_flat();
	bt = open_btree();
	return 0;
}

static int teardown(void **state)
{
	vi_close(fl);
	vi_close(bt);
	for (int i = 0; i < st.nr; i++)
		free(st.buf[i]);
	free(fdisk.buf);
	free(bdisk.buf);
	return 0;
}

/* ---- comparing ---- */

static void set_both(uint32_t idx, uint32_t vid)
{
	assert_int_equal(vi_set(fl, idx, vid), 0);
	assert_int_equal(vi_set(bt, idx, vid), 0);
}

static uint32_t get(struct vdi_index *vi, uint32_t idx)
{
	uint32_t vid = 0xdead;

	assert_int_equal(vi_get(vi, idx, &vid), 0);
	return vid;
}

static void same_at(uint32_t idx)
{
	assert_int_equal(get(fl, idx), get(bt, idx));
}

struct walk {
	uint32_t *idx, *vid;
	uint32_t n, at;
	bool bad;
};

static int record_fn(uint32_t idx, uint32_t vid, void *arg)
{
	struct walk *w = arg;

	w->idx[w->n] = idx;
	w->vid[w->n++] = vid;
	return 0;
}

static int check_fn(uint32_t idx, uint32_t vid, void *arg)
{
	struct walk *w = arg;

	if (w->at >= w->n || w->idx[w->at] != idx || w->vid[w->at] != vid)
		w->bad = true;
	w->at++;
	return 0;
}

/* the walks of the two indexes are the same; returns the entries */
static uint32_t same_walk(struct vdi_index *a, struct vdi_index *b)
{
	struct walk w = { malloc(FLAT_NR * 4), malloc(FLAT_NR * 4), 0, 0,
			  false };

	assert_int_equal(vi_for_each(a, record_fn, &w), 0);
	assert_int_equal(vi_for_each(b, check_fn, &w), 0);
	assert_false(w.bad);
	assert_int_equal(w.at, w.n);
	free(w.idx);
	free(w.vid);
	return w.n;
}

/* reopened from what they stored, both still agree with each other */
static void reopen_and_compare(uint32_t nr)
{
	struct vdi_index *f2, *b2;

	f2 = open_flat();
	b2 = open_btree();
	assert_int_equal(same_walk(fl, f2), nr);
	assert_int_equal(same_walk(f2, b2), nr);
	assert_int_equal(vi_counter(b2), vi_counter(bt));
	vi_close(f2);
	vi_close(b2);
}

/* ---- tests ---- */

/* the k-th index of the fill: every ninth left free for later inserts */
static uint32_t fill_idx(uint32_t k)
{
	return k + k / 8;
}

static uint32_t fill_vid(uint32_t k)
{
	return 1 + k % 1000;
}

/* fill both with @n entries; returns the last index */
static uint32_t fill(uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		set_both(fill_idx(k), fill_vid(k));
	return fill_idx(n - 1);
}

static int count_leaf(uint64_t oid, void *arg)
{
	(*(uint32_t *)arg)++;
	return 0;
}

static uint32_t nr_leaves(struct vdi_index *vi)
{
	uint32_t n = 0;

	assert_int_equal(vi_for_each_leaf(vi, count_leaf, &n), 0);
	return n;
}

static void test_same_sequence(void **state)
{
	uint32_t last, nr = BT_LEAF_MAX;

	assert_false(vi_is_btree(fl));
	assert_true(vi_is_btree(bt));
	last = fill(BT_LEAF_MAX);
	assert_int_equal(nr_leaves(bt), 0);
	assert_int_equal(same_walk(fl, bt), nr);
	/* the root splits */
	set_both(++last, 7);
	nr++;
	assert_int_equal(nr_leaves(bt), 2);
	assert_int_equal(vi_counter(bt), 2);
	reopen_and_compare(nr);
	/* the right leaf fills up and splits */
	while (nr_leaves(bt) == 2) {
		last++;
		set_both(last, 1 + last % 77);
		nr++;
	}
	assert_true(last < FLAT_NR);
	assert_int_equal(nr_leaves(bt), 3);
	assert_int_equal(vi_counter(bt), 3);
	srandom(11);
	for (int i = 0; i < 400; i++) {
		uint32_t k = (uint32_t)random() % (BT_LEAF_MAX / 8);
		uint32_t idx = i % 2 ? 9 * k + 8 : (uint32_t)random() % last;

		/* odd rounds: a free index (an insert), even: any */
		if (!get(fl, idx))
			nr++;
		set_both(idx, 1 + (uint32_t)random() % 5000);
		same_at(idx);
		same_at((uint32_t)random() % FLAT_NR);
	}
	for (uint32_t idx = last - 3; idx < last + 3; idx++)
		same_at(idx);
	assert_int_equal(get(bt, UINT32_MAX), 0);
	assert_int_equal(same_walk(fl, bt), nr);
	/* the cache: a leaf is read again only after a split moved it */
	assert_true(st.nr_reads < 20);
	reopen_and_compare(nr);
}

/* a one-level tree: clearing refused, flat bounds */
static void test_small(void **state)
{
	set_both(3, 9);
	set_both(3, 10);
	set_both(0, 1);
	assert_int_equal(vi_set(bt, 4, 0), -1);
	assert_int_equal(vi_set(fl, FLAT_NR, 1), -1);
	assert_int_equal(vi_set(bt, UINT32_MAX, 2), 0);
	assert_int_equal(get(bt, UINT32_MAX), 2);
	assert_int_equal(get(fl, FLAT_NR + 5), 0);
	assert_int_equal(vi_set(fl, 3, 0), 0);
	assert_int_equal(get(fl, 3), 0);
	assert_int_equal(nr_leaves(bt), 0);
	assert_int_equal(st.nr, 0);
}

/* an entry of vid 0 written into a node directly: unallocated */
static void test_zero_entry(void **state)
{
	uint8_t *root = bdisk.buf + SD_INODE_INDEX_OFFSET;

	set_both(2, 9);
	set_both(6, 8);
	/* entry 0 of the root (index 2) now names vid 0 */
	put_le32(root + BT_HDR + 4, 0);
	vi_close(bt);
	bt = open_btree();
	assert_int_equal(vi_set(fl, 2, 0), 0);
	assert_int_equal(get(bt, 2), 0);
	assert_int_equal(same_walk(fl, bt), 1);
}

/* a two-level tree of two leaves */
static uint32_t two_level(void)
{
	uint32_t last = fill(BT_LEAF_MAX);

	set_both(++last, 7);
	assert_int_equal(nr_leaves(bt), 2);
	return last;
}

static void test_leaf_errors(void **state)
{
	uint32_t last = two_level(), vid;

	/* a failed leaf write: the entry is not there, nor in the store */
	st.fail_writes = 0;
	assert_int_equal(vi_set(bt, 8, 5), -1);
	st.fail_writes = -1;
	assert_int_equal(get(bt, 8), 0);
	set_both(8, 5);
	/* an insert whose second write (entries after header) fails */
	st.fail_writes = 1;
	assert_int_equal(vi_set(bt, 17, 6), -1);
	st.fail_writes = -1;
	assert_int_equal(get(bt, 17), 0);
	set_both(17, 6);
	reopen_and_compare(BT_LEAF_MAX + 3);
	/* a cold index whose leaf read fails */
	vi_close(bt);
	bt = open_btree();
	st.fail_reads = 0;
	assert_int_equal(vi_get(bt, last, &vid), -1);
	assert_int_equal(vi_set(bt, last - 1, 3), -1);
	st.fail_reads = -1;
	same_at(last);
	set_both(last - 1, 3);
	reopen_and_compare(BT_LEAF_MAX + 3);
}

/* the inode's write-back fails: refused until reopened, stored as before */
static void test_inode_errors(void **state)
{
	uint32_t last = fill(BT_LEAF_MAX), vid;

	/* the counter of the root split */
	bdisk.fail_writes = 0;
	assert_int_equal(vi_set(bt, last + 1, 4), -1);
	bdisk.fail_writes = -1;
	assert_int_equal(vi_get(bt, 0, &vid), -1);
	assert_int_equal(vi_set(bt, 0, 1), -1);
	vi_close(bt);
	bt = open_btree();
	assert_int_equal(vi_counter(bt), 0);
	assert_int_equal(same_walk(fl, bt), BT_LEAF_MAX);
	/* the root after the counter */
	bdisk.fail_writes = 1;
	assert_int_equal(vi_set(bt, last + 1, 4), -1);
	bdisk.fail_writes = -1;
	vi_close(bt);
	bt = open_btree();
	assert_int_equal(get(bt, last + 1), 0);
	assert_int_equal(same_walk(fl, bt), BT_LEAF_MAX);
	/* now the split succeeds (its leaf ids are reused) */
	set_both(last + 1, 4);
	assert_int_equal(vi_counter(bt), 4);
	/* the root key of a growing last leaf */
	bdisk.fail_writes = 0;
	assert_int_equal(vi_set(bt, last + 2, 4), -1);
	bdisk.fail_writes = -1;
	vi_close(bt);
	bt = open_btree();
	same_at(last + 2);
	set_both(last + 2, 4);
	reopen_and_compare(BT_LEAF_MAX + 2);
	/* a flat write-back failure changes nothing */
	fdisk.fail_writes = 0;
	assert_int_equal(vi_set(fl, 1, 99), -1);
	fdisk.fail_writes = -1;
	assert_int_equal(get(fl, 1), fill_vid(1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_small, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_entry, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_same_sequence, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_leaf_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_inode_errors, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
