// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * S3_REGISTRY: the users and buckets of object storage, in a kvtree in
 * the system volume (doc/object-storage.md).  The work part runs on the
 * node that received the op while the cluster is blocked, so changes to
 * the registry are made one at a time, cluster-wide, and two that race
 * (two CreateBuckets of one name) settle on one winner.  Keys:
 *
 *   u/USER    -> ACCESS
 *   k/ACCESS  -> USER NUL SECRET
 *   b/BUCKET  -> USER NUL GATEWAY NUL CREATED (decimal seconds) NUL NODE
 *                NUL BOOT (hex): the owner gateway, its sheep and its life
 *                (records of the first slice end at CREATED: boot 0)
 *
 * A bucket moves to another gateway (BUCKET_MOVE) only from an owner
 * that is gone: its sheep no member of the cluster, or the gateway's own
 * earlier life (its address and its sheep both the same).  A sheep that is no member cannot write (its peers refuse
 * its epoch), and a gateway that restarts is a new life (a new random
 * boot) that owns nothing until it moves its buckets to itself, so two
 * gateways never both write a bucket.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto.h"
#include "s3names.h"
#include "util.h"
#include "core/auth.h"
#include "core/seal.h"
#include "gw/gw.h"
#include "ops/s3reg.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "vdi/volume.h"

static uint64_t generation;

uint64_t s3reg_generation(void)
{
	return __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

static bool valid_gateway(const char *s, size_t len)
{
	if (!len || len >= S3REG_NAME_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

static bool valid_req(const struct s3reg_req *r)
{
	switch (r->kind) {
	case S3REG_USER_ADD:
		return s3_valid_field(r->name, sizeof(r->name), s3_valid_user) &&
		       s3_valid_field(r->access, sizeof(r->access),
				      s3_valid_access) &&
		       s3_valid_field(r->secret, sizeof(r->secret),
				      s3_valid_secret);
	case S3REG_USER_DEL:
		return s3_valid_field(r->name, sizeof(r->name), s3_valid_user);
	case S3REG_BUCKET_ADD:
		return s3_valid_field(r->name, sizeof(r->name),
				      s3_valid_bucket) &&
		       s3_valid_field(r->user, sizeof(r->user),
				      s3_valid_user) &&
		       s3_valid_field(r->gateway, sizeof(r->gateway),
				      valid_gateway) &&
		       s3_valid_field(r->node, sizeof(r->node),
				      valid_gateway) && r->boot;
	case S3REG_BUCKET_MOVE:
		return s3_valid_field(r->name, sizeof(r->name),
				      s3_valid_bucket) &&
		       s3_valid_field(r->gateway, sizeof(r->gateway),
				      valid_gateway) &&
		       s3_valid_field(r->node, sizeof(r->node),
				      valid_gateway) && r->boot &&
		       s3_valid_field(r->old_gateway, sizeof(r->old_gateway),
				      valid_gateway);
	case S3REG_BUCKET_DEL:
		return s3_valid_field(r->name, sizeof(r->name),
				      s3_valid_bucket);
	default:
		return false;
	}
}

/* @vid is the system volume: in use, and so named */
static int check_volume(uint32_t vid)
{
	char name[SD_MAX_VDI_LEN];
	int ret;

	if (!vid || vid >= SD_NR_VDIS || !vdi_test_inuse(vid) ||
	    vdi_test_deleted(vid))
		return SD_RES_NO_VDI;
	ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(vid), name,
			   sizeof(name), 0, 0, 0);
	if (ret != SD_RES_SUCCESS)
		return ret;
	name[sizeof(name) - 1] = 0;
	return strcmp(name, S3REG_SYSTEM_VOLUME) ? SD_RES_INVALID_PARMS :
						   SD_RES_SUCCESS;
}

/* "P/NAME" into @key: its length */
static size_t reg_key(char *key, char p, const char *name)
{
	return (size_t)snprintf(key, S3REG_NAME_LEN + 2, "%c/%s", p, name);
}

static int present(struct kvtree *t, char p, const char *name)
{
	char key[S3REG_NAME_LEN + 2];
	size_t klen = reg_key(key, p, name);

	return kvt_get(t, key, klen, NULL, 0);
}

/*
 * k/ACCESS -> NAME NUL SECRET, the secret sealed with the cluster key
 * when there is one (core/seal.h; the access key is its name)
 */
static int user_value(const struct s3reg_req *r, char *val, size_t size,
		      size_t *vlen)
{
	char sealed[SEAL_TEXT_LEN(S3REG_SECRET_LEN) + 1];
	const char *secret = r->secret;

	if (auth_enabled()) {
		if (seal_text(S3_SECRET_SEAL, r->access, r->secret,
			      strlen(r->secret), sealed, sizeof(sealed))) {
			sd_err("cannot seal the secret of user %s", r->name);
			return -1;
		}
		secret = sealed;
	}
	*vlen = (size_t)snprintf(val, size, "%s%c%s", r->name, 0, secret);
	sd_assert(*vlen < size);
	return 0;
}

static int user_add(struct kvtree *t, const struct s3reg_req *r)
{
	char key[S3REG_NAME_LEN + 2];
	char val[S3REG_NAME_LEN + SEAL_TEXT_LEN(S3REG_SECRET_LEN) + 1];
	size_t klen, vlen;
	int ret = present(t, 'u', r->name);

	if (ret >= 0)
		return SD_RES_VDI_EXIST;
	if (ret == -2 || (ret = present(t, 'k', r->access)) == -2)
		return SD_RES_EIO;
	if (ret >= 0)
		return SD_RES_VDI_EXIST;	/* 160 random bits: never */
	if (user_value(r, val, sizeof(val), &vlen))
		return SD_RES_EIO;
	klen = reg_key(key, 'u', r->name);
	if (kvt_put(t, key, klen, r->access, strlen(r->access)))
		return SD_RES_EIO;
	klen = reg_key(key, 'k', r->access);
	return kvt_put(t, key, klen, val, vlen) ? SD_RES_EIO : SD_RES_SUCCESS;
}

static int user_del(struct kvtree *t, const struct s3reg_req *r)
{
	char key[S3REG_NAME_LEN + 2], access[S3REG_ACCESS_LEN];
	size_t klen = reg_key(key, 'u', r->name);
	int n = kvt_get(t, key, klen, access, sizeof(access) - 1);

	if (n == -1)
		return SD_RES_NO_VDI;
	if (n < 0 || n >= (int)sizeof(access))
		return SD_RES_EIO;
	access[n] = 0;
	if (kvt_del(t, key, klen) == -2)
		return SD_RES_EIO;
	klen = reg_key(key, 'k', access);
	return kvt_del(t, key, klen) == -2 ? SD_RES_EIO : SD_RES_SUCCESS;
}

#define BUCKET_VAL_MAX	(4 * S3REG_NAME_LEN + 48)

/* USER NUL GATEWAY NUL CREATED NUL NODE NUL BOOT into @val: its length */
static size_t bucket_value(char *val, const char *user, const char *gateway,
			   uint64_t created, const char *node, uint64_t boot)
{
	return (size_t)snprintf(val, BUCKET_VAL_MAX + 1, "%s%c%s%c%" PRIu64
				"%c%s%c%" PRIx64, user, 0, gateway, 0, created,
				0, node, 0, boot);
}

static int bucket_add(struct kvtree *t, const struct s3reg_req *r)
{
	char key[S3REG_NAME_LEN + 2], val[BUCKET_VAL_MAX + 1];
	size_t klen, vlen;
	int ret = present(t, 'b', r->name);

	if (ret >= 0)
		return SD_RES_VDI_EXIST;
	if (ret == -2 || (ret = present(t, 'u', r->user)) == -2)
		return SD_RES_EIO;
	if (ret < 0)
		return SD_RES_NO_VDI;
	klen = reg_key(key, 'b', r->name);
	vlen = bucket_value(val, r->user, r->gateway, r->created, r->node,
			    r->boot);
	return kvt_put(t, key, klen, val, vlen) ? SD_RES_EIO : SD_RES_SUCCESS;
}

/* the next NUL-ended field of a value, at most @size with its NUL */
static bool field(const char **v, const char *end, char *out, size_t size)
{
	size_t len = strnlen(*v, (size_t)(end - *v));

	if (len >= size)
		return false;
	memcpy(out, *v, len);
	out[len] = 0;
	*v += len + (*v + len < end);
	return true;
}

/* a bucket's record as bucket_add and bucket_move write it */
struct bucket_val {
	char user[S3REG_NAME_LEN], gateway[S3REG_NAME_LEN];
	char node[S3REG_NAME_LEN], created[24], boot[24];
};

static int bucket_move(struct kvtree *t, const struct s3reg_req *r)
{
	char key[S3REG_NAME_LEN + 2], val[BUCKET_VAL_MAX + 1];
	size_t klen = reg_key(key, 'b', r->name);
	int n = kvt_get(t, key, klen, val, sizeof(val) - 1);
	struct bucket_val b = { 0 };
	const char *v = val;
	uint64_t boot;

	if (n == -1)
		return SD_RES_NO_VDI;
	if (n < 0 || n > BUCKET_VAL_MAX)
		return SD_RES_EIO;
	if (!field(&v, val + n, b.user, sizeof(b.user)) ||
	    !field(&v, val + n, b.gateway, sizeof(b.gateway)) ||
	    !field(&v, val + n, b.created, sizeof(b.created)) ||
	    !field(&v, val + n, b.node, sizeof(b.node)) ||
	    !field(&v, val + n, b.boot, sizeof(b.boot)))
		return SD_RES_EIO;
	boot = strtoull(b.boot, NULL, 16);
	if (strcmp(b.gateway, r->old_gateway) || boot != r->old_boot)
		return SD_RES_AGAIN;	/* moved meanwhile: look again */
	/*
	 * Its earlier life (the same gateway on the same sheep; records of
	 * the first slice name no sheep), or a gateway whose sheep is gone.
	 * The address alone is not the gateway: two sheep given one S3
	 * address (each its own 127.0.0.1, one address behind a balancer)
	 * would both write the bucket.
	 */
	if ((strcmp(b.gateway, r->gateway) ||
	     (*b.node && strcmp(b.node, r->node))) &&
	    (!*b.node || cluster_has_member(b.node)))
		return SD_RES_VDI_LOCKED;
	n = (int)bucket_value(val, b.user, r->gateway,
			      strtoull(b.created, NULL, 10), r->node, r->boot);
	return kvt_put(t, key, klen, val, (size_t)n) ? SD_RES_EIO :
						       SD_RES_SUCCESS;
}

static int bucket_del(struct kvtree *t, const struct s3reg_req *r)
{
	char key[S3REG_NAME_LEN + 2];
	size_t klen = reg_key(key, 'b', r->name);

	switch (kvt_del(t, key, klen)) {
	case 0:
		return SD_RES_SUCCESS;
	case -1:
		return SD_RES_NO_VDI;
	default:
		return SD_RES_EIO;
	}
}

static int apply(struct kvtree *t, const struct s3reg_req *r)
{
	switch (r->kind) {
	case S3REG_USER_ADD:
		return user_add(t, r);
	case S3REG_USER_DEL:
		return user_del(t, r);
	case S3REG_BUCKET_ADD:
		return bucket_add(t, r);
	case S3REG_BUCKET_MOVE:
		return bucket_move(t, r);
	default:
		return bucket_del(t, r);
	}
}

int s3reg_work(struct request *req)
{
	struct s3reg_req r;
	struct vol_pages pages = { 0 };
	struct kvt_store store;
	struct kvtree *t;
	int ret;

	if (req->rq.data_length != sizeof(r))
		return SD_RES_INVALID_PARMS;
	memcpy(&r, req->data, sizeof(r));
	if (!valid_req(&r))
		return SD_RES_INVALID_PARMS;
	ret = check_volume(r.vid);
	if (ret != SD_RES_SUCCESS)
		return ret;
	pages.vid = r.vid;
	vol_kvt_store(&pages, &store);
	if (kvt_open(&store, &t)) {
		sd_err("S3 registry (VDI %" PRIx32 ") cannot be read", r.vid);
		return SD_RES_EIO;
	}
	ret = apply(t, &r);
	if (ret == SD_RES_SUCCESS && kvt_commit(t))
		ret = SD_RES_EIO;
	kvt_close(t);
	/* never the secret */
	sd_info("S3 registry: %s %s: %s",
		r.kind == S3REG_USER_ADD ? "add user" :
		r.kind == S3REG_USER_DEL ? "delete user" :
		r.kind == S3REG_BUCKET_ADD ? "add bucket" :
		r.kind == S3REG_BUCKET_MOVE ? "move bucket" : "delete bucket",
		r.name, sd_strerror((uint32_t)ret));
	if (r.kind == S3REG_BUCKET_MOVE && ret == SD_RES_SUCCESS)
		sd_notice("S3: bucket %s moved from gateway %s to %s (sheep "
			  "%s)", r.name, r.old_gateway, r.gateway, r.node);
	return ret;
}

int s3reg_main(const struct sd_req *req, struct sd_rsp *rsp, void *data,
	       const struct cluster_ctx *ctx)
{
	(void)req;
	(void)rsp;
	(void)data;
	(void)ctx;
	__atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
	return SD_RES_SUCCESS;
}
