# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the sheepfs tests (060-069).  Source after common.sh:
#
#   . "$(dirname "$0")/common.sh"
#   . "$FUNC_DIR/sheepfs.sh"
#
# Every mount, loop device and file system stacked on it is recorded in
# $T/.sheepfs-stack and torn down in reverse order at exit, before
# common.sh stops the sheep daemons (so nothing waits on a dead cluster).

SHEEPFS_BIN=${SHEEPFS_BIN:-$TOP/sheepfs/sheepfs}

# skip the test unless FUSE can be used here
sheepfs_require()
{
	[ -x "$SHEEPFS_BIN" ] || _fail "$SHEEPFS_BIN is not built"
	[ -c /dev/fuse ] || _skip "no /dev/fuse"
	command -v fusermount3 >/dev/null || _skip "fusermount3 is not installed"
}

_stack_push()
{
	echo "$1 $2" >>"$T/.sheepfs-stack"
}

# sheepfs_mount DIR [sheepfs options]: mount a daemonised sheepfs on DIR
# (logging to DIR.log, pid in DIR.pid)
sheepfs_mount()
{
	local dir=$1 rc
	shift
	mkdir -p "$dir"
	echo "$SHEEPFS_BIN $* --pidfile $dir.pid -l $dir.log $dir" \
		>>"$T/.commands"
	_stack_push fuse "$dir"
	timeout -k 5 60 "$SHEEPFS_BIN" "$@" --pidfile "$dir.pid" \
		-l "$dir.log" "$dir" </dev/null
	rc=$?
	[ $rc -eq 0 ] || return $rc
	cat "$dir.pid" >>"$T/.pids"
	mountpoint -q "$dir"
}

# pid of the sheepfs mounted on DIR
sheepfs_pid()
{
	cat "$1.pid" 2>/dev/null
}

_fuse_umount()
{
	local dir=$1 i
	for ((i = 0; i < 50; i++)); do
		mountpoint -q "$dir" || return 0
		fusermount3 -u "$dir" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# sheepfs_alive PID DIR: PID is the sheepfs of DIR (not a reused pid)
sheepfs_alive()
{
	_pid_alive "$1" &&
		tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF -- " $2"
}

# sheepfs_umount DIR: fusermount3 -u and wait until the daemon exited
sheepfs_umount()
{
	local dir=$1 pid end
	pid=$(sheepfs_pid "$dir")
	_fuse_umount "$dir" || return 1
	end=$((SECONDS + 30))
	while [ -n "$pid" ] && sheepfs_alive "$pid" "$dir"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.1
	done
}

# sheepfs_losetup FILE: attach FILE to a free loop device, print the device
sheepfs_losetup()
{
	local dev
	dev=$(losetup -f --show "$1") || return 1
	_stack_push loop "$dev"
	echo "$dev"
}

# sheepfs_mount_dev DEV DIR: mount a block device for this test
sheepfs_mount_dev()
{
	mkdir -p "$2"
	mount "$1" "$2" || return 1
	_stack_push mnt "$2"
}

_sheepfs_cleanup()
{
	local kind what
	[ -f "$T/.sheepfs-stack" ] || return 0
	tac "$T/.sheepfs-stack" | while read -r kind what; do
		case $kind in
		mnt)
			mountpoint -q "$what" &&
				{ umount "$what" 2>/dev/null || umount -l "$what"; }
			;;
		loop)
			losetup -d "$what" 2>/dev/null
			;;
		fuse)
			_fuse_umount "$what" || fusermount3 -uz "$what" 2>/dev/null
			;;
		esac
	done
	rm -f "$T/.sheepfs-stack"
}

_sheepfs_on_exit()
{
	local rc=$?
	_sheepfs_cleanup
	(exit $rc)
	_on_exit
}

trap _sheepfs_on_exit EXIT
