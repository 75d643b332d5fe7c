// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Counters of the object gateway (s3_stats.h).  Worker threads add with
 * relaxed atomics; a reader copies them one by one, so a snapshot may
 * see a request's count and not yet its time, never a torn value.
 */
#include <stdbool.h>
#include <stddef.h>
#include "front/s3_stats.h"

static struct s3_stats stats;

const char *const s3_op_names[S3_OP_NR] = {
	[S3_OP_OTHER] = "other",
	[S3_OP_LIST_BUCKETS] = "ListBuckets",
	[S3_OP_CREATE_BUCKET] = "CreateBucket",
	[S3_OP_HEAD_BUCKET] = "HeadBucket",
	[S3_OP_DELETE_BUCKET] = "DeleteBucket",
	[S3_OP_LIST_OBJECTS] = "ListObjects",
	[S3_OP_LIST_OBJECTS_V2] = "ListObjectsV2",
	[S3_OP_GET_BUCKET_LOCATION] = "GetBucketLocation",
	[S3_OP_LIST_UPLOADS] = "ListMultipartUploads",
	[S3_OP_DELETE_OBJECTS] = "DeleteObjects",
	[S3_OP_PUT_OBJECT] = "PutObject",
	[S3_OP_COPY_OBJECT] = "CopyObject",
	[S3_OP_GET_OBJECT] = "GetObject",
	[S3_OP_HEAD_OBJECT] = "HeadObject",
	[S3_OP_DELETE_OBJECT] = "DeleteObject",
	[S3_OP_CREATE_UPLOAD] = "CreateMultipartUpload",
	[S3_OP_UPLOAD_PART] = "UploadPart",
	[S3_OP_UPLOAD_PART_COPY] = "UploadPartCopy",
	[S3_OP_COMPLETE_UPLOAD] = "CompleteMultipartUpload",
	[S3_OP_ABORT_UPLOAD] = "AbortMultipartUpload",
	[S3_OP_LIST_PARTS] = "ListParts",
	[S3_OP_SWIFT_AUTH] = "swift_auth",
	[S3_OP_SWIFT_ACCOUNT] = "swift_account",
	[S3_OP_SWIFT_CONTAINER] = "swift_container",
	[S3_OP_SWIFT_OBJECT] = "swift_object",
};

/* every status the gateway answers with */
static const int codes[S3_STATS_CODES] = {
	200, 201, 202, 204, 206, 304, 400, 401, 403, 404, 405, 409, 411,
	412, 416, 422, 500, 501, 503, 507,
};

const char *const s3_res_names[S3_RES_NR] = {
	"200", "201", "202", "204", "206", "304", "400", "401", "403", "404",
	"405", "409", "411", "412", "416", "422", "500", "501", "503", "507",
	"other", "relayed", "none",
};

/* 1 ms to 60 s: an S3 request is a small read or minutes of upload */
const uint64_t s3_stats_bucket_ns[S3_STATS_BUCKETS] = {
	1000000, 2500000, 5000000, 10000000, 25000000, 50000000,
	100000000, 250000000, 500000000, 1000000000, 2500000000,
	5000000000, 10000000000, 30000000000, 60000000000,
};

static int result_of(int status, bool relayed)
{
	if (relayed)
		return S3_RES_RELAYED;
	if (!status)
		return S3_RES_NONE;
	for (int i = 0; i < S3_STATS_CODES; i++)
		if (codes[i] == status)
			return i;
	return S3_RES_OTHER;
}

void s3_stats_done(enum s3_op op, int status, bool relayed, uint64_t ns)
{
	int b = 0;

	if ((unsigned int)op >= S3_OP_NR)
		op = S3_OP_OTHER;
	while (b < S3_STATS_BUCKETS && ns > s3_stats_bucket_ns[b])
		b++;
	__atomic_add_fetch(&stats.results[op][result_of(status, relayed)], 1,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&stats.buckets[op][b], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&stats.sum_ns[op], ns, __ATOMIC_RELAXED);
}

void s3_stats_read(struct s3_stats *out)
{
	const uint64_t *from = (const uint64_t *)&stats;
	uint64_t *to = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(stats) / sizeof(uint64_t); i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
}
