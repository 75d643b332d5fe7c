#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Stop the corosync that tests/corosync/start.sh DIR started:
#
#   tests/corosync/stop.sh [-f] DIR
#
# A reused corosync (DIR/reused) is left alone.  Ours is stopped by its pid
# (SIGTERM, SIGKILL after 10 s), but only if its command line names DIR, and,
# unless -f is given, only if no CPG group has members any more (somebody
# else may have reused it meanwhile).  The qb-* files it left in /dev/shm are
# removed.

set -u
force=0
if [ "${1:-}" = -f ]; then
	force=1
	shift
fi
DIR=${1:-}
if [ -z "$DIR" ] || [ ! -d "$DIR" ]; then
	echo "usage: $0 [-f] DIR" >&2
	exit 1
fi
DIR=$(cd "$DIR" && pwd)

alive()
{
	[ -e "/proc/$1" ] &&
		! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

ours()
{
	alive "$1" &&
		tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null |
		grep -qF -- "$DIR/corosync.conf"
}

# the shared-memory files of corosync $1 (qb-<pid>-... and qb-<name>-<pid>-...)
clean_shm()
{
	local f base

	for f in /dev/shm/qb-*; do
		[ -e "$f" ] || continue
		base=${f##*/}
		case "-${base#qb-}-" in
		*"-$1-"*) rm -f -- "$f" ;;
		esac
	done
}

if [ -e "$DIR/reused" ]; then
	echo "corosync was reused, not stopping it"
	exit 0
fi
pid=$(cat "$DIR/corosync.pid" 2>/dev/null)
if [ -z "$pid" ]; then
	echo "no corosync.pid in $DIR"
	exit 0
fi
if ! ours "$pid"; then
	clean_shm "$pid"
	rm -f "$DIR/corosync.pid"
	echo "corosync $pid is not running"
	exit 0
fi
if [ $force -eq 0 ] && command -v corosync-cpgtool >/dev/null &&
	[ "$(timeout 5 corosync-cpgtool 2>/dev/null | tail -n +2 | grep -c .)" -gt 0 ]; then
	echo "corosync $pid still has CPG clients; not stopping it (use -f)"
	exit 0
fi
kill -TERM "$pid" 2>/dev/null
end=$((SECONDS + 10))
while alive "$pid" && [ $SECONDS -lt $end ]; do
	sleep 0.1
done
if alive "$pid"; then
	kill -KILL "$pid" 2>/dev/null
	sleep 0.5
fi
clean_shm "$pid"
rm -f "$DIR/corosync.pid"
echo "stopped corosync $pid"
