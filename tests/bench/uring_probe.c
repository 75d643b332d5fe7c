// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uring_probe: what a 4 KiB write into an object file costs through
 * io_uring against Kelpie's I/O pool (lib/work.c: a worker thread per
 * write, woken by futex, reporting back to the event loop), on the file
 * system of FILE.  Answers issue 15's question whether store I/O through
 * io_uring from the event loop would take the hand-off off a write.
 *
 *   uring_probe FILE N DEPTH
 *
 * For buffered and O_DIRECT writes: N writes at DEPTH through io_uring
 * (and whether io_uring made a worker thread of its own, iou-wrk: the
 * kernel punted the writes), then through the pool with 2, 4 and 8
 * threads.  Prints writes per second and CPU time per write of the whole
 * process (its threads included).  Build (liburing-dev):
 *
 *   make && cc -O2 -Iinclude -o build/uring_probe tests/bench/uring_probe.c \
 *	build/libkelpie.a -luring -lurcu -lpthread
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "event.h"
#include "work.h"

#define BLK		4096
#define SPAN		1024		/* blocks of the file written */

static int fd, nr, submitted, completed;
static char *buf;
static struct event_loop *loop;
static struct work_queue *wq;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 2;
}

static off_t where(int i)
{
	return (off_t)((i * 7919L) % SPAN) * BLK;
}

static void report(const char *what, double t0, double c0)
{
	printf("%-28s %9.0f writes/s %6.2f us CPU/write\n", what,
	       nr / (now() - t0), (cpu() - c0) * 1e6 / nr);
}

static void by_uring(const char *kind, int depth)
{
	struct io_uring r;
	int inflight = 0, done = 0, sub = 0, most = threads();
	double t0 = now(), c0 = cpu();
	char what[64];

	if (io_uring_queue_init(256, &r, 0)) {
		perror("io_uring_queue_init");
		exit(1);
	}
	while (done < nr) {
		struct io_uring_cqe *c;
		unsigned head;
		int k = 0;

		for (; inflight < depth && sub < nr; sub++, inflight++)
			io_uring_prep_write(io_uring_get_sqe(&r), fd, buf, BLK,
					    where(sub));
		io_uring_submit(&r);
		io_uring_wait_cqe(&r, &c);
		io_uring_for_each_cqe(&r, head, c) {
			if (c->res != BLK) {
				fprintf(stderr, "write: %d\n", c->res);
				exit(1);
			}
			k++;
		}
		io_uring_cq_advance(&r, k);
		done += k;
		inflight -= k;
		if (threads() > most)
			most = threads();
	}
	snprintf(what, sizeof(what), "%s io_uring%s", kind,
		 most > 1 ? " (iou-wrk)" : "");
	report(what, t0, c0);
	io_uring_queue_exit(&r);
}

struct one {
	struct work work;
	int i;
};

static void write_fn(struct work *w)
{
	struct one *o = (struct one *)w;

	if (pwrite(fd, buf, BLK, where(o->i)) != BLK) {
		perror("pwrite");
		exit(1);
	}
}

static void write_done(struct work *w)
{
	struct one *o = (struct one *)w;

	if (++completed == nr) {
		event_loop_stop(loop);
		return;
	}
	if (submitted < nr) {
		o->i = submitted++;
		wq_queue(wq, &o->work);
	}
}

static void by_pool(const char *kind, int depth, int nthreads)
{
	struct one *o = calloc((size_t)depth, sizeof(*o));
	double t0, c0;
	char what[64];

	wq = wq_create("probe", nthreads, 4096, loop);
	submitted = completed = 0;
	t0 = now();
	c0 = cpu();
	for (int i = 0; i < depth && submitted < nr; i++) {
		o[i].work.fn = write_fn;
		o[i].work.done = write_done;
		o[i].i = submitted++;
		wq_queue(wq, &o[i].work);
	}
	event_loop_run(loop);
	snprintf(what, sizeof(what), "%s pool, %d threads", kind, nthreads);
	report(what, t0, c0);
	wq_destroy(wq);
	free(o);
}

static void probe(const char *path, const char *kind, int flags, int depth)
{
	char *fill = aligned_alloc(BLK, (size_t)SPAN * BLK);

	fd = open(path, O_RDWR | O_CREAT | flags, 0644);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	/* the blocks exist (and are cached, for buffered writes) */
	memset(fill, 1, (size_t)SPAN * BLK);
	if (pwrite(fd, fill, (size_t)SPAN * BLK, 0) != SPAN * BLK ||
	    fsync(fd)) {
		perror("fill");
		exit(1);
	}
	free(fill);
	by_uring(kind, depth);
	for (int t = 2; t <= 8; t *= 2)
		by_pool(kind, depth, t);
	close(fd);
}

int main(int argc, char **argv)
{
	int depth;

	if (argc != 4) {
		fprintf(stderr, "usage: uring_probe FILE N DEPTH\n");
		return 2;
	}
	nr = atoi(argv[2]);
	depth = atoi(argv[3]);
	if (nr < 1 || depth < 1 || depth > 256) {
		fprintf(stderr, "uring_probe: bad N or DEPTH\n");
		return 2;
	}
	buf = aligned_alloc(BLK, BLK);
	memset(buf, 0xa5, BLK);
	loop = event_loop_create();
	probe(argv[1], "buffered", 0, depth);
	probe(argv[1], "O_DIRECT", O_DIRECT, depth);
	unlink(argv[1]);
	return 0;
}
