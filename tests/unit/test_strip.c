// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Versioned strip updates (sheep/store/strip.c): a prepared write is on
 * disk with its undo record, a commit drops the record, an abort puts the
 * old bytes back (newest version first) and refuses the version later;
 * versions only grow; the number of pending versions is bounded and a
 * commit of some keeps the others.  The crash cases: an append cut short
 * (record torn, data never written) is dropped; a data write cut short
 * is reported incomplete and an abort repairs it; a lost commit leaves
 * the version pending, and committing again works; a damaged header is
 * an error, never a guess; removing a strip removes its records.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <isa-l/crc.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "proto.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util.h"

#define STRIP	(1u << 20)
#define OID	UINT64_C(0x00abcdef00000009)

static char base[] = "/tmp/kelpie-test-strip.XXXXXX";
static uint8_t *zero, *got, *want;
static uint8_t fill[4][STRIP];

static struct obj_key key(void)
{
	return (struct obj_key){ .oid = OID, .idx = 2 };
}

static int setup(void **state)
{
	if (!mkdtemp(base))
		return -1;
	zero = calloc(1, STRIP);
	got = malloc(STRIP);
	want = malloc(STRIP);
	if (!zero || !got || !want)
		return -1;
	for (int i = 0; i < 4; i++)
		memset(fill[i], 0x11 * (i + 1), STRIP);
	return store_init(base, true);
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	free(zero);
	free(got);
	free(want);
	return system(cmd) ? -1 : 0;
}

/* every test starts from a strip that does not exist */
static int fresh(void **state)
{
	store_remove(key());
	memset(want, 0, STRIP);
	return 0;
}

static void undo_path(char *p, size_t len)
{
	snprintf(p, len, "%s/obj/%016" PRIx64 "_2.undo", base, OID);
}

static off_t undo_size(void)
{
	char p[256];
	struct stat sb;

	undo_path(p, sizeof(p));
	if (stat(p, &sb))
		return -1;
	return sb.st_size;
}

static void check_data(void)
{
	assert_int_equal(store_read(key(), got, STRIP, 0), SD_RES_SUCCESS);
	assert_memory_equal(got, want, STRIP);
}

static void prepare(uint64_t v, const uint8_t *buf, uint32_t len,
		    uint32_t off, int res)
{
	struct strip_state st;
	uint64_t prev;

	/* on top of what the strip holds (nothing: 0) */
	if (store_strip_state(key(), &st) != SD_RES_SUCCESS)
		memset(&st, 0, sizeof(st));
	prev = st.nr_pending ? st.pending[st.nr_pending - 1].v : st.committed;
	if (prev >= v)		/* a version it holds: refused as stale */
		prev = v - 1;
	assert_int_equal(store_strip_prepare(key(), STRIP, v, prev, buf, len,
					     off), res);
	if (res == SD_RES_SUCCESS)
		memcpy(want + off, buf, len);
}

static void test_prepare_commit(void **state)
{
	struct strip_state st;

	prepare(1, fill[0], 8192, 4096, SD_RES_SUCCESS);
	check_data();
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.high, 1);
	assert_int_equal(st.nr_pending, 1);
	assert_int_equal(st.pending[0].v, 1);
	assert_int_equal(st.pending[0].off, 4096);
	assert_int_equal(st.pending[0].len, 8192);
	assert_true(st.pending[0].complete);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, 1);
	assert_int_equal(st.nr_pending, 0);
	assert_int_equal(undo_size(), 64);	/* the header alone */
	/* again: nothing to do */
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	/* a version never prepared here */
	assert_int_equal(store_strip_commit(key(), 5), SD_RES_STALE_OBJ);
	check_data();
}

static void test_refusals(void **state)
{
	struct obj_key rep = obj_key_rep(OID);

	assert_int_equal(store_strip_prepare(rep, STRIP, 1, 0, fill[0], 512, 0),
			 SD_RES_INVALID_PARMS);
	assert_int_equal(store_strip_prepare(key(), STRIP, 0, 0, fill[0], 512,
					     0), SD_RES_INVALID_PARMS);
	assert_int_equal(store_strip_prepare(key(), STRIP, 1, 0, fill[0], 512,
					     STRIP - 256),
			 SD_RES_INVALID_PARMS);
	assert_int_equal(store_strip_prepare(key(), STRIP, 1, 0, fill[0], 0, 0),
			 SD_RES_INVALID_PARMS);
	prepare(3, fill[0], 512, 0, SD_RES_SUCCESS);
	/* versions only grow */
	prepare(3, fill[1], 512, 0, SD_RES_STALE_OBJ);
	prepare(2, fill[1], 512, 0, SD_RES_STALE_OBJ);
	assert_int_equal(store_strip_commit(key(), 3), SD_RES_SUCCESS);
	prepare(3, fill[1], 512, 0, SD_RES_STALE_OBJ);
	/* a committed version cannot be undone */
	assert_int_equal(store_strip_abort(key(), 3), SD_RES_STALE_OBJ);
	check_data();
}

static void test_abort_rolls_back(void **state)
{
	struct strip_state st;

	prepare(1, fill[0], STRIP, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	memcpy(got, want, STRIP);
	/* two overlapping versions, then the first is aborted: both go */
	assert_int_equal(store_strip_prepare(key(), STRIP, 2, 1, fill[1], 12288,
					     1000), SD_RES_SUCCESS);
	assert_int_equal(store_strip_prepare(key(), STRIP, 3, 2, fill[2], 8192,
					     5000), SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.nr_pending, 2);
	/* the first's bytes were overwritten, but a later one exists */
	assert_true(st.pending[0].complete);
	assert_true(st.pending[1].complete);
	assert_int_equal(store_strip_abort(key(), 2), SD_RES_SUCCESS);
	check_data();			/* version 1 again */
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, 1);
	assert_int_equal(st.high, 3);
	assert_int_equal(st.nr_pending, 0);
	/* late PREPAREs of aborted versions are refused */
	prepare(2, fill[1], 512, 0, SD_RES_STALE_OBJ);
	prepare(3, fill[1], 512, 0, SD_RES_STALE_OBJ);
	prepare(4, fill[3], 512, 0, SD_RES_SUCCESS);
	check_data();
	/* an abort of a version no one prepared here marks it too */
	assert_int_equal(store_strip_abort(key(), 9), SD_RES_SUCCESS);
	prepare(9, fill[1], 512, 0, SD_RES_STALE_OBJ);
	/* ...and keeps what is below it */
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.nr_pending, 1);
	assert_int_equal(st.pending[0].v, 4);
	check_data();
}

static void test_pending_bound(void **state)
{
	struct strip_state st;
	int i;

	for (i = 1; i <= STRIP_MAX_PENDING; i++)
		prepare((uint64_t)i, fill[i % 4], 4096, (uint32_t)i * 2048,
			SD_RES_SUCCESS);
	prepare(STRIP_MAX_PENDING + 1, fill[0], 512, 0, SD_RES_AGAIN);
	/* committing the first half keeps the second pending */
	assert_int_equal(store_strip_commit(key(), STRIP_MAX_PENDING / 2),
			 SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, STRIP_MAX_PENDING / 2);
	assert_int_equal(st.nr_pending, STRIP_MAX_PENDING / 2);
	assert_int_equal(st.pending[0].v, STRIP_MAX_PENDING / 2 + 1);
	check_data();
	/* aborting them puts back what the committed ones wrote */
	memset(want, 0, STRIP);
	for (i = 1; i <= STRIP_MAX_PENDING / 2; i++)
		memcpy(want + i * 2048, fill[i % 4], 4096);
	assert_int_equal(store_strip_abort(key(), STRIP_MAX_PENDING / 2 + 1),
			 SD_RES_SUCCESS);
	check_data();
	prepare(STRIP_MAX_PENDING + 1, fill[0], 512, 0, SD_RES_SUCCESS);
	check_data();
}

/* a crash in the middle of appending a record: it never reached the disk */
static void test_torn_record_dropped(void **state)
{
	struct strip_state st;
	char p[256];
	off_t len;

	prepare(1, fill[0], 4096, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	len = undo_size();
	assert_int_equal(store_strip_prepare(key(), STRIP, 2, 1, fill[1], 4096,
					     0), SD_RES_SUCCESS);
	/* the crash: half the record, the data write never began */
	undo_path(p, sizeof(p));
	assert_int_equal(truncate(p, len + 32 + 100), 0);
	assert_int_equal(store_write(key(), fill[0], 4096, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.nr_pending, 0);
	assert_int_equal(st.committed, 1);
	check_data();
	/* the next PREPARE goes where the torn one was */
	prepare(3, fill[2], 4096, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.nr_pending, 1);
	assert_int_equal(st.pending[0].v, 3);
	assert_true(st.pending[0].complete);
	assert_int_equal(store_strip_abort(key(), 3), SD_RES_SUCCESS);
	memcpy(want, fill[0], 4096);
	check_data();
}

/* a crash in the middle of the data write: incomplete, abort repairs */
static void test_torn_data_incomplete(void **state)
{
	struct strip_state st;

	prepare(1, fill[0], 16384, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	assert_int_equal(store_strip_prepare(key(), STRIP, 2, 1, fill[1], 16384,
					     0), SD_RES_SUCCESS);
	/* half the new bytes made it */
	assert_int_equal(store_write(key(), fill[0], 8192, 8192, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.nr_pending, 1);
	assert_false(st.pending[0].complete);
	assert_int_equal(store_strip_abort(key(), 2), SD_RES_SUCCESS);
	check_data();
	/* none of them made it: incomplete as well */
	assert_int_equal(store_strip_prepare(key(), STRIP, 3, 1, fill[1], 16384,
					     0), SD_RES_SUCCESS);
	assert_int_equal(store_write(key(), fill[0], 16384, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_false(st.pending[0].complete);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "cp %s %s", from, to);
	assert_int_equal(system(cmd), 0);
}

/* the commit's header write lost: pending again, committed again */
static void test_lost_commit(void **state)
{
	struct strip_state st;
	char p[256], saved[300];

	prepare(1, fill[0], 4096, 0, SD_RES_SUCCESS);
	undo_path(p, sizeof(p));
	snprintf(saved, sizeof(saved), "%s.saved", p);
	copy_file(p, saved);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	copy_file(saved, p);
	unlink(saved);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.nr_pending, 1);
	assert_true(st.pending[0].complete);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, 1);
	assert_int_equal(st.nr_pending, 0);
	check_data();
}

static void test_damaged_header(void **state)
{
	struct strip_state st;
	char p[256];
	int fd;

	prepare(1, fill[0], 4096, 0, SD_RES_SUCCESS);
	undo_path(p, sizeof(p));
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "x", 1, 9), 1);
	close(fd);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_EIO);
	prepare(2, fill[1], 4096, 0, SD_RES_EIO);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_EIO);
	assert_int_equal(store_strip_abort(key(), 1), SD_RES_EIO);
}

static void test_remove_drops_records(void **state)
{
	struct strip_state st;

	prepare(1, fill[0], 4096, 0, SD_RES_SUCCESS);
	assert_true(undo_size() > 64);
	assert_int_equal(store_remove(key()), SD_RES_SUCCESS);
	assert_int_equal(undo_size(), -1);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_NO_OBJ);
	/* a strip rebuilt whole */
	assert_int_equal(store_strip_install(key(), STRIP, 7, fill[2], false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, 7);
	assert_int_equal(st.high, 7);
	prepare(7, fill[1], 512, 0, SD_RES_STALE_OBJ);
	memcpy(want, fill[2], STRIP);
	prepare(8, fill[1], 512, 0, SD_RES_SUCCESS);
	check_data();
}

/* a strip that missed a version refuses writes on top of it */
static void test_behind_refused(void **state)
{
	/* nothing here to build version 1 on */
	assert_int_equal(store_strip_prepare(key(), STRIP, 2, 1, fill[0], 512,
					     0), SD_RES_NO_OBJ);
	assert_int_equal(store_exist(key()), SD_RES_NO_OBJ);
	prepare(1, fill[0], STRIP, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	/* the others committed 2, this one never saw it */
	assert_int_equal(store_strip_prepare(key(), STRIP, 3, 2, fill[1], 512,
					     0), SD_RES_NO_OBJ);
	/* a writer that does not know version 1 */
	assert_int_equal(store_strip_prepare(key(), STRIP, 3, 0, fill[1], 512,
					     0), SD_RES_STALE_OBJ);
	assert_int_equal(store_strip_prepare(key(), STRIP, 3, 3, fill[1], 512,
					     0), SD_RES_INVALID_PARMS);
	check_data();
	/* on top of a pending version */
	prepare(2, fill[1], 512, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_prepare(key(), STRIP, 3, 1, fill[2], 512,
					     0), SD_RES_STALE_OBJ);
	prepare(3, fill[2], 512, 512, SD_RES_SUCCESS);
	check_data();
}

/* a whole strip replaced: committed at its version, records dropped */
static void test_install(void **state)
{
	struct strip_state st;

	prepare(1, fill[0], STRIP, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	prepare(2, fill[1], 4096, 0, SD_RES_SUCCESS);
	prepare(4, fill[1], 4096, 8192, SD_RES_SUCCESS);
	assert_int_equal(store_strip_abort(key(), 4), SD_RES_SUCCESS);
	memcpy(want + 8192, fill[0] + 8192, 4096);
	/* it holds version 2 (pending) already */
	assert_int_equal(store_strip_install(key(), STRIP, 2, fill[2], false),
			 SD_RES_STALE_OBJ);
	check_data();
	assert_int_equal(store_strip_install(key(), STRIP, 3, fill[2], false),
			 SD_RES_SUCCESS);
	memcpy(want, fill[2], STRIP);
	check_data();
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, 3);
	assert_int_equal(st.high, 4);	/* the aborted 4 stays refused */
	assert_int_equal(st.nr_pending, 0);
	assert_int_equal(undo_size(), 64);
	/* a repair replaces the bytes of the version it holds, no older */
	assert_int_equal(store_strip_install(key(), STRIP, 2, fill[3], true),
			 SD_RES_STALE_OBJ);
	assert_int_equal(store_strip_install(key(), STRIP, 3, fill[3], true),
			 SD_RES_SUCCESS);
	memcpy(want, fill[3], STRIP);
	check_data();
	prepare(4, fill[1], 512, 0, SD_RES_STALE_OBJ);
	prepare(5, fill[1], 512, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_install(key(), STRIP, 4, fill[0], false),
			 SD_RES_STALE_OBJ);
	assert_int_equal(store_strip_install(obj_key_rep(OID), STRIP, 9,
					     fill[0], false), SD_RES_INVALID_PARMS);
	check_data();
}

/* a crash in the middle of INSTALL: the strip holds nothing usable */
static void test_torn_install(void **state)
{
	struct strip_state st;
	uint8_t h[64];
	uint64_t version = 9;
	char p[256];
	int fd, st_read = -1;

	prepare(1, fill[0], STRIP, 0, SD_RES_SUCCESS);
	assert_int_equal(store_strip_commit(key(), 1), SD_RES_SUCCESS);
	assert_int_equal(store_strip_install(key(), STRIP, 3, fill[2], false),
			 SD_RES_SUCCESS);
	/* as after its first step: header at version 0, bytes half new */
	undo_path(p, sizeof(p));
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, 64, 0), 64);
	memset(h + 8, 0, 8);
	put_le32(h + 60, crc32_iscsi(h, 60, 0xffffffffU));
	assert_int_equal(pwrite(fd, h, 64, 0), 64);
	close(fd);
	assert_int_equal(store_write(key(), fill[0], 4096, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_strip_state(key(), &st), SD_RES_SUCCESS);
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.high, 3);
	assert_int_equal(store_strip_read(key(), got, 512, 0, &version,
					  &st_read), SD_RES_SUCCESS);
	assert_int_equal(version, 0);
	assert_int_equal(st_read, STRIP_FINAL);
	/* nothing to build on: rebuilt again, then written */
	assert_int_equal(store_strip_prepare(key(), STRIP, 4, 3, fill[1], 512,
					     0), SD_RES_NO_OBJ);
	assert_int_equal(store_strip_install(key(), STRIP, 3, fill[2], false),
			 SD_RES_SUCCESS);
	memcpy(want, fill[2], STRIP);
	check_data();
	prepare(4, fill[1], 512, 0, SD_RES_SUCCESS);
	check_data();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_prepare_commit, fresh),
		cmocka_unit_test_setup(test_refusals, fresh),
		cmocka_unit_test_setup(test_abort_rolls_back, fresh),
		cmocka_unit_test_setup(test_pending_bound, fresh),
		cmocka_unit_test_setup(test_torn_record_dropped, fresh),
		cmocka_unit_test_setup(test_torn_data_incomplete, fresh),
		cmocka_unit_test_setup(test_lost_commit, fresh),
		cmocka_unit_test_setup(test_damaged_header, fresh),
		cmocka_unit_test_setup(test_remove_drops_records, fresh),
		cmocka_unit_test_setup(test_behind_refused, fresh),
		cmocka_unit_test_setup(test_install, fresh),
		cmocka_unit_test_setup(test_torn_install, fresh),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
