# SPDX-License-Identifier: GPL-2.0-or-later
# Sheep on emulated hosts, for the tests that sourced common.sh: each node
# in a network namespace of its own with its own address (10.98.0.IDX+1)
# on a bridge that lives in a namespace of its own, so nothing touches the
# host's network.  The kernel here has no tc netem, so a slow or lossy
# link is tests/tools/netdelay on an NFQUEUE that an iptables rule in the
# node's namespace feeds with every packet leaving it: DELAY_US per
# direction (a round trip between two nodes costs twice that), JITTER_US
# more at most, LOSS_PPM packets per million dropped.  The cluster driver
# is the test's (the local driver's files are shared by every namespace).
# Daemons run through tests/tools/own-mounts.sh, so that their
# copies of the mounts pin no other test's file system (a sheepfs that
# cannot exit after its unmount, an XFS that cannot go away).
# Skips the test where namespaces, iptables-legacy's NFQUEUE or
# libnetfilter-queue are missing.
#
#   net_setup N [DELAY_US [JITTER_US [LOSS_PPM]]]
#   ns_start_sheep IDX [sheep args]     ns_dog IDX ARGS...     ns_ip IDX
#   net_link IDX DELAY_US [JITTER_US [LOSS_PPM]]: change one node's link
#   net_zookeeper FIRST K: a ZooKeeper ensemble on hosts FIRST..FIRST+K-1
#   NS_ZONE[IDX]=Z: node IDX's zone (a rack) instead of IDX

NS_PORT=7000
NS_PREFIX=k$$
declare -a NS_DELAY_PIDS NS_ZONE
NS_ZK_NR=0

ns_name()
{
	echo "${NS_PREFIX}h$1"
}

ns_ip()
{
	echo "10.98.0.$(($1 + 1))"
}

_ns_cleanup()
{
	local pid i
	for ((i = 0; i < NS_ZK_NR; i++)); do
		bash "$TOP/tests/zookeeper/stop.sh" "$T/zk$i" --keep >/dev/null 2>&1
	done
	for pid in "${NS_DELAY_PIDS[@]}"; do
		[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
	done
	for i in $(seq 0 $((${NS_NR:-0} - 1))); do
		[ -d "$T/cs$i" ] &&
			bash "$TOP/tests/corosync/stop.sh" -f "$T/cs$i" >/dev/null 2>&1
		ip netns del "$(ns_name "$i")" 2>/dev/null
	done
	ip netns del "${NS_PREFIX}sw" 2>/dev/null
}

# netdelay of node IDX on its queue 0; "" when the link is perfect
_ns_delay_start()
{
	local i=$1 d=$2 j=$3 l=$4
	NS_DELAY_PIDS[i]=
	: >>"$T/netdelay.$i.log"
	[ "$d" = 0 ] && [ "$j" = 0 ] && [ "$l" = 0 ] && return 0
	ip netns exec "$(ns_name "$i")" "$TOP/tests/tools/own-mounts.sh" \
		--keep "$T" "$NETDELAY" -q 0 -d "$d" -j "$j" \
		-l "$l" -s "$((i + 1))" >>"$T/netdelay.$i.log" 2>&1 &
	NS_DELAY_PIDS[i]=$!
	_retry 10 grep -q '^ready' "$T/netdelay.$i.log" ||
		_fail "netdelay of node $i did not start: $(tail -n 2 "$T/netdelay.$i.log")"
}

# The kernel keeps one ARP table for every namespace, of gc_thresh3
# entries (1,024 by default): hosts that all talk to each other fill it
# at about 32 of them, and a full table drops packets ("neighbor table
# overflow" in the kernel log), which looked like connections that hang.
# gc_thresh2 and 3 are raised (never lowered) to room for N hosts and
# what the machine had.
_ns_neigh_room()
{
	local need=$(($1 * $1 + 1024)) cur k
	cur=$(sysctl -n net.ipv4.neigh.default.gc_thresh3) || return 0
	[ "$cur" -ge "$need" ] && return 0
	for k in 2 3; do
		sysctl -qw "net.ipv4.neigh.default.gc_thresh$k=$need" ||
			_fail "cannot make room for $1 hosts in the ARP table"
	done
	_log "ARP table: gc_thresh2 and 3 raised to $need for $1 hosts (was $cur at most)"
}

net_setup()
{
	local n=$1 d=${2:-0} j=${3:-0} l=${4:-0} i h v
	local libs
	command -v iptables-legacy >/dev/null ||
		_skip "iptables-legacy is not installed"
	libs=$(pkg-config --libs libnetfilter_queue 2>/dev/null) ||
		_skip "libnetfilter-queue-dev is not installed"
	NETDELAY=$T/netdelay
	# shellcheck disable=SC2086
	cc -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter \
		-o "$NETDELAY" "$TOP/tests/tools/netdelay.c" $libs \
		>"$T/netdelay.build" 2>&1 ||
		_fail "cannot build netdelay: $(head -n 5 "$T/netdelay.build")"
	ON_EXIT_HOOK=_ns_cleanup
	NS_NR=$n
	_ns_neigh_room "$n"
	ip netns add "${NS_PREFIX}sw" 2>/dev/null ||
		_skip "cannot create network namespaces"
	ip -n "${NS_PREFIX}sw" link add br0 type bridge || _fail "bridge"
	ip -n "${NS_PREFIX}sw" link set br0 up || _fail "bridge up"
	for ((i = 0; i < n; i++)); do
		h=$(ns_name "$i")
		v=${NS_PREFIX}v$i
		ip netns add "$h" || _fail "namespace $h"
		ip link add "$v" type veth peer name eth0 netns "$h" ||
			_fail "veth of node $i"
		ip link set "$v" netns "${NS_PREFIX}sw" || _fail "veth $v"
		ip -n "${NS_PREFIX}sw" link set "$v" master br0 || _fail "port $v"
		ip -n "${NS_PREFIX}sw" link set "$v" up || _fail "$v up"
		ip -n "$h" link set lo up || _fail "lo of node $i"
		ip -n "$h" addr add "$(ns_ip "$i")/24" dev eth0 || _fail "address"
		ip -n "$h" link set eth0 up || _fail "eth0 of node $i"
		ip netns exec "$h" iptables-legacy -A OUTPUT -o eth0 -j NFQUEUE \
			--queue-num 0 --queue-bypass 2>"$T/iptables.err" ||
			_skip "no NFQUEUE here: $(head -n 1 "$T/iptables.err")"
		_ns_delay_start "$i" "$d" "$j" "$l"
	done
}

# net_link IDX DELAY_US [JITTER_US [LOSS_PPM]]: node IDX's link from now
net_link()
{
	local i=$1
	if [ -n "${NS_DELAY_PIDS[i]}" ]; then
		kill -TERM "${NS_DELAY_PIDS[i]}" 2>/dev/null
		wait "${NS_DELAY_PIDS[i]}" 2>/dev/null
	fi
	: >"$T/netdelay.$i.log"
	_ns_delay_start "$i" "$2" "${3:-0}" "${4:-0}"
}

# ns_start_sheep IDX [extra sheep args]: node IDX on its host, port 7000
ns_start_sheep()
{
	local idx=$1 rc pid end ip
	shift
	ip=$(ns_ip "$idx")
	mkdir -p "$T/$idx"
	rm -f "$T/$idx/pid"
	echo "ip netns exec $(ns_name "$idx") $SHEEP_BIN -b $ip -y $ip" \
		"-p $NS_PORT -c $(cluster_driver) -n -z ${NS_ZONE[idx]:-$idx}" \
		"-P $T/$idx/pid $* $T/$idx" \
		>>"$T/.commands"
	# own-mounts.sh: a daemon in the namespace's copy of the mounts must
	# not pin other tests' file systems
	timeout -k 5 "$START_TIMEOUT" ip netns exec "$(ns_name "$idx")" \
		"$TOP/tests/tools/own-mounts.sh" --keep "$T" \
		setsid -w "$SHEEP_BIN" -b "$ip" -y "$ip" -p "$NS_PORT" \
		-c "$(cluster_driver)" -n -z "${NS_ZONE[idx]:-$idx}" \
		-P "$T/$idx/pid" "$@" \
		"$T/$idx" </dev/null >>"$T/$idx.stdout" 2>&1
	rc=$?
	[ $rc -eq 0 ] || _fail "sheep $idx exited with $rc at start-up" \
		"($(tail -n 3 "$T/$idx.stdout" "$T/$idx/sheep.log" 2>/dev/null))"
	end=$((SECONDS + START_TIMEOUT))
	until pid=$(sheep_pid "$idx") && [ -n "$pid" ] && _pid_alive "$pid" &&
		ns_dog "$idx" node list -r >/dev/null 2>&1; do
		[ $SECONDS -ge $end ] &&
			_fail "sheep $idx not up after ${START_TIMEOUT}s (pid '$pid')"
		sleep 0.25
	done
	echo "$pid" >>"$T/.pids"
}

# ns_dog IDX ARGS...: dog from node IDX's host against its sheep
ns_dog()
{
	local idx=$1
	shift
	# the network namespace only: ip netns exec makes a mount namespace
	# too, whose copies of other tests' mounts own-mounts.sh must then
	# drop, three processes more for every command (dog needs no /sys)
	nsenter --net="/run/netns/$(ns_name "$idx")" \
		"$DOG_BIN" "$@" -a "$(ns_ip "$idx")" -p "$NS_PORT"
}

# ns_wait_nodes N IDX...: each node IDX lists N nodes
ns_wait_nodes()
{
	local n=$1 i end=$((SECONDS + START_TIMEOUT + 30))
	shift
	for i in "$@"; do
		until [ "$(ns_dog "$i" node list -r 2>/dev/null | grep -c .)" = "$n" ]; do
			[ $SECONDS -ge $end ] &&
				_fail "node $i lists $(ns_dog "$i" node list -r 2>/dev/null |
					grep -c .) nodes, want $n"
			sleep 0.2
		done
	done
}

# ns_wait_recovery IDX...: recovery done on every node IDX
ns_wait_recovery()
{
	local i out end=$((SECONDS + 120))
	for i in "$@"; do
		until out=$(ns_dog "$i" node recovery 2>/dev/null) &&
			[ "$(grep -c . <<<"$out")" -eq 2 ]; do
			[ $SECONDS -ge $end ] &&
				_fail "recovery did not finish on node $i: $out"
			sleep 0.5
		done
	done
}

# ns_epoch IDX: the last epoch node IDX logged
ns_epoch()
{
	sed -n 's/.*new_epoch.*\] epoch \([0-9]*\): .*/\1/p' "$T/$1/sheep.log" |
		tail -n 1
}

# net_corosync [TOKEN_MS]: one corosync per host (net_setup's), all N in
# one cluster (udpu, votequorum, token TOKEN_MS, default 1000, consensus
# 1.2 times that), quorate; the sheep then take KELPIE_DRIVER=corosync
net_corosync()
{
	local i k token=${1:-1000}
	command -v corosync >/dev/null || _skip "corosync is not installed"
	for ((i = 0; i < NS_NR; i++)); do
		mkdir -p "$T/cs$i"
		{
			cat <<CONF
totem {
	version: 2
	cluster_name: kelpie-ns
	transport: udpu
	crypto_cipher: none
	crypto_hash: none
	token: $token
	consensus: $((token * 6 / 5))
	interface {
		linknumber: 0
		bindnetaddr: 10.98.0.0
		mcastport: 5405
	}
}
nodelist {
CONF
			for ((k = 0; k < NS_NR; k++)); do
				printf '\tnode {\n\t\tnodeid: %d\n\t\tring0_addr: %s\n\t}\n' \
					$((k + 1)) "$(ns_ip "$k")"
			done
			cat <<CONF
}
quorum {
	provider: corosync_votequorum
	expected_votes: $NS_NR
}
system {
	state_dir: $T/cs$i/state
}
logging {
	to_stderr: no
	to_syslog: no
	to_logfile: yes
	logfile: $T/cs$i/corosync.log
	timestamp: on
}
CONF
		} >"$T/cs$i.conf"
		KELPIE_COROSYNC_CONF=$T/cs$i.conf ip netns exec "$(ns_name "$i")" \
			bash "$TOP/tests/corosync/start.sh" "$T/cs$i" >/dev/null 2>&1 ||
			_skip "corosync does not start in a network namespace"
	done
	for ((i = 0; i < NS_NR; i++)); do
		_retry 30 ip netns exec "$(ns_name "$i")" \
			timeout 5 corosync-quorumtool -s >/dev/null 2>&1 ||
			_fail "the corosync of node $i is not quorate"
	done
	export KELPIE_DRIVER=corosync
}

# net_zookeeper FIRST K: a ZooKeeper ensemble of K members, one on each
# of hosts FIRST..FIRST+K-1 (net_setup's, so their links are emulated
# too), started side by side (no member serves before a quorum does);
# the sheep then take KELPIE_DRIVER=zookeeper with every member's address
net_zookeeper()
{
	local first=$1 k=$2 i h rc extra= addr= port
	local -a pids
	[ -f /usr/share/java/zookeeper.jar ] || _skip "zookeeper is not installed"
	for ((i = 0; i < k; i++)); do
		extra+="server.$((i + 1))=$(ns_ip $((first + i))):2888:3888"$'\n'
	done
	NS_ZK_NR=$k
	for ((i = 0; i < k; i++)); do
		h=$((first + i))
		KELPIE_ZK_MYID=$((i + 1)) KELPIE_ZK_TIMEOUT=90 \
			KELPIE_ZK_CONF_EXTRA="${extra}clientPortAddress=0.0.0.0" \
			ip netns exec "$(ns_name "$h")" \
			"$TOP/tests/tools/own-mounts.sh" --keep "$T" \
			bash "$TOP/tests/zookeeper/start.sh" "$T/zk$i" \
			>"$T/zk$i.start" 2>&1 &
		pids[i]=$!
	done
	for ((i = 0; i < k; i++)); do
		wait "${pids[i]}"
		rc=$?
		[ $rc = 77 ] && _skip "ZooKeeper cannot run here: $(tail -n 1 "$T/zk$i.start")"
		[ $rc = 0 ] || _fail "ZooKeeper member $i did not start:" \
			"$(tail -n 5 "$T/zk$i.start")"
		port=$(tail -n 1 "$T/zk$i.start")
		addr+=",$(ns_ip $((first + i))):$port"
	done
	export KELPIE_DRIVER=zookeeper KELPIE_ZK_ADDR=${addr#,}
}
