// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Plain file-per-object store.  Creates go through "<oid>.tmp" and
 * rename() so that a crash never leaves a half-written object under its
 * final name; the directory is fsynced so that the rename itself survives.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "fdcache.h"
#include "store.h"
#include "util.h"

static char obj_dir[4096];
static bool store_nosync;
static int dir_fd = -1;

static void obj_path(char *buf, size_t len, uint64_t oid, const char *sfx)
{
	snprintf(buf, len, "%s/%016" PRIx64 "%s", obj_dir, oid, sfx);
}

static int err_to_res(int err)
{
	switch (err) {
	case ENOENT:
		return SD_RES_NO_OBJ;
	case ENOSPC:
	case EDQUOT:
		return SD_RES_NO_SPACE;
	case EMFILE:
	case ENFILE:
	case EINTR:
	case EAGAIN:
	case EEXIST:
		return SD_RES_NETWORK_ERROR;
	default:
		return SD_RES_EIO;
	}
}

static int remove_tmp_files(void)
{
	DIR *d = opendir(obj_dir);
	struct dirent *de;
	char p[4400];

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l > 4 && !strcmp(de->d_name + l - 4, ".tmp")) {
			snprintf(p, sizeof(p), "%s/%s", obj_dir, de->d_name);
			unlink(p);
		}
	}
	closedir(d);
	return 0;
}

int store_init(const char *base, bool nosync)
{
	char stale[4400];

	snprintf(obj_dir, sizeof(obj_dir), "%s/obj", base);
	store_nosync = nosync;
	snprintf(stale, sizeof(stale), "%s/.stale", obj_dir);
	if (mkdir_p(stale)) {
		sd_err("cannot create %s: %m", stale);
		return -1;
	}
	dir_fd = open(obj_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return -1;
	return remove_tmp_files();
}

const char *store_dir(void)
{
	return obj_dir;
}

int store_read(uint64_t oid, void *buf, uint32_t len, uint32_t off)
{
	char p[4400];
	struct fdc_ent *e;
	ssize_t n;
	int ret = SD_RES_SUCCESS;

	obj_path(p, sizeof(p), oid, "");
	e = fdc_get(oid, p);
	if (!e)
		return err_to_res(errno);
	n = xpread(fdc_fd(e), buf, len, off);
	if (n < 0)
		ret = err_to_res(errno);
	else if ((uint32_t)n < len && !is_sparse_obj(oid))
		/* preallocated at full size: a short file is a damaged one */
		ret = SD_RES_EIO;
	else if ((uint32_t)n < len)
		/* reads past the stored end of a sparse object see zeros */
		memset((char *)buf + n, 0, len - (size_t)n);
	fdc_put(e);
	return ret;
}

int store_write(uint64_t oid, const void *buf, uint32_t len, uint32_t off,
		bool sync)
{
	char p[4400];
	struct fdc_ent *e;
	int ret = SD_RES_SUCCESS;

	obj_path(p, sizeof(p), oid, "");
	e = fdc_get(oid, p);
	if (!e)
		return err_to_res(errno);
	if (xpwrite(fdc_fd(e), buf, len, off) < 0 ||
	    (sync && !store_nosync && fdatasync(fdc_fd(e))))
		ret = err_to_res(errno);
	fdc_put(e);
	return ret;
}

static int sync_dir(void)
{
	if (store_nosync)
		return 0;
	return fsync(dir_fd);
}

/*
 * Write a whole object to OID.tmp, then put it in place: replacing what is
 * there (rename), or only if nothing is (link, for recovery: a copy that
 * arrives late must never replace one that a newer recovery or a client
 * wrote meanwhile).
 */
static int create_obj(uint64_t oid, uint32_t obj_size, const void *buf,
		      uint32_t len, uint32_t off, bool sync, bool replace)
{
	static unsigned long tmp_seq;
	char tmp[4400], p[4400], sfx[32];
	int fd, ret = SD_RES_SUCCESS;

	if ((uint64_t)off + len > obj_size)
		return SD_RES_INVALID_PARMS;
	/* a temporary name of its own: concurrent creates never share one */
	snprintf(sfx, sizeof(sfx), ".%lu.tmp",
		 __atomic_fetch_add(&tmp_seq, 1, __ATOMIC_RELAXED));
	obj_path(tmp, sizeof(tmp), oid, sfx);
	obj_path(p, sizeof(p), oid, "");
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_to_res(errno);
	if (is_sparse_obj(oid)) {
		if (ftruncate(fd, obj_size))
			goto fail;
	} else {
		/* returns the error number; errno is left alone */
		int err = posix_fallocate(fd, 0, obj_size);

		if (err) {
			errno = err;
			goto fail;
		}
	}
	if (len && xpwrite(fd, buf, len, off) < 0)
		goto fail;
	if (sync && !store_nosync && fdatasync(fd))
		goto fail;
	close(fd);
	if (!replace) {
		int r = link(tmp, p), err = errno;

		unlink(tmp);
		if (r && err == EEXIST)
			return SD_RES_SUCCESS;	/* a newer copy is here */
		if (r)
			return err_to_res(err);
	} else if (rename(tmp, p)) {
		ret = err_to_res(errno);
		unlink(tmp);
		return ret;
	}
	fdc_drop(oid);
	if (sync && sync_dir())
		return SD_RES_EIO;
	return SD_RES_SUCCESS;
fail:
	ret = err_to_res(errno);
	close(fd);
	unlink(tmp);
	return ret;
}

int store_create(uint64_t oid, uint32_t obj_size, const void *buf,
		 uint32_t len, uint32_t off, bool sync)
{
	return create_obj(oid, obj_size, buf, len, off, sync, true);
}

int store_create_new(uint64_t oid, uint32_t obj_size, const void *buf,
		     uint32_t len, uint32_t off, bool sync)
{
	return create_obj(oid, obj_size, buf, len, off, sync, false);
}

int store_remove(uint64_t oid)
{
	char p[4400];

	obj_path(p, sizeof(p), oid, "");
	if (unlink(p))
		return err_to_res(errno);
	fdc_drop(oid);
	return SD_RES_SUCCESS;
}

int store_exist(uint64_t oid)
{
	char p[4400];

	obj_path(p, sizeof(p), oid, "");
	return access(p, F_OK) ? SD_RES_NO_OBJ : SD_RES_SUCCESS;
}

int store_flush(void)
{
	if (store_nosync)
		return SD_RES_SUCCESS;
	return syncfs(dir_fd) ? SD_RES_EIO : SD_RES_SUCCESS;
}

static int parse_oid(const char *name, uint64_t *oid)
{
	char *end;

	if (strlen(name) != 16)
		return -1;
	*oid = strtoull(name, &end, 16);
	return *end ? -1 : 0;
}

int store_for_each(int (*fn)(uint64_t oid, void *arg), void *arg)
{
	DIR *d = opendir(obj_dir);
	struct dirent *de;
	int ret = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		uint64_t oid;

		if (parse_oid(de->d_name, &oid))
			continue;
		ret = fn(oid, arg);
		if (ret)
			break;
	}
	closedir(d);
	return ret;
}

int store_wipe(void)
{
	fdc_drop_all();
	DIR *d = opendir(obj_dir);
	struct dirent *de;
	char p[4400];

	if (!d)
		return SD_RES_EIO;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", obj_dir, de->d_name);
		unlink(p);
	}
	closedir(d);
	snprintf(p, sizeof(p), "%s/.stale", obj_dir);
	rmdir_r(p);
	mkdir_p(p);
	sync_dir();
	/* again: an fd opened while the files were going must not stay */
	fdc_drop_all();
	return SD_RES_SUCCESS;
}

int store_stat(uint64_t *size, uint64_t *free_bytes)
{
	struct statvfs vs;

	if (statvfs(obj_dir, &vs))
		return SD_RES_EIO;
	*size = (uint64_t)vs.f_frsize * vs.f_blocks;
	*free_bytes = (uint64_t)vs.f_frsize * vs.f_bavail;
	return SD_RES_SUCCESS;
}

static void stale_path(char *buf, size_t len, uint64_t oid, uint32_t epoch)
{
	snprintf(buf, len, "%s/.stale/%016" PRIx64 ".%u", obj_dir, oid, epoch);
}

int store_move_to_stale(uint64_t oid, uint32_t epoch)
{
	char from[4400], to[4400];

	obj_path(from, sizeof(from), oid, "");
	stale_path(to, sizeof(to), oid, epoch);
	if (rename(from, to)) {
		char dir[4400];
		int err = errno;

		/* a purge (rmdir + mkdir of .stale) may be under way */
		snprintf(dir, sizeof(dir), "%s/.stale", obj_dir);
		if (err != ENOENT || access(from, F_OK) || mkdir_p(dir) ||
		    rename(from, to))
			return err_to_res(err == ENOENT ? errno : err);
	}
	fdc_drop(oid);
	return SD_RES_SUCCESS;
}

/* the highest epoch suffix among the stale copies of @oid, or 0 */
static uint32_t newest_stale(uint64_t oid)
{
	char dir[4400], prefix[32];
	struct dirent *de;
	uint32_t best = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/.stale", obj_dir);
	snprintf(prefix, sizeof(prefix), "%016" PRIx64 ".", oid);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		unsigned long e;
		char *end;

		if (strncmp(de->d_name, prefix, 17))
			continue;
		e = strtoul(de->d_name + 17, &end, 10);
		if (!*end && e > best)
			best = (uint32_t)e;
	}
	closedir(d);
	return best;
}

int store_read_stale(uint64_t oid, void *buf, uint32_t len, uint32_t off,
		     uint32_t *stale_epoch)
{
	uint32_t epoch = newest_stale(oid);
	char p[4400];
	ssize_t n;
	int fd;

	if (!epoch)
		return SD_RES_NO_OBJ;
	*stale_epoch = epoch;
	stale_path(p, sizeof(p), oid, epoch);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_to_res(errno);
	n = xpread(fd, buf, len, off);
	close(fd);
	if (n < 0)
		return SD_RES_EIO;
	if ((uint32_t)n < len)
		memset((char *)buf + n, 0, len - (size_t)n);
	return SD_RES_SUCCESS;
}

/* the oids of the stale copies (they are offered to recovery too) */
int store_for_each_stale(int (*fn)(uint64_t oid, void *arg), void *arg)
{
	char p[4400];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	snprintf(p, sizeof(p), "%s/.stale", obj_dir);
	d = opendir(p);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char hex[17], *end;
		uint64_t oid;

		if (strlen(de->d_name) < 18 || de->d_name[16] != '.')
			continue;
		memcpy(hex, de->d_name, 16);
		hex[16] = 0;
		oid = strtoull(hex, &end, 16);
		if (*end)
			continue;
		ret = fn(oid, arg);
		if (ret)
			break;
	}
	closedir(d);
	return ret;
}

int store_purge_stale(void)
{
	char p[4400];

	snprintf(p, sizeof(p), "%s/.stale", obj_dir);
	rmdir_r(p);
	return mkdir_p(p) ? SD_RES_EIO : SD_RES_SUCCESS;
}

int store_nr_stale(void)
{
	char p[4400];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "%s/.stale", obj_dir);
	d = opendir(p);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}
