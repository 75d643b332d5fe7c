#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run every harness built by build.sh (build/fuzz/fuzz_*), one after the
# other:
#   1. a regression run over its seed corpus and its saved crashers
#      (tests/fuzz/corpus/NAME, tests/fuzz/crashers/NAME, -runs=0): every
#      file is executed once and must pass;
#   2. SECONDS (default 5) of new inputs (-max_total_time), starting from
#      those files, in a scratch corpus that is thrown away.
# Each run has -rss_limit_mb=2048 and a timeout per input.  Prints one line
# per harness, "ok   NAME: N execs" or "FAIL NAME: why", and last the line
# "N passed, N failed".  A harness that was not built counts as failed.
# A crashing input is kept in build/fuzz/artifacts/ (the line says where).
#
#   bash tests/fuzz/run.sh [SECONDS]
#
# Environment: FUZZ_HARNESSES (names, default all), FUZZ_JOBS_NICE (the
# nice level, default 19).

set -u
cd "$(dirname "$0")/../.." || exit 1

SECS=${1:-5}
ALL=${FUZZ_HARNESSES:-request nbd proto backup cluster_msg dog_reply snapshot procgroup zk_event btree http kvtree}
NICE=${FUZZ_JOBS_NICE:-19}
OUT=build/fuzz
ART=$OUT/artifacts
TIMEOUT=30
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

case $SECS in
''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

# the largest input worth trying, per harness
max_len()
{
	case $1 in
	request) echo 256 ;;
	proto) echo 5000 ;;
	nbd|cluster_msg) echo 16384 ;;
	http) echo 20000 ;;
	kvtree) echo 8192 ;;
	procgroup) echo 4096 ;;
	dog_reply) echo 32768 ;;
	*) echo 65536 ;;
	esac
}

# executions reported by a libFuzzer log
execs()
{
	sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$1" | tail -n 1
}

# why a libFuzzer log failed, in one line
why()
{
	local w

	w=$(grep -m 1 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$1")
	[ -n "$w" ] || w=$(grep -v '^#\|^INFO\|^ *$' "$1" | tail -n 1)
	echo "${w:-exit status $2}" | cut -c 1-160
}

# the crashing input libFuzzer wrote, moved to $ART
keep_artifact()
{
	local f

	for f in "$T/$1"-*; do
		[ -f "$f" ] || continue
		mkdir -p "$ART"
		mv "$f" "$ART/"
		echo " (input: $ART/$(basename "$f"))"
		return
	done
}

# run NAME: the regression run, then SECS of fuzzing
run()
{
	local h=$1 bin=$OUT/fuzz_$1 dirs="" d n1 n2 rc
	local opts="-rss_limit_mb=2048 -timeout=$TIMEOUT -close_fd_mask=3"

	opts="$opts -max_len=$(max_len "$h") -artifact_prefix=$T/$h-"
	if [ ! -x "$bin" ]; then
		echo "FAIL $h: not built (bash tests/fuzz/build.sh $h)"
		return 1
	fi
	for d in tests/fuzz/corpus/"$h" tests/fuzz/crashers/"$h"; do
		[ -d "$d" ] && dirs="$dirs $d"
	done
	nice -n "$NICE" "$bin" $opts -runs=0 $dirs >"$T/$h.reg" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL $h: regression run: $(why "$T/$h.reg" $rc)$(keep_artifact "$h")"
		return 1
	fi
	n1=$(find $dirs -type f 2>/dev/null | wc -l)
	mkdir -p "$T/$h.corpus"
	nice -n "$NICE" "$bin" $opts -max_total_time="$SECS" -print_final_stats=0 \
		"$T/$h.corpus" $dirs >"$T/$h.new" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL $h: $(why "$T/$h.new" $rc)$(keep_artifact "$h")"
		return 1
	fi
	n2=$(execs "$T/$h.new")
	echo "ok   $h: $((n1 + ${n2:-0})) execs"
	rm -rf "$T/$h.corpus"
}

T=$(mktemp -d "${TMPDIR:-/tmp}/kelpie-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
for h in $ALL; do
	if run "$h"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
