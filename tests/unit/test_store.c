// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Plain store tests (sheep/store/plain.c): creating an object replaces
 * what is there, creating a new one (recovery) never does, neither
 * leaves a .tmp file behind, a leftover .tmp never turns a create into a
 * success that wrote nothing, and a short data object reads as EIO.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <fcntl.h>
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

static int count_tmp(void)
{
	char p[256];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(p, sizeof(p), "%s/obj", base);
	d = opendir(p);
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		n += l > 4 && !strcmp(de->d_name + l - 4, ".tmp");
	}
	closedir(d);
	return n;
}

static void test_no_tmp_left(void **state)
{
	assert_int_equal(store_create_new(OID + 1, OBJ, a, 4096, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create_new(OID + 1, OBJ, b, 4096, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create(OID + 1, OBJ, b, 4096, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(count_tmp(), 0);
	assert_int_equal(store_exist(OID + 1), SD_RES_SUCCESS);
}

/* a .tmp of another create (or a crash) does not fake this one */
static void test_leftover_tmp(void **state)
{
	char p[256];
	int fd;

	store_remove(OID + 2);
	snprintf(p, sizeof(p), "%s/obj/%016llx.tmp", base,
		 (unsigned long long)(OID + 2));
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(store_create(OID + 2, OBJ, a, 4096, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_read(OID + 2, got, 4096, 0), SD_RES_SUCCESS);
	assert_memory_equal(got, a, 4096);
	unlink(p);
}

/* data objects are preallocated: a short file is damage, not zeros */
static void test_short_object(void **state)
{
	uint64_t inode = UINT64_C(0x80abcdef00000000);
	char p[256];

	assert_int_equal(store_create(OID + 3, OBJ, a, OBJ, 0, false),
			 SD_RES_SUCCESS);
	snprintf(p, sizeof(p), "%s/obj/%016llx", base,
		 (unsigned long long)(OID + 3));
	assert_int_equal(truncate(p, 1 << 20), 0);
	assert_int_equal(store_read(OID + 3, got, 4096, 2 << 20),
			 SD_RES_EIO);
	/* a sparse inode past its stored end: zeros */
	assert_int_equal(store_create(inode, 8192, a, 4096, 0, false),
			 SD_RES_SUCCESS);
	snprintf(p, sizeof(p), "%s/obj/%016llx", base,
		 (unsigned long long)inode);
	assert_int_equal(truncate(p, 4096), 0);
	memset(got, 1, 4096);
	assert_int_equal(store_read(inode, got, 4096, 4096), SD_RES_SUCCESS);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(got[i], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_new_keeps_existing),
		cmocka_unit_test(test_create_replaces),
		cmocka_unit_test(test_no_tmp_left),
		cmocka_unit_test(test_leftover_tmp),
		cmocka_unit_test(test_short_object),
	};

	return cmocka_run_group_tests_name("store", tests, setup, teardown);
}
