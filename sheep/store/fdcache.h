/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A cache of open object files, so that an I/O is one pread/pwrite */
#ifndef SHEEP_FDCACHE_H
#define SHEEP_FDCACHE_H

#include <stdbool.h>
#include <stdint.h>
#include "store.h"

struct fdc_ent;

/* the open fd of @k at @path; NULL with errno set on failure */
struct fdc_ent *fdc_get(struct obj_key k, const char *path);
/*
 * The fd of @k if the cache holds it, never opening one (for a read from
 * the event loop, which must not block); NULL if not cached.
 */
struct fdc_ent *fdc_lookup(struct obj_key k);
/*
 * the same for a write from the event loop: NULL if the file refused one,
 * or is open O_DIRECT (sheep -D)
 */
struct fdc_ent *fdc_lookup_writable(struct obj_key k);
int fdc_fd(const struct fdc_ent *e);
/* the same file opened O_DIRECT (sheep -D, data objects), or -1 */
int fdc_dfd(const struct fdc_ent *e);
/* the object's data size, cached with its fd (0: not known yet) */
uint32_t fdc_size(const struct fdc_ent *e);
void fdc_set_size(struct fdc_ent *e, uint32_t size);
/* the file refused a write from the event loop (RWF_NOWAIT): no more tries */
void fdc_refuse_nowait(struct fdc_ent *e);
void fdc_put(struct fdc_ent *e);
/* the file of @k was replaced or removed: forget its fd */
void fdc_drop(struct obj_key k);
void fdc_drop_all(void);

#endif
