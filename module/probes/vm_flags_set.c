// SPDX-License-Identifier: GPL-2.0
/* vm_flags became read-only with modifiers in 6.3. */
#include <linux/mm.h>
static void __used fr_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_ACCOUNT);
}
