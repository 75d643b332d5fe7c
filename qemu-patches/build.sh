#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build Debian bookworm's QEMU 7.2 tools (qemu-img, qemu-io, qemu-nbd,
# qemu-storage-daemon) with Kelpie's sheepdog block driver, from the
# Debian source package plus the patch series in this directory.
#
# Usage: qemu-patches/build.sh   -> prints the install directory
# (CACHE/HASH, programs in its bin/) on stdout.  HASH is taken over the
# patch series and the build recipe, so a rebuild happens only when they
# change.  Exit 3 = impossible here for an environmental reason.
# Environment: KELPIE_QEMU_CACHE (default /var/cache/kelpie-qemu),
# KELPIE_QEMU_JOBS (default 2).

set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"

CONFIGURE_OPTS="--target-list= --disable-system --disable-user \
--enable-tools --without-default-features --enable-vhost-user \
--enable-vhost-user-blk-server --disable-docs --disable-werror \
--disable-debug-info"
TARGETS="qemu-img qemu-io qemu-nbd storage-daemon/qemu-storage-daemon"
shopt -s nullglob
PATCHES=("$HERE"/[0-9][0-9][0-9][0-9]-*.patch)
shopt -u nullglob
[ ${#PATCHES[@]} -gt 0 ] || die "no patches in $HERE"
KEY=$({ cat "${PATCHES[@]}"; printf '%s\n' "$CONFIGURE_OPTS" "$TARGETS"; } |
	sha256sum | cut -c1-16)
OUT=$CACHE/$KEY

if [ -f "$OUT/.complete" ]; then
	echo "$OUT"
	exit 0
fi
take_lock patched
if [ -f "$OUT/.complete" ]; then
	echo "$OUT"
	exit 0
fi
start=$SECONDS
install_deps

# a deb-src entry for bookworm, if apt has none yet
have_src()
{
	local v
	v=$(apt-cache showsrc qemu 2>/dev/null || true)
	grep -q '^Version: 1:7\.2' <<<"$v"
}
if ! have_src; then
	[ "$(id -u)" = 0 ] || env_fail "need root to add a deb-src entry"
	if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ &&
		! grep -qs '^deb-src .* bookworm' /etc/apt/sources.list; then
		log "adding a deb-src entry for bookworm"
		cat >/etc/apt/sources.list.d/kelpie-deb-src.sources <<EOS
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
	fi
	log "apt-get update"
	apt-get update -qq >&2 || env_fail "apt-get update failed"
	have_src || env_fail "no QEMU 7.2 source package available from apt"
fi

WORK=$CACHE/work-$KEY
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
log "fetching QEMU 7.2 source (apt-get source qemu)"
apt-get source --download-only qemu >&2 ||
	env_fail "cannot download the qemu source package"
dpkg-source -x qemu_7.2*.dsc qemu-src >&2 || die "dpkg-source -x failed"
cd qemu-src
grep -q '^7\.2' VERSION || die "unexpected QEMU version $(cat VERSION)"
for p in "${PATCHES[@]}"; do
	log "applying $(basename "$p")"
	patch -p1 --batch --forward <"$p" >&2 || die "$(basename "$p") does not apply"
done

log "configuring (tools only, optional features off)"
cstart=$SECONDS
mkdir -p build
cd build
nice -n 19 ../configure --prefix="$OUT" $CONFIGURE_OPTS >configure.log 2>&1 ||
	{ tail -n 30 configure.log >&2; die "configure failed"; }
log "configured in $(elapsed $cstart); building with -j$JOBS"
bstart=$SECONDS
nice -n 19 ninja -j"$JOBS" $TARGETS >ninja.log 2>&1 ||
	{ tail -n 40 ninja.log >&2; die "build failed"; }
log "built in $(elapsed $bstart)"

mkdir -p "$OUT/bin"
for t in $TARGETS; do
	install -m 755 "$t" "$OUT/bin/$(basename "$t")"
done
help=$("$OUT/bin/qemu-img" --help 2>&1 || true)
grep -qw sheepdog <<<"$help" ||
	die "the built qemu-img has no sheepdog driver"
{
	echo "source: $(cd "$WORK" && ls qemu_*.dsc)"
	echo "patches: $(for p in "${PATCHES[@]}"; do basename "$p"; done | tr '\n' ' ')"
	echo "total: $(elapsed $start) (configure+build: $(elapsed $cstart))"
} >"$OUT/build-info.txt"
cd /
rm -rf "$WORK"
touch "$OUT/.complete"
log "patched QEMU 7.2 tools in $OUT/bin ($(elapsed $start))"
echo "$OUT"
