// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The S3 requests of the object storage endpoint (s3.h), path-style
 * (listings in s3_list.c, answers in s3_resp.c, what S3 and Swift share
 * in s3_object.c; Swift's requests go to swift.c first):
 * ListBuckets, Create/Head/DeleteBucket, GetBucketLocation, ListObjects
 * (v1 and v2: prefix, delimiter, max-keys, marker, continuation,
 * start-after, encoding-type=url), Put/Get/Head/DeleteObject with ranges,
 * conditions, user metadata and Content-MD5.  Every request is signed
 * (SigV4: an Authorization header or a presigned URL).  A subresource,
 * header or request this file does not implement is answered
 * NotImplemented, never accepted and ignored.  Signatures are checked in
 * s3_auth.c.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <openssl/evp.h>
#include "net.h"
#include "s3names.h"
#include "s3req.h"
#include "util.h"
#include "front/budget_gate.h"
#include "front/s3.h"
#include "core/core.h"
#include "ec.h"
#include "state/cluster.h"
#include "front/s3_bucket.h"
#include "front/s3_proxy.h"
#include "front/s3_reg.h"
#include "front/s3_resp.h"
#include "front/s3_vols.h"


/*
 * Virtual-host style: a Host of BUCKET.DOMAIN[:PORT] names the bucket
 * (into x->vhost), the path then being the key.  A write relayed by
 * another gateway says which domain that one parsed it with: parsed here
 * under another, the key would be taken for a bucket.  0, or answered.
 */
static int parse_vhost(struct s3_ctx *x)
{
	const char *domain = s3_domain();
	size_t n, d = strcmp(domain, "-") ? strlen(domain) : 0;
	char host[320], relayed[260];
	char *colon;

	if (s3_header(x, "x-kelpie-s3-domain", relayed, sizeof(relayed)) &&
	    strcmp(relayed, s3_domain())) {
		s3_error(x, 503, "ServiceUnavailable", "A gateway with "
			 "--s3-domain %s relayed this request to one with %s: "
			 "start every gateway with the same --s3-domain",
			 relayed, s3_domain());
		return -1;
	}
	if (!d || !s3_header(x, "host", host, sizeof(host)))
		return 0;
	colon = strrchr(host, ':');
	if (colon && host[0] != '[')
		*colon = 0;
	for (char *p = host; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	n = strlen(host);
	if (n <= d + 1 || host[n - d - 1] != '.' || strcmp(host + n - d, domain))
		return 0;	/* path-style: the domain itself, an address */
	if (n - d - 1 >= sizeof(x->vhost)) {
		s3_error(x, 400, "InvalidBucketName", "The specified bucket is "
			 "not valid.");
		return -1;
	}
	memcpy(x->vhost, host, n - d - 1);
	x->vhost[n - d - 1] = 0;
	return 0;
}

/* the target's bucket and key, and the query: false if malformed */
static bool parse_target(struct s3_ctx *x)
{
	size_t blen = strlen(x->vhost), len = x->r->path_len;
	char *path = (char *)x->r->path;
	int n;

	if (blen) {	/* as "/BUCKET/KEY" */
		path = xmalloc(blen + 1 + len + 1);
		path[0] = '/';
		memcpy(path + 1, x->vhost, blen);
		memcpy(path + 1 + blen, x->r->path, len);
		len += blen + 1;
	}
	n = s3_parse_path(path, len, x->bucket, sizeof(x->bucket), x->key,
			  sizeof(x->key), &x->klen);
	if (blen)
		free(path);
	if (n < 0)
		return false;
	x->has_bucket = n >= 1;
	x->has_key = n == 2;
	x->nr_params = s3_parse_query(x->r->query, x->r->query_len,
				      x->params, S3_MAX_PARAMS);
	return x->nr_params >= 0;
}

/* ---- buckets ---- */

static void list_buckets(struct s3_ctx *x)
{
	struct s3_bucket_rec *bs;
	struct sbuf s = { 0 };
	int n = s3reg_buckets_of(x->user.name, &bs);
	char date[40];

	if (n < 0) {
		s3_internal(x, "Reading the registry");
		return;
	}
	sb_lit(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/"
	       "2006-03-01/\"><Owner><ID>");
	sb_xml(&s, x->user.name, strlen(x->user.name));
	sb_lit(&s, "</ID><DisplayName>");
	sb_xml(&s, x->user.name, strlen(x->user.name));
	sb_lit(&s, "</DisplayName></Owner><Buckets>");
	for (int i = 0; i < n; i++) {
		s3_iso_date(bs[i].created, date, sizeof(date));
		sb_printf(&s, "<Bucket><Name>%s</Name><CreationDate>%s"
			  "</CreationDate></Bucket>", bs[i].name, date);
	}
	sb_lit(&s, "</Buckets></ListAllMyBucketsResult>\n");
	free(bs);
	s3_send_body(x, 200, NULL, &s, "application/xml");
	free(s.p);
}

/*
 * x-kelpie-bucket-redundancy: "N" copies or "D:P" for the bucket's data
 * (dog's -c); none: the cluster's.  0, or the error has been answered.
 */
static int bucket_redundancy(struct s3_ctx *x, uint8_t *copies,
			     uint8_t *policy)
{
	char v[16];
	int zones = cluster_zones();

	*copies = *policy = 0;
	if (!http_header(x->r, "x-kelpie-bucket-redundancy"))
		return 0;
	if (!s3_header(x, "x-kelpie-bucket-redundancy", v, sizeof(v)) ||
	    ec_parse_redundancy(v, copies, policy)) {
		s3_error(x, 400, "InvalidArgument", "x-kelpie-bucket-redundancy "
			 "takes N copies (1 to 31) or D:P (D of 2, 4, 8 or 16, "
			 "P of 1 to 15)");
		return -1;
	}
	/* every strip on a zone of its own, as dog vdi create asks */
	if (*policy && *copies > zones) {
		s3_error(x, 400, "InvalidArgument", "Erasure coding %s needs %d "
			 "zones, the cluster has %d", v, *copies, zones);
		return -1;
	}
	return 0;
}

static void create_bucket(struct s3_ctx *x)
{
	bool mine = false;
	char loc[sizeof(x->bucket) + 16];
	uint8_t copies, policy;

	if (!s3_valid_bucket(x->bucket, strlen(x->bucket))) {
		s3_error(x, 400, "InvalidBucketName", "The specified bucket is "
		      "not valid: 3 to 63 of a-z, 0-9, '.' and '-'");
		return;
	}
	if (bucket_redundancy(x, &copies, &policy))
		return;
	/* CreateBucketConfiguration names a region: there is one */
	if (s3_body_drain(x->c)) {
		s3_close_after(x->c);
		return;
	}
	switch (s3b_create(x->bucket, x->user.name, copies, policy, &mine)) {
	case 0:
		snprintf(loc, sizeof(loc), "Location: /%s\r\n", x->bucket);
		s3_send_head(x, 200, loc, 0, NULL);
		return;
	case -1:
		if (mine)
			s3_error(x, 409, "BucketAlreadyOwnedByYou", "Your previous "
			      "request to create the named bucket succeeded "
			      "and you already own it.");
		else
			s3_error(x, 409, "BucketAlreadyExists", "The requested "
			      "bucket name is not available.");
		return;
	default:
		s3_internal(x, "Creating the bucket");
	}
}

static void delete_bucket(struct s3_ctx *x, struct s3_bucket *b)
{
	switch (s3b_destroy(b)) {
	case 0:
		s3_send_head(x, 204, NULL, 0, NULL);
		return;
	case -1:
		s3_error(x, 409, "BucketNotEmpty", "The bucket you tried to "
		      "delete is not empty");
		return;
	default:
		s3_internal(x, "Deleting the bucket");
	}
}
/* ---- objects ---- */

static void put_object(struct s3_ctx *x, struct s3_bucket *b)
{
	struct s3_obj *o;
	char ct[S3_MAX_CTYPE + 1], extra[192], etag[S3_ETAG_LEN];
	const char *bad = s3_unknown_param(x, NULL);

	if (bad || (bad = s3_unsupported_put_header(x, false))) {
		s3_error(x, 501, "NotImplemented", "%s is not supported for "
			 "PutObject yet", bad);
		return;
	}
	if (http_header(x->r, "x-amz-copy-source")) {
		s3_copy_object(x, b);
		return;
	}
	o = xzalloc(sizeof(*o));
	o->mtime = (uint64_t)time(NULL);
	if (s3_header(x, "content-type", ct, sizeof(ct))) {
		o->ctype_len = (uint16_t)strlen(ct);
		memcpy(o->ctype, ct, o->ctype_len);
	}
	if (s3_take_meta(x, o) || s3_receive(x, b, o, true))
		goto out;
	if (s3b_commit(b, x->key, x->klen, o)) {
		s3_internal(x, "Committing the object");
		goto out;
	}
	s3_etag(o, etag);
	s3_sum_header(x, etag, extra, sizeof(extra));
	s3_send_head(x, 200, extra, 0, NULL);
out:
	free(o);
}

static void delete_object(struct s3_ctx *x, struct s3_bucket *b)
{
	const char *bad = s3_unknown_param(x, NULL);

	if (bad) {
		s3_error(x, 501, "NotImplemented", "%s is not supported for "
		      "DeleteObject yet", bad);
		return;
	}
	if (s3b_delete(b, x->key, x->klen)) {
		s3_internal(x, "Deleting the object");
		return;
	}
	s3_send_head(x, 204, NULL, 0, NULL);
}

/* ---- routing ---- */

static bool is(const struct s3_ctx *x, const char *m)
{
	return !strcmp(x->method, m);
}

static void bucket_request(struct s3_ctx *x)
{
	static const char *const none[] = { NULL };
	struct s3_bucket *b;
	const char *bad;

	if (is(x, "PUT")) {
		bad = s3_unknown_param(x, none);
		if (bad)
			s3_error(x, 501, "NotImplemented", "The bucket "
			      "subresource %s is not supported", bad);
		else
			create_bucket(x);
		return;
	}
	if (is(x, "POST") && !s3_param_get(x, "delete")) {
		s3_error(x, 501, "NotImplemented", "POST on a bucket is not "
			 "supported but for DeleteObjects (?delete)");
		return;
	}
	if (!is(x, "GET") && !is(x, "HEAD") && !is(x, "DELETE") &&
	    !is(x, "POST")) {
		s3_error(x, 405, "MethodNotAllowed", "The specified method is "
		      "not allowed against this resource.");
		return;
	}
	if (s3_open_bucket(x, &b))
		return;
	if ((is(x, "DELETE") || is(x, "POST")) && s3_need_owner(x, &b)) {
		return;	/* relayed to the owner, or answered */
	} else if (is(x, "POST")) {
		s3_delete_objects(x, b);
	} else if (is(x, "DELETE")) {
		bad = s3_unknown_param(x, none);
		if (bad)
			s3_error(x, 501, "NotImplemented", "The bucket "
			      "subresource %s is not supported", bad);
		else
			delete_bucket(x, b);
	} else if (is(x, "HEAD")) {
		s3_send_head(x, 200, NULL, 0, NULL);
	} else if (s3_param_get(x, "uploads")) {
		s3_list_uploads(x, b);
	} else if (s3_param_get(x, "location") && x->nr_params == 1) {
		struct sbuf s = { 0 };

		sb_lit(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<LocationConstraint xmlns=\"http://s3.amazonaws.com/"
		       "doc/2006-03-01/\"/>\n");
		s3_send_body(x, 200, NULL, &s, "application/xml");
		free(s.p);
	} else {
		s3_list_objects(x, b);
	}
	s3b_put(b);
}

static void object_request(struct s3_ctx *x)
{
	struct s3_bucket *b;

	if (!is(x, "GET") && !is(x, "HEAD") && !is(x, "PUT") &&
	    !is(x, "DELETE") && !is(x, "POST")) {
		s3_error(x, 501, "NotImplemented", "%s on an object is not "
		      "supported yet", x->method);
		return;
	}
	if (s3_open_bucket(x, &b))
		return;
	if (!is(x, "GET") && !is(x, "HEAD") && s3_need_owner(x, &b))
		return;	/* relayed to the owner, or answered */
	else if (is(x, "GET") && s3_param_get(x, "uploadId"))
		s3_list_parts(x, b, s3_param_get(x, "uploadId")->value);
	else if (s3_multipart(x, b))
		;	/* answered */
	else if (is(x, "POST"))
		s3_error(x, 501, "NotImplemented", "POST on an object is not "
			 "supported but for multipart uploads");
	else if (is(x, "PUT"))
		put_object(x, b);
	else if (is(x, "DELETE"))
		delete_object(x, b);
	else
		s3_get_object(x, b);
	s3b_put(b);
}

static void route(struct s3_ctx *x)
{
	if (!x->has_bucket) {
		if (is(x, "GET"))
			list_buckets(x);
		else
			s3_error(x, 405, "MethodNotAllowed", "The specified "
			      "method is not allowed against this resource.");
		return;
	}
	if (x->has_key)
		object_request(x);
	else
		bucket_request(x);
}

/* a bucket's operation, as bucket_request() routes it */
static enum s3_op bucket_op(const struct s3_ctx *x)
{
	if (is(x, "PUT"))
		return S3_OP_CREATE_BUCKET;
	if (is(x, "DELETE"))
		return S3_OP_DELETE_BUCKET;
	if (is(x, "HEAD"))
		return S3_OP_HEAD_BUCKET;
	if (is(x, "POST"))
		return S3_OP_DELETE_OBJECTS;
	if (!is(x, "GET"))
		return S3_OP_OTHER;
	if (s3_param_get(x, "uploads"))
		return S3_OP_LIST_UPLOADS;
	if (s3_param_get(x, "location"))
		return S3_OP_GET_BUCKET_LOCATION;
	if (s3_param_get(x, "list-type"))
		return S3_OP_LIST_OBJECTS_V2;
	return S3_OP_LIST_OBJECTS;
}

/* an object's operation, as object_request() and s3_multipart() route */
static enum s3_op object_op(const struct s3_ctx *x)
{
	bool id = s3_param_get(x, "uploadId");
	bool copy = http_header(x->r, "x-amz-copy-source");

	if (is(x, "GET"))
		return id ? S3_OP_LIST_PARTS : S3_OP_GET_OBJECT;
	if (is(x, "HEAD"))
		return S3_OP_HEAD_OBJECT;
	if (is(x, "PUT") && id)
		return copy ? S3_OP_UPLOAD_PART_COPY : S3_OP_UPLOAD_PART;
	if (is(x, "PUT"))
		return copy ? S3_OP_COPY_OBJECT : S3_OP_PUT_OBJECT;
	if (is(x, "POST") && s3_param_get(x, "uploads"))
		return S3_OP_CREATE_UPLOAD;
	if (is(x, "POST"))
		return id ? S3_OP_COMPLETE_UPLOAD : S3_OP_OTHER;
	if (is(x, "DELETE"))
		return id ? S3_OP_ABORT_UPLOAD : S3_OP_DELETE_OBJECT;
	return S3_OP_OTHER;
}

static enum s3_op op_of(const struct s3_ctx *x)
{
	if (x->has_key)
		return object_op(x);
	if (x->has_bucket)
		return bucket_op(x);
	return is(x, "GET") ? S3_OP_LIST_BUCKETS : S3_OP_OTHER;
}

/* answer the request of @c (its head parsed) */
static void s3_serve(struct s3_conn *c)
{
	uint64_t start = now_nsec();
	struct s3_ctx *x;

	/* what the request holds, against --budget: it waits if spent */
	budget_gate_take(S3_REQ_BUDGET);
	x = xzalloc(sizeof(*x));

	x->c = c;
	x->r = s3_request(c);
	memcpy(x->method, x->r->method, MIN(x->r->method_len,
					    sizeof(x->method) - 1));
	x->head = is(x, "HEAD");
	if (x->r->chunked) {
		/* its end cannot be found without reading it all */
		s3_close_after(c);
	}
	x->buf = xmalloc(S3_IO_CHUNK);
	if (swift_request(x) || parse_vhost(x))
		goto out;
	if (!parse_target(x)) {
		s3_error(x, 400, "InvalidURI", "Couldn't parse the specified URI.");
		goto out;
	}
	x->op = op_of(x);
	if (x->has_key && !x->klen) {
		s3_error(x, 400, "InvalidArgument", "An object key is empty");
		goto out;
	}
	if (s3_authenticate(x))
		goto out;
	route(x);
out:
	s3_stats_done(x->op, x->status, x->relayed, now_nsec() - start);
	if (x->nr_params > 0)
		s3_params_free(x->params, x->nr_params);
	s3b_release_reservations();
	free(x->buf);
	free(x);
	budget_gate_put(S3_REQ_BUDGET);
}

static char s3_addr[256];
static int s3_port;

int s3_configure(const char *spec)
{
	return net_parse_listen(spec, s3_addr, sizeof(s3_addr), &s3_port);
}

static bool grace_given;

int s3_set_grace(const char *seconds)
{
	uint64_t v;

	if (parse_u64_range(seconds, S3_GRACE_MAX, &v) || !v)
		return -1;
	s3b_set_grace((unsigned int)v);
	grace_given = true;
	return 0;
}

bool s3_grace_given(void)
{
	return grace_given;
}

bool s3_enabled(void)
{
	return s3_port != 0;
}

/*
 * How other gateways reach this one: the listening address, or the
 * node's own when it listens on every address
 */
static void set_self(const char *addr)
{
	char a[INET6_ADDRSTRLEN], id[S3REG_NAME_LEN], node[S3REG_NAME_LEN];

	if (!addr || !*addr || !strcmp(addr, "0.0.0.0") || !strcmp(addr, "::"))
		addr = addr_to_str(sys.self.nid.addr, a, sizeof(a));
	snprintf(id, sizeof(id), "%.48s:%d", addr, s3_port);
	node_to_str(&sys.self, node, sizeof(node));
	s3b_set_self(id, node);
}

int s3_init(const char *default_addr)
{
	const char *addr = s3_addr[0] ? s3_addr : default_addr;

	if (!s3_port)
		return 0;
	if (s3v_check_env())
		return -1;
	budget_gate_init();
	set_self(addr);
	if (s3_thread_start(s3b_reclaimer)) {
		sd_err("S3: cannot start the reclaimer: %m");
		return -1;
	}
	return s3_conns_start(addr, s3_port, s3_serve);
}
