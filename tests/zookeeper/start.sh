#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Start a private standalone ZooKeeper for Kelpie's tests:
#
#   tests/zookeeper/start.sh DIR [PORT]
#
# Everything of the server lives in DIR: its config DIR/zoo.cfg (made from
# conf.in), its data in DIR/data, its log (stdout, stderr and log4j output,
# appended on every start) in DIR/zk.log, its pid in DIR/zk.pid and its
# client port in DIR/port.  It listens on 127.0.0.1 only, never touches
# /etc/zookeeper or /var/lib/zookeeper, and runs the Debian package's jars
# with java directly (class ZooKeeperServerMain), in a session of its own
# (setsid), so that it outlives the calling shell.
#
# Without PORT, the port of an earlier start in DIR (DIR/port) is used
# again, else the first free one from KELPIE_ZK_PORT_BASE (default 21810)
# upward.  The port is also reserved in PORT_LOCK_DIR like the test ports of
# tests/functional/common.sh (owner: the JVM; between stop.sh --keep/--kill
# and the restart: the caller of stop.sh), so that no test picks it while
# the server is down for a restart.  A restart (start.sh DIR PORT after
# stop.sh DIR --keep or --kill) reuses DIR/data: znodes and sessions are kept.
#
# start.sh waits until the server answers "ruok" with "imok" and "srvr"
# says it serves, then prints the port as the last line of stdout.
# Stop it with tests/zookeeper/stop.sh DIR.
#
# Exit status: 0 up (also when DIR's server was running already), 77
# ZooKeeper cannot run here (no java, no zookeeper jar: the caller should
# skip), 1 any other failure (the tail of DIR/zk.log is printed).
#
# Environment: KELPIE_ZK_TIMEOUT (seconds to wait, default 30),
# KELPIE_ZK_PORT_BASE (default 21810), KELPIE_ZK_JARDIR (default
# /usr/share/java), KELPIE_ZK_HEAP (-Xmx, default 256m), KELPIE_ZK_JVMFLAGS
# (more JVM options), KELPIE_ZK_CONF_EXTRA (lines appended to zoo.cfg),
# JAVA (the java binary; else $JAVA_HOME/bin/java, else java in PATH).
#
# A member of an ensemble: KELPIE_ZK_MYID=N (its id, written to
# DIR/data/myid) and KELPIE_ZK_CONF_EXTRA with the "server.N=..." lines and
# a clientPortAddress that the other hosts reach (the last one of zoo.cfg
# wins).  It runs QuorumPeerMain, and "serving" is then being the leader or
# a follower, so the members of an ensemble must be started side by side:
# none of them serves before a quorum does.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-}
PORT=${2:-}
TIMEOUT=${KELPIE_ZK_TIMEOUT:-30}
PORT_BASE=${KELPIE_ZK_PORT_BASE:-21810}
JARDIR=${KELPIE_ZK_JARDIR:-/usr/share/java}
HEAP=${KELPIE_ZK_HEAP:-256m}
LOCKS=${PORT_LOCK_DIR:-/tmp/kelpie-test-ports}

if [ -z "$DIR" ] || [ $# -gt 2 ] ||
	{ [ -n "$PORT" ] && ! [[ $PORT =~ ^[0-9]+$ ]]; }; then
	echo "usage: $0 DIR [PORT]" >&2
	exit 1
fi

skip()
{
	echo "zookeeper unavailable: $*" >&2
	exit 77
}

die()
{
	echo "zookeeper: $*" >&2
	exit 1
}

# die, showing the end of the server's log (a failed start: the port
# reservation is released)
die_log()
{
	echo "zookeeper: $*" >&2
	if [ -n "${PORT:-}" ] &&
		[ "$(cat "$LOCKS/$PORT/owner" 2>/dev/null)" = $$ ]; then
		rm -rf "${LOCKS:?}/$PORT"
	fi
	if [ -s "$DIR/zk.log" ]; then
		echo "--- last lines of $DIR/zk.log:" >&2
		tail -n 20 "$DIR/zk.log" >&2
	fi
	exit 1
}

# ---- can ZooKeeper run here at all?
if [ -n "${JAVA:-}" ]; then
	:
elif [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
	JAVA=$JAVA_HOME/bin/java
else
	JAVA=$(command -v java) || skip "no java (apt-get install zookeeper)"
fi
[ -x "$JAVA" ] || skip "no java binary $JAVA"
[ -f "$JARDIR/zookeeper.jar" ] ||
	skip "no $JARDIR/zookeeper.jar (apt-get install zookeeper)"
[ -f "$JARDIR/zookeeper-jute.jar" ] ||
	skip "no $JARDIR/zookeeper-jute.jar (incomplete zookeeper install)"
[ -f "$JARDIR/slf4j-api.jar" ] ||
	skip "no $JARDIR/slf4j-api.jar (incomplete zookeeper install)"

# zookeeper.jar names its dependencies in its manifest (Class-Path); the
# logging back end is not among them: log4j 1.2 through slf4j, if present
# (without it slf4j logs nothing, which only costs the log)
CP=$JARDIR/zookeeper.jar
for j in slf4j-log4j12.jar log4j-1.2.jar; do
	[ -f "$JARDIR/$j" ] && CP=$CP:$JARDIR/$j
done

mkdir -p "$DIR" || exit 1
DIR=$(cd "$DIR" && pwd)
CONF=$DIR/zoo.cfg

# ---- helpers

. "$HERE/proc.sh"
MODES=standalone
if [ -n "${KELPIE_ZK_MYID:-}" ]; then
	[[ $KELPIE_ZK_MYID =~ ^[0-9]+$ ]] ||
		die "KELPIE_ZK_MYID=$KELPIE_ZK_MYID: give a number"
	ZK_MAIN=$ZK_QUORUM_MAIN
	MODES='leader|follower'
fi

# something listens on TCP port $1 (any address, IPv4 or IPv6)
listening()
{
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && $4 == "0A" &&
		substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# any socket at all is bound to port $1 (also connections, TIME_WAIT)
bound()
{
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p { f = 1 }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# send 4-letter word $2 to port $1, print the answer
fourlw()
{
	# shellcheck disable=SC2016 # expanded by the inner bash
	timeout 3 bash -c '
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf %s "$2" >&3
		cat <&3' sh "$1" "$2" 2>/dev/null
}

# the server on port $1 is up and serving
serving()
{
	[ "$(fourlw "$1" ruok)" = imok ] &&
		fourlw "$1" srvr | grep -Eq "^Mode: ($MODES)"
}

# reserve port $1 for pid $2 in the lock dir of tests/functional/common.sh
# (an atomic mkdir; a reservation whose owner is dead is taken over)
reserve()
{
	local d=$LOCKS/$1 owner
	mkdir -p "$LOCKS" 2>/dev/null
	if ! mkdir "$d" 2>/dev/null; then
		owner=$(cat "$d/owner" 2>/dev/null)
		# DIR's own reservation (left by stop.sh --keep/--kill) is ours
		if [ "$(cat "$d/zookeeper" 2>/dev/null)" = "$DIR" ]; then
			echo "$2" >"$d/owner"
			return 0
		fi
		if [ -n "$owner" ] && alive "$owner"; then
			return 1
		fi
		[ -n "$owner" ] || [ -z "$(find "$d" -maxdepth 0 -mmin -1)" ] ||
			return 1
		rm -rf "$d" && mkdir "$d" 2>/dev/null || return 1
	fi
	echo "$2" >"$d/owner"
	echo "$DIR" >"$d/zookeeper"
}

# ---- already running?
pid=$(cat "$DIR/zk.pid" 2>/dev/null)
if [ -n "$pid" ] && ours "$pid"; then
	old=$(cat "$DIR/port" 2>/dev/null)
	if [ -n "$PORT" ] && [ "$PORT" != "$old" ]; then
		die "already running in $DIR (pid $pid) on port $old, not $PORT"
	fi
	end=$((SECONDS + TIMEOUT))
	until serving "$old"; do
		[ $SECONDS -ge $end ] &&
			die_log "pid $pid runs in $DIR but port $old does not answer"
		sleep 0.2
	done
	echo "zookeeper already running: pid $pid, port $old" >&2
	echo "$old"
	exit 0
fi
rm -f "$DIR/zk.pid"

# ---- the port
auto=0
if [ -z "$PORT" ] && [ -s "$DIR/port" ]; then
	PORT=$(cat "$DIR/port")
fi
if [ -z "$PORT" ]; then
	auto=1
	PORT=$PORT_BASE
fi

# next free port from $PORT upward (none bound and not reserved)
pick_port()
{
	local last=$((PORT + 200))
	while [ "$PORT" -lt "$last" ] && [ "$PORT" -lt 65536 ]; do
		if ! bound "$PORT" && reserve "$PORT" $$; then
			return 0
		fi
		PORT=$((PORT + 1))
	done
	die "no free port in $PORT_BASE..$last"
}

if [ $auto = 1 ]; then
	pick_port
else
	# a restart on the same port: connections of the old server may still
	# be in TIME_WAIT, which ZooKeeper's SO_REUSEADDR ignores
	listening "$PORT" && die "something already listens on port $PORT"
	reserve "$PORT" $$ ||
		echo "zookeeper: port $PORT is reserved by somebody else" >&2
fi

# ---- start (a few tries when the chosen port was taken meanwhile)
mkdir -p "$DIR/data" || exit 1
if [ -n "${KELPIE_ZK_MYID:-}" ]; then
	echo "$KELPIE_ZK_MYID" >"$DIR/data/myid" || exit 1
fi
if [ -d "$DIR/data/version-2" ]; then
	what="restarted (existing data)"
else
	what=started
fi
t0=$(date +%s%N)
for _ in 1 2 3 4 5; do
	sed -e "s|@DIR@|$DIR|g" -e "s|@PORT@|$PORT|g" "$HERE/conf.in" \
		>"$CONF" || exit 1
	if [ -n "${KELPIE_ZK_CONF_EXTRA:-}" ]; then
		printf '%s\n' "$KELPIE_ZK_CONF_EXTRA" >>"$CONF"
	fi
	cat >"$DIR/log4j.properties" <<-EOF
		log4j.rootLogger=INFO, CONSOLE
		log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
		log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
		log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
	EOF
	echo "$PORT" >"$DIR/port"
	printf '==== %s: %s on port %s\n' "$(date '+%F %T')" "$what" "$PORT" \
		>>"$DIR/zk.log"
	log_start=$(wc -l <"$DIR/zk.log")

	# the inner shell writes its pid and then becomes java (exec), so the
	# pid file names the JVM itself whether setsid forks or not.  The JVM
	# is kept small: serial GC, C1 only, no perf data file in /tmp.
	# shellcheck disable=SC2016,SC2086 # $1/$@: inner sh; JVMFLAGS: a list
	setsid sh -c 'echo $$ >"$1/zk.pid" && cd "$1" && shift && exec "$@"' \
		sh "$DIR" \
		"$JAVA" -Xmx"$HEAP" -Xms16m -Xss512k -XX:+UseSerialGC \
		-XX:TieredStopAtLevel=1 -XX:-UsePerfData \
		-XX:ErrorFile="$DIR/hs_err_%p.log" \
		-Djava.awt.headless=true -Djava.net.preferIPv4Stack=true \
		-Dlog4j.configuration="file:$DIR/log4j.properties" \
		-Dzookeeper.log.dir="$DIR" -Dzookeeper.jmx.log4j.disable=true \
		${KELPIE_ZK_JVMFLAGS:-} \
		-cp "$CP" "$ZK_MAIN" "$CONF" \
		</dev/null >>"$DIR/zk.log" 2>&1 &

	end=$((SECONDS + TIMEOUT))
	pid=
	retry=0
	while :; do
		[ -z "$pid" ] && pid=$(cat "$DIR/zk.pid" 2>/dev/null)
		if [ -n "$pid" ] && ! alive "$pid"; then
			if [ $auto = 1 ] &&
				tail -n +"$log_start" "$DIR/zk.log" |
				grep -q 'Address already in use'; then
				retry=1
				break
			fi
			rm -f "$DIR/zk.pid"
			die_log "java exited during start-up"
		fi
		if [ -n "$pid" ] && serving "$PORT"; then
			break
		fi
		if [ $SECONDS -ge $end ]; then
			sleep 0.2	# the pid file may be on its way
			[ -z "$pid" ] && pid=$(cat "$DIR/zk.pid" 2>/dev/null)
			if [ -n "$pid" ] && ours "$pid"; then
				kill -KILL "$pid"
				for _ in $(seq 50); do
					alive "$pid" || break
					sleep 0.1
				done
			fi
			rm -f "$DIR/zk.pid"
			die_log "no answer on port $PORT within $TIMEOUT s"
		fi
		sleep 0.2
	done
	[ $retry = 0 ] && break
	# somebody took the port between our check and the bind: next one
	rm -rf "${LOCKS:?}/$PORT"
	rm -f "$DIR/zk.pid"
	PORT=$((PORT + 1))
	pick_port
done
[ "$retry" = 0 ] || die_log "could not bind a port"

# the JVM owns the reservation from now on
if [ "$(cat "$LOCKS/$PORT/zookeeper" 2>/dev/null)" = "$DIR" ]; then
	echo "$pid" >"$LOCKS/$PORT/owner"
fi
echo "zookeeper $what: pid $pid, 127.0.0.1:$PORT, dir $DIR" \
	"($(( ($(date +%s%N) - t0) / 1000000 )) ms)" >&2
echo "$PORT"
exit 0
