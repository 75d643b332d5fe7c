# SPDX-License-Identifier: GPL-2.0-or-later
# Kelpie: one GNU make build for everything (design.md §1).

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc

DEB_PKGS := build-essential pkg-config liburcu-dev libcmocka-dev libssl-dev \
	libcpg-dev libquorum-dev corosync zookeeper libzookeeper-mt-dev \
	e2fsprogs xfsprogs util-linux procps psmisc bc libfuse3-dev fuse3 \
	qemu-utils qemu-system-x86 fio python3 iproute2 nftables clang \
	libclang-rt-dev libisal-dev logrotate libibverbs-dev librdmacm-dev \
	curl man-db tgt libiscsi-bin python3-botocore python3-boto3 iptables \
	libnetfilter-queue-dev awscli s3cmd rclone python3-swiftclient \
	libcurl4-openssl-dev

# Debian packages only the QEMU builds need (qemu-patches/build*.sh, the
# qemu target); not part of DEB_PKGS
QEMU_DEB_PKGS := dpkg-dev build-essential pkg-config python3 meson \
	ninja-build libglib2.0-dev zlib1g-dev patch xz-utils

PKGS := liburcu libcrypto libcpg libquorum libisal
# sheep's RDMA transport (sheep/net/rdma_*.c): linked into sheep and the
# unit tests only
RDMA_PKGS := libibverbs librdmacm
RDMA_LIBS = $(shell pkg-config --libs $(RDMA_PKGS) 2>/dev/null || \
	echo -libverbs -lrdmacm)
WARN := -Wall -Wextra -Werror -Wno-unused-parameter
BASE_CFLAGS := -std=gnu11 -g -D_GNU_SOURCE -Iinclude -Isheep $(WARN) \
	-fno-strict-aliasing
CFLAGS ?= -O2
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) $(RDMA_PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# sheepfs alone links libfuse3
FUSE_PKGS := fuse3
FUSE_CFLAGS = $(shell pkg-config --cflags $(FUSE_PKGS) 2>/dev/null)
FUSE_LIBS = $(shell pkg-config --libs $(FUSE_PKGS) 2>/dev/null)
# libzookeeper-mt has no pkg-config file
LDLIBS := -lzookeeper_mt -lpthread -lm

SAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined

LIB_SRCS := $(wildcard lib/*.c)
SHEEP_SRCS := $(wildcard sheep/*.c sheep/*/*.c)
DOG_SRCS := $(wildcard dog/*.c)
SHEEPFS_SRCS := $(wildcard sheepfs/*.c)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)

LIB_OBJS := $(LIB_SRCS:%.c=build/%.o)
SHEEP_OBJS := $(SHEEP_SRCS:%.c=build/%.o)
DOG_OBJS := $(DOG_SRCS:%.c=build/%.o)
SHEEPFS_OBJS := $(SHEEPFS_SRCS:%.c=build/%.o)
SAN_LIB_OBJS := $(LIB_SRCS:%.c=build/san/%.o)
# unit tests may exercise sheep modules too (everything but main)
SAN_SHEEP_OBJS := $(filter-out build/san/sheep/sheep.o,$(SHEEP_SRCS:%.c=build/san/%.o))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=build/tests/%)
# the placement simulator (tests/sim/, doc/scale.md): optimised, since
# its long runs place millions of objects; tests/unit/ringsim.sh checks it
SIM_SRCS := $(wildcard tests/sim/*.c)
SIM_BIN := build/ringsim

.PHONY: all deps check unit functional demo bench install clean qemu qemu-orig
.SECONDARY:
all: deps-quiet sheep/sheep dog/dog $(if $(SHEEPFS_SRCS),sheepfs/sheepfs)

build/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

build/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

build/libkelpie.a: $(LIB_OBJS)
	ar rcs $@ $^

sheep/sheep: $(SHEEP_OBJS) build/libkelpie.a
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS) $(RDMA_LIBS) $(LDLIBS)

dog/dog: $(DOG_OBJS) build/libkelpie.a
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

$(SHEEPFS_OBJS): PKG_CFLAGS += $(FUSE_CFLAGS)

sheepfs/sheepfs: $(SHEEPFS_OBJS) build/libkelpie.a
	$(CC) $(CFLAGS) -o $@ $^ $(FUSE_LIBS) $(PKG_LIBS) $(LDLIBS)

build/san/libkelpie.a: $(SAN_LIB_OBJS)
	ar rcs $@ $^

build/san/libsheep.a: $(SAN_SHEEP_OBJS)
	ar rcs $@ $^

# archives, so a test pulls in only the modules it uses
build/tests/%: tests/unit/%.c build/san/libsheep.a build/san/libkelpie.a
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -Itests/unit \
		-o $@ $< -Wl,--start-group build/san/libsheep.a \
		build/san/libkelpie.a -Wl,--end-group $(PKG_LIBS) -lcmocka \
		$(RDMA_LIBS) $(LDLIBS)

$(SIM_BIN): $(SIM_SRCS:%.c=build/%.o) build/libkelpie.a
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

-include $(shell find build -name '*.d' 2>/dev/null)

# Install the Debian packages the build and the tests need (idempotent).
deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

deps-quiet:
	@pkg-config --exists $(PKGS) $(FUSE_PKGS) $(RDMA_PKGS) && \
		[ -f /usr/include/cmocka.h ] && \
		[ -f /usr/include/zookeeper/zookeeper.h ] && \
		[ -f /usr/include/infiniband/verbs.h ] && \
		[ -f /usr/include/rdma/rdma_cma.h ] || \
		$(MAKE) --no-print-directory deps

unit: all $(UNIT_BINS) $(SIM_BIN)

# the packages first, then the build on every core (make -j would start
# compiling before deps installed the headers), then the suites
NPROC := $(shell nproc 2>/dev/null || echo 1)
check: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all $(UNIT_BINS) $(SIM_BIN)
	@bash tests/run-all.sh

functional: all
	@bash tests/functional/run.sh

demo: deps all
	@bash tests/demo.sh

# benchmark tables (tests/bench/README.md); about 18 minutes (15 without
# the Ceph RBD baseline, --no-ceph)
bench: all
	@bash tests/bench/run

# Debian's QEMU 7.2 tools with the sheepdog driver (qemu-patches/), built
# once per patch series into /var/cache/kelpie-qemu/HASH; links in
# qemu-patches/bin/
qemu:
	@dir=$$(QEMU_DEB_PKGS="$(QEMU_DEB_PKGS)" bash qemu-patches/build.sh) && \
	mkdir -p qemu-patches/bin && \
	for p in "$$dir"/bin/*; do ln -sfn "$$p" qemu-patches/bin/; done && \
	echo "patched QEMU 7.2 tools in qemu-patches/bin/ (-> $$dir/bin)"

# bullseye's QEMU 5.2 tools with the original sheepdog driver (for tests)
qemu-orig:
	@dir=$$(QEMU_DEB_PKGS="$(QEMU_DEB_PKGS)" bash qemu-patches/build-orig.sh) && \
	echo "QEMU 5.2 tools in $$dir/bin"

SYSCONFDIR ?= /etc
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
UNIT_SUBST = sed -e 's|@SBINDIR@|$(PREFIX)/sbin|g' \
	-e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

# binaries, man pages, systemd units, sample configuration (never over a
# file that exists), a logrotate snippet
install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/share/man/man8
	install -m 755 sheep/sheep $(DESTDIR)$(PREFIX)/sbin/sheep
	install -m 755 dog/dog $(DESTDIR)$(PREFIX)/bin/dog
	install -m 755 sheepfs/sheepfs $(DESTDIR)$(PREFIX)/bin/sheepfs
	install -m 644 man/*.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -d $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	for u in sheep@.service sheepfs@.service; do \
		$(UNIT_SUBST) contrib/systemd/$$u.in \
			>$(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u && \
		chmod 644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u || exit 1; \
	done
	install -d $(DESTDIR)$(SYSCONFDIR)/kelpie \
		$(DESTDIR)$(SYSCONFDIR)/logrotate.d
	for f in sheep.conf sheepfs.conf corosync.conf.sample; do \
		[ -e $(DESTDIR)$(SYSCONFDIR)/kelpie/$$f ] || \
		install -m 644 contrib/etc/$$f \
			$(DESTDIR)$(SYSCONFDIR)/kelpie/$$f || exit 1; \
	done
	install -m 644 contrib/logrotate/kelpie \
		$(DESTDIR)$(SYSCONFDIR)/logrotate.d/kelpie

clean:
	rm -rf build sheep/sheep dog/dog sheepfs/sheepfs

# libFuzzer harnesses (tests/fuzz/README.md): build them all, then run
# each for FUZZ_SECONDS, one after the other; make check runs them briefly
FUZZ_SECONDS ?= 600
.PHONY: fuzz
fuzz:
	bash tests/fuzz/build.sh && bash tests/fuzz/run.sh $(FUZZ_SECONDS)
