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

/* plain.c: sheep --nosync (tests): no fdatasync anywhere */
bool store_sync_off(void);
/* strip.c: a strip's undo records, in the file named as it plus this */
#define STRIP_UNDO_SFX	".undo"


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
void dirty_add(struct obj_key k);
void dirty_dir(void);
/* take the whole set (the caller frees the array); restore what failed */
struct obj_key *dirty_take(size_t *nr, bool *dir);
void dirty_restore(const struct obj_key *keys, size_t nr, bool dir);

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
/* replay DIR/journal, then journal synchronous writes */
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
/* before an object is removed, replaced or moved: no replay into a later */
int journal_forget(struct obj_key k);
/* tests: keep the checkpoint thread from retiring a full half */
void journal_hold_checkpoints(bool hold);
/* the store was wiped (format): nothing of the journal applies */
void journal_wiped(void);

/* build the stale index (stale.c); at start-up, before any other call */
int stale_init(void);

#endif
