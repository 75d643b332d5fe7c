// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cluster key (sheep/core/auth.c): a proof made with the key verifies,
 * one for another nonce or made with another key does not, and keys of
 * the wrong size are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/auth.h"

static char dir[] = "/tmp/kelpie-test-auth.XXXXXX";

static const char *key_file(const char *name, size_t len, uint8_t fill)
{
	static char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	for (size_t i = 0; i < len; i++)
		fputc(fill, f);
	fclose(f);
	return p;
}

static void test_prove_verify(void **state)
{
	uint8_t n1[AUTH_NONCE_LEN], n2[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN];

	assert_int_equal(auth_load_key(key_file("k1", 32, 'a')), 0);
	assert_true(auth_enabled());
	auth_nonce(n1);
	auth_nonce(n2);
	assert_memory_not_equal(n1, n2, AUTH_NONCE_LEN);
	auth_prove(n1, mac);
	assert_true(auth_verify(n1, mac));
	/* the proof of one nonce is no proof of another */
	assert_false(auth_verify(n2, mac));
	mac[5] ^= 1;
	assert_false(auth_verify(n1, mac));
	mac[5] ^= 1;
	/* another key: the same proof fails */
	assert_int_equal(auth_load_key(key_file("k2", 32, 'b')), 0);
	assert_false(auth_verify(n1, mac));
}

static void test_bad_keys(void **state)
{
	assert_int_equal(auth_load_key(key_file("short", 15, 'c')), -1);
	assert_int_equal(auth_load_key(key_file("long", AUTH_MAX_KEY, 'c')),
			 -1);
	assert_int_equal(auth_load_key("/nonexistent/kelpie-key"), -1);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prove_verify),
		cmocka_unit_test(test_bad_keys),
	};

	return cmocka_run_group_tests_name("auth", tests, setup, teardown);
}
