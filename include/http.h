/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * HTTP/1.1 requests as an object gateway receives them (lib/http.c): the
 * head (request line and headers) and chunked bodies, plain or
 * aws-chunked.  No allocation and no I/O: the caller owns the buffers
 * and the connection.  Everything is a client's and checked here: sizes
 * are bounded, and whatever two servers could read two ways (request
 * smuggling) is refused.
 */
#ifndef KELPIE_HTTP_H
#define KELPIE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_MAX_LINE		8192	/* request line */
#define HTTP_MAX_HEAD		16384	/* request line and headers */
#define HTTP_MAX_HEADERS	100
#define HTTP_MAX_CHUNK_LINE	4096	/* a chunk's size line, a trailer */
#define HTTP_MAX_TRAILERS	32
#define HTTP_TRAILER_KEEP	512	/* trailer bytes kept for the caller */

/* what a parse that fails answers (the status a server sends) */
enum http_err {
	HTTP_BAD = -400,		/* malformed */
	HTTP_TOO_LONG_URI = -414,	/* request line over HTTP_MAX_LINE */
	HTTP_EXPECTATION = -417,	/* an Expect other than 100-continue */
	HTTP_TOO_LARGE = -431,		/* head over its bounds */
	HTTP_NOT_IMPL = -501,		/* a transfer coding not chunked */
	HTTP_VERSION = -505,		/* not HTTP/1.0 or 1.1 */
	HTTP_BODY_TOO_LARGE = -413,	/* a chunked body over its bound */
};

struct http_header {
	const char *name, *value;	/* into the caller's buffer */
	uint16_t nlen, vlen;		/* the value without surrounding OWS */
};

struct http_request {
	const char *method, *target, *path, *query;
	size_t method_len, target_len, path_len, query_len;
	int minor;			/* HTTP/1.minor */
	struct http_header hdrs[HTTP_MAX_HEADERS];
	size_t nr_hdrs;
	const char *host;
	size_t host_len;
	uint64_t content_length;
	bool has_length, chunked, keep_alive, expect_continue;
};

/*
 * The head at @buf (@len bytes received so far): its length (the body
 * starts there), 0 if more bytes are needed, or an http_err.  Call again
 * from the start when more bytes come.
 */
int http_parse_head(const char *buf, size_t len, struct http_request *r);
/* the value of header @name (case-insensitive), NULL if absent */
const struct http_header *http_header(const struct http_request *r,
				      const char *name);

struct http_chunked {
	int state;
	uint64_t left;			/* of the current chunk */
	uint64_t total;			/* body bytes so far */
	uint64_t max;			/* bound of the body */
	size_t line;			/* bytes of the current line */
	unsigned digits, trailers;
	bool aws;			/* aws-chunked: chunk-signature */
	char sig[65];			/* the last chunk's signature */
	char ext[81];			/* aws: "chunk-signature=" and hex */
	unsigned ext_len;
	uint64_t chunks;		/* size lines read (the last one too) */
	/* the trailer lines, each ended by '\n' (cut: they did not fit) */
	char trailer[HTTP_TRAILER_KEEP];
	size_t trailer_len;
	bool trailer_cut;
};

/* a decoder for a body of at most @max bytes; @aws for aws-chunked */
void http_chunked_init(struct http_chunked *c, uint64_t max, bool aws);
/*
 * Feed @len bytes at @in: how many were consumed, or an http_err.  Body
 * bytes among them are returned in *@data, *@dlen (0 if none); feed the
 * rest again.  A chunk's signature (aws-chunked) is in c->sig once its
 * size line is read, and c->chunks counts it: when it moves, the data of
 * the chunk before are all out.
 */
ssize_t http_chunked_feed(struct http_chunked *c, const char *in, size_t len,
			  const char **data, size_t *dlen);
/* the last chunk and the trailers are read (those in c->trailer) */
bool http_chunked_done(const struct http_chunked *c);

#endif
