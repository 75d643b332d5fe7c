// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cached writes from the event loop (store_write_nowait, csum.c's
 * csum_write_nowait) on a store that syncs, in a directory under
 * $KELPIE_TEST_STORE_DIR (default /tmp).  Which half runs depends on what
 * that file system does with a buffered write with RWF_NOWAIT, probed
 * first:
 *
 * - refused (ext4, tmpfs): every loop write is declined, the object is
 *   untouched and nothing is marked dirty;
 * - taken (XFS; functional test 156 runs this binary on one): a write of
 *   whole blocks lands, is verified on read, marks its object dirty (so a
 *   flush syncs it); unaligned writes, writes past the object or over
 *   128 KiB are declined; rot in a block the write does not cover stays
 *   rot.
 *
 * Either way a data object of sheep -D is never written from the loop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util.h"

#define OBJ	(4u << 20)
#define OID	UINT64_C(0x00abcdef00000031)	/* a data object */

static char base[512];
static uint8_t *a, *b, *got;
static bool nowait_taken;

/* does this file system take a buffered write with RWF_NOWAIT? */
static bool probe_nowait(const char *dir)
{
	char p[600];
	char blk[4096] = { 1 };
	struct iovec v = { .iov_base = blk, .iov_len = sizeof(blk) };
	bool taken = false;
	int fd;

	snprintf(p, sizeof(p), "%s/probe", dir);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return false;
	/* a blocking write first: the file's times are then current */
	for (int i = 0; i < 100 && !taken; i++) {
		if (pwrite(fd, blk, sizeof(blk), 0) != (ssize_t)sizeof(blk))
			break;
		if (pwritev2(fd, &v, 1, 0, RWF_NOWAIT) == (ssize_t)sizeof(blk))
			taken = true;
		else if (errno == EOPNOTSUPP)
			break;
	}
	close(fd);
	unlink(p);
	return taken;
}

static int setup(void **state)
{
	const char *dir = getenv("KELPIE_TEST_STORE_DIR");

	snprintf(base, sizeof(base), "%s/kelpie-test-nowait.XXXXXX",
		 dir && *dir ? dir : "/tmp");
	if (!mkdtemp(base))
		return -1;
	nowait_taken = probe_nowait(base);
	print_message("%s: the file system %s buffered RWF_NOWAIT writes\n",
		      base, nowait_taken ? "takes" : "refuses");
	a = malloc(OBJ);
	b = malloc(OBJ);
	got = malloc(OBJ);
	if (!a || !b || !got)
		return -1;
	memset(a, 0xaa, OBJ);
	for (uint32_t i = 0; i < OBJ; i++)
		b[i] = (uint8_t)(i * 7 + 3);
	/* a store that syncs: cached writes are tracked for flushes */
	return store_init(base, false);
}

static int teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	free(a);
	free(b);
	free(got);
	return system(cmd) ? -1 : 0;
}

/* the keys the dirty set holds now, emptied */
static size_t take_dirty(struct obj_key k, bool *has_k)
{
	struct obj_key *o;
	size_t nr;
	struct dir_set dir;

	o = dirty_take(&nr, &dir);
	*has_k = false;
	for (size_t i = 0; i < nr; i++)
		if (obj_key_eq(o[i], k))
			*has_k = true;
	free(o);
	return nr;
}

/* a fresh object, opened and sized by a worker's read, nothing dirty */
static void fresh_object(uint64_t oid)
{
	bool has;

	assert_int_equal(store_create(obj_key_rep(oid), OBJ, a, OBJ, 0, true),
			 SD_RES_SUCCESS);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 0),
			 SD_RES_SUCCESS);
	take_dirty(obj_key_rep(oid), &has);
}

/*
 * The loop's write of @len bytes of b at @off, as sheep does it: when the
 * loop declines, a worker's store_write; then again from the loop, up to
 * 100 times (XFS declines the first write of each clock tick to a file
 * whose times need an update).  true if the loop took one.
 */
static bool write_from_loop(uint64_t oid, uint32_t len, uint32_t off)
{
	for (int i = 0; i < 100; i++) {
		if (store_write_nowait(obj_key_rep(oid), b + off, len, off))
			return true;
		assert_int_equal(store_write(obj_key_rep(oid), b + off, len,
					     off, false),
				 SD_RES_SUCCESS);
	}
	return false;
}

static void test_refused(void **state)
{
	bool has;

	if (nowait_taken)
		skip();
	fresh_object(OID);
	assert_false(store_write_nowait(obj_key_rep(OID), b, 8192, 4096));
	/* asked once more: the fd cache remembers the refusal */
	assert_false(store_write_nowait(obj_key_rep(OID), b, 8192, 4096));
	assert_int_equal(take_dirty(obj_key_rep(OID), &has), 0);
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, a, OBJ);
	assert_int_equal(store_remove(obj_key_rep(OID)), SD_RES_SUCCESS);
}

static void test_taken(void **state)
{
	const uint64_t oid = OID + 1;
	bool has;

	if (!nowait_taken)
		skip();
	fresh_object(oid);
	/* whole blocks: 4 KiB, 64 KiB, the most (128 KiB), the last block */
	assert_true(write_from_loop(oid, 4096, 8192));
	assert_true(write_from_loop(oid, 65536, 65536));
	assert_true(write_from_loop(oid, 128u << 10, 1u << 20));
	assert_true(write_from_loop(oid, 4096, OBJ - 4096));
	take_dirty(obj_key_rep(oid), &has);
	assert_true(has);
	/* one more from the loop alone: it marks the object dirty itself */
	assert_true(write_from_loop(oid, 4096, 3u << 20));
	assert_int_equal(store_write(obj_key_rep(oid), b + (3u << 20), 4096,
				     3u << 20, false), SD_RES_SUCCESS);
	take_dirty(obj_key_rep(oid), &has);
	for (int i = 0; i < 100; i++) {
		if (store_write_nowait(obj_key_rep(oid), b + (3u << 20), 4096,
				       3u << 20)) {
			take_dirty(obj_key_rep(oid), &has);
			assert_true(has);
			break;
		}
		assert_int_equal(store_write(obj_key_rep(oid), b + (3u << 20),
					     4096, 3u << 20, false),
				 SD_RES_SUCCESS);
		take_dirty(obj_key_rep(oid), &has);
		assert_true(i < 99);
	}
	/* declined: unaligned, partial blocks, past the end, too large */
	assert_false(store_write_nowait(obj_key_rep(oid), b, 4096, 100));
	assert_false(store_write_nowait(obj_key_rep(oid), b, 100, 4096));
	assert_false(store_write_nowait(obj_key_rep(oid), b, 8192, OBJ - 4096));
	assert_false(store_write_nowait(obj_key_rep(oid), b,
					(128u << 10) + 4096, 0));
	/* never opened by a worker: declined */
	assert_false(store_write_nowait(obj_key_rep(oid + 1), b, 4096, 0));
	/* every block reads back, verified */
	assert_int_equal(store_read(obj_key_rep(oid), got, OBJ, 0),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, a, 8192);
	assert_memory_equal(got + 8192, b + 8192, 4096);
	assert_memory_equal(got + 65536, b + 65536, 65536);
	assert_memory_equal(got + (1u << 20), b + (1u << 20), 128u << 10);
	assert_memory_equal(got + (3u << 20), b + (3u << 20), 4096);
	assert_memory_equal(got + OBJ - 4096, b + OBJ - 4096, 4096);
	assert_int_equal(store_remove(obj_key_rep(oid)), SD_RES_SUCCESS);
}

/* a loop write next to a rotten block does not make the rot look good */
static void test_taken_keeps_rot(void **state)
{
	const uint64_t oid = OID + 2;
	char p[MD_PATH_MAX + 32];
	uint64_t seen;
	uint8_t x = 0xaa ^ 0x40;
	int fd;

	if (!nowait_taken)
		skip();
	fresh_object(oid);
	md_path(p, sizeof(p), md_disk_of(oid), obj_key_rep(oid), "");
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &x, 1, 5 * 4096 + 9), 1);
	close(fd);
	/* blocks 4 and 6, around the rotten 5 */
	assert_true(write_from_loop(oid, 4096, 4 * 4096));
	assert_true(write_from_loop(oid, 4096, 6 * 4096));
	seen = store_nr_mismatches();
	assert_int_equal(store_read(obj_key_rep(oid), got, 3 * 4096, 4 * 4096),
			 SD_RES_EIO);
	assert_true(store_nr_mismatches() > seen);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 4 * 4096),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, b + 4 * 4096, 4096);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 6 * 4096),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, b + 6 * 4096, 4096);
	assert_int_equal(store_remove(obj_key_rep(oid)), SD_RES_SUCCESS);
}

/*
 * sheep -D: a data object's data goes through its O_DIRECT descriptor,
 * never a buffered write from the loop (the two would not see each
 * other's bytes); on XFS too.  Last: -D stays on for the store.
 */
static void test_direct_declined(void **state)
{
	const uint64_t oid = OID + 3;

	store_set_direct(true);
	fresh_object(oid);
	assert_false(write_from_loop(oid, 4096, 8192));
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 8192),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, b + 8192, 4096);
	assert_int_equal(store_remove(obj_key_rep(oid)), SD_RES_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_taken),
		cmocka_unit_test(test_taken_keeps_rot),
		cmocka_unit_test(test_direct_declined),
	};

	return cmocka_run_group_tests_name("store_nowait", tests, setup,
					   teardown);
}
