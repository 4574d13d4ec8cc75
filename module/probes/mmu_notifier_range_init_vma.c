// SPDX-License-Identifier: GPL-2.0
/* Before 6.3 mmu_notifier_range_init() took the VMA. */
#include <linux/mmu_notifier.h>
static void __used fr_probe(struct mmu_notifier_range *r,
			    struct vm_area_struct *v, struct mm_struct *mm)
{
	mmu_notifier_range_init(r, MMU_NOTIFY_UNMAP, 0, v, mm, 0, 4096);
}
