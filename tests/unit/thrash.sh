#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The thrash suite in `make check`: a 3-minute run of tests/thrash/run with
# a fixed seed on 5 nodes (about 5 minutes in all: set-up, 3 minutes of
# faults under load, recovery, end checks).  Seed 17's schedule has every
# kind of fault: 8 SIGKILLs, 7 SIGSTOPs, 4 full disks, 2 whole-cluster
# restarts, 3 empty-node replacements.  Ends with "N passed, N failed" (one
# per end check); skips without root or without fio's nbd engine.
# Longer runs and other seeds: tests/thrash/README.md.
#
#   bash tests/unit/thrash.sh        (from anywhere, after make)
#
# Environment: KELPIE_THRASH_MINUTES, KELPIE_THRASH_SEED override the
# length and the seed.

set -u
cd "$(dirname "$0")/../.." || exit 1

MINUTES=${KELPIE_THRASH_MINUTES:-3}
SEED=${KELPIE_THRASH_SEED:-17}

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: the thrash suite needs root (tmpfs mounts)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
if ! command -v fio >/dev/null || ! fio --enghelp=nbd >/dev/null 2>&1; then
	echo "SKIP: fio with the nbd engine is not installed"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

out=$(mktemp "${TMPDIR:-/tmp}/kelpie-thrash-unit.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
bash tests/thrash/run --minutes "$MINUTES" --seed "$SEED" --nodes 5 \
	</dev/null 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if ! grep -qE '^[0-9]+ passed, [0-9]+ failed' "$out"; then
	# set-up failed before any check ran
	echo "FAIL: tests/thrash/run exited with $rc before its checks"
	echo "0 passed, 1 failed"
fi
[ "$rc" -eq 0 ]
