// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A copy-on-write B+-tree of byte-string keys (include/kvtree.h).
 *
 * Nodes are read from their pages on demand and kept in memory.  A node
 * that changes is "dirty": its old page is freed by the commit that
 * writes it again, elsewhere, and every ancestor up to the root is dirty
 * too.  kvt_commit() writes dirty nodes children first (a parent names
 * its children's new pages), syncs, writes the superblock of the next
 * sequence number into slot seq % 2, and syncs: until that last write is
 * durable the other slot names the previous tree, whose pages nothing
 * has overwritten (pages freed by a commit are reused only by the next
 * one).  Every page carries a CRC32C; a superblock that fails its check
 * is not the tree's.
 *
 * The free pages are listed by each commit in a chain of pages of its
 * own, named by the superblock: what was free, what the commit freed,
 * and the previous chain.  The chain is written to pages that were free
 * before the commit, so a crash leaves the previous list whole too, and
 * an open reads the superblock, the list and the root, not the tree.
 *
 * Page of a node: magic, level (0 = leaf), entry count, CRC32C, bytes
 * used, then for a leaf n x {u16 klen, u16 vlen, key, value}; for an
 * internal node u64 child0 and n x {u16 klen, key, u64 child}: child i
 * holds the keys from separator i - 1 (included) to separator i.
 * Deletion frees a leaf once it is empty; nodes are not merged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <isa-l/crc.h>
#include "kvtree.h"
#include "proto.h"
#include "util.h"

#define NODE_MAGIC	0x3154564bU	/* "KVT1" */
#define SB_MAGIC	0x5354564bU	/* "KVTS" */
#define FL_MAGIC	0x4654564bU	/* "KVTF": a page of the free list */
#define FL_HDR		24
#define FL_CAP		((KVT_PAGE - FL_HDR) / 8)
#define HDR		16
#define MAX_DEPTH	32

struct ent {
	uint8_t *key, *val;
	uint16_t klen, vlen;
};

struct node {
	uint64_t page;			/* 0: not written yet */
	int level;
	int n;				/* entries, or separators */
	int cap;
	bool dirty;
	size_t size;			/* bytes its page would use */
	struct ent *e;
	uint64_t *child;		/* internal: n + 1 pages */
	struct node **kid;		/* internal: n + 1, loaded or NULL */
};

struct kvtree {
	struct kvt_store s;
	struct node *root;
	uint64_t seq, next_page;
	uint64_t *free, *freed;		/* free now; freed by this commit */
	size_t nr_free, cap_free, nr_freed, cap_freed;
	/* the pages of the free list the last superblock names */
	uint64_t *fl;
	size_t nr_fl, cap_fl;
	uint8_t *buf;			/* one page */
	bool broken;			/* a commit failed: reopen */
};

/* ---- pages ---- */

static uint32_t page_crc(const uint8_t *p)
{
	uint32_t crc = crc32_iscsi((unsigned char *)p, 8, 0xffffffffU);

	return crc32_iscsi((unsigned char *)p + 12, KVT_PAGE - 12, crc);
}

static void push(uint64_t **v, size_t *nr, size_t *cap, uint64_t x)
{
	if (*nr == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*nr)++] = x;
}

/* 0 when the tree has every page it may have */
static uint64_t alloc_page(struct kvtree *t)
{
	if (t->nr_free)
		return t->free[--t->nr_free];
	return t->next_page < KVT_MAX_PAGES ? t->next_page++ : 0;
}

/* ---- nodes in memory ---- */

static size_t ent_size(const struct node *nd, const struct ent *e)
{
	return nd->level ? 2u + e->klen + 8u : 4u + e->klen + e->vlen;
}

static struct node *node_new(int level)
{
	struct node *nd = xzalloc(sizeof(*nd));

	nd->level = level;
	nd->size = HDR + (level ? 8 : 0);
	return nd;
}

static void node_free(struct node *nd)
{
	if (!nd)
		return;
	for (int i = 0; i < nd->n; i++) {
		free(nd->e[i].key);
		free(nd->e[i].val);
	}
	if (nd->level)
		for (int i = 0; i <= nd->n; i++)
			node_free(nd->kid[i]);
	free(nd->e);
	free(nd->child);
	free(nd->kid);
	free(nd);
}

static void node_reserve(struct node *nd, int n)
{
	int old = nd->cap;

	/* an internal node has a child even with no separator */
	if (n <= nd->cap && nd->e)
		return;
	nd->cap = n < 8 ? 8 : n * 2;
	nd->e = xrealloc(nd->e, (size_t)nd->cap * sizeof(*nd->e));
	if (nd->level) {
		nd->child = xrealloc(nd->child,
				     (size_t)(nd->cap + 1) * sizeof(uint64_t));
		nd->kid = xrealloc(nd->kid,
				   (size_t)(nd->cap + 1) * sizeof(*nd->kid));
		/* node_free() of a half-decoded node frees what is set */
		memset(nd->kid + (old ? old + 1 : 0), 0,
		       (size_t)(nd->cap - old + (old ? 0 : 1)) *
		       sizeof(*nd->kid));
	}
}

static uint8_t *dup_bytes(const void *p, size_t n)
{
	uint8_t *d = xmalloc(n ? n : 1);

	memcpy(d, p, n);
	return d;
}

/* the node changes: its page is freed by the next commit */
static void touch(struct kvtree *t, struct node *nd)
{
	if (nd->dirty)
		return;
	if (nd->page)
		push(&t->freed, &t->nr_freed, &t->cap_freed, nd->page);
	nd->page = 0;
	nd->dirty = true;
}

static int key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/* first entry >= key (leaf), or first separator > key (internal) */
static int search(const struct node *nd, const void *key, size_t klen,
		  bool *found)
{
	int lo = 0, hi = nd->n;

	*found = false;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		int c = key_cmp(nd->e[mid].key, nd->e[mid].klen, key, klen);

		if (c == 0 && !nd->level) {
			*found = true;
			return mid;
		}
		if (c < 0 || (c == 0 && nd->level))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- reading and writing node pages ---- */

static struct node *decode(const uint8_t *p, uint64_t page, int level)
{
	uint32_t used = get_le32(p + 12);
	size_t off = HDR, end = HDR + (size_t)used;
	struct node *nd;
	int n = get_le16(p + 6);

	if (get_le32(p) != NODE_MAGIC || get_le16(p + 4) != level ||
	    get_le32(p + 8) != page_crc(p) || end > KVT_PAGE)
		return NULL;
	nd = node_new(level);
	nd->page = page;
	node_reserve(nd, n);
	if (level) {
		if (off + 8 > end)
			goto bad;
		nd->child[0] = get_le64(p + off);
		nd->kid[0] = NULL;
		off += 8;
	}
	for (int i = 0; i < n; i++) {
		struct ent *e = &nd->e[i];
		size_t need = level ? 2 : 4;

		if (off + need > end)
			goto bad;
		e->klen = get_le16(p + off);
		e->vlen = level ? 0 : get_le16(p + off + 2);
		off += need;
		if (e->klen > KVT_MAX_KEY || e->vlen > KVT_MAX_VAL ||
		    off + e->klen + e->vlen + (level ? 8 : 0) > end)
			goto bad;
		e->key = dup_bytes(p + off, e->klen);
		off += e->klen;
		e->val = level ? NULL : dup_bytes(p + off, e->vlen);
		off += e->vlen;
		nd->n = i + 1;
		if (level) {
			nd->child[i + 1] = get_le64(p + off);
			nd->kid[i + 1] = NULL;
			off += 8;
		}
		/* strictly ascending, or the searches lie */
		if (i && key_cmp(nd->e[i - 1].key, nd->e[i - 1].klen,
				 e->key, e->klen) >= 0)
			goto bad;
	}
	if (off != end)
		goto bad;
	nd->size = end;
	return nd;
bad:
	node_free(nd);
	return NULL;
}

static struct node *load(struct kvtree *t, uint64_t page, int level)
{
	if (page < 2 || page >= t->next_page ||
	    t->s.read(t->s.arg, page, t->buf))
		return NULL;
	return decode(t->buf, page, level);
}

/*
 * A child's keys lie between the separators around it: a page that holds
 * others (damage the checksum missed, a bug) would make lookups miss
 * what scans find.  Its entries are sorted: its ends suffice.
 */
static bool within(const struct node *nd, int i, const struct node *k)
{
	const struct ent *first = &k->e[0], *last = &k->e[k->n - 1];

	if (!k->n)
		return true;
	if (i > 0 && key_cmp(first->key, first->klen, nd->e[i - 1].key,
			     nd->e[i - 1].klen) < 0)
		return false;
	return i == nd->n || key_cmp(last->key, last->klen, nd->e[i].key,
				     nd->e[i].klen) < 0;
}

/* child @i of @nd, read if need be */
static struct node *kid(struct kvtree *t, struct node *nd, int i)
{
	if (!nd->kid[i]) {
		struct node *k = load(t, nd->child[i], nd->level - 1);

		if (k && !within(nd, i, k)) {
			node_free(k);
			k = NULL;
		}
		nd->kid[i] = k;
	}
	return nd->kid[i];
}

static void encode(const struct node *nd, uint8_t *p)
{
	size_t off = HDR;

	memset(p, 0, KVT_PAGE);
	put_le32(p, NODE_MAGIC);
	put_le16(p + 4, (uint16_t)nd->level);
	put_le16(p + 6, (uint16_t)nd->n);
	if (nd->level) {
		put_le64(p + off, nd->child[0]);
		off += 8;
	}
	for (int i = 0; i < nd->n; i++) {
		const struct ent *e = &nd->e[i];

		put_le16(p + off, e->klen);
		if (!nd->level)
			put_le16(p + off + 2, e->vlen);
		off += nd->level ? 2 : 4;
		memcpy(p + off, e->key, e->klen);
		off += e->klen;
		if (nd->level) {
			put_le64(p + off, nd->child[i + 1]);
			off += 8;
		} else {
			memcpy(p + off, e->val, e->vlen);
			off += e->vlen;
		}
	}
	sd_assert(off == nd->size && off <= KVT_PAGE);
	put_le32(p + 12, (uint32_t)(off - HDR));
	put_le32(p + 8, page_crc(p));
}

/* children first: a parent names their new pages */
static int write_dirty(struct kvtree *t, struct node *nd)
{
	if (!nd->dirty)
		return 0;
	if (nd->level)
		for (int i = 0; i <= nd->n; i++) {
			if (!nd->kid[i] || !nd->kid[i]->dirty)
				continue;
			if (write_dirty(t, nd->kid[i]))
				return -2;
			nd->child[i] = nd->kid[i]->page;
		}
	nd->page = alloc_page(t);
	if (!nd->page)
		return -2;
	encode(nd, t->buf);
	if (t->s.write(t->s.arg, nd->page, t->buf))
		return -2;
	nd->dirty = false;
	return 0;
}

/* ---- superblocks ---- */

static void sb_encode(const struct kvtree *t, uint64_t seq, uint64_t fl_head,
		      uint64_t nr_free, uint8_t *p)
{
	memset(p, 0, KVT_PAGE);
	put_le32(p, SB_MAGIC);
	put_le64(p + 16, seq);
	put_le64(p + 24, t->root->page);
	put_le64(p + 32, t->next_page);
	put_le16(p + 40, (uint16_t)t->root->level);
	put_le64(p + 48, fl_head);
	put_le64(p + 56, nr_free);
	put_le32(p + 8, page_crc(p));
}

struct sb {
	uint64_t seq, root, next_page, fl_head, nr_free;
	int level;
};

/* 1 valid, 0 never written (zeros), -1 neither */
static int sb_decode(const uint8_t *p, struct sb *sb)
{
	static const uint8_t zero[64];

	if (get_le32(p) != SB_MAGIC || get_le32(p + 8) != page_crc(p))
		return memcmp(p, zero, sizeof(zero)) ? -1 : 0;
	sb->seq = get_le64(p + 16);
	sb->root = get_le64(p + 24);
	sb->next_page = get_le64(p + 32);
	sb->level = get_le16(p + 40);
	sb->fl_head = get_le64(p + 48);
	sb->nr_free = get_le64(p + 56);
	/* seq + 1 never wraps: 2^63 commits are centuries away */
	if (!sb->seq || sb->seq >= UINT64_C(1) << 63 ||
	    sb->level >= MAX_DEPTH || sb->next_page < 2 ||
	    sb->next_page > KVT_MAX_PAGES || sb->nr_free >= sb->next_page ||
	    (sb->fl_head && (sb->fl_head < 2 ||
			     sb->fl_head >= sb->next_page)) ||
	    !sb->root || sb->root < 2 || sb->root >= sb->next_page)
		return -1;
	return 1;
}

/* ---- open: the superblock and its free list ---- */

static int mark_used(struct kvtree *t, struct node *nd, uint8_t *used,
		     int depth)
{
	if (depth > MAX_DEPTH)
		return -1;
	if (nd->page) {
		if (used[nd->page / 8] & (1 << (nd->page % 8)))
			return -1;	/* two parents: not a tree */
		used[nd->page / 8] |= (uint8_t)(1 << (nd->page % 8));
	}
	if (!nd->level)
		return 0;
	for (int i = 0; i <= nd->n; i++) {
		struct node *k = kid(t, nd, i);

		if (!k || mark_used(t, k, used, depth + 1))
			return -1;
		/* a walked leaf is not kept (unless changed): memory
		 * follows use */
		if (!k->level && !k->dirty) {
			node_free(k);
			nd->kid[i] = NULL;
		}
	}
	return 0;
}

static int pick_sb(struct kvtree *t, struct sb *best)
{
	int found = 0, bad = 0;

	for (uint64_t slot = 0; slot < 2; slot++) {
		struct sb sb;
		int r;

		if (t->s.read(t->s.arg, slot, t->buf))
			return -1;
		r = sb_decode(t->buf, &sb);
		bad += r < 0;
		if (r == 1 && (!found || sb.seq > best->seq)) {
			*best = sb;
			found = 1;
		}
	}
	/* two zero slots: a new tree; a torn one beside a good one: fine */
	return found ? 1 : bad ? -1 : 0;
}

/*
 * The free list the superblock names: a chain of pages of page numbers,
 * every one below next_page, none twice, as many as the superblock says
 */
static int read_free_list(struct kvtree *t, const struct sb *sb)
{
	uint8_t *seen = xzalloc(t->next_page / 8 + 1);
	uint64_t page = sb->fl_head;
	int ret = -1;

#define SEEN(p) (seen[(p) / 8] & (1 << ((p) % 8)))
#define MARK(p) (seen[(p) / 8] |= (uint8_t)(1 << ((p) % 8)))
	while (page) {
		uint32_t n;

		if (page < 2 || page >= t->next_page || SEEN(page) ||
		    t->s.read(t->s.arg, page, t->buf) ||
		    get_le32(t->buf) != FL_MAGIC ||
		    get_le32(t->buf + 8) != page_crc(t->buf))
			goto out;
		MARK(page);
		push(&t->fl, &t->nr_fl, &t->cap_fl, page);
		n = get_le32(t->buf + 12);
		if (n > FL_CAP || t->nr_free + n > sb->nr_free)
			goto out;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t f = get_le64(t->buf + FL_HDR + 8 * i);

			if (f < 2 || f >= t->next_page || SEEN(f) ||
			    f == sb->root)
				goto out;
			MARK(f);
			push(&t->free, &t->nr_free, &t->cap_free, f);
		}
		page = get_le64(t->buf + 16);
	}
	ret = t->nr_free == sb->nr_free && !SEEN(sb->root) ? 0 : -1;
#undef SEEN
#undef MARK
out:
	free(seen);
	return ret;
}

int kvt_open(const struct kvt_store *s, struct kvtree **out)
{
	struct kvtree *t = xzalloc(sizeof(*t));
	struct sb sb = { 0 };
	int r;

	t->s = *s;
	t->buf = xmalloc(KVT_PAGE);
	t->next_page = 2;
	r = pick_sb(t, &sb);
	if (r < 0)
		goto fail;
	if (r == 0) {
		t->root = node_new(0);
		t->root->dirty = true;
	} else {
		t->seq = sb.seq;
		t->next_page = sb.next_page;
		if (read_free_list(t, &sb))
			goto fail;
		t->root = load(t, sb.root, sb.level);
		if (!t->root)
			goto fail;
	}
	*out = t;
	return 0;
fail:
	kvt_close(t);
	return -1;
}

int kvt_check(struct kvtree *t)
{
	uint8_t *used = xzalloc(t->next_page / 8 + 1);
	size_t nr_used = 0;
	int ret = -1;

	if (mark_used(t, t->root, used, 0))
		goto out;
#define USED(p) (used[(p) / 8] & (1 << ((p) % 8)))
	for (uint64_t p = 2; p < t->next_page; p++)
		nr_used += !!USED(p);
	/* free, the free list's own pages, freed by the commit to come */
	for (size_t i = 0; i < t->nr_free; i++)
		if (USED(t->free[i]))
			goto out;
	for (size_t i = 0; i < t->nr_fl; i++)
		if (USED(t->fl[i]))
			goto out;
#undef USED
	/* every page below next_page is one of them, or a dirty node's old */
	if (nr_used + t->nr_free + t->nr_fl + t->nr_freed != t->next_page - 2)
		goto out;
	ret = 0;
out:
	free(used);
	return ret;
}

void kvt_close(struct kvtree *t)
{
	if (!t)
		return;
	node_free(t->root);
	free(t->free);
	free(t->freed);
	free(t->fl);
	free(t->buf);
	free(t);
}

uint64_t kvt_seq(const struct kvtree *t)
{
	return t->seq;
}

/* ---- lookups ---- */

int kvt_get(struct kvtree *t, const void *key, size_t klen, void *val,
	    size_t size)
{
	struct node *nd = t->root;
	bool found;
	int i;

	if (klen > KVT_MAX_KEY)
		return -1;
	while (nd->level) {
		nd = kid(t, nd, search(nd, key, klen, &found));
		if (!nd)
			return -2;
	}
	i = search(nd, key, klen, &found);
	if (!found)
		return -1;
	if (size)
		memcpy(val, nd->e[i].val,
		       nd->e[i].vlen < size ? nd->e[i].vlen : size);
	return nd->e[i].vlen;
}

static int scan_node(struct kvtree *t, struct node *nd, const void *start,
		     size_t slen, bool from_start,
		     int (*fn)(const void *, size_t, const void *, size_t,
			       void *), void *arg)
{
	bool found;
	int i = from_start ? 0 : search(nd, start, slen, &found), r;

	if (!nd->level) {
		for (; i < nd->n; i++) {
			r = fn(nd->e[i].key, nd->e[i].klen, nd->e[i].val,
			       nd->e[i].vlen, arg);
			if (r)
				return 1;
		}
		return 0;
	}
	for (bool first = !from_start; i <= nd->n; i++, first = false) {
		struct node *k = kid(t, nd, i);

		if (!k)
			return -2;
		r = scan_node(t, k, start, slen, !first, fn, arg);
		if (r)
			return r;
	}
	return 0;
}

int kvt_scan(struct kvtree *t, const void *start, size_t slen,
	     int (*fn)(const void *key, size_t klen, const void *val,
		       size_t vlen, void *arg), void *arg)
{
	int r = scan_node(t, t->root, start, slen, false, fn, arg);

	return r < 0 ? r : 0;
}

/* ---- changes ---- */

struct split {
	struct node *right;		/* NULL: no split */
	uint8_t *key;			/* the right node's first key */
	uint16_t klen;
};

/* move entries from @i on to a new right sibling */
static struct node *split_at(struct node *nd, int i)
{
	struct node *r = node_new(nd->level);
	int m = nd->n - i;

	node_reserve(r, m);
	memcpy(r->e, nd->e + i, (size_t)m * sizeof(*r->e));
	if (nd->level) {
		/* separator i goes up: the right side starts at child i + 1 */
		memcpy(r->child, nd->child + i + 1, (size_t)m * 8);
		memcpy(r->kid, nd->kid + i + 1, (size_t)m * sizeof(*r->kid));
		r->n = m - 1;
		memmove(r->e, r->e + 1, (size_t)r->n * sizeof(*r->e));
	} else {
		r->n = m;
	}
	nd->n = i;
	r->dirty = true;
	nd->size = HDR + (nd->level ? 8 : 0);
	for (int k = 0; k < nd->n; k++)
		nd->size += ent_size(nd, &nd->e[k]);
	r->size = HDR + (r->level ? 8 : 0);
	for (int k = 0; k < r->n; k++)
		r->size += ent_size(r, &r->e[k]);
	return r;
}

/* split a node over its page near the middle of its bytes */
static void maybe_split(struct node *nd, struct split *out)
{
	size_t acc = HDR + (nd->level ? 8 : 0);
	int i = 0;

	out->right = NULL;
	if (nd->size <= KVT_PAGE)
		return;
	while (i < nd->n - 1 && acc + ent_size(nd, &nd->e[i]) <= nd->size / 2)
		acc += ent_size(nd, &nd->e[i++]);
	if (i == 0)
		i = 1;
	if (nd->level) {
		/* the separator that moves up */
		out->key = nd->e[i].key;
		out->klen = nd->e[i].klen;
	} else {
		out->key = dup_bytes(nd->e[i].key, nd->e[i].klen);
		out->klen = nd->e[i].klen;
	}
	out->right = split_at(nd, i);
}

static void insert_ent(struct node *nd, int i, struct ent e)
{
	node_reserve(nd, nd->n + 1);
	memmove(nd->e + i + 1, nd->e + i, (size_t)(nd->n - i) * sizeof(e));
	nd->e[i] = e;
	nd->n++;
	nd->size += ent_size(nd, &e);
}

static int put_rec(struct kvtree *t, struct node *nd, const void *key,
		   size_t klen, const void *val, size_t vlen,
		   struct split *out)
{
	bool found;
	int i = search(nd, key, klen, &found);

	out->right = NULL;
	if (!nd->level) {
		touch(t, nd);
		if (found) {
			nd->size -= nd->e[i].vlen;
			free(nd->e[i].val);
			nd->e[i].val = dup_bytes(val, vlen);
			nd->e[i].vlen = (uint16_t)vlen;
			nd->size += vlen;
		} else {
			insert_ent(nd, i, (struct ent){
				.key = dup_bytes(key, klen),
				.klen = (uint16_t)klen,
				.val = dup_bytes(val, vlen),
				.vlen = (uint16_t)vlen });
		}
		maybe_split(nd, out);
		return 0;
	}
	struct node *k = kid(t, nd, i);
	struct split s;

	if (!k || put_rec(t, k, key, klen, val, vlen, &s))
		return -2;
	touch(t, nd);
	if (s.right) {
		insert_ent(nd, i, (struct ent){ .key = s.key,
						.klen = s.klen });
		memmove(nd->child + i + 2, nd->child + i + 1,
			(size_t)(nd->n - 1 - i) * 8);
		memmove(nd->kid + i + 2, nd->kid + i + 1,
			(size_t)(nd->n - 1 - i) * sizeof(*nd->kid));
		nd->child[i + 1] = 0;
		nd->kid[i + 1] = s.right;
	}
	maybe_split(nd, out);
	return 0;
}

int kvt_put(struct kvtree *t, const void *key, size_t klen, const void *val,
	    size_t vlen)
{
	struct split s;
	struct node *root;

	if (klen > KVT_MAX_KEY || vlen > KVT_MAX_VAL)
		return -1;
	if (put_rec(t, t->root, key, klen, val, vlen, &s))
		return -2;
	if (!s.right)
		return 0;
	sd_assert(t->root->level + 1 < MAX_DEPTH);
	root = node_new(t->root->level + 1);
	node_reserve(root, 1);
	root->child[0] = 0;
	root->kid[0] = t->root;
	root->dirty = true;
	insert_ent(root, 0, (struct ent){ .key = s.key, .klen = s.klen });
	root->child[1] = 0;
	root->kid[1] = s.right;
	t->root = root;
	return 0;
}

/* remove child @i (empty) and a separator beside it */
static void drop_child(struct kvtree *t, struct node *nd, int i)
{
	int s = i ? i - 1 : 0;
	struct node *k = nd->kid[i];

	if (k && k->page)
		push(&t->freed, &t->nr_freed, &t->cap_freed, k->page);
	else if (!k)
		push(&t->freed, &t->nr_freed, &t->cap_freed, nd->child[i]);
	node_free(k);
	if (nd->n) {
		nd->size -= ent_size(nd, &nd->e[s]);
		free(nd->e[s].key);
		memmove(nd->e + s, nd->e + s + 1,
			(size_t)(nd->n - s - 1) * sizeof(*nd->e));
	}
	memmove(nd->child + i, nd->child + i + 1, (size_t)(nd->n - i) * 8);
	memmove(nd->kid + i, nd->kid + i + 1,
		(size_t)(nd->n - i) * sizeof(*nd->kid));
	nd->n--;
}

/* 0 removed, -1 absent, -2 I/O; *empty if @nd has nothing left */
static int del_rec(struct kvtree *t, struct node *nd, const void *key,
		   size_t klen, bool *empty)
{
	bool found;
	int i = search(nd, key, klen, &found), r;
	struct node *k;

	*empty = false;
	if (!nd->level) {
		if (!found)
			return -1;
		touch(t, nd);
		nd->size -= ent_size(nd, &nd->e[i]);
		free(nd->e[i].key);
		free(nd->e[i].val);
		memmove(nd->e + i, nd->e + i + 1,
			(size_t)(nd->n - i - 1) * sizeof(*nd->e));
		nd->n--;
		*empty = !nd->n;
		return 0;
	}
	k = kid(t, nd, i);
	if (!k)
		return -2;
	r = del_rec(t, k, key, klen, empty);
	if (r)
		return r;
	touch(t, nd);
	if (*empty) {
		/* its page is freed by drop_child, not twice */
		k->page = 0;
		drop_child(t, nd, i);
		*empty = nd->n < 0;
	}
	return 0;
}

int kvt_del(struct kvtree *t, const void *key, size_t klen)
{
	bool empty;
	int r;

	if (klen > KVT_MAX_KEY)
		return -1;
	r = del_rec(t, t->root, key, klen, &empty);
	if (r)
		return r;
	if (empty) {
		node_free(t->root);
		t->root = node_new(0);
		t->root->dirty = true;
	}
	/* a root with one child and no separator: the child is the root */
	while (t->root->level && !t->root->n) {
		struct node *old = t->root, *k = kid(t, old, 0);

		if (!k)
			return -2;
		old->kid[0] = NULL;
		touch(t, k);
		node_free(old);
		t->root = k;
	}
	return 0;
}

/* ---- commit ---- */

/*
 * The free list the next commit starts from: what is free now, what
 * this commit freed, and the pages of the previous list; written to
 * pages taken from what is free now (never from what this commit freed:
 * the previous tree still uses those until the superblock is written)
 */
static int write_free_list(struct kvtree *t, uint64_t **chain,
			   size_t *nr_chain, uint64_t *total)
{
	size_t cap = 0, k = 0;

	*chain = NULL;
	*nr_chain = 0;
	for (;;) {
		size_t n = t->nr_free + t->nr_freed + t->nr_fl;

		if (*nr_chain * FL_CAP >= n) {
			*total = n;
			break;
		}
		uint64_t p = alloc_page(t);

		if (!p)
			return -2;
		push(chain, nr_chain, &cap, p);
	}
	for (size_t c = 0; c < *nr_chain; c++) {
		uint32_t n = 0;

		memset(t->buf, 0, KVT_PAGE);
		put_le32(t->buf, FL_MAGIC);
		while (n < FL_CAP && k < *total) {
			uint64_t f = k < t->nr_free ? t->free[k] :
				     k < t->nr_free + t->nr_freed ?
				     t->freed[k - t->nr_free] :
				     t->fl[k - t->nr_free - t->nr_freed];

			put_le64(t->buf + FL_HDR + 8 * n++, f);
			k++;
		}
		put_le32(t->buf + 12, n);
		put_le64(t->buf + 16, c + 1 < *nr_chain ? (*chain)[c + 1] : 0);
		put_le32(t->buf + 8, page_crc(t->buf));
		if (t->s.write(t->s.arg, (*chain)[c], t->buf))
			return -2;
	}
	return 0;
}

int kvt_commit(struct kvtree *t)
{
	uint64_t seq = t->seq + 1, *chain = NULL, total;
	size_t nr_chain;

	if (t->broken)
		return -2;
	if (!t->root->dirty && t->seq)
		return 0;
	if (write_dirty(t, t->root) ||
	    write_free_list(t, &chain, &nr_chain, &total) ||
	    t->s.sync(t->s.arg))
		goto broken;
	sb_encode(t, seq, nr_chain ? chain[0] : 0, total, t->buf);
	if (t->s.write(t->s.arg, seq % 2, t->buf) || t->s.sync(t->s.arg))
		goto broken;
	t->seq = seq;
	/* what this commit and the old list freed is free for the next one */
	for (size_t i = 0; i < t->nr_freed; i++)
		push(&t->free, &t->nr_free, &t->cap_free, t->freed[i]);
	for (size_t i = 0; i < t->nr_fl; i++)
		push(&t->free, &t->nr_free, &t->cap_free, t->fl[i]);
	t->nr_freed = 0;
	free(t->fl);
	t->fl = chain;
	t->nr_fl = t->cap_fl = nr_chain;
	return 0;
broken:
	free(chain);
	t->broken = true;
	return -2;
}
