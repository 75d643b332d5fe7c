// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * nbdbad: speak (mostly broken) NBD to a sheep's NBD port and report what
 * came back.  Used by the NBD functional tests.  Self-contained on purpose:
 * every message is built byte by byte from the NBD protocol, not with
 * Kelpie's own code.
 *
 *   nbdbad HOST PORT CASE [EXPORT]
 *
 * Prints one line per step, such as "unknown option: ERR_UNSUP" or
 * "bad request magic: closed", and exits 0; 1 when the server broke the
 * protocol (a reply we cannot parse), 2 on a local error.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define WAIT_SEC	10
#define OPTS_MAGIC	0x49484156454f5054ULL
#define REP_MAGIC	0x0003e889045565a9ULL
#define REQ_MAGIC	0x25609513U
#define SIMPLE_MAGIC	0x67446698U

enum { OPT_EXPORT_NAME = 1, OPT_ABORT, OPT_LIST, OPT_INFO = 6, OPT_GO,
	OPT_STRUCTURED_REPLY };
enum { CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM,
	CMD_WRITE_ZEROES = 6 };

static int fd = -1;
static uint64_t export_size;
static uint16_t export_flags;

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void put32(uint8_t *b, uint32_t v)
{
	put16(b, (uint16_t)(v >> 16));
	put16(b + 2, (uint16_t)v);
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)get16(b) << 16 | get16(b + 2);
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) << 32 | get32(b + 4);
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/*
 * With @small_bufs, our socket buffers are 64 KiB each way (the server's
 * still hold some MB: the option flood fills them some 200,000 options
 * deep before it is pushed back)
 */
static void connect_to(const char *host, const char *port, bool small_bufs)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	struct timeval tv = { .tv_sec = WAIT_SEC };
	int one = 1, buf = 65536;

	if (getaddrinfo(host, port, &hints, &res))
		die("getaddrinfo");
	fd = socket(res->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && small_bufs &&
	    (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)) ||
	     setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf))))
		die("setsockopt");
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen))
		die("connect");
	freeaddrinfo(res);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* 0 when @n bytes arrived, -1 when the server closed, -2 on time-out */
static int rd(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r > 0) {
			p += r;
			n -= (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -2;
		return -1;
	}
	return 0;
}

static void wr(const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t r = write(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;		/* the server may have hung up */
		p += r;
		n -= (size_t)r;
	}
}

/* what the server does next: "closed", "timeout" or "still open" */
static const char *fate(void)
{
	uint8_t b;

	switch (rd(&b, 1)) {
	case -1:
		return "closed";
	case -2:
		return "timeout";
	default:
		return "sent unexpected data";
	}
}

static void handshake(uint32_t cflags)
{
	uint8_t g[18], f[4];

	if (rd(g, sizeof(g)))
		die("greeting");
	if (get64(g) != 0x4e42444d41474943ULL || get64(g + 8) != OPTS_MAGIC) {
		fprintf(stderr, "bad greeting\n");
		exit(1);
	}
	put32(f, cflags);
	wr(f, sizeof(f));
}

static void send_opt(uint64_t magic, uint32_t opt, const void *data,
		     uint32_t len, uint32_t claimed)
{
	uint8_t h[16];

	put64(h, magic);
	put32(h + 8, opt);
	put32(h + 12, claimed);
	wr(h, sizeof(h));
	if (len)
		wr(data, len);
}

static const char *rep_name(uint32_t type)
{
	switch (type) {
	case 1: return "ACK";
	case 2: return "SERVER";
	case 3: return "INFO";
	case 0x80000001: return "ERR_UNSUP";
	case 0x80000002: return "ERR_POLICY";
	case 0x80000003: return "ERR_INVALID";
	case 0x80000006: return "ERR_UNKNOWN";
	default: return "other";
	}
}

/* one option reply; its type, or 0 if the connection ended */
static uint32_t opt_reply(uint32_t opt, uint8_t *data, uint32_t *len)
{
	uint8_t h[20];
	static uint8_t junk[65536];
	uint32_t n;

	if (rd(h, sizeof(h)))
		return 0;
	n = get32(h + 16);
	if (get64(h) != REP_MAGIC || get32(h + 8) != opt || n > 65536) {
		fprintf(stderr, "bad option reply\n");
		exit(1);
	}
	if (rd(data ? data : junk, n))
		return 0;
	if (len)
		*len = n;
	return get32(h + 12);
}

/* send an option and print the type of its (final) reply */
static void try_opt(const char *what, uint32_t opt, const void *data,
		    uint32_t len)
{
	uint32_t type;

	send_opt(OPTS_MAGIC, opt, data, len, len);
	do
		type = opt_reply(opt, NULL, NULL);
	while (type == 2 || type == 3);
	if (!type)
		printf("%s: closed\n", what);
	else
		printf("%s: %s\n", what, rep_name(type));
}

static uint32_t go_data(uint8_t *d, const char *name)
{
	uint32_t n = (uint32_t)strlen(name);

	put32(d, n);
	memcpy(d + 4, name, n);
	put16(d + 4 + n, 0);
	return n + 6;
}

/* NBD_OPT_GO; the final reply type (ACK on success) */
static uint32_t go(const char *name, char *msg, size_t msglen)
{
	uint8_t d[4200], r[4200];
	uint32_t len = go_data(d, name), type, n = 0;

	send_opt(OPTS_MAGIC, OPT_GO, d, len, len);
	for (;;) {
		type = opt_reply(OPT_GO, r, &n);
		if (type != 3)
			break;
		if (n == 12 && get16(r) == 0) {
			export_size = get64(r + 2);
			export_flags = get16(r + 10);
		}
	}
	if (msg) {
		n = n < msglen - 1 ? n : (uint32_t)msglen - 1;
		memcpy(msg, r, type & 0x80000000U ? n : 0);
		msg[type & 0x80000000U ? n : 0] = 0;
	}
	return type;
}

static void must_go(const char *name)
{
	uint32_t type;

	handshake(1);
	type = go(name, NULL, 0);
	if (type != 1) {
		printf("GO %s: %s\n", name, rep_name(type));
		exit(1);
	}
}

static void send_req(uint16_t flags, uint16_t type, uint64_t handle,
		     uint64_t off, uint32_t len, const void *data)
{
	uint8_t h[28];

	put32(h, REQ_MAGIC);
	put16(h + 4, flags);
	put16(h + 6, type);
	put64(h + 8, handle);
	put64(h + 16, off);
	put32(h + 24, len);
	wr(h, sizeof(h));
	if (data && len)
		wr(data, len);
}

/* a simple reply: its error, or -1 if the connection ended */
static long reply(uint64_t *handle)
{
	uint8_t h[16];

	if (rd(h, sizeof(h)))
		return -1;
	if (get32(h) != SIMPLE_MAGIC) {
		fprintf(stderr, "bad reply magic\n");
		exit(1);
	}
	if (handle)
		*handle = get64(h + 8);
	return get32(h + 4);
}

/* a request without payload and its reply (with @rlen bytes of data) */
static void try_req(const char *what, uint16_t flags, uint16_t type,
		    uint64_t off, uint32_t len, uint32_t rlen)
{
	static uint8_t buf[1 << 20];
	long err;

	send_req(flags, type, 7, off, len, NULL);
	err = reply(NULL);
	if (err < 0) {
		printf("%s: closed\n", what);
		return;
	}
	if (!err && rlen && rd(buf, rlen)) {
		printf("%s: data missing\n", what);
		return;
	}
	printf("%s: error %ld\n", what, err);
}

static void try_write(const char *what, uint16_t flags, uint64_t off,
		      uint32_t len)
{
	uint8_t *buf = calloc(1, len ? len : 1);
	long err;

	send_req(flags, CMD_WRITE, 9, off, len, buf);
	err = reply(NULL);
	free(buf);
	if (err < 0)
		printf("%s: closed\n", what);
	else
		printf("%s: error %ld\n", what, err);
}

/* ---- cases ---- */

/* @n WRITEs in flight at once, then @n READs of what they wrote */
static void pipeline(int n)
{
	uint8_t *buf = malloc(4096);
	uint64_t step = (export_size - 4096) / (uint64_t)n;
	int seen = 0, bad = 0;
	uint64_t h;
	long err;

	for (int i = 0; i < n; i++) {
		memset(buf, i + 1, 4096);
		/* spread over objects, some sharing one (below 4 GiB) */
		send_req(0, CMD_WRITE, (uint64_t)i, (uint64_t)i * step, 4096,
			 buf);
	}
	for (int i = 0; i < n; i++) {
		err = reply(&h);
		if (err < 0 || h >= (uint64_t)n)
			break;
		seen++;
		bad += err != 0;
	}
	printf("%d WRITEs in flight: %d answered, %d failed\n", n, seen, bad);
	for (int i = 0; i < n; i++)
		send_req(0, CMD_READ, (uint64_t)i, (uint64_t)i * step, 4096,
			 NULL);
	seen = bad = 0;
	for (int i = 0; i < n; i++) {
		err = reply(&h);
		if (err || h >= (uint64_t)n || rd(buf, 4096))
			break;
		seen++;
		for (int k = 0; k < 4096; k++)
			if (buf[k] != (uint8_t)(h + 1)) {
				bad++;
				break;
			}
	}
	printf("%d READs in flight: %d answered, %d with wrong data\n", n,
	       seen, bad);
	free(buf);
}

/*
 * Options sent without reading a reply (up to 128 MB: more than the
 * socket buffers of both ends can hold), until the server stops taking
 * them (it must, or its reply queue would grow without bound); then every
 * reply must still arrive.  They go 256 to a write: one 16-byte segment
 * each cost TCP far more than the server (200,000 segments, receive
 * buffers overrun by their overhead, retransmissions backing off), and
 * on a loaded machine took the server's 30 s handshake limit (ci38, ci40)
 */
static void option_flood(void)
{
	enum { BATCH = 256, MAX_OPTS = 8000000 };
	struct timeval tv = { .tv_sec = 2 };
	static uint8_t h[16 * BATCH];
	long long bytes = 0;
	long sent, got = 0;
	uint32_t type;

	handshake(1);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	for (int i = 0; i < BATCH; i++) {
		put64(h + 16 * i, OPTS_MAGIC);
		put32(h + 16 * i + 8, 0x4321);
		put32(h + 16 * i + 12, 0);
	}
	/* a short write is the push back (the rest of an option, unsent,
	 * leaves the server waiting for it: no reply is owed) */
	while (bytes < 16LL * MAX_OPTS) {
		ssize_t n = write(fd, h, sizeof(h));

		if (n > 0)
			bytes += n;
		if (n != (ssize_t)sizeof(h))
			break;
	}
	sent = (long)(bytes / 16);
	while (got < sent) {
		type = opt_reply(0x4321, NULL, NULL);
		if (type != 0x80000001U)
			break;
		got++;
	}
	if (got != sent)
		fprintf(stderr, "option flood: %ld sent, %ld replies\n", sent,
			got);
	printf("options sent without reading replies: %s\n",
	       sent == MAX_OPTS ? "the server never pushed back" :
	       got == sent ? "pushed back, then every reply arrived" :
	       "replies missing");
}

/*
 * After a stall of ours: read (and drop) whatever the server still sends
 * until it closes the connection, for up to @max_sec seconds.  Returns
 * the seconds that took, or -1 if it was still open.
 */
static long drain_until_closed(int max_sec)
{
	struct timeval tv = { .tv_sec = 1 };
	struct timeval t0, t1;
	uint8_t buf[65536];

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	gettimeofday(&t0, NULL);
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));

		gettimeofday(&t1, NULL);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR &&
			       errno != EWOULDBLOCK))
			break;
		if (t1.tv_sec - t0.tv_sec > max_sec)
			return -1;
	}
	return t1.tv_sec - t0.tv_sec;
}

/* the server must wait out its stall limit (30 s), then close */
static const char *stall_fate(void)
{
	long sec = drain_until_closed(60);

	return sec < 0 ? "still open" : sec >= 25 ?
	       "closed after the stall limit" : "closed at once";
}

/*
 * A WRITE of 64 KiB sent in three parts: 1 KiB, "begun" on stdout, then
 * (the test stops the server 2 s later, for 32 s) 1 KiB 4 s later, the
 * rest 40 s later.  The server's own stop is not our stall: the WRITE
 * must be answered.
 */
static void across_a_stop(void)
{
	enum { LEN = 64 << 10 };
	uint8_t *buf = malloc(LEN);
	long err;

	memset(buf, 0x5a, LEN);
	send_req(0, CMD_WRITE, 1, 0, LEN, NULL);
	wr(buf, 1024);
	printf("begun\n");
	sleep(4);
	wr(buf + 1024, 1024);
	sleep(36);
	wr(buf + 2048, LEN - 2048);
	err = reply(NULL);
	printf("a WRITE sent across 32 s of the server stopped: %s\n",
	       err < 0 ? "closed" : err ? "failed" : "answered");
	free(buf);
}

static int run_case(const char *host, const char *port, const char *c,
		    const char *ex)
{
	uint8_t d[4200];
	char msg[512];
	uint32_t type;

	if (!ex && (!strcmp(c, "go") || !strcmp(c, "requests") ||
		    !strcmp(c, "pipeline") || !strcmp(c, "request-magic") ||
		    !strcmp(c, "big-write") || !strcmp(c, "readonly") ||
		    !strcmp(c, "truncated") || !strcmp(c, "abandon") ||
		    !strcmp(c, "across-a-stop") ||
		    !strncmp(c, "stall-", 6))) {
		fprintf(stderr, "case %s needs an export\n", c);
		return 2;
	}
	connect_to(host, port, !strcmp(c, "option-flood"));
	if (!strcmp(c, "client-flags")) {
		handshake(0x80);
		printf("unknown client flags: %s\n", fate());
	} else if (!strcmp(c, "option-magic")) {
		handshake(1);
		send_opt(0x1122334455667788ULL, OPT_LIST, NULL, 0, 0);
		printf("bad option magic: %s\n", fate());
	} else if (!strcmp(c, "option-length")) {
		handshake(1);
		send_opt(OPTS_MAGIC, OPT_GO, NULL, 0, 0x7fffffff);
		printf("option length 2147483647: %s\n", fate());
	} else if (!strcmp(c, "options")) {
		handshake(1);
		try_opt("unknown option 0x1234", 0x1234, NULL, 0);
		try_opt("option 0 with data", 0, "xyz", 3);
		try_opt("STRUCTURED_REPLY", OPT_STRUCTURED_REPLY, NULL, 0);
		try_opt("LIST with data", OPT_LIST, "x", 1);
		put32(d, 1000);
		try_opt("GO with a name past the data", OPT_GO, d, 8);
		try_opt("GO with no data", OPT_GO, NULL, 0);
		try_opt("INFO without a name", OPT_INFO, d,
			go_data(d, ""));
		try_opt("INFO of a missing VDI", OPT_INFO, d,
			go_data(d, "no-such-vdi"));
		try_opt("INFO of a bad name", OPT_INFO, d,
			go_data(d, "@tag"));
		try_opt("INFO of a missing snapshot", OPT_INFO, d,
			go_data(d, "x@no-such-tag"));
		if (ex)
			try_opt("INFO of the export", OPT_INFO, d,
				go_data(d, ex));
		try_opt("ABORT", OPT_ABORT, NULL, 0);
		printf("after ABORT: %s\n", fate());
	} else if (!strcmp(c, "option-flood")) {
		option_flood();
	} else if (!strcmp(c, "export-name-missing")) {
		handshake(1);
		send_opt(OPTS_MAGIC, OPT_EXPORT_NAME, "no-such-vdi", 11, 11);
		printf("EXPORT_NAME of a missing VDI: %s\n", fate());
	} else if (!strcmp(c, "go")) {
		handshake(1);
		type = go(ex, msg, sizeof(msg));
		if (type == 1)
			printf("GO %s: ACK size %llu flags 0x%x\n", ex,
			       (unsigned long long)export_size, export_flags);
		else
			printf("GO %s: %s (%s)\n", ex, rep_name(type), msg);
	} else if (!strcmp(c, "requests")) {
		must_go(ex);
		try_req("READ at the end", 0, CMD_READ, export_size, 1, 0);
		try_req("READ past the end", 0, CMD_READ, export_size - 512,
			1024, 0);
		try_req("READ with offset overflow", 0, CMD_READ,
			UINT64_MAX - 100, 4096, 0);
		try_req("READ of 64 MiB", 0, CMD_READ, 0, 64 << 20, 0);
		try_req("READ with an unknown flag", 0x8, CMD_READ, 0, 512,
			0);
		try_req("unknown command 9", 0, 9, 0, 512, 0);
		try_req("BLOCK_STATUS without negotiation", 0, 7, 0, 512, 0);
		try_req("TRIM past the end", 0, CMD_TRIM, export_size, 4096,
			0);
		try_req("WRITE_ZEROES past the end", 0, CMD_WRITE_ZEROES,
			export_size - 1, 2, 0);
		try_write("WRITE past the end", 0, export_size - 100, 4096);
		try_write("WRITE with an unknown flag", 0x20, 0, 4096);
		try_write("WRITE of 0 bytes", 0, 0, 0);
		try_req("READ of 512 bytes", 0, CMD_READ, 0, 512, 512);
		try_req("FLUSH", 0, CMD_FLUSH, 0, 0, 0);
		send_req(0, CMD_DISC, 1, 0, 0, NULL);
		printf("after DISC: %s\n", fate());
	} else if (!strcmp(c, "pipeline")) {
		must_go(ex);
		pipeline(48);
	} else if (!strcmp(c, "request-magic")) {
		must_go(ex);
		wr("\x12\x34\x56\x78", 4);
		send_req(0, CMD_READ, 1, 0, 512, NULL);
		printf("bad request magic: %s\n", fate());
	} else if (!strcmp(c, "big-write")) {
		must_go(ex);
		send_req(0, CMD_WRITE, 1, 0, 64 << 20, NULL);
		printf("WRITE of 64 MiB: %s\n", fate());
	} else if (!strcmp(c, "readonly")) {
		must_go(ex);
		printf("flags: read-only %s, multi-conn %s\n",
		       export_flags & 2 ? "yes" : "no",
		       export_flags & 0x100 ? "yes" : "no");
		try_write("WRITE to a snapshot", 0, 0, 4096);
		try_req("TRIM of a snapshot", 0, CMD_TRIM, 0, 4 << 20, 0);
		try_req("WRITE_ZEROES on a snapshot", 0, CMD_WRITE_ZEROES, 0,
			4096, 0);
		try_req("READ of a snapshot", 0, CMD_READ, 0, 4096, 4096);
	} else if (!strcmp(c, "abandon")) {
		/* hang up with writes in flight */
		uint8_t *buf = calloc(1, 1 << 20);

		must_go(ex);
		for (int i = 0; i < 32; i++)
			send_req(0, CMD_WRITE, (uint64_t)i,
				 (uint64_t)i << 20, 1 << 20, buf);
		free(buf);
		printf("hung up with 32 writes in flight\n");
	} else if (!strcmp(c, "truncated")) {
		/* hang up in the middle of a WRITE payload */
		must_go(ex);
		send_req(0, CMD_WRITE, 1, 0, 1 << 20, NULL);
		wr("partial", 7);
		printf("hung up during a WRITE payload\n");
	} else if (!strcmp(c, "stall-header")) {
		must_go(ex);
		wr("\x25\x60\x95\x13\0\0\0\0\0\0", 10);
		printf("half a request header, then nothing: %s\n",
		       stall_fate());
	} else if (!strcmp(c, "stall-payload")) {
		must_go(ex);
		send_req(0, CMD_WRITE, 1, 0, 1 << 20, NULL);
		wr("partial", 7);
		printf("part of a WRITE payload, then nothing: %s\n",
		       stall_fate());
	} else if (!strcmp(c, "stall-replies")) {
		/* 64 MiB of replies, more than the socket buffers hold */
		must_go(ex);
		for (int i = 0; i < 64; i++)
			send_req(0, CMD_READ, (uint64_t)i, 0, 1 << 20, NULL);
		sleep(40);
		printf("64 READs, replies not read for 40 s: %s\n",
		       drain_until_closed(30) < 0 ? "still open" : "closed");
	} else if (!strcmp(c, "across-a-stop")) {
		must_go(ex);
		across_a_stop();
	} else {
		fprintf(stderr, "unknown case %s\n", c);
		return 2;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: nbdbad HOST PORT CASE [EXPORT]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	return run_case(argv[1], argv[2], argv[3], argc > 4 ? argv[4] : NULL);
}
