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

# In-VM test programs are static: the guest has no libc of its own.
VM_TESTS := $(filter-out \#%,$(shell grep -v '^\#' tests/vm-tests))
HOST_TESTS := t_ibt_unit t_lib t_lib_standin t_move_lib t_preload

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
# x86-64 guests are). See bench/.
BENCH_ARCH ?= amd64
bench:
	scripts/deps.sh
	$(MAKE) all
	BENCH_ARCH=$(BENCH_ARCH) bench/run.sh

# The same benchmark on this machine, with the module loaded (dkms-install).
bench-native:
	bench/run.sh --native

# The whole suite on three kernels x two architectures under QEMU (what CI
# runs; installs what it needs): the x86-64 lane with t_remap_diff at 5,000
# random operations instead of 10,000, then the arm64 lane with 2,500 and
# t_remap_latency without its mremap(2) reference (their time under
# emulation, CI's time limit; README, "What make check runs"). make
# check-all runs both lanes in full.
CHECK_AMD64_DIFF_OPS ?= 5000
CHECK_ARM64_DIFF_OPS ?= 2500
CHECK_ARM64_LATENCY_MREMAP ?= 0
check:
	scripts/deps.sh
	scripts/prepare-kernels.sh
	FASTREMAP_ARCH=arm64 scripts/prepare-kernels.sh
	FASTREMAP_AMD64_DIFF_OPS=$(CHECK_AMD64_DIFF_OPS) \
	FASTREMAP_ARM64_DIFF_OPS=$(CHECK_ARM64_DIFF_OPS) \
	FASTREMAP_ARM64_LATENCY_MREMAP=$(CHECK_ARM64_LATENCY_MREMAP) tests/check-all.sh

# The arm64 lane alone, at full counts: Debian's arm64 kernels of the same
# three suites, module and programs cross-built, under
# qemu-system-aarch64 -M virt.
check-arm64:
	scripts/deps.sh
	FASTREMAP_ARCH=arm64 scripts/prepare-kernels.sh
	FASTREMAP_ARCH=arm64 tests/run.sh

# Both architectures, one lane after the other (tests/check-all.sh, one
# summary over both), every program at its full count; then DKMS on arm64.
check-all:
	scripts/deps.sh
	scripts/prepare-kernels.sh
	FASTREMAP_ARCH=arm64 scripts/prepare-kernels.sh
	FASTREMAP_CHECK_DKMS_ARM64=1 tests/check-all.sh

# DKMS on arm64, natively: dkms add/build inside an arm64 Debian root of
# each suite under qemu-user, the module it built loaded in that suite's
# arm64 kernel under qemu-system-aarch64 (scripts/check-dkms-arm64.sh).
# About 20 minutes per kernel on a loaded 2-core host: in check-all, not
# in make check (README, "DKMS on arm64").
check-dkms-arm64:
	scripts/deps.sh
	FASTREMAP_ARCH=arm64 scripts/prepare-kernels.sh
	scripts/check-dkms-arm64.sh

# The long mode of the reliability tests on the three kernels: 100,000
# differential ops, 20 stress rounds, 200,000 hostile ioctls per kernel,
# with fresh random seeds (about 40 minutes).
check-long:
	scripts/deps.sh
	scripts/prepare-kernels.sh
	FASTREMAP_LONG=1 FASTREMAP_HOST_TESTS=none tests/run.sh

# The debug-kernel lanes: the whole in-VM suite on Debian 12's 6.1 source
# (debug) and unstable's 7.x source (debug7), built with KASAN,
# PROVE_LOCKING, DEBUG_VM, DEBUG_VM_PGTABLE, PAGE_TABLE_CHECK,
# DEBUG_PAGEALLOC and fault injection (built once, cached; about 10 and 40
# minutes the first time). DEBUG_LANES=debug7 runs one.
DEBUG_LANES ?= debug debug7
check-debug:
	scripts/deps.sh
	for l in $(DEBUG_LANES); do scripts/build-debug-kernel.sh $$l || exit 1; done
	FASTREMAP_SUITES="$(DEBUG_LANES)" FASTREMAP_HOST_TESTS=none tests/run.sh

# Planted bugs (tests/mutants): the in-VM suite must fail on each, on the
# three kernels. Prints which test caught each one.
check-mutants:
	scripts/deps.sh
	scripts/prepare-kernels.sh
	scripts/check-mutants.sh

# The kernel's own lock order against UFFDIO_MOVE: mremap(2) of single
# pages and of a THP racing UFFDIO_MOVE over shared page tables
# (t_move_order --mremap), each in a guest of its own with a hard limit,
# reported (deadlocked or not), not failed: it deadlocks the kernels that
# have UFFDIO_MOVE (docs/upstream-mremap-uffd-lock-order.md). Not in make
# check. About 30 s per scenario and kernel.
MREMAP_LOCKORDER_SUITES ?= trixie sid
check-mremap-lockorder:
	scripts/deps.sh
	scripts/prepare-kernels.sh
	scripts/uffd-mremap-control.sh $(MREMAP_LOCKORDER_SUITES)

# A machine that enforces kernel IBT, emulated: Debian 13's kernel in Bochs
# (Tiger Lake model), the module loaded, a move, t_shstk (CET shadow
# stacks, which no QEMU guest has), the log; and a negative control that
# must log "Missing ENDBR". A few minutes, not in make check.
check-ibt:
	scripts/deps.sh
	scripts/prepare-kernels.sh
	scripts/check-ibt.sh

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
	bash -c '. scripts/common.sh && fr_stage_src /usr/src/fastremap-$(VERSION)'
	scripts/dkms-install.sh $(VERSION)

dkms-uninstall:
	dkms remove -m fastremap -v $(VERSION) --all
	rm -rf /usr/src/fastremap-$(VERSION)

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C module KDIR=$(KDIR) clean 2>/dev/null

.PHONY: all module userspace tests bench bench-bin bench-native check check-arm64 check-all check-dkms-arm64 check-long check-debug check-ibt check-mutants check-mremap-lockorder install uninstall dkms-install dkms-uninstall clean FORCE

FORCE:
