// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * FLUSH_PEER as a group commit.  A flush must cover every write that was
 * acknowledged before it arrived, and store_flush() covers all writes
 * that completed before it started.  So flushes that arrive while one
 * runs wait for the next, and that next one answers all of them: a
 * hundred VMs flushing at once cost two store flushes, not a hundred, and
 * they never occupy more than one thread.
 */
#include <inttypes.h>
#include <stdlib.h>
#include "util.h"
#include "work.h"
#include "core/request.h"
#include "gw/gw.h"
#include "store/store.h"

static struct work_queue *flush_wq;
static LIST_HEAD(flush_waiting);	/* arrived, not covered yet */
static LIST_HEAD(flush_batch);		/* covered by the running flush */
static struct work flush_work;
static bool flush_running;
static int flush_result;
static uint64_t nr_flushes, nr_syncs;

static void flush_start(void);

static void flush_fn(struct work *w)
{
	flush_result = store_flush();
}

static void flush_done(struct work *w)
{
	struct request *req, *n;

	list_for_each_entry_safe(req, n, &flush_batch, list) {
		list_del(&req->list);
		INIT_LIST_HEAD(&req->list);
		req->rp.result = (uint32_t)flush_result;
		request_done(req);
	}
	flush_running = false;
	if (!list_empty(&flush_waiting))
		flush_start();
}

static void flush_start(void)
{
	size_t n = 0;

	flush_running = true;
	while (!list_empty(&flush_waiting)) {
		struct list_head *e = flush_waiting.next;

		list_del(e);
		list_add_tail(e, &flush_batch);
		n++;
	}
	nr_syncs++;
	sd_debug("flush: one sync for %zu requests (%" PRIu64
		 " requests, %" PRIu64 " syncs so far)", n, nr_flushes,
		 nr_syncs);
	flush_work.fn = flush_fn;
	flush_work.done = flush_done;
	/* one work item at a time on a queue of its own: cannot be full */
	if (wq_queue(flush_wq, &flush_work)) {
		sd_emerg("the flush queue refused its only work");
		abort();
	}
}

void flush_submit(struct request *req)
{
	nr_flushes++;
	list_add_tail(&req->list, &flush_waiting);
	if (!flush_running)
		flush_start();
}

void flush_init(void)
{
	flush_wq = wq_create("flush", 1, 1, sys.loop);
}
