// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ringsim: how the daemon's placement behaves at 100 to 10,000 nodes
 * (doc/scale.md).  A cluster of N made-up nodes in racks is placed with
 * the ring of lib/hash.c and with weighted rendezvous hashing; then one
 * membership change at a time (a join, a leave, ten joins, ten kills, a
 * rack lost, one node's capacity doubled) and what it moves.
 *
 *   ringsim [-n NODES] [-o OBJECTS] [-c COPIES | -e D:P] [-r RACK]
 *           [-z node|rack] [-m] [-a ring|hrw|both] [-V VNODES] [-s]
 *   ringsim --check        the properties make check holds the ring to
 *
 * -r: nodes per rack (10); -z: zones are nodes or racks (racks); -m:
 * every other node has twice the capacity; -o: objects (1000 per node);
 * -V: a fixed number of vnodes per node, as sheep -V (default: weighted
 * by capacity, 128 for an average node); -s: stable vnodes, as a cluster
 * formatted with dog cluster format -S weighs them; -b BASE: with -s, the
 * vnodes of a node of the mean capacity at format (dog cluster format -S
 * -N BASE; default 128).  -L GIB: instead of
 * the tables of moves, a model of how long recovery takes when every
 * node holds GIB of data and moves it at -N Gbit/s (10) and -W MB/s
 * (400) at most: the busiest node sets the time.
 */
#include <getopt.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"
#include "placement.h"

#define TiB	(UINT64_C(1) << 40)

struct sim_opts {
	size_t nodes, objects;
	int copies, data;	/* data > 0: erasure coding data:parity */
	uint32_t rack;
	bool zone_rack, mixed;
	int algos;		/* bit 0 ring, bit 1 rendezvous */
	uint16_t vnodes;	/* fixed vnodes per node (sheep -V), 0: auto */
	bool stable;		/* stable vnodes (dog cluster format -S) */
	uint16_t base;		/* -b: with -s, a mean node's vnodes (-N) */
	double data_gib;	/* -L: data per node, the recovery model */
	double net_gbit, disk_mbps;	/* -N, -W: a node's rates */
};

struct cluster {
	struct sim_node *n;
	size_t nr;
};

static struct sim_node mk_node(const struct sim_opts *o, uint32_t id)
{
	return (struct sim_node){
		.id = id,
		.zone = o->zone_rack ? id / o->rack : id,
		.space = o->mixed && id % 2 ? 2 * TiB : TiB,
	};
}

static void base_cluster(const struct sim_opts *o, struct cluster *c)
{
	c->nr = o->nodes;
	c->n = xmalloc((c->nr + 16) * sizeof(*c->n));
	for (size_t i = 0; i < c->nr; i++)
		c->n[i] = mk_node(o, (uint32_t)i);
}

static void copy_cluster(const struct cluster *from, struct cluster *to)
{
	to->nr = from->nr;
	to->n = xmalloc((from->nr + 16) * sizeof(*to->n));
	memcpy(to->n, from->n, from->nr * sizeof(*to->n));
}

static void drop_id(struct cluster *c, uint32_t id)
{
	for (size_t i = 0; i < c->nr; i++)
		if (c->n[i].id == id) {
			c->n[i] = c->n[--c->nr];
			return;
		}
}

enum scenario { JOIN1, LEAVE1, JOIN10, KILL10, RACK, REWEIGHT, NR_SCEN };

static const char *const scen_name[NR_SCEN] = {
	"one node joins", "one node leaves", "ten nodes join at once",
	"ten nodes killed at once", "a rack of nodes lost",
	"one node's capacity doubled",
};

/* the cluster after @s, from @c (made of ids below o->nodes) */
static void apply(const struct sim_opts *o, enum scenario s,
		  struct cluster *c)
{
	uint32_t n = (uint32_t)o->nodes;

	switch (s) {
	case JOIN1:
		/* into an existing rack, as a node added to a half-full one */
		c->n[c->nr] = mk_node(o, n);
		c->n[c->nr++].zone = o->zone_rack ? n / 2 / o->rack : n;
		break;
	case LEAVE1:
		drop_id(c, n / 2);
		break;
	case JOIN10:
		/* a new rack's worth */
		for (uint32_t i = 0; i < 10; i++)
			c->n[c->nr++] = mk_node(o, n + i);
		break;
	case KILL10:
		/* spread over the cluster: ten racks lose one node each */
		for (uint32_t i = 0; i < 10; i++)
			drop_id(c, i * (n / 10) + i % o->rack);
		break;
	case RACK:
		for (uint32_t i = 0; i < o->rack; i++)
			drop_id(c, o->rack + i);
		break;
	case REWEIGHT:
		for (size_t i = 0; i < c->nr; i++)
			if (c->n[i].id == n / 2)
				c->n[i].space *= 2;
		break;
	default:
		sd_assert(false);
	}
}

static struct sim_layout layout(const struct sim_opts *o)
{
	return (struct sim_layout){
		.copies = o->copies, .strips = o->data > 0,
		.nr_objects = o->objects, .nr_ids = (uint32_t)o->nodes + 16,
		.fixed_vnodes = o->vnodes, .stable = o->stable,
		.base = o->base,
	};
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* one scenario with one algorithm: the change, or -1 */
static int run_one(const struct sim_opts *o, enum sim_algo a,
		   enum scenario s, const struct sim_placement *pb,
		   const struct cluster *base, struct sim_change *ch)
{
	struct sim_layout lay = layout(o);
	struct cluster after;
	struct sim_placement pa;

	copy_cluster(base, &after);
	apply(o, s, &after);
	lay.prev = base->n;
	lay.nr_prev = base->nr;
	if (sim_place(a, after.n, after.nr, &lay, &pa)) {
		free(after.n);
		return -1;
	}
	sim_compare(base->n, base->nr, pb, after.n, after.nr, &pa, &lay, ch);
	sim_placement_free(&pa);
	free(after.n);
	return 0;
}

static void print_header(const struct sim_opts *o)
{
	printf("%zu nodes, %zu objects, ", o->nodes, o->objects);
	if (o->data)
		printf("erasure %d:%d", o->data, o->copies - o->data);
	else
		printf("%d copies", o->copies);
	printf(", zones: %s%s", o->zone_rack ? "racks of " : "nodes",
	       o->zone_rack ? "" : "");
	if (o->zone_rack)
		printf("%" PRIu32, o->rack);
	printf(", capacity %s", o->mixed ? "1 and 2 TiB alternating" :
	       "1 TiB each");
	if (o->vnodes)
		printf(", %u vnodes per node (fixed)", o->vnodes);
	if (o->stable)
		printf(", stable vnodes (-S), %u for a mean node",
		       o->base ? o->base : 128);
	printf("\n\n");
	printf("| change | placement | moved / ideal | moved needlessly | max/mean before | max/mean after | "
	       "per zone after |\n|---|---|--:|--:|--:|--:|--:|\n");
}

static int report(const struct sim_opts *o)
{
	static const char *const algo_name[] = { "ring", "rendezvous" };
	struct sim_layout lay = layout(o);
	struct cluster base;

	base_cluster(o, &base);
	print_header(o);
	for (int a = 0; a < 2; a++) {
		struct sim_placement pb;
		double t0 = now();

		if (!(o->algos & (1 << a)))
			continue;
		if (sim_place((enum sim_algo)a, base.n, base.nr, &lay, &pb))
			return 1;
		for (int s = 0; s < NR_SCEN; s++) {
			struct sim_change ch;

			if (run_one(o, (enum sim_algo)a, (enum scenario)s, &pb,
				    &base, &ch))
				return 1;
			printf("| %s | %s | %.2f | %.2f %% | %.3f | %.3f | "
			       "%.3f |\n", scen_name[s], algo_name[a],
			       ch.ideal ? (double)ch.moved / (double)ch.ideal :
			       0, ch.moved ? 100.0 * (double)ch.needless /
			       (double)ch.moved : 0, ch.max_before,
			       ch.max_after, ch.zone_max_after);
		}
		sim_placement_free(&pb);
		fprintf(stderr, "%s: %.1f s\n", algo_name[a], now() - t0);
	}
	free(base.n);
	return 0;
}

/* ---- -L: how long recovery takes, a model ---- */

/*
 * Every copy that must move is read from one surviving holder and
 * written on its new one; a node moves its copies at the lesser of its
 * network and disk rates, and the busiest node (in or out) sets the time.
 * The sampled objects stand for all data: @scale bytes each.
 */
static void recovery_row(const struct sim_opts *o, enum scenario s,
			 const struct cluster *base,
			 const struct sim_placement *pb)
{
	struct sim_layout lay = layout(o);
	struct cluster after;
	struct sim_placement pa;
	uint64_t *in = xzalloc(lay.nr_ids * sizeof(*in));
	uint64_t *out = xzalloc(lay.nr_ids * sizeof(*out));
	uint64_t total = 0, busiest = 0, lost;
	double rate = fmin(o->net_gbit * 1e9 / 8, o->disk_mbps * 1e6);
	double scale = (double)base->nr * o->data_gib * 1073741824.0 /
		       ((double)lay.nr_objects * pb->width);
	double in_max = 0;

	copy_cluster(base, &after);
	apply(o, s, &after);
	lay.prev = base->n;
	lay.nr_prev = base->nr;
	sd_assert(!sim_place(SIM_RING, after.n, after.nr, &lay, &pa));
	lost = sim_recovery_traffic(after.n, after.nr, pb, &pa, &lay, o->data,
				    in, out);
	for (uint32_t k = 0; k < lay.nr_ids; k++) {
		total += in[k];
		busiest = MAX(busiest, MAX(in[k], out[k]));
		in_max = fmax(in_max, (double)in[k]);
	}
	printf("| %s | %.0f GiB | %.1f GiB | %.2f | %.0f s | %.0f s | %" PRIu64
	       " |\n", scen_name[s], (double)total * scale / 1073741824.0,
	       (double)busiest * scale / 1073741824.0,
	       total ? in_max * (double)after.nr / (double)total : 0,
	       (double)busiest * scale / rate,
	       (double)total * scale / rate / (double)after.nr, lost);
	sim_placement_free(&pa);
	free(after.n);
	free(in);
	free(out);
}

static int recovery_report(const struct sim_opts *o)
{
	struct sim_layout lay = layout(o);
	struct cluster base;
	struct sim_placement pb;
	static const enum scenario which[] = { LEAVE1, KILL10, RACK, JOIN1,
					       JOIN10 };

	base_cluster(o, &base);
	printf("%zu nodes with %.0f GiB each, ", o->nodes, o->data_gib);
	if (o->data)
		printf("erasure %d:%d", o->data, o->copies - o->data);
	else
		printf("%d copies", o->copies);
	if (o->stable || o->vnodes)
		printf(", %u vnodes for a mean node", o->vnodes ? o->vnodes :
		       o->base ? o->base : 128);
	printf(", racks of %" PRIu32 "%s; a node moves data at %.0f Gbit/s "
	       "and %.0f MB/s\n\n", o->rack, o->zone_rack ? " as zones" : "",
	       o->net_gbit, o->disk_mbps);
	printf("| change | data moved | busiest node moves | max/mean "
	       "received | time (model) | time if spread evenly | copies "
	       "lost |\n|---|--:|--:|--:|--:|--:|--:|\n");
	if (sim_place(SIM_RING, base.n, base.nr, &lay, &pb))
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(which); i++)
		recovery_row(o, which[i], &base, &pb);
	sim_placement_free(&pb);
	free(base.n);
	return 0;
}

/* ---- --check: what make check holds the ring to ---- */

static int passed, failed;

static void check(bool ok, const char *what, double got)
{
	printf("%s %s (%.3f)\n", ok ? "ok  " : "FAIL", what, got);
	if (ok)
		passed++;
	else
		failed++;
}

static struct sim_change change(const struct sim_opts *o, enum sim_algo a,
				enum scenario s)
{
	struct sim_layout lay = layout(o);
	struct cluster base;
	struct sim_placement pb;
	struct sim_change ch;

	base_cluster(o, &base);
	sd_assert(!sim_place(a, base.n, base.nr, &lay, &pb));
	sd_assert(!run_one(o, a, s, &pb, &base, &ch));
	sim_placement_free(&pb);
	free(base.n);
	return ch;
}

static uint64_t recovery_lost(const struct sim_opts *o, enum scenario s)
{
	struct sim_layout lay = layout(o);
	struct cluster base, after;
	struct sim_placement pb, pa;
	uint64_t *in = xzalloc(lay.nr_ids * sizeof(*in));
	uint64_t *out = xzalloc(lay.nr_ids * sizeof(*out));
	uint64_t lost, moved = 0;

	base_cluster(o, &base);
	copy_cluster(&base, &after);
	apply(o, s, &after);
	sd_assert(!sim_place(SIM_RING, base.n, base.nr, &lay, &pb));
	sd_assert(!sim_place(SIM_RING, after.n, after.nr, &lay, &pa));
	lost = sim_recovery_traffic(after.n, after.nr, &pb, &pa, &lay, 0, in,
				    out);
	for (uint32_t k = 0; k < lay.nr_ids; k++)
		moved += in[k];
	sd_assert(moved > 0);	/* the change moved something */
	sim_placement_free(&pb);
	sim_placement_free(&pa);
	free(base.n);
	free(after.n);
	free(in);
	free(out);
	return lost;
}

static bool racks_apart(const struct sim_opts *o, enum sim_algo a)
{
	struct sim_layout lay = layout(o);
	struct cluster base;
	struct sim_placement p;
	bool ok;

	base_cluster(o, &base);
	sd_assert(!sim_place(a, base.n, base.nr, &lay, &p));
	ok = p.width == o->copies && sim_zones_distinct(base.n, base.nr, &p,
							&lay);
	sim_placement_free(&p);
	free(base.n);
	return ok;
}

static int self_check(void)
{
	struct sim_opts o = {
		.nodes = 60, .objects = 30000, .copies = 3, .rack = 6,
		.algos = 3,
	};
	struct sim_change ch;
	double r;

	/* zones per node: the consistent-hashing promises hold exactly */
	for (int s = JOIN1; s <= KILL10; s++) {
		ch = change(&o, SIM_RING, (enum scenario)s);
		check(ch.needless == 0, scen_name[s],
		      (double)ch.needless);
		r = (double)ch.moved / (double)ch.ideal;
		check(r > 0.7 && r < 1.4, "  moves about its share", r);
		check(ch.max_after < 1.5, "  balance after (max/mean)",
		      ch.max_after);
	}
	/* capacity counts: twice the space, about twice the copies */
	o.mixed = true;
	ch = change(&o, SIM_RING, JOIN1);
	check(ch.max_before < 1.5, "mixed capacities: weighted balance",
	      ch.max_before);
	/* stable vnodes: a join or a reweight with mixed capacities moves
	 * only what it must */
	o.stable = true;
	ch = change(&o, SIM_RING, JOIN1);
	check(ch.needless == 0, "stable vnodes, mixed capacities: one joins",
	      (double)ch.needless);
	ch = change(&o, SIM_RING, REWEIGHT);
	check(ch.needless == 0, "stable vnodes: one node's capacity doubled",
	      (double)ch.needless);
	/* a base of 512 at format: better balanced, still nothing needless */
	r = ch.max_before;
	o.base = 512;
	ch = change(&o, SIM_RING, JOIN1);
	check(ch.max_before < r && ch.needless == 0,
	      "stable vnodes, 512 for a mean node: balance better than 128",
	      ch.max_before);
	o.base = 0;
	o.stable = false;
	/* recovery finds a source for every copy a lost node or rack held */
	check(recovery_lost(&o, LEAVE1) == 0, "a node lost: every copy has "
	      "a surviving source", 0);
	/* racks as zones: no two copies of an object in one rack */
	o.mixed = false;
	o.zone_rack = true;
	ch = change(&o, SIM_RING, RACK);
	check(ch.zone_max_after < 1.3, "a rack lost: racks stay balanced",
	      ch.zone_max_after);
	check(racks_apart(&o, SIM_RING), "racks as zones: no rack holds two "
	      "copies of an object", 0);
	check(recovery_lost(&o, RACK) == 0, "racks as zones: a rack lost, "
	      "nothing lost", 0);
	/* the reference hashing never moves needlessly */
	ch = change(&o, SIM_RENDEZVOUS, JOIN10);
	check(ch.needless == 0, "rendezvous: ten join, racks as zones",
	      (double)ch.needless);
	/* erasure strips are placed by position: a join shifts them */
	o.zone_rack = false;
	o.copies = 6;
	o.data = 4;
	ch = change(&o, SIM_RING, JOIN1);
	check(ch.moved >= ch.ideal, "erasure 4:2, one joins: at least its "
	      "share moves", (double)ch.moved / (double)ch.ideal);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

static int parse_ec(const char *s, struct sim_opts *o)
{
	int d, p;

	if (sscanf(s, "%d:%d", &d, &p) != 2 || d < 1 || p < 1 ||
	    d + p > SD_MAX_COPIES)
		return -1;
	o->data = d;
	o->copies = d + p;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: ringsim [-n NODES] [-o OBJECTS] [-c COPIES | "
		"-e D:P] [-r RACK] [-z node|rack] [-m] [-a ring|hrw|both] "
		"[-V VNODES] [-s [-b BASE]]\n"
		"               [-L GIB [-N GBIT] [-W MBPS]]\n"
		"       ringsim --check\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "check", no_argument, NULL, 'C' }, { NULL, 0, NULL, 0 },
	};
	struct sim_opts o = {
		.nodes = 100, .copies = 3, .rack = 10, .zone_rack = true,
		.algos = 3, .net_gbit = 10, .disk_mbps = 400,
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "n:o:c:e:r:z:ma:V:sb:L:N:W:", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'C':
			return self_check();
		case 'n':
			if (parse_u64_range(optarg, 1000000, &v) || v < 12)
				usage();
			o.nodes = v;
			break;
		case 'o':
			if (parse_u64_range(optarg, 100000000, &v) || !v)
				usage();
			o.objects = v;
			break;
		case 'c':
			if (parse_u64_range(optarg, SD_MAX_COPIES, &v) || !v)
				usage();
			o.copies = (int)v;
			o.data = 0;
			break;
		case 'e':
			if (parse_ec(optarg, &o))
				usage();
			break;
		case 'r':
			if (parse_u64_range(optarg, 1000, &v) || !v)
				usage();
			o.rack = (uint32_t)v;
			break;
		case 'z':
			if (strcmp(optarg, "node") && strcmp(optarg, "rack"))
				usage();
			o.zone_rack = !strcmp(optarg, "rack");
			break;
		case 'm':
			o.mixed = true;
			break;
		case 's':
			o.stable = true;
			break;
		case 'b':
			if (parse_u64_range(optarg, SD_MAX_FORMAT_VNODES, &v) ||
			    v < SD_MIN_FORMAT_VNODES)
				usage();
			o.base = (uint16_t)v;
			break;
		case 'L':
			if (parse_u64_range(optarg, 1 << 20, &v) || !v)
				usage();
			o.data_gib = (double)v;
			break;
		case 'N':
			if (parse_u64_range(optarg, 1000, &v) || !v)
				usage();
			o.net_gbit = (double)v;
			break;
		case 'W':
			if (parse_u64_range(optarg, 100000, &v) || !v)
				usage();
			o.disk_mbps = (double)v;
			break;
		case 'V':
			if (parse_u64_range(optarg, UINT16_MAX, &v) || !v)
				usage();
			o.vnodes = (uint16_t)v;
			break;
		case 'a':
			o.algos = !strcmp(optarg, "ring") ? 1 :
				  !strcmp(optarg, "hrw") ? 2 :
				  !strcmp(optarg, "both") ? 3 : 0;
			if (!o.algos)
				usage();
			break;
		default:
			usage();
		}
	}
	if (optind != argc || o.nodes < 2 * (size_t)o.rack ||
	    (o.base && !o.stable))
		usage();
	if (!o.objects)
		o.objects = 1000 * o.nodes;
	return o.data_gib > 0 ? recovery_report(&o) : report(&o);
}
