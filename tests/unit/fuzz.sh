#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The fuzz harnesses in `make check`: build them (tests/fuzz/build.sh),
# then a short bounded run of each (tests/fuzz/run.sh 5): every seed and
# saved crasher once, and 5 seconds of new inputs.  Ends with the line
# "N passed, N failed"; without clang (or libFuzzer) every harness is
# skipped: "0 passed, 0 failed, 12 skipped".  Long runs: make fuzz.
#
#   bash tests/unit/fuzz.sh        (from anywhere)

set -u
cd "$(dirname "$0")/../.." || exit 1

NR_HARNESSES=12

bash tests/fuzz/build.sh
rc=$?
if [ $rc -eq 77 ]; then
	echo "fuzz harnesses skipped: no clang with libFuzzer"
	echo "0 passed, 0 failed, $NR_HARNESSES skipped"
	exit 0
fi
# a harness that did not build is counted as failed by run.sh
bash tests/fuzz/run.sh 5
