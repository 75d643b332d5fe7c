// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lib/kvtree.c, built here with 1 KiB pages (and keys and values bounded
 * to fit) so that a few thousand entries make trees four levels deep.
 *
 * - model: thousands of random puts, replacements, deletes, lookups and
 *   scans against a sorted array, with commits and reopenings;
 * - crashes: for every write of a commit, the store as a power loss at
 *   that point could leave it (everything synced, and any subset of what
 *   was written since, the last write possibly torn) opens to the tree
 *   before the commit or the tree after it, never anything else, and to
 *   the one after it once the commit returned;
 * - damage: a page whose bytes changed is refused, never read as a tree.
 */
#define KVT_PAGE	1024
#define KVT_MAX_KEY	120
#define KVT_MAX_VAL	160
#include "../../lib/kvtree.c"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <cmocka.h>

/* ---- a store in memory, with its history of writes and syncs ---- */

struct op {
	uint64_t page;			/* UINT64_MAX: a sync */
	uint8_t *data;
};

struct mem {
	uint8_t **pages;
	size_t nr_pages;
	struct op *ops;
	size_t nr_ops, cap_ops;
	bool keep_ops;
};

static void mem_set(struct mem *m, uint64_t page, const void *buf)
{
	if (page >= m->nr_pages) {
		m->pages = realloc(m->pages, (page + 1) * sizeof(*m->pages));
		memset(m->pages + m->nr_pages, 0,
		       (page + 1 - m->nr_pages) * sizeof(*m->pages));
		m->nr_pages = page + 1;
	}
	if (!m->pages[page])
		m->pages[page] = malloc(KVT_PAGE);
	memcpy(m->pages[page], buf, KVT_PAGE);
}

static void log_op(struct mem *m, uint64_t page, const void *buf)
{
	if (!m->keep_ops)
		return;
	if (m->nr_ops == m->cap_ops) {
		m->cap_ops = m->cap_ops ? m->cap_ops * 2 : 256;
		m->ops = realloc(m->ops, m->cap_ops * sizeof(*m->ops));
	}
	m->ops[m->nr_ops].page = page;
	m->ops[m->nr_ops].data = buf ? malloc(KVT_PAGE) : NULL;
	if (buf)
		memcpy(m->ops[m->nr_ops].data, buf, KVT_PAGE);
	m->nr_ops++;
}

static int mem_read(void *arg, uint64_t page, void *buf)
{
	struct mem *m = arg;

	if (page < m->nr_pages && m->pages[page])
		memcpy(buf, m->pages[page], KVT_PAGE);
	else
		memset(buf, 0, KVT_PAGE);
	return 0;
}

static int mem_write(void *arg, uint64_t page, const void *buf)
{
	struct mem *m = arg;

	mem_set(m, page, buf);
	log_op(m, page, buf);
	return 0;
}

static int mem_sync(void *arg)
{
	log_op(arg, UINT64_MAX, NULL);
	return 0;
}

static void mem_free(struct mem *m)
{
	for (size_t i = 0; i < m->nr_pages; i++)
		free(m->pages[i]);
	for (size_t i = 0; i < m->nr_ops; i++)
		free(m->ops[i].data);
	free(m->pages);
	free(m->ops);
	memset(m, 0, sizeof(*m));
}

static struct kvt_store store_of(struct mem *m)
{
	return (struct kvt_store){ mem_read, mem_write, mem_sync, m };
}

/* ---- the model: a sorted array of keys and values ---- */

struct kv {
	char key[KVT_MAX_KEY + 1];
	uint8_t val[KVT_MAX_VAL];
	size_t klen, vlen;
};

struct model {
	struct kv *v;
	size_t n, cap;
};

static int kv_cmp(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;

	return key_cmp(x->key, x->klen, y->key, y->klen);
}

static struct kv *model_find(struct model *m, const char *k, size_t klen)
{
	struct kv key;

	if (!m->n)
		return NULL;
	memcpy(key.key, k, klen);
	key.klen = klen;
	return bsearch(&key, m->v, m->n, sizeof(*m->v), kv_cmp);
}

static void model_put(struct model *m, const char *k, size_t klen,
		      const uint8_t *v, size_t vlen)
{
	struct kv *e = model_find(m, k, klen);

	if (!e) {
		size_t lo = 0, hi = m->n;

		/* where it goes: the array stays sorted */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (key_cmp(m->v[mid].key, m->v[mid].klen, k, klen) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (m->n == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 256;
			m->v = realloc(m->v, m->cap * sizeof(*m->v));
		}
		memmove(m->v + lo + 1, m->v + lo, (m->n - lo) * sizeof(*m->v));
		m->n++;
		e = &m->v[lo];
		memcpy(e->key, k, klen);
		e->klen = klen;
		memcpy(e->val, v, vlen);
		e->vlen = vlen;
		return;
	}
	memcpy(e->val, v, vlen);
	e->vlen = vlen;
}

static bool model_del(struct model *m, const char *k, size_t klen)
{
	struct kv *e = model_find(m, k, klen);

	if (!e)
		return false;
	memmove(e, e + 1, (size_t)(m->v + m->n - e - 1) * sizeof(*e));
	m->n--;
	return true;
}

static struct model model_copy(const struct model *m)
{
	struct model c = { malloc((m->n + 1) * sizeof(*m->v)), m->n,
			   m->n + 1 };

	if (m->n)
		memcpy(c.v, m->v, m->n * sizeof(*m->v));
	return c;
}

struct scan_check {
	const struct model *m;
	size_t i, limit;
	bool bad;
};

static int scan_fn(const void *key, size_t klen, const void *val,
		   size_t vlen, void *arg)
{
	struct scan_check *c = arg;
	const struct kv *e = &c->m->v[c->i];

	if (c->i >= c->m->n || e->klen != klen || memcmp(e->key, key, klen) ||
	    e->vlen != vlen || memcmp(e->val, val, vlen)) {
		c->bad = true;
		return 1;
	}
	c->i++;
	return c->i == c->limit;
}

/* the whole tree equals the model */
static bool same(struct kvtree *t, const struct model *m)
{
	struct scan_check c = { .m = m, .limit = SIZE_MAX };

	if (kvt_scan(t, "", 0, scan_fn, &c) || c.bad)
		return false;
	return c.i == m->n;
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static size_t rand_key(unsigned *s, char *k)
{
	/* a small space: puts hit existing keys, deletes find some */
	size_t n = (size_t)snprintf(k, KVT_MAX_KEY + 1, "key-%05u",
				    rnd(s) % 6000);

	if (rnd(s) % 3 == 0) {
		size_t extra = rnd(s) % (KVT_MAX_KEY - n);

		memset(k + n, 'x', extra);
		n += extra;
	}
	return n;
}

static size_t rand_val(unsigned *s, uint8_t *v)
{
	size_t n = rnd(s) % 5 ? rnd(s) % 40 : rnd(s) % (KVT_MAX_VAL + 1);

	for (size_t i = 0; i < n; i++)
		v[i] = (uint8_t)rnd(s);
	return n;
}

static void random_change(struct kvtree *t, struct model *m, unsigned *s)
{
	char k[KVT_MAX_KEY + 1];
	uint8_t v[KVT_MAX_VAL];
	size_t klen = rand_key(s, k), vlen;

	if (rnd(s) % 3 == 0) {
		bool had = model_del(m, k, klen);

		assert_int_equal(kvt_del(t, k, klen), had ? 0 : -1);
	} else {
		vlen = rand_val(s, v);
		assert_int_equal(kvt_put(t, k, klen, v, vlen), 0);
		model_put(m, k, klen, v, vlen);
	}
}

static int depth(struct kvtree *t)
{
	return t->root->level + 1;
}

static void test_model(void **state)
{
	struct mem mem = { 0 };
	struct kvt_store st = store_of(&mem);
	struct model m = { 0 };
	struct kvtree *t;
	unsigned s = 1;
	int deepest = 0;

	assert_int_equal(kvt_open(&st, &t), 0);
	for (int i = 1; i <= 12000; i++) {
		char k[KVT_MAX_KEY + 1];
		uint8_t v[KVT_MAX_VAL];
		size_t klen;
		int n;

		random_change(t, &m, &s);
		/* a lookup */
		klen = rand_key(&s, k);
		n = kvt_get(t, k, klen, v, sizeof(v));
		{
			struct kv *e = model_find(&m, k, klen);

			assert_int_equal(n, e ? (int)e->vlen : -1);
			if (e)
				assert_memory_equal(v, e->val, e->vlen);
		}
		/* a scan of a few keys from a random point */
		if (i % 97 == 0) {
			struct kv key;
			struct scan_check c = { .m = &m, .limit = 0 };

			key.klen = rand_key(&s, key.key);
			c.i = 0;
			while (c.i < m.n && kv_cmp(&m.v[c.i], &key) < 0)
				c.i++;
			c.limit = c.i + 20;
			assert_int_equal(kvt_scan(t, key.key, key.klen,
						  scan_fn, &c), 0);
			assert_false(c.bad);
			assert_true(c.i == c.limit || c.i == m.n);
		}
		if (i % 250 == 0)
			assert_int_equal(kvt_commit(t), 0);
		if (i % 2000 == 0) {
			assert_true(same(t, &m));
			kvt_close(t);
			assert_int_equal(kvt_open(&st, &t), 0);
			assert_int_equal(kvt_check(t), 0);
			assert_true(same(t, &m));
		}
		if (depth(t) > deepest)
			deepest = depth(t);
	}
	/* deep enough that internal nodes split */
	assert_true(deepest >= 4);
	/* empty it: the root becomes a leaf again */
	while (m.n) {
		struct kv e = m.v[m.n / 2];

		assert_int_equal(kvt_del(t, e.key, e.klen), 0);
		model_del(&m, e.key, e.klen);
	}
	assert_int_equal(depth(t), 1);
	assert_int_equal(kvt_commit(t), 0);
	kvt_close(t);
	assert_int_equal(kvt_open(&st, &t), 0);
	assert_true(same(t, &m));
	/* and the pages it used are free again: a new tree takes no more */
	{
		uint64_t before = t->next_page;

		for (int i = 0; i < 2000; i++)
			random_change(t, &m, &s);
		assert_int_equal(kvt_commit(t), 0);
		assert_true(t->next_page == before);
	}
	kvt_close(t);
	free(m.v);
	mem_free(&mem);
}

/* a copy of @m's pages (not its history) */
static void mem_copy(const struct mem *m, struct mem *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t p = 0; p < m->nr_pages; p++)
		if (m->pages[p])
			mem_set(c, p, m->pages[p]);
}

/*
 * The store as a power loss after @upto of @m's logged ops could leave
 * it: @base (the store when op @from was next) and the ops since, those
 * before the last sync all, the others any of them, the last one
 * possibly torn
 */
static void crash_image(const struct mem *m, const struct mem *base,
			size_t from, size_t upto, unsigned *s, struct mem *img)
{
	size_t last_sync = from;

	mem_copy(base, img);
	for (size_t i = from; i < upto; i++)
		if (m->ops[i].page == UINT64_MAX)
			last_sync = i + 1;
	for (size_t i = from; i < last_sync; i++)
		if (m->ops[i].page != UINT64_MAX)
			mem_set(img, m->ops[i].page, m->ops[i].data);
	for (size_t i = last_sync; i < upto; i++) {
		uint8_t torn[KVT_PAGE];

		if (rnd(s) % 2)
			continue;
		if (i == upto - 1 && rnd(s) % 2) {
			/* a superblock's bytes are its first 48 */
			size_t cut = rnd(s) % 2 ? rnd(s) % 48 :
				     rnd(s) % KVT_PAGE;

			mem_read(img, m->ops[i].page, torn);
			memcpy(torn, m->ops[i].data, cut);
			mem_set(img, m->ops[i].page, torn);
		} else {
			mem_set(img, m->ops[i].page, m->ops[i].data);
		}
	}
}

static void test_crashes(void **state)
{
	struct mem mem = { .keep_ops = true };
	struct kvt_store st = store_of(&mem);
	struct model m = { 0 };
	struct kvtree *t;
	unsigned s = 7;
	int images = 0, old = 0, new = 0;

	assert_int_equal(kvt_open(&st, &t), 0);
	for (int commit = 0; commit < 20; commit++) {
		struct model before = model_copy(&m);
		size_t from = mem.nr_ops;
		struct mem base;

		mem_copy(&mem, &base);

		for (int i = 0; i < 60; i++)
			random_change(t, &m, &s);
		assert_int_equal(kvt_commit(t), 0);
		for (size_t k = from; k <= mem.nr_ops; k++) {
			for (int trial = 0; trial < 3; trial++) {
				struct mem img;
				struct kvt_store is = store_of(&img);
				struct kvtree *c;

				crash_image(&mem, &base, from, k, &s, &img);
				images++;
				assert_int_equal(kvt_open(&is, &c), 0);
				/* its free list is the pages it does not use */
				assert_int_equal(kvt_check(c), 0);
				if (same(c, &m)) {
					new++;
				} else {
					assert_true(same(c, &before));
					/* returned: it must be there */
					assert_true(k < mem.nr_ops);
					old++;
				}
				kvt_close(c);
				mem_free(&img);
			}
		}
		free(before.v);
		mem_free(&base);
	}
	print_message("%d crash images: %d the tree before, %d after\n",
		      images, old, new);
	assert_true(old > 0 && new > 0);
	kvt_close(t);
	free(m.v);
	mem_free(&mem);
}

static void test_damage(void **state)
{
	struct mem mem = { 0 };
	struct kvt_store st = store_of(&mem);
	struct model m = { 0 };
	struct kvtree *t;
	unsigned s = 3;
	int refused = 0, frees = 0;
	struct model first;

	assert_int_equal(kvt_open(&st, &t), 0);
	for (int i = 0; i < 3000; i++)
		random_change(t, &m, &s);
	assert_int_equal(kvt_commit(t), 0);
	kvt_close(t);
	/*
	 * Every page: one byte changed.  A page of the tree or of its free
	 * list is refused, by the open or by the reads that need it, and no
	 * read ever returns what is not there; a free page changes nothing.
	 */
	for (uint64_t p = 2; p < mem.nr_pages; p++) {
		struct kvtree *c;
		uint8_t old, v[KVT_MAX_VAL];
		struct scan_check sc = { .m = &m, .limit = SIZE_MAX };
		int r;

		if (!mem.pages[p])
			continue;
		old = mem.pages[p][100];
		mem.pages[p][100] ^= 0x40;
		r = kvt_open(&st, &c);
		if (r) {
			refused++;
			mem.pages[p][100] = old;
			continue;
		}
		r = kvt_scan(c, "", 0, scan_fn, &sc);
		for (size_t i = 0; i < m.n; i++) {
			int g = kvt_get(c, m.v[i].key, m.v[i].klen, v,
					sizeof(v));

			assert_true(g == -2 || (g == (int)m.v[i].vlen &&
				    !memcmp(v, m.v[i].val, m.v[i].vlen)));
		}
		if (r == -2) {
			refused++;
		} else {
			assert_false(sc.bad);
			assert_int_equal(sc.i, m.n);
			frees++;
		}
		kvt_close(c);
		mem.pages[p][100] = old;
	}
	assert_true(refused > 0);
	print_message("damaged pages: %d refused, %d free ones ignored\n",
		      refused, frees);
	/* a second commit, in the other superblock slot (0) */
	first = model_copy(&m);
	assert_int_equal(kvt_open(&st, &t), 0);
	for (int i = 0; i < 500; i++)
		random_change(t, &m, &s);
	assert_int_equal(kvt_commit(t), 0);
	kvt_close(t);
	/* the newest superblock damaged: the tree before it */
	mem.pages[0][20] ^= 1;
	assert_int_equal(kvt_open(&st, &t), 0);
	assert_true(same(t, &first));
	kvt_close(t);
	/* both: nothing to open */
	mem.pages[1][20] ^= 1;
	assert_int_equal(kvt_open(&st, &t), -1);
	mem.pages[0][20] ^= 1;
	assert_int_equal(kvt_open(&st, &t), 0);
	assert_true(same(t, &m));
	kvt_close(t);
	free(first.v);
	free(m.v);
	mem_free(&mem);
}

static void test_bounds(void **state)
{
	struct mem mem = { 0 };
	struct kvt_store st = store_of(&mem);
	char k[KVT_MAX_KEY + 2] = { 0 };
	uint8_t v[KVT_MAX_VAL + 1] = { 0 };
	struct kvtree *t;

	assert_int_equal(kvt_open(&st, &t), 0);
	assert_int_equal(kvt_put(t, k, KVT_MAX_KEY + 1, v, 1), -1);
	assert_int_equal(kvt_put(t, k, 1, v, KVT_MAX_VAL + 1), -1);
	assert_int_equal(kvt_put(t, k, KVT_MAX_KEY, v, KVT_MAX_VAL), 0);
	assert_int_equal(kvt_get(t, k, KVT_MAX_KEY, v, sizeof(v)),
			 KVT_MAX_VAL);
	/* the empty key is a key */
	assert_int_equal(kvt_put(t, "", 0, "e", 1), 0);
	assert_int_equal(kvt_get(t, "", 0, v, 1), 1);
	assert_int_equal(kvt_del(t, "", 0), 0);
	assert_int_equal(kvt_del(t, "", 0), -1);
	kvt_close(t);
	mem_free(&mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_crashes),
		cmocka_unit_test(test_damage),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
