// SPDX-License-Identifier: GPL-2.0
/* 7.x reads non-present PTEs as software leaf entries (linux/leafops.h). */
#include <linux/mm.h>
#include <linux/swap.h>
#include <linux/leafops.h>
static bool __used fr_probe(pte_t pte)
{
	return softleaf_is_swap(softleaf_from_pte(pte));
}
