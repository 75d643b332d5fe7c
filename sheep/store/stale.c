// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The stale area (cluster.md §7.2): copies this node no longer owns, kept
 * as DISK/obj/.stale/<oid>.<epoch> (a strip: <oid>_<idx>.<epoch>; on the
 * disk that held the object) until the cluster no longer needs them.  A
 * strip and the replica of one oid, or two strips of it, are objects of
 * their own here as everywhere in the store.
 *
 * Only the newest stale copy of an object is kept: a copy moved here is
 * always newer than any stale copy of the same object already here (the
 * working copy was created after the older one left obj/), so the older
 * one is deleted at once.  That bounds the area by the objects this node
 * has ever held, whatever the churn.  An in-memory index (key -> epoch,
 * bytes) avoids scanning the directory for every lookup; it is built at
 * start-up and guarded by one mutex, because the calls run on I/O workers.
 *
 * A strip's stale copy that came from a store left behind keeps its
 * undo file beside it (<copy>.undo): the version it had settled at, from
 * which recovery may rebuild when nothing else is left (strip.c,
 * doc/erasure-coding.md §5).  A copy without one has no version anybody
 * may rely on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sheepdog_proto.h"
#include "fdcache.h"
#include "store.h"
#include "store_int.h"
#include "util.h"

#define STALE_HASH	4096

struct stale_ent {
	struct obj_key key;
	uint32_t epoch;
	int slot;		/* the disk it is on */
	uint64_t bytes;		/* allocated on disk */
	struct stale_ent *next;
};

static pthread_mutex_t stale_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stale_ent *stale_hash[STALE_HASH];
static uint64_t stale_count, stale_bytes;
/* per disk, a whole store left behind, not moved in: DISK/obj.left.<epoch> */
static char left_dir[MD_MAX_DISKS][MD_PATH_MAX + 32];	/* "" if none */
static uint32_t left_epoch[MD_MAX_DISKS];

static struct stale_ent **slot_of(struct obj_key k)
{
	struct stale_ent **pp = &stale_hash[obj_key_hash(k) % STALE_HASH];

	while (*pp && !obj_key_eq((*pp)->key, k))
		pp = &(*pp)->next;
	return pp;
}

static void stale_dir(int slot, char *buf, size_t len)
{
	char dir[MD_PATH_MAX + 8];

	md_dir(slot, dir, sizeof(dir));
	snprintf(buf, len, "%s/.stale", dir);
}

static void stale_path(int slot, char *buf, size_t len, struct obj_key k,
		       uint32_t epoch)
{
	char dir[MD_PATH_MAX + 8], name[STORE_NAME_MAX];

	md_dir(slot, dir, sizeof(dir));
	store_key_name(name, sizeof(name), k);
	snprintf(buf, len, "%s/.stale/%s.%u", dir, name, epoch);
}

/* a stale copy's undo file (strips), or the copy and it */
static void unlink_undo(const char *p)
{
	char u[MD_PATH_MAX + 96];

	snprintf(u, sizeof(u), "%s%s", p, STRIP_UNDO_SFX);
	unlink(u);
}

static void unlink_copy(const char *p)
{
	unlink(p);
	unlink_undo(p);
}

static uint64_t file_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_blocks * 512;
}

static void index_clear(void)
{
	for (int i = 0; i < STALE_HASH; i++) {
		while (stale_hash[i]) {
			struct stale_ent *e = stale_hash[i];

			stale_hash[i] = e->next;
			free(e);
		}
	}
	stale_count = stale_bytes = 0;
}

/*
 * record @k's stale copy at @epoch on disk @slot; the caller deletes the
 * one it replaces (*@old_epoch on *@old_slot, epoch 0 if none)
 */
static void index_set(struct obj_key k, int slot, uint32_t epoch,
		      uint64_t bytes, int *old_slot, uint32_t *old_epoch)
{
	struct stale_ent **pp = slot_of(k), *e = *pp;

	*old_epoch = 0;
	*old_slot = -1;
	if (!e) {
		e = xzalloc(sizeof(*e));
		e->key = k;
		*pp = e;
		stale_count++;
	} else {
		*old_epoch = e->epoch;
		*old_slot = e->slot;
		stale_bytes -= e->bytes;
	}
	e->epoch = epoch;
	e->slot = slot;
	e->bytes = bytes;
	stale_bytes += bytes;
}

static void index_del(struct obj_key k)
{
	struct stale_ent **pp = slot_of(k), *e = *pp;

	if (!e)
		return;
	*pp = e->next;
	stale_bytes -= e->bytes;
	stale_count--;
	free(e);
}

/* a stale copy's name: an object's, then ".<epoch>" */
static int parse_name(const char *name, struct obj_key *k, uint32_t *epoch)
{
	const char *rest = store_parse_key_prefix(name, k);
	char *end;
	unsigned long e;

	if (!rest || rest[0] != '.' || rest[1] < '0' || rest[1] > '9')
		return -1;
	e = strtoul(rest + 1, &end, 10);
	if (*end || !e || e > UINT32_MAX)
		return -1;
	*epoch = (uint32_t)e;
	return 0;
}

/*
 * Move @from (a copy of @k) in as the stale copy of @epoch, unless a
 * newer one is there; the older one is deleted.  stale_lock held.
 */
static int move_in_locked(const char *from, int slot, struct obj_key k,
			  uint32_t epoch)
{
	char to[MD_PATH_MAX + 64], dir[MD_PATH_MAX + 16];
	struct stale_ent *e;
	uint32_t old;
	int old_slot;

	/* the copy moved now is the newest: it never gets an older label */
	e = *slot_of(k);
	if (e && e->epoch > epoch)
		epoch = e->epoch;
	stale_path(slot, to, sizeof(to), k, epoch);
	/* the undo file of a copy this one replaces is not its own */
	unlink_undo(to);
	if (rename(from, to)) {
		int err = errno;

		stale_dir(slot, dir, sizeof(dir));
		if (err != ENOENT || access(from, F_OK) || mkdir_p(dir) ||
		    rename(from, to))
			return store_err_to_res(err == ENOENT ? errno : err);
	}
	sd_debug("object %" PRIx64 " (index %u) to the stale area (epoch %u)",
		 k.oid, k.idx, epoch);
	index_set(k, slot, epoch, file_bytes(to), &old_slot, &old);
	if (old && (old != epoch || old_slot != slot) &&
	    md_in_use(old_slot)) {
		stale_path(old_slot, to, sizeof(to), k, old);
		unlink_copy(to);
	}
	return SD_RES_SUCCESS;
}

/* ---- a whole store left behind (store_stale_all) ---- */

/*
 * A node that rejoins after the cluster moved on makes every object a
 * stale copy.  One rename per object takes seconds for a big store, on
 * the main loop, and the node must serve none of them meanwhile.  So
 * BASE/obj is swapped at once for an empty one (the old one becomes
 * BASE/obj.left.<epoch>, its .stale moved back), and stale_drain_left()
 * moves the old files in later, in a worker.  Until then a stale lookup
 * looks there first: those copies are newer than any in the stale area.
 */
/*
 * The store's own files (names starting with a dot: the checksum upgrade
 * marker; .stale is moved first) go back into the new object directory:
 * without the marker the next start would take the store for one
 * written without checksums.
 */
static void keep_hidden(int slot, const char *left)
{
	char from[MD_PATH_MAX + 300], to[MD_PATH_MAX + 300];
	char dir[MD_PATH_MAX + 8];
	struct dirent *de;
	DIR *d = opendir(left);

	if (!d)
		return;
	md_dir(slot, dir, sizeof(dir));
	while ((de = readdir(d))) {
		if (de->d_name[0] != '.' || !strcmp(de->d_name, ".") ||
		    !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".stale"))
			continue;
		snprintf(from, sizeof(from), "%s/%s", left, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", dir, de->d_name);
		if (rename(from, to))
			sd_err("cannot move %s back: %m", from);
	}
	closedir(d);
}

/* a tree store's subdirectories in the new object directory @dir */
static int make_layout(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (fd < 0)
		return -1;
	ret = layout_make(fd, store_sync_off());
	close(fd);
	return ret;
}

int stale_swap_dir(int slot, uint32_t epoch)
{
	char dir[MD_PATH_MAX + 8], left[MD_PATH_MAX + 32];
	char from[MD_PATH_MAX + 48], to[MD_PATH_MAX + 48];
	bool made;
	int ret = 0;

	md_dir(slot, dir, sizeof(dir));
	snprintf(left, sizeof(left), "%s.left.%u", dir, epoch);
	pthread_mutex_lock(&stale_lock);
	if (left_dir[slot][0]) {
		ret = -1;	/* the caller drains the one before first */
		goto out;
	}
	if (rename(dir, left)) {
		ret = -1;
		goto out;
	}
	made = !mkdir(dir, 0755);
	if (!made || make_layout(dir)) {
		/* the store stays where it was: the caller moves one by one */
		if (made)
			rmdir_r(dir);	/* ours, and empty but for subdirs */
		if (rename(left, dir))
			sd_emerg("cannot put %s back: %m", dir);
		ret = -1;
		goto out;
	}
	snprintf(from, sizeof(from), "%s/.stale", left);
	stale_dir(slot, to, sizeof(to));
	if (rename(from, to) && mkdir_p(to))
		ret = -1;
	keep_hidden(slot, left);
	snprintf(left_dir[slot], sizeof(left_dir[slot]), "%s", left);
	left_epoch[slot] = epoch;
out:
	pthread_mutex_unlock(&stale_lock);
	return ret;
}

bool stale_left_pending(void)
{
	bool pending = false;

	pthread_mutex_lock(&stale_lock);
	for (int s = 0; s < MD_MAX_DISKS; s++)
		pending |= left_dir[s][0] != 0;
	pthread_mutex_unlock(&stale_lock);
	return pending;
}

/* copies of a .stale that the swap could not move back (a crash) */
static void drain_old_stale(int slot, const char *left)
{
	char dir[MD_PATH_MAX + 64], p[MD_PATH_MAX + 320];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/.stale", left);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct obj_key k;
		uint32_t epoch;

		if (parse_name(de->d_name, &k, &epoch))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		pthread_mutex_lock(&stale_lock);
		move_in_locked(p, slot, k, epoch);
		pthread_mutex_unlock(&stale_lock);
	}
	closedir(d);
}

/*
 * The undo file @undo of a strip left behind goes beside @k's newest
 * stale copy, just moved in from there; stale_lock held
 */
static void keep_undo_locked(struct obj_key k, const char *undo)
{
	char p[MD_PATH_MAX + 96];
	struct stale_ent *e = *slot_of(k);

	if (!e)
		return;
	stale_path(e->slot, p, sizeof(p) - sizeof(STRIP_UNDO_SFX), k,
		   e->epoch);
	strcat(p, STRIP_UNDO_SFX);
	if (rename(undo, p) && errno != ENOENT)
		sd_warn("cannot keep the undo file of strip %" PRIx64
			" (index %u): %m", k.oid, k.idx);
}

struct drain {
	int slot;
	uint32_t epoch;
	uint64_t n;
};

/* one file of a store left behind in as a stale copy, a strip's undo too */
static int drain_one(const char *dir, const char *name, void *arg)
{
	char p[MD_PATH_MAX + 320], u[MD_PATH_MAX + 340];
	struct drain *dr = arg;
	struct obj_key k;

	if (store_parse_key(name, &k))
		return 0;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	snprintf(u, sizeof(u), "%s%s", p, STRIP_UNDO_SFX);
	pthread_mutex_lock(&stale_lock);
	if (move_in_locked(p, dr->slot, k, dr->epoch) == SD_RES_SUCCESS) {
		dr->n++;
		if (k.idx != OBJ_IDX_REPLICA)
			keep_undo_locked(k, u);
	}
	pthread_mutex_unlock(&stale_lock);
	return 0;
}

/*
 * move the files of @left (in its subdirectories too: a tree store) in
 * as stale copies of @epoch, then remove it
 */
static uint64_t drain_dir(int slot, const char *left, uint32_t epoch)
{
	struct drain dr = { .slot = slot, .epoch = epoch };

	drain_old_stale(slot, left);
	layout_walk(left, drain_one, &dr);
	rmdir_r(left);
	return dr.n;
}

static uint64_t drain_left_of(int slot)
{
	char left[MD_PATH_MAX + 32];
	uint32_t epoch;
	uint64_t n;

	pthread_mutex_lock(&stale_lock);
	snprintf(left, sizeof(left), "%.*s", (int)sizeof(left) - 1,
		 left_dir[slot]);
	epoch = left_epoch[slot];
	pthread_mutex_unlock(&stale_lock);
	if (!left[0])
		return 0;
	n = drain_dir(slot, left, epoch);
	pthread_mutex_lock(&stale_lock);
	if (!strcmp(left, left_dir[slot]))
		left_dir[slot][0] = 0;
	pthread_mutex_unlock(&stale_lock);
	return n;
}

uint64_t store_drain_left(void)
{
	uint64_t n = 0;

	for (int s = md_next(-1); s >= 0; s = md_next(s))
		n += drain_left_of(s);
	return n;
}

/* start-up: a swap that a crash cut short is finished before serving */
static int drain_leftovers(int slot)
{
	char base[MD_PATH_MAX + 8], p[MD_PATH_MAX + 300], *slash;
	const char *name;
	struct dirent *de;
	size_t len;
	DIR *d;

	md_dir(slot, base, sizeof(base));
	slash = strrchr(base, '/');
	if (!slash)
		return 0;
	name = slash + 1;
	len = strlen(name);
	*slash = 0;
	d = opendir(base);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char *end;
		unsigned long epoch;

		if (strncmp(de->d_name, name, len) ||
		    strncmp(de->d_name + len, ".left.", 6))
			continue;
		epoch = strtoul(de->d_name + len + 6, &end, 10);
		if (*end || !epoch || epoch > UINT32_MAX)
			continue;
		snprintf(p, sizeof(p), "%s/%s", base, de->d_name);
		sd_notice("%s: moving what a cut-short rejoin left into the "
			  "stale area", p);
		drain_dir(slot, p, (uint32_t)epoch);
	}
	closedir(d);
	return 0;
}

/* index the stale area of a disk; older duplicates are deleted */
static int index_disk(int slot)
{
	char dir[MD_PATH_MAX + 16], p[MD_PATH_MAX + 64];
	struct dirent *de;
	DIR *d;

	stale_dir(slot, dir, sizeof(dir));
	if (mkdir_p(dir))
		return -1;
	d = opendir(dir);
	if (!d)
		return -1;
	pthread_mutex_lock(&stale_lock);
	while ((de = readdir(d))) {
		struct stale_ent *e;
		struct obj_key k;
		uint32_t epoch, gone;
		int gone_slot;

		if (parse_name(de->d_name, &k, &epoch))
			continue;
		e = *slot_of(k);
		if (e && e->epoch > epoch) {
			gone = epoch;
			gone_slot = slot;
		} else {
			stale_path(slot, p, sizeof(p), k, epoch);
			index_set(k, slot, epoch, file_bytes(p), &gone_slot,
				  &gone);
		}
		if (gone) {
			stale_path(gone_slot, p, sizeof(p), k, gone);
			unlink_copy(p);
		}
	}
	pthread_mutex_unlock(&stale_lock);
	closedir(d);
	return drain_leftovers(slot);
}

int stale_init(void)
{
	pthread_mutex_lock(&stale_lock);
	index_clear();
	memset(left_dir, 0, sizeof(left_dir));
	pthread_mutex_unlock(&stale_lock);
	for (int s = md_next(-1); s >= 0; s = md_next(s))
		if (index_disk(s))
			return -1;
	return 0;
}

void stale_forget_disk(int slot)
{
	pthread_mutex_lock(&stale_lock);
	for (int i = 0; i < STALE_HASH; i++) {
		struct stale_ent **pp = &stale_hash[i];

		while (*pp) {
			struct stale_ent *e = *pp;

			if (e->slot != slot) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			stale_bytes -= e->bytes;
			stale_count--;
			free(e);
		}
	}
	left_dir[slot][0] = 0;
	pthread_mutex_unlock(&stale_lock);
}

int store_move_to_stale(struct obj_key k, uint32_t epoch)
{
	char from[MD_PATH_MAX + 32];
	int slot, ret = journal_forget(k);

	/* journaled writes synced first: the stale copy keeps them */
	if (ret != SD_RES_SUCCESS && ret != SD_RES_NO_OBJ)
		return ret;
	slot = md_locate(k);
	if (slot < 0)
		return SD_RES_NO_OBJ;
	pthread_mutex_lock(&stale_lock);
	md_path(from, sizeof(from), slot, k, "");
	ret = move_in_locked(from, slot, k, epoch);
	if (ret == SD_RES_SUCCESS)
		fdc_drop(k);
	pthread_mutex_unlock(&stale_lock);
	return ret;
}

static uint32_t newest_stale(struct obj_key k, int *slot)
{
	struct stale_ent *e;
	uint32_t epoch;

	pthread_mutex_lock(&stale_lock);
	e = *slot_of(k);
	epoch = e ? e->epoch : 0;
	*slot = e ? e->slot : -1;
	pthread_mutex_unlock(&stale_lock);
	return epoch;
}

/*
 * The path of @k in a store left behind and not moved in yet, in @buf,
 * and the epoch it is left at; 0, or -1 if no such store holds it
 */
static int find_left(struct obj_key k, char *buf, size_t len, uint32_t *epoch)
{
	char name[STORE_NAME_MAX + 16];

	layout_rel(name, sizeof(name), k, "");
	for (int s = 0; s < MD_MAX_DISKS; s++) {
		uint32_t e;

		pthread_mutex_lock(&stale_lock);
		if (!left_dir[s][0]) {
			pthread_mutex_unlock(&stale_lock);
			continue;
		}
		snprintf(buf, len, "%.*s/%s", (int)sizeof(left_dir[s]) - 1,
			 left_dir[s], name);
		e = left_epoch[s];
		pthread_mutex_unlock(&stale_lock);
		if (!access(buf, F_OK)) {
			if (epoch)
				*epoch = e;
			return 0;
		}
	}
	return -1;
}

/* the copy of @k in a store left behind and not moved in yet: an fd */
static int open_left(struct obj_key k, uint32_t *epoch)
{
	char p[MD_PATH_MAX + 64];

	/* moved in meanwhile: -1, and the index has it */
	if (find_left(k, p, sizeof(p), epoch))
		return -1;
	return open(p, O_RDONLY | O_CLOEXEC);
}

int store_read_stale(struct obj_key k, void *buf, uint32_t len, uint32_t off,
		     uint32_t *stale_epoch)
{
	uint32_t epoch, size;
	char p[MD_PATH_MAX + 64];
	int fd, ret, slot;

	fd = open_left(k, &epoch);
	if (fd < 0) {
		epoch = newest_stale(k, &slot);
		if (!epoch)
			return SD_RES_NO_OBJ;
		stale_path(slot, p, sizeof(p), k, epoch);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return store_err_to_res(errno);
	}
	*stale_epoch = epoch;
	size = csum_layout(fd);
	if (!size) {
		ret = SD_RES_EIO;
	} else if ((uint64_t)off + len > size) {
		ret = SD_RES_INVALID_PARMS;
	} else {
		ret = csum_read(fd, -1, k.oid, size, buf, len, off);
	}
	close(fd);
	return ret;
}

int stale_copy_path(struct obj_key k, char *buf, size_t len)
{
	struct stale_ent *e;
	int ret = -1;

	if (!find_left(k, buf, len, NULL))
		return 0;
	pthread_mutex_lock(&stale_lock);
	e = *slot_of(k);
	if (e) {
		stale_path(e->slot, buf, len, k, e->epoch);
		ret = 0;
	}
	pthread_mutex_unlock(&stale_lock);
	return ret;
}

int store_drop_stale(struct obj_key k, uint32_t epoch)
{
	char p[MD_PATH_MAX + 64];
	struct stale_ent *e;
	int ret = SD_RES_NO_OBJ;

	pthread_mutex_lock(&stale_lock);
	e = *slot_of(k);
	/* a newer copy that arrived meanwhile is kept */
	if (e && e->epoch == epoch) {
		stale_path(e->slot, p, sizeof(p), k, epoch);
		ret = unlink(p) && errno != ENOENT ? store_err_to_res(errno) :
						     SD_RES_SUCCESS;
		unlink_undo(p);
		index_del(k);
	}
	pthread_mutex_unlock(&stale_lock);
	return ret;
}

int store_list_stale(struct obj_key *keys, uint32_t *epochs, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&stale_lock);
	for (int i = 0; i < STALE_HASH && n < max; i++)
		for (struct stale_ent *e = stale_hash[i]; e && n < max;
		     e = e->next) {
			keys[n] = e->key;
			epochs[n++] = e->epoch;
		}
	pthread_mutex_unlock(&stale_lock);
	return (int)n;
}

static int for_each_indexed(int (*fn)(struct obj_key k, void *arg),
			    void *arg)
{
	size_t max = 0, n;
	struct obj_key *keys;
	uint32_t *epochs;
	int ret = 0;

	pthread_mutex_lock(&stale_lock);
	max = stale_count;
	pthread_mutex_unlock(&stale_lock);
	if (!max)
		return 0;
	keys = xmalloc(max * sizeof(*keys));
	epochs = xmalloc(max * sizeof(*epochs));
	n = (size_t)store_list_stale(keys, epochs, max);
	for (size_t i = 0; i < n && !ret; i++)
		ret = fn(keys[i], arg);
	free(keys);
	free(epochs);
	return ret;
}

/* the copies in a store left behind, not moved in yet */
static int for_each_left(int (*fn)(struct obj_key k, void *arg), void *arg)
{
	char left[MD_PATH_MAX + 32];
	int ret = 0;

	for (int s = 0; s < MD_MAX_DISKS && !ret; s++) {
		pthread_mutex_lock(&stale_lock);
		snprintf(left, sizeof(left), "%.*s", (int)sizeof(left) - 1,
			 left_dir[s]);
		pthread_mutex_unlock(&stale_lock);
		/* one drained and removed meanwhile has nothing left */
		if (left[0] && !access(left, F_OK))
			ret = layout_for_each_key(left, fn, arg);
	}
	return ret;
}

/* the keys of the stale copies (they are offered to recovery too) */
int store_for_each_stale(int (*fn)(struct obj_key k, void *arg), void *arg)
{
	int ret = for_each_left(fn, arg);

	return ret ? ret : for_each_indexed(fn, arg);
}

int store_purge_stale(void)
{
	char p[MD_PATH_MAX + 16];
	int ret = SD_RES_SUCCESS;

	pthread_mutex_lock(&stale_lock);
	for (int s = md_next(-1); s >= 0; s = md_next(s)) {
		stale_dir(s, p, sizeof(p));
		rmdir_r(p);
		if (mkdir_p(p))
			ret = SD_RES_EIO;
	}
	index_clear();
	/* what a rejoin left and the worker has not moved in is stale too */
	for (int s = 0; s < MD_MAX_DISKS; s++)
		if (left_dir[s][0])
			rmdir_r(left_dir[s]);
	pthread_mutex_unlock(&stale_lock);
	return ret;
}

void store_stale_usage(uint64_t *count, uint64_t *bytes)
{
	pthread_mutex_lock(&stale_lock);
	*count = stale_count;
	*bytes = stale_bytes;
	pthread_mutex_unlock(&stale_lock);
}

int store_nr_stale(void)
{
	uint64_t count, bytes;

	store_stale_usage(&count, &bytes);
	return (int)count;
}
