/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Socket helpers (in the spirit of Redis's anet.c) and the blocking client */
#ifndef KELPIE_NET_H
#define KELPIE_NET_H

#include <stdint.h>
#include <sys/socket.h>
#include "util.h"
#include "internal_proto.h"

int net_set_nonblock(int fd);
int net_set_nodelay(int fd);
/*
 * TCP keepalive: a peer silent for @idle_sec is probed every
 * @interval_sec, and dropped after @count unanswered probes; unacknowledged
 * data times out after the same total.  Fails on non-TCP sockets.
 */
int net_set_keepalive(int fd, int idle_sec, int interval_sec, int count);
/* the least retransmission timeout of @fd (Linux 6.15+; else nothing) */
int net_set_rto_min(int fd, unsigned int usec);
/* listening sockets, non-blocking; -1 with errno on failure */
int net_listen_tcp(const char *bindaddr, int port);
/* "[ADDR:]PORT", ADDR may be "[IPv6]"; @addr is "" without ADDR; 0 or -1 */
int net_parse_listen(const char *spec, char *addr, size_t addr_len,
		     int *port);
int net_listen_unix(const char *path);
/*
 * Accept from a non-blocking listening socket: a new non-blocking fd with
 * TCP_NODELAY, or -1 when none is left.  While @nr_open >= @max, waiting
 * connections are accepted and closed at once (and logged as @what).
 */
/* a listener's log lines, one per cause per interval (util.h) */
struct accept_logs {
	struct log_limit full, err, fds;
};
int net_accept_bounded(int lfd, int nr_open, int max, const char *what,
		       struct accept_logs *logs);
/* keep a descriptor in reserve for accept to refuse with (at start-up) */
void net_reserve_fd(void);
/* non-blocking connect started; completion shows as EPOLLOUT */
/* a node address (IPv4 in the last 4 bytes, first 12 zero) as a sockaddr */
socklen_t net_addr_to_sockaddr(const uint8_t addr[16], uint16_t port,
			       struct sockaddr_storage *ss);
/*
 * The other way: an IPv4 or IPv6 peer's address in node form (a dual-stack
 * socket's ::ffff:a.b.c.d as IPv4); false, and all zero, for other families
 */
bool net_sockaddr_to_addr(const struct sockaddr_storage *ss,
			  uint8_t addr[16]);
int net_connect_nonblock(const uint8_t addr[16], uint16_t port);
/*
 * Blocking connect with SO_LINGER {1,0}, SO_SNDTIMEO 5 s, SO_RCVTIMEO
 * @rcv_timeout_sec (protocol.md §1).  @host is a name or address.
 */
int net_connect(const char *host, int port, int rcv_timeout_sec);
/*
 * @len bytes on a blocking socket (no SIGPIPE; EINTR taken): 0, or -1
 * (the peer went, or a send timeout)
 */
int net_send_all(int fd, const void *buf, size_t len);
int net_connect_addr(const uint8_t addr[16], uint16_t port,
		     int rcv_timeout_sec);
int net_connect_unix(const char *path);

/*
 * Send one request and wait for its response on a blocking socket.  With
 * SD_FLAG_CMD_WRITE, req->data_length bytes of @data are sent; the response
 * payload (at most @buf_len bytes, the rest discarded) is stored in @data.
 * Returns 0 when a response arrived (its result is in rsp), -1 on I/O error.
 */
int sd_exec(int fd, struct sd_req *req, void *data, uint32_t buf_len,
	    struct sd_rsp *rsp);
void sd_init_req(struct sd_req *req, uint8_t opcode);

#endif
