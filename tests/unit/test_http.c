// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lib/http.c: request heads and chunked bodies as the object gateway
 * will read them.  Valid requests parse whole and in every split; what
 * RFC 9112 allows a server to refuse, and what could be read two ways
 * (request smuggling), is refused with the status it deserves.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http.h"

static int head(const char *s)
{
	struct http_request r;

	return http_parse_head(s, strlen(s), &r);
}

static void test_get(void **state)
{
	const char *s = "GET /bucket/key%20x?prefix=a&delimiter=%2F HTTP/1.1\r\n"
			"Host: node1:7480\r\n"
			"X-Amz-Date:  20261205T131209Z \t\r\n"
			"\r\nBODY";
	struct http_request r;
	const struct http_header *h;
	int n = http_parse_head(s, strlen(s), &r);

	assert_int_equal(n, (int)strlen(s) - 4);
	assert_int_equal(r.method_len, 3);
	assert_memory_equal(r.method, "GET", 3);
	assert_int_equal(r.path_len, strlen("/bucket/key%20x"));
	assert_memory_equal(r.path, "/bucket/key%20x", r.path_len);
	assert_int_equal(r.query_len, strlen("prefix=a&delimiter=%2F"));
	assert_memory_equal(r.host, "node1:7480", r.host_len);
	assert_int_equal(r.minor, 1);
	assert_true(r.keep_alive);
	assert_false(r.has_length);
	assert_false(r.chunked);
	h = http_header(&r, "x-amz-date");
	assert_non_null(h);
	/* the value without the whitespace around it */
	assert_int_equal(h->vlen, 16);
	assert_memory_equal(h->value, "20261205T131209Z", 16);
	assert_null(http_header(&r, "content-length"));
}

static void test_put_framing(void **state)
{
	struct http_request r;
	const char *s = "PUT /b/k HTTP/1.1\r\nHost: h\r\nContent-Length: 42\r\n"
			"Expect: 100-continue\r\nConnection: close\r\n\r\n";

	assert_int_equal(http_parse_head(s, strlen(s), &r), (int)strlen(s));
	assert_true(r.has_length);
	assert_int_equal(r.content_length, 42);
	assert_true(r.expect_continue);
	assert_false(r.keep_alive);
	/* the same length twice is one length */
	s = "PUT /b/k HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n"
	    "Content-Length: 7\r\n\r\n";
	assert_int_equal(http_parse_head(s, strlen(s), &r), (int)strlen(s));
	assert_int_equal(r.content_length, 7);
	s = "PUT /b/k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n";
	assert_int_equal(http_parse_head(s, strlen(s), &r), (int)strlen(s));
	assert_true(r.chunked);
	/* HTTP/1.0: closes unless asked, needs no Host */
	s = "GET / HTTP/1.0\r\n\r\n";
	assert_int_equal(http_parse_head(s, strlen(s), &r), (int)strlen(s));
	assert_false(r.keep_alive);
	s = "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n";
	assert_int_equal(http_parse_head(s, strlen(s), &r), (int)strlen(s));
	assert_true(r.keep_alive);
}

/* every prefix of a valid head asks for more, never fails */
static void test_every_split(void **state)
{
	const char *s = "DELETE /b/k?uploadId=3 HTTP/1.1\r\nHost: h\r\n"
			"Authorization: AWS4-HMAC-SHA256 x\r\n\r\n";
	struct http_request r;

	for (size_t n = 0; n < strlen(s); n++)
		assert_int_equal(http_parse_head(s, n, &r), 0);
	assert_int_equal(http_parse_head(s, strlen(s), &r), (int)strlen(s));
}

static void test_refusals(void **state)
{
	char *big;

	/* line endings, whitespace, folding, characters */
	assert_int_equal(head("GET / HTTP/1.1\nHost: h\n\n"), HTTP_BAD);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: h\n\r\n"), HTTP_BAD);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost : h\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: h\r\n x\r\n\r\n"),
			 HTTP_BAD);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: h\rx\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: a\x01z\r\n\r\n"),
			 HTTP_BAD);
	assert_int_equal(head("GET / HTTP/1.1\r\nHo\"st: h\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("GET  / HTTP/1.1\r\nHost: h\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("GET / HTTP/1.1 \r\nHost: h\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("G(T / HTTP/1.1\r\nHost: h\r\n\r\n"), HTTP_BAD);
	/* targets: origin-form only */
	assert_int_equal(head("GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n"),
			 HTTP_BAD);
	assert_int_equal(head("GET * HTTP/1.1\r\nHost: h\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("GET /\x80 HTTP/1.1\r\nHost: h\r\n\r\n"),
			 HTTP_BAD);
	/* versions */
	assert_int_equal(head("GET / HTTP/2.0\r\nHost: h\r\n\r\n"),
			 HTTP_VERSION);
	assert_int_equal(head("GET / HTTP/1.2\r\nHost: h\r\n\r\n"),
			 HTTP_VERSION);
	assert_int_equal(head("GET / HTTP/1\r\nHost: h\r\n\r\n"), HTTP_BAD);
	/* Host: none, two */
	assert_int_equal(head("GET / HTTP/1.1\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
			 HTTP_BAD);
	/* lengths: two values, signs, lists, too many digits */
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 1"
			      "\r\nContent-Length: 2\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: +1"
			      "\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 1,1"
			      "\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: "
			      "99999999999999999999\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length:"
			      "\r\n\r\n"), HTTP_BAD);
	/* codings: smuggling, others, on 1.0 */
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 5"
			      "\r\nTransfer-Encoding: chunked\r\n\r\n"),
			 HTTP_BAD);
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: "
			      "chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
			 HTTP_BAD);
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: "
			      "gzip, chunked\r\n\r\n"), HTTP_NOT_IMPL);
	assert_int_equal(head("PUT / HTTP/1.0\r\nTransfer-Encoding: chunked"
			      "\r\n\r\n"), HTTP_BAD);
	assert_int_equal(head("PUT / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok"
			      "\r\n\r\n"), HTTP_EXPECTATION);
	/* sizes: a long request line, a long head, many headers */
	big = malloc(HTTP_MAX_HEAD + 64);
	assert_non_null(big);
	memset(big, 'a', HTTP_MAX_HEAD + 63);
	big[HTTP_MAX_HEAD + 63] = 0;
	memcpy(big, "GET /", 5);
	assert_int_equal(head(big), HTTP_TOO_LONG_URI);
	strcpy(big, "GET / HTTP/1.1\r\nHost: h\r\nX: ");
	memset(big + strlen(big), 'v', HTTP_MAX_HEAD);
	big[HTTP_MAX_HEAD + 20] = 0;
	assert_int_equal(head(big), HTTP_TOO_LARGE);
	strcpy(big, "GET / HTTP/1.1\r\nHost: h\r\n");
	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		strcat(big, "X-A: b\r\n");
	strcat(big, "\r\n");
	assert_int_equal(head(big), HTTP_TOO_LARGE);
	free(big);
}

/* feed @body in pieces of @step bytes; the data in @out, the result */
static int feed(const char *body, size_t step, uint64_t max, bool aws,
		char *out, size_t *olen, struct http_chunked *c)
{
	size_t len = strlen(body), i = 0;

	http_chunked_init(c, max, aws);
	*olen = 0;
	while (i < len && !http_chunked_done(c)) {
		size_t n = len - i < step ? len - i : step;
		const char *d;
		size_t dl;
		ssize_t used = http_chunked_feed(c, body + i, n, &d, &dl);

		if (used < 0)
			return (int)used;
		if (dl) {
			memcpy(out + *olen, d, dl);
			*olen += dl;
		}
		i += (size_t)used;
	}
	return http_chunked_done(c) ? (int)i : 0;
}

#define SIG "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"

static void test_chunked(void **state)
{
	const char *body = "5\r\nhello\r\n1a;name=v\r\nabcdefghijklmnopqrstuvwxyz"
			   "\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
	struct http_chunked c;
	char out[256];
	size_t olen;

	for (size_t step = 1; step < 64; step++) {
		assert_int_equal(feed(body, step, 1 << 20, false, out, &olen,
				      &c), (int)strlen(body) - 4);
		assert_int_equal(olen, 31);
		assert_memory_equal(out, "helloabcdefghijklmnopqrstuvwxyz", 31);
		/* the trailers are kept for the caller, a line each */
		assert_false(c.trailer_cut);
		assert_int_equal(c.trailer_len, 13);
		assert_memory_equal(c.trailer, "X-Trailer: 1\n", 13);
	}
	/* trailers beyond what is kept: cut, and said so */
	{
		char big[2048];
		int n = snprintf(big, sizeof(big), "0\r\n");

		for (int i = 0; i < 20; i++)
			n += snprintf(big + n, sizeof(big) - (size_t)n,
				      "X-%02d: %040d\r\n", i, i);
		snprintf(big + n, sizeof(big) - (size_t)n, "\r\n");
		assert_int_equal(feed(big, 64, 100, false, out, &olen, &c),
				 (int)strlen(big));
		assert_true(c.trailer_cut);
		assert_int_equal(c.trailer_len, HTTP_TRAILER_KEEP);
	}
	/* refusals */
	assert_int_equal(feed("5\r\nhelloX\r\n0\r\n\r\n", 64, 100, false, out,
			      &olen, &c), HTTP_BAD);
	assert_int_equal(feed("g\r\n", 64, 100, false, out, &olen, &c),
			 HTTP_BAD);
	assert_int_equal(feed("\r\n", 64, 100, false, out, &olen, &c),
			 HTTP_BAD);
	assert_int_equal(feed("5\nhello\r\n", 64, 100, false, out, &olen, &c),
			 HTTP_BAD);
	assert_int_equal(feed("1000000000000000\r\n", 64, UINT64_MAX, false,
			      out, &olen, &c), HTTP_BAD);
	assert_int_equal(feed("65\r\n", 64, 100, false, out, &olen, &c),
			 HTTP_BODY_TOO_LARGE);
	assert_int_equal(feed("5\r\nhello\r\n60\r\n", 64, 100, false, out,
			      &olen, &c), HTTP_BODY_TOO_LARGE);
	assert_int_equal(feed("0\r\nX: \x01\r\n\r\n", 64, 100, false, out,
			      &olen, &c), HTTP_BAD);
}

static void test_aws_chunked(void **state)
{
	char body[512], out[64];
	struct http_chunked c;
	size_t olen;

	snprintf(body, sizeof(body), "5;chunk-signature=" SIG "\r\nhello\r\n"
		 "0;chunk-signature=" SIG "\r\n\r\n");
	for (size_t step = 1; step < 40; step++) {
		assert_int_equal(feed(body, step, 100, true, out, &olen, &c),
				 (int)strlen(body));
		assert_int_equal(olen, 5);
		assert_string_equal(c.sig, SIG);
	}
	/* a size line without its signature, or with a bad one */
	assert_int_equal(feed("5\r\nhello\r\n", 64, 100, true, out, &olen, &c),
			 HTTP_BAD);
	snprintf(body, sizeof(body), "5;chunk-signature=%.63s\r\n", SIG);
	assert_int_equal(feed(body, 64, 100, true, out, &olen, &c), HTTP_BAD);
	snprintf(body, sizeof(body), "5;chunk-signature=%sa\r\n", SIG);
	assert_int_equal(feed(body, 64, 100, true, out, &olen, &c), HTTP_BAD);
	snprintf(body, sizeof(body), "5;chunk-signature=%s\r\n", SIG);
	body[20] = 'A';
	assert_int_equal(feed(body, 64, 100, true, out, &olen, &c), HTTP_BAD);
	snprintf(body, sizeof(body), "5;chunk-signaturX=%s\r\n", SIG);
	assert_int_equal(feed(body, 64, 100, true, out, &olen, &c), HTTP_BAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get),
		cmocka_unit_test(test_put_framing),
		cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_aws_chunked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
