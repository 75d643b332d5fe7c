# SPDX-License-Identifier: GPL-2.0-or-later
# For the by-hand scripts of tests/scale, after functional/common.sh.

# scale_start N: N sheep on this host (two I/O threads each, and the
# options of $SCALE_SHEEP_ARGS), formatted with 3 copies
scale_start()
{
	local i
	for ((i = 0; i < $1; i++)); do
		start_sheep "$i" -w io=2 ${SCALE_SHEEP_ARGS:-}
	done
	wait_for_nodes "$1"
	dog cluster format -c 3 -f >/dev/null || _fail "format failed"
	wait_for_status "running, auto-recovery enabled"
}

# log_spread PATTERN SINCE: the first and the last time (s after the unix
# time SINCE) at which a node's log has a line with PATTERN after SINCE,
# and on how many nodes
log_spread()
{
	python3 - "$1" "$2" "$T"/*/sheep.log <<'PY'
import sys, re, datetime
pat, since = sys.argv[1], float(sys.argv[2])
year = datetime.datetime.fromtimestamp(since).year
ts, nodes = [], set()
for path in sys.argv[3:]:
    for line in open(path, errors="replace"):
        if pat not in line:
            continue
        t = datetime.datetime.strptime(f"{year} {line[:22]}",
                                       "%Y %b %d %H:%M:%S.%f").timestamp()
        if t >= since:
            ts.append(t - since)
            nodes.add(path)
print(f"{min(ts):.2f} .. {max(ts):.2f} s on {len(nodes)} node(s)"
      if ts else "none")
PY
}
