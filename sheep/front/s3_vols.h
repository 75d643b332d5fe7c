/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A bucket's volumes in the cluster (s3_vols.c, doc/object-storage.md):
 * its index, and its data volumes data.0, data.1, ..., which together
 * are one space of addresses: data.<n> holds [n * size, (n + 1) * size),
 * size being data.0's (4 TiB), so what a bucket is given over its life is
 * not bounded by one VDI.  The owner makes data volumes in order as its
 * writes reach them, and they are removed last first, so those that
 * exist are always data.0 .. data.<k>: a bucket made again under the same
 * name finds and removes what a failed delete left.
 */
#ifndef SHEEP_FRONT_S3_VOLS_H
#define SHEEP_FRONT_S3_VOLS_H

#include <pthread.h>
#include <stdint.h>
#include "vdi/volume.h"

#define S3V_SIZE	(UINT64_C(4) << 40)	/* a data volume */
/*
 * For tests only: the size of the data volumes of buckets made from now
 * on (a multiple of 4 MiB, at most S3V_SIZE), so that crossing from one
 * to the next takes megabytes, not terabytes.  A bucket keeps the size
 * it was made with whatever this says later.
 */
#define S3V_SIZE_ENV	"KELPIE_S3_VOLUME_SIZE"
#define S3V_END		(UINT64_C(1) << 62)	/* addresses end here */

/* a bucket's data volumes, as one gateway knows them */
struct s3_vols {
	pthread_mutex_t lock;		/* nr, cap, vid */
	char bucket[256];
	uint64_t size;			/* data.0's */
	uint8_t copies, policy;		/* data.0's, for the next ones */
	uint32_t nr, cap;		/* data.0 .. data.<nr - 1> known */
	uint32_t *vid;
	struct vol_named **named;	/* of each: what its inode names */
};

/* the knob above valid (or not set): 0, or -1 with the reason logged */
int s3v_check_env(void);

/* one volume of bucket @bucket ("index", "data.0"): SD_RES_* */
int s3v_lookup(const char *bucket, const char *what, uint32_t *vid);
/* made afresh, one left by a bucket of that name removed first */
int s3v_create(const char *bucket, const char *what, uint64_t size,
	       uint8_t copies, uint8_t policy);
/* its objects dropped, then its inode; one not there is no error */
int s3v_delete(const char *bucket, const char *what);

/*
 * The data volumes of a new bucket: what a bucket of that name left
 * removed, then data.0 made (@copies and @policy 0: the cluster's)
 */
int s3v_make(const char *bucket, uint8_t copies, uint8_t policy);
/* every data volume of @bucket removed, the last first */
int s3v_remove(const char *bucket);

/* @v of @bucket, from its data.0: SD_RES_* */
int s3v_open(struct s3_vols *v, const char *bucket);
void s3v_close(struct s3_vols *v);
/*
 * @len bytes at address @off: a piece in an object or volume not there
 * is SD_RES_NO_OBJ (never zeros); SD_RES_* otherwise
 */
int s3v_read(struct s3_vols *v, uint64_t off, void *buf, uint32_t len);
/* written, durable once answered; volumes not there yet made (owner) */
int s3v_write(struct s3_vols *v, uint64_t off, const void *buf,
	      uint32_t len);
/* 4 MiB chunk @chunk (address / 4 MiB) dropped: SD_RES_* */
int s3v_drop(struct s3_vols *v, uint64_t chunk);

#endif
