// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * DeleteObjects (s3_resp.h): POST ?delete with up to 1000 keys in its
 * XML body (with Content-MD5 or an x-amz-checksum-* header, checked;
 * parsed by lib/s3req.c), all removed from the index in one
 * commit by the bucket's owner.  A key that was not there is reported
 * deleted, as S3 does.
 */
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "front/s3_resp.h"

#define MAX_DELETE	1000
#define MAX_BODY	(S3_IO_CHUNK - 1)

static void delete_reply(struct s3_ctx *x, const struct s3_del_key *keys,
			 int n, bool quiet, bool failed)
{
	struct sbuf s = { 0 };

	sb_lit(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult "
	       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (int i = 0; i < n; i++) {
		if (quiet && !failed)
			continue;
		sb_printf(&s, "<%s><Key>", failed ? "Error" : "Deleted");
		sb_xml(&s, keys[i].key, keys[i].klen);
		if (failed)
			sb_lit(&s, "</Key><Code>InternalError</Code><Message>"
			       "The index could not be written</Message>"
			       "</Error>");
		else
			sb_lit(&s, "</Key></Deleted>");
	}
	sb_lit(&s, "</DeleteResult>\n");
	s3_send_body(x, 200, NULL, &s, "application/xml");
	free(s.p);
}

void s3_delete_objects(struct s3_ctx *x, struct s3_bucket *b)
{
	static const char *const known[] = { "delete", NULL };
	struct s3_del_key *keys = NULL;
	const char *bad = s3_unknown_param(x, known);
	bool quiet = false;
	ssize_t len;
	int n;

	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported for "
			 "DeleteObjects", bad);
		return;
	}
	/* S3 asks for a digest of the body: Content-MD5 or a checksum */
	if (!http_header(x->r, "content-md5") &&
	    s3_sum_sent(x) == S3_SUM_NONE) {
		s3_error(x, 400, "InvalidRequest", "Missing required header for "
			 "this request: Content-MD5 or x-amz-checksum-*");
		return;
	}
	len = s3_receive_small(x, MAX_BODY);
	if (len < 0)
		return;
	keys = xmalloc(MAX_DELETE * sizeof(*keys));
	n = s3_parse_delete(x->buf, (size_t)len, keys, MAX_DELETE, &quiet);
	if (n == -2)
		s3_error(x, 501, "NotImplemented", "Versions are not supported: "
			 "a key names its current object");
	else if (n < 0)
		s3_error(x, 400, "MalformedXML", "The XML you provided was not "
			 "well-formed or did not validate against our published "
			 "schema (at most 1000 keys of 1 to 1024 bytes)");
	else
		delete_reply(x, keys, n, quiet, s3b_delete_many(b, keys, n));
	free(keys);
}
