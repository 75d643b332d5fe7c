// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The write-hole model check of doc/erasure-coding.md §3, on the real
 * store (sheep/store/strip.c: the D+P strips of one object, side by side
 * in one store), the real codec (lib/ec.c) and the real resolution rules
 * (sheep/gw/ec_resolve.c).  For the shapes 2:1, 2:2 and 4:2, an object at
 * version 1 gets version 2 written by a gateway that dies: after k of the
 * D+P PREPAREs, with the next one's data write cut short or not, or after
 * all of them and m COMMITs.  Then a resolution asks the targets of R1
 * (every subset) and applies its verdict, and a second one asks those of
 * R2 (every majority).  Checked each time:
 *
 * - an acknowledged write (all PREPAREs answered) is never aborted;
 * - with at most P targets missing and P < D, nothing waits;
 * - the second verdict is the first one, once the first decided;
 * - every choice of D strips the verdict leaves current decodes to the
 *   object of the verdict's version, byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "ec.h"
#include "gw/ec_resolve.h"
#include "store/store.h"

#define STRIP	4096u
#define OID	UINT64_C(0x00abcdef00000011)
#define MAXN	EC_MAX_STRIPS
/* version 2 rewrites this part of every strip */
#define W_OFF	1024u
#define W_LEN	2048u

static char base[] = "/dev/shm/kelpie-test-ec-resolve.XXXXXX";

struct shape {
	int d, p, n;
	struct ec_code code;
	uint8_t strips[2][MAXN][STRIP];		/* of versions 1 and 2 */
};

static struct shape sh;
static unsigned long nr_reads, nr_runs;

static struct obj_key key(int i)
{
	return (struct obj_key){ .oid = OID, .idx = (uint8_t)i };
}

static int setup(void **state)
{
	if (!mkdtemp(base))
		return -1;
	return store_init(base, true);
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	printf("# %lu resolutions, %lu decodes checked\n", nr_runs, nr_reads);
	return system(cmd) ? -1 : 0;
}

/* the strips of versions 1 and 2: version 2 changes W_OFF..+W_LEN */
static void make_shape(int d, int p)
{
	uint8_t *data[MAXN], *par[MAXN];
	unsigned int seed = (unsigned int)(d * 31 + p);

	sh.d = d;
	sh.p = p;
	sh.n = d + p;
	assert_int_equal(ec_init(&sh.code, d, p), 0);
	for (int v = 0; v < 2; v++) {
		for (int i = 0; i < d; i++)
			for (uint32_t b = 0; b < STRIP; b++)
				sh.strips[v][i][b] = (uint8_t)rand_r(&seed);
		if (v == 1)
			for (int i = 0; i < d; i++) {
				memcpy(sh.strips[1][i], sh.strips[0][i], W_OFF);
				memcpy(sh.strips[1][i] + W_OFF + W_LEN,
				       sh.strips[0][i] + W_OFF + W_LEN,
				       STRIP - W_OFF - W_LEN);
			}
		for (int i = 0; i < sh.n; i++)
			(i < d ? data : par)[i < d ? i : i - d] =
				sh.strips[v][i];
		ec_encode(&sh.code, STRIP, data, par);
	}
}

/* every target at version 1, committed */
static void reset(void)
{
	for (int i = 0; i < sh.n; i++) {
		store_remove(key(i));
		assert_int_equal(store_strip_prepare(key(i), STRIP, 1, 0,
						     sh.strips[0][i], STRIP,
						     0), SD_RES_SUCCESS);
		assert_int_equal(store_strip_commit(key(i), 1),
				 SD_RES_SUCCESS);
	}
}

static void prepare2(int i)
{
	assert_int_equal(store_strip_prepare(key(i), STRIP, 2, 1,
					     sh.strips[1][i] + W_OFF, W_LEN,
					     W_OFF), SD_RES_SUCCESS);
}

/*
 * The gateway of version 2 dies after @k PREPAREs (target k's data write
 * cut short if @torn) or, with k == n, after @m COMMITs
 */
static void crash_write(int k, bool torn, int m)
{
	for (int i = 0; i < k; i++)
		prepare2(i);
	if (torn) {
		prepare2(k);
		/* the second half of its new bytes never reached the disk */
		assert_int_equal(store_write(key(k), sh.strips[0][k] +
					     W_OFF + W_LEN / 2, W_LEN / 2,
					     W_OFF + W_LEN / 2, false),
				 SD_RES_SUCCESS);
	}
	for (int i = 0; i < m; i++)
		assert_int_equal(store_strip_commit(key(i), 2),
				 SD_RES_SUCCESS);
}

static enum ec_verdict resolve(unsigned int set)
{
	enum ec_holds t[MAXN];
	struct strip_state st;
	enum ec_verdict v;

	for (int i = 0; i < sh.n; i++) {
		t[i] = EC_UNKNOWN;
		if ((set & (1u << i)) &&
		    store_strip_state(key(i), &st) == SD_RES_SUCCESS)
			t[i] = ec_holds_of(&st, 2);
	}
	v = ec_resolve(sh.d, sh.n, t);
	for (int i = 0; i < sh.n; i++) {
		if (!(set & (1u << i)))
			continue;
		if (v == EC_ABORT)
			assert_int_equal(store_strip_abort(key(i), 2),
					 SD_RES_SUCCESS);
		else if (v == EC_COMMIT && t[i] == EC_HOLDS)
			assert_int_equal(store_strip_commit(key(i), 2),
					 SD_RES_SUCCESS);
	}
	nr_runs++;
	return v;
}

/* which strips of @set are current after verdict @v */
static unsigned int current(unsigned int set, enum ec_verdict v)
{
	struct strip_state st;
	unsigned int cur = 0;

	for (int i = 0; i < sh.n; i++) {
		if (!(set & (1u << i)) ||
		    store_strip_state(key(i), &st) != SD_RES_SUCCESS)
			continue;
		if (v == EC_COMMIT && st.committed >= 2)
			cur |= 1u << i;
		if (v == EC_ABORT && st.committed == 1 && !st.nr_pending)
			cur |= 1u << i;
	}
	return cur;
}

/* decode from every D strips of @cur: version @ver's data strips */
static void check_reads(unsigned int cur, int ver)
{
	static uint8_t in[MAXN][STRIP], out[EC_MAX_DATA][STRIP];
	uint8_t *inp[MAXN], *outp[EC_MAX_DATA];
	int idx[MAXN];

	for (int i = 0; i < sh.n; i++)
		if (cur & (1u << i))
			assert_int_equal(store_read(key(i), in[i], STRIP, 0),
					 SD_RES_SUCCESS);
	for (unsigned int c = 1; c < (1u << sh.n); c++) {
		int k = 0;

		if ((c & cur) != c || __builtin_popcount(c) != sh.d)
			continue;
		for (int i = 0; i < sh.n; i++)
			if (c & (1u << i)) {
				idx[k] = i;
				inp[k++] = in[i];
			}
		for (int j = 0; j < sh.d; j++)
			outp[j] = out[j];
		assert_int_equal(ec_decode(&sh.code, STRIP, idx, inp, outp),
				 0);
		for (int j = 0; j < sh.d; j++)
			assert_memory_equal(out[j], sh.strips[ver - 1][j],
					    STRIP);
		nr_reads++;
	}
}

static void check_verdict(unsigned int set, enum ec_verdict v, bool acked)
{
	int missing = sh.n - __builtin_popcount(set);

	if (acked)
		assert_int_not_equal(v, EC_ABORT);
	if (missing <= sh.p && sh.p < sh.d)
		assert_int_not_equal(v, EC_WAIT);
	if (v != EC_WAIT)
		check_reads(current(set, v), v == EC_COMMIT ? 2 : 1);
}

/* the targets as the dead gateway left them */
static void crashed(int k, bool torn, int m)
{
	reset();
	crash_write(k, torn, m);
}

static void scenario(int k, bool torn, int m)
{
	unsigned int all = (1u << sh.n) - 1;
	bool acked = k == sh.n;

	for (unsigned int r1 = 0; r1 <= all; r1++) {
		enum ec_verdict v1, v2;

		crashed(k, torn, m);
		v1 = resolve(r1);
		check_verdict(r1, v1, acked);
		/* a wait changed nothing: r1 alone covers every r2 */
		if (v1 == EC_WAIT)
			continue;
		for (unsigned int r2 = 1; r2 <= all; r2++) {
			if (__builtin_popcount(r2) * 2 <= sh.n)
				continue;
			crashed(k, torn, m);
			assert_int_equal(resolve(r1), v1);
			v2 = resolve(r2);
			check_verdict(r2, v2, acked);
			assert_int_equal(v2, v1);
		}
	}
}

static void run_shape(int d, int p)
{
	make_shape(d, p);
	for (int k = 0; k <= sh.n; k++) {
		scenario(k, false, 0);
		if (k < sh.n)
			scenario(k, true, 0);
	}
	for (int m = 1; m <= sh.n; m++)
		scenario(sh.n, false, m);
}

static void test_2_1(void **state)
{
	run_shape(2, 1);
}

static void test_2_2(void **state)
{
	run_shape(2, 2);
}

static void test_4_2(void **state)
{
	run_shape(4, 2);
}

/* the rules alone, where the model above cannot reach */
static void test_rules(void **state)
{
	enum ec_holds t[6] = { EC_FINAL, EC_UNKNOWN, EC_UNKNOWN, EC_UNKNOWN,
			       EC_UNKNOWN, EC_UNKNOWN };

	/* one committed target is enough */
	assert_int_equal(ec_resolve(4, 6, t), EC_COMMIT);
	/* a minority decides nothing */
	t[0] = EC_LACKS;
	t[1] = t[2] = EC_LACKS;
	assert_int_equal(ec_resolve(4, 6, t), EC_WAIT);
	t[3] = EC_HOLDS;
	assert_int_equal(ec_resolve(4, 6, t), EC_ABORT);
	/* a majority that holds, but fewer than D of them */
	for (int i = 0; i < 6; i++)
		t[i] = i < 3 ? EC_HOLDS : EC_UNKNOWN;
	assert_int_equal(ec_resolve(2, 5, t), EC_COMMIT);
	assert_int_equal(ec_resolve(4, 5, t), EC_WAIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_2_1),
		cmocka_unit_test(test_2_2),
		cmocka_unit_test(test_4_2),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
