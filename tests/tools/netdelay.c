// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * netdelay: a slow, lossy link for the tests, where the kernel has no
 * tc netem.  An nftables rule in a network namespace hands the packets
 * leaving its interface to an NFQUEUE; this program, run in the same
 * namespace, holds each packet for the delay and then lets it go, or
 * drops it with the given probability.
 *
 *   netdelay -q QUEUE -d DELAY_US [-j JITTER_US] [-l LOSS_PPM] [-s SEED]
 *
 * Every packet waits DELAY_US plus a uniform jitter in [0, JITTER_US];
 * packets leave in the order they came (a packet never overtakes an
 * earlier one, as on a wire).  LOSS_PPM: packets dropped per million.
 * The queue is bounded (QMAX packets): when it is full the kernel lets
 * packets through at once (fail-open) rather than stall the link.  It
 * runs until SIGTERM or SIGINT, then lets every held packet go and
 * prints "passed=N dropped=N" on stdout.
 *
 * Build: cc -std=gnu11 -O2 -o netdelay tests/tools/netdelay.c \
 *            -lnetfilter_queue
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define QMAX	16384

struct held {
	uint32_t id;
	uint64_t due;		/* ns, CLOCK_MONOTONIC */
};

static struct held ring[QMAX];
static unsigned int head, count;
static uint64_t delay_ns, jitter_ns, last_due, rng;
static uint32_t loss_ppm;
static unsigned long long nr_passed, nr_dropped;
static volatile sig_atomic_t stop;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t next_rand(void)
{
	/* splitmix64 */
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void verdict(struct nfq_q_handle *qh, uint32_t id, uint32_t v)
{
	if (nfq_set_verdict(qh, id, v, 0, NULL) < 0)
		fprintf(stderr, "netdelay: verdict for packet %u: %s\n", id,
			strerror(errno));
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg,
		     struct nfq_data *nfa, void *data)
{
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	uint64_t due;
	uint32_t id;

	if (!ph)
		return 0;
	id = ntohl(ph->packet_id);
	if (loss_ppm && next_rand() % 1000000 < loss_ppm) {
		nr_dropped++;
		verdict(qh, id, NF_DROP);
		return 0;
	}
	if (count == QMAX) {
		/* cannot happen with the kernel's queue bounded by QMAX */
		nr_passed++;
		verdict(qh, id, NF_ACCEPT);
		return 0;
	}
	due = now_ns() + delay_ns + (jitter_ns ? next_rand() % (jitter_ns + 1) : 0);
	if (due < last_due)
		due = last_due;		/* in order, as on a wire */
	last_due = due;
	ring[(head + count) % QMAX] = (struct held){ .id = id, .due = due };
	count++;
	return 0;
}

/* let go every packet due by @t */
static void release(struct nfq_q_handle *qh, uint64_t t)
{
	while (count && ring[head].due <= t) {
		verdict(qh, ring[head].id, NF_ACCEPT);
		nr_passed++;
		head = (head + 1) % QMAX;
		count--;
	}
}

static void on_signal(int sig)
{
	stop = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: netdelay -q QUEUE -d DELAY_US [-j JITTER_US] "
		"[-l LOSS_PPM] [-s SEED]\n");
	exit(2);
}

static unsigned long long num(const char *s, unsigned long long max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v > max || *s == '-')
		usage();
	return v;
}

int main(int argc, char **argv)
{
	static char buf[65536] __attribute__((aligned));
	struct nfq_handle *h;
	struct nfq_q_handle *qh;
	struct sigaction sa = { .sa_handler = on_signal };
	int c, fd, queue = -1;

	rng = (uint64_t)time(NULL) ^ (uint64_t)getpid();
	while ((c = getopt(argc, argv, "q:d:j:l:s:")) != -1) {
		switch (c) {
		case 'q': queue = (int)num(optarg, 65535); break;
		case 'd': delay_ns = num(optarg, 10000000) * 1000; break;
		case 'j': jitter_ns = num(optarg, 10000000) * 1000; break;
		case 'l': loss_ppm = (uint32_t)num(optarg, 1000000); break;
		case 's': rng = num(optarg, UINT64_MAX); break;
		default: usage();
		}
	}
	if (queue < 0 || optind != argc)
		usage();
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	h = nfq_open();
	if (!h) {
		perror("netdelay: nfq_open");
		return 1;
	}
	qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
	if (!qh) {
		perror("netdelay: nfq_create_queue");
		return 1;
	}
	if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0 ||
	    nfq_set_queue_maxlen(qh, QMAX) < 0) {
		perror("netdelay: queue setup");
		return 1;
	}
	/* a full queue lets packets through rather than drop them */
	nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN);
	fd = nfq_fd(h);
	{
		int sz = 8 << 20;

		/* bursts of a busy link: room for them in the socket */
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct timespec ts = { .tv_sec = 1 };
		uint64_t t = now_ns();
		ssize_t n;

		release(qh, t);
		if (count) {
			uint64_t wait = ring[head].due - t;

			ts.tv_sec = (time_t)(wait / 1000000000ULL);
			ts.tv_nsec = (long)(wait % 1000000000ULL);
		}
		if (ppoll(&p, 1, &ts, NULL) <= 0)
			continue;
		while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			nfq_handle_packet(h, buf, (int)n);
		if (n < 0 && errno == ENOBUFS)
			fprintf(stderr, "netdelay: the kernel dropped queue "
				"messages (ENOBUFS)\n");
	}
	release(qh, UINT64_MAX);
	printf("passed=%llu dropped=%llu\n", nr_passed, nr_dropped);
	nfq_destroy_queue(qh);
	nfq_close(h);
	return 0;
}
