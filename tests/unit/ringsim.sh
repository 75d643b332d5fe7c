#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The placement simulator's checks (tests/sim/ringsim.c --check): the
# daemon's ring, at 60 nodes, moves only what a membership change asks
# for, stays balanced, weighs capacity and keeps racks apart; rendezvous
# hashing, the reference, too.  Prints "N passed, N failed".
cd "$(dirname "$0")/../.." || exit 2
[ -x build/ringsim ] || make --no-print-directory build/ringsim >/dev/null ||
	{ echo "0 passed, 1 failed"; exit 1; }
exec build/ringsim --check
