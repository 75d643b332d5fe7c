# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the tests that run the documents' commands (167, 168); source
# after common.sh.  tests/tools/doc_commands.py says which blocks run and
# what their placeholders become; these helpers give them what they
# assume:
#
#   doc_prepare          wrappers of sheep, dog and sheepfs in $T/bin (first
#                        in PATH), the working directory $T/work with
#                        image.raw
#   doc_run NAME [--with qemu] FILE...
#                        run the blocks of FILEs (paths from the top of the
#                        tree) in one script; prints "FILE: N blocks run"
#                        for each; fails on the first command that fails
#                        and when no block of a FILE ran
#   doc_reset            stop every sheep and sheepfs the test or the
#                        documents started, unmount, forget their stores:
#                        the next documents start from nothing
#
# The wrappers: sheep without -p listens on node 0's port (the documents'
# 7000), without -c joins local:$T/tmp/kelpie-local (its default
# /tmp/kelpie-local, moved like every /tmp path), always writes a pidfile
# (recorded in $T/.pids, so common.sh's clean-up stops it), and waits
# until a sheep of the same store that was just stopped is gone; a sheep
# without a store directory is refused (its default, /tmp, is shared).
# sheepfs without -p talks to node 0 and records its pid and mount point.
# dog runs under a timeout.

DOC_TOOL=$TOP/tests/tools/doc_commands.py

doc_prepare()
{
	command -v python3 >/dev/null || _skip "python3 is not installed"
	mkdir -p "$T/bin" "$T/work"
	# each wrapper: its settings, then its (quoted) body
	printf '#!/bin/bash\n# doc tests: see tests/functional/doc_lib.sh\n' \
		>"$T/bin/.head"
	printf 'T=%q REAL_SHEEP=%q REAL_SHEEPFS=%q REAL_DOG=%q PORT0=%q\n' \
		"$T" "$SHEEP_BIN" "$TOP/sheepfs/sheepfs" "$DOG_BIN" \
		"${PORT[0]}" >>"$T/bin/.head"
	printf 'FUNC=%q DOG_TIMEOUT=%q\n' "$FUNC_DIR" "$DOG_TIMEOUT" \
		>>"$T/bin/.head"

	cat "$T/bin/.head" - >"$T/bin/sheep" <<'EOF'
KELPIE_COMMON_NOINIT=1 . "$FUNC/common.sh"
args=("$@")
has_p=0 has_c=0 pidfile= store= i=0
while [ $i -lt $# ]; do
	a=${args[i]}
	case $a in
	-h | --help | -v | --version) exec "$REAL_SHEEP" "$@" ;;
	-p | --port) has_p=1; i=$((i + 1)) ;;
	--port=* | -p?*) has_p=1 ;;
	-c | --cluster) has_c=1; i=$((i + 1)) ;;
	--cluster=* | -c?*) has_c=1 ;;
	-P | --pidfile) i=$((i + 1)); pidfile=${args[i]} ;;
	--pidfile=*) pidfile=${a#--pidfile=} ;;
	-P?*) pidfile=${a#-P} ;;
	-b | --bindaddr | -l | --log | -j | --journal | -R | --recovery | \
	-w | --wq-threads | -V | --vnodes | -z | --zone | -y | --myaddr | \
	--admin-from | --budget | --cluster-key | --http | --nbd | --rdma)
		i=$((i + 1)) ;;
	-*) ;;
	*) store=${a%%,*} ;;
	esac
	i=$((i + 1))
done
if [ -z "$store" ]; then
	echo "doc test: sheep without a store directory (its default /tmp is shared)" >&2
	exit 1
fi
# a sheep of this store that was just stopped (dog node kill, cluster
# shutdown) may still hold the store and its port: wait until it is gone,
# as an operator's restart would
while read -r pid st; do
	[ "$st" = "$store" ] || continue
	for ((w = 0; w < 300; w++)); do
		_pid_alive "$pid" || break
		sleep 0.1
	done
done < <(cat "$T/.docstores" 2>/dev/null)
extra=()
[ $has_p = 1 ] || extra+=(-p "$PORT0")
[ $has_c = 1 ] || extra+=(-c "local:$T/tmp/kelpie-local")
if [ -z "$pidfile" ]; then
	n=0
	while [ -e "$T/docsheep.$n" ]; do n=$((n + 1)); done
	mkdir -p "$T/docsheep.$n"
	pidfile=$T/docsheep.$n/pid
	extra+=(-P "$pidfile")
fi
timeout -k 5 30 setsid -w "$REAL_SHEEP" "${extra[@]}" "$@" </dev/null || exit
pid=$(cat "$pidfile")
echo "$pid" >>"$T/.pids"
echo "$pid $store" >>"$T/.docstores"
EOF

	cat "$T/bin/.head" - >"$T/bin/dog" <<'EOF'
exec timeout -k 5 "$DOG_TIMEOUT" "$REAL_DOG" "$@"
EOF

	cat "$T/bin/.head" - >"$T/bin/sheepfs" <<'EOF'
extra=() pidfile= mnt=
for a; do
	case $a in
	-h | --help | -V | --version) exec "$REAL_SHEEPFS" "$@" ;;
	-f | --foreground | -d | --debug)
		echo "doc test: sheepfs in the foreground would block" >&2
		exit 1 ;;
	esac
done
case " $* " in
*" -p "* | *" --port "* | *" --port="*) ;;
*) extra+=(-p "$PORT0") ;;
esac
case " $* " in
*" --pidfile "*) ;;
*) pidfile=$(mktemp "$T/docsheepfs.XXXXXX")
   extra+=(--pidfile "$pidfile") ;;
esac
for a; do mnt=$a; done
case $mnt in
/*) ;;
*) mnt=$PWD/$mnt ;;
esac
echo "$mnt" >>"$T/.docmounts"
timeout -k 5 60 "$REAL_SHEEPFS" "${extra[@]}" "$@" </dev/null || exit
[ -n "$pidfile" ] && cat "$pidfile" >>"$T/.pids"
exit 0
EOF
	chmod +x "$T/bin/sheep" "$T/bin/dog" "$T/bin/sheepfs"
	_random_file "$T/work/image.raw" 8M
}

# undo what the documents mounted under $T: other file systems first (an
# ext4 on a loop device on a sheepfs file), then the loop devices on files
# under $T, then the FUSE mounts, the innermost first
_doc_mounts()
{
	awk -v t="$T/" -v fuse="$1" 'index($2, t) == 1 &&
		(($3 ~ /^fuse/) == fuse) { print length($2), $2 }' \
		/proc/self/mounts 2>/dev/null | sort -rn | cut -d' ' -f2- |
		while read -r m; do
			printf '%b\n' "$m"	# /proc/mounts escapes blanks
		done
}

_doc_unmount()
{
	local m dev back
	_doc_mounts 0 | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	while read -r dev back; do
		case $back in
		"$T"/*) losetup -d "$dev" 2>/dev/null ;;
		esac
	done < <(losetup -l -n -O NAME,BACK-FILE 2>/dev/null)
	_doc_mounts 1 | while read -r m; do
		fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m"
	done
	rm -f "$T/.docmounts"
}

doc_reset()
{
	local pid f
	local -a pids=()
	_doc_unmount
	for f in "$T"/*/pid; do
		[ -f "$f" ] && pids+=("$(cat "$f")")
	done
	[ -f "$T/.pids" ] && mapfile -t -O ${#pids[@]} pids <"$T/.pids"
	for pid in "${pids[@]}"; do
		_pid_is_ours "$pid" && kill -KILL "$pid" 2>/dev/null
	done
	for pid in "${pids[@]}"; do
		_wait_pid_gone "$pid" 10
	done
	rm -f "$T/.pids" "$T/.docstores"
	# the stores and files of the documents and of start_sheep
	rm -rf "$T"/[0-9] "$T"/docsheep.* "$T"/docsheepfs.* "$T/cluster" \
		"$T/var" "$T/tmp" "$T/mnt" "$T/backup" "$T/srv" "$T/run"
	find "$T/work" -mindepth 1 -maxdepth 1 ! -name image.raw \
		! -name debian.qcow2 ! -name qemu-patches -exec rm -rf {} +
}

# the documents' mounts go before common.sh stops the daemons
_doc_on_exit()
{
	local rc=$?
	_doc_unmount
	(exit $rc)	# _on_exit takes the test's status from $?
	_on_exit
}
trap _doc_on_exit EXIT

# doc_run NAME [--with WHAT] FILE...: the blocks of FILEs, in one script
doc_run()
{
	local name=$1 f
	local -a opts=() files=()
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--with) opts+=(--with "$2"); shift ;;
		*) files+=("$1") ;;
		esac
		shift
	done
	(cd "$TOP" && python3 "$DOC_TOOL" --root "$T" \
		--ports "$(IFS=,; echo "${PORT[*]}")" "${opts[@]}" \
		--script "$T/$name.sh" "${files[@]}") 2>"$T/$name.plan" ||
		_fail "doc_commands.py: $(cat "$T/$name.plan")"
	cat "$T/$name.plan" >&2
	_log "running $name: ${files[*]} (log: $T/$name.log)"
	PATH=$T/bin:$PATH bash "$T/$name.sh" >"$T/$name.log" 2>&1 ||
		_fail "$name: $(grep '^FAIL: ' "$T/$name.log" | tail -n 1)
$(tail -n 15 "$T/$name.log")"
	for f in "${files[@]}"; do
		grep -E "^$f: [0-9]+ blocks? run\$" "$T/$name.log"
		grep -qE "^$f: [1-9][0-9]* blocks? run\$" "$T/$name.log" ||
			_fail "$name: no block of $f ran"
	done
}
