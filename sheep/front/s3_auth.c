// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Who signed an S3 request (s3_resp.h): Signature Version 4 (an
 * "AWS4-HMAC-SHA256" Authorization header or a presigned URL's X-Amz-*
 * parameters, lib/sigv4.c) or Version 2 ("AWS KEY:SIG", or
 * AWSAccessKeyId, Expires and Signature, lib/sigv2.c), the user of the
 * key from the registry, and the time: 15 minutes of skew, presigned
 * URLs for a week at most.  What the request says of its body (its
 * SHA-256, or aws-chunked) is set here for s3_body.c to check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sigv2.h"
#include "sigv4.h"
#include "util.h"
#include "front/s3.h"
#include "front/s3_reg.h"
#include "front/s3_resp.h"

#define SKEW_SEC	900
#define STREAMING_SIGNED	"STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define STREAMING_UNSIGNED	"STREAMING-UNSIGNED-PAYLOAD-TRAILER"

static bool parse_amz_date(const char *s, time_t *t)
{
	struct tm tm = { 0 };
	const char *end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);

	if (!end || *end)
		return false;
	*t = timegm(&tm);
	return true;
}

/* the request's headers as the signers see them */
static size_t signer_headers(const struct s3_ctx *x, struct sigv4_hdr *hdrs)
{
	for (size_t i = 0; i < x->r->nr_hdrs; i++) {
		hdrs[i].name = x->r->hdrs[i].name;
		hdrs[i].nlen = x->r->hdrs[i].nlen;
		hdrs[i].value = x->r->hdrs[i].value;
		hdrs[i].vlen = x->r->hdrs[i].vlen;
	}
	return x->r->nr_hdrs;
}

/* the user of @key into x->user: 0, or the error has been answered */
static int find_user(struct s3_ctx *x, const char *key)
{
	int ret = s3reg_find_key(key, &x->user);

	if (ret == -2) {
		s3_error(x, 503, "ServiceUnavailable", "The registry of users "
		      "cannot be read now");
		return -1;
	}
	if (ret) {
		s3_error(x, 403, "InvalidAccessKeyId", "The access key %s is not "
		      "known", key);
		return -1;
	}
	return 0;
}

static int signature_mismatch(struct s3_ctx *x)
{
	s3_error(x, 403, "SignatureDoesNotMatch", "The request signature "
	      "we calculated does not match the signature you "
	      "provided. Check your key and signing method.");
	return -1;
}

/* the payload hash a SigV4 request names: 0, or answered */
static int payload_hash_v4(struct s3_ctx *x, bool presigned)
{
	if (presigned) {
		snprintf(x->payload_hash, sizeof(x->payload_hash),
			 "UNSIGNED-PAYLOAD");
	} else if (!s3_header(x, "x-amz-content-sha256", x->payload_hash,
			   sizeof(x->payload_hash))) {
		s3_error(x, 400, "InvalidRequest", "Missing required header for "
		      "this request: x-amz-content-sha256");
		return -1;
	}
	x->streaming_unsigned = !strcmp(x->payload_hash, STREAMING_UNSIGNED);
	x->streaming = x->streaming_unsigned ||
		       !strcmp(x->payload_hash, STREAMING_SIGNED);
	if (!strncmp(x->payload_hash, "STREAMING-", 10) && !x->streaming) {
		s3_error(x, 501, "NotImplemented", "%s uploads are not "
			 "supported: " STREAMING_SIGNED " and "
			 STREAMING_UNSIGNED " are", x->payload_hash);
		return -1;
	}
	if (strcmp(x->payload_hash, "UNSIGNED-PAYLOAD") && !x->streaming &&
	    strlen(x->payload_hash) != 64) {
		s3_error(x, 400, "InvalidArgument", "x-amz-content-sha256 must be "
		      "UNSIGNED-PAYLOAD or a SHA-256 in hex");
		return -1;
	}
	return 0;
}

/* Signature Version 4: 0, or the error has been answered */
static int authenticate_v4(struct s3_ctx *x, const struct http_header *auth)
{
	struct sigv4_hdr hdrs[HTTP_MAX_HEADERS];
	struct sigv4_auth a;
	struct sigv4_req sr = { 0 };
	char amz_date[32];
	time_t t, now = time(NULL);
	int ret;

	if (auth) {
		const char *d = s3_header(x, "x-amz-date", amz_date,
				       sizeof(amz_date));

		ret = sigv4_parse_header(auth->value, auth->vlen, d,
					 d ? strlen(d) : 0, &a);
	} else {
		ret = sigv4_parse_query(x->r->query, x->r->query_len, &a);
	}
	if (ret || strcmp(a.service, "s3") || !parse_amz_date(a.amz_date, &t)) {
		s3_error(x, 400, "AuthorizationHeaderMalformed", "The signature "
		      "of the request cannot be parsed");
		return -1;
	}
	if (find_user(x, a.access_key) || payload_hash_v4(x, a.presigned))
		return -1;
	sr.method = x->method;
	sr.path = x->r->path;
	sr.path_len = x->r->path_len;
	sr.query = x->r->query;
	sr.query_len = x->r->query_len;
	sr.hdrs = hdrs;
	sr.nr_hdrs = signer_headers(x, hdrs);
	sr.payload_hash = x->payload_hash;
	x->auth = a;	/* the seed of an aws-chunked body's signatures */
	if (!sigv4_verify(&sr, &a, x->user.secret))
		return signature_mismatch(x);
	if (a.presigned ? now > t + (time_t)a.expires || t > now + SKEW_SEC :
	    t > now + SKEW_SEC || t < now - SKEW_SEC) {
		s3_error(x, 403, a.presigned ? "AccessDenied" :
		      "RequestTimeTooSkewed", a.presigned ?
		      "Request has expired" : "The difference between the "
		      "request time and the server's time is too large");
		return -1;
	}
	return 0;
}

/* a SigV2 date: RFC 7231's form, or with +0000 in place of GMT */
static bool parse_v2_date(const char *s, time_t *t)
{
	struct tm tm = { 0 };
	const char *end = strptime(s, "%a, %d %b %Y %H:%M:%S", &tm);

	if (!end || (strcmp(end, " GMT") && strcmp(end, " +0000")))
		return false;
	*t = timegm(&tm);
	return true;
}

/* a SigV2 request's time (or a presigned URL's expiry): 0, or answered */
static int check_v2_time(struct s3_ctx *x, const struct sigv2_auth *a)
{
	char d[64];
	time_t t, now = time(NULL);

	if (a->presigned) {
		if ((uint64_t)now > a->expires) {
			s3_error(x, 403, "AccessDenied", "Request has expired");
			return -1;
		}
		if (a->expires > (uint64_t)now + SIGV4_MAX_EXPIRES) {
			s3_error(x, 403, "AccessDenied", "Expires is more than "
				 "a week ahead: presigned URLs last a week at "
				 "most");
			return -1;
		}
		return 0;
	}
	if (!(s3_header(x, "x-amz-date", d, sizeof(d)) ||
	      s3_header(x, "date", d, sizeof(d))) || !parse_v2_date(d, &t)) {
		s3_error(x, 403, "AccessDenied", "AWS authentication requires "
			 "a valid Date or x-amz-date header");
		return -1;
	}
	if (t > now + SKEW_SEC || t < now - SKEW_SEC) {
		s3_error(x, 403, "RequestTimeTooSkewed", "The difference between "
			 "the request time and the server's time is too large");
		return -1;
	}
	return 0;
}

/* query parameter @name's value, "" if it has none */
static const char *param_value(const struct s3_ctx *x, const char *name)
{
	const struct s3_param *p = s3_param_get(x, name);

	return p && p->value ? p->value : "";
}

/*
 * Signature Version 2 (an "AWS KEY:SIG" header or a presigned URL): 0,
 * or the error has been answered.  It signs no body: one is checked
 * against its x-amz-content-sha256 or Content-MD5 when it has them.
 */
static int authenticate_v2(struct s3_ctx *x, const struct http_header *auth)
{
	struct sigv4_hdr hdrs[HTTP_MAX_HEADERS];
	struct sigv2_req sr = { 0 };
	struct sigv2_auth a;
	int ret;

	if (auth)
		ret = sigv2_parse_header(auth->value, auth->vlen, &a);
	else
		ret = sigv2_parse_query(param_value(x, "AWSAccessKeyId"),
					param_value(x, "Signature"),
					param_value(x, "Expires"), &a);
	if (ret) {
		s3_error(x, 400, "AuthorizationHeaderMalformed", "The signature "
		      "of the request cannot be parsed");
		return -1;
	}
	if (find_user(x, a.access_key))
		return -1;
	if (!s3_header(x, "x-amz-content-sha256", x->payload_hash,
		       sizeof(x->payload_hash)))
		snprintf(x->payload_hash, sizeof(x->payload_hash),
			 "UNSIGNED-PAYLOAD");
	if (strcmp(x->payload_hash, "UNSIGNED-PAYLOAD") &&
	    strlen(x->payload_hash) != 64) {
		s3_error(x, 400, "InvalidArgument", "With Signature Version 2, "
			 "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or a "
			 "SHA-256 in hex (aws-chunked needs Version 4)");
		return -1;
	}
	sr.method = x->method;
	sr.bucket = x->vhost[0] ? x->vhost : NULL;
	sr.path = x->r->path;
	sr.path_len = x->r->path_len;
	sr.query = x->r->query;
	sr.query_len = x->r->query_len;
	sr.hdrs = hdrs;
	sr.nr_hdrs = signer_headers(x, hdrs);
	if (!sigv2_verify(&sr, &a, x->user.secret))
		return signature_mismatch(x);
	x->v2_query = a.presigned;
	return check_v2_time(x, &a);
}

int s3_authenticate(struct s3_ctx *x)
{
	const struct http_header *auth = http_header(x->r, "authorization");

	if (auth && auth->vlen >= 4 && !memcmp(auth->value, "AWS ", 4))
		return authenticate_v2(x, auth);
	if (auth)
		return authenticate_v4(x, auth);
	if (s3_param_get(x, "X-Amz-Algorithm"))
		return authenticate_v4(x, NULL);
	if (s3_param_get(x, "AWSAccessKeyId") && s3_param_get(x, "Signature"))
		return authenticate_v2(x, NULL);
	s3_error(x, 403, "AccessDenied", "Anonymous access is not allowed: "
		 "sign the request");
	return -1;
}
