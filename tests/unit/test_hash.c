// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Hashing and placement tests: the published vectors of objects.md §6.1,
 * §15 and cluster.md §2.2/§2.3, and the placement rules of cluster.md §2.3
 * checked against an independent brute-force model of the ring.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hash.h"
#include "proto.h"

#define U64(x) UINT64_C(x)

/* ---- vectors ---- */

static void test_fnv_vectors(void **state)
{
	assert_true(fnv_64a_buf("", 0, FNV1A_64_INIT) == FNV1A_64_INIT);
	assert_true(fnv_64a_buf("test", 4, FNV1A_64_INIT) ==
		    U64(0xf9e6e6ef197c2b25));
	/* FNV-1a of "a": one round from the offset basis */
	assert_true(fnv_64a_buf("a", 1, FNV1A_64_INIT) ==
		    ((FNV1A_64_INIT ^ 'a') * FNV_64_PRIME));
	/* chaining with a seed equals hashing the concatenation */
	assert_true(fnv_64a_buf("st", 2, fnv_64a_buf("te", 2, FNV1A_64_INIT)) ==
		    U64(0xf9e6e6ef197c2b25));
}

static void test_vdi_hash_vectors(void **state)
{
	assert_int_equal(sd_hash_vdi("test"), 0x7c2b25);
	assert_int_equal(sd_hash_vdi("alpha"), 0xed202b);
	assert_int_equal(sd_hash_vdi("vm-disk-1"), 0x6cb51c);
	assert_int_equal(sd_hash_vdi(""), 0x222325);
	/* always a 24-bit value */
	assert_true(sd_hash_vdi("a much longer name for a virtual disk") <
		    SD_NR_VDIS);
}

/* objects.md §8.2 / §15: attr_id("test", "", 0, "foo") = 17d2d865 */
static void test_attr_id_vector(void **state)
{
	char name[SD_MAX_VDI_LEN] = "test", tag[SD_MAX_VDI_TAG_LEN] = "";
	char key[SD_MAX_VDI_ATTR_KEY_LEN] = "foo";
	uint8_t snap[4] = { 0, 0, 0, 0 };
	uint64_t h = FNV1A_64_INIT;

	h = fnv_64a_buf(name, sizeof(name), h);
	h = fnv_64a_buf(tag, sizeof(tag), h);
	h = fnv_64a_buf(snap, sizeof(snap), h);
	h = fnv_64a_buf(key, sizeof(key), h);
	assert_int_equal((uint32_t)h, 0x17d2d865);
	assert_true(vid_to_attr_oid(sd_hash_vdi("test"), (uint32_t)h) ==
		    U64(0x207c2b2517d2d865));
}

static void set_ipv4(struct node_id *nid, uint8_t a, uint8_t b, uint8_t c,
		     uint8_t d, uint16_t port)
{
	memset(nid, 0, sizeof(*nid));
	nid->addr[12] = a;
	nid->addr[13] = b;
	nid->addr[14] = c;
	nid->addr[15] = d;
	nid->port = port;
}

static void test_vnode_vector(void **state)
{
	struct node_id nid;
	uint64_t base, v;
	uint8_t raw[18] = { 0 };

	set_ipv4(&nid, 127, 0, 0, 1, 7000);
	base = node_base_hash(&nid);
	assert_true(base == U64(0x9cb3d6dd0a4c0f9f));

	/* base is sd_hash of the 16 address bytes and the LE port */
	raw[12] = 127;
	raw[15] = 1;
	raw[16] = 0x58;
	raw[17] = 0x1b;
	assert_true(sd_hash(raw, sizeof(raw)) == U64(0x9cb3d6dd0a4c0f9f));

	v = sd_hash_next(base);
	assert_true(v == U64(0x3af2cba6e538cdf3));
	v = sd_hash_next(v);
	assert_true(v == U64(0xfd38432fd111924b));
	v = sd_hash_next(v);
	assert_true(v == U64(0x2ad2bef8f506e35d));

	/* io_addr/io_port do not take part in the identity hash */
	nid.io_addr[15] = 9;
	nid.io_port = 1234;
	assert_true(node_base_hash(&nid) == U64(0x9cb3d6dd0a4c0f9f));
}

static void test_oid_hash_vectors(void **state)
{
	assert_true(sd_hash_oid(U64(0x007c2b2500000000)) ==
		    U64(0x387358f0fb5c1275));
	assert_true(sd_hash_oid(U64(0x807c2b2500000000)) ==
		    U64(0x8b4b18c243befa1a));
}

/* the ring's vnodes of a one-node cluster are exactly v1, v2, v3 sorted */
static void test_ring_vnodes_of_one_node(void **state)
{
	struct vnode_ring ring;
	struct sd_node n;

	memset(&n, 0, sizeof(n));
	set_ipv4(&n.nid, 127, 0, 0, 1, 7000);
	n.nr_vnodes = 3;
	n.zone = 16777343;
	assert_int_equal(ring_build(&ring, &n, 1), 0);
	assert_int_equal(ring.nr_vnodes, 3);
	assert_int_equal(ring.nr_zones, 1);
	assert_true(ring.vnodes[0].hash == U64(0x2ad2bef8f506e35d));
	assert_true(ring.vnodes[1].hash == U64(0x3af2cba6e538cdf3));
	assert_true(ring.vnodes[2].hash == U64(0xfd38432fd111924b));
	ring_free(&ring);
}

/* ---- placement properties against a brute-force model ---- */

struct model_vnode {
	uint64_t hash;
	struct node_id nid;
	uint32_t zone;
};

struct model {
	size_t nr;
	struct model_vnode *v;	/* sorted by hash */
};

static int model_cmp(const void *a, const void *b)
{
	const struct model_vnode *x = a, *y = b;

	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* vnodes computed from the spec text, independently of ring_build() */
static void model_build(struct model *m, const struct sd_node *nodes,
			size_t nr)
{
	size_t total = 0, k = 0;

	for (size_t i = 0; i < nr; i++)
		total += nodes[i].nr_vnodes;
	m->v = calloc(total ? total : 1, sizeof(*m->v));
	assert_non_null(m->v);
	for (size_t i = 0; i < nr; i++) {
		uint8_t raw[18];
		uint64_t h;

		memcpy(raw, nodes[i].nid.addr, 16);
		raw[16] = (uint8_t)nodes[i].nid.port;
		raw[17] = (uint8_t)(nodes[i].nid.port >> 8);
		h = sd_hash(raw, sizeof(raw));
		for (int j = 0; j < nodes[i].nr_vnodes; j++) {
			h = sd_hash_next(h);
			m->v[k].hash = h;
			m->v[k].nid = nodes[i].nid;
			m->v[k].zone = nodes[i].zone;
			k++;
		}
	}
	qsort(m->v, total, sizeof(*m->v), model_cmp);
	m->nr = total;
}

static int model_zones(const struct sd_node *nodes, size_t nr)
{
	int n = 0;

	for (size_t i = 0; i < nr; i++) {
		int seen = 0;

		if (!nodes[i].nr_vnodes)
			continue;
		for (size_t j = 0; j < i; j++)
			if (nodes[j].nr_vnodes && nodes[j].zone == nodes[i].zone)
				seen = 1;
		if (!seen)
			n++;
	}
	return n > SD_MAX_COPIES ? SD_MAX_COPIES : n;
}

/* linear scan: first vnode >= h, else the smallest; then zone-distinct */
static int model_targets(const struct model *m, uint64_t oid, int copies,
			 int zones, struct node_id *out)
{
	uint64_t h = sd_hash_oid(oid);
	size_t start = 0;
	int want = copies < zones ? copies : zones, n = 0;
	uint32_t used[SD_MAX_COPIES];

	if (!m->nr)
		return 0;
	while (start < m->nr && m->v[start].hash < h)
		start++;
	if (start == m->nr)
		start = 0;
	for (size_t i = 0; i < m->nr && n < want; i++) {
		const struct model_vnode *v = &m->v[(start + i) % m->nr];
		int dup = 0;

		for (int j = 0; j < n; j++)
			if (used[j] == v->zone)
				dup = 1;
		if (dup)
			continue;
		used[n] = v->zone;
		out[n++] = v->nid;
	}
	return n;
}

static void make_nodes(struct sd_node *nodes, size_t nr, const int *zones,
		       const int *vnodes)
{
	for (size_t i = 0; i < nr; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		set_ipv4(&nodes[i].nid, 127, 0, 0, 1, (uint16_t)(7000 + i));
		nodes[i].zone = (uint32_t)zones[i];
		nodes[i].nr_vnodes = (uint16_t)vnodes[i];
		nodes[i].space = U64(1) << 34;
	}
}

/* many oids of different kinds */
static uint64_t nth_oid(unsigned i)
{
	static const uint32_t vids[] = { 0x7c2b25, 0xed202b, 0x6cb51c, 1 };
	uint32_t vid = vids[i % 4];

	switch ((i / 4) % 4) {
	case 0: return vid_to_data_oid(vid, i);
	case 1: return vid_to_vdi_oid(vid);
	case 2: return data_oid_to_ledger_oid(vid_to_data_oid(vid, i * 7));
	default: return vid_to_vmstate_oid(vid, i);
	}
}

static void check_placement(const struct sd_node *nodes, size_t nr,
			    unsigned nr_oids)
{
	struct vnode_ring ring, ring2;
	struct model m;
	int zones = model_zones(nodes, nr);
	struct sd_node *shuffled = calloc(nr, sizeof(*shuffled));

	assert_non_null(shuffled);
	assert_int_equal(ring_build(&ring, nodes, nr), 0);
	/* the same members given in another order build the same ring */
	for (size_t i = 0; i < nr; i++)
		shuffled[i] = nodes[nr - 1 - i];
	assert_int_equal(ring_build(&ring2, shuffled, nr), 0);
	model_build(&m, nodes, nr);
	assert_int_equal(ring.nr_zones, zones);
	assert_int_equal(ring.nr_vnodes, m.nr);
	for (size_t i = 0; i + 1 < ring.nr_vnodes; i++)
		assert_true(ring.vnodes[i].hash < ring.vnodes[i + 1].hash);
	/* the member list is sorted by (address, port) */
	for (size_t i = 0; i + 1 < ring.nr_nodes; i++)
		assert_true(node_cmp(&ring.nodes[i], &ring.nodes[i + 1]) < 0);

	for (unsigned i = 0; i < nr_oids; i++) {
		uint64_t oid = nth_oid(i);

		for (int copies = 1; copies <= 6; copies++) {
			int tgt[SD_MAX_COPIES], tgt2[SD_MAX_COPIES];
			struct node_id want[SD_MAX_COPIES];
			int n = ring_targets(&ring, oid, copies, tgt);
			int n2 = ring_targets(&ring2, oid, copies, tgt2);
			int nm = model_targets(&m, oid, copies, zones, want);

			assert_int_equal(n, copies < zones ? copies : zones);
			assert_int_equal(n, nm);
			assert_int_equal(n2, n);
			for (int j = 0; j < n; j++) {
				const struct sd_node *t = &ring.nodes[tgt[j]];

				assert_true(tgt[j] >= 0 &&
					    (size_t)tgt[j] < ring.nr_nodes);
				/* same answer as the brute-force model */
				assert_true(node_id_eq(&t->nid, &want[j]));
				/* deterministic across builds */
				assert_true(node_id_eq(
					&t->nid, &ring2.nodes[tgt2[j]].nid));
				/* gateways never store objects */
				assert_true(t->nr_vnodes > 0);
				/* zone-distinct */
				for (int k = 0; k < j; k++)
					assert_true(ring.nodes[tgt[k]].zone !=
						    t->zone);
			}
		}
	}
	ring_free(&ring);
	ring_free(&ring2);
	free(m.v);
	free(shuffled);
}

static void test_placement_three_zones(void **state)
{
	static const int zones[] = { 0, 1, 2 }, vn[] = { 128, 128, 128 };
	struct sd_node nodes[3];

	make_nodes(nodes, 3, zones, vn);
	check_placement(nodes, 3, 400);
}

static void test_placement_shared_zones(void **state)
{
	/* 6 nodes in 3 zones: never more than 3 copies, never 2 per zone */
	static const int zones[] = { 5, 5, 9, 9, 1, 1 };
	static const int vn[] = { 128, 64, 100, 128, 7, 200 };
	struct sd_node nodes[6];

	make_nodes(nodes, 6, zones, vn);
	check_placement(nodes, 6, 300);
}

static void test_placement_with_gateways(void **state)
{
	static const int zones[] = { 0, 1, 2, 3, 4 };
	static const int vn[] = { 0, 128, 0, 128, 128 };
	struct sd_node nodes[5];
	struct vnode_ring ring;

	make_nodes(nodes, 5, zones, vn);
	check_placement(nodes, 5, 300);
	/* gateways do not count as zones */
	assert_int_equal(ring_build(&ring, nodes, 5), 0);
	assert_int_equal(ring.nr_zones, 3);
	assert_int_equal(ring.nr_vnodes, 3 * 128);
	ring_free(&ring);
}

static void test_placement_only_gateways(void **state)
{
	static const int zones[] = { 0, 1 }, vn[] = { 0, 0 };
	struct sd_node nodes[2];
	struct vnode_ring ring;
	int tgt[SD_MAX_COPIES];

	make_nodes(nodes, 2, zones, vn);
	assert_int_equal(ring_build(&ring, nodes, 2), 0);
	assert_int_equal(ring.nr_zones, 0);
	assert_int_equal(ring_targets(&ring, nth_oid(1), 3, tgt), 0);
	ring_free(&ring);
}

static void test_placement_many_zones(void **state)
{
	/* more zones than SD_MAX_COPIES: up to 31 distinct targets */
	struct sd_node nodes[40];
	int zones[40], vn[40];
	struct vnode_ring ring;
	int tgt[SD_MAX_COPIES];

	for (int i = 0; i < 40; i++) {
		zones[i] = 1000 + i;
		vn[i] = 4;
	}
	make_nodes(nodes, 40, zones, vn);
	assert_int_equal(ring_build(&ring, nodes, 40), 0);
	assert_int_equal(ring.nr_zones, SD_MAX_COPIES);
	assert_int_equal(ring_targets(&ring, nth_oid(3), SD_MAX_COPIES, tgt),
			 SD_MAX_COPIES);
	for (int j = 0; j < SD_MAX_COPIES; j++)
		for (int k = 0; k < j; k++)
			assert_int_not_equal(tgt[j], tgt[k]);
	ring_free(&ring);
	check_placement(nodes, 40, 50);
}

/* the first target is the owner of the first vnode >= hash (wrapping) */
static void test_first_target_and_wraparound(void **state)
{
	static const int zones[] = { 0, 1, 2 }, vn[] = { 1, 1, 1 };
	struct sd_node nodes[3];
	struct vnode_ring ring;
	uint64_t max_hash, min_hash;
	int wrapped = 0, inside = 0;

	make_nodes(nodes, 3, zones, vn);
	assert_int_equal(ring_build(&ring, nodes, 3), 0);
	assert_int_equal(ring.nr_vnodes, 3);
	min_hash = ring.vnodes[0].hash;
	max_hash = ring.vnodes[2].hash;

	for (uint32_t i = 0; i < 20000 && (!wrapped || !inside); i++) {
		uint64_t oid = vid_to_data_oid(0x7c2b25, i);
		uint64_t h = sd_hash_oid(oid);
		int tgt[3];
		size_t first = 0;

		assert_int_equal(ring_targets(&ring, oid, 3, tgt), 3);
		while (first < 3 && ring.vnodes[first].hash < h)
			first++;
		if (first == 3) {
			/* beyond the largest vnode: wraps to the smallest */
			assert_true(h > max_hash);
			assert_int_equal(tgt[0], ring.vnodes[0].node);
			assert_int_equal(tgt[1], ring.vnodes[1].node);
			assert_int_equal(tgt[2], ring.vnodes[2].node);
			wrapped++;
		} else {
			assert_int_equal(tgt[0], ring.vnodes[first].node);
			assert_int_equal(tgt[1],
					 ring.vnodes[(first + 1) % 3].node);
			if (h <= min_hash)
				assert_int_equal(first, 0);
			inside++;
		}
	}
	assert_true(wrapped > 0);
	assert_true(inside > 0);
	ring_free(&ring);
}

/* ring_build() places every vnode where the spec model puts it */
static void test_ring_matches_model(void **state)
{
	static const int zones[] = { 0, 1, 2 }, vn[] = { 64, 64, 64 };
	struct sd_node nodes[3];
	struct vnode_ring ring;
	struct model m;

	make_nodes(nodes, 3, zones, vn);
	assert_int_equal(ring_build(&ring, nodes, 3), 0);
	model_build(&m, nodes, 3);
	/* every vnode hash is found at its own position by the model */
	for (size_t i = 0; i < m.nr; i++) {
		size_t s = 0;

		while (s < m.nr && m.v[s].hash < m.v[i].hash)
			s++;
		assert_int_equal(s, i);
		assert_true(node_id_eq(&ring.nodes[ring.vnodes[i].node].nid,
				       &m.v[i].nid));
	}
	ring_free(&ring);
	free(m.v);
}

/* the placement of one oid does not change when an unrelated copy count
 * is asked: the first k targets of c copies are the targets of k copies */
static void test_targets_prefix_stable(void **state)
{
	static const int zones[] = { 0, 1, 2, 3, 4 };
	static const int vn[] = { 128, 128, 128, 128, 128 };
	struct sd_node nodes[5];
	struct vnode_ring ring;

	make_nodes(nodes, 5, zones, vn);
	assert_int_equal(ring_build(&ring, nodes, 5), 0);
	for (unsigned i = 0; i < 200; i++) {
		int all[5], some[5];
		int n = ring_targets(&ring, nth_oid(i), 5, all);

		assert_int_equal(n, 5);
		for (int c = 1; c < 5; c++) {
			assert_int_equal(ring_targets(&ring, nth_oid(i), c,
						      some), c);
			assert_memory_equal(some, all, (size_t)c * sizeof(int));
		}
	}
	ring_free(&ring);
}

static void test_node_order(void **state)
{
	struct sd_node a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	set_ipv4(&a.nid, 127, 0, 0, 1, 7001);
	set_ipv4(&b.nid, 127, 0, 0, 1, 7000);
	assert_true(node_cmp(&a, &b) > 0);
	/* port order is numeric, not by little-endian bytes */
	set_ipv4(&a.nid, 127, 0, 0, 1, 256);
	set_ipv4(&b.nid, 127, 0, 0, 1, 1);
	assert_true(node_cmp(&a, &b) > 0);
	/* address bytes decide first */
	set_ipv4(&a.nid, 10, 0, 0, 2, 1);
	set_ipv4(&b.nid, 127, 0, 0, 1, 9000);
	assert_true(node_cmp(&a, &b) < 0);
	/* identity ignores the io address */
	set_ipv4(&a.nid, 127, 0, 0, 1, 7000);
	set_ipv4(&b.nid, 127, 0, 0, 1, 7000);
	b.nid.io_port = 99;
	assert_true(node_id_eq(&a.nid, &b.nid));
	b.nid.port = 7001;
	assert_false(node_id_eq(&a.nid, &b.nid));
}

/* ---- automatic vnodes (cluster.md §2.4) ---- */

/*
 * Expected counts computed outside C from the spec's formula, in IEEE
 * single precision with round-half-to-even: avg = (sum of spaces) / n,
 * then rintf(128.0f * (float)space / (float)avg).
 */
static void check_auto(const uint64_t *space, const uint16_t *vnodes,
		       const uint16_t *want, size_t nr)
{
	struct sd_node n[8];

	assert_true(nr <= 8);
	memset(n, 0, sizeof(n));
	for (size_t i = 0; i < nr; i++) {
		n[i].space = space[i];
		n[i].nr_vnodes = vnodes[i];
	}
	nodes_auto_vnodes(n, nr);
	for (size_t i = 0; i < nr; i++)
		assert_int_equal(n[i].nr_vnodes, want[i]);
}

static void test_auto_vnodes_vectors(void **state)
{
	const uint16_t d3[] = { 128, 128, 128 };

	/* 100, 200 and 300 GiB: avg 200 GiB */
	check_auto((const uint64_t[]){ U64(107374182400), U64(214748364800),
				       U64(322122547200) }, d3,
		   (const uint16_t[]){ 64, 128, 192 }, 3);
	/* free space that differs by little keeps 128 each */
	check_auto((const uint64_t[]){ U64(79456894976), U64(79456000000),
				       U64(79400000000) }, d3,
		   (const uint16_t[]){ 128, 128, 128 }, 3);
	/* 1 GiB, 1 GiB, 1 GiB + 12 MiB: 128.93 rounds to 129 */
	check_auto((const uint64_t[]){ U64(1073741824), U64(1073741824),
				       U64(1086324736) }, d3,
		   (const uint16_t[]){ 128, 128, 129 }, 3);
	/* integer mean: (5 + 5 + 3) / 3 = 4 */
	check_auto((const uint64_t[]){ 5, 5, 3 }, d3,
		   (const uint16_t[]){ 160, 160, 96 }, 3);
	/* halves round to even: 2.5 -> 2, 253.5 -> 254 (avg 256) */
	check_auto((const uint64_t[]){ 5, 507 }, d3,
		   (const uint16_t[]){ 2, 254 }, 2);
	/* 0.5 rounds to 0: a storage node keeps 1; 255.5 -> 256 */
	check_auto((const uint64_t[]){ 1, 511 }, d3,
		   (const uint16_t[]){ 1, 256 }, 2);
	/* a gateway (0 vnodes) and a node of unknown capacity are left out */
	check_auto((const uint64_t[]){ U64(10737418240), U64(5000000000), 0,
				       U64(21474836480) },
		   (const uint16_t[]){ 128, 0, 128, 128 },
		   (const uint16_t[]){ 85, 0, 128, 171 }, 4);
}

/* the largest count is bounded by the field */
static void test_auto_vnodes_bounded(void **state)
{
	struct sd_node n[1024];

	memset(n, 0, sizeof(n));
	for (size_t i = 0; i < 1024; i++) {
		n[i].space = 1;
		n[i].nr_vnodes = 128;
	}
	n[0].space = U64(1) << 40;
	nodes_auto_vnodes(n, 1024);
	assert_int_equal(n[0].nr_vnodes, 65535);
	assert_int_equal(n[1].nr_vnodes, 1);
}

/* ---- stable vnodes (Kelpie, flag STABLE_VNODES) ---- */

#define GiB U64(1073741824)

/* @nr storage nodes 127.0.0.1:7000+i with @space GiB each */
static void mk_nodes(struct sd_node *n, size_t nr, const uint64_t *space)
{
	memset(n, 0, nr * sizeof(*n));
	for (size_t i = 0; i < nr; i++) {
		set_ipv4(&n[i].nid, 127, 0, 0, 1, (uint16_t)(7000 + i));
		n[i].space = space[i] * GiB;
		n[i].nr_vnodes = 128;
	}
}

/* the first epoch: no records to go by, the counts of nodes_auto_vnodes */
static void test_stable_vnodes_first(void **state)
{
	struct sd_node a[3], b[3];

	mk_nodes(a, 3, (const uint64_t[]){ 1, 2, 3 });
	mk_nodes(b, 3, (const uint64_t[]){ 1, 2, 3 });
	nodes_auto_vnodes(a, 3);
	nodes_stable_vnodes(b, 3, NULL, 0, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(a[i].nr_vnodes, b[i].nr_vnodes);
	assert_int_equal(b[0].nr_vnodes, 64);
}

/*
 * A join, a leave and a capacity change re-weigh only the node they
 * concern, where the mean rule re-weighs every node
 */
static void test_stable_vnodes_changes(void **state)
{
	struct sd_node prev[4], n[4], m[4];

	mk_nodes(prev, 3, (const uint64_t[]){ 1, 2, 3 });
	nodes_auto_vnodes(prev, 3);		/* 64, 128, 192 */
	/* a 4 GiB node joins: 256, the others keep theirs */
	mk_nodes(n, 4, (const uint64_t[]){ 1, 2, 3, 4 });
	nodes_stable_vnodes(n, 4, prev, 3, 0);
	assert_int_equal(n[0].nr_vnodes, 64);
	assert_int_equal(n[1].nr_vnodes, 128);
	assert_int_equal(n[2].nr_vnodes, 192);
	assert_int_equal(n[3].nr_vnodes, 256);
	/* the mean rule moves all of them: 51, 102, 154, 205 */
	mk_nodes(m, 4, (const uint64_t[]){ 1, 2, 3, 4 });
	nodes_auto_vnodes(m, 4);
	assert_int_equal(m[0].nr_vnodes, 51);
	/* the 1 GiB node leaves: nobody else changes */
	memcpy(prev, n, sizeof(n));
	memcpy(m, &n[1], 3 * sizeof(*m));
	nodes_stable_vnodes(m, 3, prev, 4, 0);
	assert_int_equal(m[0].nr_vnodes, 128);
	assert_int_equal(m[1].nr_vnodes, 192);
	assert_int_equal(m[2].nr_vnodes, 256);
	/* the 2 GiB node grows to 3 GiB (its record says so, with its old
	 * count, as an update writes it): 192, the others keep theirs */
	memcpy(prev, m, 3 * sizeof(*m));
	prev[0].space = 3 * GiB;
	memcpy(n, prev, 3 * sizeof(*n));
	nodes_stable_vnodes(n, 3, prev, 3, 0);
	assert_int_equal(n[0].nr_vnodes, 192);
	assert_int_equal(n[1].nr_vnodes, 192);
	assert_int_equal(n[2].nr_vnodes, 256);
}

/* counts a rounding away from the ratio are kept; gateways stay 0 */
static void test_stable_vnodes_rounding(void **state)
{
	struct sd_node prev[3], n[4];

	mk_nodes(prev, 3, (const uint64_t[]){ 10, 10, 10 });
	prev[0].nr_vnodes = 129;	/* within a vnode of 128 */
	prev[1].nr_vnodes = 133;	/* beyond a vnode and 1 % */
	mk_nodes(n, 4, (const uint64_t[]){ 10, 10, 10, 10 });
	n[3].nr_vnodes = 0;		/* a gateway */
	nodes_stable_vnodes(n, 4, prev, 3, 0);
	assert_int_equal(n[0].nr_vnodes, 129);
	assert_int_equal(n[1].nr_vnodes, 129);	/* the median: 129/10 */
	assert_int_equal(n[2].nr_vnodes, 128);
	assert_int_equal(n[3].nr_vnodes, 0);
}

/* a base chosen at format (-S -N 512) lives on in the records */
static void test_stable_vnodes_base(void **state)
{
	struct sd_node prev[3], n[4];

	mk_nodes(prev, 3, (const uint64_t[]){ 1, 2, 3 });
	nodes_stable_vnodes(prev, 3, NULL, 0, 512);
	assert_int_equal(prev[0].nr_vnodes, 256);
	assert_int_equal(prev[1].nr_vnodes, 512);
	assert_int_equal(prev[2].nr_vnodes, 768);
	/* a join weighed by the records: the base is not needed again */
	mk_nodes(n, 4, (const uint64_t[]){ 1, 2, 3, 4 });
	nodes_stable_vnodes(n, 4, prev, 3, 0);
	assert_int_equal(n[0].nr_vnodes, 256);
	assert_int_equal(n[3].nr_vnodes, 1024);
}

/* the sorted lookup finds what a linear search finds, and only that */
static void test_nodes_find(void **state)
{
	enum { N = 3000 };
	struct sd_node *nodes = calloc(N, sizeof(*nodes)), *sorted;
	unsigned seed = 11;

	assert_null(nodes_find(NULL, 0, &nodes[0].nid));
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		/* addresses that share prefixes, ports that differ */
		nodes[i].nid.addr[12] = 10;
		nodes[i].nid.addr[15] = (uint8_t)(seed >> 16);
		nodes[i].nid.addr[14] = (uint8_t)(i & 7);
		nodes[i].nid.port = (uint16_t)(7000 + i);
		nodes[i].space = (uint64_t)i;
	}
	sorted = nodes_sorted_copy(nodes, N);
	assert_non_null(sorted);
	for (int i = 0; i < N; i++) {
		const struct sd_node *f = nodes_find(sorted, N, &nodes[i].nid);
		struct node_id other = nodes[i].nid;

		assert_non_null(f);
		assert_int_equal(f->space, nodes[i].space);
		other.port = 1;
		assert_null(nodes_find(sorted, N, &other));
	}
	free(sorted);
	free(nodes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv_vectors),
		cmocka_unit_test(test_vdi_hash_vectors),
		cmocka_unit_test(test_attr_id_vector),
		cmocka_unit_test(test_vnode_vector),
		cmocka_unit_test(test_oid_hash_vectors),
		cmocka_unit_test(test_ring_vnodes_of_one_node),
		cmocka_unit_test(test_placement_three_zones),
		cmocka_unit_test(test_placement_shared_zones),
		cmocka_unit_test(test_placement_with_gateways),
		cmocka_unit_test(test_placement_only_gateways),
		cmocka_unit_test(test_placement_many_zones),
		cmocka_unit_test(test_first_target_and_wraparound),
		cmocka_unit_test(test_ring_matches_model),
		cmocka_unit_test(test_targets_prefix_stable),
		cmocka_unit_test(test_node_order),
		cmocka_unit_test(test_auto_vnodes_vectors),
		cmocka_unit_test(test_auto_vnodes_bounded),
		cmocka_unit_test(test_stable_vnodes_first),
		cmocka_unit_test(test_stable_vnodes_changes),
		cmocka_unit_test(test_stable_vnodes_rounding),
		cmocka_unit_test(test_stable_vnodes_base),
		cmocka_unit_test(test_nodes_find),
	};

	return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
