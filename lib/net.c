// SPDX-License-Identifier: GPL-2.0-or-later
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "net.h"
#include "proto.h"
#include "util.h"

int net_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

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

int net_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int net_set_nodelay(int fd)
{
	int on = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

int net_set_keepalive(int fd, int idle_sec, int interval_sec, int count)
{
	int on = 1;
	/* unacknowledged data gives up on the same schedule */
	unsigned int user_ms = (unsigned int)(idle_sec +
					      interval_sec * count) * 1000;

	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_sec,
		       sizeof(idle_sec)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_sec,
		       sizeof(interval_sec)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count)))
		return -1;
	return setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms,
			  sizeof(user_ms));
}

#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US	45	/* include/uapi/linux/tcp.h, Linux 6.15 */
#endif

/*
 * Linux never retransmits a lost segment sooner than 200 ms, whatever the
 * round trip: a request on a connection that carries one at a time (depth
 * 1) has no later segments to reveal a loss by duplicate ACKs, so one lost
 * packet in a data centre costs it 200 ms.  A kernel without the option
 * answers ENOPROTOOPT, and the connection keeps the system's minimum.
 */
int net_set_rto_min(int fd, unsigned int usec)
{
	int v = (int)usec;

	if (!setsockopt(fd, IPPROTO_TCP, TCP_RTO_MIN_US, &v, sizeof(v)))
		return 0;
	return errno == ENOPROTOOPT ? 1 : -1;
}

/*
 * A descriptor kept in reserve: when the process has none left (EMFILE),
 * a waiting connection could never be accepted and the listener would
 * stay readable, so that the event loop spun on it.  The reserve is let go
 * of, the connection accepted and closed at once (its client sees a
 * refusal, not a hang), and the reserve taken again.
 */
static int reserve_fd = -1;

void net_reserve_fd(void)
{
	if (reserve_fd < 0)
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void refuse_for_want_of_fds(int lfd, const char *what,
				   struct log_limit *ll)
{
	int cfd;

	sd_warn_limited(ll, "%s: no file descriptor left: refusing "
			"connections (the limit is the process's -n; "
			"ulimit -n or LimitNOFILE raises it)", what);
	if (reserve_fd < 0)
		return;
	close(reserve_fd);
	reserve_fd = -1;
	cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd >= 0)
		close(cfd);
	net_reserve_fd();
}

int net_accept_bounded(int lfd, int nr_open, int max, const char *what,
		       struct accept_logs *logs)
{
	for (;;) {
		int cfd = accept4(lfd, NULL, NULL,
				  SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				refuse_for_want_of_fds(lfd, what, &logs->fds);
			else if (errno != EAGAIN && errno != EINTR)
				sd_warn_limited(&logs->err, "%s accept: %m",
						what);
			return -1;
		}
		if (nr_open < max) {
			net_set_nodelay(cfd);
			return cfd;
		}
		sd_warn_limited(&logs->full, "%s: too many connections (%d); "
				"refusing", what, max);
		close(cfd);
	}
}

int net_listen_tcp(const char *bindaddr, int port)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	char pstr[16];
	int fd = -1, on = 1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(pstr, sizeof(pstr), "%d", port);
	if (getaddrinfo(bindaddr, pstr, &hints, &res))
		return -1;
	/* prefer IPv6 wildcard (dual stack) when no address was given */
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) &&
		    !listen(fd, 1024) && !net_set_nonblock(fd))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

int net_listen_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(fd, 1024) || net_set_nonblock(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

socklen_t net_addr_to_sockaddr(const uint8_t addr[16], uint16_t port,
			      struct sockaddr_storage *ss)
{
	static const uint8_t zero[12];

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(addr, zero, 12)) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, addr + 12, 4);
		return sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, addr, 16);
		return sizeof(*in6);
	}
}

bool net_sockaddr_to_addr(const struct sockaddr_storage *ss,
			  uint8_t addr[16])
{
	static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };

	memset(addr, 0, 16);
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		memcpy(addr + 12, &in->sin_addr, 4);
		return true;
	}
	if (ss->ss_family != AF_INET6)
		return false;
	memcpy(addr, &((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr,
	       16);
	if (!memcmp(addr, v4_mapped, 12))
		memset(addr, 0, 12);
	return true;
}

int net_connect_nonblock(const uint8_t addr[16], uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = net_addr_to_sockaddr(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC |
			SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	net_set_nodelay(fd);
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

static int set_client_opts(int fd, int rcv_timeout_sec)
{
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };
	struct timeval snd = { .tv_sec = 5 }, rcv = { .tv_sec = rcv_timeout_sec };

	net_set_nodelay(fd);
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd));
	if (rcv_timeout_sec > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof(rcv));
	return 0;
}

int net_connect(const char *host, int port, int rcv_timeout_sec)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	char pstr[16];
	int fd = -1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(pstr, sizeof(pstr), "%d", port);
	if (getaddrinfo(host, pstr, &hints, &res))
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd >= 0)
		set_client_opts(fd, rcv_timeout_sec);
	return fd;
}

int net_connect_addr(const uint8_t addr[16], uint16_t port,
		     int rcv_timeout_sec)
{
	struct sockaddr_storage ss;
	socklen_t len = net_addr_to_sockaddr(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -1;
	}
	set_client_opts(fd, rcv_timeout_sec);
	return fd;
}

int net_connect_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		close(fd);
		return -1;
	}
	return fd;
}

void sd_init_req(struct sd_req *req, uint8_t opcode)
{
	memset(req, 0, sizeof(*req));
	req->opcode = opcode;
	req->proto_ver = opcode < 0x80 ? SD_PROTO_VER : SD_SHEEP_PROTO_VER;
}

static int discard(int fd, uint32_t len)
{
	char buf[4096];

	while (len) {
		uint32_t n = MIN(len, (uint32_t)sizeof(buf));

		if (xread(fd, buf, n) < 0)
			return -1;
		len -= n;
	}
	return 0;
}

int sd_exec(int fd, struct sd_req *req, void *data, uint32_t buf_len,
	    struct sd_rsp *rsp)
{
	uint8_t hdr[SD_REQ_SIZE];
	uint32_t got;

	sd_req_encode(req, hdr);
	if (xwrite(fd, hdr, sizeof(hdr)) < 0)
		return -1;
	if ((req->flags & SD_FLAG_CMD_WRITE) && req->data_length &&
	    xwrite(fd, data, req->data_length) < 0)
		return -1;
	if (xread(fd, hdr, sizeof(hdr)) < 0)
		return -1;
	sd_rsp_decode(rsp, hdr);
	got = MIN(rsp->data_length, buf_len);
	if (got && xread(fd, data, got) < 0)
		return -1;
	if (rsp->data_length > got && discard(fd, rsp->data_length - got))
		return -1;
	return 0;
}

/* "[ADDR:]PORT", ADDR may be "[IPv6]"; @addr is "" without ADDR */
int net_parse_listen(const char *spec, char *addr, size_t addr_len,
		     int *port)
{
	const char *colon = strrchr(spec, ':'), *p = spec;
	size_t alen = 0;
	char *end;
	long n;

	addr[0] = 0;
	if (colon) {
		alen = (size_t)(colon - spec);
		if (alen && spec[0] == '[' && spec[alen - 1] == ']') {
			p = spec + 1;
			alen -= 2;
		}
		if (!alen || alen >= addr_len ||
		    (p == spec && memchr(spec, ':', alen)))
			return -1;
		memcpy(addr, p, alen);
		addr[alen] = 0;
		p = colon + 1;
	}
	n = strtol(p, &end, 10);
	if (!*p || *end || n < 1 || n > 65535)
		return -1;
	*port = (int)n;
	return 0;
}
