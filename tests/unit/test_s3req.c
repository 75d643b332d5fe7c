// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lib/s3req.c and lib/s3names.c: what the S3 gateway reads from a
 * request's target and headers, and the names it takes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "s3names.h"
#include "s3req.h"
#include "s3sum.h"

static void test_path(void **state)
{
	char b[64], k[32];
	size_t klen = 0;

	assert_int_equal(s3_parse_path("/", 1, b, sizeof(b), k, sizeof(k),
				       &klen), 0);
	assert_int_equal(s3_parse_path("/bk", 3, b, sizeof(b), k, sizeof(k),
				       &klen), 1);
	assert_string_equal(b, "bk");
	assert_int_equal(s3_parse_path("/bk/", 4, b, sizeof(b), k, sizeof(k),
				       &klen), 1);
	assert_int_equal(s3_parse_path("/bk/a%2Fb/c%20d", 15, b, sizeof(b), k,
				       sizeof(k), &klen), 2);
	assert_int_equal(klen, 7);
	assert_string_equal(k, "a/b/c d");
	/* a NUL in a key is bytes, not an end */
	assert_int_equal(s3_parse_path("/bk/a%00b", 9, b, sizeof(b), k,
				       sizeof(k), &klen), 2);
	assert_int_equal(klen, 3);
	assert_memory_equal(k, "a\0b", 3);
	/* not a path, a bad escape, a key too long for its buffer */
	assert_int_equal(s3_parse_path("bk", 2, b, sizeof(b), k, sizeof(k),
				       &klen), -1);
	assert_int_equal(s3_parse_path("/bk/%4", 6, b, sizeof(b), k, sizeof(k),
				       &klen), -1);
	assert_int_equal(s3_parse_path("/bk/%zz", 7, b, sizeof(b), k,
				       sizeof(k), &klen), -1);
	assert_int_equal(s3_parse_path("/bk/0123456789012345678901234567890123",
				       38, b, sizeof(b), k, sizeof(k), &klen),
			 -1);
}

static void test_query(void **state)
{
	struct s3_param p[4];
	const char *q = "list-type=2&prefix=a%2Fb+c&&flag&x=";
	int n = s3_parse_query(q, strlen(q), p, 4);

	assert_int_equal(n, 4);
	assert_string_equal(p[0].name, "list-type");
	assert_string_equal(p[0].value, "2");
	assert_string_equal(p[1].value, "a/b c");
	assert_string_equal(p[2].name, "flag");
	assert_false(p[2].has_value);
	assert_true(p[3].has_value);
	assert_string_equal(p[3].value, "");
	s3_params_free(p, n);
	/*
	 * %2B is a '+', only a '+' as sent a space: a SigV2 signature
	 * (base64) or a prefix with a '+' was read with a space
	 */
	q = "Signature=a%2Bb%2F%3D&prefix=x%2By+z";
	n = s3_parse_query(q, strlen(q), p, 4);
	assert_int_equal(n, 2);
	assert_string_equal(p[0].value, "a+b/=");
	assert_string_equal(p[1].value, "x+y z");
	s3_params_free(p, n);
	/* one too many, a bad escape */
	q = "a&b&c&d&e";
	assert_int_equal(s3_parse_query(q, strlen(q), p, 4), -1);
	q = "a=%g0";
	assert_int_equal(s3_parse_query(q, strlen(q), p, 4), -1);
	assert_int_equal(s3_parse_query(NULL, 0, p, 4), 0);
}

static void range(const char *v, uint64_t size, enum s3_range want,
		  uint64_t from, uint64_t to)
{
	uint64_t f = 7, t = 7;

	assert_int_equal(s3_parse_range(v, size, &f, &t), want);
	if (want == S3_RANGE_ONE) {
		assert_int_equal(f, from);
		assert_int_equal(t, to);
	}
}

static void test_range(void **state)
{
	range("bytes=0-99", 1000, S3_RANGE_ONE, 0, 99);
	range("bytes=900-", 1000, S3_RANGE_ONE, 900, 999);
	range("bytes=900-5000", 1000, S3_RANGE_ONE, 900, 999);
	range("bytes=-10", 1000, S3_RANGE_ONE, 990, 999);
	range("bytes=-5000", 1000, S3_RANGE_ONE, 0, 999);
	range("bytes=1000-", 1000, S3_RANGE_UNSATISFIABLE, 0, 0);
	range("bytes=-0", 1000, S3_RANGE_UNSATISFIABLE, 0, 0);
	range("bytes=0-0", 0, S3_RANGE_UNSATISFIABLE, 0, 0);
	range("bytes=0-1,5-6", 1000, S3_RANGE_MANY, 0, 0);
	/* not understood: the whole object, as HTTP allows */
	range("items=0-1", 1000, S3_RANGE_NONE, 0, 0);
	range("bytes=5-1", 1000, S3_RANGE_NONE, 0, 0);
	range("bytes=a-", 1000, S3_RANGE_NONE, 0, 0);
	range("bytes=99999999999999999999999-", 1000, S3_RANGE_NONE, 0, 0);
}

static void test_complete(void **state)
{
	struct s3_part_ref r[3];
	const char *ok = "<CompleteMultipartUpload xmlns=\"x\">\n"
		"<Part><ETag>\"0123456789abcdef0123456789ABCDEF\"</ETag>"
		"<PartNumber>1</PartNumber></Part>\n"
		"<Part><PartNumber>10000</PartNumber><ETag>&quot;"
		"00000000000000000000000000000000&quot;</ETag></Part>"
		"</CompleteMultipartUpload>";

	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), 2);
	assert_int_equal(r[0].number, 1);
	assert_string_equal(r[0].etag, "0123456789abcdef0123456789abcdef");
	assert_int_equal(r[1].number, 10000);
	/* one too many, no part, a bad number, a short ETag, no ETag */
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 1), -1);
	assert_int_equal(s3_parse_complete("<x/>", 4, r, 3), -1);
	ok = "<Part><PartNumber>10001</PartNumber><ETag>"
	     "00000000000000000000000000000000</ETag></Part>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), -1);
	ok = "<Part><PartNumber>0</PartNumber><ETag>"
	     "00000000000000000000000000000000</ETag></Part>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), -1);
	ok = "<Part><PartNumber>1</PartNumber><ETag>abc</ETag></Part>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), -1);
	ok = "<Part><PartNumber>1</PartNumber></Part>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), -1);
	/* a part not closed after one that is */
	ok = "<Part><PartNumber>1</PartNumber><ETag>"
	     "00000000000000000000000000000000</ETag></Part><Part>"
	     "<PartNumber>2</PartNumber><ETag>"
	     "00000000000000000000000000000000</ETag>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), -1);
	/* an element not closed */
	ok = "<Part><PartNumber>1</PartNumber><ETag>0000";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), -1);
	/* quotes as Go's XML encoder writes them, or as &#x22; */
	ok = "<Part><PartNumber>1</PartNumber><ETag>&#34;"
	     "0123456789abcdef0123456789abcdef&#34;</ETag></Part><Part>"
	     "<PartNumber>2</PartNumber><ETag>&#x22;"
	     "0123456789abcdef0123456789abcdef&#x22;</ETag></Part>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), 2);
	assert_string_equal(r[1].etag, "0123456789abcdef0123456789abcdef");
	/* a checksum per part, at most one, in base64 */
	ok = "<Part><PartNumber>1</PartNumber><ETag>"
	     "00000000000000000000000000000000</ETag><ChecksumCRC32C>4waSgw=="
	     "</ChecksumCRC32C></Part><Part><PartNumber>2</PartNumber><ETag>"
	     "00000000000000000000000000000000</ETag></Part>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), 2);
	assert_int_equal(r[0].sum_algo, S3_SUM_CRC32C);
	assert_string_equal(r[0].sum, "4waSgw==");
	assert_int_equal(r[1].sum_algo, S3_SUM_NONE);
	ok = "<Part><PartNumber>1</PartNumber><ETag>"
	     "00000000000000000000000000000000</ETag><ChecksumCRC32>4waSgw=="
	     "</ChecksumCRC32><ChecksumSHA1>4waSgw==</ChecksumSHA1></Part>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), -1);
	ok = "<Part><PartNumber>1</PartNumber><ETag>"
	     "00000000000000000000000000000000</ETag><ChecksumCRC32>4w&amp;"
	     "</ChecksumCRC32></Part>";
	assert_int_equal(s3_parse_complete(ok, strlen(ok), r, 3), -1);
}

/* s3_parse_delete on a copy of @xml (it decodes in place) */
static int del(const char *xml, struct s3_del_key *k, int max, bool *quiet,
	       char *buf)
{
	strcpy(buf, xml);
	return s3_parse_delete(buf, strlen(buf), k, max, quiet);
}

static void test_delete(void **state)
{
	struct s3_del_key k[3];
	char buf[2200], key[S3_DEL_MAX_KEY + 2];
	bool quiet = false;
	const char *ok = "<?xml version=\"1.0\"?><Delete xmlns=\"x\">"
		"<Quiet>true</Quiet><Object><Key>a&amp;b &lt;c&gt;</Key>"
		"</Object>\n<Object><Key>&#x41;&#66;&#233;&#x1F600;</Key>"
		"<VersionId>null</VersionId></Object></Delete>";

	assert_int_equal(del(ok, k, 3, &quiet, buf), 2);
	assert_true(quiet);
	assert_int_equal(k[0].klen, 7);
	assert_memory_equal(k[0].key, "a&b <c>", 7);
	assert_int_equal(k[1].klen, 8);
	assert_memory_equal(k[1].key, "AB\xc3\xa9\xf0\x9f\x98\x80", 8);
	ok = "<Delete><Object><Key>x</Key></Object></Delete>";
	assert_int_equal(del(ok, k, 3, &quiet, buf), 1);
	assert_false(quiet);
	/* too many, none, not a Delete, an empty key, a version */
	ok = "<Delete><Object><Key>x</Key></Object><Object><Key>y</Key>"
	     "</Object></Delete>";
	assert_int_equal(del(ok, k, 1, &quiet, buf), -1);
	assert_int_equal(del("<Delete></Delete>", k, 3, &quiet, buf), -1);
	assert_int_equal(del("<Object><Key>x</Key></Object>", k, 3, &quiet,
			     buf), -1);
	assert_int_equal(del("<Delete><Object><Key></Key></Object></Delete>",
			     k, 3, &quiet, buf), -1);
	assert_int_equal(del("<Delete><Object><Key>x</Key><VersionId>3"
			     "</VersionId></Object></Delete>", k, 3, &quiet,
			     buf), -2);
	/* bad references: unknown, unended, no digits, zero, a surrogate */
	assert_int_equal(del("<Delete><Object><Key>&nbsp;</Key></Object>"
			     "</Delete>", k, 3, &quiet, buf), -1);
	assert_int_equal(del("<Delete><Object><Key>&#65</Key></Object>"
			     "</Delete>", k, 3, &quiet, buf), -1);
	assert_int_equal(del("<Delete><Object><Key>&#x;</Key></Object>"
			     "</Delete>", k, 3, &quiet, buf), -1);
	assert_int_equal(del("<Delete><Object><Key>&#0;</Key></Object>"
			     "</Delete>", k, 3, &quiet, buf), -1);
	assert_int_equal(del("<Delete><Object><Key>&#xd800;</Key></Object>"
			     "</Delete>", k, 3, &quiet, buf), -1);
	assert_int_equal(del("<Delete><Object><Key>&#x110000;</Key></Object>"
			     "</Delete>", k, 3, &quiet, buf), -1);
	/* an object not closed */
	assert_int_equal(del("<Delete><Object><Key>x</Key></Object><Object>"
			     "<Key>y</Key>", k, 3, &quiet, buf), -1);
	/* the longest key, and one byte more (as an entity: decoded) */
	memset(key, 'k', S3_DEL_MAX_KEY);
	key[S3_DEL_MAX_KEY] = 0;
	snprintf(buf, sizeof(buf), "<Delete><Object><Key>%s</Key></Object>"
		 "</Delete>", key);
	assert_int_equal(s3_parse_delete(buf, strlen(buf), k, 3, &quiet), 1);
	assert_int_equal(k[0].klen, S3_DEL_MAX_KEY);
	snprintf(buf, sizeof(buf), "<Delete><Object><Key>%s&amp;</Key>"
		 "</Object></Delete>", key);
	assert_int_equal(s3_parse_delete(buf, strlen(buf), k, 3, &quiet), -1);
}

/* @algo of "123456789", whole and in two pieces, against @want */
static void sum_check(enum s3_sum_algo algo, const char *want)
{
	struct s3_sum s;
	char out[S3_SUM_B64];

	s3_sum_init(&s, algo);
	s3_sum_update(&s, "123456789", 9);
	s3_sum_final(&s, out);
	assert_string_equal(out, want);
	s3_sum_init(&s, algo);
	s3_sum_update(&s, "1234", 4);
	s3_sum_update(&s, "", 0);
	s3_sum_update(&s, "56789", 5);
	s3_sum_final(&s, out);
	assert_string_equal(out, want);
}

static void test_sums(void **state)
{
	/* the check values of each CRC's catalogue entry */
	sum_check(S3_SUM_CRC32, "y/Q5Jg==");
	sum_check(S3_SUM_CRC32C, "4waSgw==");
	sum_check(S3_SUM_CRC64NVME, "rosUhgp5mIg=");
	sum_check(S3_SUM_SHA1, "98O8HYCOBHMq32eZZczDTKeuNEE=");
	sum_check(S3_SUM_SHA256, "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=");
	assert_int_equal(s3_crc64nvme(0, "123456789", 9),
			 0xae8b14860a799888ULL);
	assert_int_equal(s3_sum_by_name("CRC32C", 6), S3_SUM_CRC32C);
	assert_int_equal(s3_sum_by_name("crc32", 5), S3_SUM_CRC32);
	assert_int_equal(s3_sum_by_name("crc32c", 5), S3_SUM_CRC32);
	assert_int_equal(s3_sum_by_name("md5", 3), S3_SUM_NONE);
	assert_string_equal(s3_sum_name(S3_SUM_CRC64NVME), "crc64nvme");
	/* composite: the CRC32C of the parts' values, then -N */
	{
		const char *two[] = { "4waSgw==", "4waSgw==" };
		const char *bad[] = { "4waSgw" };
		char out[S3_SUM_COMPOSITE];
		struct s3_sum s;
		const uint8_t raw[] = { 0xe3, 0x06, 0x92, 0x83, 0xe3, 0x06,
					0x92, 0x83 };
		char want[S3_SUM_B64];

		s3_sum_init(&s, S3_SUM_CRC32C);
		s3_sum_update(&s, raw, sizeof(raw));
		s3_sum_final(&s, want);
		strcat(want, "-2");
		assert_int_equal(s3_sum_composite(S3_SUM_CRC32C, two, 2, out),
				 0);
		assert_string_equal(out, want);
		assert_int_equal(s3_sum_composite(S3_SUM_CRC32C, bad, 1, out),
				 -1);
		assert_int_equal(s3_sum_composite(S3_SUM_SHA1, two, 2, out),
				 -1);
	}
}

static void test_names(void **state)
{
	assert_true(s3_valid_bucket("photos", 6));
	assert_true(s3_valid_bucket("a.b-c", 5));
	assert_false(s3_valid_bucket("ab", 2));
	assert_false(s3_valid_bucket("Photos", 6));
	assert_false(s3_valid_bucket("-ab", 3));
	assert_false(s3_valid_bucket("a..b", 4));
	assert_false(s3_valid_bucket("192.168.1.1", 11));
	assert_false(s3_valid_bucket("a\0b", 3));
	assert_true(s3_valid_user("alice@x.org", 11));
	assert_false(s3_valid_user("no spaces", 9));
	assert_true(s3_valid_access("ABCDEFGHIJ0123456789", 20));
	assert_false(s3_valid_access("abcdefghij0123456789", 20));
	assert_true(s3_valid_secret("abc+/DEF0123456789xyzAB", 23));
	assert_false(s3_valid_secret("short", 5));
	assert_true(s3_valid_field("alice\0\0\0", 8, s3_valid_user));
	assert_false(s3_valid_field("alicebob", 8, s3_valid_user));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_complete),
		cmocka_unit_test(test_delete),
		cmocka_unit_test(test_sums),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
