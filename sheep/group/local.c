// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The "local" cluster driver: any number of sheep on one host that share a
 * path form one cluster (cluster.md §6.2; Kelpie's own on-disk format).
 *
 * PATH is a directory holding
 *
 *   PATH/log          an append-only event log; the total order
 *   PATH/live/TOKEN   one file per process, flock(LOCK_EX)ed for its life
 *
 * Every process gets a random 64-bit token at init and holds an exclusive
 * flock on PATH/live/<token> until it dies, so that anybody can tell a dead
 * process by taking that lock with LOCK_NB.
 *
 * The log starts with a 64-byte header (magic, version, generation, the
 * committed end offset and the record count).  An append happens under
 * flock(LOCK_EX) on the log: the record is written with one pwrite() at the
 * committed end, then the end is advanced in the header.  A writer killed in
 * between leaves bytes beyond the end that nobody reads and the next append
 * overwrites, so torn records can never be seen.  Readers take LOCK_SH only
 * to read the header; the bytes below the committed end never change.
 *
 * Every process replays the log from its start, one record at a time, and
 * derives the same state from it: members, pending joins, the queue of
 * block requests and a membership version (mver, bumped by every accepted
 * join and every member leave).  Callbacks are delivered only from the
 * process's own ACCEPT onwards.
 *
 * Joins: JOIN(joiner, opaque) is appended by the joiner.  The decider of a
 * pending join is the first member in node order, or the joiner itself when
 * there are no members.  It calls handlers->join and appends
 * ACCEPT(joiner, mver, opaque).  An ACCEPT counts only if its mver equals the
 * reader's mver when it is read and the join is still pending; otherwise it
 * is stale (membership changed after the decision) or a duplicate, and is
 * ignored.  After any membership change, the new decider decides again.
 *
 * Joins together: when every member and pending joiner reads runs (its
 * JOIN carries REC_F_RUNS) and the daemon takes joins together (a running
 * cluster), the decider decides all pending joins in one run of ACCEPTs
 * (mver, mver + 1, ...; REC_F_MORE on all but the last), each judged
 * against the members and the joiners before it, once no live process it
 * does not know yet is about to append its JOIN (at most
 * JOIN_SETTLE_MAX_MS).  An ACCEPT that continues a run counts only if the
 * ones before it did; readers call accept once per joiner at the run's
 * end, all but the last with `more`, so the daemon makes one epoch.
 * LEAVE runs, too, are written only when everyone reads them.
 *
 * Failure detection: every process probes the live files of all members and
 * pending joiners every PROBE_MS.  A dead one gets a LEAVE, appended under
 * the lock after checking that the unread part of the log holds none yet.
 * What a probe finds dead is appended once a round finds no death the one
 * before did not (processes killed together take a while to all be gone
 * on a busy host), or SETTLE_ROUNDS_MAX rounds after the first find, in
 * one go: every LEAVE but the last carries REC_F_MORE, and readers deliver
 * the run as one leave, so one epoch.  Any other record ends a run that a
 * writer killed halfway left open, the same for every reader.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>
#include "driver.h"
#include "event.h"
#include "hash.h"
#include "proto.h"
#include "util.h"

/* where events go: the daemon's handlers, given at init */
static const struct cluster_handlers *handlers;

#define LOCAL_DEFAULT_PATH	"/tmp/kelpie-local"

#define LOG_MAGIC		UINT64_C(0x4c434f4c504c454b) /* "KELPLOCL" */
#define LOG_VERSION		1
#define LOG_HDR_SIZE		64
#define LOG_OFF_END		24	/* u64 end, then u64 nr: one pwrite */

#define REC_MAGIC		UINT32_C(0x4345524b)	/* "KREC" */
#define REC_HDR_SIZE		144
#define REC_OFF_PCSUM		128
#define REC_OFF_HCSUM		136
#define REC_OFF_NODE		48
#define REC_MAX_PAYLOAD		SD_MAX_EVENT_BUF_SIZE
_Static_assert(REC_OFF_NODE + sizeof(struct sd_node) == REC_OFF_PCSUM,
	       "record header layout");

#define PROBE_MS		200
#define POLL_MS_NO_INOTIFY	20
#define BATCH_RECORDS		256
#define LIVE_TRIES		16
#define SWEEP_EVERY		64	/* probe rounds between sweeps */
#define SETTLE_ROUNDS_MAX	5	/* probe rounds a death waits at most */

enum rec_type {
	REC_JOIN = 1,
	REC_ACCEPT,
	REC_LEAVE,
	REC_NOTIFY,
	REC_BLOCK,
	REC_UNBLOCK,
};

#define REC_F_REJECTED		0x0001	/* LEAVE of a join that was refused */
#define REC_F_MORE		0x0002	/* LEAVE, ACCEPT: the next is of its run */
#define REC_F_RUNS		0x0004	/* JOIN: the joiner reads runs */

/* what our JOIN says we read; a test builds an older release with 0 */
#ifndef MY_CAPS
#define MY_CAPS			REC_F_RUNS
#endif

#define RUN_MAX			32	/* joins decided in one run at most */
#define JOIN_SETTLE_MAX_MS	1000	/* a join waits for others at most */

struct log_hdr {
	uint64_t gen;
	uint64_t end;
	uint64_t nr;
};

/* one log record header, host order */
struct rec {
	uint16_t type;
	uint16_t flags;
	uint32_t len;		/* payload bytes */
	uint64_t seq;		/* index of the record in the log */
	uint64_t writer;	/* token of the appending process */
	uint64_t subject;	/* token of the node the record is about */
	uint64_t mver;		/* ACCEPT: membership version decided at */
	struct sd_node node;	/* the subject's node */
	uint64_t pcsum;		/* FNV-1a of the payload */
	uint64_t off;		/* where the record starts */
	uint64_t next;		/* where the next one starts */
};

struct member {
	uint64_t token;
	struct sd_node node;
	uint16_t caps;		/* its JOIN's REC_F_RUNS */
	bool leave_sent;	/* we appended (or saw) its LEAVE */
};

struct pending_join {
	uint64_t token;
	struct sd_node node;
	uint16_t caps;
	uint64_t off;		/* offset of the JOIN record */
	uint64_t read_at;	/* when we read it (now_msec) */
	bool decided;		/* we decided it at decided_mver */
	uint64_t decided_mver;
	bool leave_sent;
};

/* an accepted joiner whose accept callback waits for the end of its run */
struct came {
	struct sd_node node;
	void *opaque;
	size_t len;
};

struct block_req {
	uint64_t token;
	bool granted;		/* handlers->block called (own ones only) */
};

static struct local_state {
	bool inited;
	bool started;		/* join() called */
	bool joined;		/* own ACCEPT read: callbacks are delivered */
	bool left;		/* own LEAVE read */
	bool leave_called;
	bool broken;		/* the log is unusable; stop reading it */
	bool dispatching;

	char *dir;
	char *log_path;
	char *live_dir;
	int log_fd;
	int live_fd;
	int ino_fd;
	int lock_depth;
	struct event_loop *loop;
	struct timer probe_timer;
	struct timer kick_timer;

	uint64_t token;
	struct sd_node me;

	uint64_t gen;
	uint64_t pos;		/* next record to read */
	uint64_t seen_end;	/* committed end at the last look */
	uint64_t seq;		/* its expected index */
	uint64_t mver;

	struct member *members;	/* sorted by node_cmp, then token */
	size_t nr_members, cap_members;
	struct pending_join *pend;	/* in log order */
	size_t nr_pend, cap_pend;
	struct block_req *blks;	/* in log order; [0] holds the block */
	size_t nr_blks, cap_blks;
	int holding;		/* own grants not yet unblocked */
	unsigned int nr_probes;
	size_t nr_dead_seen;	/* how many the last probe found dead */
	unsigned int settle_rounds;	/* rounds since the first of them */
	struct sd_node *gone;	/* members of a run of LEAVEs not delivered */
	size_t nr_gone, cap_gone;
	struct came *came;	/* joiners of a run of ACCEPTs not delivered */
	size_t nr_came, cap_came;
	bool in_accept_run;	/* the last record was an ACCEPT with MORE */
	bool accept_run_stale;	/* ... and one of its run did not count */
} st = {
	.log_fd = -1,
	.live_fd = -1,
	.ino_fd = -1,
};

/* ------------------------------------------------------------------ */
/* little helpers */

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint64_t csum(const void *buf, size_t len)
{
	return fnv_64a_buf(buf, len, FNV1A_64_INIT);
}

static const char *nstr(const struct sd_node *n)
{
	static char buf[2][64];
	static int i;

	i ^= 1;
	return node_to_str(n, buf[i], sizeof(buf[i]));
}

static uint64_t new_token(void)
{
	uint64_t t = 0;

	while (!t) {
		if (getrandom(&t, sizeof(t), GRND_NONBLOCK) != sizeof(t))
			t = ((uint64_t)getpid() << 32) ^ sd_time_now() ^
			    (uintptr_t)&t;
	}
	return t;
}

static char *live_path(uint64_t token)
{
	char *p;

	if (asprintf(&p, "%s/%016" PRIx64, st.live_dir, token) < 0)
		return NULL;
	return p;
}

static void *grow(void *arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return arr;
	*cap = MAX(need, *cap * 2 + 4);
	return xrealloc(arr, *cap * size);
}

/* ------------------------------------------------------------------ */
/* locking: re-entrant, so that a nested append keeps the outer lock */

static int do_flock(int fd, int op)
{
	while (flock(fd, op) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return 0;
}

static int log_lock(int op)
{
	if (st.lock_depth++)
		return 0;
	if (do_flock(st.log_fd, op) < 0) {
		st.lock_depth--;
		sd_err("flock %s: %m", st.log_path);
		return -1;
	}
	return 0;
}

static void log_unlock(void)
{
	if (--st.lock_depth == 0)
		do_flock(st.log_fd, LOCK_UN);
}

/* ------------------------------------------------------------------ */
/* liveness files */

/* 1 alive, 0 dead (or never existed), -1 unknown */
static int token_alive(uint64_t token)
{
	char *p = live_path(token);
	int fd, ret = -1;

	if (!p)
		return -1;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = errno == ENOENT ? 0 : -1;
		if (ret < 0)
			sd_err("open %s: %m", p);
		goto out;
	}
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		ret = 0;
	else if (errno == EWOULDBLOCK)
		ret = 1;
	else
		sd_err("flock %s: %m", p);
	close(fd);
out:
	free(p);
	return ret;
}

/* create PATH/live/<token> and hold its lock; sets st.token */
static int live_create(void)
{
	for (int i = 0; i < LIVE_TRIES; i++) {
		uint64_t token = new_token();
		char *fin = live_path(token), *tmp = NULL;
		int fd;

		if (!fin || asprintf(&tmp, "%s/.new-%016" PRIx64, st.live_dir,
				     token) < 0) {
			free(fin);
			return -1;
		}
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 && do_flock(fd, LOCK_EX) == 0 &&
		    rename(tmp, fin) == 0) {
			free(tmp);
			free(fin);
			st.live_fd = fd;
			st.token = token;
			return 0;
		}
		/* a cleaner may have taken our file before we locked it */
		sd_err("live file %s: %m, retrying", tmp);
		if (fd >= 0)
			close(fd);
		free(tmp);
		free(fin);
	}
	return -1;
}

/*
 * Is any process other than us alive?  With @clean, also remove the files
 * of the dead ones.  A file being created is unlocked for a moment;
 * removing it makes its creator retry with a new name.
 */
static bool others_alive(bool clean)
{
	struct dirent *de;
	char mine[32];
	bool alive = false;
	DIR *d = opendir(st.live_dir);

	if (!d) {
		sd_err("opendir %s: %m", st.live_dir);
		return true;
	}
	snprintf(mine, sizeof(mine), "%016" PRIx64, st.token);
	while ((!alive || clean) && (de = readdir(d))) {
		char *p;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, mine))
			continue;
		if (asprintf(&p, "%s/%s", st.live_dir, de->d_name) < 0)
			break;
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (flock(fd, LOCK_EX | LOCK_NB) < 0)
				alive = true;
			else if (clean)
				unlink(p);
			close(fd);
		}
		free(p);
	}
	closedir(d);
	return alive;
}

/* ------------------------------------------------------------------ */
/* the log file */

/* 0 ok, 1 empty or not a log, 2 another version, -1 I/O error */
static int log_hdr_read(struct log_hdr *h)
{
	uint8_t b[LOG_HDR_SIZE];
	ssize_t n = pread(st.log_fd, b, sizeof(b), 0);

	if (n < 0) {
		sd_err("read %s: %m", st.log_path);
		return -1;
	}
	if (n < (ssize_t)sizeof(b) || get64(b) != LOG_MAGIC)
		return 1;
	if (get32(b + 8) != LOG_VERSION || get32(b + 12) != LOG_HDR_SIZE)
		return 2;
	h->gen = get64(b + 16);
	h->end = get64(b + 24);
	h->nr = get64(b + 32);
	if (h->end < LOG_HDR_SIZE)
		return 1;
	return 0;
}

/* read the header under a shared lock */
static int log_hdr_read_shared(struct log_hdr *h)
{
	int ret;

	if (log_lock(LOCK_SH) < 0)
		return -1;
	ret = log_hdr_read(h);
	log_unlock();
	return ret;
}

/* start a new, empty log generation; under the exclusive lock */
static int log_reset(void)
{
	uint8_t b[LOG_HDR_SIZE] = { 0 };

	put64(b, LOG_MAGIC);
	put32(b + 8, LOG_VERSION);
	put32(b + 12, LOG_HDR_SIZE);
	put64(b + 16, new_token());
	put64(b + 24, LOG_HDR_SIZE);
	put64(b + 32, 0);
	if (ftruncate(st.log_fd, 0) < 0 ||
	    xpwrite(st.log_fd, b, sizeof(b), 0) < 0) {
		sd_err("reset %s: %m", st.log_path);
		return -1;
	}
	return 0;
}

static void rec_encode(const struct rec *r, uint8_t *b)
{
	memset(b, 0, REC_HDR_SIZE);
	put32(b, REC_MAGIC);
	put16(b + 4, r->type);
	put16(b + 6, r->flags);
	put32(b + 8, r->len);
	put64(b + 16, r->seq);
	put64(b + 24, r->writer);
	put64(b + 32, r->subject);
	put64(b + 40, r->mver);
	sd_node_encode(&r->node, b + REC_OFF_NODE);
	put64(b + REC_OFF_PCSUM, r->pcsum);
	put64(b + REC_OFF_HCSUM, csum(b, REC_OFF_HCSUM));
}

/* read and check the record header at @off; 0 ok, -1 corrupt */
static int rec_read(uint64_t off, uint64_t end, struct rec *r)
{
	uint8_t b[REC_HDR_SIZE];

	if (end - off < REC_HDR_SIZE ||
	    xpread(st.log_fd, b, sizeof(b), (off_t)off) < 0)
		goto bad;
	if (get32(b) != REC_MAGIC ||
	    get64(b + REC_OFF_HCSUM) != csum(b, REC_OFF_HCSUM))
		goto bad;
	r->type = get16(b + 4);
	r->flags = get16(b + 6);
	r->len = get32(b + 8);
	r->seq = get64(b + 16);
	r->writer = get64(b + 24);
	r->subject = get64(b + 32);
	r->mver = get64(b + 40);
	sd_node_decode(&r->node, b + REC_OFF_NODE);
	r->pcsum = get64(b + REC_OFF_PCSUM);
	r->off = off;
	r->next = off + REC_HDR_SIZE + r->len;
	if (r->len > REC_MAX_PAYLOAD || r->next > end)
		goto bad;
	return 0;
bad:
	sd_err("bad record at offset %" PRIu64 " of %s", off, st.log_path);
	return -1;
}

/* the payload of @r into @buf (r->len bytes); 0 or -1 */
static int rec_payload_into(const struct rec *r, void *buf)
{
	if (r->len && xpread(st.log_fd, buf, r->len,
			     (off_t)(r->off + REC_HDR_SIZE)) < 0)
		goto bad;
	if (csum(buf, r->len) != r->pcsum)
		goto bad;
	return 0;
bad:
	sd_err("bad payload at offset %" PRIu64 " of %s", r->off,
	       st.log_path);
	return -1;
}

/* the payload of @r in a new buffer, or NULL */
static void *rec_payload(const struct rec *r)
{
	void *buf = xmalloc(MAX((size_t)r->len, (size_t)1));

	if (rec_payload_into(r, buf)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* one record to append */
struct rec_out {
	uint16_t type;
	uint16_t flags;
	uint64_t subject;
	uint64_t mver;
	const struct sd_node *node;
	const void *payload;
	size_t len;
};

/*
 * Append the @n records @o with one write and one commit of the log's
 * end: all of them or none.  A run (REC_F_MORE) cut short would stay open
 * in every reader, its accepts or leaves held back until some unrelated
 * record came.  The caller holds the exclusive lock.
 */
static int append_recs_locked(const struct rec_out *o, size_t n)
{
	struct log_hdr h;
	uint8_t tail[16], *buf;
	size_t total = 0, off = 0;
	int ret = -1;

	sd_assert(n >= 1);
	for (size_t i = 0; i < n; i++) {
		if (o[i].len > REC_MAX_PAYLOAD)
			return -1;
		total += REC_HDR_SIZE + o[i].len;
	}
	if (log_hdr_read(&h) != 0)
		return -1;
	if (h.gen != st.gen) {
		sd_err("%s was reset by someone else", st.log_path);
		st.broken = true;
		return -1;
	}
	buf = xmalloc(total);
	for (size_t i = 0; i < n; i++) {
		struct rec r = {
			.type = o[i].type, .flags = o[i].flags,
			.len = (uint32_t)o[i].len, .seq = h.nr + i,
			.writer = st.token, .subject = o[i].subject,
			.mver = o[i].mver, .node = *o[i].node,
			.pcsum = csum(o[i].payload, o[i].len),
		};

		rec_encode(&r, buf + off);
		if (o[i].len)
			memcpy(buf + off + REC_HDR_SIZE, o[i].payload,
			       o[i].len);
		off += REC_HDR_SIZE + o[i].len;
	}
	/* one write; a torn one stays beyond the end and is overwritten */
	if (xpwrite(st.log_fd, buf, total, (off_t)h.end) < 0) {
		sd_err("append to %s: %m", st.log_path);
		goto out;
	}
	put64(tail, h.end + total);
	put64(tail + 8, h.nr + n);
	if (xpwrite(st.log_fd, tail, sizeof(tail), LOG_OFF_END) < 0) {
		sd_err("commit to %s: %m", st.log_path);
		goto out;
	}
	ret = 0;
out:
	free(buf);
	return ret;
}

/* append one record; the caller holds the exclusive lock */
static int append_locked(uint16_t type, uint16_t flags, uint64_t subject,
			 const struct sd_node *node, uint64_t mver,
			 const void *payload, size_t len)
{
	struct rec_out o = {
		.type = type, .flags = flags, .subject = subject,
		.mver = mver, .node = node, .payload = payload, .len = len,
	};

	return append_recs_locked(&o, 1);
}

static void kick(void)
{
	if (st.started && st.loop)
		timer_add(st.loop, &st.kick_timer, 0);
}

static int append(uint16_t type, uint64_t subject, const struct sd_node *node,
		  const void *payload, size_t len)
{
	int ret;

	if (st.broken || log_lock(LOCK_EX) < 0)
		return -1;
	ret = append_locked(type, 0, subject, node, 0, payload, len);
	log_unlock();
	kick();
	return ret;
}

/*
 * Look through the part of the log we have not processed yet for a record
 * that @match accepts.  Caller holds the exclusive lock.  1 found, 0 not,
 * -1 error.
 */
static int scan_ahead(bool (*match)(const struct rec *r, const void *arg),
		      const void *arg)
{
	struct log_hdr h;
	uint64_t off = st.pos;

	if (log_hdr_read(&h) != 0 || h.gen != st.gen || h.end < off)
		return -1;
	while (off < h.end) {
		struct rec r;

		if (rec_read(off, h.end, &r) < 0)
			return -1;
		if (match(&r, arg))
			return 1;
		off = r.next;
	}
	return 0;
}

static bool match_leave(const struct rec *r, const void *arg)
{
	return r->type == REC_LEAVE && r->subject == *(const uint64_t *)arg;
}

struct accept_key {
	uint64_t token;
	uint64_t mver;
};

static bool match_decided(const struct rec *r, const void *arg)
{
	const struct accept_key *k = arg;

	if (r->subject != k->token)
		return false;
	return r->type == REC_LEAVE ||
	       (r->type == REC_ACCEPT && r->mver == k->mver);
}

/* ------------------------------------------------------------------ */
/* state derived from the log */

static struct member *find_member(uint64_t token)
{
	for (size_t i = 0; i < st.nr_members; i++)
		if (st.members[i].token == token)
			return &st.members[i];
	return NULL;
}

static bool nid_is_member(const struct sd_node *n)
{
	for (size_t i = 0; i < st.nr_members; i++)
		if (node_id_eq(&st.members[i].node.nid, &n->nid))
			return true;
	return false;
}

static struct pending_join *find_pending(uint64_t token)
{
	for (size_t i = 0; i < st.nr_pend; i++)
		if (st.pend[i].token == token)
			return &st.pend[i];
	return NULL;
}

static int member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int r = node_cmp(&x->node, &y->node);

	if (r)
		return r;
	return x->token < y->token ? -1 : x->token > y->token;
}

static void member_add(uint64_t token, const struct sd_node *node,
		       uint16_t caps)
{
	st.members = grow(st.members, &st.cap_members, st.nr_members + 1,
			  sizeof(*st.members));
	st.members[st.nr_members++] = (struct member){
		.token = token, .node = *node, .caps = caps,
	};
	qsort(st.members, st.nr_members, sizeof(*st.members), member_cmp);
}

static void member_del(struct member *m)
{
	size_t i = (size_t)(m - st.members);

	memmove(m, m + 1, (st.nr_members - i - 1) * sizeof(*m));
	st.nr_members--;
}

static void pending_del(struct pending_join *p)
{
	size_t i = (size_t)(p - st.pend);

	memmove(p, p + 1, (st.nr_pend - i - 1) * sizeof(*p));
	st.nr_pend--;
}

static void blocks_drop(uint64_t token, bool first_only)
{
	size_t j = 0;
	bool done = false;

	for (size_t i = 0; i < st.nr_blks; i++) {
		if (!done && st.blks[i].token == token) {
			done = first_only;
			continue;
		}
		st.blks[j++] = st.blks[i];
	}
	st.nr_blks = j;
}

/* a copy of the member list, for a callback that may re-enter us */
static struct sd_node *members_copy(size_t *nr)
{
	struct sd_node *n = xmalloc(MAX(st.nr_members, (size_t)1) *
				    sizeof(*n));

	for (size_t i = 0; i < st.nr_members; i++)
		n[i] = st.members[i].node;
	*nr = st.nr_members;
	return n;
}

/* ------------------------------------------------------------------ */
/* applying records */

static void on_join(const struct rec *r)
{
	if (find_member(r->subject) || find_pending(r->subject))
		return;
	st.pend = grow(st.pend, &st.cap_pend, st.nr_pend + 1,
		       sizeof(*st.pend));
	st.pend[st.nr_pend++] = (struct pending_join){
		.token = r->subject, .node = r->node, .off = r->off,
		.caps = r->flags & REC_F_RUNS, .read_at = now_msec(),
	};
	if (st.joined)
		sd_info("%s asks to join", nstr(&r->node));
}

/* deliver the run of accepts read so far, if any: one epoch in sheep */
static void accept_flush(void)
{
	struct came *c = st.came;
	size_t n = st.nr_came, nr;
	struct sd_node *nodes;

	if (!n)
		return;
	st.came = NULL;
	st.nr_came = st.cap_came = 0;
	nodes = members_copy(&nr);
	for (size_t i = 0; i < n; i++) {
		sd_info("%s joined%s, %zu members", nstr(&c[i].node),
			n > 1 ? " (with others, one epoch)" : "", nr);
		handlers->accept(&c[i].node, nodes, nr, c[i].opaque, c[i].len,
				 i + 1 < n);
		free(c[i].opaque);
	}
	free(nodes);
	free(c);
}

/*
 * An ACCEPT counts if it was decided at our mver and its joiner is still
 * pending; one that continues a run (the record before was an ACCEPT with
 * MORE) counts only if every one before it in the run did, as it was
 * judged with them as members.  Accept callbacks wait for the run's end.
 */
static int on_accept(const struct rec *r)
{
	struct pending_join *p = find_pending(r->subject);
	bool cont = st.in_accept_run;
	struct sd_node node;
	uint16_t caps;
	void *opaque;

	st.in_accept_run = r->flags & REC_F_MORE;
	if (!cont)
		st.accept_run_stale = false;
	if (!p || r->mver != st.mver || nid_is_member(&p->node) ||
	    (cont && st.accept_run_stale)) {
		sd_debug("stale accept of %s", nstr(&r->node));
		st.accept_run_stale = true;
		goto out;
	}
	node = p->node;
	caps = p->caps;
	member_add(p->token, &node, caps);
	pending_del(p);
	st.mver++;
	if (r->subject == st.token) {
		st.joined = true;
		sd_info("joined the cluster at %s as %s", st.dir, nstr(&node));
	}
	if (!st.joined)
		goto out;
	opaque = rec_payload(r);
	if (!opaque)
		return -1;
	st.came = grow(st.came, &st.cap_came, st.nr_came + 1,
		       sizeof(*st.came));
	st.came[st.nr_came++] = (struct came){
		.node = node, .opaque = opaque, .len = r->len,
	};
out:
	if (!st.in_accept_run)
		accept_flush();
	return 0;
}

/*
 * sheep's orderly exit (pid file removal); weak, so that test programs
 * that drive this file alone need not have one
 */
void sheep_exit(int code) __attribute__((weak));

static void refused_exit(void)
{
	/* sheep's does not return; a test program's stub may */
	if (sheep_exit)
		sheep_exit(1);
	else
		exit(1);
}

/* deliver the run of leaves read so far, if any, as one */
static void leave_flush(void)
{
	struct sd_node *gone = st.gone, *nodes;
	size_t nr_gone = st.nr_gone, nr;

	if (!nr_gone)
		return;
	st.gone = NULL;
	st.nr_gone = st.cap_gone = 0;
	nodes_sort(gone, nr_gone);
	nodes = members_copy(&nr);
	handlers->leave(gone, nr_gone, nodes, nr);
	free(nodes);
	free(gone);
}

static void leave_one(const struct rec *r)
{
	struct member *m = find_member(r->subject);
	struct pending_join *p;
	struct sd_node node;

	if (!m) {
		p = find_pending(r->subject);
		if (!p)
			return;
		if (st.joined)
			sd_info("join of %s dropped%s", nstr(&p->node),
				r->flags & REC_F_REJECTED ? " (refused)" : "");
		if (r->subject == st.token &&
		    (r->flags & REC_F_REJECTED)) {
			/* as the corosync driver: a refused sheep stops */
			sd_emerg("our join was refused");
			refused_exit();
		}
		if (r->subject == st.token)
			sd_err("our join was dropped");
		pending_del(p);
		return;
	}
	node = m->node;
	member_del(m);
	blocks_drop(r->subject, false);
	st.mver++;
	if (r->subject == st.token) {
		st.left = true;
		st.holding = 0;
	}
	if (!st.joined)
		return;
	sd_info("%s left, %zu members", nstr(&node), st.nr_members);
	st.gone = grow(st.gone, &st.cap_gone, st.nr_gone + 1,
		       sizeof(*st.gone));
	st.gone[st.nr_gone++] = node;
}

static void on_leave(const struct rec *r)
{
	leave_one(r);
	if (!(r->flags & REC_F_MORE))
		leave_flush();
}

static int on_message(const struct rec *r)
{
	void *msg;

	if (r->type == REC_UNBLOCK)
		blocks_drop(r->subject, true);
	if (!st.joined)
		return 0;
	msg = rec_payload(r);
	if (!msg)
		return -1;
	handlers->notify(&r->node, msg, r->len);
	free(msg);
	return 0;
}

static void on_block(const struct rec *r)
{
	if (!find_member(r->subject))
		return;
	st.blks = grow(st.blks, &st.cap_blks, st.nr_blks + 1,
		       sizeof(*st.blks));
	st.blks[st.nr_blks++] = (struct block_req){ .token = r->subject };
}

static int apply(const struct rec *r)
{
	/* a run of LEAVEs, or of ACCEPTs, ends at any other record */
	if (r->type != REC_LEAVE)
		leave_flush();
	if (r->type != REC_ACCEPT) {
		st.in_accept_run = false;
		accept_flush();
	}
	switch (r->type) {
	case REC_JOIN:
		on_join(r);
		return 0;
	case REC_ACCEPT:
		return on_accept(r);
	case REC_LEAVE:
		on_leave(r);
		return 0;
	case REC_NOTIFY:
	case REC_UNBLOCK:
		return on_message(r);
	case REC_BLOCK:
		on_block(r);
		return 0;
	default:
		sd_err("unknown record type %u at offset %" PRIu64 ", skipped",
		       r->type, r->off);
		return 0;
	}
}

/* ------------------------------------------------------------------ */
/* actions that follow from the state: grants, join decisions, leaves */

static void check_grant(void)
{
	if (!st.joined || !st.nr_blks || st.blks[0].token != st.token ||
	    st.blks[0].granted)
		return;
	st.blks[0].granted = true;
	st.holding++;
	handlers->block(&st.me);
}

/* the bookkeeping once @token's LEAVE is in the log */
static void dead_reported(uint64_t token, const struct sd_node *node)
{
	struct member *m;
	struct pending_join *p;
	char *path;

	sd_info("%s is gone", nstr(node));
	path = live_path(token);
	if (path)
		unlink(path);
	free(path);
	m = find_member(token);
	if (m)
		m->leave_sent = true;
	p = find_pending(token);
	if (p)
		p->leave_sent = true;
}

/* do every member and pending joiner read runs (REC_F_MORE)? */
static bool group_reads_runs(void)
{
	for (size_t i = 0; i < st.nr_members; i++)
		if (!(st.members[i].caps & REC_F_RUNS))
			return false;
	for (size_t i = 0; i < st.nr_pend; i++)
		if (!(st.pend[i].caps & REC_F_RUNS))
			return false;
	return true;
}

/*
 * Record that the @nr processes @tokens are gone: the LEAVEs not on the
 * way yet, appended as one run (REC_F_MORE on all but the last).
 */
static void report_dead_set(const uint64_t *tokens,
			    const struct sd_node *nodes, size_t nr)
{
	int *found = xzalloc((nr + 1) * sizeof(*found));
	struct rec_out *o = xzalloc((nr + 1) * sizeof(*o));
	size_t i, k = 0, last = nr;
	bool ok;
	/* an older release would take each LEAVE as its own epoch */
	bool runs = group_reads_runs();

	if (log_lock(LOCK_EX) < 0) {
		free(found);
		free(o);
		return;
	}
	for (i = 0; i < nr; i++) {
		found[i] = scan_ahead(match_leave, &tokens[i]);
		if (found[i] == 0)
			last = i;
	}
	for (i = 0; i < nr; i++) {
		if (found[i] != 0)
			continue;
		o[k++] = (struct rec_out){
			.type = REC_LEAVE,
			.flags = i < last && runs ? REC_F_MORE : 0,
			.subject = tokens[i], .node = &nodes[i],
		};
	}
	/* all or none; on failure the next probe round tries again */
	ok = !k || append_recs_locked(o, k) == 0;
	for (i = 0; i < nr; i++)
		if (found[i] == 0)
			found[i] = ok ? 1 : -1;
	log_unlock();
	for (i = 0; i < nr; i++)
		if (found[i] > 0)
			dead_reported(tokens[i], &nodes[i]);
	free(found);
	free(o);
	kick();
}

/* record that @token is gone: append its LEAVE unless one is on the way */
static void report_dead(uint64_t token, const struct sd_node *node)
{
	report_dead_set(&token, node, 1);
}

static bool is_decider(const struct pending_join *p)
{
	if (!st.nr_members)
		return p->token == st.token;
	return st.members[0].token == st.token;
}

enum verdict { V_NONE, V_ACCEPTED, V_REFUSED, V_JOINER_DEAD, V_ERROR };

/*
 * Append the refusal of a join unless the unread log already settles it;
 * a joiner that died meanwhile gets a plain LEAVE.
 */
static enum verdict commit_refusal(const struct accept_key *key,
				   const struct sd_node *node)
{
	enum verdict v = V_REFUSED;
	uint16_t flags = REC_F_REJECTED;
	int r;

	if (log_lock(LOCK_EX) < 0)
		return V_ERROR;
	r = scan_ahead(match_decided, key);
	if (r != 0) {
		v = r > 0 ? V_NONE : V_ERROR;
		goto out;
	}
	if (key->token != st.token && token_alive(key->token) == 0) {
		flags = 0;
		v = V_JOINER_DEAD;
	}
	if (append_locked(REC_LEAVE, flags, key->token, node, 0, NULL, 0))
		v = V_ERROR;
out:
	log_unlock();
	return v;
}

/* a joiner judged acceptable, with the handler's answer */
struct judged {
	void *opaque;
	size_t len;
};

/*
 * Append the accepts of the @k joiners @b, judged at mver @mver, as one
 * run unless the unread log already settles the first.  Liveness is
 * checked under the lock: the run stops before the first joiner that died
 * while we judged it (*dead: its index, or @k), whose LEAVE the caller
 * appends; if that is the first, it gets its LEAVE here.
 */
static enum verdict commit_run(const struct pending_join *b,
			       const struct judged *e, size_t k,
			       uint64_t mver, size_t *dead)
{
	struct accept_key key = { .token = b[0].token, .mver = mver };
	struct rec_out o[RUN_MAX];
	enum verdict v = V_ACCEPTED;
	size_t n;
	int r;

	sd_assert(k >= 1 && k <= RUN_MAX);
	*dead = k;
	if (log_lock(LOCK_EX) < 0)
		return V_ERROR;
	r = scan_ahead(match_decided, &key);
	if (r != 0) {
		v = r > 0 ? V_NONE : V_ERROR;
		goto out;
	}
	for (n = 0; n < k; n++)
		if (b[n].token != st.token && token_alive(b[n].token) == 0)
			break;
	if (!n) {
		v = V_JOINER_DEAD;
		if (append_locked(REC_LEAVE, 0, b[0].token, &b[0].node, 0,
				  NULL, 0))
			v = V_ERROR;
		goto out;
	}
	*dead = n;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct rec_out){
			.type = REC_ACCEPT,
			.flags = i + 1 < n ? REC_F_MORE : 0,
			.subject = b[i].token, .mver = mver + i,
			.node = &b[i].node, .payload = e[i].opaque,
			.len = e[i].len,
		};
	if (append_recs_locked(o, n))
		v = V_ERROR;	/* none landed: decided again next round */
	else if (n > 1)
		sd_info("accepted the joins of %zu processes at once, the "
			"first %s", n, nstr(&b[0].node));
	else
		sd_info("accepted the join of %s", nstr(&b[0].node));
out:
	log_unlock();
	return v;
}

/*
 * A join's payload, which the join handler may grow up to the largest
 * message: decisions are made one at a time, from the main loop.
 */
static uint8_t join_buf[SD_MAX_EVENT_BUF_SIZE];

enum judgement { J_OK, J_REFUSED, J_DEAD, J_BROKEN };

/* ask the join handler about @p, against the @nr @nodes */
static enum judgement judge(const struct pending_join *p,
			    const struct sd_node *nodes, size_t nr,
			    struct judged *e)
{
	struct rec r;
	size_t len;

	if (p->token != st.token && token_alive(p->token) == 0)
		return J_DEAD;
	if (rec_read(p->off, p->off + REC_HDR_SIZE + REC_MAX_PAYLOAD, &r) <
		    0 || r.type != REC_JOIN || r.subject != p->token ||
	    rec_payload_into(&r, join_buf))
		return J_BROKEN;
	len = r.len;
	if (!handlers->join(&p->node, nodes, nr, join_buf, &len,
			    SD_MAX_EVENT_BUF_SIZE))
		return J_REFUSED;
	if (len > SD_MAX_EVENT_BUF_SIZE) {
		sd_err("join handler returned %zu bytes", len);
		return J_REFUSED;
	}
	e->opaque = xmalloc(MAX(len, (size_t)1));
	memcpy(e->opaque, join_buf, len);
	e->len = len;
	return J_OK;
}

/*
 * Decide the @n pending joins @b (distinct nodes, in log order): each is
 * judged against the members and the joiners before it, as one at a time
 * would be; the first refused (or dead) ends the run, to be decided on
 * its own next.  One accepted or more: a run of ACCEPTs, so one epoch.
 */
static void decide(const struct pending_join *b, size_t n)
{
	struct judged e[RUN_MAX] = { { 0 } };
	uint64_t mver = st.mver;
	enum judgement j = J_OK;
	enum verdict v;
	size_t k, nr, dead = n;
	struct sd_node *nodes = xmalloc((st.nr_members + n + 1) *
					sizeof(*nodes));

	sd_assert(n >= 1 && n <= RUN_MAX);
	/* never on a view the daemon has not been told of */
	sd_assert(!st.nr_came && !st.nr_gone);
	for (nr = 0; nr < st.nr_members; nr++)
		nodes[nr] = st.members[nr].node;
	for (k = 0; k < n; k++) {
		j = judge(&b[k], nodes, nr, &e[k]);
		if (j != J_OK)
			break;
		nodes[nr++] = b[k].node;
		nodes_sort(nodes, nr);
	}
	if (j == J_BROKEN) {
		st.broken = true;
		v = V_ERROR;
	} else if (k) {
		v = commit_run(b, e, k, mver, &dead);
	} else if (j == J_REFUSED) {
		struct accept_key key = { .token = b[0].token, .mver = mver };

		v = commit_refusal(&key, &b[0].node);
		if (v == V_REFUSED)
			sd_info("refused the join of %s", nstr(&b[0].node));
	} else {
		v = V_JOINER_DEAD;	/* J_DEAD */
	}
	for (size_t i = 0; i < k; i++)
		free(e[i].opaque);
	free(nodes);
	if (v == V_ERROR)
		return;		/* retried on the next probe round */
	/* finds the LEAVE on its way, or appends it; cleans up */
	if (v == V_JOINER_DEAD)
		report_dead(b[0].token, &b[0].node);
	else if (dead < k)
		report_dead(b[dead].token, &b[dead].node);
	for (size_t i = 0; i < MAX(k, (size_t)1); i++) {
		struct pending_join *p = find_pending(b[i].token);

		if (p) {
			p->decided = true;
			p->decided_mver = mver;
		}
	}
	kick();
}

/* is any live process neither a member nor a pending joiner (yet)? */
static bool joiner_on_the_way(void)
{
	struct dirent *de;
	bool found = false;
	DIR *d = opendir(st.live_dir);

	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		char *end;
		uint64_t t;

		if (strlen(de->d_name) != 16)
			continue;	/* ".", "..", a file being made */
		errno = 0;
		t = strtoull(de->d_name, &end, 16);
		if (*end || errno || t == st.token || find_member(t) ||
		    find_pending(t))
			continue;
		found = token_alive(t) == 1;
	}
	closedir(d);
	return found;
}

/*
 * Do more joins seem to be on their way to join the run @b: a process
 * that is in the live directory has not appended its JOIN yet (a sheep
 * makes its live file at start, before it asks to join)?  At most
 * JOIN_SETTLE_MAX_MS after we read the oldest JOIN of the run.
 */
static bool joins_coming(const struct pending_join *b, size_t n)
{
	uint64_t oldest = UINT64_MAX;

	for (size_t i = 0; i < n; i++)
		oldest = MIN(oldest, b[i].read_at);
	if (now_msec() >= oldest + JOIN_SETTLE_MAX_MS)
		return false;
	return joiner_on_the_way();
}

/* is @p's node none of the @n in @b? */
static bool run_takes(const struct pending_join *p,
		      const struct pending_join *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (node_id_eq(&b[i].node.nid, &p->node.nid))
			return false;
	return true;
}

/*
 * Decide the pending joins that are ours to decide: one at a time, or,
 * where everyone reads runs and the daemon takes joins together (a
 * running cluster), all of them in one run once no more seem to come.
 * The next decision is made against a membership that includes these.
 */
static void decide_joins(void)
{
	struct pending_join b[RUN_MAX];
	bool runs = group_reads_runs() &&
		    (!handlers->joins_together || handlers->joins_together());
	size_t n = 0;

	for (size_t i = 0; i < st.nr_pend && !st.broken && n < RUN_MAX; i++) {
		struct pending_join p = st.pend[i];

		if (!is_decider(&p) || p.leave_sent)
			continue;
		if (p.decided && p.decided_mver == st.mver)
			return;		/* in flight */
		/* a restarted node waits for its old self to be gone */
		if (nid_is_member(&p.node))
			continue;
		if (n && !run_takes(&p, b, n))
			continue;
		b[n++] = p;
		if (!runs)
			break;
	}
	/* else decided when the JOIN comes, or on a later probe round */
	if (!n || (runs && joins_coming(b, n)))
		return;
	decide(b, n);
}

/*
 * Members and pending joiners whose live file is no longer locked: all of
 * them in one run, on the first probe that finds no more than the one
 * before it (or after SETTLE_ROUNDS_MAX rounds of deaths still coming).
 */
static void probe_all(void)
{
	size_t cap = st.nr_members + st.nr_pend + 1, nr = 0;
	uint64_t *tokens = xzalloc(cap * sizeof(*tokens));
	struct sd_node *nodes = xzalloc(cap * sizeof(*nodes));

	for (size_t i = 0; i < st.nr_members && !st.broken; i++) {
		struct member *m = &st.members[i];

		if (m->token != st.token && !m->leave_sent &&
		    token_alive(m->token) == 0) {
			tokens[nr] = m->token;
			nodes[nr++] = m->node;
		}
	}
	for (size_t i = 0; i < st.nr_pend && !st.broken; i++) {
		struct pending_join *p = &st.pend[i];

		if (p->token != st.token && !p->leave_sent &&
		    token_alive(p->token) == 0) {
			tokens[nr] = p->token;
			nodes[nr++] = p->node;
		}
	}
	if (nr > st.nr_dead_seen && st.settle_rounds < SETTLE_ROUNDS_MAX) {
		/* new deaths this round: more may be on their way */
		st.nr_dead_seen = nr;
		st.settle_rounds++;
	} else {
		if (nr)
			report_dead_set(tokens, nodes, nr);
		st.nr_dead_seen = 0;
		st.settle_rounds = 0;
	}
	free(tokens);
	free(nodes);
}

/* ------------------------------------------------------------------ */
/* reading the log */

static void after_record(void)
{
	/*
	 * Inside a run of LEAVEs (or ACCEPTs) the daemon has not been told of
	 * them yet:
	 * no grant and no join decision on a view it does not share.  The
	 * record that ends the run comes back here.
	 */
	if (st.nr_gone || st.nr_came)
		return;
	check_grant();
	decide_joins();
}

/* process up to BATCH_RECORDS new records; never recurses */
static void process_log(void)
{
	struct log_hdr h;
	int n = 0;

	if (!st.started || st.broken || st.dispatching)
		return;
	st.dispatching = true;
	if (log_hdr_read_shared(&h) != 0)
		goto broken;
	if (h.gen != st.gen || h.end < st.pos) {
		sd_err("%s was reset under us", st.log_path);
		goto broken;
	}
	st.seen_end = h.end;
	while (st.pos < h.end && n++ < BATCH_RECORDS) {
		struct rec r;

		if (rec_read(st.pos, h.end, &r) < 0 || r.seq != st.seq)
			goto broken;
		st.pos = r.next;
		st.seq++;
		if (apply(&r) < 0)
			goto broken;
		/* accepts are held back only while their run is open */
		sd_assert(!st.nr_came || st.in_accept_run);
		after_record();
		if (st.broken)
			goto broken;
	}
	if (st.pos < h.end)
		timer_add(st.loop, &st.kick_timer, 0);
	st.dispatching = false;
	return;
broken:
	sd_err("cannot follow %s any more; cluster events stop here",
	       st.log_path);
	st.broken = true;
	st.dispatching = false;
}

static void kick_fn(struct timer *t)
{
	process_log();
}

static void probe_fn(struct timer *t)
{
	process_log();
	if (st.started && !st.broken && !st.dispatching) {
		/* files of processes that left cleanly pile up otherwise */
		if (++st.nr_probes % SWEEP_EVERY == 0)
			others_alive(true);
		/* while replaying, the members we know of are history */
		if (st.pos >= st.seen_end)
			probe_all();
		st.dispatching = true;
		if (!st.nr_gone && !st.nr_came)	/* as after_record() */
			decide_joins();
		st.dispatching = false;
	}
	timer_add(st.loop, &st.probe_timer,
		  st.ino_fd >= 0 ? PROBE_MS : POLL_MS_NO_INOTIFY);
}

static void inotify_fn(int fd, uint32_t events, void *data)
{
	char buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	process_log();
}

/* ------------------------------------------------------------------ */
/* the driver interface */

static void local_cleanup(void)
{
	if (st.ino_fd >= 0) {
		if (st.loop)
			event_del(st.loop, st.ino_fd);
		close(st.ino_fd);
	}
	if (st.live_fd >= 0)
		close(st.live_fd);
	if (st.log_fd >= 0)
		close(st.log_fd);
	st.ino_fd = st.live_fd = st.log_fd = -1;
	free(st.dir);
	free(st.log_path);
	free(st.live_dir);
	st.dir = st.log_path = st.live_dir = NULL;
}

static int open_dirs(const char *path)
{
	struct stat s;

	st.dir = xstrdup(path);
	if (asprintf(&st.log_path, "%s/log", path) < 0 ||
	    asprintf(&st.live_dir, "%s/live", path) < 0) {
		st.log_path = st.live_dir = NULL;
		return -1;
	}
	if ((mkdir_p(st.live_dir) < 0 && errno != EEXIST) ||
	    stat(st.live_dir, &s) < 0 || !S_ISDIR(s.st_mode)) {
		sd_err("cannot use %s as the local cluster directory: %m",
		       path);
		return -1;
	}
	return 0;
}

static void watch_log(void)
{
	st.ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (st.ino_fd < 0)
		goto fail;
	if (inotify_add_watch(st.ino_fd, st.log_path, IN_MODIFY) < 0 ||
	    event_add(st.loop, st.ino_fd, EPOLLIN, inotify_fn, NULL) < 0) {
		close(st.ino_fd);
		st.ino_fd = -1;
		goto fail;
	}
	return;
fail:
	sd_err("inotify on %s: %m; polling every %d ms", st.log_path,
	       POLL_MS_NO_INOTIFY);
}

static int local_init(const char *option, struct event_loop *loop,
		      const struct cluster_handlers *h)
{
	const char *path = option && *option ? option : LOCAL_DEFAULT_PATH;

	if (st.inited || !loop)
		return -1;
	st.loop = loop;
	handlers = h;
	if (open_dirs(path) < 0)
		goto fail;
	st.log_fd = open(st.log_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (st.log_fd < 0) {
		sd_err("open %s: %m", st.log_path);
		goto fail;
	}
	if (live_create() < 0) {
		sd_err("cannot create a liveness file in %s", st.live_dir);
		goto fail;
	}
	watch_log();
	st.probe_timer.fn = probe_fn;
	st.kick_timer.fn = kick_fn;
	st.inited = true;
	sd_info("local driver at %s, token %016" PRIx64, path, st.token);
	return 0;
fail:
	local_cleanup();
	st.loop = NULL;
	return -1;
}

/* under the exclusive lock: start a fresh log if nobody else is alive */
static int prepare_log(void)
{
	struct log_hdr h;
	int r = log_hdr_read(&h);

	if (r < 0)
		return -1;
	/*
	 * Whoever joined wrote a header first, so nobody reads a log without
	 * one: an empty (or foreign) file is ours to initialise.
	 */
	if (others_alive(false) && r != 1) {
		if (r == 0)
			goto done;
		sd_err("%s has another format version and is in use",
		       st.log_path);
		return -1;
	}
	others_alive(true);	/* removes only the files of dead ones */
	if (log_reset() < 0 || log_hdr_read(&h) != 0)
		return -1;
	sd_info("started a new cluster log at %s", st.log_path);
done:
	st.gen = h.gen;
	return 0;
}

static int local_join(const struct sd_node *myself, const void *opaque,
		      size_t len)
{
	int ret;

	if (!st.inited || st.started)
		return -1;
	if (len > SD_MAX_EVENT_BUF_SIZE) {
		sd_warn("join payload of %zu bytes truncated to %d", len,
			SD_MAX_EVENT_BUF_SIZE);
		len = SD_MAX_EVENT_BUF_SIZE;
	}
	st.me = *myself;
	if (log_lock(LOCK_EX) < 0)
		return -1;
	ret = prepare_log();
	if (!ret)
		ret = append_locked(REC_JOIN, MY_CAPS, st.token, &st.me, 0,
				    opaque, len);
	log_unlock();
	if (ret)
		return -1;
	st.pos = LOG_HDR_SIZE;
	st.seq = 0;
	st.started = true;
	sd_info("%s asks to join the cluster at %s", nstr(&st.me), st.dir);
	timer_add(st.loop, &st.probe_timer, PROBE_MS);
	kick();
	return 0;
}

static int local_leave(void)
{
	if (!st.started || st.leave_called)
		return -1;
	st.leave_called = true;
	sd_info("leaving the cluster");
	return append(REC_LEAVE, st.token, &st.me, NULL, 0);
}

static int check_len(size_t len)
{
	if (len <= REC_MAX_PAYLOAD)
		return 0;
	sd_err("message of %zu bytes is too large", len);
	return -1;
}

static int local_notify(const void *msg, size_t len)
{
	if (!st.joined || check_len(len))
		return -1;
	return append(REC_NOTIFY, st.token, &st.me, msg, len);
}

static int local_block(void)
{
	if (!st.joined || st.left || st.leave_called)
		return -1;
	return append(REC_BLOCK, st.token, &st.me, NULL, 0);
}

static int local_unblock(const void *msg, size_t len)
{
	if (check_len(len))
		return -1;
	if (st.holding <= 0) {
		sd_err("unblock without a granted block");
		return -1;
	}
	if (append(REC_UNBLOCK, st.token, &st.me, msg, len) < 0)
		return -1;
	st.holding--;
	return 0;
}

struct cluster_driver cdrv_local = {
	.name = "local",
	.init = local_init,
	.join = local_join,
	.leave = local_leave,
	.notify = local_notify,
	.block = local_block,
	.unblock = local_unblock,
};
