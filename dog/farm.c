// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Content-addressed object files of a cluster snapshot (farm.h).  A file
 * is written to a temporary name, synced and renamed, so a crash leaves
 * either the whole object or none; reading checks the SHA-1, so a damaged
 * file is reported, never loaded into a cluster.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <isa-l/igzip_lib.h>
#include <openssl/evp.h>
#include "farm.h"
#include "proto.h"
#include "util.h"

#define FARM_MAGIC	"KFO1"
#define FARM_HDR	16
#define METHOD_STORED	0
#define METHOD_DEFLATE	1
/* no object is larger than one message (64 MiB) */
#define FARM_MAX_OBJECT	(64U << 20)

/* the 256 subdirectories written to since start (for farm_sync) */
static uint8_t dirty_sub[256 / 8];

void farm_sha1_hex(const uint8_t sha1[FARM_SHA1_LEN], char hex[41])
{
	for (int i = 0; i < FARM_SHA1_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", sha1[i]);
}

static void object_path(const char *dir, const uint8_t *sha1, char *buf,
			size_t len)
{
	char hex[41];

	farm_sha1_hex(sha1, hex);
	snprintf(buf, len, "%s/objects/%.2s/%s", dir, hex, hex + 2);
}

static int sha1_of(const void *buf, uint32_t len, uint8_t *out)
{
	unsigned int n = 0;

	if (!EVP_Digest(buf, len, out, &n, EVP_sha1(), NULL) ||
	    n != FARM_SHA1_LEN) {
		fprintf(stderr, "SHA-1 failed\n");
		return -1;
	}
	return 0;
}

/* raw deflate of @in into @out (at most @cap bytes); its length, or 0 */
static uint32_t deflate_into(const void *in, uint32_t len, uint8_t *out,
			     uint32_t cap)
{
	struct isal_zstream zs;

	isal_deflate_stateless_init(&zs);
	zs.next_in = (uint8_t *)in;
	zs.avail_in = len;
	zs.next_out = out;
	zs.avail_out = cap;
	zs.end_of_stream = 1;
	zs.flush = NO_FLUSH;
	zs.level = 0;
	zs.gzip_flag = 0;
	if (isal_deflate_stateless(&zs) != COMP_OK)
		return 0;		/* does not fit: store it as it is */
	return zs.total_out;
}

static int write_file(const char *path, const uint8_t *hdr, const void *body,
		      uint32_t len)
{
	char tmp[4300];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	if (xwrite(fd, hdr, FARM_HDR) < 0 || xwrite(fd, body, len) < 0 ||
	    fsync(fd)) {
		close(fd);
		unlink(tmp);
		goto fail;
	}
	close(fd);
	if (rename(tmp, path)) {
		unlink(tmp);
		goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
	return -1;
}

int farm_put(const char *dir, const void *buf, uint32_t len,
	     uint8_t sha1[FARM_SHA1_LEN], bool *dedup)
{
	char path[4200], sub[4200];
	uint8_t hdr[FARM_HDR] = FARM_MAGIC, *z;
	uint32_t zlen;
	int ret;

	*dedup = false;
	if (sha1_of(buf, len, sha1))
		return -1;
	object_path(dir, sha1, path, sizeof(path));
	if (!access(path, F_OK)) {
		*dedup = true;
		return 0;
	}
	snprintf(sub, sizeof(sub), "%s", path);
	*strrchr(sub, '/') = 0;
	if (mkdir_p(sub)) {
		fprintf(stderr, "cannot create %s: %s\n", sub,
			strerror(errno));
		return -1;
	}
	dirty_sub[sha1[0] / 8] |= (uint8_t)(1U << (sha1[0] % 8));
	z = xmalloc(len ? len : 1);
	zlen = len ? deflate_into(buf, len, z, len) : 0;
	hdr[4] = zlen ? METHOD_DEFLATE : METHOD_STORED;
	put_le32(hdr + 8, len);
	put_le32(hdr + 12, zlen ? zlen : len);
	ret = write_file(path, hdr, zlen ? z : buf, zlen ? zlen : len);
	free(z);
	return ret;
}

static int inflate_into(const uint8_t *in, uint32_t zlen, uint8_t *out,
			uint32_t len)
{
	struct inflate_state st;

	isal_inflate_init(&st);
	st.next_in = (uint8_t *)in;
	st.avail_in = zlen;
	st.next_out = out;
	st.avail_out = len;
	st.crc_flag = 0;
	if (isal_inflate_stateless(&st) != ISAL_DECOMP_OK ||
	    st.total_out != len)
		return -1;
	return 0;
}

/* the bytes of the file at @path: header checked, body decompressed */
static int read_body(const char *path, uint8_t **out, uint32_t *out_len)
{
	uint8_t hdr[FARM_HDR], *body = NULL, *data = NULL;
	uint32_t len, stored;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || xread(fd, hdr, FARM_HDR) != FARM_HDR ||
	    memcmp(hdr, FARM_MAGIC, 4) || hdr[4] > METHOD_DEFLATE)
		goto bad;
	len = get_le32(hdr + 8);
	stored = get_le32(hdr + 12);
	/* sizes from the file itself: never trust them past its length */
	if ((uint64_t)stored + FARM_HDR != (uint64_t)st.st_size ||
	    (hdr[4] == METHOD_STORED && stored != len) ||
	    len > FARM_MAX_OBJECT)
		goto bad;
	body = xmalloc(stored ? stored : 1);
	if (xread(fd, body, stored) != (ssize_t)stored)
		goto bad;
	if (hdr[4] == METHOD_STORED) {
		data = body;
		body = NULL;
	} else {
		data = xmalloc(len ? len : 1);
		if (inflate_into(body, stored, data, len))
			goto bad;
	}
	free(body);
	close(fd);
	*out = data;
	*out_len = len;
	return 0;
bad:
	free(body);
	free(data);
	close(fd);
	errno = EINVAL;
	return -1;
}

int farm_get(const char *dir, const uint8_t sha1[FARM_SHA1_LEN], void **buf,
	     uint32_t *len)
{
	uint8_t digest[FARM_SHA1_LEN], *data;
	char path[4200];

	object_path(dir, sha1, path, sizeof(path));
	if (read_body(path, &data, len)) {
		fprintf(stderr, "cannot read %s: %s\n", path,
			errno == EINVAL ? "damaged, or not a snapshot object" :
			strerror(errno));
		return -1;
	}
	if (sha1_of(data, *len, digest) ||
	    memcmp(digest, sha1, FARM_SHA1_LEN)) {
		fprintf(stderr, "%s is damaged: its SHA-1 differs\n", path);
		free(data);
		return -1;
	}
	*buf = data;
	return 0;
}

static int sync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -1;
	ret = fsync(fd);
	close(fd);
	return ret;
}

int farm_sync(const char *dir)
{
	char p[4200];

	for (int i = 0; i < 256; i++) {
		if (!(dirty_sub[i / 8] & (1U << (i % 8))))
			continue;
		snprintf(p, sizeof(p), "%s/objects/%02x", dir, i);
		if (sync_path(p))
			goto fail;
	}
	snprintf(p, sizeof(p), "%s/objects", dir);
	if (sync_path(p))
		goto fail;
	memset(dirty_sub, 0, sizeof(dirty_sub));
	return 0;
fail:
	fprintf(stderr, "cannot sync %s: %s\n", p, strerror(errno));
	return -1;
}
