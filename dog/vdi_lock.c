// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi lock list|unlock (dog.md §2.19, cluster.md §12): show the lock
 * state the sheep keep for every VDI and force-release a lock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dog.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "vdi.h"

#define VDI_STATE_SIZE		1428
#define INITIAL_STATES		512

#define SHARED_MODIFIED		1
#define SHARED_SHARED		2
#define SHARED_INVALIDATED	3

_Static_assert(sizeof(struct vdi_state) == VDI_STATE_SIZE, "vdi_state");

/*
 * GET_VDI_COPIES, growing the buffer on BUFFER_SMALL.  Returns the number
 * of states (sorted by vid) or -1 after printing why.
 */
static int fetch_vdi_states(struct vdi_state **out)
{
	uint32_t nr = INITIAL_STATES;
	struct vdi_state *states;
	struct sd_req req;
	struct sd_rsp rsp;
	uint8_t *buf;
	int n;

	for (;;) {
		buf = xzalloc((size_t)nr * VDI_STATE_SIZE);
		sd_init_req(&req, SD_OP_GET_VDI_COPIES);
		req.data_length = nr * VDI_STATE_SIZE;
		if (dog_exec(&req, buf, req.data_length, &rsp)) {
			free(buf);
			return -1;
		}
		if (rsp.result != SD_RES_BUFFER_SMALL || nr >= SD_NR_VDIS)
			break;
		free(buf);
		nr *= 2;
	}
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to get the VDI states: %s\n",
			sd_strerror(rsp.result));
		free(buf);
		return -1;
	}
	n = (int)(MIN(rsp.data_length, req.data_length) / VDI_STATE_SIZE);
	states = xzalloc(sizeof(*states) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		vdi_state_decode(&states[i], buf + (size_t)i * VDI_STATE_SIZE);
	free(buf);
	/* insertion sort by vid: the table comes in hash order */
	for (int i = 1; i < n; i++) {
		struct vdi_state v = states[i];
		int j = i;

		for (; j > 0 && states[j - 1].vid > v.vid; j--)
			states[j] = states[j - 1];
		states[j] = v;
	}
	*out = states;
	return n;
}

static void print_nid(const struct node_id *nid)
{
	static const uint8_t zero[12];
	char a[INET6_ADDRSTRLEN];
	bool v4 = !memcmp(nid->addr, zero, sizeof(zero)) && nid->addr[12];

	addr_to_str(nid->addr, a, sizeof(a));
	printf("%s ip:%s port:%u", v4 ? "IPv4" : "IPv6", a, nid->port);
}

static const char *participant_state(uint32_t s)
{
	switch (s) {
	case SHARED_MODIFIED:
		return "modified";
	case SHARED_SHARED:
		return "shared";
	case SHARED_INVALIDATED:
		return "invalidated";
	}
	return "unknown";
}

static void print_lock(const struct vdi_state *vs)
{
	struct sd_inode_header h;
	char name[SD_MAX_VDI_LEN + 1], tag[SD_MAX_VDI_TAG_LEN + 1];

	if (read_inode_header(vs->vid, &h) != SD_RES_SUCCESS)
		return;
	inode_name(&h, name);
	inode_tag(&h, tag);
	printf("%c %-8s  %5" PRIu32 "  %6" PRIx32 "  %-13s ", vdi_flag(&h),
	       name, h.snap_ctime ? h.snap_id : 0, vs->vid, tag);
	if (vs->lock_state == LOCK_STATE_LOCKED) {
		printf(" ");
		print_nid(&vs->lock_owner);
	} else {
		uint32_t nr = MIN(vs->nr_participants,
				  (uint32_t)SD_MAX_COPIES);

		for (uint32_t i = 0; i < nr; i++) {
			printf(" ");
			print_nid(&vs->participants[i]);
			printf("(%s)",
			       participant_state(vs->participants_state[i]));
		}
	}
	printf("\n");
}

/* "IPv4 ip:ADDR port:PORT" of @nid into @buf */
static void nid_str(const struct node_id *nid, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	addr_to_str(nid->addr, a, sizeof(a));
	snprintf(buf, len, "%s:%u", a, nid->port);
}

int vdi_holder(uint32_t vid, char *who, size_t len)
{
	struct vdi_state *states = NULL;
	int n = fetch_vdi_states(&states), held = 0;

	if (n < 0)
		return -1;
	for (int i = 0; i < n && !held; i++) {
		const struct vdi_state *vs = &states[i];

		if (vs->vid != vid || vs->deleted)
			continue;
		if (vs->lock_state == LOCK_STATE_LOCKED) {
			nid_str(&vs->lock_owner, who, len);
			held = 1;
		} else if (vs->lock_state == LOCK_STATE_SHARED &&
			   vs->nr_participants) {
			nid_str(&vs->participants[0], who, len);
			held = 1;
		}
	}
	free(states);
	return held;
}

bool refuse_in_use(uint32_t vid, const char *name, const char *what)
{
	char who[INET6_ADDRSTRLEN + 16];
	struct sd_inode_header h;
	int held = vdi_holder(vid, who, sizeof(who));

	/*
	 * Right after a snapshot, a client's lock is still on the snapshot
	 * (the current VDI's parent) until its next write moves it
	 */
	if (!held && read_inode_header(vid, &h) == SD_RES_SUCCESS &&
	    !h.snap_ctime && h.parent_vdi_id)
		held = vdi_holder(h.parent_vdi_id, who, sizeof(who));

	if (!held)
		return false;
	if (held > 0)
		fprintf(stderr, "Failed to %s VDI %s: a client of the sheep "
			"at %s holds it (dog vdi lock list); detach the "
			"client, or release the lock with dog vdi lock unlock "
			"%s, first\n", what, name, who, name);
	else
		fprintf(stderr, "Failed to %s VDI %s: cannot tell whether a "
			"client holds it\n", what, name);
	return true;
}

int refuse_any_in_use(const char *what)
{
	struct vdi_state *states = NULL;
	char who[INET6_ADDRSTRLEN + 16];
	struct sd_inode_header h;
	char name[SD_MAX_VDI_LEN + 1];
	int n = fetch_vdi_states(&states), held = 0;

	if (n < 0) {
		fprintf(stderr, "Failed to %s: cannot tell whether clients "
			"hold VDIs\n", what);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (states[i].deleted ||
		    states[i].lock_state != LOCK_STATE_LOCKED)
			continue;
		if (read_inode_header(states[i].vid, &h) == SD_RES_SUCCESS)
			inode_name(&h, name);
		else
			snprintf(name, sizeof(name), "%" PRIx32, states[i].vid);
		nid_str(&states[i].lock_owner, who, sizeof(who));
		fprintf(stderr, "Failed to %s: a client of the sheep at %s "
			"holds VDI %s (dog vdi lock list); detach the client, "
			"or release the lock with dog vdi lock unlock %s, "
			"first\n", what, who, name, name);
		held++;
	}
	free(states);
	return held;
}

int lock_list(int argc, char **argv)
{
	struct vdi_state *states = NULL;
	int n = fetch_vdi_states(&states);

	if (n < 0)
		return EXIT_SYSFAIL;
	if (!raw_output)
		printf("  Name         Id  VDI id  Tag            Owner "
		       "node(s)\n");
	for (int i = 0; i < n; i++) {
		if (states[i].deleted ||
		    (states[i].lock_state != LOCK_STATE_LOCKED &&
		     states[i].lock_state != LOCK_STATE_SHARED))
			continue;
		print_lock(&states[i]);
	}
	free(states);
	return EXIT_SUCCESS;
}

int lock_unlock(int argc, char **argv)
{
	const char *name = argv[0];
	struct vdi_state *states = NULL;
	struct sd_req req;
	char desc[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN + 64];
	uint32_t vid, type = 0;
	bool locked = false;
	int n, ret;

	if (find_vdi(name, vopt.snapid, vopt.tag, &vid) != SD_RES_SUCCESS)
		return EXIT_FAILURE;
	if (vopt.snapid)
		snprintf(desc, sizeof(desc), "%s (snapshot id %" PRIu32 ")",
			 name, vopt.snapid);
	else if (vopt.tag[0])
		snprintf(desc, sizeof(desc), "%s (snapshot tag %s)", name,
			 vopt.tag);
	else
		snprintf(desc, sizeof(desc), "%s", name);

	n = fetch_vdi_states(&states);
	if (n < 0)
		return EXIT_SYSFAIL;
	for (int i = 0; i < n; i++) {
		if (states[i].vid != vid)
			continue;
		if (states[i].lock_state == LOCK_STATE_LOCKED) {
			locked = true;
			type = 0;
		} else if (states[i].lock_state == LOCK_STATE_SHARED) {
			locked = true;
			type = 1;
		}
	}
	free(states);
	if (!locked) {
		fprintf(stderr, "VDI %s is not locked\n", desc);
		return EXIT_FAILURE;
	}

	sd_init_req(&req, SD_OP_RELEASE_VDI);
	req.vdi.base_vdi_id = vid;
	req.vdi.type = type;
	ret = dog_light_req(&req);
	if (ret) {
		fprintf(stderr, "Failed to unlock VDI %s\n", desc);
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}
