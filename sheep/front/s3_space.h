/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The room of a bucket's data volume, kept in its index (s3_space.c,
 * doc/object-storage.md "Reclaiming space"): how many bytes of each 4 MiB
 * chunk (one object of the volume) entries name, which chunks name
 * nothing any more, and when each of those may be dropped.
 *
 * Room is given out by appending and never given out twice, so a chunk
 * wholly below what has been given out (and below every reservation a
 * writer still holds) that no entry names is dead for good: it is queued
 * with a deadline (the grace period, for reads that looked its bytes up
 * before they were freed) and then dropped.  Everything here works on the
 * owner's tree within its change; the caller commits.
 */
#ifndef SHEEP_FRONT_S3_SPACE_H
#define SHEEP_FRONT_S3_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kvtree.h"

#define SPACE_CHUNK	(UINT64_C(4) << 20)	/* SD_DATA_OBJ_SIZE */
#define SPACE_ALIGN	4096	/* room is given out in these */

/* the chunks a change names or stops naming, with the bytes of each */
struct space_delta {
	uint64_t chunk;
	int64_t bytes;
};

struct space_change {
	struct space_delta *d;
	size_t nr, cap;
};

/* @len bytes at @off (rounded up as given out) named (+1) or not (-1) */
void space_charge(struct space_change *c, uint64_t off, uint64_t len,
		  int sign);
void space_change_clear(struct space_change *c);

/*
 * Is room counted in @t?  It is from a bucket's first commit on; a bucket
 * written before counting began (@t names room given out, "m/next", but
 * has no "m/swept") is not, and nothing of it is ever dropped.  0, -2.
 */
int space_kept(struct kvtree *t, bool *kept);

/*
 * @c applied to the counts, and the chunks below @limit (the start of the
 * oldest reservation in flight, or the end of what was given out) that
 * name nothing queued to be dropped at @due (seconds): 0, or -2.
 * *@changed (may be NULL) says whether the tree changed.  A count that
 * would go below zero or above a chunk is a fault: logged, and the chunk
 * is kept for good rather than risk dropping what an entry names.
 */
int space_apply(struct kvtree *t, struct space_change *c, uint64_t limit,
		uint64_t due, bool *changed);

/* a queued chunk */
struct space_due {
	uint64_t due, chunk;
};

/* up to @max chunks whose deadline is at or before @now: how many, -2 */
int space_due(struct kvtree *t, uint64_t now, struct space_due *out,
	      int max);
/* @d dropped: out of the queue (0, -2) */
int space_dropped(struct kvtree *t, const struct space_due *d);

/* counted bytes of @chunk (tests and tools): 0, -2 */
int space_count(struct kvtree *t, uint64_t chunk, uint64_t *bytes);

#endif
