#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A Ceph cluster on one host, the Ceph RBD baseline of tests/bench/run:
#
#   ceph.sh start DIR [SIZE [IMAGE]]
#       1 monitor, 1 manager and 3 bluestore OSDs, each on a sparse file in
#       DIR, on 127.0.0.1 only, without authentication (auth none; cephx
#       with KELPIE_CEPH_AUTH=cephx: a key each for the monitor, the
#       manager, the OSDs and client.admin, in DIR), a
#       replicated pool "rbd" with 3 copies (min_size 2) placed on
#       different OSDs (failure domain osd, so one host is enough) and an
#       RBD image IMAGE (default "bench") of SIZE (default 256M) in it.
#       Everything Ceph writes (data, logs, sockets, the configuration
#       DIR/ceph.conf) stays in DIR: nothing under /etc/ceph or /var is
#       read or written.  The daemons' PIDs go to DIR/*.pid.  Waits for
#       each step on its condition (the monitor answers, 3 OSDs up and in,
#       every placement group active+clean, the image exists), within
#       KELPIE_CEPH_TIMEOUT seconds in all; on failure it says why on
#       stderr (with the last lines of the daemon's log), stops what it
#       started and exits 1.  Clients find the cluster with
#       CEPH_CONF=DIR/ceph.conf (fio --ioengine=rbd --clientname=admin
#       --pool=rbd --rbdname=IMAGE).
#   ceph.sh stop DIR
#       SIGTERM to the daemons of DIR/*.pid (only processes whose command
#       line names DIR/ceph.conf), SIGKILL to those still there after 20 s.
#   ceph.sh pids DIR
#       the PIDs of the running daemons, one per line (for CPU accounting)
#   ceph.sh check
#       exit 0 when the programs needed are installed, else name the
#       missing ones on stderr (Debian: ceph-mon ceph-osd ceph-mgr
#       ceph-common)
#
# Environment: KELPIE_CEPH_MON_PORT (the monitor's msgr2 port, default
# 13300), KELPIE_CEPH_MON_V1_PORT (its legacy msgr1 port, default 13301),
# KELPIE_CEPH_PORT_MIN and KELPIE_CEPH_PORT_MAX (the range the manager and
# the OSDs bind to, 8 ports per OSD and 2 for the manager; default 13310 to
# 13399: Ceph's own default, 6800-7300, overlaps Kelpie's ports),
# KELPIE_CEPH_OSDS (default 3), KELPIE_CEPH_OSD_MEMORY (each OSD's memory
# target, default 1G), KELPIE_CEPH_TIMEOUT (seconds for start, default
# 300), KELPIE_CEPH_DEVICE (auto, the default: the settings Ceph picks from
# the rotational flag of the device under DIR; hdd or ssd: that class's
# settings whatever the flag says), KELPIE_CEPH_AUTH (none, the default,
# or cephx: radosgw 16.2 cannot authenticate to a monitor without it).

set -u
MARK=.kelpie-bench-ceph	# in a directory this script made
MON_PORT=${KELPIE_CEPH_MON_PORT:-13300}
MON_V1_PORT=${KELPIE_CEPH_MON_V1_PORT:-13301}
PORT_MIN=${KELPIE_CEPH_PORT_MIN:-13310}
PORT_MAX=${KELPIE_CEPH_PORT_MAX:-13399}
OSDS=${KELPIE_CEPH_OSDS:-3}
OSD_MEMORY=${KELPIE_CEPH_OSD_MEMORY:-1G}
TIMEOUT=${KELPIE_CEPH_TIMEOUT:-300}
DEVICE=${KELPIE_CEPH_DEVICE:-auto}
AUTH=${KELPIE_CEPH_AUTH:-none}
PGS=32
TOOLS="ceph-mon ceph-mgr ceph-osd ceph monmaptool ceph-authtool rbd python3"

log()
{
	echo "[$(date +%H:%M:%S)] ceph: $*" >&2
}

# fail WHY [LOG]: say why (and the end of LOG), stop what was started
fail()
{
	log "failed: $1"
	if [ -n "${2:-}" ] && [ -f "$2" ]; then
		tail -n 8 "$2" | sed 's/^/    /' >&2
	fi
	stop
	exit 1
}

# bytes of a size like 256M (K, M, G, T or none)
size_bytes()
{
	local n=${1%[KMGT]}
	[[ $n =~ ^[0-9]+$ ]] || return 1
	case ${1: -1} in
	K) echo $((n << 10)) ;;
	M) echo $((n << 20)) ;;
	G) echo $((n << 30)) ;;
	T) echo $((n << 40)) ;;
	*) echo "$n" ;;
	esac
}

# the programs that are missing, space separated (none: empty)
missing_tools()
{
	local t miss=
	for t in $TOOLS; do
		command -v "$t" >/dev/null 2>&1 || miss+=" $t"
	done
	echo "${miss# }"
}

# alive and not a zombie (the daemons are not our children once we exit)
pid_alive()
{
	local state
	[ -n "$1" ] && [ -e "/proc/$1" ] || return 1
	state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' \
		"/proc/$1/status" 2>/dev/null)
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# a daemon of this cluster: alive, and its command line names our conf
# (a PID file may outlive its process and the PID be reused)
ours()
{
	pid_alive "$1" &&
		tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" |
		grep -qF -- "$CONF"
}

# any TCP socket bound to PORT on this host
port_in_use()
{
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p { f = 1 }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# the ceph command line tool, bounded: it would wait for a monitor forever
cephq()
{
	timeout -k 5 30 ceph --connect-timeout 10 "$@" 2>>"$D/log/cli.err"
}

# daemon NAME CMD...: start a daemon in the foreground of its own session
# (so that a terminal's signals do not reach it), its PID in DIR/NAME.pid
daemon()
{
	local name=$1
	shift
	setsid "$@" </dev/null >"$D/log/$name.out" 2>&1 &
	echo $! >"$D/$name.pid"
}

# every daemon started so far is still running (else fail, with its log)
check_alive()
{
	local f name
	for f in "$D"/*.pid; do
		[ -f "$f" ] || continue
		name=$(basename "$f" .pid)
		pid_alive "$(cat "$f")" ||
			fail "$name exited" "$D/log/$name.out"
	done
}

# wait_for WHAT CMD...: poll CMD until it succeeds, while the daemons run
# and the start's deadline has not passed
wait_for()
{
	local what=$1
	shift
	until "$@"; do
		check_alive
		[ $SECONDS -lt "$DEADLINE" ] ||
			fail "timed out after ${TIMEOUT} s waiting for $what" \
				"$D/log/cli.err"
		sleep 0.3
	done
	log "$what after $((SECONDS - STARTED)) s"
}

mon_up()
{
	cephq mon stat >/dev/null
}

osds_up()
{
	cephq osd stat -f json | python3 -c '
import json, sys
d = json.load(sys.stdin)
d = d.get("osdmap", d)
n = int(sys.argv[1])
sys.exit(0 if d["num_up_osds"] == n and d["num_in_osds"] == n else 1)
' "$OSDS" 2>/dev/null
}

# every placement group active+clean, and at least those of pool rbd
pgs_clean()
{
	cephq status -f json | python3 -c '
import json, sys
pg = json.load(sys.stdin)["pgmap"]
states = pg.get("pgs_by_state", [])
clean = sum(s["count"] for s in states if s["state_name"] == "active+clean")
sys.exit(0 if pg["num_pgs"] >= int(sys.argv[1]) and
         clean == pg["num_pgs"] else 1)
' "$PGS" 2>/dev/null
}

# the [osd] lines for KELPIE_CEPH_DEVICE: nothing for auto (Ceph's own
# choice from the device's rotational flag), else the class's settings for
# bluestore (deferred writes, throttles) and the OSD's op queue
device_conf()
{
	case $DEVICE in
	hdd | ssd)
		echo "bluestore debug enforce settings = $DEVICE"
		echo "osd op num shards = $([ "$DEVICE" = ssd ] && echo 8 || echo 5)"
		echo "osd op num threads per shard = $([ "$DEVICE" = ssd ] &&
			echo 2 || echo 1)"
		;;
	esac
}

write_conf()
{
	local fsid=$1 block=$2
	cat >"$CONF" <<EOF
# written by tests/bench/ceph.sh: a one-host cluster for the benchmarks
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$MON_PORT,v1:127.0.0.1:$MON_V1_PORT]
public network = 127.0.0.0/8
ms bind ipv4 = true
ms bind ipv6 = false
ms bind port min = $PORT_MIN
ms bind port max = $PORT_MAX
auth cluster required = $AUTH
auth service required = $AUTH
auth client required = $AUTH
keyring = $D/keyring
run dir = $D/run
admin socket = $D/run/\$cluster-\$name.asok
pid file = $D/run/\$cluster-\$name.pid
log file = $D/log/\$cluster-\$name.log
crash dir = $D/crash
mon cluster log file = $D/log/\$cluster.\$channel.log
client mount timeout = 30
# a quiet health: no warnings about what a test cluster does on purpose
auth allow insecure global id reclaim = false
mon data avail warn = 5
osd pool default size = 3
osd pool default min size = 2
osd pool default pg autoscale mode = off
# the copies go to different OSDs, not hosts: there is one host
osd crush chooseleaf type = 0
[mon]
mon data = $D/mon/\$cluster-\$id
keyring = $D/mon/\$cluster-\$id/keyring
[mgr]
mgr data = $D/mgr/\$cluster-\$id
keyring = $D/mgr/\$cluster-\$id/keyring
[osd]
osd data = $D/osd/\$cluster-\$id
keyring = $D/osd/\$cluster-\$id/keyring
osd objectstore = bluestore
# bluestore creates its device as a sparse file osd_data/block; naming
# that file as "bluestore block path" too would make mkfs link it to
# itself (ELOOP)
bluestore block create = true
bluestore block size = $block
osd memory target = $(size_bytes "$OSD_MEMORY")
$(device_conf)
[client]
rbd cache = false
EOF
}

start()
{
	local size=$1 image=$2 fsid i uuid id block bytes miss p
	STARTED=$SECONDS
	DEADLINE=$((SECONDS + TIMEOUT))
	miss=$(missing_tools)
	[ -z "$miss" ] || { log "not installed: $miss"; exit 1; }
	[[ $DEVICE =~ ^(auto|hdd|ssd)$ ]] ||
		{ log "KELPIE_CEPH_DEVICE is auto, hdd or ssd"; exit 1; }
	[[ $AUTH =~ ^(none|cephx)$ ]] ||
		{ log "KELPIE_CEPH_AUTH is none or cephx"; exit 1; }
	bytes=$(size_bytes "$size") && [ "$bytes" -gt 0 ] ||
		{ log "bad size $size"; exit 1; }
	for f in "$D"/*.pid; do
		[ -f "$f" ] && ours "$(cat "$f")" &&
			{ log "$D already runs a cluster"; exit 1; }
	done
	# what follows empties DIR's mon/, osd/, ...: only a directory this
	# script made (its mark) or an empty one, never a real Ceph's
	if [ ! -e "$D/$MARK" ] && [ -n "$(ls -A "$D")" ]; then
		log "$D is not empty and was not made by $0: refusing to" \
			"use it (give a new or empty directory)"
		exit 1
	fi
	: >"$D/$MARK" || { log "cannot write in $D"; exit 1; }
	for p in "$MON_PORT" "$MON_V1_PORT"; do
		port_in_use "$p" &&
			{ log "port $p is in use (KELPIE_CEPH_MON_PORT," \
				"KELPIE_CEPH_MON_V1_PORT)"; exit 1; }
	done
	rm -rf "$D/mon" "$D/mgr" "$D/osd" "$D/run" "$D/log" "$D/crash"
	rm -f "$D"/*.pid "$D/keyring" "$D/monmap"
	mkdir -p "$D/mon" "$D/mgr/ceph-x" "$D/osd" "$D/run" "$D/log" \
		"$D/crash" || { log "cannot create $D"; exit 1; }
	# each OSD holds a whole copy: room for it twice, and for RocksDB
	block=$((bytes * 2 + (2 << 30)))
	fsid=$(cat /proc/sys/kernel/random/uuid)
	write_conf "$fsid" "$block"
	log "$D: 1 mon (127.0.0.1:$MON_PORT), 1 mgr, $OSDS OSDs" \
		"(ports $PORT_MIN-$PORT_MAX), image rbd/$image of $size"

	monmaptool --create --addv a \
		"[v2:127.0.0.1:$MON_PORT,v1:127.0.0.1:$MON_V1_PORT]" \
		--fsid "$fsid" "$D/monmap" >"$D/log/mkfs.out" 2>&1 &&
		ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. \
			--cap mon 'allow *' >>"$D/log/mkfs.out" 2>&1 &&
		ceph-authtool "$D/keyring" --gen-key -n client.admin \
			--cap mon 'allow *' --cap osd 'allow *' \
			--cap mgr 'allow *' --cap mds 'allow *' \
			>>"$D/log/mkfs.out" 2>&1 &&
		ceph-mon -c "$CONF" --mkfs -i a --monmap "$D/monmap" \
			--keyring "$D/keyring" >>"$D/log/mkfs.out" 2>&1 ||
		fail "the monitor's mkfs" "$D/log/mkfs.out"
	daemon mon.a ceph-mon -c "$CONF" -i a -f
	wait_for "the monitor" mon_up
	[ "$AUTH" = none ] ||
		cephq auth get-or-create mgr.x mon 'allow profile mgr' \
			osd 'allow *' mds 'allow *' \
			-o "$D/mgr/ceph-x/keyring" >/dev/null ||
		fail "the manager's key" "$D/log/cli.err"
	daemon mgr.x ceph-mgr -c "$CONF" -i x -f

	for ((i = 0; i < OSDS; i++)); do
		uuid=$(cat /proc/sys/kernel/random/uuid)
		id=$(cephq osd new "$uuid") && [[ $id =~ ^[0-9]+$ ]] ||
			fail "ceph osd new" "$D/log/cli.err"
		mkdir -p "$D/osd/ceph-$id"
		# (its key first: the mkfs reads its configuration from the
		# monitor)
		[ "$AUTH" = none ] ||
			cephq auth get-or-create "osd.$id" osd 'allow *' \
				mon 'allow profile osd' mgr 'allow profile osd' \
				-o "$D/osd/ceph-$id/keyring" >/dev/null ||
			fail "the key of osd.$id" "$D/log/cli.err"
		ceph-osd -c "$CONF" -i "$id" --mkfs --osd-uuid "$uuid" \
			>"$D/log/osd.$id.mkfs" 2>&1 ||
			fail "the mkfs of osd.$id" "$D/log/osd.$id.mkfs"
		daemon "osd.$id" ceph-osd -c "$CONF" -i "$id" -f
	done
	wait_for "$OSDS OSDs up and in" osds_up

	cephq osd pool create rbd "$PGS" "$PGS" replicated >/dev/null &&
		cephq osd pool set rbd size 3 >/dev/null &&
		cephq osd pool set rbd min_size 2 >/dev/null ||
		fail "creating pool rbd" "$D/log/cli.err"
	wait_for "every placement group active+clean" pgs_clean
	timeout -k 5 60 rbd pool init rbd 2>>"$D/log/cli.err" &&
		timeout -k 5 60 rbd create --size "$((bytes >> 20))" \
			"rbd/$image" 2>>"$D/log/cli.err" ||
		fail "creating image rbd/$image" "$D/log/cli.err"
	check_alive
	log "started in $((SECONDS - STARTED)) s: CEPH_CONF=$CONF," \
		"image rbd/$image"
}

stop()
{
	local f pid end
	local -a pids=()
	for f in "$D"/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		ours "$pid" && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
	done
	end=$((SECONDS + 20))
	for pid in "${pids[@]}"; do
		while ours "$pid" && [ $SECONDS -lt $end ]; do
			sleep 0.1
		done
	done
	for pid in "${pids[@]}"; do
		if ours "$pid"; then
			log "$(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-40)" \
				"(PID $pid) still runs after 20 s: SIGKILL"
			kill -KILL "$pid" 2>/dev/null
		fi
	done
	end=$((SECONDS + 10))
	for pid in "${pids[@]}"; do
		while pid_alive "$pid" && [ $SECONDS -lt $end ]; do
			sleep 0.1
		done
	done
	rm -f "$D"/*.pid
	return 0
}

pids()
{
	local f pid
	for f in "$D"/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		ours "$pid" && echo "$pid"
	done
	return 0
}

usage()
{
	sed -n '3,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

case ${1:-} in
start | stop | pids)
	[ -n "${2:-}" ] || usage
	mkdir -p "$2" && D=$(cd "$2" && pwd) || { log "no directory $2"; exit 1; }
	CONF=$D/ceph.conf
	export CEPH_CONF=$CONF
	case $1 in
	start) start "${3:-256M}" "${4:-bench}" ;;
	stop) stop ;;
	pids) pids ;;
	esac
	;;
check)
	miss=$(missing_tools)
	[ -z "$miss" ] || { echo "not installed: $miss" >&2; exit 1; }
	;;
*) usage ;;
esac
