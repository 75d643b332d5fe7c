#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Multi-process tests of the corosync cluster driver (sheep/group/corosync.c)
# with the stand-alone cluster member of tests/unit/local_driver_harness.c,
# built against the corosync driver (-Dcdrv_local=cdrv_corosync; its -p
# option becomes the CPG group name).  Every scenario uses its own group on
# one corosync (started by tests/corosync/start.sh, or reused).
#
#   bash tests/corosync/driver.sh        (from anywhere)
#
# With KELPIE_GROUP_DRIVER=zookeeper (tests/zookeeper/driver.sh) the same
# scenarios run against the ZooKeeper driver on a private ZooKeeper
# (tests/zookeeper/start.sh), each in a cluster of its own with a session
# timeout of 1 s: a SIGKILLed process is seen gone only once its session
# expires, so the bound on that wait is larger there.
#
# Ends with "N passed, N failed[, N skipped]"; exits non-zero on failure.

set -u
cd "$(dirname "$0")/../.." || exit 1

CC=${CC:-gcc}
DRV=${KELPIE_GROUP_DRIVER:-corosync}
BIN=build/${DRV}_harness
T=$(mktemp -d /tmp/kelpie-csdrv.XXXXXX) || exit 1
G=kdrv$$
LEAVE_MS=1000		# a SIGKILLed process is seen gone within this
# Bounds on waits for what no check is about (a cluster forming, a join
# request arriving): generous, as a loaded CI machine (a JVM ZooKeeper and
# ASan builds beside the functional pool) once took more than 3 s to form
# d's two-member cluster.  Processes that are stopped explicitly live long
# enough to outlast them; a wait ends as soon as its condition holds.
FORM_MS=15000
LIFE_MS=40000
PASS=0
FAIL=0
SKIP=0
declare -A PID

cleanup()
{
	local p

	# only the harness processes this script started
	for p in "${PID[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	for p in "${PID[@]}"; do
		wait "$p" 2>/dev/null
	done
	[ -d "$T/corosync" ] && bash tests/corosync/stop.sh "$T/corosync" >&2
	[ -d "$T/zk" ] && bash tests/zookeeper/stop.sh "$T/zk" --keep >&2
	if [ "$FAIL" -eq 0 ]; then
		rm -rf "$T"
	else
		echo "outputs kept in $T"
	fi
}
trap cleanup EXIT

start_corosync()
{
	bash tests/corosync/start.sh "$T/corosync" >&2
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "SKIP corosync cannot run here"
		echo "0 passed, 0 failed, 1 skipped"
		exit 0
	fi
	build_harness corosync -lcpg -lquorum
}

# build_harness DRIVER LIBS...: $BIN, and $BIN-old that plays a release
# before ACCEPT_SET (its JOIN does not say it reads one)
build_harness()
{
	local drv=$1 d

	shift
	for d in "" -DMY_CAPS=0; do
		$CC -std=gnu11 -D_GNU_SOURCE -Iinclude -Isheep -Wall -Wextra \
			-Werror -Wno-unused-parameter \
			-fsanitize=address,undefined -g $d \
			-Dcdrv_local=cdrv_$drv -o "$BIN${d:+-old}" \
			tests/unit/local_driver_harness.c sheep/group/$drv.c \
			sheep/group/procgroup.c lib/event.c lib/util.c \
			lib/log.c lib/assert.c lib/hash.c lib/proto.c "$@" \
			-lpthread -lm || return 1
	done
}

start_zookeeper()
{
	local port

	port=$(bash tests/zookeeper/start.sh "$T/zk" 2>"$T/zk.start" | tail -n 1)
	rc=${PIPESTATUS[0]}
	if [ $rc -eq 77 ]; then
		echo "SKIP ZooKeeper cannot run here: $(tail -n 1 "$T/zk.start")"
		echo "0 passed, 0 failed, 1 skipped"
		exit 0
	fi
	if [ $rc -ne 0 ]; then
		cat "$T/zk.start"
		echo "0 passed, 1 failed"
		exit 1
	fi
	ZK_PREFIX=127.0.0.1:$port/
	ZK_SUFFIX=,timeout=1
	# the session (1 s), ZooKeeper's expiry tick, and the second the
	# driver waits for more deaths after the first (LEAVE_SETTLE_MS)
	LEAVE_MS=4000
	build_harness zookeeper -lzookeeper_mt
}

ZK_PREFIX=
ZK_SUFFIX=
mkdir -p build
case $DRV in
corosync) start_corosync ;;
zookeeper) start_zookeeper ;;
*) echo "unknown KELPIE_GROUP_DRIVER $DRV"; exit 1 ;;
esac || {
	echo "build failed"
	echo "0 passed, 1 failed"
	exit 1
}

# bash reports each SIGKILLed job on stderr; keep that out of the results
exec 3>&2 2>>"$T/shell.err"

now_ms() { date +%s%3N; }
T0=$(now_ms)

ok() { echo "ok   $*"; PASS=$((PASS + 1)); }
bad() { echo "FAIL $*"; FAIL=$((FAIL + 1)); }

# not_formed TAG: a scenario's cluster did not form; the last lines of its
# processes' outputs go to the report (tests/run-all.sh shows WHY lines),
# as CI keeps no files
not_formed()
{
	local f

	bad "$1: cluster did not form"
	for f in "$T/$1".*.out "$T/$1".*.err; do
		[ -e "$f" ] || continue
		echo "WHY --- ${f#"$T"/} at $(elapsed)"
		tail -n 6 "$f" | sed 's/^/WHY /'
	done
}

check()
{
	local desc=$1

	shift
	if "$@"; then ok "$desc"; else bad "$desc"; return 1; fi
}

# evidence TAG.PORT...: after a failed check, the last lines of those
# processes' outputs as WHY lines (CI keeps no files)
evidence()
{
	local tp

	for tp in "$@"; do
		echo "WHY --- $tp.out at $(elapsed)"
		tail -n 8 "$T/$tp.out" 2>/dev/null | sed 's/^/WHY /'
	done
}

# start_together TAG PORT...: start them (-t $LIFE_MS), wait until each is
# connected (#READY), then let all of them join at once (-G).  JOINs more
# than 200 ms apart are decided one at a time, and on a loaded machine a
# start may take longer than any lead given (ci61, ci67: scenario k with
# 300 ms and 1.5 s ahead; ci of stop 53: j2 with 300 ms)
start_together()
{
	local tag=$1 go="$T/$1.$2.go" p

	shift
	for p in "$@"; do start "$tag" "$p" -t "$LIFE_MS" -G "$go"; done
	for p in "$@"; do wait_for "$FORM_MS" has "$tag.$p" '^#READY'; done
	touch "$go"
}

# kill_together PID...: SIGKILL them all from a real-time process, which the
# processes it wakes cannot preempt between two kills on a busy host (one
# kill, a wait for a CPU, then the next made two deaths 200 ms apart)
kill_together() { chrt -f 10 kill -9 "$@" 2>/dev/null || kill -9 "$@"; }

# start TAG PORT [harness options]: group $G-TAG, output $T/TAG.PORT.{out,err}
# ($HBIN instead of $BIN if set)
start()
{
	local tag=$1 port=$2

	shift 2
	"${HBIN:-$BIN}" -p "$ZK_PREFIX$G-$tag$ZK_SUFFIX" -n "$port" -o "$T/$tag.$port.out" "$@" \
		2>"$T/$tag.$port.err" &
	PID[$tag.$port]=$!
}

wait_for()
{
	local end=$(($(now_ms) + $1))

	shift
	until "$@"; do
		[ "$(now_ms)" -ge "$end" ] && return 1
		sleep 0.05
	done
}

has() { grep -q -e "$2" "$T/$1.out" 2>/dev/null; }

all_have()
{
	local re=$1 f

	shift
	for f in "$@"; do
		has "$f" "$re" || return 1
	done
}

stop()
{
	local k

	for k in "$@"; do
		[ -n "${PID[$k]:-}" ] && kill -TERM "${PID[$k]}" 2>/dev/null
	done
}

reap()
{
	local k

	for k in "$@"; do
		[ -n "${PID[$k]:-}" ] && wait "${PID[$k]}" 2>/dev/null
		unset "PID[$k]"
	done
	return 0
}

events() { grep -v '^#' "$T/$1.out"; }
first_event() { events "$1" | head -n 1; }
count() { grep -c -e "$2" "$T/$1.out"; }

# agree A B: from the later joiner's first event on, both saw the same
# events (up to where the shorter one stops)
agree()
{
	local a=$T/agree.a b=$T/agree.b n la lb l

	events "$1" >"$a"
	events "$2" >"$b"
	[ -s "$a" ] && [ -s "$b" ] || return 1
	n=$(grep -n -x -F -e "$(head -n 1 "$b")" "$a" | head -n 1 | cut -d: -f1)
	if [ -n "$n" ]; then
		tail -n +"$n" "$a" >"$a.t"
		cp "$b" "$b.t"
	else
		n=$(grep -n -x -F -e "$(head -n 1 "$a")" "$b" | head -n 1 |
			cut -d: -f1)
		[ -n "$n" ] || return 1
		tail -n +"$n" "$b" >"$b.t"
		cp "$a" "$a.t"
	fi
	la=$(wc -l <"$a.t")
	lb=$(wc -l <"$b.t")
	l=$((la < lb ? la : lb))
	[ "$l" -gt 0 ] && cmp -s <(head -n "$l" "$a.t") <(head -n "$l" "$b.t")
}

all_agree()
{
	local x y

	for x in "$@"; do
		for y in "$@"; do
			[ "$x" \< "$y" ] || continue
			agree "$x" "$y" || return 1
		done
	done
}

no_bugs()
{
	! grep -h -e '^#BUG' -e '^#VIOLATION' "$T"/*.out 2>/dev/null | grep -q .
}

elapsed() { echo "$(($(now_ms) - T0)) ms"; }

# ------------------------------------------------------------------------
# rounds 2 and 3: every would-be founder is slow, so that the others wait
# for it while they do not know the cluster's state yet.  Each process
# lives 1 s from when it sees all three members (-l 3), not from its
# join: a loaded CI machine once took longer than a fixed lifetime to form
# the cluster, and a process that never sees three stops on its alarm.
echo "== a: three processes join at the same moment (3 rounds) [$(elapsed)]"
at=$(($(now_ms) + 1500))
for r in 1 2 3; do
	slow=
	[ $r -gt 1 ] && slow="-F 100"
	for p in 7000 7001 7002; do
		start a$r $p -t 1000 -l 3 -T $at $slow
	done
done
for r in 1 2 3; do
	reap a$r.7000 a$r.7001 a$r.7002
	check "a$r: every process saw the 3-member accept" \
		all_have '^ACCEPT 700[0-2] \[7000,7001,7002\] ' \
		a$r.7000 a$r.7001 a$r.7002
	check "a$r: all event sequences agree" \
		all_agree a$r.7000 a$r.7001 a$r.7002
	check "a$r: exactly one process founded the cluster" \
		test "$(cat "$T"/a$r.*.out | grep -c '^ACCEPT .*/nr-0$')" -eq 1
done

# ------------------------------------------------------------------------
echo "== b: 3 x 50 concurrent notifies (plus notifies from callbacks) [$(elapsed)]"
for p in 7000 7001 7002; do start b $p -t $LIFE_MS -w 3 -N 50 -E; done
notify_counts() {
	local k

	for k in b.7000 b.7001 b.7002; do
		[ "$(count $k '^NOTIFY ')" -eq 165 ] || return 1
	done
}
check "b: every process got all 165 notifies" wait_for $FORM_MS notify_counts
stop b.7000 b.7001 b.7002
reap b.7000 b.7001 b.7002
same_notifies() {
	cmp -s <(grep '^NOTIFY' "$T/b.7000.out") <(grep '^NOTIFY' "$T/b.7001.out") &&
	cmp -s <(grep '^NOTIFY' "$T/b.7000.out") <(grep '^NOTIFY' "$T/b.7002.out")
}
check "b: identical notify order everywhere" same_notifies
fifo() {
	awk '$1 == "NOTIFY" && $3 == "n" {
		if ($5 != next_i[$4] + 0) bad = 1; next_i[$4] = $5 + 1
	} END { exit bad }' "$T/b.7000.out"
}
check "b: each sender's notifies in sending order" fifo
check "b: all event sequences agree" all_agree b.7000 b.7001 b.7002

# ------------------------------------------------------------------------
echo "== c: SIGKILL of a member [$(elapsed)]"
for p in 7000 7001 7002; do start c $p -t $LIFE_MS; done
if wait_for $FORM_MS all_have '\[7000,7001,7002\]' c.7000 c.7001 c.7002; then
	kill -9 "${PID[c.7001]}"
	t0=$(now_ms)
	wait_for $((LEAVE_MS * 3)) all_have '^LEAVE 7001 \[7000,7002\]' \
		c.7000 c.7002
	dt=$(($(now_ms) - t0))
	check "c: the others saw the leave in ${dt} ms (< $LEAVE_MS)" \
		test "$dt" -lt "$LEAVE_MS"
else
	not_formed c
fi
stop c.7000 c.7002
reap c.7000 c.7001 c.7002
check "c: exactly one LEAVE 7001 each" \
	test "$(count c.7000 '^LEAVE 7001 ')$(count c.7002 '^LEAVE 7001 ')" = 11
check "c: all event sequences agree" all_agree c.7000 c.7001 c.7002

# ------------------------------------------------------------------------
# ZooKeeper: sessions that die together expire within a tick or two of each
# other, and the driver waits a second after the first before it removes
# what it finds gone, so both leave in one change (one epoch in sheep).
# corosync reports each dead process of its own host separately; there the
# scenario checks that both left, everywhere the same.
echo "== c2: two members SIGKILLed at once [$(elapsed)]"
for p in 7000 7001 7002 7003; do start c2 $p -t $LIFE_MS; done
if wait_for $FORM_MS all_have '\[7000,7001,7002,7003\]' \
	c2.7000 c2.7001 c2.7002 c2.7003; then
	kill_together "${PID[c2.7001]}" "${PID[c2.7002]}"
	check "c2: the others saw both leave" \
		wait_for $((LEAVE_MS * 3)) all_have '\[7000,7003\]$' \
		c2.7000 c2.7003
else
	not_formed c2
fi
stop c2.7000 c2.7003
reap c2.7000 c2.7001 c2.7002 c2.7003
if [ "$DRV" = zookeeper ]; then
	first_leave() { grep -m1 '^LEAVE' "$T/$1.out"; }
	check "c2: both in one change: LEAVE 7001,7002 first, on both" \
		test "$(first_leave c2.7000)|$(first_leave c2.7003)" = \
		"LEAVE 7001,7002 [7000,7003]|LEAVE 7001,7002 [7000,7003]"
fi
check "c2: all event sequences agree" all_agree c2.7000 c2.7003

# ------------------------------------------------------------------------
echo "== d: the decider dies while deciding a join [$(elapsed)]"
start d 7000 -t $LIFE_MS -D 7001
if wait_for $FORM_MS has d.7000 '^ACCEPT 7000 '; then
	start d 7002 -t $LIFE_MS
fi
if wait_for $FORM_MS all_have '\[7000,7002\]' d.7000 d.7002; then
	start d 7001 -t $LIFE_MS
	t0=$(now_ms)
	wait_for $FORM_MS has d.7001 '^ACCEPT 7001 \[7001,7002\] hello-7001/via-7002/nr-1$'
	check "d: the joiner was accepted by the next decider ($(($(now_ms) - t0)) ms)" \
		has d.7001 '^ACCEPT 7001 \[7001,7002\] .*via-7002'
	check "d: the first decider died in its join handler" has d.7000 '^#DYING'
	check "d: the survivor saw the leave, then the accept" \
		test "$(events d.7002 | grep -A1 '^LEAVE 7000 ' |
			cut -d' ' -f1,2 | paste -sd' ')" = "LEAVE 7000 ACCEPT 7001"
else
	not_formed d
fi
stop d.7001 d.7002
reap d.7000 d.7001 d.7002
check "d: all event sequences agree" all_agree d.7001 d.7002
check "d: ... and with the dead decider's" agree d.7000 d.7002

# ------------------------------------------------------------------------
echo "== e: blocks are exclusive; a killed holder releases its block [$(elapsed)]"
# 5 blocks queued at once, plus one from inside the notify handler; 7001
# unblocks from inside its block handler
for p in 7000 7001 7002; do
	hold=30
	[ $p = 7001 ] && hold=-1
	start e $p -t $LIFE_MS -w 4 -B 5 -N 10 -K -H $hold -C "$T/e.check"
done
# no -C for the holder that gets killed: its lock file may be released only
# after corosync saw it die (the kernel's closing order at exit)
start e 7003 -t $LIFE_MS -w 4 -B 2 -H 6000
if wait_for $FORM_MS has e.7003 '^#GRANT 0'; then
	sleep 0.3
	kill -9 "${PID[e.7003]}"
	all_unblocked() {
		local k

		for k in e.7000 e.7001 e.7002; do
			[ "$(count $k '^NOTIFY 700[0-2] u ')" -eq 18 ] || return 1
		done
	}
	check "e: the others got all 18 of their blocks" \
		wait_for $FORM_MS all_unblocked
else
	bad "e: the long holder never got its block"
fi
stop e.7000 e.7001 e.7002
reap e.7000 e.7001 e.7002 e.7003
. tests/tools/driver_checks.sh
check "e: never two blocks outstanding (delivery order)" exclusive e.7000
check "e: never two blocks outstanding (live check)" no_bugs
check "e: the killed holder got only one grant" test "$(count e.7003 '^#GRANT')" = 1
check "e: all event sequences agree" all_agree e.7000 e.7001 e.7002 e.7003

# ------------------------------------------------------------------------
echo "== f: a joiner, or a member, dies while a join is being decided [$(elapsed)]"
# the decision must outlast the time a death takes to be seen
ft=$((LEAVE_MS * 10))
start f 7000 -t $ft -S $((LEAVE_MS + 200))
if wait_for $FORM_MS has f.7000 '^ACCEPT 7000 '; then
	start f 7001 -t $ft
	wait_for $FORM_MS has f.7000 '^#JOINREQ 7001 '
	kill -9 "${PID[f.7001]}"
	start f 7002 -t $ft
	check "f: the next joiner was accepted" wait_for $((LEAVE_MS * 5)) \
		has f.7002 '^ACCEPT 7002 \[7000,7002\] '
	check "f: the dead joiner never became a member" \
		test "$(count f.7000 '^ACCEPT 7001 ')$(count f.7000 '^LEAVE 7001 ')" = 00
	# a member dies while a join is decided: the accept goes stale and
	# the join is decided again
	start f 7003 -t $ft
	wait_for $FORM_MS has f.7000 '^#JOINREQ 7003 '
	kill -9 "${PID[f.7002]}"
	check "f: a join decided across a member's death completes" \
		wait_for $((LEAVE_MS * 5)) has f.7003 '^ACCEPT 7003 \[7000,7003\] .*/nr-1$'
	check "f: ... after the leave, exactly once" test \
		"$(events f.7000 | grep -A1 '^LEAVE 7002 ' | cut -d' ' -f1,2 |
			paste -sd' ')$(count f.7000 '^ACCEPT 7003 ')" = "LEAVE 7002 ACCEPT 70031"
else
	not_formed f
fi
stop f.7000 f.7003
reap f.7000 f.7001 f.7002 f.7003
check "f: all event sequences agree" all_agree f.7000 f.7003
check "f: ... also with the killed member" agree f.7000 f.7002

# ------------------------------------------------------------------------
echo "== g: the founder dies while founding; a waiting joiner founds [$(elapsed)]"
# 7000 is alone and slow to found; 7001 and 7002 arrive meanwhile and cannot
# know the state; when 7000 dies the oldest of them must found the cluster.
# Each starts only once the one before is in the process group (its log
# says so): "oldest" is the order the group saw, not the order of starts,
# and on a busy machine a process started later may register first.
# 7000's founding stalls until it is killed.
in_group() { grep -q '\] in .* as .* with [0-9]* other process' "$T/$1.err"; }
start g 7000 -t $LIFE_MS -F 20000
wait_for $FORM_MS has g.7000 '^#JOINREQ 7000 '
start g 7001 -t $LIFE_MS
wait_for $FORM_MS in_group g.7001
start g 7002 -t $LIFE_MS
wait_for $FORM_MS in_group g.7002
kill -9 "${PID[g.7000]}"
check "g: the oldest waiting process founded a new cluster" \
	wait_for $((LEAVE_MS + 4000)) \
	has g.7001 '^ACCEPT 7001 \[7001\] hello-7001/via-7001/nr-0$'
check "g: the other one joined it" wait_for $FORM_MS \
	has g.7002 '^ACCEPT 7002 \[7001,7002\] hello-7002/via-7001/nr-1$'
check "g: the dead founder never became a member" \
	test "$(count g.7001 '^ACCEPT 7000 ')" = 0
stop g.7001 g.7002
reap g.7000 g.7001 g.7002
check "g: all event sequences agree" all_agree g.7001 g.7002

# ------------------------------------------------------------------------
echo "== h: a member is killed and restarted at once with the same address [$(elapsed)]"
for p in 7000 7001 7002; do start h $p -t $LIFE_MS; done
if wait_for $FORM_MS all_have '\[7000,7001,7002\]' h.7000 h.7001 h.7002; then
	kill -9 "${PID[h.7001]}"
	reap h.7001
	mv "$T/h.7001.out" "$T/h.7001-old.out"
	start h 7001 -t $LIFE_MS
	check "h: the restarted node is a member again" wait_for $FORM_MS \
		has h.7001 '^ACCEPT 7001 \[7000,7001,7002\] '
	check "h: the others saw leave, then accept" test \
		"$(events h.7000 | grep -A1 '^LEAVE 7001 ' | cut -d' ' -f1,2 |
			paste -sd' ')" = "LEAVE 7001 ACCEPT 7001"
else
	not_formed h
fi
stop h.7000 h.7001 h.7002
reap h.7000 h.7001 h.7002
check "h: all event sequences agree" all_agree h.7000 h.7002
# the restarted one's ACCEPT also appears earlier, as the old one's
since_rejoin() {
	cmp -s <(events h.7001) <(events h.7000 |
		tail -n +"$(events h.7000 | grep -n '^ACCEPT 7001 ' |
			tail -n 1 | cut -d: -f1)")
}
check "h: ... and the restarted one's since its accept" since_rejoin

# ------------------------------------------------------------------------
echo "== i: five processes joining and leaving with notifies and blocks [$(elapsed)]"
# notifies and blocks start at once, beside the joins; the leaves are
# staggered from when each process has seen all five (-l 5)
for p in 7000 7001 7002 7003 7004; do
	start i $p -t $((1000 + (p - 7000) * 400)) -l 5 -N 40 -B 3 -H 5 \
		-C "$T/i.check"
	sleep 0.05
done
reap i.7000 i.7001 i.7002 i.7003 i.7004
check "i: all event sequences agree" all_agree i.7000 i.7001 i.7002 i.7003 i.7004
check "i: never two blocks outstanding" exclusive i.7000
check "i: every process saw all five members" \
	all_have '\[7000,7001,7002,7003,7004\]' i.7000 i.7001 i.7002 i.7003 i.7004

# ------------------------------------------------------------------------
echo "== j: five join at once; those pending behind a decision are decided together [$(elapsed)]"
# the decider's first decision is slow (-P), so the other joins pile up
# behind it and are decided in one ACCEPT_SET: accept callbacks marked
# " +" but for the last, one epoch in sheep
JP="7001 7002 7003 7004 7005"
start j 7000 -t $LIFE_MS -P 1500
if wait_for $FORM_MS has j.7000 '^ACCEPT 7000 '; then
	# shellcheck disable=SC2086
	start_together j $JP
	check "j: every process saw all six members" wait_for $FORM_MS \
		all_have '\[7000,7001,7002,7003,7004,7005\]' \
		j.7000 j.7001 j.7002 j.7003 j.7004 j.7005
else
	not_formed j
fi
stop j.7000 j.7001 j.7002 j.7003 j.7004 j.7005
reap j.7000 j.7001 j.7002 j.7003 j.7004 j.7005
check "j: joins were decided together (an accept marked +)" \
	test "$(count j.7000 '^ACCEPT 700[1-5] .* +$')" -ge 1
check "j: a set's accepts follow each other, with the same members" \
	accept_runs_ok j.7000
# shellcheck disable=SC2086
check "j: every joiner's events start with its own accept" own_first j $JP
check "j: all event sequences agree" \
	all_agree j.7000 j.7001 j.7002 j.7003 j.7004 j.7005

# ------------------------------------------------------------------------
echo "== j2: a member dies while a set is decided: decided again after the leave [$(elapsed)]"
# every decision of 7000 outlasts the time a death takes to be seen (-S);
# 7001 dies while 7000 judges the second joiner of a set: the set, sent
# after the leave, goes stale (its snapshot holds 7001), and the two are
# decided again, together, against the members left
st=$((LEAVE_MS + 200))
start j2 7000 -t $LIFE_MS -S $st
if wait_for $FORM_MS has j2.7000 '^ACCEPT 7000 ' &&
	start j2 7001 -t $LIFE_MS &&
	wait_for $((FORM_MS + st)) has j2.7001 '^ACCEPT 7001 '; then
	start_together j2 7002 7003
	# the second JOINREQ of the two: the set's second judging, or (if
	# they came too far apart for a set) the second decision
	second_judged() {
		[ "$(grep -c '^#JOINREQ 700[23] ' "$T/j2.7000.out")" -ge 2 ]
	}
	wait_for $((FORM_MS + 2 * st)) second_judged
	kill -9 "${PID[j2.7001]}"
	check "j2: both joiners saw the two of them and 7000" \
		wait_for $((FORM_MS + 4 * st)) all_have '\[7000,7002,7003\]' \
		j2.7002 j2.7003
	check "j2: decided together (an accept marked +)" \
		has j2.7000 '^ACCEPT 700[23] \[7000,7002,7003\] .* +$' ||
		evidence j2.7000 j2.7002 j2.7003
	check "j2: the leave, then the two accepts, each once" test \
		"$(events j2.7000 | grep -A2 '^LEAVE 7001 ' | cut -d' ' -f1 |
			paste -sd' ')|$(count j2.7000 '^ACCEPT 7002 ')$(count \
			j2.7000 '^ACCEPT 7003 ')" = "LEAVE ACCEPT ACCEPT|11"
else
	not_formed j2
fi
stop j2.7000 j2.7002 j2.7003
reap j2.7000 j2.7001 j2.7002 j2.7003
check "j2: all event sequences agree" all_agree j2.7000 j2.7002 j2.7003
check "j2: ... also with the killed member" agree j2.7000 j2.7001

# ------------------------------------------------------------------------
echo "== k: a member of an older release: joins one at a time, then sets again [$(elapsed)]"
K1="7002 7003 7004 7005"
start k 7000 -t $LIFE_MS -P 1500
if wait_for $FORM_MS has k.7000 '^ACCEPT 7000 ' &&
	HBIN=$BIN-old start k 7001 -t $LIFE_MS &&
	wait_for $FORM_MS has k.7000 '^ACCEPT 7001 '; then
	# shellcheck disable=SC2086
	start_together k $K1
	check "k: every process saw all six members" wait_for $FORM_MS \
		all_have '\[7000,7001,7002,7003,7004,7005\]' \
		k.7000 k.7001 k.7002 k.7003 k.7004 k.7005
	check "k: no set while the older member was there" \
		test "$(count k.7000 ' +$')" -eq 0
	# ZooKeeper: two that die together leave in one LEFT_SET, which an
	# older release does not read: one LEFT each while it is there
	kill_together "${PID[k.7002]}" "${PID[k.7003]}"
	check "k: two killed together left" wait_for $((LEAVE_MS * 3)) \
		all_have '\[7000,7001,7004,7005\]$' k.7000 k.7001 k.7004
	if [ "$DRV" = zookeeper ]; then
		check "k: ... one at a time (no LEFT_SET) with the older member" \
			test "$(count k.7000 '^LEAVE 7002 ')$(count k.7000 \
				'^LEAVE 7003 ')" = 11
	fi
	stop k.7001
	wait_for $FORM_MS has k.7000 '^LEAVE 7001 '
	start_together k 7006 7007
	check "k: once it left, two joining at once were decided together" \
		wait_for $FORM_MS has k.7000 '^ACCEPT 700[67] .* +$' ||
		evidence k.7000 k.7006 k.7007
	wait_for $FORM_MS all_have '\[7000,7004,7005,7006,7007\]' \
		k.7000 k.7007
else
	not_formed k
fi
stop k.7000 k.7004 k.7005 k.7006 k.7007
reap k.7000 k.7001 k.7002 k.7003 k.7004 k.7005 k.7006 k.7007
# 7001 left before 7006 and 7007 came: they share no event to start from
check "k: all event sequences agree, the older member's too" \
	all_agree k.7000 k.7001 k.7002 k.7003 k.7004 k.7005
check "k: ... and the later joiners'" \
	all_agree k.7000 k.7004 k.7005 k.7006 k.7007

check "no #BUG or #VIOLATION in any output" no_bugs
# CI keeps no files: a report's first lines go out as WHY lines
reports=$(grep -l -e 'Sanitizer' -e 'runtime error' "$T"/*.err)
if [ -z "$reports" ]; then
	ok "no sanitizer reports"
else
	bad "no sanitizer reports"
	for f in $reports; do
		echo "WHY --- ${f#"$T"/}"
		grep -m 1 -A 11 -e 'Sanitizer' -e 'runtime error' "$f" |
			sed 's/^/WHY /'
	done
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
