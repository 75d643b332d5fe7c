// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sheep: options, start-up, daemonisation and shutdown.  The parent of a
 * daemonising sheep waits until the child listens (or fails) and exits
 * with the matching status, so scripts can rely on "sheep returned 0".
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include "proto.h"
#include "util.h"
#include "core/auth.h"
#include "core/core.h"
#include "core/request.h"
#include "front/access.h"
#include "front/front.h"
#include "front/slots.h"
#include "net.h"
#include "front/metrics.h"
#include "front/nbd.h"
#include "front/s3.h"
#include "group/group.h"
#include "gw/gw.h"
#include "gw/ec_gateway.h"
#include "net/peer.h"
#include "ops/ops.h"
#include "recovery/recovery.h"
#include "recovery/sweep.h"
#include "state/cluster.h"
#include "state/epoch.h"
#include "state/vdi.h"
#include "ops/md.h"
#include "store/store.h"
#include "vdi/reclaim.h"
#include "vdi/recycle.h"

static const char *pidfile;
static int ready_fd = -1;
static int lock_fd = -1;

enum { OPT_NBD = 256, OPT_ADMIN_FROM, OPT_CLUSTER_KEY, OPT_BUDGET, OPT_HTTP,
       OPT_RDMA, OPT_S3, OPT_S3_DOMAIN,
       OPT_S3_GRACE };

static const struct option long_opts[] = {
	{ "bindaddr", required_argument, NULL, 'b' },
	{ "cluster", required_argument, NULL, 'c' },
	{ "foreground", no_argument, NULL, 'f' },
	{ "gateway", no_argument, NULL, 'g' },
	{ "help", no_argument, NULL, 'h' },
	{ "log", required_argument, NULL, 'l' },
	{ "nosync", no_argument, NULL, 'n' },
	{ "port", required_argument, NULL, 'p' },
	{ "pidfile", required_argument, NULL, 'P' },
	{ "recovery", required_argument, NULL, 'R' },
	{ "version", no_argument, NULL, 'v' },
	{ "myaddr", required_argument, NULL, 'y' },
	{ "zone", required_argument, NULL, 'z' },
	{ "nbd", required_argument, NULL, OPT_NBD },
	{ "admin-from", required_argument, NULL, OPT_ADMIN_FROM },
	{ "cluster-key", required_argument, NULL, OPT_CLUSTER_KEY },
	{ "budget", required_argument, NULL, OPT_BUDGET },
	{ "directio", no_argument, NULL, 'D' },
	{ "ioaddr", required_argument, NULL, 'i' },
	{ "journal", required_argument, NULL, 'j' },
	{ "upgrade", no_argument, NULL, 'u' },
	{ "vnodes", required_argument, NULL, 'V' },
	{ "wq-threads", required_argument, NULL, 'w' },
	{ "wildcard-recovery", no_argument, NULL, 'W' },
	{ "max-dynamic-threads", required_argument, NULL, 'x' },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "s3", required_argument, NULL, OPT_S3 },
	{ "s3-domain", required_argument, NULL, OPT_S3_DOMAIN },
	{ "s3-grace", required_argument, NULL, OPT_S3_GRACE },
	{ "rdma", required_argument, NULL, OPT_RDMA },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sheep [OPTION]... [BASE_DIR[,DISK_DIR...]]\n"
"Kelpie storage daemon (Sheepdog compatible).\n\n"
"      --admin-from CIDR[,CIDR...]  serve admin requests (format, shutdown,\n"
"                         kill, copies, recovery control, log level) only\n"
"                         to these networks and local clients (default:\n"
"                         everybody)\n"
"  -b, --bindaddr ADDR    listen on ADDR (default: all addresses)\n"
"      --budget MB        payload bytes requests may hold (default 512,\n"
"                         at least 256): clients 3/4, sheep-to-sheep 1/4,\n"
"                         one connection 1/4\n"
"  -c, --cluster DRIVER   cluster driver: local[:PATH] (default local),\n"
"                         corosync[:GROUP], or zookeeper:HOST:PORT\n"
"                         [,HOST:PORT...][/CLUSTER][,timeout=SECONDS]\n"
"      --cluster-key FILE sheep-to-sheep requests only from members that\n"
"                         prove this key (16 to 4095 bytes; the same file\n"
"                         on every node)\n"
"  -f, --foreground       do not daemonise; log to stderr too\n"
"  -g, --gateway          gateway only: store no objects\n"
"  -h, --help             this help\n"
"      --http [ADDR:]PORT serve /metrics (Prometheus) and /health over\n"
"                         HTTP on PORT; ADDR defaults to --bindaddr's\n"
"  -j, --journal size=SIZE[,dir=DIR]  journal synchronous writes in\n"
"                         DIR/journal (default BASE_DIR), SIZE at least\n"
"                         1M: one sync for many concurrent writes\n"
"  -l, --log level=L,dir=DIR,dst=D,format=F  log level: emerg, alert,\n"
"                         crit, err, warning, notice, info (default),\n"
"                         debug or 0-7; directory of sheep.log (default\n"
"                         BASE_DIR); dst: default (the file), stdout\n"
"                         (with -f) or syslog; format: default or json\n"
"      --nbd [ADDR:]PORT  export VDIs over NBD on PORT (usually 10809);\n"
"                         ADDR defaults to the --bindaddr address\n"
"  -n, --nosync           do not sync writes (tests, benchmarks)\n"
"  -p, --port PORT        TCP port (default 7000)\n"
"  -P, --pidfile FILE     write the daemon's PID to FILE\n"
"      --s3 [ADDR:]PORT   serve object storage (S3, and Swift under /v1/)\n"
"                         on PORT; ADDR defaults to --bindaddr's; users\n"
"                         come from dog s3 user create\n"
"      --s3-domain NAME   also take a Host of BUCKET.NAME as the bucket\n"
"                         (virtual-host style); the same on every gateway\n"
"      --s3-grace SECONDS how long room no object names any more is kept\n"
"                         before it is reclaimed (default 60, 1-86400)\n"
"  -u, --upgrade          accepted: an older store is always upgraded at\n"
"                         start-up\n"
"  -w, --wq-threads io=N  threads of store I/O (default 8, at most 64)\n"
"  -W, --wildcard-recovery  accepted: recovery always asks every node\n"
"                         once the previous owners have no copy\n"
"  -V, --vnodes N         a fixed number of vnodes (1-65535) instead of\n"
"                         capacity-weighted ones; the cluster is then\n"
"                         formatted with dog cluster format -V\n"
"  -D, --directio         data objects' data through O_DIRECT, past the\n"
"                         page cache (for real disks; sync as without)\n"
"  -i, -r, -x (Sheepdog) are refused with the reason\n"
"      --rdma ADDR[:PORT]  sheep-to-sheep traffic over RDMA (RC) on\n"
"                         ADDR (default PORT: the -p port) with every\n"
"                         node that has one too; TCP with the others\n"
"  -R, --recovery max=N,interval=MS[,adaptive]  recover at most N\n"
"                         objects per MS milliseconds (default:\n"
"                         unthrottled); adaptive: only while clients do\n"
"                         I/O on this node (one request in the last MS)\n"
"  -v, --version          print the version\n"
"  -y, --myaddr ADDR      address advertised to the cluster\n"
"  -z, --zone N           failure zone (default: from the address; the\n"
"                         local driver gives every node its own zone)\n"
"BASE_DIR defaults to /tmp.  With DISK_DIRs (multi-disk), the objects\n"
"are spread over DISK_DIR/obj of each, not kept in BASE_DIR/obj.\n");
}

/*
 * Options of Sheepdog's sheep that Kelpie does not implement: refused
 * with the reason, never accepted and ignored.
 */
static const char *refused_option(int c)
{
	switch (c) {
	case 'i':
		return "-i (a separate data address) is not supported: sheep "
		       "talk to each other on -b/-y's address";
	case 'r':
		return "-r (Sheepdog's HTTP object service, Swift) is not "
		       "supported: --s3 serves objects over S3, --http serves "
		       "metrics";
	default:
		return "-x (dynamic thread pools) is not supported: the pools "
		       "are fixed (-w io=N)";
	}
}

/* -w io=N: the I/O pool; Sheepdog's other pools do not exist here */
static int parse_wq_opts(char *arg)
{
	char *tok, *save = NULL, *end;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		long n;

		if (strncmp(tok, "io=", 3)) {
			fprintf(stderr, "-w %s is not supported: only io=N "
				"(1-%d threads of store I/O) is\n", tok,
				SD_MAX_IO_THREADS);
			return -1;
		}
		n = strtol(tok + 3, &end, 10);
		if (*end || n < 1 || n > SD_MAX_IO_THREADS) {
			fprintf(stderr, "invalid -w %s: io=1 to io=%d\n", tok,
				SD_MAX_IO_THREADS);
			return -1;
		}
		sys.io_threads = (int)n;
	}
	return 0;
}

/* -j size=SIZE[,dir=DIR] */
static struct {
	uint64_t size;
	char *dir;
} journal;

static int parse_journal_opts(char *arg)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "size=", 5)) {
			if (parse_size(tok + 5, &journal.size) ||
			    journal.size < (1 << 20)) {
				fprintf(stderr, "invalid -j %s: at least "
					"1M\n", tok);
				return -1;
			}
		} else if (!strncmp(tok, "dir=", 4) && tok[4]) {
			journal.dir = tok + 4;
		} else if (!strcmp(tok, "skip")) {
			fprintf(stderr, "-j skip (start without replaying "
				"the journal) is not supported: acknowledged "
				"writes would be lost\n");
			return -1;
		} else {
			fprintf(stderr, "-j %s is not supported: size=SIZE"
				"[,dir=DIR]\n", tok);
			return -1;
		}
	}
	if (!journal.size) {
		fprintf(stderr, "-j needs size=SIZE\n");
		return -1;
	}
	return 0;
}

/* -j with -n or -g: nothing to journal; -V with -g: nothing to place */
static int check_option_pairs(void)
{
	if (journal.size && sys.nosync) {
		fprintf(stderr, "-j with -n: the store does not sync, there "
			"is nothing to journal\n");
		return -1;
	}
	if (journal.size && sys.gateway) {
		fprintf(stderr, "-j with -g: a gateway stores nothing\n");
		return -1;
	}
	if (store_direct() && sys.gateway) {
		fprintf(stderr, "-D with -g: a gateway stores nothing\n");
		return -1;
	}
	if (sys.fixed_vnodes && sys.gateway) {
		fprintf(stderr, "-V with -g: a gateway has no vnodes\n");
		return -1;
	}
	if (strcmp(s3_domain(), "-") && !s3_enabled()) {
		fprintf(stderr, "--s3-domain without --s3: there is no S3 "
			"endpoint to take it\n");
		return -1;
	}
	if (s3_grace_given() && !s3_enabled()) {
		fprintf(stderr, "--s3-grace without --s3: there is no S3 "
			"endpoint to take it\n");
		return -1;
	}
	return 0;
}

static int parse_recovery_opts(const char *opts)
{
	struct recovery_throttling t = { 0 };
	char *arg = xstrdup(opts), *tok, *save = NULL;
	bool adaptive = false;
	int ret = -1;
	uint64_t v;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		/* range-checked before the cast: max=4294967297 is not 1 */
		if (!strncmp(tok, "max=", 4)) {
			if (parse_u64_range(tok + 4, UINT32_MAX, &v))
				goto out;
			t.max_exec_count = (uint32_t)v;
		} else if (!strncmp(tok, "interval=", 9)) {
			if (parse_u64_range(tok + 9, INT64_MAX, &v))
				goto out;
			t.queue_work_interval = v;
		} else if (!strcmp(tok, "adaptive")) {
			adaptive = true;
		} else {
			goto out;
		}
	}
	if (!t.max_exec_count != !t.queue_work_interval)
		goto out;
	/* adaptive to what: with no throttle it would mean nothing */
	if (adaptive && !t.max_exec_count)
		goto out;
	recovery_set_throttle(&t);
	recovery_set_throttle_adaptive(adaptive);
	ret = 0;
out:
	free(arg);
	return ret;
}

struct log_opts {
	int level;
	char *dir;
	enum log_dst dst;
	enum log_fmt fmt;
};

/* -l level=NAME|N,dir=DIR,dst=default|stdout|syslog,format=default|json */
static int parse_log_opts(char *arg, struct log_opts *o)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "level=", 6)) {
			o->level = log_level_parse(tok + 6);
			if (o->level < 0)
				goto bad;
		} else if (!strncmp(tok, "dir=", 4)) {
			o->dir = tok + 4;
		} else if (!strcmp(tok, "dst=default") ||
			   !strcmp(tok, "dst=file")) {
			o->dst = LOG_DST_FILE;
		} else if (!strcmp(tok, "dst=stdout")) {
			o->dst = LOG_DST_STDOUT;
		} else if (!strcmp(tok, "dst=syslog")) {
			o->dst = LOG_DST_SYSLOG;
		} else if (!strcmp(tok, "format=default")) {
			o->fmt = LOG_FMT_DEFAULT;
		} else if (!strcmp(tok, "format=json")) {
			o->fmt = LOG_FMT_JSON;
		} else {
			goto bad;
		}
	}
	return 0;
bad:
	fprintf(stderr, "invalid log option '%s': use level=NAME|0-7 "
		"(emerg, alert, crit, err, warning, notice, info, debug), "
		"dir=DIR, dst=default|stdout|syslog, format=default|json\n",
		tok);
	return -1;
}

static void signal_handler(int fd, uint32_t events, void *data)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		if (log_reopen())
			sd_err("cannot reopen the log: %m");
		else
			sd_notice("log reopened (SIGHUP)");
		return;
	}
	sd_notice("signal %u: stopping", si.ssi_signo);
	group_leave();
	sheep_exit(0);
}

static void handled_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
}

/*
 * Before any thread starts: every thread inherits the mask, so these
 * signals reach the signalfd only (a thread that left one unblocked
 * would take it and die of its default action, without leaving).
 */
/* every node finished a recovery: what deleted VDIs left can go */
static void cluster_settled(void)
{
	vdi_reclaim_kick();
	recycle_sweep();
}

static void block_signals(void)
{
	sigset_t mask;

	signal(SIGPIPE, SIG_IGN);
	handled_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
}

static int setup_signals(void)
{
	sigset_t mask;
	int fd;

	handled_signals(&mask);
	fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -1;
	return event_add(sys.loop, fd, EPOLLIN, signal_handler, NULL);
}

/*
 * The parent of a daemonising sheep: copy what the child says on the
 * start-up pipe (its errors, as lines) to stderr, until the status byte (0
 * serving, 1 failed) or the end of the pipe (the child died: failed).
 */
static int startup_wait(int fd, const char *logpath)
{
	char buf[4096];
	bool said = false;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == 0 || buf[i] == 1) {
				if (xwrite(STDERR_FILENO, buf, (size_t)i) < 0)
					return 1;
				return buf[i];
			}
		if (xwrite(STDERR_FILENO, buf, (size_t)n) < 0)
			return 1;
		said = true;
	}
	if (said)
		fprintf(stderr, "sheep: the daemon stopped during start-up; "
			"the log: %s\n", logpath);
	else
		fprintf(stderr, "sheep: the daemon ended during start-up "
			"without saying why; see %s\n", logpath);
	return 1;
}

/* fork; the parent exits with the status the child reports */
static void daemonize(const char *logpath)
{
	int pfd[2];
	pid_t pid;

	if (pipe(pfd)) {
		perror("sheep: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("sheep: fork");
		exit(1);
	}
	if (pid) {
		close(pfd[1]);
		_exit(startup_wait(pfd[0], logpath));
	}
	close(pfd[0]);
	ready_fd = pfd[1];
	log_set_startup_fd(ready_fd);
	setsid();
	if (chdir("/"))
		exit(1);
	int nul = open("/dev/null", O_RDWR);

	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (nul > 2)
			close(nul);
	}
}

/* tell the parent: 0 serving, 1 failed (after the errors that say why) */
static void report_ready(char st)
{
	if (ready_fd < 0)
		return;
	log_set_startup_fd(-1);
	if (write(ready_fd, &st, 1) != 1)
		sd_err("cannot report start-up status");
	close(ready_fd);
	ready_fd = -1;
}

static int write_pidfile(void)
{
	char buf[32];
	int fd, n;

	if (!pidfile)
		return 0;
	sheep_set_pidfile(pidfile);
	fd = open(pidfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%d\n", getpid());
	if (xwrite(fd, buf, (size_t)n) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * An error before the log is open: on stderr, or (a daemon) through the
 * start-up pipe to the terminal that started sheep
 */
static void early_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (ready_fd >= 0) {
		dprintf(ready_fd, "sheep: ");
		vdprintf(ready_fd, fmt, ap);
		dprintf(ready_fd, "\n");
	} else {
		fprintf(stderr, "sheep: ");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

/*
 * One daemon per store: an exclusive flock on BASE/lock (store/lock.c),
 * taken by the daemon itself after it daemonised and held until it ends;
 * the file names its PID, for the message of the next sheep.
 */
static int lock_base(void)
{
	char path[4200], holder[32];

	snprintf(path, sizeof(path), "%s/lock", sys.base);
	lock_fd = store_lock_take(path, holder, sizeof(holder));
	if (lock_fd >= 0)
		return 0;
	if (lock_fd == -EWOULDBLOCK)
		early_err("the store %s is in use by another sheep (pid %s): "
			  "one store serves one daemon; stop that sheep "
			  "first, or give another directory", sys.base,
			  holder);
	else
		early_err("cannot lock the store %s: %s", path,
			  strerror(-lock_fd));
	return -1;
}

/* the disks of BASE,DIR1,DIR2... (absolute), "" for BASE/obj alone */
static char disk_list[MD_MAX_DISKS * (PATH_MAX + 1)];

/* an absolute path for @dir, a directory, made if it does not exist */
static int abs_dir(const char *dir, char *out)
{
	struct stat st;

	if (!realpath(dir, out) && (mkdir_p(dir) || !realpath(dir, out))) {
		fprintf(stderr, "sheep: cannot use %s as a store directory: "
			"%m\n", dir);
		return -1;
	}
	if (stat(out, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "sheep: %s is not a directory: give the "
			"directory the store lives in\n", dir);
		return -1;
	}
	return 0;
}

/* BASE[,DIR...] (cluster.md §2.5): BASE keeps the node's own files */
static int parse_dirs(const char *arg)
{
	char *copy = xstrdup(arg), *comma = strchr(copy, ','), *tok, *save;
	char path[PATH_MAX];
	int n = 0, ret = -1;

	if (comma)
		*comma = 0;
	if (abs_dir(copy, sys.base))
		goto out;
	disk_list[0] = 0;
	for (tok = comma ? strtok_r(comma + 1, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (++n > MD_MAX_DISKS) {
			fprintf(stderr, "at most %d disks\n", MD_MAX_DISKS);
			goto out;
		}
		if (abs_dir(tok, path))
			goto out;
		if (disk_list[0])
			strcat(disk_list, ",");
		strcat(disk_list, path);
	}
	if (comma && !n) {
		fprintf(stderr, "'%s': no disk after the ','\n", arg);
		goto out;
	}
	if (n && sys.gateway) {
		fprintf(stderr, "a gateway (-g) stores no objects: give no "
			"disks\n");
		goto out;
	}
	ret = 0;
out:
	free(copy);
	return ret;
}

static int init_self(const char *myaddr, long zone, bool local)
{
	struct sd_node *n = &sys.self;
	uint64_t size, free_bytes;

	if (str_to_addr(myaddr ? myaddr : "127.0.0.1", n->nid.addr)) {
		fprintf(stderr, "invalid address '%s'\n", myaddr);
		return -1;
	}
	if (!myaddr && !local)
		sd_warn("advertising 127.0.0.1: sheep on other hosts cannot "
			"reach this one (give -y ADDR)");
	n->nid.port = (uint16_t)sys.port;
	if (sys.gateway)
		n->nr_vnodes = 0;
	else if (sys.fixed_vnodes)
		n->nr_vnodes = (uint16_t)sys.fixed_vnodes;
	else
		n->nr_vnodes = SD_DEFAULT_VNODES;	/* until weighted */
	if (zone >= 0)
		n->zone = (uint32_t)zone;
	else if (local)
		n->zone = (uint32_t)sys.port;
	else
		n->zone = get_le32(n->nid.addr + 12);
	/*
	 * The capacity that weighs the vnodes: the size of the store's file
	 * system (Sheepdog takes its free space at first start, so nodes
	 * sharing one file system differ by what was written between their
	 * starts, and every membership change then moves data among them)
	 */
	if (!sys.gateway && !n->space &&
	    store_stat(&size, &free_bytes) == SD_RES_SUCCESS)
		n->space = size;
	if (sys.gateway)
		n->space = 0;
	return 0;
}

/*
 * --rdma ADDR[:PORT] into the node's io_addr/io_port (the fields Sheepdog
 * kept for a separate data address); IPv6 as [ADDR]:PORT
 */
static int parse_rdma(const char *spec, struct node_id *nid)
{
	char host[64];
	const char *colon = strrchr(spec, ':'), *end = spec + strlen(spec);
	long port = sys.port;
	char *e;

	if (colon && (spec[0] == '[' ? colon > strchr(spec, ']') :
				       colon == strchr(spec, ':'))) {
		port = strtol(colon + 1, &e, 10);
		if (*e || port <= 0 || port > 65535)
			return -1;
		end = colon;
	}
	if (spec[0] == '[') {
		if (end - spec < 2 || end[-1] != ']')
			return -1;
		spec++;
		end--;
	}
	if ((size_t)(end - spec) >= sizeof(host))
		return -1;
	memcpy(host, spec, (size_t)(end - spec));
	host[end - spec] = 0;
	if (str_to_addr(host, nid->io_addr))
		return -1;
	nid->io_port = (uint16_t)port;
	return 0;
}

/*
 * The start-up ends when the cluster accepted this node (a refusal ends
 * the daemon, and the parent prints why); a join that waits for others
 * (corosync quorum, ZooKeeper) ends it after JOIN_WAIT_MS, saying so.
 */
#define JOIN_WAIT_MS	5000
static struct timer join_wait;

static void on_joined(void)
{
	timer_del(&join_wait);
	report_ready(0);
}

static void join_slow(struct timer *t)
{
	if (ready_fd < 0)
		return;
	dprintf(ready_fd, "sheep: serving on port %d; its join to the cluster "
		"is still waiting (see the log)\n", sys.port);
	report_ready(0);
}

/*
 * The descriptor limit: the soft one raised to the hard one (a flood of
 * connections then meets the client slots' refusal, front/slots.c, long
 * before the table is empty), said in the log; the public client slots
 * follow from it, and one descriptor is kept for accept to refuse with
 */
static void raise_nofile(void)
{
	struct rlimit rl;
	rlim_t was;

	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		sd_warn("cannot read the file descriptor limit: %m");
		slots_init(1024);
		return;
	}
	was = rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl)) {
			sd_warn("cannot raise the file descriptor limit from "
				"%lu to %lu: %m", (unsigned long)was,
				(unsigned long)rl.rlim_max);
			rl.rlim_cur = was;
		}
	}
	if (rl.rlim_cur != was)
		sd_notice("file descriptors: the soft limit raised from %lu to "
			  "the hard limit, %lu", (unsigned long)was,
			  (unsigned long)rl.rlim_cur);
	else
		sd_notice("file descriptors: at most %lu (the hard limit is "
			  "%lu)", (unsigned long)rl.rlim_cur,
			  (unsigned long)rl.rlim_max);
	slots_init((uint64_t)rl.rlim_cur);
	net_reserve_fd();
}

/* what the lower layers call up through (design.md §2) */
static const struct group_hooks group_hooks = {
	.op_lookup = get_sd_op,
	.stop_listening = listen_stop,
	.joined = on_joined,
};

static const struct ops_metrics_hooks metrics_hooks = {
	.count = metrics_count_objects,
	.text = metrics_text,
};

int main(int argc, char **argv)
{
	const char *driver = "local", *bindaddr = NULL, *myaddr = NULL;
	const char *rdma = NULL;
	struct log_opts lo = { .level = LOG_L_INFO };
	char logpath[4200], sock[4200];
	int c;
	bool foreground = false;
	long zone = -1;

	sys.port = SD_LISTEN_PORT;
	while ((c = getopt_long(argc, argv, "b:c:fghl:np:P:R:vy:z:Di:j:r:uV:w:Wx:",
				long_opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'b': bindaddr = optarg; break;
		case 'c': driver = optarg; break;
		case 'f': foreground = true; break;
		case 'g': sys.gateway = true; break;
		case 'h': usage(stdout); return 0;
		case 'l':
			if (parse_log_opts(optarg, &lo))
				return 1;
			break;
		case 'n': sys.nosync = true; break;
		case OPT_ADMIN_FROM:
			if (access_set_admin_from(optarg)) {
				fprintf(stderr, "invalid --admin-from '%s'\n",
					optarg);
				return 1;
			}
			break;
		case OPT_BUDGET: {
			long mb = strtol(optarg, &end, 10);

			if (*end || mb < SD_MIN_BUDGET_MB ||
			    mb > SD_MAX_BUDGET_MB) {
				fprintf(stderr, "invalid --budget '%s': %d to "
					"%d MB\n", optarg, SD_MIN_BUDGET_MB,
					SD_MAX_BUDGET_MB);
				return 1;
			}
			budget_set_limit((uint64_t)mb << 20);
			break;
		}
		case OPT_CLUSTER_KEY:
			if (auth_load_key(optarg))
				return 1;
			break;
		case OPT_HTTP:
			if (strchr(optarg, '=')) {
				/* Sheepdog's --http host=,port=: Swift */
				fprintf(stderr, "%s\n", refused_option('r'));
				return 1;
			}
			if (http_configure(optarg)) {
				fprintf(stderr, "invalid --http '%s'\n", optarg);
				return 1;
			}
			break;
		case OPT_S3:
			if (s3_configure(optarg)) {
				fprintf(stderr, "invalid --s3 '%s'\n", optarg);
				return 1;
			}
			break;
		case OPT_S3_DOMAIN:
			if (s3_set_domain(optarg)) {
				fprintf(stderr, "invalid --s3-domain '%s': a "
					"domain name (letters, digits, dots, "
					"dashes)\n", optarg);
				return 1;
			}
			break;
		case OPT_S3_GRACE:
			if (s3_set_grace(optarg)) {
				fprintf(stderr, "invalid --s3-grace '%s': "
					"seconds, 1-86400\n", optarg);
				return 1;
			}
			break;
		case OPT_RDMA:
			rdma = optarg;
			break;
		case OPT_NBD:
			if (nbd_configure(optarg)) {
				fprintf(stderr, "invalid --nbd '%s'\n", optarg);
				return 1;
			}
			break;
		case 'p': {
			/* range-checked before the cast: 2^32 + 1 is not 1 */
			long port = strtol(optarg, &end, 10);

			if (!*optarg || *end || port < 1 || port > 65535) {
				fprintf(stderr, "Invalid port number '%s': must "
					"be an integer between 1 and 65535\n",
					optarg);
				return 1;
			}
			sys.port = (int)port;
			break;
		}
		case 'P': pidfile = optarg; break;
		case 'R':
			if (parse_recovery_opts(optarg)) {
				fprintf(stderr, "invalid -R '%s': max=N (0 to "
					"4294967295) and interval=MS (0 to "
					"9223372036854775807), both 0 or "
					"neither, and adaptive only with "
					"both\n", optarg);
				return 1;
			}
			break;
		case 'v':
			printf("Kelpie sheep daemon version %s\n",
			       KELPIE_VERSION);
			return 0;
		case 'y': myaddr = optarg; break;
		case 'u':
		case 'W':
			break;	/* what they ask is always done: see usage */
		case 'w':
			if (parse_wq_opts(optarg))
				return 1;
			break;
		case 'j':
			if (parse_journal_opts(optarg))
				return 1;
			break;
		case 'V': {
			uint64_t v;

			/* the original's words (dog.md §3.8) */
			if (parse_u64_range(optarg, UINT16_MAX, &v) || !v) {
				fprintf(stderr, "Invalid number of vnodes '%s': "
					"must be an integer between 1 and "
					"65535\n", optarg);
				return 1;
			}
			sys.fixed_vnodes = (long)v;
			break;
		}
		case 'D': store_set_direct(true); break;
		case 'i': case 'r': case 'x':
			fprintf(stderr, "%s\n", refused_option(c));
			return 1;
		case 'z':
			zone = strtol(optarg, &end, 10);
			if (!*optarg || *end || zone < 0 ||
			    zone > 0xffffffffL) {
				fprintf(stderr, "Invalid zone id '%s': must be an "
					"integer between 0 and 4294967295\n",
					optarg);
				return 1;
			}
			break;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind < argc - 1) {
		usage(stderr);
		return 1;
	}
	if (check_option_pairs())
		return 1;
	if (parse_dirs(optind < argc ? argv[optind] : "/tmp"))
		return 1;
	if (lo.dst == LOG_DST_SYSLOG && lo.fmt == LOG_FMT_JSON) {
		fprintf(stderr, "-l format=json is for the log file and "
			"stdout; syslog takes plain lines\n");
		return 1;
	}
	if (lo.dst == LOG_DST_STDOUT && !foreground) {
		fprintf(stderr, "-l dst=stdout needs -f: a daemon has no "
			"stdout\n");
		return 1;
	}
	snprintf(logpath, sizeof(logpath), "%s/sheep.log",
		 lo.dir ? lo.dir : sys.base);
	/*
	 * The daemon itself takes the store's lock (so that /proc/locks and
	 * the lock file name its PID), before it opens the store's log: a
	 * sheep refused a store in use never writes into its log
	 */
	if (!foreground)
		daemonize(logpath);
	if (lock_base())
		goto early_fail;
	store_lock_note_pid(lock_fd);
	if (log_setup(lo.dst, lo.fmt, logpath, lo.level, foreground)) {
		early_err("cannot open the log %s: %m", logpath);
		goto early_fail;
	}
	block_signals();
	rcu_register_thread();
	/*
	 * Object-sized buffers come and go per request: keep them in the
	 * heap instead of mmap/munmap (and page faults) every time.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	sd_notice("Kelpie sheep %s starting in %s, port %d", KELPIE_VERSION,
		  sys.base, sys.port);
	sys.loop = event_loop_create();
	sys.io_wq = wq_create("io", sys.io_threads ? sys.io_threads :
			      SD_IO_THREADS, SD_IO_QUEUE, sys.loop);
	request_set_dispatch(queue_request);
	recovery_set_strip_rebuild(gw_ec_rebuild);
	recovery_set_strip_rebuild_anywhere(gw_ec_rebuild_anywhere);
	flush_init();
	vdi_init_bitmaps();
	refcount_init();
	vdi_reclaim_init();
	recovery_set_settled(cluster_settled);
	/* the store's layout (plain or tree) is the formatted cluster's */
	if (config_load())
		goto fail;
	if (!sys.gateway && cstate->store[0] &&
	    store_set_layout(cstate->store) != SD_RES_SUCCESS) {
		sd_err("%s/config names the store \"%s\", which this sheep "
		       "does not have", sys.base, cstate->store);
		goto fail;
	}
	if (!sys.gateway && store_init_disks(sys.base, disk_list, sys.nosync))
		goto fail;
	if (journal.size &&
	    store_journal_init(journal.dir ? journal.dir : sys.base,
			       journal.size))
		goto fail;
	if (init_self(myaddr, zone, !strncmp(driver, "local", 5)))
		goto fail;
	if (rdma && parse_rdma(rdma, &sys.self.nid)) {
		sd_err("invalid --rdma '%s' (ADDR[:PORT])", rdma);
		goto fail;
	}
	/* free markers the scan finds: their old objects go */
	recycle_init();
	vdi_scan_local();
	snprintf(sock, sizeof(sock), "%s/sock", sys.base);
	raise_nofile();
	if (setup_signals() || listen_init(bindaddr, sys.port, sock))
		goto fail;
	if (rdma && listen_rdma(sys.self.nid.io_addr, sys.self.nid.io_port))
		goto fail;
	if (nbd_init(bindaddr))
		goto fail;
	peer_init();
	md_watch_start();
	ops_set_metrics_hooks(&metrics_hooks);
	if (group_init(driver, &group_hooks))
		goto fail;
	if (http_init(bindaddr) || s3_init(bindaddr))
		goto fail;
	if (write_pidfile())
		goto fail;
	if (ready_fd >= 0) {
		join_wait.fn = join_slow;
		timer_add(sys.loop, &join_wait, JOIN_WAIT_MS);
	}
	group_join();
	if (!sys.gateway)
		stale_sweep_start();
	event_loop_run(sys.loop);
	sheep_exit(0);
fail:
	sd_err("start-up failed (the log: %s)", logpath);
early_fail:
	/*
	 * nothing was served: let go of the store and the port before the
	 * parent exits, so that a start retried at once finds neither held
	 * (the port was, now and then, while this process ended: a corosync
	 * node refused for its -V, started again with the right one)
	 */
	listen_stop();
	if (lock_fd >= 0)
		close(lock_fd);
	report_ready(1);
	return 1;
}
