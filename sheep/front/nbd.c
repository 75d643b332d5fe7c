// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NBD server: sheep --nbd [ADDR:]PORT exports every VDI to stock NBD
 * clients (QEMU's nbd:// driver, qemu-img, fio, libnbd).  The export name
 * is the VDI name; "VDI@TAG" or "VDI@SNAPID" exports a snapshot read-only.
 *
 * Fixed-newstyle handshake only.  Options: EXPORT_NAME, GO, INFO, LIST,
 * ABORT; STRUCTURED_REPLY and everything else are answered ERR_UNSUP, so
 * replies are simple replies.  Commands: READ, WRITE, FLUSH, TRIM,
 * WRITE_ZEROES (with FUA and NO_HOLE) and DISC; many in flight per
 * connection, answered in completion order.
 *
 * A writable export takes the VDI lock (LOCK_VDI with SD_FLAG_CMD_KLOCK):
 * one writer per VDI in the whole cluster, so a second writable connection
 * anywhere, on this node too, is refused with ERR_UNKNOWN and a message.
 * The lock goes with RELEASE_VDI once the connection and its commands are
 * gone, or with the node if it dies.  Snapshot exports take no lock.
 *
 * Everything runs on the main loop, over the transport interface.  Every
 * length from the network is bounded before anything is allocated: option
 * data (NBD_MAX_OPT_LEN), payloads (NBD_MAX_PAYLOAD), commands in flight
 * per connection, payload bytes per connection and against the daemon's
 * budget (core/), beyond which a connection is no longer read until
 * commands complete, and WRITE payloads still on their way per client
 * address, counted with the client port's (front/slots.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "nbd.h"
#include "net.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "front/slots.h"
#include "net/stall.h"
#include "net/transport.h"

#define NBD_INIT_MAGIC		0x4e42444d41474943ULL /* "NBDMAGIC" */
#define NBD_OPTS_MAGIC		0x49484156454f5054ULL /* "IHAVEOPT" */
#define NBD_REP_MAGIC		0x0003e889045565a9ULL
#define NBD_REQUEST_MAGIC	0x25609513U
#define NBD_SIMPLE_REPLY_MAGIC	0x67446698U

/* handshake flags, server and client */
#define NBD_FLAG_FIXED_NEWSTYLE	(1 << 0)
#define NBD_FLAG_NO_ZEROES	(1 << 1)
#define NBD_FLAG_C_MASK	(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES)

/* transmission flags */
#define NBD_FLAG_HAS_FLAGS		(1 << 0)
#define NBD_FLAG_READ_ONLY		(1 << 1)
#define NBD_FLAG_SEND_FLUSH		(1 << 2)
#define NBD_FLAG_SEND_FUA		(1 << 3)
#define NBD_FLAG_SEND_TRIM		(1 << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES	(1 << 6)
#define NBD_FLAG_CAN_MULTI_CONN		(1 << 8)

/* options and option replies */
#define NBD_OPT_EXPORT_NAME	1
#define NBD_OPT_ABORT		2
#define NBD_OPT_LIST		3
#define NBD_OPT_INFO		6
#define NBD_OPT_GO		7

#define NBD_REP_ACK		1
#define NBD_REP_SERVER		2
#define NBD_REP_INFO		3
#define NBD_REP_ERR_UNSUP	0x80000001U
#define NBD_REP_ERR_INVALID	0x80000003U
#define NBD_REP_ERR_UNKNOWN	0x80000006U

#define NBD_INFO_EXPORT		0
#define NBD_INFO_BLOCK_SIZE	3

/* limits */
#define NBD_MAX_OPT_LEN		8192	/* option data */
#define NBD_MAX_NAME_LEN	4096	/* NBD strings */
#define NBD_MAX_CONNS		256
#define NBD_CONN_MAX_CMDS	64
#define NBD_CONN_MAX_TX		64	/* queued option replies */
#define NBD_CONN_MAX_BYTES	(64U << 20)
#define NBD_HANDSHAKE_MS	30000
#define NBD_PREFERRED_BLOCK	4096

enum rx_state {
	RX_CFLAGS,		/* client flags, 4 bytes */
	RX_OPT_HDR,		/* option header, 16 bytes */
	RX_OPT_DATA,
	RX_WAIT,		/* an option is being answered */
	RX_REQ_HDR,		/* transmission: request header, 28 bytes */
	RX_REQ_DATA,		/* WRITE payload */
	RX_PARKED,		/* a request waits for payload budget */
	RX_DISCARD,		/* payload of a refused request */
	RX_DONE,		/* DISC or ABORT: nothing more is read */
};

struct nbd_cmd;

struct nbd_conn {
	struct xconn *xc;
	int refcnt;
	bool dead;
	bool no_zeroes;
	bool blocked;		/* on the blocked list */
	bool close_when_idle;
	enum rx_state state;
	/* receive side */
	uint8_t hdr[28];
	uint8_t *rxbuf;
	uint32_t rxlen;
	bool rx_posted;		/* a receive is posted for the state */
	uint32_t opt, optlen;
	uint8_t *optdata;
	uint64_t discard;
	struct nbd_cmd *rx_cmd;
	uint8_t addr[16];	/* the client's, node_id form (front/slots.c) */
	/* the request being decoded */
	uint16_t req_flags, req_type;
	uint64_t req_handle, req_off;
	uint32_t req_len;
	int req_err;
	/* transmission */
	struct nbd_export *ex;
	int nr_cmds;		/* requests whose reply is not sent yet */
	uint64_t bytes;		/* payload buffers held */
	struct list_head cmds;	/* submitted */
	int nr_tx;		/* messages queued on the transport */
	struct list_head blocked_list;
	struct timer hs_timer;
	/* stall detection (check_stalled) */
	struct list_head all_list;
	struct stall_watch stall;
};

struct nbd_cmd {
	struct nbd_io io;
	struct nbd_conn *c;
	uint64_t handle;
	uint32_t bytes;
	struct list_head list;
};

struct nbd_tx {
	struct xmsg msg;
	struct nbd_conn *c;
	uint8_t hdr[32];
	uint32_t hlen;
	uint8_t *data;		/* owned */
	uint32_t dlen;
	uint32_t bytes;		/* payload budget to give back */
	bool is_reply;		/* ends a request: counts in nr_cmds */
};

static char nbd_addr[256];
static int nbd_port;
static struct xlistener *listener;
static LIST_HEAD(blocked_conns);
static LIST_HEAD(all_conns);
static size_t nr_conns;
static struct timer resume_timer;
static struct timer stall_timer;

static void conn_pump(struct nbd_conn *c);
static void maybe_close_idle(struct nbd_conn *c);
static void conn_close(struct nbd_conn *c);

/* ---- big-endian fields ---- */

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* ---- connection lifetime and flow control ---- */

static void conn_put(struct nbd_conn *c)
{
	if (--c->refcnt)
		return;
	if (c->ex)
		nbd_export_close(c->ex);
	free(c);
}

static void bytes_put(struct nbd_conn *c, uint32_t n)
{
	if (!n)
		return;
	c->bytes -= n;
	budget_release(n);	/* resumes blocked connections */
}

/* budget came back (from any request of the daemon) */
static void budget_released(void)
{
	if (!list_empty(&blocked_conns) && !resume_timer.armed)
		timer_add(sys.loop, &resume_timer, 0);
}

static bool can_read(const struct nbd_conn *c)
{
	switch (c->state) {
	case RX_WAIT:
	case RX_DONE:
	case RX_PARKED:
		return false;
	case RX_REQ_HDR:
		return c->nr_cmds < NBD_CONN_MAX_CMDS;
	default:
		/* a client that sends options but reads no replies */
		return c->nr_tx < NBD_CONN_MAX_TX;
	}
}

static void conn_block(struct nbd_conn *c)
{
	if (!c->blocked) {
		c->blocked = true;
		list_add_tail(&c->blocked_list, &blocked_conns);
	}
}

static void conn_unblock(struct nbd_conn *c)
{
	if (c->blocked) {
		c->blocked = false;
		list_del(&c->blocked_list);
	}
}

static void tx_free(struct nbd_conn *c, struct nbd_tx *tx)
{
	c->nr_tx--;
	free(tx->data);
	bytes_put(c, tx->bytes);
	if (tx->is_reply) {
		c->nr_cmds--;
		if (!list_empty(&blocked_conns) || c->blocked)
			timer_add(sys.loop, &resume_timer, 0);
		conn_put(c);
	}
	free(tx);
}

/* written, or dropped with the connection */
static void tx_done(struct xmsg *m, int err)
{
	struct nbd_tx *tx = container_of(m, struct nbd_tx, msg);
	struct nbd_conn *c = tx->c;

	c->refcnt++;
	tx_free(c, tx);
	if (!err && !c->dead) {
		/*
		 * Reading may have waited for replies to drain.  Pump from
		 * the loop: this may run inside xconn_send(), in the middle
		 * of a state change.
		 */
		if (!c->rx_posted && !c->blocked) {
			conn_block(c);
			timer_add(sys.loop, &resume_timer, 0);
		}
		maybe_close_idle(c);
	}
	conn_put(c);
}

static struct nbd_tx *tx_new(struct nbd_conn *c, const void *hdr,
			     uint32_t hlen, const void *data, uint32_t dlen)
{
	struct nbd_tx *tx = xzalloc(sizeof(*tx));

	tx->c = c;
	memcpy(tx->hdr, hdr, hlen);
	tx->hlen = hlen;
	if (dlen) {
		tx->data = xmalloc(dlen);
		memcpy(tx->data, data, dlen);
		tx->dlen = dlen;
	}
	c->nr_tx++;
	return tx;
}

/* hand @tx to the transport; it goes out after those before it */
static void tx_send(struct nbd_conn *c, struct nbd_tx *tx)
{
	tx->msg.iov[0].iov_base = tx->hdr;
	tx->msg.iov[0].iov_len = tx->hlen;
	tx->msg.iov[1].iov_base = tx->data;
	tx->msg.iov[1].iov_len = tx->dlen;
	tx->msg.nr_iov = tx->dlen ? 2 : 1;
	tx->msg.done = tx_done;
	if (c->dead) {
		tx_free(c, tx);
		return;
	}
	xconn_send(c->xc, &tx->msg);
}

static void cmd_free(struct nbd_cmd *cmd)
{
	struct nbd_conn *c = cmd->c;

	free(cmd->io.buf);
	bytes_put(c, cmd->bytes);
	free(cmd);
}

/* the end of the connection; the transport is gone or asked to go */
static void conn_gone(struct nbd_conn *c, bool close_xconn)
{
	struct nbd_cmd *cmd;

	if (c->dead)
		return;
	c->dead = true;
	c->refcnt++;
	timer_del(&c->hs_timer);
	list_del(&c->all_list);
	nr_conns--;
	INIT_LIST_HEAD(&c->all_list);
	if (list_empty(&all_conns))
		timer_del(&stall_timer);	/* nothing to watch */
	conn_unblock(c);
	free(c->optdata);
	c->optdata = NULL;
	if (c->rx_cmd) {
		/* a WRITE whose payload never fully arrived */
		slots_incomplete_sub(c->addr, c->rx_cmd->bytes);
		c->nr_cmds--;
		cmd_free(c->rx_cmd);
		c->rx_cmd = NULL;
		conn_put(c);
	}
	if (close_xconn)
		xconn_close(c->xc);	/* replies it cannot write: -1 */
	c->xc = NULL;
	list_for_each_entry(cmd, &c->cmds, list)
		cmd->io.cancelled = true;
	if (c->ex)
		nbd_export_detach(c->ex);
	slots_untrack(c->addr);
	c->refcnt--;	/* the connection's: ours keeps c until here */
	conn_put(c);
}

static void conn_close(struct nbd_conn *c)
{
	conn_gone(c, true);
}

/* connections that wait for budget or for their replies to drain */
static void resume_blocked(struct timer *t)
{
	struct nbd_conn *c, *n;
	LIST_HEAD(todo);

	list_for_each_entry_safe(c, n, &blocked_conns, blocked_list) {
		c->blocked = false;
		list_del(&c->blocked_list);
		list_add_tail(&c->blocked_list, &todo);
		c->refcnt++;
	}
	while (!list_empty(&todo)) {
		c = list_first_entry(&todo, struct nbd_conn, blocked_list);
		list_del(&c->blocked_list);
		INIT_LIST_HEAD(&c->blocked_list);
		conn_pump(c);
		conn_put(c);
	}
}

static void maybe_close_idle(struct nbd_conn *c)
{
	if (!c->dead && c->close_when_idle && !c->nr_cmds && !c->nr_tx &&
	    !c->rx_cmd)
		conn_close(c);
}

/* ---- option phase ---- */

static void opt_reply(struct nbd_conn *c, uint32_t opt, uint32_t type,
		      const void *data, uint32_t len)
{
	uint8_t h[20];

	put_be64(h, NBD_REP_MAGIC);
	put_be32(h + 8, opt);
	put_be32(h + 12, type);
	put_be32(h + 16, len);
	tx_send(c, tx_new(c, h, sizeof(h), data, len));
}

static void opt_error(struct nbd_conn *c, uint32_t opt, uint32_t type,
		      const char *msg)
{
	opt_reply(c, opt, type, msg, (uint32_t)strlen(msg));
}

static uint16_t export_flags(const struct nbd_export *ex)
{
	uint16_t f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH;

	/* a snapshot never changes: any number of connections may share */
	if (nbd_export_readonly(ex))
		return f | NBD_FLAG_READ_ONLY | NBD_FLAG_CAN_MULTI_CONN;
	return f | NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_TRIM |
	       NBD_FLAG_SEND_WRITE_ZEROES;
}

static void send_info(struct nbd_conn *c, uint32_t opt)
{
	uint8_t info[14];

	put_be16(info, NBD_INFO_EXPORT);
	put_be64(info + 2, nbd_export_size(c->ex));
	put_be16(info + 10, export_flags(c->ex));
	opt_reply(c, opt, NBD_REP_INFO, info, 12);
	put_be16(info, NBD_INFO_BLOCK_SIZE);
	put_be32(info + 2, 1);
	put_be32(info + 6, NBD_PREFERRED_BLOCK);
	put_be32(info + 10, NBD_MAX_PAYLOAD);
	opt_reply(c, opt, NBD_REP_INFO, info, 14);
	opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
}

static void start_transmission(struct nbd_conn *c)
{
	timer_del(&c->hs_timer);
	c->state = RX_REQ_HDR;
	c->rxbuf = c->hdr;
	c->rxlen = 28;
}

static void next_option(struct nbd_conn *c)
{
	c->state = RX_OPT_HDR;
	c->rxbuf = c->hdr;
	c->rxlen = 16;
}

static const char *open_error(uint32_t res)
{
	switch (res) {
	case SD_RES_NO_VDI:
		return "no such VDI";
	case SD_RES_NO_TAG:
		return "no such snapshot";
	case SD_RES_VDI_LOCKED:
		return "VDI is locked: it has a writer already (one writer per"
		       " VDI in the cluster)";
	case SD_RES_INVALID_PARMS:
		return "invalid export name (VDI, VDI@TAG or VDI@SNAPID)";
	case SD_RES_NO_SUPPORT:
		return "this VDI cannot be exported (hyper volume)";
	default:
		return sd_strerror(res);
	}
}

static void opened(struct nbd_export *ex, uint32_t res, void *arg)
{
	struct nbd_conn *c = arg;
	uint32_t opt = c->opt;
	uint8_t r[134] = { 0 };

	if (c->dead) {
		if (ex)
			nbd_export_close(ex);
		conn_put(c);
		return;
	}
	if (!ex) {
		sd_info("NBD: refused export: %s", open_error(res));
		if (opt == NBD_OPT_EXPORT_NAME) {
			conn_close(c);		/* no way to say why */
		} else {
			opt_error(c, opt, NBD_REP_ERR_UNKNOWN, open_error(res));
			next_option(c);
		}
		goto out;
	}
	c->ex = ex;
	if (opt == NBD_OPT_EXPORT_NAME) {
		put_be64(r, nbd_export_size(ex));
		put_be16(r + 8, export_flags(ex));
		tx_send(c, tx_new(c, r, 10, r + 10, c->no_zeroes ? 0 : 124));
		start_transmission(c);
	} else if (opt == NBD_OPT_GO) {
		send_info(c, opt);
		start_transmission(c);
	} else {
		send_info(c, opt);
		c->ex = NULL;
		nbd_export_close(ex);
		next_option(c);
	}
out:
	conn_pump(c);
	conn_put(c);
}

static void open_export(struct nbd_conn *c, const char *name)
{
	struct nbd_open_args a = {
		.export_name = name,
		/* INFO only looks: no lock */
		.lock = c->opt != NBD_OPT_INFO,
		.done = opened,
		.arg = c,
	};

	c->state = RX_WAIT;
	c->refcnt++;
	nbd_export_open(&a);
}

static void list_entry_cb(const char *name, void *arg)
{
	struct nbd_conn *c = arg;
	uint32_t len = (uint32_t)strlen(name);
	uint8_t *d;

	if (c->dead)
		return;
	d = xmalloc(4 + len);
	put_be32(d, len);
	memcpy(d + 4, name, len);
	opt_reply(c, NBD_OPT_LIST, NBD_REP_SERVER, d, 4 + len);
	free(d);
}

static void list_done_cb(void *arg)
{
	struct nbd_conn *c = arg;

	if (!c->dead) {
		opt_reply(c, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
		next_option(c);
		conn_pump(c);
	}
	conn_put(c);
}

/* NBD_OPT_INFO / NBD_OPT_GO: name length, name, info requests */
static void opt_go(struct nbd_conn *c, const uint8_t *d, uint32_t len)
{
	char name[NBD_MAX_NAME_LEN + 1];
	uint32_t nlen;

	if (len < 6)
		goto invalid;
	nlen = get_be32(d);
	if (nlen > len - 6 || nlen > NBD_MAX_NAME_LEN ||
	    len != 6 + nlen + 2 * (uint32_t)get_be16(d + 4 + nlen))
		goto invalid;
	memcpy(name, d + 4, nlen);
	name[nlen] = 0;
	if (!nlen || strlen(name) != nlen) {
		opt_error(c, c->opt, NBD_REP_ERR_UNKNOWN,
			  "no default export: name a VDI");
		return;
	}
	open_export(c, name);
	return;
invalid:
	opt_error(c, c->opt, NBD_REP_ERR_INVALID, "malformed option data");
}

static void opt_export_name(struct nbd_conn *c, const uint8_t *d,
			    uint32_t len)
{
	char name[NBD_MAX_NAME_LEN + 1];

	if (!len || len > NBD_MAX_NAME_LEN || memchr(d, 0, len)) {
		conn_close(c);
		return;
	}
	memcpy(name, d, len);
	name[len] = 0;
	open_export(c, name);
}

static void handle_option(struct nbd_conn *c)
{
	uint8_t *d = c->optdata;
	uint32_t len = c->optlen;

	c->optdata = NULL;
	switch (c->opt) {
	case NBD_OPT_EXPORT_NAME:
		opt_export_name(c, d, len);
		break;
	case NBD_OPT_ABORT:
		opt_reply(c, c->opt, NBD_REP_ACK, NULL, 0);
		c->state = RX_DONE;
		c->close_when_idle = true;
		break;
	case NBD_OPT_LIST:
		if (len) {
			opt_error(c, c->opt, NBD_REP_ERR_INVALID,
				  "LIST takes no data");
			break;
		}
		c->state = RX_WAIT;
		c->refcnt++;
		nbd_list_vdis(list_entry_cb, list_done_cb, c);
		break;
	case NBD_OPT_INFO:
	case NBD_OPT_GO:
		opt_go(c, d, len);
		break;
	default:
		/* STRUCTURED_REPLY, STARTTLS, meta contexts, unknown */
		opt_reply(c, c->opt, NBD_REP_ERR_UNSUP, NULL, 0);
		break;
	}
	free(d);
}

static void got_option_header(struct nbd_conn *c)
{
	if (get_be64(c->hdr) != NBD_OPTS_MAGIC) {
		sd_info("NBD: bad option magic; closing");
		conn_close(c);
		return;
	}
	c->opt = get_be32(c->hdr + 8);
	c->optlen = get_be32(c->hdr + 12);
	if (c->optlen > NBD_MAX_OPT_LEN) {
		sd_info("NBD: option %u with %u bytes of data; closing",
			c->opt, c->optlen);
		conn_close(c);
		return;
	}
	if (!c->optlen) {
		c->optdata = NULL;
		next_option(c);
		handle_option(c);
		return;
	}
	c->optdata = xmalloc(c->optlen);
	c->state = RX_OPT_DATA;
	c->rxbuf = c->optdata;
	c->rxlen = c->optlen;
}

/* ---- transmission phase ---- */

static void simple_reply(struct nbd_conn *c, uint64_t handle, int err,
			 uint8_t *data, uint32_t dlen, uint32_t bytes)
{
	uint8_t h[16];
	struct nbd_tx *tx;

	put_be32(h, NBD_SIMPLE_REPLY_MAGIC);
	put_be32(h + 4, (uint32_t)err);
	put_be64(h + 8, handle);
	tx = tx_new(c, h, sizeof(h), NULL, 0);
	tx->data = data;	/* handed over */
	tx->dlen = dlen;
	tx->bytes = bytes;
	tx->is_reply = true;
	tx_send(c, tx);
}

static void cmd_done(struct nbd_io *io)
{
	struct nbd_cmd *cmd = container_of(io, struct nbd_cmd, io);
	struct nbd_conn *c = cmd->c;
	bool data = io->type == NBD_CMD_READ && !io->error;

	list_del(&cmd->list);
	if (c->dead) {
		c->nr_cmds--;
		cmd_free(cmd);
		conn_put(c);
		return;
	}
	if (!data) {
		free(io->buf);
		bytes_put(c, cmd->bytes);
		cmd->bytes = 0;
		io->buf = NULL;
	}
	/* the command's reference on c moves to its reply */
	simple_reply(c, cmd->handle, io->error, io->buf,
		     data ? io->len : 0, cmd->bytes);
	free(cmd);
	c->refcnt++;
	conn_pump(c);
	maybe_close_idle(c);
	conn_put(c);
}

static void cmd_submit(struct nbd_cmd *cmd)
{
	list_add_tail(&cmd->list, &cmd->c->cmds);
	nbd_io_submit(&cmd->io);
}

/* the daemon's payload budget (core), and this connection's share */
static bool budget_ok(const struct nbd_conn *c, uint32_t len)
{
	if (!len)
		return true;
	if (c->bytes && c->bytes + len > NBD_CONN_MAX_BYTES)
		return false;
	return !budget_over(len, false);
}

static void reply_now(struct nbd_conn *c, uint64_t handle, int err)
{
	c->nr_cmds++;
	c->refcnt++;
	simple_reply(c, handle, err, NULL, 0, 0);
}

/* a valid request: a command for the export */
static void start_cmd(struct nbd_conn *c)
{
	struct nbd_cmd *cmd;
	bool payload = c->req_type == NBD_CMD_WRITE ||
		       c->req_type == NBD_CMD_READ;
	uint32_t len = payload ? c->req_len : 0;

	if (!budget_ok(c, len) ||
	    (c->req_type == NBD_CMD_WRITE && len &&
	     slots_incomplete_full(c->addr, len))) {
		c->state = RX_PARKED;
		conn_block(c);
		return;
	}
	cmd = xzalloc(sizeof(*cmd));
	cmd->c = c;
	cmd->handle = c->req_handle;
	cmd->io.ex = c->ex;
	cmd->io.type = c->req_type;
	cmd->io.flags = c->req_flags;
	cmd->io.off = c->req_off;
	cmd->io.len = c->req_len;
	cmd->io.done = cmd_done;
	INIT_LIST_HEAD(&cmd->list);
	if (len) {
		/* whole pages may go to an O_DIRECT store as they are (-D) */
		cmd->io.buf = len >= 4096 ? xmalloc_pages(len) : xmalloc(len);
		cmd->bytes = len;
		c->bytes += len;
		budget_charge(len);
	}
	c->nr_cmds++;
	c->refcnt++;
	start_transmission(c);
	if (c->req_type == NBD_CMD_WRITE && len) {
		slots_incomplete_add(c->addr, len);
		c->rx_cmd = cmd;
		c->state = RX_REQ_DATA;
		c->rxbuf = cmd->io.buf;
		c->rxlen = len;
		return;
	}
	cmd_submit(cmd);
}

static bool out_of_range(const struct nbd_conn *c)
{
	uint64_t size = nbd_export_size(c->ex);

	return c->req_len > size || c->req_off > size - c->req_len;
}

/* NBD error for a request, or 0 to run it */
static int check_request(struct nbd_conn *c)
{
	bool ro = nbd_export_readonly(c->ex);
	uint16_t fl = c->req_flags;

	switch (c->req_type) {
	case NBD_CMD_READ:
		if ((fl & ~NBD_CMD_FLAG_FUA) || c->req_len > NBD_MAX_PAYLOAD ||
		    out_of_range(c))
			return NBD_EINVAL;
		return 0;
	case NBD_CMD_WRITE:
		if (fl & ~NBD_CMD_FLAG_FUA)
			return NBD_EINVAL;
		if (ro)
			return NBD_EPERM;
		return out_of_range(c) ? NBD_ENOSPC : 0;
	case NBD_CMD_FLUSH:
		return (fl & ~NBD_CMD_FLAG_FUA) ? NBD_EINVAL : 0;
	case NBD_CMD_TRIM:
		if (fl & ~NBD_CMD_FLAG_FUA)
			return NBD_EINVAL;
		if (ro)
			return NBD_EPERM;
		return out_of_range(c) ? NBD_EINVAL : 0;
	case NBD_CMD_WRITE_ZEROES:
		if (fl & ~(NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE))
			return NBD_EINVAL;
		if (ro)
			return NBD_EPERM;
		return out_of_range(c) ? NBD_ENOSPC : 0;
	default:
		return NBD_EINVAL;	/* unknown command */
	}
}

static void got_request(struct nbd_conn *c)
{
	const uint8_t *h = c->hdr;

	if (get_be32(h) != NBD_REQUEST_MAGIC) {
		sd_info("NBD: bad request magic; closing");
		conn_close(c);
		return;
	}
	c->req_flags = get_be16(h + 4);
	c->req_type = get_be16(h + 6);
	c->req_handle = get_be64(h + 8);
	c->req_off = get_be64(h + 16);
	c->req_len = get_be32(h + 24);
	if (c->req_type == NBD_CMD_DISC) {
		c->state = RX_DONE;
		c->close_when_idle = true;
		return;
	}
	if (c->req_type == NBD_CMD_WRITE && c->req_len > NBD_MAX_PAYLOAD) {
		/* more than we ever said we take: not worth draining */
		sd_info("NBD: %u-byte write; closing", c->req_len);
		conn_close(c);
		return;
	}
	c->req_err = check_request(c);
	if (!c->req_err) {
		start_cmd(c);
		return;
	}
	if (c->req_type == NBD_CMD_WRITE && c->req_len) {
		c->state = RX_DISCARD;
		c->discard = c->req_len;
		return;
	}
	reply_now(c, c->req_handle, c->req_err);
}

static void rx_complete(struct nbd_conn *c)
{
	struct nbd_cmd *cmd;
	uint32_t flags;

	switch (c->state) {
	case RX_CFLAGS:
		flags = get_be32(c->hdr);
		if (flags & ~NBD_FLAG_C_MASK) {
			sd_info("NBD: unknown client flags %x; closing", flags);
			conn_close(c);
			return;
		}
		c->no_zeroes = flags & NBD_FLAG_NO_ZEROES;
		next_option(c);
		break;
	case RX_OPT_HDR:
		got_option_header(c);
		break;
	case RX_OPT_DATA:
		next_option(c);
		handle_option(c);
		break;
	case RX_REQ_HDR:
		got_request(c);
		break;
	case RX_REQ_DATA:
		cmd = c->rx_cmd;
		c->rx_cmd = NULL;
		slots_incomplete_sub(c->addr, cmd->bytes);
		start_transmission(c);
		cmd_submit(cmd);
		break;
	default:
		break;
	}
}

/* post the receive the state asks for, unless the connection must wait */
static void conn_pump(struct nbd_conn *c)
{
	if (c->dead || c->rx_posted)
		return;
	if (c->state == RX_PARKED) {
		start_cmd(c);
		if (c->state == RX_PARKED || c->dead || c->rx_posted)
			return;
	}
	if (!can_read(c)) {
		if (c->state == RX_REQ_HDR)
			conn_block(c);	/* too many in flight */
		return;
	}
	c->rx_posted = true;
	if (c->state == RX_DISCARD)
		xconn_recv(c->xc, NULL, c->discard);
	else
		xconn_recv(c->xc, c->rxbuf, c->rxlen);
}

static void conn_recv_done(struct xconn *xc, void *arg)
{
	struct nbd_conn *c = arg;

	c->refcnt++;
	c->rx_posted = false;
	if (c->state == RX_DISCARD) {
		/* the payload of a refused WRITE is gone: answer it */
		c->discard = 0;
		start_transmission(c);
		reply_now(c, c->req_handle, c->req_err);
	} else {
		rx_complete(c);
	}
	conn_pump(c);
	maybe_close_idle(c);
	conn_put(c);
}

static void conn_closed(struct xconn *xc, void *arg)
{
	conn_gone(arg, false);
}

static const struct xconn_ops nbd_conn_ops = {
	.recv_done = conn_recv_done,
	.closed = conn_closed,
};

static void handshake_timeout(struct timer *t)
{
	struct nbd_conn *c = container_of(t, struct nbd_conn, hs_timer);

	sd_info("NBD: handshake timed out; closing");
	c->refcnt++;
	conn_close(c);
	conn_put(c);
}

/*
 * A client that stops reading its replies holds their buffers, one that
 * sends half a request holds a connection and maybe a payload buffer:
 * once either has not moved for SD_CLIENT_STALL_MS, it is disconnected.
 * A client idle between requests stays (a VM may be quiet for hours).
 * The handshake has its own timer; a connection parked for budget waits
 * for us, not for the client.
 */
static void check_stalled(struct timer *t)
{
	static struct log_limit ll[STALL_SLOW + 1];	/* one per cause */
	uint64_t now = now_msec();
	struct nbd_conn *c, *n;

	list_for_each_entry_safe(c, n, &all_conns, all_list) {
		size_t got = c->rx_posted ? xconn_recv_got(c->xc) : 0;
		bool begun = (c->state == RX_REQ_HDR && got) ||
			     c->state == RX_REQ_DATA || c->state == RX_DISCARD;
		enum stall st = stall_check(&c->stall, c->xc, begun, got, now);

		if (st == STALL_NONE)
			continue;
		sd_warn_limited(&ll[st], "NBD: a client %s: disconnecting it",
				stall_reason(st));
		c->refcnt++;
		conn_close(c);
		conn_put(c);
	}
	if (!list_empty(&all_conns))
		timer_add(sys.loop, t, STALL_CHECK_MS);
}

static void greet(struct nbd_conn *c)
{
	uint8_t g[18];

	put_be64(g, NBD_INIT_MAGIC);
	put_be64(g + 8, NBD_OPTS_MAGIC);
	put_be16(g + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
	tx_send(c, tx_new(c, g, sizeof(g), NULL, 0));
	c->state = RX_CFLAGS;
	c->rxbuf = c->hdr;
	c->rxlen = 4;
	conn_pump(c);
}

static int nbd_accept(struct xconn *xc, void *arg)
{
	struct nbd_conn *c = xzalloc(sizeof(*c));
	struct sockaddr_storage ss = { 0 };

	/* another family (the fuzzer's) counts as the all-zero address */
	if (!xconn_peer_addr(xc, &ss))
		net_sockaddr_to_addr(&ss, c->addr);
	slots_track(c->addr);
	c->xc = xc;
	c->refcnt = 1;
	INIT_LIST_HEAD(&c->cmds);
	INIT_LIST_HEAD(&c->blocked_list);
	list_add_tail(&c->all_list, &all_conns);
	nr_conns++;
	if (!stall_timer.armed)
		timer_add(sys.loop, &stall_timer, STALL_CHECK_MS);
	stall_watch_init(&c->stall, now_msec());
	c->hs_timer.fn = handshake_timeout;
	timer_add(sys.loop, &c->hs_timer, NBD_HANDSHAKE_MS);
	xconn_set_ops(xc, &nbd_conn_ops, c);
	c->refcnt++;
	greet(c);
	conn_put(c);
	return 0;
}

/* ---- configuration ---- */

/* "[ADDR:]PORT", ADDR may be "[IPv6]" */
int nbd_configure(const char *spec)
{
	return net_parse_listen(spec, nbd_addr, sizeof(nbd_addr), &nbd_port);
}

int nbd_init(const char *default_addr)
{
	const char *addr = nbd_addr[0] ? nbd_addr : default_addr;

	if (!nbd_port)
		return 0;
	resume_timer.fn = resume_blocked;
	budget_add_release_hook(budget_released);
	stall_timer.fn = check_stalled;
	listener = tcp_listen(sys.loop, addr, nbd_port, NBD_MAX_CONNS, "NBD",
			      nbd_accept, NULL);
	if (!listener) {
		sd_err("NBD: cannot listen on %s:%d: %m%s", addr ? addr : "*",
		       nbd_port, errno == EADDRINUSE ? " (another program "
		       "has it: give --nbd another port)" : "");
		return -1;
	}
	sd_notice("NBD export listening on %s:%d", addr ? addr : "*",
		  nbd_port);
	return 0;
}

size_t nbd_conn_count(void)
{
	return nr_conns;
}
