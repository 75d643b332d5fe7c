// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The object files of dog cluster snapshot (dog/farm.c, compiled in here):
 * round trips of compressible and incompressible objects, identical
 * objects stored once, and files that lie, are cut short or are damaged
 * (each must be refused, never returned).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../dog/farm.c"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/kelpie-farm-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

static void path_of(const uint8_t *sha1, char *buf, size_t len)
{
	object_path(dir, sha1, buf, len);
}

static uint8_t *pattern(uint32_t len, bool random)
{
	uint8_t *b = malloc(len ? len : 1);

	for (uint32_t i = 0; i < len; i++)
		b[i] = random ? (uint8_t)rand() : (uint8_t)(i % 64 < 8 ? i : 0);
	return b;
}

static void round_trip(uint32_t len, bool random)
{
	uint8_t sha1[FARM_SHA1_LEN], *in = pattern(len, random);
	bool dedup = true;
	uint32_t got_len;
	void *out;

	assert_int_equal(farm_put(dir, in, len, sha1, &dedup), 0);
	assert_false(dedup);
	assert_int_equal(farm_put(dir, in, len, sha1, &dedup), 0);
	assert_true(dedup);
	assert_int_equal(farm_get(dir, sha1, &out, &got_len), 0);
	assert_int_equal(got_len, len);
	if (len)
		assert_memory_equal(out, in, len);
	free(out);
	free(in);
}

static void test_round_trips(void **state)
{
	struct stat st;
	uint8_t sha1[FARM_SHA1_LEN], *in = pattern(4 << 20, false);
	char p[4200];
	bool dedup;

	round_trip(4 << 20, false);
	round_trip(4 << 20, true);
	round_trip(4096, true);
	round_trip(1, false);
	round_trip(0, false);
	/* a mostly-zero object is stored deflated, far below its size */
	assert_int_equal(farm_put(dir, in, 4 << 20, sha1, &dedup), 0);
	path_of(sha1, p, sizeof(p));
	assert_int_equal(stat(p, &st), 0);
	assert_true(st.st_size < (4 << 20) / 10);
	assert_int_equal(farm_sync(dir), 0);
	free(in);
}

/* put @len bytes, let @mangle change the file: get fails, never lies */
static void refused(uint32_t len, bool random,
		    void (*mangle)(const char *path, long size), bool may_pass)
{
	uint8_t sha1[FARM_SHA1_LEN], *in = pattern(len, random);
	uint32_t got_len = 7;
	void *out = (void *)1;
	struct stat st;
	char p[4200];
	bool dedup;

	assert_int_equal(farm_put(dir, in, len, sha1, &dedup), 0);
	path_of(sha1, p, sizeof(p));
	assert_int_equal(stat(p, &st), 0);
	mangle(p, (long)st.st_size);
	if (farm_get(dir, sha1, &out, &got_len) == 0) {
		/*
		 * Only a change deflate ignores (a code length of an unused
		 * symbol, padding) may pass: the bytes are then the same.
		 */
		assert_true(may_pass);
		assert_int_equal(got_len, len);
		assert_memory_equal(out, in, len);
		free(out);
	}
	unlink(p);
	free(in);
}

static void poke(const char *path, long off, uint8_t v)
{
	FILE *f = fopen(path, "r+b");

	assert_non_null(f);
	assert_int_equal(fseek(f, off, SEEK_SET), 0);
	assert_int_equal(fputc(v, f), v);
	fclose(f);
}

static void flip_body(const char *path, long size)
{
	FILE *f = fopen(path, "r+b");
	int c;

	assert_non_null(f);
	fseek(f, size / 2, SEEK_SET);
	c = fgetc(f);
	fseek(f, size / 2, SEEK_SET);
	fputc(c ^ 0x40, f);
	fclose(f);
}

static void cut_short(const char *path, long size)
{
	assert_int_equal(truncate(path, size - 1), 0);
}

static void cut_header(const char *path, long size)
{
	assert_int_equal(truncate(path, 10), 0);
}

static void bad_magic(const char *path, long size)
{
	poke(path, 0, 'X');
}

static void bad_method(const char *path, long size)
{
	poke(path, 4, 7);
}

/* the stored length says more than the file holds */
static void long_stored(const char *path, long size)
{
	poke(path, 15, 0x10);
}

/* the object length is past what one object can be (64 MiB) */
static void huge_len(const char *path, long size)
{
	poke(path, 11, 0x7f);
}

/* a deflated object that claims one byte more than it inflates to */
static void wrong_len(const char *path, long size)
{
	FILE *f = fopen(path, "r+b");
	uint8_t b[4];

	assert_non_null(f);
	fseek(f, 8, SEEK_SET);
	assert_int_equal(fread(b, 1, 4, f), 4);
	put_le32(b, get_le32(b) + 1);
	fseek(f, 8, SEEK_SET);
	fwrite(b, 1, 4, f);
	fclose(f);
}

static void test_refused(void **state)
{
	refused(1 << 20, false, flip_body, true);	/* deflated */
	refused(65536, true, flip_body, false);	/* stored: SHA-1 differs */
	refused(65536, true, cut_short, false);
	refused(1 << 20, false, cut_short, false);
	refused(4096, true, cut_header, false);
	refused(4096, true, bad_magic, false);
	refused(4096, true, bad_method, false);
	refused(4096, true, long_stored, false);
	refused(4096, true, huge_len, false);
	refused(1 << 20, false, wrong_len, false);
	refused(4096, true, wrong_len, false);
}

static void test_missing(void **state)
{
	uint8_t sha1[FARM_SHA1_LEN] = { 1, 2, 3 };
	uint32_t len;
	void *out;

	assert_int_equal(farm_get(dir, sha1, &out, &len), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_missing),
	};

	srand(17);
	return cmocka_run_group_tests(tests, setup, teardown);
}
