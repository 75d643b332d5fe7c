/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VDI as a store of bytes for worker threads (vdi/volume.c): reads and
 * writes at any offset through the gateway, blocking, and a kvtree page
 * store over it.  The object storage (doc/object-storage.md) keeps its
 * registry, indexes and data so; every byte is an ordinary object of the
 * VDI, replicated or coded, recovered and scrubbed like any other.
 *
 * One writer per volume: the caller makes sure (a cluster operation's
 * work part, or the bucket's owner gateway under its lock).
 */
#ifndef SHEEP_VDI_VOLUME_H
#define SHEEP_VDI_VOLUME_H

#include <stdint.h>
#include "kvtree.h"
#include "proto.h"

/*
 * Read @len bytes at @off of VDI @vid into @buf: SD_RES_SUCCESS (what was
 * never written reads as zeros) or the error
 */
int vol_read(uint32_t vid, uint64_t off, void *buf, uint32_t len);
/* the same, but bytes of an object not there: SD_RES_NO_OBJ */
int vol_read_written(uint32_t vid, uint64_t off, void *buf, uint32_t len);

/*
 * The objects of a volume its inode is known to name, as its one writer
 * has seen them: a coded volume's gateway creates an object a write
 * reaches rather than answer that it is not there, so a write cannot
 * tell whether it made one, and the inode's entry is looked at (once per
 * object for as long as this is kept).  Kept by the writer for as long
 * as it is that volume's writer: a vid reused by another volume later
 * must not find it.
 */
#define VOL_NAMED_BITS	(4096 * 8)	/* objects per page of bits */
struct vol_named {
	uint8_t *page[SD_INODE_DATA_INDEX / VOL_NAMED_BITS];
};
void vol_named_free(struct vol_named *n);

/*
 * Write them: objects never written are created and entered in the
 * inode's index.  Writes without the cache flag: durable once answered.
 * @named may be NULL: the index is looked at for each object written.
 */
int vol_write(uint32_t vid, uint64_t off, const void *buf, uint32_t len,
	      struct vol_named *named);

/* a kvtree over VDI @vid, pages at KVT_PAGE * n */
struct vol_pages {
	uint32_t vid;
	struct vol_named *named;	/* may be NULL */
};
void vol_kvt_store(struct vol_pages *p, struct kvt_store *s);

#endif
