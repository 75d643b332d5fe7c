// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * HTTP/1.1 request heads and chunked bodies (include/http.h), strict
 * where RFC 9112 lets a server be: lines end in CRLF, no whitespace
 * before a header's colon, no folded lines, one Content-Length value, no
 * Content-Length beside Transfer-Encoding, chunked as the only transfer
 * coding, one Host.  What one reader could take differently from
 * another is refused rather than guessed.
 */
#include <ctype.h>
#include <string.h>
#include "http.h"

/* RFC 9110 tchar */
static bool tchar(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* field-value characters: VCHAR, obs-text, SP, HTAB */
static bool vchar(unsigned char c)
{
	return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

static bool ieq(const char *a, size_t alen, const char *b)
{
	size_t n = strlen(b);

	if (alen != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (tolower((unsigned char)a[i]) != b[i])
			return false;
	return true;
}

/*
 * The end of the line starting at @p: 1 and *@eol at the CR of its CRLF,
 * 0 if more bytes are needed, HTTP_BAD for a CR or LF alone
 */
static int line_end(const char *p, const char *end, const char **eol)
{
	for (const char *c = p; c < end; c++) {
		if (*c == '\n')
			return HTTP_BAD;
		if (*c != '\r')
			continue;
		if (c + 1 == end)
			return 0;
		if (c[1] != '\n')
			return HTTP_BAD;
		*eol = c;
		return 1;
	}
	return 0;
}

static int parse_request_line(const char *p, const char *eol,
			      struct http_request *r)
{
	const char *sp1, *sp2, *q;

	for (sp1 = p; sp1 < eol && tchar((unsigned char)*sp1); sp1++)
		;
	if (sp1 == p || sp1 == eol || *sp1 != ' ' || sp1 - p > 16)
		return HTTP_BAD;
	r->method = p;
	r->method_len = (size_t)(sp1 - p);
	r->target = sp1 + 1;
	for (sp2 = r->target; sp2 < eol && *sp2 != ' '; sp2++)
		if ((unsigned char)*sp2 < 0x21 || (unsigned char)*sp2 > 0x7e)
			return HTTP_BAD;
	r->target_len = (size_t)(sp2 - r->target);
	/* origin-form only: a gateway is not a proxy */
	if (sp2 == eol || !r->target_len || r->target[0] != '/')
		return HTTP_BAD;
	q = memchr(r->target, '?', r->target_len);
	r->path = r->target;
	r->path_len = q ? (size_t)(q - r->target) : r->target_len;
	r->query = q ? q + 1 : NULL;
	r->query_len = q ? r->target_len - r->path_len - 1 : 0;
	p = sp2 + 1;
	if (eol - p != 8 || memcmp(p, "HTTP/", 5) || !isdigit((unsigned char)p[5]) ||
	    p[6] != '.' || !isdigit((unsigned char)p[7]))
		return HTTP_BAD;
	if (p[5] != '1' || (p[7] != '0' && p[7] != '1'))
		return HTTP_VERSION;
	r->minor = p[7] - '0';
	return 0;
}

static int parse_length(const struct http_header *h, struct http_request *r)
{
	uint64_t v = 0;

	if (!h->vlen || h->vlen > 19)
		return HTTP_BAD;
	for (size_t i = 0; i < h->vlen; i++) {
		if (!isdigit((unsigned char)h->value[i]))
			return HTTP_BAD;
		v = v * 10 + (uint64_t)(h->value[i] - '0');
	}
	if (r->has_length && r->content_length != v)
		return HTTP_BAD;
	r->content_length = v;
	r->has_length = true;
	return 0;
}

/* Connection's tokens, comma-separated */
static void parse_connection(const struct http_header *h,
			     struct http_request *r)
{
	const char *p = h->value, *end = h->value + h->vlen;

	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *e = c ? c : end;
		const char *b = p;

		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (ieq(b, (size_t)(e - b), "close"))
			r->keep_alive = false;
		else if (ieq(b, (size_t)(e - b), "keep-alive") && r->minor == 0)
			r->keep_alive = true;
		p = (c ? c : end) + 1;
	}
}

/* what the headers mean for the framing; 0 or an http_err */
static int interpret(struct http_request *r)
{
	bool te = false;
	int hosts = 0, ret;

	r->keep_alive = r->minor == 1;
	for (size_t i = 0; i < r->nr_hdrs; i++) {
		const struct http_header *h = &r->hdrs[i];

		if (ieq(h->name, h->nlen, "content-length")) {
			ret = parse_length(h, r);
			if (ret)
				return ret;
		} else if (ieq(h->name, h->nlen, "transfer-encoding")) {
			if (te || !ieq(h->value, h->vlen, "chunked"))
				return te ? HTTP_BAD : HTTP_NOT_IMPL;
			te = true;
		} else if (ieq(h->name, h->nlen, "host")) {
			r->host = h->value;
			r->host_len = h->vlen;
			hosts++;
		} else if (ieq(h->name, h->nlen, "expect")) {
			if (!ieq(h->value, h->vlen, "100-continue"))
				return HTTP_EXPECTATION;
			r->expect_continue = r->minor == 1;
		}
	}
	for (size_t i = 0; i < r->nr_hdrs; i++)
		if (ieq(r->hdrs[i].name, r->hdrs[i].nlen, "connection"))
			parse_connection(&r->hdrs[i], r);
	/* a length beside a coding is how requests are smuggled */
	if ((te && (r->has_length || r->minor == 0)) || hosts > 1 ||
	    (r->minor == 1 && !hosts))
		return HTTP_BAD;
	r->chunked = te;
	return 0;
}

static int parse_header(const char *p, const char *eol, struct http_header *h)
{
	const char *colon, *v, *e;

	/* a folded line (obs-fold) continues the previous one: refused */
	if (*p == ' ' || *p == '\t')
		return HTTP_BAD;
	for (colon = p; colon < eol && tchar((unsigned char)*colon); colon++)
		;
	if (colon == p || colon == eol || *colon != ':')
		return HTTP_BAD;
	for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
		;
	for (e = eol; e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
		;
	for (const char *c = v; c < e; c++)
		if (!vchar((unsigned char)*c))
			return HTTP_BAD;
	h->name = p;
	h->nlen = (uint16_t)(colon - p);
	h->value = v;
	h->vlen = (uint16_t)(e - v);
	return 0;
}

int http_parse_head(const char *buf, size_t len, struct http_request *r)
{
	const char *p = buf, *end = buf + len, *eol;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = line_end(p, end, &eol);
	if (ret <= 0)
		return ret < 0 ? ret : len > HTTP_MAX_LINE ?
					HTTP_TOO_LONG_URI : 0;
	if (eol - p > HTTP_MAX_LINE)
		return HTTP_TOO_LONG_URI;
	ret = parse_request_line(p, eol, r);
	if (ret)
		return ret;
	p = eol + 2;
	for (;;) {
		ret = line_end(p, end, &eol);
		if (ret <= 0)
			return ret < 0 ? ret : len >= HTTP_MAX_HEAD ?
						HTTP_TOO_LARGE : 0;
		if (eol + 2 - buf > HTTP_MAX_HEAD)
			return HTTP_TOO_LARGE;
		if (eol == p)
			break;
		if (r->nr_hdrs == HTTP_MAX_HEADERS)
			return HTTP_TOO_LARGE;
		ret = parse_header(p, eol, &r->hdrs[r->nr_hdrs]);
		if (ret)
			return ret;
		r->nr_hdrs++;
		p = eol + 2;
	}
	ret = interpret(r);
	return ret ? ret : (int)(eol + 2 - buf);
}

const struct http_header *http_header(const struct http_request *r,
				      const char *name)
{
	for (size_t i = 0; i < r->nr_hdrs; i++)
		if (ieq(r->hdrs[i].name, r->hdrs[i].nlen, name))
			return &r->hdrs[i];
	return NULL;
}

/* ---- chunked bodies ---- */

enum {
	CH_SIZE,		/* hex digits of a chunk's size */
	CH_EXT,			/* ";..." up to the CR */
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER,		/* a trailer line, or the CR of the end */
	CH_TRAILER_LF,
	CH_END_LF,
	CH_DONE,
};

void http_chunked_init(struct http_chunked *c, uint64_t max, bool aws)
{
	memset(c, 0, sizeof(*c));
	c->max = max;
	c->aws = aws;
}

bool http_chunked_done(const struct http_chunked *c)
{
	return c->state == CH_DONE;
}

#define SIG_KEY "chunk-signature="
#define SIG_KEY_LEN (sizeof(SIG_KEY) - 1)

/* aws-chunked: ";chunk-signature=<64 lower-case hex>" and nothing else */
static int ext_end(struct http_chunked *c)
{
	if (!c->aws)
		return 0;
	if (c->ext_len != SIG_KEY_LEN + 64 ||
	    memcmp(c->ext, SIG_KEY, SIG_KEY_LEN))
		return HTTP_BAD;
	for (size_t i = SIG_KEY_LEN; i < c->ext_len; i++)
		if (!isdigit((unsigned char)c->ext[i]) &&
		    (c->ext[i] < 'a' || c->ext[i] > 'f'))
			return HTTP_BAD;
	memcpy(c->sig, c->ext + SIG_KEY_LEN, 64);
	c->sig[64] = 0;
	return 0;
}

static int ext_byte(struct http_chunked *c, char ch)
{
	if (!vchar((unsigned char)ch))
		return HTTP_BAD;
	if (!c->aws)
		return 0;
	if (c->ext_len == SIG_KEY_LEN + 64)
		return HTTP_BAD;
	c->ext[c->ext_len++] = ch;
	return 0;
}

static void trailer_keep(struct http_chunked *c, char ch)
{
	if (c->trailer_len == sizeof(c->trailer))
		c->trailer_cut = true;
	else
		c->trailer[c->trailer_len++] = ch;
}

/* one byte of anything but chunk data */
static int frame_byte(struct http_chunked *c, char ch)
{
	int v;

	if (++c->line > HTTP_MAX_CHUNK_LINE)
		return HTTP_BAD;
	switch (c->state) {
	case CH_SIZE:
		v = isxdigit((unsigned char)ch) ?
		    (isdigit((unsigned char)ch) ? ch - '0' :
		     (tolower((unsigned char)ch) - 'a' + 10)) : -1;
		if (v >= 0) {
			if (++c->digits > 15)
				return HTTP_BAD;
			c->left = c->left << 4 | (uint64_t)v;
			return 0;
		}
		if (!c->digits || (ch != ';' && ch != '\r'))
			return HTTP_BAD;
		if (c->aws && ch != ';')
			return HTTP_BAD;
		c->ext_len = 0;
		c->state = ch == ';' ? CH_EXT : CH_SIZE_LF;
		return 0;
	case CH_EXT:
		if (ch != '\r')
			return ext_byte(c, ch);
		c->state = CH_SIZE_LF;
		return ext_end(c);
	case CH_SIZE_LF:
		if (ch != '\n')
			return HTTP_BAD;
		if (c->left > c->max - c->total)
			return HTTP_BODY_TOO_LARGE;
		c->chunks++;
		c->line = 0;
		c->digits = 0;
		c->state = c->left ? CH_DATA : CH_TRAILER;
		return 0;
	case CH_DATA_CR:
		c->state = CH_DATA_LF;
		return ch == '\r' ? 0 : HTTP_BAD;
	case CH_DATA_LF:
		c->line = 0;
		c->state = CH_SIZE;
		return ch == '\n' ? 0 : HTTP_BAD;
	case CH_TRAILER:
		if (ch == '\r') {
			c->state = c->line == 1 ? CH_END_LF : CH_TRAILER_LF;
			if (c->line > 1)
				trailer_keep(c, '\n');
			return 0;
		}
		if (c->line == 1 && ++c->trailers > HTTP_MAX_TRAILERS)
			return HTTP_BAD;
		if (!vchar((unsigned char)ch) && ch != ':')
			return HTTP_BAD;
		trailer_keep(c, ch);
		return 0;
	case CH_TRAILER_LF:
		c->line = 0;
		c->state = CH_TRAILER;
		return ch == '\n' ? 0 : HTTP_BAD;
	case CH_END_LF:
		c->state = CH_DONE;
		return ch == '\n' ? 0 : HTTP_BAD;
	}
	return HTTP_BAD;
}

ssize_t http_chunked_feed(struct http_chunked *c, const char *in, size_t len,
			  const char **data, size_t *dlen)
{
	size_t i = 0;

	*data = NULL;
	*dlen = 0;
	while (i < len && c->state != CH_DONE) {
		if (c->state == CH_DATA) {
			size_t n = len - i < c->left ? len - i :
						       (size_t)c->left;

			*data = in + i;
			*dlen = n;
			c->left -= n;
			c->total += n;
			if (!c->left)
				c->state = CH_DATA_CR;
			return (ssize_t)(i + n);
		}
		int ret = frame_byte(c, in[i]);

		if (ret)
			return ret;
		i++;
	}
	return (ssize_t)i;
}
