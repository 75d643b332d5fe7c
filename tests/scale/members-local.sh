#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A by-hand measurement (doc/scale.md), not a test: N sheep on this host
# (copies 3, two I/O threads each, the local driver or, with
# KELPIE_DRIVER=zookeeper, ZooKeeper), MB of data written; then K nodes
# are started at once, and later the same K are killed with
# one SIGKILL each at the same moment.  For each change: when the members
# logged the epoch with the new member count (first and last, from the
# start of the change) and when recovery was done everywhere.
#
#   bash tests/scale/members-local.sh N K [MB]      (MB default 0)
N=${1:?usage: members-local.sh N K [MB]}
K=${2:?usage: members-local.sh N K [MB]}
MB=${3:-0}
export NR_PORTS=$((2 * (N + K) + 8))
. "$(dirname "$0")/../functional/common.sh"
. "$(dirname "$0")/scale_lib.sh"

# seconds from $1 (date +%s.%N) to when each of nodes $3.. logged an
# epoch of $2 members after $1, sorted; "-" for a node that did not
epoch_delays()
{
	local t0=$1 m=$2 i ts d
	shift 2
	for i in "$@"; do
		ts=$(grep "new_epoch.*: $m node(s)" "$T/$i/sheep.log" |
			tail -n 1 | awk '{ print $3 }')
		d=-
		[ -n "$ts" ] &&
			d=$(echo "$(date -d "$(date +%F) $ts" +%s.%N) - $t0" | bc)
		case $d in -*) echo - ;; *) echo "$d" ;; esac
	done | sort -g
}

# wait until nodes $3.. all logged an epoch of $2 members after $1
wait_epoch_everywhere()
{
	local t0=$1 m=$2 end=$((SECONDS + 300))
	shift 2
	until ! epoch_delays "$t0" "$m" "$@" | grep -q -- '^-$'; do
		[ $SECONDS -lt $end ] ||
			_fail "the epoch of $m members is not everywhere after 300 s"
		sleep 0.2
	done
}

# node 0's epochs since $1: "members@seconds" each
epoch_steps()
{
	local t0=$1 ts m
	grep "new_epoch" "$T/0/sheep.log" | awk '{ print $3, $(NF - 1) }' |
		while read -r ts m; do
			d=$(echo "$(date -d "$(date +%F) $ts" +%s.%N) - $t0" | bc)
			case $d in -*) ;; *) printf "%s@%.2f " "$m" "$d" ;; esac
		done
	echo
}

report()	# WHAT T0 MEMBERS NODES...
{
	local what=$1 t0=$2 m=$3 d
	shift 3
	d=$(epoch_delays "$t0" "$m" "$@")
	wait_for_recovery 600
	printf "N=%d K=%d MB=%d %s: epoch of %d members logged after %.2f .. %.2f s; recovery done after %.1f s\n" \
		"$N" "$K" "$MB" "$what" "$m" "$(head -n 1 <<<"$d")" \
		"$(tail -n 1 <<<"$d")" "$(echo "$(date +%s.%N) - $t0" | bc)"
	echo "  node 0's epochs (members@seconds): $(epoch_steps "$t0")"
}

scale_start "$N"
if [ "$MB" -gt 0 ]; then
	dog vdi create v "${MB}M" || _fail "create failed"
	head -c $((MB << 20)) /dev/urandom | dog vdi write v || _fail "write failed"
fi

all=$(seq 0 $((N + K - 1)))
t0=$(date +%s.%N)
# side by side (a rack powered on): a sheep's start waits a while for
# its join, so one after the other would space the joins out
starters=()
for ((i = N; i < N + K; i++)); do
	start_sheep "$i" -w io=2 &
	starters+=($!)
done
for p in "${starters[@]}"; do
	wait "$p" || _fail "a sheep did not start"
done
# shellcheck disable=SC2086
wait_epoch_everywhere "$t0" $((N + K)) $all
# shellcheck disable=SC2086
report "$K joined" "$t0" $((N + K)) $all

pids=()
for ((i = N; i < N + K; i++)); do
	pids+=("$(sheep_pid "$i")")
done
t0=$(date +%s.%N)
kill -KILL "${pids[@]}"
# shellcheck disable=SC2086
wait_epoch_everywhere "$t0" "$N" $(seq 0 $((N - 1)))
# shellcheck disable=SC2086
report "$K killed" "$t0" "$N" $(seq 0 $((N - 1)))
