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
 * records are appended in order under the lock.  A writer that can wait
 * without its thread (journal_write_async, the peer writes of the I/O
 * pool) and finds a sync under way leaves its record to the sync
 * thread, which runs the next sync for every such record and reports
 * them: the pool's workers never sit in a sync while others queue.
 *
 * The journal is one file, written once with zeros at its size: a 64-byte
 * header {"KELPIEJ3", le32 version 3, le32 0, le64 0, le64 size} and two
 * halves of (size - 64) / 2 bytes.  A half opens with a 64-byte header
 * {"KJHALF02", le64 generation, 0: retired} and holds records: a 40-byte
 * header {le32 magic "KJR3", le32 CRC32C of the record with this field 0,
 * le64 generation, u8 type (1 write, 2 forget), u8 strip index (0xff: a
 * replicated object), 2 zero bytes, le32 length, le64 oid, le32 offset,
 * le32 0} and the data.  When the next
 * record does not fit its half, writing goes on in the other half under a
 * new generation, and a checkpoint thread syncs every object written so
 * far (store_flush) and then retires the full half.  Writers wait only if
 * they fill the new half before that checkpoint is done.
 *
 * At start-up the records of the live halves are applied again in the
 * order of their generations, each half up to the first record that fails
 * its checks (an append cut short by a crash was never acknowledged), then
 * everything is synced and both halves retired.  A version 2 journal
 * (records "KJR1" without the index: replicated objects) and a version 1
 * one (one generation of those from byte 64) are still replayed.  Their
 * records have a magic of their own so that none is ever read as a record
 * of version 3 (a crash between the new file header and the new halves).
 * The replay also repairs a block whose data reached the disk without its
 * checksum or the reverse.
 *
 * An object that has records in a live half and is then removed, replaced
 * or moved to the stale area is first synced, then "forgotten" with a
 * record of its own, so that no replay writes its old records into a later
 * object of the same id.  A half is retired on disk before its objects are
 * no longer tracked, so that a forget is never skipped for records that a
 * replay would still apply.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <time.h>
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

#define J_MAGIC_V1	"KELPIEJ1"
#define J_MAGIC_V2	"KELPIEJ2"
#define J_MAGIC		"KELPIEJ3"
#define J_VERSION	3
#define J_HDR		64
#define H_MAGIC		"KJHALF02"
#define H_HDR		64
#define R_MAGIC_V2	0x31524a4bU	/* "KJR1": versions 1 and 2 */
#define R_MAGIC		0x33524a4bU	/* "KJR3" */
#define R_HDR		40
#define R_WRITE		1
#define R_FORGET	2
#define J_MIN_SIZE	(1ULL << 20)
#define J_HASH		4096

struct jent {
	struct obj_key key;
	struct jent *next;
};

static pthread_mutex_t jlock = PTHREAD_MUTEX_INITIALIZER;
/* the sync thread: the writes waiting for a sync (store_wait), in order */
static pthread_cond_t js_cond = PTHREAD_COND_INITIALIZER;
static pthread_t js_thread;
static bool js_running, js_stop;
static LIST_HEAD(js_waiters);
static pthread_cond_t jcond = PTHREAD_COND_INITIALIZER;
static int jfd = -1;
static uint64_t jsize, hsize, jpos, jgen;
/* group commit: syncs started and finished; the last one that failed */
static uint64_t sync_started, sync_done, sync_failed;
static bool syncing;
/*
 * Writes to the file (records, half headers) so far, and how many of
 * them a finished sync covers: equal, nothing written is waiting for a
 * sync.  The half a record written with RWF_DSYNC goes to, or -1.
 */
static uint64_t nr_appended, nr_durable;
static int dsync_half = -1;
/* the half written now; per half: its generation, 0 when retired */
static int active;
static uint64_t half_gen[2];
/* the objects with records in each half */
static struct jent *journaled[2][J_HASH];
/* the checkpoint thread: a half to retire, the last failure */
static pthread_cond_t cp_cond = PTHREAD_COND_INITIALIZER;
static pthread_t cp_thread;
static bool cp_running, cp_stop, cp_busy[2], cp_error, cp_held;
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

static struct jent **slot(int h, struct obj_key k)
{
	return &journaled[h][obj_key_hash(k) % J_HASH];
}

static bool in_half_locked(int h, struct obj_key k)
{
	for (struct jent *e = *slot(h, k); e; e = e->next)
		if (obj_key_eq(e->key, k))
			return true;
	return false;
}

static bool has_locked(struct obj_key k)
{
	return in_half_locked(0, k) || in_half_locked(1, k);
}

static void mark_locked(struct obj_key k)
{
	struct jent *e;

	if (in_half_locked(active, k))
		return;
	e = xmalloc(sizeof(*e));
	e->key = k;
	e->next = *slot(active, k);
	*slot(active, k) = e;
}

static void clear_half_locked(int h)
{
	for (size_t i = 0; i < J_HASH; i++)
		while (journaled[h][i]) {
			struct jent *e = journaled[h][i];

			journaled[h][i] = e->next;
			free(e);
		}
}

static void clear_locked(void)
{
	clear_half_locked(0);
	clear_half_locked(1);
}

static uint64_t half_start(int h)
{
	return J_HDR + (uint64_t)h * hsize;
}

static void rec_header(uint8_t *h, uint8_t type, struct obj_key k,
		       uint32_t len, uint32_t off, const void *data)
{
	memset(h, 0, R_HDR);
	put_le32(h, R_MAGIC);
	put_le64(h + 8, jgen);
	h[16] = type;
	h[17] = k.idx;
	put_le32(h + 20, len);
	put_le64(h + 24, k.oid);
	put_le32(h + 32, off);
	put_le32(h + 4, crc(data, len, crc(h, R_HDR, 0xffffffffU)));
}

static int write_file_header(int fd, uint64_t size)
{
	uint8_t h[J_HDR] = { 0 };

	memcpy(h, J_MAGIC, 8);
	put_le32(h + 8, J_VERSION);
	put_le64(h + 24, size);
	return pwrite(fd, h, J_HDR, 0) == J_HDR ? 0 : -1;
}

/* half @h's header with generation @gen (0: retired); not synced */
static int write_half_header(int fd, int h, uint64_t gen)
{
	uint8_t b[H_HDR] = { 0 };

	memcpy(b, H_MAGIC, 8);
	put_le64(b + 8, gen);
	return pwrite(fd, b, H_HDR, (off_t)half_start(h)) == H_HDR ? 0 : -1;
}

/* the checkpoint thread: sync the objects, then retire the full half */
static void retire(int h)
{
	uint64_t gen;
	int ret;

	pthread_mutex_lock(&jlock);
	gen = half_gen[h];
	pthread_mutex_unlock(&jlock);
	ret = jst->flush();
	pthread_mutex_lock(&jlock);
	if (ret == SD_RES_SUCCESS && half_gen[h] == gen &&
	    write_half_header(jfd, h, 0))
		ret = SD_RES_EIO;
	pthread_mutex_unlock(&jlock);
	/* on disk before the half's objects are no longer tracked */
	if (ret == SD_RES_SUCCESS && fdatasync(jfd))
		ret = SD_RES_EIO;
	pthread_mutex_lock(&jlock);
	if (ret != SD_RES_SUCCESS) {
		if (!cp_error)
			sd_err("journal checkpoint: cannot sync the objects or "
			       "retire the half: writers wait, retrying");
		cp_error = true;
	} else {
		if (half_gen[h] == gen) {
			half_gen[h] = 0;
			clear_half_locked(h);
		}
		cp_busy[h] = false;
		cp_error = false;
		nr_checkpoints++;
		sd_info("journal checkpoint %" PRIu64, nr_checkpoints);
	}
	pthread_cond_broadcast(&cp_cond);
	pthread_mutex_unlock(&jlock);
}

static void *checkpointer(void *arg)
{
	pthread_mutex_lock(&jlock);
	while (!cp_stop) {
		int h = cp_busy[0] ? 0 : cp_busy[1] ? 1 : -1;

		if (h < 0 || cp_held) {
			pthread_cond_wait(&cp_cond, &jlock);
			continue;
		}
		pthread_mutex_unlock(&jlock);
		retire(h);
		pthread_mutex_lock(&jlock);
		if (cp_error && !cp_stop) {
			/* a failing disk: try again in a second */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec++;
			pthread_cond_timedwait(&cp_cond, &jlock, &ts);
		}
	}
	pthread_mutex_unlock(&jlock);
	return NULL;
}

void journal_hold_checkpoints(bool hold)
{
	pthread_mutex_lock(&jlock);
	cp_held = hold;
	pthread_cond_broadcast(&cp_cond);
	pthread_mutex_unlock(&jlock);
}

/*
 * The active half is full: go on in the other one (once its checkpoint is
 * done) under a new generation, and have the full one checkpointed.
 */
static int switch_half_locked(void)
{
	int other = !active;

	while (cp_busy[other] && !cp_error)
		pthread_cond_wait(&cp_cond, &jlock);
	if (cp_busy[other])
		return SD_RES_EIO;
	/* a late record must not land in the half begun anew */
	while (dsync_half == other)
		pthread_cond_wait(&jcond, &jlock);
	/* generations only grow: a replay orders the halves by them */
	sd_assert(jgen >= half_gen[0] && jgen >= half_gen[1]);
	if (write_half_header(jfd, other, jgen + 1))
		return SD_RES_EIO;
	nr_appended++;
	jgen++;
	half_gen[other] = jgen;
	cp_busy[active] = true;
	pthread_cond_broadcast(&cp_cond);
	active = other;
	jpos = half_start(active) + H_HDR;
	return SD_RES_SUCCESS;
}

static int append_locked(uint8_t type, struct obj_key k, const void *data,
			 uint32_t len, uint32_t off)
{
	uint8_t h[R_HDR];
	struct iovec iov[2] = {
		{ h, R_HDR }, { (void *)data, len },
	};
	int ret;

	if (jpos + R_HDR + len > half_start(active) + hsize) {
		ret = switch_half_locked();
		if (ret != SD_RES_SUCCESS)
			return ret;
	}
	/* a record never crosses into the other half (callers bound len) */
	sd_assert(jpos + R_HDR + len <= half_start(active) + hsize);
	rec_header(h, type, k, len, off, data);
	if (pwritev(jfd, iov, 2, (off_t)jpos) != (ssize_t)(R_HDR + len))
		return SD_RES_EIO;
	jpos += R_HDR + len;
	nr_appended++;
	mark_locked(k);
	return SD_RES_SUCCESS;
}

/*
 * Depth 1: no sync under way and everything written before is durable,
 * so the record goes out with RWF_DSYNC, one system call that writes and
 * syncs it (a replay that reaches it has all before it).  It counts as
 * sync number N like an fdatasync: a record appended meanwhile waits for
 * N + 1.  False if the record does not fit in the active half (the
 * caller appends it, switching halves).
 */
static bool dsync_record_locked(struct obj_key k, const void *data,
				uint32_t len, uint32_t off, int *ret)
{
	uint8_t h[R_HDR];
	struct iovec iov[2] = {
		{ h, R_HDR }, { (void *)data, len },
	};
	uint64_t pos = jpos, mine, covers;
	bool ok;

	if (syncing || nr_durable != nr_appended ||
	    jpos + R_HDR + len > half_start(active) + hsize)
		return false;
	rec_header(h, R_WRITE, k, len, off, data);
	jpos += R_HDR + len;
	mark_locked(k);
	covers = ++nr_appended;
	dsync_half = active;
	syncing = true;
	mine = ++sync_started;
	pthread_mutex_unlock(&jlock);
	ok = pwritev2(jfd, iov, 2, (off_t)pos, RWF_DSYNC) ==
	     (ssize_t)(R_HDR + len);
	/*
	 * Failed: the writer hears EIO, but the slot must hold the record,
	 * not a hole at which a replay would stop before later records.
	 */
	if (!ok && pwritev(jfd, iov, 2, (off_t)pos) != (ssize_t)(R_HDR + len))
		sd_err("journal: cannot write a record: %m");
	pthread_mutex_lock(&jlock);
	/* one sync at a time: they finish in the order they were numbered */
	sd_assert(mine == sync_done + 1 && covers <= nr_appended);
	dsync_half = -1;
	syncing = false;
	sync_done = mine;
	if (!ok)
		sync_failed = mine;
	else if (covers > nr_durable)
		nr_durable = covers;
	pthread_cond_broadcast(&jcond);
	*ret = ok ? SD_RES_SUCCESS : SD_RES_EIO;
	return true;
}

/* return once sync number @want has finished */
static int sync_until_locked(uint64_t want)
{
	while (sync_done < want) {
		uint64_t mine, covers;
		int r;

		if (syncing) {
			pthread_cond_wait(&jcond, &jlock);
			continue;
		}
		syncing = true;
		mine = ++sync_started;
		covers = nr_appended;
		pthread_mutex_unlock(&jlock);
		r = fdatasync(jfd);
		pthread_mutex_lock(&jlock);
		sd_assert(mine == sync_done + 1 && covers <= nr_appended);
		syncing = false;
		sync_done = mine;
		if (r)
			sync_failed = mine;
		else if (covers > nr_durable)
			nr_durable = covers;
		pthread_cond_broadcast(&jcond);
	}
	return sync_failed >= want ? SD_RES_EIO : SD_RES_SUCCESS;
}

/* return once a sync that started after our append has finished */
static int commit_locked(void)
{
	return sync_until_locked(sync_started + 1);
}

/* the waiters whose sync has finished, told outside the lock */
static void wake_waiters_locked(void)
{
	struct store_wait *w, *n;
	LIST_HEAD(done);

	list_for_each_entry_safe(w, n, &js_waiters, list)
		if (w->want <= sync_done) {
			w->result = sync_failed >= w->want ? SD_RES_EIO :
							     SD_RES_SUCCESS;
			list_del(&w->list);
			list_add_tail(&w->list, &done);
		}
	pthread_mutex_unlock(&jlock);
	list_for_each_entry_safe(w, n, &done, list) {
		list_del(&w->list);
		w->done(w, w->result);
	}
	pthread_mutex_lock(&jlock);
}

/*
 * The sync thread: one sync for every write that waits (they are in
 * order, so the last one's sync covers all), then tell them.  It leaves
 * only with no write waiting.
 */
static void *syncer(void *arg)
{
	pthread_mutex_lock(&jlock);
	for (;;) {
		if (list_empty(&js_waiters)) {
			if (js_stop)
				break;
			pthread_cond_wait(&js_cond, &jlock);
			continue;
		}
		sync_until_locked(list_entry(js_waiters.prev,
					     struct store_wait, list)->want);
		wake_waiters_locked();
	}
	pthread_mutex_unlock(&jlock);
	return NULL;
}

/* a record of @len bytes of data does not fit in a half */
static bool too_large(uint32_t len)
{
	return (uint64_t)R_HDR + len > hsize - H_HDR;
}

/*
 * For a write too large for a record: the object (already written) is
 * synced instead, and its older records forgotten, so that no replay
 * writes them over this newer data.
 */
static int sync_instead(struct obj_key k)
{
	int ret = journal_forget(k);

	return ret == SD_RES_SUCCESS ? jst->sync_obj(k) : ret;
}

int journal_write(struct obj_key k, const void *buf, uint32_t len,
		  uint32_t off)
{
	int ret;

	if (too_large(len))
		return sync_instead(k);
	pthread_mutex_lock(&jlock);
	if (!dsync_record_locked(k, buf, len, off, &ret)) {
		ret = append_locked(R_WRITE, k, buf, len, off);
		if (ret == SD_RES_SUCCESS)
			ret = commit_locked();
	}
	pthread_mutex_unlock(&jlock);
	return ret;
}

/*
 * At depth 1 (no sync under way, nobody waiting) the writer's own thread
 * syncs at once, as journal_write: no hand-off.  Otherwise the record
 * joins the group of the sync thread's next sync.
 */
int journal_write_async(struct obj_key k, const void *buf, uint32_t len,
			uint32_t off, struct store_wait *w)
{
	int ret;

	if (too_large(len) || !js_running)
		return journal_write(k, buf, len, off);
	pthread_mutex_lock(&jlock);
	if (list_empty(&js_waiters) &&
	    dsync_record_locked(k, buf, len, off, &ret)) {
		pthread_mutex_unlock(&jlock);
		return ret;
	}
	ret = append_locked(R_WRITE, k, buf, len, off);
	if (ret == SD_RES_SUCCESS && !syncing && list_empty(&js_waiters)) {
		ret = commit_locked();
	} else if (ret == SD_RES_SUCCESS) {
		w->want = sync_started + 1;
		list_add_tail(&w->list, &js_waiters);
		pthread_cond_signal(&js_cond);
		ret = STORE_PENDING;
	}
	pthread_mutex_unlock(&jlock);
	return ret;
}

/*
 * A cached write: its record goes in without a sync.  Every write to an
 * object must have its record once the journal is on, or a replay would
 * write an older record over it (a flushed cached write lost to a
 * restart).  The next sync of the journal (a flush) makes it durable
 * with everything before it; a checkpoint syncs the object itself.
 */
int journal_append(struct obj_key k, const void *buf, uint32_t len,
		   uint32_t off)
{
	int ret;

	if (too_large(len))
		return sync_instead(k);
	pthread_mutex_lock(&jlock);
	ret = append_locked(R_WRITE, k, buf, len, off);
	pthread_mutex_unlock(&jlock);
	return ret;
}

/* every record appended before the call durable (a flush) */
int journal_sync(void)
{
	int ret = SD_RES_SUCCESS;

	pthread_mutex_lock(&jlock);
	if (nr_durable != nr_appended)
		ret = commit_locked();
	pthread_mutex_unlock(&jlock);
	return ret;
}

int journal_forget(struct obj_key k)
{
	int ret = SD_RES_SUCCESS;

	if (!journal_on())
		return SD_RES_SUCCESS;
	pthread_mutex_lock(&jlock);
	if (has_locked(k)) {
		/* its data must not rely on records that will be ignored */
		ret = jst->sync_obj(k);
		if (ret == SD_RES_SUCCESS || ret == SD_RES_NO_OBJ)
			ret = append_locked(R_FORGET, k, NULL, 0, 0);
		if (ret == SD_RES_SUCCESS)
			ret = commit_locked();
	}
	pthread_mutex_unlock(&jlock);
	return ret;
}

/* both halves anew, a new generation in half 0: nothing before applies */
static int restart_halves_locked(void)
{
	jgen++;
	if (write_half_header(jfd, 1, 0) || write_half_header(jfd, 0, jgen) ||
	    fdatasync(jfd))
		return SD_RES_EIO;
	nr_durable = nr_appended;
	clear_locked();
	half_gen[0] = jgen;
	half_gen[1] = 0;
	cp_busy[0] = cp_busy[1] = false;
	active = 0;
	jpos = half_start(0) + H_HDR;
	return SD_RES_SUCCESS;
}

void journal_wiped(void)
{
	if (!journal_on())
		return;
	pthread_mutex_lock(&jlock);
	while ((cp_busy[0] || cp_busy[1]) && !cp_error)
		pthread_cond_wait(&cp_cond, &jlock);
	if (restart_halves_locked() != SD_RES_SUCCESS)
		sd_err("journal: cannot start a new generation: %m");
	pthread_mutex_unlock(&jlock);
}

/* ---- replay ---- */

struct rec {
	uint8_t type;
	struct obj_key key;
	uint32_t len, off;
	uint64_t pos;		/* of its data in the file */
};

/*
 * The record at @pos of generation @gen in a journal of version @ver, its
 * data read into *@buf (grown as needed); false at the end of the
 * generation or on a record that fails its checks
 */
static bool read_rec(int fd, uint64_t pos, uint64_t end, uint64_t gen,
		     uint32_t ver, struct rec *r, uint8_t **buf, uint32_t *cap)
{
	uint8_t h[R_HDR];
	uint32_t want;

	if (end - pos < R_HDR ||
	    pread(fd, h, R_HDR, (off_t)pos) != R_HDR ||
	    get_le32(h) != (ver < 3 ? R_MAGIC_V2 : R_MAGIC) ||
	    get_le64(h + 8) != gen)
		return false;
	r->type = h[16];
	r->len = get_le32(h + 20);
	/* before version 3 every object was a replicated one */
	r->key.oid = get_le64(h + 24);
	r->key.idx = ver < 3 ? OBJ_IDX_REPLICA : h[17];
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
	struct obj_key key;
	size_t at;		/* the FORGET record's position */
};

static int cmp_key(struct obj_key x, struct obj_key y)
{
	if (x.oid != y.oid)
		return x.oid < y.oid ? -1 : 1;
	return x.idx < y.idx ? -1 : x.idx > y.idx;
}

static int cmp_forget(const void *a, const void *b)
{
	const struct forget *x = a, *y = b;
	int c = cmp_key(x->key, y->key);

	if (c)
		return c;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* true if a FORGET of @k follows record @i */
static bool forgotten(const struct forget *f, size_t nf, struct obj_key k,
		      size_t i)
{
	size_t lo = 0, hi = nf;

	/* the last entry of @k holds its last FORGET */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (cmp_key(f[mid].key, k) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && obj_key_eq(f[lo - 1].key, k) && f[lo - 1].at > i;
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
			f[nf++] = (struct forget) { recs[i].key, i };
	qsort(f, nf, sizeof(*f), cmp_forget);
	*applied = 0;
	for (size_t i = 0; i < n && ret == SD_RES_SUCCESS; i++) {
		const struct rec *r = &recs[i];

		if (r->type != R_WRITE || forgotten(f, nf, r->key, i))
			continue;
		if (r->len > cap) {
			buf = xrealloc(buf, r->len);
			cap = r->len;
		}
		if (pread(fd, buf, r->len, (off_t)r->pos) != r->len) {
			ret = SD_RES_EIO;
			break;
		}
		ret = jst->write(r->key, buf, r->len, r->off);
		if (ret == SD_RES_NO_OBJ) {
			ret = SD_RES_SUCCESS;	/* removed since */
			continue;
		}
		if (ret != SD_RES_SUCCESS)
			sd_err("journal replay: object %" PRIx64
			       " (index %u): %s", r->key.oid, r->key.idx,
			       sd_strerror(ret));
		else
			(*applied)++;
	}
	free(buf);
	free(f);
	return ret;
}

/* the records of generation @gen from @pos to @end, appended to @recs */
static void collect(int fd, uint64_t pos, uint64_t end, uint64_t gen,
		    uint32_t ver, struct rec **recs, size_t *n, size_t *cap)
{
	uint8_t *buf = NULL;
	uint32_t bcap = 0;
	struct rec r;

	/* one record's data in memory at a time */
	while (read_rec(fd, pos, end, gen, ver, &r, &buf, &bcap)) {
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 1024;
			*recs = xrealloc(*recs, *cap * sizeof(**recs));
		}
		(*recs)[(*n)++] = r;
		pos = r.pos + r.len;
	}
	free(buf);
}

/* the live halves of a version 2 or 3 file, oldest generation first */
static uint64_t collect_halves(int fd, const uint8_t *h, uint64_t end,
			       uint32_t ver, struct rec **recs, size_t *n,
			       size_t *cap)
{
	uint64_t size = get_le64(h + 24), half, gen[2] = { 0, 0 };
	uint8_t b[H_HDR];

	if (size != end || size < J_HDR + 2 * H_HDR)
		return 0;
	half = (size - J_HDR) / 2;
	for (int i = 0; i < 2; i++)
		if (pread(fd, b, H_HDR, (off_t)(J_HDR + i * half)) == H_HDR &&
		    !memcmp(b, H_MAGIC, 8))
			gen[i] = get_le64(b + 8);
	for (int k = 0; k < 2; k++) {
		/* the older live half first */
		int i = (gen[0] && (!gen[1] || gen[0] < gen[1])) ? k : !k;
		uint64_t start = J_HDR + i * half;

		if (gen[i])
			collect(fd, start + H_HDR, start + half, gen[i], ver,
				recs, n, cap);
	}
	return gen[0] > gen[1] ? gen[0] : gen[1];
}

/* the records of the live generations, applied in order */
static int replay_file(int fd)
{
	uint8_t h[J_HDR];
	struct rec *recs = NULL;
	size_t n = 0, cap = 0, applied;
	uint64_t gen, end;
	struct stat st;
	int ret;

	if (fstat(fd, &st))
		return -1;
	if (!st.st_size)
		return 0;		/* new */
	end = (uint64_t)st.st_size;
	if (pread(fd, h, J_HDR, 0) != J_HDR)
		return -1;
	if (is_zero(h, J_HDR))
		return 0;	/* a sizing cut short: all was synced before */
	if (!memcmp(h, J_MAGIC_V1, 8) && get_le32(h + 8) == 1) {
		gen = get_le64(h + 16);
		collect(fd, J_HDR, end, gen, 1, &recs, &n, &cap);
	} else if (!memcmp(h, J_MAGIC_V2, 8) && get_le32(h + 8) == 2) {
		gen = collect_halves(fd, h, end, 2, &recs, &n, &cap);
	} else if (!memcmp(h, J_MAGIC, 8) && get_le32(h + 8) == J_VERSION) {
		gen = collect_halves(fd, h, end, J_VERSION, &recs, &n, &cap);
	} else {
		sd_err("the journal is not one of this version: not replayed");
		return -1;
	}
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
	hsize = (size - J_HDR) / 2;
	if (write_file_header(fd, size) || restart_halves_locked()) {
		sd_err("cannot write %s: %m", path);
		jfd = -1;
		goto fail;
	}
	cp_stop = false;
	if (pthread_create(&cp_thread, NULL, checkpointer, NULL)) {
		sd_err("cannot start the journal's checkpoint thread");
		jfd = -1;
		goto fail;
	}
	cp_running = true;
	js_stop = false;
	if (pthread_create(&js_thread, NULL, syncer, NULL))
		sd_warn("no journal sync thread: writes wait for their sync");
	else
		js_running = true;
	sd_notice("journal %s: %" PRIu64 " bytes", path, size);
	return 0;
fail:
	close(fd);
	return -1;
}

void journal_close(void)
{
	pthread_mutex_lock(&jlock);
	js_stop = true;			/* after the writes that wait */
	pthread_cond_signal(&js_cond);
	pthread_mutex_unlock(&jlock);
	if (js_running)
		pthread_join(js_thread, NULL);
	js_running = false;
	pthread_mutex_lock(&jlock);
	cp_stop = true;
	pthread_cond_broadcast(&cp_cond);
	pthread_mutex_unlock(&jlock);
	if (cp_running)
		pthread_join(cp_thread, NULL);
	cp_running = false;
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
