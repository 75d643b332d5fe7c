#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run Kelpie's functional tests: tests/functional/run.sh [-j N] [NNN[@DRIVER]...]
#
# Each numbered test runs in a fresh directory ($T) under a timeout.  Exit
# status 0 passes, 77 skips, anything else fails; when NNN.out exists the
# test's stdout, filtered by _filter_output of common.sh, must match it.
# Output of failed tests (stdout/stderr, diff, daemon logs) is kept in
# $KELPIE_RESULTS (default build/functional-results/NNN).
#
# -j N runs N tests side by side (default: twice the cores, at least 3).
# Every test has its own directory, ports, cluster and mounts, so tests
# mostly wait side by side; a test with a "# serial" line (one that
# measures speed or needs the machine's CPU to itself) runs alone, after
# the others.  Tests start longest first (the durations of the last run in
# $KELPIE_RESULTS/.durations, else those of tests/functional/durations,
# else the "# timeout:" line as the hint), and their results are printed
# one line per test in test-number order; a failed test's report (its
# stderr whole, the tails of its daemon logs) is printed as one block
# under its line.
#
# NNN@DRIVER runs test NNN under another cluster driver (KELPIE_DRIVER:
# corosync, or zookeeper with KELPIE_ZK_ADDR set), in the same pool; its
# server must be up (tests/run-all.sh starts it).  Those results follow
# the others, by driver, each driver with a line "== DRIVER: N passed,
# N failed[, N skipped]" before the total.
#
# --save-durations writes this run's durations into tests/functional/durations
# too (commit it after a full run on the project machine).
#
# Environment: KELPIE_TEST_TIMEOUT (seconds per test, default 300; a test
# with a "# timeout: N" line gets N seconds if that is more),
# KELPIE_TEST_JOBS (the default of -j), KELPIE_KEEP_TMP=1 (keep every test
# directory), KELPIE_PORT_BASE=N (nodes listen on the first free ports from
# N: object placement follows the ports, so this replays a placement seen in
# a log), TMPDIR.
# Ends with the line "N passed, N failed, N skipped".

set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
FDIR=$TOP/tests/functional
TIMEOUT=${KELPIE_TEST_TIMEOUT:-300}
RESULTS=${KELPIE_RESULTS:-$TOP/build/functional-results}
export TOP

usage()
{
	echo "usage: $0 [-j N] [--save-durations] [NNN[@DRIVER]...]" >&2
	exit 2
}

default_jobs()
{
	local n
	n=$(nproc 2>/dev/null || echo 1)
	n=$((n * 2))
	[ "$n" -ge 3 ] || n=3
	echo "$n"
}

JOBS=${KELPIE_TEST_JOBS:-$(default_jobs)}
SAVE_DURATIONS=0
while [ $# -gt 0 ]; do
	case $1 in
	--save-durations) SAVE_DURATIONS=1; shift ;;
	-j) [ $# -ge 2 ] || usage; JOBS=$2; shift 2 ;;
	-j*) JOBS=${1#-j}; shift ;;
	--jobs=*) JOBS=${1#--jobs=}; shift ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "bad -j '$JOBS'" >&2; usage; }

if [ $# -gt 0 ]; then
	tests=()
	for t in "$@"; do
		t=$(basename "$t")
		if [ ! -f "$FDIR/${t%@*}" ]; then
			echo "no such test: ${t%@*}" >&2
			exit 2
		fi
		case $t in
		*@*@* | *@) echo "bad test '$t'" >&2; exit 2 ;;
		*@corosync | *@zookeeper | *@local | [0-9][0-9][0-9]) ;;
		*) echo "unknown driver in '$t'" >&2; exit 2 ;;
		esac
		tests+=("$t")
	done
	# local tests in number order, then each driver's
	mapfile -t tests < <(printf '%s\n' "${tests[@]}" | sed 's/@local$//' |
		awk -F@ '!seen[$0]++ { print (NF > 1 ? $2 : "") "\t" $0 }' |
		sort -t "$(printf '\t')" -k1,1 -k2,2 | cut -f2)
else
	tests=()
	for f in "$FDIR"/[0-9][0-9][0-9]; do
		[ -f "$f" ] && tests+=("$(basename "$f")")
	done
fi

title_of()
{
	# "# title: ..." line of the test, else its first comment line
	local t
	t=$(sed -n 's/^# *title: *//p' "$FDIR/$1" | head -n 1)
	[ -n "$t" ] ||
		t=$(sed -n '2,6{/^# SPDX/d;s/^# *//p}' "$FDIR/$1" | head -n 1)
	echo "$t"
}

# the test's own time limit: its "# timeout: SECONDS" line if more
timeout_of()
{
	local t
	t=$(sed -n 's/^# *timeout: *\([0-9][0-9]*\).*/\1/p' "$FDIR/$1" |
		head -n 1)
	[ -n "$t" ] && [ "$t" -gt "$TIMEOUT" ] || t=$TIMEOUT
	echo "$t"
}

is_serial()
{
	grep -q '^# *serial\b' "$FDIR/$1"
}

# kill whatever daemon of test dir $1 is still alive (a test that timed out
# or whose clean-up failed), only if its command line names that dir
reap_leftovers()
{
	local dir=$1 pid f state
	local -a pids=()
	for f in "$dir"/*/pid; do
		[ -f "$f" ] && pids+=("$(cat "$f")")
	done
	[ -f "$dir/.pids" ] && mapfile -t -O ${#pids[@]} pids <"$dir/.pids"
	for pid in "${pids[@]}"; do
		[ -n "$pid" ] && [ -e "/proc/$pid" ] || continue
		state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' \
			"/proc/$pid/status" 2>/dev/null)
		[ "$state" = Z ] && continue
		if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" |
			grep -qF -- "$dir/"; then
			echo "    (killing leftover daemon $pid)"
			kill -KILL "$pid" 2>/dev/null
		fi
	done
	# unmount anything still mounted below the test directory
	awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts |
		sort -r | while read -r m; do
			echo "    (unmounting leftover $m)"
			umount "$m" 2>/dev/null || umount -l "$m"
		done
	# release the port reservations of the test
	if [ -f "$dir/.reserved-ports" ]; then
		while read -r p; do
			rm -rf "${PORT_LOCK_DIR:-/tmp/kelpie-test-ports}/$p"
		done <"$dir/.reserved-ports"
	fi
}

filter_output()
{
	# _filter_output of common.sh, without its initialisation
	(
		KELPIE_COMMON_NOINIT=1
		T=$1
		# shellcheck source=common.sh
		. "$FDIR/common.sh"
		_filter_output
	)
}

indent()
{
	sed 's/^/    /'
}

# the report of a failed test: the diff, its stderr whole (at most 2000
# lines), the tails of its daemon logs
show_failure()
{
	local t=$1 dir=$2 keep=$3 f n
	if [ -s "$keep/diff" ]; then
		echo "    --- output differs from $t.out:"
		head -n 60 "$keep/diff" | indent
	fi
	if [ -s "$dir/.stderr" ]; then
		n=$(wc -l <"$dir/.stderr")
		if [ "$n" -le 2000 ]; then
			echo "    --- stderr ($n lines):"
		else
			echo "    --- stderr (the last 2000 of $n lines):"
		fi
		tail -n 2000 "$dir/.stderr" | indent
	fi
	for f in "$dir"/*/sheep.log "$dir"/saved-logs/*.sheep.log; do
		[ -f "$f" ] || continue
		echo "    --- ${f#"$dir"/} (last 20 lines):"
		tail -n 20 "$f" | indent
	done
	echo "    --- kept in $keep"
}

save_failure()
{
	local dir=$1 keep=$2 f rel
	rm -rf "$keep"
	mkdir -p "$keep"
	cp "$dir/.stdout" "$keep/stdout" 2>/dev/null
	cp "$dir/.stderr" "$keep/stderr" 2>/dev/null
	[ -f "$dir/.out.filtered" ] && cp "$dir/.out.filtered" "$keep/out.filtered"
	[ -f "$dir/.commands" ] && cp "$dir/.commands" "$keep/commands"
	for f in "$dir"/*/sheep.log "$dir"/saved-logs/*.sheep.log \
		"$dir"/*.stdout; do
		[ -f "$f" ] || continue
		rel=${f#"$dir"/}
		cp "$f" "$keep/${rel//\//_}"
	done
}

# run_test T: run test T to its end; its report goes to $STATE/T.report,
# its result (PASS, FAIL or SKIP, and the seconds taken) to $STATE/T.done
# last, so that a .done file means a complete report
run_test()
{
	local job=$1 t=${1%@*} drv= title dir keep start t_timeout rc secs cg
	local result reason
	local -a env=()
	[ "$job" = "$t" ] || drv=${job#*@}
	# under another driver, test 010's load runs half its minute
	[ -n "$drv" ] && env=(KELPIE_DRIVER="$drv" LOAD_SECS="${LOAD_SECS:-30}")
	title=$(title_of "$t")
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kelpie-$t.XXXXXX")
	echo "$dir" >"$STATE/$job.dir"
	keep=$RESULTS/$job
	start=$SECONDS
	t_timeout=$(timeout_of "$t")
	cg=
	[ -n "$CG_ROOT" ] && mkdir "$CG_ROOT/$job" 2>/dev/null && cg=$CG_ROOT/$job
	(
		[ -n "$cg" ] && echo "$BASHPID" >"$cg/tasks"
		exec env "${env[@]}" T="$dir" timeout -k 15 "$t_timeout" \
			bash "$FDIR/$t"
	) </dev/null >"$dir/.stdout" 2>"$dir/.stderr"
	rc=$?
	reap_leftovers "$dir" >"$STATE/$job.reaped"
	secs=$((SECONDS - start))
	[ -n "$cg" ] && cpu_account "$job" "$cg"
	result=PASS
	reason=
	if [ $rc -eq 77 ]; then
		result=SKIP
		reason=$(grep -m1 '^SKIP: ' "$dir/.stderr" | sed 's/^SKIP: //')
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		result=FAIL
		reason="timed out after ${t_timeout}s"
	elif [ $rc -ne 0 ]; then
		result=FAIL
		reason=$(grep -m1 '^FAIL: ' "$dir/.stderr" | sed 's/^FAIL: //')
		[ -n "$reason" ] || reason="exit status $rc"
	fi
	if [ $result != SKIP ] && [ -f "$FDIR/$t.out" ]; then
		filter_output "$dir" <"$dir/.stdout" >"$dir/.out.filtered"
		if ! diff -u "$FDIR/$t.out" "$dir/.out.filtered" \
			>"$dir/.diff" 2>&1; then
			if [ $result = PASS ]; then
				result=FAIL
				reason="output differs from $t.out"
			fi
		fi
	fi

	{
		cat "$STATE/$job.reaped"
		case $result in
		PASS)
			echo "PASS $job $title [${secs}s]"
			rm -rf "$keep"
			;;
		SKIP)
			echo "SKIP $job $title${reason:+ ($reason)}"
			rm -rf "$keep"
			;;
		FAIL)
			echo "FAIL $job $title [${secs}s]${reason:+: $reason}"
			save_failure "$dir" "$keep"
			[ -s "$dir/.diff" ] && cp "$dir/.diff" "$keep/diff"
			show_failure "$t" "$dir" "$keep"
			;;
		esac
		if [ "${KELPIE_KEEP_TMP:-0}" = 1 ]; then
			echo "    (test directory kept: $dir)"
		else
			rm -rf "$dir"
		fi
	} >"$STATE/$job.report" 2>&1
	echo "$result $secs" >"$STATE/$job.done"
}

# the expected seconds of job T (NNN or NNN@DRIVER): its last run's, else
# the project machine's figure, else its time limit
cost_of()
{
	local s
	s=$(awk -v t="$1" '$1 == t { s = $2 } END { print s }' \
		"$RESULTS/.durations" 2>/dev/null)
	[ -n "$s" ] || s=$(awk -v t="$1" '$1 == t { s = $2 } END { print s }' \
		"$FDIR/durations" 2>/dev/null)
	[ -n "$s" ] || s=$(timeout_of "${1%@*}")
	echo "$s"
}

STATE=$(mktemp -d "${TMPDIR:-/tmp}/kelpie-run.XXXXXX")

# CPU accounting: where cgroup v1's cpuacct is writable (root), each test
# runs in a group of its own, its daemons with it, and its CPU seconds
# (user and system) go to $STATE/cpu; the run ends with the tests that
# took the most.  The suite's time is bound by the machine's cores, so
# that is the figure to cut.  Elsewhere nothing is measured.
CPUACCT=/sys/fs/cgroup/cpuacct
CG_ROOT=
if [ -w "$CPUACCT/tasks" ] && mkdir "$CPUACCT/kelpie-run-$$" 2>/dev/null; then
	CG_ROOT=$CPUACCT/kelpie-run-$$
fi

# cg_remove CG: what is left in CG (nothing, once reap_leftovers ran) goes
# to the root group, and CG goes
cg_remove()
{
	local pid
	while read -r pid; do
		echo "$pid" >"$CPUACCT/tasks" 2>/dev/null
	done <"$1/tasks"
	rmdir "$1" 2>/dev/null
}

# cpu_account JOB CG: JOB's CPU seconds (total, user, system) to
# $STATE/cpu, then CG goes
cpu_account()
{
	local job=$1 cg=$2 ns user sys
	ns=$(cat "$cg/cpuacct.usage" 2>/dev/null) || return 0
	user=$(awk '$1 == "user" { print $2 }' "$cg/cpuacct.stat")
	sys=$(awk '$1 == "system" { print $2 }' "$cg/cpuacct.stat")
	echo "$job $((ns / 1000000000)) $((user / 100)) $((sys / 100))" \
		>>"$STATE/cpu"
	cg_remove "$cg"
}

cg_cleanup()
{
	local cg
	[ -n "$CG_ROOT" ] && [ -d "$CG_ROOT" ] || return 0
	for cg in "$CG_ROOT"/*/; do
		[ -d "$cg" ] && cg_remove "${cg%/}"
	done
	rmdir "$CG_ROOT" 2>/dev/null
}
declare -A running=()	# pid -> test

stop_running()
{
	local pid
	for pid in "${!running[@]}"; do
		pkill -TERM -P "$pid" 2>/dev/null
		kill -TERM "$pid" 2>/dev/null
	done
	wait
	for pid in "${!running[@]}"; do
		[ -f "$STATE/${running[$pid]}.dir" ] &&
			reap_leftovers "$(cat "$STATE/${running[$pid]}.dir")"
	done
}
trap 'stop_running; cg_cleanup; rm -rf "$STATE"; exit 130' INT TERM HUP
trap 'cg_cleanup; rm -rf "$STATE"' EXIT

# order: parallel tests longest first, then the serial ones in number order
parallel=()
serial=()
for t in "${tests[@]}"; do
	if is_serial "${t%@*}"; then
		serial+=("$t")
	else
		parallel+=("$(cost_of "$t") $t")
	fi
done
mapfile -t parallel < <(printf '%s\n' "${parallel[@]}" | sort -k1,1nr -k2,2 |
	awk 'NF == 2 { print $2 }')

passed=0
failed=0
skipped=0
failed_list=()
declare -A drv_pass=() drv_fail=() drv_skip=()	# by driver of NNN@DRIVER
next_print=0	# index into tests of the next report to print

# print the reports of finished tests, in test-number order, up to the
# first test that has not finished
print_ready()
{
	local t result secs d
	while [ $next_print -lt ${#tests[@]} ]; do
		t=${tests[next_print]}
		[ -f "$STATE/$t.done" ] || break
		read -r result secs <"$STATE/$t.done"
		cat "$STATE/$t.report"
		case $result in
		PASS) passed=$((passed + 1)) ;;
		SKIP) skipped=$((skipped + 1)) ;;
		*) failed=$((failed + 1)); failed_list+=("$t") ;;
		esac
		if [ "$t" != "${t%@*}" ]; then
			d=${t#*@}
			case $result in
			PASS) drv_pass[$d]=$((${drv_pass[$d]:-0} + 1)) ;;
			SKIP) drv_skip[$d]=$((${drv_skip[$d]:-0} + 1)) ;;
			*) drv_fail[$d]=$((${drv_fail[$d]:-0} + 1)) ;;
			esac
			drv_pass[$d]=${drv_pass[$d]:-0}
		fi
		[ "$result" = SKIP ] || echo "$t $secs" >>"$STATE/durations"
		next_print=$((next_print + 1))
	done
}

# start T in the background
start_test()
{
	run_test "$1" &
	running[$!]=$1
}

# wait for one running test to end
wait_one()
{
	local pid
	wait -n -p pid
	[ -n "${pid:-}" ] && unset "running[$pid]"
	print_ready
}

for t in "${parallel[@]}"; do
	while [ ${#running[@]} -ge "$JOBS" ]; do
		wait_one
	done
	start_test "$t"
done
while [ ${#running[@]} -gt 0 ]; do
	wait_one
done
for t in "${serial[@]}"; do
	start_test "$t"
	wait_one
done
print_ready

# keep the durations for the next run's order (merged with older ones)
if [ -s "$STATE/durations" ]; then
	mkdir -p "$RESULTS"
	cat "$RESULTS/.durations" "$STATE/durations" 2>/dev/null |
		awk '{ d[$1] = $2 } END { for (t in d) print t, d[t] }' |
		sort >"$STATE/durations.all" &&
		mv "$STATE/durations.all" "$RESULTS/.durations"
	# --save-durations: the same into the committed hints
	if [ "$SAVE_DURATIONS" = 1 ]; then
		{
			grep '^#' "$FDIR/durations" 2>/dev/null
			grep -v '^#' "$FDIR/durations" 2>/dev/null |
				cat - "$STATE/durations" |
				awk '{ d[$1] = $2 } END { for (t in d) print t, d[t] }' |
				sort
		} >"$STATE/hints" && mv "$STATE/hints" "$FDIR/durations"
	fi
fi

# the CPU the tests took, most first (kept in $RESULTS/.cpu)
if [ -s "$STATE/cpu" ]; then
	mkdir -p "$RESULTS"
	sort -k2,2nr "$STATE/cpu" >"$RESULTS/.cpu"
	awk '{ c += $2; u += $3; s += $4 } END {
		printf "CPU of the tests: %d s (user %d s, system %d s); most:\n",
			c, u, s }' "$RESULTS/.cpu"
	head -n 15 "$RESULTS/.cpu" |
		awk '{ printf "  %-14s %5d s (user %d, system %d)\n", $1, $2, $3, $4 }'
fi

for d in $(printf '%s\n' "${!drv_pass[@]}" | sort); do
	echo "== $d: ${drv_pass[$d]} passed, ${drv_fail[$d]:-0} failed," \
		"${drv_skip[$d]:-0} skipped"
done
[ ${#failed_list[@]} -gt 0 ] && echo "Failed: ${failed_list[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
