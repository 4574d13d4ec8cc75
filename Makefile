# SPDX-License-Identifier: GPL-2.0
# fastremap: the module, the tests, installation. See README.md.

VERSION := $(shell cat VERSION)
KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
PREFIX ?= /usr/local
DESTDIR ?=
UDEVDIR ?= /etc/udev/rules.d
BUILD ?= build

CC ?= cc
CFLAGS ?= -O2 -g
TEST_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -pthread -Iuapi -Itests/lib $(CFLAGS)

# The test programs, from tests/programs: the in-VM ones are static (the
# guest has no libc of its own); the host tests built here are the
# programs (the others are scripts in tests/harness).
VM_TESTS := $(shell awk '$$1 == "vm" { print $$2 }' tests/programs)
HOST_TESTS := $(filter t_%,$(shell awk '$$1 == "host" { print $$2 }' tests/programs))

# libfastremap, the LD_PRELOAD shim, fastremapctl, the pkg-config file and
# the man pages are built by userspace/Makefile, into $(BUILD)/userspace.
USERSPACE := $(MAKE) -C userspace BUILD=$(abspath $(BUILD))/userspace
LIBFR := $(BUILD)/userspace/libfastremap.a

all: module userspace tests

# userspace/Makefile knows the library's dependencies: always ask it. The
# static library first, so that make -j never runs two of these at once.
$(LIBFR): FORCE
	$(USERSPACE) $(abspath $@)

userspace: $(LIBFR)
	$(USERSPACE)

# tests/t_preload runs the shim from the build tree.
SHIM := $(BUILD)/userspace/libfastremap-preload.so
$(SHIM): $(LIBFR) FORCE
	$(USERSPACE) $(abspath $@)

# The module builds against the running kernel's headers when they exist;
# a machine without them (such as a build host) skips it with a note.
module:
	@if [ -d "$(KDIR)" ]; then \
		$(MAKE) -C module KDIR=$(KDIR); \
	else \
		echo "note: no kernel headers at $(KDIR): module not built (set KDIR=...)"; \
	fi

tests: $(addprefix $(BUILD)/bin/,$(VM_TESTS) $(HOST_TESTS)) $(SHIM)

# The test library (tests/lib: TAP output and the helpers the programs
# share), built once per build tree and linked into every test program and
# the bench. Its objects suit static and dynamic links alike.
TLIB_SRCS := $(wildcard tests/lib/*.c)
TLIB_OBJS := $(patsubst tests/lib/%.c,$(BUILD)/lib/obj/%.o,$(TLIB_SRCS))
TLIB := $(BUILD)/lib/libtest.a

$(BUILD)/lib/obj/%.o: tests/lib/%.c tests/lib/tlib.h uapi/linux/fastremap.h
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -c -o $@ $<

$(TLIB): $(TLIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/bin/t_%: tests/t_%.c tests/lib/tlib.h uapi/linux/fastremap.h module/ibt.h $(TLIB)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(if $(filter $*,$(patsubst t_%,%,$(VM_TESTS))),-static) -o $@ $< $(TLIB)

# The library's test runs on the host (fallback) and in the VM (fast
# path): static, linked with the static library.
$(BUILD)/bin/t_lib: tests/t_lib.c tests/lib/tlib.h userspace/fastremap.h $(TLIB) $(LIBFR)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -Iuserspace -static -o $@ $< $(TLIB) $(LIBFR)

$(BUILD)/bin/t_lib_standin: tests/t_lib_standin.c tests/lib/tlib.h userspace/fastremap.h uapi/linux/fastremap.h $(TLIB) $(LIBFR)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -Iuserspace -o $@ $< $(TLIB) $(LIBFR)

$(BUILD)/bin/t_move_lib: tests/t_move_lib.c tests/lib/tlib.h userspace/fastremap.h $(TLIB) $(LIBFR)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -Iuserspace -static -o $@ $< $(TLIB) $(LIBFR)

# fr_bench (bench/*.c but fr_prof.c), static, for the guest or this
# machine: BENCH_BIN names it, BENCH_DEFS holds its compiled-in
# configuration (-DFR_BENCH_...=, see bench/run.sh), hence always rebuilt.
BENCH_SRCS := $(filter-out bench/fr_prof.c,$(wildcard bench/*.c))
BENCH_BIN ?= $(BUILD)/bin/fr_bench
BENCH_DEFS ?=
bench-bin: $(TLIB) $(LIBFR)
	@mkdir -p $(dir $(BENCH_BIN))
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -static -pthread -Iuapi -Iuserspace -Itests/lib \
		$(BENCH_DEFS) -o $(BENCH_BIN) $(BENCH_SRCS) $(TLIB) $(LIBFR)

# The main job: fastremap against mremap(2) (and UFFDIO_MOVE) in a VM of
# Debian 12's kernel; BENCH_FULL=1 for all three kernels; BENCH_ARCH=arm64
# for Debian's arm64 kernels under qemu-system-aarch64 (emulated, as the
# x86-64 guests are). A run's tables and charts go to $(BENCH_RUN);
# make bench-promote copies them into bench/results/. See bench/.
#
# BENCH_COUNT=1: the guest runs under a QEMU plugin (bench/plugin/) that
# counts, per move, the instructions (user, kernel), loads, stores, atomic
# read-modify-writes, TLB invalidations and flush IPIs, and the CSV gets
# these columns (bench/README.md, "Exact counts").
# BENCH_SWEEP=1: the size sweep instead of the workloads, a page to 64 GiB
# at each level (bench/README.md, "How cost grows with size").
BENCH_ARCH ?= amd64
BENCH_COUNT ?= 0
BENCH_RUN ?= $(BUILD)/bench/report
bench:
	scripts/deps.sh
	$(MAKE) all
	BENCH_ARCH=$(BENCH_ARCH) BENCH_COUNT=$(BENCH_COUNT) \
		FASTREMAP_BENCH_RESULTS=$(abspath $(BENCH_RUN)) bench/run.sh

# The counting plugin alone (built by `BENCH_COUNT=1 make bench` too).
bench-plugin:
	$(MAKE) -C bench/plugin OUT=$(abspath $(BUILD))/bench/plugin

# The same benchmark on this machine, with the module loaded (dkms-install).
bench-native:
	FASTREMAP_BENCH_RESULTS=$(abspath $(BENCH_RUN)) bench/run.sh --native

# The last run's results, per kernel (.csv, .md, .log, .png), into the
# tracked bench/results/.
bench-promote:
	@ls $(BENCH_RUN)/*.csv >/dev/null 2>&1 || { echo "no benchmark run in $(BENCH_RUN): make bench first"; exit 1; }
	@for c in $(BENCH_RUN)/*.csv; do \
		k=$$(basename "$$c" .csv); \
		for f in "$(BENCH_RUN)/$$k".csv "$(BENCH_RUN)/$$k".md "$(BENCH_RUN)/$$k".log "$(BENCH_RUN)/$$k".png; do \
			[ ! -e "$$f" ] || { cp "$$f" bench/results/ && echo "bench/results/$${f##*/}"; }; \
		done; \
	done

# The checks. make check, the suite CI runs, is the lane
# tests/harness/lane-check.sh; make check-NAME runs the lane
# tests/harness/lane-NAME.sh: arm64 (the arm64 lane alone, full counts),
# all (both lanes in full, then DKMS on arm64), reach (both lanes on the
# kernels beyond the three: Debian 11's 5.10, 7.3, and the upstream 6.18
# LTS and 6.17 built from source), dkms-arm64, long (the
# reliability tests' long mode), debug (debug kernels; DEBUG_LANES=debug7
# for one), mutants (planted bugs), mremap-lockorder (the kernel's own
# lock order, MREMAP_LOCKORDER_SUITES), ibt (kernel IBT and CET shadow
# stacks under Bochs), deb (the Debian packages, installed and booted). Each lane's head says what it runs, what it
# prepares and how long it takes; each starts by installing what it
# needs (scripts/deps.sh). make check CHECK_AMD64_DIFF_OPS=N
# CHECK_ARM64_DIFF_OPS=N CHECK_ARM64_LATENCY_MREMAP=1: see lane-check.sh.
check: tests/harness/lane-check.sh
	scripts/deps.sh
	$<

check-%: tests/harness/lane-%.sh FORCE
	scripts/deps.sh
	$<

# The Debian packages (debian/): fastremap-dkms, libfastremap1,
# libfastremap-dev and fastremap-tools, built by dpkg-buildpackage from a
# copy of the tree in $(DEBDIR) (where they land), then checked by lintian.
# make check-deb installs them into each suite's chroot and boots them
# (tests/harness/lane-deb.sh).
DEBDIR ?= $(BUILD)/deb
deb:
	@[ "$$(dpkg-parsechangelog -S Version)" = "$(VERSION)" ] || { \
		echo "debian/changelog is at $$(dpkg-parsechangelog -S Version), VERSION at $(VERSION): add an entry (dch -v $(VERSION))"; exit 1; }
	rm -rf $(DEBDIR)
	mkdir -p $(DEBDIR)/fastremap-$(VERSION)
	tar -C $(CURDIR) --exclude=./$(BUILD) --exclude=./.git -cf - . | tar -C $(DEBDIR)/fastremap-$(VERSION) -xf -
	cd $(DEBDIR)/fastremap-$(VERSION) && dpkg-buildpackage -us -uc -b
	lintian --fail-on error,warning --info $(DEBDIR)/fastremap_$(VERSION)_*.changes
	@ls $(DEBDIR)/*.deb

# Secure Boot: a kernel that enforces module signatures loads only modules
# signed by a key it trusts. DKMS signs what it builds with its own key
# (enrolled once with mokutil, see README); `make install` signs with the
# same key when this machine has one, or with MODSIGN_KEY and MODSIGN_CERT.
MODSIGN_KEY ?= $(wildcard /var/lib/dkms/mok.key)
MODSIGN_CERT ?= $(wildcard /var/lib/dkms/mok.pub)
MODSIGN_HASH ?= $(or $(shell sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"/\1/p' $(KDIR)/.config 2>/dev/null),sha512)

# Without the target kernel's headers (a build host, a container), the
# module is skipped with a note saying how to install it; the rest is
# installed all the same.
install: module userspace
	@if [ -d "$(KDIR)" ]; then \
		set -e; \
		rm -f module/fastremap.ko; \
		$(MAKE) -C module KDIR=$(KDIR); \
		if [ -n "$(MODSIGN_KEY)" ] && [ -n "$(MODSIGN_CERT)" ]; then \
			echo "signing module/fastremap.ko with $(MODSIGN_CERT) ($(MODSIGN_HASH))"; \
			$(KDIR)/scripts/sign-file $(MODSIGN_HASH) "$(MODSIGN_KEY)" "$(MODSIGN_CERT)" module/fastremap.ko; \
		else \
			echo "note: no module signing key (MODSIGN_KEY, MODSIGN_CERT): fastremap.ko is unsigned; under Secure Boot the kernel will refuse it (see README)"; \
		fi; \
		$(MAKE) -C $(KDIR) M=$(CURDIR)/module INSTALL_MOD_PATH=$(DESTDIR) modules_install; \
		[ -n "$(DESTDIR)" ] || depmod -a $(KVER); \
	fi
	install -D -m 0644 uapi/linux/fastremap.h $(DESTDIR)$(PREFIX)/include/linux/fastremap.h
	install -D -m 0644 udev/60-fastremap.rules $(DESTDIR)$(UDEVDIR)/60-fastremap.rules
	$(USERSPACE) install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	@if [ ! -d "$(KDIR)" ]; then \
		echo "note: the fastremap module was NOT installed: no kernel headers for $(KVER) at $(KDIR)."; \
		echo "      Install them (Debian: apt install linux-headers-$(KVER)) and run make install again,"; \
		echo "      or install for another kernel with make install KVER=<release> (or KDIR=<headers>),"; \
		echo "      or let DKMS build it for every installed kernel that has headers: make dkms-install."; \
		echo "      Library, shim, fastremapctl, headers and man pages are installed."; \
	fi

uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KVER)/updates/fastremap.ko \
		$(DESTDIR)/lib/modules/$(KVER)/extra/fastremap.ko
	rm -f $(DESTDIR)$(PREFIX)/include/linux/fastremap.h
	rm -f $(DESTDIR)$(UDEVDIR)/60-fastremap.rules
	$(USERSPACE) uninstall PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	[ -n "$(DESTDIR)" ] || depmod -a $(KVER)

# DKMS: stage the module's sources under /usr/src, then build and install
# them for each installed kernel whose headers are present (the running
# kernel need not be one of them); says which kernels it skipped.
dkms-install:
	bash -c '. tests/harness/common.sh && fr_stage_src /usr/src/fastremap-$(VERSION)'
	scripts/dkms-install.sh $(VERSION)

dkms-uninstall:
	dkms remove -m fastremap -v $(VERSION) --all
	rm -rf /usr/src/fastremap-$(VERSION)

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C module KDIR=$(KDIR) clean 2>/dev/null

# (The check-NAME lanes come from a pattern rule, which make does not
# search for phony targets: FORCE runs them every time.)
.PHONY: all module userspace tests bench bench-bin bench-plugin bench-native bench-promote check deb install uninstall dkms-install dkms-uninstall clean FORCE

FORCE:
