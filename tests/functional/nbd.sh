# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the NBD tests (050-059); source after common.sh.
#
# Node IDX (0-3) serves NBD on ${PORT[4 + IDX]}, one of the test's
# reserved ports (shown as PORTn by the output filter).  The clients are
# qemu-img, qemu-io and fio; a test skips when one of them is missing.

NBD_TIMEOUT=${NBD_TIMEOUT:-120}		# seconds for one client command

# nbd_require TOOL...: skip the test unless every TOOL is installed
nbd_require()
{
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || _skip "$t is not installed"
	done
}

nbd_port()
{
	echo "${PORT[$((4 + $1))]}"
}

# nbd_uri IDX EXPORT
nbd_uri()
{
	echo "nbd://127.0.0.1:$(nbd_port "$1")/$2"
}

# start_nbd_sheep IDX [extra sheep args]
start_nbd_sheep()
{
	local idx=$1
	shift
	start_sheep "$idx" --nbd "127.0.0.1:$(nbd_port "$idx")" "$@"
}

# start_nbd_sheeps N: nodes 0..N-1, each with its NBD port
start_nbd_sheeps()
{
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		start_nbd_sheep $i "$@"
	done
	wait_for_nodes "$n"
}

# _qio FLAGS IDX EXPORT COMMAND...: qemu-io commands on one connection
_qio()
{
	local flags=$1 idx=$2 ex=$3 c
	local -a args=()
	shift 3
	for c in "$@"; do
		args+=(-c "$c")
	done
	echo "qemu-io $flags ${args[*]} $(nbd_uri "$idx" "$ex")" >>"$T/qio.log"
	# shellcheck disable=SC2086
	timeout -k 5 "$NBD_TIMEOUT" qemu-io -f raw $flags "${args[@]}" \
		"$(nbd_uri "$idx" "$ex")" </dev/null >>"$T/qio.log" 2>&1
}

# qio IDX EXPORT COMMAND...: read-write; fails if any command fails
# (a "read -P" mismatch included)
qio()
{
	_qio "" "$@"
}

# qio_ro IDX EXPORT COMMAND...: the same, opened read-only
qio_ro()
{
	_qio -r "$@"
}

# fill FILE OFFSET LENGTH BYTE: what "write -P BYTE OFFSET LENGTH" does
fill()
{
	head -c "$3" /dev/zero | tr '\000' "\\$(printf %03o "$4")" |
		dd of="$1" bs=64k oflag=seek_bytes seek="$2" conv=notrunc \
			status=none || _fail "cannot fill $1"
}

# cur_vdi_id NAME: like vdi_id of common.sh, clones included
cur_vdi_id()
{
	local v
	v=$(dog vdi list -r "$1" 2>/dev/null |
		awk -v n="$1" '($1 == "=" || $1 == "c") && $2 == n { print $8; exit }')
	[ -n "$v" ] && printf '%06x\n' "0x$v"
}

# nr_data_objects IDX VDI: data objects of the current VDI on node IDX
nr_data_objects()
{
	local vid
	vid=$(cur_vdi_id "$2") || return 1
	node_objects "$1" "00$vid" | grep -c .
}

# the last line qemu-img / qemu-io printed that quotes the server
server_said()
{
	grep -o 'server reported: .*' "$1" | tail -n 1
}
