// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The trust boundary of the client port.  Anyone may use the client
 * opcodes (object I/O, VDI operations, status).  Sheep-to-sheep opcodes
 * (the *_PEER family, object lists, epochs, repair) are served only to
 * current cluster members and to local clients (the unix socket and
 * loopback: dog on a node); with sheep --cluster-key, members must also
 * prove the key on the connection (core/auth.h).  Admin opcodes (format,
 * shutdown, kill,
 * copies, recovery control, log level) are served to the networks of
 * --admin-from, to everybody by default as in Sheepdog, and always to
 * local clients.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include "hash.h"
#include "net.h"
#include "util.h"
#include "core/auth.h"
#include "core/core.h"
#include "front/access.h"
#include "state/cluster.h"

#define MAX_ADMIN_NETS	64

struct net {
	uint8_t addr[16];	/* node_id form */
	unsigned int prefix;	/* bits of addr that must match */
};

static struct net admin_nets[MAX_ADMIN_NETS];
static int nr_admin_nets = -1;	/* -1: everybody */

static bool prefix_match(const uint8_t *a, const uint8_t *b,
			 unsigned int bits)
{
	unsigned int bytes = bits / 8, rest = bits % 8;

	if (memcmp(a, b, bytes))
		return false;
	if (!rest)
		return true;
	return !((a[bytes] ^ b[bytes]) & (uint8_t)(0xff << (8 - rest)));
}

/* "ADDR" or "ADDR/BITS", IPv4 or IPv6 */
static int parse_net(char *s, struct net *n)
{
	char *slash = strchr(s, '/'), *end;
	unsigned long bits;
	bool v4;

	if (slash)
		*slash = 0;
	if (str_to_addr(s, n->addr))
		return -1;
	v4 = !strchr(s, ':');
	n->prefix = 128;
	if (!slash)
		return 0;
	bits = strtoul(slash + 1, &end, 10);
	if (!slash[1] || *end || bits > (v4 ? 32UL : 128UL))
		return -1;
	n->prefix = (unsigned int)bits + (v4 ? 96 : 0);
	return 0;
}

int access_set_admin_from(const char *spec)
{
	char *copy = strdup(spec), *tok, *save = NULL;
	int n = 0, ret = 0;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_ADMIN_NETS || parse_net(tok, &admin_nets[n])) {
			ret = -1;
			break;
		}
		n++;
	}
	free(copy);
	if (!n)
		ret = -1;
	if (!ret)
		nr_admin_nets = n;
	return ret;
}

static bool is_loopback(const uint8_t addr[16])
{
	static const uint8_t v6_lo[16] = { [15] = 1 };
	static const uint8_t zero[12];

	if (!memcmp(addr, zero, 12))
		return addr[12] == 127;
	return !memcmp(addr, v6_lo, 16);
}

static bool admin_allowed(const struct client_access *a)
{
	if (a->local || nr_admin_nets < 0)
		return true;
	for (int i = 0; i < nr_admin_nets; i++)
		if (prefix_match(a->addr, admin_nets[i].addr,
				 admin_nets[i].prefix))
			return true;
	return false;
}

void access_classify(const struct sockaddr_storage *ss,
		     struct client_access *a)
{
	memset(a, 0, sizeof(*a));
	if (net_sockaddr_to_addr(ss, a->addr))
		a->local = is_loopback(a->addr);
	else
		a->local = ss->ss_family == AF_UNIX;
	a->admin = admin_allowed(a);
}

static bool is_member_addr(const uint8_t addr[16])
{
	for (size_t i = 0; i < cstate->nr_members; i++) {
		const struct node_id *n = &cstate->members[i].nid;

		/* a member's RDMA address (--rdma) is its own too */
		if (!memcmp(n->addr, addr, 16) ||
		    (n->io_port && !memcmp(n->io_addr, addr, 16)))
			return true;
	}
	return false;
}

bool access_member_addr(const struct client_access *a)
{
	static const uint8_t zero[16];

	/* the unix socket: no address at all */
	if (a->local && !memcmp(a->addr, zero, 16))
		return true;
	/* before the join, this node's own address is the one it knows */
	return is_member_addr(a->addr) ||
	       !memcmp(a->addr, sys.self.nid.addr, 16);
}

enum req_origin access_origin(const struct client_access *a, bool authed)
{
	if (a->local)
		return FROM_TRUSTED;
	if (auth_enabled() && !authed)
		return FROM_CLIENT;
	return is_member_addr(a->addr) ? FROM_TRUSTED : FROM_CLIENT;
}
