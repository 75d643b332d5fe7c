# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the tests that boot a small VM (057, 115); source after
# common.sh.  The guest is Debian's kernel with a busybox initramfs built
# by the test, so nothing but Debian packages is fetched.
#
#   vm_assets                 fetch (once, cached in $VM_CACHE) Debian's
#                             kernel with its virtio modules and busybox;
#                             sets VM_KERNEL, VM_MODDIR, VM_BUSYBOX; skips
#                             the test when they cannot be had
#   vm_initramfs_root DIR     a fresh initramfs tree in DIR: busybox and the
#                             virtio modules; the test adds its own files
#   vm_initramfs DIR OUT      make DIR's /init from the guest script read
#                             on stdin and pack DIR into the gzipped cpio
#                             archive OUT
#
# The /init that vm_initramfs writes mounts /proc, /sys and /dev, loads
# the virtio modules, waits (at most 10 s) for /dev/vda, runs the guest
# script, then syncs and powers the VM off; boot the kernel with
# "console=ttyS0 rdinit=/init panic=-1" so that a panic ends the VM too.
# Lines the guest prints should start with "GUEST: " (vm_guest_lines
# picks them out of a console log).

VM_CACHE=${KELPIE_QEMU_CACHE:-/var/cache/kelpie-qemu}/vm

# the virtio modules, in the order they are loaded
VM_MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk"

# _vm_fetch: download and unpack the packages into $VM_CACHE/kernel
# unless done before; the caller holds the cache's lock
_vm_fetch()
{
	local kpkg
	[ -f "$VM_CACHE/kernel/.done" ] && return 0
	cd "$VM_CACHE" || return 1
	kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	[ -n "$kpkg" ] || return 1
	rm -rf kernel dl && mkdir -p kernel dl || return 1
	(cd dl && timeout 600 apt-get download "$kpkg" busybox-static >&2) ||
		return 1
	dpkg-deb --fsys-tarfile dl/linux-image-*.deb |
		tar -x -C kernel --wildcards './boot/vmlinuz-*' \
		'./lib/modules/*/kernel/drivers/virtio/*' \
		'./lib/modules/*/kernel/drivers/block/virtio_blk.ko*' ||
		return 1
	dpkg-deb --fsys-tarfile dl/busybox-static_*.deb |
		tar -x -C kernel ./bin/busybox || return 1
	rm -rf dl
	touch kernel/.done
}

vm_assets()
{
	mkdir -p "$VM_CACHE" ||
		_skip "cannot create the VM asset cache $VM_CACHE"
	# one test at a time fills the cache (in a subshell: it changes
	# directory, and the lock goes with it)
	(
		flock -w 900 9 || exit 1
		_vm_fetch
	) 9>"$VM_CACHE/.lock" ||
		_skip "cannot fetch Debian's kernel and busybox packages"
	VM_KERNEL=$(ls "$VM_CACHE"/kernel/boot/vmlinuz-* 2>/dev/null | head -n 1)
	VM_MODDIR=$(ls -d "$VM_CACHE"/kernel/lib/modules/* 2>/dev/null |
		head -n 1)/kernel/drivers
	VM_BUSYBOX=$VM_CACHE/kernel/bin/busybox
	[ -f "$VM_KERNEL" ] && [ -x "$VM_BUSYBOX" ] &&
		[ -f "$VM_MODDIR/block/virtio_blk.ko" ] ||
		_skip "incomplete kernel/busybox cache in $VM_CACHE"
}

vm_initramfs_root()
{
	local dir=$1 m
	rm -rf "$dir"
	mkdir -p "$dir"/{bin,dev,proc,sys,tmp,mod} || _fail "cannot create $dir"
	cp "$VM_BUSYBOX" "$dir/bin/busybox" || _fail "cannot copy busybox"
	for m in $VM_MODULES; do
		# some are built into the kernel, or absent in older ones
		cp "$VM_MODDIR/virtio/$m.ko" "$dir/mod/" 2>/dev/null
	done
	cp "$VM_MODDIR/block/virtio_blk.ko" "$dir/mod/" ||
		_fail "cannot copy virtio_blk.ko"
}

vm_initramfs()
{
	local dir=$1 out=$2
	{
		cat <<EOS
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $VM_MODULES; do
	[ -f /mod/\$m.ko ] && insmod /mod/\$m.ko
done
i=0
while [ ! -b /dev/vda ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done
# ---- the test's guest script
EOS
		cat
		cat <<'EOS'
# ---- end of the guest script
sync
poweroff -f
EOS
	} >"$dir/init" || _fail "cannot write $dir/init"
	chmod +x "$dir/init"
	(cd "$dir" && find . | "$VM_BUSYBOX" cpio -o -H newc 2>/dev/null |
		gzip -1) >"$out" || _fail "cannot build the initramfs"
}

# vm_guest_lines LOG: the guest's "GUEST: " lines of a console log
vm_guest_lines()
{
	tr -d '\r' <"$1" | grep -a -o 'GUEST:.*'
}
