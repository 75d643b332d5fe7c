// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * AWS Signature Version 2 for S3 (include/sigv2.h).  The string to sign:
 *
 *   METHOD \n Content-MD5 \n Content-Type \n DATE \n
 *   x-amz-name:value \n ... (lower-case names, sorted, repeats joined
 *   with commas, values trimmed)
 *   RESOURCE
 *
 * DATE is the Date header, empty when x-amz-date is there (that one is
 * signed among the x-amz headers; botocore signs both, so that form is
 * taken too), and a presigned URL's Expires.  A bucket's own path
 * ("/photos") is signed with its slash ("/photos/") or without.
 * RESOURCE is "/BUCKET" for a virtual-host request, then the path as
 * received, then the subresources of the query that S3 signs, sorted,
 * their values decoded ("?uploadId=X&partNumber=1" becomes
 * "?partNumber=1&uploadId=X").  The signature is the base64 of the
 * HMAC-SHA1 of that under the secret.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "s3req.h"
#include "sigv2.h"

#define MAX_SUBS	32
#define MAX_VALUE	1024

/* the query parameters that are part of the resource, sorted by name */
static const char *const subresources[] = {
	"accelerate", "acl", "analytics", "cors", "delete", "inventory",
	"lifecycle", "location", "logging", "metrics", "notification",
	"object-lock", "partNumber", "policy", "replication",
	"requestPayment", "response-cache-control",
	"response-content-disposition", "response-content-encoding",
	"response-content-language", "response-content-type",
	"response-expires", "restore", "select", "select-type",
	"storageClass", "tagging", "torrent", "uploadId", "uploads",
	"versionId", "versioning", "versions", "website",
};

static bool is_subresource(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(subresources) / sizeof(*subresources);
	     i++)
		if (strlen(subresources[i]) == n &&
		    !memcmp(subresources[i], s, n))
			return true;
	return false;
}

static bool put(char *buf, size_t size, size_t *pos, const char *s,
		size_t len)
{
	if (len > size - *pos)
		return false;
	memcpy(buf + *pos, s, len);
	*pos += len;
	return true;
}

static bool putc_(char *buf, size_t size, size_t *pos, char c)
{
	return put(buf, size, pos, &c, 1);
}

/* @h's value without the blanks around it */
static void trimmed(const struct sigv4_hdr *h, const char **v, size_t *n)
{
	const char *s = h->value;
	size_t len = h->vlen;

	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	*v = s;
	*n = len;
}

static const struct sigv4_hdr *header(const struct sigv2_req *r,
				      const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < r->nr_hdrs; i++)
		if (r->hdrs[i].nlen == n &&
		    !strncasecmp(r->hdrs[i].name, name, n))
			return &r->hdrs[i];
	return NULL;
}

/* the value of header @name (empty if none) and a newline */
static bool put_header_line(const struct sigv2_req *r, const char *name,
			    char *buf, size_t size, size_t *pos)
{
	const struct sigv4_hdr *h = header(r, name);
	const char *v = "";
	size_t n = 0;

	if (h)
		trimmed(h, &v, &n);
	return put(buf, size, pos, v, n) && putc_(buf, size, pos, '\n');
}

static bool is_amz(const struct sigv4_hdr *h)
{
	return h->nlen > 6 && !strncasecmp(h->name, "x-amz-", 6);
}

static int name_cmp(const struct sigv4_hdr *a, const struct sigv4_hdr *b)
{
	size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
	int c = strncasecmp(a->name, b->name, n);

	if (c)
		return c;
	return a->nlen < b->nlen ? -1 : a->nlen > b->nlen;
}

/* by name, repeats in the order they came (their places in the array) */
static int hdr_cmp(const void *x, const void *y)
{
	const struct sigv4_hdr *a = *(const struct sigv4_hdr *const *)x;
	const struct sigv4_hdr *b = *(const struct sigv4_hdr *const *)y;
	int c = name_cmp(a, b);

	return c ? c : (a < b ? -1 : a > b);
}

/* the x-amz-* headers, one line per name, repeats joined with commas */
static bool put_amz_headers(const struct sigv2_req *r, char *buf, size_t size,
			    size_t *pos)
{
	const struct sigv4_hdr **amz;
	size_t nr = 0;
	bool ok = true;

	amz = calloc(r->nr_hdrs ? r->nr_hdrs : 1, sizeof(*amz));
	if (!amz)
		return false;
	for (size_t i = 0; i < r->nr_hdrs; i++)
		if (is_amz(&r->hdrs[i]))
			amz[nr++] = &r->hdrs[i];
	qsort(amz, nr, sizeof(*amz), hdr_cmp);
	for (size_t i = 0; ok && i < nr; i++) {
		const char *v;
		size_t n;
		bool same = i && !name_cmp(amz[i - 1], amz[i]);

		if (!same) {
			if (i)
				ok = putc_(buf, size, pos, '\n');
			for (size_t k = 0; ok && k < amz[i]->nlen; k++)
				ok = putc_(buf, size, pos,
					   (char)tolower((unsigned char)amz[i]->name[k]));
			ok = ok && putc_(buf, size, pos, ':');
		} else {
			ok = putc_(buf, size, pos, ',');
		}
		trimmed(amz[i], &v, &n);
		ok = ok && put(buf, size, pos, v, n);
	}
	if (ok && nr)
		ok = putc_(buf, size, pos, '\n');
	free(amz);
	return ok;
}

struct sub {
	const char *name;
	size_t nlen;
	char *value;		/* decoded; NULL if none */
};

static int sub_cmp(const void *x, const void *y)
{
	const struct sub *a = x, *b = y;
	size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
	int c = memcmp(a->name, b->name, n);

	if (c || a->nlen != b->nlen)
		return c ? c : (a->nlen < b->nlen ? -1 : 1);
	if (!a->value || !b->value)
		return !!a->value - !!b->value;
	return strcmp(a->value, b->value);
}

/*
 * The subresources of @q into @subs: how many, or -(N + 1) when one is
 * malformed or there are too many, N of them to be freed
 */
static int find_subs(const char *q, size_t len, struct sub *subs)
{
	size_t i = 0;
	int nr = 0;

	while (q && i < len) {
		const char *p = q + i, *amp = memchr(p, '&', len - i);
		size_t plen = amp ? (size_t)(amp - p) : len - i;
		const char *eq = memchr(p, '=', plen);
		size_t nlen = eq ? (size_t)(eq - p) : plen;

		i += plen + 1;
		if (!is_subresource(p, nlen))
			continue;
		if (nr == MAX_SUBS)
			return -nr - 1;
		subs[nr] = (struct sub){ p, nlen, NULL };
		nr++;
		if (!eq)
			continue;
		subs[nr - 1].value = malloc(MAX_VALUE);
		if (!subs[nr - 1].value ||
		    s3_pct_decode(eq + 1, plen - nlen - 1, subs[nr - 1].value,
				  MAX_VALUE) < 0)
			return -nr - 1;
	}
	return nr;
}

static void free_subs(struct sub *subs, int nr)
{
	for (int i = 0; i < nr; i++)
		free(subs[i].value);
}

/* a path-style path of a bucket alone without its slash: "/photos" */
static bool bare_bucket(const struct sigv2_req *r)
{
	return !r->bucket && r->path_len > 1 &&
	       !memchr(r->path + 1, '/', r->path_len - 1);
}

/*
 * "/BUCKET" (virtual host), the path (with @slash a '/' after a bare
 * bucket, as S3 writes a bucket's resource), "?sub&sub=value..."
 */
static bool put_resource(const struct sigv2_req *r, bool slash, char *buf,
			 size_t size, size_t *pos)
{
	struct sub subs[MAX_SUBS];
	int nr = find_subs(r->query, r->query_len, subs);
	bool ok;

	if (nr < 0) {
		free_subs(subs, -nr - 1);
		return false;
	}
	ok = !r->bucket || (putc_(buf, size, pos, '/') &&
			    put(buf, size, pos, r->bucket, strlen(r->bucket)));
	ok = ok && put(buf, size, pos, r->path, r->path_len);
	if (ok && slash && bare_bucket(r))
		ok = putc_(buf, size, pos, '/');
	qsort(subs, (size_t)nr, sizeof(*subs), sub_cmp);
	for (int i = 0; ok && i < nr; i++) {
		ok = putc_(buf, size, pos, i ? '&' : '?') &&
		     put(buf, size, pos, subs[i].name, subs[i].nlen);
		if (ok && subs[i].value)
			ok = putc_(buf, size, pos, '=') &&
			     put(buf, size, pos, subs[i].value,
				 strlen(subs[i].value));
	}
	free_subs(subs, nr);
	return ok;
}

/*
 * With @date_anyway the Date header is signed even beside x-amz-date;
 * with @slash a bare bucket's path ends with a slash
 */
static int string_to_sign(const struct sigv2_req *r,
			  const struct sigv2_auth *a, bool date_anyway,
			  bool slash, char *buf, size_t size)
{
	size_t pos = 0;
	bool ok;
	char exp[24];

	if (!r->path_len || r->path[0] != '/')
		return -1;
	ok = put(buf, size, &pos, r->method, strlen(r->method)) &&
	     putc_(buf, size, &pos, '\n') &&
	     put_header_line(r, "content-md5", buf, size, &pos) &&
	     put_header_line(r, "content-type", buf, size, &pos);
	if (ok && a->presigned) {
		int n = snprintf(exp, sizeof(exp), "%" PRIu64 "\n", a->expires);

		ok = put(buf, size, &pos, exp, (size_t)n);
	} else if (ok && header(r, "x-amz-date") && !date_anyway) {
		ok = putc_(buf, size, &pos, '\n');
	} else if (ok) {
		ok = put_header_line(r, "date", buf, size, &pos);
	}
	ok = ok && put_amz_headers(r, buf, size, &pos) &&
	     put_resource(r, slash, buf, size, &pos);
	return ok && pos <= (size_t)INT32_MAX ? (int)pos : -1;
}

int sigv2_string_to_sign(const struct sigv2_req *r, const struct sigv2_auth *a,
			 char *buf, size_t size)
{
	return string_to_sign(r, a, false, false, buf, size);
}

void sigv2_sign(const char *secret, const char *sts, size_t len,
		char out[SIGV2_SIG_LEN + 1])
{
	unsigned char h[20];
	unsigned int n = sizeof(h);

	HMAC(EVP_sha1(), secret, (int)strlen(secret),
	     (const unsigned char *)sts, len, h, &n);
	EVP_EncodeBlock((unsigned char *)out, h, (int)n);
	OPENSSL_cleanse(h, sizeof(h));
}

bool sigv2_verify(const struct sigv2_req *r, const struct sigv2_auth *a,
		  const char *secret)
{
	char *buf = malloc(SIGV2_MAX_STS);
	char sig[SIGV2_SIG_LEN + 1];
	bool ok = false;
	/*
	 * S3 says an empty date beside x-amz-date, botocore signs the Date
	 * it sent; S3 writes a bucket as "/photos/", botocore too, but a
	 * client may sign the path it sent: "/photos".  Each form is taken.
	 */
	int dates = header(r, "date") && header(r, "x-amz-date") ? 2 : 1;
	int paths = bare_bucket(r) ? 2 : 1;

	for (int i = 0; buf && !ok && i < dates * paths; i++) {
		int n = string_to_sign(r, a, i % 2 && dates == 2,
				       i / dates == 1, buf, SIGV2_MAX_STS);

		if (n < 0)
			break;
		sigv2_sign(secret, buf, (size_t)n, sig);
		ok = !CRYPTO_memcmp(sig, a->signature, SIGV2_SIG_LEN);
	}
	free(buf);
	return ok;
}

/* a base64 signature of exactly SIGV2_SIG_LEN characters */
static int copy_signature(char *dst, const char *s, size_t n)
{
	if (n != SIGV2_SIG_LEN || s[n - 1] != '=')
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '+' && s[i] != '/' &&
		    !(s[i] == '=' && i == n - 1))
			return -1;
	memcpy(dst, s, n);
	dst[n] = 0;
	return 0;
}

static int copy_key(char *dst, const char *s, size_t n)
{
	if (!n || n > SIGV4_MAX_KEY)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]))
			return -1;
	memcpy(dst, s, n);
	dst[n] = 0;
	return 0;
}

int sigv2_parse_header(const char *value, size_t len, struct sigv2_auth *a)
{
	const char *colon;

	memset(a, 0, sizeof(*a));
	if (len < 5 || memcmp(value, "AWS ", 4))
		return -1;
	value += 4;
	len -= 4;
	colon = memchr(value, ':', len);
	if (!colon)
		return -1;
	if (copy_key(a->access_key, value, (size_t)(colon - value)))
		return -1;
	return copy_signature(a->signature, colon + 1,
			      len - (size_t)(colon - value) - 1);
}

int sigv2_parse_query(const char *key, const char *signature,
		      const char *expires, struct sigv2_auth *a)
{
	size_t n = strlen(expires);

	memset(a, 0, sizeof(*a));
	if (!n || n > 12 || strspn(expires, "0123456789") != n)
		return -1;
	a->expires = strtoull(expires, NULL, 10);
	a->presigned = true;
	if (copy_key(a->access_key, key, strlen(key)))
		return -1;
	return copy_signature(a->signature, signature, strlen(signature));
}
