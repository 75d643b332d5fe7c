// SPDX-License-Identifier: GPL-2.0-or-later
/* What the S3 handlers share: text, XML and answers (s3_resp.h). */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/evp.h>
#include "util.h"
#include "front/s3_resp.h"

/* ---- text ---- */

void sb_add(struct sbuf *s, const char *p, size_t len)
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
void sb_printf(struct sbuf *s, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	sb_add(s, tmp, (size_t)MIN(n, (int)sizeof(tmp) - 1));
}

void sb_xml(struct sbuf *s, const char *p, size_t len)
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
void sb_key(struct sbuf *s, const char *p, size_t len, bool url)
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

void s3_http_date(uint64_t t, char *out, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, size, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

void s3_iso_date(uint64_t t, char *out, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, size, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

bool s3_parse_http_date(const char *s, time_t *t)
{
	struct tm tm = { 0 };
	const char *end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);

	if (!end || *end)
		return false;
	*t = timegm(&tm);
	return true;
}

bool s3_etag_listed(const char *v, const char *etag)
{
	char quoted[40];

	snprintf(quoted, sizeof(quoted), "\"%s\"", etag);
	return strstr(v, quoted) || strstr(v, etag) || !strcmp(v, "*");
}

void s3_sum_header(const struct s3_ctx *x, const char *etag, char *out,
		   size_t size)
{
	int n = snprintf(out, size, "ETag: \"%s\"\r\n", etag);

	if (x->sum_algo != S3_SUM_NONE && n > 0 && (size_t)n < size)
		snprintf(out + n, size - (size_t)n, "x-amz-checksum-%s: %s\r\n",
			 s3_sum_name(x->sum_algo), x->sum);
}

void s3_hex(const uint8_t *in, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", in[i]);
}

void s3_etag(const struct s3_obj *o, char out[S3_ETAG_LEN])
{
	s3_hex(o->md5, 16, out);
	if (o->nr_parts)
		snprintf(out + 32, S3_ETAG_LEN - 32, "-%u",
			 (unsigned int)o->nr_parts);
}

void s3_b64(const char *in, size_t len, char *out)
{
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in,
			(int)len);
}

/* ---- answers ---- */

static const char *status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
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
	case 422: return "Unprocessable Entity";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 507: return "Insufficient Storage";
	default: return "Internal Server Error";
	}
}

/* the status line and headers (@extra: more, each ending CRLF) */
int s3_send_head(struct s3_ctx *x, int status, const char *extra,
		     uint64_t length, const char *ctype)
{
	char head[4096], date[64];
	int n;

	s3_answering(x->c);
	x->status = status;
	s3_http_date((uint64_t)time(NULL), date, sizeof(date));
	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nDate: %s\r\n"
		     "Server: Kelpie\r\nx-amz-request-id: %" PRIx64 "\r\n"
		     "%s%s%s%sContent-Length: %" PRIu64 "\r\n%s\r\n",
		     status, status_text(status), date, now_msec(),
		     ctype ? "Content-Type: " : "", ctype ? ctype : "",
		     ctype ? "\r\n" : "", extra ? extra : "", length,
		     s3_closing(x->c) ? "Connection: close\r\n" : "");
	if (n >= (int)sizeof(head))
		return -1;
	return s3_send(x->c, head, (size_t)n);
}

void s3_send_body(struct s3_ctx *x, int status, const char *extra,
		      const struct sbuf *body, const char *ctype)
{
	size_t len = body ? body->len : 0;

	if (s3_send_head(x, status, extra, len, len ? ctype : NULL))
		return;
	if (len && !x->head)
		s3_send(x->c, body->p, len);
}

void s3_error(struct s3_ctx *x, int status, const char *code,
		  const char *fmt, ...)
{
	struct sbuf s = { 0 };
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (x->swift) {
		/* Swift's errors are text: the message, not S3's code */
		if (x->r->content_length || x->r->chunked)
			s3_close_after(x->c);
		sb_printf(&s, "%s\n", msg);
		s3_send_body(x, status, NULL, &s, "text/plain; charset=utf-8");
		free(s.p);
		return;
	}
	sb_printf(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		  "<Error><Code>%s</Code><Message>", code);
	sb_xml(&s, msg, strlen(msg));
	sb_lit(&s, "</Message><Resource>");
	sb_xml(&s, x->r->path, x->r->path_len);
	sb_lit(&s, "</Resource></Error>\n");
	/* a body we did not read may follow: not on this connection */
	if (x->r->content_length || x->r->chunked)
		s3_close_after(x->c);
	s3_send_body(x, status, NULL, &s, "application/xml");
	free(s.p);
}

void s3_internal(struct s3_ctx *x, const char *what)
{
	s3_error(x, 500, "InternalError", "%s failed; see the sheep's log", what);
}

void s3_write_failed(struct s3_ctx *x, const char *what, int res)
{
	if (res == SD_RES_NO_SPACE)
		s3_error(x, 507, "InsufficientStorage", "%s failed: the "
			 "cluster has no space for new objects", what);
	else
		s3_internal(x, what);
}

/* ---- the request ---- */

const struct s3_param *s3_param_get(const struct s3_ctx *x, const char *name)
{
	for (int i = 0; i < x->nr_params; i++)
		if (!strcmp(x->params[i].name, name))
			return &x->params[i];
	return NULL;
}

/* the first parameter not in @known (NULL-ended), but for signatures */
const char *s3_unknown_param(const struct s3_ctx *x,
				 const char *const *known)
{
	for (int i = 0; i < x->nr_params; i++) {
		const char *n = x->params[i].name;
		bool ok = !strncmp(n, "X-Amz-", 6) || !strcmp(n, "x-id") ||
			  /* a SigV2 presigned URL's, in one only */
			  (x->v2_query && (!strcmp(n, "AWSAccessKeyId") ||
					   !strcmp(n, "Signature") ||
					   !strcmp(n, "Expires")));

		for (int k = 0; known && known[k] && !ok; k++)
			ok = !strcmp(n, known[k]);
		if (!ok)
			return n;
	}
	return NULL;
}

const char *s3_header(const struct s3_ctx *x, const char *name, char *out,
			  size_t size)
{
	const struct http_header *h = http_header(x->r, name);

	if (!h || h->vlen >= size)
		return NULL;
	memcpy(out, h->value, h->vlen);
	out[h->vlen] = 0;
	return out;
}
