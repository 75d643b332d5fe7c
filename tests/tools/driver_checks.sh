# SPDX-License-Identifier: GPL-2.0-or-later
# Checks shared by the driver suites (tests/unit/local_driver.sh,
# tests/corosync/driver.sh), sourced from the top of the tree; $T holds
# the harness outputs.

# exclusive TAG: in $T/TAG.out, never two blocks outstanding: a grant
# ("NOTIFY P g P K") only while none is held, an unblock ("u") only by
# the holder; a LEAVE of the holder releases its block
# (the events before the first violation go out as WHY lines: CI keeps
# no files)
exclusive() {
	awk 'function at(why) {
		if (bad++) return
		print "WHY " FILENAME ":" NR ": " why
		for (i = NR - 8; i < NR; i++) if (i in ev) print "WHY   " ev[i]
		print "WHY > " $0
	     }
	     $1 == "NOTIFY" && $3 == "g" { if (h != "") at("held by " h); h = $4 }
	     $1 == "NOTIFY" && $3 == "u" { if (h != $4) at("held by " h); h = "" }
	     $1 == "LEAVE" { if (h == $2) h = "" }
	     { ev[NR] = $0 }
	     END { exit bad > 0 }' "$T/$1.out"
}

# accept_runs_ok TAG: in $T/TAG.out, every accept marked " +" (joins
# decided together) is followed by another accept with the same members,
# and the last one is not marked
accept_runs_ok() {
	grep -v '^#' "$T/$1.out" | awk '
		pend != "" { if ($1 != "ACCEPT" || $3 != pend) bad = 1; pend = "" }
		$1 == "ACCEPT" && $NF == "+" { pend = $3 }
		END { exit bad || pend != "" }'
}

# own_first SCENARIO PORT...: each joiner's events start with its own
# accept
own_first() {
	local tag=$1 p

	shift
	for p in "$@"; do
		grep -v '^#' "$T/$tag.$p.out" | head -n 1 |
			grep -q "^ACCEPT $p " || return 1
	done
}
