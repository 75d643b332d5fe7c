/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The object directory of a cluster snapshot (farm.c): every object is a
 * file named by the SHA-1 of its bytes, DIR/objects/xx/yyyy… (xx the first
 * two hex digits), compressed with ISA-L's deflate when that saves space.
 * Identical objects are stored once.  A file starts with a 16-byte
 * header: "KFO1", the method (0 stored, 1 raw deflate), 3 zero bytes, the
 * object's length and the length that follows (both le32).
 */
#ifndef DOG_FARM_H
#define DOG_FARM_H

#include <stdbool.h>
#include <stdint.h>

#define FARM_SHA1_LEN	20

/*
 * Store @len bytes of @buf under their SHA-1 (returned in @sha1).  *@dedup
 * is set if the object was there already.  0, or -1 with a message.
 */
int farm_put(const char *dir, const void *buf, uint32_t len,
	     uint8_t sha1[FARM_SHA1_LEN], bool *dedup);
/*
 * The object @sha1 in a buffer of *@len bytes (free() it), checked against
 * its digest.  0, or -1 with a message.
 */
int farm_get(const char *dir, const uint8_t sha1[FARM_SHA1_LEN], void **buf,
	     uint32_t *len);
void farm_sha1_hex(const uint8_t sha1[FARM_SHA1_LEN], char hex[41]);
/* fsync DIR/objects and its subdirectories that were written to */
int farm_sync(const char *dir);

#endif
