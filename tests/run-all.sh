#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run every Kelpie test suite (what `make check` runs after building):
#   1. each cmocka binary build/tests/test_* (every test case counts),
#   2. each tests/unit/*.sh script (ends with "N passed, N failed[, N skipped]"),
#   3. tests/functional/run.sh (same summary line),
#   4./5. the cluster tests of tests/functional again under the corosync
#      and the zookeeper driver (when no arguments are given; a driver
#      that cannot run here counts its tests as skipped).
# Prints a result line per suite and ends with exactly one line
# "N passed, N failed" or "N passed, N failed, N skipped" (totals); exits 1
# if anything failed.
#
# Environment: KELPIE_UNIT_TIMEOUT (seconds per unit binary/script, default
# 600), KELPIE_COROSYNC_TESTS and KELPIE_ZOOKEEPER_TESTS (the tests of 4.
# and 5.); arguments are passed on to tests/functional/run.sh.

set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 2
UNIT_TIMEOUT=${KELPIE_UNIT_TIMEOUT:-600}

total_pass=0
total_fail=0
total_skip=0
failed_suites=()

add()
{
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
	total_skip=$((total_skip + $4))
	local line
	line=$(printf '%-28s %4d passed, %d failed' "$1" "$2" "$3")
	[ "$4" -gt 0 ] && line="$line, $4 skipped"
	echo "== $line"
	[ "$3" -gt 0 ] && failed_suites+=("$1")
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

out=$(mktemp "${TMPDIR:-/tmp}/kelpie-run-all.XXXXXX")
trap 'rm -f "$out"' EXIT

# ---- 1. cmocka unit test binaries
shopt -s nullglob
bins=(build/tests/test_*)
shopt -u nullglob
if [ ${#bins[@]} -eq 0 ]; then
	echo "== no unit test binaries in build/tests (run make first)"
fi
for b in "${bins[@]}"; do
	[ -x "$b" ] && [ -f "$b" ] || continue
	name=$(basename "$b")
	echo "== running $name"
	timeout -k 10 "$UNIT_TIMEOUT" "$b" </dev/null >"$out" 2>&1
	rc=$?
	p=$(count_of '\[  PASSED  \] [0-9]+ test' "$out")
	f=$(count_of '\[  FAILED  \] [0-9]+ test' "$out")
	s=$(count_of '\[  SKIPPED \] [0-9]+ test' "$out")
	if [ "$rc" -ne 0 ] || [ "$f" -gt 0 ]; then
		# show what went wrong: failures, errors and sanitizer reports
		grep -E '^\[  (FAILED|ERROR) |^\[   LINE   \]|ERROR: |runtime error' \
			"$out" | head -n 40 | sed 's/^/   /'
		# crashed, timed out or exited badly without a cmocka summary
		if [ "$f" -eq 0 ]; then
			echo "   $name exited with status $rc"
			tail -n 15 "$out" | sed 's/^/   | /'
			f=1
		fi
	fi
	add "$name" "$p" "$f" "$s"
done

# ---- 2. unit test scripts
shopt -s nullglob
scripts=(tests/unit/*.sh)
shopt -u nullglob
for sc in "${scripts[@]}"; do
	name=$(basename "$sc")
	echo "== running $name"
	timeout -k 10 "$UNIT_TIMEOUT" bash "$sc" </dev/null >"$out" 2>&1
	rc=$?
	read -r p f s <<<"$(summary_counts "$out")"
	p=${p:-0} f=${f:-0} s=${s:-0}
	grep -E '^(FAIL|SKIP)' "$out" | head -n 40 | sed 's/^/   /'
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "   $name exited with status $rc"
		tail -n 15 "$out" | sed 's/^/   | /'
		f=1
	fi
	add "$name" "$p" "$f" "$s"
done

# ---- 2b. corosync and zookeeper driver tests (they start or reuse a
# corosync, or start a private ZooKeeper with tests/zookeeper/start.sh,
# themselves)
for sc in tests/corosync/smoke.sh tests/corosync/driver.sh \
	tests/corosync/partition.sh tests/zookeeper/driver.sh; do
	[ -f "$sc" ] || continue
	name=${sc#tests/}
	echo "== running $name"
	timeout -k 10 "$UNIT_TIMEOUT" bash "$sc" </dev/null >"$out" 2>&1
	rc=$?
	read -r p f s <<<"$(summary_counts "$out")"
	p=${p:-0} f=${f:-0} s=${s:-0}
	grep -E '^(FAIL|SKIP)' "$out" | head -n 40 | sed 's/^/   /'
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "   $name exited with status $rc"
		tail -n 15 "$out" | sed 's/^/   | /'
		f=1
	fi
	add "$name" "$p" "$f" "$s"
done

# ---- 3. functional tests (their output is shown as it runs)
echo "== running functional tests"
bash tests/functional/run.sh "$@" </dev/null 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
read -r p f s <<<"$(summary_counts "$out")"
p=${p:-0} f=${f:-0} s=${s:-0}
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
	echo "   functional/run.sh exited with status $rc"
	f=1
fi
add "functional" "$p" "$f" "$s"

# ---- 4./5. the cluster tests again, under another driver
# under_driver DRIVER "NNN...": its private server is started with
# tests/DRIVER/start.sh DIR (exit 77: it cannot run here, the tests are
# skipped; zookeeper prints its port last) and stopped with stop.sh DIR
under_driver()
{
	local drv=$1 dir rc p f s t addr=
	# test 010's load runs half its minute: the local run has the whole
	local -a tests=() env=(KELPIE_DRIVER="$1" LOAD_SECS="${LOAD_SECS:-30}")

	for t in $2; do
		[ -f "tests/functional/$t" ] && tests+=("$t")
	done
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kelpie-$drv.XXXXXX")
	bash "tests/$drv/start.sh" "$dir" >"$out" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		if [ "$drv" = zookeeper ]; then
			addr=127.0.0.1:$(tail -n 1 "$out")
			env+=(KELPIE_ZK_ADDR="$addr")
		fi
		echo "== running functional tests under $drv${addr:+ ($addr)}:" \
			"${tests[*]}"
		env "${env[@]}" bash tests/functional/run.sh "${tests[@]}" \
			</dev/null 2>&1 | tee "$out"
		rc=${PIPESTATUS[0]}
		bash "tests/$drv/stop.sh" "$dir" >/dev/null 2>&1
		read -r p f s <<<"$(summary_counts "$out")"
		p=${p:-0} f=${f:-0} s=${s:-0}
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			echo "   functional/run.sh under $drv exited with $rc"
			f=1
		fi
	elif [ $rc -eq 77 ]; then
		echo "== $drv cannot run here: $(tail -n 1 "$out")"
		p=0 f=0 s=${#tests[@]}
	else
		echo "== $drv did not start:"
		tail -n 15 "$out" | sed 's/^/   | /'
		p=0 f=1 s=0
	fi
	add "functional ($drv)" "$p" "$f" "$s"
	rm -rf "$dir"
}

if [ $# -eq 0 ]; then
	under_driver corosync "${KELPIE_COROSYNC_TESTS:-"001 003 004 005 006 \
009 010 011 012 013 014 015 016 017 118 119"}"
	# the membership tests (join, format, a death mid-write, a kill during
	# a write and recovery, shutdown and restart, rejoin, reweight, a
	# refused joiner); the whole corosync list passes under ZooKeeper too
	# (KELPIE_ZOOKEEPER_TESTS="001 003 ... 119"), but with its session
	# timeouts it takes 15 minutes, which make check cannot spare
	under_driver zookeeper "${KELPIE_ZOOKEEPER_TESTS:-"001 005 006 009 016 \
118 119"}"
fi

echo
[ ${#failed_suites[@]} -gt 0 ] && echo "Failed suites: ${failed_suites[*]}"
if [ "$total_skip" -gt 0 ]; then
	echo "$total_pass passed, $total_fail failed, $total_skip skipped"
else
	echo "$total_pass passed, $total_fail failed"
fi
[ "$total_fail" -eq 0 ]
