/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The process-group protocol behind the corosync and zookeeper drivers
 * (procgroup.c).  A transport delivers, in one total order that every
 * process of the group sees, configuration changes (processes that
 * joined or left the group) and the messages the processes multicast; the
 * protocol derives membership, join decisions and blocks from that order
 * and calls the daemon's cluster handlers.
 *
 * A transport calls pg_init() once, pg_transport_joined() when it is in
 * the group, pg_confchg() and pg_deliver() for what it receives (the first
 * configuration change it reports must list this process as joined), and
 * pg_process() after each batch.  Everything runs on the event loop.
 */
#ifndef SHEEP_GROUP_PROCGROUP_H
#define SHEEP_GROUP_PROCGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "driver.h"
#include "event.h"
#include "util.h"

/* a process of the group: unique while it lives */
struct pg_id {
	uint32_t nodeid;
	uint32_t pid;
};

/* why a process joined or left (the values of corosync's CPG_REASON_*) */
enum pg_reason {
	PG_REASON_JOIN = 1,	/* it joined the group */
	PG_REASON_LEAVE = 2,	/* it left the group */
	PG_REASON_NODEDOWN = 3,	/* its host was lost (network) */
	PG_REASON_NODEUP = 4,	/* its host came back from a partition */
	PG_REASON_PROCDOWN = 5,	/* it died */
};

struct pg_addr {
	struct pg_id id;
	uint32_t reason;
};

struct pg_transport {
	const char *name;	/* for messages: "corosync", "ZooKeeper" */
	/*
	 * Multicast @buf to the group (itself included) in the total order.
	 * Returns 0 when it is on its way, 1 to be retried later, -1 when the
	 * transport is broken (the daemon stops).
	 */
	int (*send)(const void *buf, size_t len);
};

int pg_init(const struct pg_transport *tr, struct event_loop *loop,
	    const struct cluster_handlers *h, struct pg_id me,
	    const char *where);
void pg_transport_joined(void);
void pg_confchg(const struct pg_addr *members, size_t nr_members,
		const struct pg_addr *left, size_t nr_left,
		const struct pg_addr *joined, size_t nr_joined);
void pg_deliver(struct pg_id from, const void *msg, size_t len);
void pg_process(void);

/* the driver operations (driver.h) */
int pg_join(const struct sd_node *myself, const void *opaque, size_t len);
int pg_leave(void);
int pg_notify(const void *msg, size_t len);
int pg_block(void);
int pg_unblock(const void *msg, size_t len);

/* stop the daemon: the group can no longer be trusted */
void pg_die(void) __attribute__((noreturn));

#define pg_fatal(fmt, ...)					\
	do {							\
		sd_emerg(fmt, ##__VA_ARGS__);			\
		pg_die();					\
	} while (0)

#endif
