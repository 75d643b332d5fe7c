// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Where an object file lives inside an object directory (cluster.md
 * §11.2).  The plain store keeps every file in the directory itself; the
 * tree store (dog cluster format -b tree) spreads them over 257
 * subdirectories, so that a node with millions of objects never has them
 * in one directory: inode, vmstate and attribute objects in meta/, every
 * other object in xx/, xx being the low byte of its VDI id in hex.  Stale
 * copies stay flat in .stale/ with either store.
 *
 * The store chosen at format time holds for the whole cluster and every
 * node (BASE/config).  A node whose files are in the other layout (one
 * that joins a cluster formatted the other way) moves them over when the
 * layout is set (layout_convert).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sheepdog_proto.h"
#include "util.h"
#include "store_int.h"

static bool tree;
/* odd while the layout changes (a seqlock for layout_present) */
static unsigned int change_seq;

bool layout_tree(void)
{
	return __atomic_load_n(&tree, __ATOMIC_ACQUIRE);
}

void layout_set_tree(bool on)
{
	__atomic_store_n(&tree, on, __ATOMIC_RELEASE);
}

void layout_change(bool begin)
{
	unsigned int seq = __atomic_add_fetch(&change_seq, 1, __ATOMIC_ACQ_REL);

	sd_assert((seq & 1) == begin);
}

static int sub_of_oid(uint64_t oid)
{
	if (is_vdi_obj(oid) || is_vmstate_obj(oid) || is_vdi_attr_obj(oid))
		return LAYOUT_SUB_META;
	return (int)((oid >> 32) & 0xff);
}

int layout_sub(struct obj_key k)
{
	return layout_tree() ? sub_of_oid(k.oid) : LAYOUT_SUB_TOP;
}

void layout_prefix(int sub, char *buf, size_t len)
{
	sd_assert(sub >= 0 && sub < LAYOUT_NR_SUB);
	if (sub == LAYOUT_SUB_TOP)
		snprintf(buf, len, "%s", "");
	else if (sub == LAYOUT_SUB_META)
		snprintf(buf, len, "%s", "meta/");
	else
		snprintf(buf, len, "%02x/", sub);
}

void layout_rel(char *buf, size_t len, struct obj_key k, const char *sfx)
{
	char pre[8], name[STORE_NAME_MAX];

	layout_prefix(layout_sub(k), pre, sizeof(pre));
	store_key_name(name, sizeof(name), k);
	snprintf(buf, len, "%s%s%s", pre, name, sfx);
}

/* "meta" or two lower-case hex digits: a subdirectory's name */
static bool is_sub_name(const char *name)
{
	static const char hex[] = "0123456789abcdef";

	if (!strcmp(name, "meta"))
		return true;
	return strlen(name) == 2 && name[0] && strchr(hex, name[0]) &&
	       name[1] && strchr(hex, name[1]);
}

int layout_make(int dfd, bool nosync)
{
	return layout_tree() ? layout_make_tree(dfd, nosync) : 0;
}

int layout_make_tree(int dfd, bool nosync)
{
	char pre[8];

	for (int sub = 0; sub < LAYOUT_SUB_TOP; sub++) {
		layout_prefix(sub, pre, sizeof(pre));
		pre[strlen(pre) - 1] = 0;	/* no slash */
		if (mkdirat(dfd, pre, 0755) && errno != EEXIST)
			return -1;
	}
	return nosync ? 0 : fsync(dfd);
}

void layout_unmake(int dfd)
{
	char pre[8];

	for (int sub = 0; sub < LAYOUT_SUB_TOP; sub++) {
		layout_prefix(sub, pre, sizeof(pre));
		pre[strlen(pre) - 1] = 0;
		unlinkat(dfd, pre, AT_REMOVEDIR);	/* only when empty */
	}
}

/*
 * A check that overlaps a change of layout (the subdirectories made
 * before the tree store is set, removed after the plain one is) proves
 * nothing either way: such a disk counts as present.
 */
bool layout_present(int dfd)
{
	unsigned int seq = __atomic_load_n(&change_seq, __ATOMIC_ACQUIRE);
	bool ok = true;
	char pre[8];
	struct stat st;

	if (seq & 1 || !layout_tree())
		return true;
	for (int sub = 0; ok && sub < LAYOUT_SUB_TOP; sub++) {
		layout_prefix(sub, pre, sizeof(pre));
		pre[strlen(pre) - 1] = 0;
		ok = !fstatat(dfd, pre, &st, 0) && S_ISDIR(st.st_mode);
	}
	return ok || __atomic_load_n(&change_seq, __ATOMIC_ACQUIRE) != seq;
}

static int walk_one(const char *dir, bool top,
		    int (*fn)(const char *dir, const char *name, void *arg),
		    void *arg)
{
	struct dirent *de;
	int ret = 0;
	DIR *d = opendir(dir);

	if (!d)
		return top || errno != ENOENT ? -1 : 0;
	while (!ret && (de = readdir(d))) {
		if (de->d_name[0] == '.' || (top && is_sub_name(de->d_name)))
			continue;
		ret = fn(dir, de->d_name, arg);
	}
	closedir(d);
	return ret;
}

int layout_walk(const char *dir,
		int (*fn)(const char *dir, const char *name, void *arg),
		void *arg)
{
	char sub[PATH_MAX], pre[8];
	int ret = walk_one(dir, true, fn, arg);

	/* the subdirectories whichever the layout: a conversion sees both */
	for (int s = 0; !ret && s < LAYOUT_SUB_TOP; s++) {
		layout_prefix(s, pre, sizeof(pre));
		snprintf(sub, sizeof(sub), "%s/%.*s", dir,
			 (int)strlen(pre) - 1, pre);
		ret = walk_one(sub, false, fn, arg);
	}
	return ret;
}

struct each_key {
	int (*fn)(struct obj_key k, void *arg);
	void *arg;
};

static int each_key(const char *dir, const char *name, void *arg)
{
	struct each_key *e = arg;
	struct obj_key k;

	return store_parse_key(name, &k) ? 0 : e->fn(k, e->arg);
}

int layout_for_each_key(const char *dir,
			int (*fn)(struct obj_key k, void *arg), void *arg)
{
	struct each_key e = { fn, arg };

	return layout_walk(dir, each_key, &e);
}

int layout_sync_sub(int dfd, int sub)
{
	char pre[8];
	int fd, ret;

	if (sub == LAYOUT_SUB_TOP)
		return fsync(dfd);
	layout_prefix(sub, pre, sizeof(pre));
	pre[strlen(pre) - 1] = 0;
	fd = openat(dfd, pre, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;	/* none: nothing in it */
	ret = fsync(fd);
	close(fd);
	return ret;
}

struct convert {
	const char *top;
	uint64_t moved;
	int err;
};

/* a file named after an object (with a suffix: an undo file, a .tmp) */
static int convert_one(const char *dir, const char *name, void *arg)
{
	struct convert *cv = arg;
	char from[PATH_MAX], to[PATH_MAX], pre[8];
	struct obj_key k;
	const char *rest = store_parse_key_prefix(name, &k);
	int sub;

	if (!rest)
		return 0;
	sub = layout_sub(k);
	layout_prefix(sub, pre, sizeof(pre));
	snprintf(from, sizeof(from), "%s/%s", dir, name);
	snprintf(to, sizeof(to), "%s/%s%s", cv->top, pre, name);
	if (!strcmp(from, to))
		return 0;
	if (rename(from, to)) {
		cv->err = errno;
		return -1;
	}
	cv->moved++;
	return 0;
}

int layout_convert(const char *dir, int dfd, bool nosync, uint64_t *moved)
{
	struct convert cv = { .top = dir };
	int ret;

	*moved = 0;
	if (layout_make(dfd, true))
		return -1;
	ret = layout_walk(dir, convert_one, &cv);
	*moved = cv.moved;
	if (ret) {
		errno = cv.err ? cv.err : errno;
		return -1;
	}
	if (!layout_tree())
		layout_unmake(dfd);
	if (nosync || !cv.moved)
		return nosync ? 0 : fsync(dfd);
	/* the names moved: every directory they left or entered */
	for (int sub = 0; sub < LAYOUT_NR_SUB; sub++)
		if (layout_sync_sub(dfd, sub))
			return -1;
	return 0;
}
