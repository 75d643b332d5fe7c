// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The registry as this gateway knows it (s3_reg.h): the whole of it in
 * memory (users and buckets are few and change rarely), read again from
 * the system volume's kvtree when the registry's generation moved.  A
 * read that meets a page a concurrent change reused fails its checksum:
 * it is tried again.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include "kvtree.h"
#include "util.h"
#include "core/auth.h"
#include "core/seal.h"
#include "front/exec.h"
#include "front/s3_reg.h"
#include "ops/s3reg.h"
#include "vdi/volume.h"

#define LOAD_TRIES	3

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;
static uint64_t loaded_gen;
static struct s3_user *users;
static size_t nr_users, users_cap;
static struct s3_bucket_rec *buckets;
static size_t nr_buckets, buckets_cap;

static int system_vid(uint32_t *vid)
{
	char name[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN] = { 0 };
	struct sd_req rq = { .opcode = SD_OP_GET_VDI_INFO };
	struct sd_rsp rsp;
	int ret;

	strcpy(name, S3REG_SYSTEM_VOLUME);
	rq.flags = SD_FLAG_CMD_WRITE;
	rq.data_length = sizeof(name);
	ret = front_exec(&rq, name, &rsp);
	if (ret == SD_RES_SUCCESS)
		*vid = rsp.vdi.vdi_id;
	return ret;
}

static int no_write(void *arg, uint64_t page, const void *buf)
{
	return -1;
}

static int no_sync(void *arg)
{
	return -1;
}

/* the next NUL-ended field of @v into @out: false if none or too long */
static bool next_field(const char **v, size_t *vlen, char *out, size_t size)
{
	const char *nul = memchr(*v, 0, *vlen);
	size_t len = nul ? (size_t)(nul - *v) : *vlen;

	if (len >= size)
		return false;
	memcpy(out, *v, len);
	out[len] = 0;
	*v += nul ? len + 1 : len;
	*vlen -= nul ? len + 1 : len;
	return true;
}

/*
 * @text: a secret as the registry keeps it, sealed with the cluster key or
 * (written without one) as it is.  false, with a warning, when it does
 * not open: the user cannot sign until the right key is back.
 */
static bool take_secret(struct s3_user *u, const char *text)
{
	static struct log_limit ll;	/* every reload would say it again */
	size_t len = strlen(text);

	if (!seal_is_sealed(text, len)) {
		if (len >= sizeof(u->secret))
			return false;
		memcpy(u->secret, text, len + 1);
		return true;
	}
	if (seal_open(S3_SECRET_SEAL, u->access, text, len, u->secret,
		      sizeof(u->secret)) < 0) {
		sd_warn_limited(&ll, "the secret of S3 user %s does not "
				"open with this sheep's cluster key (%s): the "
				"user cannot sign", u->name, auth_enabled() ?
				"another key sealed it" : "it has none");
		return false;
	}
	return true;
}

static int add_user(const char *k, size_t klen, const char *v, size_t vlen)
{
	struct s3_user u = { 0 };
	char secret[SEAL_TEXT_LEN(S3REG_SECRET_LEN) + 1];
	bool ok;

	if (klen - 2 >= sizeof(u.access))
		return 0;	/* not one of ours: skipped */
	memcpy(u.access, k + 2, klen - 2);
	ok = next_field(&v, &vlen, u.name, sizeof(u.name)) &&
	     next_field(&v, &vlen, secret, sizeof(secret)) &&
	     take_secret(&u, secret);
	OPENSSL_cleanse(secret, sizeof(secret));
	if (!ok)
		return 0;
	if (nr_users == users_cap) {
		users_cap = users_cap ? 2 * users_cap : 16;
		users = xrealloc(users, users_cap * sizeof(*users));
	}
	users[nr_users++] = u;
	return 0;
}

/* b/NAME -> USER NUL GATEWAY NUL CREATED [NUL NODE NUL BOOT] */
static int add_bucket(const char *k, size_t klen, const char *v, size_t vlen)
{
	struct s3_bucket_rec b = { 0 };
	char created[24], boot[24] = "";

	if (klen - 2 >= sizeof(b.name))
		return 0;
	memcpy(b.name, k + 2, klen - 2);
	if (!next_field(&v, &vlen, b.user, sizeof(b.user)) ||
	    !next_field(&v, &vlen, b.gateway, sizeof(b.gateway)) ||
	    !next_field(&v, &vlen, created, sizeof(created)))
		return 0;
	b.created = strtoull(created, NULL, 10);
	/* the first slice's records end there */
	if (vlen && (!next_field(&v, &vlen, b.node, sizeof(b.node)) ||
		     !next_field(&v, &vlen, boot, sizeof(boot))))
		return 0;
	b.boot = strtoull(boot, NULL, 16);
	if (nr_buckets == buckets_cap) {
		buckets_cap = buckets_cap ? 2 * buckets_cap : 16;
		buckets = xrealloc(buckets, buckets_cap * sizeof(*buckets));
	}
	buckets[nr_buckets++] = b;
	return 0;
}

static int load_one(const void *key, size_t klen, const void *val,
		    size_t vlen, void *arg)
{
	const char *k = key;

	(void)arg;
	if (klen < 3 || k[1] != '/')
		return 0;
	if (k[0] == 'k')
		return add_user(k, klen, val, vlen);
	if (k[0] == 'b')
		return add_bucket(k, klen, val, vlen);
	return 0;
}

static int load(void)
{
	struct vol_pages pages = { 0 };
	struct kvt_store s = { .write = no_write, .sync = no_sync };
	struct kvtree *t;
	int ret;

	nr_users = nr_buckets = 0;
	ret = system_vid(&pages.vid);
	if (ret == SD_RES_NO_VDI)
		return 0;	/* no user yet */
	if (ret != SD_RES_SUCCESS)
		return -2;
	vol_kvt_store(&pages, &s);
	s.write = no_write;
	s.sync = no_sync;
	if (kvt_open(&s, &t))
		return -2;
	ret = kvt_scan(t, "", 0, load_one, NULL);
	kvt_close(t);
	return ret ? -2 : 0;
}

/* under reg_lock: the registry of now in memory, 0 or -2 */
static int refresh(void)
{
	uint64_t gen = s3reg_generation();

	if (loaded && gen == loaded_gen)
		return 0;
	for (int i = 0; i < LOAD_TRIES; i++) {
		if (!load()) {
			loaded = true;
			loaded_gen = gen;
			return 0;
		}
		gen = s3reg_generation();
	}
	loaded = false;
	sd_err("S3: the registry cannot be read");
	return -2;
}

/* the user whose field at @off (access or name) is @want, into @u */
static int find_user_by(size_t off, const char *want, struct s3_user *u)
{
	int ret;

	pthread_mutex_lock(&reg_lock);
	ret = refresh();
	if (!ret) {
		ret = -1;
		for (size_t i = 0; i < nr_users; i++)
			if (!strcmp((const char *)&users[i] + off, want)) {
				*u = users[i];
				ret = 0;
				break;
			}
	}
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

int s3reg_find_key(const char *access, struct s3_user *u)
{
	return find_user_by(offsetof(struct s3_user, access), access, u);
}

int s3reg_find_user(const char *name, struct s3_user *u)
{
	return find_user_by(offsetof(struct s3_user, name), name, u);
}

int s3reg_find_bucket(const char *name, struct s3_bucket_rec *b)
{
	int ret;

	pthread_mutex_lock(&reg_lock);
	ret = refresh();
	if (!ret) {
		ret = -1;
		for (size_t i = 0; i < nr_buckets; i++)
			if (!strcmp(buckets[i].name, name)) {
				*b = buckets[i];
				ret = 0;
				break;
			}
	}
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

int s3reg_buckets(bool (*keep)(const struct s3_bucket_rec *b,
			       const void *arg),
		  const void *arg, struct s3_bucket_rec **out)
{
	int ret;

	*out = NULL;
	pthread_mutex_lock(&reg_lock);
	ret = refresh();
	if (!ret) {
		/* the scan read them in key order: name order */
		*out = xzalloc((nr_buckets + 1) * sizeof(**out));
		for (size_t i = 0; i < nr_buckets; i++)
			if (keep(&buckets[i], arg))
				(*out)[ret++] = buckets[i];
	}
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

static bool of_user(const struct s3_bucket_rec *b, const void *user)
{
	return !strcmp(b->user, user);
}

int s3reg_buckets_of(const char *user, struct s3_bucket_rec **out)
{
	return s3reg_buckets(of_user, user, out);
}

int s3reg_change(struct s3reg_req *r)
{
	struct sd_req rq = { .opcode = SD_OP_S3_REGISTRY };
	int ret = system_vid(&r->vid);

	if (ret != SD_RES_SUCCESS)
		return ret;
	rq.flags = SD_FLAG_CMD_WRITE;
	rq.data_length = sizeof(*r);
	return front_exec(&rq, r, NULL);
}
