// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VDI as a store of bytes for worker threads (volume.h): each piece of
 * a read or write is one object request through the gateway, blocking.
 */
#include <pthread.h>
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

int vol_write(uint32_t vid, uint64_t off, const void *buf, uint32_t len)
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
			if (ret == SD_RES_NO_OBJ)
				ret = create_obj(vid, idx, p, n, in);
			pthread_mutex_unlock(&create_lock);
		}
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

	return vol_write(v->vid, page * KVT_PAGE, buf, KVT_PAGE) ==
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
