// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * GET_OBJ_LIST: the oids this node stores, working and stale copies.
 *
 * On every epoch each member asks every other for its list, all at about
 * the same moment: N requests, each a walk of the whole store, on every
 * node.  A walk answers every request that arrived at the node before
 * the walk began, so no answer is older than a walk of its own would
 * have been, and a burst costs a walk or two.  Arrived, not picked up
 * by a worker: with two I/O workers and a hundred members, requests
 * taken up two at a time each wanted a walk newer than the last, so
 * every node walked its store once per member, one walk after the
 * other on the workers that client requests (and recovery) wait for.
 * At 100 nodes that held a client's write, and every node's recovery,
 * for two seconds.
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
static bool walking;
static uint64_t walk_began_ns;	/* of the one running */
static struct walk last;
static uint64_t last_began_ns;	/* when the walk of `last` began */
static bool have_last;
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

/* a walk that began at or after @since_ns, done: its list in `last` */
static void wait_for_walk_since(uint64_t since_ns)
{
	while (!have_last || last_began_ns < since_ns) {
		struct walk w;
		uint64_t began;

		if (walking) {
			/* it may have begun too early: then the next one */
			pthread_cond_wait(&list_cond, &list_lock);
			continue;
		}
		walking = true;
		began = walk_began_ns = now_nsec();
		pthread_mutex_unlock(&list_lock);
		w = walk_store();
		pthread_mutex_lock(&list_lock);
		/* one walk at a time */
		sd_assert(walking && walk_began_ns == began);
		free(last.oids);
		last = w;
		last_began_ns = began;
		have_last = true;
		walking = false;
		nr_walks++;
		pthread_cond_broadcast(&list_cond);
	}
}

int obj_list_get(uint64_t since_ns, uint8_t *buf, uint32_t len,
		 uint32_t *out_len)
{
	int ret = SD_RES_SUCCESS;

	pthread_mutex_lock(&list_lock);
	wait_for_walk_since(since_ns);
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
