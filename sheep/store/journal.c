// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The write journal (sheep -j size=S[,dir=D]; cluster.md §11.6).
 *
 * A synchronous write goes to the object file without a sync (page cache,
 * data and its block checksums) and, as a record with its data, to the
 * journal; it is acknowledged once the journal is synced.  Concurrent
 * writers share one fdatasync of the journal (group commit): one appends
 * and syncs, the others that appended meanwhile wait for that sync or the
 * next.  A sync covers every record appended before it started, because
 * records are appended in order under the lock.
 *
 * The journal is one file, written once with zeros at its size: a 64-byte header {"KELPIEJ1", le32
 * version 1, le32 0, le64 generation, le64 size} and records from byte 64:
 * a 40-byte header {le32 magic "KJR1", le32 CRC32C of the record with
 * this field 0, le64 generation, u8 type (1 write, 2 forget), 3 zero
 * bytes, le32 length, le64 oid, le32 offset, le32 0} and the data.  When
 * the next record does not fit, a checkpoint syncs every object written
 * since the last one (store_flush) and starts a new generation at byte
 * 64: records of older generations are never replayed.
 *
 * At start-up the records of the current generation are applied again in
 * order, up to the first that fails its checks (an append cut short by a
 * crash was never acknowledged), then a checkpoint.  This also repairs a
 * block whose data reached the disk without its checksum or the reverse.
 *
 * An object that has records in the journal and is then removed, replaced
 * or moved to the stale area is first synced, then "forgotten" with a
 * record of its own, so that no replay writes its old records into a later
 * object of the same id.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <isa-l/crc.h>
#include "proto.h"
#include "util.h"
#include "store_int.h"

#define J_MAGIC		"KELPIEJ1"
#define J_VERSION	1
#define J_HDR		64
#define R_MAGIC		0x31524a4bU	/* "KJR1" */
#define R_HDR		40
#define R_WRITE		1
#define R_FORGET	2
#define J_MIN_SIZE	(1ULL << 20)
#define J_HASH		4096

struct jent {
	uint64_t oid;
	struct jent *next;
};

static pthread_mutex_t jlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jcond = PTHREAD_COND_INITIALIZER;
static int jfd = -1;
static uint64_t jsize, jpos, jgen;
/* group commit: syncs started and finished; the last one that failed */
static uint64_t sync_started, sync_done, sync_failed;
static bool syncing;
/* the objects with records in this generation */
static struct jent *journaled[J_HASH];
static uint64_t nr_checkpoints;
/* the store's functions, handed in by journal_open (plain.c) */
static const struct journal_store *jst;

bool journal_on(void)
{
	return jfd >= 0;
}

static uint32_t crc(const void *p, size_t n, uint32_t seed)
{
	return crc32_iscsi((unsigned char *)p, (int)n, seed);
}

static struct jent **slot(uint64_t oid)
{
	return &journaled[(oid ^ (oid >> 32)) % J_HASH];
}

static bool has_locked(uint64_t oid)
{
	for (struct jent *e = *slot(oid); e; e = e->next)
		if (e->oid == oid)
			return true;
	return false;
}

static void mark_locked(uint64_t oid)
{
	struct jent *e;

	if (has_locked(oid))
		return;
	e = xmalloc(sizeof(*e));
	e->oid = oid;
	e->next = *slot(oid);
	*slot(oid) = e;
}

static void clear_locked(void)
{
	for (size_t i = 0; i < J_HASH; i++)
		while (journaled[i]) {
			struct jent *e = journaled[i];

			journaled[i] = e->next;
			free(e);
		}
}

static void rec_header(uint8_t *h, uint8_t type, uint64_t oid, uint32_t len,
		       uint32_t off, const void *data)
{
	memset(h, 0, R_HDR);
	put_le32(h, R_MAGIC);
	put_le64(h + 8, jgen);
	h[16] = type;
	put_le32(h + 20, len);
	put_le64(h + 24, oid);
	put_le32(h + 32, off);
	put_le32(h + 4, crc(data, len, crc(h, R_HDR, 0xffffffffU)));
}

static int write_header_locked(void)
{
	uint8_t h[J_HDR] = { 0 };

	memcpy(h, J_MAGIC, 8);
	put_le32(h + 8, J_VERSION);
	put_le64(h + 16, jgen);
	put_le64(h + 24, jsize);
	if (pwrite(jfd, h, J_HDR, 0) != J_HDR || fdatasync(jfd))
		return SD_RES_EIO;
	jpos = J_HDR;
	return SD_RES_SUCCESS;
}

/* everything journaled is in its object files and synced: start anew */
static int checkpoint_locked(void)
{
	int ret = jst->flush();

	if (ret != SD_RES_SUCCESS) {
		sd_err("journal checkpoint: cannot sync the objects");
		return ret;
	}
	jgen++;
	ret = write_header_locked();
	if (ret != SD_RES_SUCCESS) {
		sd_err("journal checkpoint: cannot write the header: %m");
		return ret;
	}
	clear_locked();
	nr_checkpoints++;
	sd_info("journal checkpoint %" PRIu64, nr_checkpoints);
	return SD_RES_SUCCESS;
}

static int append_locked(uint8_t type, uint64_t oid, const void *data,
			 uint32_t len, uint32_t off)
{
	uint8_t h[R_HDR];
	struct iovec iov[2] = {
		{ h, R_HDR }, { (void *)data, len },
	};
	int ret;

	if (jpos + R_HDR + len > jsize) {
		ret = checkpoint_locked();
		if (ret != SD_RES_SUCCESS)
			return ret;
	}
	rec_header(h, type, oid, len, off, data);
	if (pwritev(jfd, iov, 2, (off_t)jpos) != (ssize_t)(R_HDR + len))
		return SD_RES_EIO;
	jpos += R_HDR + len;
	mark_locked(oid);
	return SD_RES_SUCCESS;
}

/* return once a sync that started after our append has finished */
static int commit_locked(void)
{
	uint64_t want = sync_started + 1;

	while (sync_done < want) {
		uint64_t mine;
		int r;

		if (syncing) {
			pthread_cond_wait(&jcond, &jlock);
			continue;
		}
		syncing = true;
		mine = ++sync_started;
		pthread_mutex_unlock(&jlock);
		r = fdatasync(jfd);
		pthread_mutex_lock(&jlock);
		syncing = false;
		sync_done = mine;
		if (r)
			sync_failed = mine;
		pthread_cond_broadcast(&jcond);
	}
	return sync_failed >= want ? SD_RES_EIO : SD_RES_SUCCESS;
}

int journal_write(uint64_t oid, const void *buf, uint32_t len, uint32_t off)
{
	int ret;

	/*
	 * A record larger than the journal: the object is synced instead,
	 * and its older records forgotten, so that no replay writes them
	 * over this newer data.
	 */
	if ((uint64_t)R_HDR + len > jsize - J_HDR) {
		ret = journal_forget(oid);
		return ret == SD_RES_SUCCESS ? jst->sync_obj(oid) : ret;
	}
	pthread_mutex_lock(&jlock);
	ret = append_locked(R_WRITE, oid, buf, len, off);
	if (ret == SD_RES_SUCCESS)
		ret = commit_locked();
	pthread_mutex_unlock(&jlock);
	return ret;
}

int journal_forget(uint64_t oid)
{
	int ret = SD_RES_SUCCESS;

	if (!journal_on())
		return SD_RES_SUCCESS;
	pthread_mutex_lock(&jlock);
	if (has_locked(oid)) {
		/* its data must not rely on records that will be ignored */
		ret = jst->sync_obj(oid);
		if (ret == SD_RES_SUCCESS || ret == SD_RES_NO_OBJ)
			ret = append_locked(R_FORGET, oid, NULL, 0, 0);
		if (ret == SD_RES_SUCCESS)
			ret = commit_locked();
	}
	pthread_mutex_unlock(&jlock);
	return ret;
}

void journal_wiped(void)
{
	if (!journal_on())
		return;
	pthread_mutex_lock(&jlock);
	jgen++;
	if (write_header_locked() != SD_RES_SUCCESS)
		sd_err("journal: cannot start a new generation: %m");
	clear_locked();
	pthread_mutex_unlock(&jlock);
}

/* ---- replay ---- */

struct rec {
	uint8_t type;
	uint64_t oid;
	uint32_t len, off;
	uint64_t pos;		/* of its data in the file */
};

/*
 * The record at @pos of generation @gen, its data read into *@buf (grown
 * as needed); false at the end of the generation or on a record that
 * fails its checks
 */
static bool read_rec(int fd, uint64_t pos, uint64_t end, uint64_t gen,
		     struct rec *r, uint8_t **buf, uint32_t *cap)
{
	uint8_t h[R_HDR];
	uint32_t want;

	if (end - pos < R_HDR ||
	    pread(fd, h, R_HDR, (off_t)pos) != R_HDR ||
	    get_le32(h) != R_MAGIC || get_le64(h + 8) != gen)
		return false;
	r->type = h[16];
	r->len = get_le32(h + 20);
	r->oid = get_le64(h + 24);
	r->off = get_le32(h + 32);
	r->pos = pos + R_HDR;
	if ((r->type != R_WRITE && r->type != R_FORGET) ||
	    r->len > end - pos - R_HDR)
		return false;
	if (r->len > *cap) {
		*buf = xrealloc(*buf, r->len);
		*cap = r->len;
	}
	if (r->len && pread(fd, *buf, r->len, (off_t)r->pos) != r->len)
		return false;
	want = get_le32(h + 4);
	put_le32(h + 4, 0);
	return want == crc(*buf, r->len, crc(h, R_HDR, 0xffffffffU));
}

struct forget {
	uint64_t oid;
	size_t idx;		/* of a FORGET record */
};

static int cmp_forget(const void *a, const void *b)
{
	const struct forget *x = a, *y = b;

	if (x->oid != y->oid)
		return x->oid < y->oid ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* true if a FORGET of @oid follows record @i */
static bool forgotten(const struct forget *f, size_t nf, uint64_t oid,
		      size_t i)
{
	size_t lo = 0, hi = nf;

	/* the last entry of @oid holds its last FORGET */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (f[mid].oid <= oid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && f[lo - 1].oid == oid && f[lo - 1].idx > i;
}

static int apply(int fd, const struct rec *recs, size_t n, size_t *applied)
{
	struct forget *f = xmalloc((n ? n : 1) * sizeof(*f));
	uint8_t *buf = NULL;
	uint32_t cap = 0;
	size_t nf = 0;
	int ret = SD_RES_SUCCESS;

	for (size_t i = 0; i < n; i++)
		if (recs[i].type == R_FORGET)
			f[nf++] = (struct forget) { recs[i].oid, i };
	qsort(f, nf, sizeof(*f), cmp_forget);
	*applied = 0;
	for (size_t i = 0; i < n && ret == SD_RES_SUCCESS; i++) {
		const struct rec *r = &recs[i];

		if (r->type != R_WRITE || forgotten(f, nf, r->oid, i))
			continue;
		if (r->len > cap) {
			buf = xrealloc(buf, r->len);
			cap = r->len;
		}
		if (pread(fd, buf, r->len, (off_t)r->pos) != r->len) {
			ret = SD_RES_EIO;
			break;
		}
		ret = jst->write(r->oid, buf, r->len, r->off);
		if (ret == SD_RES_NO_OBJ) {
			ret = SD_RES_SUCCESS;	/* removed since */
			continue;
		}
		if (ret != SD_RES_SUCCESS)
			sd_err("journal replay: object %" PRIx64 ": %s",
			       r->oid, sd_strerror(ret));
		else
			(*applied)++;
	}
	free(buf);
	free(f);
	return ret;
}

/* the records of the file's current generation, applied in order */
static int replay_file(int fd)
{
	uint8_t h[J_HDR], *buf = NULL;
	struct rec *recs = NULL, r;
	size_t n = 0, cap = 0, applied;
	uint32_t bcap = 0;
	uint64_t gen, pos = J_HDR, end;
	struct stat st;
	int ret;

	if (fstat(fd, &st))
		return -1;
	if (!st.st_size)
		return 0;		/* new */
	end = (uint64_t)st.st_size;
	if (pread(fd, h, J_HDR, 0) != J_HDR || memcmp(h, J_MAGIC, 8) ||
	    get_le32(h + 8) != J_VERSION) {
		sd_err("the journal is not one of this version: not replayed");
		return -1;
	}
	gen = get_le64(h + 16);
	/* one record's data in memory at a time */
	while (read_rec(fd, pos, end, gen, &r, &buf, &bcap)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			recs = xrealloc(recs, cap * sizeof(*recs));
		}
		recs[n++] = r;
		pos = r.pos + r.len;
	}
	free(buf);
	ret = apply(fd, recs, n, &applied);
	free(recs);
	if (ret == SD_RES_SUCCESS)
		ret = jst->flush();
	if (ret != SD_RES_SUCCESS)
		return -1;
	jgen = gen;
	sd_notice("journal: %zu of %zu records replayed", applied, n);
	return 0;
}

/*
 * The file at @size with every byte written once (zeros): a sync after
 * an append then carries the data only, where preallocated (unwritten)
 * extents would make every sync commit a metadata change too.
 */
static int size_file(int fd, uint64_t size)
{
	static const uint8_t zero[1 << 16];
	struct stat sb;

	if (fstat(fd, &sb))
		return errno;
	if ((uint64_t)sb.st_size == size && sb.st_blocks * 512ULL >= size)
		return 0;
	if (ftruncate(fd, 0))
		return errno;
	for (uint64_t off = 0; off < size; off += sizeof(zero)) {
		size_t n = (size_t)(size - off < sizeof(zero) ?
				    size - off : sizeof(zero));

		if (pwrite(fd, zero, n, (off_t)off) != (ssize_t)n)
			return errno ? errno : EIO;
	}
	return fdatasync(fd) ? errno : 0;
}

int journal_open(const char *dir, uint64_t size,
		 const struct journal_store *store)
{
	char path[4200];
	int fd, err;

	jst = store;
	if (size < J_MIN_SIZE) {
		sd_err("the journal must be at least 1 MiB");
		return -1;
	}
	if (mkdir_p(dir)) {
		sd_err("cannot create %s: %m", dir);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/journal", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		sd_err("cannot open %s: %m", path);
		return -1;
	}
	if (replay_file(fd)) {
		sd_err("cannot replay %s", path);
		goto fail;
	}
	err = size_file(fd, size);
	if (err) {
		sd_err("cannot size %s to %" PRIu64 " bytes: %s", path, size,
		       strerror(err));
		goto fail;
	}
	jfd = fd;
	jsize = size;
	jgen++;
	if (write_header_locked() != SD_RES_SUCCESS) {
		sd_err("cannot write %s: %m", path);
		jfd = -1;
		goto fail;
	}
	sd_notice("journal %s: %" PRIu64 " bytes", path, size);
	return 0;
fail:
	close(fd);
	return -1;
}

void journal_close(void)
{
	pthread_mutex_lock(&jlock);
	if (jfd >= 0)
		close(jfd);
	jfd = -1;
	clear_locked();
	pthread_mutex_unlock(&jlock);
}

uint64_t journal_checkpoints(void)
{
	return nr_checkpoints;
}
