// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The life cycle of a request: allocation against the payload budget,
 * store work on the bounded I/O pool (with a backlog when the pool is
 * full) and completion.  Everything here runs on the main loop except
 * op->work_fn, which runs on an I/O worker; op->try_fn spares a read the
 * page cache holds that hand-off (two thread switches).
 */
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "core/request.h"

static uint64_t inflight_bytes;
static uint64_t budget_limit = (uint64_t)SD_DEFAULT_BUDGET_MB << 20;
#define MAX_RELEASE_HOOKS	4
static void (*release_hooks[MAX_RELEASE_HOOKS])(void);
static int nr_release_hooks;
static void (*dispatch_fn)(struct request *req);
static LIST_HEAD(io_backlog);
/* requests op->try_fn did at once: [0] reads, [1] writes */
static uint64_t nr_loop_served[2];

void budget_charge(uint64_t bytes)
{
	inflight_bytes += bytes;
}

void budget_release(uint64_t bytes)
{
	/* the budget never goes below zero: a release without its charge */
	sd_assert(bytes <= inflight_bytes);
	inflight_bytes -= bytes;
	/* also for 0 bytes: a finished request frees a connection's slot */
	for (int i = 0; i < nr_release_hooks; i++)
		release_hooks[i]();
}

void budget_read(uint64_t *used, uint64_t *limit)
{
	*used = inflight_bytes;
	*limit = budget_limit;
}

void budget_set_limit(uint64_t bytes)
{
	budget_limit = bytes;
}

uint64_t budget_conn_share(void)
{
	return budget_limit / 4;
}

bool budget_over(uint64_t bytes, bool peer)
{
	uint64_t limit = budget_limit;

	if (!peer)
		limit -= budget_limit / 4;
	return inflight_bytes && inflight_bytes + bytes > limit;
}

void budget_add_release_hook(void (*fn)(void))
{
	if (nr_release_hooks == MAX_RELEASE_HOOKS) {
		sd_emerg("too many budget release hooks");
		abort();
	}
	release_hooks[nr_release_hooks++] = fn;
}

static struct request *request_new(uint32_t data_len, bool zero)
{
	struct request *req = xzalloc(sizeof(*req));

	INIT_LIST_HEAD(&req->list);
	if (data_len) {
		/*
		 * whole pages go to and come from an O_DIRECT store as they
		 * are (sheep -D), without a bounce buffer.  Zeroing them costs
		 * what calloc does here: with sheep's M_MMAP_THRESHOLD large
		 * blocks come from the heap, which calloc clears too.
		 */
		if (data_len < 4096) {
			req->data = zero ? xzalloc(data_len) : xmalloc(data_len);
		} else {
			req->data = xmalloc_pages(data_len);
			if (zero)
				memset(req->data, 0, data_len);
		}
		req->data_len = data_len;
		budget_charge(data_len);
	}
	return req;
}

struct request *alloc_request(uint32_t data_len)
{
	return request_new(data_len, true);
}

struct request *alloc_payload_request(uint32_t data_len)
{
	return request_new(data_len, false);
}

void free_request(struct request *req)
{
	uint32_t len = req->data_len;

	free(req->data);
	free(req);
	budget_release(len);
}

void request_done(struct request *req)
{
	sd_assert(!req->completed);
	req->completed = true;
	stat_request_end(req);
	req->rp.opcode = req->rq.opcode;
	req->rp.id = req->rq.id;
	req->rp.proto_ver = 0;
	req->rp.flags = 0;
	if (req->rp.data_length > req->data_len)
		req->rp.data_length = req->data_len;
	req->complete(req);
}

void request_set_dispatch(void (*dispatch)(struct request *req))
{
	dispatch_fn = dispatch;
}

void request_submit(struct request *req)
{
	dispatch_fn(req);
}

static void io_work(struct work *w)
{
	struct request *req = container_of(w, struct request, work);

	req->rp.result = req->op->work_fn(req);
}

static void io_finish(struct request *req)
{
	if (req->io_done)
		req->io_done(req);
	else
		request_done(req);
}

/* one of the two ends of a write the journal finishes later */
static void swait_part_done(struct request *req)
{
	if (--req->swait_parts)
		return;
	req->rp.result = (uint32_t)req->swait_res;
	io_finish(req);
}

static void swait_on_loop(struct loop_call *c)
{
	swait_part_done(container_of(c, struct request, swait_call));
}

/* on the journal's sync thread */
static void swait_done(struct store_wait *w, int result)
{
	struct request *req = container_of(w, struct request, swait);

	req->swait_res = result;
	event_loop_call(sys.loop, &req->swait_call);
}

static void io_done(struct work *w)
{
	struct request *req = container_of(w, struct request, work);

	if (!list_empty(&io_backlog)) {
		struct request *next = list_first_entry(&io_backlog,
							struct request, list);

		list_del(&next->list);
		submit_io(next);
	}
	if (req->rp.result == STORE_PENDING)
		swait_part_done(req);
	else
		io_finish(req);
}

static void tried_done(struct timer *t)
{
	io_finish(container_of(t, struct request, retry_timer));
}

uint64_t request_loop_served(bool writes)
{
	return nr_loop_served[writes];
}

void submit_io(struct request *req)
{
	if (req->op && req->op->try_fn && req->op->try_fn(req)) {
		/* finished from the loop, never on the submitter's stack */
		nr_loop_served[!!(req->rq.flags & SD_FLAG_CMD_WRITE)]++;
		req->retry_timer.fn = tried_done;
		timer_add(sys.loop, &req->retry_timer, 0);
		return;
	}
	req->swait.done = swait_done;
	req->swait_call.fn = swait_on_loop;
	req->swait_parts = 2;
	req->work.fn = io_work;
	req->work.done = io_done;
	if (wq_queue(sys.io_wq, &req->work))
		list_add_tail(&req->list, &io_backlog);
}
