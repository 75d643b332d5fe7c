// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which rdma_api a process uses: the emulation when KELPIE_RDMA_EMU names
 * its rendezvous directory (tests, machines without an RDMA device), the
 * real libraries otherwise.  Read at each call: cheap, and tests can
 * switch it.
 */
#include <stdlib.h>
#include "net/rdma_api.h"

const struct rdma_api *rdma_api_get(void)
{
	const char *dir = getenv(RDMA_EMU_ENV);

	return dir && *dir ? &rdma_api_emu : &rdma_api_verbs;
}
