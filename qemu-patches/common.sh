# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers of build.sh (patched QEMU 7.2) and build-orig.sh (QEMU 5.2).
# Sourced, not run.

CACHE=${KELPIE_QEMU_CACHE:-/var/cache/kelpie-qemu}
JOBS=${KELPIE_QEMU_JOBS:-2}
# Debian packages a lean QEMU tools build needs (the Makefile passes its
# QEMU_DEB_PKGS; this default is the same list)
QEMU_DEB_PKGS=${QEMU_DEB_PKGS:-dpkg-dev build-essential pkg-config python3 \
meson ninja-build libglib2.0-dev zlib1g-dev patch xz-utils}

log()
{
	echo "[$(date +%H:%M:%S)] $*" >&2
}

die()
{
	echo "ERROR: $*" >&2
	exit 1
}

# exit 3 = the build is impossible here for an environmental reason
# (no network to Debian, not root, ...); the tests report SKIP for it
env_fail()
{
	echo "ENVIRONMENT: $*" >&2
	exit 3
}

install_deps()
{
	local p missing=""

	for p in $QEMU_DEB_PKGS; do
		dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	[ "$(id -u)" = 0 ] || env_fail "need root to install:$missing"
	log "installing:$missing"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing \
		>&2; then
		apt-get update -qq >&2 || env_fail "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing \
			>&2 || env_fail "cannot install:$missing"
	fi
}

# one build at a time per cache directory (tests may run concurrently)
take_lock()
{
	mkdir -p "$CACHE" || env_fail "cannot create $CACHE"
	exec 9>"$CACHE/.lock-$1"
	flock 9
}

# seconds since $1 as "Nm Ns"
elapsed()
{
	local s=$((SECONDS - $1))
	echo "$((s / 60))m $((s % 60))s"
}
