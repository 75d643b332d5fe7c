// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Plain store tests (sheep/store/plain.c): creating an object replaces
 * what is there, creating a new one (recovery) never does, and neither
 * leaves its .tmp file behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "store/store.h"

#define OBJ	(4u << 20)
#define OID	UINT64_C(0x00abcdef00000007)	/* a data object */

static char base[] = "/tmp/kelpie-test-store.XXXXXX";
static uint8_t *a, *b, *got;

static int setup(void **state)
{
	if (!mkdtemp(base))
		return -1;
	a = malloc(OBJ);
	b = malloc(OBJ);
	got = malloc(OBJ);
	if (!a || !b || !got)
		return -1;
	memset(a, 0xaa, OBJ);
	memset(b, 0xbb, OBJ);
	return store_init(base, true);
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	free(a);
	free(b);
	free(got);
	return system(cmd) ? -1 : 0;
}

static void read_back(const uint8_t *want)
{
	assert_int_equal(store_read(OID, got, OBJ, 0), SD_RES_SUCCESS);
	assert_memory_equal(got, want, OBJ);
}

static void test_create_new_keeps_existing(void **state)
{
	store_remove(OID);
	/* absent: created */
	assert_int_equal(store_create_new(OID, OBJ, a, OBJ, 0, false),
			 SD_RES_SUCCESS);
	read_back(a);
	/* present: a late recovery store changes nothing */
	assert_int_equal(store_create_new(OID, OBJ, b, OBJ, 0, false),
			 SD_RES_SUCCESS);
	read_back(a);
	/* ...also after a write through the fd cache */
	assert_int_equal(store_write(OID, b, 4096, 8192, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create_new(OID, OBJ, a, OBJ, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_read(OID, got, 4096, 8192), SD_RES_SUCCESS);
	assert_memory_equal(got, b, 4096);
}

static void test_create_replaces(void **state)
{
	assert_int_equal(store_create(OID, OBJ, a, OBJ, 0, false),
			 SD_RES_SUCCESS);
	read_back(a);
	assert_int_equal(store_create(OID, OBJ, b, OBJ, 0, false),
			 SD_RES_SUCCESS);
	read_back(b);
}

static void test_no_tmp_left(void **state)
{
	char p[256];

	assert_int_equal(store_create_new(OID + 1, OBJ, a, 4096, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create_new(OID + 1, OBJ, b, 4096, 0, false),
			 SD_RES_SUCCESS);
	snprintf(p, sizeof(p), "%s/obj/%016llx.tmp", base,
		 (unsigned long long)(OID + 1));
	assert_int_not_equal(access(p, F_OK), 0);
	assert_int_equal(store_exist(OID + 1), SD_RES_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_new_keeps_existing),
		cmocka_unit_test(test_create_replaces),
		cmocka_unit_test(test_no_tmp_left),
	};

	return cmocka_run_group_tests_name("store", tests, setup, teardown);
}
