// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The opcode table (protocol.md §7) and the handlers of local and peer
 * ops; dispatch.c runs requests by it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "net.h"
#include "proto.h"
#include "ec.h"
#include "util.h"
#include "core/auth.h"
#include "core/request.h"
#include "group/group.h"
#include "group/vnodes.h"
#include "gw/ec_gateway.h"
#include "gw/gw.h"
#include "net/peer.h"
#include "ops/md.h"
#include "ops/ops.h"
#include "ops/s3reg.h"
#include "ops/strip_ops.h"
#include "ops/validate.h"
#include "recovery/recovery.h"
#include "recovery/scrub.h"
#include "state/cluster.h"
#include "state/epoch.h"
#include "state/vdi.h"
#include "store/store.h"
#include "vdi/recycle.h"
#include "vdi/vdi.h"


/* ---- peer ops: the store half ---- */

/*
 * REMOVE_PEER of a coded object (the gateway names the code): every strip
 * of it here, whichever index (a node may hold two across epochs)
 */
static int remove_strips(uint64_t oid, uint8_t policy)
{
	int n = ec_policy_data(policy) + ec_policy_parity(policy);
	int ret = SD_RES_NO_OBJ;

	if (n > SD_MAX_COPIES)
		return SD_RES_INVALID_PARMS;
	for (int i = 0; i < n; i++) {
		struct obj_key k = { .oid = oid, .idx = (uint8_t)i };
		int r = store_remove(k);

		/* the first one found, or an error */
		if (r != SD_RES_NO_OBJ &&
		    (ret == SD_RES_NO_OBJ || r != SD_RES_SUCCESS))
			ret = r;
	}
	return ret;
}

/* @w: where a durable write that finishes later reports (STORE_PENDING) */
static int store_exec(const struct sd_req *rq, void *data, struct sd_rsp *rp,
		      uint32_t obj_size, struct store_wait *w)
{
	bool sync = !(rq->flags & SD_FLAG_CMD_CACHE);
	/*
	 * Not rq->obj.ec_index: the gateway sends its copy number there
	 * for every object (gw/gateway.c build_peer_req) and nothing
	 * checks it; strips are keyed by it once the EC path validates it.
	 */
	struct obj_key k = obj_key_rep(rq->obj.oid);
	int ret;

	switch (rq->opcode) {
	case SD_OP_READ_PEER:
		ret = store_read(k, data, rq->data_length, rq->obj.offset);
		if (ret == SD_RES_NO_OBJ && (rq->flags & SD_FLAG_CMD_WILDCARD)) {
			uint32_t epoch = 0;

			ret = store_read_stale(k, data, rq->data_length,
					       rq->obj.offset, &epoch);
			/* Kelpie: tell recovery how old this copy is */
			rp->obj.offset = epoch;
		} else if (rq->flags & SD_FLAG_CMD_WILDCARD) {
			rp->obj.offset = UINT32_MAX;	/* a working copy */
		}
		if (ret == SD_RES_SUCCESS)
			rp->data_length = rq->data_length;
		return ret;
	case SD_OP_WRITE_PEER:
		/* with the journal, its sync may come later: no worker waits */
		if (sync)
			return store_write_durable(k, data, rq->data_length,
						   rq->obj.offset, w);
		return store_write(k, data, rq->data_length, rq->obj.offset,
				   false);
	case SD_OP_CREATE_AND_WRITE_PEER:
		return store_create(k, obj_size, data, rq->data_length,
				    rq->obj.offset, sync);
	case SD_OP_REMOVE_PEER:
		if (rq->obj.copy_policy)
			return remove_strips(rq->obj.oid,
					     rq->obj.copy_policy);
		return store_remove(k);
	case SD_OP_FLUSH_PEER:
		return store_flush();
	case SD_OP_EXIST:
		return store_exist(k);
	default:
		return SD_RES_INVALID_PARMS;
	}
}

/*
 * GET_HASH: SHA-1 of the whole stored object (cluster.md §10).  The
 * object-sized buffer is taken on the main loop, against the budget.
 */
static int local_get_hash_work(struct request *req)
{
	uint64_t oid = req->rq.obj.oid;
	unsigned int len = 0;
	int ret = store_read(obj_key_rep(oid), req->priv, req->obj_size, 0);
	/* copies of a ledger that count the same are the same (gw/gw.h) */
	size_t size = is_ledger_obj(oid) ? LEDGER_COUNTERS_SIZE :
					   req->obj_size;

	if (ret == SD_RES_SUCCESS &&
	    !EVP_Digest(req->priv, size, req->rp.hash.digest, &len,
			EVP_sha1(), NULL))
		ret = SD_RES_SYSTEM_ERROR;
	return ret;
}

static void local_get_hash_done(struct request *req)
{
	free(req->priv);
	req->priv = NULL;
	budget_release(req->obj_size);
	request_done(req);
}

static int local_get_hash(struct request *req)
{
	uint64_t oid = req->rq.obj.oid;

	req->obj_size = sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));
	req->priv = xmalloc(req->obj_size);
	budget_charge(req->obj_size);
	req->io_done = local_get_hash_done;
	submit_io(req);
	return SD_RES_ASYNC;
}

/*
 * a walk of the store shared by the requests of a burst (obj_list.c):
 * one that began after this request was queued (stat_request_start)
 */
static int local_get_obj_list(struct request *req)
{
	return obj_list_get(req->stat_start_ns, req->data, req->data_len,
			    &req->rp.data_length);
}

/*
 * Which of the oids in the payload are missing here?  Kelpie: with
 * obj.copy_policy set, strip obj.ec_index of each (dog vdi check -e on a
 * coded VDI; validate.c checks the index against the code)
 */
static int local_oids_exist(struct request *req)
{
	uint32_t n = req->rq.data_length / 8, missing = 0;
	uint8_t idx = req->rq.obj.copy_policy ? req->rq.obj.ec_index :
		      OBJ_IDX_REPLICA;
	uint8_t *p = req->data;

	for (uint32_t i = 0; i < n; i++) {
		struct obj_key k = { .oid = get_le64(p + 8 * i), .idx = idx };

		if (store_exist(k) != SD_RES_SUCCESS)
			put_le64(p + 8 * missing++, k.oid);
	}
	req->rp.data_length = missing * 8;
	return missing ? SD_RES_NO_OBJ : SD_RES_SUCCESS;
}

static int peer_work(struct request *req)
{
	const struct sd_req *rq = &req->rq;

	if (rq->opcode == SD_OP_DECREF_PEER)
		return ledger_decref(rq->ref.oid, rq->ref.generation,
				     rq->ref.count, rq->ref.op_id,
				     req->ledger_afresh,
				     !(rq->flags & SD_FLAG_CMD_CACHE));
	return store_exec(&req->rq, req->data, &req->rp, req->obj_size,
			  &req->swait);
}

/*
 * The largest read or write done on the loop: the hand-off it saves
 * costs tens of microseconds, while copying and checking 4 MiB takes the
 * loop about a millisecond, which workers would spend in parallel
 * (store/csum.c's CSUM_LOOP_BLOCKS is the same 128 KiB).
 */
#define LOOP_IO_MAX	(128u << 10)

/* READ_PEER on the main loop when the page cache holds it all */
static bool peer_read_try(struct request *req)
{
	const struct sd_req *rq = &req->rq;

	/* recovery's reads may need the stale area: a worker's */
	if (rq->flags & SD_FLAG_CMD_WILDCARD ||
	    rq->data_length > LOOP_IO_MAX)
		return false;
	if (!store_read_nowait(obj_key_rep(rq->obj.oid), req->data,
			       rq->data_length, rq->obj.offset))
		return false;
	req->rp.result = SD_RES_SUCCESS;
	req->rp.data_length = rq->data_length;
	return true;
}

/*
 * A cached WRITE_PEER on the main loop when the file system takes it
 * without blocking (XFS): a durable one syncs, a worker's (or the
 * journal's) job
 */
static bool peer_write_try(struct request *req)
{
	const struct sd_req *rq = &req->rq;

	if (!(rq->flags & SD_FLAG_CMD_CACHE) ||
	    rq->data_length > LOOP_IO_MAX)
		return false;
	if (!store_write_nowait(obj_key_rep(rq->obj.oid), req->data,
				rq->data_length, rq->obj.offset))
		return false;
	req->rp.result = SD_RES_SUCCESS;
	return true;
}

/* ---- REPAIR_REPLICA: copy an object from another node to here ---- */

struct repair {
	struct peer_req pr;
	struct request *req;
};

static void repair_store_done(struct work *w);

static void repair_store(struct work *w)
{
	struct request *req = container_of(w, struct request, work);

	req->rp.result = (uint32_t)store_create(obj_key_rep(req->rq.obj.oid),
						req->obj_size, req->priv,
						req->obj_size, 0, true);
}

static void repair_store_done(struct work *w)
{
	struct request *req = container_of(w, struct request, work);

	budget_release(req->obj_size);
	free(req->priv);
	req->priv = NULL;
	request_done(req);
}

static void repair_read_done(struct peer_req *pr, int result)
{
	struct repair *r = container_of(pr, struct repair, pr);
	struct request *req = r->req;

	free(r);
	if (result != SD_RES_SUCCESS) {
		budget_release(req->obj_size);
		free(req->priv);
		req->priv = NULL;
		req->rp.result = (uint32_t)result;
		request_done(req);
		return;
	}
	req->work.fn = repair_store;
	req->work.done = repair_store_done;
	if (wq_queue(sys.io_wq, &req->work)) {
		req->rp.result = SD_RES_AGAIN;
		repair_store_done(&req->work);
	}
}

static int repair_replica(struct request *req)
{
	struct repair *r;
	struct node_id nid = { 0 };
	uint64_t oid = req->rq.forw.oid;

	if (sys.gateway)
		return SD_RES_NO_SUPPORT;
	memcpy(nid.addr, req->rq.forw.addr, sizeof(nid.addr));
	nid.port = req->rq.forw.port;
	req->rq.obj.oid = oid;
	req->obj_size = sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));
	req->priv = xmalloc(req->obj_size);
	budget_charge(req->obj_size);
	r = xzalloc(sizeof(*r));
	r->req = req;
	sd_init_req(&r->pr.rq, SD_OP_READ_PEER);
	r->pr.rq.epoch = cstate->epoch;
	r->pr.rq.flags = SD_FLAG_CMD_RECOVERY;
	r->pr.rq.obj.oid = oid;
	r->pr.rq.obj.tgt_epoch = cstate->epoch;
	r->pr.rq.data_length = req->obj_size;
	r->pr.rbuf = req->priv;
	r->pr.rbuf_len = req->obj_size;
	r->pr.done = repair_read_done;
	peer_submit(&nid, &r->pr);
	return SD_RES_ASYNC;
}

/*
 * ---- FENCE_OBJ, UNFENCE_OBJ: the scrub holds the writes of an object on
 * every gateway while it reconciles the object's copies (gw/gateway.c) ----
 */

static void fence_ready(void *arg, int res)
{
	struct request *req = arg;

	req->rp.result = (uint32_t)res;
	request_done(req);
}

static int local_fence_obj(struct request *req)
{
	uint64_t lease = req->rq.obj.offset;

	if (req->rq.epoch < cstate->epoch)
		return SD_RES_OLD_NODE_VER;
	if (req->rq.epoch > cstate->epoch)
		return SD_RES_NEW_NODE_VER;
	if (!lease || lease > FENCE_LEASE_MAX)
		return SD_RES_INVALID_PARMS;
	return gateway_fence(req->rq.obj.oid, (uint32_t)lease, fence_ready,
			     req);
}

/* lifting is safe in any epoch */
static int local_unfence_obj(struct request *req)
{
	return gateway_unfence(req->rq.obj.oid);
}

/* ---- local ops on the main thread ---- */

static int local_get_node_list(struct request *req)
{
	size_t n = cstate->nr_members;

	if (n * sizeof(struct sd_node) > req->data_len)
		return SD_RES_BUFFER_SMALL;
	sd_nodes_encode(cstate->members, n, req->data);
	req->rp.data_length = (uint32_t)(n * sizeof(struct sd_node));
	req->rp.node.nr_nodes = (uint32_t)n;
	return SD_RES_SUCCESS;
}

static int local_stat_sheep(struct request *req)
{
	uint64_t size = 0, free_bytes = 0;

	if (!sys.gateway && store_stat(&size, &free_bytes))
		return SD_RES_EIO;
	req->rp.node.store_size = size;
	req->rp.node.store_free = free_bytes;
	return SD_RES_SUCCESS;
}

static uint32_t status_result(void)
{
	switch (cstate->status) {
	case SD_STATUS_OK:
		return SD_RES_SUCCESS;
	case SD_STATUS_SHUTDOWN:
		return SD_RES_SHUTDOWN;
	case SD_STATUS_KILLED:
		return SD_RES_KILLED;
	default:
		return cstate->ctime ? SD_RES_WAIT_FOR_JOIN : SD_RES_WAIT_FOR_FORMAT;
	}
}

static int local_stat_cluster(struct request *req)
{
	uint32_t nodes_nr = req->rq.cluster.nodes_nr;
	size_t rec = sizeof(struct epoch_log_hdr) +
		     (size_t)nodes_nr * sizeof(struct sd_node);
	size_t max = rec ? req->data_len / rec : 0, k = 0;
	struct sd_node *nodes = xmalloc(SD_MAX_NODES * sizeof(*nodes));
	int ret = SD_RES_SUCCESS;

	memset(req->data, 0, req->data_len);
	for (uint32_t e = cstate->epoch; e >= 1 && k < max; e--) {
		struct epoch_log_hdr h = { 0 };
		uint8_t *p = (uint8_t *)req->data + k * rec;
		uint64_t t = 0;
		int n = epoch_log_read(e, nodes, SD_MAX_NODES, &t);

		if (n < 0)
			continue;
		if ((uint32_t)n > nodes_nr) {
			ret = SD_RES_BUFFER_SMALL;
			break;
		}
		h.time = t;
		h.epoch = e;
		h.nr_nodes = (uint32_t)n;
		if (!k) {
			h.ctime = cstate->ctime;
			h.disable_recovery = cstate->disable_recovery;
			h.nr_copies = cstate->copies;
			h.copy_policy = cstate->copy_policy;
			h.flags = cstate->flags;
			memcpy(h.drv_name, cstate->store, sizeof(h.drv_name));
		}
		epoch_log_hdr_encode(&h, p);
		sd_nodes_encode(nodes, (size_t)n, p + sizeof(h));
		k++;
	}
	free(nodes);
	req->rp.data_length = (uint32_t)(k * rec);
	if (ret != SD_RES_SUCCESS)
		return ret;
	return (int)status_result();
}

static int local_get_cluster_default(struct request *req)
{
	req->rp.cluster_default.nr_copies = cstate->copies;
	req->rp.cluster_default.copy_policy = cstate->copy_policy;
	req->rp.cluster_default.block_size_shift = cstate->block_size_shift;
	return SD_RES_SUCCESS;
}

static int read_bitmap(struct request *req, bool deleted)
{
	if (req->rq.data_length != SD_NR_VDIS / 8)
		return SD_RES_INVALID_PARMS;
	vdi_bitmap_read(deleted, req->data);
	req->rp.data_length = SD_NR_VDIS / 8;
	return SD_RES_SUCCESS;
}

static int local_read_vdis(struct request *req)
{
	return read_bitmap(req, false);
}

static int local_read_del_vdis(struct request *req)
{
	return read_bitmap(req, true);
}

static int local_cluster_info(struct request *req)
{
	/* the whole struct goes out whatever the client asked for (§8.3) */
	if (req->data_len < SD_CLUSTER_INFO_SIZE) {
		budget_charge(SD_CLUSTER_INFO_SIZE - req->data_len);
		req->data = xrealloc(req->data, SD_CLUSTER_INFO_SIZE);
		req->data_len = SD_CLUSTER_INFO_SIZE;
	}
	memset(req->data, 0, SD_CLUSTER_INFO_SIZE);
	cinfo_encode(req->data, SD_CLUSTER_INFO_SIZE, cstate->status);
	req->rp.data_length = SD_CLUSTER_INFO_SIZE;
	return SD_RES_SUCCESS;
}

static int local_get_store_list(struct request *req)
{
	static const char list[] = "plain tree ";

	if (req->data_len < sizeof(list))
		return SD_RES_BUFFER_SMALL;
	memcpy(req->data, list, sizeof(list));
	req->rp.data_length = sizeof(list);
	return SD_RES_SUCCESS;
}

static struct timer kill_timer;

static void kill_now(struct timer *t)
{
	sd_notice("killed by request");
	sheep_exit(0);
}

static int local_kill_node(struct request *req)
{
	group_set_killed();
	kill_timer.fn = kill_now;
	timer_add(sys.loop, &kill_timer, 100);
	return SD_RES_SUCCESS;
}

struct vdi_copies_ctx {
	struct request *req;
	size_t n, max;
	bool small;
};

static void add_vdi_state(uint32_t vid, struct vdi_info *vi, void *arg)
{
	struct vdi_copies_ctx *ctx = arg;
	struct vdi_state vs = { 0 };

	if (ctx->n == ctx->max) {
		ctx->small = true;
		return;
	}
	vs.vid = vid;
	vs.nr_copies = vi->nr_copies;
	vs.snapshot = vi->snapshot;
	vs.deleted = vi->deleted;
	vs.copy_policy = vi->copy_policy;
	vs.block_size_shift = vi->block_size_shift;
	vs.parent_vid = vi->parent_vid;
	vs.pad[0] = (vi->parent_unknown ? VDI_STATE_PARENT_UNKNOWN : 0) |
		    (vi->recycled ? VDI_STATE_RECYCLED : 0);
	vs.recycle_gen = vi->gen;
	vs.lock_state = vi->lock_state;
	vs.lock_owner = vi->lock_owner;
	vdi_state_encode(&vs, (uint8_t *)ctx->req->data + ctx->n * sizeof(vs));
	ctx->n++;
}

static int local_get_vdi_copies(struct request *req)
{
	struct vdi_copies_ctx ctx = {
		.req = req, .max = req->data_len / sizeof(struct vdi_state),
	};

	vdi_for_each(add_vdi_state, &ctx);
	if (ctx.small)
		return SD_RES_BUFFER_SMALL;
	req->rp.data_length = (uint32_t)(ctx.n * sizeof(struct vdi_state));
	return SD_RES_SUCCESS;
}

static int local_stat(struct request *req)
{
	struct sd_stat st;

	if (req->data_len < sizeof(struct sd_stat))
		return SD_RES_BUFFER_SMALL;
	stat_read(&st);
	sd_stat_encode(&st, req->data);
	req->rp.data_length = sizeof(struct sd_stat);
	return SD_RES_SUCCESS;
}

static int local_get_loglevel(struct request *req)
{
	if (req->data_len < 4)
		return SD_RES_BUFFER_SMALL;
	put_le32(req->data, (uint32_t)log_get_level());
	req->rp.data_length = 4;
	return SD_RES_SUCCESS;
}

/* GET_VNODES: this node's vnode count in the current ring */
static int local_get_vnodes(struct request *req)
{
	uint16_t n = sys.self.nr_vnodes;

	if (req->data_len < 4)
		return SD_RES_BUFFER_SMALL;
	for (size_t i = 0; i < cstate->nr_members; i++)
		if (node_is_self(&cstate->members[i]))
			n = cstate->members[i].nr_vnodes;
	put_le32(req->data, n);
	req->rp.data_length = 4;
	return SD_RES_SUCCESS;
}

static int local_set_loglevel(struct request *req)
{
	int32_t level;
	int old;

	/* the level is the request payload: without WRITE there is none */
	if (!(req->rq.flags & SD_FLAG_CMD_WRITE) || req->rq.data_length < 4)
		return SD_RES_INVALID_PARMS;
	level = (int32_t)get_le32(req->data);
	if (level < LOG_L_EMERG || level > LOG_L_DEBUG)
		return SD_RES_INVALID_PARMS;
	old = log_get_level();
	/* leave a trace if either the old or the new level shows notices */
	if (level >= LOG_L_NOTICE)
		log_set_level(level);
	sd_notice("log level changed from %d to %" PRId32, old, level);
	log_set_level(level);
	return SD_RES_SUCCESS;
}

static int local_stat_recovery(struct request *req)
{
	struct recovery_state rs = { 0 };

	if (req->data_len < sizeof(rs))
		return SD_RES_BUFFER_SMALL;
	recovery_stat(&rs);
	recovery_state_encode(&rs, req->data);
	req->rp.data_length = sizeof(rs);
	return SD_RES_SUCCESS;
}

static int local_scrub_start(struct request *req)
{
	return scrub_start();
}

static int local_scrub_stop(struct request *req)
{
	scrub_stop();
	return SD_RES_SUCCESS;
}

static int local_scrub_status(struct request *req)
{
	struct scrub_stat st;
	const uint64_t *f = &st.running;

	if (req->data_len < SCRUB_STATUS_LEN)
		return SD_RES_BUFFER_SMALL;
	scrub_get_stat(&st);
	for (int i = 0; i < SCRUB_STATUS_LEN / 8; i++)
		put_le64((uint8_t *)req->data + 8 * i, f[i]);
	req->rp.data_length = SCRUB_STATUS_LEN;
	return SD_RES_SUCCESS;
}

static const struct ops_metrics_hooks *metrics_hooks;

void ops_set_metrics_hooks(const struct ops_metrics_hooks *hooks)
{
	metrics_hooks = hooks;
}

static int local_metrics_work(struct request *req)
{
	(void)req;
	metrics_hooks->count();
	return SD_RES_SUCCESS;
}

static void local_metrics_done(struct request *req)
{
	int n;

	if (req->rp.result == SD_RES_SUCCESS) {
		n = metrics_hooks->text(req->data, req->data_len);
		if (n < 0)
			req->rp.result = SD_RES_BUFFER_SMALL;
		else
			req->rp.data_length = (uint32_t)n;
	}
	request_done(req);
}

/* the object counts in a worker, the rest of the text on the main loop */
static int local_get_metrics(struct request *req)
{
	if (!metrics_hooks)
		return SD_RES_NO_SUPPORT;
	req->io_done = local_metrics_done;
	submit_io(req);
	return SD_RES_ASYNC;
}

static int local_get_recovery(struct request *req)
{
	struct recovery_throttling throttle;

	if (req->data_len < sizeof(throttle))
		return SD_RES_BUFFER_SMALL;
	recovery_get_throttle(&throttle);
	throttling_encode(&throttle, req->data);
	req->rp.data_length = sizeof(throttle);
	return SD_RES_SUCCESS;
}

static int local_set_recovery(struct request *req)
{
	struct recovery_throttling t;

	if (req->rq.data_length < sizeof(t))
		return SD_RES_INVALID_PARMS;
	throttling_decode(&t, req->data);
	/* an interval that would wrap the throttle's clock is refused */
	if (!t.max_exec_count != !t.queue_work_interval ||
	    t.queue_work_interval > INT64_MAX)
		return SD_RES_INVALID_PARMS;
	recovery_set_throttle(&t);
	return SD_RES_SUCCESS;
}

static int local_get_epoch(struct request *req)
{
	struct sd_node *nodes = xmalloc(SD_MAX_NODES * sizeof(*nodes));
	uint64_t t;
	int n = epoch_log_read(req->rq.obj.tgt_epoch, nodes, SD_MAX_NODES, &t);
	size_t len;

	if (n < 0) {
		free(nodes);
		return SD_RES_NO_TAG;
	}
	len = (size_t)n * sizeof(struct sd_node) + 8;
	if (len > req->data_len) {
		free(nodes);
		return SD_RES_BUFFER_SMALL;
	}
	sd_nodes_encode(nodes, (size_t)n, req->data);
	put_le64((uint8_t *)req->data + len - 8, t);
	req->rp.data_length = (uint32_t)len;
	free(nodes);
	return SD_RES_SUCCESS;
}

/*
 * DISCARD_OBJ (old QEMU): unmap one data object from its VDI by zeroing
 * its index entry; the index update drops the reference.  Discards that
 * name a snapshot's object are refused, which makes QEMU stop discarding
 * rather than edit a parent's inode (protocol.md §8.1).
 */
static void discard_done(struct request *r)
{
	struct request *req = r->caller;

	req->rp.result = r->rp.result == SD_RES_NO_OBJ ? SD_RES_SUCCESS :
			 r->rp.result;
	free_request(r);
	request_done(req);
}

static int local_discard(struct request *req)
{
	uint64_t oid = req->rq.obj.oid;
	uint32_t vid = oid_to_vid(oid);
	struct vdi_info *vi = vdi_get(vid, false);
	struct request *r;

	/* a flat index has 2^20 entries: no offset past them */
	if (!is_data_obj(oid) || !vi || vi->snapshot || vi->deleted ||
	    data_oid_to_idx(oid) >= SD_INODE_DATA_INDEX)
		return SD_RES_INVALID_PARMS;
	r = alloc_request(4);
	r->flat_index = true;
	r->rq.opcode = SD_OP_WRITE_OBJ;
	r->rq.proto_ver = SD_PROTO_VER;
	r->rq.flags = SD_FLAG_CMD_WRITE;
	r->rq.data_length = 4;
	r->rq.obj.oid = vid_to_vdi_oid(vid);
	r->rq.obj.offset = SD_INODE_INDEX_OFFSET + 4 * data_oid_to_idx(oid);
	r->rq.obj.copies = vi->nr_copies;
	r->op = get_sd_op(SD_OP_WRITE_OBJ);
	r->complete = discard_done;
	r->caller = req;
	gateway_submit(r);
	return SD_RES_ASYNC;
}

static int local_success(struct request *req)
{
	return SD_RES_SUCCESS;
}

/* ---- cluster op main parts ---- */

static int cluster_make_fs(const struct sd_req *req, struct sd_rsp *rsp,
			   void *data, const struct cluster_ctx *ctx);
static int cluster_shutdown(const struct sd_req *req, struct sd_rsp *rsp,
			    void *data, const struct cluster_ctx *ctx);

static int cluster_nop(const struct sd_req *req, struct sd_rsp *rsp,
		       void *data, const struct cluster_ctx *ctx)
{
	return SD_RES_SUCCESS;
}

/*
 * SET_VNODES (dog node vnodes set N): the node dog asked takes N vnodes,
 * in a cluster of fixed vnodes.  Every node checks the same things in
 * the same order, so all come to the same answer.
 */
static int cluster_set_vnodes(const struct sd_req *req, struct sd_rsp *rsp,
			      void *data, const struct cluster_ctx *ctx)
{
	int32_t n;

	if (!ctx->sender->nr_vnodes)
		return SD_RES_GATEWAY_MODE;
	if (vnodes_auto())
		return SD_RES_INVALID_VNODES_STRATEGY;
	if (req->data_length < 4 || !data)
		return SD_RES_INVALID_PARMS;
	n = (int32_t)get_le32(data);
	if (n < 1 || n > UINT16_MAX)
		return SD_RES_INVALID_PARMS;
	return group_update_node(&ctx->sender->nid, 0, (uint16_t)n);
}

/*
 * REWEIGHT (dog cluster reweight): every node measures its capacity and
 * announces it if it moved (UPDATE_NODE).  Capacity weighs only
 * automatic vnodes: with fixed ones it is refused, not done for nothing.
 */
static int cluster_reweight(const struct sd_req *req, struct sd_rsp *rsp,
			    void *data, const struct cluster_ctx *ctx)
{
	if (!vnodes_auto())
		return SD_RES_INVALID_VNODES_STRATEGY;
	vnodes_reweigh_self();
	return SD_RES_SUCCESS;
}

/* UPDATE_NODE: a member announces its own new capacity */
static int cluster_update_node(const struct sd_req *req, struct sd_rsp *rsp,
			       void *data, const struct cluster_ctx *ctx)
{
	struct sd_node n;

	if (req->data_length < sizeof(struct sd_node) || !data)
		return SD_RES_INVALID_PARMS;
	sd_node_decode(&n, data);
	if (!node_id_eq(&n.nid, &ctx->sender->nid) || !n.space)
		return SD_RES_INVALID_PARMS;
	return group_update_node(&n.nid, n.space, 0);
}

static int cluster_recover_flag(const struct sd_req *req, struct sd_rsp *rsp,
				void *data, const struct cluster_ctx *ctx)
{
	group_set_recovery(req->opcode == SD_OP_DISABLE_RECOVER);
	if (!cstate->disable_recovery)
		recovery_resume();
	return SD_RES_SUCCESS;
}

static int cluster_force_recover(const struct sd_req *req,
				 struct sd_rsp *rsp, void *data,
				 const struct cluster_ctx *ctx)
{
	return group_force_recover();
}

static int cluster_alter_copy(const struct sd_req *req, struct sd_rsp *rsp,
			      void *data, const struct cluster_ctx *ctx)
{
	if (req->cluster.copy_policy || !req->cluster.copies ||
	    req->cluster.copies > SD_MAX_COPIES)
		return SD_RES_INVALID_PARMS;
	group_alter_copies(req->cluster.copies);
	return SD_RES_SUCCESS;
}

/* copies, or a code whose strips are the copies (a VDI's, a cluster's) */
static bool layout_valid(uint8_t copies, uint8_t policy)
{
	struct ec_code c;

	if (!policy)
		return copies && copies <= SD_MAX_COPIES;
	return !ec_init_policy(&c, policy) &&
	       copies == c.d + c.p;
}

static void conv_forget(struct vdi_info *vi)
{
	vi->conv_state = VDI_CONV_NONE;
	vi->conv_copies = 0;
	vi->conv_policy = 0;
}

/* BEGIN: the new layout beside the old one; writes wait for the switch */
static int conv_begin(uint32_t vid, struct vdi_info *vi, uint8_t copies,
		      uint8_t policy)
{
	if (!policy && !vi->copy_policy)
		return SD_RES_INVALID_PARMS;	/* copies to copies: plain */
	if (policy == vi->copy_policy && (policy ||
					  copies == vdi_copies(vid)))
		return SD_RES_INVALID_PARMS;
	if (vi->snapshot || vi->conv_state == VDI_CONV_DROPPING)
		return SD_RES_INVALID_PARMS;
	if (vi->lock_state == LOCK_STATE_LOCKED)
		return SD_RES_VDI_LOCKED;	/* attached: not while in use */
	vi->conv_state = VDI_CONV_COPYING;
	vi->conv_copies = copies;
	vi->conv_policy = policy;
	gw_ec_forget_vdi(vid);
	sd_notice("VDI %" PRIx32 ": converting to %u copies, code %x",
		  vid, copies, policy);
	return SD_RES_SUCCESS;
}

/*
 * COMMIT: the new layout becomes the VDI's on every node, also on one
 * that joined after BEGIN (it has no conversion to finish: its gateway
 * cannot drop the old layout, dog says so)
 */
static int conv_commit(uint32_t vid, struct vdi_info *vi, uint8_t copies,
		       uint8_t policy)
{
	uint8_t old_copies = (uint8_t)vdi_copies(vid);
	uint8_t old_policy = vi->copy_policy;

	if (vi->conv_state == VDI_CONV_COPYING &&
	    (vi->conv_copies != copies || vi->conv_policy != policy))
		return SD_RES_INVALID_PARMS;
	vi->nr_copies = copies;
	vi->copy_policy = policy;
	if (vi->conv_state == VDI_CONV_COPYING) {
		vi->conv_state = VDI_CONV_DROPPING;
		vi->conv_copies = old_copies;
		vi->conv_policy = old_policy;
	}
	gw_ec_forget_vdi(vid);
	sd_notice("VDI %" PRIx32 ": %u copies, code %x (were %u, code %x)%s",
		  vid, copies, policy, old_copies, old_policy,
		  sys.gateway ? "" : ", recovering");
	recovery_restart();
	return SD_RES_SUCCESS;
}

/* between copies and a code: a phase of dog's conversion */
static int alter_vdi_layout(const struct sd_req *req, uint32_t vid,
			    struct vdi_info *vi)
{
	uint8_t copies = req->vdi_state.copies;
	uint8_t policy = req->vdi_state.copy_policy;

	switch (req->vdi_state.set_bitmap) {
	case ALTER_CONV_BEGIN:
		if (!layout_valid(copies, policy))
			return SD_RES_INVALID_PARMS;
		return conv_begin(vid, vi, copies, policy);
	case ALTER_CONV_COMMIT:
		if (!layout_valid(copies, policy))
			return SD_RES_INVALID_PARMS;
		return conv_commit(vid, vi, copies, policy);
	case ALTER_CONV_FINISH:
		if (vi->conv_state != VDI_CONV_DROPPING)
			return SD_RES_INVALID_PARMS;
		conv_forget(vi);
		return SD_RES_SUCCESS;
	case ALTER_CONV_ABORT:
		if (vi->conv_state != VDI_CONV_COPYING)
			return SD_RES_INVALID_PARMS;
		conv_forget(vi);
		sd_notice("VDI %" PRIx32 ": conversion aborted", vid);
		return SD_RES_SUCCESS;
	default:
		return SD_RES_INVALID_PARMS;
	}
}

/*
 * ALTER_VDI_COPY (protocol.md §8.3): a VDI's number of copies changes.
 * dog has written the new count into the inode header already; every
 * node records it in its VDI state and recovers again in the current
 * epoch, which adds or drops replicas (cluster.md §7.1).  The checks
 * depend only on the request and the VDI state, which all nodes share,
 * so every node comes to the same answer.
 */
static int cluster_alter_vdi_copy(const struct sd_req *req,
				  struct sd_rsp *rsp, void *data,
				  const struct cluster_ctx *ctx)
{
	uint32_t vid = req->vdi_state.new_vid;
	uint8_t copies = req->vdi_state.copies;
	struct vdi_info *vi;
	uint8_t old;

	if (!vid || vid >= SD_NR_VDIS || !vdi_test_inuse(vid))
		return SD_RES_NO_VDI;
	vi = vdi_get(vid, false);
	if (!vi || vi->deleted)
		return SD_RES_NO_VDI;
	if (req->vdi_state.set_bitmap)
		return alter_vdi_layout(req, vid, vi);
	/* byte 33 (the cluster union's copy_policy): replication only */
	if (req->cluster.copy_policy || req->vdi_state.copy_policy ||
	    !copies || copies > SD_MAX_COPIES)
		return SD_RES_INVALID_PARMS;
	if (vi->copy_policy || vi->conv_state)
		return SD_RES_INVALID_PARMS;	/* coded, or converting */
	old = (uint8_t)vdi_copies(vid);
	vi->nr_copies = copies;
	if (!vi->block_size_shift)
		vi->block_size_shift = req->vdi_state.block_size_shift;
	sd_notice("VDI %" PRIx32 ": %u copies (was %u)%s", vid, copies, old,
		  sys.gateway ? "" : ", recovering");
	recovery_restart();
	return SD_RES_SUCCESS;
}

/* checks shared by an opcode class (ops/validate.h) */
#define OBJ_IO		(OPV_OBJ | OPV_RANGE | OPV_READ)
#define OBJ_WRITE	(OPV_OBJ | OPV_RANGE | OPV_PAYLOAD)
#define NAME_LEN	(SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN)

#define GATEWAY(n, c)	{ .name = n, .type = OP_GATEWAY, .checks = (c) }
#define PEER(n, c)	{ .name = n, .type = OP_PEER, .work_fn = peer_work, \
			  .checks = OPV_PEER | (c) }
#define LOCAL(n, f, fn)	{ .name = n, .type = OP_LOCAL, .force = f, .main_fn = fn }

static const struct sd_op ops[256] = {
	[SD_OP_CREATE_AND_WRITE_OBJ] = GATEWAY("CREATE_AND_WRITE_OBJ",
					       OBJ_WRITE),
	[SD_OP_READ_OBJ] = GATEWAY("READ_OBJ", OBJ_IO),
	[SD_OP_WRITE_OBJ] = GATEWAY("WRITE_OBJ", OBJ_WRITE),
	/* removal is the daemon's (deletion, ledgers): not for clients */
	[SD_OP_REMOVE_OBJ] = GATEWAY("REMOVE_OBJ", OPV_OBJ | OPV_PEER),
	[SD_OP_EC_CHECK] = GATEWAY("EC_CHECK", OPV_OBJ | OPV_ADMIN),
	[SD_OP_CONVERT_OBJ] = GATEWAY("CONVERT_OBJ", OPV_OBJ | OPV_ADMIN),
	[SD_OP_DISCARD_OBJ] = { .name = "DISCARD_OBJ", .type = OP_LOCAL,
		.main_fn = local_discard, .checks = OPV_OBJ },
	[SD_OP_NEW_VDI] = { .name = "NEW_VDI", .type = OP_CLUSTER,
		.work_fn = vdi_new_work, .cluster_fn = vdi_notify_add,
		.checks = OPV_PAYLOAD | OPV_NEW_VDI, .max_len = NAME_LEN },
	[SD_OP_LOCK_VDI] = { .name = "LOCK_VDI", .type = OP_CLUSTER,
		.work_fn = vdi_lookup_work, .cluster_fn = vdi_lock_main,
		.checks = OPV_PAYLOAD, .max_len = NAME_LEN },
	[SD_OP_RELEASE_VDI] = { .name = "RELEASE_VDI", .type = OP_CLUSTER,
		.cluster_fn = vdi_release_main, .max_len = NAME_LEN },
	[SD_OP_GET_VDI_INFO] = { .name = "GET_VDI_INFO", .type = OP_CLUSTER,
		.work_fn = vdi_lookup_work, .checks = OPV_PAYLOAD,
		.max_len = NAME_LEN },
	[SD_OP_READ_VDIS] = { .name = "READ_VDIS", .type = OP_LOCAL,
		.force = true, .main_fn = local_read_vdis,
		.max_len = SD_NR_VDIS / 8 },
	[SD_OP_FLUSH_VDI] = { .name = "FLUSH_VDI", .type = OP_LOCAL },
	[SD_OP_NOTIFY_VDI_ADD] = { .name = "NOTIFY_VDI_ADD",
		.type = OP_CLUSTER, .cluster_fn = vdi_notify_restore,
		.checks = OPV_PAYLOAD | OPV_ADMIN | OPV_VDI_STATE,
		.max_len = SD_INODE_HEADER_SIZE },
	[SD_OP_DEL_VDI] = { .name = "DEL_VDI", .type = OP_CLUSTER,
		.work_fn = vdi_del_work, .cluster_fn = vdi_notify_del,
		.checks = OPV_PAYLOAD, .max_len = NAME_LEN },
	[SD_OP_GET_CLUSTER_DEFAULT] = LOCAL("GET_CLUSTER_DEFAULT", true,
					    local_get_cluster_default),
	[SD_OP_GET_NODE_LIST] = { .name = "GET_NODE_LIST", .type = OP_LOCAL,
		.force = true, .main_fn = local_get_node_list,
		.max_len = SD_MAX_NODES * sizeof(struct sd_node) },
	[SD_OP_MAKE_FS] = { .name = "MAKE_FS", .type = OP_CLUSTER,
		.force = true, .cluster_fn = cluster_make_fs,
		.checks = OPV_PAYLOAD | OPV_CLUSTER | OPV_ADMIN,
		.max_len = SD_MAX_STORE_NAME },
	[SD_OP_SHUTDOWN] = { .name = "SHUTDOWN", .type = OP_CLUSTER,
		.force = true, .cluster_fn = cluster_shutdown,
		.checks = OPV_ADMIN },
	[SD_OP_STAT_SHEEP] = LOCAL("STAT_SHEEP", false, local_stat_sheep),
	[SD_OP_STAT_CLUSTER] = LOCAL("STAT_CLUSTER", true, local_stat_cluster),
	[SD_OP_GET_STORE_LIST] = LOCAL("GET_STORE_LIST", true,
				       local_get_store_list),
	[SD_OP_STAT_RECOVERY] = LOCAL("STAT_RECOVERY", true,
				      local_stat_recovery),
	[SD_OP_FLUSH_DEL_CACHE] = LOCAL("FLUSH_DEL_CACHE", true,
					local_success),
	[SD_OP_DELETE_CACHE] = LOCAL("DELETE_CACHE", true, local_success),
	[SD_OP_KILL_NODE] = { .name = "KILL_NODE", .type = OP_LOCAL,
		.force = true, .main_fn = local_kill_node,
		.checks = OPV_ADMIN },
	[SD_OP_GET_EPOCH] = { .name = "GET_EPOCH", .type = OP_LOCAL,
		.force = true, .main_fn = local_get_epoch,
		.checks = OPV_PEER },
	[SD_OP_CREATE_AND_WRITE_PEER] = PEER("CREATE_AND_WRITE_PEER",
					     OBJ_WRITE),
	[SD_OP_READ_PEER] = { .name = "READ_PEER", .type = OP_PEER,
		.work_fn = peer_work, .try_fn = peer_read_try,
		.checks = OPV_PEER | OBJ_IO },
	[SD_OP_WRITE_PEER] = { .name = "WRITE_PEER", .type = OP_PEER,
		.work_fn = peer_work, .try_fn = peer_write_try,
		.checks = OPV_PEER | OBJ_WRITE },
	[SD_OP_REMOVE_PEER] = PEER("REMOVE_PEER", OPV_OBJ),
	[SD_OP_FLUSH_PEER] = PEER("FLUSH_PEER", 0),
	[SD_OP_DECREF_OBJ] = GATEWAY("DECREF_OBJ", OPV_PEER),
	[SD_OP_DECREF_PEER] = PEER("DECREF_PEER", 0),
	[SD_OP_FORCE_RECOVER] = { .name = "FORCE_RECOVER",
		.type = OP_CLUSTER, .force = true,
		.cluster_fn = cluster_force_recover, .checks = OPV_ADMIN,
		.max_len = SD_MAX_NODES * sizeof(struct sd_node) },
	[SD_OP_ENABLE_RECOVER] = { .name = "ENABLE_RECOVER",
		.type = OP_CLUSTER, .cluster_fn = cluster_recover_flag,
		.checks = OPV_ADMIN },
	[SD_OP_DISABLE_RECOVER] = { .name = "DISABLE_RECOVER",
		.type = OP_CLUSTER, .cluster_fn = cluster_recover_flag,
		.checks = OPV_ADMIN },
	[SD_OP_GET_VDI_COPIES] = LOCAL("GET_VDI_COPIES", true,
				       local_get_vdi_copies),
	[SD_OP_STAT] = LOCAL("STAT", true, local_stat),
	[SD_OP_GET_LOGLEVEL] = LOCAL("GET_LOGLEVEL", true, local_get_loglevel),
	[SD_OP_SET_LOGLEVEL] = { .name = "SET_LOGLEVEL", .type = OP_LOCAL,
		.force = true, .main_fn = local_set_loglevel,
		.checks = OPV_PAYLOAD | OPV_ADMIN, .max_len = 8 },
	[SD_OP_EXIST] = { .name = "EXIST", .type = OP_LOCAL, .force = true,
		.work_fn = peer_work, .checks = OPV_OBJ },
	[SD_OP_MD_INFO] = { .name = "MD_INFO", .type = OP_LOCAL,
		.force = true, .work_fn = md_info_work,
		.max_len = MD_MAX_DISKS * 4120 + 8 },
	[SD_OP_MD_PLUG] = { .name = "MD_PLUG", .type = OP_LOCAL,
		.force = true, .main_fn = md_change,
		.work_fn = md_change_work, .checks = OPV_PAYLOAD | OPV_ADMIN,
		.max_len = 65536 },
	[SD_OP_MD_UNPLUG] = { .name = "MD_UNPLUG", .type = OP_LOCAL,
		.force = true, .main_fn = md_change,
		.work_fn = md_change_work, .checks = OPV_PAYLOAD | OPV_ADMIN,
		.max_len = 65536 },
	[SD_OP_GET_HASH] = { .name = "GET_HASH", .type = OP_LOCAL,
		.main_fn = local_get_hash, .work_fn = local_get_hash_work,
		.checks = OPV_OBJ },
	[SD_OP_GET_OBJ_LIST] = { .name = "GET_OBJ_LIST", .type = OP_LOCAL,
		.work_fn = local_get_obj_list, .checks = OPV_PEER },
	[SD_OP_RECYCLE_VDIS] = { .name = "RECYCLE_VDIS", .type = OP_CLUSTER,
		.work_fn = recycle_work, .cluster_fn = recycle_main,
		.checks = OPV_INTERNAL | OPV_PAYLOAD,
		.max_len = RECYCLE_FAMILY_MAX * 8 },
	[SD_OP_S3_REGISTRY] = { .name = "S3_REGISTRY", .type = OP_CLUSTER,
		.work_fn = s3reg_work, .cluster_fn = s3reg_main,
		.checks = OPV_PAYLOAD | OPV_ADMIN,
		.max_len = sizeof(struct s3reg_req) },
	[SD_OP_RECYCLE_BUSY] = { .name = "RECYCLE_BUSY", .type = OP_LOCAL,
		.main_fn = recycle_busy, .checks = OPV_PEER | OPV_OBJ },
	[SD_OP_COMPLETE_RECOVERY] = { .name = "COMPLETE_RECOVERY",
		.type = OP_CLUSTER, .force = true,
		.cluster_fn = recovery_complete_main,
		.checks = OPV_INTERNAL },
	[SD_OP_OIDS_EXIST] = { .name = "OIDS_EXIST", .type = OP_LOCAL,
		.force = true, .work_fn = local_oids_exist,
		.checks = OPV_PAYLOAD | OPV_EXIST },
	[SD_OP_REPAIR_REPLICA] = { .name = "REPAIR_REPLICA",
		.type = OP_LOCAL, .main_fn = repair_replica,
		.checks = OPV_PEER },
	[SD_OP_GET_VDI_ATTR] = { .name = "GET_VDI_ATTR", .type = OP_CLUSTER,
		.work_fn = vdi_attr_work, .cluster_fn = cluster_nop,
		.checks = OPV_PAYLOAD, .max_len = SD_ATTR_OBJ_SIZE },
	[SD_OP_CLUSTER_INFO] = LOCAL("CLUSTER_INFO", true, local_cluster_info),
	[SD_OP_ALTER_CLUSTER_COPY] = { .name = "ALTER_CLUSTER_COPY",
		.type = OP_CLUSTER, .cluster_fn = cluster_alter_copy,
		.checks = OPV_ADMIN | OPV_CLUSTER },
	[SD_OP_ALTER_VDI_COPY] = { .name = "ALTER_VDI_COPY",
		.type = OP_CLUSTER, .cluster_fn = cluster_alter_vdi_copy,
		.checks = OPV_ADMIN },
	[SD_OP_READ_DEL_VDIS] = { .name = "READ_DEL_VDIS", .type = OP_LOCAL,
		.force = true, .main_fn = local_read_del_vdis,
		.max_len = SD_NR_VDIS / 8 },
	[SD_OP_GET_RECOVERY] = LOCAL("GET_RECOVERY", true, local_get_recovery),
	[SD_OP_SCRUB_START] = { .name = "SCRUB_START", .type = OP_LOCAL,
		.main_fn = local_scrub_start, .checks = OPV_ADMIN },
	[SD_OP_SCRUB_STOP] = { .name = "SCRUB_STOP", .type = OP_LOCAL,
		.force = true, .main_fn = local_scrub_stop,
		.checks = OPV_ADMIN },
	[SD_OP_SCRUB_STATUS] = { .name = "SCRUB_STATUS", .type = OP_LOCAL,
		.force = true, .main_fn = local_scrub_status,
		.max_len = SCRUB_STATUS_LEN },
	[SD_OP_SET_VNODES] = { .name = "SET_VNODES", .type = OP_CLUSTER,
		.cluster_fn = cluster_set_vnodes,
		.checks = OPV_PAYLOAD | OPV_ADMIN, .max_len = 8 },
	[SD_OP_GET_VNODES] = LOCAL("GET_VNODES", true, local_get_vnodes),
	[SD_OP_REWEIGHT] = { .name = "REWEIGHT", .type = OP_CLUSTER,
		.cluster_fn = cluster_reweight, .checks = OPV_ADMIN },
	[SD_OP_UPDATE_NODE] = { .name = "UPDATE_NODE", .type = OP_CLUSTER,
		.cluster_fn = cluster_update_node,
		.checks = OPV_INTERNAL | OPV_PAYLOAD,
		.max_len = sizeof(struct sd_node) },
	[SD_OP_FENCE_OBJ] = { .name = "FENCE_OBJ", .type = OP_LOCAL,
		.main_fn = local_fence_obj, .checks = OPV_PEER | OPV_OBJ },
	[SD_OP_UNFENCE_OBJ] = { .name = "UNFENCE_OBJ", .type = OP_LOCAL,
		.force = true, .main_fn = local_unfence_obj,
		.checks = OPV_PEER | OPV_OBJ },
	[SD_OP_EC_PREPARE] = { .name = "EC_PREPARE", .type = OP_PEER,
		.work_fn = strip_peer_work,
		.checks = OPV_PEER | OPV_PAYLOAD | OPV_STRIP },
	[SD_OP_EC_INSTALL] = { .name = "EC_INSTALL", .type = OP_PEER,
		.work_fn = strip_peer_work,
		.checks = OPV_PEER | OPV_PAYLOAD | OPV_STRIP },
	[SD_OP_EC_COMMIT] = { .name = "EC_COMMIT", .type = OP_PEER,
		.work_fn = strip_peer_work, .checks = OPV_PEER | OPV_STRIP },
	[SD_OP_EC_ABORT] = { .name = "EC_ABORT", .type = OP_PEER,
		.work_fn = strip_peer_work, .checks = OPV_PEER | OPV_STRIP },
	[SD_OP_EC_READ] = { .name = "EC_READ", .type = OP_PEER,
		.work_fn = strip_peer_work, .checks = OPV_PEER | OPV_STRIP },
	[SD_OP_EC_STATE] = { .name = "EC_STATE", .type = OP_PEER,
		.work_fn = strip_peer_work, .checks = OPV_PEER | OPV_STRIP,
		.max_len = EC_STATE_LEN },
	[SD_OP_GET_METRICS] = { .name = "GET_METRICS", .type = OP_LOCAL,
		.force = true, .main_fn = local_get_metrics,
		.work_fn = local_metrics_work, .max_len = METRICS_TEXT_MAX },
	[SD_OP_AUTH_NONCE] = { .name = "AUTH_NONCE", .type = OP_LOCAL,
		.force = true, .checks = OPV_CONN,
		.max_len = AUTH_NONCE_LEN },
	[SD_OP_AUTH_PROVE] = { .name = "AUTH_PROVE", .type = OP_LOCAL,
		.force = true, .checks = OPV_CONN | OPV_PAYLOAD,
		.max_len = AUTH_MAC_LEN },
	[SD_OP_SET_RECOVERY] = { .name = "SET_RECOVERY", .type = OP_LOCAL,
		.force = true, .main_fn = local_set_recovery,
		.checks = OPV_PAYLOAD | OPV_ADMIN,
		.max_len = sizeof(struct recovery_throttling) },
};

const struct sd_op *get_sd_op(uint8_t opcode)
{
	return ops[opcode].name ? &ops[opcode] : NULL;
}

/* ---- cluster op main parts that touch the whole node ---- */

static int cluster_make_fs(const struct sd_req *req, struct sd_rsp *rsp,
			   void *data, const struct cluster_ctx *ctx)
{
	char store[SD_MAX_STORE_NAME] = "plain";

	if (req->data_length && data) {
		memset(store, 0, sizeof(store));
		strncpy(store, data, MIN(req->data_length,
					 sizeof(store) - 1));
	}
	if (!store_layout_known(store))
		return SD_RES_NO_STORE;
	if (req->cluster.copy_policy &&
	    !layout_valid(req->cluster.copies, req->cluster.copy_policy))
		return SD_RES_INVALID_PARMS;
	/* stable weighing is a way of weighing by capacity */
	if ((req->cluster.flags & SD_CLUSTER_FLAG_STABLE_VNODES) &&
	    !(req->cluster.flags & SD_CLUSTER_FLAG_AUTO_VNODES))
		return SD_RES_INVALID_PARMS;
	/* a base for the counts only where it lasts: stable vnodes */
	if (format_vnodes(req) &&
	    (!(req->cluster.flags & SD_CLUSTER_FLAG_STABLE_VNODES) ||
	     format_vnodes(req) < SD_MIN_FORMAT_VNODES ||
	     format_vnodes(req) > SD_MAX_FORMAT_VNODES))
		return SD_RES_INVALID_PARMS;
	return group_format(req, store);
}

static int cluster_shutdown(const struct sd_req *req, struct sd_rsp *rsp,
			    void *data, const struct cluster_ctx *ctx)
{
	group_shutdown();
	return SD_RES_SUCCESS;
}
