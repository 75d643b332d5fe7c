// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * badreq: send one hand-made (usually malformed) request to a sheep and
 * report what came back.  Used by functional test 008.  Self-contained on
 * purpose: the header is built byte by byte from protocol.md §2, not with
 * Kelpie's own codec.
 *
 *   badreq HOST PORT CASE
 *
 * (clone:VID: a clone of the VDI of hex id VID; del:NAME: DEL_VDI of NAME,
 * whose index the client did not clear; readw:OID: READ_OBJ of 4096 bytes
 * of hex OID with the write flag and 4096 bytes of payload, 100 times on
 * one connection: one line "N answered, result=0xNN ..." of the last;
 * klock:N:PREFIX: LOCK_VDI with KLOCK of the VDIs PREFIX0..PREFIX<N-1> on
 * one connection, one after the other, then close: "N locked, N refused
 * (result=0xNN)")
 *
 * Prints one line:
 *   result=0xNN opcode=0xNN id=0xNNNNNNNN dlen=N   a response arrived
 *   closed                                         the server closed
 *   timeout                                        nothing within 10 s
 *   sent                                           (cases expecting nothing)
 * and exits 0, or 2 on a local error (bad usage, cannot connect).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define HDR 48
#define WAIT_SEC 10

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static void hdr(uint8_t *b, uint8_t ver, uint8_t op, uint16_t flags,
		uint32_t id, uint32_t dlen)
{
	memset(b, 0, HDR);
	b[0] = ver;
	b[1] = op;
	put16(b + 2, flags);
	put32(b + 8, id);
	put32(b + 12, dlen);
}

static int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	struct timeval tv = { .tv_sec = WAIT_SEC };
	int fd = -1, on = 1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res))
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, 0);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd >= 0) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

/* send all of @len; a failure here is not fatal (the server may close) */
static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* read a response header; print what happened; returns 1 if one came */
static int report(int fd, uint8_t *rsp)
{
	size_t got = 0;

	while (got < HDR) {
		ssize_t n = recv(fd, rsp + got, HDR - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			printf("timeout\n");
			return 0;
		}
		if (n <= 0) {
			printf("closed\n");
			return 0;
		}
		got += (size_t)n;
	}
	printf("result=0x%02x opcode=0x%02x id=0x%08x dlen=%u\n",
	       get32(rsp + 16), rsp[1], get32(rsp + 8), get32(rsp + 12));
	return 1;
}

/* a request without payload, then its response */
static int simple(int fd, uint8_t ver, uint8_t op, uint32_t dlen)
{
	uint8_t b[HDR];

	hdr(b, ver, op, 0, 0x5eed0001, dlen);
	if (send_all(fd, b, HDR)) {
		printf("closed\n");
		return 0;
	}
	return report(fd, b);
}

int main(int argc, char **argv)
{
	uint8_t b[HDR], rsp[HDR];
	const char *c;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: badreq HOST PORT CASE\n");
		return 2;
	}
	c = argv[3];
	fd = connect_to(argv[1], argv[2]);
	if (fd < 0) {
		perror("connect");
		return 2;
	}

	if (!strcmp(c, "cluster-default-v0") ||
	    !strcmp(c, "cluster-default-v1") ||
	    !strcmp(c, "cluster-default-v2")) {
		/* GET_CLUSTER_DEFAULT as QEMU (version 0 or 1) or dog sends it */
		hdr(b, (uint8_t)(c[strlen(c) - 1] - '0'), 0x18, 0, 0x5eed0002,
		    0);
		send_all(fd, b, HDR);
		if (report(fd, rsp))
			printf("copies=%u policy=0x%02x shift=%u\n", rsp[20],
			       rsp[21], rsp[22]);
	} else if (!strcmp(c, "ver-public")) {
		simple(fd, 0x09, 0x18, 0);
	} else if (!strcmp(c, "ver-internal")) {
		/* GET_NODE_LIST with the public protocol version */
		simple(fd, 0x02, 0x82, 6144 * 80);
	} else if (!strcmp(c, "unknown-public")) {
		simple(fd, 0x02, 0x7f, 0);
	} else if (!strcmp(c, "unknown-internal")) {
		simple(fd, 0x0a, 0xee, 0);
	} else if (!strcmp(c, "obsolete")) {
		/* SD_OP_SNAPSHOT (0x91) has no handler any more */
		simple(fd, 0x0a, 0x91, 0);
	} else if (!strcmp(c, "new-vdi-short")) {
		/* NEW_VDI needs exactly 256 bytes of name */
		uint8_t name[100] = "short-name";

		hdr(b, 0x02, 0x11, 0x0001, 0x5eed0003, sizeof(name));
		put64(b + 16, 1 << 20);
		send_all(fd, b, HDR);
		send_all(fd, name, sizeof(name));
		report(fd, rsp);
	} else if (!strncmp(c, "clone:", 6)) {
		/* NEW_VDI "badreq-clone", a clone of the VDI of hex id ... */
		uint8_t name[256] = "badreq-clone";

		hdr(b, 0x02, 0x11, 0x0001, 0x5eed0008, sizeof(name));
		put64(b + 16, 4 << 20);
		put32(b + 24, (uint32_t)strtoul(c + 6, NULL, 16));
		send_all(fd, b, HDR);
		send_all(fd, name, sizeof(name));
		report(fd, rsp);
	} else if (!strncmp(c, "del:", 4)) {
		/* DEL_VDI of the current VDI NAME, its index left as it is */
		uint8_t name[256] = { 0 };

		strncpy((char *)name, c + 4, sizeof(name) - 1);
		hdr(b, 0x02, 0x17, 0x0001, 0x5eed0009, sizeof(name));
		send_all(fd, b, HDR);
		send_all(fd, name, sizeof(name));
		report(fd, rsp);
	} else if (!strncmp(c, "readw:", 6)) {
		static uint8_t pay[4096];
		int n = 0;

		for (int i = 0; i < 100; i++) {
			hdr(b, 0x02, 0x02, 0x0001, 0x5eed0100 + (uint32_t)i,
			    sizeof(pay));
			put64(b + 16, strtoull(c + 6, NULL, 16));
			if (send_all(fd, b, HDR) ||
			    send_all(fd, pay, sizeof(pay)))
				break;
		}
		for (int i = 0; i < 100; i++) {
			ssize_t got = 0, r;

			while (got < HDR && (r = recv(fd, rsp + got,
						      HDR - (size_t)got, 0)) > 0)
				got += r;
			if (got < HDR)
				break;
			n++;
			/* a read's answer may carry data: skip it */
			for (uint32_t left = get32(rsp + 12); left;) {
				static uint8_t sink[4096];
				r = recv(fd, sink, left < sizeof(sink) ?
					 left : sizeof(sink), 0);
				if (r <= 0)
					break;
				left -= (uint32_t)r;
			}
		}
		printf("%d answered, result=0x%02x\n", n, get32(rsp + 16));
	} else if (!strncmp(c, "klock:", 6)) {
		char *prefix = strchr(c + 6, ':');
		int n = atoi(c + 6), locked = 0, refused = 0;
		uint32_t last = 0;

		if (!prefix)
			return 2;
		prefix++;
		for (int i = 0; i < n; i++) {
			uint8_t name[256] = { 0 };

			snprintf((char *)name, sizeof(name), "%s%d", prefix, i);
			/* LOCK_VDI (0x12), WRITE | KLOCK (0x0800) */
			hdr(b, 0x02, 0x12, 0x0801, 0x5eed0200 + (uint32_t)i,
			    sizeof(name));
			if (send_all(fd, b, HDR) || send_all(fd, name, sizeof(name)))
				break;
			size_t got = 0;
			ssize_t r;

			while (got < HDR && (r = recv(fd, rsp + got,
						      HDR - got, 0)) > 0)
				got += (size_t)r;
			if (got < HDR)
				break;
			if (get32(rsp + 16) == 0) {
				locked++;
			} else {
				refused++;
				last = get32(rsp + 16);
			}
		}
		printf("%d locked, %d refused (result=0x%02x)\n", locked,
		       refused, last);
	} else if (!strcmp(c, "read-vdis-short")) {
		/* READ_VDIS needs a buffer of exactly 2 MiB */
		simple(fd, 0x02, 0x15, 4096);
	} else if (!strcmp(c, "huge-write")) {
		/* WRITE_OBJ announcing ~4 GiB of payload, sending 64 KiB */
		static uint8_t junk[65536];

		hdr(b, 0x02, 0x03, 0x0001, 0x5eed0004, 0xFFFFFFF0u);
		put64(b + 16, 0x00ed202b00000000ull);
		send_all(fd, b, HDR);
		memset(junk, 0xa5, sizeof(junk));
		send_all(fd, junk, sizeof(junk));
		report(fd, rsp);
	} else if (!strcmp(c, "huge-read")) {
		/* READ_OBJ asking for a ~4 GiB reply buffer */
		hdr(b, 0x02, 0x02, 0, 0x5eed0005, 0xFFFFFFF0u);
		put64(b + 16, 0x00ed202b00000000ull);
		send_all(fd, b, HDR);
		report(fd, rsp);
	} else if (!strcmp(c, "truncated")) {
		/* 10 bytes of a header, then close */
		hdr(b, 0x02, 0x18, 0, 0x5eed0006, 0);
		send_all(fd, b, 10);
		printf("sent\n");
	} else if (!strcmp(c, "truncated-payload")) {
		/* a write announcing 4096 bytes, sending 100, then close */
		uint8_t part[100] = { 0 };

		hdr(b, 0x02, 0x03, 0x0001, 0x5eed0007, 4096);
		put64(b + 16, 0x00ed202b00000000ull);
		send_all(fd, b, HDR);
		send_all(fd, part, sizeof(part));
		printf("sent\n");
	} else if (!strcmp(c, "garbage")) {
		/* 64 KiB from a fixed pseudo-random sequence */
		static uint8_t g[65536];
		uint32_t x = 0x12345678;

		for (size_t i = 0; i < sizeof(g); i++) {
			x = x * 1103515245u + 12345u;
			g[i] = (uint8_t)(x >> 16);
		}
		send_all(fd, g, sizeof(g));
		/* whatever comes back, drain it for a moment */
		{
			struct timeval tv = { .tv_sec = 2 };
			char sink[4096];

			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			while (recv(fd, sink, sizeof(sink), 0) > 0)
				;
		}
		printf("sent\n");
	} else if (!strcmp(c, "pipelined")) {
		/* two requests back to back: both answered, ids echoed */
		uint8_t two[2 * HDR];
		int n = 0;

		hdr(two, 0x02, 0x18, 0, 0x0000aaaa, 0);
		hdr(two + HDR, 0x02, 0x18, 0, 0x0000bbbb, 0);
		send_all(fd, two, sizeof(two));
		for (int i = 0; i < 2; i++)
			n += report(fd, rsp);
		if (n != 2)
			printf("only %d responses\n", n);
	} else {
		fprintf(stderr, "unknown case %s\n", c);
		return 2;
	}
	close(fd);
	return 0;
}
