// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The placement simulator's core: see placement.h.  The ring is the
 * daemon's (lib/hash.c), fed the member list a cluster of these nodes
 * would have; nothing here re-implements it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "util.h"
#include "placement.h"

uint64_t sim_oid(size_t i)
{
	/* 256 VDIs with vids spread like hashed names, data indexes in each */
	uint32_t vid = (uint32_t)((i % 256) * 0x10001 + 0x7c2b25) & 0xffffff;

	return ((uint64_t)vid << 32) | (uint64_t)(i / 256);
}

/* ---- the daemon's ring ---- */

static void to_sd_node(const struct sim_node *n, uint16_t vnodes,
		       struct sd_node *sd)
{
	memset(sd, 0, sizeof(*sd));
	/* an IPv4-mapped 10.x.y.z address made of the id, port 7000 */
	sd->nid.addr[10] = 0xff;
	sd->nid.addr[11] = 0xff;
	sd->nid.addr[12] = 10;
	sd->nid.addr[13] = (uint8_t)(n->id >> 16);
	sd->nid.addr[14] = (uint8_t)(n->id >> 8);
	sd->nid.addr[15] = (uint8_t)n->id;
	sd->nid.port = 7000;
	sd->nr_vnodes = vnodes ? vnodes : 1;	/* 1: weighed below */
	sd->zone = n->zone;
	sd->space = n->space;
	/* the ring copies nodes whole: the id rides in the unused links */
	memcpy(sd->rb, &n->id, sizeof(n->id));
}

static uint32_t sd_node_id(const struct sd_node *sd)
{
	uint32_t id;

	memcpy(&id, sd->rb, sizeof(id));
	return id;
}

/* the counts sheep gives @sd: fixed, by the mean, or stable */
static void weigh(struct sd_node *sd, size_t nr, const struct sim_layout *lay)
{
	struct sd_node *prev;

	if (lay->fixed_vnodes)
		return;
	if (!lay->stable) {
		nodes_auto_vnodes(sd, nr);
		return;
	}
	if (!lay->prev) {
		nodes_stable_vnodes(sd, nr, NULL, 0, lay->base);
		return;
	}
	/* the members before were weighed at format: by the mean */
	prev = xzalloc(lay->nr_prev * sizeof(*prev));
	for (size_t i = 0; i < lay->nr_prev; i++)
		to_sd_node(&lay->prev[i], 0, &prev[i]);
	nodes_stable_vnodes(prev, lay->nr_prev, NULL, 0, lay->base);
	nodes_stable_vnodes(sd, nr, prev, lay->nr_prev, lay->base);
	free(prev);
}

static int place_ring(const struct sim_node *nodes, size_t nr,
		      const struct sim_layout *lay, struct sim_placement *out)
{
	struct sd_node *sd = xzalloc(nr * sizeof(*sd));
	struct vnode_ring ring;
	int tgt[SD_MAX_COPIES];

	for (size_t i = 0; i < nr; i++)
		to_sd_node(&nodes[i], lay->fixed_vnodes, &sd[i]);
	weigh(sd, nr, lay);
	if (ring_build(&ring, sd, nr)) {
		free(sd);
		return -1;
	}
	out->width = lay->copies < ring.nr_zones ? lay->copies : ring.nr_zones;
	for (size_t o = 0; o < lay->nr_objects; o++) {
		int n = ring_targets(&ring, sim_oid(o), lay->copies, tgt);

		sd_assert(n == out->width);
		for (int c = 0; c < n; c++)
			out->node[o * (size_t)lay->copies + (size_t)c] =
				sd_node_id(&ring.nodes[tgt[c]]);
	}
	ring_free(&ring);
	free(sd);
	return 0;
}

/* ---- weighted rendezvous hashing, zone-distinct, the reference ---- */

static uint64_t mix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* the node's score for an object: weight / -ln(u), u uniform in (0, 1) */
static double hrw_score(uint64_t oid, const struct sim_node *n)
{
	uint64_t h = mix64(oid ^ mix64(n->id));
	double u = ((double)(h >> 11) + 0.5) / 9007199254740992.0;

	return (double)n->space / -log(u);
}

struct hrw_pick {
	double score;
	uint32_t id, zone;
};

/* keep @best (by score, high first) to the top @k of distinct zones */
static int hrw_offer(struct hrw_pick *best, int n, int k, struct hrw_pick c)
{
	int i;

	for (i = 0; i < n; i++) {
		if (best[i].zone != c.zone)
			continue;
		if (best[i].score >= c.score)
			return n;
		memmove(&best[i], &best[i + 1], (size_t)(n - i - 1) *
			sizeof(*best));
		n--;
		break;
	}
	if (n == k && best[n - 1].score >= c.score)
		return n;
	if (n == k)
		n--;
	for (i = n; i > 0 && best[i - 1].score < c.score; i--)
		best[i] = best[i - 1];
	best[i] = c;
	return n + 1;
}

static int count_zones(const struct sim_node *nodes, size_t nr, int cap)
{
	int n = 0;

	for (size_t i = 0; i < nr && n < cap; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = nodes[j].zone == nodes[i].zone;
		n += !seen;
	}
	return n;
}

static int place_hrw(const struct sim_node *nodes, size_t nr,
		     const struct sim_layout *lay, struct sim_placement *out)
{
	struct hrw_pick best[SD_MAX_COPIES];

	out->width = count_zones(nodes, nr, lay->copies);
	for (size_t o = 0; o < lay->nr_objects; o++) {
		uint64_t oid = sim_oid(o);
		int n = 0;

		for (size_t i = 0; i < nr; i++) {
			struct hrw_pick c = {
				.score = hrw_score(oid, &nodes[i]),
				.id = nodes[i].id, .zone = nodes[i].zone,
			};

			n = hrw_offer(best, n, out->width, c);
		}
		sd_assert(n == out->width);
		for (int c = 0; c < n; c++)
			out->node[o * (size_t)lay->copies + (size_t)c] =
				best[c].id;
	}
	return 0;
}

int sim_place(enum sim_algo algo, const struct sim_node *nodes, size_t nr,
	      const struct sim_layout *lay, struct sim_placement *out)
{
	sd_assert(lay->copies > 0 && lay->copies <= SD_MAX_COPIES);
	out->node = xzalloc(lay->nr_objects * (size_t)lay->copies *
			    sizeof(*out->node));
	if ((algo == SIM_RING ? place_ring : place_hrw)(nodes, nr, lay, out)) {
		sim_placement_free(out);
		return -1;
	}
	return 0;
}

bool sim_zones_distinct(const struct sim_node *nodes, size_t nr,
			const struct sim_placement *p,
			const struct sim_layout *lay)
{
	uint32_t *zone = xzalloc(lay->nr_ids * sizeof(*zone));
	bool ok = true;

	for (size_t i = 0; i < nr; i++)
		zone[nodes[i].id] = nodes[i].zone;
	for (size_t o = 0; o < lay->nr_objects && ok; o++) {
		const uint32_t *n = &p->node[o * (size_t)lay->copies];

		for (int c = 0; c < p->width && ok; c++)
			for (int d = 0; d < c && ok; d++)
				ok = zone[n[c]] != zone[n[d]];
	}
	free(zone);
	return ok;
}

void sim_placement_free(struct sim_placement *p)
{
	free(p->node);
	p->node = NULL;
}

/* ---- measures ---- */

static double total_space(const struct sim_node *nodes, size_t nr)
{
	double w = 0;

	for (size_t i = 0; i < nr; i++)
		w += (double)nodes[i].space;
	return w;
}

double sim_balance(const struct sim_node *nodes, size_t nr,
		   const struct sim_placement *p,
		   const struct sim_layout *lay, bool by_zone)
{
	uint64_t *count = xzalloc(lay->nr_ids * sizeof(*count));
	double *space = xzalloc(lay->nr_ids * sizeof(*space));
	uint32_t *key = xzalloc(lay->nr_ids * sizeof(*key));
	double copies = (double)lay->nr_objects * p->width, worst = 0;

	/* a node's key: itself, or its zone (zone ids are below nr_ids) */
	for (size_t i = 0; i < nr; i++) {
		key[nodes[i].id] = by_zone ? nodes[i].zone : nodes[i].id;
		space[key[nodes[i].id]] += (double)nodes[i].space;
	}
	for (size_t o = 0; o < lay->nr_objects; o++)
		for (int c = 0; c < p->width; c++)
			count[key[p->node[o * (size_t)lay->copies +
					  (size_t)c]]]++;
	for (uint32_t k = 0; k < lay->nr_ids; k++)
		if (space[k] > 0 && (double)count[k] / space[k] > worst)
			worst = (double)count[k] / space[k];
	worst /= copies / total_space(nodes, nr);
	free(count);
	free(space);
	free(key);
	return worst;
}

/*
 * How much each node's share (in copies) grows, for a placement that gives
 * each node copies in proportion to its capacity (at most one per object)
 */
static double *share_growth(const struct sim_node *before, size_t nb,
			    const struct sim_node *after, size_t na,
			    const struct sim_layout *lay, int wb, int wa)
{
	double *grow = xzalloc(lay->nr_ids * sizeof(*grow));
	double wsum_b = total_space(before, nb), wsum_a = total_space(after,
								      na);
	double cap = (double)lay->nr_objects;

	for (size_t i = 0; i < nb; i++)
		grow[before[i].id] -= fmin(cap, cap * wb *
					   (double)before[i].space / wsum_b);
	for (size_t i = 0; i < na; i++)
		grow[after[i].id] += fmin(cap, cap * wa *
					  (double)after[i].space / wsum_a);
	return grow;
}

static bool holds(const uint32_t *set, int n, uint32_t id)
{
	for (int i = 0; i < n; i++)
		if (set[i] == id)
			return true;
	return false;
}

/*
 * A move no share change asks for: onto a node whose share does not
 * grow, or off a node that stays and whose share does not shrink
 */
static bool needless_to(const double *grow, uint32_t id)
{
	return grow[id] <= 0;
}

static bool needless_from(const double *grow, const uint8_t *present,
			  uint32_t id)
{
	return present[id] & 2 && grow[id] >= 0;
}

static void compare_strips(const uint32_t *b, int wb, const uint32_t *a,
			   int wa, const double *grow, const uint8_t *present,
			   struct sim_change *out)
{
	/* a strip lives at its position: a shift moves it */
	for (int c = 0; c < wa; c++) {
		if (c < wb && b[c] == a[c])
			continue;
		out->moved++;
		out->needless += needless_to(grow, a[c]) ||
				 (c < wb && needless_from(grow, present, b[c]));
	}
}

static void compare_replicas(const uint32_t *b, int wb, const uint32_t *a,
			     int wa, const double *grow,
			     const uint8_t *present, struct sim_change *out)
{
	int to = 0, from = 0;

	for (int c = 0; c < wa; c++) {
		if (holds(b, wb, a[c]))
			continue;
		out->moved++;
		to += needless_to(grow, a[c]);
	}
	for (int c = 0; c < wb; c++)
		from += !holds(a, wa, b[c]) && needless_from(grow, present,
							     b[c]);
	out->needless += (uint64_t)(to > from ? to : from);
}

void sim_compare(const struct sim_node *before, size_t nr_before,
		 const struct sim_placement *pb,
		 const struct sim_node *after, size_t nr_after,
		 const struct sim_placement *pa,
		 const struct sim_layout *lay, struct sim_change *out)
{
	uint8_t *present = xzalloc(lay->nr_ids);	/* 1 before, 2 after */
	double *grow = share_growth(before, nr_before, after, nr_after, lay,
				    pb->width, pa->width), ideal = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < nr_before; i++)
		present[before[i].id] |= 1;
	for (size_t i = 0; i < nr_after; i++)
		present[after[i].id] |= 2;
	for (size_t o = 0; o < lay->nr_objects; o++) {
		const uint32_t *b = &pb->node[o * (size_t)lay->copies];
		const uint32_t *a = &pa->node[o * (size_t)lay->copies];

		(lay->strips ? compare_strips : compare_replicas)(
			b, pb->width, a, pa->width, grow, present, out);
	}
	/* the least any such placement moves: what the shares grow by */
	for (uint32_t k = 0; k < lay->nr_ids; k++)
		if (grow[k] > 0)
			ideal += grow[k];
	out->ideal = (uint64_t)llround(ideal);
	out->max_before = sim_balance(before, nr_before, pb, lay, false);
	out->max_after = sim_balance(after, nr_after, pa, lay, false);
	out->zone_max_after = sim_balance(after, nr_after, pa, lay, true);
	free(grow);
	free(present);
}

/* the first of @n holders still a member, or -1 */
static int first_alive(const uint32_t *h, int n, const uint8_t *alive)
{
	for (int i = 0; i < n; i++)
		if (alive[h[i]])
			return i;
	return -1;
}

uint64_t sim_recovery_traffic(const struct sim_node *after, size_t nr_after,
			      const struct sim_placement *pb,
			      const struct sim_placement *pa,
			      const struct sim_layout *lay, int data,
			      uint64_t *in, uint64_t *out)
{
	uint8_t *alive = xzalloc(lay->nr_ids);
	uint64_t lost = 0;

	for (size_t i = 0; i < nr_after; i++)
		alive[after[i].id] = 1;
	for (size_t o = 0; o < lay->nr_objects; o++) {
		const uint32_t *b = &pb->node[o * (size_t)lay->copies];
		const uint32_t *a = &pa->node[o * (size_t)lay->copies];
		bool gone = false;

		for (int c = 0; c < pa->width; c++) {
			int src, got = 0;

			if (lay->strips ? c < pb->width && b[c] == a[c] :
			    holds(b, pb->width, a[c]))
				continue;
			in[a[c]]++;
			if (lay->strips && c < pb->width && alive[b[c]]) {
				out[b[c]]++;
				continue;
			}
			if (!lay->strips) {
				src = first_alive(b, pb->width, alive);
				if (src < 0)
					gone = true;
				else
					out[b[src]]++;
				continue;
			}
			/* decoded from data-many strips that survive */
			for (int k = 0; k < pb->width && got < data; k++)
				if (alive[b[k]] && k != c) {
					out[b[k]]++;
					got++;
				}
			gone |= got < data;
		}
		lost += gone;
	}
	free(alive);
	return lost;
}
