// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: lib/kvtree.c reading pages it did not write (a
 * store damaged past its checksums, or a bug).  Built with 512-byte
 * pages, like test_kvtree.c builds it small.
 *
 * Input: up to 16 pages of 512 bytes (pages 0 and 1 the superblocks);
 * each page that starts with a node's, a superblock's or a free list's
 * magic gets its CRC32C fixed up, so that the decoders behind the checksum are reached.
 * Then: open, a full scan (keys strictly ascending), lookups of the keys
 * the scan saw (each found with the value the scan gave), and, on a tree
 * kvt_check() passes, a few puts and deletes, a commit, and a reopen
 * that must give what was committed.
 */
#define KVT_PAGE	512
#define KVT_MAX_KEY	64
#define KVT_MAX_VAL	100
#define KVT_MAX_PAGES	4096
#include "../../lib/kvtree.c"

#include <stdio.h>

#define NR_PAGES	64
#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

static uint8_t pages[NR_PAGES][KVT_PAGE];

static int f_read(void *arg, uint64_t page, void *buf)
{
	if (page >= NR_PAGES)
		return -1;
	memcpy(buf, pages[page], KVT_PAGE);
	return 0;
}

static int f_write(void *arg, uint64_t page, const void *buf)
{
	if (page >= NR_PAGES)
		return -1;
	memcpy(pages[page], buf, KVT_PAGE);
	return 0;
}

static int f_sync(void *arg)
{
	return 0;
}

struct seen {
	uint8_t key[32][KVT_MAX_KEY], val[32][KVT_MAX_VAL];
	size_t klen[32], vlen[32];
	int n, total;
	uint8_t last[KVT_MAX_KEY];
	size_t last_len;
};

static int scan_fn(const void *key, size_t klen, const void *val,
		   size_t vlen, void *arg)
{
	struct seen *s = arg;

	if (klen > KVT_MAX_KEY || vlen > KVT_MAX_VAL)
		die("entry over its bounds\n");
	if (s->total && key_cmp(s->last, s->last_len, key, klen) >= 0)
		die("scan out of order\n");
	memcpy(s->last, key, klen);
	s->last_len = klen;
	if (s->n < 32) {
		memcpy(s->key[s->n], key, klen);
		memcpy(s->val[s->n], val, vlen);
		s->klen[s->n] = klen;
		s->vlen[s->n] = vlen;
		s->n++;
	}
	return ++s->total > 100000;
}

static void check_lookups(struct kvtree *t, struct seen *s)
{
	uint8_t v[KVT_MAX_VAL];

	for (int i = 0; i < s->n; i++) {
		int r = kvt_get(t, s->key[i], s->klen[i], v, sizeof(v));

		/* a page the scan read may fail on the way down, never lie */
		if (r == -2)
			continue;
		if (r != (int)s->vlen[i] || memcmp(v, s->val[i], s->vlen[i]))
			die("lookup disagrees with the scan\n");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvt_store st = { f_read, f_write, f_sync, NULL };
	struct seen *s = calloc(1, sizeof(*s));
	struct kvtree *t;
	size_t n = size / KVT_PAGE;

	if (!s)
		abort();
	memset(pages, 0, sizeof(pages));
	if (n > 16)
		n = 16;
	for (size_t p = 0; p < n; p++) {
		uint8_t *pg = pages[p];

		memcpy(pg, data + p * KVT_PAGE, KVT_PAGE);
		if (get_le32(pg) == NODE_MAGIC || get_le32(pg) == SB_MAGIC ||
		    get_le32(pg) == FL_MAGIC)
			put_le32(pg + 8, page_crc(pg));
	}
	if (kvt_open(&st, &t)) {
		free(s);
		return 0;
	}
	if (kvt_scan(t, "", 0, scan_fn, s) == 0)
		check_lookups(t, s);
	/*
	 * A free list that names a page the tree uses is damage no checksum
	 * shows (the harness fixed them up): kvt_check() finds it, and a
	 * commit on such a tree would overwrite the tree
	 */
	if (kvt_check(t)) {
		kvt_close(t);
		free(s);
		return 0;
	}
	/* changes on top of whatever it read, then a commit and a reopen */
	for (int i = 0; i < 8 && size > (size_t)i; i++) {
		uint8_t k[2] = { 'k', data[i] };

		if (data[i] & 1)
			kvt_del(t, k, 2);
		else
			kvt_put(t, k, 2, data, MIN(data[i] % 16u, size));
	}
	memset(s, 0, sizeof(*s));
	if (kvt_scan(t, "", 0, scan_fn, s) == 0 && kvt_commit(t) == 0) {
		struct seen *again = calloc(1, sizeof(*again));
		struct kvtree *r;

		if (!again)
			abort();
		if (kvt_open(&st, &r))
			die("a committed tree does not open\n");
		if (kvt_scan(r, "", 0, scan_fn, again) == 0 &&
		    again->total != s->total)
			die("reopened: %d entries, committed %d\n",
			    again->total, s->total);
		kvt_close(r);
		free(again);
	}
	kvt_close(t);
	free(s);
	return 0;
}
