// SPDX-License-Identifier: GPL-2.0
/*
 * Since 6.4 split_folio_to_list() is a function of huge_memory.c and
 * split_folio() a macro over it; 6.1 has both as inlines over
 * split_huge_page_to_list().
 */
#include <linux/mm.h>
#include <linux/huge_mm.h>
#ifndef split_folio
#error "split_folio_to_list() is an inline"
#endif
static int __used fr_probe(struct folio *f)
{
	return split_folio_to_list(f, NULL);
}
