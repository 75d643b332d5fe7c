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

/*
 * Read @len bytes at @off of VDI @vid into @buf: SD_RES_SUCCESS (what was
 * never written reads as zeros) or the error
 */
int vol_read(uint32_t vid, uint64_t off, void *buf, uint32_t len);
/* the same, but bytes of an object not there: SD_RES_NO_OBJ */
int vol_read_written(uint32_t vid, uint64_t off, void *buf, uint32_t len);
/*
 * Write them: objects never written are created and entered in the
 * inode's index.  Writes without the cache flag: durable once answered.
 */
int vol_write(uint32_t vid, uint64_t off, const void *buf, uint32_t len);

/* a kvtree over VDI @vid, pages at KVT_PAGE * n */
struct vol_pages {
	uint32_t vid;
};
void vol_kvt_store(struct vol_pages *p, struct kvt_store *s);

#endif
