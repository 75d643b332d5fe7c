#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Make a corosync available for a test run:
#
#   tests/corosync/start.sh DIR
#
# If a corosync already answers on this host (its IPC sockets are abstract
# unix sockets, one set per network namespace, so there can be only one), it
# is reused and DIR/reused is created.  Otherwise a private one-node corosync
# is started from corosync.conf.in with its files in DIR: it runs inside
# `unshare -m` with DIR/run bind-mounted over /run, so that its pid lock
# (/run/corosync.pid) cannot clash with anything else.  Sheep started
# normally reach it through the abstract sockets.  Its pid is in
# DIR/corosync.pid; stop it with tests/corosync/stop.sh DIR.
#
# Exit status: 0 corosync is up (started or reused), 77 corosync cannot run
# on this machine (the caller should skip), 1 usage errors.
#
# Environment: KELPIE_COROSYNC_TRANSPORT (udpu, or knet), KELPIE_COROSYNC_PORT
# (UDP port, default 5405), KELPIE_COROSYNC_TIMEOUT (seconds, default 15),
# KELPIE_COROSYNC_CONF (a complete config file to use instead of the
# template; then start.sh waits only until corosync answers, not for
# quorum, since the other nodes of such a cluster may not be up yet).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-}
TRANSPORT=${KELPIE_COROSYNC_TRANSPORT:-udpu}
PORT=${KELPIE_COROSYNC_PORT:-5405}
TIMEOUT=${KELPIE_COROSYNC_TIMEOUT:-15}
CONF=${KELPIE_COROSYNC_CONF:-}

if [ -z "$DIR" ]; then
	echo "usage: $0 DIR" >&2
	exit 1
fi
mkdir -p "$DIR" || exit 1
DIR=$(cd "$DIR" && pwd)

skip()
{
	echo "corosync unavailable: $*" >&2
	exit 77
}

answers()
{
	timeout 5 corosync-cfgtool -s >/dev/null 2>&1
}

quorate()
{
	# exit status 0 only when quorate
	timeout 5 corosync-quorumtool -s >/dev/null 2>&1
}

alive()
{
	[ -e "/proc/$1" ] &&
		! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

command -v corosync >/dev/null || skip "no corosync binary (apt-get install corosync)"
command -v corosync-cfgtool >/dev/null || skip "no corosync-cfgtool"
command -v unshare >/dev/null || skip "no unshare"

rm -f "$DIR/reused" "$DIR/corosync.pid"
if answers; then
	touch "$DIR/reused"
	echo "reusing the corosync that is already running"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || skip "a private corosync needs root (mount namespace)"

mkdir -p "$DIR/run" "$DIR/state" || exit 1
if [ -n "$CONF" ]; then
	cp "$CONF" "$DIR/corosync.conf" || exit 1
else
	sed -e "s|@DIR@|$DIR|g" -e "s|@CLUSTER@|kelpie-test|" \
		-e "s|@TRANSPORT@|$TRANSPORT|" -e "s|@PORT@|$PORT|" \
		"$HERE/corosync.conf.in" >"$DIR/corosync.conf" || exit 1
fi

# the inner shell writes its pid and then becomes corosync (exec), so the
# pid file names corosync itself whatever setsid/unshare do
# (own-mounts.sh: its copies of other tests' mounts are dropped, so that
# it pins none of their file systems)
setsid unshare -m --propagation private \
	"$HERE/../tools/own-mounts.sh" --keep "$DIR" sh -c '
	echo $$ >"$1/corosync.pid" &&
	mount --bind "$1/run" /run &&
	exec corosync -f -c "$1/corosync.conf"' sh "$DIR" \
	</dev/null >"$DIR/corosync.out" 2>&1 &

end=$((SECONDS + TIMEOUT))
pid=
while :; do
	[ -z "$pid" ] && pid=$(cat "$DIR/corosync.pid" 2>/dev/null)
	if [ -n "$pid" ] && answers && { [ -n "$CONF" ] || quorate; }; then
		break
	fi
	if [ -n "$pid" ] && ! alive "$pid"; then
		tail -n 5 "$DIR/corosync.out" "$DIR/corosync.log" 2>/dev/null >&2
		bash "$HERE/stop.sh" "$DIR" >/dev/null 2>&1
		skip "corosync exited during start-up (see $DIR/corosync.log)"
	fi
	if [ $SECONDS -ge $end ]; then
		bash "$HERE/stop.sh" "$DIR" >/dev/null 2>&1
		skip "corosync did not answer within $TIMEOUT s"
	fi
	sleep 0.1
done
echo "started corosync $pid ($TRANSPORT, port $PORT) in $DIR"
exit 0
