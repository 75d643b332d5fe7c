/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A copy-on-write B+-tree of byte-string keys and values over numbered
 * pages of a store the caller provides (lib/kvtree.c): the index of an S3
 * bucket (doc/object-storage.md).  One writer; changes are made in memory
 * and written by kvt_commit() to free pages, then a superblock names the
 * new root.  A crash at any point leaves the last committed tree.
 */
#ifndef KELPIE_KVTREE_H
#define KELPIE_KVTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* a test may build lib/kvtree.c with smaller ones (test_kvtree.c) */
#ifndef KVT_PAGE
#define KVT_PAGE	65536
#define KVT_MAX_KEY	1024
#define KVT_MAX_VAL	8192
#endif
/* a tree's pages: 1 TiB of 64 KiB pages; a superblock claiming more lies */
#ifndef KVT_MAX_PAGES
#define KVT_MAX_PAGES	(UINT64_C(1) << 24)
#endif

/*
 * The pages: 0 and 1 are the superblocks, the others the tree's.  A page
 * never written reads as zeros.  read/write move KVT_PAGE bytes; sync
 * returns once every page written before it is durable.  0 or -1.
 */
struct kvt_store {
	int (*read)(void *arg, uint64_t page, void *buf);
	int (*write)(void *arg, uint64_t page, const void *buf);
	int (*sync)(void *arg);
	void *arg;
};

struct kvtree;

/*
 * Open the tree in @s (an empty store is an empty tree): 0, or -1 if no
 * superblock is valid, or its root or free list fails its checks.  The
 * other pages are read when needed: a damaged one makes the operation
 * that reads it fail (-2).
 */
int kvt_open(const struct kvt_store *s, struct kvtree **t);
/*
 * Read every page of the tree: 0 if each is sound and every page below
 * the high-water mark is the tree's, free, or the free list's (a check
 * for tests and repair tools, not for every open); -1 otherwise
 */
int kvt_check(struct kvtree *t);
void kvt_close(struct kvtree *t);
/* commits so far: the sequence number of the tree read or last written */
uint64_t kvt_seq(const struct kvtree *t);

/*
 * Look @key up: its value's length (its first @size bytes copied to
 * @val), -1 if absent, -2 if a page could not be read or failed its
 * checks
 */
int kvt_get(struct kvtree *t, const void *key, size_t klen, void *val,
	    size_t size);
/* insert or replace: 0, -1 for a key or value over its bound, -2 for I/O */
int kvt_put(struct kvtree *t, const void *key, size_t klen, const void *val,
	    size_t vlen);
/* 0 removed, -1 absent, -2 I/O */
int kvt_del(struct kvtree *t, const void *key, size_t klen);
/*
 * Call @fn for each key >= @start in order until it returns non-zero:
 * 0, or -2 for I/O
 */
int kvt_scan(struct kvtree *t, const void *start, size_t slen,
	     int (*fn)(const void *key, size_t klen, const void *val,
		       size_t vlen, void *arg), void *arg);
/*
 * Write the changes: the changed pages to free pages, a sync, then the
 * next superblock and a sync.  0, or -2 (the tree in the store is the
 * last committed one; reopen to go on).  Pages the commit freed are
 * reused from the next commit on: a reader of the tree before this one
 * must be done with it by the end of this commit.
 */
int kvt_commit(struct kvtree *t);

#endif
