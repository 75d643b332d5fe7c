/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Inode index arithmetic (objects.md §1.4, §3) */
#ifndef KELPIE_INODE_H
#define KELPIE_INODE_H

#include <stdint.h>
#include "sheepdog_proto.h"

static inline uint32_t inode_index_offset(uint32_t idx)
{
	return SD_INODE_INDEX_OFFSET + 4 * idx;
}

static inline uint32_t inode_gref_offset(uint32_t idx)
{
	return SD_INODE_GREF_OFFSET + 8 * idx;
}

/* largest VDI a flat index can address with objects of 1 << shift bytes */
static inline uint64_t inode_max_size(uint8_t shift)
{
	return ((uint64_t)1 << shift) * SD_INODE_DATA_INDEX;
}

/* number of data objects of a VDI: ceil(size / object size) */
static inline uint64_t inode_nr_objs(uint64_t vdi_size, uint8_t shift)
{
	return (vdi_size + ((uint64_t)1 << shift) - 1) >> shift;
}

/* does a write of [off, off+len) to an inode touch only its index? */
static inline int inode_range_in_index(uint32_t off, uint32_t len)
{
	return off >= SD_INODE_INDEX_OFFSET && len &&
	       (uint64_t)off + len <= SD_INODE_GREF_OFFSET;
}

#endif
