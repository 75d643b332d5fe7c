// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * AWS Signature Version 4 for S3: parsing the client's claims and
 * computing the signature its secret gives (include/sigv4.h).
 *
 * The canonical request is rebuilt from the request as received: the
 * path and the query are percent-decoded and encoded again the way SigV4
 * encodes (unreserved characters kept, everything else %XX, '/' kept in
 * the path), so a client that encoded differently but equivalently still
 * matches, and one escape cannot mean two things.  S3 paths are neither
 * normalised nor encoded twice.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include "sigv4.h"

#define ALGORITHM	"AWS4-HMAC-SHA256"
#define TERMINATOR	"aws4_request"
#define MAX_PAIRS	128	/* query parameters */

/* ---- small helpers ---- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Percent-decode @len bytes of @s into @out (at most @size): the decoded
 * length, or -1 for a bad escape, a NUL, or no room
 */
static int pct_decode(const char *s, size_t len, char *out, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int h, l;

			if (i + 2 >= len)
				return -1;
			h = hexval(s[i + 1]);
			l = hexval(s[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			c = h << 4 | l;
			i += 2;
		}
		if (!c || n == size)
			return -1;
		out[n++] = (char)c;
	}
	return (int)n;
}

static bool unreserved(int c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

/* append @len bytes of @s, SigV4-encoded; false if no room */
static bool put_encoded(char *buf, size_t size, size_t *pos, const char *s,
			size_t len, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (unreserved(c) || (keep_slash && c == '/')) {
			if (*pos + 1 > size)
				return false;
			buf[(*pos)++] = (char)c;
			continue;
		}
		if (*pos + 3 > size)
			return false;
		buf[(*pos)++] = '%';
		buf[(*pos)++] = hex[c >> 4];
		buf[(*pos)++] = hex[c & 15];
	}
	return true;
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

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* YYYYMMDDTHHMMSSZ */
static bool amz_date_ok(const char *s)
{
	return strlen(s) == 16 && all_digits(s, 8) && s[8] == 'T' &&
	       all_digits(s + 9, 6) && s[15] == 'Z';
}

/* copy @len bytes into @dst (@size with the NUL): false if too long */
static bool copy_field(char *dst, size_t size, const char *s, size_t len)
{
	if (len >= size)
		return false;
	memcpy(dst, s, len);
	dst[len] = 0;
	return true;
}

/* ---- the client's claims ---- */

/* "<key>/<YYYYMMDD>/<region>/<service>/aws4_request" */
static int parse_credential(const char *s, size_t len, struct sigv4_auth *a)
{
	const char *part[5];
	size_t plen[5], end = len;

	/* from the right: the key is whatever precedes the scope */
	for (int k = 4; k > 0; k--) {
		size_t i = end;

		while (i > 0 && s[i - 1] != '/')
			i--;
		if (!i)
			return -1;
		part[k] = s + i;
		plen[k] = end - i;
		end = i - 1;
	}
	part[0] = s;
	plen[0] = end;
	if (!plen[0] || plen[1] != 8 || !all_digits(part[1], 8) ||
	    !plen[2] || !plen[3] || plen[4] != strlen(TERMINATOR) ||
	    memcmp(part[4], TERMINATOR, plen[4]))
		return -1;
	for (size_t i = 0; i < plen[0]; i++)
		if (!isalnum((unsigned char)part[0][i]))
			return -1;
	for (int k = 2; k <= 3; k++)
		for (size_t i = 0; i < plen[k]; i++)
			if (!islower((unsigned char)part[k][i]) &&
			    !isdigit((unsigned char)part[k][i]) &&
			    part[k][i] != '-')
				return -1;
	if (!copy_field(a->access_key, sizeof(a->access_key), part[0],
			plen[0]) ||
	    !copy_field(a->date, sizeof(a->date), part[1], plen[1]) ||
	    !copy_field(a->region, sizeof(a->region), part[2], plen[2]) ||
	    !copy_field(a->service, sizeof(a->service), part[3], plen[3]))
		return -1;
	return 0;
}

/* lower-case names, ';' between them, strictly ascending, host among them */
static int parse_signed(const char *s, size_t len, struct sigv4_auth *a)
{
	const char *prev = NULL, *p = s, *end = s + len;
	size_t prev_len = 0;
	bool host = false;

	if (!len || !copy_field(a->signed_headers, sizeof(a->signed_headers),
				s, len))
		return -1;
	while (p < end) {
		const char *q = memchr(p, ';', (size_t)(end - p));
		size_t n = (size_t)((q ? q : end) - p);

		if (!n)
			return -1;
		for (size_t i = 0; i < n; i++)
			if (!islower((unsigned char)p[i]) &&
			    !isdigit((unsigned char)p[i]) && p[i] != '-')
				return -1;
		if (prev) {
			int c = memcmp(prev, p, prev_len < n ? prev_len : n);

			if (c > 0 || (!c && prev_len >= n))
				return -1;
		}
		host |= n == 4 && !memcmp(p, "host", 4);
		prev = p;
		prev_len = n;
		if (!q)
			break;
		p = q + 1;
		if (p == end)
			return -1;
	}
	return host ? 0 : -1;
}

static int parse_signature(const char *s, size_t len, struct sigv4_auth *a)
{
	if (len != 64)
		return -1;
	for (size_t i = 0; i < 64; i++)
		if (!isdigit((unsigned char)s[i]) && (s[i] < 'a' || s[i] > 'f'))
			return -1;
	return copy_field(a->signature, sizeof(a->signature), s, len) ? 0 : -1;
}

static bool scope_ok(const struct sigv4_auth *a)
{
	return amz_date_ok(a->amz_date) && !memcmp(a->amz_date, a->date, 8);
}

int sigv4_parse_header(const char *value, size_t len, const char *amz_date,
		       size_t amz_len, struct sigv4_auth *a)
{
	size_t alg = strlen(ALGORITHM), i;
	int seen = 0;

	memset(a, 0, sizeof(*a));
	if (len <= alg || memcmp(value, ALGORITHM, alg) || value[alg] != ' ')
		return -1;
	i = alg;
	while (i < len) {
		const char *k, *v, *e;
		size_t klen, vlen;

		while (i < len && (value[i] == ' ' || value[i] == ','))
			i++;
		if (i == len)
			break;
		k = value + i;
		e = memchr(k, ',', len - i);
		if (!e)
			e = value + len;
		v = memchr(k, '=', (size_t)(e - k));
		if (!v)
			return -1;
		klen = (size_t)(v - k);
		v++;
		vlen = (size_t)(e - v);
		while (vlen && v[vlen - 1] == ' ')
			vlen--;
		if (klen == 10 && !memcmp(k, "Credential", 10)) {
			if (parse_credential(v, vlen, a))
				return -1;
			seen |= 1;
		} else if (klen == 13 && !memcmp(k, "SignedHeaders", 13)) {
			if (parse_signed(v, vlen, a))
				return -1;
			seen |= 2;
		} else if (klen == 9 && !memcmp(k, "Signature", 9)) {
			if (parse_signature(v, vlen, a))
				return -1;
			seen |= 4;
		} else {
			return -1;
		}
		i = (size_t)(e - value);
	}
	if (seen != 7 || !amz_date ||
	    !copy_field(a->amz_date, sizeof(a->amz_date), amz_date, amz_len))
		return -1;
	return scope_ok(a) ? 0 : -1;
}

/* one parameter of a presigned query, decoded into @a */
static int query_param(struct sigv4_auth *a, const char *k, size_t klen,
		       const char *v, size_t vlen, int *seen)
{
	char val[SIGV4_MAX_SIGNED + SIGV4_MAX_KEY];
	int n;

	if (klen < 6 || memcmp(k, "X-Amz-", 6))
		return 0;
	n = pct_decode(v, vlen, val, sizeof(val) - 1);
	if (n < 0)
		return -1;
	val[n] = 0;
	k += 6;
	klen -= 6;
#define IS(name) (klen == strlen(name) && !memcmp(k, name, klen))
	if (IS("Algorithm")) {
		if (strcmp(val, ALGORITHM))
			return -1;
		*seen |= 1;
	} else if (IS("Credential")) {
		if (parse_credential(val, (size_t)n, a))
			return -1;
		*seen |= 2;
	} else if (IS("Date")) {
		if (!copy_field(a->amz_date, sizeof(a->amz_date), val,
				(size_t)n))
			return -1;
		*seen |= 4;
	} else if (IS("Expires")) {
		char *end;
		unsigned long e = strtoul(val, &end, 10);

		if (!n || *end || !all_digits(val, (size_t)n) || !e ||
		    e > SIGV4_MAX_EXPIRES)
			return -1;
		a->expires = (uint32_t)e;
		*seen |= 8;
	} else if (IS("SignedHeaders")) {
		if (parse_signed(val, (size_t)n, a))
			return -1;
		*seen |= 16;
	} else if (IS("Signature")) {
		if (parse_signature(val, (size_t)n, a))
			return -1;
		*seen |= 32;
	}
#undef IS
	return 0;
}

int sigv4_parse_query(const char *query, size_t len, struct sigv4_auth *a)
{
	const char *p = query, *end = query + len;
	int seen = 0;

	memset(a, 0, sizeof(*a));
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(e - p));

		if (eq && query_param(a, p, (size_t)(eq - p), eq + 1,
				      (size_t)(e - eq - 1), &seen))
			return -1;
		p = e + 1;
	}
	if (seen != 63)
		return -1;
	a->presigned = true;
	return scope_ok(a) ? 0 : -1;
}

/* ---- the canonical request ---- */

static bool put_path(char *buf, size_t size, size_t *pos,
		     const struct sigv4_req *r)
{
	char dec[8192];
	int n;

	if (!r->path_len)
		return put(buf, size, pos, "/", 1);
	n = pct_decode(r->path, r->path_len, dec, sizeof(dec));
	return n > 0 && dec[0] == '/' &&
	       put_encoded(buf, size, pos, dec, (size_t)n, true);
}

struct pair {
	size_t off, klen, len;		/* in the scratch: "key=value" */
};

static int pair_cmp(const void *x, const void *y, void *arg)
{
	const struct pair *a = x, *b = y;
	const char *sort_base = arg;
	size_t n = a->klen < b->klen ? a->klen : b->klen;
	int c = memcmp(sort_base + a->off, sort_base + b->off, n);

	if (c || a->klen != b->klen)
		return c ? c : (a->klen < b->klen ? -1 : 1);
	/* equal keys: by value */
	n = (a->len < b->len ? a->len : b->len) - a->klen;
	c = memcmp(sort_base + a->off + a->klen, sort_base + b->off + b->klen,
		   n);
	return c ? c : (a->len < b->len ? -1 : a->len > b->len);
}

/* encode one "k[=v]" into the scratch; false if malformed or no room */
static bool encode_pair(const char *p, size_t len, char *scratch,
			size_t size, size_t *pos, struct pair *out,
			bool skip_sig, bool *skip)
{
	const char *eq = memchr(p, '=', len);
	size_t klen = eq ? (size_t)(eq - p) : len;
	char dec[4096];
	int n;

	*skip = false;
	out->off = *pos;
	n = pct_decode(p, klen, dec, sizeof(dec));
	if (n <= 0)
		return false;
	if (skip_sig && n == 15 && !memcmp(dec, "X-Amz-Signature", 15)) {
		*skip = true;
		return true;
	}
	if (!put_encoded(scratch, size, pos, dec, (size_t)n, false))
		return false;
	out->klen = *pos - out->off;
	if (!put(scratch, size, pos, "=", 1))
		return false;
	if (eq) {
		n = pct_decode(eq + 1, len - klen - 1, dec, sizeof(dec));
		if (n < 0 || !put_encoded(scratch, size, pos, dec, (size_t)n,
					  false))
			return false;
	}
	out->len = *pos - out->off;
	return true;
}

static bool put_query(char *buf, size_t size, size_t *pos,
		      const struct sigv4_req *r, bool presigned)
{
	size_t ssize = r->query_len * 3 + 16, spos = 0, nr = 0;
	struct pair pairs[MAX_PAIRS];
	const char *p, *end;
	char *scratch;
	bool ok = true;

	if (!r->query || !r->query_len)
		return true;
	p = r->query;
	end = r->query + r->query_len;
	scratch = malloc(ssize);
	if (!scratch)
		return false;
	while (ok && p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		size_t len = (size_t)((amp ? amp : end) - p);
		bool skip;

		if (len) {
			ok = nr < MAX_PAIRS &&
			     encode_pair(p, len, scratch, ssize, &spos,
					 &pairs[nr], presigned, &skip);
			if (ok && !skip)
				nr++;
		}
		p += len + 1;
	}
	if (ok) {
		qsort_r(pairs, nr, sizeof(pairs[0]), pair_cmp, scratch);
		for (size_t i = 0; ok && i < nr; i++)
			ok = (!i || put(buf, size, pos, "&", 1)) &&
			     put(buf, size, pos, scratch + pairs[i].off,
				 pairs[i].len);
	}
	free(scratch);
	return ok;
}

static bool name_eq(const struct sigv4_hdr *h, const char *name, size_t n)
{
	if (h->nlen != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (tolower((unsigned char)h->name[i]) != name[i])
			return false;
	return true;
}

/* a value trimmed, runs of spaces as one */
static bool put_value(char *buf, size_t size, size_t *pos,
		      const struct sigv4_hdr *h)
{
	size_t b = 0, e = h->vlen;
	bool space = false;

	while (b < e && (h->value[b] == ' ' || h->value[b] == '\t'))
		b++;
	while (e > b && (h->value[e - 1] == ' ' || h->value[e - 1] == '\t'))
		e--;
	for (size_t i = b; i < e; i++) {
		char c = h->value[i] == '\t' ? ' ' : h->value[i];

		if (c == ' ' && space)
			continue;
		space = c == ' ';
		if (!put(buf, size, pos, &c, 1))
			return false;
	}
	return true;
}

static bool put_headers(char *buf, size_t size, size_t *pos,
			const struct sigv4_req *r, const char *list)
{
	const char *p = list;

	while (*p) {
		const char *q = strchr(p, ';');
		size_t n = q ? (size_t)(q - p) : strlen(p);
		int found = 0;

		if (!put(buf, size, pos, p, n) || !put(buf, size, pos, ":", 1))
			return false;
		for (size_t i = 0; i < r->nr_hdrs; i++) {
			if (!name_eq(&r->hdrs[i], p, n))
				continue;
			if ((found++ && !put(buf, size, pos, ",", 1)) ||
			    !put_value(buf, size, pos, &r->hdrs[i]))
				return false;
		}
		if (!found || !put(buf, size, pos, "\n", 1))
			return false;
		p += n + (q ? 1 : 0);
	}
	return true;
}

int sigv4_canonical(const struct sigv4_req *r, const struct sigv4_auth *a,
		    char *buf, size_t size)
{
	size_t pos = 0;

	if (!r->method || !r->payload_hash || !a->signed_headers[0])
		return -1;
	if (!put(buf, size, &pos, r->method, strlen(r->method)) ||
	    !put(buf, size, &pos, "\n", 1) ||
	    !put_path(buf, size, &pos, r) || !put(buf, size, &pos, "\n", 1) ||
	    !put_query(buf, size, &pos, r, a->presigned) ||
	    !put(buf, size, &pos, "\n", 1) ||
	    !put_headers(buf, size, &pos, r, a->signed_headers) ||
	    !put(buf, size, &pos, "\n", 1) ||
	    !put(buf, size, &pos, a->signed_headers,
		 strlen(a->signed_headers)) ||
	    !put(buf, size, &pos, "\n", 1) ||
	    !put(buf, size, &pos, r->payload_hash, strlen(r->payload_hash)))
		return -1;
	if (pos > (size_t)SIGV4_MAX_CANONICAL)
		return -1;
	return (int)pos;
}

/* ---- the signature ---- */

static void hmac(const void *key, size_t klen, const void *msg, size_t mlen,
		 unsigned char out[32])
{
	unsigned int n = 32;

	HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &n);
}

static void to_hex(const unsigned char *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = 0;
}

/* the signing key of @a's scope under @secret */
static void signing_key(const char *secret, const struct sigv4_auth *a,
			unsigned char k[32])
{
	char key[4 + 256];
	size_t slen = strlen(secret);

	if (slen > 256)
		slen = 256;
	memcpy(key, "AWS4", 4);
	memcpy(key + 4, secret, slen);
	hmac(key, 4 + slen, a->date, strlen(a->date), k);
	hmac(k, 32, a->region, strlen(a->region), k);
	hmac(k, 32, a->service, strlen(a->service), k);
	hmac(k, 32, TERMINATOR, strlen(TERMINATOR), k);
	OPENSSL_cleanse(key, sizeof(key));
}

void sigv4_sign(const char *secret, const struct sigv4_auth *a,
		const char *canonical, size_t len, char hex[65])
{
	char sts[256], hash_hex[65];
	unsigned char h[32], k[32];
	int n;

	SHA256((const unsigned char *)canonical, len, h);
	to_hex(h, 32, hash_hex);
	n = snprintf(sts, sizeof(sts), "%s\n%s\n%s/%s/%s/%s\n%s", ALGORITHM,
		     a->amz_date, a->date, a->region, a->service, TERMINATOR,
		     hash_hex);
	signing_key(secret, a, k);
	hmac(k, 32, sts, (size_t)n, h);
	OPENSSL_cleanse(k, sizeof(k));
	to_hex(h, 32, hex);
}

/* the SHA-256 of nothing: an aws-chunked chunk's "header" hash */
#define EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

void sigv4_chunk_sign(const char *secret, const struct sigv4_auth *a,
		      const char prev[65], const unsigned char chunk_sha[32],
		      char hex[65])
{
	char sts[512], chunk_hex[65];
	unsigned char h[32], k[32];
	int n;

	to_hex(chunk_sha, 32, chunk_hex);
	n = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256-PAYLOAD\n%s\n"
		     "%s/%s/%s/%s\n%.64s\n%s\n%s", a->amz_date, a->date,
		     a->region, a->service, TERMINATOR, prev, EMPTY_SHA256,
		     chunk_hex);
	signing_key(secret, a, k);
	hmac(k, 32, sts, (size_t)n, h);
	OPENSSL_cleanse(k, sizeof(k));
	to_hex(h, 32, hex);
}

bool sigv4_verify(const struct sigv4_req *r, const struct sigv4_auth *a,
		  const char *secret)
{
	char *buf = malloc(SIGV4_MAX_CANONICAL);
	char sig[65];
	int n;

	if (!buf)
		return false;
	n = sigv4_canonical(r, a, buf, SIGV4_MAX_CANONICAL);
	if (n < 0) {
		free(buf);
		return false;
	}
	sigv4_sign(secret, a, buf, (size_t)n, sig);
	free(buf);
	return CRYPTO_memcmp(sig, a->signature, 64) == 0;
}
