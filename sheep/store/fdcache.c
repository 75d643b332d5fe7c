// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Open object files, kept for reuse.  An entry dropped while in use stays
 * open until its last user puts it.  A generation number makes sure that
 * an fd opened before a drop (so possibly of a replaced file) is never
 * cached after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fdcache.h"
#include "list.h"
#include "store_int.h"
#include "util.h"

#define FDC_BUCKETS	1024
#define FDC_MAX		512

struct fdc_ent {
	struct obj_key key;
	int fd;
	int dfd;		/* O_DIRECT, sheep -D's data objects; or -1 */
	int refs;
	bool cached;
	uint32_t size;		/* data size from the trailer, 0: unread */
	bool nowait_refused;	/* no RWF_NOWAIT writes on its fs */
	struct fdc_ent *hnext;
	struct list_head lru;
};

static pthread_mutex_t fdc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fdc_ent *table[FDC_BUCKETS];
static LIST_HEAD(lru);
static size_t nr_cached;
static uint64_t generation;

static struct fdc_ent **find(struct obj_key k)
{
	struct fdc_ent **p = &table[obj_key_hash(k) % FDC_BUCKETS];

	while (*p && !obj_key_eq((*p)->key, k))
		p = &(*p)->hnext;
	return p;
}

static void release(struct fdc_ent *e)
{
	close(e->fd);
	if (e->dfd >= 0)
		close(e->dfd);
	free(e);
}

/* take @e out of the table; it is freed now or by its last user */
static void unlink_ent(struct fdc_ent **p)
{
	struct fdc_ent *e = *p;

	*p = e->hnext;
	list_del(&e->lru);
	e->cached = false;
	nr_cached--;
	if (!e->refs)
		release(e);
}

/* close the least recently used idle files beyond the limit */
static void evict(void)
{
	struct list_head *l = lru.prev;

	while (nr_cached > FDC_MAX && l != &lru) {
		struct fdc_ent *e = list_entry(l, struct fdc_ent, lru);

		l = l->prev;
		if (!e->refs)
			unlink_ent(find(e->key));
	}
}

static struct fdc_ent *fdc_get_once(struct obj_key k, const char *path)
{
	struct fdc_ent **p, *e;
	uint64_t gen;
	int fd;

	pthread_mutex_lock(&fdc_lock);
	p = find(k);
	if (*p) {
		e = *p;
		e->refs++;
		list_del(&e->lru);
		list_add(&e->lru, &lru);
		pthread_mutex_unlock(&fdc_lock);
		return e;
	}
	gen = generation;
	pthread_mutex_unlock(&fdc_lock);

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	e = xzalloc(sizeof(*e));
	e->key = k;
	e->fd = fd;
	e->dfd = -1;
	if (dio_kind(k.oid) &&
	    (e->dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC)) < 0) {
		int err = errno;

		close(fd);
		free(e);
		errno = err;
		return NULL;
	}
	e->refs = 1;
	INIT_LIST_HEAD(&e->lru);

	pthread_mutex_lock(&fdc_lock);
	p = find(k);
	if (*p) {
		/* someone cached it meanwhile: use theirs */
		struct fdc_ent *other = *p;

		other->refs++;
		pthread_mutex_unlock(&fdc_lock);
		release(e);
		return other;
	}
	if (gen == generation) {
		e->cached = true;
		*p = e;
		list_add(&e->lru, &lru);
		nr_cached++;
		evict();
	}
	pthread_mutex_unlock(&fdc_lock);
	return e;
}

/*
 * Whether the file open in @e still has a name.  Only the link count is
 * asked for: fstat(2) would also ask for the change time, and since Linux
 * 6.13 a file system with fine-grained timestamps (ext4, XFS) then gives
 * the next write a fine-grained one, an extra inode update per write (1
 * µs on ext4 here), which XFS moreover refuses to do for a write with
 * RWF_NOWAIT.  An error counts as linked: the I/O then reports it.
 */
static bool still_linked(const struct fdc_ent *e)
{
	struct statx stx;

	if (statx(e->fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_NLINK,
		  &stx))
		return true;
	return !(stx.stx_mask & STATX_NLINK) || stx.stx_nlink;
}

/*
 * A file unlinked behind our back (an operator, a test) must read as
 * missing, not as its old contents: check the link count of cached fds.
 */
struct fdc_ent *fdc_get(struct obj_key k, const char *path)
{
	struct fdc_ent *e = fdc_get_once(k, path);

	if (!e || still_linked(e))
		return e;
	fdc_put(e);
	fdc_drop(k);
	return fdc_get_once(k, path);
}

/*
 * @writing: not if the file refused a write from the loop (ext4), nor a
 * data object of sheep -D (its data goes to the disk): no system call
 * for nothing
 */
static struct fdc_ent *lookup(struct obj_key k, bool writing)
{
	struct fdc_ent *e;

	pthread_mutex_lock(&fdc_lock);
	e = *find(k);
	if (e && writing && (e->nowait_refused || e->dfd >= 0))
		e = NULL;
	if (e)
		e->refs++;
	pthread_mutex_unlock(&fdc_lock);
	/* unlinked behind our back: the opening path sorts that out */
	if (e && !still_linked(e)) {
		fdc_put(e);
		return NULL;
	}
	return e;
}

struct fdc_ent *fdc_lookup(struct obj_key k)
{
	return lookup(k, false);
}

struct fdc_ent *fdc_lookup_writable(struct obj_key k)
{
	return lookup(k, true);
}

int fdc_fd(const struct fdc_ent *e)
{
	return e->fd;
}

int fdc_dfd(const struct fdc_ent *e)
{
	return e->dfd;
}

uint32_t fdc_size(const struct fdc_ent *e)
{
	return __atomic_load_n(&e->size, __ATOMIC_RELAXED);
}

void fdc_set_size(struct fdc_ent *e, uint32_t size)
{
	__atomic_store_n(&e->size, size, __ATOMIC_RELAXED);
}

void fdc_refuse_nowait(struct fdc_ent *e)
{
	pthread_mutex_lock(&fdc_lock);
	e->nowait_refused = true;
	pthread_mutex_unlock(&fdc_lock);
}

void fdc_put(struct fdc_ent *e)
{
	pthread_mutex_lock(&fdc_lock);
	if (!--e->refs && !e->cached)
		release(e);
	pthread_mutex_unlock(&fdc_lock);
}

void fdc_drop(struct obj_key k)
{
	struct fdc_ent **p;

	pthread_mutex_lock(&fdc_lock);
	generation++;
	p = find(k);
	if (*p)
		unlink_ent(p);
	pthread_mutex_unlock(&fdc_lock);
}

void fdc_drop_all(void)
{
	pthread_mutex_lock(&fdc_lock);
	generation++;
	for (int b = 0; b < FDC_BUCKETS; b++)
		while (table[b])
			unlink_ent(&table[b]);
	pthread_mutex_unlock(&fdc_lock);
}
