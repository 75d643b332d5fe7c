#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the tools of Debian bullseye's QEMU 5.2 -- the last upstream QEMU
# with the original sheepdog driver, unmodified -- for wire-compatibility
# tests.  Bullseye's apt lists live in a private apt directory inside the
# cache (nothing is added to the system's sources), and its meson 0.56
# (QEMU 5.2 does not build with bookworm's meson 1.0) is unpacked there
# with dpkg -x.
#
# Usage: qemu-patches/build-orig.sh   -> prints the install directory
# (CACHE/orig-HASH, programs in its bin/) on stdout.  Cached: the build
# runs only when the recipe below changes.  Exit 3 = impossible here for
# an environmental reason.  Environment: KELPIE_QEMU_CACHE (default
# /var/cache/kelpie-qemu), KELPIE_QEMU_JOBS (default 2).

set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"

CONFIGURE_OPTS="--target-list= --disable-system --disable-user \
--disable-linux-user --disable-bsd-user --enable-tools --enable-sheepdog \
--disable-docs --disable-guest-agent --disable-werror --disable-debug-info \
--disable-gnutls --disable-nettle --disable-gcrypt --disable-auth-pam \
--disable-sdl --disable-gtk --disable-vte --disable-curses --disable-iconv \
--disable-vnc --disable-virtfs --disable-virtiofsd --disable-libudev \
--disable-mpath --disable-xen --disable-brlapi --disable-curl --disable-fdt \
--disable-kvm --disable-rdma --disable-pvrdma --disable-vde --disable-netmap \
--disable-linux-aio --disable-linux-io-uring --disable-cap-ng \
--disable-attr --disable-vhost-net --disable-vhost-vsock --disable-vhost-scsi \
--disable-vhost-crypto --disable-vhost-kernel --disable-vhost-user \
--disable-vhost-vdpa --disable-vhost-user-blk-server --disable-spice \
--disable-rbd --disable-libiscsi --disable-libnfs --disable-smartcard \
--disable-u2f --disable-libusb --disable-usb-redir --disable-lzo \
--disable-snappy --disable-bzip2 --disable-lzfse --disable-zstd \
--disable-seccomp --disable-glusterfs --disable-tpm --disable-libssh \
--disable-numa --disable-libxml2 --disable-replication --disable-opengl \
--disable-virglrenderer --disable-xfsctl --disable-capstone \
--disable-libpmem --disable-xkbcommon --disable-libdaxctl \
--disable-live-block-migration --disable-crypto-afalg"
TARGETS="qemu-img qemu-io qemu-nbd"
RECIPE="qemu/bullseye meson=0.56.2-1 $CONFIGURE_OPTS $TARGETS"
KEY=$(printf '%s' "$RECIPE" | sha256sum | cut -c1-16)
OUT=$CACHE/orig-$KEY

if [ -f "$OUT/.complete" ]; then
	echo "$OUT"
	exit 0
fi
take_lock orig
if [ -f "$OUT/.complete" ]; then
	echo "$OUT"
	exit 0
fi
start=$SECONDS
install_deps

# private apt state for bullseye (binary lists for meson, sources for qemu)
APT=$CACHE/apt-bullseye
mkdir -p "$APT/lists/partial" "$APT/archives/partial"
cat >"$APT/sources.list" <<EOS
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main
EOS
AOPT=(-o "Dir::Etc::SourceList=$APT/sources.list"
	-o "Dir::Etc::SourceParts=/dev/null" -o "Dir::State::Lists=$APT/lists"
	-o "Dir::Cache::Archives=$APT/archives" -o "Dir::Cache::pkgcache="
	-o "Dir::Cache::srcpkgcache=" -o "Debug::NoLocking=1")
log "apt-get update (private bullseye lists)"
apt-get "${AOPT[@]}" update -qq >&2 ||
	env_fail "cannot reach Debian bullseye (apt-get update failed)"

WORK=$CACHE/work-orig-$KEY
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# meson 0.56, unpacked, run from there
log "fetching bullseye's meson"
apt-get "${AOPT[@]}" download meson/bullseye >&2 ||
	env_fail "cannot download meson from bullseye"
dpkg -x meson_*.deb meson-root
cat >meson <<EOS
#!/bin/sh
PYTHONPATH=$OUT/meson-root/usr/lib/python3/dist-packages exec python3 $OUT/meson-root/usr/bin/meson "\$@"
EOS
chmod +x meson
mkdir -p "$OUT"
rm -rf "$OUT/meson-root"
cp -a meson-root "$OUT/meson-root"
cp meson "$OUT/meson"

log "fetching QEMU 5.2 source (apt-get source qemu/bullseye)"
apt-get "${AOPT[@]}" source --download-only qemu/bullseye >&2 ||
	env_fail "cannot download the qemu source package from bullseye"
dpkg-source -x qemu_*.dsc qemu-src >&2 || die "dpkg-source -x failed"
cd qemu-src
grep -q sheepdog block/meson.build || die "no sheepdog driver in this source"

log "configuring (tools only, optional features off)"
cstart=$SECONDS
mkdir -p build
cd build
nice -n 19 ../configure --prefix="$OUT" --meson="$OUT/meson" \
	$CONFIGURE_OPTS >configure.log 2>&1 ||
	{ tail -n 30 configure.log >&2; die "configure failed"; }
log "configured in $(elapsed $cstart); building $TARGETS with -j$JOBS"
bstart=$SECONDS
nice -n 19 ninja -j"$JOBS" $TARGETS >ninja.log 2>&1 ||
	{ tail -n 40 ninja.log >&2; die "build failed"; }
log "built in $(elapsed $bstart)"

mkdir -p "$OUT/bin"
for t in $TARGETS; do
	install -m 755 "$t" "$OUT/bin/$t"
done
help=$("$OUT/bin/qemu-img" --help 2>&1 || true)
grep -qw sheepdog <<<"$help" ||
	die "the built qemu-img has no sheepdog driver"
{
	echo "source: $(cd "$WORK" && ls qemu_*.dsc)"
	echo "total: $(elapsed $start) (configure+build: $(elapsed $cstart))"
} >"$OUT/build-info.txt"
cd /
rm -rf "$WORK"
touch "$OUT/.complete"
log "QEMU 5.2 tools in $OUT/bin ($(elapsed $start))"
echo "$OUT"
