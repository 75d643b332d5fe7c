// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Swift on the S3 port (s3_resp.h, doc/object-storage.md): auth v1
 * (GET /auth/v1.0 with X-Auth-User and X-Auth-Key: a user's name and
 * secret) hands out a token; requests under /v1/AUTH_<user> with it reach
 * the account (the user's buckets), containers (buckets) and objects,
 * the same ones S3 serves.  A token is the user's name, an expiry and an
 * HMAC of both under the user's secret: any gateway checks it, and it
 * dies with the user or its secret.  Writes go through the bucket's owner
 * as S3's do.  What is not implemented is answered 501.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "s3names.h"
#include "util.h"
#include "front/s3_resp.h"

#define TOKEN_SEC	86400		/* as Swift's default */
#define TOKEN_TAG	"KLP1"
#define TOKEN_HEAD	(4 + 16 + 64)	/* tag, expiry, MAC: then the user */
#define MAX_LISTED	10000		/* Swift's listing limit */

static bool is(const struct s3_ctx *x, const char *m)
{
	return !strcmp(x->method, m);
}

/* ---- tokens ---- */

static void token_mac(const struct s3_user *u, uint64_t expiry,
		      char out[65])
{
	unsigned char mac[32];
	unsigned int n = 0;
	char msg[S3REG_NAME_LEN + 40];
	int len = snprintf(msg, sizeof(msg), "swift-token:%s:%016" PRIx64,
			   u->name, expiry);

	HMAC(EVP_sha256(), u->secret, (int)strlen(u->secret),
	     (unsigned char *)msg, (size_t)len, mac, &n);
	s3_hex(mac, sizeof(mac), out);
}

static void token_make(const struct s3_user *u, uint64_t expiry, char *out,
		       size_t size)
{
	char mac[65];

	token_mac(u, expiry, mac);
	snprintf(out, size, TOKEN_TAG "%016" PRIx64 "%s%s", expiry, mac,
		 u->name);
}

/* X-Auth-Token: its user into x->user; 0, or answered */
static int token_check(struct s3_ctx *x)
{
	char t[TOKEN_HEAD + S3REG_NAME_LEN + 1], want[65], exp[17];
	uint64_t expiry;
	int ret;

	if (!s3_header(x, "x-auth-token", t, sizeof(t)) &&
	    !s3_header(x, "x-storage-token", t, sizeof(t)))
		goto denied;
	if (strlen(t) <= TOKEN_HEAD || strncmp(t, TOKEN_TAG, 4))
		goto denied;
	memcpy(exp, t + 4, 16);
	exp[16] = 0;
	expiry = strtoull(exp, NULL, 16);
	if (expiry < (uint64_t)time(NULL))
		goto denied;
	ret = s3reg_find_user(t + TOKEN_HEAD, &x->user);
	if (ret == -2) {
		s3_error(x, 503, "ServiceUnavailable", "The registry of users "
			 "cannot be read now");
		return -1;
	}
	if (ret)
		goto denied;
	token_mac(&x->user, expiry, want);
	if (CRYPTO_memcmp(want, t + 20, 64))
		goto denied;
	return 0;
denied:
	s3_error(x, 401, "Unauthorized", "Unauthorized: a valid X-Auth-Token "
		 "is needed (from /auth/v1.0)");
	return -1;
}

/* GET /auth/v1.0: X-Auth-User (USER or USER:USER), X-Auth-Key (secret) */
static void auth(struct s3_ctx *x)
{
	char who[2 * S3REG_NAME_LEN], key[S3REG_SECRET_LEN + 1];
	char token[TOKEN_HEAD + S3REG_NAME_LEN + 1], host[256], extra[1024];
	char *colon;
	struct s3_user u;
	uint64_t expiry = (uint64_t)time(NULL) + TOKEN_SEC;

	if ((!s3_header(x, "x-auth-user", who, sizeof(who)) &&
	     !s3_header(x, "x-storage-user", who, sizeof(who))) ||
	    (!s3_header(x, "x-auth-key", key, sizeof(key)) &&
	     !s3_header(x, "x-storage-pass", key, sizeof(key))))
		goto denied;
	/* each user is an account of its own: "alice" or "alice:alice" */
	colon = strchr(who, ':');
	if (colon) {
		*colon = 0;
		if (strcmp(who, colon + 1))
			goto denied;
	}
	if (!s3_valid_user(who, strlen(who)) || s3reg_find_user(who, &u) ||
	    strlen(key) != strlen(u.secret) ||
	    CRYPTO_memcmp(key, u.secret, strlen(key)))
		goto denied;
	token_make(&u, expiry, token, sizeof(token));
	if (!s3_header(x, "host", host, sizeof(host)) || strchr(host, '/'))
		snprintf(host, sizeof(host), "%s", s3b_self());
	snprintf(extra, sizeof(extra), "X-Auth-Token: %s\r\nX-Storage-Token: "
		 "%s\r\nX-Auth-Token-Expires: %d\r\nX-Storage-Url: http://%s/"
		 "v1/AUTH_%s\r\n", token, token, TOKEN_SEC, host, u.name);
	s3_send_head(x, 200, extra, 0, NULL);
	return;
denied:
	s3_error(x, 401, "Unauthorized", "Unauthorized: X-Auth-User and "
		 "X-Auth-Key do not name a user and its secret");
}

/* ---- listings ---- */

/* a string in JSON: quotes, backslashes and control bytes escaped */
static void sb_json(struct sbuf *s, const char *p, size_t len)
{
	sb_lit(s, "\"");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '"' || c == '\\')
			sb_printf(s, "\\%c", c);
		else if (c < 0x20)
			sb_printf(s, "\\u%04x", c);
		else
			sb_add(s, p + i, 1);
	}
	sb_lit(s, "\"");
}

/* format=json (true), plain (false); xml is not implemented: -1 */
static int list_format(struct s3_ctx *x, bool *json)
{
	const struct s3_param *f = s3_param_get(x, "format");
	char accept[128];

	*json = (f && !strcmp(f->value, "json")) ||
		(!f && s3_header(x, "accept", accept, sizeof(accept)) &&
		 strstr(accept, "application/json"));
	if (f && strcmp(f->value, "json") && strcmp(f->value, "plain")) {
		s3_error(x, 501, "NotImplemented", "format=%s is not supported: "
			 "json or plain", f->value);
		return -1;
	}
	return 0;
}

/* limit (at most MAX_LISTED), and the parameters not implemented */
static int list_params(struct s3_ctx *x, int *limit, bool *json)
{
	static const char *const known[] = { "format", "prefix", "delimiter",
		"marker", "end_marker", "limit", NULL };
	const struct s3_param *p = s3_param_get(x, "limit");
	const char *bad = s3_unknown_param(x, known);
	char *end;
	long v;

	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported in a "
			 "listing", bad);
		return -1;
	}
	*limit = MAX_LISTED;
	if (p) {
		v = strtol(p->value, &end, 10);
		if (!*p->value || *end || v < 0) {
			s3_error(x, 412, "PreconditionFailed", "limit must be "
				 "a number from 0");
			return -1;
		}
		*limit = v < MAX_LISTED ? (int)v : MAX_LISTED;
	}
	return list_format(x, json);
}

static const char *param(const struct s3_ctx *x, const char *name)
{
	const struct s3_param *p = s3_param_get(x, name);

	return p ? p->value : NULL;
}

/* a listing's body: 200, or 204 if empty and plain (as Swift) */
static void send_listing(struct s3_ctx *x, struct sbuf *s, bool json,
			 const char *extra)
{
	if (json)
		sb_lit(s, "]");
	if (!json && !s->len)
		s3_send_head(x, 204, extra, 0, NULL);
	else
		s3_send_body(x, 200, extra, s, json ?
			     "application/json; charset=utf-8" :
			     "text/plain; charset=utf-8");
}

struct usage {
	uint64_t count, bytes;
};

static int count_one(const char *key, size_t klen, const struct s3_obj *o,
		     void *arg)
{
	struct usage *u = arg;

	u->count++;
	u->bytes += o->size;
	return 0;
}

/*
 * A bucket's objects and bytes: kept in its index, or (a bucket that held
 * objects before they were kept) a walk of it: 0 or -2
 */
static int usage_of(const char *name, struct usage *u)
{
	struct s3_bucket *b;
	int ret;

	memset(u, 0, sizeof(*u));
	if (s3b_get(name, &b))
		return -2;
	ret = s3b_usage(b, &u->count, &u->bytes);
	if (ret == -1)
		ret = s3b_scan(b, "", 0, count_one, u);
	s3b_put(b);
	return ret ? -2 : 0;
}

static void account_get(struct s3_ctx *x)
{
	const char *prefix = param(x, "prefix"), *marker = param(x, "marker");
	const char *end_marker = param(x, "end_marker");
	struct s3_bucket_rec *bs;
	struct usage all = { 0 }, u;
	struct sbuf s = { 0 };
	char extra[256];
	bool json = false;
	int n, limit = 0, listed = 0;

	if (!x->head && list_params(x, &limit, &json))
		return;
	n = s3reg_buckets_of(x->user.name, &bs);
	if (n < 0) {
		s3_internal(x, "Reading the registry");
		return;
	}
	if (json)
		sb_lit(&s, "[");
	for (int i = 0; i < n; i++) {
		if (usage_of(bs[i].name, &u)) {
			s3_internal(x, "Reading a container's index");
			goto out;
		}
		all.count += u.count;
		all.bytes += u.bytes;
		if (x->head || listed == limit ||
		    (prefix && strncmp(bs[i].name, prefix, strlen(prefix))) ||
		    (marker && strcmp(bs[i].name, marker) <= 0) ||
		    (end_marker && strcmp(bs[i].name, end_marker) >= 0))
			continue;
		if (json)
			sb_printf(&s, "%s{\"name\": \"%s\", \"count\": %" PRIu64
				  ", \"bytes\": %" PRIu64 "}", listed ? ", " :
				  "", bs[i].name, u.count, u.bytes);
		else
			sb_printf(&s, "%s\n", bs[i].name);
		listed++;
	}
	snprintf(extra, sizeof(extra), "X-Account-Container-Count: %d\r\n"
		 "X-Account-Object-Count: %" PRIu64 "\r\nX-Account-Bytes-Used: "
		 "%" PRIu64 "\r\n", n, all.count, all.bytes);
	if (x->head)
		s3_send_head(x, 204, extra, 0, NULL);
	else
		send_listing(x, &s, json, extra);
out:
	free(bs);
	free(s.p);
}

static void emit_json(struct s3_lister *l, const char *key, size_t klen,
		      const struct s3_obj *o)
{
	char etag[S3_ETAG_LEN], date[40], ct[S3_MAX_CTYPE + 1];

	s3_etag(o, etag);
	s3_iso_date(o->mtime, date, sizeof(date));
	date[19] = 0;	/* Swift's: no milliseconds, no zone */
	memcpy(ct, o->ctype, o->ctype_len);
	ct[o->ctype_len] = 0;
	sb_printf(&l->s, "%s{\"name\": ", l->count ? ", " : "");
	sb_json(&l->s, key, klen);
	sb_printf(&l->s, ", \"hash\": \"%s\", \"bytes\": %" PRIu64 ", "
		  "\"last_modified\": \"%s.000000\", \"content_type\": ", etag,
		  o->size, date);
	sb_json(&l->s, o->ctype_len ? ct : "application/octet-stream",
		o->ctype_len ? o->ctype_len : 24);
	sb_lit(&l->s, "}");
}

static void emit_json_prefix(struct s3_lister *l, const char *p, size_t len)
{
	sb_printf(&l->s, "%s{\"subdir\": ", l->count ? ", " : "");
	sb_json(&l->s, p, len);
	sb_lit(&l->s, "}");
}

static void emit_plain(struct s3_lister *l, const char *key, size_t klen,
		       const struct s3_obj *o)
{
	sb_add(&l->s, key, klen);
	sb_lit(&l->s, "\n");
}

static void emit_plain_prefix(struct s3_lister *l, const char *p, size_t len)
{
	sb_add(&l->s, p, len);
	sb_lit(&l->s, "\n");
}

/* the listing of a container into l->s: 0 or -2 */
static int container_walk(struct s3_ctx *x, struct s3_bucket *b,
			  struct s3_lister *l, bool json)
{
	const char *marker = param(x, "marker");

	l->prefix = param(x, "prefix") ? param(x, "prefix") : "";
	l->plen = strlen(l->prefix);
	l->delim = param(x, "delimiter") ? param(x, "delimiter") : "";
	l->dlen = strlen(l->delim);
	l->after_len = marker ? MIN(strlen(marker), (size_t)S3_MAX_KEY) : 0;
	memcpy(l->after, marker ? marker : "", l->after_len);
	l->emit_contents = json ? emit_json : emit_plain;
	l->emit_prefix = json ? emit_json_prefix : emit_plain_prefix;
	if (json)
		sb_lit(&l->s, "[");
	return s3_walk(b, l);
}

static void container_get(struct s3_ctx *x, struct s3_bucket *b)
{
	struct s3_lister *l = xzalloc(sizeof(*l));
	struct usage u;
	char extra[160];
	bool json = false;
	int ret;

	if (usage_of(x->bucket, &u)) {
		s3_internal(x, "Reading the container's index");
		goto out;
	}
	snprintf(extra, sizeof(extra), "X-Container-Object-Count: %" PRIu64
		 "\r\nX-Container-Bytes-Used: %" PRIu64 "\r\n", u.count,
		 u.bytes);
	if (x->head) {
		s3_send_head(x, 204, extra, 0, NULL);
		goto out;
	}
	l->x = x;
	if (list_params(x, &l->max, &json))
		goto out;
	if (param(x, "end_marker")) {
		s3_error(x, 501, "NotImplemented", "end_marker is not supported "
			 "in a container listing");
		goto out;
	}
	ret = container_walk(x, b, l, json);
	if (ret)
		s3_internal(x, "Reading the container's index");
	else
		send_listing(x, &l->s, json, extra);
out:
	free(l->s.p);
	free(l);
}

/* ---- containers and objects ---- */

static void container_put(struct s3_ctx *x)
{
	bool mine = false;

	if (!s3_valid_bucket(x->bucket, strlen(x->bucket))) {
		s3_error(x, 400, "InvalidBucketName", "A container's name here "
			 "is an S3 bucket's: 3 to 63 of a-z, 0-9, '.' and '-'");
		return;
	}
	switch (s3b_create(x->bucket, x->user.name, 0, 0, &mine)) {
	case 0:
		s3_send_head(x, 201, NULL, 0, NULL);
		return;
	case -1:
		if (mine)
			s3_send_head(x, 202, NULL, 0, NULL);
		else
			s3_error(x, 409, "BucketAlreadyExists", "The name is "
				 "another user's container (names are shared "
				 "with S3's buckets, cluster-wide)");
		return;
	default:
		s3_internal(x, "Creating the container");
	}
}

static void container_delete(struct s3_ctx *x, struct s3_bucket *b)
{
	switch (s3b_destroy(b)) {
	case 0:
		s3_send_head(x, 204, NULL, 0, NULL);
		return;
	case -1:
		s3_error(x, 409, "BucketNotEmpty", "There was a conflict when "
			 "trying to complete your request: the container is "
			 "not empty");
		return;
	default:
		s3_internal(x, "Deleting the container");
	}
}

/* headers of a write this gateway does not implement, or NULL */
static const char *unsupported_write(const struct s3_ctx *x)
{
	static const char *const no[] = { "x-copy-from", "x-delete-at",
		"x-delete-after", "x-object-manifest", "x-static-large-object",
		"x-symlink-target", "content-encoding", "content-disposition",
		"x-detect-content-type", "x-container-read",
		"x-container-write", "x-versions-location", "x-history-location",
		"x-remove-object-meta-", NULL };

	for (int i = 0; no[i]; i++)
		if (http_header(x->r, no[i]))
			return no[i];
	for (size_t i = 0; i < x->r->nr_hdrs; i++)
		if (x->r->hdrs[i].nlen > 17 &&
		    !strncasecmp(x->r->hdrs[i].name, "x-container-meta-", 17))
			return "X-Container-Meta-*";
	return NULL;
}

static void object_put(struct s3_ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o = xzalloc(sizeof(*o));
	char ct[S3_MAX_CTYPE + 1], extra[96], etag[S3_ETAG_LEN];

	o->mtime = (uint64_t)time(NULL);
	if (s3_header(x, "content-type", ct, sizeof(ct))) {
		o->ctype_len = (uint16_t)strlen(ct);
		memcpy(o->ctype, ct, o->ctype_len);
	}
	if (s3_take_meta(x, o) || s3_receive(x, b, o, true))
		goto out;
	if (s3b_commit(b, x->key, x->klen, o)) {
		s3_internal(x, "Committing the object");
		goto out;
	}
	s3_etag(o, etag);
	snprintf(extra, sizeof(extra), "ETag: %s\r\n", etag);
	s3_send_head(x, 201, extra, 0, NULL);
out:
	free(o);
}

/* POST: the object's metadata (and type) replaced, its bytes kept */
static void object_post(struct s3_ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o = xmalloc(sizeof(*o));
	char ct[S3_MAX_CTYPE + 1];
	int ret = s3b_lookup(b, x->key, x->klen, o);

	if (ret == -1) {
		s3_error(x, 404, "NoSuchKey", "Not Found");
		goto out;
	}
	if (ret) {
		s3_internal(x, "Reading the object's entry");
		goto out;
	}
	if (s3_header(x, "content-type", ct, sizeof(ct))) {
		o->ctype_len = (uint16_t)strlen(ct);
		memcpy(o->ctype, ct, o->ctype_len);
	}
	if (s3_take_meta(x, o))
		goto out;
	if (s3b_commit(b, x->key, x->klen, o))
		s3_internal(x, "Committing the object");
	else
		s3_send_head(x, 202, NULL, 0, NULL);
out:
	free(o);
}

static void object_delete(struct s3_ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o = xmalloc(sizeof(*o));
	int ret = s3b_lookup(b, x->key, x->klen, o);

	free(o);
	if (ret == -1)
		s3_error(x, 404, "NoSuchKey", "Not Found");
	else if (ret || s3b_delete(b, x->key, x->klen))
		s3_internal(x, "Deleting the object");
	else
		s3_send_head(x, 204, NULL, 0, NULL);
}

static void container_request(struct s3_ctx *x)
{
	struct s3_bucket *b;

	if (is(x, "PUT")) {
		container_put(x);
		return;
	}
	if (!is(x, "GET") && !is(x, "HEAD") && !is(x, "DELETE")) {
		s3_error(x, 501, "NotImplemented", "%s on a container is not "
			 "supported", x->method);
		return;
	}
	if (s3_open_bucket(x, &b))
		return;
	if (is(x, "DELETE") && s3_need_owner(x, &b))
		return;	/* relayed to the owner, or answered */
	if (is(x, "DELETE"))
		container_delete(x, b);
	else
		container_get(x, b);
	s3b_put(b);
}

static void object_request(struct s3_ctx *x)
{
	/*
	 * No object here is a symlink or a manifest, so asking for the link
	 * or the manifest itself (as the swift command does) is asking for
	 * the object
	 */
	static const char *const known[] = { "symlink", "multipart-manifest",
					     NULL };
	const char *bad = s3_unknown_param(x, known);
	struct s3_bucket *b;
	bool write = is(x, "PUT") || is(x, "POST") || is(x, "DELETE");

	if (!bad && write)
		bad = unsupported_write(x);
	if (bad || (!write && !is(x, "GET") && !is(x, "HEAD"))) {
		s3_error(x, 501, "NotImplemented", "%s is not supported on an "
			 "object", bad ? bad : x->method);
		return;
	}
	if (s3_open_bucket(x, &b))
		return;
	if (write && s3_need_owner(x, &b))
		return;	/* relayed to the owner, or answered */
	if (is(x, "PUT"))
		object_put(x, b);
	else if (is(x, "POST"))
		object_post(x, b);
	else if (is(x, "DELETE"))
		object_delete(x, b);
	else
		s3_get_object(x, b);
	s3b_put(b);
}

/* "/v1/AUTH_<account>[/<container>[/<object>]]": 0, or answered */
static int parse_target(struct s3_ctx *x)
{
	const char *p = x->r->path + 9, *end = x->r->path + x->r->path_len;
	const char *slash = memchr(p, '/', (size_t)(end - p));
	char account[S3REG_NAME_LEN * 3];
	int n;

	if (s3_pct_decode(p, (size_t)((slash ? slash : end) - p), account,
			  sizeof(account)) < 0 ||
	    strcmp(account, x->user.name)) {
		s3_error(x, 403, "AccessDenied", "Forbidden: the token is not "
			 "for this account");
		return -1;
	}
	n = slash ? s3_parse_path(slash, (size_t)(end - slash), x->bucket,
				  sizeof(x->bucket), x->key, sizeof(x->key),
				  &x->klen) : 0;
	x->nr_params = s3_parse_query(x->r->query, x->r->query_len,
				      x->params, S3_MAX_PARAMS);
	if (n < 0 || x->nr_params < 0 || x->klen > S3_MAX_KEY) {
		s3_error(x, 400, "InvalidURI", "The path or the query cannot "
			 "be parsed");
		return -1;
	}
	x->has_bucket = n >= 1;
	x->has_key = n == 2;
	return 0;
}

bool swift_request(struct s3_ctx *x)
{
	static const char auth_path[] = "/auth/v1.0";
	const struct http_request *r = x->r;

	if (r->path_len >= 10 && !memcmp(r->path, auth_path, 10) &&
	    (r->path_len == 10 || (r->path_len == 11 && r->path[10] == '/')) &&
	    !http_header(r, "authorization")) {
		x->swift = true;
		x->op = S3_OP_SWIFT_AUTH;
		if (is(x, "GET"))
			auth(x);
		else
			s3_error(x, 405, "MethodNotAllowed", "GET the token");
		return true;
	}
	if (r->path_len < 9 || memcmp(r->path, "/v1/AUTH_", 9))
		return false;
	x->swift = true;
	snprintf(x->payload_hash, sizeof(x->payload_hash), "UNSIGNED-PAYLOAD");
	if (token_check(x) || parse_target(x))
		return true;
	x->op = x->has_key ? S3_OP_SWIFT_OBJECT : x->has_bucket ?
		S3_OP_SWIFT_CONTAINER : S3_OP_SWIFT_ACCOUNT;
	if (x->has_key)
		object_request(x);
	else if (x->has_bucket)
		container_request(x);
	else if (is(x, "GET") || is(x, "HEAD"))
		account_get(x);
	else
		s3_error(x, 501, "NotImplemented", "%s on an account is not "
			 "supported", x->method);
	return true;
}
