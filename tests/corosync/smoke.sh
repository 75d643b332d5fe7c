#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# End-to-end check of sheep with the corosync cluster driver:
#
#   bash tests/corosync/smoke.sh        (after make; from anywhere)
#
# Starts (or reuses) a one-node corosync with tests/corosync/start.sh, then
# three sheep with `-c corosync:GROUP` (a group of its own) on free ports
# from KELPIE_SMOKE_PORT (default 7400) and checks: format, node list, VDI
# write/read through every node, a SIGKILLed sheep seen leaving, its restart,
# cluster shutdown and restart of all three, concurrent VDI creation from
# all nodes, and -- only with a corosync of its own -- that sheep stop when
# corosync goes away and refuse to start without it.
#
# Prints one line per check and ends with "N passed, N failed" (plus
# ", N skipped" when checks could not run, e.g. no corosync on the machine);
# exits 1 if anything failed.  Daemons are stopped by pid; the directory is
# kept on failure.

set -u
# As root, in a network namespace of its own (a corosync's IPC sockets are
# per network namespace): its corosync is then its own even while other
# suites share the host's, and the checks that stop corosync can run.
if [ -z "${KELPIE_SMOKE_NETNS:-}" ] && [ "$(id -u)" = 0 ] &&
	unshare -n true 2>/dev/null; then
	exec env KELPIE_SMOKE_NETNS=1 unshare -n -- bash "$0" "$@"
fi
[ -n "${KELPIE_SMOKE_NETNS:-}" ] && ip link set lo up
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SHEEP=$TOP/sheep/sheep
DOG=$TOP/dog/dog
T=$(mktemp -d /tmp/kelpie-cssmoke.XXXXXX) || exit 1
GROUP=kelpie-smoke-$$
NR=3
NR_CHECKS=26	# every check below, for the skip count
PASS=0
FAIL=0
SKIP=0
PORT=()
PIDS=()
OWN_COROSYNC=0

ok() { echo "ok   $*"; PASS=$((PASS + 1)); }
bad() { echo "FAIL $*"; FAIL=$((FAIL + 1)); }
skip() { echo "SKIP $*"; SKIP=$((SKIP + 1)); }

check()
{
	local desc=$1

	shift
	if "$@"; then ok "$desc"; else bad "$desc"; fi
}

summary()
{
	if [ $SKIP -gt 0 ]; then
		echo "$PASS passed, $FAIL failed, $SKIP skipped"
	else
		echo "$PASS passed, $FAIL failed"
	fi
}

alive()
{
	[ -n "$1" ] && [ -e "/proc/$1" ] &&
		! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# a sheep of ours: alive, and its command line names our directory
ours() { alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$T/"; }

cleanup()
{
	local p

	for p in "${PIDS[@]}"; do
		ours "$p" && kill -KILL "$p" 2>/dev/null
	done
	bash "$TOP/tests/corosync/stop.sh" "$T/corosync" >/dev/null 2>&1
	if [ $FAIL -eq 0 ]; then
		rm -rf "$T"
	else
		echo "kept $T"
	fi
}
trap cleanup EXIT

port_free()
{
	local hex

	hex=$(printf ':%04X' "$1")
	! awk -v p="$hex" 'NR > 1 && substr($2, length($2) - 4) == p { f = 1 }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

pick_ports()
{
	local base=${KELPIE_SMOKE_PORT:-7400} try i

	for ((try = 0; try < 20; try++, base += 10)); do
		for ((i = 0; i < NR; i++)); do
			port_free $((base + i)) || continue 2
		done
		for ((i = 0; i < NR; i++)); do
			PORT[i]=$((base + i))
		done
		return 0
	done
	return 1
}

dog_at()
{
	local i=$1

	shift
	timeout 60 "$DOG" "$@" -p "${PORT[i]}"
}

# run a command with its output in $T/dog.log
quiet() { "$@" >>"$T/dog.log" 2>&1; }

start_node()
{
	local i=$1

	"$SHEEP" -p "${PORT[i]}" -c "corosync:$GROUP" -n -z "$i" \
		-P "$T/pid$i" "$T/n$i" </dev/null >>"$T/start.log" 2>&1 ||
		return 1
	PIDS[i]=$(cat "$T/pid$i" 2>/dev/null)
	ours "${PIDS[i]}"
}

# retry SECONDS COMMAND...
retry()
{
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

nr_nodes_is() { [ "$(dog_at "$1" node list -r 2>/dev/null | grep -c .)" = "$2" ]; }
status_is() { dog_at "$1" cluster info 2>/dev/null | head -n 1 | grep -qF "$2"; }
epoch_of() { dog_at "$1" cluster info -r 2>/dev/null | awk 'NR == 2 { print $2; exit }'; }

all_nodes_are()
{
	local n=$1 i

	shift
	for i in "$@"; do
		nr_nodes_is "$i" "$n" || return 1
	done
}

all_running()
{
	local i

	for i in "$@"; do
		status_is "$i" "running" || return 1
	done
}

reads_back()
{
	local i

	for i in "$@"; do
		dog_at "$i" vdi read v | cmp -s - "$T/data" || return 1
	done
}

all_gone()
{
	local p

	for p in "$@"; do
		alive "$p" && return 1
	done
	return 0
}

# ------------------------------------------------------------------------
if [ ! -x "$SHEEP" ] || [ ! -x "$DOG" ]; then
	echo "build first (make): $SHEEP or $DOG missing"
	FAIL=1
	summary
	exit 1
fi
bash "$TOP/tests/corosync/start.sh" "$T/corosync"
rc=$?
if [ $rc -ne 0 ]; then
	echo "corosync cannot run here (start.sh exited $rc)"
	SKIP=$NR_CHECKS
	summary
	exit 0
fi
[ -e "$T/corosync/reused" ] || OWN_COROSYNC=1
if ! pick_ports; then
	bad "no free ports"
	summary
	exit 1
fi
echo "== group $GROUP, ports ${PORT[*]}, directory $T"

# -- 1. a new cluster
started=1
for ((i = 0; i < NR; i++)); do
	start_node $i || started=0
done
check "three sheep daemonise with -c corosync" test $started = 1
check "format" quiet dog_at 0 cluster format -c 3
check "every node is running" retry 10 all_running 0 1 2
check "node list shows 3 nodes on every node" all_nodes_are 3 0 1 2

# -- 2. data through every node
head -c $((48 << 20)) /dev/urandom >"$T/data"
check "vdi create" quiet dog_at 0 vdi create v 48M
check "vdi write" dog_at 1 vdi write v <"$T/data"
check "vdi read through every node is identical" reads_back 0 1 2

# -- 3. a sheep is SIGKILLed
e1=$(epoch_of 0)
kill -KILL "${PIDS[1]}"
t0=$(date +%s%3N)
if retry 5 all_nodes_are 2 0 2; then
	ok "the others see the killed sheep leave ($(($(date +%s%3N) - t0)) ms)"
else
	bad "the others see the killed sheep leave within 5 s"
fi
check "the epoch went up by one" test "$(epoch_of 2)" = $((e1 + 1))
check "data still reads back" reads_back 0 2
check "the killed sheep restarts" start_node 1
check "... and is a member again" retry 10 all_nodes_are 3 0 1 2
check "... and serves the data" reads_back 1

# -- 4. cluster shutdown and restart
e2=$(epoch_of 0)
check "cluster shutdown" quiet dog_at 2 cluster shutdown
check "every sheep exits" retry 15 all_gone "${PIDS[@]}"
started=1
for i in 2 0 1; do
	start_node $i || started=0
	sleep 0.3
done
check "all three restart" test $started = 1
check "the cluster is running again" retry 15 all_running 0 1 2
check "... with the same epoch" test "$(epoch_of 1)" = "$e2"
check "... and 3 nodes" all_nodes_are 3 0 1 2
check "data reads back after the restart" reads_back 0 1 2

# -- 5. concurrent VDI creation from every node
for i in 0 1 2; do
	(
		for k in $(seq 1 15); do
			dog_at $i vdi create "c$i-$k" 4M >/dev/null 2>&1 ||
				echo "c$i-$k" >>"$T/create.fail"
		done
	) &
done
wait
check "45 concurrent creates from 3 nodes succeed" test ! -e "$T/create.fail"
dog_at 0 vdi list -r >"$T/list0" 2>/dev/null
check "46 VDIs with 46 distinct ids" test \
	"$(grep -c . "$T/list0") $(awk '{ print $8 }' "$T/list0" | sort -u | grep -c .)" = "46 46"
same_lists() {
	dog_at 1 vdi list -r 2>/dev/null | cmp -s - "$T/list0" &&
	dog_at 2 vdi list -r 2>/dev/null | cmp -s - "$T/list0"
}
check "every node lists the same VDIs" same_lists

# -- 6. corosync itself goes away (only with a corosync of our own)
if [ $OWN_COROSYNC = 1 ]; then
	bash "$TOP/tests/corosync/stop.sh" -f "$T/corosync" >/dev/null
	check "every sheep stops when corosync is gone" \
		retry 15 all_gone "${PIDS[@]}"
	check "a sheep refuses to start without corosync" \
		bash -c "! '$SHEEP' -p ${PORT[0]} -c corosync:$GROUP -n \
			-P '$T/pid0' '$T/n0' </dev/null >/dev/null 2>&1"
	check "... and says why" grep -q "cannot connect to corosync" \
		"$T/n0/sheep.log"
else
	skip "sheep stop when corosync is gone (corosync was reused)"
	skip "a sheep refuses to start without corosync (corosync was reused)"
	skip "... and says why"
	for p in "${PIDS[@]}"; do
		ours "$p" && kill -TERM "$p"
	done
	retry 10 all_gone "${PIDS[@]}"
fi

summary
[ $FAIL -eq 0 ]
