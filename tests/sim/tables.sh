#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The placement tables of doc/scale.md, by hand (a few minutes, up to
# 3 GiB of memory at 10,000 nodes):
#
#   make build/ringsim && bash tests/sim/tables.sh >/tmp/tables.md
#
# Each run prints its own header line; the time each took goes to stderr.
set -e
SIM=${SIM:-build/ringsim}
run()
{
	echo
	echo "\$ ringsim $*"
	echo
	"$SIM" "$@"
}

# the ring against rendezvous hashing: racks of 10 as zones, 3 copies
run -n 100 -o 1000000
run -n 1000 -o 3000000 -a ring
run -n 1000 -o 300000 -a hrw
run -n 10000 -o 30000000 -a ring
# capacities that differ, and zones per node (Sheepdog's default)
run -n 100 -o 1000000 -m -a ring
run -n 100 -o 1000000 -z node -a ring
# the same with stable vnodes (dog cluster format -S)
run -n 100 -o 1000000 -m -a ring -s
run -n 100 -o 1000000 -a ring -s
run -n 100 -o 1000000 -m -a ring -s -b 512
# erasure coding 4:2, racks as zones
run -n 100 -o 1000000 -e 4:2 -a ring
run -n 1000 -o 3000000 -e 4:2 -a ring
# the balance as vnodes grow (fixed counts, as sheep -V)
for v in 64 128 256 512 1024; do
	run -n 100 -o 1000000 -V "$v" -a ring
done
# the recovery model: 1,000 GiB per node, 10 Gbit/s and 400 MB/s a node
run -n 100 -L 1000 -o 100000
run -n 1000 -L 1000 -o 1000000
run -n 10000 -L 1000 -o 10000000
for v in 512 2048; do
	run -n 1000 -L 1000 -o 1000000 -V "$v"
done
run -n 1000 -L 1000 -o 1000000 -s -b 512
