// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cluster state and its RCU-published view.  The main thread is the
 * only writer; readers on other threads take the view under RCU.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "core/core.h"
#include "state/cluster.h"

static struct cluster_state state;
const struct cluster_state *const cstate = &state;

struct cluster_state *cstate_mut(void)
{
	return &state;
}

static void free_view_rcu(struct rcu_head *head)
{
	struct cluster_view *v = caa_container_of(head, struct cluster_view,
						  rcu);

	ring_free(&v->ring);
	free(v);
}

/* the ring's zones, for other threads (cluster_zones) */
static int view_zones;

int cluster_zones(void)
{
	return __atomic_load_n(&view_zones, __ATOMIC_ACQUIRE);
}

void publish_view(void)
{
	struct cluster_view *v = xzalloc(sizeof(*v)), *old = state.view;

	v->epoch = state.epoch;
	v->status = state.status;
	if (ring_build(&v->ring, state.members, state.nr_members)) {
		sd_emerg("out of memory building the ring");
		abort();
	}
	rcu_assign_pointer(state.view, v);
	__atomic_store_n(&view_zones, v->ring.nr_zones, __ATOMIC_RELEASE);
	if (old)
		call_rcu(&old->rcu, free_view_rcu);
}

/* main thread only: the updater may read its own pointer directly */
struct cluster_view *current_view(void)
{
	return state.view;
}

bool node_is_self(const struct sd_node *n)
{
	return node_id_eq(&n->nid, &sys.self.nid);
}

void set_epoch_nodes(const struct sd_node *nodes, size_t nr)
{
	free(state.epoch_nodes);
	state.epoch_nodes = xmalloc((nr ? nr : 1) * sizeof(*nodes));
	memcpy(state.epoch_nodes, nodes, nr * sizeof(*nodes));
	state.nr_epoch_nodes = nr;
}

/* the members as "ADDR:PORT", for other threads (cluster_has_member) */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char (*member_names)[MEMBER_NAME_LEN];
static size_t nr_member_names;

static void set_member_names(const struct sd_node *nodes, size_t nr)
{
	char (*names)[MEMBER_NAME_LEN] = xmalloc((nr ? nr : 1) *
						 sizeof(*names));

	for (size_t i = 0; i < nr; i++)
		node_to_str(&nodes[i], names[i], sizeof(names[i]));
	pthread_mutex_lock(&names_lock);
	free(member_names);
	member_names = names;
	nr_member_names = nr;
	pthread_mutex_unlock(&names_lock);
}

bool cluster_has_member(const char *name)
{
	bool found = false;

	pthread_mutex_lock(&names_lock);
	for (size_t i = 0; i < nr_member_names && !found; i++)
		found = !strcmp(member_names[i], name);
	pthread_mutex_unlock(&names_lock);
	return found;
}

void set_members(const struct sd_node *nodes, size_t nr)
{
	free(state.members);
	state.members = xmalloc((nr ? nr : 1) * sizeof(*nodes));
	memcpy(state.members, nodes, nr * sizeof(*nodes));
	state.nr_members = nr;
	nodes_sort(state.members, nr);
	set_member_names(nodes, nr);
}
