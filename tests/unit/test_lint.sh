#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Checks of the test scripts themselves, for mistakes that make a test
# unable to fail or fail for no reason:
#  - `_retry N test "$(cmd)"` evaluates cmd once, before the first try, so
#    the retries only repeat the same answer: the condition must be a
#    function, or an eval of a single-quoted string.
cd "$(dirname "$0")/../.." || exit 2
pass=0
fail=0

bad=$(grep -nE '_retry +[0-9]+ +(test|\[) [^|]*\$\(' tests/functional/[0-9]* \
	tests/corosync/*.sh tests/zookeeper/*.sh 2>/dev/null)
if [ -n "$bad" ]; then
	echo "FAIL _retry with a condition evaluated once:"
	echo "$bad" | sed 's/^/     /'
	fail=$((fail + 1))
else
	echo "ok   no _retry evaluates its condition only once"
	pass=$((pass + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
