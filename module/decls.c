// SPDX-License-Identifier: GPL-2.0
/*
 * Checks, at every build, compat.h's types of internal functions that a
 * kernel header declares but hides from modules (#ifndef MODULE): this
 * file alone is compiled as built-in code would be, so the compiler sees
 * the kernel's own declaration and compares. It defines nothing.
 */
#undef MODULE

#include <linux/mm.h>
#include <asm/tlbflush.h>
#include "compat.h"

#if defined(CONFIG_X86_64)
static_assert(__builtin_types_compatible_p(typeof(flush_tlb_mm_range),
					   fr_flush_tlb_mm_range_fn),
	      "compat.h's flush_tlb_mm_range() differs from asm/tlbflush.h's");
#endif
