#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run every Kelpie test suite (what `make check` runs after building):
#   1. each cmocka binary build/tests/test_* (every test case counts),
#   2. each tests/unit/*.sh script (ends with "N passed, N failed[, N skipped]"),
#      and the corosync and ZooKeeper driver suites (tests/corosync/*.sh,
#      tests/zookeeper/driver.sh),
#   3. tests/functional/run.sh (same summary line), with the cluster tests
#      again under the corosync and the zookeeper driver (when no arguments
#      are given; a driver that cannot run here counts its tests as
#      skipped).
# 1 and 2 run one after the other in the background (their output is
# printed when they are done), the thrash suite in a lane of its own, while
# 3 runs its tests side by side in one pool (run.sh -j): functional tests
# mostly wait, the unit suites mostly compute.  Prints a result line per suite, the time each part took, and
# ends with exactly one line "N passed, N failed" or "N passed, N failed,
# N skipped" (totals); exits 1 if anything failed.
#
# Environment: KELPIE_UNIT_TIMEOUT (seconds per unit binary/script, default
# 600), KELPIE_COROSYNC_TESTS and KELPIE_ZOOKEEPER_TESTS (the tests run
# again under those drivers), KELPIE_TEST_JOBS (run.sh -j); arguments are
# passed on to tests/functional/run.sh (then the driver runs are left out).

set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 2
UNIT_TIMEOUT=${KELPIE_UNIT_TIMEOUT:-600}
START=$SECONDS

total_pass=0
total_fail=0
total_skip=0
failed_suites=()

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kelpie-run-all.XXXXXX")
unit_pid=
thrash_pid=
cleanup()
{
	[ -n "$unit_pid" ] && kill -TERM "$unit_pid" 2>/dev/null
	[ -n "$thrash_pid" ] && kill -TERM "$thrash_pid" 2>/dev/null
	for drv in corosync zookeeper; do
		[ -f "$WORK/$drv.up" ] &&
			bash "tests/$drv/stop.sh" "$WORK/$drv" >/dev/null 2>&1
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# python3 is Debian's, whose packages make deps installs: a python3 found
# earlier in PATH may lack them, and a pyenv shim runs a dozen shell
# processes for every call, which the tests make thousands of
if [ -x /usr/bin/python3 ]; then
	mkdir -p "$WORK/bin" && ln -s /usr/bin/python3 "$WORK/bin/python3" &&
		export PATH="$WORK/bin:$PATH"
fi

# suite_line NAME PASS FAIL SKIP: the "== NAME N passed, ..." line
suite_line()
{
	local line
	line=$(printf '%-28s %4d passed, %d failed' "$1" "$2" "$3")
	[ "$4" -gt 0 ] && line="$line, $4 skipped"
	echo "== $line"
}

add()
{
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
	total_skip=$((total_skip + $4))
	[ "$3" -gt 0 ] && failed_suites+=("$1")
	return 0
}

# sum of the counts in every match of ERE $1 (cmocka summary) in file $2
count_of()
{
	grep -Eo "$1" "$2" | grep -Eo '[0-9]+' |
		awk '{ n += $1 } END { print n + 0 }'
}

# summary line "N passed, N failed[, N skipped]" (the last one) of file $1
summary_counts()
{
	grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$1" |
		tail -n 1 |
		sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/'
}

# ---- 1. and 2.: the unit stream.  Each suite's result goes to stdout as
# "== NAME ..." lines and to $WORK/counts as "NAME PASS FAIL SKIP"; the
# seconds of each part to $WORK/times.
unit_binaries()
{
	local b name rc p f s out=$WORK/unit.out
	local -a bins=()

	shopt -s nullglob
	bins=(build/tests/test_*)
	shopt -u nullglob
	[ ${#bins[@]} -gt 0 ] ||
		echo "== no unit test binaries in build/tests (run make first)"
	for b in "${bins[@]}"; do
		[ -x "$b" ] && [ -f "$b" ] || continue
		name=$(basename "$b")
		timeout -k 10 "$UNIT_TIMEOUT" "$b" </dev/null >"$out" 2>&1
		rc=$?
		p=$(count_of '\[  PASSED  \] [0-9]+ test' "$out")
		f=$(count_of '\[  FAILED  \] [0-9]+ test' "$out")
		s=$(count_of '\[  SKIPPED \] [0-9]+ test' "$out")
		if [ "$rc" -ne 0 ] || [ "$f" -gt 0 ]; then
			# failures, errors and sanitizer reports
			grep -E '^\[  (FAILED|ERROR) |^\[   LINE   \]|ERROR: |runtime error' \
				"$out" | head -n 40 | sed 's/^/   /'
			# crashed, timed out or exited badly without a summary
			if [ "$f" -eq 0 ]; then
				echo "   $name exited with status $rc"
				tail -n 15 "$out" | sed 's/^/   | /'
				f=1
			fi
		fi
		suite_line "$name" "$p" "$f" "$s"
		echo "$name $p $f $s" >>"$WORK/counts"
	done
}

# a script that ends with the summary line
unit_script()
{
	local sc=$1 name=$2 rc p f s out=$WORK/script.${2//\//_}.out
	local start=$SECONDS
	local limit=$UNIT_TIMEOUT

	# the thrash suite's fault schedule stretches with the machine's load
	[ "$name" = thrash.sh ] && limit=$((2 * UNIT_TIMEOUT))
	timeout -k 10 "$limit" bash "$sc" </dev/null >"$out" 2>&1
	rc=$?
	read -r p f s <<<"$(summary_counts "$out")"
	p=${p:-0} f=${f:-0} s=${s:-0}
	# "WHY ..." lines: a script's evidence for the failure before them
	grep -E '^(FAIL|SKIP|WHY)' "$out" | head -n 60 | sed 's/^/   /'
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "   $name exited with status $rc"
		tail -n 15 "$out" | sed 's/^/   | /'
		f=1
	fi
	suite_line "$name" "$p" "$f" "$s"
	echo "$name $p $f $s" >>"$WORK/counts"
	echo "$name $((SECONDS - start))" >>"$WORK/times"
}

unit_stream()
{
	local start=$SECONDS sc

	unit_binaries
	echo "unit binaries $((SECONDS - start))" >>"$WORK/times"
	for sc in tests/unit/*.sh; do
		[ "$sc" = tests/unit/thrash.sh ] && continue	# a lane of its own
		[ -f "$sc" ] && unit_script "$sc" "$(basename "$sc")"
	done
	# the driver suites start or reuse a corosync, or start a private
	# ZooKeeper with tests/zookeeper/start.sh, themselves
	for sc in tests/corosync/smoke.sh tests/corosync/driver.sh \
		tests/corosync/partition.sh tests/zookeeper/driver.sh; do
		[ -f "$sc" ] && unit_script "$sc" "${sc#tests/}"
	done
	echo "unit stream $((SECONDS - start))" >>"$WORK/times"
}

# ---- 3.: the functional pool, with the driver runs in it
# start_driver DRIVER: its private server (tests/DRIVER/start.sh DIR; exit
# 77: it cannot run here; zookeeper prints its port last); the environment
# its tests need goes to $WORK/DRIVER.env; returns start.sh's status
start_driver()
{
	local drv=$1 dir=$WORK/$1 rc out=$WORK/$1.start
	: >"$WORK/$drv.env"
	bash "tests/$drv/start.sh" "$dir" >"$out" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		touch "$WORK/$drv.up"
		[ "$drv" = zookeeper ] &&
			echo "KELPIE_ZK_ADDR=127.0.0.1:$(tail -n 1 "$out")" \
				>"$WORK/$drv.env"
		return 0
	fi
	if [ $rc -eq 77 ]; then
		echo "== $drv cannot run here: $(tail -n 1 "$out")"
	else
		echo "== $drv did not start:"
		tail -n 15 "$out" | sed 's/^/   | /'
	fi
	return $rc
}

functional()
{
	local -a jobs=() skipped_drv=() env=()
	local drv t rc p f s lp lf ls start=$SECONDS out=$WORK/functional.out
	local -A lists=(
		# the membership tests (join, format, a death mid-write, a
		# kill during a write and recovery, shutdown and restart,
		# rejoin, reweight, a refused joiner)
		[corosync]=${KELPIE_COROSYNC_TESTS:-"001 003 004 005 006 009 \
010 011 012 013 014 015 016 017 118 119"}
		# the same but the data path (003, 004), the control of a
		# recovery (015, 017, 119) and a death during recovery (014):
		# ZooKeeper carries the membership protocol corosync does
		# (group/procgroup.c), so those differ in nothing but time
		# (until 2026-12-06 it ran all 16, until 2026-12-07 014 too;
		# KELPIE_ZOOKEEPER_TESTS for them)
		[zookeeper]=${KELPIE_ZOOKEEPER_TESTS:-"001 005 006 009 010 \
011 012 013 016 118"}
	)

	if [ $# -gt 0 ]; then
		jobs=("$@")
	else
		for t in tests/functional/[0-9][0-9][0-9]; do
			jobs+=("$(basename "$t")")
		done
		for drv in corosync zookeeper; do
			if start_driver "$drv"; then
				mapfile -t -O ${#env[@]} env <"$WORK/$drv.env"
				for t in ${lists[$drv]}; do
					[ -f "tests/functional/$t" ] &&
						jobs+=("$t@$drv")
				done
			else
				rc=$?
				# 77: counted as skipped; else as one failure
				skipped_drv+=("$drv:$rc:$(wc -w <<<"${lists[$drv]}")")
			fi
		done
	fi
	echo "== running functional tests (run.sh -j ${KELPIE_TEST_JOBS:-default})"
	env "${env[@]}" bash tests/functional/run.sh "${jobs[@]}" </dev/null \
		2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	echo "functional $((SECONDS - start))" >>"$WORK/times"
	read -r lp lf ls <<<"$(summary_counts "$out")"
	lp=${lp:-0} lf=${lf:-0} ls=${ls:-0}
	if [ "$rc" -ne 0 ] && [ "$lf" -eq 0 ]; then
		echo "   functional/run.sh exited with status $rc"
		lf=1
	fi
	# the drivers' lines; the local tests are the rest of the total
	: >"$WORK/fcounts"
	for drv in corosync zookeeper; do
		read -r p f s <<<"$(sed -nE "s/^== $drv: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p" "$out")"
		[ -n "${p:-}" ] || continue
		lp=$((lp - p)) lf=$((lf - f)) ls=$((ls - s))
		echo "functional ($drv) $p $f $s" >>"$WORK/fcounts"
	done
	for t in "${skipped_drv[@]}"; do
		IFS=: read -r drv rc s <<<"$t"
		if [ "$rc" -eq 77 ]; then
			echo "functional ($drv) 0 0 $s" >>"$WORK/fcounts"
		else
			echo "functional ($drv) 0 1 0" >>"$WORK/fcounts"
		fi
	done
	echo "functional $lp $lf $ls" >"$WORK/fcounts.local"
}

unit_stream >"$WORK/unit.log" 2>&1 &
unit_pid=$!
# the thrash suite (minutes of faults under load, mostly waiting) in a
# lane of its own beside the others
[ -f tests/unit/thrash.sh ] &&
	{ unit_script tests/unit/thrash.sh thrash.sh >"$WORK/thrash.log" 2>&1 &
	  thrash_pid=$!; }
functional "$@"
wait "$unit_pid"
unit_pid=
[ -n "$thrash_pid" ] && wait "$thrash_pid"
thrash_pid=
echo "== unit tests, fuzz replay, the thrash suite and driver suites (run beside the above):"
cat "$WORK/unit.log" "$WORK/thrash.log" 2>/dev/null

# ---- results
while read -r name p f s; do
	add "$name" "$p" "$f" "$s"
done <"$WORK/counts"
while read -r name p f s; do
	add "$name" "$p" "$f" "$s"
	suite_line "$name" "$p" "$f" "$s"
done <"$WORK/fcounts.local"
while read -r a b p f s; do
	add "$a $b" "$p" "$f" "$s"
	suite_line "$a $b" "$p" "$f" "$s"
done <"$WORK/fcounts"

# ---- where the time went
tm() { awk -v k="$1" '$0 ~ "^" k " [0-9]+$" { print $NF }' "$WORK/times"; }
echo
echo "Time: $((SECONDS - START)) s in all; beside each other:"
echo "  functional pool (local and driver runs): $(tm functional) s"
echo "  unit stream: $(tm "unit stream") s = unit binaries $(tm "unit binaries") s" \
	"+ fuzz replay $(tm fuzz.sh) s + other scripts and driver suites"
echo "  thrash suite: $(tm thrash.sh) s"
echo
[ ${#failed_suites[@]} -gt 0 ] && echo "Failed suites: ${failed_suites[*]}"
if [ "$total_skip" -gt 0 ]; then
	echo "$total_pass passed, $total_fail failed, $total_skip skipped"
else
	echo "$total_pass passed, $total_fail failed"
fi
[ "$total_fail" -eq 0 ]
