// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lib/sigv2.c: AWS Signature Version 2 for S3.  Vectors: the example of
 * AWS's own SigV2 page, and requests botocore's HmacV1Auth and
 * HmacV1QueryAuth signed (1.29, with the date fixed): x-amz headers with
 * blanks and a Date beside x-amz-date, subresources in another order
 * with encoded values, a parameter that is no subresource, a virtual-host
 * request, a presigned URL.  Then the parsers' refusals and a signature
 * that must not verify once a signed part changes.
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

#include "sigv2.h"

#define KEY	"AKIAIOSFODNN7EXAMPLE"
#define SECRET	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DATE	"Tue, 27 Mar 2007 19:36:42 +0000"

#define H(n, v)	{ .name = n, .nlen = sizeof(n) - 1, .value = v, \
		  .vlen = sizeof(v) - 1 }

static struct sigv2_req req(const char *method, const char *bucket,
			    const char *path, const char *query,
			    const struct sigv4_hdr *hdrs, size_t nr)
{
	return (struct sigv2_req){
		.method = method, .bucket = bucket,
		.path = path, .path_len = strlen(path),
		.query = query, .query_len = query ? strlen(query) : 0,
		.hdrs = hdrs, .nr_hdrs = nr,
	};
}

static struct sigv2_auth auth(const char *header)
{
	struct sigv2_auth a;

	assert_int_equal(sigv2_parse_header(header, strlen(header), &a), 0);
	assert_string_equal(a.access_key, KEY);
	return a;
}

static void assert_sts(const struct sigv2_req *r, const struct sigv2_auth *a,
		       const char *want)
{
	char buf[1024];
	int n = sigv2_string_to_sign(r, a, buf, sizeof(buf));

	assert_int_equal(n, (int)strlen(want));
	assert_memory_equal(buf, want, (size_t)n);
}

/* AWS's example: GET /photos/puppy.jpg, virtual host awsexamplebucket1 */
static void test_aws_example(void **state)
{
	const struct sigv4_hdr h[] = {
		H("Host", "awsexamplebucket1.us-west-1.s3.amazonaws.com"),
		H("Date", DATE),
	};
	struct sigv2_req r = req("GET", "awsexamplebucket1",
				 "/photos/puppy.jpg", NULL, h, 2);
	struct sigv2_auth a = auth("AWS " KEY ":qgk2+6Sv9/oM7G3qLEjTH1a1l1g=");

	assert_sts(&r, &a, "GET\n\n\n" DATE "\n/awsexamplebucket1/photos/"
		   "puppy.jpg");
	assert_true(sigv2_verify(&r, &a, SECRET));
	assert_false(sigv2_verify(&r, &a, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ"));
}

/* x-amz headers (blanks, case), Content-MD5, subresources, a non-one */
static void test_botocore_headers_and_subresources(void **state)
{
	const struct sigv4_hdr h[] = {
		H("x-amz-date", "Tue, 27 Mar 2007 19:42:41 +0000"),
		H("X-Amz-Meta-A", " 1 "),
		H("x-amz-meta-b", "z"),
		H("content-md5", "abc"),
		H("Date", DATE),
	};
	struct sigv2_req r = req("GET", NULL, "/b/k%20x",
				 "uploadId=a%2Fb&partNumber=2&response-content-"
				 "type=text%2Fplain&foo=bar", h, 5);
	struct sigv2_auth a = auth("AWS " KEY ":j5a6xJt255YKPxNBTPI/TAZvSd0=");

	/* S3's own form leaves the date empty beside x-amz-date... */
	assert_sts(&r, &a, "GET\nabc\n\n\nx-amz-date:Tue, 27 Mar 2007 "
		   "19:42:41 +0000\nx-amz-meta-a:1\nx-amz-meta-b:z\n/b/k%20x"
		   "?partNumber=2&response-content-type=text/plain"
		   "&uploadId=a/b");
	/* ...botocore signs the Date it sent: both verify */
	assert_true(sigv2_verify(&r, &a, SECRET));
}

/* a repeated x-amz header: one line, values in the order they came */
static void test_repeated_header(void **state)
{
	const struct sigv4_hdr h[] = {
		H("X-Amz-Meta-ReviewedBy", "joe@example.com"),
		H("x-amz-acl", "public-read"),
		H("X-Amz-Meta-ReviewedBy", "jane@example.com"),
		H("Date", DATE),
	};
	struct sigv2_req r = req("PUT", NULL, "/b/k", NULL, h, 4);
	struct sigv2_auth a = auth("AWS " KEY ":qgk2+6Sv9/oM7G3qLEjTH1a1l1g=");

	assert_sts(&r, &a, "PUT\n\n\n" DATE "\nx-amz-acl:public-read\n"
		   "x-amz-meta-reviewedby:joe@example.com,jane@example.com\n"
		   "/b/k");
}

static void test_botocore_virtual_host(void **state)
{
	const struct sigv4_hdr h[] = {
		H("Content-Type", "image/jpeg"),
		H("Date", DATE),
	};
	struct sigv2_req r = req("PUT", "b", "/photos/puppy.jpg", NULL, h, 2);
	struct sigv2_auth a = auth("AWS " KEY ":JXcrNAE8IJWNEzrbmZQEcru+2ZM=");

	assert_true(sigv2_verify(&r, &a, SECRET));
	/* the same request path-style is another resource */
	r.bucket = NULL;
	assert_false(sigv2_verify(&r, &a, SECRET));
}

static void test_botocore_subresource_only(void **state)
{
	const struct sigv4_hdr h[] = { H("Date", DATE) };
	struct sigv2_req del = req("POST", NULL, "/b/", "delete", h, 1);
	struct sigv2_req up = req("GET", NULL, "/b/", "uploads&prefix=a", h, 1);
	struct sigv2_auth a = auth("AWS " KEY ":cC/+dt5NxEp/6nFSWGg04Y+ZLjI=");
	struct sigv2_auth b = auth("AWS " KEY ":mHpcZnjMXNkF5/VS1KYXw0VD7WE=");

	assert_true(sigv2_verify(&del, &a, SECRET));
	assert_true(sigv2_verify(&up, &b, SECRET));
	/* a subresource added after signing changes the resource */
	up.query = "uploads&prefix=a&uploadId=1";
	up.query_len = strlen(up.query);
	assert_false(sigv2_verify(&up, &b, SECRET));
}

/* a bucket's path signed with its slash (botocore, S3) or without */
static void test_bare_bucket(void **state)
{
	const struct sigv4_hdr h[] = { H("Date", DATE) };
	struct sigv2_req r = req("GET", NULL, "/photos",
				 "prefix=v2%2F&encoding-type=url", h, 1);
	struct sigv2_auth slash = auth("AWS " KEY ":KyH24Skribvn5H/fZQZK6pIf"
				       "TMA=");
	struct sigv2_auth bare = auth("AWS " KEY ":vGHsIWulmH8I2qEZHYgd2C/pW"
				      "Fk=");

	assert_true(sigv2_verify(&r, &slash, SECRET));
	assert_true(sigv2_verify(&r, &bare, SECRET));
	/* a key's path is signed as it came */
	r = req("GET", NULL, "/photos/", NULL, h, 1);
	assert_true(sigv2_verify(&r, &slash, SECRET));
	assert_false(sigv2_verify(&r, &bare, SECRET));
}

static void test_botocore_presigned(void **state)
{
	struct sigv2_req r = req("GET", NULL, "/b/photos/a%2Bb.jpg",
				 "AWSAccessKeyId=" KEY "&Signature=al%2FEG4uK%2F"
				 "v2yUNx7o4FISmOGhLQ%3D&Expires=1175139620",
				 NULL, 0);
	struct sigv2_auth a;

	assert_int_equal(sigv2_parse_query(KEY, "al/EG4uK/v2yUNx7o4FISmOGhLQ=",
					   "1175139620", &a), 0);
	assert_true(a.presigned);
	assert_true(a.expires == 1175139620);
	assert_true(sigv2_verify(&r, &a, SECRET));
	a.expires++;
	assert_false(sigv2_verify(&r, &a, SECRET));
}

static void test_refusals(void **state)
{
	struct sigv2_auth a;
	static const char *const bad[] = {
		"AWS4-HMAC-SHA256 Credential=x",
		"AWS " KEY "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=",	/* no colon */
		"AWS :qgk2+6Sv9/oM7G3qLEjTH1a1l1g=",		/* no key */
		"AWS " KEY ":qgk2+6Sv9/oM7G3qLEjTH1a1l1g",	/* short */
		"AWS " KEY ":qgk2+6Sv9/oM7G3qLEjTH1a1l1g==",	/* long */
		"AWS " KEY ":qgk2+6Sv9/oM7G3qLEjTH1a1l1%=",	/* not base64 */
		"AWS A-B:qgk2+6Sv9/oM7G3qLEjTH1a1l1g=",		/* key chars */
		"AWS",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(sigv2_parse_header(bad[i], strlen(bad[i]), &a),
				 -1);
	assert_int_equal(sigv2_parse_query(KEY, "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=",
					   "", &a), -1);
	assert_int_equal(sigv2_parse_query(KEY, "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=",
					   "12x", &a), -1);
	assert_int_equal(sigv2_parse_query(KEY, "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=",
					   "1234567890123", &a), -1);
	assert_int_equal(sigv2_parse_query("", "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=",
					   "1", &a), -1);
}

/* a bad escape in a subresource's value, a path that is no path */
static void test_malformed_request(void **state)
{
	const struct sigv4_hdr h[] = { H("Date", DATE) };
	struct sigv2_auth a = auth("AWS " KEY ":qgk2+6Sv9/oM7G3qLEjTH1a1l1g=");
	struct sigv2_req r = req("GET", NULL, "/b/k", "uploadId=%zz", h, 1);
	char buf[256];
	char q[64 * 12 + 1] = "";

	assert_int_equal(sigv2_string_to_sign(&r, &a, buf, sizeof(buf)), -1);
	r = req("GET", NULL, "b/k", NULL, h, 1);
	assert_int_equal(sigv2_string_to_sign(&r, &a, buf, sizeof(buf)), -1);
	/* too many subresources */
	for (int i = 0; i < 40; i++)
		strcat(q, i ? "&acl=1" : "acl=1");
	r = req("GET", NULL, "/b/k", q, h, 1);
	assert_int_equal(sigv2_string_to_sign(&r, &a, buf, sizeof(buf)), -1);
	/* no room */
	r = req("GET", NULL, "/b/k", NULL, h, 1);
	assert_int_equal(sigv2_string_to_sign(&r, &a, buf, 10), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aws_example),
		cmocka_unit_test(test_botocore_headers_and_subresources),
		cmocka_unit_test(test_repeated_header),
		cmocka_unit_test(test_botocore_virtual_host),
		cmocka_unit_test(test_botocore_subresource_only),
		cmocka_unit_test(test_bare_bucket),
		cmocka_unit_test(test_botocore_presigned),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_malformed_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
