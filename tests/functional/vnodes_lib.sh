# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# helpers of the vnode tests (118, 119): sourced after common.sh
# PORT:ZONE:VNODES of every member
members() { dog node list -r | awk '{ split($2, a, ":"); print a[2] ":" $4 ":" $3 }'; }
# the vnodes of nodes NODE_IDX, in that order
vnodes()
{
	local i out=
	dog node list -r >"$T/nl" || _fail "node list exited with $?"
	for i in "${NODE_IDX[@]}"; do
		out+="$(awk -v p=":${PORT[i]}\$" '$2 ~ p { print $3 }' "$T/nl") "
	done
	echo "${out% }"
}
idx_of_port()
{
	local i
	for ((i = 0; i < 8; i++)); do [ "${PORT[i]}" = "$1" ] && echo $i; done
}

# every object of VDI $1 (copies $2) sits on exactly the nodes the ring
# of `dog node list` gives it, and nowhere else
check_placement()
{
	local vid oid want have n=0 i
	local -a m
	vid=$(vdi_id "$1")
	mapfile -t m < <(members)
	for oid in $(for i in "${NODE_IDX[@]}"; do node_objects "$i" 00; done |
		sort -u); do
		case $oid in 00"$vid"*) ;; *) continue ;; esac
		want=$("$T/placement" "$oid" "$2" "${m[@]}" |
			while read -r p; do idx_of_port "$p"; done | sort | xargs)
		have=$(for i in "${NODE_IDX[@]}"; do
			[ -f "$T/$i/obj/$oid" ] && echo "$i"; done | xargs)
		[ "$want" = "$have" ] ||
			_fail "$oid: on nodes '$have', its targets are '$want'"
		n=$((n + 1))
	done
	echo "$1: $n data objects, each on its targets"
}

