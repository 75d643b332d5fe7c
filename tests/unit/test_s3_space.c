// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * front/s3_space.c: the room of a bucket's data volume, counted in its
 * index.
 *
 * - a charge is cut at chunk boundaries and rounded up as room is given;
 * - a chunk that stops being named is queued only once everything below
 *   the sweep limit (reservations in flight) has passed it, and one the
 *   sweep passes naming nothing is queued too (a PUT never committed);
 * - a change that moves room from some entries to others (a multipart
 *   completion) queues nothing it still names;
 * - the queue hands out only what is due, in order, and forgets what was
 *   dropped;
 * - a bucket written before counting began is never reclaimed;
 * - a count that would go below zero keeps its chunk for good.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kvtree.h"
#include "front/s3_space.h"

#define CHUNK	SPACE_CHUNK
#define NPAGES	64

struct mem {
	uint8_t *pages[NPAGES];
};

static int mem_read(void *arg, uint64_t page, void *buf)
{
	struct mem *m = arg;

	if (page >= NPAGES)
		return -1;
	if (m->pages[page])
		memcpy(buf, m->pages[page], KVT_PAGE);
	else
		memset(buf, 0, KVT_PAGE);
	return 0;
}

static int mem_write(void *arg, uint64_t page, const void *buf)
{
	struct mem *m = arg;

	if (page >= NPAGES)
		return -1;
	if (!m->pages[page])
		m->pages[page] = malloc(KVT_PAGE);
	memcpy(m->pages[page], buf, KVT_PAGE);
	return 0;
}

static int mem_sync(void *arg)
{
	(void)arg;
	return 0;
}

struct fixture {
	struct mem mem;
	struct kvt_store st;
	struct kvtree *t;
	struct space_change c;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->st = (struct kvt_store){ mem_read, mem_write, mem_sync, &f->mem };
	assert_int_equal(kvt_open(&f->st, &f->t), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	kvt_close(f->t);
	for (int i = 0; i < NPAGES; i++)
		free(f->mem.pages[i]);
	space_change_clear(&f->c);
	free(f);
	return 0;
}

static uint64_t count(struct fixture *f, uint64_t chunk)
{
	uint64_t n;

	assert_int_equal(space_count(f->t, chunk, &n), 0);
	return n;
}

/* the chunks due at @now, in order, into @out: how many */
static int due(struct fixture *f, uint64_t now, uint64_t *out, int max)
{
	struct space_due d[16];
	int n = space_due(f->t, now, d, 16);

	assert_true(n >= 0 && n <= max);
	for (int i = 0; i < n; i++)
		out[i] = d[i].chunk;
	return n;
}

static void apply(struct fixture *f, uint64_t limit, uint64_t at)
{
	assert_int_equal(space_apply(f->t, &f->c, limit, at, NULL), 0);
	assert_int_equal(kvt_commit(f->t), 0);
}

static void test_charge_cut_and_rounded(void **state)
{
	struct fixture *f = *state;

	/* 100 bytes take 4 KiB; 5 MiB from 3 MiB cross into chunk 1 */
	space_charge(&f->c, 0, 100, 1);
	space_charge(&f->c, 3 * (CHUNK / 4), CHUNK + CHUNK / 4, 1);
	apply(f, 0, 10);
	assert_int_equal(count(f, 0), 4096 + CHUNK / 4);
	assert_int_equal(count(f, 1), CHUNK);
	assert_int_equal(count(f, 2), 0);
	/* nothing is queued while the sweep limit is 0 */
	space_charge(&f->c, 0, 100, -1);
	apply(f, 0, 10);
	assert_int_equal(count(f, 0), CHUNK / 4);
}

static void test_queued_once_swept(void **state)
{
	struct fixture *f = *state;
	uint64_t out[16];

	/* chunks 0-2 named, then chunk 1's bytes unnamed above the limit */
	space_charge(&f->c, 0, 3 * CHUNK, 1);
	apply(f, 0, 10);
	space_charge(&f->c, CHUNK, CHUNK, -1);
	apply(f, CHUNK, 10);		/* swept: chunk 0 only */
	assert_int_equal(due(f, 1000, out, 16), 0);
	/* the sweep passes chunk 1 (naming nothing) and chunk 2 (named) */
	apply(f, 3 * CHUNK + 5, 20);
	assert_int_equal(due(f, 19, out, 16), 0);
	assert_int_equal(due(f, 20, out, 16), 1);
	assert_int_equal(out[0], 1);
	/* below the swept line, a chunk is queued as its last byte goes */
	space_charge(&f->c, 0, CHUNK, -1);
	apply(f, 3 * CHUNK + 5, 15);
	assert_int_equal(due(f, 20, out, 16), 2);
	assert_int_equal(out[0], 0);	/* due at 15, before chunk 1 at 20 */
	assert_int_equal(out[1], 1);
}

static void test_never_named_is_swept(void **state)
{
	struct fixture *f = *state;
	uint64_t out[16];

	/* room reserved by a PUT that never committed: 8 MiB at 4 MiB */
	space_charge(&f->c, 0, 100, 1);
	apply(f, 0, 10);
	apply(f, 3 * CHUNK, 10);
	assert_int_equal(due(f, 10, out, 16), 2);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 2);
}

static void test_moved_room_stays(void **state)
{
	struct fixture *f = *state;
	uint64_t out[16];

	/* parts in chunks 0 and 1; the completion names chunk 0's only */
	space_charge(&f->c, 0, CHUNK, 1);
	space_charge(&f->c, CHUNK, CHUNK, 1);
	apply(f, 0, 10);
	apply(f, 2 * CHUNK, 10);
	space_charge(&f->c, 0, CHUNK, -1);
	space_charge(&f->c, CHUNK, CHUNK, -1);
	space_charge(&f->c, 0, CHUNK, 1);
	apply(f, 2 * CHUNK, 10);
	assert_int_equal(due(f, 10, out, 16), 1);
	assert_int_equal(out[0], 1);
	assert_int_equal(count(f, 0), CHUNK);
}

static void test_dropped_forgotten(void **state)
{
	struct fixture *f = *state;
	struct space_due d[4];

	apply(f, 2 * CHUNK, 10);
	assert_int_equal(space_due(f->t, 10, d, 4), 2);
	assert_int_equal(space_dropped(f->t, &d[0]), 0);
	assert_int_equal(kvt_commit(f->t), 0);
	assert_int_equal(space_due(f->t, 10, d, 4), 1);
	assert_int_equal(d[0].chunk, 1);
	/* at most what was asked for */
	assert_int_equal(space_due(f->t, 10, d, 0), 0);
}

static void test_old_bucket_untouched(void **state)
{
	struct fixture *f = *state;
	uint64_t out[16];
	bool kept, changed;

	/* room given out before counting began */
	assert_int_equal(kvt_put(f->t, "m/next", 6, "\0\0\0\1\0\0\0\0", 8),
			 0);
	assert_int_equal(space_kept(f->t, &kept), 0);
	assert_false(kept);
	space_charge(&f->c, 0, CHUNK, -1);
	assert_int_equal(space_apply(f->t, &f->c, 4 * CHUNK, 10, &changed),
			 0);
	assert_false(changed);
	assert_int_equal(due(f, 10, out, 16), 0);
	assert_int_equal(count(f, 0), 0);
}

static void test_underflow_kept(void **state)
{
	struct fixture *f = *state;
	uint64_t out[16];

	space_charge(&f->c, 0, 4096, 1);
	apply(f, 0, 10);
	space_charge(&f->c, 0, 8192, -1);
	apply(f, 2 * CHUNK, 10);
	assert_int_equal(count(f, 0), CHUNK);
	assert_int_equal(due(f, 10, out, 16), 1);
	assert_int_equal(out[0], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_charge_cut_and_rounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_queued_once_swept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_never_named_is_swept,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_moved_room_stays, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dropped_forgotten, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_old_bucket_untouched,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_underflow_kept, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
