/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The trust boundary (access.c): who is at the other end of a client
 * connection, and what it may ask for (README "Security model").
 */
#ifndef SHEEP_FRONT_ACCESS_H
#define SHEEP_FRONT_ACCESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "ops/validate.h"

struct client_access {
	bool local;		/* the unix socket or a loopback address */
	bool admin;		/* may run admin ops (--admin-from) */
	uint8_t addr[16];	/* node_id form: IPv4 in the last 4 bytes */
};

/* --admin-from CIDR[,CIDR...]: -1 on a malformed list */
int access_set_admin_from(const char *spec);
void access_classify(const struct sockaddr_storage *ss,
		     struct client_access *a);
/*
 * FROM_TRUSTED for local clients and current cluster members; with a
 * cluster key, members must have proved it on the connection (@authed).
 */
enum req_origin access_origin(const struct client_access *a, bool authed);
/*
 * Is the connection from a member's address (its own or RDMA one), or the
 * unix socket?  Those never wait for public slots (front/slots.c).
 */
bool access_member_addr(const struct client_access *a);

#endif
