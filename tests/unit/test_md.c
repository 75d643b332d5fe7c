// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Multi-disk store tests (sheep/store/md.c, plain.c, stale.c): objects of
 * a store on two disks spread over both by the ring; a plugged disk takes
 * new objects while old ones are found where they are and replaced in
 * place (one copy per node); the stale area of each disk, and a rejoin's
 * swap of every disk; an unplugged disk's objects and stale copies are
 * gone; a disk whose directory disappears, or whose writes fail with EIO,
 * fails its check and is unplugged.  fdatasync() is interposed: it fails
 * with EIO on the file system object named by fail_dir.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util.h"

#define OBJ	(64u * 1024)
#define NR	64
#define OID(i)	(UINT64_C(0x00abcdef00000000) + (uint64_t)(i))

static char base[] = "/tmp/kelpie-test-md.XXXXXX";
static char da[PATH_MAX], db[PATH_MAX], dc[PATH_MAX];
static char fail_dir[PATH_MAX + 8];	/* fdatasync fails below it */
static uint8_t *buf, *got;

int fdatasync(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n > 0 && fail_dir[0]) {
		path[n] = 0;
		if (!strncmp(path, fail_dir, strlen(fail_dir))) {
			errno = EIO;
			return -1;
		}
	}
	return (int)syscall(SYS_fdatasync, fd);
}

static int count_in(const char *dir)
{
	char cmd[PATH_MAX + 128], line[64];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "find %s/obj -maxdepth 1 -type f "
		 "-regextype posix-extended -regex '.*/[0-9a-f]{16}' "
		 "| wc -l", dir);
	f = popen(cmd, "r");
	if (f && fgets(line, sizeof(line), f))
		n = atoi(line);
	if (f)
		pclose(f);
	return n;
}

static int setup(void **state)
{
	char list[3 * PATH_MAX];

	if (!mkdtemp(base))
		return -1;
	snprintf(da, sizeof(da), "%s/a", base);
	snprintf(db, sizeof(db), "%s/b", base);
	snprintf(dc, sizeof(dc), "%s/c", base);
	snprintf(list, sizeof(list), "%s,%s", da, db);
	buf = malloc(OBJ);
	got = malloc(OBJ);
	if (!buf || !got)
		return -1;
	return store_init_disks(base, list, false);
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	free(buf);
	free(got);
	return system(cmd) ? -1 : 0;
}

static void fill(int i)
{
	memset(buf, i & 0xff, OBJ);
}

static void check(int i)
{
	fill(i);
	assert_int_equal(store_read(obj_key_rep(OID(i)), got, OBJ, 0),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, buf, OBJ);
}

static void test_spread(void **state)
{
	struct md_disk_info d[MD_MAX_DISKS];

	assert_true(store_md_multi());
	assert_int_equal(store_md_info(d, MD_MAX_DISKS), 2);
	for (int i = 0; i < NR; i++) {
		fill(i);
		assert_int_equal(store_create(obj_key_rep(OID(i)), OBJ, buf,
					      OBJ, 0, true),
				 SD_RES_SUCCESS);
	}
	/* the same file system: sizes are equal, both get a fair share */
	assert_int_equal(count_in(da) + count_in(db), NR);
	assert_true(count_in(da) > NR / 8);
	assert_true(count_in(db) > NR / 8);
	for (int i = 0; i < NR; i++)
		check(i);
}

static void test_plug(void **state)
{
	int before_a = count_in(da), before_b = count_in(db);

	assert_int_equal(store_md_plug(dc), SD_RES_SUCCESS);
	assert_int_equal(store_md_plug(dc), SD_RES_UNKNOWN);
	assert_int_equal(store_md_nr(), 3);
	/* old objects are found where they are, and replaced there */
	for (int i = 0; i < NR; i++) {
		check(i);
		fill(i);
		assert_int_equal(store_create(obj_key_rep(OID(i)), OBJ, buf,
					      OBJ, 0, true),
				 SD_RES_SUCCESS);
		assert_int_equal(store_exist(obj_key_rep(OID(i))),
				 SD_RES_SUCCESS);
	}
	assert_int_equal(count_in(da), before_a);
	assert_int_equal(count_in(db), before_b);
	assert_int_equal(count_in(dc), 0);
	/* new ones reach the new disk too */
	for (int i = NR; i < 2 * NR; i++) {
		fill(i);
		assert_int_equal(store_create(obj_key_rep(OID(i)), OBJ, buf,
					      OBJ, 0, true),
				 SD_RES_SUCCESS);
	}
	assert_true(count_in(dc) > 0);
	assert_int_equal(count_in(da) + count_in(db) + count_in(dc), 2 * NR);
	for (int i = 0; i < 2 * NR; i++)
		check(i);
}

static int count_oid(struct obj_key k, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static void test_stale_and_swap(void **state)
{
	uint32_t epoch;
	int n = 0;

	/* one object to the stale area of its own disk */
	assert_int_equal(store_move_to_stale(obj_key_rep(OID(1)), 5),
			 SD_RES_SUCCESS);
	assert_int_equal(store_exist(obj_key_rep(OID(1))), SD_RES_NO_OBJ);
	assert_int_equal(store_read_stale(obj_key_rep(OID(1)), got, OBJ, 0,
					  &epoch),
			 SD_RES_SUCCESS);
	assert_int_equal(epoch, 5);
	fill(1);
	assert_memory_equal(got, buf, OBJ);
	/* a rejoin: every disk swapped at once, drained later */
	assert_int_equal(store_stale_all(7), SD_RES_SUCCESS);
	assert_int_equal(count_in(da) + count_in(db) + count_in(dc), 0);
	assert_int_equal(store_read_stale(obj_key_rep(OID(2)), got, OBJ, 0,
					  &epoch),
			 SD_RES_SUCCESS);
	assert_int_equal(epoch, 7);
	assert_true(store_drain_left() > 0);
	assert_int_equal(store_for_each_stale(count_oid, &n), 0);
	assert_int_equal(n, 2 * NR);
	for (int i = 0; i < 2 * NR; i++) {
		assert_int_equal(store_read_stale(obj_key_rep(OID(i)), got, OBJ,
						  0, &epoch),
				 SD_RES_SUCCESS);
		fill(i);
		assert_memory_equal(got, buf, OBJ);
	}
	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	assert_int_equal(store_nr_stale(), 0);
}

static void test_unplug(void **state)
{
	int on_a = 0, left = 0;

	for (int i = 0; i < NR; i++) {
		fill(i);
		assert_int_equal(store_create(obj_key_rep(OID(i)), OBJ, buf,
					      OBJ, 0, true),
				 SD_RES_SUCCESS);
	}
	on_a = count_in(da);
	assert_true(on_a > 0);
	assert_int_equal(store_md_unplug(da), SD_RES_SUCCESS);
	assert_int_equal(store_md_unplug(da), SD_RES_UNKNOWN);
	assert_int_equal(store_md_nr(), 2);
	for (int i = 0; i < NR; i++)
		left += store_exist(obj_key_rep(OID(i))) == SD_RES_SUCCESS;
	assert_int_equal(left, NR - on_a);
	/* the ones that went can be created again, on the others */
	for (int i = 0; i < NR; i++) {
		fill(i);
		assert_int_equal(store_create_new(obj_key_rep(OID(i)), OBJ, buf,
						  OBJ, 0,
						  true), SD_RES_SUCCESS);
		check(i);
	}
	assert_int_equal(count_in(db) + count_in(dc), NR);
}

static void test_failures(void **state)
{
	char obj[PATH_MAX + 8], moved[PATH_MAX + 16];

	assert_int_equal(store_md_check(true), 0);
	/* writes fail with EIO on c: the probe finds it */
	snprintf(fail_dir, sizeof(fail_dir), "%s/", dc);
	assert_int_equal(store_md_check(false), 0);
	assert_int_equal(store_md_check(true), 1);
	fail_dir[0] = 0;
	assert_int_equal(store_md_nr(), 1);
	/* b's object directory disappears: without even a probe */
	snprintf(obj, sizeof(obj), "%s/obj", db);
	snprintf(moved, sizeof(moved), "%s/obj.gone", db);
	assert_int_equal(rename(obj, moved), 0);
	assert_int_equal(store_md_check(false), 1);
	assert_int_equal(store_md_nr(), 0);
	assert_int_equal(store_exist(obj_key_rep(OID(0))), SD_RES_NO_OBJ);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_plug),
		cmocka_unit_test(test_stale_and_swap),
		cmocka_unit_test(test_unplug),
		cmocka_unit_test(test_failures),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
