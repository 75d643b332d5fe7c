# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the QEMU tests (070-079), sourced after common.sh.
#
#   qemu_patched   build (cached) the patched QEMU 7.2 tools; sets QIMG, QIO,
#                  QNBD, QSD
#   qemu_orig      build (cached) Debian bullseye's QEMU 5.2 tools with the
#                  original sheepdog driver; sets QIMG, QIO, QNBD
#
# KELPIE_SKIP_QEMU=1 makes every QEMU test report SKIP;
# KELPIE_QEMU_PATCHED_DIR / KELPIE_QEMU_ORIG_DIR use an existing build (a
# directory with bin/qemu-img etc.) instead of the build scripts.  A build that is
# impossible here for an environmental reason (build script exit 3: no
# Debian mirror, not root) is a SKIP too; any other build failure fails.

# the timeout of run.sh is raised for these tests by their "# timeout:"
# line: the first one builds QEMU (about 5-15 minutes on 2 cores)

_qemu_build()
{
	local script=$1 what=$2 log=$T/qemu-build-$2.log out rc var

	[ "${KELPIE_SKIP_QEMU:-0}" = 1 ] && _skip "KELPIE_SKIP_QEMU=1"
	# a developer's own build: KELPIE_QEMU_PATCHED_DIR / KELPIE_QEMU_ORIG_DIR
	var=KELPIE_QEMU_${what^^}_DIR
	if [ -n "${!var:-}" ]; then
		QEMU_DIR=${!var}
		return 0
	fi
	_log "building/looking up $what QEMU (cached; log $log)"
	out=$(bash "$TOP/qemu-patches/$script" 2>"$log")
	rc=$?
	case $rc in
	0) ;;
	3) _skip "cannot build $what QEMU here: $(grep -m1 '^ENVIRONMENT:' "$log" |
		sed 's/^ENVIRONMENT: //')" ;;
	*) tail -n 20 "$log" >&2
	   _fail "$script failed (exit $rc)" ;;
	esac
	out=$(tail -n 1 <<<"$out")
	[ -x "$out/bin/qemu-img" ] || _fail "$script printed '$out': no qemu-img there"
	QEMU_DIR=$out
}

qemu_patched()
{
	_qemu_build build.sh patched
	QIMG=$QEMU_DIR/bin/qemu-img
	QIO=$QEMU_DIR/bin/qemu-io
	QNBD=$QEMU_DIR/bin/qemu-nbd
	QSD=$QEMU_DIR/bin/qemu-storage-daemon
}

qemu_orig()
{
	_qemu_build build-orig.sh orig
	QIMG=$QEMU_DIR/bin/qemu-img
	QIO=$QEMU_DIR/bin/qemu-io
	QNBD=$QEMU_DIR/bin/qemu-nbd
	QSD=
}

# sheepdog URI of VDI $1 (optionally #$3) through node $2 (default 0)
sd_uri()
{
	local u="sheepdog://127.0.0.1:${PORT[${2:-0}]}/$1"
	[ -n "${3:-}" ] && u="$u#$3"
	echo "$u"
}

# qemu-io with a time limit, format raw, on image $1; the rest are its
# arguments.  Prints qemu-io's output without the timing lines.
qio()
{
	local img=$1 out rc
	shift
	out=$(timeout -k 5 300 "$QIO" -f raw "$@" "$img" 2>&1)
	rc=$?
	grep -v -E 'ops; [0-9]+:[0-9]+:[0-9.]+|ops/sec|sheepdog block driver is deprecated' <<<"$out"
	return $rc
}

# qio_ok IMG ARGS...: qemu-io must succeed (prints its output)
qio_ok()
{
	qio "$@" || _fail "qemu-io $* failed"
}

# qimg ARGS...: qemu-img with a time limit
qimg()
{
	timeout -k 5 600 "$QIMG" "$@"
}

# number of data objects of VDI id $1 (6 hex digits) on node $2
nr_data_objects()
{
	node_objects "$2" "00$1" | grep -c . || true
}

# number of data objects of vid $1 across nodes 0..$2-1
nr_data_objects_all()
{
	local i n=0
	for ((i = 0; i < $2; i++)); do
		n=$((n + $(nr_data_objects "$1" $i)))
	done
	echo $n
}

# the standard data test on a fresh 1 GiB VDI $1 through a 3-node cluster:
# patterns written through one node, verified through every node
qemu_pattern_test()
{
	local vdi=$1 G=1073741824 M=1048576 i r
	# offset length pattern: object boundaries, the last byte, unaligned
	local -a regions=(
		"0 512 0x11"
		"$((4 * M - 512)) 1024 0x22"
		"$((8 * M - 1)) 2 0x33"
		"$((12 * M + 12345)) 7777 0x44"
		"$((100 * M + 3)) $((4 * M + 5)) 0x55"
		"$((512 * M)) $((8 * M)) 0x66"
		"$((G - 4 * M - 1)) 3 0x77"
		"$((G - 1)) 1 0x88"
	)
	for ((i = 0; i < ${#regions[@]}; i++)); do
		read -r off len pat <<<"${regions[i]}"
		qio_ok "$(sd_uri "$vdi" $((i % 3)))" -c "write -P $pat $off $len"
	done
	for r in 0 1 2; do
		for ((i = 0; i < ${#regions[@]}; i++)); do
			read -r off len pat <<<"${regions[i]}"
			qio "$(sd_uri "$vdi" $r)" -c "read -P $pat $off $len" \
				>"$T/qio.out" ||
				_fail "pattern $pat at $off+$len via node $r: $(cat "$T/qio.out")"
		done
		# never written: zeros
		qio "$(sd_uri "$vdi" $r)" -c "read -P 0 $((200 * M)) $((4 * M))" \
			>"$T/qio.out" || _fail "zeros via node $r: $(cat "$T/qio.out")"
	done
	echo "patterns at ${#regions[@]} places verified through nodes 0, 1 and 2"
}

# raw file with data and holes -> VDI $1 -> raw file; compare both ways
qemu_convert_test()
{
	local vdi=$1 M=1048576 vid
	truncate -s $((64 * M)) "$T/src.raw"
	dd if=/dev/urandom of="$T/src.raw" bs=1M seek=1 count=3 conv=notrunc status=none
	dd if=/dev/urandom of="$T/src.raw" bs=4096 seek=$((40 * 256 + 7)) count=5 conv=notrunc status=none
	dd if=/dev/urandom of="$T/src.raw" bs=1 seek=$((64 * M - 100)) count=100 conv=notrunc status=none
	qimg convert -f raw -O raw "$T/src.raw" "$(sd_uri "$vdi" 1)" ||
		_fail "convert into the VDI failed"
	qimg compare -f raw -F raw "$T/src.raw" "$(sd_uri "$vdi" 2)" ||
		_fail "compare after convert in"
	vid=$(vdi_id "$vdi")
	# data in objects 0, 10 and 15 only: holes were not written
	echo "data objects after convert in: $(nr_data_objects_all "$vid" 3)"
	qimg convert -f raw -O raw "$(sd_uri "$vdi" 0)" "$T/out.raw" ||
		_fail "convert out of the VDI failed"
	_same "$T/src.raw" "$T/out.raw" "converted back"
	qimg compare -f raw -F raw "$(sd_uri "$vdi" 2)" "$T/out.raw" ||
		_fail "compare after convert out"
	[ "$(du -k "$T/out.raw" | cut -f1)" -lt $((64 * 1024)) ] ||
		_fail "convert out wrote the holes"
	echo "convert in and out: identical, holes kept"
}
