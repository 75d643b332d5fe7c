// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * recovery/strips.c: which strip of a coded object this node holds in a
 * ring (also with fewer zones than strips), and the removal of the strips
 * it no longer holds once every node has recovered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "hash.h"
#include "core/core.h"
#include "recovery/strips.h"
#include "store/store.h"

#define STRIP	4096
#define OID	UINT64_C(0x00abcdef00000003)
#define P21	0x11		/* 2:1 */
#define P42	0x22		/* 4:2 */

static char base[] = "/tmp/kelpie-test-strips.XXXXXX";
static uint8_t buf[STRIP];

static struct obj_key key(int i)
{
	return (struct obj_key){ .oid = OID, .idx = (uint8_t)i };
}

static int setup(void **state)
{
	if (!mkdtemp(base))
		return -1;
	memset(buf, 0x5a, sizeof(buf));
	return store_init(base, true);
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	return system(cmd) ? -1 : 0;
}

/* strips 0..2 of OID, each with its undo file */
static void make_strips(void)
{
	for (int i = 0; i < 3; i++) {
		store_remove(key(i));
		assert_int_equal(store_strip_install(key(i), STRIP, 4, buf, false),
				 SD_RES_SUCCESS);
	}
}

static bool undo_exists(int i)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/obj/%016" PRIx64 "_%d.undo", base, OID, i);
	return access(p, F_OK) == 0;
}

static void test_drop_misplaced(void **state)
{
	struct strip_keep k = { .oid = OID, .keep = 1, .n = 3 };
	bool stop = false;

	make_strips();
	assert_true(undo_exists(0));
	strips_drop_misplaced(&k, 1, &stop);
	assert_int_equal(store_exist(key(0)), SD_RES_NO_OBJ);
	assert_int_equal(store_exist(key(1)), SD_RES_SUCCESS);
	assert_int_equal(store_exist(key(2)), SD_RES_NO_OBJ);
	assert_false(undo_exists(0));
	assert_true(undo_exists(1));
	/* a node that holds no strip of it now: all go */
	k.keep = -1;
	strips_drop_misplaced(&k, 1, &stop);
	assert_int_equal(store_exist(key(1)), SD_RES_NO_OBJ);
}

/* a newer epoch began: nothing more is removed */
static void test_drop_stops(void **state)
{
	struct strip_keep k = { .oid = OID, .keep = 1, .n = 3 };
	bool stop = true;

	make_strips();
	strips_drop_misplaced(&k, 1, &stop);
	for (int i = 0; i < 3; i++)
		assert_int_equal(store_exist(key(i)), SD_RES_SUCCESS);
}

static void make_nodes(struct sd_node *nodes, int nr)
{
	for (int i = 0; i < nr; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		nodes[i].nid.addr[12] = 127;
		nodes[i].nid.addr[15] = 1;
		nodes[i].nid.port = (uint16_t)(7000 + i);
		nodes[i].zone = (uint32_t)i;
		nodes[i].nr_vnodes = 64;
		nodes[i].space = UINT64_C(1) << 34;
	}
}

/* each node's index is its position among the targets, on every node */
static void check_indices(const struct sd_node *nodes, int nr,
			  uint8_t policy, int want_placed)
{
	int n = ec_policy_data(policy) + ec_policy_parity(policy);
	int tgt[SD_MAX_COPIES], k;
	struct vnode_ring ring;

	assert_int_equal(ring_build(&ring, nodes, (size_t)nr), 0);
	for (unsigned o = 0; o < 64; o++) {
		uint64_t oid = vid_to_data_oid(0xabcdef, o);
		int held = 0;

		k = ring_targets(&ring, oid, n, tgt);
		assert_int_equal(k, want_placed);
		assert_int_equal(strips_all_placed(&ring, oid, policy),
				 k == n);
		for (int i = 0; i < nr; i++) {
			int idx;

			sys.self = ring.nodes[i];
			idx = strip_index(&ring, oid, policy);
			if (k < ec_policy_data(policy)) {
				assert_int_equal(idx, STRIP_NO_RING);
				continue;
			}
			if (idx < 0)
				continue;
			assert_true(idx < k);
			assert_true(node_id_eq(&ring.nodes[tgt[idx]].nid,
					       &ring.nodes[i].nid));
			held++;
		}
		if (k >= ec_policy_data(policy))
			assert_int_equal(held, k);
	}
	ring_free(&ring);
}

static void test_strip_index(void **state)
{
	struct sd_node nodes[8];

	make_nodes(nodes, 8);
	check_indices(nodes, 8, P21, 3);
	check_indices(nodes, 8, P42, 6);
	/* 5 zones for 4:2: the last strip has no target */
	check_indices(nodes, 5, P42, 5);
	check_indices(nodes, 4, P42, 4);
	/* fewer zones than data strips: nothing */
	check_indices(nodes, 3, P42, 3);
	check_indices(nodes, 2, P21, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_misplaced),
		cmocka_unit_test(test_drop_stops),
		cmocka_unit_test(test_strip_index),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
