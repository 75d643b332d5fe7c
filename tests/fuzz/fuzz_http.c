// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: lib/http.c, lib/sigv4.c and lib/sigv2.c, what the
 * object gateway reads from clients.
 *
 * Input: a flags byte, then a request.  The head is parsed in a heap
 * buffer of exactly the bytes received (so a read past them is an ASan
 * report), whole and then cut where the flags say: a cut parse must ask
 * for more or fail the same way, never succeed differently.  A head that
 * parses is checked against its bytes (every span inside the buffer, the
 * body offset after the last CRLF), its Authorization header or its
 * presigned query goes through the SigV4 parsers and the canonical
 * request (an "AWS " one through SigV2's and its string to sign), and what follows the head is fed to the chunked decoder
 * (aws-chunked if flags bit 0) in pieces of 1 + flags >> 1 bytes: the
 * data it returns must be within the input and no more than the bound.
 * The target and a Range header go through lib/s3req.c as the S3
 * gateway reads them, and what follows the head as the body of a
 * CompleteMultipartUpload: what they return must fit what they were given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http.h"
#include "s3req.h"
#include "sigv2.h"
#include "sigv4.h"

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

static void in_buf(const char *buf, size_t len, const char *p, size_t n,
		   const char *what)
{
	if (n && (p < buf || p + n > buf + len))
		die("%s outside the input\n", what);
}

static void check_spans(const char *buf, size_t len,
			const struct http_request *r)
{
	in_buf(buf, len, r->method, r->method_len, "method");
	in_buf(buf, len, r->target, r->target_len, "target");
	in_buf(buf, len, r->path, r->path_len, "path");
	in_buf(buf, len, r->query, r->query_len, "query");
	in_buf(buf, len, r->host, r->host_len, "host");
	if (r->nr_hdrs > HTTP_MAX_HEADERS)
		die("%zu headers\n", r->nr_hdrs);
	for (size_t i = 0; i < r->nr_hdrs; i++) {
		in_buf(buf, len, r->hdrs[i].name, r->hdrs[i].nlen, "name");
		in_buf(buf, len, r->hdrs[i].value, r->hdrs[i].vlen, "value");
	}
}

/* @r's headers as the signers take them, and its method NUL-ended */
static void signer_view(const struct http_request *r, struct sigv4_hdr *h,
			char method[20])
{
	for (size_t i = 0; i < r->nr_hdrs; i++)
		h[i] = (struct sigv4_hdr){
			.name = r->hdrs[i].name, .nlen = r->hdrs[i].nlen,
			.value = r->hdrs[i].value, .vlen = r->hdrs[i].vlen,
		};
	memcpy(method, r->method, r->method_len);
	method[r->method_len] = 0;
}

static void sign(const struct http_request *r)
{
	struct sigv4_hdr h[HTTP_MAX_HEADERS];
	const struct http_header *auth = http_header(r, "authorization");
	const struct http_header *date = http_header(r, "x-amz-date");
	const struct http_header *hash =
		http_header(r, "x-amz-content-sha256");
	char method[20], payload[80], *canon;
	struct sigv4_auth a;
	struct sigv4_req sr;
	int ret;

	if (auth)
		ret = sigv4_parse_header(auth->value, auth->vlen,
					 date ? date->value : NULL,
					 date ? date->vlen : 0, &a);
	else
		ret = r->query ? sigv4_parse_query(r->query, r->query_len,
						   &a) : -1;
	if (ret)
		return;
	if (strlen(a.signature) != 64 || strlen(a.amz_date) != 16)
		die("parsed claims out of shape\n");
	signer_view(r, h, method);
	snprintf(payload, sizeof(payload), "%.*s",
		 hash ? (int)(hash->vlen < 64 ? hash->vlen : 64) : 16,
		 hash ? hash->value : "UNSIGNED-PAYLOAD");
	sr = (struct sigv4_req){
		.method = method, .path = r->path, .path_len = r->path_len,
		.query = r->query, .query_len = r->query_len, .hdrs = h,
		.nr_hdrs = r->nr_hdrs, .payload_hash = payload,
	};
	canon = malloc(SIGV4_MAX_CANONICAL);
	if (!canon)
		abort();
	ret = sigv4_canonical(&sr, &a, canon, SIGV4_MAX_CANONICAL);
	if (ret > SIGV4_MAX_CANONICAL)
		die("canonical request of %d bytes\n", ret);
	if (ret > 0 && sigv4_verify(&sr, &a, "secret"))
		die("a fuzzed signature verified\n");
	free(canon);
}

/* an "AWS KEY:SIG" header through the SigV2 parser and string to sign */
static void sign_v2(const struct http_request *r)
{
	struct sigv4_hdr h[HTTP_MAX_HEADERS];
	const struct http_header *auth = http_header(r, "authorization");
	char method[20], *sts;
	struct sigv2_auth a;
	struct sigv2_req sr;
	int ret;

	if (!auth || sigv2_parse_header(auth->value, auth->vlen, &a))
		return;
	if (strlen(a.signature) != SIGV2_SIG_LEN || !a.access_key[0])
		die("parsed SigV2 claims out of shape\n");
	signer_view(r, h, method);
	sr = (struct sigv2_req){
		.method = method, .path = r->path, .path_len = r->path_len,
		.query = r->query, .query_len = r->query_len, .hdrs = h,
		.nr_hdrs = r->nr_hdrs,
		/* a virtual-host request half the time */
		.bucket = r->path_len & 1 ? "bucket" : NULL,
	};
	sts = malloc(SIGV2_MAX_STS);
	if (!sts)
		abort();
	ret = sigv2_string_to_sign(&sr, &a, sts, SIGV2_MAX_STS);
	if (ret > SIGV2_MAX_STS)
		die("string to sign of %d bytes\n", ret);
	if (ret > 0 && sigv2_verify(&sr, &a, "secret"))
		die("a fuzzed SigV2 signature verified\n");
	free(sts);
}

static void s3(const struct http_request *r)
{
	struct s3_param p[S3_MAX_PARAMS];
	const struct http_header *rh = http_header(r, "range");
	char bucket[128], key[1025], range[128];
	uint64_t from = 0, to = 0;
	size_t klen = 0;
	int n;

	n = s3_parse_path(r->path, r->path_len, bucket, sizeof(bucket), key,
			  sizeof(key), &klen);
	if (n == 2 && (klen >= sizeof(key) || key[klen]))
		die("key of %zu bytes\n", klen);
	if (n >= 1 && strlen(bucket) >= sizeof(bucket))
		die("bucket unbounded\n");
	n = s3_parse_query(r->query, r->query_len, p, S3_MAX_PARAMS);
	if (n > S3_MAX_PARAMS)
		die("%d parameters\n", n);
	for (int i = 0; i < n; i++)
		if (strlen(p[i].value) > r->query_len)
			die("a value longer than the query\n");
	if (n > 0)
		s3_params_free(p, n);
	if (!rh || rh->vlen >= sizeof(range))
		return;
	memcpy(range, rh->value, rh->vlen);
	range[rh->vlen] = 0;
	for (uint64_t size = 0; size < 3000; size += 1499)
		if (s3_parse_range(range, size, &from, &to) == S3_RANGE_ONE &&
		    (from > to || to >= size))
			die("range %s of %llu: %llu-%llu\n", range,
			    (unsigned long long)size,
			    (unsigned long long)from, (unsigned long long)to);
}

/* what follows a head, as the body of a CompleteMultipartUpload */
static void complete(const char *buf, size_t len)
{
	struct s3_part_ref refs[16];
	int n = s3_parse_complete(buf, len, refs, 16);

	if (n > 16)
		die("%d parts\n", n);
	for (int i = 0; i < n; i++)
		if (!refs[i].number || refs[i].number > 10000 ||
		    strlen(refs[i].etag) != 32 ||
		    refs[i].sum_algo >= S3_SUM_NR ||
		    strlen(refs[i].sum) >= S3_SUM_B64 ||
		    (refs[i].sum_algo == S3_SUM_NONE) != !refs[i].sum[0])
			die("part %d: %u %s\n", i, refs[i].number,
			    refs[i].etag);
}

/* the same bytes as the body of a DeleteObjects (decoded in a copy) */
static void delete_body(const char *buf, size_t len)
{
	struct s3_del_key keys[16];
	char *copy = malloc(len ? len : 1);
	bool quiet;
	int n;

	if (!copy)
		abort();
	memcpy(copy, buf, len);
	n = s3_parse_delete(copy, len, keys, 16, &quiet);
	if (n > 16)
		die("%d keys\n", n);
	for (int i = 0; i < n; i++)
		if (!keys[i].klen || keys[i].klen > S3_DEL_MAX_KEY ||
		    keys[i].key < copy ||
		    keys[i].key + keys[i].klen > copy + len)
			die("key %d: %zu bytes outside the body\n", i,
			    keys[i].klen);
	free(copy);
}

static void body(const char *buf, size_t len, uint8_t flags)
{
	struct http_chunked c;
	size_t step = 1 + (flags >> 1), pos = 0, total = 0;
	const uint64_t max = 4096;

	http_chunked_init(&c, max, flags & 1);
	while (pos < len && !http_chunked_done(&c)) {
		size_t n = len - pos < step ? len - pos : step;
		const char *d;
		size_t dl;
		ssize_t used = http_chunked_feed(&c, buf + pos, n, &d, &dl);

		if (used < 0)
			return;
		if ((size_t)used > n || (!used && !http_chunked_done(&c)))
			die("fed %zu, used %zd\n", n, used);
		in_buf(buf + pos, n, d, dl, "chunk data");
		total += dl;
		if (total > max)
			die("%zu body bytes over the bound\n", total);
		pos += (size_t)used;
	}
	/* the trailers kept: within their buffer, a line each when done */
	if (c.trailer_len > sizeof(c.trailer) ||
	    (http_chunked_done(&c) && c.trailer_len && !c.trailer_cut &&
	     c.trailer[c.trailer_len - 1] != '\n'))
		die("trailers kept: %zu bytes, cut %d\n", c.trailer_len,
		    c.trailer_cut);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_request r, rc;
	uint8_t flags;
	size_t len, cut;
	char *buf;
	int n, m;

	if (size < 1)
		return 0;
	flags = data[0];
	len = size - 1;
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	memcpy(buf, data + 1, len);
	n = http_parse_head(buf, len, &r);
	if (n > 0) {
		if ((size_t)n > len || n < 4 || memcmp(buf + n - 4, "\r\n\r\n", 4))
			die("head of %d bytes\n", n);
		check_spans(buf, len, &r);
		sign(&r);
		sign_v2(&r);
		s3(&r);
		complete(buf + n, len - (size_t)n);
		delete_body(buf + n, len - (size_t)n);
		body(buf + n, len - (size_t)n, flags);
	}
	/* a cut head asks for more, or fails as the whole one does */
	cut = len ? (size_t)flags * 131 % (len + 1) : 0;
	m = http_parse_head(buf, cut, &rc);
	if (m > 0 && (n <= 0 || m != n))
		die("cut at %zu: %d, whole: %d\n", cut, m, n);
	if (m < 0 && n > 0)
		die("cut at %zu fails (%d), whole parses\n", cut, m);
	free(buf);
	return 0;
}
