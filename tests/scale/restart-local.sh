#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A by-hand measurement (doc/scale.md), not a test: N sheep on this host
# (copies 3, two I/O threads each, the local driver or, with
# KELPIE_DRIVER=zookeeper, ZooKeeper), MB of data written, the cluster
# shut down (`dog cluster shutdown`), then all N started again side by
# side, as after a power cut.  Reports when the sheep logged that the
# cluster runs again (first and last node), when the last start-up
# returned, and when recovery was done everywhere, each from the start
# of the restart; and node 0's log lines of the joins it saw.
#
#   bash tests/scale/restart-local.sh N [MB]      (MB default 0)
N=${1:?usage: restart-local.sh N [MB]}
MB=${2:-0}
export NR_PORTS=$((2 * N + 8))
. "$(dirname "$0")/../functional/common.sh"
. "$(dirname "$0")/scale_lib.sh"

scale_start "$N"
if [ "$MB" -gt 0 ]; then
	dog vdi create v "${MB}M" || _fail "create failed"
	head -c $((MB << 20)) /dev/urandom | dog vdi write v || _fail "write failed"
fi
ep=$(current_epoch 0)

pids=()
for ((i = 0; i < N; i++)); do
	pids+=("$(sheep_pid "$i")")
done
dog cluster shutdown || _fail "shutdown failed"
for p in "${pids[@]}"; do
	_wait_pid_gone "$p" 60 || _fail "sheep $p did not exit on shutdown"
done

t0=$(date +%s.%N)
starters=()
for ((i = 0; i < N; i++)); do
	start_sheep "$i" -w io=2 ${SCALE_SHEEP_ARGS:-} &
	starters+=($!)
done
for p in "${starters[@]}"; do
	wait "$p" || _fail "a sheep did not start"
done
started=$(echo "$(date +%s.%N) - $t0" | bc)
wait_for_status "running, auto-recovery enabled"
end=$((SECONDS + 600))
until [ "$(log_spread "cluster running at epoch" "$t0" |
	sed -n 's/.* on \([0-9]*\) node.*/\1/p')" = "$N" ]; do
	[ $SECONDS -lt $end ] || _fail "not every node logged that it runs"
	sleep 0.5
done
running=$(log_spread "cluster running at epoch" "$t0")
wait_for_recovery 600
recovered=$(echo "$(date +%s.%N) - $t0" | bc)
printf "N=%d MB=%d epoch %d -> %d: start-ups returned after %.2f s; cluster running logged %s; recovery done after %.1f s\n" \
	"$N" "$MB" "$ep" "$(current_epoch 0)" "$started" "$running" \
	"$recovered"
echo "  node 0: $(grep -c '] .* joined$' "$T/0/sheep.log") join lines" \
	"in its log, $(grep -c 'epoch .*: .* node(s)$' "$T/0/sheep.log")" \
	"epoch lines"
