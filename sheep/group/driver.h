/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cluster driver interface (cluster.md §5, §6).  A driver delivers
 * membership changes and cluster messages to every member in one total
 * order.  All callbacks run on the daemon's main event-loop thread; the
 * driver calls the handlers it was given at init and nothing else of sheep.
 */
#ifndef SHEEP_GROUP_DRIVER_H
#define SHEEP_GROUP_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include "event.h"
#include "internal_proto.h"

struct cluster_handlers;

struct cluster_driver {
	const char *name;
	/*
	 * Connect to the membership service; @option is the text after ':'.
	 * Events are delivered to @h.
	 */
	int (*init)(const char *option, struct event_loop *loop,
		    const struct cluster_handlers *h);
	/*
	 * Announce @myself with an opaque join payload (at most
	 * SD_MAX_EVENT_BUF_SIZE bytes).  Eventually one member (or the joiner
	 * itself when the cluster is empty) calls handlers->join, and then
	 * every member including the joiner gets handlers->accept.
	 */
	int (*join)(const struct sd_node *myself, const void *opaque,
		    size_t len);
	/* leave the cluster; the others see handlers->leave */
	int (*leave)(void);
	/* totally ordered broadcast, delivered to all via handlers->notify */
	int (*notify)(const void *msg, size_t len);
	/*
	 * Ask for exclusive processing.  Once every earlier block has been
	 * unblocked (or its sender left), handlers->block(self) is called on
	 * this node only; it then runs its work and calls unblock(), whose
	 * message is delivered to everybody like a notify.
	 */
	int (*block)(void);
	int (*unblock)(const void *msg, size_t len);
};

/* the events a driver delivers, implemented by the daemon (group.c) */
struct cluster_handlers {
	/*
	 * Evaluate a join on an existing member (or on the joiner itself
	 * when there are no members).  May rewrite @opaque in place (up to
	 * @max_len bytes) and set *@len.  Returns true to accept.
	 */
	bool (*join)(const struct sd_node *joining,
		     const struct sd_node *members, size_t nr_members,
		     void *opaque, size_t *len, size_t max_len);
	/*
	 * @members includes @joined; @opaque is what join produced.  @more:
	 * joins decided together, delivered one after the other with the
	 * same @members, every one but the last with @more (make one epoch
	 * for them, at the last).
	 */
	void (*accept)(const struct sd_node *joined,
		       const struct sd_node *members, size_t nr_members,
		       const void *opaque, size_t len, bool more);
	/*
	 * The @nr_left nodes @left (at least one) left in one change: a
	 * driver that learns of several losses at once (a host or a rack
	 * gone) gives them together, in the same groups on every member.
	 * @members no longer contains any of them.
	 */
	void (*leave)(const struct sd_node *left, size_t nr_left,
		      const struct sd_node *members, size_t nr_members);
	void (*notify)(const struct sd_node *sender, const void *msg,
		       size_t len);
	void (*block)(const struct sd_node *sender);
	/*
	 * May the pending joins be judged one after the other and decided
	 * together (one accept each, @more on all but the last)?  Only if
	 * judging one changes nothing the next is judged on.  NULL: yes.
	 */
	bool (*joins_together)(void);
};

extern struct cluster_driver cdrv_local;
extern struct cluster_driver cdrv_corosync;
extern struct cluster_driver cdrv_zookeeper;

#endif
