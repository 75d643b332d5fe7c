// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Versioned updates of erasure-coded strips (doc/erasure-coding.md §3):
 * the target's half of the two-phase write that leaves no write hole.
 *
 * A strip's updates carry versions that only grow.  PREPARE(v) saves the
 * bytes it is about to overwrite in an undo record, makes the record
 * durable, and only then writes the new bytes (durably); COMMIT(v) makes
 * every version up to v final and drops their records; ABORT(v) puts the
 * saved bytes of every version from v on back, newest first, and remembers
 * v so that a PREPARE of it arriving late is refused.
 *
 * The records live in <strip>.undo next to the strip:
 *
 *   header, 64 bytes: le64 magic, le64 committed, le64 high,
 *                     36 bytes zero, le32 CRC32C of the 60 before
 *   records:          le32 magic, le32 len, le64 v, le32 off,
 *                     le32 CRC of the new bytes, le32 CRC of the old,
 *                     le32 CRC of the 28 before; then the old bytes
 *
 * Records are appended in version order.  A record that does not check
 * out is the tail of an append that a crash cut short: its PREPARE never
 * wrote data (the data write waits for the record's sync) nor answered,
 * so it is dropped.  A record is complete (its new bytes are all on disk)
 * if a later record exists (PREPAREs of one strip run one after the
 * other) or the range holds bytes with the new CRC; an incomplete one is
 * a PREPARE cut short after its record: the range holds old bytes, new
 * ones, or a torn mix, and only ABORT or a rebuild makes it whole.
 *
 * A PREPARE names the version it builds on, prev: the strip must hold
 * exactly that one (its newest pending version, else its committed one).
 * A strip that holds an older one missed a version the others committed
 * (it did not answer when that was resolved): writing a range over it
 * would label stale bytes outside the range as new, so it is refused
 * (NO_OBJ) until the gateway has rebuilt it whole (INSTALL).  INSTALL
 * first marks the strip as holding version 0 (nothing usable), then
 * writes it, then marks the new version: a crash in between leaves a
 * strip no one uses.
 *
 * Losing the header's update in a crash is harmless: records of versions
 * up to "committed" count as dropped, "high" is at least the newest
 * record's version, and a COMMIT that is lost leaves its records pending,
 * so the version is resolved again (and committed again).  ABORT syncs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <isa-l/crc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "proto.h"
#include "store.h"
#include "store_int.h"
#include "util.h"

#define UNDO_MAGIC	UINT64_C(0x316f646e756c656b)	/* "kelundo1" */
#define REC_MAGIC	0x3152554bU			/* "KUR1" */
#define HDR_SIZE	64
#define REC_HDR		32
#define NR_LOCKS	64

struct undo_rec {
	uint64_t v;
	uint32_t off, len, new_crc;
	uint64_t pos;		/* of the record in the file */
};

struct undo {
	int fd;			/* -1: no file */
	uint64_t committed, high;
	int nr;			/* live records (above committed) */
	struct undo_rec rec[STRIP_MAX_PENDING];
	uint64_t end;		/* where the next record goes */
	uint64_t fsize;		/* of the file when loaded: bounds records */
	bool dead;		/* records of committed versions precede */
};

static pthread_mutex_t locks[NR_LOCKS];
static pthread_once_t locks_once = PTHREAD_ONCE_INIT;

static void locks_setup(void)
{
	for (int i = 0; i < NR_LOCKS; i++)
		pthread_mutex_init(&locks[i], NULL);
}

static pthread_mutex_t *lock_of(struct obj_key k)
{
	pthread_once(&locks_once, locks_setup);
	return &locks[obj_key_hash(k) % NR_LOCKS];
}

static uint32_t crc32c(const void *p, uint32_t n)
{
	return crc32_iscsi((unsigned char *)p, (int)n, 0xffffffffU);
}

static int undo_path(char *buf, size_t len, struct obj_key k)
{
	int slot = md_locate(k);

	if (slot < 0)
		return -1;
	md_path(buf, len, slot, k, STRIP_UNDO_SFX);
	return slot;
}

static int sync_fd(int fd)
{
	return store_sync_off() || !fdatasync(fd) ? 0 : -1;
}

static int write_hdr(struct undo *u)
{
	uint8_t h[HDR_SIZE] = { 0 };

	put_le64(h, UNDO_MAGIC);
	put_le64(h + 8, u->committed);
	put_le64(h + 16, u->high);
	put_le32(h + 60, crc32c(h, 60));
	return xpwrite(u->fd, h, HDR_SIZE, 0) < 0 ? -1 : 0;
}

static int read_hdr(struct undo *u)
{
	uint8_t h[HDR_SIZE];
	ssize_t n = xpread(u->fd, h, HDR_SIZE, 0);

	if (n == 0)
		return 0;	/* created, header never written: empty */
	if (n != HDR_SIZE || get_le64(h) != UNDO_MAGIC ||
	    get_le32(h + 60) != crc32c(h, 60))
		return -1;
	u->committed = get_le64(h + 8);
	u->high = get_le64(h + 16);
	return 0;
}

/*
 * The record at @pos of @u into @r, and its old bytes into *@old (a new
 * buffer the caller frees) if @old is not NULL; 0 or -1
 */
static int read_rec(const struct undo *u, uint64_t pos, struct undo_rec *r,
		    uint8_t **old)
{
	uint8_t h[REC_HDR];
	uint8_t *buf;

	if (pos + REC_HDR > u->fsize ||
	    xpread(u->fd, h, REC_HDR, (off_t)pos) != REC_HDR ||
	    get_le32(h) != REC_MAGIC || get_le32(h + 28) != crc32c(h, 28))
		return -1;
	r->len = get_le32(h + 4);
	r->v = get_le64(h + 8);
	r->off = get_le32(h + 16);
	r->new_crc = get_le32(h + 20);
	r->pos = pos;
	if (!r->len || r->len > u->fsize - pos - REC_HDR)
		return -1;
	buf = malloc(r->len);
	if (!buf)
		return -1;
	if (xpread(u->fd, buf, r->len, (off_t)(pos + REC_HDR)) != r->len ||
	    crc32c(buf, r->len) != get_le32(h + 24)) {
		free(buf);
		return -1;
	}
	if (old)
		*old = buf;
	else
		free(buf);
	return 0;
}

/* read the records; a tail that does not check out is cut off */
static int read_recs(struct undo *u)
{
	uint64_t pos = HDR_SIZE, last = 0;
	struct undo_rec r;

	while (read_rec(u, pos, &r, NULL) == 0) {
		if (r.v <= last)
			break;		/* out of order: not ours */
		last = r.v;
		pos += REC_HDR + r.len;
		if (r.v <= u->committed) {
			u->dead = true;
			continue;
		}
		if (u->nr == STRIP_MAX_PENDING)
			return -1;
		u->rec[u->nr++] = r;
	}
	u->end = pos;
	if (last > u->high)
		u->high = last;
	return 0;
}

static void undo_close(struct undo *u)
{
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
}

/*
 * Load the undo state of @k (an absent file is an empty one; with
 * @create, it is made).  SD_RES_*.
 */
static int undo_load(struct obj_key k, bool create, struct undo *u)
{
	char p[MD_PATH_MAX + 32];
	struct stat sb;
	const char *why;
	int err = 0;		/* errno of a failed call, 0: the contents */
	int slot;

	memset(u, 0, sizeof(*u));
	u->fd = -1;
	u->end = HDR_SIZE;
	slot = undo_path(p, sizeof(p), k);
	if (slot < 0)
		return SD_RES_NO_OBJ;
	u->fd = open(p, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
	if (u->fd < 0 && errno == ENOENT && !create)
		return SD_RES_SUCCESS;
	if (u->fd < 0)
		return store_err_to_res(errno);
	if (create && !store_sync_off() &&
	    layout_sync_sub(md_dir_fd(slot), layout_sub(k))) {
		why = "its directory cannot be synced";
		err = errno;
		goto eio;
	}
	if (fstat(u->fd, &sb)) {
		why = "cannot stat the file";
		err = errno;
		goto eio;
	}
	u->fsize = (uint64_t)sb.st_size;
	if (read_hdr(u)) {
		why = "bad header";
		goto eio;
	}
	if (read_recs(u)) {
		why = "too many pending records";
		goto eio;
	}
	return SD_RES_SUCCESS;
eio:
	sd_err("undo records of %" PRIx64 " (strip %u) are damaged: %s%s%s",
	       k.oid, k.idx, why, err ? ": " : "", err ? strerror(err) : "");
	undo_close(u);
	return SD_RES_EIO;
}

/*
 * The version of a strip whose undo file is @path, when it is settled (a
 * committed version, nothing prepared above it): 0 and *@v, else -1
 */
static int undo_settled(const char *path, uint64_t *v)
{
	struct undo u;
	struct stat sb;
	int ret = -1;

	memset(&u, 0, sizeof(u));
	u.end = HDR_SIZE;
	u.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (u.fd < 0)
		return -1;
	if (!fstat(u.fd, &sb)) {
		u.fsize = (uint64_t)sb.st_size;
		if (!read_hdr(&u) && !read_recs(&u) && !u.nr && u.committed) {
			*v = u.committed;
			ret = 0;
		}
	}
	undo_close(&u);
	return ret;
}

int store_strip_stale_version(struct obj_key k, uint64_t *v)
{
	char p[MD_PATH_MAX + 96];

	if (k.idx == OBJ_IDX_REPLICA ||
	    stale_copy_path(k, p, sizeof(p) - sizeof(STRIP_UNDO_SFX)))
		return SD_RES_NO_OBJ;
	strcat(p, STRIP_UNDO_SFX);
	return undo_settled(p, v) ? SD_RES_NO_OBJ : SD_RES_SUCCESS;
}

static int append_rec(struct undo *u, uint64_t v, const uint8_t *old,
		      const void *buf, uint32_t len, uint32_t off)
{
	uint8_t h[REC_HDR];
	struct undo_rec *r = &u->rec[u->nr];

	put_le32(h, REC_MAGIC);
	put_le32(h + 4, len);
	put_le64(h + 8, v);
	put_le32(h + 16, off);
	put_le32(h + 20, crc32c(buf, len));
	put_le32(h + 24, crc32c(old, len));
	put_le32(h + 28, crc32c(h, 28));
	if (ftruncate(u->fd, (off_t)u->end) ||
	    xpwrite(u->fd, h, REC_HDR, (off_t)u->end) < 0 ||
	    xpwrite(u->fd, old, len, (off_t)(u->end + REC_HDR)) < 0)
		return -1;
	*r = (struct undo_rec){ .v = v, .off = off, .len = len,
				.new_crc = get_le32(h + 20), .pos = u->end };
	u->nr++;
	u->end += REC_HDR + len;
	u->high = v;
	return write_hdr(u);
}

/* the version whose bytes the strip holds */
static uint64_t last_version(const struct undo *u)
{
	return u->nr ? u->rec[u->nr - 1].v : u->committed;
}

/* @k, created zero if it is not, with its undo state in @u */
static int open_strip(struct obj_key k, uint32_t strip_size, struct undo *u)
{
	int ret;

	if (store_exist(k) != SD_RES_SUCCESS) {
		ret = store_create(k, strip_size, NULL, 0, 0, true);
		if (ret != SD_RES_SUCCESS)
			return ret;
	}
	return undo_load(k, true, u);
}

static int prepare_locked(struct obj_key k, uint32_t strip_size, uint64_t v,
			  uint64_t prev, const void *buf, uint32_t len,
			  uint32_t off)
{
	struct undo u;
	uint8_t *old = NULL;
	int ret;

	if (prev && store_exist(k) != SD_RES_SUCCESS)
		return SD_RES_NO_OBJ;	/* nothing to build on */
	ret = open_strip(k, strip_size, &u);
	if (ret != SD_RES_SUCCESS)
		return ret;
	ret = SD_RES_STALE_OBJ;		/* prepared or aborted already */
	if (v <= u.high || v <= u.committed || last_version(&u) > prev)
		goto out;
	ret = SD_RES_NO_OBJ;		/* behind: to be rebuilt first */
	if (last_version(&u) < prev)
		goto out;
	ret = SD_RES_AGAIN;		/* the gateway must commit first */
	if (u.nr == STRIP_MAX_PENDING)
		goto out;
	ret = SD_RES_NO_MEM;
	old = malloc(len);
	if (!old)
		goto out;
	ret = store_read(k, old, len, off);
	if (ret != SD_RES_SUCCESS)
		goto out;
	ret = SD_RES_EIO;
	if (append_rec(&u, v, old, buf, len, off) || sync_fd(u.fd))
		goto out;
	/* the old bytes are safe: now the new ones may go over them */
	ret = store_write(k, buf, len, off, true);
out:
	free(old);
	undo_close(&u);
	return ret;
}

int store_strip_prepare(struct obj_key k, uint32_t strip_size, uint64_t v,
			uint64_t prev, const void *buf, uint32_t len,
			uint32_t off)
{
	pthread_mutex_t *l = lock_of(k);
	int ret;

	if (k.idx == OBJ_IDX_REPLICA || !v || prev >= v || !len ||
	    (uint64_t)off + len > strip_size)
		return SD_RES_INVALID_PARMS;
	pthread_mutex_lock(l);
	ret = prepare_locked(k, strip_size, v, prev, buf, len, off);
	pthread_mutex_unlock(l);
	return ret;
}

/* keep only the live records: a copy of them under the file's name */
static int compact(struct obj_key k, struct undo *u)
{
	char p[MD_PATH_MAX + 32], tmp[MD_PATH_MAX + 40];
	struct undo n = *u;
	int slot, ret = -1;

	slot = undo_path(p, sizeof(p), k);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	n.fd = slot < 0 ? -1 :
	       open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (n.fd < 0)
		return -1;
	n.nr = 0;
	n.end = HDR_SIZE;
	for (int i = 0; i < u->nr; i++) {
		uint8_t h[REC_HDR], *old = NULL;
		struct undo_rec r;
		int bad;

		if (read_rec(u, u->rec[i].pos, &r, &old))
			goto out;
		bad = xpread(u->fd, h, REC_HDR, (off_t)r.pos) != REC_HDR ||
		      xpwrite(n.fd, h, REC_HDR, (off_t)n.end) < 0 ||
		      xpwrite(n.fd, old, r.len, (off_t)(n.end + REC_HDR)) < 0;
		free(old);
		if (bad)
			goto out;
		n.rec[n.nr] = r;
		n.rec[n.nr++].pos = n.end;
		n.end += REC_HDR + r.len;
	}
	if (write_hdr(&n) || sync_fd(n.fd) || rename(tmp, p))
		goto out;
	close(u->fd);
	*u = n;
	return 0;
out:
	close(n.fd);
	unlink(tmp);
	return ret;
}

static int commit_locked(struct obj_key k, uint64_t v)
{
	struct undo u;
	int i, ret;

	ret = undo_load(k, false, &u);
	if (ret != SD_RES_SUCCESS || u.fd < 0)
		return ret == SD_RES_SUCCESS ? SD_RES_STALE_OBJ : ret;
	ret = SD_RES_SUCCESS;
	if (v <= u.committed)
		goto out;		/* again: nothing to do */
	for (i = 0; i < u.nr && u.rec[i].v < v; i++)
		;
	ret = SD_RES_STALE_OBJ;		/* this strip never held v */
	if (i == u.nr || u.rec[i].v != v)
		goto out;
	i++;
	u.committed = v;
	memmove(u.rec, u.rec + i, (size_t)(u.nr - i) * sizeof(u.rec[0]));
	u.nr -= i;
	ret = SD_RES_EIO;
	if (!u.nr) {
		/* nothing pending: the file is its header alone */
		if (write_hdr(&u) || ftruncate(u.fd, HDR_SIZE))
			goto out;
	} else if (compact(k, &u)) {
		goto out;
	}
	ret = SD_RES_SUCCESS;
out:
	undo_close(&u);
	return ret;
}

/* @fn(@k, @v) under the strip's lock, for a strip and a version */
static int locked(struct obj_key k, uint64_t v,
		  int (*fn)(struct obj_key k, uint64_t v))
{
	pthread_mutex_t *l = lock_of(k);
	int ret;

	if (k.idx == OBJ_IDX_REPLICA || !v)
		return SD_RES_INVALID_PARMS;
	pthread_mutex_lock(l);
	ret = fn(k, v);
	pthread_mutex_unlock(l);
	return ret;
}

int store_strip_commit(struct obj_key k, uint64_t v)
{
	return locked(k, v, commit_locked);
}

/* put back the old bytes of the records from @from on, newest first */
static int roll_back(struct obj_key k, struct undo *u, int from)
{
	int ret = SD_RES_SUCCESS;

	for (int i = u->nr - 1; i >= from && ret == SD_RES_SUCCESS; i--) {
		struct undo_rec r;
		uint8_t *old;

		if (read_rec(u, u->rec[i].pos, &r, &old))
			return SD_RES_EIO;
		ret = store_write(k, old, r.len, r.off, true);
		free(old);
	}
	return ret;
}

static int abort_locked(struct obj_key k, uint64_t v)
{
	struct undo u;
	int i, ret;

	if (store_exist(k) != SD_RES_SUCCESS)
		return SD_RES_NO_OBJ;
	ret = undo_load(k, true, &u);
	if (ret != SD_RES_SUCCESS)
		return ret;
	ret = SD_RES_STALE_OBJ;		/* final already */
	if (v <= u.committed)
		goto out;
	for (i = 0; i < u.nr && u.rec[i].v < v; i++)
		;
	if (i < u.nr) {
		ret = roll_back(k, &u, i);
		if (ret != SD_RES_SUCCESS)
			goto out;
		u.end = u.rec[i].pos;
		u.nr = i;
	}
	if (v > u.high)
		u.high = v;	/* a late PREPARE of v is refused */
	ret = SD_RES_EIO;
	if (ftruncate(u.fd, (off_t)u.end) || write_hdr(&u) || sync_fd(u.fd))
		goto out;
	ret = SD_RES_SUCCESS;
out:
	undo_close(&u);
	return ret;
}

int store_strip_abort(struct obj_key k, uint64_t v)
{
	return locked(k, v, abort_locked);
}

/* whether the new bytes of the last record are all on disk */
static bool last_complete(struct obj_key k, const struct undo_rec *r)
{
	uint8_t *buf = malloc(r->len);
	bool ok;

	if (!buf)
		return false;
	ok = store_read(k, buf, r->len, r->off) == SD_RES_SUCCESS &&
	     crc32c(buf, r->len) == r->new_crc;
	free(buf);
	return ok;
}

static int state_locked(struct obj_key k, struct strip_state *st)
{
	struct undo u;
	int ret;

	if (store_exist(k) != SD_RES_SUCCESS)
		return SD_RES_NO_OBJ;
	ret = undo_load(k, false, &u);
	if (ret != SD_RES_SUCCESS)
		return ret;
	st->committed = u.committed;
	st->high = u.high;
	st->nr_pending = u.nr;
	for (int i = 0; i < u.nr; i++) {
		st->pending[i].v = u.rec[i].v;
		st->pending[i].off = u.rec[i].off;
		st->pending[i].len = u.rec[i].len;
		/* a later PREPARE began only after this one had written */
		st->pending[i].complete = i < u.nr - 1 ||
					  last_complete(k, &u.rec[i]);
	}
	undo_close(&u);
	return SD_RES_SUCCESS;
}

int store_strip_state(struct obj_key k, struct strip_state *st)
{
	pthread_mutex_t *l = lock_of(k);
	int ret;

	memset(st, 0, sizeof(*st));
	if (k.idx == OBJ_IDX_REPLICA)
		return SD_RES_INVALID_PARMS;
	pthread_mutex_lock(l);
	ret = state_locked(k, st);
	pthread_mutex_unlock(l);
	return ret;
}

int store_strip_read(struct obj_key k, void *buf, uint32_t len, uint32_t off,
		     uint64_t *version, int *state)
{
	pthread_mutex_t *l = lock_of(k);
	struct undo u;
	int ret;

	if (k.idx == OBJ_IDX_REPLICA)
		return SD_RES_INVALID_PARMS;
	pthread_mutex_lock(l);
	ret = store_read(k, buf, len, off);
	if (ret == SD_RES_SUCCESS)
		ret = undo_load(k, false, &u);
	if (ret == SD_RES_SUCCESS) {
		*version = u.committed;
		*state = STRIP_FINAL;
		if (u.nr) {
			*version = u.rec[u.nr - 1].v;
			*state = last_complete(k, &u.rec[u.nr - 1]) ?
				 STRIP_PENDING : STRIP_DOUBT;
		}
		undo_close(&u);
	}
	pthread_mutex_unlock(l);
	return ret;
}

static int install_locked(struct obj_key k, uint32_t strip_size, uint64_t v,
			  const void *buf, bool same)
{
	struct undo u;
	int ret;

	ret = open_strip(k, strip_size, &u);
	if (ret != SD_RES_SUCCESS)
		return ret;
	ret = SD_RES_STALE_OBJ;		/* it holds v or a newer one */
	if (v < last_version(&u) || (v == last_version(&u) && !same))
		goto out;
	ret = SD_RES_EIO;
	/* nothing usable while the bytes change */
	u.committed = 0;
	if (v > u.high)
		u.high = v;
	u.nr = 0;
	u.end = HDR_SIZE;
	if (ftruncate(u.fd, HDR_SIZE) || write_hdr(&u) || sync_fd(u.fd))
		goto out;
	ret = store_write(k, buf, strip_size, 0, true);
	if (ret != SD_RES_SUCCESS)
		goto out;
	ret = SD_RES_EIO;
	u.committed = v;
	if (write_hdr(&u) || sync_fd(u.fd))
		goto out;
	ret = SD_RES_SUCCESS;
out:
	undo_close(&u);
	return ret;
}

int store_strip_install(struct obj_key k, uint32_t strip_size, uint64_t v,
			const void *buf, bool same)
{
	pthread_mutex_t *l = lock_of(k);
	int ret;

	if (k.idx == OBJ_IDX_REPLICA || !v)
		return SD_RES_INVALID_PARMS;
	pthread_mutex_lock(l);
	ret = install_locked(k, strip_size, v, buf, same);
	pthread_mutex_unlock(l);
	return ret;
}

void strip_state_put(const struct strip_state *st, uint8_t *buf)
{
	memset(buf, 0, EC_STATE_LEN);
	put_le64(buf, st->committed);
	put_le64(buf + 8, st->high);
	put_le32(buf + 16, (uint32_t)st->nr_pending);
	for (int i = 0; i < st->nr_pending; i++) {
		uint8_t *e = buf + 24 + i * EC_STATE_ENTRY;

		put_le64(e, st->pending[i].v);
		put_le32(e + 8, st->pending[i].off);
		put_le32(e + 12, st->pending[i].len);
		put_le32(e + 16, st->pending[i].complete);
	}
}

int strip_state_get(const uint8_t *buf, uint32_t len, struct strip_state *st)
{
	uint64_t last;

	memset(st, 0, sizeof(*st));
	if (len != EC_STATE_LEN)
		return -1;
	st->committed = get_le64(buf);
	st->high = get_le64(buf + 8);
	if (get_le32(buf + 16) > STRIP_MAX_PENDING)
		return -1;
	st->nr_pending = (int)get_le32(buf + 16);
	last = st->committed;
	for (int i = 0; i < st->nr_pending; i++) {
		const uint8_t *e = buf + 24 + i * EC_STATE_ENTRY;

		st->pending[i].v = get_le64(e);
		st->pending[i].off = get_le32(e + 8);
		st->pending[i].len = get_le32(e + 12);
		st->pending[i].complete = get_le32(e + 16) != 0;
		/* pending versions are above committed, in order */
		if (st->pending[i].v <= last || st->pending[i].v > st->high)
			return -1;
		last = st->pending[i].v;
	}
	return st->committed > st->high ? -1 : 0;
}
