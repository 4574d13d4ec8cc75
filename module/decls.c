// SPDX-License-Identifier: GPL-2.0
/*
 * Checks, at every build, the type the module calls each internal kernel
 * function with (symlist.h: a header's declaration or compat.h's
 * fr_<name>_fn) against the prototype of the kernel it is built for, and
 * fails the build naming the function where they differ, before any call
 * can pass it the wrong arguments. It defines nothing.
 *
 * decls-generated.h (written by btfdecls, see Kbuild) turns each entry of
 * symlist.h into up to two checks:
 * - the function is declared again with the module's type: a kernel
 *   header that declares it otherwise is a "conflicting types" error.
 *   This file alone is compiled as built-in code would be (#undef MODULE),
 *   so the declarations headers hide from modules (flush_tlb_mm_range())
 *   count too;
 * - where the kernel's BTF has the function, a static_assert that the
 *   module's type is the one the BTF records. The BTF of vmlinux has the
 *   prototype of every function the kernel defines, those declared only
 *   in mm/'s private headers (copy_vma(), swap_cache_get_folio()) too,
 *   which no header a module build sees declares.
 */
#undef MODULE

#include <linux/mm.h>
#include <asm/tlbflush.h>
#include "symbols.h"
#include "decls-generated.h"

/* symlist.h once more, each entry now its function's checks. */
#undef DECLARE_STATIC_CALL
#define DECLARE_STATIC_CALL(key, type) FR_DECL_CHECK_##key(type)
#undef FASTREMAP_SYMLIST_H
#include "symlist.h"
