// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lazyfs: a FUSE pass-through file system that forgets, on command,
 * every write that was not made durable: a power loss for tests.
 *
 *   lazyfs [-f] [-o FUSE-OPTIONS] BACKING MOUNTPOINT
 *
 * BACKING may be MOUNTPOINT itself (the directory is opened before the
 * mount hides it).  -f stays in the foreground; without it the process
 * daemonises once mounted.  Unmount with `fusermount3 -u MOUNTPOINT` (or
 * umount as root); the process then exits.  Unsynced data is not written
 * back at unmount: it is lost, as in a crash.
 *
 * Crash model
 *
 *  - Data: write(2) goes to memory, in 4 KiB pages per file (keyed by the
 *    backing inode, so that renames and hard links keep them).  Reads see
 *    it, and the size seen through the mount includes unsynced writes
 *    past the end.  fsync(2) or fdatasync(2) on any descriptor of the file
 *    writes all its pages to the backing file (both are treated alike:
 *    metadata is durable anyway, see below).  A write through a descriptor
 *    opened with O_SYNC or O_DSYNC, or made with RWF_DSYNC or RWF_SYNC
 *    (the kernel marks such a write O_DSYNC in its request), is a write
 *    plus an fsync of the file (the kernel sends no fsync for it under
 *    direct I/O).  The backing
 *    file is not fsynced itself: the backing directory plays the disk,
 *    which survives the simulated crash.
 *  - syncfs(2) and sync(2) do nothing here: the kernel sends a FUSE file
 *    system no request for them (FUSE_SYNCFS goes to virtiofs only, and
 *    libfuse 3.14 has no callback for it), and with direct I/O there is
 *    no kernel page cache to write back.  Data that only syncfs would make
 *    durable is lost by a crash.  The command "sync" below stands in.
 *  - Metadata is durable at once, in the order it happened, with or
 *    without an fsync of the file or its directory (fsync of a directory
 *    does nothing): create, mkdir, mknod, unlink, rmdir, rename, link,
 *    symlink, chmod, chown, utimens, and size changes by truncate,
 *    O_TRUNC and fallocate (modes 0 and KEEP_SIZE; the others fail with
 *    EOPNOTSUPP), which go to the backing file at once.  This is the
 *    state a journaling file system (ext4 data=writeback, XFS) can be in
 *    after a crash: the journal committed, no data written back.  A file
 *    written and renamed into place without fsync comes back with its
 *    old contents, or empty if new, as ext4 with delayed allocation can.
 *    A real power loss can also forget directory entries that were not
 *    fsynced; this model never does, so it cannot find a missing
 *    directory fsync.
 *  - A crash drops every unsynced page, and the sizes grown by unsynced
 *    writes, of every file.  A real disk may keep any subset of unsynced
 *    writes; this models the case where it kept none.
 *
 * Control: the file .lazyfs-ctl at the mount root (not listed by
 * readdir).  Write one command to it:
 *   crash      drop everything not yet synced
 *   sync       make everything durable (what syncfs would do)
 *   fsync off  ignore fsync/fdatasync/O_SYNC from now on (to check that a
 *              test notices lost synced data); "fsync on" restores
 *   fsync delay MS [STRING]
 *              every fsync/fdatasync of a file whose path contains STRING
 *              waits MS milliseconds first (other operations go on): a
 *              slow disk, to hold a store in the middle; MS 0 ends it
 *   odirect off
 *              refuse opens with O_DIRECT (EINVAL), as file systems without
 *              it do; "odirect on" takes them again (the default)
 *   eio direct
 *              writes through descriptors opened with O_DIRECT fail with
 *              EIO (nothing is written), as a failing disk's would; the
 *              others go on; "eio off" ends it
 * Reading it returns "dirty_files=N dirty_pages=N crashes=N lost_pages=N
 * fsyncs=N".
 *
 * The kernel caches nothing (direct_io, zero attribute and entry
 * timeouts), so a crash is seen at once.  One mutex serialises all file
 * operations: this is a test tool, not a fast one.
 *
 * Build: cc -std=gnu11 -Wall -Wextra -Werror -o lazyfs lazyfs.c \
 *            $(pkg-config --cflags --libs fuse3)
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 35

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define PG		4096
#define MAX_SIZE	(1LL << 34)	/* 16 GiB: bounds the page array */
#define CTL_NAME	".lazyfs-ctl"

/* unsynced state of one backing inode */
struct lfile {
	struct lfile *next;
	dev_t dev;
	ino_t ino;
	int fd;			/* backing file, read-write */
	int opens;		/* handles */
	bool hashed;		/* still reachable by name */
	bool dirty;		/* has pages the backing file lacks */
	off_t size;		/* size seen through the mount: at least the
				 * backing file's, more after writes past it */
	size_t nslots;
	char **pages;		/* dirty pages, NULL where clean */
};

/* fuse_file_info.fh */
struct handle {
	struct lfile *f;	/* NULL for the control file */
	bool sync;		/* opened with O_SYNC or O_DSYNC */
	bool direct;		/* opened with O_DIRECT */
	char name[256];		/* the path it was opened by (FUSE gives
				 * none to fsync with nullpath_ok) */
};

static int bfd = -1;		/* backing directory */
static struct lfile *files;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool fsync_off;
static bool odirect_off;	/* "odirect off": O_DIRECT opens fail */
static bool eio_direct;		/* "eio direct": O_DIRECT writes fail */
static unsigned int delay_ms;	/* "fsync delay" */
static char delay_match[32];
static unsigned long nr_crashes, lost_pages, nr_fsyncs;

/* "/a/b" -> "a/b", "/" -> "." (relative to bfd) */
static const char *rel(const char *path)
{
	return path[1] ? path + 1 : ".";
}

static bool is_ctl(const char *path)
{
	return path && !strcmp(path, "/" CTL_NAME);
}

static struct handle *hdl(struct fuse_file_info *fi)
{
	return fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
}

/* ---- unsynced state ---- */

static struct lfile *lfile_find(dev_t dev, ino_t ino)
{
	struct lfile *f;

	for (f = files; f; f = f->next)
		if (f->dev == dev && f->ino == ino)
			return f;
	return NULL;
}

/* free the dirty pages from @from on; returns how many there were */
static unsigned long drop_pages(struct lfile *f, size_t from)
{
	unsigned long n = 0;

	for (size_t i = from; i < f->nslots; i++) {
		if (f->pages[i]) {
			free(f->pages[i]);
			f->pages[i] = NULL;
			n++;
		}
	}
	return n;
}

static void lfile_unhash(struct lfile *f)
{
	struct lfile **pp;

	for (pp = &files; *pp; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	}
	f->hashed = false;
}

/* free @f if nothing needs it any more */
static void lfile_put(struct lfile *f)
{
	if (f->opens || (f->dirty && f->hashed))
		return;
	if (f->hashed)
		lfile_unhash(f);
	for (size_t i = 0; i < f->nslots; i++)
		free(f->pages[i]);
	free(f->pages);
	close(f->fd);
	free(f);
}

/* the state of the file open as @fd; takes over @fd or closes it */
static struct lfile *lfile_get(int fd)
{
	struct lfile *f;
	struct stat st;

	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	f = lfile_find(st.st_dev, st.st_ino);
	if (f) {
		close(fd);
		return f;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return NULL;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->fd = fd;
	f->size = st.st_size;
	f->hashed = true;
	f->next = files;
	files = f;
	return f;
}

/* the state of the file at backing path @rp (opened if needed) */
static int lfile_open(const char *rp, int flags, mode_t mode,
		      struct lfile **fp)
{
	int fd = openat(bfd, rp, O_RDWR | O_CLOEXEC | O_NOFOLLOW | flags,
			mode);

	if (fd < 0 && (errno == EACCES || errno == EROFS || errno == ETXTBSY))
		fd = openat(bfd, rp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | flags,
			    mode);
	if (fd < 0)
		return -errno;
	*fp = lfile_get(fd);
	return *fp ? 0 : -ENOMEM;
}

/* the backing inode named @rp lost a name: forget it if that was its last */
static void forget_if_last(const struct stat *st)
{
	struct lfile *f;

	if (!S_ISREG(st->st_mode) || st->st_nlink != 1)
		return;
	f = lfile_find(st->st_dev, st->st_ino);
	if (f) {
		lfile_unhash(f);
		lfile_put(f);
	}
}

/* the dirty page @idx, filled from the backing file when new */
static char *page_get(struct lfile *f, size_t idx)
{
	off_t pos = (off_t)idx * PG;
	char *p;

	if (idx >= f->nslots) {
		size_t n = f->nslots ? f->nslots : 16;
		char **np;

		while (n <= idx)
			n *= 2;
		np = realloc(f->pages, n * sizeof(*np));
		if (!np)
			return NULL;
		memset(np + f->nslots, 0, (n - f->nslots) * sizeof(*np));
		f->pages = np;
		f->nslots = n;
	}
	if (f->pages[idx])
		return f->pages[idx];
	p = calloc(1, PG);
	if (!p)
		return NULL;
	/* the backing file is never longer than f->size: no tail to cut */
	if (pread(f->fd, p, PG, pos) < 0) {
		free(p);
		return NULL;
	}
	f->pages[idx] = p;
	return p;
}

/* a size change by truncate or fallocate is metadata: durable at once */
static int lfile_truncate(struct lfile *f, off_t size)
{
	size_t last = (size + PG - 1) / PG;	/* first page wholly past */

	if (size < 0 || size > MAX_SIZE)
		return -EFBIG;
	if (ftruncate(f->fd, size))
		return -errno;
	if (last < f->nslots)
		drop_pages(f, last);
	if (size % PG && (size_t)(size / PG) < f->nslots &&
	    f->pages[size / PG])
		memset(f->pages[size / PG] + size % PG, 0, PG - size % PG);
	f->size = size;
	return 0;
}

/* make @f durable: the backing file gets its size and pages */
static int lfile_sync(struct lfile *f)
{
	if (!f->dirty || fsync_off)
		return 0;
	nr_fsyncs++;
	for (size_t i = 0; i < f->nslots; i++) {
		off_t pos = (off_t)i * PG;
		size_t len;

		if (!f->pages[i])
			continue;
		len = f->size - pos < PG ? f->size - pos : PG;
		if (pwrite(f->fd, f->pages[i], len, pos) != (ssize_t)len)
			return errno ? -errno : -EIO;
		free(f->pages[i]);
		f->pages[i] = NULL;
	}
	f->dirty = false;
	return 0;
}

/* the power loss */
static void crash(void)
{
	struct lfile *f, *next;
	unsigned long pages = 0, nr = 0;
	struct stat st;

	for (f = files; f; f = next) {
		next = f->next;
		if (!f->dirty)
			continue;
		nr++;
		pages += drop_pages(f, 0);
		f->dirty = false;
		f->size = fstat(f->fd, &st) ? 0 : st.st_size;
		lfile_put(f);
	}
	nr_crashes++;
	lost_pages += pages;
	fprintf(stderr, "lazyfs: crash: dropped %lu pages of %lu files\n",
		pages, nr);
}

/* ---- the control file ---- */

static int ctl_write(const char *buf, size_t size)
{
	char cmd[32];
	size_t n = size < sizeof(cmd) - 1 ? size : sizeof(cmd) - 1;

	memcpy(cmd, buf, n);
	cmd[n] = 0;
	cmd[strcspn(cmd, "\n")] = 0;
	if (!strcmp(cmd, "crash")) {
		crash();
	} else if (!strcmp(cmd, "sync")) {
		for (struct lfile *f = files, *next; f; f = next) {
			int ret;

			next = f->next;
			ret = lfile_sync(f);
			if (ret)
				return ret;
			lfile_put(f);
		}
	} else if (!strcmp(cmd, "fsync off") || !strcmp(cmd, "fsync on")) {
		fsync_off = cmd[6] == 'o' && cmd[7] == 'f';
		fprintf(stderr, "lazyfs: %s\n", cmd);
	} else if (!strcmp(cmd, "odirect off") || !strcmp(cmd, "odirect on")) {
		odirect_off = cmd[9] == 'f';
		fprintf(stderr, "lazyfs: %s\n", cmd);
	} else if (!strcmp(cmd, "eio direct") || !strcmp(cmd, "eio off")) {
		eio_direct = cmd[4] == 'd';
		fprintf(stderr, "lazyfs: %s\n", cmd);
	} else if (!strncmp(cmd, "fsync delay ", 12)) {
		unsigned int ms;
		char sfx[32] = "";

		if (sscanf(cmd + 12, "%u %31s", &ms, sfx) < 1)
			return -EINVAL;
		delay_ms = ms;
		memcpy(delay_match, sfx, sizeof(sfx));
		fprintf(stderr, "lazyfs: fsync delay %u ms for '*%s*'\n", ms,
			sfx);
	} else {
		return -EINVAL;
	}
	return (int)size;
}

static int ctl_read(char *buf, size_t size, off_t off)
{
	unsigned long nf = 0, np = 0;
	char s[256];
	int len;

	for (struct lfile *f = files; f; f = f->next) {
		nf += f->dirty;
		for (size_t i = 0; i < f->nslots; i++)
			np += f->pages[i] != NULL;
	}
	len = snprintf(s, sizeof(s), "dirty_files=%lu dirty_pages=%lu "
		       "crashes=%lu lost_pages=%lu fsyncs=%lu%s\n", nf, np,
		       nr_crashes, lost_pages, nr_fsyncs,
		       fsync_off ? " fsync=off" : "");
	if (off >= len)
		return 0;
	if ((size_t)(len - off) < size)
		size = len - off;
	memcpy(buf, s + off, size);
	return (int)size;
}

/* ---- file system operations ---- */

static void *lz_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->use_ino = 1;
	cfg->hard_remove = 1;	/* no .fuse_hidden files */
	cfg->nullpath_ok = 1;
	return NULL;
}

static int lz_getattr(const char *path, struct stat *st,
		      struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);
	struct lfile *f;
	int ret = 0;

	if (!h && !path)
		return -ENOENT;
	if (is_ctl(path) || (h && !h->f)) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		return 0;
	}
	pthread_mutex_lock(&lock);
	if (h ? fstat(h->f->fd, st) :
	    fstatat(bfd, rel(path), st, AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
	} else if (S_ISREG(st->st_mode)) {
		f = h ? h->f : lfile_find(st->st_dev, st->st_ino);
		if (f && f->dirty) {
			st->st_size = f->size;
			if (st->st_blocks < (f->size + 511) / 512)
				st->st_blocks = (f->size + 511) / 512;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

static int lz_access(const char *path, int mask)
{
	if (is_ctl(path))
		return 0;
	return faccessat(bfd, rel(path), mask, AT_SYMLINK_NOFOLLOW) ?
	       -errno : 0;
}

static int lz_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(bfd, rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int lz_opendir(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(bfd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

/* the whole directory in one go (no offsets) */
static int lz_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	int fd = dup((int)fi->fh);
	struct dirent *de;
	DIR *d;

	(void)path;
	(void)off;
	(void)flags;
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat st = { .st_ino = de->d_ino,
				   .st_mode = DTTOIF(de->d_type) };

		if (fill(buf, de->d_name, &st, 0, 0))
			break;
	}
	closedir(d);
	return 0;
}

static int lz_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int lz_mknod(const char *path, mode_t mode, dev_t rdev)
{
	return mknodat(bfd, rel(path), mode, rdev) ? -errno : 0;
}

static int lz_mkdir(const char *path, mode_t mode)
{
	return mkdirat(bfd, rel(path), mode) ? -errno : 0;
}

static int lz_rmdir(const char *path)
{
	return unlinkat(bfd, rel(path), AT_REMOVEDIR) ? -errno : 0;
}

static int lz_symlink(const char *target, const char *path)
{
	return symlinkat(target, bfd, rel(path)) ? -errno : 0;
}

static int lz_link(const char *from, const char *to)
{
	return linkat(bfd, rel(from), bfd, rel(to), 0) ? -errno : 0;
}

static int lz_unlink(const char *path)
{
	struct stat st;
	int ret = 0;

	if (is_ctl(path))
		return -EPERM;
	pthread_mutex_lock(&lock);
	if (fstatat(bfd, rel(path), &st, AT_SYMLINK_NOFOLLOW) ||
	    unlinkat(bfd, rel(path), 0))
		ret = -errno;
	else
		forget_if_last(&st);
	pthread_mutex_unlock(&lock);
	return ret;
}

static int lz_rename(const char *from, const char *to, unsigned int flags)
{
	struct stat src, dst;
	bool had_dst;
	int ret = 0;

	if (is_ctl(from) || is_ctl(to))
		return -EPERM;
	pthread_mutex_lock(&lock);
	had_dst = !fstatat(bfd, rel(to), &dst, AT_SYMLINK_NOFOLLOW);
	if (fstatat(bfd, rel(from), &src, AT_SYMLINK_NOFOLLOW) ||
	    renameat2(bfd, rel(from), bfd, rel(to), flags))
		ret = -errno;
	else if (had_dst && !(flags & RENAME_EXCHANGE) &&
		 (dst.st_dev != src.st_dev || dst.st_ino != src.st_ino))
		forget_if_last(&dst);
	pthread_mutex_unlock(&lock);
	return ret;
}

static int lz_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);

	if (is_ctl(path) || (h && !h->f))
		return 0;
	if (h)
		return fchmod(h->f->fd, mode) ? -errno : 0;
	return fchmodat(bfd, rel(path), mode, 0) ? -errno : 0;
}

static int lz_chown(const char *path, uid_t uid, gid_t gid,
		    struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);

	if (is_ctl(path) || (h && !h->f))
		return 0;
	if (h)
		return fchown(h->f->fd, uid, gid) ? -errno : 0;
	return fchownat(bfd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW) ?
	       -errno : 0;
}

static int lz_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);

	if (is_ctl(path) || (h && !h->f))
		return 0;
	if (h)
		return futimens(h->f->fd, tv) ? -errno : 0;
	return utimensat(bfd, rel(path), tv, AT_SYMLINK_NOFOLLOW) ?
	       -errno : 0;
}

static int lz_truncate(const char *path, off_t size,
		       struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);
	struct lfile *f;
	int ret;

	if (is_ctl(path) || (h && !h->f))
		return 0;
	pthread_mutex_lock(&lock);
	ret = h ? 0 : lfile_open(rel(path), 0, 0, &f);
	if (h)
		f = h->f;
	if (!ret) {
		ret = lfile_truncate(f, size);
		if (!h)
			lfile_put(f);
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

/* open or create: a handle on the file's state */
static int do_open(const char *path, int cflags, mode_t mode,
		   struct fuse_file_info *fi)
{
	struct handle *h = calloc(1, sizeof(*h));
	int ret = 0;

	if (!h)
		return -ENOMEM;
	if ((fi->flags & O_DIRECT) && odirect_off && !is_ctl(path)) {
		free(h);
		return -EINVAL;
	}
	fi->direct_io = 1;
	fi->keep_cache = 0;
	h->sync = fi->flags & O_DSYNC;	/* O_SYNC includes O_DSYNC */
	h->direct = fi->flags & O_DIRECT;
	snprintf(h->name, sizeof(h->name), "%s", path);
	if (!is_ctl(path)) {
		pthread_mutex_lock(&lock);
		ret = lfile_open(rel(path), cflags, mode, &h->f);
		if (!ret) {
			h->f->opens++;
			if (fi->flags & O_TRUNC)
				ret = lfile_truncate(h->f, 0);
			if (!ret && h->sync)
				ret = lfile_sync(h->f);
			if (ret) {
				h->f->opens--;
				lfile_put(h->f);
			}
		}
		pthread_mutex_unlock(&lock);
	}
	if (ret) {
		free(h);
		return ret;
	}
	fi->fh = (uintptr_t)h;
	return 0;
}

static int lz_open(const char *path, struct fuse_file_info *fi)
{
	return do_open(path, 0, 0, fi);
}

static int lz_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (is_ctl(path))
		return -EEXIST;
	return do_open(path, O_CREAT | (fi->flags & O_EXCL), mode, fi);
}

static int lz_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);
	struct lfile *f = h->f;
	size_t done = 0;
	int ret;

	(void)path;
	pthread_mutex_lock(&lock);
	if (!f) {
		ret = ctl_read(buf, size, off);
		goto out;
	}
	if (off >= f->size) {
		ret = 0;
		goto out;
	}
	if ((off_t)size > f->size - off)
		size = f->size - off;
	while (done < size) {
		off_t pos = off + done;
		size_t idx = pos / PG, in = pos % PG;
		size_t n = PG - in < size - done ? PG - in : size - done;

		if (idx < f->nslots && f->pages[idx]) {
			memcpy(buf + done, f->pages[idx] + in, n);
		} else {
			ssize_t got = pread(f->fd, buf + done, n, pos);

			if (got < 0) {
				ret = -errno;
				goto out;
			}
			memset(buf + done + got, 0, n - got);
		}
		done += n;
	}
	ret = (int)done;
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

static int lz_write(const char *path, const char *buf, size_t size,
		    off_t off, struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);
	struct lfile *f = h->f;
	size_t done = 0;
	int ret;

	(void)path;
	pthread_mutex_lock(&lock);
	if (!f) {
		ret = ctl_write(buf, size);
		goto out;
	}
	if (off < 0 || off + (off_t)size > MAX_SIZE) {
		ret = -EFBIG;
		goto out;
	}
	if (eio_direct && h->direct) {
		ret = -EIO;
		goto out;
	}
	while (done < size) {
		off_t pos = off + done;
		size_t in = pos % PG;
		size_t n = PG - in < size - done ? PG - in : size - done;
		char *p = page_get(f, pos / PG);

		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
		memcpy(p + in, buf + done, n);
		done += n;
	}
	if (off + (off_t)size > f->size)
		f->size = off + size;
	f->dirty = true;
	/* per write: the kernel adds O_DSYNC for pwritev2(RWF_DSYNC) */
	ret = h->sync || (fi->flags & O_DSYNC) ? lfile_sync(f) : 0;
	if (!ret)
		ret = (int)size;
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

static int lz_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return fstatvfs(bfd, st) ? -errno : 0;
}

static int lz_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return 0;		/* close(2) makes nothing durable */
}

static int lz_release(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);

	(void)path;
	if (h->f) {
		pthread_mutex_lock(&lock);
		h->f->opens--;
		lfile_put(h->f);
		pthread_mutex_unlock(&lock);
	}
	free(h);
	return 0;
}

static int lz_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);
	int ret = 0;

	(void)path;
	(void)datasync;
	if (h->f) {
		unsigned int ms = 0;

		pthread_mutex_lock(&lock);
		if (delay_ms && strstr(h->name, delay_match))
			ms = delay_ms;
		pthread_mutex_unlock(&lock);
		if (ms)
			usleep(ms * 1000U);	/* a slow disk, not a stuck one */
		pthread_mutex_lock(&lock);
		ret = lfile_sync(h->f);
		pthread_mutex_unlock(&lock);
	}
	return ret;
}

static int lz_fsyncdir(const char *path, int datasync,
		       struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	return 0;		/* directory changes are durable at once */
}

/* the space and size are metadata: durable at once */
static int lz_fallocate(const char *path, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	struct handle *h = hdl(fi);
	int ret = 0;

	(void)path;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;	/* would touch cached data */
	if (!h->f)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	if (fallocate(h->f->fd, mode, off, len))
		ret = -errno;
	else if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > h->f->size)
		h->f->size = off + len;
	pthread_mutex_unlock(&lock);
	return ret;
}

static const struct fuse_operations lz_ops = {
	.init		= lz_init,
	.getattr	= lz_getattr,
	.access		= lz_access,
	.readlink	= lz_readlink,
	.opendir	= lz_opendir,
	.readdir	= lz_readdir,
	.releasedir	= lz_releasedir,
	.mknod		= lz_mknod,
	.mkdir		= lz_mkdir,
	.rmdir		= lz_rmdir,
	.symlink	= lz_symlink,
	.link		= lz_link,
	.unlink		= lz_unlink,
	.rename		= lz_rename,
	.chmod		= lz_chmod,
	.chown		= lz_chown,
	.utimens	= lz_utimens,
	.truncate	= lz_truncate,
	.open		= lz_open,
	.create		= lz_create,
	.read		= lz_read,
	.write		= lz_write,
	.statfs		= lz_statfs,
	.flush		= lz_flush,
	.release	= lz_release,
	.fsync		= lz_fsync,
	.fsyncdir	= lz_fsyncdir,
	.fallocate	= lz_fallocate,
};

/* the first non-option argument is the backing directory */
static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	const char **backing = data;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT && !*backing) {
		*backing = arg;
		return 0;
	}
	return 1;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	const char *backing = NULL;
	int ret;

	if (fuse_opt_parse(&args, &backing, NULL, opt_proc) || !backing) {
		fprintf(stderr, "usage: %s [-f] [-o OPTIONS] BACKING "
			"MOUNTPOINT\n", argv[0]);
		return 2;
	}
	bfd = open(backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0) {
		fprintf(stderr, "lazyfs: %s: %s\n", backing, strerror(errno));
		return 1;
	}
	umask(0);
	ret = fuse_main(args.argc, args.argv, &lz_ops, NULL);
	fuse_opt_free_args(&args);
	return ret;
}
