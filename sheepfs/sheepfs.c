// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sheepfs: mount a Kelpie cluster with FUSE (man/sheepfs.8).
 *
 *   MOUNTPOINT/vdi/<name>         a current VDI, read-write
 *   MOUNTPOINT/vdi/<name>@<tag>   a snapshot, read-only
 *   MOUNTPOINT/cluster/info       `dog cluster info`
 *   MOUNTPOINT/node/list          `dog node list`
 *
 * This file holds the option parsing, start-up and the FUSE operations;
 * conn.c talks to the cluster, vdi.c does the VDI I/O.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "sheepfs.h"
#include "util.h"

#define IO_MAX		(1U << 20)	/* max_read and max_write */
#define EXIT_USAGE	64

enum node_kind {
	N_NONE,
	N_ROOT,
	N_VDI_DIR,
	N_CLUSTER_DIR,
	N_NODE_DIR,
	N_CLUSTER_INFO,
	N_NODE_LIST,
	N_VDI_FILE,
};

/* an open file */
struct sfs_file {
	enum node_kind kind;
	struct svdi *v;		/* N_VDI_FILE */
	struct sbuf text;	/* N_CLUSTER_INFO, N_NODE_LIST */
};

static struct fuse_session *session;
static time_t mount_time;

/* ---- paths ---- */

static enum node_kind classify(const char *path, const char **fname)
{
	static const struct {
		const char *path;
		enum node_kind kind;
	} fixed[] = {
		{ "/", N_ROOT },
		{ "/vdi", N_VDI_DIR },
		{ "/cluster", N_CLUSTER_DIR },
		{ "/node", N_NODE_DIR },
		{ "/cluster/info", N_CLUSTER_INFO },
		{ "/node/list", N_NODE_LIST },
	};

	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		if (!strcmp(path, fixed[i].path))
			return fixed[i].kind;
	if (!strncmp(path, "/vdi/", 5) && path[5] && !strchr(path + 5, '/')) {
		*fname = path + 5;
		return N_VDI_FILE;
	}
	return N_NONE;
}

static bool is_dir(enum node_kind k)
{
	return k == N_ROOT || k == N_VDI_DIR || k == N_CLUSTER_DIR ||
	       k == N_NODE_DIR;
}

/* ---- FUSE operations ---- */

static void stat_common(struct stat *st, time_t t)
{
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atime = st->st_mtime = st->st_ctime = t;
}

static int vdi_getattr(const char *fname, struct stat *st)
{
	struct vdi_ent ent;
	uint64_t size;
	int ret;

	ret = vdi_lookup(fname, &ent);
	if (ret)
		return ret;
	if (!vdi_open_size(fname, &size))
		size = ent.size;
	stat_common(st, (time_t)ent.mtime);
	st->st_mode = S_IFREG | (ent.snapshot ? 0444 : 0644);
	st->st_nlink = 1;
	st->st_size = (off_t)size;
	st->st_blksize = IO_MAX;
	st->st_blocks = (blkcnt_t)(size / 512);
	return 0;
}

static int sfs_getattr(const char *path, struct stat *st,
		       struct fuse_file_info *fi)
{
	const char *fname = NULL;
	enum node_kind k = classify(path, &fname);

	memset(st, 0, sizeof(*st));
	if (is_dir(k)) {
		stat_common(st, mount_time);
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = k == N_ROOT ? 5 : 2;
		return 0;
	}
	if (k == N_CLUSTER_INFO || k == N_NODE_LIST) {
		/* generated on open: the size is unknown (direct_io) */
		stat_common(st, time(NULL));
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		return 0;
	}
	if (k == N_VDI_FILE)
		return vdi_getattr(fname, st);
	return -ENOENT;
}

struct fill_ctx {
	void *buf;
	fuse_fill_dir_t filler;
};

static void fill_one(const struct vdi_ent *ent, void *arg)
{
	struct fill_ctx *c = arg;

	c->filler(c->buf, ent->fname, NULL, 0, 0);
}

static int sfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		       off_t off, struct fuse_file_info *fi,
		       enum fuse_readdir_flags flags)
{
	struct fill_ctx c = { .buf = buf, .filler = filler };
	const char *fname = NULL;

	filler(buf, ".", NULL, 0, 0);
	filler(buf, "..", NULL, 0, 0);
	switch (classify(path, &fname)) {
	case N_ROOT:
		filler(buf, "cluster", NULL, 0, 0);
		filler(buf, "node", NULL, 0, 0);
		filler(buf, "vdi", NULL, 0, 0);
		return 0;
	case N_CLUSTER_DIR:
		filler(buf, "info", NULL, 0, 0);
		return 0;
	case N_NODE_DIR:
		filler(buf, "list", NULL, 0, 0);
		return 0;
	case N_VDI_DIR:
		return vdi_list(fill_one, &c);
	case N_NONE:
		return -ENOENT;
	default:
		return -ENOTDIR;
	}
}

static int open_text(struct sfs_file *f, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	if (f->kind == N_CLUSTER_INFO)
		return cluster_info_text(&f->text);
	return node_list_text(&f->text);
}

static int sfs_open(const char *path, struct fuse_file_info *fi)
{
	const char *fname = NULL;
	struct sfs_file *f;
	int ret;

	f = xzalloc(sizeof(*f));
	f->kind = classify(path, &fname);
	if (f->kind == N_VDI_FILE)
		ret = vdi_open(fname, (fi->flags & O_ACCMODE) != O_RDONLY,
			       &f->v);
	else if (f->kind == N_CLUSTER_INFO || f->kind == N_NODE_LIST)
		ret = open_text(f, fi);
	else
		ret = f->kind == N_NONE ? -ENOENT : -EISDIR;
	if (ret) {
		sbuf_free(&f->text);
		free(f);
		return ret;
	}
	/*
	 * O_TRUNC is ignored: a VDI keeps its size, like a block device.
	 * direct_io: no second copy of the data in the page cache.
	 */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->fh = (uintptr_t)f;
	return 0;
}

static struct sfs_file *file_of(struct fuse_file_info *fi)
{
	return (struct sfs_file *)(uintptr_t)fi->fh;
}

static int sfs_read(const char *path, char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct sfs_file *f = file_of(fi);
	size_t n;

	if (f->kind == N_VDI_FILE)
		return (int)vdi_read(f->v, buf, MIN(size, (size_t)IO_MAX),
				     off);
	if (off < 0 || (uint64_t)off >= f->text.len)
		return 0;
	n = MIN(size, f->text.len - (size_t)off);
	memcpy(buf, f->text.buf + off, n);
	return (int)n;
}

static int sfs_write(const char *path, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct sfs_file *f = file_of(fi);

	if (f->kind != N_VDI_FILE)
		return -EBADF;
	return (int)vdi_write(f->v, buf, MIN(size, (size_t)IO_MAX), off);
}

static int sfs_fsync(const char *path, int datasync,
		     struct fuse_file_info *fi)
{
	struct sfs_file *f = file_of(fi);

	return f->kind == N_VDI_FILE ? vdi_flush(f->v) : 0;
}

/* close(2): report a failed flush of what this mount wrote */
static int sfs_flush(const char *path, struct fuse_file_info *fi)
{
	return sfs_fsync(path, 0, fi);
}

static int sfs_release(const char *path, struct fuse_file_info *fi)
{
	struct sfs_file *f = file_of(fi);

	if (f->kind == N_VDI_FILE)
		vdi_close(f->v);
	sbuf_free(&f->text);
	free(f);
	return 0;
}

static int sfs_truncate(const char *path, off_t size,
			struct fuse_file_info *fi)
{
	const char *fname = NULL;
	enum node_kind k = classify(path, &fname);

	if (k == N_VDI_FILE)
		return size < 0 ? -EINVAL : vdi_truncate(fname, (uint64_t)size);
	if (k == N_NONE)
		return -ENOENT;
	return is_dir(k) ? -EISDIR : -EACCES;
}

static int sfs_unlink(const char *path)
{
	const char *fname = NULL;

	if (classify(path, &fname) == N_VDI_FILE)
		return vdi_unlink(fname);
	return -EPERM;
}

/* no new files, directories, links or names */
static int sfs_create(const char *path, mode_t mode,
		      struct fuse_file_info *fi)
{
	return -EPERM;
}

static int sfs_mknod(const char *path, mode_t mode, dev_t dev)
{
	return -EPERM;
}

static int sfs_mkdir(const char *path, mode_t mode)
{
	return -EPERM;
}

static int sfs_rmdir(const char *path)
{
	return -EPERM;
}

static int sfs_rename(const char *from, const char *to, unsigned int flags)
{
	return -EPERM;
}

static int sfs_link(const char *from, const char *to)
{
	return -EPERM;
}

static int sfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return -EPERM;
}

static int sfs_chown(const char *path, uid_t uid, gid_t gid,
		     struct fuse_file_info *fi)
{
	return -EPERM;
}

/* timestamps are the VDI's own; `touch` is accepted and changes nothing */
static int sfs_utimens(const char *path, const struct timespec tv[2],
		       struct fuse_file_info *fi)
{
	struct stat st;

	return sfs_getattr(path, &st, fi);
}

static int sfs_statfs(const char *path, struct statvfs *sv)
{
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 4096;
	sv->f_frsize = 4096;
	sv->f_namemax = SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN;
	return 0;
}

static void *sfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	conn->max_write = IO_MAX;
	conn->max_read = IO_MAX;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->entry_timeout = 1;
	cfg->attr_timeout = 1;
	cfg->negative_timeout = 0;
	/* unlink of an open file: refuse rather than rename it */
	cfg->hard_remove = 1;
	cfg->use_ino = 0;
	return NULL;
}

static const struct fuse_operations sfs_ops = {
	.init = sfs_init,
	.getattr = sfs_getattr,
	.readdir = sfs_readdir,
	.open = sfs_open,
	.read = sfs_read,
	.write = sfs_write,
	.flush = sfs_flush,
	.fsync = sfs_fsync,
	.release = sfs_release,
	.truncate = sfs_truncate,
	.unlink = sfs_unlink,
	.create = sfs_create,
	.mknod = sfs_mknod,
	.mkdir = sfs_mkdir,
	.rmdir = sfs_rmdir,
	.rename = sfs_rename,
	.link = sfs_link,
	.symlink = sfs_link,
	.chmod = sfs_chmod,
	.chown = sfs_chown,
	.utimens = sfs_utimens,
	.statfs = sfs_statfs,
};

/* ---- options ---- */

struct sfs_opts {
	char **addr;		/* -a values, resolved once -p is known */
	int nr_addr;
	int port;
	int timeout;
	bool foreground;
	bool debug;
	const char *log;
	char *pidfile;
	char **fuse_opts;	/* -o values */
	int nr_fuse_opts;
	const char *mountpoint;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sheepfs [options] MOUNTPOINT\n"
		"Mount the VDIs of a Kelpie (Sheepdog) cluster as files.\n\n"
		"  -a, --address ADDR[,ADDR...]\n"
		"                          sheep to talk to, in order of "
		"preference; ADDR is\n"
		"                          host, host:port or [ipv6]:port; "
		"may be repeated\n"
		"                          (default 127.0.0.1)\n"
		"  -p, --port PORT         port of addresses without one "
		"(default 7000)\n"
		"  -t, --timeout SEC       fail a request with EIO after SEC "
		"seconds\n"
		"                          (default %d)\n"
		"      --allow-delete      unlink deletes the VDI\n"
		"      --sync              write through: no write-back cache "
		"in the sheep\n"
		"  -l, --log FILE          log to FILE\n"
		"      --pidfile FILE      write the daemon's pid to FILE\n"
		"  -f, --foreground        do not daemonise\n"
		"  -d, --debug             FUSE debug output (implies -f)\n"
		"  -o OPT[,OPT...]         FUSE mount options\n"
		"  -h, --help              this help\n"
		"  -V, --version           print the version\n",
		SFS_DEFAULT_TIMEOUT);
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static char *absolute(const char *path)
{
	char cwd[PATH_MAX], *p;

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return xstrdup(path);
	p = xmalloc(strlen(cwd) + strlen(path) + 2);
	sprintf(p, "%s/%s", cwd, path);
	return p;
}

enum { OPT_ALLOW_DELETE = 256, OPT_SYNC, OPT_PIDFILE };

static const struct option long_opts[] = {
	{ "address", required_argument, NULL, 'a' },
	{ "port", required_argument, NULL, 'p' },
	{ "timeout", required_argument, NULL, 't' },
	{ "allow-delete", no_argument, NULL, OPT_ALLOW_DELETE },
	{ "sync", no_argument, NULL, OPT_SYNC },
	{ "log", required_argument, NULL, 'l' },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "foreground", no_argument, NULL, 'f' },
	{ "debug", no_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void push(char ***arr, int *nr, char *s)
{
	*arr = xrealloc(*arr, sizeof(**arr) * (size_t)(*nr + 1));
	(*arr)[(*nr)++] = s;
}

static int parse_opt(struct sfs_opts *o, int ch)
{
	switch (ch) {
	case 'a':
		push(&o->addr, &o->nr_addr, optarg);
		return 0;
	case 'p':
		if (parse_int(optarg, 1, 65535, &o->port))
			break;
		return 0;
	case 't':
		if (parse_int(optarg, 1, 86400, &o->timeout))
			break;
		return 0;
	case OPT_ALLOW_DELETE:
		sfs_allow_delete = true;
		return 0;
	case OPT_SYNC:
		sfs_sync_writes = true;
		return 0;
	case 'l':
		o->log = optarg;
		return 0;
	case OPT_PIDFILE:
		o->pidfile = absolute(optarg);
		return 0;
	case 'f':
		o->foreground = true;
		return 0;
	case 'd':
		o->debug = o->foreground = true;
		return 0;
	case 'o':
		push(&o->fuse_opts, &o->nr_fuse_opts, optarg);
		return 0;
	case 'h':
		usage(stdout);
		exit(0);
	case 'V':
		printf("sheepfs (Kelpie) %s\n", KELPIE_VERSION);
		exit(0);
	default:
		usage(stderr);
		return -1;
	}
	fprintf(stderr, "sheepfs: invalid value '%s'\n", optarg);
	return -1;
}

static void free_opts(struct sfs_opts *o)
{
	free(o->addr);
	free(o->fuse_opts);
	free(o->pidfile);
	memset(o, 0, sizeof(*o));
}

static int parse_args(int argc, char **argv, struct sfs_opts *o)
{
	int ch;

	o->port = SD_LISTEN_PORT;
	o->timeout = SFS_DEFAULT_TIMEOUT;
	while ((ch = getopt_long(argc, argv, "a:p:t:l:fdo:hV", long_opts,
				 NULL)) != -1)
		if (parse_opt(o, ch))
			return -1;
	if (optind != argc - 1) {
		usage(stderr);
		return -1;
	}
	o->mountpoint = argv[optind];
	if (!o->nr_addr)
		push(&o->addr, &o->nr_addr, "127.0.0.1");
	for (int i = 0; i < o->nr_addr; i++) {
		if (conn_add_addrs(o->addr[i], o->port)) {
			fprintf(stderr, "sheepfs: invalid address '%s'\n",
				o->addr[i]);
			return -1;
		}
	}
	conn_set_timeout(o->timeout);
	return 0;
}

/* ---- start-up ---- */

static int ready_fd = -1;

/*
 * Daemonise before any thread exists; the parent exits once the child
 * reports that the file system is mounted (0) or dies (1).
 */
static void daemon_fork(void)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p)) {
		perror("sheepfs: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("sheepfs: fork");
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		_exit(read(p[0], &c, 1) == 1 && c == 0 ? 0 : 1);
	}
	close(p[0]);
	setsid();
	ready_fd = p[1];
}

static void daemon_ready(void)
{
	char c = 0;
	int fd;

	if (ready_fd < 0)
		return;
	if (chdir("/"))
		sd_warn("chdir /: %m");
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (write(ready_fd, &c, 1) != 1)
		sd_warn("cannot report start-up: %m");
	close(ready_fd);
	ready_fd = -1;
}

static bool session_exited(void)
{
	return session && fuse_session_exited(session);
}

static int write_pidfile(const char *path)
{
	FILE *fp = fopen(path, "w");

	if (!fp) {
		fprintf(stderr, "sheepfs: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(fp, "%d\n", (int)getpid());
	return fclose(fp);
}

static struct fuse *mount_fs(const struct sfs_opts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char opt[64];
	struct fuse *f;

	fuse_opt_add_arg(&args, "sheepfs");
	snprintf(opt, sizeof(opt), "max_read=%u,fsname=sheepfs,"
		 "subtype=sheepfs", IO_MAX);
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, opt);
	for (int i = 0; i < o->nr_fuse_opts; i++) {
		fuse_opt_add_arg(&args, "-o");
		fuse_opt_add_arg(&args, o->fuse_opts[i]);
	}
	if (o->debug)
		fuse_opt_add_arg(&args, "-d");
	f = fuse_new(&args, &sfs_ops, sizeof(sfs_ops), NULL);
	fuse_opt_free_args(&args);
	if (!f)
		return NULL;
	if (fuse_mount(f, o->mountpoint)) {
		fuse_destroy(f);
		return NULL;
	}
	return f;
}

static int run(struct fuse *f)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int ret;

	fuse_loop_cfg_set_max_threads(cfg, 16);
	fuse_loop_cfg_set_idle_threads(cfg, 4);
	ret = fuse_loop_mt(f, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

int main(int argc, char **argv)
{
	struct sfs_opts o = { 0 };
	struct fuse *f;
	int ret = 1;

	tzset();
	if (parse_args(argc, argv, &o)) {
		ret = EXIT_USAGE;
		goto out;
	}
	if (log_open(o.log, o.debug ? LOG_L_DEBUG : LOG_L_INFO,
		     o.foreground && !o.log)) {
		fprintf(stderr, "sheepfs: %s: %s\n", o.log, strerror(errno));
		goto out;
	}
	if (!o.foreground)
		daemon_fork();
	if (conn_probe()) {
		fprintf(stderr, "sheepfs: no sheep answers\n");
		goto out;
	}
	vdi_init();
	mount_time = time(NULL);
	f = mount_fs(&o);
	if (!f)
		goto out;
	session = fuse_get_session(f);
	conn_set_exit_check(session_exited);
	if (fuse_set_signal_handlers(session) ||
	    (o.pidfile && write_pidfile(o.pidfile)))
		goto out_unmount;
	sd_notice("mounted %s (%d sheep address(es), timeout %d s)",
		  o.mountpoint, conn_nr_addrs(), o.timeout);
	daemon_ready();
	ret = run(f) < 0 ? 1 : 0;
	fuse_remove_signal_handlers(session);
	sd_notice("unmounting %s", o.mountpoint);
	if (o.pidfile)
		unlink(o.pidfile);
out_unmount:
	fuse_unmount(f);
	fuse_destroy(f);
out:
	conn_cleanup();
	vdi_cleanup();
	free_opts(&o);
	return ret;
}
