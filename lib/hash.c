// SPDX-License-Identifier: GPL-2.0-or-later
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "proto.h"

uint64_t fnv_64a_buf(const void *buf, size_t len, uint64_t h)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV_64_PRIME;
	}
	return h;
}

static uint64_t mix(uint64_t h)
{
	uint8_t b[8];

	put_le64(b, h);
	return fnv_64a_buf(b, sizeof(b), h);
}

uint64_t sd_hash(const void *buf, size_t len)
{
	return mix(fnv_64a_buf(buf, len, FNV1A_64_INIT));
}

uint64_t sd_hash_oid(uint64_t oid)
{
	uint8_t b[8];

	put_le64(b, oid);
	return sd_hash(b, sizeof(b));
}

uint64_t sd_hash_next(uint64_t h)
{
	return mix(h);
}

uint32_t sd_hash_vdi(const char *name)
{
	return (uint32_t)(fnv_64a_buf(name, strlen(name), FNV1A_64_INIT) &
			  (SD_NR_VDIS - 1));
}

uint64_t node_base_hash(const struct node_id *nid)
{
	uint8_t b[18];

	memcpy(b, nid->addr, 16);
	put_le16(b + 16, nid->port);
	return sd_hash(b, sizeof(b));
}

int node_cmp(const struct sd_node *a, const struct sd_node *b)
{
	int r = memcmp(a->nid.addr, b->nid.addr, sizeof(a->nid.addr));

	if (r)
		return r;
	return (int)a->nid.port - (int)b->nid.port;
}

int node_id_eq(const struct node_id *a, const struct node_id *b)
{
	return !memcmp(a->addr, b->addr, sizeof(a->addr)) &&
	       a->port == b->port;
}

static int node_qcmp(const void *a, const void *b)
{
	return node_cmp(a, b);
}

struct sd_node *nodes_sorted_copy(const struct sd_node *nodes, size_t nr)
{
	struct sd_node *c = malloc((nr ? nr : 1) * sizeof(*c));

	if (!c)
		return NULL;
	if (nr)
		memcpy(c, nodes, nr * sizeof(*c));
	qsort(c, nr, sizeof(*c), node_qcmp);
	return c;
}

const struct sd_node *nodes_find(const struct sd_node *sorted, size_t nr,
				 const struct node_id *nid)
{
	struct sd_node key;

	if (!nr)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.nid = *nid;
	return bsearch(&key, sorted, nr, sizeof(key), node_qcmp);
}

void nodes_sort(struct sd_node *nodes, size_t nr)
{
	qsort(nodes, nr, sizeof(*nodes), node_qcmp);
}

static int vnode_cmp(const void *a, const void *b)
{
	const struct vnode *x = a, *y = b;

	if (x->hash < y->hash)
		return -1;
	return x->hash > y->hash;
}

static int count_zones(const struct sd_node *nodes, size_t nr)
{
	uint32_t zones[SD_MAX_COPIES];
	int n = 0;

	for (size_t i = 0; i < nr && n < SD_MAX_COPIES; i++) {
		int seen = 0;

		if (!nodes[i].nr_vnodes)
			continue;
		for (int j = 0; j < n; j++)
			if (zones[j] == nodes[i].zone)
				seen = 1;
		if (!seen)
			zones[n++] = nodes[i].zone;
	}
	return n;
}

/* the capacity-weighted count of cluster.md §2.4, before clamping */
static float weighted_vnodes(uint64_t space, uint64_t avg, uint16_t base)
{
	/* single precision, as the spec: the float product, then divided */
	float f = (float)base * (float)space;

	return rintf(f / (float)avg);
}

void nodes_auto_vnodes(struct sd_node *nodes, size_t nr)
{
	nodes_auto_vnodes_base(nodes, nr, SD_DEFAULT_VNODES);
}

void nodes_auto_vnodes_base(struct sd_node *nodes, size_t nr, uint16_t base)
{
	uint64_t total = 0, n = 0, avg;

	for (size_t i = 0; i < nr; i++)
		if (nodes[i].nr_vnodes && nodes[i].space) {
			total += nodes[i].space;
			n++;
		}
	if (!n)
		return;
	avg = total / n;
	if (!avg)
		return;
	for (size_t i = 0; i < nr; i++) {
		float v;

		if (!nodes[i].nr_vnodes || !nodes[i].space)
			continue;
		v = weighted_vnodes(nodes[i].space, avg, base);
		if (v < 1)
			v = 1;
		if (v > UINT16_MAX)
			v = UINT16_MAX;
		nodes[i].nr_vnodes = (uint16_t)v;
	}
}

/* a count over a capacity, compared exactly */
struct vnode_ratio {
	uint64_t count, space;
};

static int ratio_cmp(const void *a, const void *b)
{
	const struct vnode_ratio *x = a, *y = b;
	unsigned __int128 l = (unsigned __int128)x->count * y->space;
	unsigned __int128 r = (unsigned __int128)y->count * x->space;

	return l < r ? -1 : l > r;
}

/* rint(space * ratio) clamped to a storage node's range */
static uint16_t ratio_vnodes(uint64_t space, const struct vnode_ratio *r)
{
	unsigned __int128 v = ((unsigned __int128)space * r->count * 2 +
			       r->space) / ((unsigned __int128)r->space * 2);

	if (v < 1)
		return 1;
	return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

void nodes_stable_vnodes(struct sd_node *nodes, size_t nr,
			 const struct sd_node *prev, size_t nr_prev,
			 uint16_t base)
{
	struct vnode_ratio *r = calloc(nr_prev ? nr_prev : 1, sizeof(*r)), m;
	struct sd_node *sorted;
	size_t n = 0;

	/* no way around: a node that weighed otherwise would place otherwise */
	if (!r)
		abort();
	for (size_t i = 0; i < nr_prev; i++)
		if (prev[i].nr_vnodes && prev[i].space)
			r[n++] = (struct vnode_ratio){ prev[i].nr_vnodes,
						       prev[i].space };
	if (!n) {
		free(r);
		nodes_auto_vnodes_base(nodes, nr, base ? base :
				       SD_DEFAULT_VNODES);
		return;
	}
	qsort(r, n, sizeof(*r), ratio_cmp);
	m = r[n / 2];
	free(r);
	sorted = nodes_sorted_copy(prev, nr_prev);
	if (!sorted)
		abort();
	for (size_t i = 0; i < nr; i++) {
		const struct sd_node *e;
		uint16_t want;
		uint32_t diff, slack;

		if (!nodes[i].nr_vnodes || !nodes[i].space)
			continue;
		want = ratio_vnodes(nodes[i].space, &m);
		e = nodes_find(sorted, nr_prev, &nodes[i].nid);
		if (e && e->nr_vnodes && e->space == nodes[i].space) {
			diff = e->nr_vnodes > want ? e->nr_vnodes - want :
			       want - e->nr_vnodes;
			slack = 1 + want / 100;
			if (diff <= slack) {
				nodes[i].nr_vnodes = e->nr_vnodes;
				continue;
			}
		}
		nodes[i].nr_vnodes = want;
	}
	free(sorted);
}

int ring_build(struct vnode_ring *ring, const struct sd_node *nodes,
	       size_t nr)
{
	size_t total = 0, k = 0;

	memset(ring, 0, sizeof(*ring));
	for (size_t i = 0; i < nr; i++)
		total += nodes[i].nr_vnodes;
	ring->nodes = calloc(nr ? nr : 1, sizeof(*nodes));
	ring->vnodes = calloc(total ? total : 1, sizeof(struct vnode));
	if (!ring->nodes || !ring->vnodes) {
		ring_free(ring);
		return -1;
	}
	if (nr)
		memcpy(ring->nodes, nodes, nr * sizeof(*nodes));
	nodes_sort(ring->nodes, nr);
	ring->nr_nodes = nr;
	for (size_t i = 0; i < nr; i++) {
		uint64_t h = node_base_hash(&ring->nodes[i].nid);

		for (int v = 0; v < ring->nodes[i].nr_vnodes; v++) {
			h = mix(h);
			ring->vnodes[k].hash = h;
			ring->vnodes[k].node = (uint32_t)i;
			k++;
		}
	}
	qsort(ring->vnodes, total, sizeof(struct vnode), vnode_cmp);
	ring->nr_vnodes = total;
	ring->nr_zones = count_zones(ring->nodes, nr);
	return 0;
}

void ring_free(struct vnode_ring *ring)
{
	free(ring->nodes);
	free(ring->vnodes);
	memset(ring, 0, sizeof(*ring));
}

/* first vnode whose hash is >= h, wrapping to 0 */
static size_t ring_lower_bound(const struct vnode_ring *ring, uint64_t h)
{
	size_t lo = 0, hi = ring->nr_vnodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ring->vnodes[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == ring->nr_vnodes ? 0 : lo;
}

int ring_targets(const struct vnode_ring *ring, uint64_t oid, int copies,
		 int *tgt)
{
	int want = copies < ring->nr_zones ? copies : ring->nr_zones;
	int n = 0;
	size_t start, i;

	if (!ring->nr_vnodes || want <= 0)
		return 0;
	start = ring_lower_bound(ring, sd_hash_oid(oid));
	for (i = 0; i < ring->nr_vnodes && n < want; i++) {
		const struct vnode *v =
			&ring->vnodes[(start + i) % ring->nr_vnodes];
		uint32_t zone = ring->nodes[v->node].zone;
		int dup = 0;

		for (int j = 0; j < n; j++)
			if (ring->nodes[tgt[j]].zone == zone)
				dup = 1;
		if (!dup)
			tgt[n++] = (int)v->node;
	}
	return n;
}
