// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Buffered object data reaches the page cache in aligned pieces of at
 * most 256 KiB (sheep/store/dio.c), so that no write creates a folio
 * larger than that (on ext4 every later small write walks all buffer
 * heads of its folio).  pwrite() is interposed to see the pieces of
 * creates, whole-object and unaligned writes; the object reads back as a
 * model of it says.
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

#define OBJ	(4u << 20)
#define PIECE	(256u << 10)
#define OID	UINT64_C(0x00abcdef00000003)	/* a data object */

static char base[] = "/tmp/kelpie-test-pieces.XXXXXX";
static uint8_t *model, *buf, *got;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int nr_data_writes, nr_bad_pieces;

ssize_t pwrite(int fd, const void *b, size_t n, off_t off)
{
	/* the data region; the CRCs and the footer lie past OBJ */
	if (off < (off_t)OBJ) {
		pthread_mutex_lock(&mu);
		nr_data_writes++;
		if (n > PIECE || (uint64_t)off / PIECE !=
				 ((uint64_t)off + n - 1) / PIECE)
			nr_bad_pieces++;
		pthread_mutex_unlock(&mu);
	}
	return syscall(SYS_pwrite64, fd, b, n, off);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(base))
		return -1;
	model = malloc(OBJ);
	buf = malloc(OBJ);
	got = malloc(OBJ);
	if (!model || !buf || !got)
		return -1;
	return store_init(base, true);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	free(model);
	free(buf);
	free(got);
	return system(cmd) ? -1 : 0;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 12));
}

static void reset_counts(void)
{
	nr_data_writes = nr_bad_pieces = 0;
}

static void check_object(void)
{
	assert_int_equal(store_read(obj_key_rep(OID), got, OBJ, 0),
			 SD_RES_SUCCESS);
	assert_memory_equal(got, model, OBJ);
}

static void test_pieces(void **state)
{
	struct obj_key k = obj_key_rep(OID);

	(void)state;
	/* a create of the whole object: 16 pieces */
	fill(model, OBJ, 1);
	reset_counts();
	assert_int_equal(store_create(k, OBJ, model, OBJ, 0, false),
			 SD_RES_SUCCESS);
	assert_int_equal(nr_bad_pieces, 0);
	assert_true(nr_data_writes >= (int)(OBJ / PIECE));
	check_object();

	/* a whole-object overwrite */
	fill(buf, OBJ, 2);
	memcpy(model, buf, OBJ);
	reset_counts();
	assert_int_equal(store_write(k, buf, OBJ, 0, false), SD_RES_SUCCESS);
	assert_int_equal(nr_bad_pieces, 0);
	assert_int_equal(nr_data_writes, (int)(OBJ / PIECE));
	check_object();

	/* unaligned at both ends, across three boundaries */
	fill(buf, 700000, 3);
	memcpy(model + 100000, buf, 700000);
	reset_counts();
	assert_int_equal(store_write(k, buf, 700000, 100000, false),
			 SD_RES_SUCCESS);
	assert_int_equal(nr_bad_pieces, 0);
	assert_int_equal(nr_data_writes, 4);
	check_object();

	/* a small write inside one piece is one write */
	fill(buf, 4096, 4);
	memcpy(model + PIECE - 4096, buf, 4096);
	reset_counts();
	assert_int_equal(store_write(k, buf, 4096, PIECE - 4096, false),
			 SD_RES_SUCCESS);
	assert_int_equal(nr_data_writes, 1);
	assert_int_equal(nr_bad_pieces, 0);
	check_object();
	assert_int_equal(store_remove(k), SD_RES_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
	};

	return cmocka_run_group_tests_name("store pieces", tests, setup,
					   teardown);
}
