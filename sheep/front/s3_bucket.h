/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Buckets and their objects in the cluster (s3_bucket.c,
 * doc/object-storage.md): a bucket is an index volume (a kvtree of its
 * objects' entries) and data volumes its objects' bytes are appended to
 * (s3_vols.h: one space of addresses).
 * One gateway writes a bucket: its owner, named in the registry; any
 * gateway reads it.
 */
#ifndef SHEEP_FRONT_S3_BUCKET_H
#define SHEEP_FRONT_S3_BUCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kvtree.h"
#include "s3sum.h"

#define S3_MAX_KEY		1024	/* S3's bound, in bytes */
#define S3_MAX_CTYPE		256
#define S3_MAX_META		2048	/* x-amz-meta-*, as S3 */
#define S3_MAX_INLINE		2048	/* smaller objects live in their entry */

/* an object's entry */
struct s3_obj {
	uint64_t size;
	uint64_t mtime;			/* seconds since the epoch */
	uint64_t off;			/* in the data volumes (s3_vols.h) */
	uint8_t md5[16];
	bool is_inline;
	/*
	 * An upload's: the checksum each part must have (enum s3_sum_algo);
	 * a part's: the checksum it was sent with (its value in meta)
	 */
	uint8_t sum_algo;
	/*
	 * A multipart object: its bytes are nr_parts extents whose list
	 * (struct s3_extent, little-endian) is in the data volume at off;
	 * its ETag is md5 followed by "-nr_parts"
	 */
	uint16_t nr_parts;
	uint16_t ctype_len, meta_len;
	char ctype[S3_MAX_CTYPE];
	char meta[S3_MAX_META];		/* name NUL value NUL ... */
	uint8_t data[S3_MAX_INLINE];	/* is_inline: size bytes */
};

struct s3_bucket;

#define S3_MAX_PARTS		10000
#define S3_EXTENT_SIZE		16	/* an extent in a list: off, len */

/* where some of an object's bytes are in the data volume */
struct s3_extent {
	uint64_t off, len;
};

/* a committed part of a multipart upload */
struct s3_part {
	uint32_t number;
	uint64_t off, size;
	uint64_t mtime;
	uint8_t md5[16];
	uint8_t sum_algo;		/* the checksum it was sent with */
	char sum[S3_SUM_B64];		/* its value, base64 */
};

/*
 * This gateway's S3 endpoint and its sheep, "ADDR:PORT" each: the owner
 * of what it creates, with a life drawn here
 */
void s3b_set_self(const char *id, const char *node);
/* the bucket @name: 0, -1 no such bucket, -2 it cannot be read */
int s3b_get(const char *name, struct s3_bucket **b);
void s3b_put(struct s3_bucket *b);
/* is this gateway the one that writes @b? */
bool s3b_is_owner(const struct s3_bucket *b);
/* this gateway's S3 endpoint */
const char *s3b_self(void);
/* this gateway's sheep, "ADDR:PORT" */
const char *s3b_self_node(void);
/* the owner's S3 endpoint, "ADDR:PORT" */
const char *s3b_owner(const struct s3_bucket *b);
/* is the owner, not this gateway, at this gateway's endpoint? */
bool s3b_owner_is_my_address(const struct s3_bucket *b);
/* ... and on this sheep: this gateway in an earlier life (a restart)? */
bool s3b_owner_is_me_before(const struct s3_bucket *b);
/* the owner's sheep, "ADDR:PORT" ("" in records of the first slice) */
const char *s3b_owner_node(const struct s3_bucket *b);
/*
 * The owner cannot be reached: @b moved to this gateway if its owner is
 * gone (its sheep no member, or this gateway's earlier life): 0 moved
 * (get it again), 1 it moved elsewhere or went meanwhile (get it again),
 * -1 its owner is a member still, -2 failure
 */
int s3b_take_over(struct s3_bucket *b);
const char *s3b_user(const struct s3_bucket *b);
uint64_t s3b_created(const struct s3_bucket *b);

/*
 * The bucket's objects and bytes, kept with every commit: 0, -1 not
 * kept (a bucket written before they were: walk it), -2 unreadable
 */
int s3b_usage(struct s3_bucket *b, uint64_t *count, uint64_t *bytes);
/* the entry of @key: 0, -1 absent, -2 unreadable */
int s3b_lookup(struct s3_bucket *b, const char *key, size_t klen,
	       struct s3_obj *o);
/*
 * The entries of keys >= @start in key order, to @fn until it returns
 * non-zero (its return value is then returned): 0 at the end, -2 I/O
 */
int s3b_scan(struct s3_bucket *b, const char *start, size_t slen,
	     int (*fn)(const char *key, size_t klen, const struct s3_obj *o,
		       void *arg), void *arg);
/*
 * The extents of @o (not inline), in order, into *@out (free()): how
 * many, or -2 (its extent list cannot be read, or does not add up)
 */
int s3b_extents(struct s3_bucket *b, const struct s3_obj *o,
		struct s3_extent **out);
/* the owner: the extents of a multipart object written: its off, or -2 */
int s3b_write_extents(struct s3_bucket *b, const struct s3_extent *e, int n,
		      uint64_t *off);
/* the owner: room for @len bytes in the data volume at *@off (0 or -2) */
int s3b_reserve(struct s3_bucket *b, uint64_t len, uint64_t *off);
/*
 * The reservations this thread made during its request end (the request
 * is done): room they left unnamed may be reclaimed from now on
 */
void s3b_release_reservations(void);
/* bytes of the data volume: SD_RES results; a read of bytes of a
 * chunk reclaimed meanwhile (an entry looked up longer ago than the
 * grace period) is SD_RES_NO_OBJ */
int s3b_write(struct s3_bucket *b, uint64_t off, const void *buf,
	      uint32_t len);
int s3b_read(struct s3_bucket *b, uint64_t off, void *buf, uint32_t len);
/* the owner: @key now names @o (0, -2): durable when it returns */
int s3b_commit(struct s3_bucket *b, const char *key, size_t klen,
	       const struct s3_obj *o);
/* the owner: @key gone (0 removed or absent, -2) */
int s3b_delete(struct s3_bucket *b, const char *key, size_t klen);

/*
 * The owner: the keys of @keys (DeleteObjects) gone, in one commit (0,
 * -2); keys that were not there count as deleted
 */
struct s3_del_key;
int s3b_delete_many(struct s3_bucket *b, const struct s3_del_key *keys,
		    int n);

/* ---- multipart uploads (the owner) ---- */

/* a new upload @id of @key, with @o's type and metadata: 0 or -2 */
int s3b_upload_create(struct s3_bucket *b, const char *id, const char *key,
		      size_t klen, const struct s3_obj *o);
/* upload @id: its key (S3_MAX_KEY + 1 bytes) and metadata; 0, -1, -2 */
int s3b_upload_get(struct s3_bucket *b, const char *id, char *key,
		   size_t *klen, struct s3_obj *o);
/* part @p of upload @id committed (replacing one of its number): 0, -2 */
int s3b_part_commit(struct s3_bucket *b, const char *id,
		    const struct s3_part *p);
/* the parts of @id in number order into *@out (free()): how many, or -2 */
int s3b_parts(struct s3_bucket *b, const char *id, struct s3_part **out);
/*
 * One commit: @key names @o (the parts' extent list already written),
 * the upload and its parts are gone: 0, -1 no such upload, -2
 */
int s3b_upload_complete(struct s3_bucket *b, const char *id,
			const char *key, size_t klen, const struct s3_obj *o);
/* the upload and its parts gone: 0, -1 no such upload, -2 */
int s3b_upload_abort(struct s3_bucket *b, const char *id);
/*
 * Every upload in progress (in upload id order), its key and its entry
 * (type, metadata, mtime: when it began) to @fn until it returns non-zero
 * (then returned): 0 at the end, -2 I/O
 */
int s3b_uploads(struct s3_bucket *b,
		int (*fn)(const char *id, const char *key, size_t klen,
			  const struct s3_obj *o, void *arg), void *arg);

/* ---- reclaiming room (doc/object-storage.md) ---- */

#define S3_GRACE_DEFAULT	60	/* seconds */
#define S3_GRACE_MAX		86400
/* seconds a chunk no entry names waits before it is dropped */
void s3b_set_grace(unsigned int seconds);
/*
 * The reclaimer, a thread of its own: it drops, in the buckets this
 * gateway owns and has open, the chunks whose grace period is over
 */
void *s3b_reclaimer(void *arg);

/*
 * CreateBucket for @user through this gateway, its data with @copies and
 * @policy (0 and 0: the cluster's): 0, -1 the name is taken (by @user:
 * *@mine), -2 failure
 */
int s3b_create(const char *name, const char *user, uint8_t copies,
	       uint8_t policy, bool *mine);
/* DeleteBucket, by its owner: 0, -1 not empty, -2 failure */
int s3b_destroy(struct s3_bucket *b);

#endif
