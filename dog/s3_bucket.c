// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog s3 bucket list|stat: the buckets of object storage, from the
 * registry and each bucket's index (doc/object-storage.md), read through
 * dog's sheep.  Nothing here writes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal_proto.h"
#include "proto.h"
#include "s3.h"
#include "s3names.h"
#include "util.h"

/* a tree another gateway commits to may reuse a page under a reader */
#define READ_TRIES	3

/* b/NAME -> USER NUL GATEWAY NUL CREATED [NUL NODE NUL BOOT] */
struct bucket_rec {
	char name[S3REG_NAME_LEN];
	char user[S3REG_NAME_LEN];
	char gateway[S3REG_NAME_LEN];
	char node[S3REG_NAME_LEN];
	uint64_t created;
};

/* the field at *@v (up to a NUL or the end) into @out: false if too long */
static bool next_field(const char **v, size_t *vlen, char *out, size_t size)
{
	size_t n = strnlen(*v, *vlen);

	if (n >= size)
		return false;
	memcpy(out, *v, n);
	out[n] = '\0';
	n = MIN(n + 1, *vlen);
	*v += n;
	*vlen -= n;
	return true;
}

static bool rec_decode(const char *k, size_t klen, const char *v,
		       size_t vlen, struct bucket_rec *b)
{
	char created[24];

	memset(b, 0, sizeof(*b));
	if (klen < 3 || klen - 2 >= sizeof(b->name))
		return false;
	memcpy(b->name, k + 2, klen - 2);
	if (!next_field(&v, &vlen, b->user, sizeof(b->user)) ||
	    !next_field(&v, &vlen, b->gateway, sizeof(b->gateway)) ||
	    !next_field(&v, &vlen, created, sizeof(created)))
		return false;
	b->created = strtoull(created, NULL, 10);
	/* the first slice's records end there */
	return !vlen || next_field(&v, &vlen, b->node, sizeof(b->node));
}

static int print_bucket(const void *key, size_t klen, const void *val,
			size_t vlen, void *arg)
{
	const char *k = key;
	struct bucket_rec b;
	char when[32];

	(void)arg;
	if (klen < 2 || k[0] != 'b' || k[1] != '/')
		return 1;	/* past the buckets */
	if (!rec_decode(k, klen, val, vlen, &b))
		return 0;
	fmt_time(b.created, "%Y-%m-%d %H:%M:%S", when, sizeof(when));
	if (raw_output)
		printf("%s %s %s %s\n", b.name, b.user, when, b.gateway);
	else
		printf("  %-24s %-16s %-20s %s\n", b.name, b.user, when,
		       b.gateway);
	return 0;
}

static int bucket_list(int argc, char **argv)
{
	if (!raw_output)
		printf("  %-24s %-16s %-20s %s\n", "Bucket", "User", "Created",
		       "Gateway");
	return s3_scan_registry("b/", print_bucket);
}

/* ---- stat ---- */

struct bucket_stat {
	bool counted;			/* objects and bytes kept ("m/usage") */
	uint64_t objects, bytes;
	uint64_t uploads;		/* in progress */
	uint64_t given;			/* room given out so far ("m/next") */
	uint64_t due;			/* chunks queued to be dropped */
	uint64_t volumes, volume_size;
	uint8_t copies, policy;
};

static int count_key(const void *key, size_t klen, const void *val,
		     size_t vlen, void *arg)
{
	const char *k = key, *prefix = ((void **)arg)[0];

	(void)val;
	(void)vlen;
	if (klen < 2 || memcmp(k, prefix, 2))
		return 1;
	(*(uint64_t *)((void **)arg)[1])++;
	return 0;
}

static int count_prefix(struct kvtree *t, const char *prefix, uint64_t *n)
{
	void *arg[2] = { (void *)prefix, n };

	*n = 0;
	return kvt_scan(t, prefix, 2, count_key, arg);
}

/* the bucket's index read once: 0, or -1 (it may be read again) */
static int read_index(struct kvtree *t, struct bucket_stat *st)
{
	uint8_t v[16];
	int n = kvt_get(t, "m/usage", 7, v, sizeof(v));

	st->counted = n == (int)sizeof(v);
	if (n != -1 && !st->counted)
		return -1;
	if (st->counted) {
		st->objects = get_le64(v);
		st->bytes = get_le64(v + 8);
	}
	n = kvt_get(t, "m/next", 6, v, 8);
	if (n != -1 && n != 8)
		return -1;
	st->given = n == 8 ? get_le64(v) : 0;
	if (count_prefix(t, "u/", &st->uploads) ||
	    count_prefix(t, "g/", &st->due))
		return -1;
	return 0;
}

static void volume_name(char *out, const char *bucket, const char *what)
{
	snprintf(out, SD_MAX_VDI_LEN, S3REG_SYSTEM_VOLUME "/b/%s/%s", bucket,
		 what);
}

/* data.0 .. data.<k>, made in order and removed last first */
static int read_volumes(const char *bucket, struct bucket_stat *st)
{
	struct sd_inode_header h;
	char name[SD_MAX_VDI_LEN], what[32];
	uint32_t vid;
	int ret;

	for (st->volumes = 0;; st->volumes++) {
		snprintf(what, sizeof(what), "data.%" PRIu64, st->volumes);
		volume_name(name, bucket, what);
		ret = lookup_vdi(name, 0, "", &vid);
		if (ret == SD_RES_NO_VDI)
			return SD_RES_SUCCESS;
		if (ret == SD_RES_SUCCESS && !st->volumes) {
			ret = read_inode_header(vid, &h);
			st->volume_size = h.vdi_size;
			st->copies = h.nr_copies;
			st->policy = h.copy_policy;
		}
		if (ret != SD_RES_SUCCESS)
			return ret;
	}
}

static int read_stat(const char *bucket, struct bucket_stat *st)
{
	char name[SD_MAX_VDI_LEN];
	struct kvtree *t;
	uint32_t vid;
	int ret;

	volume_name(name, bucket, "index");
	ret = lookup_vdi(name, 0, "", &vid);
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to find the index of bucket %s: %s\n",
			bucket, sd_strerror((uint32_t)ret));
		return -1;
	}
	ret = -1;
	for (int i = 0; i < READ_TRIES && ret; i++) {
		if (s3_open_tree(&vid, &t))
			continue;
		ret = read_index(t, st);
		kvt_close(t);
	}
	if (ret) {
		fprintf(stderr, "Failed to read the index of bucket %s\n",
			bucket);
		return -1;
	}
	ret = read_volumes(bucket, st);
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to read the data volumes of bucket "
			"%s: %s\n", bucket, sd_strerror((uint32_t)ret));
		return -1;
	}
	return 0;
}

static void print_stat(const struct bucket_rec *b,
		       const struct bucket_stat *st)
{
	char when[32], objects[24] = "-", bytes[24] = "-", red[16];
	char given[24], due[24], vsize[24];

	fmt_time(b->created, "%Y-%m-%d %H:%M:%S", when, sizeof(when));
	if (st->counted) {
		snprintf(objects, sizeof(objects), "%" PRIu64, st->objects);
		fmt_size(st->bytes, bytes, sizeof(bytes));
	}
	copies_to_str(st->copies, st->policy, red, sizeof(red));
	fmt_size(st->given, given, sizeof(given));
	fmt_size(st->due * SD_DATA_OBJ_SIZE, due, sizeof(due));
	fmt_size(st->volume_size, vsize, sizeof(vsize));
	if (raw_output) {
		printf("%s %s %s %s %s %s %" PRIu64 " %s %" PRIu64 " %s %s "
		       "%s\n", b->name, b->user, when, b->gateway, objects,
		       bytes, st->uploads, red, st->volumes, vsize, given,
		       due);
		return;
	}
	printf("Bucket:        %s\n", b->name);
	printf("User:          %s\n", b->user);
	printf("Created:       %s\n", when);
	printf("Gateway:       %s%s%s%s\n", b->gateway,
	       b->node[0] ? " (sheep " : "", b->node, b->node[0] ? ")" : "");
	if (st->counted) {
		printf("Objects:       %s\n", objects);
		printf("Bytes:         %s\n", bytes);
	} else {
		printf("Objects:       - (written before counts were kept)\n");
	}
	printf("Uploads:       %" PRIu64 " in progress\n", st->uploads);
	printf("Redundancy:    %s\n", red);
	printf("Data volumes:  %" PRIu64 " of %s\n", st->volumes, vsize);
	printf("Given out:     %s\n", given);
	printf("To reclaim:    %s (after the grace period)\n", due);
}

static int bucket_stat(int argc, char **argv)
{
	const char *bucket = argv[0];
	struct bucket_stat st = { 0 };
	struct bucket_rec b;
	char key[2 + S3REG_NAME_LEN], val[4 * S3REG_NAME_LEN + 64];
	struct kvtree *t;
	size_t klen;
	uint32_t vid;
	int ret, n;

	if (!s3_valid_bucket(bucket, strlen(bucket))) {
		fprintf(stderr, "Invalid bucket name %s\n", bucket);
		return EXIT_USAGE;
	}
	ret = s3_open_registry(&vid, &t);
	if (ret < 0)
		return EXIT_FAILURE;
	klen = (size_t)snprintf(key, sizeof(key), "b/%s", bucket);
	n = ret ? -1 : kvt_get(t, key, klen, val, sizeof(val));
	if (!ret)
		kvt_close(t);
	if (n == -1) {
		fprintf(stderr, "No such bucket: %s\n", bucket);
		return EXIT_MISSING;
	}
	/* n is the value's whole length: only sizeof(val) were copied */
	if (n < 0 || n > (int)sizeof(val) ||
	    !rec_decode(key, klen, val, (size_t)n, &b)) {
		fprintf(stderr, "Failed to read the S3 registry\n");
		return EXIT_FAILURE;
	}
	if (read_stat(bucket, &st))
		return EXIT_FAILURE;
	print_stat(&b, &st);
	return EXIT_SUCCESS;
}

const struct subcommand s3_bucket_cmds[] = {
	{ "list", NULL, "r", "list the buckets: user, creation, gateway",
	  NULL, 0, 0, bucket_list },
	{ "stat", "<bucket>", "r", "a bucket's objects, bytes, uploads, "
	  "redundancy, data volumes and room to reclaim", NULL, 0, 1,
	  bucket_stat },
	{ NULL },
};
