// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Connection slots.  A client flood must not take what replication needs:
 * connections from an address that is a cluster member's (the sheep
 * there, and the clients on its host), or from the unix socket, may use
 * every slot; those from other addresses share the public slots, at most
 * a quarter of them from one address.  The public slots are bounded by
 * the descriptors the process may open, less what the store, the peers
 * and the rest of the daemon need, so that a flood meets a refusal at
 * accept and never an empty descriptor table.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "front/slots.h"

#define SOURCE_BUCKETS	1024

struct source {
	uint8_t addr[16];
	unsigned int n;		/* its connections taking public slots */
	unsigned int conns;	/* all its connections */
	uint64_t incomplete;	/* slots_incomplete() */
	struct source *next;
};

static struct source *sources[SOURCE_BUCKETS];
static unsigned int nr_public, max_public = SD_MAX_CLIENTS;

void slots_init(uint64_t nofile)
{
	uint64_t room = nofile > SLOTS_FD_HEADROOM ?
			nofile - SLOTS_FD_HEADROOM : 0;

	max_public = (unsigned int)MIN(room, (uint64_t)SD_MAX_CLIENTS);
	if (max_public < SLOTS_MIN_PUBLIC)
		max_public = SLOTS_MIN_PUBLIC;
	if (max_public < SD_MAX_CLIENTS)
		sd_notice("client connections from other hosts: at most %u (a "
			  "file descriptor limit of %" PRIu64 ")", max_public,
			  nofile);
}

int slots_listener_max(void)
{
	return (int)(max_public + SLOTS_MEMBER_RESERVE);
}

static struct source **source_slot(const uint8_t addr[16])
{
	uint64_t h = fnv_64a_buf(addr, 16, FNV1A_64_INIT);
	struct source **p = &sources[h % SOURCE_BUCKETS];

	while (*p && memcmp((*p)->addr, addr, 16))
		p = &(*p)->next;
	return p;
}

static struct source *source_get(const uint8_t addr[16])
{
	struct source **p = source_slot(addr), *s = *p;

	if (!s) {
		s = xzalloc(sizeof(*s));
		memcpy(s->addr, addr, 16);
		*p = s;
	}
	return s;
}

bool slots_take(const uint8_t addr[16], bool member)
{
	static struct log_limit ll_full, ll_source;
	struct source **p, *s;

	if (member) {
		source_get(addr)->conns++;
		return true;
	}
	if (nr_public >= max_public) {
		sd_warn_limited(&ll_full, "client connections from other hosts:"
				" all %u slots taken: refusing", max_public);
		return false;
	}
	p = source_slot(addr);
	s = *p;
	if (s && s->n >= SLOTS_PER_SOURCE(max_public)) {
		char a[64];

		sd_warn_limited(&ll_source, "%s holds %u connections, its share"
				": refusing", addr_to_str(addr, a, sizeof(a)),
				s->n);
		return false;
	}
	s = source_get(addr);
	s->n++;
	s->conns++;
	nr_public++;
	return true;
}

void slots_put(const uint8_t addr[16], bool member)
{
	struct source **p = source_slot(addr), *s = *p;

	sd_assert(s && s->conns > 0);
	if (!member) {
		sd_assert(s->n > 0 && nr_public > 0);
		s->n--;
		nr_public--;
	}
	if (--s->conns)
		return;
	sd_assert(!s->n && !s->incomplete);
	*p = s->next;
	free(s);
}

void slots_track(const uint8_t addr[16])
{
	source_get(addr)->conns++;
}

void slots_untrack(const uint8_t addr[16])
{
	slots_put(addr, true);
}

static struct source *source_open(const uint8_t addr[16])
{
	struct source *s = *source_slot(addr);

	sd_assert(s && s->conns > 0);
	return s;
}

bool slots_incomplete_full(const uint8_t addr[16], uint64_t cost)
{
	uint64_t used, limit, held = source_open(addr)->incomplete;

	budget_read(&used, &limit);
	/* one payload always may: a share smaller than it must not wedge */
	return held && held + cost > limit / SLOTS_INCOMPLETE_SHARE;
}

void slots_incomplete_add(const uint8_t addr[16], uint64_t cost)
{
	source_open(addr)->incomplete += cost;
}

void slots_incomplete_sub(const uint8_t addr[16], uint64_t cost)
{
	struct source *s = source_open(addr);

	sd_assert(s->incomplete >= cost);
	s->incomplete -= cost;
	budget_release(0);	/* a parked payload may come now */
}
