// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VDI as a store of bytes for worker threads (volume.h): each piece of
 * a read or write is one object request through the gateway, blocking.
 */
#include <pthread.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include "inode.h"
#include "proto.h"
#include "util.h"
#include "gw/gw.h"
#include "vdi/volume.h"

#define OBJ	SD_DATA_OBJ_SIZE

/*
 * Two writers of one new object would both create it, and the second
 * creation would zero what the first wrote: objects are created one at
 * a time, each writer looking again once it holds the lock
 */
static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

static int read_bytes(uint32_t vid, uint64_t off, void *buf, uint32_t len,
		      bool holes)
{
	uint8_t *p = buf;

	while (len) {
		uint32_t idx = (uint32_t)(off / OBJ), in = (uint32_t)(off % OBJ);
		uint32_t n = MIN(len, OBJ - in);
		int ret;

		if (idx >= SD_INODE_DATA_INDEX)
			return SD_RES_INVALID_PARMS;
		ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_data_oid(vid, idx), p,
				   n, in, 0, 0);
		if (ret == SD_RES_NO_OBJ && holes)
			memset(p, 0, n);
		else if (ret != SD_RES_SUCCESS)
			return ret;
		p += n;
		off += n;
		len -= n;
	}
	return SD_RES_SUCCESS;
}

int vol_read(uint32_t vid, uint64_t off, void *buf, uint32_t len)
{
	return read_bytes(vid, off, buf, len, true);
}

int vol_read_written(uint32_t vid, uint64_t off, void *buf, uint32_t len)
{
	return read_bytes(vid, off, buf, len, false);
}

/* a new object: created with the piece, then named by the inode */
static int create_obj(uint32_t vid, uint32_t idx, const void *p, uint32_t n,
		      uint32_t in)
{
	uint8_t entry[4];
	int ret;

	ret = gw_exec_sync(SD_OP_CREATE_AND_WRITE_OBJ,
			   vid_to_data_oid(vid, idx), (void *)p, n, in, 0,
			   SD_FLAG_CMD_WRITE);
	if (ret != SD_RES_SUCCESS)
		return ret;
	put_le32(entry, vid);
	return gw_exec_sync(SD_OP_WRITE_OBJ, vid_to_vdi_oid(vid), entry,
			    sizeof(entry), inode_index_offset(idx), 0,
			    SD_FLAG_CMD_WRITE);
}

/* ---- which objects the inode names ---- */

static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;

static bool is_named(struct vol_named *nm, uint32_t idx)
{
	uint8_t *pg;
	bool ret;

	if (!nm)
		return false;
	pthread_mutex_lock(&named_lock);
	pg = nm->page[idx / VOL_NAMED_BITS];
	ret = pg && (pg[idx % VOL_NAMED_BITS / 8] >> (idx % 8) & 1);
	pthread_mutex_unlock(&named_lock);
	return ret;
}

static void set_named(struct vol_named *nm, uint32_t idx)
{
	uint8_t **pg;

	if (!nm)
		return;
	pthread_mutex_lock(&named_lock);
	pg = &nm->page[idx / VOL_NAMED_BITS];
	if (!*pg)
		*pg = xzalloc(VOL_NAMED_BITS / 8);
	(*pg)[idx % VOL_NAMED_BITS / 8] |= (uint8_t)(1u << (idx % 8));
	pthread_mutex_unlock(&named_lock);
}

void vol_named_free(struct vol_named *nm)
{
	for (size_t i = 0; i < ARRAY_SIZE(nm->page); i++) {
		free(nm->page[i]);
		nm->page[i] = NULL;
	}
}

/*
 * Object @idx of @vid, written, entered in the inode's index if it is
 * not: the entry is @vid either way, so writers that race write the same
 */
static int name_obj(uint32_t vid, uint32_t idx, struct vol_named *nm)
{
	uint8_t entry[4];
	int ret;

	if (is_named(nm, idx))
		return SD_RES_SUCCESS;
	ret = gw_exec_sync(SD_OP_READ_OBJ, vid_to_vdi_oid(vid), entry,
			   sizeof(entry), inode_index_offset(idx), 0, 0);
	if (ret == SD_RES_SUCCESS && get_le32(entry) != vid) {
		put_le32(entry, vid);
		ret = gw_exec_sync(SD_OP_WRITE_OBJ, vid_to_vdi_oid(vid), entry,
				   sizeof(entry), inode_index_offset(idx), 0,
				   SD_FLAG_CMD_WRITE);
	}
	if (ret == SD_RES_SUCCESS)
		set_named(nm, idx);
	return ret;
}

int vol_write(uint32_t vid, uint64_t off, const void *buf, uint32_t len,
	      struct vol_named *nm)
{
	const uint8_t *p = buf;

	while (len) {
		uint32_t idx = (uint32_t)(off / OBJ), in = (uint32_t)(off % OBJ);
		uint32_t n = MIN(len, OBJ - in);
		int ret;

		if (idx >= SD_INODE_DATA_INDEX)
			return SD_RES_INVALID_PARMS;
		ret = gw_exec_sync(SD_OP_WRITE_OBJ, vid_to_data_oid(vid, idx),
				   (void *)p, n, in, 0, SD_FLAG_CMD_WRITE);
		if (ret == SD_RES_NO_OBJ) {
			pthread_mutex_lock(&create_lock);
			ret = gw_exec_sync(SD_OP_WRITE_OBJ,
					   vid_to_data_oid(vid, idx), (void *)p,
					   n, in, 0, SD_FLAG_CMD_WRITE);
			if (ret == SD_RES_NO_OBJ) {
				ret = create_obj(vid, idx, p, n, in);
				if (ret == SD_RES_SUCCESS)
					set_named(nm, idx);
			}
			pthread_mutex_unlock(&create_lock);
		}
		/* a coded object the write made: the gateway did not say */
		if (ret == SD_RES_SUCCESS)
			ret = name_obj(vid, idx, nm);
		if (ret != SD_RES_SUCCESS)
			return ret;
		p += n;
		off += n;
		len -= n;
	}
	return SD_RES_SUCCESS;
}

static int page_read(void *arg, uint64_t page, void *buf)
{
	const struct vol_pages *v = arg;

	return vol_read(v->vid, page * KVT_PAGE, buf, KVT_PAGE) ==
	       SD_RES_SUCCESS ? 0 : -1;
}

static int page_write(void *arg, uint64_t page, const void *buf)
{
	const struct vol_pages *v = arg;

	return vol_write(v->vid, page * KVT_PAGE, buf, KVT_PAGE, v->named) ==
	       SD_RES_SUCCESS ? 0 : -1;
}

/* every write above is durable once answered */
static int page_sync(void *arg)
{
	(void)arg;
	return 0;
}

void vol_kvt_store(struct vol_pages *p, struct kvt_store *s)
{
	s->read = page_read;
	s->write = page_write;
	s->sync = page_sync;
	s->arg = p;
}
