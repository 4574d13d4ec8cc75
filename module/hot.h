/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Code placement of the mover's hot loops.
 *
 * QEMU's TCG translates guest code in blocks that it cannot chain across
 * a 4 KiB page of guest text: a loop that straddles two pages costs a
 * block lookup per iteration. The per-PTE loop straddling a page made a
 * 1 GiB PTE-level move 40% slower under emulation (9.5 ms inside one
 * page, 13.8 ms straddling), and whether it straddled depended on
 * unrelated changes elsewhere in the module. Hardware has no such cliff,
 * but the benchmark runs under emulation and must not measure it.
 *
 * So every function that holds a hot loop is marked __fr_hot and
 * __fr_page_aligned: it goes in a section of its own and starts a page,
 * which the module loader keeps
 * (it places each section at its own alignment in page-aligned module
 * memory). A function shorter than a page then lies inside one page.
 * tests/harness/check-placement.sh checks each build (make check, make bench):
 * every function of the section must fit in its page.
 */
#ifndef FASTREMAP_HOT_H
#define FASTREMAP_HOT_H

#include <linux/compiler.h>
#include <linux/stringify.h>

#define FR_HOT_ALIGN		4096
/*
 * Inline every call a hot function makes whose body the compiler has
 * (static inlines it would otherwise keep out of line, such as a
 * ".constprop" or ".isra" clone in .text), so that the loop does not leave
 * its page per iteration; what must stay a call is marked noinline.
 */
#define __fr_flatten		__attribute__((flatten))
/* Use both on each hot function: __fr_hot __fr_page_aligned. */
/*
 * A section of its own per hot function (a number unique in its file):
 * two page-aligned functions in one section of an object leave a gap the
 * assembler fills with a jump over padding, which 6.1's objtool rejects
 * as an unreachable instruction.
 */
#define __fr_hot		__section(".text.fr_hot." __stringify(__COUNTER__))
#define __fr_page_aligned	__aligned(FR_HOT_ALIGN)

#endif /* FASTREMAP_HOT_H */
