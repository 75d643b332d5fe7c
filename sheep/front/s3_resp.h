/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the S3 handlers share (s3_resp.c): the request being served, text
 * and XML built in memory, and the answers: a head, a body, an S3 error
 * document.
 */
#ifndef SHEEP_FRONT_S3_RESP_H
#define SHEEP_FRONT_S3_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "s3req.h"
#include "s3sum.h"
#include "sigv4.h"
#include "front/s3.h"
#include "front/s3_bucket.h"
#include "front/s3_stats.h"
#include "front/s3_reg.h"

/* a growable text buffer */
struct sbuf {
	char *p;
	size_t len, cap;
};

/* one request being served */
struct s3_ctx {
	struct s3_conn *c;
	const struct http_request *r;
	char method[16];
	char bucket[S3REG_NAME_LEN * 2];
	char key[S3_MAX_KEY + 1];
	size_t klen;
	bool has_bucket, has_key, head;
	bool swift;			/* a Swift request (swift.c) */
	bool v2_query;			/* signed by a SigV2 presigned URL */
	/* virtual-host style: the bucket Host names under --s3-domain */
	char vhost[64];
	struct s3_param params[S3_MAX_PARAMS];
	int nr_params;
	struct s3_user user;		/* who signed it */
	char payload_hash[80];
	/* aws-chunked (STREAMING-AWS4-HMAC-SHA256-PAYLOAD): its chunks
	 * are signed after the request's signature, under auth's scope */
	bool streaming;
	/* aws-chunked, STREAMING-UNSIGNED-PAYLOAD-TRAILER: no chunk is
	 * signed; its checksum (x-amz-trailer) comes after the last chunk */
	bool streaming_unsigned;
	struct sigv4_auth auth;
	char *buf;			/* a bounded piece of a body */
	/* the body's x-amz-checksum-*, checked (s3_body.c): answered back */
	enum s3_sum_algo sum_algo;
	char sum[S3_SUM_B64];
	/* for /metrics (s3_stats.h): what it is, how it was answered */
	enum s3_op op;
	int status;			/* the answer's, 0: none yet */
	bool relayed;			/* to the bucket's owner */
};

void sb_add(struct sbuf *s, const char *p, size_t len);
/* a string literal */
#define sb_lit(s, lit)	sb_add(s, "" lit, sizeof(lit) - 1)	/* "": literals only */
void sb_printf(struct sbuf *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* escaped for XML text */
void sb_xml(struct sbuf *s, const char *p, size_t len);
/* a key or prefix in a listing: escaped, or url-encoded (@url) */
void sb_key(struct sbuf *s, const char *p, size_t len, bool url);

void s3_http_date(uint64_t t, char *out, size_t size);
void s3_iso_date(uint64_t t, char *out, size_t size);
/* an HTTP date (RFC 7231's preferred form) into *@t: false if not one */
bool s3_parse_http_date(const char *s, time_t *t);
/* does an If-Match / If-None-Match list @v name @etag (or "*")? */
bool s3_etag_listed(const char *v, const char *etag);
void s3_hex(const uint8_t *in, size_t n, char *out);
void s3_b64(const char *in, size_t len, char *out);
/* @o's ETag without quotes: the MD5 in hex, "-N" after for N parts */
#define S3_ETAG_LEN	40
void s3_etag(const struct s3_obj *o, char out[S3_ETAG_LEN]);

/* "ETag" and the checked x-amz-checksum-*, if any, as headers into @out */
void s3_sum_header(const struct s3_ctx *x, const char *etag, char *out,
		   size_t size);
/* the status line and headers (@extra: more, each ending CRLF): 0/-1 */
int s3_send_head(struct s3_ctx *x, int status, const char *extra,
		 uint64_t length, const char *ctype);
void s3_send_body(struct s3_ctx *x, int status, const char *extra,
		  const struct sbuf *body, const char *ctype);
void s3_error(struct s3_ctx *x, int status, const char *code,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* 500, and where to look */
void s3_internal(struct s3_ctx *x, const char *what);
/*
 * A write into the cluster failed with @res: 507 InsufficientStorage for
 * a full cluster (as MinIO answers), else InternalError
 */
void s3_write_failed(struct s3_ctx *x, const char *what, int res);

/* the query parameter @name, NULL if absent */
const struct s3_param *s3_param_get(const struct s3_ctx *x, const char *name);
/* s3_auth.c: the signature, its user and time: 0, or answered */
int s3_authenticate(struct s3_ctx *x);
/* the first parameter not in @known (NULL-ended), but for signatures */
const char *s3_unknown_param(const struct s3_ctx *x,
			     const char *const *known);
/* header @name's value into @out, NULL if absent or too long */
const char *s3_header(const struct s3_ctx *x, const char *name, char *out,
		      size_t size);

/* s3_object.c: what S3 and Swift share */
/* the bucket named by the request, the user's: 0, or answered */
int s3_open_bucket(struct s3_ctx *x, struct s3_bucket **b);
/*
 * A bucket is written by its owner: a write that arrives here is relayed
 * there whole; an owner that is gone hands the bucket here.  0 to go on
 * here (*@b may be another reference), or answered (*@b put and NULL)
 */
int s3_need_owner(struct s3_ctx *x, struct s3_bucket **b);
/* GetObject and HeadObject (x->head) of the request's key */
void s3_get_object(struct s3_ctx *x, struct s3_bucket *b);

/* s3_body.c: bodies into objects */
#define S3_MAX_PUT	(UINT64_C(5) << 30)	/* one PUT or part, as S3 */
#define S3_IO_CHUNK	(1U << 20)		/* x->buf */
/*
 * What one request is charged against --budget while a worker serves
 * it: its context, x->buf and a relay's buffer.  A listing's answer and
 * a Complete's part list come on top, bounded by the workers (S3_WORKERS).
 */
#define S3_REQ_BUDGET	(sizeof(struct s3_ctx) + S3_IO_CHUNK + (64U << 10))
/*
 * The first header of a PUT that is not implemented, or NULL
 * (@create: of a CreateMultipartUpload, which takes a checksum algorithm)
 */
const char *s3_unsupported_put_header(struct s3_ctx *x, bool create);
/* the algorithm of the x-amz-checksum-* header sent, S3_SUM_NONE if none */
enum s3_sum_algo s3_sum_sent(const struct s3_ctx *x);
/* x-amz-meta-* into o->meta: 0, or answered */
int s3_take_meta(struct s3_ctx *x, struct s3_obj *o);
/*
 * The body as @o's bytes (in its entry if @inline_ok and small), its
 * digests checked: 0, or answered
 */
int s3_receive(struct s3_ctx *x, struct s3_bucket *b, struct s3_obj *o,
	       bool inline_ok);

/*
 * A small body (a request's XML: at most @max bytes, less than
 * S3_IO_CHUNK) NUL-ended in x->buf, its digests checked as a PUT's: its
 * length, or -1 (answered)
 */
ssize_t s3_receive_small(struct s3_ctx *x, size_t max);

/*
 * s3_multipart.c: a request with ?uploads or ?uploadId answered (true),
 * or not one (false)
 */
bool s3_multipart(struct s3_ctx *x, struct s3_bucket *b);
#define S3_UPLOAD_ID_LEN	32
/* the upload @id, of this request's key (its entry into @meta): 0, or
 * answered */
int s3_find_upload(struct s3_ctx *x, struct s3_bucket *b, const char *id,
		   struct s3_obj *meta);

/* s3_uploads.c: ListParts of upload @id, ListMultipartUploads */
void s3_list_parts(struct s3_ctx *x, struct s3_bucket *b, const char *id);
void s3_list_uploads(struct s3_ctx *x, struct s3_bucket *b);

/* s3_copy.c: the source of a copy (x-amz-copy-source), open */
struct s3_copy_src {
	struct s3_bucket *b;
	struct s3_obj *o;
	struct s3_extent *ext;		/* not inline: its extents */
	int nr_ext;
	char etag[S3_ETAG_LEN];
	bool is_target;			/* the object the request names */
};
/* x-amz-copy-source opened and its conditions checked: 0, or answered */
int s3_copy_source(struct s3_ctx *x, struct s3_copy_src *src);
void s3_copy_source_put(struct s3_copy_src *src);
/*
 * Bytes [@from, @from + @len) of the source as @o's bytes in @b (which
 * this gateway owns): in its entry (@inline_ok and small) or room
 * reserved for them; o->size, off, md5 set: 0, or answered
 */
int s3_copy_bytes(struct s3_ctx *x, struct s3_copy_src *src, uint64_t from,
		  uint64_t len, struct s3_bucket *b, struct s3_obj *o,
		  bool inline_ok);
/* CopyObject into @b (owned here): answered */
void s3_copy_object(struct s3_ctx *x, struct s3_bucket *b);

/*
 * swift.c: a Swift request (/auth/v1.0 without an S3 signature, or
 * under /v1/AUTH_) answered (true), or not one (false)
 */
bool swift_request(struct s3_ctx *x);

/* s3_delete.c: DeleteObjects in @b (owned here): answered */
void s3_delete_objects(struct s3_ctx *x, struct s3_bucket *b);

/* s3_list.c: ListObjects, v1 and v2 */
void s3_list_objects(struct s3_ctx *x, struct s3_bucket *b);
/* byte strings in the index's order */
int s3_key_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* a walk of a bucket's keys in order, for a listing */
struct s3_lister {
	struct s3_ctx *x;
	struct sbuf s;			/* what the emitters write */
	const char *prefix, *delim;
	size_t plen, dlen;
	bool url, v2, owner, truncated;
	int max, count;
	/* each object, and each common prefix (with a delimiter) */
	void (*emit_contents)(struct s3_lister *l, const char *key,
			      size_t klen, const struct s3_obj *o);
	void (*emit_prefix)(struct s3_lister *l, const char *p, size_t len);
	void *arg;
	/* a common prefix just listed: skip what it covers */
	char skip[S3_MAX_KEY + 1];
	size_t skip_len;
	char last[S3_MAX_KEY + 1];	/* the last key or prefix listed */
	size_t last_len;
	/* the marker: what was listed before (the walk starts after it) */
	char after[S3_MAX_KEY + 1];
	size_t after_len;
};
/* up to l->max entries and prefixes after l->after: 0, or -2 (I/O) */
int s3_walk(struct s3_bucket *b, struct s3_lister *l);

#endif
