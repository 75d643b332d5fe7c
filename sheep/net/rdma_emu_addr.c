// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emulation's rendezvous: a listener on ADDR:PORT is a unix socket
 * bound to the file "ADDR-PORT" in $KELPIE_RDMA_EMU ("any-PORT" for a
 * wildcard address), and a connect to ADDR:PORT tries that file, then
 * "any-PORT".  A file left by a process that died is taken over.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include "net/rdma_emu.h"

#define EMU_PORT_TRIES	64	/* to find a free port for port 0 */

socklen_t emu_sa_len(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

uint16_t *emu_sa_port(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return &((struct sockaddr_in *)ss)->sin_port;
	return &((struct sockaddr_in6 *)ss)->sin6_port;
}

/* the socket file of a listener on @ss ("any" for a wildcard address) */
static int sock_path(char *buf, size_t size, struct sockaddr_storage *ss,
		     bool any)
{
	const char *dir = getenv(RDMA_EMU_ENV);
	char host[INET6_ADDRSTRLEN] = "any";
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	const void *a = ss->ss_family == AF_INET ? (void *)&s4->sin_addr :
						   (void *)&s6->sin6_addr;
	int n;

	if (!dir || !*dir) {
		errno = ENODEV;
		return -1;
	}
	if (ss->ss_family == AF_INET)
		any |= s4->sin_addr.s_addr == htonl(INADDR_ANY);
	else
		any |= IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr);
	if (!any)
		inet_ntop(ss->ss_family, a, host, sizeof(host));
	n = snprintf(buf, size, "%s/%s-%u", dir, host, ntohs(*emu_sa_port(ss)));
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* a socket file nobody listens on any more (its process died) */
static bool stale(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool dead;

	if (fd < 0)
		return false;
	dead = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) &&
	       errno == ECONNREFUSED;
	close(fd);
	return dead;
}

static int bind_path(int fd, struct emu_id *e)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	if (sock_path(sun.sun_path, sizeof(sun.sun_path),
		      &e->id.route.addr.src_storage, false))
		return -1;
	if (!bind(fd, (struct sockaddr *)&sun, sizeof(sun)))
		goto bound;
	if (errno != EADDRINUSE)
		return -1;
	if (!stale(&sun)) {
		errno = EADDRINUSE;
		return -1;
	}
	if ((unlink(sun.sun_path) && errno != ENOENT) ||
	    bind(fd, (struct sockaddr *)&sun, sizeof(sun)))
		return -1;
bound:
	memcpy(e->path, sun.sun_path, sizeof(e->path));
	return 0;
}

/* port 0: the first free one of a few pseudo-random ports */
int emu_bind_listener(int fd, struct emu_id *e)
{
	uint16_t *port = emu_sa_port(&e->id.route.addr.src_storage);
	unsigned int seed = (unsigned int)getpid() * 7919u;

	if (*port)
		return bind_path(fd, e);
	for (int i = 0; i < EMU_PORT_TRIES; i++) {
		seed = seed * 1103515245u + 12345u;
		*port = htons(20000 + (seed >> 8) % 40000);
		if (!bind_path(fd, e) || errno != EADDRINUSE)
			return e->path[0] ? 0 : -1;
	}
	*port = 0;
	return -1;
}

/* the listener's socket for @dst: its own address, else a wildcard */
int emu_dial(struct sockaddr_storage *dst)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = -1;

	for (int any = 0; any < 2 && fd < 0; any++) {
		if (sock_path(sun.sun_path, sizeof(sun.sun_path), dst, any))
			return -2;
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    0);
		if (fd < 0)
			return -2;
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}
