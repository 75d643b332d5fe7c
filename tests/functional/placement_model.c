// SPDX-License-Identifier: GPL-2.0-or-later
/* placement OID COPIES PORT:ZONE:VNODES... -> target ports, in order */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hash.h"

int main(int argc, char **argv)
{
	struct sd_node nodes[64];
	struct vnode_ring ring;
	int tgt[SD_MAX_COPIES], n, nr = argc - 3;

	if (argc < 4 || nr > 64)
		return 2;
	memset(nodes, 0, sizeof(nodes));
	for (int i = 0; i < nr; i++) {
		unsigned port, zone, vnodes;

		if (sscanf(argv[3 + i], "%u:%u:%u", &port, &zone, &vnodes) != 3)
			return 2;
		nodes[i].nid.addr[12] = 127;
		nodes[i].nid.addr[15] = 1;
		nodes[i].nid.port = (uint16_t)port;
		nodes[i].zone = zone;
		nodes[i].nr_vnodes = (uint16_t)vnodes;
	}
	if (ring_build(&ring, nodes, (size_t)nr))
		return 2;
	n = ring_targets(&ring, strtoull(argv[1], NULL, 16), atoi(argv[2]),
			 tgt);
	for (int i = 0; i < n; i++)
		printf("%u\n", ring.nodes[tgt[i]].nid.port);
	ring_free(&ring);
	return 0;
}
