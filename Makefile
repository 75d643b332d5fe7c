# SPDX-License-Identifier: GPL-2.0-or-later
# Kelpie: one GNU make build for everything (design.md §1).

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc

DEB_PKGS := build-essential pkg-config liburcu-dev libcmocka-dev libssl-dev \
	e2fsprogs util-linux procps psmisc bc

PKGS := liburcu libcrypto
WARN := -Wall -Wextra -Werror -Wno-unused-parameter
BASE_CFLAGS := -std=gnu11 -g -D_GNU_SOURCE -Iinclude -Isheep $(WARN) \
	-fno-strict-aliasing
CFLAGS ?= -O2
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LDLIBS := -lpthread -lm

SAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined

LIB_SRCS := $(wildcard lib/*.c)
SHEEP_SRCS := $(wildcard sheep/*.c sheep/cluster/*.c sheep/store/*.c)
DOG_SRCS := $(wildcard dog/*.c)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)

LIB_OBJS := $(LIB_SRCS:%.c=build/%.o)
SHEEP_OBJS := $(SHEEP_SRCS:%.c=build/%.o)
DOG_OBJS := $(DOG_SRCS:%.c=build/%.o)
SAN_LIB_OBJS := $(LIB_SRCS:%.c=build/san/%.o)
# unit tests may exercise sheep modules too (everything but main)
SAN_SHEEP_OBJS := $(filter-out build/san/sheep/sheep.o,$(SHEEP_SRCS:%.c=build/san/%.o))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=build/tests/%)

.PHONY: all deps check unit functional demo install clean
all: deps-quiet sheep/sheep dog/dog

build/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

build/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

build/libkelpie.a: $(LIB_OBJS)
	ar rcs $@ $^

sheep/sheep: $(SHEEP_OBJS) build/libkelpie.a
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

dog/dog: $(DOG_OBJS) build/libkelpie.a
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

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
		$(LDLIBS)

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
	@pkg-config --exists $(PKGS) && [ -f /usr/include/cmocka.h ] || \
		$(MAKE) --no-print-directory deps

unit: all $(UNIT_BINS)

check: deps all $(UNIT_BINS)
	@bash tests/run-all.sh

functional: all
	@bash tests/functional/run.sh

demo: deps all
	@bash tests/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/share/man/man8
	install -m 755 sheep/sheep $(DESTDIR)$(PREFIX)/sbin/sheep
	install -m 755 dog/dog $(DESTDIR)$(PREFIX)/bin/dog
	install -m 644 man/*.8 $(DESTDIR)$(PREFIX)/share/man/man8/

clean:
	rm -rf build sheep/sheep dog/dog
