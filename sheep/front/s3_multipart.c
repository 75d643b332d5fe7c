// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Multipart uploads (s3_resp.h): CreateMultipartUpload,
 * UploadPart, CompleteMultipartUpload, AbortMultipartUpload, at the
 * bucket's owner (other gateways relay them there).  A part is written
 * like a PUT and committed under the upload; completing writes the
 * parts' extents as one list in the data volume and, in one commit,
 * names it by the key and drops the upload: no byte is copied, and a
 * reader sees the old object or the whole new one.  UploadPartCopy
 * writes a part from another object (s3_copy.c); the listings are in
 * s3_uploads.c.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <openssl/evp.h>
#include "s3req.h"
#include "util.h"
#include "front/s3_resp.h"

#define MIN_PART	(UINT64_C(5) << 20)	/* but the last, as S3 */
#define MAX_COMPLETE	(S3_IO_CHUNK - 1)	/* the body of a Complete */

static bool is(const struct s3_ctx *x, const char *m)
{
	return !strcmp(x->method, m);
}

static void xml_head(struct sbuf *s, const char *root, struct s3_ctx *x)
{
	sb_printf(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s xmlns="
		  "\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>", root);
	sb_xml(s, x->bucket, strlen(x->bucket));
	sb_lit(s, "</Bucket><Key>");
	sb_xml(s, x->key, x->klen);
	sb_lit(s, "</Key>");
}

/*
 * x-amz-checksum-algorithm and -type of a CreateMultipartUpload: the
 * checksum every part must come with into o->sum_algo; 0, or answered
 */
static int upload_sum(struct s3_ctx *x, struct s3_obj *o)
{
	char v[32];

	if (s3_header(x, "x-amz-checksum-type", v, sizeof(v)) &&
	    strcasecmp(v, "COMPOSITE")) {
		s3_error(x, 501, "NotImplemented", "x-amz-checksum-type %s is "
			 "not supported: parts' checksums are COMPOSITE", v);
		return -1;
	}
	if (!s3_header(x, "x-amz-checksum-algorithm", v, sizeof(v)))
		return 0;
	o->sum_algo = (uint8_t)s3_sum_by_name(v, strlen(v));
	if (o->sum_algo == S3_SUM_NONE) {
		s3_error(x, 400, "InvalidRequest", "Checksum algorithm %s is "
			 "not one of CRC32, CRC32C, CRC64NVME, SHA1, SHA256", v);
		return -1;
	}
	return 0;
}

static void create_upload(struct s3_ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o = xzalloc(sizeof(*o));
	struct sbuf s = { 0 };
	char id[S3_UPLOAD_ID_LEN + 1], ct[S3_MAX_CTYPE + 1];
	uint8_t rnd[S3_UPLOAD_ID_LEN / 2];
	const char *bad = s3_unsupported_put_header(x, true);

	if (!bad && http_header(x->r, "x-amz-copy-source"))
		bad = "x-amz-copy-source";
	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported for "
			 "CreateMultipartUpload yet", bad);
		goto out;
	}
	if (upload_sum(x, o))
		goto out;
	if (s3_header(x, "content-type", ct, sizeof(ct))) {
		o->ctype_len = (uint16_t)strlen(ct);
		memcpy(o->ctype, ct, o->ctype_len);
	}
	if (s3_take_meta(x, o))
		goto out;
	o->mtime = (uint64_t)time(NULL);	/* when it was initiated */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		s3_internal(x, "Drawing an upload id");
		goto out;
	}
	s3_hex(rnd, sizeof(rnd), id);
	if (s3b_upload_create(b, id, x->key, x->klen, o)) {
		s3_internal(x, "Recording the upload");
		goto out;
	}
	xml_head(&s, "InitiateMultipartUploadResult", x);
	sb_printf(&s, "<UploadId>%s</UploadId></InitiateMultipartUploadResult>"
		  "\n", id);
	s3_send_body(x, 200, NULL, &s, "application/xml");
out:
	free(s.p);
	free(o);
}

int s3_find_upload(struct s3_ctx *x, struct s3_bucket *b, const char *id,
		       struct s3_obj *meta)
{
	char *key = xmalloc(S3_MAX_KEY + 1);
	size_t klen = 0;
	int ret = strlen(id) == S3_UPLOAD_ID_LEN ?
		  s3b_upload_get(b, id, key, &klen, meta) : -1;

	if (!ret && (klen != x->klen || memcmp(key, x->key, klen)))
		ret = -1;
	free(key);
	if (ret == -1)
		s3_error(x, 404, "NoSuchUpload", "The specified upload does not "
			 "exist. The upload ID may be invalid, or the upload "
			 "may have been aborted or completed.");
	else if (ret)
		s3_internal(x, "Reading the upload");
	return ret;
}

/*
 * UploadPartCopy: the part's bytes from x-amz-copy-source (its
 * x-amz-copy-source-range, or all of it) into @o, their checksum by
 * @want (the upload's algorithm) into x->sum: 0, or answered
 */
static int copy_part(struct s3_ctx *x, struct s3_bucket *b, struct s3_obj *o,
		     enum s3_sum_algo want)
{
	struct s3_copy_src src;
	uint64_t from = 0, to = 0;
	char v[128];
	int ret = -1;

	if (s3_receive_small(x, 0) < 0 || s3_copy_source(x, &src))
		return -1;
	x->sum_algo = want;	/* the upload's checksum, of the bytes copied */
	if (!s3_header(x, "x-amz-copy-source-range", v, sizeof(v))) {
		to = src.o->size ? src.o->size - 1 : 0;
	} else if (s3_parse_range(v, src.o->size, &from, &to) !=
		   S3_RANGE_ONE || strncmp(v, "bytes=", 6) || v[6] == '-') {
		s3_error(x, 400, "InvalidArgument", "The x-amz-copy-source-range "
			 "value must be of the form bytes=first-last where "
			 "first and last are the zero-based offsets of the "
			 "first and last bytes to copy, within the object");
		goto out;
	}
	if (src.o->size && to - from + 1 > S3_MAX_PUT) {
		s3_error(x, 400, "InvalidRequest", "The specified copy source "
			 "is larger than the maximum allowable size for a copy "
			 "source: 5368709120");
		goto out;
	}
	ret = s3_copy_bytes(x, &src, from, src.o->size ? to - from + 1 : 0, b,
			    o, false);
out:
	s3_copy_source_put(&src);
	return ret;
}

/* <ChecksumALGO>value</ChecksumALGO> */
static void sum_xml(struct sbuf *s, enum s3_sum_algo a, const char *v)
{
	char tag[16];
	size_t i = 0;

	for (const char *n = s3_sum_name(a); *n && i < sizeof(tag) - 1; n++)
		tag[i++] = (char)toupper((unsigned char)*n);
	tag[i] = 0;
	sb_printf(s, "<Checksum%s>%s</Checksum%s>", tag, v, tag);
}

static void part_reply(struct s3_ctx *x, const struct s3_part *p, bool copy)
{
	struct sbuf s = { 0 };
	char extra[192], etag[33], date[40];

	s3_hex(p->md5, 16, etag);
	if (!copy) {
		s3_sum_header(x, etag, extra, sizeof(extra));
		s3_send_head(x, 200, extra, 0, NULL);
		return;
	}
	s3_iso_date(p->mtime, date, sizeof(date));
	sb_printf(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		  "<CopyPartResult xmlns=\"http://s3.amazonaws.com/doc/"
		  "2006-03-01/\"><LastModified>%s</LastModified><ETag>&quot;"
		  "%s&quot;</ETag>", date, etag);
	if (p->sum_algo != S3_SUM_NONE)
		sum_xml(&s, p->sum_algo, p->sum);
	sb_lit(&s, "</CopyPartResult>\n");
	s3_send_body(x, 200, NULL, &s, "application/xml");
	free(s.p);
}

static void upload_part(struct s3_ctx *x, struct s3_bucket *b,
			const char *id, const char *number)
{
	struct s3_obj *o = xzalloc(sizeof(*o));
	struct s3_part p = { 0 };
	char *end;
	unsigned long n = strtoul(number, &end, 10);
	const char *bad = s3_unsupported_put_header(x, false);
	bool copy = http_header(x->r, "x-amz-copy-source");
	enum s3_sum_algo want;

	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported for "
			 "UploadPart yet", bad);
		goto out;
	}
	if (!*number || *end || n < 1 || n > S3_MAX_PARTS) {
		s3_error(x, 400, "InvalidArgument", "Part number must be an "
			 "integer between 1 and 10000, inclusive");
		goto out;
	}
	if (s3_find_upload(x, b, id, o))
		goto out;
	want = o->sum_algo;
	if (want != S3_SUM_NONE && !copy && s3_sum_sent(x) != want) {
		s3_error(x, 400, "InvalidRequest", "Checksum Type mismatch "
			 "occurred, expected checksum Type: %s, actual checksum "
			 "Type: %s", s3_sum_name(want),
			 s3_sum_name(s3_sum_sent(x)));
		goto out;
	}
	memset(o, 0, sizeof(*o));
	if (copy ? copy_part(x, b, o, want) : s3_receive(x, b, o, false))
		goto out;
	p.sum_algo = (uint8_t)x->sum_algo;
	memcpy(p.sum, x->sum, sizeof(p.sum));
	p.number = (uint32_t)n;
	p.mtime = (uint64_t)time(NULL);
	p.off = o->off;
	p.size = o->size;
	memcpy(p.md5, o->md5, 16);
	switch (s3b_part_commit(b, id, &p)) {
	case 0:
		part_reply(x, &p, copy);
		break;
	case -1:
		s3_error(x, 404, "NoSuchUpload", "The upload was completed or "
			 "aborted while this part was sent");
		break;
	default:
		s3_internal(x, "Committing the part");
	}
out:
	free(o);
}

/* part @n's, in @parts (sorted by number): NULL if none */
static const struct s3_part *part_of(const struct s3_part *parts, int nr,
				     uint32_t n)
{
	int lo = 0, hi = nr - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (parts[mid].number == n)
			return &parts[mid];
		if (parts[mid].number < n)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/*
 * A part's checksum in the Complete request against the one it was sent
 * with: needed if the upload names an algorithm; 0, or answered
 */
static int part_sum_check(struct s3_ctx *x, const struct s3_part_ref *r,
			  const struct s3_part *p, enum s3_sum_algo upload)
{
	if (upload != S3_SUM_NONE && r->sum_algo == S3_SUM_NONE) {
		s3_error(x, 400, "InvalidRequest", "The upload was created "
			 "using a %s checksum. The complete request must "
			 "include the checksum for each part. It was missing "
			 "for part %" PRIu32 " in the request.",
			 s3_sum_name(upload), r->number);
		return -1;
	}
	if (r->sum_algo != S3_SUM_NONE &&
	    (r->sum_algo != p->sum_algo || strcmp(r->sum, p->sum))) {
		s3_error(x, 400, "InvalidPart", "Part %" PRIu32 "'s %s "
			 "checksum is not the one it was uploaded with",
			 r->number, s3_sum_name(r->sum_algo));
		return -1;
	}
	return 0;
}

/* the COMPOSITE checksum of the parts named (by upload's algorithm) */
static int composite_sum(const struct s3_part_ref *refs, int n,
			 enum s3_sum_algo a, char out[S3_SUM_COMPOSITE])
{
	const char **sums = xmalloc((size_t)n * sizeof(*sums));
	int ret;

	for (int i = 0; i < n; i++)
		sums[i] = refs[i].sum;
	ret = s3_sum_composite(a, sums, n, out);
	free(sums);
	return ret;
}

/*
 * The parts the client names, against those committed: their extents and
 * the multipart digest into @o; 0, or answered
 */
static int assemble(struct s3_ctx *x, const struct s3_part_ref *refs, int n,
		    const struct s3_part *parts, int nr,
		    struct s3_extent *ext, struct s3_obj *o)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned int len;
	char hex[33];

	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	o->size = 0;
	for (int i = 1; i < n; i++)
		if (refs[i].number <= refs[i - 1].number) {
			s3_error(x, 400, "InvalidPartOrder", "The list of parts "
				 "was not in ascending order.");
			goto fail;
		}
	for (int i = 0; i < n; i++) {
		const struct s3_part *p = part_of(parts, nr, refs[i].number);

		if (p)
			s3_hex(p->md5, 16, hex);
		if (!p || strcmp(hex, refs[i].etag)) {
			s3_error(x, 400, "InvalidPart", "Part %" PRIu32 " was "
				 "not found, or its ETag did not match",
				 refs[i].number);
			goto fail;
		}
		if (part_sum_check(x, &refs[i], p, o->sum_algo))
			goto fail;
		if (i < n - 1 && p->size < MIN_PART) {
			s3_error(x, 400, "EntityTooSmall", "Your proposed "
				 "upload is smaller than the minimum allowed "
				 "size (part %" PRIu32 ")", refs[i].number);
			goto fail;
		}
		EVP_DigestUpdate(md, p->md5, 16);
		ext[i].off = p->off;
		ext[i].len = p->size;
		o->size += p->size;
	}
	EVP_DigestFinal_ex(md, o->md5, &len);
	EVP_MD_CTX_free(md);
	o->nr_parts = (uint16_t)n;
	return 0;
fail:
	EVP_MD_CTX_free(md);
	return -1;
}

static void complete_reply(struct s3_ctx *x, const struct s3_obj *o,
			   enum s3_sum_algo a, const char *sum)
{
	struct sbuf s = { 0 };
	char etag[S3_ETAG_LEN];

	s3_etag(o, etag);
	xml_head(&s, "CompleteMultipartUploadResult", x);
	sb_printf(&s, "<ETag>&quot;%s&quot;</ETag>", etag);
	if (a != S3_SUM_NONE) {
		sum_xml(&s, a, sum);
		sb_lit(&s, "<ChecksumType>COMPOSITE</ChecksumType>");
	}
	sb_lit(&s, "</CompleteMultipartUploadResult>\n");
	s3_send_body(x, 200, NULL, &s, "application/xml");
	free(s.p);
}

static void complete_upload(struct s3_ctx *x, struct s3_bucket *b,
			    const char *id)
{
	struct s3_part_ref *refs = NULL;
	struct s3_part *parts = NULL;
	struct s3_extent *ext = NULL;
	struct s3_obj *o = xzalloc(sizeof(*o));
	enum s3_sum_algo sum_algo;
	char sum[S3_SUM_COMPOSITE];
	ssize_t len;
	int n, nr = 0;

	if (s3_find_upload(x, b, id, o) ||
	    (len = s3_receive_small(x, MAX_COMPLETE)) < 0)
		goto out;
	refs = xmalloc(S3_MAX_PARTS * sizeof(*refs));
	n = s3_parse_complete(x->buf, (size_t)len, refs, S3_MAX_PARTS);
	if (n < 0) {
		s3_error(x, 400, "MalformedXML", "The XML you provided was not "
			 "well-formed or did not validate");
		goto out;
	}
	nr = s3b_parts(b, id, &parts);
	if (nr < 0) {
		s3_internal(x, "Reading the parts");
		goto out;
	}
	ext = xmalloc((size_t)n * sizeof(*ext));
	if (assemble(x, refs, n, parts, nr, ext, o))
		goto out;
	sum_algo = o->sum_algo;
	o->sum_algo = S3_SUM_NONE;	/* the upload's: the object keeps none */
	if (sum_algo != S3_SUM_NONE &&
	    composite_sum(refs, n, sum_algo, sum)) {
		s3_internal(x, "Combining the parts' checksums");
		goto out;
	}
	o->mtime = (uint64_t)time(NULL);
	if (s3b_write_extents(b, ext, n, &o->off)) {
		s3_internal(x, "Writing the object's extents");
		goto out;
	}
	/* parts left out keep their room until reclaiming comes */
	switch (s3b_upload_complete(b, id, x->key, x->klen, o)) {
	case 0:
		complete_reply(x, o, sum_algo, sum);
		break;
	case -1:
		s3_error(x, 404, "NoSuchUpload", "The upload was completed or "
			 "aborted meanwhile");
		break;
	default:
		s3_internal(x, "Committing the object");
	}
out:
	free(ext);
	free(parts);
	free(refs);
	free(o);
}

static void abort_upload(struct s3_ctx *x, struct s3_bucket *b,
			 const char *id)
{
	switch (strlen(id) == S3_UPLOAD_ID_LEN ? s3b_upload_abort(b, id) : -1) {
	case 0:
		s3_send_head(x, 204, NULL, 0, NULL);
		break;
	case -1:
		s3_error(x, 404, "NoSuchUpload", "The specified upload does not "
			 "exist.");
		break;
	default:
		s3_internal(x, "Aborting the upload");
	}
}

bool s3_multipart(struct s3_ctx *x, struct s3_bucket *b)
{
	static const char *const with_id[] = { "uploadId", "partNumber",
					       NULL };
	static const char *const create[] = { "uploads", NULL };
	const struct s3_param *id = s3_param_get(x, "uploadId");
	const struct s3_param *num = s3_param_get(x, "partNumber");
	const char *bad;

	if (!id && !s3_param_get(x, "uploads"))
		return false;
	bad = s3_unknown_param(x, id ? with_id : create);
	/* ListParts (GET with uploadId) is routed to s3_uploads.c first */
	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported yet",
			 bad);
	} else if (!id && is(x, "POST")) {
		create_upload(x, b);
	} else if (id && num && is(x, "PUT")) {
		upload_part(x, b, id->value, num->value);
	} else if (id && !num && is(x, "POST")) {
		complete_upload(x, b, id->value);
	} else if (id && !num && is(x, "DELETE")) {
		abort_upload(x, b, id->value);
	} else {
		s3_error(x, 400, "InvalidRequest", "This combination of method "
			 "and multipart parameters is not one");
	}
	return true;
}
