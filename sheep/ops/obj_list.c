// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * GET_OBJ_LIST: the oids this node stores, working and stale copies.
 *
 * On every epoch each member asks every other for its list, all at about
 * the same moment: N requests, each a walk of the whole store, on every
 * node.  A walk answers every request that arrived before the walk
 * began, so requests that come while one runs wait for the next and
 * share it: a burst costs at most two walks, and no answer is older
 * than a walk of its own would have been.
 *
 * The last walk's list is kept until the next replaces it (8 bytes per
 * object, as one request's answer).  Runs on the I/O workers.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "proto.h"
#include "util.h"
#include "ops/ops.h"
#include "store/store.h"

/* more oids than one reply can carry (recovery asks at most 256 MiB) */
#define OBJ_LIST_MAX	(32U << 20)

struct walk {
	uint64_t *oids;
	uint32_t n, cap;
	bool full;		/* stopped at OBJ_LIST_MAX */
};

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t list_cond = PTHREAD_COND_INITIALIZER;
static uint64_t walks_started, walk_done_gen;
static bool walking;
static struct walk last;
static uint64_t nr_walks, nr_served;	/* obj_list_stats() */

static int add_oid(struct obj_key k, void *arg)
{
	struct walk *w = arg;

	/*
	 * oids only: a strip's oid tells recovery that the object exists;
	 * each node works out which strip of it it holds (recovery/strips.c)
	 */
	if (w->n == OBJ_LIST_MAX) {
		w->full = true;
		return 1;
	}
	if (w->n == w->cap) {
		w->cap = w->cap ? MIN(w->cap * 2, OBJ_LIST_MAX) : 4096;
		w->oids = xrealloc(w->oids, (size_t)w->cap * sizeof(*w->oids));
	}
	w->oids[w->n++] = k.oid;
	return 0;
}

static struct walk walk_store(void)
{
	struct walk w = { 0 };

	if (store_for_each(add_oid, &w) <= 0)
		store_for_each_stale(add_oid, &w);
	return w;
}

/* a walk that began after the call, done: its list in `last` (locked) */
static void wait_for_fresh_walk(void)
{
	uint64_t need = walks_started + 1;

	while (walk_done_gen < need) {
		struct walk w;
		uint64_t gen;

		if (walking) {
			pthread_cond_wait(&list_cond, &list_lock);
			continue;
		}
		walking = true;
		gen = ++walks_started;
		pthread_mutex_unlock(&list_lock);
		w = walk_store();
		pthread_mutex_lock(&list_lock);
		/* one walk at a time, finished in the order they began */
		sd_assert(walking && gen == walk_done_gen + 1);
		free(last.oids);
		last = w;
		walk_done_gen = gen;
		walking = false;
		nr_walks++;
		pthread_cond_broadcast(&list_cond);
	}
}

int obj_list_get(uint8_t *buf, uint32_t len, uint32_t *out_len)
{
	int ret = SD_RES_SUCCESS;

	pthread_mutex_lock(&list_lock);
	wait_for_fresh_walk();
	nr_served++;
	if (last.full || (uint64_t)last.n * 8 > len) {
		ret = SD_RES_BUFFER_SMALL;
		*out_len = 0;
	} else {
		for (uint32_t i = 0; i < last.n; i++)
			put_le64(buf + 8 * (size_t)i, last.oids[i]);
		*out_len = last.n * 8;
	}
	pthread_mutex_unlock(&list_lock);
	return ret;
}

void obj_list_stats(uint64_t *walks, uint64_t *served)
{
	pthread_mutex_lock(&list_lock);
	*walks = nr_walks;
	*served = nr_served;
	pthread_mutex_unlock(&list_lock);
}
