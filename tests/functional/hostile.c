// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hostile: a client that sends what a well-behaved one would not, for
 * functional test 039.  Self-contained: headers are built byte by byte
 * from protocol.md §2, not with Kelpie's codec.
 *
 *   hostile HOST PORT req OP FLAGS DLEN [FIELD...] [-p BYTES] [-o FILE]
 *	one request; FIELD is SIZE@OFF=VALUE (SIZE 1, 2, 4 or 8, OFF >= 4, e.g.
 *	8@16=0x8000000100000000); -p sends BYTES of payload (0xa5), which
 *	may differ from DLEN; -d HEX sends those bytes instead (e.g.
 *	06000000); -o saves the response payload.  Prints
 *	"result=0xNN dlen=N", "closed" or "timeout".
 *   hostile HOST PORT halfhdr N SECS
 *	N connections that each send half a header, held for SECS.
 *   hostile HOST PORT noread N OID LEN SECS
 *	N pipelined READ_OBJ of LEN bytes on one connection whose replies
 *	are never read, held for SECS.  Prints "sent N".
 *   hostile HOST PORT burst N
 *	N requests the server refuses at once (unknown opcode), then a reset
 *	(SO_LINGER 0) before reading anything: the server's replies meet a
 *	connection that is gone.
 *   hostile HOST PORT readclose REPS N OID EPOCH
 *	REPS connections that each send N pipelined READ_PEER of 4 KiB in
 *	one write and close at once, every other one with a reset: the
 *	replies of reads served in the same loop turn meet a connection
 *	that is gone.  Prints "sent REPS".
 *   hostile HOST PORT flood N OP OID [FLAGS DLEN [COW_OID]]
 *	N pipelined requests on one connection, all answers read; prints
 *	"N answers: R1=COUNT ...".
 * Exits 0, or 2 on a local error.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define HDR 48

static const char *host, *port;

static void put(uint8_t *b, int size, uint64_t v)
{
	for (int i = 0; i < size; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static int dial(int rcv_sec)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct timeval tv = { .tv_sec = rcv_sec };
	int fd;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* 0: all read; 1: closed; 2: timeout */
static int read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 2;
		if (n <= 0)
			return 1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void header(uint8_t *h, uint8_t op, uint16_t flags, uint32_t id,
		   uint32_t dlen)
{
	memset(h, 0, HDR);
	h[0] = op >= 0x80 ? 0x0a : 0x02;
	h[1] = op;
	put(h + 2, 2, flags);
	put(h + 8, 4, id);
	put(h + 12, 4, dlen);
}

static int set_field(uint8_t *h, const char *spec)
{
	char *at, *eq;
	long size = strtol(spec, &at, 10), off;

	if (*at != '@' || (size != 1 && size != 2 && size != 4 && size != 8))
		return -1;
	off = strtol(at + 1, &eq, 10);
	if (*eq != '=' || off < 4 || off + size > HDR)
		return -1;
	put(h + off, (int)size, strtoull(eq + 1, NULL, 0));
	return 0;
}

/* the answer to one request: prints it, saves its payload to @out */
static int answer(int fd, const char *out)
{
	uint8_t r[HDR], *d;
	uint32_t dlen;
	int ret = read_all(fd, r, HDR);

	if (ret) {
		printf("%s\n", ret == 1 ? "closed" : "timeout");
		return 0;
	}
	dlen = get32(r + 12);
	d = malloc(dlen ? dlen : 1);
	if (!d || read_all(fd, d, dlen)) {
		printf("closed\n");
		free(d);
		return 0;
	}
	printf("result=0x%02x dlen=%u\n", get32(r + 16), dlen);
	if (out) {
		FILE *f = fopen(out, "w");

		if (!f || fwrite(d, 1, dlen, f) != dlen) {
			free(d);
			return 2;
		}
		fclose(f);
	}
	free(d);
	return 0;
}

static int cmd_req(int argc, char **argv)
{
	uint8_t h[HDR], *payload = NULL;
	const char *out = NULL, *hex = NULL;
	long plen = 0;
	int fd, ret;

	if (argc < 3)
		return 2;
	header(h, (uint8_t)strtoul(argv[0], NULL, 0),
	       (uint16_t)strtoul(argv[1], NULL, 0), 1,
	       (uint32_t)strtoul(argv[2], NULL, 0));
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "-p") && i + 1 < argc)
			plen = strtol(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-d") && i + 1 < argc)
			hex = argv[++i];
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (set_field(h, argv[i]))
			return 2;
	}
	fd = dial(10);
	if (fd < 0)
		return 2;
	if (hex)
		plen = (long)strlen(hex) / 2;
	if (plen) {
		payload = malloc((size_t)plen);
		if (!payload)
			return 2;
		memset(payload, 0xa5, (size_t)plen);
		for (long i = 0; hex && i < plen; i++)
			sscanf(hex + 2 * i, "%2hhx", &payload[i]);
	}
	if (write_all(fd, h, HDR) ||
	    (plen && write_all(fd, payload, (size_t)plen))) {
		printf("closed\n");
		ret = 0;
	} else {
		ret = answer(fd, out);
	}
	free(payload);
	close(fd);
	return ret;
}

static int cmd_halfhdr(int n, int secs)
{
	uint8_t h[HDR];
	int *fds = calloc((size_t)n, sizeof(int)), opened = 0;

	header(h, 0x02, 0, 1, 4096);
	for (int i = 0; i < n; i++) {
		fds[i] = dial(1);
		if (fds[i] < 0)
			continue;
		opened++;
		if (write_all(fds[i], h, HDR / 2))
			continue;
	}
	printf("held %d\n", opened);
	fflush(stdout);
	sleep((unsigned int)secs);
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return 0;
}

static int cmd_noread(int n, uint64_t oid, uint32_t len, int secs)
{
	uint8_t h[HDR];
	int fd = dial(1), rcvbuf = 4096, sent = 0;

	if (fd < 0)
		return 2;
	/* a small window: the server's replies back up at once */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	for (int i = 0; i < n; i++) {
		header(h, 0x02, 0, (uint32_t)i + 1, len);
		put(h + 16, 8, oid);
		if (write_all(fd, h, HDR))
			break;
		sent++;
	}
	printf("sent %d\n", sent);
	fflush(stdout);
	/* never read a reply */
	sleep((unsigned int)secs);
	close(fd);
	return 0;
}

static int cmd_burst(int n)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	uint8_t h[HDR];
	int fd = dial(1);

	if (fd < 0)
		return 2;
	for (int i = 0; i < n; i++) {
		header(h, 0x7f, 0, (uint32_t)i + 1, 0);
		if (write_all(fd, h, HDR))
			break;
	}
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	return 0;
}

static int cmd_readclose(int reps, int n, uint64_t oid, uint32_t epoch)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	uint8_t *b = calloc((size_t)n, HDR);
	int sent = 0;

	if (!b)
		return 2;
	for (int i = 0; i < n; i++) {
		header(b + i * HDR, 0xa4, 0, (uint32_t)i + 1, 4096);
		put(b + i * HDR + 4, 4, epoch);
		put(b + i * HDR + 16, 8, oid);
	}
	for (int r = 0; r < reps; r++) {
		int fd = dial(1);

		if (fd < 0)
			break;
		if (!write_all(fd, b, (size_t)n * HDR))
			sent++;
		if (r % 2)
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
	}
	free(b);
	printf("sent %d\n", sent);
	return 0;
}

static int cmd_flood(int argc, char **argv)
{
	int n = atoi(argv[0]), fd = dial(60), counts[256] = { 0 }, got = 0;
	uint8_t op = (uint8_t)strtoul(argv[1], NULL, 0), h[HDR], r[HDR];
	uint64_t oid = strtoull(argv[2], NULL, 0);
	uint16_t flags = argc > 3 ? (uint16_t)strtoul(argv[3], NULL, 0) : 0;
	uint32_t dlen = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 0) : 0;
	uint64_t cow = argc > 5 ? strtoull(argv[5], NULL, 0) : 0;
	uint8_t *payload = calloc(1, dlen ? dlen : 1), *sink;

	if (fd < 0 || !payload)
		return 2;
	for (int i = 0; i < n; i++) {
		header(h, op, flags, (uint32_t)i + 1, dlen);
		put(h + 16, 8, oid);
		put(h + 24, 8, cow);
		if (write_all(fd, h, HDR) ||
		    ((flags & 1) && dlen && write_all(fd, payload, dlen)))
			break;
	}
	for (; got < n; got++) {
		uint32_t len;

		if (read_all(fd, r, HDR))
			break;
		len = get32(r + 12);
		sink = malloc(len ? len : 1);
		if (!sink || read_all(fd, sink, len)) {
			free(sink);
			break;
		}
		free(sink);
		counts[get32(r + 16) & 0xff]++;
	}
	printf("%d answers:", got);
	for (int i = 0; i < 256; i++)
		if (counts[i])
			printf(" 0x%02x=%d", i, counts[i]);
	printf("\n");
	free(payload);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		goto usage;
	host = argv[1];
	port = argv[2];
	if (!strcmp(argv[3], "req"))
		return cmd_req(argc - 4, argv + 4);
	if (!strcmp(argv[3], "halfhdr") && argc == 6)
		return cmd_halfhdr(atoi(argv[4]), atoi(argv[5]));
	if (!strcmp(argv[3], "noread") && argc == 8)
		return cmd_noread(atoi(argv[4]), strtoull(argv[5], NULL, 0),
				  (uint32_t)strtoul(argv[6], NULL, 0),
				  atoi(argv[7]));
	if (!strcmp(argv[3], "burst") && argc == 5)
		return cmd_burst(atoi(argv[4]));
	if (!strcmp(argv[3], "readclose") && argc == 8)
		return cmd_readclose(atoi(argv[4]), atoi(argv[5]),
				     strtoull(argv[6], NULL, 0),
				     (uint32_t)strtoul(argv[7], NULL, 0));
	if (!strcmp(argv[3], "flood") && argc >= 7)
		return cmd_flood(argc - 4, argv + 4);
usage:
	fprintf(stderr, "usage: see the comment at the top of hostile.c\n");
	return 2;
}
