/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The parts of an S3 request a gateway reads from its target and headers
 * (lib/s3req.c): the bucket and key of a path-style target, the query's
 * parameters, a Range header.  No I/O; every byte is a client's.
 */
#ifndef KELPIE_S3REQ_H
#define KELPIE_S3REQ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "s3sum.h"

#define S3_MAX_PARAMS		32
#define S3_MAX_PARAM_NAME	64

struct s3_param {
	char name[S3_MAX_PARAM_NAME];
	char *value;			/* decoded, NUL-ended; malloc'd */
	bool has_value;
};

/* percent-decode @len bytes into @out (@size with its NUL): the length,
 * -1 if malformed or too long */
int s3_pct_decode(const char *s, size_t len, char *out, size_t size);
/*
 * The query's parameters ('+' in a value is a space) into @p: how many,
 * or -1 (malformed, or more than @max); free them with s3_params_free
 */
int s3_parse_query(const char *q, size_t len, struct s3_param *p, int max);
void s3_params_free(struct s3_param *p, int n);

/*
 * "/BUCKET/KEY" decoded: 0 for the service ("/"), 1 a bucket, 2 a bucket
 * and a key (*klen bytes, may hold NULs), -1 not a path we take
 */
int s3_parse_path(const char *path, size_t len, char *bucket, size_t bsize,
		  char *key, size_t ksize, size_t *klen);

enum s3_range {
	S3_RANGE_NONE = 0,		/* whole (also a header not understood) */
	S3_RANGE_ONE = 1,		/* [*from, *to] */
	S3_RANGE_MANY = -1,		/* several ranges */
	S3_RANGE_UNSATISFIABLE = -2,
};
/* a Range header's value against an object of @size bytes */
enum s3_range s3_parse_range(const char *v, uint64_t size, uint64_t *from,
			     uint64_t *to);
/* a part named by CompleteMultipartUpload */
struct s3_part_ref {
	uint32_t number;
	char etag[33];			/* lower-case hex, no quotes */
	uint8_t sum_algo;		/* enum s3_sum_algo: 0 if none given */
	char sum[S3_SUM_B64];		/* its value, base64 */
};
/*
 * CompleteMultipartUpload's body: each <Part>'s <PartNumber> (1-10000),
 * <ETag> ("hex", quoted or not) and at most one <ChecksumALGO> (base64)
 * into @refs: how many, -1 if malformed or more than @max
 */
int s3_parse_complete(const char *xml, size_t len, struct s3_part_ref *refs,
		      int max);

#define S3_DEL_MAX_KEY		1024
/* a key named by DeleteObjects: decoded in place in the body */
struct s3_del_key {
	const char *key;
	size_t klen;
};
/*
 * DeleteObjects' body (modified: each key is decoded where it was): each
 * <Object>'s <Key> (1 to S3_DEL_MAX_KEY bytes once decoded) into @keys,
 * <Quiet>true</Quiet> into *@quiet: how many, -1 if malformed or more
 * than @max, -2 if an object names a version (other than "null")
 */
int s3_parse_delete(char *xml, size_t len, struct s3_del_key *keys, int max,
		    bool *quiet);
#endif
