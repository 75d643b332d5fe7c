// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: the hyper volume index (lib/btree.c) on a root and
 * leaf objects taken from the input, then a sequence of lookups, sets,
 * walks and leaf listings.  No read may leave a node (ASan), and on a tree
 * that walks cleanly a value set must be found by the next lookup.
 *
 * Input: le16 root bytes, the root's first bytes (the rest zero); u8
 * leaves (at most 3), each le16 bytes and its first bytes (leaf objects
 * 0..2 of the volume); then operations: u8 op, and for a lookup le32
 * index, for a set le32 index and le32 value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "btree.h"
#include "proto.h"
#include "fuzz_input.h"

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

#define VID		0x123456
#define MAX_NODES	8
#define MAX_PREFIX	8192

static uint8_t *root, *scratch;
static uint32_t counter;	/* new leaves after the input's three */
static struct {
	uint64_t oid;
	uint8_t *buf;
	uint32_t used;		/* bytes that may be non-zero */
	bool live;
} nodes[MAX_NODES];

static int node_find(uint64_t oid)
{
	for (int i = 0; i < MAX_NODES; i++)
		if (nodes[i].live && nodes[i].oid == oid)
			return i;
	return -1;
}

static int fz_read(void *arg, uint64_t oid, uint8_t *buf)
{
	int i = node_find(oid);

	if (i < 0)
		return -1;
	memcpy(buf, nodes[i].buf, BT_NODE_SIZE);
	return 0;
}

static int fz_write(void *arg, uint64_t oid, const uint8_t *buf,
		    uint32_t off, uint32_t len, bool create)
{
	int i = node_find(oid);

	if ((uint64_t)off + len > BT_NODE_SIZE)
		die("write of %u bytes at %u past a node\n", len, off);
	if (i < 0) {
		if (!create)
			return -1;
		for (i = 0; i < MAX_NODES && nodes[i].live; i++)
			;
		if (i == MAX_NODES)
			return -1;
		nodes[i].live = true;
		nodes[i].oid = oid;
	}
	memmove(nodes[i].buf + off, buf, len);
	if (off + len > nodes[i].used)
		nodes[i].used = off + len;
	return 0;
}

static const struct bt_io io = { fz_read, fz_write, NULL };

static int count_fn(uint32_t idx, uint32_t vid, void *arg)
{
	(*(uint64_t *)arg)++;
	return 0;
}

static int leaf_fn(uint64_t oid, void *arg)
{
	(*(uint64_t *)arg)++;
	return 0;
}

static void reset(void)
{
	memset(root, 0, BT_NODE_SIZE);
	for (int i = 0; i < MAX_NODES; i++) {
		memset(nodes[i].buf, 0, nodes[i].used);
		nodes[i].used = 0;
		nodes[i].live = false;
	}
}

/* set, calling again after a split, as a caller does */
static int do_set(uint32_t idx, uint32_t value)
{
	struct bt_change ch;
	int ret, rounds = 0;

	do {
		ret = bt_set(root, VID, &counter, idx, value, &io, scratch,
			     &ch);
		if (ch.root_len && (uint64_t)ch.root_off + ch.root_len >
		    BT_NODE_SIZE)
			die("change past the root\n");
	} while (ret == 1 && ++rounds < 3);
	return ret;
}

static void one_op(struct fuzz_in *in)
{
	uint8_t op = take_u8(in) % 4;
	uint32_t idx, value, vid;
	uint64_t n = 0;
	bool valid;

	switch (op) {
	case 0:
		bt_lookup(root, take_u32(in), &io, scratch, &vid);
		break;
	case 1:
		idx = take_u32(in);
		value = take_u32(in);
		valid = bt_for_each(root, &io, scratch, count_fn, &n) == 0;
		if (do_set(idx, value) == 0 && valid && value &&
		    (bt_lookup(root, idx, &io, scratch, &vid) || vid != value))
			die("set %u -> %u, then found %u\n", idx, value, vid);
		break;
	case 2:
		bt_for_each(root, &io, scratch, count_fn, &n);
		break;
	default:
		bt_for_each_leaf(root, leaf_fn, &n);
		break;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	root = calloc(1, BT_NODE_SIZE);
	scratch = calloc(1, BT_NODE_SIZE);
	for (int i = 0; i < MAX_NODES; i++)
		nodes[i].buf = calloc(1, BT_NODE_SIZE);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in;
	uint32_t len;
	uint8_t nr;

	reset();
	counter = 3;
	fuzz_in_init(&in, data, size);
	len = take_u16(&in) % MAX_PREFIX;
	take_bytes(&in, root, len);
	nr = take_u8(&in) % 4;
	for (int i = 0; i < nr; i++) {
		len = take_u16(&in) % MAX_PREFIX;
		nodes[i].live = true;
		nodes[i].oid = vid_to_btree_oid(VID, i);
		take_bytes(&in, nodes[i].buf, len);
		nodes[i].used = len;
	}
	for (int ops = 0; ops < 64 && fuzz_left(&in); ops++)
		one_op(&in);
	return 0;
}
