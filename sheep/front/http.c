// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The HTTP endpoint of sheep --http [ADDR:]PORT: GET /metrics (the
 * Prometheus text format) and GET /health (200 "ok" when this node serves
 * I/O, 503 and the reason otherwise).
 *
 * One thread of its own with blocking sockets, one connection at a time,
 * each bounded: a request head of at most 4 KiB read within 5 s in all,
 * each send of the answer within 5 s, then the connection is closed.  A slow or
 * hostile scraper delays other scrapes, never a request of the I/O path:
 * the thread only reads the snapshot that the main loop publishes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "metrics.h"
#include "net.h"
#include "util.h"

#define HTTP_MAX_HEAD		4096
#define HTTP_TIMEOUT_SEC	5
#define HTTP_MAX_BODY		METRICS_TEXT_MAX

static char http_addr[256];
static int http_port;
static int http_fd = -1;
static char body[HTTP_MAX_BODY];

int http_configure(const char *spec)
{
	return net_parse_listen(spec, http_addr, sizeof(http_addr),
				&http_port);
}

static void respond(int fd, int code, const char *reason, const char *type,
		    const char *data, size_t len, bool head_only)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			 code, reason, type, len);

	if (net_send_all(fd, head, (size_t)n) == 0 && !head_only)
		net_send_all(fd, data, len);
}

static void respond_text(int fd, int code, const char *reason,
			 const char *text, bool head_only)
{
	respond(fd, code, reason, "text/plain; charset=utf-8", text,
		strlen(text), head_only);
}

/*
 * The request head up to its blank line, NUL-terminated; its length or
 * -1.  Within HTTP_TIMEOUT_SEC in all, not per byte: a client that
 * trickles bytes holds the endpoint no longer than a silent one.
 */
static int read_head(int fd, char *buf, size_t len)
{
	uint64_t deadline = now_msec() + HTTP_TIMEOUT_SEC * 1000;
	size_t got = 0;

	while (got < len - 1) {
		ssize_t n;

		if (now_msec() >= deadline)
			return -1;
		n = recv(fd, buf + got, len - 1 - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = 0;
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (int)got;
	}
	return -1;
}

static void serve_metrics(int fd, bool head_only)
{
	struct metrics_snap m;
	int n;

	metrics_count_objects();
	metrics_get(&m);
	n = metrics_format(&m, body, sizeof(body));
	if (n < 0) {
		respond_text(fd, 500, "Internal Server Error",
			     "metrics do not fit the buffer\n", head_only);
		return;
	}
	respond(fd, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
		body, (size_t)n, head_only);
}

static void serve_health(int fd, bool head_only)
{
	struct metrics_snap m;
	char why[128], text[160];

	metrics_get(&m);
	if (metrics_healthy(&m, why, sizeof(why))) {
		respond_text(fd, 200, "OK", "ok\n", head_only);
		return;
	}
	snprintf(text, sizeof(text), "%s\n", why);
	respond_text(fd, 503, "Service Unavailable", text, head_only);
}

/* "/metrics" and "/metrics?x" match "/metrics"; "/metricsx" does not */
static bool path_is(const char *path, size_t len, const char *want)
{
	size_t w = strlen(want);

	return len >= w && !memcmp(path, want, w) &&
	       (len == w || path[w] == '?');
}

static void serve(int fd)
{
	char head[HTTP_MAX_HEAD];
	const char *path, *end;
	bool head_only;
	size_t plen;

	if (read_head(fd, head, sizeof(head)) < 0)
		return;
	if (!strncmp(head, "GET ", 4)) {
		head_only = false;
		path = head + 4;
	} else if (!strncmp(head, "HEAD ", 5)) {
		head_only = true;
		path = head + 5;
	} else {
		respond_text(fd, 405, "Method Not Allowed", "GET only\n",
			     false);
		return;
	}
	end = strpbrk(path, " \r\n");
	plen = end ? (size_t)(end - path) : strlen(path);
	if (path_is(path, plen, "/metrics"))
		serve_metrics(fd, head_only);
	else if (path_is(path, plen, "/health"))
		serve_health(fd, head_only);
	else
		respond_text(fd, 404, "Not Found",
			     "try /metrics or /health\n", head_only);
}

static void *http_thread(void *arg)
{
	struct timeval tv = { .tv_sec = HTTP_TIMEOUT_SEC };
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		int fd = accept4(http_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EINTR)
				usleep(100000);	/* EMFILE and the like */
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		serve(fd);
		close(fd);
	}
	return NULL;
}

int http_init(const char *default_addr)
{
	const char *addr = http_addr[0] ? http_addr : default_addr;
	pthread_t t;
	int fl;

	if (!http_port)
		return 0;	/* no endpoint, no snapshots either */
	metrics_start();
	http_fd = net_listen_tcp(addr, http_port);
	if (http_fd < 0) {
		sd_err("HTTP: cannot listen on %s:%d: %m%s", addr ? addr : "*",
		       http_port, errno == EADDRINUSE ? " (another program "
		       "has it: give --http another port)" : "");
		return -1;
	}
	/* the thread blocks in accept */
	fl = fcntl(http_fd, F_GETFL);
	if (fl < 0 || fcntl(http_fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
	    pthread_create(&t, NULL, http_thread, NULL)) {
		sd_err("HTTP: cannot start: %m");
		close(http_fd);
		http_fd = -1;
		return -1;
	}
	pthread_detach(t);
	sd_info("metrics on http://%s:%d/metrics", addr ? addr : "*",
		http_port);
	return 0;
}
