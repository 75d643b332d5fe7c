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

# run for every dog command of the emulated-host tests: two processes
# (awk and one umount), not a pipeline and an umount per mount
if ! [ /proc/self/ns/mnt -ef "/proc/$PPID/ns/mnt" ] &&
	[ -e /proc/self/ns/mnt ] && [ -e "/proc/$PPID/ns/mnt" ]; then
	tmp=${TMPDIR:-/tmp}
	tmp=${tmp%/}
	# mountinfo's 5th field below /tmp or $TMPDIR, longest (deepest) first
	mapfile -t found < <(awk -v a="/tmp/" -v b="$tmp/" '
		index($5, a) == 1 || index($5, b) == 1 { m[n++] = $5 }
		END {
			for (i = 1; i < n; i++)
				for (j = i; j > 0 && length(m[j]) > length(m[j - 1]); j--) {
					t = m[j]; m[j] = m[j - 1]; m[j - 1] = t
				}
			for (i = 0; i < n; i++)
				print m[i]
		}' /proc/self/mountinfo)
	todo=()
	for m in "${found[@]}"; do
		printf -v m '%b' "$m"	# octal escapes undone
		[ -n "$keep" ] && { [ "$m" = "$keep" ] ||
			[ "${m#"$keep"/}" != "$m" ]; } && continue
		todo+=("$m")
	done
	[ ${#todo[@]} -gt 0 ] && umount -l "${todo[@]}" 2>/dev/null
fi
exec "$@"
