// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What S3 and Swift requests on a bucket share (s3_resp.h): opening the
 * user's bucket, the owner that writes it (relaying there, or taking it
 * over), and reading an object out: conditions, a range, the headers of
 * its entry and its bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"
#include "front/s3_bucket.h"
#include "front/s3_proxy.h"
#include "front/s3_resp.h"

/* the bucket named, the user's: 0, or answered */
int s3_open_bucket(struct s3_ctx *x, struct s3_bucket **b)
{
	int ret = s3b_get(x->bucket, b);

	if (ret == -1) {
		s3_error(x, 404, "NoSuchBucket", "The specified bucket does not "
		      "exist");
		return -1;
	}
	if (ret) {
		s3_error(x, 503, "ServiceUnavailable", "The bucket cannot be "
		      "read now");
		return -1;
	}
	if (strcmp(s3b_user(*b), x->user.name)) {
		s3b_put(*b);
		s3_error(x, 403, "AccessDenied", "Access Denied");
		return -1;
	}
	return 0;
}

#define MOVE_TRIES	3
#define SAME_ADDRESS_LOG_MS	60000

/* when the misconfiguration below was last logged (ms): once a minute */
static uint64_t same_address_logged;

/* has a minute passed since *@at? (any thread; one of them wins) */
static bool log_due(uint64_t *at)
{
	uint64_t now = now_msec(), last = __atomic_load_n(at, __ATOMIC_RELAXED);

	if (last && now - last < SAME_ADDRESS_LOG_MS)
		return false;
	return __atomic_compare_exchange_n(at, &last, now, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/*
 * A bucket is written by its owner: a write that arrives here is relayed
 * there whole (s3_proxy.c).  An owner that cannot be reached and is gone
 * (its sheep left the cluster, or it is this gateway before a restart)
 * hands the bucket to this gateway.  0 to go on here (*@b may be another
 * reference then), or answered (*@b put and NULL).
 */
int s3_need_owner(struct s3_ctx *x, struct s3_bucket **b)
{
	char owner[S3REG_NAME_LEN];
	bool again;
	int ret = -1;

	for (int i = 0; i < MOVE_TRIES; i++) {
		if (s3b_is_owner(*b))
			return 0;
		/* at our own address, a relay would come back here */
		if (!s3b_owner_is_my_address(*b) &&
		    !s3_forward(x->c, s3b_owner(*b))) {
			x->relayed = true;
			goto put;
		}
		snprintf(owner, sizeof(owner), "%s", s3b_owner(*b));
		again = s3b_owner_is_me_before(*b);
		ret = s3b_take_over(*b);
		if (ret < 0)
			break;
		s3b_put(*b);
		*b = NULL;
		if (!ret && again)
			sd_notice("S3: bucket %s taken back after this "
				  "gateway's restart", x->bucket);
		else if (!ret)
			sd_notice("S3: bucket %s taken over from gateway %s",
				  x->bucket, owner);
		if (s3_open_bucket(x, b))
			return -1;
	}
	if (ret == -1 && s3b_owner_is_my_address(*b)) {
		if (log_due(&same_address_logged))
			sd_err("S3: bucket %s is written through gateway %s "
			       "on sheep %s, a member of the cluster: this "
			       "gateway (sheep %s) has the same address; give "
			       "every gateway an address of its own (--s3)",
			       x->bucket, s3b_owner(*b), s3b_owner_node(*b),
			       s3b_self_node());
		s3_error(x, 503, "ServiceUnavailable", "Bucket %s is written "
			 "through another sheep's gateway at this gateway's "
			 "address %s", x->bucket, s3b_owner(*b));
	} else if (ret == -1)
		s3_error(x, 503, "ServiceUnavailable", "Bucket %s is written "
			 "through the gateway %s, which cannot be reached now "
			 "but is a member of the cluster", x->bucket,
			 s3b_owner(*b));
	else
		s3_error(x, 503, "ServiceUnavailable", "Bucket %s cannot be "
			 "taken over from its gateway %s now", x->bucket,
			 s3b_owner(*b));
put:
	s3b_put(*b);
	*b = NULL;
	return -1;
}

/* the range header: 0 whole, 1 a range [*from, *to], -1 answered */
static int parse_range(struct s3_ctx *x, uint64_t size, uint64_t *from,
		       uint64_t *to)
{
	char v[128];

	if (!s3_header(x, "range", v, sizeof(v)))
		return 0;
	switch (s3_parse_range(v, size, from, to)) {
	case S3_RANGE_ONE:
		return 1;
	case S3_RANGE_MANY:
		s3_error(x, 501, "NotImplemented", "Only one range per request "
		      "is supported");
		return -1;
	case S3_RANGE_UNSATISFIABLE:
		s3_error(x, 416, "InvalidRange", "The requested range is not "
		      "satisfiable");
		return -1;
	default:
		/* as HTTP allows: a range not understood is no range */
		return 0;
	}
}

/* the conditions: 0 go on, -1 answered (304 or 412) */
static int conditions(struct s3_ctx *x, const struct s3_obj *o, const char *etag,
		      const char *extra)
{
	char v[512];
	time_t t;

	if (s3_header(x, "if-match", v, sizeof(v)) && !s3_etag_listed(v, etag))
		goto failed;
	if (!http_header(x->r, "if-match") &&
	    s3_header(x, "if-unmodified-since", v, sizeof(v)) &&
	    s3_parse_http_date(v, &t) && (time_t)o->mtime > t)
		goto failed;
	if (s3_header(x, "if-none-match", v, sizeof(v))) {
		if (s3_etag_listed(v, etag))
			goto not_modified;
	} else if (s3_header(x, "if-modified-since", v, sizeof(v)) &&
		   s3_parse_http_date(v, &t) && (time_t)o->mtime <= t) {
		goto not_modified;
	}
	return 0;
failed:
	s3_error(x, 412, "PreconditionFailed", "At least one of the "
	      "pre-conditions you specified did not hold");
	return -1;
not_modified:
	s3_send_head(x, 304, extra, 0, NULL);
	return -1;
}

/* an entry's headers: S3's, or Swift's (an ETag without quotes) */
static void object_headers(const struct s3_obj *o, const char *etag,
			   bool swift, struct sbuf *h)
{
	char date[64];
	size_t i = 0;

	s3_http_date(o->mtime, date, sizeof(date));
	sb_printf(h, swift ? "ETag: %s\r\nX-Timestamp: %" PRIu64 ".00000\r\n"
		  : "ETag: \"%s\"\r\n", etag, o->mtime);
	sb_printf(h, "Last-Modified: %s\r\nAccept-Ranges: bytes\r\n", date);
	while (i < o->meta_len) {
		const char *name = o->meta + i;
		const char *val = name + strlen(name) + 1;

		if (swift)
			sb_lit(h, "X-Object-Meta-");
		else
			sb_lit(h, "x-amz-meta-");
		sb_add(h, name, strlen(name));
		sb_lit(h, ": ");
		sb_add(h, val, strlen(val));
		sb_lit(h, "\r\n");
		i = (size_t)(val - o->meta) + strlen(val) + 1;
	}
}

/* bytes [from, from + len) of the object whose extents are @e */
static void send_data(struct s3_ctx *x, struct s3_bucket *b,
		      const struct s3_extent *e, int n, uint64_t from,
		      uint64_t len)
{
	for (int i = 0; i < n && len; i++) {
		if (from >= e[i].len) {
			from -= e[i].len;
			continue;
		}
		while (from < e[i].len && len) {
			uint32_t k = (uint32_t)MIN(MIN(len, e[i].len - from),
						   (uint64_t)S3_IO_CHUNK);

			int ret = s3b_read(b, e[i].off + from, x->buf, k);

			/* the head promised bytes we cannot give */
			if (ret == SD_RES_NO_OBJ) {
				sd_warn("S3: %s/%.*s was replaced or deleted, "
					"and its room reclaimed, while it was "
					"read: the answer is cut", x->bucket,
					(int)x->klen, x->key);
				s3_close_after(x->c);
				return;
			}
			if (ret) {
				sd_err("S3: reading %s/%.*s failed: %s",
				       x->bucket, (int)x->klen, x->key,
				       sd_strerror((uint32_t)ret));
				s3_close_after(x->c);
				return;
			}
			if (s3_send(x->c, x->buf, k))
				return;
			from += k;
			len -= k;
		}
		from = 0;
	}
}

void s3_get_object(struct s3_ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o = xmalloc(sizeof(*o));
	struct s3_extent *ext = NULL;
	struct sbuf h = { 0 };
	char etag[S3_ETAG_LEN], ctype[S3_MAX_CTYPE + 1];
	uint64_t from = 0, to = 0;
	/* Swift's: no object is a symlink or a manifest (swift.c) */
	static const char *const swift_ok[] = { "symlink",
						"multipart-manifest", NULL };
	const char *bad = s3_unknown_param(x, x->swift ? swift_ok : NULL);
	int range, ret, n = 0;

	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported for "
			 "GetObject yet", bad);
		goto out;
	}
	ret = s3b_lookup(b, x->key, x->klen, o);
	if (ret == -1) {
		s3_error(x, 404, "NoSuchKey", "The specified key does not "
			 "exist.");
		goto out;
	}
	if (!ret && !o->is_inline && !x->head)
		ret = (n = s3b_extents(b, o, &ext)) < 0 ? -2 : 0;
	if (ret) {
		s3_internal(x, "Reading the bucket's index");
		goto out;
	}
	s3_etag(o, etag);
	object_headers(o, etag, x->swift, &h);
	if (conditions(x, o, etag, h.p))
		goto out;
	range = parse_range(x, o->size, &from, &to);
	if (range < 0)
		goto out;
	memcpy(ctype, o->ctype, o->ctype_len);
	ctype[o->ctype_len] = 0;
	if (range)
		sb_printf(&h, "Content-Range: bytes %" PRIu64 "-%" PRIu64
			  "/%" PRIu64 "\r\n", from, to, o->size);
	else
		to = o->size ? o->size - 1 : 0;
	if (s3_send_head(x, range ? 206 : 200, h.p,
			 o->size ? to - from + 1 : 0,
			 o->ctype_len ? ctype : "binary/octet-stream"))
		goto out;
	if (x->head || !o->size)
		goto out;
	if (o->is_inline)
		s3_send(x->c, o->data + from, (size_t)(to - from + 1));
	else
		send_data(x, b, ext, n, from, to - from + 1);
out:
	free(ext);
	free(h.p);
	free(o);
}

