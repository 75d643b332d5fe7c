#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A by-hand measurement (doc/scale.md), not a test: N sheep on this host
# (local driver, copies 3, two I/O threads each), MB of data written, then
# one more node joins.  Prints when the members logged the new epoch (the
# first and the last), when recovery was done everywhere, and the peak
# resident memory of the sheep (VmHWM) over the whole run.
#
#   bash tests/scale/join-local.sh N [MB]      (MB default 1024)
#
# SHEEP_BIN and DOG_BIN choose the binaries (default: this tree's).
N=${1:?usage: join-local.sh N [MB]}
MB=${2:-1024}
export NR_PORTS=$((2 * (N + 1) + 8))
. "$(dirname "$0")/../functional/common.sh"
. "$(dirname "$0")/scale_lib.sh"

epoch_times()	# the time each node logged the epoch with N+1 members
{
	local i
	for ((i = 0; i <= N; i++)); do
		grep "new_epoch.*: $((N + 1)) node(s)" "$T/$i/sheep.log" |
			tail -n 1 | awk '{ print $3 }'
	done | sort
}

scale_start "$N"
if [ "$MB" -gt 0 ]; then
	dog vdi create v "${MB}M" || _fail "create failed"
	head -c $((MB << 20)) /dev/urandom | dog vdi write v || _fail "write failed"
fi
t0=$(date +%s.%N)
start_sheep "$N" -w io=2
end=$((SECONDS + 300))
until [ "$(epoch_times | grep -c .)" -eq $((N + 1)) ]; do
	[ $SECONDS -lt $end ] || _fail "the new epoch is not everywhere after 300 s"
	sleep 0.2
done
wait_for_recovery 600
t2=$(date +%s.%N)
times=$(epoch_times)
hwm=$(for ((i = 0; i <= N; i++)); do
	awk '/^VmHWM/ { print $2 }' "/proc/$(sheep_pid "$i")/status"
done | sort -n | awk '{ a[NR] = $1 } END { printf "%d-%d", a[1] / 1024, a[NR] / 1024 }')
printf "N=%d MB=%d join at %s; new epoch logged %s .. %s; recovery done after %.1f s; peak RSS %s MiB\n" \
	"$N" "$MB" "$(date -d "@$t0" +%T.%N | cut -c1-12)" \
	"$(head -n 1 <<<"$times")" "$(tail -n 1 <<<"$times")" \
	"$(echo "$t2 - $t0" | bc)" "$hwm"
