// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A bucket's volumes in the cluster (s3_vols.h): named VDIs under
 * .kelpie/s3/b/BUCKET/, and the data volumes as one space of addresses.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal_proto.h"
#include "inode.h"
#include "util.h"
#include "front/exec.h"
#include "front/s3_vols.h"
#include "vdi/volume.h"

/* entries of the inode index read or cleared at once */
#define INDEX_CHUNK	65536
#define OBJ		SD_DATA_OBJ_SIZE
#define HEADER_LEN	offsetof(struct sd_inode_header, unused)

/* ---- one volume ---- */

static void volume_name(char *out, const char *bucket, const char *what)
{
	snprintf(out, SD_MAX_VDI_LEN, S3REG_SYSTEM_VOLUME "/b/%s/%s", bucket,
		 what);
}

static void data_name(char *out, size_t len, uint64_t n)
{
	snprintf(out, len, "data.%" PRIu64, n);
}

int s3v_lookup(const char *bucket, const char *what, uint32_t *vid)
{
	char name[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN] = { 0 };
	struct sd_req rq = { .opcode = SD_OP_GET_VDI_INFO };
	struct sd_rsp rsp;
	int ret;

	volume_name(name, bucket, what);
	rq.flags = SD_FLAG_CMD_WRITE;
	rq.data_length = sizeof(name);
	ret = front_exec(&rq, name, &rsp);
	if (ret == SD_RES_SUCCESS)
		*vid = rsp.vdi.vdi_id;
	return ret;
}

static int read_header(uint32_t vid, struct sd_inode_header *h)
{
	struct sd_req rq = { .opcode = SD_OP_READ_OBJ };

	rq.data_length = HEADER_LEN;
	rq.obj.oid = vid_to_vdi_oid(vid);
	return front_exec(&rq, h, NULL);
}

/*
 * Every entry of @vid's index zeroed, as a client does before DEL_VDI:
 * the gateway drops the objects they named
 */
static int volume_clear(uint32_t vid)
{
	struct sd_inode_header *h = xzalloc(sizeof(*h));
	uint8_t *buf = xmalloc(INDEX_CHUNK * 4), *zero = xzalloc(INDEX_CHUNK * 4);
	uint32_t nr = 0;
	int ret = read_header(vid, h);

	if (ret == SD_RES_SUCCESS)
		nr = (uint32_t)MIN(DIV_ROUND_UP(h->vdi_size, OBJ),
				   (uint64_t)SD_INODE_DATA_INDEX);
	for (uint32_t first = 0; first < nr && !ret; first += INDEX_CHUNK) {
		uint32_t n = MIN(nr - first, (uint32_t)INDEX_CHUNK), lo, hi;
		struct sd_req rq = { .opcode = SD_OP_READ_OBJ };

		rq.data_length = n * 4;
		rq.obj.oid = vid_to_vdi_oid(vid);
		rq.obj.offset = SD_INODE_INDEX_OFFSET + first * 4;
		ret = front_exec(&rq, buf, NULL);
		/* the range from the first entry in use to the last */
		for (lo = 0; !ret && lo < n && !get_le32(buf + 4 * lo); lo++)
			;
		if (ret || lo == n)
			continue;
		for (hi = n - 1; !get_le32(buf + 4 * hi); hi--)
			;
		rq.opcode = SD_OP_WRITE_OBJ;
		rq.flags = SD_FLAG_CMD_WRITE;
		rq.data_length = (hi - lo + 1) * 4;
		rq.obj.offset = SD_INODE_INDEX_OFFSET + (first + lo) * 4;
		ret = front_exec_client(&rq, zero, NULL);
	}
	free(h);
	free(buf);
	free(zero);
	return ret;
}

int s3v_delete(const char *bucket, const char *what)
{
	char name[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN] = { 0 };
	struct sd_req rq = { .opcode = SD_OP_DEL_VDI };
	uint32_t vid;
	int ret = s3v_lookup(bucket, what, &vid);

	if (ret == SD_RES_NO_VDI)
		return SD_RES_SUCCESS;
	if (ret == SD_RES_SUCCESS)
		ret = volume_clear(vid);
	if (ret != SD_RES_SUCCESS)
		return ret;
	volume_name(name, bucket, what);
	rq.flags = SD_FLAG_CMD_WRITE;
	rq.data_length = sizeof(name);
	return front_exec(&rq, name, NULL);
}

static int new_volume(const char *bucket, const char *what, uint64_t size,
		      uint8_t copies, uint8_t policy)
{
	char name[SD_MAX_VDI_LEN] = { 0 };
	struct sd_req rq = { .opcode = SD_OP_NEW_VDI };

	volume_name(name, bucket, what);
	rq.flags = SD_FLAG_CMD_WRITE;
	rq.data_length = sizeof(name);
	rq.vdi.vdi_size = size;
	rq.vdi.copies = copies;
	rq.vdi.copy_policy = policy;
	return front_exec(&rq, name, NULL);
}

int s3v_create(const char *bucket, const char *what, uint64_t size,
	       uint8_t copies, uint8_t policy)
{
	int ret = new_volume(bucket, what, size, copies, policy);

	if (ret != SD_RES_VDI_EXIST)
		return ret;
	ret = s3v_delete(bucket, what);
	if (ret != SD_RES_SUCCESS)
		return ret;
	return new_volume(bucket, what, size, copies, policy);
}

/* ---- the data volumes of a bucket ---- */

/* the knob's size, or S3V_SIZE; 0 for a bad value */
static uint64_t size_for_new(void)
{
	const char *s = getenv(S3V_SIZE_ENV);
	uint64_t v;

	if (!s || !*s)
		return S3V_SIZE;
	if (parse_size(s, &v) || !v || v % OBJ || v > S3V_SIZE)
		return 0;
	return v;
}

int s3v_check_env(void)
{
	if (size_for_new())
		return 0;
	sd_err("S3: %s=%s: a data volume's size is a multiple of 4 MiB, "
	       "at most 4 TiB", S3V_SIZE_ENV, getenv(S3V_SIZE_ENV));
	return -1;
}

/* how many data volumes of @bucket there are (0 .. k: k + 1), or -1 */
static int64_t count_volumes(const char *bucket)
{
	char what[32];
	uint32_t vid;

	for (uint64_t n = 0;; n++) {
		int ret;

		data_name(what, sizeof(what), n);
		ret = s3v_lookup(bucket, what, &vid);
		if (ret == SD_RES_NO_VDI)
			return (int64_t)n;
		if (ret != SD_RES_SUCCESS) {
			sd_err("S3: bucket %s: looking for %s: %s", bucket,
			       what, sd_strerror((uint32_t)ret));
			return -1;
		}
	}
}

int s3v_remove(const char *bucket)
{
	int64_t nr = count_volumes(bucket);
	char what[32];

	if (nr < 0)
		return SD_RES_EIO;
	while (nr--) {
		int ret;

		data_name(what, sizeof(what), (uint64_t)nr);
		ret = s3v_delete(bucket, what);
		if (ret != SD_RES_SUCCESS)
			return ret;
	}
	return SD_RES_SUCCESS;
}

int s3v_make(const char *bucket, uint8_t copies, uint8_t policy)
{
	uint64_t size = size_for_new();
	int ret;

	sd_assert(size);	/* s3v_check_env() at start */
	ret = s3v_remove(bucket);
	if (ret == SD_RES_SUCCESS)
		ret = new_volume(bucket, "data.0", size, copies, policy);
	return ret;
}

int s3v_open(struct s3_vols *v, const char *bucket)
{
	struct sd_inode_header *h;
	uint32_t vid;
	int ret = s3v_lookup(bucket, "data.0", &vid);

	if (ret != SD_RES_SUCCESS)
		return ret;
	h = xzalloc(sizeof(*h));
	ret = read_header(vid, h);
	if (ret == SD_RES_SUCCESS &&
	    (!h->vdi_size || h->vdi_size % OBJ || h->vdi_size > S3V_SIZE)) {
		sd_err("S3: bucket %s: its data.0 is of %" PRIu64 " bytes",
		       bucket, h->vdi_size);
		ret = SD_RES_EIO;
	}
	if (ret == SD_RES_SUCCESS) {
		memset(v, 0, sizeof(*v));
		pthread_mutex_init(&v->lock, NULL);
		snprintf(v->bucket, sizeof(v->bucket), "%s", bucket);
		v->size = h->vdi_size;
		v->copies = h->nr_copies;
		v->policy = h->copy_policy;
		v->cap = 4;
		v->vid = xmalloc(v->cap * sizeof(*v->vid));
		v->named = xmalloc(v->cap * sizeof(*v->named));
		v->named[v->nr] = xzalloc(sizeof(**v->named));
		v->vid[v->nr++] = vid;
	}
	free(h);
	return ret;
}

void s3v_close(struct s3_vols *v)
{
	pthread_mutex_destroy(&v->lock);
	for (uint32_t i = 0; i < v->nr; i++) {
		vol_named_free(v->named[i]);
		free(v->named[i]);
	}
	free(v->named);
	free(v->vid);
	v->vid = NULL;
}

/*
 * Under v->lock: data.<n> known, looked up (and made, if @make) with
 * every one before it.  SD_RES_NO_OBJ for one not there.
 */
static int know_volume(struct s3_vols *v, uint64_t n, bool make)
{
	char what[32];

	while (v->nr <= n) {
		uint32_t vid;
		int ret;

		data_name(what, sizeof(what), v->nr);
		ret = s3v_lookup(v->bucket, what, &vid);
		if (ret == SD_RES_NO_VDI && make) {
			ret = new_volume(v->bucket, what, v->size, v->copies,
					 v->policy);
			if (ret == SD_RES_SUCCESS || ret == SD_RES_VDI_EXIST)
				ret = s3v_lookup(v->bucket, what, &vid);
			if (ret == SD_RES_SUCCESS)
				sd_info("S3: bucket %s: %s made", v->bucket,
					what);
		}
		if (ret == SD_RES_NO_VDI)
			return SD_RES_NO_OBJ;
		if (ret != SD_RES_SUCCESS) {
			sd_err("S3: bucket %s: %s: %s", v->bucket, what,
			       sd_strerror((uint32_t)ret));
			return ret;
		}
		if (v->nr == v->cap) {
			v->cap *= 2;
			v->vid = xrealloc(v->vid, v->cap * sizeof(*v->vid));
			v->named = xrealloc(v->named,
					    v->cap * sizeof(*v->named));
		}
		/* data.0 .. data.<nr - 1>, each a VDI of its own */
		sd_assert(v->nr < v->cap && vid && vid != v->vid[v->nr - 1]);
		v->named[v->nr] = xzalloc(sizeof(**v->named));
		v->vid[v->nr++] = vid;
	}
	return SD_RES_SUCCESS;
}

/* the VDI of the volume holding address @off, and what its inode
 * names: SD_RES_* */
static int volume_of(struct s3_vols *v, uint64_t off, bool make,
		     uint32_t *vid, struct vol_named **named)
{
	uint64_t n = off / v->size;
	int ret;

	if (off >= S3V_END)
		return SD_RES_INVALID_PARMS;
	/* s3v_open() took data.0's size only if it was one of these */
	sd_assert(v->size && v->size % OBJ == 0 && v->size <= S3V_SIZE);
	pthread_mutex_lock(&v->lock);
	ret = know_volume(v, n, make);
	if (ret == SD_RES_SUCCESS) {
		sd_assert(n < v->nr);
		*vid = v->vid[n];
		*named = v->named[n];
	}
	pthread_mutex_unlock(&v->lock);
	return ret;
}

/* one piece of I/O: @len bytes at @off within one volume */
typedef int (*piece_fn)(uint32_t vid, uint64_t off, void *buf, uint32_t len,
			struct vol_named *named);

static int read_piece(uint32_t vid, uint64_t off, void *buf, uint32_t len,
		      struct vol_named *named)
{
	(void)named;
	return vol_read_written(vid, off, buf, len);
}

static int write_piece(uint32_t vid, uint64_t off, void *buf, uint32_t len,
		       struct vol_named *named)
{
	return vol_write(vid, off, buf, len, named);
}

/* @fn over the pieces of [@off, @off + @len), a volume at a time */
static int each_piece(struct s3_vols *v, uint64_t off, uint8_t *buf,
		      uint32_t len, bool make, piece_fn fn)
{
	while (len) {
		uint64_t in = off % v->size;
		uint32_t n = (uint32_t)MIN((uint64_t)len, v->size - in), vid;
		struct vol_named *named;
		int ret = volume_of(v, off, make, &vid, &named);

		if (ret == SD_RES_SUCCESS)
			ret = fn(vid, in, buf, n, named);
		if (ret != SD_RES_SUCCESS)
			return ret;
		off += n;
		buf += n;
		len -= n;
	}
	return SD_RES_SUCCESS;
}

int s3v_read(struct s3_vols *v, uint64_t off, void *buf, uint32_t len)
{
	return each_piece(v, off, buf, len, false, read_piece);
}

int s3v_write(struct s3_vols *v, uint64_t off, const void *buf,
	      uint32_t len)
{
	/* write_piece only reads from buf */
	return each_piece(v, off, (uint8_t *)buf, len, true, write_piece);
}

int s3v_drop(struct s3_vols *v, uint64_t chunk)
{
	struct sd_req rq = { .opcode = SD_OP_WRITE_OBJ };
	uint64_t per = v->size / OBJ;
	uint8_t zero[4] = { 0 };
	struct vol_named *named;
	uint32_t vid;
	int ret;

	if (chunk >= S3V_END / OBJ)
		return SD_RES_INVALID_PARMS;
	ret = volume_of(v, chunk * OBJ, false, &vid, &named);
	if (ret == SD_RES_NO_OBJ)
		return SD_RES_SUCCESS;	/* never made: nothing to drop */
	if (ret != SD_RES_SUCCESS)
		return ret;
	rq.flags = SD_FLAG_CMD_WRITE;
	rq.data_length = sizeof(zero);
	rq.obj.oid = vid_to_vdi_oid(vid);
	rq.obj.offset = SD_INODE_INDEX_OFFSET + (uint32_t)(chunk % per) * 4;
	return front_exec_client(&rq, zero, NULL);
}
