// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A stand-alone member of a "local" driver cluster, for
 * tests/unit/local_driver.sh.  It defines the five daemon callbacks itself,
 * so it is built by hand from sheep/group/local.c and lib/, not by make.
 *
 * Every totally ordered event goes to OUT as one line:
 *
 *   ACCEPT <port> [<member ports>] <opaque>[ +]  (+: joins decided
 *                together, another ACCEPT follows: one epoch)
 *   LEAVE <port> [<member ports>]
 *   NOTIFY <sender port> <message>
 *
 * Lines that only this process sees start with '#'.  "#BUG" and
 * "#VIOLATION" lines are failures.
 *
 *   -p PATH -n PORT -o OUT   cluster directory, own port, output file
 *   -t MS        lifetime; then leave() and exit (SIGTERM does so earlier)
 *   -l NR        the lifetime starts once NR members are seen, not at
 *                join(): a scenario that needs every member to meet does
 *                not depend on how fast a loaded machine forms the cluster
 *   -w NR -W MS  start the work once NR members are seen, MS later
 *   -N COUNT     send COUNT notifies "n PORT I", one every 2 ms
 *   -E           on own "n PORT I" with I % 10 == 0, notify "e PORT I"
 *                from inside the notify handler
 *   -K           on own "n PORT I" with I % 10 == 5, block() from inside
 *                the notify handler
 *   -B COUNT     queue COUNT blocks at once; a granted block notifies
 *                "g PORT K", is held -H MS (-1: unblocked inside the
 *                block handler) and unblocked with "u PORT K"
 *   -C FILE      flock FILE while holding a block: a second holder
 *                anywhere prints #VIOLATION
 *   -D PORT      SIGKILL ourselves when asked to decide PORT's join
 *   -S MS        sleep MS in the join handler for other nodes' joins
 *   -P MS        the same for the first other node's join only
 *   -F MS        sleep MS in the join handler for our own join (founding
 *                a cluster), so that concurrent founders collide
 *   -T MS        call join() at this CLOCK_REALTIME millisecond, so that
 *                several processes join at the same moment
 *   -G FILE      once connected, print #READY and call join() only when
 *                FILE exists: joins the test wants together come
 *                together however long each start took
 *   -X MS        on judging the second joiner of a run, let the cluster's
 *                log grow by one record at most (RLIMIT_FSIZE) for MS ms:
 *                a disk that fills in the middle of a run's append
 *   -Y MS        the same on SIGUSR1 (within 50 ms): a disk that fills
 *                while the prober appends a run of LEAVEs
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "group/driver.h"
#include "event.h"
#include "hash.h"
#include "util.h"

static struct {
	const char *path;
	const char *check_path;
	int port;
	int out;
	int lifetime_ms;
	int life_after_nr;
	int wait_nr;
	int work_delay_ms;
	int nr_notify;
	bool echo;
	int nr_block;
	int hold_ms;
	int die_on_join_of;
	int slow_join_ms;
	int slow_first_ms;
	int slow_found_ms;
	bool block_from_notify;
	long long join_at_ms;
	const char *go_path;
	int full_ms;
	int fill_on_usr1_ms;
} opt = {
	.lifetime_ms = 3000,
	.hold_ms = 20,
	.die_on_join_of = -1,
};

static struct event_loop *loop;
static struct sd_node me;
static bool started_work, started_life, exiting;
static int sent_notify, granted, check_fd = -1;
static volatile sig_atomic_t got_term, got_usr1;
static struct timer life_timer, work_timer, hold_timer, stop_timer,
		    term_timer, delay_timer, full_timer;
static size_t nr_known;		/* members at our last ACCEPT or LEAVE */

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void out(const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* one write per line: nothing is lost when we are SIGKILLed */
	if (write(opt.out, buf, (size_t)n) != n)
		abort();
}

static char *ports(const struct sd_node *n, size_t nr, char *buf, size_t len)
{
	size_t o = 0;

	o += (size_t)snprintf(buf + o, len - o, "[");
	for (size_t i = 0; i < nr && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%u", i ? "," : "",
				      n[i].nid.port);
	if (o < len)
		snprintf(buf + o, len - o, "]");
	return buf;
}

static bool sorted(const struct sd_node *n, size_t nr)
{
	for (size_t i = 1; i < nr; i++)
		if (node_cmp(&n[i - 1], &n[i]) >= 0)
			return false;
	return true;
}

static bool contains(const struct sd_node *n, size_t nr,
		     const struct sd_node *x)
{
	for (size_t i = 0; i < nr; i++)
		if (node_id_eq(&n[i].nid, &x->nid))
			return true;
	return false;
}

static void set_fsize(rlim_t cur)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) < 0)
		abort();
	rl.rlim_cur = cur;
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		out("#BUG setrlimit: %s", strerror(errno));
}

static void full_fn(struct timer *t)
{
	set_fsize(RLIM_INFINITY);
	out("#NOT-FULL");
}

/* room in the cluster's log for one more record only, for @ms */
static void fill_log(int ms)
{
	char path[4096];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/log", opt.path);
	if (stat(path, &sb) < 0) {
		out("#BUG stat %s: %s", path, strerror(errno));
		return;
	}
	/* a header of 144 bytes and a payload of at most 60 */
	set_fsize((rlim_t)sb.st_size + 144 + 60);
	out("#FULL at %lld", (long long)sb.st_size);
	timer_add(loop, &full_timer, (uint64_t)ms);
}

/*
 * -X: judging the second joiner of a run (the members given include one
 * judged before it): room for one more record (the first accept) and
 * not for the second, for opt.full_ms
 */
static void maybe_fill(const struct sd_node *joining, size_t nr_members)
{
	if (!opt.full_ms || node_id_eq(&joining->nid, &me.nid) ||
	    nr_members <= nr_known)
		return;
	fill_log(opt.full_ms);
	opt.full_ms = 0;
}

static bool sd_join_handler(const struct sd_node *joining,
		     const struct sd_node *members, size_t nr_members,
		     void *opaque, size_t *len, size_t max_len)
{
	char buf[256];
	int n;

	out("#JOINREQ %u by %d with %zu members", joining->nid.port, opt.port,
	    nr_members);
	if (joining->nid.port == opt.die_on_join_of &&
	    !node_id_eq(&joining->nid, &me.nid)) {
		out("#DYING");
		raise(SIGKILL);
	}
	/* a slow decider: the joiner may die meanwhile */
	if (opt.slow_join_ms && !node_id_eq(&joining->nid, &me.nid))
		usleep((useconds_t)opt.slow_join_ms * 1000);
	/* one slow decision: the joins that arrive meanwhile pile up */
	if (opt.slow_first_ms && !node_id_eq(&joining->nid, &me.nid)) {
		usleep((useconds_t)opt.slow_first_ms * 1000);
		opt.slow_first_ms = 0;
	}
	if (opt.slow_found_ms && node_id_eq(&joining->nid, &me.nid))
		usleep((useconds_t)opt.slow_found_ms * 1000);
	maybe_fill(joining, nr_members);
	if (*len >= sizeof(buf) / 2 || max_len < sizeof(buf)) {
		out("#BUG join payload %zu max %zu", *len, max_len);
		return false;
	}
	n = snprintf(buf, sizeof(buf), "%.*s/via-%d/nr-%zu", (int)*len,
		     (const char *)opaque, opt.port, nr_members);
	memcpy(opaque, buf, (size_t)n);
	*len = (size_t)n;
	return true;
}

static void maybe_start_work(size_t nr_members);
static void maybe_start_life(size_t nr_members);

/* ACCEPT PORT MEMBERS OPAQUE, " +" after it when another one follows */
static void sd_accept_handler(const struct sd_node *joined,
		       const struct sd_node *members, size_t nr_members,
		       const void *opaque, size_t len, bool more)
{
	char buf[1024];

	out("ACCEPT %u %s %.*s%s", joined->nid.port,
	    ports(members, nr_members, buf, sizeof(buf)), (int)len,
	    (const char *)opaque, more ? " +" : "");
	if (!sorted(members, nr_members) ||
	    !contains(members, nr_members, joined))
		out("#BUG bad member list on accept");
	nr_known = nr_members;
	maybe_start_life(nr_members);
	maybe_start_work(nr_members);
}

/* LEAVE P[,P...] MEMBERS: the ports that left in one change */
static void sd_leave_handler(const struct sd_node *left, size_t nr_left,
			     const struct sd_node *members, size_t nr_members)
{
	char buf[1024], gone[256];
	size_t o = 0;

	gone[0] = 0;
	for (size_t i = 0; i < nr_left && o < sizeof(gone); i++)
		o += (size_t)snprintf(gone + o, sizeof(gone) - o, "%s%u",
				      i ? "," : "", left[i].nid.port);
	out("LEAVE %s %s", gone, ports(members, nr_members, buf, sizeof(buf)));
	nr_known = nr_members;
	if (!nr_left || !sorted(members, nr_members))
		out("#BUG bad member list on leave");
	for (size_t i = 0; i < nr_left; i++)
		if (contains(members, nr_members, &left[i]))
			out("#BUG bad member list on leave");
}

static void sd_notify_handler(const struct sd_node *sender, const void *msg,
		       size_t len)
{
	char buf[64];
	int port, i;

	out("NOTIFY %u %.*s", sender->nid.port, (int)len, (const char *)msg);
	/* re-enter the driver from a callback */
	if (opt.echo && node_id_eq(&sender->nid, &me.nid) &&
	    sscanf(msg, "n %d %d", &port, &i) == 2 && i % 10 == 0) {
		int n = snprintf(buf, sizeof(buf), "e %d %d", port, i);

		if (cdrv_local.notify(buf, (size_t)n))
			out("#BUG echo notify failed");
	}
	if (opt.block_from_notify && node_id_eq(&sender->nid, &me.nid) &&
	    sscanf(msg, "n %d %d", &port, &i) == 2 && i % 10 == 5 &&
	    cdrv_local.block())
		out("#BUG block from notify handler failed");
}

static void hold_fn(struct timer *t);

static void sd_block_handler(const struct sd_node *sender)
{
	char buf[64];
	int n;

	if (!node_id_eq(&sender->nid, &me.nid))
		out("#BUG block handler for %u", sender->nid.port);
	if (check_fd >= 0 && flock(check_fd, LOCK_EX | LOCK_NB) < 0)
		out("#VIOLATION block granted while another is held");
	n = snprintf(buf, sizeof(buf), "g %d %d", opt.port, granted);
	if (cdrv_local.notify(buf, (size_t)n))
		out("#BUG notify in block handler failed");
	out("#GRANT %d", granted);
	if (opt.hold_ms < 0)
		hold_fn(&hold_timer);	/* unblock from inside the handler */
	else
		timer_add(loop, &hold_timer, (uint64_t)opt.hold_ms);
}

static void hold_fn(struct timer *t)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "u %d %d", opt.port, granted++);

	/* release the check lock before the unblock can be seen */
	if (check_fd >= 0)
		flock(check_fd, LOCK_UN);
	/* after leave() our own LEAVE released the block */
	if (exiting)
		return;
	if (cdrv_local.unblock(buf, (size_t)n))
		out("#BUG unblock failed");
}

static void work_fn(struct timer *t)
{
	char buf[64];
	int n;

	if (exiting || sent_notify >= opt.nr_notify)
		return;
	n = snprintf(buf, sizeof(buf), "n %d %d", opt.port, sent_notify++);
	if (cdrv_local.notify(buf, (size_t)n))
		out("#BUG notify failed");
	timer_add(loop, &work_timer, 2);
}

static void delay_fn(struct timer *t)
{
	out("#START");
	/* several of our own blocks queued at once */
	for (int i = 0; i < opt.nr_block; i++)
		if (cdrv_local.block())
			out("#BUG block failed");
	work_fn(&work_timer);
}

static void maybe_start_life(size_t nr_members)
{
	if (started_life || (int)nr_members < opt.life_after_nr)
		return;
	started_life = true;
	timer_add(loop, &life_timer, (uint64_t)opt.lifetime_ms);
}

static void maybe_start_work(size_t nr_members)
{
	if (started_work || (int)nr_members < opt.wait_nr)
		return;
	started_work = true;
	timer_add(loop, &delay_timer, (uint64_t)opt.work_delay_ms);
}

static void stop_fn(struct timer *t)
{
	event_loop_stop(loop);
}

static void life_fn(struct timer *t)
{
	if (exiting)
		return;
	exiting = true;
	out("#EXIT");
	if (cdrv_local.leave())
		out("#BUG leave failed");
	timer_add(loop, &stop_timer, 300);
}

static void term_fn(struct timer *t)
{
	if (got_usr1) {
		got_usr1 = 0;
		fill_log(opt.fill_on_usr1_ms);
	}
	if (got_term)
		life_fn(&life_timer);
	else
		timer_add(loop, &term_timer, 50);
}

static void on_term(int sig)
{
	got_term = 1;
}

static void on_usr1(int sig)
{
	got_usr1 = 1;
}

static void wait_until(long long ms)
{
	struct timespec ts;
	long long now;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (ms > now && ms - now < 10000)
		usleep((useconds_t)(ms - now) * 1000);
	else if (ms && now > ms)
		out("#LATE %lld ms", now - ms);	/* the start took longer */
}

/* -G: ready; join once the test has made FILE (at most 30 s) */
static void wait_for_go(const char *path)
{
	if (!path)
		return;
	out("#READY");
	for (int i = 0; i < 30000 && access(path, F_OK); i++)
		usleep(1000);
}

static void usage(void)
{
	fprintf(stderr, "usage: local_harness -p PATH -n PORT -o OUT "
		"[-t LIFE_MS] [-l NR] [-w NR] [-W DELAY_MS] [-N NOTIFIES] [-E] "
		"[-B BLOCKS] [-H HOLD_MS|-1] [-C CHECKFILE] [-D PORT] "
		"[-S SLOW_JOIN_MS] [-F SLOW_FOUND_MS] [-K] [-T JOIN_AT_MS] "
		"[-G GO_FILE] [-X FULL_MS] [-Y FULL_MS]\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	const char *outp = NULL;
	int c;

	while ((c = getopt(argc, argv, "p:n:o:t:l:w:W:N:EB:H:C:D:S:P:F:KT:G:X:Y:")) != -1) {
		switch (c) {
		case 'p': opt.path = optarg; break;
		case 'n': opt.port = atoi(optarg); break;
		case 'o': outp = optarg; break;
		case 't': opt.lifetime_ms = atoi(optarg); break;
		case 'l': opt.life_after_nr = atoi(optarg); break;
		case 'w': opt.wait_nr = atoi(optarg); break;
		case 'W': opt.work_delay_ms = atoi(optarg); break;
		case 'N': opt.nr_notify = atoi(optarg); break;
		case 'E': opt.echo = true; break;
		case 'B': opt.nr_block = atoi(optarg); break;
		case 'H': opt.hold_ms = atoi(optarg); break;
		case 'C': opt.check_path = optarg; break;
		case 'D': opt.die_on_join_of = atoi(optarg); break;
		case 'S': opt.slow_join_ms = atoi(optarg); break;
		case 'P': opt.slow_first_ms = atoi(optarg); break;
		case 'F': opt.slow_found_ms = atoi(optarg); break;
		case 'K': opt.block_from_notify = true; break;
		case 'T': opt.join_at_ms = atoll(optarg); break;
		case 'G': opt.go_path = optarg; break;
		case 'X': opt.full_ms = atoi(optarg); break;
		case 'Y': opt.fill_on_usr1_ms = atoi(optarg); break;
		default: usage();
		}
	}
	if (!opt.path || !outp || opt.port <= 0 || opt.port > 65535)
		usage();
	opt.out = open(outp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (opt.out < 0) {
		perror(outp);
		exit(2);
	}
}

static const struct cluster_handlers handlers = {
	.join = sd_join_handler,
	.accept = sd_accept_handler,
	.leave = sd_leave_handler,
	.notify = sd_notify_handler,
	.block = sd_block_handler,
};

int main(int argc, char **argv)
{
	char hello[64];
	int n;

	parse(argc, argv);
	/*
	 * never outlive the test, whatever happens; a lifetime that waits
	 * for the cluster to form gets the test's bound on forming, 15 s
	 */
	alarm((unsigned)(opt.lifetime_ms / 1000 + 10 +
			 (opt.life_after_nr ? 15 : 0)));
	signal(SIGTERM, on_term);
	if (opt.fill_on_usr1_ms)
		signal(SIGUSR1, on_usr1);
	/* -X: a write past RLIMIT_FSIZE fails with EFBIG instead */
	signal(SIGXFSZ, SIG_IGN);
	log_open(NULL, LOG_L_INFO, true);
	if (opt.check_path) {
		check_fd = open(opt.check_path, O_RDWR | O_CREAT | O_CLOEXEC,
				0644);
		if (check_fd < 0)
			return 2;
	}
	str_to_addr("127.0.0.1", me.nid.addr);
	me.nid.port = (uint16_t)opt.port;
	me.nr_vnodes = SD_DEFAULT_VNODES;
	loop = event_loop_create();
	if (!loop || cdrv_local.init(opt.path, loop, &handlers)) {
		fprintf(stderr, "init failed\n");
		return 1;
	}
	life_timer.fn = life_fn;
	work_timer.fn = work_fn;
	hold_timer.fn = hold_fn;
	stop_timer.fn = stop_fn;
	term_timer.fn = term_fn;
	delay_timer.fn = delay_fn;
	full_timer.fn = full_fn;
	n = snprintf(hello, sizeof(hello), "hello-%d", opt.port);
	wait_until(opt.join_at_ms);
	wait_for_go(opt.go_path);
	if (cdrv_local.join(&me, hello, (size_t)n)) {
		fprintf(stderr, "join failed\n");
		return 1;
	}
	if (!opt.life_after_nr)
		maybe_start_life(0);
	timer_add(loop, &term_timer, 50);
	event_loop_run(loop);
	event_loop_destroy(loop);
	return 0;
}
