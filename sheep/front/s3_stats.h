/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Counters of the object gateway (s3_stats.c) for /metrics: requests by
 * operation and HTTP status, and their time from the head read to the
 * answer's end.  Operations and statuses come from fixed lists, never
 * from what a client sends, so the series are bounded.
 */
#ifndef SHEEP_FRONT_S3_STATS_H
#define SHEEP_FRONT_S3_STATS_H

#include <stdbool.h>
#include <stdint.h>

enum s3_op {
	S3_OP_OTHER,			/* no operation: a bad URI, a method */
	S3_OP_LIST_BUCKETS,
	S3_OP_CREATE_BUCKET,
	S3_OP_HEAD_BUCKET,
	S3_OP_DELETE_BUCKET,
	S3_OP_LIST_OBJECTS,
	S3_OP_LIST_OBJECTS_V2,
	S3_OP_GET_BUCKET_LOCATION,
	S3_OP_LIST_UPLOADS,
	S3_OP_DELETE_OBJECTS,
	S3_OP_PUT_OBJECT,
	S3_OP_COPY_OBJECT,
	S3_OP_GET_OBJECT,
	S3_OP_HEAD_OBJECT,
	S3_OP_DELETE_OBJECT,
	S3_OP_CREATE_UPLOAD,
	S3_OP_UPLOAD_PART,
	S3_OP_UPLOAD_PART_COPY,
	S3_OP_COMPLETE_UPLOAD,
	S3_OP_ABORT_UPLOAD,
	S3_OP_LIST_PARTS,
	S3_OP_SWIFT_AUTH,
	S3_OP_SWIFT_ACCOUNT,
	S3_OP_SWIFT_CONTAINER,
	S3_OP_SWIFT_OBJECT,
	S3_OP_NR
};

/* the statuses counted on their own; any other is "other" */
#define S3_STATS_CODES	20
/* and: relayed to the bucket's owner; no answer (the client went) */
#define S3_RES_OTHER	S3_STATS_CODES
#define S3_RES_RELAYED	(S3_STATS_CODES + 1)
#define S3_RES_NONE	(S3_STATS_CODES + 2)
#define S3_RES_NR	(S3_STATS_CODES + 3)

#define S3_STATS_BUCKETS	15

struct s3_stats {
	uint64_t results[S3_OP_NR][S3_RES_NR];
	uint64_t buckets[S3_OP_NR][S3_STATS_BUCKETS + 1];	/* + Inf */
	uint64_t sum_ns[S3_OP_NR];
};

extern const char *const s3_op_names[S3_OP_NR];
/* the label of each result: "200", ..., "other", "relayed", "none" */
extern const char *const s3_res_names[S3_RES_NR];
/* upper bounds of the time buckets, in nanoseconds */
extern const uint64_t s3_stats_bucket_ns[S3_STATS_BUCKETS];

/* a request of @op done with @status (0: none sent), @relayed, in @ns */
void s3_stats_done(enum s3_op op, int status, bool relayed, uint64_t ns);
void s3_stats_read(struct s3_stats *out);

#endif
