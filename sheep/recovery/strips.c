// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Recovery of erasure-coded strips (doc/erasure-coding.md §5).
 *
 * Strip i of an object lives on the object's target i.  After an epoch
 * change a node that is target i of a coded object and lacks its strip
 * rebuilds it: the gateway's read path (handed down at start-up, as
 * gw/ is not ours to call) reads the whole object from the strips where
 * the previous epoch put them (then where the current one does), resolves
 * a version in doubt, decodes, and encodes strip i; recovery installs it
 * committed at that version.  A strip the node held at another index is
 * kept, readable by the others' rebuilds, until every node has recovered
 * the epoch; then it goes.
 */
#include <stdlib.h>
#include "ec.h"
#include "util.h"
#include "recovery/strips.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "store/store.h"

static strip_rebuild_fn rebuild_fn, anywhere_fn;

void recovery_set_strip_rebuild(strip_rebuild_fn fn)
{
	rebuild_fn = fn;
}

void recovery_set_strip_rebuild_anywhere(strip_rebuild_fn fn)
{
	anywhere_fn = fn;
}

int strip_rebuild_anywhere(const struct vnode_ring *ring, uint64_t oid,
			   uint8_t policy, int idx, strip_rebuilt_fn done,
			   void *arg)
{
	uint32_t size = sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));

	if (!anywhere_fn || !ring->nr_nodes)
		return -1;
	anywhere_fn(oid, policy, size, ring->nodes, (int)ring->nr_nodes, idx,
		    done, arg);
	return 0;
}

uint8_t strip_policy(uint64_t oid)
{
	struct vdi_info *vi;

	if (!is_data_obj(oid))
		return 0;
	vi = vdi_get(oid_to_vid(oid), false);
	return vi ? vi->copy_policy : 0;
}

int strip_targets(const struct vnode_ring *ring, uint64_t oid,
		  uint8_t policy, int *tgt)
{
	int n = ec_policy_data(policy) + ec_policy_parity(policy);

	if (!ring->nr_vnodes || n > SD_MAX_COPIES)
		return -1;
	n = ring_targets(ring, oid, n, tgt);
	return n < ec_policy_data(policy) ? -1 : n;
}

bool strips_all_placed(const struct vnode_ring *ring, uint64_t oid,
		       uint8_t policy)
{
	int tgt[SD_MAX_COPIES];

	return strip_targets(ring, oid, policy, tgt) ==
	       ec_policy_data(policy) + ec_policy_parity(policy);
}

int strip_index(const struct vnode_ring *ring, uint64_t oid, uint8_t policy)
{
	int tgt[SD_MAX_COPIES], n = strip_targets(ring, oid, policy, tgt);

	if (n < 0)
		return STRIP_NO_RING;
	for (int i = 0; i < n; i++)
		if (node_is_self(&ring->nodes[tgt[i]]))
			return i;
	return -1;
}

int strip_rebuild(const struct vnode_ring *ring, uint64_t oid, uint8_t policy,
		  int idx, strip_rebuilt_fn done, void *arg)
{
	int tgt[SD_MAX_COPIES], n = strip_targets(ring, oid, policy, tgt);
	struct sd_node nodes[SD_MAX_COPIES];
	uint32_t size = sd_obj_size(oid, vdi_shift(oid_to_vid(oid)));

	if (n < 0 || !rebuild_fn)
		return -1;
	for (int i = 0; i < n; i++)
		nodes[i] = ring->nodes[tgt[i]];
	rebuild_fn(oid, policy, size, nodes, n, idx, done, arg);
	return 0;
}

void strips_drop_misplaced(const struct strip_keep *k, size_t nr,
			   const bool *stop)
{
	size_t dropped = 0;

	for (size_t i = 0; i < nr; i++) {
		for (int j = 0; j < k[i].n; j++) {
			struct obj_key key = { .oid = k[i].oid,
					       .idx = (uint8_t)j };

			if (__atomic_load_n(stop, __ATOMIC_RELAXED))
				goto out;
			if (j != k[i].keep &&
			    store_remove(key) == SD_RES_SUCCESS)
				dropped++;
		}
	}
out:
	if (dropped)
		sd_info("%zu strip(s) this node no longer holds removed",
			dropped);
}
