// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The RDMA transport (sheep/net/rdma.c) over the emulation of
 * net/rdma_api.h, on the real event loop: messages from 0 bytes to 4 MiB
 * in order (many chunks, many credits' worth), a receiver that posts no
 * receive for a while (back-pressure: the sender's queue grows, nothing is
 * lost), discarded receives, a close seen by the other end, a peer
 * process killed (SIGKILL) seen as closed(), a connect to nobody failing,
 * and the listener's connection limit.  Buffers of 64 KiB and more are
 * read by the receiver (RDMA READ), not copied; where memory cannot be
 * registered (the emulation's memlock limit) the sender copies and the
 * receiver reads through its bounce buffer.  Malformed chunks from a raw
 * peer (lengths, credits, releases, descriptors) break only their own
 * connection.  A timer is the safety net of every loop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <dirent.h>

#include "event.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "net/rdma.h"
#include "net/rdma_api.h"

#define KiB		1024u
#define MiB		(1024u * KiB)
#define PORT_BASE	7100
#define NR_MSGS		40

static const uint8_t LOCAL[16] = { [12] = 127, [15] = 1 };
static struct event_loop *loop;
static struct timer guard;
static bool timed_out;
static char dir[64];
static uint16_t port = PORT_BASE;
static bool stop_on_accept;

static void guard_fired(struct timer *t)
{
	timed_out = true;
	event_loop_stop(loop);
}

static void run_loop(void)
{
	timer_add(loop, &guard, 20000);
	event_loop_run(loop);
	timer_del(&guard);
	assert_false(timed_out);
}

/* the size of message @i: 0, 1, then up to 4 MiB */
static size_t msg_size(int i)
{
	static const size_t sizes[] = { 0, 1, 100, 32 * KiB - 8, 32 * KiB,
					100 * KiB, 4 * MiB, 7 };

	return sizes[i % 8];
}

static uint8_t pattern(int msg, size_t off)
{
	return (uint8_t)(msg * 31 + off * 7 + (off >> 12));
}

/* ---- the receiving end ---- */

struct rx {
	struct xconn *c;
	uint64_t len;		/* the length prefix being received */
	uint8_t *buf;
	bool in_body;
	int got;		/* messages received whole and right */
	int want;
	bool bad;
	int nr_closed;
	bool hold;		/* post no receive after a message */
	bool discard;		/* receive bodies into no buffer */
};

static void rx_next(struct rx *r);
static struct rx server;
static int tx_done_total, tx_want;

/*
 * The loop stops once the server has what it wants and the sender has
 * seen tx_want messages done (a message whose buffers the peer reads
 * itself is done only after that read).
 */
static void maybe_stop(void)
{
	if (server.got >= server.want && tx_done_total >= tx_want)
		event_loop_stop(loop);
}

static void rx_done(struct xconn *c, void *arg)
{
	struct rx *r = arg;

	if (!r->in_body) {
		r->in_body = true;
		r->buf = r->discard ? NULL : xmalloc(r->len + 1);
		xconn_recv(c, r->buf, r->len);
		return;
	}
	for (size_t k = 0; r->buf && k < r->len; k++)
		if (r->buf[k] != pattern(r->got, k)) {
			r->bad = true;
			break;
		}
	if (r->len != msg_size(r->got))
		r->bad = true;
	free(r->buf);
	r->buf = NULL;
	r->in_body = false;
	if (++r->got == r->want)
		maybe_stop();
	if (!r->hold)
		rx_next(r);
}

static void rx_closed(struct xconn *c, void *arg)
{
	struct rx *r = arg;

	r->nr_closed++;
	r->c = NULL;
	event_loop_stop(loop);
}

static const struct xconn_ops rx_ops = { rx_done, rx_closed };

static void rx_next(struct rx *r)
{
	xconn_recv(r->c, &r->len, sizeof(r->len));
}

static int nr_accepted;
static bool refuse_all;

static int on_accept(struct xconn *c, void *arg)
{
	nr_accepted++;
	if (stop_on_accept)
		event_loop_stop(loop);
	if (refuse_all)
		return -1;
	server.c = c;
	xconn_set_ops(c, &rx_ops, &server);
	rx_next(&server);
	return 0;
}

/* ---- the sending end ---- */

struct tx {
	struct xmsg m;
	uint64_t len;
	uint8_t *body;
	int nr_done, err;
};

static void tx_done(struct xmsg *m, int err)
{
	struct tx *t = container_of(m, struct tx, m);

	t->nr_done++;
	t->err = err;
	if (++tx_done_total == tx_want)
		maybe_stop();
}

static struct tx *tx_make(int i)
{
	struct tx *t = xzalloc(sizeof(*t));
	size_t n = msg_size(i);

	t->len = n;
	t->body = xmalloc(n + 1);
	for (size_t k = 0; k < n; k++)
		t->body[k] = pattern(i, k);
	t->m.iov[0] = (struct iovec){ &t->len, sizeof(t->len) };
	t->m.iov[1] = (struct iovec){ t->body, n };
	t->m.nr_iov = 2;
	t->m.done = tx_done;
	return t;
}

static struct rx client;	/* its ops, for closed() */

static void client_recv_done(struct xconn *c, void *arg)
{
}

static void client_closed(struct xconn *c, void *arg)
{
	client.nr_closed++;
	event_loop_stop(loop);
}

static const struct xconn_ops client_ops = { client_recv_done,
					     client_closed };

/* ---- setup ---- */

/* every test on a port of its own, in a loop of its own */
static int setup(void **state)
{
	port++;
	loop = event_loop_create();
	timed_out = false;
	stop_on_accept = false;
	memset(&server, 0, sizeof(server));
	memset(&client, 0, sizeof(client));
	nr_accepted = 0;
	refuse_all = false;
	tx_done_total = 0;
	tx_want = 0;
	return loop ? 0 : -1;
}

static int teardown(void **state)
{
	event_loop_destroy(loop);
	loop = NULL;
	return 0;
}

static struct rdma_xlistener *listen_here(int max)
{
	struct rdma_xlistener *l = rdma_xlisten(loop, LOCAL, port, max,
						"test connection", on_accept,
						NULL);

	assert_non_null(l);
	return l;
}

static struct xconn *connect_here(void)
{
	struct xconn *c = rdma_transport.connect(loop, LOCAL, port);

	assert_non_null(c);
	xconn_set_ops(c, &client_ops, &client);
	return c;
}

static void send_all(struct xconn *c, struct tx **t, int n)
{
	for (int i = 0; i < n; i++) {
		t[i] = tx_make(i);
		xconn_send(c, &t[i]->m);
	}
}

static void free_all(struct tx **t, int n)
{
	for (int i = 0; i < n; i++) {
		free(t[i]->body);
		free(t[i]);
	}
}

/* ---- tests ---- */

static void test_in_order(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	struct xconn *c = connect_here();
	struct tx *t[NR_MSGS];

	server.want = NR_MSGS;
	tx_want = NR_MSGS;
	send_all(c, t, NR_MSGS);	/* queued before it is connected */
	run_loop();
	assert_int_equal(server.got, NR_MSGS);
	assert_false(server.bad);
	assert_int_equal(nr_accepted, 1);
	for (int i = 0; i < NR_MSGS; i++) {
		assert_int_equal(t[i]->nr_done, 1);
		assert_int_equal(t[i]->err, 0);
	}
	assert_int_equal(xconn_send_backlog(c), 0);
	xconn_close(c);
	xconn_close(server.c);
	rdma_xlistener_close(l);
	free_all(t, NR_MSGS);
}

static uint64_t total_bytes(int n)
{
	uint64_t sum = 0;

	for (int i = 0; i < n; i++)
		sum += 8 + msg_size(i);
	return sum;
}

/* the 100 KiB and 4 MiB bodies are read by the receiver, the rest copied */
static void test_zero_copy(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	struct xconn *c = connect_here();
	struct rdma_stats a, b;
	struct tx *t[NR_MSGS];
	uint64_t big = (NR_MSGS / 8) * (100 * KiB + 4 * MiB);

	rdma_get_stats(&a);
	server.want = NR_MSGS;
	tx_want = NR_MSGS;
	send_all(c, t, NR_MSGS);
	run_loop();
	rdma_get_stats(&b);
	assert_int_equal(server.got, NR_MSGS);
	assert_false(server.bad);
	assert_int_equal(b.described - a.described, big);
	assert_int_equal(b.read - a.read, big);
	assert_int_equal(b.bounced - a.bounced, 0);
	assert_int_equal(b.copied - a.copied, total_bytes(NR_MSGS) - big);
	xconn_close(c);
	xconn_close(server.c);
	rdma_xlistener_close(l);
	free_all(t, NR_MSGS);
}

/* 4 MiB cannot be registered here: those messages are copied */
static void test_sender_copies(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	struct xconn *c = connect_here();
	struct rdma_stats a, b;
	struct tx *t[16];

	/* two connections of 1 MiB each, a 100 KiB body on each side */
	setenv("KELPIE_RDMA_EMU_MEMLOCK", "2621440", 1);
	rdma_get_stats(&a);
	server.want = 16;
	tx_want = 16;
	send_all(c, t, 16);
	run_loop();
	unsetenv("KELPIE_RDMA_EMU_MEMLOCK");
	rdma_get_stats(&b);
	assert_int_equal(server.got, 16);
	assert_false(server.bad);
	assert_int_equal(b.described - a.described, 2 * 100 * KiB);
	assert_int_equal(b.copied - a.copied, total_bytes(16) - 200 * KiB);
	xconn_close(c);
	xconn_close(server.c);
	rdma_xlistener_close(l);
	free_all(t, 16);
}

/* a sender in another process; this one cannot register 4 MiB */
static void test_receiver_bounces(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	struct rdma_stats a, b;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct event_loop *cl = event_loop_create();
		struct xconn *cc = rdma_transport.connect(cl, LOCAL, port);
		struct tx *t[8];

		if (!cc)
			_exit(1);
		xconn_set_ops(cc, &client_ops, &client);
		for (int i = 0; i < 8; i++) {
			t[i] = tx_make(i);
			xconn_send(cc, &t[i]->m);
		}
		event_loop_run(cl);
		_exit(0);
	}
	/* this connection's 1 MiB, the bounce buffer and a 100 KiB body */
	setenv("KELPIE_RDMA_EMU_MEMLOCK", "1500000", 1);
	rdma_get_stats(&a);
	server.want = 8;
	run_loop();
	unsetenv("KELPIE_RDMA_EMU_MEMLOCK");
	rdma_get_stats(&b);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(server.got, 8);
	assert_false(server.bad);
	assert_int_equal(b.read - a.read, 100 * KiB + 4 * MiB);
	assert_int_equal(b.bounced - a.bounced, 4 * MiB);
	xconn_close(server.c);
	rdma_xlistener_close(l);
}

/* ---- a raw peer, in a child process, that sends one crafted chunk ---- */

static enum rdma_cm_event_type raw_event(const struct rdma_api *a,
					 struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;

	if (a->get_cm_event(ch, &ev))
		_exit(10);
	type = ev->event;
	a->ack_cm_event(ev);
	return type;
}

static void raw_peer(const uint8_t *chunk, uint32_t len)
{
	const struct rdma_api *a = rdma_api_get();
	struct rdma_event_channel *ch = a->create_event_channel();
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rdma_conn_param p = { .responder_resources = 1,
				     .initiator_depth = 1, .retry_count = 7,
				     .rnr_retry_count = 7 };
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	uint8_t *mem = calloc(17, 32 * KiB);

	net_addr_to_sockaddr(LOCAL, port, &ss);
	if (!ch || !mem || a->create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    a->resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000) ||
	    raw_event(a, ch) != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    a->resolve_route(id, 2000) ||
	    raw_event(a, ch) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		_exit(2);
	pd = a->alloc_pd(id->verbs);
	cq = pd ? a->create_cq(id->verbs, 64, NULL, NULL, 0) : NULL;
	attr.send_cq = attr.recv_cq = cq;
	if (!cq || a->create_qp(id, pd, &attr))
		_exit(3);
	mr = a->reg_mr(pd, mem, 17 * 32 * KiB, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		_exit(4);
	for (int i = 0; i < 16; i++) {
		sge = (struct ibv_sge){ (uintptr_t)(mem + i * 32 * KiB),
					32 * KiB, mr->lkey };
		if (a->post_recv(id->qp, &rwr, &rbad))
			_exit(5);
	}
	if (a->connect(id, &p) ||
	    raw_event(a, ch) != RDMA_CM_EVENT_ESTABLISHED)
		_exit(6);
	memcpy(mem + 16 * 32 * KiB, chunk, len);
	sge = (struct ibv_sge){ (uintptr_t)(mem + 16 * 32 * KiB), len,
				mr->lkey };
	if (a->post_send(id->qp, &swr, &sbad))
		_exit(7);
	while (a->poll_cq(cq, 1, &wc) == 0)
		usleep(1000);
	pause();		/* until killed */
	_exit(0);
}

/* @chunk from a raw peer: the server's connection breaks, nothing else */
static void expect_broken(const uint8_t *chunk, uint32_t len)
{
	struct rdma_xlistener *l = listen_here(4);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		raw_peer(chunk, len);
	server.want = 1000;		/* never reached */
	run_loop();			/* until rx_closed() */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(nr_accepted, 1);
	assert_int_equal(server.nr_closed, 1);
	assert_int_equal(server.got, 0);
	rdma_xlistener_close(l);
	/* the next test's listener and connections work as before */
}

static void chunk_hdr(uint8_t *b, uint32_t w0, uint32_t w1)
{
	put_le32(b, w0);
	put_le32(b + 4, w1);
}

/* the control: a well-formed chunk from the raw peer is a message */
static void test_raw_good(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	uint8_t b[16] = { 0 };
	pid_t pid;

	chunk_hdr(b, 8, 0);		/* the length prefix 0: a message */
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		raw_peer(b, 16);
	server.want = 1;
	run_loop();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(server.got, 1);
	assert_false(server.bad);
	assert_int_equal(server.nr_closed, 0);
	xconn_close(server.c);
	rdma_xlistener_close(l);
}

static void test_bad_length(void **state)
{
	uint8_t b[16] = { 0 };

	chunk_hdr(b, 100, 0);		/* says 100, carries 8 */
	expect_broken(b, 16);
}

static void test_bad_credits(void **state)
{
	uint8_t b[16] = { 0 };

	chunk_hdr(b, 8, 0xffff);	/* more than it could owe us */
	expect_broken(b, 16);
}

static void test_bad_release(void **state)
{
	uint8_t b[16] = { 0 };

	chunk_hdr(b, 8, 1u << 16);	/* releases a buffer never lent */
	expect_broken(b, 16);
}

static void desc(uint8_t *b, uint64_t addr, uint32_t rkey, uint32_t len,
		 uint32_t chunk_len)
{
	chunk_hdr(b, chunk_len | 0x80000000u, 0);
	put_le64(b + 8, addr);
	put_le32(b + 16, rkey);
	put_le32(b + 20, len);
}

static void test_bad_descriptors(void **state)
{
	static const struct {
		uint32_t len, chunk_len;
	} bad[] = {
		{ 0, 16 },			/* no bytes */
		{ (1u << 30) + 1, 16 },		/* more than 1 GiB */
		{ 8, 12 },			/* a short descriptor */
		{ 4096, 16 },			/* a key nobody registered */
	};

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		uint8_t b[24] = { 0 };

		if (k)
			teardown(state), setup(state);
		desc(b, 0x1000, 0xdeadbeef, bad[k].len, bad[k].chunk_len);
		expect_broken(b, 8 + bad[k].chunk_len);
	}
}

static void resume(struct timer *tm)
{
	server.hold = false;
	rx_next(&server);
}

/* nothing is read for a while: the sender stops, then all arrives */
static void test_backpressure(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	struct xconn *c = connect_here();
	struct timer later = { .fn = resume };
	struct tx *t[16];

	server.want = 1;
	server.hold = true;		/* one message, then no receive */
	send_all(c, t, 16);
	run_loop();
	assert_int_equal(server.got, 1);
	/* the 4 MiB message cannot be in flight: credits ran out */
	assert_true(xconn_send_backlog(c) > 0);
	server.want = 16;
	timer_add(loop, &later, 200);
	run_loop();
	assert_int_equal(server.got, 16);
	assert_false(server.bad);
	assert_int_equal(xconn_send_backlog(c), 0);
	xconn_close(c);
	xconn_close(server.c);
	rdma_xlistener_close(l);
	free_all(t, 16);
}

static void test_discard(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	struct xconn *c = connect_here();
	struct tx *t[8];

	server.want = 8;
	server.discard = true;
	send_all(c, t, 8);
	run_loop();
	assert_int_equal(server.got, 8);
	assert_false(server.bad);
	xconn_close(c);
	xconn_close(server.c);
	rdma_xlistener_close(l);
	free_all(t, 8);
}

/* the client closes: the server hears closed() once */
static void test_close_seen(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	struct xconn *c = connect_here();
	struct tx *t[2];

	server.want = 2;
	send_all(c, t, 2);
	run_loop();
	assert_int_equal(server.got, 2);
	xconn_close(c);
	run_loop();
	assert_int_equal(server.nr_closed, 1);
	assert_int_equal(client.nr_closed, 0);	/* it closed by itself */
	rdma_xlistener_close(l);
	free_all(t, 2);
}

/* a peer process killed while connected: closed(), queued sends fail */
static void test_peer_killed(void **state)
{
	struct rdma_xlistener *l = listen_here(4);
	int pfd[2];
	pid_t pid;
	char go;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* the child: connect, say so, wait to be killed */
		struct event_loop *cl = event_loop_create();
		struct xconn *cc = rdma_transport.connect(cl, LOCAL, port);

		if (!cc)
			_exit(1);
		xconn_set_ops(cc, &client_ops, &client);
		if (write(pfd[1], "c", 1) != 1)
			_exit(1);
		event_loop_run(cl);
		_exit(0);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &go, 1), 1);
	server.want = 1000;		/* never reached */
	stop_on_accept = true;
	run_loop();
	stop_on_accept = false;
	assert_int_equal(nr_accepted, 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	run_loop();
	assert_int_equal(server.nr_closed, 1);
	rdma_xlistener_close(l);
	close(pfd[0]);
}

/* nobody listens: the connection breaks, queued sends fail */
static void test_connect_nobody(void **state)
{
	struct xconn *c = connect_here();
	struct tx *t[1];

	send_all(c, t, 1);
	run_loop();
	assert_int_equal(client.nr_closed, 1);
	assert_int_equal(t[0]->nr_done, 1);
	assert_int_equal(t[0]->err, -1);
	free_all(t, 1);
}

/* the accept function refuses: the client sees its connection close */
static void test_accept_refused(void **state)
{
	struct rdma_xlistener *l = listen_here(4);

	refuse_all = true;
	connect_here();
	run_loop();
	assert_int_equal(nr_accepted, 1);
	assert_int_equal(client.nr_closed, 1);
	rdma_xlistener_close(l);
}

/* the rendezvous directory and what the emulation left in it */
static void remove_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[sizeof(dir) + 256];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

int main(void)
{
	int ret;

	snprintf(dir, sizeof(dir), "/tmp/kelpie-rdma-xprt.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	setenv(RDMA_EMU_ENV, dir, 1);
	guard.fn = guard_fired;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sender_copies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receiver_bounces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_length, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_credits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_descriptors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_seen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_nobody, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_refused, setup, teardown),
	};

	ret = cmocka_run_group_tests(tests, NULL, NULL);
	remove_dir();
	return ret;
}
