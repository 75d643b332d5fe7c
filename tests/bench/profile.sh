#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Where the time of the 3 nodes / 3 copies 4 KiB write row goes:
#   tests/bench/profile.sh [SECONDS]       (as root, after make; needs perf)
#
# Starts three sheep on loopback (store synced, as in production), a
# preallocated VDI, and records every sheep with `perf record -g` while
# `dog benchmark io` writes 4 KiB blocks at depth 32: once durable (no
# cache flag: every copy synced before the answer) and once cached (what
# QEMU's writeback modes send).  Prints the benchmark's line and perf's
# top symbols (self time, all sheep together) for each.  Not part of make
# check; its output goes in tests/bench/README.md.
set -u
cd "$(dirname "$0")/../.."
SECS=${1:-15}
command -v perf >/dev/null || { echo "perf is not installed"; exit 1; }
T=$(mktemp -d /tmp/kelpie-profile.XXXXXX)
PORT=$((20000 + RANDOM % 20000))
pids=()
stop() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap stop EXIT
for i in 0 1 2; do
	sheep/sheep -p $((PORT + i)) -c "local:$T/cluster" -z "$i" \
		-P "$T/pid$i" "$T/n$i" || exit 1
	pids+=("$(cat "$T/pid$i")")
done
sleep 2
dog() { dog/dog "$@" -p "$PORT"; }
dog cluster format -c 3 >/dev/null || exit 1
dog vdi create -P p 256M || exit 1

profile() {
	local name=$1
	shift
	perf record -q -F 999 -g -o "$T/$name.data" \
		-p "$(IFS=,; echo "${pids[*]}")" -- sleep $((SECS + 2)) \
		>/dev/null 2>&1 &
	local rec=$!
	sleep 1
	echo "== $name: dog benchmark io $*"
	dog benchmark io -w randwrite -b 4K -q 32 -s "$SECS" -N -f -j "$@" p |
		tail -n 1
	wait "$rec"
	perf report -i "$T/$name.data" --no-children --sort dso,sym \
		--stdio -g none 2>/dev/null | grep -v '^#' | grep '%' |
		head -n 20
}
profile durable -D
profile cached
