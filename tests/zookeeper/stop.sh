#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Stop the ZooKeeper that tests/zookeeper/start.sh DIR started:
#
#   tests/zookeeper/stop.sh DIR          stop it and remove DIR
#   tests/zookeeper/stop.sh DIR --keep   stop it, keep DIR (for a restart)
#   tests/zookeeper/stop.sh DIR --kill   SIGKILL it (a crash), keep DIR
#
# The server is stopped by the pid in DIR/zk.pid (SIGTERM, SIGKILL after
# 10 s), and only if /proc/PID/cmdline shows that pid is the java running
# ZooKeeper with DIR/zoo.cfg.  Restart it with start.sh DIR PORT (PORT is in
# DIR/port; start.sh DIR alone uses it too): data, znodes and sessions are
# kept.  DIR is removed only if it looks like a start.sh directory (it holds
# zoo.cfg or is empty).  Calling stop.sh again, or on a missing DIR, is fine.
#
# Exit status: 0 stopped (or nothing to stop), 1 usage errors or a server
# that would not die.

set -u
DIR=${1:-}
MODE=${2:-stop}
LOCKS=${PORT_LOCK_DIR:-/tmp/kelpie-test-ports}

case $MODE in
stop | --keep | --kill) ;;
*) DIR= ;;
esac
if [ -z "$DIR" ] || [ $# -gt 2 ]; then
	echo "usage: $0 DIR [--keep|--kill]" >&2
	exit 1
fi
if [ ! -d "$DIR" ]; then
	echo "no directory $DIR: nothing to stop"
	exit 0
fi
DIR=$(cd "$DIR" && pwd)

. "$(dirname "$0")/proc.sh"

# wait up to $2 seconds for pid $1 to die
wait_dead()
{
	local end=$((SECONDS + $2))
	while alive "$1"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.1
	done
	return 0
}

rc=0
pid=$(cat "$DIR/zk.pid" 2>/dev/null)
port=$(cat "$DIR/port" 2>/dev/null)
if [ -z "$pid" ]; then
	echo "no zk.pid in $DIR: not running"
elif ! ours "$pid"; then
	echo "zookeeper $pid of $DIR is not running"
elif [ "$MODE" = --kill ]; then
	kill -KILL "$pid" 2>/dev/null
	if wait_dead "$pid" 10; then
		echo "killed zookeeper $pid (SIGKILL)"
	else
		echo "zookeeper $pid did not die after SIGKILL" >&2
		rc=1
	fi
else
	kill -TERM "$pid" 2>/dev/null
	if ! wait_dead "$pid" 10; then
		echo "zookeeper $pid ignored SIGTERM for 10 s: SIGKILL"
		ours "$pid" && kill -KILL "$pid" 2>/dev/null
		wait_dead "$pid" 10 || rc=1
	fi
	if [ $rc = 0 ]; then
		echo "stopped zookeeper $pid"
	else
		echo "zookeeper $pid did not die" >&2
	fi
fi
[ $rc = 0 ] && rm -f "$DIR/zk.pid"
if [ -f "$DIR/zk.log" ]; then
	printf '==== %s: %s\n' "$(date '+%F %T')" \
		"stop.sh ${MODE#--} (pid ${pid:-none})" >>"$DIR/zk.log"
fi

# the port reservation of this server (start.sh makes the JVM its owner):
# released on a full stop; for a restart (--keep, --kill) our caller owns it
# until start.sh gives it to the new JVM, so that no test takes the port
if [ -n "$port" ] && [ -d "$LOCKS/$port" ] &&
	[ "$(cat "$LOCKS/$port/zookeeper" 2>/dev/null)" = "$DIR" ]; then
	if [ "$MODE" = stop ]; then
		[ $rc = 0 ] && rm -rf "${LOCKS:?}/$port"
	else
		echo "$PPID" >"$LOCKS/$port/owner"
	fi
fi
[ "$MODE" = stop ] && [ $rc = 0 ] || exit $rc

if [ -f "$DIR/zoo.cfg" ] || [ -z "$(ls -A "$DIR")" ]; then
	rm -rf "$DIR"
else
	echo "$DIR does not look like a zookeeper directory: not removed" >&2
fi
exit 0
