// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Missing epoch records, fetched from the members one epoch at a time.
 *
 * Each epoch is asked of one member; after EPOCH_FETCH_HEDGE_MS without
 * an answer the next member is asked too, and the first good answer
 * wins.  A member that does not answer (stopped, overloaded, not yet
 * found dead) held every epoch for the peer timeout (30 s) before: with
 * a few epochs missed, a joiner's recovery (and every request parked for
 * it) waited minutes.  The next epoch is asked first of the member that
 * gave the last one, so one silent member costs a second, not one per
 * epoch.  The first epoch is asked first of the member after this node in
 * node order: nodes that join together spread their asks over the
 * members, not all on the first.  An answer that comes after its epoch was settled is stored if
 * the record is still missing, and dropped otherwise.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "event.h"
#include "net.h"
#include "util.h"
#include "core/core.h"
#include "net/peer.h"
#include "state/cluster.h"
#include "state/epoch.h"
#include "group/epoch_fetch.h"

/*
 * Only the newest EPOCH_FETCH_MAX: an epoch number from a join message
 * must not turn into billions of requests (found by fuzz_cluster_msg).
 */
#define EPOCH_FETCH_MAX		4096
#define EPOCH_FETCH_HEDGE_MS	1000
/* an epoch record: its header and at most every node */
#define EPOCH_FETCH_BUF ((uint32_t)(SD_MAX_NODES * sizeof(struct sd_node) + 8))

struct epoch_fetch {
	uint32_t epoch;		/* being fetched */
	uint32_t last;		/* the newest one to fetch */
	size_t first;		/* asked first: the member that gave the last */
	size_t tried;		/* members asked for this epoch, from first */
	int inflight;		/* asks for this epoch not yet answered */
	int refs;		/* unanswered asks, and 1 while it runs */
	bool hedged;		/* this epoch waited for a silent member */
	bool submitting;	/* ask_next() is in peer_submit() */
	bool again;		/* ...and an answer in it wants the next ask */
	struct timer hedge;
};

struct epoch_ask {
	struct peer_req pr;
	struct epoch_fetch *f;
	uint32_t epoch;
	size_t member;		/* index in the members when asked */
};

static struct epoch_fetch *running;
static bool fetch_again;
static void (*fetch_done)(void);

static void ask_next(struct epoch_fetch *f);

bool epoch_fetch_busy(void)
{
	return running != NULL;
}

static void fetch_put(struct epoch_fetch *f)
{
	sd_assert(f->refs > 0);
	if (!--f->refs)
		free(f);
}

static bool epoch_missing(uint32_t epoch)
{
	char path[4200];

	epoch_path(path, sizeof(path), epoch);
	return access(path, F_OK) != 0;
}

static void fetch_finish(struct epoch_fetch *f)
{
	sd_assert(running == f);
	timer_del(&f->hedge);
	running = NULL;
	fetch_put(f);
	if (fetch_again) {
		fetch_again = false;
		epoch_fetch_start(fetch_done);
	}
	fetch_done();
}

/* on to the next missing epoch, or done */
static void fetch_advance(struct epoch_fetch *f)
{
	while (f->epoch < f->last) {
		f->epoch++;
		if (epoch_missing(f->epoch)) {
			f->tried = 0;
			f->inflight = 0;
			f->hedged = false;
			ask_next(f);
			return;
		}
	}
	fetch_finish(f);
}

static void store_epoch(uint32_t epoch, const void *buf, uint32_t len)
{
	char path[4200];

	epoch_path(path, sizeof(path), epoch);
	if (access(path, F_OK) && write_file_atomic(path, buf, len))
		sd_err("cannot store epoch %" PRIu32 ": %m", epoch);
}

static void ask_done(struct peer_req *pr, int result)
{
	struct epoch_ask *a = container_of(pr, struct epoch_ask, pr);
	struct epoch_fetch *f = a->f;
	uint32_t len = pr->rp.data_length;
	bool ok = result == SD_RES_SUCCESS && len >= 8 &&
		  (len - 8) % sizeof(struct sd_node) == 0;

	if (ok)
		store_epoch(a->epoch, pr->rbuf, len);
	if (running == f && a->epoch == f->epoch) {
		f->inflight--;
		if (ok) {
			f->first = a->member;
			fetch_advance(f);
		} else {
			/* this member lacks it too: ask the next one */
			ask_next(f);
		}
	}
	free(pr->rbuf);
	free(a);
	fetch_put(f);
}

static void hedge_fire(struct timer *t)
{
	struct epoch_fetch *f = container_of(t, struct epoch_fetch, hedge);

	if (!f->hedged)
		sd_info("epoch %" PRIu32 ": no answer within %d ms, asking "
			"another member too", f->epoch, EPOCH_FETCH_HEDGE_MS);
	f->hedged = true;
	ask_next(f);
}

/* ask the next member not yet asked for f->epoch; none left: move on */
static void ask_one(struct epoch_fetch *f)
{
	const struct sd_node *m = cstate->members;
	size_t nr = cstate->nr_members, i;
	struct epoch_ask *a;

	do {
		if (f->tried >= nr) {
			/* an answer still due decides (or its timeout) */
			if (f->inflight)
				return;
			sd_warn("no member has epoch %" PRIu32, f->epoch);
			fetch_advance(f);
			return;
		}
		i = (f->first + f->tried++) % nr;
	} while (node_is_self(&m[i]));

	a = xzalloc(sizeof(*a));
	a->f = f;
	a->epoch = f->epoch;
	a->member = i;
	f->refs++;
	f->inflight++;
	sd_init_req(&a->pr.rq, SD_OP_GET_EPOCH);
	a->pr.rq.obj.tgt_epoch = f->epoch;
	a->pr.rq.data_length = EPOCH_FETCH_BUF;
	a->pr.rbuf_len = EPOCH_FETCH_BUF;
	a->pr.alloc_rbuf = peer_reply_sized_buf;
	a->pr.done = ask_done;
	/*
	 * before the submit: a connection that cannot be made answers at
	 * once, and the fetch may end (and @f go) within peer_submit()
	 */
	timer_add(sys.loop, &f->hedge, EPOCH_FETCH_HEDGE_MS);
	peer_submit(&m[i].nid, &a->pr);
}

/*
 * ask_one() in a loop: an answer given inside peer_submit() (no
 * connection can be made: fd exhaustion, say) wants the next ask, or the
 * next epoch's, from within it; it only marks that here, and the loop
 * makes it.  Called back directly, every member and epoch asked was a
 * stack frame deeper (up to EPOCH_FETCH_MAX times the members).  The
 * reference keeps @f while an answer in peer_submit() ends the fetch.
 */
static void ask_next(struct epoch_fetch *f)
{
	if (f->submitting) {
		f->again = true;
		return;
	}
	f->refs++;
	f->submitting = true;
	do {
		f->again = false;
		ask_one(f);
	} while (f->again && running == f);
	f->submitting = false;
	fetch_put(f);
}

void epoch_fetch_start(void (*done)(void))
{
	struct epoch_fetch *f;

	fetch_done = done;
	if (cstate->epoch < 2)
		return;
	if (running) {
		fetch_again = true;
		return;
	}
	f = xzalloc(sizeof(*f));
	f->refs = 1;
	f->hedge.fn = hedge_fire;
	f->last = cstate->epoch - 1;
	f->epoch = f->last > EPOCH_FETCH_MAX ? f->last - EPOCH_FETCH_MAX : 0;
	for (size_t i = 0; i < cstate->nr_members; i++)
		if (node_is_self(&cstate->members[i]))
			f->first = i + 1;
	running = f;
	fetch_advance(f);
}
