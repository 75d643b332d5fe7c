// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The room of a bucket's data volume (s3_space.h).  Keys in the index:
 *
 *   "m/swept"               le64: every chunk below it has been looked at
 *                           (queued if it named nothing then)
 *   "c/" be64 chunk         le64: bytes of the chunk entries name
 *   "g/" be64 due be64 chunk  a chunk to drop once "due" (seconds) passed
 *
 * A chunk with no "c/" names nothing.  All three sort before "o/", so a
 * bucket's emptiness (a scan from "o/") does not see them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "proto.h"
#include "util.h"
#include "front/s3_space.h"

#define SWEPT_KEY	"m/swept"
#define NEXT_KEY	"m/next"
#define COUNT_KEY_LEN	10
#define DUE_KEY_LEN	18
/* chunks passed by one change at most (a 5 GiB PUT passes 1,280) */
#define SWEEP_MAX	4096

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void space_charge(struct space_change *c, uint64_t off, uint64_t len,
		  int sign)
{
	uint64_t end = off + (len + SPACE_ALIGN - 1) / SPACE_ALIGN * SPACE_ALIGN;

	sd_assert(sign == 1 || sign == -1);
	while (off < end) {
		uint64_t chunk = off / SPACE_CHUNK;
		uint64_t n = MIN(end, (chunk + 1) * SPACE_CHUNK) - off;

		if (c->nr == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 16;
			c->d = xrealloc(c->d, c->cap * sizeof(*c->d));
		}
		c->d[c->nr].chunk = chunk;
		c->d[c->nr].bytes = sign * (int64_t)n;
		c->nr++;
		off += n;
	}
}

void space_change_clear(struct space_change *c)
{
	free(c->d);
	memset(c, 0, sizeof(*c));
}

/* "m/swept": 0 (into *@swept), -1 absent, -2 */
static int swept_get(struct kvtree *t, uint64_t *swept)
{
	uint8_t v[8];
	int n = kvt_get(t, SWEPT_KEY, strlen(SWEPT_KEY), v, sizeof(v));

	if (n < 0)
		return n;
	if (n != (int)sizeof(v))
		return -2;
	*swept = get_le64(v);
	return 0;
}

int space_kept(struct kvtree *t, bool *kept)
{
	uint64_t swept;
	int n = swept_get(t, &swept);

	if (n != -1) {
		*kept = !n;
		return n;
	}
	/* no "m/swept": counted only if no room was given out yet */
	n = kvt_get(t, NEXT_KEY, strlen(NEXT_KEY), NULL, 0);
	*kept = n == -1;
	return n == -2 ? -2 : 0;
}

static size_t count_key(uint8_t *k, uint64_t chunk)
{
	k[0] = 'c';
	k[1] = '/';
	put_be64(k + 2, chunk);
	return COUNT_KEY_LEN;
}

int space_count(struct kvtree *t, uint64_t chunk, uint64_t *bytes)
{
	uint8_t k[COUNT_KEY_LEN], v[8];
	int n = kvt_get(t, k, count_key(k, chunk), v, sizeof(v));

	*bytes = 0;
	if (n == -1)
		return 0;
	if (n != (int)sizeof(v))
		return -2;
	*bytes = get_le64(v);
	return 0;
}

static int queue(struct kvtree *t, uint64_t chunk, uint64_t due)
{
	uint8_t k[DUE_KEY_LEN];

	k[0] = 'g';
	k[1] = '/';
	put_be64(k + 2, due);
	put_be64(k + 10, chunk);
	return kvt_put(t, k, sizeof(k), "", 0) ? -2 : 0;
}

static int delta_cmp(const void *a, const void *b)
{
	const struct space_delta *x = a, *y = b;

	return x->chunk < y->chunk ? -1 : x->chunk > y->chunk;
}

/* @bytes more (or fewer) in @chunk; queued if it names nothing now */
static int count_change(struct kvtree *t, uint64_t chunk, int64_t bytes,
			uint64_t swept, uint64_t due)
{
	uint8_t k[COUNT_KEY_LEN], v[8];
	uint64_t old;
	int64_t now;

	if (space_count(t, chunk, &old))
		return -2;
	/* a chunk already passed that named nothing may be queued */
	sd_assert(!(old == 0 && bytes > 0 && chunk < swept));
	now = (int64_t)old + bytes;
	if (now < 0 || now > (int64_t)SPACE_CHUNK) {
		sd_err("S3: chunk %" PRIu64 " of a bucket would hold %" PRId64
		       " bytes: it is kept for good", chunk, now);
		now = (int64_t)SPACE_CHUNK;
	}
	count_key(k, chunk);
	if (now) {
		put_le64(v, (uint64_t)now);
		return kvt_put(t, k, sizeof(k), v, sizeof(v)) ? -2 : 0;
	}
	if (kvt_del(t, k, sizeof(k)) == -2)
		return -2;
	return chunk < swept ? queue(t, chunk, due) : 0;
}

/* the chunks from *@swept wholly below @limit passed */
static int sweep(struct kvtree *t, uint64_t *swept, uint64_t limit,
		 uint64_t due)
{
	for (int i = 0; i < SWEEP_MAX && (*swept + 1) * SPACE_CHUNK <= limit;
	     i++, (*swept)++) {
		uint64_t bytes;

		if (space_count(t, *swept, &bytes))
			return -2;
		if (!bytes && queue(t, *swept, due))
			return -2;
	}
	return 0;
}

int space_apply(struct kvtree *t, struct space_change *c, uint64_t limit,
		uint64_t due, bool *changed)
{
	uint64_t swept = 0, was;
	bool kept, fresh;
	uint8_t v[8];
	size_t i, j;
	int ret = -2;

	if (changed)
		*changed = false;
	if (space_kept(t, &kept))
		goto out;
	ret = 0;
	if (!kept)
		goto out;
	ret = -2;
	fresh = swept_get(t, &swept) == -1;
	was = swept;
	if (c->nr)
		qsort(c->d, c->nr, sizeof(*c->d), delta_cmp);
	for (i = 0; i < c->nr; i = j) {
		int64_t sum = 0;

		for (j = i; j < c->nr && c->d[j].chunk == c->d[i].chunk; j++)
			sum += c->d[j].bytes;
		if (!sum)
			continue;
		if (count_change(t, c->d[i].chunk, sum, swept, due))
			goto out;
		if (changed)
			*changed = true;
	}
	if (sweep(t, &swept, limit, due))
		goto out;
	ret = 0;
	if (swept == was && !fresh)
		goto out;
	put_le64(v, swept);
	ret = kvt_put(t, SWEPT_KEY, strlen(SWEPT_KEY), v, sizeof(v)) ? -2 : 0;
	if (changed)
		*changed = true;
out:
	space_change_clear(c);
	return ret;
}

struct due_arg {
	uint64_t now;
	struct space_due *out;
	int n, max;
};

static int due_one(const void *key, size_t klen, const void *val,
		   size_t vlen, void *arg)
{
	struct due_arg *a = arg;
	const uint8_t *k = key;

	if (klen != DUE_KEY_LEN || memcmp(k, "g/", 2) || a->n == a->max)
		return 1;
	a->out[a->n].due = get_be64(k + 2);
	a->out[a->n].chunk = get_be64(k + 10);
	if (a->out[a->n].due > a->now)
		return 1;	/* in deadline order: the rest are later */
	a->n++;
	return 0;
}

int space_due(struct kvtree *t, uint64_t now, struct space_due *out,
	      int max)
{
	struct due_arg a = { .now = now, .out = out, .max = max };

	if (kvt_scan(t, "g/", 2, due_one, &a))
		return -2;
	return a.n;
}

int space_dropped(struct kvtree *t, const struct space_due *d)
{
	uint8_t k[DUE_KEY_LEN];

	k[0] = 'g';
	k[1] = '/';
	put_be64(k + 2, d->due);
	put_be64(k + 10, d->chunk);
	return kvt_del(t, k, sizeof(k)) == -2 ? -2 : 0;
}
