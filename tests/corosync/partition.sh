#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Split-brain guard of the corosync driver on a real three-node corosync
# cluster: three network namespaces ("hosts" 10.99.0.1-3) on a bridge of
# their own, one corosync per host (each in a private mount namespace, see
# start.sh), one sheep per host.
#
#   bash tests/corosync/partition.sh        (as root, after make)
#
# Checks: the cluster forms and serves data; host 3 cut off from the bridge
# loses quorum and its sheep stops while hosts 1 and 2 go on with two nodes;
# a sheep started on the cut-off host waits for quorum instead of founding a
# cluster of its own and acknowledges no write; after the cut heals it joins
# by itself and serves the data the majority wrote meanwhile.  Nothing leaves the namespaces this script creates.
#
# Ends with "N passed, N failed[, N skipped]"; exits 1 on failure.

set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SHEEP=$TOP/sheep/sheep
DOG=$TOP/dog/dog
T=$(mktemp -d /tmp/kelpie-cspart.XXXXXX) || exit 1
NS=kp$$
SW=${NS}sw
PORT=7400
NR_CHECKS=13
PASS=0
FAIL=0
SKIP=0
PIDS=()

ok() { echo "ok   $*"; PASS=$((PASS + 1)); }
bad() { echo "FAIL $*"; FAIL=$((FAIL + 1)); }

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

skip_all()
{
	echo "SKIP: $*"
	SKIP=$NR_CHECKS
	summary
	exit 0
}

alive()
{
	[ -n "$1" ] && [ -e "/proc/$1" ] &&
		! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

ours() { alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$T/"; }

cleanup()
{
	local p i

	for p in "${PIDS[@]}"; do
		ours "$p" && kill -KILL "$p" 2>/dev/null
	done
	for i in 1 2 3; do
		[ -d "$T/cs$i" ] &&
			bash "$TOP/tests/corosync/stop.sh" -f "$T/cs$i" >/dev/null 2>&1
	done
	for i in 1 2 3; do
		ip netns del "$NS$i" 2>/dev/null
	done
	ip netns del "$SW" 2>/dev/null
	if [ $FAIL -eq 0 ]; then
		rm -rf "$T"
	else
		echo "kept $T"
	fi
}
trap cleanup EXIT

retry()
{
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

on() { local i=$1; shift; ip netns exec "$NS$i" "$@"; }
dog_on() { local i=$1; shift; on "$i" timeout 60 "$DOG" "$@" -a "10.99.0.$i" -p $PORT; }
nr_nodes() { dog_on "$1" node list -r 2>/dev/null | grep -c .; }
nodes_are() { [ "$(nr_nodes "$1")" = "$2" ]; }
quorate() { on "$1" corosync-quorumtool -s >/dev/null 2>&1; }

# ------------------------------------------------------------------------
# the hosts

[ "$(id -u)" -eq 0 ] || skip_all "needs root"
command -v ip >/dev/null || skip_all "no ip(8)"
command -v corosync >/dev/null || skip_all "no corosync"
[ -x "$SHEEP" ] && [ -x "$DOG" ] || { bad "build first (make)"; summary; exit 1; }

make_hosts()
{
	local i

	ip netns add "$SW" || return 1
	ip -n "$SW" link add br0 type bridge || return 1
	ip -n "$SW" link set br0 up || return 1
	for i in 1 2 3; do
		ip netns add "$NS$i" || return 1
		ip link add "${NS}v$i" type veth peer name eth0 netns "$NS$i" ||
			return 1
		ip link set "${NS}v$i" netns "$SW" || return 1
		ip -n "$SW" link set "${NS}v$i" name "v$i" || return 1
		ip -n "$SW" link set "v$i" master br0 || return 1
		ip -n "$SW" link set "v$i" up || return 1
		ip -n "$NS$i" link set lo up || return 1
		ip -n "$NS$i" addr add "10.99.0.$i/24" dev eth0 || return 1
		ip -n "$NS$i" link set eth0 up || return 1
	done
}

# host $1's corosync.conf: three nodes, votequorum, fast token
write_conf()
{
	cat <<EOF
totem {
	version: 2
	cluster_name: kelpie-part
	transport: udpu
	crypto_cipher: none
	crypto_hash: none
	token: 1000
	consensus: 1200
	interface {
		linknumber: 0
		bindnetaddr: 10.99.0.0
		mcastport: 5405
	}
}
nodelist {
	node {
		nodeid: 1
		ring0_addr: 10.99.0.1
	}
	node {
		nodeid: 2
		ring0_addr: 10.99.0.2
	}
	node {
		nodeid: 3
		ring0_addr: 10.99.0.3
	}
}
quorum {
	provider: corosync_votequorum
	expected_votes: 3
}
system {
	state_dir: $T/cs$1/state
}
logging {
	to_stderr: no
	to_syslog: no
	to_logfile: yes
	logfile: $T/cs$1/corosync.log
	timestamp: on
}
EOF
}

make_hosts || skip_all "cannot create network namespaces"
for i in 1 2 3; do
	mkdir -p "$T/cs$i"
	write_conf $i >"$T/cs$i.conf"
	KELPIE_COROSYNC_CONF=$T/cs$i.conf on $i \
		bash "$TOP/tests/corosync/start.sh" "$T/cs$i" >/dev/null ||
		skip_all "corosync does not start in a network namespace"
done
retry 20 quorate 1 && retry 20 quorate 2 && retry 20 quorate 3 ||
	skip_all "the three corosyncs do not become quorate"
echo "== three hosts up and quorate in $T"

start_sheep()
{
	local i=$1

	on "$i" "$TOP/tests/tools/own-mounts.sh" --keep "$T" \
		"$SHEEP" -p $PORT -y "10.99.0.$i" -c corosync -n \
		-P "$T/pid$i" "$T/n$i" </dev/null >>"$T/start.log" 2>&1 ||
		return 1
	PIDS[i]=$(cat "$T/pid$i" 2>/dev/null)
	ours "${PIDS[i]}"
}

# ------------------------------------------------------------------------
started=1
for i in 1 2 3; do
	start_sheep $i || started=0
done
check "a sheep starts on every host" test $started = 1
check "the three-host cluster forms" retry 10 nodes_are 2 3
head -c $((12 << 20)) /dev/urandom >"$T/data"
{
	dog_on 1 cluster format -c 3 &&
	dog_on 1 vdi create v 12M &&
	dog_on 2 vdi write v <"$T/data"
} >>"$T/dog.log" 2>&1 || echo "     (format/create/write failed: see $T/dog.log)"
check "data written on host 2 reads back on host 3" \
	bash -c "ip netns exec ${NS}3 timeout 60 '$DOG' vdi read v -a 10.99.0.3 \
		-p $PORT | cmp -s - '$T/data'"

# host 3 off the bridge: all its packets are lost
ip -n "$SW" link set v3 nomaster
gone3() { ! alive "${PIDS[3]}"; }
t0=$SECONDS
check "the cut-off sheep stops" retry 20 gone3
echo "     (after $((SECONDS - t0)) s)"
check "... saying why" grep -qE "lost corosync quorum|minority partition" \
	"$T/n3/sheep.log"
check "hosts 1 and 2 go on with two nodes" retry 20 nodes_are 1 2
check "... and still serve the data" \
	bash -c "ip netns exec ${NS}1 timeout 60 '$DOG' vdi read v -a 10.99.0.1 \
		-p $PORT | cmp -s - '$T/data'"

# the majority keeps taking writes while host 3 is cut off
head -c $((8 << 20)) /dev/urandom >"$T/data2"
check "hosts 1 and 2 accept writes during the partition" \
	bash -c "ip netns exec ${NS}1 timeout 60 '$DOG' vdi write v 0 8388608 \
		-a 10.99.0.1 -p $PORT <'$T/data2'"
dd if="$T/data2" of="$T/data" conv=notrunc status=none
check "... which read back through host 2" \
	bash -c "ip netns exec ${NS}2 timeout 60 '$DOG' vdi read v -a 10.99.0.2 \
		-p $PORT | cmp -s - '$T/data'"

check "a sheep restarted on the cut-off host starts" start_sheep 3
check "... but waits for quorum instead of founding a cluster" \
	retry 10 grep -q "waiting for corosync quorum" "$T/n3/sheep.log"
check "... and the others still have two nodes" nodes_are 1 2
head -c 4096 /dev/urandom >"$T/minority"
minority_write_refused()
{
	! ip netns exec "${NS}3" timeout 60 "$DOG" vdi write v 0 4096 \
		-a 10.99.0.3 -p $PORT <"$T/minority" >>"$T/dog.log" 2>&1
}
check "... and acknowledges no write while cut off" minority_write_refused

# heal
ip -n "$SW" link set v3 master br0
check "after the cut heals it joins by itself" retry 30 nodes_are 1 3
check "... and serves the data written during the partition" \
	bash -c "ip netns exec ${NS}3 timeout 60 '$DOG' vdi read v -a 10.99.0.3 \
		-p $PORT | cmp -s - '$T/data'"

for p in "${PIDS[@]}"; do
	ours "$p" && kill -TERM "$p"
done
summary
[ $FAIL -eq 0 ]
