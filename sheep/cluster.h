/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cluster driver interface (cluster.md §5, §6).  A driver delivers
 * membership changes and cluster messages to every member in one total
 * order.  All callbacks run on the daemon's main event-loop thread.
 */
#ifndef SHEEP_CLUSTER_H
#define SHEEP_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include "event.h"
#include "internal_proto.h"

struct cluster_driver {
	const char *name;
	/* connect to the membership service; @option is the text after ':' */
	int (*init)(const char *option, struct event_loop *loop);
	/*
	 * Announce @myself with an opaque join payload (at most
	 * SD_MAX_EVENT_BUF_SIZE bytes).  Eventually one member (or the joiner
	 * itself when the cluster is empty) calls sd_join_handler, and then
	 * every member including the joiner gets sd_accept_handler.
	 */
	int (*join)(const struct sd_node *myself, const void *opaque,
		    size_t len);
	/* leave the cluster; the others see sd_leave_handler */
	int (*leave)(void);
	/* totally ordered broadcast, delivered to all via sd_notify_handler */
	int (*notify)(const void *msg, size_t len);
	/*
	 * Ask for exclusive processing.  Once every earlier block has been
	 * unblocked (or its sender left), sd_block_handler(self) is called on
	 * this node only; it then runs its work and calls unblock(), whose
	 * message is delivered to everybody like a notify.
	 */
	int (*block)(void);
	int (*unblock)(const void *msg, size_t len);
};

/* callbacks implemented by the daemon (group.c) */

/*
 * Evaluate a join on an existing member (or on the joiner itself when there
 * are no members).  May rewrite @opaque in place (up to @max_len bytes) and
 * set *@len.  Returns true to accept.
 */
bool sd_join_handler(const struct sd_node *joining,
		     const struct sd_node *members, size_t nr_members,
		     void *opaque, size_t *len, size_t max_len);
/* @members includes @joined; @opaque is what sd_join_handler produced */
void sd_accept_handler(const struct sd_node *joined,
		       const struct sd_node *members, size_t nr_members,
		       const void *opaque, size_t len);
/* @members no longer contains @left */
void sd_leave_handler(const struct sd_node *left,
		      const struct sd_node *members, size_t nr_members);
void sd_notify_handler(const struct sd_node *sender, const void *msg,
		       size_t len);
void sd_block_handler(const struct sd_node *sender);

extern struct cluster_driver cdrv_local;
extern struct cluster_driver cdrv_corosync;

#endif
