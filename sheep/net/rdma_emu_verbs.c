// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emulation's device-level objects: protection domains, memory
 * regions (looked up by key when the peer reads or writes them), CQs and
 * completion channels.  A completion channel's fd is an eventfd in
 * semaphore mode: one count per notification, so it stays readable while
 * any is waiting, like the real channel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "net/rdma_emu.h"

pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;
struct ibv_context emu_ctx = { .cmd_fd = -1, .async_fd = -1,
			       .num_comp_vectors = 1 };
int emu_epfd = -1;
int emu_wakefd = -1;

struct emu_mr {
	struct ibv_mr mr;
	int access;
	struct list_head list;
};

static LIST_HEAD(emu_mrs);
static uint32_t emu_next_key;
static uint64_t emu_pinned;	/* bytes registered in this process */

/* the pinned-memory limit of a device (RLIMIT_MEMLOCK): 0 for none */
static uint64_t emu_memlock(void)
{
	const char *v = getenv(EMU_MEMLOCK_ENV);

	return v ? strtoull(v, NULL, 10) : 0;
}

void emu_wake(void)
{
	uint64_t one = 1;

	/* cannot fail short of a 2^64 backlog; the helper drains it */
	if (emu_wakefd >= 0 && write(emu_wakefd, &one, sizeof(one)) < 0)
		return;
}

uint64_t emu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- protection domains and memory regions ---- */

struct ibv_pd *emu_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd;

	if (ctx != &emu_ctx) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd)
		pd->context = ctx;
	return pd;
}

static bool pd_in_use(struct ibv_pd *pd)
{
	struct emu_mr *m;

	list_for_each_entry(m, &emu_mrs, list)
		if (m->mr.pd == pd)
			return true;
	return false;
}

int emu_dealloc_pd(struct ibv_pd *pd)
{
	bool busy;

	pthread_mutex_lock(&emu_lock);
	busy = pd_in_use(pd);
	pthread_mutex_unlock(&emu_lock);
	if (busy)
		return EBUSY;
	free(pd);
	return 0;
}

struct ibv_mr *emu_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			  int access)
{
	struct emu_mr *m;

	/* remote write needs local write, as on real devices */
	if (!pd || (!addr && len) ||
	    ((access & IBV_ACCESS_REMOTE_WRITE) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_lock(&emu_lock);
	if (emu_memlock() && emu_pinned + len > emu_memlock()) {
		pthread_mutex_unlock(&emu_lock);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	emu_pinned += len;
	pthread_mutex_unlock(&emu_lock);
	m->mr.context = &emu_ctx;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->access = access;
	pthread_mutex_lock(&emu_lock);
	/* keys from a random start, so a stale key rarely hits */
	if (!emu_next_key)
		emu_next_key = ((uint32_t)getpid() * 2654435761u) | 1;
	m->mr.lkey = m->mr.rkey = m->mr.handle = emu_next_key++;
	list_add_tail(&m->list, &emu_mrs);
	pthread_mutex_unlock(&emu_lock);
	return &m->mr;
}

int emu_dereg_mr(struct ibv_mr *mr)
{
	struct emu_mr *m = container_of(mr, struct emu_mr, mr);

	/* after this no peer operation touches the memory */
	pthread_mutex_lock(&emu_lock);
	list_del(&m->list);
	emu_pinned -= m->mr.length;
	pthread_mutex_unlock(&emu_lock);
	free(m);
	return 0;
}

bool emu_mr_ok(struct ibv_pd *pd, uint32_t key, uint64_t addr,
	       uint64_t len, int access)
{
	struct emu_mr *m;
	uint64_t start, end;

	list_for_each_entry(m, &emu_mrs, list) {
		if (m->mr.lkey != key)
			continue;
		start = (uintptr_t)m->mr.addr;
		end = start + m->mr.length;
		return m->mr.pd == pd && (m->access & access) == access &&
		       addr >= start && addr <= end && len <= end - addr;
	}
	return false;
}

bool emu_sges_ok(struct ibv_pd *pd, const struct ibv_sge *sge, int n,
		 int access)
{
	for (int i = 0; i < n; i++)
		if (sge[i].length &&
		    !emu_mr_ok(pd, sge[i].lkey, sge[i].addr, sge[i].length,
			       access))
			return false;
	return true;
}

/* ---- completion channels ---- */

struct ibv_comp_channel *emu_create_comp_channel(struct ibv_context *ctx)
{
	struct emu_comp_channel *c;

	if (ctx != &emu_ctx) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	c->ch.context = ctx;
	INIT_LIST_HEAD(&c->cqs);
	return &c->ch;
}

int emu_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct emu_comp_channel *c;

	c = container_of(ch, struct emu_comp_channel, ch);
	pthread_mutex_lock(&emu_lock);
	if (ch->refcnt) {
		pthread_mutex_unlock(&emu_lock);
		errno = EBUSY;
		return -1;
	}
	pthread_mutex_unlock(&emu_lock);
	close(ch->fd);
	free(c);
	return 0;
}

int emu_comp_channel_fd(struct ibv_comp_channel *ch)
{
	return ch->fd;
}

/* ---- completion queues ---- */

static struct emu_cq *to_emu_cq(struct ibv_cq *cq)
{
	return container_of(cq, struct emu_cq, cq);
}

struct ibv_cq *emu_create_cq(struct ibv_context *ctx, int cqe, void *cq_ctx,
			     struct ibv_comp_channel *ch, int comp_vector)
{
	struct emu_cq *q;

	if (ctx != &emu_ctx || cqe < 1 || cqe > EMU_MAX_CQE ||
	    comp_vector != 0) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->wc = calloc(cqe, sizeof(*q->wc));
	if (!q->wc) {
		free(q);
		return NULL;
	}
	q->cq.context = ctx;
	q->cq.channel = ch;
	q->cq.cq_context = cq_ctx;
	q->cq.cqe = cqe;
	INIT_LIST_HEAD(&q->chan_list);
	if (ch) {
		pthread_mutex_lock(&emu_lock);
		ch->refcnt++;
		pthread_mutex_unlock(&emu_lock);
	}
	return &q->cq;
}

int emu_destroy_cq(struct ibv_cq *cq)
{
	struct emu_cq *q = to_emu_cq(cq);

	pthread_mutex_lock(&emu_lock);
	if (q->nr_qps) {
		pthread_mutex_unlock(&emu_lock);
		return EBUSY;
	}
	/* notifications not taken yet are skipped by emu_get_cq_event */
	list_del(&q->chan_list);
	if (cq->channel)
		cq->channel->refcnt--;
	pthread_mutex_unlock(&emu_lock);
	free(q->wc);
	free(q);
	return 0;
}

int emu_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	pthread_mutex_lock(&emu_lock);
	to_emu_cq(cq)->armed = 1 + !!solicited_only;
	pthread_mutex_unlock(&emu_lock);
	return 0;
}

static void cq_notify(struct emu_cq *q)
{
	struct emu_comp_channel *c;
	uint64_t one = 1;

	q->armed = 0;
	if (!q->cq.channel)
		return;
	c = container_of(q->cq.channel, struct emu_comp_channel, ch);
	if (!q->events++)
		list_add_tail(&q->chan_list, &c->cqs);
	if (write(c->ch.fd, &one, sizeof(one)) < 0)
		q->events--;	/* only on a 2^64 backlog */
}

void emu_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	struct emu_cq *q = to_emu_cq(cq);

	if (q->nr == (unsigned int)cq->cqe) {
		q->overrun = true;
		return;
	}
	q->wc[(q->first + q->nr++) % cq->cqe] = *wc;
	/* solicited_only: solicited receives and errors only */
	if (q->armed == 1 ||
	    (q->armed == 2 && (solicited || wc->status != IBV_WC_SUCCESS)))
		cq_notify(q);
}

int emu_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
		     void **cq_ctx)
{
	struct emu_comp_channel *c;
	struct emu_cq *q;
	uint64_t v;

	c = container_of(ch, struct emu_comp_channel, ch);
	for (;;) {
		/* blocks unless the caller made the fd non-blocking */
		if (read(ch->fd, &v, sizeof(v)) != sizeof(v))
			return -1;
		pthread_mutex_lock(&emu_lock);
		if (!list_empty(&c->cqs))
			break;
		/* the CQ of this count was destroyed */
		pthread_mutex_unlock(&emu_lock);
	}
	q = list_first_entry(&c->cqs, struct emu_cq, chan_list);
	if (!--q->events)
		list_del(&q->chan_list);
	q->cq.comp_events_completed++;
	*cq = &q->cq;
	*cq_ctx = q->cq.cq_context;
	pthread_mutex_unlock(&emu_lock);
	return 0;
}

void emu_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	/* nothing waits for acknowledgements here */
}

int emu_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct emu_cq *q = to_emu_cq(cq);
	int got = 0;

	pthread_mutex_lock(&emu_lock);
	if (q->overrun) {
		pthread_mutex_unlock(&emu_lock);
		errno = EOVERFLOW;
		return -1;
	}
	while (got < n && q->nr) {
		wc[got++] = q->wc[q->first];
		q->first = (q->first + 1) % cq->cqe;
		q->nr--;
	}
	pthread_mutex_unlock(&emu_lock);
	return got;
}
