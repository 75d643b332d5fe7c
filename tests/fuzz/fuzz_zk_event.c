// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: the readers of the ZooKeeper driver
 * (sheep/group/zookeeper.c) over what the ensemble hands back: the
 * queue's child names (read_queue: sequence numbers), its events (JOIN,
 * LEFT, LEFT_SET, MSG with per-sender counters, in the KZQ1 format) and the procs
 * list (KZP1), as a broken or hostile client of the same ensemble could
 * have written them.  The items the readers post for the event loop are
 * delivered to stubs of the membership protocol, which check what they
 * get (that protocol is fuzzed by fuzz_procgroup).
 *
 * zookeeper.c keeps its state static, so this file includes it (the real
 * file, unchanged) and resets that state per input; the ZooKeeper calls
 * the readers make are wrapped (-Wl,--wrap) to answer from the input.
 *
 * Input: operations, each a byte (low 2 bits: what) and what it needs:
 *   0 queue round: a count byte, then per child a name kind byte (well
 *     formed "e-N" with N from the input, or raw bytes) and per event a
 *     2-byte length and its bytes, or an event built well-formed (kind,
 *     sender from a pool of 16, counter byte, payload length byte)
 *   1 procs:       2-byte length and the bytes of the procs znode
 *   2 deliver:     hand the posted items to the stubs, free them
 *   3 find join:   look for our own JOIN in a queue round as above
 */
#include "group/zookeeper.c"

#include "fuzz_input.h"

#define POOL		16
#define MAX_CHILDREN	32

static struct fuzz_in in;

/* ---- the membership protocol's side: check what arrives ---- */

void pg_transport_joined(void)
{
}

void pg_confchg(const struct pg_addr *members, size_t nr_members,
		const struct pg_addr *left, size_t nr_left,
		const struct pg_addr *joined, size_t nr_joined)
{
	/* one joined, or one or more (LEFT_SET) left, none still a member */
	if (nr_members > MAX_PROCS || nr_joined > 1 || !(nr_left + nr_joined) ||
	    (nr_joined && nr_left))
		abort();
	for (size_t i = 0; i < nr_members; i++) {
		if (members[i].reason != PG_REASON_JOIN)
			abort();
		for (size_t k = 0; k < nr_left; k++)
			if (!memcmp(&members[i].id, &left[k].id,
				    sizeof(left[k].id)))
				abort();
	}
}

void pg_deliver(struct pg_id from, const void *msg, size_t len)
{
	if (len > MAX_EVENT)
		abort();
	if (len)	/* every byte readable */
		(void)((volatile const uint8_t *)msg)[len - 1];
}

void pg_process(void)
{
}

void pg_die(void)
{
	abort();	/* IT_FATAL is never posted by the readers */
}

int pg_join(const struct sd_node *myself, const void *opaque, size_t len)
{
	return 0;
}

int pg_leave(void)
{
	return 0;
}

int pg_notify(const void *msg, size_t len)
{
	return 0;
}

int pg_block(void)
{
	return 0;
}

int pg_unblock(const void *msg, size_t len)
{
	return 0;
}

int pg_init(const struct pg_transport *tr, struct event_loop *loop,
	    const struct cluster_handlers *h, struct pg_id me,
	    const char *where)
{
	return 0;
}

/* ---- the ensemble's side: answers from the input ---- */

struct child {
	char name[24];
	uint16_t len;
	uint8_t data[64 + EV_HDR];
	const uint8_t *raw;	/* or the input's bytes */
};

static struct child children[MAX_CHILDREN];
static int nr_children;
static const uint8_t *procs_data;
static uint16_t procs_len;

static void take_child(struct child *c)
{
	uint8_t how = take_u8(&in);
	int kind;

	if (how & 1)
		snprintf(c->name, sizeof(c->name), "e-%010u",
			 (unsigned int)take_u16(&in));
	else {
		memset(c->name, 0, sizeof(c->name));
		take_bytes(&in, c->name, (how >> 2) % sizeof(c->name));
	}
	c->raw = NULL;
	if (how & 2) {
		c->len = take_u16(&in) % 4096;
		c->raw = take_ptr(&in, c->len);
		if (!c->raw)
			c->len = 0;
		return;
	}
	/* well-formed: kind, sender, counter, payload */
	kind = 1 + take_u8(&in) % 4;
	if (kind == EV_LEFT_SET) {
		/* n = 1..8 senders of the pool */
		size_t n = 1 + take_u8(&in) % 8;

		encode_event(c->data, kind, 0, n);
		for (size_t i = 0; i < n; i++)
			put_le64(c->data + EV_HDR + 8 * i,
				 take_u8(&in) % POOL);
		c->len = EV_HDR + 8 * n;
		return;
	}
	encode_event(c->data, kind, take_u8(&in) % POOL, take_u8(&in));
	c->len = EV_HDR + take_u8(&in) % 64;
	take_bytes(&in, c->data + EV_HDR, c->len - EV_HDR);
}

static void take_round(void)
{
	nr_children = take_u8(&in) % (MAX_CHILDREN + 1);
	for (int i = 0; i < nr_children; i++)
		take_child(&children[i]);
}

static struct child *child_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	for (int i = 0; i < nr_children; i++)
		if (slash && !strcmp(slash + 1, children[i].name))
			return &children[i];
	return NULL;
}

static int fill_children(struct String_vector *sv)
{
	sv->count = nr_children;
	sv->data = xzalloc(((size_t)nr_children + 1) * sizeof(char *));
	for (int i = 0; i < nr_children; i++)
		sv->data[i] = xstrdup(children[i].name);
	return ZOK;
}

int __wrap_zoo_wget_children(zhandle_t *zh, const char *path,
			     watcher_fn watcher, void *ctx,
			     struct String_vector *sv)
{
	return fill_children(sv);
}

int __wrap_zoo_get_children(zhandle_t *zh, const char *path, int watch,
			    struct String_vector *sv)
{
	return fill_children(sv);
}

int __wrap_deallocate_String_vector(struct String_vector *sv)
{
	for (int i = 0; i < sv->count; i++)
		free(sv->data[i]);
	free(sv->data);
	sv->data = NULL;
	sv->count = 0;
	return 0;
}

int __wrap_zoo_get(zhandle_t *zh, const char *path, int watch, char *buf,
		   int *len, struct Stat *stat)
{
	const uint8_t *src;
	int n;

	if (strstr(path, "/procs")) {
		src = procs_data;
		n = procs_data ? procs_len : 0;
		if (stat)
			stat->version = 1;
	} else {
		struct child *c = child_of(path);

		if (!c)
			return ZNONODE;
		src = c->raw ? c->raw : c->data;
		n = c->len;
	}
	if (n > *len)
		n = *len;	/* ZooKeeper truncates to the buffer */
	if (n)
		memcpy(buf, src, (size_t)n);
	*len = n;
	return ZOK;
}

/* ---- per input ---- */

static void drain(void)
{
	struct item *it, *n;

	list_for_each_entry_safe(it, n, &zs.inbox, list) {
		list_del(&it->list);
		deliver_item(it);
		free(it->members);
		free(it);
	}
}

static void reset(void)
{
	drain();
	free(zs.members);
	free(zs.senders);
	zs.members = NULL;
	zs.senders = NULL;
	zs.nr_members = zs.nr_senders = 0;
	zs.pos = 0;
	zs.me = 3;
	snprintf(zs.root, sizeof(zs.root), "/sheepdog");
	procs_data = NULL;
	nr_children = 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	zs.buf = xmalloc(MAX_EVENT);
	zs.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (zs.efd < 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t ids[MAX_PROCS], seq;
	size_t nr;
	int version;

	fuzz_in_init(&in, data, size);
	reset();
	while (fuzz_left(&in)) {
		switch (take_u8(&in) & 3) {
		case 0:
			take_round();
			read_queue();
			break;
		case 1:
			procs_len = take_u16(&in);
			procs_data = take_ptr(&in, procs_len);
			if (procs_read(ids, &nr, &version) == ZOK &&
			    nr > MAX_PROCS)
				abort();
			break;
		case 2:
			drain();
			break;
		case 3:
			take_round();
			find_my_join(&seq);
			break;
		}
	}
	reset();
	return 0;
}
