// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A store written before objects carried checksums is upgraded once, at
 * start-up, before anything is served: every object file (working and
 * stale) without a checksum trailer is rewritten whole, through a
 * temporary file and rename(), with its CRCs computed from the data it
 * holds.  Then obj/.csum-v1 records that the store is upgraded; after
 * that, a file without a trailer is damage, never an old format.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sheepdog_proto.h"
#include "store.h"
#include "store_int.h"
#include "util.h"

#define MARKER		".csum-v1"
#define UP_SUFFIX	".up.tmp"

/*
 * an object's file name (a strip's too), optionally followed by ".<epoch>"
 * (a stale copy); never a temporary file
 */
static bool object_name(const char *name, struct obj_key *k)
{
	const char *rest = store_parse_key_prefix(name, k);

	/*
	 * "<oid>.<epoch>" in the stale area; an undo file of a strip has
	 * checksums of its own (and never was in an original store)
	 */
	return rest && (!*rest || *rest == '.') && !strstr(name, ".tmp") &&
	       !strstr(name, STRIP_UNDO_SFX);
}

static int upgrade_file(const char *dir, const char *name, bool nosync)
{
	char path[4400], tmp[4420];
	uint8_t *buf = NULL;
	struct stat st;
	int fd, out = -1, ret = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s%s", path, UP_SUFFIX);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (csum_layout(fd)) {
		close(fd);
		return 0;		/* done before a crash */
	}
	if (fstat(fd, &st) || st.st_size > UINT32_MAX)
		goto out;
	buf = xmalloc(st.st_size ? (size_t)st.st_size : 1);
	if (xpread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		goto out;
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0 ||
	    ftruncate(out, (off_t)csum_file_size((uint32_t)st.st_size)))
		goto out;
	/* zero blocks stay holes */
	for (off_t o = 0; o < st.st_size; o += CSUM_BLOCK) {
		size_t n = st.st_size - o < CSUM_BLOCK ?
			   (size_t)(st.st_size - o) : CSUM_BLOCK;

		if (!is_zero(buf + o, n) && xpwrite(out, buf + o, n, o) < 0)
			goto out;
	}
	if (csum_write_new(out, (uint32_t)st.st_size, buf,
			   (uint32_t)st.st_size, 0) ||
	    (!nosync && fdatasync(out)) || rename(tmp, path))
		goto out;
	ret = 0;
out:
	if (ret)
		sd_err("cannot add checksums to %s: %m", path);
	if (out >= 0)
		close(out);
	if (ret)
		unlink(tmp);
	close(fd);
	free(buf);
	return ret;
}

struct upgrade {
	bool nosync;
	size_t nr;
};

static int upgrade_entry(const char *dir, const char *name, void *arg)
{
	struct upgrade *up = arg;
	size_t l = strlen(name);
	struct obj_key k;
	char p[4400];

	if (l > strlen(UP_SUFFIX) &&
	    !strcmp(name + l - strlen(UP_SUFFIX), UP_SUFFIX)) {
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		unlink(p);	/* an upgrade a crash interrupted */
		return 0;
	}
	if (!object_name(name, &k))
		return 0;
	up->nr++;
	return upgrade_file(dir, name, up->nosync);
}

/* the stale area: flat with either store */
static int upgrade_flat(const char *dir, struct upgrade *up)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int ret = 0;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while (!ret && (de = readdir(d)))
		if (de->d_name[0] != '.')
			ret = upgrade_entry(dir, de->d_name, up);
	closedir(d);
	return ret;
}

int store_upgrade(int slot, bool nosync)
{
	char dir[MD_PATH_MAX + 8], marker[MD_PATH_MAX + 32];
	char stale[MD_PATH_MAX + 32];
	struct upgrade up = { .nosync = nosync };
	int fd;

	md_dir(slot, dir, sizeof(dir));
	snprintf(marker, sizeof(marker), "%s/" MARKER, dir);
	if (!access(marker, F_OK))
		return 0;
	snprintf(stale, sizeof(stale), "%s/.stale", dir);
	/* an original tree store's objects are in its subdirectories */
	if (layout_walk(dir, upgrade_entry, &up) ||
	    upgrade_flat(stale, &up))
		return -1;
	if (up.nr)
		sd_notice("added checksums to %zu object(s) stored without "
			  "them", up.nr);
	fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (!nosync)
		fsync(fd);
	close(fd);
	return 0;
}
