/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared between the files of store/ only. */
#ifndef SHEEP_STORE_INT_H
#define SHEEP_STORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "store.h"

/*
 * md.c: the node's disks, each known by a slot (0..MD_MAX_DISKS-1) while
 * it is in use; one (BASE/obj) unless sheep was given BASE,DIR...
 */
int md_init(const char *base, const char *list);
int md_nr(void);
bool md_multi(void);
/* the first slot in use after @slot (-1 to start), or -1 */
int md_next(int slot);
bool md_in_use(int slot);
void md_dir(int slot, char *buf, size_t len);
int md_dir_fd(int slot);
bool md_on_fuse(int slot);
void md_path(char *buf, size_t len, int slot, struct obj_key k,
	     const char *sfx);
/*
 * the disk a new object goes to (every strip of an oid goes where the oid
 * does); the disk an object is on, or -1
 */
int md_disk_of(uint64_t oid);
int md_locate(struct obj_key k);
int md_info(struct md_disk_info *out, int max);
int md_plug(const char *path);
int md_unplug_slot(int slot);
int md_slot_of(const char *path);
bool md_healthy(int slot, bool probe);
int md_swap(int slot, int (*swap)(int slot, void *arg), void *arg);

/* nosync.c: sheep --nosync (tests): no fdatasync anywhere */
void store_set_sync_off(bool off);
bool store_sync_off(void);
/* strip.c: a strip's undo records, in the file named as it plus this */
#define STRIP_UNDO_SFX	".undo"


/*
 * layout.c: where an object's file is inside an object directory: the
 * plain store's files all in it, the tree store's in subdirectories
 * (cluster.md §11.2), numbered 0..255 (xx/), LAYOUT_SUB_META (meta/), and
 * LAYOUT_SUB_TOP for the directory itself
 */
#define LAYOUT_SUB_META	256
#define LAYOUT_SUB_TOP	257
#define LAYOUT_NR_SUB	258
bool layout_tree(void);
void layout_set_tree(bool on);
int layout_sub(struct obj_key k);
/* "xx/", "meta/" or "" */
void layout_prefix(int sub, char *buf, size_t len);
/* @k's path relative to an object directory, then @sfx */
void layout_rel(char *buf, size_t len, struct obj_key k, const char *sfx);
/* a tree store's subdirectories in the object directory @dfd (synced) */
int layout_make(int dfd, bool nosync);
/* the tree store's subdirectories, whichever layout is set */
int layout_make_tree(int dfd, bool nosync);
/* a change of layout begins (@begin) or ends: see layout_present */
void layout_change(bool begin);
/* remove them where empty */
void layout_unmake(int dfd);
/* does @dfd have what the layout needs (a tree's subdirectories)? */
bool layout_present(int dfd);
/*
 * @fn for every entry of the object directory @dir and of its
 * subdirectories (those of either layout), except names that start with
 * a dot; @fn gets the directory the entry is in.  Stops at the first
 * nonzero return, and returns it; -1 if @dir cannot be read.
 */
int layout_walk(const char *dir,
		int (*fn)(const char *dir, const char *name, void *arg),
		void *arg);
/* layout_walk's files named as an object is: @fn gets their keys */
int layout_for_each_key(const char *dir,
			int (*fn)(struct obj_key k, void *arg), void *arg);
/* fsync the subdirectory @sub of the object directory @dfd */
int layout_sync_sub(int dfd, int sub);
/* move every file of @dir named after an object where the layout wants it */
int layout_convert(const char *dir, int dfd, bool nosync, uint64_t *moved);

/* base.c */
void store_obj_path(char *buf, size_t len, struct obj_key k);
void store_note_first_dir(void);
int store_err_to_res(int err);
/* key.c: the file name of @k ("%016x" or "%016x_%u") */
#define STORE_NAME_MAX	24
void store_key_name(char *buf, size_t len, struct obj_key k);
/*
 * An object file's name: 16 lower-case hex digits, then "_<idx>" for a
 * strip.  store_parse_key: 0 and *@k if @name is one, else -1 (unknown
 * names are skipped, never guessed at); store_parse_key_prefix: what
 * follows the key in @name, or NULL.
 */
int store_parse_key(const char *name, struct obj_key *k);
const char *store_parse_key_prefix(const char *name, struct obj_key *k);
/*
 * stale.c: the path of @k's newest stale copy (in a store left behind
 * and not moved in yet, or in the stale area); 0, or -1 if it has none.
 * A strip's undo file is the path plus STRIP_UNDO_SFX.
 */
int stale_copy_path(struct obj_key k, char *buf, size_t len);
/* stale.c: a disk's whole store left behind (plain.c's store_stale_all) */
int stale_swap_dir(int slot, uint32_t epoch);
bool stale_left_pending(void);
/* forget the stale copies of a disk that is gone */
void stale_forget_disk(int slot);
/*
 * dio.c: sheep -D, data objects' data through O_DIRECT (kinds dio_kind,
 * data sizes dio_size_ok); obj_pread/obj_pwrite: through @dfd when it is
 * open (>= 0), else buffered through @fd
 */
#define DIO_ALIGN	4096U
bool dio_kind(uint64_t oid);
bool dio_size_ok(uint32_t size);
int dio_probe(const char *dir);
ssize_t dio_pread(int dfd, void *buf, size_t len, uint64_t off);
ssize_t dio_pwrite(int dfd, const void *buf, size_t len, uint64_t off);
ssize_t obj_pread(int fd, int dfd, void *buf, size_t len, uint64_t off);
ssize_t obj_pwrite(int fd, int dfd, const void *buf, size_t len,
		   uint64_t off);
/* csum.c: per-4 KiB CRC32C kept after the data in each object file */
#define CSUM_BLOCK	4096U
void csum_init(void);
uint32_t csum_nr_blocks(uint32_t size);
uint64_t csum_file_size(uint32_t size);
uint32_t csum_layout(int fd);
int csum_write_new(int fd, uint32_t size, const void *buf, uint32_t len,
		   uint32_t off);
/* @dfd: the object's O_DIRECT descriptor for the data, or -1 */
int csum_write(int fd, int dfd, uint64_t oid, uint32_t size,
	       const void *buf, uint32_t len, uint32_t off);
int csum_read(int fd, int dfd, uint64_t oid, uint32_t size, void *buf,
	      uint32_t len, uint32_t off);
int csum_read_nowait(int fd, uint64_t oid, uint32_t size, void *buf,
		     uint32_t len, uint32_t off);
/* the most blocks csum_write_nowait takes (128 KiB) */
#define CSUM_LOOP_BLOCKS	32U
int csum_write_nowait(int fd, uint64_t oid, uint32_t size, const void *buf,
		      uint32_t len, uint32_t off);
uint64_t csum_mismatches(void);
/* the journal's replay: a partly written block that fails is torn */
void csum_replaying(bool on);
int csum_repair(int fd, int dfd, uint64_t oid, uint32_t size,
		const void *good);

/* upgrade.c: add checksums to a store written without them (start-up) */
int store_upgrade(int slot, bool nosync);

/* dirty.c: what a flush must sync (writes and names not synced yet) */
struct dir_set {
	uint64_t bits[(LAYOUT_NR_SUB + 63) / 64];	/* by subdirectory */
};
static inline bool dir_set_has(const struct dir_set *d, int sub)
{
	return d->bits[sub / 64] & (1ULL << (sub % 64));
}
void dirty_add(struct obj_key k);
/* a name changed in subdirectory @sub (of any disk) */
void dirty_dir(int sub);
/* take the whole set (the caller frees the array); restore what failed */
struct obj_key *dirty_take(size_t *nr, struct dir_set *dirs);
void dirty_take_dirs(struct dir_set *dirs);
void dirty_restore(const struct obj_key *keys, size_t nr,
		   const struct dir_set *dirs);

/* journal.c: sheep -j; the store's functions it calls, from plain.c */
struct journal_store {
	/* write without a sync (the replay) */
	int (*write)(struct obj_key k, const void *buf, uint32_t len,
		     uint32_t off);
	/* sync every object written since the last flush */
	int (*flush)(void);
	/* sync one object; NO_OBJ if there is none */
	int (*sync_obj)(struct obj_key k);
};
/* replay DIR/journal, then journal every write */
int journal_open(const char *dir, uint64_t size,
		 const struct journal_store *st);
void journal_close(void);
bool journal_on(void);
/* append a write of an object already written (unsynced) and commit */
int journal_write(struct obj_key k, const void *buf, uint32_t len,
		  uint32_t off);
/*
 * The same, but when a sync of the journal is under way for others, not
 * waiting for the next one: STORE_PENDING, and the sync thread calls
 * @w->done once a sync that started after this append has finished.
 */
int journal_write_async(struct obj_key k, const void *buf, uint32_t len,
			uint32_t off, struct store_wait *w);
/* append a cached write of an object already written, without a sync */
int journal_append(struct obj_key k, const void *buf, uint32_t len,
		   uint32_t off);
/* make every record appended so far durable (a flush) */
int journal_sync(void);
/* before an object is removed, replaced or moved: no replay into a later */
int journal_forget(struct obj_key k);
/* tests: keep the checkpoint thread from retiring a full half */
void journal_hold_checkpoints(bool hold);
/* the store was wiped (format): nothing of the journal applies */
void journal_wiped(void);

/* build the stale index (stale.c); at start-up, before any other call */
int stale_init(void);

#endif
