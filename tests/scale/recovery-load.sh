#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A by-hand measurement (doc/scale.md), not a test: what recovery costs a
# client.  N sheep on this host (local driver, copies 3, two I/O threads
# each), MB of data in one VDI and a 64 MiB VDI a client writes at depth
# 1 through node 0 (`dog benchmark io -L`, 4 KiB random writes).  For
# BASE_SECS (5) without recovery (the baseline), then node N-1 is
# SIGKILLed, and on until every node has recovered.
# Prints, for the baseline and for the recovery's time, the writes a
# second and their latency percentiles; the writes that took over 50 ms
# (when, after the kill); the recovery's time and the data it moved per
# second and surviving node, as the polls saw them; and from the nodes'
# logs, when the new epoch was logged and when recovery was done, from
# the first node to the last.
#
#   bash tests/scale/recovery-load.sh N [MB [MAX:INTERVAL_MS]]
#
# MAX:INTERVAL_MS sets `dog node recovery set-throttle MAX INTERVAL_MS`
# on every node first (an adaptive throttle is a sheep option:
# SCALE_SHEEP_ARGS="-R max=1,interval=100,adaptive").  CLIENT=0: no
# client, only the recovery's time.  SHEEP_BIN and DOG_BIN choose the
# binaries.
N=${1:?usage: recovery-load.sh N [MB [MAX:INTERVAL_MS]]}
MB=${2:-1024}
THROTTLE=${3:-}
BASE_SECS=${BASE_SECS:-5}
CLIENT=${CLIENT:-1}
export NR_PORTS=$((2 * N + 8))
. "$(dirname "$0")/../functional/common.sh"
. "$(dirname "$0")/scale_lib.sh"

# summary FROM TO: the writes that completed within [FROM, TO] (seconds
# from the client's start), from the latency log
summary()
{
	python3 - "$T/lat" "$1" "$2" <<'PY'
import sys
lo, hi = float(sys.argv[2]) * 1e6, float(sys.argv[3]) * 1e6
lat = sorted(int(l.split()[1]) for l in open(sys.argv[1])
             if lo <= int(l.split()[0]) <= hi)
if not lat:
    print("no write")
    sys.exit()
pct = lambda p: lat[min(len(lat) - 1, int(p / 100 * len(lat)))]
print(f"{len(lat)} writes, {len(lat) / (hi - lo) * 1e6:.0f} a second: p50 "
      f"{pct(50)} us, p99 {pct(99)} us, p99.9 {pct(99.9)} us, max {lat[-1]} us")
PY
}

# stalls FROM: the writes that took over 50 ms, when they completed (s
# after FROM) and how long they took
stalls()
{
	awk -v t0="$1" '$2 > 50000 { printf " %.2f:%dms", $1 / 1e6 - t0, $2 / 1000 }' \
		"$T/lat"
}

recovering()	# is any running node still recovering?
{
	local i out
	for i in $(running_nodes); do
		out=$(dog_at "$i" node recovery 2>/dev/null) || return 0
		_nr_lines "$out"
		[ "$NR_LINES" -eq 2 ] || return 0
	done
	return 1
}

scale_start "$N"
dog vdi create v "${MB}M" || _fail "create v failed"
head -c $((MB << 20)) /dev/urandom | dog vdi write v || _fail "write v failed"
dog vdi create c 64M || _fail "create c failed"
head -c 64M /dev/urandom | dog vdi write c || _fail "write c failed"
if [ -n "$THROTTLE" ]; then
	for ((i = 0; i < N; i++)); do
		dog_at "$i" node recovery set-throttle "${THROTTLE%:*}" \
			"${THROTTLE#*:}" || _fail "set-throttle on node $i"
	done
fi

ts=$(date +%s.%N)
if [ "$CLIENT" = 1 ]; then
	"$DOG_BIN" benchmark io -j -f -s 600 -w randwrite -l 64M \
		-L "$T/lat" -p "${PORT[0]}" c >"$T/bench" &
	bpid=$!
	sleep "$BASE_SECS"
fi
objs=$(metric_sum $((N - 1)) kelpie_objects)
killed=$(date +%s.%N)
t0=$(echo "$killed - $ts" | bc)
ep=$(current_epoch 0)
kill_sheep $((N - 1))
wait_for_nodes $((N - 1))
sleep 0.5	# the recovery starts at the new epoch
while recovering; do
	sleep 0.2
done
t1=$(echo "$(date +%s.%N) - $ts" | bc)
secs=$(echo "$t1 - $t0" | bc)
printf "N=%d MB=%d throttle=%s%s\n" "$N" "$MB" "${THROTTLE:-none}" \
	"${SCALE_SHEEP_ARGS:+ sheep $SCALE_SHEEP_ARGS}"
if [ "$CLIENT" = 1 ]; then
	sleep 2
	kill -INT "$bpid"
	wait "$bpid"
	[ -s "$T/lat" ] || _fail "no latency log: $(cat "$T/bench")"
	printf "  no recovery:     %s\n" "$(summary 0.5 "$t0")"
	printf "  during recovery: %s\n" "$(summary "$t0" "$t1")"
	printf "  writes over 50 ms (s after the kill:ms):%s\n" \
		"$(stalls "$t0")"
else
	echo "  no client"
fi
printf "  node %d killed, held %s objects; the polls saw recovery done on all after %.1f s (%.1f MiB/s per surviving node)\n" \
	$((N - 1)) "${objs:-?}" "$secs" \
	"$(echo "${objs:-0} * 4 / $secs / $((N - 1))" | bc -l)"
# the polls above ask every node in turn: at 100 nodes a round takes
# seconds, so the logs tell when it happened
printf "  from the logs, after the kill: epoch %d logged %s, recovery done %s\n" \
	$((ep + 1)) "$(log_spread "] epoch $((ep + 1)): " "$killed")" \
	"$(log_spread "recovery of epoch $((ep + 1)) done" "$killed")"
