// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * VID recycling in the VDI table (state/vdi.c, doc/vid-recycling.md):
 * what nodes say of one vid is ordered by incarnation (gen) - the free
 * marker of gen g, the VDI of gen g, its deletion, the marker of g + 1 -
 * so a node that missed a recycling never brings the old family back;
 * the bitmap walks NEW_VDI and the lookup use; the inode fields' bytes.
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
#include "proto.h"
#include "util.h"
#include "state/vdi.h"

static uint32_t freed[16];
static int nr_freed;

static void on_free(uint32_t vid)
{
	freed[nr_freed++] = vid;
}

static void header(uint32_t vid, const char *name, uint32_t gen, bool free)
{
	struct sd_inode_header h;

	memset(&h, 0, sizeof(h));
	h.vdi_id = vid;
	h.nr_copies = 3;
	strcpy(h.name, name);
	h.vdi_size = name[0] ? 4 << 20 : 0;
	if (gen || free) {
		h.kelpie_magic = INODE_KELPIE_MAGIC;
		h.recycle_gen = gen;
		h.kelpie_flags = free ? INODE_FREE : 0;
	}
	vdi_set_from_header(&h);
}

static struct vdi_state record(uint32_t vid, uint16_t gen, bool deleted,
			       bool free)
{
	struct vdi_state vs;

	memset(&vs, 0, sizeof(vs));
	vs.vid = vid;
	vs.nr_copies = 3;
	vs.deleted = deleted;
	vs.recycle_gen = gen;
	vs.pad[0] = free ? VDI_STATE_RECYCLED : 0;
	return vs;
}

static void merge(uint32_t vid, uint16_t gen, bool deleted, bool free)
{
	struct vdi_state vs = record(vid, gen, deleted, free);

	vdi_merge_state(&vs, true);
}

/* inuse, deleted, free as three bits */
static int bits(uint32_t vid)
{
	return vdi_test_inuse(vid) << 2 | vdi_test_deleted(vid) << 1 |
	       vdi_test_free(vid);
}

static void test_marker_from_scan(void **state)
{
	vdi_reset();
	nr_freed = 0;
	/* a marker makes the vid free and its objects go */
	header(1, "", 1, true);
	assert_int_equal(bits(1), 1);
	assert_true(vdi_get(1, false)->recycled);
	assert_int_equal(nr_freed, 1);
	assert_int_equal(freed[0], 1);
	/* a stale copy of the old, deleted inode changes nothing */
	header(1, "", 0, false);
	assert_int_equal(bits(1), 1);
	/* nor the old VDI itself, live in a copy that missed the delete */
	header(1, "old", 0, false);
	assert_int_equal(bits(1), 1);
	/* the VDI that reused the id wins over the marker */
	header(1, "new", 1, false);
	assert_int_equal(bits(1), 4);
	assert_false(vdi_get(1, false)->recycled);
	/* and a marker of the gen before does not come back */
	header(1, "", 0, true);
	assert_int_equal(bits(1), 4);
	assert_int_equal(nr_freed, 1);
}

static void test_merge_order(void **state)
{
	vdi_reset();
	nr_freed = 0;
	/* members know vid 2 free at gen 1 */
	merge(2, 1, false, true);
	assert_int_equal(bits(2), 1);
	assert_int_equal(nr_freed, 1);
	/* a node that was down says the old VDI is live, or deleted */
	merge(2, 0, false, false);
	merge(2, 0, true, false);
	assert_int_equal(bits(2), 1);
	/* the same marker again: no second removal */
	merge(2, 1, false, true);
	assert_int_equal(nr_freed, 1);
	/* the id was reused: gen 1 live replaces the marker */
	merge(2, 1, false, false);
	assert_int_equal(bits(2), 4);
	assert_int_equal(vdi_get(2, false)->gen, 1);
	/* a node that missed the reuse still says free at gen 1 */
	merge(2, 1, false, true);
	assert_int_equal(bits(2), 4);
	/* the new VDI deleted, as always: the flag is or-ed */
	merge(2, 1, true, false);
	assert_int_equal(bits(2), 6);
	/* recycled again: gen 2 */
	merge(2, 2, false, true);
	assert_int_equal(bits(2), 1);
	assert_int_equal(nr_freed, 2);
	/* a record of a vid this node never heard of: free at gen 3 */
	merge(3, 3, false, true);
	assert_int_equal(bits(3), 1);
	assert_int_equal(vdi_get(3, false)->gen, 3);
}

/* without recycling (gen 0 everywhere, no marker) states merge as ever */
static void test_plain_merge(void **state)
{
	vdi_reset();
	nr_freed = 0;
	header(4, "a", 0, false);
	merge(4, 0, true, false);
	assert_int_equal(bits(4), 6);
	/* a header read again overwrites, as before */
	header(4, "a", 0, false);
	assert_false(vdi_get(4, false)->deleted);
	assert_int_equal(nr_freed, 0);
	/* gens compare as serial numbers: 1 is newer than 65535 */
	merge(5, 65535, false, true);
	merge(5, 1, false, false);
	assert_int_equal(bits(5), 4);
	merge(5, 65535, true, false);
	assert_int_equal(bits(5), 4);
}

static void test_walks(void **state)
{
	vdi_reset();
	assert_int_equal(vdi_next_clear(1), 1);
	for (uint32_t v = 1; v < 200; v++)
		vdi_set_inuse(v, true);
	assert_int_equal(vdi_next_clear(1), 200);
	assert_int_equal(vdi_next_clear(64), 200);
	vdi_set_inuse(130, false);
	assert_int_equal(vdi_next_clear(1), 130);
	assert_int_equal(vdi_next_clear(131), 200);
	vdi_set_inuse(SD_NR_VDIS - 1, true);
	assert_int_equal(vdi_next_clear(SD_NR_VDIS - 1), 0);

	assert_int_equal(vdi_prev_used(SD_NR_VDIS), SD_NR_VDIS - 1);
	assert_int_equal(vdi_prev_used(SD_NR_VDIS - 1), 199);
	assert_int_equal(vdi_prev_used(131), 129);
	assert_int_equal(vdi_prev_used(64), 63);
	assert_int_equal(vdi_prev_used(2), 1);
	assert_int_equal(vdi_prev_used(1), 0);
	/* deleted counts as used for the lookup */
	vdi_set_inuse(130, false);
	vdi_set_deleted(130, true);
	assert_int_equal(vdi_prev_used(131), 130);
	vdi_reset();
	assert_int_equal(vdi_prev_used(SD_NR_VDIS), 0);
}

/* the fields sit in the old child list's last 12 bytes, little endian */
static void test_inode_bytes(void **state)
{
	uint8_t buf[SD_INODE_HEADER_SIZE];
	struct sd_inode_header h, back;

	memset(&h, 0, sizeof(h));
	h.kelpie_magic = INODE_KELPIE_MAGIC;
	h.recycle_gen = 0x01020304;
	h.kelpie_flags = INODE_FREE;
	inode_header_encode(&h, buf);
	assert_int_equal(get_le32(buf + 4652), INODE_KELPIE_MAGIC);
	assert_int_equal(get_le32(buf + 4656), 0x01020304);
	assert_int_equal(get_le32(buf + 4660), INODE_FREE);
	assert_memory_equal(buf + 4652, "RPLK", 4);
	inode_header_decode(&back, buf);
	assert_int_equal(back.recycle_gen, 0x01020304);
	/* the vdi_state record carries the gen's low 16 bits at 10 */
	{
		struct vdi_state vs = record(7, 0xabcd, false, true), out;
		uint8_t rec[sizeof(struct vdi_state)];

		vdi_state_encode(&vs, rec);
		assert_int_equal(rec[9], VDI_STATE_RECYCLED);
		assert_int_equal(rec[10] | rec[11] << 8, 0xabcd);
		vdi_state_decode(&out, rec);
		assert_int_equal(out.recycle_gen, 0xabcd);
	}
}

static int setup(void **state)
{
	vdi_set_free_hook(on_free);
	return vdi_init_bitmaps();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marker_from_scan),
		cmocka_unit_test(test_merge_order),
		cmocka_unit_test(test_plain_merge),
		cmocka_unit_test(test_walks),
		cmocka_unit_test(test_inode_bytes),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
