// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The process-group protocol shared by the corosync and zookeeper drivers
 * (procgroup.h).  The transport delivers configuration changes and
 * messages in one total order; the message format is Kelpie's own (a
 * 112-byte header, see msg_parse()), not the original sheep's.
 *
 * Replicated state.  From that order every process derives the same state:
 * the live processes of the group in the order they joined it, each with a
 * status (pending joiner, member, refused, gone after a LEAVE message), and
 * the queue of block requests.  Every event takes effect when it is
 * delivered; nothing is held back.
 *
 * Joining.  A process joins the group, then multicasts JOIN with its sd_node
 * and the opaque join payload.  The decider -- the first member in node
 * order, or, when there are no members, the oldest pending process for
 * itself -- calls handlers->join and multicasts ACCEPT (the decided payload
 * plus a snapshot of the state at the decision) or REFUSE.  A decider has at
 * most one decision in flight and takes the next one only after its own
 * decision came back, so no other membership change can be accepted between
 * a decision and its delivery.  An ACCEPT counts only if the members listed
 * in its snapshot are still exactly the members when it is delivered and
 * the joiner is still a pending process; otherwise it is stale (a member
 * left meanwhile), or a duplicate, and the decider decides again.  A
 * decider that never saw a pending process's JOIN (it arrived earlier)
 * asks for it again with RESEND.
 *
 * Joins decided together.  When several joins are pending, the decider
 * judges them in joining order, each against the members and the joiners
 * before it, and multicasts one ACCEPT_SET (valid under the same rule,
 * for every joiner in it); every process takes them all as members, then
 * delivers one accept each, all but the last marked "more", so that the
 * daemon makes one epoch for them (issue 38: ten joins made ten epochs,
 * each a recovery).  Only when every member and pending process said in
 * its JOIN that it reads ACCEPT_SET (CAP_ACCEPT_SET), and the daemon's
 * joins_together says that judging one join changes nothing the next is
 * judged on (a running cluster); else one at a time.
 *
 * A new process does not know the state from before its arrival: the
 * processes already in the group ("older" ones) have an unknown status.  It
 * becomes "synced":
 *   - at once, when nobody was older (a new cluster);
 *   - by the snapshot of a valid ACCEPT of itself or of a process younger
 *     than itself.  Such a decision was taken after our arrival, so we saw
 *     every event between the decision and the ACCEPT and can judge its
 *     validity exactly like the members: every listed member must still be
 *     alive and not have sent LEAVE.  Block requests we saw after the
 *     decision are merged into the snapshot's queue by (process, sequence);
 *   - when every older process has left the group.  Joins are decided one
 *     at a time by members, and an ACCEPT of a younger process would have
 *     synced us, so at that point there are no members at all.
 * Callbacks start with our own ACCEPT.
 *
 * Blocks.  BLOCK(seq) from a member is appended to the queue; the process at
 * the head gets handlers->block; its UNBLOCK(seq, msg) removes the entry
 * and is delivered like a notify.  A member that leaves loses its entries.
 *
 * Failures.  A dead process's pending join is dropped, or as a member it
 * leaves and loses its blocks.  A node that sees a majority of the group
 * lost with their hosts in one configuration change (NODEDOWN), or that is
 * merged into a larger partition (NODEUP), stops the daemon (split-brain
 * guard, cluster.md §6.1); the transports add their own guards.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "driver.h"
#include "event.h"
#include "hash.h"
#include "list.h"
#include "procgroup.h"
#include "proto.h"
#include "util.h"

/* where events go: the daemon's handlers, given at init */
static const struct cluster_handlers *handlers;

#define MSG_MAGIC		UINT32_C(0x4750434b)	/* "KCPG" */
#define MSG_VERSION		1
#define NODE_WIRE		sizeof(struct sd_node)
#define MSG_HDR_SIZE		(32 + NODE_WIRE)
#define SNAP_HDR_SIZE		8
#define PROC_WIRE		(16 + NODE_WIRE)
#define BLOCK_WIRE		16
#define MAX_PROCS		1024
#define MAX_BLOCKS		4096
#define MAX_AUX		(SNAP_HDR_SIZE + MAX_PROCS * PROC_WIRE + \
			 MAX_BLOCKS * BLOCK_WIRE)
#define MAX_PAYLOAD		SD_MAX_EVENT_BUF_SIZE

#define RETRY_MS		20	/* first retry on CS_ERR_TRY_AGAIN */
#define RETRY_MAX_MS		1000
#define TICK_MS			250
#define RESEND_MS		1000	/* between requests for a JOIN */
#define JOIN_RESEND_MS		200	/* between our JOIN resends */
#define SET_MAX			32	/* joiners one ACCEPT_SET takes at most */
/*
 * Joins that arrive together (a rack powered on, a burst of starts) reach
 * the decider over some hundreds of milliseconds: it decides once no new
 * JOIN came for JOIN_SETTLE_MS, or JOIN_SETTLE_MAX_MS after the oldest.
 */
#define JOIN_SETTLE_MS		200
#define JOIN_SETTLE_MAX_MS	1000
#define SET_ENTRY_HDR		(16 + NODE_WIRE)

/*
 * What a process understands beyond version 1's messages, sent in its
 * JOIN's seq and kept in the snapshot (0 from releases before them): a
 * decider sends ACCEPT_SET only when every member and every pending
 * process reads one: an older process would ignore it and lose step.
 */
#define CAP_ACCEPT_SET		0x1u
/* a test build plays a release before them with -DMY_CAPS=0 */
#ifndef MY_CAPS
#define MY_CAPS			CAP_ACCEPT_SET
#endif

enum msg_type {
	M_JOIN = 1,	/* sender asks to join: node, payload */
	M_ACCEPT,	/* subject accepted: node, snapshot, payload */
	M_REFUSE,	/* subject refused */
	M_LEAVE,	/* sender leaves */
	M_NOTIFY,	/* payload for handlers->notify */
	M_BLOCK,	/* sender queues block request seq */
	M_UNBLOCK,	/* sender releases block seq: payload as a notify */
	M_RESEND,	/* subject: please send your JOIN again */
	M_ACCEPT_SET,	/* several accepted: snapshot, joiners' entries */
	M_MAX,
};

enum proc_state {
	PS_UNKNOWN,	/* older than us, not synced yet */
	PS_PENDING,	/* in the group, not (yet) accepted */
	PS_MEMBER,
	PS_REFUSED,
	PS_GONE,	/* sent LEAVE, or a rejoined partition */
	PS_MAX,
};

struct msg {
	uint16_t type;
	uint32_t aux_len;
	uint32_t len;
	uint64_t seq;
	struct pg_id subject;
	struct sd_node node;
	const uint8_t *aux;
	const uint8_t *payload;
};

struct snapshot {
	uint32_t nr_procs;
	uint32_t nr_blocks;
	const uint8_t *procs;
	const uint8_t *blocks;
};

struct proc {
	struct pg_id id;
	uint8_t state;
	bool left_msg;		/* it sent LEAVE */
	bool refused_seen;	/* REFUSE seen while its status was unknown */
	struct sd_node node;
	uint8_t *join;		/* payload of its latest JOIN */
	uint32_t join_len;
	uint32_t caps;		/* CAP_*: from its JOIN or a snapshot */
	uint64_t join_at;	/* when its latest JOIN came (now_msec) */
	uint64_t arrived_at;	/* when it came into the group */
	uint64_t resend_at;
};

struct blk {
	struct pg_id id;
	uint64_t seq;
};

/* a delivered configuration change or message, processed after dispatch */
struct pg_event {
	struct list_head list;
	bool confchg;
	struct pg_id from;
	size_t len;
	struct pg_addr *members, *left, *joined;
	size_t nr_members, nr_left, nr_joined;
	uint8_t data[];
};

struct out_msg {
	struct list_head list;
	size_t len;
	uint8_t buf[];
};

static struct pg_state {
	bool inited;
	bool join_called;
	bool tr_joined;		/* the transport is in the group */
	bool started;		/* our first configuration change seen */
	bool synced;
	bool joined;		/* own ACCEPT seen: callbacks delivered */
	bool leave_called;
	bool dispatching;
	bool deciding;		/* our decision on decide_for in flight */
	struct pg_id decide_for;

	const struct pg_transport *tr;
	char where[128];	/* "corosync group sheepdog", for the log */
	struct event_loop *loop;
	struct timer send_timer;
	struct timer tick_timer;
	uint64_t backoff;

	struct pg_id me;
	struct sd_node my_node;
	uint8_t *my_join;
	size_t my_join_len;
	uint64_t join_sent_at;

	struct proc **procs;	/* live processes in joining order */
	size_t nr_procs, cap_procs;
	struct blk *blks;	/* block queue; [0] holds the block */
	size_t nr_blks, cap_blks;
	struct blk *released;	/* unsynced: UNBLOCKs of unseen BLOCKs */
	size_t nr_released, cap_released;
	uint64_t block_seq;
	uint64_t granted_seq;	/* our granted block, 0 if none */
	bool unblock_sent;

	struct list_head events;
	struct list_head sendq;
} st = {
	.events = LIST_HEAD_INIT(st.events),
	.sendq = LIST_HEAD_INIT(st.sendq),
};

/*
 * sheep's orderly exit (pid file removal); weak, so that test programs
 * built from this file without sheep.c exit directly
 */
void sheep_exit(int code) __attribute__((weak));

void pg_die(void)
{
	if (sheep_exit)
		sheep_exit(1);
	exit(1);
}

/* ------------------------------------------------------------------ */
/* helpers */

static const char *nstr(const struct sd_node *n)
{
	static char buf[2][64];
	static int i;

	i ^= 1;
	return node_to_str(n, buf[i], sizeof(buf[i]));
}

static bool id_eq(struct pg_id a, struct pg_id b)
{
	return a.nodeid == b.nodeid && a.pid == b.pid;
}

static int id_cmp(struct pg_id a, struct pg_id b)
{
	if (a.nodeid != b.nodeid)
		return a.nodeid < b.nodeid ? -1 : 1;
	if (a.pid != b.pid)
		return a.pid < b.pid ? -1 : 1;
	return 0;
}

static bool is_me(struct pg_id id)
{
	return id_eq(id, st.me);
}

static struct pg_id addr_id(const struct pg_addr *a)
{
	return a->id;
}

static void *grow(void *arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return arr;
	*cap = MAX(need, *cap * 2 + 8);
	return xrealloc(arr, *cap * size);
}

static uint8_t *dup_buf(const void *src, size_t len)
{
	uint8_t *p = xmalloc(MAX(len, (size_t)1));

	if (len)
		memcpy(p, src, len);
	return p;
}

/* ------------------------------------------------------------------ */
/* processes */

/* @v may have holes while it is being reordered */
static long find_in(struct proc *const *v, size_t nr, struct pg_id id)
{
	for (size_t i = 0; i < nr; i++)
		if (v[i] && id_eq(v[i]->id, id))
			return (long)i;
	return -1;
}

static long proc_index(struct pg_id id)
{
	return find_in(st.procs, st.nr_procs, id);
}

static struct proc *proc_find(struct pg_id id)
{
	long i = proc_index(id);

	return i < 0 ? NULL : st.procs[i];
}

static struct proc *proc_add(struct pg_id id, uint8_t state)
{
	struct proc *p = xzalloc(sizeof(*p));

	p->id = id;
	p->state = state;
	p->arrived_at = now_msec();
	st.procs = grow(st.procs, &st.cap_procs, st.nr_procs + 1,
			sizeof(*st.procs));
	st.procs[st.nr_procs++] = p;
	return p;
}

static void proc_drop_join(struct proc *p)
{
	free(p->join);
	p->join = NULL;
	p->join_len = 0;
}

static void proc_remove(size_t i)
{
	struct proc *p = st.procs[i];

	memmove(&st.procs[i], &st.procs[i + 1],
		(st.nr_procs - i - 1) * sizeof(*st.procs));
	st.nr_procs--;
	proc_drop_join(p);
	free(p);
}

static size_t nr_members(void)
{
	size_t n = 0;

	for (size_t i = 0; i < st.nr_procs; i++)
		n += st.procs[i]->state == PS_MEMBER;
	return n;
}

static bool nid_is_member(const struct sd_node *node)
{
	for (size_t i = 0; i < st.nr_procs; i++)
		if (st.procs[i]->state == PS_MEMBER &&
		    node_id_eq(&st.procs[i]->node.nid, &node->nid))
			return true;
	return false;
}

static bool proc_before(const struct proc *a, const struct proc *b)
{
	int r = node_cmp(&a->node, &b->node);

	return r ? r < 0 : id_cmp(a->id, b->id) < 0;
}

/* the first member in node order */
static struct proc *decider(void)
{
	struct proc *d = NULL;

	for (size_t i = 0; i < st.nr_procs; i++) {
		struct proc *p = st.procs[i];

		if (p->state == PS_MEMBER && (!d || proc_before(p, d)))
			d = p;
	}
	return d;
}

/* the members' nodes in node order, for a callback */
static struct sd_node *member_nodes(size_t *nr)
{
	struct sd_node *n = xmalloc((st.nr_procs + 1) * sizeof(*n));
	size_t k = 0;

	for (size_t i = 0; i < st.nr_procs; i++)
		if (st.procs[i]->state == PS_MEMBER)
			n[k++] = st.procs[i]->node;
	nodes_sort(n, k);
	*nr = k;
	return n;
}

/* ------------------------------------------------------------------ */
/* the block queue */

static long blk_index(const struct blk *v, size_t nr, struct pg_id id,
		      uint64_t seq)
{
	for (size_t i = 0; i < nr; i++)
		if (id_eq(v[i].id, id) && v[i].seq == seq)
			return (long)i;
	return -1;
}

static void blk_append(struct pg_id id, uint64_t seq)
{
	if (blk_index(st.blks, st.nr_blks, id, seq) >= 0)
		return;
	st.blks = grow(st.blks, &st.cap_blks, st.nr_blks + 1,
		       sizeof(*st.blks));
	st.blks[st.nr_blks++] = (struct blk){ .id = id, .seq = seq };
}

static void blk_del(size_t i)
{
	memmove(&st.blks[i], &st.blks[i + 1],
		(st.nr_blks - i - 1) * sizeof(*st.blks));
	st.nr_blks--;
}

static void blks_drop_proc(struct pg_id id)
{
	size_t j = 0;

	for (size_t i = 0; i < st.nr_blks; i++)
		if (!id_eq(st.blks[i].id, id))
			st.blks[j++] = st.blks[i];
	st.nr_blks = j;
	if (is_me(id)) {
		st.granted_seq = 0;
		st.unblock_sent = false;
	}
}

static void released_add(struct pg_id id, uint64_t seq)
{
	st.released = grow(st.released, &st.cap_released,
			   st.nr_released + 1, sizeof(*st.released));
	st.released[st.nr_released++] = (struct blk){ .id = id, .seq = seq };
}

/* ------------------------------------------------------------------ */
/* the wire format (little-endian)
 *
 *   header  0 u32 magic, 4 u16 version, 6 u16 type, 8 u32 aux_len,
 *          12 u32 payload length, 16 u64 seq, 24 u32 subject nodeid,
 *          28 u32 subject pid, 32 sd_node (80 bytes)
 *   aux     ACCEPT and ACCEPT_SET only: the snapshot
 *           u32 nr_procs, u32 nr_blocks,
 *           nr_procs x { u32 nodeid, u32 pid, u32 state, u32 caps, sd_node },
 *           nr_blocks x { u32 nodeid, u32 pid, u64 seq }
 *   payload ACCEPT_SET: u32 n (2..SET_MAX), u32 0, then n joiners in the
 *           order they joined the group, each
 *           { u32 nodeid, u32 pid, u32 len, u32 0, sd_node, len bytes };
 *           the header's subject and node are the first joiner's
 *   JOIN's seq is the sender's capabilities (CAP_*)
 */

static int msg_parse(const uint8_t *buf, size_t len, struct msg *m)
{
	if (len < MSG_HDR_SIZE || get_le32(buf) != MSG_MAGIC ||
	    get_le16(buf + 4) != MSG_VERSION)
		return -1;
	m->type = get_le16(buf + 6);
	m->aux_len = get_le32(buf + 8);
	m->len = get_le32(buf + 12);
	if (!m->type || m->type >= M_MAX || m->aux_len > MAX_AUX ||
	    m->len > MAX_PAYLOAD ||
	    MSG_HDR_SIZE + (size_t)m->aux_len + m->len != len)
		return -1;
	m->seq = get_le64(buf + 16);
	m->subject.nodeid = get_le32(buf + 24);
	m->subject.pid = get_le32(buf + 28);
	sd_node_decode(&m->node, buf + 32);
	m->aux = buf + MSG_HDR_SIZE;
	m->payload = m->aux + m->aux_len;
	return 0;
}

static int snap_parse(const struct msg *m, struct snapshot *s)
{
	if (m->aux_len < SNAP_HDR_SIZE)
		return -1;
	s->nr_procs = get_le32(m->aux);
	s->nr_blocks = get_le32(m->aux + 4);
	if (s->nr_procs > MAX_PROCS || s->nr_blocks > MAX_BLOCKS ||
	    m->aux_len != SNAP_HDR_SIZE + s->nr_procs * PROC_WIRE +
			  s->nr_blocks * BLOCK_WIRE)
		return -1;
	s->procs = m->aux + SNAP_HDR_SIZE;
	s->blocks = s->procs + s->nr_procs * PROC_WIRE;
	for (uint32_t i = 0; i < s->nr_procs; i++) {
		uint32_t state = get_le32(s->procs + i * PROC_WIRE + 8);

		if (state == PS_UNKNOWN || state >= PS_MAX)
			return -1;
	}
	return 0;
}

static void snap_proc(const struct snapshot *s, uint32_t i, struct pg_id *id,
		      uint8_t *state, struct sd_node *node)
{
	const uint8_t *p = s->procs + (size_t)i * PROC_WIRE;

	id->nodeid = get_le32(p);
	id->pid = get_le32(p + 4);
	*state = (uint8_t)get_le32(p + 8);
	if (node)
		sd_node_decode(node, p + 16);
}

static uint32_t snap_caps(const struct snapshot *s, uint32_t i)
{
	return get_le32(s->procs + (size_t)i * PROC_WIRE + 12);
}

static struct blk snap_blk(const struct snapshot *s, uint32_t i)
{
	const uint8_t *p = s->blocks + (size_t)i * BLOCK_WIRE;

	return (struct blk){
		.id = { .nodeid = get_le32(p), .pid = get_le32(p + 4) },
		.seq = get_le64(p + 8),
	};
}

static size_t snap_size(void)
{
	if (st.nr_procs > MAX_PROCS || st.nr_blks > MAX_BLOCKS)
		return 0;
	return SNAP_HDR_SIZE + st.nr_procs * PROC_WIRE +
	       st.nr_blks * BLOCK_WIRE;
}

static void snap_write(uint8_t *p)
{
	put_le32(p, (uint32_t)st.nr_procs);
	put_le32(p + 4, (uint32_t)st.nr_blks);
	p += SNAP_HDR_SIZE;
	for (size_t i = 0; i < st.nr_procs; i++, p += PROC_WIRE) {
		const struct proc *q = st.procs[i];

		put_le32(p, q->id.nodeid);
		put_le32(p + 4, q->id.pid);
		put_le32(p + 8, q->state);
		put_le32(p + 12, q->caps);
		sd_node_encode(&q->node, p + 16);
	}
	for (size_t i = 0; i < st.nr_blks; i++, p += BLOCK_WIRE) {
		put_le32(p, st.blks[i].id.nodeid);
		put_le32(p + 4, st.blks[i].id.pid);
		put_le64(p + 8, st.blks[i].seq);
	}
}

/* ------------------------------------------------------------------ */
/* sending: one FIFO, retried from a timer when the transport is busy */

static struct out_msg *msg_new(uint16_t type, struct pg_id subject,
			       uint64_t seq, const struct sd_node *node,
			       size_t aux_len, const void *payload, size_t len)
{
	struct out_msg *o = xzalloc(sizeof(*o) + MSG_HDR_SIZE + aux_len + len);
	uint8_t *b = o->buf;

	o->len = MSG_HDR_SIZE + aux_len + len;
	put_le32(b, MSG_MAGIC);
	put_le16(b + 4, MSG_VERSION);
	put_le16(b + 6, type);
	put_le32(b + 8, (uint32_t)aux_len);
	put_le32(b + 12, (uint32_t)len);
	put_le64(b + 16, seq);
	put_le32(b + 24, subject.nodeid);
	put_le32(b + 28, subject.pid);
	sd_node_encode(node ? node : &st.my_node, b + 32);
	if (len)
		memcpy(b + MSG_HDR_SIZE + aux_len, payload, len);
	return o;
}

static void flush(void)
{
	while (st.tr_joined && !list_empty(&st.sendq)) {
		struct out_msg *o = list_first_entry(&st.sendq, struct out_msg,
						     list);
		int r = st.tr->send(o->buf, o->len);

		if (r > 0) {
			st.backoff = st.backoff ?
				     MIN(st.backoff * 2, RETRY_MAX_MS) :
				     RETRY_MS;
			timer_add(st.loop, &st.send_timer, st.backoff);
			return;
		}
		if (r < 0)
			pg_fatal("cannot send to the %s", st.tr->name);
		st.backoff = 0;
		list_del(&o->list);
		free(o);
	}
}

static void send_out(struct out_msg *o)
{
	list_add_tail(&o->list, &st.sendq);
	if (!st.send_timer.armed)
		flush();
}

static void send_simple(uint16_t type, struct pg_id subject, uint64_t seq,
			const void *payload, size_t len)
{
	send_out(msg_new(type, subject, seq, NULL, 0, payload, len));
}

static void send_join(void)
{
	st.join_sent_at = now_msec();
	send_simple(M_JOIN, st.me, MY_CAPS, st.my_join, st.my_join_len);
}

/* ACCEPT or ACCEPT_SET, with a snapshot of the state at the decision */
static int send_accept(uint16_t type, struct pg_id id,
		       const struct sd_node *node, const void *payload,
		       size_t len)
{
	size_t aux = snap_size();
	struct out_msg *o;

	if (!aux) {
		sd_err("too many processes (%zu) or blocks (%zu) to accept %s",
		       st.nr_procs, st.nr_blks, nstr(node));
		return -1;
	}
	o = msg_new(type, id, 0, node, aux, payload, len);
	snap_write(o->buf + MSG_HDR_SIZE);
	send_out(o);
	return 0;
}

static void send_timer_fn(struct timer *t)
{
	flush();
}

/* ------------------------------------------------------------------ */
/* becoming synced */

static bool released(struct pg_id id, uint64_t seq)
{
	return blk_index(st.released, st.nr_released, id, seq) >= 0;
}

static void sync_done(const char *how)
{
	free(st.released);
	st.released = NULL;
	st.nr_released = st.cap_released = 0;
	st.synced = true;
	sd_info("cluster state known (%s): %zu process(es), %zu member(s)",
		how, st.nr_procs, nr_members());
}

/* every older process has left: there are no members */
static void sync_empty(void)
{
	for (size_t i = 0; i < st.nr_procs; i++) {
		struct proc *p = st.procs[i];

		if (p->left_msg)
			p->state = PS_GONE;
		else if (p->refused_seen && p->state == PS_PENDING)
			p->state = PS_REFUSED;
	}
	st.nr_blks = 0;
	sync_done("no older process left");
}

static void sync_procs(const struct snapshot *s)
{
	struct proc **order = xmalloc((st.nr_procs + 1) * sizeof(*order));
	size_t k = 0;

	for (uint32_t i = 0; i < s->nr_procs; i++) {
		struct sd_node node;
		struct pg_id id;
		uint8_t state;
		long j;

		snap_proc(s, i, &id, &state, &node);
		j = find_in(st.procs, st.nr_procs, id);
		if (j < 0)
			continue;
		order[k] = st.procs[j];
		st.procs[j] = NULL;
		order[k]->caps |= snap_caps(s, i);
		if (state == PS_MEMBER)
			order[k]->node = node;
		if (order[k]->left_msg)
			state = PS_GONE;
		else if (order[k]->refused_seen && state == PS_PENDING)
			state = PS_REFUSED;
		order[k++]->state = state;
	}
	/* then those that arrived after the decision, in arrival order */
	for (size_t i = 0; i < st.nr_procs; i++) {
		if (!st.procs[i])
			continue;
		if (st.procs[i]->state == PS_UNKNOWN)
			st.procs[i]->state = PS_PENDING;
		order[k++] = st.procs[i];
	}
	free(st.procs);
	st.procs = order;
	st.cap_procs = st.nr_procs + 1;
}

static bool blk_member(const struct blk *b)
{
	struct proc *p = proc_find(b->id);

	return p && p->state == PS_MEMBER;
}

/* snapshot's queue, then the requests we saw after the decision */
static void sync_blocks(const struct snapshot *s)
{
	struct blk *seen = st.blks;
	size_t nr_seen = st.nr_blks;

	st.blks = NULL;
	st.nr_blks = st.cap_blks = 0;
	for (uint32_t i = 0; i < s->nr_blocks; i++) {
		struct blk b = snap_blk(s, i);

		if (blk_member(&b) && !released(b.id, b.seq))
			blk_append(b.id, b.seq);
	}
	for (size_t i = 0; i < nr_seen; i++)
		if (blk_member(&seen[i]))
			blk_append(seen[i].id, seen[i].seq);
	free(seen);
}

static void sync_snapshot(const struct snapshot *s)
{
	sync_procs(s);
	sync_blocks(s);
	sync_done("from an accept");
}

/* ------------------------------------------------------------------ */
/* configuration changes */

static int addr_cmp(const void *a, const void *b)
{
	return id_cmp(addr_id(a), addr_id(b));
}

static bool in_list(const struct pg_addr *l, size_t nr, struct pg_id id)
{
	for (size_t i = 0; i < nr; i++)
		if (id_eq(addr_id(&l[i]), id))
			return true;
	return false;
}

static bool any_unknown(void)
{
	for (size_t i = 0; i < st.nr_procs; i++)
		if (st.procs[i]->state == PS_UNKNOWN)
			return true;
	return false;
}

/* our own arrival: everybody there before us has an unknown status */
static void first_confchg(const struct pg_event *e)
{
	long mine = -1;

	for (size_t i = 0; i < e->nr_joined; i++)
		if (is_me(addr_id(&e->joined[i])))
			mine = (long)i;
	if (mine < 0)
		return;
	for (size_t i = 0; i < e->nr_members; i++)
		if (!in_list(e->joined, e->nr_joined, addr_id(&e->members[i])))
			proc_add(addr_id(&e->members[i]), PS_UNKNOWN);
	for (size_t i = 0; i < e->nr_joined; i++)
		proc_add(addr_id(&e->joined[i]),
			 (long)i < mine ? PS_UNKNOWN : PS_PENDING);
	st.started = true;
	sd_info("in %s as %u/%u with %zu other process(es)",
		st.where, st.me.nodeid, st.me.pid,
		st.nr_procs - 1);
	if (!any_unknown())
		sync_done("first in the group");
	send_join();
}

/* §6.1: losing a majority at once means we are in a minority partition */
static void check_split(const struct pg_event *e)
{
	size_t lost = 0;

	for (size_t i = 0; i < e->nr_left; i++)
		lost += e->left[i].reason == PG_REASON_NODEDOWN;
	if (lost && lost >= st.nr_procs / 2 + 1)
		pg_fatal("%zu of %zu processes of the group were lost with "
			 "their nodes: this node is in a minority partition",
			 lost, st.nr_procs);
}

/*
 * Processes that were in another partition came back (NODEUP): the two
 * sides' states diverged.  The side with fewer processes (on a tie, the one
 * without the lowest nodeid) stops; the other ignores the returners.
 */
static void check_merge(const struct pg_event *e)
{
	size_t theirs = 0, ours;
	uint32_t min_theirs = UINT32_MAX, min_ours = UINT32_MAX;

	for (size_t i = 0; i < e->nr_joined; i++) {
		if (e->joined[i].reason != PG_REASON_NODEUP)
			continue;
		theirs++;
		min_theirs = MIN(min_theirs, e->joined[i].id.nodeid);
	}
	if (!theirs)
		return;
	for (size_t i = 0; i < e->nr_members; i++)
		if (!in_list(e->joined, e->nr_joined, addr_id(&e->members[i])))
			min_ours = MIN(min_ours, e->members[i].id.nodeid);
	ours = e->nr_members - theirs;
	if (ours < theirs || (ours == theirs && min_ours > min_theirs))
		pg_fatal("merged with a larger partition (%zu processes, ours "
			 "%zu): our view of the cluster is obsolete", theirs,
			 ours);
	sd_warn("%zu process(es) came back from another partition; they are "
		"ignored until they leave", theirs);
}

/* drop a process the transport lost; true (and *@node) if it was a member */
static bool proc_left(struct pg_id id, struct sd_node *node)
{
	long i = proc_index(id);
	struct proc *p;
	bool member;

	if (i < 0)
		return false;
	sd_assert(!is_me(id));	/* procs_left stopped for that */
	p = st.procs[i];
	member = st.synced && p->state == PS_MEMBER;
	*node = p->node;
	if (st.joined && st.synced && p->state == PS_PENDING)
		sd_info("join of %u/%u dropped: it left the group", id.nodeid,
			id.pid);
	blks_drop_proc(id);
	proc_remove((size_t)i);
	if (member)
		sd_info("%s left, %zu members", nstr(node), nr_members());
	return member;
}

/*
 * The members one configuration change took away leave together: one
 * callback, so one epoch for a host or a rack lost at once instead of one
 * per member (issue 38).  Every process sees the same change, so every
 * process makes the same epochs.
 */
static void procs_left(const struct pg_addr *l, size_t nr_left)
{
	struct sd_node *gone, *nodes;
	size_t nr_gone = 0, nr;

	for (size_t i = 0; i < nr_left; i++)
		if (is_me(addr_id(&l[i])))
			pg_fatal("the %s dropped this process", st.tr->name);
	gone = xzalloc((nr_left + 1) * sizeof(*gone));
	for (size_t i = 0; i < nr_left; i++)
		if (proc_left(addr_id(&l[i]), &gone[nr_gone]))
			nr_gone++;
	if (nr_gone && st.joined) {
		nodes_sort(gone, nr_gone);
		nodes = member_nodes(&nr);
		handlers->leave(gone, nr_gone, nodes, nr);
		free(nodes);
	}
	free(gone);
}

static void on_confchg(const struct pg_event *e)
{
	struct pg_addr *l = e->left, *j = e->joined;

	/* the same order everywhere, whatever order the transport reports */
	qsort(l, e->nr_left, sizeof(*l), addr_cmp);
	qsort(j, e->nr_joined, sizeof(*j), addr_cmp);
	if (!st.started) {
		first_confchg(e);
		return;
	}
	check_split(e);
	check_merge(e);
	procs_left(l, e->nr_left);
	for (size_t i = 0; i < e->nr_joined; i++)
		if (!proc_find(addr_id(&j[i])))
			proc_add(addr_id(&j[i]),
				 j[i].reason == PG_REASON_NODEUP ? PS_GONE :
				 PS_PENDING);
	if (!st.synced && !any_unknown())
		sync_empty();
}

/* ------------------------------------------------------------------ */
/* messages */

static void on_join(struct proc *p, const struct msg *m)
{
	if (p->state != PS_PENDING && p->state != PS_UNKNOWN)
		return;
	proc_drop_join(p);
	p->join = dup_buf(m->payload, m->len);
	p->join_len = m->len;
	p->node = m->node;
	p->caps = (uint32_t)m->seq;
	p->join_at = now_msec();
	if (st.joined && p->state == PS_PENDING)
		sd_info("%s asks to join", nstr(&p->node));
}

/* the members listed in @s are exactly ours */
static bool snap_members_ours(const struct snapshot *s)
{
	size_t n = 0;

	for (uint32_t i = 0; i < s->nr_procs; i++) {
		struct proc *q;
		struct pg_id id;
		uint8_t state;

		snap_proc(s, i, &id, &state, NULL);
		if (state != PS_MEMBER)
			continue;
		q = proc_find(id);
		if (!q || q->state != PS_MEMBER)
			return false;
		n++;
	}
	return n == nr_members();
}

/* members: the snapshot's members are exactly ours */
static bool accept_valid_synced(const struct proc *j, const struct msg *m,
				const struct snapshot *s)
{
	if (j->state != PS_PENDING || nid_is_member(&m->node))
		return false;
	return snap_members_ours(s);
}

/* no member listed in @s has gone, and none is @joiner's node */
static bool snap_members_alive(const struct snapshot *s,
			       const struct sd_node *joiner)
{
	for (uint32_t i = 0; i < s->nr_procs; i++) {
		struct sd_node node;
		struct proc *q;
		struct pg_id id;
		uint8_t state;

		snap_proc(s, i, &id, &state, &node);
		if (state != PS_MEMBER)
			continue;
		q = proc_find(id);
		if (!q || q->left_msg || q->state == PS_GONE ||
		    q->state == PS_REFUSED)
			return false;
		if (node_id_eq(&node.nid, &joiner->nid))
			return false;
	}
	return true;
}

/*
 * Not synced: only a decision taken after our arrival (on us or a younger
 * process) can be judged; it is stale iff a listed member has gone since.
 */
static bool accept_valid_unsynced(const struct proc *j, const struct msg *m,
				  const struct snapshot *s)
{
	return j->state == PS_PENDING && snap_members_alive(s, &m->node);
}

static void apply_accept(struct proc *j, const struct msg *m)
{
	struct sd_node *nodes;
	size_t nr;

	j->state = PS_MEMBER;
	j->node = m->node;
	proc_drop_join(j);
	if (is_me(j->id)) {
		st.joined = true;
		sd_info("joined the cluster in %s as %s", st.where,
			nstr(&j->node));
	}
	if (!st.joined)
		return;
	sd_info("%s joined, %zu members", nstr(&j->node), nr_members());
	nodes = member_nodes(&nr);
	handlers->accept(&j->node, nodes, nr, m->payload, m->len, false);
	free(nodes);
}

static void decision_back(const struct proc *sender, const struct msg *m)
{
	if (is_me(sender->id) && st.deciding &&
	    id_eq(m->subject, st.decide_for))
		st.deciding = false;
}

static void on_accept(const struct proc *sender, const struct msg *m)
{
	struct snapshot s;
	struct proc *j;

	decision_back(sender, m);
	if (snap_parse(m, &s)) {
		sd_err("malformed accept from %u/%u", sender->id.nodeid,
		       sender->id.pid);
		return;
	}
	j = proc_find(m->subject);
	if (!j)
		return;		/* the joiner is gone */
	if (st.synced) {
		if (!accept_valid_synced(j, m, &s)) {
			sd_debug("stale or duplicate accept of %s",
				 nstr(&m->node));
			return;
		}
	} else {
		if (!accept_valid_unsynced(j, m, &s))
			return;
		sync_snapshot(&s);
	}
	apply_accept(j, m);
}

/* ---- ACCEPT_SET: several joins decided at once, one epoch for them ---- */

struct set_entry {
	struct pg_id id;
	struct sd_node node;
	const uint8_t *payload;
	uint32_t len;
};

/* the joiners of an ACCEPT_SET into @e (SET_MAX of them); -1: malformed */
static int set_parse(const struct msg *m, struct set_entry *e, uint32_t *nr)
{
	const uint8_t *p = m->payload, *end = m->payload + m->len;
	uint32_t n;

	if (m->len < 8)
		return -1;
	n = get_le32(p);
	if (n < 2 || n > SET_MAX || get_le32(p + 4))
		return -1;
	p += 8;
	for (uint32_t i = 0; i < n; i++) {
		if ((size_t)(end - p) < SET_ENTRY_HDR)
			return -1;
		e[i].id.nodeid = get_le32(p);
		e[i].id.pid = get_le32(p + 4);
		e[i].len = get_le32(p + 8);
		if (get_le32(p + 12))
			return -1;
		sd_node_decode(&e[i].node, p + 16);
		p += SET_ENTRY_HDR;
		if ((size_t)(end - p) < e[i].len)
			return -1;
		e[i].payload = p;
		p += e[i].len;
		for (uint32_t k = 0; k < i; k++)
			if (id_eq(e[k].id, e[i].id) ||
			    node_id_eq(&e[k].node.nid, &e[i].node.nid))
				return -1;
	}
	/* the header names the first joiner, as an ACCEPT names its one */
	if (p != end || !id_eq(e[0].id, m->subject) ||
	    !node_id_eq(&e[0].node.nid, &m->node.nid))
		return -1;
	*nr = n;
	return 0;
}

/* synced: every joiner still pending, the snapshot's members ours */
static bool set_valid_synced(const struct set_entry *e, uint32_t n,
			     const struct snapshot *s)
{
	for (uint32_t i = 0; i < n; i++) {
		struct proc *j = proc_find(e[i].id);

		if (!j || j->state != PS_PENDING || nid_is_member(&e[i].node))
			return false;
	}
	return snap_members_ours(s);
}

/* was @id a pending process when @s was taken? */
static bool snap_pending(const struct snapshot *s, struct pg_id id)
{
	for (uint32_t i = 0; i < s->nr_procs; i++) {
		struct pg_id q;
		uint8_t state;

		snap_proc(s, i, &q, &state, NULL);
		if (id_eq(q, id))
			return state == PS_PENDING;
	}
	return false;
}

/*
 * Not synced: as for one ACCEPT, the set must hold us or a process younger
 * than us (pending to us), so that it was decided after our arrival.  A
 * joiner older than us (unknown to us) counts as pending if the snapshot
 * says so and nothing since settled it: we judge a set holding us and an
 * older joiner as the members do.
 */
static bool set_valid_unsynced(const struct set_entry *e, uint32_t n,
			       const struct snapshot *s)
{
	bool after_us = false;

	for (uint32_t i = 0; i < n; i++) {
		struct proc *j = proc_find(e[i].id);

		if (!j || !snap_members_alive(s, &e[i].node))
			return false;
		if (j->state == PS_PENDING) {
			after_us = true;
			continue;
		}
		if (j->state != PS_UNKNOWN || j->left_msg || j->refused_seen ||
		    !snap_pending(s, e[i].id))
			return false;
	}
	return after_us;
}

/*
 * Every joiner becomes a member first; then one accept callback each, all
 * with the final members, every one but the last marked as followed by
 * another, so that the daemon makes one epoch.  A joiner's callbacks
 * start with its own accept.
 */
static void apply_set(const struct set_entry *e, uint32_t n)
{
	bool was_joined = st.joined;
	uint32_t first = 0;
	struct sd_node *nodes;
	size_t nr;

	for (uint32_t i = 0; i < n; i++) {
		struct proc *j = proc_find(e[i].id);

		sd_assert(j);	/* set_valid_* found every one */
		j->state = PS_MEMBER;
		j->node = e[i].node;
		proc_drop_join(j);
		if (is_me(j->id)) {
			st.joined = true;
			first = i;
			sd_info("joined the cluster in %s as %s (with %u "
				"other(s), one epoch)", st.where,
				nstr(&j->node), n - 1);
		}
	}
	if (!st.joined)
		return;
	if (was_joined)
		first = 0;
	nodes = member_nodes(&nr);
	for (uint32_t i = first; i < n; i++) {
		sd_info("%s joined (with others, one epoch), %zu members",
			nstr(&e[i].node), nr);
		handlers->accept(&e[i].node, nodes, nr, e[i].payload, e[i].len,
				 i + 1 < n);
	}
	free(nodes);
}

static void on_accept_set(const struct proc *sender, const struct msg *m)
{
	struct set_entry e[SET_MAX];
	struct snapshot s;
	uint32_t n;

	decision_back(sender, m);
	if (snap_parse(m, &s) || set_parse(m, e, &n)) {
		sd_err("malformed accept set from %u/%u", sender->id.nodeid,
		       sender->id.pid);
		return;
	}
	if (st.synced) {
		if (!set_valid_synced(e, n, &s)) {
			sd_debug("stale or duplicate accept of %u joiners", n);
			return;
		}
	} else {
		if (!set_valid_unsynced(e, n, &s))
			return;
		sync_snapshot(&s);
	}
	apply_set(e, n);
}

static void on_refuse(const struct proc *sender, const struct msg *m)
{
	struct proc *j = proc_find(m->subject);

	decision_back(sender, m);
	if (!j)
		return;
	if (j->state == PS_UNKNOWN) {
		j->refused_seen = true;
		return;
	}
	if (j->state != PS_PENDING)
		return;
	j->state = PS_REFUSED;
	proc_drop_join(j);
	if (is_me(j->id))
		pg_fatal("the cluster refused our join");
	if (st.joined)
		sd_info("join of %s refused", nstr(&j->node));
}

static void on_leave(struct proc *p)
{
	struct sd_node *nodes;
	bool member = st.synced && p->state == PS_MEMBER;
	size_t nr;

	blks_drop_proc(p->id);
	p->left_msg = true;
	if (p->state == PS_UNKNOWN)
		return;
	p->state = PS_GONE;
	proc_drop_join(p);
	if (!member)
		return;
	sd_info("%s left, %zu members", nstr(&p->node), nr_members());
	if (!st.joined)
		return;
	nodes = member_nodes(&nr);
	handlers->leave(&p->node, 1, nodes, nr);
	free(nodes);
}

static void on_notify(const struct proc *p, const struct msg *m)
{
	if (st.synced && st.joined && p->state == PS_MEMBER)
		handlers->notify(&p->node, m->payload, m->len);
}

static void on_block(const struct proc *p, const struct msg *m)
{
	if (!st.synced || p->state == PS_MEMBER)
		blk_append(p->id, m->seq);
}

static void on_unblock(const struct proc *p, const struct msg *m)
{
	long i = blk_index(st.blks, st.nr_blks, p->id, m->seq);

	if (i >= 0)
		blk_del((size_t)i);
	else if (!st.synced)
		released_add(p->id, m->seq);
	if (is_me(p->id) && m->seq == st.granted_seq) {
		st.granted_seq = 0;
		st.unblock_sent = false;
	}
	on_notify(p, m);
}

static void on_resend(const struct msg *m)
{
	struct proc *me = proc_find(st.me);

	if (!is_me(m->subject) || st.joined || !me ||
	    (me->state != PS_PENDING && me->state != PS_UNKNOWN))
		return;
	if (now_msec() - st.join_sent_at >= JOIN_RESEND_MS)
		send_join();
}

static void on_message(const struct pg_event *e)
{
	struct proc *p;
	struct msg m;

	if (!st.started)
		return;
	if (msg_parse(e->data, e->len, &m)) {
		sd_err("malformed message of %zu bytes from %u/%u ignored",
		       e->len, e->from.nodeid, e->from.pid);
		return;
	}
	p = proc_find(e->from);
	if (!p)
		return;
	switch (m.type) {
	case M_JOIN:
		on_join(p, &m);
		break;
	case M_ACCEPT:
		on_accept(p, &m);
		break;
	case M_ACCEPT_SET:
		on_accept_set(p, &m);
		break;
	case M_REFUSE:
		on_refuse(p, &m);
		break;
	case M_LEAVE:
		on_leave(p);
		break;
	case M_NOTIFY:
		on_notify(p, &m);
		break;
	case M_BLOCK:
		on_block(p, &m);
		break;
	case M_UNBLOCK:
		on_unblock(p, &m);
		break;
	case M_RESEND:
		on_resend(&m);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* what follows from the state: grants and join decisions */

/*
 * A process that called leave is granted nothing more: it could neither
 * notify nor unblock (its messages would follow its M_LEAVE), and the
 * others drop its blocks when they see that leave.
 */
static void check_grant(void)
{
	if (!st.joined || st.leave_called || !st.nr_blks ||
	    !is_me(st.blks[0].id) || st.blks[0].seq == st.granted_seq)
		return;
	st.granted_seq = st.blks[0].seq;
	st.unblock_sent = false;
	handlers->block(&st.my_node);
}

/* handlers->join on a copy of a JOIN's payload, into @buf (MAX_PAYLOAD) */
static bool evaluate(const struct sd_node *node, const void *join,
		     size_t join_len, const struct sd_node *nodes, size_t nr,
		     uint8_t *buf, size_t *len)
{
	struct sd_node joiner = *node;
	bool ok;

	*len = MIN(join_len, (size_t)MAX_PAYLOAD);
	memcpy(buf, join, *len);
	ok = handlers->join(&joiner, nodes, nr, buf, len, MAX_PAYLOAD);
	if (*len > MAX_PAYLOAD) {
		sd_err("join handler returned %zu bytes", *len);
		return false;
	}
	return ok;
}

static void decision_sent(struct pg_id id)
{
	st.deciding = true;
	st.decide_for = id;
}

static void decide_one(struct pg_id id, const struct sd_node *node,
		       const void *join, size_t join_len)
{
	uint8_t *buf = xmalloc(MAX_PAYLOAD);
	size_t len, nr;
	struct sd_node *nodes = member_nodes(&nr);
	bool ok;

	ok = evaluate(node, join, join_len, nodes, nr, buf, &len);
	free(nodes);
	if (ok && send_accept(M_ACCEPT, id, node, buf, len))
		ok = false;
	if (!ok)
		send_simple(M_REFUSE, id, 0, NULL, 0);
	sd_info("%s the join of %s", ok ? "accepted" : "refused", nstr(node));
	free(buf);
	decision_sent(id);
}

/* append @p's entry to a set being built in @set at *@off; false if full */
static bool set_put(uint8_t *set, size_t *off, const struct proc *p,
		    const uint8_t *payload, size_t len)
{
	uint8_t *e = set + *off;

	if (*off + SET_ENTRY_HDR + len > MAX_PAYLOAD)
		return false;
	put_le32(e, p->id.nodeid);
	put_le32(e + 4, p->id.pid);
	put_le32(e + 8, (uint32_t)len);
	put_le32(e + 12, 0);
	sd_node_encode(&p->node, e + 16);
	memcpy(e + SET_ENTRY_HDR, payload, len);
	*off += SET_ENTRY_HDR + len;
	return true;
}

/*
 * Several pending joiners decided in one ACCEPT_SET, so one epoch for
 * them (issue 38): each is judged against the members and the joiners
 * before it in the set, as one at a time would be.  The first one refused
 * (or that the message has no room for) ends the set, to be decided on
 * its own next.
 */
static void decide_set(struct proc *const *batch, size_t n)
{
	uint8_t *set = xmalloc(MAX_PAYLOAD), *buf = xmalloc(MAX_PAYLOAD);
	size_t nr, k, len, off = 8;
	struct sd_node *m = member_nodes(&nr);
	struct sd_node *nodes = xmalloc((nr + n + 1) * sizeof(*nodes));

	memcpy(nodes, m, nr * sizeof(*nodes));
	free(m);
	for (k = 0; k < n; k++) {
		const struct proc *p = batch[k];

		if (!evaluate(&p->node, p->join, p->join_len, nodes, nr, buf,
			      &len) ||
		    !set_put(set, &off, p, buf, len))
			break;
		nodes[nr++] = p->node;
		nodes_sort(nodes, nr);
	}
	put_le32(set, (uint32_t)k);
	put_le32(set + 4, 0);
	if (k >= 2 && !send_accept(M_ACCEPT_SET, batch[0]->id,
				   &batch[0]->node, set, off)) {
		sd_info("accepted the joins of %zu processes at once, the "
			"first %s", k, nstr(&batch[0]->node));
	} else if (k >= 1 &&
		   !send_accept(M_ACCEPT, batch[0]->id, &batch[0]->node,
				set + 8 + SET_ENTRY_HDR,
				get_le32(set + 8 + 8))) {
		sd_info("accepted the join of %s", nstr(&batch[0]->node));
	} else {
		send_simple(M_REFUSE, batch[0]->id, 0, NULL, 0);
		sd_info("refused the join of %s", nstr(&batch[0]->node));
	}
	free(nodes);
	free(buf);
	free(set);
	decision_sent(batch[0]->id);
}

static void ask_resend(struct proc *p)
{
	uint64_t now = now_msec();

	if (now < p->resend_at)
		return;
	p->resend_at = now + RESEND_MS;
	send_simple(M_RESEND, p->id, 0, NULL, 0);
}

/*
 * Do all members and pending processes read ACCEPT_SET?  With
 * @unsent_may, a pending process that has not sent its JOIN yet (whose
 * capabilities are not known) counts as one that may.
 */
static bool group_reads_sets(bool unsent_may)
{
	for (size_t i = 0; i < st.nr_procs; i++) {
		const struct proc *p = st.procs[i];

		if (p->state == PS_PENDING && !p->join && unsent_may)
			continue;
		if ((p->state == PS_MEMBER || p->state == PS_PENDING) &&
		    !(p->caps & CAP_ACCEPT_SET))
			return false;
	}
	return true;
}

/* is @p's node none of the @n in @batch? */
static bool set_takes(const struct proc *p, struct proc *const *batch,
		      size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (node_id_eq(&batch[i]->node.nid, &p->node.nid))
			return false;
	return true;
}

/* the fuzzer sets 0: its inputs run in no time */
static uint64_t join_settle_ms = JOIN_SETTLE_MS;

/*
 * Do more JOINs seem to be on their way to join the set @batch: one came
 * less than join_settle_ms ago, or a process that just came into the
 * group has not sent its own (until it does, its capabilities are not
 * known, and a set would not be sent)?
 */
static bool joins_arriving(struct proc *const *batch, size_t n)
{
	uint64_t now = now_msec(), newest = 0, oldest = UINT64_MAX;

	if (!join_settle_ms)
		return false;
	for (size_t i = 0; i < n; i++) {
		newest = MAX(newest, batch[i]->join_at);
		oldest = MIN(oldest, batch[i]->join_at);
	}
	if (now >= oldest + JOIN_SETTLE_MAX_MS)
		return false;
	if (now < newest + join_settle_ms)
		return true;
	for (size_t i = 0; i < st.nr_procs; i++) {
		const struct proc *p = st.procs[i];

		if (p->state == PS_PENDING && !p->join &&
		    now < p->arrived_at + JOIN_SETTLE_MAX_MS)
			return true;
	}
	return false;
}

/*
 * The pending joins in joining order: the first alone, or a set.  While
 * sets may come of it (the daemon takes joins together, and every process
 * reads sets or has yet to say whether it does), the decision waits for
 * the JOINs still arriving; when they cannot, the first is decided now.
 */
static void decide_as_member(void)
{
	struct proc *batch[SET_MAX];
	bool together = !handlers->joins_together ||
			handlers->joins_together();
	bool sets = together && group_reads_sets(false);
	size_t n = 0;

	for (size_t i = 0; i < st.nr_procs && n < SET_MAX; i++) {
		struct proc *p = st.procs[i];

		if (p->state != PS_PENDING)
			continue;
		if (!p->join) {
			ask_resend(p);
			continue;
		}
		/* a restarted node waits for its old self to be gone */
		if (nid_is_member(&p->node))
			continue;
		if (n && !set_takes(p, batch, n))
			continue;
		batch[n++] = p;
		if (!sets)
			break;
	}
	/* decided on a later tick (TICK_MS) */
	if (n && together && group_reads_sets(true) &&
	    joins_arriving(batch, n))
		return;
	if (n == 1)
		decide_one(batch[0]->id, &batch[0]->node, batch[0]->join,
			   batch[0]->join_len);
	else if (n > 1)
		decide_set(batch, n);
}

/* no members: the oldest pending process founds the cluster */
static void decide_founder(void)
{
	for (size_t i = 0; i < st.nr_procs; i++) {
		if (st.procs[i]->state != PS_PENDING)
			continue;
		if (is_me(st.procs[i]->id))
			decide_one(st.me, &st.my_node, st.my_join,
				   st.my_join_len);
		return;
	}
}

static void decide(void)
{
	struct proc *d;

	if (!st.synced || st.deciding || st.leave_called)
		return;
	if (!nr_members()) {
		decide_founder();
		return;
	}
	d = decider();
	if (d && is_me(d->id))
		decide_as_member();
}

/* ------------------------------------------------------------------ */
/* what the transport delivers */

static struct pg_addr *dup_addrs(const struct pg_addr *a, size_t nr)
{
	return (struct pg_addr *)dup_buf(a, nr * sizeof(*a));
}

void pg_deliver(struct pg_id from, const void *msg, size_t len)
{
	struct pg_event *e = xzalloc(sizeof(*e) + len);

	e->from = from;
	e->len = len;
	memcpy(e->data, msg, len);
	list_add_tail(&e->list, &st.events);
}

void pg_confchg(const struct pg_addr *members, size_t nr_members,
		const struct pg_addr *left, size_t nr_left,
		const struct pg_addr *joined, size_t nr_joined)
{
	struct pg_event *e = xzalloc(sizeof(*e));

	e->confchg = true;
	e->members = dup_addrs(members, nr_members);
	e->left = dup_addrs(left, nr_left);
	e->joined = dup_addrs(joined, nr_joined);
	e->nr_members = nr_members;
	e->nr_left = nr_left;
	e->nr_joined = nr_joined;
	list_add_tail(&e->list, &st.events);
}

static void event_free(struct pg_event *e)
{
	free(e->members);
	free(e->left);
	free(e->joined);
	free(e);
}

void pg_process(void)
{
	if (st.dispatching)
		return;
	st.dispatching = true;
	while (!list_empty(&st.events)) {
		struct pg_event *e = list_first_entry(&st.events,
						      struct pg_event, list);

		/* off the list only once handled: a fatal stop leaves it */
		if (e->confchg)
			on_confchg(e);
		else
			on_message(e);
		list_del(&e->list);
		event_free(e);
		if (st.synced)
			check_grant();
	}
	decide();
	st.dispatching = false;
}

static void tick_fn(struct timer *t)
{
	flush();
	pg_process();
	timer_add(st.loop, &st.tick_timer, TICK_MS);
}

void pg_transport_joined(void)
{
	st.tr_joined = true;
	timer_add(st.loop, &st.tick_timer, TICK_MS);
	flush();
}

/* ------------------------------------------------------------------ */
/* the driver operations */

int pg_init(const struct pg_transport *tr, struct event_loop *loop,
	    const struct cluster_handlers *h, struct pg_id me,
	    const char *where)
{
	if (st.inited || !loop || !tr)
		return -1;
	st.tr = tr;
	st.loop = loop;
	handlers = h;
	st.me = me;
	snprintf(st.where, sizeof(st.where), "%s", where);
	st.send_timer.fn = send_timer_fn;
	st.tick_timer.fn = tick_fn;
	st.inited = true;
	return 0;
}

int pg_join(const struct sd_node *myself, const void *opaque, size_t len)
{
	if (!st.inited || st.join_called)
		return -1;
	if (len > MAX_PAYLOAD) {
		sd_warn("join payload of %zu bytes truncated to %d", len,
			MAX_PAYLOAD);
		len = MAX_PAYLOAD;
	}
	st.my_node = *myself;
	st.my_join = dup_buf(opaque, len);
	st.my_join_len = len;
	st.join_called = true;
	return 0;
}

static bool sending_member(void)
{
	struct proc *me = proc_find(st.me);

	return st.joined && !st.leave_called && me &&
	       me->state == PS_MEMBER;
}

int pg_leave(void)
{
	if (!st.join_called || st.leave_called)
		return -1;
	if (sending_member()) {
		sd_info("leaving the cluster");
		send_simple(M_LEAVE, st.me, 0, NULL, 0);
	}
	st.leave_called = true;
	return 0;
}

static int check_len(size_t len)
{
	if (len <= MAX_PAYLOAD)
		return 0;
	sd_err("message of %zu bytes is too large", len);
	return -1;
}

int pg_notify(const void *msg, size_t len)
{
	if (!sending_member() || check_len(len))
		return -1;
	send_simple(M_NOTIFY, st.me, 0, msg, len);
	return 0;
}

int pg_block(void)
{
	if (!sending_member())
		return -1;
	send_simple(M_BLOCK, st.me, ++st.block_seq, NULL, 0);
	return 0;
}

int pg_unblock(const void *msg, size_t len)
{
	if (check_len(len))
		return -1;
	if (!st.granted_seq || st.unblock_sent) {
		sd_err("unblock without a granted block");
		return -1;
	}
	send_simple(M_UNBLOCK, st.me, st.granted_seq, msg, len);
	st.unblock_sent = true;
	return 0;
}
