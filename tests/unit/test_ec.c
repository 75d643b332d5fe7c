// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Erasure code tests: the vectors of cluster.md §8.3, a field multiply of
 * our own (not libisal's) as a second opinion on every parity byte, and
 * decoding from every choice of d strips (or many random ones where there
 * are too many choices).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ec.h"

static const int shapes_d[] = { 2, 4, 8, 16 };

/* GF(2^8) mod x^8 + x^4 + x^3 + x^2 + 1, shift and add */
static uint8_t slow_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1d : 0));
		b >>= 1;
	}
	return r;
}

static void fill_random(uint8_t *p, size_t n, unsigned int *seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rand_r(seed);
}

static void test_parity_rows(void **state)
{
	static const uint8_t r21[] = { 0x03, 0x02 };
	static const uint8_t r22[] = { 0x03, 0x02, 0x05, 0x04 };
	static const uint8_t r42[] = { 0x77, 0x40, 0x38, 0x0e,
				       0xc7, 0xa7, 0x0d, 0x6c };
	struct ec_code c;

	assert_int_equal(ec_init(&c, 2, 1), 0);
	assert_memory_equal(c.matrix + 4, r21, sizeof(r21));
	assert_int_equal(ec_init(&c, 2, 2), 0);
	assert_memory_equal(c.matrix + 4, r22, sizeof(r22));
	assert_int_equal(ec_init(&c, 4, 2), 0);
	assert_memory_equal(c.matrix + 16, r42, sizeof(r42));
	/* the top is the identity: the code is systematic */
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			assert_int_equal(c.matrix[i * 4 + j], i == j);
	/* policy byte 0x22 is 4:2 (objects.md §2) */
	assert_int_equal(ec_init_policy(&c, 0x22), 0);
	assert_int_equal(c.d, 4);
	assert_int_equal(c.p, 2);
	assert_int_equal(c.strip, 128);
}

static void test_stripe_vector(void **state)
{
	static const uint8_t p0[] = { 0xd4, 0xd5, 0xd6, 0xd7,
				      0xd0, 0xd1, 0xd2, 0xd3 };
	static const uint8_t p1[] = { 0x7d, 0x7c, 0x7f, 0x7e,
				      0x79, 0x78, 0x7b, 0x7a };
	uint8_t stripe[EC_STRIPE_SIZE], strips[6][128];
	uint8_t *data[4] = { strips[0], strips[1], strips[2], strips[3] };
	uint8_t *parity[2] = { strips[4], strips[5] };
	struct ec_code c;

	for (int i = 0; i < EC_STRIPE_SIZE; i++)
		stripe[i] = (uint8_t)i;
	assert_int_equal(ec_init(&c, 4, 2), 0);
	ec_split(&c, stripe, 1, data);
	assert_int_equal(strips[1][0], 128);
	ec_encode(&c, 128, data, parity);
	assert_memory_equal(strips[4], p0, sizeof(p0));
	assert_memory_equal(strips[5], p1, sizeof(p1));
}

static void test_bad_shapes(void **state)
{
	struct ec_code c;

	assert_int_equal(ec_init(&c, 3, 1), -1);
	assert_int_equal(ec_init(&c, 32, 1), -1);
	assert_int_equal(ec_init(&c, 1, 1), -1);
	assert_int_equal(ec_init(&c, 4, 0), -1);
	assert_int_equal(ec_init(&c, 4, 16), -1);
	assert_int_equal(ec_init_policy(&c, 0), -1);
	assert_int_equal(ec_init_policy(&c, 0x20), -1);	/* 4:0 */
	assert_int_equal(ec_init_policy(&c, 0x31), -1);	/* 6:1 */
}

/* every parity byte of a random run of stripes, by the slow multiply */
static void check_against_slow(const struct ec_code *c, size_t len,
			       uint8_t *const *data, uint8_t *const *parity)
{
	for (int k = 0; k < c->p; k++) {
		const uint8_t *row = c->matrix + (c->d + k) * c->d;

		for (size_t b = 0; b < len; b++) {
			uint8_t s = 0;

			for (int j = 0; j < c->d; j++)
				s ^= slow_mul(row[j], data[j][b]);
			assert_int_equal(parity[k][b], s);
		}
	}
}

/* the next choice of d of n indices in lexicographic order, or false */
static bool next_choice(int *idx, int d, int n)
{
	int i = d - 1;

	while (i >= 0 && idx[i] == n - d + i)
		i--;
	if (i < 0)
		return false;
	idx[i]++;
	for (int j = i + 1; j < d; j++)
		idx[j] = idx[j - 1] + 1;
	return true;
}

static void random_choice(int *idx, int d, int n, unsigned int *seed)
{
	int perm[EC_MAX_STRIPS];

	for (int i = 0; i < n; i++)
		perm[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = rand_r(seed) % (i + 1), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	/* unsorted on purpose: decode takes them in any order */
	memcpy(idx, perm, (size_t)d * sizeof(int));
}

static double choose(int n, int k)
{
	double r = 1;

	for (int i = 1; i <= k; i++)
		r = r * (n - k + i) / i;
	return r;
}

static void roundtrip(int d, int p, unsigned int *seed)
{
	enum { STRIPES = 3 };
	uint8_t obj[STRIPES * EC_STRIPE_SIZE], back[sizeof(obj)];
	uint8_t strips[EC_MAX_STRIPS][STRIPES * 256];
	uint8_t out[EC_MAX_DATA][STRIPES * 256];
	uint8_t *all[EC_MAX_STRIPS], *in[EC_MAX_DATA], *dout[EC_MAX_DATA];
	int idx[EC_MAX_DATA], tries = 0;
	bool every = choose(d + p, d) <= 2000;
	struct ec_code c;
	size_t len;

	assert_int_equal(ec_init(&c, d, p), 0);
	len = STRIPES * (size_t)c.strip;
	for (int i = 0; i < d + p; i++)
		all[i] = strips[i];
	for (int j = 0; j < d; j++)
		dout[j] = out[j];
	fill_random(obj, sizeof(obj), seed);
	ec_split(&c, obj, STRIPES, all);
	ec_encode(&c, len, all, all + d);
	check_against_slow(&c, len, all, all + d);
	for (int i = 0; i < d; i++)
		idx[i] = i;
	do {
		if (!every)
			random_choice(idx, d, d + p, seed);
		for (int i = 0; i < d; i++)
			in[i] = all[idx[i]];
		memset(out, 0xee, sizeof(out));
		assert_int_equal(ec_decode(&c, len, idx, in, dout), 0);
		ec_join(&c, dout, STRIPES, back);
		assert_memory_equal(back, obj, sizeof(obj));
		tries++;
	} while (every ? next_choice(idx, d, d + p) : tries < 300);
}

static void test_roundtrip_all_shapes(void **state)
{
	unsigned int seed = 20261201;

	for (size_t i = 0; i < sizeof(shapes_d) / sizeof(*shapes_d); i++)
		for (int p = 1; p <= EC_MAX_PARITY; p++)
			roundtrip(shapes_d[i], p, &seed);
}

static void test_decode_refuses_bad_choice(void **state)
{
	uint8_t buf[4][64];
	uint8_t *in[4] = { buf[0], buf[1], buf[2], buf[3] };
	uint8_t *out[2] = { buf[2], buf[3] };
	int dup[2] = { 1, 1 }, range[2] = { 0, 3 }, neg[2] = { -1, 0 };
	struct ec_code c;

	assert_int_equal(ec_init(&c, 2, 1), 0);
	assert_int_equal(ec_decode(&c, 64, dup, in, out), -1);
	assert_int_equal(ec_decode(&c, 64, range, in, out), -1);
	assert_int_equal(ec_decode(&c, 64, neg, in, out), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parity_rows),
		cmocka_unit_test(test_stripe_vector),
		cmocka_unit_test(test_bad_shapes),
		cmocka_unit_test(test_roundtrip_all_shapes),
		cmocka_unit_test(test_decode_refuses_bad_choice),
	};

	return cmocka_run_group_tests_name("ec", tests, NULL, NULL);
}
