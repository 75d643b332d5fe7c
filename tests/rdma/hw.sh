#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The RDMA functional test (tests/functional/127) on a real device or
# soft-RoCE instead of the emulation:
#
#   KELPIE_RDMA_ADDR=192.0.2.10 bash tests/rdma/hw.sh
#
# KELPIE_RDMA_ADDR is an address of this host on the RDMA device's
# network interface (for soft-RoCE: `rdma link add rxe0 type rxe netdev
# eth0`, then eth0's address).  The three sheep of the test listen for
# RDMA on it; their TCP ports stay on 127.0.0.1.  Without a device (no
# entry in /sys/class/infiniband) the test is skipped:
# "0 passed, 0 failed, 1 skipped".

cd "$(dirname "$0")/../.." || exit 1
if [ -z "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
	echo "no RDMA device (/sys/class/infiniband is empty): skipped"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
if [ -z "${KELPIE_RDMA_ADDR:-}" ]; then
	echo "RDMA devices: $(ls /sys/class/infiniband | tr '\n' ' ')"
	echo "give KELPIE_RDMA_ADDR, an address of this host on one of them"
	exit 2
fi
export KELPIE_RDMA_ADDR
exec bash tests/functional/run.sh 127
