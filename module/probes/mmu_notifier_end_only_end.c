// SPDX-License-Identifier: GPL-2.0
/* Before 6.6 the range-end notifier took an only_end argument. */
#include <linux/mmu_notifier.h>
static void __used fr_probe(struct mmu_notifier_range *r)
{
	__mmu_notifier_invalidate_range_end(r, false);
}
