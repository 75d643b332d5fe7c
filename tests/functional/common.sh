# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for Kelpie's functional tests.  Sourced by every numbered test:
#
#   . "$(dirname "$0")/common.sh"
#
# The runner (run.sh) gives each test a fresh directory in $T and the repo
# root in $TOP.  A test run by hand (bash tests/functional/001) gets its own
# temporary directory, removed on success.
#
# Node IDX (0, 1, ...) lives in $T/IDX, listens on ${PORT[IDX]} and is in
# zone IDX.  Ports are allocated in ascending order, so the node list sorted
# by (address, port) lists nodes in index order.  Tests print only stable
# text on stdout (compared with NNN.out after _filter_output); diagnostics
# go to stderr.

# ---------------------------------------------------------------------------
# environment

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FUNC_DIR=$TOP/tests/functional
SHEEP_BIN=${SHEEP_BIN:-$TOP/sheep/sheep}
DOG_BIN=${DOG_BIN:-$TOP/dog/dog}
DOG_TIMEOUT=${DOG_TIMEOUT:-120}		# seconds for one dog command
START_TIMEOUT=${START_TIMEOUT:-20}	# seconds for a sheep to come up
NR_PORTS=${NR_PORTS:-8}			# nodes a test may start
PORT_LOCK_DIR=${PORT_LOCK_DIR:-/tmp/kelpie-test-ports}

# ---------------------------------------------------------------------------
# messages and assertions

_log()
{
	printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2
}

# fail the test with a message
_fail()
{
	echo "FAIL: $*" >&2
	exit 1
}

# skip the test (runner reports SKIP)
_skip()
{
	echo "SKIP: $*" >&2
	exit 77
}

# _assert_eq WANT GOT WHAT
_assert_eq()
{
	[ "$1" = "$2" ] || _fail "$3: expected '$1', got '$2'"
}

# _retry SECONDS COMMAND...: run COMMAND every 0.2 s until it succeeds
_retry()
{
	local secs=$1 end
	shift
	end=$((SECONDS + secs))
	while :; do
		"$@" && return 0
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

# ---------------------------------------------------------------------------
# processes

# true if PID is a live process (zombies count as dead: our daemons are
# reparented to a pid 1 that may never reap them)
# true while any thread of PID lives: a killed sheep's main thread turns
# zombie first, and its sockets stay open (its port bound) until the last
# worker thread has left a blocking call
_pid_alive()
{
	local pid=$1 st l
	local -a lines
	[ -n "$pid" ] && [ -e "/proc/$pid" ] || return 1
	# builtins only: every wait loop of every test calls this, and a
	# process costs 5-15 ms of CPU on the test machines (doc/testing.md).
	# Whole files: a 'read' left before the end of a file whose task is
	# gone (bash cannot seek it back) leaves the rest in bash's buffer
	# for the next 'read' of any file (a pid of "Tgid: ...": ci38)
	for st in /proc/"$pid"/task/*/status; do
		mapfile -t lines 2>/dev/null <"$st" || continue
		for l in "${lines[@]}"; do
			[ "${l%%:*}" = State ] || continue
			l=${l#State:}
			l=${l#"${l%%[![:space:]]*}"}
			[ "${l:0:1}" != Z ] && [ "${l:0:1}" != X ] && return 0
			break
		done
	done
	return 1
}

# true if PID is a sheep started by this test (guards against pid reuse)
_pid_is_ours()
{
	local pid=$1
	local -a argv=()
	_pid_alive "$pid" || return 1
	mapfile -d '' argv 2>/dev/null <"/proc/$pid/cmdline" || return 1
	[[ "${argv[*]}" == *"$T/"* ]]
}

_wait_pid_gone()
{
	local pid=$1 secs=${2:-30} end
	end=$((SECONDS + secs))
	while _pid_alive "$pid"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.1
	done
	return 0
}

sheep_pid()
{
	local pid=
	read -r pid 2>/dev/null <"$T/$1/pid"
	[ -n "$pid" ] && echo "$pid"
}

# kill_together PID...: SIGKILL them all from a real-time process, which the
# processes it wakes cannot preempt between two kills on a busy host
kill_together() { chrt -f 10 kill -9 "$@" 2>/dev/null || kill -9 "$@"; }

# _sheep_running IDX
_sheep_running()
{
	local pid=
	read -r pid 2>/dev/null <"$T/$1/pid"
	_pid_is_ours "$pid"
}

# _nr_lines TEXT [SKIP]: the number of non-empty lines of TEXT after its
# first SKIP (default 0) in $NR_LINES, with builtins only
_nr_lines()
{
	local -a lines=()
	local l skip=${2:-0}
	NR_LINES=0
	mapfile -t lines <<<"$1"
	for l in "${lines[@]:skip}"; do
		[ -n "$l" ] && NR_LINES=$((NR_LINES + 1))
	done
	return 0
}

# indices of nodes that are running, in ascending order
running_nodes()
{
	local i
	for ((i = 0; i < NR_PORTS; i++)); do
		_sheep_running $i && echo $i
	done
	return 0
}

# ---------------------------------------------------------------------------
# ports

_port_in_use()
{
	local hex
	hex=$(printf '%04X' "$1")
	# any socket bound to that local port (listening or connected)
	awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p { f = 1 }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# reserve PORT for this test with an atomic mkdir; stale reservations of
# dead owners are taken over
_port_reserve()
{
	local p=$1 d=$PORT_LOCK_DIR/$1 owner
	mkdir -p "$PORT_LOCK_DIR" 2>/dev/null
	if ! mkdir "$d" 2>/dev/null; then
		owner=$(cat "$d/owner" 2>/dev/null)
		if [ -n "$owner" ] && _pid_alive "$owner"; then
			return 1
		fi
		# owner gone (or being created): take over only if old enough
		[ -n "$owner" ] || [ -z "$(find "$d" -maxdepth 0 -mmin -1)" ] ||
			return 1
		rm -rf "$d" && mkdir "$d" 2>/dev/null || return 1
	fi
	echo $$ >"$d/owner"
	echo "$p" >>"$T/.reserved-ports"
	return 0
}

_ports_release()
{
	local p
	[ -f "$T/.reserved-ports" ] || return 0
	while read -r p; do
		[ "$(cat "$PORT_LOCK_DIR/$p/owner" 2>/dev/null)" = $$ ] &&
			rm -rf "${PORT_LOCK_DIR:?}/$p"
	done <"$T/.reserved-ports"
	rm -f "$T/.reserved-ports"
}

# fill PORT[0..NR_PORTS-1] with free, reserved, ascending 5-digit ports
# (5 digits: the PORTn placeholder of _filter_ports keeps column widths)
_alloc_ports()
{
	local try base p i lo=0 first=20000 span=40000
	# the window searched from a random base: wider for many-node runs
	local win=$((NR_PORTS < 150 ? 200 : NR_PORTS + 50))
	# stay below the ephemeral range, so that no outgoing connection
	# takes one of our ports before the daemon binds it
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
	if [ "${lo:-0}" -gt 12000 ]; then
		first=10000
		span=$((lo - 10000 - 300))
	fi
	PORT=()
	for ((try = 0; try < 50; try++)); do
		base=$((first + (RANDOM * 32768 + RANDOM) % span))
		base=${KELPIE_PORT_BASE:-$base}
		p=$base
		PORT=()
		_ports_release
		while [ ${#PORT[@]} -lt "$NR_PORTS" ] && [ $p -lt 65000 ] &&
			[ $p -lt $((base + win)) ]; do
			if ! _port_in_use $p && _port_reserve $p; then
				PORT+=("$p")
			fi
			p=$((p + 1))
		done
		[ ${#PORT[@]} -eq "$NR_PORTS" ] && break
	done
	[ ${#PORT[@]} -eq "$NR_PORTS" ] || _fail "cannot find $NR_PORTS free ports"
	: >"$T/.ports"
	for ((i = 0; i < NR_PORTS; i++)); do
		echo "$i ${PORT[i]}" >>"$T/.ports"
	done
}

# ---------------------------------------------------------------------------
# dog

# dog ARGS...: run dog against node 0 unless ARGS name a port
dog()
{
	dog_at 0 "$@"
}

# dog_at IDX ARGS...: run dog against node IDX (unless ARGS name a port)
dog_at()
{
	local idx=$1 a has_port=0 inserted=0
	local -a args=()
	shift
	for a in "$@"; do
		case $a in
		-p | --port | --port=* | -p[0-9]*) has_port=1 ;;
		esac
	done
	if [ $has_port = 1 ]; then
		args=("$@")
	else
		# options after a '--' are not parsed: put -p before it
		for a in "$@"; do
			if [ $inserted = 0 ] && [ "$a" = -- ]; then
				args+=(-p "${PORT[idx]}")
				inserted=1
			fi
			args+=("$a")
		done
		[ $inserted = 1 ] || args+=(-p "${PORT[idx]}")
	fi
	# KELPIE_STORE=tree: every format without -b makes a tree store
	if [ -n "${KELPIE_STORE:-}" ] && [ "${args[0]:-}" = cluster ] &&
	   [ "${args[1]:-}" = format ] && [[ " ${args[*]} " != *" -b "* ]]; then
		args=(cluster format -b "$KELPIE_STORE" "${args[@]:2}")
	fi
	timeout -k 5 "$DOG_TIMEOUT" "$DOG_BIN" "${args[@]}"
}

# number of nodes node IDX lists in `dog node list` (0 when dog fails)
nr_nodes_seen()
{
	local out
	out=$(dog_at "$1" node list 2>/dev/null) || { echo 0; return; }
	_nr_lines "$out" 1
	echo "$NR_LINES"
}

# wait_for_nodes N [IDX...]: every given (default: every running) node
# lists N nodes
wait_for_nodes()
{
	local n=$1 i end
	shift
	local -a which=("$@")
	[ ${#which[@]} -gt 0 ] || mapfile -t which < <(running_nodes)
	end=$((SECONDS + START_TIMEOUT + 10))
	for i in "${which[@]}"; do
		while [ "$(nr_nodes_seen "$i")" != "$n" ]; do
			[ $SECONDS -ge $end ] &&
				_fail "node $i sees $(nr_nodes_seen "$i") nodes, want $n"
			sleep 0.2
		done
	done
}

# vdi_locked NAME [IDX]: `dog vdi lock list` through node IDX lists NAME
vdi_locked()
{
	dog_at "${2:-0}" vdi lock list 2>/dev/null | tail -n +2 | grep -qw -- "$1"
}

# first line of `dog cluster info` on node IDX
cluster_status()
{
	local out
	out=$(dog_at "${1:-0}" cluster info 2>/dev/null)
	echo "${out%%$'\n'*}"
}

# wait_for_status TEXT [IDX...]: `dog cluster info` first line is
# "Cluster status: TEXT" on every given (default: running) node
wait_for_status()
{
	local want="Cluster status: $1" i end
	shift
	local -a which=("$@")
	[ ${#which[@]} -gt 0 ] || mapfile -t which < <(running_nodes)
	end=$((SECONDS + 60))
	for i in "${which[@]}"; do
		while [ "$(cluster_status "$i")" != "$want" ]; do
			[ $SECONDS -ge $end ] &&
				_fail "node $i: '$(cluster_status "$i")', want '$want'"
			sleep 0.3
		done
	done
}

# newest epoch in `dog cluster info -r` of node IDX (empty if none)
current_epoch()
{
	local out l
	local -a lines=()
	out=$(dog_at "${1:-0}" cluster info -r 2>/dev/null)
	mapfile -t lines <<<"$out"
	for l in "${lines[@]}"; do
		[[ $l =~ ^[0-9]+\ ([0-9]+)\ \[ ]] || continue
		echo "${BASH_REMATCH[1]}"
		return 0
	done
	return 0
}

# wait_for_epoch E [IDX...]: the newest epoch is E on every given node
wait_for_epoch()
{
	local want=$1 i end
	shift
	local -a which=("$@")
	[ ${#which[@]} -gt 0 ] || mapfile -t which < <(running_nodes)
	end=$((SECONDS + 60))
	for i in "${which[@]}"; do
		while [ "$(current_epoch "$i")" != "$want" ]; do
			[ $SECONDS -ge $end ] &&
				_fail "node $i: epoch '$(current_epoch "$i")', want $want"
			sleep 0.3
		done
	done
}

# VDI id of the current VDI NAME as listed by node IDX, in 6 hex digits
# (as in object ids: data object I of vid V is 00VVVVVVIIIIIIII)
vdi_id()
{
	local v
	v=$(dog_at "${2:-0}" vdi list -r "$1" 2>/dev/null |
		awk -v n="$1" '($1 == "=" || $1 == "c") && $2 == n {
			print $8; exit }')
	[ -n "$v" ] && printf '%06x\n' "0x$v"
}

# wait until no running node reports recovery in progress
# (`dog node recovery` prints only its two header lines then)
wait_for_recovery()
{
	local i end out
	end=$((SECONDS + ${1:-120}))
	for i in $(running_nodes); do
		while :; do
			out=$(dog_at "$i" node recovery 2>/dev/null) &&
				_nr_lines "$out" && [ "$NR_LINES" -eq 2 ] && break
			[ $SECONDS -ge $end ] &&
				_fail "recovery did not finish on node $i: $out"
			sleep 0.5
		done
	done
}

# metric IDX NAME: the sum of metric NAME (every label set) of node IDX,
# from `dog node stat -m -r` (a snapshot at most a second old); empty if
# the node does not answer
metric_sum()
{
	dog_at "$1" node stat -m -r 2>/dev/null |
		awk -v m="$2" '$1 == m || index($1, m "{") == 1 { s += $2; f = 1 }
			END { if (f) printf "%.0f\n", s }'
}

# wait_metric_grows IDX NAME N [SECONDS]: wait until metric NAME of node IDX
# is N more than when called (default 30 s)
wait_metric_grows()
{
	local base end
	base=$(metric_sum "$1" "$2")
	[ -n "$base" ] || _fail "node $1 has no metric $2"
	end=$((SECONDS + ${4:-30}))
	while [ "$(metric_sum "$1" "$2")" -lt $((base + $3)) ]; do
		[ $SECONDS -ge $end ] &&
			_fail "node $1: $2 did not grow by $3 in ${4:-30}s"
		sleep 0.2
	done
}

# ---------------------------------------------------------------------------
# sheep daemons

# the -c argument of this test's sheep: KELPIE_DRIVER=corosync runs the
# test under corosync (a corosync must be running: tests/corosync/start.sh),
# in a CPG group of its own so that tests never see each other's nodes;
# KELPIE_DRIVER=zookeeper runs it under the ZooKeeper at KELPIE_ZK_ADDR
# (HOST:PORT, e.g. from tests/zookeeper/start.sh), in a cluster (znode
# /kelpie-<test dir>) of its own, with sessions of KELPIE_ZK_SESSION seconds
# (default 4).  The cluster id is one znode name: characters other than
# letters, digits, '-', '_' and '.' in the directory name become '_', and
# it is cut at 64 characters (run.sh's kelpie-NNN.XXXXXX needs neither).
cluster_driver()
{
	local id
	id=kelpie-$(basename "$T")
	case ${KELPIE_DRIVER:-local} in
	corosync) echo "corosync:$id" ;;
	zookeeper)
		[ -n "${KELPIE_ZK_ADDR:-}" ] ||
			_fail "KELPIE_DRIVER=zookeeper needs KELPIE_ZK_ADDR=HOST:PORT" \
				"(tests/zookeeper/start.sh starts a server)"
		id=${id//[!A-Za-z0-9_.-]/_}
		id=${id:0:64}
		echo "zookeeper:$KELPIE_ZK_ADDR/$id,timeout=${KELPIE_ZK_SESSION:-4}"
		;;
	*) echo "local:$T/cluster" ;;
	esac
}

# SHEEP_DISKS[IDX]=DIR1,DIR2...: node IDX is a multi-disk node (its
# objects on those disks, not in $T/IDX/obj)
declare -a SHEEP_DISKS

# start_sheep IDX [extra sheep args]: start node IDX and wait until it
# accepts connections.  The daemon daemonises and exits 0 once listening.
start_sheep()
{
	local idx=$1 rc pid end nosync=-n base
	shift
	base=$T/$idx
	[ -n "${SHEEP_DISKS[idx]:-}" ] && base=$base,${SHEEP_DISKS[idx]}
	# SHEEP_SYNC=1: the store syncs (no -n), for tests of flushes
	[ "${SHEEP_SYNC:-0}" = 1 ] && nosync=
	[ -x "$SHEEP_BIN" ] || _fail "$SHEEP_BIN is not built"
	[ "$idx" -lt "$NR_PORTS" ] || _fail "node index $idx >= $NR_PORTS"
	mkdir -p "$T/$idx"
	rm -f "$T/$idx/pid"
	echo "$SHEEP_BIN -p ${PORT[idx]} -c $(cluster_driver) $nosync -z $idx" \
		"-P $T/$idx/pid $* $base" >>"$T/.commands"
	# the start-up process must exit once the daemon listens
	timeout -k 5 "$START_TIMEOUT" \
		setsid -w "$SHEEP_BIN" -p "${PORT[idx]}" -c "$(cluster_driver)" \
		$nosync -z "$idx" -P "$T/$idx/pid" "$@" "$base" \
		</dev/null >>"$T/$idx.stdout" 2>&1
	rc=$?
	[ $rc -eq 0 ] || _fail "sheep $idx exited with $rc at start-up" \
		"($(tail -n 3 "$T/$idx.stdout" "$T/$idx/sheep.log" 2>/dev/null))"
	end=$((SECONDS + START_TIMEOUT))
	while :; do
		pid=$(sheep_pid "$idx")
		if [ -n "$pid" ] && _pid_alive "$pid" &&
			(exec 3<>"/dev/tcp/127.0.0.1/${PORT[idx]}") 2>/dev/null; then
			break
		fi
		[ $SECONDS -ge $end ] &&
			_fail "sheep $idx not up after ${START_TIMEOUT}s (pid '$pid')"
		sleep 0.1
	done
	echo "$pid" >>"$T/.pids"
}

# start_sheeps N [extra args]: start nodes 0..N-1 and wait until all of
# them list N nodes
start_sheeps()
{
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		start_sheep $i "$@"
	done
	wait_for_nodes "$n"
}

# kill_sheep IDX [SIGNAL]: SIGKILL (default) node IDX and wait until gone
kill_sheep()
{
	local idx=$1 sig=${2:-KILL} pid
	pid=$(sheep_pid "$idx")
	_pid_is_ours "$pid" || _fail "sheep $idx (pid '$pid') is not running"
	kill -s "$sig" "$pid"
	_wait_pid_gone "$pid" 30 || _fail "sheep $idx (pid $pid) did not exit"
}

# build_placement_model: $T/placement OID COPIES PORT:ZONE:VNODES... prints
# the target ports of OID, from lib/hash.c (an independent model of §2)
build_placement_model()
{
	cc -std=gnu11 -D_GNU_SOURCE -I"$TOP/include" -o "$T/placement" \
		"$TOP/tests/functional/placement_model.c" "$TOP/lib/hash.c" -lm ||
		_fail "cannot build the placement model"
}

# ---------------------------------------------------------------------------
# mounts

# _mount_tmpfs DIR SIZE: mount a tmpfs for this test (unmounted at exit)
_mount_tmpfs()
{
	mkdir -p "$1"
	mount -t tmpfs -o "size=$2" tmpfs "$1" || return 1
	echo "$1" >>"$T/.mounts"
}

# _mount_loop DIR SIZE [FS]: a file system of SIZE on a loop device (a
# sparse image in $T) mounted at DIR; prints the device.  FS ext4 (the
# default) is mounted with errors=remount-ro, so that
# /sys/fs/ext4/DEV/trigger_fs_error makes it fail; FS xfs as it comes.
_mount_loop()
{
	local img=$T/.loop.$(basename "$1").img dev fs=${3:-ext4}
	mkdir -p "$1"
	truncate -s "$2" "$img" || return 1
	dev=$(losetup -f --show "$img") || return 1
	echo "$dev" >>"$T/.loops"
	case $fs in
	ext4)
		mkfs.ext4 -q -F "$dev" >/dev/null 2>&1 || return 1
		mount -o errors=remount-ro "$dev" "$1" || return 1
		;;
	xfs)
		mkfs.xfs -q -f "$dev" >/dev/null 2>&1 || return 1
		mount "$dev" "$1" || return 1
		;;
	*)
		return 1
		;;
	esac
	echo "$1" >>"$T/.mounts"
	echo "$dev"
}
_umount_all()
{
	local m
	if [ -f "$T/.mounts" ]; then
		tac "$T/.mounts" | while read -r m; do
			mountpoint -q "$m" || continue
			# keep the log of a node that lived on the mount
			[ -f "$m/sheep.log" ] && mkdir -p "$T/saved-logs" &&
				cp "$m/sheep.log" \
					"$T/saved-logs/$(basename "$m").sheep.log"
			umount "$m" 2>/dev/null || umount -l "$m"
		done
		rm -f "$T/.mounts"
	fi
	if [ -f "$T/.loops" ]; then
		while read -r m; do
			losetup -d "$m" 2>/dev/null
		done <"$T/.loops"
		rm -f "$T/.loops"
	fi
}

# ---------------------------------------------------------------------------
# clean-up

# kill every daemon this test started (pidfiles and recorded pids), only if
# the process still is one of ours, then unmount what the test mounted
stop_all()
{
	local pid f
	local -a pids=() killed=()
	for f in "$T"/*/pid; do
		[ -f "$f" ] && pids+=("$(cat "$f")")
	done
	[ -f "$T/.pids" ] && mapfile -t -O ${#pids[@]} pids <"$T/.pids"
	for pid in "${pids[@]}"; do
		if _pid_is_ours "$pid"; then
			kill -KILL "$pid" 2>/dev/null
			killed+=("$pid")
		fi
	done
	for pid in "${killed[@]}"; do
		_wait_pid_gone "$pid" 10
	done
	_umount_all
	_ports_release
}

_on_exit()
{
	local rc=$?
	trap - EXIT
	# a test's own cleanup (an immutable file it made, ...)
	[ -n "${ON_EXIT_HOOK:-}" ] && $ON_EXIT_HOOK
	stop_all
	if [ -n "${_OWN_T:-}" ]; then
		if [ $rc -eq 0 ]; then
			rm -rf "$T"
		else
			echo "test directory kept: $T" >&2
		fi
	fi
	exit $rc
}

# ---------------------------------------------------------------------------
# output filters (also applied by run.sh to the whole stdout)

# dates and times: 2024-03-02 10:20[:31] -> DATE, ctime(3) text -> DATE
_filter_date()
{
	sed -E \
		-e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}(:[0-9]{2})?/DATE/g' \
		-e 's/(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}/DATE/g'
}

# elapsed-time lines of `dog -T`
_filter_elapsed()
{
	sed -E 's/^Elapsed time: [0-9.]+ seconds$/Elapsed time: N seconds/'
}

# the test's ports -> PORTn (5 characters, like the ports, so widths hold)
_filter_ports()
{
	local args=() i p
	if [ -f "$T/.ports" ]; then
		while read -r i p; do
			args+=(-e "s/\\b$p\\b/PORT$i/g")
		done <"$T/.ports"
	fi
	if [ ${#args[@]} -gt 0 ]; then
		sed "${args[@]}"
	else
		cat
	fi
}

# everything the runner applies before comparing with NNN.out; a test may
# add sed expressions (extended syntax, sed -E) to $T/.filter.sed
_filter_output()
{
	if [ -s "$T/.filter.sed" ]; then
		_filter_date | _filter_elapsed | _filter_ports |
			sed -E -f "$T/.filter.sed"
	else
		_filter_date | _filter_elapsed | _filter_ports
	fi
}

# ---------------------------------------------------------------------------
# data helpers

# _random_file PATH SIZE (head -c size syntax, e.g. 64M)
_random_file()
{
	head -c "$2" /dev/urandom >"$1" || _fail "cannot create $1"
}

# _flip_byte FILE OFFSET: invert the byte at OFFSET, so that it surely
# changes (writing a fixed byte into random data leaves it unchanged
# once in 256 runs)
_flip_byte()
{
	local b
	b=$(od -An -tu1 -j "$2" -N 1 "$1" | tr -d ' ')
	[ -n "$b" ] || _fail "no byte $2 in $1"
	printf "\\$(printf %03o $((255 - b)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none ||
		_fail "cannot change $1"
}

# obj_data FILE: the data of a stored object file, without the per-block
# checksums and footer that follow it (sheep/store/csum.c); the footer's
# last 8 bytes are the data size and the number of blocks, little-endian
obj_data()
{
	local size
	size=$(tail -c 8 "$1" | od -An -tu4 -N4 | tr -d ' ')
	[ -n "$size" ] || { echo "obj_data: cannot read $1" >&2; return 1; }
	head -c "$size" "$1"
}

# _same FILE1 FILE2 WHAT: fail unless the files are identical
_same()
{
	cmp -s "$1" "$2" || _fail "$3: $(cmp "$1" "$2" 2>&1 | head -n 1)"
}

# object files (16 hex digits) of node IDX's store, one name per line;
# optional prefix selects a kind (00 data, 80 inode, ...)
node_objects()
{
	local dirs=("$T/$1/obj") d
	if [ -n "${SHEEP_DISKS[$1]:-}" ]; then
		dirs=()
		for d in ${SHEEP_DISKS[$1]//,/ }; do
			dirs+=("$d/obj")
		done
	fi
	for d in "${dirs[@]}"; do
		[ -d "$d" ] || continue
		# a tree store's files are one level down (meta/, xx/)
		find "$d" -maxdepth 2 -path "$d/.stale" -prune -o -type f \
			-regextype posix-extended \
			-regex ".*/${2:-}[0-9a-f]{$((16 - ${#2}))}" -printf '%f\n'
	done | sort
}

# obj_file IDX NAME: the path of object file NAME on node IDX (its obj/,
# or its disks' obj/), in the plain store's place or the tree store's
# (meta/ for inode, vmstate and attribute objects, else the low byte of
# the VDI id)
obj_file()
{
	_obj_path "$@"
	echo "$OBJ_PATH"
}

# _obj_path IDX NAME: obj_file's path in $OBJ_PATH, without a subshell
# (check_placement asks for hundreds)
_obj_path()
{
	local dirs=("$T/$1/obj") d sub
	if [ -n "${SHEEP_DISKS[$1]:-}" ]; then
		dirs=()
		for d in ${SHEEP_DISKS[$1]//,/ }; do
			dirs+=("$d/obj")
		done
	fi
	case ${2:0:1} in
	[2-9a-f]) sub=meta ;;
	*) sub=${2:6:2} ;;
	esac
	for d in "${dirs[@]}"; do
		[ -e "$d/$2" ] && { OBJ_PATH=$d/$2; return; }
		[ -e "$d/$sub/$2" ] && { OBJ_PATH=$d/$sub/$2; return; }
	done
	OBJ_PATH=$T/$1/obj/$2
}

# ---------------------------------------------------------------------------
# initialisation (skipped when run.sh sources this file only for filters)

if [ -z "${KELPIE_COMMON_NOINIT:-}" ]; then
	if [ -z "${T:-}" ]; then
		T=$(mktemp -d "${TMPDIR:-/tmp}/kelpie-test.XXXXXX")
		_OWN_T=1
		echo "test directory: $T" >&2
	fi
	mkdir -p "$T"
	trap _on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	[ -x "$DOG_BIN" ] || _fail "$DOG_BIN is not built"
	[ -x "$SHEEP_BIN" ] || _fail "$SHEEP_BIN is not built"
	_alloc_ports
	export TOP T
fi
