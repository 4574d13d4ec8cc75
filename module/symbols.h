/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How fastremap reaches the internal kernel functions and data listed in
 * symlist.h.
 *
 * Every function is called through a static call of the module's own:
 * its call sites and trampoline are patched at load into direct branches
 * to the resolved address. On kernels built with CONFIG_X86_KERNEL_IBT the
 * kernel seals (removes the ENDBR64 of) every function it never calls
 * through a pointer, on any CPU, and a CPU that enforces IBT faults on an
 * indirect call to one; a direct call is never checked. So no function
 * pointer to kernel text is ever called here.
 *
 * arm64 has static calls only with clang's kCFI (7.x), which Debian's
 * gcc-built kernels lack: there the generic static call is a call through
 * the key's pointer (BLR). Pointer authentication signs return addresses
 * only, so it does not care; BTI (CONFIG_ARM64_BTI_KERNEL, enforced where
 * the CPU has it) faults unless the target starts with a landing pad for
 * a call, which the load-time self-check verifies for every function.
 */
#ifndef FASTREMAP_SYMBOLS_H
#define FASTREMAP_SYMBOLS_H

#include <linux/kallsyms.h>
#include <linux/static_call.h>
/* The types of the functions that differ between kernels. */
#include "compat.h"
#include "symlist.h"

#if !defined(CONFIG_HAVE_STATIC_CALL) && !defined(CONFIG_ARM64)
/* The generic static call is a call through a pointer: IBT would fault. */
#error "fastremap needs static calls (x86-64), or arm64's BTI landing pads"
#endif

/*
 * Calls an internal function: fr_call(copy_vma, &vma, addr, ...). The
 * arguments are checked against the function's type (symlist.h).
 * static_call(), not static_call_mod(): the keys are the module's own.
 */
#define fr_call(name, ...) static_call(fr_sc_##name)(__VA_ARGS__)

/*
 * The internal data, filled at load and read-only after it. Every field
 * is a pointer named in the table of symbols.c.
 */
struct fr_symbols {
	struct percpu_counter *vm_committed_as;
	s32 *vm_committed_as_batch;
	int *sysctl_max_map_count;
};

extern struct fr_symbols fr_sym;

/*
 * Resolves everything, points every static call at its function and
 * checks that each trampoline and call site branches there directly;
 * before the device is registered.
 */
int fr_symbols_resolve(void);
/* The sysfs attribute "symbols": what was resolved, and how it is called. */
ssize_t fr_symbols_show(char *buf, size_t size);

#endif /* FASTREMAP_SYMBOLS_H */
