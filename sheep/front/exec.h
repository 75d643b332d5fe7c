/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Blocking requests for the threads of front/ that are not the main loop
 * (exec.c): any opcode, as a client would send it, run through the
 * dispatcher on the main loop while the caller waits.
 */
#ifndef SHEEP_FRONT_EXEC_H
#define SHEEP_FRONT_EXEC_H

#include "proto.h"

/*
 * Run @rq with @buf as its payload (both directions, @rq->data_length
 * bytes): the result, the response in @rsp (may be NULL).  Never on the
 * main thread.
 */
int front_exec(const struct sd_req *rq, void *buf, struct sd_rsp *rsp);
/*
 * The same as a client's request, not the daemon's own: an index write
 * so sent drops the references of the entries it replaces (objects.md
 * §10.1)
 */
int front_exec_client(const struct sd_req *rq, void *buf,
		      struct sd_rsp *rsp);

#endif
