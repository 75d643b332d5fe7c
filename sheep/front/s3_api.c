// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The S3 requests of the object storage endpoint (s3.h), path-style:
 * ListBuckets, Create/Head/DeleteBucket, GetBucketLocation, ListObjects
 * (v1 and v2: prefix, delimiter, max-keys, marker, continuation,
 * start-after, encoding-type=url), Put/Get/Head/DeleteObject with ranges,
 * conditions, user metadata and Content-MD5.  Every request is signed
 * (SigV4: an Authorization header or a presigned URL).  A subresource,
 * header or request this file does not implement is answered
 * NotImplemented, never accepted and ignored.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <openssl/evp.h>
#include "net.h"
#include "sigv4.h"
#include "s3names.h"
#include "s3req.h"
#include "util.h"
#include "front/s3.h"
#include "front/s3_bucket.h"
#include "front/s3_reg.h"

#define MAX_PUT		(UINT64_C(5) << 30)	/* one PUT, as S3 */
#define IO_CHUNK	(1U << 20)
#define SKEW_SEC	900
#define MAX_LIST	1000

/* a growable text buffer */
struct sbuf {
	char *p;
	size_t len, cap;
};

struct ctx {
	struct s3_conn *c;
	const struct http_request *r;
	char method[16];
	char bucket[S3REG_NAME_LEN * 2];
	char key[S3_MAX_KEY + 1];
	size_t klen;
	bool has_bucket, has_key, head;
	struct s3_param params[S3_MAX_PARAMS];
	int nr_params;
	struct s3_user user;
	char payload_hash[80];
	char *buf;			/* IO_CHUNK */
};

/* ---- text ---- */

static void sb_add(struct sbuf *s, const char *p, size_t len)
{
	if (s->len + len + 1 > s->cap) {
		s->cap = MAX(2 * s->cap, s->len + len + 1);
		s->p = xrealloc(s->p, s->cap);
	}
	memcpy(s->p + s->len, p, len);
	s->len += len;
	s->p[s->len] = 0;
}

/* a string literal */
#define sb_lit(s, lit)	sb_add(s, lit, sizeof(lit) - 1)

static void sb_printf(struct sbuf *s, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	sb_add(s, tmp, (size_t)MIN(n, (int)sizeof(tmp) - 1));
}

static void sb_xml(struct sbuf *s, const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		switch (p[i]) {
		case '&': sb_lit(s, "&amp;"); break;
		case '<': sb_lit(s, "&lt;"); break;
		case '>': sb_lit(s, "&gt;"); break;
		case '"': sb_lit(s, "&quot;"); break;
		case '\'': sb_lit(s, "&apos;"); break;
		default:
			/* XML 1.0 has no place for most control bytes */
			if ((unsigned char)p[i] < 0x20 && p[i] != '\t' &&
			    p[i] != '\n' && p[i] != '\r')
				sb_printf(s, "&#x%x;", (unsigned char)p[i]);
			else
				sb_add(s, p + i, 1);
		}
	}
}

/* encoding-type=url: what is not unreserved or '/' percent-encoded */
static void sb_key(struct sbuf *s, const char *p, size_t len, bool url)
{
	if (!url) {
		sb_xml(s, p, len);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (isalnum(ch) || strchr("-_.~/", ch))
			sb_add(s, p + i, 1);
		else
			sb_printf(s, "%%%02X", ch);
	}
}

static void http_date(uint64_t t, char *out, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, size, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void iso_date(uint64_t t, char *out, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, size, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

static void hex(const uint8_t *in, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", in[i]);
}

/* ---- answers ---- */

static const char *status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 416: return "Range Not Satisfiable";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

/* the status line and headers (@extra: more, each ending CRLF) */
static int send_head(struct ctx *x, int status, const char *extra,
		     uint64_t length, const char *ctype)
{
	char head[4096], date[64];
	int n;

	http_date((uint64_t)time(NULL), date, sizeof(date));
	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nDate: %s\r\n"
		     "Server: Kelpie\r\nx-amz-request-id: %" PRIx64 "\r\n"
		     "%s%s%s%sContent-Length: %" PRIu64 "\r\n%s\r\n",
		     status, status_text(status), date, now_msec(),
		     ctype ? "Content-Type: " : "", ctype ? ctype : "",
		     ctype ? "\r\n" : "", extra ? extra : "", length,
		     x->r->keep_alive ? "" : "Connection: close\r\n");
	if (n >= (int)sizeof(head))
		return -1;
	return s3_send(x->c, head, (size_t)n);
}

static void send_body(struct ctx *x, int status, const char *extra,
		      const struct sbuf *body, const char *ctype)
{
	size_t len = body ? body->len : 0;

	if (send_head(x, status, extra, len, len ? ctype : NULL))
		return;
	if (len && !x->head)
		s3_send(x->c, body->p, len);
}

static void error(struct ctx *x, int status, const char *code,
		  const char *fmt, ...)
{
	struct sbuf s = { 0 };
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sb_printf(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		  "<Error><Code>%s</Code><Message>", code);
	sb_xml(&s, msg, strlen(msg));
	sb_lit(&s, "</Message><Resource>");
	sb_xml(&s, x->r->path, x->r->path_len);
	sb_lit(&s, "</Resource></Error>\n");
	/* a body we did not read may follow: not on this connection */
	if (x->r->content_length || x->r->chunked)
		s3_close_after(x->c);
	send_body(x, status, NULL, &s, "application/xml");
	free(s.p);
}

static void internal(struct ctx *x, const char *what)
{
	error(x, 500, "InternalError", "%s failed; see the sheep's log", what);
}

/* ---- the request ---- */

static const struct s3_param *param(const struct ctx *x, const char *name)
{
	for (int i = 0; i < x->nr_params; i++)
		if (!strcmp(x->params[i].name, name))
			return &x->params[i];
	return NULL;
}

/* the first parameter not in @known (NULL-ended), but for signatures */
static const char *unknown_param(const struct ctx *x,
				 const char *const *known)
{
	for (int i = 0; i < x->nr_params; i++) {
		const char *n = x->params[i].name;
		bool ok = !strncmp(n, "X-Amz-", 6) || !strcmp(n, "x-id");

		for (int k = 0; known && known[k] && !ok; k++)
			ok = !strcmp(n, known[k]);
		if (!ok)
			return n;
	}
	return NULL;
}

/* the target's bucket and key, and the query: false if malformed */
static bool parse_target(struct ctx *x)
{
	int n = s3_parse_path(x->r->path, x->r->path_len, x->bucket,
			      sizeof(x->bucket), x->key, sizeof(x->key),
			      &x->klen);

	if (n < 0)
		return false;
	x->has_bucket = n >= 1;
	x->has_key = n == 2;
	x->nr_params = s3_parse_query(x->r->query, x->r->query_len,
				      x->params, S3_MAX_PARAMS);
	return x->nr_params >= 0;
}

static const char *header(const struct ctx *x, const char *name, char *out,
			  size_t size)
{
	const struct http_header *h = http_header(x->r, name);

	if (!h || h->vlen >= size)
		return NULL;
	memcpy(out, h->value, h->vlen);
	out[h->vlen] = 0;
	return out;
}

/* ---- authentication ---- */

static bool parse_amz_date(const char *s, time_t *t)
{
	struct tm tm = { 0 };
	const char *end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);

	if (!end || *end)
		return false;
	*t = timegm(&tm);
	return true;
}

/* the signature and the time: 0, or the error has been answered */
static int authenticate(struct ctx *x)
{
	const struct http_header *auth = http_header(x->r, "authorization");
	struct sigv4_hdr hdrs[HTTP_MAX_HEADERS];
	struct sigv4_auth a;
	struct sigv4_req sr = { 0 };
	char amz_date[32];
	time_t t, now = time(NULL);
	int ret;

	if ((auth && auth->vlen >= 4 && !memcmp(auth->value, "AWS ", 4)) ||
	    (!auth && param(x, "AWSAccessKeyId") && param(x, "Signature"))) {
		error(x, 501, "NotImplemented", "Signature Version 2 is not "
		      "supported; sign requests with Signature Version 4");
		return -1;
	}
	if (auth) {
		const char *d = header(x, "x-amz-date", amz_date,
				       sizeof(amz_date));

		ret = sigv4_parse_header(auth->value, auth->vlen, d,
					 d ? strlen(d) : 0, &a);
	} else if (param(x, "X-Amz-Algorithm")) {
		ret = sigv4_parse_query(x->r->query, x->r->query_len, &a);
	} else {
		error(x, 403, "AccessDenied", "Anonymous access is not "
		      "allowed: sign the request");
		return -1;
	}
	if (ret || strcmp(a.service, "s3") || !parse_amz_date(a.amz_date, &t)) {
		error(x, 400, "AuthorizationHeaderMalformed", "The signature "
		      "of the request cannot be parsed");
		return -1;
	}
	ret = s3reg_find_key(a.access_key, &x->user);
	if (ret == -2) {
		error(x, 503, "ServiceUnavailable", "The registry of users "
		      "cannot be read now");
		return -1;
	}
	if (ret) {
		error(x, 403, "InvalidAccessKeyId", "The access key %s is not "
		      "known", a.access_key);
		return -1;
	}
	if (a.presigned) {
		snprintf(x->payload_hash, sizeof(x->payload_hash),
			 "UNSIGNED-PAYLOAD");
	} else if (!header(x, "x-amz-content-sha256", x->payload_hash,
			   sizeof(x->payload_hash))) {
		error(x, 400, "InvalidRequest", "Missing required header for "
		      "this request: x-amz-content-sha256");
		return -1;
	}
	if (!strncmp(x->payload_hash, "STREAMING-", 10)) {
		error(x, 501, "NotImplemented", "Streaming (aws-chunked) "
		      "uploads are not supported yet");
		return -1;
	}
	if (strcmp(x->payload_hash, "UNSIGNED-PAYLOAD") &&
	    strlen(x->payload_hash) != 64) {
		error(x, 400, "InvalidArgument", "x-amz-content-sha256 must be "
		      "UNSIGNED-PAYLOAD or a SHA-256 in hex");
		return -1;
	}
	for (size_t i = 0; i < x->r->nr_hdrs; i++) {
		hdrs[i].name = x->r->hdrs[i].name;
		hdrs[i].nlen = x->r->hdrs[i].nlen;
		hdrs[i].value = x->r->hdrs[i].value;
		hdrs[i].vlen = x->r->hdrs[i].vlen;
	}
	sr.method = x->method;
	sr.path = x->r->path;
	sr.path_len = x->r->path_len;
	sr.query = x->r->query;
	sr.query_len = x->r->query_len;
	sr.hdrs = hdrs;
	sr.nr_hdrs = x->r->nr_hdrs;
	sr.payload_hash = x->payload_hash;
	if (!sigv4_verify(&sr, &a, x->user.secret)) {
		error(x, 403, "SignatureDoesNotMatch", "The request signature "
		      "we calculated does not match the signature you "
		      "provided. Check your key and signing method.");
		return -1;
	}
	if (a.presigned ? now > t + (time_t)a.expires || t > now + SKEW_SEC :
	    t > now + SKEW_SEC || t < now - SKEW_SEC) {
		error(x, 403, a.presigned ? "AccessDenied" :
		      "RequestTimeTooSkewed", a.presigned ?
		      "Request has expired" : "The difference between the "
		      "request time and the server's time is too large");
		return -1;
	}
	return 0;
}

/* ---- buckets ---- */

static void list_buckets(struct ctx *x)
{
	struct s3_bucket_rec *bs;
	struct sbuf s = { 0 };
	int n = s3reg_buckets_of(x->user.name, &bs);
	char date[40];

	if (n < 0) {
		internal(x, "Reading the registry");
		return;
	}
	sb_lit(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/"
	       "2006-03-01/\"><Owner><ID>");
	sb_xml(&s, x->user.name, strlen(x->user.name));
	sb_lit(&s, "</ID><DisplayName>");
	sb_xml(&s, x->user.name, strlen(x->user.name));
	sb_lit(&s, "</DisplayName></Owner><Buckets>");
	for (int i = 0; i < n; i++) {
		iso_date(bs[i].created, date, sizeof(date));
		sb_printf(&s, "<Bucket><Name>%s</Name><CreationDate>%s"
			  "</CreationDate></Bucket>", bs[i].name, date);
	}
	sb_lit(&s, "</Buckets></ListAllMyBucketsResult>\n");
	free(bs);
	send_body(x, 200, NULL, &s, "application/xml");
	free(s.p);
}

static void create_bucket(struct ctx *x)
{
	bool mine = false;
	char loc[sizeof(x->bucket) + 16];

	if (!s3_valid_bucket(x->bucket, strlen(x->bucket))) {
		error(x, 400, "InvalidBucketName", "The specified bucket is "
		      "not valid: 3 to 63 of a-z, 0-9, '.' and '-'");
		return;
	}
	/* CreateBucketConfiguration names a region: there is one */
	if (s3_body_drain(x->c)) {
		s3_close_after(x->c);
		return;
	}
	switch (s3b_create(x->bucket, x->user.name, &mine)) {
	case 0:
		snprintf(loc, sizeof(loc), "Location: /%s\r\n", x->bucket);
		send_head(x, 200, loc, 0, NULL);
		return;
	case -1:
		if (mine)
			error(x, 409, "BucketAlreadyOwnedByYou", "Your previous "
			      "request to create the named bucket succeeded "
			      "and you already own it.");
		else
			error(x, 409, "BucketAlreadyExists", "The requested "
			      "bucket name is not available.");
		return;
	default:
		internal(x, "Creating the bucket");
	}
}

/* the bucket named, the user's: 0, or answered */
static int open_bucket(struct ctx *x, struct s3_bucket **b)
{
	int ret = s3b_get(x->bucket, b);

	if (ret == -1) {
		error(x, 404, "NoSuchBucket", "The specified bucket does not "
		      "exist");
		return -1;
	}
	if (ret) {
		error(x, 503, "ServiceUnavailable", "The bucket cannot be "
		      "read now");
		return -1;
	}
	if (strcmp(s3b_user(*b), x->user.name)) {
		s3b_put(*b);
		error(x, 403, "AccessDenied", "Access Denied");
		return -1;
	}
	return 0;
}

/* writes go through the bucket's owner: 0, or answered */
static int need_owner(struct ctx *x, struct s3_bucket *b)
{
	if (s3b_is_owner(b))
		return 0;
	error(x, 503, "ServiceUnavailable", "Bucket %s is written through "
	      "the gateway of %s; this one serves its reads (forwarding "
	      "writes is to come)", x->bucket, s3b_owner(b));
	return -1;
}

static void delete_bucket(struct ctx *x, struct s3_bucket *b)
{
	if (need_owner(x, b))
		return;
	switch (s3b_destroy(b)) {
	case 0:
		send_head(x, 204, NULL, 0, NULL);
		return;
	case -1:
		error(x, 409, "BucketNotEmpty", "The bucket you tried to "
		      "delete is not empty");
		return;
	default:
		internal(x, "Deleting the bucket");
	}
}

/* ---- listing ---- */

struct lister {
	struct ctx *x;
	struct sbuf s;
	const char *prefix, *delim;
	size_t plen, dlen;
	bool url, v2, owner, truncated;
	int max, count;
	/* a common prefix just listed: skip what it covers */
	char skip[S3_MAX_KEY + 1];
	size_t skip_len;
	char last[S3_MAX_KEY + 1];	/* the last key or prefix listed */
	size_t last_len;
};

static void list_entry(struct lister *l, const char *key, size_t klen,
		       const struct s3_obj *o)
{
	char date[40], etag[33];

	iso_date(o->mtime, date, sizeof(date));
	hex(o->md5, 16, etag);
	sb_lit(&l->s, "<Contents><Key>");
	sb_key(&l->s, key, klen, l->url);
	sb_printf(&l->s, "</Key><LastModified>%s</LastModified><ETag>"
		  "&quot;%s&quot;</ETag><Size>%" PRIu64 "</Size>", date, etag,
		  o->size);
	if (l->owner) {
		sb_lit(&l->s, "<Owner><ID>");
		sb_xml(&l->s, l->x->user.name, strlen(l->x->user.name));
		sb_lit(&l->s, "</ID><DisplayName>");
		sb_xml(&l->s, l->x->user.name, strlen(l->x->user.name));
		sb_lit(&l->s, "</DisplayName></Owner>");
	}
	sb_lit(&l->s, "<StorageClass>STANDARD</StorageClass></Contents>");
}

static int list_one(const char *key, size_t klen, const struct s3_obj *o,
		    void *arg)
{
	struct lister *l = arg;
	const char *d;

	if (klen < l->plen || memcmp(key, l->prefix, l->plen))
		return 1;	/* past the prefix */
	if (l->skip_len && klen >= l->skip_len &&
	    !memcmp(key, l->skip, l->skip_len))
		return 0;	/* under the common prefix just listed */
	if (l->count == l->max) {
		l->truncated = true;
		return 1;
	}
	d = l->dlen ? memmem(key + l->plen, klen - l->plen, l->delim,
			     l->dlen) : NULL;
	if (d) {
		size_t cl = (size_t)(d - key) + l->dlen;

		sb_lit(&l->s, "<CommonPrefixes><Prefix>");
		sb_key(&l->s, key, cl, l->url);
		sb_lit(&l->s, "</Prefix></CommonPrefixes>");
		memcpy(l->skip, key, cl);
		l->skip_len = cl;
		memcpy(l->last, key, cl);
		l->last_len = cl;
		l->count++;
		/* seek past every key under it: the scan starts again */
		return 2;
	}
	list_entry(l, key, klen, o);
	memcpy(l->last, key, klen);
	l->last_len = klen;
	l->count++;
	return 0;
}

/* the first key after every key that starts with @p (@len bytes) */
static size_t after_prefix(const char *p, size_t len, char *out)
{
	memcpy(out, p, len);
	while (len && (unsigned char)out[len - 1] == 0xff)
		len--;
	if (len)
		out[len - 1]++;
	return len;
}

static void b64(const char *in, size_t len, char *out)
{
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in,
			(int)len);
}

static int unb64(const char *in, char *out, size_t size)
{
	size_t len = strlen(in);
	int n;

	if (len % 4 || len / 4 * 3 > size)
		return -1;
	n = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)in,
			    (int)len);
	if (n < 0)
		return -1;
	/* EVP_DecodeBlock counts the padding */
	for (size_t i = len; i > 0 && in[i - 1] == '='; i--)
		n--;
	return n;
}

static void list_xml_head(struct lister *l, const char *start,
			  const char *token)
{
	struct sbuf *s = &l->s;

	sb_lit(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "
	       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>");
	sb_xml(s, l->x->bucket, strlen(l->x->bucket));
	sb_lit(s, "</Name><Prefix>");
	sb_key(s, l->prefix, l->plen, l->url);
	sb_lit(s, "</Prefix>");
	if (l->v2) {
		if (token) {
			sb_lit(s, "<ContinuationToken>");
			sb_xml(s, token, strlen(token));
			sb_lit(s, "</ContinuationToken>");
		}
		if (start) {
			sb_lit(s, "<StartAfter>");
			sb_key(s, start, strlen(start), l->url);
			sb_lit(s, "</StartAfter>");
		}
	} else {
		sb_lit(s, "<Marker>");
		if (start)
			sb_key(s, start, strlen(start), l->url);
		sb_lit(s, "</Marker>");
	}
	sb_printf(s, "<MaxKeys>%d</MaxKeys>", l->max);
	if (l->dlen) {
		sb_lit(s, "<Delimiter>");
		sb_key(s, l->delim, l->dlen, l->url);
		sb_lit(s, "</Delimiter>");
	}
	if (l->url)
		sb_lit(s, "<EncodingType>url</EncodingType>");
}

static void list_xml_tail(struct lister *l)
{
	struct sbuf *s = &l->s;
	char tok[(S3_MAX_KEY + 2) / 3 * 4 + 4];

	if (l->v2)
		sb_printf(s, "<KeyCount>%d</KeyCount>", l->count);
	sb_printf(s, "<IsTruncated>%s</IsTruncated>",
		  l->truncated ? "true" : "false");
	if (l->truncated && l->v2) {
		b64(l->last, l->last_len, tok);
		sb_printf(s, "<NextContinuationToken>%s"
			  "</NextContinuationToken>", tok);
	} else if (l->truncated && l->dlen) {
		sb_lit(s, "<NextMarker>");
		sb_key(s, l->last, l->last_len, l->url);
		sb_lit(s, "</NextMarker>");
	}
	sb_lit(s, "</ListBucketResult>\n");
}

/* byte strings in the index's order */
static int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, MIN(alen, blen));

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* where the walk starts: after the marker, token or start-after */
static int list_start(struct ctx *x, struct lister *l, char *start,
		      size_t *slen, const char **shown, const char **token)
{
	const struct s3_param *p;
	size_t n;

	*slen = 0;
	*shown = *token = NULL;
	if (l->v2 && (p = param(x, "continuation-token"))) {
		int m = unb64(p->value, start, S3_MAX_KEY);

		if (m < 0) {
			error(x, 400, "InvalidArgument", "The continuation "
			      "token provided is incorrect");
			return -1;
		}
		*token = p->value;
		*slen = (size_t)m;
	} else if ((p = param(x, l->v2 ? "start-after" : "marker"))) {
		n = strlen(p->value);
		if (n > S3_MAX_KEY)
			n = S3_MAX_KEY;
		memcpy(start, p->value, n);
		*slen = n;
		*shown = p->value;
	}
	if (l->v2 && (p = param(x, "start-after")))
		*shown = p->value;
	if (*slen) {
		/* strictly after it: the key with a NUL appended */
		start[(*slen)++] = 0;
	}
	/* a token after a common prefix: past everything under it */
	if (*token && l->dlen && *slen > l->dlen + 1 &&
	    !memcmp(start + *slen - 1 - l->dlen, l->delim, l->dlen))
		*slen = after_prefix(start, *slen - 1, start);
	/* never before the prefix */
	if (key_cmp(start, *slen, l->prefix, l->plen) < 0) {
		memcpy(start, l->prefix, l->plen);
		*slen = l->plen;
	}
	return 0;
}

static void list_objects(struct ctx *x, struct s3_bucket *b)
{
	static const char *const known[] = { "list-type", "prefix",
		"delimiter", "max-keys", "continuation-token", "start-after",
		"marker", "encoding-type", "fetch-owner", NULL };
	const struct s3_param *p;
	struct lister l = { .x = x, .max = MAX_LIST };
	char start[S3_MAX_KEY + 2];
	const char *shown, *token, *bad = unknown_param(x, known);
	size_t slen;
	int ret;

	if (bad) {
		error(x, 501, "NotImplemented", "The bucket subresource %s is "
		      "not supported", bad);
		return;
	}
	p = param(x, "list-type");
	l.v2 = p && !strcmp(p->value, "2");
	if (p && !l.v2) {
		error(x, 400, "InvalidArgument", "list-type must be 2");
		return;
	}
	p = param(x, "prefix");
	l.prefix = p ? p->value : "";
	l.plen = strlen(l.prefix);
	p = param(x, "delimiter");
	l.delim = p ? p->value : "";
	l.dlen = strlen(l.delim);
	p = param(x, "encoding-type");
	if (p && strcmp(p->value, "url")) {
		error(x, 400, "InvalidArgument", "Invalid Encoding Method "
		      "specified in Request");
		return;
	}
	l.url = p != NULL;
	p = param(x, "fetch-owner");
	l.owner = !l.v2 || (p && !strcmp(p->value, "true"));
	p = param(x, "max-keys");
	if (p) {
		char *end;
		long m = strtol(p->value, &end, 10);

		if (!*p->value || *end || m < 0) {
			error(x, 400, "InvalidArgument", "max-keys must be a "
			      "number from 0");
			return;
		}
		l.max = m < MAX_LIST ? (int)m : MAX_LIST;
	}
	if (l.plen > S3_MAX_KEY || l.dlen > S3_MAX_KEY) {
		error(x, 400, "KeyTooLongError", "Your key is too long");
		return;
	}
	if (list_start(x, &l, start, &slen, &shown, &token))
		return;
	list_xml_head(&l, shown, token);
	/* each common prefix restarts the walk past what it covers */
	do {
		ret = s3b_scan(b, start, slen, list_one, &l);
		if (ret == 2)
			slen = after_prefix(l.skip, l.skip_len, start);
	} while (ret == 2 && slen);
	if (ret < 0) {
		free(l.s.p);
		internal(x, "Reading the bucket's index");
		return;
	}
	list_xml_tail(&l);
	send_body(x, 200, NULL, &l.s, "application/xml");
	free(l.s.p);
}

/* ---- objects ---- */

/* headers S3 gives a meaning this gateway does not implement yet */
static const char *unsupported_put_header(struct ctx *x)
{
	static const char *const no[] = { "x-amz-copy-source",
		"x-amz-server-side-encryption", "x-amz-tagging",
		"x-amz-website-redirect-location", "x-amz-object-lock-mode",
		"x-amz-object-lock-retain-until-date",
		"x-amz-object-lock-legal-hold", "x-amz-checksum-algorithm",
		"x-amz-checksum-crc32", "x-amz-checksum-crc32c",
		"x-amz-checksum-sha1", "x-amz-checksum-sha256",
		"x-amz-sdk-checksum-algorithm", "x-amz-trailer",
		"content-encoding", "cache-control", "content-disposition",
		"content-language", "expires", "if-match", "if-none-match",
		"x-amz-grant-read", "x-amz-grant-full-control",
		"x-amz-grant-read-acp", "x-amz-grant-write-acp", NULL };
	char v[64];

	for (int i = 0; no[i]; i++)
		if (http_header(x->r, no[i]))
			return no[i];
	if (header(x, "x-amz-acl", v, sizeof(v)) && strcmp(v, "private"))
		return "x-amz-acl";
	if (header(x, "x-amz-storage-class", v, sizeof(v)) &&
	    strcmp(v, "STANDARD"))
		return "x-amz-storage-class";
	return NULL;
}

/* x-amz-meta-* into o->meta: 0, or answered */
static int take_meta(struct ctx *x, struct s3_obj *o)
{
	size_t total = 0;

	o->meta_len = 0;
	for (size_t i = 0; i < x->r->nr_hdrs; i++) {
		const struct http_header *h = &x->r->hdrs[i];
		char name[128];

		if (h->nlen <= 11 || strncasecmp(h->name, "x-amz-meta-", 11))
			continue;
		total += h->nlen - 11 + h->vlen;
		if (total > S3_MAX_META || h->nlen >= sizeof(name) ||
		    o->meta_len + h->nlen - 11 + h->vlen + 2 > S3_MAX_META) {
			error(x, 400, "MetadataTooLarge", "Your metadata "
			      "headers exceed the maximum allowed metadata "
			      "size (2 KB)");
			return -1;
		}
		for (size_t k = 11; k < h->nlen; k++)
			o->meta[o->meta_len++] = (char)tolower(h->name[k]);
		o->meta[o->meta_len++] = 0;
		memcpy(o->meta + o->meta_len, h->value, h->vlen);
		o->meta_len += h->vlen;
		o->meta[o->meta_len++] = 0;
	}
	return 0;
}

struct digests {
	EVP_MD_CTX *md5, *sha;
};

static void digests_init(struct digests *d)
{
	d->md5 = EVP_MD_CTX_new();
	d->sha = EVP_MD_CTX_new();
	EVP_DigestInit_ex(d->md5, EVP_md5(), NULL);
	EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL);
}

static void digests_free(struct digests *d)
{
	EVP_MD_CTX_free(d->md5);
	EVP_MD_CTX_free(d->sha);
}

/* the body into the data volume at @off (or o->data): 0, or answered */
static int receive_body(struct ctx *x, struct s3_bucket *b, struct s3_obj *o,
			struct digests *d)
{
	uint64_t done = 0;

	while (done < o->size) {
		size_t want = (size_t)MIN(o->size - done, (uint64_t)IO_CHUNK);
		size_t got = 0;

		while (got < want) {
			ssize_t n = s3_body_read(x->c, x->buf + got,
						 want - got);

			if (n <= 0) {
				s3_close_after(x->c);
				return -1;	/* the client went */
			}
			got += (size_t)n;
		}
		EVP_DigestUpdate(d->md5, x->buf, got);
		EVP_DigestUpdate(d->sha, x->buf, got);
		if (o->is_inline)
			memcpy(o->data + done, x->buf, got);
		else if (s3b_write(b, o->off + done, x->buf, (uint32_t)got)) {
			s3_close_after(x->c);
			internal(x, "Writing the object's data");
			return -1;
		}
		done += got;
	}
	return 0;
}

/* Content-MD5 and x-amz-content-sha256 against the bytes: 0 or answered */
static int check_digests(struct ctx *x, struct s3_obj *o, struct digests *d)
{
	uint8_t sha[32];
	char sha_hex[65], want[64], md5_b64[32];
	unsigned int n;

	EVP_DigestFinal_ex(d->md5, o->md5, &n);
	EVP_DigestFinal_ex(d->sha, sha, &n);
	if (header(x, "content-md5", want, sizeof(want))) {
		b64((const char *)o->md5, 16, md5_b64);
		if (strcmp(want, md5_b64)) {
			error(x, 400, "BadDigest", "The Content-MD5 you "
			      "specified did not match what we received.");
			return -1;
		}
	}
	if (strcmp(x->payload_hash, "UNSIGNED-PAYLOAD")) {
		hex(sha, 32, sha_hex);
		if (strcasecmp(sha_hex, x->payload_hash)) {
			error(x, 400, "XAmzContentSHA256Mismatch", "The "
			      "provided 'x-amz-content-sha256' header does not "
			      "match what was computed.");
			return -1;
		}
	}
	return 0;
}

static void put_object(struct ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o;
	struct digests d;
	char ct[S3_MAX_CTYPE + 1], md5_check[64], extra[128], etag[33];
	const char *bad = unknown_param(x, NULL);

	if (bad || (bad = unsupported_put_header(x))) {
		error(x, 501, "NotImplemented", "%s is not supported for "
		      "PutObject yet", bad);
		return;
	}
	if (x->r->chunked || !x->r->has_length) {
		error(x, 411, "MissingContentLength", "You must provide the "
		      "Content-Length HTTP header.");
		return;
	}
	if (x->r->content_length > MAX_PUT) {
		error(x, 400, "EntityTooLarge", "Your proposed upload exceeds "
		      "the maximum allowed size (5 GiB in one PUT)");
		return;
	}
	if (need_owner(x, b))
		return;
	if (header(x, "content-md5", md5_check, sizeof(md5_check)) &&
	    strlen(md5_check) != 24) {
		error(x, 400, "InvalidDigest", "The Content-MD5 you specified "
		      "is not valid.");
		return;
	}
	o = xzalloc(sizeof(*o));
	o->size = x->r->content_length;
	o->mtime = (uint64_t)time(NULL);
	o->is_inline = o->size <= S3_MAX_INLINE;
	if (header(x, "content-type", ct, sizeof(ct))) {
		o->ctype_len = (uint16_t)strlen(ct);
		memcpy(o->ctype, ct, o->ctype_len);
	}
	if (take_meta(x, o))
		goto out;
	if (!o->is_inline && s3b_reserve(b, o->size, &o->off)) {
		internal(x, "Reserving room in the bucket");
		goto out;
	}
	digests_init(&d);
	if (receive_body(x, b, o, &d) || check_digests(x, o, &d)) {
		digests_free(&d);
		goto out;
	}
	digests_free(&d);
	if (s3b_commit(b, x->key, x->klen, o)) {
		internal(x, "Committing the object");
		goto out;
	}
	hex(o->md5, 16, etag);
	snprintf(extra, sizeof(extra), "ETag: \"%s\"\r\n", etag);
	send_head(x, 200, extra, 0, NULL);
out:
	free(o);
}

/* the range header: 0 whole, 1 a range [*from, *to], -1 answered */
static int parse_range(struct ctx *x, uint64_t size, uint64_t *from,
		       uint64_t *to)
{
	char v[128];

	if (!header(x, "range", v, sizeof(v)))
		return 0;
	switch (s3_parse_range(v, size, from, to)) {
	case S3_RANGE_ONE:
		return 1;
	case S3_RANGE_MANY:
		error(x, 501, "NotImplemented", "Only one range per request "
		      "is supported");
		return -1;
	case S3_RANGE_UNSATISFIABLE:
		error(x, 416, "InvalidRange", "The requested range is not "
		      "satisfiable");
		return -1;
	default:
		/* as HTTP allows: a range not understood is no range */
		return 0;
	}
}

static bool parse_http_date(const char *s, time_t *t)
{
	struct tm tm = { 0 };
	const char *end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);

	if (!end || *end)
		return false;
	*t = timegm(&tm);
	return true;
}

/* does the If-Match / If-None-Match list @v name @etag (or "*")? */
static bool etag_listed(const char *v, const char *etag)
{
	char quoted[40];

	snprintf(quoted, sizeof(quoted), "\"%s\"", etag);
	return strstr(v, quoted) || strstr(v, etag) || !strcmp(v, "*");
}

/* the conditions: 0 go on, -1 answered (304 or 412) */
static int conditions(struct ctx *x, const struct s3_obj *o, const char *etag,
		      const char *extra)
{
	char v[512];
	time_t t;

	if (header(x, "if-match", v, sizeof(v)) && !etag_listed(v, etag))
		goto failed;
	if (!http_header(x->r, "if-match") &&
	    header(x, "if-unmodified-since", v, sizeof(v)) &&
	    parse_http_date(v, &t) && (time_t)o->mtime > t)
		goto failed;
	if (header(x, "if-none-match", v, sizeof(v))) {
		if (etag_listed(v, etag))
			goto not_modified;
	} else if (header(x, "if-modified-since", v, sizeof(v)) &&
		   parse_http_date(v, &t) && (time_t)o->mtime <= t) {
		goto not_modified;
	}
	return 0;
failed:
	error(x, 412, "PreconditionFailed", "At least one of the "
	      "pre-conditions you specified did not hold");
	return -1;
not_modified:
	send_head(x, 304, extra, 0, NULL);
	return -1;
}

static void object_headers(const struct s3_obj *o, const char *etag,
			   struct sbuf *h)
{
	char date[64];
	size_t i = 0;

	http_date(o->mtime, date, sizeof(date));
	sb_printf(h, "ETag: \"%s\"\r\nLast-Modified: %s\r\n"
		  "Accept-Ranges: bytes\r\n", etag, date);
	while (i < o->meta_len) {
		const char *name = o->meta + i;
		const char *val = name + strlen(name) + 1;

		sb_lit(h, "x-amz-meta-");
		sb_add(h, name, strlen(name));
		sb_lit(h, ": ");
		sb_add(h, val, strlen(val));
		sb_lit(h, "\r\n");
		i = (size_t)(val - o->meta) + strlen(val) + 1;
	}
}

static void send_data(struct ctx *x, struct s3_bucket *b,
		      const struct s3_obj *o, uint64_t from, uint64_t len)
{
	if (o->is_inline) {
		s3_send(x->c, o->data + from, (size_t)len);
		return;
	}
	while (len) {
		uint32_t n = (uint32_t)MIN(len, (uint64_t)IO_CHUNK);

		if (s3b_read(b, o->off + from, x->buf, n)) {
			/* the head promised bytes we cannot give */
			sd_err("S3: reading %s/%.*s failed", x->bucket,
			       (int)x->klen, x->key);
			s3_close_after(x->c);
			return;
		}
		if (s3_send(x->c, x->buf, n))
			return;
		from += n;
		len -= n;
	}
}

static void get_object(struct ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o = xmalloc(sizeof(*o));
	struct sbuf h = { 0 };
	char etag[33], ctype[S3_MAX_CTYPE + 1];
	uint64_t from = 0, to = 0;
	const char *bad = unknown_param(x, NULL);
	int range, ret;

	if (bad) {
		error(x, 501, "NotImplemented", "%s is not supported for "
		      "GetObject yet", bad);
		goto out;
	}
	ret = s3b_lookup(b, x->key, x->klen, o);
	if (ret == -1) {
		error(x, 404, "NoSuchKey", "The specified key does not exist.");
		goto out;
	}
	if (ret) {
		internal(x, "Reading the bucket's index");
		goto out;
	}
	hex(o->md5, 16, etag);
	object_headers(o, etag, &h);
	if (conditions(x, o, etag, h.p))
		goto out;
	range = parse_range(x, o->size, &from, &to);
	if (range < 0)
		goto out;
	memcpy(ctype, o->ctype, o->ctype_len);
	ctype[o->ctype_len] = 0;
	if (range)
		sb_printf(&h, "Content-Range: bytes %" PRIu64 "-%" PRIu64
			  "/%" PRIu64 "\r\n", from, to, o->size);
	else
		to = o->size ? o->size - 1 : 0;
	if (send_head(x, range ? 206 : 200, h.p, o->size ? to - from + 1 : 0,
		      o->ctype_len ? ctype : "binary/octet-stream"))
		goto out;
	if (!x->head && o->size)
		send_data(x, b, o, from, to - from + 1);
out:
	free(h.p);
	free(o);
}

static void delete_object(struct ctx *x, struct s3_bucket *b)
{
	const char *bad = unknown_param(x, NULL);

	if (bad) {
		error(x, 501, "NotImplemented", "%s is not supported for "
		      "DeleteObject yet", bad);
		return;
	}
	if (need_owner(x, b))
		return;
	if (s3b_delete(b, x->key, x->klen)) {
		internal(x, "Deleting the object");
		return;
	}
	send_head(x, 204, NULL, 0, NULL);
}

/* ---- routing ---- */

static bool is(const struct ctx *x, const char *m)
{
	return !strcmp(x->method, m);
}

static void bucket_request(struct ctx *x)
{
	static const char *const none[] = { NULL };
	struct s3_bucket *b;
	const char *bad;

	if (is(x, "PUT")) {
		bad = unknown_param(x, none);
		if (bad)
			error(x, 501, "NotImplemented", "The bucket "
			      "subresource %s is not supported", bad);
		else
			create_bucket(x);
		return;
	}
	if (!is(x, "GET") && !is(x, "HEAD") && !is(x, "DELETE")) {
		error(x, 405, "MethodNotAllowed", "The specified method is "
		      "not allowed against this resource.");
		return;
	}
	if (open_bucket(x, &b))
		return;
	if (is(x, "DELETE")) {
		bad = unknown_param(x, none);
		if (bad)
			error(x, 501, "NotImplemented", "The bucket "
			      "subresource %s is not supported", bad);
		else
			delete_bucket(x, b);
	} else if (is(x, "HEAD")) {
		send_head(x, 200, NULL, 0, NULL);
	} else if (param(x, "location") && x->nr_params == 1) {
		struct sbuf s = { 0 };

		sb_lit(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<LocationConstraint xmlns=\"http://s3.amazonaws.com/"
		       "doc/2006-03-01/\"/>\n");
		send_body(x, 200, NULL, &s, "application/xml");
		free(s.p);
	} else {
		list_objects(x, b);
	}
	s3b_put(b);
}

static void object_request(struct ctx *x)
{
	struct s3_bucket *b;

	if (!is(x, "GET") && !is(x, "HEAD") && !is(x, "PUT") &&
	    !is(x, "DELETE")) {
		error(x, 501, "NotImplemented", "%s on an object is not "
		      "supported yet", x->method);
		return;
	}
	if (open_bucket(x, &b))
		return;
	if (is(x, "PUT"))
		put_object(x, b);
	else if (is(x, "DELETE"))
		delete_object(x, b);
	else
		get_object(x, b);
	s3b_put(b);
}

static void route(struct ctx *x)
{
	if (!x->has_bucket) {
		if (is(x, "GET"))
			list_buckets(x);
		else
			error(x, 405, "MethodNotAllowed", "The specified "
			      "method is not allowed against this resource.");
		return;
	}
	if (x->has_key)
		object_request(x);
	else
		bucket_request(x);
}

/* answer the request of @c (its head parsed) */
static void s3_serve(struct s3_conn *c)
{
	struct ctx *x = xzalloc(sizeof(*x));

	x->c = c;
	x->r = s3_request(c);
	memcpy(x->method, x->r->method, MIN(x->r->method_len,
					    sizeof(x->method) - 1));
	x->head = is(x, "HEAD");
	if (x->r->chunked) {
		/* its end cannot be found without reading it all */
		s3_close_after(c);
	}
	if (!parse_target(x)) {
		error(x, 400, "InvalidURI", "Couldn't parse the specified URI.");
		goto out;
	}
	if (x->has_key && !x->klen) {
		error(x, 400, "InvalidArgument", "An object key is empty");
		goto out;
	}
	if (authenticate(x))
		goto out;
	x->buf = xmalloc(IO_CHUNK);
	route(x);
out:
	if (x->nr_params > 0)
		s3_params_free(x->params, x->nr_params);
	free(x->buf);
	free(x);
}

static char s3_addr[256];
static int s3_port;

int s3_configure(const char *spec)
{
	return net_parse_listen(spec, s3_addr, sizeof(s3_addr), &s3_port);
}

int s3_init(const char *default_addr)
{
	if (!s3_port)
		return 0;
	return s3_conns_start(s3_addr[0] ? s3_addr : default_addr, s3_port,
			      s3_serve);
}
