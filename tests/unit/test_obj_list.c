// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * GET_OBJ_LIST's shared walks (sheep/ops/obj_list.c), over a store that
 * this file stands in for: a walk takes 50 ms and lists one oid, the
 * store's version when the walk began (500 ms for the burst).  An answer always comes from a
 * walk that began after the call (never older than a walk of its own);
 * eight calls that come while a walk runs share the next one; a buffer
 * too small is BUFFER_SMALL.
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
static unsigned int walk_us = 50000;

int store_for_each(int (*fn)(struct obj_key k, void *arg), void *arg)
{
	uint64_t v = __atomic_load_n(&version, __ATOMIC_SEQ_CST);

	usleep(walk_us);
	return fn(obj_key_rep(v), arg);
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

	assert_int_equal(obj_list_get(buf, sizeof(buf), &len),
			 SD_RES_SUCCESS);
	assert_int_equal(len, 8);
	return get_le64(buf);
}

static void *asker(void *arg)
{
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

	__atomic_store_n(&version, 1, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_create(&t, NULL, asker, &first), 0);
	usleep(10000);			/* its walk (version 1) runs */
	__atomic_store_n(&version, 2, __ATOMIC_SEQ_CST);
	assert_int_equal(ask(), 2);
	pthread_join(t, NULL);
	assert_int_equal(first, 1);
	assert_int_equal(ask(), 2);	/* a call after both: a walk again */
}

/* eight calls that come during one walk share the next one */
static void test_burst_shares_a_walk(void **state)
{
	pthread_t first, t[8];
	uint64_t got0, got[8], w0, w1;

	walk_us = 500000;	/* the eight start well within it */
	walks(&w0);
	__atomic_store_n(&version, 10, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_create(&first, NULL, asker, &got0), 0);
	usleep(10000);
	__atomic_store_n(&version, 11, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, asker, &got[i]),
				 0);
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(got[i], 11);
	}
	pthread_join(first, NULL);
	assert_int_equal(got0, 10);
	walks(&w1);
	assert_int_equal(w1 - w0, 2);
	walk_us = 50000;
}

static void test_buffer_small(void **state)
{
	uint8_t buf[8];
	uint32_t len = 99;

	assert_int_equal(obj_list_get(buf, 4, &len), SD_RES_BUFFER_SMALL);
	assert_int_equal(len, 0);
	assert_int_equal(obj_list_get(buf, 8, &len), SD_RES_SUCCESS);
	assert_int_equal(len, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_never_older_than_the_call),
		cmocka_unit_test(test_burst_shares_a_walk),
		cmocka_unit_test(test_buffer_small),
	};

	return cmocka_run_group_tests_name("obj_list", tests, NULL, NULL);
}
