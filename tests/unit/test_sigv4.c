// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lib/sigv4.c: AWS Signature Version 4 for S3.
 *
 * Without arguments: cmocka tests on vectors botocore signed
 * (tests/unit/sigv4_vectors.py, kept here so that the test needs no
 * Python), the parsers' refusals, and a signature that must not verify
 * once any part of the request changes.  With a file argument: check
 * every vector in it (tests/unit/sigv4.sh makes fresh ones) and print
 * "N passed, N failed".
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

#include <openssl/sha.h>
#include "sigv4.h"

#define MAX_HDRS 16

struct vector {
	char method[16], path[4096], query[8192], secret[128];
	char payload[80], auth[2048];
	char hdr_buf[MAX_HDRS][1024];
	struct sigv4_hdr hdrs[MAX_HDRS];
	size_t nr_hdrs;
};

/* a field too long for its buffer is cut: the vector then fails */
static void set(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

static void add_line(struct vector *v, const char *line)
{
	const char *val = line + 2;
	char *colon;

	switch (line[0]) {
	case 'M':
		set(v->method, sizeof(v->method), val);
		break;
	case 'P':
		set(v->path, sizeof(v->path), val);
		break;
	case 'Q':
		set(v->query, sizeof(v->query), val);
		break;
	case 'S':
		set(v->secret, sizeof(v->secret), val);
		break;
	case 'X':
		set(v->payload, sizeof(v->payload), val);
		break;
	case 'A':
		set(v->auth, sizeof(v->auth), val);
		break;
	case 'H':
		if (v->nr_hdrs == MAX_HDRS)
			break;
		set(v->hdr_buf[v->nr_hdrs], sizeof(v->hdr_buf[0]), val);
		colon = strchr(v->hdr_buf[v->nr_hdrs], ':');
		if (!colon)
			break;
		v->hdrs[v->nr_hdrs] = (struct sigv4_hdr){
			.name = v->hdr_buf[v->nr_hdrs],
			.nlen = (size_t)(colon - v->hdr_buf[v->nr_hdrs]),
			.value = colon + 1, .vlen = strlen(colon + 1),
		};
		v->nr_hdrs++;
		break;
	}
}

static const struct sigv4_hdr *find_hdr(const struct vector *v,
					const char *name)
{
	for (size_t i = 0; i < v->nr_hdrs; i++)
		if (v->hdrs[i].nlen == strlen(name) &&
		    !strncasecmp(v->hdrs[i].name, name, v->hdrs[i].nlen))
			return &v->hdrs[i];
	return NULL;
}

/* parse the claims and verify: 0 if the signature holds */
static int check(const struct vector *v, struct sigv4_auth *a)
{
	struct sigv4_req r = {
		.method = v->method, .path = v->path,
		.path_len = strlen(v->path), .query = v->query,
		.query_len = strlen(v->query), .hdrs = v->hdrs,
		.nr_hdrs = v->nr_hdrs, .payload_hash = v->payload,
	};
	int ret;

	if (v->auth[0]) {
		const struct sigv4_hdr *d = find_hdr(v, "x-amz-date");

		ret = sigv4_parse_header(v->auth, strlen(v->auth),
					 d ? d->value : NULL, d ? d->vlen : 0,
					 a);
	} else {
		ret = sigv4_parse_query(v->query, strlen(v->query), a);
	}
	if (ret)
		return -1;
	return sigv4_verify(&r, a, v->secret) ? 0 : -2;
}

/* vectors from tests/unit/sigv4_vectors.py 3 1 (botocore 1.43) */
static const char *const vectors =
"M PUT\n"
"P /%25%C3%A9%E4%B8%AD%2Cc/%2B%2C%3B_%29%29Z%40%E4%B8%AD0-%2C%29%C3%A9b\n"
"Q %21=--%E4%B8%AD%2Fa.&uploadId=a%24%E4%B8%AD9&~%3AX%5D%29=.%E4%B8%AD%3B%C3%A9%28%3B%28a\n"
"H host:kelpie.test:7480\n"
"H X-Amz-Date:20261205T131209Z\n"
"H X-Amz-Content-SHA256:3df804d024bcdd31d962d14e1fe6e15cc722c045039fc398cc12e5b9967e801c\n"
"S a5ZY9d1aaa+8a3X4a7Y568Y2YY50a48+df+0d174\n"
"X 3df804d024bcdd31d962d14e1fe6e15cc722c045039fc398cc12e5b9967e801c\n"
"A AWS4-HMAC-SHA256 Credential=AKIDE8CID5452GD5A239/20261205/eu-west-3/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=32ff891fc2adebce813e02a5302a51991059a64276219756b86908f688f862dc\n"
".\n"
"M HEAD\n"
"P /~X%21/Y%21\n"
"Q -%3B%3D9ac=%5B-%E4%B8%AD&list-type=0~%3A.%C3%A9&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDID9F1JCFFI6FIJ40%2F20261205%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261205T131209Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=content-type%3Bhost&X-Amz-Signature=387d3ef4a8088eb1d30c1891aef813bb5e5c452dce4eb58d90d2519c8c0896d0\n"
"H host:kelpie.test:7480\n"
"H Content-Type:application/octet-stream\n"
"S 66da0314XZdZ7X/4aYa3ebf5748Y+75Y7+a391+4\n"
"X UNSIGNED-PAYLOAD\n"
".\n"
"M GET\n"
"P /%24Y/Z%26%29%251%5B%26/c%25a\n"
"Q list-type=-1%40-%2B-&uploads=&uploadId=%2A%2CYY%2A%5B&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID5A092JAFG08E03GI%2F20261205%2Fkelpie%2Fs3%2Faws4_request&X-Amz-Date=20261205T131209Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=content-type%3Bhost&X-Amz-Signature=31bb3f26df76d72832ad5d2b75746baf5bca3494b073c2e9b3893088efa2edb9\n"
"H host:kelpie.test:7480\n"
"H Content-Type:application/octet-stream\n"
"S d382868Ycbceff8XZ1/7Z211d0Y/6e98d1b4c3ee\n"
"X UNSIGNED-PAYLOAD\n"
".\n";

/* each block of @text as a vector, to @fn; how many failed */
static int for_each_vector(FILE *f, int (*fn)(struct vector *v, void *arg),
			   void *arg, int *total)
{
	static struct vector v;
	char line[16384];
	int failed = 0;

	memset(&v, 0, sizeof(v));
	*total = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strcmp(line, ".")) {
			(*total)++;
			failed += fn(&v, arg) != 0;
			memset(&v, 0, sizeof(v));
		} else if (strlen(line) >= 2) {
			add_line(&v, line);
		}
	}
	return failed;
}

static int verify_one(struct vector *v, void *arg)
{
	struct sigv4_auth a;
	int ret = check(v, &a);

	if (ret && arg)
		fprintf(stderr, "not verified (%d): %s %s?%s\n", ret,
			v->method, v->path, v->query);
	return ret;
}

/* the vector must stop verifying when any part of it changes */
static int tamper_one(struct vector *v, void *arg)
{
	struct sigv4_auth a;
	struct vector t;
	int held = 0;

	if (check(v, &a))
		return 1;
	t = *v;
	t.method[0] = t.method[0] == 'G' ? 'P' : 'G';
	held += !check(&t, &a);
	t = *v;
	t.path[strlen(t.path) - 1] ^= 1;
	held += !check(&t, &a);
	t = *v;
	t.secret[0] ^= 1;
	held += !check(&t, &a);
	t = *v;
	t.payload[0] = t.payload[0] == 'U' ? 'u' : t.payload[0] ^ 1;
	held += !check(&t, &a);
	/* a signed header's value */
	t = *v;
	t.hdr_buf[0][strlen(t.hdr_buf[0]) - 1] ^= 1;
	t.hdrs[0].value = t.hdr_buf[0] + (v->hdrs[0].value - v->hdr_buf[0]);
	t.hdrs[0].name = t.hdr_buf[0];
	held += !check(&t, &a);
	return held;
}

static void test_botocore_vectors(void **state)
{
	FILE *f = fmemopen((void *)vectors, strlen(vectors), "r");
	int total;

	assert_non_null(f);
	assert_int_equal(for_each_vector(f, verify_one, (void *)1, &total), 0);
	assert_int_equal(total, 3);
	rewind(f);
	assert_int_equal(for_each_vector(f, tamper_one, NULL, &total), 0);
	fclose(f);
}

static int parse(const char *auth, const char *date)
{
	struct sigv4_auth a;

	return sigv4_parse_header(auth, strlen(auth), date,
				  date ? strlen(date) : 0, &a);
}

#define GOOD_CRED "Credential=AKID/20261205/us-east-1/s3/aws4_request"
#define GOOD_SIG "Signature=" \
	"32ff891fc2adebce813e02a5302a51991059a64276219756b86908f688f862dc"

static void test_header_refusals(void **state)
{
	const char *date = "20261205T131209Z";

	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host;x-amz-date, " GOOD_SIG,
			       date), 0);
	/* another algorithm, a missing part, an unknown part */
	assert_int_equal(parse("AWS4-HMAC-SHA1 " GOOD_CRED
			       ", SignedHeaders=host, " GOOD_SIG, date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED ", " GOOD_SIG,
			       date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host, Foo=1, " GOOD_SIG,
			       date), -1);
	/* host not signed; headers out of order, repeated, upper case */
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=x-amz-date, " GOOD_SIG,
			       date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=x-amz-date;host, " GOOD_SIG,
			       date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host;host, " GOOD_SIG,
			       date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=Host, " GOOD_SIG, date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host;, " GOOD_SIG, date), -1);
	/* a scope that is not one */
	assert_int_equal(parse("AWS4-HMAC-SHA256 Credential=AKID/2026120/"
			       "us-east-1/s3/aws4_request, SignedHeaders=host, "
			       GOOD_SIG, date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 Credential=AKID/20261205/"
			       "us-east-1/s3/aws5_request, SignedHeaders=host, "
			       GOOD_SIG, date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 Credential=/20261205/"
			       "us-east-1/s3/aws4_request, SignedHeaders=host, "
			       GOOD_SIG, date), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 Credential=us-east-1/s3/"
			       "aws4_request, SignedHeaders=host, " GOOD_SIG,
			       date), -1);
	/* a signature of the wrong length or case */
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host, Signature=abc", date),
			 -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host, Signature=32FF891fc2ad"
			       "ebce813e02a5302a51991059a64276219756b86908f68"
			       "8f862dc", date), -1);
	/* no date, a date of another day, a malformed one */
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host, " GOOD_SIG, NULL), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host, " GOOD_SIG,
			       "20261206T000000Z"), -1);
	assert_int_equal(parse("AWS4-HMAC-SHA256 " GOOD_CRED
			       ", SignedHeaders=host, " GOOD_SIG,
			       "20261205 131209"), -1);
}

static int parse_q(const char *q)
{
	struct sigv4_auth a;

	return sigv4_parse_query(q, strlen(q), &a);
}

#define Q_ALG "X-Amz-Algorithm=AWS4-HMAC-SHA256"
#define Q_CRED "&X-Amz-Credential=AKID%2F20261205%2Fkelpie%2Fs3%2Faws4_request"
#define Q_DATE "&X-Amz-Date=20261205T131209Z"
#define Q_SH "&X-Amz-SignedHeaders=host"
#define Q_SIG "&X-Amz-Signature=" \
	"31bb3f26df76d72832ad5d2b75746baf5bca3494b073c2e9b3893088efa2edb9"

static void test_query_refusals(void **state)
{
	assert_int_equal(parse_q(Q_ALG Q_CRED Q_DATE "&X-Amz-Expires=3600"
				 Q_SH Q_SIG), 0);
	/* no expiry, zero, over a week, not a number */
	assert_int_equal(parse_q(Q_ALG Q_CRED Q_DATE Q_SH Q_SIG), -1);
	assert_int_equal(parse_q(Q_ALG Q_CRED Q_DATE "&X-Amz-Expires=0"
				 Q_SH Q_SIG), -1);
	assert_int_equal(parse_q(Q_ALG Q_CRED Q_DATE "&X-Amz-Expires=604801"
				 Q_SH Q_SIG), -1);
	assert_int_equal(parse_q(Q_ALG Q_CRED Q_DATE "&X-Amz-Expires=-5"
				 Q_SH Q_SIG), -1);
	assert_int_equal(parse_q(Q_ALG Q_CRED Q_DATE "&X-Amz-Expires=9"
				 "99999999999999999999" Q_SH Q_SIG), -1);
	/* a bad escape, an escaped NUL */
	assert_int_equal(parse_q(Q_ALG Q_CRED Q_DATE "&X-Amz-Expires=3600"
				 "&X-Amz-SignedHeaders=host%3" Q_SIG), -1);
	assert_int_equal(parse_q(Q_ALG Q_CRED Q_DATE "&X-Amz-Expires=3600"
				 "&X-Amz-SignedHeaders=host%00" Q_SIG), -1);
	/* another algorithm */
	assert_int_equal(parse_q("X-Amz-Algorithm=AWS4-HMAC-SHA1" Q_CRED
				 Q_DATE "&X-Amz-Expires=3600" Q_SH Q_SIG), -1);
}

/* the canonical request of AWS's documented GET example, by hand */
/*
 * AWS's published example of a signed streaming upload: 65536 bytes of
 * 'a', then 1024, then the empty last chunk, each signed after the one
 * before it, the first after the request's (seed) signature
 */
static void test_chunk_signatures(void **state)
{
	struct sigv4_auth a = { .date = "20130524", .region = "us-east-1",
				.service = "s3",
				.amz_date = "20130524T000000Z" };
	const char *secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	const char *want[] = {
		"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
		"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
		"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
	};
	const size_t sizes[] = { 65536, 1024, 0 };
	char prev[65] =
		"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
	unsigned char *data = malloc(65536), sha[32];
	char sig[65];

	memset(data, 'a', 65536);
	for (int i = 0; i < 3; i++) {
		SHA256(data, sizes[i], sha);
		sigv4_chunk_sign(secret, &a, prev, sha, sig);
		assert_string_equal(sig, want[i]);
		memcpy(prev, sig, sizeof(prev));
	}
	/* one byte else: another signature */
	data[10] = 'b';
	SHA256(data, 1024, sha);
	sigv4_chunk_sign(secret, &a, want[0], sha, sig);
	assert_string_not_equal(sig, want[1]);
	free(data);
}

static void test_canonical_form(void **state)
{
	static const char *expect =
		"GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
		"range:bytes=0-9\n"
		"x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
		"649b934ca495991b7852b855\nx-amz-date:20130524T000000Z\n\n"
		"host;range;x-amz-content-sha256;x-amz-date\n"
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	static const char *auth =
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/"
		"us-east-1/s3/aws4_request, SignedHeaders=host;range;"
		"x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e"
		"857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
	const char *hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca"
			   "495991b7852b855";
	struct sigv4_hdr h[] = {
		{ "Host", "examplebucket.s3.amazonaws.com", 4, 30 },
		{ "Range", "bytes=0-9", 5, 9 },
		{ "x-amz-content-sha256", hash, 20, 64 },
		{ "x-amz-date", "20130524T000000Z", 10, 16 },
	};
	struct sigv4_req r = {
		.method = "GET", .path = "/test.txt", .path_len = 9,
		.hdrs = h, .nr_hdrs = 4, .payload_hash = hash,
	};
	struct sigv4_auth a;
	char buf[4096];
	int n;

	assert_int_equal(sigv4_parse_header(auth, strlen(auth),
					    "20130524T000000Z", 16, &a), 0);
	n = sigv4_canonical(&r, &a, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(expect));
	assert_memory_equal(buf, expect, (size_t)n);
	/* and AWS's signature of it, with the example secret */
	assert_true(sigv4_verify(&r, &a,
				 "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"));
	assert_false(sigv4_verify(&r, &a,
				  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ"));
	/* a signed header the request lacks */
	r.nr_hdrs = 3;
	assert_int_equal(sigv4_canonical(&r, &a, buf, sizeof(buf)), -1);
	/* no room */
	r.nr_hdrs = 4;
	assert_int_equal(sigv4_canonical(&r, &a, buf, 100), -1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_botocore_vectors),
		cmocka_unit_test(test_header_refusals),
		cmocka_unit_test(test_query_refusals),
		cmocka_unit_test(test_canonical_form),
		cmocka_unit_test(test_chunk_signatures),
	};

	if (argc == 2) {
		FILE *f = fopen(argv[1], "r");
		int total, failed, held;

		if (!f) {
			perror(argv[1]);
			return 2;
		}
		failed = for_each_vector(f, verify_one, (void *)1, &total);
		rewind(f);
		held = for_each_vector(f, tamper_one, NULL, &total);
		fclose(f);
		printf("%d vectors: %d verified, %d tampered ones held\n",
		       total, total - failed, held);
		/* one check, whatever the number of vectors */
		if (failed || held || !total)
			printf("0 passed, 1 failed\n");
		else
			printf("1 passed, 0 failed\n");
		return failed || held || !total;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
