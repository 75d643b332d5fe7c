// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The write journal (sheep/store/journal.c): a journaled write lost from
 * its object file comes back at the next start-up; an object removed and
 * created again never gets its old records; a record cut short or damaged
 * at the end is not applied (it was never acknowledged); a block torn by
 * a crash under a partial write is rewritten, not refused; a full journal
 * checkpoints; records of an older generation are never replayed; the
 * half checkpointed while writes go on in the other is replayed first; a
 * checkpoint whose object syncs fail is retried, writers that need its
 * half get EIO meanwhile, and none is lost; a strip's records come back
 * into that strip, and a journal of version 2 (records without the strip
 * index) is still replayed; a durable write that finds a sync under way
 * is reported by the sync thread, after a later sync, also across a
 * forget of its object and a checkpoint of its half; at depth 1 a
 * record is written and synced in one pwritev2(RWF_DSYNC), and one that
 * fails leaves no hole before later records.  A cached write has its
 * record too: no replay writes an older record over it, and a flush is
 * one sync of the journal that syncs no object, after which a cached
 * write lost from its object comes back; a flush whose sync fails says
 * so and the next one syncs again; one too large for a half
 * syncs its object instead.  fdatasync() and
 * syncfs() of the object files are interposed: they fail while
 * objects_fail is set; the journal's (and its RWF_DSYNC writes) are held
 * or fail on demand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <cmocka.h>
#include <isa-l/crc.h>

#include "sheepdog_proto.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util.h"

#define OBJ	(1u << 20)
#define SHIFT	20
#define OID	UINT64_C(0x00abcdef00000001)
#define OID2	UINT64_C(0x00abcdef00000002)
#define JSIZE	(1u << 20)

static char base[] = "/tmp/kelpie-test-journal.XXXXXX";
static uint8_t *a, *b, *c, *got;
static volatile bool objects_fail;

/* the path of open @fd into @path (PATH_MAX bytes); false if unknown */
static bool fd_path(int fd, char *path)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, PATH_MAX - 1);
	if (n <= 0)
		return false;
	path[n] = 0;
	return true;
}

/* an fd of an object file (not the journal) while objects_fail is set */
static bool fail_fd(int fd)
{
	char path[PATH_MAX], obj[PATH_MAX];

	if (!objects_fail || !fd_path(fd, path))
		return false;
	snprintf(obj, sizeof(obj), "%s/obj", base);
	return !strncmp(path, obj, strlen(obj));
}

/* the journal's fd */
static bool is_journal(int fd)
{
	char path[PATH_MAX], j[PATH_MAX];

	if (!fd_path(fd, path))
		return false;
	snprintf(j, sizeof(j), "%s/journal", base);
	return !strcmp(path, j);
}

/* syncs of the journal wait while held, fail while journal_fail is set */
static volatile bool journal_held, journal_in_sync, journal_fail;
static volatile int nr_journal_syncs, nr_dsync_writes;

/* a sync of the journal: held while journal_held, false if it is to fail */
static bool journal_sync_point(void)
{
	nr_journal_syncs++;
	journal_in_sync = true;
	while (journal_held)
		usleep(1000);
	journal_in_sync = false;
	return !journal_fail;
}

int fdatasync(int fd)
{
	if (fail_fd(fd)) {
		errno = EIO;
		return -1;
	}
	if (is_journal(fd) && !journal_sync_point()) {
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_fdatasync, fd);
}

/* a record written and synced at once (RWF_DSYNC) is a sync as well */
ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
		 int flags)
{
	if ((flags & RWF_DSYNC) && is_journal(fd)) {
		nr_dsync_writes++;
		if (!journal_sync_point()) {
			errno = EIO;
			return -1;
		}
	}
	return syscall(SYS_pwritev2, fd, iov, cnt, (long)off, 0L, flags);
}

int syncfs(int fd)
{
	if (objects_fail) {
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_syncfs, fd);
}

static int setup(void **state)
{
	if (!mkdtemp(base))
		return -1;
	a = malloc(OBJ);
	b = malloc(OBJ);
	c = malloc(OBJ);
	got = malloc(OBJ);
	if (!a || !b || !c || !got)
		return -1;
	memset(a, 0xaa, OBJ);
	memset(b, 0xbb, OBJ);
	memset(c, 0xcc, OBJ);
	/* a store that syncs: the journal is for those only */
	if (store_init(base, false))
		return -1;
	return store_journal_init(base, JSIZE);
}

static int teardown(void **state)
{
	char cmd[128];

	store_journal_close();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	free(a);
	free(b);
	free(c);
	free(got);
	return system(cmd) ? -1 : 0;
}

/* the object file's bytes at @off replaced behind the store's back */
static void lose_key(struct obj_key k, const void *old, uint32_t len,
		     uint32_t off)
{
	char p[4400];
	int fd;

	store_obj_path(p, sizeof(p), k);
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, old, len, off), (ssize_t)len);
	close(fd);
}

static void lose(uint64_t oid, const void *old, uint32_t len, uint32_t off)
{
	lose_key(obj_key_rep(oid), old, len, off);
}

static void restart(void)
{
	store_journal_close();
	assert_int_equal(store_journal_init(base, JSIZE), 0);
}

static void test_replay_restores(void **state)
{
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	assert_int_equal(store_write(obj_key_rep(OID), b, 4096, 8192, true), 0);
	assert_int_equal(store_write(obj_key_rep(OID), c, 100, 5000, true), 0);
	/* the crash took both writes (the checksums still know them) */
	lose(OID, a, 4096, 8192);
	lose(OID, a, 100, 5000);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0), 0);
	assert_memory_equal(got, a, 5000);
	assert_memory_equal(got + 5000, c, 100);
	assert_memory_equal(got + 5100, a, 8192 - 5100);
	assert_memory_equal(got + 8192, b, 4096);
	assert_memory_equal(got + 12288, a, OBJ - 12288);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

static void test_removed_object_not_revived(void **state)
{
	assert_int_equal(store_create(obj_key_rep(OID2), OBJ, a, OBJ, 0, true),
			 0);
	assert_int_equal(store_write(obj_key_rep(OID2), b, 4096, 0, true), 0);
	assert_int_equal(store_remove(obj_key_rep(OID2)), 0);
	assert_int_equal(store_create(obj_key_rep(OID2), OBJ, c, OBJ, 0, true),
			 0);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID2), got, OBJ, 0), 0);
	assert_memory_equal(got, c, OBJ);
	/* and a replacement by a create: its old records are forgotten */
	assert_int_equal(store_write(obj_key_rep(OID2), b, 4096, 0, true), 0);
	assert_int_equal(store_create(obj_key_rep(OID2), OBJ, a, OBJ, 0, true),
			 0);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID2), got, OBJ, 0), 0);
	assert_memory_equal(got, a, OBJ);
	assert_int_equal(store_remove(obj_key_rep(OID2)), 0);
}

/* the last record's data damaged: that write is not applied */
static void test_damaged_tail_ignored(void **state)
{
	char p[4400];
	struct stat st;
	int fd;

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	assert_int_equal(store_write(obj_key_rep(OID), b, 4096, 0, true), 0);
	assert_int_equal(store_write(obj_key_rep(OID), c, 4096, 4096, true), 0);
	lose(OID, a, 8192, 0);
	/* half 0's records start at 64 + 64; the last ends 2 * (40 + 4096) on */
	snprintf(p, sizeof(p), "%s/journal", base);
	assert_int_equal(stat(p, &st), 0);
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "X", 1, 128 + 40 + 4096 + 40 + 100), 1);
	close(fd);
	restart();
	/* block 0 replayed; block 1 keeps what the disk had */
	assert_int_equal(store_read(obj_key_rep(OID), got, 8192, 0), 0);
	assert_memory_equal(got, b, 4096);
	assert_memory_equal(got + 4096, a, 4096);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/* the file's checksum trailer (after OBJ bytes of data) saved/restored */
static void *trailer(uint64_t oid, void *restore)
{
	size_t len = (OBJ / 4096) * 8 + 16;
	char p[4400];
	void *t = restore ? restore : malloc(len);
	int fd;

	store_obj_path(p, sizeof(p), obj_key_rep(oid));
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	if (restore)
		assert_int_equal(pwrite(fd, t, len, OBJ), (ssize_t)len);
	else
		assert_int_equal(pread(fd, t, len, OBJ), (ssize_t)len);
	close(fd);
	return t;
}

/*
 * A power loss wrote a partial write's data but not its checksums: the
 * block fails both CRCs.  The replay rewrites it (a torn block, not rot)
 * and the node starts; the block reads back as written.
 */
static void test_torn_partial_block(void **state)
{
	void *t;

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	assert_int_equal(store_write(obj_key_rep(OID), b, 512, 4096, true), 0);
	t = trailer(OID, NULL);
	assert_int_equal(store_write(obj_key_rep(OID), c, 512, 4096 + 100,
				     true), 0);
	trailer(OID, t);		/* the CRCs of the second write lost */
	free(t);
	assert_int_not_equal(store_read(obj_key_rep(OID), got, 4096, 4096), 0);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0), 0);
	assert_memory_equal(got, a, 4096);
	assert_memory_equal(got + 4096, b, 100);
	assert_memory_equal(got + 4096 + 100, c, 512);
	assert_memory_equal(got + 4096 + 612, a, OBJ - 4096 - 612);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/* the checkpoint thread has retired a half since @cp (it runs apart) */
static void wait_checkpoint(uint64_t cp)
{
	for (int i = 0; i < 500 && journal_checkpoints() <= cp; i++)
		usleep(10000);
	assert_true(journal_checkpoints() > cp);
}

static void test_checkpoint_and_generations(void **state)
{
	uint64_t cp = journal_checkpoints();

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	/* 300 records of 4 KiB do not fit a 1 MiB journal */
	for (int i = 0; i < 300; i++)
		assert_int_equal(store_write(obj_key_rep(OID), i % 2 ? b : c,
					     4096,
					     (uint32_t)(i % 256) * 4096, true),
				 0);
	wait_checkpoint(cp);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0), 0);
	for (int blk = 0; blk < 256; blk++) {
		int last = blk + 256 < 300 ? blk + 256 : blk;

		assert_memory_equal(got + blk * 4096, last % 2 ? b : c, 4096);
	}
	/*
	 * After a start-up nothing of the old generation is replayed: block
	 * 0 put back to what it held before (c, which its previous checksum
	 * accepts) stays so, where a replay would write a again.
	 */
	assert_int_equal(store_write(obj_key_rep(OID), a, 4096, 0, true), 0);
	restart();
	lose(OID, c, 4096, 0);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0), 0);
	assert_memory_equal(got, c, 4096);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/* half @h's generation, from its header (0: retired) */
static uint64_t half_gen_on_disk(int h)
{
	char p[4400];
	uint8_t b[16];
	int fd;

	snprintf(p, sizeof(p), "%s/journal", base);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, b, 16, 64 + h * ((JSIZE - 64) / 2)), 16);
	close(fd);
	assert_memory_equal(b, "KJHALF02", 8);
	return (uint64_t)b[8] | (uint64_t)b[9] << 8 | (uint64_t)b[10] << 16 |
	       (uint64_t)b[11] << 24;
}

/*
 * Writes go on in the second half while the first is checkpointed; a
 * crash before that checkpoint retired it replays both halves, the older
 * first, and a FORGET in the newer half keeps the older half's records of
 * that object out of its new life.
 */
static void test_two_halves_replayed_in_order(void **state)
{
	uint64_t cp = journal_checkpoints(), g1;

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	assert_int_equal(store_create(obj_key_rep(OID2), OBJ, a, OBJ, 0, true),
			 0);
	assert_int_equal(store_write(obj_key_rep(OID2), b, 4096, 0, true), 0);
	/* the crash comes before the full half is retired */
	journal_hold_checkpoints(true);
	/* ~126 records fill a half of a 1 MiB journal: 150 switch over */
	for (int i = 0; i < 150; i++)
		assert_int_equal(store_write(obj_key_rep(OID), i % 2 ? b : c,
					     4096,
					     (uint32_t)i * 4096, true), 0);
	/* OID2 removed and made again with the second half live */
	assert_int_equal(store_remove(obj_key_rep(OID2)), 0);
	assert_int_equal(store_create(obj_key_rep(OID2), OBJ, c, OBJ, 0, true),
			 0);
	g1 = half_gen_on_disk(1);
	assert_true(g1 > 1);
	assert_int_equal(half_gen_on_disk(0), g1 - 1);
	assert_int_equal(journal_checkpoints(), cp);
	/* the last writes of each half lost */
	lose(OID, a, 4096, 0);
	lose(OID, a, 4096, 149 * 4096);
	restart();
	journal_hold_checkpoints(false);
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0), 0);
	for (int i = 0; i < 150; i++)
		assert_memory_equal(got + i * 4096, i % 2 ? b : c, 4096);
	assert_memory_equal(got + 150 * 4096, a, OBJ - 150 * 4096);
	assert_int_equal(store_read(obj_key_rep(OID2), got, OBJ, 0), 0);
	assert_memory_equal(got, c, OBJ);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
	assert_int_equal(store_remove(obj_key_rep(OID2)), 0);
}

/* a checkpoint retires the full half: it is not replayed again */
static void test_retired_half_not_replayed(void **state)
{
	uint64_t cp = journal_checkpoints();

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	for (int i = 0; i < 150; i++)
		assert_int_equal(store_write(obj_key_rep(OID), b, 4096,
					     (uint32_t)i * 4096, true), 0);
	wait_checkpoint(cp);
	assert_int_equal(half_gen_on_disk(0), 0);
	/* block 0 back to c behind the store (its CRC kept): stays c */
	lose(OID, c, 4096, 0);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, 4096, 4096), 0);
	assert_memory_equal(got, b, 4096);
	assert_int_not_equal(store_read(obj_key_rep(OID), got, 4096, 0), 0);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/* a resize of the file cut short left zeros: nothing to replay, it starts */
static void test_zeroed_file_starts(void **state)
{
	char p[4400];
	uint8_t zero[64] = { 0 };
	int fd;

	store_journal_close();
	snprintf(p, sizeof(p), "%s/journal", base);
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, zero, sizeof(zero), 0), 64);
	close(fd);
	assert_int_equal(store_journal_init(base, JSIZE), 0);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	assert_int_equal(store_write(obj_key_rep(OID), b, 4096, 0, true), 0);
	lose(OID, a, 4096, 0);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, 4096, 0), 0);
	assert_memory_equal(got, b, 4096);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/*
 * The checkpoint cannot sync the objects: writes go on in the other half
 * until it is full, then fail with EIO (never acknowledged); once the
 * disk works again the retried checkpoint lets them through, and after a
 * restart every acknowledged write is there.
 */
static void test_checkpoint_retried(void **state)
{
	uint64_t cp = journal_checkpoints();
	int i, failed = 0, last_ok = -1;

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	objects_fail = true;
	for (i = 0; i < 400 && !failed; i++) {
		int r = store_write(obj_key_rep(OID), i % 2 ? b : c, 4096,
				    (uint32_t)(i % 256) * 4096, true);

		if (r == SD_RES_EIO)
			failed = 1;
		else
			assert_int_equal(r, 0);
		if (!r)
			last_ok = i;
	}
	assert_int_equal(failed, 1);		/* a full journal, stuck */
	assert_int_equal(journal_checkpoints(), cp);
	objects_fail = false;
	/* the checkpoint retries within a second or so */
	for (int t = 0; t < 50 && journal_checkpoints() == cp; t++)
		usleep(100 * 1000);
	assert_true(journal_checkpoints() > cp);
	assert_int_equal(store_write(obj_key_rep(OID), a, 4096, 0, true), 0);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0), 0);
	assert_memory_equal(got, a, 4096);
	for (int blk = 1; blk < 256 && blk <= last_ok; blk++) {
		int last = blk;

		/* the refused write may or may not be in its block */
		if (blk == (last_ok + 1) % 256)
			continue;

		while (last + 256 <= last_ok)
			last += 256;
		assert_memory_equal(got + blk * 4096, last % 2 ? b : c, 4096);
	}
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/*
 * A strip's records carry its index: a strip's write comes back into the
 * strip, not into the replica of the same oid beside it, and a FORGET of
 * one strip leaves the records of the others alone.
 */
static void test_strip_replayed(void **state)
{
	const struct obj_key s0 = { OID, 0 }, s2 = { OID, 2 };
	const struct obj_key rep = obj_key_rep(OID);

	assert_int_equal(store_create(rep, OBJ, a, OBJ, 0, true), 0);
	assert_int_equal(store_create(s0, OBJ / 2, a, OBJ / 2, 0, true), 0);
	assert_int_equal(store_create(s2, OBJ / 2, a, OBJ / 2, 0, true), 0);
	assert_int_equal(store_write(s2, b, 4096, 8192, true), 0);
	assert_int_equal(store_write(rep, c, 4096, 8192, true), 0);
	assert_int_equal(store_write(s0, c, 4096, 0, true), 0);
	/* its records forgotten, not those of the others */
	assert_int_equal(store_remove(s0), 0);
	lose_key(s2, a, 4096, 8192);
	lose_key(rep, a, 4096, 8192);
	restart();
	assert_int_equal(store_read(s2, got, OBJ / 2, 0), 0);
	assert_memory_equal(got, a, 8192);
	assert_memory_equal(got + 8192, b, 4096);
	assert_memory_equal(got + 12288, a, OBJ / 2 - 12288);
	assert_int_equal(store_read(rep, got, OBJ, 0), 0);
	assert_memory_equal(got, a, 8192);
	assert_memory_equal(got + 8192, c, 4096);
	assert_memory_equal(got + 12288, a, OBJ - 12288);
	assert_int_equal(store_exist(s0), SD_RES_NO_OBJ);
	assert_int_equal(store_remove(s2), 0);
	assert_int_equal(store_remove(rep), 0);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/*
 * A journal of version 2 left by the sheep before (records "KJR1", no
 * index) with one write of @data at @off into the replicated object @oid;
 * half 0 live under generation 7, half 1 retired
 */
static void write_v2_journal(uint64_t oid, const uint8_t *data, uint32_t len,
			     uint32_t off)
{
	uint8_t *j = calloc(1, JSIZE), *h = j + 64 + 64;
	char p[4400];
	int fd;

	assert_non_null(j);
	memcpy(j, "KELPIEJ2", 8);
	put32(j + 8, 2);
	put64(j + 24, JSIZE);
	memcpy(j + 64, "KJHALF02", 8);
	put64(j + 72, 7);
	put32(h, 0x31524a4b);
	put64(h + 8, 7);
	h[16] = 1;
	put32(h + 20, len);
	put64(h + 24, oid);
	put32(h + 32, off);
	memcpy(h + 40, data, len);
	put32(h + 4, crc32_iscsi(h + 40, (int)len,
				 crc32_iscsi(h, 40, 0xffffffffU)));
	snprintf(p, sizeof(p), "%s/journal", base);
	fd = open(p, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, j, JSIZE, 0), (ssize_t)JSIZE);
	close(fd);
	free(j);
}

/* a journal of the version before (no strip index) is still replayed */
static void test_version2_replayed(void **state)
{
	char p[4400], magic[8];
	int fd;

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	store_journal_close();
	/* the old sheep acknowledged b at 8192; the crash lost it */
	write_v2_journal(OID, b, 4096, 8192);
	assert_int_equal(store_journal_init(base, JSIZE), 0);
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0), 0);
	assert_memory_equal(got, a, 8192);
	assert_memory_equal(got + 8192, b, 4096);
	assert_memory_equal(got + 12288, a, OBJ - 12288);
	/* and the journal goes on in the new version */
	snprintf(p, sizeof(p), "%s/journal", base);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, magic, 8, 0), 8);
	close(fd);
	assert_memory_equal(magic, "KELPIEJ3", 8);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/*
 * A durable write that finds a sync of the journal under way does not
 * wait for the next one on its thread (STORE_PENDING): the sync thread
 * reports it once a later sync has finished, and not before; its record
 * is replayed after a crash like any other.  A write with nothing under
 * way syncs at once on its own thread.  A failed sync reports EIO.
 */
struct waiter {
	struct store_wait w;
	volatile int result;		/* -1: not yet */
};

static void waiter_done(struct store_wait *w, int result)
{
	((struct waiter *)w)->result = result;
}

static void *first_writer(void *arg)
{
	struct waiter *f = arg;

	f->result = store_write_durable(obj_key_rep(OID), b, 4096, 0, &f->w);
	return NULL;
}

static bool wait_result(struct waiter *x)
{
	for (int i = 0; i < 5000 && x->result < 0; i++)
		usleep(1000);
	return x->result >= 0;
}

static void test_async_durable_writes(void **state)
{
	struct waiter f = { .w.done = waiter_done, .result = -1 };
	struct waiter x = { .w.done = waiter_done, .result = -1 };
	struct waiter y = { .w.done = waiter_done, .result = -1 };
	pthread_t t;

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	/* nothing under way: synced at once, on this thread */
	assert_int_equal(store_write_durable(obj_key_rep(OID), c, 4096,
					     4096, &x.w), SD_RES_SUCCESS);
	assert_int_equal(x.result, -1);
	/* a first writer inside the sync of the journal */
	journal_held = true;
	assert_int_equal(pthread_create(&t, NULL, first_writer, &f), 0);
	for (int i = 0; i < 5000 && !journal_in_sync; i++)
		usleep(1000);
	assert_true(journal_in_sync);
	/* the second does not wait for it */
	assert_int_equal(store_write_durable(obj_key_rep(OID), c, 4096, 8192,
					     &x.w), STORE_PENDING);
	usleep(50000);
	assert_int_equal(x.result, -1);		/* not durable yet */
	journal_held = false;
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(f.result, SD_RES_SUCCESS);
	assert_true(wait_result(&x));
	assert_int_equal(x.result, SD_RES_SUCCESS);
	/* a crash loses both from the object file: the replay has them */
	lose(OID, a, 4096, 0);
	lose(OID, a, 4096, 8192);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, 3 * 4096, 0), 0);
	assert_memory_equal(got, b, 4096);
	assert_memory_equal(got + 4096, c, 4096);
	assert_memory_equal(got + 8192, c, 4096);
	/* a sync that fails: the waiting write hears EIO */
	f.result = -1;
	journal_held = true;
	assert_int_equal(pthread_create(&t, NULL, first_writer, &f), 0);
	for (int i = 0; i < 5000 && !journal_in_sync; i++)
		usleep(1000);
	assert_int_equal(store_write_durable(obj_key_rep(OID), a, 4096, 8192,
					     &y.w), STORE_PENDING);
	journal_fail = true;
	journal_held = false;
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(f.result, SD_RES_EIO);
	assert_true(wait_result(&y));
	assert_int_equal(y.result, SD_RES_EIO);
	journal_fail = false;
	restart();
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/*
 * Writes wait for the sync thread while the journal's sync is held; a
 * forget of their object (it is synced, then its records are ignored by
 * a replay) and a checkpoint (their half is full) run meanwhile.  Every
 * waiting write is reported once, successful, and its data is there
 * after a restart.
 */
#define NR_WAIT	200		/* records of two halves, not of three */

static struct waiter ws[NR_WAIT];

static void *forget_writer(void *arg)
{
	*(int *)arg = journal_forget(obj_key_rep(OID));
	return NULL;
}

static void test_waiters_across_forget_and_checkpoint(void **state)
{
	struct waiter f = { .w.done = waiter_done, .result = -1 };
	uint64_t cps = journal_checkpoints();
	int forgot = -1;
	pthread_t t, tf;

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	journal_held = true;
	assert_int_equal(pthread_create(&t, NULL, first_writer, &f), 0);
	for (int i = 0; i < 5000 && !journal_in_sync; i++)
		usleep(1000);
	assert_true(journal_in_sync);
	for (int i = 0; i < NR_WAIT; i++) {
		ws[i] = (struct waiter){ .w.done = waiter_done, .result = -1 };
		assert_int_equal(store_write_durable(obj_key_rep(OID),
						     i % 2 ? b : c, 4096,
						     (uint32_t)i * 4096,
						     &ws[i].w), STORE_PENDING);
	}
	/* the first half filled: its checkpoint waits for the held sync */
	assert_int_equal(pthread_create(&tf, NULL, forget_writer, &forgot), 0);
	usleep(50000);
	for (int i = 0; i < NR_WAIT; i++)
		assert_int_equal(ws[i].result, -1);
	assert_int_equal(forgot, -1);
	journal_held = false;
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pthread_join(tf, NULL), 0);
	assert_int_equal(f.result, SD_RES_SUCCESS);
	assert_int_equal(forgot, SD_RES_SUCCESS);
	for (int i = 0; i < NR_WAIT; i++) {
		assert_true(wait_result(&ws[i]));
		assert_int_equal(ws[i].result, SD_RES_SUCCESS);
	}
	for (int i = 0; i < 5000 && journal_checkpoints() == cps; i++)
		usleep(1000);
	assert_true(journal_checkpoints() > cps);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, NR_WAIT * 4096, 0),
			 0);
	for (int i = 0; i < NR_WAIT; i++)
		assert_memory_equal(got + i * 4096, i % 2 ? b : c, 4096);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

/*
 * A durable write with nothing under way and everything before it
 * durable is one pwritev2(RWF_DSYNC) of its record, no fdatasync of the
 * journal; a replay restores it.  One that fails hears EIO, its slot
 * still holds the record: the next write (now with a sync of its own,
 * since not all before it is known durable) is replayed after a crash.
 */
/* a synced write, then a cached one of the same bytes: the cached stays */
static void test_cached_write_after_synced(void **state)
{
	struct obj_key k = obj_key_rep(OID);

	assert_int_equal(store_create(k, OBJ, a, OBJ, 0, true), 0);
	assert_int_equal(store_write(k, b, 4096, 0, true), 0);
	assert_int_equal(store_write(k, c, 4096, 0, false), 0);
	assert_int_equal(store_flush(), 0);
	restart();
	assert_int_equal(store_read(k, got, OBJ, 0), 0);
	assert_memory_equal(got, c, 4096);
	assert_memory_equal(got + 4096, a, OBJ - 4096);
	assert_int_equal(store_remove(k), 0);
}

/* a flush syncs the journal, no object; a lost cached write comes back */
static void test_flush_is_a_journal_sync(void **state)
{
	struct obj_key k = obj_key_rep(OID2);
	int syncs;

	assert_int_equal(store_create(k, OBJ, a, OBJ, 0, true), 0);
	assert_int_equal(store_write(k, b, 4096, 4096, false), 0);
	assert_int_equal(store_write(k, c, 100, 70000, false), 0);
	syncs = nr_journal_syncs;
	objects_fail = true;	/* a sync of an object would fail the flush */
	assert_int_equal(store_flush(), 0);
	objects_fail = false;
	assert_int_equal(nr_journal_syncs, syncs + 1);
	/* nothing appended since: the next flush syncs nothing */
	assert_int_equal(store_flush(), 0);
	assert_int_equal(nr_journal_syncs, syncs + 1);
	lose(OID2, a, 4096, 4096);
	lose(OID2, a, 100, 70000);
	restart();
	assert_int_equal(store_read(k, got, OBJ, 0), 0);
	assert_memory_equal(got, a, 4096);
	assert_memory_equal(got + 4096, b, 4096);
	assert_memory_equal(got + 8192, a, 70000 - 8192);
	assert_memory_equal(got + 70000, c, 100);
	assert_memory_equal(got + 70100, a, OBJ - 70100);
	assert_int_equal(store_remove(k), 0);
}

/* a flush whose journal sync fails says so; the next one syncs again */
static void test_flush_sync_fails(void **state)
{
	struct obj_key k = obj_key_rep(OID2);
	int syncs;

	assert_int_equal(store_create(k, OBJ, a, OBJ, 0, true), 0);
	assert_int_equal(store_write(k, b, 4096, 0, false), 0);
	journal_fail = true;
	assert_int_not_equal(store_flush(), 0);
	journal_fail = false;
	/* the failed sync made nothing durable: not "nothing to sync" */
	syncs = nr_journal_syncs;
	assert_int_equal(store_flush(), 0);
	assert_int_equal(nr_journal_syncs, syncs + 1);
	lose(OID2, a, 4096, 0);
	restart();
	assert_int_equal(store_read(k, got, OBJ, 0), 0);
	assert_memory_equal(got, b, 4096);
	assert_int_equal(store_remove(k), 0);
}

/* a cached write larger than a half: its object synced, older records out */
static void test_large_cached_write(void **state)
{
	struct obj_key k = obj_key_rep(OID);

	assert_int_equal(store_create(k, OBJ, a, OBJ, 0, true), 0);
	assert_int_equal(store_write(k, b, 4096, 0, true), 0);
	assert_int_equal(store_write(k, c, OBJ, 0, false), 0);
	assert_int_equal(store_flush(), 0);
	restart();
	assert_int_equal(store_read(k, got, OBJ, 0), 0);
	assert_memory_equal(got, c, OBJ);
	assert_int_equal(store_remove(k), 0);
}

static void test_depth1_write_is_one_dsync(void **state)
{
	int syncs, dsyncs;

	restart();
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	syncs = nr_journal_syncs;
	dsyncs = nr_dsync_writes;
	assert_int_equal(store_write(obj_key_rep(OID), b, 4096, 0, true), 0);
	assert_int_equal(nr_dsync_writes - dsyncs, 1);
	assert_int_equal(nr_journal_syncs - syncs, 1);
	lose(OID, a, 4096, 0);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, 4096, 0), 0);
	assert_memory_equal(got, b, 4096);

	journal_fail = true;
	assert_int_equal(store_write(obj_key_rep(OID), c, 4096, 4096, true),
			 SD_RES_EIO);
	journal_fail = false;
	dsyncs = nr_dsync_writes;
	assert_int_equal(store_write(obj_key_rep(OID), b, 4096, 8192, true), 0);
	assert_int_equal(nr_dsync_writes, dsyncs);	/* a sync of its own */
	lose(OID, a, 4096, 8192);
	restart();
	assert_int_equal(store_read(obj_key_rep(OID), got, 4096, 8192), 0);
	assert_memory_equal(got, b, 4096);
	/* and with everything durable again, the next is one dsync */
	dsyncs = nr_dsync_writes;
	assert_int_equal(store_write(obj_key_rep(OID), c, 4096, 0, true), 0);
	assert_int_equal(nr_dsync_writes - dsyncs, 1);
	assert_int_equal(store_remove(obj_key_rep(OID)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_restores),
		cmocka_unit_test(test_removed_object_not_revived),
		cmocka_unit_test(test_damaged_tail_ignored),
		cmocka_unit_test(test_torn_partial_block),
		cmocka_unit_test(test_checkpoint_and_generations),
		cmocka_unit_test(test_two_halves_replayed_in_order),
		cmocka_unit_test(test_retired_half_not_replayed),
		cmocka_unit_test(test_zeroed_file_starts),
		cmocka_unit_test(test_checkpoint_retried),
		cmocka_unit_test(test_strip_replayed),
		cmocka_unit_test(test_version2_replayed),
		cmocka_unit_test(test_async_durable_writes),
		cmocka_unit_test(test_waiters_across_forget_and_checkpoint),
		cmocka_unit_test(test_depth1_write_is_one_dsync),
		cmocka_unit_test(test_cached_write_after_synced),
		cmocka_unit_test(test_flush_is_a_journal_sync),
		cmocka_unit_test(test_flush_sync_fails),
		cmocka_unit_test(test_large_cached_write),
	};

	return cmocka_run_group_tests_name("journal", tests, setup, teardown);
}
