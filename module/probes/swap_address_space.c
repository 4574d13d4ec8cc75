// SPDX-License-Identifier: GPL-2.0
/*
 * Before the swap table (6.18), the swap cache was an address_space per
 * 64 MiB of a device, and swap_cache_get_folio() took the faulting VMA
 * and address; since, it takes the entry alone.
 */
#include <linux/swap.h>
static int __used fr_probe(void)
{
	return init_swap_address_space(0, 0);
}
