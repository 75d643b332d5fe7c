// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * core/seal.c: a secret sealed with the cluster key opens with it, under
 * the same name and purpose, and with nothing else: not without a key,
 * not with another key, name or purpose, not altered in any part (nonce,
 * ciphertext, tag), not cut short, not into a buffer too small.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/auth.h"
#include "core/seal.h"

#define SECRET	"abcdefghijklmnopqrstuvwxyz0123456789+/AB"
#define ACCESS	"AKIAEXAMPLE000000001"
#define PURPOSE	"s3 secret"

static void load_key(const char *bytes)
{
	char path[] = "/tmp/kelpie-seal-key.XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, strlen(bytes)),
			 (ssize_t)strlen(bytes));
	close(fd);
	assert_int_equal(auth_load_key(path), 0);
	unlink(path);
}

static void sealed(char *text, size_t size)
{
	assert_int_equal(seal_text(PURPOSE, ACCESS, SECRET, strlen(SECRET),
				   text, size), 0);
}

/* runs first: the key cannot be unloaded */
static void test_no_key(void **state)
{
	char out[64];
	char text[SEAL_TEXT_LEN(40) + 1];

	memset(text, '0', sizeof(text) - 1);
	memcpy(text, "~1", 2);
	text[sizeof(text) - 1] = 0;
	assert_false(auth_enabled());
	assert_int_equal(seal_open(PURPOSE, ACCESS, text, strlen(text), out,
				   sizeof(out)), -1);
}

static void test_round_trip(void **state)
{
	char a[SEAL_TEXT_LEN(40) + 1], b[SEAL_TEXT_LEN(40) + 1], out[64];

	load_key("a cluster key of thirty-two bytes");
	sealed(a, sizeof(a));
	sealed(b, sizeof(b));
	assert_int_equal(strlen(a), SEAL_TEXT_LEN(strlen(SECRET)));
	assert_true(seal_is_sealed(a, strlen(a)));
	assert_false(seal_is_sealed(SECRET, strlen(SECRET)));
	assert_null(strstr(a, SECRET));
	assert_string_not_equal(a, b);	/* a nonce each */
	assert_int_equal(seal_open(PURPOSE, ACCESS, a, strlen(a), out,
				   sizeof(out)), (int)strlen(SECRET));
	assert_string_equal(out, SECRET);
	assert_int_equal(seal_open(PURPOSE, ACCESS, b, strlen(b), out,
				   sizeof(out)), (int)strlen(SECRET));
	assert_string_equal(out, SECRET);
}

static void test_wrong_name_or_purpose(void **state)
{
	char text[SEAL_TEXT_LEN(40) + 1], out[64];

	sealed(text, sizeof(text));
	assert_int_equal(seal_open(PURPOSE, "AKIAEXAMPLE000000002", text,
				   strlen(text), out, sizeof(out)), -1);
	assert_int_equal(seal_open("another use", ACCESS, text, strlen(text),
				   out, sizeof(out)), -1);
}

/* every hex digit changed in turn: not one opens */
static void test_altered(void **state)
{
	char text[SEAL_TEXT_LEN(40) + 1], out[64];
	size_t len;

	sealed(text, sizeof(text));
	len = strlen(text);
	for (size_t i = 2; i < len; i++) {
		char c = text[i];

		text[i] = c == '0' ? '1' : '0';
		assert_int_equal(seal_open(PURPOSE, ACCESS, text, len, out,
					   sizeof(out)), -1);
		text[i] = 'g';	/* not hex */
		assert_int_equal(seal_open(PURPOSE, ACCESS, text, len, out,
					   sizeof(out)), -1);
		text[i] = c;
	}
	for (size_t cut = 1; cut < len; cut++)
		assert_int_equal(seal_open(PURPOSE, ACCESS, text, len - cut,
					   out, sizeof(out)), -1);
	assert_int_equal(seal_open(PURPOSE, ACCESS, text, len, out,
				   sizeof(out)), (int)strlen(SECRET));
}

static void test_small_buffers(void **state)
{
	char text[SEAL_TEXT_LEN(40) + 1], out[64];

	assert_int_equal(seal_text(PURPOSE, ACCESS, SECRET, strlen(SECRET),
				   text, sizeof(text) - 1), -1);
	sealed(text, sizeof(text));
	/* room for the secret but not its NUL */
	assert_int_equal(seal_open(PURPOSE, ACCESS, text, strlen(text), out,
				   strlen(SECRET)), -1);
}

static void test_another_key(void **state)
{
	char text[SEAL_TEXT_LEN(40) + 1], out[64];

	sealed(text, sizeof(text));
	load_key("another cluster key, also long enough");
	assert_int_equal(seal_open(PURPOSE, ACCESS, text, strlen(text), out,
				   sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_key),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_wrong_name_or_purpose),
		cmocka_unit_test(test_altered),
		cmocka_unit_test(test_small_buffers),
		cmocka_unit_test(test_another_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
