// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: the NBD server of sheep/front/nbd.c (handshake,
 * options and transmission), driven through the transport interface
 * (sheep/net/transport.h) by an in-memory connection.
 *
 * Input:
 *   byte 0   export: bit 0 opens succeed, bit 1 read-only, bits 2-4 the
 *            export size (sizes[]), bits 5-7 the error of a failed open
 *   byte 1   behaviour: bit 0 opens complete later, bit 1 commands
 *            complete later, bit 2 commands fail with EIO, bit 3 LIST
 *            finds VDIs, bit 4 LIST completes later, bit 5 the
 *            handshake timer fires when the input is used up
 *   then     the bytes the client sends
 *
 * The fake connection hands out the client bytes to each posted receive;
 * every send completes at once.  Work that "completes later" (opens,
 * commands, LIST) is queued and completed one item after each receive,
 * and whenever the server waits for nothing else.  Timers of 0 ms (the
 * resume timer) fire whenever no receive is posted.  When the input runs
 * out the connection breaks (ops->closed), or, with the timer bit, the
 * handshake timer fires first; then everything still queued completes, so
 * that every buffer must have been freed when the input is done (ASan's
 * leak check).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "front/nbd.h"
#include "proto.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "net/transport.h"
#include "fuzz_input.h"

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

struct sheep_state sys;

/* ---- what the input chose ---- */

static const uint64_t sizes[8] = {
	0, 1, 512, 4096, 65536 + 7, 1 << 20, UINT64_MAX - 4095, 3 << 20,
};
static const uint32_t open_errors[8] = {
	SD_RES_NO_VDI, SD_RES_NO_TAG, SD_RES_VDI_LOCKED, SD_RES_INVALID_PARMS,
	SD_RES_NO_SUPPORT, SD_RES_EIO, SD_RES_SUCCESS, 0x7777,
};

static struct {
	bool open_ok, readonly, open_later, io_later, io_fail, list_some;
	bool list_later, hs_timeout;
	uint64_t size;
	uint32_t open_err;
} cfg;

static void read_config(struct fuzz_in *in)
{
	uint8_t a = take_u8(in), b = take_u8(in);

	cfg.open_ok = a & 1;
	cfg.readonly = a & 2;
	cfg.size = sizes[(a >> 2) & 7];
	cfg.open_err = open_errors[a >> 5];
	cfg.open_later = b & 1;
	cfg.io_later = b & 2;
	cfg.io_fail = b & 4;
	cfg.list_some = b & 8;
	cfg.list_later = b & 16;
	cfg.hs_timeout = b & 32;
}

/* ---- work completed later, in order ---- */

enum later_kind { L_OPEN, L_IO, L_LIST };

struct later {
	enum later_kind kind;
	struct nbd_open_args open;
	char name[64];
	struct nbd_io *io;
	void (*list_entry)(const char *name, void *arg);
	void (*list_done)(void *arg);
	void *arg;
	struct later *next;
};

static struct later *later_head, **later_tail = &later_head;

static void later_add(struct later *l)
{
	l->next = NULL;
	*later_tail = l;
	later_tail = &l->next;
}

/* ---- the export (nbd_vdi.c's side) ---- */

struct nbd_export {
	uint64_t size;
	bool readonly;
	bool detached;
};

static int nr_exports;

static void open_now(const struct nbd_open_args *a)
{
	struct nbd_export *ex;

	if (!cfg.open_ok) {
		a->done(NULL, cfg.open_err, a->arg);
		return;
	}
	ex = xzalloc(sizeof(*ex));
	ex->size = cfg.size;
	ex->readonly = cfg.readonly;
	nr_exports++;
	a->done(ex, SD_RES_SUCCESS, a->arg);
}

void nbd_export_open(const struct nbd_open_args *a)
{
	struct later *l;

	if (!a->export_name || strlen(a->export_name) > 4096)
		die("export name not a bounded string\n");
	if (!cfg.open_later) {
		open_now(a);
		return;
	}
	l = xzalloc(sizeof(*l));
	l->kind = L_OPEN;
	l->open = *a;
	snprintf(l->name, sizeof(l->name), "%s", a->export_name);
	l->open.export_name = l->name;
	later_add(l);
}

void nbd_export_detach(struct nbd_export *ex)
{
	ex->detached = true;
}

void nbd_export_close(struct nbd_export *ex)
{
	nr_exports--;
	free(ex);
}

uint64_t nbd_export_size(const struct nbd_export *ex)
{
	return ex->size;
}

bool nbd_export_readonly(const struct nbd_export *ex)
{
	return ex->readonly;
}

static void io_now(struct nbd_io *io)
{
	bool rw = io->type == NBD_CMD_READ || io->type == NBD_CMD_WRITE;

	if (rw && io->len && !io->buf)
		die("READ/WRITE of %u bytes without a buffer\n", io->len);
	if (io->off + io->len < io->off || io->off + io->len > io->ex->size)
		if (io->type != NBD_CMD_FLUSH)
			die("command beyond the export passed the checks\n");
	if (io->type == NBD_CMD_READ && io->len)
		memset(io->buf, 0x5a, io->len);
	io->error = cfg.io_fail ? NBD_EIO : 0;
	io->done(io);
}

void nbd_io_submit(struct nbd_io *io)
{
	struct later *l;

	if (!cfg.io_later || io->cancelled) {
		io_now(io);
		return;
	}
	l = xzalloc(sizeof(*l));
	l->kind = L_IO;
	l->io = io;
	later_add(l);
}

static void list_now(void (*entry)(const char *name, void *arg),
		     void (*done)(void *arg), void *arg)
{
	if (cfg.list_some) {
		entry("alpha", arg);
		entry("", arg);
		entry("vdi-with-a-rather-long-name-0123456789", arg);
	}
	done(arg);
}

void nbd_list_vdis(void (*entry)(const char *name, void *arg),
		   void (*done)(void *arg), void *arg)
{
	struct later *l;

	if (!cfg.list_later) {
		list_now(entry, done, arg);
		return;
	}
	l = xzalloc(sizeof(*l));
	l->kind = L_LIST;
	l->list_entry = entry;
	l->list_done = done;
	l->arg = arg;
	later_add(l);
}

static bool run_one_later(void)
{
	struct later *l = later_head;

	if (!l)
		return false;
	later_head = l->next;
	if (!later_head)
		later_tail = &later_head;
	if (l->kind == L_OPEN)
		open_now(&l->open);
	else if (l->kind == L_IO)
		io_now(l->io);
	else
		list_now(l->list_entry, l->list_done, l->arg);
	free(l);
	return true;
}

/* ---- timers (the harness is the loop) ---- */

static LIST_HEAD(timers);

void timer_add(struct event_loop *loop, struct timer *t, uint64_t ms)
{
	if (t->armed)
		list_del(&t->list);
	t->when = ms;
	t->armed = 1;
	list_add_tail(&t->list, &timers);
}

void timer_del(struct timer *t)
{
	if (t->armed)
		list_del(&t->list);
	t->armed = 0;
}

/* fire the first timer due now (or any, with @all) */
static bool fire_timer(bool all)
{
	struct timer *t;

	list_for_each_entry(t, &timers, list) {
		if (t->when && !all)
			continue;
		list_del(&t->list);
		t->armed = 0;
		t->fn(t);
		return true;
	}
	return false;
}

/* ---- the connection ---- */

struct fake_conn {
	const struct transport *xp;	/* struct xconn_base */
	const struct xconn_ops *ops;
	void *arg;
	void *rbuf;
	size_t rlen;
	bool posted;
	bool gone;
	size_t sent;
};

static struct fake_conn conn;
static xaccept_fn accept_fn;
static void *accept_arg;

static void fx_set_ops(struct xconn *c, const struct xconn_ops *ops,
		       void *arg)
{
	conn.ops = ops;
	conn.arg = arg;
}

static void fx_recv(struct xconn *c, void *buf, size_t len)
{
	if (conn.gone || conn.posted)
		die("receive posted on a %s connection\n",
		    conn.gone ? "closed" : "busy");
	conn.rbuf = buf;
	conn.rlen = len;
	conn.posted = true;
}

static void fx_send(struct xconn *c, struct xmsg *m)
{
	if (conn.gone)
		die("send on a closed connection\n");
	if (m->nr_iov < 1 || m->nr_iov > XMSG_MAX_IOV)
		die("message of %d buffers\n", m->nr_iov);
	for (int i = 0; i < m->nr_iov; i++) {
		/* the bytes must be readable: ASan checks the copy */
		if (m->iov[i].iov_len) {
			uint8_t *copy = xmalloc(m->iov[i].iov_len);

			memcpy(copy, m->iov[i].iov_base, m->iov[i].iov_len);
			free(copy);
		}
		conn.sent += m->iov[i].iov_len;
	}
	m->done(m, 0);
}

static void fx_close(struct xconn *c)
{
	conn.gone = true;
	conn.posted = false;
}

static size_t fx_backlog(const struct xconn *c)
{
	return 0;
}

/* receives complete whole or not at all here */
static size_t fx_recv_got(const struct xconn *c)
{
	return 0;
}

static int fx_peer_addr(const struct xconn *c, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

static bool fx_connected(const struct xconn *x)
{
	(void)x;
	return true;
}

static const struct transport fake_transport = {
	.name = "fuzz",
	.set_ops = fx_set_ops,
	.recv = fx_recv,
	.send = fx_send,
	.close = fx_close,
	.send_backlog = fx_backlog,
	.connected = fx_connected,
	.recv_got = fx_recv_got,
	.peer_addr = fx_peer_addr,
};

struct xlistener *tcp_listen(struct event_loop *loop, const char *bindaddr,
			     int port, int max, const char *what,
			     xaccept_fn fn, void *arg)
{
	static char token;

	accept_fn = fn;
	accept_arg = arg;
	return (struct xlistener *)&token;
}

/* hand the next posted receive its bytes; false when the input ran out */
static bool deliver(struct fuzz_in *in)
{
	const uint8_t *p = take_ptr(in, conn.rlen);

	if (!p)
		return false;
	if (conn.rbuf)
		memcpy(conn.rbuf, p, conn.rlen);
	conn.posted = false;
	conn.ops->recv_done((struct xconn *)&conn, conn.arg);
	return true;
}

static void drive(struct fuzz_in *in)
{
	while (!conn.gone) {
		if (conn.posted) {
			if (!deliver(in))
				break;
			run_one_later();
		} else if (!fire_timer(false) && !run_one_later()) {
			break;		/* the server waits for nothing */
		}
	}
	/* time passes: the handshake timer fires (the stall timer re-arms
	 * itself while the connection lives: a bounded number of rounds) */
	for (int i = 0; i < 8 && !conn.gone && cfg.hs_timeout; i++)
		if (!fire_timer(true))
			break;
	if (!conn.gone) {
		/* the client hung up */
		conn.gone = true;
		conn.posted = false;
		conn.ops->closed((struct xconn *)&conn, conn.arg);
	}
	while (run_one_later() || fire_timer(false))
		;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_open("/dev/null", LOG_L_DEBUG, false);
	if (nbd_configure("10809") || nbd_init(NULL) || !accept_fn)
		die("nbd_init did not listen\n");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in;

	fuzz_in_init(&in, data, size);
	read_config(&in);
	memset(&conn, 0, sizeof(conn));
	conn.xp = &fake_transport;
	if (accept_fn((struct xconn *)&conn, accept_arg))
		return 0;
	drive(&in);
	if (nr_exports)
		die("%d export(s) left open\n", nr_exports);
	if (!list_empty(&timers))
		die("a timer is still armed after the connection is gone\n");
	/* every payload byte charged to the daemon's budget came back */
	if (budget_over((uint64_t)SD_DEFAULT_BUDGET_MB << 20, true))
		die("payload budget still charged after the connection\n");
	return 0;
}
