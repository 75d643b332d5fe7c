# SPDX-License-Identifier: GPL-2.0-or-later
# Stores on lazyfs (tests/tools/lazyfs.c), for the tests that sourced
# common.sh: a FUSE pass-through that forgets unsynced writes on "crash"
# and can slow fsync down ("fsync delay").  Skips the test without FUSE.

command -v fusermount3 >/dev/null || _skip "fusermount3 is not installed"
[ -c /dev/fuse ] || _skip "no /dev/fuse"
pkg-config --exists fuse3 || _skip "libfuse3-dev is not installed"

LAZYFS=$T/lazyfs
# shellcheck disable=SC2046
cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$LAZYFS" \
	"$TOP/tests/tools/lazyfs.c" $(pkg-config --cflags --libs fuse3) \
	>"$T/lazyfs.build" 2>&1 ||
	_fail "cannot build lazyfs: $(head -n 5 "$T/lazyfs.build")"

# lazy_mount IDX: mount lazyfs over $T/IDX (unmounted at exit by
# _umount_all, after the daemons are killed; lazyfs then exits)
lazy_mount()
{
	local d=$T/$1
	mkdir -p "$d" "$T/log$1"
	setsid "$LAZYFS" -f "$d" "$d" </dev/null >>"$T/lazyfs.$1.log" 2>&1 &
	_retry 10 mountpoint -q "$d" || _fail "lazyfs on $d did not mount"
	echo "$d" >>"$T/.mounts"
}

# ctl IDX COMMAND: send a command to node IDX's lazyfs
ctl()
{
	echo "$2" >"$T/$1/.lazyfs-ctl" || _fail "lazyfs $1: '$2' refused"
}
