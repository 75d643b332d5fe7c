// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: the membership protocol of the corosync and
 * zookeeper drivers (sheep/group/procgroup.c), fed configuration changes
 * and messages as a hostile or broken group member could make them.  The
 * protocol's state is static and pg_init() works once per process, so
 * this file includes procgroup.c itself (the real file, unchanged) and
 * resets that state before every input.  What the process sends is held
 * back and delivered (from itself) when the input says so, as the
 * transport would, so decisions, accepts and blocks go round.
 *
 * Input: the first byte picks this process among the pool of 8; then
 * operations, each a byte (low 3 bits: what; the rest: arguments) and
 * what it needs:
 *   0 confchg:     members, left, joined (count bytes, then pool indexes
 *                  and reasons)
 *   1 raw message: sender, 2-byte length, bytes
 *   2 message:     sender, type, subject, seq, node, snapshot, payload
 *                  built well-formed (so that the parser lets it in)
 *   3 loop back:   deliver what we sent, oldest first (the byte's upper
 *                  bits: how many; 0 all)
 *   4 driver call: notify, block, unblock or leave
 *   5 timer:       the tick (flush, process)
 *   6 join answer: how the next join handler decides
 *   7 drop:        forget what we sent (a message lost with its sender)
 * A fatal stop (pg_fatal) ends the input through sheep_exit().
 */
#include "group/procgroup.c"

#include <setjmp.h>
#include "fuzz_input.h"

#define POOL		8
#define MAX_SENT	64

static struct fuzz_in in;
static struct event_loop *fz_loop;
static jmp_buf fz_out;
static bool fz_join_ok = true;
static bool fz_together = true;	/* what joins_together answers */
static uint8_t fz_join_len;

struct sent {
	size_t len;
	uint8_t *buf;
};

static struct sent fz_sent[MAX_SENT];
static size_t fz_nr_sent;

/* ---- the daemon side ---- */

void sheep_exit(int code)
{
	longjmp(fz_out, 1);
}

static bool fz_join(const struct sd_node *joining,
		    const struct sd_node *members, size_t nr_members,
		    void *opaque, size_t *len, size_t max_len)
{
	if (fz_join_len && fz_join_len <= max_len) {
		memset(opaque, 0xab, fz_join_len);
		*len = fz_join_len;
	}
	return fz_join_ok;
}

/* an accept with "more" was delivered: the next callback is an accept */
static bool fz_more_open;

static void fz_accept(const struct sd_node *joined,
		      const struct sd_node *members, size_t nr_members,
		      const void *opaque, size_t len, bool more)
{
	/* read everything the protocol hands over */
	volatile uint8_t sum = 0;

	fz_more_open = more;
	for (size_t i = 0; i < len; i++)
		sum += ((const uint8_t *)opaque)[i];
	for (size_t i = 0; i < nr_members; i++)
		sum += members[i].nid.port;
	(void)sum;
}

static void fz_leave(const struct sd_node *left, size_t nr_left,
		     const struct sd_node *members, size_t nr_members)
{
	/* a change takes at least one node (hostile input may give two
	 * processes one node, so a node that left may still be listed) */
	if (!nr_left || fz_more_open)
		abort();
}

static void fz_notify(const struct sd_node *sender, const void *msg,
		      size_t len)
{
	volatile uint8_t sum = 0;

	sd_assert(!fz_more_open);
	for (size_t i = 0; i < len; i++)
		sum += ((const uint8_t *)msg)[i];
	(void)sum;
}

static void fz_block(const struct sd_node *sender)
{
	/* a process that called leave can no longer notify or unblock */
	sd_assert(!st.leave_called);
	sd_assert(!fz_more_open);
}

static bool fz_joins_together(void)
{
	return fz_together;
}

static const struct cluster_handlers fz_handlers = {
	.join = fz_join,
	.accept = fz_accept,
	.leave = fz_leave,
	.notify = fz_notify,
	.block = fz_block,
	.joins_together = fz_joins_together,
};

/* ---- the transport side ---- */

static struct pg_id pool_id(unsigned i)
{
	return (struct pg_id){ .nodeid = 1 + i % POOL, .pid = 100 + i % POOL };
}

static void pool_node(unsigned i, struct sd_node *n)
{
	memset(n, 0, sizeof(*n));
	n->nid.addr[10] = 0xff;
	n->nid.addr[11] = 0xff;
	n->nid.addr[12] = 127;
	n->nid.addr[15] = 1;
	n->nid.port = (uint16_t)(7000 + i % POOL);
	n->nr_vnodes = 128;
	n->zone = i % POOL;
}

static int fz_send(const void *buf, size_t len)
{
	if (fz_nr_sent == MAX_SENT)
		return 1;	/* busy: the protocol retries */
	fz_sent[fz_nr_sent].buf = dup_buf(buf, len);
	fz_sent[fz_nr_sent].len = len;
	fz_nr_sent++;
	return 0;
}

static const struct pg_transport fz_transport = {
	.name = "fuzz",
	.send = fz_send,
};

static void loop_back(size_t n)
{
	size_t i;

	if (!n || n > fz_nr_sent)
		n = fz_nr_sent;
	for (i = 0; i < n; i++) {
		pg_deliver(st.me, fz_sent[i].buf, fz_sent[i].len);
		free(fz_sent[i].buf);
	}
	memmove(fz_sent, fz_sent + n, (fz_nr_sent - n) * sizeof(*fz_sent));
	fz_nr_sent -= n;
}

static void drop_sent(void)
{
	for (size_t i = 0; i < fz_nr_sent; i++)
		free(fz_sent[i].buf);
	fz_nr_sent = 0;
}

/* ---- operations ---- */

static size_t take_addrs(struct pg_addr *a, size_t max)
{
	size_t n = take_u8(&in) % (max + 1);

	for (size_t i = 0; i < n; i++) {
		uint8_t b = take_u8(&in);

		a[i].id = pool_id(b);
		a[i].reason = 1 + (b >> 3) % 5;
	}
	return n;
}

static void op_confchg(void)
{
	struct pg_addr m[POOL], l[POOL], j[POOL];
	size_t nm = take_addrs(m, POOL);
	size_t nl = take_addrs(l, 3);
	size_t nj = take_addrs(j, 3);

	pg_confchg(m, nm, l, nl, j, nj);
}

static void op_raw(uint8_t arg)
{
	size_t len = take_u16(&in) % 4096;
	uint8_t *buf = xzalloc(len + 1);

	take_bytes(&in, buf, len);
	pg_deliver(pool_id(arg), buf, len);
	free(buf);
}

/*
 * An ACCEPT_SET's joiners, well-formed but for what the input says: the
 * count, then per joiner a pool index and a payload length.  set_len()
 * reads them and gives the payload's size; put_set() writes it, its first
 * joiner the header's subject @who.
 */
static uint8_t set_n, set_who[SET_MAX], set_plen[SET_MAX];

static size_t set_len(void)
{
	size_t len = 8;

	set_n = 2 + take_u8(&in) % 4;
	for (uint8_t i = 0; i < set_n; i++) {
		set_who[i] = take_u8(&in);
		set_plen[i] = take_u8(&in) % 32;
		len += SET_ENTRY_HDR + set_plen[i];
	}
	return len;
}

static void put_set(uint8_t *p, size_t len, uint8_t who)
{
	struct sd_node node;

	put_le32(p, set_n);
	put_le32(p + 4, 0);
	p += 8;
	set_who[0] = who;
	for (uint8_t i = 0; i < set_n; i++) {
		put_le32(p, pool_id(set_who[i]).nodeid);
		put_le32(p + 4, pool_id(set_who[i]).pid);
		put_le32(p + 8, set_plen[i]);
		put_le32(p + 12, 0);
		pool_node(set_who[i] >> 3, &node);
		sd_node_encode(&node, p + 16);
		p += SET_ENTRY_HDR;
		take_bytes(&in, p, set_plen[i]);
		p += set_plen[i];
	}
}

static void op_message(uint8_t arg)
{
	uint8_t type = take_u8(&in) % M_MAX;
	uint8_t who = take_u8(&in);
	uint8_t nr_procs = take_u8(&in) % 5, nr_blocks = take_u8(&in) % 5;
	bool snap = type == M_ACCEPT || type == M_ACCEPT_SET;
	size_t aux = snap ? SNAP_HDR_SIZE + nr_procs * PROC_WIRE +
			    nr_blocks * BLOCK_WIRE : 0;
	size_t len = type == M_ACCEPT_SET ? set_len() : take_u8(&in);
	uint8_t *b = xzalloc(MSG_HDR_SIZE + aux + len);
	struct sd_node node;
	uint8_t *p;

	pool_node(who >> 3, &node);
	put_le32(b, MSG_MAGIC);
	put_le16(b + 4, MSG_VERSION);
	put_le16(b + 6, type);
	put_le32(b + 8, (uint32_t)aux);
	put_le32(b + 12, (uint32_t)len);
	put_le64(b + 16, take_u8(&in) % 4);
	put_le32(b + 24, pool_id(who).nodeid);
	put_le32(b + 28, pool_id(who).pid);
	sd_node_encode(&node, b + 32);
	p = b + MSG_HDR_SIZE;
	if (aux) {
		put_le32(p, nr_procs);
		put_le32(p + 4, nr_blocks);
		p += SNAP_HDR_SIZE;
		for (uint8_t i = 0; i < nr_procs; i++, p += PROC_WIRE) {
			uint8_t x = take_u8(&in);

			put_le32(p, pool_id(x).nodeid);
			put_le32(p + 4, pool_id(x).pid);
			put_le32(p + 8, (x >> 3) % (PS_MAX + 1));
			put_le32(p + 12, x >> 7);	/* caps */
			pool_node(x, &node);
			sd_node_encode(&node, p + 16);
		}
		for (uint8_t i = 0; i < nr_blocks; i++, p += BLOCK_WIRE) {
			uint8_t x = take_u8(&in);

			put_le32(p, pool_id(x).nodeid);
			put_le32(p + 4, pool_id(x).pid);
			put_le64(p + 8, x >> 3);
		}
	}
	if (type == M_ACCEPT_SET)
		put_set(p, len, who);
	else
		take_bytes(&in, p, len);
	pg_deliver(pool_id(arg), b, MSG_HDR_SIZE + aux + len);
	free(b);
}

static void op_driver(uint8_t arg)
{
	uint8_t msg[16] = { 0 };

	switch (arg % 4) {
	case 0:
		pg_notify(msg, arg % sizeof(msg));
		break;
	case 1:
		pg_block();
		break;
	case 2:
		pg_unblock(msg, arg % sizeof(msg));
		break;
	case 3:
		pg_leave();
		break;
	}
}

static void run_ops(void)
{
	struct sd_node me;
	uint8_t who = take_u8(&in);
	uint8_t join[8] = "fuzz-me";

	pool_node(who, &me);
	st.me = pool_id(who);
	pg_join(&me, join, sizeof(join));
	pg_transport_joined();
	while (fuzz_left(&in)) {
		uint8_t op = take_u8(&in), arg = op >> 3;

		switch (op & 7) {
		case 0:
			op_confchg();
			break;
		case 1:
			op_raw(arg);
			break;
		case 2:
			op_message(arg);
			break;
		case 3:
			loop_back(arg);
			break;
		case 4:
			op_driver(arg);
			break;
		case 5:
			tick_fn(&st.tick_timer);
			break;
		case 6:
			fz_join_ok = arg & 1;
			fz_join_len = (uint8_t)((arg >> 1) & 7);
			fz_together = !(arg & 16);
			break;
		case 7:
			drop_sent();
			break;
		}
		pg_process();
	}
}

/* ---- reset between inputs ---- */

static void reset(void)
{
	while (!list_empty(&st.events)) {
		struct pg_event *e = list_first_entry(&st.events,
						      struct pg_event, list);

		list_del(&e->list);
		event_free(e);
	}
	while (!list_empty(&st.sendq)) {
		struct out_msg *o = list_first_entry(&st.sendq, struct out_msg,
						     list);

		list_del(&o->list);
		free(o);
	}
	for (size_t i = 0; i < st.nr_procs; i++) {
		proc_drop_join(st.procs[i]);
		free(st.procs[i]);
	}
	free(st.procs);
	free(st.blks);
	free(st.released);
	free(st.my_join);
	timer_del(&st.send_timer);
	timer_del(&st.tick_timer);
	drop_sent();
	memset(&st, 0, sizeof(st));
	INIT_LIST_HEAD(&st.events);
	INIT_LIST_HEAD(&st.sendq);
	fz_join_ok = true;
	fz_together = true;
	fz_more_open = false;
	join_settle_ms = 0;
	fz_join_len = 0;
	pg_init(&fz_transport, fz_loop, &fz_handlers, pool_id(0), "fuzz");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_open("/dev/null", LOG_L_DEBUG, false);
	fz_loop = event_loop_create();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	reset();
	fuzz_in_init(&in, data, size);
	if (!setjmp(fz_out))
		run_ops();
	return 0;
}
