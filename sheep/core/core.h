/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core/: what every layer of sheep may use.  The daemon's settings, fixed
 * at start-up (daemon.c), the request and its life cycle (request.c), the
 * memory budget of in-flight payloads and the request counters (stats.c).
 * core/ calls nothing in sheep/ above it; where it must reach up (to run
 * a request, to tell a paused connection that budget came back) it calls
 * functions that were handed to it at start-up.
 */
#ifndef SHEEP_CORE_CORE_H
#define SHEEP_CORE_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include "event.h"
#include "internal_proto.h"
#include "work.h"

/* bounds on what the network can make us allocate */
#define SD_MAX_PAYLOAD		(64U << 20)
#define SD_DEFAULT_BUDGET_MB	512	/* payload bytes of requests */
#define SD_MIN_BUDGET_MB	256	/* two 64 MiB objects per class */
#define SD_MAX_BUDGET_MB	(1 << 20)
#define SD_CONN_MAX_INFLIGHT	64
#define SD_CLIENT_STALL_MS	30000	/* no progress either way: disconnect */
#define SD_MAX_CLIENTS		4096
#define SD_IO_THREADS		8	/* sheep -w io=N */
#define SD_MAX_IO_THREADS	64
#define SD_IO_QUEUE		1024
#define SD_GW_MAX_RETRIES	100	/* x SD_GW_RETRY_MS */
#define SD_GW_RETRY_MS		300
#define SD_PEER_TIMEOUT_MS	30000

/* the daemon's settings: written by main() before the loop starts */
struct sheep_state {
	char base[4096];
	int port;
	bool nosync;
	bool gateway;
	long fixed_vnodes;	/* -V N, 0: weighted by capacity */
	struct sd_node self;	/* space may be updated by the config */
	struct event_loop *loop;
	struct work_queue *io_wq;
	int io_threads;		/* -w io=N, 0: SD_IO_THREADS */
};

extern struct sheep_state sys;

/* daemon.c */
void sheep_set_pidfile(const char *path);
/* remove the pid file and exit */
void sheep_exit(int code);

#endif
