#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A by-hand measurement (doc/scale.md), not a test: 3 sheep (copies 3,
# local driver, -n) each on an emulated host of its own
# (tests/functional/netns_lib.sh), for each link setting: 4 KiB random
# writes (cached), durable writes, write + flush and reads at depth 1
# and writes at depth 32, with dog benchmark io through node 0 for SECS
# seconds each.  A setting is "DELAY_US:LOSS_PPM" per direction, so a
# round trip between two nodes costs twice the delay; "0:0" has no
# netdelay at all (the bridge only).
#
#   bash tests/scale/latency-netns.sh [SECS] [SETTING...]
#   (default 5 s; 0:0 50:0 250:0 1000:0 250:1000 250:10000)
SECS=${1:-5}
shift
SETTINGS=("$@")
[ ${#SETTINGS[@]} -gt 0 ] ||
	SETTINGS=(0:0 50:0 250:0 1000:0 250:1000 250:10000)
. "$(dirname "$0")/../functional/common.sh"
. "$(dirname "$0")/../functional/netns_lib.sh"

row()
{
	local name=$1 out
	shift
	out=$(ns_dog 0 benchmark io -f -j -s "$SECS" -l 64M "$@" bench) ||
		_fail "dog benchmark io $*: $out"
	python3 -c '
import json, sys
r = json.loads(sys.argv[2])
print("| %s | %s | %.0f | %.0f | %.0f | %d |" % (sys.argv[1], sys.argv[3],
      r["iops"], r["lat_us"]["p50"], r["lat_us"]["p99"], r["errors"]))
' "$name" "$out" "$SETTING"
}

echo "| workload | delay µs:loss ppm per direction | IOPS | p50 µs | p99 µs | errors |"
echo "|---|---|--:|--:|--:|--:|"
run=0
for SETTING in "${SETTINGS[@]}"; do
	d=${SETTING%:*}
	l=${SETTING#*:}
	NS_PREFIX=k$$r$run
	run=$((run + 1))
	net_setup 3 "$d" 0 "$l"
	for i in 0 1 2; do
		ns_start_sheep $i
	done
	ns_wait_nodes 3 0 1 2
	ns_dog 0 cluster format -c 3 >/dev/null || _fail "format"
	ns_dog 0 vdi create -P bench 64M || _fail "create"
	row "write QD1" -w randwrite -q 1
	row "durable write QD1" -w randwrite -q 1 -D
	row "write + flush QD1" -w randwrite -q 1 -F
	row "read QD1" -w randread -q 1
	row "write QD32" -w randwrite -q 32
	stop_all
	_ns_cleanup
	rm -rf "$T"/[0-9]* "$T/cluster"
done
