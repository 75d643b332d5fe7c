// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Blocking requests for front/'s own threads (exec.h): the request is
 * handed to the main loop, which queues it like a local client's; the
 * caller sleeps on a condition until it completes.
 */
#include <pthread.h>
#include <stdlib.h>
#include "event.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "front/exec.h"
#include "ops/ops.h"

struct exec_call {
	struct loop_call call;
	struct request *req;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void exec_complete(struct request *req)
{
	struct exec_call *c = req->caller;

	pthread_mutex_lock(&c->lock);
	c->done = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void exec_start(struct loop_call *lc)
{
	struct exec_call *c = container_of(lc, struct exec_call, call);

	queue_request(c->req);
}

static int exec(const struct sd_req *rq, void *buf, struct sd_rsp *rsp,
		bool internal)
{
	struct exec_call c = { .done = false };
	struct request *req;
	int ret;

	/* the request runs on the loop while we wait: never from it */
	sd_assert(!event_loop_on_thread(sys.loop));
	req = xzalloc(sizeof(*req));
	INIT_LIST_HEAD(&req->list);
	req->rq = *rq;
	req->rq.proto_ver = SD_PROTO_VER;
	req->data = buf;
	req->internal = internal;
	req->complete = exec_complete;
	req->caller = &c;
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	c.req = req;
	c.call.fn = exec_start;
	event_loop_call(sys.loop, &c.call);
	pthread_mutex_lock(&c.lock);
	while (!c.done)
		pthread_cond_wait(&c.cond, &c.lock);
	pthread_mutex_unlock(&c.lock);
	ret = (int)req->rp.result;
	if (rsp)
		*rsp = req->rp;
	pthread_mutex_destroy(&c.lock);
	pthread_cond_destroy(&c.cond);
	free(req);
	return ret;
}

int front_exec(const struct sd_req *rq, void *buf, struct sd_rsp *rsp)
{
	return exec(rq, buf, rsp, true);
}

int front_exec_client(const struct sd_req *rq, void *buf,
		      struct sd_rsp *rsp)
{
	return exec(rq, buf, rsp, false);
}
