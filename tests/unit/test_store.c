// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Plain store tests (sheep/store/plain.c): creating an object replaces
 * what is there, creating a new one (recovery) never does, neither
 * leaves a .tmp file behind, a leftover .tmp never turns a create into a
 * success that wrote nothing, and a short data object reads as EIO; the
 * stale area keeps one copy per object (the newest) and a sparse object
 * written whole keeps its holes; per-block checksums catch a flipped byte,
 * survive unaligned writes and a crash between CRC and data, and are added
 * to a store written without them.  The event loop's read serves only
 * what the page cache holds, verified; a file unlinked behind the store
 * reads as missing.  Two strips and the replica of one oid
 * are three files, written, read, listed, removed and made stale apart,
 * a rejoin's strips keeping their settled version beside the stale copy;
 * names the store never writes are skipped by every listing.
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
#include <pthread.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util.h"

#define OBJ	(4u << 20)
#define OID	UINT64_C(0x00abcdef00000007)	/* a data object */

#define BASE_TEMPLATE	"/tmp/kelpie-test-store.XXXXXX"
static char base[] = BASE_TEMPLATE;
static uint8_t *a, *b, *got;

/* where the store keeps @oid's file (plain: obj/, tree: obj/xx/, meta/) */
static void obj_path(char *p, size_t len, uint64_t oid, const char *sfx)
{
	char rel[64];

	layout_rel(rel, sizeof(rel), obj_key_rep(oid), sfx);
	snprintf(p, len, "%s/obj/%s", base, rel);
}

static int setup(void **state)
{
	memcpy(base, BASE_TEMPLATE, sizeof(base));
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

/* the same tests again with a tree store */
static int setup_tree(void **state)
{
	if (setup(state))
		return -1;
	return store_set_layout("tree") == SD_RES_SUCCESS ? 0 : -1;
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
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, want, OBJ);
}

static void test_create_new_keeps_existing(void **state)
{
	store_remove(obj_key_rep(OID));
	/* absent: created */
	assert_int_equal(store_create_new(obj_key_rep(OID), OBJ, a, OBJ, 0,
					  false),
			 SD_RES_SUCCESS);
	read_back(a);
	/* present: a late recovery store changes nothing */
	assert_int_equal(store_create_new(obj_key_rep(OID), OBJ, b, OBJ, 0,
					  false),
			 SD_RES_SUCCESS);
	read_back(a);
	/* ...also after a write through the fd cache */
	assert_int_equal(store_write(obj_key_rep(OID), b, 4096, 8192, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create_new(obj_key_rep(OID), OBJ, a, OBJ, 0,
					  false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_read(obj_key_rep(OID), got, 4096, 8192),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, b, 4096);
}

static void test_create_replaces(void **state)
{
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, false),
			 SD_RES_SUCCESS);
	read_back(a);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, b, OBJ, 0, false),
			 SD_RES_SUCCESS);
	read_back(b);
}

static int tmp_cb(const char *dir, const char *name, void *arg)
{
	size_t l = strlen(name);

	*(int *)arg += l > 4 && !strcmp(name + l - 4, ".tmp");
	return 0;
}

static int count_tmp(void)
{
	char p[256];
	int n = 0;

	snprintf(p, sizeof(p), "%s/obj", base);
	assert_int_equal(layout_walk(p, tmp_cb, &n), 0);
	return n;
}

static void test_no_tmp_left(void **state)
{
	assert_int_equal(store_create_new(obj_key_rep(OID + 1), OBJ, a, 4096, 0,
					  false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create_new(obj_key_rep(OID + 1), OBJ, b, 4096, 0,
					  false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create(obj_key_rep(OID + 1), OBJ, b, 4096, 0,
				      false),
			 SD_RES_SUCCESS);
	assert_int_equal(count_tmp(), 0);
	assert_int_equal(store_exist(obj_key_rep(OID + 1)), SD_RES_SUCCESS);
}

/* a .tmp of another create (or a crash) does not fake this one */
static void test_leftover_tmp(void **state)
{
	char p[256];
	int fd;

	store_remove(obj_key_rep(OID + 2));
	obj_path(p, sizeof(p), OID + 2, ".tmp");
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(store_create(obj_key_rep(OID + 2), OBJ, a, 4096, 0,
				      false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_read(obj_key_rep(OID + 2), got, 4096, 0),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, a, 4096);
	unlink(p);
}

/* data objects are preallocated: a short file is damage, not zeros */
static void test_short_object(void **state)
{
	uint64_t inode = UINT64_C(0x80abcdef00000000);
	char p[256];

	assert_int_equal(store_create(obj_key_rep(OID + 3), OBJ, a, OBJ, 0,
				      false),
			 SD_RES_SUCCESS);
	obj_path(p, sizeof(p), OID + 3, "");
	assert_int_equal(truncate(p, 1 << 20), 0);
	assert_int_equal(store_read(obj_key_rep(OID + 3), got, 4096, 2 << 20),
			 SD_RES_EIO);
	/* a truncated inode lost its checksums with its end: damage too */
	assert_int_equal(store_create(obj_key_rep(inode), 8192, a, 4096, 0,
				      false),
			 SD_RES_SUCCESS);
	obj_path(p, sizeof(p), inode, "");
	assert_int_equal(truncate(p, 4096), 0);
	assert_int_equal(store_read(obj_key_rep(inode), got, 4096, 0),
			 SD_RES_EIO);
	assert_int_equal(store_remove(obj_key_rep(inode)), SD_RES_SUCCESS);
}

static int nr_stale_files(void)
{
	char p[200];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "%s/obj/.stale", base);
	d = opendir(p);
	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* only the newest stale copy of an object is kept, under the newest label */
static void test_stale_keeps_newest(void **state)
{
	uint64_t count, bytes;
	uint32_t epoch = 0;

	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, false),
			 0);
	assert_int_equal(store_move_to_stale(obj_key_rep(OID), 5),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, b, OBJ, 0, false),
			 0);
	/* an older label on a newer copy: it keeps the newer label */
	assert_int_equal(store_move_to_stale(obj_key_rep(OID), 3),
			 SD_RES_SUCCESS);
	assert_int_equal(nr_stale_files(), 1);
	assert_int_equal(store_read_stale(obj_key_rep(OID), got, OBJ, 0,
					  &epoch),
			 SD_RES_SUCCESS);
	assert_int_equal(epoch, 5);
	assert_memory_equal(got, b, OBJ);
	store_stale_usage(&count, &bytes);
	assert_int_equal(count, 1);
	assert_true(bytes >= OBJ);
	assert_int_equal(store_exist(obj_key_rep(OID)), SD_RES_NO_OBJ);
}

/* a drop names the copy it checked: a newer one that came since stays */
static void test_stale_drop(void **state)
{
	uint32_t epoch = 0;
	struct obj_key k;
	uint32_t ep;

	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, false),
			 0);
	assert_int_equal(store_move_to_stale(obj_key_rep(OID), 7),
			 SD_RES_SUCCESS);
	assert_int_equal(store_list_stale(&k, &ep, 1), 1);
	assert_true(obj_key_eq(k, obj_key_rep(OID)) && ep == 7);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, b, OBJ, 0, false),
			 0);
	assert_int_equal(store_move_to_stale(obj_key_rep(OID), 9),
			 SD_RES_SUCCESS);
	assert_int_equal(store_drop_stale(obj_key_rep(OID), 7), SD_RES_NO_OBJ);
	assert_int_equal(store_read_stale(obj_key_rep(OID), got, OBJ, 0,
					  &epoch), 0);
	assert_int_equal(epoch, 9);
	assert_int_equal(store_drop_stale(obj_key_rep(OID), 9), SD_RES_SUCCESS);
	assert_int_equal(nr_stale_files(), 0);
	assert_int_equal(store_nr_stale(), 0);
	assert_int_equal(store_read_stale(obj_key_rep(OID), got, OBJ, 0,
					  &epoch),
			 SD_RES_NO_OBJ);
}

/* a restart rebuilds the index and deletes older duplicates */
static void test_stale_index_rebuilt(void **state)
{
	char p[200];
	uint32_t epoch = 0;
	FILE *f;

	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, false),
			 0);
	assert_int_equal(store_move_to_stale(obj_key_rep(OID), 4),
			 SD_RES_SUCCESS);
	/* an older copy left by an earlier version of the store */
	snprintf(p, sizeof(p), "%s/obj/.stale/%016llx.2", base,
		 (unsigned long long)OID);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(store_init(base, true), 0);
	assert_int_equal(nr_stale_files(), 1);
	assert_int_equal(store_read_stale(obj_key_rep(OID), got, OBJ, 0,
					  &epoch), 0);
	assert_int_equal(epoch, 4);
	assert_memory_equal(got, a, OBJ);
	assert_int_equal(store_nr_stale(), 1);
}

#define OID2	UINT64_C(0x00abcdef00000008)

static int count_cb(struct obj_key k, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/*
 * A rejoin makes every object stale at once: the working store is empty
 * at once, the stale copies read (the left-behind one first: it is the
 * newest) before and after the worker's drain, and are listed for
 * recovery; the drain keeps one copy per object.
 */
static void test_stale_all_swap_and_drain(void **state)
{
	char p[300];
	uint32_t epoch = 0;
	int n = 0, w = 0;

	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, false),
			 0);
	assert_int_equal(store_move_to_stale(obj_key_rep(OID), 3),
			 SD_RES_SUCCESS);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, b, OBJ, 0, false),
			 0);
	assert_int_equal(store_create(obj_key_rep(OID2), OBJ, a, OBJ, 0, false),
			 0);
	/* with what earlier tests left */
	assert_int_equal(store_for_each(count_cb, &w), 0);
	assert_true(w >= 2);
	assert_int_equal(store_stale_all(6), SD_RES_SUCCESS);
	/* the checksum marker stays with the store (else: an upgrade again) */
	snprintf(p, sizeof(p), "%s/obj/.csum-v1", base);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(store_exist(obj_key_rep(OID)), SD_RES_NO_OBJ);
	assert_int_equal(store_exist(obj_key_rep(OID2)), SD_RES_NO_OBJ);
	assert_int_equal(store_for_each(count_cb, &n), 0);
	assert_int_equal(n, 0);
	/* not drained yet: the copy of the rejoin, epoch 6, not epoch 3's */
	assert_int_equal(store_read_stale(obj_key_rep(OID), got, OBJ, 0,
					  &epoch), 0);
	assert_int_equal(epoch, 6);
	assert_memory_equal(got, b, OBJ);
	assert_int_equal(store_for_each_stale(count_cb, &n), 0);
	assert_true(n >= w);
	/* a new working copy beside them */
	assert_int_equal(store_create(obj_key_rep(OID2), OBJ, b, OBJ, 0, false),
			 0);
	assert_int_equal(store_drain_left(), w);
	assert_int_equal(nr_stale_files(), w);
	assert_int_equal(store_read_stale(obj_key_rep(OID), got, OBJ, 0,
					  &epoch), 0);
	assert_int_equal(epoch, 6);
	assert_memory_equal(got, b, OBJ);
	assert_int_equal(store_read_stale(obj_key_rep(OID2), got, OBJ, 0,
					  &epoch), 0);
	assert_memory_equal(got, a, OBJ);
	assert_int_equal(store_read(obj_key_rep(OID2), got, OBJ, 0),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, b, OBJ);
	assert_int_equal(store_drain_left(), 0);
	assert_int_equal(store_remove(obj_key_rep(OID2)), SD_RES_SUCCESS);
}

/* a swap that a crash left undrained is finished at start-up */
static void test_stale_all_leftover_at_init(void **state)
{
	char p[300];
	uint32_t epoch = 0;
	struct stat st;
	int w = 0;

	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, false),
			 0);
	assert_int_equal(store_for_each(count_cb, &w), 0);
	assert_int_equal(store_stale_all(8), SD_RES_SUCCESS);
	/* the daemon dies here: a restart moves it in before serving */
	assert_int_equal(store_init(base, true), 0);
	snprintf(p, sizeof(p), "%s/obj.left.8", base);
	assert_int_not_equal(stat(p, &st), 0);
	assert_int_equal(nr_stale_files(), w);
	assert_int_equal(store_read_stale(obj_key_rep(OID), got, OBJ, 0,
					  &epoch), 0);
	assert_int_equal(epoch, 8);
	assert_memory_equal(got, a, OBJ);
}

/* a sparse object (an inode) written whole keeps its zero blocks as holes */
static void test_sparse_create_keeps_holes(void **state)
{
	const uint64_t inode = UINT64_C(0x80abcde000000000);
	const uint32_t size = 12u << 20;
	uint8_t *buf = calloc(1, size);
	char p[200];
	struct stat st;

	assert_non_null(buf);
	memset(buf + 8192, 0x11, 100);
	memset(buf + size - 4096, 0x22, 4096);
	assert_int_equal(store_create_new(obj_key_rep(inode), size, buf, size,
					  0, false),
			 SD_RES_SUCCESS);
	obj_path(p, sizeof(p), inode, "");
	assert_int_equal(stat(p, &st), 0);
	/* data, then a {cur, prev} CRC pair per 4 KiB block, then a footer */
	assert_int_equal(st.st_size, size + size / 4096 * 8 + 16);
	assert_true((uint64_t)st.st_blocks * 512 <= 64 * 1024);
	memset(buf, 0xff, size);
	assert_int_equal(store_read(obj_key_rep(inode), buf, size, 0),
			 SD_RES_SUCCESS);
	assert_true(is_zero(buf, 8192));
	assert_int_equal(buf[8192], 0x11);
	assert_int_equal(buf[size - 1], 0x22);
	free(buf);
	assert_int_equal(store_remove(obj_key_rep(inode)), SD_RES_SUCCESS);
}

static void obj_file(char *p, size_t len, uint64_t oid)
{
	obj_path(p, len, oid, "");
}

static void poke(uint64_t oid, off_t off, const void *data, size_t len)
{
	char p[200];
	int fd;

	obj_file(p, sizeof(p), oid);
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
	close(fd);
}

/* a flipped byte fails the read of its block only; a rewrite heals it */
static void test_csum_detects_flip(void **state)
{
	const uint64_t oid = OID + 10;
	uint8_t x = 0xaa ^ 0x01;

	assert_int_equal(store_create(obj_key_rep(oid), OBJ, a, OBJ, 0, false),
			 0);
	poke(oid, 5 * 4096 + 77, &x, 1);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 5 * 4096),
			 SD_RES_EIO);
	assert_int_equal(store_read(obj_key_rep(oid), got, 10, 5 * 4096 + 4090),
			 SD_RES_EIO);
	assert_int_equal(store_read(obj_key_rep(oid), got, OBJ, 0), SD_RES_EIO);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 4 * 4096), 0);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 6 * 4096), 0);
	assert_memory_equal(got, a, 4096);
	/* a partial write of the rotten block would bless the rot: refused */
	assert_int_equal(store_write(obj_key_rep(oid), b, 100, 5 * 4096 + 1000,
				     false),
			 SD_RES_EIO);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 5 * 4096),
			 SD_RES_EIO);
	/* a whole-block rewrite needs no old data: the block is good again */
	assert_int_equal(store_write(obj_key_rep(oid), b, 4096, 5 * 4096,
				     false), 0);
	assert_int_equal(store_read(obj_key_rep(oid), got, 8192, 5 * 4096), 0);
	assert_memory_equal(got, b, 4096);
	assert_memory_equal(got + 4096, a, 4096);
	/* the CRC table itself damaged: detected too */
	x = 0x5a;
	poke(oid, OBJ + 8 * 9, &x, 1);
	poke(oid, OBJ + 8 * 9 + 4, &x, 1);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 9 * 4096),
			 SD_RES_EIO);
	assert_int_equal(store_remove(obj_key_rep(oid)), 0);
}

/* the page cache of @oid's file dropped (written back first) */
static void evict(uint64_t oid)
{
	char p[200];
	int fd;

	obj_file(p, sizeof(p), oid);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fdatasync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
}

/*
 * store_read_nowait (the event loop's read) serves only what the page
 * cache holds of a file the fd cache has open, verified; a page on disk
 * or a mismatch is left to store_read, which reports the rot (the
 * loop's try neither counts nor logs it).
 */
static void test_read_nowait(void **state)
{
	const uint64_t oid = OID + 14;
	uint8_t x = 0xaa ^ 0x10;
	uint64_t seen;

	assert_int_equal(store_create(obj_key_rep(oid), OBJ, a, OBJ, 0, false),
			 0);
	assert_int_equal(store_write(obj_key_rep(oid), b, 4096, 8192, false),
			 0);
	/* a worker's read opens the file and learns its size */
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 0), 0);
	memset(got, 0, OBJ);
	assert_true(store_read_nowait(obj_key_rep(oid), got, 3 * 4096, 4096));
	assert_memory_equal(got, a, 4096);
	assert_memory_equal(got + 4096, b, 4096);
	assert_memory_equal(got + 8192, a, 4096);
	/* unaligned, inside one block */
	assert_true(store_read_nowait(obj_key_rep(oid), got, 100, 8192 + 7));
	assert_memory_equal(got, b, 100);
	/* past the end: the worker's (sparse objects read zeros there) */
	assert_false(store_read_nowait(obj_key_rep(oid), got, 4096, OBJ));
	/* not in the page cache: would block */
	evict(oid);
	assert_false(store_read_nowait(obj_key_rep(oid), got, 4096, 4096));
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 4096), 0);
	assert_memory_equal(got, a, 4096);
	assert_true(store_read_nowait(obj_key_rep(oid), got, 4096, 4096));
	/* rot: not served, not counted; the worker's read reports it */
	poke(oid, 4096 + 9, &x, 1);
	seen = store_nr_mismatches();
	assert_false(store_read_nowait(obj_key_rep(oid), got, 4096, 4096));
	assert_int_equal(store_nr_mismatches(), seen);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 4096),
			 SD_RES_EIO);
	assert_int_equal(store_nr_mismatches(), seen + 1);
	/* removed: the fd cache forgets it */
	assert_int_equal(store_remove(obj_key_rep(oid)), 0);
	assert_false(store_read_nowait(obj_key_rep(oid), got, 4096, 0));
	/* never opened */
	assert_false(store_read_nowait(obj_key_rep(oid + 1), got, 4096, 0));
}

/*
 * A file unlinked behind the store's back (an operator, a test) reads as
 * missing, though the fd cache holds it open: the cache asks its link
 * count (statx) before every use, from a worker and from the loop.
 */
static void test_unlinked_reads_missing(void **state)
{
	const uint64_t oid = OID + 15;
	char p[256];

	assert_int_equal(store_create(obj_key_rep(oid), OBJ, a, OBJ, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 0),
			 SD_RES_SUCCESS);
	assert_true(store_read_nowait(obj_key_rep(oid), got, 4096, 0));
	obj_path(p, sizeof(p), oid, "");
	assert_int_equal(unlink(p), 0);
	assert_false(store_read_nowait(obj_key_rep(oid), got, 4096, 0));
	assert_false(store_write_nowait(obj_key_rep(oid), b, 4096, 0));
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 0),
			 SD_RES_NO_OBJ);
	assert_int_equal(store_write(obj_key_rep(oid), b, 4096, 0, false),
			 SD_RES_NO_OBJ);
	assert_int_equal(store_exist(obj_key_rep(oid)), SD_RES_NO_OBJ);
}

/* unaligned writes keep the CRCs of the blocks they touch right */
static void test_csum_unaligned_writes(void **state)
{
	const uint64_t oid = OID + 11;
	uint8_t *model = malloc(OBJ);

	assert_non_null(model);
	memcpy(model, a, OBJ);
	assert_int_equal(store_create(obj_key_rep(oid), OBJ, a, OBJ, 0, false),
			 0);
	srand(7);
	for (int i = 0; i < 300; i++) {
		uint32_t len = 1 + rand() % 20000;
		uint32_t off = rand() % (OBJ - len);

		for (uint32_t k = 0; k < len; k++)
			b[k] = (uint8_t)rand();
		assert_int_equal(store_write(obj_key_rep(oid), b, len, off,
					     false), 0);
		memcpy(model + off, b, len);
		if (i % 50 == 0) {
			assert_int_equal(store_read(obj_key_rep(oid), got, OBJ,
						    0), 0);
			assert_memory_equal(got, model, OBJ);
		}
	}
	assert_int_equal(store_read(obj_key_rep(oid), got, 777, 123456), 0);
	assert_memory_equal(got, model + 123456, 777);
	assert_int_equal(store_read(obj_key_rep(oid), got, OBJ, 0), 0);
	assert_memory_equal(got, model, OBJ);
	memset(b, 0xbb, OBJ);
	free(model);
	assert_int_equal(store_remove(obj_key_rep(oid)), 0);
}

/*
 * A crash after the new CRC was written but before its data: the old data
 * still matches the CRC kept as "prev" and reads back, no false alarm.
 */
static void test_csum_crash_between_crc_and_data(void **state)
{
	const uint64_t oid = OID + 12;

	assert_int_equal(store_create(obj_key_rep(oid), OBJ, a, OBJ, 0, false),
			 0);
	assert_int_equal(store_write(obj_key_rep(oid), b, 4096, 8192, false),
			 0);
	/* undo the data write only */
	poke(oid, 8192, a, 4096);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 8192), 0);
	assert_memory_equal(got, a, 4096);
	assert_int_equal(store_remove(obj_key_rep(oid)), 0);
}

/* a store of files without checksums gets them at start-up, once */
static void test_csum_upgrade(void **state)
{
	const uint64_t oid = OID + 13, inode = UINT64_C(0x80abcd0000000000);
	char p[200], marker[200];
	uint8_t *ino = calloc(1, 8192);
	FILE *f;

	assert_non_null(ino);
	memset(ino + 4096, 0x33, 10);
	snprintf(marker, sizeof(marker), "%s/obj/.csum-v1", base);
	assert_int_equal(unlink(marker), 0);
	obj_file(p, sizeof(p), oid);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(a, 1, OBJ, f), OBJ);
	fclose(f);
	obj_file(p, sizeof(p), inode);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(ino, 1, 8192, f), 8192);
	fclose(f);
	assert_int_equal(store_init(base, true), 0);
	assert_int_equal(access(marker, F_OK), 0);
	assert_int_equal(store_read(obj_key_rep(oid), got, OBJ, 0), 0);
	assert_memory_equal(got, a, OBJ);
	assert_int_equal(store_read(obj_key_rep(inode), got, 8192, 0), 0);
	assert_memory_equal(got, ino, 8192);
	/* upgraded: a later file without a trailer is damage */
	obj_file(p, sizeof(p), oid);
	assert_int_equal(truncate(p, OBJ), 0);
	assert_int_equal(store_init(base, true), 0);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 0),
			 SD_RES_EIO);
	assert_int_equal(store_remove(obj_key_rep(oid)), 0);
	assert_int_equal(store_remove(obj_key_rep(inode)), 0);
	free(ino);
}

/*
 * A repair rewrites only the blocks that fail: a block a client rewrote
 * after the good copy was read is newer than the good copy and stays.
 */
static void test_repair_blocks(void **state)
{
	const uint64_t oid = OID + 14;
	uint8_t x = 0xaa ^ 0xff;
	int nr = -1;

	assert_int_equal(store_create(obj_key_rep(oid), OBJ, a, OBJ, 0, false),
			 0);
	poke(oid, 3 * 4096 + 5, &x, 1);		/* rot in block 3 */
	/* a client write to block 7 lands after the good copy (a) was read */
	assert_int_equal(store_write(obj_key_rep(oid), b, 4096, 7 * 4096,
				     false), 0);
	assert_int_equal(store_read(obj_key_rep(oid), got, OBJ, 0), SD_RES_EIO);
	assert_int_equal(store_repair(obj_key_rep(oid), a, OBJ, &nr),
			 SD_RES_SUCCESS);
	assert_int_equal(nr, 1);
	assert_int_equal(store_read(obj_key_rep(oid), got, OBJ, 0), 0);
	assert_memory_equal(got, a, 7 * 4096);
	assert_memory_equal(got + 7 * 4096, b, 4096);
	assert_memory_equal(got + 8 * 4096, a, OBJ - 8 * 4096);
	/* nothing left to repair */
	assert_int_equal(store_repair(obj_key_rep(oid), a, OBJ, &nr),
			 SD_RES_SUCCESS);
	assert_int_equal(nr, 0);
	assert_int_equal(store_remove(obj_key_rep(oid)), 0);
}

/*
 * what a flush must sync: one entry per object (a strip and the replica of
 * one oid are two), all taken at once
 */
static void test_dirty_set(void **state)
{
	const struct obj_key one = obj_key_rep(1), two = obj_key_rep(2);
	const struct obj_key strip = { 1, 0 };
	struct obj_key *o;
	struct dir_set dir, none = { { 0 } };
	size_t nr;

	dirty_add(one);
	dirty_add(two);
	dirty_add(one);
	dirty_dir(LAYOUT_SUB_META);
	dirty_dir(7);
	o = dirty_take(&nr, &dir);
	assert_int_equal(nr, 2);
	assert_true(dir_set_has(&dir, LAYOUT_SUB_META));
	assert_true(dir_set_has(&dir, 7));
	assert_false(dir_set_has(&dir, 8));
	assert_false(dir_set_has(&dir, LAYOUT_SUB_TOP));
	assert_true((obj_key_eq(o[0], one) && obj_key_eq(o[1], two)) ||
		    (obj_key_eq(o[0], two) && obj_key_eq(o[1], one)));
	/* a failed flush puts back what it did not sync */
	dirty_restore(o + 1, 1, &none);
	free(o);
	o = dirty_take(&nr, &dir);
	assert_int_equal(nr, 1);
	assert_false(dir_set_has(&dir, LAYOUT_SUB_META));
	assert_false(dir_set_has(&dir, 7));
	dirty_dir(LAYOUT_SUB_TOP);
	free(o);
	o = dirty_take(&nr, &dir);
	assert_int_equal(nr, 0);
	dirty_restore(o, 0, &dir);
	free(o);
	o = dirty_take(&nr, &dir);
	assert_true(dir_set_has(&dir, LAYOUT_SUB_TOP));
	free(o);
	o = dirty_take(&nr, &dir);
	assert_int_equal(nr, 0);
	free(o);
	dirty_add(one);
	dirty_add(strip);
	dirty_add(strip);
	o = dirty_take(&nr, &dir);
	assert_int_equal(nr, 2);
	assert_true(obj_key_eq(o[0], strip) || obj_key_eq(o[1], strip));
	free(o);
}

/* ---- strips: objects of their own beside the replica of their oid ---- */

#define SOID	UINT64_C(0x00abcdef00000020)
#define SSIZE	(OBJ / 4)

static const struct obj_key s0 = { SOID, 0 }, s1 = { SOID, 1 };

static bool file_exists(const char *dir, const char *name)
{
	char p[300];

	char pre[8];

	/* "": where the store keeps SOID's files */
	layout_prefix(layout_sub(obj_key_rep(SOID)), pre, sizeof(pre));
	snprintf(p, sizeof(p), "%s/obj%s/%s%s", base, dir, *dir ? "" : pre,
		 name);
	return !access(p, F_OK);
}

struct seen {
	int s0, s1, rep, other;
};

static int see_key(struct obj_key k, void *arg)
{
	struct seen *n = arg;

	if (obj_key_eq(k, s0))
		n->s0++;
	else if (obj_key_eq(k, s1))
		n->s1++;
	else if (obj_key_eq(k, obj_key_rep(SOID)))
		n->rep++;
	else
		n->other++;
	return 0;
}

/* three files: <oid>_0, <oid>_1 and <oid>, read and written apart */
static void make_three(void)
{
	assert_int_equal(store_create(s0, SSIZE, a, SSIZE, 0, false), 0);
	assert_int_equal(store_create(s1, SSIZE, b, SSIZE, 0, false), 0);
	assert_int_equal(store_create(obj_key_rep(SOID), OBJ, got, OBJ, 0,
				      false), 0);
}

static void test_strips_coexist(void **state)
{
	uint8_t *r = malloc(OBJ), *x = malloc(SSIZE);
	struct seen n = { 0 };

	assert_non_null(r);
	assert_non_null(x);
	memset(got, 0xcc, OBJ);
	make_three();
	assert_true(file_exists("", "00abcdef00000020_0"));
	assert_true(file_exists("", "00abcdef00000020_1"));
	assert_true(file_exists("", "00abcdef00000020"));
	assert_int_equal(store_exist((struct obj_key){ SOID, 2 }),
			 SD_RES_NO_OBJ);
	/* a write to one strip touches neither the other nor the replica */
	assert_int_equal(store_write(s1, a, 4096, 8192, false), 0);
	assert_int_equal(store_read(s0, x, SSIZE, 0), 0);
	assert_memory_equal(x, a, SSIZE);
	assert_int_equal(store_read(s1, x, SSIZE, 0), 0);
	assert_memory_equal(x, b, 8192);
	assert_memory_equal(x + 8192, a, 4096);
	assert_memory_equal(x + 12288, b, SSIZE - 12288);
	assert_int_equal(store_read(obj_key_rep(SOID), r, OBJ, 0), 0);
	assert_memory_equal(r, got, OBJ);
	/* a strip is as long as it was created, not an object */
	assert_int_equal(store_read(s0, x, 4096, SSIZE), SD_RES_EIO);
	/* all three are listed, each under its own key */
	assert_int_equal(store_for_each(see_key, &n), 0);
	assert_true(n.s0 == 1 && n.s1 == 1 && n.rep == 1);
	/* removed apart */
	assert_int_equal(store_remove(s0), SD_RES_SUCCESS);
	assert_int_equal(store_exist(s0), SD_RES_NO_OBJ);
	assert_int_equal(store_exist(s1), SD_RES_SUCCESS);
	assert_int_equal(store_exist(obj_key_rep(SOID)), SD_RES_SUCCESS);
	assert_int_equal(store_read(s0, x, 4096, 0), SD_RES_NO_OBJ);
	assert_int_equal(store_remove(obj_key_rep(SOID)), SD_RES_SUCCESS);
	assert_int_equal(store_read(s1, x, 4096, 0), SD_RES_SUCCESS);
	assert_int_equal(store_remove(s1), SD_RES_SUCCESS);
	assert_false(file_exists("", "00abcdef00000020_1"));
	free(r);
	free(x);
}

/*
 * The stale area keeps a strip under its index (<oid>_<idx>.<epoch>):
 * beside the stale replica of its oid, read, listed, dropped and indexed
 * again at start-up as itself
 */
static void test_strips_stale(void **state)
{
	struct obj_key keys[8];
	uint32_t epochs[8], epoch = 0;
	uint8_t *x = malloc(SSIZE);
	int nr, found = 0;

	assert_non_null(x);
	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	memset(got, 0xcc, OBJ);
	make_three();
	assert_int_equal(store_move_to_stale(s1, 4), SD_RES_SUCCESS);
	assert_true(file_exists("/.stale", "00abcdef00000020_1.4"));
	assert_int_equal(store_exist(s1), SD_RES_NO_OBJ);
	assert_int_equal(store_exist(obj_key_rep(SOID)), SD_RES_SUCCESS);
	assert_int_equal(store_read_stale(obj_key_rep(SOID), x, 4096, 0,
					  &epoch), SD_RES_NO_OBJ);
	assert_int_equal(store_move_to_stale(obj_key_rep(SOID), 5),
			 SD_RES_SUCCESS);
	assert_int_equal(nr_stale_files(), 2);
	nr = store_list_stale(keys, epochs, 8);
	assert_int_equal(nr, 2);
	for (int i = 0; i < nr; i++) {
		if (obj_key_eq(keys[i], s1))
			found += epochs[i] == 4;
		else if (obj_key_eq(keys[i], obj_key_rep(SOID)))
			found += epochs[i] == 5;
	}
	assert_int_equal(found, 2);
	/* indexed again from the names at start-up */
	assert_int_equal(store_init(base, true), 0);
	assert_int_equal(store_nr_stale(), 2);
	assert_int_equal(store_read_stale(s1, x, SSIZE, 0, &epoch), 0);
	assert_int_equal(epoch, 4);
	assert_memory_equal(x, b, SSIZE);
	assert_int_equal(store_read_stale(obj_key_rep(SOID), got, OBJ, 0,
					  &epoch), 0);
	assert_int_equal(epoch, 5);
	assert_int_equal(store_read_stale(s0, x, 4096, 0, &epoch),
			 SD_RES_NO_OBJ);
	/* dropping the strip's copy leaves the replica's */
	assert_int_equal(store_drop_stale(s1, 5), SD_RES_NO_OBJ);
	assert_int_equal(store_drop_stale(s1, 4), SD_RES_SUCCESS);
	assert_int_equal(store_nr_stale(), 1);
	assert_int_equal(store_read_stale(obj_key_rep(SOID), got, 4096, 0,
					  &epoch), 0);
	assert_int_equal(store_remove(s0), SD_RES_SUCCESS);
	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	free(x);
}

/* a rejoin's swap and drain keep every strip's index */
static void test_strips_stale_all(void **state)
{
	struct seen n = { 0 };
	uint32_t epoch = 0;
	uint8_t *x = malloc(SSIZE);

	assert_non_null(x);
	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	make_three();
	assert_int_equal(store_stale_all(9), SD_RES_SUCCESS);
	assert_int_equal(store_exist(s0), SD_RES_NO_OBJ);
	/* before the drain, from the store left behind */
	assert_int_equal(store_read_stale(s1, x, SSIZE, 0, &epoch), 0);
	assert_int_equal(epoch, 9);
	assert_memory_equal(x, b, SSIZE);
	assert_int_equal(store_for_each_stale(see_key, &n), 0);
	assert_true(n.s0 == 1 && n.s1 == 1 && n.rep == 1);
	store_drain_left();
	assert_true(file_exists("/.stale", "00abcdef00000020_0.9"));
	assert_true(file_exists("/.stale", "00abcdef00000020_1.9"));
	assert_true(file_exists("/.stale", "00abcdef00000020.9"));
	assert_int_equal(store_read_stale(s0, x, SSIZE, 0, &epoch), 0);
	assert_memory_equal(x, a, SSIZE);
	memset(&n, 0, sizeof(n));
	assert_int_equal(store_for_each_stale(see_key, &n), 0);
	assert_true(n.s0 == 1 && n.s1 == 1 && n.rep == 1);
	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	free(x);
}

/*
 * A rejoin's strips keep the version they settled at beside their stale
 * copies (recovery's last resort rebuilds from them); a strip with
 * nothing committed, one with a version in doubt and a replica have
 * none; a newer copy never inherits the version of the one it replaces.
 */
static void test_strips_stale_version(void **state)
{
	const struct obj_key s2 = { SOID, 2 };
	uint64_t v = 0;

	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	make_three();
	assert_int_equal(store_strip_prepare(s0, SSIZE, 5, 0, b, 4096, 0), 0);
	assert_int_equal(store_strip_commit(s0, 5), 0);
	assert_int_equal(store_strip_prepare(s2, SSIZE, 3, 0, b, 4096, 0), 0);
	assert_int_equal(store_stale_all(12), SD_RES_SUCCESS);
	/* before the drain, from the undo file left behind */
	assert_int_equal(store_strip_stale_version(s0, &v), 0);
	assert_int_equal(v, 5);
	store_drain_left();
	v = 0;
	assert_int_equal(store_strip_stale_version(s0, &v), 0);
	assert_int_equal(v, 5);
	assert_true(file_exists("/.stale", "00abcdef00000020_0.12.undo"));
	assert_int_equal(store_strip_stale_version(s1, &v), SD_RES_NO_OBJ);
	assert_int_equal(store_strip_stale_version(s2, &v), SD_RES_NO_OBJ);
	assert_int_equal(store_strip_stale_version(obj_key_rep(SOID), &v),
			 SD_RES_NO_OBJ);
	/* strip 0 again, without a version, left behind at the same label */
	assert_int_equal(store_create(s0, SSIZE, a, SSIZE, 0, false), 0);
	assert_int_equal(store_stale_all(12), SD_RES_SUCCESS);
	store_drain_left();
	assert_int_equal(store_strip_stale_version(s0, &v), SD_RES_NO_OBJ);
	assert_false(file_exists("/.stale", "00abcdef00000020_0.12.undo"));
	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	assert_int_equal(store_strip_stale_version(s0, &v), SD_RES_NO_OBJ);
}

static void touch(const char *dir, const char *name)
{
	char p[300];
	FILE *f;

	snprintf(p, sizeof(p), "%s/obj%s/%s", base, dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
}

/* names the store never writes are left alone by every listing */
static void test_unknown_names_skipped(void **state)
{
	static const char *const names[] = {
		"00abcdef00000020_", "00abcdef00000020_x",
		"00abcdef00000020_255", "00abcdef00000020_07",
		"00abcdef00000020_1000", "00abcdef00000020_1.undo",
		"00ABCDEF00000020", "+0abcdef00000020", "00abcdef0000002",
	};
	static const char *const stale[] = {
		"00abcdef00000020_1.x", "00abcdef00000020_x.3",
		"00abcdef00000020_1.0", "00abcdef00000020_1.",
		"00abcdef00000020_1.+3",
	};
	struct seen n = { 0 };

	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		touch("", names[i]);
	for (size_t i = 0; i < ARRAY_SIZE(stale); i++)
		touch("/.stale", stale[i]);
	assert_int_equal(store_init(base, true), 0);
	assert_int_equal(store_for_each(see_key, &n), 0);
	assert_int_equal(n.s0 + n.s1 + n.rep, 0);
	assert_int_equal(store_nr_stale(), 0);
	/* a rejoin moves in only what it knows; the rest goes with obj.left */
	assert_int_equal(store_stale_all(11), SD_RES_SUCCESS);
	assert_int_equal(store_for_each_stale(see_key, &n), 0);
	store_drain_left();
	assert_int_equal(store_for_each_stale(see_key, &n), 0);
	assert_int_equal(n.s0 + n.s1 + n.rep, 0);
	assert_int_equal(store_purge_stale(), SD_RES_SUCCESS);
}

/*
 * Changing the layout (a format, a node joining a cluster formatted the
 * other way) moves every file to its place in the other: data objects,
 * inodes and strips with their undo files; then back
 */
static void test_layout_convert(void **state)
{
	const uint64_t inode = UINT64_C(0x80abcdef00000000);
	const char *was = layout_tree() ? "tree" : "plain";
	const char *other = layout_tree() ? "plain" : "tree";
	char p[300], d[300];
	struct seen n = { 0 };

	make_three();
	assert_int_equal(store_create(obj_key_rep(inode), 8192, b, 8192, 0,
				      false), 0);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(store_set_layout(round ? was : other),
				 SD_RES_SUCCESS);
		obj_path(p, sizeof(p), inode, "");
		assert_int_equal(access(p, F_OK), 0);
		assert_true(strstr(p, "/meta/") ? layout_tree() :
			    !layout_tree());
		assert_true(file_exists("", "00abcdef00000020_0"));
		assert_true(file_exists("", "00abcdef00000020_1"));
		assert_true(file_exists("", "00abcdef00000020"));
		/* a plain store has no subdirectories left */
		snprintf(d, sizeof(d), "%s/obj/ef", base);
		assert_int_equal(access(d, F_OK) == 0, layout_tree());
		assert_int_equal(store_read(s1, got, SSIZE, 0), 0);
		assert_memory_equal(got, b, SSIZE);
		assert_int_equal(store_read(obj_key_rep(inode), got, 8192, 0),
				 0);
		assert_memory_equal(got, b, 8192);
	}
	memset(&n, 0, sizeof(n));
	assert_int_equal(store_for_each(see_key, &n), 0);
	assert_int_equal(n.s0 + n.s1 + n.rep, 3);
	assert_int_equal(store_remove(s0), 0);
	assert_int_equal(store_remove(s1), 0);
	assert_int_equal(store_remove(obj_key_rep(SOID)), 0);
	assert_int_equal(store_remove(obj_key_rep(inode)), 0);
	/* an unknown store is refused, the layout unchanged */
	assert_int_equal(store_set_layout("bogus"), SD_RES_NO_STORE);
	assert_string_equal(layout_tree() ? "tree" : "plain", was);
}

static volatile int switching;

/* md_healthy on the only disk while the layout flips under it */
static void *check_disk(void *arg)
{
	int *bad = arg;

	while (__atomic_load_n(&switching, __ATOMIC_ACQUIRE))
		if (!md_healthy(0, false))
			(*bad)++;
	return NULL;
}

/*
 * A disk check during a change of layout (a format, a node joining a
 * cluster formatted -b tree) never sees a tree store without its
 * subdirectories: it would fail the disk, and the node leave.  ci32's
 * test 180 lost a joining node's disk this way; ci33 caught a check that
 * read "tree" just before a change to plain removed them.
 */
static void test_layout_switch_healthy(void **state)
{
	const char *was = layout_tree() ? "tree" : "plain";
	const char *other = layout_tree() ? "plain" : "tree";
	pthread_t t;
	int bad = 0;

	switching = 1;
	assert_int_equal(pthread_create(&t, NULL, check_disk, &bad), 0);
	for (int round = 0; round < 40; round++)
		assert_int_equal(store_set_layout(round & 1 ? was : other),
				 SD_RES_SUCCESS);
	__atomic_store_n(&switching, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(bad, 0);
	assert_true(md_healthy(0, false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_new_keeps_existing),
		cmocka_unit_test(test_create_replaces),
		cmocka_unit_test(test_no_tmp_left),
		cmocka_unit_test(test_leftover_tmp),
		cmocka_unit_test(test_short_object),
		cmocka_unit_test(test_stale_keeps_newest),
		cmocka_unit_test(test_stale_drop),
		cmocka_unit_test(test_stale_index_rebuilt),
		cmocka_unit_test(test_stale_all_swap_and_drain),
		cmocka_unit_test(test_stale_all_leftover_at_init),
		cmocka_unit_test(test_sparse_create_keeps_holes),
		cmocka_unit_test(test_csum_detects_flip),
		cmocka_unit_test(test_csum_unaligned_writes),
		cmocka_unit_test(test_read_nowait),
		cmocka_unit_test(test_unlinked_reads_missing),
		cmocka_unit_test(test_csum_crash_between_crc_and_data),
		cmocka_unit_test(test_csum_upgrade),
		cmocka_unit_test(test_repair_blocks),
		cmocka_unit_test(test_dirty_set),
		cmocka_unit_test(test_strips_coexist),
		cmocka_unit_test(test_strips_stale),
		cmocka_unit_test(test_strips_stale_all),
		cmocka_unit_test(test_strips_stale_version),
		cmocka_unit_test(test_unknown_names_skipped),
		cmocka_unit_test(test_layout_convert),
		cmocka_unit_test(test_layout_switch_healthy),
	};
	int failed = cmocka_run_group_tests_name("store", tests, setup,
						 teardown);

	return failed + cmocka_run_group_tests_name("store, tree layout", tests,
						    setup_tree, teardown);
}
