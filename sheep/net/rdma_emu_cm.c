// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emulation's connection manager: event channels, ids, the
 * rendezvous through socket files in $KELPIE_RDMA_EMU, and the handshake
 * (REQ, REP, RTU, REJ, DREQ frames) that produces the usual CM events.
 * An event channel's fd is an eventfd in semaphore mode, one count per
 * queued event, so it can sit in an epoll loop.  Ids destroyed while the
 * helper may hold them in a batch of epoll events are freed by the
 * helper (emu_cm_reap) after that batch.  The socket files are
 * rdma_emu_addr.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "net/rdma_emu.h"

LIST_HEAD(emu_ids);
static LIST_HEAD(emu_dead_ids);
static LIST_HEAD(emu_inherited);	/* a forked child's leftovers */

struct emu_event {
	struct rdma_cm_event ev;
	struct list_head list;
	uint8_t pdata[EMU_PDATA];
};

struct emu_channel {
	struct rdma_event_channel ch;
	struct list_head events;	/* not taken yet */
};

static struct emu_channel *to_chan(struct rdma_event_channel *ch)
{
	return container_of(ch, struct emu_channel, ch);
}

/* ---- events ---- */

static struct emu_event *post_event(struct emu_id *e,
				    enum rdma_cm_event_type type, int status,
				    const struct emu_cm_msg *m)
{
	struct emu_channel *c = to_chan(e->id.channel);
	struct emu_event *v = calloc(1, sizeof(*v));
	uint64_t one = 1;

	if (!v)
		return NULL;	/* out of memory: the event is lost */
	v->ev.id = &e->id;
	v->ev.event = type;
	v->ev.status = status;
	if (m) {
		memcpy(v->pdata, m->pdata, m->pdata_len);
		v->ev.param.conn.private_data = v->pdata;
		v->ev.param.conn.private_data_len = m->pdata_len;
		v->ev.param.conn.responder_resources = m->responder_resources;
		v->ev.param.conn.initiator_depth = m->initiator_depth;
		v->ev.param.conn.qp_num = m->qp_num;
	}
	list_add_tail(&v->list, &c->events);
	if (write(c->ch.fd, &one, sizeof(one)) < 0)
		return v;	/* only on a 2^64 backlog */
	return v;
}

struct rdma_event_channel *emu_create_event_channel(void)
{
	struct emu_channel *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	INIT_LIST_HEAD(&c->events);
	return &c->ch;
}

void emu_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct emu_channel *c = to_chan(ch);
	struct emu_event *v, *n;

	pthread_mutex_lock(&emu_lock);
	list_for_each_entry_safe(v, n, &c->events, list) {
		list_del(&v->list);
		free(v);
	}
	pthread_mutex_unlock(&emu_lock);
	close(ch->fd);
	free(c);
}

int emu_event_channel_fd(struct rdma_event_channel *ch)
{
	return ch->fd;
}

int emu_get_cm_event(struct rdma_event_channel *ch,
		     struct rdma_cm_event **event)
{
	struct emu_channel *c = to_chan(ch);
	struct emu_event *v;
	uint64_t n;

	for (;;) {
		/* blocks unless the caller made the fd non-blocking */
		if (read(ch->fd, &n, sizeof(n)) != sizeof(n))
			return -1;
		pthread_mutex_lock(&emu_lock);
		if (!list_empty(&c->events))
			break;
		/* the event of this count went with its id */
		pthread_mutex_unlock(&emu_lock);
	}
	v = list_first_entry(&c->events, struct emu_event, list);
	list_del(&v->list);
	v->ev.id->event = &v->ev;
	pthread_mutex_unlock(&emu_lock);
	*event = &v->ev;
	return 0;
}

int emu_ack_cm_event(struct rdma_cm_event *event)
{
	free(container_of(event, struct emu_event, ev));
	return 0;
}

/* ---- ids ---- */

static void poll_add(struct emu_id *e)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = e };

	if (!epoll_ctl(emu_epfd, EPOLL_CTL_ADD, e->fd, &ev))
		e->polled = true;
}

static void poll_del(struct emu_id *e)
{
	if (e->polled)
		epoll_ctl(emu_epfd, EPOLL_CTL_DEL, e->fd, NULL);
	e->polled = false;
	e->want_out = false;
}

void emu_cm_set_out(struct emu_id *e, bool want)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = e };

	if (!e->polled || e->want_out == want)
		return;
	if (want)
		ev.events |= EPOLLOUT;
	if (!epoll_ctl(emu_epfd, EPOLL_CTL_MOD, e->fd, &ev))
		e->want_out = want;
}

static struct emu_id *new_id(struct rdma_event_channel *ch, void *context,
			     enum rdma_port_space ps)
{
	struct emu_id *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->fd_kind = EMU_FD_CONN;
	e->fd = -1;
	e->id.channel = ch;
	e->id.context = context;
	e->id.ps = ps;
	e->id.qp_type = IBV_QPT_RC;
	list_add_tail(&e->list, &emu_ids);
	return e;
}

int emu_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id,
		  void *context, enum rdma_port_space ps)
{
	struct emu_id *e;

	/* RC only, and only with an event channel (no synchronous mode) */
	if (!ch || (ps != RDMA_PS_TCP && ps != RDMA_PS_IB)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&emu_lock);
	e = new_id(ch, context, ps);
	pthread_mutex_unlock(&emu_lock);
	if (!e)
		return -1;
	*id = &e->id;
	return 0;
}

/* unlink, close and hand to the helper to free (with emu_lock) */
static void kill_id(struct emu_id *e)
{
	poll_del(e);
	emu_wire_free(e);
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	e->dead = true;
	list_del(&e->list);
	list_add_tail(&e->list, &emu_dead_ids);
}

/* drop the events of @e not taken yet (and children never announced) */
static void drop_events(struct emu_id *e)
{
	struct emu_channel *c = to_chan(e->id.channel);
	struct emu_event *v, *n;

	list_for_each_entry_safe(v, n, &c->events, list) {
		if (v->ev.id != &e->id && v->ev.listen_id != &e->id)
			continue;
		if (v->ev.id != &e->id)
			kill_id(to_emu_id(v->ev.id));
		list_del(&v->list);
		free(v);
	}
}

int emu_destroy_id(struct rdma_cm_id *id)
{
	struct emu_id *e = to_emu_id(id), *c, *n;

	pthread_mutex_lock(&emu_lock);
	drop_events(e);
	if (e->fd_kind == EMU_FD_LISTEN) {
		unlink(e->path);
		list_for_each_entry_safe(c, n, &emu_ids, list)
			if (c->listener == e)
				kill_id(c);
	}
	kill_id(e);
	pthread_mutex_unlock(&emu_lock);
	return 0;
}

void emu_cm_reap(void)
{
	struct emu_id *e, *n;

	list_for_each_entry_safe(e, n, &emu_dead_ids, list) {
		list_del(&e->list);
		free(e);
	}
}

void emu_cm_forget_all(void)
{
	struct emu_id *e;

	/* the parent's sockets are the parent's: close our copies only */
	list_for_each_entry(e, &emu_ids, list)
		if (e->fd >= 0)
			close(e->fd);
	list_splice_tail_init(&emu_ids, &emu_inherited);
	list_splice_tail_init(&emu_dead_ids, &emu_inherited);
}

int emu_listen(struct rdma_cm_id *id, struct sockaddr *addr, int backlog)
{
	struct emu_id *e = to_emu_id(id);
	int fd, ret = -1;

	if (!addr || !emu_sa_len(addr)) {
		errno = EINVAL;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	pthread_mutex_lock(&emu_lock);
	if (e->state != EMU_IDLE) {
		errno = EINVAL;
		goto out;
	}
	memcpy(&id->route.addr.src_storage, addr, emu_sa_len(addr));
	if (emu_bind_listener(fd, e))
		goto out;
	if (listen(fd, backlog > 0 ? backlog : SOMAXCONN)) {
		unlink(e->path);
		goto out;
	}
	e->fd = fd;
	e->fd_kind = EMU_FD_LISTEN;
	e->state = EMU_LISTENING;
	id->verbs = &emu_ctx;
	poll_add(e);
	ret = 0;
out:
	if (ret)
		close(fd);
	pthread_mutex_unlock(&emu_lock);
	return ret;
}

int emu_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
		     struct sockaddr *dst, int timeout_ms)
{
	struct emu_id *e = to_emu_id(id);
	struct rdma_addr *a = &id->route.addr;

	if (!dst || !emu_sa_len(dst) ||
	    (src && src->sa_family != dst->sa_family)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&emu_lock);
	if (e->state != EMU_IDLE) {
		pthread_mutex_unlock(&emu_lock);
		errno = EINVAL;
		return -1;
	}
	memcpy(&a->dst_storage, dst, emu_sa_len(dst));
	/* one host: without a source, the destination's address is ours */
	memcpy(&a->src_storage, src ? src : dst, emu_sa_len(dst));
	if (!src)
		*emu_sa_port(&a->src_storage) = 0;
	id->verbs = &emu_ctx;
	id->port_num = 1;
	e->state = EMU_ADDR;
	post_event(e, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	pthread_mutex_unlock(&emu_lock);
	return 0;
}

int emu_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct emu_id *e = to_emu_id(id);
	int ret = 0;

	pthread_mutex_lock(&emu_lock);
	if (e->state == EMU_ADDR) {
		e->state = EMU_ROUTE;
		post_event(e, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	} else {
		errno = EINVAL;
		ret = -1;
	}
	pthread_mutex_unlock(&emu_lock);
	return ret;
}

static void conn_msg(struct emu_id *e, struct emu_cm_msg *m,
		     const struct rdma_conn_param *param)
{
	struct emu_qp *qp = to_emu_qp(e->id.qp);

	memset(m, 0, sizeof(*m));
	m->src = e->id.route.addr.src_storage;
	m->qp_num = qp->qp.qp_num;
	m->max_send_wr = qp->cap.max_send_wr;
	e->rnr_retry = EMU_RNR_INFINITE;
	if (!param)
		return;
	m->responder_resources = param->responder_resources;
	m->initiator_depth = param->initiator_depth;
	m->pdata_len = param->private_data_len;
	if (param->private_data_len)
		memcpy(m->pdata, param->private_data, param->private_data_len);
	e->rnr_retry = param->rnr_retry_count;
}

int emu_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct emu_id *e = to_emu_id(id);
	struct emu_cm_msg m;
	int fd, ret = -1;

	pthread_mutex_lock(&emu_lock);
	if (e->state != EMU_ROUTE || !id->qp ||
	    (param && param->private_data_len > EMU_CONN_PDATA)) {
		errno = EINVAL;
		goto out;
	}
	conn_msg(e, &m, param);
	fd = emu_dial(&id->route.addr.dst_storage);
	if (fd == -2)
		goto out;
	ret = 0;
	if (fd < 0) {
		/* nobody listens there: the CM's "invalid service id" */
		e->state = EMU_FAILED;
		post_event(e, RDMA_CM_EVENT_REJECTED, EMU_REJ_NO_LISTENER,
			   NULL);
		goto out;
	}
	if (emu_wire_init(e)) {
		close(fd);
		errno = ENOMEM;
		ret = -1;
		goto out;
	}
	e->fd = fd;
	emu_wire_queue_cm(e, EMU_OP_REQ, &m);
	e->state = EMU_CONNECTING;
	poll_add(e);
out:
	pthread_mutex_unlock(&emu_lock);
	return ret;
}

int emu_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct emu_id *e = to_emu_id(id);
	struct emu_cm_msg m;
	int ret = -1;

	pthread_mutex_lock(&emu_lock);
	if (e->state != EMU_REQ_RCVD || !id->qp ||
	    (param && param->private_data_len > EMU_PDATA)) {
		errno = EINVAL;
		goto out;
	}
	ret = 0;
	if (e->peer_gone) {
		e->state = EMU_FAILED;
		post_event(e, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET, NULL);
		goto out;
	}
	conn_msg(e, &m, param);
	if (emu_qp_connected(to_emu_qp(id->qp), e->peer.qp_num,
			     e->peer.max_send_wr, e->rnr_retry)) {
		errno = ENOMEM;
		ret = -1;
		goto out;
	}
	emu_wire_queue_cm(e, EMU_OP_REP, &m);
	e->state = EMU_ACCEPTING;
out:
	pthread_mutex_unlock(&emu_lock);
	return ret;
}

int emu_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	struct emu_id *e = to_emu_id(id);
	struct emu_cm_msg m = { .pdata_len = len };
	int ret = 0;

	if (len > EMU_REJ_PDATA) {
		errno = EINVAL;
		return -1;
	}
	if (len)
		memcpy(m.pdata, pdata, len);
	pthread_mutex_lock(&emu_lock);
	if (e->state == EMU_REQ_RCVD) {
		if (!e->peer_gone)
			emu_wire_queue_cm(e, EMU_OP_REJ, &m);
		e->state = EMU_FAILED;
	} else {
		errno = EINVAL;
		ret = -1;
	}
	pthread_mutex_unlock(&emu_lock);
	return ret;
}

int emu_disconnect(struct rdma_cm_id *id)
{
	struct emu_id *e = to_emu_id(id);
	int ret = 0;

	pthread_mutex_lock(&emu_lock);
	if (e->state == EMU_CONNECTED || e->state == EMU_ACCEPTING) {
		emu_qp_error(to_emu_qp(id->qp));
		emu_wire_queue_cm(e, EMU_OP_DREQ, NULL);
		e->state = EMU_DISCONNECTED;
		post_event(e, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
	} else if (e->state != EMU_DISCONNECTED) {
		errno = EINVAL;
		ret = -1;
	}
	pthread_mutex_unlock(&emu_lock);
	return ret;
}

/* ---- the helper's side ---- */

void emu_cm_accept_conn(struct emu_id *l)
{
	struct emu_id *e;
	int fd;

	while ((fd = accept4(l->fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		e = new_id(l->id.channel, l->id.context, l->id.ps);
		if (!e || emu_wire_init(e)) {
			if (e)
				kill_id(e);
			close(fd);
			continue;
		}
		e->fd = fd;
		e->state = EMU_REQ_WAIT;
		e->listener = l;
		e->id.verbs = &emu_ctx;
		e->id.port_num = 1;
		e->id.route.addr.src_storage = l->id.route.addr.src_storage;
		poll_add(e);
	}
}

static void got_req(struct emu_id *e)
{
	struct emu_event *v;

	e->peer = e->rx_msg;
	e->id.route.addr.dst_storage = e->peer.src;
	e->state = EMU_REQ_RCVD;
	v = post_event(e, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &e->peer);
	if (v)
		v->ev.listen_id = &e->listener->id;
	/* from now on the new id lives on its own */
	e->listener = NULL;
}

static void got_rep(struct emu_id *e)
{
	e->peer = e->rx_msg;
	if (emu_qp_connected(to_emu_qp(e->id.qp), e->peer.qp_num,
			     e->peer.max_send_wr, e->rnr_retry)) {
		e->state = EMU_FAILED;
		poll_del(e);
		post_event(e, RDMA_CM_EVENT_CONNECT_ERROR, -ENOMEM, NULL);
		return;
	}
	emu_wire_queue_cm(e, EMU_OP_RTU, NULL);
	e->state = EMU_CONNECTED;
	post_event(e, RDMA_CM_EVENT_ESTABLISHED, 0, &e->peer);
}

/* a frame that does not fit the state is ignored */
void emu_cm_frame(struct emu_id *e)
{
	uint8_t op = e->rx.f.op;

	if (op == EMU_OP_REQ && e->state == EMU_REQ_WAIT) {
		got_req(e);
	} else if (op == EMU_OP_REP && e->state == EMU_CONNECTING) {
		got_rep(e);
	} else if (op == EMU_OP_RTU && e->state == EMU_ACCEPTING) {
		e->state = EMU_CONNECTED;
		post_event(e, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
	} else if (op == EMU_OP_REJ && e->state == EMU_CONNECTING) {
		e->state = EMU_FAILED;
		poll_del(e);
		post_event(e, RDMA_CM_EVENT_REJECTED, EMU_REJ_CONSUMER,
			   &e->rx_msg);
	} else if (op == EMU_OP_DREQ && (e->state == EMU_CONNECTED ||
					 e->state == EMU_ACCEPTING)) {
		emu_qp_error(to_emu_qp(e->id.qp));
		e->state = EMU_DISCONNECTED;
		post_event(e, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
	}
}

/* the peer's socket closed or broke: its process may be gone */
void emu_cm_hangup(struct emu_id *e)
{
	poll_del(e);
	emu_qp_error(to_emu_qp(e->id.qp));
	emu_wire_free(e);
	switch (e->state) {
	case EMU_REQ_WAIT:		/* never announced */
		kill_id(e);
		break;
	case EMU_REQ_RCVD:
		e->peer_gone = true;
		break;
	case EMU_CONNECTING:
		e->state = EMU_FAILED;
		post_event(e, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET, NULL);
		break;
	case EMU_ACCEPTING:
	case EMU_CONNECTED:
		e->state = EMU_DISCONNECTED;
		post_event(e, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		break;
	}
}
