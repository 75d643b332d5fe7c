// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NBD commands on a VDI.  The daemon acts here as a client of its own
 * gateway, exactly like QEMU's sheepdog driver (protocol.md §12): it keeps
 * the inode index in memory, reads data objects named by the index, writes
 * owned objects in place, creates unallocated ones, copies shared ones on
 * write (CREATE_AND_WRITE_OBJ with SD_FLAG_CMD_COW) and then points the
 * index entry at the new object with a 4-byte WRITE_OBJ on the inode, which
 * lets the gateway drop the old reference (objects.md §9.3).
 *
 * A command is cut into per-object pieces ("subs"), at most NBD_IO_WINDOW
 * of them in flight.  Pieces that change an object (write, zero, unmap)
 * hold that object's busy slot of the export, so two creates of one object
 * never race and index updates of one entry are applied in order.  Reads
 * take no slot: NBD does not order overlapping commands in flight.
 *
 * TRIM unmaps the objects it covers completely (index entry 0, the gateway
 * frees or dereferences the object) and ignores partial objects.
 * WRITE_ZEROES unmaps completely covered objects too, writes zeros into
 * allocated parts of others and leaves unallocated ones alone; with
 * NBD_CMD_FLAG_NO_HOLE it writes zeros everywhere, allocating objects.
 *
 * When a write finds its VDI turned into a snapshot (SD_RES_READONLY), the
 * export re-looks up the VDI by name, takes over its lock and resends the
 * write, which becomes a copy-on-write of the snapshot's object, like QEMU.
 *
 * A hyper volume's index is its B-tree (nbd_hyper.c): entries come from a
 * map of the allocated ones, a creation's entry is set in the tree before
 * the write is acknowledged, and as an entry cannot be cleared, TRIM does
 * nothing and WRITE_ZEROES writes zeros.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "inode.h"
#include "nbd.h"
#include "proto.h"
#include "core/request.h"
#include "ops/ops.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "util.h"

#define NBD_IO_WINDOW		8	/* object requests per command */
#define NBD_ZERO_PIECE		(1U << 20)
#define NBD_BUSY_BUCKETS	64
#define NBD_LOCK_RETRIES	100	/* while our own lock goes away */
#define NBD_LOCK_RETRY_MS	50
#define NBD_SUB_RETRIES		3	/* reloads a piece may cause */
#define NBD_LIST_MAX		4096

struct obj_busy {
	uint32_t idx;
	struct list_head waiters;
	struct obj_busy *next;
};

struct nbd_export {
	char name[SD_MAX_VDI_LEN];
	uint32_t vid;
	uint64_t size;
	uint8_t shift;
	uint32_t nr_objs;
	uint32_t *index;		/* host order, nr_objs entries */
	struct nbd_hyper *hyper;	/* a hyper volume's index instead */
	bool readonly;			/* a snapshot */
	bool locked;			/* we hold LOCK_VDI on vid */
	bool reloading;
	bool in_ready;
	bool closed;
	bool detached;			/* its client is gone */
	struct list_head list;		/* all exports of this node */
	struct list_head reload_waiters;
	struct list_head ready;		/* subs handed a busy slot */
	struct timer ready_timer;
	struct obj_busy *busy[NBD_BUSY_BUCKETS];
};

enum sub_kind { SUB_READ, SUB_WRITE, SUB_ZERO, SUB_UNMAP };

struct nbd_sub {
	struct nbd_io *io;
	struct list_head list;
	enum sub_kind kind;
	uint32_t idx;
	uint32_t off;			/* in the object */
	uint32_t len;
	uint8_t *data;			/* READ target, WRITE source */
	uint32_t vid;			/* owner of the object used */
	uint32_t old_entry;
	uint32_t new_entry;
	int retries;
	int error;			/* failed while parked */
	bool create;
	bool cow;			/* the request owns a copy of data */
	bool locked;			/* holds the object's busy slot */
};

static const uint8_t zero_buf[NBD_ZERO_PIECE];

/* vids whose RELEASE_VDI from this node is still on its way */
struct pending_release {
	uint32_t vid;
	struct list_head list;
};
static LIST_HEAD(releases);
static LIST_HEAD(exports);

static void sub_locked(struct nbd_sub *sub);
static void io_pump(struct nbd_io *io);

static int sd_to_nbd_error(uint32_t res)
{
	switch (res) {
	case SD_RES_SUCCESS:
		return 0;
	case SD_RES_READONLY:
		return NBD_EPERM;
	case SD_RES_NO_SPACE:
		return NBD_ENOSPC;
	case SD_RES_INVALID_PARMS:
		return NBD_EINVAL;
	case SD_RES_NO_MEM:
		return NBD_ENOMEM;
	case SD_RES_SHUTDOWN:
		return NBD_ESHUTDOWN;
	default:
		return NBD_EIO;
	}
}

/* ---- internal requests ---- */

/*
 * A request of @len payload bytes.  With @buf the request borrows it (the
 * caller keeps ownership; free with req_put(r, true)); otherwise the
 * request owns a zeroed buffer of @len bytes.
 */
static struct request *req_new(uint8_t opcode, uint32_t len, void *buf,
			       void (*complete)(struct request *), void *caller)
{
	struct request *r;

	if (buf) {
		r = xzalloc(sizeof(*r));
		INIT_LIST_HEAD(&r->list);
		r->data = buf;
	} else {
		r = alloc_request(len);
	}
	r->rq.proto_ver = SD_PROTO_VER;
	r->rq.opcode = opcode;
	r->rq.data_length = len;
	r->op = get_sd_op(opcode);
	r->internal = true;
	r->complete = complete;
	r->caller = caller;
	return r;
}

static void req_put(struct request *r, bool borrowed)
{
	if (borrowed)
		r->data = NULL;
	free_request(r);
}

static void obj_args(struct request *r, uint64_t oid, uint32_t off,
		     uint16_t flags)
{
	r->rq.obj.oid = oid;
	r->rq.obj.offset = off;
	r->rq.flags = flags;
}

/* name + tag payload of GET_VDI_INFO / LOCK_VDI */
static struct request *lookup_req(const char *name, const char *tag,
				  uint32_t snapid, bool lock,
				  void (*complete)(struct request *),
				  void *caller)
{
	uint8_t op = lock ? SD_OP_LOCK_VDI : SD_OP_GET_VDI_INFO;
	struct request *r = req_new(op, SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN,
				    NULL, complete, caller);

	strncpy(r->data, name, SD_MAX_VDI_LEN - 1);
	strncpy((char *)r->data + SD_MAX_VDI_LEN, tag, SD_MAX_VDI_TAG_LEN - 1);
	r->rq.flags = SD_FLAG_CMD_WRITE | (lock ? SD_FLAG_CMD_KLOCK : 0);
	r->rq.vdi.snapid = snapid;
	return r;
}

/* will the lock on @vid that this node holds go away soon? */
static bool release_pending(uint32_t vid)
{
	struct pending_release *p;
	struct nbd_export *ex;

	list_for_each_entry(p, &releases, list)
		if (p->vid == vid)
			return true;
	list_for_each_entry(ex, &exports, list)
		if (ex->detached && ex->locked && ex->vid == vid)
			return true;
	return false;
}

static void release_done(struct request *r)
{
	struct pending_release *p = r->caller;

	if (r->rp.result != SD_RES_SUCCESS)
		sd_warn("releasing VDI %" PRIx32 ": %s", p->vid,
			sd_strerror(r->rp.result));
	list_del(&p->list);
	free(p);
	free_request(r);
}

static void release_lock(uint32_t vid)
{
	struct pending_release *p = xzalloc(sizeof(*p));
	struct request *r = req_new(SD_OP_RELEASE_VDI, 0, NULL, release_done,
				    p);

	p->vid = vid;
	list_add_tail(&p->list, &releases);
	r->rq.vdi.base_vdi_id = vid;
	queue_request(r);
}

/* ---- export state ---- */

static void export_free(struct nbd_export *ex)
{
	list_del(&ex->list);
	timer_del(&ex->ready_timer);
	free(ex->index);
	nbd_hyper_free(ex->hyper);
	free(ex);
}

/* the vid owning object @idx of the export, 0 if unallocated */
static uint32_t entry_get(const struct nbd_export *ex, uint32_t idx)
{
	return ex->hyper ? nbd_hyper_get(ex->hyper, idx) : ex->index[idx];
}

void nbd_export_close(struct nbd_export *ex)
{
	if (ex->locked)
		release_lock(ex->vid);
	ex->locked = false;
	ex->closed = true;
	if (!ex->in_ready)
		export_free(ex);
}

void nbd_export_detach(struct nbd_export *ex)
{
	ex->detached = true;
}

uint64_t nbd_export_size(const struct nbd_export *ex)
{
	return ex->size;
}

bool nbd_export_readonly(const struct nbd_export *ex)
{
	return ex->readonly;
}

static void ready_run(struct timer *t)
{
	struct nbd_export *ex = container_of(t, struct nbd_export,
					     ready_timer);

	ex->in_ready = true;
	while (!list_empty(&ex->ready) && !ex->closed) {
		struct nbd_sub *sub = list_first_entry(&ex->ready,
						       struct nbd_sub, list);

		list_del(&sub->list);
		sub_locked(sub);
	}
	ex->in_ready = false;
	if (ex->closed)
		export_free(ex);
}

static void make_ready(struct nbd_export *ex, struct nbd_sub *sub)
{
	list_add_tail(&sub->list, &ex->ready);
	timer_add(sys.loop, &ex->ready_timer, 0);
}

static struct obj_busy **busy_find(struct nbd_export *ex, uint32_t idx)
{
	struct obj_busy **p = &ex->busy[idx % NBD_BUSY_BUCKETS];

	while (*p && (*p)->idx != idx)
		p = &(*p)->next;
	return p;
}

/* true if @sub may change its object now; else it waits for the slot */
static bool busy_acquire(struct nbd_export *ex, struct nbd_sub *sub)
{
	struct obj_busy **p = busy_find(ex, sub->idx);

	if (*p) {
		list_add_tail(&sub->list, &(*p)->waiters);
		return false;
	}
	*p = xzalloc(sizeof(**p));
	(*p)->idx = sub->idx;
	INIT_LIST_HEAD(&(*p)->waiters);
	sub->locked = true;
	return true;
}

/* hand the slot to the next waiter, which runs from the loop */
static void busy_release(struct nbd_export *ex, struct nbd_sub *sub)
{
	struct obj_busy **p = busy_find(ex, sub->idx), *b = *p;
	struct nbd_sub *next;

	sub->locked = false;
	if (!b)
		return;
	if (list_empty(&b->waiters)) {
		*p = b->next;
		free(b);
		return;
	}
	next = list_first_entry(&b->waiters, struct nbd_sub, list);
	list_del(&next->list);
	next->locked = true;
	make_ready(ex, next);
}

/* ---- opening an export ---- */

struct open_ctx {
	struct nbd_open_args a;
	char name[SD_MAX_VDI_LEN];
	char tag[SD_MAX_VDI_TAG_LEN];
	uint32_t snapid;
	int retries;
	struct timer retry_timer;
	struct nbd_export *ex;
};

/* "VDI", "VDI@TAG" or "VDI@SNAPID" */
static int parse_export_name(struct open_ctx *o, const char *s)
{
	const char *at = strrchr(s, '@');
	size_t nlen = at ? (size_t)(at - s) : strlen(s);
	char *end;

	if (!nlen || nlen >= SD_MAX_VDI_LEN)
		return -1;
	memcpy(o->name, s, nlen);
	if (!at)
		return 0;
	at++;
	if (!*at || strlen(at) >= SD_MAX_VDI_TAG_LEN)
		return -1;
	if (at[0] >= '1' && at[0] <= '9') {
		unsigned long id = strtoul(at, &end, 10);

		if (!*end && id <= UINT32_MAX) {
			o->snapid = (uint32_t)id;
			return 0;
		}
	}
	strcpy(o->tag, at);
	return 0;
}

static bool is_snapshot_export(const struct open_ctx *o)
{
	return o->tag[0] || o->snapid;
}

static void open_finish(struct open_ctx *o, uint32_t res)
{
	struct nbd_export *ex = o->ex;

	if (res != SD_RES_SUCCESS && ex) {
		nbd_export_close(ex);
		ex = NULL;
	}
	o->a.done(ex, res, o->a.arg);
	timer_del(&o->retry_timer);
	free(o);
}

static void open_index_done(struct request *r)
{
	struct open_ctx *o = r->caller;
	uint32_t res = r->rp.result;

	if (res == SD_RES_SUCCESS)
		le32_array_decode(o->ex->index, o->ex->nr_objs, r->data);
	free_request(r);
	open_finish(o, res);
}

static void open_hyper_done(void *arg, struct nbd_hyper *h, uint32_t res)
{
	struct open_ctx *o = arg;

	o->ex->hyper = h;
	open_finish(o, res);
}

static uint32_t check_header(struct open_ctx *o,
			     const struct sd_inode_header *h)
{
	struct nbd_export *ex = o->ex;
	uint8_t shift = h->block_size_shift ? h->block_size_shift :
			SD_DEFAULT_BLOCK_SIZE_SHIFT;

	if (!h->name[0])
		return SD_RES_NO_VDI;
	/* a hyper volume of 4 MiB objects, short of 2^32 of them */
	if (h->store_policy && (h->store_policy != 1 ||
				shift != SD_DEFAULT_BLOCK_SIZE_SHIFT ||
				inode_nr_objs(h->vdi_size, shift) > UINT32_MAX))
		return SD_RES_NO_SUPPORT;
	if (is_snapshot_export(o) != !!h->snap_ctime)
		return is_snapshot_export(o) ? SD_RES_NO_TAG : SD_RES_NO_VDI;
	if (shift < SD_MIN_BLOCK_SIZE_SHIFT ||
	    shift > KELPIE_MAX_BLOCK_SIZE_SHIFT)
		return SD_RES_INVALID_PARMS;
	if (!h->store_policy && h->vdi_size > inode_max_size(shift))
		return SD_RES_NO_SUPPORT;
	ex->size = h->vdi_size;
	ex->shift = shift;
	ex->nr_objs = (uint32_t)inode_nr_objs(h->vdi_size, shift);
	ex->readonly = !!h->snap_ctime;
	return SD_RES_SUCCESS;
}

static void open_header_done(struct request *r)
{
	struct open_ctx *o = r->caller;
	struct nbd_export *ex = o->ex;
	struct sd_inode_header h;
	uint32_t res = r->rp.result;

	if (res == SD_RES_SUCCESS) {
		inode_header_decode(&h, r->data);
		res = check_header(o, &h);
	}
	free_request(r);
	if (res != SD_RES_SUCCESS || !ex->nr_objs) {
		open_finish(o, res);
		return;
	}
	if (h.store_policy) {
		nbd_hyper_load(ex->vid, open_hyper_done, o);
		return;
	}
	ex->index = xzalloc((size_t)ex->nr_objs * 4);
	r = req_new(SD_OP_READ_OBJ, ex->nr_objs * 4, NULL, open_index_done, o);
	obj_args(r, vid_to_vdi_oid(ex->vid), SD_INODE_INDEX_OFFSET, 0);
	queue_request(r);
}

static void open_lookup(struct open_ctx *o);

static void open_retry(struct timer *t)
{
	open_lookup(container_of(t, struct open_ctx, retry_timer));
}

static void open_lookup_done(struct request *r)
{
	struct open_ctx *o = r->caller;
	uint32_t res = r->rp.result, vid = r->rp.vdi.vdi_id;
	bool lock = r->rq.opcode == SD_OP_LOCK_VDI;

	free_request(r);
	/* our own last user of the VDI is still letting it go */
	if (res == SD_RES_VDI_LOCKED && release_pending(vid) &&
	    o->retries++ < NBD_LOCK_RETRIES) {
		o->retry_timer.fn = open_retry;
		timer_add(sys.loop, &o->retry_timer, NBD_LOCK_RETRY_MS);
		return;
	}
	if (res != SD_RES_SUCCESS) {
		open_finish(o, res);
		return;
	}
	o->ex = xzalloc(sizeof(*o->ex));
	list_add_tail(&o->ex->list, &exports);
	INIT_LIST_HEAD(&o->ex->reload_waiters);
	INIT_LIST_HEAD(&o->ex->ready);
	o->ex->ready_timer.fn = ready_run;
	memcpy(o->ex->name, o->name, sizeof(o->name));
	o->ex->vid = vid;
	o->ex->locked = lock;
	r = req_new(SD_OP_READ_OBJ, SD_INODE_HEADER_SIZE, NULL,
		    open_header_done, o);
	obj_args(r, vid_to_vdi_oid(vid), 0, 0);
	queue_request(r);
}

static void open_lookup(struct open_ctx *o)
{
	bool lock = o->a.lock && !is_snapshot_export(o);

	queue_request(lookup_req(o->name, o->tag, o->snapid, lock,
				 open_lookup_done, o));
}

void nbd_export_open(const struct nbd_open_args *a)
{
	struct open_ctx *o = xzalloc(sizeof(*o));

	o->a = *a;
	if (parse_export_name(o, a->export_name)) {
		a->done(NULL, SD_RES_INVALID_PARMS, a->arg);
		free(o);
		return;
	}
	open_lookup(o);
}

/* ---- re-reading a VDI that was snapshotted under us ---- */

static void reload_end(struct nbd_export *ex, uint32_t res)
{
	struct nbd_sub *sub, *n;

	ex->reloading = false;
	list_for_each_entry_safe(sub, n, &ex->reload_waiters, list) {
		list_del(&sub->list);
		if (res != SD_RES_SUCCESS)
			sub->error = sd_to_nbd_error(res);
		make_ready(ex, sub);
	}
}

struct reload_ctx {
	struct nbd_export *ex;
	uint32_t vid;
	bool locked;
};

static void reload_header_done(struct request *r)
{
	struct reload_ctx *c = r->caller;
	struct nbd_export *ex = c->ex;
	struct sd_inode_header h;
	uint32_t res = r->rp.result;

	if (res == SD_RES_SUCCESS) {
		inode_header_decode(&h, r->data);
		if (h.snap_ctime || !h.store_policy != !ex->hyper ||
		    h.vdi_size != ex->size ||
		    strncmp(h.name, ex->name, SD_MAX_VDI_LEN))
			res = SD_RES_NO_VDI;
	}
	free_request(r);
	if (res != SD_RES_SUCCESS) {
		if (c->locked)
			release_lock(c->vid);
	} else {
		sd_notice("NBD export %s: VDI %" PRIx32 " became a snapshot,"
			  " writing to %" PRIx32 " now", ex->name, ex->vid,
			  c->vid);
		if (ex->locked)
			release_lock(ex->vid);
		ex->vid = c->vid;
		ex->locked = c->locked;
	}
	free(c);
	reload_end(ex, res);
}

static void reload_lookup_done(struct request *r)
{
	struct reload_ctx *c = r->caller;
	struct nbd_export *ex = c->ex;
	uint32_t res = r->rp.result;

	c->vid = r->rp.vdi.vdi_id;
	c->locked = r->rq.opcode == SD_OP_LOCK_VDI;
	free_request(r);
	if (res == SD_RES_VDI_LOCKED && c->vid == ex->vid)
		res = SD_RES_SUCCESS;	/* still ours: nothing changed */
	if (res != SD_RES_SUCCESS || c->vid == ex->vid) {
		free(c);
		reload_end(ex, res);
		return;
	}
	r = req_new(SD_OP_READ_OBJ, SD_INODE_HEADER_SIZE, NULL,
		    reload_header_done, c);
	obj_args(r, vid_to_vdi_oid(c->vid), 0, 0);
	queue_request(r);
}

/* @sub holds its slot; it runs again once the VDI has been re-read */
static void reload_park(struct nbd_export *ex, struct nbd_sub *sub)
{
	struct reload_ctx *c;

	list_add_tail(&sub->list, &ex->reload_waiters);
	if (ex->reloading)
		return;
	ex->reloading = true;
	c = xzalloc(sizeof(*c));
	c->ex = ex;
	queue_request(lookup_req(ex->name, "", 0, ex->locked,
				 reload_lookup_done, c));
}

/* ---- pieces ---- */

static void sub_done(struct nbd_sub *sub, int err)
{
	struct nbd_io *io = sub->io;

	if (sub->locked)
		busy_release(io->ex, sub);
	io->nr_running--;
	if (err && !io->error)
		io->error = err;
	free(sub);
	io_pump(io);
}

static uint16_t write_flags(const struct nbd_io *io)
{
	/* FUA: durable before the reply; otherwise a volatile write cache */
	if (io->flags & NBD_CMD_FLAG_FUA)
		return SD_FLAG_CMD_WRITE;
	return SD_FLAG_CMD_WRITE | SD_FLAG_CMD_CACHE;
}

static void sub_read(struct nbd_sub *sub);

static void read_done(struct request *r)
{
	struct nbd_sub *sub = r->caller;
	uint32_t res = r->rp.result;

	req_put(r, true);
	/* unmapped meanwhile: read what the index names now */
	if (res == SD_RES_NO_OBJ &&
	    entry_get(sub->io->ex, sub->idx) != sub->vid &&
	    sub->retries++ < NBD_SUB_RETRIES) {
		sub_read(sub);
		return;
	}
	sub_done(sub, sd_to_nbd_error(res));
}

static void sub_read(struct nbd_sub *sub)
{
	struct nbd_export *ex = sub->io->ex;
	uint32_t vid = entry_get(ex, sub->idx);
	struct request *r;

	if (!vid) {
		memset(sub->data, 0, sub->len);
		sub_done(sub, 0);
		return;
	}
	sub->vid = vid;
	r = req_new(SD_OP_READ_OBJ, sub->len, sub->data, read_done, sub);
	obj_args(r, vid_to_data_oid(vid, sub->idx), sub->off, 0);
	queue_request(r);
}

/* an index update that landed in an inode frozen by a snapshot */
static bool raced_snapshot(struct nbd_export *ex, uint32_t vid)
{
	struct vdi_info *vi = vdi_get(vid, false);

	return !ex->readonly && vid == ex->vid && vi && vi->snapshot;
}

static void index_result(struct nbd_sub *sub, uint32_t res)
{
	struct nbd_export *ex = sub->io->ex;

	if (res != SD_RES_SUCCESS) {
		sd_err("NBD export %s: index entry %" PRIu32 ": %s", ex->name,
		       sub->idx, sd_strerror(res));
		sub_done(sub, sd_to_nbd_error(res));
		return;
	}
	/* (a hyper volume's map has it already) */
	if (!ex->hyper)
		ex->index[sub->idx] = sub->new_entry;
	if (raced_snapshot(ex, sub->vid) &&
	    sub->retries++ < NBD_SUB_RETRIES) {
		/* redo against the new current VDI */
		if (!sub->new_entry)
			ex->index[sub->idx] = sub->old_entry;
		reload_park(ex, sub);
		return;
	}
	sub_done(sub, 0);
}

static void index_done(struct request *r)
{
	struct nbd_sub *sub = r->caller;
	uint32_t res = r->rp.result;

	free_request(r);
	index_result(sub, res);
}

static void hyper_index_done(void *arg, uint32_t res)
{
	index_result(arg, res);
}

static void index_write(struct nbd_sub *sub, uint32_t entry)
{
	struct nbd_export *ex = sub->io->ex;
	struct request *r;

	sub->old_entry = entry_get(ex, sub->idx);
	sub->new_entry = entry;
	sub->vid = ex->vid;
	if (ex->hyper) {
		/* never 0: a B-tree entry is not cleared (no SUB_UNMAP) */
		nbd_hyper_set(ex->hyper, sub->idx, entry, hyper_index_done,
			      sub);
		return;
	}
	r = req_new(SD_OP_WRITE_OBJ, 4, NULL, index_done, sub);
	put_le32(r->data, entry);
	obj_args(r, vid_to_vdi_oid(ex->vid), inode_index_offset(sub->idx),
		 write_flags(sub->io));
	/*
	 * Not internal: an index update from our client, so the gateway
	 * drops the old entry's reference (objects.md §9.3).
	 */
	r->internal = false;
	queue_request(r);
}

static void write_done(struct request *r)
{
	struct nbd_sub *sub = r->caller;
	struct nbd_export *ex = sub->io->ex;
	uint32_t res = r->rp.result;

	req_put(r, !sub->cow);
	if (res == SD_RES_READONLY && !ex->readonly &&
	    sub->retries++ < NBD_SUB_RETRIES) {
		if (sub->vid == ex->vid)
			reload_park(ex, sub);
		else
			sub_locked(sub);	/* already re-read */
		return;
	}
	if (res != SD_RES_SUCCESS) {
		sd_err("NBD export %s: object %" PRIu32 ": %s", ex->name,
		       sub->idx, sd_strerror(res));
		sub_done(sub, sd_to_nbd_error(res));
		return;
	}
	if (!sub->create) {
		sub_done(sub, 0);
		return;
	}
	index_write(sub, ex->vid);
}

static void obj_write(struct nbd_sub *sub, uint32_t cur)
{
	struct nbd_export *ex = sub->io->ex;
	const uint8_t *src = sub->data ? sub->data : zero_buf;
	uint64_t oid = vid_to_data_oid(ex->vid, sub->idx);
	uint16_t flags = write_flags(sub->io);
	struct request *r;

	sub->vid = ex->vid;
	sub->create = cur != ex->vid;
	sub->cow = cur && cur != ex->vid;
	if (sub->cow) {
		/* the gateway replaces the data buffer: give it its own */
		r = req_new(SD_OP_CREATE_AND_WRITE_OBJ, sub->len, NULL,
			    write_done, sub);
		memcpy(r->data, src, sub->len);
		flags |= SD_FLAG_CMD_COW;
		r->rq.obj.cow_oid = vid_to_data_oid(cur, sub->idx);
	} else {
		r = req_new(cur ? SD_OP_WRITE_OBJ : SD_OP_CREATE_AND_WRITE_OBJ,
			    sub->len, (void *)src, write_done, sub);
	}
	r->rq.obj.oid = oid;
	r->rq.obj.offset = sub->off;
	r->rq.flags = flags;
	queue_request(r);
}

/* a changing piece that holds its object's slot */
static void sub_locked(struct nbd_sub *sub)
{
	struct nbd_export *ex = sub->io->ex;
	uint32_t cur;

	if (sub->error) {
		sub_done(sub, sub->error);
		return;
	}
	if (ex->reloading) {
		list_add_tail(&sub->list, &ex->reload_waiters);
		return;
	}
	cur = entry_get(ex, sub->idx);
	switch (sub->kind) {
	case SUB_UNMAP:
		if (!cur)
			sub_done(sub, 0);
		else
			index_write(sub, 0);
		return;
	case SUB_ZERO:
		if (!cur && !(sub->io->flags & NBD_CMD_FLAG_NO_HOLE)) {
			sub_done(sub, 0);
			return;
		}
		break;
	default:
		break;
	}
	obj_write(sub, cur);
}

static void sub_start(struct nbd_sub *sub)
{
	if (sub->kind == SUB_READ) {
		sub_read(sub);
		return;
	}
	if (busy_acquire(sub->io->ex, sub))
		sub_locked(sub);
}

/* ---- commands ---- */

/* the next piece of @io: within one object, and small for zeroing */
static void io_start_next(struct nbd_io *io)
{
	struct nbd_export *ex = io->ex;
	uint64_t obj_size = (uint64_t)1 << ex->shift;
	uint64_t end = io->off + io->len;
	uint32_t off = (uint32_t)(io->cursor & (obj_size - 1));
	uint64_t len = MIN(end - io->cursor, obj_size - off);
	bool whole = !off && (len == obj_size || io->cursor + len == ex->size);
	struct nbd_sub *sub;
	enum sub_kind kind;

	switch (io->type) {
	case NBD_CMD_READ:
		kind = SUB_READ;
		break;
	case NBD_CMD_WRITE:
		kind = SUB_WRITE;
		break;
	case NBD_CMD_TRIM:
		/* partial objects, and a hyper volume's: ignored */
		if (!whole || ex->hyper) {
			io->cursor += len;
			return;
		}
		kind = SUB_UNMAP;
		break;
	default:
		if (whole && !(io->flags & NBD_CMD_FLAG_NO_HOLE) &&
		    !ex->hyper) {
			kind = SUB_UNMAP;
		} else {
			kind = SUB_ZERO;
			len = MIN(len, NBD_ZERO_PIECE);
		}
		break;
	}
	sub = xzalloc(sizeof(*sub));
	INIT_LIST_HEAD(&sub->list);
	sub->io = io;
	sub->kind = kind;
	sub->idx = (uint32_t)(io->cursor >> ex->shift);
	sub->off = off;
	sub->len = (uint32_t)len;
	if (io->buf && kind != SUB_ZERO)
		sub->data = (uint8_t *)io->buf + (io->cursor - io->off);
	io->cursor += len;
	io->nr_running++;
	sub_start(sub);
}

static void io_pump(struct nbd_io *io)
{
	uint64_t end = io->off + io->len;

	if (io->in_pump)
		return;
	io->in_pump = true;
	while (io->nr_running < NBD_IO_WINDOW && io->cursor < end &&
	       !io->error && !io->cancelled)
		io_start_next(io);
	io->in_pump = false;
	if (!io->nr_running &&
	    (io->cursor >= end || io->error || io->cancelled))
		io->done(io);	/* @io may be gone now */
}

static void flush_done(struct request *r)
{
	struct nbd_io *io = r->caller;

	io->error = sd_to_nbd_error(r->rp.result);
	free_request(r);
	io->done(io);
}

/* FLUSH_VDI: every cached write of this node's clients becomes durable */
static void io_flush(struct nbd_io *io)
{
	struct request *r;

	if (io->ex->readonly) {
		io->done(io);
		return;
	}
	r = req_new(SD_OP_FLUSH_VDI, 0, NULL, flush_done, io);
	r->rq.obj.oid = vid_to_vdi_oid(io->ex->vid);
	queue_request(r);
}

void nbd_io_submit(struct nbd_io *io)
{
	io->cursor = io->off;
	io->nr_running = 0;
	io->error = 0;
	io->in_pump = false;
	if (io->type == NBD_CMD_FLUSH) {
		io_flush(io);
		return;
	}
	io_pump(io);
}

/* ---- NBD_OPT_LIST: names of the current VDIs ---- */

struct list_ctx {
	uint32_t *vids;
	size_t nr, next;
	void (*entry)(const char *name, void *arg);
	void (*done)(void *arg);
	void *arg;
};

static void add_current(uint32_t vid, struct vdi_info *vi, void *arg)
{
	struct list_ctx *l = arg;

	if (vi->snapshot || vi->deleted || vi->recycled ||
	    l->nr == NBD_LIST_MAX)
		return;
	l->vids[l->nr++] = vid;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void list_next(struct list_ctx *l);

static void list_name_done(struct request *r)
{
	struct list_ctx *l = r->caller;
	char *name = r->data;

	name[SD_MAX_VDI_LEN - 1] = 0;
	if (r->rp.result == SD_RES_SUCCESS && name[0])
		l->entry(name, l->arg);
	free_request(r);
	list_next(l);
}

static void list_next(struct list_ctx *l)
{
	struct request *r;

	if (l->next == l->nr) {
		l->done(l->arg);
		free(l->vids);
		free(l);
		return;
	}
	r = req_new(SD_OP_READ_OBJ, SD_MAX_VDI_LEN, NULL, list_name_done, l);
	obj_args(r, vid_to_vdi_oid(l->vids[l->next++]), 0, 0);
	queue_request(r);
}

void nbd_list_vdis(void (*entry)(const char *name, void *arg),
		   void (*done)(void *arg), void *arg)
{
	struct list_ctx *l = xzalloc(sizeof(*l));

	l->vids = xmalloc(NBD_LIST_MAX * sizeof(*l->vids));
	l->entry = entry;
	l->done = done;
	l->arg = arg;
	vdi_for_each(add_current, l);
	qsort(l->vids, l->nr, sizeof(*l->vids), cmp_u32);
	list_next(l);
}
