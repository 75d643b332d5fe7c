// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * store_flush() from two threads (sheep/store/plain.c): a flush that finds
 * the dirty set empty because another flush took it must not return
 * before that other flush has synced what it took.  fdatasync() is
 * interposed here so that the first flush can be held inside it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "store/store.h"
#include "util.h"

#define OBJ	(1u << 20)
#define OID	UINT64_C(0x00abcdef00000001)

static char base[] = "/tmp/kelpie-test-flush.XXXXXX";
static uint8_t *a;

/* armed: the next fdatasync waits until released */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool armed, inside, released;

int fdatasync(int fd)
{
	pthread_mutex_lock(&mu);
	if (armed) {
		armed = false;
		inside = true;
		pthread_cond_broadcast(&cv);
		while (!released)
			pthread_cond_wait(&cv, &mu);
	}
	pthread_mutex_unlock(&mu);
	return (int)syscall(SYS_fdatasync, fd);
}

static int setup(void **state)
{
	if (!mkdtemp(base))
		return -1;
	a = malloc(OBJ);
	if (!a)
		return -1;
	memset(a, 0xaa, OBJ);
	return store_init(base, false);
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	free(a);
	return system(cmd) ? -1 : 0;
}

static int first_ret, second_ret;
static bool second_done;

static void *first_flush(void *arg)
{
	first_ret = store_flush();
	return NULL;
}

static void *second_flush(void *arg)
{
	second_ret = store_flush();
	pthread_mutex_lock(&mu);
	second_done = true;
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void test_second_flush_waits_for_first(void **state)
{
	pthread_t t1, t2;
	bool early;

	assert_int_equal(store_create(obj_key_rep(OID), OBJ, a, OBJ, 0, true),
			 0);
	assert_int_equal(store_write(obj_key_rep(OID), a, 4096, 0, false), 0);
	pthread_mutex_lock(&mu);
	armed = true;
	pthread_mutex_unlock(&mu);
	assert_int_equal(pthread_create(&t1, NULL, first_flush, NULL), 0);
	pthread_mutex_lock(&mu);
	while (!inside)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	/* the first flush holds the object's sync: the second must wait */
	assert_int_equal(pthread_create(&t2, NULL, second_flush, NULL), 0);
	usleep(200000);
	pthread_mutex_lock(&mu);
	early = second_done;
	released = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	assert_false(early);
	assert_int_equal(first_ret, SD_RES_SUCCESS);
	assert_int_equal(second_ret, SD_RES_SUCCESS);
	assert_int_equal(store_remove(obj_key_rep(OID)), SD_RES_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_second_flush_waits_for_first),
	};

	return cmocka_run_group_tests_name("flush", tests, setup, teardown);
}
