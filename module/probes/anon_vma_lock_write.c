// SPDX-License-Identifier: GPL-2.0
/* 7.x moved the anon_vma lock helpers into mm/internal.h. */
#include <linux/rmap.h>
static void __used fr_probe(struct anon_vma *av)
{
	anon_vma_lock_write(av);
}
