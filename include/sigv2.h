/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * AWS Signature Version 2 for S3 (lib/sigv2.c): the HMAC-SHA1 of a
 * "string to sign" made of the method, three headers, the x-amz-*
 * headers and the resource (doc/object-storage.md).  Older clients (s3cmd
 * with signature_v2, boto, many appliances) still sign this way.  No I/O;
 * every input is a client's and bounded here.
 */
#ifndef KELPIE_SIGV2_H
#define KELPIE_SIGV2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sigv4.h"

#define SIGV2_SIG_LEN		28	/* base64 of a SHA-1 HMAC */
#define SIGV2_MAX_STS		65536	/* string to sign */

/* the client's claims */
struct sigv2_auth {
	char access_key[SIGV4_MAX_KEY + 1];
	char signature[SIGV2_SIG_LEN + 1];	/* base64 */
	uint64_t expires;		/* presigned only: seconds since 1970 */
	bool presigned;
};

/* what the string to sign is made of */
struct sigv2_req {
	const char *method;
	/* virtual-host style: the bucket named by Host; NULL for path-style */
	const char *bucket;
	const char *path;		/* the target up to '?', as received */
	size_t path_len;
	const char *query;		/* after '?', as received; may be NULL */
	size_t query_len;
	const struct sigv4_hdr *hdrs;
	size_t nr_hdrs;
};

/* "AWS KEY:SIGNATURE" (an Authorization header's value): 0 or -1 */
int sigv2_parse_header(const char *value, size_t len, struct sigv2_auth *a);
/*
 * A presigned URL's AWSAccessKeyId, Signature and Expires, decoded: 0 or
 * -1 if one is malformed
 */
int sigv2_parse_query(const char *key, const char *signature,
		      const char *expires, struct sigv2_auth *a);
/*
 * The string to sign into @buf (@size bytes): its length, or -1 if the
 * request is malformed or the string too long.  A presigned request's
 * Expires takes the place of the date.
 */
int sigv2_string_to_sign(const struct sigv2_req *r, const struct sigv2_auth *a,
			 char *buf, size_t size);
/* the signature of @sts under @secret, base64 */
void sigv2_sign(const char *secret, const char *sts, size_t len,
		char out[SIGV2_SIG_LEN + 1]);
/* true if @r carries @a's signature under @secret (constant time) */
bool sigv2_verify(const struct sigv2_req *r, const struct sigv2_auth *a,
		  const char *secret);

#endif
