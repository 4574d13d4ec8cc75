// SPDX-License-Identifier: GPL-2.0
/*
 * 6.6+: the architectures' TLB flush helpers (arm64's flush_tlb_range())
 * tell secondary MMUs through this unexported function.
 */
#include <linux/mmu_notifier.h>
static void __used fr_probe(struct mm_struct *mm)
{
	__mmu_notifier_arch_invalidate_secondary_tlbs(mm, 0, 1);
}
