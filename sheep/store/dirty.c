// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The objects written without a sync since the last flush (cached
 * writes), so that a flush syncs just those: one fdatasync for a VM that
 * wrote one object is cheaper than a syncfs of the whole file system, and
 * a store on FUSE, which syncfs never reaches, still gets its data synced.
 * Also which directories had a name change without a sync (a cached
 * create, a removal).  At most one entry per object of the store: bounded by the
 * store's size however long a client goes without flushing.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "store_int.h"

#define DIRTY_HASH	4096

struct dirty_ent {
	struct obj_key key;
	struct dirty_ent *next;
};

static pthread_mutex_t dirty_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dirty_ent *dirty_hash[DIRTY_HASH];
static size_t nr_dirty;
static struct dir_set dirs_dirty;

static struct dirty_ent **bucket(struct obj_key k)
{
	return &dirty_hash[obj_key_hash(k) % DIRTY_HASH];
}

static void add_locked(struct obj_key k)
{
	struct dirty_ent **pp = bucket(k), *e;

	for (e = *pp; e; e = e->next)
		if (obj_key_eq(e->key, k))
			return;
	e = xmalloc(sizeof(*e));
	e->key = k;
	e->next = *pp;
	*pp = e;
	nr_dirty++;
}

void dirty_add(struct obj_key k)
{
	pthread_mutex_lock(&dirty_lock);
	add_locked(k);
	pthread_mutex_unlock(&dirty_lock);
}

void dirty_dir(int sub)
{
	sd_assert(sub >= 0 && sub < LAYOUT_NR_SUB);
	pthread_mutex_lock(&dirty_lock);
	dirs_dirty.bits[sub / 64] |= 1ULL << (sub % 64);
	pthread_mutex_unlock(&dirty_lock);
}

struct obj_key *dirty_take(size_t *nr, struct dir_set *dirs)
{
	struct obj_key *keys;
	size_t n = 0;

	pthread_mutex_lock(&dirty_lock);
	keys = xmalloc((nr_dirty + 1) * sizeof(*keys));
	for (size_t i = 0; i < DIRTY_HASH; i++) {
		while (dirty_hash[i]) {
			struct dirty_ent *e = dirty_hash[i];

			dirty_hash[i] = e->next;
			keys[n++] = e->key;
			free(e);
		}
	}
	nr_dirty = 0;
	*dirs = dirs_dirty;
	memset(&dirs_dirty, 0, sizeof(dirs_dirty));
	pthread_mutex_unlock(&dirty_lock);
	*nr = n;
	return keys;
}

/* only the directories: a journaled flush leaves the objects set */
void dirty_take_dirs(struct dir_set *dirs)
{
	pthread_mutex_lock(&dirty_lock);
	*dirs = dirs_dirty;
	memset(&dirs_dirty, 0, sizeof(dirs_dirty));
	pthread_mutex_unlock(&dirty_lock);
}

void dirty_restore(const struct obj_key *keys, size_t nr,
		   const struct dir_set *dirs)
{
	pthread_mutex_lock(&dirty_lock);
	for (size_t i = 0; i < nr; i++)
		add_locked(keys[i]);
	for (size_t i = 0; i < ARRAY_SIZE(dirs_dirty.bits); i++)
		dirs_dirty.bits[i] |= dirs->bits[i];
	pthread_mutex_unlock(&dirty_lock);
}
