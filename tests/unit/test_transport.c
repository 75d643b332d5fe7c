// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Transport tests (sheep/net/tcp.c, net/transport.h) on the real event
 * loop: messages of several buffers, large enough to be written in pieces,
 * received as a header and then a payload; discarded receives; back-
 * pressure; receives served from the read-ahead stage; sends of one turn
 * written together, also by a close right after them; replies and their done() in order; closing from callbacks;
 * hang-ups and failed connects; the listener's connection limit.
 * Every scenario runs one loop with a timer as a safety net.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "event.h"
#include "net.h"
#include "util.h"
#include "net/transport.h"

#define MiB		(1u << 20)
#define MAGIC		0x6b6c7069u
#define CLOSED		(-1)		/* a closed() in an end's log */
#define BIG		(32 * MiB)	/* more than loopback buffers hold */

struct hdr {
	uint32_t magic;
	uint32_t seq;
	uint64_t len;			/* payload bytes behind the header */
};

struct ev {
	int seq;			/* CLOSED for closed() */
	int err;
};

/* one side of a connection under test */
struct end {
	struct xconn *c;
	struct hdr hdr;			/* the header being received */
	uint8_t *buf;			/* the payload being received */
	bool in_payload;
	uint32_t discard_mask;		/* seqs whose payload is dropped */
	bool auto_recv;			/* post the next header by itself */
	int nr_msgs;
	uint32_t seqs[16];
	bool bad;			/* a header or payload was wrong */
	int nr_closed;
	struct ev log[32];		/* done() and closed(), in order */
	int nr_log;
	void (*got_msg)(struct end *e);
	void (*on_closed)(struct end *e);
};

struct tmsg {
	struct xmsg m;
	struct hdr hdr;
	struct end *e;
	int nr_done, err;
	struct xconn *c;		/* for resend */
	struct tmsg *resend;		/* sent again from done() */
};

static struct event_loop *loop;
static struct timer guard;
static bool timed_out;

/* ---- the loop ---- */

static void guard_fired(struct timer *t)
{
	timed_out = true;
	event_loop_stop(loop);
}

static int setup(void **state)
{
	loop = event_loop_create();
	timed_out = false;
	memset(&guard, 0, sizeof(guard));
	guard.fn = guard_fired;
	return loop ? 0 : -1;
}

static int teardown(void **state)
{
	timer_del(&guard);
	event_loop_destroy(loop);
	loop = NULL;
	return 0;
}

static void run_loop(void)
{
	timer_add(loop, &guard, 20000);
	event_loop_run(loop);
	timer_del(&guard);
	assert_false(timed_out);
}

static void stop(void)
{
	event_loop_stop(loop);
}

/* ---- sockets ---- */

/* bound but not listening: the port stays ours and refuses connects */
static int refusing_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static int bound_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	return ntohs(sin.sin_port);
}

static int free_port(void)
{
	int fd = refusing_port(), port = bound_port(fd);

	close(fd);
	return port;
}

/* the port may be taken between free_port() and the bind: retry */
static struct xlistener *listen_local(int max, xaccept_fn fn, void *arg,
				      int *port)
{
	for (int i = 0; i < 5; i++) {
		struct xlistener *l;

		*port = free_port();
		l = tcp_listen(loop, "127.0.0.1", *port, max, "test", fn, arg);
		if (l)
			return l;
	}
	fail_msg("cannot listen on 127.0.0.1");
	return NULL;
}

static struct xconn *connect_local(int port)
{
	uint8_t addr[16] = { [12] = 127, [15] = 1 };
	struct xconn *c = tcp_transport.connect(loop, addr, (uint16_t)port);

	assert_non_null(c);
	return c;
}

/* ---- payload patterns: byte by absolute offset, per message ---- */

static uint8_t pattern(uint32_t seq, uint64_t off)
{
	return (uint8_t)((off * 2654435761u >> 13) ^ off ^ (seq * 77));
}

static void fill(uint8_t *p, size_t len, uint32_t seq, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(seq, off + i);
}

static bool check(const uint8_t *p, size_t len, uint32_t seq)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(seq, i))
			return false;
	return true;
}

/* ---- messages ---- */

static void log_ev(struct end *e, int seq, int err)
{
	if (e->nr_log < (int)ARRAY_SIZE(e->log))
		e->log[e->nr_log++] = (struct ev){ seq, err };
}

static void tmsg_done(struct xmsg *m, int err)
{
	struct tmsg *t = container_of(m, struct tmsg, m);

	t->nr_done++;
	t->err = err;
	log_ev(t->e, (int)t->hdr.seq, err);
	if (t->resend) {
		struct tmsg *r = t->resend;

		t->resend = NULL;
		xconn_send(t->c, &r->m);
	}
}

static void tmsg_init(struct tmsg *t, struct end *e, uint32_t seq)
{
	memset(t, 0, sizeof(*t));
	t->e = e;
	t->hdr.magic = MAGIC;
	t->hdr.seq = seq;
	t->m.iov[0].iov_base = &t->hdr;
	t->m.iov[0].iov_len = sizeof(t->hdr);
	t->m.nr_iov = 1;
	t->m.done = tmsg_done;
}

/* append @len bytes of @seq's pattern, as one more buffer */
static uint8_t *tmsg_add(struct tmsg *t, size_t len)
{
	uint8_t *p = malloc(len);

	assert_non_null(p);
	fill(p, len, t->hdr.seq, t->hdr.len);
	t->m.iov[t->m.nr_iov].iov_base = p;
	t->m.iov[t->m.nr_iov++].iov_len = len;
	t->hdr.len += len;
	return p;
}

static void tmsg_free(struct tmsg *t)
{
	for (int i = 1; i < t->m.nr_iov; i++)
		free(t->m.iov[i].iov_base);
}

static void assert_done_once(const struct tmsg *t, int err)
{
	assert_int_equal(t->nr_done, 1);
	assert_int_equal(t->err, err);
}

/* ---- receiving ends ---- */

static void end_got_msg(struct end *e, struct xconn *c)
{
	if (e->nr_msgs < (int)ARRAY_SIZE(e->seqs))
		e->seqs[e->nr_msgs] = e->hdr.seq;
	e->nr_msgs++;
	if (e->auto_recv)
		xconn_recv(c, &e->hdr, sizeof(e->hdr));
	if (e->got_msg)
		e->got_msg(e);
}

static void end_recv_done(struct xconn *c, void *arg)
{
	struct end *e = arg;
	bool drop;

	if (e->in_payload) {
		if (e->buf && !check(e->buf, e->hdr.len, e->hdr.seq))
			e->bad = true;
		free(e->buf);
		e->buf = NULL;
		e->in_payload = false;
		end_got_msg(e, c);
		return;
	}
	if (e->hdr.magic != MAGIC)
		e->bad = true;
	if (!e->hdr.len) {
		end_got_msg(e, c);
		return;
	}
	/* the payload, posted from inside the callback */
	drop = e->hdr.seq < 32 && (e->discard_mask & (1u << e->hdr.seq));
	e->buf = drop ? NULL : malloc(e->hdr.len);
	assert_true(drop || e->buf);
	e->in_payload = true;
	xconn_recv(c, e->buf, e->hdr.len);
}

static void end_closed(struct xconn *c, void *arg)
{
	struct end *e = arg;

	e->nr_closed++;
	e->c = NULL;
	log_ev(e, CLOSED, 0);
	if (e->on_closed)
		e->on_closed(e);
}

static const struct xconn_ops end_ops = {
	.recv_done = end_recv_done,
	.closed = end_closed,
};

static void end_start(struct end *e, struct xconn *c, bool recv)
{
	e->c = c;
	xconn_set_ops(c, &end_ops, e);
	if (recv)
		xconn_recv(c, &e->hdr, sizeof(e->hdr));
}

/* the owner closes: its closed() is not due */
static void end_close(struct end *e)
{
	if (e->c)
		xconn_close(e->c);
	e->c = NULL;
}

static void end_free(struct end *e)
{
	end_close(e);
	free(e->buf);
	e->buf = NULL;
}

static void assert_log(const struct end *e, const struct ev *want, int nr)
{
	assert_int_equal(e->nr_log, nr);
	for (int i = 0; i < nr; i++) {
		assert_int_equal(e->log[i].seq, want[i].seq);
		assert_int_equal(e->log[i].err, want[i].err);
	}
}

/* accept into the end given as arg, with a header receive posted */
static int accept_recv(struct xconn *c, void *arg)
{
	end_start(arg, c, true);
	return 0;
}

/* accept into the end given as arg, reading nothing yet */
static int accept_idle(struct xconn *c, void *arg)
{
	end_start(arg, c, false);
	return 0;
}

/*
 * TCP: a header and three large buffers go out (partly written, queued
 * behind the connect); the server reads a header, then the payload posted
 * from recv_done, and answers with three messages whose done(0) come in
 * order.  The client closes from inside its last recv_done and the server
 * sees the hang-up on its posted receive: closed() once.  The listener is
 * closed as soon as it has accepted: the connection outlives it.
 */
static struct end rt_cl, rt_sv;
static struct tmsg rt_req, rt_rep[3];
static struct xlistener *rt_l;

static int rt_accept(struct xconn *c, void *arg)
{
	xlistener_close(rt_l);
	rt_l = NULL;
	return accept_recv(c, arg);
}

static void rt_server_got(struct end *e)
{
	for (uint32_t i = 0; i < 3; i++) {
		tmsg_init(&rt_rep[i], e, 10 + i);
		tmsg_add(&rt_rep[i], 1000 * (i + 1));
		if (i == 2)
			tmsg_add(&rt_rep[i], 3 * MiB);
		xconn_send(e->c, &rt_rep[i].m);
	}
}

static void rt_client_got(struct end *e)
{
	assert_true(xconn_connected(e->c));
	if (e->nr_msgs == 3)
		end_close(e);
}

static void rt_server_closed(struct end *e)
{
	stop();
}

static void test_tcp_round_trip(void **state)
{
	static const struct ev sv_want[] = {
		{ 10, 0 }, { 11, 0 }, { 12, 0 }, { CLOSED, 0 } };
	int port;

	memset(&rt_cl, 0, sizeof(rt_cl));
	memset(&rt_sv, 0, sizeof(rt_sv));
	rt_sv.auto_recv = rt_cl.auto_recv = true;
	rt_sv.got_msg = rt_server_got;
	rt_sv.on_closed = rt_server_closed;
	rt_cl.got_msg = rt_client_got;
	rt_l = listen_local(16, rt_accept, &rt_sv, &port);

	tmsg_init(&rt_req, &rt_cl, 1);
	tmsg_add(&rt_req, 3 * MiB + 12345);
	tmsg_add(&rt_req, 5 * MiB + 1);
	tmsg_add(&rt_req, 4 * MiB + 777);
	end_start(&rt_cl, connect_local(port), true);
	/* the connect has yet to finish: peer.c's dial deadline reads this */
	assert_false(xconn_connected(rt_cl.c));
	xconn_send(rt_cl.c, &rt_req.m);
	/* connecting: all of it waits */
	assert_int_equal(xconn_send_backlog(rt_cl.c),
			 sizeof(struct hdr) + rt_req.hdr.len);
	run_loop();

	assert_null(rt_l);
	assert_done_once(&rt_req, 0);
	assert_false(rt_sv.bad);
	assert_int_equal(rt_sv.nr_msgs, 1);
	assert_int_equal(rt_sv.seqs[0], 1);
	assert_log(&rt_sv, sv_want, 4);
	assert_false(rt_cl.bad);
	assert_int_equal(rt_cl.nr_msgs, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rt_cl.seqs[i], 10 + i);
	assert_int_equal(rt_cl.nr_closed, 0);
	end_free(&rt_cl);
	end_free(&rt_sv);
	tmsg_free(&rt_req);
	for (int i = 0; i < 3; i++)
		tmsg_free(&rt_rep[i]);
}

/*
 * Unix socket, a plain blocking client in a thread: a message whose
 * payload (more than the 64 KiB discard buffer) is dropped with a NULL
 * receive, then one that is kept; the reply goes back and the client's
 * hang-up reaches the server's posted receive.
 */
#define DISCARD_LEN	(300 * 1000 + 7)

struct raw_client {
	int fd;
	bool ok;
};

static struct end ux_sv;
static struct tmsg ux_rep;

static bool raw_send(int fd, uint32_t seq, const uint8_t *p, size_t len)
{
	struct hdr h = { MAGIC, seq, len };

	return xwrite(fd, &h, sizeof(h)) == sizeof(h) &&
	       (!len || xwrite(fd, p, len) == (ssize_t)len);
}

static void *raw_client_run(void *arg)
{
	struct raw_client *rc = arg;
	uint8_t *junk = calloc(1, DISCARD_LEN), hello[5];
	struct hdr h;

	fill(hello, sizeof(hello), 1, 0);
	rc->ok = junk && raw_send(rc->fd, 0, junk, DISCARD_LEN) &&
		 raw_send(rc->fd, 1, hello, sizeof(hello)) &&
		 xread(rc->fd, &h, sizeof(h)) == sizeof(h) &&
		 h.magic == MAGIC && h.seq == 9 && h.len == 0;
	free(junk);
	close(rc->fd);
	return NULL;
}

static void ux_server_got(struct end *e)
{
	if (e->nr_msgs != 2)
		return;
	tmsg_init(&ux_rep, e, 9);
	xconn_send(e->c, &ux_rep.m);
}

static void test_unix_discard(void **state)
{
	static const struct ev want[] = { { 9, 0 }, { CLOSED, 0 } };
	char dir[] = "/tmp/kelpie-test-transport.XXXXXX", path[64];
	struct raw_client rc = { .fd = -1 };
	struct xlistener *l;
	pthread_t th;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sock", dir);
	memset(&ux_sv, 0, sizeof(ux_sv));
	ux_sv.auto_recv = true;
	ux_sv.discard_mask = 1u << 0;
	ux_sv.got_msg = ux_server_got;
	ux_sv.on_closed = rt_server_closed;
	l = unix_listen(loop, path, 4, "test", accept_recv, &ux_sv);
	assert_non_null(l);
	rc.fd = net_connect_unix(path);
	assert_true(rc.fd >= 0);
	assert_int_equal(pthread_create(&th, NULL, raw_client_run, &rc), 0);
	run_loop();
	pthread_join(th, NULL);

	assert_true(rc.ok);
	assert_false(ux_sv.bad);
	assert_int_equal(ux_sv.nr_msgs, 2);
	assert_int_equal(ux_sv.seqs[0], 0);
	assert_int_equal(ux_sv.seqs[1], 1);
	assert_log(&ux_sv, want, 2);
	xlistener_close(l);
	end_free(&ux_sv);
	unlink(path);
	rmdir(dir);
}

/*
 * Back-pressure: the server posts no receive, so the client's message
 * stays queued; a timer posts the receive later and the backlog drains.
 */
static struct end bp_cl, bp_sv;
static struct tmsg bp_req;
static struct timer bp_timer;
static size_t bp_backlog_seen;
static int bp_msgs_seen;

static void bp_post(struct timer *t)
{
	bp_backlog_seen = xconn_send_backlog(bp_cl.c);
	bp_msgs_seen = bp_sv.nr_msgs;
	bp_sv.auto_recv = true;
	xconn_recv(bp_sv.c, &bp_sv.hdr, sizeof(bp_sv.hdr));
}

static void bp_check_done(void)
{
	if (bp_req.nr_done && bp_sv.nr_msgs)
		stop();
}

static void bp_server_got(struct end *e)
{
	bp_check_done();
}

static void bp_done(struct xmsg *m, int err)
{
	tmsg_done(m, err);
	bp_check_done();
}

static void test_backpressure(void **state)
{
	struct xlistener *l;
	int port;

	memset(&bp_cl, 0, sizeof(bp_cl));
	memset(&bp_sv, 0, sizeof(bp_sv));
	bp_sv.got_msg = bp_server_got;
	l = listen_local(4, accept_idle, &bp_sv, &port);
	end_start(&bp_cl, connect_local(port), false);
	tmsg_init(&bp_req, &bp_cl, 3);
	tmsg_add(&bp_req, BIG / 2);
	tmsg_add(&bp_req, BIG / 2 + 3);
	bp_req.m.done = bp_done;
	xconn_send(bp_cl.c, &bp_req.m);
	memset(&bp_timer, 0, sizeof(bp_timer));
	bp_timer.fn = bp_post;
	timer_add(loop, &bp_timer, 300);
	run_loop();

	assert_true(bp_backlog_seen > 0);
	assert_int_equal(bp_msgs_seen, 0);
	assert_done_once(&bp_req, 0);
	assert_int_equal(xconn_send_backlog(bp_cl.c), 0);
	assert_false(bp_sv.bad);
	assert_int_equal(bp_sv.nr_msgs, 1);
	xlistener_close(l);
	end_free(&bp_cl);
	end_free(&bp_sv);
	tmsg_free(&bp_req);
}

/*
 * Read-ahead: small receives are served from one read() of what the
 * socket holds.  Six messages (small, empty, a dropped payload, one larger
 * than the stage, small again) are all in the socket before the server
 * posts its first receive; after each message the server posts the next
 * one only from a timer, when the socket holds nothing more to wake the
 * loop: the staged bytes must still arrive, in order and intact.
 */
static struct end st_cl, st_sv;
static struct tmsg st_req[6];
static struct timer st_timer;
static const size_t st_len[6] = { 100, 0, 3000, 40000, 10, 200 };

static void st_post(struct timer *t)
{
	xconn_recv(st_sv.c, &st_sv.hdr, sizeof(st_sv.hdr));
}

static void st_server_got(struct end *e)
{
	if (e->nr_msgs == 6)
		stop();
	else
		timer_add(loop, &st_timer, 0);
}

static void test_staged_receives(void **state)
{
	struct xlistener *l;
	int port;

	memset(&st_cl, 0, sizeof(st_cl));
	memset(&st_sv, 0, sizeof(st_sv));
	st_sv.got_msg = st_server_got;
	st_sv.discard_mask = 1u << 2;
	l = listen_local(4, accept_idle, &st_sv, &port);
	end_start(&st_cl, connect_local(port), false);
	for (uint32_t i = 0; i < 6; i++) {
		tmsg_init(&st_req[i], &st_cl, i);
		if (st_len[i])
			tmsg_add(&st_req[i], st_len[i]);
		xconn_send(st_cl.c, &st_req[i].m);
	}
	memset(&st_timer, 0, sizeof(st_timer));
	st_timer.fn = st_post;
	/* long enough for all of it to reach the server's socket */
	timer_add(loop, &st_timer, 200);
	run_loop();

	assert_false(st_sv.bad);
	assert_int_equal(st_sv.nr_msgs, 6);
	for (uint32_t i = 0; i < 6; i++) {
		assert_int_equal(st_sv.seqs[i], i);
		assert_done_once(&st_req[i], 0);
	}
	timer_del(&st_timer);
	xlistener_close(l);
	end_free(&st_cl);
	end_free(&st_sv);
	for (int i = 0; i < 6; i++)
		tmsg_free(&st_req[i]);
}

/*
 * Batched sends: of three replies sent in one turn of the loop, the first
 * is written at once and the other two are still queued when the last
 * xconn_send() returns (they go out together at the end of the turn);
 * all arrive in order with their done(0) in order.
 * The server closes right after queuing them, as a server does after a
 * last reply: the close writes what the socket takes, so the client gets
 * all three before the hang-up.
 */
static struct end bs_cl, bs_sv;
static struct tmsg bs_req, bs_rep[3];
static size_t bs_backlog_seen;

static void bs_server_got(struct end *e)
{
	for (uint32_t i = 0; i < 3; i++) {
		tmsg_init(&bs_rep[i], e, 30 + i);
		tmsg_add(&bs_rep[i], 100 * (i + 1));
		xconn_send(e->c, &bs_rep[i].m);
	}
	bs_backlog_seen = xconn_send_backlog(e->c);
	end_close(e);
}

static void test_batched_sends(void **state)
{
	static const struct ev sv_want[] = { { 30, 0 }, { 31, 0 }, { 32, 0 } };
	struct xlistener *l;
	int port;

	memset(&bs_cl, 0, sizeof(bs_cl));
	memset(&bs_sv, 0, sizeof(bs_sv));
	bs_sv.got_msg = bs_server_got;
	bs_cl.auto_recv = true;
	bs_cl.on_closed = rt_server_closed;
	l = listen_local(4, accept_recv, &bs_sv, &port);
	end_start(&bs_cl, connect_local(port), true);
	tmsg_init(&bs_req, &bs_cl, 4);
	xconn_send(bs_cl.c, &bs_req.m);
	run_loop();

	assert_int_equal(bs_backlog_seen, 2 * sizeof(struct hdr) + 500);
	assert_log(&bs_sv, sv_want, 3);
	assert_false(bs_cl.bad);
	assert_int_equal(bs_cl.nr_msgs, 3);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(bs_cl.seqs[i], 30 + i);
	assert_int_equal(bs_cl.nr_closed, 1);
	xlistener_close(l);
	end_free(&bs_sv);
	for (int i = 0; i < 3; i++)
		tmsg_free(&bs_rep[i]);
}

/*
 * Closing from inside recv_done with sends queued: they get done(-1) in
 * order, a send made from one of those done() too (last), and the
 * owner's closed() is not called.  The client drains what was written
 * with a discarding receive until EOF.
 */
static struct end cr_cl, cr_sv;
static struct tmsg cr_req, cr_rep[4];
static size_t cr_backlog_seen;

static void cr_server_got(struct end *e)
{
	for (uint32_t i = 0; i < 3; i++) {
		tmsg_init(&cr_rep[i], e, 20 + i);
		tmsg_add(&cr_rep[i], i ? 100 : BIG);
		cr_rep[i].c = e->c;
		xconn_send(e->c, &cr_rep[i].m);
	}
	tmsg_init(&cr_rep[3], e, 23);
	cr_rep[0].resend = &cr_rep[3];
	cr_backlog_seen = xconn_send_backlog(e->c);
	end_close(e);
}

static void test_close_in_recv_done(void **state)
{
	static const struct ev sv_want[] = {
		{ 20, -1 }, { 21, -1 }, { 22, -1 }, { 23, -1 } };
	static const struct ev cl_want[] = { { 2, 0 }, { CLOSED, 0 } };
	int port;
	struct xlistener *l;

	memset(&cr_cl, 0, sizeof(cr_cl));
	memset(&cr_sv, 0, sizeof(cr_sv));
	cr_sv.got_msg = cr_server_got;
	cr_cl.on_closed = rt_server_closed;
	l = listen_local(4, accept_recv, &cr_sv, &port);
	end_start(&cr_cl, connect_local(port), false);
	xconn_recv(cr_cl.c, NULL, SIZE_MAX);
	tmsg_init(&cr_req, &cr_cl, 2);
	xconn_send(cr_cl.c, &cr_req.m);
	run_loop();

	assert_true(cr_backlog_seen > 0);
	assert_log(&cr_sv, sv_want, 4);
	assert_int_equal(cr_sv.nr_closed, 0);
	assert_log(&cr_cl, cl_want, 2);
	xlistener_close(l);
	end_free(&cr_sv);
	for (int i = 0; i < 4; i++)
		tmsg_free(&cr_rep[i]);
}

/*
 * The peer hangs up while our sends are queued and nothing is read: the
 * error breaks the connection, the sends get done(-1) in order, then
 * closed() runs once.
 */
static struct end hu_cl, hu_sv;
static struct tmsg hu_req[3];
static struct timer hu_timer;

static void hu_close_server(struct timer *t)
{
	end_close(&hu_sv);
}

static void test_peer_hangup(void **state)
{
	static const struct ev want[] = {
		{ 30, -1 }, { 31, -1 }, { 32, -1 }, { CLOSED, 0 } };
	int port;
	struct xlistener *l;

	memset(&hu_cl, 0, sizeof(hu_cl));
	memset(&hu_sv, 0, sizeof(hu_sv));
	hu_cl.on_closed = rt_server_closed;
	l = listen_local(4, accept_idle, &hu_sv, &port);
	end_start(&hu_cl, connect_local(port), false);
	for (uint32_t i = 0; i < 3; i++) {
		tmsg_init(&hu_req[i], &hu_cl, 30 + i);
		tmsg_add(&hu_req[i], i ? 10 : BIG);
		xconn_send(hu_cl.c, &hu_req[i].m);
	}
	memset(&hu_timer, 0, sizeof(hu_timer));
	hu_timer.fn = hu_close_server;
	timer_add(loop, &hu_timer, 200);
	run_loop();

	assert_log(&hu_cl, want, 4);
	assert_int_equal(hu_cl.nr_closed, 1);
	assert_int_equal(hu_sv.nr_closed, 0);
	assert_null(hu_sv.c);
	xlistener_close(l);
	for (int i = 0; i < 3; i++)
		tmsg_free(&hu_req[i]);
}

/*
 * A reset while the server reads nothing and sends nothing: the level-
 * triggered error must break the connection (closed() once), not spin.
 */
static struct end rs_sv;
static int rs_fd = -1;

static int rs_accept(struct xconn *c, void *arg)
{
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };

	accept_idle(c, arg);
	/* linger 0: close() sends a reset */
	setsockopt(rs_fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
	close(rs_fd);
	rs_fd = -1;
	return 0;
}

static void test_reset_while_idle(void **state)
{
	static const struct ev want[] = { { CLOSED, 0 } };
	uint8_t addr[16] = { [12] = 127, [15] = 1 };
	struct xlistener *l;
	int port;

	memset(&rs_sv, 0, sizeof(rs_sv));
	rs_sv.on_closed = rt_server_closed;
	l = listen_local(4, rs_accept, &rs_sv, &port);
	rs_fd = net_connect_addr(addr, (uint16_t)port, 0);
	assert_true(rs_fd >= 0);
	run_loop();

	assert_log(&rs_sv, want, 1);
	assert_null(rs_sv.c);
	xlistener_close(l);
}

/* a connect to a port nobody listens on: done(-1), then closed() */
static struct end cf_cl;
static struct tmsg cf_req;

static void test_connect_refused(void **state)
{
	static const struct ev want[] = { { 40, -1 }, { CLOSED, 0 } };
	int fd = refusing_port();

	memset(&cf_cl, 0, sizeof(cf_cl));
	cf_cl.on_closed = rt_server_closed;
	end_start(&cf_cl, connect_local(bound_port(fd)), true);
	tmsg_init(&cf_req, &cf_cl, 40);
	tmsg_add(&cf_req, 4096);
	xconn_send(cf_cl.c, &cf_req.m);
	assert_int_equal(xconn_send_backlog(cf_cl.c),
			 sizeof(struct hdr) + 4096);
	run_loop();
	close(fd);

	assert_log(&cf_cl, want, 2);
	assert_null(cf_cl.c);
	tmsg_free(&cf_req);
}

/*
 * The owner closes from a done(-1) of a breaking connection: the rest
 * still get done(-1), and closed() is no longer due.
 */
static struct end cd_cl;
static struct tmsg cd_req[2];

static void cd_done(struct xmsg *m, int err)
{
	struct tmsg *t = container_of(m, struct tmsg, m);

	tmsg_done(m, err);
	if (t == &cd_req[0])
		end_close(&cd_cl);
	else
		stop();
}

static void test_close_in_done(void **state)
{
	static const struct ev want[] = { { 70, -1 }, { 71, -1 } };
	int fd = refusing_port(), port = bound_port(fd);

	memset(&cd_cl, 0, sizeof(cd_cl));
	end_start(&cd_cl, connect_local(port), true);
	for (uint32_t i = 0; i < 2; i++) {
		tmsg_init(&cd_req[i], &cd_cl, 70 + i);
		cd_req[i].m.done = cd_done;
		xconn_send(cd_cl.c, &cd_req[i].m);
	}
	run_loop();
	close(fd);

	assert_log(&cd_cl, want, 2);
	assert_int_equal(cd_cl.nr_closed, 0);
}

/*
 * A listener with max 1: a second connection is accepted and closed at
 * once (its client sees closed()), the first keeps working.
 */
static struct end mx_a, mx_b, mx_sv;
static struct tmsg mx_req[3];
static struct timer mx_timer;
static int mx_port, mx_accepts;

static int mx_accept(struct xconn *c, void *arg)
{
	mx_accepts++;
	return accept_recv(c, arg);
}

/* B connects only once A is in, so A is the one the listener keeps */
static void mx_connect_b(struct timer *t)
{
	end_start(&mx_b, connect_local(mx_port), true);
	tmsg_init(&mx_req[1], &mx_b, 51);
	xconn_send(mx_b.c, &mx_req[1].m);
}

static void mx_server_got(struct end *e)
{
	if (e->nr_msgs == 1)
		timer_add(loop, &mx_timer, 0);
	else
		stop();
}

static void mx_b_closed(struct end *e)
{
	tmsg_init(&mx_req[2], &mx_a, 52);
	tmsg_add(&mx_req[2], 1000);
	xconn_send(mx_a.c, &mx_req[2].m);
}

static void test_listener_max(void **state)
{
	struct xlistener *l;

	memset(&mx_a, 0, sizeof(mx_a));
	memset(&mx_b, 0, sizeof(mx_b));
	memset(&mx_sv, 0, sizeof(mx_sv));
	mx_accepts = 0;
	mx_sv.auto_recv = true;
	mx_sv.got_msg = mx_server_got;
	mx_b.on_closed = mx_b_closed;
	memset(&mx_timer, 0, sizeof(mx_timer));
	mx_timer.fn = mx_connect_b;
	l = listen_local(1, mx_accept, &mx_sv, &mx_port);
	end_start(&mx_a, connect_local(mx_port), false);
	tmsg_init(&mx_req[0], &mx_a, 50);
	xconn_send(mx_a.c, &mx_req[0].m);
	run_loop();

	assert_int_equal(mx_accepts, 1);
	assert_int_equal(mx_b.nr_closed, 1);
	assert_int_equal(mx_req[1].nr_done, 1);
	assert_int_equal(mx_a.nr_closed, 0);
	assert_done_once(&mx_req[0], 0);
	assert_done_once(&mx_req[2], 0);
	assert_int_equal(mx_sv.nr_msgs, 2);
	assert_int_equal(mx_sv.seqs[0], 50);
	assert_int_equal(mx_sv.seqs[1], 52);
	assert_false(mx_sv.bad);
	xlistener_close(l);
	end_free(&mx_a);
	end_free(&mx_sv);
	tmsg_free(&mx_req[2]);
}

/*
 * An accept fn that refuses: the connection is closed (its client sees
 * closed()) and no longer counts against max, so the next one gets in.
 */
static struct end rf_a, rf_b, rf_sv;
static struct tmsg rf_req;
static int rf_port, rf_calls;

static int rf_accept(struct xconn *c, void *arg)
{
	if (rf_calls++ == 0)
		return -1;
	return accept_recv(c, arg);
}

static void rf_a_closed(struct end *e)
{
	end_start(&rf_b, connect_local(rf_port), false);
	tmsg_init(&rf_req, &rf_b, 60);
	xconn_send(rf_b.c, &rf_req.m);
}

static void rf_server_got(struct end *e)
{
	stop();
}

static void test_accept_refused(void **state)
{
	struct xlistener *l;

	memset(&rf_a, 0, sizeof(rf_a));
	memset(&rf_b, 0, sizeof(rf_b));
	memset(&rf_sv, 0, sizeof(rf_sv));
	rf_calls = 0;
	rf_a.on_closed = rf_a_closed;
	rf_sv.got_msg = rf_server_got;
	l = listen_local(1, rf_accept, &rf_sv, &rf_port);
	end_start(&rf_a, connect_local(rf_port), true);
	run_loop();

	assert_int_equal(rf_calls, 2);
	assert_int_equal(rf_a.nr_closed, 1);
	assert_done_once(&rf_req, 0);
	assert_int_equal(rf_sv.nr_msgs, 1);
	assert_int_equal(rf_sv.seqs[0], 60);
	xlistener_close(l);
	end_free(&rf_b);
	end_free(&rf_sv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tcp_round_trip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unix_discard, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_backpressure, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_staged_receives, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_batched_sends, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_close_in_recv_done,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_hangup, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reset_while_idle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_connect_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_close_in_done, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_listener_max, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_accept_refused, setup,
						teardown),
	};

	/* a write to a hung-up peer must fail, not kill us (as in sheep) */
	signal(SIGPIPE, SIG_IGN);
	log_open(NULL, LOG_L_WARNING, true);
	return cmocka_run_group_tests_name("transport", tests, NULL, NULL);
}
