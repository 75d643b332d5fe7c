// SPDX-License-Identifier: GPL-2.0-or-later
/* The parts of an S3 request a gateway reads (s3req.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "s3req.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int s3_pct_decode(const char *s, size_t len, char *out, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		int ch = (unsigned char)s[i];

		if (ch == '%') {
			int h, l;

			if (i + 2 >= len)
				return -1;
			h = hexval(s[i + 1]);
			l = hexval(s[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			ch = h * 16 + l;
			i += 2;
		}
		if (n + 1 >= size)
			return -1;
		out[n++] = (char)ch;
	}
	if (!size)
		return -1;
	out[n] = 0;
	return (int)n;
}

void s3_params_free(struct s3_param *p, int n)
{
	for (int i = 0; i < n; i++) {
		free(p[i].value);
		p[i].value = NULL;
	}
}

/* one "name[=value]" into @pr: 0 or -1 */
static int one_param(const char *p, const char *e, struct s3_param *pr)
{
	const char *eq = memchr(p, '=', (size_t)(e - p));
	const char *ne = eq ? eq : e;
	size_t vsize = (size_t)(e - ne) + 1;
	int n = 0;

	if (s3_pct_decode(p, (size_t)(ne - p), pr->name, sizeof(pr->name)) < 0)
		return -1;
	pr->has_value = eq != NULL;
	pr->value = malloc(vsize);
	if (!pr->value)
		return -1;
	if (eq) {
		size_t raw = (size_t)(e - eq - 1);

		/* a '+' as sent is a space; one sent as %2B is a '+' */
		memcpy(pr->value, eq + 1, raw);
		for (size_t i = 0; i < raw; i++)
			if (pr->value[i] == '+')
				pr->value[i] = ' ';
		/* in place: no byte is written before it is read */
		n = s3_pct_decode(pr->value, raw, pr->value, vsize);
	}
	if (n < 0) {
		free(pr->value);
		pr->value = NULL;
		return -1;
	}
	pr->value[n] = 0;
	return 0;
}

int s3_parse_query(const char *q, size_t len, struct s3_param *p, int max)
{
	const char *end = q ? q + len : NULL;
	int n = 0;

	while (q && q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *e = amp ? amp : end;

		if (e > q) {
			if (n == max || one_param(q, e, &p[n])) {
				s3_params_free(p, n);
				return -1;
			}
			n++;
		}
		q = e + 1;
	}
	return n;
}

int s3_parse_path(const char *path, size_t len, char *bucket, size_t bsize,
		  char *key, size_t ksize, size_t *klen)
{
	const char *p = path, *end = path + len, *slash;
	int n;

	if (!len || *p != '/')
		return -1;
	p++;
	if (p == end)
		return 0;
	slash = memchr(p, '/', (size_t)(end - p));
	if (s3_pct_decode(p, (size_t)((slash ? slash : end) - p), bucket,
			  bsize) < 0)
		return -1;
	if (!slash || slash + 1 == end)
		return 1;
	n = s3_pct_decode(slash + 1, (size_t)(end - slash - 1), key, ksize);
	if (n < 0)
		return -1;
	*klen = (size_t)n;
	return 2;
}

static bool digits(const char *s, const char **end, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	for (; isdigit((unsigned char)*p); p++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*end = p;
	*v = x;
	return p > s;
}

enum s3_range s3_parse_range(const char *v, uint64_t size, uint64_t *from,
			     uint64_t *to)
{
	const char *p, *end;
	uint64_t a, b;

	if (strncmp(v, "bytes=", 6))
		return S3_RANGE_NONE;
	if (strchr(v, ','))
		return S3_RANGE_MANY;
	p = v + 6;
	if (*p == '-') {
		/* the last b bytes */
		if (!digits(p + 1, &end, &b) || *end)
			return S3_RANGE_NONE;
		if (!b || !size)
			return S3_RANGE_UNSATISFIABLE;
		*from = b >= size ? 0 : size - b;
		*to = size - 1;
		return S3_RANGE_ONE;
	}
	if (!digits(p, &end, &a) || *end != '-')
		return S3_RANGE_NONE;
	p = end + 1;
	if (!*p) {
		b = UINT64_MAX;
	} else if (!digits(p, &end, &b) || *end || b < a) {
		return S3_RANGE_NONE;
	}
	if (a >= size)
		return S3_RANGE_UNSATISFIABLE;
	*from = a;
	*to = b >= size ? size - 1 : b;
	return S3_RANGE_ONE;
}

/* the text of <@tag>...</@tag> within [p, end): its span, false if none */
static bool element(const char *p, const char *end, const char *tag,
		    const char **text, size_t *len)
{
	char open[32], close[32];
	const char *a, *b;
	int on = snprintf(open, sizeof(open), "<%s>", tag);
	int cn = snprintf(close, sizeof(close), "</%s>", tag);

	a = memmem(p, (size_t)(end - p), open, (size_t)on);
	if (!a)
		return false;
	a += on;
	b = memmem(a, (size_t)(end - a), close, (size_t)cn);
	if (!b)
		return false;
	*text = a;
	*len = (size_t)(b - a);
	return true;
}

static int xml_unescape(char *s, size_t len);

#define ETAG_TEXT_MAX	128

/*
 * An ETag as S3 clients send it back: "hex" or hex, the quotes as they
 * are or as XML references (&quot; from most, &#34; from Go's encoder)
 */
static bool etag_value(const char *text, size_t tlen, char out[33])
{
	char buf[ETAG_TEXT_MAX];
	const char *t = buf;
	size_t len;
	int n;

	if (tlen >= sizeof(buf))
		return false;
	memcpy(buf, text, tlen);
	n = xml_unescape(buf, tlen);
	if (n < 0)
		return false;
	len = (size_t)n;

	while (len && (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r')) {
		t++;
		len--;
	}
	while (len && strchr(" \n\t\r", t[len - 1]))
		len--;
	if (len >= 2 && t[0] == '"' && t[len - 1] == '"') {
		t++;
		len -= 2;
	}
	if (len != 32)
		return false;
	for (size_t i = 0; i < 32; i++) {
		if (hexval((unsigned char)t[i]) < 0)
			return false;
		out[i] = (char)tolower((unsigned char)t[i]);
	}
	out[32] = 0;
	return true;
}

/* a part's <ChecksumALGO>, at most one, into @r: 0, or -1 */
static int part_sum(const char *p, const char *end, struct s3_part_ref *r)
{
	static const char *const tags[] = { NULL, "ChecksumCRC32",
		"ChecksumCRC32C", "ChecksumCRC64NVME", "ChecksumSHA1",
		"ChecksumSHA256" };
	const char *t;
	size_t tl;

	_Static_assert(sizeof(tags) / sizeof(tags[0]) == S3_SUM_NR,
		       "a tag per algorithm");
	r->sum_algo = S3_SUM_NONE;
	r->sum[0] = 0;
	for (int a = 1; a < S3_SUM_NR; a++) {
		if (!element(p, end, tags[a], &t, &tl))
			continue;
		if (r->sum_algo != S3_SUM_NONE || !tl || tl >= S3_SUM_B64)
			return -1;
		for (size_t i = 0; i < tl; i++)
			if (!t[i] || (!isalnum((unsigned char)t[i]) &&
				      !strchr("+/=", t[i])))
				return -1;
		r->sum_algo = (uint8_t)a;
		memcpy(r->sum, t, tl);
		r->sum[tl] = 0;
	}
	return 0;
}

int s3_parse_complete(const char *xml, size_t len, struct s3_part_ref *refs,
		      int max)
{
	const char *p = xml, *end = xml + len;
	int n = 0;

	for (;;) {
		const char *part, *num, *tag;
		size_t plen, nlen, tlen;
		uint64_t v;
		const char *e;

		if (!element(p, end, "Part", &part, &plen)) {
			/* a part opened and never closed: not a list */
			if (memmem(p, (size_t)(end - p), "<Part>", 6))
				return -1;
			break;
		}
		if (n == max ||
		    !element(part, part + plen, "PartNumber", &num, &nlen) ||
		    !element(part, part + plen, "ETag", &tag, &tlen) ||
		    !nlen || nlen > 5)
			return -1;
		if (!digits(num, &e, &v) || e != num + nlen || !v || v > 10000)
			return -1;
		refs[n].number = (uint32_t)v;
		if (!etag_value(tag, tlen, refs[n].etag) ||
		    part_sum(part, part + plen, &refs[n]))
			return -1;
		n++;
		p = part + plen + 7;	/* past "</Part>" */
	}
	return n ? n : -1;
}

/* code point @v as UTF-8 at @out: how many bytes */
static size_t utf8_put(char *out, unsigned v)
{
	if (v < 0x80) {
		out[0] = (char)v;
		return 1;
	}
	if (v < 0x800) {
		out[0] = (char)(0xc0 | v >> 6);
		out[1] = (char)(0x80 | (v & 0x3f));
		return 2;
	}
	if (v < 0x10000) {
		out[0] = (char)(0xe0 | v >> 12);
		out[1] = (char)(0x80 | (v >> 6 & 0x3f));
		out[2] = (char)(0x80 | (v & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | v >> 18);
	out[1] = (char)(0x80 | (v >> 12 & 0x3f));
	out[2] = (char)(0x80 | (v >> 6 & 0x3f));
	out[3] = (char)(0x80 | (v & 0x3f));
	return 4;
}

/* XML text (entities and character references) decoded in place: its new
 * length, or -1 if malformed */
static int xml_unescape(char *s, size_t len)
{
	static const struct { const char *name; char ch; } ent[] = {
		{ "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' },
		{ "quot;", '"' }, { "apos;", '\'' },
	};
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		size_t k = 0;

		if (s[i] != '&') {
			s[n++] = s[i];
			continue;
		}
		for (; k < sizeof(ent) / sizeof(ent[0]); k++) {
			size_t el = strlen(ent[k].name);

			if (len - i - 1 >= el && !memcmp(s + i + 1, ent[k].name,
							 el)) {
				s[n++] = ent[k].ch;
				i += el;
				break;
			}
		}
		if (k < sizeof(ent) / sizeof(ent[0]))
			continue;
		/* &#NN; or &#xHH;: the character in UTF-8 (never longer) */
		if (i + 3 < len && s[i + 1] == '#') {
			bool hex = s[i + 2] == 'x';
			size_t j = i + 2 + hex;
			unsigned v = 0;

			for (; j < len && s[j] != ';'; j++) {
				int d = hex ? hexval((unsigned char)s[j]) :
					(isdigit((unsigned char)s[j]) ?
					 s[j] - '0' : -1);

				if (d < 0 || v > 0x10ffff)
					return -1;
				v = v * (hex ? 16 : 10) + (unsigned)d;
			}
			if (j == len || j == i + 2 + hex || !v || v > 0x10ffff ||
			    (v >= 0xd800 && v <= 0xdfff))
				return -1;	/* no end, no digits, no char */
			n += utf8_put(s + n, v);
			i = j;
			continue;
		}
		return -1;
	}
	return (int)n;
}

int s3_parse_delete(char *xml, size_t len, struct s3_del_key *keys, int max,
		    bool *quiet)
{
	const char *end = xml + len, *p = xml, *q;
	size_t qlen;
	int n = 0;

	if (!memmem(xml, len, "<Delete", 7))
		return -1;
	*quiet = element(xml, end, "Quiet", &q, &qlen) && qlen == 4 &&
		 !strncasecmp(q, "true", 4);
	for (;;) {
		const char *obj, *k, *v;
		size_t olen, klen, vlen;
		int kl;

		if (!element(p, end, "Object", &obj, &olen)) {
			if (memmem(p, (size_t)(end - p), "<Object>", 8))
				return -1;
			break;
		}
		if (n == max || !element(obj, obj + olen, "Key", &k, &klen))
			return -1;
		if (element(obj, obj + olen, "VersionId", &v, &vlen) &&
		    (vlen != 4 || memcmp(v, "null", 4)))
			return -2;
		kl = xml_unescape((char *)k, klen);
		if (kl <= 0 || kl > S3_DEL_MAX_KEY)
			return -1;
		keys[n].key = k;
		keys[n].klen = (size_t)kl;
		n++;
		p = obj + olen + 9;	/* past "</Object>" */
	}
	return n ? n : -1;
}
