// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A request's body as an object's bytes (s3_resp.h): streamed in pieces
 * of S3_IO_CHUNK into room reserved in the bucket's data volume, its
 * digests computed as the bytes pass and checked before anything names
 * them; and the headers of a PUT this gateway keeps or refuses.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/evp.h>
#include "util.h"
#include "front/s3_resp.h"

/* headers S3 gives a meaning this gateway does not implement yet */
const char *s3_unsupported_put_header(struct s3_ctx *x, bool create)
{
	static const char *const no[] = { "x-amz-server-side-encryption", "x-amz-tagging",
		"x-amz-website-redirect-location", "x-amz-object-lock-mode",
		"x-amz-object-lock-retain-until-date",
		"x-amz-object-lock-legal-hold", "x-amz-checksum-algorithm",
		"x-amz-checksum-type", "x-amz-trailer",
		"content-encoding", "cache-control", "content-disposition",
		"content-language", "expires", "if-match", "if-none-match",
		"x-amz-grant-read", "x-amz-grant-full-control",
		"x-amz-grant-read-acp", "x-amz-grant-write-acp", NULL };
	char v[64];

	for (int i = 0; no[i]; i++) {
		/* CreateMultipartUpload takes these (s3_multipart.c) */
		if (create && !strncmp(no[i], "x-amz-checksum-", 15))
			continue;
		if (http_header(x->r, no[i]))
			return no[i];
	}
	if (s3_header(x, "x-amz-acl", v, sizeof(v)) && strcmp(v, "private"))
		return "x-amz-acl";
	if (s3_header(x, "x-amz-storage-class", v, sizeof(v)) &&
	    strcmp(v, "STANDARD"))
		return "x-amz-storage-class";
	return NULL;
}

/* x-amz-meta-* (Swift: X-Object-Meta-*) into o->meta: 0, or answered */
int s3_take_meta(struct s3_ctx *x, struct s3_obj *o)
{
	const char *prefix = x->swift ? "x-object-meta-" : "x-amz-meta-";
	size_t total = 0, pl = strlen(prefix);

	o->meta_len = 0;
	for (size_t i = 0; i < x->r->nr_hdrs; i++) {
		const struct http_header *h = &x->r->hdrs[i];
		char name[128];

		if (h->nlen <= pl || strncasecmp(h->name, prefix, pl))
			continue;
		total += h->nlen - pl + h->vlen;
		if (total > S3_MAX_META || h->nlen >= sizeof(name) ||
		    o->meta_len + h->nlen - pl + h->vlen + 2 > S3_MAX_META) {
			s3_error(x, 400, "MetadataTooLarge", "Your metadata "
			      "headers exceed the maximum allowed metadata "
			      "size (2 KB)");
			return -1;
		}
		for (size_t k = pl; k < h->nlen; k++)
			o->meta[o->meta_len++] = (char)tolower(h->name[k]);
		o->meta[o->meta_len++] = 0;
		memcpy(o->meta + o->meta_len, h->value, h->vlen);
		o->meta_len += h->vlen;
		o->meta[o->meta_len++] = 0;
	}
	return 0;
}

struct digests {
	EVP_MD_CTX *md5, *sha;
	struct s3_sum sum;		/* x-amz-checksum-*, if sent */
	char sum_want[S3_SUM_B64];
};

enum s3_sum_algo s3_sum_sent(const struct s3_ctx *x)
{
	for (size_t i = 0; i < x->r->nr_hdrs; i++) {
		const struct http_header *h = &x->r->hdrs[i];
		enum s3_sum_algo a;

		if (h->nlen <= 15 || strncasecmp(h->name, "x-amz-checksum-", 15))
			continue;
		a = s3_sum_by_name(h->name + 15, h->nlen - 15);
		if (a != S3_SUM_NONE)
			return a;
	}
	return S3_SUM_NONE;
}

/*
 * The x-amz-checksum-* header (one at most) and x-amz-sdk-checksum-
 * algorithm: the checksum the body must have into @d; 0, or answered
 */
static int wanted_sum(struct s3_ctx *x, struct digests *d)
{
	enum s3_sum_algo a = S3_SUM_NONE, sdk = S3_SUM_NONE;
	char v[64];

	for (size_t i = 0; i < x->r->nr_hdrs; i++) {
		const struct http_header *h = &x->r->hdrs[i];
		enum s3_sum_algo ha;

		if (h->nlen <= 15 || strncasecmp(h->name, "x-amz-checksum-", 15))
			continue;
		ha = s3_sum_by_name(h->name + 15, h->nlen - 15);
		if (ha == S3_SUM_NONE)
			continue;	/* -algorithm, -type, -mode */
		if (a != S3_SUM_NONE || h->vlen >= S3_SUM_B64 || !h->vlen) {
			s3_error(x, 400, "InvalidRequest", "Expecting a single "
				 "x-amz-checksum- header, with a valid value");
			return -1;
		}
		a = ha;
		memcpy(d->sum_want, h->value, h->vlen);
		d->sum_want[h->vlen] = 0;
	}
	if (s3_header(x, "x-amz-sdk-checksum-algorithm", v, sizeof(v))) {
		sdk = s3_sum_by_name(v, strlen(v));
		if (sdk == S3_SUM_NONE || sdk != a) {
			s3_error(x, 400, "InvalidRequest", "x-amz-sdk-checksum-"
				 "algorithm %s needs its x-amz-checksum- header "
				 "(one of crc32, crc32c, crc64nvme, sha1, sha256)",
				 v);
			return -1;
		}
	}
	s3_sum_init(&d->sum, a);
	return 0;
}

static void digests_init(struct digests *d)
{
	memset(d, 0, sizeof(*d));
	d->md5 = EVP_MD_CTX_new();
	d->sha = EVP_MD_CTX_new();
	EVP_DigestInit_ex(d->md5, EVP_md5(), NULL);
	EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL);
}

static void digests_free(struct digests *d)
{
	EVP_MD_CTX_free(d->md5);
	EVP_MD_CTX_free(d->sha);
	s3_sum_free(&d->sum);
}

static void digests_update(struct digests *d, const void *buf, size_t len)
{
	EVP_DigestUpdate(d->md5, buf, len);
	EVP_DigestUpdate(d->sha, buf, len);
	s3_sum_update(&d->sum, buf, len);
}

/* the body into the data volume at @off (or o->data): 0, or answered */
static int receive_body(struct s3_ctx *x, struct s3_bucket *b, struct s3_obj *o,
			struct digests *d)
{
	uint64_t done = 0;

	while (done < o->size) {
		size_t want = (size_t)MIN(o->size - done, (uint64_t)S3_IO_CHUNK);
		size_t got = 0;

		while (got < want) {
			ssize_t n = s3_body_read(x->c, x->buf + got,
						 want - got);

			if (n <= 0) {
				s3_close_after(x->c);
				return -1;	/* the client went */
			}
			got += (size_t)n;
		}
		digests_update(d, x->buf, got);
		if (o->is_inline)
			memcpy(o->data + done, x->buf, got);
		else if (s3b_write(b, o->off + done, x->buf, (uint32_t)got)) {
			s3_close_after(x->c);
			s3_internal(x, "Writing the object's data");
			return -1;
		}
		done += got;
	}
	return 0;
}

/*
 * Content-MD5 and x-amz-content-sha256 against the bytes (their MD5 into
 * @md5): 0 or answered
 */
static int check_digests(struct s3_ctx *x, uint8_t md5[16], struct digests *d)
{
	uint8_t sha[32];
	char sha_hex[65], want[64], md5_b64[32];
	unsigned int n;

	EVP_DigestFinal_ex(d->md5, md5, &n);
	EVP_DigestFinal_ex(d->sha, sha, &n);
	if (d->sum.algo != S3_SUM_NONE) {
		enum s3_sum_algo a = d->sum.algo;
		char got[S3_SUM_B64];

		s3_sum_final(&d->sum, got);
		if (strcmp(got, d->sum_want)) {
			s3_error(x, 400, "BadDigest", "The %s you specified did "
				 "not match the calculated checksum.",
				 s3_sum_name(a));
			return -1;
		}
		x->sum_algo = a;
		memcpy(x->sum, got, sizeof(got));
	}
	if (x->swift && s3_header(x, "etag", want, sizeof(want))) {
		char hex[33];

		s3_hex(md5, 16, hex);
		if (strcasecmp(want, hex)) {
			s3_error(x, 422, "BadDigest", "The ETag you sent is not "
				 "the MD5 of the body.");
			return -1;
		}
	}
	if (s3_header(x, "content-md5", want, sizeof(want))) {
		s3_b64((const char *)md5, 16, md5_b64);
		if (strcmp(want, md5_b64)) {
			s3_error(x, 400, "BadDigest", "The Content-MD5 you "
			      "specified did not match what we received.");
			return -1;
		}
	}
	if (strcmp(x->payload_hash, "UNSIGNED-PAYLOAD")) {
		s3_hex(sha, 32, sha_hex);
		if (strcasecmp(sha_hex, x->payload_hash)) {
			s3_error(x, 400, "XAmzContentSHA256Mismatch", "The "
			      "provided 'x-amz-content-sha256' header does not "
			      "match what was computed.");
			return -1;
		}
	}
	return 0;
}

/*
 * The request's body as the bytes of @o (o->size from Content-Length):
 * into its entry (@inline_ok and small enough) or room reserved in the
 * data volume, with its MD5 (the ETag, in o->md5) and SHA-256 checked
 * against Content-MD5 and the signed payload hash.  0, or answered.
 */
int s3_receive(struct s3_ctx *x, struct s3_bucket *b, struct s3_obj *o,
	       bool inline_ok)
{
	struct digests d;
	char md5_check[64];
	int ret;

	if (x->r->chunked || !x->r->has_length) {
		s3_error(x, 411, "MissingContentLength", "You must provide "
			 "the Content-Length HTTP header.");
		return -1;
	}
	if (x->r->content_length > S3_MAX_PUT) {
		s3_error(x, 400, "EntityTooLarge", "Your proposed upload "
			 "exceeds the maximum allowed size (5 GiB in one PUT)");
		return -1;
	}
	if (s3_header(x, "content-md5", md5_check, sizeof(md5_check)) &&
	    strlen(md5_check) != 24) {
		s3_error(x, 400, "InvalidDigest", "The Content-MD5 you "
			 "specified is not valid.");
		return -1;
	}
	o->size = x->r->content_length;
	o->is_inline = inline_ok && o->size <= S3_MAX_INLINE;
	if (!o->is_inline && s3b_reserve(b, o->size, &o->off)) {
		s3_internal(x, "Reserving room in the bucket");
		return -1;
	}
	digests_init(&d);
	if (wanted_sum(x, &d)) {
		digests_free(&d);
		return -1;
	}
	ret = receive_body(x, b, o, &d) || check_digests(x, o->md5, &d) ? -1 : 0;
	digests_free(&d);
	return ret;
}

ssize_t s3_receive_small(struct s3_ctx *x, size_t max)
{
	uint64_t len = x->r->has_length ? x->r->content_length : 0;
	struct digests d;
	uint8_t md5[16];
	size_t got = 0;
	int ret;

	sd_assert(max < S3_IO_CHUNK);
	if (x->r->chunked || len > max) {
		s3_error(x, 400, "MalformedXML", "The XML you provided was not "
			 "well-formed or did not validate (at most %zu bytes, "
			 "with a Content-Length)", max);
		return -1;
	}
	while (got < len) {
		ssize_t n = s3_body_read(x->c, x->buf + got, (size_t)len - got);

		if (n <= 0) {
			s3_close_after(x->c);
			return -1;
		}
		got += (size_t)n;
	}
	x->buf[got] = 0;
	digests_init(&d);
	if (wanted_sum(x, &d)) {
		digests_free(&d);
		return -1;
	}
	digests_update(&d, x->buf, got);
	ret = check_digests(x, md5, &d);
	digests_free(&d);
	return ret ? -1 : (ssize_t)got;
}
