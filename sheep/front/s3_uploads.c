// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Listings of multipart uploads (s3_resp.h): ListParts (the parts of one
 * upload, in number order) and ListMultipartUploads (the uploads in
 * progress in a bucket, in key order, uploads of one key in upload id
 * order).  Reads: any gateway answers them.  Uploads are kept by id in
 * the index, so a listing of uploads reads every upload's entry and keeps
 * only the page it returns.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "front/s3_resp.h"

#define MAX_LISTED	1000

/* the parameter @name as a count (at most MAX_LISTED): 0, or answered */
static int count_param(struct s3_ctx *x, const char *name, int *out)
{
	const struct s3_param *p = s3_param_get(x, name);
	char *end;
	long v;

	*out = MAX_LISTED;
	if (!p)
		return 0;
	v = strtol(p->value, &end, 10);
	if (!*p->value || *end || v < 0) {
		s3_error(x, 400, "InvalidArgument", "%s must be a number from 0",
			 name);
		return -1;
	}
	*out = v < MAX_LISTED ? (int)v : MAX_LISTED;
	return 0;
}

static void user_xml(struct sbuf *s, const char *tag, const char *user)
{
	sb_printf(s, "<%s><ID>", tag);
	sb_xml(s, user, strlen(user));
	sb_lit(s, "</ID><DisplayName>");
	sb_xml(s, user, strlen(user));
	sb_printf(s, "</DisplayName></%s>", tag);
}

static void head_xml(struct sbuf *s, const char *root, struct s3_ctx *x)
{
	sb_printf(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s xmlns="
		  "\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>", root);
	sb_xml(s, x->bucket, strlen(x->bucket));
	sb_lit(s, "</Bucket>");
}

/* ---- ListParts ---- */

static void parts_xml(struct s3_ctx *x, const char *id,
		      const struct s3_part *parts, int nr, uint32_t marker,
		      int max)
{
	struct sbuf s = { 0 };
	char date[40], etag[33];
	int i = 0, listed = 0;
	uint32_t last = marker;

	head_xml(&s, "ListPartsResult", x);
	sb_lit(&s, "<Key>");
	sb_xml(&s, x->key, x->klen);
	sb_printf(&s, "</Key><UploadId>%s</UploadId>", id);
	user_xml(&s, "Initiator", x->user.name);
	user_xml(&s, "Owner", x->user.name);
	sb_printf(&s, "<StorageClass>STANDARD</StorageClass><PartNumberMarker>"
		  "%" PRIu32 "</PartNumberMarker><MaxParts>%d</MaxParts>",
		  marker, max);
	while (i < nr && parts[i].number <= marker)
		i++;
	for (; i < nr && listed < max; i++, listed++) {
		s3_iso_date(parts[i].mtime, date, sizeof(date));
		s3_hex(parts[i].md5, 16, etag);
		sb_printf(&s, "<Part><PartNumber>%" PRIu32 "</PartNumber>"
			  "<LastModified>%s</LastModified><ETag>&quot;%s&quot;"
			  "</ETag><Size>%" PRIu64 "</Size></Part>",
			  parts[i].number, date, etag, parts[i].size);
		last = parts[i].number;
	}
	sb_printf(&s, "<NextPartNumberMarker>%" PRIu32 "</NextPartNumberMarker>"
		  "<IsTruncated>%s</IsTruncated></ListPartsResult>\n", last,
		  i < nr ? "true" : "false");
	s3_send_body(x, 200, NULL, &s, "application/xml");
	free(s.p);
}

void s3_list_parts(struct s3_ctx *x, struct s3_bucket *b, const char *id)
{
	static const char *const known[] = { "uploadId", "max-parts",
		"part-number-marker", NULL };
	const struct s3_param *m = s3_param_get(x, "part-number-marker");
	const char *bad = s3_unknown_param(x, known);
	struct s3_obj *o = xmalloc(sizeof(*o));
	struct s3_part *parts = NULL;
	unsigned long marker = 0;
	char *end = NULL;
	int max, nr;

	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported for "
			 "ListParts", bad);
		goto out;
	}
	if (m)
		marker = strtoul(m->value, &end, 10);
	if (m && (!*m->value || *end || marker > S3_MAX_PARTS)) {
		s3_error(x, 400, "InvalidArgument", "part-number-marker must be "
			 "a part number");
		goto out;
	}
	if (count_param(x, "max-parts", &max) || s3_find_upload(x, b, id, o))
		goto out;
	nr = s3b_parts(b, id, &parts);
	if (nr < 0)
		s3_internal(x, "Reading the parts");
	else
		parts_xml(x, id, parts, nr, (uint32_t)marker, max);
out:
	free(parts);
	free(o);
}

/* ---- ListMultipartUploads ---- */

struct listed_upload {
	char *key;
	size_t klen;
	char id[S3_UPLOAD_ID_LEN + 1];
	uint64_t mtime;
};

struct uploads {
	const char *prefix, *key_marker, *id_marker;
	size_t plen, kmlen;
	int max;
	/* the first max + 1 uploads after the markers, in order */
	struct listed_upload *u;
	int n;
};

static int upload_cmp(const char *ak, size_t akl, const char *aid,
		      const char *bk, size_t bkl, const char *bid)
{
	int c = memcmp(ak, bk, MIN(akl, bkl));

	if (c)
		return c;
	if (akl != bkl)
		return akl < bkl ? -1 : 1;
	return strcmp(aid, bid);
}

/* past the markers: a key after the key marker, or its uploads after the
 * upload id marker */
static bool after_markers(const struct uploads *l, const char *key,
			  size_t klen, const char *id)
{
	int c;

	if (!l->key_marker)
		return true;
	c = upload_cmp(key, klen, "", l->key_marker, l->kmlen, "");
	if (c)
		return c > 0;
	return l->id_marker && strcmp(id, l->id_marker) > 0;
}

static int keep_upload(const char *id, const char *key, size_t klen,
		       const struct s3_obj *o, void *arg)
{
	struct uploads *l = arg;
	struct listed_upload *last = l->n ? &l->u[l->n - 1] : NULL;
	int i;

	if (klen < l->plen || memcmp(key, l->prefix, l->plen) ||
	    strlen(id) > S3_UPLOAD_ID_LEN || !after_markers(l, key, klen, id))
		return 0;
	if (l->n == l->max + 1 &&
	    upload_cmp(key, klen, id, last->key, last->klen, last->id) > 0)
		return 0;
	if (l->n == l->max + 1) {
		free(last->key);
		l->n--;
	}
	/* insertion into the sorted page */
	for (i = l->n; i > 0 && upload_cmp(key, klen, id, l->u[i - 1].key,
					    l->u[i - 1].klen,
					    l->u[i - 1].id) < 0; i--)
		l->u[i] = l->u[i - 1];
	l->u[i].key = xmalloc(klen ? klen : 1);
	memcpy(l->u[i].key, key, klen);
	l->u[i].klen = klen;
	strcpy(l->u[i].id, id);
	l->u[i].mtime = o->mtime;
	l->n++;
	return 0;
}

static void uploads_xml(struct s3_ctx *x, const struct uploads *l, bool url)
{
	bool truncated = l->n > l->max;
	int shown = truncated ? l->max : l->n;
	struct sbuf s = { 0 };
	char date[40];

	head_xml(&s, "ListMultipartUploadsResult", x);
	sb_lit(&s, "<KeyMarker>");
	if (l->key_marker)
		sb_key(&s, l->key_marker, l->kmlen, url);
	sb_lit(&s, "</KeyMarker><UploadIdMarker>");
	if (l->id_marker)
		sb_xml(&s, l->id_marker, strlen(l->id_marker));
	sb_lit(&s, "</UploadIdMarker>");
	if (truncated && shown) {
		sb_lit(&s, "<NextKeyMarker>");
		sb_key(&s, l->u[shown - 1].key, l->u[shown - 1].klen, url);
		sb_printf(&s, "</NextKeyMarker><NextUploadIdMarker>%s"
			  "</NextUploadIdMarker>", l->u[shown - 1].id);
	}
	sb_lit(&s, "<Prefix>");
	sb_key(&s, l->prefix, l->plen, url);
	sb_lit(&s, "</Prefix>");
	if (url)
		sb_lit(&s, "<EncodingType>url</EncodingType>");
	sb_printf(&s, "<MaxUploads>%d</MaxUploads><IsTruncated>%s"
		  "</IsTruncated>", l->max, truncated ? "true" : "false");
	for (int i = 0; i < shown; i++) {
		sb_lit(&s, "<Upload><Key>");
		sb_key(&s, l->u[i].key, l->u[i].klen, url);
		sb_printf(&s, "</Key><UploadId>%s</UploadId>", l->u[i].id);
		user_xml(&s, "Initiator", x->user.name);
		user_xml(&s, "Owner", x->user.name);
		s3_iso_date(l->u[i].mtime, date, sizeof(date));
		sb_printf(&s, "<StorageClass>STANDARD</StorageClass><Initiated>"
			  "%s</Initiated></Upload>", date);
	}
	sb_lit(&s, "</ListMultipartUploadsResult>\n");
	s3_send_body(x, 200, NULL, &s, "application/xml");
	free(s.p);
}

/* the listing's parameters into @l: 0, or answered */
static int uploads_params(struct s3_ctx *x, struct uploads *l, bool *url)
{
	static const char *const known[] = { "uploads", "prefix", "key-marker",
		"upload-id-marker", "max-uploads", "encoding-type",
		"delimiter", NULL };
	const char *bad = s3_unknown_param(x, known);
	const struct s3_param *p;

	if (!bad && (p = s3_param_get(x, "delimiter")) && *p->value)
		bad = "delimiter";
	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported for "
			 "ListMultipartUploads", bad);
		return -1;
	}
	p = s3_param_get(x, "encoding-type");
	if (p && strcmp(p->value, "url")) {
		s3_error(x, 400, "InvalidArgument", "Invalid Encoding Method "
			 "specified in Request");
		return -1;
	}
	*url = p != NULL;
	p = s3_param_get(x, "prefix");
	l->prefix = p ? p->value : "";
	l->plen = strlen(l->prefix);
	p = s3_param_get(x, "key-marker");
	l->key_marker = p && *p->value ? p->value : NULL;
	l->kmlen = l->key_marker ? strlen(l->key_marker) : 0;
	p = s3_param_get(x, "upload-id-marker");
	l->id_marker = p && *p->value ? p->value : NULL;
	if (l->plen > S3_MAX_KEY || l->kmlen > S3_MAX_KEY) {
		s3_error(x, 400, "KeyTooLongError", "Your key is too long");
		return -1;
	}
	return count_param(x, "max-uploads", &l->max);
}

void s3_list_uploads(struct s3_ctx *x, struct s3_bucket *b)
{
	struct uploads l = { 0 };
	bool url = false;

	if (uploads_params(x, &l, &url))
		return;
	l.u = xzalloc(((size_t)l.max + 1) * sizeof(*l.u));
	if (s3b_uploads(b, keep_upload, &l))
		s3_internal(x, "Reading the bucket's uploads");
	else
		uploads_xml(x, &l, url);
	for (int i = 0; i < l.n; i++)
		free(l.u[i].key);
	free(l.u);
}
