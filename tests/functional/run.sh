#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run Kelpie's functional tests: tests/functional/run.sh [NNN...]
#
# Each numbered test runs in a fresh directory ($T) under a timeout.  Exit
# status 0 passes, 77 skips, anything else fails; when NNN.out exists the
# test's stdout, filtered by _filter_output of common.sh, must match it.
# Output of failed tests (stdout/stderr, diff, daemon logs) is kept in
# $KELPIE_RESULTS (default build/functional-results/NNN).
#
# Environment: KELPIE_TEST_TIMEOUT (seconds per test, default 300; a test
# with a "# timeout: N" line gets N seconds if that is more),
# KELPIE_KEEP_TMP=1 (keep every test directory), KELPIE_PORT_BASE=N (nodes
# listen on the first free ports from N: object placement follows the ports,
# so this replays a placement seen in a log), TMPDIR.
# Ends with the line "N passed, N failed, N skipped".

set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
FDIR=$TOP/tests/functional
TIMEOUT=${KELPIE_TEST_TIMEOUT:-300}
RESULTS=${KELPIE_RESULTS:-$TOP/build/functional-results}
export TOP

passed=0
failed=0
skipped=0
failed_list=()

if [ $# -gt 0 ]; then
	tests=()
	for t in "$@"; do
		t=$(basename "$t")
		if [ ! -f "$FDIR/$t" ]; then
			echo "no such test: $t" >&2
			exit 2
		fi
		tests+=("$t")
	done
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

show_failure()
{
	local t=$1 dir=$2 keep=$3 f
	if [ -s "$keep/diff" ]; then
		echo "    --- output differs from $t.out:"
		head -n 60 "$keep/diff" | indent
	fi
	if [ -s "$dir/.stderr" ]; then
		echo "    --- stderr (last 30 lines):"
		tail -n 30 "$dir/.stderr" | indent
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

for t in "${tests[@]}"; do
	title=$(title_of "$t")
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kelpie-$t.XXXXXX")
	keep=$RESULTS/$t
	start=$SECONDS
	# a test may ask for more time with a "# timeout: SECONDS" line
	t_timeout=$(sed -n 's/^# *timeout: *\([0-9][0-9]*\).*/\1/p' "$FDIR/$t" |
		head -n 1)
	[ -n "$t_timeout" ] && [ "$t_timeout" -gt "$TIMEOUT" ] || t_timeout=$TIMEOUT
	T=$dir timeout -k 15 "$t_timeout" bash "$FDIR/$t" \
		</dev/null >"$dir/.stdout" 2>"$dir/.stderr"
	rc=$?
	reap_leftovers "$dir"
	secs=$((SECONDS - start))
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

	case $result in
	PASS)
		passed=$((passed + 1))
		echo "PASS $t $title [${secs}s]"
		rm -rf "$keep"
		;;
	SKIP)
		skipped=$((skipped + 1))
		echo "SKIP $t $title${reason:+ ($reason)}"
		rm -rf "$keep"
		;;
	FAIL)
		failed=$((failed + 1))
		failed_list+=("$t")
		echo "FAIL $t $title [${secs}s]${reason:+: $reason}"
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
done

[ ${#failed_list[@]} -gt 0 ] && echo "Failed: ${failed_list[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
