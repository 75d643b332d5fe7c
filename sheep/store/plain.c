// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Plain file-per-object store.  Creates go through "<oid>.tmp" and
 * rename() so that a crash never leaves a half-written object under its
 * final name; the directory is fsynced so that the rename itself survives.
 * The objects are spread over the node's disks (md.c): a new object goes
 * to the disk the ring picks, an existing one is used where it is.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "fdcache.h"
#include "store.h"
#include "store_int.h"
#include "util.h"


/* a flush of more written objects than this is one syncfs() per disk */
#define FLUSH_EACH_MAX	2

#define for_each_disk(s) for (int s = md_next(-1); s >= 0; s = md_next(s))

static int remove_tmp(const char *dir, const char *name, void *arg)
{
	char p[MD_PATH_MAX + 300];
	size_t l = strlen(name);

	if (l > 4 && !strcmp(name + l - 4, ".tmp")) {
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		unlink(p);
	}
	return 0;
}

static int remove_tmp_files(int slot)
{
	char dir[MD_PATH_MAX + 8];

	md_dir(slot, dir, sizeof(dir));
	return layout_walk(dir, remove_tmp, NULL);
}

/* files of the other layout (a store formatted the other way) moved in */
static int convert_disk(int slot, bool nosync)
{
	char dir[MD_PATH_MAX + 8];
	uint64_t moved;

	md_dir(slot, dir, sizeof(dir));
	if (layout_convert(dir, md_dir_fd(slot), nosync, &moved)) {
		sd_err("cannot move the objects in %s to the %s store's "
		       "places: %m", dir, layout_tree() ? "tree" : "plain");
		return -1;
	}
	if (moved)
		sd_notice("%s: %" PRIu64 " object file(s) moved to the %s "
			  "store's places", dir, moved,
			  layout_tree() ? "tree" : "plain");
	return 0;
}

static int init_disk(int slot, bool nosync)
{
	char dir[MD_PATH_MAX + 8];

	md_dir(slot, dir, sizeof(dir));
	if (convert_disk(slot, nosync))
		return -1;
	if (store_upgrade(slot, nosync)) {
		sd_err("cannot add checksums to the objects in %s: %m", dir);
		return -1;
	}
	if (md_on_fuse(slot))
		sd_notice("%s is on FUSE: a flush syncs each written object",
			  dir);
	if (store_direct()) {
		int err = dio_probe(dir);

		if (err) {
			sd_err("-D: %s does not take O_DIRECT: %s", dir,
			       strerror(err));
			return -1;
		}
	}
	return remove_tmp_files(slot);
}

static int is_object(const char *dir, const char *name, void *arg)
{
	struct obj_key k;

	return !store_parse_key(name, &k);
}

/* BASE/obj of a node that was not multi-disk before: not used now */
static void warn_unused_base(const char *base)
{
	char dir[PATH_MAX + 8];

	snprintf(dir, sizeof(dir), "%s/obj", base);
	if (layout_walk(dir, is_object, NULL) > 0)
		sd_warn("%s holds objects that a multi-disk node does not use:"
			" recovery fetches them again (move them into a disk's"
			" obj/ to keep them)", dir);
}

int store_init_disks(const char *base, const char *disks, bool nosync)
{
	store_set_sync_off(nosync);
	csum_init();
	if (md_init(base, disks))
		return -1;
	if (md_multi())
		warn_unused_base(base);
	store_note_first_dir();
	for_each_disk(s)
		if (init_disk(s, nosync))
			return -1;
	if (stale_init()) {
		sd_err("cannot set up the stale area: %m");
		return -1;
	}
	return 0;
}

bool store_layout_known(const char *name)
{
	return !strcmp(name, "plain") || !strcmp(name, "tree");
}

int store_set_layout(const char *name)
{
	bool tree = !strcmp(name, "tree");
	int ret = SD_RES_SUCCESS;

	if (!store_layout_known(name))
		return SD_RES_NO_STORE;
	if (tree == layout_tree())
		return SD_RES_SUCCESS;
	/*
	 * A disk check (the watch, or an open that found no file) that saw
	 * a tree store without its subdirectories would fail the disk, and
	 * the node leave in the middle of a format: they are made before
	 * the tree store is set, and checks overlapping the change pass.
	 */
	layout_change(true);
	for_each_disk(s)
		if (tree && layout_make_tree(md_dir_fd(s), store_sync_off()))
			ret = SD_RES_EIO;
	if (ret)
		goto out;
	layout_set_tree(tree);
	sd_notice("object store: %s", name);
	fdc_drop_all();		/* names open under the old paths */
	for_each_disk(s)
		if (convert_disk(s, store_sync_off()))
			ret = SD_RES_EIO;
	fdc_drop_all();
out:
	layout_change(false);
	return ret;
}

int store_init(const char *base, bool nosync)
{
	return store_init_disks(base, NULL, nosync);
}

/* the object @k open, from the fd cache: on its disk, wherever it is */
static struct fdc_ent *obj_get(struct obj_key k)
{
	int first = md_disk_of(k.oid);
	struct fdc_ent *e;
	char p[MD_PATH_MAX + 32];

	md_path(p, sizeof(p), first, k, "");
	e = fdc_get(k, p);
	if (e || errno != ENOENT || !md_multi())
		return e;
	for_each_disk(s) {
		if (s == first)
			continue;
		md_path(p, sizeof(p), s, k, "");
		e = fdc_get(k, p);
		if (e || errno != ENOENT)
			return e;
	}
	errno = ENOENT;
	return NULL;
}

/*
 * @err from opening or creating an object on disk @slot.  ENOENT with
 * the disk's directory gone (removed, or its file system failed) is a
 * failed disk, not a missing object: the watch unplugs it (the node
 * leaves when it was its last) and the gateway tries the request again
 * once the cluster moved on.  Without this a write in the second before the watch notices
 * would fail with "no object".
 */
static int open_err_to_res(int slot, int err)
{
	if (err == ENOENT && !md_healthy(slot, false)) {
		store_err_to_res(EIO);	/* the next check probes */
		return SD_RES_KILLED;
	}
	return store_err_to_res(err);
}

/* @e's O_DIRECT descriptor if its data of @size bytes goes direct, or -1 */
static int data_fd(struct fdc_ent *e, uint32_t size)
{
	return dio_size_ok(size) ? fdc_dfd(e) : -1;
}

/* the data size of the object open in @e, from its checksum trailer */
static uint32_t size_of(struct obj_key k, struct fdc_ent *e)
{
	uint32_t size = fdc_size(e);

	if (size)
		return size;
	size = csum_layout(fdc_fd(e));
	if (!size)
		sd_err("object %" PRIx64 " (index %u) has no valid checksum "
		       "trailer: damaged, not served", k.oid, k.idx);
	fdc_set_size(e, size);
	return size;
}

int store_read(struct obj_key k, void *buf, uint32_t len, uint32_t off)
{
	struct fdc_ent *e;
	uint32_t size, n = len;
	int ret;

	e = obj_get(k);
	if (!e)
		return open_err_to_res(md_disk_of(k.oid), errno);
	size = size_of(k, e);
	if (!size) {
		ret = SD_RES_EIO;
		goto out;
	}
	if ((uint64_t)off + len > size) {
		/* past the end: zeros for a sparse object, else damage */
		if (!is_sparse_obj(k.oid)) {
			ret = SD_RES_EIO;
			goto out;
		}
		n = off < size ? size - off : 0;
		memset((char *)buf + n, 0, len - n);
	}
	ret = csum_read(fdc_fd(e), data_fd(e, size), k.oid, size, buf, n,
			off);
out:
	fdc_put(e);
	return ret;
}

bool store_read_nowait(struct obj_key k, void *buf, uint32_t len,
		       uint32_t off)
{
	struct fdc_ent *e = fdc_lookup(k);
	uint32_t size;
	bool done;

	if (!e)
		return false;
	size = fdc_size(e);	/* 0 until a worker has read the trailer */
	/* -D: the data is on the disk, not in the page cache */
	done = size && fdc_dfd(e) < 0 && (uint64_t)off + len <= size &&
	       csum_read_nowait(fdc_fd(e), k.oid, size, buf, len, off) ==
	       SD_RES_SUCCESS;
	fdc_put(e);
	return done;
}

bool store_write_nowait(struct obj_key k, const void *buf, uint32_t len,
			uint32_t off)
{
	struct fdc_ent *e;
	uint32_t size;
	int r = -EAGAIN;

	/* every write has its journal record: a worker's job */
	if (journal_on())
		return false;
	e = fdc_lookup_writable(k);
	if (!e)
		return false;
	size = fdc_size(e);	/* 0 until a worker has read the trailer */
	if (size)
		r = csum_write_nowait(fdc_fd(e), k.oid, size, buf, len, off);
	if (r == -EOPNOTSUPP)
		fdc_refuse_nowait(e);
	fdc_put(e);
	if (r)
		return false;
	if (!store_sync_off())
		dirty_add(k);		/* before the write is acknowledged */
	return true;
}

/* @w: a durable write may finish later (store_write_durable) */
static int write_obj(struct obj_key k, const void *buf, uint32_t len,
		     uint32_t off, bool sync, struct store_wait *w)
{
	struct fdc_ent *e;
	uint32_t size;
	int ret;

	e = obj_get(k);
	if (!e)
		return open_err_to_res(md_disk_of(k.oid), errno);
	size = size_of(k, e);
	ret = size ? csum_write(fdc_fd(e), data_fd(e, size), k.oid, size, buf,
				len, off) :
		     SD_RES_EIO;
	if (ret != SD_RES_SUCCESS || store_sync_off())
		goto out;
	if (!sync || journal_on())
		dirty_add(k);		/* before the write is acknowledged */
	if (!sync && journal_on())
		ret = journal_append(k, buf, len, off);
	else if (sync && journal_on())
		ret = w ? journal_write_async(k, buf, len, off, w) :
			  journal_write(k, buf, len, off);
	else if (sync && fdatasync(fdc_fd(e)))
		ret = store_err_to_res(errno);
out:
	fdc_put(e);
	return ret;
}

int store_write(struct obj_key k, const void *buf, uint32_t len,
		uint32_t off, bool sync)
{
	return write_obj(k, buf, len, off, sync, NULL);
}

int store_write_durable(struct obj_key k, const void *buf, uint32_t len,
			uint32_t off, struct store_wait *w)
{
	return write_obj(k, buf, len, off, true, w);
}

static int store_sync_obj(struct obj_key k)
{
	struct fdc_ent *e;
	int ret = SD_RES_SUCCESS;

	e = obj_get(k);
	if (!e)
		return store_err_to_res(errno);
	if (!store_sync_off() && fdatasync(fdc_fd(e)))
		ret = store_err_to_res(errno);
	fdc_put(e);
	return ret;
}

/* the journal's replay: a write again, over what a crash left */
static int write_unsynced(struct obj_key k, const void *buf, uint32_t len,
			  uint32_t off)
{
	int ret;

	csum_replaying(true);
	ret = store_write(k, buf, len, off, false);
	csum_replaying(false);
	return ret;
}

static int sync_dirty(void);

int store_journal_init(const char *dir, uint64_t size)
{
	static const struct journal_store ops = {
		.write = write_unsynced, .flush = sync_dirty,
		.sync_obj = store_sync_obj,
	};

	return journal_open(dir, size, &ops);
}

void store_journal_close(void)
{
	journal_close();
}

bool store_journaled(void)
{
	return journal_on();
}

int store_repair(struct obj_key k, const void *good, uint32_t len, int *nr)
{
	struct fdc_ent *e;
	uint32_t size;
	int ret = SD_RES_SUCCESS;

	*nr = 0;
	e = obj_get(k);
	if (!e)
		return store_err_to_res(errno);
	size = size_of(k, e);
	fdc_put(e);
	if (!size) {
		/* nothing to check blocks against: the whole copy goes */
		*nr = (int)csum_nr_blocks(len);
		return store_create(k, len, good, len, 0, true);
	}
	if (size != len)
		return SD_RES_INVALID_PARMS;
	e = obj_get(k);
	if (!e)
		return store_err_to_res(errno);
	*nr = csum_repair(fdc_fd(e), data_fd(e, size), k.oid, size, good);
	if (*nr < 0)
		ret = SD_RES_EIO;
	else if (*nr && !store_sync_off() && fdatasync(fdc_fd(e)))
		ret = store_err_to_res(errno);
	fdc_put(e);
	return ret;
}

uint64_t store_nr_mismatches(void)
{
	return csum_mismatches();
}

/* the directory of subdirectory @sub of disk @slot */
static int sync_dir(int slot, int sub)
{
	if (store_sync_off())
		return 0;
	return layout_sync_sub(md_dir_fd(slot), sub);
}

/* the directories of @dirs on every disk (NULL: all of them) */
static int sync_all_dirs(const struct dir_set *dirs)
{
	int ret = 0;

	for_each_disk(s)
		for (int sub = 0; sub < LAYOUT_NR_SUB; sub++)
			if ((dirs ? dir_set_has(dirs, sub) :
				    sub == LAYOUT_SUB_TOP ||
				    layout_tree()) &&
			    sync_dir(s, sub))
				ret = -1;
	return ret;
}

/*
 * Into a new file: a sparse object's all-zero 4 KiB blocks are left as
 * holes, so that an inode copied whole by recovery (12 MiB, a few KiB
 * used) takes no more room than on the node that created it.
 */
static ssize_t write_data(int fd, int dfd, uint64_t oid, const char *buf,
			  uint32_t len, uint32_t off)
{
	uint32_t pos = 0;

	if (!is_sparse_obj(oid))
		return obj_pwrite(fd, dfd, buf, len, off);
	while (pos < len) {
		/* up to the next 4 KiB boundary of the object */
		uint32_t n = CSUM_BLOCK - (off + pos) % CSUM_BLOCK;

		if (n > len - pos)
			n = len - pos;
		if (!is_zero(buf + pos, n) &&
		    xpwrite(fd, buf + pos, n, off + pos) < 0)
			return -1;
		pos += n;
	}
	return len;
}

/* rename @tmp over @p, the object @k; @tmp is gone either way */
static int replace_obj(struct obj_key k, const char *tmp, const char *p)
{
	int ret = journal_forget(k);

	if (ret == SD_RES_NO_OBJ)
		ret = SD_RES_SUCCESS;
	if (ret == SD_RES_SUCCESS && rename(tmp, p))
		ret = store_err_to_res(errno);
	if (ret != SD_RES_SUCCESS)
		unlink(tmp);
	return ret;
}

/*
 * Write a whole object to OID.tmp, then put it in place: replacing what is
 * there (rename), or only if nothing is (link, for recovery: a copy that
 * arrives late must never replace one that a newer recovery or a client
 * wrote meanwhile).
 */
static int create_obj(struct obj_key k, uint32_t obj_size, const void *buf,
		      uint32_t len, uint32_t off, bool sync, bool replace)
{
	static unsigned long tmp_seq;
	char tmp[MD_PATH_MAX + 64], p[MD_PATH_MAX + 32], sfx[32];
	int fd, dfd = -1, slot, ret = SD_RES_SUCCESS;

	if ((uint64_t)off + len > obj_size)
		return SD_RES_INVALID_PARMS;
	/* an object that exists is replaced where it is: one copy per node */
	slot = md_locate(k);
	if (slot < 0)
		slot = md_disk_of(k.oid);
	/* a temporary name of its own: concurrent creates never share one */
	snprintf(sfx, sizeof(sfx), ".%lu.tmp",
		 __atomic_fetch_add(&tmp_seq, 1, __ATOMIC_RELAXED));
	md_path(tmp, sizeof(tmp), slot, k, sfx);
	md_path(p, sizeof(p), slot, k, "");
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return open_err_to_res(slot, errno);
	/* -D: the data past the page cache (dio.c), the trailer through it */
	if (len && dio_kind(k.oid) && dio_size_ok(obj_size) &&
	    (dfd = open(tmp, O_RDWR | O_DIRECT | O_CLOEXEC)) < 0)
		goto fail;
	if (is_sparse_obj(k.oid)) {
		if (ftruncate(fd, (off_t)csum_file_size(obj_size)))
			goto fail;
	} else {
		/* returns the error number; errno is left alone */
		int err = posix_fallocate(fd, 0,
					  (off_t)csum_file_size(obj_size));

		if (err) {
			errno = err;
			goto fail;
		}
	}
	if (len && write_data(fd, dfd, k.oid, buf, len, off) < 0)
		goto fail;
	if (csum_write_new(fd, obj_size, buf, len, off))
		goto fail;
	/*
	 * Durable before it takes the object's name, even for a cached
	 * write: a rename that survived a power loss without the file's
	 * checksums would make the whole object unreadable, not just lose
	 * the unflushed write.
	 */
	if (!store_sync_off() && fdatasync(fd))
		goto fail;
	if (dfd >= 0)
		close(dfd);
	close(fd);
	if (!replace) {
		int r = link(tmp, p), err = errno;

		unlink(tmp);
		if (r && err == EEXIST)
			return SD_RES_SUCCESS;	/* a newer copy is here */
		if (r)
			return store_err_to_res(err);
	} else {
		ret = replace_obj(k, tmp, p);
		if (ret != SD_RES_SUCCESS)
			return ret;
	}
	fdc_drop(k);
	if (!sync && !store_sync_off())
		dirty_dir(layout_sub(k));
	else if (sync && sync_dir(slot, layout_sub(k)))
		return SD_RES_EIO;
	return SD_RES_SUCCESS;
fail:
	ret = store_err_to_res(errno);
	if (dfd >= 0)
		close(dfd);
	close(fd);
	unlink(tmp);
	return ret;
}

int store_create(struct obj_key k, uint32_t obj_size, const void *buf,
		 uint32_t len, uint32_t off, bool sync)
{
	return create_obj(k, obj_size, buf, len, off, sync, true);
}

int store_create_new(struct obj_key k, uint32_t obj_size, const void *buf,
		     uint32_t len, uint32_t off, bool sync)
{
	return create_obj(k, obj_size, buf, len, off, sync, false);
}

int store_remove(struct obj_key k)
{
	char p[MD_PATH_MAX + 32];
	int ret, slot = md_locate(k);

	if (slot < 0)
		return SD_RES_NO_OBJ;
	md_path(p, sizeof(p), slot, k, "");
	ret = journal_forget(k);
	if (ret != SD_RES_SUCCESS && ret != SD_RES_NO_OBJ)
		return ret;
	if (unlink(p))
		return store_err_to_res(errno);
	if (k.idx != OBJ_IDX_REPLICA) {
		/* a strip's undo records (strip.c) go with it */
		md_path(p, sizeof(p), slot, k, STRIP_UNDO_SFX);
		unlink(p);
	}
	sd_debug("object %" PRIx64 " (index %u) removed", k.oid, k.idx);
	fdc_drop(k);
	if (!store_sync_off())
		dirty_dir(layout_sub(k));
	return SD_RES_SUCCESS;
}

int store_exist(struct obj_key k)
{
	return md_locate(k) < 0 ? SD_RES_NO_OBJ : SD_RES_SUCCESS;
}

/* fdatasync the objects @keys (gone ones need nothing), then the names */
static int sync_each(const struct obj_key *keys, size_t nr,
		     const struct dir_set *dirs, size_t *done)
{
	for (*done = 0; *done < nr; (*done)++) {
		struct fdc_ent *e;
		int err = 0;

		e = obj_get(keys[*done]);
		if (!e && errno == ENOENT)
			continue;	/* removed or moved to the stale area */
		if (!e || fdatasync(fdc_fd(e)))
			err = errno;
		if (e)
			fdc_put(e);
		if (err)
			return store_err_to_res(err);
	}
	return sync_all_dirs(dirs) ? store_err_to_res(errno) : SD_RES_SUCCESS;
}

/*
 * Make every write and name change that completed before the call
 * durable: a few written objects one fdatasync each, many at once by one
 * syncfs() (cheaper than one disk flush per object), never syncfs() on
 * FUSE.  What fails stays in the set for the next flush.
 *
 * One flush at a time: a flush that took the set before us may still be
 * syncing objects we need; taking the (then empty) set and returning at
 * once would report them durable too early.  After it, what it failed
 * to sync is back in the set, and we sync it.
 */
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;

static bool any_fuse(void)
{
	for_each_disk(s)
		if (md_on_fuse(s))
			return true;
	return false;
}

static int sync_fs_all(void)
{
	int ret = SD_RES_SUCCESS;

	for_each_disk(s)
		if (syncfs(md_dir_fd(s)))
			ret = store_err_to_res(errno);
	return ret;
}

static int sync_dirty(void)
{
	size_t nr, done = 0;
	struct dir_set dirs;
	struct obj_key *keys;
	int ret;

	if (store_sync_off())
		return SD_RES_SUCCESS;
	pthread_mutex_lock(&flush_lock);
	keys = dirty_take(&nr, &dirs);
	if (nr > FLUSH_EACH_MAX && !any_fuse())
		ret = sync_fs_all();
	else
		ret = sync_each(keys, nr, &dirs, &done);
	if (ret != SD_RES_SUCCESS)
		dirty_restore(keys + done, nr - done, &dirs);
	pthread_mutex_unlock(&flush_lock);
	free(keys);
	return ret;
}

/*
 * With the journal every write has its record there, a cached one too
 * (not synced), so one sync of the journal makes them all durable and
 * the objects wait for a checkpoint (sync_dirty): a flush costs one
 * fdatasync of a file whose blocks are all allocated, however many
 * objects were written.  Names still need their directories synced.
 */
static int flush_journaled(void)
{
	struct dir_set dirs;
	int ret = journal_sync();

	if (ret != SD_RES_SUCCESS)
		return ret;
	pthread_mutex_lock(&flush_lock);
	dirty_take_dirs(&dirs);
	if (sync_all_dirs(&dirs)) {
		ret = store_err_to_res(errno);
		dirty_restore(NULL, 0, &dirs);
	}
	pthread_mutex_unlock(&flush_lock);
	return ret;
}

int store_flush(void)
{
	if (store_sync_off())
		return SD_RES_SUCCESS;
	return journal_on() ? flush_journaled() : sync_dirty();
}

static int for_each_in(int slot, int (*fn)(struct obj_key k, void *arg),
		       void *arg)
{
	char dir[MD_PATH_MAX + 8];

	md_dir(slot, dir, sizeof(dir));
	return layout_for_each_key(dir, fn, arg);
}

int store_for_each(int (*fn)(struct obj_key k, void *arg), void *arg)
{
	int ret = 0;

	for_each_disk(s) {
		ret = for_each_in(s, fn, arg);
		if (ret)
			break;
	}
	return ret;
}

static int wipe_one(const char *dir, const char *name, void *arg)
{
	char p[MD_PATH_MAX + 300];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unlink(p);
	return 0;
}

/* every file; a tree store's subdirectories stay */
static void wipe_disk(int slot)
{
	char dir[MD_PATH_MAX + 8];

	md_dir(slot, dir, sizeof(dir));
	layout_walk(dir, wipe_one, NULL);
}

int store_wipe(void)
{
	fdc_drop_all();
	for_each_disk(s)
		wipe_disk(s);
	store_purge_stale();
	sync_all_dirs(NULL);
	/* again: an fd opened while the files were going must not stay */
	fdc_drop_all();
	journal_wiped();
	return SD_RES_SUCCESS;
}

static int swap_one(int slot, void *arg)
{
	return stale_swap_dir(slot, *(uint32_t *)arg);
}

/*
 * Every object becomes a stale copy of @epoch (a node rejoining after the
 * cluster moved on), at once: each disk's object directory is swapped for
 * an empty one, store_drain_left() moves the old files in later.  A disk
 * whose swap fails keeps its objects: the caller moves them one by one.
 */
int store_stale_all(uint32_t epoch)
{
	int ret = SD_RES_SUCCESS;

	if (store_journaled()) {
		/* the stale copies keep what the journal holds for them */
		if (sync_dirty() != SD_RES_SUCCESS)
			return SD_RES_EIO;
		journal_wiped();
	}
	if (stale_left_pending())
		store_drain_left();	/* rare: a second rejoin meanwhile */
	fdc_drop_all();
	for_each_disk(s) {
		if (md_swap(s, swap_one, &epoch) || sync_dir(s, LAYOUT_SUB_TOP))
			ret = SD_RES_EIO;
	}
	return ret;
}

/* the sizes of the disks' file systems (each counted once) */
int store_stat(uint64_t *size, uint64_t *free_bytes)
{
	dev_t seen[MD_MAX_DISKS];
	int nr_seen = 0, ret = SD_RES_EIO;

	*size = *free_bytes = 0;
	for_each_disk(s) {
		struct statvfs vs;
		struct stat st;
		bool dup = false;

		if (fstat(md_dir_fd(s), &st) || fstatvfs(md_dir_fd(s), &vs))
			continue;
		for (int i = 0; i < nr_seen; i++)
			dup |= seen[i] == st.st_dev;
		ret = SD_RES_SUCCESS;
		if (dup)
			continue;
		seen[nr_seen++] = st.st_dev;
		*size += (uint64_t)vs.f_frsize * vs.f_blocks;
		*free_bytes += (uint64_t)vs.f_frsize * vs.f_bavail;
	}
	return ret;
}

/* ---- the disks ---- */

int store_md_info(struct md_disk_info *out, int max)
{
	return md_info(out, max);
}

bool store_md_multi(void)
{
	return md_multi();
}

int store_md_nr(void)
{
	return md_nr();
}

/* a disk that goes: nothing of it is used any more */
static void forget_disk(int slot)
{
	fdc_drop_all();
	stale_forget_disk(slot);
	md_unplug_slot(slot);
	fdc_drop_all();
	store_note_first_dir();
}

int store_md_plug(const char *path)
{
	char dir[PATH_MAX];
	int slot;

	if (!md_multi())
		return SD_RES_NO_SUPPORT;
	/* the sheep's working directory means nothing to whoever asks */
	if (path[0] != '/')
		return SD_RES_INVALID_PARMS;
	/* one name per directory: a disk is not plugged twice by a link */
	if (mkdir_p(path) || !realpath(path, dir)) {
		sd_err("cannot plug %s: %m", path);
		return SD_RES_EIO;
	}
	if (md_slot_of(dir) >= 0)
		return SD_RES_UNKNOWN;		/* plugged already */
	/*
	 * "the directories to be plugged will be purged" (dog.md §3.6):
	 * md_plug empties DIR/obj once it holds the disk's lock, never a
	 * disk another sheep uses
	 */
	slot = md_plug(dir);
	if (slot < 0) {
		sd_err("cannot plug %s: %m", dir);
		/* the disk's lock is another sheep's: "locked" */
		return errno == EBUSY ? SD_RES_VDI_LOCKED : SD_RES_EIO;
	}
	if (init_disk(slot, store_sync_off())) {
		forget_disk(slot);
		return SD_RES_EIO;
	}
	sd_notice("disk %s plugged", dir);
	return SD_RES_SUCCESS;
}

int store_md_unplug(const char *dir)
{
	int slot = md_slot_of(dir);

	if (!md_multi() || slot < 0)
		return SD_RES_UNKNOWN;		/* not one of ours */
	if (md_nr() == 1)
		return SD_RES_INVALID_PARMS;	/* the last one */
	forget_disk(slot);
	sd_notice("disk %s unplugged", dir);
	return SD_RES_SUCCESS;
}

int store_md_check(bool probe)
{
	char path[MD_PATH_MAX + 8];
	int failed = 0;

	for_each_disk(s) {
		if (md_healthy(s, probe))
			continue;
		md_dir(s, path, sizeof(path));
		sd_emerg("disk %s failed: unplugged, its objects are "
			 "recovered from other nodes", path);
		forget_disk(s);
		failed++;
	}
	return failed;
}
