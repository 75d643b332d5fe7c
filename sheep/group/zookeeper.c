// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The "zookeeper" cluster driver (cluster.md §6.3):
 *
 *   sheep -c zookeeper:HOST:PORT[,HOST:PORT...][/CLUSTER][,timeout=S]
 *
 * ZooKeeper gives the process-group protocol (procgroup.c) the transport it
 * needs -- configuration changes and messages in one total order -- through
 * one queue of sequential znodes that every process reads in order.  A
 * process is a ZooKeeper session; under ROOT (/sheepdog, or /CLUSTER, so
 * that clusters can share an ensemble):
 *
 *   ROOT/live/ID     ephemeral: exists while session ID lives; its data is
 *                    the last queue position the process has read, then
 *                    " L" if it reads LEFT_SET (releases before that
 *                    mark write the number alone, and parse only it)
 *   ROOT/procs       the processes in the group, in joining order; it is
 *                    changed only in one multi-op with the queue event that
 *                    says so, so the list at version V is exactly the group
 *                    before the event written with V
 *   ROOT/queue/e-N   the events: JOIN(ID), LEFT(ID), LEFT_SET(n, IDs),
 *                    MSG(ID, n, bytes)
 *
 * Joining: create live/ID, then in one multi-op check procs' version, add
 * ID to it and append JOIN(ID).  The list read before is the group at our
 * arrival: the first configuration change.  From then on every event after
 * ours is read in sequence order.  Leaving: any process that sees an ID in
 * procs without live/ID (its session ended) removes it with LEFT(ID) in
 * the same way; the version check makes concurrent removals one.  All the
 * processes found gone in one look go in one event, LEFT_SET when there
 * are several: one configuration change, so one epoch for sheep that died
 * together (a host, a rack) rather than one each.  LEFT stays the event of
 * a single loss, which members of releases before LEFT_SET read too; and
 * while any live process has not said it reads LEFT_SET (live/ID's mark),
 * those found gone together leave one LEFT each, one after the other.
 *
 * A message whose create was cut by a connection loss may have been
 * written; it is sent again, and readers drop MSG(ID, n) when they saw
 * MSG(ID, m >= n): per-sender counters make the retry harmless.
 *
 * All ZooKeeper calls are made by one thread of this driver (the
 * library's synchronous API); the event loop only exchanges queues with it
 * through a mutex and an eventfd, so a slow or absent ZooKeeper never
 * blocks it.  A session that expires, or that cannot reach ZooKeeper for
 * the whole session timeout (after which it may have expired), stops the
 * daemon: the others have removed it or are about to.  At a clean exit
 * the live znode is deleted, so that nobody waits for the session to end.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
/* the synchronous API is declared for the multi-threaded library only */
#ifndef THREADED
#define THREADED
#endif
#include <zookeeper/zookeeper.h>
#include "driver.h"
#include "event.h"
#include "list.h"
#include "procgroup.h"
#include "proto.h"
#include "util.h"

#define ZK_DEFAULT_ROOT		"/sheepdog"
#define ZK_DEFAULT_TIMEOUT	30	/* seconds */
#define ZK_MAX_TIMEOUT		600
#define ZK_MAX_CLUSTER		64	/* characters of a cluster id */
#define EV_MAGIC		UINT32_C(0x31515a4b)	/* "KZQ1" */
#define PROCS_MAGIC		UINT32_C(0x31505a4b)	/* "KZP1" */
#define EV_HDR			24
#define MAX_PROCS		1024
#define MAX_EVENT		(1024 * 1024)	/* ZooKeeper's jute.maxbuffer */
#define OUTBOX_MAX		(64u * 1024 * 1024)
#define ROUND_MS		500	/* between rounds without a watch */
#define RETRY_MS		200	/* after a connection loss */
#define POS_EVERY_MS		2000	/* publishing our position, GC */
/*
 * How long a process found gone waits for others before it is removed:
 * sessions that died together (a host, a rack cut off) expire over a
 * second or two, as their last pings were spread, and are meant to leave
 * in one event, so one epoch.  Small beside a session's timeout.
 */
#define LEAVE_SETTLE_MS		1000

/* live/ID's mark: we read LEFT_SET (a test builds an older release) */
#if defined(MY_CAPS) && MY_CAPS == 0
#define LIVE_MARK		""
#else
#define LIVE_MARK		" L"
#endif

enum ev_kind {
	EV_JOIN = 1,
	EV_LEFT,
	EV_MSG,
	EV_LEFT_SET,	/* n = how many; the IDs follow the header */
};

/* what the thread hands to the event loop */
enum item_kind {
	IT_JOINED,	/* we are in the group */
	IT_CONFCHG,	/* members after; one joined, or data: pg_addrs left */
	IT_MSG,
	IT_FATAL,
};

struct item {
	struct list_head list;
	int kind;
	struct pg_id id;	/* the sender, or who joined or left */
	bool left;
	size_t nr_members;
	struct pg_addr *members;
	size_t len;
	uint8_t data[];
};

struct out {
	struct list_head list;
	uint64_t counter;
	size_t len;
	uint8_t data[];
};

/* per-sender counters of the messages read, for dropping resends */
struct sender {
	uint64_t id;
	uint64_t counter;
};

static struct zk_state {
	/* set at init, read-only afterwards */
	char hosts[1024];
	char root[ZK_MAX_CLUSTER + 2];
	int timeout;		/* seconds, asked for */
	uint64_t timeout_ms;	/* what the ensemble granted */
	struct event_loop *loop;
	int efd;
	bool inited;
	bool join_called;
	pthread_t thread;

	/* shared: lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool wake;
	bool connected;
	bool expired;
	uint64_t disconnected_at;	/* monotonic ms, when !connected */
	struct list_head outbox;
	size_t outbox_bytes;
	struct list_head inbox;

	/* the ZooKeeper thread's own */
	zhandle_t *zh;
	uint64_t me;
	uint64_t pos;		/* sequence of the last event read */
	uint64_t *members;	/* the group as read from the queue */
	size_t nr_members;
	struct sender *senders;
	size_t nr_senders;
	uint64_t out_counter;
	uint8_t *buf;		/* MAX_EVENT bytes */
	uint64_t pos_published_at;
	uint64_t gone_seen_at;	/* monotonic ms a loss was first seen, or 0 */
} zs = {
	.efd = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.outbox = LIST_HEAD_INIT(zs.outbox),
	.inbox = LIST_HEAD_INIT(zs.inbox),
};

static struct pg_id to_pg(uint64_t id)
{
	return (struct pg_id){ .nodeid = (uint32_t)(id >> 32),
			       .pid = (uint32_t)id };
}

/* ------------------------------------------------------------------ */
/* talking to the event loop */

static void post(struct item *it)
{
	uint64_t one = 1;

	pthread_mutex_lock(&zs.lock);
	list_add_tail(&it->list, &zs.inbox);
	pthread_mutex_unlock(&zs.lock);
	if (write(zs.efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		sd_err("eventfd write: %m");
}

static struct item *item_new(int kind, uint64_t id, const void *data,
			     size_t len)
{
	struct item *it = xzalloc(sizeof(*it) + len);

	it->kind = kind;
	it->id = to_pg(id);
	it->len = len;
	if (len)
		memcpy(it->data, data, len);
	return it;
}

static void post_fatal(const char *why)
{
	post(item_new(IT_FATAL, 0, why, strlen(why) + 1));
}

/* @id joined, or the @nr_left processes @left left */
static void post_confchg(uint64_t id, const struct pg_addr *left,
			 size_t nr_left)
{
	struct item *it = item_new(IT_CONFCHG, id, left,
				   nr_left * sizeof(*left));

	it->left = nr_left > 0;
	it->nr_members = zs.nr_members;
	it->members = xzalloc((zs.nr_members + 1) * sizeof(*it->members));
	for (size_t i = 0; i < zs.nr_members; i++)
		it->members[i] = (struct pg_addr){
			.id = to_pg(zs.members[i]),
			.reason = PG_REASON_JOIN,
		};
	post(it);
}

static void deliver_item(struct item *it)
{
	struct pg_addr who = { .id = it->id };

	switch (it->kind) {
	case IT_JOINED:
		pg_transport_joined();
		break;
	case IT_CONFCHG:
		if (it->left) {
			pg_confchg(it->members, it->nr_members,
				   (struct pg_addr *)it->data,
				   it->len / sizeof(struct pg_addr), NULL, 0);
			break;
		}
		who.reason = PG_REASON_JOIN;
		pg_confchg(it->members, it->nr_members, NULL, 0, &who, 1);
		break;
	case IT_MSG:
		pg_deliver(it->id, it->data, it->len);
		break;
	case IT_FATAL:
		pg_fatal("ZooKeeper: %s", (const char *)it->data);
	}
}

static void efd_fn(int fd, uint32_t events, void *data)
{
	struct list_head todo;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		sd_err("eventfd read: %m");
	INIT_LIST_HEAD(&todo);
	pthread_mutex_lock(&zs.lock);
	list_splice_tail_init(&zs.inbox, &todo);
	pthread_mutex_unlock(&zs.lock);
	while (!list_empty(&todo)) {
		struct item *it = list_first_entry(&todo, struct item, list);

		list_del(&it->list);
		deliver_item(it);
		free(it->members);
		free(it);
	}
	pg_process();
}

/* the transport's send: queued for the thread; 1 (later) when full */
static int zk_send(const void *buf, size_t len)
{
	struct out *o;

	if (EV_HDR + len > MAX_EVENT) {
		sd_err("a cluster message of %zu bytes is too large for "
		       "ZooKeeper", len);
		return -1;
	}
	pthread_mutex_lock(&zs.lock);
	if (zs.outbox_bytes + len > OUTBOX_MAX) {
		pthread_mutex_unlock(&zs.lock);
		return 1;
	}
	o = xzalloc(sizeof(*o) + len);
	o->len = len;
	memcpy(o->data, buf, len);
	list_add_tail(&o->list, &zs.outbox);
	zs.outbox_bytes += len;
	zs.wake = true;
	pthread_cond_signal(&zs.cond);
	pthread_mutex_unlock(&zs.lock);
	return 0;
}

static const struct pg_transport zk_transport = {
	.name = "ZooKeeper",
	.send = zk_send,
};

/* ------------------------------------------------------------------ */
/* ZooKeeper callbacks (the library's completion thread) */

static void session_watcher(zhandle_t *zh, int type, int state,
			    const char *path, void *ctx)
{
	pthread_mutex_lock(&zs.lock);
	if (type == ZOO_SESSION_EVENT) {
		if (state == ZOO_CONNECTED_STATE) {
			zs.connected = true;
		} else if (state == ZOO_EXPIRED_SESSION_STATE) {
			zs.expired = true;
		} else if (zs.connected) {
			zs.connected = false;
			zs.disconnected_at = now_msec();
		}
	}
	zs.wake = true;
	pthread_cond_signal(&zs.cond);
	pthread_mutex_unlock(&zs.lock);
}

static void child_watcher(zhandle_t *zh, int type, int state,
			  const char *path, void *ctx)
{
	session_watcher(zh, type, state, path, ctx);
}

/* ------------------------------------------------------------------ */
/* the ZooKeeper thread: helpers */

/* a call's error: 0 done, 1 retry after a pause, -1 give up */
static int classify(int rc)
{
	if (rc == ZOK)
		return 0;
	if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT)
		return 1;
	return -1;
}

static void zpath(char *buf, size_t size, const char *sub)
{
	snprintf(buf, size, "%s%s", zs.root, sub);
}

static int ensure(const char *sub)
{
	char path[256];
	int rc;

	zpath(path, sizeof(path), sub);
	rc = zoo_create(zs.zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
			0);
	return rc == ZNODEEXISTS ? ZOK : rc;
}

static void encode_event(uint8_t *b, int kind, uint64_t id, uint64_t n)
{
	put_le32(b, EV_MAGIC);
	b[4] = (uint8_t)kind;
	b[5] = b[6] = b[7] = 0;
	put_le64(b + 8, id);
	put_le64(b + 16, n);
}

/* the procs list and its version */
static int procs_read(uint64_t *ids, size_t *nr, int *version)
{
	int len = 8 + MAX_PROCS * 8;
	char path[256];
	struct Stat stat;
	uint32_t n;
	int rc;

	zpath(path, sizeof(path), "/procs");
	rc = zoo_get(zs.zh, path, 0, (char *)zs.buf, &len, &stat);
	if (rc != ZOK)
		return rc;
	*version = stat.version;
	*nr = 0;
	if (len < 8 || get_le32(zs.buf) != PROCS_MAGIC)
		return ZOK;	/* created empty */
	n = get_le32(zs.buf + 4);
	if (n > MAX_PROCS || (size_t)len < 8 + (size_t)n * 8)
		return ZOK;
	for (uint32_t i = 0; i < n; i++)
		ids[i] = get_le64(zs.buf + 8 + i * 8);
	*nr = n;
	return ZOK;
}

static size_t procs_encode(uint8_t *b, const uint64_t *ids, size_t nr)
{
	put_le32(b, PROCS_MAGIC);
	put_le32(b + 4, (uint32_t)nr);
	for (size_t i = 0; i < nr; i++)
		put_le64(b + 8 + i * 8, ids[i]);
	return 8 + nr * 8;
}

/*
 * One multi-op: procs at @version becomes @ids[@nr], and the event @ev
 * (@evlen bytes) is appended to the queue.  *@seq gets its sequence.
 */
static int procs_change_ev(int version, const uint64_t *ids, size_t nr,
			   const uint8_t *ev, size_t evlen, uint64_t *seq)
{
	uint8_t pbuf[8 + MAX_PROCS * 8];
	char ppath[256], qpath[256], created[256];
	zoo_op_result_t res[3];
	zoo_op_t ops[3];
	size_t plen = procs_encode(pbuf, ids, nr);
	const char *dash;
	int rc;

	zpath(ppath, sizeof(ppath), "/procs");
	zpath(qpath, sizeof(qpath), "/queue/e-");
	created[0] = 0;
	zoo_check_op_init(&ops[0], ppath, version);
	zoo_set_op_init(&ops[1], ppath, (const char *)pbuf, (int)plen, version,
			NULL);
	zoo_create_op_init(&ops[2], qpath, (const char *)ev, (int)evlen,
			   &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL,
			   created, sizeof(created));
	rc = zoo_multi(zs.zh, 3, ops, res);
	if (rc != ZOK)
		return rc;
	dash = strrchr(created, '-');
	*seq = dash ? strtoull(dash + 1, NULL, 10) : 0;
	return ZOK;
}

/* the same with the event @kind(@id) */
static int procs_change(int version, const uint64_t *ids, size_t nr,
			int kind, uint64_t id, uint64_t *seq)
{
	uint8_t ev[EV_HDR];

	encode_event(ev, kind, id, 0);
	return procs_change_ev(version, ids, nr, ev, EV_HDR, seq);
}

/* @left (@nr_left of them) out of the group in one event */
static int procs_remove(int version, const uint64_t *ids, size_t nr,
			const uint64_t *left, size_t nr_left, uint64_t *seq)
{
	uint8_t ev[EV_HDR + MAX_PROCS * 8];

	if (nr_left == 1)
		return procs_change(version, ids, nr, EV_LEFT, left[0], seq);
	encode_event(ev, EV_LEFT_SET, left[0], nr_left);
	for (size_t i = 0; i < nr_left; i++)
		put_le64(ev + EV_HDR + 8 * i, left[i]);
	return procs_change_ev(version, ids, nr, ev, EV_HDR + 8 * nr_left,
			       seq);
}

static bool id_in(const uint64_t *ids, size_t nr, uint64_t id)
{
	for (size_t i = 0; i < nr; i++)
		if (ids[i] == id)
			return true;
	return false;
}

static int seq_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the sequences of the queue's events, sorted; watched if @watch */
static int queue_list(uint64_t **seqs, size_t *nr, bool watch)
{
	struct String_vector sv = { 0 };
	char path[256];
	int rc;

	zpath(path, sizeof(path), "/queue");
	rc = watch ? zoo_wget_children(zs.zh, path, child_watcher, NULL, &sv) :
		     zoo_get_children(zs.zh, path, 0, &sv);
	if (rc != ZOK)
		return rc;
	*seqs = xzalloc(((size_t)sv.count + 1) * sizeof(**seqs));
	*nr = 0;
	for (int i = 0; i < sv.count; i++) {
		const char *dash = strrchr(sv.data[i], '-');

		if (dash && !strncmp(sv.data[i], "e-", 2))
			(*seqs)[(*nr)++] = strtoull(dash + 1, NULL, 10);
	}
	deallocate_String_vector(&sv);
	qsort(*seqs, *nr, sizeof(**seqs), seq_cmp);
	return ZOK;
}

/* event @seq into zs.buf: its length, or a negative ZooKeeper error */
static int event_read(uint64_t seq)
{
	char path[256];
	int len = MAX_EVENT, rc;

	snprintf(path, sizeof(path), "%s/queue/e-%010" PRIu64, zs.root, seq);
	rc = zoo_get(zs.zh, path, 0, (char *)zs.buf, &len, NULL);
	if (rc != ZOK)
		return rc;
	return len < 0 ? 0 : len;
}

/* ------------------------------------------------------------------ */
/* the ZooKeeper thread: joining */

/*
 * After a connection loss the multi-op may have been applied: then we are
 * in procs and our JOIN is the newest JOIN(us) of the queue.
 */
static int find_my_join(uint64_t *seq)
{
	uint64_t *seqs;
	size_t nr;
	int rc = queue_list(&seqs, &nr, false);

	if (rc != ZOK)
		return rc;
	rc = ZNONODE;
	for (size_t i = nr; i-- > 0;) {
		int len = event_read(seqs[i]);

		if (len >= EV_HDR && get_le32(zs.buf) == EV_MAGIC &&
		    zs.buf[4] == EV_JOIN && get_le64(zs.buf + 8) == zs.me) {
			*seq = seqs[i];
			rc = ZOK;
			break;
		}
	}
	free(seqs);
	return rc;
}

static int join_group(void)
{
	uint64_t ids[MAX_PROCS + 1], seq = 0;
	size_t nr;
	int version, rc;

	for (;;) {
		rc = procs_read(ids, &nr, &version);
		if (rc == ZOK && id_in(ids, nr, zs.me)) {
			/* a multi-op cut by a connection loss did it */
			rc = find_my_join(&seq);
			if (rc == ZOK)
				break;
		}
		if (rc == ZOK && nr >= MAX_PROCS) {
			post_fatal("the group is full");
			return -1;
		}
		if (rc == ZOK) {
			ids[nr] = zs.me;
			rc = procs_change(version, ids, nr + 1, EV_JOIN, zs.me,
					  &seq);
			if (rc == ZOK) {
				nr++;
				break;
			}
		}
		if (rc != ZBADVERSION && classify(rc) < 0) {
			sd_err("ZooKeeper: cannot join: %s", zerror(rc));
			post_fatal("cannot join the group");
			return -1;
		}
		usleep(RETRY_MS * 1000);
	}
	zs.members = xzalloc((nr + 1) * sizeof(*zs.members));
	memcpy(zs.members, ids, nr * sizeof(*ids));
	if (!id_in(zs.members, nr, zs.me))
		zs.members[nr++] = zs.me;
	zs.nr_members = nr;
	zs.pos = seq;
	post(item_new(IT_JOINED, 0, NULL, 0));
	post_confchg(zs.me, NULL, 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* the ZooKeeper thread: reading the queue */

static struct sender *sender_find(uint64_t id)
{
	for (size_t i = 0; i < zs.nr_senders; i++)
		if (zs.senders[i].id == id)
			return &zs.senders[i];
	return NULL;
}

static void member_add(uint64_t id)
{
	if (id_in(zs.members, zs.nr_members, id))
		return;
	/* procs holds no more: a JOIN beyond is not from our multi-op */
	if (zs.nr_members == MAX_PROCS) {
		sd_err("ZooKeeper: JOIN of %016" PRIx64 " beyond %d members "
		       "ignored", id, MAX_PROCS);
		return;
	}
	zs.members = xrealloc(zs.members,
			      (zs.nr_members + 1) * sizeof(*zs.members));
	zs.members[zs.nr_members++] = id;
	post_confchg(id, NULL, 0);
}

/* take @id out of the members; false if it was none */
static bool member_drop(uint64_t id)
{
	struct sender *s = sender_find(id);
	size_t j = 0;

	if (!id_in(zs.members, zs.nr_members, id))
		return false;
	for (size_t i = 0; i < zs.nr_members; i++)
		if (zs.members[i] != id)
			zs.members[j++] = zs.members[i];
	zs.nr_members = j;
	if (s)		/* a session id is never used again */
		*s = zs.senders[--zs.nr_senders];
	return true;
}

/* the @nr processes @ids (LE64 each) left: one configuration change */
static void members_del(const uint8_t *ids, size_t nr)
{
	struct pg_addr *left = xzalloc((nr + 1) * sizeof(*left));
	size_t nr_left = 0;

	for (size_t i = 0; i < nr; i++) {
		uint64_t id = get_le64(ids + 8 * i);

		if (!member_drop(id))
			continue;
		left[nr_left++] = (struct pg_addr){
			.id = to_pg(id), .reason = PG_REASON_PROCDOWN,
		};
	}
	if (nr_left)
		post_confchg(0, left, nr_left);
	free(left);
}

static void on_msg(uint64_t id, uint64_t counter, const uint8_t *data,
		   size_t len)
{
	struct sender *s;

	if (!id_in(zs.members, zs.nr_members, id))
		return;
	s = sender_find(id);
	if (!s) {
		zs.senders = xrealloc(zs.senders, (zs.nr_senders + 1) *
						  sizeof(*zs.senders));
		s = &zs.senders[zs.nr_senders++];
		*s = (struct sender){ .id = id };
	}
	if (counter <= s->counter)
		return;		/* a resend after a connection loss */
	s->counter = counter;
	post(item_new(IT_MSG, id, data, len));
}

static void on_event(const uint8_t *b, size_t len)
{
	uint64_t id;

	if (len < EV_HDR || get_le32(b) != EV_MAGIC) {
		sd_err("ZooKeeper: malformed event of %zu bytes ignored", len);
		return;
	}
	id = get_le64(b + 8);
	switch (b[4]) {
	case EV_JOIN:
		member_add(id);
		break;
	case EV_LEFT:
		members_del(b + 8, 1);
		break;
	case EV_LEFT_SET:
		/* n IDs after the header, nothing else */
		if (!get_le64(b + 16) || get_le64(b + 16) > MAX_PROCS ||
		    len - EV_HDR != get_le64(b + 16) * 8) {
			sd_err("ZooKeeper: malformed LEFT_SET of %zu bytes "
			       "ignored", len);
			break;
		}
		members_del(b + EV_HDR, (size_t)get_le64(b + 16));
		break;
	case EV_MSG:
		on_msg(id, get_le64(b + 16), b + EV_HDR, len - EV_HDR);
		break;
	default:
		sd_err("ZooKeeper: event of unknown kind %u ignored", b[4]);
	}
}

static int read_queue(void)
{
	uint64_t *seqs;
	size_t nr;
	int rc = queue_list(&seqs, &nr, true);

	if (rc != ZOK)
		return rc;
	for (size_t i = 0; i < nr; i++) {
		int len;

		if (seqs[i] <= zs.pos)
			continue;
		len = event_read(seqs[i]);
		if (len < 0 && len != ZNONODE) {
			rc = len;
			break;
		}
		if (len >= 0)
			on_event(zs.buf, (size_t)len);
		zs.pos = seqs[i];
	}
	free(seqs);
	return rc;
}

/* ------------------------------------------------------------------ */
/* the ZooKeeper thread: writing */

static int send_one(struct out *o)
{
	char qpath[256];
	uint8_t *b = zs.buf;

	if (!o->counter)
		o->counter = ++zs.out_counter;
	encode_event(b, EV_MSG, zs.me, o->counter);
	memcpy(b + EV_HDR, o->data, o->len);
	zpath(qpath, sizeof(qpath), "/queue/e-");
	return zoo_create(zs.zh, qpath, (const char *)b,
			  (int)(EV_HDR + o->len), &ZOO_OPEN_ACL_UNSAFE,
			  ZOO_PERSISTENT_SEQUENTIAL, NULL, 0);
}

static int send_outbox(void)
{
	for (;;) {
		struct out *o;
		int rc;

		pthread_mutex_lock(&zs.lock);
		o = list_empty(&zs.outbox) ? NULL :
		    list_first_entry(&zs.outbox, struct out, list);
		pthread_mutex_unlock(&zs.lock);
		if (!o)
			return ZOK;
		rc = send_one(o);
		if (rc != ZOK)
			return rc;	/* the same counter next time */
		pthread_mutex_lock(&zs.lock);
		list_del(&o->list);
		zs.outbox_bytes -= o->len;
		pthread_mutex_unlock(&zs.lock);
		free(o);
	}
}

/*
 * Processes in procs whose session has ended leave: all that a look finds
 * LEAVE_SETTLE_MS after the first was seen gone, in one event.
 */
/*
 * Does every live process read LEFT_SET (its live/ID data ends with the
 * mark)?  A newcomer that has not published its position yet does not
 * say: no.  Asked only when several are gone at once.
 */
static bool all_read_left_set(void)
{
	struct String_vector sv = { 0 };
	char path[256], child[512], val[32];
	bool all = true;

	zpath(path, sizeof(path), "/live");
	if (zoo_get_children(zs.zh, path, 0, &sv) != ZOK)
		return false;
	for (int i = 0; i < sv.count && all; i++) {
		int len = sizeof(val) - 1;

		snprintf(child, sizeof(child), "%s/%s", path, sv.data[i]);
		if (zoo_get(zs.zh, child, 0, val, &len, NULL) != ZOK ||
		    len < 2)
			all = false;
		else
			all = !memcmp(val + len - 2, " L", 2);
	}
	deallocate_String_vector(&sv);
	return all;
}

static int check_live(void)
{
	struct String_vector sv = { 0 };
	uint64_t ids[MAX_PROCS], gone[MAX_PROCS], all[MAX_PROCS], *live, seq;
	size_t nr, nr_live = 0, nr_gone = 0, j = 0;
	bool one_at_a_time = false;
	char path[256];
	int version, rc;

	rc = procs_read(ids, &nr, &version);
	if (rc != ZOK)
		return rc;
	memcpy(all, ids, nr * sizeof(*ids));
	zpath(path, sizeof(path), "/live");
	/* procs first, then live: a process in procs made live/ID before */
	rc = zoo_wget_children(zs.zh, path, child_watcher, NULL, &sv);
	if (rc != ZOK)
		return rc;
	live = xzalloc(((size_t)sv.count + 1) * sizeof(*live));
	for (int i = 0; i < sv.count; i++)
		live[nr_live++] = strtoull(sv.data[i], NULL, 16);
	deallocate_String_vector(&sv);
	for (size_t i = 0; i < nr; i++) {
		if (id_in(live, nr_live, ids[i]))
			ids[j++] = ids[i];
		else
			gone[nr_gone++] = ids[i];
	}
	free(live);
	if (!nr_gone) {
		zs.gone_seen_at = 0;
		return ZOK;
	}
	if (!zs.gone_seen_at)
		zs.gone_seen_at = now_msec();
	if (now_msec() - zs.gone_seen_at < LEAVE_SETTLE_MS)
		return ZOK;
	/*
	 * One at a time for an older release: the first one now, in the
	 * group's order, the others on the next rounds, without a second wait
	 */
	if (nr_gone > 1 && !all_read_left_set()) {
		one_at_a_time = true;
		nr_gone = 1;
		j = 0;
		for (size_t i = 0; i < nr; i++)
			if (all[i] != gone[0])
				ids[j++] = all[i];
	}
	rc = procs_remove(version, ids, j, gone, nr_gone, &seq);
	if (rc == ZOK && !one_at_a_time)
		zs.gone_seen_at = 0;
	/*
	 * procs changed under us (another process was faster, or a join):
	 * the next round looks again, without a second wait
	 */
	return rc == ZBADVERSION ? ZOK : rc;
}

/* our position in live/ID; the oldest process drops what all have read */
static void publish_and_collect(void)
{
	struct String_vector sv = { 0 };
	uint64_t min = zs.pos, *seqs;
	char path[256], val[32];
	size_t nr;

	snprintf(path, sizeof(path), "%s/live/%016" PRIx64, zs.root, zs.me);
	snprintf(val, sizeof(val), "%" PRIu64 LIVE_MARK, zs.pos);
	if (zoo_set(zs.zh, path, val, (int)strlen(val), -1) != ZOK)
		return;
	if (!zs.nr_members || zs.members[0] != zs.me)
		return;
	zpath(path, sizeof(path), "/live");
	if (zoo_get_children(zs.zh, path, 0, &sv) != ZOK)
		return;
	for (int i = 0; i < sv.count; i++) {
		char child[512];
		int len = sizeof(val) - 1;

		snprintf(child, sizeof(child), "%s/%s", path, sv.data[i]);
		if (zoo_get(zs.zh, child, 0, val, &len, NULL) != ZOK ||
		    len <= 0) {
			min = 0;	/* a newcomer: keep everything */
			break;
		}
		val[len] = 0;
		min = MIN(min, strtoull(val, NULL, 10));
	}
	deallocate_String_vector(&sv);
	if (!min || queue_list(&seqs, &nr, false) != ZOK)
		return;
	for (size_t i = 0; i < nr && seqs[i] < min; i++) {
		snprintf(path, sizeof(path), "%s/queue/e-%010" PRIu64,
			 zs.root, seqs[i]);
		zoo_delete(zs.zh, path, -1);
	}
	free(seqs);
}

/* ------------------------------------------------------------------ */
/* the ZooKeeper thread */

/* wait for a watch, a message to send or the end of a round */
static bool wait_round(uint64_t ms)
{
	struct timespec ts;
	bool ok = true;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&zs.lock);
	while (!zs.wake && !zs.expired)
		if (pthread_cond_timedwait(&zs.cond, &zs.lock, &ts))
			break;
	zs.wake = false;
	if (zs.expired)
		ok = false;
	pthread_mutex_unlock(&zs.lock);
	return ok;
}

/* false when the session is gone or may be */
static bool session_ok(void)
{
	bool ok;

	pthread_mutex_lock(&zs.lock);
	ok = !zs.expired &&
	     (zs.connected ||
	      now_msec() - zs.disconnected_at < zs.timeout_ms);
	pthread_mutex_unlock(&zs.lock);
	return ok;
}

static int one_round(void)
{
	int rc = send_outbox();

	if (rc == ZOK)
		rc = read_queue();
	if (rc == ZOK)
		rc = check_live();
	if (rc == ZOK && now_msec() - zs.pos_published_at >= POS_EVERY_MS) {
		zs.pos_published_at = now_msec();
		publish_and_collect();
	}
	return rc;
}

/* @ms, or less when a loss waiting to settle is due sooner */
static uint64_t round_wait(uint64_t ms)
{
	uint64_t due = zs.gone_seen_at + LEAVE_SETTLE_MS, now = now_msec();

	if (!zs.gone_seen_at)
		return ms;
	return MIN(ms, due > now ? due - now : 1);
}

static void *zk_thread(void *arg)
{
	uint64_t pause = 0;

	if (join_group())
		return NULL;
	for (;;) {
		int rc;

		if (!wait_round(round_wait(pause ? pause : ROUND_MS)) ||
		    !session_ok())
			break;
		rc = one_round();
		if (classify(rc) < 0) {
			sd_err("ZooKeeper: %s", zerror(rc));
			break;
		}
		pause = rc == ZOK ? 0 : RETRY_MS;
	}
	post_fatal(zs.expired ? "the session expired: this node was removed "
				"from the cluster" :
				"lost: the session may have expired; stopping "
				"so that the cluster cannot diverge");
	return NULL;
}

/* ------------------------------------------------------------------ */
/* the driver interface */

/* HOST:PORT[,HOST:PORT...][/CLUSTER][,timeout=S] */
static int parse_option(const char *option)
{
	const char *t, *slash;
	char rest[sizeof(zs.hosts)];
	char *end;
	long v;

	zs.timeout = ZK_DEFAULT_TIMEOUT;
	snprintf(zs.root, sizeof(zs.root), "%s", ZK_DEFAULT_ROOT);
	if (!option || !*option || strlen(option) >= sizeof(rest)) {
		sd_err("zookeeper: give the servers: -c zookeeper:HOST:PORT"
		       "[,HOST:PORT...][/CLUSTER][,timeout=SECONDS]");
		return -1;
	}
	snprintf(rest, sizeof(rest), "%s", option);
	t = strstr(rest, ",timeout=");
	if (t) {
		errno = 0;
		v = strtol(t + 9, &end, 10);
		if (errno || *end || v < 1 || v > ZK_MAX_TIMEOUT) {
			sd_err("zookeeper: timeout=%s: give the session timeout "
			       "in seconds, 1 to %d", t + 9, ZK_MAX_TIMEOUT);
			return -1;
		}
		zs.timeout = (int)v;
		rest[t - rest] = 0;
	}
	slash = strchr(rest, '/');
	if (slash) {
		size_t n = strlen(slash + 1);

		if (!n || n > ZK_MAX_CLUSTER ||
		    strspn(slash + 1, "abcdefghijklmnopqrstuvwxyz"
				      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
		    != n || !strcmp(slash + 1, ".") ||
		    !strcmp(slash + 1, "..") ||
		    !strcmp(slash + 1, "zookeeper")) {
			sd_err("zookeeper: cluster id '%s': 1 to %d letters, "
			       "digits, '.', '_' or '-'", slash + 1,
			       ZK_MAX_CLUSTER);
			return -1;
		}
		snprintf(zs.root, sizeof(zs.root), "/%s", slash + 1);
		rest[slash - rest] = 0;
	}
	if (!rest[0] || strchr(rest, '=')) {
		sd_err("zookeeper: '%s': expected HOST:PORT[,HOST:PORT...]",
		       rest);
		return -1;
	}
	snprintf(zs.hosts, sizeof(zs.hosts), "%s", rest);
	return 0;
}

static bool is_connected(void)
{
	bool c;

	pthread_mutex_lock(&zs.lock);
	c = zs.connected;
	pthread_mutex_unlock(&zs.lock);
	return c;
}

/*
 * The library's own messages go to sheep's log, at most one per 10 s:
 * while the ensemble is away it reports every attempt to reconnect.
 */
static void zk_log(const char *message)
{
	static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t last;
	static unsigned long quiet;
	uint64_t now = now_msec();

	pthread_mutex_lock(&log_lock);
	if (last && now - last < 10000) {
		quiet++;
		pthread_mutex_unlock(&log_lock);
		return;
	}
	last = now;
	if (quiet)
		sd_warn("ZooKeeper client: %s (%lu more message(s) not "
			"logged)", message, quiet);
	else
		sd_warn("ZooKeeper client: %s", message);
	quiet = 0;
	pthread_mutex_unlock(&log_lock);
}

/* connect (bounded by the session timeout) and create the tree */
static int zk_connect(void)
{
	uint64_t deadline = now_msec() + (uint64_t)zs.timeout * 1000;
	char path[256];
	int rc;

	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zs.zh = zookeeper_init2(zs.hosts, session_watcher, zs.timeout * 1000,
				NULL, NULL, 0, zk_log);
	if (!zs.zh) {
		sd_err("zookeeper: cannot set up a session with %s: %m",
		       zs.hosts);
		return -1;
	}
	while (!is_connected()) {
		if (now_msec() >= deadline) {
			sd_err("zookeeper: no answer from %s within %d s: is "
			       "it running?", zs.hosts, zs.timeout);
			return -1;
		}
		usleep(50 * 1000);
	}
	zs.me = (uint64_t)zoo_client_id(zs.zh)->client_id;
	/* the ensemble bounds what we ask (its min and max session timeout) */
	zs.timeout_ms = (uint64_t)zoo_recv_timeout(zs.zh);
	if (zs.timeout_ms != (uint64_t)zs.timeout * 1000)
		sd_warn("zookeeper: the ensemble grants sessions of %" PRIu64
			" ms, not the %d s asked for", zs.timeout_ms,
			zs.timeout);
	rc = zoo_create(zs.zh, zs.root, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0,
			NULL, 0);
	if (rc == ZNODEEXISTS)
		rc = ZOK;
	if (rc == ZOK)
		rc = ensure("/live");
	if (rc == ZOK)
		rc = ensure("/queue");
	if (rc == ZOK)
		rc = ensure("/procs");
	if (rc == ZOK) {
		snprintf(path, sizeof(path), "%s/live/%016" PRIx64, zs.root,
			 zs.me);
		rc = zoo_create(zs.zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
				ZOO_EPHEMERAL, NULL, 0);
	}
	if (rc != ZOK) {
		sd_err("zookeeper: cannot create %s: %s", zs.root, zerror(rc));
		return -1;
	}
	return 0;
}

/* ---- a clean exit ---- */

static pthread_mutex_t bye_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bye_cond = PTHREAD_COND_INITIALIZER;
static bool bye_done;

static void bye_cb(int rc, const void *data)
{
	pthread_mutex_lock(&bye_lock);
	bye_done = true;
	pthread_cond_signal(&bye_cond);
	pthread_mutex_unlock(&bye_lock);
}

/*
 * Our live znode goes at exit, not when the session expires: the others
 * remove us at once, and a cluster restarted at once does not wait a
 * session timeout for us.  At most a second.
 */
static void zk_atexit(void)
{
	char path[256];
	struct timespec ts;

	if (!zs.zh || !is_connected())
		return;
	snprintf(path, sizeof(path), "%s/live/%016" PRIx64, zs.root, zs.me);
	if (zoo_adelete(zs.zh, path, -1, bye_cb, NULL) != ZOK)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	pthread_mutex_lock(&bye_lock);
	while (!bye_done)
		if (pthread_cond_timedwait(&bye_cond, &bye_lock, &ts))
			break;
	pthread_mutex_unlock(&bye_lock);
}

static int zk_init(const char *option, struct event_loop *loop,
		   const struct cluster_handlers *h)
{
	char where[sizeof(zs.hosts) + sizeof(zs.root) + 16];

	if (zs.inited || !loop || parse_option(option))
		return -1;
	zs.loop = loop;
	zs.buf = xmalloc(MAX_EVENT);
	if (zk_connect())
		goto fail;
	zs.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (zs.efd < 0)
		goto fail;
	snprintf(where, sizeof(where), "ZooKeeper %s%s", zs.hosts, zs.root);
	if (pg_init(&zk_transport, loop, h, to_pg(zs.me), where) ||
	    event_add(loop, zs.efd, EPOLLIN, efd_fn, NULL))
		goto fail;
	zs.inited = true;
	atexit(zk_atexit);
	sd_info("zookeeper driver: %s, cluster %s, session %016" PRIx64
		", timeout %" PRIu64 " ms", zs.hosts, zs.root, zs.me,
		zs.timeout_ms);
	return 0;
fail:
	if (zs.zh)
		zookeeper_close(zs.zh);
	zs.zh = NULL;
	if (zs.efd >= 0)
		close(zs.efd);
	zs.efd = -1;
	return -1;
}

static int zk_join(const struct sd_node *myself, const void *opaque,
		   size_t len)
{
	if (!zs.inited || zs.join_called || pg_join(myself, opaque, len))
		return -1;
	zs.join_called = true;
	if (pthread_create(&zs.thread, NULL, zk_thread, NULL)) {
		sd_err("zookeeper: cannot start its thread");
		return -1;
	}
	return 0;
}

struct cluster_driver cdrv_zookeeper = {
	.name = "zookeeper",
	.init = zk_init,
	.join = zk_join,
	.leave = pg_leave,
	.notify = pg_notify,
	.block = pg_block,
	.unblock = pg_unblock,
};
