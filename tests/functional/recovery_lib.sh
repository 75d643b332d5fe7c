# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the recovery and failure tests (010-019).  Sourced after
# common.sh:
#
#   . "$(dirname "$0")/common.sh"
#   . "$(dirname "$0")/recovery_lib.sh"
#
# The load client (tests/tools/loadclient.c) is built into
# build/tests/loadclient.

LOADCLIENT=$TOP/build/tests/loadclient

# built once for every test that uses it (a lock, as tests run side by
# side), again when its source or the library is newer
build_loadclient()
{
	local libs src=$TOP/tests/tools/loadclient.c lib=$TOP/build/libkelpie.a
	[ -f "$lib" ] || _fail "build/libkelpie.a is not built"
	mkdir -p "$TOP/build/tests"
	(
		flock 9
		if [ -x "$LOADCLIENT" ] && ! [ "$src" -nt "$LOADCLIENT" ] &&
			! [ "$lib" -nt "$LOADCLIENT" ]; then
			exit 0
		fi
		libs=$(pkg-config --libs liburcu libcrypto 2>/dev/null)
		# shellcheck disable=SC2086
		cc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
			-I"$TOP/include" -o "$LOADCLIENT.tmp.$$" "$src" "$lib" \
			$libs -lpthread -lm >"$T/loadclient.build" 2>&1 &&
			mv "$LOADCLIENT.tmp.$$" "$LOADCLIENT"
	) 9>"$TOP/build/tests/.loadclient.lock" ||
		_fail "cannot build the load client: $(head -n 5 "$T/loadclient.build")"
}

# wait_acked MIRROR N [SECONDS [PID]]: wait until the load client
# acknowledged N writes more than the mirror held when called (the load is
# under way), for at most SECONDS (default 30); with PID, returns 1 at
# once when that load client has ended
wait_acked()
{
	local mirror=$1 n=$2 secs=${3:-30} pid=${4:-} base end
	# a mirror the client has yet to create holds nothing yet
	acked_now() {
		local c
		c=$(grep -c '^A ' "$mirror" 2>/dev/null)
		echo "${c:-0}"
	}
	base=$(acked_now)
	end=$((SECONDS + secs))
	while [ "$(acked_now)" -lt $((base + n)) ]; do
		[ -n "$pid" ] && ! _pid_alive "$pid" && return 1
		[ $SECONDS -ge $end ] &&
			_fail "the load client did not acknowledge $n writes" \
				"within ${secs}s ($mirror)"
		sleep 0.1
	done
}

# ports of the given node indices as a comma list (default: nodes 0..7)
port_list()
{
	local i out=
	local -a which=("$@")
	[ ${#which[@]} -gt 0 ] || which=($(seq 0 $((NR_PORTS - 1))))
	for i in "${which[@]}"; do
		out+=${out:+,}${PORT[i]}
	done
	echo "$out"
}

# lc_verify IDX VDI MIRROR WHAT: verify the mirror through node IDX
lc_verify()
{
	local idx=$1 vdi=$2 mirror=$3 what=$4 out rc
	out=$("$LOADCLIENT" verify -p "${PORT[idx]}" -m "$mirror" "$vdi" \
		2>"$T/verify.err")
	rc=$?
	_log "verify $vdi via node $idx: $out"
	[ $rc -eq 0 ] || _fail "$what: verify of $vdi via node $idx" \
		"(exit $rc, $out): $(head -n 5 "$T/verify.err")"
}

# all objects (any kind) of VDI id $1 (6 hex digits) on node IDX $2
vdi_objects_on()
{
	node_objects "$2" | grep -E "^[0-9a-f]{2}$1[0-9a-f]{8}\$"
}

# check_placement VID N WHAT [IDX...]: every object of VID held by one of
# the given (default: running) nodes is on exactly N of them, and every
# copy of an object has the same SHA-1
check_placement()
{
	local vid=$1 want=$2 what=$3 i oid bad
	shift 3
	local -a which=("$@")
	[ ${#which[@]} -gt 0 ] || mapfile -t which < <(running_nodes)
	for i in "${which[@]}"; do
		vdi_objects_on "$vid" "$i" | sed "s|^|$i |"
	done >"$T/placement"
	bad=$(awk '{ print $2 }' "$T/placement" | sort | uniq -c |
		awk -v n="$want" '$1 != n { print $2 " on " $1 " nodes" }' |
		head -n 5)
	[ -z "$bad" ] || _fail "$what: objects of vid $vid not on exactly" \
		"$want nodes: $bad"
	[ -s "$T/placement" ] || _fail "$what: no object of vid $vid anywhere"
	# one process for every replica's checksum, not six each
	while read -r i oid; do
		_obj_path "$i" "$oid"
		echo "$oid $OBJ_PATH"
	done <"$T/placement" | python3 "$TOP/tests/tools/obj_sums.py" |
		sort -u >"$T/placement.sums"
	bad=$(grep ' unreadable:' "$T/placement.sums" | head -n 5)
	[ -z "$bad" ] || _fail "$what: replicas of vid $vid unreadable: $bad"
	bad=$(awk '{ print $1 }' "$T/placement.sums" | uniq -d | head -n 5)
	[ -z "$bad" ] || _fail "$what: replicas of vid $vid differ:" \
		"$(for oid in $bad; do grep "$oid" "$T/placement" |
			while read -r i o; do
				echo "$o@node$i=$(obj_data "$(obj_file "$i" "$o")" | sha1sum | cut -c1-8)"
			done; done | tr '\n' ' ')"
	return 0
}

# number of entries in node IDX's stale directory
nr_stale()
{
	local d=$T/$1/obj/.stale f n=0
	[ -d "$d" ] || { echo 0; return; }
	# globs, not find | grep: wait loops call this every half second
	for f in "$d"/* "$d"/.[!.]* "$d"/..?*; do
		{ [ -e "$f" ] || [ -L "$f" ]; } && n=$((n + 1))
	done
	echo "$n"
}

# wait_no_stale SECS [IDX...]: the stale area of every given (default:
# running) node becomes empty (the purge runs asynchronously after the
# last COMPLETE_RECOVERY)
wait_no_stale()
{
	local secs=$1 i end
	shift
	local -a which=("$@")
	[ ${#which[@]} -gt 0 ] || mapfile -t which < <(running_nodes)
	end=$((SECONDS + secs))
	for i in "${which[@]}"; do
		while [ "$(nr_stale "$i")" != 0 ]; do
			[ $SECONDS -ge $end ] && _fail "node $i still has" \
				"$(nr_stale "$i") stale entries:" \
				"$(ls "$T/$i/obj/.stale" | head -n 5 | tr '\n' ' ')"
			sleep 0.5
		done
	done
}

# the epoch history of node IDX: `dog cluster info -r` without its status
# line ("<unix time> <epoch> [<nodes>]", newest first)
epoch_history()
{
	dog_at "$1" cluster info -r 2>/dev/null | tail -n +2
}

# same_epoch_history WHAT [IDX...]: every given (default: running) node
# shows the same non-empty history: the same epochs with the same member
# lists.  The times may differ by up to 2 s: every node stamps an epoch it
# creates with its own clock when it processes the membership change (as
# the original does), so two nodes can fall on both sides of a second.
# The history of the first node is left in $T/history.
same_epoch_history()
{
	local what=$1 i first= bad
	shift
	local -a which=("$@")
	[ ${#which[@]} -gt 0 ] || mapfile -t which < <(running_nodes)
	for i in "${which[@]}"; do
		epoch_history "$i" >"$T/history.$i"
		[ -s "$T/history.$i" ] || _fail "$what: node $i shows no epochs"
		cut -d' ' -f2- "$T/history.$i" >"$T/history.$i.nt"
		if [ -z "$first" ]; then
			first=$i
			cp "$T/history.$i" "$T/history"
			continue
		fi
		cmp -s "$T/history.$first.nt" "$T/history.$i.nt" ||
			_fail "$what: epoch history of node $i differs from" \
				"node $first: $(diff "$T/history.$first.nt" \
				"$T/history.$i.nt" | grep '^[<>]' | head -n 4 |
				tr '\n' ' ')"
		bad=$(paste -d' ' "$T/history.$first" "$T/history.$i" |
			awk '{ n = NF / 2; d = $1 - $(n + 1) }
				d > 2 || d < -2 { print "epoch " $2 ": " $1 " vs " $(n + 1) }' |
			head -n 3)
		[ -z "$bad" ] || _fail "$what: epoch times of node $i and node" \
			"$first differ by more than 2 s: $bad"
	done
}

# `dog node recovery -r` row of the node with port of IDX: "finished total"
# (empty when the node is not recovering); asked of node ASK (default IDX)
recovery_progress_of()
{
	dog_at "${2:-$1}" node recovery -r 2>/dev/null |
		awk -v p=":${PORT[$1]}" 'index($2, p) { print $5, $6; exit }'
}

# set_throttle MAX MS [IDX...]: throttle recovery on the given (default:
# running) nodes
set_throttle()
{
	local max=$1 ms=$2 i
	shift 2
	local -a which=("$@")
	[ ${#which[@]} -gt 0 ] || mapfile -t which < <(running_nodes)
	for i in "${which[@]}"; do
		dog_at "$i" node recovery set-throttle "$max" "$ms" ||
			_fail "set-throttle $max $ms on node $i exited with $?"
	done
}

# read_same IDX VDI FILE WHAT: `dog vdi read VDI` through IDX equals FILE
read_same()
{
	dog_at "$1" vdi read "$2" >"$T/read" ||
		_fail "$4: read of $2 via node $1 exited with $?"
	_same "$3" "$T/read" "$4: $2 via node $1"
	rm -f "$T/read"
}
