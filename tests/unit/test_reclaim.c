// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What reclaiming the objects of deleted VDIs (sheep/vdi/reclaim.c) may
 * conclude from the VDI table: which deleted VDIs no live VDI descends
 * from (through loops and missing parents too), and when the table knows
 * the lineage at all (sheep/state/vdi.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "state/vdi.h"
#include "vdi/reclaim.h"

#define V(v, p, d) { .vid = (v), .parent = (p), .deleted = (d) }

static struct reclaim_vdi *find(struct reclaim_vdi *t, size_t nr,
				uint32_t vid)
{
	struct reclaim_vdi *e = reclaim_find(t, nr, vid);

	assert_non_null(e);
	return e;
}

static bool reclaimable(struct reclaim_vdi *t, size_t nr, uint32_t vid)
{
	struct reclaim_vdi *e = find(t, nr, vid);

	return e->deleted && !e->below_live;
}

static void test_mark(void **state)
{
	struct reclaim_vdi t[] = {
		/* a live clone below two deleted ancestors */
		V(3, 2, 0), V(1, 0, 1), V(2, 1, 1),
		/* a family all deleted */
		V(10, 0, 1), V(11, 10, 1), V(12, 11, 1),
		/* a deleted leaf below a live VDI */
		V(20, 0, 0), V(21, 20, 1),
		/* a loop of parents, a live VDI below it */
		V(30, 31, 1), V(31, 30, 1), V(32, 30, 0),
		/* a parent not in the table */
		V(40, 99, 0), V(41, 40, 1),
		/* its own parent */
		V(50, 50, 1), V(51, 51, 0),
	};
	size_t nr = sizeof(t) / sizeof(t[0]);

	reclaim_sort(t, nr);
	assert_int_equal(reclaim_mark(t, nr), 6);
	assert_false(reclaimable(t, nr, 1));
	assert_false(reclaimable(t, nr, 2));
	assert_false(reclaimable(t, nr, 3));
	assert_true(reclaimable(t, nr, 10));
	assert_true(reclaimable(t, nr, 11));
	assert_true(reclaimable(t, nr, 12));
	assert_false(reclaimable(t, nr, 20));
	assert_true(reclaimable(t, nr, 21));
	assert_false(reclaimable(t, nr, 30));
	assert_false(reclaimable(t, nr, 31));
	assert_true(reclaimable(t, nr, 41));
	assert_true(reclaimable(t, nr, 50));
	assert_null(reclaim_find(t, nr, 0));
	assert_null(reclaim_find(t, nr, 99));

	/* marks are recomputed: the clone deleted, its lineage goes too */
	find(t, nr, 3)->deleted = 1;
	assert_int_equal(reclaim_mark(t, nr), 9);
	assert_true(reclaimable(t, nr, 1));
}

/*
 * What a pass removes: only objects of candidates whose headers it read
 * (has_local) and found dead; never an inode, never an object in doubt
 * (so that those can never fill a batch), never one of a VDI met after
 * the headers were read
 */
static void test_take(void **state)
{
	struct reclaim_vdi t[] = {
		V(10, 0, 1),		/* dead, read */
		V(20, 0, 1),		/* a header in use */
		V(30, 0, 1),		/* no object when the headers were read */
		V(40, 0, 0),		/* live */
		V(50, 0, 1), V(51, 50, 0),	/* below a live clone */
	};
	size_t nr = sizeof(t) / sizeof(t[0]);
	uint64_t d10 = vid_to_data_oid(10, 7);

	(void)state;
	reclaim_sort(t, nr);
	reclaim_mark(t, nr);
	find(t, nr, 10)->has_local = 1;
	find(t, nr, 20)->has_local = 1;
	find(t, nr, 20)->doubt = 1;
	find(t, nr, 40)->has_local = 1;
	find(t, nr, 50)->has_local = 1;
	assert_true(reclaim_take(t, nr, d10));
	assert_true(reclaim_take(t, nr, data_oid_to_ledger_oid(d10)));
	assert_false(reclaim_take(t, nr, vid_to_vdi_oid(10)));
	assert_false(reclaim_take(t, nr, vid_to_data_oid(20, 0)));
	assert_false(reclaim_take(t, nr, vid_to_data_oid(30, 0)));
	assert_false(reclaim_take(t, nr, vid_to_data_oid(40, 0)));
	assert_false(reclaim_take(t, nr, vid_to_data_oid(50, 0)));
	assert_false(reclaim_take(t, nr, vid_to_data_oid(99, 0)));
}

static void header(uint32_t vid, uint32_t parent, const char *name)
{
	struct sd_inode_header h;

	memset(&h, 0, sizeof(h));
	h.vdi_id = vid;
	h.parent_vdi_id = parent;
	h.nr_copies = 3;
	strcpy(h.name, name);
	vdi_set_from_header(&h);
}

static void test_lineage_known(void **state)
{
	struct vdi_state vs;

	vdi_reset();
	assert_true(vdi_lineage_known());
	header(5, 0, "a");
	header(6, 5, "");
	assert_true(vdi_lineage_known());
	assert_int_equal(vdi_get(6, false)->parent_vid, 5);

	/* an entry a lock or a deletion made: parent not known */
	vdi_get(7, true);
	assert_false(vdi_lineage_known());
	memset(&vs, 0, sizeof(vs));
	vs.vid = 7;
	vs.parent_vid = 5;
	vs.pad[0] = VDI_STATE_PARENT_UNKNOWN;
	vdi_merge_state(&vs, true);
	assert_false(vdi_lineage_known());
	vs.pad[0] = 0;
	vdi_merge_state(&vs, true);
	assert_true(vdi_lineage_known());
	assert_int_equal(vdi_get(7, false)->parent_vid, 5);

	/* a merged entry keeps the sender's doubt */
	vs.vid = 8;
	vs.pad[0] = VDI_STATE_PARENT_UNKNOWN;
	vdi_merge_state(&vs, true);
	assert_false(vdi_lineage_known());
	header(8, 5, "b");
	assert_true(vdi_lineage_known());

	/* a VDI in use without an entry */
	vdi_set_inuse(9, true);
	assert_false(vdi_lineage_known());
	vdi_set_inuse(9, false);
	assert_true(vdi_lineage_known());

	/* a member's state could not be fetched */
	vdi_state_mark_partial();
	assert_false(vdi_lineage_known());
	vdi_reset();
	assert_true(vdi_lineage_known());
}

static int setup(void **state)
{
	return vdi_init_bitmaps();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mark),
		cmocka_unit_test(test_take),
		cmocka_unit_test(test_lineage_known),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
