// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The stale area (cluster.md §7.2): copies this node no longer owns, kept
 * as BASE/obj/.stale/<oid>.<epoch> until the cluster no longer needs them.
 *
 * Only the newest stale copy of an object is kept: a copy moved here is
 * always newer than any stale copy of the same object already here (the
 * working copy was created after the older one left obj/), so the older
 * one is deleted at once.  That bounds the area by the objects this node
 * has ever held, whatever the churn.  An in-memory index (oid -> epoch,
 * bytes) avoids scanning the directory for every lookup; it is built at
 * start-up and guarded by one mutex, because the calls run on I/O workers.
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
	uint64_t oid;
	uint32_t epoch;
	uint64_t bytes;		/* allocated on disk */
	struct stale_ent *next;
};

static pthread_mutex_t stale_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stale_ent *stale_hash[STALE_HASH];
static uint64_t stale_count, stale_bytes;
/* a whole store left behind, not moved in yet: BASE/obj.left.<epoch> */
static char left_dir[4200];	/* "" when there is none */
static uint32_t left_epoch;

static struct stale_ent **slot_of(uint64_t oid)
{
	struct stale_ent **pp = &stale_hash[(oid ^ (oid >> 32)) % STALE_HASH];

	while (*pp && (*pp)->oid != oid)
		pp = &(*pp)->next;
	return pp;
}

static void stale_dir(char *buf, size_t len)
{
	snprintf(buf, len, "%s/.stale", store_dir());
}

static void stale_path(char *buf, size_t len, uint64_t oid, uint32_t epoch)
{
	snprintf(buf, len, "%s/.stale/%016" PRIx64 ".%u", store_dir(), oid,
		 epoch);
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

/* record @oid's stale copy at @epoch; the caller deletes what it returns */
static uint32_t index_set(uint64_t oid, uint32_t epoch, uint64_t bytes)
{
	struct stale_ent **pp = slot_of(oid), *e = *pp;
	uint32_t old = 0;

	if (!e) {
		e = xzalloc(sizeof(*e));
		e->oid = oid;
		*pp = e;
		stale_count++;
	} else {
		old = e->epoch;
		stale_bytes -= e->bytes;
	}
	e->epoch = epoch;
	e->bytes = bytes;
	stale_bytes += bytes;
	return old;
}

static void index_del(uint64_t oid)
{
	struct stale_ent **pp = slot_of(oid), *e = *pp;

	if (!e)
		return;
	*pp = e->next;
	stale_bytes -= e->bytes;
	stale_count--;
	free(e);
}

static int parse_name(const char *name, uint64_t *oid, uint32_t *epoch)
{
	char hex[17], *end;
	unsigned long e;

	if (strlen(name) < 18 || name[16] != '.')
		return -1;
	memcpy(hex, name, 16);
	hex[16] = 0;
	*oid = strtoull(hex, &end, 16);
	if (*end)
		return -1;
	e = strtoul(name + 17, &end, 10);
	if (*end || !e || e > UINT32_MAX)
		return -1;
	*epoch = (uint32_t)e;
	return 0;
}

/*
 * Move @from (a copy of @oid) in as the stale copy of @epoch, unless a
 * newer one is there; the older one is deleted.  stale_lock held.
 */
static int move_in_locked(const char *from, uint64_t oid, uint32_t epoch)
{
	char to[4400], dir[4400];
	struct stale_ent *e;
	uint32_t old;

	/* the copy moved now is the newest: it never gets an older label */
	e = *slot_of(oid);
	if (e && e->epoch > epoch)
		epoch = e->epoch;
	stale_path(to, sizeof(to), oid, epoch);
	if (rename(from, to)) {
		int err = errno;

		stale_dir(dir, sizeof(dir));
		if (err != ENOENT || access(from, F_OK) || mkdir_p(dir) ||
		    rename(from, to))
			return store_err_to_res(err == ENOENT ? errno : err);
	}
	sd_debug("object %" PRIx64 " to the stale area (epoch %u)", oid, epoch);
	old = index_set(oid, epoch, file_bytes(to));
	if (old && old != epoch) {
		stale_path(to, sizeof(to), oid, old);
		unlink(to);
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
static void keep_hidden(const char *left)
{
	char from[4500], to[4500];
	struct dirent *de;
	DIR *d = opendir(left);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] != '.' || !strcmp(de->d_name, ".") ||
		    !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".stale"))
			continue;
		snprintf(from, sizeof(from), "%s/%s", left, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", store_dir(), de->d_name);
		if (rename(from, to))
			sd_err("cannot move %s back: %m", from);
	}
	closedir(d);
}

int stale_swap_dir(uint32_t epoch)
{
	char left[4200], from[4300], to[4400];
	int ret = 0;

	snprintf(left, sizeof(left), "%s.left.%u", store_dir(), epoch);
	pthread_mutex_lock(&stale_lock);
	if (left_dir[0]) {
		ret = -1;	/* the caller drains the one before first */
		goto out;
	}
	if (rename(store_dir(), left)) {
		ret = -1;
		goto out;
	}
	if (mkdir(store_dir(), 0755)) {
		/* the store stays where it was: the caller moves one by one */
		if (rename(left, store_dir()))
			sd_emerg("cannot put %s back: %m", store_dir());
		ret = -1;
		goto out;
	}
	snprintf(from, sizeof(from), "%s/.stale", left);
	stale_dir(to, sizeof(to));
	if (rename(from, to) && mkdir_p(to))
		ret = -1;
	keep_hidden(left);
	snprintf(left_dir, sizeof(left_dir), "%s", left);
	left_epoch = epoch;
out:
	pthread_mutex_unlock(&stale_lock);
	return ret;
}

bool stale_left_pending(void)
{
	bool pending;

	pthread_mutex_lock(&stale_lock);
	pending = left_dir[0];
	pthread_mutex_unlock(&stale_lock);
	return pending;
}

/* copies of a .stale that the swap could not move back (a crash) */
static void drain_old_stale(const char *left)
{
	char dir[4500], p[4800];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/.stale", left);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		uint64_t oid;
		uint32_t epoch;

		if (parse_name(de->d_name, &oid, &epoch))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		pthread_mutex_lock(&stale_lock);
		move_in_locked(p, oid, epoch);
		pthread_mutex_unlock(&stale_lock);
	}
	closedir(d);
}

/* move the files of @left in as stale copies of @epoch, then remove it */
static uint64_t drain_dir(const char *left, uint32_t epoch)
{
	char p[4800];
	struct dirent *de;
	uint64_t n = 0;
	DIR *d;

	drain_old_stale(left);
	d = opendir(left);
	if (d) {
		while ((de = readdir(d))) {
			uint64_t oid;

			if (store_parse_oid(de->d_name, &oid))
				continue;
			snprintf(p, sizeof(p), "%s/%s", left, de->d_name);
			pthread_mutex_lock(&stale_lock);
			if (move_in_locked(p, oid, epoch) == SD_RES_SUCCESS)
				n++;
			pthread_mutex_unlock(&stale_lock);
		}
		closedir(d);
	}
	rmdir_r(left);
	return n;
}

uint64_t store_drain_left(void)
{
	char left[4400];
	uint32_t epoch;
	uint64_t n;

	pthread_mutex_lock(&stale_lock);
	snprintf(left, sizeof(left), "%s", left_dir);
	epoch = left_epoch;
	pthread_mutex_unlock(&stale_lock);
	if (!left[0])
		return 0;
	n = drain_dir(left, epoch);
	pthread_mutex_lock(&stale_lock);
	if (!strcmp(left, left_dir))
		left_dir[0] = 0;
	pthread_mutex_unlock(&stale_lock);
	return n;
}

/* start-up: a swap that a crash cut short is finished before serving */
static int drain_leftovers(void)
{
	char base[4200], p[4500], *slash;
	const char *name;
	struct dirent *de;
	size_t len;
	DIR *d;

	snprintf(base, sizeof(base), "%s", store_dir());
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
		drain_dir(p, (uint32_t)epoch);
	}
	closedir(d);
	return 0;
}

/* build the index; older duplicates (from before this rule) are deleted */
int stale_init(void)
{
	char dir[4400], p[4400];
	struct dirent *de;
	DIR *d;

	stale_dir(dir, sizeof(dir));
	if (mkdir_p(dir))
		return -1;
	d = opendir(dir);
	if (!d)
		return -1;
	pthread_mutex_lock(&stale_lock);
	index_clear();
	while ((de = readdir(d))) {
		struct stale_ent *e;
		uint64_t oid;
		uint32_t epoch, gone;

		if (parse_name(de->d_name, &oid, &epoch))
			continue;
		e = *slot_of(oid);
		if (e && e->epoch > epoch) {
			gone = epoch;
		} else {
			stale_path(p, sizeof(p), oid, epoch);
			gone = index_set(oid, epoch, file_bytes(p));
		}
		if (gone) {
			stale_path(p, sizeof(p), oid, gone);
			unlink(p);
		}
	}
	pthread_mutex_unlock(&stale_lock);
	closedir(d);
	return drain_leftovers();
}

int store_move_to_stale(uint64_t oid, uint32_t epoch)
{
	char from[4400];
	int ret = journal_forget(oid);

	/* journaled writes synced first: the stale copy keeps them */
	if (ret != SD_RES_SUCCESS && ret != SD_RES_NO_OBJ)
		return ret;
	pthread_mutex_lock(&stale_lock);
	store_obj_path(from, sizeof(from), oid);
	ret = move_in_locked(from, oid, epoch);
	if (ret == SD_RES_SUCCESS)
		fdc_drop(oid);
	pthread_mutex_unlock(&stale_lock);
	return ret;
}

static uint32_t newest_stale(uint64_t oid)
{
	struct stale_ent *e;
	uint32_t epoch;

	pthread_mutex_lock(&stale_lock);
	e = *slot_of(oid);
	epoch = e ? e->epoch : 0;
	pthread_mutex_unlock(&stale_lock);
	return epoch;
}

/* the copy of @oid in a store left behind and not moved in yet: an fd */
static int open_left(uint64_t oid, uint32_t *epoch)
{
	char p[4300];
	int fd;

	pthread_mutex_lock(&stale_lock);
	if (!left_dir[0]) {
		pthread_mutex_unlock(&stale_lock);
		return -1;
	}
	snprintf(p, sizeof(p), "%s/%016" PRIx64, left_dir, oid);
	*epoch = left_epoch;
	pthread_mutex_unlock(&stale_lock);
	/* moved in meanwhile: ENOENT, and the index has it */
	fd = open(p, O_RDONLY | O_CLOEXEC);
	return fd;
}

int store_read_stale(uint64_t oid, void *buf, uint32_t len, uint32_t off,
		     uint32_t *stale_epoch)
{
	uint32_t epoch, size;
	char p[4400];
	int fd, ret;

	fd = open_left(oid, &epoch);
	if (fd < 0) {
		epoch = newest_stale(oid);
		if (!epoch)
			return SD_RES_NO_OBJ;
		stale_path(p, sizeof(p), oid, epoch);
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
		ret = csum_read(fd, oid, size, buf, len, off);
	}
	close(fd);
	return ret;
}

int store_drop_stale(uint64_t oid, uint32_t epoch)
{
	char p[4400];
	struct stale_ent *e;
	int ret = SD_RES_NO_OBJ;

	pthread_mutex_lock(&stale_lock);
	e = *slot_of(oid);
	/* a newer copy that arrived meanwhile is kept */
	if (e && e->epoch == epoch) {
		stale_path(p, sizeof(p), oid, epoch);
		ret = unlink(p) && errno != ENOENT ? store_err_to_res(errno) :
						     SD_RES_SUCCESS;
		index_del(oid);
	}
	pthread_mutex_unlock(&stale_lock);
	return ret;
}

int store_list_stale(uint64_t *oids, uint32_t *epochs, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&stale_lock);
	for (int i = 0; i < STALE_HASH && n < max; i++)
		for (struct stale_ent *e = stale_hash[i]; e && n < max;
		     e = e->next) {
			oids[n] = e->oid;
			epochs[n++] = e->epoch;
		}
	pthread_mutex_unlock(&stale_lock);
	return (int)n;
}

static int for_each_indexed(int (*fn)(uint64_t oid, void *arg), void *arg)
{
	size_t max = 0, n;
	uint64_t *oids;
	uint32_t *epochs;
	int ret = 0;

	pthread_mutex_lock(&stale_lock);
	max = stale_count;
	pthread_mutex_unlock(&stale_lock);
	if (!max)
		return 0;
	oids = xmalloc(max * sizeof(*oids));
	epochs = xmalloc(max * sizeof(*epochs));
	n = (size_t)store_list_stale(oids, epochs, max);
	for (size_t i = 0; i < n && !ret; i++)
		ret = fn(oids[i], arg);
	free(oids);
	free(epochs);
	return ret;
}

/* the copies in a store left behind, not moved in yet */
static int for_each_left(int (*fn)(uint64_t oid, void *arg), void *arg)
{
	char left[4400];
	struct dirent *de;
	int ret = 0;
	DIR *d;

	pthread_mutex_lock(&stale_lock);
	snprintf(left, sizeof(left), "%s", left_dir);
	pthread_mutex_unlock(&stale_lock);
	if (!left[0] || !(d = opendir(left)))
		return 0;
	while (!ret && (de = readdir(d))) {
		uint64_t oid;

		if (!store_parse_oid(de->d_name, &oid))
			ret = fn(oid, arg);
	}
	closedir(d);
	return ret;
}

/* the oids of the stale copies (they are offered to recovery too) */
int store_for_each_stale(int (*fn)(uint64_t oid, void *arg), void *arg)
{
	int ret = for_each_left(fn, arg);

	return ret ? ret : for_each_indexed(fn, arg);
}

int store_purge_stale(void)
{
	char p[4400];
	int ret;

	stale_dir(p, sizeof(p));
	pthread_mutex_lock(&stale_lock);
	rmdir_r(p);
	ret = mkdir_p(p) ? SD_RES_EIO : SD_RES_SUCCESS;
	index_clear();
	/* what a rejoin left and the worker has not moved in is stale too */
	if (left_dir[0])
		rmdir_r(left_dir);
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
