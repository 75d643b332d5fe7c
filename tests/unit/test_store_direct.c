// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The store with sheep -D (sheep/store/dio.c): a data object's file is
 * open O_DIRECT beside its buffered descriptor, an inode's is not; writes
 * and reads of any length, offset and buffer alignment (creates, partial
 * creates, overwrites) give what a model says, and the file holds the
 * same bytes when read past the store (the two views agree); a flipped
 * byte is caught and repaired; an object whose size is not a whole number
 * of pages (no kind is today: strips are 4 MiB over 2, 4, 8 or 16) stays
 * buffered and works.  Run where /tmp takes
 * O_DIRECT (ext4, tmpfs on Linux 6.6 or later).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "store/fdcache.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util.h"

#define OBJ	(4u << 20)
#define OID	UINT64_C(0x00abcdef00000007)	/* a data object */
#define INODE	UINT64_C(0x80abcdef00000000)

static char base[] = "/tmp/kelpie-test-dio.XXXXXX";
static uint8_t *model, *buf, *got;

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(base))
		return -1;
	/* +1: a buffer that is not page aligned, for the bounce path */
	model = malloc(OBJ);
	buf = malloc(OBJ + 1);
	got = malloc(OBJ + 1);
	if (!model || !buf || !got)
		return -1;
	store_set_direct(true);
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

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rand();
}

/* the data of @oid as the file holds it, read without the store */
static void file_data(uint64_t oid, uint8_t *out, size_t n)
{
	char p[256];
	int fd;

	store_obj_path(p, sizeof(p), obj_key_rep(oid));
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, out, n, 0), (ssize_t)n);
	close(fd);
}

static int open_flags(uint64_t oid, bool direct)
{
	char p[256];
	struct fdc_ent *e;
	int fl;

	store_obj_path(p, sizeof(p), obj_key_rep(oid));
	e = fdc_get(obj_key_rep(oid), p);
	assert_non_null(e);
	fl = direct ? (fdc_dfd(e) >= 0 ? fcntl(fdc_dfd(e), F_GETFL) : -1) :
		      fcntl(fdc_fd(e), F_GETFL);
	fdc_put(e);
	return fl;
}

static void test_descriptors(void **state)
{
	(void)state;
	fill(buf, OBJ);
	assert_int_equal(store_create(obj_key_rep(OID), OBJ, buf, OBJ, 0,
				      true), 0);
	assert_int_equal(store_create(obj_key_rep(INODE), OBJ, buf, 4096, 0,
				      true), 0);
	assert_true(open_flags(OID, true) & O_DIRECT);
	assert_false(open_flags(OID, false) & O_DIRECT);
	assert_int_equal(open_flags(INODE, true), -1);
	assert_int_equal(store_remove(obj_key_rep(INODE)), 0);
}

/* random writes, aligned or not, from buffers aligned or not */
static void test_model(void **state)
{
	const uint64_t oid = OID + 1;

	(void)state;
	srand(11);
	/* a partial create: zeros around an unaligned piece */
	memset(model, 0, OBJ);
	fill(buf + 1, 10000);
	memcpy(model + 5000, buf + 1, 10000);
	assert_int_equal(store_create(obj_key_rep(oid), OBJ, buf + 1, 10000,
				      5000, false), 0);
	for (int i = 0; i < 400; i++) {
		uint32_t len = i % 4 ? 1 + rand() % 20000 :
				       4096 * (1 + rand() % 8);
		uint32_t off = i % 4 ? rand() % (OBJ - len) :
				       4096 * (rand() % (OBJ / 4096 - 8));
		uint8_t *src = buf + (i % 2);

		fill(src, len);
		assert_int_equal(store_write(obj_key_rep(oid), src, len, off,
					     i % 3 == 0), 0);
		memcpy(model + off, src, len);
		if (i % 100 == 0) {
			assert_int_equal(store_read(obj_key_rep(oid), got + 1,
						    OBJ, 0), 0);
			assert_memory_equal(got + 1, model, OBJ);
		}
	}
	assert_int_equal(store_read(obj_key_rep(oid), got + 1, 777, 123457),
			 0);
	assert_memory_equal(got + 1, model + 123457, 777);
	assert_int_equal(store_read(obj_key_rep(oid), got, 8192, 4096 * 9), 0);
	assert_memory_equal(got, model + 4096 * 9, 8192);
	file_data(oid, got, OBJ);
	assert_memory_equal(got, model, OBJ);
	/* the event loop's read leaves -D objects to the workers */
	assert_false(store_read_nowait(obj_key_rep(oid), got, 4096, 0));
	assert_int_equal(store_remove(obj_key_rep(oid)), 0);
}

static void test_flip_and_repair(void **state)
{
	const uint64_t oid = OID + 2;
	char p[256];
	uint8_t x;
	int fd, nr = 0;

	(void)state;
	fill(model, OBJ);
	assert_int_equal(store_create(obj_key_rep(oid), OBJ, model, OBJ, 0,
				      true), 0);
	store_obj_path(p, sizeof(p), obj_key_rep(oid));
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	x = model[7 * 4096 + 5] ^ 0x10;
	assert_int_equal(pwrite(fd, &x, 1, 7 * 4096 + 5), 1);
	close(fd);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 7 * 4096),
			 SD_RES_EIO);
	assert_int_equal(store_read(obj_key_rep(oid), got, 4096, 6 * 4096), 0);
	assert_int_equal(store_repair(obj_key_rep(oid), model, OBJ, &nr), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(store_read(obj_key_rep(oid), got, OBJ, 0), 0);
	assert_memory_equal(got, model, OBJ);
	assert_int_equal(store_remove(obj_key_rep(oid)), 0);
}

/* a strip whose size is not whole pages: buffered, and it works */
static void test_unaligned_strip(void **state)
{
	const struct obj_key k = { .oid = OID + 3, .idx = 1 };
	const uint32_t size = 1398104;

	(void)state;
	fill(model, size);
	assert_int_equal(store_create(k, size, model, size, 0, false), 0);
	fill(buf, 3000);
	memcpy(model + size - 3000, buf, 3000);
	assert_int_equal(store_write(k, buf, 3000, size - 3000, false), 0);
	assert_int_equal(store_read(k, got, size, 0), 0);
	assert_memory_equal(got, model, size);
	assert_int_equal(store_remove(k), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_descriptors),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_flip_and_repair),
		cmocka_unit_test(test_unaligned_strip),
	};

	return cmocka_run_group_tests_name("store -D", tests, setup,
					   teardown);
}
