// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The disks of a node (cluster.md §2.5).  `sheep BASE` keeps its objects in
 * BASE/obj: one disk.  `sheep BASE,DIR1,DIR2...` keeps them in DIR1/obj,
 * DIR2/obj, ... (a subdirectory, so that DIRn may be a mount point: the
 * rejoin swap renames the object directory), each with its own stale area.
 *
 * A new object goes to the disk its hash picks on a ring of points: each
 * disk has one point per 16 MiB of its file system's size, the first
 * sd_hash_next(sd_hash(path)), each next one sd_hash_next() of the one
 * before; the disk of an object is the one owning the first point at or
 * after sd_hash_oid(oid), wrapping.  An object stays on the disk where it
 * was created: after a plug the ring differs, and an object not found on
 * its ring's disk is looked for on the others (Sheepdog moves it on that
 * occasion; Kelpie leaves it, so that no copy between file systems can
 * race a write).  A disk is known by its slot, which stays the same while
 * the disk is in use.
 *
 * The table changes only by plug and unplug (md_lock written); lookups
 * take it for reading.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "hash.h"
#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "store_int.h"
#include "util.h"

#define MD_POINT_BYTES	(16ULL << 20)
#define MD_MAX_POINTS	(1u << 22)	/* 64 TiB of disks in 16 MiB */
#define FUSE_MAGIC	0x65735546

struct md_disk {
	bool used;
	bool on_fuse;
	int dir_fd;
	int lock_fd;			/* DIR/lock (store/lock.c), or -1 */
	uint64_t size;
	char path[MD_PATH_MAX];		/* as given: DIR (or BASE) */
	char dir[MD_PATH_MAX + 8];	/* where the objects are */
};

struct md_point {
	uint64_t hash;
	int slot;
};

static pthread_rwlock_t md_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct md_disk disks[MD_MAX_DISKS];
static struct md_point *points;
static size_t nr_points;
static bool multi;		/* BASE,DIR...: disks may be plugged */
static char md_base[MD_PATH_MAX];	/* BASE: its lock is sheep's own */
/* a rejoin swapping an object directory, and the health checks */
static pthread_mutex_t swap_lock = PTHREAD_MUTEX_INITIALIZER;

static int md_nr_locked(void);

static int point_cmp(const void *a, const void *b)
{
	const struct md_point *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->slot - y->slot;
}

static uint64_t points_of(uint64_t size)
{
	uint64_t n = (size + MD_POINT_BYTES - 1) / MD_POINT_BYTES;

	return n ? n : 1;
}

/* md_lock written */
static int ring_rebuild(void)
{
	struct md_point *p;
	size_t n = 0, k = 0;

	for (int s = 0; s < MD_MAX_DISKS; s++)
		if (disks[s].used)
			n += points_of(disks[s].size);
	if (n > MD_MAX_POINTS)
		return -1;
	p = xzalloc((n ? n : 1) * sizeof(*p));
	for (int s = 0; s < MD_MAX_DISKS; s++) {
		uint64_t h;

		if (!disks[s].used)
			continue;
		h = sd_hash(disks[s].path, strlen(disks[s].path));
		for (uint64_t i = 0; i < points_of(disks[s].size); i++) {
			h = sd_hash_next(h);
			p[k++] = (struct md_point){ .hash = h, .slot = s };
		}
	}
	qsort(p, n, sizeof(*p), point_cmp);
	free(points);
	points = p;
	nr_points = n;
	return 0;
}

/* the slot a disk of @path would take (md_lock held) */
static int slot_of_path(const char *path)
{
	for (int s = 0; s < MD_MAX_DISKS; s++)
		if (disks[s].used && !strcmp(disks[s].path, path))
			return s;
	return -1;
}

static int free_slot(void)
{
	for (int s = 0; s < MD_MAX_DISKS; s++)
		if (!disks[s].used)
			return s;
	return -1;
}

/* open @d's object directory, creating it; fill in its size */
static int disk_open(struct md_disk *d)
{
	struct statvfs vs;
	struct statfs fs;

	if (mkdir_p(d->dir))
		return -1;
	d->dir_fd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->dir_fd < 0)
		return -1;
	if (fstatvfs(d->dir_fd, &vs)) {
		close(d->dir_fd);
		d->dir_fd = -1;
		return -1;
	}
	/* a tree store's subdirectories, before any object goes there */
	if (layout_make(d->dir_fd, store_sync_off())) {
		close(d->dir_fd);
		d->dir_fd = -1;
		return -1;
	}
	d->size = (uint64_t)vs.f_frsize * vs.f_blocks;
	d->on_fuse = !fstatfs(d->dir_fd, &fs) && fs.f_type == FUSE_MAGIC;
	return 0;
}

/*
 * A disk other than BASE (whose lock sheep holds) is locked for this
 * daemon alone: two sheep on one disk would share its objects
 */
static int disk_lock(struct md_disk *d)
{
	char path[MD_PATH_MAX + 8], holder[32];

	if (!strcmp(d->path, md_base))
		return 0;
	if (mkdir_p(d->path)) {
		sd_err("cannot use the disk %s: %m", d->path);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/lock", d->path);
	d->lock_fd = store_lock_take(path, holder, sizeof(holder));
	if (d->lock_fd >= 0) {
		store_lock_note_pid(d->lock_fd);
		return 0;
	}
	if (d->lock_fd == -EWOULDBLOCK) {
		sd_err("the disk %s is in use by another sheep (pid %s): one "
		       "disk serves one daemon", d->path, holder);
		errno = EBUSY;
	} else {
		errno = -d->lock_fd;
		sd_err("cannot lock the disk %s: %m", path);
	}
	d->lock_fd = -1;
	return -1;
}

/* @purge: empty DIR/obj first, once the disk is locked (a plug) */
static int add_disk(const char *path, bool purge)
{
	struct md_disk *d;
	int s;

	if (!*path || strlen(path) >= MD_PATH_MAX) {
		sd_err("disk path '%s' is empty or too long", path);
		errno = EINVAL;
		return -1;
	}
	if (slot_of_path(path) >= 0) {
		errno = EEXIST;
		return -1;
	}
	s = free_slot();
	if (s < 0) {
		sd_err("at most %d disks", MD_MAX_DISKS);
		errno = ENOSPC;
		return -1;
	}
	d = &disks[s];
	memset(d, 0, sizeof(*d));
	d->lock_fd = -1;
	snprintf(d->path, sizeof(d->path), "%s", path);
	snprintf(d->dir, sizeof(d->dir), "%s/obj", path);
	if (disk_lock(d))
		return -1;
	if (purge)
		rmdir_r(d->dir);
	if (disk_open(d)) {
		sd_err("cannot use %s: %m", d->dir);
		if (d->lock_fd >= 0)
			close(d->lock_fd);
		return -1;
	}
	d->used = true;
	return s;
}

/*
 * A worker may still hold the disk's directory fd (a sync, a lookup)
 * when it goes: the fd is pointed at "/" instead of being closed, so that
 * it can never name a file opened later.  One fd per unplug stays open.
 */
static void drop_disk(int s)
{
	int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (disks[s].dir_fd >= 0) {
		if (root < 0 || dup2(root, disks[s].dir_fd) < 0)
			close(disks[s].dir_fd);
	}
	if (root >= 0)
		close(root);
	if (disks[s].lock_fd >= 0)
		close(disks[s].lock_fd);
	memset(&disks[s], 0, sizeof(disks[s]));
	disks[s].dir_fd = -1;
	disks[s].lock_fd = -1;
}

int md_init(const char *base, const char *list)
{
	char *copy, *tok, *save = NULL;
	int ret = 0;

	pthread_rwlock_wrlock(&md_lock);
	for (int s = 0; s < MD_MAX_DISKS; s++)
		if (disks[s].used)
			drop_disk(s);
	multi = list && *list;
	snprintf(md_base, sizeof(md_base), "%s", base);
	if (!multi) {
		ret = add_disk(base, false) < 0 ? -1 : 0;
		goto out;
	}
	copy = xstrdup(list);
	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save))
		if (add_disk(tok, false) < 0) {
			if (errno == EEXIST)
				sd_err("disk %s is listed twice", tok);
			ret = -1;
		}
	free(copy);
	if (!ret && md_nr_locked() == 0) {
		sd_err("no disk in '%s'", list);
		ret = -1;
	}
out:
	if (!ret && ring_rebuild()) {
		sd_err("the disks are too large for the ring");
		ret = -1;
	}
	pthread_rwlock_unlock(&md_lock);
	return ret;
}

static int md_nr_locked(void)
{
	int n = 0;

	for (int s = 0; s < MD_MAX_DISKS; s++)
		n += disks[s].used;
	return n;
}

int md_nr(void)
{
	int n;

	pthread_rwlock_rdlock(&md_lock);
	n = md_nr_locked();
	pthread_rwlock_unlock(&md_lock);
	return n;
}

bool md_multi(void)
{
	return multi;
}

int md_next(int slot)
{
	int next = -1;

	pthread_rwlock_rdlock(&md_lock);
	for (int s = slot + 1; s < MD_MAX_DISKS; s++)
		if (disks[s].used) {
			next = s;
			break;
		}
	pthread_rwlock_unlock(&md_lock);
	return next;
}

bool md_in_use(int slot)
{
	bool used;

	if (slot < 0 || slot >= MD_MAX_DISKS)
		return false;
	pthread_rwlock_rdlock(&md_lock);
	used = disks[slot].used;
	pthread_rwlock_unlock(&md_lock);
	return used;
}

/* DIR/obj of @slot into @buf ("" if the slot is free) */
void md_dir(int slot, char *buf, size_t len)
{
	pthread_rwlock_rdlock(&md_lock);
	snprintf(buf, len, "%s", slot >= 0 && slot < MD_MAX_DISKS &&
		 disks[slot].used ? disks[slot].dir : "");
	pthread_rwlock_unlock(&md_lock);
}

int md_dir_fd(int slot)
{
	int fd;

	pthread_rwlock_rdlock(&md_lock);
	fd = slot >= 0 && slot < MD_MAX_DISKS && disks[slot].used ?
	     disks[slot].dir_fd : -1;
	pthread_rwlock_unlock(&md_lock);
	return fd;
}

bool md_on_fuse(int slot)
{
	bool fuse;

	pthread_rwlock_rdlock(&md_lock);
	fuse = slot >= 0 && slot < MD_MAX_DISKS && disks[slot].on_fuse;
	pthread_rwlock_unlock(&md_lock);
	return fuse;
}

void md_path(char *buf, size_t len, int slot, struct obj_key k,
	     const char *sfx)
{
	char name[STORE_NAME_MAX + 16];

	layout_rel(name, sizeof(name), k, "");
	pthread_rwlock_rdlock(&md_lock);
	snprintf(buf, len, "%s/%s%s",
		 slot >= 0 && slot < MD_MAX_DISKS && disks[slot].used ?
		 disks[slot].dir : "/nonexistent", name, sfx);
	pthread_rwlock_unlock(&md_lock);
}

int md_disk_of(uint64_t oid)
{
	uint64_t h;
	size_t lo = 0, hi;
	int slot = -1;

	/* BASE/obj alone: slot 0, no ring to search on every I/O */
	if (!multi)
		return 0;
	h = sd_hash_oid(oid);
	pthread_rwlock_rdlock(&md_lock);
	hi = nr_points;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (points[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (nr_points)
		slot = points[lo == nr_points ? 0 : lo].slot;
	pthread_rwlock_unlock(&md_lock);
	return slot;
}

int md_locate(struct obj_key k)
{
	int first = md_disk_of(k.oid);
	char name[STORE_NAME_MAX + 16];

	if (first < 0)
		return -1;
	layout_rel(name, sizeof(name), k, "");
	if (!faccessat(md_dir_fd(first), name, F_OK, 0))
		return first;
	if (!multi)
		return -1;
	for (int s = md_next(-1); s >= 0; s = md_next(s))
		if (s != first && !faccessat(md_dir_fd(s), name, F_OK, 0))
			return s;
	return -1;
}

int md_info(struct md_disk_info *out, int max)
{
	int n = 0;

	pthread_rwlock_rdlock(&md_lock);
	for (int s = 0; s < MD_MAX_DISKS && n < max; s++) {
		struct statvfs vs;

		if (!disks[s].used)
			continue;
		out[n].slot = s;
		snprintf(out[n].path, sizeof(out[n].path), "%s",
			 disks[s].path);
		out[n].size = disks[s].size;
		out[n].free = 0;
		if (!fstatvfs(disks[s].dir_fd, &vs))
			out[n].free = (uint64_t)vs.f_frsize * vs.f_bavail;
		n++;
	}
	pthread_rwlock_unlock(&md_lock);
	return n;
}

int md_plug(const char *path)
{
	int s;

	if (!multi) {
		errno = ENOTSUP;
		return -1;
	}
	pthread_rwlock_wrlock(&md_lock);
	s = add_disk(path, true);
	if (s >= 0 && ring_rebuild()) {
		drop_disk(s);
		ring_rebuild();
		errno = EFBIG;
		s = -1;
	}
	pthread_rwlock_unlock(&md_lock);
	return s;
}

int md_unplug_slot(int slot)
{
	int ret = -1;

	pthread_rwlock_wrlock(&md_lock);
	if (slot >= 0 && slot < MD_MAX_DISKS && disks[slot].used) {
		drop_disk(slot);
		ring_rebuild();
		ret = 0;
	}
	pthread_rwlock_unlock(&md_lock);
	return ret;
}

int md_slot_of(const char *path)
{
	int s;

	pthread_rwlock_rdlock(&md_lock);
	s = slot_of_path(path);
	pthread_rwlock_unlock(&md_lock);
	return s;
}

/* a probe that failed with @err: only a full disk is still a good one */
static bool probe_failure_ok(int err)
{
	return err == ENOSPC || err == EDQUOT;
}

/*
 * Is the disk of @slot still usable?  Its object directory must still be
 * there, on the same file system (a disk removed or unmounted under us
 * shows none, or an empty directory of another one); with @probe a small
 * write and sync must work: any error but a full disk fails it (an I/O
 * error, a file system remounted read-only, and also a directory block
 * that fails its checksum, EBADMSG, as ext4 answered after its error
 * handling made it read-only).
 */
bool md_healthy(int slot, bool probe)
{
	char dir[MD_PATH_MAX + 8], p[MD_PATH_MAX + 32];
	static const char buf[512];
	struct stat st, now;
	bool ok = true;
	int fd, dfd;
	ssize_t n;

	pthread_mutex_lock(&swap_lock);
	dfd = md_dir_fd(slot);
	md_dir(slot, dir, sizeof(dir));
	if (dfd < 0 || fstat(dfd, &st) || stat(dir, &now) ||
	    now.st_dev != st.st_dev || !S_ISDIR(now.st_mode)) {
		ok = false;
		goto out;
	}
	/* a tree store's subdirectory gone is part of the store gone */
	if (!layout_present(dfd)) {
		static struct log_limit ll;

		sd_warn_limited(&ll, "%s: a subdirectory of the tree store is "
				"missing", dir);
		ok = false;
		goto out;
	}
	if (!probe)
		goto out;
	snprintf(p, sizeof(p), "%s/.md-probe", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ok = probe_failure_ok(errno);
		if (!ok)
			sd_warn("probe of %s: cannot create a file: %m", dir);
		goto out;
	}
	n = pwrite(fd, buf, sizeof(buf), 0);
	if (n < 0 || fdatasync(fd)) {
		ok = probe_failure_ok(errno);
		if (!ok)
			sd_warn("probe of %s: cannot write and sync: %m", dir);
	} else if (n != (ssize_t)sizeof(buf)) {
		ok = false;
		sd_warn("probe of %s: a write of %zu bytes wrote %zd", dir,
			sizeof(buf), n);
	}
	close(fd);
	unlink(p);
out:
	pthread_mutex_unlock(&swap_lock);
	return ok;
}

/*
 * A rejoin swaps @slot's object directory for an empty one (stale.c):
 * @swap(@slot, @arg) renames it; then the disk's directory is opened
 * again.  Health checks wait meanwhile.
 */
int md_swap(int slot, int (*swap)(int slot, void *arg), void *arg)
{
	struct md_disk *d = &disks[slot];
	int ret, fd;

	pthread_mutex_lock(&swap_lock);
	ret = swap(slot, arg);
	if (!ret) {
		pthread_rwlock_wrlock(&md_lock);
		fd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			ret = -1;
		} else {
			close(d->dir_fd);
			d->dir_fd = fd;
		}
		pthread_rwlock_unlock(&md_lock);
	}
	pthread_mutex_unlock(&swap_lock);
	return ret;
}
