// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * VDI locks taken with SD_FLAG_CMD_KLOCK belong to the client connection
 * that took them: when it closes (the VM exited or was killed) this node
 * releases them, so that a crashed VM does not keep its disk locked until
 * an operator runs `dog vdi lock unlock`.  Those releases are conditional
 * (RELEASE_VDI with KLOCK): they undo a lock only while the node that sent
 * them still owns it, never a lock broken by hand and taken elsewhere.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core/request.h"
#include "front/front.h"
#include "ops/ops.h"
#include "util.h"

struct pending_release {
	uint32_t vid;
	struct list_head list;
	struct list_head waiters;	/* LOCK_VDI requests to retry */
};

static LIST_HEAD(releases);

static struct pending_release *find_release(uint32_t vid)
{
	struct pending_release *p;

	list_for_each_entry(p, &releases, list)
		if (p->vid == vid)
			return p;
	return NULL;
}

static void release_done(struct request *r)
{
	struct pending_release *p = r->caller;
	struct request *w, *n;

	if (r->rp.result != SD_RES_SUCCESS)
		sd_warn("releasing the lock of VDI %" PRIx32 ": %s", p->vid,
			sd_strerror(r->rp.result));
	list_del(&p->list);
	list_for_each_entry_safe(w, n, &p->waiters, list) {
		list_del(&w->list);
		INIT_LIST_HEAD(&w->list);
		memset(&w->rp, 0, sizeof(w->rp));
		queue_request(w);
	}
	free(p);
	free_request(r);
}

void client_lock_release(uint32_t vid)
{
	struct pending_release *p = xzalloc(sizeof(*p));
	struct request *r = alloc_request(0);

	p->vid = vid;
	INIT_LIST_HEAD(&p->waiters);
	list_add_tail(&p->list, &releases);
	r->rq.proto_ver = SD_PROTO_VER;
	r->rq.opcode = SD_OP_RELEASE_VDI;
	r->rq.flags = SD_FLAG_CMD_KLOCK;
	r->rq.vdi.base_vdi_id = vid;
	r->op = get_sd_op(SD_OP_RELEASE_VDI);
	r->internal = true;
	r->complete = release_done;
	r->caller = p;
	sd_info("VDI %" PRIx32 ": releasing the lock of a closed connection",
		vid);
	queue_request(r);
}

/*
 * A LOCK_VDI refused because this node's own release of that lock is still
 * on its way (a client reconnecting at once): retry it when the release
 * is done instead of failing it.
 */
bool client_lock_wait_release(struct request *req)
{
	struct pending_release *p = find_release(req->rp.vdi.vdi_id);

	if (!p)
		return false;
	list_add_tail(&req->list, &p->waiters);
	return true;
}
