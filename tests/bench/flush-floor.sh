#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The floor of a 4 KiB write and its flush at depth 1 on this host, beside
# what Kelpie takes (issue 39, scope 1):
#   tests/bench/flush-floor.sh [SECONDS]     (as root, after make; needs fio)
#
# 1. The disk: fio writes 4 KiB blocks with an fdatasync after each, in the
#    store's file system, with one job and with three at once (three
#    copies on one host are three syncs on one device at the same time).
# 2. Kelpie: three sheep on loopback (copies 3, store synced), `dog
#    benchmark io -F` (a cached write, then FLUSH_VDI) at depth 1; then
#    the same cluster started with -n (nothing synced): the software's
#    part.  And cached writes alone, for the cost of the write's round.
# Prints one line per row: what, IOPS, p50 and p99 in µs.  Not part of
# make check; its figures go in tests/bench/NOTEBOOK.md.
set -u
cd "$(dirname "$0")/../.." || exit 1
SECS=${1:-10}
command -v fio >/dev/null || { echo "fio is not installed"; exit 1; }
T=$(mktemp -d /tmp/kelpie-floor.XXXXXX) || exit 1
PORT=$((20000 + RANDOM % 20000))
pids=()

stop_sheep()
{
	local p

	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
	done
	pids=()
}
trap 'stop_sheep; rm -rf "$T"' EXIT

row() { printf '%-52s %8s IOPS  p50 %7s µs  p99 %7s µs\n' "$@"; }

# fio JOBS: one line per job count, IOPS per job, clat percentiles of the
# syncs and the writes summed (fio reports them apart)
disk()
{
	local jobs=$1 out iops w50 w99 s50 s99

	out=$(fio --name=floor --directory="$T" --size=64M --bs=4k \
		--rw=randwrite --fdatasync=1 --numjobs="$jobs" \
		--runtime="$SECS" --time_based --group_reporting \
		--ioengine=psync --output-format=json 2>/dev/null) || return 1
	read -r iops w50 w99 s50 s99 < <(python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
w = j["write"]["clat_ns"]["percentile"]
s = j["sync"]["lat_ns"]["percentile"]
print(int(j["write"]["iops"]), w["50.000000"] / 1e3, w["99.000000"] / 1e3,
      s["50.000000"] / 1e3, s["99.000000"] / 1e3)' <<<"$out")
	rm -f "$T"/floor.*
	row "disk: 4 KiB write + fdatasync, $jobs job(s), per job" \
		"$((iops / jobs))" "$(printf '%.0f' "$(echo "$w50 + $s50" | bc)")" \
		"$(printf '%.0f' "$(echo "$w99 + $s99" | bc)")"
}

# cluster [sheep options]: three sheep, copies 3, a preallocated VDI
cluster()
{
	local i

	rm -rf "$T/c"
	for i in 0 1 2; do
		sheep/sheep "$@" -p $((PORT + i)) -c "local:$T/c/cluster" \
			-z "$i" -P "$T/c/pid$i" "$T/c/n$i" || return 1
		pids+=("$(cat "$T/c/pid$i")")
	done
	sleep 2
	dog/dog cluster format -c 3 -p "$PORT" >/dev/null || return 1
	dog/dog vdi create -P p 256M -p "$PORT" || return 1
}

# bench WHAT [dog benchmark options]
bench()
{
	local what=$1 out

	shift
	out=$(dog/dog benchmark io -w randwrite -b 4K -q 1 -s "$SECS" -N -f \
		-j -l 64M "$@" -p "$PORT" p) || return 1
	read -r iops p50 p99 < <(python3 -c '
import json, sys
j = json.loads(sys.stdin.read().strip().splitlines()[-1])
print(int(j["iops"]), j["lat_us"]["p50"], j["lat_us"]["p99"])' <<<"$out")
	row "$what" "$iops" "$(printf '%.0f' "$p50")" "$(printf '%.0f' "$p99")"
}

echo "== $(date -u '+%F %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null), load $(cut -d' ' -f1-3 /proc/loadavg), $SECS s per row"
disk 1 || echo "fio failed"
disk 3 || echo "fio failed"
cluster || exit 1
bench "kelpie 3n/3c: 4 KiB write + FLUSH_VDI, depth 1" -F
bench "kelpie 3n/3c: 4 KiB cached write, depth 1"
stop_sheep
cluster -n || exit 1
bench "kelpie 3n/3c -n: 4 KiB write + FLUSH_VDI, depth 1" -F
bench "kelpie 3n/3c -n: 4 KiB cached write, depth 1"
