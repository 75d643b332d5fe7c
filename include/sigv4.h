/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * AWS Signature Version 4 for S3 (lib/sigv4.c): the parts of a request's
 * signature, from its Authorization header or a presigned URL's query,
 * and the signature the secret gives (doc/object-storage.md).  No I/O,
 * no allocation: every input is a client's and bounded here.
 */
#ifndef KELPIE_SIGV4_H
#define KELPIE_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIGV4_MAX_KEY		128	/* access key id */
#define SIGV4_MAX_SIGNED	1024	/* the SignedHeaders list */
#define SIGV4_MAX_CANONICAL	65536	/* canonical request */
#define SIGV4_MAX_EXPIRES	604800	/* presigned: a week, as S3 */

/* one request header as received (not NUL terminated) */
struct sigv4_hdr {
	const char *name, *value;
	size_t nlen, vlen;
};

/* what the canonical request is made of */
struct sigv4_req {
	const char *method;
	const char *path;		/* the target up to '?', as received */
	size_t path_len;
	const char *query;		/* after '?', as received; may be NULL */
	size_t query_len;
	const struct sigv4_hdr *hdrs;
	size_t nr_hdrs;
	/* x-amz-content-sha256, or UNSIGNED-PAYLOAD for a presigned URL */
	const char *payload_hash;
};

/* the client's claims: credential scope, signed headers, signature */
struct sigv4_auth {
	char access_key[SIGV4_MAX_KEY + 1];
	char date[9];			/* YYYYMMDD */
	char region[64];
	char service[32];
	char amz_date[17];		/* YYYYMMDDTHHMMSSZ */
	char signed_headers[SIGV4_MAX_SIGNED + 1];
	char signature[65];		/* lower-case hex */
	uint32_t expires;		/* presigned only: seconds */
	bool presigned;
};

/*
 * The Authorization header's value ("AWS4-HMAC-SHA256 Credential=...,
 * SignedHeaders=..., Signature=...") and the request's X-Amz-Date (or
 * NULL): 0, or -1 if it is not one
 */
int sigv4_parse_header(const char *value, size_t len, const char *amz_date,
		       size_t amz_len, struct sigv4_auth *a);
/* a presigned URL's query (X-Amz-Algorithm, -Credential, ...): 0 or -1 */
int sigv4_parse_query(const char *query, size_t len, struct sigv4_auth *a);
/*
 * The canonical request into @buf (@size bytes): its length, or -1 if a
 * signed header is missing, the request is malformed or too long.  For a
 * presigned request X-Amz-Signature is left out of the query.
 */
int sigv4_canonical(const struct sigv4_req *r, const struct sigv4_auth *a,
		    char *buf, size_t size);
/* the signature of @canonical under @secret, as lower-case hex */
void sigv4_sign(const char *secret, const struct sigv4_auth *a,
		const char *canonical, size_t len, char hex[65]);
/*
 * aws-chunked (STREAMING-AWS4-HMAC-SHA256-PAYLOAD): the signature of a
 * chunk whose data have the SHA-256 @chunk_sha, after the chunk (or the
 * request, for the first) whose signature is @prev, as lower-case hex
 */
void sigv4_chunk_sign(const char *secret, const struct sigv4_auth *a,
		      const char prev[65], const unsigned char chunk_sha[32],
		      char hex[65]);
/*
 * Everything: canonical request, signature, and a comparison in constant
 * time.  true if @r carries @a's signature under @secret.
 */
bool sigv4_verify(const struct sigv4_req *r, const struct sigv4_auth *a,
		  const char *secret);

#endif
