// SPDX-License-Identifier: GPL-2.0-or-later
/* Inode index helpers and object-id arithmetic (objects.md §1, §3) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "inode.h"

static void test_offsets(void **state)
{
	assert_int_equal(inode_index_offset(0), 4664);
	assert_int_equal(inode_index_offset(1), 4668);
	assert_int_equal(inode_index_offset(SD_INODE_DATA_INDEX - 1),
			 4198968 - 4);
	assert_int_equal(inode_gref_offset(0), 4198968);
	assert_int_equal(inode_gref_offset(SD_INODE_DATA_INDEX - 1) + 8,
			 SD_INODE_SIZE);
}

static void test_sizes(void **state)
{
	assert_true(inode_max_size(22) == (UINT64_C(4) << 40));
	assert_true(inode_max_size(20) == (UINT64_C(1) << 40));
	assert_true(inode_nr_objs(0, 22) == 0);
	assert_true(inode_nr_objs(1, 22) == 1);
	assert_true(inode_nr_objs(4 << 20, 22) == 1);
	assert_true(inode_nr_objs((4 << 20) + 1, 22) == 2);
	assert_true(inode_nr_objs(UINT64_C(10) << 30, 22) == 2560);
	assert_true(inode_nr_objs(UINT64_C(1) << 20, 20) == 1);
}

static void test_index_range(void **state)
{
	assert_false(inode_range_in_index(0, 4664));
	assert_false(inode_range_in_index(4660, 8));
	assert_true(inode_range_in_index(4664, 4));
	assert_true(inode_range_in_index(4664 + 4 * 100, 4 * 28));
	assert_true(inode_range_in_index(4198968 - 4, 4));
	assert_false(inode_range_in_index(4198968 - 4, 8));
	assert_false(inode_range_in_index(4664, 0));
}

static void test_oids(void **state)
{
	uint32_t vid = 0x7c2b25;

	assert_true(vid_to_vdi_oid(vid) == UINT64_C(0x807c2b2500000000));
	assert_true(vid_to_data_oid(vid, 1) == UINT64_C(0x007c2b2500000001));
	assert_true(data_oid_to_ledger_oid(vid_to_data_oid(vid, 1)) ==
		    UINT64_C(0x087c2b2500000001));
	assert_int_equal(oid_to_vid(vid_to_vmstate_oid(vid, 3)), vid);
	assert_int_equal(data_oid_to_idx(vid_to_data_oid(vid, 77)), 77);
	assert_true(is_data_obj(vid_to_data_oid(vid, 5)));
	assert_false(is_data_obj(vid_to_vdi_oid(vid)));
	assert_int_equal(sd_obj_size(vid_to_vdi_oid(vid), 22), SD_INODE_SIZE);
	assert_int_equal(sd_obj_size(vid_to_data_oid(vid, 0), 20), 1 << 20);
	assert_int_equal(sd_obj_size(vid_to_attr_oid(vid, 9), 22),
			 SD_ATTR_OBJ_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_index_range),
		cmocka_unit_test(test_oids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
