// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ListObjects v1 and v2 (s3_resp.h): a walk of the bucket's index from
 * the first key at or after the prefix, the marker or the continuation
 * token; with a delimiter, each common prefix is listed once and the walk
 * seeks past every key under it, so a listing reads what it returns.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "util.h"
#include "front/s3_resp.h"

#define MAX_LIST	1000

/* byte strings in the index's order */
int s3_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, MIN(alen, blen));

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static void list_contents(struct s3_lister *l, const char *key, size_t klen,
			  const struct s3_obj *o)
{
	char date[40], etag[S3_ETAG_LEN];

	s3_iso_date(o->mtime, date, sizeof(date));
	s3_etag(o, etag);
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
	struct s3_lister *l = arg;
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

		memcpy(l->skip, key, cl);
		l->skip_len = cl;
		/* listed already, if the marker is under it (S3 so) */
		if (l->after_len &&
		    s3_key_cmp(key, cl, l->after, l->after_len) <= 0)
			return 2;
		l->emit_prefix(l, key, cl);
		memcpy(l->last, key, cl);
		l->last_len = cl;
		l->count++;
		/* seek past every key under it: the scan starts again */
		return 2;
	}
	l->emit_contents(l, key, klen, o);
	memcpy(l->last, key, klen);
	l->last_len = klen;
	l->count++;
	return 0;
}

static void list_prefix(struct s3_lister *l, const char *p, size_t len)
{
	sb_lit(&l->s, "<CommonPrefixes><Prefix>");
	sb_key(&l->s, p, len, l->url);
	sb_lit(&l->s, "</Prefix></CommonPrefixes>");
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

static void list_xml_head(struct s3_lister *l, const char *start,
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

static void list_xml_tail(struct s3_lister *l)
{
	struct sbuf *s = &l->s;
	char tok[(S3_MAX_KEY + 2) / 3 * 4 + 4];

	if (l->v2)
		sb_printf(s, "<KeyCount>%d</KeyCount>", l->count);
	sb_printf(s, "<IsTruncated>%s</IsTruncated>",
		  l->truncated ? "true" : "false");
	if (l->truncated && l->v2) {
		s3_b64(l->last, l->last_len, tok);
		sb_printf(s, "<NextContinuationToken>%s"
			  "</NextContinuationToken>", tok);
	} else if (l->truncated && l->dlen) {
		sb_lit(s, "<NextMarker>");
		sb_key(s, l->last, l->last_len, l->url);
		sb_lit(s, "</NextMarker>");
	}
	sb_lit(s, "</ListBucketResult>\n");
}

/* where the walk starts: after the marker, token or start-after */
static int list_start(struct s3_ctx *x, struct s3_lister *l, char *start,
		      size_t *slen, const char **shown, const char **token)
{
	const struct s3_param *p;
	size_t n;

	*slen = 0;
	*shown = *token = NULL;
	if (l->v2 && (p = s3_param_get(x, "continuation-token"))) {
		int m = unb64(p->value, start, S3_MAX_KEY);

		if (m < 0) {
			s3_error(x, 400, "InvalidArgument", "The continuation "
			      "token provided is incorrect");
			return -1;
		}
		*token = p->value;
		*slen = (size_t)m;
	} else if ((p = s3_param_get(x, l->v2 ? "start-after" : "marker"))) {
		n = strlen(p->value);
		if (n > S3_MAX_KEY)
			n = S3_MAX_KEY;
		memcpy(start, p->value, n);
		*slen = n;
		*shown = p->value;
	}
	if (l->v2 && (p = s3_param_get(x, "start-after")))
		*shown = p->value;
	memcpy(l->after, start, *slen);
	l->after_len = *slen;
	return 0;
}

int s3_walk(struct s3_bucket *b, struct s3_lister *l)
{
	char *start = xmalloc(S3_MAX_KEY + 2);
	size_t slen = l->after_len;
	int ret;

	memcpy(start, l->after, slen);
	if (slen) {
		/* strictly after it: the key with a NUL appended */
		start[slen++] = 0;
	}
	/* never before the prefix */
	if (s3_key_cmp(start, slen, l->prefix, l->plen) < 0) {
		memcpy(start, l->prefix, l->plen);
		slen = l->plen;
	}
	/* each common prefix restarts the walk past what it covers */
	do {
		ret = s3b_scan(b, start, slen, list_one, l);
		if (ret == 2)
			slen = after_prefix(l->skip, l->skip_len, start);
	} while (ret == 2 && slen);
	free(start);
	return ret < 0 ? -2 : 0;
}

void s3_list_objects(struct s3_ctx *x, struct s3_bucket *b)
{
	static const char *const known[] = { "list-type", "prefix",
		"delimiter", "max-keys", "continuation-token", "start-after",
		"marker", "encoding-type", "fetch-owner", NULL };
	const struct s3_param *p;
	struct s3_lister l = { .x = x, .max = MAX_LIST,
			       .emit_contents = list_contents,
			       .emit_prefix = list_prefix };
	char start[S3_MAX_KEY + 2];
	const char *shown, *token, *bad = s3_unknown_param(x, known);
	size_t slen;
	int ret;

	if (bad) {
		s3_error(x, 501, "NotImplemented", "The bucket subresource %s is "
		      "not supported", bad);
		return;
	}
	p = s3_param_get(x, "list-type");
	l.v2 = p && !strcmp(p->value, "2");
	if (p && !l.v2) {
		s3_error(x, 400, "InvalidArgument", "list-type must be 2");
		return;
	}
	p = s3_param_get(x, "prefix");
	l.prefix = p ? p->value : "";
	l.plen = strlen(l.prefix);
	p = s3_param_get(x, "delimiter");
	l.delim = p ? p->value : "";
	l.dlen = strlen(l.delim);
	p = s3_param_get(x, "encoding-type");
	if (p && strcmp(p->value, "url")) {
		s3_error(x, 400, "InvalidArgument", "Invalid Encoding Method "
		      "specified in Request");
		return;
	}
	l.url = p != NULL;
	p = s3_param_get(x, "fetch-owner");
	l.owner = !l.v2 || (p && !strcmp(p->value, "true"));
	p = s3_param_get(x, "max-keys");
	if (p) {
		char *end;
		long m = strtol(p->value, &end, 10);

		if (!*p->value || *end || m < 0) {
			s3_error(x, 400, "InvalidArgument", "max-keys must be a "
			      "number from 0");
			return;
		}
		l.max = m < MAX_LIST ? (int)m : MAX_LIST;
	}
	if (l.plen > S3_MAX_KEY || l.dlen > S3_MAX_KEY) {
		s3_error(x, 400, "KeyTooLongError", "Your key is too long");
		return;
	}
	if (list_start(x, &l, start, &slen, &shown, &token))
		return;
	list_xml_head(&l, shown, token);
	ret = s3_walk(b, &l);
	if (ret < 0) {
		free(l.s.p);
		s3_internal(x, "Reading the bucket's index");
		return;
	}
	list_xml_tail(&l);
	s3_send_body(x, 200, NULL, &l.s, "application/xml");
	free(l.s.p);
}
