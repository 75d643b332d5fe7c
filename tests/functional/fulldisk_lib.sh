# SPDX-License-Identifier: GPL-2.0-or-later
# A full disk (tests 007 and 158): node 0's base directory is a small file
# system, already mounted at $T/0 by the test; full_disk_run starts the
# node with the given sheep options, writes 4 MiB chunks until a write
# fails, and checks that the failure is "no space", that the daemon keeps
# serving, that acknowledged data reads back, and that a delete frees
# space for new writes.  A test may define full_disk_hook PID, called
# once the acknowledged chunks have read back.

MiB=1048576
CHUNK=$((4 * MiB))
MAX_CHUNKS=25	# 100 MiB: much more than the store

full_disk_run()
{
	local i ok=0 failed_rc= pid
	start_sheep 0 "$@"
	wait_for_nodes 1
	dog cluster format -c 1 >/dev/null || _fail "format failed"
	wait_for_status "running, auto-recovery enabled"
	dog vdi create big $((MAX_CHUNKS * 4))M || _fail "vdi create exited with $?"
	pid=$(sheep_pid 0)

	# write 4 MiB chunks (one object each) until a write fails
	for ((i = 0; i < MAX_CHUNKS; i++)); do
		_random_file "$T/chunk.$i" $CHUNK
		if dog vdi write big $((i * CHUNK)) $CHUNK <"$T/chunk.$i" \
			2>"$T/err"; then
			ok=$((ok + 1))
		else
			failed_rc=$?
			rm -f "$T/chunk.$i"
			break
		fi
	done
	_log "$ok chunks written before the failure"
	[ -n "$failed_rc" ] || _fail "all $MAX_CHUNKS chunks fit on a small disk"
	[ $ok -ge 1 ] || _fail "not even one chunk could be written: $(cat "$T/err")"
	echo "writes failed once the disk was full: exit $failed_rc"
	grep -qE '^Failed to write object [1-9a-f][0-9a-f]*: Server has no space for new objects$' \
		"$T/err" || _fail "unexpected error: $(cat "$T/err")"
	echo "error: $(grep -m1 -oE 'Server has no space for new objects' "$T/err")"

	_pid_alive "$pid" || _fail "sheep died when the disk filled"
	[ "$(nr_nodes_seen 0)" = 1 ] || _fail "dog node list does not answer"
	dog vdi list -r >/dev/null || _fail "dog vdi list exited with $?"
	echo "daemon alive and answering"

	# every chunk that was acknowledged reads back identical
	for ((i = 0; i < ok; i++)); do
		dog vdi read big $((i * CHUNK)) $CHUNK >"$T/read" ||
			_fail "read of chunk $i exited with $?"
		_same "$T/chunk.$i" "$T/read" "chunk $i"
	done
	echo "all acknowledged chunks read back identical"
	# the test's own check of the node, if it has one
	if declare -F full_disk_hook >/dev/null; then
		full_disk_hook "$pid"
	fi

	# a further write still fails cleanly, and nothing changed
	dog vdi write big $((ok * CHUNK)) $CHUNK <"$T/chunk.0" 2>"$T/err" &&
		_fail "a write succeeded on the full disk"
	grep -qF 'Server has no space for new objects' "$T/err" ||
		_fail "unexpected error on the second try: $(cat "$T/err")"
	dog vdi read big 0 $CHUNK >"$T/read" || _fail "read of chunk 0 exited with $?"
	_same "$T/chunk.0" "$T/read" "chunk 0 after the second failure"
	echo "second failing write: same error, data intact"

	# deleting the VDI frees its objects: writing works again
	dog vdi delete big || _fail "vdi delete exited with $?"
	dog vdi create small 8M || _fail "create after delete exited with $?"
	retry_write()
	{
		dog vdi write small 0 $CHUNK <"$T/chunk.0" 2>"$T/err"
	}
	_retry 30 retry_write || _fail "no space freed by the delete: $(cat "$T/err")"
	dog vdi read small 0 $CHUNK >"$T/read" || _fail "read small exited with $?"
	_same "$T/chunk.0" "$T/read" "write after freeing space"
	echo "after deleting the VDI, writes succeed again"
	_pid_alive "$pid" || _fail "sheep died"
}
