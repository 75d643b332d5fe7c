// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a node keeps on disk about the cluster: the config file
 * (cluster.md §11.3) and the epoch log (§3.4), under BASE.  The writes
 * are atomic (write a temporary file, then rename).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "proto.h"
#include "util.h"
#include "core/core.h"
#include "state/cluster.h"
#include "state/epoch.h"

/* ---- config file (cluster.md §11.3) ---- */

static void base_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", sys.base, name);
}

/* the rename that put @path in place survives a power loss */
static int sync_parent_dir(const char *path)
{
	char dir[4200];
	char *slash;
	int fd, ret;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	*slash = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = fsync(fd);
	close(fd);
	return ret;
}

int write_file_atomic(const char *path, const void *buf, size_t len)
{
	char tmp[4200];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_SYNC | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return -1;
	if (xwrite(fd, buf, len) < 0) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path))
		return -1;
	return sync_parent_dir(path);
}

int config_save(void)
{
	const struct cluster_state *cs = cstate;
	struct sheepdog_config c = { 0 };
	/* Kelpie: the -N base follows Sheepdog's 40 bytes, le16 */
	uint8_t buf[sizeof(c) + 2];
	char path[4200];

	c.ctime = cs->ctime;
	c.flags = cs->flags;
	c.copies = cs->copies;
	memcpy(c.store, cs->store, sizeof(c.store));
	c.shutdown = cs->shutdown_clean;
	c.copy_policy = cs->copy_policy;
	c.block_size_shift = cs->block_size_shift;
	c.version = SD_FORMAT_VERSION;
	c.space = sys.self.space;
	config_encode(&c, buf);
	put_le16(buf + sizeof(c), cs->format_vnodes);
	base_path(path, sizeof(path), "config");
	if (write_file_atomic(path, buf, sizeof(buf))) {
		sd_err("cannot write %s: %m", path);
		return -1;
	}
	return 0;
}

int config_load(void)
{
	struct cluster_state *cs = cstate_mut();
	struct sheepdog_config c;
	uint8_t buf[sizeof(c)], fv[2];
	char path[4200];
	int fd;

	base_path(path, sizeof(path), "config.tmp");
	unlink(path);
	base_path(path, sizeof(path), "config");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (xread(fd, buf, sizeof(buf)) < 0) {
		close(fd);
		sd_err("%s is truncated", path);
		return -1;
	}
	/* Sheepdog's config ends here; Kelpie's has the -N base after it */
	cs->format_vnodes = read(fd, fv, sizeof(fv)) == sizeof(fv) ?
			    format_vnodes_valid(get_le16(fv)) : 0;
	close(fd);
	config_decode(&c, buf);
	if (c.version != SD_FORMAT_VERSION) {
		sd_err("%s has format version %u, expected %u", path,
		       c.version, SD_FORMAT_VERSION);
		return -1;
	}
	cs->ctime = c.ctime;
	cs->flags = c.flags;
	cs->copies = c.copies;
	memcpy(cs->store, c.store, sizeof(cs->store));
	cs->store[sizeof(cs->store) - 1] = 0;
	cs->shutdown_clean = c.shutdown;
	cs->copy_policy = c.copy_policy;
	cs->block_size_shift = c.block_size_shift;
	if (c.space)
		sys.self.space = c.space;
	return 0;
}

/* ---- epoch log (cluster.md §3.4) ---- */

void epoch_path(char *buf, size_t len, uint32_t epoch)
{
	snprintf(buf, len, "%s/epoch/%08u", sys.base, epoch);
}

int epoch_log_write(uint32_t epoch, const struct sd_node *nodes,
			   size_t nr)
{
	size_t len = nr * sizeof(struct sd_node) + 8;
	uint8_t *buf;
	char path[4200];
	int ret;

	/* epochs never go back: no epoch is written twice, nor an older one */
	sd_assert(epoch > epoch_log_latest());
	buf = xmalloc(len);
	sd_nodes_encode(nodes, nr, buf);
	put_le64(buf + len - 8, (uint64_t)time(NULL));
	epoch_path(path, sizeof(path), epoch);
	ret = write_file_atomic(path, buf, len);
	if (ret)
		sd_err("cannot write epoch %u: %m", epoch);
	free(buf);
	return ret;
}

int epoch_log_read(uint32_t epoch, struct sd_node *nodes, size_t max,
		   uint64_t *t)
{
	char path[4200];
	struct stat st;
	uint8_t *buf;
	size_t nr;
	int fd;

	epoch_path(path, sizeof(path), epoch);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_size < 8 ||
	    (st.st_size - 8) % sizeof(struct sd_node) ||
	    (size_t)(st.st_size - 8) / sizeof(struct sd_node) > max) {
		close(fd);
		return -1;
	}
	buf = xmalloc((size_t)st.st_size);
	if (xread(fd, buf, (size_t)st.st_size) < 0) {
		free(buf);
		close(fd);
		return -1;
	}
	close(fd);
	nr = (size_t)(st.st_size - 8) / sizeof(struct sd_node);
	sd_nodes_decode(nodes, nr, buf);
	if (t)
		*t = get_le64(buf + st.st_size - 8);
	free(buf);
	return (int)nr;
}

uint32_t epoch_log_latest(void)
{
	char path[4200];
	struct dirent *de;
	uint32_t latest = 0;
	DIR *d;

	base_path(path, sizeof(path), "epoch");
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		unsigned long e;

		if (strlen(de->d_name) != 8)
			continue;
		e = strtoul(de->d_name, &end, 10);
		if (!*end && e > latest)
			latest = (uint32_t)e;
	}
	closedir(d);
	return latest;
}

void epoch_log_clear(void)
{
	char path[4200];

	base_path(path, sizeof(path), "epoch");
	rmdir_r(path);
	mkdir_p(path);
}

int epoch_log_init(void)
{
	char path[4200];

	base_path(path, sizeof(path), "epoch");
	if (mkdir_p(path)) {
		sd_err("cannot create %s: %m", path);
		return -1;
	}
	return 0;
}
