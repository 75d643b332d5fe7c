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
