// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Copies (s3_resp.h): CopyObject, and the source of UploadPartCopy.  The
 * source (x-amz-copy-source: any bucket of the same user, owned by this
 * gateway or not) is read here and its bytes written into the
 * destination bucket, which this gateway owns, as a new object's: a copy
 * shares no extent with its source, so reclaiming the one's room can
 * never take the other's bytes.  Its ETag is the MD5 of the bytes, also
 * for a multipart source.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <openssl/evp.h>
#include "util.h"
#include "front/s3_resp.h"

#define SOURCE_MAX	(3 * (S3REG_NAME_LEN + S3_MAX_KEY) + 64)

/* x-amz-copy-source as a bucket and key: 0, or answered */
static int parse_source(struct s3_ctx *x, char *bucket, size_t bsize,
			char *key, size_t *klen)
{
	char *v = xmalloc(SOURCE_MAX + 2), *q;
	int ret = -1;

	if (!s3_header(x, "x-amz-copy-source", v + 1, SOURCE_MAX)) {
		s3_error(x, 400, "InvalidArgument", "Copy Source must mention "
			 "the source bucket and key: sourcebucket/sourcekey");
		goto out;
	}
	q = strchr(v + 1, '?');
	if (q && strcmp(q, "?versionId=null")) {
		s3_error(x, 501, "NotImplemented", "Versions are not "
			 "supported: a copy source is the current object");
		goto out;
	}
	if (q)
		*q = 0;
	v[0] = '/';
	if (s3_parse_path(v[1] == '/' ? v + 1 : v, strlen(v[1] == '/' ? v + 1 :
							  v), bucket, bsize,
			  key, S3_MAX_KEY + 1, klen) != 2) {
		s3_error(x, 400, "InvalidArgument", "Copy Source must mention "
			 "the source bucket and key: sourcebucket/sourcekey");
		goto out;
	}
	ret = 0;
out:
	free(v);
	return ret;
}

/* the x-amz-copy-source-if-* conditions on the source: 0, or answered */
static int source_conditions(struct s3_ctx *x, const struct s3_copy_src *src)
{
	char v[512];
	time_t t;

	if (s3_header(x, "x-amz-copy-source-if-match", v, sizeof(v)) &&
	    !s3_etag_listed(v, src->etag))
		goto failed;
	if (s3_header(x, "x-amz-copy-source-if-none-match", v, sizeof(v)) &&
	    s3_etag_listed(v, src->etag))
		goto failed;
	if (s3_header(x, "x-amz-copy-source-if-unmodified-since", v,
		      sizeof(v)) && s3_parse_http_date(v, &t) &&
	    (time_t)src->o->mtime > t)
		goto failed;
	if (s3_header(x, "x-amz-copy-source-if-modified-since", v, sizeof(v)) &&
	    s3_parse_http_date(v, &t) && (time_t)src->o->mtime <= t)
		goto failed;
	return 0;
failed:
	s3_error(x, 412, "PreconditionFailed", "At least one of the "
		 "pre-conditions you specified did not hold");
	return -1;
}

/* the source's bucket and entry: 0, or answered */
static int open_source(struct s3_ctx *x, struct s3_copy_src *src,
		       const char *bucket, const char *key, size_t klen)
{
	int ret = s3b_get(bucket, &src->b);

	if (ret) {
		src->b = NULL;
		if (ret == -1)
			s3_error(x, 404, "NoSuchBucket", "The specified source "
				 "bucket does not exist");
		else
			s3_error(x, 503, "ServiceUnavailable", "The source "
				 "bucket cannot be read now");
		return -1;
	}
	if (strcmp(s3b_user(src->b), x->user.name)) {
		s3_error(x, 403, "AccessDenied", "Access Denied");
		return -1;
	}
	src->o = xmalloc(sizeof(*src->o));
	ret = s3b_lookup(src->b, key, klen, src->o);
	if (ret == -1) {
		s3_error(x, 404, "NoSuchKey", "The specified key does not "
			 "exist.");
		return -1;
	}
	if (!ret && !src->o->is_inline) {
		src->nr_ext = s3b_extents(src->b, src->o, &src->ext);
		ret = src->nr_ext < 0 ? -2 : 0;
	}
	if (ret) {
		s3_internal(x, "Reading the source object's entry");
		return -1;
	}
	s3_etag(src->o, src->etag);
	return 0;
}

int s3_copy_source(struct s3_ctx *x, struct s3_copy_src *src)
{
	char bucket[S3REG_NAME_LEN * 2], *key = xmalloc(S3_MAX_KEY + 1);
	size_t klen = 0;
	int ret = -1;

	memset(src, 0, sizeof(*src));
	if (!parse_source(x, bucket, sizeof(bucket), key, &klen) &&
	    !open_source(x, src, bucket, key, klen))
		ret = source_conditions(x, src);
	src->is_target = x->has_key && !strcmp(bucket, x->bucket) &&
			 klen == x->klen && !memcmp(key, x->key, klen);
	free(key);
	if (ret)
		s3_copy_source_put(src);
	return ret;
}

void s3_copy_source_put(struct s3_copy_src *src)
{
	if (src->b)
		s3b_put(src->b);
	free(src->o);
	free(src->ext);
	memset(src, 0, sizeof(*src));
}

/* @len bytes of the source from @pos into @buf: SD_RES_SUCCESS or not */
static int source_read(struct s3_copy_src *src, uint64_t pos, char *buf,
		       uint32_t len)
{
	if (src->o->is_inline) {
		memcpy(buf, src->o->data + pos, len);
		return 0;
	}
	for (int i = 0; i < src->nr_ext && len; i++) {
		uint32_t k;
		int ret;

		if (pos >= src->ext[i].len) {
			pos -= src->ext[i].len;
			continue;
		}
		k = (uint32_t)MIN((uint64_t)len, src->ext[i].len - pos);
		ret = s3b_read(src->b, src->ext[i].off + pos, buf, k);
		if (ret)
			return ret;
		buf += k;
		len -= k;
		pos = 0;
	}
	return len ? -1 : 0;
}

int s3_copy_bytes(struct s3_ctx *x, struct s3_copy_src *src, uint64_t from,
		  uint64_t len, struct s3_bucket *b, struct s3_obj *o,
		  bool inline_ok)
{
	EVP_MD_CTX *md;
	struct s3_sum sum;
	unsigned int n;
	uint64_t done = 0;
	int ret;

	sd_assert(from + len <= src->o->size);
	o->size = len;
	o->is_inline = inline_ok && len <= S3_MAX_INLINE;
	if (!o->is_inline && s3b_reserve(b, len, &o->off)) {
		s3_internal(x, "Reserving room in the bucket");
		return -1;
	}
	md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	s3_sum_init(&sum, x->sum_algo);
	while (done < len) {
		uint32_t k = (uint32_t)MIN(len - done, (uint64_t)S3_IO_CHUNK);
		char *to = o->is_inline ? (char *)o->data + done : x->buf;

		if (source_read(src, from + done, to, k)) {
			s3_internal(x, "Reading the source object");
			goto fail;
		}
		EVP_DigestUpdate(md, to, k);
		s3_sum_update(&sum, to, k);
		ret = o->is_inline ? 0 : s3b_write(b, o->off + done, to, k);
		if (ret) {
			s3_write_failed(x, "Writing the copy", ret);
			goto fail;
		}
		done += k;
	}
	EVP_DigestFinal_ex(md, o->md5, &n);
	EVP_MD_CTX_free(md);
	s3_sum_final(&sum, x->sum);
	return 0;
fail:
	EVP_MD_CTX_free(md);
	s3_sum_free(&sum);
	return -1;
}

/* x-amz-metadata-directive: the copy's type and metadata into @o: 0, or
 * answered */
static int copy_metadata(struct s3_ctx *x, const struct s3_copy_src *src,
			 struct s3_obj *o, bool *replace)
{
	char v[32], ct[S3_MAX_CTYPE + 1];

	*replace = false;
	if (s3_header(x, "x-amz-metadata-directive", v, sizeof(v))) {
		*replace = !strcmp(v, "REPLACE");
		if (!*replace && strcmp(v, "COPY")) {
			s3_error(x, 400, "InvalidArgument", "Unknown metadata "
				 "directive.");
			return -1;
		}
	}
	if (!*replace) {
		o->ctype_len = src->o->ctype_len;
		memcpy(o->ctype, src->o->ctype, o->ctype_len);
		o->meta_len = src->o->meta_len;
		memcpy(o->meta, src->o->meta, o->meta_len);
		return 0;
	}
	if (s3_header(x, "content-type", ct, sizeof(ct))) {
		o->ctype_len = (uint16_t)strlen(ct);
		memcpy(o->ctype, ct, o->ctype_len);
	}
	return s3_take_meta(x, o);
}

static void copy_reply(struct s3_ctx *x, const struct s3_obj *o)
{
	struct sbuf s = { 0 };
	char etag[S3_ETAG_LEN], date[40];

	s3_etag(o, etag);
	s3_iso_date(o->mtime, date, sizeof(date));
	sb_printf(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		  "<CopyObjectResult xmlns=\"http://s3.amazonaws.com/doc/"
		  "2006-03-01/\"><LastModified>%s</LastModified><ETag>&quot;"
		  "%s&quot;</ETag></CopyObjectResult>\n", date, etag);
	s3_send_body(x, 200, NULL, &s, "application/xml");
	free(s.p);
}

void s3_copy_object(struct s3_ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o = xzalloc(sizeof(*o));
	struct s3_copy_src src = { 0 };
	bool replace;

	if (s3_receive_small(x, 0) < 0 || s3_copy_source(x, &src) ||
	    copy_metadata(x, &src, o, &replace))
		goto out;
	x->sum_algo = S3_SUM_NONE;	/* no checksum of the copy answered */
	if (!replace && src.is_target) {
		s3_error(x, 400, "InvalidRequest", "This copy request is "
			 "illegal because it is trying to copy an object to "
			 "itself without changing the object's metadata.");
		goto out;
	}
	if (src.o->size > S3_MAX_PUT) {
		s3_error(x, 400, "InvalidRequest", "The specified copy source "
			 "is larger than the maximum allowable size for a copy "
			 "source: 5368709120");
		goto out;
	}
	o->mtime = (uint64_t)time(NULL);
	if (s3_copy_bytes(x, &src, 0, src.o->size, b, o, true))
		goto out;
	if (s3b_commit(b, x->key, x->klen, o)) {
		s3_internal(x, "Committing the object");
		goto out;
	}
	copy_reply(x, o);
out:
	s3_copy_source_put(&src);
	free(o);
}
