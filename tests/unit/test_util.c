// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Utility tests: size parsing and formatting (dog.md §1.3, §1.6), address
 * conversion (protocol.md §9.1), object id helpers and object sizes
 * (objects.md §1), time format (objects.md §5) and small helpers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "util.h"
#include "hash.h"
#include "net.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)
#define PiB (UINT64_C(1) << 50)

/* ---- parse_size ---- */

static void expect_size(const char *s, uint64_t want, int line)
{
	uint64_t v = 0xdeadbeef;

	if (parse_size(s, &v) != 0)
		fail_msg("line %d: parse_size(\"%s\") failed", line, s);
	if (v != want)
		fail_msg("line %d: parse_size(\"%s\") = %llu, want %llu", line,
			 s, (unsigned long long)v, (unsigned long long)want);
}
#define size_ok(s, want) expect_size(s, want, __LINE__)

static void expect_bad_size(const char *s, int line)
{
	uint64_t v = 12345;

	if (parse_size(s, &v) == 0)
		fail_msg("line %d: parse_size(\"%s\") accepted (%llu)", line,
			 s, (unsigned long long)v);
}
#define size_bad(s) expect_bad_size(s, __LINE__)

static void test_parse_size_suffixes(void **state)
{
	size_ok("0", 0);
	size_ok("1", 1);
	size_ok("4096", 4096);
	size_ok("10B", 10);
	size_ok("10b", 10);
	size_ok("1K", KiB);
	size_ok("4k", 4 * KiB);
	size_ok("1M", MiB);
	size_ok("100m", 100 * MiB);
	size_ok("1G", GiB);
	size_ok("4g", 4 * GiB);
	size_ok("2T", 2 * TiB);
	size_ok("4t", 4 * TiB);
	size_ok("16P", 16 * PiB);
	size_ok("1p", PiB);
}

static void test_parse_size_fractions(void **state)
{
	size_ok("0.5K", 512);
	size_ok("1.5G", GiB + GiB / 2);
	size_ok("1.25M", MiB + MiB / 4);
	size_ok("0.5", 0);		/* fractions of a byte are dropped */
	size_ok("2.0T", 2 * TiB);
	size_ok("0.25P", PiB / 4);
}

static void test_parse_size_invalid(void **state)
{
	size_bad("");
	size_bad("abc");
	size_bad("G");
	size_bad("1X");
	size_bad("12Q");
	size_bad("1GB");		/* one suffix letter only */
	size_bad("1Gx");
	size_bad("-1");
	size_bad("-1G");
	size_bad(" 1G");
	size_bad("1 G");
	size_bad("1G ");
	size_bad("inf");
	size_bad("nan");
	size_bad("16384P");		/* 2^64 does not fit */
	size_bad("99999999999999999999");
	assert_int_equal(parse_size(NULL, &(uint64_t){ 0 }), -1);
}

/* ---- size_to_str ---- */

static void expect_str(uint64_t size, const char *want, int line)
{
	char buf[64];

	memset(buf, 'x', sizeof(buf));
	size_to_str(size, buf, sizeof(buf));
	if (strcmp(buf, want))
		fail_msg("line %d: size_to_str(%llu) = \"%s\", want \"%s\"",
			 line, (unsigned long long)size, buf, want);
}
#define str_is(size, want) expect_str(size, want, __LINE__)

static void test_size_to_str(void **state)
{
	char buf[16];

	/* the examples of dog.md §1.3 */
	str_is(0, "0.0 MB");
	str_is(4 * MiB, "4.0 MB");
	str_is(100 * MiB, "100 MB");
	str_is(4 * GiB, "4.0 GB");
	str_is(16 * PiB, "16 PB");
	/* unit boundaries and precision switch at 10 */
	str_is(MiB / 2, "0.5 MB");
	str_is(9 * MiB, "9.0 MB");
	str_is(10 * MiB, "10 MB");
	str_is(1023 * MiB, "1023 MB");
	str_is(GiB, "1.0 GB");
	str_is(GiB + GiB / 2, "1.5 GB");
	str_is(10 * GiB, "10 GB");
	str_is(TiB, "1.0 TB");
	str_is(4 * TiB, "4.0 TB");
	str_is(PiB, "1.0 PB");
	str_is(UINT64_C(1) << 60, "1.0 EB");
	str_is(UINT64_MAX, "16 EB");
	/* the return value is the buffer */
	assert_ptr_equal(size_to_str(MiB, buf, sizeof(buf)), buf);
}

/* ---- addresses ---- */

static void test_addr_ipv4(void **state)
{
	uint8_t a[16], want[16] = { 0 };
	char s[64];

	want[12] = 127;
	want[15] = 1;
	assert_int_equal(str_to_addr("127.0.0.1", a), 0);
	assert_memory_equal(a, want, 16);	/* 12 zeros, not ::ffff: */
	assert_string_equal(addr_to_str(a, s, sizeof(s)), "127.0.0.1");

	assert_int_equal(str_to_addr("10.99.0.3", a), 0);
	assert_int_equal(a[10], 0);
	assert_int_equal(a[11], 0);
	assert_int_equal(a[12], 10);
	assert_int_equal(a[13], 99);
	assert_int_equal(a[14], 0);
	assert_int_equal(a[15], 3);
	assert_string_equal(addr_to_str(a, s, sizeof(s)), "10.99.0.3");
}

static void test_addr_ipv6(void **state)
{
	uint8_t a[16];
	char s[64];

	assert_int_equal(str_to_addr("fe80::1", a), 0);
	assert_int_equal(a[0], 0xfe);
	assert_int_equal(a[1], 0x80);
	assert_int_equal(a[15], 1);
	assert_string_equal(addr_to_str(a, s, sizeof(s)), "fe80::1");

	assert_int_equal(str_to_addr("2001:db8::42:7", a), 0);
	assert_string_equal(addr_to_str(a, s, sizeof(s)), "2001:db8::42:7");

	/* ::1 has byte 12 == 0, so it is printed as IPv6 */
	assert_int_equal(str_to_addr("::1", a), 0);
	assert_string_equal(addr_to_str(a, s, sizeof(s)), "::1");
}

static void test_addr_invalid(void **state)
{
	uint8_t a[16];

	assert_int_not_equal(str_to_addr("", a), 0);
	assert_int_not_equal(str_to_addr("localhost", a), 0);
	assert_int_not_equal(str_to_addr("1.2.3", a), 0);
	assert_int_not_equal(str_to_addr("256.1.1.1", a), 0);
	assert_int_not_equal(str_to_addr("1.2.3.4:7000", a), 0);
	assert_int_not_equal(str_to_addr("fe80:::1", a), 0);
}

static void test_node_to_str(void **state)
{
	struct sd_node n;
	char s[80];

	memset(&n, 0, sizeof(n));
	assert_int_equal(str_to_addr("127.0.0.1", n.nid.addr), 0);
	n.nid.port = 7000;
	assert_string_equal(node_to_str(&n, s, sizeof(s)), "127.0.0.1:7000");
	n.nid.port = 65535;
	assert_string_equal(node_to_str(&n, s, sizeof(s)), "127.0.0.1:65535");
}

/* ---- object ids (objects.md §1.2 examples, vid of "test") ---- */

static void test_oid_constructors(void **state)
{
	uint32_t vid = sd_hash_vdi("test");

	assert_int_equal(vid, 0x7c2b25);
	assert_true(vid_to_vdi_oid(vid) == UINT64_C(0x807c2b2500000000));
	assert_true(vid_to_data_oid(vid, 0) == UINT64_C(0x007c2b2500000000));
	assert_true(vid_to_data_oid(vid, 1) == UINT64_C(0x007c2b2500000001));
	assert_true(data_oid_to_ledger_oid(vid_to_data_oid(vid, 1)) ==
		    UINT64_C(0x087c2b2500000001));
	assert_true(vid_to_vmstate_oid(vid, 3) ==
		    UINT64_C(0x407c2b2500000003));
	assert_true((VDI_BTREE_BIT | vid_to_data_oid(vid, 5)) ==
		    UINT64_C(0x107c2b2500000005));
	assert_true(vid_to_attr_oid(vid, 0x17d2d865) ==
		    UINT64_C(0x207c2b2517d2d865));
	/* largest vid and index do not spill into the type bits */
	assert_true(vid_to_data_oid(0xffffff, 0xffffffff) ==
		    UINT64_C(0x00ffffffffffffff));
	assert_true(vid_to_vdi_oid(0xffffff) == UINT64_C(0x80ffffff00000000));
}

static void test_oid_accessors(void **state)
{
	uint64_t d = UINT64_C(0x007c2b2500000001);

	assert_int_equal(oid_to_vid(d), 0x7c2b25);
	assert_int_equal(oid_to_vid(UINT64_C(0x807c2b2500000000)), 0x7c2b25);
	assert_int_equal(oid_to_vid(UINT64_C(0x087c2b2500000001)), 0x7c2b25);
	assert_int_equal(oid_to_vid(UINT64_C(0x207c2b2517d2d865)), 0x7c2b25);
	assert_int_equal(data_oid_to_idx(d), 1);
	assert_int_equal(data_oid_to_idx(UINT64_C(0x00ed202bfffffffe)),
			 0xfffffffe);

	assert_true(is_data_obj(d));
	assert_false(is_vdi_obj(d));
	assert_true(is_vdi_obj(UINT64_C(0x807c2b2500000000)));
	assert_false(is_data_obj(UINT64_C(0x807c2b2500000000)));
	assert_true(is_vmstate_obj(UINT64_C(0x407c2b2500000003)));
	assert_false(is_data_obj(UINT64_C(0x407c2b2500000003)));
	assert_true(is_vdi_attr_obj(UINT64_C(0x207c2b2517d2d865)));
	assert_false(is_data_obj(UINT64_C(0x207c2b2517d2d865)));
	assert_true(is_ledger_obj(UINT64_C(0x087c2b2500000001)));
	assert_false(is_data_obj(UINT64_C(0x087c2b2500000001)));
	assert_false(is_data_obj(UINT64_C(0x107c2b2500000005)));
	assert_false(is_ledger_obj(d));

	assert_true(is_sparse_obj(UINT64_C(0x807c2b2500000000)));
	assert_true(is_sparse_obj(UINT64_C(0x087c2b2500000001)));
	assert_false(is_sparse_obj(d));
	assert_false(is_sparse_obj(UINT64_C(0x407c2b2500000003)));
}

static void test_obj_size(void **state)
{
	assert_int_equal(sd_obj_size(UINT64_C(0x807c2b2500000000), 22),
			 12587576);
	assert_int_equal(sd_obj_size(UINT64_C(0x807c2b2500000000), 20),
			 12587576);
	assert_int_equal(sd_obj_size(UINT64_C(0x207c2b2517d2d865), 22), 66320);
	assert_int_equal(sd_obj_size(UINT64_C(0x087c2b2500000001), 20),
			 4194304);
	assert_int_equal(sd_obj_size(UINT64_C(0x107c2b2500000005), 20),
			 4194304);
	assert_int_equal(sd_obj_size(UINT64_C(0x007c2b2500000001), 22),
			 4194304);
	assert_int_equal(sd_obj_size(UINT64_C(0x007c2b2500000001), 0),
			 4194304);
	assert_int_equal(sd_obj_size(UINT64_C(0x007c2b2500000001), 20),
			 1048576);
	assert_int_equal(sd_obj_size(UINT64_C(0x407c2b2500000003), 23),
			 8388608);
	assert_true(sd_obj_size(UINT64_C(0x007c2b2500000001), 31) ==
		    UINT32_C(0x80000000));
	/* VDI size limit of a normal inode at the default object size */
	assert_true((uint64_t)SD_DATA_OBJ_SIZE * SD_INODE_DATA_INDEX ==
		    4 * TiB);
	assert_true(SD_MAX_VDI_SIZE == 16 * PiB);
}

static void test_ec_policy(void **state)
{
	/* objects.md §2 examples */
	assert_int_equal(ec_policy_data(0x11), 2);
	assert_int_equal(ec_policy_parity(0x11), 1);
	assert_int_equal(ec_policy_data(0x22), 4);
	assert_int_equal(ec_policy_parity(0x22), 2);
	assert_int_equal(ec_policy_data(0x44), 8);
	assert_int_equal(ec_policy_parity(0x44), 4);
	assert_int_equal(ec_policy_data(0x8f), 16);
	assert_int_equal(ec_policy_parity(0x8f), 15);
	assert_int_equal(ec_policy_data(0) + ec_policy_parity(0), 0);
}

/* ---- time and small helpers ---- */

static void test_time_format(void **state)
{
	struct timeval before, after;
	uint64_t t;

	gettimeofday(&before, NULL);
	t = sd_time_now();
	gettimeofday(&after, NULL);
	assert_true((t >> 32) >= (uint64_t)before.tv_sec);
	assert_true((t >> 32) <= (uint64_t)after.tv_sec);
	/* low 32 bits: nanoseconds from microseconds */
	assert_true((t & 0xffffffff) < 1000000000);
	assert_int_equal((t & 0xffffffff) % 1000, 0);

	uint64_t a = now_msec(), b = now_msec();

	assert_true(b >= a);
}

static void test_is_zero(void **state)
{
	uint8_t buf[4096];

	memset(buf, 0, sizeof(buf));
	assert_true(is_zero(buf, sizeof(buf)));
	assert_true(is_zero(buf, 0));
	buf[4095] = 1;
	assert_false(is_zero(buf, sizeof(buf)));
	assert_true(is_zero(buf, 4095));
	buf[0] = 0x80;
	assert_false(is_zero(buf, 1));
}

static void test_macros(void **state)
{
	int a[7];

	assert_int_equal(ARRAY_SIZE(a), 7);
	assert_int_equal(DIV_ROUND_UP(0, 4), 0);
	assert_int_equal(DIV_ROUND_UP(1, 4), 1);
	assert_int_equal(DIV_ROUND_UP(8, 4), 2);
	assert_int_equal(DIV_ROUND_UP(9, 4), 3);
	/* number of data objects of a 100 MiB VDI */
	assert_int_equal(DIV_ROUND_UP(100 * MiB, SD_DATA_OBJ_SIZE), 25);
	assert_int_equal(MIN(3, 5), 3);
	assert_int_equal(MAX(3, 5), 5);
}

static void test_mkdir_rmdir(void **state)
{
	char base[] = "/tmp/kelpie-test-util.XXXXXX", path[256], f[300];
	struct stat st;
	FILE *fp;

	assert_non_null(mkdtemp(base));
	snprintf(path, sizeof(path), "%s/a/b/c", base);
	assert_int_equal(mkdir_p(path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(mkdir_p(path), 0);	/* exists already: fine */
	snprintf(f, sizeof(f), "%s/file", path);
	fp = fopen(f, "w");
	assert_non_null(fp);
	fputs("x", fp);
	fclose(fp);
	assert_int_equal(rmdir_r(base), 0);
	assert_int_not_equal(stat(base, &st), 0);
	assert_int_equal(rmdir_r(base), 0);	/* already gone: fine */
}

static void test_xread_xwrite(void **state)
{
	int p[2];
	char out[100000], in[100000];

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 7);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(xwrite(p[1], out, 1000), 1000);
	assert_int_equal(xread(p[0], in, 1000), 1000);
	assert_memory_equal(in, out, 1000);
	close(p[1]);
	/* EOF before the count is an error */
	assert_int_equal(xread(p[0], in, 10), -1);
	close(p[0]);
}

/*
 * sd_assert: a true condition costs nothing; a false one aborts, saying
 * the condition and where it was stated on stderr; a rate-limited log
 * line passes once per interval and counts what it left out
 */
static void test_assert_and_limit(void **state)
{
	struct log_limit ll = { 0 };
	unsigned int skipped = 7;
	int pfd[2], status, x = 1;
	char out[4096] = { 0 };
	pid_t pid;

	sd_assert(x == 1);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(pfd[1], STDERR_FILENO);
		sd_assert(x == 2);
		_exit(0);
	}
	close(pfd[1]);
	assert_true(read(pfd[0], out, sizeof(out) - 1) > 0);
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	assert_non_null(strstr(out, "assertion failed: x == 2"));
	assert_non_null(strstr(out, "test_util.c"));

	assert_true(log_limit_pass(&ll, &skipped));
	assert_int_equal(skipped, 0);
	assert_false(log_limit_pass(&ll, &skipped));
	assert_false(log_limit_pass(&ll, &skipped));
	ll.next_ms = 0;		/* the interval is over */
	assert_true(log_limit_pass(&ll, &skipped));
	assert_int_equal(skipped, 2);
}

/* the least RTO of a TCP socket: set where the kernel has the option */
static void test_rto_min(void **state)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), v = 0, r;
	socklen_t len = sizeof(v);

	assert_true(fd >= 0);
	r = net_set_rto_min(fd, 10000);
	if (r == 1) {
		/* an older kernel: nothing set, nothing broken */
		assert_int_equal(getsockopt(fd, IPPROTO_TCP, 45, &v, &len), -1);
		assert_int_equal(errno, ENOPROTOOPT);
	} else {
		assert_int_equal(r, 0);
		assert_int_equal(getsockopt(fd, IPPROTO_TCP, 45, &v, &len), 0);
		/* kept in jiffies: 10 ms rounded up to the tick */
		assert_in_range(v, 10000, 19999);
	}
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size_suffixes),
		cmocka_unit_test(test_parse_size_fractions),
		cmocka_unit_test(test_parse_size_invalid),
		cmocka_unit_test(test_size_to_str),
		cmocka_unit_test(test_addr_ipv4),
		cmocka_unit_test(test_addr_ipv6),
		cmocka_unit_test(test_addr_invalid),
		cmocka_unit_test(test_node_to_str),
		cmocka_unit_test(test_oid_constructors),
		cmocka_unit_test(test_oid_accessors),
		cmocka_unit_test(test_obj_size),
		cmocka_unit_test(test_ec_policy),
		cmocka_unit_test(test_time_format),
		cmocka_unit_test(test_is_zero),
		cmocka_unit_test(test_rto_min),
		cmocka_unit_test(test_macros),
		cmocka_unit_test(test_mkdir_rmdir),
		cmocka_unit_test(test_xread_xwrite),
		cmocka_unit_test(test_assert_and_limit),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
