# SPDX-License-Identifier: GPL-2.0-or-later
# The process checks of tests/zookeeper/start.sh and stop.sh, sourced by
# both once DIR is an absolute path.

ZK_MAIN=org.apache.zookeeper.server.ZooKeeperServerMain
# a member of an ensemble (KELPIE_ZK_MYID set at start)
ZK_QUORUM_MAIN=org.apache.zookeeper.server.quorum.QuorumPeerMain

# pid $1 runs (a zombie does not)
alive()
{
	[ -e "/proc/$1" ] &&
		! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# pid $1 is the java running the server of DIR
ours()
{
	alive "$1" &&
		tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null |
		grep -F -e "$ZK_MAIN" -e "$ZK_QUORUM_MAIN" |
		grep -qF -- "$DIR/zoo.cfg"
}
