#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run a long-lived daemon in a mount namespace of its own without pinning
# other tests' file systems:
#
#   own-mounts.sh [--keep DIR] COMMAND [ARGS...]
#
# A new mount namespace (ip netns exec, unshare -m) starts with a copy of
# every mount there is, and a root mount that is private sees no unmount
# of the others: a daemon started in one (corosync, a sheep in a network
# namespace) kept another test's loop, tmpfs or FUSE file system alive
# after that test unmounted it, so that its superblock stayed, and a test
# that shut an XFS down and mounted it again got the old, shut-down one
# (EIO).  Run inside the new namespace, this lazily unmounts the copies of
# every mount below /tmp and $TMPDIR (but DIR and what is below it), then
# execs COMMAND.  Only when its mount namespace is not its parent's (the
# caller ran it through unshare -m or ip netns exec, which exec it in the
# process that made the namespace); otherwise it unmounts nothing.

set -u
keep=
if [ "${1:-}" = --keep ]; then
	keep=${2%/}
	shift 2
fi
[ $# -gt 0 ] || { echo "usage: $0 [--keep DIR] COMMAND..." >&2; exit 2; }

self_ns=$(readlink /proc/self/ns/mnt 2>/dev/null)
parent_ns=$(readlink "/proc/$PPID/ns/mnt" 2>/dev/null)
if [ -n "$self_ns" ] && [ -n "$parent_ns" ] && [ "$self_ns" != "$parent_ns" ]
then
	tmp=${TMPDIR:-/tmp}
	tmp=${tmp%/}
	# mountinfo's 5th field, octal escapes undone; deepest first
	awk '{ print $5 }' /proc/self/mountinfo |
		while IFS= read -r m; do printf '%b\n' "$m"; done |
		awk -v a="/tmp/" -v b="$tmp/" -v k="$keep" '
			(index($0, a) == 1 || index($0, b) == 1) &&
			(k == "" || (index($0, k "/") != 1 && $0 != k)) {
				print length($0) "\t" $0 }' |
		sort -rn | cut -f2- | while IFS= read -r m; do
			umount -l "$m" 2>/dev/null
		done
fi
exec "$@"
