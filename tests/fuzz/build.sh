#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build every libFuzzer harness of tests/fuzz/ into build/fuzz/ with clang
# (-fsanitize=fuzzer,address,undefined).  Objects are kept in
# build/fuzz/obj/ and rebuilt when their source or a header they include
# changed.  A harness that does not build is reported and left out (its
# old binary removed); run.sh counts it as failed.
#
#   bash tests/fuzz/build.sh [HARNESS...]     (default: all of them)
#
# Exits 0 if everything built, 1 if a harness failed to build, and 77 if
# clang or libFuzzer is not available.

set -u
cd "$(dirname "$0")/../.." || exit 1

CC=${FUZZ_CC:-clang}
OUT=build/fuzz
OBJ=$OUT/obj
ALL="request nbd proto backup cluster_msg dog_reply snapshot procgroup zk_event btree http kvtree"

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
CFLAGS="-g -O1 -fno-omit-frame-pointer $SAN -std=gnu11 -D_GNU_SOURCE \
-I. -Iinclude -Isheep -Wall -Wextra -Werror -Wno-unused-parameter \
-fno-strict-aliasing"
PKG_CFLAGS=$(pkg-config --cflags liburcu libcrypto libisal 2>/dev/null)
PKG_LIBS=$(pkg-config --libs liburcu libcrypto libisal 2>/dev/null)
LIBS="$PKG_LIBS -lpthread -lm"

need_toolchain()
{
	local t

	if ! command -v "$CC" >/dev/null 2>&1; then
		echo "fuzz: $CC not found (apt-get install clang)"
		exit 77
	fi
	t=$(mktemp -d "${TMPDIR:-/tmp}/kelpie-fuzzcheck.XXXXXX") || exit 1
	printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)' \
		'{ return d && n > 1000000; }' >"$t/t.c"
	if ! "$CC" -fsanitize=fuzzer,address,undefined "$t/t.c" -o "$t/t" \
		>"$t/log" 2>&1; then
		echo "fuzz: $CC cannot build libFuzzer harnesses (Debian: apt-get install libclang-rt-dev):"
		sed 's/^/  /' "$t/log" | head -n 5
		rm -rf "$t"
		exit 77
	fi
	rm -rf "$t"
}

# stale OBJECT DEPFILE: the object is missing or older than a dependency
stale()
{
	local d

	[ -f "$1" ] && [ -f "$2" ] || return 0
	for d in $(sed -e 's/\\$//' -e 's/^[^:]*://' "$2"); do
		[ "$d" -nt "$1" ] && return 0
	done
	return 1
}

# obj SOURCE [EXTRA CFLAGS...]: compile into $OBJ, print the object path
obj()
{
	local src=$1 o d

	shift
	o=$OBJ/${src%.c}.o
	d=${o%.o}.d
	if stale "$o" "$d"; then
		mkdir -p "$(dirname "$o")"
		$CC $CFLAGS -fsanitize=fuzzer-no-link $PKG_CFLAGS "$@" \
			-MMD -MP -MF "$d" -c "$src" -o "$o" >&2 || return 1
	fi
	echo "$o"
}

# the sources of each harness (its own file comes first)
srcs_proto() { echo tests/fuzz/fuzz_proto.c lib/proto.c; }
srcs_btree() { echo tests/fuzz/fuzz_btree.c lib/btree.c lib/proto.c; }
srcs_http() { echo tests/fuzz/fuzz_http.c lib/http.c lib/sigv4.c lib/sigv2.c lib/s3req.c; }
# lib/kvtree.c is built inside the harness, with small pages
srcs_kvtree() { echo tests/fuzz/fuzz_kvtree.c lib/util.c lib/log.c lib/assert.c; }
srcs_request()
{
	echo tests/fuzz/fuzz_request.c tests/fuzz/stub_sheep.c \
		lib/proto.c lib/util.c lib/log.c lib/assert.c lib/hash.c lib/net.c \
		sheep/ops/ops.c sheep/ops/obj_list.c sheep/ops/validate.c \
		sheep/state/vdi.c \
		sheep/state/cluster.c
}
srcs_nbd()
{
	echo tests/fuzz/fuzz_nbd.c tests/fuzz/stub_sheep.c \
		sheep/front/nbd.c sheep/front/slots.c \
		sheep/net/stall.c sheep/core/request.c lib/hash.c \
		lib/proto.c lib/util.c lib/log.c lib/assert.c lib/net.c
}
# dog's sources and what they need of lib/ (the harnesses that run dog)
dog_srcs()
{
	echo lib/proto.c lib/util.c lib/log.c lib/assert.c lib/hash.c \
		lib/net.c lib/btree.c lib/vindex.c lib/kvtree.c lib/s3names.c \
		lib/ec.c $(ls dog/*.c)
}
srcs_backup() { echo tests/fuzz/fuzz_backup.c $(dog_srcs); }
srcs_dog_reply() { echo tests/fuzz/fuzz_dog_reply.c $(dog_srcs); }
srcs_snapshot() { echo tests/fuzz/fuzz_snapshot.c $(dog_srcs); }
srcs_cluster_msg()
{
	echo tests/fuzz/fuzz_cluster_msg.c tests/fuzz/stub_sheep.c \
		lib/proto.c lib/util.c lib/log.c lib/assert.c lib/hash.c lib/net.c \
		sheep/group/group.c sheep/group/epoch_fetch.c sheep/group/vnodes.c \
		sheep/ops/ops.c \
		sheep/ops/obj_list.c \
		sheep/ops/validate.c \
		sheep/state/cluster.c sheep/state/vdi.c
}

srcs_procgroup()
{
	echo tests/fuzz/fuzz_procgroup.c lib/proto.c lib/util.c lib/log.c lib/assert.c \
		lib/event.c lib/hash.c
}

srcs_zk_event()
{
	echo tests/fuzz/fuzz_zk_event.c lib/proto.c lib/util.c lib/log.c lib/assert.c \
		lib/event.c lib/hash.c
}

# extra link options of a harness
ldflags_backup()
{
	local f

	for f in lookup_vdi read_inode_header read_inode_index \
		set_index_entry dog_write_object dog_exec send recv \
		net_connect net_connect_addr; do
		printf -- '-Wl,--wrap=%s ' "$f"
	done
}
ldflags_dog_reply()
{
	printf -- '-Wl,--wrap=%s ' send recv net_connect net_connect_addr \
		ring_build
}

ldflags_snapshot()
{
	printf -- '-Wl,--wrap=%s ' send recv net_connect net_connect_addr
}

ldflags_zk_event()
{
	printf -- '-Wl,--wrap=%s ' zoo_get zoo_get_children \
		zoo_wget_children deallocate_String_vector
	printf -- '-lzookeeper_mt '
}

build_one()
{
	local h=$1 objs="" s o extra

	for s in $(srcs_"$h"); do
		extra=
		# the project's own build is gcc -Werror; clang's extra
		# warnings in its sources are shown but do not stop us
		case $s in
		tests/fuzz/*) ;;
		*) extra="-Wno-error -Wno-missing-field-initializers" ;;
		esac
		# dog's main() would clash with libFuzzer's
		[ "$s" = dog/dog.c ] && extra="$extra -Dmain=dog_main"
		o=$(obj "$s" $extra) || return 1
		objs="$objs $o"
	done
	$CC $CFLAGS -fsanitize=fuzzer $objs -o "$OUT/fuzz_$h" \
		$(declare -F ldflags_"$h" >/dev/null && ldflags_"$h") $LIBS
}

need_toolchain
mkdir -p "$OBJ"
failed=0
for h in ${@:-$ALL}; do
	if ! declare -F srcs_"$h" >/dev/null; then
		echo "fuzz: unknown harness $h"
		failed=1
		continue
	fi
	if build_one "$h"; then
		echo "built $OUT/fuzz_$h"
	else
		echo "FAILED to build fuzz_$h"
		rm -f "$OUT/fuzz_$h"
		failed=1
	fi
done
exit $failed
