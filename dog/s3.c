// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog s3 user create|list|delete: the users of object storage
 * (doc/object-storage.md).  Changes go through S3_REGISTRY, one cluster
 * operation each; a list reads the registry (a kvtree in the system
 * volume) through dog's sheep.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "dog.h"
#include "kvtree.h"
#include "net.h"
#include "proto.h"
#include "s3.h"
#include "s3names.h"
#include "util.h"
#include "vdi.h"

/* the system volume: big enough for any registry, sparse */
#define SYSTEM_VOLUME_SIZE	(UINT64_C(64) << 30)

static int system_volume(bool create, uint32_t *vid)
{
	struct new_vdi nv = { .name = S3REG_SYSTEM_VOLUME,
			      .size = SYSTEM_VOLUME_SIZE };
	int ret = lookup_vdi(S3REG_SYSTEM_VOLUME, 0, "", vid);

	if (ret != SD_RES_NO_VDI || !create)
		return ret;
	ret = new_vdi(&nv, vid);
	if (ret == SD_RES_VDI_EXIST)	/* another dog made it */
		ret = lookup_vdi(S3REG_SYSTEM_VOLUME, 0, "", vid);
	return ret;
}

static int registry_op(const struct s3reg_req *r)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_S3_REGISTRY);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(*r);
	if (dog_exec(&req, (void *)r, 0, &rsp))
		return SD_RES_EIO;
	return (int)rsp.result;
}

static void random_string(char *s, size_t len, const char *set)
{
	uint8_t b[64];
	size_t n = strlen(set);

	if (getrandom(b, len, 0) != (ssize_t)len) {
		fprintf(stderr, "no random bytes: %m\n");
		exit(EXIT_FAILURE);
	}
	/* 256 % 36 and 256 % 64: a small bias for keys, none for secrets */
	for (size_t i = 0; i < len; i++)
		s[i] = set[b[i] % n];
	s[len] = 0;
}

static int user_create(int argc, char **argv)
{
	struct s3reg_req r;
	const char *name = argv[0];
	int ret;

	if (!s3_valid_user(name, strlen(name))) {
		fprintf(stderr, "Invalid user name %s: 1 to 63 letters, digits "
			"and _.@-\n", name);
		return EXIT_USAGE;
	}
	memset(&r, 0, sizeof(r));
	r.kind = S3REG_USER_ADD;
	snprintf(r.name, sizeof(r.name), "%s", name);
	random_string(r.access, 20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
	random_string(r.secret, 40, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "abcdefghijklmnopqrstuvwxyz0123456789+/");
	ret = system_volume(true, &r.vid);
	if (ret == SD_RES_SUCCESS)
		ret = registry_op(&r);
	if (ret == SD_RES_VDI_EXIST) {
		fprintf(stderr, "User %s exists\n", name);
		return EXIT_EXISTS;
	}
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to create user %s: %s\n", name,
			sd_strerror((uint32_t)ret));
		return EXIT_FAILURE;
	}
	if (raw_output)
		printf("%s %s\n", r.access, r.secret);
	else
		printf("user: %s\naccess key: %s\nsecret key: %s\n", name,
		       r.access, r.secret);
	return EXIT_SUCCESS;
}

static int user_delete(int argc, char **argv)
{
	struct s3reg_req r;
	const char *name = argv[0];
	int ret;

	memset(&r, 0, sizeof(r));
	r.kind = S3REG_USER_DEL;
	snprintf(r.name, sizeof(r.name), "%s", name);
	ret = system_volume(false, &r.vid);
	if (ret == SD_RES_SUCCESS)
		ret = registry_op(&r);
	if (ret == SD_RES_NO_VDI) {
		fprintf(stderr, "No user %s\n", name);
		return EXIT_MISSING;
	}
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to delete user %s: %s\n", name,
			sd_strerror((uint32_t)ret));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

/* ---- the registry read through dog's sheep ---- */

static int page_read(void *arg, uint64_t page, void *buf)
{
	uint32_t vid = *(uint32_t *)arg;
	uint64_t off = page * KVT_PAGE;
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_READ_OBJ);
	req.data_length = KVT_PAGE;
	req.obj.oid = vid_to_data_oid(vid, (uint32_t)(off / SD_DATA_OBJ_SIZE));
	req.obj.offset = (uint32_t)(off % SD_DATA_OBJ_SIZE);
	if (dog_exec(&req, buf, KVT_PAGE, &rsp))
		return -1;
	if (rsp.result == SD_RES_NO_OBJ) {
		memset(buf, 0, KVT_PAGE);
		return 0;
	}
	if (rsp.result != SD_RES_SUCCESS)
		return -1;
	if (rsp.data_length < KVT_PAGE)
		memset((uint8_t *)buf + rsp.data_length, 0,
		       KVT_PAGE - rsp.data_length);
	return 0;
}

static int no_write(void *arg, uint64_t page, const void *buf)
{
	return -1;
}

static int no_sync(void *arg)
{
	return -1;
}

static int print_user(const void *key, size_t klen, const void *val,
		      size_t vlen, void *arg)
{
	const char *k = key;

	if (klen < 2 || k[0] != 'u' || k[1] != '/')
		return 1;	/* past the users */
	if (raw_output)
		printf("%.*s %.*s\n", (int)(klen - 2), k + 2, (int)vlen,
		       (const char *)val);
	else
		printf("  %-32.*s %.*s\n", (int)(klen - 2), k + 2, (int)vlen,
		       (const char *)val);
	return 0;
}

int s3_open_tree(uint32_t *vid, struct kvtree **t)
{
	struct kvt_store s = { page_read, no_write, no_sync, vid };

	return kvt_open(&s, t);
}

int s3_open_registry(uint32_t *vid, struct kvtree **t)
{
	int ret = system_volume(false, vid);

	if (ret == SD_RES_NO_VDI)
		return 1;	/* no user yet */
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to read the S3 registry: %s\n",
			sd_strerror((uint32_t)ret));
		return -1;
	}
	if (s3_open_tree(vid, t)) {
		fprintf(stderr, "Failed to read the S3 registry\n");
		return -1;
	}
	return 0;
}

int s3_scan_registry(const char *prefix,
		     int (*fn)(const void *key, size_t klen, const void *val,
			       size_t vlen, void *arg))
{
	struct kvtree *t;
	uint32_t vid;
	int ret = s3_open_registry(&vid, &t);

	if (ret)
		return ret > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	ret = kvt_scan(t, prefix, strlen(prefix), fn, NULL);
	kvt_close(t);
	if (ret) {
		fprintf(stderr, "Failed to read the S3 registry\n");
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

static int user_list(int argc, char **argv)
{
	if (!raw_output)
		printf("  %-32s %s\n", "User", "Access key");
	return s3_scan_registry("u/", print_user);
}

static const struct subcommand user_cmds[] = {
	{ "create", "<name>", "r", "create a user: prints its access key and "
	  "secret (-r: both on one line)", NULL, 0, 1, user_create },
	{ "list", NULL, "r", "list the users and their access keys", NULL, 0,
	  0, user_list },
	{ "delete", "<name>", NULL, "delete a user and its key", NULL, 0, 1,
	  user_delete },
	{ NULL },
};

static const struct subcommand s3_cmds[] = {
	{ "user", NULL, "aphrT", "the users of object storage (S3)", user_cmds,
	  0, 0, NULL },
	{ "bucket", NULL, "aphrT", "the buckets of object storage (S3)",
	  s3_bucket_cmds, 0, 0, NULL },
	{ NULL },
};

static int s3_parser(int ch, const char *arg)
{
	return 0;
}

struct command s3_command = {
	.name = "s3",
	.sub = s3_cmds,
	.parser = s3_parser,
};
