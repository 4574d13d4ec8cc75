# SPDX-License-Identifier: GPL-2.0
# The kernel's BTF, for the two readers of it that the module's build has,
# both btfdecls: the prototype check (Kbuild, decls.c) and the feature
# probes a headers package cannot answer (probe.sh, probes/*.btf). Both
# include this file, so that they read the same BTF with the same compiler.
#
# fr-btf: the candidates, first readable first: the vmlinux Debian's
# headers ship (6.12 and later; it holds only BTF), else the running
# kernel's when the module is built for it; FR_DECLS_BTF=FILE (command
# line only) reads FILE instead, none reads no BTF.
ifeq ($(origin FR_DECLS_BTF),command line)
fr-btf := $(filter-out none,$(FR_DECLS_BTF))
else
fr-btf := $(abspath $(objtree))/vmlinux
fr-btf += $(if $(filter $(KERNELRELEASE),$(shell uname -r)),/sys/kernel/btf/vmlinux)
endif
# A machine with only the kernel's versioned compiler (gcc-12) may have no
# HOSTCC (gcc): then the kernel's own compiler, unless it is a cross one.
# fr-btf-cc: y when there is a compiler for btfdecls.
ifneq ($(shell $(HOSTCC) --version >/dev/null 2>&1 && echo y),y)
HOSTCC := $(if $(CROSS_COMPILE),,$(CC))
endif
fr-btf-cc := $(shell $(HOSTCC) --version >/dev/null 2>&1 && echo y)
