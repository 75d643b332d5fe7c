// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fetch of missing epoch records (sheep/group/epoch_fetch.c), with
 * peers that answer inside peer_submit(), as the real one does when no
 * connection can be made (fd exhaustion, say).  The fetch must not go a
 * stack frame deeper per ask: at most one peer_submit() is ever open
 * (it recursed once per member and epoch, up to 4096 x members deep).
 * Every missing epoch is asked of every other member until one answers,
 * the next epoch first of the member that answered, and the fetch ends
 * (its callback runs) once every epoch is settled.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "sheepdog_proto.h"
#include "event.h"
#include "util.h"
#include "core/core.h"
#include "net/peer.h"
#include "state/cluster.h"
#include "group/epoch_fetch.h"

#define NR_MEMBERS	4		/* this node is members[1] */

static struct sd_node members[NR_MEMBERS];
static int open_submits, most_open;	/* peer_submit() nesting */
static int asks[NR_MEMBERS];		/* per member */
static int answering = -1;		/* the member that has epochs */
static int last_asked;
static int done_calls;

static int member_of(const struct node_id *nid)
{
	for (int i = 0; i < NR_MEMBERS; i++)
		if (node_id_eq(nid, &members[i].nid))
			return i;
	fail_msg("asked a node that is no member");
	return -1;
}

/* every ask is answered at once: an epoch record from @answering only */
void peer_submit(const struct node_id *nid, struct peer_req *pr)
{
	int i = member_of(nid);
	int res = SD_RES_NETWORK_ERROR;

	asks[i]++;
	last_asked = i;
	open_submits++;
	most_open = MAX(most_open, open_submits);
	memset(&pr->rp, 0, sizeof(pr->rp));
	if (i == answering) {
		/* the header and one node */
		pr->rbuf = pr->alloc_rbuf(pr, 8 + sizeof(struct sd_node));
		memset(pr->rbuf, 0, pr->rbuf_len);
		pr->rp.data_length = pr->rbuf_len;
		res = SD_RES_SUCCESS;
	}
	pr->rp.result = (uint32_t)res;
	pr->done(pr, res);
	open_submits--;
}

void *peer_reply_sized_buf(struct peer_req *pr, uint32_t len)
{
	pr->rbuf_len = MIN(len, pr->rbuf_len);
	return xmalloc(pr->rbuf_len);
}

static void fetch_done(void)
{
	done_calls++;
}

static char base[] = "/tmp/kelpie-epoch-fetch-XXXXXX";

static int nr_epoch_files(void)
{
	char cmd[128];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls %s/epoch | wc -l", base);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

static int setup(void **state)
{
	struct cluster_state *cs = cstate_mut();
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s/epoch && mkdir %s/epoch",
		 base, base);
	assert_int_equal(system(cmd), 0);
	memset(asks, 0, sizeof(asks));
	open_submits = most_open = done_calls = 0;
	cs->members = members;
	cs->nr_members = NR_MEMBERS;
	return 0;
}

/* no member answers: every epoch of the newest 4096 asked of all three */
static void test_no_connection_to_anyone(void **state)
{
	(void)state;
	answering = -1;
	cstate_mut()->epoch = 5000;
	epoch_fetch_start(fetch_done);
	assert_int_equal(done_calls, 1);
	assert_false(epoch_fetch_busy());
	assert_int_equal(most_open, 1);
	assert_int_equal(asks[1], 0);		/* never itself */
	assert_int_equal(asks[0], 4096);
	assert_int_equal(asks[2], 4096);
	assert_int_equal(asks[3], 4096);
	assert_int_equal(nr_epoch_files(), 0);
}

/* one member answers at once: the first epoch after trying the one after
 * this node (2), every later one of that member at once */
static void test_answers_at_once(void **state)
{
	(void)state;
	answering = 3;
	cstate_mut()->epoch = 3001;
	epoch_fetch_start(fetch_done);
	assert_int_equal(done_calls, 1);
	assert_false(epoch_fetch_busy());
	assert_int_equal(most_open, 1);
	assert_int_equal(asks[2], 1);
	assert_int_equal(asks[3], 3000);
	assert_int_equal(asks[0], 0);
	assert_int_equal(last_asked, 3);
	assert_int_equal(nr_epoch_files(), 3000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_no_connection_to_anyone, setup),
		cmocka_unit_test_setup(test_answers_at_once, setup),
	};
	char cmd[128];
	int rc;

	for (int i = 0; i < NR_MEMBERS; i++) {
		members[i].nid.port = (uint16_t)(7000 + i);
		members[i].nid.addr[15] = 1;
	}
	sys.self = members[1];
	assert_non_null(mkdtemp(base));
	snprintf(sys.base, sizeof(sys.base), "%s", base);
	sys.loop = event_loop_create();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd))
		rc = 1;
	return rc;
}
