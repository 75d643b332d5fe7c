// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * peer.c: a connection that does not come up is given up after its own
 * deadline, not after the requests' 30 s.  A listener whose accept queue
 * is full drops every SYN, as a host whose link is down does: the
 * kernel's SYN retries back off (1, 3, 7, 15, 31 s), so a peer that comes
 * back would otherwise be reached only at the next one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "event.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "core/core.h"
#include "net/peer.h"

static struct timer guard;
static bool timed_out;
static int result = -1;
static uint64_t done_at;

static void guard_fired(struct timer *t)
{
	timed_out = true;
	event_loop_stop(sys.loop);
}

static void req_done(struct peer_req *pr, int res)
{
	result = res;
	done_at = now_msec();
	event_loop_stop(sys.loop);
}

static int bound_port(int fd)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

static int connect_nb(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		assert_int_equal(errno, EINPROGRESS);
	return fd;
}

/* the connect of @fd is still under way after @ms */
static bool still_connecting(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return poll(&p, 1, ms) == 0;
}

static void test_connect_deadline(void **state)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fill[3], probe, port;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct node_id nid = { .port = 0 };
	struct peer_req pr;
	uint64_t t0;

	assert_true(lfd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* never accepted: the queue holds one, later SYNs are dropped */
	assert_int_equal(listen(lfd, 0), 0);
	port = bound_port(lfd);
	for (int i = 0; i < 3; i++)
		fill[i] = connect_nb(port);
	probe = connect_nb(port);
	if (!still_connecting(probe, 300)) {
		close(probe);
		for (int i = 0; i < 3; i++)
			close(fill[i]);
		close(lfd);
		skip();	/* this kernel answers SYNs of a full queue */
	}

	nid.addr[10] = nid.addr[11] = 0xff;	/* v4-mapped 127.0.0.1 */
	nid.addr[12] = 127;
	nid.addr[15] = 1;
	nid.port = (uint16_t)port;
	memset(&pr, 0, sizeof(pr));
	sd_init_req(&pr.rq, SD_OP_GET_OBJ_LIST);
	pr.done = req_done;
	t0 = now_msec();
	peer_submit(&nid, &pr);
	timer_add(sys.loop, &guard, 20000);
	event_loop_run(sys.loop);
	timer_del(&guard);

	assert_false(timed_out);	/* the requests' own 30 s: too late */
	assert_int_equal(result, SD_RES_NETWORK_ERROR);
	assert_true(done_at - t0 >= 4000);
	assert_true(done_at - t0 <= 8000);

	close(probe);
	for (int i = 0; i < 3; i++)
		close(fill[i]);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_deadline),
	};

	sys.loop = event_loop_create();
	assert_non_null(sys.loop);
	guard.fn = guard_fired;
	peer_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
