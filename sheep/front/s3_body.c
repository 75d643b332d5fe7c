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
#include <openssl/crypto.h>
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
		/* the encoding of an aws-chunked body, not of the object */
		if (x->streaming && !strcmp(no[i], "content-encoding") &&
		    s3_header(x, "content-encoding", v, sizeof(v)) &&
		    !strcmp(v, "aws-chunked"))
			continue;
		/* the checksum a STREAMING-UNSIGNED-PAYLOAD-TRAILER brings */
		if (x->streaming_unsigned && !strcmp(no[i], "x-amz-trailer"))
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
	bool sum_trailer;		/* sum_want comes in the trailer */
};

/*
 * The checksum x-amz-trailer names (x-amz-checksum-ALGO) of a
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER body: S3_SUM_NONE if none, -1 if
 * it names anything else
 */
static int trailer_algo(const struct s3_ctx *x)
{
	const struct http_header *h = http_header(x->r, "x-amz-trailer");
	enum s3_sum_algo a;

	if (!x->streaming_unsigned || !h)
		return S3_SUM_NONE;
	if (h->vlen <= 15 || strncasecmp(h->value, "x-amz-checksum-", 15))
		return -1;
	a = s3_sum_by_name(h->value + 15, h->vlen - 15);
	return a == S3_SUM_NONE ? -1 : (int)a;
}

enum s3_sum_algo s3_sum_sent(const struct s3_ctx *x)
{
	if (trailer_algo(x) > 0)
		return (enum s3_sum_algo)trailer_algo(x);
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
	if (trailer_algo(x) < 0 || (trailer_algo(x) && a != S3_SUM_NONE)) {
		s3_error(x, 400, "InvalidRequest", "x-amz-trailer names one "
			 "x-amz-checksum- header (crc32, crc32c, crc64nvme, "
			 "sha1, sha256), and none is sent beside it");
		return -1;
	}
	if (trailer_algo(x)) {
		a = (enum s3_sum_algo)trailer_algo(x);
		d->sum_trailer = true;
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
		if (o->is_inline) {
			memcpy(o->data + done, x->buf, got);
		} else {
			int ret = s3b_write(b, o->off + done, x->buf,
					    (uint32_t)got);

			if (ret) {
				s3_close_after(x->c);
				s3_write_failed(x, "Writing the object's data",
						ret);
				return -1;
			}
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
	if (strcmp(x->payload_hash, "UNSIGNED-PAYLOAD") && !x->streaming) {
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

#define RAW_PIECE	(64U << 10)	/* of an aws-chunked body, read at once */

/* bytes of an object come in: to its entry or staged in x->buf */
struct stage {
	uint64_t done, staged;
};

static int stage_flush(struct s3_ctx *x, struct s3_bucket *b,
		       const struct s3_obj *o, struct stage *st)
{
	int ret;

	if (o->is_inline || !st->staged)
		return 0;
	ret = s3b_write(b, o->off + st->done - st->staged, x->buf,
			(uint32_t)st->staged);
	if (ret) {
		s3_close_after(x->c);
		s3_write_failed(x, "Writing the object's data", ret);
		return -1;
	}
	st->staged = 0;
	return 0;
}

static int stage_add(struct s3_ctx *x, struct s3_bucket *b, struct s3_obj *o,
		     struct stage *st, const char *data, size_t len)
{
	while (len) {
		size_t k = MIN(len, (size_t)(S3_IO_CHUNK - st->staged));

		if (o->is_inline) {
			k = len;
			memcpy(o->data + st->done, data, k);
		} else {
			memcpy(x->buf + st->staged, data, k);
			st->staged += k;
		}
		st->done += k;
		data += k;
		len -= k;
		if (st->staged == S3_IO_CHUNK && stage_flush(x, b, o, st))
			return -1;
	}
	return 0;
}

/* a chunk's data, hashed in @sha, against its signature @sig: 0 or -1 */
static int chunk_check(struct s3_ctx *x, EVP_MD_CTX *sha, char prev[65],
		       const char *sig)
{
	unsigned char h[32];
	unsigned int n;
	char want[65];

	EVP_DigestFinal_ex(sha, h, &n);
	EVP_DigestInit_ex(sha, EVP_sha256(), NULL);
	sigv4_chunk_sign(x->user.secret, &x->auth, prev, h, want);
	if (CRYPTO_memcmp(want, sig, 64)) {
		s3_close_after(x->c);
		s3_error(x, 403, "SignatureDoesNotMatch", "A chunk's signature "
			 "does not match its data");
		return -1;
	}
	memcpy(prev, sig, 65);
	return 0;
}

static int chunked_bad(struct s3_ctx *x, const char *why)
{
	s3_close_after(x->c);
	s3_error(x, 400, "IncompleteBody", "The aws-chunked body %s", why);
	return -1;
}

/* the value of the trailer x-amz-trailer names into d->sum_want: 0, -1 */
static int trailer_value(struct s3_ctx *x, const struct http_chunked *ch,
			 struct digests *d)
{
	const struct http_header *h = http_header(x->r, "x-amz-trailer");
	const char *p = ch->trailer, *end = p + ch->trailer_len;

	while (!ch->trailer_cut && p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *colon;
		size_t len;

		if (!eol)
			break;
		colon = memchr(p, ':', (size_t)(eol - p));

		if (colon && (size_t)(colon - p) == h->vlen &&
		    !strncasecmp(p, h->value, h->vlen)) {
			for (p = colon + 1; p < eol && (*p == ' ' || *p == '\t');
			     p++)
				;
			for (len = (size_t)(eol - p); len && (p[len - 1] == ' ' ||
						 p[len - 1] == '\t'); len--)
				;
			if (!len || len >= sizeof(d->sum_want))
				break;
			memcpy(d->sum_want, p, len);
			d->sum_want[len] = 0;
			return 0;
		}
		p = eol + 1;
	}
	return chunked_bad(x, "lacks the trailer x-amz-trailer names, or "
			   "its value");
}

/*
 * An aws-chunked body: decoded as it comes (lib/http.c).  Signed
 * (STREAMING-AWS4-HMAC-SHA256-PAYLOAD): each chunk's signature checked
 * once its data are in, before the next chunk's bytes count.  Unsigned
 * (STREAMING-UNSIGNED-PAYLOAD-TRAILER): plain chunks, then the trailer
 * with the checksum the request named.  0, or answered.
 */
static int receive_chunked(struct s3_ctx *x, struct s3_bucket *b,
			   struct s3_obj *o, struct digests *d)
{
	struct http_chunked ch;
	struct stage st = { 0 };
	EVP_MD_CTX *sha = EVP_MD_CTX_new();
	char *raw = xmalloc(RAW_PIECE), prev[65], sig[65] = "";
	uint64_t seen = 0;
	int ret = -1;

	memcpy(prev, x->auth.signature, 64);
	prev[64] = 0;
	EVP_DigestInit_ex(sha, EVP_sha256(), NULL);
	http_chunked_init(&ch, o->size, !x->streaming_unsigned);
	while (!http_chunked_done(&ch)) {
		ssize_t got = s3_body_read(x->c, raw, RAW_PIECE), pos = 0;

		if (got <= 0) {
			if (!got)
				chunked_bad(x, "ended before its last chunk");
			s3_close_after(x->c);
			goto out;
		}
		while (pos < got && !http_chunked_done(&ch)) {
			const char *data;
			size_t dlen;
			ssize_t used = http_chunked_feed(&ch, raw + pos,
							 (size_t)(got - pos),
							 &data, &dlen);

			if (used < 0) {
				chunked_bad(x, "is malformed or too long");
				goto out;
			}
			pos += used;
			if (ch.chunks != seen && !x->streaming_unsigned) {
				/* a new size line: the chunk before is in */
				if (seen && chunk_check(x, sha, prev, sig))
					goto out;
				seen = ch.chunks;
				memcpy(sig, ch.sig, sizeof(sig));
			}
			if (!dlen)
				continue;
			EVP_DigestUpdate(sha, data, dlen);
			digests_update(d, data, dlen);
			if (stage_add(x, b, o, &st, data, dlen))
				goto out;
		}
		if (pos < got) {
			chunked_bad(x, "goes on after its last chunk");
			goto out;
		}
	}
	/* the last, empty chunk is signed too */
	if (!x->streaming_unsigned && chunk_check(x, sha, prev, sig))
		goto out;
	if (d->sum_trailer && trailer_value(x, &ch, d))
		goto out;
	if (st.done != o->size || s3_body_left(x->c)) {
		chunked_bad(x, "is not x-amz-decoded-content-length bytes");
		goto out;
	}
	ret = stage_flush(x, b, o, &st);
out:
	EVP_MD_CTX_free(sha);
	free(raw);
	return ret;
}

/* x-amz-decoded-content-length of an aws-chunked body: 0, or answered */
static int decoded_length(struct s3_ctx *x, uint64_t *len)
{
	char v[32], *end;

	if (!s3_header(x, "x-amz-decoded-content-length", v, sizeof(v)) ||
	    !*v || (*len = strtoull(v, &end, 10), *end) || v[0] == '-') {
		s3_error(x, 411, "MissingContentLength", "An aws-chunked body "
			 "needs x-amz-decoded-content-length.");
		return -1;
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
	o->size = x->r->content_length;
	if (x->streaming && decoded_length(x, &o->size))
		return -1;
	if (o->size > S3_MAX_PUT) {
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
	if (x->streaming)
		ret = receive_chunked(x, b, o, &d);
	else
		ret = receive_body(x, b, o, &d);
	ret = ret || check_digests(x, o->md5, &d) ? -1 : 0;
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
	if (x->streaming) {
		s3_error(x, 501, "NotImplemented", "aws-chunked is taken for "
			 "the bodies of objects and parts only");
		return -1;
	}
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
