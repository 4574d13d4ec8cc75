// SPDX-License-Identifier: GPL-2.0
/* Per-VMA locks (6.4+): movers must write-lock every VMA they change. */
#include <linux/mm.h>
static void __used fr_probe(struct vm_area_struct *vma)
{
	vma_start_write(vma);
}
