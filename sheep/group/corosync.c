// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The "corosync" cluster driver (cluster.md §6.1): the sheep of a cluster
 * are the processes of one corosync CPG group ("sheepdog", or
 * `sheep -c corosync:GROUP`).  Every message is multicast with
 * CPG_TYPE_AGREED, so every process sees the configuration changes of the
 * group and the messages in one total order: the transport the
 * process-group protocol (procgroup.c) needs, as it comes.
 *
 * Corosync reports a dead process within milliseconds.  With a corosync
 * quorum provider, a process joins the group only once its node is
 * quorate, and a node that loses quorum or its corosync connection stops
 * the daemon; the protocol's majority and merge rules do the rest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <corosync/cpg.h>
#include <corosync/quorum.h>
#include "driver.h"
#include "event.h"
#include "procgroup.h"
#include "util.h"

#define CS_DEFAULT_GROUP	"sheepdog"

static struct cs_state {
	bool inited;
	bool join_called;
	bool cpg_joined;	/* cpg_join() succeeded */
	bool have_quorum;	/* corosync has a quorum provider */
	bool quorate;

	cpg_handle_t cpg;
	quorum_handle_t qh;
	int cpg_fd;
	int q_fd;
	struct cpg_name group;
	struct event_loop *loop;
	struct timer join_timer;
} cs = {
	.cpg_fd = -1,
	.q_fd = -1,
};

static int cs_send(const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	cs_error_t r = cpg_mcast_joined(cs.cpg, CPG_TYPE_AGREED, &iov, 1);

	if (r == CS_ERR_TRY_AGAIN)
		return 1;
	if (r != CS_OK) {
		sd_err("cannot multicast to corosync (error %d)", r);
		return -1;
	}
	return 0;
}

static const struct pg_transport cs_transport = {
	.name = "corosync",
	.send = cs_send,
};

/* ------------------------------------------------------------------ */
/* corosync callbacks and the event loop */

static void deliver_cb(cpg_handle_t h, const struct cpg_name *group,
		       uint32_t nodeid, uint32_t pid, void *msg, size_t len)
{
	pg_deliver((struct pg_id){ .nodeid = nodeid, .pid = pid }, msg, len);
}

static struct pg_addr *to_pg(const struct cpg_address *a, size_t nr)
{
	struct pg_addr *p = xzalloc((nr ? nr : 1) * sizeof(*p));

	for (size_t i = 0; i < nr; i++)
		p[i] = (struct pg_addr){
			.id = { .nodeid = a[i].nodeid, .pid = a[i].pid },
			.reason = a[i].reason,
		};
	return p;
}

static void confchg_cb(cpg_handle_t h, const struct cpg_name *group,
		       const struct cpg_address *members, size_t nr_members,
		       const struct cpg_address *left, size_t nr_left,
		       const struct cpg_address *joined, size_t nr_joined)
{
	struct pg_addr *m = to_pg(members, nr_members);
	struct pg_addr *l = to_pg(left, nr_left);
	struct pg_addr *j = to_pg(joined, nr_joined);

	pg_confchg(m, nr_members, l, nr_left, j, nr_joined);
	free(m);
	free(l);
	free(j);
}

static void cpg_fd_fn(int fd, uint32_t events, void *data)
{
	cs_error_t r = cpg_dispatch(cs.cpg, CS_DISPATCH_ALL);

	if (r != CS_OK && r != CS_ERR_TRY_AGAIN)
		pg_fatal("lost the connection to corosync (error %d)", r);
	pg_process();
}

static int cpg_join_now(void)
{
	cs_error_t r = cpg_join(cs.cpg, &cs.group);

	if (r == CS_ERR_TRY_AGAIN) {
		timer_add(cs.loop, &cs.join_timer, 100);
		return 0;
	}
	if (r != CS_OK) {
		sd_err("cannot join corosync group %.*s (error %d)",
		       (int)cs.group.length, cs.group.value, r);
		return -1;
	}
	cs.cpg_joined = true;
	pg_transport_joined();
	return 0;
}

static void join_timer_fn(struct timer *t)
{
	if (!cs.cpg_joined && cpg_join_now())
		pg_fatal("cannot join the cluster");
}

static void quorum_cb(quorum_handle_t h, uint32_t quorate, uint64_t ring_seq,
		      uint32_t nr, uint32_t *list)
{
	cs.quorate = quorate;
}

static void quorum_check(void)
{
	if (cs.quorate) {
		if (cs.join_called && !cs.cpg_joined &&
		    !cs.join_timer.armed && cpg_join_now())
			pg_fatal("cannot join the cluster");
		return;
	}
	if (cs.cpg_joined)
		pg_fatal("this node lost corosync quorum: stopping so that "
			 "the cluster cannot diverge");
}

static void quorum_fd_fn(int fd, uint32_t events, void *data)
{
	cs_error_t r = quorum_dispatch(cs.qh, CS_DISPATCH_ALL);

	if (r != CS_OK && r != CS_ERR_TRY_AGAIN)
		pg_fatal("lost the connection to the corosync quorum service "
			 "(error %d)", r);
	quorum_check();
}

/* votequorum when corosync has a provider; else the majority rule only */
static void quorum_setup(void)
{
	quorum_callbacks_t cb = { .quorum_notify_fn = quorum_cb };
	uint32_t type = 0;
	int q = 0;

	if (quorum_initialize(&cs.qh, &cb, &type) != CS_OK) {
		sd_warn("no corosync quorum service: majority rule only");
		return;
	}
	if (!type) {
		sd_info("corosync has no quorum provider: majority rule only");
		goto fail;
	}
	if (quorum_fd_get(cs.qh, &cs.q_fd) != CS_OK ||
	    quorum_trackstart(cs.qh, CS_TRACK_CHANGES) != CS_OK ||
	    quorum_getquorate(cs.qh, &q) != CS_OK ||
	    event_add(cs.loop, cs.q_fd, EPOLLIN, quorum_fd_fn, NULL)) {
		sd_warn("cannot track corosync quorum: majority rule only");
		goto fail;
	}
	cs.have_quorum = true;
	cs.quorate = q;
	return;
fail:
	quorum_finalize(cs.qh);
	cs.q_fd = -1;
}

/* ------------------------------------------------------------------ */
/* the driver interface */

static int set_group(const char *option)
{
	const char *name = option && *option ? option : CS_DEFAULT_GROUP;
	size_t len = strlen(name);

	if (len > CPG_MAX_NAME_LENGTH) {
		sd_err("corosync group name '%s' is too long", name);
		return -1;
	}
	memset(&cs.group, 0, sizeof(cs.group));
	memcpy(cs.group.value, name, len);
	cs.group.length = (uint32_t)len;
	return 0;
}

static int cs_init(const char *option, struct event_loop *loop,
		   const struct cluster_handlers *h)
{
	cpg_model_v1_data_t model = {
		.model = CPG_MODEL_V1,
		.cpg_deliver_fn = deliver_cb,
		.cpg_confchg_fn = confchg_cb,
	};
	char where[CPG_MAX_NAME_LENGTH + 32];
	unsigned int nodeid;
	struct pg_id me;
	cs_error_t r;

	if (cs.inited || !loop || set_group(option))
		return -1;
	cs.loop = loop;
	r = cpg_model_initialize(&cs.cpg, CPG_MODEL_V1,
				 (cpg_model_data_t *)&model, NULL);
	if (r != CS_OK) {
		sd_err("cannot connect to corosync (error %d): is it running?",
		       r);
		return -1;
	}
	if (cpg_fd_get(cs.cpg, &cs.cpg_fd) != CS_OK ||
	    cpg_local_get(cs.cpg, &nodeid) != CS_OK) {
		sd_err("cannot set up the corosync connection");
		goto fail;
	}
	me = (struct pg_id){ .nodeid = nodeid, .pid = (uint32_t)getpid() };
	snprintf(where, sizeof(where), "corosync group %.*s",
		 (int)cs.group.length, cs.group.value);
	if (pg_init(&cs_transport, loop, h, me, where))
		goto fail;
	if (event_add(loop, cs.cpg_fd, EPOLLIN, cpg_fd_fn, NULL))
		goto fail;
	cs.join_timer.fn = join_timer_fn;
	quorum_setup();
	cs.inited = true;
	sd_info("corosync driver: group %.*s, node id %u%s",
		(int)cs.group.length, cs.group.value, nodeid,
		cs.have_quorum ? ", votequorum" : "");
	return 0;
fail:
	cpg_finalize(cs.cpg);
	cs.cpg_fd = -1;
	return -1;
}

static int cs_join(const struct sd_node *myself, const void *opaque,
		   size_t len)
{
	if (!cs.inited || cs.join_called || pg_join(myself, opaque, len))
		return -1;
	cs.join_called = true;
	if (cs.have_quorum && !cs.quorate) {
		sd_notice("waiting for corosync quorum before joining");
		return 0;
	}
	return cpg_join_now();
}

struct cluster_driver cdrv_corosync = {
	.name = "corosync",
	.init = cs_init,
	.join = cs_join,
	.leave = pg_leave,
	.notify = pg_notify,
	.block = pg_block,
	.unblock = pg_unblock,
};
