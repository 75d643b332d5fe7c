// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A write to a bucket this gateway does not own, relayed to the gateway
 * that does (s3_proxy.h): the request as the client sent it, so that the
 * owner checks the client's own signature, with "Connection: close" in
 * place of any Connection header (signers leave that header out); then
 * the body one way and the answer the other, until the owner closes.  The
 * client's connection is closed after it: its answer ends with the
 * owner's.  The relay says which --s3-domain it parsed the request under
 * (virtual-host style, s3_api.c), so that an owner given another refuses
 * it rather than read it otherwise.  Until buckets' data is written where
 * it arrives (segments and leases, doc/object-storage.md), the owner
 * carries every write.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "net.h"
#include "util.h"
#include "front/s3.h"
#include "front/s3_proxy.h"

#define RELAY_CHUNK	65536
#define RELAY_SEC	30

static char domain[256];

int s3_set_domain(const char *name)
{
	size_t n = strlen(name);

	if (!n || n >= sizeof(domain) || name[0] == '.' || name[n - 1] == '.' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
		   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != n)
		return -1;
	for (size_t i = 0; i <= n; i++)
		domain[i] = (char)tolower((unsigned char)name[i]);
	return 0;
}

const char *s3_domain(void)
{
	return domain[0] ? domain : "-";
}

/* "ADDR:PORT" (the last colon splits): 0 or -1 */
static int split_target(const char *target, char *host, size_t size,
			int *port)
{
	const char *colon = strrchr(target, ':');
	size_t n;

	if (!colon || colon == target)
		return -1;
	n = (size_t)(colon - target);
	if (n >= size)
		return -1;
	memcpy(host, target, n);
	host[n] = 0;
	*port = atoi(colon + 1);
	return *port > 0 && *port < 65536 ? 0 : -1;
}

/* a header the relay replaces: Connection, and the domain it says */
static bool replaced(const char *p, size_t n)
{
	return (n > 11 && !strncasecmp(p, "connection:", 11)) ||
	       (n > 19 && !strncasecmp(p, "x-kelpie-s3-domain:", 19));
}

/*
 * The head, its Connection header (if any) replaced by one that closes,
 * with the --s3-domain this gateway parsed it with (a client's own such
 * header dropped)
 */
static int send_head(int fd, const char *head, size_t len)
{
	const char *p = head, *end = head + len - 2;	/* the last CRLF */
	char tail[320];
	int n;

	while (p < end) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t n = eol ? (size_t)(eol - p) + 2 : (size_t)(end - p);

		if (!replaced(p, n) && net_send_all(fd, p, n))
			return -1;
		p += n;
	}
	n = snprintf(tail, sizeof(tail), "X-Kelpie-S3-Domain: %s\r\n"
		     "Connection: close\r\n\r\n", s3_domain());
	return net_send_all(fd, tail, (size_t)n);
}

/* the client's body bytes that came with the head */
static int send_buffered(struct s3_conn *c, int fd, char *buf)
{
	while (s3_body_buffered(c)) {
		ssize_t n = s3_body_read(c, buf, RELAY_CHUNK);

		if (n <= 0 || net_send_all(fd, buf, (size_t)n))
			return -1;
	}
	return 0;
}

/*
 * Body to the owner, answer to the client, side by side: the owner may
 * answer (an error, or 100 Continue) before the body is all there.
 */
static void relay(struct s3_conn *c, int fd, char *buf)
{
	bool body = s3_body_left(c) > 0, answered = false;

	while (!answered) {
		struct pollfd p[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = s3_fd(c), .events = body ? POLLIN : 0 },
		};
		int n = poll(p, 2, RELAY_SEC * 1000);
		ssize_t got;

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return;	/* stalled: both closed */
		}
		if (p[0].revents) {
			got = recv(fd, buf, RELAY_CHUNK, 0);
			if (got <= 0)
				answered = true;	/* the owner closed */
			else if (s3_send(c, buf, (size_t)got))
				return;
		}
		if (body && p[1].revents) {
			got = s3_body_read(c, buf, RELAY_CHUNK);
			if (got <= 0)
				return;	/* the client went */
			/* the owner refused early: the rest is not wanted */
			if (net_send_all(fd, buf, (size_t)got))
				body = false;
			body = body && s3_body_left(c) > 0;
		}
	}
}

int s3_forward(struct s3_conn *c, const char *target)
{
	char host[64], *buf;
	size_t hlen;
	const char *head = s3_head(c, &hlen);
	int port, fd;

	if (split_target(target, host, sizeof(host), &port))
		return -1;
	fd = net_connect(host, port, RELAY_SEC);
	if (fd < 0) {
		sd_warn("S3: cannot reach the bucket's gateway %s: %m", target);
		return -1;
	}
	net_set_nodelay(fd);	/* as the client's connection (s3.c) */
	buf = xmalloc(RELAY_CHUNK);
	s3_no_continue(c);
	s3_close_after(c);
	if (!send_head(fd, head, hlen) && !send_buffered(c, fd, buf))
		relay(c, fd, buf);
	free(buf);
	close(fd);
	return 0;
}
