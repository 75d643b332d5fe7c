// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Buckets and their objects in the cluster (s3_bucket.h).
 *
 * A bucket's index volume holds a kvtree: "o/KEY" names an object's entry
 * (below), "m/next" the end of what the owner has given out of the data
 * volume.  A PUT's bytes are written into room reserved at the end and
 * only then is the entry committed, so a reader sees the old entry or the
 * new one, and an entry never names bytes not yet written.  Room is
 * never given out twice: what entries stop naming (an overwrite, a
 * delete, an abort) and what a PUT reserved and never committed is
 * counted by s3_space.c and dropped, a chunk at a time, after the grace
 * period (the reclaimer below).  A read that meets a dropped chunk fails
 * rather than serve zeros (s3b_read).
 *
 * The owner keeps the bucket's tree open and changes it under the
 * bucket's lock; another gateway opens the tree afresh for each read.
 */
#include <inttypes.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "s3req.h"
#include "util.h"
#include "front/exec.h"
#include "front/s3_bucket.h"
#include "front/s3_reg.h"
#include "front/s3_space.h"
#include "front/s3_vols.h"
#include "vdi/volume.h"

#define ENTRY_HEAD	48
#define ENTRY_VERSION	1
#define ENTRY_INLINE	1
#define ENTRY_SUM_SHIFT	4	/* the upper half of the flags: sum_algo */
#define INDEX_SIZE	((uint64_t)KVT_MAX_PAGES * KVT_PAGE)
#define USAGE_KEY	"m/usage"	/* see usage_change */
#define ALIGN		SPACE_ALIGN
/* reservations in flight in one bucket: one per request, S3_WORKERS */
#define MAX_INFLIGHT	64
/* chunks one reclaim step drops */
#define DROP_BATCH	64
#define READ_TRIES	3

struct s3_bucket {
	struct s3_bucket *next;		/* in the cache */
	int refs;
	struct s3_bucket_rec rec;
	uint32_t index_vid;
	struct s3_vols data;		/* its data volumes */
	bool owner;
	pthread_mutex_t lock;		/* the owner's tree and next */
	struct vol_pages pages;
	struct vol_named index_named;	/* the owner's */
	struct kvt_store store;
	struct kvtree *t;		/* the owner's */
	uint64_t next_off;
	bool gone;			/* deleted: no commit any more */
	struct space_change chg;	/* the changes' room, under lock */
	/*
	 * Group commit: changes applied to t wait, each on its stack, for
	 * the commit that makes them durable; one commit serves every change
	 * applied before it (owner_change)
	 */
	struct commit_wait *waiters;
	uint64_t applied;		/* changes applied so far */
	int arriving;			/* changers waiting for the lock */
	pthread_cond_t committed;
	/* room reserved by requests not done yet: never swept */
	struct {
		uint64_t off;
		pthread_t by;
	} inflight[MAX_INFLIGHT];
	int nr_inflight;
};

/* this gateway, as the registry names a bucket's owner: endpoint, sheep
 * and life (drawn at start: a gateway that restarts owns nothing until
 * it moves its buckets to its new life) */
static char self_id[S3REG_NAME_LEN], self_node[S3REG_NAME_LEN];
static uint64_t self_boot;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct s3_bucket *cache;
/* seconds between a chunk's last byte unnamed and its drop */
static unsigned int s3_grace = S3_GRACE_DEFAULT;

/* ---- entries ---- */

static size_t entry_encode(const struct s3_obj *o, uint8_t *buf)
{
	uint8_t *p = buf + ENTRY_HEAD;

	memset(buf, 0, ENTRY_HEAD);
	buf[0] = ENTRY_VERSION;
	buf[1] = (uint8_t)((o->is_inline ? ENTRY_INLINE : 0) |
			   o->sum_algo << ENTRY_SUM_SHIFT);
	put_le16(buf + 2, o->ctype_len);
	put_le16(buf + 4, o->meta_len);
	put_le16(buf + 6, o->nr_parts);
	put_le64(buf + 8, o->size);
	put_le64(buf + 16, o->mtime);
	put_le64(buf + 24, o->off);
	memcpy(buf + 32, o->md5, 16);
	memcpy(p, o->ctype, o->ctype_len);
	p += o->ctype_len;
	memcpy(p, o->meta, o->meta_len);
	p += o->meta_len;
	if (o->is_inline) {
		memcpy(p, o->data, o->size);
		p += o->size;
	}
	return (size_t)(p - buf);
}

/* 0, or -2 for an entry that is not one */
static int entry_decode(const uint8_t *buf, size_t len, struct s3_obj *o)
{
	size_t want;

	if (len < ENTRY_HEAD || buf[0] != ENTRY_VERSION)
		return -2;
	o->is_inline = buf[1] & ENTRY_INLINE;
	o->sum_algo = buf[1] >> ENTRY_SUM_SHIFT;
	if (o->sum_algo >= S3_SUM_NR)
		return -2;
	o->ctype_len = get_le16(buf + 2);
	o->meta_len = get_le16(buf + 4);
	o->nr_parts = get_le16(buf + 6);
	o->size = get_le64(buf + 8);
	o->mtime = get_le64(buf + 16);
	o->off = get_le64(buf + 24);
	memcpy(o->md5, buf + 32, 16);
	if (o->ctype_len > S3_MAX_CTYPE || o->meta_len > S3_MAX_META ||
	    (o->is_inline && (o->size > S3_MAX_INLINE || o->nr_parts)) ||
	    o->nr_parts > S3_MAX_PARTS)
		return -2;
	want = ENTRY_HEAD + o->ctype_len + o->meta_len +
	       (o->is_inline ? (size_t)o->size : 0);
	if (len != want)
		return -2;
	buf += ENTRY_HEAD;
	memcpy(o->ctype, buf, o->ctype_len);
	buf += o->ctype_len;
	memcpy(o->meta, buf, o->meta_len);
	buf += o->meta_len;
	if (o->is_inline)
		memcpy(o->data, buf, o->size);
	return 0;
}

#define ENTRY_MAX	(ENTRY_HEAD + S3_MAX_CTYPE + S3_MAX_META + S3_MAX_INLINE)

/* "o/" and the key */
static size_t obj_key(char *out, const char *key, size_t klen)
{
	out[0] = 'o';
	out[1] = '/';
	memcpy(out + 2, key, klen);
	return klen + 2;
}

/* ---- the owner's tree ---- */

static int load_next(struct s3_bucket *b)
{
	uint8_t v[8];
	int n = kvt_get(b->t, "m/next", 6, v, sizeof(v));

	if (n == -1) {
		b->next_off = 0;
		return 0;
	}
	if (n != (int)sizeof(v))
		return -2;
	b->next_off = get_le64(v);
	return 0;
}

/* under b->lock: the owner's tree open, 0 or -2 */
static int owner_tree(struct s3_bucket *b)
{
	bool kept;

	if (b->gone)
		return -2;
	if (b->t)
		return 0;
	if (kvt_open(&b->store, &b->t)) {
		b->t = NULL;
		return -2;
	}
	if (load_next(b) || space_kept(b->t, &kept)) {
		kvt_close(b->t);
		b->t = NULL;
		return -2;
	}
	if (!kept)
		sd_warn("S3: bucket %s was written before its room was "
			"counted: what its objects stop naming is not "
			"reclaimed", b->rec.name);
	return 0;
}

/* a change applied and waiting for its commit */
struct commit_wait {
	uint64_t seq;
	int ret;
	bool done;
	struct commit_wait *next;
};

/* under b->lock: the changes up to @seq answered @ret */
static void owner_settle(struct s3_bucket *b, uint64_t seq, int ret)
{
	for (struct commit_wait **p = &b->waiters; *p;) {
		struct commit_wait *w = *p;

		if (w->seq > seq) {
			p = &w->next;
			continue;
		}
		w->ret = ret;
		w->done = true;
		*p = w->next;
	}
	pthread_cond_broadcast(&b->committed);
}

/*
 * A change or a commit that failed: the tree in the volume is the last
 * committed, and every change applied since is lost with this one
 */
static void owner_reset(struct s3_bucket *b)
{
	kvt_close(b->t);
	b->t = NULL;
	space_change_clear(&b->chg);
	owner_settle(b, UINT64_MAX, -2);
}

/* ---- the cache ---- */

static void bucket_free(struct s3_bucket *b)
{
	if (b->t)
		kvt_close(b->t);
	if (b->data.vid)
		s3v_close(&b->data);
	vol_named_free(&b->index_named);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->committed);
	free(b);
}

static struct s3_bucket *bucket_new(const struct s3_bucket_rec *rec)
{
	struct s3_bucket *b = xzalloc(sizeof(*b));

	b->rec = *rec;
	b->refs = 1;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->committed, NULL);
	b->owner = !strcmp(rec->gateway, self_id) && rec->boot == self_boot;
	if (s3v_lookup(rec->name, "index", &b->index_vid) ||
	    s3v_open(&b->data, rec->name)) {
		bucket_free(b);
		return NULL;
	}
	b->pages.vid = b->index_vid;
	b->pages.named = &b->index_named;
	vol_kvt_store(&b->pages, &b->store);
	return b;
}

static bool same_bucket(const struct s3_bucket_rec *a,
			const struct s3_bucket_rec *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->gateway, b->gateway) &&
	       a->created == b->created && !strcmp(a->user, b->user) &&
	       a->boot == b->boot && !strcmp(a->node, b->node);
}

/* under cache_lock: @b out of the cache, freed when unused */
static void uncache(struct s3_bucket *b)
{
	for (struct s3_bucket **p = &cache; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			if (!--b->refs)
				bucket_free(b);
			return;
		}
}

void s3b_set_self(const char *id, const char *node)
{
	snprintf(self_id, sizeof(self_id), "%s", id);
	snprintf(self_node, sizeof(self_node), "%s", node);
	while (!self_boot)
		if (getrandom(&self_boot, sizeof(self_boot), 0) !=
		    (ssize_t)sizeof(self_boot))
			self_boot = 0;
}

/* under cache_lock: the cached bucket of @rec, NULL if none (a stale
 * one, deleted and made again or moved, leaves the cache) */
static struct s3_bucket *cached(const struct s3_bucket_rec *rec)
{
	struct s3_bucket *b;

	for (b = cache; b; b = b->next)
		if (!strcmp(b->rec.name, rec->name))
			break;
	if (b && !same_bucket(&b->rec, rec)) {
		uncache(b);
		b = NULL;
	}
	return b;
}

int s3b_get(const char *name, struct s3_bucket **out)
{
	struct s3_bucket_rec rec;
	struct s3_bucket *b, *fresh;
	int ret = s3reg_find_bucket(name, &rec);

	if (ret)
		return ret;
	pthread_mutex_lock(&cache_lock);
	b = cached(&rec);
	if (!b) {
		/* its volumes are looked up without the lock (cluster I/O) */
		pthread_mutex_unlock(&cache_lock);
		fresh = bucket_new(&rec);
		if (!fresh)
			return -2;
		pthread_mutex_lock(&cache_lock);
		b = cached(&rec);	/* another thread's, meanwhile */
		if (b) {
			bucket_free(fresh);
		} else {
			b = fresh;
			b->next = cache;
			cache = b;
		}
	}
	b->refs++;
	pthread_mutex_unlock(&cache_lock);
	*out = b;
	return 0;
}

void s3b_put(struct s3_bucket *b)
{
	pthread_mutex_lock(&cache_lock);
	if (!--b->refs)
		bucket_free(b);
	pthread_mutex_unlock(&cache_lock);
}

bool s3b_is_owner(const struct s3_bucket *b)
{
	return b->owner;
}

const char *s3b_self(void)
{
	return self_id;
}

const char *s3b_self_node(void)
{
	return self_node;
}

const char *s3b_owner(const struct s3_bucket *b)
{
	return b->rec.gateway;
}

const char *s3b_user(const struct s3_bucket *b)
{
	return b->rec.user;
}

uint64_t s3b_created(const struct s3_bucket *b)
{
	return b->rec.created;
}

/* ---- reads ---- */

/*
 * @fn on the bucket's tree: the owner's under its lock, else one opened
 * for this read (tried again if a page it read was reused meanwhile)
 */
static int with_tree(struct s3_bucket *b,
		     int (*fn)(struct kvtree *t, void *arg), void *arg,
		     int tries)
{
	int ret = -2;

	if (b->owner) {
		pthread_mutex_lock(&b->lock);
		if (!owner_tree(b))
			ret = fn(b->t, arg);
		pthread_mutex_unlock(&b->lock);
		return ret;
	}
	for (int i = 0; i < tries; i++) {
		struct kvtree *t;

		if (kvt_open(&b->store, &t))
			continue;
		ret = fn(t, arg);
		kvt_close(t);
		if (ret != -2)
			break;
	}
	return ret;
}

struct lookup_arg {
	const char *key;
	size_t klen;
	struct s3_obj *o;
};

static int lookup_fn(struct kvtree *t, void *arg)
{
	struct lookup_arg *a = arg;
	char k[S3_MAX_KEY + 2];
	uint8_t v[ENTRY_MAX];
	int n;

	n = kvt_get(t, k, obj_key(k, a->key, a->klen), v, sizeof(v));
	if (n < 0)
		return n;
	if ((size_t)n > sizeof(v))
		return -2;
	return entry_decode(v, (size_t)n, a->o);
}

int s3b_lookup(struct s3_bucket *b, const char *key, size_t klen,
	       struct s3_obj *o)
{
	struct lookup_arg a = { key, klen, o };

	if (klen > S3_MAX_KEY)
		return -1;
	return with_tree(b, lookup_fn, &a, READ_TRIES);
}

struct usage_arg {
	uint64_t count, bytes;
};

static int usage_fn(struct kvtree *t, void *arg)
{
	struct usage_arg *a = arg;
	uint8_t u[16];
	int n = kvt_get(t, USAGE_KEY, strlen(USAGE_KEY), u, sizeof(u));

	if (n < 0)
		return n;
	if (n != (int)sizeof(u))
		return -2;
	a->count = get_le64(u);
	a->bytes = get_le64(u + 8);
	return 0;
}

struct scan_arg {
	const char *start;
	size_t slen;
	int (*fn)(const char *key, size_t klen, const struct s3_obj *o,
		  void *arg);
	void *arg;
	int stop;
	struct s3_obj o;
};

static int scan_one(const void *key, size_t klen, const void *val,
		    size_t vlen, void *arg)
{
	struct scan_arg *a = arg;
	const char *k = key;

	if (klen < 2 || k[0] != 'o' || k[1] != '/')
		return 1;	/* past the objects */
	if (entry_decode(val, vlen, &a->o)) {
		a->stop = -2;
		return 1;
	}
	a->stop = a->fn(k + 2, klen - 2, &a->o, a->arg);
	return a->stop;
}

static int scan_fn(struct kvtree *t, void *arg)
{
	struct scan_arg *a = arg;
	char k[S3_MAX_KEY + 2];
	int ret;

	a->stop = 0;
	ret = kvt_scan(t, k, obj_key(k, a->start, a->slen), scan_one, a);
	return ret ? ret : a->stop;
}

int s3b_scan(struct s3_bucket *b, const char *start, size_t slen,
	     int (*fn)(const char *key, size_t klen, const struct s3_obj *o,
		       void *arg), void *arg)
{
	struct scan_arg *a = xzalloc(sizeof(*a));
	int ret;

	if (slen > S3_MAX_KEY)
		slen = S3_MAX_KEY;
	a->start = start;
	a->slen = slen;
	a->fn = fn;
	a->arg = arg;
	/* once: a scan cut halfway has handed entries out already */
	ret = with_tree(b, scan_fn, a, 1);
	free(a);
	return ret;
}

int s3b_read(struct s3_bucket *b, uint64_t off, void *buf, uint32_t len)
{
	/* an entry names only written bytes: a chunk not there was dropped */
	return s3v_read(&b->data, off, buf, len);
}

int s3b_extents(struct s3_bucket *b, const struct s3_obj *o,
		struct s3_extent **out)
{
	struct s3_extent *e;
	uint8_t *raw;
	uint64_t total = 0;
	int n = o->nr_parts;

	if (!n) {
		e = xmalloc(sizeof(*e));
		e->off = o->off;
		e->len = o->size;
		*out = e;
		return 1;
	}
	raw = xmalloc((size_t)n * S3_EXTENT_SIZE);
	e = xmalloc((size_t)n * sizeof(*e));
	if (s3b_read(b, o->off, raw, (uint32_t)n * S3_EXTENT_SIZE)) {
		n = -2;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		e[i].off = get_le64(raw + S3_EXTENT_SIZE * i);
		e[i].len = get_le64(raw + S3_EXTENT_SIZE * i + 8);
		total += e[i].len;
	}
	/* a list that does not add up is never served */
	if (total != o->size)
		n = -2;
out:
	free(raw);
	if (n < 0) {
		free(e);
		e = NULL;
	}
	*out = e;
	return n;
}

/* ---- the owner's writes ---- */

int s3b_write_extents(struct s3_bucket *b, const struct s3_extent *e, int n,
		      uint64_t *off)
{
	uint32_t len = (uint32_t)n * S3_EXTENT_SIZE;
	uint8_t *raw = xmalloc(len);
	int ret;

	for (int i = 0; i < n; i++) {
		put_le64(raw + S3_EXTENT_SIZE * i, e[i].off);
		put_le64(raw + S3_EXTENT_SIZE * i + 8, e[i].len);
	}
	ret = s3b_reserve(b, len, off);
	if (!ret && s3b_write(b, *off, raw, len))
		ret = -2;
	free(raw);
	return ret;
}

/*
 * The buckets this thread reserved room in during its request, each with
 * a reference: s3b_release_reservations() ends them when it is done
 */
#define MY_RESERVATIONS	4
static __thread struct s3_bucket *my_resv[MY_RESERVATIONS];
static __thread int my_nr_resv;

int s3b_reserve(struct s3_bucket *b, uint64_t len, uint64_t *off)
{
	int ret = -2;

	sd_assert(b->owner);
	if (my_nr_resv == MY_RESERVATIONS) {
		sd_err("S3: a request reserved room %d times", my_nr_resv);
		return -2;
	}
	pthread_mutex_lock(&b->lock);
	if (!owner_tree(b) && len <= S3V_END - b->next_off) {
		sd_assert(b->nr_inflight < MAX_INFLIGHT);
		b->inflight[b->nr_inflight].off = b->next_off;
		b->inflight[b->nr_inflight].by = pthread_self();
		b->nr_inflight++;
		*off = b->next_off;
		b->next_off += (len + ALIGN - 1) / ALIGN * ALIGN;
		ret = 0;
	}
	pthread_mutex_unlock(&b->lock);
	if (!ret) {
		pthread_mutex_lock(&cache_lock);
		b->refs++;
		pthread_mutex_unlock(&cache_lock);
		my_resv[my_nr_resv++] = b;
	}
	return ret;
}

void s3b_release_reservations(void)
{
	pthread_t self = pthread_self();

	for (int i = 0; i < my_nr_resv; i++) {
		struct s3_bucket *b = my_resv[i];

		pthread_mutex_lock(&b->lock);
		for (int j = 0; j < b->nr_inflight; j++)
			if (pthread_equal(b->inflight[j].by, self))
				b->inflight[j--] = b->inflight[--b->nr_inflight];
		pthread_mutex_unlock(&b->lock);
		s3b_put(b);
	}
	my_nr_resv = 0;
}

int s3b_write(struct s3_bucket *b, uint64_t off, const void *buf,
	      uint32_t len)
{
	return s3v_write(&b->data, off, buf, len);
}

/* under b->lock: where sweeping stops (no reservation in flight below) */
static uint64_t sweep_limit(const struct s3_bucket *b)
{
	uint64_t limit = b->next_off;

	for (int i = 0; i < b->nr_inflight; i++)
		limit = MIN(limit, b->inflight[i].off);
	return limit;
}

/* under b->lock: the change in b->t made durable, with next and room */
static int owner_commit(struct s3_bucket *b)
{
	uint64_t due = (uint64_t)time(NULL) + s3_grace;
	uint8_t v[8];

	uint64_t upto = b->applied;

	put_le64(v, b->next_off);
	if (space_apply(b->t, &b->chg, sweep_limit(b), due, NULL) ||
	    kvt_put(b->t, "m/next", 6, v, sizeof(v)) || kvt_commit(b->t)) {
		owner_reset(b);
		return -2;
	}
	owner_settle(b, upto, 0);
	return 0;
}

/*
 * Under b->lock, this thread's change applied: made durable, by a commit
 * of this thread's or another's.  A thread commits when no other changer
 * waits for the lock; else it waits, and the last of them commits every
 * change applied meanwhile in one superblock.
 */
static int commit_mine(struct s3_bucket *b)
{
	struct commit_wait w = { .seq = ++b->applied };

	w.next = b->waiters;
	b->waiters = &w;
	while (!w.done) {
		if (!__atomic_load_n(&b->arriving, __ATOMIC_SEQ_CST))
			owner_commit(b);	/* settles w, one way or another */
		else
			pthread_cond_wait(&b->committed, &b->lock);
	}
	return w.ret;
}

/*
 * "m/usage": the bucket's objects and bytes (le64 each), changed with
 * every entry put or removed in the same commit, so that a count (Swift's
 * account and container heads) reads one key rather than walk the index.
 * A bucket that held objects before it was kept has none: that one is
 * counted by a walk.
 */
/* @k's entry into @o: 0, -1 absent, -2 */
static int entry_get(struct kvtree *t, const void *k, size_t klen,
		     struct s3_obj *o)
{
	uint8_t *v = xmalloc(ENTRY_MAX);
	int n = kvt_get(t, k, klen, v, ENTRY_MAX);

	if (n >= 0)
		n = n > ENTRY_MAX || entry_decode(v, (size_t)n, o) ? -2 : 0;
	free(v);
	return n;
}

static int is_object_key(const void *key, size_t klen, const void *val,
			 size_t vlen, void *arg)
{
	*(bool *)arg = klen >= 2 && !memcmp(key, "o/", 2);
	return 1;
}

/* under the owner's change: the entry @old (NULL: none) becomes @now */
static int usage_change(struct kvtree *t, const struct s3_obj *old,
			const struct s3_obj *now)
{
	uint8_t u[16];
	uint64_t count = 0, bytes = 0;
	bool objects = false;
	int n = kvt_get(t, USAGE_KEY, strlen(USAGE_KEY), u, sizeof(u));

	if (n == -1) {
		/* not kept yet: from nothing, if the bucket holds nothing */
		if (kvt_scan(t, "o/", 2, is_object_key, &objects))
			return -2;
		if (objects)
			return 0;	/* written before: walked */
	} else if (n != (int)sizeof(u)) {
		return -2;
	} else {
		count = get_le64(u);
		bytes = get_le64(u + 8);
	}
	if (old) {
		sd_assert(count && bytes >= old->size);
		count--;
		bytes -= old->size;
	}
	if (now) {
		count++;
		bytes += now->size;
	}
	put_le64(u, count);
	put_le64(u + 8, bytes);
	return kvt_put(t, USAGE_KEY, strlen(USAGE_KEY), u, sizeof(u)) ? -2 : 0;
}

/*
 * Under the owner's change: the room @o names, counted as named (@sign
 * 1) or no more (-1).  A multipart object names its extent list and the
 * extents in it.  A list that cannot be read when the object goes is
 * logged and its extents kept: room is never dropped in doubt.
 */
static int charge(struct s3_bucket *b, const struct s3_obj *o, int sign)
{
	struct s3_extent *e;
	int n;

	if (o->is_inline)
		return 0;
	if (!o->nr_parts) {
		space_charge(&b->chg, o->off, o->size, sign);
		return 0;
	}
	n = s3b_extents(b, o, &e);
	if (n < 0) {
		if (sign > 0)
			return -2;
		sd_err("S3: bucket %s: the extent list at %" PRIu64 " cannot "
		       "be read: its room is kept", b->rec.name, o->off);
		return 0;
	}
	space_charge(&b->chg, o->off, (uint64_t)n * S3_EXTENT_SIZE, sign);
	for (int i = 0; i < n; i++)
		space_charge(&b->chg, e[i].off, e[i].len, sign);
	free(e);
	return 0;
}

/*
 * Under the owner's change: @key's entry put as @o (NULL: removed), the
 * usage and the room with it: 0, -1 absent (a removal), -2
 */
static int entry_set(struct s3_bucket *b, const char *key, size_t klen,
		     const struct s3_obj *o)
{
	char k[S3_MAX_KEY + 2];
	size_t kl = obj_key(k, key, klen);
	struct s3_obj *old = xmalloc(sizeof(*old));
	uint8_t *v = NULL;
	int n = entry_get(b->t, k, kl, old), ret = -2;

	if (n == -2 || (n == -1 && !o)) {
		ret = n;
		goto out;
	}
	if (usage_change(b->t, n ? NULL : old, o) ||
	    (!n && charge(b, old, -1)) || (o && charge(b, o, 1)))
		goto out;
	if (!o) {
		ret = kvt_del(b->t, k, kl);
		goto out;
	}
	v = xmalloc(ENTRY_MAX);
	ret = kvt_put(b->t, k, kl, v, entry_encode(o, v)) ? -2 : 0;
out:
	free(v);
	free(old);
	return ret;
}

int s3b_usage(struct s3_bucket *b, uint64_t *count, uint64_t *bytes)
{
	struct usage_arg a;
	int ret = with_tree(b, usage_fn, &a, READ_TRIES);

	if (!ret) {
		*count = a.count;
		*bytes = a.bytes;
	}
	return ret;
}

struct set_arg {
	const char *key;
	size_t klen;
	const struct s3_obj *o;
	const struct s3_del_key *keys;
	int n;
};

static int set_fn(struct s3_bucket *b, void *arg)
{
	struct set_arg *a = arg;

	return entry_set(b, a->key, a->klen, a->o);
}

static int owner_change(struct s3_bucket *b,
			int (*fn)(struct s3_bucket *b, void *arg), void *arg);

int s3b_commit(struct s3_bucket *b, const char *key, size_t klen,
	       const struct s3_obj *o)
{
	struct set_arg a = { .key = key, .klen = klen, .o = o };

	sd_assert(klen <= S3_MAX_KEY);
	return owner_change(b, set_fn, &a);
}

int s3b_delete(struct s3_bucket *b, const char *key, size_t klen)
{
	struct set_arg a = { .key = key, .klen = klen };

	if (klen > S3_MAX_KEY)
		return 0;
	/* absent: nothing to commit */
	return owner_change(b, set_fn, &a) == -2 ? -2 : 0;
}

static int delete_many_fn(struct s3_bucket *b, void *arg)
{
	struct set_arg *a = arg;

	for (int i = 0; i < a->n; i++)
		if (a->keys[i].klen <= S3_MAX_KEY &&
		    entry_set(b, a->keys[i].key, a->keys[i].klen, NULL) == -2)
			return -2;
	return 0;
}

int s3b_delete_many(struct s3_bucket *b, const struct s3_del_key *keys,
		    int n)
{
	struct set_arg a = { .keys = keys, .n = n };

	return owner_change(b, delete_many_fn, &a);
}

/* ---- multipart uploads ---- */

/*
 * "u/ID" -> KLEN (le16) KEY ENTRY (the type and metadata);
 * "p/ID/NNNNN" -> ENTRY (size, md5, off) of a part
 */
#define UPLOAD_KEY_MAX	80

static size_t upload_key(char *out, const char *id)
{
	return (size_t)snprintf(out, UPLOAD_KEY_MAX, "u/%s", id);
}

static size_t part_key(char *out, const char *id, uint32_t number)
{
	return (size_t)snprintf(out, 96, "p/%s/%05" PRIu32, id, number);
}

/*
 * @fn(@arg) applied to the owner's tree under its lock, then made
 * durable (commit_mine): 0, -1 (@fn's: nothing changed), -2
 */
static int owner_change(struct s3_bucket *b,
			int (*fn)(struct s3_bucket *b, void *arg), void *arg)
{
	int ret = -2;
	size_t mark;

	sd_assert(b->owner);
	__atomic_add_fetch(&b->arriving, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&b->lock);
	__atomic_sub_fetch(&b->arriving, 1, __ATOMIC_SEQ_CST);
	if (!owner_tree(b)) {
		mark = b->chg.nr;
		ret = fn(b, arg);
		if (ret == -2)
			owner_reset(b);
		else if (!ret)
			ret = commit_mine(b);
		else
			b->chg.nr = mark;	/* @fn changed nothing */
	}
	/* changes waiting for this one to arrive: one of them commits */
	if (b->waiters)
		pthread_cond_broadcast(&b->committed);
	pthread_mutex_unlock(&b->lock);
	return ret;
}

struct upload_arg {
	const char *id, *key;
	size_t klen;
	const struct s3_obj *o;
	const struct s3_part *part;
};

static int upload_create_fn(struct s3_bucket *b, void *arg)
{
	struct upload_arg *a = arg;
	uint8_t *v = xmalloc(2 + S3_MAX_KEY + ENTRY_MAX);
	char k[80];
	size_t vlen;
	int ret;

	put_le16(v, (uint16_t)a->klen);
	memcpy(v + 2, a->key, a->klen);
	vlen = 2 + a->klen + entry_encode(a->o, v + 2 + a->klen);
	ret = kvt_put(b->t, k, upload_key(k, a->id), v, vlen) ? -2 : 0;
	free(v);
	return ret;
}

int s3b_upload_create(struct s3_bucket *b, const char *id, const char *key,
		      size_t klen, const struct s3_obj *o)
{
	struct upload_arg a = { .id = id, .key = key, .klen = klen, .o = o };

	return owner_change(b, upload_create_fn, &a);
}

struct upload_get_arg {
	const char *id;
	char *key;
	size_t *klen;
	struct s3_obj *o;
};

static int upload_get_fn(struct kvtree *t, void *arg)
{
	struct upload_get_arg *a = arg;
	uint8_t *v = xmalloc(2 + S3_MAX_KEY + ENTRY_MAX);
	char k[80];
	int n = kvt_get(t, k, upload_key(k, a->id), v,
			2 + S3_MAX_KEY + ENTRY_MAX);
	size_t klen;
	int ret = n;

	if (n >= 0) {
		klen = get_le16(v);
		ret = -2;
		if (n <= 2 + S3_MAX_KEY + ENTRY_MAX && klen <= S3_MAX_KEY &&
		    (size_t)n >= 2 + klen) {
			memcpy(a->key, v + 2, klen);
			a->key[klen] = 0;
			*a->klen = klen;
			ret = entry_decode(v + 2 + klen, (size_t)n - 2 - klen,
					   a->o);
		}
	}
	free(v);
	return ret;
}

int s3b_upload_get(struct s3_bucket *b, const char *id, char *key,
		   size_t *klen, struct s3_obj *o)
{
	struct upload_get_arg a = { id, key, klen, o };

	return with_tree(b, upload_get_fn, &a, READ_TRIES);
}

static int part_commit_fn(struct s3_bucket *b, void *arg)
{
	struct upload_arg *a = arg;
	struct s3_obj o = { .size = a->part->size, .off = a->part->off,
			    .mtime = a->part->mtime,
			    .sum_algo = a->part->sum_algo };
	struct s3_obj *old;
	uint8_t v[ENTRY_MAX];
	char k[96];
	size_t kl;
	int n;

	/* the upload must be there still (not completed or aborted) */
	upload_key(k, a->id);
	switch (kvt_get(b->t, k, strlen(k), NULL, 0)) {
	case -1:
		return -1;
	case -2:
		return -2;
	}
	memcpy(o.md5, a->part->md5, 16);
	/* a part's checksum is kept as its metadata */
	o.meta_len = (uint16_t)strlen(a->part->sum);
	memcpy(o.meta, a->part->sum, o.meta_len);
	kl = part_key(k, a->id, a->part->number);
	/* a part of that number before: its room goes */
	old = xmalloc(sizeof(*old));
	n = entry_get(b->t, k, kl, old);
	if (!n)
		space_charge(&b->chg, old->off, old->size, -1);
	free(old);
	if (n == -2)
		return -2;
	space_charge(&b->chg, o.off, o.size, 1);
	return kvt_put(b->t, k, kl, v, entry_encode(&o, v)) ? -2 : 0;
}

int s3b_part_commit(struct s3_bucket *b, const char *id,
		    const struct s3_part *p)
{
	struct upload_arg a = { .id = id, .part = p };

	return owner_change(b, part_commit_fn, &a);
}

struct parts_arg {
	const char *id;
	size_t plen;
	char prefix[80];
	struct s3_part *parts;
	int n, cap, err;
};

static int part_one(const void *key, size_t klen, const void *val,
		    size_t vlen, void *arg)
{
	struct parts_arg *a = arg;
	struct s3_obj o;

	if (klen != a->plen + 5 || memcmp(key, a->prefix, a->plen))
		return 1;	/* past the upload's parts */
	if (entry_decode(val, vlen, &o) || a->n == S3_MAX_PARTS) {
		a->err = -2;
		return 1;
	}
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 64;
		a->parts = xrealloc(a->parts, (size_t)a->cap *
				    sizeof(*a->parts));
	}
	/* the 5 digits: the key is not NUL-ended */
	a->parts[a->n].number = 0;
	for (size_t i = a->plen; i < klen; i++) {
		char d = ((const char *)key)[i];

		if (d < '0' || d > '9') {
			a->err = -2;
			return 1;
		}
		a->parts[a->n].number = a->parts[a->n].number * 10 +
					(uint32_t)(d - '0');
	}
	a->parts[a->n].off = o.off;
	a->parts[a->n].size = o.size;
	a->parts[a->n].mtime = o.mtime;
	a->parts[a->n].sum_algo = o.sum_algo;
	if (o.meta_len >= sizeof(a->parts[a->n].sum)) {
		a->err = -2;
		return 1;
	}
	memcpy(a->parts[a->n].sum, o.meta, o.meta_len);
	a->parts[a->n].sum[o.meta_len] = 0;
	memcpy(a->parts[a->n].md5, o.md5, 16);
	a->n++;
	return 0;
}

static int parts_fn(struct kvtree *t, void *arg)
{
	struct parts_arg *a = arg;
	int ret;

	a->n = 0;
	a->err = 0;
	ret = kvt_scan(t, a->prefix, a->plen, part_one, a);
	return ret ? ret : a->err;
}

int s3b_parts(struct s3_bucket *b, const char *id, struct s3_part **out)
{
	struct parts_arg a = { .id = id };
	int ret;

	a.plen = (size_t)snprintf(a.prefix, sizeof(a.prefix), "p/%s/", id);
	ret = with_tree(b, parts_fn, &a, 1);
	if (ret) {
		free(a.parts);
		*out = NULL;
		return -2;
	}
	*out = a.parts;
	return a.n;
}

struct uploads_arg {
	int (*fn)(const char *id, const char *key, size_t klen,
		  const struct s3_obj *o, void *arg);
	void *arg;
	int stop;
	char id[UPLOAD_KEY_MAX];
	struct s3_obj o;
};

static int upload_one(const void *key, size_t klen, const void *val,
		      size_t vlen, void *arg)
{
	struct uploads_arg *a = arg;
	const uint8_t *v = val;
	size_t okl;

	if (klen < 2 || memcmp(key, "u/", 2))
		return 1;	/* past the uploads */
	okl = vlen >= 2 ? get_le16(v) : 0;
	if (klen - 2 >= sizeof(a->id) || vlen < 2 + okl || okl > S3_MAX_KEY ||
	    entry_decode(v + 2 + okl, vlen - 2 - okl, &a->o)) {
		a->stop = -2;
		return 1;
	}
	memcpy(a->id, (const char *)key + 2, klen - 2);
	a->id[klen - 2] = 0;
	a->stop = a->fn(a->id, (const char *)v + 2, okl, &a->o, a->arg);
	return a->stop;
}

static int uploads_fn(struct kvtree *t, void *arg)
{
	struct uploads_arg *a = arg;
	int ret;

	a->stop = 0;
	ret = kvt_scan(t, "u/", 2, upload_one, a);
	return ret ? ret : a->stop;
}

int s3b_uploads(struct s3_bucket *b,
		int (*fn)(const char *id, const char *key, size_t klen,
			  const struct s3_obj *o, void *arg), void *arg)
{
	struct uploads_arg *a = xzalloc(sizeof(*a));
	int ret;

	a->fn = fn;
	a->arg = arg;
	ret = with_tree(b, uploads_fn, a, 1);
	free(a);
	return ret;
}

/* every part of upload @id deleted, its room with it, then the upload:
 * 0, -1, -2 */
static int drop_upload(struct s3_bucket *b, const char *id)
{
	struct parts_arg a = { .id = id };
	char k[96];
	int ret;

	upload_key(k, id);
	ret = kvt_del(b->t, k, strlen(k));
	if (ret)
		return ret;
	a.plen = (size_t)snprintf(a.prefix, sizeof(a.prefix), "p/%s/", id);
	ret = parts_fn(b->t, &a);
	for (int i = 0; !ret && i < a.n; i++) {
		space_charge(&b->chg, a.parts[i].off, a.parts[i].size, -1);
		if (kvt_del(b->t, k, part_key(k, id, a.parts[i].number)) == -2)
			ret = -2;
	}
	free(a.parts);
	return ret;
}

/* the parts' room is the object's now, but for parts left out */
static int complete_fn(struct s3_bucket *b, void *arg)
{
	struct upload_arg *a = arg;
	int ret = drop_upload(b, a->id);

	if (ret)
		return ret;
	return entry_set(b, a->key, a->klen, a->o);
}

int s3b_upload_complete(struct s3_bucket *b, const char *id,
			const char *key, size_t klen, const struct s3_obj *o)
{
	struct upload_arg a = { .id = id, .key = key, .klen = klen, .o = o };

	return owner_change(b, complete_fn, &a);
}

static int abort_fn(struct s3_bucket *b, void *arg)
{
	return drop_upload(b, arg);
}

int s3b_upload_abort(struct s3_bucket *b, const char *id)
{
	return owner_change(b, abort_fn, (void *)id);
}

/* ---- reclaiming room ---- */

void s3b_set_grace(unsigned int seconds)
{
	s3_grace = seconds;
}

/*
 * One step for a bucket this gateway owns: the chunks passed since the
 * last change looked at (a bucket no one writes sweeps too), then those
 * due dropped and out of the queue.  How many were dropped, or -2.
 */
static int reclaim_step(struct s3_bucket *b)
{
	struct space_due due[DROP_BATCH];
	uint64_t now = (uint64_t)time(NULL);
	bool changed;
	int n, done = 0, ret = -2;

	pthread_mutex_lock(&b->lock);
	if (owner_tree(b))
		goto unlock;
	if (space_apply(b->t, &b->chg, sweep_limit(b), now + s3_grace,
			&changed)) {
		owner_reset(b);
		goto unlock;
	}
	if (changed && owner_commit(b))
		goto unlock;
	n = space_due(b->t, now, due, DROP_BATCH);
	pthread_mutex_unlock(&b->lock);
	if (n <= 0)
		return n;
	/* no one writes or names these: the drops need no lock */
	for (int i = 0; i < n; i++) {
		int r = s3v_drop(&b->data, due[i].chunk);

		if (r != SD_RES_SUCCESS) {
			sd_err("S3: bucket %s: dropping chunk %" PRIu64 ": %s",
			       b->rec.name, due[i].chunk,
			       sd_strerror((uint32_t)r));
			n = i;
		}
	}
	pthread_mutex_lock(&b->lock);
	if (!n || owner_tree(b)) {
		ret = n ? -2 : 0;
		goto unlock;
	}
	for (done = 0; done < n; done++)
		if (space_dropped(b->t, &due[done]))
			break;
	if (done < n) {
		owner_reset(b);
		goto unlock;
	}
	ret = owner_commit(b) ? -2 : n;
	if (ret > 0)
		sd_info("S3: bucket %s: %d MiB reclaimed", b->rec.name,
			n * (int)(SPACE_CHUNK >> 20));
unlock:
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/* this endpoint on this sheep in an earlier life: only a restart of it */
static bool mine_before(const struct s3_bucket_rec *r, const void *arg)
{
	(void)arg;
	return !strcmp(r->gateway, self_id) && !strcmp(r->node, self_node) &&
	       r->boot != self_boot;
}

/*
 * The buckets this gateway owned in an earlier life (it restarted) taken
 * back and opened, as a write for them would: else the room their
 * deletes queued would wait for the next request that comes
 */
static void take_back_mine(void)
{
	struct s3_bucket_rec *recs;
	struct s3_bucket *b;
	int n = s3reg_buckets(mine_before, NULL, &recs);

	for (int i = 0; i < n; i++) {
		if (s3b_get(recs[i].name, &b))
			continue;
		if (s3b_owner_is_me_before(b) && !s3b_take_over(b))
			sd_notice("S3: bucket %s taken back after this "
				  "gateway's restart (its room reclaimed)",
				  recs[i].name);
		s3b_put(b);
		/* the record moved: opened afresh, as its owner */
		if (!s3b_get(recs[i].name, &b))
			s3b_put(b);
	}
	free(recs);
}

/* every bucket this gateway owns and has open, a step each while due */
static void reclaim_pass(void)
{
	struct s3_bucket **mine = NULL;
	size_t n = 0, cap = 0;

	take_back_mine();

	/* every one, however many: a bucket left out would never be */
	pthread_mutex_lock(&cache_lock);
	for (struct s3_bucket *b = cache; b; b = b->next) {
		if (!b->owner || b->gone)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			mine = xrealloc(mine, cap * sizeof(*mine));
		}
		b->refs++;
		mine[n++] = b;
	}
	pthread_mutex_unlock(&cache_lock);
	for (size_t i = 0; i < n; i++) {
		while (reclaim_step(mine[i]) == DROP_BATCH)
			;
		s3b_put(mine[i]);
	}
	free(mine);
}

void *s3b_reclaimer(void *arg)
{
	(void)arg;
	for (;;) {
		sleep(MAX(1U, MIN(s3_grace / 4, 10U)));
		reclaim_pass();
	}
	return NULL;
}

/* ---- creation and deletion ---- */

static int registry(uint8_t kind, const char *name, const char *user)
{
	struct s3reg_req r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	snprintf(r.name, sizeof(r.name), "%s", name);
	if (user)
		snprintf(r.user, sizeof(r.user), "%s", user);
	snprintf(r.gateway, sizeof(r.gateway), "%s", self_id);
	snprintf(r.node, sizeof(r.node), "%s", self_node);
	r.boot = self_boot;
	r.created = (uint64_t)time(NULL);
	return s3reg_change(&r);
}

int s3b_take_over(struct s3_bucket *b)
{
	struct s3reg_req r;
	int ret;

	memset(&r, 0, sizeof(r));
	r.kind = S3REG_BUCKET_MOVE;
	snprintf(r.name, sizeof(r.name), "%s", b->rec.name);
	snprintf(r.gateway, sizeof(r.gateway), "%s", self_id);
	snprintf(r.node, sizeof(r.node), "%s", self_node);
	r.boot = self_boot;
	snprintf(r.old_gateway, sizeof(r.old_gateway), "%s", b->rec.gateway);
	r.old_boot = b->rec.boot;
	ret = s3reg_change(&r);
	switch (ret) {
	case SD_RES_SUCCESS:
		return 0;
	case SD_RES_AGAIN:
	case SD_RES_NO_VDI:
		return 1;	/* moved or deleted meanwhile: look again */
	case SD_RES_VDI_LOCKED:
		return -1;
	default:
		sd_err("S3: moving bucket %s here: %s", b->rec.name,
		       sd_strerror((uint32_t)ret));
		return -2;
	}
}

bool s3b_owner_is_my_address(const struct s3_bucket *b)
{
	return !b->owner && !strcmp(b->rec.gateway, self_id);
}

/* as bucket_move (s3reg.c) judges an earlier life */
bool s3b_owner_is_me_before(const struct s3_bucket *b)
{
	return s3b_owner_is_my_address(b) &&
	       (!*b->rec.node || !strcmp(b->rec.node, self_node));
}

const char *s3b_owner_node(const struct s3_bucket *b)
{
	return b->rec.node;
}

int s3b_create(const char *name, const char *user, uint8_t copies,
	       uint8_t policy, bool *mine)
{
	struct s3_bucket_rec rec;
	int ret;

	ret = s3reg_find_bucket(name, &rec);
	if (ret == -2)
		return -2;
	if (!ret) {
		*mine = !strcmp(rec.user, user);
		return -1;
	}
	ret = registry(S3REG_BUCKET_ADD, name, user);
	if (ret == SD_RES_VDI_EXIST) {
		*mine = !s3reg_find_bucket(name, &rec) &&
			!strcmp(rec.user, user);
		return -1;
	}
	if (ret != SD_RES_SUCCESS) {
		sd_err("S3: bucket %s: %s", name, sd_strerror((uint32_t)ret));
		return -2;
	}
	/* the index in copies: the bucket's, or the cluster's for a code */
	ret = s3v_create(name, "index", INDEX_SIZE, policy ? 0 : copies, 0);
	if (ret == SD_RES_SUCCESS)
		ret = s3v_make(name, copies, policy);
	if (ret != SD_RES_SUCCESS) {
		sd_err("S3: the volumes of bucket %s: %s", name,
		       sd_strerror((uint32_t)ret));
		registry(S3REG_BUCKET_DEL, name, NULL);
		return -2;
	}
	sd_info("S3: bucket %s of %s created", name, user);
	return 0;
}

static int any_object(const void *key, size_t klen, const void *val,
		      size_t vlen, void *arg)
{
	/* objects (o/), parts (p/) and uploads (u/): not empty */
	*(bool *)arg = true;
	return 1;
}

int s3b_destroy(struct s3_bucket *b)
{
	bool found = false;
	int ret = -2;

	sd_assert(b->owner);
	/* under the lock: no PUT commits between the look and the end */
	pthread_mutex_lock(&b->lock);
	if (owner_tree(b))
		goto out;
	if (kvt_scan(b->t, "o/", 2, any_object, &found))
		goto out;
	if (found) {
		ret = -1;
		goto out;
	}
	/* gone from the registry first: then no one writes it */
	ret = registry(S3REG_BUCKET_DEL, b->rec.name, NULL);
	if (ret != SD_RES_SUCCESS && ret != SD_RES_NO_VDI) {
		ret = -2;
		goto out;
	}
	b->gone = true;
	ret = 0;
out:
	pthread_mutex_unlock(&b->lock);
	if (ret)
		return ret;
	pthread_mutex_lock(&cache_lock);
	uncache(b);
	pthread_mutex_unlock(&cache_lock);
	if (s3v_delete(b->rec.name, "index") || s3v_remove(b->rec.name))
		sd_warn("S3: the volumes of deleted bucket %s are left; a "
			"bucket of that name made later removes them",
			b->rec.name);
	sd_info("S3: bucket %s deleted", b->rec.name);
	return 0;
}
