/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The local object store (cluster.md §11): one file per object under
 * BASE/obj.  Every function blocks and must run on a worker thread (or
 * during start-up).  Results are SD_RES_* codes.
 */
#ifndef SHEEP_STORE_H
#define SHEEP_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "list.h"

/*
 * What the store keys an object by (doc/erasure-coding.md §1): its oid and
 * which strip of it this is, 0..D+P-1 for an erasure-coded object (the file
 * <oid>_<idx>), OBJ_IDX_REPLICA for a whole replicated object (the file
 * <oid>).  Every strip of an oid is on the disk the oid picks.
 */
#define OBJ_IDX_REPLICA	0xff
struct obj_key {
	uint64_t oid;
	uint8_t idx;
};

static inline struct obj_key obj_key_rep(uint64_t oid)
{
	return (struct obj_key){ .oid = oid, .idx = OBJ_IDX_REPLICA };
}

static inline bool obj_key_eq(struct obj_key a, struct obj_key b)
{
	return a.oid == b.oid && a.idx == b.idx;
}

/* for the store's hash tables (dirty set, fd cache, journal, stale index) */
static inline uint64_t obj_key_hash(struct obj_key k)
{
	return k.oid ^ (k.oid >> 32) ^ k.idx;
}

/*
 * sheep -D: data objects' data through O_DIRECT (store/dio.c); before
 * store_init, which refuses a disk whose file system does not take it
 */
void store_set_direct(bool on);
bool store_direct(void);
/*
 * The layout of the store the cluster was formatted with (cluster.md
 * §11.2): "plain" or "tree".  Before store_init; again when a format or a
 * join changes it, and then the files already stored move to their new
 * places.  SD_RES_NO_STORE for an unknown name.
 */
bool store_layout_known(const char *name);
int store_set_layout(const char *name);
int store_init(const char *base, bool nosync);
/*
 * The same, with the objects on the disks of @disks ("DIR1,DIR2,...",
 * each object in DIRn/obj), not in BASE/obj; NULL or "" for BASE/obj
 */
int store_init_disks(const char *base, const char *disks, bool nosync);

/*
 * One daemon per store and disk (store/lock.c): an exclusive flock on
 * @path (created); returns its fd, or -errno (-EWOULDBLOCK: held, and
 * @holder then says the PID the file names)
 */
int store_lock_take(const char *path, char *holder, size_t len);
/* write this process's PID into the lock file @fd */
void store_lock_note_pid(int fd);

/* the disks (cluster.md §2.5) */
#define MD_MAX_DISKS	64
#define MD_PATH_MAX	4096
struct md_disk_info {
	int slot;
	uint64_t size, free;
	char path[MD_PATH_MAX];
};
/* up to @max disks in use; returns how many */
int store_md_info(struct md_disk_info *out, int max);
/* several disks given at start-up: disks may be plugged and unplugged */
bool store_md_multi(void);
int store_md_nr(void);
/* add the disk DIR (its DIR/obj is emptied first); SD_RES_* */
int store_md_plug(const char *dir);
/* stop using DIR; its objects are lost to this node (recovery refetches) */
int store_md_unplug(const char *dir);
/* check every disk; unplug those that fail; how many did */
int store_md_check(bool probe);
/* an I/O error was seen since the last check */
bool store_md_io_error_seen(void);
/*
 * sheep -j: replay DIR/journal, then journal every synchronous write from
 * now on (store/journal.c); after store_init, before serving
 */
int store_journal_init(const char *dir, uint64_t size);
/* stop journaling (the journal keeps its records: tests of the replay) */
void store_journal_close(void);
/* whether writes are journaled; the journal's checkpoints since start-up */
bool store_journaled(void);
uint64_t journal_checkpoints(void);
int store_read(struct obj_key k, void *buf, uint32_t len, uint32_t off);
/*
 * store_read on the event loop, done only when it cannot block: the
 * object's file is open in the fd cache and every byte it needs is in
 * the page cache.  false: nothing was served, do store_read on a worker.
 */
bool store_read_nowait(struct obj_key k, void *buf, uint32_t len,
		       uint32_t off);
/* not a wire code: store_write_durable will report through its wait */
#define STORE_PENDING	0x10001
/*
 * A durable write that may finish later (store_write_durable): @done is
 * called once, on the journal's sync thread, when the write is durable
 * (SD_RES_SUCCESS) or cannot be (SD_RES_EIO).
 */
struct store_wait {
	void (*done)(struct store_wait *w, int result);
	/* the journal's */
	uint64_t want;
	int result;
	struct list_head list;
};
/*
 * store_write with @sync, for a caller that need not block a thread for
 * the sync: with the journal, a write whose record has to wait for a
 * sync of the journal (one is under way for other writes) returns
 * STORE_PENDING and @w->done reports the end; otherwise it is durable, or
 * has failed, on return, as with store_write.
 */
int store_write_durable(struct obj_key k, const void *buf, uint32_t len,
			uint32_t off, struct store_wait *w);
/*
 * A cached write (no sync) on the event loop, done only when it cannot
 * block: the object's file is open in the fd cache, the write covers
 * whole 4 KiB blocks (at most 128 KiB), and the file system takes
 * buffered writes with RWF_NOWAIT (XFS, btrfs; not ext4).  false: nothing
 * to undo, do store_write on a worker.
 */
bool store_write_nowait(struct obj_key k, const void *buf, uint32_t len,
			uint32_t off);
/* @sync: make the data durable before returning (no SD_FLAG_CMD_CACHE) */
int store_write(struct obj_key k, const void *buf, uint32_t len,
		uint32_t off, bool sync);
/*
 * Create @k of @obj_size bytes (zero filled, sparse for inode/ledger
 * objects), with @len bytes of @buf at @off; atomically replaces an
 * existing object.
 */
int store_create(struct obj_key k, uint32_t obj_size, const void *buf,
		 uint32_t len, uint32_t off, bool sync);
/* the same, but keeps an object that already exists (recovery) */
int store_create_new(struct obj_key k, uint32_t obj_size, const void *buf,
		     uint32_t len, uint32_t off, bool sync);
int store_remove(struct obj_key k);
/*
 * Rewrite from @good (the whole object, @len bytes, from a copy that
 * passed its checks) the blocks of the local copy that fail theirs; a
 * copy whose checksums are gone altogether is replaced.  *@nr: blocks
 * repaired.
 */
int store_repair(struct obj_key k, const void *good, uint32_t len, int *nr);
/* checksum mismatches seen by reads since start-up */
uint64_t store_nr_mismatches(void);
int store_exist(struct obj_key k);
/* make every write so far durable */
int store_flush(void);
/* remove every object (format); the old files are deleted in the call */
int store_wipe(void);
int store_stat(uint64_t *size, uint64_t *free_bytes);
/*
 * call @fn for every stored object (replica or strip); stops when @fn
 * returns non-zero
 */
int store_for_each(int (*fn)(struct obj_key k, void *arg), void *arg);
const char *store_dir(void);

/*
 * Erasure-coded strips (store/strip.c, doc/erasure-coding.md §3): updates
 * are prepared with an undo record, then committed or aborted; versions of
 * a strip only grow.  PREPARE: SD_RES_STALE_OBJ for a version not above
 * every one seen, SD_RES_AGAIN with STRIP_MAX_PENDING uncommitted ones.
 */
#define STRIP_MAX_PENDING	16
struct strip_state {
	uint64_t committed;	/* every version up to this one is final */
	uint64_t high;		/* the highest one prepared or aborted */
	int nr_pending;		/* versions above committed, oldest first */
	struct {
		uint64_t v;
		uint32_t off, len;
		bool complete;	/* its new bytes are all on disk */
	} pending[STRIP_MAX_PENDING];
};
/*
 * Write @len bytes at @off of strip @k (created, zero, if it is not and
 * @prev is 0) on top of version @prev: SD_RES_NO_OBJ if the strip holds
 * an older one (it must be rebuilt: store_strip_install), STALE_OBJ if a
 * newer one
 */
int store_strip_prepare(struct obj_key k, uint32_t strip_size, uint64_t v,
			uint64_t prev, const void *buf, uint32_t len,
			uint32_t off);
/* versions up to @v are final; SD_RES_STALE_OBJ if @k never held @v */
int store_strip_commit(struct obj_key k, uint64_t v);
/* undo the versions from @v on; a later PREPARE of @v is refused */
int store_strip_abort(struct obj_key k, uint64_t v);
int store_strip_state(struct obj_key k, struct strip_state *st);
/*
 * Read @len bytes at @off of strip @k with, taken at the same time, the
 * version its bytes are of: the newest pending one if there is one (then
 * *@state is STRIP_PENDING, or STRIP_DOUBT if its data write was cut
 * short), else the committed one (STRIP_FINAL)
 */
enum { STRIP_FINAL, STRIP_PENDING, STRIP_DOUBT };
int store_strip_read(struct obj_key k, void *buf, uint32_t len, uint32_t off,
		     uint64_t *version, int *state);
/*
 * Strip @k rebuilt whole (@strip_size bytes of @buf) at committed version
 * @v, its records dropped; SD_RES_STALE_OBJ if it holds a newer one, or
 * @v itself unless @same (a repair of bytes that differ)
 */
int store_strip_install(struct obj_key k, uint32_t strip_size, uint64_t v,
			const void *buf, bool same);
/* EC_STATE's reply (internal_proto.h) from @st, into EC_STATE_LEN bytes */
void strip_state_put(const struct strip_state *st, uint8_t *buf);
/* and back, from a peer: 0, or -1 if it cannot be one */
int strip_state_get(const uint8_t *buf, uint32_t len, struct strip_state *st);

/* the stale area (cluster.md §7.2): superseded copies, kept by epoch */
int store_move_to_stale(struct obj_key k, uint32_t epoch);
/*
 * Every object becomes a stale copy of @epoch at once (O(1): the object
 * directory is swapped); store_drain_left() then moves the old files into
 * the stale area, in a worker; stale reads see them meanwhile
 */
int store_stale_all(uint32_t epoch);
uint64_t store_drain_left(void);
/* read the newest stale copy of @k */
int store_read_stale(struct obj_key k, void *buf, uint32_t len, uint32_t off,
		     uint32_t *stale_epoch);
int store_for_each_stale(int (*fn)(struct obj_key k, void *arg), void *arg);
/*
 * The version the newest stale copy of strip @k settled at, when it came
 * from a store left behind with one (stale.c); SD_RES_NO_OBJ otherwise
 */
int store_strip_stale_version(struct obj_key k, uint64_t *v);
/* up to @max (key, epoch) pairs of stale copies; returns how many */
int store_list_stale(struct obj_key *keys, uint32_t *epochs, size_t max);
/* delete the stale copy of @k if it is still the one of @epoch */
int store_drop_stale(struct obj_key k, uint32_t epoch);
int store_purge_stale(void);
int store_nr_stale(void);
void store_stale_usage(uint64_t *count, uint64_t *bytes);

#endif
