// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * GET_OBJ_LIST's shared walks (sheep/ops/obj_list.c), over a store that
 * this file stands in for: a walk lists one oid, the store's version when
 * the walk began, and ends when the test opens its gate (then after 5 ms).
 * An answer always comes from a walk that began after the request
 * arrived (never older than a walk of its own); calls that come while a
 * walk runs share the next one, and requests that arrived before a walk
 * began share it even when taken up after it ended; a buffer too small
 * is BUFFER_SMALL.  The tests wait for
 * conditions (a walk began, the callers are in), never for a time alone:
 * a loaded machine only makes them slower.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "proto.h"
#include "util.h"
#include "ops/ops.h"
#include "store/store.h"

static uint64_t version;	/* bumped by the tests: the store changed */
static int gate_closed;		/* walks wait while it is closed */
static int begun;		/* walks that read the version */
static int callers;		/* askers about to call */

int store_for_each(int (*fn)(struct obj_key k, void *arg), void *arg)
{
	uint64_t v = __atomic_load_n(&version, __ATOMIC_SEQ_CST);

	__atomic_add_fetch(&begun, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST))
		usleep(1000);
	usleep(5000);
	return fn(obj_key_rep(v), arg);
}

static void wait_until(int *counter, int want)
{
	while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < want)
		usleep(1000);
}

static void gate(bool closed)
{
	__atomic_store_n(&gate_closed, closed, __ATOMIC_SEQ_CST);
}

int store_for_each_stale(int (*fn)(struct obj_key k, void *arg), void *arg)
{
	return 0;
}

/* the one oid of an answer */
static uint64_t ask(void)
{
	uint8_t buf[64];
	uint32_t len = 0;

	assert_int_equal(obj_list_get(now_nsec(), buf, sizeof(buf), &len),
			 SD_RES_SUCCESS);
	assert_int_equal(len, 8);
	return get_le64(buf);
}

static void *asker(void *arg)
{
	__atomic_add_fetch(&callers, 1, __ATOMIC_SEQ_CST);
	*(uint64_t *)arg = ask();
	return NULL;
}

static void walks(uint64_t *w)
{
	uint64_t served;

	obj_list_stats(w, &served);
}

/* a call during a walk waits for the next: it sees what changed */
static void test_never_older_than_the_call(void **state)
{
	pthread_t t;
	uint64_t first;
	int b = __atomic_load_n(&begun, __ATOMIC_SEQ_CST);

	__atomic_store_n(&version, 1, __ATOMIC_SEQ_CST);
	gate(true);
	assert_int_equal(pthread_create(&t, NULL, asker, &first), 0);
	wait_until(&begun, b + 1);	/* its walk read version 1 */
	__atomic_store_n(&version, 2, __ATOMIC_SEQ_CST);
	gate(false);
	assert_int_equal(ask(), 2);
	pthread_join(t, NULL);
	assert_int_equal(first, 1);
	assert_int_equal(ask(), 2);	/* a call after both: a walk again */
}

/*
 * eight calls that come during one walk share the next one (a caller the
 * machine holds back between counting itself and calling may come after
 * that walk began: one more walk at most)
 */
static void test_burst_shares_a_walk(void **state)
{
	pthread_t first, t[8];
	uint64_t got0, got[8], w0, w1;
	int b = __atomic_load_n(&begun, __ATOMIC_SEQ_CST);
	int c = __atomic_load_n(&callers, __ATOMIC_SEQ_CST);

	walks(&w0);
	__atomic_store_n(&version, 10, __ATOMIC_SEQ_CST);
	gate(true);
	assert_int_equal(pthread_create(&first, NULL, asker, &got0), 0);
	wait_until(&begun, b + 1);
	__atomic_store_n(&version, 11, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, asker, &got[i]),
				 0);
	wait_until(&callers, c + 9);
	usleep(20000);		/* from counting themselves to their calls */
	gate(false);
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(got[i], 11);
	}
	pthread_join(first, NULL);
	assert_int_equal(got0, 10);
	walks(&w1);
	assert_in_range(w1 - w0, 2, 3);
}

/*
 * Requests that arrived before a walk began, taken up by the workers only
 * after it ended (they were busy: two workers, a hundred requests), are
 * answered from it, with no walk of their own; one that arrives later
 * gets a walk again.  (Each used to walk: a hundred walks a node at 100
 * nodes, one after the other on the I/O workers.)
 */
static void test_arrived_before_a_walk_share_it(void **state)
{
	uint64_t arrived = now_nsec(), w0, w1;
	uint8_t buf[64];
	uint32_t len = 0;

	__atomic_store_n(&version, 20, __ATOMIC_SEQ_CST);
	assert_int_equal(ask(), 20);	/* a walk began after `arrived` */
	walks(&w0);
	__atomic_store_n(&version, 21, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(obj_list_get(arrived, buf, sizeof(buf), &len),
				 SD_RES_SUCCESS);
		assert_int_equal(len, 8);
		assert_int_equal(get_le64(buf), 20);
	}
	walks(&w1);
	assert_int_equal(w1, w0);
	assert_int_equal(ask(), 21);
}

static void test_buffer_small(void **state)
{
	uint8_t buf[8];
	uint32_t len = 99;

	assert_int_equal(obj_list_get(now_nsec(), buf, 4, &len),
			 SD_RES_BUFFER_SMALL);
	assert_int_equal(len, 0);
	assert_int_equal(obj_list_get(now_nsec(), buf, 8, &len),
			 SD_RES_SUCCESS);
	assert_int_equal(len, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_never_older_than_the_call),
		cmocka_unit_test(test_burst_shares_a_walk),
		cmocka_unit_test(test_arrived_before_a_walk_share_it),
		cmocka_unit_test(test_buffer_small),
	};

	return cmocka_run_group_tests_name("obj_list", tests, NULL, NULL);
}
